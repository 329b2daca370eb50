"""Validation of scheduling.k8s.io/v1beta1 PodGroup and Workload (the declarative rules of k8s.io/api
1.37 `scheduling/v1beta1/types.go`) and of a pod's `spec.schedulingGroup`."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from cp import defaulting, errors, features, strategies, validation
from cp import resources as res
from cp.strategies import disabled

PODGROUP = res.gated_kind("scheduling.k8s.io", "podgroups")
WORKLOAD = res.gated_kind("scheduling.k8s.io", "workloads")


def _errors(kind: res.ResourceKind, obj: dict[str, Any], old: dict[str, Any] | None = None,
            subresource: str = "") -> list[str]:
    obj = copy.deepcopy(obj)
    obj.setdefault("apiVersion", kind.api_version)
    obj.setdefault("kind", kind.kind)
    obj.setdefault("metadata", {}).setdefault("namespace", "default")
    defaulting.apply_defaults(obj, group=kind.group, version=kind.version, kind=kind.kind)
    try:
        if old is None:
            strategies.prepare_for_create(kind, obj, now=0.0)
            validation.validate_create(obj, group=kind.group, version=kind.version, kind=kind.kind, namespaced=True)
        else:
            obj["metadata"].setdefault("resourceVersion", "1")
            validation.validate_update(obj, old, group=kind.group, version=kind.version, kind=kind.kind,
                                       subresource=subresource)
    except errors.Invalid as exc:
        return [c.text() for c in exc.causes]
    return []


def pg(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "pg"}, "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}, **spec}}


@pytest.mark.parametrize(("spec", "expected"), [
    ({}, []),
    ({"schedulingPolicy": {}}, ['spec.schedulingPolicy: Invalid value: "": must specify one of: `basic`, `gang`']),
    ({"schedulingPolicy": {"basic": {}, "gang": {"minCount": 1}}},
     ['spec.schedulingPolicy: Invalid value: "{`basic`, `gang`}": exactly one of `basic`, `gang` is required, '
      'but multiple fields are set']),
    ({"schedulingPolicy": {"gang": {}}}, ["spec.schedulingPolicy.gang.minCount: Required value"]),
    ({"schedulingPolicy": {"gang": {"minCount": -1}}},
     ["spec.schedulingPolicy.gang.minCount: Invalid value: -1: must be greater than or equal to 1"]),
    ({"workloadRef": {"workloadName": "w"}}, ["spec.workloadRef.templateName: Required value"]),
    ({"workloadRef": {"workloadName": "W", "templateName": "t"}},
     ['spec.workloadRef.workloadName: Invalid value: "W": a lowercase RFC 1123 subdomain must consist of lower case '
      "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
      "'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*"
      "[a-z0-9])?)*')"]),
    ({"resourceClaims": [{"name": "a", "resourceClaimName": "c"}, {"name": "a", "resourceClaimTemplateName": "t"}]},
     ['spec.resourceClaims[1]: Duplicate value: {"name":"a"}']),
    ({"resourceClaims": [{"name": "a"}]},
     ['spec.resourceClaims[0]: Invalid value: "": must specify one of: `resourceClaimName`, '
      "`resourceClaimTemplateName`"]),
    ({"resourceClaims": [{"name": f"c{i}", "resourceClaimName": "x"} for i in range(5)]},
     ["spec.resourceClaims: Too many: 5: must have at most 4 items"]),
    ({"priority": 1_000_000_001},
     ["spec.priority: Invalid value: 1000000001: must be less than or equal to 1000000000"]),
    ({"schedulingConstraints": {"topology": [{"key": "rack"}]}}, ["spec.schedulingConstraints: Forbidden"]),
    ({"disruptionMode": {"single": {}, "all": {}}},
     ['spec.disruptionMode: Invalid value: "{`single`, `all`}": exactly one of `single`, `all` is required, '
      "but multiple fields are set"]),
])
def test_pod_group_create(spec: dict[str, Any], expected: list[str]) -> None:
    assert _errors(PODGROUP, pg(**spec)) == expected


def test_pod_group_defaults_disruption_mode() -> None:
    obj = pg()
    defaulting.apply_defaults(obj, group="scheduling.k8s.io", version="v1beta1", kind="PodGroup")
    assert obj["spec"]["disruptionMode"] == {"single": {}}


def _stored(obj: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["apiVersion"], out["kind"] = PODGROUP.api_version, PODGROUP.kind
    out["metadata"].update(namespace="default", resourceVersion="1", uid="u", generation=1)
    defaulting.apply_defaults(out, group="scheduling.k8s.io", version="v1beta1", kind="PodGroup")
    return out


def test_pod_group_update_min_count_only() -> None:
    old = _stored(pg())
    new = copy.deepcopy(old)
    new["spec"]["schedulingPolicy"]["gang"]["minCount"] = 5
    assert _errors(PODGROUP, new, old) == []
    new["spec"]["schedulingPolicy"] = {"basic": {}}
    assert _errors(PODGROUP, new, old) == [
        "spec.schedulingPolicy.basic: Invalid value: null: field is immutable",
        "spec.schedulingPolicy.gang: Invalid value: null: field cannot be cleared once created"]
    new = copy.deepcopy(old)
    new["spec"]["priorityClassName"] = "high"
    assert _errors(PODGROUP, new, old) == ["spec.priorityClassName: Invalid value: null: field is immutable"]


def wl(*templates: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "w"}, "spec": {"podGroupTemplates": list(templates), **spec}}


def tpl(name: str = "t", **fields: Any) -> dict[str, Any]:
    return {"name": name, "schedulingPolicy": {"gang": {"minCount": 1}}, **fields}


@pytest.mark.parametrize(("obj", "expected"), [
    (wl(tpl()), []),
    (wl(), ['spec: Invalid value: "": must specify one of: `podGroupTemplates`, `compositePodGroupTemplates`']),
    (wl(*(tpl(f"t{i}") for i in range(9))), ["spec.podGroupTemplates: Too many: 9: must have at most 8 items"]),
    (wl(tpl(), tpl()), ['spec.podGroupTemplates[1]: Duplicate value: {"name":"t"}']),
    (wl(tpl(schedulingPolicy={})),
     ['spec.podGroupTemplates[0].schedulingPolicy: Invalid value: "": must specify one of: `basic`, `gang`']),
    (wl(tpl(), controllerRef={"kind": "Job"}), ["spec.controllerRef.name: Required value"]),
    (wl(tpl(), controllerRef={"kind": "Job", "name": "a/b"}),
     ['spec.controllerRef.name: Invalid value: "a/b": may not contain \'/\'']),
])
def test_workload_create(obj: dict[str, Any], expected: list[str]) -> None:
    assert _errors(WORKLOAD, obj) == expected


def test_workload_templates_cannot_be_added_or_removed() -> None:
    old = wl(tpl("a"))
    old.update(apiVersion=WORKLOAD.api_version, kind="Workload")
    old["metadata"].update(namespace="default", resourceVersion="1", uid="u", generation=1)
    new = copy.deepcopy(old)
    new["spec"]["podGroupTemplates"] = [tpl("b")]
    assert _errors(WORKLOAD, new, old) == [
        "spec.podGroupTemplates[0]: Forbidden: adding list items is not allowed",
        "spec.podGroupTemplates: Forbidden: removing list items is not allowed"]


def test_pod_scheduling_group() -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": "i"}], "schedulingGroup": {}}}
    kind = res.by_kind("", "Pod")
    assert kind is not None
    obj = copy.deepcopy(pod)
    defaulting.apply_defaults(obj, group="", version="v1", kind="Pod")
    with pytest.raises(errors.Invalid) as exc:
        validation.validate_create(obj, group="", version="v1", kind="Pod", namespaced=True)
    assert [c.text() for c in exc.value.causes] == [
        'spec.schedulingGroup: Invalid value: "": must specify one of: `podGroupName`']


ON = features.FeatureGates({features.GENERIC_WORKLOAD: True, features.DRA_WORKLOAD_RESOURCE_CLAIMS: True})


@pytest.mark.parametrize(("gates", "old_has", "kept"), [
    (features.DEFAULT, False, False),  # dropped while the gate is off...
    (features.DEFAULT, True, True),  # ...unless the stored object already uses it
    (ON, False, True),
])
def test_disabled_fields_are_dropped(gates: features.FeatureGates, old_has: bool, kept: bool) -> None:
    group = {"podGroupName": "g"}
    pod = {"spec": {"containers": [], "schedulingGroup": dict(group)}}
    old = {"spec": {"containers": [], **({"schedulingGroup": dict(group)} if old_has else {})}}
    disabled.drop_disabled_fields(pod, old if old_has else None, group="", kind="Pod", features=gates)
    assert ("schedulingGroup" in pod["spec"]) is kept
    deployment = {"spec": {"template": {"spec": {"schedulingGroup": dict(group)}}}}
    disabled.drop_disabled_fields(deployment, None, group="apps", kind="Deployment", features=gates)
    assert ("schedulingGroup" in deployment["spec"]["template"]["spec"]) is (gates is ON)
    claims = [{"name": "c", "resourceClaimName": "x"}]
    podgroup = {"spec": {"resourceClaims": list(claims)}, "status": {"resourceClaimStatuses": [{"name": "c"}]}}
    disabled.drop_disabled_fields(podgroup, None, group="scheduling.k8s.io", kind="PodGroup", features=gates)
    assert ("resourceClaims" in podgroup["spec"]) is (gates is ON)
    assert ("resourceClaimStatuses" in podgroup["status"]) is (gates is ON)
