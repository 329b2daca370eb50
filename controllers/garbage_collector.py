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

Custom resources are owners and dependents like any other: as upstream's collector re-syncs its
monitors from discovery, every change of a CustomResourceDefinition (and, while any exists, every
`RESYNC_PERIOD` seconds) makes it read discovery again (`controllers.runtime.discovery`) and start or
stop informing on the custom resources served. Once a new resource's informer has synced, objects
whose owner references name its kind are looked at again (their owner may have gone meanwhile).
Discovery is read per definition change, never per object.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import structlog

from controllers.runtime import cache as caches
from controllers.runtime import client as clients
from controllers.runtime import discovery as discoveries
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
CRDS = clients.resolve("customresourcedefinitions.apiextensions.k8s.io")
# The request that re-reads discovery and re-syncs the custom resources' monitors (no object has an
# empty name).
RESYNC = reconcile.Request(resource=CRDS.group_resource, name="")
RESYNC_PERIOD = 30.0  # seconds, as kube-controller-manager's garbage collector re-syncs discovery
PENDING_RETRY = 1.0  # seconds: an established definition discovery does not list yet
SYNC_TIMEOUT = 10.0  # seconds a re-sync waits for a new resource's informer

logger = structlog.get_logger("cplane.controllers.garbage_collector")


def collectable(kind: res.ResourceKind) -> bool:
    return {"list", "watch", "delete"} <= set(kind.verbs) and kind.group_resource not in IGNORED


def collectable_kinds() -> list[res.ResourceKind]:
    return [k for k in res.KINDS if collectable(k)]


def owner_kind(ref: Mapping[str, Any], *, mapper: discoveries.RESTMapper | None = None) -> res.ResourceKind | None:
    """The resource an ownerReference names: built-in, or custom when `mapper` has discovered it."""
    group, kind = discoveries.owner_group_kind(ref)
    return mapper.by_kind(group, kind) if mapper is not None else res.by_kind(group, kind)


def _established(crd: Mapping[str, Any]) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(isinstance(c, Mapping) and c.get("type") == "Established" and c.get("status") == "True"
               for c in conditions)


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
        self._by_gr = {k.group_resource: k for k in self.kinds}
        self._watched = set(self._by_gr)
        self.custom: dict[str, res.ResourceKind] = {}  # the custom resources monitored now
        self.controller: managers.Controller | None = None  # set by `new`: re-syncs add watches to it
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
            kind = owner_kind(ref, mapper=self.client.mapper)
            if kind is not None and kind.group_resource in self._watched and ref.get("name"):
                out.append(reconcile.Request(resource=kind.group_resource,
                                             namespace=ns if kind.namespaced else "", name=str(ref["name"])))
        return out

    def map(self, change: managers.Change) -> Iterable[reconcile.Request]:
        obj = change.obj
        uid = str(caches.meta(obj).get("uid") or "")
        resync = [RESYNC] if change.kind.group_resource == CRDS.group_resource else []
        if change.type == "delete":
            # Its dependents may now be dangling; a foreground owner may be unblocked.
            return [*resync, *(self._request(k, d) for k, d in self.dependents(uid)), *self._owner_requests(obj)]
        out: list[reconcile.Request] = resync
        fins = finalizers(obj)
        if owner_refs(obj) or (is_deleting(obj) and (ORPHAN in fins or FOREGROUND in fins)):
            out.append(self._request(change.kind, obj))
        if waits_for_dependents(obj):
            out.extend(self._request(k, d) for k, d in self.dependents(uid))
        if change.old is not None and owner_refs(change.old) != owner_refs(obj):
            out.extend(self._owner_requests(change.old))
        return out

    # ------------------------------------------------------------------ monitors of custom resources

    async def resync(self) -> reconcile.Result | None:
        """Read discovery and monitor exactly the custom resources served now (upstream's
        `GarbageCollector.Sync` with `GetDeletableResources`)."""
        served = await self.client.mapper.refresh()
        wanted = {k.group_resource: k for k in served if collectable(k)}
        added: list[res.ResourceKind] = []
        for gr, kind in list(self.custom.items()):
            if wanted.get(gr) != kind:  # gone, or served in another preferred version now
                await self._unmonitor(kind)
        for gr, kind in wanted.items():
            if gr not in self.custom:
                self._monitor(kind)
                added.append(kind)
        if added:
            logger.info("monitors_synced", added=[k.group_resource for k in added],
                        custom=sorted(self.custom))
            await self._recheck_dependents_of(added)
        definitions = self.informers.cache(CRDS).list()
        pending = [d for d in definitions
                   if _established(d) and not is_deleting(d)
                   and self.client.mapper.by_group_resource(
                       str((d.get("spec") or {}).get("group") or ""),
                       str(((d.get("status") or {}).get("acceptedNames") or {}).get("plural") or "")) is None]
        if pending:
            return reconcile.Result(requeue_after=PENDING_RETRY)
        return reconcile.Result(requeue_after=RESYNC_PERIOD) if definitions or self.custom else None

    def _monitor(self, kind: res.ResourceKind) -> None:
        self.custom[kind.group_resource] = kind
        self._by_gr[kind.group_resource] = kind
        self._watched.add(kind.group_resource)
        self.kinds.append(kind)
        watch = managers.Watch(kind=kind, map=self.map, indexers=INDEXERS)
        if self.controller is not None:
            self.controller.add_watch(watch)
        else:
            self.informers.informer(kind, indexers=INDEXERS)

    async def _unmonitor(self, kind: res.ResourceKind) -> None:
        gr = kind.group_resource
        self.custom.pop(gr, None)
        self._by_gr.pop(gr, None)
        self._watched.discard(gr)
        self.kinds = [k for k in self.kinds if k.group_resource != gr]
        if self.controller is not None:
            await self.controller.remove_watch(kind)
        logger.info("monitor_stopped", resource=gr)

    async def _recheck_dependents_of(self, added: Sequence[res.ResourceKind]) -> None:
        """Once the new resources' informers have synced, enqueue every cached object with an owner
        reference to one of their kinds: an owner that went before its monitor started sent no
        deletion to wait for."""
        infs = [self.informers.informer(k) for k in added]
        try:
            async with asyncio.timeout(SYNC_TIMEOUT):
                await self.informers.wait_for_sync(infs)
        except TimeoutError:
            logger.warning("monitor_sync_timeout", resources=[k.group_resource for k in added])
        if self.controller is None:
            return
        kinds = {(k.group, k.kind) for k in added}
        for kind in self.kinds:
            for obj in self.informers.cache(kind).list():
                if any(discoveries.owner_group_kind(r) in kinds for r in owner_refs(obj)):
                    self.controller.enqueue(self._request(kind, obj))

    # ------------------------------------------------------------------ reconcile

    async def reconcile(self, request: reconcile.Request) -> reconcile.Result | None:
        if request == RESYNC:
            return await self.resync()
        kind = self._by_gr.get(request.resource)
        if kind is None:  # a custom resource no longer monitored
            return None
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
            okind = owner_kind(ref, mapper=self.client.mapper)
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
    controller = managers.Controller(name=NAME, reconciler=gc, watches=gc.watches(), workers=workers)
    gc.controller = controller
    return controller
