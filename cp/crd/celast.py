"""CEL source as a tree: parsing, a type checker over schema-derived types, cel-go's cost estimate,
and the rewrite to the dialect the Rust engine evaluates (pure).

The Rust engine (`common-expression-language`) evaluates CEL but does not check types, estimate
costs, or accept every piece of syntax Kubernetes expressions use. This module parses an
expression itself (CEL's grammar: ternary, `||`, `&&`, relations, `+ -`, `* / %`, unary `! -`,
member selection, calls, indexing, list and map literals, the optional forms `a.?b` and `m[?k]`)
and then:

- checks it against declared variable types, as cel-go's checker does for the cases Kubernetes users
  meet (`undeclared reference to 'x' (in container '')`, `undefined field 'x'`, `found no matching
  overload for '_==_' applied to '(string, int)'`, the result type), with cel-go's message layout
  (`ERROR: <input>:1:5: ...` and the source line with a caret); where a type is not known statically
  (`dyn`, int-or-string, library values) it lets the expression through, as cel-go does for `dyn`;
- estimates the worst-case cost as `cel-go/checker/cost.go` does with Kubernetes' size estimator
  (sizes from maxLength/maxItems/maxProperties or what fits in a 3 MiB request): constants cost 0,
  identifiers and selections 1, calls 1 plus their traversal factors (0.1 per string character,
  one per list element), comprehensions their range plus the body per iteration, list literals 10 and
  map literals 30. The figures follow cel-go's model closely but are not bit-for-bit identical;
- renders it back as source the engine runs: `cel.bind(v, init, body)` as a one-element map, the
  two-variable comprehensions (`all`, `exists`, `existsOne`, `transformList`, `transformMap`,
  `transformMapEntry`) over an entries list, optional selection and indexing as library calls, and
  `string(x)` through the Kubernetes library when the expression uses its IP/CIDR/URL values.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

__all__ = ["CelProgramError", "CelSyntaxError", "CelTypeError", "Node", "T", "check", "estimate_cost", "parse", "render"]

MAX_REQUEST = 3 * 1024 * 1024


class CelSyntaxError(Exception):
    """A parse error: `str()` is cel-go's issue text."""


class CelTypeError(Exception):
    """A type-check error: `str()` is cel-go's issue text."""


class CelProgramError(CelTypeError):
    """An error cel-go reports when it builds the program, not as a compile issue: `str()` is the
    whole detail (`program instantiation failed: ...`)."""


# ---------------------------------------------------------------------------------------------
# Types


class T:
    """A CEL type with Kubernetes' size bound: kind is one of int, uint, double, bool, string, bytes,
    null, duration, timestamp, dyn, list, map, object, optional, type, or a library type name
    (kubernetes.Quantity, net.IP, ...). `max` is the DeclType's MaxElements (string length, list
    items, map entries); `fields` an object's escaped property names."""

    __slots__ = ("elem", "fields", "key", "kind", "list_keys", "list_type", "max", "min")

    def __init__(self, kind: str, *, elem: T | None = None, key: T | None = None,
                 fields: dict[str, T] | None = None, max: int = 0, min: int = 1,
                 list_type: str = "", list_keys: tuple[str, ...] = ()) -> None:
        self.kind = kind
        self.elem = elem
        self.key = key
        self.fields = fields
        self.max = max
        self.min = min  # MinSerializedSize
        self.list_type = list_type  # "set" or "map" for lists compared and joined by identity
        self.list_keys = list_keys  # escaped names of a list-map's keys

    def name(self) -> str:
        if self.kind == "list":
            return f"list({self.elem.name() if self.elem else 'dyn'})"
        if self.kind == "map":
            return f"map({self.key.name() if self.key else 'dyn'}, {self.elem.name() if self.elem else 'dyn'})"
        if self.kind == "optional":
            return f"optional_type({self.elem.name() if self.elem else 'dyn'})"
        if self.kind == "object":
            return "object"
        return self.kind


DYN = T("dyn")
INT, UINT, DOUBLE, BOOL = T("int"), T("uint"), T("double"), T("bool")
STRING, BYTES, NULL = T("string"), T("bytes"), T("null")
DURATION, TIMESTAMP, TYPE = T("duration"), T("timestamp"), T("type")
_NUMERIC = frozenset({"int", "uint", "double"})

_DUR = re.compile(r"([0-9]*(?:\.[0-9]*)?)(ns|us|µs|μs|ms|s|m|h)")
_DUR_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(s: str) -> float:
    """Go's time.ParseDuration, in seconds; raises ValueError."""
    sign = -1 if s.startswith("-") else 1
    body = s[1:] if s[:1] in "+-" else s
    if body == "0":
        return 0.0
    if not body:
        raise ValueError(f'time: invalid duration "{s}"')
    pos, total = 0, 0.0
    while pos < len(body):
        m = _DUR.match(body, pos)
        if m is None or not m.group(1) or m.group(1) == ".":
            raise ValueError(f'time: invalid duration "{s}"')
        total += float(m.group(1)) * _DUR_UNITS[m.group(2)]
        pos = m.end()
    return sign * total


_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


def _valid_timestamp(text: str) -> bool:
    import datetime as _dt
    if not _RFC3339.match(text):
        return False
    try:
        norm = text.replace("z", "Z").replace("t", "T")
        if norm.endswith("Z"):
            norm = norm[:-1] + "+00:00"
        if "." in norm:
            head, rest = norm.split(".", 1)
            digits = re.match(r"\d+", rest)
            frac = digits.group(0) if digits else ""
            norm = head + "." + frac[:6].ljust(6, "0") + rest[len(frac):]
        _dt.datetime.fromisoformat(norm)
    except ValueError:
        return False
    return True


def _literal_string(node: Node) -> str | None:
    """The value of a plain (non-raw, non-bytes) string literal without escapes, else None."""
    if node.op != "lit" or node.flag != "string" or node.text[:1] not in "'\"" or "\\" in node.text:
        return None
    q = 3 if node.text[:3] in ("'''", '"""') else 1
    return node.text[q:-q]


# ---------------------------------------------------------------------------------------------
# Lexer

_TOKEN = re.compile(r"""
    (?P<ws>[ \t\r\n\f]+|//[^\n]*)
  | (?P<num>(?:0[xX][0-9a-fA-F]+[uU]?)|(?:(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(?:[eE][+-]?[0-9]+)?[uU]?))
  | (?P<str>(?:[rR][bB]?|[bB][rR]?)?(?:'''(?:.|\n)*?'''|\"\"\"(?:.|\n)*?\"\"\"|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"))
  | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>\.\?|\[\?|==|!=|<=|>=|&&|\|\||[-+*/%!<>?:.,()\[\]{}])
""", re.VERBOSE)

_RESERVED = frozenset({"as", "break", "const", "continue", "else", "for", "function", "if", "import", "let",
                       "loop", "package", "namespace", "return", "var", "void", "while"})


class _Tok:
    __slots__ = ("kind", "pos", "text")

    def __init__(self, kind: str, text: str, pos: int) -> None:
        self.kind = kind
        self.text = text
        self.pos = pos


def _lex(src: str) -> list[_Tok]:
    out: list[_Tok] = []
    i = 0
    while i < len(src):
        m = _TOKEN.match(src, i)
        if m is None:
            raise CelSyntaxError(_issue(src, i, f"Syntax error: token recognition error at: '{src[i]}'"))
        kind = m.lastgroup or ""
        if kind != "ws":
            text = m.group(0)
            out.append(_Tok(kind, text, i))
        i = m.end()
    out.append(_Tok("eof", "", len(src)))
    return out


def _issue(src: str, pos: int, msg: str) -> str:
    """cel-go's issue text: `ERROR: <input>:line:col: msg` and the line with a caret."""
    line = src.count("\n", 0, pos) + 1
    start = src.rfind("\n", 0, pos) + 1
    col = pos - start + 1
    end = src.find("\n", pos)
    text = src[start:] if end < 0 else src[start:end]
    return f"ERROR: <input>:{line}:{col}: {msg}\n | {text}\n | {'.' * (col - 1)}^"


# ---------------------------------------------------------------------------------------------
# Tree


class Node:
    """One expression node. `op` is: lit, ident, select, call, index, list, map, unary, binary,
    ternary. `args` holds children; `name` the identifier, field, function or operator; `target`
    the receiver of a method call; `flag` marks has()-tests, optional forms, and literal kinds."""

    __slots__ = ("args", "flag", "name", "op", "pos", "target", "text", "type")

    def __init__(self, op: str, pos: int, *, name: str = "", args: list[Node] | None = None,
                 target: Node | None = None, flag: str = "", text: str = "") -> None:
        self.op = op
        self.pos = pos
        self.name = name
        self.args = args or []
        self.target = target
        self.flag = flag
        self.text = text
        self.type: T = DYN


_BIN_PREC = [("||",), ("&&",), ("==", "!=", "<", "<=", ">", ">=", "in"), ("+", "-"), ("*", "/", "%")]


class _Parser:
    def __init__(self, src: str) -> None:
        self.src = src
        self.toks = _lex(src)
        self.i = 0
        self.depth = 0

    def peek(self) -> _Tok:
        return self.toks[self.i]

    def take(self) -> _Tok:
        t = self.toks[self.i]
        self.i += 1
        return t

    def accept(self, text: str) -> _Tok | None:
        t = self.toks[self.i]
        if t.kind in ("op", "id") and t.text == text:
            self.i += 1
            return t
        return None

    def expect(self, text: str) -> _Tok:
        t = self.accept(text)
        if t is None:
            got = self.peek()
            shown = "<EOF>" if got.kind == "eof" else got.text
            raise CelSyntaxError(_issue(self.src, got.pos, f"Syntax error: mismatched input '{shown}' expecting '{text}'"))
        return t

    def fail(self, tok: _Tok) -> CelSyntaxError:
        shown = "<EOF>" if tok.kind == "eof" else tok.text
        return CelSyntaxError(_issue(self.src, tok.pos, f"Syntax error: mismatched input '{shown}'"))

    def parse(self) -> Node:
        node = self.expr()
        if self.peek().kind != "eof":
            t = self.peek()
            raise CelSyntaxError(_issue(self.src, t.pos, f"Syntax error: extraneous input '{t.text}' expecting <EOF>"))
        return node

    def expr(self) -> Node:
        self.depth += 1
        if self.depth > 250:
            raise CelSyntaxError(_issue(self.src, self.peek().pos, "expression recursion limit exceeded: 250"))
        cond = self.binary(0)
        q = self.accept("?")
        if q is not None:
            a = self.binary(0)
            self.expect(":")
            b = self.expr()
            cond = Node("ternary", q.pos, name="_?_:_", args=[cond, a, b])
        self.depth -= 1
        return cond

    def binary(self, level: int) -> Node:
        if level == len(_BIN_PREC):
            return self.unary()
        left = self.binary(level + 1)
        while True:
            t = self.peek()
            if t.kind in ("op", "id") and t.text in _BIN_PREC[level]:
                self.take()
                right = self.binary(level + 1)
                left = Node("binary", t.pos, name=t.text, args=[left, right])
            else:
                return left

    def unary(self) -> Node:
        t = self.peek()
        if t.kind == "op" and t.text in ("!", "-"):
            self.take()
            if t.text == "-" and self.peek().kind == "num" and not self.peek().text.startswith("."):
                n = self.take()
                return self.postfix(Node("lit", t.pos, text="-" + n.text, flag=_num_kind(n.text)))
            return Node("unary", t.pos, name=t.text, args=[self.unary()])
        return self.postfix(self.primary())

    def postfix(self, node: Node) -> Node:
        while True:
            t = self.peek()
            if t.kind != "op":
                return node
            if t.text in (".", ".?"):
                self.take()
                name = self.take()
                if name.kind != "id" or name.text in ("true", "false", "null", "in"):
                    shown = "<EOF>" if name.kind == "eof" else name.text
                    raise CelSyntaxError(_issue(self.src, name.pos,
                                                f"Syntax error: mismatched input '{shown}' expecting IDENTIFIER"))
                if t.text == "." and self.peek().text == "(" and self.peek().kind == "op":
                    open_ = self.take()
                    args = self.call_args()
                    node = Node("call", open_.pos, name=name.text, target=node, args=args)
                else:
                    node = Node("select", t.pos, name=name.text, args=[node], flag="opt" if t.text == ".?" else "")
            elif t.text in ("[", "[?"):
                self.take()
                idx = self.expr()
                self.expect("]")
                node = Node("index", t.pos, name="_[_]", args=[node, idx], flag="opt" if t.text == "[?" else "")
            else:
                return node

    def call_args(self) -> list[Node]:
        args: list[Node] = []
        if self.accept(")"):
            return args
        while True:
            args.append(self.expr())
            if self.accept(")"):
                return args
            self.expect(",")

    def primary(self) -> Node:
        t = self.take()
        if t.kind == "num":
            return Node("lit", t.pos, text=t.text, flag=_num_kind(t.text))
        if t.kind == "str":
            prefix = t.text[: len(t.text) - len(t.text.lstrip("rRbB"))]
            return Node("lit", t.pos, text=t.text, flag="bytes" if "b" in prefix.lower() else "string")
        if t.kind == "id":
            if t.text in ("true", "false"):
                return Node("lit", t.pos, text=t.text, flag="bool")
            if t.text == "null":
                return Node("lit", t.pos, text=t.text, flag="null")
            if t.text in _RESERVED:
                raise CelSyntaxError(_issue(self.src, t.pos, f"Syntax error: reserved identifier: {t.text}"))
            if self.peek().kind == "op" and self.peek().text == "(":
                open_ = self.take()
                return Node("call", open_.pos, name=t.text, args=self.call_args())
            return Node("ident", t.pos, name=t.text)
        if t.kind == "op":
            if t.text == "(":
                inner = self.expr()
                self.expect(")")
                return inner
            if t.text == "[":
                items: list[Node] = []
                while not self.accept("]"):
                    if self.accept("?"):
                        items.append(Node("unary", t.pos, name="?", args=[self.expr()]))
                    else:
                        items.append(self.expr())
                    if not self.accept(","):
                        self.expect("]")
                        break
                return Node("list", t.pos, args=items)
            if t.text == "{":
                entries: list[Node] = []
                while not self.accept("}"):
                    opt = self.accept("?") is not None
                    k = self.expr()
                    self.expect(":")
                    v = self.expr()
                    if opt:  # an optional entry: the value is an optional, the entry left out when none
                        v = Node("unary", v.pos, name="?", args=[v])
                    entries += [k, v]
                    if not self.accept(","):
                        self.expect("}")
                        break
                return Node("map", t.pos, args=entries)
            if t.text == ".":
                # a leading dot: a name in the root container
                n = self.take()
                if n.kind == "id":
                    return Node("ident", n.pos, name=n.text)
        raise self.fail(t)


def _num_kind(text: str) -> str:
    low = text.lower()
    if low.endswith("u"):
        return "uint"
    if low.startswith("0x"):
        return "int"
    if any(c in low for c in ".e"):
        return "double"
    return "int"


def parse(src: str) -> Node:
    """The tree of `src`; raises CelSyntaxError with cel-go's message layout."""
    return _Parser(src).parse()


def walk(node: Node) -> list[Node]:
    out = [node]
    if node.target is not None:
        out += walk(node.target)
    for a in node.args:
        out += walk(a)
    return out


# ---------------------------------------------------------------------------------------------
# Type checking

_MACROS_1 = frozenset({"all", "exists", "exists_one", "existsOne", "map", "filter", "sortBy"})
_MACROS_2 = frozenset({"all", "exists", "existsOne", "exists_one", "transformList", "transformMap",
                       "transformMapEntry"})


class _Scope:
    def __init__(self, variables: dict[str, T], src: str) -> None:
        self.vars = [variables]
        self.src = src

    def lookup(self, name: str) -> T | None:
        for frame in reversed(self.vars):
            if name in frame:
                return frame[name]
        return None


# Result types of library functions (methods and globals), by name; `None` means "the receiver's type".
_RESULTS: dict[str, T] = {
    "size": INT, "contains": BOOL, "startsWith": BOOL, "endsWith": BOOL, "matches": BOOL,
    "int": INT, "uint": UINT, "double": DOUBLE, "string": STRING, "bytes": BYTES, "bool": BOOL,
    "duration": DURATION, "timestamp": TIMESTAMP, "type": TYPE,
    "charAt": STRING, "indexOf": INT, "lastIndexOf": INT, "lowerAscii": STRING, "upperAscii": STRING,
    "replace": STRING, "split": T("list", elem=STRING), "substring": STRING, "trim": STRING, "join": STRING,
    "find": STRING, "findAll": T("list", elem=STRING), "isSorted": BOOL, "format": STRING, "quote": STRING,
    "isQuantity": BOOL, "quantity": T("kubernetes.Quantity"), "isSemver": BOOL, "semver": T("kubernetes.Semver"),
    "isURL": BOOL, "url": T("kubernetes.URL"), "getScheme": STRING, "getHost": STRING, "getHostname": STRING,
    "getPort": STRING, "getEscapedPath": STRING, "getQuery": T("map", key=STRING, elem=T("list", elem=STRING)),
    "isIP": BOOL, "ip": T("net.IP"), "isCIDR": BOOL, "cidr": T("net.CIDR"), "family": INT,
    "isUnspecified": BOOL, "isLoopback": BOOL, "isLinkLocalMulticast": BOOL, "isLinkLocalUnicast": BOOL,
    "isGlobalUnicast": BOOL, "containsIP": BOOL, "containsCIDR": BOOL, "masked": T("net.CIDR"),
    "prefixLength": INT, "isCanonical": BOOL, "compareTo": INT, "isGreaterThan": BOOL, "isLessThan": BOOL,
    "sign": INT, "isInteger": BOOL, "asInteger": INT, "asApproximateFloat": DOUBLE,
    "major": INT, "minor": INT, "patch": INT, "hasValue": BOOL,
    "getFullYear": INT, "getMonth": INT, "getDate": INT, "getDayOfMonth": INT, "getDayOfWeek": INT,
    "getDayOfYear": INT, "getHours": INT, "getMinutes": INT, "getSeconds": INT, "getMilliseconds": INT,
    "named": T("optional", elem=T("kubernetes.NamedFormat")),
    "validate": T("optional", elem=T("list", elem=STRING)),
    "includes": BOOL,
}
# Functions whose result has the receiver's (or first argument's) type.
_SAME_AS_TARGET = frozenset({"add", "sub", "reverse", "sort", "distinct", "slice"})
_ELEMENT_OF = frozenset({"min", "max", "sum"})
_FORMAT_NAMES = frozenset({
    "dns1123Label", "dns1123Subdomain", "dns1035Label", "qualifiedName", "dns1123LabelPrefix",
    "dns1123SubdomainPrefix", "dns1035LabelPrefix", "labelValue", "uri", "uuid", "byte", "date", "datetime"})
_NAMESPACES = frozenset({"math", "sets", "strings", "base64", "lists", "optional", "format", "ip", "cidr", "cel"})


def _err(scope: _Scope, node: Node, msg: str) -> CelTypeError:
    return CelTypeError(_issue(scope.src, node.pos, msg))


def check(node: Node, *, variables: dict[str, T], src: str) -> T:
    """The static type of `node` with these variables; raises CelTypeError as cel-go's checker."""
    return _check(node, _Scope(variables, src))


def _assignable(a: T, b: T) -> bool:
    """Whether values of static types a and b may be compared with `==` (cel-go's overload check)."""
    if a.kind == "dyn" or b.kind == "dyn":
        return True
    if a.kind in _NUMERIC and b.kind in _NUMERIC:
        return a.kind == b.kind
    if a.kind in ("list", "map") and a.kind == b.kind:
        return (a.elem is None or b.elem is None or _assignable(a.elem, b.elem)) and \
            (a.kind == "list" or a.key is None or b.key is None or _assignable(a.key, b.key))
    if a.kind == "object" and b.kind == "object":
        return a is b or a.fields == b.fields or True
    if a.kind == "optional" and b.kind == "optional":
        return True
    return a.kind == b.kind


def _check(node: Node, scope: _Scope) -> T:
    t = _check_inner(node, scope)
    node.type = t
    return t


def _check_inner(node: Node, scope: _Scope) -> T:
    op = node.op
    if op == "lit":
        return {"int": INT, "uint": UINT, "double": DOUBLE, "string": STRING, "bytes": BYTES,
                "bool": BOOL, "null": NULL}[node.flag]
    if op == "ident":
        t = scope.lookup(node.name)
        if t is None:
            if node.name in ("int", "uint", "double", "string", "bool", "bytes", "list", "map", "null_type",
                             "type", "dyn", "duration", "timestamp"):
                return TYPE
            raise _err(scope, node, f"undeclared reference to '{node.name}' (in container '')")
        return t
    if op == "select":
        operand = node.args[0]
        if operand.op == "ident" and operand.name in _NAMESPACES and scope.lookup(operand.name) is None:
            raise _err(scope, node, f"undeclared reference to '{operand.name}.{node.name}' (in container '')")
        base = _check(operand, scope)
        return _select_type(scope, node, base, optional=node.flag == "opt")
    if op == "index":
        base = _check(node.args[0], scope)
        idx = _check(node.args[1], scope)
        opt = node.flag == "opt"
        if base.kind == "optional":
            base, opt = base.elem or DYN, True
        if base.kind == "list":
            if idx.kind not in ("int", "uint", "dyn"):
                raise _err(scope, node, f"found no matching overload for '_[_]' applied to '({base.name()}, {idx.name()})'")
            r = base.elem or DYN
        elif base.kind == "map":
            if base.key is not None and not _assignable(base.key, idx):
                raise _err(scope, node, f"found no matching overload for '_[_]' applied to '({base.name()}, {idx.name()})'")
            r = base.elem or DYN
        elif base.kind == "dyn":
            r = DYN
        else:
            raise _err(scope, node, f"found no matching overload for '_[_]' applied to '({base.name()}, {idx.name()})'")
        return T("optional", elem=r) if opt else r
    if op == "list":
        elem: T | None = None
        for a in node.args:
            inner = a.args[0] if a.op == "unary" and a.name == "?" else a
            at = _check(inner, scope)
            if a.op == "unary" and a.name == "?":
                at = at.elem or DYN if at.kind == "optional" else at
            if node.flag == "mixed" and elem is not None and elem.kind != at.kind:
                elem = DYN
            else:
                elem = _homogeneous(scope, inner, elem, at)
        return T("list", elem=elem or DYN, max=len(node.args))
    if op == "map":
        key: T | None = None
        val: T | None = None
        for i in range(0, len(node.args), 2):
            kt = _check(node.args[i], scope)
            vnode = node.args[i + 1]
            if vnode.op == "unary" and vnode.name == "?":
                vt = _check(vnode.args[0], scope)
                vt = vt.elem or DYN if vt.kind == "optional" else vt
            else:
                vt = _check(vnode, scope)
            key = _homogeneous(scope, node.args[i], key, kt)
            val = _homogeneous(scope, node.args[i + 1], val, vt)
        return T("map", key=key or DYN, elem=val or DYN, max=len(node.args) // 2)
    if op == "unary":
        x = _check(node.args[0], scope)
        if node.name == "!":
            if x.kind not in ("bool", "dyn"):
                raise _err(scope, node, f"found no matching overload for '!_' applied to '({x.name()})'")
            return BOOL
        if x.kind not in ("int", "double", "dyn"):
            raise _err(scope, node, f"found no matching overload for '-_' applied to '({x.name()})'")
        return x
    if op == "ternary":
        c = _check(node.args[0], scope)
        if c.kind not in ("bool", "dyn"):
            raise _err(scope, node.args[0], f"found no matching overload for '_?_:_' applied to '({c.name()}, ...)'")
        ta, tb = _check(node.args[1], scope), _check(node.args[2], scope)
        return ta if ta.kind == tb.kind else DYN
    if op == "binary":
        return _binary(node, scope)
    if op == "call":
        return _call(node, scope)
    raise _err(scope, node, f"unsupported expression {op}")


def _homogeneous(scope: _Scope, node: Node, first: T | None, t: T) -> T:
    """HomogeneousAggregateLiterals: a literal's elements (keys, values) share one type."""
    if first is None:
        return t
    if first.kind == "dyn" or t.kind == "dyn" or first.kind == t.kind:
        return first if first.kind != "dyn" else t
    raise _err(scope, node, f"expected type '{first.name()}' but found '{t.name()}'")


def _select_type(scope: _Scope, node: Node, base: T, *, optional: bool) -> T:
    if base.kind == "optional":
        inner = _select_type(scope, node, base.elem or DYN, optional=False)
        return T("optional", elem=inner)
    if base.kind == "object":
        f = (base.fields or {}).get(node.name)
        if f is None and node.name in _RESERVED:
            # 1.31+: a reserved word names the property escaped as __word__ (recognizeKeywordAsFieldName)
            f = (base.fields or {}).get(f"__{node.name}__")
            if f is not None:
                node.text = f"__{node.name}__"
        if f is None:
            raise _err(scope, node, f"undefined field '{node.name}'")
        return T("optional", elem=f) if optional else f
    if base.kind == "map":
        r = base.elem or DYN
        return T("optional", elem=r) if optional else r
    if base.kind == "dyn":
        return T("optional", elem=DYN) if optional else DYN
    raise _err(scope, node, f"type '{base.name()}' does not support field selection")


_REL = {"<": "_<_", "<=": "_<=_", ">": "_>_", ">=": "_>=_"}


def _binary(node: Node, scope: _Scope) -> T:
    name = node.name
    a, b = node.args
    at, bt = _check(a, scope), _check(b, scope)
    if name in ("&&", "||"):
        for x in (at, bt):
            if x.kind not in ("bool", "dyn"):
                raise _err(scope, node, f"found no matching overload for '_{name}_' applied to '({at.name()}, {bt.name()})'")
        return BOOL
    if name in ("==", "!="):
        if not _assignable(at, bt):
            raise _err(scope, node, f"found no matching overload for '_{name}_' applied to '({at.name()}, {bt.name()})'")
        if (at.kind == "object" and bt.kind == "map") or (at.kind == "map" and bt.kind == "object"):
            raise _err(scope, node, f"found no matching overload for '_{name}_' applied to '({at.name()}, {bt.name()})'")
        return BOOL
    if name in _REL:
        ok = at.kind == "dyn" or bt.kind == "dyn" or (at.kind in _NUMERIC and bt.kind in _NUMERIC) or \
            (at.kind == bt.kind and at.kind in ("string", "bytes", "bool", "duration", "timestamp"))
        if not ok:
            raise _err(scope, node, f"found no matching overload for '{_REL[name]}' applied to '({at.name()}, {bt.name()})'")
        return BOOL
    if name == "in":
        if bt.kind not in ("list", "map", "dyn"):
            raise _err(scope, node, f"found no matching overload for '@in' applied to '({at.name()}, {bt.name()})'")
        return BOOL
    # arithmetic
    if at.kind == "dyn" or bt.kind == "dyn":
        return at if bt.kind == "dyn" else bt
    if name == "+":
        if at.kind == bt.kind and at.kind in ("int", "uint", "double", "string", "bytes", "list"):
            if at.kind == "list":
                return T("list", elem=at.elem if at.elem and at.elem.kind != "dyn" else bt.elem, max=at.max + bt.max,
                         list_type=at.list_type, list_keys=at.list_keys)
            return T(at.kind, max=at.max + bt.max) if at.kind in ("string", "bytes") else at
        if {at.kind, bt.kind} in ({"timestamp", "duration"}, {"duration"}):
            return TIMESTAMP if "timestamp" in (at.kind, bt.kind) else DURATION
    elif name == "-":
        if at.kind == bt.kind and at.kind in _NUMERIC:
            return at
        if at.kind == "timestamp" and bt.kind in ("timestamp", "duration"):
            return DURATION if bt.kind == "timestamp" else TIMESTAMP
        if at.kind == bt.kind == "duration":
            return DURATION
    elif at.kind == bt.kind and at.kind in _NUMERIC and not (name == "%" and at.kind == "double"):
        return at
    fn = {"+": "_+_", "-": "_-_", "*": "_*_", "/": "_/_", "%": "_%_"}[name]
    raise _err(scope, node, f"found no matching overload for '{fn}' applied to '({at.name()}, {bt.name()})'")


def _check_literals(scope: _Scope, name: str, target: Node | None, args: list[Node]) -> None:
    """cel-go's compile-time checks of constant arguments: durations, timestamps and regexes."""
    if target is None and len(args) == 1 and name in ("duration", "timestamp"):
        arg = args[0]
        text = _literal_string(arg)
        if name == "duration" and text is not None:
            try:
                parse_duration(text)
            except ValueError:
                raise _err(scope, arg, "invalid duration argument") from None
        if name == "timestamp":
            if text is not None and not _valid_timestamp(text):
                raise _err(scope, arg, "invalid timestamp")
            if arg.op == "lit" and arg.flag == "int":
                secs = int(arg.text, 0) if not arg.text.startswith("-") else -int(arg.text[1:], 0)
                if not -62135596800 <= secs <= 253402300799:
                    raise _err(scope, arg, "invalid timestamp")
    if name in ("matches", "find", "findAll") and args:
        pattern_node = args[-1] if name == "matches" or len(args) == 1 else args[0]
        pattern = _literal_string(pattern_node)
        problem = _regex_problem(pattern) if pattern is not None else None
        if problem is not None:
            if name == "matches":
                raise _err(scope, pattern_node, "invalid matches argument")
            # the regex library's constant-pattern optimization fails when the program is built
            raise CelProgramError(f"program instantiation failed: error parsing regexp: {problem}: `{pattern}`")


_NOT_RE2 = re.compile(r"\(\?(?:[=!>]|<[=!])|[*+?}][+]|\\[1-9]")


def _regex_problem(pattern: str) -> str | None:
    """Why RE2 (Go's regexp) refuses `pattern`, approximately: Python's errors, and the constructs
    Python accepts but RE2 does not (lookarounds, atomic groups, possessive quantifiers, backreferences)."""
    try:
        re.compile(pattern)
    except re.error as e:
        return str(e.msg)
    m = _NOT_RE2.search(pattern)
    if m is not None:
        return f"invalid or unsupported Perl syntax: `{m.group(0)}`"
    return None


def _iter_types(rng: T) -> tuple[T, T]:
    """(first variable, second variable) types when iterating a range: lists give (index, element),
    maps (key, value); a one-variable macro takes the element or the key."""
    if rng.kind == "list":
        return INT, rng.elem or DYN
    if rng.kind == "map":
        return rng.key or DYN, rng.elem or DYN
    return DYN, DYN


def _call(node: Node, scope: _Scope) -> T:
    name, target, args = node.name, node.target, node.args
    # Macros
    if target is None and name == "has":
        if len(args) != 1 or args[0].op != "select":
            raise _err(scope, node, "invalid argument to has() macro")
        _check(args[0], scope)
        return BOOL
    if target is not None and target.op == "ident" and target.name == "cel" and name == "bind" \
            and scope.lookup("cel") is None:
        if len(args) != 3 or args[0].op != "ident":
            raise _err(scope, node, "cel.bind() variable name must be a simple identifier")
        init = _check(args[1], scope)
        scope.vars.append({args[0].name: init})
        try:
            return _check(args[2], scope)
        finally:
            scope.vars.pop()
    if target is not None and (name in _MACROS_1 or name in _MACROS_2) and args and args[0].op == "ident" \
            and len(args) >= 2:
        rng = _check(target, scope)
        if rng.kind == "optional":
            raise _err(scope, node, f"found no matching overload for '{name}' applied to '({rng.name()})'")
        if rng.kind not in ("list", "map", "dyn"):
            raise _err(scope, target, f"expression of type '{rng.name()}' cannot be range of a comprehension "
                                      "(must be list, map, or dynamic)")
        two = len(args) >= 3 and args[1].op == "ident" and (name in _MACROS_2) and \
            not (name in ("map", "filter") and len(args) == 3)
        first, second = _iter_types(rng)
        if two:
            frame = {args[0].name: first, args[1].name: second}
            body = args[2:]
        else:
            frame = {args[0].name: (rng.elem or DYN) if rng.kind == "list" else (rng.key or DYN)}
            body = args[1:]
        scope.vars.append(frame)
        try:
            bts = [_check(b, scope) for b in body]
        finally:
            scope.vars.pop()
        if name in ("all", "exists", "exists_one", "existsOne"):
            if bts[0].kind not in ("bool", "dyn"):
                raise _err(scope, body[0], f"found no matching overload for '_&&_' applied to '(bool, {bts[0].name()})'")
            return BOOL
        if name in ("filter", "sortBy"):
            return T("list", elem=frame[args[0].name] if rng.kind == "list" else (rng.key or DYN), max=rng.max)
        if name in ("map", "transformList"):
            return T("list", elem=bts[-1], max=rng.max)
        if name == "transformMap":
            return T("map", key=rng.key if rng.kind == "map" else INT, elem=bts[-1], max=rng.max)
        if name == "transformMapEntry":
            return bts[-1] if bts[-1].kind == "map" else T("map", key=DYN, elem=DYN)
        return rng
    if target is not None and name in ("optMap", "optFlatMap") and len(args) == 2 and args[0].op == "ident":
        opt = _check(target, scope)
        if opt.kind not in ("optional", "dyn"):
            raise _err(scope, node, f"found no matching overload for '{name}' applied to '({opt.name()})'")
        scope.vars.append({args[0].name: (opt.elem or DYN) if opt.kind == "optional" else DYN})
        try:
            mapped = _check(args[1], scope)
        finally:
            scope.vars.pop()
        return mapped if name == "optFlatMap" else T("optional", elem=mapped)
    # Namespaced functions: math.greatest, optional.of, format.named, ...
    if target is not None and target.op == "ident" and target.name in _NAMESPACES and scope.lookup(target.name) is None:
        for a in args:
            _check(a, scope)
        qual = f"{target.name}.{name}"
        if qual in ("optional.of", "optional.ofNonZeroValue"):
            return T("optional", elem=args[0].type if args else DYN)
        if qual == "optional.none":
            return T("optional", elem=DYN)
        if qual == "format.named":
            return T("optional", elem=T("kubernetes.NamedFormat"))
        if target.name == "format" and name in _FORMAT_NAMES:
            return T("kubernetes.NamedFormat")
        if qual in ("ip.isCanonical", "sets.contains", "sets.equivalent", "sets.intersects", "math.isNaN",
                    "math.isInf", "math.isFinite"):
            return BOOL
        if qual == "lists.range":
            return T("list", elem=INT)
        if qual in ("math.greatest", "math.least", "math.abs"):
            return args[0].type if len(args) == 1 and args[0].type.kind != "list" else \
                (args[0].type.elem or DYN) if args and args[0].type.kind == "list" else DYN
        if qual in ("strings.quote", "base64.encode"):
            return STRING
        if qual == "base64.decode":
            return BYTES
        return DYN
    recv = _check(target, scope) if target is not None else None
    if name == "format" and args and args[0].op == "list":
        args[0].flag = "mixed"  # the strings library exempts format's argument list from homogeneity
    arg_types = [_check(a, scope) for a in args]
    _check_literals(scope, name, target, args)
    if recv is not None and recv.kind == "optional":
        if name in ("hasValue",):
            return BOOL
        if name == "value":
            return recv.elem or DYN
        if name == "orValue":
            return recv.elem if recv.elem and recv.elem.kind != "dyn" else (arg_types[0] if arg_types else DYN)
        if name in ("or", "optMap", "optFlatMap"):
            return recv
        raise _err(scope, node, f"found no matching overload for '{name}' applied to '{recv.name()}.({', '.join(a.name() for a in arg_types)})'")
    if name in ("hasValue", "value", "orValue", "or") and recv is not None and recv.kind not in ("dyn",):
        raise _err(scope, node, f"found no matching overload for '{name}' applied to '{recv.name()}.({', '.join(a.name() for a in arg_types)})'")
    if name == "size":
        sized = recv if recv is not None else (arg_types[0] if arg_types else DYN)
        if sized.kind not in ("string", "bytes", "list", "map", "dyn"):
            shown = f"'{sized.name()}.()'" if recv is not None else f"'({sized.name()})'"
            raise _err(scope, node, f"found no matching overload for 'size' applied to {shown}")
        return INT
    if name in ("contains", "startsWith", "endsWith", "matches") and recv is not None:
        if recv.kind not in ("string", "dyn") or any(a.kind not in ("string", "dyn") for a in arg_types):
            raise _err(scope, node, f"found no matching overload for '{name}' applied to "
                                    f"'{recv.name()}.({', '.join(a.name() for a in arg_types)})'")
        return BOOL
    if name in ("isSorted", "sum", "min", "max", "indexOf", "lastIndexOf") and recv is not None and recv.kind == "list":
        if name in _ELEMENT_OF:
            return recv.elem or DYN
        return _RESULTS[name]
    if name in _SAME_AS_TARGET:
        return recv if recv is not None else (arg_types[0] if arg_types else DYN)
    if name in _ELEMENT_OF:
        return DYN
    if name == "dyn":
        return DYN
    if name == "flatten":
        return T("list", elem=DYN, max=recv.max if recv is not None else 0)
    if name in ("first", "last"):
        return T("optional", elem=(recv.elem if recv is not None and recv.elem else DYN))
    r = _RESULTS.get(name)
    if r is not None:
        return r
    if name in ("bool", "string") or name.startswith("_"):
        return DYN
    raise _err(scope, node, f"undeclared reference to '{name}' (in container '')")


# ---------------------------------------------------------------------------------------------
# Cost estimate (cel-go checker/cost.go with Kubernetes' library costs)

_STRING_FACTOR = 0.1
_REGEX_FACTOR = 0.25
_LIST_CREATE, _MAP_CREATE = 10, 30
_MAX_U = 2**64 - 1


def _sat(x: float) -> int:
    return _MAX_U if x >= _MAX_U else int(x)


def _trav(size: int, factor: float = 1.0) -> int:
    return math.ceil(size * factor)


class _Cost:
    """(cost, size) of an expression; `size` is the worst-case length of its value."""

    __slots__ = ("cost", "size")

    def __init__(self, cost: int, size: int) -> None:
        self.cost = cost
        self.size = size


class _Est:
    """How to size values: `size_of` a type; `exact` when the types carry a value's actual sizes
    (the runtime cost), where a conversion's result is as long as its argument's text."""

    __slots__ = ("exact", "size_of")

    def __init__(self, size_of: Callable[[T], int], exact: bool) -> None:
        self.size_of = size_of
        self.exact = exact


def estimate_cost(node: Node, *, exact: bool = False) -> int:
    """The worst-case cost of a checked tree (its nodes' `type`s are set by `check`); `exact`: the
    types are a value's (see `_Est`)."""
    return _sat(_cost(node, _Est(lambda t: t.max, exact)).cost)


def _lit_size(node: Node) -> int:
    if node.flag in ("string", "bytes"):
        body = node.text.lstrip("rRbB")
        q = 3 if body[:3] in ("'''", '"""') else 1
        return max(0, len(body) - 2 * q)
    return 0


def _cost(node: Node, est: _Est) -> _Cost:
    op = node.op
    if op == "lit":
        return _Cost(0, _lit_size(node))
    if op == "ident":
        return _Cost(0 if node.type.kind == "type" else 1, est.size_of(node.type))
    if op == "select":
        base = _cost(node.args[0], est)
        return _Cost(base.cost + 1, est.size_of(node.type))
    if op == "index":
        a, b = _cost(node.args[0], est), _cost(node.args[1], est)
        return _Cost(a.cost + b.cost + 1, est.size_of(node.type))
    if op == "list":
        parts = [_cost(a, est) for a in node.args]
        return _Cost(_LIST_CREATE + sum(p.cost for p in parts), len(parts))
    if op == "map":
        parts = [_cost(a, est) for a in node.args]
        return _Cost(_MAP_CREATE + sum(p.cost for p in parts), len(parts) // 2)
    if op == "unary":
        x = _cost(node.args[0], est)
        return _Cost(x.cost + 1, x.size)
    if op == "ternary":
        cc, ca, cb = (_cost(x, est) for x in node.args)
        return _Cost(cc.cost + max(ca.cost, cb.cost), max(ca.size, cb.size))
    if op == "binary":
        a, b = _cost(node.args[0], est), _cost(node.args[1], est)
        name = node.name
        if name in ("&&", "||"):
            return _Cost(a.cost + b.cost, 0)
        own = 1
        kind = node.args[0].type.kind
        if name in ("==", "!=", "<", "<=", ">", ">="):
            if kind in ("string", "bytes"):
                own = _trav(min(a.size, b.size), _STRING_FACTOR)
            elif kind in ("list", "map", "object"):
                own = 1 + min(a.size, b.size)
        elif name == "in":
            own = 1 + (b.size if node.args[1].type.kind == "list" else 0)
        elif name == "+" and kind in ("string", "bytes"):
            own = _trav(a.size + b.size, _STRING_FACTOR)
        elif name == "+" and kind == "list":
            own = 1 + a.size + b.size
        size = a.size + b.size if name == "+" else 0
        return _Cost(a.cost + b.cost + own, size)
    return _call_cost(node, est)


def _call_cost(node: Node, est: _Est) -> _Cost:
    name, target, args = node.name, node.target, node.args
    if target is None and name == "has":
        base = _cost(args[0].args[0], est)
        return _Cost(base.cost + 1, 0)
    if target is not None and target.op == "ident" and target.name == "cel" and name == "bind":
        init, body = _cost(args[1], est), _cost(args[2], est)
        return _Cost(init.cost + body.cost, body.size)
    if target is not None and args and args[0].op == "ident" and len(args) >= 2 and \
            (name in _MACROS_1 or name in _MACROS_2) and target.type.kind in ("list", "map", "dyn"):
        rng = _cost(target, est)
        n = rng.size
        bodies = [_cost(b, est) for b in args[1:] if b.op != "ident" or b is args[-1]]
        per = sum(b.cost for b in bodies)
        # cel-go: the accumulator's init and result once, then per element the loop condition, the
        # step and the iteration variable (3), plus the growing result list of map/filter
        per += 3 if name in ("all", "exists", "exists_one", "existsOne") else 3 + _LIST_CREATE
        return _Cost(rng.cost + 1 + _sat(n * per), n)
    parts = [_cost(a, est) for a in args]
    recv = _cost(target, est) if target is not None and not (
        target.op == "ident" and target.name in _NAMESPACES) else _Cost(0, 0)
    base_cost = recv.cost + sum(p.cost for p in parts)
    subject = recv.size if target is not None else (parts[0].size if parts else 0)
    own = 1
    if name in ("startsWith", "endsWith") and parts:
        own = max(1, _trav(parts[0].size, _STRING_FACTOR))
    elif name == "contains":
        own = _trav(subject, _STRING_FACTOR)
    elif name in ("indexOf", "lastIndexOf", "lowerAscii", "upperAscii",
                "trim", "replace", "split", "substring", "charAt", "quantity", "isQuantity", "semver", "isSemver",
                "url", "isURL", "ip", "isIP", "cidr", "isCIDR", "validate", "string", "bytes", "int", "double",
                "timestamp", "duration", "join", "reverse", "quote", "isCanonical"):
        own = 1 + _trav(subject, _STRING_FACTOR)
        if node.target is not None and node.target.type.kind == "list":
            own = 1 + subject
    elif name in ("matches", "find", "findAll"):
        pattern = parts[-1].size if parts else 0
        own = max(1, _trav(subject, _STRING_FACTOR)) * _trav(pattern, _REGEX_FACTOR)
    elif name in ("isSorted", "sum", "min", "max", "sort", "distinct", "flatten", "slice") or \
            (target is not None and target.op == "ident" and target.name == "sets"):
        own = 1 + max([subject] + [p.size for p in parts]) * (2 if name in ("sort", "distinct") else 1)
    size = 0
    if node.type.kind in ("string", "bytes", "list", "map"):
        size = max([subject] + [p.size for p in parts]) if name not in ("size",) else 0
        if name == "string" and target is None:
            # cel-go has no size estimate for a conversion's result; at runtime it is the text's
            size = max(subject, 24) if est.exact else _MAX_U
    return _Cost(base_cost + own, size)


# ---------------------------------------------------------------------------------------------
# Rendering for the Rust engine

KSTRING = "__k8s_string"
KSIZE = "__k8s_size"
SORT_BY = "__k8s_sort_by"
OPT_SELECT = "__k8s_opt_select"
OPT_INDEX = "__k8s_opt_index"
ENTRIES = "__k8s_entries"
FROM_ENTRIES = "__k8s_from_entries"
MERGE_MAPS = "__k8s_merge_maps"
OPT_LIST = "__k8s_opt_list"
OPT_MAP = "__k8s_opt_map"
INCLUDES = "__k8s_includes"
LIST_EQ = "__k8s_list_eq"
LIST_ADD = "__k8s_list_add"


def render(node: Node, *, wrap_string: bool = False) -> str:
    """Source for the Rust engine (see the module docstring for what is rewritten)."""
    return _Renderer(wrap_string).render(node)


class _Renderer:
    def __init__(self, wrap_string: bool) -> None:
        self.wrap_string = wrap_string
        self.depth = 0

    def render(self, n: Node) -> str:
        op = n.op
        r = self.render
        if op == "lit":
            return n.text
        if op == "ident":
            return n.name
        if op == "select":
            base = n.args[0]
            name = n.text or n.name  # the escaped name of a reserved word
            if n.flag == "opt" or base.type.kind == "optional":
                return f"{OPT_SELECT}({r(base)}, '{name}')"
            return f"{self.atom(base)}.{name}"
        if op == "index":
            base = n.args[0]
            if n.flag == "opt" or base.type.kind == "optional":
                return f"{OPT_INDEX}({r(base)}, {r(n.args[1])})"
            return f"{self.atom(base)}[{r(n.args[1])}]"
        if op == "list":
            if any(a.op == "unary" and a.name == "?" for a in n.args):
                items = [f"[{r(a.args[0])}, true]" if a.op == "unary" and a.name == "?" else f"[{r(a)}, false]"
                         for a in n.args]
                return f"{OPT_LIST}([{', '.join(items)}])"
            return "[" + ", ".join(r(a) for a in n.args) + "]"
        if op == "map":
            pairs = [(n.args[i], n.args[i + 1]) for i in range(0, len(n.args), 2)]
            if any(v.op == "unary" and v.name == "?" for _, v in pairs):
                items = [f"[{r(k)}, {r(v.args[0])}, true]" if v.op == "unary" and v.name == "?" else
                         f"[{r(k)}, {r(v)}, false]" for k, v in pairs]
                return f"{OPT_MAP}([{', '.join(items)}])"
            return "{" + ", ".join(f"{r(k)}: {r(v)}" for k, v in pairs) + "}"
        if op == "unary":
            return f"{n.name}{self.atom(n.args[0])}"
        if op == "ternary":
            return f"({r(n.args[0])} ? {r(n.args[1])} : {r(n.args[2])})"
        if op == "binary":
            left = n.args[0].type
            if n.name in ("==", "!=", "+") and left.kind == "list" and left.list_type in ("set", "map"):
                keys = "[" + ", ".join(f"'{k}'" for k in left.list_keys) + "]"
                fn = LIST_ADD if n.name == "+" else LIST_EQ
                call = f"{fn}({r(n.args[0])}, {r(n.args[1])}, '{left.list_type}', {keys})"
                return f"!{call}" if n.name == "!=" else call
            return f"({r(n.args[0])} {n.name} {r(n.args[1])})"
        return self.call(n)

    def atom(self, n: Node) -> str:
        return self.render(n)

    def call(self, n: Node) -> str:
        name, target, args = n.name, n.target, n.args
        r = self.render
        if target is not None and target.op == "ident" and target.name == "cel" and name == "bind":
            return f"[{r(args[1])}].map({args[0].name}, {r(args[2])})[0]"
        if target is not None and args and args[0].op == "ident" and len(args) >= 3 and args[1].op == "ident" \
                and name in _MACROS_2 and not (name in ("map", "filter") and len(args) == 3):
            return self.two_var(n)
        if target is None and name == "string" and len(args) == 1 and \
                (self.wrap_string or args[0].type.kind not in ("string", "int", "uint", "double", "bytes")):
            return f"{KSTRING}({r(args[0])})"
        if name == "size" and len(args) == (0 if target is not None else 1):
            subject = target if target is not None else args[0]
            if subject.type.kind in ("string", "dyn"):
                return f"{KSIZE}({r(subject)})"
        if target is not None and name == "sum" and not args and target.type.kind == "list" and \
                target.type.elem is not None and target.type.elem.kind == "duration":
            rng = r(target)  # the sum of no durations is a duration
            return f"(size({rng}) == 0 ? duration('0s') : {rng}.sum())"
        if target is not None and name in ("optMap", "optFlatMap") and len(args) == 2 and args[0].op == "ident":
            o = r(target)
            mapped = f"[{o}.value()].map({args[0].name}, {r(args[1])})[0]"
            if name == "optMap":
                mapped = f"optional.of({mapped})"
            return f"({o}.hasValue() ? {mapped} : optional.none())"
        if target is not None and name == "sortBy" and len(args) == 2 and args[0].op == "ident":
            rng = r(target)
            return f"{SORT_BY}({rng}, {rng}.map({args[0].name}, {r(args[1])}))"
        if target is not None and name == "existsOne":
            name = "exists_one"
        if target is not None and name == "includes" and len(args) == 1:
            return f"{INCLUDES}({r(target)}, {r(args[0])})"
        if target is None:
            return f"{name}(" + ", ".join(r(a) for a in args) + ")"
        return f"{self.atom(target)}.{name}(" + ", ".join(r(a) for a in args) + ")"

    def two_var(self, n: Node) -> str:
        """`t.all(i, v, p)` and friends over `entries(t)`: a list of [key or index, value] pairs."""
        self.depth += 1
        e = f"__e{self.depth}"
        try:
            name, args = n.name, n.args
            k, v = args[0].name, args[1].name
            rng = f"{ENTRIES}({self.render(n.target)})"  # type: ignore[arg-type]

            def bound(body: Node) -> str:
                return f"[{e}[0]].map({k}, [{e}[1]].map({v}, {self.render(body)})[0])[0]"

            if name in ("all", "exists"):
                return f"{rng}.{name}({e}, {bound(args[2])})"
            if name in ("existsOne", "exists_one"):
                return f"{rng}.exists_one({e}, {bound(args[2])})"
            if name == "transformList":
                if len(args) == 4:
                    return f"{rng}.filter({e}, {bound(args[2])}).map({e}, {bound(args[3])})"
                return f"{rng}.map({e}, {bound(args[2])})"
            if name == "transformMap":
                if len(args) == 4:
                    return f"{FROM_ENTRIES}({rng}.filter({e}, {bound(args[2])}).map({e}, [{e}[0], {bound(args[3])}]))"
                return f"{FROM_ENTRIES}({rng}.map({e}, [{e}[0], {bound(args[2])}]))"
            # transformMapEntry
            if len(args) == 4:
                return f"{MERGE_MAPS}({rng}.filter({e}, {bound(args[2])}).map({e}, {bound(args[3])}))"
            return f"{MERGE_MAPS}({rng}.map({e}, {bound(args[2])}))"
        finally:
            self.depth -= 1


def references(node: Node) -> set[str]:
    """Identifiers the expression reads (comprehension variables included)."""
    return {n.name for n in walk(node) if n.op == "ident"}


def calls(node: Node) -> set[str]:
    return {n.name for n in walk(node) if n.op == "call"}
