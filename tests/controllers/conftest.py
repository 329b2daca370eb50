"""Fixtures for controller tests: an in-process API server on the memory log, and a client for it
(the guard against leftover asyncio tasks is the root conftest's, for every async test)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from api import server as servers
from controllers.runtime import client as clients
from cp import clock as clocks


@pytest.fixture
def clock() -> clocks.Clock | None:
    """The server's clock: real time here; the fleet, scheduler and taint tests use a VirtualClock."""
    return None


@pytest.fixture
async def srv(tmp_path: Path, clock: clocks.Clock | None) -> AsyncIterator[servers.Running]:
    # The memory log keeps these tests fast; CPLANE_CONTROLLERS_TEST_DB=sqlite (or a URL) runs them
    # against the SQL event log instead.
    db = os.environ.get("CPLANE_CONTROLLERS_TEST_DB", "memory:")
    async with servers.running(data_dir=tmp_path / "data", db_url=None if db == "sqlite" else db,
                               clock=clock) as running:
        yield running


@pytest.fixture
async def client(srv: servers.Running) -> AsyncIterator[clients.Client]:
    async with clients.Client(srv.url) as c:
        yield c
