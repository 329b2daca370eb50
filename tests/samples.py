"""One valid object of every stored built-in kind, as a chart or an operator would write it (valid per
upstream's validation, so stricter server checks keep accepting them), keyed by (group, plural).

Used by the sweeps over every served resource: the strict-schema and typed-client check
(tests/clients/test_client_schemas.py) and kubectl CRUD (tests/kubectl/test_every_resource.py). Objects
carry no namespace of their own; a namespaced one is created in the namespace of the request.
"""

from __future__ import annotations

import copy
from typing import Any

from tests.api import test_builtin_manifests as builtin
from tests.clients import support

_LABELS = {"app": "web"}


def _pod_template(restart: str = "Always") -> dict[str, Any]:
    return {"metadata": {"labels": dict(_LABELS)},
            "spec": {"restartPolicy": restart,
                     "containers": [{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]}}


def _core_and_workloads(namespace: str) -> dict[tuple[str, str], dict[str, Any]]:
    rs = support.deployment("rs")
    rs["kind"] = "ReplicaSet"
    selector = {"matchLabels": dict(_LABELS)}
    return {
        ("", "namespaces"): {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "sample-extra"}},
        ("", "nodes"): {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1", "labels": {"zone": "a"}},
                        "spec": {"podCIDR": "10.0.1.0/24"}},
        ("", "pods"): support.pod("pod", app="pod"),
        ("", "events"): {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "pod.1"},
                         "involvedObject": {"kind": "Pod", "apiVersion": "v1", "name": "pod", "namespace": namespace},
                         "reason": "Scheduled", "message": "assigned", "type": "Normal",
                         "source": {"component": "scheduler"}, "count": 1,
                         "firstTimestamp": "2026-12-02T08:00:00Z", "lastTimestamp": "2026-12-02T08:00:00Z"},
        ("", "configmaps"): support.configmap("cm", k="v"),
        ("", "endpoints"): {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "web"},
                            "subsets": [{"addresses": [{"ip": "10.244.1.5", "nodeName": "node-1"}],
                                         "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}]},
        ("", "limitranges"): {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "limits"},
                              "spec": {"limits": [{"type": "Container", "default": {"cpu": "500m", "memory": "256Mi"},
                                                   "defaultRequest": {"cpu": "100m", "memory": "64Mi"},
                                                   "max": {"cpu": "2"}}]}},
        ("", "persistentvolumeclaims"): {
            "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                     "storageClassName": "local-path"}},
        ("", "persistentvolumes"): {
            "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-1"},
            "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
                     "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "local-path",
                     "hostPath": {"path": "/mnt/data", "type": "DirectoryOrCreate"}}},
        ("", "podtemplates"): {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "tpl"},
                               "template": _pod_template()},
        ("", "replicationcontrollers"): {
            "apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "rc"},
            "spec": {"replicas": 1, "selector": dict(_LABELS), "template": _pod_template()}},
        ("", "resourcequotas"): {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "compute"},
                                 "spec": {"hard": {"pods": "50", "requests.cpu": "20", "count/configmaps": "100"}}},
        ("", "secrets"): {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds"}, "type": "Opaque",
                          "data": {"user": "YWRtaW4="}, "stringData": {"password": "s3cr=t"}},
        ("", "serviceaccounts"): {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}},
        ("", "services"): {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "labels": dict(_LABELS)},
                           "spec": {"selector": dict(_LABELS), "ports": [{"name": "http", "port": 80,
                                                                           "targetPort": 8080}]}},
        ("apps", "controllerrevisions"): {
            "apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": {"name": "web-5d8f7c", "labels":
                                                                                 dict(_LABELS)},
            "revision": 1, "data": {"spec": {"template": {"$patch": "replace", **_pod_template()}}}},
        ("apps", "daemonsets"): {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
                                 "spec": {"selector": copy.deepcopy(selector), "template": _pod_template()}},
        ("apps", "deployments"): support.deployment("web", 2),
        ("apps", "replicasets"): rs,
        ("apps", "statefulsets"): {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
                                   "spec": {"serviceName": "db", "replicas": 1, "selector": copy.deepcopy(selector),
                                            "template": _pod_template()}},
        ("autoscaling", "horizontalpodautoscalers"): {
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                     "minReplicas": 1, "maxReplicas": 3,
                     "metrics": [{"type": "Resource", "resource": {
                         "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}]}},
        ("batch", "cronjobs"): {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "nightly"},
                                "spec": {"schedule": "0 3 * * *", "suspend": True,
                                         "jobTemplate": {"spec": {"template": _pod_template("OnFailure")}}}},
        ("batch", "jobs"): {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "once"},
                            "spec": {"suspend": True, "template": {"spec": _pod_template("Never")["spec"]}}},
        ("policy", "poddisruptionbudgets"): {
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"},
            "spec": {"minAvailable": "50%", "selector": copy.deepcopy(selector)}},
        ("coordination.k8s.io", "leases"): {
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "node-1"},
            "spec": {"holderIdentity": "node-1", "leaseDurationSeconds": 40}},
        ("resource.k8s.io", "deviceclasses"): support.device_class(),
        ("resource.k8s.io", "resourceclaims"): support.resource_claim("claim"),
        ("resource.k8s.io", "resourceclaimtemplates"): support.resource_claim_template("tpl"),
        ("resource.k8s.io", "resourceslices"): support.resource_slice("slice"),
        ("resource.k8s.io", "devicetaintrules"): support.device_taint_rule("rule"),
        ("rbac.authorization.k8s.io", "clusterroles"): {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "reader"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]},
        ("rbac.authorization.k8s.io", "clusterrolebindings"): {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "reader"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "reader"},
            "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}]},
        ("rbac.authorization.k8s.io", "roles"): {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "reader"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]},
        ("rbac.authorization.k8s.io", "rolebindings"): {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "reader"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
            "subjects": [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "devs"}]},
    }


def samples(namespace: str) -> dict[tuple[str, str], dict[str, Any]]:
    """A fresh copy of every sample, keyed by (group, plural), for creation in `namespace` (an Event's
    involved object is in its namespace)."""
    out = _core_and_workloads(namespace)
    for path, obj in builtin.manifests():
        group = obj["apiVersion"].rpartition("/")[0]
        plural = path.rsplit("/", 1)[1]
        out.setdefault((group, plural), obj)
    return copy.deepcopy(out)
