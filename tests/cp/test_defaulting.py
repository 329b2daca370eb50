"""cp/defaulting.py: the defaults kube-apiserver writes (defaults.go, declarative +default tags and the
pod-mutating built-in admission plugins), as users see them in `-o yaml`.

Excluded: where the store calls defaulting (tests/api covers create/update end to end).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from cp import defaulting


def defaulted(obj: dict[str, Any], group: str = "", version: str = "v1") -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    defaulting.apply_defaults(obj, group=group, version=version, kind=obj["kind"])
    return obj


def pod(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"containers": [{"name": "app", "image": "nginx"}]}
    body.update(spec)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}, "spec": body}


CONTAINER_DEFAULTS = {"imagePullPolicy": "Always", "terminationMessagePath": "/dev/termination-log",
                      "terminationMessagePolicy": "File", "resources": {}}
POD_SPEC_DEFAULTS = {"dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "securityContext": {},
                     "terminationGracePeriodSeconds": 30, "schedulerName": "default-scheduler"}
ADMISSION_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
]


def test_pod_defaults() -> None:
    spec = defaulted(pod())["spec"]
    assert spec == {"containers": [{"name": "app", "image": "nginx", **CONTAINER_DEFAULTS}],
                    **POD_SPEC_DEFAULTS, "enableServiceLinks": True, "tolerations": ADMISSION_TOLERATIONS}


@pytest.mark.parametrize(("image", "policy"), [
    ("nginx", "Always"), ("nginx:latest", "Always"), ("nginx:1.27", "IfNotPresent"),
    ("registry.local:5000/team/app", "Always"), ("registry.local:5000/team/app:v2", "IfNotPresent"),
    ("nginx@sha256:" + "a" * 64, "IfNotPresent"), ("nginx:latest@sha256:" + "a" * 64, "Always"), ("", "IfNotPresent"),
])
def test_image_pull_policy(image: str, policy: str) -> None:
    spec = defaulted(pod(containers=[{"name": "a", "image": image}]))["spec"]
    assert spec["containers"][0]["imagePullPolicy"] == policy


def test_explicit_values_are_kept() -> None:
    spec = defaulted(pod(restartPolicy="Never", dnsPolicy="Default", terminationGracePeriodSeconds=0,
                         enableServiceLinks=False, schedulerName="mine", securityContext={"runAsUser": 1},
                         containers=[{"name": "a", "image": "x", "imagePullPolicy": "Never",
                                      "terminationMessagePolicy": "FallbackToLogsOnError"}]))["spec"]
    assert (spec["restartPolicy"], spec["dnsPolicy"], spec["terminationGracePeriodSeconds"],
            spec["enableServiceLinks"], spec["schedulerName"], spec["securityContext"]) == \
        ("Never", "Default", 0, False, "mine", {"runAsUser": 1})
    assert spec["containers"][0]["imagePullPolicy"] == "Never"
    assert spec["containers"][0]["terminationMessagePolicy"] == "FallbackToLogsOnError"


def test_container_element_defaults() -> None:
    c = {"name": "a", "image": "x:1", "ports": [{"containerPort": 80}],
         "readinessProbe": {"httpGet": {"port": 80}},
         "livenessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 5},
         "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
         "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}}
    out = defaulted(pod(containers=[c], initContainers=[{"name": "init", "image": "busybox"}]))["spec"]
    got = out["containers"][0]
    assert got["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert got["readinessProbe"] == {"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1,
                                     "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3}
    assert got["livenessProbe"]["periodSeconds"] == 5
    assert got["env"][0]["valueFrom"]["fieldRef"] == {"fieldPath": "spec.nodeName", "apiVersion": "v1"}
    # Pods only: requests default to limits for resources without a request.
    assert got["resources"]["requests"] == {"cpu": "500m", "memory": "1Gi"}
    assert out["initContainers"][0] == {"name": "init", "image": "busybox", **CONTAINER_DEFAULTS}


def test_volume_defaults() -> None:
    vols = [{"name": "scratch"}, {"name": "cfg", "configMap": {"name": "c"}}, {"name": "s", "secret": {}},
            {"name": "h", "hostPath": {"path": "/x"}},
            {"name": "p", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}}]
    out = defaulted(pod(volumes=vols))["spec"]["volumes"]
    assert out == [{"name": "scratch", "emptyDir": {}}, {"name": "cfg", "configMap": {"name": "c", "defaultMode": 420}},
                   {"name": "s", "secret": {"defaultMode": 420}}, {"name": "h", "hostPath": {"path": "/x", "type": ""}},
                   {"name": "p", "projected": {"defaultMode": 420, "sources": [
                       {"serviceAccountToken": {"path": "t", "expirationSeconds": 3600}}]}}]


def test_pod_priority_is_left_to_admission() -> None:
    """Priority comes from the stored PriorityClasses (api.admission.priority), not from defaulting."""
    for spec in (defaulted(pod(priorityClassName="system-node-critical"))["spec"], defaulted(pod())["spec"]):
        assert "priority" not in spec and "preemptionPolicy" not in spec
    kept = defaulted(pod(preemptionPolicy="Never"))["spec"]
    assert kept["preemptionPolicy"] == "Never"
    update = pod()
    update["metadata"]["resourceVersion"] = "7"
    spec = defaulted(update)["spec"]
    assert spec["tolerations"] == ADMISSION_TOLERATIONS and spec["enableServiceLinks"] is True


def test_default_toleration_seconds_respects_existing_tolerations() -> None:
    mine = [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
             "tolerationSeconds": 10}]
    tols = defaulted(pod(tolerations=mine))["spec"]["tolerations"]
    assert tols == [*mine, ADMISSION_TOLERATIONS[1]]
    everything = [{"operator": "Exists"}]
    assert defaulted(pod(tolerations=everything))["spec"]["tolerations"] == everything


def test_host_network_ports_and_service_account_alias() -> None:
    spec = defaulted(pod(hostNetwork=True, serviceAccountName="robot",
                         containers=[{"name": "a", "image": "x", "ports": [{"containerPort": 8080}]}]))["spec"]
    assert spec["containers"][0]["ports"][0]["hostPort"] == 8080
    assert spec["serviceAccount"] == "robot"


def test_deployment_defaults() -> None:
    dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "default"},
           "spec": {"selector": {"matchLabels": {"a": "b"}},
                    "template": {"metadata": {"labels": {"a": "b"}},
                                 "spec": {"containers": [{"name": "app", "image": "nginx:1"}]}}}}
    spec = defaulted(dep, "apps")["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}
    assert spec["revisionHistoryLimit"] == 10 and spec["progressDeadlineSeconds"] == 600
    tmpl = spec["template"]["spec"]
    # Templates get PodSpec defaults but not the pod-only ones (enableServiceLinks, admission).
    assert tmpl == {"containers": [{"name": "app", "image": "nginx:1", **CONTAINER_DEFAULTS,
                                    "imagePullPolicy": "IfNotPresent"}], **POD_SPEC_DEFAULTS}
    recreate = copy.deepcopy(dep)
    recreate["spec"]["strategy"] = {"type": "Recreate"}
    assert defaulted(recreate, "apps")["spec"]["strategy"] == {"type": "Recreate"}
    partial = copy.deepcopy(dep)
    partial["spec"].update(replicas=0, strategy={"rollingUpdate": {"maxSurge": 2}})
    out = defaulted(partial, "apps")["spec"]
    assert out["replicas"] == 0
    assert out["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 2, "maxUnavailable": "25%"}}


def test_replicaset_defaults() -> None:
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "r", "namespace": "default"},
          "spec": {"template": {"spec": {"containers": [{"name": "a", "image": "x"}]}}}}
    spec = defaulted(rs, "apps")["spec"]
    assert spec["replicas"] == 1
    assert spec["template"]["spec"]["restartPolicy"] == "Always"
    assert "revisionHistoryLimit" not in spec


def hpa(**spec: Any) -> dict[str, Any]:
    body = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}, "maxReplicas": 3}
    body.update(spec)
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "h", "namespace": "default"}, "spec": body}


def test_hpa_defaults_without_behavior() -> None:
    spec = defaulted(hpa(), "autoscaling", "v2")["spec"]
    assert spec["minReplicas"] == 1
    assert spec["metrics"] == [{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]
    assert "behavior" not in spec


def test_hpa_partial_behavior_is_filled() -> None:
    spec = defaulted(hpa(behavior={"scaleDown": {"stabilizationWindowSeconds": 60}}), "autoscaling", "v2")["spec"]
    assert spec["behavior"] == {
        "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                    "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                                 {"type": "Percent", "value": 100, "periodSeconds": 15}]},
        "scaleDown": {"stabilizationWindowSeconds": 60, "selectPolicy": "Max",
                      "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}}
    empty = defaulted(hpa(behavior={}), "autoscaling", "v2")["spec"]["behavior"]
    assert "stabilizationWindowSeconds" not in empty["scaleDown"]
    custom = defaulted(hpa(behavior={"scaleUp": {"selectPolicy": "Disabled", "policies": [
        {"type": "Pods", "value": 1, "periodSeconds": 60}]}}), "autoscaling", "v2")["spec"]["behavior"]["scaleUp"]
    assert custom == {"stabilizationWindowSeconds": 0, "selectPolicy": "Disabled",
                      "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]}


def test_namespace_defaults() -> None:
    ns = defaulted({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    assert ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team"}
    assert ns["spec"] == {"finalizers": ["kubernetes"]}
    # After creation (resourceVersion set) spec.finalizers changes only through /finalize.
    finalized = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team", "resourceVersion": "9"},
                 "spec": {}, "status": {"phase": "Terminating"}}
    assert defaulted(finalized)["spec"] == {}


def claim_with(*requests: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": "default"}, "spec": {"devices": {"requests": list(requests)}}}


def test_resource_claim_defaults() -> None:
    out = defaulted(claim_with(
        {"name": "a", "exactly": {"deviceClassName": "c", "tolerations": [{"key": "k"}]}},
        {"name": "b", "exactly": {"deviceClassName": "c", "allocationMode": "All"}},
        {"name": "c", "exactly": {"deviceClassName": "c", "count": 3}},
        {"name": "d", "firstAvailable": [{"name": "x", "deviceClassName": "c"},
                                         {"name": "y", "deviceClassName": "c", "allocationMode": "All"}]}),
        "resource.k8s.io")
    reqs = out["spec"]["devices"]["requests"]
    assert reqs[0]["exactly"] == {"deviceClassName": "c", "allocationMode": "ExactCount", "count": 1,
                                  "tolerations": [{"key": "k", "operator": "Equal"}]}
    assert reqs[1]["exactly"] == {"deviceClassName": "c", "allocationMode": "All"}
    assert reqs[2]["exactly"]["count"] == 3
    assert reqs[3]["firstAvailable"] == [
        {"name": "x", "deviceClassName": "c", "allocationMode": "ExactCount", "count": 1},
        {"name": "y", "deviceClassName": "c", "allocationMode": "All"}]


def test_resource_claim_template_defaults() -> None:
    tmpl = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "t", "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [{"name": "a", "exactly": {"deviceClassName": "c"}}]}}}}
    out = defaulted(tmpl, "resource.k8s.io")
    assert out["spec"]["spec"]["devices"]["requests"][0]["exactly"] == {
        "deviceClassName": "c", "allocationMode": "ExactCount", "count": 1}


def test_device_taint_time_added() -> None:
    now = "2026-01-01T00:00:00Z"
    rs = {"kind": "ResourceSlice", "spec": {"devices": [
        {"name": "a", "taints": [{"key": "k", "effect": "NoSchedule"},
                                 {"key": "j", "effect": "NoSchedule", "timeAdded": "2025-01-01T00:00:00Z"}]}]}}
    defaulting.default_device_taints(rs, now_rfc3339=now)
    assert [t["timeAdded"] for t in rs["spec"]["devices"][0]["taints"]] == [now, "2025-01-01T00:00:00Z"]
    rule = {"kind": "DeviceTaintRule", "spec": {"taint": {"key": "k", "effect": "NoExecute"}}}
    defaulting.default_device_taints(rule, now_rfc3339=now)
    assert rule["spec"]["taint"]["timeAdded"] == now


@pytest.mark.parametrize("obj", [
    pod(volumes=[{"name": "v"}], containers=[{"name": "a", "image": "x", "ports": [{"containerPort": 1}]}]),
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
     "spec": {"template": {"spec": {"containers": [{"name": "a", "image": "x"}]}}}},
    hpa(behavior={}),
    claim_with({"name": "a", "exactly": {"deviceClassName": "c"}}),
], ids=lambda o: o["kind"])
def test_defaulting_is_idempotent(obj: dict[str, Any]) -> None:
    group = {"Deployment": "apps", "HorizontalPodAutoscaler": "autoscaling", "ResourceClaim": "resource.k8s.io"}
    g = group.get(obj["kind"], "")
    version = "v2" if g == "autoscaling" else "v1"
    once = defaulted(obj, g, version)
    assert defaulted(once, g, version) == once


def test_kinds_without_defaults_are_untouched() -> None:
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"}, "spec": {}}
    assert defaulted(lease, "coordination.k8s.io") == lease
