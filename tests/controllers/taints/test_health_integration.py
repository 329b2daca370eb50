"""The device health reporter against an in-process API server on a VirtualClock: DeviceHealth
reports reach the pod's `allocatedResourcesStatus` and the claim's device `Ready` condition, go
`Unknown` after 30 s without updates, and (with the remediation policy) an unhealthy device gets a
DeviceTaintRule that the taint evictor acts on; `cplane device health set` through its CLI entry.

Out of scope: decision details with recorded writes (test_health_writes.py).
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from api import server as servers
from controllers import health
from controllers.runtime import client as clients
from cp import clock as clocks
from cp.cli import device as health_cli
from tests.controllers.taints import support as s
from tests.controllers.taints.conftest import START, StartControllers

RULES = "devicetaintrules.resource.k8s.io"
CLAIMS = "resourceclaims.resource.k8s.io"
GPU0 = f"{s.DRIVER}/node-1/gpu-0"


async def _world(client: clients.Client) -> None:
    await s.node(client, "node-1")
    await s.resource_slice(client, "node-1", ["gpu-0", "gpu-1"])
    for device in ("gpu-0", "gpu-1"):
        await client.create(health.DEVICE_HEALTHS, health.health_object(s.DRIVER, "node-1", device, "Healthy", "",
                                                                        START))
    await s.allocated_claim(client, "claim-a", [("node-1", "gpu-0")])
    await s.bound_pod(client, "pod-a", "claim-a")


def _health_of(pod: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    return [(e["name"], r["resourceID"], r["health"], r.get("message", ""))
            for e in s.resources_status(pod) for r in e["resources"]]


async def _pod_health(client: clients.Client, want: str) -> list | None:
    got = _health_of(await client.get("pods", "pod-a", namespace="default"))
    return got if got and all(h == want for _, _, h, _ in got) else None


async def test_health_reaches_pod_and_claim_status(client: clients.Client, clock: clocks.VirtualClock,
                                                   start_controllers: StartControllers) -> None:
    await _world(client)
    running = await start_controllers(evictor=False)
    got = await s.eventually(lambda: _pod_health(client, "Healthy"), what="Healthy in the pod status")
    assert got == [("claim:gpu", GPU0, "Healthy", "")]
    pod = await client.get("pods", "pod-a", namespace="default")
    app = pod["status"]["containerStatuses"][0]
    assert (app["name"], app["ready"], app["restartCount"]) == ("app", False, 0)

    clock.advance(5)
    await client.patch(health.DEVICE_HEALTHS, health.health_object_name(s.DRIVER, "node-1", "gpu-0"),
                       {"spec": {"health": "Unhealthy", "message": "ECC errors"}})
    got = await s.eventually(lambda: _pod_health(client, "Unhealthy"), what="Unhealthy in the pod status")
    assert got == [("claim:gpu", GPU0, "Unhealthy", "ECC errors")]

    async def claim_ready(status: str) -> dict | None:
        claim = await client.get(CLAIMS, "claim-a", namespace="default")
        for dev in claim["status"].get("devices") or []:
            cond = s.condition({"status": dev}, "Ready")
            if cond and cond["status"] == status:
                return {"device": dev, "condition": cond}
        return None

    found = await s.eventually(lambda: claim_ready("False"), what="Ready=False on the claim")
    assert (found["device"]["driver"], found["device"]["pool"], found["device"]["device"]) == (
        s.DRIVER, "node-1", "gpu-0")
    assert (found["condition"]["reason"], found["condition"]["message"]) == ("DeviceUnhealthy", "ECC errors")

    # 30 s after the last write without another report: Unknown.
    clock.advance(29)
    await running.settle()
    assert await _pod_health(client, "Unhealthy")
    clock.advance(1)
    got = await s.eventually(lambda: _pod_health(client, "Unknown"), what="Unknown after 30 s")
    assert got[0][3].startswith("no health update since ")

    # The driver reports again: healthy.
    await health.set_health(client, s.DRIVER, "node-1", "gpu-0", "healthy")
    await s.eventually(lambda: _pod_health(client, "Healthy"), what="Healthy again")
    found = await s.eventually(lambda: claim_ready("True"), what="Ready=True again")
    assert found["condition"]["reason"] == "DeviceHealthy"


async def test_request_names_and_containers(client: clients.Client, start_controllers: StartControllers) -> None:
    await s.node(client, "node-1")
    await s.resource_slice(client, "node-1", ["gpu-0", "gpu-1"])
    await health.set_health(client, s.DRIVER, "node-1", "gpu-1", "Unhealthy", "fan failure")
    await s.allocated_claim(client, "claim-a", [("node-1", "gpu-0"), ("node-1", "gpu-1")])
    await s.bound_pod(client, "pod-a", "claim-a", containers=[
        {"name": "app", "image": "busybox", "resources": {"claims": [{"name": "gpu", "request": "gpu"}]}},
        {"name": "sidecar", "image": "busybox"},
        {"name": "whole", "image": "busybox", "resources": {"claims": [{"name": "gpu"}]}}])
    await start_controllers(evictor=False)

    async def statuses() -> dict | None:
        pod = await client.get("pods", "pod-a", namespace="default")
        got = {cs["name"]: cs.get("allocatedResourcesStatus") for cs in pod["status"].get("containerStatuses") or []}
        return got or None

    got = await s.eventually(statuses, what="container statuses")
    assert set(got) == {"app", "whole"}  # the sidecar uses no claim
    assert got["app"] == [{"name": "claim:gpu/gpu", "resources": [
        {"resourceID": f"{s.DRIVER}/node-1/gpu-0", "health": "Unknown"},
        {"resourceID": f"{s.DRIVER}/node-1/gpu-1", "health": "Unhealthy", "message": "fan failure"}]}]
    assert got["whole"][0]["name"] == "claim:gpu"


async def test_remediation_taints_evicts_and_untaints(client: clients.Client, clock: clocks.VirtualClock,
                                                      start_controllers: StartControllers) -> None:
    await _world(client)
    await start_controllers(taint_unhealthy="NoExecute")
    await s.eventually(lambda: _pod_health(client, "Healthy"), what="Healthy in the pod status")
    name = health.health_object_name(s.DRIVER, "node-1", "gpu-0")
    await health.set_health(client, s.DRIVER, "node-1", "gpu-0", "Unhealthy", "XID 79")
    rule_name = health.rule_name_for(name)
    rule = await s.eventually(lambda: s.get_or_none(client, RULES, rule_name), what="DeviceTaintRule created")
    assert rule["spec"]["deviceSelector"] == {"driver": s.DRIVER, "pool": "node-1", "device": "gpu-0"}
    assert (rule["spec"]["taint"]["key"], rule["spec"]["taint"]["effect"]) == (health.TAINT_KEY, "NoExecute")
    assert rule["metadata"]["ownerReferences"][0]["name"] == name

    async def evicted() -> dict | None:
        pod = await client.get("pods", "pod-a", namespace="default")
        return pod if pod["metadata"].get("deletionTimestamp") else None

    pod = await s.eventually(evicted, what="pod evicted")
    assert s.condition(pod, "DisruptionTarget")["reason"] == "DeletionByDeviceTaintManager"
    # The report it was evicted for is in its status too.
    assert ("claim:gpu", GPU0, "Unhealthy", "XID 79") in _health_of(pod)

    await health.set_health(client, s.DRIVER, "node-1", "gpu-0", "Healthy")

    async def untainted() -> bool:
        return await s.get_or_none(client, RULES, rule_name) is None

    await s.eventually(untainted, what="DeviceTaintRule removed")


async def test_cli_set_health(srv: servers.Running, client: clients.Client, clock: clocks.VirtualClock,
                              start_controllers: StartControllers) -> None:
    await _world(client)
    await start_controllers(evictor=False)
    parser = argparse.ArgumentParser(prog="cplane")
    health_cli.add_parser(parser.add_subparsers(dest="command"))
    await s.advance_server_clock(client, 60)  # the CLI stamps reports with the server's clock
    assert clock.now() == START + 60
    args = parser.parse_args(["device", "health", "set", f"{s.DRIVER}/node-1/gpu-0", "unhealthy",
                              "--message", "thermal trip", "--server", srv.url])
    code = await asyncio.get_running_loop().run_in_executor(None, args.func, args)
    assert code == 0
    got = await s.eventually(lambda: _pod_health(client, "Unhealthy"), what="Unhealthy via the CLI")
    assert got == [("claim:gpu", GPU0, "Unhealthy", "thermal trip")]
    dh = await client.get(health.DEVICE_HEALTHS, health.health_object_name(s.DRIVER, "node-1", "gpu-0"))
    assert dh["spec"]["lastUpdated"] == clocks.rfc3339(START + 60)
