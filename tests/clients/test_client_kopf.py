"""A `kopf` 1.45 operator against a live server: a toy DRA driver that allocates ResourceClaims.

The operator runs in-process (`kopf.run`, standalone, cluster-wide) in a worker thread with its own
event loop: kopf's shutdown cancels every task of its loop that it did not start, so sharing the
test's loop would cancel the server's own connection handlers. It is stopped with a stop flag.

In scope (what kopf needs from the server): legacy discovery, cluster-wide LIST then WATCH with
`allowWatchBookmarks` (or the watch-list stream with `initial_streaming`), JSON-patch with a `test`
of `/metadata/resourceVersion` (finalizer add/remove), merge patches of annotations and of
`/status`, Events posted without kind/apiVersion with `generateName` and `+00:00` timestamps,
finalizer semantics on delete (deletionTimestamp, then the object goes away with its last finalizer).
Out of scope: schema validation of the returned objects (test_client_schemas.py).
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import re
import threading
from pathlib import Path
from typing import Any

import aiohttp
import kopf
import pytest

from cp import testing
from tests.clients import support

NS = "default"
FINALIZER = "kopf.zalando.org/KopfFinalizerMarker"
CLAIMS = f"/apis/resource.k8s.io/v1/namespaces/{NS}/resourceclaims"
EVENTS = f"/api/v1/namespaces/{NS}/events"


def _registry(url: str) -> kopf.OperatorRegistry:
    registry = kopf.OperatorRegistry()

    @kopf.on.login(registry=registry)
    def login(**_: Any) -> kopf.ConnectionInfo:
        return kopf.ConnectionInfo(server=url, default_namespace=NS)

    @kopf.on.create("resource.k8s.io", "v1", "resourceclaims", id="allocate", registry=registry)
    def allocate(body: kopf.Body, patch: kopf.Patch, **_: Any) -> dict[str, Any]:
        patch.status["allocation"] = support.allocation()
        kopf.info(body, reason="Allocated", message="allocated gpu-0 on node-1")
        return {"device": "gpu-0"}  # kopf stores handler results in status.<handler id> ("allocate")

    @kopf.on.delete("resource.k8s.io", "v1", "resourceclaims", id="release", registry=registry)
    def release(body: kopf.Body, **_: Any) -> None:
        kopf.info(body, reason="Released", message="released gpu-0")

    return registry


def _settings(initial_streaming: bool) -> kopf.OperatorSettings:
    settings = kopf.OperatorSettings()
    settings.watching.initial_streaming = initial_streaming
    settings.watching.server_timeout = 30
    settings.scanning.disabled = True  # no CRDs to scan
    settings.posting.level = logging.INFO
    settings.queueing.exit_timeout = 1
    settings.networking.error_backoffs = [0.1]
    return settings


async def _events_for(http: aiohttp.ClientSession, name: str) -> list[dict[str, Any]]:
    async with http.get(EVENTS, params={"fieldSelector": f"involvedObject.name={name}"}) as r:
        assert r.status == 200
        return (await r.json())["items"]


async def scenario(cluster: support.Cluster, workdir: Path, *, initial_streaming: bool = False) -> None:
    stop = threading.Event()
    ready = threading.Event()
    operator = asyncio.ensure_future(asyncio.to_thread(
        kopf.run, registry=_registry(cluster.url), settings=_settings(initial_streaming),
        standalone=True, clusterwide=True, stop_flag=stop, ready_flag=ready))
    try:
        async with aiohttp.ClientSession(base_url=cluster.url) as http:
            assert await asyncio.to_thread(ready.wait, 10), "kopf did not start"
            await _exercise(http)
    finally:
        stop.set()
        await asyncio.wait_for(operator, 15)  # re-raises what kopf.run raised, if anything


async def _exercise(http: aiohttp.ClientSession) -> None:
    async with http.post(CLAIMS, json=support.resource_claim("kopf-claim")) as r:
        assert r.status == 201, await r.text()
        created = await r.json()

    # kopf adds its finalizer (JSON patch with a resourceVersion test), then runs the create
    # handler: status patch (allocation + handler result), annotations, and an Event.
    def handled(ev: dict[str, Any]) -> bool:
        obj = ev["object"]
        meta = obj["metadata"]
        return (FINALIZER in (meta.get("finalizers") or [])
                and (obj.get("status") or {}).get("allocation") is not None
                and "kopf.zalando.org/last-handled-configuration" in (meta.get("annotations") or {}))

    ev = await support.watch_until(http, CLAIMS, handled, what="kopf to handle the claim",
                                   params={"resourceVersion": created["metadata"]["resourceVersion"]})
    claim = ev["object"]
    assert claim["metadata"]["uid"] == created["metadata"]["uid"]
    assert claim["status"]["allocation"] == support.allocation()

    event = await _wait_for_reason(http, "kopf-claim", "Allocated")
    assert event["kind"] == "Event" and event["apiVersion"] == "v1"  # defaulted from the URL
    assert event["metadata"]["name"].startswith("kopf-event-") and len(event["metadata"]["name"]) > 11
    assert event["reason"] == "Allocated" and event["type"] == "Normal"
    assert event["message"] == "allocated gpu-0 on node-1"
    involved = event["involvedObject"]
    assert (involved["kind"], involved["apiVersion"], involved["name"], involved["uid"]) == (
        "ResourceClaim", "resource.k8s.io/v1", "kopf-claim", created["metadata"]["uid"])
    assert event["source"]["component"] == "kopf" and event["reportingComponent"] == "kopf"
    born = _time(created["metadata"]["creationTimestamp"])
    for field in ("firstTimestamp", "lastTimestamp", "eventTime"):  # kopf sends `...+00:00`: accepted
        assert abs((_time(event[field]) - born).total_seconds()) < 60, event[field]

    # Deleting: the finalizer holds the object (deletionTimestamp set), kopf's delete handler runs
    # and removes the finalizer, and the object is gone (DELETED).
    watch = asyncio.ensure_future(support.watch_until(
        http, CLAIMS, lambda ev: ev["type"] == "DELETED" and ev["object"]["metadata"]["name"] == "kopf-claim",
        what="the claim to be deleted", params={"resourceVersion": claim["metadata"]["resourceVersion"]}))
    try:
        async with http.delete(f"{CLAIMS}/kopf-claim") as r:
            assert r.status == 200, await r.text()  # held by the finalizer: 200 with the object, as upstream
            pending = await r.json()
        assert pending["metadata"]["deletionTimestamp"] and FINALIZER in pending["metadata"]["finalizers"]
        gone = (await watch)["object"]
    finally:
        watch.cancel()
    assert gone["metadata"]["deletionTimestamp"] and FINALIZER not in (gone["metadata"].get("finalizers") or [])
    async with http.get(f"{CLAIMS}/kopf-claim") as r:
        assert r.status == 404
    released = await _wait_for_reason(http, "kopf-claim", "Released")
    assert released["involvedObject"]["uid"] == created["metadata"]["uid"]


def _time(value: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))


async def _wait_for_reason(http: aiohttp.ClientSession, name: str, reason: str) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        return next((e for e in await _events_for(http, name) if e["reason"] == reason), None)

    return await testing.eventually(probe, within=10.0, what=f"the {reason} event")


@pytest.mark.parametrize("initial_streaming", [False, True], ids=["list-then-watch", "watch-list"])
async def test_kopf_operator(cluster: support.Cluster, tmp_path: Path, initial_streaming: bool) -> None:
    await scenario(cluster, tmp_path, initial_streaming=initial_streaming)


def kopf_event_body(uid: str) -> dict[str, Any]:
    """The Event body kopf 1.45 posts (kopf/_cogs/clients/events.py): no kind/apiVersion,
    generateName, and timestamps from `datetime.isoformat()` (`+00:00`, microseconds)."""
    now = datetime.datetime.now(datetime.UTC)
    return {
        "metadata": {"namespace": NS, "generateName": "kopf-event-"},
        "action": "Action", "reason": "Allocated", "message": "allocated gpu-0", "type": "Normal",
        "reportingComponent": "kopf", "reportingInstance": "dev", "source": {"component": "kopf"},
        "firstTimestamp": now.isoformat(), "lastTimestamp": now.isoformat(), "eventTime": now.isoformat(),
        "involvedObject": {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "name": "c",
                           "namespace": NS, "uid": uid},
    }


async def test_kopf_event_timestamps_normalized(http: aiohttp.ClientSession) -> None:
    async with http.post(EVENTS, json=kopf_event_body("0b7e2c1e-0000-4000-8000-000000000001")) as r:
        assert r.status == 201, await r.text()
        event = await r.json()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", event["firstTimestamp"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", event["lastTimestamp"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", event["eventTime"])


async def test_kopf_json_patch_with_stale_resource_version_is_422(http: aiohttp.ClientSession) -> None:
    """kopf adds/removes its finalizer with a JSON patch guarded by a `test` of the resourceVersion and
    relies on 422 (APIUnprocessableEntityError) to retry on the next cycle instead of clobbering."""
    async with http.post(CLAIMS, json=support.resource_claim("raced")) as r:
        stale = (await r.json())["metadata"]["resourceVersion"]
    async with http.patch(f"{CLAIMS}/raced", json={"metadata": {"labels": {"moved": "on"}}},
                          headers={"Content-Type": "application/merge-patch+json"}) as r:
        assert r.status == 200
        current = await r.json()
    ops = [{"op": "test", "path": "/metadata/resourceVersion", "value": stale},
           {"op": "add", "path": "/metadata/finalizers", "value": [FINALIZER]}]
    async with http.patch(f"{CLAIMS}/raced", json=ops, headers={"Content-Type": "application/json-patch+json"}) as r:
        assert r.status == 422, await r.text()
        assert (await r.json())["kind"] == "Status"
    async with http.get(f"{CLAIMS}/raced") as r:
        after = await r.json()
    assert after["metadata"]["resourceVersion"] == current["metadata"]["resourceVersion"]
    assert "finalizers" not in after["metadata"]
    ops[0]["value"] = current["metadata"]["resourceVersion"]
    async with http.patch(f"{CLAIMS}/raced", json=ops, headers={"Content-Type": "application/json-patch+json"}) as r:
        assert r.status == 200, await r.text()
        assert (await r.json())["metadata"]["finalizers"] == [FINALIZER]
