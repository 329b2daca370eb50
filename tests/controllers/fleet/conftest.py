"""Fixtures for fleet tests: an in-process API server on a VirtualClock (memory log), a client,
and `running_fleet(...)`, which runs the fleet controller under a Manager on the same clock."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from api import server as servers
from controllers import fleet as fleets
from controllers.runtime import client as clients
from controllers.runtime import manager as managers
from cp import clock as clocks
from tests.controllers.support import START

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples" / "fleets"


@pytest.fixture
def clock() -> clocks.VirtualClock:
    return clocks.VirtualClock(start=START)


@pytest.fixture
def root() -> Iterator[Path]:
    """A short kubelet root: unix socket paths must stay under 108 bytes."""
    path = Path(tempfile.mkdtemp(prefix="cp-", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@contextlib.asynccontextmanager
async def running_fleet(srv: servers.Running, clock: clocks.Clock, fleet: fleets.Fleet | None, *,
                        workers: int = 8, kubelet_root: Path | None = None) -> AsyncIterator[managers.Controller]:
    """The fleet controller, alone under a Manager, until the block exits (with the nodes' kubelet
    directories under `kubelet_root` when given)."""
    client = clients.Client(srv.url)
    manager = managers.Manager(client=client, clock=clock, name="test-fleet")
    controller = fleets.new(manager.context(), fleet=fleet, workers=workers, kubelet_root=kubelet_root)
    manager.add(controller)
    stop = asyncio.Event()
    task = asyncio.get_running_loop().create_task(manager.run(stop), name="test:fleet-manager")
    try:
        await asyncio.wait_for(manager.leading.wait(), 10)
        yield controller
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)
        await client.close()


@pytest.fixture
def demo() -> fleets.Fleet:
    return fleets.load_fleet(EXAMPLES / "demo.yaml")
