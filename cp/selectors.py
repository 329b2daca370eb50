"""Label and field selectors: parsing, validation and matching.

Behaviour follows apimachinery `pkg/labels/selector.go` (label selector grammar, key/value
validation, error texts), `pkg/apis/meta/v1/helpers.go` (`LabelSelectorAsSelector`,
`FormatLabelSelector`), `pkg/fields/selector.go` (field selector grammar and escaping) and the
per-kind field label conversion functions registered by the API groups (which fields a resource
accepts, and the exact rejection messages). See `../shared/reference/kubectl-compat.md` §4.

A selector is parsed once per request and then matched against many objects, so parsing builds
one small matcher per requirement up front and `matches` only runs those. Pure; no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from cp.errors import BadRequest
from cp.fieldlabels import FieldGetter, FieldLabels, field_labels, go_quote

__all__ = [
    "FieldSelector",
    "LabelSelector",
    "Requirement",
    "from_label_selector_object",
    "parse_field_selector",
    "parse_label_selector",
    "to_string",
]

# ---------------------------------------------------------------------------------------------
# Operators (the string values of apimachinery `selection.Operator`)

OP_IN = "in"
OP_NOT_IN = "notin"
OP_EQUALS = "="
OP_DOUBLE_EQUALS = "=="
OP_NOT_EQUALS = "!="
OP_GT = "gt"
OP_LT = "lt"
OP_EXISTS = "exists"
OP_DOES_NOT_EXIST = "!"

# The order upstream lists binary operators in its "expected: ..." message.
_BINARY_OPS = (OP_IN, OP_NOT_IN, OP_EQUALS, OP_DOUBLE_EQUALS, OP_NOT_EQUALS, OP_GT, OP_LT)

_EMPTY_LABELS: Mapping[str, str] = {}

# ---------------------------------------------------------------------------------------------
# Validation of label keys and values (`api/validate/content`: IsLabelKey, IsLabelValue)

_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_NAME_RE = re.compile(_NAME_FMT)
_NAME_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', "
             "and must start and end with an alphanumeric character")
_VALUE_FMT = "(" + _NAME_FMT + ")?"
_VALUE_RE = re.compile(_VALUE_FMT)
_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, "
              "'-', '_' or '.', and must start and end with an alphanumeric character")
_DNS_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN_FMT = _DNS_LABEL_FMT + "(\\." + _DNS_LABEL_FMT + ")*"
_DNS_SUBDOMAIN_RE = re.compile(_DNS_SUBDOMAIN_FMT)
_DNS_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                      "characters, '-' or '.', and must start and end with an alphanumeric character")


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    # Same shape (including the doubled blank before "or") as upstream's RegexError.
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def _nbytes(s: str) -> int:
    return len(s) if s.isascii() else len(s.encode("utf-8"))


def label_key_errors(key: str) -> list[str]:
    """Problems with `key` as a label key (empty list when valid)."""
    errs: list[str] = []
    parts = key.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            if _nbytes(prefix) > 253:
                errs.append("prefix part must be no more than 253 bytes")
            if not _DNS_SUBDOMAIN_RE.fullmatch(prefix):
                errs.append("prefix part "
                            + _regex_error(_DNS_SUBDOMAIN_MSG, _DNS_SUBDOMAIN_FMT, "example.com"))
    else:
        return ["a valid label key " + _regex_error(_NAME_MSG, _NAME_FMT, "MyName", "my.name", "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        errs.append("name part must be non-empty")
    elif _nbytes(name) > 63:
        errs.append("name part must be no more than 63 bytes")
    if not _NAME_RE.fullmatch(name):
        errs.append("name part " + _regex_error(_NAME_MSG, _NAME_FMT, "MyName", "my.name", "123-abc"))
    return errs


def label_value_errors(value: str) -> list[str]:
    """Problems with `value` as a label value (empty list when valid)."""
    errs: list[str] = []
    if _nbytes(value) > 63:
        errs.append("must be no more than 63 bytes")
    if not _VALUE_RE.fullmatch(value):
        errs.append(_regex_error(_VALUE_MSG, _VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def _go_string_slice(values: list[str] | None) -> str:
    """Go's %#v for a []string."""
    if values is None:
        return "[]string(nil)"
    return "[]string{" + ", ".join(go_quote(v) for v in values) + "}"


def _field_error(path: str, bad_value: str, detail: str) -> str:
    """`field.Invalid(path, value, detail).Error()`; `bad_value` is already rendered."""
    return f"{path}: Invalid value: {bad_value}: {detail}"


def _aggregate(messages: list[str]) -> str:
    """`utilerrors.NewAggregate(...).Error()` with duplicate messages dropped."""
    seen: list[str] = []
    for m in messages:
        if m not in seen:
            seen.append(m)
    if len(seen) == 1:
        return seen[0]
    return "[" + ", ".join(seen) + "]"


# ---------------------------------------------------------------------------------------------
# Requirements and label selectors


def _parse_int64(s: str) -> int | None:
    # strconv.ParseInt(s, 10, 64): optional sign, decimal digits only, in int64 range.
    body = s[1:] if s[:1] in ("+", "-") else s
    if not body or not body.isascii() or not body.isdigit():
        return None
    n = int(s)
    if n < -(1 << 63) or n >= (1 << 63):
        return None
    return n


class Requirement:
    """One `key op values` term. Build through `make_requirement` (it validates)."""

    __slots__ = ("key", "match", "operator", "values")

    def __init__(self, *, key: str, operator: str, values: tuple[str, ...]) -> None:
        self.key = key
        self.operator = operator
        self.values = values
        self.match: Callable[[Mapping[str, str]], bool] = _compile(key, operator, values)

    def __repr__(self) -> str:
        return f"Requirement({self})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Requirement):
            return NotImplemented
        return (self.key, self.operator, self.values) == (other.key, other.operator, other.values)

    def __hash__(self) -> int:
        return hash((self.key, self.operator, self.values))

    def __str__(self) -> str:
        op = self.operator
        if op == OP_EXISTS:
            return self.key
        if op == OP_DOES_NOT_EXIST:
            return "!" + self.key
        vals = self.values
        text = vals[0] if len(vals) == 1 else ",".join(sorted(vals))
        if op == OP_IN:
            return f"{self.key} in ({text})"
        if op == OP_NOT_IN:
            return f"{self.key} notin ({text})"
        sym = {OP_GT: ">", OP_LT: "<"}.get(op, op)
        return f"{self.key}{sym}{text}"


def _compile(key: str, op: str, values: tuple[str, ...]) -> Callable[[Mapping[str, str]], bool]:
    if op in (OP_EQUALS, OP_DOUBLE_EQUALS, OP_IN):
        if len(values) == 1:
            want = values[0]
            return lambda ls: ls.get(key) == want
        allowed = frozenset(values)
        return lambda ls: ls.get(key) in allowed
    if op in (OP_NOT_EQUALS, OP_NOT_IN):
        if len(values) == 1:
            banned = values[0]
            return lambda ls: ls.get(key) != banned
        banned_set = frozenset(values)
        return lambda ls: ls.get(key) not in banned_set
    if op == OP_EXISTS:
        return lambda ls: key in ls
    if op == OP_DOES_NOT_EXIST:
        return lambda ls: key not in ls
    if op in (OP_GT, OP_LT):
        bound = _parse_int64(values[0]) if len(values) == 1 else None
        greater = op == OP_GT

        def compare(ls: Mapping[str, str]) -> bool:
            raw = ls.get(key)
            if raw is None or bound is None:
                return False
            have = _parse_int64(raw)
            if have is None:
                return False
            return have > bound if greater else have < bound

        return compare
    return lambda ls: False


def make_requirement(*, key: str, operator: str, values: list[str] | None,
                     key_path: str = "key", values_path: str = "values") -> Requirement:
    """`labels.NewRequirement`: validate and build. Raises BadRequest with upstream's message."""
    errs: list[str] = []
    key_errs = label_key_errors(key)
    if key_errs:
        errs.append(_field_error(key_path, go_quote(key), "; ".join(key_errs)))
    vals = values or []
    if operator in (OP_IN, OP_NOT_IN):
        if not vals:
            errs.append(_field_error(values_path, _go_string_slice(values),
                                     "for 'in', 'notin' operators, values set can't be empty"))
    elif operator in (OP_EQUALS, OP_DOUBLE_EQUALS, OP_NOT_EQUALS):
        if len(vals) != 1:
            errs.append(_field_error(values_path, _go_string_slice(values),
                                     "exact-match compatibility requires one single value"))
    elif operator in (OP_EXISTS, OP_DOES_NOT_EXIST):
        if vals:
            errs.append(_field_error(values_path, _go_string_slice(values),
                                     "values set must be empty for exists and does not exist"))
    elif operator in (OP_GT, OP_LT):
        if len(vals) != 1:
            errs.append(_field_error(values_path, _go_string_slice(values),
                                     "for 'Gt', 'Lt' operators, exactly one value is required"))
        for i, v in enumerate(vals):
            if _parse_int64(v) is None:
                errs.append(_field_error(f"{values_path}[{i}]", go_quote(v),
                                         "for 'Gt', 'Lt' operators, the value must be an integer"))
    else:
        supported = ", ".join(go_quote(o) for o in (*_BINARY_OPS, OP_EXISTS, OP_DOES_NOT_EXIST))
        errs.append(f"operator: Unsupported value: {go_quote(operator)}: supported values: {supported}")
    for i, v in enumerate(vals):
        value_errs = label_value_errors(v)
        if value_errs:
            errs.append(_field_error(f"{values_path}[{i}][{key}]", go_quote(v), "; ".join(value_errs)))
    if errs:
        raise BadRequest(_aggregate(errs))
    return Requirement(key=key, operator=operator, values=tuple(vals))


class LabelSelector:
    """A parsed label selector: an AND of requirements, sorted by key as upstream does."""

    __slots__ = ("_matchers", "_nothing", "requirements")

    def __init__(self, requirements: list[Requirement] | tuple[Requirement, ...] = (), *,
                 nothing: bool = False) -> None:
        reqs = sorted(requirements, key=lambda r: r.key)  # stable, like upstream's small-slice sort
        self.requirements: tuple[Requirement, ...] = tuple(reqs)
        self._nothing = nothing
        self._matchers = tuple(r.match for r in reqs)

    @classmethod
    def everything(cls) -> LabelSelector:
        return cls()

    @classmethod
    def nothing(cls) -> LabelSelector:
        return cls(nothing=True)

    @property
    def empty(self) -> bool:
        """True when the selector does not restrict anything (a nothing-selector is not empty)."""
        return not self._nothing and not self.requirements

    @property
    def matches_nothing(self) -> bool:
        return self._nothing

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if self._nothing:
            return False
        if labels is None:
            labels = _EMPTY_LABELS
        for m in self._matchers:  # noqa: SIM110 (hot path: a loop is twice as fast as all() here)
            if not m(labels):
                return False
        return True

    def requires_exact_match(self, key: str) -> str | None:
        """The single value `key` must have, if the selector pins it (`RequiresExactMatch`)."""
        for r in self.requirements:
            if r.key == key:
                if r.operator in (OP_EQUALS, OP_DOUBLE_EQUALS, OP_IN) and len(r.values) == 1:
                    return r.values[0]
                return None
        return None

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)

    def __repr__(self) -> str:
        return "LabelSelector(<nothing>)" if self._nothing else f"LabelSelector({str(self)!r})"


# --- the string grammar -----------------------------------------------------------------------

_T_ERROR = "error"
_T_EOS = "eos"
_T_CLOSE = ")"
_T_COMMA = ","
_T_NOT = "!"
_T_DOUBLE_EQ = "=="
_T_EQ = "="
_T_GT = ">"
_T_ID = "id"
_T_IN = "in"
_T_LT = "<"
_T_NE = "!="
_T_NOT_IN = "notin"
_T_OPEN = "("

_SYMBOL_TOKENS = {")": _T_CLOSE, ",": _T_COMMA, "!": _T_NOT, "==": _T_DOUBLE_EQ, "=": _T_EQ,
                  ">": _T_GT, "<": _T_LT, "!=": _T_NE, "(": _T_OPEN}
_WORD_TOKENS = {"in": _T_IN, "notin": _T_NOT_IN}
_SPECIAL = frozenset("=!(),><")
_BLANK = frozenset(" \t\r\n")


def _lex(text: str) -> list[tuple[str, str]]:
    """Split a label selector into (token, literal) pairs, ending with the end-of-string token."""
    items: list[tuple[str, str]] = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i] in _BLANK:
            i += 1
        if i >= n:
            items.append((_T_EOS, ""))
            return items
        ch = text[i]
        if ch in _SPECIAL:
            # Longest run of symbol characters that still forms a known operator.
            best: tuple[str, str] | None = None
            j = i
            while j < n and text[j] in _SPECIAL:
                buf = text[i:j + 1]
                tok = _SYMBOL_TOKENS.get(buf)
                if tok is not None:
                    best = (tok, buf)
                elif best is not None:
                    break
                j += 1
            if best is None:
                items.append((_T_ERROR, f"error expected: keyword found '{text[i:j]}'"))
                i = j
            else:
                items.append(best)
                i += len(best[1])
        else:
            j = i
            while j < n and text[j] not in _SPECIAL and text[j] not in _BLANK:
                j += 1
            word = text[i:j]
            items.append((_WORD_TOKENS.get(word, _T_ID), word))
            i = j


class _ParseError(Exception):
    pass


class _Parser:
    """Recursive descent over the token list; `in`/`notin` are plain words where values go."""

    __slots__ = ("items", "pos")

    def __init__(self, text: str) -> None:
        self.items = _lex(text)
        self.pos = 0

    def peek(self, *, values: bool = True) -> tuple[str, str]:
        tok, lit = self.items[self.pos]
        if values and tok in (_T_IN, _T_NOT_IN):
            tok = _T_ID
        return tok, lit

    def take(self, *, values: bool = True) -> tuple[str, str]:
        item = self.peek(values=values)
        self.pos += 1
        return item

    def selector(self) -> list[Requirement]:
        reqs: list[Requirement] = []
        while True:
            tok, lit = self.peek()
            if tok in (_T_ID, _T_NOT):
                try:
                    reqs.append(self.requirement())
                except _ParseError as e:
                    raise _ParseError(f"unable to parse requirement: {e}") from None
                except BadRequest as e:
                    raise _ParseError(f"unable to parse requirement: {e.message}") from None
                tok, lit = self.take()
                if tok == _T_EOS:
                    return reqs
                if tok == _T_COMMA:
                    tok2, lit2 = self.peek()
                    if tok2 not in (_T_ID, _T_NOT):
                        raise _ParseError(f"found '{lit2}', expected: identifier after ','")
                else:
                    raise _ParseError(f"found '{lit}', expected: ',' or 'end of string'")
            elif tok == _T_EOS:
                return reqs
            else:
                raise _ParseError(f"found '{lit}', expected: !, identifier, or 'end of string'")

    def requirement(self) -> Requirement:
        operator = ""
        tok, lit = self.take()
        if tok == _T_NOT:
            operator = OP_DOES_NOT_EXIST
            tok, lit = self.take()
        if tok != _T_ID:
            raise _ParseError(f"found '{lit}', expected: identifier")
        key = lit
        key_errs = label_key_errors(key)
        if key_errs:
            raise _ParseError(_field_error("<nil>", go_quote(key), "; ".join(key_errs)))
        if self.peek()[0] in (_T_EOS, _T_COMMA) and operator != OP_DOES_NOT_EXIST:
            operator = OP_EXISTS
        if operator in (OP_EXISTS, OP_DOES_NOT_EXIST):
            return make_requirement(key=key, operator=operator, values=[])
        operator = self.operator()
        values = self.value_set() if operator in (OP_IN, OP_NOT_IN) else self.exact_value()
        return make_requirement(key=key, operator=operator, values=sorted(values))

    def operator(self) -> str:
        tok, lit = self.take(values=False)
        op = {_T_IN: OP_IN, _T_EQ: OP_EQUALS, _T_DOUBLE_EQ: OP_DOUBLE_EQUALS, _T_GT: OP_GT,
              _T_LT: OP_LT, _T_NOT_IN: OP_NOT_IN, _T_NE: OP_NOT_EQUALS}.get(tok)
        if op is None:
            raise _ParseError(f"found '{lit}', expected: {', '.join(_BINARY_OPS)}")
        return op

    def value_set(self) -> set[str]:
        tok, lit = self.take()
        if tok != _T_OPEN:
            raise _ParseError(f"found '{lit}' expected: '('")
        tok, lit = self.peek()
        if tok in (_T_ID, _T_COMMA):
            found = self.identifiers()
            if self.take()[0] != _T_CLOSE:
                raise _ParseError(f"found '{lit}', expected: ')'")
            return found
        if tok == _T_CLOSE:
            self.take()
            return {""}
        raise _ParseError(f"found '{lit}', expected: ',', ')' or identifier")

    def identifiers(self) -> set[str]:
        found: set[str] = set()
        while True:
            tok, lit = self.take()
            if tok == _T_ID:
                found.add(lit)
                tok2, lit2 = self.peek()
                if tok2 == _T_COMMA:
                    continue
                if tok2 == _T_CLOSE:
                    return found
                raise _ParseError(f"found '{lit2}', expected: ',' or ')'")
            if tok == _T_COMMA:
                if not found:
                    found.add("")  # "(,"
                tok2 = self.peek()[0]
                if tok2 in (_T_CLOSE, _T_COMMA):
                    found.add("")  # ",)" and ",,"
                    if tok2 == _T_CLOSE:
                        return found
                continue
            raise _ParseError(f"found '{lit}', expected: ',', or identifier")

    def exact_value(self) -> set[str]:
        if self.peek()[0] in (_T_EOS, _T_COMMA):
            return {""}
        tok, lit = self.take()
        if tok == _T_ID:
            return {lit}
        raise _ParseError(f"found '{lit}', expected: identifier")


def parse_label_selector(text: str) -> LabelSelector:
    """Parse the `labelSelector` query syntax. Raises BadRequest on invalid input."""
    if not text or text.isspace():
        return LabelSelector()
    try:
        reqs = _Parser(text).selector()
    except _ParseError as e:
        raise BadRequest(str(e)) from None
    return LabelSelector(reqs)


# --- metav1.LabelSelector objects ---------------------------------------------------------------

_EXPR_OPS = {"In": OP_IN, "NotIn": OP_NOT_IN, "Exists": OP_EXISTS, "DoesNotExist": OP_DOES_NOT_EXIST}


def from_label_selector_object(sel: Mapping[str, Any] | None) -> LabelSelector:
    """`metav1.LabelSelectorAsSelector`: None selects nothing, `{}` selects everything.

    Raises BadRequest (upstream's message) for an unknown operator or invalid keys/values.
    """
    if sel is None:
        return LabelSelector.nothing()
    match_labels = sel.get("matchLabels") or {}
    exprs = sel.get("matchExpressions") or []
    if not match_labels and not exprs:
        return LabelSelector()
    reqs: list[Requirement] = []
    for k, v in match_labels.items():
        reqs.append(make_requirement(key=k, operator=OP_EQUALS, values=[v]))
    for expr in exprs:
        raw_op = expr.get("operator", "")
        op = _EXPR_OPS.get(raw_op)
        if op is None:
            raise BadRequest(f"{go_quote(raw_op)} is not a valid label selector operator")
        values = expr.get("values")
        reqs.append(make_requirement(key=expr.get("key", ""), operator=op,
                                     values=list(values) if values else None))
    return LabelSelector(reqs)


def to_string(sel: Mapping[str, Any] | None) -> str:
    """`metav1.FormatLabelSelector`: "<none>" when it selects everything or nothing, "<error>"
    when invalid, otherwise the canonical string form ("app=web,tier in (be,fe)")."""
    try:
        text = str(from_label_selector_object(sel))
    except BadRequest:
        return "<error>"
    return text or "<none>"


# ---------------------------------------------------------------------------------------------
# Field selectors


def _split_terms(text: str) -> list[str]:
    """Split on commas that are not escaped by a backslash (escapes are kept in the terms)."""
    terms: list[str] = []
    start = 0
    escaped = False
    for i, ch in enumerate(text):
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == ",":
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


def _split_term(term: str) -> tuple[str, str, str] | None:
    """First operator occurrence wins; at each position "!=" and "==" are tried before "="."""
    for i, ch in enumerate(term):
        if ch == "!" and term.startswith("!=", i):
            return term[:i], OP_NOT_EQUALS, term[i + 2:]
        if ch == "=":
            if term.startswith("==", i):
                return term[:i], OP_EQUALS, term[i + 2:]
            return term[:i], OP_EQUALS, term[i + 1:]
    return None


def _unescape(value: str) -> str:
    if "\\" not in value and "," not in value and "=" not in value:
        return value
    out: list[str] = []
    escaped = False
    for ch in value:
        if escaped:
            if ch not in "\\,=":
                raise BadRequest(f"invalid field selector: invalid escape sequence: \\{ch}")
            out.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch in ",=":
            # Go prints the rune with %v, i.e. as its code point number.
            raise BadRequest(f"invalid field selector: unescaped character in value: {ord(ch)}")
        else:
            out.append(ch)
    if escaped:
        raise BadRequest("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


class FieldSelector:
    """A parsed field selector: an AND of `field=value` / `field!=value` terms."""

    __slots__ = ("_checks", "requirements")

    def __init__(self, *, requirements: list[tuple[str, str, str]],
                 getters: list[FieldGetter]) -> None:
        self.requirements: list[tuple[str, str, str]] = requirements
        self._checks = tuple((g, op == OP_EQUALS, v)
                             for g, (_, op, v) in zip(getters, requirements, strict=True))

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, obj: Mapping[str, Any]) -> bool:
        for get, equal, value in self._checks:  # noqa: SIM110 (hot path, as LabelSelector.matches)
            if (get(obj) == value) is not equal:
                return False
        return True

    def requires_exact_match(self, field: str) -> str | None:
        """The value `field` must equal, if some `field=value` term pins it (an index hint)."""
        for f, op, v in self.requirements:
            if f == field and op == OP_EQUALS:
                return v
        return None

    def __str__(self) -> str:
        return ",".join(f"{f}{op}{v}" for f, op, v in self.requirements)

    def __repr__(self) -> str:
        return f"FieldSelector({str(self)!r})"


def parse_field_selector(text: str, *, group: str, resource: str,
                         labels: FieldLabels | None = None) -> FieldSelector:
    """Parse the `fieldSelector` query syntax for one resource (`resource` is the plural).

    Raises BadRequest for syntax errors and for fields the resource does not support, with
    upstream's messages. Operators in `requirements` are "=" (for "=" and "==") and "!=". `labels`: the
    resource's field labels when they are not the built-in ones (a custom resource's,
    `cp.fieldlabels.custom_field_labels`).
    """
    if not text:
        return FieldSelector(requirements=[], getters=[])
    terms = sorted(_split_terms(text))
    parsed: list[tuple[str, str, str]] = []
    for term in terms:
        if not term:
            continue
        split = _split_term(term)
        if split is None:
            raise BadRequest(f"invalid selector: '{text}'; can't understand '{term}'")
        field, op, raw = split
        parsed.append((field, op, _unescape(raw)))
    if labels is None:
        labels = field_labels(group=group, resource=resource)
    supported, aliases = labels.getters, labels.aliases
    reqs: list[tuple[str, str, str]] = []
    getters: list[FieldGetter] = []
    for field, op, value in parsed:
        field = aliases.get(field, field)
        getter = supported.get(field)
        if getter is None:
            raise BadRequest(labels.rejection(field))
        reqs.append((field, op, value))
        getters.append(getter)
    return FieldSelector(requirements=reqs, getters=getters)
