"""Fixtures for the scheduler: an in-process API server on the memory log driven by a VirtualClock,
a client, and `start_cluster(...)`, which runs the scheduler with the controllers around it — the
simulated fleet (Nodes, ResourceSlices, DeviceClasses, a kubelet that runs bound pods), the
ResourceClaim controller (claims from templates, deallocation when pods go) and, on request, the
garbage collector and the ReplicaSet/Deployment controllers — under one Manager."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from api import server as servers
from controllers import fleet as fleets
from controllers import registry, scheduler
from controllers.runtime import client as clients
from controllers.runtime import manager as managers
from cp import clock as clocks
from tests.controllers.scheduler.support import eventually
from tests.controllers.support import START

GPU_DRIVER = "gpu.example.com"
GPU_CLASS = "gpu.example.com"
EXTENDED_GPU = "example.com/gpu"

# Two GPU nodes with four GPUs each (models A100 and H100, so a "same model" constraint matters)
# and one node without devices.
FLEET = {
    "apiVersion": "sim.cplane.dev/v1alpha1", "kind": "Fleet", "metadata": {"name": "sched"},
    "deviceClasses": [{"name": "gpu-extended", "driver": GPU_DRIVER, "extendedResourceName": EXTENDED_GPU}],
    "nodePools": [
        {"name": "gpu-a", "count": 1, "labels": {"example.com/accelerator": "a100"},
         "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
         "drivers": [{"name": GPU_DRIVER, "devices": [{"type": "gpu", "count": 4, "model": "A100"}]}]},
        {"name": "gpu-h", "count": 1, "labels": {"example.com/accelerator": "h100"},
         "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
         "drivers": [{"name": GPU_DRIVER, "devices": [{"type": "gpu", "count": 4, "model": "H100"}]}]},
        {"name": "cpu", "count": 1, "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
    ],
}


@pytest.fixture
def clock() -> clocks.VirtualClock:
    return clocks.VirtualClock(start=START)


class Cluster:
    """The running controllers."""

    def __init__(self, manager: managers.Manager) -> None:
        self.manager = manager

    def controller(self, name: str) -> managers.Controller:
        return next(c for c in self.manager.controllers if c.name == name)

    @property
    def scheduler(self) -> scheduler.Scheduler:
        return scheduler.scheduler_of(self.controller(scheduler.NAME))

    def idle(self) -> bool:
        for c in self.manager.controllers:
            if c.queue is None or len(c.queue) or c.queue.processing:
                return False
        return True

    async def settle(self, within: float = 10.0) -> None:
        """Wait (bounded, real time) until every queue is idle now and on the next 5 polls."""
        quiet = 0

        def calm() -> bool:
            nonlocal quiet
            quiet = quiet + 1 if self.idle() else 0
            return quiet > 5

        await eventually(calm, within=within, what="the controllers to settle")


StartCluster = Callable[..., Awaitable[Cluster]]


@pytest.fixture
async def start_cluster(srv: servers.Running, clock: clocks.VirtualClock) -> AsyncIterator[StartCluster]:
    """`await start_cluster(fleet=FLEET, claims=True, workloads=False, **scheduler_kwargs)`."""
    stops: list[tuple[asyncio.Event, asyncio.Task[None], clients.Client]] = []

    async def start(*, fleet: dict[str, Any] | None = None, claims: bool = True, workloads: bool = False,
                    **kwargs: Any) -> Cluster:
        client = clients.Client(srv.url)
        manager = managers.Manager(client=client, clock=clock)
        ctx = manager.context()
        the_fleet = fleets.fleet_from_dict(fleet if fleet is not None else FLEET)
        manager.add(fleets.new(ctx, fleet=the_fleet, workers=8))
        if claims:
            manager.add(registry.CONTROLLERS["resourceclaim"](ctx))
        if workloads:
            for name in ("replicaset", "deployment", "garbage-collector"):
                manager.add(registry.CONTROLLERS[name](ctx))
        kwargs.setdefault("seed", 7)
        manager.add(scheduler.new(ctx, **kwargs))
        stop = asyncio.Event()
        task = asyncio.ensure_future(manager.run(stop))
        stops.append((stop, task, client))
        await asyncio.wait_for(manager.leading.wait(), 10)
        cluster = Cluster(manager)
        await wait_fleet(client, the_fleet)
        await cluster.settle()
        return cluster

    yield start
    for stop, task, client in stops:
        stop.set()
        # Work-around: WorkQueue.add_after replaces a key's timer on another clock without
        # cancelling it (a virtual-clock requeue_after, then a wall-clock retry after a conflict),
        # and aclose() then waits for it forever. Moving the virtual clock far ahead lets such
        # orphaned timers finish (into a queue that is shut down already).
        for _ in range(5):
            await asyncio.sleep(0)
        clock.advance(24 * 3600)
        await asyncio.wait_for(task, 10)
        await client.close()


async def wait_fleet(client: clients.Client, fleet: fleets.Fleet) -> None:
    """Until every Node of the fleet, a slice for each node with drivers and the classes exist."""
    with_devices = sum(p.count for p in fleet.node_pools if p.drivers)

    async def up() -> bool:
        have = (await client.list("nodes")).items
        slices = (await client.list("resourceslices.resource.k8s.io")).items
        classes = (await client.list("deviceclasses.resource.k8s.io")).items
        return (len(have) >= fleet.node_count() and len({s["spec"].get("nodeName") for s in slices}) >= with_devices
                and len(classes) >= 1)
    await eventually(up, what="fleet up")
