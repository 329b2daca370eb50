"""Bringing another cluster's objects into an event log: the part every way in shares — a recording of a
live cluster (`cplane record`), a dump (`cplane log import --dump`) and an audit log (`cplane log
import --audit`).

A source yields `Change`s: an object as the cluster had it (any served version of a kind cplane serves),
or the deletion of one, with when and by whom. `Sequencer` turns them into the log's events:

- the object is read as its stored version (`cp.conversions`); a custom resource is taken when a
  CustomResourceDefinition seen before defines its kind (stored with the definition's storage version,
  as the `None` conversion strategy does); an object of any other kind is counted per kind in
  `Sequencer.skipped`, not guessed at;
- with `defaults`, a built-in object gets its stored version's defaults, as the API server would have
  given it (a hand-written dump's claim without `allocationMode`); what a server wrote (a recording, an
  audit log's responses, `kubectl get`) has them already;
- Secret and ConfigMap values are redacted unless `keep_secrets` (`redact`);
- revisions are consecutive from 1 and each object's `metadata.resourceVersion` is its event's revision
  (the log's invariant); the source's own resourceVersion (or audit ID) travels in the event's
  `Actor.request_id` as `source=...` so that nothing of the object is changed but its version; a
  change with a new source version is an event even when the object reads the same (a Secret whose
  redacted value changed);
- a put of a key that does not exist (or was deleted) is ADDED, of a live key MODIFIED, and of a live
  key with another uid the DELETED of the old object followed by the ADDED of the new; a put equal to
  the live object at the same source version (or without one) is dropped (`unchanged`), and so is a
  server's object at the resourceVersion the live one already has (`Change.version`: a no-op update);
  the deletion of a key that is not live is counted in `Sequencer.missed_deletes` and writes nothing.

Memory: one entry per key ever seen (its revision and uid, and while it lives its last object, to write
a deletion). Pure.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from cp import conversions, defaulting
from cp import resources as res

REDACTED = "REDACTED"
# The kinds whose values `redact` replaces: (group, kind) -> the fields holding values.
_SECRET_FIELDS: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "Secret"): ("data", "stringData"),
    ("", "ConfigMap"): ("data", "binaryData"),
}
# The annotation kubectl writes with the whole last applied object: a Secret's holds its values.
_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


class ImportError_(ValueError):
    """A change that cannot be read (no apiVersion, kind or name); the source says where."""


class PeekMeta(msgspec.Struct, frozen=True, gc=False):
    name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = msgspec.field(default=None, name="resourceVersion")
    deletion_timestamp: str | None = msgspec.field(default=None, name="deletionTimestamp")
    deletion_grace_period_seconds: int | None = msgspec.field(default=None, name="deletionGracePeriodSeconds")
    finalizers: list[str] | None = None


class Peek(msgspec.Struct, frozen=True, gc=False):
    """The fields of an object an import reads, decoded without the rest (`Encoded`); a field that is
    absent (or null) is None, as `dict.get` gives it."""

    api_version: str | None = msgspec.field(default=None, name="apiVersion")
    kind: str | None = None
    metadata: PeekMeta | None = None


_peek_decoder = msgspec.json.Decoder(Peek)


class Encoded(msgspec.Struct, frozen=True, gc=False):
    """An object as JSON (`raw`, as the source wrote it) with the fields read from it (`peek`). The
    sequencer stores such an object by rewriting its resourceVersion in the JSON, without decoding
    the rest (an audit log's responses: decoding each into dicts and encoding it again was a third
    of an import's work), and decodes it only where it must change more (a conversion, redaction)."""

    raw: bytes
    peek: Peek


def encoded(raw: bytes) -> Encoded | None:
    """`raw` with its fields peeked, or None when it is not a JSON object whose peeked fields have
    their types (the caller decodes it whole: the same errors and results as before)."""
    try:
        return Encoded(raw, _peek_decoder.decode(raw))
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None


def decoded(obj: dict[str, Any] | Encoded) -> dict[str, Any]:
    """The object as a dict."""
    if isinstance(obj, Encoded):
        out: dict[str, Any] = msgspec.json.decode(obj.raw)
        return out
    return obj


def _with_version(raw: bytes, old: str, new: str) -> bytes | None:
    """`raw` with its metadata.resourceVersion `old` written as `new`, or None when that cannot be
    done exactly in the text: the compact `"resourceVersion":"OLD"` is not there exactly once, or
    the result's metadata does not read `new` (another field's text matched)."""
    pattern = b'"resourceVersion":' + msgspec.json.encode(old)
    at = raw.find(pattern)
    if at < 0 or raw.find(pattern, at + 1) >= 0:
        return None
    out = b"".join((raw[:at], b'"resourceVersion":"', new.encode(), b'"', raw[at + len(pattern):]))
    try:
        meta = _peek_decoder.decode(out).metadata
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    return out if meta is not None and meta.resource_version == new else None


class Change(msgspec.Struct, frozen=True, kw_only=True):
    """One observed change of another cluster. `object` is the object after the change (for a
    deletion, the object as last seen, or only its apiVersion, kind and metadata naming it),
    decoded or `Encoded`."""

    deleted: bool = False
    object: dict[str, Any] | Encoded
    time: float  # unix seconds
    user: str = ""
    user_agent: str = ""
    field_manager: str = ""
    source: str = ""  # the source's resourceVersion, or an audit ID
    resync: bool = False  # found by a relist after a watch expired (the change between is unknown)
    # The object's resourceVersion when the object is the server's own (an audit log's response): a
    # change at the version the live object already has wrote nothing (a no-op update) and is dropped.
    version: str = ""
    # A subresource write whose result the source does not show as the object (an audit log's
    # `pods/binding` answers a Status, `deployments/scale` a Scale): `object` names the object, and the
    # sequencer applies `written` (the Binding, the Scale) to the live one (`applied`).
    subresource: str = ""
    written: dict[str, Any] | None = None


# The built-in kinds whose scale subresource is their `spec.replicas`.
SCALED = frozenset({("apps", "Deployment"), ("apps", "StatefulSet"), ("apps", "ReplicaSet"),
                    ("", "ReplicationController")})


def applied(kind: res.ResourceKind, obj: dict[str, Any], subresource: str, written: Mapping[str, Any],
            *, time: float, manager: str) -> dict[str, Any] | None:
    """`obj` as the write `written` of its `subresource` by `manager` at `time` leaves it (a copy), as
    the API server writes it, or None for a subresource this cannot apply: a Binding to a pod
    (`cp.strategies.core.bind_pod`), a Scale to a built-in workload (`SCALED`: its `spec.replicas`,
    a new generation, and the manager's `scale` entry in managedFields)."""
    if subresource == "binding" and (kind.group, kind.kind) == ("", "Pod"):
        from cp.strategies import core

        return core.bind_pod(obj, dict(written), now=time)
    replicas = (written.get("spec") or {}).get("replicas")
    if subresource != "scale" or (kind.group, kind.kind) not in SCALED or not isinstance(replicas, int) \
            or isinstance(replicas, bool):
        return None
    spec = obj.get("spec") or {}
    if spec.get("replicas") == replicas:
        return dict(obj)
    from cp import clock, fieldmanager

    out = {**obj, "spec": {**spec, "replicas": replicas}}
    meta = dict(obj.get("metadata") or {})
    meta["generation"] = int(meta.get("generation") or 1) + 1
    managed = fieldmanager.on_update(kind, obj, out, manager=manager, subresource="scale", now=clock.rfc3339(time))
    if managed:
        meta["managedFields"] = managed
    out["metadata"] = meta
    return out


class Event(msgspec.Struct, frozen=True, kw_only=True, gc=False, array_like=True):
    """An event for the log, numbered (`storage.importing` writes them). Scalars and bytes only, so not
    tracked by the cyclic collector (an import makes a million of them). Encoded as an array of its
    fields in this order, which is the order of the store's row (`storage.importing.row`): what a
    worker process sends can be decoded straight into rows."""

    revision: int
    type: str  # ADDED, MODIFIED, DELETED
    group: str
    resource: str
    namespace: str
    name: str
    uid: str
    prev_revision: int
    time: float
    user: str
    field_manager: str
    user_agent: str
    request_id: str
    object: bytes


def redact(group: str, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    """`obj` with the values of a Secret or ConfigMap replaced by `REDACTED` (keys kept), and without
    kubectl's last-applied annotation, which repeats them; other kinds unchanged (the same object)."""
    fields = _SECRET_FIELDS.get((group, kind))
    if fields is None:
        return obj
    out = dict(obj)
    for field in fields:
        values = out.get(field)
        if isinstance(values, dict):
            out[field] = {key: REDACTED for key in values}
    meta = out.get("metadata")
    if isinstance(meta, dict) and isinstance(meta.get("annotations"), dict) \
            and _LAST_APPLIED in meta["annotations"]:
        annotations = {k: v for k, v in meta["annotations"].items() if k != _LAST_APPLIED}
        out["metadata"] = {**meta, "annotations": annotations}
        if not annotations:
            del out["metadata"]["annotations"]
    return out


def resolve(obj: Mapping[str, Any]) -> tuple[res.ResourceKind, dict[str, Any]] | None:
    """The stored kind of `obj` and `obj` as its stored version, or None for a kind cplane does not
    serve. Raises `ImportError_` for an object without apiVersion or kind."""
    api_version, kind_name = obj.get("apiVersion"), obj.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind_name, str) or not api_version or not kind_name:
        raise ImportError_("an object needs apiVersion and kind")
    found = _served(api_version, kind_name)
    if found is None:
        return None
    served, stored_kind = found
    body = dict(obj)
    if served is not stored_kind:
        body = conversions.to_storage(served, body)
    return stored_kind, body


@functools.cache
def _served(api_version: str, kind_name: str) -> tuple[res.ResourceKind, res.ResourceKind] | None:
    """The built-in kind served as `api_version` `kind_name` and its stored kind (one look-up per
    version and kind: an import asks for each of its objects)."""
    group, _, version = api_version.rpartition("/")
    served = next((k for k in res.SERVED if k.group == group and k.version == version and k.kind == kind_name),
                  None)
    if served is None:
        stored = res.by_kind(group, kind_name)
        if stored is None:
            return None
        served = stored
        if stored.version != version:
            optional = next((k for k in res.OPTIONAL if k.group == group and k.version == version
                             and k.kind == kind_name), None)
            if optional is None:
                return None
            served = optional
    return served, res.storage_kind(served)


class _Custom(msgspec.Struct, frozen=True):
    plural: str
    namespaced: bool
    storage_version: str


def _custom_kinds(crd: Mapping[str, Any]) -> dict[tuple[str, str], _Custom]:
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group, kind, plural = spec.get("group"), names.get("kind"), names.get("plural")
    if not (isinstance(group, str) and isinstance(kind, str) and isinstance(plural, str)):
        return {}
    versions = [v for v in spec.get("versions") or () if isinstance(v, Mapping)]
    storage = next((str(v.get("name")) for v in versions if v.get("storage")), str(versions[0].get("name"))
                   if versions else "")
    return {(group, kind): _Custom(plural=plural, namespaced=spec.get("scope") != "Cluster",
                                   storage_version=storage)}


class _Head(msgspec.Struct):
    revision: int
    uid: str
    live: bool
    # The stored object: a dict, or its JSON (an `Encoded` change's, whose resourceVersion is `revision`).
    object: dict[str, Any] | bytes
    source: str = ""
    version: str = ""  # the change's `version`


class Sequencer:
    """Numbers a cluster's changes as the log's events (see the module)."""

    def __init__(self, *, keep_secrets: bool = False, first_revision: int = 1, defaults: bool = False) -> None:
        self.keep_secrets = keep_secrets
        self.defaults = defaults
        self.revision = first_revision - 1
        self.skipped: dict[str, int] = {}  # "Kind.group" -> changes of kinds cplane does not serve
        self.missed_deletes = 0
        self.missed_subresources = 0  # subresource writes (`Change.written`) to objects not live
        self.unchanged = 0
        self._heads: dict[tuple[str, str, str, str], _Head] = {}
        self._custom: dict[tuple[str, str], _Custom] = {}  # the custom kinds of the definitions seen

    def resume(self, kind: res.ResourceKind, *, revision: int, obj: bytes, source: str = "") -> None:
        """Take a live object of a log written before (its stored JSON, at `revision`; `source`: the
        source's version it came from) as its key's head, so that the changes fed next follow it
        (`cplane record --resume`). The caller sets `revision` to the log's afterwards."""
        body: dict[str, Any] = msgspec.json.decode(obj)
        if (kind.group, kind.kind) == ("apiextensions.k8s.io", "CustomResourceDefinition"):
            self._custom.update(_custom_kinds(body))  # (its custom resources are accepted)
        meta = body.get("metadata") or {}
        namespace = str(meta.get("namespace") or "") if kind.namespaced else ""
        key = (kind.group, kind.plural, namespace, str(meta.get("name") or ""))
        self._heads[key] = _Head(revision, str(meta.get("uid") or ""), True, obj, source)
        self.revision = max(self.revision, revision)

    def resume_deleted(self, kind: res.ResourceKind, *, namespace: str, name: str, revision: int) -> None:
        """Take a key the log's `revision` deleted as its head (an object created again under it
        follows that deletion)."""
        self._heads[(kind.group, kind.plural, namespace, name)] = _Head(revision, "", False, {})
        self.revision = max(self.revision, revision)

    def live(self) -> Iterable[tuple[tuple[str, str, str, str], dict[str, Any]]]:
        """The live objects (key -> stored object), as the events so far leave them."""
        return ((key, _stored(head.object)) for key, head in self._heads.items() if head.live)

    def _resolve(self, obj: dict[str, Any] | Encoded) -> tuple[res.ResourceKind, dict[str, Any] | Encoded] | None:
        if isinstance(obj, Encoded):
            peek = obj.peek
            if peek.api_version and peek.kind:
                served = _served(peek.api_version, peek.kind)
                # Stored as it is but for its version: a stored version, nothing to default or redact.
                if served is not None and served[0] is served[1] and served[1].kind != "CustomResourceDefinition" \
                        and not self.defaults \
                        and (self.keep_secrets or (served[1].group, served[1].kind) not in _SECRET_FIELDS):
                    return served[1], obj
            obj = decoded(obj)
        assert isinstance(obj, dict)
        api_version, kind_name = obj.get("apiVersion"), obj.get("kind")
        if isinstance(api_version, str) and isinstance(kind_name, str) and api_version and kind_name:
            served = _served(api_version, kind_name)
            if served is not None and served[0] is served[1] and served[1].kind != "CustomResourceDefinition":
                return served[1], obj  # the common case: a stored version (not copied: never changed here)
        found = resolve(obj)
        if found is not None:
            if found[0].group == "apiextensions.k8s.io" and found[0].kind == "CustomResourceDefinition":
                self._custom.update(_custom_kinds(found[1]))
            return found
        group = str(obj.get("apiVersion") or "").rpartition("/")[0]
        custom = self._custom.get((group, str(obj.get("kind") or "")))
        if custom is None:
            return None
        kind = res.ResourceKind(group=group, version=custom.storage_version, kind=str(obj["kind"]),
                                plural=custom.plural, singular=str(obj["kind"]).lower(),
                                namespaced=custom.namespaced)
        return kind, {**obj, "apiVersion": f"{group}/{custom.storage_version}"}

    def feed(self, change: Change) -> list[Event]:
        obj_in = change.object
        if change.deleted and isinstance(obj_in, Encoded):
            obj_in = decoded(obj_in)  # (whether it only names the object: see below)
        found = self._resolve(obj_in)
        if found is None:
            unserved = decoded(obj_in)
            label = f"{unserved.get('kind')}.{str(unserved.get('apiVersion')).rpartition('/')[0] or 'core'}"
            self.skipped[label] = self.skipped.get(label, 0) + 1
            return []
        kind, obj = found
        if isinstance(obj, Encoded):
            peeked = obj.peek.metadata or PeekMeta()
            name = peeked.name or ""
            namespace = (peeked.namespace or "") if kind.namespaced else ""
            uid = peeked.uid or ""
        else:
            meta = obj.get("metadata")
            if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
                raise ImportError_(f"{kind.kind} without metadata.name")
            name = meta["name"]
            namespace = str(meta.get("namespace") or "") if kind.namespaced else ""
            uid = str(meta.get("uid") or "")
        if not name:
            raise ImportError_(f"{kind.kind} without metadata.name")
        key = (kind.group, kind.plural, namespace, name)
        head = self._heads.get(key)
        if change.deleted:
            if head is None or not head.live:
                self.missed_deletes += 1
                return []
            assert isinstance(obj, dict)
            names_only = len(obj) <= 3 and set(obj["metadata"]) <= {"name", "namespace", "uid"}
            return [self._event("DELETED", kind, key, head.object if names_only else obj, head, change)]
        if change.written is not None:
            done = None
            if head is not None and head.live:
                from cp import options

                manager = change.field_manager or options.manager_from_user_agent(change.user_agent)
                done = applied(kind, _stored(head.object), change.subresource, change.written, time=change.time,
                               manager=manager)
            if done is None or head is None:
                self.missed_subresources += 1
                return []
            obj, uid = done, head.uid
        elif isinstance(obj, dict):
            if self.defaults and kind.custom is None and kind in res.KINDS:
                obj = copy.deepcopy(obj)
                defaulting.apply_defaults(obj, group=kind.group, version=kind.version, kind=kind.kind)
            if not self.keep_secrets and (kind.group, kind.kind) in _SECRET_FIELDS:
                obj = redact(kind.group, kind.kind, obj)
        out: list[Event] = []
        if head is not None and head.live:
            if uid and head.uid and uid != head.uid:  # deleted and created again meanwhile
                out.append(self._event("DELETED", kind, key, head.object, head, change))
            elif change.version and change.version == head.version:
                self.unchanged += 1  # a write that changed nothing (the server kept the version)
                return []
            elif (not change.source or change.source == head.source) and _same(_stored(head.object), decoded(obj)):
                self.unchanged += 1  # the same version seen again (a relist, a repeated dump)
                return []
            live = not out
        else:
            live = False
        # (after a DELETED of the old object, the new one follows it)
        out.append(self._event("MODIFIED" if live else "ADDED", kind, key, obj,
                               self._heads.get(key) if out else head, change))
        return out

    def _event(self, type_: str, kind: res.ResourceKind, key: tuple[str, str, str, str],
               obj: dict[str, Any] | Encoded | bytes, head: _Head | None, change: Change) -> Event:
        """The next event, writing `obj` (a change's object, or `head`'s stored one) at its revision."""
        self.revision = revision = self.revision + 1
        version = str(revision)
        text: bytes | None = None  # the stored object, when written without decoding it
        if isinstance(obj, Encoded):
            peeked = obj.peek.metadata or PeekMeta()
            uid = peeked.uid or ""
            text = _with_version(obj.raw, peeked.resource_version, version) if peeked.resource_version else None
            if text is None:  # not exactly in the text (or no version to rewrite)
                obj = decoded(obj)
        elif isinstance(obj, bytes):
            assert head is not None  # (a head's stored JSON, at the head's revision)
            uid = head.uid
            text = _with_version(obj, str(head.revision), version)
            if text is None:
                obj = _stored(obj)
        else:
            uid = str((obj.get("metadata") or {}).get("uid") or "")
        stored: dict[str, Any] | bytes
        if text is None:
            assert isinstance(obj, dict)
            stored = {**obj, "metadata": {**(obj.get("metadata") or {}), "resourceVersion": version}}
            text = msgspec.json.encode(stored)
        else:
            stored = text
        live = type_ != "DELETED"
        # A deleted key keeps its revision and uid only (its object is never read again).
        self._heads[key] = _Head(revision, uid, live, stored if live else {}, change.source, change.version)
        source = f"source={change.source}" if change.source else ""
        if change.resync:
            source = f"{source} resync".strip()
        return Event(revision=revision, type=type_, group=kind.group, resource=kind.plural, namespace=key[2],
                     name=key[3], uid=uid, prev_revision=head.revision if head is not None else 0,
                     time=change.time, user=change.user, field_manager=change.field_manager,
                     user_agent=change.user_agent, request_id=source, object=text)


def _stored(obj: dict[str, Any] | bytes) -> dict[str, Any]:
    """A head's stored object as a dict."""
    if isinstance(obj, bytes):
        out: dict[str, Any] = msgspec.json.decode(obj)
        return out
    return obj


def _same(stored: dict[str, Any], new: dict[str, Any]) -> bool:
    """Equal but for the resourceVersion (the log's own). Compared in place: no copies."""
    if stored.keys() != new.keys():
        return False
    for key, value in stored.items():
        if key != "metadata" and value != new[key]:
            return False
    a, b = stored.get("metadata") or {}, new.get("metadata") or {}
    if a.keys() - {"resourceVersion"} != b.keys() - {"resourceVersion"}:
        return False
    return all(value == b[key] for key, value in a.items() if key != "resourceVersion")
