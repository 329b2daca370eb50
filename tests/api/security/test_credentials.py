"""api/auth.py's credentials: ServiceAccount identities minted by the authenticator, the token file,
and the credential files of a secure data dir (the certificates themselves are tests/cp/test_certs.py)."""

from __future__ import annotations

import ssl
import stat
import time
from pathlib import Path

import pytest

from api import auth
from cp import certs, rbac

NOW = 1_800_000_000.0


async def test_authenticator_mints_service_account_identities() -> None:
    key = certs.key_pem(certs.new_key())
    a = auth.Authenticator(sa_key=key, clock=lambda: NOW)
    token = a.mint("kube-system", "replicaset-controller", node="node-1")
    user = (await a.review(token)).user
    assert user is not None
    assert user.name == "system:serviceaccount:kube-system:replicaset-controller"
    assert set(user.groups) == {"system:serviceaccounts", "system:serviceaccounts:kube-system",
                                "system:authenticated"}
    assert user.extra[auth.NODE_NAME_EXTRA] == ("node-1",)
    assert (await a.review(token + "x")).user is None
    assert (await a.review("not-a-token")).user is None


def test_token_file_parsing() -> None:
    text = 'tok1,alice,u1\n\n# comment\ntok2,bob,u2,"devs,ops"\ntok3,carol,u3,\n'
    users = auth.parse_token_file(text)
    assert users["tok1"] == rbac.UserInfo(name="alice", uid="u1")
    assert users["tok2"].groups == ("devs", "ops")
    assert users["tok3"].groups == ()
    for bad in ("tok,alice\n", ",alice,u\n", "t,a,u\nt,b,u\n"):
        with pytest.raises(ValueError):
            auth.parse_token_file(bad)


def test_credentials_are_created_once_with_private_modes(tmp_path: Path) -> None:
    creds = auth.ensure_credentials(tmp_path, hosts=["127.0.0.1"])
    files = sorted(p.name for p in creds.dir.iterdir())
    assert files == ["admin.token", "apiserver.crt", "apiserver.key", "ca.crt", "ca.key", "sa.key"]
    assert stat.S_IMODE(creds.dir.stat().st_mode) == 0o700
    for p in creds.dir.iterdir():
        assert stat.S_IMODE(p.stat().st_mode) == 0o600, p
    again = auth.ensure_credentials(tmp_path, hosts=["127.0.0.1"])
    assert again.ca_cert == creds.ca_cert and again.admin_token == creds.admin_token
    assert again.serving_cert.read_bytes() == creds.serving_cert.read_bytes()
    # A new host: the serving certificate is re-issued by the same CA.
    before = creds.serving_cert.read_bytes()
    third = auth.ensure_credentials(tmp_path, hosts=["192.0.2.7"])
    issued = third.serving_cert.read_bytes()
    assert issued != before and third.ca_cert == creds.ca_cert
    # Near expiry: re-issued too.
    fourth = auth.ensure_credentials(tmp_path, hosts=["192.0.2.7"], now=time.time() + 720 * 86400)
    assert fourth.serving_cert.read_bytes() != issued
    ctx = auth.server_ssl_context(fourth)
    assert ctx.verify_mode == ssl.CERT_OPTIONAL and ctx.minimum_version == ssl.TLSVersion.TLSv1_2
