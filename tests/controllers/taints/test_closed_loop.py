"""The loop issue #6 closes, with every controller of the stack on one VirtualClock: a ReplicaSet's
pod runs on a simulated GPU (fleet + scheduler + resourceclaim controller); the GPU is reported
unhealthy → the health reporter taints it (remediation NoExecute) → the taint evictor deletes the
pod → the ReplicaSet recreates it → the scheduler allocates a healthy GPU; the rule then reports
`Completed`.

Out of scope: each step's details (the other tests in this directory and each controller's own).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from api import server as servers
from controllers import garbage_collector, health, taint_evictor
from controllers.runtime import client as clients
from controllers.runtime import manager as managers
from cp import clock as clocks
from tests.controllers.taints import support as s

fleets = pytest.importorskip("controllers.fleet")
scheduler = pytest.importorskip("controllers.scheduler")
replicaset = pytest.importorskip("controllers.replicaset")
resourceclaim = pytest.importorskip("controllers.resourceclaim")

DEMO = Path(__file__).resolve().parents[3] / "examples" / "fleets" / "demo.yaml"
CLAIMS = "resourceclaims.resource.k8s.io"


@pytest.fixture
async def stack(srv: servers.Running, clock: clocks.VirtualClock) -> AsyncIterator[managers.Manager]:
    if not DEMO.is_file():
        pytest.skip("no demo fleet")
    client = clients.Client(srv.url)
    manager = managers.Manager(client=client, clock=clock)
    ctx = manager.context()
    manager.add(fleets.new(ctx, fleet=fleets.load_fleet(DEMO)))
    for module in (scheduler, replicaset, resourceclaim, garbage_collector, taint_evictor):
        manager.add(module.new(ctx))
    manager.add(health.new(ctx, taint_unhealthy="NoExecute"))
    stop = asyncio.Event()
    task = asyncio.ensure_future(manager.run(stop))
    await asyncio.wait_for(manager.leading.wait(), 10)
    yield manager
    stop.set()
    await asyncio.wait_for(task, 10)
    await client.close()


async def _running_pods(client: clients.Client) -> list[dict[str, Any]]:
    return [p for p in (await client.list("pods", namespace="default")).items
            if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")]


async def _device_of(client: clients.Client, pod: dict[str, Any]) -> tuple[str, str, str]:
    name = pod["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
    claim = await client.get(CLAIMS, name, namespace="default")
    r = claim["status"]["allocation"]["devices"]["results"][0]
    return r["driver"], r["pool"], r["device"]


@pytest.mark.usefixtures("stack")
async def test_unhealthy_gpu_is_tainted_and_the_workload_moves(client: clients.Client,
                                                               clock: clocks.VirtualClock) -> None:
    await client.create("resourceclaimtemplates.resource.k8s.io", {
        "metadata": {"name": "one-gpu", "namespace": "default"},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
            "deviceClassName": "gpu.example.com"}}]}}}})
    await client.create("replicasets.apps", {
        "metadata": {"name": "train", "namespace": "default"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "train"}}, "template": {
            "metadata": {"labels": {"app": "train"}},
            "spec": {"terminationGracePeriodSeconds": 5,
                     "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
                     "containers": [{"name": "app", "image": "busybox",
                                     "resources": {"claims": [{"name": "gpu"}]}}]}}}})
    (first,) = await s.eventually(lambda: _running_pods(client), within=15, what="the first pod running")
    bad = await _device_of(client, first)

    await health.set_health(client, *bad, "Unhealthy", "XID 79")
    rule_name = health.rule_name_for(health.health_object_name(*bad))
    rule = await s.eventually(lambda: s.get_or_none(client, "devicetaintrules.resource.k8s.io", rule_name),
                              what="the DeviceTaintRule")
    assert rule["spec"]["taint"]["effect"] == "NoExecute"

    async def evicted() -> dict[str, Any] | None:
        pod = await s.get_or_none(client, "pods", first["metadata"]["name"], "default")
        return pod if pod is None or pod["metadata"].get("deletionTimestamp") else None

    await s.eventually(evicted, what="the pod evicted")

    # The fleet's kubelet finishes the graceful deletion on the clock; move it a second every 20
    # polls (bounded) until the replacement runs.
    polls = itertools.count()

    async def replacement() -> dict[str, Any] | None:
        if next(polls) % 20 == 0:
            clock.advance(1)
        running = [p for p in await _running_pods(client) if p["metadata"]["uid"] != first["metadata"]["uid"]]
        return running[0] if running else None

    second = await s.eventually(replacement, within=15, what="a replacement pod running")
    assert await _device_of(client, second) != bad

    clock.advance(10)

    async def completed() -> dict[str, Any] | None:
        cond = s.condition(await client.get("devicetaintrules.resource.k8s.io", rule_name), "EvictionInProgress")
        return cond if cond and cond["reason"] == "Completed" else None

    cond = await s.eventually(completed, what="the rule's eviction completed")
    assert cond["message"] == "1 pod evicted since starting the controller."
