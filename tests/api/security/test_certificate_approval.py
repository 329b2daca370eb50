"""The `approval` subresource of CertificateSigningRequests and the CertificateApproval admission:
only the Approved/Denied conditions change through it, and with authorization a user needs `approve`
on the signer (`signers` of certificates.k8s.io, by name or the domain's `*`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp

from tests.api.security.conftest import Secure, binding, call
from tests.cp.validation.test_certificates import csr

CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests"


def approved(obj: dict[str, Any], ctype: str = "Approved") -> dict[str, Any]:
    out = dict(obj)
    out["status"] = {"conditions": [{"type": ctype, "status": "True", "reason": "Test", "message": "ok"}],
                     "certificate": "c2hvdWxkIG5vdCBzdGljaw=="}
    return out


async def test_approval_writes_only_the_approval_conditions(http: aiohttp.ClientSession) -> None:
    async with http.post(CSRS, json=csr()) as r:
        assert r.status == 201, await r.text()
        created = await r.json()
    body = approved(created)
    body["spec"] = dict(body["spec"], signerName="other.example/changed")
    async with http.put(f"{CSRS}/c/approval", json=body) as r:
        assert r.status == 200, await r.text()
        out = await r.json()
    assert out["spec"]["signerName"] == "example.com/signer"  # spec is not the approval's
    assert "certificate" not in out["status"]  # the signer's, through /status
    (condition,) = out["status"]["conditions"]
    assert condition["type"] == "Approved" and condition["lastUpdateTime"] and condition["lastTransitionTime"]
    async with http.put(f"{CSRS}/c/status", json=approved(out, "Denied")) as r:
        assert r.status == 422  # /status may not add approval conditions (and the approval stays)
    async with http.get(f"{CSRS}/c/approval") as r:
        assert r.status == 200 and (await r.json())["status"]["conditions"][0]["type"] == "Approved"
    both = approved(out)
    both["status"]["conditions"].append({"type": "Denied", "status": "True", "reason": "Test"})
    async with http.put(f"{CSRS}/c/approval", json=both) as r:
        assert r.status == 422 and "mutually exclusive" in await r.text()


async def test_approving_needs_approve_on_the_signer(secure: Secure, tmp_path: Path) -> None:
    admin, bob = secure.session("admin"), secure.session("bob")
    code, created = await call(admin, "POST", CSRS, csr())
    assert code == 201, created
    rules = [{"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests",
                                                                  "certificatesigningrequests/approval"],
              "verbs": ["get", "update"]}]
    code, _ = await call(admin, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles",
                         {"metadata": {"name": "csr-updater"}, "rules": rules})
    assert code == 201
    code, _ = await call(admin, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
                         binding("bob-updates-csrs", "csr-updater", subject="bob"))
    assert code == 201
    code, body = await call(bob, "PUT", f"{CSRS}/c/approval", approved(created))
    assert code == 403
    assert body["message"] == ('certificatesigningrequests.certificates.k8s.io "c" is forbidden: user not '
                               'permitted to approve requests with signerName "example.com/signer"')
    signer_rule = {"apiGroups": ["certificates.k8s.io"], "resources": ["signers"], "verbs": ["approve"],
                   "resourceNames": ["example.com/*"]}
    code, _ = await call(admin, "PUT", "/apis/rbac.authorization.k8s.io/v1/clusterroles/csr-updater",
                         {"metadata": {"name": "csr-updater"}, "rules": [*rules, signer_rule]})
    assert code == 200
    code, body = await call(bob, "PUT", f"{CSRS}/c/approval", approved(created))
    assert code == 200, body
