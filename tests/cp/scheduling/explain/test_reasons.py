"""One scenario per rejection reason: the explanation names exactly that reason and the object
responsible, and (where one exists) the smallest change that would make the pod fit."""

from __future__ import annotations

from typing import Any

import pytest

from cp.dra import Features
from cp.scheduling import explain

from .support import (
    GPU,
    claim,
    device,
    device_class,
    gpus,
    node,
    node_view,
    pod,
    reasons,
    request,
    request_view,
    rslice,
    snapshot,
    taint_rule,
    why,
)

MINE = "web-0-gpu"


def _one(rv: dict[str, Any], reason: str) -> dict[str, Any]:
    found = [r for r in rv["rejections"] if r["reason"] == reason]
    assert len(found) == 1, rv["rejections"]
    return found[0]


def _first_change(doc: dict[str, Any]) -> str:
    assert doc["suggestions"], doc.get("suggestions")
    return str(doc["suggestions"][0]["message"])


# ----------------------------------------------------------------------------- before DRA


def test_node_selector_filters_before_dra() -> None:
    snap = snapshot(pod("web-0", MINE, node_selector={"zone": "a"}), claim(MINE),
                    node("node-1", labels={"zone": "b"}), rslice("s1", "node-1", *gpus(1)))
    doc = why(snap)
    v = node_view(doc, "node-1")
    assert v["filter"]["plugin"] == "NodeAffinity"
    assert v["filter"]["reasons"] == ["node(s) didn't match Pod's node affinity/selector"]
    assert v["filter"]["checks"][0]["message"] == "nodeSelector zone=a (node has b)"
    assert "dra" not in v
    assert doc["verdict"] == "Unschedulable"
    assert doc["upstreamMessage"].startswith("0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector.")
    assert doc["suggestions"][0]["kind"] == "drop-affinity"


def test_node_taint_names_the_taint_and_suggests_a_toleration() -> None:
    snap = snapshot(pod("web-0", MINE), claim(MINE),
                    node("node-1", taints=[{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}]),
                    rslice("s1", "node-1", *gpus(1)))
    doc = why(snap)
    check = node_view(doc, "node-1")["filter"]["checks"][0]
    assert check["plugin"] == "TaintToleration"
    assert check["message"] == "untolerated node taint dedicated=ml:NoSchedule"
    assert _first_change(doc) == "node-1 would fit if the pod tolerated node taint dedicated=ml:NoSchedule"


def test_cpu_memory_and_pod_count_with_numbers() -> None:
    snap = snapshot(pod("web-0", cpu="6", memory="4Gi"),
                    pod("busy", node_name="node-1", cpu="4", memory="30Gi", phase="Running"),
                    node("node-1", cpu="8", memory="32Gi"),
                    pod("one", node_name="node-2", phase="Running"), node("node-2", pods="1"))
    doc = why(snap)
    fit = node_view(doc, "node-1")["filter"]
    assert fit["plugin"] == "NodeResourcesFit"
    assert fit["reasons"] == ["Insufficient cpu", "Insufficient memory"]
    assert fit["checks"][0]["message"] == ("cpu: requests 6, 4 free of 8 allocatable; "
                                           "memory: requests 4Gi, 2Gi free of 32Gi allocatable")
    assert node_view(doc, "node-2")["filter"]["checks"][0]["message"].startswith("too many pods (1 of 1 allowed)")


def test_cordoned_node() -> None:
    snap = snapshot(pod("web-0"), node("node-1", unschedulable=True))
    doc = why(snap)
    assert node_view(doc, "node-1")["filter"]["plugin"] == "NodeUnschedulable"
    assert _first_change(doc) == "node-1 would fit if node node-1 were uncordoned"


# ----------------------------------------------------------------------------- DRA: selectors


def test_class_selector_false_names_the_class_and_expression() -> None:
    expr = f'device.attributes["{GPU}"].model == "H100"'
    snap = snapshot(pod("web-0", MINE), claim(MINE), node("node-1"), device_class(expression=expr),
                    rslice("s1", "node-1", *gpus(2, attrs={"model": "A100"})))
    doc = why(snap)
    rv = request_view(doc, "node-1")
    rej = _one(rv, "class-selector")
    assert rej["count"] == 2
    assert rej["detail"] == {"class": "gpu", "index": 0, "expression": expr}
    assert rej["message"] == f"2 devices rejected by DeviceClass gpu selector #0 `{expr}` (gpu-0, gpu-1)"
    assert (rv["considered"], rv["usable"]) == (2, 0)
    assert doc["suggestions"][0]["kind"] == "drop-class-selector"
    assert doc["suggestions"][0]["objects"] == ["DeviceClass/gpu"]


def test_request_selector_false() -> None:
    expr = f'device.attributes["{GPU}"].memory >= 80'
    snap = snapshot(pod("web-0", MINE), claim(MINE, request(selectors=[expr])), node("node-1"),
                    rslice("s1", "node-1", device("gpu-0", attrs={"memory": 40}), device("gpu-1", attrs={"memory": 80})),
                    claim("other", allocated=[("node-1", "gpu-1")], reserved_for="trainer"))
    doc = why(snap)
    rv = request_view(doc, "node-1")
    assert reasons(rv) == ["in-use", "request-selector"]
    rej = _one(rv, "request-selector")
    assert rej["message"] == f"1 device rejected by request selector #0 `{expr}` (gpu-0)"
    # Freeing gpu-1 (the one device that matches) is cheaper than dropping the selector.
    assert [s["kind"] for s in doc["suggestions"]] == ["deallocate", "drop-request-selector"]
    assert _first_change(doc) == ("node-1 would fit if claim default/other (holding gpu.example.com/node-1/gpu-1, "
                                  "reserved for pod default/trainer) were deallocated")


# ----------------------------------------------------------------------------- DRA: in use, taints


def test_already_allocated_names_the_claim() -> None:
    snap = snapshot(pod("web-0", MINE), claim(MINE, request(count=2)), node("node-1"),
                    rslice("s1", "node-1", *gpus(2)),
                    claim("other", allocated=[("node-1", "gpu-0")], reserved_for="trainer"))
    doc = why(snap)
    rv = request_view(doc, "node-1")
    rej = _one(rv, "in-use")
    assert rej["objects"] == ["claim default/other"]
    assert rej["message"] == "1 device already allocated: default/other (gpu-0)"
    assert (rv["considered"], rv["usable"], rv["count"]) == (2, 1, 2)
    assert node_view(doc, "node-1")["dra"]["blocker"].startswith(
        "claim default/web-0-gpu, request gpu: 1 of 2 devices usable, 2 needed; 1 device already allocated")


def test_picked_for_another_claim_of_the_same_pod() -> None:
    snap = snapshot(pod("web-0", "a", "b"), claim("a"), claim("b"), node("node-1"), rslice("s1", "node-1", *gpus(1)))
    doc = why(snap)
    rv = request_view(doc, "node-1", "default/b")
    rej = _one(rv, "in-use-attempt")
    assert rej["objects"] == ["claim default/a request gpu"]


def test_slice_taint_names_the_slice_and_suggests_the_toleration() -> None:
    taint = {"key": f"{GPU}/maintenance", "effect": "NoSchedule"}
    snap = snapshot(pod("web-0", MINE), claim(MINE), node("node-1"),
                    rslice("node-1-gpus", "node-1", device("gpu-0", taints=[taint])))
    doc = why(snap)
    rej = _one(request_view(doc, "node-1"), "taint")
    assert rej["detail"]["source"] == "ResourceSlice" and rej["detail"]["sourceName"] == "node-1-gpus"
    assert rej["message"] == (f"1 device with untolerated taint {GPU}/maintenance:NoSchedule from ResourceSlice "
                              "node-1-gpus (gpu-0)")
    assert _first_change(doc) == f"node-1 would fit if claim {MINE} tolerated {GPU}/maintenance:NoSchedule"


def test_device_taint_rule_is_named_and_beats_deallocation() -> None:
    snap = snapshot(pod("web-0", MINE), claim(MINE), node("node-7"), rslice("s7", "node-7", *gpus(2)),
                    taint_rule("maintenance", f"{GPU}/maintenance", device_name="gpu-1"),
                    claim("other", allocated=[("node-7", "gpu-0")], reserved_for="trainer"))
    doc = why(snap)
    rv = request_view(doc, "node-7")
    rej = _one(rv, "taint")
    assert rej["detail"]["source"] == "DeviceTaintRule" and rej["detail"]["sourceName"] == "maintenance"
    assert rej["devices"] == [f"{GPU}/node-7/gpu-1"]
    assert _one(rv, "in-use")["objects"] == ["claim default/other"]
    # The example, word for word.
    assert _first_change(doc) == f"node-7 would fit if claim {MINE} tolerated {GPU}/maintenance:NoSchedule"
    assert doc["suggestions"][0]["objects"] == ["DeviceTaintRule/maintenance"]
    assert doc["suggestions"][1]["kind"] == "deallocate"


def test_none_effect_taint_does_not_block() -> None:
    snap = snapshot(pod("web-0", MINE), claim(MINE), node("node-1"),
                    rslice("s1", "node-1", device("gpu-0", taints=[{"key": "k", "effect": "None"}])))
    doc = why(snap)
    assert doc["verdict"] == "Schedulable"


# ----------------------------------------------------------------------------- DRA: counters, capacity


def _partitioned(allocated: bool) -> list[dict[str, Any]]:
    def part(name: str, profile: str, memory: str) -> dict[str, Any]:
        return device(name, attrs={"profile": profile},
                      consumesCounters=[{"counterSet": "gpu-0-memory", "counters": {"memory": {"value": memory}}}])

    objs = [rslice("node-1-counters", "node-1", count=2,
                   sharedCounters=[{"name": "gpu-0-memory", "counters": {"memory": {"value": "40Gi"}}}]),
            rslice("node-1-gpus", "node-1", part("gpu-0-whole", "whole", "40Gi"), part("gpu-0-half-0", "half", "20Gi"),
                   part("gpu-0-half-1", "half", "20Gi"), count=2)]
    if allocated:
        objs.append(claim("half", allocated=[("node-1", "gpu-0-half-0")], reserved_for="small"))
    return objs


def test_counter_set_exhausted_names_the_counter_and_numbers() -> None:
    expr = f'device.attributes["{GPU}"].profile == "whole"'
    snap = snapshot(pod("web-0", MINE), claim(MINE, request(selectors=[expr])), node("node-1"), *_partitioned(True))
    doc = why(snap)
    rv = request_view(doc, "node-1")
    rej = _one(rv, "counters")
    assert rej["detail"] == {"pool": f"{GPU}/node-1", "counterSet": "gpu-0-memory", "counter": "memory",
                             "total": "40Gi", "allocated": "20Gi", "inThisAttempt": "0", "available": "20Gi"}
    assert rej["objects"] == ["needs 40Gi"]
    assert "counter memory of counter set gpu-0-memory" in rej["message"]
    assert "20Gi of 40Gi allocated" in rej["message"]
    assert _first_change(doc) == ("node-1 would fit if claim default/half (holding gpu.example.com/node-1/gpu-0-half-0, "
                                  "reserved for pod default/small) were deallocated")


def _shared_device(policy: dict[str, Any] | None, in_use: str | None) -> list[dict[str, Any]]:
    cap: dict[str, Any] = {"value": "40Gi"}
    if policy is not None:
        cap["requestPolicy"] = policy
    objs: list[dict[str, Any]] = [rslice("s1", "node-1", device("gpu-0", allowMultipleAllocations=True,
                                                                 capacity={"memory": cap}))]
    if in_use is not None:
        share = claim("sharer")
        share["status"] = {"allocation": {"devices": {"results": [
            {"request": "gpu", "driver": GPU, "pool": "node-1", "device": "gpu-0", "shareID": "s-1",
             "consumedCapacity": {"memory": in_use}}]}}}
        objs.append(share)
    return objs


def test_capacity_policy_violated() -> None:
    policy = {"default": "10Gi", "validRange": {"min": "10Gi", "max": "20Gi", "step": "10Gi"}}
    snap = snapshot(pod("web-0", MINE), claim(MINE, request(capacity={"requests": {"memory": "30Gi"}})),
                    node("node-1"), *_shared_device(policy, None))
    doc = why(snap)
    rej = _one(request_view(doc, "node-1"), "capacity-policy")
    assert rej["detail"]["capacity"] == "memory" and rej["detail"]["requested"] == "30Gi"
    assert rej["detail"]["requestPolicy"] == policy
    assert "capacity memory request 30Gi violates the request policy" in rej["message"]


def test_capacity_exhausted_names_the_share_holder() -> None:
    snap = snapshot(pod("web-0", MINE), claim(MINE, request(capacity={"requests": {"memory": "20Gi"}})),
                    node("node-1"), *_shared_device(None, "30Gi"))
    doc = why(snap)
    rej = _one(request_view(doc, "node-1"), "capacity-exhausted")
    assert rej["objects"] == ["30Gi of 40Gi in use"]
    assert rej["message"] == "1 device without 20Gi of memory left (gpu-0: 30Gi of 40Gi in use)"
    assert _first_change(doc).startswith("node-1 would fit if claim default/sharer (holding")


# ----------------------------------------------------------------------------- DRA: pools


def test_pool_incomplete() -> None:
    snap = snapshot(pod("web-0", MINE), claim(MINE), node("node-1"), rslice("s1", "node-1", *gpus(2), count=2))
    doc = why(snap)
    dra = node_view(doc, "node-1")["dra"]
    assert dra["pools"] == [{"pool": f"{GPU}/node-1", "state": "incomplete", "devices": 0,
                             "reason": "incomplete: 1 of 2 ResourceSlices of generation 1 published"}]
    assert dra["blocker"] == ("claim default/web-0-gpu, request gpu: no devices on this node "
                              f"(incomplete pool {GPU}/node-1)")


def test_pool_obsolete() -> None:
    snap = snapshot(pod("web-0", MINE), claim(MINE), node("node-1"), node("node-2", labels={"x": "y"}),
                    rslice("old", "node-1", *gpus(1), pool="shared", generation=1, count=2),
                    rslice("new", "node-2", *gpus(1), pool="shared", generation=2, count=2))
    doc = why(snap, node="node-1")
    pools = node_view(doc, "node-1")["dra"]["pools"]
    assert pools == [{"pool": f"{GPU}/shared", "state": "obsolete", "devices": 0,
                      "reason": "obsolete: ResourceSlice old has generation 1, but generation 2 exists (the driver "
                                "is republishing the pool)"}]


def test_pool_invalid() -> None:
    snap = snapshot(pod("web-0", MINE), claim(MINE), node("node-1"),
                    rslice("s1", "node-1", device("gpu-0"), device("gpu-0")))
    doc = why(snap)
    dra = node_view(doc, "node-1")["dra"]
    assert dra["outcome"] == "invalid-pools"
    assert dra["pools"][0]["reason"] == "invalid: duplicate device name gpu-0"
    assert dra["blocker"] == (f"invalid resource pools were encountered (pool {GPU}/node-1 invalid: duplicate device "
                              "name gpu-0)")
    assert "invalid resource pools were encountered" in doc["upstreamMessage"]


# ----------------------------------------------------------------------------- DRA: constraints, limits


def test_match_attribute_impossible_shows_the_values() -> None:
    attr = f"{GPU}/numa"
    snap = snapshot(pod("web-0", MINE), claim(MINE, request(count=2), constraints=[{"matchAttribute": attr}]),
                    node("node-1"), rslice("s1", "node-1", *[device(f"gpu-{i}", attrs={"numa": i}) for i in range(3)]))
    doc = why(snap)
    rv = request_view(doc, "node-1")
    rej = _one(rv, "constraint")
    assert rej["detail"]["type"] == "matchAttribute" and rej["detail"]["attribute"] == attr
    assert rej["detail"]["established"] == ["0", "1"]
    assert set(rej["objects"]) == {"has 1", "has 2"}
    assert rej["message"] == (f"2 devices break constraint matchAttribute {attr} (the device picked first had 0 or 1; "
                              "gpu-1 has 1, gpu-2 has 2)")
    assert _first_change(doc) == f"node-1 would fit if claim {MINE} did not require matchAttribute {attr}"


def test_distinct_attribute_impossible() -> None:
    attr = f"{GPU}/model"
    snap = snapshot(pod("web-0", MINE), claim(MINE, request(count=2), constraints=[{"distinctAttribute": attr}]),
                    node("node-1"), rslice("s1", "node-1", *gpus(3, attrs={"model": "A100"})))
    doc = why(snap)
    rej = _one(request_view(doc, "node-1"), "constraint")
    assert rej["detail"]["type"] == "distinctAttribute"
    assert rej["detail"]["established"] == ["A100"]
    assert rej["objects"] == ["has A100"]
    assert rej["message"] == (f"2 devices break constraint distinctAttribute {attr} (already used: A100; "
                              "gpu-1 has A100, gpu-2 has A100)")


def test_claim_limit_of_32_devices() -> None:
    snap = snapshot(pod("web-0", MINE), claim(MINE, request(count=33)), node("node-1"), rslice("s1", "node-1", *gpus(40)))
    doc = why(snap)
    assert doc["verdict"] == "Error"
    dra = node_view(doc, "node-1")["dra"]
    assert dra["outcome"] == "error"
    assert dra["message"] == ("claim default/web-0-gpu: number of requested devices 33 exceeds the claim limit of 32")


def test_claim_limit_stops_a_subrequest() -> None:
    big = {"name": "big", "deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 40}
    small = {"name": "small", "deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1,
             "selectors": [{"cel": {"expression": 'device.attributes["gpu.example.com"].model == "H100"'}}]}
    snap = snapshot(pod("web-0", MINE), claim(MINE, {"name": "gpu", "firstAvailable": [big, small]}),
                    node("node-1"), rslice("s1", "node-1", *gpus(40, attrs={"model": "A100"})))
    doc = why(snap)
    rv = request_view(doc, "node-1", request_name="gpu/big")
    assert rv["stops"] == [{"reason": "max-size",
                            "message": "the claim would need 40 devices, more than the limit of 32 per claim"}]
    small_view = request_view(doc, "node-1", request_name="gpu/small")
    assert reasons(small_view) == ["request-selector"]


def test_binding_conditions_with_the_feature_off() -> None:
    features = Features(list_type_attributes=False, device_binding_and_status=False)
    snap = snapshot(pod("web-0", MINE), claim(MINE), node("node-1"),
                    rslice("s1", "node-1", device("gpu-0", bindingConditions=["attached"],
                                                  bindingFailureConditions=["failed"])))
    doc = why(snap, features=features)
    rej = _one(request_view(doc, "node-1"), "binding-conditions")
    assert rej["objects"] == ["attached"]
    assert _first_change(doc) == "node-1 would fit if the DRADeviceBindingConditions feature were enabled"


def test_binding_conditions_are_reported_on_the_chosen_devices() -> None:
    snap = snapshot(pod("web-0", MINE), claim(MINE), node("node-1"),
                    rslice("s1", "node-1", device("gpu-0", bindingConditions=["attached"],
                                                  bindingFailureConditions=["failed"])))
    doc = why(snap)
    assert doc["verdict"] == "Schedulable"
    assert doc["chosen"]["allocation"][0]["devices"][0]["bindingConditions"] == ["attached"]


def test_time_limit_hit() -> None:
    attr = f"{GPU}/model"
    devices = [device(f"gpu-{i}", attrs={"model": f"m{i % 4}"}) for i in range(24)]
    # Eight requests that must all have different models, with only four models around: the
    # search tries every combination (24 x 23 x 22 x 21 x ...) before giving up.
    requests = [request(f"r{i}") for i in range(8)]
    snap = snapshot(pod("web-0", MINE), claim(MINE, *requests, constraints=[{"distinctAttribute": attr}]),
                    node("node-1"), rslice("s1", "node-1", *devices))
    doc = why(snap, filter_timeout=0.05)
    assert doc["verdict"] == "Error"
    dra = node_view(doc, "node-1")["dra"]
    assert dra["outcome"] == "timeout"
    assert dra["message"].startswith("timed out after 0.05s trying to allocate devices (the scheduler's filter time "
                                     "limit); last at claim default/web-0-gpu request r")
    assert "error (the scheduler reports SchedulerError" not in doc["summary"]
    rej = _one(request_view(doc, "node-1", request_name="r4"), "constraint")
    assert rej["detail"]["type"] == "distinctAttribute"


# ----------------------------------------------------------------------------- before the search


@pytest.mark.parametrize(("objects", "verdict", "text"), [
    ([pod("web-0", MINE)], "Waiting", 'resourceclaim.resource.k8s.io "web-0-gpu" not found'),
    ([pod("web-0", MINE), claim(MINE, request(cls="missing"))], "Unschedulable",
     "device class missing does not exist"),
    ([pod("web-0", MINE, schedulingGates=[{"name": "wait"}]), claim(MINE)], "Gated", "scheduling gates wait"),
])
def test_pod_level_verdicts(objects: list[dict[str, Any]], verdict: str, text: str) -> None:
    doc = why(snapshot(*objects, node("node-1")))
    assert doc["verdict"] == verdict
    assert text in doc["summary"]


def test_unknown_pod() -> None:
    with pytest.raises(KeyError):
        why(snapshot(node("node-1")))
    assert explain.API_VERSION == "sim.cplane.dev/v1alpha1"
