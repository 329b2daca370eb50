"""The disruption controller (through `run_controllers`) against an in-process API server: a budget's
status follows the ready pods it selects and the scale of their ReplicaSet (or of a custom
controller's scale subresource), the eviction subresource
spends what it allows, and the pods it evicted leave `disruptedPods` once they are gone.

Out of scope: the arithmetic case by case (tests/cp/test_disruption.py), the eviction answers
(tests/api/test_eviction.py).
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
from tests.controllers import crds
from tests.waiting import eventually

NS = "default"


@pytest.fixture
async def controllers(srv: servers.Running) -> AsyncIterator[None]:
    stop, ready = asyncio.Event(), asyncio.Event()
    task = asyncio.ensure_future(registry.run_controllers(server_url=srv.url, names=["disruption"],
                                                          stop_event=stop, ready=ready))
    await asyncio.wait_for(ready.wait(), 10)
    yield
    stop.set()
    await asyncio.wait_for(task, 10)


async def _replica_set(client: clients.Client, replicas: int) -> dict[str, Any]:
    return await client.create("replicasets.apps", {
        "metadata": {"name": "web", "namespace": NS},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})


async def _ready_pod(client: clients.Client, name: str, owner: dict[str, Any] | None = None) -> None:
    meta: dict[str, Any] = {"name": name, "namespace": NS, "labels": {"app": "web"}}
    if owner is not None:
        meta["ownerReferences"] = [{"apiVersion": owner.get("apiVersion", "apps/v1"),
                                    "kind": owner.get("kind", "ReplicaSet"), "name": owner["metadata"]["name"],
                                    "uid": owner["metadata"]["uid"], "controller": True}]
    pod = await client.create("pods", {"metadata": meta, "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
    pod["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    await client.update_status("pods", pod)


async def _status(client: clients.Client, name: str = "web") -> dict[str, Any]:
    return dict((await client.get("poddisruptionbudgets.policy", name, namespace=NS)).get("status") or {})


async def _evict(client: clients.Client, name: str) -> int:
    path = f"/api/v1/namespaces/{NS}/pods/{name}/eviction"
    try:
        await client.request("POST", path, body={"apiVersion": "policy/v1", "kind": "Eviction",
                                                 "metadata": {"name": name, "namespace": NS}})
    except errors.StatusError as exc:
        return exc.code
    return 201


@pytest.mark.usefixtures("controllers")
async def test_budget_status_follows_pods_and_evictions(client: clients.Client) -> None:
    for name in ("a", "b", "c"):
        await _ready_pod(client, name)
    await client.create("poddisruptionbudgets.policy", {
        "metadata": {"name": "web", "namespace": NS},
        "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}})

    async def computed() -> bool:
        s = await _status(client)
        return (s.get("observedGeneration"), s.get("currentHealthy"), s.get("desiredHealthy"),
                s.get("expectedPods"), s.get("disruptionsAllowed")) == (1, 3, 2, 3, 1)

    await eventually(computed, what="the controller computes the budget's status")
    cond = (await _status(client))["conditions"][0]
    assert (cond["type"], cond["status"], cond["reason"]) == ("DisruptionAllowed", "True", "SufficientPods")

    assert await _evict(client, "a") == 201
    assert await _evict(client, "b") == 429

    async def settled() -> bool:
        s = await _status(client)
        return (s.get("currentHealthy"), s.get("expectedPods"), s.get("disruptionsAllowed"),
                s.get("disruptedPods")) == (2, 2, 0, None)

    await eventually(settled, what="the evicted pod leaves disruptedPods once it is gone")
    await _ready_pod(client, "d")

    async def allows_again() -> bool:
        return (await _status(client)).get("disruptionsAllowed") == 1

    await eventually(allows_again, what="a new ready pod allows a disruption again")
    assert await _evict(client, "b") == 201


@pytest.mark.usefixtures("controllers")
async def test_percentages_count_the_controllers_scale(client: clients.Client) -> None:
    rs = await _replica_set(client, 4)
    for name in ("a", "b", "c"):
        await _ready_pod(client, name, owner=rs)
    await client.create("poddisruptionbudgets.policy", {
        "metadata": {"name": "web", "namespace": NS},
        "spec": {"maxUnavailable": "25%", "selector": {"matchLabels": {"app": "web"}}}})

    async def computed() -> bool:
        s = await _status(client)
        return (s.get("currentHealthy"), s.get("desiredHealthy"), s.get("expectedPods"),
                s.get("disruptionsAllowed")) == (3, 3, 4, 0)

    await eventually(computed, what="4 expected from the ReplicaSet's scale, 1 of them may be unavailable")
    await client.patch("replicasets.apps", "web", {"spec": {"replicas": 3}}, namespace=NS, subresource="scale")

    async def rescaled() -> bool:
        s = await _status(client)
        return (s.get("desiredHealthy"), s.get("expectedPods"), s.get("disruptionsAllowed")) == (2, 3, 1)

    await eventually(rescaled, what="the budget follows the ReplicaSet's scale")

    await _ready_pod(client, "orphan-owner", owner={"metadata": {"name": "gone", "uid": "no-such-uid"}})

    async def failed() -> bool:
        s = await _status(client)
        conds = s.get("conditions") or [{}]
        return s.get("disruptionsAllowed") == 0 and conds[0].get("reason") == "SyncFailed"

    await eventually(failed, what="a pod whose controller is missing makes the budget fail safe")


@pytest.mark.usefixtures("controllers")
async def test_a_stale_disruption_target_is_reset(client: clients.Client) -> None:
    await _ready_pod(client, "kept")
    pod = await client.get("pods", "kept", namespace=NS)
    long_ago = "2020-01-01T00:00:00Z"  # an eviction marked it long ago and its deletion never came
    pod["status"]["conditions"].append({"type": "DisruptionTarget", "status": "True", "lastTransitionTime": long_ago,
                                        "reason": "EvictionByEvictionAPI", "message": "Eviction API: evicting"})
    await client.update_status("pods", pod)

    async def reset() -> bool:
        p = await client.get("pods", "kept", namespace=NS)
        cond = next(c for c in p["status"]["conditions"] if c["type"] == "DisruptionTarget")
        return cond["status"] == "False" and cond["reason"] == "EvictionByEvictionAPI"

    await eventually(reset, what="the controller resets a stale DisruptionTarget condition")


@pytest.mark.usefixtures("controllers")
async def test_a_custom_controller_counts_through_its_scale_subresource(client: clients.Client) -> None:
    widgets = await crds.establish(client)  # defined after the controller started: found by discovery
    widget = await client.create(widgets, {"apiVersion": "example.com/v1", "kind": "Widget",
                                           "metadata": {"name": "web", "namespace": NS}, "spec": {"replicas": 4}})
    owner = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": widget["metadata"]}
    for name in ("a", "b", "c"):
        await _ready_pod(client, name, owner=owner)
    await client.create("poddisruptionbudgets.policy", {
        "metadata": {"name": "web", "namespace": NS},
        "spec": {"maxUnavailable": "25%", "selector": {"matchLabels": {"app": "web"}}}})

    async def computed() -> bool:
        s = await _status(client)
        return (s.get("currentHealthy"), s.get("desiredHealthy"), s.get("expectedPods"),
                s.get("disruptionsAllowed")) == (3, 3, 4, 0)

    await eventually(computed, what="4 expected from the Widget's scale")
