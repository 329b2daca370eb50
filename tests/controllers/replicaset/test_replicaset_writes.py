"""The ReplicaSet controller's reconcile, sample-controller style: objects pushed into informer
caches and a fake client, reconcile called directly, recorded writes compared with the expected
ones. Covers pod creation from the template (generateName, labels, controller reference),
slow-start batches stopping at the first failure (ReplicaFailure condition, FailedCreate
events), expectations blocking a second creation until the informer reports the pods,
terminating/finished pods not counting, scale down worst pods first, scale to 0, adoption and
release, status with minReadySeconds on the virtual clock, and the pod → key mapping.

Out of scope: running against a server (test_replicaset_integration.py).
"""

from __future__ import annotations

from typing import Any

from controllers import replicaset as rsc
from controllers.runtime import manager as managers
from controllers.runtime import reconcile
from cp import clock as clocks
from cp import errors
from tests.controllers.support import Action, seeded_informers
from tests.controllers.workload_support import (
    START,
    WorkloadFakeClient,
    controller_ref,
    pod,
    recorder,
    replay,
    replicaset,
)

LABELS = {"app": "web"}


def _controller(fake: WorkloadFakeClient, *, burst: int = rsc.BURST_REPLICAS) -> tuple[rsc.ReplicaSetController, Any]:
    factory = seeded_informers(fake)
    ctl = rsc.ReplicaSetController(client=fake, informer_factory=factory,  # type: ignore[arg-type]
                                   recorder=recorder(fake, rsc.COMPONENT), clock=fake.clock,
                                   burst_replicas=burst)
    return ctl, factory


def _req(name: str = "web") -> reconcile.Request:
    return reconcile.Request(namespace="default", name=name)


def _maps(ctl: rsc.ReplicaSetController) -> dict[str, Any]:
    return {"pods": ctl.map_pod, "replicasets.apps": ctl.map_replicaset}


def _stored(fake: WorkloadFakeClient, name: str = "web") -> dict[str, Any]:
    obj = fake.stored("replicasets.apps", name, "default")
    assert obj is not None
    return obj


def _pods(fake: WorkloadFakeClient) -> list[dict[str, Any]]:
    return [o for (gr, _ns, _n), o in sorted(fake.objects.items()) if gr == "pods"]


async def test_creates_pods_from_template_with_controller_ref() -> None:
    fake = WorkloadFakeClient()
    rs = fake.put("replicasets.apps", replicaset("web", 3, labels=LABELS))
    ctl, _ = _controller(fake)
    assert await ctl.reconcile(_req()) is None

    created = fake.creates("pods")
    assert len(created) == 3
    for body in created:
        assert body["metadata"] == {"generateName": "web-", "namespace": "default", "labels": LABELS,
                                    "ownerReferences": [controller_ref(rs)]}
        assert body["spec"] == rs["spec"]["template"]["spec"]
    names = sorted(p["metadata"]["name"] for p in _pods(fake))
    assert names == ["web-bbbbb", "web-bbbbc", "web-bbbbd"]
    assert sorted(e["message"] for e in fake.events("SuccessfulCreate")) == [f"Created pod: {n}" for n in names]
    assert {e["involvedObject"]["name"] for e in fake.events()} == {"web"}
    # the cache has not seen the pods yet: status still says 0, with the generation observed
    status_writes = [a for a in fake.writes if a.subresource == "status"]
    assert [a.body["status"] for a in status_writes] == [{"replicas": 0, "observedGeneration": 1}]
    assert ctl.expectations.pending("default/web") == (3, 0)


async def test_expectations_prevent_double_creation_until_pods_are_observed() -> None:
    fake = WorkloadFakeClient()
    fake.put("replicasets.apps", replicaset("web", 3, labels=LABELS))
    ctl, factory = _controller(fake)
    await ctl.reconcile(_req())
    assert len(fake.creates("pods")) == 3

    # A watch lagging behind: the key comes back but no pod ADDED has been seen.
    fake.actions.clear()
    await ctl.reconcile(_req())
    assert fake.creates("pods") == []

    # The informer delivers the pods: each ADDED lowers the expectations and enqueues the RS.
    requests = replay(fake, factory, _maps(ctl))
    assert set(requests) == {_req()}
    assert ctl.expectations.satisfied("default/web")
    fake.actions.clear()
    await ctl.reconcile(_req())
    assert fake.creates("pods") == []
    assert _stored(fake)["status"] == {"replicas": 3, "fullyLabeledReplicas": 3, "observedGeneration": 1}


async def test_slow_start_stops_at_the_first_failed_batch() -> None:
    fake = WorkloadFakeClient()
    fake.put("replicasets.apps", replicaset("web", 10, labels=LABELS))
    quota = errors.Forbidden('pods "web-x" is forbidden: exceeded quota: compute')
    fake.create_failures["pods"] = [None, quota, quota]  # batch 1 succeeds, batch 2 (two creates) fails
    ctl, _ = _controller(fake)
    try:
        await ctl.reconcile(_req())
    except errors.Forbidden:
        pass
    else:
        raise AssertionError("the create error must make the reconcile fail (and retry)")
    assert len(fake.creates("pods")) == 3  # 1 + 2, then stop: not 10
    assert len(_pods(fake)) == 1
    assert [e["message"] for e in fake.events("FailedCreate")] == [f"Error creating: {quota.message}"] * 2
    status = _stored(fake)["status"]
    (cond,) = status["conditions"]
    assert cond == {"type": "ReplicaFailure", "status": "True", "lastTransitionTime": clocks.rfc3339(START),
                    "reason": "FailedCreate", "message": quota.message}
    # only the successful create is still expected
    assert ctl.expectations.pending("default/web") == (1, 0)


async def test_failure_condition_is_removed_once_creates_succeed() -> None:
    fake = WorkloadFakeClient()
    rs = replicaset("web", 1, labels=LABELS)
    rs["status"] = {"replicas": 0, "observedGeneration": 1, "conditions": [
        {"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate", "message": "quota",
         "lastTransitionTime": "2027-01-01T00:00:00Z"}]}
    fake.put("replicasets.apps", rs)
    ctl, _ = _controller(fake)
    await ctl.reconcile(_req())
    assert "conditions" not in _stored(fake)["status"]


async def test_terminating_and_finished_pods_do_not_count() -> None:
    fake = WorkloadFakeClient()
    rs = fake.put("replicasets.apps", replicaset("web", 2, labels=LABELS))
    ref = controller_ref(rs)
    fake.put("pods", pod("web-run", labels=LABELS, owner=ref, node="n1"))
    fake.put("pods", pod("web-bye", labels=LABELS, owner=ref, node="n1", deleting=True))
    fake.put("pods", pod("web-done", labels=LABELS, owner=ref, node="n1", phase="Succeeded"))
    fake.put("pods", pod("web-fail", labels=LABELS, owner=ref, node="n1", phase="Failed"))
    ctl, _ = _controller(fake)
    await ctl.reconcile(_req())
    assert len(fake.creates("pods")) == 1
    assert _stored(fake)["status"]["replicas"] == 1


async def test_scale_down_deletes_the_worst_pods_first() -> None:
    fake = WorkloadFakeClient()
    rs = fake.put("replicasets.apps", replicaset("web", 2, labels=LABELS))
    ref = controller_ref(rs)
    old = START - 3600
    fake.put("pods", pod("ready-old", labels=LABELS, owner=ref, node="n1", ready=True, ready_since=old, created=old))
    fake.put("pods", pod("ready-new", labels=LABELS, owner=ref, node="n2", ready=True, ready_since=START - 10,
                         created=START - 20))
    fake.put("pods", pod("not-ready", labels=LABELS, owner=ref, node="n3", ready=False, created=old))
    fake.put("pods", pod("pending", labels=LABELS, owner=ref, node="n4", phase="Pending", created=old))
    fake.put("pods", pod("unscheduled", labels=LABELS, owner=ref, phase="Pending", created=old))
    ctl, _ = _controller(fake)
    await ctl.reconcile(_req())
    deletes = [a.name for a in fake.writes if a.verb == "delete"]
    assert sorted(deletes) == ["not-ready", "pending", "unscheduled"]
    assert ctl.expectations.pending("default/web") == (0, 3)
    assert sorted(e["message"] for e in fake.events("SuccessfulDelete")) == [
        "Deleted pod: not-ready", "Deleted pod: pending", "Deleted pod: unscheduled"]

    # next: one more → the one ready for the shorter time goes
    ranked = rsc.rank_pods_for_deletion([fake.objects[("pods", "default", n)] for n in ("ready-old", "ready-new")],
                                        [], START)
    assert [p["metadata"]["name"] for p in ranked] == ["ready-new", "ready-old"]


def test_deletion_rank_order() -> None:
    base = {"labels": LABELS}
    pods = [
        pod("running-ready", **base, node="a", ready=True, ready_since=START - 4000, created=START - 9000),
        pod("cost-high", **base, node="b", phase="Pending", created=START - 100),
        pod("cost-low", **base, node="b", phase="Pending", created=START - 100),
        pod("unknown", **base, node="c", phase="Unknown"),
        pod("unassigned", **base, phase="Pending"),
        pod("doubled", **base, node="d", ready=True, ready_since=START - 4000, created=START - 9000),
    ]
    pods[1]["metadata"]["annotations"] = {rsc.DELETION_COST_ANNOTATION: "10"}
    pods[2]["metadata"]["annotations"] = {rsc.DELETION_COST_ANNOTATION: "-5"}
    for i, p in enumerate(pods):
        p["metadata"]["uid"] = f"uid-{i}"
    sibling = pod("sibling", **base, node="d", ready=True)
    ranked = rsc.rank_pods_for_deletion(pods, [*pods, sibling], START)
    assert [p["metadata"]["name"] for p in ranked] == [
        "unassigned", "cost-low", "cost-high", "unknown", "doubled", "running-ready"]


async def test_scale_to_zero_deletes_every_pod() -> None:
    fake = WorkloadFakeClient()
    rs = fake.put("replicasets.apps", replicaset("web", 0, labels=LABELS))
    for i in range(3):
        fake.put("pods", pod(f"web-{i}", labels=LABELS, owner=controller_ref(rs)))
    ctl, factory = _controller(fake)
    await ctl.reconcile(_req())
    assert sorted(a.name for a in fake.writes if a.verb == "delete") == ["web-0", "web-1", "web-2"]
    assert _pods(fake) == []
    replay(fake, factory, _maps(ctl))  # DELETED events lower the deletion expectations
    assert ctl.expectations.satisfied("default/web")
    await ctl.reconcile(_req())
    assert _stored(fake)["status"] == {"replicas": 0, "observedGeneration": 1}


async def test_adopts_matching_orphans_and_releases_non_matching_pods() -> None:
    fake = WorkloadFakeClient()
    rs = fake.put("replicasets.apps", replicaset("web", 2, labels=LABELS))
    other = {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "uid-cm"}
    orphan = fake.put("pods", pod("orphan", labels=LABELS, owner=other))
    fake.put("pods", pod("someone-elses", labels=LABELS, owner={**controller_ref(rs), "uid": "uid-other-rs"}))
    stray = fake.put("pods", pod("stray", labels={"app": "other"}, owner=controller_ref(rs)))
    ctl, _ = _controller(fake)
    await ctl.reconcile(_req())
    patches = [a for a in fake.writes if a.verb == "patch"]
    assert patches == [
        Action(verb="patch", resource="pods", namespace="default", name="orphan", body={"metadata": {
            "resourceVersion": orphan["metadata"]["resourceVersion"],
            "ownerReferences": [other, controller_ref(rs)]}}),
        Action(verb="patch", resource="pods", namespace="default", name="stray", body={"metadata": {
            "resourceVersion": stray["metadata"]["resourceVersion"], "ownerReferences": None}}),
    ]
    # adoption re-reads the ReplicaSet live first (it must still exist and not be deleting)
    assert [(a.verb, a.resource, a.name) for a in fake.actions if a.verb == "get"] == [
        ("get", "replicasets.apps", "web")]
    assert len(fake.creates("pods")) == 1  # orphan adopted + 1 new = 2


async def test_no_adoption_by_a_replicaset_being_replaced() -> None:
    fake = WorkloadFakeClient()
    rs = fake.put("replicasets.apps", replicaset("web", 1, labels=LABELS))
    fake.put("pods", pod("orphan", labels=LABELS))
    ctl, _ = _controller(fake)
    fake.objects[("replicasets.apps", "default", "web")]["metadata"]["uid"] = "uid-of-a-new-rs"
    try:
        await ctl.reconcile(_req())
    except errors.Conflict as exc:
        assert "is gone" in exc.message and rs["metadata"]["uid"] in exc.message
    else:
        raise AssertionError("adoption must fail")
    assert [a for a in fake.writes if a.verb == "patch"] == []


async def test_availability_waits_for_min_ready_seconds_on_the_clock() -> None:
    fake = WorkloadFakeClient()
    rs = fake.put("replicasets.apps", replicaset("web", 2, labels=LABELS, min_ready=30))
    ref = controller_ref(rs)
    fake.put("pods", pod("a", labels=LABELS, owner=ref, node="n1", ready=True, ready_since=START - 10))
    fake.put("pods", pod("b", labels=LABELS, owner=ref, node="n1", ready=True, ready_since=START - 60))
    ctl, _ = _controller(fake)
    result = await ctl.reconcile(_req())
    assert result is not None and result.requeue_after is not None
    assert abs(result.requeue_after - (20 + rsc.AVAILABILITY_SLACK)) < 1e-6
    assert _stored(fake)["status"] == {"replicas": 2, "fullyLabeledReplicas": 2, "readyReplicas": 2,
                                       "availableReplicas": 1, "observedGeneration": 1}
    fake.clock.advance(result.requeue_after)  # type: ignore[attr-defined]
    replay(fake, ctl.informers)
    assert await ctl.reconcile(_req()) is None
    assert _stored(fake)["status"]["availableReplicas"] == 2


async def test_unchanged_status_is_not_rewritten() -> None:
    fake = WorkloadFakeClient()
    rs = replicaset("web", 0, labels=LABELS)
    rs["status"] = {"replicas": 0, "observedGeneration": 1}
    fake.put("replicasets.apps", rs)
    ctl, _ = _controller(fake)
    await ctl.reconcile(_req())
    assert fake.writes == []


async def test_deleting_replicaset_manages_no_pods() -> None:
    fake = WorkloadFakeClient()
    fake.put("replicasets.apps", replicaset("web", 3, labels=LABELS, deletionTimestamp="2027-01-01T00:00:00Z",
                                            finalizers=["foregroundDeletion"]))
    ctl, _ = _controller(fake)
    await ctl.reconcile(_req())
    assert fake.creates("pods") == []


def test_pod_events_map_to_the_owner_and_track_expectations() -> None:
    fake = WorkloadFakeClient()
    rs = fake.put("replicasets.apps", replicaset("web", 1, labels=LABELS))
    other = fake.put("replicasets.apps", replicaset("other", 1, labels={"app": "other"}))
    ctl, _ = _controller(fake)
    kind = rsc.PODS
    owned = fake.put("pods", pod("web-a", labels=LABELS, owner=controller_ref(rs)))
    orphan = fake.put("pods", pod("loose", labels={"app": "other"}))
    ctl.expectations.expect_creations("default/web", 1)
    assert ctl.map_pod(managers.Change(type="add", kind=kind, obj=owned)) == [_req()]
    assert ctl.expectations.satisfied("default/web")
    assert ctl.map_pod(managers.Change(type="add", kind=kind, obj=orphan)) == [_req("other")]
    # graceful deletion: the deletionTimestamp update counts as the deletion
    ctl.expectations.expect_deletions("default/web", ["default/web-a"])
    terminating = {**owned, "metadata": {**owned["metadata"], "deletionTimestamp": "2027-01-01T00:00:00Z",
                                         "resourceVersion": "999"}}
    assert ctl.map_pod(managers.Change(type="update", kind=kind, obj=terminating, old=owned)) == [_req()]
    assert ctl.expectations.satisfied("default/web")
    # a pod moving from one owner to another wakes both
    moved = {**owned, "metadata": {**owned["metadata"], "ownerReferences": [controller_ref(other)],
                                   "resourceVersion": "1000"}}
    assert ctl.map_pod(managers.Change(type="update", kind=kind, obj=moved, old=owned)) == [_req(), _req("other")]
    # an expired expectation no longer blocks
    ctl.expectations.expect_creations("default/other", 5)
    assert not ctl.expectations.satisfied("default/other")
    fake.clock.advance(rsc.EXPECTATIONS_TIMEOUT + 1)  # type: ignore[attr-defined]
    assert ctl.expectations.satisfied("default/other")
    # the ReplicaSet going away drops its record
    ctl.map_replicaset(managers.Change(type="delete", kind=rsc.REPLICASETS, obj=other))
    assert ctl.expectations.pending("default/other") is None


async def test_burst_limits_one_pass() -> None:
    fake = WorkloadFakeClient()
    fake.put("replicasets.apps", replicaset("web", 10, labels=LABELS))
    ctl, _ = _controller(fake, burst=4)
    await ctl.reconcile(_req())
    assert len(fake.creates("pods")) == 4


async def test_slow_start_batches_are_1_2_4() -> None:
    sizes: list[int] = []
    in_flight = 0

    async def create() -> None:
        nonlocal in_flight
        in_flight += 1
        sizes.append(in_flight)
        await clocks.VirtualClock(start=0).sleep(0)
        in_flight -= 1

    ok, err = await rsc.slow_start_batch(10, 1, create)
    assert (ok, err) == (10, None)
    assert max(sizes) == 4  # batches 1, 2, 4, 3
