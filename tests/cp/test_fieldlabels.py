"""Field selectors per resource: the fields each accepts (upstream's field label conversion
functions), how each reads on an object (the registries' selectable fields), and the message an
unsupported field gets, which differs between groups.

Excluded: the selector grammar and pods', events' and nodes' fields (tests/cp/test_selectors.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from cp.errors import BadRequest
from cp.selectors import parse_field_selector

NOT_KNOWN = '"{}" is not a known field selector: only "metadata.name", "metadata.namespace"'


@pytest.mark.parametrize(("group", "resource", "field", "message"), [
    ("", "secrets", "data", "field label not supported: data"),
    ("", "services", "spec.ports", "field label not supported: spec.ports"),
    ("", "replicationcontrollers", "spec.replicas", "field label not supported: spec.replicas"),
    ("batch", "jobs", "status.succeeded", 'field label "status.succeeded" not supported for batchv1.Job'),
    ("batch", "cronjobs", "spec.schedule", NOT_KNOWN.format("spec.schedule")),
    ("apps", "replicasets", "status.replicas", NOT_KNOWN.format("status.replicas")),
    ("resource.k8s.io", "resourceslices", "spec.pool.name",
     "field label not supported for resource.k8s.io/v1, Kind=ResourceSlice: spec.pool.name"),
    ("certificates.k8s.io", "certificatesigningrequests", "metadata.namespace",
     "field label not supported: metadata.namespace"),
    ("certificates.k8s.io", "clustertrustbundles", "spec.trustBundle",
     "field label not supported: spec.trustBundle"),
    ("certificates.k8s.io", "podcertificaterequests", "metadata.namespace",
     "field label not supported: metadata.namespace"),
    ("events.k8s.io", "events", "involvedObject.name", "field label not supported: involvedObject.name"),
    ("", "persistentvolumes", "spec.storageClassName", NOT_KNOWN.format("spec.storageClassName")),
    ("", "serviceaccounts", "secrets", NOT_KNOWN.format("secrets")),
    ("storage.k8s.io", "storageclasses", "provisioner", NOT_KNOWN.format("provisioner")),
    ("rbac.authorization.k8s.io", "clusterroles", "rules", NOT_KNOWN.format("rules")),
    ("", "configmaps", 'a"b', '"a\\"b" is not a known field selector: only "metadata.name", "metadata.namespace"'),
])
def test_unsupported_field(group: str, resource: str, field: str, message: str) -> None:
    with pytest.raises(BadRequest) as info:
        parse_field_selector(f"{field}=x", group=group, resource=resource)
    assert info.value.message == message


def matches(group: str, resource: str, text: str, obj: dict[str, Any]) -> bool:
    return parse_field_selector(text, group=group, resource=resource).matches(obj)


SECRET = {"metadata": {"name": "tls", "namespace": "web"}, "type": "kubernetes.io/tls"}
SERVICE = {"metadata": {"name": "db", "namespace": "web"}, "spec": {"type": "ClusterIP", "clusterIP": "10.0.0.7"}}
HEADLESS = {"metadata": {"name": "h", "namespace": "web"}, "spec": {"type": "ClusterIP", "clusterIP": "None"}}
RC = {"metadata": {"name": "rc", "namespace": "web"}, "status": {"replicas": 2}}
JOB = {"metadata": {"name": "j", "namespace": "web"}, "status": {"succeeded": 3}}
NEW_JOB = {"metadata": {"name": "k", "namespace": "web"}, "status": {}}
CSR = {"metadata": {"name": "csr-1"}, "spec": {"signerName": "kubernetes.io/kubelet-serving"}}
PCR = {"metadata": {"name": "p", "namespace": "web"},
       "spec": {"signerName": "example.com/s", "podName": "web-0", "nodeName": "node-1"}}
EVENT = {"metadata": {"name": "e", "namespace": "web"}, "reason": "Started", "type": "Normal",
         "regarding": {"kind": "Pod", "name": "web-0", "namespace": "web"}, "reportingController": "kubelet"}
CONFIGMAP = {"metadata": {"name": "cfg", "namespace": "web"}}


@pytest.mark.parametrize(("group", "resource", "text", "obj", "expected"), [
    ("", "secrets", "type=kubernetes.io/tls", SECRET, True),
    ("", "secrets", "type!=kubernetes.io/tls,metadata.namespace=web", SECRET, False),
    ("", "services", "spec.clusterIP=10.0.0.7", SERVICE, True),
    ("", "services", "spec.clusterIP!=None", HEADLESS, False),
    ("", "services", "spec.type=ClusterIP,metadata.name=db", SERVICE, True),
    ("", "replicationcontrollers", "status.replicas=2", RC, True),
    ("batch", "jobs", "status.successful=3", JOB, True),
    ("batch", "jobs", "status.successful=0", NEW_JOB, True),   # a count that is unset reads as 0
    ("certificates.k8s.io", "certificatesigningrequests", "spec.signerName=kubernetes.io/kubelet-serving", CSR,
     True),
    ("certificates.k8s.io", "podcertificaterequests", "spec.podName=web-0,spec.nodeName=node-1", PCR, True),
    ("certificates.k8s.io", "podcertificaterequests", "spec.signerName=other", PCR, False),
    ("events.k8s.io", "events", "regarding.kind=Pod,regarding.name=web-0,reason=Started", EVENT, True),
    ("events.k8s.io", "events", "reportingController=kubelet,type=Warning", EVENT, False),
    ("", "configmaps", "metadata.name=cfg,metadata.namespace=web", CONFIGMAP, True),
    ("", "pods", "status.podIPs=", {"metadata": {"name": "p"}, "status": {"podIPs": [{"ip": "10.1.0.1"}]}}, True),
])
def test_matching(group: str, resource: str, text: str, obj: dict[str, Any], expected: bool) -> None:
    assert matches(group, resource, text, obj) is expected
