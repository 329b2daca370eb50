"""The node lifecycle controller (kube-controller-manager's `node-lifecycle-controller`,
`pkg/controller/nodelifecycle`): notices kubelets that stopped reporting, says so in the Node's
status, and taints the Node so that the scheduler keeps new pods off it and the taint eviction
controller (`controllers/taint_eviction.py`) evicts the pods that do not tolerate it.

**Health, per Node** (upstream's `tryUpdateNodeHealth`). The controller keeps, in memory, when it
last saw the kubelet alive (the *probe time*, on the controller's clock): the moment it observed a new
`lastHeartbeatTime` on the Ready condition or a newer `renewTime` on the Node's Lease in
`kube-node-lease`. A Node seen for the first time (or after a restart of the controller) counts as
alive now. When the probe time is older than the grace period — `--node-monitor-grace-period`,
50 s; `--node-startup-grace-period`, 60 s, for a Node that never had a Ready condition — the Ready,
MemoryPressure, DiskPressure and PIDPressure conditions become `Unknown` (PUT `nodes/status`):
an existing condition gets reason `NodeStatusUnknown`, message "Kubelet stopped posting node
status." and a new lastTransitionTime (its heartbeat kept); a missing one is added with
`NodeStatusNeverUpdated`, "Kubelet never posted node status.", heartbeat = the Node's creation.
NetworkUnavailable is left alone, as upstream.

**Taints**, with `timeAdded` (upstream's `SwapNodeControllerTaint`, one PUT of the Node guarded by its
resourceVersion):
- NoExecute, from the Ready condition the pass started from (so one pass after a status change):
  `node.kubernetes.io/not-ready` for False, `node.kubernetes.io/unreachable` for Unknown (the two
  are exclusive, one replaces the other), neither for True.
- NoSchedule (upstream's `doNoScheduleTaintingPass`), from the current conditions: not-ready /
  unreachable for Ready False / Unknown, `memory-pressure`, `disk-pressure`, `pid-pressure`,
  `network-unavailable` for those conditions True, and `node.kubernetes.io/unschedulable` for
  `spec.unschedulable`. Other NoSchedule taints with these keys are removed when their cause goes.

**Pods.** When the Ready condition leaves True the Node gets the Normal Event `NodeNotReady`
"Node NAME status is now: NodeNotReady", and every pod bound to it whose Ready condition is not
False gets it False with a new lastTransitionTime (upstream's `MarkPodsNotReady`, PUT
`pods/status`); a pod bound later to a Node that is not Ready is marked the same way. A Node seen for
the first time gets `RegisteredNode` "Registered Node NAME in Controller".

**Full disruption** (upstream's master disruption mode): while not one Node is Ready (Nodes labelled
`node.kubernetes.io/exclude-disruption` aside), no NoExecute taint is kept or added — a control
plane cut off from every kubelet evicts nothing; once one Node is Ready again every Node is looked at
again (the ones still down get their NoExecute taint) and every kubelet gets a fresh grace period.

**Departures from upstream.** The check runs for each Node exactly when its grace period ends (a
requeue on the clock), not on a 5 s `--node-monitor-period` tick; found more than 5 s late (the
virtual clock jumped), it is made again after 0.25 s of wall time, so that kubelets the jump made
overdue renew first instead of being seen Unknown. NoExecute taints are written at
once, not through the per-zone rate-limited queue (0.1 Node/s); zones are not told apart (partial
disruption's slower rate is not applied; full disruption is judged over all Nodes, which is the same
as every zone fully disrupted).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgspec
import structlog

from controllers.runtime import cache as caches
from controllers.runtime import client as clients
from controllers.runtime import informer as informers
from controllers.runtime import manager as managers
from controllers.runtime.reconcile import Request, Result, TerminalError
from cp import clock as clocks
from cp import errors
from cp.objects import meta_of, spec_of, status_of

NAME = "node-lifecycle"
UPSTREAM_NAME = "node-lifecycle-controller"
COMPONENT = "node-controller"  # the Event source upstream's recorder uses
FIELD_MANAGER = "node-lifecycle-controller"

NODE_MONITOR_GRACE_PERIOD = 50.0  # --node-monitor-grace-period (1.32+)
NODE_STARTUP_GRACE_PERIOD = 60.0  # --node-startup-grace-period
LEASE_NAMESPACE = "kube-node-lease"

NODES = clients.resolve("nodes")
PODS = clients.resolve("pods")
LEASES = clients.resolve("leases.coordination.k8s.io")
R_POD = "pods"
POD_INDEXERS: dict[str, caches.IndexFunc] = {caches.NODE: caches.by_node}

EXCLUDE_DISRUPTION = "node.kubernetes.io/exclude-disruption"  # a label: not counted for disruption
NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
NO_EXECUTE = "NoExecute"
NO_SCHEDULE = "NoSchedule"

# Conditions that go Unknown when the kubelet is silent (NetworkUnavailable is not one of them).
MONITORED_CONDITIONS = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")
# upstream nodeConditionToTaintKeyStatusMap: condition type -> status -> NoSchedule taint key.
CONDITION_TAINTS: dict[str, dict[str, str]] = {
    "Ready": {"False": NOT_READY, "Unknown": UNREACHABLE},
    "MemoryPressure": {"True": "node.kubernetes.io/memory-pressure"},
    "DiskPressure": {"True": "node.kubernetes.io/disk-pressure"},
    "NetworkUnavailable": {"True": "node.kubernetes.io/network-unavailable"},
    "PIDPressure": {"True": "node.kubernetes.io/pid-pressure"},
}
CONDITION_TAINT_KEYS = frozenset(k for m in CONDITION_TAINTS.values() for k in m.values())

REASON_UNKNOWN = "NodeStatusUnknown"
MESSAGE_UNKNOWN = "Kubelet stopped posting node status."
REASON_NEVER = "NodeStatusNeverUpdated"
MESSAGE_NEVER = "Kubelet never posted node status."

WRITE_ATTEMPTS = 5
# A deadline found passed by more than this (the clock jumped: `cplane clock advance 5m`) is checked
# again after RECHECK_WALL_SECONDS of wall time before the Node is marked Unknown, so that kubelets
# whose renewals the same jump made due get to write them first.
LATE_TOLERANCE = 5.0  # upstream's --node-monitor-period
RECHECK_WALL_SECONDS = 0.25

logger = structlog.get_logger("cplane.controllers.nodelifecycle")


class Health(msgspec.Struct, kw_only=True):
    """What the controller remembers of one Node (upstream's nodeHealthData)."""

    probe: float  # when the kubelet was last seen alive, on our clock
    heartbeat: str | None  # the Ready condition's lastHeartbeatTime then (None: no Ready condition)
    lease_renewed: float | None = None  # the Lease's renewTime we last saw


def condition(obj: Mapping[str, Any], type_: str) -> dict[str, Any] | None:
    for c in status_of(obj).get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == type_:
            return c
    return None


def ready_status(node: Mapping[str, Any]) -> str | None:
    """The Ready condition's status (None: no Ready condition)."""
    c = condition(node, "Ready")
    return str(c.get("status") or "Unknown") if c is not None else None


def _time(value: Any) -> float | None:
    if isinstance(value, str) and value:
        try:
            return clocks.parse_time(value)
        except ValueError:
            return None
    return None


def unknown_conditions(node: Mapping[str, Any], now: float) -> list[dict[str, Any]]:
    """The Node's conditions after the kubelet's silence outlived the grace period."""
    stamp = clocks.rfc3339(now)
    conditions = [dict(c) for c in status_of(node).get("conditions") or [] if isinstance(c, Mapping)]
    by_type = {c.get("type"): c for c in conditions}
    for type_ in MONITORED_CONDITIONS:
        c = by_type.get(type_)
        if c is None:
            conditions.append({"type": type_, "status": "Unknown",
                               "lastHeartbeatTime": meta_of(node).get("creationTimestamp"),
                               "lastTransitionTime": stamp, "reason": REASON_NEVER, "message": MESSAGE_NEVER})
        elif c.get("status") != "Unknown":
            c.update(status="Unknown", reason=REASON_UNKNOWN, message=MESSAGE_UNKNOWN, lastTransitionTime=stamp)
    return conditions


def no_schedule_taint_keys(node: Mapping[str, Any]) -> set[str]:
    """The NoSchedule taints the Node's conditions and `spec.unschedulable` call for."""
    keys: set[str] = set()
    for c in status_of(node).get("conditions") or []:
        if isinstance(c, Mapping):
            key = CONDITION_TAINTS.get(str(c.get("type")), {}).get(str(c.get("status")))
            if key:
                keys.add(key)
    if spec_of(node).get("unschedulable"):
        keys.add(UNSCHEDULABLE)
    return keys


def no_execute_taint_key(observed_ready: str | None) -> str | None:
    """The NoExecute taint a Ready status calls for (upstream's processTaintBaseEviction)."""
    if observed_ready == "False":
        return NOT_READY
    if observed_ready == "Unknown":
        return UNREACHABLE
    return None


def fully_disrupted(nodes: Iterable[Mapping[str, Any]]) -> bool:
    """upstream's "master disruption mode": every zone fully disrupted, i.e. not one of the Nodes
    (those not labelled `node.kubernetes.io/exclude-disruption`) Ready, and at least one Node."""
    counted = False
    for n in nodes:
        if EXCLUDE_DISRUPTION in (meta_of(n).get("labels") or {}):
            continue
        if ready_status(n) == "True":
            return False
        counted = True
    return counted


def desired_taints(node: Mapping[str, Any], *, observed_ready: str | None, now: float,
                   evicting: bool = True) -> list[dict[str, Any]] | None:
    """The Node's taints with the controller's own brought in line, or None when nothing changes.
    Taints of others are kept in place; ours that stay keep their timeAdded. `evicting` False (every
    Node down): no NoExecute taint of ours, as upstream in full disruption."""
    current = [t for t in spec_of(node).get("taints") or [] if isinstance(t, Mapping)]
    want: set[tuple[str, str]] = {(k, NO_SCHEDULE) for k in no_schedule_taint_keys(node)}
    ne = no_execute_taint_key(observed_ready)
    if evicting and ne is not None:
        want.add((ne, NO_EXECUTE))
    elif evicting and observed_ready is None:
        # No Ready condition yet: upstream leaves the NoExecute taints as they are.
        want |= {(str(t.get("key")), NO_EXECUTE) for t in current
                 if t.get("effect") == NO_EXECUTE and t.get("key") in (NOT_READY, UNREACHABLE)}

    def ours(t: Mapping[str, Any]) -> bool:
        key, effect = str(t.get("key") or ""), str(t.get("effect") or "")
        if effect == NO_SCHEDULE:
            return key == UNSCHEDULABLE or key in CONDITION_TAINT_KEYS
        return effect == NO_EXECUTE and key in (NOT_READY, UNREACHABLE)

    kept = [dict(t) for t in current if not ours(t) or (str(t.get("key")), str(t.get("effect"))) in want]
    have = {(str(t.get("key")), str(t.get("effect"))) for t in current if ours(t)}
    stamp = clocks.rfc3339(now)
    added = [{"key": k, "effect": e, "timeAdded": stamp} for k, e in sorted(want - have)]
    if not added and len(kept) == len(current):
        return None
    return kept + added


def pod_not_ready_status(pod: Mapping[str, Any], now: float) -> dict[str, Any] | None:
    """The pod's status with its Ready condition False (None: no Ready condition, or False already)."""
    status = caches.deep_copy(status_of(pod))
    for c in status.get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == "Ready":
            if c.get("status") == "False":
                return None
            c["status"] = "False"
            c["lastTransitionTime"] = clocks.rfc3339(now)
            return status
    return None


class NodeLifecycle:
    """The reconciler. Keys: a Node's name, or `pods:ns/name` for a pod just bound to a Node."""

    def __init__(self, *, client: clients.Client, informer_factory: informers.InformerFactory,
                 clock: clocks.Clock, recorder: managers.EventRecorder,
                 grace_period: float = NODE_MONITOR_GRACE_PERIOD,
                 startup_grace_period: float = NODE_STARTUP_GRACE_PERIOD) -> None:
        self.client = client
        self.clock = clock
        self.recorder = recorder
        self.grace_period = grace_period
        self.startup_grace_period = startup_grace_period
        self.nodes = informer_factory.informer(NODES).cache
        self.pods = informer_factory.informer(PODS, indexers=POD_INDEXERS).cache
        self.leases = informer_factory.informer(LEASES).cache
        self.health: dict[str, Health] = {}
        self.known: set[str] = set()
        self.rechecked: dict[str, float] = {}  # node -> the passed deadline already given a second look
        self.disrupted = False  # every Node down: no NoExecute taints (upstream's full disruption)
        self.controller: managers.Controller | None = None
        self._log = logger.bind(controller=NAME)

    def watches(self) -> list[managers.Watch]:
        return [managers.Watch(kind=NODES, map=self._map_node),
                managers.Watch(kind=LEASES, map=self._map_lease),
                managers.Watch(kind=PODS, map=self._map_pod, indexers=POD_INDEXERS)]

    def on_start(self) -> None:
        self.health.clear()
        self.known.clear()
        self.rechecked.clear()
        self.disrupted = False

    # ------------------------------------------------------------------ event mapping

    def _map_node(self, change: managers.Change) -> list[Request]:
        return [Request(name=str(meta_of(change.obj).get("name") or ""))]

    def _map_lease(self, change: managers.Change) -> list[Request]:
        if meta_of(change.obj).get("namespace") != LEASE_NAMESPACE or change.type == "delete":
            return []
        name = str(meta_of(change.obj).get("name") or "")
        # A renewal of a Ready Node's Lease changes nothing but when its kubelet was last seen: noted
        # here, without a reconcile (10,000 kubelets renew 1,000 Leases a second, issue #22). The Node's
        # reconcile already waiting for its deadline then finds the later probe time and waits again.
        health = self.health.get(name)
        node = self.nodes.get("", name)
        renewed = _time(spec_of(change.obj).get("renewTime"))
        if health is not None and node is not None and renewed is not None and ready_status(node) == "True" \
                and health.lease_renewed is not None and renewed > health.lease_renewed:
            health.lease_renewed = renewed
            health.probe = self.clock.now()
            return []
        return [Request(name=name)]

    def _map_pod(self, change: managers.Change) -> list[Request]:
        node = spec_of(change.obj).get("nodeName")
        if change.type == "delete" or not node:
            return []
        if change.old is not None and spec_of(change.old).get("nodeName") == node:
            return []
        ns, name = caches.key_of(change.obj)
        return [Request(resource=R_POD, namespace=ns, name=name)]

    # ------------------------------------------------------------------ reconcile

    async def reconcile(self, request: Request) -> Result | None:
        if request.resource == R_POD:
            await self._reconcile_pod(request.namespace, request.name)
            return None
        if request.resource:
            raise TerminalError(f"unexpected request {request}")
        return await self._reconcile_node(request.name)

    def _observe(self, node: Mapping[str, Any], now: float) -> tuple[Health, float]:
        """Update what we know of the kubelet's liveness; (health, grace period that applies)."""
        name = str(meta_of(node).get("name") or "")
        ready = condition(node, "Ready")
        heartbeat = str(ready.get("lastHeartbeatTime") or "") if ready is not None else None
        grace = self.grace_period if ready is not None else self.startup_grace_period
        saved = self.health.get(name)
        if saved is None:
            # First sight: now (upstream "Assuming now as a timestamp"); a Node that never posted a
            # Ready condition counts from its creation.
            created = _time(meta_of(node).get("creationTimestamp"))
            probe = created if ready is None and created is not None else now
            health = Health(probe=probe, heartbeat=heartbeat)
        elif heartbeat is not None and heartbeat != saved.heartbeat:
            health = Health(probe=now, heartbeat=heartbeat, lease_renewed=saved.lease_renewed)
        else:
            health = saved
            health.heartbeat = heartbeat
        lease = self.leases.get(LEASE_NAMESPACE, name)
        renewed = _time(spec_of(lease).get("renewTime")) if lease is not None else None
        if renewed is not None and (health.lease_renewed is None or renewed > health.lease_renewed):
            health.lease_renewed = renewed
            health.probe = now
        self.health[name] = health
        return health, grace

    async def _reconcile_node(self, name: str) -> Result | None:
        node = self.nodes.get("", name)
        if node is None:
            if name in self.known:
                self.known.discard(name)
                self.health.pop(name, None)
                self.rechecked.pop(name, None)
            return None
        if name not in self.known:
            self.known.add(name)
            await self.recorder.normal(_node_ref(node), "RegisteredNode", f"Registered Node {name} in Controller")
        now = self.clock.now()
        health, grace = self._observe(node, now)
        observed = ready_status(node)
        deadline = health.probe + grace
        self._log.debug("node_health", node=name, now=now, probe=health.probe, deadline=deadline, ready=observed)
        if now >= deadline and observed != "Unknown" and now - deadline > LATE_TOLERANCE \
                and self.rechecked.get(name) != deadline and self._recheck_later(name):
            self.rechecked[name] = deadline
            return None
        if now >= deadline:
            node = await self._mark_unknown(node, now)
            if node is None:
                return None
        current = ready_status(node)
        self._update_disruption(node, now)
        await self._sync_taints(node, observed_ready=observed, now=now)
        if observed == "True" and current != "True":
            await self.recorder.normal(_node_ref(node), "NodeNotReady", f"Node {name} status is now: NodeNotReady")
            await self._mark_pods_not_ready(name, now)
        if current == "Unknown" and observed == "Unknown":
            return None  # nothing more to watch for until the kubelet (or someone) writes again
        if now >= deadline:
            return None  # written: the update event brings the Node back
        return Result(requeue_after=deadline - now)

    def _update_disruption(self, node: Mapping[str, Any], now: float) -> None:
        """Enter or leave full disruption (every Node down), judged with `node` as just written.
        Either way every Node is looked at again (its NoExecute taints go or come); leaving it,
        every kubelet gets a fresh grace period, as upstream."""
        name = str(meta_of(node).get("name") or "")
        disrupted = fully_disrupted(itertools.chain(
            (node,), (n for n in self.nodes if meta_of(n).get("name") != name)))
        if disrupted == self.disrupted:
            return
        self.disrupted = disrupted
        self._log.info("full_disruption" if disrupted else "full_disruption_over", nodes=len(self.nodes))
        if not disrupted:
            for health in self.health.values():
                health.probe = now
        queue = self.controller.queue if self.controller is not None else None
        if queue is not None:
            for other in self.nodes:
                other_name = str(meta_of(other).get("name") or "")
                if other_name != name:
                    queue.add(Request(name=other_name))

    def _recheck_later(self, name: str) -> bool:
        """Queue the Node again after a little wall time (False: not running under a queue)."""
        queue = self.controller.queue if self.controller is not None else None
        if queue is None:
            return False
        queue.add_after(Request(name=name), RECHECK_WALL_SECONDS, clock=queue.retry_clock)
        return True

    async def _mark_unknown(self, node: Mapping[str, Any], now: float) -> dict[str, Any] | None:
        """PUT the Unknown conditions (a conflict re-reads the Node and recomputes); the Node as
        written, unchanged when nothing needed writing, None when it is gone."""
        current: dict[str, Any] = caches.deep_copy(node)
        for _attempt in range(WRITE_ATTEMPTS):
            conditions = unknown_conditions(current, now)
            if conditions == status_of(current).get("conditions"):
                return current
            updated = caches.deep_copy(current)
            updated.setdefault("status", {})["conditions"] = conditions
            try:
                written = await self.client.update_status(NODES, updated, field_manager=FIELD_MANAGER)
            except errors.NotFound:
                return None
            except errors.Conflict:
                try:
                    current = await self.client.get(NODES, str(meta_of(node).get("name")))
                except errors.NotFound:
                    return None
                continue
            self._log.info("node_status_unknown", node=meta_of(node).get("name"))
            return written
        raise errors.Conflict(f"could not update the status of node {meta_of(node).get('name')}: kept conflicting")

    async def _sync_taints(self, node: Mapping[str, Any], *, observed_ready: str | None, now: float) -> None:
        current: Mapping[str, Any] = node
        for _attempt in range(WRITE_ATTEMPTS):
            taints = desired_taints(current, observed_ready=observed_ready, now=now, evicting=not self.disrupted)
            if taints is None:
                return
            updated = caches.deep_copy(current)
            updated.setdefault("spec", {})["taints"] = taints
            if not taints:
                del updated["spec"]["taints"]
            try:
                await self.client.update(NODES, updated, field_manager=FIELD_MANAGER)
            except errors.NotFound:
                return
            except errors.Conflict:
                try:
                    current = await self.client.get(NODES, str(meta_of(node).get("name")))
                except errors.NotFound:
                    return
                continue
            self._log.info("node_taints", node=meta_of(node).get("name"),
                           taints=[f"{t.get('key')}:{t.get('effect')}" for t in taints])
            return
        raise errors.Conflict(f"could not update the taints of node {meta_of(node).get('name')}: kept conflicting")

    async def _mark_pods_not_ready(self, node_name: str, now: float) -> None:
        for pod in self.pods.by_index(caches.NODE, node_name):
            await self._mark_pod_not_ready(pod, now)

    async def _mark_pod_not_ready(self, pod: Mapping[str, Any], now: float) -> None:
        status = pod_not_ready_status(pod, now)
        if status is None:
            return
        updated = caches.deep_copy(pod)
        updated["status"] = status
        try:
            await self.client.update_status(PODS, updated, field_manager=FIELD_MANAGER)
        except errors.NotFound:
            return
        self._log.debug("pod_not_ready", namespace=meta_of(pod).get("namespace"), name=meta_of(pod).get("name"))

    async def _reconcile_pod(self, ns: str, name: str) -> None:
        """upstream processPod: a pod bound to a Node that is not Ready is marked not ready."""
        pod = self.pods.get(ns, name)
        if pod is None:
            return
        node_name = str(spec_of(pod).get("nodeName") or "")
        node = self.nodes.get("", node_name) if node_name else None
        if node is None or node_name not in self.health:
            return
        if ready_status(node) not in ("True", None):
            await self._mark_pod_not_ready(pod, self.clock.now())


def _node_ref(node: Mapping[str, Any]) -> dict[str, Any]:
    """The Node as an Event's involved object (upstream's RecordNodeEvent names it by name and uid)."""
    meta = meta_of(node)
    return {"kind": "Node", "apiVersion": "v1", "metadata": {"name": meta.get("name"), "uid": meta.get("uid")}}


class NodeLifecycleController(managers.Controller):
    def on_start(self) -> None:
        reconciler = self.reconciler
        assert isinstance(reconciler, NodeLifecycle)
        reconciler.on_start()


def new(ctx: managers.ControllerContext, *, workers: int = 4,
        grace_period: float = NODE_MONITOR_GRACE_PERIOD) -> managers.Controller:
    reconciler = NodeLifecycle(client=ctx.client, informer_factory=ctx.informers, clock=ctx.clock,
                               recorder=ctx.recorder(COMPONENT), grace_period=grace_period)
    controller = NodeLifecycleController(name=NAME, reconciler=reconciler, watches=reconciler.watches(),
                                         workers=workers)
    reconciler.controller = controller
    return controller


def taint_keys(node: Mapping[str, Any]) -> Sequence[tuple[str, str]]:
    """(key, effect) of each of the Node's taints (for tests and the CLI)."""
    return [(str(t.get("key")), str(t.get("effect"))) for t in spec_of(node).get("taints") or []
            if isinstance(t, Mapping)]
