"""The informer cache: the last observed state of one resource's objects, by (namespace, name),
with secondary indexes computed by pluggable index functions (client-go's `ThreadSafeStore` +
`Indexers`).

Cached objects are shared by every reader: treat them as read-only and `deep_copy` before editing.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import msgspec

from cp.objects import meta_of

Key = tuple[str, str]  # (namespace, name); namespace "" for cluster-scoped objects
IndexFunc = Callable[[Mapping[str, Any]], Iterable[str]]

_enc = msgspec.json.Encoder()
_dec = msgspec.json.Decoder()


def deep_copy(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A private, editable copy of a cached object (a JSON round trip: fast and exact)."""
    out = _dec.decode(_enc.encode(obj))
    assert isinstance(out, dict)
    return out


meta = meta_of  # `metadata` of a cached object, read-only (the name the controllers use)


def key_of(obj: Mapping[str, Any]) -> Key:
    m = meta(obj)
    return (str(m.get("namespace") or ""), str(m.get("name") or ""))


# ---------------------------------------------------------------------- index functions

NAMESPACE = "namespace"
UID = "uid"
OWNER_UID = "owner-uid"
NODE = "node"
CLAIM_NAME = "claim-name"


def by_namespace(obj: Mapping[str, Any]) -> list[str]:
    return [str(meta(obj).get("namespace") or "")]


def by_uid(obj: Mapping[str, Any]) -> list[str]:
    uid = meta(obj).get("uid")
    return [str(uid)] if uid else []


def by_owner_uid(obj: Mapping[str, Any]) -> list[str]:
    """Every owner's uid (from metadata.ownerReferences)."""
    return [str(ref["uid"]) for ref in meta(obj).get("ownerReferences") or []
            if isinstance(ref, Mapping) and ref.get("uid")]


def by_node(obj: Mapping[str, Any]) -> list[str]:
    """spec.nodeName (pods, ResourceSlices)."""
    spec = obj.get("spec")
    node = spec.get("nodeName") if isinstance(spec, Mapping) else None
    return [str(node)] if node else []


def by_claim_name(obj: Mapping[str, Any]) -> list[str]:
    """The ResourceClaim names a pod uses: direct `resourceClaimName`s and the generated names in
    status.resourceClaimStatuses."""
    names: set[str] = set()
    spec = obj.get("spec")
    if isinstance(spec, Mapping):
        for rc in spec.get("resourceClaims") or []:
            if isinstance(rc, Mapping) and rc.get("resourceClaimName"):
                names.add(str(rc["resourceClaimName"]))
    status = obj.get("status")
    if isinstance(status, Mapping):
        for st in status.get("resourceClaimStatuses") or []:
            if isinstance(st, Mapping) and st.get("resourceClaimName"):
                names.add(str(st["resourceClaimName"]))
    return sorted(names)


STANDARD_INDEXERS: dict[str, IndexFunc] = {
    NAMESPACE: by_namespace,
    UID: by_uid,
    OWNER_UID: by_owner_uid,
    NODE: by_node,
    CLAIM_NAME: by_claim_name,
}


class Diff(msgspec.Struct, kw_only=True):
    """What a `replace` changed: the events a relist implies."""

    added: list[dict[str, Any]] = msgspec.field(default_factory=list)
    updated: list[tuple[dict[str, Any], dict[str, Any]]] = msgspec.field(default_factory=list)  # (old, new)
    deleted: list[dict[str, Any]] = msgspec.field(default_factory=list)


class Cache:
    """Objects by key plus indexes. Not thread-safe; lives on one event loop like everything else."""

    def __init__(self, indexers: Mapping[str, IndexFunc] | None = None) -> None:
        self._items: dict[Key, dict[str, Any]] = {}
        self._indexers: dict[str, IndexFunc] = {NAMESPACE: by_namespace}
        self._indices: dict[str, dict[str, set[Key]]] = {NAMESPACE: {}}
        self.resource_version = ""
        if indexers:
            self.add_indexers(indexers)

    # ------------------------------------------------------------------ indexes

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Add index functions (existing objects are indexed at once). Re-adding a name with the
        same function is a no-op; with another function it is an error."""
        for name, fn in indexers.items():
            if name in self._indexers:
                if self._indexers[name] is not fn:
                    raise ValueError(f"indexer {name!r} already registered with another function")
                continue
            self._indexers[name] = fn
            index: dict[str, set[Key]] = {}
            self._indices[name] = index
            for key, obj in self._items.items():
                for value in fn(obj):
                    index.setdefault(value, set()).add(key)

    @property
    def indexers(self) -> Mapping[str, IndexFunc]:
        return self._indexers

    def _index(self, key: Key, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> None:
        for name, fn in self._indexers.items():
            index = self._indices[name]
            old_values = set(fn(old)) if old is not None else set()
            new_values = set(fn(new)) if new is not None else set()
            if old_values == new_values:
                continue
            for value in old_values - new_values:
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[value]
            for value in new_values - old_values:
                index.setdefault(value, set()).add(key)

    # ------------------------------------------------------------------ reads

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._items.get((namespace, name))

    def get_by_key(self, key: Key) -> dict[str, Any] | None:
        return self._items.get(key)

    def list(self, namespace: str | None = None) -> builtins.list[dict[str, Any]]:
        if namespace is None:
            return list(self._items.values())
        return self.by_index(NAMESPACE, namespace)

    def keys(self) -> builtins.list[Key]:
        return list(self._items)

    def by_index(self, index: str, value: str) -> builtins.list[dict[str, Any]]:
        return [self._items[k] for k in sorted(self.index_keys(index, value))]

    def index_keys(self, index: str, value: str) -> set[Key]:
        try:
            return set(self._indices[index].get(value, ()))
        except KeyError:
            raise KeyError(f"no indexer {index!r}") from None

    def index_values(self, index: str) -> builtins.list[str]:
        return list(self._indices[index])

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(list(self._items.values()))

    # ------------------------------------------------------------------ writes (informer only)

    def upsert(self, obj: dict[str, Any]) -> dict[str, Any] | None:
        """Store `obj`; returns the previous state (None when new)."""
        key = key_of(obj)
        old = self._items.get(key)
        self._items[key] = obj
        self._index(key, old, obj)
        return old

    def remove(self, key: Key) -> dict[str, Any] | None:
        old = self._items.pop(key, None)
        if old is not None:
            self._index(key, old, None)
        return old

    def replace(self, objects: Iterable[dict[str, Any]], resource_version: str = "") -> Diff:
        """Make the cache hold exactly `objects` (a relist) and say what changed. An object whose
        resourceVersion did not change counts as unchanged."""
        diff = Diff()
        seen: set[Key] = set()
        for obj in objects:
            key = key_of(obj)
            seen.add(key)
            old = self.upsert(obj)
            if old is None:
                diff.added.append(obj)
            elif meta(old).get("resourceVersion") != meta(obj).get("resourceVersion") or \
                    meta(old).get("uid") != meta(obj).get("uid"):
                diff.updated.append((old, obj))
        for key in [k for k in self._items if k not in seen]:
            gone = self.remove(key)
            if gone is not None:
                diff.deleted.append(gone)
        if resource_version:
            self.resource_version = resource_version
        return diff
