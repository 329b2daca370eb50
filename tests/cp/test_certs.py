"""cp/certs.py: the CA and the certificates it signs, identities from certificates, ServiceAccount tokens
(the credential files of a secure data dir are tests/api/security/test_credentials.py)."""

from __future__ import annotations

import pytest
from cryptography import x509

from cp import certs

NOW = 1_800_000_000.0


def test_ca_signs_serving_and_client_certificates() -> None:
    ca_cert, ca_key = certs.new_ca(now=NOW)
    ca = certs.load_cert(ca_cert)
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    srv_cert, _ = certs.new_serving_cert(ca_cert, ca_key, hosts=["example.test", "10.1.2.3"], now=NOW)
    srv = certs.load_cert(srv_cert)
    srv.verify_directly_issued_by(ca)
    sans = srv.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert {"localhost", "example.test"} <= set(sans.get_values_for_type(x509.DNSName))
    assert {"127.0.0.1", "::1", "10.1.2.3"} <= {str(ip) for ip in sans.get_values_for_type(x509.IPAddress)}
    cli_cert, cli_key = certs.new_client_cert(ca_cert, ca_key, user="bob", groups=["devs", "ops"], now=NOW)
    cli = certs.load_cert(cli_cert)
    cli.verify_directly_issued_by(ca)
    assert certs.identity(cli) == ("bob", ["devs", "ops"])
    assert cli.not_valid_after_utc.timestamp() == pytest.approx(NOW + 365 * 86400)
    assert b"PRIVATE KEY" in cli_key


def test_peercert_identity() -> None:
    peer = {"subject": ((("organizationName", "devs"),), (("organizationName", "ops"),), (("commonName", "bob"),))}
    assert certs.identity_from_peercert(peer) == ("bob", ["devs", "ops"])
    assert certs.identity_from_peercert(None) is None
    assert certs.identity_from_peercert({"subject": ((("organizationName", "x"),),)}) is None


def test_service_account_tokens_verify_and_expire() -> None:
    key = certs.key_pem(certs.new_key())
    other = certs.key_pem(certs.new_key())
    pub = certs.load_key(key).public_key()
    token = certs.sign_token(key, {"iss": "me", "sub": "system:serviceaccount:ns:sa", "exp": NOW + 60})
    assert certs.verify_token(pub, token, now=NOW, issuer="me")["sub"] == "system:serviceaccount:ns:sa"
    assert certs.verify_token(pub, token, now=NOW + 61, issuer="me") is None  # expired
    assert certs.verify_token(pub, token, now=NOW, issuer="someone-else") is None
    forged = certs.sign_token(other, {"iss": "me", "sub": "system:serviceaccount:ns:admin"})
    assert certs.verify_token(pub, forged, now=NOW, issuer="me") is None
    head, _body, sig = token.split(".")
    tampered = certs.sign_token(key, {"iss": "me", "sub": "system:serviceaccount:ns:other"}).split(".")[1]
    assert certs.verify_token(pub, f"{head}.{tampered}.{sig}", now=NOW, issuer="me") is None
    for junk in ("", "a.b", "a.b.c", "...", "x" * 9000):
        assert certs.verify_token(pub, junk, now=NOW, issuer="me") is None
