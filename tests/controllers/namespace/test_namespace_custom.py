"""Deleting a namespace deletes the custom resources in it (discovered when the namespace is emptied,
as upstream's namespaced-resources deleter), waits for the ones a finalizer holds, and leaves other
namespaces and cluster-scoped custom resources alone."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from api import server as servers
from controllers import registry
from controllers.runtime import client as clients
from tests.controllers import crds
from tests.waiting import eventually


@pytest.fixture
async def controllers(srv: servers.Running) -> AsyncIterator[None]:
    stop, ready = asyncio.Event(), asyncio.Event()
    task = asyncio.ensure_future(registry.run_controllers(server_url=srv.url, names=["namespace"],
                                                          stop_event=stop, ready=ready))
    await asyncio.wait_for(ready.wait(), 10)
    yield
    stop.set()
    await asyncio.wait_for(task, 10)


def _conditions(ns: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {c["type"]: (c["status"], c["reason"], c["message"])
            for c in (ns.get("status") or {}).get("conditions") or []}


@pytest.mark.usefixtures("controllers")
async def test_a_namespace_takes_its_custom_resources_with_it(client: clients.Client) -> None:
    widgets = await crds.establish(client)  # defined after the controller started
    gizmos = await crds.establish(client, crds.definition(kind="Gizmo", plural="gizmos", scope="Cluster"))
    for ns in ("app", "other"):
        await client.create("namespaces", {"metadata": {"name": ns}})
        await client.create(widgets, {"apiVersion": "example.com/v1", "kind": "Widget",
                                      "metadata": {"name": "w", "namespace": ns}})
    await client.create(widgets, {"apiVersion": "example.com/v1", "kind": "Widget",
                                  "metadata": {"name": "held", "namespace": "app", "finalizers": ["example.com/hold"]}})
    await client.create(gizmos, {"apiVersion": "example.com/v1", "kind": "Gizmo", "metadata": {"name": "g"}})

    await client.delete("namespaces", "app")
    await eventually(lambda: crds.gone(client, widgets, "w", "app"), what="widget deleted")

    async def waiting() -> dict[str, tuple[str, str, str]] | None:
        got = _conditions(await client.get("namespaces", "app"))
        return got if got.get("NamespaceFinalizersRemaining", ("",))[0] == "True" else None

    conds = await eventually(waiting, what="finalizer reported")
    assert conds["NamespaceContentRemaining"][2] == ("Some resources are remaining: widgets.example.com has 1 "
                                                     "resource instances")
    assert conds["NamespaceFinalizersRemaining"][2] == ("Some content in the namespace has finalizers remaining: "
                                                        "example.com/hold in 1 resource instances")
    held = await client.get(widgets, "held", namespace="app")
    await client.patch(widgets, "held", {"metadata": {"finalizers": None,
                                                      "resourceVersion": held["metadata"]["resourceVersion"]}},
                       namespace="app")
    await eventually(lambda: crds.gone(client, "namespaces", "app"), within=20.0, what="namespace removed")
    assert not await crds.gone(client, widgets, "w", "other")
    assert not await crds.gone(client, gizmos, "g")
