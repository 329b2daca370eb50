"""Typical manifests of the cluster configuration kinds over HTTP: networking, storage, scheduling, node,
certificates, admission registration, flow control, coordination, discovery, API registration, storage
migration and custom resource definitions.

In scope: what charts and operators ship is accepted and comes back defaulted as kube-apiserver returns
it (defaults, generation, initial status), invalid bodies get a 422 Status with upstream's causes, and
updates keep what upstream keeps (immutable fields, status only through /status, a CSR's spec).
Out of scope: the rule tables themselves (tests/cp/validation) and serving custom resources.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from typing import Any

import aiohttp
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from cp import certs

NET = "/apis/networking.k8s.io/v1"
STORAGE = "/apis/storage.k8s.io/v1"
ADMISSION = "/apis/admissionregistration.k8s.io/v1"
FLOW = "/apis/flowcontrol.apiserver.k8s.io/v1"


def csr_pem(common_name: str = "system:node:node-1") -> str:
    """A signed PKCS#10 request in PEM, base64-encoded as `spec.request` carries it."""
    key = ec.generate_private_key(ec.SECP256R1())
    request = x509.CertificateSigningRequestBuilder().subject_name(
        x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])).sign(key, hashes.SHA256())
    return base64.b64encode(request.public_bytes(serialization.Encoding.PEM)).decode()


def stub_request() -> str:
    """A kubelet's stub PKCS#10 request (DER, base64 as `stubPKCS10Request` carries it)."""
    key = ec.generate_private_key(ec.SECP256R1())
    request = x509.CertificateSigningRequestBuilder().subject_name(x509.Name([])).sign(key, hashes.SHA256())
    return base64.b64encode(request.public_bytes(serialization.Encoding.DER)).decode()


def ca_pem() -> str:
    cert, _key = certs.new_ca(now=dt.datetime.now(dt.UTC).timestamp())
    return cert.decode()


def webhook(name: str, **extra: Any) -> dict[str, Any]:
    """A webhook as cert-manager and most operators' charts register theirs."""
    hook: dict[str, Any] = {
        "name": name, "admissionReviewVersions": ["v1"], "sideEffects": "None",
        "clientConfig": {"service": {"name": "webhook", "namespace": "cert-manager", "path": "/validate"},
                         "caBundle": base64.b64encode(b"ca").decode()},
        "rules": [{"apiGroups": ["cert-manager.io"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                   "resources": ["*/*"]}]}
    hook.update(extra)
    return hook


def manifests() -> list[tuple[str, dict[str, Any]]]:
    return [
        (f"{NET}/namespaces/default/networkpolicies", {
            "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "allow-web"},
            "spec": {"podSelector": {"matchLabels": {"app": "web"}},
                     "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"team": "a"}}},
                                           {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}],
                                  "ports": [{"port": 8080}, {"port": "http", "protocol": "TCP"}]}],
                     "egress": [{"to": [{"podSelector": {}}], "ports": [{"port": 53, "endPort": 60,
                                                                         "protocol": "UDP"}]}]}}),
        (f"{NET}/ingressclasses", {
            "apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
            "metadata": {"name": "nginx", "annotations": {"ingressclass.kubernetes.io/is-default-class": "true"}},
            "spec": {"controller": "k8s.io/ingress-nginx",
                     "parameters": {"apiGroup": "k8s.nginx.org", "kind": "IngressParameters", "name": "p"}}}),
        (f"{NET}/namespaces/default/ingresses", {
            "apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "web"},
            "spec": {"ingressClassName": "nginx", "tls": [{"hosts": ["web.example.com"], "secretName": "web-tls"}],
                     "rules": [{"host": "web.example.com", "http": {"paths": [
                         {"path": "/", "pathType": "Prefix",
                          "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}},
                         {"host": "*.apps.example.com", "http": {"paths": [
                             {"path": "/api", "pathType": "ImplementationSpecific",
                              "backend": {"service": {"name": "api", "port": {"name": "http"}}}}]}}]}}),
        (f"{NET}/servicecidrs", {
            "apiVersion": "networking.k8s.io/v1", "kind": "ServiceCIDR", "metadata": {"name": "extra"},
            "spec": {"cidrs": ["10.200.0.0/16", "fd00:10:200::/108"]}}),
        (f"{NET}/ipaddresses", {
            "apiVersion": "networking.k8s.io/v1", "kind": "IPAddress", "metadata": {"name": "10.200.0.10"},
            "spec": {"parentRef": {"group": "", "resource": "services", "namespace": "default", "name": "web"}}}),
        ("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices", {
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "web-abc", "labels": {"kubernetes.io/service-name": "web"}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.244.1.5"], "conditions": {"ready": True}, "nodeName": "node-1",
                           "zone": "a"}],
            "ports": [{"port": 8080}]}),
        (f"{STORAGE}/storageclasses", {
            "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "local-path"},
            "provisioner": "rancher.io/local-path"}),
        (f"{STORAGE}/csidrivers", {
            "apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": "hostpath.csi.k8s.io"},
            "spec": {"attachRequired": False, "podInfoOnMount": True,
                     "volumeLifecycleModes": ["Persistent", "Ephemeral"]}}),
        (f"{STORAGE}/csinodes", {
            "apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": "node-1"},
            "spec": {"drivers": [{"name": "hostpath.csi.k8s.io", "nodeID": "node-1",
                                  "topologyKeys": ["topology.hostpath.csi/node"]}]}}),
        (f"{STORAGE}/namespaces/default/csistoragecapacities", {
            "apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity", "metadata": {"name": "csisc-node-1"},
            "storageClassName": "local-path", "capacity": "100Gi",
            "nodeTopology": {"matchLabels": {"topology.hostpath.csi/node": "node-1"}}}),
        (f"{STORAGE}/volumeattachments", {
            "apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "metadata": {"name": "csi-123"},
            "spec": {"attacher": "hostpath.csi.k8s.io", "nodeName": "node-1",
                     "source": {"persistentVolumeName": "pvc-123"}}}),
        (f"{STORAGE}/volumeattributesclasses", {
            "apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttributesClass", "metadata": {"name": "gold"},
            "driverName": "hostpath.csi.k8s.io", "parameters": {"iops": "3000"}}),
        ("/apis/scheduling.k8s.io/v1/priorityclasses", {
            "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
            "value": 1000000, "description": "For important workloads."}),
        ("/apis/node.k8s.io/v1/runtimeclasses", {
            "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "nvidia"},
            "handler": "nvidia", "overhead": {"podFixed": {"cpu": "100m", "memory": "64Mi"}},
            "scheduling": {"nodeSelector": {"nvidia.com/gpu.present": "true"},
                           "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}}),
        ("/apis/certificates.k8s.io/v1/certificatesigningrequests", {
            "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
            "metadata": {"name": "node-csr"},
            "spec": {"request": csr_pem(), "signerName": "kubernetes.io/kube-apiserver-client",
                     "usages": ["digital signature", "client auth"], "expirationSeconds": 86400,
                     "username": "mallory"}}),
        ("/apis/certificates.k8s.io/v1/namespaces/default/podcertificaterequests", {
            "apiVersion": "certificates.k8s.io/v1", "kind": "PodCertificateRequest", "metadata": {"name": "web-0-pcr"},
            "spec": {"signerName": "example.com/workload", "podName": "web-0", "podUID": "7d3c-pod",
                     "serviceAccountName": "web", "serviceAccountUID": "7d3c-sa", "nodeName": "node-1",
                     "nodeUID": "7d3c-node", "stubPKCS10Request": stub_request()}}),
        ("/apis/certificates.k8s.io/v1/clustertrustbundles", {
            "apiVersion": "certificates.k8s.io/v1", "kind": "ClusterTrustBundle",
            "metadata": {"name": "example.com:signer:roots"},
            "spec": {"signerName": "example.com/signer", "trustBundle": ca_pem()}}),
        (f"{ADMISSION}/validatingwebhookconfigurations", {
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "cert-manager-webhook"},
            "webhooks": [webhook("webhook.cert-manager.io", matchConditions=[
                {"name": "not-kube-system", "expression": "request.namespace != 'kube-system'"}])]}),
        (f"{ADMISSION}/mutatingwebhookconfigurations", {
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "cert-manager-webhook"}, "webhooks": [webhook("webhook.cert-manager.io")]}),
        (f"{ADMISSION}/validatingadmissionpolicies", {
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "demo-policy.example.com"},
            "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                                                             "operations": ["CREATE", "UPDATE"],
                                                             "resources": ["deployments"]}]},
                     "variables": [{"name": "replicas", "expression": "object.spec.replicas"}],
                     "validations": [{"expression": "variables.replicas <= 5",
                                      "messageExpression": "'too many replicas: ' + string(variables.replicas)"}],
                     "auditAnnotations": [{"key": "high-replica-count",
                                           "valueExpression": "'Deployment spec.replicas set to ' + "
                                                              "string(object.spec.replicas)"}]}}),
        (f"{ADMISSION}/validatingadmissionpolicybindings", {
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": "demo-binding"},
            "spec": {"policyName": "demo-policy.example.com", "validationActions": ["Deny"],
                     "matchResources": {"namespaceSelector": {"matchLabels": {"environment": "test"}}}}}),
        (f"{ADMISSION}/mutatingadmissionpolicies", {
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
            "metadata": {"name": "sidecar-policy.example.com"},
            "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                             "operations": ["CREATE"], "resources": ["pods"]}]},
                     "matchConditions": [{"name": "no-sidecar",
                                          "expression": "!object.spec.initContainers.exists(ic, ic.name == 'mesh')"}],
                     "reinvocationPolicy": "IfNeeded",
                     "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {
                         "expression": "Object{spec: Object.spec{initContainers: [Object.spec.initContainers{"
                                       "name: 'mesh', image: 'mesh:v1'}]}}"}}]}}),
        (f"{ADMISSION}/mutatingadmissionpolicybindings", {
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicyBinding",
            "metadata": {"name": "sidecar-binding"}, "spec": {"policyName": "sidecar-policy.example.com"}}),
        (f"{FLOW}/prioritylevelconfigurations", {
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
            "metadata": {"name": "batch"},
            "spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": {}}}}}),
        (f"{FLOW}/flowschemas", {
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema", "metadata": {"name": "batch-jobs"},
            "spec": {"priorityLevelConfiguration": {"name": "batch"}, "distinguisherMethod": {"type": "ByUser"},
                     "rules": [{"subjects": [{"kind": "ServiceAccount",
                                              "serviceAccount": {"name": "runner", "namespace": "ci"}}],
                                "resourceRules": [{"verbs": ["*"], "apiGroups": ["batch"], "resources": ["jobs"],
                                                   "namespaces": ["*"]}]}]}}),
        ("/apis/coordination.k8s.io/v1/namespaces/default/leases", {
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "controller-leader"},
            "spec": {"holderIdentity": "pod-1", "leaseDurationSeconds": 15}}),
        ("/apis/apiregistration.k8s.io/v1/apiservices", {
            "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": "v1beta1.metrics.k8s.io"},
            "spec": {"group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100,
                     "versionPriority": 100, "insecureSkipTLSVerify": True,
                     "service": {"name": "metrics-server", "namespace": "kube-system"}}}),
        ("/apis/storagemigration.k8s.io/v1/storageversionmigrations", {
            "apiVersion": "storagemigration.k8s.io/v1", "kind": "StorageVersionMigration",
            "metadata": {"name": "secrets-migration"}, "spec": {"resource": {"group": "", "resource": "secrets"}}}),
        ("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", {
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                       "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}},
                                   "subresources": {"status": {}}}]}}),
    ]


async def _post(http: aiohttp.ClientSession, path: str, obj: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    async with http.post(path, json=obj) as r:
        return r.status, json.loads(await r.read())


@pytest.fixture
def typical() -> dict[str, tuple[str, dict[str, Any]]]:
    return {obj["kind"]: (path, obj) for path, obj in manifests()}


async def test_typical_manifests_are_accepted(http: aiohttp.ClientSession) -> None:
    for path, obj in manifests():
        status, body = await _post(http, path, obj)
        assert status == 201, (obj["kind"], body.get("message"))


async def test_defaults_as_kube_apiserver_writes_them(http: aiohttp.ClientSession,
                                                      typical: dict[str, tuple[str, dict[str, Any]]]) -> None:
    created = {}
    for kind in ("NetworkPolicy", "IngressClass", "Ingress", "EndpointSlice", "StorageClass", "CSIDriver",
                 "VolumeAttachment", "PriorityClass", "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration",
                 "ValidatingAdmissionPolicy", "PriorityLevelConfiguration", "FlowSchema", "APIService",
                 "CustomResourceDefinition", "PodCertificateRequest"):
        status, created[kind] = await _post(http, *typical[kind])
        assert status == 201, created[kind]
    np = created["NetworkPolicy"]["spec"]
    assert np["policyTypes"] == ["Ingress", "Egress"]
    assert np["ingress"][0]["ports"][0] == {"port": 8080, "protocol": "TCP"}
    assert created["IngressClass"]["spec"]["parameters"]["scope"] == "Cluster"
    assert created["Ingress"]["status"] == {"loadBalancer": {}}
    assert created["EndpointSlice"]["ports"] == [{"name": "", "port": 8080, "protocol": "TCP"}]
    sc = created["StorageClass"]
    assert (sc["reclaimPolicy"], sc["volumeBindingMode"]) == ("Delete", "Immediate")
    assert created["CSIDriver"]["spec"] == {
        "attachRequired": False, "podInfoOnMount": True, "volumeLifecycleModes": ["Persistent", "Ephemeral"],
        "storageCapacity": False, "fsGroupPolicy": "ReadWriteOnceWithFSType", "requiresRepublish": False,
        "seLinuxMount": False}
    assert created["VolumeAttachment"]["status"] == {"attached": False}
    assert created["PriorityClass"]["preemptionPolicy"] == "PreemptLowerPriority"
    assert created["PodCertificateRequest"]["spec"]["maxExpirationSeconds"] == 86400
    for kind, extra in (("ValidatingWebhookConfiguration", {}), ("MutatingWebhookConfiguration",
                                                                 {"reinvocationPolicy": "Never"})):
        hook = created[kind]["webhooks"][0]
        assert {k: hook[k] for k in ("failurePolicy", "matchPolicy", "namespaceSelector", "objectSelector",
                                     "timeoutSeconds", *extra)} == {
            "failurePolicy": "Fail", "matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {},
            "timeoutSeconds": 10, **extra}
        assert hook["rules"][0]["scope"] == "*"
        assert hook["clientConfig"]["service"]["port"] == 443
    vap = created["ValidatingAdmissionPolicy"]["spec"]
    assert vap["failurePolicy"] == "Fail"
    assert {k: vap["matchConstraints"][k] for k in ("matchPolicy", "namespaceSelector", "objectSelector")} == {
        "matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {}}
    limited = created["PriorityLevelConfiguration"]["spec"]["limited"]
    assert limited == {"nominalConcurrencyShares": 30, "lendablePercent": 0, "limitResponse": {
        "type": "Queue", "queuing": {"queues": 64, "handSize": 8, "queueLengthLimit": 50}}}
    assert created["FlowSchema"]["spec"]["matchingPrecedence"] == 1000
    assert created["APIService"]["spec"]["service"]["port"] == 443
    crd = created["CustomResourceDefinition"]
    assert crd["spec"]["names"]["singular"] == "widget" and crd["spec"]["names"]["listKind"] == "WidgetList"
    assert crd["spec"]["conversion"] == {"strategy": "None"}
    assert crd["status"] == {"acceptedNames": {"plural": "", "kind": ""}, "storedVersions": ["v1"]}


async def test_generation_follows_upstream_strategies(http: aiohttp.ClientSession,
                                                      typical: dict[str, tuple[str, dict[str, Any]]]) -> None:
    """Kinds whose strategy counts spec changes start at generation 1; the others have none."""
    tracked = ("NetworkPolicy", "Ingress", "IngressClass", "CSIDriver", "EndpointSlice", "FlowSchema",
               "ValidatingWebhookConfiguration", "ValidatingAdmissionPolicy", "CustomResourceDefinition")
    untracked = ("StorageClass", "VolumeAttachment", "CSINode", "PriorityClass", "Lease", "APIService",
                 "CertificateSigningRequest", "ServiceCIDR")
    for kind in tracked + untracked:
        status, body = await _post(http, *typical[kind])
        assert status == 201, body
        assert body["metadata"].get("generation") == (1 if kind in tracked else None), kind


async def test_csr_requester_is_the_user_and_spec_fixed(http: aiohttp.ClientSession,
                                                          typical: dict[str, tuple[str, dict[str, Any]]]) -> None:
    path, obj = typical["CertificateSigningRequest"]
    status, body = await _post(http, path, obj)
    assert status == 201
    # The requester is who sent the request, not what the body claims.
    assert body["spec"]["username"] == "system:admin"
    assert body["status"] == {}
    # A write to the main resource keeps the spec as created (only subresources change a CSR).
    body["spec"]["usages"] = ["server auth"]
    async with http.put(f"{path}/node-csr", json=body) as r:
        updated = json.loads(await r.read())
        assert r.status == 200, updated
    assert updated["spec"]["usages"] == ["digital signature", "client auth"]


@pytest.mark.parametrize(("kind", "mutate", "causes"), [
    ("NetworkPolicy", lambda o: o["spec"]["ingress"][0]["from"][1]["ipBlock"].update(**{"except": ["192.168.0.0/16"]}),
     [("FieldValueInvalid", "spec.ingress[0].from[1].ipBlock.except[0]",
       'Invalid value: "192.168.0.0/16": must be a strict subset of `cidr`')]),
    ("Ingress", lambda o: o["spec"]["rules"][0]["http"]["paths"][0].pop("pathType"),
     [("FieldValueRequired", "spec.rules[0].http.paths[0].pathType", "Required value: pathType must be specified")]),
    ("IngressClass", lambda o: o["spec"].update(controller="nginx"),
     [("FieldValueInvalid", "spec.controller",
       'Invalid value: "nginx": must be a domain-prefixed path (such as "acme.io/foo")')]),
    ("StorageClass", lambda o: o.update(reclaimPolicy="Recycle"),
     [("FieldValueNotSupported", "reclaimPolicy", 'Unsupported value: "Recycle": supported values: "Delete", '
                                                  '"Retain"')]),
    ("PriorityClass", lambda o: o["metadata"].update(name="system-special"),
     [("FieldValueForbidden", "metadata.name", "Forbidden: priority class names with 'system-' prefix are reserved "
                                               "for system use only. error: system-special is not a known system "
                                               "priority class")]),
    ("PriorityClass", lambda o: o.update(value=2000000000),
     [("FieldValueForbidden", "value", "Forbidden: maximum allowed value of a user defined priority is 1000000000")]),
    ("RuntimeClass", lambda o: o.update(handler="Nvidia"),
     [("FieldValueInvalid", "handler",
       "Invalid value: \"Nvidia\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
       "or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used "
       "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")]),
    ("CertificateSigningRequest", lambda o: o["spec"].update(signerName="example.com"),
     [("FieldValueInvalid", "spec.signerName", 'Invalid value: "example.com": must be a fully qualified domain and '
                                               "path of the form 'example.com/signer-name'")]),
    ("ValidatingWebhookConfiguration", lambda o: o["webhooks"][0].pop("sideEffects"),
     [("FieldValueRequired", "webhooks[0].sideEffects", "Required value: must specify one of None, NoneOnDryRun")]),
    ("ValidatingAdmissionPolicy", lambda o: o["spec"]["validations"][0].update(expression="object.spec.replicas >"),
     [("FieldValueInvalid", "spec.validations[0].expression", None)]),
    ("ValidatingAdmissionPolicyBinding", lambda o: o["spec"].update(validationActions=["Deny", "Warn"]),
     [("FieldValueInvalid", "spec.validationActions",
       'Invalid value: ["Deny","Warn"]: must not contain both Deny and Warn (repeating the same validation '
       "failure information in the API response and headers serves no purpose)")]),
    ("PriorityLevelConfiguration", lambda o: o["spec"]["limited"]["limitResponse"]["queuing"].update(handSize=65),
     [("FieldValueInvalid", "spec.limited.limitResponse.queuing.handSize",
       "Invalid value: 65: should not be greater than queues (64)")]),
    ("FlowSchema", lambda o: o["spec"].update(matchingPrecedence=1),
     [("FieldValueInvalid", "spec.matchingPrecedence",
       "Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1")]),
    ("EndpointSlice", lambda o: o["endpoints"][0].update(addresses=["127.0.0.1"]),
     [("FieldValueInvalid", "endpoints[0].addresses[0]",
       'Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)')]),
    ("APIService", lambda o: o["metadata"].update(name="metrics"),
     [("FieldValueInvalid", "metadata.name",
       'Invalid value: "metrics": must be `spec.version+"."+spec.group`: "v1beta1.metrics.k8s.io"')]),
    ("CustomResourceDefinition", lambda o: o["spec"]["versions"].append(
        dict(o["spec"]["versions"][0], name="v2")),
     # The second storage version is not among the stored versions the create recorded either.
     [("FieldValueInvalid", "spec.versions", None), ("FieldValueInvalid", "status.storedVersions", None)]),
    ("ServiceCIDR", lambda o: o["spec"].update(cidrs=["10.0.0.1/8"]),
     [("FieldValueInvalid", "spec.cidrs[0]", 'Invalid value: "10.0.0.1/8": must not have bits set beyond the '
                                            "prefix length")]),
])
async def test_invalid_manifests_get_upstreams_422(http: aiohttp.ClientSession,
                                                   typical: dict[str, tuple[str, dict[str, Any]]], kind: str,
                                                   mutate: Any, causes: list[tuple[str, str, str | None]]) -> None:
    path, obj = typical[kind]
    mutate(obj)
    status, body = await _post(http, path, obj)
    assert status == 422, body
    assert body["reason"] == "Invalid"
    got = [(c["reason"], c["field"], c["message"]) for c in body["details"]["causes"]]
    assert [(r, f) for r, f, _ in got] == [(r, f) for r, f, _ in causes]
    for (_, _, message), (_, _, expected) in zip(got, causes, strict=True):
        if expected is not None:
            assert message == expected


async def test_immutable_fields_on_update(http: aiohttp.ClientSession,
                                          typical: dict[str, tuple[str, dict[str, Any]]]) -> None:
    path, obj = typical["StorageClass"]
    status, body = await _post(http, path, obj)
    assert status == 201
    body["parameters"] = {"type": "ssd"}
    async with http.put(f"{path}/local-path", json=body) as r:
        assert r.status == 422
        causes = json.loads(await r.read())["details"]["causes"]
    assert causes == [{"reason": "FieldValueInvalid", "field": "parameters",
                       "message": "Invalid value: null: field is immutable"}]
    path, obj = typical["PriorityClass"]
    status, body = await _post(http, path, obj)
    body["value"] = 5
    async with http.put(f"{path}/high", json=body) as r:
        assert r.status == 422
        causes = json.loads(await r.read())["details"]["causes"]
    assert causes == [{"reason": "FieldValueForbidden", "field": "value", "message": "Forbidden: may not be changed "
                                                                                     "in an update."}]
