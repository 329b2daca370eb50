"""cp/strategies/disabled.py: the fields of a disabled DRA gate are dropped on create and on updates
whose old object did not use them, as upstream's resource strategies and `resourceclaimspec` do."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from cp import features
from cp.strategies.disabled import drop_disabled_fields

Obj = dict[str, Any]
GROUP = "resource.k8s.io"


def gates(text: str) -> features.FeatureGates:
    return features.parse(text)


def full_slice() -> Obj:
    return {"spec": {
        "driver": "gpu.example.com", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
        "perDeviceNodeSelection": True,
        "sharedCounters": [{"name": "set", "counters": {"mem": {"value": "8Gi"}}}],
        "devices": [{
            "name": "d0", "nodeName": "n1",
            "taints": [{"key": "k", "effect": "NoSchedule"}],
            "consumesCounters": [{"counterSet": "set", "counters": {"mem": {"value": "4Gi"}}}],
            "bindsToNode": True, "bindingConditions": ["Ready"], "bindingFailureConditions": ["Failed"],
            "allowMultipleAllocations": True,
            "capacity": {"mem": {"value": "4Gi", "requestPolicy": {"default": "1Gi"}}},
        }],
    }}


def full_claim() -> Obj:
    return {
        "spec": {"devices": {
            "requests": [
                {"name": "a", "exactly": {"deviceClassName": "c", "tolerations": [{"operator": "Exists"}],
                                          "capacity": {"requests": {"mem": "1Gi"}}}},
                {"name": "b", "firstAvailable": [{"name": "s", "deviceClassName": "c",
                                                  "tolerations": [{"operator": "Exists"}],
                                                  "capacity": {"requests": {"mem": "1Gi"}}}]},
            ],
            "constraints": [{"requests": ["a"], "distinctAttribute": "gpu.example.com/index"}],
        }},
        "status": {
            "allocation": {"devices": {"results": [{
                "request": "a", "driver": "gpu.example.com", "pool": "p", "device": "d0",
                "shareID": "7b3c1e9a-0000-4000-8000-000000000000", "consumedCapacity": {"mem": "1Gi"},
                "bindingConditions": ["Ready"], "bindingFailureConditions": ["Failed"],
                "tolerations": [{"operator": "Exists"}]}]}},
            "devices": [{"driver": "gpu.example.com", "pool": "p", "device": "d0",
                         "shareID": "7b3c1e9a-0000-4000-8000-000000000000"}],
        },
    }


def dropped(kind: str, obj: Obj, *, gate_text: str, old: Obj | None = None) -> Obj:
    new = copy.deepcopy(obj)
    drop_disabled_fields(new, old, group=GROUP, kind=kind, features=gates(gate_text))
    return new


@pytest.mark.parametrize("kind,obj", [("ResourceSlice", full_slice()), ("ResourceClaim", full_claim()),
                                      ("ResourceClaimTemplate", {"spec": full_claim()}),
                                      ("DeviceClass", {"spec": {"extendedResourceName": "example.com/gpu"}})])
def test_a_default_cluster_keeps_everything(kind: str, obj: Obj) -> None:
    assert dropped(kind, obj, gate_text="") == obj


def test_slice_device_taints_off() -> None:
    out = dropped("ResourceSlice", full_slice(), gate_text="DRADeviceTaints=false")
    assert "taints" not in out["spec"]["devices"][0]
    assert out["spec"]["devices"][0]["consumesCounters"]  # other gates' fields stay


def test_slice_partitionable_devices_off() -> None:
    out = dropped("ResourceSlice", full_slice(), gate_text="DRAPartitionableDevices=false")
    assert "sharedCounters" not in out["spec"] and "perDeviceNodeSelection" not in out["spec"]
    device = out["spec"]["devices"][0]
    assert not {"consumesCounters", "nodeName"} & set(device)
    assert device["taints"] and device["bindingConditions"]


def test_slice_binding_conditions_off() -> None:
    out = dropped("ResourceSlice", full_slice(), gate_text="DRADeviceBindingConditions=false")
    assert not {"bindsToNode", "bindingConditions", "bindingFailureConditions"} & set(out["spec"]["devices"][0])


def test_slice_consumable_capacity_off() -> None:
    out = dropped("ResourceSlice", full_slice(), gate_text="DRAConsumableCapacity=false")
    device = out["spec"]["devices"][0]
    assert "allowMultipleAllocations" not in device and device["capacity"] == {"mem": {"value": "4Gi"}}


def list_slice() -> Obj:
    return {"spec": {"driver": "cpu.example.com", "devices": [{"name": "d0", "attributes": {
        "cores": {"ints": [0, 1, 2, 3]}, "model": {"string": "x"}, "numa": {"ints": [0], "int": 0}}}]}}


def test_slice_list_type_attributes_are_dropped_while_the_alpha_gate_is_off() -> None:
    out = dropped("ResourceSlice", list_slice(), gate_text="")
    # `cores` is left with no value: validation then refuses the slice, as upstream's does
    assert out["spec"]["devices"][0]["attributes"] == {"cores": {}, "model": {"string": "x"}, "numa": {"int": 0}}
    assert dropped("ResourceSlice", list_slice(), gate_text="DRAListTypeAttributes=true") == list_slice()


def test_slice_list_type_attributes_stay_on_update_of_a_slice_using_them() -> None:
    assert dropped("ResourceSlice", list_slice(), gate_text="", old=list_slice()) == list_slice()


def test_skip_node_operations_need_their_alpha_gate() -> None:
    slice_ = {"spec": {"driver": "cp.example.com", "skipNodeOperations": ["*"], "devices": [{"name": "d0"}]}}
    assert "skipNodeOperations" not in dropped("ResourceSlice", slice_, gate_text="")["spec"]
    assert dropped("ResourceSlice", slice_, gate_text="DRAOptionalNodeOperations=true") == slice_
    assert dropped("ResourceSlice", slice_, gate_text="", old=slice_) == slice_
    claim = full_claim()
    claim["status"]["allocation"]["devices"]["results"][0]["skipNodeOperations"] = ["*"]
    assert "skipNodeOperations" not in dropped("ResourceClaim", claim, gate_text="")[
        "status"]["allocation"]["devices"]["results"][0]
    assert dropped("ResourceClaim", claim, gate_text="", old=claim) == claim


def test_partition_type_attribute_needs_its_gate() -> None:
    slice_ = {"spec": {"driver": "gpu.example.com", "partitionTypeAttribute": "gpu.example.com/profile",
                       "devices": [{"name": "d0"}]}}
    assert "partitionTypeAttribute" not in dropped("ResourceSlice", slice_, gate_text="")["spec"]
    assert dropped("ResourceSlice", slice_, gate_text="DRAResourcePoolStatus=true,DRAPartitionableDevicesType=true") == slice_
    assert dropped("ResourceSlice", slice_, gate_text="", old=slice_) == slice_


def test_compatibility_groups_need_their_alpha_gate() -> None:
    slice_ = {"spec": {"driver": "gpu.example.com", "devices": [{"name": "d0", "consumesCounters": [
        {"counterSet": "gpu", "counters": {}, "compatibilityGroups": ["mig"]}]}]}}
    out = dropped("ResourceSlice", slice_, gate_text="")
    assert out["spec"]["devices"][0]["consumesCounters"] == [{"counterSet": "gpu", "counters": {}}]
    assert dropped("ResourceSlice", slice_, gate_text="DRADeviceCompatibilityGroups=true") == slice_
    assert dropped("ResourceSlice", slice_, gate_text="", old=slice_) == slice_


def test_slice_update_keeps_fields_the_old_object_used() -> None:
    old = full_slice()
    new = full_slice()
    new["spec"]["devices"].append({"name": "d1", "taints": [{"key": "k2", "effect": "NoExecute"}],
                                   "consumesCounters": [{"counterSet": "set", "counters": {}}]})
    text = "DRADeviceTaints=false,DRAPartitionableDevices=false,DRAConsumableCapacity=false"
    assert dropped("ResourceSlice", new, gate_text=text, old=old) == new
    # an old object without them: the update drops them
    bare = {"spec": {"driver": "gpu.example.com", "devices": [{"name": "d0"}]}}
    out = dropped("ResourceSlice", new, gate_text=text, old=bare)
    assert all(set(d) <= {"name", "bindsToNode", "bindingConditions", "bindingFailureConditions", "capacity"}
               for d in out["spec"]["devices"])


def test_claim_device_taints_off() -> None:
    out = dropped("ResourceClaim", full_claim(), gate_text="DRADeviceTaints=false")
    requests = out["spec"]["devices"]["requests"]
    assert "tolerations" not in requests[0]["exactly"] and "tolerations" not in requests[1]["firstAvailable"][0]
    assert requests[0]["exactly"]["capacity"]


def test_claim_consumable_capacity_off() -> None:
    out = dropped("ResourceClaim", full_claim(), gate_text="DRAConsumableCapacity=false")
    requests = out["spec"]["devices"]["requests"]
    assert "capacity" not in requests[0]["exactly"] and "capacity" not in requests[1]["firstAvailable"][0]
    assert out["spec"]["devices"]["constraints"] == [{"requests": ["a"]}]
    result = out["status"]["allocation"]["devices"]["results"][0]
    assert "shareID" not in result and "consumedCapacity" not in result
    assert "shareID" not in out["status"]["devices"][0]


def test_claim_binding_conditions_off() -> None:
    out = dropped("ResourceClaim", full_claim(), gate_text="DRADeviceBindingConditions=false")
    result = out["status"]["allocation"]["devices"]["results"][0]
    assert "bindingConditions" not in result and "bindingFailureConditions" not in result
    assert result["shareID"]


def test_claim_status_update_keeps_what_the_old_claim_used() -> None:
    text = "DRAConsumableCapacity=false,DRADeviceBindingConditions=false"
    old = full_claim()
    assert dropped("ResourceClaim", full_claim(), gate_text=text, old=old) == full_claim()
    # the spec used capacity: the status's shareID is kept too (upstream looks at the whole claim)
    spec_only = {"spec": full_claim()["spec"]}
    out = dropped("ResourceClaim", full_claim(), gate_text=text, old=spec_only)
    result = out["status"]["allocation"]["devices"]["results"][0]
    assert result["shareID"] and "bindingConditions" not in result


def test_template_claim_spec() -> None:
    out = dropped("ResourceClaimTemplate", {"spec": full_claim()},
                  gate_text="DRADeviceTaints=false,DRAConsumableCapacity=false")
    exactly = out["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert exactly == {"deviceClassName": "c"}
    old = {"spec": full_claim()}
    assert dropped("ResourceClaimTemplate", {"spec": full_claim()}, gate_text="DRADeviceTaints=false",
                   old=old) == {"spec": full_claim()}


# -- DRANodeAllocatableResources (alpha, off by default) ------------------------------------------

MAPPED = {"cpu": {"mapping": {"deviceMultiplier": "1"}}}


def mapped_slice() -> Obj:
    out = full_slice()
    out["spec"]["devices"][0]["nodeAllocatableResources"] = copy.deepcopy(MAPPED)
    return out


def test_slice_node_allocatable_resources_need_the_gate() -> None:
    out = dropped("ResourceSlice", mapped_slice(), gate_text="")  # a default cluster: the gate is off
    assert "nodeAllocatableResources" not in out["spec"]["devices"][0]
    assert out == full_slice()
    assert dropped("ResourceSlice", mapped_slice(), gate_text="DRANodeAllocatableResources=true") == mapped_slice()
    # written while the gate was on: an update keeps them (a new device's too)
    new = mapped_slice()
    new["spec"]["devices"].append({"name": "d1", "nodeAllocatableResources": copy.deepcopy(MAPPED)})
    assert dropped("ResourceSlice", new, gate_text="", old=mapped_slice()) == new
    assert "nodeAllocatableResources" not in dropped("ResourceSlice", new, gate_text="",
                                                     old=full_slice())["spec"]["devices"][1]


CLAIM_STATUSES = [{"resourceClaimName": "c", "containers": ["app"], "mapping": [{"name": "cpu", "quantity": "2"}]}]


def pod_with(statuses: list[Obj] | None) -> Obj:
    status: Obj = {"phase": "Pending"}
    if statuses is not None:
        status["nodeAllocatableResourceClaimStatuses"] = copy.deepcopy(statuses)
    return {"spec": {"containers": [{"name": "app"}]}, "status": status}


def test_pod_node_allocatable_claim_statuses_need_the_gate() -> None:
    def pods(gate_text: str, old: Obj | None) -> Obj:
        new = pod_with(CLAIM_STATUSES)
        drop_disabled_fields(new, old, group="", kind="Pod", features=gates(gate_text))
        return new

    assert pods("", pod_with(None)) == pod_with(None)
    assert pods("", None) == pod_with(None)
    assert pods("DRANodeAllocatableResources=true", pod_with(None)) == pod_with(CLAIM_STATUSES)
    assert pods("", pod_with(CLAIM_STATUSES)) == pod_with(CLAIM_STATUSES)  # the stored pod used them
