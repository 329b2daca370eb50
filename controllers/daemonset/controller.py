"""The DaemonSet controller (kube-controller-manager's `daemonset` controller, `pkg/controller/daemon`).

Per DaemonSet key (`namespace/name`), from the informer caches:

1. Nothing for a DaemonSet being deleted. Pods are claimed as the ReplicaSet controller claims them
   (adopt matching orphans, release non-matching); so are ControllerRevisions.
2. **History**: the current revision is the one whose data equals the template patch; missing, it
   is created as `<ds>-<hash>` (the pod-template hash of the template and `status.collisionCount`),
   labelled `controller-revision-hash: <hash>` with the DaemonSet's annotations and revision
   `max(old) + 1`; a name taken by another template bumps `status.collisionCount` and the pass is
   retried. A current revision with a lower number than an old one is renumbered.
3. **Manage**, once expectations are satisfied: for each node, `node_should_run` decides (nodeName,
   nodeSelector, required node affinity, taints against the template's tolerations plus the ones
   daemon pods always get). A node that should run a pod and has none gets one; failed pods are
   deleted (Warning `FailedDaemonPod`, per node after upstream's 1 s .. 15 min backoff); a node with
   extra pods keeps the oldest (with maxSurge, the oldest new one and, while that is not available,
   the oldest ready old one); a node that should not run a pod (untolerated NoExecute taint,
   selector no longer matching) loses its pods; unscheduled pods meant for nodes that are gone are
   deleted (scheduled ones are the pod garbage collector's). Pods are created in slow-start batches
   with generateName `<ds>-`, the template's labels plus `controller-revision-hash` and
   `pod-template-generation`, and a required node affinity `metadata.name In [node]`: the scheduler
   binds them.
4. **RollingUpdate** (not `OnDelete`): without maxSurge, delete old pods that are unavailable, and
   available ones while fewer than `maxUnavailable` of the desired nodes are unavailable; with
   maxSurge, create the new pod beside the old one on up to `maxSurge` nodes, and delete the old pod
   once the new one is available.
5. History beyond `revisionHistoryLimit` is deleted, oldest first, except revisions a pod still runs.
6. **Status** (PUT /status when changed): desired/current/ready/available/updated/misscheduled/
   unavailable numbers, observedGeneration, collisionCount; requeued for the moment a ready pod
   becomes available under minReadySeconds.

Events (`daemonset-controller`): SuccessfulCreate "Created pod: x", FailedCreate "Error creating: ...",
SuccessfulDelete "Deleted pod: x", FailedDelete, FailedDaemonPod "Found failed daemon pod ns/x on
node n, will try to kill it", SelectingAll.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import structlog

from controllers import history
from controllers import replicaset as rsc
from controllers.daemonset import rules
from controllers.runtime import cache as caches
from controllers.runtime import client as clients
from controllers.runtime import informer as informers
from controllers.runtime import manager as managers
from controllers.runtime import reconcile
from cp import clock as clocks
from cp import errors

NAME = "daemonset"
COMPONENT = "daemonset-controller"
FIELD_MANAGER = "daemonset-controller"
BURST_REPLICAS = 250  # upstream `BurstReplicas` of the DaemonSet controller

DAEMONSETS = clients.resolve("daemonsets.apps")
PODS = clients.resolve("pods")
NODES = clients.resolve("nodes")
REVISIONS = history.REVISIONS

Result = reconcile.Result

INDEXERS = {caches.OWNER_UID: caches.by_owner_uid}

logger = structlog.get_logger("cplane.controllers.daemonset")


class CollisionBumped(Exception):
    """The revision name was taken by another template: collisionCount went up, the pass retries."""


class DaemonSetController:
    def __init__(self, *, client: clients.Client, informer_factory: informers.InformerFactory,
                 recorder: managers.EventRecorder, clock: clocks.Clock) -> None:
        self.client = client
        self.recorder = recorder
        self.clock = clock
        self.expectations = rsc.Expectations(clock)
        self.failed_backoff = rules.FailedPodBackoff()
        self._claimed: dict[str, set[str]] = {}  # DaemonSet uid -> pod uids claimed in the running pass
        self.ds_cache = informer_factory.informer(DAEMONSETS, indexers=INDEXERS).cache
        self.pod_cache = informer_factory.informer(PODS, indexers=INDEXERS).cache
        self.node_cache = informer_factory.informer(NODES).cache
        self.rev_cache = informer_factory.informer(REVISIONS, indexers=INDEXERS).cache
        self.history = history.History(client=client, cache=self.rev_cache, field_manager=FIELD_MANAGER)

    def watches(self) -> list[managers.Watch]:
        return [managers.Watch(kind=DAEMONSETS, map=self.map_daemonset, indexers=INDEXERS),
                managers.Watch(kind=PODS, map=self.map_pod, indexers=INDEXERS),
                managers.Watch(kind=NODES, map=self.map_node),
                managers.Watch(kind=REVISIONS, map=self.map_revision, indexers=INDEXERS)]

    # ------------------------------------------------------------------ event mapping

    @staticmethod
    def _request(obj: Mapping[str, Any]) -> reconcile.Request:
        return reconcile.Request(namespace=rsc.namespace_of(obj), name=rsc.name_of(obj))

    def map_daemonset(self, change: managers.Change) -> list[reconcile.Request]:
        if change.type == "delete":
            self.expectations.delete(rsc.key_of(change.obj))
        return [self._request(change.obj)]

    def resolve_controller(self, namespace: str, ref: Mapping[str, Any] | None) -> dict[str, Any] | None:
        if ref is None or ref.get("kind") != DAEMONSETS.kind:
            return None
        ds = self.ds_cache.get(namespace, str(ref.get("name") or ""))
        if ds is None or rsc.uid_of(ds) != str(ref.get("uid") or ""):
            return None
        return ds

    def selecting(self, obj: Mapping[str, Any]) -> list[reconcile.Request]:
        labels = rsc.labels_of(obj)
        out = []
        for ds in self.ds_cache.list(rsc.namespace_of(obj)):
            sel = rsc.selector_of(ds)
            if sel is not None and not sel.empty and sel.matches(labels):
                out.append(self._request(ds))
        return out

    def map_pod(self, change: managers.Change) -> list[reconcile.Request]:
        pod = change.obj
        ns = rsc.namespace_of(pod)
        ds = self.resolve_controller(ns, rsc.controller_ref(pod))
        if change.type == "delete" or (rsc.is_deleting(pod) and not rsc.is_deleting(change.old or {})
                                       and change.type == "update"):
            if ds is not None:
                self.expectations.deletion_observed(rsc.key_of(ds), rsc.key_of(pod))
                return [self._request(ds)]
            return []
        if change.type == "add":
            if ds is not None:
                if rsc.is_deleting(pod):
                    self.expectations.deletion_observed(rsc.key_of(ds), rsc.key_of(pod))
                else:
                    self.expectations.creation_observed(rsc.key_of(ds))
                return [self._request(ds)]
            return self.selecting(pod) if rsc.controller_ref(pod) is None else []
        out = []
        old = change.old or {}
        old_ds = self.resolve_controller(ns, rsc.controller_ref(old))
        if old_ds is not None and (ds is None or rsc.uid_of(old_ds) != rsc.uid_of(ds)):
            out.append(self._request(old_ds))
        if ds is not None:
            out.append(self._request(ds))
        elif rsc.controller_ref(pod) is None and rsc.labels_of(old) != rsc.labels_of(pod):
            out += self.selecting(pod)
        return out

    def map_node(self, change: managers.Change) -> list[reconcile.Request]:
        """upstream `addNode` / `updateNode`: a new node wakes the DaemonSets that should run on it; an
        update only those whose placement on it changed (heartbeats and status are ignored,
        `shouldIgnoreNodeUpdate`). A deleted node wakes every DaemonSet (upstream: those that should run
        on it): unscheduled pods meant for it are deleted."""
        node = change.obj
        if change.type == "delete":
            return [self._request(ds) for ds in self.ds_cache.list()]
        if change.type == "add":
            return [self._request(ds) for ds in self.ds_cache.list() if rules.node_should_run(node, ds).should_run]
        old = change.old or {}
        if rsc.labels_of(old) == rsc.labels_of(node) and (old.get("spec") or {}) == (node.get("spec") or {}):
            return []
        return [self._request(ds) for ds in self.ds_cache.list()
                if rules.node_should_run(old, ds) != rules.node_should_run(node, ds)]

    def map_revision(self, change: managers.Change) -> list[reconcile.Request]:
        ds = self.resolve_controller(rsc.namespace_of(change.obj), rsc.controller_ref(change.obj))
        if ds is not None:
            return [self._request(ds)]
        return self.selecting(change.obj) if rsc.controller_ref(change.obj) is None else []

    # ------------------------------------------------------------------ reconcile

    async def reconcile(self, request: reconcile.Request) -> reconcile.Result | None:
        key = f"{request.namespace}/{request.name}"
        cached = self.ds_cache.get(request.namespace, request.name)
        if cached is None:
            self.expectations.delete(key)
            return None
        ds = caches.deep_copy(cached)
        selector = rsc.selector_of(ds)
        if selector is None:
            return None
        if selector.empty:
            await self.recorder.warning(ds, "SelectingAll", "This daemon set is selecting all pods. "
                                        "A non-empty selector is required.")
            return None
        if rsc.is_deleting(ds):
            return None
        nodes = self.node_cache.list()
        revisions = await self.history.claim(parent=ds, parent_kind=DAEMONSETS, selector=selector)
        try:
            current, old = await self.construct_history(ds, revisions)
        except CollisionBumped:
            return reconcile.Result(requeue_after=0.001)
        hash_ = rsc.labels_of(current).get(rules.HASH_LABEL) or rules.template_hash(ds)
        node_pods = await self.node_to_pods(ds, selector)
        if not self.expectations.satisfied(key):
            self._claimed.pop(rsc.uid_of(ds), None)
            return await self.update_status(ds, nodes, node_pods, hash_)
        errors_: list[BaseException] = []
        backoff: float | None = None
        try:
            backoff = await self.manage(ds, nodes, node_pods, hash_)
        except Exception as exc:  # status first, then the retry
            errors_.append(exc)
        if self.expectations.satisfied(key) and not errors_:
            strategy = (rsc.spec_of(ds).get("updateStrategy") or {}).get("type", "RollingUpdate")
            if strategy == "RollingUpdate":
                try:
                    await self.rolling_update(ds, nodes, self.owned_by_node(ds), hash_)
                except Exception as exc:
                    errors_.append(exc)
        await self.cleanup_history(ds, old, self.owned_by_node(ds))
        result = await self.update_status(ds, nodes, self.owned_by_node(ds), hash_)
        self._claimed.pop(rsc.uid_of(ds), None)
        if errors_:
            raise errors_[0]
        if backoff is not None:
            wait = backoff + rsc.AVAILABILITY_SLACK
            if result is None or result.requeue_after is None or wait < result.requeue_after:
                return Result(requeue_after=wait)
        return result

    async def node_to_pods(self, ds: Mapping[str, Any], selector: Any) -> dict[str, list[dict[str, Any]]]:
        """The DaemonSet's pods by target node after claiming them (upstream `getNodesToDaemonPods`);
        terminal pods being deleted are left out. Remembers what it claimed for `owned_by_node`."""
        manager = rsc.RefManager(client=self.client, controller=ds, controller_kind=DAEMONSETS,
                                 dependent_kind=PODS, selector=selector, field_manager=FIELD_MANAGER,
                                 can_adopt=rsc.recheck_controller(self.client, DAEMONSETS, ds))
        pods = await manager.claim(self._candidates(ds))
        self._claimed[rsc.uid_of(ds)] = {rsc.uid_of(p) for p in pods}
        return self._by_node(pods)

    def owned_by_node(self, ds: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
        """The same grouping later in the pass, from the cache, without claiming again: pods controlled
        by the DaemonSet, or adopted by this pass (the cache may not show the adoption yet)."""
        claimed = self._claimed.get(rsc.uid_of(ds), set())
        selector = rsc.selector_of(ds)
        own = [p for p in self._candidates(ds)
               if rsc.uid_of(p) in claimed or ((rsc.controller_ref(p) or {}).get("uid") == rsc.uid_of(ds)
                                                and selector is not None and selector.matches(rsc.labels_of(p)))]
        return self._by_node(own)

    def _candidates(self, ds: Mapping[str, Any]) -> list[dict[str, Any]]:
        return [p for p in self.pod_cache.list(rsc.namespace_of(ds))
                if not (rsc.is_deleting(p) and rsc.status_of(p).get("phase") in ("Succeeded", "Failed"))]

    @staticmethod
    def _by_node(pods: Sequence[Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = {}
        for pod in pods:
            out.setdefault(rules.target_node(pod), []).append(dict(pod))
        return out

    # ------------------------------------------------------------------ history

    async def construct_history(self, ds: dict[str, Any], revisions: Sequence[Mapping[str, Any]]
                                ) -> tuple[Mapping[str, Any], list[Mapping[str, Any]]]:
        """upstream `constructHistory`: (current revision, old ones)."""
        patch = history.template_patch(ds)
        wanted = history.patch_bytes(patch)
        currents: list[Mapping[str, Any]] = []
        old: list[Mapping[str, Any]] = []
        for rev in revisions:
            if rules.HASH_LABEL not in rsc.labels_of(rev):
                body = caches.deep_copy(dict(rev))
                body["metadata"].setdefault("labels", {})[rules.HASH_LABEL] = rsc.name_of(rev)
                rev = await self.client.update(REVISIONS, body, field_manager=FIELD_MANAGER)
            (currents if history.patch_bytes(rev.get("data")) == wanted else old).append(rev)
        number = history.next_revision(old)
        if not currents:
            return await self.snapshot(ds, patch, number), old
        current = max(currents, key=history.sort_key)
        for dup in currents:
            if dup is not current:
                await self.relabel_pods(ds, rsc.labels_of(current).get(rules.HASH_LABEL, ""))
                await self.history.delete(dup)
        if history.revision_number(current) < number:
            current = await self.history.update_revision(current, number)
        return current, old

    async def relabel_pods(self, ds: Mapping[str, Any], hash_: str) -> None:
        """upstream `dedupCurHistories`: before a duplicate current revision is deleted, every pod of the
        DaemonSet whose hash label differs from the kept revision's is patched to carry it."""
        for pod in self.pod_cache.list(rsc.namespace_of(ds)):
            if (rsc.controller_ref(pod) or {}).get("uid") != rsc.uid_of(ds) or \
                    rsc.labels_of(pod).get(rules.HASH_LABEL) == hash_:
                continue
            try:
                await self.client.patch(PODS, rsc.name_of(pod), {"metadata": {"labels": {rules.HASH_LABEL: hash_}}},
                                        namespace=rsc.namespace_of(pod), field_manager=FIELD_MANAGER)
            except errors.NotFound:
                continue

    async def snapshot(self, ds: dict[str, Any], patch: dict[str, Any], number: int) -> dict[str, Any]:
        """upstream `snapshot`: create `<ds>-<hash>`; on a name collision with other data, bump the
        DaemonSet's collisionCount (only if the cached count was current) and retry the pass."""
        hash_ = rules.template_hash(ds)
        name = f"{rsc.name_of(ds)}-{hash_}"
        template_labels = rsc.labels_of(rsc.spec_of(ds).get("template") or {})
        body: dict[str, Any] = {"apiVersion": "apps/v1", "kind": "ControllerRevision",
                "metadata": {"name": name, "namespace": rsc.namespace_of(ds),
                             "labels": {**template_labels, rules.HASH_LABEL: hash_},
                             "ownerReferences": [rsc.new_controller_ref(ds, DAEMONSETS)]},
                "data": patch, "revision": number}
        annotations = rsc.meta(ds).get("annotations")
        if annotations:
            body["metadata"]["annotations"] = dict(annotations)
        try:
            return await self.client.create(REVISIONS, body, namespace=rsc.namespace_of(ds),
                                            field_manager=FIELD_MANAGER)
        except errors.AlreadyExists:
            existing = await self.client.get(REVISIONS, name, namespace=rsc.namespace_of(ds))
            if history.patch_bytes(existing.get("data")) == history.patch_bytes(patch):
                return existing
            fresh = await self.client.get(DAEMONSETS, rsc.name_of(ds), namespace=rsc.namespace_of(ds))
            if rsc.status_of(fresh).get("collisionCount") != rsc.status_of(ds).get("collisionCount"):
                raise CollisionBumped(name) from None
            status = dict(rsc.status_of(fresh))
            status["collisionCount"] = int(status.get("collisionCount") or 0) + 1
            fresh["status"] = status
            await self.client.update_status(DAEMONSETS, fresh, field_manager=FIELD_MANAGER)
            logger.info("hash_collision", daemonset=rsc.key_of(ds), collision_count=status["collisionCount"])
            raise CollisionBumped(name) from None

    async def cleanup_history(self, ds: Mapping[str, Any], old: Sequence[Mapping[str, Any]],
                              node_pods: Mapping[str, Sequence[Mapping[str, Any]]]) -> None:
        """upstream `cleanupHistory`: delete old revisions beyond revisionHistoryLimit, oldest first,
        skipping those a pod still carries the hash of."""
        limit = rsc.spec_of(ds).get("revisionHistoryLimit")
        to_kill = len(old) - (int(limit) if limit is not None else 10)
        if to_kill <= 0:
            return
        live = {rsc.labels_of(p).get(rules.HASH_LABEL) for pods in node_pods.values() for p in pods}
        for rev in history.sorted_revisions(old):
            if to_kill <= 0:
                break
            if rsc.labels_of(rev).get(rules.HASH_LABEL) in live:
                continue
            await self.history.delete(rev)
            to_kill -= 1

    # ------------------------------------------------------------------ manage

    async def manage(self, ds: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]],
                     node_pods: Mapping[str, Sequence[Mapping[str, Any]]], hash_: str) -> float | None:
        """upstream `manage` + `podsShouldBeOnNode`; returns when to look again for a failed pod held
        back by its node's backoff (None: no such pod)."""
        surge, _ = rules.surge_and_unavailable(ds, len(nodes))
        min_ready = int(rsc.spec_of(ds).get("minReadySeconds") or 0)
        now = self.clock.now()
        create_on: list[str] = []
        delete: list[Mapping[str, Any]] = []
        retry_after: float | None = None
        self.failed_backoff.gc(now)
        known = set()
        for node in nodes:
            node_name = rsc.name_of(node)
            known.add(node_name)
            placement = rules.node_should_run(node, ds)
            pods = list(node_pods.get(node_name) or [])
            if placement.should_run and not pods:
                create_on.append(node_name)
            elif placement.should_continue_running:
                running = []
                for pod in pods:
                    if rsc.is_deleting(pod):
                        continue
                    if rsc.status_of(pod).get("phase") == "Failed":
                        backoff_key = f"{rsc.uid_of(ds)}/{node_name}"
                        wait = self.failed_backoff.remaining(backoff_key, now)
                        if wait > 0:
                            retry_after = wait if retry_after is None else min(retry_after, wait)
                            continue
                        self.failed_backoff.next(backoff_key, now)
                        await self.recorder.warning(ds, "FailedDaemonPod", f"Found failed daemon pod "
                                                    f"{rsc.key_of(pod)} on node {node_name}, will try to kill it")
                        delete.append(pod)
                    else:
                        running.append(pod)
                running.sort(key=rules.by_age_and_phase)
                if surge == 0:
                    delete += running[1:]
                else:
                    newest: Mapping[str, Any] | None = None
                    oldest_old: Mapping[str, Any] | None = None
                    for pod in running:
                        if rules.is_updated(pod, ds, hash_):
                            if newest is None:
                                newest = pod
                                continue
                        elif oldest_old is None:
                            oldest_old = pod
                            continue
                        delete.append(pod)
                    if newest is not None and oldest_old is not None and (
                            not rsc.is_pod_ready(oldest_old) or rsc.is_pod_available(newest, min_ready, now)):
                        delete.append(oldest_old)
            else:
                delete += [p for p in pods if not rsc.is_deleting(p)]
        for node_name, orphaned in node_pods.items():
            if node_name not in known:  # upstream getUnscheduledPodsWithoutNode: never scheduled, node gone
                delete += [p for p in orphaned if not rsc.is_deleting(p) and not rsc.spec_of(p).get("nodeName")]
        await self.sync_nodes(ds, delete, create_on, hash_)
        return retry_after

    async def sync_nodes(self, ds: Mapping[str, Any], delete: Sequence[Mapping[str, Any]],
                         create_on: Sequence[str], hash_: str) -> None:
        """upstream `syncNodes`: expectations, then slow-start creates and concurrent deletes."""
        key = rsc.key_of(ds)
        creates = list(create_on)[:BURST_REPLICAS]
        deletes = list({rsc.key_of(p): p for p in delete}.values())[:BURST_REPLICAS]
        if not creates and not deletes:
            return
        self.expectations.expect(key, creations=len(creates), deletions=[rsc.key_of(p) for p in deletes])
        first_error: BaseException | None = None
        if creates:
            pending = iter(creates)

            async def create_next() -> None:
                await self.create_pod(ds, next(pending), hash_)

            successes, first_error = await rsc.slow_start_batch(len(creates), 1, create_next)
            for _ in range(len(creates) - successes):
                self.expectations.creation_observed(key)
        if deletes:
            results = await asyncio.gather(*(self.delete_pod(ds, p) for p in deletes), return_exceptions=True)
            for result in results:
                if isinstance(result, BaseException):
                    if not isinstance(result, Exception):
                        raise result
                    first_error = first_error or result
        if first_error is not None:
            raise first_error

    async def create_pod(self, ds: Mapping[str, Any], node_name: str, hash_: str) -> None:
        pod = rules.daemon_pod(ds, node_name=node_name, hash_=hash_)
        pod["metadata"].update(generateName=f"{rsc.name_of(ds)}-", namespace=rsc.namespace_of(ds),
                               ownerReferences=[rsc.new_controller_ref(ds, DAEMONSETS)])
        pod["metadata"].pop("name", None)
        await rsc.create_pod(self.client, self.recorder, ds, pod)

    async def delete_pod(self, ds: Mapping[str, Any], pod: Mapping[str, Any]) -> None:
        try:
            await self.client.delete(PODS, rsc.name_of(pod), namespace=rsc.namespace_of(pod))
        except errors.NotFound:
            self.expectations.deletion_observed(rsc.key_of(ds), rsc.key_of(pod))
            return
        except errors.StatusError as exc:
            self.expectations.deletion_observed(rsc.key_of(ds), rsc.key_of(pod))
            await self.recorder.warning(ds, "FailedDelete", f"Error deleting: {exc.message}")
            raise
        await self.recorder.normal(ds, "SuccessfulDelete", f"Deleted pod: {rsc.name_of(pod)}")

    # ------------------------------------------------------------------ rolling update

    async def rolling_update(self, ds: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]],
                             node_pods: Mapping[str, Sequence[Mapping[str, Any]]], hash_: str) -> None:
        """upstream `rollingUpdate` (both the maxUnavailable and the maxSurge branch)."""
        per_node: dict[str, Sequence[Mapping[str, Any]]] = dict(node_pods)
        desired = 0
        for node in nodes:
            if rules.node_should_run(node, ds).should_run:
                desired += 1
                per_node.setdefault(rsc.name_of(node), [])
        per_node.pop("", None)
        surge, max_unavailable = rules.surge_and_unavailable(ds, desired)
        min_ready = int(rsc.spec_of(ds).get("minReadySeconds") or 0)
        now = self.clock.now()
        if surge == 0:
            unavailable = 0
            allowed: list[Mapping[str, Any]] = []
            candidates: list[Mapping[str, Any]] = []
            for name in sorted(per_node):
                new, old, ok = rules.find_updated_pods(per_node[name], ds, hash_)
                if not ok or (new is None) == (old is None):
                    unavailable += 1
                elif new is not None:
                    if not rsc.is_pod_available(new, min_ready, now):
                        unavailable += 1
                elif old is not None:
                    if not rsc.is_pod_available(old, min_ready, now):
                        allowed.append(old)
                    elif unavailable < max_unavailable:
                        candidates.append(old)
            room = min(max(max_unavailable - unavailable, 0), len(candidates))
            await self.sync_nodes(ds, allowed + candidates[:room], [], hash_)
            return
        surged = 0
        allowed_nodes: list[str] = []
        candidate_nodes: list[str] = []
        old_to_delete: list[Mapping[str, Any]] = []
        for name in sorted(per_node):
            new, old, ok = rules.find_updated_pods(per_node[name], ds, hash_)
            if not ok:
                surged += 1
            elif old is None:
                continue
            elif new is None:
                if not rsc.is_pod_available(old, min_ready, now):
                    allowed_nodes.append(name)
                elif surged < surge:
                    candidate_nodes.append(name)
            elif not rsc.is_pod_available(new, min_ready, now):
                surged += 1
            else:
                old_to_delete.append(old)
        room = min(max(surge - surged, 0), len(candidate_nodes))
        await self.sync_nodes(ds, old_to_delete, allowed_nodes + candidate_nodes[:room], hash_)

    # ------------------------------------------------------------------ status

    async def update_status(self, ds: dict[str, Any], nodes: Sequence[Mapping[str, Any]],
                            node_pods: Mapping[str, Sequence[Mapping[str, Any]]], hash_: str
                            ) -> Result | None:
        now = self.clock.now()
        numbers = rules.calculate_status(ds, nodes, node_pods, hash_, now=now)
        old = rsc.status_of(ds)
        generation = int(rsc.meta(ds).get("generation") or 0)
        status = {k: v for k, v in old.items() if k in ("collisionCount", "conditions")}
        status.update(numbers)
        status["observedGeneration"] = generation
        status = rsc.compact(status, keep=rules.REQUIRED_STATUS)
        if status != rsc.compact(dict(old), keep=rules.REQUIRED_STATUS):
            body = dict(ds)
            body["status"] = status
            try:
                await self.client.update_status(DAEMONSETS, body, field_manager=FIELD_MANAGER)
            except errors.Conflict:
                fresh = await self.client.get(DAEMONSETS, rsc.name_of(ds), namespace=rsc.namespace_of(ds))
                fresh["status"] = {**status, **{k: v for k, v in rsc.status_of(fresh).items()
                                                if k == "collisionCount"}}
                await self.client.update_status(DAEMONSETS, fresh, field_manager=FIELD_MANAGER)
        min_ready = int(rsc.spec_of(ds).get("minReadySeconds") or 0)
        if min_ready > 0 and numbers["numberReady"] > numbers["numberAvailable"]:
            pods = [p for pods in node_pods.values() for p in pods]
            wait = rsc.next_availability(ds, pods, now)
            if wait is not None:
                return Result(requeue_after=wait)
        return None


def new(ctx: managers.ControllerContext, *, workers: int = 2) -> managers.Controller:
    controller = DaemonSetController(client=ctx.client, informer_factory=ctx.informers,
                                     recorder=ctx.recorder(COMPONENT), clock=ctx.clock)
    return managers.Controller(name=NAME, reconciler=controller, watches=controller.watches(), workers=workers)

