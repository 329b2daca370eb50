"""x-kubernetes-validations: CEL rules on custom resources, as apiextensions-apiserver evaluates them
(`pkg/apiserver/schema/cel`: compilation.go, validation.go, model/) and checks them when a CRD is
written (`pkg/apis/apiextensions/validation`: the rule, message, messageExpression, reason and
fieldPath checks, compile errors and the estimated cost limits). Pure.

- `self` is typed by the schema node the rule sits on (`cp.crd.celast.T`): integer, number, boolean,
  string (format `byte` as bytes, `duration` as a duration, `date`/`date-time` as timestamps),
  int-or-string as `dyn`, lists, maps (additionalProperties), objects whose properties are reachable
  by their escaped names (`__dash__`, `__dot__`, `__slash__`, `__underscores__`, reserved words as
  `__namespace__`...; names that cannot be escaped are left out); a resource root or an
  `x-kubernetes-embedded-resource` object also has `apiVersion`, `kind` and `metadata` with `name`
  and `generateName` only. Fields without a type are not reachable.
- `oldSelf` makes a rule a transition rule: it runs on update only where an old value correlates
  (the same property, map key, or list-map item by its keys), unless `optionalOldSelf` is set, when
  `oldSelf` is an optional that is none on create.
- A failing rule gives upstream's cause: `field.Invalid(path, value, message)` (or
  Forbidden/Required/Duplicate per `reason`), the value being the scalar itself and left out for
  objects and arrays (since 1.34: `spec: Invalid value: <message>`, `spec.n: Invalid value: 5:
  <message>`), the path extended by `fieldPath`; the message is the evaluated `messageExpression`,
  else `message`, else `failed rule: <rule>`. Evaluation and budget errors name the schema type
  (`spec: Invalid value: "object": <error> evaluating rule: <rule>`).
- Costs: each rule's runtime cost is charged against the per-call limit (1,000,000) and the
  per-object budget (10,000,000) with upstream's messages when exceeded. The engine does not count
  its steps, so the runtime cost is cel-go's cost estimate computed with the actual sizes of the
  values (an upper bound of what cel-go would count); a rule whose static estimate is small is
  charged that estimate.
- Ratcheting (CRDValidationRatcheting, on by default): on update, the errors of a rule that does not
  use `oldSelf` become warnings when the value it validates (or its nearest correlatable ancestor)
  equals the old value.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as _dt
import functools
import re
import threading
from collections.abc import Callable
from typing import Any

import cel as _cel

from cp import kubecel
from cp.crd import celast
from cp.crd.celast import T
from cp.dra import celenv
from cp.errors import OMITTED, Cause

__all__ = ["PER_CALL_LIMIT", "RUNTIME_BUDGET", "Rules", "check_crd_rules", "compile_rules"]

PER_CALL_LIMIT = 1_000_000
RUNTIME_BUDGET = 10_000_000
STATIC_COST_LIMIT = 10_000_000
STATIC_CRD_COST_LIMIT = 100_000_000
MAX_MESSAGE_EXPRESSION = 5 * 1024
_EXACT_COST_ABOVE = 100  # rules estimated above this are charged their cost with the actual sizes
_REASONS = ("FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired")
_RESERVED = frozenset({"true", "false", "null", "in", "as", "break", "const", "continue", "else", "for", "function",
                       "if", "import", "let", "loop", "package", "namespace", "return", "var", "void", "while"})
_VALID_CHARS = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_EXPAND = re.compile(r"(__|[-./]|[^a-zA-Z0-9\-./_])")
_NEWLINES = re.compile(r"[\n\r]+")


# -------------------------------------------------------------------------------------- escaping


@functools.lru_cache(maxsize=8192)
def escape(name: str) -> str | None:
    """The CEL name of a property (apiserver/pkg/cel/escaping.go), or None when it cannot be escaped."""
    if not name or name[0].isdigit():
        return None
    if name in _RESERVED:
        return f"__{name}__"
    if _VALID_CHARS.match(name) and "__" not in name:
        return name
    ok = True

    def repl(m: re.Match[str]) -> str:
        nonlocal ok
        s = m.group(0)
        mapped = {"__": "__underscores__", ".": "__dot__", "-": "__dash__", "/": "__slash__"}.get(s)
        if mapped is None:
            ok = False
            return ""
        return mapped
    out = _EXPAND.sub(repl, name)
    return out if ok else None


# ------------------------------------------------------------------------------- schema -> types

_MAX_REQ = celast.MAX_REQUEST


def _d(x: Any) -> dict[str, Any]:
    return x if isinstance(x, dict) else {}


def _str(x: Any) -> str:
    return x if isinstance(x, str) else ""


def _typed(s: Any, typ: str) -> bool:
    return isinstance(s, dict) and s.get("type") == typ


def _meta_schema(s: dict[str, Any]) -> dict[str, Any]:
    """WithTypeAndObjectMeta: apiVersion, kind and metadata(name, generateName) on a resource root,
    unless the schema already declares all of them as strings and an object."""
    props = dict(_d(s.get("properties")))
    meta = _d(props.get("metadata"))
    if _typed(props.get("kind"), "string") and _typed(props.get("apiVersion"), "string") and \
            _typed(meta, "object") and _typed(_d(meta.get("properties")).get("name"), "string") and \
            _typed(_d(meta.get("properties")).get("generateName"), "string"):
        return s
    props["apiVersion"] = {"type": "string"}
    props["kind"] = {"type": "string"}
    declared = _d(meta.get("properties"))
    props["metadata"] = {"type": "object", "properties": {
        "name": _capped(declared.get("name"), 253),  # a DNS subdomain at most
        "generateName": _capped(declared.get("generateName"), 252)}}  # the suffix is at least 1 byte
    return {**s, "properties": props}


def _capped(existing: Any, limit: int) -> dict[str, Any]:
    """cappedLengthStringType: a string of at most `limit` (or the declared maxLength if smaller)."""
    ml = _d(existing).get("maxLength")
    return {"type": "string", "maxLength": ml if isinstance(ml, int) and ml < limit else limit}


def decl_type(s: dict[str, Any], *, root: bool) -> T | None:
    """SchemaDeclType: the CEL type of a structural schema node with Kubernetes' size bounds."""
    if s.get("x-kubernetes-int-or-string"):
        ml = s.get("maxLength")
        return T("dyn", max=ml * 4 if isinstance(ml, int) else _MAX_REQ - 2, min=1)
    if root or s.get("x-kubernetes-embedded-resource"):
        s = _meta_schema(s)
    typ = s.get("type")
    if typ == "array":
        items = s.get("items")
        if not isinstance(items, dict):
            return None
        it = decl_type(items, root=bool(items.get("x-kubernetes-embedded-resource")))
        if it is None:
            return None
        mi = s.get("maxItems")
        n = max(0, mi) if isinstance(mi, int) else (_MAX_REQ - 2) // (it.min + 1)
        lt = s.get("x-kubernetes-list-type")
        keys = tuple(escape(k) or k for k in s.get("x-kubernetes-list-map-keys") or [] if isinstance(k, str))
        return T("list", elem=it, max=n, min=2, list_type=lt if lt in ("set", "map") else "",
                 list_keys=keys if lt == "map" else ())
    if typ == "object":
        ap = s.get("additionalProperties")
        if isinstance(ap, dict):
            vt = decl_type(ap, root=bool(ap.get("x-kubernetes-embedded-resource")))
            if vt is None:
                return None
            mp = s.get("maxProperties")
            n = max(0, mp) if isinstance(mp, int) else (_MAX_REQ - 2) // (vt.min + 6)
            return T("map", key=T("string", max=_MAX_REQ - 2, min=2), elem=vt, max=n, min=2)
        fields: dict[str, T] = {}
        required = set(s.get("required") or [])
        min_size = 2
        for name, prop in _d(s.get("properties")).items():
            prop = _d(prop)
            ft = decl_type(prop, root=bool(prop.get("x-kubernetes-embedded-resource")))
            if ft is None:
                continue
            esc = escape(name)
            if esc is not None:
                fields[esc] = ft
            if name in required and "default" not in prop:
                min_size += len(name) + ft.min + 4
        return T("object", fields=fields, min=min_size)
    if typ == "string":
        fmt = s.get("format")
        if fmt == "byte":
            ml = s.get("maxLength")
            return T("bytes", max=max(0, ml) if isinstance(ml, int) else _MAX_REQ - 2, min=2)
        if fmt == "duration":
            return T("duration", max=32, min=3)
        if fmt == "date":
            return T("timestamp", max=12, min=12)
        if fmt == "date-time":
            return T("timestamp", max=32, min=21)
        ml = s.get("maxLength")
        if isinstance(ml, int):
            n = max(0, ml) * 4
        elif s.get("enum"):
            n = max((len(e) for e in s["enum"] if isinstance(e, str)), default=0)
        else:
            n = _MAX_REQ - 2
        return T("string", max=n, min=2)
    if typ == "boolean":
        return T("bool", min=4)
    if typ == "number":
        return T("double", min=1)
    if typ == "integer":
        return T("int", min=1)
    return None


# ---------------------------------------------------------------------------------------- values

def _go_duration(s: str) -> _dt.timedelta:
    """time.ParseDuration."""
    return _dt.timedelta(seconds=celast.parse_duration(s))


def _timestamp(s: str, date_only: bool) -> _dt.datetime:
    if date_only:
        d = _dt.date.fromisoformat(s)
        return _dt.datetime(d.year, d.month, d.day, tzinfo=_dt.UTC)
    text = s.replace("z", "Z").replace("t", "T").replace(" ", "T")
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    return _dt.datetime.fromisoformat(text)


_SCALARS = frozenset({"int", "uint", "bool", "string", "dyn"})
_META_PROPS: dict[str, Any] = _meta_schema({})["properties"]


_Plan = dict[str, tuple[str, T | None, dict[str, Any]]]


def _object_plan(s: dict[str, Any], t: T) -> _Plan:
    """property name -> (CEL name, type, schema) of an object type, computed once per schema node.
    Properties without a CEL type (no `type`, or a name that cannot be escaped) are kept with no
    type: unreachable by name, they still take part in equality, as upstream's values do."""
    plan: _Plan = {}
    props = _d(s.get("properties"))
    fields = t.fields or {}
    for name in set(props) | set(_META_PROPS):
        esc = escape(name)
        ft = fields.get(esc) if esc is not None else None
        ps = props.get(name)
        if ft is None:
            if ps is not None:
                plan[name] = (name if esc is None else esc, None, {})
            continue
        plan[name] = (esc or name, ft, _d(ps) if ps is not None else _META_PROPS[name])
    return plan


_PLANS: dict[tuple[int, int], tuple[dict[str, Any], T, _Plan]] = {}


def to_value(v: Any, s: dict[str, Any], t: T | None) -> Any:
    """UnstructuredToVal: the engine's view of `v` under schema `s` (type `t`): escaped property
    names, formats as bytes/durations/timestamps, unknown and null fields left out."""
    if v is None or t is None:
        return v
    k = t.kind
    if k in _SCALARS:
        return v
    if k == "object":
        if not isinstance(v, dict):
            return v
        key = (id(s), id(t))
        cached = _PLANS.get(key)
        if cached is None or cached[0] is not s or cached[1] is not t:
            if len(_PLANS) > 10_000:
                _PLANS.clear()
            cached = (s, t, _object_plan(s, t))
            _PLANS[key] = cached
        plan = cached[2]
        keep_unknown = s.get("x-kubernetes-preserve-unknown-fields") is True
        out: dict[str, Any] = {}
        for name, val in v.items():
            if val is None:  # a null field is an absent field
                continue
            entry = plan.get(name)
            if entry is None:
                if keep_unknown:  # unreachable by name, but part of the value (equality)
                    out[name] = val
                continue
            out[entry[0]] = to_value(val, entry[2], entry[1]) if entry[1] is not None else val
        return out
    if k == "list":
        if not isinstance(v, list):
            return v
        et = t.elem
        if et is not None and et.kind in _SCALARS:
            return v
        items = _d(s.get("items"))
        return [to_value(x, items, et) for x in v]
    if k == "map":
        if not isinstance(v, dict):
            return v
        et = t.elem
        if et is not None and et.kind in _SCALARS:
            return v
        ap = _d(s.get("additionalProperties"))
        return {key: to_value(x, ap, et) for key, x in v.items()}
    if k == "double" and isinstance(v, int) and not isinstance(v, bool):
        return float(v)
    if isinstance(v, str):
        try:
            if k == "bytes":
                return base64.b64decode(v)
            if k == "duration":
                return _go_duration(v)
            if k == "timestamp":
                return _timestamp(v, s.get("format") == "date")
        except ValueError:
            return v
    return v


def _value_type(t: T, v: Any) -> T:
    """`t` with the actual sizes of `v` (for the runtime cost)."""
    if t.kind in ("string", "bytes", "dyn"):
        return T(t.kind, max=len(v) if isinstance(v, (str, bytes)) else 0)
    if t.kind == "list" and isinstance(v, list):
        elem = t.elem or celast.DYN
        return T("list", elem=_merged(elem, v), max=len(v))
    if t.kind == "map" and isinstance(v, dict):
        elem = t.elem or celast.DYN
        key = T("string", max=max((len(x) for x in v), default=0))
        return T("map", key=key, elem=_merged(elem, list(v.values())), max=len(v))
    if t.kind == "object" and isinstance(v, dict):
        fields = {name: _value_type(ft, v[name]) if name in v else _empty(ft) for name, ft in (t.fields or {}).items()}
        return T("object", fields=fields)
    return t


def _empty(t: T) -> T:
    return T(t.kind, elem=t.elem, key=t.key, fields=t.fields, max=0)


def _merged(t: T, values: list[Any]) -> T:
    out: T | None = None
    for v in values:
        vt = _value_type(t, v)
        out = vt if out is None else _merge(out, vt)
    return out if out is not None else _empty(t)


def _merge(a: T, b: T) -> T:
    fields = None
    if a.fields is not None and b.fields is not None:
        fields = {k: _merge(a.fields[k], b.fields[k]) if k in b.fields else a.fields[k] for k in a.fields}
    elem = _merge(a.elem, b.elem) if a.elem is not None and b.elem is not None else a.elem or b.elem
    key = _merge(a.key, b.key) if a.key is not None and b.key is not None else a.key or b.key
    return T(a.kind, elem=elem, key=key, fields=fields, max=max(a.max, b.max))


# ----------------------------------------------------------------------------------- compilation


class _Compiled:
    """One compiled expression: the engine program, the functions it calls, its static cost, and
    its tree (re-checked with the actual sizes of a value for the runtime cost, under `lock`)."""

    __slots__ = ("cost", "functions", "lock", "program", "source", "tree")

    def __init__(self, source: str, program: Any, functions: dict[str, Callable[..., Any]], cost: int,
                 tree: celast.Node) -> None:
        self.source = source
        self.program = program
        self.functions = functions
        self.cost = cost
        self.tree = tree
        self.lock = threading.Lock()


class _Rule:
    __slots__ = ("compiled", "error", "field_path", "message", "message_error", "message_expression",
                 "optional_old_self", "reason", "rule", "uses_old_self")

    def __init__(self, raw: dict[str, Any]) -> None:
        self.rule = _str(raw.get("rule"))
        self.message = _str(raw.get("message"))
        self.reason = _str(raw.get("reason"))
        self.field_path = ""
        self.optional_old_self = raw.get("optionalOldSelf") is True
        self.compiled: _Compiled | None = None
        self.message_expression: _Compiled | None = None
        self.error: str | None = None
        self.message_error: str | None = None
        self.uses_old_self = False

    def shown(self) -> str:
        """ruleErrorString: the message when there is one, else the rule."""
        return self.message.strip() if self.message else self.rule.strip()


def _compile(src: str, *, t: T, optional_old: bool, want: str) -> tuple[_Compiled | None, str | None, bool]:
    """(compiled, error, uses oldSelf) for one expression whose result must be `want`."""
    try:
        tree = celast.parse(src)
    except celast.CelSyntaxError as e:
        return None, f"compilation failed: {e}", False
    old_t = T("optional", elem=t) if optional_old else t
    try:
        rt = celast.check(tree, variables={"self": t, "oldSelf": old_t}, src=src)
    except celast.CelProgramError as e:
        return None, str(e), False
    except celast.CelTypeError as e:
        return None, f"compilation failed: {e}", False
    uses_old = "oldSelf" in celast.references(tree)
    if rt.kind not in (want, "dyn"):
        return None, ("cel expression must evaluate to a bool" if want == "bool"
                      else "messageExpression must evaluate to a string"), uses_old
    names = celast.calls(tree)
    wrap = bool(names & {"ip", "cidr", "url", "masked"})
    source = celast.render(tree, wrap_string=wrap)
    try:
        program = _cel.compile(source)
    except Exception as e:  # the engine's parser: something we rendered that it does not take
        return None, f"compilation failed: {e}", uses_old
    lib = celenv.library()
    fns: dict[str, Callable[..., Any]] = {}
    refs = program.references()
    namespaces = [v for v in refs["variables"] if v in ("math", "sets", "strings", "base64", "lists", "format", "ip")]
    for fn in refs["functions"]:
        for ns in namespaces:
            if f"{ns}.{fn}" in lib:
                fns[f"{ns}.{fn}"] = lib[f"{ns}.{fn}"]
        if fn in lib:
            fns[fn] = lib[fn]
        elif fn in kubecel.HELPERS:
            fns[fn] = kubecel.HELPERS[fn]
    cost = celast.estimate_cost(tree)
    return _Compiled(src, program, fns, cost, tree), None, uses_old


class _Node:
    """A schema node on the path to rules: the rules there and the nodes below."""

    __slots__ = ("additional", "all_of", "context", "items", "list_keys", "list_type", "lock", "map_type", "props",
                 "rules", "schema", "type", "type_name")

    def __init__(self, schema: dict[str, Any], t: T) -> None:
        self.schema = schema
        self.type = t
        self.type_name = _str(schema.get("type"))
        self.rules: list[_Rule] = []
        self.props: dict[str, _Node] = {}
        self.items: _Node | None = None
        self.additional: _Node | None = None
        self.all_of: list[_Node] = []
        self.list_type = schema.get("x-kubernetes-list-type") or "atomic"
        self.list_keys = [k for k in schema.get("x-kubernetes-list-map-keys") or [] if isinstance(k, str)]
        self.map_type = schema.get("x-kubernetes-map-type")
        # One engine context per node, shared by its rules: `self` is converted once per evaluation
        # and the library functions are registered once.
        self.context: Any = None
        self.lock = threading.Lock()

    def activation(self) -> Any:
        if self.context is None:
            fns: dict[str, Callable[..., Any]] = {}
            for rule in self.rules:
                for c in (rule.compiled, rule.message_expression):
                    if c is not None:
                        fns.update(c.functions)
                self.context = _cel.Context(functions=fns)
        return self.context

    def empty(self) -> bool:
        return not self.rules and not self.props and self.items is None and self.additional is None \
            and not self.all_of


def _build(schema: dict[str, Any], node_schema: dict[str, Any], t: T | None, *, root: bool) -> _Node | None:
    if t is None:
        return None
    node = _Node(node_schema, t)
    t_for_rules = t
    for raw in schema.get("x-kubernetes-validations") or []:
        rule = _Rule(_d(raw))
        node.rules.append(rule)
        if not rule.rule.strip():
            continue
        rule.compiled, rule.error, rule.uses_old_self = _compile(
            rule.rule, t=t_for_rules, optional_old=rule.optional_old_self, want="bool")
        me = _d(raw).get("messageExpression")
        if rule.compiled is not None and isinstance(me, str) and me:
            rule.message_expression, rule.message_error, _ = _compile(
                me, t=t_for_rules, optional_old=rule.optional_old_self, want="string")
        fp = _d(raw).get("fieldPath")
        if isinstance(fp, str) and fp:
            normalized = valid_field_path(fp, node_schema)
            rule.field_path = normalized or ""
    items = schema.get("items")
    if isinstance(items, dict) and isinstance(node_schema.get("items"), dict) and t.kind == "list":
        node.items = _build(items, node_schema["items"], t.elem, root=bool(items.get("x-kubernetes-embedded-resource")))
    for name, prop in _d(schema.get("properties")).items():
        nprop = _d(node_schema.get("properties")).get(name)
        if not isinstance(prop, dict) or not isinstance(nprop, dict):
            continue
        esc = escape(name)
        if t.kind != "object":
            continue
        if esc is not None:
            ft = (t.fields or {}).get(esc)
        else:
            ft = decl_type(nprop, root=bool(nprop.get("x-kubernetes-embedded-resource")))
        child = _build(prop, nprop, ft, root=bool(nprop.get("x-kubernetes-embedded-resource")))
        if child is not None:
            node.props[name] = child
    ap = schema.get("additionalProperties")
    if isinstance(ap, dict) and isinstance(node_schema.get("additionalProperties"), dict) and t.kind == "map":
        node.additional = _build(ap, node_schema["additionalProperties"], t.elem,
                                 root=bool(ap.get("x-kubernetes-embedded-resource")))
    for sub in schema.get("allOf") or []:
        if isinstance(sub, dict):
            child = _build(sub, node_schema, t, root=root)
            if child is not None:
                node.all_of.append(child)
    return None if node.empty() else node


# ------------------------------------------------------------------------------------- fieldPath

_UNESCAPE = re.compile(r"\\.")


def _path_tokens(path: str) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(path):
        c = path[i]
        if c in ".[]":
            out.append(c)
            i += 1
        elif c == "'":
            j = i + 1
            while j < len(path) and not (path[j] == "'" and path[j - 1] != "\\"):
                j += 1
            out.append(path[i:j + 1])
            i = j + 1
        else:
            j = i
            while j < len(path) and path[j] not in ".[]":
                j += 1
            out.append(path[i:j])
            i = j
    return out


def _unquote(s: str) -> str:
    bad = False

    def repl(m: re.Match[str]) -> str:
        nonlocal bad
        c = m.group(0)[1]
        mapped = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "'": "'",
                  "\\": "\\"}.get(c)
        if mapped is None:
            bad = True
            return ""
        return mapped
    out = _UNESCAPE.sub(repl, s)
    if bad:
        raise ValueError("invalid string literal")
    return out


def valid_field_path(path: str, schema: dict[str, Any]) -> str | None:
    """ValidFieldPath: the normalized relative path (`a.b['k']` style) or None when it does not
    name a field of `schema`."""
    toks = _path_tokens(path)
    out = ""
    s = schema
    i = 0

    def step(name: str, key: bool) -> dict[str, Any] | None:
        nonlocal out
        if key:
            out += f"[{name}]"
            return _d(s.get("additionalProperties"))
        out = f"{out}.{name}" if out else name
        p = _d(s.get("properties")).get(name)
        return p if isinstance(p, dict) else None

    try:
        while i < len(toks):
            tok = toks[i]
            if tok == "[":
                if i + 2 >= len(toks):
                    return None
                lit = toks[i + 1]
                if len(lit) < 2 or lit[0] != "'" or lit[-1] != "'":
                    return None
                name = _unquote(lit[1:-1])
                if toks[i + 2] != "]":
                    return None
                i += 3
            elif tok == ".":
                if i + 1 >= len(toks):
                    return None
                name = toks[i + 1]
                i += 2
            else:
                return None
            if s.get("properties") is not None:
                nxt = step(name, False)
            elif isinstance(s.get("additionalProperties"), dict):
                nxt = step(name, True)
            else:
                return None
            if nxt is None:
                return None
            s = nxt
    except ValueError:
        return None
    return out


# ------------------------------------------------------------------------------------ evaluation


class _Budget:
    __slots__ = ("left", "limit")

    def __init__(self, left: int, limit: int) -> None:
        self.left = left
        self.limit = limit


class _Stop(Exception):
    """The budget ran out: no further rules run."""


def _same(a: Any, b: Any) -> bool:
    """Deep equality of JSON values, booleans and numbers kept apart as Go's DeepEqual does."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


class Rules:
    """The compiled rules of one schema (one CRD version): `validate` per object."""

    def __init__(self, root: _Node | None, *, per_call_limit: int = PER_CALL_LIMIT) -> None:
        self._root = root
        self._per_call = per_call_limit

    def empty(self) -> bool:
        return self._root is None

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None, *, path: str = "",
                 budget: int = RUNTIME_BUDGET, warnings: list[str] | None = None) -> list[Cause]:
        """The causes of every failing rule of `obj` (`old` on update). Errors that ratcheting turns
        into warnings are appended to `warnings` as upstream words them (`path: Invalid value: ...`)."""
        if self._root is None:
            return []
        errs: list[Cause] = []
        b = _Budget(budget, self._per_call)
        ratchet = _Ratchet(old, obj) if old is not None else None
        with contextlib.suppress(_Stop):  # the budget ran out: the causes so far stand
            self._validate(self._root, obj, old, path, errs, b, ratchet, None, warnings)
        return errs

    def _validate(self, node: _Node, obj: Any, old: Any, path: str, errs: list[Cause], b: _Budget,
                  ratchet: _Ratchet | None, parent: _Ratchet | None, warnings: list[str] | None) -> None:
        if obj is None:
            return
        if node.rules:
            self._rules(node, obj, old, path, errs, b, ratchet, parent, warnings)
        for sub in node.all_of:
            self._validate(sub, obj, old, path, errs, b, None, ratchet if ratchet is not None else parent, warnings)
        if isinstance(obj, list) and node.items is not None:
            olds = _correlate_list(node, old)
            rolds = olds if ratchet is not None and ratchet.old is old else \
                _correlate_list(node, ratchet.old) if ratchet is not None else None
            for i, item in enumerate(obj):
                old_item = olds(item) if olds is not None else None
                r_item, r_parent = _ratchet_index(ratchet, parent, node, item, rolds)
                self._validate(node.items, item, old_item, f"{path}[{i}]", errs, b, r_item, r_parent, warnings)
        elif isinstance(obj, dict):
            correlatable = node.map_type in (None, "granular", "atomic")
            old_map = old if isinstance(old, dict) and correlatable else {}
            if node.additional is not None:
                for k, v in obj.items():
                    r_child, r_parent = _ratchet_key(ratchet, parent, k, v)
                    self._validate(node.additional, v, old_map.get(k), f"{path}[{k}]", errs, b, r_child, r_parent,
                                   warnings)
            if node.props:
                for k, v in obj.items():
                    prop = node.props.get(k)
                    if prop is not None:
                        r_child, r_parent = _ratchet_key(ratchet, parent, k, v)
                        self._validate(prop, v, old_map.get(k), f"{path}.{k}" if path else k, errs, b, r_child,
                                       r_parent, warnings)

    def _rules(self, node: _Node, obj: Any, old: Any, path: str, errs: list[Cause], b: _Budget,
               ratchet: _Ratchet | None, parent: _Ratchet | None, warnings: list[str] | None) -> None:
        shown_path = path or "<nil>"
        value_name = node.type_name
        if b.left <= 0:
            errs.append(Cause("Invalid", shown_path, "validation failed due to running out of cost budget, "
                              "no further validation rules will be run", value_name))
            raise _Stop
        with node.lock:
            self._rules_locked(node, obj, old, path, errs, b, ratchet, parent, warnings)

    def _rules_locked(self, node: _Node, obj: Any, old: Any, path: str, errs: list[Cause], b: _Budget,
                      ratchet: _Ratchet | None, parent: _Ratchet | None, warnings: list[str] | None) -> None:
        shown_path = path or "<nil>"
        value_name = node.type_name
        ctx = node.activation()
        ctx.add_variable("self", to_value(obj, node.schema, node.type))
        old_v = to_value(old, node.schema, node.type) if old is not None else None
        mode = ""  # what oldSelf holds in the context: "", "plain" or "optional"
        if any(rule.uses_old_self for rule in node.rules):
            ctx.add_variable("oldSelf", old_v)  # never a previous object's value
            mode = "plain"
        for rule in node.rules:
            if rule.error is not None:
                errs.append(Cause("Invalid", shown_path, f"rule compile error: {rule.error}", value_name))
                continue
            compiled = rule.compiled
            if compiled is None:
                continue
            if rule.uses_old_self and old is None and not rule.optional_old_self:
                continue
            if rule.optional_old_self and mode != "optional":
                ctx.add_variable("oldSelf", _cel.OptionalValue.of(old_v) if old is not None
                                 else _cel.OptionalValue.none())
                mode = "optional"
            elif rule.uses_old_self and not rule.optional_old_self and mode != "plain":
                ctx.add_variable("oldSelf", old_v)
                mode = "plain"
            cost = self._cost(compiled, node, obj, old, optional=rule.optional_old_self)
            result, error = _run(compiled, ctx)
            if cost > b.limit:
                errs.append(Cause("Invalid", shown_path, "'operation cancelled: actual cost limit exceeded': no further "
                                  f"validation rules will be run due to call cost exceeds limit for rule: {rule.shown()}",
                                  value_name))
                raise _Stop
            if cost > b.left:
                errs.append(Cause("Invalid", shown_path, "validation failed due to running out of cost budget, "
                                  "no further validation rules will be run", value_name))
                raise _Stop
            b.left -= cost
            if error is not None:
                if error.startswith("no such overload"):
                    errs.append(Cause("Invalid", shown_path, f"'{error}': call arguments did not match a supported "
                                      f"operator, function or macro signature for rule: {rule.shown()}", value_name))
                else:
                    errs.append(Cause("Invalid", shown_path, f"{error} evaluating rule: {rule.shown()}", value_name))
                continue
            if result is True:
                continue
            field = shown_path
            if rule.field_path:
                field = f"{path}.{rule.field_path}" if path else rule.field_path
            detail = None
            if rule.message_expression is not None:
                if mode == "optional":  # upstream evaluates messages with the plain activation
                    ctx.add_variable("oldSelf", old_v)
                    mode = "plain"
                detail = self._message(rule.message_expression, ctx, node, obj, old, b, field, value_name, errs)
            if detail is None:
                detail = rule.message.strip() if rule.message else f"failed rule: {rule.shown()}"
            # 1.34+: the value itself for scalars, no value for objects and arrays
            shown: Any = OMITTED if node.type_name in ("object", "array") else obj
            cause = _reason_cause(rule.reason, field, detail, shown)
            if not rule.uses_old_self and _should_ratchet(ratchet, parent):
                if warnings is not None:
                    warnings.append(cause.text())
                continue
            errs.append(cause)

    def _message(self, compiled: _Compiled, ctx: Any, node: _Node, obj: Any, old: Any, b: _Budget, field: str,
                 value_name: str, errs: list[Cause]) -> str | None:
        cost = self._cost(compiled, node, obj, old, optional=False)
        if cost > b.limit:
            errs.append(Cause("Invalid", field, "no further validation rules will be run due to call cost exceeds "
                              f"limit for messageExpression: {_go_quote(compiled.source)}", value_name))
            raise _Stop
        if cost > b.left:
            errs.append(Cause("Invalid", field, "messageExpression evaluation failed due to running out of cost "
                              "budget, no further validation rules will be run", value_name))
            raise _Stop
        b.left -= cost
        result, error = _run(compiled, ctx)
        if error is not None or not isinstance(result, str):
            return None
        text = result.strip()
        if not text or len(text) > MAX_MESSAGE_EXPRESSION or "\n" in text:
            return None
        return text

    def _cost(self, compiled: _Compiled, node: _Node, obj: Any, old: Any, *, optional: bool) -> int:
        """The runtime cost charged for one evaluation (see the module docstring)."""
        if compiled.cost <= _EXACT_COST_ABOVE:
            return compiled.cost
        st = _value_type(node.type, obj)
        ot = _value_type(node.type, old) if old is not None else st
        with compiled.lock:
            try:
                celast.check(compiled.tree, variables={"self": st, "oldSelf": T("optional", elem=ot) if optional
                                                       else ot}, src=compiled.source)
            except celast.CelTypeError:
                return compiled.cost
            return min(compiled.cost, celast.estimate_cost(compiled.tree, exact=True))


def _go_quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _reason_cause(reason: str, field: str, detail: str, value: Any) -> Cause:
    """fieldErrorForReason."""
    if reason == "FieldValueForbidden":
        return Cause("Forbidden", field, detail)
    if reason == "FieldValueRequired":
        return Cause("Required", field, detail)
    if reason == "FieldValueDuplicate":
        return Cause("Duplicate", field, "", value)
    return Cause("Invalid", field, detail, value)


_PY_FN_ERR = re.compile(r"Function '(\w+)' error: (.*?)(?:\. Check function arguments.*)?\Z", re.DOTALL)
_PY_CALL_ERR = re.compile(r"Python function call failed: (?:\w+\.)*(\w+): (.*?)(?:\. Check function arguments.*)?\Z",
                          re.DOTALL)


def _run(compiled: _Compiled, ctx: Any) -> tuple[Any, str | None]:
    """(result, None) or (None, cel-go's error text)."""
    try:
        return compiled.program.execute(ctx), None
    except KeyError as e:
        return None, f"no such key: {e.args[0] if e.args else ''}"
    except IndexError as e:
        text = str(e)
        m = re.search(r"(\d+)", text)
        return None, f"index out of bounds: {m.group(1) if m else text}"
    except ZeroDivisionError:
        return None, "division by zero"
    except OverflowError:
        return None, "integer overflow"
    except TypeError as e:
        msg = str(e)
        if msg.startswith("No such overload") or msg.startswith("Unsupported operation"):
            return None, "no such overload"
        return None, msg
    except Exception as e:
        msg = str(e)
        m = _PY_CALL_ERR.search(msg) or _PY_FN_ERR.search(msg)
        return None, m.group(2) if m else msg


# ------------------------------------------------------------------------------- correlation


def _correlate_list(node: _Node, old: Any) -> Callable[[Any], Any] | None:
    """makeMapList: list-map items correlate by their keys; other lists do not."""
    if node.list_type != "map" or not node.list_keys or not isinstance(old, list):
        return None
    keys = node.list_keys
    index: dict[tuple[Any, ...], Any] = {}
    for item in old:
        if isinstance(item, dict):
            index.setdefault(tuple(_key_part(item.get(k)) for k in keys), item)

    def get(item: Any) -> Any:
        if not isinstance(item, dict):
            return None
        return index.get(tuple(_key_part(item.get(k)) for k in keys))
    return get


def _key_part(v: Any) -> Any:
    return (type(v).__name__, v) if not isinstance(v, (dict, list)) else repr(v)


class _Ratchet:
    """A correlated (new, old) pair for ratcheting: `old` is the correlated old value."""

    __slots__ = ("equal", "new", "old")

    def __init__(self, old: Any, new: Any) -> None:
        self.old = old
        self.new = new
        self.equal: bool | None = None


def _should_ratchet(current: _Ratchet | None, parent: _Ratchet | None) -> bool:
    """shouldRatchetError: the node (or its nearest correlatable ancestor) equals its old value."""
    r = current if current is not None else parent
    if r is None:
        return False
    if r.equal is None:
        r.equal = _same(r.old, r.new)
    return r.equal


def _ratchet_key(r: _Ratchet | None, parent: _Ratchet | None, key: str,
                new: Any) -> tuple[_Ratchet | None, _Ratchet | None]:
    if r is None:
        return None, parent
    if parent is None and key in ("apiVersion", "kind"):
        return None, None  # the root's type meta is never ratcheted
    child = _Ratchet(r.old[key], new) if isinstance(r.old, dict) and key in r.old else None
    return child, r


def _ratchet_index(r: _Ratchet | None, parent: _Ratchet | None, node: _Node, item: Any,
                   get: Callable[[Any], Any] | None) -> tuple[_Ratchet | None, _Ratchet | None]:
    """The ratcheting correlation of a list item: by its keys in a map list (`get`, the old list's
    index), by value in a set; items of atomic lists do not correlate."""
    if r is None:
        return None, parent
    child: _Ratchet | None = None
    if isinstance(r.old, list):
        if node.list_type == "map" and node.list_keys:
            found = get(item) if get is not None else None
            child = _Ratchet(found, item) if found is not None else None
        elif node.list_type == "set" and any(_same(item, o) for o in r.old):
            child = _Ratchet(item, item)
    return child, r


# ------------------------------------------------------------------------------------ entry points


def compile_rules(schema: dict[str, Any], *, per_call_limit: int = PER_CALL_LIMIT) -> Rules:
    """The rules of a CRD version's openAPIV3Schema, compiled once (NewValidator on the root)."""
    t = decl_type(schema, root=True)
    return Rules(_build(schema, schema, t, root=True) if _has_rules(schema) else None, per_call_limit=per_call_limit)


def _has_rules(s: Any) -> bool:
    if not isinstance(s, dict):
        return False
    if s.get("x-kubernetes-validations"):
        return True
    if _has_rules(s.get("items")) or _has_rules(s.get("additionalProperties")):
        return True
    if any(_has_rules(p) for p in _d(s.get("properties")).values()):
        return True
    return any(_has_rules(p) for p in s.get("allOf") or [])


# ------------------------------------------------------------------------------ CRD-time checks


class _GoRule:
    """A ValidationRule as Go's `%#v` shows it in a field error."""

    __slots__ = ("text",)

    def __init__(self, raw: dict[str, Any]) -> None:
        def q(key: str) -> str:
            v = raw.get(key)
            return _go_quote(v if isinstance(v, str) else "")
        reason = raw.get("reason")
        reason_s = "(*apiextensions.FieldValueErrorReason)(nil)" if reason is None else \
            f"(*apiextensions.FieldValueErrorReason)({_go_quote(str(reason))})"
        oos = raw.get("optionalOldSelf")
        oos_s = "(*bool)(nil)" if oos is None else f"(*bool)({'true' if oos is True else 'false'})"
        self.text = (f"apiextensions.ValidationRule{{Rule:{q('rule')}, Message:{q('message')}, "
                     f"MessageExpression:{q('messageExpression')}, Reason:{reason_s}, FieldPath:{q('fieldPath')}, "
                     f"OptionalOldSelf:{oos_s}}}")

    def __str__(self) -> str:
        return self.text


class _Total:
    __slots__ = ("expensive", "total")

    def __init__(self) -> None:
        self.total = 0
        self.expensive: list[tuple[int, str]] = []

    def observe(self, path: str, cost: int) -> None:
        self.total = min(self.total + cost, 2**64 - 1)
        if cost < STATIC_CRD_COST_LIMIT // 100:
            return
        self.expensive.append((cost, path))
        self.expensive.sort(key=lambda e: -e[0])
        del self.expensive[4:]


def cost_message(name: str, cost: int, limit: int) -> str:
    """getCostErrorMessage."""
    factor = cost / limit
    if factor > 100.0:
        shown = "more than 100x"
    elif factor < 1.5:
        shown = f"{factor:f}x"
    else:
        shown = f"{factor:.1f}x"
    return (f"{name} exceeds budget by factor of {shown} (try simplifying the rule, or adding maxItems, "
            "maxProperties, and maxLength where arrays, maps, and strings are declared)")


def _max_elements(s: dict[str, Any]) -> int | None:
    """extractMaxElements: how many times a child schema repeats under `s` (None: unbounded)."""
    typ = s.get("type")
    if typ == "object":
        if s.get("additionalProperties") is not None and s.get("additionalProperties") is not False:
            mp = s.get("maxProperties")
            return max(0, mp) if isinstance(mp, int) else None
        return 1
    if typ == "array":
        mi = s.get("maxItems")
        return max(0, mi) if isinstance(mi, int) else None
    return 1


def check_crd_rules(schema: dict[str, Any], *, path: str, unchanged: bool = False) -> list[Cause]:
    """What apiextensions' CRD validation refuses in the x-kubernetes-validations of an
    openAPIV3Schema at `path`: rule/message/messageExpression/reason/fieldPath shapes, compile errors,
    oldSelf where nothing correlates, optionalOldSelf without oldSelf, and the estimated cost
    limits per expression (10,000,000) and for the whole schema (100,000,000). `unchanged`: the
    update keeps this version's schema as it was, so the per-expression limit is not applied
    (suppressExpressionCostForUnchangedSchema); the total still is."""
    errs: list[Cause] = []
    if not isinstance(schema, dict) or not _has_rules(schema):
        return errs
    total = _Total()
    _check_node(schema, path, errs, total, root=True, cardinality=1, forbid_old=None, parent_type=None,
                per_expression=not unchanged)
    if total.total > STATIC_CRD_COST_LIMIT:
        for _, where in total.expensive:
            errs.append(Cause("Forbidden", where, "contributed to estimated rule cost total exceeding cost limit "
                                                  "for entire OpenAPIv3 schema"))
        errs.append(Cause("Forbidden", path, cost_message(
            "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema", total.total,
            STATIC_CRD_COST_LIMIT)))
    return errs


def _check_node(s: dict[str, Any], path: str, errs: list[Cause], total: _Total, *, root: bool,
                cardinality: int | None, forbid_old: str | None, parent_type: T | None,
                per_expression: bool) -> bool:
    """Checks `s` and below; True when shape errors were found (CEL is then not compiled there)."""
    bad = False
    own_type = parent_type if parent_type is not None else decl_type(s, root=root)
    props = _d(s.get("properties"))
    for name, prop in props.items():
        if not isinstance(prop, dict):
            continue
        ft = None
        if own_type is not None and own_type.kind == "object":
            esc = escape(name)
            ft = (own_type.fields or {}).get(esc) if esc is not None else None
        bad |= _check_node(prop, f"{path}.properties[{name}]", errs, total,
                           root=bool(prop.get("x-kubernetes-embedded-resource")),
                           cardinality=_child_card(cardinality, s), forbid_old=forbid_old, parent_type=ft,
                           per_expression=per_expression)
    ap = s.get("additionalProperties")
    if isinstance(ap, dict):
        et = own_type.elem if own_type is not None and own_type.kind == "map" else None
        bad |= _check_node(ap, f"{path}.additionalProperties", errs, total,
                           root=bool(ap.get("x-kubernetes-embedded-resource")),
                           cardinality=_child_card(cardinality, s), forbid_old=forbid_old, parent_type=et,
                           per_expression=per_expression)
    items = s.get("items")
    if isinstance(items, dict):
        it = own_type.elem if own_type is not None and own_type.kind == "list" else None
        sub_forbid = forbid_old
        if s.get("x-kubernetes-list-type") != "map":
            sub_forbid = sub_forbid or path
        bad |= _check_node(items, f"{path}.items", errs, total, root=bool(items.get("x-kubernetes-embedded-resource")),
                           cardinality=_child_card(cardinality, s), forbid_old=sub_forbid, parent_type=it,
                           per_expression=per_expression)
    rules = s.get("x-kubernetes-validations")
    if not isinstance(rules, list) or not rules:
        return bad
    base = f"{path}.x-kubernetes-validations"
    for i, raw in enumerate(rules):
        raw = _d(raw)
        rule, msg = _str(raw.get("rule")), _str(raw.get("message"))
        if not rule.strip():
            errs.append(Cause("Required", f"{base}[{i}].rule", "rule is not specified"))
            bad = True
        elif msg and not msg.strip():
            errs.append(Cause("Invalid", f"{base}[{i}].message", "must be non-empty if specified", msg))
            bad = True
        elif _NEWLINES.search(msg.strip()):
            errs.append(Cause("Invalid", f"{base}[{i}].message", "must not contain line breaks", msg))
            bad = True
        elif _NEWLINES.search(rule.strip()) and not msg.strip():
            errs.append(Cause("Required", f"{base}[{i}].message", "message must be specified if rule contains line breaks"))
            bad = True
        me = raw.get("messageExpression")
        if isinstance(me, str) and me and not me.strip():
            errs.append(Cause("Required", f"{base}[{i}].messageExpression", "messageExpression must be non-empty if specified"))
            bad = True
        reason = raw.get("reason")
        if reason is not None and reason not in _REASONS:
            errs.append(Cause("NotSupported", f"{base}[{i}].reason",
                              "supported values: " + ", ".join(f'"{r}"' for r in _REASONS), reason))
            bad = True
        fp = raw.get("fieldPath")
        if isinstance(fp, str) and fp:
            if not fp.strip():
                errs.append(Cause("Invalid", f"{base}[{i}].fieldPath", "must be non-empty if specified", fp))
                bad = True
            if _NEWLINES.search(fp):
                errs.append(Cause("Invalid", f"{base}[{i}].fieldPath", "must not contain line breaks", fp))
                bad = True
            if valid_field_path(fp, s) is None:
                errs.append(Cause("Invalid", f"{base}[{i}].fieldPath", "must be a valid path", fp))
                bad = True
    if bad:
        return bad
    t = own_type
    if t is None:
        errs.append(Cause("InternalError", base, "internal error: failed to construct type information for "
                                                 "x-kubernetes-validations rules: unable to convert structural schema "
                                                 "to CEL declarations"))
        return bad
    card = cardinality if cardinality is not None else (_MAX_REQ // (t.min + 1))
    for i, raw in enumerate(rules):
        raw = _d(raw)
        rule = _str(raw.get("rule"))
        optional = raw.get("optionalOldSelf") is True
        compiled, error, uses_old = _compile(rule, t=t, optional_old=optional, want="bool") if rule.strip() \
            else (None, None, False)
        rule_path = f"{base}[{i}].rule"
        cost = min(compiled.cost * card, 2**64 - 1) if compiled is not None else 0
        if per_expression and cost > STATIC_COST_LIMIT:
            errs.append(Cause("Forbidden", rule_path, cost_message("estimated rule cost", cost, STATIC_COST_LIMIT)))
        total.observe(rule_path, cost)
        if error is not None:
            errs.append(Cause("Invalid", rule_path, error, _GoRule(raw)))
        me = raw.get("messageExpression")
        if compiled is not None and isinstance(me, str) and me.strip():
            mc, merr, _ = _compile(me, t=t, optional_old=optional, want="string")
            if merr is not None:
                errs.append(Cause("Invalid", f"{base}[{i}].messageExpression",
                                  merr.replace("compilation failed: ", "messageExpression compilation failed: ", 1),
                                  _GoRule(raw)))
            elif mc is not None:
                if per_expression and mc.cost > STATIC_COST_LIMIT:
                    errs.append(Cause("Forbidden", f"{base}[{i}].messageExpression",
                                      cost_message("estimated messageExpression cost", mc.cost, STATIC_COST_LIMIT)))
                total.observe(f"{base}[{i}].messageExpression", mc.cost)
        if uses_old:
            if forbid_old is not None:
                errs.append(Cause("Invalid", rule_path, "oldSelf cannot be used on the uncorrelatable portion of the "
                                                        f"schema within {forbid_old}", rule))
        elif raw.get("optionalOldSelf") is not None and compiled is not None:
            errs.append(Cause("Invalid", f"{base}[{i}].optionalOldSelf", "may not be set if oldSelf is not used in rule",
                              _GoBool(raw.get("optionalOldSelf") is True)))
    return bad


class _GoBool:
    __slots__ = ("v",)

    def __init__(self, v: bool) -> None:
        self.v = v

    def __str__(self) -> str:
        return "true" if self.v else "false"


def _child_card(card: int | None, s: dict[str, Any]) -> int | None:
    if card is None:
        return None
    n = _max_elements(s)
    return None if n is None else min(card * n, 2**64 - 1)
