"""Watches end, and release what they hold, on every path (issue #17, items 3 and 4): a client that
stops reading is cut off once a write has waited `watch_write_timeout` (and so is released from the
per-user watch limit); a refused watch registers nothing; a client that goes away is released."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import aiohttp
import pytest

from api import server as servers
from api import state as st
from api.limits import Limits
from tests.api.security.conftest import secure_server
from tests.api.serving import limited_server
from tests.waiting import eventually

CM = "/api/v1/namespaces/default/configmaps"
WAIT = 5.0


def _registered(srv: servers.Running) -> float:
    gauge = srv.app[st.METRICS].watches.labels("", "configmaps")
    return float(gauge._value.get())


async def _fill(http: aiohttp.ClientSession, *, megabytes: int) -> None:
    """ConfigMaps of 512 KiB each, so that a watch's initial events are `megabytes` MiB."""
    for i in range(megabytes * 2):
        async with http.post(CM, json={"metadata": {"name": f"big-{i}"}, "data": {"k": "x" * 512 * 1024}}) as r:
            assert r.status == 201


async def _stalled_watch(srv: servers.Running, *, token: str = "") -> socket.socket:
    """A watch whose client never reads: a small receive buffer, set before connecting."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", srv.port))
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    request = f"GET {CM}?watch=true HTTP/1.1\r\nHost: x\r\n{auth}\r\n".encode()
    await asyncio.get_running_loop().sock_sendall(sock, request)
    return sock


async def test_a_watch_whose_client_stops_reading_is_closed(tmp_path: Path) -> None:
    async with limited_server(tmp_path, Limits(watch_write_timeout=0.3), insecure_limits=True) as srv, \
            aiohttp.ClientSession(base_url=srv.url) as http:
        await _fill(http, megabytes=16)  # far more than the socket buffers hold
        sock = await _stalled_watch(srv)
        try:
            await eventually(lambda: _registered(srv) == 1, what="the watch registered")
            await eventually(lambda: _registered(srv) == 0, within=WAIT, what="the stalled watch ended")
            assert srv.app[st.WATCHES] == set()
        finally:
            sock.close()
        async with http.get(f"{CM}?limit=1") as r:  # the server goes on serving
            assert r.status == 200


async def test_a_stalled_watch_no_longer_counts_against_its_users_limit(tmp_path: Path) -> None:
    async with secure_server(tmp_path, limits=Limits(watch_write_timeout=0.3, max_watches_per_user=1)) as s:
        admin = s.session("admin")
        for i in range(12):
            async with admin.post(CM, json={"metadata": {"name": f"big-{i}"},
                                            "data": {"k": "x" * 768 * 1024}}) as r:
                assert r.status == 201
        # TLS: the server's record buffers fill the same way; a raw TCP client that never reads
        import ssl

        context = ssl.create_default_context(cadata=s.creds.ca_cert.decode())
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", s.srv.port))
        _reader, writer = await asyncio.open_connection(sock=sock, ssl=context, server_hostname="127.0.0.1",
                                                        limit=1024)
        writer.transport.set_read_buffer_limits(high=1024)  # type: ignore[attr-defined]
        writer.write(f"GET {CM}?watch=true HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                     f"{s.tokens['admin']}\r\n\r\n".encode())
        writer.transport.pause_reading()  # type: ignore[attr-defined]
        try:
            await eventually(lambda: s.config.watches.get("cplane-admin", 0) == 1, what="the watch counted")
            await eventually(lambda: s.config.watches.get("cplane-admin", 0) == 0, within=WAIT,
                             what="the stalled watch released")
            async with admin.get(f"{CM}?watch=true&timeoutSeconds=1") as r:
                assert r.status == 200  # not 429: the limit's place is free again
                await asyncio.wait_for(r.read(), WAIT)
        finally:
            writer.close()


async def test_a_watch_that_reads_slowly_but_steadily_is_not_cut(tmp_path: Path) -> None:
    async with limited_server(tmp_path, Limits(watch_write_timeout=0.5), insecure_limits=True) as srv, \
            aiohttp.ClientSession(base_url=srv.url) as http:
        await _fill(http, megabytes=8)
        received = 0
        async with http.get(f"{CM}?watch=true&timeoutSeconds=30") as r:
            while received < 8 * 1024 * 1024:
                chunk = await asyncio.wait_for(r.content.read(256 * 1024), WAIT)
                assert chunk
                received += len(chunk)
        assert received >= 8 * 1024 * 1024


@pytest.mark.parametrize("query", [
    "timeoutSeconds=1" + "0" * 400,
    "timeoutSeconds=9223372036854775807",
    "resourceVersion=abc",
    "resourceVersionMatch=Exact&resourceVersion=1",
    "labelSelector=a%20in%20(",
])
async def test_watches_that_end_at_once_register_nothing(tmp_path: Path, query: str) -> None:
    async with limited_server(tmp_path, Limits(), insecure_limits=True) as srv, \
            aiohttp.ClientSession(base_url=srv.url) as http:
        for _ in range(20):
            async with http.get(f"{CM}?watch=true&{query}", timeout=aiohttp.ClientTimeout(total=0.5)) as r:
                if r.status == 200:  # a valid (huge) timeout: the stream opens; drop it
                    break
                assert 400 <= r.status < 500, await r.text()
                assert (await r.json())["kind"] == "Status"
        await eventually(lambda: _registered(srv) == 0, what="nothing left registered")
        assert srv.app[st.WATCHES] == set()


async def test_a_client_that_goes_away_releases_its_watch(tmp_path: Path) -> None:
    async with limited_server(tmp_path, Limits(), insecure_limits=True) as srv, \
            aiohttp.ClientSession(base_url=srv.url) as http:
        for _ in range(5):
            r = await http.get(f"{CM}?watch=true")
            assert r.status == 200
            r.close()
        await eventually(lambda: _registered(srv) == 0, what="every watch released")
