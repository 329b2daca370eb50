"""Fields of disabled features, dropped as upstream's registry strategies drop them
(`dropDisabledFields` of `pkg/api/pod/util.go` and the PodGroup/Workload strategies): a field whose
feature gate is off is cleared on create, and on update unless the stored object already uses it (so an
object written while the gate was on keeps working after it is turned off).

- Pods and pod templates: `spec.schedulingGroup` (GenericWorkload); a pod's
  `status.nodeAllocatableResourceClaimStatuses` (DRANodeAllocatableResources, `dropDisabledPodStatusFields`).
- PodGroups: `spec.resourceClaims` and `status.resourceClaimStatuses`; Workloads:
  `spec.podGroupTemplates[].resourceClaims` (DRAWorkloadResourceClaims).
- ResourceSlices (`pkg/registry/resource/resourceslice/strategy.go`): devices' `taints`
  (DRADeviceTaints); `sharedCounters`, `perDeviceNodeSelection` and devices' `consumesCounters`,
  `nodeName`, `nodeSelector`, `allNodes` (DRAPartitionableDevices); devices' `bindsToNode`,
  `bindingConditions`, `bindingFailureConditions` (DRADeviceBindingConditions); devices'
  `allowMultipleAllocations` and capacities' `requestPolicy` (DRAConsumableCapacity); attributes'
  list values `bools`, `ints`, `strings`, `versions` (DRAListTypeAttributes); `spec.skipNodeOperations`
  (DRAOptionalNodeOperations); `spec.partitionTypeAttribute` (DRAPartitionableDevicesType); devices'
  `consumesCounters[].compatibilityGroups`
  (DRADeviceCompatibilityGroups); devices' `nodeAllocatableResources` (DRANodeAllocatableResources).
- ResourceClaims and the claim of a ResourceClaimTemplate (`pkg/api/resourceclaimspec`): requests'
  and subrequests' `tolerations` (DRADeviceTaints); their `capacity` and constraints'
  `distinctAttribute` (DRAConsumableCapacity); their `derivedAttributes` (DRADerivedAttributes). A claim's status: results' `shareID` and
  `consumedCapacity`, `status.devices[].shareID` (DRAConsumableCapacity); results'
  `bindingConditions` and `bindingFailureConditions` (DRADeviceBindingConditions), results'
  `skipNodeOperations` (DRAOptionalNodeOperations).

The gates locked on in 1.37 (DRAAdminAccess, DRAPrioritizedList, DRAResourceClaimDeviceStatus,
DRAExtendedResource) never drop anything; DeviceClass has no field behind an unlocked gate.

Pure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cp import features as gates

Obj = dict[str, Any]


def _at(obj: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


# Where a kind keeps pod specs: the pod's own, or its template's.
_POD_SPECS: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "Pod"): ("spec",),
    ("", "PodTemplate"): ("template", "spec"),
    ("", "ReplicationController"): ("spec", "template", "spec"),
    ("apps", "Deployment"): ("spec", "template", "spec"),
    ("apps", "ReplicaSet"): ("spec", "template", "spec"),
    ("apps", "StatefulSet"): ("spec", "template", "spec"),
    ("apps", "DaemonSet"): ("spec", "template", "spec"),
    ("batch", "Job"): ("spec", "template", "spec"),
    ("batch", "CronJob"): ("spec", "jobTemplate", "spec", "template", "spec"),
}


def _drop_pod_status_fields(new: Obj, old: Obj | None, features: gates.FeatureGates) -> None:
    status = new.get("status")
    if not isinstance(status, dict) or "nodeAllocatableResourceClaimStatuses" not in status:
        return
    if features.enabled(gates.DRA_NODE_ALLOCATABLE_RESOURCES) or _at(old, "status", "nodeAllocatableResourceClaimStatuses"):
        return
    status.pop("nodeAllocatableResourceClaimStatuses", None)


def _drop_pod_fields(new: Obj, old: Obj | None, path: tuple[str, ...], features: gates.FeatureGates) -> None:
    if path == ("spec",):  # the pod itself
        _drop_pod_status_fields(new, old, features)
    spec = _at(new, *path)
    if not isinstance(spec, dict) or "schedulingGroup" not in spec:
        return
    if features.enabled(gates.GENERIC_WORKLOAD):
        return
    if old is not None and _at(old, *path, "schedulingGroup") is not None:
        return
    spec.pop("schedulingGroup", None)


def _drop_podgroup_fields(new: Obj, old: Obj | None, features: gates.FeatureGates) -> None:
    if features.enabled(gates.DRA_WORKLOAD_RESOURCE_CLAIMS):
        return
    spec, status = new.get("spec"), new.get("status")
    if isinstance(spec, dict) and spec.get("resourceClaims") and not _at(old, "spec", "resourceClaims"):
        spec.pop("resourceClaims", None)
    if isinstance(status, dict) and status.get("resourceClaimStatuses") \
            and not _at(old, "status", "resourceClaimStatuses"):
        status.pop("resourceClaimStatuses", None)


def _templates_with_claims(obj: Obj | None) -> bool:
    return any(isinstance(t, dict) and t.get("resourceClaims")
               for t in _at(obj, "spec", "podGroupTemplates") or [])


def _drop_workload_fields(new: Obj, old: Obj | None, features: gates.FeatureGates) -> None:
    if features.enabled(gates.DRA_WORKLOAD_RESOURCE_CLAIMS) or _templates_with_claims(old):
        return
    for template in _at(new, "spec", "podGroupTemplates") or []:
        if isinstance(template, dict):
            template.pop("resourceClaims", None)


def _dicts(value: Any) -> list[Obj]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _pop_all(objs: list[Obj], *keys: str) -> None:
    for obj in objs:
        for key in keys:
            obj.pop(key, None)


def _any_has(objs: list[Obj], *keys: str) -> bool:
    return any(obj.get(key) is not None for obj in objs for key in keys)


# -- ResourceSlice ---------------------------------------------------------------------------------

_SLICE_PARTITIONABLE = ("consumesCounters", "nodeName", "nodeSelector", "allNodes")
_SLICE_BINDING = ("bindsToNode", "bindingConditions", "bindingFailureConditions")


def _slice_devices(obj: Obj | None) -> list[Obj]:
    return _dicts(_at(obj, "spec", "devices"))


def _capacities(devices: list[Obj]) -> list[Obj]:
    return [c for d in devices if isinstance(d.get("capacity"), dict)
            for c in d["capacity"].values() if isinstance(c, dict)]


_SLICE_GATES = (gates.DRA_DEVICE_TAINTS, gates.DRA_PARTITIONABLE_DEVICES, gates.DRA_DEVICE_BINDING_CONDITIONS,
                gates.DRA_CONSUMABLE_CAPACITY, gates.DRA_LIST_TYPE_ATTRIBUTES, gates.DRA_OPTIONAL_NODE_OPERATIONS,
                gates.DRA_DEVICE_COMPATIBILITY_GROUPS, gates.DRA_PARTITIONABLE_DEVICES_TYPE,
                gates.DRA_NODE_ALLOCATABLE_RESOURCES)
# The list-type values of a device attribute (DRAListTypeAttributes).
_LIST_VALUES = ("bools", "ints", "strings", "versions")
_CLAIM_GATES = (gates.DRA_DEVICE_TAINTS, gates.DRA_CONSUMABLE_CAPACITY, gates.DRA_DEVICE_BINDING_CONDITIONS,
                gates.DRA_OPTIONAL_NODE_OPERATIONS, gates.DRA_DERIVED_ATTRIBUTES)


def _all_on(features: gates.FeatureGates, names: tuple[str, ...]) -> bool:
    return not features.disabled(names)


def _attributes(devices: list[Obj]) -> list[Obj]:
    return [a for d in devices if isinstance(d.get("attributes"), dict)
            for a in d["attributes"].values() if isinstance(a, dict)]


def _consumptions(devices: list[Obj]) -> list[Obj]:
    return [c for d in devices for c in _dicts(d.get("consumesCounters"))]


def _drop_slice_fields(new: Obj, old: Obj | None, features: gates.FeatureGates) -> None:
    if _all_on(features, _SLICE_GATES):  # every gate on: nothing to do
        return
    devices, old_devices = _slice_devices(new), _slice_devices(old)
    if not features.enabled(gates.DRA_LIST_TYPE_ATTRIBUTES) and devices \
            and not _any_has(_attributes(old_devices), *_LIST_VALUES):
        # an attribute left with no value is then refused by validation, as upstream's is
        _pop_all(_attributes(devices), *_LIST_VALUES)
    if not features.enabled(gates.DRA_DEVICE_COMPATIBILITY_GROUPS) and devices \
            and not _any_has(_consumptions(old_devices), "compatibilityGroups"):
        _pop_all(_consumptions(devices), "compatibilityGroups")
    if not features.enabled(gates.DRA_PARTITIONABLE_DEVICES_TYPE) and isinstance(new.get("spec"), dict) \
            and _at(old, "spec", "partitionTypeAttribute") is None:
        new["spec"].pop("partitionTypeAttribute", None)
    if not features.enabled(gates.DRA_OPTIONAL_NODE_OPERATIONS) and isinstance(new.get("spec"), dict) \
            and _at(old, "spec", "skipNodeOperations") is None:
        new["spec"].pop("skipNodeOperations", None)
    if not features.enabled(gates.DRA_NODE_ALLOCATABLE_RESOURCES) \
            and not any(d.get("nodeAllocatableResources") for d in old_devices):
        _pop_all(devices, "nodeAllocatableResources")
    if not features.enabled(gates.DRA_DEVICE_TAINTS) and not _any_has(old_devices, "taints"):
        _pop_all(devices, "taints")
    if not features.enabled(gates.DRA_PARTITIONABLE_DEVICES):
        spec, old_spec = new.get("spec"), _at(old, "spec")
        in_use = (isinstance(old_spec, dict) and _any_has([old_spec], "sharedCounters", "perDeviceNodeSelection")) \
            or _any_has(old_devices, *_SLICE_PARTITIONABLE)
        if not in_use:
            if isinstance(spec, dict):
                _pop_all([spec], "sharedCounters", "perDeviceNodeSelection")
            _pop_all(devices, *_SLICE_PARTITIONABLE)
    if not features.enabled(gates.DRA_DEVICE_BINDING_CONDITIONS) and not _any_has(old_devices, *_SLICE_BINDING):
        _pop_all(devices, *_SLICE_BINDING)
    if not features.enabled(gates.DRA_CONSUMABLE_CAPACITY) \
            and not _any_has(old_devices, "allowMultipleAllocations") \
            and not _any_has(_capacities(old_devices), "requestPolicy"):
        _pop_all(devices, "allowMultipleAllocations")
        _pop_all(_capacities(devices), "requestPolicy")


# -- ResourceClaim, ResourceClaimTemplate ----------------------------------------------------------


def _requests(spec: Any) -> tuple[list[Obj], list[Obj]]:
    """The `exactly` parts of a claim spec's requests, and its subrequests."""
    requests = _dicts(_at(spec, "devices", "requests"))
    exactly = [r["exactly"] for r in requests if isinstance(r.get("exactly"), dict)]
    subs = [s for r in requests for s in _dicts(r.get("firstAvailable"))]
    return exactly, subs


_CLAIM_SPEC_GATES = (gates.DRA_DEVICE_TAINTS, gates.DRA_CONSUMABLE_CAPACITY, gates.DRA_DERIVED_ATTRIBUTES)


def _drop_claim_spec_fields(new_spec: Any, old_spec: Any, off: frozenset[str]) -> None:
    """`resourceclaimspec.DropDisabledFields`: a claim's or a template's claim spec (`off`: the gates
    that are off)."""
    if not off.intersection(_CLAIM_SPEC_GATES):
        return
    exactly, subs = _requests(new_spec)
    if not exactly and not subs:
        return
    new_requests = exactly + subs
    old_exactly, old_subs = _requests(old_spec) if old_spec is not None else ([], [])
    old_requests = old_exactly + old_subs
    if gates.DRA_DEVICE_TAINTS in off and not _any_has(old_requests, "tolerations"):
        _pop_all(new_requests, "tolerations")
    if gates.DRA_CONSUMABLE_CAPACITY in off \
            and not _any_has(old_requests, "capacity") \
            and not _any_has(_dicts(_at(old_spec, "devices", "constraints")), "distinctAttribute"):
        _pop_all(new_requests, "capacity")
        _pop_all(_dicts(_at(new_spec, "devices", "constraints")), "distinctAttribute")
    if gates.DRA_DERIVED_ATTRIBUTES in off and not _any_has(old_requests, "derivedAttributes"):
        _pop_all(new_requests, "derivedAttributes")


def _results(claim: Obj | None) -> list[Obj]:
    return _dicts(_at(claim, "status", "allocation", "devices", "results"))


def _drop_claim_fields(new: Obj, old: Obj | None, features: gates.FeatureGates) -> None:
    off = features.disabled(_CLAIM_GATES)
    if not off:
        return
    old_spec = _at(old, "spec")
    _drop_claim_spec_fields(new.get("spec"), old_spec, off)
    if not isinstance(new.get("status"), dict):
        return  # nothing else is behind a gate (a new claim has no status)
    results, old_results = _results(new), _results(old)
    status_devices, old_status_devices = _dicts(_at(new, "status", "devices")), _dicts(_at(old, "status", "devices"))
    if not features.enabled(gates.DRA_CONSUMABLE_CAPACITY):
        old_exactly, old_subs = _requests(old_spec)
        in_use = (_any_has(old_exactly + old_subs, "capacity")
                  or _any_has(_dicts(_at(old_spec, "devices", "constraints")), "distinctAttribute")
                  or _any_has(old_results, "shareID", "consumedCapacity") or _any_has(old_status_devices, "shareID"))
        if not in_use:
            _pop_all(results, "shareID", "consumedCapacity")
            _pop_all(status_devices, "shareID")
    if not features.enabled(gates.DRA_DEVICE_BINDING_CONDITIONS) \
            and not _any_has(old_results, "bindingConditions", "bindingFailureConditions"):
        _pop_all(results, "bindingConditions", "bindingFailureConditions")
    if not features.enabled(gates.DRA_OPTIONAL_NODE_OPERATIONS) and not _any_has(old_results, "skipNodeOperations"):
        _pop_all(results, "skipNodeOperations")


def _drop_claim_template_fields(new: Obj, old: Obj | None, features: gates.FeatureGates) -> None:
    off = features.disabled(_CLAIM_GATES)
    if off:
        _drop_claim_spec_fields(_at(new, "spec", "spec"), _at(old, "spec", "spec"), off)


def _drop_pool_status_request_fields(new: Obj, old: Obj | None, features: gates.FeatureGates) -> None:
    """ResourcePoolStatusRequest: `spec.defaultPartitionTypeAttribute` (DRAPartitionableDevicesType)."""
    spec = new.get("spec")
    if isinstance(spec, dict) and not features.enabled(gates.DRA_PARTITIONABLE_DEVICES_TYPE) \
            and _at(old, "spec", "defaultPartitionTypeAttribute") is None:
        spec.pop("defaultPartitionTypeAttribute", None)


_OWN: dict[tuple[str, str], Callable[[Obj, Obj | None, gates.FeatureGates], None]] = {
    ("resource.k8s.io", "ResourcePoolStatusRequest"): _drop_pool_status_request_fields,
    ("scheduling.k8s.io", "PodGroup"): _drop_podgroup_fields,
    ("scheduling.k8s.io", "Workload"): _drop_workload_fields,
    ("resource.k8s.io", "ResourceSlice"): _drop_slice_fields,
    ("resource.k8s.io", "ResourceClaim"): _drop_claim_fields,
    ("resource.k8s.io", "ResourceClaimTemplate"): _drop_claim_template_fields,
}


def drop_disabled_fields(new: Obj, old: Obj | None, *, group: str, kind: str,
                         features: gates.FeatureGates) -> None:
    """Clear in `new` (in place) the fields of `group`/`kind` whose gates are off; `old` is the stored
    object of an update (None on create)."""
    path = _POD_SPECS.get((group, kind))
    if path is not None:
        _drop_pod_fields(new, old, path, features)
        return
    own = _OWN.get((group, kind))
    if own is not None:
        own(new, old, features)
