"""DRANodeAllocatableResources (KEP-5517) end to end: a CPU driver's devices map onto the node's cpu
(`nodeAllocatableResources`), so with the gate on (server and scheduler) a pod whose claim gets two of
them takes two cpus of the node: it does not fit a node whose allocatable cpu is mostly requested
already, its status records what it took (`nodeAllocatableResourceClaimStatuses`), and the next pod
sees that cpu taken. With the gate off the devices are only devices: the same pods fit."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from api import server as servers
from controllers.runtime import client as clients
from cp import clock as clocks
from cp import features
from tests.controllers.scheduler import support as s
from tests.controllers.scheduler.conftest import StartCluster

CPU_DRIVER = "cpu.example.com"
NODE = "cpu-0"
ON = features.FeatureGates({features.DRA_NODE_ALLOCATABLE_RESOURCES: True})
OFF = features.DEFAULT

# One node with 4 cpus; its CPU driver's slice is written by the test.
FLEET = {
    "apiVersion": "sim.cplane.dev/v1alpha1", "kind": "Fleet", "metadata": {"name": "cpus"},
    "deviceClasses": [{"name": CPU_DRIVER, "driver": CPU_DRIVER}],
    "nodePools": [{"name": "cpu", "count": 1, "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"}}],
}


@pytest.fixture(params=[ON, OFF], ids=["gate-on", "gate-off"])
def gates(request: pytest.FixtureRequest) -> features.FeatureGates:
    gates: features.FeatureGates = request.param
    return gates


@pytest.fixture
async def srv(tmp_path: Path, clock: clocks.Clock, gates: features.FeatureGates) -> AsyncIterator[servers.Running]:
    async with servers.running(data_dir=tmp_path / "data", db_url="memory:", clock=clock,
                               app_options={"feature_gates": gates}) as running:
        yield running


def cpu_slice(cores: int = 4) -> dict[str, Any]:
    """A CPU driver's slice: one device per core, each one cpu of the node."""
    return {"metadata": {"name": f"{NODE}-cpus"}, "spec": {
        "driver": CPU_DRIVER, "nodeName": NODE, "pool": {"name": NODE, "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": f"cpu-{i}", "attributes": {"numaNode": {"int": 0}},
                     "nodeAllocatableResources": {"cpu": {"mapping": {"deviceMultiplier": "1"}}}}
                    for i in range(cores)]}}


async def start(client: clients.Client, start_cluster: StartCluster, gates: features.FeatureGates) -> None:
    await start_cluster(fleet=FLEET, feature_gates=gates)
    created = await client.create(s.SLICES, cpu_slice())
    assert ("nodeAllocatableResources" in created["spec"]["devices"][0]) == (gates is ON)


def cpu_claim_pod(name: str, claim: str) -> dict[str, Any]:
    return s.pod(name, claim=claim)


async def test_claimed_cpus_do_not_fit_a_busy_node(client: clients.Client, start_cluster: StartCluster,
                                                    gates: features.FeatureGates) -> None:
    await start(client, start_cluster, gates)
    await client.create("pods", s.pod("busy", requests={"cpu": "3"}))
    assert await s.wait_bound(client, "busy") == NODE
    await s.claim(client, "two-cpus", s.claim_spec(s.request("cpus", count=2, device_class=CPU_DRIVER)))
    await client.create("pods", cpu_claim_pod("worker", "two-cpus"))
    if gates is ON:  # 3 of 4 cpus requested, the claim's devices take 2 more
        cond = await s.wait_unschedulable(client, "worker")
        assert cond["message"].startswith("0/1 nodes are available: 1 Insufficient cpu."), cond["message"]
        worker = await s.get(client, "pods", "worker")
        assert "nodeAllocatableResourceClaimStatuses" not in (worker or {}).get("status", {})
        # the busy pod goes (an assigned pod deleted: DynamicResources' event): now it fits
        await client.delete("pods", "busy", namespace="default", grace_period_seconds=0)
        assert await s.wait_bound(client, "worker") == NODE
    else:  # the devices are only devices: the pod requests nothing of the node
        assert await s.wait_bound(client, "worker") == NODE


async def test_claimed_cpus_are_recorded_and_counted(client: clients.Client, start_cluster: StartCluster,
                                                     gates: features.FeatureGates) -> None:
    await start(client, start_cluster, gates)
    await s.claim(client, "two-cpus", s.claim_spec(s.request("cpus", count=2, device_class=CPU_DRIVER)))
    await client.create("pods", cpu_claim_pod("worker", "two-cpus"))
    assert await s.wait_bound(client, "worker") == NODE
    worker = await s.get(client, "pods", "worker")
    assert worker is not None
    if gates is ON:
        assert worker["status"]["nodeAllocatableResourceClaimStatuses"] == [
            {"resourceClaimName": "two-cpus", "containers": ["app"], "mapping": [{"name": "cpu", "quantity": "2"}]}]
    else:
        assert "nodeAllocatableResourceClaimStatuses" not in worker["status"]
    # 4 cpus: the worker's claim took 2 (gate on), so 3 more do not fit; with the gate off they do
    await client.create("pods", s.pod("more", requests={"cpu": "3"}))
    if gates is ON:
        cond = await s.wait_unschedulable(client, "more")
        assert cond["message"].startswith("0/1 nodes are available: 1 Insufficient cpu."), cond["message"]
    else:
        assert await s.wait_bound(client, "more") == NODE


async def test_a_claim_with_mapped_devices_is_not_shared(client: clients.Client, start_cluster: StartCluster,
                                                         gates: features.FeatureGates) -> None:
    await start(client, start_cluster, gates)
    await s.claim(client, "one-cpu", s.claim_spec(s.request("cpus", count=1, device_class=CPU_DRIVER)))
    await client.create("pods", cpu_claim_pod("first", "one-cpu"))
    assert await s.wait_bound(client, "first") == NODE
    await client.create("pods", cpu_claim_pod("second", "one-cpu"))
    if gates is ON:
        cond = await s.wait_unschedulable(client, "second")
        assert ("node allocatable resource claim one-cpu has a mapped device and cannot be shared across pods"
                in cond["message"]), cond["message"]
    else:
        assert await s.wait_bound(client, "second") == NODE
