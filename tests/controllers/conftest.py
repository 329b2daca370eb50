"""Fixtures for controller tests: an in-process API server on the memory log, a client for it,
a bounded polling helper, and a guard that fails any test leaving asyncio tasks behind."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from api import server as servers
from controllers.runtime import client as clients


@pytest.fixture
async def srv(tmp_path: Path) -> AsyncIterator[servers.Running]:
    # The memory log keeps these tests fast; CPLANE_CONTROLLERS_TEST_DB=sqlite (or a URL) runs them
    # against the SQL event log instead.
    db = os.environ.get("CPLANE_CONTROLLERS_TEST_DB", "memory:")
    async with servers.running(data_dir=tmp_path / "data", db_url=None if db == "sqlite" else db) as running:
        yield running


@pytest.fixture
async def client(srv: servers.Running) -> AsyncIterator[clients.Client]:
    async with clients.Client(srv.url) as c:
        yield c


@pytest.fixture(autouse=True)
async def _no_leftover_tasks() -> AsyncIterator[None]:
    """Fail a test that leaves tasks running (kopf's `_no_asyncio_pending_tasks`)."""
    before = asyncio.all_tasks()
    yield
    # Give just-cancelled tasks and aiohttp internals one chance to finish.
    for _ in range(3):
        await asyncio.sleep(0)
    left = [t for t in asyncio.all_tasks() - before if not t.done() and t is not asyncio.current_task()]
    assert not left, f"tasks left behind: {[t.get_name() for t in left]}"
