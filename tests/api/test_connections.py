"""Connections (issue #17, item 5 and 8): header and TLS handshake deadlines, the connection cap with
its 503 Status and throttled log line, and Status answers for requests the HTTP parser rejects."""

from __future__ import annotations

import asyncio
import json
import ssl
from pathlib import Path

import aiohttp
import pytest
import structlog

from api import connections
from api import server as servers
from api.limits import Limits
from tests.api.serving import limited_server
from tests.waiting import eventually

WAIT = 5.0  # bound on how long a test waits for the server to act on a deadline


async def _raw(srv: servers.Running, *, tls: bool = False) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    context = None
    if tls:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return await asyncio.open_connection("127.0.0.1", srv.port, ssl=context)


async def _response(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bytes]:
    async with asyncio.timeout(WAIT):
        raw = await reader.read()  # the server closes after these answers
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split()[1]), headers, body


async def _closed_by_server(reader: asyncio.StreamReader) -> bytes:
    async with asyncio.timeout(WAIT):
        return await reader.read()


@pytest.mark.parametrize("tls", [False, True])
async def test_incomplete_headers_are_closed_after_the_header_timeout(tmp_path: Path, tls: bool) -> None:
    async with limited_server(tmp_path, Limits(header_timeout=0.2), secure=tls) as srv:
        reader, writer = await _raw(srv, tls=tls)
        writer.write(b"GET /api/v1/namespaces HTTP/1.1\r\nHost: x\r\nX-Slow: 1")  # never finished
        assert await _closed_by_server(reader) == b""  # closed without an answer, as Go's server does
        writer.close()
        await eventually(lambda: srv.connections.open == 0, what="the connection released")


async def test_a_connection_that_sends_nothing_is_closed(tmp_path: Path) -> None:
    async with limited_server(tmp_path, Limits(header_timeout=0.2)) as srv:
        reader, writer = await _raw(srv)
        assert await _closed_by_server(reader) == b""
        writer.close()


async def test_header_timeout_applies_to_the_next_request_of_a_kept_alive_connection(tmp_path: Path) -> None:
    async with limited_server(tmp_path, Limits(header_timeout=0.3)) as srv:
        reader, writer = await _raw(srv)
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        async with asyncio.timeout(WAIT):
            status_line = await reader.readline()
        assert b"200" in status_line
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: ")  # the next request stalls in its headers
        rest = await _closed_by_server(reader)
        assert b"ok" in rest  # the first answer's remaining bytes, then the close
        writer.close()


async def test_complete_requests_are_not_cut_by_the_header_timeout(tmp_path: Path) -> None:
    """A slow handler (a read waiting for a future revision) outlives the header timeout."""
    async with limited_server(tmp_path, Limits(header_timeout=0.1)) as srv, \
            aiohttp.ClientSession(base_url=srv.url) as http, \
            http.get("/api/v1/namespaces/default/configmaps?resourceVersion=999&limit=1") as r:
        assert r.status == 504  # waited ~3 s for revision 999, long after the 0.1 s header deadline


async def test_tls_handshake_must_complete_in_time(tmp_path: Path) -> None:
    async with limited_server(tmp_path, Limits(handshake_timeout=0.2), secure=True) as srv:
        reader, writer = await _raw(srv)  # TCP only: no ClientHello
        assert await _closed_by_server(reader) == b""
        writer.close()


async def test_connections_over_the_cap_get_a_503_status_and_one_log_line(tmp_path: Path) -> None:
    async with limited_server(tmp_path, Limits(max_connections=3)) as srv:
        held = [await _raw(srv) for _ in range(3)]
        await eventually(lambda: srv.connections.open == 3, what="three connections open")
        with structlog.testing.capture_logs() as logs:
            answers = []
            for _ in range(4):
                reader, writer = await _raw(srv)
                answers.append(await _response(reader))
                writer.close()
        for code, headers, body in answers:
            assert code == 503 and headers["retry-after"] == "1"
            status = json.loads(body)
            assert status["kind"] == "Status" and status["reason"] == "ServiceUnavailable"
            assert status["details"] == {"retryAfterSeconds": 1}
        refusals = [e for e in logs if e["event"] == "connections_refused"]
        assert len(refusals) == 1 and refusals[0]["limit"] == 3  # once per period, not once per connection
        for _, writer in held:
            writer.close()
        await eventually(lambda: srv.connections.open == 0, what="the held connections released")
        async with aiohttp.ClientSession(base_url=srv.url) as http, http.get("/readyz") as r:
            assert r.status == 200


async def test_the_connection_cap_follows_the_descriptor_limit() -> None:
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    cap = connections.default_max_connections()
    assert cap < soft and soft - cap <= connections.RESERVED_DESCRIPTORS


@pytest.mark.parametrize(("request_bytes", "code", "reason"), [
    (b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414, "RequestURITooLong"),
    (b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * 70_000 + b"\r\n\r\n", 431, "RequestHeaderFieldsTooLarge"),
    (b"GET / HTTP/1.1\r\nHost: x\r\nBad Header\x01: <script>\r\n\r\n", 400, "BadRequest"),
    (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 hello\r\n\r\n", 400, "BadRequest"),
    (b"POST /api/v1/namespaces HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
     400, "BadRequest"),
])
async def test_unparsable_requests_get_a_status_that_echoes_nothing(tmp_path: Path, request_bytes: bytes,
                                                                  code: int, reason: str) -> None:
    async with limited_server(tmp_path, Limits()) as srv:
        reader, writer = await _raw(srv)
        writer.write(request_bytes)
        got, headers, body = await _response(reader)
        writer.close()
        assert got == code
        assert headers["content-type"].startswith("application/json")
        status = json.loads(body)
        assert status["kind"] == "Status" and status["code"] == code and status["reason"] == reason
        for echoed in (b"aaaaaaaa", b"bbbbbbbb", b"script", b"hello"):
            assert echoed not in body
