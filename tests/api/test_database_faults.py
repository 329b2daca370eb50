"""The server while its database cannot be reached (issue #17, items 8 and 10): `/readyz` fails naming
the `etcd` check, reads and writes get a 503 `Status` with `Retry-After` quickly (not a 500, not aiohttp's
plain text, not a 499), and once the database is back everything recovers by itself with no
acknowledged write lost. PostgreSQL is reached through a TCP proxy the test cuts and restores."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from api import server as servers
from tests.storage.conftest import PG_URL, fresh_pg_url
from tests.waiting import eventually

pytestmark = pytest.mark.postgres

CM = "/api/v1/namespaces/default/configmaps"


class CuttableProxy:
    """127.0.0.1:PORT -> the PostgreSQL server; `cut()` drops every connection and refuses new ones
    (as a stopped server does), `restore()` listens again on the same port."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def cut(self) -> None:
        assert self._server is not None
        self._server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()
        self._server = None

    async def restore(self) -> None:
        await self.start()

    async def close(self) -> None:
        if self._server is not None:
            await self.cut()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.add(writer)
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        self._writers.add(up_writer)
        try:
            pipes = [asyncio.ensure_future(_pipe(reader, up_writer)), asyncio.ensure_future(_pipe(up_reader, writer))]
            await asyncio.wait(pipes, return_when=asyncio.FIRST_COMPLETED)
            for w in (writer, up_writer):
                w.transport.abort()
            await asyncio.gather(*pipes, return_exceptions=True)
        finally:
            self._writers.discard(writer)
            self._writers.discard(up_writer)
            self._tasks.discard(task)


async def _pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError, OSError):
        while data := await src.read(65536):
            dst.write(data)
            await dst.drain()


@contextlib.asynccontextmanager
async def proxied_server(tmp_path: Path) -> AsyncIterator[tuple[servers.Running, CuttableProxy]]:
    host_port = PG_URL.split("@", 1)[1].split("/", 1)[0]
    host, _, port = host_port.partition(":")
    proxy = CuttableProxy((host, int(port or 5432)))
    await proxy.start()
    try:
        async with fresh_pg_url() as url:
            proxied = url.replace(f"@{host_port}/", f"@127.0.0.1:{proxy.port}/")
            async with servers.running(data_dir=tmp_path, db_url=proxied) as srv:
                yield srv, proxy
    finally:
        await proxy.close()


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
                                     "[+]poststarthook/bootstrap-controller ok", "readyz check passed"]
        code, _, text = await _call(http, "GET", "/readyz?verbose&exclude=etcd&exclude=nosuch")
        assert "[+]etcd excluded: ok" in text and "no matches for nosuch" in text
        assert (await _call(http, "GET", "/readyz/etcd"))[:3:2] == (200, "ok")
        assert (await _call(http, "GET", "/readyz/nosuch"))[0] == 404
