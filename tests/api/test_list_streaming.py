"""Large JSON LISTs are streamed (`api.handlers._stream_list`, KEP-5116) with the bytes a LIST in one
piece would have; GETs and LISTs served from the objects kept in memory answer as the database does.

In scope: a list over the streaming threshold (streamed with its Content-Length, the same body as unstreamed, metadata with its
resourceVersion and continue token, a namespace, a selector), an empty list, a streamed Table (the
bytes of an unstreamed one, for each includeObject);
a GET of a kept object at the latest revision, at resourceVersion=0, at an exact one, after a write
and a delete. Out of scope: which lists the storage serves from memory (tests/storage/test_sql_heads.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from api import handlers
from api import server as servers
from storage import log, sql

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


async def _fill(api_server: servers.Running, count: int, *, namespace: str = "default") -> None:
    for i in range(count):
        await api_server.event_log.append(log.Write(
            type="ADDED", group="", resource="configmaps", namespace=namespace, name=f"cm-{i:04d}",
            object={"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": f"cm-{i:04d}", "namespace": namespace, "uid": f"u{i}",
                                 "labels": {"parity": "even" if i % 2 == 0 else "odd"}},
                    "data": {"payload": "x" * 2100}},
            expected_revision=0, time=0.0))


async def _get(http: aiohttp.ClientSession, path: str, **params: str) -> tuple[bytes, aiohttp.ClientResponse]:
    async with http.get(path, params=params) as r:
        assert r.status == 200
        return await r.read(), r


@pytest.mark.parametrize("params", [{}, {"limit": "700"}, {"labelSelector": "parity=even"},
                                    {"fieldSelector": "metadata.namespace=default"}])
async def test_a_streamed_list_has_the_bytes_of_one_in_one_piece(
        api_server: servers.Running, http: aiohttp.ClientSession, monkeypatch: pytest.MonkeyPatch,
        params: dict[str, str]) -> None:
    await _fill(api_server, 1200)
    await _fill(api_server, 3, namespace="kube-system")
    streaming = []
    stream = handlers._stream_list

    async def spied(*args: Any, **kwargs: Any) -> Any:
        streaming.append(True)
        return await stream(*args, **kwargs)

    monkeypatch.setattr(handlers, "_stream_list", spied)
    streamed, r = await _get(http, "/api/v1/configmaps", **params)
    assert streaming and int(r.headers["Content-Length"]) == len(streamed)
    assert r.headers["Content-Type"].startswith("application/json")
    monkeypatch.setattr(handlers, "STREAM_MIN_ITEMS", 1 << 40)
    whole, r = await _get(http, "/api/v1/configmaps", **params)
    assert len(streaming) == 1
    assert streamed == whole
    body = json.loads(streamed)
    assert body["kind"] == "ConfigMapList" and body["metadata"]["resourceVersion"] == str(api_server.event_log.revision)
    names = [item["metadata"]["name"] for item in body["items"]]
    if params.get("limit"):
        assert len(names) == 700 and body["metadata"]["continue"]
    elif params.get("labelSelector"):
        assert names == [f"cm-{i:04d}" for i in range(0, 1200, 2)] + ["cm-0000", "cm-0002"]  # + kube-system
    elif params.get("fieldSelector"):
        assert len(names) == 1200
    else:
        assert len(names) == 1203


async def test_a_continued_streamed_list_ends_where_the_first_page_stopped(
        api_server: servers.Running, http: aiohttp.ClientSession) -> None:
    await _fill(api_server, 1200)
    first = json.loads((await _get(http, CONFIGMAPS, limit="700"))[0])
    rest = json.loads((await _get(http, CONFIGMAPS, limit="700", **{"continue": first["metadata"]["continue"]}))[0])
    assert "continue" not in rest["metadata"]
    assert rest["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    names = [item["metadata"]["name"] for item in first["items"] + rest["items"]]
    assert names == [f"cm-{i:04d}" for i in range(1200)]


@pytest.mark.parametrize("include", ["", "Object", "None"])
async def test_a_streamed_table_has_the_bytes_of_one_in_one_piece(
        api_server: servers.Running, http: aiohttp.ClientSession, monkeypatch: pytest.MonkeyPatch,
        include: str) -> None:
    await _fill(api_server, 600)
    headers = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
    params = {"includeObject": include} if include else {}
    async with http.get(CONFIGMAPS, headers=headers, params=params) as r:
        assert r.status == 200 and r.headers.get("Transfer-Encoding") == "chunked"
        streamed = await r.read()
    monkeypatch.setattr(handlers, "STREAM_MIN_ITEMS", 1 << 40)
    async with http.get(CONFIGMAPS, headers=headers, params=params) as r:
        assert r.status == 200 and "Transfer-Encoding" not in r.headers
        whole = await r.read()
    assert streamed == whole
    table = json.loads(streamed)
    assert table["kind"] == "Table" and len(table["rows"]) == 600
    assert table["metadata"]["resourceVersion"] == str(api_server.event_log.revision)


async def test_gets_of_kept_objects_answer_as_the_database(api_server: servers.Running,
                                                          http: aiohttp.ClientSession) -> None:
    await _fill(api_server, 3)
    await _get(http, "/api/v1/configmaps")  # a full LIST: loads configmaps into memory (one namespace would not wait)
    event_log = api_server.event_log
    assert event_log._broadcaster.heads.loaded_at(group="", resource="configmaps") is not None  # type: ignore[attr-defined]
    before = json.loads((await _get(http, f"{CONFIGMAPS}/cm-0001"))[0])
    async with http.patch(f"{CONFIGMAPS}/cm-0001", json={"data": {"payload": "changed"}},
                          headers={"Content-Type": "application/merge-patch+json"}) as r:
        assert r.status == 200
        patched = await r.json()
    for params in ({}, {"resourceVersion": "0"}, {"resourceVersion": patched["metadata"]["resourceVersion"]}):
        got = json.loads((await _get(http, f"{CONFIGMAPS}/cm-0001", **params))[0])
        assert got == patched, params
    stored = await event_log.get(group="", resource="configmaps", namespace="default", name="cm-0001")
    assert stored is not None and json.loads(stored.object) == patched
    assert before["data"]["payload"] == "x" * 2100
    async with http.delete(f"{CONFIGMAPS}/cm-0001") as r:
        assert r.status == 200
    async with http.get(f"{CONFIGMAPS}/cm-0001") as r:
        assert r.status == 404


async def test_an_empty_list(api_server: servers.Running, http: aiohttp.ClientSession) -> None:
    body = json.loads((await _get(http, "/api/v1/namespaces/nowhere/configmaps"))[0])
    assert body["items"] == []


async def test_the_budget_and_the_warm_up_reach_the_served_log(tmp_path: Path) -> None:
    async with servers.running(data_dir=tmp_path / "data"):
        pass  # the bootstrap's objects (namespaces...) are in the log from now on
    async with servers.running(data_dir=tmp_path / "data", watch_cache_memory=5 << 20, warm_cache=True) as srv:
        event_log = srv.event_log
        assert isinstance(event_log, sql.SqlEventLog)
        await event_log.warmed.wait()
        cache = event_log._broadcaster.heads
        assert cache.max_bytes == 5 << 20
        assert cache.loaded_at(group="", resource="namespaces") is not None  # there at start: warmed
