"""The garbage collector: deletes objects whose owners are gone, and carries out the three
propagation policies of a DELETE (kube-controller-manager's `garbagecollector`).

Every served kind is informed on (except core Events, which upstream ignores too), with an index
by owner uid, so "who depends on X" is a cache lookup. One Request per object
(`resource`, `namespace`, `name`); reconcile decides from that object's state:

- **Orphan** (owner deleting with the `orphan` finalizer): remove the owner's reference from every
  dependent, then remove the `orphan` finalizer; the server then deletes the owner.
- **Foreground** (owner deleting with the `foregroundDeletion` finalizer): its dependents see an
  owner "waiting for dependents" and are deleted; once no dependent whose reference sets
  `blockOwnerDeletion` is left, the finalizer is removed and the owner goes.
- **Background** (owner deleted at once) and vanished owners: a dependent whose owner references
  are all dangling (owner absent, or present with another uid — checked live before believing
  it) is deleted, with a uid + resourceVersion precondition, propagating by its own finalizers.
- A dependent with at least one live, non-deleting owner stays; its references to dangling or
  foreground-deleting owners are removed so those owners are not held up.

References to kinds this server does not serve are treated as live (never collected). A
cluster-scoped dependent referring to a namespaced owner has a dangling reference and gets a
Warning Event `OwnerRefInvalidNamespace`.
"""

from __future__ import annotations

import collections
import contextlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import structlog

from controllers.runtime import cache as caches
from controllers.runtime import client as clients
from controllers.runtime import informer as informers
from controllers.runtime import manager as managers
from controllers.runtime import reconcile
from cp import errors
from cp import resources as res
from cp.objects import uid_of

NAME = "garbage-collector"
FIELD_MANAGER = "garbage-collector"
FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"
IGNORED = frozenset({"events"})  # group-resources never collected or watched
ABSENT_CACHE_SIZE = 1024
INDEXERS = {caches.OWNER_UID: caches.by_owner_uid}

logger = structlog.get_logger("cplane.controllers.garbage_collector")


def collectable_kinds() -> list[res.ResourceKind]:
    return [k for k in res.KINDS
            if {"list", "watch", "delete"} <= set(k.verbs) and k.group_resource not in IGNORED]


def owner_kind(ref: Mapping[str, Any]) -> res.ResourceKind | None:
    api_version = str(ref.get("apiVersion") or "")
    group = api_version.rpartition("/")[0] if "/" in api_version else ""
    return res.by_kind(group, str(ref.get("kind") or ""))


def owner_refs(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [r for r in caches.meta(obj).get("ownerReferences") or [] if isinstance(r, dict)]


def finalizers(obj: Mapping[str, Any]) -> list[str]:
    return [str(f) for f in caches.meta(obj).get("finalizers") or []]


def is_deleting(obj: Mapping[str, Any]) -> bool:
    return bool(caches.meta(obj).get("deletionTimestamp"))


def waits_for_dependents(obj: Mapping[str, Any]) -> bool:
    return is_deleting(obj) and FOREGROUND in finalizers(obj)


class _UidSet:
    """A bounded set of owner uids confirmed absent (an absent uid never comes back)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: collections.OrderedDict[str, None] = collections.OrderedDict()

    def add(self, uid: str) -> None:
        self._items[uid] = None
        self._items.move_to_end(uid)
        while len(self._items) > self._size:
            self._items.popitem(last=False)

    def __contains__(self, uid: object) -> bool:
        return uid in self._items


class GarbageCollector:
    def __init__(self, *, client: clients.Client, informer_factory: informers.InformerFactory,
                 recorder: managers.EventRecorder, kinds: Sequence[res.ResourceKind] | None = None) -> None:
        self.client = client
        self.informers = informer_factory
        self.recorder = recorder
        self.kinds = list(kinds) if kinds is not None else collectable_kinds()
        self._watched = {k.group_resource for k in self.kinds}
        self.absent = _UidSet(ABSENT_CACHE_SIZE)
        for kind in self.kinds:  # "who depends on uid X" must be an index lookup
            self.informers.informer(kind, indexers=INDEXERS)

    def watches(self) -> list[managers.Watch]:
        return [managers.Watch(kind=k, map=self.map, indexers=INDEXERS) for k in self.kinds]

    # ------------------------------------------------------------------ event mapping

    def _request(self, kind: res.ResourceKind, obj: Mapping[str, Any]) -> reconcile.Request:
        ns, name = caches.key_of(obj)
        return reconcile.Request(resource=kind.group_resource, namespace=ns, name=name)

    def dependents(self, uid: str) -> list[tuple[res.ResourceKind, dict[str, Any]]]:
        """Cached objects (of every watched kind) with an ownerReference to `uid`."""
        out: list[tuple[res.ResourceKind, dict[str, Any]]] = []
        for kind in self.kinds:
            cache = self.informers.cache(kind)
            out.extend((kind, obj) for obj in cache.by_index(caches.OWNER_UID, uid))
        return out

    def _owner_requests(self, obj: Mapping[str, Any]) -> list[reconcile.Request]:
        ns = str(caches.meta(obj).get("namespace") or "")
        out = []
        for ref in owner_refs(obj):
            kind = owner_kind(ref)
            if kind is not None and kind.group_resource in self._watched and ref.get("name"):
                out.append(reconcile.Request(resource=kind.group_resource,
                                             namespace=ns if kind.namespaced else "", name=str(ref["name"])))
        return out

    def map(self, change: managers.Change) -> Iterable[reconcile.Request]:
        obj = change.obj
        uid = str(caches.meta(obj).get("uid") or "")
        if change.type == "delete":
            # Its dependents may now be dangling; a foreground owner may be unblocked.
            return [self._request(k, d) for k, d in self.dependents(uid)] + self._owner_requests(obj)
        out: list[reconcile.Request] = []
        fins = finalizers(obj)
        if owner_refs(obj) or (is_deleting(obj) and (ORPHAN in fins or FOREGROUND in fins)):
            out.append(self._request(change.kind, obj))
        if waits_for_dependents(obj):
            out.extend(self._request(k, d) for k, d in self.dependents(uid))
        if change.old is not None and owner_refs(change.old) != owner_refs(obj):
            out.extend(self._owner_requests(change.old))
        return out

    # ------------------------------------------------------------------ reconcile

    async def reconcile(self, request: reconcile.Request) -> reconcile.Result | None:
        kind = clients.resolve(request.resource)
        obj = self.informers.cache(kind).get(request.namespace, request.name)
        if obj is None:
            return None
        if is_deleting(obj):
            fins = finalizers(obj)
            if ORPHAN in fins:
                await self._orphan_dependents(kind, obj)
            elif FOREGROUND in fins:
                await self._finish_foreground(kind, obj)
            return None  # otherwise: deletion is under way, nothing for the collector
        if not owner_refs(obj):
            return None
        solid, dangling, waiting = await self._classify(kind, obj, owner_refs(obj))
        if solid and not dangling and not waiting:
            return None  # the common case, decided from the cache alone
        # About to act: decide on the live object (the cache may lag behind an edit of its refs).
        live = await self._get(kind, obj)
        if live is None or is_deleting(live) or not owner_refs(live):
            return None
        solid, dangling, waiting = await self._classify(kind, live, owner_refs(live), report=True)
        if solid:
            if dangling or waiting:
                gone = {str(r["uid"]) for r in dangling + waiting}
                await self._remove_owner_refs(kind, live, gone)
            return None
        fins = finalizers(live)
        if waiting and self.dependents(uid_of(live)):
            policy = "Foreground"
        elif ORPHAN in fins:
            policy = "Orphan"
        elif FOREGROUND in fins:
            policy = "Foreground"
        else:
            policy = "Background"
        meta = caches.meta(live)
        logger.info("deleting_dependent", resource=kind.group_resource, namespace=meta.get("namespace", ""),
                    name=meta.get("name"), propagation=policy,
                    owners=[f"{r.get('kind')}/{r.get('name')}" for r in owner_refs(live)])
        with contextlib.suppress(errors.NotFound):
            await self.client.delete(kind, str(meta["name"]), namespace=str(meta.get("namespace") or ""),
                                     propagation_policy=policy,
                                     preconditions={"uid": uid_of(live),
                                                    "resourceVersion": str(meta.get("resourceVersion") or "")})
        return None

    async def _classify(self, kind: res.ResourceKind, obj: Mapping[str, Any],
                        refs: list[dict[str, Any]], *, report: bool = False,
                        ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
        """Owner references as (solid, dangling, waiting-for-dependents-deletion); `report` emits
        the Warning Event for an invalid reference."""
        solid: list[dict[str, Any]] = []
        dangling: list[dict[str, Any]] = []
        waiting: list[dict[str, Any]] = []
        for ref in refs:
            uid = str(ref.get("uid") or "")
            if uid in self.absent:
                dangling.append(ref)
                continue
            okind = owner_kind(ref)
            if okind is None:
                solid.append(ref)  # not a kind we serve: never collect on its account
                continue
            if okind.namespaced and not kind.namespaced:
                dangling.append(ref)
                if report:
                    await self.recorder.warning(
                        obj, "OwnerRefInvalidNamespace",
                        f"ownerRef [{ref.get('apiVersion')}/{ref.get('kind')}, name: {ref.get('name')}, "
                        f"uid: {uid}] is namespaced, but {kind.kind} {caches.meta(obj).get('name')} is "
                        "cluster-scoped: it cannot have a namespaced owner")
                continue
            ns = str(caches.meta(obj).get("namespace") or "") if okind.namespaced else ""
            owner = self._cached_owner(okind, ns, str(ref.get("name") or ""))
            if owner is None or uid_of(owner) != uid:
                try:
                    owner = await self.client.get(okind, str(ref.get("name") or ""), namespace=ns)
                except errors.NotFound:
                    owner = None
                if owner is None or uid_of(owner) != uid:
                    self.absent.add(uid)
                    dangling.append(ref)
                    continue
            if waits_for_dependents(owner):
                waiting.append(ref)
            else:
                solid.append(ref)
        return solid, dangling, waiting

    def _cached_owner(self, kind: res.ResourceKind, namespace: str, name: str) -> dict[str, Any] | None:
        if kind.group_resource not in self._watched:
            return None
        return self.informers.cache(kind).get(namespace, name)

    async def _get(self, kind: res.ResourceKind, obj: Mapping[str, Any]) -> dict[str, Any] | None:
        """The live object, or None if it is gone or was replaced (another uid)."""
        ns, name = caches.key_of(obj)
        try:
            live = await self.client.get(kind, name, namespace=ns)
        except errors.NotFound:
            return None
        return live if uid_of(live) == uid_of(obj) else None

    # ------------------------------------------------------------------ owner-side work

    async def _orphan_dependents(self, kind: res.ResourceKind, owner: dict[str, Any]) -> None:
        uid = uid_of(owner)
        for dkind, dep in self.dependents(uid):
            await self._remove_owner_refs(dkind, dep, {uid})
        logger.info("orphaned_dependents", resource=kind.group_resource,
                    namespace=caches.meta(owner).get("namespace", ""), name=caches.meta(owner).get("name"))
        await self._remove_finalizer(kind, owner, ORPHAN)

    async def _finish_foreground(self, kind: res.ResourceKind, owner: dict[str, Any]) -> None:
        uid = uid_of(owner)
        for _dkind, dep in self.dependents(uid):
            for ref in owner_refs(dep):
                if str(ref.get("uid")) == uid and ref.get("blockOwnerDeletion"):
                    return  # a blocking dependent is left; its deletion event brings us back
        await self._remove_finalizer(kind, owner, FOREGROUND)

    async def _remove_owner_refs(self, kind: res.ResourceKind, obj: Mapping[str, Any], uids: set[str]) -> None:
        """Drop references to `uids` (merge patch guarded by resourceVersion; refetch on conflict)."""
        current: Mapping[str, Any] | None = obj
        for _ in range(3):
            if current is None:
                return
            refs = owner_refs(current)
            keep = [r for r in refs if str(r.get("uid")) not in uids]
            if len(keep) == len(refs):
                return
            meta = caches.meta(current)
            patch = {"metadata": {"resourceVersion": meta.get("resourceVersion"), "ownerReferences": keep or None}}
            try:
                await self.client.patch(kind, str(meta["name"]), patch, namespace=str(meta.get("namespace") or ""),
                                        field_manager=FIELD_MANAGER)
                return
            except errors.NotFound:
                return
            except errors.Conflict:
                current = await self._get(kind, current)
        raise errors.Conflict(f"could not remove owner references from {kind.group_resource} "
                              f"{caches.meta(obj).get('name')}: kept conflicting")

    async def _remove_finalizer(self, kind: res.ResourceKind, obj: Mapping[str, Any], finalizer: str) -> None:
        current: Mapping[str, Any] | None = obj
        for _ in range(3):
            if current is None:
                return
            fins = finalizers(current)
            if finalizer not in fins:
                return
            keep = [f for f in fins if f != finalizer]
            meta = caches.meta(current)
            patch = {"metadata": {"resourceVersion": meta.get("resourceVersion"), "finalizers": keep or None}}
            try:
                await self.client.patch(kind, str(meta["name"]), patch, namespace=str(meta.get("namespace") or ""),
                                        field_manager=FIELD_MANAGER)
                return
            except errors.NotFound:
                return
            except errors.Conflict:
                current = await self._get(kind, current)
        raise errors.Conflict(f"could not remove finalizer {finalizer} from {kind.group_resource} "
                              f"{caches.meta(obj).get('name')}: kept conflicting")


def new(ctx: managers.ControllerContext, *, workers: int = 4) -> managers.Controller:
    gc = GarbageCollector(client=ctx.client, informer_factory=ctx.informers,
                          recorder=ctx.recorder("garbage-collector-controller"))
    return managers.Controller(name=NAME, reconciler=gc, watches=gc.watches(), workers=workers)
