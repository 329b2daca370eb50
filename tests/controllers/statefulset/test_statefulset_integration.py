"""The StatefulSet controller with the scheduler, the garbage collector and the simulated fleet
(real time, in-process sandbox): OrderedReady creation in ordinal order with stable names, hostname
and subdomain, claims from volumeClaimTemplates; scale down from the highest ordinal with the claim
retention policy (owner references, garbage-collected claims); a rolling update held by a partition
and then completed (currentRevision = updateRevision); Parallel management with `ordinals.start`;
OnDelete.

Claims are not bound: nothing in this sandbox requires a bound claim before a pod runs (no volume
binding in the scheduler, no volume checks in the fleet kubelet).

Out of scope: the pure rules (test_statefulset_rules.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from cp import clock as clocks
from cp import testing

FLEET = {"apiVersion": "sim.cplane.dev/v1alpha1", "kind": "Fleet", "metadata": {"name": "sts"},
         "nodePools": [{"name": "node", "count": 2}]}
CONTROLLERS = ["garbage-collector", "scheduler", "statefulset"]


def _sts(name: str = "web", *, replicas: int = 3, claims: bool = True, image: str = "web:1",
         **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name, "namespace": "default"},
        "spec": {"replicas": replicas, "serviceName": name, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"terminationGracePeriodSeconds": 0,
                                       "containers": [{"name": "web", "image": image}]}},
                 **spec}}
    if claims:
        body["spec"]["volumeClaimTemplates"] = [{"metadata": {"name": "data", "labels": {"tier": "db"}},
                                                 "spec": {"accessModes": ["ReadWriteOnce"],
                                                          "resources": {"requests": {"storage": "1Gi"}}}}]
    return body


async def _pods(sb: testing.Sandbox, app: str = "web") -> dict[str, dict[str, Any]]:
    return {p["metadata"]["name"]: p for p in (await sb.client.list("pods", namespace="default")).items
            if p["metadata"].get("labels", {}).get("app") == app and not p["metadata"].get("deletionTimestamp")}


async def _claims(sb: testing.Sandbox) -> dict[str, dict[str, Any]]:
    return {c["metadata"]["name"]: c
            for c in (await sb.client.list("persistentvolumeclaims", namespace="default")).items
            if not c["metadata"].get("deletionTimestamp")}


def _ready(pod: dict[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


async def _settled(sb: testing.Sandbox, name: str = "web", *, updated: bool = True) -> dict[str, Any] | None:
    sts = await sb.client.get("statefulsets.apps", name, namespace="default")
    st = sts.get("status") or {}
    want = sts["spec"]["replicas"]
    pods = await _pods(sb, name)
    ok = (st.get("observedGeneration") == sts["metadata"]["generation"] and st.get("replicas", 0) == want
          and st.get("readyReplicas", 0) == want and st.get("availableReplicas", 0) == want
          and len(pods) == want and all(_ready(p) for p in pods.values()))
    if updated:
        ok = ok and st.get("updatedReplicas", 0) == want and st.get("currentRevision") == st.get("updateRevision")
    return sts if ok else None


@pytest.mark.cplane(controllers=CONTROLLERS, fleet=FLEET)
async def test_ordered_ready_with_claims(cplane_sandbox: testing.Sandbox) -> None:
    sb = cplane_sandbox
    created = await sb.client.create("statefulsets.apps", _sts())
    sts = await sb.wait_for(lambda: _settled(sb), timeout=30)
    pods = await _pods(sb)
    assert sorted(pods) == ["web-0", "web-1", "web-2"]
    for ordinal in range(3):
        pod = pods[f"web-{ordinal}"]
        assert pod["spec"]["hostname"] == f"web-{ordinal}" and pod["spec"]["subdomain"] == "web"
        labels = pod["metadata"]["labels"]
        assert labels["statefulset.kubernetes.io/pod-name"] == f"web-{ordinal}"
        assert labels["apps.kubernetes.io/pod-index"] == str(ordinal)
        assert labels["controller-revision-hash"] == sts["status"]["updateRevision"]
        assert pod["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"]
        assert {"name": "data", "persistentVolumeClaim": {"claimName": f"data-web-{ordinal}"}} in pod["spec"]["volumes"]
    # In order: each pod was created only once its predecessor was Ready.
    for a, b in (("web-0", "web-1"), ("web-1", "web-2")):
        ready_at = next(c["lastTransitionTime"] for c in pods[a]["status"]["conditions"] if c["type"] == "Ready")
        assert clocks.parse_time(ready_at) <= clocks.parse_time(pods[b]["metadata"]["creationTimestamp"])
    events = [e["message"] for e in sorted((await sb.client.list("events", namespace="default")).items,
                                            key=lambda e: e["metadata"]["creationTimestamp"])
              if e["reason"] == "SuccessfulCreate" and e["involvedObject"]["name"] == "web"]
    assert [m for m in events if m.startswith("create Pod")] == [
        f"create Pod web-{i} in StatefulSet web successful" for i in range(3)]
    assert "create Claim data-web-0 Pod web-0 in StatefulSet web success" in events
    claims = await _claims(sb)
    assert sorted(claims) == ["data-web-0", "data-web-1", "data-web-2"]
    assert claims["data-web-0"]["metadata"]["labels"] == {"tier": "db", "app": "web"}
    assert "ownerReferences" not in claims["data-web-0"]["metadata"]  # Retain / Retain
    status = sts["status"]
    assert status["currentRevision"].startswith("web-") and status["currentReplicas"] == 3
    assert status["collisionCount"] == 0  # written as upstream does (a pointer to 0)
    revisions = (await sb.client.list("controllerrevisions.apps", namespace="default")).items
    assert [r["metadata"]["name"] for r in revisions] == [status["currentRevision"]]


@pytest.mark.cplane(controllers=CONTROLLERS, fleet=FLEET)
async def test_scale_down_with_retention_policy(cplane_sandbox: testing.Sandbox) -> None:
    sb = cplane_sandbox
    policy = {"whenDeleted": "Delete", "whenScaled": "Delete"}
    sts = await sb.client.create("statefulsets.apps", _sts(persistentVolumeClaimRetentionPolicy=policy))
    await sb.wait_for(lambda: _settled(sb), timeout=30)
    claims = await _claims(sb)
    assert all(c["metadata"]["ownerReferences"] == [
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": sts["metadata"]["uid"],
         "controller": True, "blockOwnerDeletion": True}] for c in claims.values())

    await sb.client.patch("statefulsets.apps", "web", {"spec": {"replicas": 1}}, namespace="default",
                          subresource="scale")

    async def one_left() -> bool:
        return sorted(await _pods(sb)) == ["web-0"] and sorted(await _claims(sb)) == ["data-web-0"]

    await sb.wait_for(one_left, timeout=30)
    await sb.wait_for(lambda: _settled(sb), timeout=30)
    deletes = [e["message"] for e in sorted((await sb.client.list("events", namespace="default")).items,
                                             key=lambda e: e["metadata"]["creationTimestamp"])
               if e["reason"] == "SuccessfulDelete"]
    assert deletes == ["delete Pod web-2 in StatefulSet web successful",
                       "delete Pod web-1 in StatefulSet web successful"]

    # whenDeleted: Delete -> the last claim goes with the set.
    await sb.client.delete("statefulsets.apps", "web", namespace="default", propagation_policy="Background")

    async def all_gone() -> bool:
        return not await _claims(sb) and not await _pods(sb)

    await sb.wait_for(all_gone, timeout=30)


@pytest.mark.cplane(controllers=CONTROLLERS, fleet=FLEET)
async def test_rolling_update_with_partition(cplane_sandbox: testing.Sandbox) -> None:
    sb = cplane_sandbox
    await sb.client.create("statefulsets.apps", _sts(claims=False, updateStrategy={
        "type": "RollingUpdate", "rollingUpdate": {"partition": 2}}))
    first = await sb.wait_for(lambda: _settled(sb), timeout=30)
    old_revision = first["status"]["currentRevision"]
    await sb.client.patch("statefulsets.apps", "web", {"spec": {"template": {"spec": {"containers": [
        {"name": "web", "image": "web:2"}]}}}}, namespace="default", patch_type="strategic")

    async def partial() -> dict[str, Any] | None:
        sts = await _settled(sb, updated=False)
        if sts is None or sts["status"].get("updatedReplicas") != 1:
            return None
        images = {n: p["spec"]["containers"][0]["image"] for n, p in (await _pods(sb)).items()}
        return sts if images == {"web-0": "web:1", "web-1": "web:1", "web-2": "web:2"} else None

    sts = await sb.wait_for(partial, timeout=30)
    assert sts["status"]["currentRevision"] == old_revision != sts["status"]["updateRevision"]
    assert sts["status"]["currentReplicas"] == 2

    await sb.client.patch("statefulsets.apps", "web", {"spec": {"updateStrategy": {"rollingUpdate": {
        "partition": 0}}}}, namespace="default", patch_type="merge")
    done = await sb.wait_for(lambda: _settled(sb), timeout=30)
    assert {p["spec"]["containers"][0]["image"] for p in (await _pods(sb)).values()} == {"web:2"}
    assert done["status"]["currentRevision"] == done["status"]["updateRevision"] != old_revision
    revisions = sorted((await sb.client.list("controllerrevisions.apps", namespace="default")).items,
                       key=lambda r: r["revision"])
    assert [r["revision"] for r in revisions] == [1, 2]


@pytest.mark.cplane(controllers=CONTROLLERS, fleet=FLEET)
async def test_parallel_with_ordinals_start(cplane_sandbox: testing.Sandbox) -> None:
    sb = cplane_sandbox
    await sb.client.create("statefulsets.apps", _sts(replicas=4, claims=False, podManagementPolicy="Parallel",
                                                     ordinals={"start": 5}))
    await sb.wait_for(lambda: _settled(sb), timeout=30)
    assert sorted(await _pods(sb)) == ["web-5", "web-6", "web-7", "web-8"]
    await sb.client.patch("statefulsets.apps", "web", {"spec": {"replicas": 2}}, namespace="default",
                          subresource="scale")

    async def two() -> bool:
        return sorted(await _pods(sb)) == ["web-5", "web-6"]

    await sb.wait_for(two, timeout=30)


@pytest.mark.cplane(controllers=CONTROLLERS, fleet=FLEET)
async def test_on_delete(cplane_sandbox: testing.Sandbox) -> None:
    sb = cplane_sandbox
    await sb.client.create("statefulsets.apps", _sts(replicas=2, claims=False, updateStrategy={"type": "OnDelete"}))
    await sb.wait_for(lambda: _settled(sb), timeout=30)
    await sb.client.patch("statefulsets.apps", "web", {"spec": {"template": {"spec": {"containers": [
        {"name": "web", "image": "web:2"}]}}}}, namespace="default", patch_type="strategic")

    async def observed() -> bool:
        sts = await sb.client.get("statefulsets.apps", "web", namespace="default")
        st = sts.get("status") or {}
        return st.get("observedGeneration") == 2 and st.get("currentRevision") != st.get("updateRevision")

    await sb.wait_for(observed, timeout=20)
    old = await _pods(sb)
    await sb.client.delete("pods", "web-1", namespace="default")

    async def replaced() -> bool:
        pods = await _pods(sb)
        return ("web-1" in pods and pods["web-1"]["metadata"]["uid"] != old["web-1"]["metadata"]["uid"]
                and _ready(pods["web-1"]))

    await sb.wait_for(replaced, timeout=20)
    pods = await _pods(sb)
    assert pods["web-1"]["spec"]["containers"][0]["image"] == "web:2"
    assert pods["web-0"]["metadata"]["uid"] == old["web-0"]["metadata"]["uid"]


async def _open_gate(sb: testing.Sandbox, name: str) -> None:
    """Set the pod's readiness-gate condition True (the fleet kubelet then reports it Ready)."""
    pod = await sb.client.get("pods", name, namespace="default")
    conditions = [c for c in pod["status"].get("conditions") or [] if c["type"] != GATE]
    conditions.append({"type": GATE, "status": "True", "lastTransitionTime": pod["metadata"]["creationTimestamp"]})
    pod["status"]["conditions"] = conditions
    await sb.client.update_status("pods", pod)


GATE = "example.com/warm"


@pytest.mark.cplane(controllers=CONTROLLERS, fleet=FLEET)
async def test_ordered_ready_waits_for_each_pod(cplane_sandbox: testing.Sandbox) -> None:
    """web-1 is not created while web-0 is not Ready (a readiness gate holds it), and so on."""
    sb = cplane_sandbox
    body = _sts(claims=False)
    body["spec"]["template"]["spec"]["readinessGates"] = [{"conditionType": GATE}]
    await sb.client.create("statefulsets.apps", body)
    for ordinal in range(3):
        name = f"web-{ordinal}"

        async def running_unready(name: str = name) -> bool:
            pods = await _pods(sb)
            return name in pods and pods[name].get("status", {}).get("phase") == "Running"

        await sb.wait_for(running_unready, timeout=20)
        sts = await sb.client.get("statefulsets.apps", "web", namespace="default")

        async def status_seen(want: int = ordinal + 1) -> bool:
            st = (await sb.client.get("statefulsets.apps", "web", namespace="default")).get("status") or {}
            return st.get("replicas") == want

        await sb.wait_for(status_seen, timeout=20)
        assert sorted(await _pods(sb)) == [f"web-{i}" for i in range(ordinal + 1)]  # nothing further yet
        assert (sts.get("status") or {}).get("readyReplicas", 0) == ordinal
        await _open_gate(sb, name)
    await sb.wait_for(lambda: _settled(sb), timeout=30)


@pytest.mark.cplane(controllers=CONTROLLERS, fleet=FLEET)
async def test_rolling_update_max_unavailable(cplane_sandbox: testing.Sandbox) -> None:
    """maxUnavailable 2 of 4: the two highest ordinals go together, never a third while they are down."""
    sb = cplane_sandbox
    body = _sts(replicas=4, claims=False, podManagementPolicy="Parallel",
                updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}})
    body["spec"]["template"]["spec"]["readinessGates"] = [{"conditionType": GATE}]
    await sb.client.create("statefulsets.apps", body)

    async def four_running() -> bool:
        pods = await _pods(sb)
        return len(pods) == 4 and all(p.get("status", {}).get("phase") == "Running" for p in pods.values())

    await sb.wait_for(four_running, timeout=20)
    for i in range(4):
        await _open_gate(sb, f"web-{i}")
    await sb.wait_for(lambda: _settled(sb), timeout=30)
    before = {n: p["metadata"]["uid"] for n, p in (await _pods(sb)).items()}
    await sb.client.patch("statefulsets.apps", "web", {"spec": {"template": {"spec": {"containers": [
        {"name": "web", "image": "web:2"}]}}}}, namespace="default", patch_type="strategic")

    async def replaced(names: tuple[str, ...]) -> bool:
        pods = await _pods(sb)
        return all(n in pods and pods[n]["metadata"]["uid"] != before[n]
                   and pods[n].get("status", {}).get("phase") == "Running" for n in names)

    await sb.wait_for(lambda: replaced(("web-3", "web-2")), timeout=20)
    pods = await _pods(sb)
    assert pods["web-1"]["metadata"]["uid"] == before["web-1"] and pods["web-0"]["metadata"]["uid"] == before["web-0"]
    await _open_gate(sb, "web-3")
    await _open_gate(sb, "web-2")
    await sb.wait_for(lambda: replaced(("web-1", "web-0")), timeout=20)
    await _open_gate(sb, "web-1")
    await _open_gate(sb, "web-0")
    await sb.wait_for(lambda: _settled(sb), timeout=30)


@pytest.mark.cplane(controllers=CONTROLLERS, fleet=FLEET, virtual_clock=True)
async def test_min_ready_seconds_on_the_clock(cplane_sandbox: testing.Sandbox) -> None:
    """OrderedReady with minReadySeconds: web-1 waits until web-0 has been Ready for 10 s of the clock;
    availableReplicas follows the clock too."""
    sb = cplane_sandbox
    await sb.client.create("statefulsets.apps", _sts(replicas=2, claims=False, minReadySeconds=10))

    async def ready_not_available() -> bool:
        st = (await sb.client.get("statefulsets.apps", "web", namespace="default")).get("status") or {}
        return st.get("readyReplicas") == 1 and st.get("availableReplicas") == 0

    await sb.wait_for(ready_not_available, timeout=20)
    assert sorted(await _pods(sb)) == ["web-0"]
    await sb.advance(11)

    async def second_ready() -> bool:
        st = (await sb.client.get("statefulsets.apps", "web", namespace="default")).get("status") or {}
        return st.get("readyReplicas") == 2 and st.get("availableReplicas") == 1

    await sb.wait_for(second_ready, timeout=20)
    await sb.advance(11)
    await sb.wait_for(lambda: _settled(sb), timeout=20)


@pytest.mark.cplane(controllers=CONTROLLERS, fleet=FLEET)
async def test_failed_pod_is_recreated_with_its_claim(cplane_sandbox: testing.Sandbox) -> None:
    sb = cplane_sandbox
    await sb.client.create("statefulsets.apps", _sts(replicas=2))
    await sb.wait_for(lambda: _settled(sb), timeout=30)
    old = await sb.client.get("pods", "web-1", namespace="default")
    old["status"]["phase"] = "Failed"
    old["status"]["conditions"] = [{**c, "status": "False"} if c["type"] in ("Ready", "ContainersReady") else c
                                   for c in old["status"]["conditions"]]
    await sb.client.update_status("pods", old)

    async def recreated() -> bool:
        pods = await _pods(sb)
        return "web-1" in pods and pods["web-1"]["metadata"]["uid"] != old["metadata"]["uid"] and _ready(pods["web-1"])

    await sb.wait_for(recreated, timeout=30)
    pods = await _pods(sb)
    assert {"name": "data", "persistentVolumeClaim": {"claimName": "data-web-1"}} in pods["web-1"]["spec"]["volumes"]
    assert sorted(await _claims(sb)) == ["data-web-0", "data-web-1"]  # the same claim, kept (Retain)
    warnings = [e["message"] for e in (await sb.client.list("events", namespace="default")).items
                if e["reason"] == "RecreatingFailedPod"]
    assert set(warnings) == {"StatefulSet default/web is recreating failed Pod web-1"}


@pytest.mark.cplane(controllers=CONTROLLERS, fleet=FLEET)
async def test_orphan_pod_with_a_member_name_is_adopted(cplane_sandbox: testing.Sandbox) -> None:
    sb = cplane_sandbox
    await sb.client.create("pods", {"metadata": {"name": "web-0", "namespace": "default", "labels": {"app": "web"}},
                                    "spec": {"terminationGracePeriodSeconds": 0,
                                             "containers": [{"name": "web", "image": "web:0"}]}})
    await sb.client.create("pods", {"metadata": {"name": "web-x", "namespace": "default", "labels": {"app": "web"}},
                                    "spec": {"terminationGracePeriodSeconds": 0,
                                             "containers": [{"name": "web", "image": "web:0"}]}})
    created = await sb.client.create("statefulsets.apps", _sts(replicas=2, claims=False,
                                                               updateStrategy={"type": "OnDelete"}))

    async def two_members() -> bool:
        pods = await _pods(sb)
        return ("web-1" in pods and _ready(pods["web-1"]) and "web-0" in pods
                and bool(pods["web-0"]["metadata"].get("ownerReferences")))

    await sb.wait_for(two_members, timeout=30)
    pods = await _pods(sb)
    assert pods["web-0"]["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"]
    assert pods["web-0"]["spec"]["containers"][0]["image"] == "web:0"  # adopted, not replaced (OnDelete)
    assert not pods["web-x"]["metadata"].get("ownerReferences")  # not a member name
