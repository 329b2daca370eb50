"""Server-side apply and managedFields bookkeeping, as sigs.k8s.io/structured-merge-diff and the
apiserver's field manager (`k8s.io/apimachinery/pkg/util/managedfields/internal`) do them.

Objects are typed by the official 1.37 schemas and walked (field sets, comparison, merge, removal) by
`cp.typed`; the managedFields entries are `cp.managedfields`. This module holds the per-kind information
(root type, reset fields, the zero object) and the two operations.

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

from collections.abc import Callable
from typing import Any

import msgspec

from cp import errors, schemas, structure, typed
from cp import fieldpath as fp
from cp import managedfields as mf
from cp import resources as res
from cp.fieldpath import SELF, Set

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
MAX_UPDATE_MANAGERS = 10
_ANNOTATIONS_MAX = 256 * 1024

_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
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
        if kind.custom is not None:  # a custom resource: its definition's schema
            schema = kind.custom.openapi
            base = typed.compile_schema(schema) if isinstance(schema, dict) else None
            if base is not None and base.kind == typed.KIND_MAP:
                base = base.variant()
                base.fields = {**(base.fields or {}), "apiVersion": typed.SCALAR, "kind": typed.SCALAR}
        else:
            name = schemas.name_for(kind.group, kind.version, kind.kind)
            base = typed.definition(name) if name else None
        if base is None or base.kind != typed.KIND_MAP:
            base = typed.Type(typed.KIND_MAP)
            base.fields = {"apiVersion": typed.SCALAR, "kind": typed.SCALAR, "metadata": typed.definition(_OBJECT_META)}
            base.elem = typed.UNTYPED
        root = base.variant()
        root.fields = dict(base.fields)
        meta = typed.definition(_OBJECT_META).variant()
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
    if kind.custom is not None:  # per definition generation, kept with it
        made: KindInfo = kind.custom.field_info(lambda: KindInfo(kind))
        return made
    key = (kind.group, kind.version, kind.kind)
    info = _infos.get(key)
    if info is None:
        info = _infos[key] = KindInfo(kind)
    return info


def _zero_struct(t: typed.Type, depth: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if depth > 8:
        return out
    for f in t.required:
        if f in t.fields:
            out[f] = None
    for f in _VALUE_STRUCTS.get(t.name, ()):
        ft = t.fields.get(f)
        if ft is not None and ft.kind == typed.KIND_MAP and not ft.deduced:
            out[f] = _zero_struct(ft, depth + 1)
    if t.name == _OBJECT_META:
        out["creationTimestamp"] = None  # a zero metav1.Time encodes as null
    return out


def _zero_root(root: typed.Type) -> dict[str, Any]:
    out: dict[str, Any] = {"metadata": {}}
    for f in ("spec", "status"):
        ft = root.fields.get(f)
        if ft is not None and ft.kind == typed.KIND_MAP and not ft.deduced:
            out[f] = _zero_struct(ft)
    return out


# ---------------------------------------------------------------------------------------------------------
# Update operations


def _update(info: KindInfo, live: dict[str, Any], new: dict[str, Any], managed: mf.Managed, key: mf.Key,
            now: str, subresource: str) -> mf.Managed:
    """`merge.Updater.Update` behind the managed-fields updater: the writer owns what changed."""
    add, mod, rem = typed.compare(live, new, info.root)
    flt = info.filter(subresource)
    if flt is not None:
        add, mod, rem = flt(add), flt(mod), flt(rem)
    changed = fp.union(fp.union(add, mod), rem)
    if not changed:
        return managed
    out: mf.Managed = {}
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
            out[key] = mf.Entry(manager=manager, operation=op, api_version=info.api_version, subresource=sub,
                             fields=current, time=now)
        _cap_update_managers(out, info.api_version)
    return out


def _cap_update_managers(managed: mf.Managed, api_version: str) -> None:
    """`capManagersManager`: past 10 Update managers, the oldest merge into "ancient-changes"."""
    updaters = [k for k, e in managed.items() if e.operation == "Update"]
    if len(updaters) <= MAX_UPDATE_MANAGERS:
        return
    updaters.sort(key=lambda k: (managed[k].time or "", _identifier(k)))
    bucket = mf.manager_key("ancient-changes", "Update", api_version, "")
    first: mf.Key | None = None
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
            managed[bucket] = mf.Entry(manager="ancient-changes", operation="Update", api_version=f.api_version,
                                    subresource="", fields=f.fields, time=f.time)
        b = managed[bucket]
        managed[bucket] = b.with_fields(fp.union(e.fields, b.fields), time=e.time)
        del managed[k]
        length -= 1


def _identifier(k: mf.Key) -> str:
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
    managed, _ = mf.decode_live_or_new(None, requested, subresource="")
    managed = mf.same_version(managed, info.api_version)
    key = mf.manager_key(manager, "Update", info.api_version, "")
    managed = _update(info, info.zero, obj, managed, key, now, "")
    return mf.encode(managed)


def on_update(kind: res.ResourceKind, old: dict[str, Any], new: dict[str, Any], *, manager: str,
              subresource: str, now: str, requested: Any = None) -> list[dict[str, Any]] | None:
    """managedFields after an Update operation (PUT, PATCH, status and scale writes).

    `requested` is what the request carried in metadata.managedFields: it replaces the live entries
    when it differs from them and decodes (an empty list resets them), except on subresources."""
    info = kind_info(kind)
    live_entries = (old.get("metadata") or {}).get("managedFields")
    decoded, from_live = mf.decode_live_or_new(live_entries, requested, subresource=subresource)
    if not decoded:
        return None  # upstream tracks no fields of an existing object that has none
    managed = mf.same_version(decoded, info.api_version)
    key = mf.manager_key(manager, "Update", info.api_version, subresource)
    out = _update(info, old, new, managed, key, now, subresource)
    if out is decoded and from_live:
        return live_entries  # nothing changed: the stored entries as they were
    return mf.encode(out)


# ---------------------------------------------------------------------------------------------------------
# Apply


class Conflicts(Exception):
    def __init__(self, conflicts: dict[mf.Key, Set]) -> None:
        super().__init__("conflicts")
        self.conflicts = conflicts

    def items(self) -> list[tuple[mf.Key, tuple[str, ...]]]:
        out: list[tuple[mf.Key, tuple[str, ...]]] = []
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


def _print_manager(k: mf.Key) -> str:
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


def drop_unknown_fields(kind: res.ResourceKind, config: dict[str, Any], *, field_validation: str) -> list[str]:
    """An applied configuration's fields the kind's schema does not declare, under `fieldValidation`
    Warn or Ignore: removed in place (as create and update drop them), with Warn's warnings returned.
    Under Strict they stay, and `on_apply` rejects the configuration (400). Upstream answers them with a
    500 whatever the directive (kubernetes#122480); this is the fix proposed there."""
    if field_validation == "Strict":
        return []
    dropped = typed.drop_undeclared(config, kind_info(kind).root)
    return structure.unknown_field_warnings(dropped) if field_validation == "Warn" else []


def on_apply(kind: res.ResourceKind, live: dict[str, Any] | None, config: dict[str, Any], *, manager: str,
             subresource: str, force: bool, now: str, namespace: str = "", name: str = ""
             ) -> tuple[dict[str, Any], list[dict[str, Any]] | None]:
    """Server-side apply of `config` to `live` (None: the object is being created).

    Returns the object to store (the live object itself when nothing changes but managedFields) and
    its managedFields. Raises errors.Conflict (409) on conflicts, errors.BadRequest (400) when the
    configuration does not fit the schema (undeclared fields, duplicate list keys), with the text of
    upstream's typed conversion, whose error upstream lets become a 500 (kubernetes#122480)."""
    info = kind_info(kind)
    config_set, errs = typed.field_set(config, info.root)
    if errs:
        text = errs[0] if len(errs) == 1 else "errors:\n" + "\n".join("  " + e for e in errs)
        raise errors.BadRequest(f"failed to create typed patch object ({namespace}/{name}; {info.gvk}): {text}")
    if live is None:
        base: dict[str, Any] = {}
        managed: mf.Managed = {}
    else:
        base = live
        try:
            managed = mf.decode((live.get("metadata") or {}).get("managedFields"), trusted=True)
        except (ValueError, TypeError) as exc:
            raise errors.InternalError(f"failed to decode managed fields: {exc}") from None
        managed = mf.same_version(managed, info.api_version)
        if not managed:
            # skipNonAppliedManager: what is there now belongs to "before-first-apply".
            key0 = mf.manager_key("before-first-apply", "Update", info.api_version, subresource)
            managed = _update(info, info.zero, live, {}, key0, now, subresource)
    flt = info.filter(subresource)
    if flt is not None:
        config_set = flt(config_set)
    key = mf.manager_key(manager, "Apply", info.api_version, subresource)
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
    return new, mf.encode(out)


def _apply(info: KindInfo, live: dict[str, Any], config: dict[str, Any], config_set: Set, managed: mf.Managed,
           key: mf.Key, force: bool, now: str, subresource: str) -> tuple[dict[str, Any], mf.Managed]:
    root = info.root
    # The merged object takes subtrees of the configuration: a copy, since the store goes on to default
    # and normalize the result in place and may call this again on a retry.
    merged = typed.merge(live, msgspec.json.decode(msgspec.json.encode(config)), root)
    last = managed.get(key)
    out: mf.Managed = dict(managed)
    entry = mf.Entry(manager=key[0], operation="Apply", api_version=info.api_version, subresource=key[3],
                  fields=config_set, time=last.time if last is not None else None)
    out[key] = entry
    if last is not None and last.fields:
        candidates = fp.difference(typed.ensure_named(last.fields, root), typed.ensure_named(config_set, root))
        candidates = fp.difference(candidates, _ALWAYS_OWNED)
        for k, e in out.items():
            if not candidates:
                break
            if k != key:
                candidates = fp.difference(candidates, typed.ensure_named(e.fields, root))
        if candidates:
            merged = typed.remove(merged, candidates, root) or {}
    others = [k for k in out if k != key]
    if others:
        add, mod, rem = typed.compare(live, merged, root)
        flt = info.filter(subresource)
        if flt is not None:
            add, mod, rem = flt(add), flt(mod), flt(rem)
        touched = fp.union(add, mod)
        conflicts: dict[mf.Key, Set] = {}
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
    last_set, errs = typed.field_set(last, info.root)
    if errs:
        return None
    add, mod, rem = typed.compare(last, live, info.root)
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
