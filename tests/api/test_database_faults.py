"""The server while its database cannot be reached (issue #17, items 8 and 10): `/readyz` fails naming
the `etcd` check, reads and writes get a 503 `Status` with `Retry-After` quickly (not a 500, not aiohttp's
plain text, not a 499), and once the database is back everything recovers by itself with no
acknowledged write lost. PostgreSQL is reached through a TCP proxy the test cuts and restores
(`tests.tcp.Balancer`)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from api import server as servers
from tests import tcp
from tests.storage.conftest import fresh_pg_url
from tests.waiting import eventually

pytestmark = pytest.mark.postgres

CM = "/api/v1/namespaces/default/configmaps"


@contextlib.asynccontextmanager
async def proxied_server(tmp_path: Path) -> AsyncIterator[tuple[servers.Running, tcp.Balancer]]:
    """A server whose database is reached through a proxy the test can cut (`cut()`, `restore()`)."""
    async with fresh_pg_url() as url, tcp.Balancer([url]) as proxy:
        host, port = tcp.host_port(url)
        proxied = url.replace(f"@{host}:{port}/", f"@127.0.0.1:{proxy.port}/")
        async with servers.running(data_dir=tmp_path, db_url=proxied) as srv:
            yield srv, proxy


async def _call(http: aiohttp.ClientSession, method: str, path: str, **kw: object) -> tuple[int, dict[str, str], str]:
    async with http.request(method, path, **kw) as r:  # type: ignore[arg-type]
        return r.status, dict(r.headers), await r.text()


async def test_an_unreachable_database_is_503_and_unready_then_recovers(tmp_path: Path) -> None:
    async with proxied_server(tmp_path) as (srv, proxy), aiohttp.ClientSession(base_url=srv.url) as http:
        code, _, _ = await _call(http, "POST", CM, json={"metadata": {"name": "before"}})
        assert code == 201
        assert (await _call(http, "GET", "/readyz"))[0] == 200

        await proxy.cut()
        for method, path, body in (("POST", CM, {"metadata": {"name": "during"}}), ("GET", f"{CM}/before", None),
                                   ("GET", CM, None), ("POST", CM, {"metadata": {"name": "during-2"}})):
            started = time.monotonic()
            code, headers, text = await _call(http, method, path, json=body)
            assert time.monotonic() - started < 10
            assert code == 503, (method, path, code, text)
            assert headers["Retry-After"] == "1"
            assert '"kind":"Status"' in text and '"reason":"ServiceUnavailable"' in text
        code, _, text = await _call(http, "GET", "/readyz")
        assert code == 500
        assert "[-]etcd failed: reason withheld" in text and text.endswith("readyz check failed\n")
        assert "[+]ping ok" in text
        assert (await _call(http, "GET", "/livez"))[0] == 200  # storage outages do not fail liveness
        code, _, text = await _call(http, "GET", "/readyz/etcd")
        assert code == 500

        await proxy.restore()
        await eventually(lambda: _ready(http), within=15, what="/readyz 200 again")
        code, _, _ = await _call(http, "POST", CM, json={"metadata": {"name": "after"}})
        assert code == 201
        code, _, text = await _call(http, "GET", CM)
        assert code == 200 and '"before"' in text and '"after"' in text


async def _ready(http: aiohttp.ClientSession) -> bool:
    return (await _call(http, "GET", "/readyz"))[0] == 200


async def test_readyz_lists_its_checks(tmp_path: Path) -> None:
    async with proxied_server(tmp_path) as (srv, _proxy), aiohttp.ClientSession(base_url=srv.url) as http:
        code, _, text = await _call(http, "GET", "/readyz?verbose")
        assert code == 200
        assert text.splitlines() == ["[+]ping ok", "[+]log ok", "[+]etcd ok",
                                     "[+]poststarthook/bootstrap-controller ok",
                                     "[+]poststarthook/scheduling/bootstrap-system-priority-classes ok",
                                     "readyz check passed"]
        code, _, text = await _call(http, "GET", "/readyz?verbose&exclude=etcd&exclude=nosuch")
        assert "[+]etcd excluded: ok" in text and "no matches for nosuch" in text
        assert (await _call(http, "GET", "/readyz/etcd"))[:3:2] == (200, "ok")
        assert (await _call(http, "GET", "/readyz/nosuch"))[0] == 404
