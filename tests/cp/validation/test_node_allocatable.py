"""Validation of KEP-5517's fields (DRANodeAllocatableResources), as upstream's
`validateNodeAllocatableResources` (ResourceSlice devices) and the pod status rules of
`nodeAllocatableResourceClaimStatuses` (list-map keys, required fields, overheads)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.cp.test_validation import create_causes, mutate, pod, slice_, texts, update_causes

DEV = "spec.devices[0].nodeAllocatableResources"


def device_with(resources: dict[str, Any], **device: Any) -> dict[str, Any]:
    return slice_(devices=[{"name": "cpu-0", "nodeAllocatableResources": resources, **device}])


CORES = {"capacity": {"dra.example.com/cores": {"value": "64"}}}


@pytest.mark.parametrize("resources", [
    {"cpu": {"mapping": {"deviceMultiplier": "1"}}},
    {"cpu": {"mapping": {"capacityKey": "dra.example.com/cores", "capacityMultiplier": "2"}},
     "memory": {"overhead": {"perPod": "1Gi", "perContainer": "500Mi"}}},
    {"hugepages-2Mi": {"overhead": {"perContainer": "0"}}, "ephemeral-storage": {"mapping": {"deviceMultiplier": "1Gi"},
                                                                                 "overhead": {"perPod": "1Gi"}}},
])
def test_valid_mappings(resources: dict[str, Any]) -> None:
    assert create_causes(device_with(resources, **CORES)) == []


@pytest.mark.parametrize(("resources", "expected"), [
    ({"example.com/gpu": {"mapping": {"deviceMultiplier": "1"}}},
     [f'{DEV}[example.com/gpu]: Invalid value: "example.com/gpu": must be a node allocatable resource name']),
    ({"pods": {}}, [f'{DEV}[pods]: Invalid value: "pods": must be a node allocatable resource name',
                    f"{DEV}[pods]: Required value: at least one of mapping or overhead must be set"]),
    ({"cpu": {"mapping": {"capacityKey": "dra.example.com/threads"}}},
     [f'{DEV}[cpu].mapping.capacityKey: Not found: "dra.example.com/threads"',
      f"{DEV}[cpu].mapping.capacityMultiplier: Required value: capacityMultiplier is required when capacityKey "
      "is set"]),
    ({"cpu": {"mapping": {"capacityMultiplier": "2"}}},
     [f'{DEV}[cpu].mapping: Invalid value: "": must specify one of: `capacityKey`, `deviceMultiplier`',
      f"{DEV}[cpu].mapping.capacityKey: Required value: capacityKey is required when capacityMultiplier is set"]),
    ({"cpu": {"mapping": {"capacityKey": "dra.example.com/cores", "capacityMultiplier": "0",
                          "deviceMultiplier": "-1"}}},
     [f'{DEV}[cpu].mapping: Invalid value: "{{`capacityKey`, `deviceMultiplier`}}": exactly one of `capacityKey`, '
      "`deviceMultiplier` is required, but multiple fields are set",
      f'{DEV}[cpu].mapping.capacityMultiplier: Invalid value: "0": must be positive',
      f'{DEV}[cpu].mapping.deviceMultiplier: Invalid value: "-1": must be positive']),
    ({"memory": {"overhead": {}}},
     [f'{DEV}[memory].overhead: Invalid value: "": at least one of perPod or perContainer must be set']),
    ({"memory": {"overhead": {"perPod": "-1Gi", "perContainer": "-5"}}},
     [f'{DEV}[memory].overhead.perPod: Invalid value: "-1Gi": must be non-negative',
      f'{DEV}[memory].overhead.perContainer: Invalid value: "-5": must be non-negative']),
])
def test_invalid_mappings(resources: dict[str, Any], expected: list[str]) -> None:
    assert texts(create_causes(device_with(resources, **CORES))) == expected


def running_pod() -> dict[str, Any]:
    p = pod(resourceClaims=[{"name": "cpus", "resourceClaimName": "claim-1"}])
    p["spec"]["containers"][0]["resources"] = {"claims": [{"name": "cpus"}]}
    p["status"] = {"phase": "Pending"}
    return p


STATUSES = "status.nodeAllocatableResourceClaimStatuses"


def with_statuses(statuses: list[dict[str, Any]]) -> dict[str, Any]:
    return mutate(running_pod(), lambda p: p["status"].update(nodeAllocatableResourceClaimStatuses=statuses))


def test_valid_pod_status() -> None:
    new = with_statuses([{"resourceClaimName": "claim-1", "containers": ["a"],
                          "mapping": [{"name": "cpu", "quantity": "2"}],
                          "overhead": [{"name": "memory", "perPod": "1Gi"}]}])
    assert update_causes(new, running_pod(), subresource="status") == []


@pytest.mark.parametrize(("statuses", "expected"), [
    ([{"mapping": [{"name": "cpu", "quantity": "1"}]}], [f"{STATUSES}[0].resourceClaimName: Required value"]),
    ([{"resourceClaimName": "claim-1", "mapping": [{"name": "cpu", "quantity": "1"}]},
      {"resourceClaimName": "claim-1", "mapping": [{"name": "memory", "quantity": "1G"}]}],
     [f'{STATUSES}[1]: Duplicate value: "claim-1"']),
    ([{"resourceClaimName": "claim-1", "containers": ["c1", "c1"], "mapping": [{"name": "cpu", "quantity": "1"}]}],
     [f'{STATUSES}[0].containers[1]: Duplicate value: "c1"']),
    ([{"resourceClaimName": "claim-1", "mapping": [{"quantity": "1"}, {"name": "cpu"}]}],
     [f"{STATUSES}[0].mapping[0].name: Required value", f"{STATUSES}[0].mapping[1].quantity: Required value"]),
    ([{"resourceClaimName": "claim-1", "mapping": [{"name": "cpu", "quantity": "1"}, {"name": "cpu", "quantity": "2"}]}],
     [f'{STATUSES}[0].mapping[1]: Duplicate value: "cpu"']),
    ([{"resourceClaimName": "claim-1", "overhead": [{"name": "cpu"}]}],
     [f'{STATUSES}[0].overhead[0]: Invalid value: "": at least one of perPod or perContainer must be set']),
    ([{"resourceClaimName": "claim-1", "overhead": [{"name": "cpu", "perPod": "-100m"}]}],
     [f'{STATUSES}[0].overhead[0].perPod: Invalid value: "-100m": must be non-negative']),
    ([{"resourceClaimName": "claim-1", "overhead": [{"name": "cpu", "perPod": "100m"}, {"name": "cpu", "perPod": "2"}]}],
     [f'{STATUSES}[0].overhead[1]: Duplicate value: "cpu"']),
])
def test_invalid_pod_status(statuses: list[dict[str, Any]], expected: list[str]) -> None:
    assert texts(update_causes(with_statuses(statuses), running_pod(), subresource="status")) == expected
