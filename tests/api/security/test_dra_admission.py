"""DRA admission: adminAccess only in labelled namespaces; granular ResourceClaim status
authorization (a driver identity writes only status.devices of its own driver; allocation and
reservedFor need `resourceclaims/binding`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cp import features
from tests.api.security.conftest import Secure, binding, call, rbac_path, secure_server

CLAIMS = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
R = "resource.k8s.io"


def claim(name: str, *, admin: bool = False) -> dict[str, Any]:
    gpu: dict[str, Any] = {"deviceClassName": "gpu.example.com"}
    if admin:
        gpu["adminAccess"] = True
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": gpu},
                                              {"name": "nic", "exactly": {"deviceClassName": "nic.example.com"}}]}}}


def allocation(node: str) -> dict[str, Any]:
    return {"devices": {"results": [
        {"request": "gpu", "driver": "gpu.example.com", "pool": node, "device": "gpu-0"},
        {"request": "nic", "driver": "nic.example.com", "pool": node, "device": "nic-0"}]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}


def device_status(driver: str, device: str, node: str) -> dict[str, Any]:
    return {"driver": driver, "pool": node, "device": device, "conditions": [
        {"type": "Ready", "status": "True", "reason": "Prepared", "message": "",
         "lastTransitionTime": "2026-01-01T00:00:00Z"}]}


async def test_admin_access_needs_the_namespace_label(secure: Secure) -> None:
    admin = secure.session("admin")
    code, body = await call(admin, "POST", CLAIMS, claim("c", admin=True))
    assert code == 422
    assert body["message"] == ('ResourceClaim.resource.k8s.io "c" is invalid: spec.devices.requests[0].adminAccess: '
                               "Forbidden: admin access to devices requires the `resource.kubernetes.io/admin-access: "
                               "true` label on the containing namespace")
    tpl = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "t"},
           "spec": {"spec": claim("x", admin=True)["spec"]}}
    code, body = await call(admin, "POST", "/apis/resource.k8s.io/v1/namespaces/default/resourceclaimtemplates", tpl)
    assert code == 422 and "spec.spec.devices.requests[0].adminAccess" in body["message"]
    await call(admin, "POST", "/api/v1/namespaces", {"metadata": {"name": "ops", "labels": {
        "resource.kubernetes.io/admin-access": "true"}}})
    code, body = await call(admin, "POST", "/apis/resource.k8s.io/v1/namespaces/ops/resourceclaims",
                            claim("c", admin=True))
    assert code == 201, body
    await call(admin, "POST", "/api/v1/namespaces", {"metadata": {"name": "almost", "labels": {
        "resource.kubernetes.io/admin-access": "True"}}})
    code, _ = await call(admin, "POST", "/apis/resource.k8s.io/v1/namespaces/almost/resourceclaims",
                         claim("c", admin=True))
    assert code == 422
    assert (await call(admin, "POST", CLAIMS, claim("plain")))[0] == 201


async def _driver(secure: Secure, name: str, driver: str, *, verbs: list[str], node: str = "") -> Any:
    admin = secure.session("admin")
    role = {"metadata": {"name": name}, "rules": [
        {"apiGroups": [R], "resources": ["resourceclaims"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": [R], "resources": ["resourceclaims/status"], "verbs": ["get", "patch", "update"]},
        {"apiGroups": [R], "resources": ["resourceclaims/driver"], "verbs": verbs, "resourceNames": [driver]}]}
    code, body = await call(admin, "POST", rbac_path("clusterroles"), role)
    assert code == 201, body
    crb = binding(name, name)
    crb["subjects"] = [{"kind": "ServiceAccount", "name": name, "namespace": "kube-system"}]
    code, body = await call(admin, "POST", rbac_path("clusterrolebindings"), crb)
    assert code == 201, body
    return secure.session(token=secure.config.authenticator.mint("kube-system", name, node=node))


async def test_driver_identity_writes_only_its_own_device_status(secure: Secure) -> None:
    admin = secure.session("admin")
    assert (await call(admin, "POST", CLAIMS, claim("c")))[0] == 201
    code, body = await call(admin, "PATCH", f"{CLAIMS}/c/status", {"status": {"allocation": allocation("node-1")}},
                            "application/merge-patch+json")
    assert code == 200, body
    gpu = await _driver(secure, "gpu-driver", "gpu.example.com", verbs=["arbitrary-node:patch", "arbitrary-node:update"])
    patch = {"status": {"devices": [device_status("gpu.example.com", "gpu-0", "node-1")]}}
    code, body = await call(gpu, "PATCH", f"{CLAIMS}/c/status", patch, "application/merge-patch+json")
    assert code == 200, body
    assert body["status"]["devices"][0]["driver"] == "gpu.example.com"
    # Another driver's entry: forbidden, and nothing changes.
    code, before = await call(admin, "GET", f"{CLAIMS}/c")
    bad = {"status": {"devices": [device_status("gpu.example.com", "gpu-0", "node-1"),
                                  device_status("nic.example.com", "nic-0", "node-1")]}}
    code, body = await call(gpu, "PATCH", f"{CLAIMS}/c/status", bad, "application/merge-patch+json")
    assert code == 403
    assert body["message"] == ('resourceclaims.resource.k8s.io "nic.example.com" is forbidden: User '
                               '"system:serviceaccount:kube-system:gpu-driver" cannot arbitrary-node:patch resource '
                               '"resourceclaims/driver" in API group "resource.k8s.io" in the namespace "default"')
    # Allocation and reservedFor need resourceclaims/binding.
    code, body = await call(gpu, "PATCH", f"{CLAIMS}/c/status", {"status": {"allocation": None}},
                            "application/merge-patch+json")
    assert code == 403 and '"resourceclaims/binding"' in body["message"]
    code, after = await call(admin, "GET", f"{CLAIMS}/c")
    assert after == before
    # PUT is checked the same way (verb update).
    after["status"]["devices"].append(device_status("nic.example.com", "nic-0", "node-1"))
    code, body = await call(gpu, "PUT", f"{CLAIMS}/c/status", after)
    assert code == 403 and "arbitrary-node:update" in body["message"]
    # The admin (system:masters) and a holder of the nic driver grant may.
    nic = await _driver(secure, "nic-driver", "nic.example.com", verbs=["arbitrary-node:update"])
    code, body = await call(nic, "PUT", f"{CLAIMS}/c/status", after)
    assert code == 200, body
    assert [d["driver"] for d in body["status"]["devices"]] == ["gpu.example.com", "nic.example.com"]


async def test_associated_node_verbs_follow_the_token_node(secure: Secure) -> None:
    admin = secure.session("admin")
    for name, node in (("on-1", "node-1"), ("on-2", "node-2")):
        assert (await call(admin, "POST", CLAIMS, claim(name)))[0] == 201
        assert (await call(admin, "PATCH", f"{CLAIMS}/{name}/status", {"status": {"allocation": allocation(node)}},
                           "application/merge-patch+json"))[0] == 200
    local = await _driver(secure, "gpu-node-1", "gpu.example.com", verbs=["associated-node:patch"], node="node-1")
    ok = {"status": {"devices": [device_status("gpu.example.com", "gpu-0", "node-1")]}}
    assert (await call(local, "PATCH", f"{CLAIMS}/on-1/status", ok, "application/merge-patch+json"))[0] == 200
    other = {"status": {"devices": [device_status("gpu.example.com", "gpu-0", "node-2")]}}
    code, body = await call(local, "PATCH", f"{CLAIMS}/on-2/status", other, "application/merge-patch+json")
    assert code == 403 and "arbitrary-node:patch" in body["message"]


async def test_status_rbac_still_applies(secure: Secure) -> None:
    admin = secure.session("admin")
    assert (await call(admin, "POST", CLAIMS, claim("c")))[0] == 201
    await call(admin, "POST", rbac_path("rolebindings", "default"), binding("alice-edit", "edit", namespace="default"))
    alice = secure.session("alice")
    assert (await call(alice, "GET", f"{CLAIMS}/c"))[0] == 200
    code, body = await call(alice, "PATCH", f"{CLAIMS}/c/status", {"status": {"allocation": allocation("n")}},
                            "application/merge-patch+json")
    assert code == 403 and 'cannot patch resource "resourceclaims/status"' in body["message"]


async def test_deallocation_drops_driver_entries_without_driver_grants(secure: Secure) -> None:
    """Issue #23: the resourceclaim controller (binding, no driver grant) deallocates a claim that
    holds drivers' status.devices entries; the server drops those entries itself, as upstream's
    claim strategy does, so they are not the caller's change. Touching an entry of a device that
    stays allocated still needs the driver grant."""
    admin = secure.session("admin")
    assert (await call(admin, "POST", CLAIMS, claim("c")))[0] == 201
    devices = [device_status("gpu.example.com", "gpu-0", "node-1"), device_status("nic.example.com", "nic-0", "node-1")]
    code, body = await call(admin, "PATCH", f"{CLAIMS}/c/status",
                            {"status": {"allocation": allocation("node-1"), "devices": devices}},
                            "application/merge-patch+json")
    assert code == 200 and len(body["status"]["devices"]) == 2, body
    role = {"metadata": {"name": "deallocator"}, "rules": [
        {"apiGroups": [R], "resources": ["resourceclaims"], "verbs": ["get"]},
        {"apiGroups": [R], "resources": ["resourceclaims/status"], "verbs": ["get", "patch", "update"]},
        {"apiGroups": [R], "resources": ["resourceclaims/binding"], "verbs": ["patch", "update"]}]}
    assert (await call(admin, "POST", rbac_path("clusterroles"), role))[0] == 201
    crb = binding("deallocator", "deallocator")
    crb["subjects"] = [{"kind": "ServiceAccount", "name": "deallocator", "namespace": "kube-system"}]
    assert (await call(admin, "POST", rbac_path("clusterrolebindings"), crb))[0] == 201
    ctl = secure.session(token=secure.config.authenticator.mint("kube-system", "deallocator"))
    code, body = await call(ctl, "PATCH", f"{CLAIMS}/c/status", {"status": {"devices": devices[:1]}},
                            "application/merge-patch+json")
    assert code == 403 and '"resourceclaims/driver"' in body["message"] and "arbitrary-node:patch" in body["message"]
    code, current = await call(ctl, "GET", f"{CLAIMS}/c")
    current["status"].pop("allocation")
    code, body = await call(ctl, "PUT", f"{CLAIMS}/c/status", current)
    assert code == 200, body
    assert "devices" not in body["status"] and "allocation" not in body["status"]


async def test_with_the_gate_off_status_rbac_alone_decides(tmp_path: Path) -> None:
    # DRAResourceClaimGranularStatusAuthorization (beta, on) off: no binding or driver check
    gates = features.parse("DRAResourceClaimGranularStatusAuthorization=false")
    async with secure_server(tmp_path, app_options={"feature_gates": gates}) as secure:
        admin = secure.session("admin")
        assert (await call(admin, "POST", CLAIMS, claim("c")))[0] == 201
        gpu = await _driver(secure, "gpu-driver", "gpu.example.com", verbs=["get"])  # no driver grant
        code, body = await call(gpu, "PATCH", f"{CLAIMS}/c/status", {"status": {"allocation": allocation("node-1")}},
                                "application/merge-patch+json")
        assert code == 200, body
        patch = {"status": {"devices": [device_status("nic.example.com", "nic-0", "node-1")]}}
        code, body = await call(gpu, "PATCH", f"{CLAIMS}/c/status", patch, "application/merge-patch+json")
        assert code == 200, body
