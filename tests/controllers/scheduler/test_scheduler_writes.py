"""The scheduler's writes against a fake API client (sample-controller style): conflicts while
writing a claim are resolved by a fresh read and another try; a failed binding undoes the
reservation and every assumption; in-flight allocations and assumed pods are accounted."""

from __future__ import annotations

import copy
from typing import Any

from controllers import scheduler
from controllers.runtime import manager as managers
from controllers.runtime import reconcile
from controllers.scheduler import plan
from cp import errors
from tests.controllers.support import FakeClient, seeded_informers

CLAIMS = "resourceclaims.resource.k8s.io"


class Fake(FakeClient):
    """FakeClient plus pods/binding and strategic-merge patches (recorded, applied by hand)."""

    def __init__(self, *objects: tuple[str, dict[str, Any]]) -> None:
        super().__init__(*objects)
        self.conflicts_left = 0
        self.bind_error: errors.StatusError | None = None
        self.bound: list[tuple[str, str]] = []

    async def update(self, kind: Any, obj: Any, *, subresource: str = "", **kw: Any) -> dict[str, Any]:
        if subresource == "status" and self.conflicts_left:
            self.conflicts_left -= 1
            meta = obj["metadata"]
            current = self.stored(CLAIMS, meta["name"], meta["namespace"])
            assert current is not None
            self._bump(current)  # someone else wrote meanwhile
            raise errors.Conflict.modified(group="resource.k8s.io", plural="resourceclaims", name=meta["name"])
        return await super().update(kind, obj, subresource=subresource, **kw)

    async def patch(self, kind: Any, name: str, patch: Any, *, patch_type: str = "merge", **kw: Any) -> dict[str, Any]:
        if patch_type == "strategic":
            from controllers.runtime.client import resolve
            from tests.controllers.support import Action
            self.actions.append(Action(verb="patch", resource=resolve(kind).group_resource,
                                       namespace=kw.get("namespace", ""), name=name, body=copy.deepcopy(patch),
                                       subresource=kw.get("subresource", "")))
            return {}
        return await super().patch(kind, name, patch, patch_type=patch_type, **kw)

    async def bind(self, *, namespace: str, name: str, node: str, uid: str = "") -> None:
        if self.bind_error is not None:
            raise self.bind_error
        self.bound.append((name, node))


def world() -> list[tuple[str, dict[str, Any]]]:
    return [
        ("nodes", {"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "10"}}}),
        ("resourceslices.resource.k8s.io", {"metadata": {"name": "n1-gpu"}, "spec": {
            "driver": "gpu.example.com", "nodeName": "n1", "pool": {"name": "n1", "generation": 1,
                                                                     "resourceSliceCount": 1},
            "devices": [{"name": "gpu-0"}, {"name": "gpu-1"}]}}),
        ("deviceclasses.resource.k8s.io", {"metadata": {"name": "gpu"}, "spec": {"selectors": [
            {"cel": {"expression": 'device.driver == "gpu.example.com"'}}]}}),
        ("namespaces", {"metadata": {"name": "default"}}),
        (CLAIMS, {"metadata": {"name": "c1", "namespace": "default"}, "spec": {"devices": {"requests": [
            {"name": "gpu", "exactly": {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1}}]}}}),
        ("pods", {"metadata": {"name": "p1", "namespace": "default"}, "spec": {
            "schedulerName": "default-scheduler", "containers": [{"name": "app"}],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": "c1"}]}}),
    ]


def build(fake: Fake) -> scheduler.Scheduler:
    factory = seeded_informers(fake)
    recorder = managers.EventRecorder(fake, component=scheduler.COMPONENT, clock=fake.clock)  # type: ignore[arg-type]
    sched = scheduler.Scheduler(client=fake, informer_factory=factory, clock=fake.clock,  # type: ignore[arg-type]
                                recorder=recorder, seed=1)
    for inf in factory.informers:  # what the informers' initial sync would have delivered
        for obj in inf.cache.list():
            inf._dispatch("add", obj)
    return sched


REQUEST = reconcile.Request(namespace="default", name="p1")


async def test_claim_conflicts_are_retried_with_a_fresh_read() -> None:
    fake = Fake(*world())
    fake.conflicts_left = 2
    sched = build(fake)
    await sched.reconcile(REQUEST)
    claim = fake.stored(CLAIMS, "c1", "default")
    assert claim is not None
    assert claim["metadata"]["finalizers"] == [scheduler.FINALIZER]
    assert claim["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-0"
    assert [r["name"] for r in claim["status"]["reservedFor"]] == ["p1"]
    assert fake.bound == [("p1", "n1")]
    gets = [a for a in fake.actions if a.verb == "get" and a.resource == CLAIMS]
    assert len(gets) == 2  # one fresh read per conflict
    # Assumed until the informer shows the write: the device stays taken for the next cycle.
    assert ("gpu.example.com", "n1", "gpu-0") in sched.assume.state.allocated_devices
    assert sched.stats.scheduled == 1 and not sched.assume.in_flight


async def test_failed_binding_undoes_the_reservation_and_the_assumptions() -> None:
    fake = Fake(*world())
    fake.bind_error = errors.Conflict("pod p1 is being deleted, cannot be assigned to a host")
    sched = build(fake)
    result = await sched.reconcile(REQUEST)
    assert result is not None and result.requeue_after == scheduler.INITIAL_BACKOFF
    unreserve = [a for a in fake.actions if a.verb == "patch" and a.resource == CLAIMS]
    pod_uid = fake.stored("pods", "p1", "default")["metadata"]["uid"]  # type: ignore[index]
    claim_uid = fake.stored(CLAIMS, "c1", "default")["metadata"]["uid"]  # type: ignore[index]
    assert [a.body for a in unreserve] == [{"metadata": {"uid": claim_uid},
                                            "status": {"reservedFor": [{"$patch": "delete", "uid": pod_uid}]}}]
    assert not sched.assume.assumed and not sched.node_cache.assumed_pods and not sched.assume.in_flight
    assert sched.node_cache.usage["n1"].pods == 0  # the pod no longer counts on the node
    # The claim stays allocated in the API (its informer update would count it); here the
    # informer has not delivered it, so nothing is counted.
    assert ("gpu.example.com", "n1", "gpu-0") not in sched.assume.state.allocated_devices
    condition = [a for a in fake.actions if a.verb == "patch" and a.resource == "pods"]
    assert condition and condition[-1].body["status"]["conditions"][0]["reason"] == "SchedulerError"
    assert condition[-1].body["status"]["conditions"][0]["message"] == (
        'running Bind plugin "DefaultBinder": pod p1 is being deleted, cannot be assigned to a host')
    events = [a.body for a in fake.actions if a.resource == "events"]
    assert [e["reason"] for e in events] == ["FailedScheduling"]


async def test_two_pods_in_flight_never_get_the_same_device() -> None:
    objects = world()
    objects.append((CLAIMS, {"metadata": {"name": "c2", "namespace": "default"}, "spec": objects[4][1]["spec"]}))
    objects.append(("pods", {"metadata": {"name": "p2", "namespace": "default"}, "spec": {
        "schedulerName": "default-scheduler", "containers": [{"name": "app"}],
        "resourceClaims": [{"name": "gpu", "resourceClaimName": "c2"}]}}))
    objects.append((CLAIMS, {"metadata": {"name": "c3", "namespace": "default"}, "spec": objects[4][1]["spec"]}))
    objects.append(("pods", {"metadata": {"name": "p3", "namespace": "default"}, "spec": {
        "schedulerName": "default-scheduler", "containers": [{"name": "app"}],
        "resourceClaims": [{"name": "gpu", "resourceClaimName": "c3"}]}}))
    fake = Fake(*objects)
    sched = build(fake)
    plans = []
    for name in ("p1", "p2", "p3"):
        pod = sched.pods.cache.get("default", name)
        assert pod is not None
        plans.append(await sched.cycle.run(pod))  # no binding: everything stays in flight
    assert isinstance(plans[0], plan.Plan) and isinstance(plans[1], plan.Plan)
    devices = [p.claims[0].allocation["devices"]["results"][0]["device"] for p in plans[:2]]  # type: ignore[union-attr, index]
    assert sorted(devices) == ["gpu-0", "gpu-1"]
    assert isinstance(plans[2], plan.Unschedulable)
    assert plans[2].message.startswith("0/1 nodes are available: 1 cannot allocate all claims.")


async def test_unschedulable_pool_backoff_and_stale_timers() -> None:
    """A failed pod waits in the pool: a timer firing for it is ignored (and re-armed for the
    5-minute flush); an event moves it out, to the queue at once when nothing else is queued
    (SchedulerPopFromBackoffQ), else after its backoff."""
    from controllers.runtime import workqueue
    objects = world()
    objects[4][1]["spec"]["devices"]["requests"][0]["exactly"]["count"] = 3  # 2 devices: never fits
    fake = Fake(*objects)
    sched = build(fake)
    ctrl = scheduler.SchedulerController(sched, workers=1)
    queue: workqueue.WorkQueue[reconcile.Request] = workqueue.WorkQueue(clock=fake.clock)
    ctrl.queue = queue
    try:
        await sched.reconcile(REQUEST)
        assert sched.stats.attempts == 1 and ("default", "p1") in sched.queueing.unschedulable
        assert queue.waiting == 1  # the 5-minute flush
        await sched.reconcile(REQUEST)  # a stale timer: no attempt
        assert sched.stats.attempts == 1
        sched.move_all("ResourceSlice/Update")  # nothing else queued: straight back
        assert len(queue) == 1 and ("default", "p1") not in sched.queueing.unschedulable
        assert await queue.get() == REQUEST
        await sched.reconcile(REQUEST)
        queue.done(REQUEST)
        assert sched.stats.attempts == 2
        other = reconcile.Request(namespace="default", name="other")
        queue.add(other)  # something else queued: the pod waits for its backoff (2 s after 2 attempts)
        sched.move_all("ResourceSlice/Update")
        assert list(sched.queueing.backing_off) == [("default", "p1")] and len(queue) == 1
        assert await queue.get() == other
        queue.done(other)
        sched.queueing.pump()  # the queue is empty now: the backed-off pod goes
        assert len(queue) == 1 and not sched.queueing.backing_off
    finally:
        await queue.aclose()
