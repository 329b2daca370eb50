"""The lean keep-alive path of the controllers' client (`Client(lean=True)`, `controllers.runtime.http1`,
issue #22): the same answers and typed errors as the aiohttp path against the API server, connections
reused, and the HTTP/1.1 framings a server may answer with (Content-Length, chunked, `Connection:
close`, a connection closed while idle)."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from api import server as servers
from controllers.runtime import client as clients
from controllers.runtime import http1
from cp import errors


@pytest.fixture
async def lean(srv: servers.Running) -> AsyncIterator[clients.Client]:
    async with clients.Client(srv.url, lean=True) as c:
        yield c


def _cm(name: str, **data: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default"}, "data": dict(data)}


async def test_the_same_answers_as_the_aiohttp_path(lean: clients.Client, client: clients.Client) -> None:
    created = await lean.create("configmaps", _cm("a", k="v"), field_manager="lean")
    assert created == await client.get("configmaps", "a", namespace="default")
    got = await lean.get("configmaps", "a", namespace="default")
    got["data"]["k"] = "w"
    updated = await lean.update("configmaps", got)
    assert updated["data"] == {"k": "w"}
    patched = await lean.patch("configmaps", "a", {"data": {"x": "y"}}, namespace="default")
    assert patched["data"] == {"k": "w", "x": "y"}
    meta = await lean.patch("configmaps", "a", {"data": {"z": "1"}}, namespace="default", metadata_only=True)
    assert set(meta) == {"metadata"} and meta["metadata"]["name"] == "a"
    for i in range(7):
        await lean.create("configmaps", _cm(f"p{i}"))
    listed = await lean.list("configmaps", namespace="default", limit=3)  # three pages and a bit
    assert sorted(o["metadata"]["name"] for o in listed.items) == ["a", *(f"p{i}" for i in range(7))]
    deleted = await lean.delete("configmaps", "a", namespace="default")
    assert deleted["kind"] == "Status" and deleted["status"] == "Success"


async def test_typed_errors(lean: clients.Client) -> None:
    with pytest.raises(errors.NotFound) as info:
        await lean.get("configmaps", "missing", namespace="default")
    assert info.value.status_body["reason"] == "NotFound"  # type: ignore[attr-defined]
    obj = await lean.create("configmaps", _cm("b"))
    with pytest.raises(errors.AlreadyExists):
        await lean.create("configmaps", _cm("b"))
    stale = {**obj, "metadata": {**obj["metadata"], "resourceVersion": "1"}}
    with pytest.raises(errors.Conflict):
        await lean.update("configmaps", stale)
    with pytest.raises(errors.Invalid):
        await lean.create("configmaps", {"metadata": {"name": "Not_Valid", "namespace": "default"}})


async def test_connections_are_reused(lean: clients.Client) -> None:
    for i in range(20):
        await lean.create("configmaps", _cm(f"r{i}"))
    pool = lean._pool
    assert pool is not None and len(pool._all) == 1


# ---------------------------------------------------------------------- framings, against a bare server


async def _chunked(request: web.Request) -> web.StreamResponse:
    resp = web.StreamResponse()
    resp.enable_chunked_encoding()
    await resp.prepare(request)
    for part in (b'{"a":', b'"', b"x" * 70_000, b'"}'):
        await resp.write(part)
    await resp.write_eof()
    return resp


async def _close(request: web.Request) -> web.Response:
    return web.Response(body=b"{}", content_type="application/json", headers={"Connection": "close"})


async def _plain(request: web.Request) -> web.Response:
    return web.Response(body=await request.read(), content_type="application/json")


@pytest.fixture
async def bare() -> AsyncIterator[str]:
    app = web.Application()
    app.router.add_get("/chunked", _chunked)
    app.router.add_get("/close", _close)
    app.router.add_post("/echo", _plain)
    runner = web.AppRunner(app, keepalive_timeout=75)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


def _head(method: str, path: str, length: int = 0) -> bytes:
    return f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n\r\n".encode()


async def test_chunked_and_closing_answers(bare: str) -> None:
    pool = http1.Pool(bare)
    try:
        status, body = await pool.request(_head("GET", "/chunked"), None)
        assert status == 200 and body == b'{"a":"' + b"x" * 70_000 + b'"}'
        status, body = await pool.request(_head("POST", "/echo", 7), b'{"b":1}')
        assert (status, body) == (200, b'{"b":1}')
        assert len(pool._all) == 1  # the chunked answer's connection was reused
        status, body = await pool.request(_head("GET", "/close"), None)
        assert (status, body) == (200, b"{}")
        assert not pool._all and not pool._idle  # closed as the server asked
        status, _ = await pool.request(_head("GET", "/nowhere"), None)
        assert status == 404
    finally:
        await pool.close()


async def test_a_connection_the_server_closed_while_idle_is_not_reused(bare: str) -> None:
    pool = http1.Pool(bare)
    try:
        await pool.request(_head("POST", "/echo", 2), b"{}")
        (conn,) = pool._idle
        assert conn.transport is not None
        conn.transport.close()  # as if the server had closed it
        conn.connection_lost(None)
        status, body = await pool.request(_head("POST", "/echo", 2), b"[]")
        assert (status, body) == (200, b"[]")
        assert conn not in pool._idle
    finally:
        await pool.close()


async def test_a_refused_connection_is_a_client_connection_error(bare: str) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    pool = http1.Pool(f"http://127.0.0.1:{port}")
    try:
        with pytest.raises(aiohttp.ClientConnectionError):
            await pool.request(_head("GET", "/"), None)
    finally:
        await pool.close()
