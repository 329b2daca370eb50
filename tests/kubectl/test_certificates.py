"""CertificateSigningRequests with the real kubectl 1.37.1: `kubectl certificate approve` and `deny`
write the `approval` subresource, which changes only the Approved/Denied conditions (stamped with
their times) and keeps spec, certificate and the other conditions."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cp.validation.test_certificates import csr
from tests.kubectl.conftest import Kubectl


async def test_approve_and_deny(kubectl: Kubectl, tmp_path: Path) -> None:
    for name in ("alice", "bob"):
        obj = csr()
        obj["metadata"]["name"] = name
        (tmp_path / f"{name}.json").write_text(json.dumps(obj))
        assert (await kubectl("create", "-f", str(tmp_path / f"{name}.json"))).code == 0
    result = await kubectl("certificate", "approve", "alice")
    assert result.code == 0, result.stderr
    assert "certificatesigningrequest.certificates.k8s.io/alice approved" in result.stdout
    result = await kubectl("certificate", "deny", "bob")
    assert result.code == 0, result.stderr
    alice = json.loads((await kubectl("get", "csr", "alice", "-o", "json")).stdout)
    (condition,) = alice["status"]["conditions"]
    assert condition["type"] == "Approved" and condition["status"] == "True"
    assert condition["reason"] == "KubectlApprove" and condition["lastUpdateTime"]
    assert alice["spec"]["signerName"] == "example.com/signer"
    bob = json.loads((await kubectl("get", "csr", "bob", "-o", "json")).stdout)
    assert [c["type"] for c in bob["status"]["conditions"]] == ["Denied"]
    # Approved and Denied exclude each other (kubectl checks first; the server's check is tests/api's).
    result = await kubectl("certificate", "deny", "alice", check=False)
    assert result.code != 0 and "already Approved" in result.stderr
