"""What `cplane serve` keeps in DATA_DIR/pki: the CA, the serving certificate, the ServiceAccount
signing key and the admin token; TLS contexts over them; kube-apiserver's --token-auth-file."""

from __future__ import annotations

import csv
import io
import os
import ssl
import time
from collections.abc import Iterable
from pathlib import Path

import msgspec

from cp import rbac


class Credentials(msgspec.Struct, kw_only=True):
    """What `cplane serve` keeps in DATA_DIR/pki (every file mode 0600)."""

    dir: Path
    ca_cert: bytes
    ca_key: bytes
    serving_cert: Path
    serving_key: Path
    sa_key: bytes
    admin_token: str

    def kubelet_client_token(self) -> str:
        """The bearer token the API server calls kubelets with (user `kube-apiserver-kubelet-client`):
        derived from the ServiceAccount signing key, so every replica sharing these credentials
        knows it (a kubelet's TokenReview may reach any of them); never written anywhere."""
        import hashlib
        import hmac

        return hmac.new(self.sa_key, b"kube-apiserver-kubelet-client", hashlib.sha256).hexdigest()

    def ca_data(self) -> str:
        import base64

        return base64.b64encode(self.ca_cert).decode()


def _write_secret(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(path.parent, 0o700)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(tmp, 0o600)
    tmp.replace(path)


def _san_set(cert_pem: bytes) -> set[str]:
    from cryptography import x509

    from cp import certs

    try:
        cert = certs.load_cert(cert_pem)
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except Exception:
        return set()
    out = {str(n) for n in san.get_values_for_type(x509.DNSName)}
    out |= {str(ip) for ip in san.get_values_for_type(x509.IPAddress)}
    return out


def signing_key(data_dir: Path) -> bytes:
    """The ServiceAccount token signing key (`pki/sa.key`), created on first use."""
    from cp import certs

    path = data_dir / "pki" / "sa.key"
    if not path.exists():
        _write_secret(path, certs.key_pem(certs.new_key()))
    return path.read_bytes()


def ensure_credentials(data_dir: Path, *, hosts: Iterable[str] = (), now: float | None = None) -> Credentials:
    """Create (first start) or load the CA, the serving certificate (re-issued when a new host is
    served or it is about to expire), the ServiceAccount signing key and the admin token."""
    from cp import certs  # cryptography loads only when serving TLS (~0.1 s of imports)

    now = time.time() if now is None else now
    pki = data_dir / "pki"
    ca_crt, ca_key = pki / "ca.crt", pki / "ca.key"
    if not (ca_crt.exists() and ca_key.exists()):
        cert, key = certs.new_ca(now=now)
        _write_secret(ca_key, key)
        _write_secret(ca_crt, cert)
    ca_cert_pem, ca_key_pem = ca_crt.read_bytes(), ca_key.read_bytes()
    srv_crt, srv_key = pki / "apiserver.crt", pki / "apiserver.key"
    wanted = {h.strip("[]") for h in hosts if h and h not in ("0.0.0.0", "::")} | {"localhost", "127.0.0.1", "::1"}
    renew = not (srv_crt.exists() and srv_key.exists())
    if not renew:
        current = srv_crt.read_bytes()
        renew = not wanted <= _san_set(current)
        if not renew:
            expires = certs.load_cert(current).not_valid_after_utc.timestamp()
            renew = expires - now < 30 * certs.DAY
    if renew:
        cert, key = certs.new_serving_cert(ca_cert_pem, ca_key_pem, hosts=sorted(wanted), now=now)
        _write_secret(srv_key, key)
        _write_secret(srv_crt, cert)
    sa_key = signing_key(data_dir)
    token_file = pki / "admin.token"
    if not token_file.exists():
        _write_secret(token_file, certs.random_token().encode())
    return Credentials(dir=pki, ca_cert=ca_cert_pem, ca_key=ca_key_pem, serving_cert=srv_crt, serving_key=srv_key,
                       sa_key=sa_key, admin_token=token_file.read_text().strip())


def server_ssl_context(creds: Credentials) -> ssl.SSLContext:
    """TLS 1.2+ with the serving certificate; client certificates are optional and, when sent, must
    chain to the CA."""
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cadata=creds.ca_cert.decode())
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(str(creds.serving_cert), str(creds.serving_key))
    ctx.verify_mode = ssl.CERT_OPTIONAL
    return ctx


def client_ssl_context(ca_cert: bytes, *, cert: bytes = b"", key: bytes = b"") -> ssl.SSLContext:
    """A client's TLS: trusting `ca_cert` (PEM; empty: the system's CAs), with a client certificate."""
    import tempfile

    ctx = ssl.create_default_context(cadata=ca_cert.decode() if ca_cert else None)
    if cert and key:
        with tempfile.TemporaryDirectory() as tmp:
            c, k = Path(tmp) / "c.pem", Path(tmp) / "k.pem"
            c.write_bytes(cert)
            _write_secret(k, key)
            ctx.load_cert_chain(str(c), str(k))
    return ctx


def parse_token_file(text: str) -> dict[str, rbac.UserInfo]:
    """kube-apiserver's --token-auth-file: `token,user,uid[,"group1,group2"]` per line."""
    out: dict[str, rbac.UserInfo] = {}
    for lineno, row in enumerate(csv.reader(io.StringIO(text)), start=1):
        if not row or not "".join(row).strip() or row[0].lstrip().startswith("#"):
            continue
        if len(row) < 3:
            raise ValueError(f"token file line {lineno}: expected token,user,uid[,groups]")
        token, user, uid = (c.strip() for c in row[:3])
        if not token or not user:
            raise ValueError(f"token file line {lineno}: empty token or user")
        groups = tuple(g.strip() for g in row[3].split(",") if g.strip()) if len(row) > 3 else ()
        if token in out:
            raise ValueError(f"token file line {lineno}: duplicate token")
        out[token] = rbac.UserInfo(name=user, uid=uid, groups=groups)
    return out
