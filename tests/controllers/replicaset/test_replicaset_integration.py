"""The ReplicaSet controller running (through `run_controllers`) against an in-process API
server: a ReplicaSet scales 0 → 3 → 1 → 0 with exactly the pods it needs (generateName from its
name, a controller reference, the template's labels), its status follows, and a burst of 1,000
replicas is created without a single extra pod.

Out of scope: decision details (test_replicaset_writes.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from api import server as servers
from controllers import registry
from controllers.runtime import client as clients
from tests.waiting import eventually

LABELS = {"app": "web"}


@pytest.fixture
async def controllers(srv: servers.Running) -> AsyncIterator[None]:
    stop, ready = asyncio.Event(), asyncio.Event()
    task = asyncio.ensure_future(registry.run_controllers(server_url=srv.url, names=["replicaset"],
                                                          stop_event=stop, ready=ready))
    await asyncio.wait_for(ready.wait(), 10)
    yield
    stop.set()
    await asyncio.wait_for(task, 10)


def _rs(name: str, replicas: int) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": LABELS},
                     "template": {"metadata": {"labels": {**LABELS, "tier": "front"}},
                                  "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}


async def _pods(client: clients.Client) -> list[dict[str, Any]]:
    return (await client.list("pods", namespace="default")).items


async def _settled(client: clients.Client, name: str, replicas: int) -> bool:
    rs = await client.get("replicasets.apps", name, namespace="default")
    status = rs.get("status") or {}
    pods = [p for p in await _pods(client) if not p["metadata"].get("deletionTimestamp")]
    return (len(pods) == replicas and status.get("replicas", 0) == replicas
            and status.get("observedGeneration") == rs["metadata"]["generation"])


async def _scale(client: clients.Client, name: str, replicas: int) -> None:
    await client.patch("replicasets.apps", name, {"spec": {"replicas": replicas}}, namespace="default",
                       subresource="scale")


@pytest.mark.usefixtures("controllers")
async def test_replicaset_scales_0_3_1_0(client: clients.Client) -> None:
    rs = await client.create("replicasets.apps", _rs("web", 0))
    await eventually(lambda: _settled(client, "web", 0), what="observed at 0")

    await _scale(client, "web", 3)
    await eventually(lambda: _settled(client, "web", 3), what="3 pods")
    pods = await _pods(client)
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": rs["metadata"]["uid"],
             "controller": True, "blockOwnerDeletion": True}
    for p in pods:
        assert p["metadata"]["name"].startswith("web-") and len(p["metadata"]["name"]) == len("web-") + 5
        assert p["metadata"]["generateName"] == "web-"
        assert p["metadata"]["ownerReferences"] == [owner]
        assert p["metadata"]["labels"] == {**LABELS, "tier": "front"}
    status = (await client.get("replicasets.apps", "web", namespace="default"))["status"]
    assert status["fullyLabeledReplicas"] == 3 and "readyReplicas" not in status

    await _scale(client, "web", 1)
    await eventually(lambda: _settled(client, "web", 1), what="1 pod")
    await _scale(client, "web", 0)
    await eventually(lambda: _settled(client, "web", 0), what="0 pods")

    events = (await client.list("events", namespace="default")).items
    created = [e for e in events if e["reason"] == "SuccessfulCreate"]
    deleted = [e for e in events if e["reason"] == "SuccessfulDelete"]
    assert len(created) == 3 and len(deleted) == 3  # never one pod too many
    assert all(e["source"]["component"] == "replicaset-controller" for e in created + deleted)


@pytest.mark.usefixtures("controllers")
async def test_burst_creation_makes_exactly_the_replicas(client: clients.Client) -> None:
    await client.create("replicasets.apps", _rs("big", 1000))
    await eventually(lambda: _settled(client, "big", 1000), within=30, what="1000 pods")
    # the informer saw every pod before the controller looked again: no extra creates
    assert len(await _pods(client)) == 1000
