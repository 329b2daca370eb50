"""The manager's reconcile loop on a VirtualClock: the outcome rules of `reconcile` (error →
backoff 5 ms, 10 ms...; TerminalError → dropped; requeue_after → delayed; success → forgotten),
the structured log keys, one reconcile per key at a time across workers, a clean stop that
cancels a stuck reconcile after the grace period and leaves no task behind, and the EventRecorder.

Out of scope: informers and leader election (their own test modules).
"""

from __future__ import annotations

import asyncio
from typing import Any

import structlog

from controllers.runtime import client as clients
from controllers.runtime import manager as managers
from controllers.runtime import reconcile, workqueue
from cp import clock as clocks
from tests.controllers.support import START, FakeClient, cm, settle
from tests.waiting import eventually


class Script:
    """A reconciler whose behaviour per key is scripted; records every call."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.failures: dict[str, int] = {}
        self.requeue: dict[str, float] = {}
        self.terminal: set[str] = set()
        self.block: dict[str, asyncio.Event] = {}
        self.running: dict[str, int] = {}
        self.max_running: dict[str, int] = {}

    async def reconcile(self, request: reconcile.Request) -> reconcile.Result | None:
        key = request.name
        self.calls.append(key)
        self.running[key] = self.running.get(key, 0) + 1
        self.max_running[key] = max(self.max_running.get(key, 0), self.running[key])
        try:
            if key in self.block:
                await self.block[key].wait()
            if key in self.terminal:
                raise reconcile.TerminalError("spec can never work")
            if self.failures.get(key, 0) > 0:
                self.failures[key] -= 1
                raise RuntimeError("transient")
            if key in self.requeue:
                return reconcile.Result(requeue_after=self.requeue.pop(key))
            return None
        finally:
            self.running[key] -= 1


def _manager(script: Script, clock: clocks.VirtualClock, *, workers: int = 1,
             cap: structlog.testing.LogCapture | None = None,
             grace: float = 2.0) -> tuple[managers.Manager, managers.Controller]:
    fake = FakeClient(clock=clock)
    log = structlog.wrap_logger(structlog.PrintLogger(), processors=[cap]) if cap is not None else None
    # retry_clock=clock: drive the error backoff with the virtual clock too, to check it exactly.
    mgr = managers.Manager(client=fake, clock=clock, log=log, grace_seconds=grace,  # type: ignore[arg-type]
                           retry_clock=clock)
    ctl = managers.Controller(name="scripted", reconciler=script, watches=[], workers=workers)
    mgr.add(ctl)
    return mgr, ctl


async def _running(mgr: managers.Manager) -> tuple[asyncio.Event, asyncio.Task[None]]:
    stop = asyncio.Event()
    task = asyncio.ensure_future(mgr.run(stop))
    await asyncio.wait_for(mgr.leading.wait(), 5)
    return stop, task


def _req(name: str) -> reconcile.Request:
    return reconcile.Request(namespace="default", name=name)


async def test_outcomes_follow_the_precedence_rules() -> None:
    clock = clocks.VirtualClock(start=1000.0)
    script = Script()
    script.failures["flaky"] = 2
    script.terminal.add("broken")
    script.requeue["later"] = 30.0
    cap = structlog.testing.LogCapture()
    mgr, ctl = _manager(script, clock, cap=cap)
    stop, task = await _running(mgr)
    for name in ("ok", "flaky", "broken", "later"):
        ctl.enqueue(_req(name))
    await eventually(lambda: len(script.calls) == 4)
    assert sorted(script.calls) == ["broken", "flaky", "later", "ok"]

    clock.advance(0.0051)  # first retry of "flaky" after 5 ms
    await eventually(lambda: script.calls.count("flaky") == 2)
    clock.advance(0.0099)
    await settle()
    assert script.calls.count("flaky") == 2
    clock.advance(0.0002)  # second retry after 10 more ms
    await eventually(lambda: script.calls.count("flaky") == 3)
    assert ctl.queue is not None and ctl.queue.num_requeues(_req("flaky")) == 0  # success forgets

    assert script.calls.count("later") == 1
    clock.advance(30)
    await eventually(lambda: script.calls.count("later") == 2)
    clock.advance(1000)
    await settle()
    assert script.calls.count("broken") == 1 and script.calls.count("ok") == 1 and script.calls.count("later") == 2

    stop.set()
    await task
    done = [e for e in cap.entries if e["event"] == "reconcile_done"]
    by_outcome = {(e["name"], e["outcome"], e["attempt"]) for e in done}
    assert {("flaky", "error", 1), ("flaky", "error", 2), ("flaky", "success", 3), ("broken", "terminal_error", 1),
            ("later", "requeue_after", 1), ("later", "success", 1), ("ok", "success", 1)} == by_outcome
    for entry in done:
        assert {"controller", "reconcile_id", "namespace", "name", "outcome", "duration_ms", "attempt"} <= set(entry)
        assert entry["controller"] == "scripted" and entry["namespace"] == "default"
    assert len({e["reconcile_id"] for e in done}) == len(done)


async def test_one_reconcile_per_key_across_workers() -> None:
    clock = clocks.VirtualClock(start=1000.0)
    script = Script()
    gate = asyncio.Event()
    script.block["k"] = gate
    mgr, ctl = _manager(script, clock, workers=4)
    stop, task = await _running(mgr)
    ctl.enqueue(_req("k"))
    await eventually(lambda: script.calls == ["k"])
    for _ in range(5):
        ctl.enqueue(_req("k"))  # arrives while the first one runs
        ctl.enqueue(_req("other"))
        await settle()
    assert script.max_running["k"] == 1
    gate.set()
    await eventually(lambda: script.calls.count("k") == 2)
    await settle()
    assert script.calls.count("k") == 2 and script.max_running["k"] == 1
    stop.set()
    await task


async def test_stop_cancels_a_stuck_reconcile_after_grace() -> None:
    clock = clocks.VirtualClock(start=1000.0)
    script = Script()
    script.block["stuck"] = asyncio.Event()  # never set
    mgr, ctl = _manager(script, clock, workers=2, grace=0.05)
    stop, task = await _running(mgr)
    ctl.enqueue(_req("stuck"))
    await eventually(lambda: script.calls == ["stuck"])
    stop.set()
    await asyncio.wait_for(task, 5)
    assert script.running["stuck"] == 0  # its finally ran: it was cancelled
    assert ctl.queue is None and not mgr.leading.is_set()
    ctl.enqueue(_req("after-stop"))  # dropped, no error
    pending = [t.get_name() for t in asyncio.all_tasks() if t.get_name().startswith(("controller:", "workqueue:"))]
    assert pending == []


async def test_event_recorder_writes_core_v1_events() -> None:
    clock = clocks.VirtualClock(start=1_800_000_000.0)
    fake = FakeClient(clock=clock)
    obj = fake.put("configmaps", cm("thing"))
    node = fake.put("nodes", {"metadata": {"name": "n1"}})
    recorder = managers.EventRecorder(fake, component="test-controller", clock=clock,  # type: ignore[arg-type]
                                      instance="host-1")
    await recorder.warning(obj, "SomethingOdd", "it happened")
    await recorder.normal(node, "Seen", "node seen")
    first, second = (a.body for a in fake.writes)
    assert first["metadata"]["namespace"] == "default"
    assert first["metadata"]["name"].startswith("thing.") and first["metadata"]["name"] != second["metadata"]["name"]
    assert first["involvedObject"] == {"kind": "ConfigMap", "apiVersion": "v1", "name": "thing", "namespace": "default",
                                       "uid": obj["metadata"]["uid"],
                                       "resourceVersion": obj["metadata"]["resourceVersion"]}
    assert (first["type"], first["reason"], first["message"]) == ("Warning", "SomethingOdd", "it happened")
    assert first["source"] == {"component": "test-controller"}
    assert (first["reportingComponent"], first["reportingInstance"]) == ("test-controller", "host-1")
    assert first["firstTimestamp"] == first["lastTimestamp"] == "2027-01-15T08:00:00Z" and first["count"] == 1
    assert second["metadata"]["namespace"] == "default" and "namespace" not in second["involvedObject"]


async def test_event_failure_does_not_raise() -> None:
    class Failing(FakeClient):
        async def create_event(self, event: Any) -> dict[str, Any]:
            raise OSError("connection refused")

    fake = Failing()
    recorder = managers.EventRecorder(fake, component="c", clock=fake.clock)  # type: ignore[arg-type]
    await recorder.normal(cm("x"), "R", "m")


async def test_run_returns_when_stopped_before_sync() -> None:
    clock = clocks.VirtualClock(start=1000.0)
    script = Script()
    fake = FakeClient(clock=clock)
    mgr = managers.Manager(client=fake, clock=clock)  # type: ignore[arg-type]
    mgr.add(managers.Controller(name="never", reconciler=script,
                                watches=[managers.Watch(kind=clients.resolve("configmaps"))]))

    async def never_synced(*a: object, **k: object) -> bool:
        await asyncio.Event().wait()
        return True

    mgr.informers.wait_for_sync = never_synced  # type: ignore[method-assign,assignment]
    mgr.informers.start = lambda: None  # type: ignore[method-assign]
    stop = asyncio.Event()
    task = asyncio.ensure_future(mgr.run(stop))
    await settle()
    stop.set()
    await asyncio.wait_for(task, 5)
    assert mgr.terms == 0 and script.calls == []


async def test_a_controller_may_supply_its_own_queue() -> None:
    """`Controller.new_queue`: the manager runs the workers on the queue the controller makes (the
    scheduler's priority-ordered active queue) instead of a FIFO work queue."""
    clock = clocks.VirtualClock(start=START)
    script = Script()
    made: list[workqueue.WorkQueue[reconcile.Request]] = []

    class Ordered(managers.Controller):
        def new_queue(self, *, clock: clocks.Clock, retry_clock: clocks.Clock
                      ) -> workqueue.WorkQueue[reconcile.Request]:
            q: workqueue.PriorityWorkQueue[reconcile.Request] = workqueue.PriorityWorkQueue(
                clock=clock, order=lambda r: r.name, name=self.name, retry_clock=retry_clock)
            made.append(q)
            return q

    fake = FakeClient(clock=clock)
    mgr = managers.Manager(client=fake, clock=clock, retry_clock=clock)  # type: ignore[arg-type]
    ctl = Ordered(name="ordered", reconciler=script, watches=[], workers=1)
    mgr.add(ctl)
    stop, task = await _running(mgr)
    try:
        assert made and ctl.queue is made[0]
        blocker = asyncio.Event()
        script.block["a"] = blocker
        ctl.enqueue(_req("a"))
        await eventually(lambda: script.calls == ["a"], what="a running")
        for name in ("d", "b", "c"):
            ctl.enqueue(_req(name))
        blocker.set()
        await eventually(lambda: len(script.calls) == 4, what="all reconciled")
        assert script.calls == ["a", "b", "c", "d"]
    finally:
        stop.set()
        await task
