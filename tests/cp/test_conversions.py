"""cp.conversions: core/v1 <-> events.k8s.io/v1 Events and autoscaling/v2 <-> autoscaling/v1
HorizontalPodAutoscalers, as upstream's conversion functions: field renames, the CPU target, what
v1 cannot say kept in annotations, and round trips that lose nothing."""

from __future__ import annotations

import copy
import json
from typing import Any

from cp import conversions

CORE_EVENT: dict[str, Any] = {
    "kind": "Event", "apiVersion": "v1", "metadata": {"name": "e", "namespace": "default", "resourceVersion": "7"},
    "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"}, "reason": "Killing",
    "message": "Stopping container", "source": {"component": "kubelet", "host": "n"},
    "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:05Z", "count": 3,
    "type": "Normal", "eventTime": "2026-01-01T00:00:00.000001Z",
    "series": {"count": 2, "lastObservedTime": "2026-01-01T00:00:06.000000Z"}, "action": "Kill",
    "related": {"kind": "Node", "name": "n"}, "reportingComponent": "kubelet", "reportingInstance": "n"}


def test_event_fields_are_renamed() -> None:
    v1 = conversions.event_to_v1(CORE_EVENT)
    assert v1 == {
        "kind": "Event", "apiVersion": "events.k8s.io/v1", "metadata": CORE_EVENT["metadata"],
        "eventTime": "2026-01-01T00:00:00.000001Z",
        "series": {"count": 2, "lastObservedTime": "2026-01-01T00:00:06.000000Z"},
        "reportingController": "kubelet", "reportingInstance": "n", "action": "Kill", "reason": "Killing",
        "regarding": CORE_EVENT["involvedObject"], "related": {"kind": "Node", "name": "n"},
        "note": "Stopping container", "type": "Normal", "deprecatedSource": {"component": "kubelet", "host": "n"},
        "deprecatedFirstTimestamp": "2026-01-01T00:00:00Z", "deprecatedLastTimestamp": "2026-01-01T00:00:05Z",
        "deprecatedCount": 3}
    assert conversions.event_from_v1(v1) == CORE_EVENT


def test_served_event_has_the_fields_go_writes() -> None:
    from cp import resources as res

    kind = res.lookup("events.k8s.io", "v1", "events")
    assert kind is not None and kind.storage_of == ("", "events")
    minimal = {"kind": "Event", "apiVersion": "v1", "metadata": {"name": "e"}, "message": "m"}
    served = conversions.served_object(kind, json.dumps(minimal).encode())
    assert served["note"] == "m"
    assert served["regarding"] == {} and served["deprecatedSource"] == {}
    assert served["eventTime"] is None and served["deprecatedFirstTimestamp"] is None
    assert "deprecatedCount" not in served


HPA: dict[str, Any] = {
    "kind": "HorizontalPodAutoscaler", "apiVersion": "autoscaling/v2",
    "metadata": {"name": "web", "namespace": "default", "annotations": {"team": "a"}},
    "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"}, "minReplicas": 2,
             "maxReplicas": 10,
             "metrics": [
                 {"type": "Object", "object": {"describedObject": {"kind": "Ingress", "name": "main"},
                                               "metric": {"name": "rps"},
                                               "target": {"type": "Value", "value": "1k"}}},
                 {"type": "External", "external": {"metric": {"name": "queue", "selector": {"matchLabels": {"q": "a"}}},
                                                   "target": {"type": "AverageValue", "averageValue": "30"}}},
                 {"type": "ContainerResource", "containerResource": {
                     "name": "memory", "container": "app", "target": {"type": "AverageValue", "averageValue": "1Gi"}}},
                 {"type": "Resource", "resource": {"name": "cpu", "target": {
                     "type": "Utilization", "averageUtilization": 50}}}],
             "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}},
    "status": {"observedGeneration": 3, "lastScaleTime": "2026-01-01T00:00:00Z", "currentReplicas": 4,
               "desiredReplicas": 5,
               "currentMetrics": [
                   {"type": "Resource", "resource": {"name": "cpu", "current": {
                       "averageValue": "200m", "averageUtilization": 40}}},
                   {"type": "Pods", "pods": {"metric": {"name": "qps"}, "current": {"averageValue": "7"}}}],
               "conditions": [{"type": "AbleToScale", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z",
                               "reason": "ReadyForNewScale", "message": "ok"}]},
}


def test_hpa_to_v1() -> None:
    v1 = conversions.hpa_to_v1(HPA)
    assert v1["spec"] == {"scaleTargetRef": HPA["spec"]["scaleTargetRef"], "minReplicas": 2, "maxReplicas": 10,
                          "targetCPUUtilizationPercentage": 50}
    assert v1["status"] == {"observedGeneration": 3, "lastScaleTime": "2026-01-01T00:00:00Z", "currentReplicas": 4,
                            "desiredReplicas": 5, "currentCPUUtilizationPercentage": 40}
    annotations = v1["metadata"]["annotations"]
    assert annotations["team"] == "a"
    assert json.loads(annotations["autoscaling.alpha.kubernetes.io/metrics"]) == [
        {"type": "Object", "object": {"target": {"kind": "Ingress", "name": "main"}, "metricName": "rps",
                                      "targetValue": "1k"}},
        {"type": "External", "external": {"metricName": "queue", "metricSelector": {"matchLabels": {"q": "a"}},
                                          "targetAverageValue": "30"}},
        {"type": "ContainerResource", "containerResource": {"name": "memory", "targetAverageValue": "1Gi",
                                                            "container": "app"}}]
    assert json.loads(annotations["autoscaling.alpha.kubernetes.io/current-metrics"])[1] == {
        "type": "Pods", "pods": {"metricName": "qps", "currentAverageValue": "7"}}
    assert json.loads(annotations["autoscaling.alpha.kubernetes.io/behavior"]) == HPA["spec"]["behavior"]
    assert json.loads(annotations["autoscaling.alpha.kubernetes.io/conditions"]) == HPA["status"]["conditions"]
    assert HPA["metadata"]["annotations"] == {"team": "a"}  # the argument is left alone


def _sorted_metrics(obj: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["spec"]["metrics"].sort(key=lambda m: m["type"])
    return out


def test_hpa_round_trips_through_v1() -> None:
    back = conversions.hpa_from_v1(conversions.hpa_to_v1(HPA))
    # v1 puts the CPU target after the metrics of the annotation: the same metrics, another order
    assert _sorted_metrics(back) == _sorted_metrics(HPA)


def test_hpa_v1_defaults_and_bad_annotations() -> None:
    v1 = {"kind": "HorizontalPodAutoscaler", "apiVersion": "autoscaling/v1",
          "metadata": {"name": "x", "annotations": {"autoscaling.alpha.kubernetes.io/metrics": "not json"}},
          "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "x"}, "maxReplicas": 2},
          "status": {"currentReplicas": 1, "desiredReplicas": 1, "currentCPUUtilizationPercentage": 12}}
    v2 = conversions.hpa_from_v1(v1)
    assert v2["spec"]["metrics"] == [{"type": "Resource", "resource": {"name": "cpu", "target": {
        "type": "Utilization", "averageUtilization": 80}}}]
    assert v2["status"]["currentMetrics"] == [{"type": "Resource", "resource": {"name": "cpu", "current": {
        "averageUtilization": 12}}}]
    assert "annotations" not in v2["metadata"]
    assert conversions.hpa_to_v1(v2)["spec"]["targetCPUUtilizationPercentage"] == 80


# ------------------------------------------------------------------------------ resource.k8s.io/v1beta1
# Upstream's cases (pkg/apis/resource/v1beta1/conversion_test.go) and the other manual conversions of
# conversion.go: requests with and without alternatives, a device's `basic`, a slice's node fields.

def _beta1(kind: str) -> Any:
    from cp import resources

    return next(k for k in resources.OPTIONAL if k.version == "v1beta1" and k.kind == kind)


SELECTOR = [{"cel": {"expression": 'device.attributes["driver-a"].exists'}}]


def _claim(version: str, requests: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": f"resource.k8s.io/{version}", "kind": "ResourceClaim", "metadata": {"name": "c"},
            "spec": {"devices": {"requests": requests}}}


def test_v1beta1_request_without_alternatives() -> None:
    beta = _claim("v1beta1", [{"name": "foo", "deviceClassName": "class-a", "selectors": SELECTOR,
                               "allocationMode": "ExactCount", "count": 2}])
    v1 = _claim("v1", [{"name": "foo", "exactly": {"deviceClassName": "class-a", "selectors": SELECTOR,
                                                   "allocationMode": "ExactCount", "count": 2}}])
    assert conversions.to_storage(_beta1("ResourceClaim"), beta) == v1
    assert conversions.to_served(_beta1("ResourceClaim"), v1) == beta


def test_v1beta1_request_with_alternatives() -> None:
    subs = [{"name": "sub-1", "deviceClassName": "class-a", "selectors": SELECTOR, "allocationMode": "ExactCount",
             "count": 2},
            {"name": "sub-2", "deviceClassName": "class-a", "selectors": SELECTOR, "allocationMode": "ExactCount",
             "count": 1}]
    beta = _claim("v1beta1", [{"name": "foo", "firstAvailable": subs}])
    v1 = _claim("v1", [{"name": "foo", "firstAvailable": subs}])
    assert conversions.to_storage(_beta1("ResourceClaim"), beta) == v1
    assert conversions.to_served(_beta1("ResourceClaim"), v1) == beta
    # as Go writes it: deviceClassName has no omitempty
    served = conversions.served_object(_beta1("ResourceClaim"), json.dumps(v1).encode())
    assert served["spec"]["devices"]["requests"] == [{"name": "foo", "deviceClassName": "", "firstAvailable": subs}]
    assert conversions.to_storage(_beta1("ResourceClaim"), served)["spec"] == v1["spec"]


def test_v1beta1_request_tolerations_capacity_admin_access_move_into_exactly() -> None:
    tolerations = [{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5}]
    beta = _claim("v1beta1", [{"name": "r", "deviceClassName": "c", "adminAccess": False,
                               "tolerations": tolerations, "capacity": {"requests": {"memory": "1Gi"}}}])
    (request,) = conversions.to_storage(_beta1("ResourceClaim"), beta)["spec"]["devices"]["requests"]
    assert request == {"name": "r", "exactly": {"deviceClassName": "c", "adminAccess": False,
                                                "tolerations": tolerations,
                                                "capacity": {"requests": {"memory": "1Gi"}}}}
    # any main field makes an `exactly` (an empty selector list too); none makes none
    (only_selectors,) = conversions.to_storage(_beta1("ResourceClaim"), _claim(
        "v1beta1", [{"name": "r", "selectors": []}]))["spec"]["devices"]["requests"]
    assert only_selectors == {"name": "r", "exactly": {"selectors": []}}
    (nothing,) = conversions.to_storage(_beta1("ResourceClaim"), _claim(
        "v1beta1", [{"name": "r", "deviceClassName": "", "count": 0}]))["spec"]["devices"]["requests"]
    assert nothing == {"name": "r"}


def test_v1beta1_derived_attributes_are_flat_too() -> None:
    derived = [{"name": "derived/numa", "expression": "1"}]
    beta = _claim("v1beta1", [{"name": "r", "deviceClassName": "c", "derivedAttributes": derived}])
    v1 = conversions.to_storage(_beta1("ResourceClaim"), beta)
    assert v1["spec"]["devices"]["requests"] == [
        {"name": "r", "exactly": {"deviceClassName": "c", "derivedAttributes": derived}}]
    assert conversions.to_served(_beta1("ResourceClaim"), v1)["spec"] == beta["spec"]


def test_v1beta1_template_requests() -> None:
    beta = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaimTemplate", "metadata": {"name": "t"},
            "spec": {"metadata": {"labels": {"a": "b"}},
                     "spec": {"devices": {"requests": [{"name": "r", "deviceClassName": "c"}]}}}}
    v1 = conversions.to_storage(_beta1("ResourceClaimTemplate"), beta)
    assert v1["apiVersion"] == "resource.k8s.io/v1"
    assert v1["spec"] == {"metadata": {"labels": {"a": "b"}},
                          "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "c"}}]}}}
    assert conversions.to_served(_beta1("ResourceClaimTemplate"), v1) == beta


def test_v1beta1_devices_are_basic() -> None:
    device = {"name": "gpu-0", "attributes": {"model": {"string": "a100"}}, "capacity": {"memory": {"value": "40Gi"}},
              "consumesCounters": [{"counterSet": "s", "counters": {"memory": {"value": "40Gi"}}}],
              "nodeName": "n", "taints": [{"key": "k", "effect": "NoSchedule", "timeAdded": "2026-01-01T00:00:00Z"}],
              "bindsToNode": True, "bindingConditions": ["c"], "bindingFailureConditions": ["f"],
              "allowMultipleAllocations": True}
    v1 = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
          "spec": {"driver": "d", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                   "perDeviceNodeSelection": True, "devices": [device, {"name": "bare"}]}}
    beta = conversions.to_served(_beta1("ResourceSlice"), v1)
    assert beta["spec"]["devices"] == [{"name": "gpu-0", "basic": {k: v for k, v in device.items() if k != "name"}},
                                       {"name": "bare", "basic": {}}]
    assert conversions.to_storage(_beta1("ResourceSlice"), beta) == v1
    served = conversions.served_object(_beta1("ResourceSlice"), json.dumps(v1).encode())
    assert served["spec"]["devices"][1] == {"name": "bare", "basic": {}}


def test_v1beta1_slice_node_fields_are_plain() -> None:
    v1 = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
          "spec": {"driver": "d", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1}, "allNodes": True}}
    beta = conversions.to_served(_beta1("ResourceSlice"), v1)
    assert beta["spec"]["allNodes"] is True and "nodeName" not in beta["spec"]
    assert conversions.to_storage(_beta1("ResourceSlice"), beta) == v1
    # "" and false are unset in v1beta1 (a string and a bool there)
    written = {**beta, "spec": {**beta["spec"], "nodeName": "", "allNodes": False}}
    assert conversions.to_storage(_beta1("ResourceSlice"), written)["spec"] == {
        "driver": "d", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1}}


# ------------------------------------------------------------------------------ the other groups' versions

def _optional(group: str, version: str, kind: str) -> Any:
    from cp import resources

    return next(k for k in resources.OPTIONAL if (k.group, k.version, k.kind) == (group, version, kind))


def test_every_optional_version_converts_both_ways() -> None:
    from cp import resources

    for kind in resources.OPTIONAL:
        stored = resources.Registry().by_group_resource(*kind.storage_of) or resources.gated_kind(*kind.storage_of)
        obj = {"apiVersion": stored.api_version, "kind": kind.kind, "metadata": {"name": "x"}, "spec": {}}
        served = conversions.to_served(kind, obj)
        assert served["apiVersion"] == kind.api_version, kind
        assert conversions.to_storage(kind, served) == obj, kind


def test_same_shape_versions_change_api_version_alone() -> None:
    policy = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
              "metadata": {"name": "p"}, "spec": {"failurePolicy": "Fail", "reinvocationPolicy": "Never",
                                                  "mutations": [{"patchType": "JSONPatch",
                                                                 "jsonPatch": {"expression": "[]"}}]}}
    for version in ("v1beta1", "v1alpha1"):
        kind = _optional("admissionregistration.k8s.io", version, "MutatingAdmissionPolicy")
        served = conversions.to_served(kind, policy)
        assert served == {**policy, "apiVersion": f"admissionregistration.k8s.io/{version}"}
        assert conversions.to_storage(kind, served) == policy
    workload = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": "w"},
                "spec": {"podGroupTemplates": [{"name": "a", "schedulingPolicy": {"basic": {}}}]}}
    kind = _optional("scheduling.k8s.io", "v1alpha3", "Workload")
    assert conversions.to_served(kind, workload) == {**workload, "apiVersion": "scheduling.k8s.io/v1alpha3"}


def test_pod_certificate_request_v1beta1_only_fields_are_not_stored() -> None:
    kind = _optional("certificates.k8s.io", "v1beta1", "PodCertificateRequest")
    beta = {"apiVersion": "certificates.k8s.io/v1beta1", "kind": "PodCertificateRequest", "metadata": {"name": "r"},
            "spec": {"signerName": "example.com/s", "pkixPublicKey": "AAEC", "proofOfPossession": "AwQF",
                     "stubPKCS10Request": "BQY="}}
    stored = conversions.to_storage(kind, beta)
    assert stored["apiVersion"] == "certificates.k8s.io/v1"
    assert stored["spec"] == {"signerName": "example.com/s", "stubPKCS10Request": "BQY="}
    assert beta["spec"]["pkixPublicKey"] == "AAEC"  # the input is left alone
    shown = conversions.served_object(kind, json.dumps(stored).encode())
    assert shown["spec"]["pkixPublicKey"] is None and shown["spec"]["proofOfPossession"] is None  # Go's nil []byte


def test_v1beta1_device_node_allocatable_resources_are_basic() -> None:
    # KEP-5517's device field: in `basic` in v1beta1, flat in v1; nothing lost either way (the JSON
    # and the protobuf the served object passes through)
    resources = {"cpu": {"mapping": {"capacityKey": "dra.example.com/cores", "capacityMultiplier": "2"}},
                 "memory": {"mapping": {"deviceMultiplier": "1Gi"}, "overhead": {"perPod": "1Gi", "perContainer": "500Mi"}}}
    device = {"name": "socket-0", "allowMultipleAllocations": True,
              "capacity": {"dra.example.com/cores": {"value": "64"}}, "nodeAllocatableResources": resources}
    v1 = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
          "spec": {"driver": "d", "nodeName": "n", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                   "devices": [device]}}
    beta = conversions.to_served(_beta1("ResourceSlice"), v1)
    assert beta["spec"]["devices"][0]["basic"]["nodeAllocatableResources"] == resources
    assert conversions.to_storage(_beta1("ResourceSlice"), beta) == v1
    served = conversions.served_object(_beta1("ResourceSlice"), json.dumps(v1).encode())
    assert served["spec"]["devices"][0]["basic"]["nodeAllocatableResources"] == resources
    assert conversions.to_storage(_beta1("ResourceSlice"), served)["spec"]["devices"] == [device]
