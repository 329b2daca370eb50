"""Fixtures for the batch controllers: an in-process API server driven by a VirtualClock and
`start_batch(...)`, which runs the Job controller (and, on request, TTL-after-finished and CronJob)
with what a batch pod needs around it — the simulated fleet (two nodes of four GPUs), the scheduler,
the ResourceClaim controller and the garbage collector — under one Manager."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable

import pytest

from api import server as servers
from controllers import fleet as fleets
from controllers import registry, scheduler
from controllers.runtime import client as clients
from controllers.runtime import manager as managers
from cp import clock as clocks
from tests.controllers.scheduler.conftest import Cluster, wait_fleet
from tests.controllers.support import START

GPU_DRIVER = "gpu.example.com"

FLEET = {
    "apiVersion": "sim.cplane.dev/v1alpha1", "kind": "Fleet", "metadata": {"name": "batch"},
    "nodePools": [
        {"name": "gpu", "count": 2, "capacity": {"cpu": "16", "memory": "64Gi", "pods": "110"},
         "drivers": [{"name": GPU_DRIVER, "devices": [{"type": "gpu", "count": 4, "model": "H100"}]}]},
    ],
}


@pytest.fixture
def clock() -> clocks.VirtualClock:
    return clocks.VirtualClock(start=START)


StartBatch = Callable[..., Awaitable[Cluster]]


@pytest.fixture
async def start_batch(srv: servers.Running, clock: clocks.VirtualClock) -> AsyncIterator[StartBatch]:
    """`await start_batch(extra=("ttl-after-finished",))`."""
    stops: list[tuple[asyncio.Event, asyncio.Task[None], clients.Client]] = []

    async def start(*, extra: Iterable[str] = ()) -> Cluster:
        client = clients.Client(srv.url)
        manager = managers.Manager(client=client, clock=clock)
        ctx = manager.context()
        the_fleet = fleets.fleet_from_dict(FLEET)
        manager.add(fleets.new(ctx, fleet=the_fleet, workers=8))
        for name in ("resourceclaim", "job", *extra):
            manager.add(registry.CONTROLLERS[name](ctx))
        manager.add(scheduler.new(ctx, seed=7))
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
        for _ in range(5):
            await asyncio.sleep(0)
        clock.advance(24 * 3600)  # lets timers of the virtual clock end (see the scheduler's conftest)
        await asyncio.wait_for(task, 10)
        await client.close()
