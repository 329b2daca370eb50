"""The scheduler (kube-scheduler's `default-scheduler` profile, with the DynamicResources plugin):
puts pending pods on nodes and allocates their ResourceClaims with the DRA allocation library.

**Which pods.** Pods without `spec.nodeName`, whose `spec.schedulerName` names one of the profiles
(`default-scheduler` unless a KubeSchedulerConfiguration says otherwise), not
being deleted, not terminal and without `spec.schedulingGates`. A pod whose claims are not ready
to be looked at (a template claim not created yet, a claim missing, being deleted or not owned by
the pod) waits silently, as upstream's PreEnqueue gate does, until the pod's
`status.resourceClaimStatuses` or one of its claims changes.

**One scheduling cycle** (serialized; workers overlap only in their binding cycles):

1. PreFilter (DynamicResources): claims allocated but reserved by 256 others ("resourceclaim in
   use"), claims another pod is allocating right now, unknown device classes ("request r: device
   class c does not exist"), admin access outside a namespace labelled
   `resource.kubernetes.io/admin-access: "true"`; the special claim for extended resources backed
   by DRA (KEP-5004) when a container requests e.g. `example.com/gpu`.
2. Filter every node — round robin from where the last cycle stopped, until the adaptive
   `percentageOfNodesToScore` of feasible nodes is found (230 of 500, 680 of 2,000; nodes known
   not to fit the claims are passed over, `NodeCache.infeasible_mask`) — with NodeUnschedulable,
   NodeName, TaintToleration, NodeAffinity, NodeResourcesFit (see `cp.scheduling.plugins`) and then
   DynamicResources: allocated claims must be usable on the node (their allocation's node
   selector), the others are allocated with one `Allocator` (kept while slices, classes and
   DeviceTaintRules are unchanged) against an `AllocatedState` maintained from the claim informer
   plus in-flight assumptions, with a time limit per node (`filter_timeout`, 10 s) and for all
   the nodes of one cycle together (`pod_filter_timeout`, also 10 s).
3. Score the feasible nodes (least allocated, balanced, spreading a controller's pods, taints,
   preferred affinity, prioritized-list choice) and pick the best; ties are broken at random
   (seedable).
4. Reserve: the allocation results are assumed at once (so the next cycle never hands out the same
   devices), as is the pod on its node.

**Binding cycle** (as upstream's PreBind + Bind): for each claim not yet reserved for the pod, add
the `resource.kubernetes.io/delete-protection` finalizer (plain update) and write `status.allocation`
(if this cycle allocated it) plus a `reservedFor` entry `{resource: pods, name, uid}` (status update
with the resourceVersion precondition, re-read and retried on conflict); the extended-resource claim
is created first (`<pod>-extended-resources-`, annotation
`resource.kubernetes.io/extended-resource-claim: "true"`) and recorded in
`pod.status.extendedResourceClaimStatus`; then `pods/binding`. Any failure undoes the reservation
(reservedFor entry removed, created claim deleted, assumptions dropped) and the pod is retried
after a backoff; a Normal `Scheduled` event reports success.

**Failure.** The pod gets `PodScheduled=False`, reason `Unschedulable`, with upstream's message
(`0/3 nodes are available: 3 cannot allocate all claims. still not schedulable, preemption: 0/3
nodes are available: 3 Preemption is not helpful for scheduling.`) and a Warning `FailedScheduling`
event. When no node fits, DefaultPreemption may choose victims on one node (lower priority, budgets
respected as far as possible; see `cp.scheduling.preemption`): they get `DisruptionTarget` and are
deleted gracefully, and the pod gets `status.nominatedNodeName` and is tried there first once they
are gone (`controllers.scheduler.preemption`). It then waits in the unschedulable pool until a cluster event that one of the plugins
that rejected it registered happens (queueing hints, `queue` and `cp.scheduling.events`) — for
DynamicResources a ResourceSlice, DeviceClass, DeviceTaintRule or Namespace change, a node added or
relabelled/retainted/resized, a claim deallocated or one of its own claims changed, an assigned pod
deleted or finished — subject to the per-pod backoff (1 s doubling to 10 s; ignored when nothing
else is queued), and at the latest after 5 minutes. Errors (a bad CEL expression, more than 32
devices in a claim, a timed-out search: `running "DynamicResources" filter plugin: ...`) set reason
`SchedulerError` and are retried after the backoff alone.

Long searches never block the event loop (which serves the API in `cplane serve`) for more than
about 50 ms: a node whose allocation takes longer continues in a worker thread, with claim-state
updates held back until it finishes. Deviations from kube-scheduler are listed in
docs/controllers.md ("Scheduler").

This module wires the parts and runs the reconcile (one attempt per pod): `queue` (unschedulable
pool and backoff), `nodes` (node cache and assumed pods), `assume` (claims in use, the allocator),
`cycle` (the scheduling cycle), `binding` (the binding cycle); `controller` is the manager's view.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Mapping, Sequence
from typing import Any

import structlog

from controllers.runtime import cache as caches
from controllers.runtime import client as clients
from controllers.runtime import informer as informers
from controllers.runtime import manager as managers
from controllers.runtime import workqueue
from controllers.runtime.reconcile import Request, Result
from controllers.scheduler import gang, podgroupclaims
from controllers.scheduler.assume import AssumeCache
from controllers.scheduler.binding import Binder
from controllers.scheduler.config import (
    BINDING_TIMEOUT,
    CLAIM_INDEXERS,
    CLAIMS,
    CLASSES,
    COMPONENT,
    EVENT_REPEAT_INTERVAL,
    FEATURES,
    FILTER_TIMEOUT,
    INITIAL_BACKOFF,
    MAX_BACKOFF,
    NAMESPACES,
    NODES,
    POD_INDEXERS,
    PODS,
    PVCS,
    PVS,
    REPLICA_SETS,
    REPLICATION_CONTROLLERS,
    RULES,
    SCHEDULER_NAME,
    SERVICES,
    SLICES,
    STATEFUL_SETS,
    STORAGE_CLASSES,
    TERMINAL,
    UNSCHEDULABLE_MAX,
)
from controllers.scheduler.cycle import InformerVolumes, SchedulingCycle
from controllers.scheduler.nodes import NodeCache
from controllers.scheduler.plan import (
    BindingError,
    Error,
    Gate,
    Gated,
    Plan,
    Stats,
    Unschedulable,
    allocation_of,
    is_pending,
    pod_updated,
)
from controllers.scheduler.preemption import PDBS, Preemption
from controllers.scheduler.queue import SchedulingQueue, request_of
from cp import clock as clocks
from cp import errors, selectors
from cp import features as gates
from cp.dra import Features
from cp.objects import meta_of, spec_of, status_of, uid_of
from cp.scheduling import events as cluster_events
from cp.scheduling import framework
from cp.scheduling import profiles as scheduling_profiles
from cp.scheduling.plugins import podtopologyspread

logger = structlog.get_logger("cplane.controllers.scheduler")


class Scheduler:
    def __init__(self, *, client: clients.Client, informer_factory: informers.InformerFactory,
                 clock: clocks.Clock, recorder: managers.EventRecorder, filter_timeout: float = FILTER_TIMEOUT,
                 pod_filter_timeout: float = FILTER_TIMEOUT, percentage_of_nodes_to_score: int = 0,
                 seed: int | None = None, features: Features = FEATURES,
                 profiles: Sequence[framework.Profile] | None = None, initial_backoff: float = INITIAL_BACKOFF,
                 max_backoff: float = MAX_BACKOFF, binding_timeout: float = BINDING_TIMEOUT,
                 feature_gates: gates.FeatureGates = gates.DEFAULT) -> None:
        self.client = client
        self.clock = clock
        self.recorder = recorder
        self.features = features
        self.rng = random.Random(seed)
        self.stats = Stats()
        self.controller: managers.Controller | None = None
        self._log = logger

        self.pods = informer_factory.informer(PODS, indexers=POD_INDEXERS)
        self.claims = informer_factory.informer(CLAIMS, indexers=CLAIM_INDEXERS)
        self.slices = informer_factory.informer(SLICES)
        self.classes = informer_factory.informer(CLASSES)
        self.nodes = informer_factory.informer(NODES)
        self.rules = informer_factory.informer(RULES)
        self.namespaces = informer_factory.informer(NAMESPACES)
        self.pvcs = informer_factory.informer(PVCS)
        self.pvs = informer_factory.informer(PVS)
        self.storage_classes = informer_factory.informer(STORAGE_CLASSES)
        # PodTopologySpread's default constraints need who selects a pod (no queueing events).
        self.services = informer_factory.informer(SERVICES)
        self.owners = {"ReplicationController": informer_factory.informer(REPLICATION_CONTROLLERS),
                       "ReplicaSet": informer_factory.informer(REPLICA_SETS),
                       "StatefulSet": informer_factory.informer(STATEFUL_SETS)}
        self.pdbs = informer_factory.informer(PDBS)

        # Nodes and what the pods on them request (informer + assumed pods).
        node_allocatable = feature_gates.enabled(gates.DRA_NODE_ALLOCATABLE_RESOURCES)
        self.node_cache = NodeCache(node_allocatable=node_allocatable)
        # DRA: what is in use (informer + assumptions), and the allocator over slices/classes/rules.
        self.assume = AssumeCache(claims=self.claims, slices=self.slices, classes=self.classes, rules=self.rules,
                                  nodes=self.node_cache, features=features,
                                  use_taint_rules=feature_gates.enabled(gates.DRA_DEVICE_TAINT_RULES))
        # One scheduling cycle per profile, by schedulerName; pods naming another are left alone.
        self.profiles = list(profiles) if profiles else [scheduling_profiles.default_profile()]
        volumes = InformerVolumes(pvcs=self.pvcs, pvs=self.pvs, classes=self.storage_classes)
        # DefaultPreemption: PostFilter, the nominated pods, the preparation of victims.
        self.preemption = Preemption(client=client, pods=self.pods, pdbs=self.pdbs, recorder=recorder, clock=clock,
                                     rng=self.rng)
        self.cycles = {
            profile.scheduler_name: SchedulingCycle(
                client=client, claims=self.claims, namespaces=self.namespaces, assume=self.assume,
                nodes=self.node_cache, stats=self.stats, rng=self.rng, filter_timeout=filter_timeout,
                pod_filter_timeout=pod_filter_timeout, percentage_of_nodes_to_score=percentage_of_nodes_to_score,
                profile=profile, preemption=self.preemption, clock=clock, binding_timeout=binding_timeout,
                volumes=volumes, node_allocatable=node_allocatable)
            for profile in self.profiles}
        self.cycle = self.cycles[self.profiles[0].scheduler_name]
        self.scheduler_names = frozenset(self.cycles)
        # The scheduling queue: activeQ (the work queue), backoff and the unschedulable pool.
        self.queueing = SchedulingQueue(clock=clock, still_gated=self._still_gated, active=lambda: self.queue,
                                        priority=self._priority,
                                        event_map=scheduling_profiles.event_map(self.profiles),
                                        initial_backoff=initial_backoff, max_backoff=max_backoff)
        for profile in self.profiles:
            spread = profile.plugin(podtopologyspread.NAME)
            if isinstance(spread, podtopologyspread.PodTopologySpread):
                spread.use_default_selector(self._default_selector)
        self.binder = Binder(client=client, pods=self.pods, assume=self.assume, nodes=self.node_cache, clock=clock,
                             recorder=recorder, binding_timeout=binding_timeout)
        # Binding cycles waiting for binding conditions run beside the workers (upstream runs every
        # binding cycle in its own goroutine), so that waiting pods never hold a worker.
        self._bindings: set[asyncio.Task[None]] = set()
        self._cycle_lock = asyncio.Lock()
        # The last FailedScheduling Event per pod: (uid, message, time), to fold repeats.
        self._last_event: dict[tuple[str, str], tuple[str, str, float]] = {}
        # Gang scheduling (GenericWorkload + GangScheduling; off by default): `controllers.scheduler.gang`.
        self.gang = (gang.Gang(scheduler=self, informer_factory=informer_factory)
                     if feature_gates.enabled(gates.GANG_SCHEDULING) else None)
        if feature_gates.enabled(gates.DRA_WORKLOAD_RESOURCE_CLAIMS):  # claims shared by a PodGroup
            self.cycle.workload_claims = podgroupclaims.WorkloadClaims(informer_factory=informer_factory)

        nodes, assume = self.node_cache, self.assume
        self.pods.add_handler(informers.Handlers(on_add=nodes.account_pod, on_update=nodes.pod_updated,
                                                 on_delete=nodes.pod_deleted))
        self.claims.add_handler(informers.Handlers(on_add=assume.claim_changed,
                                                   on_update=lambda _o, c: assume.claim_changed(c),
                                                   on_delete=assume.claim_deleted))
        binder = self.binder
        self.claims.add_handler(informers.Handlers(on_update=lambda _o, c: binder.claim_changed(c),
                                                   on_delete=binder.claim_changed))
        dirty = informers.Handlers(on_add=lambda _o: assume.invalidate_allocator(),
                                   on_update=lambda _o, _n: assume.invalidate_allocator(),
                                   on_delete=lambda _o: assume.invalidate_allocator())
        self.slices.add_handler(dirty)
        self.classes.add_handler(dirty)
        self.rules.add_handler(dirty)
        self.nodes.add_handler(informers.Handlers(on_add=nodes.node_set, on_update=lambda _o, n: nodes.node_set(n),
                                                  on_delete=nodes.node_deleted))

    # ------------------------------------------------------------------ wiring

    def _default_selector(self, pod: framework.PodInfo) -> selectors.LabelSelector:
        """`helper.DefaultSelector` from the informers' Services, ReplicationControllers,
        ReplicaSets and StatefulSets."""
        def lookup(kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
            informer = self.owners.get(kind)
            return informer.cache.get(namespace, name) if informer is not None else None

        return podtopologyspread.default_selector(pod.pod, services=self.services.cache.list(pod.namespace),
                                                  lookup=lookup)

    def watches(self) -> list[managers.Watch]:
        return [managers.Watch(kind=PODS, map=self._map_pod, indexers=POD_INDEXERS),
                managers.Watch(kind=CLAIMS, map=self._map_claim, indexers=CLAIM_INDEXERS),
                managers.Watch(kind=SLICES, map=self._map_cluster),
                managers.Watch(kind=CLASSES, map=self._map_cluster),
                managers.Watch(kind=RULES, map=self._map_cluster),
                managers.Watch(kind=NODES, map=self._map_node),
                managers.Watch(kind=PVCS, map=self._map_volumes),
                managers.Watch(kind=PVS, map=self._map_volumes),
                managers.Watch(kind=STORAGE_CLASSES, map=self._map_volumes),
                managers.Watch(kind=NAMESPACES, map=self._map_namespace),
                *(self.gang.watches() if self.gang is not None else ()),
                *([managers.Watch(kind=podgroupclaims.PODGROUPS, map=lambda _c: [])]
                  if self.gang is None and self.cycle.workload_claims is not None else [])]

    def on_start(self) -> None:
        """A new term: forget the pool and backoff (every pending pod is enqueued again)."""
        self.queueing.reset()

    def move_all(self, event: str) -> None:
        """The pods of the unschedulable pool that `event` may help back to the queue (after their
        backoff)."""
        self.queueing.move_all(event)

    def _pending(self, pod: Mapping[str, Any]) -> bool:
        return is_pending(pod, self.scheduler_names)

    def _priority(self, key: tuple[str, str]) -> int:
        pod = self.pods.cache.get(*key)
        return int(spec_of(pod).get("priority") or 0) if pod is not None else 0

    @property
    def queue(self) -> workqueue.WorkQueue[Request] | None:
        return self.controller.queue if self.controller is not None else None

    # ------------------------------------------------------------------ event mapping (queueing)

    def gate(self, pod: Mapping[str, Any]) -> str | None:
        """PreEnqueue: why the pod cannot be attempted yet (scheduling gates, claims not ready)."""
        if spec_of(pod).get("schedulingGates"):
            return "scheduling gates"
        if self.gang is not None and (reason := self.gang.gate(pod)) is not None:
            return reason
        try:
            self.cycle.pod_claims(pod)
        except Gated as exc:
            return str(exc)
        return None

    def _still_gated(self, key: tuple[str, str]) -> bool:
        pod = self.pods.cache.get(*key)
        return pod is not None and self._pending(pod) and self.gate(pod) is not None

    def _forget_pod(self, key: tuple[str, str]) -> None:
        self.queueing.forget(key)
        self._last_event.pop(key, None)

    def _map_pod(self, change: managers.Change) -> list[Request]:
        pod = change.obj
        key = caches.key_of(pod)
        old = change.old
        if change.type == "delete":
            self._forget_pod(key)
            if spec_of(pod).get("nodeName") and status_of(pod).get("phase") not in TERMINAL:
                self.queueing.move_all("AssignedPod/Delete")
            return []
        if self.gang is not None and (change.type == "add" or old is None):
            self.gang.pod_added(pod)
        if spec_of(pod).get("nodeName"):
            self._forget_pod(key)
            if self.queueing.idle():
                return []
            if old is None or not spec_of(old).get("nodeName"):
                self._move_if_interested("AssignedPod/Add")
            elif status_of(pod).get("phase") in TERMINAL and status_of(old).get("phase") not in TERMINAL:
                self.queueing.move_all("AssignedPod/Delete")  # a finished pod frees what it held
            elif pod_updated(old, pod):
                for event in cluster_events.pod_update_events(old, pod, assigned=True):
                    self._move_if_interested(event)
            return []
        if not self._pending(pod):
            return []
        if change.type == "add" or old is None:
            return [request_of(key)]
        if self.queueing.waiting(key) and pod_updated(old, pod):
            for event in cluster_events.pod_update_events(old, pod, assigned=False):
                self.queueing.nudge(key, event)
        return []

    def _move_if_interested(self, event: str) -> None:
        """Events no plugin registered are not even looked at (assigned pods change often)."""
        if self.queueing.event_map.interested(event):
            self.queueing.move_all(event)

    def _pods_using_claim(self, claim: Mapping[str, Any]) -> set[tuple[str, str]]:
        ns, name = caches.key_of(claim)
        keys = {k for k in self.pods.cache.index_keys(caches.CLAIM_NAME, name) if k[0] == ns}
        for ref in meta_of(claim).get("ownerReferences") or []:
            if isinstance(ref, Mapping) and ref.get("kind") == "Pod" and ref.get("controller"):
                keys.add((ns, str(ref.get("name") or "")))
        return keys

    def _map_claim(self, change: managers.Change) -> list[Request]:
        """`isSchedulableAfterClaimChange`: a deallocation may help anybody; otherwise only the pods
        using the claim, when it was created or its status changed."""
        claim, old = change.obj, change.old
        if change.type == "delete":
            if allocation_of(claim) is not None:
                self.queueing.move_all("ResourceClaim/Delete")
            return []
        if old is not None and allocation_of(old) is not None and allocation_of(claim) is None:
            self.queueing.move_all("ResourceClaim/Update")  # deallocated: may help anybody
            return []
        if self.queueing.idle():
            return []
        if change.type == "add" or old is None or status_of(old) != status_of(claim):
            event = "ResourceClaim/Add" if change.type == "add" or old is None else "ResourceClaim/Update"
            for key in self._pods_using_claim(claim):
                self.queueing.nudge(key, event)
        return []

    def _map_cluster(self, change: managers.Change) -> list[Request]:
        """ResourceSlices, DeviceClasses (add/update) and DeviceTaintRules (any change)."""
        if change.type == "delete" and change.kind is not RULES:
            return []
        self.queueing.move_all(f"{change.kind.kind}/{change.type.capitalize()}")
        return []

    def _map_node(self, change: managers.Change) -> list[Request]:
        node, old = change.obj, change.old
        if change.type == "delete":
            return []
        if change.type == "add" or old is None:
            self.queueing.move_all("Node/Add")
            return []
        if self.queueing.idle():
            return []
        for event in cluster_events.node_update_events(old, node):
            self.queueing.move_all(event)
        return []

    def _map_volumes(self, change: managers.Change) -> list[Request]:
        """PersistentVolumeClaims, PersistentVolumes, StorageClasses added or changed (VolumeBinding's
        and VolumeRestrictions' events)."""
        if change.type != "delete" and not self.queueing.idle():
            self.queueing.move_all(f"{change.kind.kind}/{change.type.capitalize()}")
        return []

    def _map_namespace(self, change: managers.Change) -> list[Request]:
        if change.type == "update" and change.old is not None and \
                meta_of(change.old).get("labels") != meta_of(change.obj).get("labels"):
            self.queueing.move_all("Namespace/Update")
        return []

    # ------------------------------------------------------------------ reconcile

    async def reconcile(self, request: Request) -> Result | None:
        try:
            return await self._reconcile(request)
        finally:
            self.queueing.pump()

    async def _reconcile(self, request: Request) -> Result | None:
        key = (request.namespace, request.name)
        wait = self.queueing.pool_wait(key, limit=UNSCHEDULABLE_MAX)
        if wait > 0:  # still in the pool: a stale timer; an event or the (re-armed) flush brings it back
            if self.queue is not None:
                self.queue.add_after(request, wait)
            return None
        self.queueing.popped(key)
        pod = self.pods.cache.get(*key)
        if pod is None or not self._pending(pod) or uid_of(pod) in self.node_cache.assumed_pods:
            if pod is None or spec_of(pod).get("nodeName"):
                self._forget_pod(key)
            return None
        reason = self.gate(pod)
        if reason is not None:  # PreEnqueue: no attempt, no status; an event brings it back
            self._log.debug("pod_gated", namespace=key[0], name=key[1], reason=reason)
            self.queueing.park(key, gated=True)
            return None
        if self.gang is not None and (group := self.gang.gang_of(pod)) is not None:
            return await self.gang.schedule(pod, group)  # the pod group scheduling cycle
        async with self._cycle_lock:
            pod = self.pods.cache.get(*key)
            if pod is None or not self._pending(pod) or uid_of(pod) in self.node_cache.assumed_pods:
                return None
            cycle = self.cycles[spec_of(pod).get("schedulerName") or SCHEDULER_NAME]
            self.queueing.begin_cycle(key)
            started = time.perf_counter()
            try:
                outcome = await cycle.run(pod)
            finally:
                self.stats.cycle_seconds += time.perf_counter() - started
                in_flight = self.queueing.end_cycle(key)
        if isinstance(outcome, Gate):
            self._log.debug("pod_gated", namespace=key[0], name=key[1], reason=outcome.reason)
            self.queueing.park(key, gated=True)
            if in_flight:
                self.queueing.requeue(key)
            return None
        self.stats.attempts += 1
        self.queueing.record_attempt(key, outcome.plugins if isinstance(outcome, Unschedulable) else frozenset())
        # an event during the cycle that may help: try again (after backoff) instead of waiting
        moved = self.queueing.worth_requeuing(key, in_flight)
        if isinstance(outcome, Unschedulable):
            self.stats.unschedulable += 1
            self.queueing.park(key, gated=False)
            if moved:
                self.queueing.requeue(key)  # something changed while we were at it: try again (after backoff)
            elif self.queue is not None:
                self.queue.add_after(request, UNSCHEDULABLE_MAX)  # the periodic flush
            if outcome.preemption is not None:  # victims are prepared while the pod waits in the pool
                await self.preemption.prepare(preemptor=pod, candidate=outcome.preemption)
            await self._report_failure(pod, "Unschedulable", outcome.message, nominate=outcome.nominate)
            return None
        if isinstance(outcome, Error):
            self.stats.errors += 1
            await self._report_failure(pod, "SchedulerError", outcome.message, nominate="")
            return Result(requeue_after=self.queueing.backoff(key))
        assert isinstance(outcome, Plan)
        if self.binder.may_wait(outcome):
            task = asyncio.get_running_loop().create_task(self._detached_binding(request, pod, outcome),
                                                          name=f"scheduler:binding:{key[0]}/{key[1]}")
            self._bindings.add(task)
            task.add_done_callback(self._bindings.discard)
            return None
        return await self._binding_cycle(pod, outcome)

    async def _detached_binding(self, request: Request, pod: dict[str, Any], plan: Plan) -> None:
        """A binding cycle beside the workers; what the worker's reconcile would have returned
        (a backoff) goes to the queue, an unexpected error is retried after the backoff."""
        key = caches.key_of(pod)
        try:
            result = await self._binding_cycle(pod, plan)
        except Exception:
            self._log.exception("binding_cycle_failed", namespace=key[0], name=key[1])
            result = Result(requeue_after=self.queueing.backoff(key))
        if result is not None and result.requeue_after is not None and self.queue is not None:
            self.queue.add_after(request, result.requeue_after)

    def on_stop(self) -> None:
        """The term ended: binding cycles still waiting for binding conditions are cancelled (their
        assumptions dropped); the next term tries the pods again."""
        for task in list(self._bindings):
            task.cancel()
        st = self.stats
        self._log.info("scheduler_stats", attempts=st.attempts, scheduled=st.scheduled, unschedulable=st.unschedulable,
                       nodes_filtered=st.nodes_filtered, nodes_skipped=st.nodes_skipped, nodes_taken=st.nodes_taken,
                       dra_cache_hits=st.dra_cache_hits, cycle_seconds=round(st.cycle_seconds, 3),
                       allocate_calls=st.allocate_calls, allocator_gen=self.assume.allocator_gen,
                       shared_version=self.assume.shared_version)

    async def _binding_cycle(self, pod: dict[str, Any], outcome: Plan) -> Result | None:
        """PreBind and Bind; on failure Unreserve, the pod's condition and Event, and a backoff."""
        key = caches.key_of(pod)
        try:
            await self.binder.bind(pod, outcome)
        except asyncio.CancelledError:
            self.binder.unreserve_local(pod, outcome)
            raise
        except Exception as exc:  # PreBind / Bind failed: undo, report, back off
            self.stats.binding_failures += 1
            message = str(exc) if isinstance(exc, BindingError) else repr(exc)
            self._log.info("binding_failed", namespace=key[0], name=key[1], node=outcome.node, error=message)
            await self.binder.unreserve(pod, outcome)
            if self.pods.cache.get(*key) is not None:
                await self._report_failure(pod, "SchedulerError", message, nominate="")
            return Result(requeue_after=self.queueing.backoff(key))
        self._forget_pod(key)
        self.stats.scheduled += 1
        await self.recorder.normal(pod, "Scheduled", f"Successfully assigned {key[0]}/{key[1]} to {outcome.node}")
        return None

    # ------------------------------------------------------------------ reporting

    async def _report_failure(self, pod: Mapping[str, Any], reason: str, message: str, *,
                              nominate: str | None = None) -> None:
        """`handleSchedulingFailure`: a Warning FailedScheduling event and the PodScheduled=False
        condition with `status.nominatedNodeName` (`nominate`; "" clears it, None leaves it), written
        only when they change."""
        if nominate is not None:  # AddNominatedPod: not for a pod deleted or bound meanwhile
            cached = self.pods.cache.get(*caches.key_of(pod))
            alive = cached is not None and uid_of(cached) == uid_of(pod) and not spec_of(cached).get("nodeName")
            self.preemption.nominator.add(pod, nominate if alive else "")
        ns, name = caches.key_of(pod)
        self._log.debug("pod_not_scheduled", namespace=ns, name=name, reason=reason, message=message)
        now = self.clock.now()
        last = self._last_event.get((ns, name))
        if last is None or last[0] != uid_of(pod) or last[1] != message or now - last[2] >= EVENT_REPEAT_INTERVAL:
            # Identical repeats within the interval are folded (upstream's recorder counts them in
            # an event series instead of writing each).
            self._last_event[(ns, name)] = (uid_of(pod), message, now)
            await self.recorder.warning(pod, "FailedScheduling", _truncate(message))
        current = self.pods.cache.get(ns, name) or pod
        if uid_of(current) != uid_of(pod):
            return
        existing = next((c for c in status_of(current).get("conditions") or []
                         if isinstance(c, Mapping) and c.get("type") == "PodScheduled"), None)
        nnn = str(status_of(current).get("nominatedNodeName") or "")
        set_nnn = nominate is not None and nominate != nnn
        if existing is not None and existing.get("status") == "False" and existing.get("reason") == reason \
                and existing.get("message") == message and not set_nnn:
            return
        cond: dict[str, Any] = {"type": "PodScheduled", "status": "False", "lastProbeTime": None,
                                "lastTransitionTime": (existing.get("lastTransitionTime")
                                                       if existing is not None and existing.get("status") == "False"
                                                       else clocks.rfc3339(self.clock.now())),
                                "reason": reason, "message": message}
        generation = meta_of(current).get("generation")
        if generation:
            cond["observedGeneration"] = generation
        try:
            status: dict[str, Any] = {"conditions": [cond]}
            if set_nnn:
                status["nominatedNodeName"] = nominate or None
            await self.client.patch(PODS, name, {"status": status}, namespace=ns,
                                    patch_type="strategic", subresource="status", field_manager=COMPONENT)
        except errors.NotFound:
            pass
        except errors.StatusError as exc:
            self._log.info("pod_condition_update_failed", namespace=ns, name=name, error=exc.message)



def _truncate(message: str, limit: int = 1024) -> str:
    """`truncateMessage`: Event notes are capped at 1 KiB."""
    if len(message) <= limit:
        return message
    suffix = " ..."
    return message[:limit - len(suffix)] + suffix
