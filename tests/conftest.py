"""Shared fixtures: an in-process API server on a fresh store, and an HTTP client for it; for every
async test, a guard that fails the test if asyncio tasks it started are still pending; and for every
test, structlog's configuration put back after it (the `cplane` entry points configure it)."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
import structlog

from api import server as servers
from cp import logs

GRACE = 1.0  # seconds a test's leftover tasks get to finish before they count as leaked
PG_URL = os.environ.get("CPLANE_TEST_PG_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test")


def pytest_configure(config: pytest.Config) -> None:
    logs.CACHE_LOGGERS = False  # each test's log configuration holds for the loggers it uses
    config.addinivalue_line(
        "markers",
        "leftover_tasks(*coroutines, reason): tasks running these coroutines (qualified names, e.g. "
        "RequestHandler.start) may outlive the test: the leftover-task guard cancels them instead of failing")


@pytest.fixture(autouse=True)
def _no_leftover_tasks(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every async test runs under `_leftover_task_guard` (sync tests have no loop to check)."""
    if pytest_asyncio.is_async_test(request.node):
        request.getfixturevalue(_leftover_task_guard.__name__)
    yield


@pytest.fixture
async def _leftover_task_guard(request: pytest.FixtureRequest) -> AsyncIterator[None]:
    """Fail a test that leaves tasks running (kopf's `_no_asyncio_pending_tasks`). Set up before the
    test's other fixtures and torn down after them, so what the fixtures start and stop is fine."""
    async with no_leftover_tasks(request):
        yield


@contextlib.asynccontextmanager
async def no_leftover_tasks(request: pytest.FixtureRequest) -> AsyncIterator[None]:
    """The guard's check around a block: tasks started in it and still pending after it fail the test
    (tests/browser overrides the fixture to run it on the session's loop)."""
    marker = request.node.get_closest_marker("leftover_tasks")
    tolerated = set(marker.args) if marker is not None else set()
    before = asyncio.all_tasks()
    yield
    left = [t for t in asyncio.all_tasks() - before if not t.done() and t is not asyncio.current_task()]
    known = [t for t in left if _name(t) in tolerated]
    for task in known:
        task.cancel()
    await asyncio.gather(*known, return_exceptions=True)
    left = [t for t in left if t not in known]
    if left:  # give just-cancelled tasks and what finishes on its own (aiohttp's handlers) a moment
        await asyncio.wait(left, timeout=GRACE)
        left = [t for t in left if not t.done()]
    assert not left, f"tasks left behind: {[_where(t) for t in left]}"


def _name(task: asyncio.Task[object]) -> str:
    coro = task.get_coro()
    return str(getattr(coro, "__qualname__", repr(coro)))


def _where(task: asyncio.Task[object]) -> str:
    """A task's name, its coroutine and the chain of coroutines it waits in."""
    coro: Any = task.get_coro()
    chain: list[str] = []
    while coro is not None and getattr(coro, "cr_frame", None) is not None:
        code = coro.cr_frame.f_code
        where = code.co_filename.rsplit("site-packages/", 1)[-1]
        chain.append(f"{code.co_qualname} {where}:{coro.cr_frame.f_lineno}")
        coro = coro.cr_await
    return f"{task.get_name()} ({_name(task)}{' at ' + ' > '.join(chain[1:]) if chain[1:] else ''})"


@pytest.fixture(autouse=True)
def _restore_structlog() -> Iterator[None]:
    """CLI entry points configure structlog for their process; put the test process's config back."""
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


@pytest.fixture
async def api_server(tmp_path: Path) -> AsyncIterator[servers.Running]:
    """An API server (no controllers) on a fresh SQLite store in tmp_path."""
    async with servers.running(data_dir=tmp_path / "data", db_url=os.environ.get("CPLANE_TEST_DB")) as srv:
        yield srv


@pytest.fixture
async def http(api_server: servers.Running) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(base_url=api_server.url) as session:
        yield session
