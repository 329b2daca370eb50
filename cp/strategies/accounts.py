"""The Secret strategy's warnings (upstream `pkg/registry/core/secret` `warningsForSecret`): a
`kubernetes.io/tls` Secret whose `tls.crt` and `tls.key` do not make a key pair, in the words of Go's
`tls.X509KeyPair`. The write goes through; the client gets a `Warning` header. Pure."""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from cp.strategies.model import Strategy

_PEM = re.compile(rb"-----BEGIN ([^\r\n-]*)-----\r?\n(.*?)-----END \1-----", re.S)


def _pem_blocks(data: bytes) -> list[tuple[str, bytes]]:
    """The PEM blocks Go's `pem.Decode` would find, in order (type, DER)."""
    out = []
    for m in _PEM.finditer(data):
        body = b"".join(line for line in m.group(2).splitlines() if b":" not in line)
        try:
            out.append((m.group(1).decode(errors="replace"), base64.b64decode(body, validate=False)))
        except (binascii.Error, ValueError):
            continue
    return out


def _go_list(items: list[str]) -> str:
    return "[" + " ".join(items) + "]"


def key_pair_error(cert_pem: bytes, key_pem: bytes) -> str:
    """Go's `tls.X509KeyPair` error for these inputs, or "" when they are a key pair."""
    blocks = _pem_blocks(cert_pem)
    certs = [der for kind, der in blocks if kind == "CERTIFICATE"]
    skipped = [kind for kind, _der in blocks if kind != "CERTIFICATE"]
    if not certs:
        if not skipped:
            return "tls: failed to find any PEM data in certificate input"
        if len(skipped) == 1 and skipped[0].endswith("PRIVATE KEY"):
            return ("tls: failed to find certificate PEM data in certificate input, but did find a private key; "
                    "PEM inputs may have been switched")
        return ('tls: failed to find "CERTIFICATE" PEM block in certificate input after skipping PEM blocks of '
                f"the following types: {_go_list(skipped)}")
    skipped = []
    key_der = None
    for kind, der in _pem_blocks(key_pem):
        if kind == "PRIVATE KEY" or kind.endswith(" PRIVATE KEY"):
            key_der = der
            break
        skipped.append(kind)
    if key_der is None:
        if not skipped:
            return "tls: failed to find any PEM data in key input"
        if skipped == ["CERTIFICATE"]:
            return "tls: found a certificate rather than a key in the PEM for the private key"
        return ('tls: failed to find PEM block with type ending in "PRIVATE KEY" in key input after skipping PEM '
                f"blocks of the following types: {_go_list(skipped)}")
    from cryptography import x509  # on the first TLS Secret, not at start-up
    from cryptography.hazmat.primitives import serialization

    try:
        public = x509.load_der_x509_certificate(certs[0]).public_key()
    except ValueError:
        return "x509: malformed certificate"
    try:
        private = serialization.load_der_private_key(key_der, password=None)
    except (ValueError, TypeError):
        return "tls: failed to parse private key"
    mine = private.public_key()
    if type(mine) is not type(public):
        return "tls: private key type does not match public key type"
    raw = serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    if mine.public_bytes(*raw) != public.public_bytes(*raw):
        return "tls: private key does not match public key"
    return ""


def _secret_warnings(obj: dict[str, Any]) -> list[str]:
    if obj.get("type") != "kubernetes.io/tls":
        return []
    raw_data = obj.get("data")
    data: dict[str, Any] = raw_data if isinstance(raw_data, dict) else {}

    def raw(key: str) -> bytes:
        try:
            return base64.b64decode(str(data.get(key) or ""))
        except (binascii.Error, ValueError):
            return b""

    problem = key_pair_error(raw("tls.crt"), raw("tls.key"))
    return [problem] if problem else []


STRATEGIES = {("", "Secret"): Strategy(warnings=_secret_warnings)}
