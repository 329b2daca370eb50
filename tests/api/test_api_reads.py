"""Reads at a resourceVersion out of the log's range: the wait for a newer one and the Status errors.

In scope: GET and LIST with `resourceVersion` newer than the log (wait up to `api.reads.FUTURE_RV_WAIT`,
then 504 "Too large resource version" with upstream's cause and Retry-After), an exact LIST in the
future (504 at once), a wait that ends because the revision is written meanwhile, and the 410s of
reads at compacted revisions (an exact LIST, a continued one).
Out of scope: reads at past revisions (test_api_crud.py), watches (test_api_watch.py).
"""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest

from api import reads
from api import server as servers

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


def _too_large(requested: int, current: int, **details: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                            "message": f"Too large resource version: {requested}, current: {current}",
                            "reason": "Timeout", "code": 504}
    body["details"] = details  # NewTimeoutError always sets the pointer: `"details":{}` at least
    return body


@pytest.mark.parametrize("path", [CONFIGMAPS, "/api/v1/namespaces/default"])
async def test_a_read_waits_for_a_newer_revision_then_answers_504(
        api_server: servers.Running, http: aiohttp.ClientSession, monkeypatch: pytest.MonkeyPatch,
        path: str) -> None:
    monkeypatch.setattr(reads, "FUTURE_RV_WAIT", 0.2)
    current = api_server.event_log.revision
    async with http.get(path, params={"resourceVersion": str(current + 100)}) as r:
        assert r.status == 504
        assert r.headers["Retry-After"] == "1"
        assert await r.json() == _too_large(current + 100, current, causes=[
            {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}], retryAfterSeconds=1)


async def test_an_exact_list_in_the_future_answers_504_at_once(api_server: servers.Running,
                                                               http: aiohttp.ClientSession) -> None:
    current = api_server.event_log.revision
    params = {"resourceVersion": str(current + 100), "resourceVersionMatch": "Exact"}
    async with http.get(CONFIGMAPS, params=params) as r:
        assert r.status == 504
        assert r.headers["Retry-After"] == "1"
        assert await r.json() == _too_large(current + 100, current)


async def test_a_read_waiting_for_a_revision_answers_once_it_is_written(api_server: servers.Running,
                                                                        http: aiohttp.ClientSession) -> None:
    wanted = api_server.event_log.revision + 1
    waiting = asyncio.ensure_future(http.get(CONFIGMAPS, params={"resourceVersion": str(wanted)}))
    async with http.post(CONFIGMAPS, json={"metadata": {"name": "late"}}) as created:
        assert created.status == 201
    async with await waiting as r:
        assert r.status == 200
        body = await r.json()
    assert int(body["metadata"]["resourceVersion"]) >= wanted
    assert [item["metadata"]["name"] for item in body["items"]] == ["late"]


async def test_reads_at_compacted_revisions_answer_410(api_server: servers.Running,
                                                       http: aiohttp.ClientSession) -> None:
    for name in ("a", "b", "c"):
        async with http.post(CONFIGMAPS, json={"metadata": {"name": name}}) as r:
            assert r.status == 201
    async with http.get(CONFIGMAPS, params={"limit": "1"}) as r:
        first = await r.json()
    pinned = int(first["metadata"]["resourceVersion"])
    for name in ("d", "e"):
        async with http.post(CONFIGMAPS, json={"metadata": {"name": name}}) as r:
            assert r.status == 201
    await api_server.event_log.compact(pinned + 1)
    compacted = api_server.event_log.compacted_revision
    assert compacted > pinned
    async with http.get(CONFIGMAPS, params={"limit": "1", "continue": first["metadata"]["continue"]}) as r:
        assert r.status == 410
        assert await r.json() == {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "reason": "Expired",
            "code": 410, "message": "The provided continue parameter is too old to display a consistent list "
                                    "result. You can start a new list without the continue parameter."}
    async with http.get(CONFIGMAPS, params={"resourceVersion": str(pinned), "resourceVersionMatch": "Exact"}) as r:
        assert r.status == 410
        assert (await r.json())["message"] == f"too old resource version: {pinned} ({compacted})"
