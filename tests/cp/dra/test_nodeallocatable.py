"""cp/dra/nodeallocatable.py: what allocated devices take of a node (KEP-5517), as upstream's
`buildNodeAllocatableDRAInfo`, `addDRANodeAllocatableClaimResources` and
`validatePodLevelResourcesCoverDRA` compute it."""

from __future__ import annotations

from typing import Any

import pytest

from cp.dra import nodeallocatable
from cp.scheduling import plugins

DRIVER = "dra.example.com"

DEVICES: dict[str, dict[str, Any]] = {
    "cpu-0": {"name": "cpu-0", "nodeAllocatableResources": {"cpu": {"mapping": {"deviceMultiplier": "2"}}}},
    "cpu-1": {"name": "cpu-1", "nodeAllocatableResources": {"cpu": {"mapping": {"deviceMultiplier": "2"}}}},
    "socket-0": {"name": "socket-0", "nodeAllocatableResources": {
        "cpu": {"mapping": {"capacityKey": "cores", "capacityMultiplier": "2"}},
        "memory": {"mapping": {"capacityKey": f"{DRIVER}/memory", "capacityMultiplier": "1"}}}},
    "xpu-0": {"name": "xpu-0", "nodeAllocatableResources": {
        "memory": {"overhead": {"perPod": "1Gi", "perContainer": "500Mi"}}}},
    "gpu-0": {"name": "gpu-0"},
}


def lookup(driver: str, pool: str, device: str) -> dict[str, Any] | None:
    return DEVICES.get(device) if driver == DRIVER else None


def result(device: str, **extra: Any) -> dict[str, Any]:
    return {"request": "r", "driver": DRIVER, "pool": "node-1", "device": device, **extra}


def claim(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default"}}


def alloc(*results: dict[str, Any]) -> dict[str, Any]:
    return {"devices": {"results": list(results)}}


def pod(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "resourceClaims": [{"name": "cpus", "resourceClaimName": "cpu-claim"},
                           {"name": "xpu", "resourceClaimTemplateName": "xpu-template"}],
        "initContainers": [{"name": "init", "resources": {"claims": [{"name": "xpu"}]}}],
        "containers": [{"name": "a", "resources": {"claims": [{"name": "cpus"}, {"name": "xpu"}],
                                                   "requests": {"cpu": "500m"}}},
                       {"name": "b", "resources": {"claims": [{"name": "xpu"}]}}],
        **spec}
    return {"metadata": {"name": "p", "namespace": "default"}, "spec": body,
            "status": {"resourceClaimStatuses": [{"name": "xpu", "resourceClaimName": "p-xpu-abcde"}]}}


def test_device_counts_capacity_and_overheads() -> None:
    statuses = nodeallocatable.claim_statuses(pod=pod(), device=lookup, claims=[
        (claim("p-xpu-abcde"), alloc(result("xpu-0"), result("gpu-0"))),
        (claim("cpu-claim"), alloc(result("cpu-0"), result("cpu-1"),
                                   result("socket-0", consumedCapacity={"cores": "3", "memory": "4Gi"}))),
        (claim("gpus"), alloc(result("gpu-0"))),  # no device of it maps anything
        (claim("unallocated"), None),
    ])
    assert statuses == [
        {"resourceClaimName": "cpu-claim", "containers": ["a"],
         "mapping": [{"name": "cpu", "quantity": "10"}, {"name": "memory", "quantity": "4Gi"}]},
        {"resourceClaimName": "p-xpu-abcde", "containers": ["init", "a", "b"],
         "overhead": [{"name": "memory", "perPod": "1Gi", "perContainer": "500Mi"}]},
    ]
    # each claim once; an overhead's perContainer once per container using the claim
    assert {k: v.canonical() for k, v in nodeallocatable.requests(statuses).items()} == {
        "cpu": "10", "memory": "6620Mi"}  # 4Gi + 1Gi + 3 x 500Mi
    assert {k: v.canonical() for k, v in nodeallocatable.container_allocations(statuses, "b").items()} == {
        "memory": "1524Mi"}
    # the scheduler's sums: the containers (500m) plus the claims
    with_claims = {**pod(), "status": {"nodeAllocatableResourceClaimStatuses": statuses}}
    req = plugins.pod_requests(with_claims, node_allocatable_claims=True).requests
    assert (req.cpu, req.memory) == (10_500, (4 + 1) * 2**30 + 3 * 500 * 2**20)
    assert plugins.pod_requests(with_claims).requests.cpu == 500  # without the gate: spec only


def test_capacity_not_consumed_maps_nothing_and_none_consumed_is_an_error() -> None:
    assert nodeallocatable.claim_statuses(pod=pod(), device=lookup, claims=[
        (claim("cpu-claim"), alloc(result("socket-0", consumedCapacity={"other": "1"})))]) == []
    with pytest.raises(nodeallocatable.FootprintError, match="ConsumedCapacity is nil, but Capacity key 'cores'"):
        nodeallocatable.claim_statuses(pod=pod(), device=lookup, claims=[(claim("cpu-claim"), alloc(result("socket-0")))])


def test_pod_level_resources_must_cover_the_claims() -> None:
    statuses = [{"resourceClaimName": "cpu-claim", "containers": ["a"], "mapping": [{"name": "cpu", "quantity": "4"}]}]
    fits = pod(resources={"requests": {"cpu": "4500m"}})
    assert nodeallocatable.pod_level_shortfall(fits, statuses) is None
    assert nodeallocatable.pod_level_shortfall(pod(resources={"requests": {"cpu": "4"}}), statuses) == (
        "pod level request for cpu is insufficient to cover the aggregated container and node-allocatable DRA "
        "requests")
    limited = pod(resources={"limits": {"cpu": "4"}})
    limited["spec"]["containers"][0]["resources"]["limits"] = {"cpu": "1"}
    assert nodeallocatable.pod_level_shortfall(limited, statuses) == (
        "pod level limit for cpu is insufficient to cover the limit and DRA overhead for container a")
    assert nodeallocatable.pod_level_shortfall(pod(), statuses) is None  # no pod-level resources


def test_fit_against_the_node() -> None:
    node = {"status": {"allocatable": {"cpu": "4", "memory": "8Gi", "hugepages-2Mi": "1Gi", "pods": "10"}}}
    alloc_ = plugins.Allocatable(node)
    usage = plugins.NodeUsage()
    usage.add(plugins.pod_requests({"spec": {"containers": [{"resources": {"requests": {"cpu": "3"}}}]}}), "")
    want = plugins.Resources.of({"cpu": "2", "hugepages-2Mi": "2Gi"})
    status = plugins.node_allocatable_fit(want, alloc_, usage, plugin="DynamicResources")
    assert status is not None and status.reasons == ["Insufficient cpu", "Insufficient hugepages-2Mi"]
    assert status.code == plugins.UNRESOLVABLE  # 2Gi of hugepages exceeds the whole node
    status = plugins.node_allocatable_fit(plugins.Resources.of({"cpu": "2"}), alloc_, usage, plugin="DynamicResources")
    assert status is not None and status.code == plugins.UNSCHEDULABLE
    assert plugins.node_allocatable_fit(plugins.Resources.of({"cpu": "1"}), alloc_, usage, plugin="x") is None
