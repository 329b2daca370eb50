"""Stopping a fleet node's kubelet, end to end on the virtual clock, with the real controllers: after
the 50 s grace period the node lifecycle controller marks the Node Ready=Unknown (upstream's reasons),
taints it unreachable (NoSchedule and NoExecute), marks its pods not ready; 300 s later (the default
toleration the DefaultTolerationSeconds admission adds) the taint eviction controller evicts them and
the ReplicaSet's replacements run on the other node. Starting the kubelet again brings the Node back
Ready, removes the taints, and the kubelet finishes the evicted pods.

Time moves in small steps (support.advance), as a real clock would: one jump of 50 s would leave
even a healthy kubelet silent for the whole grace period.

Out of scope: the decisions in detail (test_decisions.py), kubectl's view (test_kubectl.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from controllers import nodelifecycle, taint_eviction
from controllers.fleet import objects as objs
from cp import clock as clocks
from cp import testing
from cp.cli import node as node_cli
from tests.controllers.nodelifecycle.support import advance
from tests.controllers.support import START

FLEET = {"apiVersion": "sim.cplane.dev/v1alpha1", "kind": "Fleet", "metadata": {"name": "lifecycle"},
         "nodePools": [{"name": "node", "count": 2}]}
CONTROLLERS = ["garbage-collector", "replicaset", "scheduler", nodelifecycle.NAME, taint_eviction.NAME]
NS = "default"

REPLICASET = {
    "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web"},
    "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
             "template": {"metadata": {"labels": {"app": "web"}},
                          "spec": {"terminationGracePeriodSeconds": 30,
                                   "nodeSelector": {"kubernetes.io/hostname": "node-0"},
                                   "containers": [{"name": "web", "image": "nginx"}]}}},
}
PATIENT = {  # tolerates the unreachable taint for ever: never evicted
    "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "patient"},
    "spec": {"nodeName": "node-0", "terminationGracePeriodSeconds": 0,
             "tolerations": [{"key": nodelifecycle.UNREACHABLE, "operator": "Exists", "effect": "NoExecute"}],
             "containers": [{"name": "c", "image": "nginx"}]},
}


def _cond(obj: dict[str, Any], type_: str) -> dict[str, Any] | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == type_), None)


async def _pods(sb: testing.Sandbox) -> list[dict[str, Any]]:
    return (await sb.client.list("pods", namespace=NS)).items


def _taints(node: dict[str, Any]) -> set[tuple[str, str]]:
    return set(nodelifecycle.taint_keys(node))


# A whole-second start: the sandbox moves its clock in microseconds (rfc3339_micro), so a start with
# sub-microsecond digits would drift below the exact deadlines asserted here.
@pytest.mark.cplane(controllers=CONTROLLERS, fleet=FLEET, virtual_clock=True, clock_start=START)
async def test_stopped_kubelet_evicts_pods_after_300s_and_they_come_back_elsewhere(
        cplane_sandbox: testing.Sandbox) -> None:
    sb = cplane_sandbox
    c = sb.client
    await c.create("replicasets.apps", REPLICASET, namespace=NS)
    await c.create("pods", PATIENT, namespace=NS)

    async def running_on_node_0() -> list[dict[str, Any]]:
        pods = [p for p in await _pods(sb) if p["spec"].get("nodeName") == "node-0"
                and (_cond(p, "Ready") or {}).get("status") == "True"]
        return pods if len(pods) == 3 else []

    first = await sb.wait_for(running_on_node_0, timeout=20)
    web = sorted(p["metadata"]["name"] for p in first if p["metadata"]["name"] != "patient")
    # The DefaultTolerationSeconds admission gave the ReplicaSet's pods 300 s for unreachable.
    assert {"key": nodelifecycle.UNREACHABLE, "operator": "Exists", "effect": "NoExecute",
            "tolerationSeconds": 300} in next(p for p in first if p["metadata"]["name"] == web[0])["spec"]["tolerations"]
    # Let the replacements go anywhere.
    await c.patch("replicasets.apps", "web", {"spec": {"template": {"spec": {"nodeSelector": None}}}}, namespace=NS)

    stopped_at = sb.clock.now()
    node = await node_cli.set_kubelet(c, "node-0", stopped=True)
    assert node["metadata"]["annotations"][objs.KUBELET_STATE] == "stopped"

    await advance(sb, 40)
    node = await c.get("nodes", "node-0")
    assert _cond(node, "Ready")["status"] == "True", "Unknown before the grace period ran out"
    assert not _taints(node)

    await advance(sb, 10)  # 50 s since the last renewal

    async def unreachable() -> dict[str, Any] | None:
        n = await c.get("nodes", "node-0")
        return n if (nodelifecycle.UNREACHABLE, "NoExecute") in _taints(n) else None

    node = await sb.wait_for(unreachable, timeout=10)
    for type_ in ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure"):
        cond = _cond(node, type_)
        assert cond is not None
        assert (cond["status"], cond["reason"], cond["message"]) == (
            "Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status."), type_
        assert cond["lastTransitionTime"] == clocks.rfc3339(stopped_at + 50)
    assert _taints(node) == {(nodelifecycle.UNREACHABLE, "NoSchedule"), (nodelifecycle.UNREACHABLE, "NoExecute")}
    assert all(t.get("timeAdded") == clocks.rfc3339(stopped_at + 50) for t in node["spec"]["taints"])
    assert _cond(await c.get("nodes", "node-1"), "Ready")["status"] == "True"

    async def not_ready() -> bool:
        pods = [p for p in await _pods(sb) if p["spec"].get("nodeName") == "node-0"]
        return len(pods) == 3 and all(_cond(p, "Ready")["status"] == "False" for p in pods)

    await sb.wait_for(not_ready, timeout=10)
    events = (await c.list("events", namespace="default")).items
    assert any(e["reason"] == "NodeNotReady" and e["message"] == "Node node-0 status is now: NodeNotReady"
               and e["source"]["component"] == "node-controller" for e in events)

    # 299 s after the taint: still there; 300 s: evicted.
    await advance(sb, 290)
    assert all(not p["metadata"].get("deletionTimestamp") for p in await _pods(sb))
    await advance(sb, 10)

    async def evicted() -> list[dict[str, Any]]:
        pods = {p["metadata"]["name"]: p for p in await _pods(sb)}
        gone = [pods[n] for n in web if n in pods and pods[n]["metadata"].get("deletionTimestamp")]
        return gone if len(gone) == 2 else []

    gone = await sb.wait_for(evicted, timeout=10)
    for pod in gone:
        cond = _cond(pod, "DisruptionTarget")
        assert cond is not None
        assert (cond["status"], cond["reason"], cond["message"]) == (
            "True", "DeletionByTaintManager", "Taint manager: deleting due to NoExecute taint")
    events = (await c.list("events", namespace=NS)).items
    marked = sorted(e["involvedObject"]["name"] for e in events if e["reason"] == "TaintManagerEviction")
    assert marked == web
    assert all(e["message"] == f"Marking for deletion Pod {NS}/{e['involvedObject']['name']}"
               for e in events if e["reason"] == "TaintManagerEviction")
    patient = await c.get("pods", "patient", namespace=NS)
    assert not patient["metadata"].get("deletionTimestamp")

    async def replaced_on_node_1() -> bool:
        pods = [p for p in await _pods(sb) if not p["metadata"].get("deletionTimestamp")
                and p["metadata"]["name"].startswith("web-")]
        return len(pods) == 2 and all(p["spec"].get("nodeName") == "node-1"
                                      and (_cond(p, "Ready") or {}).get("status") == "True" for p in pods)

    await sb.wait_for(replaced_on_node_1, timeout=10)
    # The evicted pods stay Terminating: their kubelet is down to finish them (as on a real cluster).
    assert {p["metadata"]["name"] for p in await _pods(sb) if p["metadata"].get("deletionTimestamp")} == set(web)

    # The kubelet comes back: Ready, taints gone, the evicted pods finished (after the kubelet's 1 s
    # shutdown), the patient one Ready again.
    await node_cli.set_kubelet(c, "node-0", stopped=False)
    await advance(sb, 10, alive=("node-0", "node-1"))

    async def recovered() -> bool:
        n = await c.get("nodes", "node-0")
        names = {p["metadata"]["name"]: p for p in await _pods(sb)}
        return (_cond(n, "Ready")["status"] == "True" and not _taints(n) and not set(web) & set(names)
                and _cond(names["patient"], "Ready")["status"] == "True")

    await sb.wait_for(recovered, timeout=10)
    node = await c.get("nodes", "node-0")
    assert _cond(node, "Ready")["reason"] == "KubeletReady"
    assert objs.KUBELET_STATE not in node["metadata"].get("annotations", {})


def _pod_on_node_0(name: str, tolerations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeName": "node-0", "containers": [{"name": "c", "image": "nginx"}]}
    if tolerations is not None:
        spec["tolerations"] = tolerations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


@pytest.mark.cplane(controllers=CONTROLLERS, fleet=FLEET, virtual_clock=True, clock_start=START)
async def test_zero_seconds_evicts_at_once_and_a_restart_cancels_the_rest(cplane_sandbox: testing.Sandbox) -> None:
    sb = cplane_sandbox
    c = sb.client
    await c.create("pods", _pod_on_node_0("default-300"), namespace=NS)
    await c.create("pods", _pod_on_node_0("at-once", [{"key": nodelifecycle.UNREACHABLE, "operator": "Exists",
                                                       "effect": "NoExecute", "tolerationSeconds": 0}]),
                   namespace=NS)

    async def running() -> bool:
        pods = await _pods(sb)
        return len(pods) == 2 and all((_cond(p, "Ready") or {}).get("status") == "True" for p in pods)

    await sb.wait_for(running, timeout=10)
    await node_cli.set_kubelet(c, "node-0", stopped=True)
    await advance(sb, 50)

    async def at_once_evicted() -> bool:
        pod = await c.get("pods", "at-once", namespace=NS)
        return bool(pod["metadata"].get("deletionTimestamp"))

    await sb.wait_for(at_once_evicted, timeout=10)
    assert not (await c.get("pods", "default-300", namespace=NS))["metadata"].get("deletionTimestamp")

    # The kubelet is back within the 300 s: the taint goes, the scheduled eviction is cancelled.
    await advance(sb, 100)
    await node_cli.set_kubelet(c, "node-0", stopped=False)

    async def cancelled() -> list[str]:
        events = (await c.list("events", namespace=NS)).items
        return [e["message"] for e in events if e["reason"] == "TaintManagerEviction"
                and e["involvedObject"]["name"] == "default-300"]

    assert await sb.wait_for(cancelled, timeout=10) == [f"Cancelling deletion of Pod {NS}/default-300"]
    await advance(sb, 300, alive=("node-0", "node-1"))
    pod = await c.get("pods", "default-300", namespace=NS)
    assert not pod["metadata"].get("deletionTimestamp")
    assert _cond(pod, "Ready")["status"] == "True"


@pytest.mark.cplane(controllers=CONTROLLERS, fleet=FLEET, virtual_clock=True, clock_start=START)
async def test_a_clock_jump_past_the_grace_period_spares_running_kubelets(cplane_sandbox: testing.Sandbox) -> None:
    sb = cplane_sandbox
    c = sb.client

    async def leases() -> bool:
        return len((await c.list("leases.coordination.k8s.io", namespace="kube-node-lease")).items) == 2

    await sb.wait_for(leases)
    await node_cli.set_kubelet(c, "node-0", stopped=True)
    await sb.advance(120)  # one jump: node-1's renewal is as overdue as node-0's

    async def node_0_unknown() -> bool:
        return _cond(await c.get("nodes", "node-0"), "Ready")["status"] == "Unknown"

    await sb.wait_for(node_0_unknown, timeout=10)
    node_1 = await c.get("nodes", "node-1")
    assert _cond(node_1, "Ready")["status"] == "True"
    assert not _taints(node_1)

    async def not_ready_events() -> list[str]:
        events = (await c.list("events", namespace="default")).items
        return [e["involvedObject"]["name"] for e in events if e["reason"] == "NodeNotReady"]

    assert await sb.wait_for(not_ready_events) == ["node-0"]


@pytest.mark.cplane(controllers=CONTROLLERS, fleet=FLEET, virtual_clock=True, clock_start=START)
async def test_every_kubelet_down_evicts_nothing_until_one_is_back(cplane_sandbox: testing.Sandbox) -> None:
    sb = cplane_sandbox
    c = sb.client
    await c.create("pods", _pod_on_node_0("on-0"), namespace=NS)
    on_1 = _pod_on_node_0("on-1")
    on_1["spec"]["nodeName"] = "node-1"
    await c.create("pods", on_1, namespace=NS)

    async def running() -> bool:
        pods = await _pods(sb)
        return len(pods) == 2 and all((_cond(p, "Ready") or {}).get("status") == "True" for p in pods)

    await sb.wait_for(running, timeout=10)
    for name in ("node-0", "node-1"):
        await node_cli.set_kubelet(c, name, stopped=True)
    await advance(sb, 50, alive=())

    async def both_unknown() -> list[dict[str, Any]]:
        nodes = (await c.list("nodes")).items
        ok = all(_cond(n, "Ready")["status"] == "Unknown" and (nodelifecycle.UNREACHABLE, "NoSchedule") in _taints(n)
                 for n in nodes)
        return nodes if ok else []

    for node in await sb.wait_for(both_unknown, timeout=10):
        assert (nodelifecycle.UNREACHABLE, "NoExecute") not in _taints(node), "full disruption: no NoExecute"
    await advance(sb, 400, alive=())
    assert all(not p["metadata"].get("deletionTimestamp") for p in await _pods(sb))

    # One kubelet back: the other node gets its NoExecute taint, and its pod goes 300 s later.
    await node_cli.set_kubelet(c, "node-1", stopped=False)

    async def node_0_no_execute() -> bool:
        return (nodelifecycle.UNREACHABLE, "NoExecute") in _taints(await c.get("nodes", "node-0"))

    await sb.wait_for(node_0_no_execute, timeout=10)
    await advance(sb, 295)
    assert not (await c.get("pods", "on-0", namespace=NS))["metadata"].get("deletionTimestamp")
    await advance(sb, 5)

    async def evicted() -> bool:
        return bool((await c.get("pods", "on-0", namespace=NS))["metadata"].get("deletionTimestamp"))

    await sb.wait_for(evicted, timeout=10)
    assert not (await c.get("pods", "on-1", namespace=NS))["metadata"].get("deletionTimestamp")
