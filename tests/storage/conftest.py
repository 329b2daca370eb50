"""Storage fixtures: the EventLog contract suite runs on every implementation (`contract_log`:
SQLite, PostgreSQL, memory); the SQL logs' own tests on both databases (`log_url`, `open_log`).

PostgreSQL is the server at env CPLANE_TEST_PG_URL (default postgresql+asyncpg://postgres@127.0.0.1:5432/test).
Each PostgreSQL test gets a fresh schema (`?schema=` on the URL, i.e. its search_path), dropped after
the test. When the server is unreachable the PostgreSQL tests skip and the run ends with a notice,
unless CPLANE_REQUIRE_PG=1 (CI), where an unreachable server fails them.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import asyncpg
import pytest

from storage import compaction, factory, log, memory, recording, replay, sql
from tests.recordings import recorded as recorded  # a recorded run, for the recording-source tests

PG_URL = os.environ.get("CPLANE_TEST_PG_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test")
REQUIRE_PG = os.environ.get("CPLANE_REQUIRE_PG") == "1"
BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
IMPLEMENTATIONS = [*BACKENDS, "memory", "replay"]  # of storage.log.EventLog

_pg_unreachable: list[str] = []  # the reason, once known
_pg_checked: list[bool] = []

OpenLog = Callable[..., Awaitable[sql.SqlEventLog]]


def pg_dsn() -> str:
    return PG_URL.replace("postgresql+asyncpg://", "postgresql://", 1)


async def require_pg() -> None:
    """Skip (or fail, under CPLANE_REQUIRE_PG=1) when PostgreSQL is unreachable."""
    if not _pg_checked:
        _pg_checked.append(True)
        try:
            connection = await asyncpg.connect(pg_dsn(), timeout=5)
            await connection.close()
        except (OSError, asyncpg.PostgresError, TimeoutError) as error:
            _pg_unreachable.append(f"{type(error).__name__}: {error}")
    if _pg_unreachable:
        message = f"PostgreSQL unreachable at {PG_URL}: {_pg_unreachable[0]}"
        if REQUIRE_PG:
            pytest.fail(f"{message} (CPLANE_REQUIRE_PG=1)")
        pytest.skip(message)


async def _drop_schema(name: str) -> None:
    connection = await asyncpg.connect(pg_dsn())
    try:
        await connection.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
    finally:
        await connection.close()


@contextlib.asynccontextmanager
async def fresh_pg_url() -> AsyncIterator[str]:
    """A PostgreSQL event-log URL on a fresh schema, dropped afterwards."""
    await require_pg()
    schema = f"cplane_test_{uuid.uuid4().hex[:12]}"
    separator = "&" if "?" in PG_URL else "?"
    try:
        yield f"{PG_URL}{separator}schema={schema}"
    finally:
        await _drop_schema(schema)


@pytest.fixture
async def pg_url() -> AsyncIterator[str]:
    async with fresh_pg_url() as url:
        yield url


@pytest.fixture(params=BACKENDS)
async def log_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'cplane.db'}"
    else:
        async with fresh_pg_url() as url:
            yield url


@pytest.fixture
async def open_log(log_url: str) -> AsyncIterator[OpenLog]:
    """Open (and start) logs on the test's database; all are closed after the test."""
    opened: list[sql.SqlEventLog] = []

    async def _open(*, retention: compaction.Retention | None = None, url: str | None = None,
                    subscriber_buffer: int | None = None) -> sql.SqlEventLog:
        event_log = factory.open_event_log(url=url or log_url, retention=retention)
        if subscriber_buffer is not None:
            event_log._broadcaster.buffer_limit = subscriber_buffer
        await event_log.start()
        opened.append(event_log)
        return event_log

    try:
        yield _open
    finally:
        for event_log in reversed(opened):
            await event_log.close()


@pytest.fixture
async def event_log(open_log: OpenLog) -> sql.SqlEventLog:
    return await open_log()


def _forked_replay() -> log.EventLog:
    """The replay log (`cplane replay --fork`) over an empty recording, forked at once: a writable log."""
    replay_log = replay.ReplayLog(recording.Recording.from_ndjson([], description="empty"))
    replay_log.fork()
    return replay_log


@pytest.fixture(params=IMPLEMENTATIONS)
async def contract_log(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[log.EventLog]:
    """A started, empty log of each implementation; closed after the test."""
    event_log: log.EventLog
    if request.param in ("memory", "replay"):
        event_log = memory.MemoryEventLog() if request.param == "memory" else _forked_replay()
        await event_log.start()
        try:
            yield event_log
        finally:
            await event_log.close()
        return
    async with contextlib.AsyncExitStack() as stack:
        if request.param == "sqlite":
            url = f"sqlite+aiosqlite:///{tmp_path / 'cplane.db'}"
        else:
            url = await stack.enter_async_context(fresh_pg_url())
        event_log = factory.open_event_log(url=url)
        await event_log.start()
        stack.push_async_callback(event_log.close)
        yield event_log


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _pg_unreachable and not REQUIRE_PG:
        terminalreporter.write_sep("!", "PostgreSQL tests SKIPPED", yellow=True, bold=True)
        terminalreporter.write_line(f"PostgreSQL unreachable at {PG_URL}: {_pg_unreachable[0]}")
        terminalreporter.write_line("Only the SQLite backend was tested. CI sets CPLANE_REQUIRE_PG=1 to fail instead.")
