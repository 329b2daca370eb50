"""The outermost middleware tells a client that went away (499, nothing to answer) from an error the
server met while the client waits (issue #17, item 8): a `ConnectionResetError` from a database
connection is the server's problem, answered with a `Status`, never aiohttp's plain-text 500."""

from __future__ import annotations

from pathlib import Path

import aiohttp
from aiohttp import web

from api import server as servers
from storage import log, memory


async def _reset(request: web.Request) -> web.StreamResponse:
    raise ConnectionResetError("Connection reset by peer")  # as asyncpg raises when its socket breaks


async def _unavailable(request: web.Request) -> web.StreamResponse:
    raise log.UnavailableError("the event log's database is unavailable: ConnectionRefusedError")


async def test_errors_while_the_client_waits_are_status_answers(tmp_path: Path) -> None:
    the_log = memory.MemoryEventLog()
    await the_log.start()
    routes = [web.get("/test/reset", _reset), web.get("/test/unavailable", _unavailable)]
    try:
        async with servers.running(data_dir=tmp_path, event_log=the_log, app_options={"routes": routes}) as srv, \
                aiohttp.ClientSession(base_url=srv.url) as http:
            async with http.get("/test/reset") as r:
                assert r.status == 500 and r.content_type == "application/json"
                body = await r.json()
                assert body["kind"] == "Status" and body["reason"] == "InternalError"
            async with http.get("/test/unavailable") as r:
                assert r.status == 503 and r.headers["Retry-After"] == "1"
                body = await r.json()
                assert body["reason"] == "ServiceUnavailable" and body["details"] == {"retryAfterSeconds": 1}
    finally:
        await the_log.close()
