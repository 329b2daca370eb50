"""The web UI's event log views under a replay (api/eventlog.py): the log ends at the replay's cursor."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp

from api import replay
from tests import recordings

EVENTLOG = "/apis/sim.cplane.dev/v1alpha1/eventlog"


async def _get(http: aiohttp.ClientSession, path: str, **params: Any) -> tuple[int, Any]:
    async with http.get(path, params={k: str(v) for k, v in params.items()}) as r:
        return r.status, await r.json()


async def test_reads_stop_at_the_cursor(replayed: replay.ReplayServer, http: aiohttp.ClientSession,
                                        recorded: recordings.Recorded) -> None:
    code, page = await _get(http, EVENTLOG)
    assert code == 200 and page["items"] == [] and page["revision"] == 0
    code, d = await _get(http, f"{EVENTLOG}/density")
    assert code == 200 and d["buckets"] == [] and d["last"] is None

    at = recorded.last // 2
    await replayed.replayer.until_revision(at)
    code, page = await _get(http, EVENTLOG, limit=10_000, until=recorded.last)
    assert code == 200
    assert page["revision"] == at and page["until"] == at
    assert [i["revision"] for i in page["items"]] == list(range(1, at + 1))
    assert "continue" not in page
    code, d = await _get(http, f"{EVENTLOG}/density", buckets=10, until=recorded.last)
    assert sum(sum(b["counts"].values()) for b in d["buckets"]) == at
    assert d["last"]["revision"] == at and d["buckets"][-1]["to"] == at

    # an object's history: only the versions up to the cursor, then more as the replay goes on
    web = recorded.timeline.of("pods/shop/web")
    first = web[0]["revision"]
    await replayed.replayer.until_revision(max(first, at))
    code, h = await _get(http, f"{EVENTLOG}/history", resource="pods", namespace="shop", name="web")
    assert code == 200
    cursor = replayed.log.revision
    assert [i["revision"] for i in h["items"]] == [e["revision"] for e in web if e["revision"] <= cursor]
    await replayed.replayer.until_revision(recorded.last)
    code, h = await _get(http, f"{EVENTLOG}/history", resource="pods", namespace="shop", name="web")
    assert [i["revision"] for i in h["items"]] == [e["revision"] for e in web]
    # counted again at the end (the buckets complete before are remembered)
    code, d = await _get(http, f"{EVENTLOG}/density", buckets=10)
    assert sum(sum(b["counts"].values()) for b in d["buckets"]) == recorded.last


async def test_the_watch_follows_the_cursor(replayed: replay.ReplayServer, http: aiohttp.ClientSession,
                                            recorded: recordings.Recorded) -> None:
    async with http.get(EVENTLOG, params={"watch": "1", "since": "0", "objects": "pods"}) as r:
        assert r.status == 200

        async def line() -> Any:
            async with asyncio.timeout(10):
                raw = await r.content.readline()
            assert raw, "the stream ended"
            return json.loads(raw)

        at = recorded.last // 2
        await replayed.replayer.until_revision(at)
        got = [await line() for _ in range(at)]  # every event up to the cursor, in order, none after it
        assert [g["revision"] for g in got] == list(range(1, at + 1))
        assert all(("object" in g) == (g["resource"] == "pods") for g in got)
        await replayed.replayer.until_revision(recorded.last)
        got = [await line() for _ in range(at, recorded.last)]
        assert [g["revision"] for g in got] == list(range(at + 1, recorded.last + 1))
        web = [g for g in got if (g["resource"], g["namespace"], g["name"]) == ("pods", "shop", "web")]
        assert all(g["object"]["metadata"]["name"] == "web" for g in web)
