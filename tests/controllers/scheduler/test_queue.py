"""The scheduling queue, ported from upstream's `backend/queue` tests onto the virtual clock:
activeQ in PrioritySort order (priority, then queue time), the backoff durations, moving pods out
of the unschedulable pool only for events their rejecting plugins registered (queueing hints),
events during a cycle, and the flush after 5 minutes."""

from __future__ import annotations

from typing import Any

import pytest

from controllers import scheduler
from controllers.runtime import reconcile, workqueue
from controllers.scheduler.queue import SchedulingQueue
from cp import clock as clocks
from cp.scheduling import events as cluster_events
from tests.controllers.scheduler.test_scheduler_writes import REQUEST, Fake, build, world
from tests.controllers.support import settle

Key = tuple[str, str]


def _queue(clock: clocks.VirtualClock, priorities: dict[Key, int] | None = None, *,
           initial: float = 1.0, maximum: float = 10.0
           ) -> tuple[SchedulingQueue, workqueue.PriorityWorkQueue[reconcile.Request]]:
    prio = priorities or {}
    holder: list[workqueue.PriorityWorkQueue[reconcile.Request]] = []
    sq = SchedulingQueue(clock=clock, still_gated=lambda _k: False, active=lambda: holder[0] if holder else None,
                         priority=lambda key: prio.get(key, 0),
                         event_map=cluster_events.EventMap({**cluster_events.CORE_EVENTS,
                                                            "DynamicResources": cluster_events.DRA_EVENTS}),
                         initial_backoff=initial, max_backoff=maximum)
    holder.append(sq.new_active_queue(clock=clock, retry_clock=clock, name="scheduler", rate_limiter=None))
    return sq, holder[0]


def _req(name: str) -> reconcile.Request:
    return reconcile.Request(namespace="ns", name=name)


async def _drain(q: workqueue.PriorityWorkQueue[reconcile.Request]) -> list[str]:
    out = []
    while len(q):
        item = await q.get()
        q.done(item)
        out.append(item.name)
    return out


# ---------------------------------------------------------------------- activeQ order (PrioritySort)

# (pods as (name, priority, seconds after start it is queued), the order Pop hands them out)
ORDER_CASES = [
    pytest.param([("med", 100, 0), ("unschedulable", 1, 1), ("high", 1000, 2)], ["high", "med", "unschedulable"],
                 id="TestPriorityQueue_Add: higher priority first"),
    pytest.param([("a", 0, 0), ("b", 0, 1), ("c", 0, 2)], ["a", "b", "c"],
                 id="same priority: earlier timestamp first"),
    pytest.param([("late-high", 10, 5), ("early-low", -5, 0), ("mid", 0, 3), ("early-high", 10, 1)],
                 ["early-high", "late-high", "mid", "early-low"], id="priority, then time; negative priorities last"),
]


@pytest.mark.parametrize(("pods", "expected"), ORDER_CASES)
async def test_active_queue_orders_by_priority_then_time(pods: list[tuple[str, int, int]], expected: list[str]) -> None:
    clock = clocks.VirtualClock(start=1000.0)
    _sq, q = _queue(clock, {("ns", name): prio for name, prio, _t in pods})
    try:
        for name, _prio, at in sorted(pods, key=lambda p: p[2]):
            clock.set(1000.0 + at)
            q.add(_req(name))
        assert [r.name for r in q.queued()] == expected
        assert await _drain(q) == expected
    finally:
        await q.aclose()


async def test_a_failed_pod_is_queued_behind_pods_queued_before_its_failure() -> None:
    """The queue timestamp is refreshed when a pod comes back after an attempt
    (`AddUnschedulableIfNotPresent`), so an equal-priority pod queued meanwhile goes first."""
    clock = clocks.VirtualClock(start=0.0)
    sq, q = _queue(clock)
    try:
        q.add(_req("first"))
        assert await q.get() == _req("first")
        clock.advance(1.0)
        q.add(_req("second"))
        clock.advance(1.0)
        sq.record_attempt(("ns", "first"), frozenset({"NodeResourcesFit"}))
        q.done(_req("first"))
        q.add(_req("first"))
        assert await _drain(q) == ["second", "first"]
    finally:
        await q.aclose()


# ---------------------------------------------------------------------- backoff


# (podInitialBackoff, podMaxBackoff, attempts, expected backoff), calculateBackoffDuration's table
# in seconds (upstream's nanosecond cases scaled by 1e-9)
BACKOFF_CASES = [
    pytest.param(1.0, 10.0, 0, 0.0, id="no attempt: no backoff"),
    pytest.param(1.0, 10.0, 1, 1.0, id="first failure: initial"),
    pytest.param(1.0, 10.0, 2, 2.0, id="doubling"),
    pytest.param(1.0, 10.0, 3, 4.0, id="doubling twice"),
    pytest.param(1.0, 10.0, 4, 8.0, id="doubling thrice"),
    pytest.param(1.0, 10.0, 5, 10.0, id="capped at max"),
    pytest.param(1.0, 10.0, 100, 10.0, id="stays at max"),
    pytest.param(1e-9, 32e-9, 16, 32e-9, id="normal"),
    pytest.param(1e-9, 2147483647e-9, 32, 2147483647e-9, id="overflow_32bit"),
    pytest.param(1e-9, 9223372036854775807e-9, 64, 9223372036854775807e-9, id="overflow_64bit"),
]


@pytest.mark.parametrize(("initial", "maximum", "attempts", "expected"), BACKOFF_CASES)
def test_backoff_duration(initial: float, maximum: float, attempts: int, expected: float) -> None:
    sq, _q = _queue(clocks.VirtualClock(start=0.0), initial=initial, maximum=maximum)
    assert sq.backoff_duration(attempts) == pytest.approx(expected)


async def test_a_moved_pod_waits_out_its_backoff_unless_the_queue_is_empty() -> None:
    clock = clocks.VirtualClock(start=0.0)
    sq, q = _queue(clock)
    key = ("ns", "p")
    try:
        for _ in range(3):  # three failures: 4 s
            sq.record_attempt(key, frozenset({"NodeResourcesFit"}))
        sq.park(key, gated=False)
        q.add(_req("busy"))  # something else queued: no SchedulerPopFromBackoffQ
        sq.move_all("Node/Add")
        assert key in sq.backing_off and [r.name for r in q.queued()] == ["busy"]
        clock.advance(3.9)
        await settle()
        assert [r.name for r in q.queued()] == ["busy"]
        clock.advance(0.1)
        await settle()
        assert [r.name for r in q.queued()] == ["busy", "p"]
    finally:
        await q.aclose()


# ---------------------------------------------------------------------- queueing hints

# (the pod's unschedulable plugins, the event, whether it leaves the pool)
HINT_CASES = [
    pytest.param({"NodeAffinity"}, "Node/UpdateNodeLabel", True, id="NodeAffinity: a label change may help"),
    pytest.param({"NodeAffinity"}, "Node/UpdateNodeTaint", False, id="NodeAffinity: a taint change cannot"),
    pytest.param({"TaintToleration"}, "Node/UpdateNodeTaint", True, id="TaintToleration: taint change"),
    pytest.param({"TaintToleration"}, "UnscheduledPod/UpdatePodToleration", True, id="TaintToleration: own toleration"),
    pytest.param({"TaintToleration"}, "AssignedPod/Delete", False, id="TaintToleration: pod deletion cannot"),
    pytest.param({"NodeResourcesFit"}, "AssignedPod/Delete", True, id="NodeResourcesFit: freed resources"),
    pytest.param({"NodeResourcesFit"}, "Node/UpdateNodeAllocatable", True, id="NodeResourcesFit: more allocatable"),
    pytest.param({"NodeResourcesFit"}, "Node/UpdateNodeLabel", False, id="NodeResourcesFit: labels cannot"),
    pytest.param({"NodeName"}, "Node/Add", True, id="NodeName: a new node"),
    pytest.param({"NodeName"}, "Node/UpdateNodeLabel", False, id="NodeName: an update cannot"),
    pytest.param({"NodeUnschedulable"}, "Node/UpdateNodeTaint", True, id="NodeUnschedulable: uncordon"),
    pytest.param({"DynamicResources"}, "ResourceSlice/Update", True, id="DynamicResources: slices"),
    pytest.param({"DynamicResources"}, "ResourceClaim/Delete", True, id="DynamicResources: claims"),
    pytest.param({"NodeAffinity"}, "ResourceSlice/Add", False, id="NodeAffinity: slices cannot"),
    pytest.param({"NodeAffinity", "NodeResourcesFit"}, "AssignedPod/Delete", True, id="any plugin of the set"),
    pytest.param(set(), "Namespace/Update", True, id="no plugin rejected it (an error): any event"),
    pytest.param({"NodeAffinity"}, cluster_events.UNSCHEDULABLE_TIMEOUT, True, id="the 5-minute flush: always"),
    pytest.param({"NodeAffinity"}, cluster_events.FORCE_ACTIVATE, True, id="force activate: always"),
]


@pytest.mark.parametrize(("rejectors", "event", "moves"), HINT_CASES)
async def test_move_all_with_queueing_hints(rejectors: set[str], event: str, moves: bool) -> None:
    clock = clocks.VirtualClock(start=0.0)
    sq, q = _queue(clock)
    key = ("ns", "p")
    try:
        sq.record_attempt(key, frozenset(rejectors))
        sq.park(key, gated=False)
        clock.advance(60.0)  # backoff over
        sq.move_all(event)
        assert (key not in sq.unschedulable) is moves
        assert len(q) == (1 if moves else 0)
    finally:
        await q.aclose()


# (registration, incoming event, matches) as ClusterEvent.Match
MATCH_CASES = [
    ("Node/Add", "Node/Add", True),
    ("Node/Add", "Node/UpdateNodeLabel", False),
    ("Node/Update", "Node/UpdateNodeLabel", True),
    ("Node/Update", "Node/Add", False),
    ("Node/*", "Node/Delete", True),
    ("*/Add", "ResourceSlice/Add", True),
    ("Pod/Delete", "AssignedPod/Delete", True),
    ("Pod/Delete", "UnscheduledPod/Delete", True),
    ("AssignedPod/Delete", "UnscheduledPod/Delete", False),
    ("Pod/UpdatePodLabel", "AssignedPod/UpdatePodLabel", True),
    ("ResourceClaim/*", "ResourceClaim/Update", True),
    ("Node/Add", cluster_events.UNSCHEDULABLE_TIMEOUT, True),
]


@pytest.mark.parametrize(("registered", "event", "expected"), MATCH_CASES)
def test_event_match(registered: str, event: str, expected: bool) -> None:
    assert cluster_events.matches(registered, event) is expected


def test_plugin_events_come_from_the_plugin_classes() -> None:
    from cp.scheduling import framework, profiles

    class Spread(framework.Plugin):
        name = "ExampleSpread"
        points = frozenset({"Filter"})
        events = ("AssignedPod/Add", "Pod/UpdatePodLabel", "Node/Add")

    base = profiles.default_profile()
    profile = framework.Profile(scheduler_name="x", filters=[Spread()], scores=[])
    emap = profiles.event_map([base, profile])
    assert emap.worth_requeuing(frozenset({"ExampleSpread"}), "AssignedPod/Add")
    assert emap.worth_requeuing(frozenset({"ExampleSpread"}), "AssignedPod/UpdatePodLabel")
    assert not emap.worth_requeuing(frozenset({"ExampleSpread"}), "AssignedPod/Delete")
    assert emap.interested("AssignedPod/Add") and not emap.interested("Node/UpdateNodeAnnotation")


def test_node_and_pod_update_events() -> None:
    node: dict[str, Any] = {"metadata": {"name": "n", "labels": {"a": "1"}},
                            "spec": {}, "status": {"allocatable": {"cpu": "4"}}}
    relabelled = {**node, "metadata": {"name": "n", "labels": {"a": "2"}}}
    cordoned = {**node, "spec": {"unschedulable": True}}
    grown = {**node, "status": {"allocatable": {"cpu": "8"}}}
    assert cluster_events.node_update_events(node, relabelled) == ["Node/UpdateNodeLabel"]
    assert cluster_events.node_update_events(node, cordoned) == ["Node/UpdateNodeTaint"]
    assert cluster_events.node_update_events(node, grown) == ["Node/UpdateNodeAllocatable"]
    assert cluster_events.node_update_events(node, node) == []
    pod: dict[str, Any] = {"metadata": {"name": "p", "labels": {}}, "spec": {"containers": [
        {"name": "c", "resources": {"requests": {"cpu": "2"}}}], "schedulingGates": [{"name": "g"}]}}
    smaller = {**pod, "spec": {**pod["spec"], "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}
    ungated = {**pod, "spec": {**pod["spec"], "schedulingGates": []}}
    tolerating = {**pod, "spec": {**pod["spec"], "tolerations": [{"operator": "Exists"}]}}
    assert cluster_events.pod_update_events(pod, smaller, assigned=True) == ["AssignedPod/UpdatePodScaleDown"]
    assert cluster_events.pod_update_events(smaller, pod, assigned=True) == ["AssignedPod/UpdatePodOther"]
    assert cluster_events.pod_update_events(pod, ungated, assigned=False) == [
        "UnscheduledPod/UpdatePodSchedulingGatesEliminated"]
    assert cluster_events.pod_update_events(pod, tolerating, assigned=False) == ["UnscheduledPod/UpdatePodToleration"]


async def test_events_during_the_cycle_are_checked_against_the_plugins() -> None:
    """`inFlightEvents`: an event that arrives while the pod is tried counts only if one of the
    plugins that then reject it registered the event."""
    clock = clocks.VirtualClock(start=0.0)
    sq, q = _queue(clock)
    key = ("ns", "p")
    try:
        sq.begin_cycle(key)
        sq.move_all("Node/UpdateNodeLabel")
        in_flight = sq.end_cycle(key)
        sq.record_attempt(key, frozenset({"NodeName"}))
        assert in_flight == ["Node/UpdateNodeLabel"] and not sq.worth_requeuing(key, in_flight)
        sq.begin_cycle(key)
        sq.move_all("Node/Add")
        in_flight = sq.end_cycle(key)
        sq.record_attempt(key, frozenset({"NodeName"}))
        assert sq.worth_requeuing(key, in_flight)
    finally:
        await q.aclose()


# ---------------------------------------------------------------------- through the scheduler


def _cpu_world() -> list[tuple[str, dict[str, Any]]]:
    """A pod asking for more cpu than the only node has: NodeResourcesFit rejects it."""
    objects = [o for o in world() if o[0] in ("nodes", "namespaces")]
    objects.append(("pods", {"metadata": {"name": "p1", "namespace": "default"}, "spec": {
        "schedulerName": "default-scheduler",
        "containers": [{"name": "app", "resources": {"requests": {"cpu": "16"}}}]}}))
    return objects


async def test_the_cycle_collects_the_unschedulable_plugins_and_hints_use_them() -> None:
    fake = Fake(*_cpu_world())
    sched = build(fake)
    ctrl = scheduler.SchedulerController(sched, workers=1)
    queue = ctrl.new_queue(clock=fake.clock, retry_clock=fake.clock)
    assert isinstance(queue, workqueue.PriorityWorkQueue)
    ctrl.queue = queue
    key = ("default", "p1")
    try:
        await sched.reconcile(REQUEST)
        assert sched.queueing.rejectors[key] == frozenset({"NodeResourcesFit"})
        assert key in sched.queueing.unschedulable
        for event in ("ResourceSlice/Update", "Node/UpdateNodeLabel", "Namespace/Update"):
            sched.move_all(event)
            assert key in sched.queueing.unschedulable, event
        sched.move_all("Node/UpdateNodeAllocatable")
        assert key not in sched.queueing.unschedulable and len(queue) == 1
    finally:
        await queue.aclose()


async def test_an_unschedulable_pod_is_flushed_after_five_minutes() -> None:
    """`flushUnschedulablePodsLeftover`: no event helps, yet after
    podMaxInUnschedulablePodsDuration (5 min) the pod is tried again."""
    fake = Fake(*_cpu_world())
    assert isinstance(fake.clock, clocks.VirtualClock)
    sched = build(fake)
    ctrl = scheduler.SchedulerController(sched, workers=1)
    queue = ctrl.new_queue(clock=fake.clock, retry_clock=fake.clock)
    ctrl.queue = queue
    try:
        await sched.reconcile(REQUEST)
        assert sched.stats.attempts == 1 and queue.waiting == 1 and len(queue) == 0
        fake.clock.advance(299.0)
        await settle()
        assert len(queue) == 0
        fake.clock.advance(1.0)
        await settle()
        assert len(queue) == 1
        request = await queue.get()
        await sched.reconcile(request)
        queue.done(request)
        assert sched.stats.attempts == 2
    finally:
        await queue.aclose()


async def test_higher_priority_pods_are_scheduled_first() -> None:
    """Through the scheduler: the active queue hands out the pod with the higher
    `spec.priority` first although it was created last."""
    objects = [o for o in world() if o[0] in ("nodes", "namespaces")]
    for name, prio in (("low", 0), ("mid", 10), ("high", 100)):
        objects.append(("pods", {"metadata": {"name": name, "namespace": "default"}, "spec": {
            "priority": prio, "containers": [{"name": "app"}]}}))
    fake = Fake(*objects)
    sched = build(fake)
    ctrl = scheduler.SchedulerController(sched, workers=1)
    queue = ctrl.new_queue(clock=fake.clock, retry_clock=fake.clock)
    ctrl.queue = queue
    try:
        for name in ("low", "mid", "high"):
            queue.add(reconcile.Request(namespace="default", name=name))
        while len(queue):
            request = await queue.get()
            await sched.reconcile(request)
            queue.done(request)
        assert [name for name, _node in fake.bound] == ["high", "mid", "low"]
    finally:
        await queue.aclose()


async def test_a_failure_without_plugins_backs_off_and_is_not_popped_early() -> None:
    """No plugin rejected the pod (no nodes at all): straight to the backoff queue (the error
    backoff queue upstream, which SchedulerPopFromBackoffQ leaves alone), not to the pool."""
    objects = [o for o in _cpu_world() if o[0] != "nodes"]
    fake = Fake(*objects)
    assert isinstance(fake.clock, clocks.VirtualClock)
    sched = build(fake)
    ctrl = scheduler.SchedulerController(sched, workers=1)
    queue = ctrl.new_queue(clock=fake.clock, retry_clock=fake.clock)
    ctrl.queue = queue
    key = ("default", "p1")
    try:
        await sched.reconcile(REQUEST)  # (reconcile pumps the backoff queue when it ends)
        assert sched.queueing.rejectors[key] == frozenset()
        assert key not in sched.queueing.unschedulable and key not in sched.queueing.backing_off
        assert len(queue) == 0 and queue.waiting == 1
        fake.clock.advance(0.9)
        await settle()
        assert len(queue) == 0
        fake.clock.advance(0.1)
        await settle()
        assert len(queue) == 1
    finally:
        await queue.aclose()


async def test_an_update_of_the_pod_itself_moves_it_only_when_its_plugins_care() -> None:
    """`PriorityQueue.Update` with hints: a pod TaintToleration rejected stays in the pool when
    only its labels change, and leaves it when a toleration is added."""
    from controllers.runtime import manager as managers

    objects = [o for o in world() if o[0] == "namespaces"]
    objects.append(("nodes", {"metadata": {"name": "n1"}, "spec": {"taints": [
        {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "10"}}}))
    objects.append(("pods", {"metadata": {"name": "p1", "namespace": "default", "labels": {"a": "1"}},
                             "spec": {"containers": [{"name": "app"}]}}))
    fake = Fake(*objects)
    sched = build(fake)
    ctrl = scheduler.SchedulerController(sched, workers=1)
    queue = ctrl.new_queue(clock=fake.clock, retry_clock=fake.clock)
    ctrl.queue = queue
    key = ("default", "p1")
    kind = scheduler.config.PODS
    try:
        await sched.reconcile(REQUEST)
        assert sched.queueing.rejectors[key] == frozenset({"TaintToleration"})
        old = sched.pods.cache.get(*key)
        assert old is not None
        relabelled = {**old, "metadata": {**old["metadata"], "labels": {"a": "2"}}}
        sched._map_pod(managers.Change(type="update", kind=kind, obj=relabelled, old=old))
        assert key in sched.queueing.unschedulable
        tolerating = {**relabelled, "spec": {**relabelled["spec"], "tolerations": [
            {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]}}
        sched._map_pod(managers.Change(type="update", kind=kind, obj=tolerating, old=relabelled))
        assert key not in sched.queueing.unschedulable
    finally:
        await queue.aclose()
