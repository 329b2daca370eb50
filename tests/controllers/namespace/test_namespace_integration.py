"""The namespace controller (with the garbage collector, as `cplane serve` runs them) against an
in-process API server: deleting a namespace empties it of every kind and the server then removes
it; content holding a finalizer keeps the namespace Terminating with conditions saying why,
until the finalizer goes.

Out of scope: write-by-write behaviour (test_namespace_writes.py).
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
async def controllers(srv: servers.Running) -> AsyncIterator[None]:
    stop, ready = asyncio.Event(), asyncio.Event()
    task = asyncio.ensure_future(registry.run_controllers(kubeconfig=srv.kubeconfig, stop_event=stop, ready=ready))
    await asyncio.wait_for(ready.wait(), 10)
    yield
    stop.set()
    await asyncio.wait_for(task, 10)


async def _gone(client: clients.Client, name: str) -> bool:
    try:
        await client.get("namespaces", name)
    except errors.NotFound:
        return True
    return False


async def _fill(client: clients.Client, ns: str) -> None:
    await client.create("namespaces", {"metadata": {"name": ns}})
    for i in range(3):
        await client.create("configmaps", {"metadata": {"name": f"cm{i}", "namespace": ns}})
    await client.create("pods", {"metadata": {"name": "p", "namespace": ns},
                                 "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
    await client.create("leases.coordination.k8s.io", {"metadata": {"name": "l", "namespace": ns},
                                                        "spec": {"holderIdentity": "x"}})


def _conditions(ns: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in (ns.get("status") or {}).get("conditions") or []}


@pytest.mark.usefixtures("controllers")
async def test_deleting_a_namespace_empties_and_removes_it(client: clients.Client) -> None:
    await _fill(client, "app")
    await _fill(client, "neighbour")
    await client.delete("namespaces", "app")
    await eventually(lambda: _gone(client, "app"), what="namespace removed")
    for resource in ("configmaps", "pods", "leases.coordination.k8s.io"):
        assert (await client.list(resource, namespace="app")).items == []
        assert (await client.list(resource, namespace="neighbour")).items != []
    assert (await client.get("namespaces", "neighbour"))["status"]["phase"] == "Active"


@pytest.mark.usefixtures("controllers")
async def test_finalizer_on_content_holds_the_namespace(client: clients.Client) -> None:
    await _fill(client, "app")
    await client.create("configmaps", {"metadata": {"name": "held", "namespace": "app",
                                                    "finalizers": ["example.com/hold"]}})
    await client.delete("namespaces", "app")

    async def reports_the_holdout() -> bool:
        conds = _conditions(await client.get("namespaces", "app"))
        return conds.get("NamespaceFinalizersRemaining") == ("True", "SomeFinalizersRemain")

    await eventually(reports_the_holdout, what="conditions")
    ns = await client.get("namespaces", "app")
    assert ns["status"]["phase"] == "Terminating"
    assert _conditions(ns)["NamespaceContentRemaining"] == ("True", "SomeResourcesRemain")
    assert [o["metadata"]["name"] for o in (await client.list("configmaps", namespace="app")).items] == ["held"]
    with pytest.raises(errors.Forbidden):
        await client.create("configmaps", {"metadata": {"name": "late", "namespace": "app"}})
    # The holdout goes: its deletion event brings the controller back without waiting ~8.5 s.
    await client.patch("configmaps", "held", {"metadata": {"finalizers": None}}, namespace="app")
    await eventually(lambda: _gone(client, "app"), within=3, what="namespace removed")
