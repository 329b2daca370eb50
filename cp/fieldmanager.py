"""Server-side apply and managedFields bookkeeping, as sigs.k8s.io/structured-merge-diff and the
apiserver's field manager (`k8s.io/apimachinery/pkg/util/managedfields/internal`) do them.

Objects are typed by the official 1.37 schemas and walked (field sets, comparison, merge, removal) by
`cp.typed`; the managedFields entries are `cp.managedfields`. This module holds the per-kind information
(root type, reset fields, the zero object) and the two operations.

Versions: a write through another version of the stored resource (`served`: autoscaling/v1 HPAs,
events.k8s.io/v1 Events, resource.k8s.io's older versions) is tracked in that version, as upstream's
field manager works in the request's version: the writer's entry carries its apiVersion and fields by
its paths, an applied configuration is merged there. Managers of other versions are compared in
theirs, the objects converted to it (`Versions`, `cp.conversions`; structured-merge-diff's version
converter), and the removal of fields an applier stops applying adds back, in each version, what its
managers own (`_prune_versions`). Nothing is converted while the request and every manager share a
version.

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

from cp import conversions, errors, schemas, structure, typed
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
    # the other versions managers may write with (`cp.conversions`)
    "io.k8s.api.events.v1.Event": ("regarding", "deprecatedSource"),
    "io.k8s.api.autoscaling.v1.HorizontalPodAutoscalerSpec": ("scaleTargetRef",),
    **{f"io.k8s.api.resource.{v}.{name}": fields for v in ("v1beta2", "v1beta1", "v1alpha3")
       for name, fields in (("ResourceClaimSpec", ("devices",)), ("ResourceClaimTemplateSpec", ("metadata", "spec")),
                            ("ResourceSliceSpec", ("pool",)), ("DeviceTaintRuleSpec", ("taint",)))},
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


class Versions:
    """The versions of one stored resource managers can write with (`cp.conversions.versions_of`), and
    conversions of whole objects between them: what upstream's versionConverter gives the
    structured-merge-diff updater, which compares each manager's fields in the manager's version."""

    __slots__ = ("infos", "kinds", "stored")

    def __init__(self, stored: res.ResourceKind) -> None:
        self.stored = stored
        self.kinds = conversions.versions_of(stored)
        self.infos: dict[str, KindInfo] = {}

    def info(self, api_version: str) -> KindInfo | None:
        found = self.infos.get(api_version)
        if found is None:
            kind = self.kinds.get(api_version)
            if kind is None:
                return None
            found = self.infos[api_version] = kind_info(kind)
        return found

    def convert(self, obj: dict[str, Any], source: str, target: str) -> dict[str, Any] | None:
        """`obj` of apiVersion `source` as `target`'s; None for a version it cannot be converted to
        (upstream's missing-version error) or an object the conversion cannot take."""
        if source == target:
            return obj
        src, dst = self.kinds.get(source), self.kinds.get(target)
        if src is None or dst is None:
            return None
        try:
            return conversions.convert(obj, stored=self.stored, source=src, target=dst)
        except (KeyError, TypeError, ValueError, AttributeError):
            return None


_versions: dict[tuple[str, str], Versions] = {}


def versions(stored: res.ResourceKind) -> Versions:
    if stored.custom is not None:
        return Versions(stored)
    key = (stored.group, stored.plural)
    found = _versions.get(key)
    if found is None:
        found = _versions[key] = Versions(stored)
    return found


class _Forms:
    """One object in the versions of its resource, converted on demand from the first form given."""

    __slots__ = ("by", "first", "origin", "vs")

    def __init__(self, vs: Versions, api_version: str, obj: dict[str, Any]) -> None:
        self.vs = vs
        self.origin = api_version
        self.first = obj
        self.by: dict[str, dict[str, Any] | None] = {api_version: obj}

    def at(self, api_version: str) -> dict[str, Any] | None:
        if api_version in self.by:
            return self.by[api_version]
        out = self.by[api_version] = self.vs.convert(self.first, self.origin, api_version)
        return out


class _Changes:
    """`Compare` of an old and a new object in any version of the resource, filtered by that version's
    reset fields (the request's version first; the others converted only when a manager needs them)."""

    __slots__ = ("by", "new", "old", "subresource", "vs")

    def __init__(self, vs: Versions, old: _Forms, new: _Forms, subresource: str) -> None:
        self.vs = vs
        self.old = old
        self.new = new
        self.subresource = subresource
        self.by: dict[str, tuple[Set, Set, Set] | None] = {}

    def at(self, api_version: str) -> tuple[Set, Set, Set] | None:
        """(added, modified, removed) in `api_version`'s field paths; None where it cannot be converted."""
        if api_version in self.by:
            return self.by[api_version]
        info = self.vs.info(api_version)
        old, new = self.old.at(api_version), self.new.at(api_version)
        out: tuple[Set, Set, Set] | None = None
        if info is not None and old is not None and new is not None:
            add, mod, rem = typed.compare(old, new, info.root)
            flt = info.filter(self.subresource)
            out = (flt(add), flt(mod), flt(rem)) if flt is not None else (add, mod, rem)
        self.by[api_version] = out
        return out


def _request_info(kind: res.ResourceKind, served: res.ResourceKind | None) -> tuple[Versions, KindInfo]:
    """The stored resource's versions and the request's KindInfo (custom resources: their stored
    version's, as every manager of theirs is recorded there)."""
    vs = versions(kind)
    if served is not None and kind.custom is None:
        found = vs.kinds.get(served.api_version)
        if found is not None and found.plural == kind.plural:
            return vs, kind_info(found)
    if kind.custom is not None:
        return vs, kind_info(kind)
    info = vs.info(kind.api_version)
    assert info is not None
    return vs, info


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


def _update(info: KindInfo, vs: Versions, live: dict[str, Any], new: dict[str, Any], managed: mf.Managed,
            key: mf.Key, now: str, subresource: str) -> mf.Managed:
    """`merge.Updater.Update` behind the managed-fields updater: the writer owns what changed between
    `live` and `new` (of the request's version). Every other manager loses what changed, compared in
    the manager's own version: both objects converted there from the request's, as upstream does (so
    what a round trip through the request's version changes, a reordered list, is no change)."""
    add, mod, rem = typed.compare(live, new, info.root)
    flt = info.filter(subresource)
    if flt is not None:
        add, mod, rem = flt(add), flt(mod), flt(rem)
    changed = fp.union(fp.union(add, mod), rem)
    if not changed:
        return managed
    out: mf.Managed = {}
    changes: _Changes | None = None
    for k, e in managed.items():
        if e.api_version == info.api_version:
            theirs = changed
        else:
            if changes is None:
                changes = _changes(vs, info, live, new, subresource)
            there = changes.at(e.api_version)
            if there is None:
                continue  # a version the object cannot be converted to: dropped, as upstream
            theirs = fp.union(fp.union(there[0], there[1]), there[2])
        rest = fp.difference(e.fields, theirs)
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
        _cap_update_managers(out)
    return out


def _changes(vs: Versions, info: KindInfo, old: dict[str, Any], new: dict[str, Any], subresource: str) -> _Changes:
    return _Changes(vs, _Forms(vs, info.api_version, old), _Forms(vs, info.api_version, new), subresource)


def _cap_update_managers(managed: mf.Managed) -> None:
    """`capManagersManager`: past 10 Update managers, the oldest merge into "ancient-changes", one
    bucket per apiVersion (each version's oldest manager starts its bucket)."""
    updaters = [k for k, e in managed.items() if e.operation == "Update"]
    if len(updaters) <= MAX_UPDATE_MANAGERS:
        return
    updaters.sort(key=lambda k: (managed[k].time or "", _identifier(k)))
    first: dict[str, mf.Key] = {}
    length = len(updaters)
    for k in updaters:
        if length <= MAX_UPDATE_MANAGERS:
            break
        e = managed[k]
        version = e.api_version
        if version not in first:
            first[version] = k
            continue
        bucket = mf.manager_key("ancient-changes", "Update", version, "")
        if k == bucket:
            continue  # upstream would merge the bucket into itself and then delete it
        if bucket not in managed:
            f = managed.pop(first[version])
            managed[bucket] = mf.Entry(manager="ancient-changes", operation="Update", api_version=version,
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
              requested: Any = None, served: res.ResourceKind | None = None) -> list[dict[str, Any]] | None:
    """managedFields of an object being created by an Update operation (POST). `kind` is the stored
    kind and `obj` of its version; `served`, the version the request was written in, is the version
    the creator's fields are recorded in."""
    vs, info = _request_info(kind, served)
    managed, _ = mf.decode_live_or_new(None, requested, subresource="")
    managed = mf.known_versions(managed, vs.kinds)
    key = mf.manager_key(manager, "Update", info.api_version, "")
    new = obj if info.api_version == kind.api_version else vs.convert(obj, kind.api_version, info.api_version)
    if new is None:
        return None
    managed = _update(info, vs, info.zero, new, managed, key, now, "")
    return mf.encode(managed)


def on_update(kind: res.ResourceKind, old: dict[str, Any], new: dict[str, Any], *, manager: str,
              subresource: str, now: str, requested: Any = None,
              served: res.ResourceKind | None = None) -> list[dict[str, Any]] | None:
    """managedFields after an Update operation (PUT, PATCH, status and scale writes) of the stored
    kind's objects `old` and `new`, written in `served`'s version (None: the stored one).

    `requested` is what the request carried in metadata.managedFields: it replaces the live entries
    when it differs from them and decodes (an empty list resets them), except on subresources."""
    vs, info = _request_info(kind, served)
    live_entries = (old.get("metadata") or {}).get("managedFields")
    decoded, from_live = mf.decode_live_or_new(live_entries, requested, subresource=subresource)
    if not decoded:
        return None  # upstream tracks no fields of an existing object that has none
    managed = mf.known_versions(decoded, vs.kinds)
    key = mf.manager_key(manager, "Update", info.api_version, subresource)
    if info.api_version == kind.api_version:
        out = _update(info, vs, old, new, managed, key, now, subresource)
    else:  # compared in the request's version
        old_r = vs.convert(old, kind.api_version, info.api_version)
        new_r = vs.convert(new, kind.api_version, info.api_version)
        if old_r is None or new_r is None:
            return live_entries if from_live else mf.encode(decoded)
        out = _update(info, vs, old_r, new_r, managed, key, now, subresource)
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
             subresource: str, force: bool, now: str, namespace: str = "", name: str = "",
             served: res.ResourceKind | None = None) -> tuple[dict[str, Any], list[dict[str, Any]] | None]:
    """Server-side apply of `config` to `live` (None: the object is being created).

    `kind` is the stored kind and `live` of its version; `config` is of `served`'s version (None: the
    stored one), where it is merged, as upstream merges in the request's version, and the manager's
    fields are recorded there. Returns the object to store, of the stored version (the live object
    itself when nothing changes but managedFields), and its managedFields. Raises errors.Conflict (409)
    on conflicts, errors.BadRequest (400) when the configuration does not fit the schema (undeclared
    fields, duplicate list keys), with the text of upstream's typed conversion, whose error upstream
    lets become a 500 (kubernetes#122480)."""
    vs, info = _request_info(kind, served)
    stored = kind.api_version
    config_set, errs = typed.field_set(config, info.root)
    if errs:
        text = errs[0] if len(errs) == 1 else "errors:\n" + "\n".join("  " + e for e in errs)
        raise errors.BadRequest(f"failed to create typed patch object ({namespace}/{name}; {info.gvk}): {text}")
    if live is None:
        base: dict[str, Any] = {}
        managed: mf.Managed = {}
    else:
        converted = live if info.api_version == stored else vs.convert(live, stored, info.api_version)
        if converted is None:
            raise errors.InternalError(f"failed to convert the live object to {info.api_version}")
        base = converted
        try:
            managed = mf.decode((live.get("metadata") or {}).get("managedFields"), trusted=True)
        except (ValueError, TypeError) as exc:
            raise errors.InternalError(f"failed to decode managed fields: {exc}") from None
        managed = mf.known_versions(managed, vs.kinds)
        if not managed:
            # skipNonAppliedManager: what is there now belongs to "before-first-apply".
            key0 = mf.manager_key("before-first-apply", "Update", info.api_version, subresource)
            managed = _update(info, vs, info.zero, base, {}, key0, now, subresource)
    flt = info.filter(subresource)
    if flt is not None:
        config_set = flt(config_set)
    key = mf.manager_key(manager, "Apply", info.api_version, subresource)
    try:
        new, out = _apply(vs, info, base, config, config_set, managed, key, force, now, subresource)
    except Conflicts as exc:
        if manager != "kubectl" or live is None:
            raise exc.error() from None
        allowed = _allowed_from_last_applied(info, base)
        if allowed is None:
            raise exc.error() from None
        remaining = {k: r for k, c in exc.conflicts.items() if (r := fp.difference(c, allowed))}
        if remaining:
            raise Conflicts(remaining).error() from None
        new, out = _apply(vs, info, base, config, config_set, managed, key, True, now, subresource)
    if manager == "kubectl" and _has_last_applied(new):
        new = _set_last_applied(new, config)
    if new is base and live is not None:
        return live, mf.encode(out)
    if info.api_version != stored:
        back = vs.convert(new, info.api_version, stored)
        if back is None:
            raise errors.InternalError(f"failed to convert the applied object to {stored}")
        new = back
    return new, mf.encode(out)


def _apply(vs: Versions, info: KindInfo, live: dict[str, Any], config: dict[str, Any], config_set: Set,
           managed: mf.Managed, key: mf.Key, force: bool, now: str, subresource: str
           ) -> tuple[dict[str, Any], mf.Managed]:
    root = info.root
    here = info.api_version
    # The merged object takes subtrees of the configuration: a copy, since the store goes on to default
    # and normalize the result in place and may call this again on a retry.
    merged = typed.merge(live, msgspec.json.decode(msgspec.json.encode(config)), root)
    last = managed.get(key)
    out: mf.Managed = dict(managed)
    entry = mf.Entry(manager=key[0], operation="Apply", api_version=here, subresource=key[3],
                  fields=config_set, time=last.time if last is not None else None)
    out[key] = entry
    if last is not None and last.fields:
        if all(e.api_version == here for e in managed.values()):
            candidates = fp.difference(typed.ensure_named(last.fields, root), typed.ensure_named(config_set, root))
            candidates = fp.difference(candidates, _ALWAYS_OWNED)
            for k, e in out.items():
                if not candidates:
                    break
                if k != key:
                    candidates = fp.difference(candidates, typed.ensure_named(e.fields, root))
            if candidates:
                merged = typed.remove(merged, candidates, root) or {}
        else:
            merged = _prune_versions(vs, here, merged, last, out)
    others = [k for k in out if k != key]
    if others:
        changes = _changes(vs, info, live, merged, subresource)
        conflicts: dict[mf.Key, Set] = {}
        removed: dict[mf.Key, Set] = {}
        for k in others:
            e = out[k]
            there = changes.at(e.api_version)
            if there is None:
                removed[k] = e.fields  # a version the object cannot be converted to: dropped
                continue
            add, mod, rem = there
            touched = fp.union(add, mod)
            c = fp.intersection(e.fields, touched) if touched else {}
            if c:
                conflicts[k] = c
            if rem:
                removed[k] = rem
        if conflicts and not force:
            raise Conflicts(conflicts)
        for k in others:
            e = out[k]
            rest = fp.difference(e.fields, conflicts[k]) if k in conflicts else e.fields
            if k in removed:
                rest = fp.difference(rest, removed[k])
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
    if last is not None and key in out and last.fields == config_set and last.time == out[key].time \
            and last.api_version == here:
        out[key] = last  # unchanged: keep the stored entry
    return (merged if changed else live), out


def _object_set(obj: dict[str, Any], info: KindInfo) -> Set:
    """`ToFieldSet` of a whole object, struct fields leading to members made members."""
    s, _ = typed.field_set(obj, info.root)
    return typed.ensure_named(s, info.root)


def _prune_versions(vs: Versions, here: str, merged: dict[str, Any], last: mf.Entry, managed: mf.Managed
                    ) -> dict[str, Any]:
    """structured-merge-diff's `prune` when managers hold fields in several versions: in the version
    the applier last applied with, what it applied before is removed from the merged object; in each
    version managers hold fields in, what they own is added back; what the removal took and the last
    configuration had is removed from the merged object (so nothing another version's manager owns
    goes), and the result converted back to the request's version."""
    at = last.api_version
    info_l = vs.info(at)
    merged_l = vs.convert(merged, here, at)
    if info_l is None or merged_l is None:
        return merged
    last_set = typed.ensure_named(last.fields, info_l.root)
    owned: dict[str, Set] = {}
    for e in managed.values():
        owned[e.api_version] = fp.union(owned[e.api_version], e.fields) if e.api_version in owned else e.fields
    pruned: dict[str, Any] = typed.remove(merged_l, last_set, info_l.root) or {}
    current, merged_v = at, merged_l
    for version in sorted(owned, key=lambda v: v != at):  # the last applied version first
        info_v = vs.info(version)
        m = vs.convert(merged_v, current, version)
        p = vs.convert(pruned, current, version)
        if info_v is None or m is None or p is None:
            continue
        keep = fp.union(_object_set(p, info_v), typed.ensure_named(owned[version], info_v.root))
        pruned = typed.remove(m, fp.difference(_object_set(m, info_v), keep), info_v.root) or {}
        current, merged_v = version, m
    pruned_l = vs.convert(pruned, current, at)
    if pruned_l is None:
        return merged
    gone = fp.intersection(fp.difference(_object_set(merged_l, info_l), _object_set(pruned_l, info_l)), last_set)
    gone = fp.difference(gone, _ALWAYS_OWNED)
    if not gone:
        return merged
    result = typed.remove(merged_l, gone, info_l.root) or {}
    back = vs.convert(result, at, here)
    return back if back is not None else merged


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
