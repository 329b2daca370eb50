"""The device taint evictor against an in-process API server on a VirtualClock: NoExecute taints
from DeviceTaintRules and ResourceSlices evict bound pods holding the device (condition, DELETE,
Events), tolerations in the allocation result delay eviction to the exact second, cancellation,
and the DeviceTaintRule `EvictionInProgress` condition for each effect.

Out of scope: decision details with recorded writes (test_taint_eviction_writes.py), health
(test_health_*.py).
"""

from __future__ import annotations

from controllers.runtime import client as clients
from cp import clock as clocks
from tests.controllers.taints import support as s
from tests.controllers.taints.conftest import START, StartControllers

RULES = "devicetaintrules.resource.k8s.io"
TOLERATE_300 = {"key": "example.com/maintenance", "operator": "Exists", "effect": "NoExecute",
                "tolerationSeconds": 300}


async def _world(client: clients.Client, *, tolerations: list[dict] | None = None) -> dict:
    await s.node(client, "node-1")
    await s.resource_slice(client, "node-1", ["gpu-0", "gpu-1", "gpu-2"])
    await s.allocated_claim(client, "claim-a", [("node-1", "gpu-0")], tolerations=tolerations or [])
    return await s.bound_pod(client, "pod-a", "claim-a")


async def _evicted(client: clients.Client, name: str, ns: str = "default") -> bool:
    pod = await s.get_or_none(client, "pods", name, ns)
    return pod is None or bool(pod["metadata"].get("deletionTimestamp"))


async def test_untolerated_rule_evicts_at_once(client: clients.Client, start_controllers: StartControllers) -> None:
    pod = await _world(client)
    await start_controllers(reporter=False)
    await s.taint_rule(client, "maintenance", effect="NoExecute", selector={"driver": s.DRIVER, "device": "gpu-0"})
    await s.eventually(lambda: _evicted(client, "pod-a"), what="pod evicted")
    live = await client.get("pods", "pod-a", namespace="default")
    assert live["metadata"]["uid"] == pod["metadata"]["uid"]
    cond = s.condition(live, "DisruptionTarget")
    assert cond is not None
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "True", "DeletionByDeviceTaintManager", "Device Taint manager: deleting due to NoExecute taint")
    events = await s.events_for(client, "pod-a")
    assert [(e["type"], e["reason"], e["message"]) for e in events] == [
        ("Normal", "DeviceTaintManagerEviction", "Marking for deletion")]
    assert events[0]["source"]["component"] == "device-taint-eviction-controller"


async def test_toleration_of_300s_evicts_exactly_then(client: clients.Client, clock: clocks.VirtualClock,
                                                      start_controllers: StartControllers) -> None:
    await _world(client, tolerations=[TOLERATE_300])
    running = await start_controllers(reporter=False)
    rule = await s.taint_rule(client, "maintenance", effect="NoExecute")
    assert rule["spec"]["taint"]["timeAdded"] == clocks.rfc3339(START)

    async def pending() -> dict | None:
        got = await client.get(RULES, "maintenance")
        cond = s.condition(got, "EvictionInProgress")
        return cond if cond and cond["reason"] == "PodsPendingEviction" else None

    cond = await s.eventually(pending, what="PodsPendingEviction")
    assert (cond["status"], cond["message"], cond["observedGeneration"]) == (
        "True", "1 pod needs to be evicted in 1 namespace.", 1)
    await s.eventually(lambda: ("default", "pod-a") in running.evictor.pending, what="eviction scheduled")
    assert running.evictor.pending[("default", "pod-a")][1].when == START + 300

    clock.advance(299.999)
    await running.settle()
    assert not await _evicted(client, "pod-a"), "evicted before the toleration ran out"
    clock.advance(0.001)
    await s.eventually(lambda: _evicted(client, "pod-a"), what="pod evicted at +300 s")
    assert clock.now() == START + 300

    # The status follows at most every 10 s: still "pending" until the next refresh.
    await running.settle()
    clock.advance(10)

    async def completed() -> dict | None:
        cond = s.condition(await client.get(RULES, "maintenance"), "EvictionInProgress")
        return cond if cond and cond["reason"] == "Completed" else None

    cond = await s.eventually(completed, what="Completed")
    assert (cond["status"], cond["message"]) == ("False", "1 pod evicted since starting the controller.")
    assert cond["lastTransitionTime"] == clocks.rfc3339(START + 310)


async def test_taint_removed_before_deadline_cancels(client: clients.Client, clock: clocks.VirtualClock,
                                                     start_controllers: StartControllers) -> None:
    await _world(client, tolerations=[TOLERATE_300])
    running = await start_controllers(reporter=False)
    await s.taint_rule(client, "maintenance", effect="NoExecute")
    await s.eventually(lambda: ("default", "pod-a") in running.evictor.pending, what="eviction scheduled")
    clock.advance(100)
    await client.delete(RULES, "maintenance")

    async def cancelled() -> bool:
        return any(e["message"] == "Cancelling deletion" for e in await s.events_for(client, "pod-a"))

    await s.eventually(cancelled, what="Cancelling deletion event")
    assert ("default", "pod-a") not in running.evictor.pending
    clock.advance(300)
    await running.settle()
    assert not await _evicted(client, "pod-a")
    assert [e["message"] for e in await s.events_for(client, "pod-a")] == ["Cancelling deletion"]


async def test_slice_taint_at_newest_generation_evicts(client: clients.Client,
                                                       start_controllers: StartControllers) -> None:
    await s.node(client, "node-1")
    await s.resource_slice(client, "node-1", ["gpu-0"], name="old", generation=1)
    await s.allocated_claim(client, "claim-a", [("node-1", "gpu-0")])
    await s.bound_pod(client, "pod-a", "claim-a")
    running = await start_controllers(reporter=False)
    # A tainted device in an outdated generation does not count ...
    await s.resource_slice(client, "node-1", [{"name": "gpu-0", "taints": [
        {"key": "example.com/broken", "effect": "NoExecute"}]}], name="older", generation=0)
    await running.settle()
    assert not await _evicted(client, "pod-a")
    # ... the newest one does.
    await s.resource_slice(client, "node-1", [{"name": "gpu-0", "taints": [
        {"key": "example.com/broken", "effect": "NoExecute"}]}], name="newer", generation=2)
    await s.eventually(lambda: _evicted(client, "pod-a"), what="evicted by the slice taint")


async def test_pod_not_in_reserved_for_is_left_alone(client: clients.Client,
                                                     start_controllers: StartControllers) -> None:
    await s.node(client, "node-1")
    await s.resource_slice(client, "node-1", ["gpu-0"])
    await s.allocated_claim(client, "claim-a", [("node-1", "gpu-0")])
    pod = await client.create("pods", {"metadata": {"name": "stranger", "namespace": "default"}, "spec": {
        "nodeName": "node-1", "resourceClaims": [{"name": "gpu", "resourceClaimName": "claim-a"}],
        "containers": [{"name": "app", "image": "busybox"}]}})
    running = await start_controllers(reporter=False)
    await s.taint_rule(client, "maintenance", effect="NoExecute")
    await running.settle()
    assert not await _evicted(client, "stranger")
    cond = s.condition(await client.get(RULES, "maintenance"), "EvictionInProgress")
    assert cond is not None and (cond["status"], cond["reason"], cond["message"]) == ("False", "NotStarted", "")
    assert pod["metadata"]["uid"]


async def test_effect_none_reports_a_dry_run(client: clients.Client, start_controllers: StartControllers) -> None:
    await s.node(client, "node-1")
    await s.node(client, "node-2")
    await s.namespace(client, "team-b")
    await s.resource_slice(client, "node-1", ["gpu-0", "gpu-1", "gpu-2"])
    await s.resource_slice(client, "node-2", ["gpu-0"])
    await s.allocated_claim(client, "claim-a", [("node-1", "gpu-0")])
    await s.bound_pod(client, "pod-a", "claim-a")
    await s.allocated_claim(client, "claim-b", [("node-1", "gpu-1"), ("node-2", "gpu-0")], ns="team-b")
    await s.bound_pod(client, "pod-b", "claim-b", ns="team-b", node_name="node-2")
    # Tolerated for ever: allocated and selected, but would not be evicted.
    await s.allocated_claim(client, "claim-c", [("node-1", "gpu-2")], ns="team-b", tolerations=[
        {"key": "example.com/maintenance", "operator": "Exists", "effect": "NoExecute"}])
    await s.bound_pod(client, "pod-c", "claim-c", ns="team-b")
    running = await start_controllers(reporter=False)
    await s.taint_rule(client, "dry-run", effect="None")

    async def reported() -> dict | None:
        return s.condition(await client.get(RULES, "dry-run"), "EvictionInProgress")

    cond = await s.eventually(reported, what="NoEffect condition")
    assert (cond["status"], cond["reason"]) == ("False", "NoEffect")
    assert cond["message"] == (
        "4 published devices selected. 4 allocated devices selected. 2 pods would be evicted in 2 different "
        "namespaces if the effect was NoExecute. This information will not be updated again. Recreate the "
        "DeviceTaintRule to trigger an update.")
    await running.settle()
    for name, ns in (("pod-a", "default"), ("pod-b", "team-b"), ("pod-c", "team-b")):
        assert not await _evicted(client, name, ns)


async def test_other_effect_and_effect_change(client: clients.Client, clock: clocks.VirtualClock,
                                              start_controllers: StartControllers) -> None:
    await _world(client)
    running = await start_controllers(reporter=False)
    await s.taint_rule(client, "no-schedule", effect="NoSchedule")

    async def cond_of(reason: str) -> dict | None:
        cond = s.condition(await client.get(RULES, "no-schedule"), "EvictionInProgress")
        return cond if cond and cond["reason"] == reason else None

    cond = await s.eventually(lambda: cond_of("OtherEffect"), what="OtherEffect")
    assert (cond["status"], cond["message"], cond["observedGeneration"]) == (
        "False", "Eviction only happens for the NoExecute effect.", 1)
    assert not await _evicted(client, "pod-a")
    # A new generation is reported at once (no 10 s wait), and NoExecute evicts; the server
    # restarts timeAdded with the effect change.
    clock.advance(50)
    rule = await client.get(RULES, "no-schedule")
    rule["spec"]["taint"]["effect"] = "NoExecute"
    updated = await client.update(RULES, rule)
    assert updated["spec"]["taint"]["timeAdded"] == clocks.rfc3339(START + 50)
    await s.eventually(lambda: _evicted(client, "pod-a"), what="evicted after the effect change")
    await running.settle()
    clock.advance(10)
    cond = await s.eventually(lambda: cond_of("Completed"), what="Completed")
    assert cond["observedGeneration"] == 2
    assert cond["message"] == "1 pod evicted since starting the controller."
