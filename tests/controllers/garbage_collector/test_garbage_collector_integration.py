"""The garbage collector running (through `run_controllers`) against an in-process API server:
background, foreground and orphan deletion of an owner with ConfigMap dependents, dependents
of owners that never existed or were replaced, and a cross-kind owner (Deployment).

Out of scope: decision details (test_garbage_collector_writes.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from api import server as servers
from controllers import registry
from controllers.runtime import client as clients
from cp import errors
from tests.waiting import eventually


@pytest.fixture
async def gc(srv: servers.Running) -> AsyncIterator[None]:
    stop, ready = asyncio.Event(), asyncio.Event()
    task = asyncio.ensure_future(registry.run_controllers(server_url=srv.url, names=["garbage-collector"],
                                                          stop_event=stop, ready=ready))
    await asyncio.wait_for(ready.wait(), 10)
    yield
    stop.set()
    await asyncio.wait_for(task, 10)


def _ref(obj: dict[str, Any], *, block: bool = False) -> dict[str, Any]:
    ref = {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": obj["metadata"]["name"],
           "uid": obj["metadata"]["uid"]}
    if block:
        ref["blockOwnerDeletion"] = True
    return ref


async def _cm(client: clients.Client, name: str, *, owners: list[dict[str, Any]] | None = None,
              finalizers: list[str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if owners:
        meta["ownerReferences"] = owners
    if finalizers:
        meta["finalizers"] = finalizers
    return await client.create("configmaps", {"metadata": meta})


async def _names(client: clients.Client) -> set[str]:
    return {o["metadata"]["name"] for o in (await client.list("configmaps", namespace="default")).items}


async def _only(client: clients.Client, names: set[str]) -> bool:
    return await _names(client) == names


async def _gone(client: clients.Client, resource: str, name: str) -> bool:
    try:
        await client.get(resource, name, namespace="default")
    except errors.NotFound:
        return True
    return False


@pytest.mark.usefixtures("gc")
async def test_background_deletion_collects_dependents(client: clients.Client) -> None:
    owner = await client.create("deployments.apps", {
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}})
    bystander = await _cm(client, "bystander")
    for i in range(3):
        await _cm(client, f"dep{i}", owners=[_ref(owner)])
    await _cm(client, "shared", owners=[_ref(owner), _ref(bystander)])
    await client.delete("deployments.apps", "web", namespace="default", propagation_policy="Background")
    await eventually(lambda: _only(client, {"bystander", "shared"}), what="dependents collected")
    shared = await client.get("configmaps", "shared", namespace="default")
    assert shared["metadata"]["ownerReferences"] == [_ref(bystander)]  # the dangling ref is dropped


@pytest.mark.usefixtures("gc")
async def test_foreground_deletion_removes_dependents_first(client: clients.Client) -> None:
    owner = await _cm(client, "owner")
    deps = [await _cm(client, f"dep{i}", owners=[_ref(owner, block=True)]) for i in range(3)]
    holder = await _cm(client, "held", owners=[_ref(owner, block=True)], finalizers=["example.com/hold"])
    start_rv = (await client.list("configmaps", namespace="default")).resource_version
    deleted: list[str] = []

    async def watch_deletions() -> None:
        async with client.watch("configmaps", namespace="default", resource_version=start_rv) as stream:
            async for ev in stream:
                if ev.type == "DELETED":
                    deleted.append(ev.object["metadata"]["name"])
                    if ev.object["metadata"]["name"] == "owner":
                        return

    watcher = asyncio.ensure_future(watch_deletions())
    try:
        resp = await client.delete("configmaps", "owner", namespace="default", propagation_policy="Foreground")
        assert resp["metadata"]["finalizers"] == ["foregroundDeletion"]
        # the blocking dependent with its own finalizer holds the owner
        await eventually(lambda: _only(client, {"owner", "held"}), what="free dependents deleted")
        owner_now = await client.get("configmaps", "owner", namespace="default")
        assert owner_now["metadata"]["deletionTimestamp"] and owner_now["metadata"]["finalizers"] == [
            "foregroundDeletion"]
        held = await client.get("configmaps", "held", namespace="default")
        assert held["metadata"]["deletionTimestamp"]
        await client.patch("configmaps", "held", {"metadata": {"finalizers": None}}, namespace="default")
        await asyncio.wait_for(watcher, 10)
    finally:
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)
    assert deleted[-1] == "owner"
    assert sorted(deleted[:-1]) == sorted(d["metadata"]["name"] for d in [*deps, holder])
    assert await _names(client) == set()


@pytest.mark.usefixtures("gc")
async def test_orphan_deletion_keeps_dependents(client: clients.Client) -> None:
    owner = await _cm(client, "owner")
    other = await _cm(client, "other")
    await _cm(client, "solo", owners=[_ref(owner)])
    await _cm(client, "both", owners=[_ref(owner), _ref(other)])
    await client.delete("configmaps", "owner", namespace="default", propagation_policy="Orphan")
    await eventually(lambda: _gone(client, "configmaps", "owner"), what="owner deleted")
    solo = await client.get("configmaps", "solo", namespace="default")
    both = await client.get("configmaps", "both", namespace="default")
    assert "ownerReferences" not in solo["metadata"]
    assert both["metadata"]["ownerReferences"] == [_ref(other)]
    assert await _names(client) == {"other", "solo", "both"}


@pytest.mark.usefixtures("gc")
async def test_dependents_of_vanished_owners_are_collected(client: clients.Client) -> None:
    never = {"apiVersion": "v1", "kind": "ConfigMap", "name": "never-existed",
             "uid": "00000000-0000-0000-0000-000000000000"}
    await _cm(client, "orphaned", owners=[never])
    current = await _cm(client, "reborn")
    stale = dict(_ref(current), uid="11111111-1111-1111-1111-111111111111")
    await _cm(client, "stale", owners=[stale])
    await eventually(lambda: _only(client, {"reborn"}), what="dangling dependents collected")
