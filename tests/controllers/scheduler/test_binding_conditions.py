"""Binding conditions (KEP-5007) end to end through the API, on the virtual clock: a device whose
slice declares `bindingConditions` is allocated (with `allocationTimestamp`), the claim is reserved,
and the pod waits in PreBind — with a `BindingConditionsPending` Event, without holding up other
pods — until a driver (this test) reports the conditions True in `claim.status.devices`; a True
failure condition or `bindingTimeout` (600 s of the virtual clock) fails the binding cycle with
upstream's message, the reservation is undone, and the next attempt deallocates the claim
(PostFilter), clearing its `status.devices` entries, before allocating it afresh."""

from __future__ import annotations

from typing import Any

from controllers.runtime import client as clients
from cp import clock as clocks
from tests.controllers.scheduler import support as s
from tests.controllers.scheduler.conftest import Cluster, StartCluster

DRIVER = "fabric.example.com"
NODE = "cpu-0"  # the fleet's node without devices: the fabric devices attach to it
PREBIND = 'running PreBind plugin "DynamicResources": '


async def _fabric(client: clients.Client) -> None:
    """A slice of fabric-attached devices for NODE (two with binding conditions) and their class."""
    devices = [{"name": f"fabric-{i}", "bindsToNode": True, "bindingConditions": ["example.com/attached"],
                "bindingFailureConditions": ["example.com/attach-failed"]} for i in range(2)]
    await client.create(s.SLICES, {"metadata": {"name": "fabric"}, "spec": {
        "driver": DRIVER, "nodeName": NODE, "pool": {"name": "fabric", "generation": 1, "resourceSliceCount": 1},
        "devices": devices}})
    await client.create(s.CLASSES, {"metadata": {"name": "fabric"}, "spec": {"selectors": [
        {"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})
    await s.claim(client, "attach", s.claim_spec(s.request(device_class="fabric")))


async def _allocated(client: clients.Client) -> dict[str, Any]:
    async def allocated() -> dict[str, Any] | None:
        claim = await s.get(client, s.CLAIMS, "attach")
        status = (claim or {}).get("status") or {}
        return claim if status.get("allocation") and status.get("reservedFor") else None
    return await s.eventually(allocated, what="claim attach allocated and reserved")  # type: ignore[no-any-return]


async def _report(client: clients.Client, claim: dict[str, Any], *conditions: tuple[str, str, str]) -> None:
    """The driver's write: conditions for the allocated device in status.devices."""
    [result] = claim["status"]["allocation"]["devices"]["results"]
    now = clocks.rfc3339(0)
    claim["status"]["devices"] = [{"driver": result["driver"], "pool": result["pool"], "device": result["device"],
                                   "conditions": [{"type": t, "status": st, "reason": reason, "message": "fabric says so",
                                                   "lastTransitionTime": now} for t, st, reason in conditions]}]
    await client.update_status(s.CLAIMS, claim)


async def _start(client: clients.Client, start_cluster: StartCluster, **kwargs: Any) -> Cluster:
    cluster = await start_cluster(**kwargs)
    await _fabric(client)
    await client.create("pods", s.pod("attached", claim="attach"))
    return cluster


async def test_pod_waits_until_the_driver_reports_the_binding_conditions(
        client: clients.Client, clock: clocks.VirtualClock, start_cluster: StartCluster) -> None:
    cluster = await _start(client, start_cluster, workers=1)  # the waiting pod must not hold the one worker
    claim = await _allocated(client)
    allocation = claim["status"]["allocation"]
    [result] = allocation["devices"]["results"]
    assert result["bindingConditions"] == ["example.com/attached"]
    assert result["bindingFailureConditions"] == ["example.com/attach-failed"]
    assert allocation["allocationTimestamp"] == clocks.rfc3339(clock.now())
    assert allocation["nodeSelector"] == {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": [NODE]}]}]}  # bindsToNode
    [event] = await s.eventually(lambda: s.events_for(client, "attached", reason="BindingConditionsPending"),
                                 what="BindingConditionsPending event")
    assert event["type"] == "Normal" and event["message"] == f"waiting for binding conditions for device on node {NODE}"

    # Waiting pods hold no worker and no scheduling cycle: another pod schedules meanwhile.
    await client.create("pods", s.pod("plain"))
    assert await s.wait_bound(client, "plain")
    await cluster.settle()
    assert await s.bound_node(client, "attached") == ""
    clock.advance(300)  # half the binding timeout: still waiting
    await cluster.settle()
    assert await s.bound_node(client, "attached") == ""

    await _report(client, claim, ("example.com/attached", "True", "Attached"))
    assert await s.wait_bound(client, "attached") == NODE
    assert cluster.scheduler.stats.binding_failures == 0


async def test_failure_condition_fails_the_binding_and_the_claim_is_deallocated(
        client: clients.Client, clock: clocks.VirtualClock, start_cluster: StartCluster) -> None:
    cluster = await _start(client, start_cluster)
    claim = await _allocated(client)
    await _report(client, claim, ("example.com/attached", "False", "Attaching"),
                  ("example.com/attach-failed", "True", "NoPath"))
    cond = await s.wait_unschedulable(client, "attached", reason="SchedulerError")
    assert cond["message"] == (PREBIND + 'device binding failed: claim=attach, reason=NoPath, '
                               'message="fabric says so"')
    assert cluster.scheduler.stats.binding_failures == 1
    # Unreserve: the pod's reservedFor entry is gone; the allocation stays until the next attempt.
    after = await s.get(client, s.CLAIMS, "attach")
    assert after is not None and not after["status"].get("reservedFor") and after["status"].get("allocation")

    # After the backoff the pod is tried again: Filter finds the claim unavailable, PostFilter
    # deallocates it (allocation, reservedFor and the devices' status entries cleared).
    clock.advance(1)

    async def deallocated() -> bool:
        current = await s.get(client, s.CLAIMS, "attach")
        return current is not None and not current["status"].get("devices") and \
            current["status"].get("allocation", {}).get("allocationTimestamp") != \
            claim["status"]["allocation"]["allocationTimestamp"]
    clock.advance(1)
    await s.eventually(deallocated, what="claim deallocated and allocated afresh")
    # ... and allocated afresh for the next attempt, which waits for the conditions again.
    again = await _allocated(client)
    assert not again["status"].get("devices")
    assert await s.bound_node(client, "attached") == ""


async def test_binding_times_out_after_binding_timeout_on_the_virtual_clock(
        client: clients.Client, clock: clocks.VirtualClock, start_cluster: StartCluster) -> None:
    cluster = await _start(client, start_cluster)
    first = await _allocated(client)
    await cluster.settle()
    clock.advance(599)
    await cluster.settle()
    assert cluster.scheduler.stats.binding_failures == 0
    clock.advance(1)
    cond = await s.wait_unschedulable(client, "attached", reason="SchedulerError")
    assert cond["message"] == PREBIND + "device binding timeout: context deadline exceeded"
    # The next attempt finds the allocation timed out and deallocates it, then allocates again.
    clock.advance(2)

    async def reallocated() -> bool:
        current = await s.get(client, s.CLAIMS, "attach")
        alloc = ((current or {}).get("status") or {}).get("allocation") or {}
        return bool(alloc) and alloc.get("allocationTimestamp") != first["status"]["allocation"]["allocationTimestamp"]
    await s.eventually(reallocated, what="claim deallocated and allocated afresh")
    assert await s.bound_node(client, "attached") == ""


async def test_custom_binding_timeout(client: clients.Client, clock: clocks.VirtualClock,
                                      start_cluster: StartCluster) -> None:
    cluster = await start_cluster(binding_timeout=30.0)
    await _fabric(client)
    await client.create("pods", s.pod("attached", claim="attach"))
    await _allocated(client)
    await cluster.settle()
    clock.advance(30)
    cond = await s.wait_unschedulable(client, "attached", reason="SchedulerError")
    assert cond["message"] == PREBIND + "device binding timeout: context deadline exceeded"


async def test_claim_allocated_earlier_times_out_from_its_allocation_timestamp(
        client: clients.Client, clock: clocks.VirtualClock, start_cluster: StartCluster) -> None:
    """upstream "prebind-fail-with-binding-timeout": the claim was allocated 590 s ago; the pod
    reserving it now waits 10 s more, not a fresh bindingTimeout."""
    cluster = await start_cluster()
    await _fabric(client)
    claim = await s.get(client, s.CLAIMS, "attach")
    assert claim is not None
    claim["status"] = {"allocation": {
        "devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "fabric", "device": "fabric-0",
                                 "bindingConditions": ["example.com/attached"],
                                 "bindingFailureConditions": ["example.com/attach-failed"]}]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [NODE]}]}]},
        "allocationTimestamp": clocks.rfc3339(clock.now() - 590)}}
    await client.update_status(s.CLAIMS, claim)
    await client.create("pods", s.pod("attached", claim="attach"))
    await _allocated(client)  # reserved for the pod, which now waits
    await cluster.settle()
    clock.advance(9)
    await cluster.settle()
    assert cluster.scheduler.stats.binding_failures == 0
    clock.advance(2)
    cond = await s.wait_unschedulable(client, "attached", reason="SchedulerError")
    assert cond["message"] == PREBIND + "device binding timeout: claim=attach"
