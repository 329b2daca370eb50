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
