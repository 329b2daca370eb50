"""The Deployment controller's reconcile, sample-controller style (fake client, recorded
writes), plus its arithmetic: the pod-template-hash, maxSurge/maxUnavailable rounding, the new
ReplicaSet (name, hash label in selector/template/labels, revision and replica annotations,
ScalingReplicaSet event, NewReplicaSetCreated), rolling steps within maxSurge/maxUnavailable,
Recreate waiting for old pods, proportional scaling during a rollout, paused Deployments,
ProgressDeadlineExceeded on the virtual clock (and the requeue for it), hash collisions,
revisionHistoryLimit cleanup, adoption, and the event → key mapping.

Out of scope: running against a server (test_deployment_integration.py).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from controllers import deployment as deploy
from controllers import replicaset as rsc
from controllers.runtime import manager as managers
from controllers.runtime import reconcile
from cp import clock as clocks
from cp import errors
from tests.controllers.support import seeded_informers
from tests.controllers.workload_support import (
    START,
    WorkloadFakeClient,
    controller_ref,
    deployment,
    pod,
    pod_template,
    recorder,
    replay,
    rollout_status,
)

LABELS = {"app": "web"}
NOW = clocks.rfc3339(START)


def _controller(fake: WorkloadFakeClient) -> deploy.DeploymentController:
    return deploy.DeploymentController(client=fake, informer_factory=seeded_informers(fake),  # type: ignore[arg-type]
                                       recorder=recorder(fake, deploy.COMPONENT), clock=fake.clock)


def _req(name: str = "web") -> reconcile.Request:
    return reconcile.Request(namespace="default", name=name)


def _d(fake: WorkloadFakeClient, name: str = "web") -> dict[str, Any]:
    obj = fake.stored("deployments.apps", name, "default")
    assert obj is not None
    return obj


def _rss(fake: WorkloadFakeClient) -> dict[str, dict[str, Any]]:
    return {n: o for (gr, _ns, n), o in sorted(fake.objects.items()) if gr == "replicasets.apps"}


def _cond(obj: dict[str, Any], type_: str) -> dict[str, Any] | None:
    return next((c for c in obj["status"].get("conditions") or [] if c["type"] == type_), None)


def _owned_rs(d: dict[str, Any], name: str, replicas: int, template: dict[str, Any], *, revision: int,
              available: int | None = None, created: float = START - 3600, desired: int | None = None,
              max_replicas: int | None = None) -> dict[str, Any]:
    pod_hash = name.rsplit("-", 1)[1]
    template = copy.deepcopy(template)
    template["metadata"]["labels"] = {**template["metadata"]["labels"], deploy.HASH_LABEL: pod_hash}
    annotations = {deploy.REVISION: str(revision)}
    if desired is not None:
        annotations[deploy.DESIRED_REPLICAS] = str(desired)
    if max_replicas is not None:
        annotations[deploy.MAX_REPLICAS] = str(max_replicas)
    avail = replicas if available is None else available
    return {
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": "default", "labels": dict(template["metadata"]["labels"]),
                     "annotations": annotations, "ownerReferences": [controller_ref(d)],
                     "creationTimestamp": clocks.rfc3339(created), "generation": 1},
        "spec": {"replicas": replicas, "minReadySeconds": 0,
                 "selector": {"matchLabels": {**LABELS, deploy.HASH_LABEL: pod_hash}}, "template": template},
        "status": {"replicas": replicas, "readyReplicas": avail, "availableReplicas": avail, "observedGeneration": 1},
    }


# ---------------------------------------------------------------------- arithmetic


def test_hash_is_fnv32a_safe_encoded_and_depends_on_collision_count() -> None:
    assert deploy.fnv32a(b"") == 0x811C9DC5
    assert deploy.fnv32a(b"a") == 0xE40C292C  # FNV-1a test vector
    assert deploy.safe_encode("0123456789") == "456789bcdf"  # ord % 27 into the alphabet
    template = pod_template(LABELS)
    h = deploy.compute_hash(template)
    assert h == deploy.compute_hash(copy.deepcopy(template))
    assert set(h) <= set(deploy.SAFE_ALPHABET) and 1 <= len(h) <= 10
    assert deploy.compute_hash(template, 1) != h
    assert deploy.compute_hash(template, 0) != h  # a present zero count still changes the bytes hashed
    other = pod_template(LABELS, nodeName="n1")
    assert deploy.compute_hash(other) != h
    # key order does not matter (canonical JSON)
    reordered = {"spec": template["spec"], "metadata": template["metadata"]}
    assert deploy.compute_hash(reordered) == h


@pytest.mark.parametrize(("surge", "unavailable", "replicas", "expected"), [
    ("25%", "25%", 10, (3, 2)),  # surge rounds up, unavailable down
    ("25%", "25%", 3, (1, 0)),
    ("0%", "1%", 2, (0, 1)),  # both resolve to 0 → unavailable 1
    (0, 0, 5, (0, 1)),
    (2, "50%", 5, (2, 2)),
    ("100%", "0%", 1, (1, 0)),
])
def test_fenceposts(surge: Any, unavailable: Any, replicas: int, expected: tuple[int, int]) -> None:
    assert deploy.resolve_fenceposts(surge, unavailable, replicas) == expected


def test_max_unavailable_is_capped_and_zero_for_recreate() -> None:
    assert deploy.max_unavailable(deployment("web", 2, max_unavailable="300%")) == 2
    assert deploy.max_unavailable(deployment("web", 0)) == 0
    recreate = deployment("web", 4, strategy={"type": "Recreate"})
    assert deploy.max_unavailable(recreate) == 0 and deploy.max_surge(recreate) == 0


def test_equal_ignore_hash() -> None:
    a = pod_template(LABELS)
    b = copy.deepcopy(a)
    b["metadata"]["labels"][deploy.HASH_LABEL] = "abc"
    b["metadata"]["annotations"] = {}
    assert deploy.equal_ignore_hash(a, b)
    b["spec"]["containers"][0]["image"] = "nginx"
    assert not deploy.equal_ignore_hash(a, b)


# ---------------------------------------------------------------------- first rollout


async def test_new_deployment_creates_its_replicaset() -> None:
    fake = WorkloadFakeClient()
    d = fake.put("deployments.apps", deployment("web", 3, labels=LABELS))
    ctl = _controller(fake)
    await ctl.reconcile(_req())

    pod_hash = deploy.compute_hash(d["spec"]["template"])
    (body,) = fake.creates("replicasets.apps")
    name = f"web-{pod_hash}"
    hashed = {**LABELS, "pod-template-hash": pod_hash}
    assert body["metadata"] == {
        "name": name, "namespace": "default", "labels": hashed,
        "ownerReferences": [controller_ref(d)],
        "annotations": {deploy.REVISION: "1", deploy.DESIRED_REPLICAS: "3", deploy.MAX_REPLICAS: "4"}}
    assert body["spec"]["replicas"] == 3
    assert body["spec"]["selector"] == {"matchLabels": hashed}
    assert body["spec"]["template"]["metadata"]["labels"] == hashed
    assert body["spec"]["template"]["spec"] == d["spec"]["template"]["spec"]
    (event,) = fake.events("ScalingReplicaSet")
    assert event["message"] == f"Scaled up replica set {name} from 0 to 3"
    assert event["involvedObject"]["kind"] == "Deployment" and event["type"] == "Normal"
    stored = _d(fake)
    assert stored["metadata"]["annotations"] == {deploy.REVISION: "1"}
    assert _cond(stored, "Progressing") == {
        "type": "Progressing", "status": "True", "lastUpdateTime": NOW, "lastTransitionTime": NOW,
        "reason": "NewReplicaSetCreated", "message": f'Created new replica set "{name}"'}
    assert _cond(stored, "Available") == {
        "type": "Available", "status": "False", "lastUpdateTime": NOW, "lastTransitionTime": NOW,
        "reason": "MinimumReplicasUnavailable", "message": "Deployment does not have minimum availability."}
    assert stored["status"]["observedGeneration"] == 1
    assert stored["status"]["unavailableReplicas"] == 3
    assert rollout_status(stored) == (
        'Waiting for deployment "web" rollout to finish: 0 out of 3 new replicas have been updated...', False)


async def test_complete_rollout_reports_new_replicaset_available() -> None:
    fake = WorkloadFakeClient()
    d = fake.put("deployments.apps", deployment("web", 3, labels=LABELS))
    pod_hash = deploy.compute_hash(d["spec"]["template"])
    rs = _owned_rs(d, f"web-{pod_hash}", 3, d["spec"]["template"], revision=1, desired=3, max_replicas=4)
    fake.put("replicasets.apps", rs)
    ctl = _controller(fake)
    assert await ctl.reconcile(_req()) is None
    stored = _d(fake)
    assert {k: v for k, v in stored["status"].items() if k != "conditions"} == {
        "observedGeneration": 1, "replicas": 3, "updatedReplicas": 3, "readyReplicas": 3, "availableReplicas": 3}
    assert _cond(stored, "Progressing")["reason"] == "NewReplicaSetAvailable"  # type: ignore[index]
    assert _cond(stored, "Progressing")["message"] == f'ReplicaSet "web-{pod_hash}" has successfully progressed.'  # type: ignore[index]
    assert _cond(stored, "Available")["reason"] == "MinimumReplicasAvailable"  # type: ignore[index]
    assert rollout_status(stored) == ('deployment "web" successfully rolled out', True)
    # steady state: nothing more to write
    replay(fake, ctl.informers)
    fake.actions.clear()
    assert await ctl.reconcile(_req()) is None
    assert fake.writes == []


# ---------------------------------------------------------------------- rolling update


async def test_rolling_update_surges_then_scales_old_down_when_new_is_available() -> None:
    fake = WorkloadFakeClient()
    d = deployment("web", 3, labels=LABELS, max_surge=1, max_unavailable=0)
    old_template = copy.deepcopy(d["spec"]["template"])
    d["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:2"
    d["metadata"]["generation"] = 2
    d = fake.put("deployments.apps", d)
    old_hash = deploy.compute_hash(old_template)
    fake.put("replicasets.apps", _owned_rs(d, f"web-{old_hash}", 3, old_template, revision=1, desired=3,
                                           max_replicas=4))
    ctl = _controller(fake)
    await ctl.reconcile(_req())
    new_name = f"web-{deploy.compute_hash(d['spec']['template'])}"
    (body,) = fake.creates("replicasets.apps")
    assert body["metadata"]["name"] == new_name and body["spec"]["replicas"] == 1  # 3 + surge 1 - 3
    assert body["metadata"]["annotations"][deploy.REVISION] == "2"
    rss = _rss(fake)
    assert rss[f"web-{old_hash}"]["spec"]["replicas"] == 3  # maxUnavailable 0: nothing goes before new is up

    # the new pod is not available yet: the old ReplicaSet must stay at 3
    replay(fake, ctl.informers)
    fake.actions.clear()
    await ctl.reconcile(_req())
    assert [a for a in fake.non_event_writes() if a.resource == "replicasets.apps"] == []

    # new pod available → old scaled to 2, and the total never exceeds 4 nor drops below 3 available
    fake.objects[("replicasets.apps", "default", new_name)]["status"] = {
        "replicas": 1, "readyReplicas": 1, "availableReplicas": 1, "observedGeneration": 1}
    replay(fake, ctl.informers)
    fake.actions.clear()
    await ctl.reconcile(_req())
    rss = _rss(fake)
    assert rss[f"web-{old_hash}"]["spec"]["replicas"] == 2
    assert [e["message"] for e in fake.events("ScalingReplicaSet")] == [
        f"Scaled down replica set web-{old_hash} from 3 to 2"]
    stored = _d(fake)
    assert _cond(stored, "Progressing")["reason"] == "ReplicaSetUpdated"  # type: ignore[index]
    assert _cond(stored, "Progressing")["message"] == f'ReplicaSet "{new_name}" is progressing.'  # type: ignore[index]

    # next pass scales the new one up by the freed surge
    replay(fake, ctl.informers)
    fake.actions.clear()
    await ctl.reconcile(_req())
    assert _rss(fake)[new_name]["spec"]["replicas"] == 2
    total = sum(rs["spec"]["replicas"] for rs in _rss(fake).values())
    assert total == 4


async def test_scaled_down_old_replicasets_with_unavailable_pods_first() -> None:
    fake = WorkloadFakeClient()
    d = deployment("web", 4, labels=LABELS, max_surge=0, max_unavailable=1)
    old_t = copy.deepcopy(d["spec"]["template"])
    d["spec"]["template"]["spec"]["containers"][0]["image"] = "v2"
    d = fake.put("deployments.apps", d)
    new_name = f"web-{deploy.compute_hash(d['spec']['template'])}"
    fake.put("replicasets.apps", _owned_rs(d, f"web-{deploy.compute_hash(old_t)}", 4, old_t, revision=1,
                                           available=2, desired=4, max_replicas=4))
    fake.put("replicasets.apps", _owned_rs(d, new_name, 0, d["spec"]["template"], revision=2, desired=4,
                                           max_replicas=4, created=START - 60))
    ctl = _controller(fake)
    await ctl.reconcile(_req())
    # maxScaledDown = 4 - 3 - 0 = 1: one unhealthy old replica is cleaned up first
    old = _rss(fake)[f"web-{deploy.compute_hash(old_t)}"]
    assert old["spec"]["replicas"] == 3


async def test_recreate_scales_old_to_zero_and_waits_for_old_pods() -> None:
    fake = WorkloadFakeClient()
    d = deployment("web", 2, labels=LABELS, strategy={"type": "Recreate"})
    old_t = copy.deepcopy(d["spec"]["template"])
    d["spec"]["template"]["spec"]["containers"][0]["image"] = "v2"
    d = fake.put("deployments.apps", d)
    old_name = f"web-{deploy.compute_hash(old_t)}"
    old_rs = fake.put("replicasets.apps", _owned_rs(d, old_name, 2, old_t, revision=1, desired=2, max_replicas=2))
    for i in range(2):
        fake.put("pods", pod(f"old-{i}", labels={**LABELS, deploy.HASH_LABEL: old_name[4:]},
                             owner=controller_ref(old_rs), node="n1"))
    ctl = _controller(fake)
    await ctl.reconcile(_req())
    assert _rss(fake)[old_name]["spec"]["replicas"] == 0
    assert fake.creates("replicasets.apps") == []

    # the old ReplicaSet reports 0 but a pod is still terminating: still no new ReplicaSet
    fake.objects[("replicasets.apps", "default", old_name)]["status"] = {"replicas": 0, "observedGeneration": 2}
    del fake.objects[("pods", "default", "old-0")]
    fake.objects[("pods", "default", "old-1")]["metadata"]["deletionTimestamp"] = NOW
    replay(fake, ctl.informers)
    await ctl.reconcile(_req())
    assert fake.creates("replicasets.apps") == []

    # the last pod is gone (its deletion enqueues the Deployment) → the new ReplicaSet at full size
    gone = fake.objects.pop(("pods", "default", "old-1"))
    assert ctl.map_pod(managers.Change(type="delete", kind=rsc.PODS, obj=gone)) == [_req()]
    replay(fake, ctl.informers)
    await ctl.reconcile(_req())
    (body,) = fake.creates("replicasets.apps")
    assert body["spec"]["replicas"] == 2
    assert body["metadata"]["annotations"][deploy.MAX_REPLICAS] == "2"


# ---------------------------------------------------------------------- scaling


@pytest.mark.parametrize(("old_size", "new_size", "replicas", "expected"), [
    (3, 2, 10, (6, 4)),  # upstream's "proportional scaling: 5 -> 10"
    (6, 4, 5, (3, 2)),  # 10 -> 5
    (3, 2, 0, (0, 0)),  # scale to zero
])
async def test_proportional_scaling_during_a_rollout(old_size: int, new_size: int, replicas: int,
                                                     expected: tuple[int, int]) -> None:
    fake = WorkloadFakeClient()
    before = old_size + new_size
    d = deployment("web", replicas, labels=LABELS, max_surge=0, max_unavailable=1)
    old_t = copy.deepcopy(d["spec"]["template"])
    d["spec"]["template"]["spec"]["containers"][0]["image"] = "v2"
    d["status"] = {"replicas": before}
    d = fake.put("deployments.apps", d)
    old_name = f"web-{deploy.compute_hash(old_t)}"
    new_name = f"web-{deploy.compute_hash(d['spec']['template'])}"
    fake.put("replicasets.apps", _owned_rs(d, old_name, old_size, old_t, revision=1, desired=before,
                                           max_replicas=before))
    fake.put("replicasets.apps", _owned_rs(d, new_name, new_size, d["spec"]["template"], revision=2,
                                           desired=before, max_replicas=before, available=0, created=START - 60))
    ctl = _controller(fake)
    await ctl.reconcile(_req())
    rss = _rss(fake)
    assert (rss[old_name]["spec"]["replicas"], rss[new_name]["spec"]["replicas"]) == expected
    for rs in rss.values():
        assert rs["metadata"]["annotations"][deploy.DESIRED_REPLICAS] == str(replicas)
        assert rs["metadata"]["annotations"][deploy.MAX_REPLICAS] == str(replicas)


async def test_scaling_a_settled_deployment_scales_its_only_replicaset() -> None:
    fake = WorkloadFakeClient()
    d = fake.put("deployments.apps", deployment("web", 5, labels=LABELS))
    name = f"web-{deploy.compute_hash(d['spec']['template'])}"
    fake.put("replicasets.apps", _owned_rs(d, name, 3, d["spec"]["template"], revision=1, desired=3,
                                           max_replicas=4))
    ctl = _controller(fake)
    await ctl.reconcile(_req())
    rs = _rss(fake)[name]
    assert rs["spec"]["replicas"] == 5
    assert rs["metadata"]["annotations"][deploy.DESIRED_REPLICAS] == "5"
    assert rs["metadata"]["annotations"][deploy.MAX_REPLICAS] == "7"  # 5 + ceil(25% of 5)
    assert [e["message"] for e in fake.events("ScalingReplicaSet")] == [
        f"Scaled up replica set {name} from 3 to 5"]


# ---------------------------------------------------------------------- paused, deadline, collisions


async def test_paused_deployment_gets_paused_condition_and_no_new_replicaset() -> None:
    fake = WorkloadFakeClient()
    fake.put("deployments.apps", deployment("web", 2, labels=LABELS, paused=True))
    ctl = _controller(fake)
    await ctl.reconcile(_req())
    assert fake.creates("replicasets.apps") == []
    assert _cond(_d(fake), "Progressing") == {
        "type": "Progressing", "status": "Unknown", "lastUpdateTime": NOW, "lastTransitionTime": NOW,
        "reason": "DeploymentPaused", "message": "Deployment is paused"}
    # resuming
    fake.objects[("deployments.apps", "default", "web")]["spec"].pop("paused")
    replay(fake, ctl.informers)
    await ctl.reconcile(_req())
    (body,) = fake.creates("replicasets.apps")
    assert body["spec"]["replicas"] == 2


async def test_progress_deadline_exceeded_on_the_clock() -> None:
    fake = WorkloadFakeClient()
    d = fake.put("deployments.apps", deployment("web", 2, labels=LABELS, deadline=60))
    ctl = _controller(fake)
    await ctl.reconcile(_req())  # creates the RS; Progressing NewReplicaSetCreated
    replay(fake, ctl.informers)
    result = await ctl.reconcile(_req())
    # nothing changed, the rollout is not complete → requeue when the deadline passes
    assert result is not None and result.requeue_after == pytest.approx(60 + deploy.DEADLINE_SLACK)
    fake.clock.advance(61)  # type: ignore[attr-defined]
    assert await ctl.reconcile(_req()) is None
    cond = _cond(_d(fake), "Progressing")
    name = f"web-{deploy.compute_hash(d['spec']['template'])}"
    assert cond == {"type": "Progressing", "status": "False", "lastUpdateTime": clocks.rfc3339(START + 61),
                    "lastTransitionTime": clocks.rfc3339(START + 61), "reason": "ProgressDeadlineExceeded",
                    "message": f'ReplicaSet "{name}" has timed out progressing.'}
    with pytest.raises(AssertionError, match="exceeded its progress deadline"):
        rollout_status(_d(fake))


async def test_hash_collision_bumps_collision_count() -> None:
    fake = WorkloadFakeClient()
    d = fake.put("deployments.apps", deployment("web", 1, labels=LABELS))
    pod_hash = deploy.compute_hash(d["spec"]["template"])
    squatter = _owned_rs(d, f"web-{pod_hash}", 0, pod_template({"app": "something-else"}), revision=1)
    squatter["metadata"]["ownerReferences"] = []
    squatter["spec"]["selector"] = {"matchLabels": {"app": "something-else"}}
    squatter["metadata"]["labels"] = {"app": "something-else"}
    fake.put("replicasets.apps", squatter)
    ctl = _controller(fake)
    with pytest.raises(errors.AlreadyExists):
        await ctl.reconcile(_req())
    assert _d(fake)["status"]["collisionCount"] == 1
    replay(fake, ctl.informers)
    await ctl.reconcile(_req())
    created = fake.creates("replicasets.apps")[-1]
    assert created["metadata"]["name"] == f"web-{deploy.compute_hash(d['spec']['template'], 1)}"


async def test_revision_history_limit_cleans_oldest_empty_replicasets() -> None:
    fake = WorkloadFakeClient()
    d = fake.put("deployments.apps", deployment("web", 1, labels=LABELS, history=1))
    t = d["spec"]["template"]
    fake.put("replicasets.apps", _owned_rs(d, f"web-{deploy.compute_hash(t)}", 1, t, revision=4, desired=1,
                                           max_replicas=2))
    for rev in (1, 2, 3):
        old_t = pod_template(LABELS, hostname=f"h{rev}")
        fake.put("replicasets.apps", _owned_rs(d, f"web-old{rev}", 0, old_t, revision=rev))
    ctl = _controller(fake)
    await ctl.reconcile(_req())
    assert [a for a in fake.writes if a.verb == "delete"] == []  # only once the rollout is complete
    replay(fake, ctl.informers)
    await ctl.reconcile(_req())
    deleted = [a.name for a in fake.writes if a.verb == "delete"]
    assert deleted == ["web-old1", "web-old2"]


async def test_adopts_orphan_replicaset_matching_the_selector() -> None:
    fake = WorkloadFakeClient()
    d = fake.put("deployments.apps", deployment("web", 1, labels=LABELS))
    t = copy.deepcopy(d["spec"]["template"])
    orphan = _owned_rs(d, f"web-{deploy.compute_hash(t)}", 1, t, revision=1, desired=1, max_replicas=2)
    orphan["metadata"].pop("ownerReferences")
    orphan = fake.put("replicasets.apps", orphan)
    ctl = _controller(fake)
    await ctl.reconcile(_req())
    (patch,) = [a for a in fake.writes if a.verb == "patch" and a.resource == "replicasets.apps"]
    assert patch.body == {"metadata": {"resourceVersion": orphan["metadata"]["resourceVersion"],
                                       "ownerReferences": [controller_ref(d)]}}
    assert fake.creates("replicasets.apps") == []


async def test_selecting_everything_is_refused() -> None:
    fake = WorkloadFakeClient()
    d = deployment("web", 1, labels=LABELS)
    d["spec"]["selector"] = {}
    fake.put("deployments.apps", d)
    ctl = _controller(fake)
    await ctl.reconcile(_req())
    (event,) = fake.events()
    assert (event["type"], event["reason"]) == ("Warning", "SelectingAll")
    assert _d(fake)["status"] == {"observedGeneration": 1}
    assert fake.creates("replicasets.apps") == []


def test_replicaset_events_map_to_the_deployment() -> None:
    fake = WorkloadFakeClient()
    d = fake.put("deployments.apps", deployment("web", 1, labels=LABELS))
    fake.put("deployments.apps", deployment("api", 1, labels={"app": "api"}))
    ctl = _controller(fake)
    t = d["spec"]["template"]
    owned = _owned_rs(d, "web-abc", 1, t, revision=1)
    orphan = {**owned, "metadata": {**owned["metadata"], "name": "loose", "ownerReferences": [],
                                    "labels": {"app": "api"}}}
    kind = rsc.REPLICASETS
    assert ctl.map_replicaset(managers.Change(type="add", kind=kind, obj=owned)) == [_req()]
    assert ctl.map_replicaset(managers.Change(type="add", kind=kind, obj=orphan)) == [_req("api")]
    assert ctl.map_replicaset(managers.Change(type="delete", kind=kind, obj=owned)) == [_req()]
    stale = {**owned, "metadata": {**owned["metadata"], "ownerReferences": [{**controller_ref(d), "uid": "x"}]}}
    assert ctl.map_replicaset(managers.Change(type="add", kind=kind, obj=stale)) == []
