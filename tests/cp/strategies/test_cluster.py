"""cp/strategies/cluster.py: what the networking, storage, certificates and API extension strategies
prepare on create and update (initial status, a CSR's fixed spec and conditions, CRD stored versions)."""

from __future__ import annotations

from typing import Any

from cp import rbac, strategies
from cp import resources as res


def kind(group: str, name: str) -> res.ResourceKind:
    found = res.by_kind(group, name)
    assert found is not None
    return found


def test_initial_status_as_go_writes_it() -> None:
    ingress: dict[str, Any] = {"spec": {}, "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}}}
    strategies.prepare_for_create(kind("networking.k8s.io", "Ingress"), ingress, now=0)
    assert ingress["status"] == {"loadBalancer": {}}
    attachment: dict[str, Any] = {"spec": {}, "status": {"attached": True}}
    strategies.prepare_for_create(kind("storage.k8s.io", "VolumeAttachment"), attachment, now=0)
    assert attachment["status"] == {"attached": False}
    cidr: dict[str, Any] = {"spec": {}, "status": {"conditions": []}}
    strategies.prepare_for_create(kind("networking.k8s.io", "ServiceCIDR"), cidr, now=0)
    assert cidr["status"] == {"conditions": []}


def test_csr_spec_and_approval_are_not_writable_here() -> None:
    csr_kind = kind("certificates.k8s.io", "CertificateSigningRequest")
    created: dict[str, Any] = {"spec": {"request": "x", "username": "mallory", "groups": ["system:masters"]},
                               "status": {"conditions": [{"type": "Approved", "status": "True"}]}}
    strategies.prepare_for_create(csr_kind, created, now=0)
    # Go's encoder writes the required signerName, empty here (validation rejects that on a real write).
    assert created == {"metadata": {}, "spec": {"request": "x", "signerName": ""}, "status": {}}
    user = rbac.UserInfo(name="alice", uid="42", groups=("dev", "system:authenticated"), extra={"scopes": ("a",)})
    strategies.prepare_for_create(csr_kind, created, now=0, user=user)
    assert created["spec"] == {"request": "x", "signerName": "", "username": "alice", "uid": "42",
                               "groups": ["dev", "system:authenticated"], "extra": {"scopes": ["a"]}}
    old = {"metadata": {}, "spec": {"request": "x", "signerName": "example.com/s", "usages": ["client auth"]},
           "status": {"conditions": [{"type": "Approved", "status": "True"}]}}
    write = {"spec": {"request": "y"}, "status": {"certificate": "Y2VydA==", "conditions": []}}
    strategies.prepare_for_update(csr_kind, write, old, now=0, subresource="status")
    assert write == {"metadata": {}, "spec": old["spec"], "status": {"certificate": "Y2VydA==", "conditions": old["status"]["conditions"]}}


def test_crd_records_storage_versions() -> None:
    crd_kind = kind("apiextensions.k8s.io", "CustomResourceDefinition")
    crd: dict[str, Any] = {"spec": {"versions": [{"name": "v1beta1", "storage": False},
                                                 {"name": "v1", "storage": True}]}}
    strategies.prepare_for_create(crd_kind, crd, now=0)
    assert crd["status"] == {"acceptedNames": {"plural": "", "kind": ""}, "storedVersions": ["v1"]}
    new: dict[str, Any] = {"spec": {"versions": [{"name": "v1", "storage": False}, {"name": "v2", "storage": True}]},
                           "status": crd["status"]}
    strategies.prepare_for_update(crd_kind, new, crd, now=0, subresource="")
    assert new["status"]["storedVersions"] == ["v1", "v2"]
