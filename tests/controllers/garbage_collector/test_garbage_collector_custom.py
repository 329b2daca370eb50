"""The garbage collector with custom resources: it learns them from discovery when their definitions
appear (and forgets them when they go), collects the dependents of a custom owner and custom
dependents of a built-in owner, carries out foreground and orphan deletion of a custom owner, and
catches up with an owner that went before its resource was monitored."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from controllers import garbage_collector
from controllers.runtime import client as clients
from controllers.runtime import manager as managers
from cp import clock as clocks
from tests.controllers import crds
from tests.waiting import eventually


@pytest.fixture
async def gc(client: clients.Client) -> AsyncIterator[garbage_collector.GarbageCollector]:
    """The collector in a manager of its own (its client is not the test's: it discovers by itself)."""
    async with clients.Client(client.base_url) as own:
        manager = managers.Manager(client=own, clock=clocks.RealClock())
        controller = garbage_collector.new(manager.context())
        manager.add(controller)
        stop = asyncio.Event()
        task = asyncio.ensure_future(manager.run(stop))
        await asyncio.wait_for(manager.leading.wait(), 10)
        assert isinstance(controller.reconciler, garbage_collector.GarbageCollector)
        yield controller.reconciler
        stop.set()
        await asyncio.wait_for(task, 10)


def _widget(name: str, *, owners: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if owners:
        meta["ownerReferences"] = owners
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": meta, "spec": {"replicas": 1}}


async def _cm(client: clients.Client, name: str, owners: list[dict[str, Any]]) -> dict[str, Any]:
    return await client.create("configmaps", {"metadata": {"name": name, "namespace": "default",
                                                           "ownerReferences": owners}})


async def test_a_custom_owner_takes_its_configmaps_and_a_deployment_its_widgets(
        client: clients.Client, gc: garbage_collector.GarbageCollector) -> None:
    widgets = await crds.establish(client)  # after the collector started: it must notice
    await eventually(lambda: "widgets.example.com" in gc.custom, what="widgets monitored")
    owner = await client.create(widgets, _widget("w"))
    dep = await _cm(client, "dep", [crds.ref(owner)])
    keeper = await client.create("configmaps", {"metadata": {"name": "keeper", "namespace": "default"}})
    shared = await _cm(client, "shared", [crds.ref(owner), crds.ref(keeper)])
    await client.delete(widgets, "w", namespace="default")
    await eventually(lambda: crds.gone(client, "configmaps", "dep", "default"), what="dependent collected")
    left = await client.get("configmaps", "shared", namespace="default")
    assert left["metadata"]["ownerReferences"] == [crds.ref(keeper)]
    assert dep["metadata"]["uid"] != shared["metadata"]["uid"]

    deploy = await client.create("deployments.apps", {
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}})
    await client.create(widgets, _widget("owned", owners=[crds.ref(deploy)]))
    await client.delete("deployments.apps", "web", namespace="default", propagation_policy="Background")
    await eventually(lambda: crds.gone(client, widgets, "owned", "default"), what="widget collected")


async def test_foreground_and_orphan_deletion_of_a_custom_owner(
        client: clients.Client, gc: garbage_collector.GarbageCollector) -> None:
    widgets = await crds.establish(client)
    await eventually(lambda: "widgets.example.com" in gc.custom, what="widgets monitored")
    fg = await client.create(widgets, _widget("fg"))
    await _cm(client, "blocking", [crds.ref(fg, block=True)])
    await client.delete(widgets, "fg", namespace="default", propagation_policy="Foreground")
    await eventually(lambda: crds.gone(client, "configmaps", "blocking", "default"), what="dependent first")
    await eventually(lambda: crds.gone(client, widgets, "fg", "default"), what="then the owner")

    orphaner = await client.create(widgets, _widget("orphaner"))
    await _cm(client, "orphan", [crds.ref(orphaner)])
    await client.delete(widgets, "orphaner", namespace="default", propagation_policy="Orphan")
    await eventually(lambda: crds.gone(client, widgets, "orphaner", "default"), what="owner gone")
    kept = await client.get("configmaps", "orphan", namespace="default")
    assert not kept["metadata"].get("ownerReferences")


async def test_an_owner_gone_before_its_resource_was_monitored(client: clients.Client) -> None:
    widgets = await crds.establish(client)
    owner = await client.create(widgets, _widget("early"))
    await _cm(client, "late", [crds.ref(owner)])
    await client.delete(widgets, "early", namespace="default")
    async with clients.Client(client.base_url) as own:
        manager = managers.Manager(client=own, clock=clocks.RealClock())
        manager.add(garbage_collector.new(manager.context()))
        stop = asyncio.Event()
        task = asyncio.ensure_future(manager.run(stop))
        try:
            await eventually(lambda: crds.gone(client, "configmaps", "late", "default"), what="collected")
        finally:
            stop.set()
            await asyncio.wait_for(task, 10)


async def test_a_deleted_definition_stops_its_monitor(
        client: clients.Client, gc: garbage_collector.GarbageCollector) -> None:
    widgets = await crds.establish(client)
    await eventually(lambda: gc.informers.has(widgets), what="widgets informed on")
    await client.delete(crds.CRDS, "widgets.example.com")
    await eventually(lambda: not gc.informers.has(widgets) and "widgets.example.com" not in gc.custom,
                     what="monitor stopped")
