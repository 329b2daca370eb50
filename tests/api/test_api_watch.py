"""Watch streams over HTTP: initial events, resume from a resourceVersion, watch-list bookmarks,
selectors applied to events, Table watches, 410 on compacted revisions, parameter validation.

Out of scope: storage fan-out internals (tests/storage/), kubectl -w (tests/kubectl/).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp

from api import server as servers

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


async def _line(resp: aiohttp.ClientResponse) -> dict[str, Any]:
    raw = await asyncio.wait_for(resp.content.readline(), 5)
    assert raw, "stream ended"
    return json.loads(raw)


async def _create_cm(http: aiohttp.ClientSession, name: str, **labels: str) -> dict[str, Any]:
    async with http.post("/api/v1/namespaces/default/configmaps",
                         json={"metadata": {"name": name, "labels": labels}}) as r:
        assert r.status == 201
        return json.loads(await r.read())


async def _label(http: aiohttp.ClientSession, name: str, labels: dict[str, str | None]) -> dict[str, Any]:
    async with http.patch(f"/api/v1/namespaces/default/configmaps/{name}", json={"metadata": {"labels": labels}},
                          headers={"Content-Type": "application/merge-patch+json"}) as r:
        return json.loads(await r.read())


async def test_watch_without_rv_sends_initial_then_live(http: aiohttp.ClientSession) -> None:
    await _create_cm(http, "a")
    async with http.get("/api/v1/namespaces/default/configmaps", params={"watch": "true"}) as resp:
        assert resp.status == 200
        first = await _line(resp)
        assert first["type"] == "ADDED" and first["object"]["metadata"]["name"] == "a"
        await _create_cm(http, "b")
        ev = await _line(resp)
        assert ev["type"] == "ADDED" and ev["object"]["metadata"]["name"] == "b"
        await http.delete("/api/v1/namespaces/default/configmaps/a")
        ev = await _line(resp)
        assert ev["type"] == "DELETED" and ev["object"]["metadata"]["name"] == "a"


async def test_watch_from_rv_replays_exactly_after(http: aiohttp.ClientSession) -> None:
    a = await _create_cm(http, "a")
    await _create_cm(http, "b")
    await _label(http, "a", {"x": "1"})
    rv = a["metadata"]["resourceVersion"]
    # kubernetes_asyncio sends watch=True: Go ParseBool semantics.
    async with http.get("/api/v1/namespaces/default/configmaps",
                        params={"watch": "True", "resourceVersion": rv}) as resp:
        e1 = await _line(resp)
        e2 = await _line(resp)
    assert (e1["type"], e1["object"]["metadata"]["name"]) == ("ADDED", "b")
    assert (e2["type"], e2["object"]["metadata"]["name"]) == ("MODIFIED", "a")
    assert int(e2["object"]["metadata"]["resourceVersion"]) > int(e1["object"]["metadata"]["resourceVersion"])


async def test_watch_list_initial_events_end_bookmark(http: aiohttp.ClientSession) -> None:
    await _create_cm(http, "a")
    await _create_cm(http, "b")
    params = {"watch": "true", "sendInitialEvents": "true", "resourceVersionMatch": "NotOlderThan",
              "allowWatchBookmarks": "true", "fieldSelector": "metadata.name=b", "timeoutSeconds": "30"}
    async with http.get("/api/v1/namespaces/default/configmaps", params=params) as resp:
        ev = await _line(resp)
        assert ev["type"] == "ADDED" and ev["object"]["metadata"]["name"] == "b"
        bm = await _line(resp)
    assert bm["type"] == "BOOKMARK"
    assert bm["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert bm["object"]["kind"] == "ConfigMap"


async def test_watch_list_parameter_validation(http: aiohttp.ClientSession) -> None:
    async with http.get("/api/v1/namespaces/default/configmaps",
                        params={"watch": "1", "sendInitialEvents": "true"}) as resp:
        assert resp.status == 422
    async with http.get("/api/v1/namespaces/default/configmaps",
                        params={"watch": "yes"}) as resp:
        assert resp.status == 400


async def test_selector_transitions_become_added_and_deleted(http: aiohttp.ClientSession) -> None:
    await _create_cm(http, "a", app="web")
    async with http.get("/api/v1/namespaces/default/configmaps",
                        params={"watch": "true", "labelSelector": "app=web"}) as resp:
        assert (await _line(resp))["type"] == "ADDED"
        await _label(http, "a", {"app": "other"})
        ev = await _line(resp)
        assert ev["type"] == "DELETED" and ev["object"]["metadata"]["name"] == "a"
        await _create_cm(http, "z", app="nope")
        await _label(http, "z", {"app": "web"})
        ev = await _line(resp)
        assert ev["type"] == "ADDED" and ev["object"]["metadata"]["name"] == "z"


async def test_selector_transition_from_rv_uses_previous_state(http: aiohttp.ClientSession) -> None:
    a = await _create_cm(http, "a", app="web")
    async with http.get("/api/v1/namespaces/default/configmaps",
                        params={"watch": "true", "labelSelector": "app=web",
                                "resourceVersion": a["metadata"]["resourceVersion"]}) as resp:
        await _label(http, "a", {"app": "other"})
        ev = await _line(resp)
    assert ev["type"] == "DELETED"


async def test_table_watch_headers_once(http: aiohttp.ClientSession) -> None:
    async with http.get("/api/v1/namespaces/default/configmaps", params={"watch": "true"},
                        headers={"Accept": TABLE}) as resp:
        await _create_cm(http, "a")
        await _create_cm(http, "b")
        e1 = await _line(resp)
        e2 = await _line(resp)
    assert e1["object"]["kind"] == "Table" and e1["object"]["columnDefinitions"]
    assert e1["object"]["rows"][0]["cells"][0] == "a"
    assert not e2["object"].get("columnDefinitions")
    assert e2["object"]["rows"][0]["cells"][0] == "b"


async def test_timeout_seconds_ends_stream(http: aiohttp.ClientSession) -> None:
    async with http.get("/api/v1/namespaces/default/configmaps",
                        params={"watch": "true", "timeoutSeconds": "1", "resourceVersion": "1"}) as resp:
        rest = await asyncio.wait_for(resp.content.read(), 5)
    assert b"ERROR" not in rest


async def test_expired_revision_in_stream_410(api_server: servers.Running,
                                              http: aiohttp.ClientSession) -> None:
    await _create_cm(http, "a")
    b = await _create_cm(http, "b")
    await api_server.event_log.compact(int(b["metadata"]["resourceVersion"]))
    async with http.get("/api/v1/namespaces/default/configmaps",
                        params={"watch": "true", "resourceVersion": "1"}) as resp:
        assert resp.status == 200
        ev = await _line(resp)
    assert ev["type"] == "ERROR"
    assert ev["object"]["code"] == 410 and ev["object"]["reason"] == "Expired"


async def test_watch_all_namespaces_and_cluster_scoped(http: aiohttp.ClientSession) -> None:
    await http.post("/api/v1/namespaces", json={"metadata": {"name": "team"}})
    async with http.get("/api/v1/configmaps", params={"watch": "1", "resourceVersion": "0"}) as resp:
        await http.post("/api/v1/namespaces/team/configmaps", json={"metadata": {"name": "t"}})
        ev = await _line(resp)
    assert ev["object"]["metadata"]["namespace"] == "team"


async def test_open_watches_are_counted_in_metrics(http: aiohttp.ClientSession) -> None:
    async with http.get("/api/v1/namespaces/default/configmaps", params={"watch": "1"}) as resp:
        await _create_cm(http, "a")
        await _line(resp)
        async with http.get("/metrics") as m:
            text = await m.text()
        assert 'apiserver_registered_watchers{group="",resource="configmaps"} 1.0' in text
