"""cp/validation/certificates.py: CertificateSigningRequest (the signed PKCS#10 request, signer names,
usages, conditions, certificates), ClusterTrustBundle (names bound to signers, CA-only bundles) and
PodCertificateRequest."""

from __future__ import annotations

import base64
import datetime as dt
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from cp import certs
from tests.cp.validation.rules import changed, create_errors, update_errors

V1 = "certificates.k8s.io/v1"
NOW = dt.datetime(2026, 12, 1, tzinfo=dt.UTC).timestamp()


def pkcs10(key: Any = None, *, der: bool = False) -> bytes:
    key = key or ec.generate_private_key(ec.SECP256R1())
    request = x509.CertificateSigningRequestBuilder().subject_name(x509.Name([])).sign(
        key, None if isinstance(key, _ed25519()) else hashes.SHA256())
    return request.public_bytes(serialization.Encoding.DER if der else serialization.Encoding.PEM)


def _ed25519() -> type:
    from cryptography.hazmat.primitives.asymmetric import ed25519

    return ed25519.Ed25519PrivateKey


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def csr(**spec: Any) -> dict[str, Any]:
    body = {"request": b64(pkcs10()), "signerName": "example.com/signer", "usages": ["client auth"]}
    body.update(spec)
    return {"apiVersion": V1, "kind": "CertificateSigningRequest", "metadata": {"name": "c"}, "spec": body}


@pytest.mark.parametrize(("spec", "expected"), [
    ({"request": b64(b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")},
     ["spec.request: Invalid value: \"LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkFBQUEKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="
      "\": PEM block type must be CERTIFICATE REQUEST"]),
    ({"usages": []}, ["spec.usages: Required value"]),
    ({"usages": ["client auth", "client auth", "teleport"]},
     ['spec.usages[2]: Unsupported value: "teleport": supported values: "any", "cert sign", "client auth", '
      '"code signing", "content commitment", "crl sign", "data encipherment", "decipher only", "digital signature", '
      '"email protection", "encipher only", "ipsec end system", "ipsec tunnel", "ipsec user", "key agreement", '
      '"key encipherment", "microsoft sgc", "netscape sgc", "ocsp signing", "s/mime", "server auth", "signing", '
      '"timestamping"',
      'spec.usages[1]: Duplicate value: "client auth"']),
    ({"signerName": "kubernetes.io/legacy-unknown"},
     ['spec.signerName: Invalid value: "kubernetes.io/legacy-unknown": the legacy signerName is not allowed via '
      "this API version"]),
    ({"signerName": "example/signer"},
     ['spec.signerName: Invalid value: "example": should be a domain with at least two segments separated by dots']),
    ({"signerName": "example.com/Signer"},
     ['spec.signerName: Invalid value: "Signer": validating label "Signer": a lowercase RFC 1123 subdomain must '
      "consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric "
      "character (e.g. 'example.com', regex used for validation is "
      "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"]),
    ({"expirationSeconds": 599},
     ["spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 600 seconds (10 minutes)"]),
])
def test_csr(spec: dict[str, Any], expected: list[str]) -> None:
    assert create_errors(csr(**spec)) == expected


def test_csr_request_must_carry_a_valid_signature() -> None:
    pem = pkcs10().decode()
    body = pem.split("\n")
    raw = bytearray(base64.b64decode("".join(body[1:-2])))
    raw[-1] ^= 0x01  # flip a bit of the signature
    forged = "-----BEGIN CERTIFICATE REQUEST-----\n" + base64.b64encode(bytes(raw)).decode() + \
        "\n-----END CERTIFICATE REQUEST-----\n"
    errors = create_errors(csr(request=b64(forged.encode())))
    assert len(errors) == 1 and errors[0].startswith("spec.request: Invalid value: ")
    assert errors[0].endswith(": x509: signature verification failure") or \
        errors[0].endswith(": x509: malformed certificate request")


def test_csr_status_writes() -> None:
    ca_cert, _key = certs.new_ca(now=NOW)
    old = csr()
    issued = changed(old, lambda o: o.update(status={"certificate": b64(ca_cert)}))
    assert update_errors(issued, old, subresource="status") == []
    garbage = changed(old, lambda o: o.update(status={"certificate": b64(b"junk")}))
    assert update_errors(garbage, old, subresource="status") == [
        'status.certificate: Invalid value: "<certificate data>": must contain at least one CERTIFICATE PEM block']
    # Approval is the approval subresource's: a status write's conditions are dropped, not judged.
    approved = changed(old, lambda o: o.update(status={"conditions": [
        {"type": "Approved", "status": "True", "reason": "Manual"}]}))
    assert update_errors(approved, old, subresource="status") == []
    # A write to the main resource keeps the stored status, so its certificate is not even looked at.
    assert update_errors(issued, old) == []


def ca_bundle(*pems: bytes) -> str:
    return "".join(p.decode() for p in pems)


def trust_bundle(name: str, signer: str = "", bundle: str | None = None) -> dict[str, Any]:
    if bundle is None:
        bundle = ca_bundle(certs.new_ca(now=NOW)[0])
    spec: dict[str, Any] = {"trustBundle": bundle}
    if signer:
        spec["signerName"] = signer
    return {"apiVersion": V1, "kind": "ClusterTrustBundle", "metadata": {"name": name}, "spec": spec}


def test_cluster_trust_bundle() -> None:
    assert create_errors(trust_bundle("example.com:signer:roots", "example.com/signer")) == []
    assert create_errors(trust_bundle("roots", "example.com/signer")) == [
        'metadata.name: Invalid value: "roots": ClusterTrustBundle for signerName example.com/signer must be named '
        "with prefix example.com:signer:"]
    assert create_errors(trust_bundle("a:b")) == [
        'metadata.name: Invalid value: "a:b": ClusterTrustBundle without signer name must not have ":" in its name']
    ca = certs.new_ca(now=NOW)
    leaf = certs.new_serving_cert(*ca, hosts=["x.example.com"], now=NOW)[0]
    assert create_errors(trust_bundle("roots", bundle=ca_bundle(ca[0], leaf, ca[0]))) == [
        'spec.trustBundle: Invalid value: "<value omitted>": entry 1 does not have the CA bit set']
    assert create_errors(trust_bundle("roots", bundle=ca_bundle(ca[0], ca[0]))) == [
        'spec.trustBundle: Invalid value: "<value omitted>": duplicate trust anchor (indices [0 1])']
    assert create_errors(trust_bundle("roots", bundle="")) == [
        'spec.trustBundle: Invalid value: "<value omitted>": at least one trust anchor must be provided']
    old = trust_bundle("example.com:signer:roots", "example.com/signer")
    assert update_errors(changed(old, lambda o: o["spec"].update(signerName="example.com/other")), old)[-1] == \
        'spec.signerName: Invalid value: "example.com/other": field is immutable'


def pod_certificate_request(**spec: Any) -> dict[str, Any]:
    body = {"signerName": "example.com/workload", "podName": "web-0", "podUID": "u1", "serviceAccountName": "web",
            "serviceAccountUID": "u2", "nodeName": "node-1", "nodeUID": "u3",
            "stubPKCS10Request": b64(pkcs10(der=True))}
    body.update(spec)
    return {"apiVersion": V1, "kind": "PodCertificateRequest", "metadata": {"name": "pcr"}, "spec": body}


@pytest.mark.parametrize(("spec", "expected"), [
    ({}, []),
    ({"podUID": "", "nodeName": "Node_1"},
     ['spec.podUID: Invalid value: "": must not be empty',
      "spec.nodeName: Invalid value: \"Node_1\": a lowercase RFC 1123 subdomain must consist of lower case "
      "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
      "'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"]),
    ({"signerName": "kubernetes.io/kube-apiserver-client-pod", "maxExpirationSeconds": 172800},
     ["spec.maxExpirationSeconds: Invalid value: 172800: must be in the range [3600, 86400]"]),
    ({"maxExpirationSeconds": 60}, ["spec.maxExpirationSeconds: Invalid value: 60: must be in the range [3600, "
                                    "7862400]"]),
])
def test_pod_certificate_request(spec: dict[str, Any], expected: list[str]) -> None:
    assert create_errors(pod_certificate_request(**spec)) == expected


def test_pod_certificate_request_key_types() -> None:
    weak = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    assert create_errors(pod_certificate_request(stubPKCS10Request=b64(pkcs10(weak, der=True)))) == [
        'spec.stubPKCS10Request: Invalid value: "2048-bit modulus": RSA keys must have modulus size 3072 or 4096']
    assert create_errors(pod_certificate_request(stubPKCS10Request=b64(b"junk")))[0].startswith(
        "spec.stubPKCS10Request: Invalid value: ")


def test_pod_certificate_request_spec_is_immutable() -> None:
    old = pod_certificate_request()
    errors = update_errors(changed(old, lambda o: o["spec"].update(podName="web-1")), old)
    assert len(errors) == 1 and errors[0].startswith("spec: Invalid value: {") and \
        errors[0].endswith("}: field is immutable")
