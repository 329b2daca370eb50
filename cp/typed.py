"""structured-merge-diff's typed values, as sigs.k8s.io/structured-merge-diff (`typed`, `schema`) defines
them: objects typed by the official 1.37 schemas (`cp.schemas`), and the typed walks over them — field
sets, comparison, merge and removal.

Lists merge and own their items by `x-kubernetes-list-type` (`map` by `x-kubernetes-list-map-keys`, `set`
by value, `atomic` as a whole; without a list type, `x-kubernetes-patch-strategy: merge` + merge key as
upstream's schema converter does), maps by `x-kubernetes-map-type`. Field sets are `cp.fieldpath` tries in
the `FieldsV1` shape. Used by `cp.fieldmanager`. Pure; no I/O.
"""

from __future__ import annotations

import re
from typing import Any

from cp import fieldpath as fp
from cp import schemas
from cp.fieldpath import SELF, Set

KIND_SCALAR, KIND_MAP, KIND_LIST = 0, 1, 2


class Type:
    """A structured-merge-diff atom: scalar, map (struct fields and/or map values) or list."""

    __slots__ = ("atomic", "deduced", "elem", "fields", "key_defaults", "keys", "kind", "name", "required", "skip")

    def __init__(self, kind: int = KIND_SCALAR) -> None:
        self.kind = kind
        self.fields: dict[str, Type] = {}
        self.elem: Type | None = None
        self.atomic = False
        self.keys: tuple[str, ...] = ()  # list-map keys; () with kind KIND_LIST and not atomic = set
        self.key_defaults: dict[str, Any] | None = None
        self.name = ""
        self.required: tuple[str, ...] = ()
        self.skip: frozenset[str] = frozenset()
        self.deduced = False

    def variant(self) -> Type:
        t = Type(self.kind)
        for slot in Type.__slots__:
            setattr(t, slot, getattr(self, slot))
        return t

    def child(self, key: str) -> Type | None:
        t = self.fields.get(key)
        return t if t is not None else self.elem


SCALAR = Type(KIND_SCALAR)
UNTYPED = Type(KIND_MAP)  # "__untyped_deduced_": maps granular, lists atomic, scalars leaves
UNTYPED.elem = UNTYPED
UNTYPED.deduced = True
UNTYPED.name = "__untyped_deduced_"

_SCALAR_DEFS = frozenset({
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString", "io.k8s.apimachinery.pkg.api.resource.Quantity",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time", "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime",
})
_UNTYPED_DEFS = frozenset({"io.k8s.apimachinery.pkg.runtime.RawExtension",
                           "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1"})
# List-map key fields with a `+default` upstream (the 1.37 JSON schemas carry no defaults).
_KEY_DEFAULTS = {"protocol": "TCP"}

_defs: dict[str, Type] = {}


def definition(name: str) -> Type:
    t = _defs.get(name)
    if t is not None:
        return t
    if name in _SCALAR_DEFS:
        _defs[name] = SCALAR
        return SCALAR
    if name in _UNTYPED_DEFS:
        _defs[name] = UNTYPED
        return UNTYPED
    schema = schemas.definitions().get(name)
    if schema is None:
        _defs[name] = UNTYPED
        return UNTYPED
    t = Type(KIND_MAP)
    _defs[name] = t  # before compiling properties: definitions may be recursive
    _fill(t, schema)
    t.name = name
    return t


def compile_schema(s: dict[str, Any]) -> Type:
    name = schemas.ref_name(s)
    if name is None:
        all_of = s.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
            name = schemas.ref_name(all_of[0])
    if name is not None:
        t = definition(name)
        mt = s.get("x-kubernetes-map-type")
        if mt in ("atomic", "granular") and t.kind == KIND_MAP and (mt == "atomic") != t.atomic and not t.deduced:
            t = t.variant()
            t.atomic = mt == "atomic"
        return t
    t = Type()
    _fill(t, s)
    return t


def _types(s: dict[str, Any]) -> tuple[str, ...]:
    ty = s.get("type")
    if isinstance(ty, str):
        return (ty,)
    if isinstance(ty, list):
        return tuple(x for x in ty if isinstance(x, str))
    return ()


def _fill(t: Type, s: dict[str, Any]) -> None:
    types = _types(s)
    props = s.get("properties")
    extra = s.get("additionalProperties")
    if s.get("x-kubernetes-int-or-string") or "oneOf" in s or "anyOf" in s:
        t.kind = KIND_SCALAR
    elif isinstance(props, dict) or isinstance(extra, dict) or extra is True or "object" in types:
        t.kind = KIND_MAP
        t.fields = {k: compile_schema(v) for k, v in (props or {}).items() if isinstance(v, dict)}
        if isinstance(extra, dict):
            t.elem = compile_schema(extra) if extra else UNTYPED
        elif extra is True or (not props and "object" in types):
            t.elem = UNTYPED
        if not props and extra is None and "object" in types:
            t.deduced = True
        t.atomic = s.get("x-kubernetes-map-type") == "atomic"
        req = s.get("required")
        t.required = tuple(r for r in req if isinstance(r, str)) if isinstance(req, list) else ()
    elif "items" in s or "array" in types:
        t.kind = KIND_LIST
        items = s.get("items")
        t.elem = compile_schema(items) if isinstance(items, dict) else UNTYPED
        lt = s.get("x-kubernetes-list-type")
        keys: list[Any] = []
        if lt == "map":
            keys = [k for k in s.get("x-kubernetes-list-map-keys") or [] if isinstance(k, str)]
            t.atomic = not keys
        elif lt == "set":
            pass
        elif lt is None:
            strategy = s.get("x-kubernetes-patch-strategy")
            if strategy in ("merge", "merge,retainKeys"):
                mk = s.get("x-kubernetes-patch-merge-key")
                keys = [mk] if isinstance(mk, str) else []
            else:
                t.atomic = True
        else:
            t.atomic = True
        t.keys = tuple(keys)
        defaults = {k: _KEY_DEFAULTS[k] for k in t.keys if k in _KEY_DEFAULTS}
        t.key_defaults = defaults or None
    elif s.get("x-kubernetes-preserve-unknown-fields") or not types:
        t.kind = KIND_MAP
        t.elem = UNTYPED
        t.deduced = True
    else:
        t.kind = KIND_SCALAR


# ---------------------------------------------------------------------------------------------------------
# Path elements of list items

_SAFE = re.compile(r"[ !#-%'-;=?-\[\]-~]*\Z")  # printable ASCII but for `"`, `\`, `<`, `>`, `&`


def path_element(item: Any, t: Type) -> str | None:
    """The path element of a list item; None when it has none (an error in a configuration)."""
    keys = t.keys
    if keys:
        if type(item) is not dict:
            return None
        if len(keys) == 1:
            k = keys[0]
            v = item.get(k)
            if type(v) is str and _SAFE.match(v):
                return 'k:{"' + k + '":"' + v + '"}'
            if v is None and k not in item and not t.key_defaults:
                return None
        try:
            return fp.key_element(item, keys, t.key_defaults)
        except (ValueError, TypeError):  # e.g. a NaN read from YAML
            return None
    if type(item) is dict or type(item) is list or item is None:
        return None
    if type(item) is str and _SAFE.match(item):
        return 'v:"' + item + '"'
    try:
        return fp.value_element(item)
    except (ValueError, TypeError):
        return None


def path_element_error(item: Any, t: Type) -> str:
    if t.keys:
        if item is None:
            return "associative list with keys may not have a null element"
        if type(item) is not dict:
            return "associative list with keys may not have non-map elements"
        quoted = " ".join(fp.go_quote(k) for k in t.keys)
        return (f"associative list with keys has an element that omits all key fields [{quoted}] "
                "(and doesn't have default values for any key fields)")
    if type(item) is dict:
        return "associative list without keys has an element that's a map type"
    if type(item) is list:
        return "not supported: associative list with lists as elements"
    return "associative list without keys has an element that's an explicit null"


# ---------------------------------------------------------------------------------------------------------
# Typed walks: field sets, comparison, merge, removal

_MISSING: Any = object()


def whole(v: Any, t: Type) -> Set:
    """The paths of a value that is entirely added (or removed): the node, and everything below."""
    tv = type(v)
    if tv is dict:
        if not v or t.kind != KIND_MAP or t.atomic:
            return {}
        out: Set = {SELF: {}}
        fields = t.fields
        elem = t.elem
        skip = t.skip
        for k in sorted(v) if len(v) > 1 else v:
            if skip and k in skip:
                continue
            cv = v[k]
            ctv = type(cv)
            if (ctv is dict or ctv is list) and cv:
                out["f:" + k] = whole(cv, fields.get(k) or elem or UNTYPED)
            else:
                out["f:" + k] = {}
        return out
    if tv is list:
        if not v or t.kind != KIND_LIST or t.atomic:
            return {}
        out = {SELF: {}}
        elem = t.elem or UNTYPED
        for item in v:
            pe = path_element(item, t)
            if pe is None:
                continue
            if pe in out:
                out[pe] = {}
            else:
                out[pe] = whole(item, elem) if type(item) is dict else {}
        return fp.sorted_level(out) if len(out) > 2 else out
    return {}


def _compare_map(lv: dict[str, Any], rv: dict[str, Any], t: Type, add: Set, mod: Set, rem: Set) -> None:
    fields = t.fields
    elem = t.elem
    skip = t.skip
    for k, r in rv.items():
        lx = lv.get(k, _MISSING)
        if lx is r:
            continue
        if skip and k in skip:
            continue
        if lx is _MISSING:
            ct = fields.get(k) or elem or UNTYPED
            add["f:" + k] = whole(r, ct) if r else {}
        elif lx != r:
            _compare_value(lx, r, fields.get(k) or elem or UNTYPED, "f:" + k, add, mod, rem)
    if lv and not (lv.keys() <= rv.keys()):
        for k, lx in lv.items():
            if k not in rv and not (skip and k in skip):
                ct = fields.get(k) or elem or UNTYPED
                rem["f:" + k] = whole(lx, ct) if lx else {}


def _compare_value(lv: Any, rv: Any, t: Type, pe: str, add: Set, mod: Set, rem: Set) -> None:
    """Both present and different."""
    tk = t.kind
    if tk == KIND_MAP and not t.atomic:
        ld = lv if type(lv) is dict else ({} if lv is None else None)
        rd = rv if type(rv) is dict else ({} if rv is None else None)
        if ld is None or rd is None or (not ld and not rd):
            mod[pe] = {}
            return
        a: Set = {}
        m: Set = {}
        r: Set = {}
        _compare_map(ld, rd, t, a, m, r)
    elif tk == KIND_LIST and not t.atomic:
        ll = lv if type(lv) is list else ([] if lv is None else None)
        rl = rv if type(rv) is list else ([] if rv is None else None)
        if ll is None or rl is None or (not ll and not rl):
            mod[pe] = {}
            return
        a, m, r = {}, {}, {}
        _compare_list(ll, rl, t, a, m, r)
    else:
        mod[pe] = {}
        return
    if a:
        add[pe] = fp.sorted_level(a)
    if m:
        mod[pe] = fp.sorted_level(m)
    if r:
        rem[pe] = fp.sorted_level(r)


def _index(items: list[Any], t: Type) -> tuple[dict[str, Any], dict[str, list[Any]] | None]:
    idx: dict[str, Any] = {}
    dups: dict[str, list[Any]] | None = None
    for item in items:
        pe = path_element(item, t)
        if pe is None:
            continue
        if pe in idx:
            if dups is None:
                dups = {}
            dups.setdefault(pe, [idx[pe]]).append(item)
        else:
            idx[pe] = item
    return idx, dups


def _compare_list(ll: list[Any], rl: list[Any], t: Type, add: Set, mod: Set, rem: Set) -> None:
    elem = t.elem or UNTYPED
    li, ldups = _index(ll, t)
    ri, rdups = _index(rl, t)
    for pe, r in ri.items():
        lx = li.get(pe, _MISSING)
        if (ldups and pe in ldups) or (rdups and pe in rdups):
            lmany = ldups.get(pe) if ldups else None
            rmany = rdups.get(pe) if rdups else None
            if lmany and rmany:
                if lmany != rmany:
                    mod[pe] = {}
            elif lmany:
                add[pe] = whole(r, elem) if type(r) is dict else {}
                rem[pe] = {}
            else:
                if lx is not _MISSING:
                    rem[pe] = whole(lx, elem) if type(lx) is dict else {}
                add[pe] = {}
            continue
        if lx is _MISSING:
            add[pe] = whole(r, elem) if type(r) is dict else {}
        elif lx is not r and lx != r:
            _compare_value(lx, r, elem, pe, add, mod, rem)
    for pe, lx in li.items():
        if pe not in ri:
            if ldups and pe in ldups:
                rem[pe] = {}
            else:
                rem[pe] = whole(lx, elem) if type(lx) is dict else {}


def compare(lhs: dict[str, Any], rhs: dict[str, Any], t: Type) -> tuple[Set, Set, Set]:
    """(added, modified, removed) from `lhs` to `rhs`, as `TypedValue.Compare`."""
    add: Set = {}
    mod: Set = {}
    rem: Set = {}
    if lhs is not rhs:
        _compare_map(lhs, rhs, t, add, mod, rem)
    return fp.sorted_level(add), fp.sorted_level(mod), fp.sorted_level(rem)


def _fs_map(m: dict[str, Any], t: Type, path: str, errs: list[str]) -> Set:
    out: Set = {}
    fields = t.fields
    elem = t.elem
    skip = t.skip
    for k, cv in m.items():
        if skip and k in skip:
            continue
        ct = fields.get(k)
        declared = ct is not None
        if ct is None:
            ct = elem
            if ct is None:
                errs.append(f"{path}.{k}: field not declared in schema")
                continue
        tv = type(cv)
        if tv is dict and cv and ct.kind == KIND_MAP and not ct.atomic:
            sub = _fs_map(cv, ct, f"{path}.{k}", errs)
        elif tv is list and ct.kind == KIND_LIST and not ct.atomic:
            sub = _fs_list(cv, ct, f"{path}.{k}", errs)
        else:
            out["f:" + k] = {}
            continue
        if not declared and sub:
            sub = {SELF: {}, **sub}
        if sub or not declared:
            out["f:" + k] = sub
    return fp.sorted_level(out)


def _fs_list(items: list[Any], t: Type, path: str, errs: list[str]) -> Set:
    out: Set = {}
    elem = t.elem or UNTYPED
    for i, item in enumerate(items):
        pe = path_element(item, t)
        if pe is None:
            errs.append(f"{path}: element {i}: {path_element_error(item, t)}")
            continue
        if pe in out:
            errs.append(f"{path}: duplicate entries for key {fp.element_string(pe)}")
            continue
        if type(item) is dict and item and elem.kind == KIND_MAP and not elem.atomic:
            out[pe] = {SELF: {}, **_fs_map(item, elem, path + fp.element_string(pe), errs)}
        else:
            out[pe] = {}
    return fp.sorted_level(out)


def field_set(obj: dict[str, Any], t: Type) -> tuple[Set, list[str]]:
    """`TypedValue.ToFieldSet` of an applied configuration, and its schema errors."""
    errs: list[str] = []
    s = _fs_map(obj, t, "", errs)
    meta = s.get("f:metadata")
    if meta is not None and (not meta or SELF in meta):  # the `metadata` path itself is stripped
        s = dict(s)
        if meta:
            s["f:metadata"] = {k: v for k, v in meta.items() if k != SELF}
        else:
            del s["f:metadata"]
    return s, errs


def drop_undeclared(obj: dict[str, Any], t: Type) -> list[str]:
    """Remove, in place, the fields `field_set` would report as "not declared in schema" (walking as it
    does: into granular maps and lists, not atomic ones); return their paths (`spec.x`,
    `spec.containers[0].x`), the way strict decoding names unknown fields."""
    dropped: list[str] = []
    _drop_map(obj, t, "", dropped)
    return dropped


def _drop_map(m: dict[str, Any], t: Type, path: str, dropped: list[str]) -> None:
    undeclared = []
    for k, cv in m.items():
        if t.skip and k in t.skip:
            continue
        ct = t.fields.get(k) or t.elem
        where = f"{path}.{k}" if path else k
        if ct is None:
            undeclared.append(k)
            dropped.append(where)
        elif type(cv) is dict and ct.kind == KIND_MAP and not ct.atomic:
            _drop_map(cv, ct, where, dropped)
        elif type(cv) is list and ct.kind == KIND_LIST and not ct.atomic:
            elem = ct.elem or UNTYPED
            if elem.kind == KIND_MAP and not elem.atomic:
                for i, item in enumerate(cv):
                    if type(item) is dict:
                        _drop_map(item, elem, f"{where}[{i}]", dropped)
    for k in undeclared:
        del m[k]


def ensure_named(s: Set, t: Type) -> Set:
    """`Set.EnsureNamedFieldsAreMembers`: struct fields leading to members are members too."""
    out: Set = {}
    kind = t.kind
    for k, n in s.items():
        if k == SELF:
            out[SELF] = {}
            continue
        if kind == KIND_MAP and k[0] == "f":
            ct = t.fields.get(k[2:])
            if ct is not None:
                sub = ensure_named(n, ct) if n else n
                out[k] = sub if (not sub or SELF in sub) else {SELF: {}, **sub}
                continue
            ct = t.elem or UNTYPED
        elif kind == KIND_LIST:
            ct = t.elem or UNTYPED
        else:
            ct = UNTYPED
        out[k] = ensure_named(n, ct) if n else n
    return out


def merge(lv: Any, rv: Any, t: Type) -> Any:
    """`TypedValue.Merge(live, config)`: the configuration wins on leaves."""
    if lv is rv:
        return rv
    tk = t.kind
    if tk == KIND_MAP and not t.atomic:
        trv = type(rv)
        if trv is dict:
            if type(lv) is dict:
                if not lv:
                    return _drop_nulls(rv)
                out = dict(lv)
                fields = t.fields
                elem = t.elem
                for k, cv in rv.items():
                    lx = lv.get(k, _MISSING)
                    if lx is _MISSING:
                        if cv is not None:
                            out[k] = _drop_nulls(cv)
                        continue
                    mv = merge(lx, cv, fields.get(k) or elem or UNTYPED)
                    if mv is None:
                        del out[k]  # null: unset, as the typed round trip upstream leaves it
                    else:
                        out[k] = mv
                return out
            return _drop_nulls(rv)
        if rv is None and type(lv) is dict and lv:
            return lv  # a null map merges as an empty one
        return rv
    if tk == KIND_LIST and not t.atomic:
        if type(rv) is list:
            if type(lv) is list and lv:
                if not rv:
                    return lv
                return _merge_list(lv, rv, t)
            return _drop_nulls(rv)
        if rv is None and type(lv) is list and lv:
            return lv
        return rv
    return rv


def _drop_nulls(v: Any) -> Any:
    if type(v) is dict:
        if any(x is None or type(x) is dict or type(x) is list for x in v.values()):
            return {k: _drop_nulls(x) for k, x in v.items() if x is not None}
        return v
    if type(v) is list:
        if any(type(x) is dict or type(x) is list for x in v):
            return [_drop_nulls(x) for x in v]
        return v
    return v


def _merge_list(lhs: list[Any], rhs: list[Any], t: Type) -> list[Any]:
    """Associative-list merge with upstream's ordering: live order, configured items in their order."""
    elem = t.elem or UNTYPED
    rpes: list[str] = []
    robs: dict[str, Any] = {}
    for item in rhs:
        pe = path_element(item, t)
        if pe is None or pe in robs:
            continue  # reported by field_set
        rpes.append(pe)
        robs[pe] = item
    lpes: list[str] = []
    lobs: dict[str, Any] = {}
    lraw: list[Any] = []
    unkeyed: list[Any] = []
    for item in lhs:
        pe = path_element(item, t)
        if pe is None:
            unkeyed.append(item)
            continue
        if pe in lobs:
            lobs[pe] = None  # duplicated in the live object
        else:
            lobs[pe] = item
        lpes.append(pe)
        lraw.append(item)
    shared = [pe for pe in rpes if pe in lobs]
    si = 0
    next_shared = shared[0] if shared else None
    if shared:
        si = 1
    merged: set[str] = set()
    out: list[Any] = []
    li = ri = 0
    n_l, n_r = len(lpes), len(rpes)

    def merge_item(pe: str, lchild: Any, rchild: Any) -> None:
        if rchild is _MISSING:
            out.append(lchild)
        elif lchild is _MISSING or lchild is None:
            out.append(_drop_nulls(rchild))
        else:
            out.append(merge(lchild, rchild, elem))

    while li < n_l or ri < n_r:
        if li < n_l and ri < n_r:
            pe = lpes[li]
            if pe == rpes[ri]:
                merged.add(pe)
                merge_item(pe, lobs.get(pe, _MISSING), robs[pe])
                li += 1
                ri += 1
                next_shared = shared[si] if si < len(shared) else None
                si += 1
                continue
            if pe in robs and next_shared is not None and next_shared != pe:
                li += 1
                continue
        if li < n_l:
            pe = lpes[li]
            if pe not in robs:
                merge_item(pe, lraw[li], _MISSING)
                li += 1
                continue
            if pe in merged:
                li += 1
        if ri < n_r:
            pe = rpes[ri]
            merged.add(pe)
            merge_item(pe, lobs.get(pe, _MISSING), robs[pe])
            ri += 1
            if next_shared is not None and next_shared == pe:
                next_shared = shared[si] if si < len(shared) else None
                si += 1
    return out + unkeyed


def remove(v: Any, rm: Set, t: Type) -> Any:
    """`TypedValue.RemoveItems`: drop the members of `rm` (with everything below them); maps and lists
    left empty by the removal are dropped as well (None)."""
    tv = type(v)
    if tv is dict and t.kind == KIND_MAP and not t.atomic:
        out: dict[str, Any] = {}
        fields = t.fields
        elem = t.elem
        for k, cv in v.items():
            n = rm.get("f:" + k)
            if n is None:
                out[k] = cv
                continue
            if not n or SELF in n:
                continue
            ncv = remove(cv, n, fields.get(k) or elem or UNTYPED)
            if ncv is not None:
                out[k] = ncv
        return out or None
    if tv is list and t.kind == KIND_LIST and not t.atomic:
        items: list[Any] = []
        elem = t.elem or UNTYPED
        for item in v:
            pe = path_element(item, t)
            n = rm.get(pe) if pe is not None else None
            if n is None:
                items.append(item)
                continue
            if not n or SELF in n:
                continue
            ni = remove(item, n, elem)
            if ni is not None:
                items.append(ni)
        return items or None
    return v
