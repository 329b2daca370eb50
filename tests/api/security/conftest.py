"""Fixtures for the security suite: a TLS API server with authentication and RBAC, in-process.

Users (tokens in a kube-apiserver CSV token file): `admin` (the generated admin token, group
system:masters), `alice` (no groups), `bob` (group `devs`), `carol` (group `ops`). Nothing is bound
to them at start but the defaults every authenticated user gets.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from api import auth
from api import server as servers
from storage import memory

TOKENS = {"alice": "alice-token-0123456789", "bob": "bob-token-0123456789", "carol": "carol-token-0123456789",
          "dana": "dana-token-0123456789"}
TOKEN_FILE = (f"{TOKENS['alice']},alice,uid-alice\n"
              f'{TOKENS["bob"]},bob,uid-bob,"devs"\n'
              f'{TOKENS["carol"]},carol,uid-carol,"ops,devs-readers"\n'
              f"{TOKENS['dana']},dana,uid-dana\n")


class Secure:
    """A running secure server and ways to talk to it as each user."""

    def __init__(self, srv: servers.Running, data_dir: Path) -> None:
        self.srv = srv
        self.url = srv.url
        self.data_dir = data_dir
        self.config: auth.AuthConfig = srv.auth
        assert self.config.credentials is not None
        self.creds = self.config.credentials
        self.tokens = {**TOKENS, "admin": self.creds.admin_token}
        self._sessions: list[aiohttp.ClientSession] = []

    def ssl(self, *, cert: bytes = b"", key: bytes = b"") -> Any:
        return auth.client_ssl_context(self.creds.ca_cert, cert=cert, key=key)

    def session(self, user: str | None = None, *, token: str | None = None, cert: bytes = b"", key: bytes = b"",
                headers: dict[str, str] | None = None) -> aiohttp.ClientSession:
        h = dict(headers or {})
        tok = token if token is not None else (self.tokens[user] if user else None)
        if tok:
            h["Authorization"] = f"Bearer {tok}"
        s = aiohttp.ClientSession(base_url=self.url, headers=h,
                                  connector=aiohttp.TCPConnector(ssl=self.ssl(cert=cert, key=key)))
        self._sessions.append(s)
        return s

    async def close(self) -> None:
        for s in self._sessions:
            await s.close()


@contextlib.asynccontextmanager
async def secure_server(tmp_path: Path, *, limits: auth.Limits | None = None,
                        app_options: dict[str, Any] | None = None) -> AsyncIterator[Secure]:
    token_file = tmp_path / "tokens.csv"
    token_file.write_text(TOKEN_FILE)
    log = memory.MemoryEventLog()
    await log.start()
    try:
        async with servers.running(data_dir=tmp_path / "data", event_log=log, secure=True,
                                   token_auth_file=str(token_file), limits=limits,
                                   app_options=app_options) as srv:
            s = Secure(srv, tmp_path / "data")
            try:
                yield s
            finally:
                await s.close()
    finally:
        await log.close()


@pytest.fixture
async def secure(tmp_path: Path) -> AsyncIterator[Secure]:
    async with secure_server(tmp_path) as s:
        yield s


async def call(session: aiohttp.ClientSession, method: str, path: str, body: Any = None,
               content_type: str | None = None, **kw: Any) -> tuple[int, Any]:
    import json

    headers = dict(kw.pop("headers", None) or {})
    if content_type:
        headers["Content-Type"] = content_type
    data = None
    if body is not None:
        data = body if isinstance(body, bytes | str | io.BytesIO) else json.dumps(body)
        if isinstance(data, bytes) and len(data) > 512 * 1024:
            data = io.BytesIO(data)
        headers.setdefault("Content-Type", "application/json")
    async with session.request(method, path, data=data, headers=headers, **kw) as r:
        raw = await r.read()
        try:
            return r.status, json.loads(raw)
        except ValueError:
            return r.status, raw


def binding(name: str, role: str, *, kind: str = "User", subject: str = "alice", namespace: str = "",
            role_kind: str = "ClusterRole") -> dict[str, Any]:
    sub: dict[str, Any] = {"kind": kind, "name": subject}
    if kind == "ServiceAccount":
        sub["namespace"] = namespace or "default"
    out: dict[str, Any] = {"apiVersion": "rbac.authorization.k8s.io/v1",
                           "kind": "RoleBinding" if namespace else "ClusterRoleBinding",
                           "metadata": {"name": name},
                           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
                           "subjects": [sub]}
    return out


def rbac_path(kind: str, namespace: str = "") -> str:
    base = "/apis/rbac.authorization.k8s.io/v1"
    return f"{base}/namespaces/{namespace}/{kind}" if namespace else f"{base}/{kind}"


Call = Callable[..., Any]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`slow` tests here run only when asked for (`-m slow`)."""
    if "slow" in (config.getoption("markexpr", "") or ""):
        return
    skip = pytest.mark.skip(reason="opt-in: run with -m slow")
    for item in items:
        if "slow" in item.keywords and "tests/api/security/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(skip)
