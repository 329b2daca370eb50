"""Server-side apply and managedFields bookkeeping, as sigs.k8s.io/structured-merge-diff and the
apiserver's field manager (`k8s.io/apimachinery/pkg/util/managedfields/internal`) do them.

Objects are typed by the official 1.37 schemas (`cp.schemas`): lists merge and own their items by
`x-kubernetes-list-type` (`map` by `x-kubernetes-list-map-keys`, `set` by value, `atomic` as a whole;
without a list type, `x-kubernetes-patch-strategy: merge` + merge key as upstream's schema converter
does), maps by `x-kubernetes-map-type`. Field sets are `cp.fieldpath` tries in the `FieldsV1` shape.

Entry points (used by `api/store.py`):

- `on_create` / `on_update`: an Update operation (create, PUT, PATCH of any non-apply type, status and
  scale writes). The writer takes ownership of what changed between the old and the new object, every
  other manager loses what changed or was removed (`merge.Updater.Update` via the managed-fields
  updater's "current-operation"); entries are capped at 10 Update managers ("ancient-changes").
- `on_apply`: an Apply operation: the configuration is merged into the live object, fields the manager
  applied before and no longer applies are removed unless someone else owns them, changes to fields
  other managers own are conflicts (409) unless forced, which moves their ownership. The kubectl
  client-side to server-side migration (`last-applied-configuration`) behaves as upstream's
  lastAppliedManager and lastAppliedUpdater.

Pure; no I/O. Times are passed in as RFC 3339 strings.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import msgspec

from cp import errors, schemas
from cp import fieldpath as fp
from cp import resources as res
from cp.fieldpath import SELF, Set

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
MAX_UPDATE_MANAGERS = 10
_ANNOTATIONS_MAX = 256 * 1024

_SCALAR, _MAP, _LIST = 0, 1, 2


class Type:
    """A structured-merge-diff atom: scalar, map (struct fields and/or map values) or list."""

    __slots__ = ("atomic", "deduced", "elem", "fields", "key_defaults", "keys", "kind", "name", "required", "skip")

    def __init__(self, kind: int = _SCALAR) -> None:
        self.kind = kind
        self.fields: dict[str, Type] = {}
        self.elem: Type | None = None
        self.atomic = False
        self.keys: tuple[str, ...] = ()  # list-map keys; () with kind _LIST and not atomic = set
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


SCALAR = Type(_SCALAR)
UNTYPED = Type(_MAP)  # "__untyped_deduced_": maps granular, lists atomic, scalars leaves
UNTYPED.elem = UNTYPED
UNTYPED.deduced = True
UNTYPED.name = "__untyped_deduced_"

_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_SCALAR_DEFS = frozenset({
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString", "io.k8s.apimachinery.pkg.api.resource.Quantity",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time", "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime",
})
_UNTYPED_DEFS = frozenset({"io.k8s.apimachinery.pkg.runtime.RawExtension",
                           "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1"})
# List-map key fields with a `+default` upstream (the 1.37 JSON schemas carry no defaults).
_KEY_DEFAULTS = {"protocol": "TCP"}
# Struct fields that Go stores by value (present, as `{}`, in a zero object although optional): an
# Update creating an object takes `.` ownership of everything else it sets, as upstream does when it
# compares the new object with `New()` of its type. Required fields are present in the zero object too.
_VALUE_STRUCTS: dict[str, tuple[str, ...]] = {
    "io.k8s.api.apps.v1.DeploymentSpec": ("strategy", "template"),
    "io.k8s.api.apps.v1.ReplicaSetSpec": ("template",),
    "io.k8s.api.core.v1.PodTemplateSpec": ("metadata", "spec"),
    "io.k8s.api.core.v1.Event": ("involvedObject", "source"),
    "io.k8s.api.core.v1.NodeStatus": ("daemonEndpoints", "nodeInfo"),
    "io.k8s.api.core.v1.NodeDaemonEndpoints": ("kubeletEndpoint",),
    "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerSpec": ("scaleTargetRef",),
    "io.k8s.api.resource.v1.ResourceClaimSpec": ("devices",),
    "io.k8s.api.resource.v1.ResourceClaimTemplateSpec": ("metadata", "spec"),
    "io.k8s.api.resource.v1.ResourceSliceSpec": ("pool",),
    "io.k8s.api.resource.v1.DeviceTaintRuleSpec": ("taint",),
}
# metadata fields never owned (upstream's stripMetaManager), skipped at the root only.
_STRIPPED_META = frozenset({"name", "namespace", "creationTimestamp", "selfLink", "uid", "clusterName",
                            "generation", "managedFields", "resourceVersion"})

_defs: dict[str, Type] = {}


def _def(name: str) -> Type:
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
    t = Type(_MAP)
    _defs[name] = t  # before compiling properties: definitions may be recursive
    _fill(t, schema)
    t.name = name
    return t


def _compile(s: dict[str, Any]) -> Type:
    name = schemas.ref_name(s)
    if name is None:
        all_of = s.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
            name = schemas.ref_name(all_of[0])
    if name is not None:
        t = _def(name)
        mt = s.get("x-kubernetes-map-type")
        if mt in ("atomic", "granular") and t.kind == _MAP and (mt == "atomic") != t.atomic and not t.deduced:
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
        t.kind = _SCALAR
    elif isinstance(props, dict) or isinstance(extra, dict) or extra is True or "object" in types:
        t.kind = _MAP
        t.fields = {k: _compile(v) for k, v in (props or {}).items() if isinstance(v, dict)}
        if isinstance(extra, dict):
            t.elem = _compile(extra) if extra else UNTYPED
        elif extra is True or (not props and "object" in types):
            t.elem = UNTYPED
        if not props and extra is None and "object" in types:
            t.deduced = True
        t.atomic = s.get("x-kubernetes-map-type") == "atomic"
        req = s.get("required")
        t.required = tuple(r for r in req if isinstance(r, str)) if isinstance(req, list) else ()
    elif "items" in s or "array" in types:
        t.kind = _LIST
        items = s.get("items")
        t.elem = _compile(items) if isinstance(items, dict) else UNTYPED
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
        t.kind = _MAP
        t.elem = UNTYPED
        t.deduced = True
    else:
        t.kind = _SCALAR


# ---------------------------------------------------------------------------------------------------------
# Per-kind information


class KindInfo:
    __slots__ = ("api_version", "gvk", "kind", "main_filter", "plural", "root", "status_keep_meta",
                 "zero")

    def __init__(self, kind: res.ResourceKind) -> None:
        self.kind = kind.kind
        self.plural = kind.plural
        self.api_version = kind.api_version
        self.gvk = f"{kind.group}/{kind.version}, Kind={kind.kind}"
        name = schemas.name_for(kind.group, kind.version, kind.kind)
        base = _def(name) if name else None
        if base is None or base.kind != _MAP:
            base = Type(_MAP)
            base.fields = {"apiVersion": SCALAR, "kind": SCALAR, "metadata": _def(_OBJECT_META)}
            base.elem = UNTYPED
        root = base.variant()
        root.fields = dict(base.fields)
        meta = _def(_OBJECT_META).variant()
        meta.skip = _STRIPPED_META
        root.fields["metadata"] = meta
        root.skip = frozenset({"apiVersion", "kind"})
        self.root = root
        self.zero = _zero_root(root)
        self.main_filter = kind.subresource("status") is not None
        self.status_keep_meta: tuple[str, ...]
        if kind.group == "apps":
            self.status_keep_meta = (("f:annotations",) if kind.plural == "deployments"
                                     else ("f:labels", "f:annotations"))
        else:
            self.status_keep_meta = ()

    def filter(self, subresource: str) -> Callable[[Set], Set] | None:
        """Upstream's reset fields (`GetResetFields` of the strategy): what the write ignores is never owned."""
        if subresource == "":
            return _drop_status if self.main_filter else None
        if subresource == "status":
            keep = self.status_keep_meta

            def status_only(s: Set) -> Set:
                out: Set = {}
                meta = s.get("f:metadata")
                if meta and keep:
                    sub = {k: v for k, v in meta.items() if k in keep}
                    if sub:
                        out["f:metadata"] = sub
                if "f:status" in s:
                    out["f:status"] = s["f:status"]
                return out

            return status_only
        return None


def _drop_status(s: Set) -> Set:
    if "f:status" in s:
        s = dict(s)
        del s["f:status"]
    return s


_infos: dict[tuple[str, str, str], KindInfo] = {}


def kind_info(kind: res.ResourceKind) -> KindInfo:
    key = (kind.group, kind.version, kind.kind)
    info = _infos.get(key)
    if info is None:
        info = _infos[key] = KindInfo(kind)
    return info


def _zero_struct(t: Type, depth: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if depth > 8:
        return out
    for f in t.required:
        if f in t.fields:
            out[f] = None
    for f in _VALUE_STRUCTS.get(t.name, ()):
        ft = t.fields.get(f)
        if ft is not None and ft.kind == _MAP and not ft.deduced:
            out[f] = _zero_struct(ft, depth + 1)
    if t.name == _OBJECT_META:
        out["creationTimestamp"] = None  # a zero metav1.Time encodes as null
    return out


def _zero_root(root: Type) -> dict[str, Any]:
    out: dict[str, Any] = {"metadata": {}}
    for f in ("spec", "status"):
        ft = root.fields.get(f)
        if ft is not None and ft.kind == _MAP and not ft.deduced:
            out[f] = _zero_struct(ft)
    return out


# ---------------------------------------------------------------------------------------------------------
# Path elements of list items

_SAFE = re.compile(r"[ !#-%'-;=?-\[\]-~]*\Z")  # printable ASCII but for `"`, `\`, `<`, `>`, `&`


def _pe(item: Any, t: Type) -> str | None:
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


def _pe_error(item: Any, t: Type) -> str:
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


def _whole(v: Any, t: Type) -> Set:
    """The paths of a value that is entirely added (or removed): the node, and everything below."""
    tv = type(v)
    if tv is dict:
        if not v or t.kind != _MAP or t.atomic:
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
                out["f:" + k] = _whole(cv, fields.get(k) or elem or UNTYPED)
            else:
                out["f:" + k] = {}
        return out
    if tv is list:
        if not v or t.kind != _LIST or t.atomic:
            return {}
        out = {SELF: {}}
        elem = t.elem or UNTYPED
        for item in v:
            pe = _pe(item, t)
            if pe is None:
                continue
            if pe in out:
                out[pe] = {}
            else:
                out[pe] = _whole(item, elem) if type(item) is dict else {}
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
            add["f:" + k] = _whole(r, ct) if r else {}
        elif lx != r:
            _compare_value(lx, r, fields.get(k) or elem or UNTYPED, "f:" + k, add, mod, rem)
    if lv and not (lv.keys() <= rv.keys()):
        for k, lx in lv.items():
            if k not in rv and not (skip and k in skip):
                ct = fields.get(k) or elem or UNTYPED
                rem["f:" + k] = _whole(lx, ct) if lx else {}


def _compare_value(lv: Any, rv: Any, t: Type, pe: str, add: Set, mod: Set, rem: Set) -> None:
    """Both present and different."""
    tk = t.kind
    if tk == _MAP and not t.atomic:
        ld = lv if type(lv) is dict else ({} if lv is None else None)
        rd = rv if type(rv) is dict else ({} if rv is None else None)
        if ld is None or rd is None or (not ld and not rd):
            mod[pe] = {}
            return
        a: Set = {}
        m: Set = {}
        r: Set = {}
        _compare_map(ld, rd, t, a, m, r)
    elif tk == _LIST and not t.atomic:
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
        pe = _pe(item, t)
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
                add[pe] = _whole(r, elem) if type(r) is dict else {}
                rem[pe] = {}
            else:
                if lx is not _MISSING:
                    rem[pe] = _whole(lx, elem) if type(lx) is dict else {}
                add[pe] = {}
            continue
        if lx is _MISSING:
            add[pe] = _whole(r, elem) if type(r) is dict else {}
        elif lx is not r and lx != r:
            _compare_value(lx, r, elem, pe, add, mod, rem)
    for pe, lx in li.items():
        if pe not in ri:
            if ldups and pe in ldups:
                rem[pe] = {}
            else:
                rem[pe] = _whole(lx, elem) if type(lx) is dict else {}


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
        if tv is dict and cv and ct.kind == _MAP and not ct.atomic:
            sub = _fs_map(cv, ct, f"{path}.{k}", errs)
        elif tv is list and ct.kind == _LIST and not ct.atomic:
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
        pe = _pe(item, t)
        if pe is None:
            errs.append(f"{path}: element {i}: {_pe_error(item, t)}")
            continue
        if pe in out:
            errs.append(f"{path}: duplicate entries for key {fp.element_string(pe)}")
            continue
        if type(item) is dict and item and elem.kind == _MAP and not elem.atomic:
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


def _ensure_named(s: Set, t: Type) -> Set:
    """`Set.EnsureNamedFieldsAreMembers`: struct fields leading to members are members too."""
    out: Set = {}
    kind = t.kind
    for k, n in s.items():
        if k == SELF:
            out[SELF] = {}
            continue
        if kind == _MAP and k[0] == "f":
            ct = t.fields.get(k[2:])
            if ct is not None:
                sub = _ensure_named(n, ct) if n else n
                out[k] = sub if (not sub or SELF in sub) else {SELF: {}, **sub}
                continue
            ct = t.elem or UNTYPED
        elif kind == _LIST:
            ct = t.elem or UNTYPED
        else:
            ct = UNTYPED
        out[k] = _ensure_named(n, ct) if n else n
    return out


def _merge(lv: Any, rv: Any, t: Type) -> Any:
    """`TypedValue.Merge(live, config)`: the configuration wins on leaves."""
    if lv is rv:
        return rv
    tk = t.kind
    if tk == _MAP and not t.atomic:
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
                    mv = _merge(lx, cv, fields.get(k) or elem or UNTYPED)
                    if mv is None:
                        del out[k]  # null: unset, as the typed round trip upstream leaves it
                    else:
                        out[k] = mv
                return out
            return _drop_nulls(rv)
        if rv is None and type(lv) is dict and lv:
            return lv  # a null map merges as an empty one
        return rv
    if tk == _LIST and not t.atomic:
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
        pe = _pe(item, t)
        if pe is None or pe in robs:
            continue  # reported by field_set
        rpes.append(pe)
        robs[pe] = item
    lpes: list[str] = []
    lobs: dict[str, Any] = {}
    lraw: list[Any] = []
    unkeyed: list[Any] = []
    for item in lhs:
        pe = _pe(item, t)
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
            out.append(_merge(lchild, rchild, elem))

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


def _remove(v: Any, rm: Set, t: Type) -> Any:
    """`TypedValue.RemoveItems`: drop the members of `rm` (with everything below them); maps and lists
    left empty by the removal are dropped as well (None)."""
    tv = type(v)
    if tv is dict and t.kind == _MAP and not t.atomic:
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
            ncv = _remove(cv, n, fields.get(k) or elem or UNTYPED)
            if ncv is not None:
                out[k] = ncv
        return out or None
    if tv is list and t.kind == _LIST and not t.atomic:
        items: list[Any] = []
        elem = t.elem or UNTYPED
        for item in v:
            pe = _pe(item, t)
            n = rm.get(pe) if pe is not None else None
            if n is None:
                items.append(item)
                continue
            if not n or SELF in n:
                continue
            ni = _remove(item, n, elem)
            if ni is not None:
                items.append(ni)
        return items or None
    return v


# ---------------------------------------------------------------------------------------------------------
# managedFields entries


class Entry:
    __slots__ = ("api_version", "fields", "manager", "operation", "raw", "subresource", "time")

    def __init__(self, *, manager: str, operation: str, api_version: str, subresource: str, fields: Set,
                 time: str | None, raw: dict[str, Any] | None = None) -> None:
        self.manager = manager
        self.operation = operation
        self.api_version = api_version
        self.subresource = subresource
        self.fields = fields
        self.time = time
        self.raw = raw  # the stored entry, reused while nothing changes

    def with_fields(self, fields: Set, *, time: str | None = _MISSING) -> Entry:
        return Entry(manager=self.manager, operation=self.operation, api_version=self.api_version,
                     subresource=self.subresource, fields=fields,
                     time=self.time if time is _MISSING else time)

    @property
    def applied(self) -> bool:
        return self.operation == "Apply"

    def encode(self) -> dict[str, Any]:
        if self.raw is not None:
            return self.raw
        out: dict[str, Any] = {"manager": self.manager, "operation": self.operation,
                               "apiVersion": self.api_version}
        if self.time is not None:
            out["time"] = self.time
        out["fieldsType"] = "FieldsV1"
        out["fieldsV1"] = self.fields  # kept in upstream's key order by every set operation
        if self.subresource:
            out["subresource"] = self.subresource
        self.raw = out
        return out


Key = tuple[str, str, str, str]
Managed = dict[Key, Entry]


def manager_key(manager: str, operation: str, api_version: str, subresource: str) -> Key:
    """`BuildManagerIdentifier`: appliers are one manager whatever the version they apply."""
    return (manager or "unknown", operation, "" if operation == "Apply" else api_version, subresource)


def decode(entries: Any, *, trusted: bool) -> Managed:
    """`DecodeManagedFields`. ValueError for an entry that is not a valid managedFields entry."""
    out: Managed = {}
    if not entries:
        return out
    if not isinstance(entries, list):
        raise ValueError("managedFields must be a list")
    for i, e in enumerate(entries):
        if not isinstance(e, dict):
            raise ValueError(f"managed fields entry {i} is not an object")
        op = e.get("operation")
        if op not in ("Apply", "Update"):
            raise ValueError("operation must be `Apply` or `Update`")
        api_version = e.get("apiVersion")
        if not api_version or not isinstance(api_version, str):
            raise ValueError("apiVersion must not be empty")
        ftype = e.get("fieldsType")
        if not ftype:
            raise ValueError(f"missing fieldsType in managed fields entry {i}")
        if ftype != "FieldsV1":
            raise ValueError(f"invalid fieldsType {ftype!r} in managed fields entry {i}")
        fields = e.get("fieldsV1") or {}
        raw: dict[str, Any] | None = e
        if not trusted:
            fields = fp.canonical(fp.validate(fields))
            raw = None
        manager = e.get("manager") or ""
        if not isinstance(manager, str):
            raise ValueError("manager must be a string")
        sub = e.get("subresource") or ""
        time = e.get("time")
        entry = Entry(manager=manager, operation=op, api_version=api_version, subresource=sub,
                      fields=fields, time=time if isinstance(time, str) else None, raw=raw)
        out[manager_key(manager, op, api_version, sub)] = entry
    return out


def encode(managed: Managed) -> list[dict[str, Any]] | None:
    """Entries sorted as upstream: Apply before Update, then by time, manager, apiVersion, subresource."""
    if not managed:
        return None
    entries = sorted(managed.values(), key=lambda e: (e.operation, e.time or "", e.manager, e.api_version,
                                                      e.subresource))
    return [e.encode() for e in entries]


def _same_version(managed: Managed, api_version: str) -> Managed:
    """Managers recorded at a version this server does not serve are dropped (upstream: a version the
    converter does not know is removed on the next write)."""
    if all(e.api_version == api_version for e in managed.values()):
        return managed
    return {k: e for k, e in managed.items() if e.api_version == api_version}


def _decode_live_or_new(live_entries: Any, new_entries: Any, *, subresource: str) -> tuple[Managed, bool]:
    """`decodeLiveOrNew`: the request's entries when it sets them (an empty list resets them), else the
    live ones; subresources always keep the live ones. Second: whether the live entries were used."""
    if subresource:
        return _decode_or_empty(live_entries, trusted=True), True
    if isinstance(new_entries, list) and (not new_entries or (len(new_entries) == 1 and new_entries[0] == {})):
        return {}, False  # an explicit reset
    if new_entries and new_entries != live_entries:
        try:
            managed = decode(new_entries, trusted=False)
        except (ValueError, TypeError):
            managed = {}
        if managed:
            return managed, False
    return _decode_or_empty(live_entries, trusted=True), True


def _decode_or_empty(entries: Any, *, trusted: bool) -> Managed:
    try:
        return decode(entries, trusted=trusted)
    except (ValueError, TypeError):
        return {}


# ---------------------------------------------------------------------------------------------------------
# Update operations


def _update(info: KindInfo, live: dict[str, Any], new: dict[str, Any], managed: Managed, key: Key,
            now: str, subresource: str) -> Managed:
    """`merge.Updater.Update` behind the managed-fields updater: the writer owns what changed."""
    add, mod, rem = compare(live, new, info.root)
    flt = info.filter(subresource)
    if flt is not None:
        add, mod, rem = flt(add), flt(mod), flt(rem)
    changed = fp.union(fp.union(add, mod), rem)
    if not changed:
        return managed
    out: Managed = {}
    for k, e in managed.items():
        rest = fp.difference(e.fields, changed)
        if rest is e.fields:
            out[k] = e
        elif rest:
            out[k] = e.with_fields(rest)
    current = fp.union(add, mod)
    if current:
        prev = out.get(key)
        if prev is not None:
            out[key] = prev.with_fields(fp.union(current, prev.fields), time=now)
        else:
            manager, op, _, sub = key
            out[key] = Entry(manager=manager, operation=op, api_version=info.api_version, subresource=sub,
                             fields=current, time=now)
        _cap_update_managers(out, info.api_version)
    return out


def _cap_update_managers(managed: Managed, api_version: str) -> None:
    """`capManagersManager`: past 10 Update managers, the oldest merge into "ancient-changes"."""
    updaters = [k for k, e in managed.items() if e.operation == "Update"]
    if len(updaters) <= MAX_UPDATE_MANAGERS:
        return
    updaters.sort(key=lambda k: (managed[k].time or "", _identifier(k)))
    bucket = manager_key("ancient-changes", "Update", api_version, "")
    first: Key | None = None
    length = len(updaters)
    for k in updaters:
        if length <= MAX_UPDATE_MANAGERS:
            break
        if first is None:
            first = k
            continue
        if k == bucket:
            continue  # upstream would merge the bucket into itself and then delete it
        e = managed[k]
        if bucket not in managed:
            f = managed.pop(first)
            managed[bucket] = Entry(manager="ancient-changes", operation="Update", api_version=f.api_version,
                                    subresource="", fields=f.fields, time=f.time)
        b = managed[bucket]
        managed[bucket] = b.with_fields(fp.union(e.fields, b.fields), time=e.time)
        del managed[k]
        length -= 1


def _identifier(k: Key) -> str:
    manager, op, api_version, sub = k
    d: dict[str, str] = {"manager": manager, "operation": op}
    if api_version:
        d["apiVersion"] = api_version
    if sub:
        d["subresource"] = sub
    return fp.go_json(d)


def on_create(kind: res.ResourceKind, obj: dict[str, Any], *, manager: str, now: str,
              requested: Any = None) -> list[dict[str, Any]] | None:
    """managedFields of an object being created by an Update operation (POST)."""
    info = kind_info(kind)
    managed, _ = _decode_live_or_new(None, requested, subresource="")
    managed = _same_version(managed, info.api_version)
    key = manager_key(manager, "Update", info.api_version, "")
    managed = _update(info, info.zero, obj, managed, key, now, "")
    return encode(managed)


def on_update(kind: res.ResourceKind, old: dict[str, Any], new: dict[str, Any], *, manager: str,
              subresource: str, now: str, requested: Any = None) -> list[dict[str, Any]] | None:
    """managedFields after an Update operation (PUT, PATCH, status and scale writes).

    `requested` is what the request carried in metadata.managedFields: it replaces the live entries
    when it differs from them and decodes (an empty list resets them), except on subresources."""
    info = kind_info(kind)
    live_entries = (old.get("metadata") or {}).get("managedFields")
    decoded, from_live = _decode_live_or_new(live_entries, requested, subresource=subresource)
    if not decoded:
        return None  # upstream tracks no fields of an existing object that has none
    managed = _same_version(decoded, info.api_version)
    key = manager_key(manager, "Update", info.api_version, subresource)
    out = _update(info, old, new, managed, key, now, subresource)
    if out is decoded and from_live:
        return live_entries  # nothing changed: the stored entries as they were
    return encode(out)


# ---------------------------------------------------------------------------------------------------------
# Apply


class Conflicts(Exception):
    def __init__(self, conflicts: dict[Key, Set]) -> None:
        super().__init__("conflicts")
        self.conflicts = conflicts

    def items(self) -> list[tuple[Key, tuple[str, ...]]]:
        out: list[tuple[Key, tuple[str, ...]]] = []
        for k in sorted(self.conflicts, key=_identifier):
            out.extend((k, p) for p in fp.paths(self.conflicts[k]))
        return out

    def error(self) -> errors.Conflict:
        """`NewConflictError`: 409 Conflict, one FieldManagerConflict cause per field."""
        items = self.items()
        causes = [{"reason": "FieldManagerConflict", "message": f"conflict with {_print_manager(k)}",
                   "field": fp.path_string(p)} for k, p in items]
        if len(items) == 1:
            k, p = items[0]
            message = f"Apply failed with 1 conflict: conflict with {_print_manager(k)}: {fp.path_string(p)}"
        else:
            lines = []
            for k in sorted(self.conflicts, key=_identifier):
                lines.append(f"conflicts with {_print_manager(k)}:")
                lines.extend(f"- {fp.path_string(p)}" for p in fp.paths(self.conflicts[k]))
            message = f"Apply failed with {len(items)} conflicts: " + "\n".join(lines)
        return errors.Conflict(message, details={"causes": causes})


def _print_manager(k: Key) -> str:
    manager, op, api_version, sub = k
    out = fp.go_quote(manager)
    if sub:
        out += f" with subresource {fp.go_quote(sub)}"
    if op == "Update":
        out += f" using {api_version}"
    return out


def check_apply_config(kind: res.ResourceKind, config: dict[str, Any]) -> None:
    """What the field manager checks of an applied configuration before merging it (400s)."""
    api_version = config.get("apiVersion")
    ckind = config.get("kind")
    if api_version != kind.api_version or ckind != kind.kind:
        gv = api_version if isinstance(api_version, str) else ""
        group, _, version = gv.rpartition("/") if "/" in gv else ("", "", gv)
        k = ckind if isinstance(ckind, str) else ""
        raise errors.BadRequest(f"invalid object type: {group}/{version}, Kind={k}")
    meta = config.get("metadata")
    if isinstance(meta, dict) and meta.get("managedFields") is not None:
        raise errors.BadRequest("metadata.managedFields must be nil")


def on_apply(kind: res.ResourceKind, live: dict[str, Any] | None, config: dict[str, Any], *, manager: str,
             subresource: str, force: bool, now: str, namespace: str = "", name: str = ""
             ) -> tuple[dict[str, Any], list[dict[str, Any]] | None]:
    """Server-side apply of `config` to `live` (None: the object is being created).

    Returns the object to store (the live object itself when nothing changes but managedFields) and
    its managedFields. Raises errors.Conflict (409) on conflicts, errors.InternalError (500) when the
    configuration does not fit the schema, as upstream's typed conversion does."""
    info = kind_info(kind)
    config_set, errs = field_set(config, info.root)
    if errs:
        text = errs[0] if len(errs) == 1 else "errors:\n" + "\n".join("  " + e for e in errs)
        raise errors.InternalError(f"failed to create typed patch object ({namespace}/{name}; {info.gvk}): "
                                   f"{text}")
    if live is None:
        base: dict[str, Any] = {}
        managed: Managed = {}
    else:
        base = live
        try:
            managed = decode((live.get("metadata") or {}).get("managedFields"), trusted=True)
        except (ValueError, TypeError) as exc:
            raise errors.InternalError(f"failed to decode managed fields: {exc}") from None
        managed = _same_version(managed, info.api_version)
        if not managed:
            # skipNonAppliedManager: what is there now belongs to "before-first-apply".
            key0 = manager_key("before-first-apply", "Update", info.api_version, subresource)
            managed = _update(info, info.zero, live, {}, key0, now, subresource)
    flt = info.filter(subresource)
    if flt is not None:
        config_set = flt(config_set)
    key = manager_key(manager, "Apply", info.api_version, subresource)
    try:
        new, out = _apply(info, base, config, config_set, managed, key, force, now, subresource)
    except Conflicts as exc:
        if manager != "kubectl" or live is None:
            raise exc.error() from None
        allowed = _allowed_from_last_applied(info, live)
        if allowed is None:
            raise exc.error() from None
        remaining = {k: r for k, c in exc.conflicts.items() if (r := fp.difference(c, allowed))}
        if remaining:
            raise Conflicts(remaining).error() from None
        new, out = _apply(info, base, config, config_set, managed, key, True, now, subresource)
    if manager == "kubectl" and _has_last_applied(new):
        new = _set_last_applied(new, config)
    return new, encode(out)


def _apply(info: KindInfo, live: dict[str, Any], config: dict[str, Any], config_set: Set, managed: Managed,
           key: Key, force: bool, now: str, subresource: str) -> tuple[dict[str, Any], Managed]:
    root = info.root
    # The merged object takes subtrees of the configuration: a copy, since the store goes on to default
    # and normalize the result in place and may call this again on a retry.
    merged = _merge(live, msgspec.json.decode(msgspec.json.encode(config)), root)
    last = managed.get(key)
    out: Managed = dict(managed)
    entry = Entry(manager=key[0], operation="Apply", api_version=info.api_version, subresource=key[3],
                  fields=config_set, time=last.time if last is not None else None)
    out[key] = entry
    if last is not None and last.fields:
        candidates = fp.difference(_ensure_named(last.fields, root), _ensure_named(config_set, root))
        candidates = fp.difference(candidates, _ALWAYS_OWNED)
        for k, e in out.items():
            if not candidates:
                break
            if k != key:
                candidates = fp.difference(candidates, _ensure_named(e.fields, root))
        if candidates:
            merged = _remove(merged, candidates, root) or {}
    others = [k for k in out if k != key]
    if others:
        add, mod, rem = compare(live, merged, root)
        flt = info.filter(subresource)
        if flt is not None:
            add, mod, rem = flt(add), flt(mod), flt(rem)
        touched = fp.union(add, mod)
        conflicts: dict[Key, Set] = {}
        if touched:
            for k in others:
                c = fp.intersection(out[k].fields, touched)
                if c:
                    conflicts[k] = c
        if conflicts and not force:
            raise Conflicts(conflicts)
        for k in others:
            e = out[k]
            rest = fp.difference(e.fields, conflicts[k]) if k in conflicts else e.fields
            rest = fp.difference(rest, rem)
            if rest is e.fields:
                continue
            if rest:
                out[k] = e.with_fields(rest)
            else:
                del out[k]
    changed = merged != live
    if not config_set:
        del out[key]
    elif changed:
        out[key] = entry.with_fields(config_set, time=now)
    if last is not None and key in out and last.fields == config_set and last.time == out[key].time:
        out[key] = last  # unchanged: keep the stored entry
    return (merged if changed else live), out


_ALWAYS_OWNED: Set = {"f:apiVersion": {}, "f:kind": {},
                      "f:metadata": {SELF: {}, "f:name": {}, "f:namespace": {}}}


def _allowed_from_last_applied(info: KindInfo, live: dict[str, Any]) -> Set | None:
    """lastAppliedManager: conflicts on fields that the client-side last-applied configuration set to
    their live values are no conflicts for "kubectl"."""
    annotations = (live.get("metadata") or {}).get("annotations") or {}
    text = annotations.get(LAST_APPLIED)
    if not text or not isinstance(text, str):
        return None
    try:
        last = msgspec.json.decode(text)
    except msgspec.DecodeError:
        return None
    if not isinstance(last, dict) or last.get("apiVersion") != info.api_version:
        return None
    last_set, errs = field_set(last, info.root)
    if errs:
        return None
    add, mod, rem = compare(last, live, info.root)
    return fp.difference(fp.difference(fp.difference(last_set, mod), add), rem)


def _has_last_applied(obj: dict[str, Any]) -> bool:
    annotations = (obj.get("metadata") or {}).get("annotations")
    return isinstance(annotations, dict) and bool(annotations.get(LAST_APPLIED))


def last_applied_value(config: dict[str, Any]) -> str:
    """`buildLastApplied`: the applied configuration without the annotation, as Go encodes it."""
    cfg = dict(config)
    meta = cfg.get("metadata")
    if isinstance(meta, dict):
        meta = dict(meta)
        annotations = meta.get("annotations")
        if isinstance(annotations, dict):
            annotations = {k: v for k, v in annotations.items() if k != LAST_APPLIED}
            meta["annotations"] = annotations
        elif annotations is None and "annotations" in meta:
            del meta["annotations"]
        cfg["metadata"] = meta
    return fp.go_json(cfg, sort_keys=True) + "\n"


def _set_last_applied(obj: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    obj = dict(obj)
    meta = dict(obj.get("metadata") or {})
    annotations = dict(meta.get("annotations") or {})
    annotations[LAST_APPLIED] = last_applied_value(config)
    if sum(len(k) + len(v) for k, v in annotations.items() if isinstance(v, str)) > _ANNOTATIONS_MAX:
        del annotations[LAST_APPLIED]
    meta["annotations"] = annotations
    obj["metadata"] = meta
    return obj


def same_entries(a: Any, b: Any) -> bool:
    """Whether two managedFields lists are equal but for their timestamps (upstream's
    IgnoreManagedFieldsTimestampsTransformer, which keeps such writes from bumping the resourceVersion)."""
    if a == b:
        return True
    if not isinstance(a, list) or not isinstance(b, list) or len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if not isinstance(x, dict) or not isinstance(y, dict):
            return False
        if {k: v for k, v in x.items() if k != "time"} != {k: v for k, v in y.items() if k != "time"}:
            return False
    return True
