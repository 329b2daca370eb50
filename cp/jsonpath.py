"""kubectl's JSONPath (`k8s.io/client-go/util/jsonpath`), as kube-apiserver evaluates it on custom
resources: the cells of `additionalPrinterColumns` (`tableconvertor`) and the values of
`selectableFields` (the custom resource strategy's field set).

The grammar and the evaluation follow client-go's template language: `{...}` actions holding fields
(`.spec.replicas`, `['key']`), wildcards (`.*`, `[*]`), indexes and slices (`[0]`, `[-1]`, `[1:3:2]`),
unions (`[0,2]`), recursive descent (`..name`), filters (`[?(@.type=="Ready")]`, `[?(@.x)]`) and
literals (`"text"`, `3`, `1.5`, `true`); `range`/`end` loops are parsed but not evaluated (a path
using them finds nothing). Missing keys are allowed, as both callers allow them; other failures
(an index out of range, indexing a map, comparing a string with a number) are `JSONPathError`s, on
which upstream's callers print an empty cell.

Values are decoded JSON (dicts, lists, strings, ints, floats, bools, None), read as Go reads
unstructured objects (integers are int64, other numbers float64). `go_text` prints a value as Go's
`fmt.Sprint` / the template printer does. Pure; no I/O.
"""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal
from typing import Any

__all__ = ["JSONPath", "JSONPathError", "go_json", "go_sprint", "go_text", "parse"]


class JSONPathError(ValueError):
    """A template that does not parse, or an evaluation that fails."""


# ---------------------------------------------------------------------------------------------- nodes


class _List:
    __slots__ = ("nodes",)

    def __init__(self) -> None:
        self.nodes: list[Any] = []


class _Text:
    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


class _Field:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


class _Wildcard:
    __slots__ = ()


class _Recursive:
    __slots__ = ()


class _Literal:
    """An integer, float or boolean constant (one value per input)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


class _Identifier:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


class _Param:
    __slots__ = ("derived", "known", "value")

    def __init__(self, *, known: bool = False, value: int = 0, derived: bool = False) -> None:
        self.known = known
        self.value = value
        self.derived = derived


class _Array:
    __slots__ = ("params",)

    def __init__(self, params: tuple[_Param, _Param, _Param]) -> None:
        self.params = params


class _Union:
    __slots__ = ("branches",)

    def __init__(self, branches: list[_List]) -> None:
        self.branches = branches


class _Filter:
    __slots__ = ("left", "op", "right")

    def __init__(self, left: _List, right: _List, op: str) -> None:
        self.left = left
        self.right = right
        self.op = op


# ---------------------------------------------------------------------------------------------- parsing

_DICT_KEY = re.compile(r"^'([^']*)'$")
_SLICE = re.compile(r"^(-?\d*)(:-?\d*)?(:-?\d*)?$")
_COMPARISON = re.compile(r"^([^!<>=]+)([!<>=]+)(.+?)$", re.DOTALL)
_TERMINATORS = frozenset(" \t\r\n.,[]$@{}")


def _alnum(ch: str) -> bool:
    return ch == "_" or ch.isalpha() or ch.isdigit()


_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b",
            "f": "\f", "v": "\v"}


def _unquote(text: str) -> str:
    """A quoted literal (single or double quotes) as Go's `UnquoteExtend` reads it: Go's escapes,
    `\\uXXXX` included."""
    if len(text) < 2 or text[0] != text[-1] or text[0] not in "'\"":
        raise JSONPathError(f"unquote string {text} error invalid syntax")
    body = text[1:-1]
    if "\\" not in body:
        return body
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        esc = body[i + 1:i + 2]
        if esc in _ESCAPES:
            out.append(_ESCAPES[esc])
            i += 2
        elif esc == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", body[i + 2:i + 6]):
            out.append(chr(int(body[i + 2:i + 6], 16)))
            i += 6
        else:
            raise JSONPathError(f"unquote string {text} error invalid syntax")
    return "".join(out)


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.start = 0
        self.root = _List()

    # -- scanning
    def _next(self) -> str:
        if self.pos >= len(self.text):
            self.pos += 1  # so that a backup after the end stays at the end
            return ""
        ch = self.text[self.pos]
        self.pos += 1
        return ch

    def _backup(self) -> None:
        self.pos -= 1

    def _peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def _consume(self) -> str:
        pos = min(self.pos, len(self.text))
        value = self.text[self.start:pos]
        self.start = pos
        return value

    # -- the grammar
    def parse(self) -> _List:
        self._text(self.root)
        return self.root

    def _text(self, cur: _List) -> None:
        while True:
            if self.text.startswith("{", self.pos):
                if self.pos > self.start:
                    cur.nodes.append(_Text(self._consume()))
                self.pos += 1
                self._consume()
                action = _List()
                cur.nodes.append(action)
                self._inside(action)
                return
            if self._next() == "":
                self.pos = len(self.text)
                break
        if self.pos > self.start:
            cur.nodes.append(_Text(self._consume()))

    def _inside(self, cur: _List) -> None:
        while True:
            rest = self.text[self.pos:]
            if rest.startswith("}"):
                self.pos += 1
                self._consume()
                self._text(self.root)
                return
            if rest.startswith("[?("):
                self._filter(cur)
                continue
            if rest.startswith(".."):
                if cur.nodes and isinstance(cur.nodes[-1], _Recursive):
                    raise JSONPathError("invalid multiple recursive descent")
                self.pos += 2
                self._consume()
                cur.nodes.append(_Recursive())
                if _alnum(self._peek()):
                    self._field(cur)
                continue
            ch = self._next()
            if ch == "" or ch in "\r\n":
                raise JSONPathError("unclosed action")
            if ch == " " or ch in "@$":
                self._consume()
            elif ch == "[":
                self._array(cur)
            elif ch in "\"'":
                self._quote(cur, ch)
            elif ch == ".":
                self._field(cur)
            elif ch in "+-" or ch.isdigit():
                self._backup()
                self._number(cur)
            elif _alnum(ch):
                self._backup()
                self._identifier(cur)
            else:
                raise JSONPathError(f"unrecognized character in action: {ch!r}")

    def _field(self, cur: _List) -> None:
        self._consume()
        while True:
            ch = self._next()
            if ch == "\\":
                self._next()
                continue
            if ch == "" or ch in _TERMINATORS:
                self._backup()
                break
        value = self._consume()
        cur.nodes.append(_Wildcard() if value == "*" else _Field(value.replace("\\", "")))

    def _identifier(self, cur: _List) -> None:
        while True:
            ch = self._next()
            if ch == "" or ch in _TERMINATORS:
                self._backup()
                break
        value = self._consume()
        if value in ("true", "false"):
            cur.nodes.append(_Literal(value == "true"))
        else:
            cur.nodes.append(_Identifier(value))

    def _number(self, cur: _List) -> None:
        if self._peek() in ("+", "-"):
            self._next()
        while True:
            ch = self._next()
            if ch != "." and not ch.isdigit():
                self._backup()
                break
        value = self._consume()
        if re.fullmatch(r"[+-]?\d+", value):
            cur.nodes.append(_Literal(int(value)))
            return
        try:
            cur.nodes.append(_Literal(float(value)))
        except ValueError:
            raise JSONPathError(f"cannot parse number {value}") from None

    def _quote(self, cur: _List, end: str) -> None:
        while True:
            ch = self._next()
            if ch == "" or ch == "\n":
                raise JSONPathError("unterminated quoted string")
            if ch == end and self.text[self.pos - 2] != "\\":
                break
        cur.nodes.append(_Text(_unquote(self._consume())))

    def _array(self, cur: _List) -> None:
        while True:
            ch = self._next()
            if ch == "" or ch == "\n":
                raise JSONPathError("unterminated array")
            if ch == "]":
                break
        text = self._consume()[1:-1]
        if text == "*":
            text = ":"
        parts = text.split(",")
        if len(parts) > 1:
            cur.nodes.append(_Union([_action(f"[{p.strip(' ')}]") for p in parts]))
            return
        key = _DICT_KEY.match(text)
        if key is not None:
            cur.nodes.extend(_action("." + key.group(1)).nodes)
            return
        m = _SLICE.match(text)
        if m is None:
            raise JSONPathError(f"invalid array index {text}")
        groups = [m.group(1) or "", m.group(2) or "", m.group(3) or ""]
        params: list[_Param] = []
        for i, raw in enumerate(groups):
            if raw:
                digits = raw[1:] if i > 0 else raw
                if i > 0 and digits == "":
                    params.append(_Param())
                else:
                    try:
                        params.append(_Param(known=True, value=int(digits)))
                    except ValueError:
                        raise JSONPathError(f"array index {digits} is not a number") from None
            elif i == 1:
                params.append(_Param(known=True, value=params[0].value + 1, derived=True))
            else:
                params.append(_Param())
        cur.nodes.append(_Array((params[0], params[1], params[2])))

    def _filter(self, cur: _List) -> None:
        self.pos += 3
        self._consume()
        begin = end = False
        pair = ""
        while True:
            ch = self._next()
            if ch == "" or ch == "\n":
                raise JSONPathError("unterminated filter")
            if ch in "\"'":
                if not begin:
                    begin, pair = True, ch
                    continue
                if self.text[self.pos - 2] != "\\" and ch == pair:
                    end = True
            elif ch == ")" and begin == end:
                break
        if self._next() != "]":
            raise JSONPathError("unclosed array expect ]")
        text = self._consume()[:-2]
        m = _COMPARISON.match(text)
        if m is None:
            cur.nodes.append(_Filter(_action(text), _List(), "exists"))
        else:
            cur.nodes.append(_Filter(_action(m.group(1)), _action(m.group(3)), m.group(2)))


def _action(text: str) -> _List:
    """The nodes of `{text}` (a sub-expression: union branches, filter operands, dict keys)."""
    root = _Parser("{" + text + "}").parse()
    first = root.nodes[0]
    assert isinstance(first, _List)
    return first


# ---------------------------------------------------------------------------------------------- evaluating


def _is_int(v: Any) -> bool:
    return type(v) is int


def _kind(v: Any) -> str:
    """Go's `basicKind` of a decoded JSON value (bools are not integers)."""
    if type(v) is bool:
        return "bool"
    if type(v) is int:
        return "int"
    if type(v) is float:
        return "float"
    if type(v) is str:
        return "string"
    raise JSONPathError("invalid type for comparison")


def _equal(a: Any, b: Any) -> bool:
    ka, kb = _kind(a), _kind(b)
    if ka != kb:
        raise JSONPathError("incompatible types for comparison")
    return bool(a == b)


def _less(a: Any, b: Any) -> bool:
    ka, kb = _kind(a), _kind(b)
    if ka != kb:
        raise JSONPathError("incompatible types for comparison")
    if ka == "bool":
        raise JSONPathError("invalid type for comparison")
    return bool(a < b)


def _compare(op: str, a: Any, b: Any) -> bool:
    if op == "==":
        return _equal(a, b)
    if op == "!=":
        return not _equal(a, b)
    if op == "<":
        return _less(a, b)
    if op == "<=":
        return _less(a, b) or _equal(a, b)
    if op == ">":
        return not (_less(a, b) or _equal(a, b))
    if op == ">=":
        return not _less(a, b)
    raise JSONPathError(f"unrecognized filter operator {op}")


def _children(v: Any) -> list[Any]:
    if isinstance(v, dict):
        return list(v.values())
    if isinstance(v, list):
        return list(v)
    if isinstance(v, str):
        return list(v.encode())  # Go indexes a string's bytes
    return []


def _type_name(v: Any) -> str:
    return {dict: "map[string]interface {}", str: "string", int: "int64", float: "float64",
            bool: "bool"}.get(type(v), "interface {}")


def _walk(values: list[Any], node: Any) -> list[Any]:
    if isinstance(node, _List):
        return _eval_list(values, node)
    if isinstance(node, _Field):
        out = [v[node.name] for v in values if isinstance(v, dict) and node.name in v]
        return out
    if isinstance(node, _Text):
        return [node.text]
    if isinstance(node, _Literal):
        return [node.value for _ in values]
    if isinstance(node, _Array):
        return _eval_array(values, node)
    if isinstance(node, _Filter):
        return _eval_filter(values, node)
    if isinstance(node, _Wildcard):
        return [c for v in values if v is not None for c in _children(v)]
    if isinstance(node, _Recursive):
        return _eval_recursive(values)
    if isinstance(node, _Union):
        return [r for branch in node.branches for r in _eval_list(values, branch)]
    if isinstance(node, _Identifier):
        raise JSONPathError(f"unsupported identifier {node.name}")
    raise JSONPathError(f"unexpected node {node!r}")


def _eval_list(values: list[Any], node: _List) -> list[Any]:
    for child in node.nodes:
        values = _walk(values, child)
    return values


def _eval_array(values: list[Any], node: _Array) -> list[Any]:
    out: list[Any] = []
    p0, p1, p2 = node.params
    for v in values:
        if v is None:
            continue
        if not isinstance(v, list):
            raise JSONPathError(f"{_type_name(v)} is not array or slice")
        n = len(v)
        start = p0.value if p0.known else 0
        if start < 0:
            start += n
        end = p1.value if p1.known else n
        if end < 0 or (end == 0 and p1.derived):
            end += n
        if end == start:
            return out
        if start >= n or start < 0:
            raise JSONPathError(f"array index out of bounds: index {start}, length {n}")
        if end > n or end < 0:
            raise JSONPathError(f"array index out of bounds: index {end - 1}, length {n}")
        if start > end:
            raise JSONPathError(f"starting index {start} is greater than ending index {end}")
        step = 1
        if p2.known:
            if p2.value <= 0:
                raise JSONPathError("step must be > 0")
            step = p2.value
        out.extend(v[start:end:step])
    return out


def _eval_filter(values: list[Any], node: _Filter) -> list[Any]:
    out: list[Any] = []
    for v in values:
        if not isinstance(v, list):
            raise JSONPathError(f"{v} is not array or slice and cannot be filtered")
        for item in v:
            if node.op == "exists":
                try:
                    found = _eval_list([item], node.left)
                except JSONPathError:
                    found = []
                if found:
                    out.append(item)
                continue
            lefts = _eval_list([item], node.left)
            if not lefts:
                continue
            if len(lefts) > 1:
                raise JSONPathError("can only compare one element at a time")
            rights = _eval_list([item], node.right)
            if not rights:
                continue
            if len(rights) > 1:
                raise JSONPathError("can only compare one element at a time")
            if _compare(node.op, lefts[0], rights[0]):
                out.append(item)
    return out


def _eval_recursive(values: list[Any]) -> list[Any]:
    out: list[Any] = []
    for v in values:
        if v is None:
            continue
        children = _children(v)
        if children:
            out.append(v)
            out.extend(_eval_recursive(children))
    return out


class JSONPath:
    """A parsed template (`{.spec.replicas}`)."""

    __slots__ = ("_fields", "_root", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._root = _Parser(text).parse()
        # A plain field path (`{.spec.replicas}`, most printer columns): read without the evaluator.
        nodes = self._root.nodes
        self._fields: tuple[str, ...] | None = None
        if len(nodes) == 1 and isinstance(nodes[0], _List) and nodes[0].nodes and \
                all(isinstance(n, _Field) for n in nodes[0].nodes):
            self._fields = tuple(n.name for n in nodes[0].nodes)

    def find_results(self, data: Any) -> list[list[Any]]:
        """The values each part of the template finds (client-go's `FindResults` with missing keys
        allowed): one list per action or text outside actions."""
        results: list[list[Any]] = []
        for node in self._root.nodes:
            results.append(_walk([data], node))
        return results

    def first(self, data: Any) -> tuple[Any, bool]:
        """The first value the first action finds, and whether there is one. Evaluation errors read as
        nothing found, as the table convertor treats them."""
        if self._fields is not None:
            cur = data
            for name in self._fields:
                if not isinstance(cur, dict) or name not in cur:
                    return None, False
                cur = cur[name]
            return cur, True
        try:
            results = self.find_results(data)
        except (JSONPathError, RecursionError):
            return None, False
        if not results or not results[0]:
            return None, False
        return results[0][0], True


def parse(text: str) -> JSONPath:
    return JSONPath(text)


# ---------------------------------------------------------------------------------------------- printing


def _go_float(f: float) -> str:
    """Go's `%v` of a float64 (strconv 'g' with the shortest digits: exponent form from 1e+06 and
    below 1e-04)."""
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    if f == 0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    sign, digits, exponent = Decimal(repr(f)).normalize().as_tuple()
    assert isinstance(exponent, int)
    mantissa = "".join(str(d) for d in digits)
    exp10 = len(mantissa) + exponent - 1
    prefix = "-" if sign else ""
    if exp10 < -4 or exp10 >= 6:
        frac = mantissa[1:]
        body = mantissa[0] + ("." + frac if frac else "")
        return f"{prefix}{body}e{'-' if exp10 < 0 else '+'}{abs(exp10):02d}"
    if exp10 < 0:
        return f"{prefix}0.{'0' * (-exp10 - 1)}{mantissa}"
    if len(mantissa) <= exp10 + 1:
        return prefix + mantissa + "0" * (exp10 + 1 - len(mantissa))
    return f"{prefix}{mantissa[:exp10 + 1]}.{mantissa[exp10 + 1:]}"


def go_json(value: Any) -> str:
    """Go's `json.Marshal` of a decoded JSON value (sorted keys, compact, HTML characters escaped)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def go_sprint(value: Any) -> str:
    """Go's `fmt.Sprint` of a scalar decoded from JSON (`<nil>` for null)."""
    if value is None:
        return "<nil>"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if type(value) is float:
        return _go_float(value)
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_sprint(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_sprint(v) for v in value) + "]"
    return str(value)


def go_text(value: Any, *, found: bool = True) -> str:
    """A value as the JSONPath printer writes it (`PrintResults`): maps and lists as JSON, null and a
    missing value as `<no value>`, scalars as `fmt.Sprint`."""
    if not found or value is None:
        return "<no value>"
    if isinstance(value, (dict, list)):
        return go_json(value)
    return go_sprint(value)
