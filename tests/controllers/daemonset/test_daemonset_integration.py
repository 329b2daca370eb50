"""The DaemonSet controller with the scheduler and the simulated fleet (real time, in-process
sandbox): one pod per eligible node (nodeSelector, taints vs tolerations, the tolerations daemon
pods get automatically), bound by node affinity through the scheduler; ControllerRevisions; a
rolling update with maxUnavailable and with maxSurge; OnDelete; status numbers; a fleet node added
later gets its pod.

Out of scope: the pure placement and arithmetic rules (test_daemonset_rules.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from cp import testing

FLEET = {"apiVersion": "sim.cplane.dev/v1alpha1", "kind": "Fleet", "metadata": {"name": "ds"},
         "nodePools": [{"name": "gpu", "count": 2, "labels": {"example.com/gpu": "true"}},
                       {"name": "cpu", "count": 1},
                       {"name": "tainted", "count": 1, "labels": {"example.com/gpu": "true"},
                        "taints": [{"key": "example.com/dedicated", "value": "x", "effect": "NoSchedule"}]}]}
CONTROLLERS = ["garbage-collector", "scheduler", "daemonset"]


def _ds(name: str = "agent", *, selector: dict[str, str] | None = None, tolerate: bool = False,
        strategy: dict[str, Any] | None = None, image: str = "agent:1") -> dict[str, Any]:
    spec: dict[str, Any] = {"terminationGracePeriodSeconds": 0,
                            "containers": [{"name": "agent", "image": image}]}
    if selector:
        spec["nodeSelector"] = selector
    if tolerate:
        spec["tolerations"] = [{"key": "example.com/dedicated", "operator": "Exists"}]
    body: dict[str, Any] = {"apiVersion": "apps/v1", "kind": "DaemonSet",
                            "metadata": {"name": name, "namespace": "default"},
                            "spec": {"selector": {"matchLabels": {"app": name}},
                                     "template": {"metadata": {"labels": {"app": name}}, "spec": spec}}}
    if strategy is not None:
        body["spec"]["updateStrategy"] = strategy
    return body


async def _pods(sb: testing.Sandbox, app: str) -> list[dict[str, Any]]:
    return [p for p in (await sb.client.list("pods", namespace="default")).items
            if p["metadata"].get("labels", {}).get("app") == app and not p["metadata"].get("deletionTimestamp")]


def _ready(pod: dict[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


async def _rolled_out(sb: testing.Sandbox, name: str, nodes: int) -> dict[str, Any] | None:
    ds = await sb.client.get("daemonsets.apps", name, namespace="default")
    st = ds.get("status") or {}
    if (st.get("observedGeneration") == ds["metadata"]["generation"] and st.get("desiredNumberScheduled") == nodes
            and st.get("updatedNumberScheduled") == nodes and st.get("numberAvailable") == nodes
            and st.get("currentNumberScheduled") == nodes and len(await _pods(sb, name)) == nodes):
        return ds
    return None


@pytest.mark.cplane(controllers=CONTROLLERS, fleet=FLEET)
async def test_one_pod_per_eligible_node(cplane_sandbox: testing.Sandbox) -> None:
    sb = cplane_sandbox
    created = await sb.client.create("daemonsets.apps", _ds())
    ds = await sb.wait_for(lambda: _rolled_out(sb, "agent", 3), timeout=20)  # not on the tainted node
    pods = await _pods(sb, "agent")
    assert sorted(p["spec"]["nodeName"] for p in pods) == ["cpu-0", "gpu-0", "gpu-1"]
    assert all(_ready(p) for p in pods)
    pod = pods[0]
    node = pod["spec"]["nodeName"]
    assert pod["metadata"]["generateName"] == "agent-"
    assert pod["metadata"]["ownerReferences"] == [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent",
                                                   "uid": created["metadata"]["uid"], "controller": True,
                                                   "blockOwnerDeletion": True}]
    assert pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}
    keys = {(t["key"], t["effect"]) for t in pod["spec"]["tolerations"]}
    assert {("node.kubernetes.io/not-ready", "NoExecute"), ("node.kubernetes.io/unreachable", "NoExecute"),
            ("node.kubernetes.io/disk-pressure", "NoSchedule"), ("node.kubernetes.io/memory-pressure", "NoSchedule"),
            ("node.kubernetes.io/pid-pressure", "NoSchedule"),
            ("node.kubernetes.io/unschedulable", "NoSchedule")} <= keys
    labels = pod["metadata"]["labels"]
    assert labels["pod-template-generation"] == "1"
    revisions = (await sb.client.list("controllerrevisions.apps", namespace="default")).items
    assert len(revisions) == 1
    rev = revisions[0]
    assert rev["metadata"]["name"] == f"agent-{labels['controller-revision-hash']}"
    assert rev["revision"] == 1
    assert rev["data"]["spec"]["template"]["$patch"] == "replace"
    status = ds["status"]
    assert status["numberMisscheduled"] == 0 and status["numberReady"] == 3 and "numberUnavailable" not in status
    events = [e for e in (await sb.client.list("events", namespace="default")).items
              if e["reason"] == "SuccessfulCreate" and e["involvedObject"]["name"] == "agent"]
    assert len(events) == 3 and events[0]["source"]["component"] == "daemonset-controller"


@pytest.mark.cplane(controllers=CONTROLLERS, fleet=FLEET)
async def test_selector_and_tolerations(cplane_sandbox: testing.Sandbox) -> None:
    sb = cplane_sandbox
    await sb.client.create("daemonsets.apps", _ds("gpu", selector={"example.com/gpu": "true"}, tolerate=True))
    await sb.wait_for(lambda: _rolled_out(sb, "gpu", 3), timeout=20)
    assert sorted(p["spec"]["nodeName"] for p in await _pods(sb, "gpu")) == ["gpu-0", "gpu-1", "tainted-0"]

    # A node losing the label: its pod goes and the DaemonSet wants 2.
    await sb.client.patch("nodes", "gpu-1", {"metadata": {"labels": {"example.com/gpu": None}}})
    await sb.wait_for(lambda: _rolled_out(sb, "gpu", 2), timeout=20)
    assert sorted(p["spec"]["nodeName"] for p in await _pods(sb, "gpu")) == ["gpu-0", "tainted-0"]

    # An untolerated NoExecute taint removes the pod; a NoSchedule one only keeps new pods off.
    await sb.client.patch("nodes", "gpu-0", {"spec": {"taints": [
        {"key": "example.com/evict", "effect": "NoExecute"}]}})
    await sb.wait_for(lambda: _rolled_out(sb, "gpu", 1), timeout=20)
    assert [p["spec"]["nodeName"] for p in await _pods(sb, "gpu")] == ["tainted-0"]


@pytest.mark.cplane(controllers=CONTROLLERS, fleet=FLEET)
async def test_rolling_update_max_unavailable(cplane_sandbox: testing.Sandbox) -> None:
    sb = cplane_sandbox
    await sb.client.create("daemonsets.apps", _ds())
    await sb.wait_for(lambda: _rolled_out(sb, "agent", 3), timeout=20)
    first = {p["metadata"]["name"] for p in await _pods(sb, "agent")}
    await sb.client.patch("daemonsets.apps", "agent", {"spec": {"template": {"spec": {"containers": [
        {"name": "agent", "image": "agent:2"}]}}}}, namespace="default", patch_type="strategic")
    ds = await sb.wait_for(lambda: _rolled_out(sb, "agent", 3), timeout=30)
    pods = await _pods(sb, "agent")
    assert not first & {p["metadata"]["name"] for p in pods}
    assert {p["spec"]["containers"][0]["image"] for p in pods} == {"agent:2"}
    assert {p["metadata"]["labels"]["pod-template-generation"] for p in pods} == {"2"}
    revisions = sorted((await sb.client.list("controllerrevisions.apps", namespace="default")).items,
                       key=lambda r: r["revision"])
    assert [r["revision"] for r in revisions] == [1, 2]
    assert revisions[1]["metadata"]["labels"]["controller-revision-hash"] == \
        pods[0]["metadata"]["labels"]["controller-revision-hash"]
    assert ds["status"]["observedGeneration"] == 2

    # Back to the first template: its revision is renumbered 3, no new one appears.
    await sb.client.patch("daemonsets.apps", "agent", {"spec": {"template": {"spec": {"containers": [
        {"name": "agent", "image": "agent:1"}]}}}}, namespace="default", patch_type="strategic")
    await sb.wait_for(lambda: _rolled_out(sb, "agent", 3), timeout=30)
    revisions = sorted((await sb.client.list("controllerrevisions.apps", namespace="default")).items,
                       key=lambda r: r["revision"])
    assert [(r["metadata"]["name"], r["revision"]) for r in revisions][1][1] == 3
    assert len(revisions) == 2


@pytest.mark.cplane(controllers=CONTROLLERS, fleet=FLEET)
async def test_rolling_update_max_surge(cplane_sandbox: testing.Sandbox) -> None:
    sb = cplane_sandbox
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    await sb.client.create("daemonsets.apps", _ds(strategy=strategy))
    await sb.wait_for(lambda: _rolled_out(sb, "agent", 3), timeout=20)
    await sb.client.patch("daemonsets.apps", "agent", {"spec": {"template": {"spec": {"containers": [
        {"name": "agent", "image": "agent:2"}]}}}}, namespace="default", patch_type="strategic")
    await sb.wait_for(lambda: _rolled_out(sb, "agent", 3), timeout=30)
    events = [e for e in (await sb.client.list("events", namespace="default")).items
              if e["involvedObject"]["name"] == "agent"]
    assert sum(e["reason"] == "SuccessfulCreate" for e in events) == 6
    assert sum(e["reason"] == "SuccessfulDelete" for e in events) == 3


@pytest.mark.cplane(controllers=CONTROLLERS, fleet=FLEET)
async def test_on_delete_replaces_only_deleted_pods(cplane_sandbox: testing.Sandbox) -> None:
    sb = cplane_sandbox
    await sb.client.create("daemonsets.apps", _ds(strategy={"type": "OnDelete"}))
    await sb.wait_for(lambda: _rolled_out(sb, "agent", 3), timeout=20)
    await sb.client.patch("daemonsets.apps", "agent", {"spec": {"template": {"spec": {"containers": [
        {"name": "agent", "image": "agent:2"}]}}}}, namespace="default", patch_type="strategic")

    async def observed() -> bool:
        ds = await sb.client.get("daemonsets.apps", "agent", namespace="default")
        st = ds.get("status") or {}
        return st.get("observedGeneration") == 2 and st.get("updatedNumberScheduled", 0) == 0

    await sb.wait_for(observed, timeout=20)
    victim = next(p for p in await _pods(sb, "agent") if p["spec"]["nodeName"] == "gpu-0")
    await sb.client.delete("pods", victim["metadata"]["name"], namespace="default")

    async def replaced() -> bool:
        images = {p["spec"].get("nodeName"): p["spec"]["containers"][0]["image"] for p in await _pods(sb, "agent")}
        return images == {"gpu-0": "agent:2", "gpu-1": "agent:1", "cpu-0": "agent:1"}

    await sb.wait_for(replaced, timeout=20)
    ds = await sb.client.get("daemonsets.apps", "agent", namespace="default")
    assert ds["status"]["updatedNumberScheduled"] == 1


@pytest.mark.cplane(controllers=CONTROLLERS, fleet=FLEET)
async def test_node_added_and_removed(cplane_sandbox: testing.Sandbox) -> None:
    """A Node created by hand gets its daemon pod (desired 4); deleted, its pod goes (an unscheduled one
    by the DaemonSet controller, a bound one by the fleet's pod garbage collector) and the set is whole."""
    sb = cplane_sandbox
    await sb.client.create("daemonsets.apps", _ds())
    await sb.wait_for(lambda: _rolled_out(sb, "agent", 3), timeout=20)
    await sb.client.create("nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "extra-0"}})

    async def pod_for_extra() -> dict[str, Any] | None:
        pods = [p for p in (await sb.client.list("pods", namespace="default")).items
                if p["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
                    "nodeSelectorTerms"][0]["matchFields"][0]["values"] == ["extra-0"]]
        ds = await sb.client.get("daemonsets.apps", "agent", namespace="default")
        return pods[0] if pods and ds["status"]["desiredNumberScheduled"] == 4 else None

    await sb.wait_for(pod_for_extra, timeout=20)
    await sb.client.delete("nodes", "extra-0")
    await sb.wait_for(lambda: _rolled_out(sb, "agent", 3), timeout=20)


@pytest.mark.cplane(controllers=CONTROLLERS, fleet=FLEET)
async def test_hash_collision_bumps_collision_count(cplane_sandbox: testing.Sandbox) -> None:
    sb = cplane_sandbox
    from controllers.daemonset import rules

    body = _ds()
    defaulted = await sb.client.create("daemonsets.apps", body, dry_run=True)
    squat_name = f"agent-{rules.template_hash(defaulted)}"  # the name the first revision would take
    await sb.client.create("controllerrevisions.apps", {
        "metadata": {"name": squat_name, "namespace": "default", "labels": {"other": "x"}},
        "data": {"not": "ours"}, "revision": 1})
    await sb.client.create("daemonsets.apps", body)
    ds = await sb.wait_for(lambda: _rolled_out(sb, "agent", 3), timeout=20)
    assert ds["status"]["collisionCount"] == 1
    hashes = {p["metadata"]["labels"]["controller-revision-hash"] for p in await _pods(sb, "agent")}
    assert len(hashes) == 1 and f"agent-{hashes.pop()}" != squat_name


@pytest.mark.cplane(controllers=CONTROLLERS, fleet=FLEET)
async def test_cordoned_node_still_runs_its_daemon_pod(cplane_sandbox: testing.Sandbox) -> None:
    """Cordoning adds the unschedulable taint, which daemon pods tolerate: the scheduler binds there."""
    sb = cplane_sandbox

    async def nodes_up() -> bool:
        return len((await sb.client.list("nodes")).items) == 4

    await sb.wait_for(nodes_up, timeout=20)
    await sb.client.patch("nodes", "cpu-0", {"spec": {"unschedulable": True}})
    await sb.client.create("daemonsets.apps", _ds())
    await sb.wait_for(lambda: _rolled_out(sb, "agent", 3), timeout=20)
    assert "cpu-0" in {p["spec"]["nodeName"] for p in await _pods(sb, "agent")}


async def _fail(sb: testing.Sandbox, name: str) -> None:
    pod = await sb.client.get("pods", name, namespace="default")
    pod["status"]["phase"] = "Failed"  # as a kubelet reports it: the containers ended, not ready
    pod["status"]["conditions"] = [{**c, "status": "False"} if c["type"] in ("Ready", "ContainersReady") else c
                                   for c in pod["status"].get("conditions") or []]
    await sb.client.update_status("pods", pod)


@pytest.mark.cplane(controllers=CONTROLLERS, fleet={**FLEET, "nodePools": [{"name": "cpu", "count": 1}]},
                    virtual_clock=True)
async def test_failed_pods_are_replaced_with_backoff(cplane_sandbox: testing.Sandbox) -> None:
    """A failed daemon pod is deleted at once (Warning FailedDaemonPod) and replaced; the next failure on
    that node waits out the backoff (1 s, then 2 s ... of the clock)."""
    sb = cplane_sandbox
    await sb.client.create("daemonsets.apps", _ds())
    await sb.wait_for(lambda: _rolled_out(sb, "agent", 1), timeout=20)
    first = (await _pods(sb, "agent"))[0]["metadata"]["name"]
    await _fail(sb, first)

    async def replaced(old: str) -> str | None:
        pods = await _pods(sb, "agent")
        return pods[0]["metadata"]["name"] if len(pods) == 1 and pods[0]["metadata"]["name"] != old \
            and _ready(pods[0]) else None

    second = await sb.wait_for(lambda: replaced(first), timeout=20)
    await _fail(sb, second)

    async def failed_seen() -> bool:
        ds = await sb.client.get("daemonsets.apps", "agent", namespace="default")
        return ds["status"].get("numberReady") == 0

    await sb.wait_for(failed_seen, timeout=20)
    pods = await _pods(sb, "agent")
    assert [p["metadata"]["name"] for p in pods] == [second]  # held by the backoff
    await sb.advance(1.5)
    await sb.wait_for(lambda: replaced(second), timeout=20)
    warnings = [e["message"] for e in (await sb.client.list("events", namespace="default")).items
                if e["reason"] == "FailedDaemonPod"]
    assert sorted(warnings) == sorted(f"Found failed daemon pod default/{n} on node cpu-0, will try to kill it"
                                      for n in (first, second))


@pytest.mark.cplane(controllers=CONTROLLERS, fleet=FLEET, virtual_clock=True)
async def test_min_ready_seconds_on_the_clock(cplane_sandbox: testing.Sandbox) -> None:
    """numberAvailable counts pods Ready for minReadySeconds of the clock; the key is requeued for it."""
    sb = cplane_sandbox
    body = _ds()
    body["spec"]["minReadySeconds"] = 30
    await sb.client.create("daemonsets.apps", body)

    async def ready_not_available() -> bool:
        st = (await sb.client.get("daemonsets.apps", "agent", namespace="default")).get("status") or {}
        return st.get("numberReady") == 3 and st.get("numberAvailable", 0) == 0 and st.get("numberUnavailable") == 3

    await sb.wait_for(ready_not_available, timeout=20)
    await sb.advance(31)
    await sb.wait_for(lambda: _rolled_out(sb, "agent", 3), timeout=20)


@pytest.mark.cplane(controllers=CONTROLLERS, fleet=FLEET)
async def test_duplicate_current_revisions_are_deduplicated(cplane_sandbox: testing.Sandbox) -> None:
    """Orphan revisions of the current template are adopted; the highest is kept, the pods relabelled
    with its hash (not recreated) and the others deleted."""
    from controllers import history

    sb = cplane_sandbox
    body = _ds()
    patch = history.template_patch(await sb.client.create("daemonsets.apps", body, dry_run=True))

    async def revision(name: str, number: int) -> None:
        await sb.client.create("controllerrevisions.apps", {
            "metadata": {"name": name, "namespace": "default", "labels": {"app": "agent",
                                                                           "controller-revision-hash": name}},
            "data": patch, "revision": number})

    await revision("dup-a", 1)
    await revision("dup-b", 2)
    await sb.client.create("daemonsets.apps", body)
    await sb.wait_for(lambda: _rolled_out(sb, "agent", 3), timeout=20)
    pods = await _pods(sb, "agent")
    assert {p["metadata"]["labels"]["controller-revision-hash"] for p in pods} == {"dup-b"}

    async def names() -> list[str]:
        return sorted(r["metadata"]["name"] for r in (await sb.client.list("controllerrevisions.apps",
                                                                           namespace="default")).items)

    assert await names() == ["dup-b"]
    await revision("dup-c", 5)

    async def relabelled() -> bool:
        now = await _pods(sb, "agent")
        return (await names() == ["dup-c"]
                and {p["metadata"]["labels"]["controller-revision-hash"] for p in now} == {"dup-c"})

    await sb.wait_for(relabelled, timeout=20)
    assert {p["metadata"]["uid"] for p in await _pods(sb, "agent")} == {p["metadata"]["uid"] for p in pods}
    await sb.wait_for(lambda: _rolled_out(sb, "agent", 3), timeout=20)


@pytest.mark.cplane(controllers=CONTROLLERS, fleet=FLEET)
async def test_orphan_pod_is_adopted(cplane_sandbox: testing.Sandbox) -> None:
    """A matching orphan on a node is adopted (a controller reference added) instead of a second pod;
    with OnDelete it stays, counted as not updated."""
    sb = cplane_sandbox

    async def nodes_up() -> bool:
        return len((await sb.client.list("nodes")).items) == 4

    await sb.wait_for(nodes_up, timeout=20)
    await sb.client.create("pods", {"metadata": {"name": "orphan", "namespace": "default", "labels": {"app": "agent"}},
                                    "spec": {"nodeName": "cpu-0", "terminationGracePeriodSeconds": 0,
                                             "containers": [{"name": "agent", "image": "agent:0"}]}})
    created = await sb.client.create("daemonsets.apps", _ds(strategy={"type": "OnDelete"}))

    async def settled() -> dict[str, Any] | None:
        ds = await sb.client.get("daemonsets.apps", "agent", namespace="default")
        st = ds.get("status") or {}
        pods = await _pods(sb, "agent")
        ok = (st.get("numberAvailable") == 3 and st.get("updatedNumberScheduled") == 2 and len(pods) == 3
              and all(_ready(p) for p in pods))
        return ds if ok else None

    await sb.wait_for(settled, timeout=20)
    orphan = await sb.client.get("pods", "orphan", namespace="default")
    assert orphan["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"]
    assert [p["metadata"]["name"] for p in await _pods(sb, "agent") if p["spec"]["nodeName"] == "cpu-0"] == ["orphan"]
