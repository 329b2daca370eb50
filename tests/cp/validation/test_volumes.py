"""cp/validation/volumes.py, cp/validation/quota.py, policy.py and the Endpoints rules of core.py:
PersistentVolume(Claim), LimitRange, ResourceQuota, PodDisruptionBudget and Endpoints
(pkg/apis/core/validation, pkg/apis/policy/validation)."""

from __future__ import annotations

from typing import Any

import pytest

from cp import errors, validation
from tests.cp.validation.rules import changed, create_errors, prepared, update_errors


def pv(**spec: Any) -> dict[str, Any]:
    body = {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/data"}}
    body.update(spec)
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-1"},
            "spec": {k: v for k, v in body.items() if v is not None}}


def pvc(**spec: Any) -> dict[str, Any]:
    body = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    body.update(spec)
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
            "spec": {k: v for k, v in body.items() if v is not None}}


@pytest.mark.parametrize(("spec", "expected"), [
    ({}, []),
    ({"accessModes": None}, ["spec.accessModes: Required value"]),
    ({"accessModes": ["ReadWriteOncePod", "ReadOnlyMany"]},
     ["spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes"]),
    ({"accessModes": ["WriteSometimes"]},
     ['spec.accessModes: Unsupported value: "WriteSometimes": supported values: "ReadOnlyMany", "ReadWriteMany", '
      '"ReadWriteOnce", "ReadWriteOncePod"']),
    ({"capacity": {"storage": "0"}}, ["spec.capacity[storage]: Invalid value: 0: must be greater than zero"]),
    ({"hostPath": None}, ["spec: Required value: must specify a volume type"]),
    ({"nfs": {"server": "nfs.local", "path": "/export"}},
     ["spec.nfs: Forbidden: may not specify more than 1 volume type"]),
    ({"hostPath": None, "local": {"path": "/mnt/disk"}},
     ["spec.nodeAffinity: Required value: Local volume requires node affinity"]),
    ({"hostPath": {"path": "/"}, "persistentVolumeReclaimPolicy": "Recycle"},
     ["spec.persistentVolumeReclaimPolicy: Forbidden: may not be 'recycle' for a hostPath mount of '/'"]),
    ({"persistentVolumeReclaimPolicy": "Keep"},
     ['spec.persistentVolumeReclaimPolicy: Unsupported value: "Keep": supported values: "Delete", "Recycle", '
      '"Retain"']),
    ({"hostPath": None, "csi": {"driver": "ebs.csi.aws.com"}}, ["spec.csi.volumeHandle: Required value"]),
    ({"flexVolume": {"driver": "example.com/flex"}}, []),  # counted, but never refused as a second source
    ({"volumeAttributesClassName": "gold"},
     ["spec.csi: Required value: has to be specified when using volumeAttributesClassName"]),
])
def test_persistent_volume(spec: dict[str, Any], expected: list[str]) -> None:
    assert create_errors(pv(**spec)) == expected


def test_persistent_volume_source_is_immutable() -> None:
    old = pv()
    new = changed(old, lambda o: o["spec"]["hostPath"].update(path="/other"))
    assert update_errors(new, old) == [
        "spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation\n"
        '@@ -2,7 +2,7 @@\n  "GCEPersistentDisk": null,\n  "AWSElasticBlockStore": null,\n  "HostPath": {\n'
        '-  "Path": "/data",\n+  "Path": "/other",\n   "Type": ""\n  },\n  "Glusterfs": null,\n']
    assert update_errors(changed(old, lambda o: o["spec"].update(volumeMode="Block")), old) == [
        'volumeMode: Invalid value: "Block": field is immutable']
    assert update_errors(changed(old, lambda o: o["spec"].update(capacity={"storage": "20Gi"},
                                                                  persistentVolumeReclaimPolicy="Delete")), old) == []


@pytest.mark.parametrize(("spec", "expected"), [
    ({}, []),
    ({"accessModes": []}, ["spec.accessModes: Required value: at least 1 access mode is required"]),
    ({"resources": {}}, ["spec.resources[storage]: Required value"]),
    ({"resources": {"requests": {"storage": "0"}}},
     ["spec.resources[storage]: Invalid value: 0: must be greater than zero"]),
    ({"volumeMode": "Raw"}, ['spec.volumeMode: Unsupported value: "Raw": supported values: "Block", "Filesystem"']),
    ({"dataSource": {"kind": "VolumeSnapshot", "name": "snap"}},
     # (the strategy copied it to dataSourceRef, which is checked too)
     [f"spec.{key}: Invalid value: \"VolumeSnapshot\": must be 'PersistentVolumeClaim' when referencing the "
      "default apiGroup" for key in ("dataSource", "dataSourceRef")]),
    ({"dataSource": {"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "snap"},
      "dataSourceRef": {"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "other"}},
     ["spec: Invalid value: spec.dataSource: must match dataSourceRef"]),
])
def test_persistent_volume_claim(spec: dict[str, Any], expected: list[str]) -> None:
    assert create_errors(pvc(**spec)) == expected


def bound_update_errors(new: dict[str, Any], old: dict[str, Any]) -> list[str]:
    """Rules for a spec write over a stored claim whose status says it is bound (status carried over)."""
    status = {"phase": "Bound", "capacity": {"storage": "5Gi"}}
    old, new = prepared(old), prepared(new)
    old["status"] = new["status"] = status
    try:
        validation.validate_update(new, old, group="", version="v1", kind="PersistentVolumeClaim")
    except errors.Invalid as exc:
        return [c.text() for c in exc.causes]
    return []


def test_claim_spec_is_immutable_but_for_a_bound_claims_size() -> None:
    old = pvc()
    bigger = changed(old, lambda o: o["spec"]["resources"]["requests"].update(storage="2Gi"))
    assert update_errors(bigger, old) == [
        "spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName "
        'for bound claims\n@@ -6,7 +6,7 @@\n  "Resources": {\n   "Limits": null,\n   "Requests": {\n'
        '-   "storage": "1Gi"\n+   "storage": "2Gi"\n   }\n  },\n  "VolumeName": "",\n']
    assert bound_update_errors(bigger, old) == []
    # Once bound, the binder may set the volume name (only once); the class may change.
    named = changed(old, lambda o: o["spec"].update(volumeName="pv-1", volumeAttributesClassName="gold"))
    assert update_errors(named, old) == []
    named_twice = changed(named, lambda o: o["spec"].update(volumeName="pv-2"))
    assert update_errors(named_twice, named)[0].startswith("spec: Forbidden: spec is immutable after creation")


def test_claim_spec_diff_as_kube_apiserver_writes_it() -> None:
    old = pvc(accessModes=["ReadWriteMany"])
    new = changed(old, lambda o: o["spec"].update(accessModes=["ReadWriteOnce"]))
    assert update_errors(new, old) == [
        "spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName "
        'for bound claims\n@@ -1,6 +1,6 @@\n {\n  "AccessModes": [\n-  "ReadWriteMany"\n+  "ReadWriteOnce"\n  ],\n'
        '  "Selector": null,\n  "Resources": {\n']


def test_claim_may_get_a_class_once_and_keep_its_attributes_class() -> None:
    old = pvc()
    assert update_errors(changed(old, lambda o: o["spec"].update(storageClassName="fast")), old) == []
    classed = pvc(storageClassName="fast", volumeAttributesClassName="gold")
    assert update_errors(changed(classed, lambda o: o["spec"].update(storageClassName="slow")), classed)[0] \
        .startswith("spec: Forbidden: spec is immutable after creation")
    assert update_errors(changed(classed, lambda o: o["spec"].pop("volumeAttributesClassName")), classed) == [
        "spec.volumeAttributesClassName: Forbidden: update from non-nil value to nil is forbidden"]


def test_claim_may_shrink_only_above_its_capacity() -> None:
    old = pvc(resources={"requests": {"storage": "10Gi"}})
    smaller = changed(old, lambda o: o["spec"]["resources"]["requests"].update(storage="6Gi"))
    assert bound_update_errors(smaller, old) == []
    too_small = changed(old, lambda o: o["spec"]["resources"]["requests"].update(storage="5Gi"))
    assert bound_update_errors(too_small, old) == [
        "spec.resources.requests.storage: Forbidden: field can not be less than status.capacity"]


# ---------------------------------------------------------------- PodDisruptionBudget

def pdb(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, **spec}}


@pytest.mark.parametrize(("spec", "expected"), [
    ({"minAvailable": 1}, []),
    ({"maxUnavailable": "25%", "unhealthyPodEvictionPolicy": "AlwaysAllow"}, []),
    ({"minAvailable": 1, "maxUnavailable": 1},
     ["spec: Invalid value: {...}: minAvailable and maxUnavailable cannot be both set"]),
    ({"minAvailable": "120%"}, ['spec.minAvailable: Invalid value: "120%": must not be greater than 100%']),
    ({"maxUnavailable": -1}, ["spec.maxUnavailable: Invalid value: -1: must be greater than or equal to 0"]),
    ({"minAvailable": "half"},
     ["spec.minAvailable: Invalid value: \"half\": a valid percent string must be a numeric string followed by an "
      "ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"]),
    ({"unhealthyPodEvictionPolicy": "Never"},
     ['spec.unhealthyPodEvictionPolicy: Unsupported value: "Never": supported values: "AlwaysAllow", '
      '"IfHealthyBudget"']),
])
def test_pod_disruption_budget(spec: dict[str, Any], expected: list[str]) -> None:
    assert create_errors(pdb(**spec)) == expected


def test_pod_disruption_budget_names_are_path_segments() -> None:
    """Only rest.BeforeCreate's generic metadata rules check the name, after the spec passed."""
    named = pdb(minAvailable=1)
    named["metadata"]["name"] = "Web_PDB"
    assert create_errors(named) == []
    named["metadata"]["name"] = "web%pdb"
    assert create_errors(named) == ["metadata.name: Invalid value: \"web%pdb\": may not contain '%'"]
    named["spec"]["minAvailable"] = -1
    assert create_errors(named) == ["spec.minAvailable: Invalid value: -1: must be greater than or equal to 0"]


def test_pod_disruption_budget_spec_may_change() -> None:
    old = pdb(minAvailable=1)
    assert update_errors(changed(old, lambda o: o["spec"].update(minAvailable="50%")), old) == []


# ---------------------------------------------------------------- Endpoints

def endpoints(*subsets: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "web"}, "subsets": list(subsets)}


@pytest.mark.parametrize(("subset", "expected"), [
    ({"addresses": [{"ip": "10.0.0.1", "hostname": "web-0", "nodeName": "node-1"}], "ports": [{"port": 80}]}, []),
    ({"ports": [{"port": 80}]}, ["subsets[0]: Required value: must specify `addresses` or `notReadyAddresses`"]),
    ({"addresses": [{"ip": "127.0.0.1"}]},
     ['subsets[0].addresses[0].ip: Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, '
      "::1/128)"]),
    ({"notReadyAddresses": [{"ip": "169.254.1.1"}]},
     ['subsets[0].notReadyAddresses[0].ip: Invalid value: "169.254.1.1": may not be in the link-local range '
      "(169.254.0.0/16, fe80::/10)"]),
    ({"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}, {"port": 443, "name": "https"}]},
     ["subsets[0].ports[0].name: Required value"]),
    ({"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 0, "protocol": "ICMP"}]},
     ["subsets[0].ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
      'subsets[0].ports[0].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"']),
])
def test_endpoints(subset: dict[str, Any], expected: list[str]) -> None:
    assert create_errors(endpoints(subset)) == expected


# ---------------------------------------------------------------- LimitRange and ResourceQuota

def limit_range(*limits: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "limits"}, "spec": {"limits": list(limits)}}


@pytest.mark.parametrize(("limits", "expected"), [
    ([{"type": "Container", "max": {"cpu": "2"}, "min": {"cpu": "100m"}, "maxLimitRequestRatio": {"cpu": "4"}}], []),
    ([{"type": "Container", "max": {"cpu": "1"}, "min": {"cpu": "2"}}],
     ["spec.limits[0].min[cpu]: Invalid value: 2: min value 2 is greater than max value 1",
      "spec.limits[0].defaultRequest[cpu]: Invalid value: 1: min value 2 is greater than default request value 1",
      "spec.limits[0].default[cpu]: Invalid value: 2: min value 2 is greater than default value 1"]),
    ([{"type": "Container", "default": {"memory": "1Gi"}, "defaultRequest": {"memory": "2Gi"}}],
     ["spec.limits[0].defaultRequest[memory]: Invalid value: 2Gi: default request value 2Gi is greater than default "
      "limit value 1Gi"]),
    ([{"type": "Pod", "default": {"cpu": "1"}}],
     ["spec.limits[0].default: Forbidden: may not be specified when `type` is 'Pod'"]),
    ([{"type": "Container", "maxLimitRequestRatio": {"cpu": "500m"}}],
     ["spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: 500m: ratio 500m is less than 1"]),
    ([{"type": "Container", "min": {"cpu": "1"}, "max": {"cpu": "2"}, "maxLimitRequestRatio": {"cpu": "3"}}],
     ["spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: 3: ratio 3 is greater than max/min = 2.000000"]),
    ([{"type": "PersistentVolumeClaim"}],
     ["spec.limits[0].limits: Required value: either minimum or maximum storage value is required, but neither was "
      "provided"]),
    ([{"type": "Container", "max": {"gpus": "1"}}],
     [f'spec.limits[0].{section}[gpus]: Invalid value: "gpus": {message}'
      for section in ("max", "default", "defaultRequest")
      for message in ("must be a standard resource type or fully qualified",
                      "must be a standard resource for containers")]),
    ([{"type": "Node", "max": {"cpu": "1"}}],
     ['spec.limits[0].type: Invalid value: "Node": must be a standard limit type or fully qualified']),
    ([{"type": "Pod", "max": {"cpu": "1"}}, {"type": "Pod", "max": {"cpu": "2"}}],
     ['spec.limits[1].type: Duplicate value: "Pod"']),
])
def test_limit_range(limits: list[dict[str, Any]], expected: list[str]) -> None:
    assert create_errors(limit_range(*limits)) == expected


def quota(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"}, "spec": spec}


@pytest.mark.parametrize(("spec", "expected"), [
    ({"hard": {"pods": "10", "requests.cpu": "4", "count/deployments.apps": "5"}}, []),
    ({"hard": {"pods": "1500m"}}, ["spec.hard[pods]: Invalid value: 1500m: must be an integer"]),
    ({"hard": {"requests.memory": "-1Gi"}},
     ["spec.hard[requests.memory]: Invalid value: -1Gi: must be greater than or equal to 0"]),
    ({"hard": {"gpus": "1"}}, ['spec.hard[gpus]: Invalid value: "gpus": must be a standard resource type or fully '
                               'qualified',
                               'spec.hard[gpus]: Invalid value: "gpus": must be a standard resource for quota']),
    ({"hard": {"services": "1", "pods": "2"}, "scopes": ["Terminating"]},
     ['spec.scopes: Invalid value: []core.ResourceQuotaScope{"Terminating"}: unsupported scope applied to '
      "resource"]),
    ({"hard": {"nvidia.com/gpu": "500m", "count/jobs.batch": "1.5", "requests.nvidia.com/gpu": "500m"}},
     ["spec.hard[count/jobs.batch]: Invalid value: 1500m: must be an integer",
      "spec.hard[nvidia.com/gpu]: Invalid value: 500m: must be an integer"]),
    ({"hard": {"pods": "1"}, "scopes": ["BestEffort", "NotBestEffort"]},
     ['spec.scopes: Invalid value: []core.ResourceQuotaScope{"BestEffort", "NotBestEffort"}: conflicting scopes']),
    ({"hard": {"cpu": "1"}, "scopes": ["BestEffort"]},
     ['spec.scopes: Invalid value: []core.ResourceQuotaScope{"BestEffort"}: unsupported scope applied to resource']),
    ({"hard": {"pods": "1"}, "scopes": ["Sometimes"]},
     ['spec.scopes: Invalid value: []core.ResourceQuotaScope{"Sometimes"}: unsupported scope']),
])
def test_resource_quota(spec: dict[str, Any], expected: list[str]) -> None:
    assert create_errors(quota(**spec)) == expected


def test_resource_quota_scopes_are_immutable() -> None:
    old = quota(hard={"pods": "1"}, scopes=["Terminating"])
    assert update_errors(quota(hard={"pods": "2"}, scopes=["Terminating"]), old) == []
    assert update_errors(quota(hard={"pods": "2"}, scopes=["NotTerminating"]), old) == [
        'spec.scopes: Invalid value: []core.ResourceQuotaScope{"NotTerminating"}: field is immutable']
