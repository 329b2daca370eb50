"""Fixtures for the device taint evictor and health reporter: an in-process API server on the
memory log driven by a VirtualClock, a client, and the two controllers run by a Manager whose
queues the tests can inspect (to tell "nothing happened" from "not yet processed")."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from api import server as servers
from controllers import health, taint_evictor
from controllers.runtime import client as clients
from controllers.runtime import manager as managers
from cp import clock as clocks
from tests.controllers.support import START
from tests.waiting import eventually


@pytest.fixture
def clock() -> clocks.VirtualClock:
    return clocks.VirtualClock(start=START)


class Running:
    """The controllers under test, running."""

    def __init__(self, manager: managers.Manager) -> None:
        self.manager = manager

    def controller(self, name: str) -> managers.Controller:
        return next(c for c in self.manager.controllers if c.name == name)

    @property
    def evictor(self) -> taint_evictor.TaintEvictor:
        rec = self.controller(taint_evictor.NAME).reconciler
        assert isinstance(rec, taint_evictor.TaintEvictor)
        return rec

    def idle(self) -> bool:
        """No key queued or being processed (delayed keys may wait on the clock)."""
        for c in self.manager.controllers:
            if c.queue is None or len(c.queue) or c.queue.processing:
                return False
        return True

    async def settle(self, within: float = 5.0) -> None:
        """Wait (bounded, real time) until every queue is idle now and on the next 3 polls."""
        quiet = 0

        def calm() -> bool:
            nonlocal quiet
            quiet = quiet + 1 if self.idle() else 0
            return quiet > 3

        await eventually(calm, within=within, what="the controllers to settle")


StartControllers = Callable[..., Awaitable[Running]]


@pytest.fixture
async def start_controllers(srv: servers.Running, clock: clocks.VirtualClock) -> AsyncIterator[StartControllers]:
    """`await start_controllers(evictor=True, health=True, taint_unhealthy=None)`."""
    stops: list[tuple[asyncio.Event, asyncio.Task[None], clients.Client]] = []

    async def start(*, evictor: bool = True, reporter: bool = True, taint_unhealthy: str | None = None,
                    use_rules: bool = True) -> Running:
        client = clients.Client(srv.url)
        manager = managers.Manager(client=client, clock=clock)
        ctx = manager.context()
        if evictor:
            manager.add(taint_evictor.new(ctx, use_rules=use_rules))
        if reporter:
            manager.add(health.new(ctx, taint_unhealthy=taint_unhealthy))
        stop = asyncio.Event()
        task = asyncio.ensure_future(manager.run(stop))
        stops.append((stop, task, client))
        await asyncio.wait_for(manager.leading.wait(), 10)
        running = Running(manager)
        await running.settle()
        return running

    yield start
    for stop, task, client in stops:
        stop.set()
        await asyncio.wait_for(task, 10)
        await client.close()
