"""CEL for admission (policies' validations, variables, match conditions, mutations; webhook match
conditions): what kube-apiserver's admission CEL environment accepts beyond the project's engine.

The Rust engine behind `cp.dra.celenv` evaluates optional values (`optional.of`, `.orValue()`,
`.hasValue()`, `.value()`, `.or()`, and selection/indexing on an optional, which stays optional) but
parses neither cel-go's optional syntax nor typed object construction. Expressions are therefore
rewritten before compilation, preserving their meaning:

- `e.?f` becomes `__opt_select(e, "f")` and `e[?k]` becomes `__opt_index(e, k)`: an optional holding
  the field or entry when present (also when `e` is itself an optional), else `optional.none()`, as
  cel-go's optional field selection and indexing;
- `Object{spec: Object.spec{replicas: 1}}` and `JSONPatch{op: "add", ...}` (MutatingAdmissionPolicy
  apply configurations and JSON patches) become map literals `{"spec": {"replicas": 1}}`: the
  mutation then merges or applies the map, which is what the typed object serialises to;
- `jsonpatch.escapeKey(k)` becomes `__jsonpatch_escape_key(k)` (RFC 6901 escaping of `~` and `/`).

Optional entries in literals (`{?k: v}`, `[?e]`) are not rewritten: they fail to compile. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from cp.dra import celenv

__all__ = [
    "ADMISSION_FUNCTIONS",
    "Activation",
    "AdmissionExpression",
    "CelError",
    "compile_admission",
    "evaluate",
    "rewrite",
]

CelError = celenv.CelError

# ---------------------------------------------------------------------------------------------
# Tokens

_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<string>(?:[rR][bB]?|[bB][rR]?)?(?:'''(?:\\.|[^\\])*?'''|\"\"\"(?:\\.|[^\\])*?\"\"\"
        |'(?:\\.|[^\\'\n])*'|"(?:\\.|[^\\"\n])*"))
  | (?P<number>0[xX][0-9a-fA-F]+[uU]?|\d+\.\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|\d+(?:[eE][+-]?\d+)?[uU]?)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>==|!=|<=|>=|&&|\|\||[-+*/%<>!?:.,()\[\]{}])
  | (?P<other>.)
""", re.VERBOSE | re.DOTALL)

_OPENERS = {"(": ")", "[": "]", "{": "}"}
_CLOSERS = {")": "(", "]": "[", "}": "{"}
_KEYWORDS = frozenset({"in"})  # the only word that is an operator


class _Tok(msgspec.Struct):
    kind: str
    text: str


def _tokens(src: str) -> list[_Tok]:
    return [_Tok(kind=str(m.lastgroup), text=m.group()) for m in _TOKEN.finditer(src)]


def _prev(toks: list[_Tok], i: int) -> int | None:
    """The index of the last non-space token before `i`."""
    i -= 1
    while i >= 0:
        if toks[i].kind != "space":
            return i
        i -= 1
    return None


def _next(toks: list[_Tok], i: int) -> int | None:
    i += 1
    while i < len(toks):
        if toks[i].kind != "space":
            return i
        i += 1
    return None


def _matching_open(toks: list[_Tok], i: int) -> int:
    depth = 0
    for j in range(i, -1, -1):
        t = toks[j].text if toks[j].kind == "op" else ""
        if t in _CLOSERS:
            depth += 1
        elif t in _OPENERS:
            depth -= 1
            if depth == 0:
                return j
    raise ValueError("unbalanced")


def _matching_close(toks: list[_Tok], i: int) -> int:
    depth = 0
    for j in range(i, len(toks)):
        t = toks[j].text if toks[j].kind == "op" else ""
        if t in _OPENERS:
            depth += 1
        elif t in _CLOSERS:
            depth -= 1
            if depth == 0:
                return j
    raise ValueError("unbalanced")


def _is_word(t: _Tok) -> bool:
    return t.kind == "ident" and t.text not in _KEYWORDS


def _operand_start(toks: list[_Tok], j: int) -> int:
    """The first token of the member expression (primary and selections, calls, indexes) ending at
    token `j`."""
    i = j
    while True:
        t = toks[i]
        if t.kind == "op" and t.text in _CLOSERS:
            i = _matching_open(toks, i)
            p = _prev(toks, i)
            if p is not None and (_is_word(toks[p]) or (toks[p].kind == "op" and toks[p].text in ")]")) \
                    and toks[i].text in "([":
                i = p
                if toks[p].kind == "op":
                    continue  # f(x)[0], a[0][1]
            elif p is not None and _is_word(toks[p]) and toks[i].text == "{":
                i = p  # a typed literal Name{...}
            else:
                return i  # a parenthesised expression, list or map literal
        elif t.kind not in ("ident", "string", "number"):
            raise ValueError("no operand")
        p = _prev(toks, i)
        if p is not None and toks[p].kind == "op" and toks[p].text == ".":
            q = _prev(toks, p)
            if q is None:
                return p
            i = q
            continue
        return i


def _join(toks: list[_Tok]) -> str:
    return "".join(t.text for t in toks)


def _rewrite_struct_literals(toks: list[_Tok]) -> list[_Tok]:
    """`A.b.c{f: v, g: w}` -> `{"f": v, "g": w}` (innermost last: each pass handles every brace)."""
    i = 0
    while i < len(toks):
        t = toks[i]
        if t.kind == "op" and t.text == "{":
            p = _prev(toks, i)
            if p is not None and _is_word(toks[p]):
                # the type name: idents joined by dots
                start = p
                while True:
                    d = _prev(toks, start)
                    if d is None or toks[d].text != ".":
                        break
                    q = _prev(toks, d)
                    if q is None or not _is_word(toks[q]):
                        break
                    start = q
                close = _matching_close(toks, i)
                # field names at depth 1 become string keys
                depth = 0
                expect_key = True
                for j in range(i, close):
                    tj = toks[j]
                    if tj.kind == "op" and tj.text in _OPENERS:
                        depth += 1
                        if depth == 1:
                            expect_key = True
                        continue
                    if tj.kind == "op" and tj.text in _CLOSERS:
                        depth -= 1
                        continue
                    if depth != 1 or tj.kind == "space":
                        continue
                    if expect_key and tj.kind == "ident":
                        n = _next(toks, j)
                        if n is not None and toks[n].text == ":":
                            toks[j] = _Tok(kind="string", text=f'"{tj.text}"')
                    expect_key = tj.kind == "op" and tj.text == ","
                del toks[start:i]
                i = start
        i += 1
    return toks


def _rewrite_optionals(src: str) -> str:
    """One `.?f` / `[?k]` at a time, leftmost first, until none is left."""
    for _ in range(1000):
        toks = _tokens(src)
        for i, t in enumerate(toks):
            if t.kind != "op" or t.text not in ".[":
                continue
            n = _next(toks, i)
            if n is None or toks[n].text != "?":
                continue
            p = _prev(toks, i)
            if p is None:
                continue
            try:
                start = _operand_start(toks, p)
            except ValueError:
                continue
            if t.kind == "op" and t.text == "[":
                p2 = _prev(toks, i)
                if p2 is not None and ((toks[p2].kind == "op" and toks[p2].text in "([,{:?")
                                       or (toks[p2].kind == "ident" and toks[p2].text in _KEYWORDS)):
                    continue  # `[?e]` in a list literal: not supported
                close = _matching_close(toks, i)
                operand = _join(toks[start:i])
                key = _join(toks[n + 1:close])
                src = _join(toks[:start]) + f"__opt_index({operand}, {key})" + _join(toks[close + 1:])
            else:
                f = _next(toks, n)
                if f is None or toks[f].kind != "ident":
                    continue
                operand = _join(toks[start:i])
                src = _join(toks[:start]) + f'__opt_select({operand}, "{toks[f].text}")' + _join(toks[f + 1:])
            break
        else:
            return src
    return src


_ESCAPE_KEY = re.compile(r"\bjsonpatch\s*\.\s*escapeKey\s*\(")


def rewrite(expression: str) -> str:
    """`expression` in the syntax the project's engine parses (see the module docstring); an
    expression it cannot rewrite is returned as it is (its compiler reports it)."""
    if "{" not in expression and "?" not in expression and "jsonpatch" not in expression:
        return expression
    try:
        toks = _tokens(expression)
        if any(t.kind == "op" and t.text == "{" for t in toks):
            expression = _join(_rewrite_struct_literals(toks))
        if "?" in expression:
            expression = _rewrite_optionals(expression)
    except ValueError:
        return expression
    if "jsonpatch" in expression:
        toks = _tokens(expression)
        out: list[str] = []
        for t in toks:
            out.append(t.text)
        expression = _ESCAPE_KEY.sub("__jsonpatch_escape_key(", "".join(out))
    return expression


# ---------------------------------------------------------------------------------------------
# Run-time functions of the rewritten syntax


def _unwrap(x: Any) -> tuple[bool, Any]:
    opt = celenv.cel_optional_type()
    if isinstance(x, opt):
        if not x.has_value():
            return False, None
        return True, x.value()
    return True, x


def _opt_select(x: Any, field: Any) -> Any:
    opt = celenv.cel_optional_type()
    present, value = _unwrap(x)
    if present and isinstance(value, Mapping) and field in value:
        return opt.of(value[field])
    if present and not isinstance(value, Mapping) and value is not None:
        raise celenv.CelFunctionError(f"no such overload: optional field selection on {type(value).__name__}")
    return opt.none()


def _opt_index(x: Any, key: Any) -> Any:
    opt = celenv.cel_optional_type()
    present, value = _unwrap(x)
    if not present:
        return opt.none()
    if isinstance(value, Mapping):
        return opt.of(value[key]) if key in value else opt.none()
    if isinstance(value, list):
        if isinstance(key, bool) or not isinstance(key, int):
            raise celenv.CelFunctionError("no such overload: optional index")
        return opt.of(value[key]) if 0 <= key < len(value) else opt.none()
    raise celenv.CelFunctionError("no such overload: optional index")


def _escape_key(key: Any) -> str:
    if not isinstance(key, str):
        raise celenv.CelFunctionError("no such overload: jsonpatch.escapeKey")
    return key.replace("~", "~0").replace("/", "~1")


ADMISSION_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "__opt_select": _opt_select,
    "__opt_index": _opt_index,
    "__jsonpatch_escape_key": _escape_key,
}


# ---------------------------------------------------------------------------------------------
# Compilation and evaluation

# Names of Kubernetes' admission libraries: the authorizer's (`cp.admission.authz`, evaluated when the
# caller passes its functions) and the URL, IP, CIDR and format libraries', which compile but are not
# evaluated here (a call is a runtime error, subject to the policy's failurePolicy).
_LIBRARY_NAMES = frozenset({
    "path", "group", "serviceAccount", "resource", "subresource", "namespace", "name", "check", "allowed",
    "reason", "errored", "error", "fieldSelector", "labelSelector",
    "url", "isURL", "getScheme", "getHost", "getHostname", "getPort", "getEscapedPath", "getQuery",
    "ip", "isIP", "family", "isUnspecified", "isLoopback", "isLinkLocalMulticast", "isLinkLocalUnicast",
    "isGlobalUnicast", "isCanonical", "cidr", "isCIDR", "containsIP", "containsCIDR", "masked", "prefixLength",
    "named", "validate", "dns1123Label", "dns1123Subdomain", "dns1035Label", "qualifiedName", "labelValue",
    "dns1123LabelPrefix", "dns1123SubdomainPrefix", "dns1035LabelPrefix", "uri", "uuid", "byte", "date",
    "datetime",
})

_VARIABLE_REF = re.compile(r"\bvariables\s*\.\s*([A-Za-z_][A-Za-z0-9_]*)")


class AdmissionExpression:
    """One compiled admission expression: `error` (the compiler's text) instead of a program when it
    does not compile; `variables_used`: the names of `variables.X` it reads (composition)."""

    __slots__ = ("compiled", "error", "expression", "variables_used")

    def __init__(self, expression: str, compiled: celenv.CompiledExpression) -> None:
        self.expression = expression
        self.compiled = compiled
        self.error = compiled.error
        self.variables_used = tuple(dict.fromkeys(_VARIABLE_REF.findall(compiled.expression)))


def compile_admission(expression: str, *, variables: frozenset[str]) -> AdmissionExpression:
    """Compile `expression` (rewritten, see `rewrite`) declaring `variables` (`object`, `oldObject`,
    `request`, `params`, `namespaceObject`, `variables`, `authorizer`...). Cached by the engine module
    per (expression, variables)."""
    source = rewrite(expression)
    compiled = celenv.compile_expression(source, variables=variables | {"jsonpatch", "format"},
                                         functions=_LIBRARY_NAMES)
    return AdmissionExpression(expression, compiled)


Activation = celenv.EvaluationContext


def evaluate(expression: AdmissionExpression, activation: Mapping[str, Any] | celenv.EvaluationContext, *,
             functions: Mapping[str, Callable[..., Any]] | None = None) -> Any:
    """The value of `expression` with the variables of `activation` (a mapping, or an `Activation`
    reused across the expressions of one request) and, beyond the rewritten syntax's, the caller's
    `functions` (the authorizer library, `cp.admission.authz`); raises CelError (compile errors
    included) with cel-go's wording where the engine's differs."""
    if expression.error is not None:
        raise CelError(expression.error)
    ctx = activation if isinstance(activation, celenv.EvaluationContext) else celenv.EvaluationContext(activation)
    extra = ADMISSION_FUNCTIONS if not functions else {**ADMISSION_FUNCTIONS, **functions}
    return ctx.evaluate(expression.compiled, extra_functions=extra)
