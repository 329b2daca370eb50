"""The StatefulSet controller (kube-controller-manager's `statefulset` controller,
`pkg/controller/statefulset`).

Per StatefulSet key (`namespace/name`), from the informer caches:

1. Pods are claimed as the ReplicaSet controller claims them, but only pods named `<set>-<n>`;
   orphan ControllerRevisions matching the selector are adopted.
2. **Revisions** (`controllers.history`): the update revision is the one whose patch equals the
   template (the newest equal one is renumbered when it is not the latest: a rollback), else a new
   one `<set>-<hash>` numbered `max + 1` (collisions bump `status.collisionCount`); the current
   revision is the one `status.currentRevision` names (the update revision at first).
3. **Pods** for ordinals `start .. start + replicas - 1` (`spec.ordinals.start`), named
   `<set>-<ordinal>`, hostname = name, subdomain = `serviceName`, labels
   `statefulset.kubernetes.io/pod-name`, `apps.kubernetes.io/pod-index` and
   `controller-revision-hash` (the revision's name); below the partition at the current revision,
   else at the update revision. `OrderedReady`: one at a time in ordinal order, each waiting for its
   predecessors to be Running, Ready and available; `Parallel`: all at once. Failed or Succeeded pods
   are deleted and recreated. Before a pod is created its claims `<template>-<set>-<ordinal>` are
   created from `volumeClaimTemplates` (selector labels added), with owner references by the
   `persistentVolumeClaimRetentionPolicy`: whenDeleted Delete -> the set as controller;
   whenScaled Delete -> the pod, once its ordinal is scaled away (set before the pod is deleted, so the
   garbage collector removes the claim after it). A claim still being deleted, or still owned by an
   earlier pod of the name, holds the pod back.
4. **Scale down**: pods beyond the range are deleted from the highest ordinal, one at a time after
   all others are healthy (OrderedReady) or all at once (Parallel).
5. **RollingUpdate**: pods at ordinals >= partition whose revision is not the update revision are
   deleted from the highest ordinal, at most `maxUnavailable` (default 1; percentages round down, at
   least 1) unavailable at a time; they come back at the update revision. `OnDelete`: only pods
   someone deletes are recreated at the update revision.
6. **Status** (PUT /status when it changed): replicas, readyReplicas, currentReplicas,
   updatedReplicas, availableReplicas, currentRevision, updateRevision, collisionCount,
   observedGeneration; when every replica is updated and ready the update revision becomes current.
   History beyond `revisionHistoryLimit` is deleted (revisions no pod uses, oldest first).

Events (`statefulset-controller`): SuccessfulCreate "create Pod web-0 in StatefulSet web successful",
"create Claim data-web-0 Pod web-0 in StatefulSet web success"; SuccessfulDelete "delete Pod web-2 in
StatefulSet web successful"; FailedCreate / FailedDelete with the error; RecreatingFailedPod,
RecreatingTerminatedPod.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import structlog

from controllers import history
from controllers import replicaset as rsc
from controllers.runtime import cache as caches
from controllers.runtime import client as clients
from controllers.runtime import informer as informers
from controllers.runtime import manager as managers
from controllers.runtime import reconcile
from controllers.statefulset import rules
from cp import clock as clocks
from cp import errors

NAME = "statefulset"
COMPONENT = "statefulset-controller"
FIELD_MANAGER = "statefulset-controller"

STATEFULSETS = clients.resolve("statefulsets.apps")
PODS = clients.resolve("pods")
CLAIMS = clients.resolve("persistentvolumeclaims")
REVISIONS = history.REVISIONS

Result = reconcile.Result
INDEXERS = {caches.OWNER_UID: caches.by_owner_uid}

logger = structlog.get_logger("cplane.controllers.statefulset")

Step = Callable[[int], Awaitable[bool]]


class StatefulSetController:
    def __init__(self, *, client: clients.Client, informer_factory: informers.InformerFactory,
                 recorder: managers.EventRecorder, clock: clocks.Clock) -> None:
        self.client = client
        self.recorder = recorder
        self.clock = clock
        self.set_cache = informer_factory.informer(STATEFULSETS, indexers=INDEXERS).cache
        self.pod_cache = informer_factory.informer(PODS, indexers=INDEXERS).cache
        self.claim_cache = informer_factory.informer(CLAIMS).cache
        self.rev_cache = informer_factory.informer(REVISIONS, indexers=INDEXERS).cache
        self.history = history.History(client=client, cache=self.rev_cache, field_manager=FIELD_MANAGER)

    def watches(self) -> list[managers.Watch]:
        return [managers.Watch(kind=STATEFULSETS, indexers=INDEXERS),
                managers.Watch(kind=PODS, map=self.map_owned, indexers=INDEXERS),
                managers.Watch(kind=REVISIONS, map=self.map_owned, indexers=INDEXERS),
                managers.Watch(kind=CLAIMS, map=self.map_claim)]

    # ------------------------------------------------------------------ event mapping

    @staticmethod
    def _request(obj: Mapping[str, Any]) -> reconcile.Request:
        return reconcile.Request(namespace=rsc.namespace_of(obj), name=rsc.name_of(obj))

    def _controller(self, namespace: str, ref: Mapping[str, Any] | None) -> dict[str, Any] | None:
        if ref is None or ref.get("kind") != STATEFULSETS.kind:
            return None
        set_ = self.set_cache.get(namespace, str(ref.get("name") or ""))
        if set_ is None or rsc.uid_of(set_) != str(ref.get("uid") or ""):
            return None
        return set_

    def _selecting(self, obj: Mapping[str, Any]) -> list[reconcile.Request]:
        labels = rsc.labels_of(obj)
        out = []
        for set_ in self.set_cache.list(rsc.namespace_of(obj)):
            sel = rsc.selector_of(set_)
            if sel is not None and not sel.empty and sel.matches(labels):
                out.append(self._request(set_))
        return out

    def map_owned(self, change: managers.Change) -> list[reconcile.Request]:
        """Pods and revisions: their controller (old and new), or the sets selecting an orphan."""
        obj = change.obj
        ns = rsc.namespace_of(obj)
        out = []
        for version in (change.old, obj):
            if version is None:
                continue
            owner = self._controller(ns, rsc.controller_ref(version))
            if owner is not None and self._request(owner) not in out:
                out.append(self._request(owner))
        if not out and rsc.controller_ref(obj) is None and change.type != "delete":
            out = self._selecting(obj)
        return out

    def map_claim(self, change: managers.Change) -> list[reconcile.Request]:
        """A claim change matters to the set whose pod name it carries (a stale claim going away)."""
        name = rsc.name_of(change.obj)
        out = []
        for set_ in self.set_cache.list(rsc.namespace_of(change.obj)):
            if f"-{rsc.name_of(set_)}-" in name and rsc.spec_of(set_).get("volumeClaimTemplates"):
                out.append(self._request(set_))
        return out

    # ------------------------------------------------------------------ reconcile

    async def reconcile(self, request: reconcile.Request) -> Result | None:
        cached = self.set_cache.get(request.namespace, request.name)
        if cached is None:
            return None
        set_ = caches.deep_copy(cached)
        selector = rsc.selector_of(set_)
        if selector is None or selector.empty:
            return None
        manager = rsc.RefManager(client=self.client, controller=set_, controller_kind=STATEFULSETS,
                                 dependent_kind=PODS, selector=selector, field_manager=FIELD_MANAGER,
                                 can_adopt=rsc.recheck_controller(self.client, STATEFULSETS, set_))
        candidates = [p for p in self.pod_cache.list(request.namespace) if rules.is_member(set_, p)]
        pods = await manager.claim(candidates)
        revisions = history.sorted_revisions(
            await self.history.claim(parent=set_, parent_kind=STATEFULSETS, selector=selector))
        current, update, collision_count = await self.revisions(set_, revisions)
        status, error = await self.update_set(set_, current, update, collision_count, pods)
        await self.update_status(set_, status)
        live = {rsc.name_of(current), rsc.name_of(update)} | {rules.revision_of(p) for p in pods}
        limit = rsc.spec_of(set_).get("revisionHistoryLimit")
        await self.history.truncate(revisions=revisions, live=live, limit=int(limit) if limit is not None else 10)
        if error is not None:
            raise error
        min_ready = int(rsc.spec_of(set_).get("minReadySeconds") or 0)
        if min_ready > 0 and status.get("readyReplicas", 0) > status.get("availableReplicas", 0):
            wait = rsc.next_availability(set_, pods, self.clock.now())
            if wait is not None:
                return Result(requeue_after=wait)
        return None

    async def revisions(self, set_: dict[str, Any], revisions: Sequence[Mapping[str, Any]]
                        ) -> tuple[Mapping[str, Any], Mapping[str, Any], int]:
        """upstream `getStatefulSetRevisions`: (current, update, collisionCount)."""
        count = int(rsc.status_of(set_).get("collisionCount") or 0)
        wanted = history.new_revision(parent=set_, parent_kind=STATEFULSETS,
                                      template_labels=rsc.labels_of(rsc.spec_of(set_).get("template") or {}),
                                      data=history.template_patch(set_), revision=history.next_revision(revisions),
                                      collision_count=count)
        annotations = rsc.meta(set_).get("annotations")
        if annotations:
            wanted["metadata"]["annotations"] = dict(annotations)
        equal = history.find_equal(revisions, wanted)
        update: Mapping[str, Any]
        if equal and history.equal_revision(revisions[-1], equal[-1]):
            update = revisions[-1]
        elif equal:
            update = await self.history.update_revision(equal[-1], int(wanted["revision"]))
        else:
            update, count = await self.history.create(parent=set_, revision=wanted, collision_count=count)
        current_name = rsc.status_of(set_).get("currentRevision")
        current = next((r for r in revisions if rsc.name_of(r) == current_name), update)
        return current, update, count

    # ------------------------------------------------------------------ the update

    async def update_set(self, set_: dict[str, Any], current: Mapping[str, Any], update: Mapping[str, Any],
                         collision_count: int, pods: Sequence[Mapping[str, Any]]
                         ) -> tuple[dict[str, Any], BaseException | None]:
        """upstream `updateStatefulSet`: returns the status to write and the first error."""
        current_set = rules.apply_revision(set_, current)
        update_set = rules.apply_revision(set_, update)
        current_name, update_name = rsc.name_of(current), rsc.name_of(update)
        status: dict[str, Any] = {"observedGeneration": int(rsc.meta(set_).get("generation") or 0),
                                  "currentRevision": current_name, "updateRevision": update_name,
                                  "collisionCount": collision_count}
        start, count = rules.start_ordinal(set_), rsc.replicas_of(set_)
        replicas: list[dict[str, Any] | None] = [None] * count
        condemned: list[dict[str, Any]] = []
        for pod in pods:
            ordinal = rules.ordinal_of(pod)
            if start <= ordinal < start + count:
                replicas[ordinal - start] = dict(pod)
            elif ordinal >= 0:
                condemned.append(dict(pod))
        slots: list[dict[str, Any]] = [
            pod if pod is not None else rules.versioned_pod(current_set, update_set, current_name, update_name,
                                                            start + i)
            for i, pod in enumerate(replicas)]
        condemned.sort(key=rules.ordinal_of, reverse=True)
        first_unhealthy = next((p for p in slots if not rules.healthy(p)), None)
        if first_unhealthy is None:
            first_unhealthy = next((p for p in reversed(condemned) if not rules.healthy(p)), None)
        min_ready = int(rsc.spec_of(set_).get("minReadySeconds") or 0)

        def finish() -> dict[str, Any]:
            numbers = rules.replica_status(slots + condemned, min_ready=min_ready, now=self.clock.now(),
                                           current=current_name, update=update_name)
            status.update(numbers)
            return status

        if rsc.is_deleting(set_):
            return finish(), None
        monotonic = rsc.spec_of(set_).get("podManagementPolicy") != "Parallel"

        async def replica_step(i: int) -> bool:
            return await self.process_replica(set_, current_set, update_set, current_name, update_name,
                                              monotonic, slots, i)

        async def claim_step(i: int) -> bool:
            await self.fix_claims(update_set, condemned[i])
            return False

        async def condemned_step(i: int) -> bool:
            return await self.process_condemned(set_, first_unhealthy, monotonic, condemned, i)

        try:
            for step, size in ((replica_step, len(slots)), (claim_step, len(condemned)),
                               (condemned_step, len(condemned))):
                if await run_for_all(size, step, monotonic=monotonic):
                    return finish(), None
        except Exception as exc:  # the status is still written, then the key retried
            return finish(), exc
        finish()
        if rules.strategy_of(set_) == "OnDelete":
            return status, None
        try:
            await self.rolling_update(set_, slots, update_name, status, min_ready)
        except Exception as exc:
            return status, exc
        return status, None

    async def process_replica(self, set_: Mapping[str, Any], current_set: Mapping[str, Any],
                              update_set: Mapping[str, Any], current_name: str, update_name: str,
                              monotonic: bool, slots: list[dict[str, Any]], i: int) -> bool:
        """upstream `processReplica`: True stops the pass (monotonic waits, or an error)."""
        pod = slots[i]
        if rules.phase(pod) in ("Failed", "Succeeded") and not rsc.is_deleting(pod):
            if rules.phase(pod) == "Failed":
                await self.recorder.warning(set_, "RecreatingFailedPod", f"StatefulSet {rsc.key_of(set_)} is "
                                            f"recreating failed Pod {rsc.name_of(pod)}")
            else:
                await self.recorder.normal(set_, "RecreatingTerminatedPod", f"StatefulSet {rsc.key_of(set_)} is "
                                           f"recreating terminated Pod {rsc.name_of(pod)}")
            await self.delete_pod(set_, pod)
            return True  # the replacement is created once the informer shows the old pod gone
        if not rules.is_created(pod):
            if rsc.meta(pod).get("uid"):
                return monotonic  # created, the kubelet has not reported a phase yet
            if await self.claims_stale(set_, pod):
                return True
            await self.create_pod(set_, pod)
            return monotonic
        if rules.phase(pod) == "Pending":
            await self.create_claims(set_, pod)
        if rsc.is_deleting(pod) and monotonic:
            return True
        if not rules.running_and_ready(pod) and monotonic:
            return True
        min_ready = int(rsc.spec_of(set_).get("minReadySeconds") or 0)
        if not rsc.is_pod_available(pod, min_ready, self.clock.now()) and monotonic:
            return True
        if not (rules.identity_matches(set_, pod) and rules.storage_matches(set_, pod)):
            fixed = caches.deep_copy(pod)
            rules.update_identity(set_, fixed)
            rules.update_storage(set_, fixed)
            await self.create_claims(update_set, fixed)
            slots[i] = await self.client.update(PODS, fixed, field_manager=FIELD_MANAGER)
        else:
            await self.fix_claims(update_set, pod)
        return False

    async def process_condemned(self, set_: Mapping[str, Any], first_unhealthy: Mapping[str, Any] | None,
                                monotonic: bool, condemned: list[dict[str, Any]], i: int) -> bool:
        """upstream `processCondemned`."""
        pod = condemned[i]
        if rsc.is_deleting(pod):
            return monotonic
        min_ready = int(rsc.spec_of(set_).get("minReadySeconds") or 0)
        if monotonic and pod is not first_unhealthy and (
                not rules.running_and_ready(pod) or not rsc.is_pod_available(pod, min_ready, self.clock.now())):
            return True
        await self.delete_pod(set_, pod)
        return monotonic

    async def rolling_update(self, set_: Mapping[str, Any], slots: list[dict[str, Any]], update_name: str,
                             status: dict[str, Any], min_ready: int) -> None:
        """upstream `updateStatefulSetAfterInvariantEstablished` (MaxUnavailableStatefulSet): delete
        out-of-date pods from the highest ordinal down to the partition while fewer than maxUnavailable
        replicas are unavailable."""
        partition = rules.partition_of(set_) or 0
        limit = rules.max_unavailable(set_, rsc.replicas_of(set_))
        now = self.clock.now()
        unavailable = sum(1 for p in slots if not (rules.healthy(p) and rsc.is_pod_available(p, min_ready, now)))
        if unavailable >= limit:
            return
        budget = limit - unavailable
        for target in range(len(slots) - 1, partition - 1, -1):
            if budget <= 0:
                break
            pod = slots[target]
            if rules.revision_of(pod) != update_name and not rsc.is_deleting(pod) and rules.is_created(pod):
                await self.delete_pod(set_, pod)
                budget -= 1
                status["currentReplicas"] = int(status.get("currentReplicas") or 0) - 1

    # ------------------------------------------------------------------ pods and claims

    async def claims_stale(self, set_: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
        for claim in rules.claims_for(set_, rules.ordinal_of(pod)).values():
            have = self.claim_cache.get(rsc.namespace_of(claim), rsc.name_of(claim))
            if have is not None and rules.claim_is_stale(have, rsc.name_of(pod)):
                return True
        return False

    async def create_claims(self, set_: Mapping[str, Any], pod: Mapping[str, Any]) -> None:
        """upstream `createPersistentVolumeClaims`: the pod's missing claims."""
        for claim in rules.claims_for(set_, rules.ordinal_of(pod)).values():
            if self.claim_cache.get(rsc.namespace_of(claim), rsc.name_of(claim)) is not None:
                continue
            refs = rules.wanted_claim_refs(set_, pod, claim)
            if refs:
                claim["metadata"]["ownerReferences"] = refs
            try:
                await self.client.create(CLAIMS, claim, namespace=rsc.namespace_of(claim))
            except errors.AlreadyExists:
                continue
            except errors.StatusError as exc:
                await self.recorder.warning(set_, "FailedCreate", f"create Claim {rsc.name_of(claim)} for Pod "
                                            f"{rsc.name_of(pod)} in StatefulSet {rsc.name_of(set_)} failed error: "
                                            f"{exc.message}")
                raise
            await self.recorder.normal(set_, "SuccessfulCreate", f"create Claim {rsc.name_of(claim)} Pod "
                                       f"{rsc.name_of(pod)} in StatefulSet {rsc.name_of(set_)} success")

    async def fix_claims(self, set_: Mapping[str, Any], pod: Mapping[str, Any]) -> None:
        """upstream `ClaimsMatchRetentionPolicy` / `UpdatePodClaimForRetentionPolicy`: owner
        references on the pod's existing claims as the retention policy wants them."""
        for claim in rules.claims_for(set_, rules.ordinal_of(pod)).values():
            have = self.claim_cache.get(rsc.namespace_of(claim), rsc.name_of(claim))
            if have is None or rsc.is_deleting(have) or rules.claim_refs_match(set_, pod, have):
                continue
            refs = rules.wanted_claim_refs(set_, pod, have)
            patch = {"metadata": {"resourceVersion": rsc.meta(have).get("resourceVersion"),
                                  "ownerReferences": refs or None}}
            try:
                await self.client.patch(CLAIMS, rsc.name_of(have), patch, namespace=rsc.namespace_of(have),
                                        field_manager=FIELD_MANAGER)
            except errors.NotFound:
                continue

    async def create_pod(self, set_: Mapping[str, Any], pod: Mapping[str, Any]) -> None:
        """upstream `CreateStatefulPod`: the claims first, then the pod."""
        await self.create_claims(set_, pod)
        try:
            await self.client.create(PODS, pod, namespace=rsc.namespace_of(set_))
        except errors.AlreadyExists:
            return  # the informer is behind: the next pass sees it
        except errors.StatusError as exc:
            await self.recorder.warning(set_, "FailedCreate", f"create Pod {rsc.name_of(pod)} in StatefulSet "
                                        f"{rsc.name_of(set_)} failed error: {exc.message}")
            raise
        await self.recorder.normal(set_, "SuccessfulCreate", f"create Pod {rsc.name_of(pod)} in StatefulSet "
                                   f"{rsc.name_of(set_)} successful")

    async def delete_pod(self, set_: Mapping[str, Any], pod: Mapping[str, Any]) -> None:
        try:
            await self.client.delete(PODS, rsc.name_of(pod), namespace=rsc.namespace_of(pod),
                                     preconditions={"uid": rsc.uid_of(pod)})
        except errors.NotFound:
            return
        except errors.StatusError as exc:
            await self.recorder.warning(set_, "FailedDelete", f"delete Pod {rsc.name_of(pod)} in StatefulSet "
                                        f"{rsc.name_of(set_)} failed error: {exc.message}")
            raise
        await self.recorder.normal(set_, "SuccessfulDelete", f"delete Pod {rsc.name_of(pod)} in StatefulSet "
                                   f"{rsc.name_of(set_)} successful")

    # ------------------------------------------------------------------ status

    async def update_status(self, set_: dict[str, Any], status: dict[str, Any]) -> None:
        """upstream `updateStatefulSetStatus`: complete a finished rolling update, write when it differs
        (one re-GET and retry on a conflict)."""
        rules.complete_rolling_update(set_, status)
        if not rules.status_differs(set_, status):
            return
        body = dict(set_)
        kept = {k: v for k, v in rsc.status_of(set_).items() if k not in rules.STATUS_FIELDS}
        body["status"] = rsc.compact({**kept, **status}, keep=("replicas", "availableReplicas", "collisionCount"))
        try:
            await self.client.update_status(STATEFULSETS, body, field_manager=FIELD_MANAGER)
        except errors.Conflict:
            fresh = await self.client.get(STATEFULSETS, rsc.name_of(set_), namespace=rsc.namespace_of(set_))
            fresh["status"] = body["status"]
            await self.client.update_status(STATEFULSETS, fresh, field_manager=FIELD_MANAGER)


async def run_for_all(count: int, step: Step, *, monotonic: bool) -> bool:
    """upstream `runForAll`: in order, stopping at the first step that says so (monotonic); else in
    slow-start batches (1, 2, 4, ...), stopping at the first error. True: stop the pass."""
    if monotonic:
        for i in range(count):
            if await step(i):
                return True
        return False
    done = 0
    batch = 1
    while done < count:
        size = min(batch, count - done)
        results = await asyncio.gather(*(step(i) for i in range(done, done + size)), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result
        done += size
        batch *= 2
    return False


def new(ctx: managers.ControllerContext, *, workers: int = 2) -> managers.Controller:
    controller = StatefulSetController(client=ctx.client, informer_factory=ctx.informers,
                                       recorder=ctx.recorder(COMPONENT), clock=ctx.clock)
    return managers.Controller(name=NAME, reconciler=controller, watches=controller.watches(), workers=workers)
