"""Columns and row cells of every served kind, as upstream's printers
(`pkg/printers/internalversion/printers.go`) and the default table convertor print them.

One sample object per kind; the expected cells are written from upstream's printer rules (wide
columns included: the server always prints wide). Excluded: the pod, node, event, HPA and DRA
printers (tests/cp/test_tables.py) and the Table envelope.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from cp.printers import columns, row
from cp.resources import KINDS, ResourceKind
from cp.tables import table

NOW = 1_700_000_000.0  # 2023-11-14T22:13:20Z


def ago(seconds: float) -> str:
    return datetime.fromtimestamp(NOW - seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def obj(name: str = "x", *, age: float = 300, meta: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "creationTimestamp": ago(age), **(meta or {})}, **fields}


def cells(group: str, kind: str, o: dict[str, Any]) -> list[Any]:
    return row(o, group=group, kind=kind, now=NOW)


def header(group: str, kind: str) -> list[tuple[str, int]]:
    return [(c["name"], c["priority"]) for c in columns(group=group, kind=kind)]


CASES: list[tuple[str, str, dict[str, Any], list[Any]]] = [
    # --- core
    ("", "Secret", obj("tls", type="kubernetes.io/tls", data={"tls.crt": "", "tls.key": ""}),
     ["tls", "kubernetes.io/tls", 2, "5m"]),
    ("", "ServiceAccount", obj("default", secrets=[{"name": "tok"}]), ["default", 1, "5m"]),
    ("", "Service", obj("web", spec={"type": "ClusterIP", "clusterIPs": ["10.0.0.10"], "selector": {"b": "2", "a": "1"},
                                     "ports": [{"port": 80, "protocol": "TCP"},
                                               {"port": 53, "protocol": "UDP"}]}),
     ["web", "ClusterIP", "10.0.0.10", "<none>", "80/TCP,53/UDP", "5m", "a=1,b=2"]),
    ("", "Service", obj("np", spec={"type": "NodePort", "clusterIPs": ["10.0.0.11"], "externalIPs": ["1.2.3.4"],
                                    "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}]}),
     ["np", "NodePort", "10.0.0.11", "1.2.3.4", "80:30080/TCP", "5m", "<none>"]),
    ("", "Service", obj("lb", spec={"type": "LoadBalancer", "clusterIPs": ["10.0.0.12"]}),
     ["lb", "LoadBalancer", "10.0.0.12", "<pending>", "<none>", "5m", "<none>"]),
    ("", "Service", obj("lb2", spec={"type": "LoadBalancer", "clusterIPs": ["10.0.0.13"], "externalIPs": ["9.9.9.9"]},
                        status={"loadBalancer": {"ingress": [{"ip": "5.6.7.8"}, {"hostname": "lb.example.com"},
                                                             {"ip": "5.6.7.8"}]}}),
     ["lb2", "LoadBalancer", "10.0.0.13", "5.6.7.8,lb.example.com,9.9.9.9", "<none>", "5m", "<none>"]),
    ("", "Service", obj("ext", spec={"type": "ExternalName", "externalName": "db.example.com"}),
     ["ext", "ExternalName", "<none>", "db.example.com", "<none>", "5m", "<none>"]),
    ("", "Endpoints", obj("web", subsets=[{"addresses": [{"ip": "10.1.0.1"}, {"ip": "fd00::1"}],
                                           "ports": [{"port": 80}, {"port": 443}]}]),
     ["web", "10.1.0.1:80,[fd00::1]:80,10.1.0.1:443 + 1 more...", "5m"]),
    ("", "Endpoints", obj("none"), ["none", "<none>", "5m"]),
    ("", "Endpoints", obj("headless", subsets=[{"addresses": [{"ip": "10.1.0.1"}]}]),
     ["headless", "10.1.0.1", "5m"]),
    ("", "PersistentVolume",
     obj("pv1", spec={"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteMany", "ReadWriteOnce"],
                      "persistentVolumeReclaimPolicy": "Retain", "claimRef": {"namespace": "ns", "name": "data"},
                      "storageClassName": "fast", "volumeMode": "Filesystem"},
         status={"phase": "Bound"}),
     ["pv1", "10Gi", "RWO,RWX", "Retain", "Bound", "ns/data", "fast", "<unset>", "", "5m", "Filesystem"]),
    ("", "PersistentVolume",
     obj("pv2", meta={"deletionTimestamp": ago(1), "annotations": {"volume.beta.kubernetes.io/storage-class": "old"}},
         spec={"storageClassName": "new", "volumeAttributesClassName": "gold"}, status={"phase": "Released"}),
     ["pv2", "0", "", "", "Terminating", "", "old", "gold", "", "5m", "<unset>"]),
    ("", "PersistentVolumeClaim",
     obj("data", spec={"volumeName": "pv1", "storageClassName": "fast", "volumeMode": "Block",
                       "resources": {"requests": {"storage": "1Gi"}}},
         status={"phase": "Bound", "accessModes": ["ReadWriteOncePod"], "capacity": {"storage": "10Gi"}}),
     ["data", "Bound", "pv1", "10Gi", "RWOP", "fast", "<unset>", "5m", "Block"]),
    ("", "PersistentVolumeClaim", obj("pending", spec={"resources": {"requests": {"storage": "1Gi"}}},
                                      status={"phase": "Pending"}),
     ["pending", "Pending", "", "", "", "", "<unset>", "5m", "<unset>"]),
    ("", "ReplicationController",
     obj("rc", spec={"replicas": 3, "selector": {"app": "web"},
                     "template": {"spec": {"containers": [{"name": "a", "image": "i:1"}, {"name": "b", "image": "j"}]}}},
         status={"replicas": 3, "readyReplicas": 2}),
     ["rc", 3, 3, 2, "5m", "a,b", "i:1,j", "app=web"]),
    ("", "PodTemplate", obj("pt", template={"metadata": {"labels": {"app": "web"}},
                                            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}),
     ["pt", "c", "nginx", "app=web"]),
    ("", "ResourceQuota",
     obj("q", status={"hard": {"pods": "10", "limits.cpu": "4", "requests.memory": "1Gi", "limits.memory": "2Gi"},
                      "used": {"pods": "3", "limits.cpu": "500m"}}),
     ["q", "pods: 3/10, requests.memory: 0/1Gi", "limits.cpu: 500m/4, limits.memory: 0/2Gi", "5m"]),
    ("", "ComponentStatus",
     {"metadata": {"name": "etcd-0"}, "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}]},
     ["etcd-0", "Healthy", "ok", ""]),
    ("", "LimitRange", obj("lr", age=60), ["lr", "2023-11-14T22:12:20Z"]),
    # --- apps
    ("apps", "StatefulSet",
     obj("db", spec={"replicas": 3, "template": {"spec": {"containers": [{"name": "pg", "image": "postgres"}]}}},
         status={"readyReplicas": 1}),
     ["db", "1/3", "5m", "pg", "postgres"]),
    ("apps", "DaemonSet",
     obj("agent", spec={"selector": {"matchLabels": {"app": "agent"}},
                        "template": {"spec": {"nodeSelector": {"os": "linux"},
                                              "containers": [{"name": "a", "image": "agent:2"}]}}},
         status={"desiredNumberScheduled": 4, "currentNumberScheduled": 4, "numberReady": 3,
                 "updatedNumberScheduled": 2, "numberAvailable": 3}),
     ["agent", 4, 4, 3, 2, 3, "os=linux", "5m", "a", "agent:2", "app=agent"]),
    ("apps", "ControllerRevision",
     obj("db-6b7f", meta={"ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db",
                                               "uid": "u", "controller": True}]}, revision=2),
     ["db-6b7f", "statefulset.apps/db", 2, "5m"]),
    ("apps", "ControllerRevision", obj("orphan", revision=1), ["orphan", "<none>", 1, "5m"]),
    # --- batch
    ("batch", "Job",
     obj("done", spec={"completions": 3, "template": {"spec": {"containers": [{"name": "w", "image": "busybox"}]}},
                       "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}}},
         status={"succeeded": 3, "startTime": ago(200), "completionTime": ago(50),
                 "conditions": [{"type": "Complete", "status": "True"}]}),
     ["done", "Complete", "3/3", "2m30s", "5m", "w", "busybox", "batch.kubernetes.io/controller-uid=u1"]),
    ("batch", "Job", obj("running", spec={"parallelism": 2}, status={"succeeded": 1, "startTime": ago(90)}),
     ["running", "Running", "1/1 of 2", "90s", "5m", "", "", "<none>"]),
    ("batch", "Job", obj("new", spec={"suspend": True},
                         status={"conditions": [{"type": "Suspended", "status": "True"}]}),
     ["new", "Suspended", "0/1", "", "5m", "", "", "<none>"]),
    ("batch", "Job", obj("bad", status={"conditions": [{"type": "FailureTarget", "status": "True"},
                                                       {"type": "Failed", "status": "True"}]}),
     ["bad", "Failed", "0/1", "", "5m", "", "", "<none>"]),
    ("batch", "CronJob",
     obj("nightly", spec={"schedule": "0 3 * * *", "timeZone": "Etc/UTC", "suspend": False,
                          "jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "b", "image": "bk"}]}}}}},
         status={"active": [{"name": "nightly-1"}], "lastScheduleTime": ago(600)}),
     ["nightly", "0 3 * * *", "Etc/UTC", "False", 1, "10m", "5m", "b", "bk", "<none>"]),
    ("batch", "CronJob", obj("never", spec={"schedule": "@daily"}),
     ["never", "@daily", "<none>", "<unset>", 0, "<none>", "5m", "", "", "<none>"]),
    # --- networking and discovery
    ("networking.k8s.io", "Ingress",
     obj("web", spec={"ingressClassName": "nginx", "tls": [{"hosts": ["a.example.com"]}],
                      "rules": [{"host": "a.example.com"}, {}, {"host": "b.example.com"}, {"host": "c.example.com"},
                                {"host": "d.example.com"}]},
         status={"loadBalancer": {"ingress": [{"ip": "5.6.7.8"}]}}),
     ["web", "nginx", "a.example.com,b.example.com,c.example.com + 2 more...", "5.6.7.8", "80, 443", "5m"]),
    ("networking.k8s.io", "Ingress", obj("bare", spec={}), ["bare", "<none>", "*", "", "80", "5m"]),
    ("networking.k8s.io", "IngressClass",
     obj("nginx", spec={"controller": "k8s.io/ingress-nginx",
                        "parameters": {"apiGroup": "k8s.example.com", "kind": "IngressParameters", "name": "p"}}),
     ["nginx", "k8s.io/ingress-nginx", "IngressParameters.k8s.example.com/p", "5m"]),
    ("networking.k8s.io", "IngressClass", obj("plain", spec={"controller": "c"}), ["plain", "c", "<none>", "5m"]),
    ("networking.k8s.io", "NetworkPolicy", obj("deny", spec={"podSelector": {}}), ["deny", "<none>", "5m"]),
    ("networking.k8s.io", "NetworkPolicy",
     obj("web", spec={"podSelector": {"matchLabels": {"app": "web"},
                                      "matchExpressions": [{"key": "tier", "operator": "In", "values": ["fe"]}]}}),
     ["web", "app=web,tier in (fe)", "5m"]),
    ("networking.k8s.io", "IPAddress",
     obj("10.0.0.10", spec={"parentRef": {"group": "", "resource": "services", "namespace": "default", "name": "web"}}),
     ["10.0.0.10", "services/default/web", "5m"]),
    ("networking.k8s.io", "IPAddress",
     obj("10.0.0.11", spec={"parentRef": {"group": "Gateway.Networking.k8s.io", "resource": "Gateways", "name": "gw"}}),
     ["10.0.0.11", "gateways.gateway.networking.k8s.io/gw", "5m"]),
    ("networking.k8s.io", "ServiceCIDR", obj("kubernetes", spec={"cidrs": ["10.0.0.0/16", "fd00::/108"]}),
     ["kubernetes", "10.0.0.0/16,fd00::/108", "5m"]),
    ("discovery.k8s.io", "EndpointSlice",
     obj("web-abc", addressType="IPv4", ports=[{"port": 80}, {"name": "metrics"}, {}, {"port": 9}],
         endpoints=[{"addresses": ["10.1.0.1"]}, {"addresses": ["10.1.0.2", "10.1.0.3", "10.1.0.4"]}]),
     ["web-abc", "IPv4", "80,metrics,* + 1 more...", "10.1.0.1,10.1.0.2,10.1.0.3 + 1 more...", "5m"]),
    ("discovery.k8s.io", "EndpointSlice", obj("empty", addressType="IPv6"),
     ["empty", "IPv6", "<unset>", "<unset>", "5m"]),
    # --- storage
    ("storage.k8s.io", "StorageClass",
     obj("standard", meta={"annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
         provisioner="rancher.io/local-path", volumeBindingMode="WaitForFirstConsumer"),
     ["standard (default)", "rancher.io/local-path", "Delete", "WaitForFirstConsumer", False, "5m"]),
    ("storage.k8s.io", "StorageClass", obj("fast", provisioner="p", reclaimPolicy="Retain", allowVolumeExpansion=True),
     ["fast", "p", "Retain", "Immediate", True, "5m"]),
    ("storage.k8s.io", "VolumeAttributesClass", obj("gold", driverName="csi.example.com"),
     ["gold", "csi.example.com", "5m"]),
    ("storage.k8s.io", "CSIDriver",
     obj("csi.example.com", spec={"attachRequired": False, "podInfoOnMount": True,
                                  "tokenRequests": [{"audience": "a"}, {"audience": "b"}],
                                  "volumeLifecycleModes": ["Persistent", "Ephemeral"]}),
     ["csi.example.com", False, True, False, "a,b", False, "Persistent,Ephemeral", "5m"]),
    ("storage.k8s.io", "CSIDriver", obj("bare", spec={}),
     ["bare", True, False, False, "<unset>", False, "<none>", "5m"]),
    ("storage.k8s.io", "CSINode", obj("node-1", spec={"drivers": [{"name": "a"}, {"name": "b"}]}),
     ["node-1", 2, "5m"]),
    ("storage.k8s.io", "CSIStorageCapacity", obj("cap", storageClassName="fast", capacity="100Gi"),
     ["cap", "fast", "100Gi"]),
    ("storage.k8s.io", "CSIStorageCapacity", obj("unknown", storageClassName="fast"), ["unknown", "fast", "<unset>"]),
    ("storage.k8s.io", "VolumeAttachment",
     obj("va", spec={"attacher": "csi.example.com", "nodeName": "node-1", "source": {"persistentVolumeName": "pv1"}},
         status={"attached": True}),
     ["va", "csi.example.com", "pv1", "node-1", True, "5m"]),
    # --- rbac
    ("rbac.authorization.k8s.io", "RoleBinding",
     obj("rb", roleRef={"kind": "Role", "name": "reader"},
         subjects=[{"kind": "User", "name": "alice"}, {"kind": "User", "name": "bob"},
                   {"kind": "Group", "name": "devs"},
                   {"kind": "ServiceAccount", "namespace": "ci", "name": "builder"}]),
     ["rb", "Role/reader", "5m", "alice, bob", "devs", "ci/builder"]),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding",
     obj("crb", roleRef={"kind": "ClusterRole", "name": "admin"}),
     ["crb", "ClusterRole/admin", "5m", "", "", ""]),
    ("rbac.authorization.k8s.io", "ClusterRole", obj("view", age=3600), ["view", "2023-11-14T21:13:20Z"]),
    ("rbac.authorization.k8s.io", "Role", {"metadata": {"name": "r"}}, ["r", "0001-01-01T00:00:00Z"]),
    # --- certificates
    ("certificates.k8s.io", "CertificateSigningRequest",
     obj("csr-1", spec={"signerName": "kubernetes.io/kube-apiserver-client", "username": "alice",
                        "expirationSeconds": 86400},
         status={"conditions": [{"type": "Approved", "status": "True"}], "certificate": "Y2VydA=="}),
     ["csr-1", "5m", "kubernetes.io/kube-apiserver-client", "alice", "24h", "Approved,Issued"]),
    ("certificates.k8s.io", "CertificateSigningRequest",
     obj("csr-2", spec={"signerName": "example.com/s", "username": "bob"},
         status={"conditions": [{"type": "Approved", "status": "True"}, {"type": "Denied", "status": "True"},
                                {"type": "Failed", "status": "True"}]}),
     ["csr-2", "5m", "example.com/s", "bob", "<none>", "Denied,Failed"]),
    ("certificates.k8s.io", "CertificateSigningRequest", obj("csr-3", spec={}),
     ["csr-3", "5m", "<none>", "", "<none>", "Pending"]),
    ("certificates.k8s.io", "ClusterTrustBundle", obj("ctb", spec={"signerName": "example.com/s"}),
     ["ctb", "example.com/s"]),
    # --- admission
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration", obj("vw", webhooks=[{}, {}]),
     ["vw", 2, "5m"]),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration", obj("mw"), ["mw", 0, "5m"]),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy",
     obj("vap", spec={"validations": [{"expression": "true"}],
                      "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}}),
     ["vap", 1, "v1/ConfigMap", "5m"]),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicy", obj("map", spec={"mutations": [{}, {}]}),
     ["map", 2, "<unset>", "5m"]),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding",
     obj("b1", spec={"policyName": "vap", "paramRef": {"name": "cfg", "namespace": "ns"}}),
     ["b1", "vap", "ns/cfg", "5m"]),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding",
     obj("b2", spec={"policyName": "vap", "paramRef": {"name": "cfg"}}), ["b2", "vap", "*/cfg", "5m"]),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding",
     obj("b3", spec={"policyName": "map", "paramRef": {"selector": {
         "matchLabels": {"b": "2", "a": "1"},
         "matchExpressions": [{"key": "k", "operator": "In", "values": ["x", "y"]}]}}}),
     ["b3", "map", "&LabelSelector{MatchLabels:map[string]string{a: 1,b: 2,},"
                   "MatchExpressions:[]LabelSelectorRequirement{LabelSelectorRequirement{Key:k,Operator:In,"
                   "Values:[x y],},},}", "5m"]),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding", obj("b4", spec={"policyName": "map"}),
     ["b4", "map", "<unset>", "5m"]),
    # --- flow control, aggregation, storage migration
    ("flowcontrol.apiserver.k8s.io", "FlowSchema",
     obj("exempt", spec={"priorityLevelConfiguration": {"name": "exempt"}, "matchingPrecedence": 1,
                         "distinguisherMethod": {"type": "ByUser"}},
         status={"conditions": [{"type": "Dangling", "status": "False"}]}),
     ["exempt", "exempt", 1, "ByUser", "5m", "False"]),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema",
     obj("fs", spec={"priorityLevelConfiguration": {"name": "pl"}, "matchingPrecedence": 500}),
     ["fs", "pl", 500, "<none>", "5m", "?"]),
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration",
     obj("workload", spec={"type": "Limited", "limited": {
         "nominalConcurrencyShares": 30,
         "limitResponse": {"type": "Queue", "queuing": {"queues": 64, "handSize": 6, "queueLengthLimit": 50}}}}),
     ["workload", "Limited", 30, 64, 6, 50, "5m"]),
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration",
     obj("reject", spec={"type": "Limited", "limited": {"nominalConcurrencyShares": 5,
                                                          "limitResponse": {"type": "Reject"}}}),
     ["reject", "Limited", 5, "<none>", "<none>", "<none>", "5m"]),
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration", obj("exempt", spec={"type": "Exempt"}),
     ["exempt", "Exempt", "<none>", "<none>", "<none>", "<none>", "5m"]),
    ("apiregistration.k8s.io", "APIService",
     obj("v1.apps", status={"conditions": [{"type": "Available", "status": "True", "reason": "Local"}]}),
     ["v1.apps", "Local", "True", "5m"]),
    ("apiregistration.k8s.io", "APIService",
     obj("v1beta1.metrics.k8s.io", spec={"service": {"namespace": "kube-system", "name": "metrics-server"}},
         status={"conditions": [{"type": "Available", "status": "False", "reason": "MissingEndpoints"}]}),
     ["v1beta1.metrics.k8s.io", "kube-system/metrics-server", "False (MissingEndpoints)", "5m"]),
    ("apiregistration.k8s.io", "APIService", obj("v1.x"), ["v1.x", "Local", "Unknown", "5m"]),
    ("storagemigration.k8s.io", "StorageVersionMigration",
     obj("m", spec={"resource": {"group": "apps", "resource": "deployments"}}), ["m", "deployments.apps"]),
    # --- scheduling, node, policy, coordination
    ("scheduling.k8s.io", "PriorityClass",
     obj("high", value=1000, globalDefault=True, preemptionPolicy="PreemptLowerPriority"),
     ["high", 1000, True, "5m", "PreemptLowerPriority"]),
    ("node.k8s.io", "RuntimeClass", obj("gvisor", handler="runsc"), ["gvisor", "runsc", "5m"]),
    ("policy", "PodDisruptionBudget", obj("pdb", spec={"minAvailable": 2}, status={"disruptionsAllowed": 1}),
     ["pdb", "2", "N/A", 1, "5m"]),
    ("policy", "PodDisruptionBudget", obj("pdb2", spec={"maxUnavailable": "25%"}), ["pdb2", "N/A", "25%", 0, "5m"]),
    ("coordination.k8s.io", "Lease", obj("l", spec={"holderIdentity": "me"}), ["l", "me", "5m"]),
    ("autoscaling", "Scale", obj("web", spec={"replicas": 3}, status={"replicas": 2, "selector": "app=web"}),
     ["web", 3, 2, "5m"]),
    # --- kinds without a printer upstream: the default table
    ("apiextensions.k8s.io", "CustomResourceDefinition", obj("widgets.example.com", age=0),
     ["widgets.example.com", "2023-11-14T22:13:20Z"]),
    ("certificates.k8s.io", "PodCertificateRequest", obj("pcr", spec={"podName": "web-0"}), ["pcr", "5m"]),
    # --- the sandbox's own kinds without a printer: as custom resources
    ("sim.cplane.dev", "PodLoad", obj("load"), ["load", "5m"]),
]


@pytest.mark.parametrize(("group", "kind", "o", "expected"), CASES,
                         ids=[f"{c[1]}-{c[2]['metadata']['name']}" for c in CASES])
def test_row_cells(group: str, kind: str, o: dict[str, Any], expected: list[Any]) -> None:
    got = cells(group, kind, o)
    assert got == expected
    if kind != "IPAddress":  # upstream's IPAddress row carries an age its table has no column for
        assert len(got) == len(columns(group=group, kind=kind))


@pytest.mark.parametrize(("group", "kind", "expected"), [
    ("", "Secret", [("Name", 0), ("Type", 0), ("Data", 0), ("Age", 0)]),
    ("", "Service", [("Name", 0), ("Type", 0), ("Cluster-IP", 0), ("External-IP", 0), ("Port(s)", 0), ("Age", 0),
                     ("Selector", 1)]),
    ("", "PersistentVolume", [("Name", 0), ("Capacity", 0), ("Access Modes", 0), ("Reclaim Policy", 0),
                              ("Status", 0), ("Claim", 0), ("StorageClass", 0), ("VolumeAttributesClass", 0),
                              ("Reason", 0), ("Age", 0), ("VolumeMode", 1)]),
    ("", "LimitRange", [("Name", 0), ("Created At", 0)]),
    ("batch", "Job", [("Name", 0), ("Status", 0), ("Completions", 0), ("Duration", 0), ("Age", 0),
                      ("Containers", 1), ("Images", 1), ("Selector", 1)]),
    ("batch", "CronJob", [("Name", 0), ("Schedule", 0), ("Timezone", 0), ("Suspend", 0), ("Active", 0),
                          ("Last Schedule", 0), ("Age", 0), ("Containers", 1), ("Images", 1), ("Selector", 1)]),
    ("certificates.k8s.io", "CertificateSigningRequest", [("Name", 0), ("Age", 0), ("SignerName", 0),
                                                          ("Requestor", 0), ("RequestedDuration", 0),
                                                          ("Condition", 0)]),
    ("scheduling.k8s.io", "PriorityClass", [("Name", 0), ("Value", 0), ("Global-Default", 0), ("Age", 0),
                                            ("PreemptionPolicy", 1)]),
    ("rbac.authorization.k8s.io", "RoleBinding", [("Name", 0), ("Role", 0), ("Age", 0), ("Users", 1),
                                                  ("Groups", 1), ("ServiceAccounts", 1)]),
    ("rbac.authorization.k8s.io", "Role", [("Name", 0), ("Created At", 0)]),
    ("networking.k8s.io", "IPAddress", [("Name", 0), ("ParentRef", 0)]),
    ("events.k8s.io", "Event", [("Last Seen", 0), ("Type", 0), ("Reason", 0), ("Object", 0), ("Subobject", 1),
                                ("Source", 1), ("Message", 0), ("First Seen", 1), ("Count", 1), ("Name", 1)]),
])
def test_columns(group: str, kind: str, expected: list[tuple[str, int]]) -> None:
    assert header(group, kind) == expected


def test_default_table_column_types() -> None:
    cols = columns(group="rbac.authorization.k8s.io", kind="ClusterRole")
    assert [(c["name"], c["type"], c["format"]) for c in cols] == [("Name", "string", "name"),
                                                                   ("Created At", "date", "")]


def test_running_job_duration_is_rendered_at_table_time() -> None:
    o = obj("j", status={"startTime": ago(30)})
    assert cells("batch", "Job", o)[3] == "30s"
    assert row(o, group="batch", kind="Job", now=NOW + 600)[3] == "10m"


def test_events_v1_prints_as_core_events() -> None:
    o = obj("web.1", type="Warning", reason="BackOff", note=" Back-off restarting ",
            regarding={"kind": "Pod", "name": "web", "fieldPath": "spec.containers{c}"},
            reportingController="kubelet", reportingInstance="node-1", eventTime=ago(120).replace("Z", ".000000Z"),
            series={"count": 4, "lastObservedTime": ago(10).replace("Z", ".000000Z")})
    assert cells("events.k8s.io", "Event", o) == [
        "10s", "Warning", "BackOff", "pod/web", "spec.containers{c}", "kubelet, node-1", "Back-off restarting",
        "2m", 4, "web.1"]


def test_hpa_v1_prints_its_cpu_target() -> None:
    o = obj("h", spec={"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "minReplicas": 1, "maxReplicas": 5,
                       "targetCPUUtilizationPercentage": 80},
            status={"currentReplicas": 2, "currentCPUUtilizationPercentage": 40})
    assert cells("autoscaling", "HorizontalPodAutoscaler", o) == [
        "h", "Deployment/web", "cpu: 40%/80%", "1", 5, 2, "5m"]


def test_flow_schemas_are_listed_in_matching_order() -> None:
    def fs(name: str, precedence: int) -> dict[str, Any]:
        return obj(name, spec={"priorityLevelConfiguration": {"name": "pl"}, "matchingPrecedence": precedence})

    t = table([fs("c", 1000), fs("b", 500), fs("a", 1000), fs("exempt", 1)], group="flowcontrol.apiserver.k8s.io",
              kind="FlowSchema", now=NOW)
    assert [r["cells"][0] for r in t["rows"]] == ["exempt", "b", "a", "c"]


_SPARSE = [
    {"metadata": {"name": "x"}},
    {"metadata": {"name": "x", "deletionTimestamp": ago(1)}, "spec": None, "status": None},
    {"metadata": {"name": "x"}, "spec": {}, "status": {}},
]


@pytest.mark.parametrize("kind", [k for k in KINDS if "list" in k.verbs], ids=lambda k: f"{k.group or 'core'}.{k.kind}")
def test_every_served_kind_prints_a_sparse_object(kind: ResourceKind) -> None:
    """Every served kind's printer copes with objects that lack spec and status, and gives one cell per
    column (IPAddress: plus its age, as upstream)."""
    want = len(columns(group=kind.group, kind=kind.kind)) + (kind.kind == "IPAddress")
    for o in _SPARSE:
        got = cells(kind.group, kind.kind, o)
        assert len(got) == want
        assert got[0] == "x" or kind.kind == "Event"
        assert all(isinstance(c, (str, int, bool)) for c in got)
