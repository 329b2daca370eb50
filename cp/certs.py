"""Certificates and signed tokens: pure functions over `cryptography` (no files, no clock reads).

- `new_ca` / `new_serving_cert` / `new_client_cert` make ECDSA P-256 key pairs and X.509 certificates
  (PEM bytes). A client certificate names its user in the subject's CommonName and its groups in
  Organization attributes, as kube-apiserver's x509 authenticator reads them.
- `sign_token` / `verify_token` / `token_claims`: compact JWS (ES256) for ServiceAccount tokens;
  `key_id` and `public_jwk` publish the verifying key as kube-apiserver does.

Callers pass `now` (unix seconds) so that tests can pin validity windows; I/O (writing PEM files
with mode 0600) lives in `api/auth/credentials.py`.
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import json
import secrets
from collections.abc import Iterable, Mapping
from typing import Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

DAY = 86400.0


def new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def public_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.public_key().public_bytes(serialization.Encoding.PEM,
                                         serialization.PublicFormat.SubjectPublicKeyInfo)


def load_key(pem: bytes) -> ec.EllipticCurvePrivateKey:
    key = serialization.load_pem_private_key(pem, password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ValueError("expected an ECDSA private key")
    return key


def load_cert(pem: bytes) -> x509.Certificate:
    return x509.load_pem_x509_certificate(pem)


def cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _time(now: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(now, tz=dt.UTC)


def _builder(subject: x509.Name, issuer: x509.Name, public_key: Any, *, now: float,
             days: float) -> x509.CertificateBuilder:
    return (x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(issuer)
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(_time(now - 300))  # tolerate small clock skew
            .not_valid_after(_time(now + days * DAY)))


def new_ca(*, common_name: str = "cplane-ca", now: float, days: float = 3650) -> tuple[bytes, bytes]:
    """A self-signed CA: (certificate PEM, private key PEM)."""
    key = new_key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    cert = (_builder(name, name, key.public_key(), now=now, days=days)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False,
                                         encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    return cert_pem(cert), key_pem(key)


def _leaf(ca_cert: bytes, ca_key: bytes, subject: x509.Name, *, now: float, days: float,
          usage: x509.ObjectIdentifier, sans: list[x509.GeneralName] | None = None) -> tuple[bytes, bytes]:
    ca = load_cert(ca_cert)
    signer = load_key(ca_key)
    key = new_key()
    builder = (_builder(subject, ca.subject, key.public_key(), now=now, days=days)
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=False, crl_sign=False,
                                            content_commitment=False, key_encipherment=False,
                                            data_encipherment=False, key_agreement=False,
                                            encipher_only=False, decipher_only=False), critical=True)
               .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
               .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(signer.public_key()),
                              critical=False))
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return cert_pem(builder.sign(signer, hashes.SHA256())), key_pem(key)


def _san(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host.strip("[]")))
    except ValueError:
        return x509.DNSName(host)


def new_serving_cert(ca_cert: bytes, ca_key: bytes, *, hosts: Iterable[str], now: float,
                     days: float = 730) -> tuple[bytes, bytes]:
    """A server certificate for `hosts` (names and IP addresses) plus localhost and loopback."""
    names: list[str] = []
    for h in ("localhost", "127.0.0.1", "::1", *hosts):
        if h and h not in names and h not in ("0.0.0.0", "::"):
            names.append(h)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "cplane-apiserver")])
    return _leaf(ca_cert, ca_key, subject, now=now, days=days, usage=ExtendedKeyUsageOID.SERVER_AUTH,
                 sans=[_san(h) for h in names])


def new_client_cert(ca_cert: bytes, ca_key: bytes, *, user: str, groups: Iterable[str] = (), now: float,
                    days: float = 365) -> tuple[bytes, bytes]:
    """A client certificate: CN=user, one O=group per group."""
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in groups]
    attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, user))
    return _leaf(ca_cert, ca_key, x509.Name(attrs), now=now, days=days, usage=ExtendedKeyUsageOID.CLIENT_AUTH)


def identity(cert: x509.Certificate) -> tuple[str, list[str]]:
    """(user, groups) a client certificate names."""
    cn = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    orgs = cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)
    return (str(cn[0].value) if cn else ""), [str(o.value) for o in orgs]


def identity_from_peercert(peercert: Mapping[str, Any] | None) -> tuple[str, list[str]] | None:
    """(user, groups) from `ssl.SSLSocket.getpeercert()` (a verified certificate), else None."""
    if not peercert:
        return None
    user = ""
    groups: list[str] = []
    for rdn in peercert.get("subject") or ():
        for key, value in rdn:
            if key == "commonName":
                user = str(value)
            elif key == "organizationName":
                groups.append(str(value))
    return (user, groups) if user else None


def random_token(nbytes: int = 32) -> str:
    return secrets.token_urlsafe(nbytes)


# ---------------------------------------------------------------------------------------- tokens


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def sign_token(key_pem_bytes: bytes, claims: Mapping[str, Any], *, key_id: str = "") -> str:
    """A compact JWS (ES256) over `claims`."""
    key = load_key(key_pem_bytes)
    header: dict[str, Any] = {"alg": "ES256", "typ": "JWT"}
    if key_id:
        header["kid"] = key_id
    signing_input = (_b64(json.dumps(header, separators=(",", ":")).encode()) + "." +
                     _b64(json.dumps(dict(claims), separators=(",", ":"), sort_keys=True).encode()))
    der = key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256()))
    r, s = decode_dss_signature(der)
    return signing_input + "." + _b64(r.to_bytes(32, "big") + s.to_bytes(32, "big"))


def token_claims(public_key: ec.EllipticCurvePublicKey, token: str) -> dict[str, Any] | None:
    """The claims of a compact JWS whose ES256 signature `public_key` verifies, else None (no claim
    is checked)."""
    parts = token.split(".")
    if len(parts) != 3 or len(token) > 8192:
        return None
    try:
        header = json.loads(_unb64(parts[0]))
        claims = json.loads(_unb64(parts[1]))
        sig = _unb64(parts[2])
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(header, dict) or header.get("alg") != "ES256" or not isinstance(claims, dict):
        return None
    if len(sig) != 64:
        return None
    der = encode_dss_signature(int.from_bytes(sig[:32], "big"), int.from_bytes(sig[32:], "big"))
    try:
        public_key.verify(der, (parts[0] + "." + parts[1]).encode(), ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        return None
    return claims


def verify_token(public_key: ec.EllipticCurvePublicKey, token: str, *, now: float,
                 issuer: str) -> dict[str, Any] | None:
    """The claims of a token signed by `public_key` for `issuer` and valid at `now`, else None."""
    claims = token_claims(public_key, token)
    if claims is None or claims.get("iss") != issuer:
        return None
    exp = claims.get("exp")
    if exp is not None and (not isinstance(exp, int | float) or now >= exp):
        return None
    nbf = claims.get("nbf")
    if nbf is not None and (not isinstance(nbf, int | float) or now + 60 < nbf):
        return None
    return claims


def key_id(public_key: ec.EllipticCurvePublicKey) -> str:
    """The `kid` kube-apiserver gives a signing key: unpadded base64url of the SHA-256 of its
    PKIX (SubjectPublicKeyInfo) DER encoding."""
    der = public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    digest = hashes.Hash(hashes.SHA256())
    digest.update(der)
    return _b64(digest.finalize())


def public_jwk(public_key: ec.EllipticCurvePublicKey) -> dict[str, Any]:
    """The public key as a JSON Web Key (RFC 7517), as `/openid/v1/jwks` lists it."""
    numbers = public_key.public_numbers()
    return {"use": "sig", "kty": "EC", "kid": key_id(public_key), "crv": "P-256", "alg": "ES256",
            "x": _b64(numbers.x.to_bytes(32, "big")), "y": _b64(numbers.y.to_bytes(32, "big"))}
