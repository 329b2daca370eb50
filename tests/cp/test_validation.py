"""cp/validation/: structural decoding checks and per-kind validation.

Tables of cases whose expected error types, field paths and messages were written from upstream
behaviour (apimachinery field errors, `pkg/apis/*/validation`). Objects are defaulted first, as the
API server does. Excluded: the HTTP round trip (tests/api covers it).
"""

from __future__ import annotations

import copy
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cp import defaulting, errors, features, validation
from cp.validation import dra_fields

# ---------------------------------------------------------------- fixtures


def pod(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"containers": [{"name": "app", "image": "nginx:1.27"}]}
    body.update(spec)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default"}, "spec": body}


def deployment() -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}}


def hpa() -> dict[str, Any]:
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                     "maxReplicas": 5}}


def claim(*requests: dict[str, Any], **devices: Any) -> dict[str, Any]:
    reqs = list(requests) or [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": "default"},
            "spec": {"devices": {"requests": reqs, **devices}}}


def slice_(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"driver": "gpu.example.com", "pool": {"name": "node-1", "generation": 0,
                                                                "resourceSliceCount": 1},
                            "nodeName": "node-1", "devices": [{"name": "gpu-0"}]}
    body.update(spec)
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"}, "spec": body}


_KINDS = {
    "Pod": ("", "v1", True), "Deployment": ("apps", "v1", True), "ReplicaSet": ("apps", "v1", True),
    "HorizontalPodAutoscaler": ("autoscaling", "v2", True), "Namespace": ("", "v1", False),
    "ResourceClaim": ("resource.k8s.io", "v1", True), "ResourceClaimTemplate": ("resource.k8s.io", "v1", True),
    "ResourceSlice": ("resource.k8s.io", "v1", False), "DeviceClass": ("resource.k8s.io", "v1", False),
    "DeviceTaintRule": ("resource.k8s.io", "v1", False), "ConfigMap": ("", "v1", True),
    "Lease": ("coordination.k8s.io", "v1", True), "Node": ("", "v1", False), "Event": ("", "v1", True),
}


def _prepared(obj: dict[str, Any]) -> dict[str, Any]:
    group, version, _ = _KINDS[obj["kind"]]
    obj = copy.deepcopy(obj)
    defaulting.apply_defaults(obj, group=group, version=version, kind=obj["kind"])
    return obj


def create_causes(obj: dict[str, Any], gates: features.FeatureGates = features.DEFAULT) -> list[errors.Cause]:
    group, version, namespaced = _KINDS[obj["kind"]]
    obj = _prepared(obj)
    try:
        validation.validate_create(obj, group=group, version=version, kind=obj["kind"], namespaced=namespaced,
                                   features=gates)
    except errors.Invalid as exc:
        return exc.causes
    return []


def update_causes(new: dict[str, Any], old: dict[str, Any], subresource: str = "",
                  gates: features.FeatureGates = features.DEFAULT) -> list[errors.Cause]:
    group, version, _ = _KINDS[new["kind"]]
    new, old = _prepared(new), _prepared(old)
    for o in (new, old):
        o["metadata"].setdefault("resourceVersion", "5")
    try:
        validation.validate_update(new, old, group=group, version=version, kind=new["kind"],
                                   subresource=subresource, features=gates)
    except errors.Invalid as exc:
        return exc.causes
    return []


def texts(causes: list[errors.Cause]) -> list[str]:
    return [c.text() for c in causes]


def fields(causes: list[errors.Cause]) -> list[tuple[str, str]]:
    return [(c.type, c.field) for c in causes]


def mutate(base: dict[str, Any], fn: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    obj = copy.deepcopy(base)
    fn(obj)
    return obj


# ---------------------------------------------------------------- valid objects


@pytest.mark.parametrize("obj", [
    pod(), deployment(), hpa(), claim(), slice_(),
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "default"},
     "data": {"a.txt": "x"}},
    {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l", "namespace": "default"},
     "spec": {"holderIdentity": "x", "leaseDurationSeconds": 15}},
    {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.example.com"},
     "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]}},
    {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": "r"},
     "spec": {"deviceSelector": {"driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0"},
              "taint": {"key": "example.com/broken", "effect": "NoExecute"}}},
    {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
     "metadata": {"name": "t", "namespace": "default"},
     "spec": {"metadata": {"labels": {"a": "b"}},
              "spec": {"devices": {"requests": [{"name": "gpu", "firstAvailable": [
                  {"name": "big", "deviceClassName": "big.example.com"},
                  {"name": "small", "deviceClassName": "small.example.com", "count": 2}]}]}}}},
], ids=lambda o: o["kind"])
def test_valid_objects_pass(obj: dict[str, Any]) -> None:
    assert texts(create_causes(obj)) == []


# ---------------------------------------------------------------- metadata


SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                 "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
                 "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
             "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
             "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")


def test_pod_name_message_matches_upstream() -> None:
    obj = mutate(pod(), lambda o: o["metadata"].update(name="Bad_Name"))
    causes = create_causes(obj)
    assert texts(causes) == [f'metadata.name: Invalid value: "Bad_Name": {SUBDOMAIN_MSG}']
    with pytest.raises(errors.Invalid) as info:
        validation.validate_create(_prepared(obj), group="", version="v1", kind="Pod", namespaced=True)
    assert info.value.message.startswith('Pod "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": ')
    assert info.value.status()["details"]["causes"][0] == {
        "reason": "FieldValueInvalid", "field": "metadata.name",
        "message": f'Invalid value: "Bad_Name": {SUBDOMAIN_MSG}'}


@pytest.mark.parametrize(("meta", "expected"), [
    ({"name": ""}, ["metadata.name: Required value: name or generateName is required"]),
    ({"name": "a" * 254}, [f'metadata.name: Invalid value: "{"a" * 254}": must be no more than 253 characters']),
    ({"name": "ok", "generateName": "Bad-"},
     [f'metadata.generateName: Invalid value: "Bad-": {SUBDOMAIN_MSG}']),
    ({"name": "ok", "labels": {"app": "-x"}},
     ['metadata.labels: Invalid value: "-x": a valid label must be an empty string or consist of alphanumeric '
      "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
      "'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"]),
    ({"name": "ok", "labels": {"a/b/c": "x"}},
     ['metadata.labels: Invalid value: "a/b/c": a valid label key must consist of alphanumeric characters, '
      "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  "
      "or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional "
      "DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]),
    ({"name": "ok", "annotations": {"/x": "y"}},
     ['metadata.annotations: Invalid value: "/x": prefix part must be non-empty']),
    ({"name": "ok", "annotations": {"big": "x" * (256 * 1024)}},
     ["metadata.annotations: Too long: may not be more than 262144 bytes"]),
    ({"name": "ok", "finalizers": ["bad"]},
     ['metadata.finalizers[0]: Invalid value: "bad": name is neither a standard finalizer name nor is it '
      "fully qualified"]),
    ({"name": "ok", "finalizers": ["example.com/f", "kubernetes"]}, []),
    ({"name": "ok", "ownerReferences": [{"apiVersion": "", "kind": "", "name": "", "uid": ""}]},
     ['metadata.ownerReferences.apiVersion: Invalid value: "": version must not be empty',
      'metadata.ownerReferences.kind: Invalid value: "": must not be empty',
      'metadata.ownerReferences.name: Invalid value: "": must not be empty',
      'metadata.ownerReferences.uid: Invalid value: "": must not be empty']),
])
def test_object_meta(meta: dict[str, Any], expected: list[str]) -> None:
    obj = pod()
    obj["metadata"] = {"namespace": "default", **meta}
    assert texts(create_causes(obj)) == expected


def test_namespace_names_are_dns_labels() -> None:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a.b"}}
    assert texts(create_causes(ns)) == ['metadata.name: Invalid value: "a.b": must not contain dots']
    ns["metadata"]["name"] = "Team"
    assert texts(create_causes(ns)) == [f'metadata.name: Invalid value: "Team": {LABEL_MSG}']


def test_generate_name_prefix_may_end_with_dash() -> None:
    obj = mutate(pod(), lambda o: o["metadata"].update(generateName="web-", name="web-x7k2p"))
    assert create_causes(obj) == []


def test_metadata_immutable_on_update() -> None:
    old = mutate(pod(), lambda o: o["metadata"].update(uid="u1", creationTimestamp="2026-01-01T00:00:00Z"))
    new = mutate(old, lambda o: o["metadata"].update(uid="u2", creationTimestamp="2026-01-02T00:00:00Z"))
    assert texts(update_causes(new, old)) == [
        'metadata.uid: Invalid value: "u2": field is immutable',
        'metadata.creationTimestamp: Invalid value: "2026-01-02T00:00:00Z": field is immutable']


def test_no_new_finalizers_while_deleting() -> None:
    old = mutate(pod(), lambda o: o["metadata"].update(deletionTimestamp="2026-01-01T00:00:00Z",
                                                        finalizers=["a.io/x"]))
    new = mutate(old, lambda o: o["metadata"].update(finalizers=["a.io/x", "b.io/y"]))
    assert texts(update_causes(new, old)) == [
        'metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new '
        'finalizers []string{"b.io/y"}']


# ---------------------------------------------------------------- pods


@pytest.mark.parametrize(("spec", "expected"), [
    ({"containers": []}, [("Required", "spec.containers")]),
    ({"containers": [{"name": "a", "image": "x"}, {"name": "a", "image": "y"}]},
     [("Duplicate", "spec.containers[1].name")]),
    ({"containers": [{"name": "A_b", "image": "x"}]}, [("Invalid", "spec.containers[0].name")]),
    ({"containers": [{"name": "a"}]}, [("Required", "spec.containers[0].image")]),
    ({"initContainers": [{"name": "app", "image": "x"}]}, [("Duplicate", "spec.initContainers[0].name")]),
    ({"restartPolicy": "Sometimes"}, [("NotSupported", "spec.restartPolicy")]),
    ({"dnsPolicy": "Weird"}, [("NotSupported", "spec.dnsPolicy")]),
    ({"activeDeadlineSeconds": 0}, [("Invalid", "spec.activeDeadlineSeconds")]),
    ({"nodeName": "Node_1"}, [("Invalid", "spec.nodeName")]),
    ({"tolerations": [{"operator": "Equal", "value": "x"}]}, [("Invalid", "spec.tolerations[0].operator")]),
    ({"tolerations": [{"key": "k", "operator": "Exists", "tolerationSeconds": 5}]},
     [("Invalid", "spec.tolerations[0].effect")]),
    ({"tolerations": [{"key": "k", "operator": "Maybe"}]}, [("NotSupported", "spec.tolerations[0].operator")]),
    ({"tolerations": [{"key": "k", "effect": "Sometimes"}]}, [("NotSupported", "spec.tolerations[0].effect")]),
    ({"containers": [{"name": "a", "image": "x", "ports": [{"containerPort": 70000}]}]},
     [("Invalid", "spec.containers[0].ports[0].containerPort")]),
    ({"containers": [{"name": "a", "image": "x", "ports": [{"containerPort": 80, "protocol": "HTTP"}]}]},
     [("NotSupported", "spec.containers[0].ports[0].protocol")]),
    ({"containers": [{"name": "a", "image": "x",
                      "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}}]},
     [("Invalid", "spec.containers[0].resources.requests")]),
    ({"containers": [{"name": "a", "image": "x", "resources": {"requests": {"example.com/gpu": "1"}}}]},
     [("Required", "spec.containers[0].resources.limits")]),
    ({"containers": [{"name": "a", "image": "x", "resources": {"limits": {"example.com/gpu": "0.5"}}}]},
     [("Invalid", "spec.containers[0].resources.limits[example.com/gpu]"),
      ("Invalid", "spec.containers[0].resources.requests[example.com/gpu]")]),
    ({"containers": [{"name": "a", "image": "x", "resources": {"limits": {"gpu": "1"}}}]},
     [("Invalid", "spec.containers[0].resources.limits[gpu]"),
      ("Invalid", "spec.containers[0].resources.requests[gpu]")]),
    ({"schedulingGates": [{"name": "a.io/g"}, {"name": "a.io/g"}]}, [("Duplicate", "spec.schedulingGates[1]")]),
    ({"ephemeralContainers": [{"name": "dbg", "image": "busybox"}]},
     [("Forbidden", "spec.ephemeralContainers")]),
    ({"nodeName": "n1", "schedulingGates": [{"name": "a.io/g"}]}, [("Forbidden", "spec.nodeName")]),
])
def test_pod_spec_rules(spec: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert fields(create_causes(pod(**spec))) == expected


def test_pod_restart_policy_message() -> None:
    assert texts(create_causes(pod(restartPolicy="Sometimes"))) == [
        'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"']


@pytest.mark.parametrize(("claims", "expected"), [
    ([{"name": "gpu", "resourceClaimName": "c1"}], []),
    ([{"name": "gpu"}], ['spec.resourceClaims[0]: Invalid value: core.PodResourceClaim{Name:"gpu", '
                         'ResourceClaimName:(*string)(nil), ResourceClaimTemplateName:(*string)(nil)}: must specify '
                         'one of: `resourceClaimName`, `resourceClaimTemplateName`']),
    ([{"name": "gpu", "resourceClaimName": "c1", "resourceClaimTemplateName": "t1"}],
     ['spec.resourceClaims[0]: Invalid value: core.PodResourceClaim{Name:"gpu", ResourceClaimName:&"c1", '
      'ResourceClaimTemplateName:&"t1"}: at most one of `resourceClaimName` or `resourceClaimTemplateName` may be '
      'specified']),
    ([{"name": "gpu", "resourceClaimName": "c1"}, {"name": "gpu", "resourceClaimName": "c2"}],
     ['spec.resourceClaims[1].name: Duplicate value: "gpu"']),
    ([{"name": "GPU", "resourceClaimName": "c1"}], [f'spec.resourceClaims[0].name: Invalid value: "GPU": {LABEL_MSG}']),
])
def test_pod_resource_claims(claims: list[dict[str, Any]], expected: list[str]) -> None:
    assert texts(create_causes(pod(resourceClaims=claims))) == expected


def test_container_claims_must_reference_pod_claims() -> None:
    spec = {"containers": [{"name": "app", "image": "x", "resources": {"claims": [{"name": "gpu"}]}}]}
    assert texts(create_causes(pod(**spec))) == [
        'spec.containers[0].resources.claims[0]: Not found: "gpu": must be one of the names in '
        "pod.spec.resourceClaims which is empty"]
    spec["resourceClaims"] = [{"name": "fpga", "resourceClaimName": "c"}, {"name": "net", "resourceClaimName": "n"}]
    assert texts(create_causes(pod(**spec))) == [
        'spec.containers[0].resources.claims[0]: Not found: "gpu": must be one of the names in '
        "pod.spec.resourceClaims: fpga, net"]
    spec["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "c"}]
    assert create_causes(pod(**spec)) == []


def test_pod_update_allows_image_and_toleration_additions() -> None:
    old = pod()
    new = mutate(old, lambda o: o["spec"]["containers"][0].update(image="nginx:1.28"))
    new["spec"]["tolerations"] = [{"key": "a.io/x", "operator": "Exists", "effect": "NoSchedule"}]
    new["spec"]["activeDeadlineSeconds"] = 30
    assert update_causes(new, old) == []


def test_pod_update_forbids_other_spec_changes() -> None:
    old = pod()
    new = mutate(old, lambda o: o["spec"].update(nodeName="node-1"))
    causes = update_causes(new, old)
    assert fields(causes) == [("Forbidden", "spec")]
    assert causes[0].detail.startswith(
        "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,"
        "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),"
        "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)\n")
    assert "NodeName" in causes[0].detail


def test_pod_update_rules() -> None:
    old = pod(tolerations=[{"key": "a.io/x", "operator": "Exists"}], schedulingGates=[{"name": "a.io/g"}],
              activeDeadlineSeconds=30)
    removed = mutate(old, lambda o: o["spec"].update(tolerations=[]))
    assert ("Forbidden", "spec.tolerations") in fields(update_causes(removed, old))
    longer = mutate(old, lambda o: o["spec"].update(activeDeadlineSeconds=60))
    assert texts(update_causes(longer, old)) == [
        "spec.activeDeadlineSeconds: Invalid value: 60: must be less than or equal to previous value"]
    gate = mutate(old, lambda o: o["spec"].update(schedulingGates=[{"name": "a.io/g"}, {"name": "b.io/h"}]))
    assert texts(update_causes(gate, old)) == [
        "spec.schedulingGates[1].name: Forbidden: only deletion is allowed, but found new scheduling gate 'b.io/h'"]
    ungated = mutate(old, lambda o: o["spec"].pop("schedulingGates"))
    assert update_causes(ungated, old) == []
    added = mutate(old, lambda o: o["spec"]["containers"].append({"name": "b", "image": "x"}))
    assert fields(update_causes(added, old)) == [("Forbidden", "spec.containers")]


def test_pod_status_update_cannot_set_node() -> None:
    old = pod()
    new = mutate(old, lambda o: o["spec"].update(nodeName="n1"))
    assert fields(update_causes(new, old, subresource="status")) == [("Forbidden", "status.nodeName")]


# ---------------------------------------------------------------- deployments and replica sets


def test_deployment_selector_must_match_template() -> None:
    obj = mutate(deployment(), lambda o: o["spec"]["template"]["metadata"].update(labels={"app": "other"}))
    assert texts(create_causes(obj)) == [
        'spec.template.metadata.labels: Invalid value: map[string]string{"app":"other"}: `selector` does not match '
        "template `labels`"]


@pytest.mark.parametrize(("fn", "expected"), [
    (lambda o: o["spec"].pop("selector"), [("Required", "spec.selector")]),
    (lambda o: o["spec"].update(selector={}), [("Invalid", "spec.selector")]),
    (lambda o: o["spec"].update(replicas=-1), [("Invalid", "spec.replicas")]),
    (lambda o: o["spec"]["template"]["spec"].update(restartPolicy="Never"),
     [("NotSupported", "spec.template.spec.restartPolicy")]),
    (lambda o: o["spec"].update(strategy={"type": "Recreate", "rollingUpdate": {}}),
     [("Forbidden", "spec.strategy.rollingUpdate")]),
    (lambda o: o["spec"].update(strategy={"type": "RollingUpdate",
                                          "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}),
     [("Invalid", "spec.strategy.rollingUpdate.maxUnavailable")]),
    (lambda o: o["spec"].update(strategy={"type": "RollingUpdate",
                                          "rollingUpdate": {"maxUnavailable": "150%"}}),
     [("Invalid", "spec.strategy.rollingUpdate.maxUnavailable")]),
    (lambda o: o["spec"].update(minReadySeconds=900), [("Invalid", "spec.progressDeadlineSeconds")]),
    (lambda o: o["spec"]["selector"].update(matchExpressions=[{"key": "a", "operator": "In"}]),
     [("Required", "spec.selector.matchExpressions[0].values"), ("Invalid", "spec.selector")]),
])
def test_deployment_rules(fn: Callable[[dict[str, Any]], Any], expected: list[tuple[str, str]]) -> None:
    assert fields(create_causes(mutate(deployment(), fn))) == expected


def test_deployment_selector_immutable() -> None:
    old = deployment()
    new = mutate(old, lambda o: (o["spec"]["selector"]["matchLabels"].update(tier="x"),
                                 o["spec"]["template"]["metadata"]["labels"].update(tier="x")))
    assert texts(update_causes(new, old)) == [
        'spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"web", "tier":"x"}, '
        "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable"]


def test_replicaset_rules() -> None:
    rs = mutate(deployment(), lambda o: o.update(kind="ReplicaSet"))
    assert create_causes(rs) == []
    rs["spec"]["replicas"] = -2
    assert texts(create_causes(rs)) == ["spec.replicas: Invalid value: -2: must be greater than or equal to 0"]


# ---------------------------------------------------------------- autoscaling


@pytest.mark.parametrize(("fn", "expected"), [
    (lambda o: o["spec"].update(maxReplicas=0),
     ["spec.maxReplicas: Invalid value: 0: must be greater than 0",
      "spec.maxReplicas: Invalid value: 0: must be greater than or equal to `minReplicas`"]),
    (lambda o: o["spec"].update(minReplicas=6),
     ["spec.maxReplicas: Invalid value: 5: must be greater than or equal to `minReplicas`"]),
    (lambda o: o["spec"].update(minReplicas=0),
     ["spec.minReplicas: Invalid value: 0: must be greater than or equal to 1",
      "spec.metrics: Forbidden: must specify at least one Object or External metric to support scaling to zero "
      "replicas"]),
    (lambda o: o["spec"].update(minReplicas=-1),
     ["spec.minReplicas: Invalid value: -1: must be greater than or equal to 1"]),
    (lambda o: o["spec"].update(scaleTargetRef={}),
     ["spec.scaleTargetRef.kind: Required value", "spec.scaleTargetRef.name: Required value"]),
    (lambda o: o["spec"].update(metrics=[{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 0}}}]),
     ["spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be greater than 0"]),
    (lambda o: o["spec"].update(metrics=[{"type": "Pods"}]),
     ["spec.metrics[0].pods: Required value: must populate information for the given metric source"]),
    (lambda o: o["spec"].update(behavior={"scaleUp": {"stabilizationWindowSeconds": 4000}}),
     ["spec.behavior.scaleUp.stabilizationWindowSeconds: Invalid value: 4000: must be less than or equal to 3600"]),
    (lambda o: o["spec"].update(behavior={"scaleDown": {"policies": [{"type": "Pods", "value": 0,
                                                                      "periodSeconds": 15}]}}),
     ["spec.behavior.scaleDown.policies[0].value: Invalid value: 0: must be greater than zero"]),
])
def test_hpa_rules(fn: Callable[[dict[str, Any]], Any], expected: list[str]) -> None:
    assert texts(create_causes(mutate(hpa(), fn))) == expected


SCALE_TO_ZERO = features.parse("HPAScaleToZero=true")


def to_zero(o: dict[str, Any]) -> None:
    o["spec"].update(minReplicas=0, metrics=[{"type": "External", "external": {
        "metric": {"name": "queue_length"}, "target": {"type": "AverageValue", "averageValue": "30"}}}])


def test_hpa_scale_to_zero_with_external_metric() -> None:
    obj = mutate(hpa(), to_zero)
    assert create_causes(obj, SCALE_TO_ZERO) == []
    # the alpha gate is off in a default 1.37 cluster
    assert texts(create_causes(obj)) == ["spec.minReplicas: Invalid value: 0: must be greater than or equal to 1"]


def test_hpa_scale_to_zero_gate_on() -> None:
    assert texts(create_causes(mutate(hpa(), lambda o: o["spec"].update(minReplicas=0)), SCALE_TO_ZERO)) == [
        "spec.metrics: Forbidden: must specify at least one Object or External metric to support scaling to zero "
        "replicas"]
    assert texts(create_causes(mutate(hpa(), lambda o: o["spec"].update(minReplicas=-1)), SCALE_TO_ZERO)) == [
        "spec.minReplicas: Invalid value: -1: must be greater than or equal to 0"]


def test_hpa_stored_with_zero_stays_valid_after_the_gate_is_turned_off() -> None:
    # upstream's strategy: an HPA that already has minReplicas 0 may keep it
    old = mutate(hpa(), to_zero)
    new = mutate(old, lambda o: o["spec"].update(maxReplicas=7))
    assert update_causes(new, old) == []
    assert texts(update_causes(new, hpa())) == [
        "spec.minReplicas: Invalid value: 0: must be greater than or equal to 1"]


# ---------------------------------------------------------------- DRA: claims


@pytest.mark.parametrize(("request_", "expected"), [
    ({"name": "gpu"}, ["spec.devices.requests[0]: Required value: exactly one of `exactly` or `firstAvailable` is "
                       "required"]),
    ({"name": "gpu", "exactly": {"deviceClassName": "c"}, "firstAvailable": [{"name": "s", "deviceClassName": "c"}]},
     ["spec.devices.requests[0]: Invalid value: null: exactly one of `exactly` or `firstAvailable` is required, but "
      "multiple fields are set"]),
    ({"name": "gpu", "exactly": {}}, ["spec.devices.requests[0].exactly.deviceClassName: Required value"]),
    ({"name": "gpu", "exactly": {"deviceClassName": "c", "count": -1}},
     ["spec.devices.requests[0].exactly.count: Invalid value: -1: must be greater than zero"]),
    ({"name": "gpu", "exactly": {"deviceClassName": "c", "allocationMode": "All", "count": 2}},
     ["spec.devices.requests[0].exactly.count: Invalid value: 2: must not be specified when allocationMode is 'All'"]),
    ({"name": "gpu", "exactly": {"deviceClassName": "c", "allocationMode": "Some"}},
     ['spec.devices.requests[0].exactly.allocationMode: Unsupported value: "Some": supported values: "All", '
      '"ExactCount"']),
    ({"name": "gpu", "exactly": {"deviceClassName": "c", "selectors": [{}]}},
     ["spec.devices.requests[0].exactly.selectors[0].cel: Required value"]),
    ({"name": "gpu", "exactly": {"deviceClassName": "c", "selectors": [{"cel": {"expression": "x" * 10241}}]}},
     ["spec.devices.requests[0].exactly.selectors[0].cel.expression: Too long: may not be more than 10240 bytes"]),
    ({"name": "gpu", "exactly": {"deviceClassName": "c", "tolerations": [{"key": "k", "operator": "Exists",
                                                                          "value": "v"}]}},
     ['spec.devices.requests[0].exactly.tolerations[0].value: Invalid value: "v": must be empty for operator '
      '`Exists`']),
    ({"name": "gpu", "exactly": {"deviceClassName": "c", "tolerations": [{"key": "k", "effect": "Later"}]}},
     ['spec.devices.requests[0].exactly.tolerations[0].effect: Unsupported value: "Later": supported values: '
      '"NoExecute", "NoSchedule", "None"']),
    ({"name": "Gpu", "exactly": {"deviceClassName": "c"}},
     [f'spec.devices.requests[0].name: Invalid value: "Gpu": {LABEL_MSG}']),
    ({"name": "gpu", "firstAvailable": [{"name": "a", "deviceClassName": "c"}, {"name": "a", "deviceClassName": "d"}]},
     ['spec.devices.requests[0].firstAvailable[1]: Duplicate value: "a"']),
    ({"name": "gpu", "firstAvailable": [{"name": "a", "deviceClassName": "c"}] * 9},
     ["spec.devices.requests[0].firstAvailable: Too many: 9: must have at most 8 items"]),
])
def test_claim_requests(request_: dict[str, Any], expected: list[str]) -> None:
    assert texts(create_causes(claim(request_))) == expected


def test_claim_request_limits_and_uniqueness() -> None:
    reqs = [{"name": f"r{i}", "exactly": {"deviceClassName": "c"}} for i in range(33)]
    assert fields(create_causes(claim(*reqs))) == [("TooMany", "spec.devices.requests")]
    dup = [{"name": "r", "exactly": {"deviceClassName": "c"}}] * 2
    assert texts(create_causes(claim(*dup))) == ['spec.devices.requests[1]: Duplicate value: "r"']


def test_claim_constraints_and_config() -> None:
    obj = claim(constraints=[{"requests": ["gpu", "nope", "gpu/x"], "matchAttribute": "model"}],
                config=[{"requests": ["gpu"], "opaque": {"driver": "gpu.example.com", "parameters": [1]}},
                        {"requests": []}])
    ref_msg = ("must be the name of a request in the claim or the name of a request and a subrequest separated by "
               "'/'")
    assert texts(create_causes(obj)) == [
        f'spec.devices.constraints[0].requests[1]: Invalid value: "nope": {ref_msg}',
        f'spec.devices.constraints[0].requests[2]: Invalid value: "gpu/x": {ref_msg}',
        'spec.devices.constraints[0].matchAttribute: Invalid value: "model": a fully qualified name must be a domain '
        "and a name separated by a slash",
        'spec.devices.config[0].opaque.parameters: Invalid value: "<value omitted>": must be a valid JSON object',
        "spec.devices.config[1].opaque: Required value",
    ]


def test_claim_subrequest_references() -> None:
    obj = claim({"name": "gpu", "firstAvailable": [{"name": "big", "deviceClassName": "c"}]},
                constraints=[{"requests": ["gpu/big"], "matchAttribute": "gpu.example.com/model"}])
    assert create_causes(obj) == []


def test_claim_spec_is_immutable() -> None:
    old = claim()
    new = mutate(old, lambda o: o["spec"]["devices"]["requests"][0]["exactly"].update(count=2))
    assert fields(update_causes(new, old)) == [("Invalid", "spec")]
    assert update_causes(copy.deepcopy(old), old) == []


def test_cel_checker_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []

    def checker(expr: str) -> str | None:
        seen.append(expr)
        return "compilation failed: undeclared reference to 'devic'" if "devic." in expr else None

    monkeypatch.setattr(dra_fields, "cel_compile_error", checker)
    obj = claim({"name": "gpu", "exactly": {"deviceClassName": "c", "selectors": [
        {"cel": {"expression": "device.driver == 'x'"}}, {"cel": {"expression": "devic.driver == 'x'"}}]}})
    assert texts(create_causes(obj)) == [
        "spec.devices.requests[0].exactly.selectors[1].cel.expression: Invalid value: \"devic.driver == 'x'\": "
        "compilation failed: undeclared reference to 'devic'"]
    assert seen == ["device.driver == 'x'", "devic.driver == 'x'"]


def test_cel_selectors_compile_in_the_allocators_environment() -> None:
    """No install step: the DRA rules compile selectors with `cp.dra.celenv` themselves."""
    obj = claim({"name": "gpu", "exactly": {"deviceClassName": "c", "selectors": [
        {"cel": {"expression": "device.driver == 'x'"}}, {"cel": {"expression": "devic.driver == 'x'"}}]}})
    assert texts(create_causes(obj)) == [
        "spec.devices.requests[0].exactly.selectors[1].cel.expression: Invalid value: \"devic.driver == 'x'\": "
        "compilation failed: ERROR: <input>:1:1: undeclared reference to 'devic' (in container '')"]


def test_the_cel_environment_loads_on_the_first_selector_only() -> None:
    """Importing the rules (as `cplane serve` does at start-up) does not load the `cel` extension."""
    probe = "import sys, cp.validation; print('cel' in sys.modules, 'cp.dra.celenv' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).parents[2])
    assert out.stdout.split() == ["False", "False"]


ALLOCATED = {"devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "node-1",
                                      "device": "gpu-0"}]},
             "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                 {"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]}}


def test_claim_status_rules() -> None:
    old = claim()
    ok = mutate(old, lambda o: o.update(status={"allocation": copy.deepcopy(ALLOCATED), "reservedFor": [
        {"resource": "pods", "name": "p", "uid": "u1"}]}))
    assert update_causes(ok, old, subresource="status") == []
    reserved_only = mutate(old, lambda o: o.update(status={"reservedFor": [{"resource": "pods", "name": "p",
                                                                             "uid": "u1"}]}))
    assert texts(update_causes(reserved_only, old, subresource="status")) == [
        "status.reservedFor: Forbidden: may not be specified when `allocated` is not set"]
    changed = mutate(ok, lambda o: o["status"]["allocation"]["devices"]["results"][0].update(device="gpu-1"))
    assert fields(update_causes(changed, ok, subresource="status")) == [("Invalid", "status.allocation")]
    cleared = mutate(ok, lambda o: o.update(status={}))
    assert update_causes(cleared, ok, subresource="status") == []
    dup = mutate(ok, lambda o: o["status"]["reservedFor"].append({"resource": "pods", "name": "q", "uid": "u1"}))
    assert texts(update_causes(dup, ok, subresource="status")) == ['status.reservedFor[1]: Duplicate value: "u1"']
    bad_ref = mutate(old, lambda o: o.update(status={"allocation": copy.deepcopy(ALLOCATED)}))
    bad_ref["status"]["allocation"]["devices"]["results"][0]["request"] = "cpu"
    assert fields(update_causes(bad_ref, old, subresource="status")) == [
        ("Invalid", "status.allocation.devices.results[0].request")]
    devices = mutate(ok, lambda o: o["status"].update(devices=[
        {"driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0"},
        {"driver": "gpu.example.com", "pool": "node-1", "device": "gpu-9"}]))
    assert texts(update_causes(devices, ok, subresource="status")) == [
        'status.devices[1]: Invalid value: "gpu.example.com/node-1/gpu-9": must be an allocated device in the claim']


def test_claim_reserved_for_limit() -> None:
    old = claim()
    new = mutate(old, lambda o: o.update(status={"allocation": copy.deepcopy(ALLOCATED), "reservedFor": [
        {"resource": "pods", "name": f"p{i}", "uid": f"u{i}"} for i in range(257)]}))
    assert fields(update_causes(new, old, subresource="status")) == [("TooMany", "status.reservedFor")]


def test_claim_template_paths() -> None:
    obj = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
           "metadata": {"name": "t", "namespace": "default"},
           "spec": {"metadata": {"labels": {"bad key": "x"}},
                    "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"count": 0}}]}}}}
    assert fields(create_causes(obj)) == [
        ("Invalid", "spec.metadata.labels"),
        ("Required", "spec.spec.devices.requests[0].exactly.deviceClassName")]


# ---------------------------------------------------------------- DRA: slices, classes, taint rules


@pytest.mark.parametrize(("spec", "expected"), [
    ({"nodeName": None}, ["spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
                          "`perDeviceNodeSelection` is required"]),
    ({"allNodes": True}, ['spec: Invalid value: "{`nodeName`, `allNodes`}": exactly one of `nodeName`, '
                          "`nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are "
                          "set"]),
    ({"nodeName": None, "allNodes": False},
     ["spec.allNodes: Invalid value: false: must be either unset or set to true",
      "spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is "
      "required"]),
    ({"pool": {"name": "", "generation": -1, "resourceSliceCount": 0}},
     ["spec.pool.name: Required value",
      "spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero",
      "spec.pool.generation: Invalid value: -1: must be greater than or equal to zero"]),
    ({"driver": ""}, ["spec.driver: Required value"]),
    ({"devices": [{"name": "gpu-0"}, {"name": "gpu-0"}]}, ['spec.devices[1]: Duplicate value: "gpu-0"']),
    ({"devices": [{"name": f"d{i}"} for i in range(129)]}, ["spec.devices: Too many: 129: must have at most 128 items"]),
    ({"devices": [{"name": f"d{i}", "taints": [{"key": "k", "effect": "NoSchedule"}]} for i in range(65)]},
     ["spec.devices: Too many: 65: must have at most 64 items"]),
    ({"devices": [{"name": "gpu-0", "attributes": {"model": {}, "mem": {"int": 1, "string": "x"},
                                                   "ver": {"version": "1.2"}}}]},
     ['spec.devices[0].attributes[model]: Invalid value: "": exactly one value must be specified',
      "spec.devices[0].attributes[mem]: Invalid value: resource.DeviceAttribute{...}: exactly one value must be "
      "specified",
      'spec.devices[0].attributes[ver].version: Invalid value: "1.2": must be a string compatible with semver.org '
      "spec 2.0.0"]),
    ({"devices": [{"name": "gpu-0", "attributes": {"bad-name": {"int": 1}}}]},
     ['spec.devices[0].attributes: Invalid value: "bad-name": a valid C identifier must start with alphabetic '
      "character or '_', followed by a string of alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  "
      "or 'MyName', regex used for validation is '[A-Za-z_][A-Za-z0-9_]*')"]),
    ({"devices": [{"name": "gpu-0", "attributes": {f"a{i}": {"int": i} for i in range(33)}}]},
     ["spec.devices[0]: Invalid value: 33: the total number of attributes and capacities must not exceed 32"]),
    ({"devices": [{"name": "gpu-0", "taints": [{"key": "k", "effect": "Sometimes"}]}]},
     ['spec.devices[0].taints[0].effect: Unsupported value: "Sometimes": supported values: "NoExecute", '
      '"NoSchedule", "None"']),
    ({"devices": [{"name": "gpu-0", "nodeName": "n"}]},
     ["spec.devices[0]: Invalid value: null: `nodeName`, `nodeSelector` and `allNodes` can only be set if "
      "`perDeviceNodeSelection` is set to true in the ResourceSlice spec"]),
    ({"devices": [{"name": "gpu-0", "capacity": {"memory": {"value": "8Gi", "requestPolicy": {"default": "1Gi"}}}}]},
     ["spec.devices[0].capacity[memory].requestPolicy: Forbidden: allowMultipleAllocations must be true"]),
    ({"devices": None, "sharedCounters": [{"name": "mem", "counters": {"memory": {"value": "8Gi"}}}]}, []),
    ({"sharedCounters": [{"name": "mem", "counters": {"memory": {"value": "8Gi"}}}]},
     ['spec: Invalid value: "": only one of `sharedCounters` or `devices` is allowed']),
    ({"nodeName": None, "nodeSelector": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "a", "operator": "In", "values": ["b"]}]}, {"matchExpressions": []}]}},
     ["spec.nodeSelector.nodeSelectorTerms: Invalid value: [...]: must have exactly one node selector term"]),
])
def test_resource_slice_rules(spec: dict[str, Any], expected: list[str]) -> None:
    obj = slice_(**spec)
    obj["spec"] = {k: val for k, val in obj["spec"].items() if val is not None}
    assert texts(create_causes(obj)) == expected


def _grouped(*groups: str) -> dict[str, Any]:
    return {"devices": [{"name": "gpu-0", "consumesCounters": [
        {"counterSet": "gpu", "counters": {"mem": {"value": "1Gi"}}, "compatibilityGroups": list(groups)}]}]}


@pytest.mark.parametrize(("spec", "expected"), [
    (_grouped("mig", "vgpu"), []),
    (_grouped("a", "b", "c"), ["spec.devices[0].consumesCounters[0].compatibilityGroups: Too many: 3: must have at "
                                "most 2 items"]),
    (_grouped("mig", "mig"), ['spec.devices[0].consumesCounters[0].compatibilityGroups[1]: Duplicate value: "mig"']),
])
def test_resource_slice_compatibility_groups(spec: dict[str, Any], expected: list[str]) -> None:
    obj = slice_(**spec)
    obj["spec"] = {k: val for k, val in obj["spec"].items() if val is not None}
    assert texts(create_causes(obj)) == expected


def test_resource_slice_immutable_fields() -> None:
    old = slice_()
    new = mutate(old, lambda o: (o["spec"].update(driver="other.example.com", nodeName="node-2"),
                                 o["spec"]["pool"].update(name="p2")))
    assert texts(update_causes(new, old)) == [
        'spec.pool.name: Invalid value: "p2": field is immutable',
        'spec.driver: Invalid value: "other.example.com": field is immutable',
        'spec.nodeName: Invalid value: "node-2": field is immutable']


def test_device_class_and_taint_rule() -> None:
    dc = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "c"},
          "spec": {"selectors": [{"cel": {"expression": ""}}],
                   "config": [{"opaque": {"driver": "Bad_Driver", "parameters": {}}}]}}
    assert fields(create_causes(dc)) == [("Required", "spec.selectors[0].cel.expression"),
                                         ("Invalid", "spec.config[0].opaque.driver")]
    rule = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": "r"},
            "spec": {"deviceSelector": {"device": "Gpu"}, "taint": {"key": "", "effect": ""}}}
    assert texts(create_causes(rule)) == [
        f'spec.deviceSelector.device: Invalid value: "Gpu": {LABEL_MSG}',
        'spec.taint.key: Invalid value: "": name part must be non-empty',
        'spec.taint.key: Invalid value: "": name part must consist of alphanumeric characters, \'-\', \'_\' or \'.\', '
        "and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
        "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        "spec.taint.effect: Required value"]


# ---------------------------------------------------------------- other kinds


def test_configmap_keys_and_lease() -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "default"},
          "data": {"bad key": "x"}}
    assert fields(create_causes(cm)) == [("Invalid", "data[bad key]")]
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l", "namespace": "d"},
             "spec": {"leaseDurationSeconds": 0}}
    assert texts(create_causes(lease)) == ["spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"]


def test_unknown_kinds_get_metadata_rules_only() -> None:
    obj = {"apiVersion": "sim.cplane.dev/v1alpha1", "kind": "Clock", "metadata": {"name": "Bad_Name"}, "spec": 5}
    with pytest.raises(errors.Invalid) as info:
        validation.validate_create(obj, group="sim.cplane.dev", version="v1alpha1", kind="Clock", namespaced=False)
    assert [c.field for c in info.value.causes] == ["metadata.name"]


# ---------------------------------------------------------------- check_structure


def _structure(obj: dict[str, Any], mode: str = "Strict", kind: str = "Pod", group: str = "",
               version: str = "v1") -> tuple[dict[str, Any], list[str]]:
    return validation.check_structure(obj, group=group, version=version, kind=kind, field_validation=mode)


def test_empty_optional_lists_and_maps_are_dropped_as_go_omitempty_does() -> None:
    """Upstream decodes into the typed object and encodes it again: an empty list or map at an
    `omitempty` field disappears; required fields, fields Go writes without `omitempty`, empty
    structs and free-form values stay."""
    obj = pod()
    obj["metadata"].update(labels={}, finalizers=[], annotations={"a": "b"})
    container = obj["spec"]["containers"][0]
    container.update(env=[], ports=[], resources={"requests": {}, "limits": {"cpu": "1"}})
    obj["spec"]["nodeSelector"] = {}
    cleaned, _ = _structure(copy.deepcopy(obj))
    assert "labels" not in cleaned["metadata"] and "finalizers" not in cleaned["metadata"]
    assert cleaned["metadata"]["annotations"] == {"a": "b"}
    assert "env" not in cleaned["spec"]["containers"][0] and "ports" not in cleaned["spec"]["containers"][0]
    assert cleaned["spec"]["containers"][0]["resources"] == {"limits": {"cpu": "1"}}
    assert "nodeSelector" not in cleaned["spec"]
    bare = pod()
    bare["spec"]["containers"][0]["resources"] = {}
    assert _structure(bare)[0]["spec"]["containers"][0]["resources"] == {}  # a struct: Go writes it

    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h"},
           "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "d"}, "maxReplicas": 2, "metrics": []},
           "status": {"currentMetrics": [], "desiredReplicas": 0, "conditions": []}}
    cleaned, _ = _structure(hpa, kind="HorizontalPodAutoscaler", group="autoscaling", version="v2")
    assert "metrics" not in cleaned["spec"]
    assert cleaned["status"]["currentMetrics"] == []  # `json:"currentMetrics"`: no omitempty
    assert "conditions" not in cleaned["status"]

    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c"},
             "spec": {"devices": {"requests": [], "constraints": [], "config": []}}}
    cleaned, _ = _structure(claim, kind="ResourceClaim", group="resource.k8s.io")
    assert cleaned["spec"]["devices"] == {"requests": []}


def test_unknown_fields_strict_warn_ignore() -> None:
    obj = pod()
    obj["spec"]["foo"] = 1
    obj["spec"]["containers"][0]["imagePullPolice"] = "Always"
    obj["metadata"]["bar"] = True
    with pytest.raises(errors.BadRequest) as info:
        _structure(copy.deepcopy(obj))
    assert info.value.message == (
        'Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field "metadata.bar", '
        'unknown field "spec.containers[0].imagePullPolice", unknown field "spec.foo"')
    cleaned, warnings = _structure(copy.deepcopy(obj), "Warn")
    assert warnings == ['unknown field "metadata.bar"', 'unknown field "spec.containers[0].imagePullPolice"',
                        'unknown field "spec.foo"']
    assert "foo" not in cleaned["spec"] and "bar" not in cleaned["metadata"]
    assert "imagePullPolice" not in cleaned["spec"]["containers"][0]
    cleaned, warnings = _structure(copy.deepcopy(obj), "Ignore")
    assert warnings == [] and "foo" not in cleaned["spec"]


def test_maps_and_free_form_fields_are_not_unknown() -> None:
    obj = pod(nodeSelector={"any/key": "v"})
    obj["metadata"]["labels"] = {"a": "b"}
    obj["metadata"]["annotations"] = {"x.io/y": "z"}
    obj["spec"]["containers"][0]["resources"] = {"limits": {"example.com/gpu": "1", "cpu": 2}}
    assert _structure(obj) == (obj, [])
    cl = claim(config=[{"opaque": {"driver": "d.example.com", "parameters": {"anything": {"nested": [1]}}}}])
    assert _structure(cl, kind="ResourceClaim", group="resource.k8s.io")[1] == []
    sl = slice_(devices=[{"name": "g", "attributes": {"model": {"string": "a100"}},
                          "capacity": {"memory": {"value": "80Gi"}}}])
    assert _structure(sl, kind="ResourceSlice", group="resource.k8s.io")[1] == []


@pytest.mark.parametrize(("mutation", "message"), [
    (lambda o: o["spec"].update(containers="x"),
     "json: cannot unmarshal string into Go struct field PodSpec.spec.containers of type []v1.Container"),
    (lambda o: o["spec"]["containers"][0].update(image=5),
     "json: cannot unmarshal number into Go struct field Container.spec.containers.image of type string"),
    (lambda o: o["spec"].update(terminationGracePeriodSeconds="30"),
     "json: cannot unmarshal string into Go struct field PodSpec.spec.terminationGracePeriodSeconds of type int64"),
    (lambda o: o["spec"].update(priority=1.5),
     "json: cannot unmarshal number 1.5 into Go struct field PodSpec.spec.priority of type int32"),
    (lambda o: o["spec"].update(hostNetwork="yes"),
     "json: cannot unmarshal string into Go struct field PodSpec.spec.hostNetwork of type bool"),
    (lambda o: o["metadata"].update(labels={"a": 1}),
     "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string"),
    (lambda o: o.update(metadata="x"),
     "json: cannot unmarshal string into Go struct field Pod.metadata of type v1.ObjectMeta"),
    (lambda o: o["spec"]["containers"][0].update(resources={"limits": {"cpu": "lots"}}),
     "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
    (lambda o: o["metadata"].update(creationTimestamp="yesterday"),
     'parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006"'),
])
def test_type_errors(mutation: Callable[[dict[str, Any]], Any], message: str) -> None:
    obj = mutate(pod(), mutation)
    for mode in ("Strict", "Warn", "Ignore"):
        with pytest.raises(errors.BadRequest) as info:
            _structure(copy.deepcopy(obj), mode)
        assert info.value.message == f'Pod in version "v1" cannot be handled as a Pod: {message}'


def test_int_or_string_and_quantity_numbers() -> None:
    dep = mutate(deployment(), lambda o: o["spec"].update(strategy={"rollingUpdate": {"maxSurge": 1,
                                                                                      "maxUnavailable": "10%"}}))
    assert _structure(dep, kind="Deployment", group="apps")[1] == []
    dep["spec"]["strategy"]["rollingUpdate"]["maxSurge"] = True
    with pytest.raises(errors.BadRequest, match="cannot unmarshal bool into Go value of type int32"):
        _structure(dep, kind="Deployment", group="apps")
    obj = pod()
    obj["spec"]["containers"][0]["resources"] = {"requests": {"cpu": 0.5, "memory": "1.5Gi"}}
    assert _structure(obj)[1] == []


def test_nulls_are_dropped_like_go_decoding() -> None:
    obj = pod(nodeName=None)
    obj["metadata"]["labels"] = None
    cleaned, _ = _structure(obj)
    assert "nodeName" not in cleaned["spec"] and "labels" not in cleaned["metadata"]


def test_kinds_without_schema_only_check_metadata() -> None:
    obj = {"apiVersion": "sim.cplane.dev/v1alpha1", "kind": "Clock", "metadata": {"name": "c"},
           "spec": {"anything": [1, {"x": None}]}, "extra": 1}
    assert validation.check_structure(copy.deepcopy(obj), group="sim.cplane.dev", version="v1alpha1", kind="Clock",
                                      field_validation="Strict") == (obj, [])
    with pytest.raises(errors.BadRequest):
        validation.check_structure({"metadata": []}, group="sim.cplane.dev", version="v1alpha1", kind="Clock",
                                   field_validation="Strict")


def test_quantities_are_stored_canonical() -> None:
    obj = pod()
    obj["spec"]["containers"][0]["resources"] = {"requests": {"cpu": 0.5, "memory": "1024Mi"}, "limits": {"cpu": 1}}
    cleaned, _ = _structure(obj)
    assert cleaned["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "500m", "memory": "1Gi"},
                                                             "limits": {"cpu": "1"}}
    sl = slice_(devices=[{"name": "g", "capacity": {"memory": {"value": "81920Mi"}}}])
    cleaned, _ = _structure(sl, kind="ResourceSlice", group="resource.k8s.io")
    assert cleaned["spec"]["devices"][0]["capacity"]["memory"]["value"] == "80Gi"


def test_taint_rule_status_conditions() -> None:
    old = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": "r"},
           "spec": {"taint": {"key": "example.com/x", "effect": "None"}}}
    good = {"type": "EvictionInProgress", "status": "False", "reason": "NoEffect",
            "lastTransitionTime": "2026-01-01T00:00:00Z", "message": "m"}
    ok = mutate(old, lambda o: o.update(status={"conditions": [good]}))
    assert update_causes(ok, old, subresource="status") == []
    bad = mutate(old, lambda o: o.update(status={"conditions": [
        good, {**good, "status": "Maybe", "reason": "no spaces allowed"}]}))
    assert texts(update_causes(bad, old, subresource="status")) == [
        'status.conditions[1].type: Duplicate value: "EvictionInProgress"',
        'status.conditions[1].status: Unsupported value: "Maybe": supported values: "False", "True", "Unknown"',
        'status.conditions[1].reason: Invalid value: "no spaces allowed": a condition reason must start with '
        "alphabetic character, optionally followed by a string of alphanumeric characters or '_,:', and must end "
        "with an alphanumeric character or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName',  or "
        "'ReasonA,ReasonB',  or 'ReasonA:ReasonB', regex used for validation is "
        "'[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')"]
