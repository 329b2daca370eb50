"""What a ResourcePoolStatusRequest reports (`cp.dra.poolstatus`): incomplete pools, taints from
DeviceTaintRules, shareable devices' capacity."""

from __future__ import annotations

from typing import Any

from cp.dra import poolstatus

NOW = "2026-12-05T12:00:00Z"


def req(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "r"}, "spec": {"driver": "d.example.com", "limit": 100, **spec}}


def sl(pool: str, devices: list[dict[str, Any]], *, count: int = 1, generation: int = 1,
       node: str = "n") -> dict[str, Any]:
    return {"spec": {"driver": "d.example.com", "nodeName": node, "devices": devices,
                     "pool": {"name": pool, "generation": generation, "resourceSliceCount": count}}}


def test_an_incomplete_pool_has_no_counts_and_asks_for_a_retry() -> None:
    out = poolstatus.compute(req(), slices=[sl("p", [{"name": "a"}], count=2)], claims=[], now=NOW)
    assert out.incomplete
    [pool] = out.status["pools"]
    assert pool == {"driver": "d.example.com", "poolName": "p", "generation": 1, "nodeName": "n",
                    "validationError": "PoolIncomplete: pool d.example.com/p is incomplete: observed 1/2 slices "
                                       "at generation 1"}


def test_slices_on_several_nodes_leave_the_node_out() -> None:
    out = poolstatus.compute(req(), slices=[sl("p", [{"name": "a"}], count=2, node="n1"),
                                            sl("p", [{"name": "b"}], count=2, node="n2")], claims=[], now=NOW)
    assert not out.incomplete
    [pool] = out.status["pools"]
    assert "nodeName" not in pool and pool["resourceSliceCount"] == 2 and pool["totalDevices"] == 2


def test_taint_rules_make_devices_unavailable() -> None:
    slices = [sl("p", [{"name": "a"}, {"name": "b"}, {"name": "c"}])]
    rules = [{"spec": {"deviceSelector": {"driver": "d.example.com", "device": "a"},
                       "taint": {"key": "k", "effect": "NoExecute"}}},
             {"spec": {"deviceSelector": {"pool": "p"}, "taint": {"key": "k", "effect": "None"}}},
             {"spec": {"taint": {"key": "k", "effect": "NoSchedule"}}}]  # no selector: matches nothing
    [pool] = poolstatus.compute(req(), slices=slices, claims=[], taint_rules=rules, now=NOW).status["pools"]
    assert (pool["unavailableDevices"], pool["availableDevices"]) == (1, 2)
    [pool] = poolstatus.compute(req(), slices=slices, claims=[], now=NOW).status["pools"]
    assert pool["unavailableDevices"] == 0


def test_shareable_summary() -> None:
    devices = [{"name": "s0", "allowMultipleAllocations": True, "capacity": {"memory": {"value": "40Gi"}}},
               {"name": "s1", "allowMultipleAllocations": True, "capacity": {"memory": {"value": "40Gi"}}},
               {"name": "plain"}]
    claims = [{"status": {"allocation": {"devices": {"results": [
        {"driver": "d.example.com", "pool": "p", "device": "s0", "consumedCapacity": {"memory": "10Gi"}}]}}}},
        {"status": {"allocation": {"devices": {"results": [
            {"driver": "d.example.com", "pool": "p", "device": "s0", "consumedCapacity": {"memory": "20Gi"}}]}}}}]
    [pool] = poolstatus.compute(req(), slices=[sl("p", devices)], claims=claims, now=NOW).status["pools"]
    assert (pool["totalDevices"], pool["allocatedDevices"], pool["availableDevices"]) == (3, 1, 2)
    assert pool["shareableSummary"] == {
        "fullyAvailableDevices": 1, "partiallyAvailableDevices": 1,
        "capacity": [{"name": "memory", "total": "80Gi", "consumed": "30Gi", "available": "50Gi"}]}


def test_no_pools() -> None:
    status = poolstatus.compute(req(), slices=[], claims=[], now=NOW).status
    assert status["poolCount"] == 0 and "pools" not in status
    assert status["conditions"][0]["message"] == "Calculated status for 0 pools"



def _mig(name: str, profile: str, memory: str) -> dict[str, Any]:
    return {"name": name, "attributes": {"profile": {"string": profile}},
            "consumesCounters": [{"counterSet": "gpu-0", "counters": {"memory": {"value": memory}}}]}


def _mig_pool(*, declared: bool) -> list[dict[str, Any]]:
    devices = sl("p", [_mig("full", "Full", "8Gi"), _mig("half-0", "Half", "4Gi"), _mig("half-1", "Half", "4Gi"),
                       {"name": "plain"}], count=2)
    if declared:
        devices["spec"]["partitionTypeAttribute"] = "d.example.com/profile"
    counters = sl("p", [], count=2)
    counters["spec"]["sharedCounters"] = [{"name": "gpu-0", "counters": {"memory": {"value": "8Gi"}}}]
    del counters["spec"]["devices"]
    return [devices, counters]


def _allocated(*devices: str) -> list[dict[str, Any]]:
    return [{"status": {"allocation": {"devices": {"results": [
        {"driver": "d.example.com", "pool": "p", "device": d} for d in devices]}}}}]


def test_partition_summary_counts_what_the_counters_still_allow() -> None:
    [pool] = poolstatus.compute(req(), slices=_mig_pool(declared=True), claims=_allocated("half-0"), now=NOW,
                                partition_types=True).status["pools"]
    # half-0 holds 4Gi of the GPU's 8Gi: the full GPU no longer fits, one more half does
    assert pool["partitionSummary"] == [
        {"attribute": "d.example.com/profile", "type": "Full", "total": 1, "allocatable": 0},
        {"attribute": "d.example.com/profile", "type": "Half", "total": 2, "allocatable": 1}]
    [pool] = poolstatus.compute(req(), slices=_mig_pool(declared=True), claims=[], now=NOW,
                                partition_types=True).status["pools"]
    assert [p["allocatable"] for p in pool["partitionSummary"]] == [1, 2]


def test_partition_summary_needs_an_attribute_and_the_gate() -> None:
    slices = _mig_pool(declared=False)
    [pool] = poolstatus.compute(req(), slices=slices, claims=[], now=NOW, partition_types=True).status["pools"]
    assert "partitionSummary" not in pool
    [pool] = poolstatus.compute(req(defaultPartitionTypeAttribute="d.example.com/profile"), slices=slices,
                                claims=[], now=NOW, partition_types=True).status["pools"]
    assert [(p["type"], p["total"]) for p in pool["partitionSummary"]] == [("Full", 1), ("Half", 2)]
    [pool] = poolstatus.compute(req(), slices=_mig_pool(declared=True), claims=[], now=NOW).status["pools"]
    assert "partitionSummary" not in pool
