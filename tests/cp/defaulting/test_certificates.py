"""cp/defaulting/certificates.py: PodCertificateRequest's maximum lifetime (`+default=86400`)."""

from __future__ import annotations

from tests.cp.defaulting.support import defaulted


def test_pod_certificate_request_max_expiration() -> None:
    obj = {"apiVersion": "certificates.k8s.io/v1", "kind": "PodCertificateRequest", "metadata": {"name": "p"},
           "spec": {"signerName": "example.com/s"}}
    assert defaulted(obj)["spec"]["maxExpirationSeconds"] == 86400
    obj["spec"]["maxExpirationSeconds"] = 3600
    assert defaulted(obj)["spec"]["maxExpirationSeconds"] == 3600
