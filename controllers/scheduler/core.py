"""The scheduler (kube-scheduler's `default-scheduler` profile, with the DynamicResources plugin):
puts pending pods on nodes and allocates their ResourceClaims with the DRA allocation library.

**Which pods.** Pods without `spec.nodeName`, with `spec.schedulerName: default-scheduler`, not
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
   `percentageOfNodesToScore` of feasible nodes is found (230 of 500) — with NodeUnschedulable,
   NodeName, TaintToleration, NodeAffinity, NodeResourcesFit (see `cp.scheduling.plugins`) and then
   DynamicResources: allocated claims must be usable on the node (their allocation's node
   selector), the others are allocated with one `Allocator` (kept while slices, classes and
   DeviceTaintRules are unchanged) against an `AllocatedState` maintained from the claim informer
   plus in-flight assumptions, with a time limit per node (`filter_timeout`, 10 s) and for all
   the nodes of one cycle together (`pod_filter_timeout`, also 10 s).
3. Score the feasible nodes (least allocated, balanced, spreading a controller's pods, taints,
   preferred affinity, prioritized-list choice) and pick the best; ties are broken at random.
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
event. It then waits until something that can help happens — a ResourceSlice, DeviceClass,
DeviceTaintRule or Namespace change, a node added or relabelled/retainted/resized, a claim
deallocated or one of its own claims changed, an assigned pod deleted or finished — subject to the
per-pod backoff (1 s doubling to 10 s; ignored when nothing else is queued), and at the latest
after 5 minutes. Errors (a bad CEL expression, more than 32 devices in a claim, a timed-out search:
`running "DynamicResources" filter plugin: ...`) set reason `SchedulerError` and are retried after
the backoff alone.

Long searches never block the event loop (which serves the API in `cplane serve`) for more than
about 50 ms: a node whose allocation takes longer continues in a worker thread, with claim-state
updates held back until it finishes. Deviations from kube-scheduler are listed in
docs/controllers.md ("Scheduler (DRA allocator)").
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import random
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import msgspec
import structlog

from cp.scheduling import plugins
from cp.dra import (
    ADMIN_ACCESS_NAMESPACE_LABEL,
    AllocatedState,
    AllocationError,
    AllocationTimeout,
    Allocator,
    CelCache,
    Features,
    NodeAllocationError,
    claim_requests_admin_access,
    namespace_allows_admin_access,
)
from cp.dra import extended as ext
from cp.dra.nodeselector import NodeSelectorError, node_selector_matches
from controllers.runtime import cache as caches
from controllers.runtime import client as clients
from controllers.runtime import informer as informers
from controllers.runtime import manager as managers
from controllers.runtime import reconcile, workqueue
from cp import clock as clocks
from cp import errors

NAME = "scheduler"
COMPONENT = "default-scheduler"  # Event source, field manager and the schedulerName we serve
SCHEDULER_NAME = "default-scheduler"
FINALIZER = "resource.kubernetes.io/delete-protection"
RESERVED_FOR_MAX = 256  # ResourceClaimReservedForMaxSize
FILTER_TIMEOUT = 10.0  # DynamicResourcesArgs.filterTimeout default (seconds, per node)
ON_LOOP_SLICE = 0.05  # longest an allocation runs on the event loop before moving to a thread
YIELD_EVERY = 0.02  # a scheduling cycle gives the event loop a turn at least this often
INITIAL_BACKOFF = 1.0  # podInitialBackoffSeconds
MAX_BACKOFF = 10.0  # podMaxBackoffSeconds
UNSCHEDULABLE_MAX = 300.0  # podMaxInUnschedulablePodsDuration
DEFAULT_WORKERS = 16
EVENT_REPEAT_INTERVAL = 60.0  # seconds: an identical FailedScheduling Event is written at most this often
CONFLICT_RETRIES = 5  # retry.DefaultRetry steps
FEATURES = Features(list_type_attributes=False)  # a default 1.37 cluster: ListTypeAttributes is alpha/off
TERMINAL = ("Succeeded", "Failed")
DRA_PLUGIN = "DynamicResources"

PODS = clients.resolve("pods")
NODES = clients.resolve("nodes")
NAMESPACES = clients.resolve("namespaces")
CLAIMS = clients.resolve("resourceclaims.resource.k8s.io")
SLICES = clients.resolve("resourceslices.resource.k8s.io")
CLASSES = clients.resolve("deviceclasses.resource.k8s.io")
RULES = clients.resolve("devicetaintrules.resource.k8s.io")
POD_INDEXERS = {caches.CLAIM_NAME: caches.by_claim_name}
CLAIM_INDEXERS = {caches.OWNER_UID: caches.by_owner_uid}

logger = structlog.get_logger("cplane.controllers.scheduler")

_encode = msgspec.json.Encoder().encode


# ---------------------------------------------------------------------- small helpers


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return caches.meta(obj)


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    s = obj.get("spec")
    return s if isinstance(s, Mapping) else {}


def _status(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    s = obj.get("status")
    return s if isinstance(s, Mapping) else {}


def _uid(obj: Mapping[str, Any]) -> str:
    return str(_meta(obj).get("uid") or "")


def _rv(obj: Mapping[str, Any]) -> int:
    try:
        return int(_meta(obj).get("resourceVersion") or 0)
    except ValueError:
        return 0


def _kobj(obj: Mapping[str, Any]) -> str:
    meta = _meta(obj)
    ns, name = meta.get("namespace") or "", meta.get("name") or ""
    return f"{ns}/{name}" if ns else str(name)


def _controller_uid(obj: Mapping[str, Any]) -> str:
    for ref in _meta(obj).get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller"):
            return str(ref.get("uid") or "")
    return ""


def _allocation(claim: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if claim is None:
        return None
    alloc = _status(claim).get("allocation")
    return alloc if isinstance(alloc, dict) else None


def _reserved_for(claim: Mapping[str, Any], pod_uid: str) -> bool:
    return any(isinstance(r, Mapping) and r.get("uid") == pod_uid for r in _status(claim).get("reservedFor") or [])


def is_responsible(pod: Mapping[str, Any]) -> bool:
    return (_spec(pod).get("schedulerName") or SCHEDULER_NAME) == SCHEDULER_NAME


def is_pending(pod: Mapping[str, Any]) -> bool:
    """Unassigned, ours, not deleting and not terminal."""
    return (not _spec(pod).get("nodeName") and is_responsible(pod) and not _meta(pod).get("deletionTimestamp")
            and _status(pod).get("phase") not in TERMINAL)


def _pod_updated(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """`isPodUpdated`: anything but resourceVersion, generation, managedFields, finalizers and the
    status (except resourceClaimStatuses) changed."""
    def strip(p: Mapping[str, Any]) -> tuple[Any, ...]:
        meta = {k: v for k, v in _meta(p).items()
                if k not in ("resourceVersion", "generation", "managedFields", "finalizers")}
        return (meta, p.get("spec"), _status(p).get("resourceClaimStatuses"))
    return strip(old) != strip(new)


def _now_rfc3339(clock: clocks.Clock) -> str:
    return clocks.rfc3339(clock.now())


# ---------------------------------------------------------------------- cycle outcomes

_CANNOT_ALLOCATE = plugins.Status(plugins.UNRESOLVABLE, ["cannot allocate all claims"], DRA_PLUGIN)


class _Gated(Exception):
    """PreEnqueue rejected the pod: it waits for an event, without a status update."""


class _PreFilterReject(Exception):
    def __init__(self, status: plugins.Status) -> None:
        super().__init__(status.message())
        self.status = status


class _SchedError(Exception):
    """An error status: the pod goes to the backoff queue with reason SchedulerError."""


class _BindingError(Exception):
    """PreBind or Bind failed; the message is what upstream reports."""


class _Unschedulable(msgspec.Struct, kw_only=True):
    message: str


class _Error(msgspec.Struct, kw_only=True):
    message: str


class _Gate(msgspec.Struct, kw_only=True):
    reason: str


class _ClaimPlan(msgspec.Struct, kw_only=True):
    """One claim of the pod in its binding cycle."""

    claim: dict[str, Any] | None  # the cached claim (None: the extended-resource claim to create)
    allocation: dict[str, Any] | None  # to write (None: already allocated, only reserve)
    key: str  # assumption key: the claim uid, or `extended:<pod uid>` before creation
    extended: bool = False
    reserve: bool = True  # False: already reserved for this pod


class _Plan(msgspec.Struct, kw_only=True):
    node: str
    claims: list[_ClaimPlan]
    extended_claim: dict[str, Any] | None = None  # to create
    mappings: list[dict[str, str]] = msgspec.field(default_factory=list)


class _NodeEntry:
    """A node as the scheduler sees it: its pre-digested info, a per-node cache of DRA results and
    a version bumped whenever a device in one of its pools is allocated or freed."""

    __slots__ = ("dra_cache", "dra_version", "info", "name", "usage")

    def __init__(self, node: dict[str, Any], usage: plugins.NodeUsage) -> None:
        self.info = plugins.NodeInfo(node)
        self.name = self.info.name
        self.usage = usage  # what the pods on the node request (shared with Scheduler._usage)
        # claim-spec signature -> (allocator generation, dra_version, shared version, answer)
        self.dra_cache: dict[bytes, tuple[int, int, int, Any]] = {}
        self.dra_version = 0

    @property
    def node(self) -> dict[str, Any]:
        return self.info.node  # type: ignore[return-value]


class Stats:
    """Counters for benchmarks and debugging."""

    def __init__(self) -> None:
        self.attempts = 0
        self.scheduled = 0
        self.unschedulable = 0
        self.errors = 0
        self.binding_failures = 0
        self.nodes_filtered = 0
        self.allocate_calls = 0
        self.dra_cache_hits = 0
        self.threaded_allocations = 0
        self.cycle_seconds = 0.0


class _DraCycle:
    """The DynamicResources plugin's cycle state for one pod."""

    __slots__ = ("active", "alloc_claims", "claims", "ext_existing", "ext_template", "has_selectors",
                 "prioritized", "selectors", "signature", "to_allocate", "unavailable")

    def __init__(self) -> None:
        self.active = False
        self.claims: list[dict[str, Any]] = []  # user claims, then an existing extended claim
        self.ext_existing: dict[str, Any] | None = None
        self.ext_template = False  # the extended claim must be built per node and created
        self.selectors: list[Mapping[str, Any] | None] = []  # allocation node selectors
        self.to_allocate: list[int] = []  # indices into claims
        self.signature = b""
        self.unavailable: set[int] = set()
        self.alloc_claims: list[dict[str, Any]] = []  # claims[i] for i in to_allocate
        self.has_selectors = False
        self.prioritized = False  # some claim to allocate has a request with subrequests


# ---------------------------------------------------------------------- the scheduler


class Scheduler:
    def __init__(self, *, client: clients.Client, informer_factory: informers.InformerFactory,
                 clock: clocks.Clock, recorder: managers.EventRecorder, filter_timeout: float = FILTER_TIMEOUT,
                 pod_filter_timeout: float = FILTER_TIMEOUT, percentage_of_nodes_to_score: int = 0,
                 seed: int | None = None, features: Features = FEATURES) -> None:
        self.client = client
        self.clock = clock
        self.recorder = recorder
        self.filter_timeout = filter_timeout
        self.pod_filter_timeout = pod_filter_timeout
        self._cycle_deadline = 0.0  # time.monotonic() by which the current cycle's searches end
        self.percentage = percentage_of_nodes_to_score
        self.features = features
        self.rng = random.Random(seed)
        self.stats = Stats()
        self.controller: SchedulerController | None = None
        self._log = logger

        self.pods = informer_factory.informer(PODS, indexers=POD_INDEXERS)
        self.claims = informer_factory.informer(CLAIMS, indexers=CLAIM_INDEXERS)
        self.slices = informer_factory.informer(SLICES)
        self.classes = informer_factory.informer(CLASSES)
        self.nodes = informer_factory.informer(NODES)
        self.rules = informer_factory.informer(RULES)
        self.namespaces = informer_factory.informer(NAMESPACES)

        # DRA: what is in use (informer + assumptions), and the allocator over slices/classes/rules.
        self.cel_cache = CelCache()
        self.state = AllocatedState(consumable_capacity=features.consumable_capacity)
        self._contrib: dict[str, dict[str, Any]] = {}  # claim uid (or assumption key) -> counted allocation
        self._assumed: dict[str, dict[str, Any]] = {}  # claim uid -> allocation not yet seen by the informer
        self._in_flight: dict[str, tuple[str, str]] = {}  # claim uid -> pod key allocating it right now
        self._written: dict[str, dict[str, Any]] = {}  # claim uid -> our last write, until the informer has it
        self._pool_nodes: dict[str, list[str]] = {}  # pool name -> nodes whose slices publish it
        self._shared_pools: set[str] = set()  # pools of slices without nodeName (any node may see them)
        self._shared_version = 0  # bumped on every allocation change in a shared pool
        self._allocator: Allocator | None = None
        self._allocator_gen = 0
        self._class_map: dict[str, dict[str, Any]] = {}
        self._ext_mapping: dict[str, str] = {}
        self._deferred: list[Callable[[], None]] | None = None

        # Nodes and what the pods on them request (informer + assumed pods).
        self._nodes: dict[str, _NodeEntry] = {}
        self._soft_tainted = 0  # nodes with PreferNoSchedule taints
        self._usage: dict[str, plugins.NodeUsage] = {}
        self._pod_usage: dict[str, tuple[str, plugins.PodRequests, str]] = {}  # pod uid -> (node, req, owner)
        self._assumed_pods: dict[str, str] = {}  # pod uid -> node, until the informer shows it bound
        self._next_start = 0

        # The scheduling queue beyond the work queue: the unschedulable pool and backoff.
        self._unschedulable: dict[tuple[str, str], float] = {}  # pod key -> when it entered the pool
        self._gated: set[tuple[str, str]] = set()  # pods of the pool waiting for PreEnqueue (no attempt made)
        self._backing_off: dict[tuple[str, str], float] = {}  # moved out of the pool, waiting for backoff
        self._attempts: dict[tuple[str, str], int] = {}
        self._last_attempt: dict[tuple[str, str], float] = {}
        # The pod in its scheduling cycle -> whether an event that could help it arrived meanwhile
        # (then a failed attempt is retried instead of waiting for the next event).
        self._in_cycle: dict[tuple[str, str], bool] = {}
        self._cycle_lock = asyncio.Lock()
        # The last FailedScheduling Event per pod: (uid, message, time), to fold repeats.
        self._last_event: dict[tuple[str, str], tuple[str, str, float]] = {}

        self.pods.add_handler(informers.Handlers(on_add=self._pod_added, on_update=self._pod_updated_h,
                                                 on_delete=self._pod_deleted))
        self.claims.add_handler(informers.Handlers(on_add=lambda c: self._claim_changed(c),
                                                   on_update=lambda _o, c: self._claim_changed(c),
                                                   on_delete=self._claim_deleted))
        dirty = informers.Handlers(on_add=lambda _o: self._invalidate_allocator(),
                                   on_update=lambda _o, _n: self._invalidate_allocator(),
                                   on_delete=lambda _o: self._invalidate_allocator())
        self.slices.add_handler(dirty)
        self.classes.add_handler(dirty)
        self.rules.add_handler(dirty)
        self.nodes.add_handler(informers.Handlers(on_add=self._node_set, on_update=lambda _o, n: self._node_set(n),
                                                  on_delete=self._node_deleted))

    # ------------------------------------------------------------------ wiring

    def watches(self) -> list[managers.Watch]:
        return [managers.Watch(kind=PODS, map=self._map_pod, indexers=POD_INDEXERS),
                managers.Watch(kind=CLAIMS, map=self._map_claim, indexers=CLAIM_INDEXERS),
                managers.Watch(kind=SLICES, map=self._map_cluster),
                managers.Watch(kind=CLASSES, map=self._map_cluster),
                managers.Watch(kind=RULES, map=self._map_cluster),
                managers.Watch(kind=NODES, map=self._map_node),
                managers.Watch(kind=NAMESPACES, map=self._map_namespace)]

    def on_start(self) -> None:
        """A new term: forget the pool and backoff (every pending pod is enqueued again)."""
        self._unschedulable.clear()
        self._gated.clear()
        self._backing_off.clear()
        self._attempts.clear()
        self._last_attempt.clear()

    @property
    def queue(self) -> workqueue.WorkQueue[reconcile.Request] | None:
        return self.controller.queue if self.controller is not None else None

    # ------------------------------------------------------------------ state: claims

    def _mutate(self, fn: Callable[[], None]) -> None:
        """Change the allocated state now, or after the allocation running in a thread."""
        if self._deferred is not None:
            self._deferred.append(fn)
        else:
            fn()

    def _set_contrib(self, key: str, alloc: dict[str, Any] | None) -> None:
        old = self._contrib.get(key)
        if old is alloc or (old is not None and alloc is not None and old == alloc):
            return
        if old is not None:
            self.state.remove_allocation(old)
            self._bump_pools(old)
            del self._contrib[key]
        if alloc is not None:
            self.state.add_allocation(alloc)
            self._bump_pools(alloc)
            self._contrib[key] = alloc

    def _bump_pools(self, alloc: Mapping[str, Any]) -> None:
        """Invalidate the cached DRA answers of the nodes that see the pools of these devices
        (pools by name only: the allocator's shared counters are keyed that way too)."""
        nodes = self._nodes
        for r in ((alloc.get("devices") or {}).get("results") or []):
            pool = r.get("pool", "")
            for name in self._pool_nodes.get(pool, ()):
                entry = nodes.get(name)
                if entry is not None:
                    entry.dra_version += 1
            if pool in self._shared_pools or pool not in self._pool_nodes:
                self._shared_version += 1

    def _claim_changed(self, claim: dict[str, Any]) -> None:
        uid = _uid(claim)
        written = self._written.get(uid)
        if written is not None and _rv(claim) >= _rv(written):
            del self._written[uid]

        def apply() -> None:
            alloc = _allocation(claim)
            if uid in self._assumed:
                if alloc is None:
                    return  # our write is not visible yet: keep the assumption
                del self._assumed[uid]
            self._set_contrib(uid, alloc)
        self._mutate(apply)

    def _claim_deleted(self, claim: dict[str, Any]) -> None:
        uid = _uid(claim)
        self._written.pop(uid, None)

        def apply() -> None:
            self._assumed.pop(uid, None)
            self._set_contrib(uid, None)
        self._mutate(apply)

    def _assume_claim(self, key: str, alloc: dict[str, Any]) -> None:
        def apply() -> None:
            self._assumed[key] = alloc
            self._set_contrib(key, alloc)
        self._mutate(apply)

    def _forget_claim(self, key: str, claim: Mapping[str, Any] | None) -> None:
        """Drop an assumption; the informer's view of the claim (if any) counts again."""
        def apply() -> None:
            if self._assumed.pop(key, None) is None:
                return
            self._set_contrib(key, None)
            cached = self.claims.cache.get(*caches.key_of(claim)) if claim is not None else None
            if cached is not None and _uid(cached) == key:
                self._set_contrib(key, _allocation(cached))
        self._mutate(apply)

    def _rekey_claim(self, old_key: str, uid: str) -> None:
        """The extended-resource claim was created: its assumption now goes by the claim uid."""
        def apply() -> None:
            alloc = self._assumed.pop(old_key, None)
            self._set_contrib(old_key, None)
            if alloc is not None:
                self._assumed[uid] = alloc
                self._set_contrib(uid, alloc)
        self._mutate(apply)

    def _claim_view(self, ns: str, name: str) -> dict[str, Any] | None:
        """The claim as the informer has it, or as we last wrote it if that is newer (the
        assume cache)."""
        claim = self.claims.cache.get(ns, name)
        if claim is None:
            return None
        written = self._written.get(_uid(claim))
        if written is not None and _rv(written) > _rv(claim):
            return written
        return claim

    def _why_short(self, pod: Mapping[str, Any], dra: Any, statuses: Mapping[str, Any]) -> str:
        """Issue #12: after upstream's sentence, say why the DRA filter rejected the nodes (at most
        50 ms of search, on this failure path only; deterministic text, so an unchanged verdict does
        not rewrite the pod's condition). Scripts matching the upstream wording keep working."""
        if not dra.alloc_claims:
            return ""
        from cp.scheduling import explain

        rejected = [self._nodes[name].node for name, st in statuses.items()
                    if getattr(st, "plugin", "") == DRA_PLUGIN and name in self._nodes]
        if not rejected:
            return ""
        held = [{**c, "status": {**_status(c), "allocation": self._assumed[_uid(c)]}}
                if _uid(c) in self._assumed else c for c in self.claims.cache.list()]
        try:
            return explain.short_reason(self._get_allocator(), pod=pod, claims=dra.alloc_claims,
                                        nodes=rejected, all_claims=held)
        except Exception:  # the explanation must never break scheduling
            logger.exception("why_short_failed", pod=_meta(pod).get("name"))
            return ""

    def _invalidate_allocator(self) -> None:
        self._allocator = None

    def _get_allocator(self) -> Allocator:
        if self._allocator is None:
            slices = self.slices.cache.list()
            self._class_map = {str(_meta(c).get("name")): c for c in self.classes.cache.list()}
            self._ext_mapping = ext.extended_resource_class_mapping(self._class_map)
            self._allocator = Allocator(slices=slices, classes=self._class_map, allocated=self.state,
                                        taint_rules=self.rules.cache.list(), features=self.features,
                                        cel_cache=self.cel_cache, deadline=None)
            self._allocator_gen += 1
            shared: set[str] = set()
            pool_nodes: dict[str, set[str]] = {}
            for s in slices:
                spec = _spec(s)
                pool = str((spec.get("pool") or {}).get("name") or "")
                node = spec.get("nodeName")
                if node:
                    pool_nodes.setdefault(pool, set()).add(str(node))
                else:
                    shared.add(pool)
            self._pool_nodes = {p: sorted(n) for p, n in pool_nodes.items()}
            self._shared_pools = shared
        return self._allocator

    # ------------------------------------------------------------------ state: nodes and pods

    def _node_set(self, node: dict[str, Any]) -> None:
        name = str(_meta(node).get("name") or "")
        entry = self._nodes.get(name)
        if entry is None:
            usage = self._usage.get(name)
            if usage is None:
                usage = self._usage[name] = plugins.NodeUsage()
            entry = self._nodes[name] = _NodeEntry(node, usage)
            self._soft_tainted += bool(entry.info.soft_taints)
            return
        old = entry.info.node
        if _meta(old).get("labels") != _meta(node).get("labels"):
            entry.dra_cache.clear()
        if _meta(old).get("labels") != _meta(node).get("labels") or _spec(old) != _spec(node) or \
                _status(old).get("allocatable") != _status(node).get("allocatable"):
            self._soft_tainted -= bool(entry.info.soft_taints)
            entry.info.update(node)
            self._soft_tainted += bool(entry.info.soft_taints)
        else:
            entry.info.node = node

    def _node_deleted(self, node: dict[str, Any]) -> None:
        name = str(_meta(node).get("name") or "")
        entry = self._nodes.pop(name, None)
        if entry is not None:
            self._soft_tainted -= bool(entry.info.soft_taints)
            if entry.usage.pods <= 0:
                self._usage.pop(name, None)

    def _set_usage(self, uid: str, value: tuple[str, plugins.PodRequests, str] | None) -> None:
        old = self._pod_usage.pop(uid, None)
        if old is not None:
            usage = self._usage.get(old[0])
            if usage is not None:
                usage.remove(old[1], old[2])
                if usage.pods <= 0 and old[0] not in self._nodes:
                    del self._usage[old[0]]
        if value is not None:
            self._pod_usage[uid] = value
            usage = self._usage.get(value[0])
            if usage is None:
                usage = self._usage[value[0]] = plugins.NodeUsage()
            usage.add(value[1], value[2])

    def _account_pod(self, pod: dict[str, Any]) -> None:
        uid = _uid(pod)
        node = str(_spec(pod).get("nodeName") or "")
        if node and _status(pod).get("phase") not in TERMINAL:
            self._assumed_pods.pop(uid, None)
            current = self._pod_usage.get(uid)
            if current is None or current[0] != node:
                self._set_usage(uid, (node, plugins.pod_requests(pod), _controller_uid(pod)))
        elif uid not in self._assumed_pods:
            self._set_usage(uid, None)

    def _pod_added(self, pod: dict[str, Any]) -> None:
        self._account_pod(pod)

    def _pod_updated_h(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self._account_pod(new)

    def _pod_deleted(self, pod: dict[str, Any]) -> None:
        uid = _uid(pod)
        self._assumed_pods.pop(uid, None)
        self._set_usage(uid, None)

    # ------------------------------------------------------------------ event mapping (queueing)

    def _request(self, key: tuple[str, str]) -> reconcile.Request:
        return reconcile.Request(namespace=key[0], name=key[1])

    def _backoff(self, key: tuple[str, str]) -> float:
        attempts = self._attempts.get(key, 0)
        if attempts <= 0:
            return 0.0
        return min(INITIAL_BACKOFF * (2 ** (attempts - 1)), MAX_BACKOFF)

    def gate(self, pod: Mapping[str, Any]) -> str | None:
        """PreEnqueue: why the pod cannot be attempted yet (scheduling gates, claims not ready)."""
        if _spec(pod).get("schedulingGates"):
            return "scheduling gates"
        try:
            self._pod_claims(pod)
        except _Gated as exc:
            return str(exc)
        return None

    def _requeue(self, key: tuple[str, str]) -> None:
        """Move a pod out of the unschedulable pool: to the queue now if its backoff is over or
        nothing else is queued (`SchedulerPopFromBackoffQ`), else when the backoff ends. A pod
        gated by PreEnqueue stays until the gate opens (checked here, without an attempt)."""
        if key in self._gated:
            pod = self.pods.cache.get(*key)
            if pod is not None and is_pending(pod) and self.gate(pod) is not None:
                return
            self._gated.discard(key)
        self._unschedulable.pop(key, None)
        queue = self.queue
        if queue is None:
            return
        ready = self._last_attempt.get(key, 0.0) + self._backoff(key)
        delay = ready - self.clock.now()
        if delay <= 0:
            self._backing_off.pop(key, None)
            queue.add(self._request(key))
        else:
            self._backing_off[key] = ready
            queue.add_after(self._request(key), delay)
            self._pump()

    def _pump(self) -> None:
        """`SchedulerPopFromBackoffQ`: while nothing is queued, the pod whose backoff ends first
        goes now (its timer, firing later, finds it handled)."""
        queue = self.queue
        if queue is None or len(queue) or not self._backing_off:
            return
        key = min(self._backing_off, key=self._backing_off.__getitem__)
        del self._backing_off[key]
        queue.add(self._request(key))

    def move_all(self, event: str) -> None:
        for key in self._in_cycle:
            self._in_cycle[key] = True
        if self._unschedulable:
            self._log.debug("moving_unschedulable_pods", trigger=event, pods=len(self._unschedulable))
            for key in list(self._unschedulable):
                self._requeue(key)

    def _forget_pod(self, key: tuple[str, str]) -> None:
        self._unschedulable.pop(key, None)
        self._gated.discard(key)
        self._backing_off.pop(key, None)
        self._last_event.pop(key, None)
        self._attempts.pop(key, None)
        self._last_attempt.pop(key, None)

    def _map_pod(self, change: managers.Change) -> list[reconcile.Request]:
        pod = change.obj
        key = caches.key_of(pod)
        old = change.old
        if change.type == "delete":
            self._forget_pod(key)
            if _spec(pod).get("nodeName") and _status(pod).get("phase") not in TERMINAL:
                self.move_all("AssignedPodDelete")
            return []
        if _spec(pod).get("nodeName"):
            if old is not None and _spec(old).get("nodeName") and \
                    _status(pod).get("phase") in TERMINAL and _status(old).get("phase") not in TERMINAL:
                self.move_all("AssignedPodTerminated")
            self._forget_pod(key)
            return []
        if not is_pending(pod):
            return []
        if change.type == "add" or old is None:
            return [self._request(key)]
        if (key in self._unschedulable or key in self._in_cycle) and _pod_updated(old, pod):
            if key in self._in_cycle:
                self._in_cycle[key] = True
            else:
                self._requeue(key)
        return []

    def _pods_using_claim(self, claim: Mapping[str, Any]) -> set[tuple[str, str]]:
        ns, name = caches.key_of(claim)
        keys = {k for k in self.pods.cache.index_keys(caches.CLAIM_NAME, name) if k[0] == ns}
        for ref in _meta(claim).get("ownerReferences") or []:
            if isinstance(ref, Mapping) and ref.get("kind") == "Pod" and ref.get("controller"):
                keys.add((ns, str(ref.get("name") or "")))
        return keys

    def _map_claim(self, change: managers.Change) -> list[reconcile.Request]:
        """`isSchedulableAfterClaimChange`: a deallocation may help anybody; otherwise only the pods
        using the claim, when it was created or its status changed."""
        claim, old = change.obj, change.old
        if change.type == "delete":
            if _allocation(claim) is not None:
                self.move_all("AllocatedClaimDelete")
            return []
        if old is not None and _allocation(old) is not None and _allocation(claim) is None:
            self.move_all("ClaimDeallocated")
            return []
        if not self._unschedulable and not self._in_cycle:
            return []
        if change.type == "add" or old is None or _status(old) != _status(claim):
            for key in self._pods_using_claim(claim):
                if key in self._in_cycle:
                    self._in_cycle[key] = True
                elif key in self._unschedulable:
                    self._requeue(key)
        return []

    def _map_cluster(self, change: managers.Change) -> list[reconcile.Request]:
        """ResourceSlices, DeviceClasses (add/update) and DeviceTaintRules (any change)."""
        if change.type == "delete" and change.kind is not RULES:
            return []
        self.move_all(f"{change.kind.kind}{change.type.capitalize()}")
        return []

    def _map_node(self, change: managers.Change) -> list[reconcile.Request]:
        node, old = change.obj, change.old
        if change.type == "delete":
            return []
        if change.type == "add" or old is None:
            self.move_all("NodeAdd")
            return []
        relevant = (_meta(old).get("labels") != _meta(node).get("labels")
                    or _spec(old).get("taints") != _spec(node).get("taints")
                    or bool(_spec(old).get("unschedulable")) != bool(_spec(node).get("unschedulable"))
                    or _status(old).get("allocatable") != _status(node).get("allocatable"))
        if relevant:
            self.move_all("NodeUpdate")
        return []

    def _map_namespace(self, change: managers.Change) -> list[reconcile.Request]:
        if change.type == "update" and change.old is not None and \
                _meta(change.old).get("labels") != _meta(change.obj).get("labels"):
            self.move_all("NamespaceUpdate")
        return []

    # ------------------------------------------------------------------ reconcile

    async def reconcile(self, request: reconcile.Request) -> reconcile.Result | None:
        try:
            return await self._reconcile(request)
        finally:
            self._pump()

    async def _reconcile(self, request: reconcile.Request) -> reconcile.Result | None:
        key = (request.namespace, request.name)
        entered = self._unschedulable.get(key)
        if entered is not None and key not in self._gated:
            wait = entered + UNSCHEDULABLE_MAX - self.clock.now()
            if wait > 0:  # still in the pool: a stale timer; an event or the (re-armed) flush brings it back
                if self.queue is not None:
                    self.queue.add_after(request, wait)
                return None
        self._backing_off.pop(key, None)
        pod = self.pods.cache.get(*key)
        if pod is None or not is_pending(pod) or _uid(pod) in self._assumed_pods:
            if pod is None or _spec(pod).get("nodeName"):
                self._forget_pod(key)
            return None
        reason = self.gate(pod)
        if reason is not None:  # PreEnqueue: no attempt, no status; an event brings it back
            self._log.debug("pod_gated", namespace=key[0], name=key[1], reason=reason)
            self._unschedulable[key] = self.clock.now()
            self._gated.add(key)
            return None
        async with self._cycle_lock:
            pod = self.pods.cache.get(*key)
            if pod is None or not is_pending(pod) or _uid(pod) in self._assumed_pods:
                return None
            self._unschedulable.pop(key, None)
            self._gated.discard(key)
            self._in_cycle[key] = False
            started = time.perf_counter()
            try:
                outcome = await self._scheduling_cycle(pod)
            finally:
                self.stats.cycle_seconds += time.perf_counter() - started
                moved = self._in_cycle.pop(key, False)
        if isinstance(outcome, _Gate):
            self._log.debug("pod_gated", namespace=key[0], name=key[1], reason=outcome.reason)
            self._unschedulable[key] = self.clock.now()
            self._gated.add(key)
            if moved:
                self._requeue(key)
            return None
        self.stats.attempts += 1
        self._attempts[key] = self._attempts.get(key, 0) + 1
        self._last_attempt[key] = self.clock.now()
        if isinstance(outcome, _Unschedulable):
            self.stats.unschedulable += 1
            self._unschedulable[key] = self.clock.now()
            if moved:
                self._requeue(key)  # something changed while we were at it: try again (after backoff)
            elif self.queue is not None:
                self.queue.add_after(request, UNSCHEDULABLE_MAX)  # the periodic flush
            await self._report_failure(pod, "Unschedulable", outcome.message)
            return None
        if isinstance(outcome, _Error):
            self.stats.errors += 1
            await self._report_failure(pod, "SchedulerError", outcome.message)
            return reconcile.Result(requeue_after=self._backoff(key))
        assert isinstance(outcome, _Plan)
        try:
            await self._binding_cycle(pod, outcome)
        except asyncio.CancelledError:
            self._unreserve_local(pod, outcome)
            raise
        except Exception as exc:  # PreBind / Bind failed: undo, report, back off
            self.stats.binding_failures += 1
            message = str(exc) if isinstance(exc, _BindingError) else repr(exc)
            self._log.info("binding_failed", namespace=key[0], name=key[1], node=outcome.node, error=message)
            await self._unreserve(pod, outcome)
            if self.pods.cache.get(*key) is not None:
                await self._report_failure(pod, "SchedulerError", message)
            return reconcile.Result(requeue_after=self._backoff(key))
        self._forget_pod(key)
        self.stats.scheduled += 1
        await self.recorder.normal(pod, "Scheduled", f"Successfully assigned {key[0]}/{key[1]} to {outcome.node}")
        return None

    # ------------------------------------------------------------------ the scheduling cycle

    async def _scheduling_cycle(self, pod: dict[str, Any]) -> _Unschedulable | _Error | _Gate | _Plan:
        if _spec(pod).get("schedulingGates"):
            return _Gate(reason="scheduling gates")
        try:
            user_claims = self._pod_claims(pod)
        except _Gated as exc:
            return _Gate(reason=str(exc))
        nodes = list(self._nodes.values())
        if not nodes:
            return _Unschedulable(message=plugins.NO_NODES_AVAILABLE)
        req = plugins.pod_requests(pod)
        self._get_allocator()  # (re)builds the class mapping too
        self._cycle_deadline = time.monotonic() + self.pod_filter_timeout
        try:
            dra = self._dra_prefilter(pod, req, user_claims)
        except _PreFilterReject as exc:
            return _Unschedulable(message=plugins.fit_error(
                len(nodes), {}, prefilter=exc.status,
                post_filter="no new claims to deallocate, " + plugins.preemption_message(
                    pod, len(nodes), {}, exc.status)))
        except _SchedError as exc:
            return _Error(message=str(exc))

        statuses: dict[str, plugins.Status] = {}
        feasible: list[tuple[_NodeEntry, list[dict[str, Any]], ext.ExtendedResourceClaim | None]] = []
        info = plugins.PodInfo(pod, req, _controller_uid(pod))
        n = len(nodes)
        to_find = plugins.num_feasible_nodes_to_find(n, self.percentage)
        start = self._next_start % n
        processed = 0
        last_yield = time.perf_counter()
        ext_mapping = self._ext_mapping
        no_allocs: list[dict[str, Any]] = []
        # The DynamicResources filter's common case inline: claims to allocate whose answer for
        # this node is cached and still valid (no device of the node's pools changed since).
        dra_active = dra.active
        fast = dra_active and not dra.ext_template and not dra.has_selectors and bool(dra.alloc_claims)
        simple = info.simple
        signature = dra.signature
        gen, shared = self._allocator_gen, self._shared_version
        hits = 0
        try:
            for i in range(n):
                entry = nodes[(start + i) % n]
                processed += 1
                ni = entry.info
                usage = entry.usage
                if simple and ni.plain and usage.pods < ni.alloc.pods:
                    status = None
                else:
                    status = info.filter(ni, usage, ext_mapping)
                allocs = no_allocs
                node_ext: ext.ExtendedResourceClaim | None = None
                if status is None and dra_active:
                    cached = entry.dra_cache.get(signature) if fast else None
                    if cached is not None and cached[1] == entry.dra_version and cached[0] == gen \
                            and cached[2] == shared:
                        hits += 1
                        result = cached[3]
                        if type(result) is list:
                            allocs = result
                        elif result is None:
                            status = _CANNOT_ALLOCATE
                        else:
                            status = result
                    else:
                        status, allocs, node_ext = await self._dra_filter(pod, dra, entry)
                        gen, shared = self._allocator_gen, self._shared_version
                if status is not None:
                    statuses[entry.name] = status
                else:
                    feasible.append((entry, allocs, node_ext))
                    if len(feasible) >= to_find:
                        break
                if not processed % 16 and time.perf_counter() - last_yield > YIELD_EVERY:
                    await asyncio.sleep(0)
                    last_yield = time.perf_counter()
                    gen, shared = self._allocator_gen, self._shared_version
        except _SchedError as exc:
            return _Error(message=f'running "{DRA_PLUGIN}" filter plugin: {exc}')
        finally:
            self._next_start = (start + processed) % n
            self.stats.nodes_filtered += processed
            self.stats.dra_cache_hits += hits

        if not feasible:
            dra_msg = await self._dra_post_filter(pod, dra)
            post = f"{dra_msg}, {plugins.preemption_message(pod, n, statuses, None)}"
            message = plugins.fit_error(n, statuses, post_filter=post)
            why = self._why_short(pod, dra, statuses)
            return _Unschedulable(message=f"{message} {why}" if why else message)

        entry, allocs, node_ext = self._select_host(info, dra, feasible)
        return self._reserve(pod, req, dra, entry, allocs, node_ext)

    def _pod_claims(self, pod: Mapping[str, Any]) -> list[dict[str, Any]]:
        """`foreachPodResourceClaim`: the pod's claims, or _Gated with upstream's reason."""
        ns, name = caches.key_of(pod)
        statuses = {str(s.get("name")): s for s in _status(pod).get("resourceClaimStatuses") or []
                    if isinstance(s, Mapping)}
        uid = _uid(pod)
        out: list[dict[str, Any]] = []
        for rc in _spec(pod).get("resourceClaims") or []:
            if not isinstance(rc, Mapping):
                continue
            check_owner = False
            if rc.get("resourceClaimName"):
                claim_name = str(rc["resourceClaimName"])
            elif rc.get("resourceClaimTemplateName"):
                st = statuses.get(str(rc.get("name")))
                if st is None:
                    raise _Gated(f'pod "{ns}/{name}": ResourceClaim not created yet')
                if not st.get("resourceClaimName"):
                    continue
                claim_name, check_owner = str(st["resourceClaimName"]), True
            else:
                raise _Gated(f'pod "{ns}/{name}", spec.resourceClaim "{rc.get("name")}": '
                             "none of the supported fields are set")
            claim = self._claim_view(ns, claim_name)
            if claim is None:
                raise _Gated(f'resourceclaim.resource.k8s.io "{claim_name}" not found')
            if _meta(claim).get("deletionTimestamp"):
                raise _Gated(f'resourceclaim "{claim_name}" is being deleted')
            if check_owner and _controller_uid(claim) != uid:
                raise _Gated(f"ResourceClaim {claim_name} was not created for pod {ns}/{name} (pod is not owner)")
            out.append(claim)
        return out

    def _extended_claim(self, pod: Mapping[str, Any], req: plugins.PodRequests) -> tuple[dict[str, Any] | None, bool]:
        """(existing special claim, a new one must be built per node)."""
        if not plugins.requested_dra_extended(req, self._ext_mapping):
            return None, False
        ns = str(_meta(pod).get("namespace") or "")
        st = _status(pod).get("extendedResourceClaimStatus")
        if isinstance(st, Mapping) and st.get("resourceClaimName"):
            claim = self._claim_view(ns, str(st["resourceClaimName"]))
            if claim is not None and _controller_uid(claim) == _uid(pod):
                return claim, False
        owned = self.claims.cache.by_index(caches.OWNER_UID, _uid(pod))
        found = ext.find_extended_resource_claim(pod, owned)
        if found is not None:
            return self._claim_view(*caches.key_of(found)) or dict(found), False
        return None, True

    def _dra_prefilter(self, pod: Mapping[str, Any], req: plugins.PodRequests,
                       user_claims: list[dict[str, Any]]) -> _DraCycle:
        d = _DraCycle()
        ext_existing, ext_template = self._extended_claim(pod, req)
        claims = list(user_claims)
        if ext_existing is not None:
            claims.append(ext_existing)
        d.ext_existing, d.ext_template = ext_existing, ext_template
        if not claims and not ext_template:
            return d
        pod_uid = _uid(pod)
        pod_key = caches.key_of(pod)
        namespace = self.namespaces.cache.get("", str(_meta(pod).get("namespace") or ""))
        for index, claim in enumerate(claims):
            alloc = _allocation(claim)
            if alloc is not None:
                reserved = _status(claim).get("reservedFor") or []
                if len(reserved) >= RESERVED_FOR_MAX and not _reserved_for(claim, pod_uid):
                    raise _PreFilterReject(plugins.Status(plugins.UNRESOLVABLE, ["resourceclaim in use"]))
                selector = alloc.get("nodeSelector")
                if selector is not None:
                    try:
                        node_selector_matches(selector, {})
                    except NodeSelectorError as e:
                        raise _SchedError(str(e)) from None
                d.selectors.append(selector)
                continue
            d.selectors.append(None)
            d.to_allocate.append(index)
            owner = self._in_flight.get(_uid(claim))
            if owner is not None and owner != pod_key:
                raise _PreFilterReject(plugins.Status(plugins.UNRESOLVABLE, [
                    f"resource claim {_kobj(claim)} is in the process of being allocated"]))
            if claim is ext_existing:
                continue
            for request in ((_spec(claim).get("devices") or {}).get("requests") or []):
                rname = str(request.get("name") or "")
                if request.get("exactly") is not None:
                    self._validate_class(str(request["exactly"].get("deviceClassName") or ""), rname)
                elif request.get("firstAvailable"):
                    for sub in request["firstAvailable"]:
                        self._validate_class(str(sub.get("deviceClassName") or ""), f"{rname}/{sub.get('name')}")
                else:
                    raise _PreFilterReject(plugins.Status(plugins.UNRESOLVABLE, [
                        f"resource claim {_kobj(claim)}, request {rname}: unknown request type"]))
            if claim_requests_admin_access(claim) and not namespace_allows_admin_access(namespace):
                raise _PreFilterReject(plugins.Status(plugins.UNRESOLVABLE, [
                    f"resource claim {_kobj(claim)}: admin access to devices requires the "
                    f"`{ADMIN_ACCESS_NAMESPACE_LABEL}: true` label on the containing namespace"]))
        d.claims = claims
        d.active = True
        d.alloc_claims = [claims[i] for i in d.to_allocate]
        d.has_selectors = any(sel is not None for sel in d.selectors)
        d.prioritized = any(r.get("firstAvailable") for c in d.alloc_claims
                            for r in ((_spec(c).get("devices") or {}).get("requests") or []))
        if d.to_allocate:
            d.signature = _encode([_spec(c) for c in d.alloc_claims])
        return d

    def _validate_class(self, class_name: str, request_name: str) -> None:
        if not class_name:
            raise _SchedError(f"request {request_name}: unsupported request type")
        if class_name not in self._class_map:
            raise _PreFilterReject(plugins.Status(plugins.UNRESOLVABLE, [
                f"request {request_name}: device class {class_name} does not exist"]))

    async def _dra_filter(self, pod: Mapping[str, Any], d: _DraCycle, entry: _NodeEntry
                          ) -> tuple[plugins.Status | None, list[dict[str, Any]], ext.ExtendedResourceClaim | None]:
        node_ext: ext.ExtendedResourceClaim | None = None
        claims = d.alloc_claims
        signature = d.signature
        if d.ext_template:
            try:
                node_ext = ext.build_extended_resource_claim(pod, self._class_map, node=entry.node)
            except ext.ExtendedResourceUnfit as e:
                return plugins.Status(plugins.UNSCHEDULABLE, [f"Insufficient {e.resource}"], DRA_PLUGIN), [], None
            if node_ext is None and not d.claims:
                return None, [], None  # satisfied by the node's device plugin
            if node_ext is not None:
                claims = [*claims, node_ext.claim]
                signature += _encode(node_ext.claim["spec"])
        unavailable = False
        if d.has_selectors:
            for index, selector in enumerate(d.selectors):
                if selector is not None and not node_selector_matches(selector, entry.node):
                    d.unavailable.add(index)
                    unavailable = True
        allocs: list[dict[str, Any]] = []
        if claims:
            result = await self._allocate_cached(entry, claims, signature)
            if result is None:
                return _CANNOT_ALLOCATE, [], None
            if isinstance(result, plugins.Status):
                return result, [], None
            allocs = result
        if unavailable:
            return plugins.Status(plugins.UNRESOLVABLE, ["resourceclaim not available on the node"], DRA_PLUGIN), [], None
        return None, allocs, node_ext

    async def _allocate_cached(self, entry: _NodeEntry, claims: list[dict[str, Any]], signature: bytes
                               ) -> list[dict[str, Any]] | None | plugins.Status:
        """Allocate on one node, reusing the previous answer for the same claim specs while none of
        the node's pools changed (no device allocated or freed there, same allocator)."""
        allocator = self._allocator or self._get_allocator()
        version = (self._allocator_gen, entry.dra_version, self._shared_version)
        cached = entry.dra_cache.get(signature)
        if cached is not None and cached[:3] == version:
            self.stats.dra_cache_hits += 1
            return cached[3]  # type: ignore[no-any-return]
        self.stats.allocate_calls += 1
        try:
            result = await self._allocate(allocator, entry, claims)
        except AllocationTimeout:
            raise _SchedError(f"node {entry.name}: timed out trying to allocate devices") from None
        except NodeAllocationError as e:
            out: plugins.Status | list[dict[str, Any]] | None = plugins.Status(plugins.UNRESOLVABLE, [str(e)], DRA_PLUGIN)
        except AllocationError as e:
            raise _SchedError(str(e)) from None
        else:
            out = result
        if self._allocator is allocator and version == (self._allocator_gen, entry.dra_version, self._shared_version) \
                and not _has_shares(out):
            if len(entry.dra_cache) > 64:
                entry.dra_cache.clear()
            entry.dra_cache[signature] = (*version, out)
        return out

    async def _allocate(self, allocator: Allocator, entry: _NodeEntry, claims: list[dict[str, Any]]
                        ) -> list[dict[str, Any]] | None:
        """On the event loop for up to ON_LOOP_SLICE, then (starting over) in a thread with the
        rest of the per-node time limit while claim-state changes wait."""
        begin = time.monotonic()
        deadline = min(begin + self.filter_timeout, self._cycle_deadline)
        if deadline - begin <= ON_LOOP_SLICE:
            return allocator.allocate(node=entry.node, claims=claims, deadline=deadline)
        try:
            return allocator.allocate(node=entry.node, claims=claims, deadline=begin + ON_LOOP_SLICE)
        except AllocationTimeout:
            pass
        self.stats.threaded_allocations += 1
        self._log.debug("allocation_slow_moving_to_thread", node=entry.name, limit_seconds=self.filter_timeout)
        self._deferred = []
        try:
            return await asyncio.to_thread(allocator.allocate, node=entry.node, claims=claims, deadline=deadline)
        finally:
            pending, self._deferred = self._deferred, None
            for fn in pending or ():
                fn()

    async def _dra_post_filter(self, pod: Mapping[str, Any], d: _DraCycle) -> str:
        """DynamicResources PostFilter: deallocate one allocated claim that is unusable on some
        node and reserved by nobody else, so that the next attempt can allocate it afresh."""
        if not d.active:
            return "no new claims to deallocate"
        pod_uid = _uid(pod)
        for index in sorted(d.unavailable):
            claim = d.claims[index]
            if claim is d.ext_existing:
                continue
            reserved = _status(claim).get("reservedFor") or []
            if not reserved or (len(reserved) == 1 and reserved[0].get("uid") == pod_uid):
                body = caches.deep_copy(claim)
                status = body.setdefault("status", {})
                for key in ("reservedFor", "allocation", "devices"):
                    status.pop(key, None)
                try:
                    await self.client.update_status(CLAIMS, body, field_manager=COMPONENT)
                except errors.StatusError as exc:
                    self._log.info("deallocation_failed", claim=_kobj(claim), error=exc.message)
                    return "still not schedulable"
                self._log.info("claim_deallocated", claim=_kobj(claim), pod=_kobj(pod))
                return "deallocation of ResourceClaim completed"
        if d.ext_existing is not None:
            # A special claim from an earlier attempt: start over with a fresh one.
            with contextlib.suppress(errors.NotFound):
                await self._delete_claim(d.ext_existing)
            return "deletion of ResourceClaim completed"
        return "still not schedulable"

    def _select_host(self, info: plugins.PodInfo, d: _DraCycle,
                     feasible: Sequence[tuple[_NodeEntry, list[dict[str, Any]], ext.ExtendedResourceClaim | None]]
                     ) -> tuple[_NodeEntry, list[dict[str, Any]], ext.ExtendedResourceClaim | None]:
        if len(feasible) == 1:
            return feasible[0]
        if d.prioritized or info.preferred or info.owner or (self._soft_tainted and any(
                e.info.soft_taints for e, _a, _x in feasible)):
            inputs = []
            for entry, allocs, _node_ext in feasible:
                dra_score = plugins.prioritized_list_score(d.alloc_claims, allocs) if d.prioritized and allocs else 0
                inputs.append(info.raw_score(entry.info, entry.usage, dra_score))
            totals = plugins.total_scores(inputs)
        else:  # only the resource scores differ between nodes
            score = info.resource_score
            totals = [score(entry.info, entry.usage) for entry, _a, _x in feasible]
        best = max(totals)
        # selectHost: a uniformly random one among the top scores.
        top = [i for i, score in enumerate(totals) if score == best]
        chosen = top[self.rng.randrange(len(top))] if len(top) > 1 else top[0]
        return feasible[chosen]

    def _reserve(self, pod: dict[str, Any], req: plugins.PodRequests, d: _DraCycle, entry: _NodeEntry,
                 allocs: list[dict[str, Any]], node_ext: ext.ExtendedResourceClaim | None) -> _Plan:
        pod_uid = _uid(pod)
        pod_key = caches.key_of(pod)
        plan = _Plan(node=entry.name, claims=[])
        to_alloc = {index: allocs[i] for i, index in enumerate(d.to_allocate)}
        for index, claim in enumerate(d.claims):
            uid = _uid(claim)
            alloc = to_alloc.get(index)
            if alloc is not None:
                self._assume_claim(uid, alloc)
                self._in_flight[uid] = pod_key
            plan.claims.append(_ClaimPlan(claim=claim, allocation=alloc, key=uid, extended=claim is d.ext_existing,
                                          reserve=not _reserved_for(claim, pod_uid)))
        if node_ext is not None:
            alloc = allocs[len(d.to_allocate)]
            key = f"extended:{pod_uid}"
            self._assume_claim(key, alloc)
            plan.claims.append(_ClaimPlan(claim=None, allocation=alloc, key=key, extended=True))
            plan.extended_claim = node_ext.claim
            plan.mappings = node_ext.mappings
        self._assumed_pods[pod_uid] = entry.name
        self._set_usage(pod_uid, (entry.name, req, _controller_uid(pod)))
        return plan

    # ------------------------------------------------------------------ the binding cycle

    async def _binding_cycle(self, pod: dict[str, Any], plan: _Plan) -> None:
        """PreBind (the claims) and Bind; failures raise _BindingError with upstream's wording."""
        ns, name = caches.key_of(pod)
        pod_uid = _uid(pod)
        ref = {"resource": "pods", "name": name, "uid": pod_uid}
        try:
            try:
                await self._pre_bind(plan, ns, name, ref)
            except (errors.StatusError, RuntimeError) as exc:
                message = exc.message if isinstance(exc, errors.StatusError) else str(exc)
                raise _BindingError(f'running PreBind plugin "{DRA_PLUGIN}": {message}') from None
            try:
                await self.client.bind(namespace=ns, name=name, node=plan.node, uid=pod_uid)
            except errors.StatusError as exc:
                raise _BindingError(f'running Bind plugin "DefaultBinder": {exc.message}') from None
        finally:
            for cp in plan.claims:
                if self._in_flight.get(cp.key) == (ns, name):
                    del self._in_flight[cp.key]

    async def _pre_bind(self, plan: _Plan, ns: str, name: str, ref: dict[str, str]) -> None:
        for cp in plan.claims:
            if not cp.reserve:
                continue
            if cp.claim is None:  # the extended-resource claim: create it first
                body = caches.deep_copy(plan.extended_claim or {})
                meta = body.setdefault("metadata", {})
                meta["finalizers"] = [FINALIZER]
                for owner in meta.get("ownerReferences") or []:
                    owner["blockOwnerDeletion"] = True
                created = await self.client.create(CLAIMS, body, field_manager=COMPONENT)
                cp.claim = created
                new_key = _uid(created)
                self._rekey_claim(cp.key, new_key)
                cp.key = new_key
                self._in_flight[new_key] = (ns, name)
            cp.claim = await self._bind_claim(cp, ref)
            self._in_flight.pop(cp.key, None)
        if plan.extended_claim is not None:
            created_claim = next(cp.claim for cp in plan.claims if cp.extended and cp.claim is not None)
            patch = {"status": {"extendedResourceClaimStatus": ext.pod_extended_resource_claim_status(
                str(_meta(created_claim).get("name")), plan.mappings)}}
            await self.client.patch(PODS, name, patch, namespace=ns, subresource="status", field_manager=COMPONENT)

    async def _bind_claim(self, cp: _ClaimPlan, ref: dict[str, str]) -> dict[str, Any]:
        """`bindClaim`: finalizer (plain update) and allocation + reservation (status update), with
        a fresh read and another try on conflict."""
        assert cp.claim is not None
        claim = caches.deep_copy(cp.claim)
        kobj = _kobj(claim)
        refresh = False
        last: Exception | None = None
        for _ in range(CONFLICT_RETRIES):
            if refresh:
                try:
                    claim = await self.client.get(CLAIMS, str(_meta(claim)["name"]),
                                                  namespace=str(_meta(claim).get("namespace") or ""))
                except errors.StatusError as exc:
                    raise RuntimeError(f"get updated claim {kobj} after conflict: {exc.message}") from None
            refresh = True
            if _meta(claim).get("deletionTimestamp"):
                raise RuntimeError(f"claim {kobj} got deleted in the meantime")
            try:
                if cp.allocation is not None:
                    if _allocation(claim) is not None:
                        raise RuntimeError(f"claim {kobj} got allocated elsewhere in the meantime")
                    meta = claim.setdefault("metadata", {})
                    if FINALIZER not in (meta.get("finalizers") or []):
                        meta["finalizers"] = [*(meta.get("finalizers") or []), FINALIZER]
                        try:
                            claim = await self.client.update(CLAIMS, claim, field_manager=COMPONENT)
                        except errors.Conflict:
                            raise
                        except errors.StatusError as exc:
                            raise RuntimeError(f"add finalizer to claim {kobj}: {exc.message}") from None
                    claim.setdefault("status", {})["allocation"] = cp.allocation
                status = claim.setdefault("status", {})
                status["reservedFor"] = [*(status.get("reservedFor") or []), dict(ref)]
                try:
                    updated = await self.client.update_status(CLAIMS, claim, field_manager=COMPONENT)
                except errors.Conflict:
                    raise
                except errors.StatusError as exc:
                    what = "allocation and reservation" if cp.allocation is not None else "reservation"
                    raise RuntimeError(f"add {what} to claim {kobj}: {exc.message}") from None
            except errors.Conflict as exc:
                last = exc
                continue
            cached = self.claims.cache.get(*caches.key_of(updated))
            if cached is None or _rv(cached) < _rv(updated):
                self._written[_uid(updated)] = updated
            return updated
        assert last is not None
        raise RuntimeError(f"add reservation to claim {kobj}: {last}")

    def _unreserve_local(self, pod: Mapping[str, Any], plan: _Plan) -> None:
        for cp in plan.claims:
            if cp.allocation is not None:
                self._forget_claim(cp.key, cp.claim)
            self._in_flight.pop(cp.key, None)
        uid = _uid(pod)
        if self._assumed_pods.pop(uid, None) is not None:
            self._set_usage(uid, None)
            current = self.pods.cache.get(*caches.key_of(pod))
            if current is not None and _uid(current) == uid:
                self._account_pod(current)

    async def _unreserve(self, pod: Mapping[str, Any], plan: _Plan) -> None:
        """`Unreserve`: drop the assumptions; remove the pod from reservedFor where we added it
        (strategic-merge delete by uid); delete an extended-resource claim we created."""
        self._unreserve_local(pod, plan)
        pod_uid = _uid(pod)
        for cp in plan.claims:
            if cp.claim is None:
                continue
            if cp.extended and plan.extended_claim is not None:
                with contextlib.suppress(errors.NotFound):
                    await self._delete_claim(cp.claim)
                continue
            current = self._claim_view(*caches.key_of(cp.claim))
            if current is None or not _reserved_for(current, pod_uid):
                if not _reserved_for(cp.claim, pod_uid):
                    continue
            patch = {"metadata": {"uid": _uid(cp.claim)},
                     "status": {"reservedFor": [{"$patch": "delete", "uid": pod_uid}]}}
            try:
                await self.client.patch(CLAIMS, str(_meta(cp.claim).get("name")), patch,
                                        namespace=str(_meta(cp.claim).get("namespace") or ""),
                                        patch_type="strategic", subresource="status", field_manager=COMPONENT)
            except errors.StatusError as exc:
                self._log.info("unreserve_failed", claim=_kobj(cp.claim), error=exc.message)

    async def _delete_claim(self, claim: Mapping[str, Any]) -> None:
        """Delete a claim we created; with our finalizer on it and no allocation to keep, remove
        the finalizer too."""
        ns, name = caches.key_of(claim)
        await self.client.delete(CLAIMS, name, namespace=ns, preconditions={"uid": _uid(claim)})
        for _ in range(CONFLICT_RETRIES):
            try:
                current = await self.client.get(CLAIMS, name, namespace=ns)
            except errors.NotFound:
                return
            if _uid(current) != _uid(claim):
                return
            fins = [f for f in _meta(current).get("finalizers") or [] if f != FINALIZER]
            if len(fins) == len(_meta(current).get("finalizers") or []):
                return
            if _allocation(current) is not None:
                current["status"] = {k: v for k, v in _status(current).items()
                                     if k not in ("allocation", "reservedFor", "devices")}
                try:
                    current = await self.client.update_status(CLAIMS, current, field_manager=COMPONENT)
                except errors.Conflict:
                    continue
            try:
                await self.client.patch(CLAIMS, name, {"metadata": {
                    "resourceVersion": _meta(current).get("resourceVersion"), "finalizers": fins or None}},
                    namespace=ns, field_manager=COMPONENT)
                return
            except errors.Conflict:
                continue

    # ------------------------------------------------------------------ reporting

    async def _report_failure(self, pod: Mapping[str, Any], reason: str, message: str) -> None:
        """`handleSchedulingFailure`: a Warning FailedScheduling event and the PodScheduled=False
        condition (written only when it changes)."""
        ns, name = caches.key_of(pod)
        self._log.debug("pod_not_scheduled", namespace=ns, name=name, reason=reason, message=message)
        now = self.clock.now()
        last = self._last_event.get((ns, name))
        if last is None or last[0] != _uid(pod) or last[1] != message or now - last[2] >= EVENT_REPEAT_INTERVAL:
            # Identical repeats within the interval are folded (upstream's recorder counts them in
            # an event series instead of writing each).
            self._last_event[(ns, name)] = (_uid(pod), message, now)
            await self.recorder.warning(pod, "FailedScheduling", _truncate(message))
        current = self.pods.cache.get(ns, name) or pod
        if _uid(current) != _uid(pod):
            return
        existing = next((c for c in _status(current).get("conditions") or []
                         if isinstance(c, Mapping) and c.get("type") == "PodScheduled"), None)
        if existing is not None and existing.get("status") == "False" and existing.get("reason") == reason \
                and existing.get("message") == message:
            return
        cond: dict[str, Any] = {"type": "PodScheduled", "status": "False", "lastProbeTime": None,
                                "lastTransitionTime": (existing.get("lastTransitionTime")
                                                       if existing is not None and existing.get("status") == "False"
                                                       else _now_rfc3339(self.clock)),
                                "reason": reason, "message": message}
        generation = _meta(current).get("generation")
        if generation:
            cond["observedGeneration"] = generation
        try:
            await self.client.patch(PODS, name, {"status": {"conditions": [cond]}}, namespace=ns,
                                    patch_type="strategic", subresource="status", field_manager=COMPONENT)
        except errors.NotFound:
            pass
        except errors.StatusError as exc:
            self._log.info("pod_condition_update_failed", namespace=ns, name=name, error=exc.message)


def _has_shares(result: Any) -> bool:
    if not isinstance(result, list):
        return False
    for alloc in result:
        for r in ((alloc.get("devices") or {}).get("results") or []):
            if "shareID" in r:
                return True
    return False


def _truncate(message: str, limit: int = 1024) -> str:
    """`truncateMessage`: Event notes are capped at 1 KiB."""
    if len(message) <= limit:
        return message
    suffix = " ..."
    return message[:limit - len(suffix)] + suffix


# ---------------------------------------------------------------------- the controller


GC_THRESHOLDS = (50_000, 20, 100)
_gc_tuned = False


def tune_gc() -> None:
    """Once per process: freeze the objects that exist when the scheduler starts (the informer
    caches have just synced) and run the young-generation collection less often.

    The caches hold hundreds of thousands of long-lived dicts that CPython's cyclic collector
    otherwise re-traverses on every full collection — about 0.5 s each at 5,000 pods and 5,000
    claims, a dozen times while 2,500 pods are scheduled, i.e. 3 ms per pod, more than the
    scheduling cycle itself. Reference counting still frees everything that is not a cycle."""
    global _gc_tuned
    if _gc_tuned or "pytest" in sys.modules:
        return  # once; and never inside a test run, whose heap must outlive no single test
    _gc_tuned = True
    gc.freeze()
    current = gc.get_threshold()
    gc.set_threshold(*(max(c, t) for c, t in zip(current, GC_THRESHOLDS, strict=True)))


class SchedulerController(managers.Controller):
    """The scheduler's Controller: its queue is the scheduler's active queue; each start of a term
    resets the unschedulable pool and backoff."""

    def __init__(self, scheduler: Scheduler, *, workers: int, gc_tuning: bool = True) -> None:
        self.scheduler = scheduler
        self.gc_tuning = gc_tuning
        self._queue: workqueue.WorkQueue[reconcile.Request] | None = None
        super().__init__(name=NAME, reconciler=scheduler, watches=scheduler.watches(), workers=workers,
                         rate_limiter=_rate_limiter)
        scheduler.controller = self

    @property  # type: ignore[override]
    def queue(self) -> workqueue.WorkQueue[reconcile.Request] | None:
        return self._queue

    @queue.setter
    def queue(self, value: workqueue.WorkQueue[reconcile.Request] | None) -> None:
        self._queue = value
        if value is not None:
            self.scheduler.on_start()
            if self.gc_tuning:
                tune_gc()


def _rate_limiter(clock: clocks.Clock) -> workqueue.RateLimiter[reconcile.Request]:
    """Unexpected reconcile errors back off per pod like scheduling failures (1 s .. 10 s)."""
    return workqueue.ItemExponentialFailureRateLimiter(base=INITIAL_BACKOFF, max_delay=MAX_BACKOFF)


def new(ctx: managers.ControllerContext, *, workers: int = DEFAULT_WORKERS, filter_timeout: float = FILTER_TIMEOUT,
        pod_filter_timeout: float = FILTER_TIMEOUT, percentage_of_nodes_to_score: int = 0, seed: int | None = None,
        gc_tuning: bool = True) -> managers.Controller:
    """The scheduler controller. `gc_tuning=False` leaves the process's garbage collector alone
    (see `tune_gc`)."""
    sched = Scheduler(client=ctx.client, informer_factory=ctx.informers, clock=ctx.clock,
                      recorder=ctx.recorder(COMPONENT), filter_timeout=filter_timeout,
                      pod_filter_timeout=pod_filter_timeout,
                      percentage_of_nodes_to_score=percentage_of_nodes_to_score, seed=seed)
    return SchedulerController(sched, workers=workers, gc_tuning=gc_tuning)


def scheduler_of(controller: managers.Controller) -> Scheduler:
    assert isinstance(controller, SchedulerController)
    return controller.scheduler


__all__ = ["COMPONENT", "FINALIZER", "NAME", "Scheduler", "SchedulerController", "is_pending", "new",
           "scheduler_of"]
