"""Several server processes on one PostgreSQL database.

In scope: writers racing in separate processes; a reader polling the table must never see a later
revision before an earlier one; a log in another process (here: the test's) gets every write, in
order, within 100 ms of its commit (LISTEN/NOTIFY). Out of scope: SQLite (one process per file).
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import asyncpg
import pytest

from storage import factory, log
from tests.storage import conftest

pytestmark = pytest.mark.postgres

ROOT = Path(__file__).resolve().parents[2]
PROCESSES = 3
TASKS = 4
PER_TASK = 60  # appends per writer task (multiple of 3)


async def start_writer(url: str, prefix: str) -> asyncio.subprocess.Process:
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.storage.child_writer", "--url", url, "--prefix", prefix,
        "--count", str(PER_TASK), "--tasks", str(TASKS), "--wait-for-go",
        cwd=ROOT, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert child.stdout is not None
    assert await asyncio.wait_for(child.stdout.readline(), timeout=60) == b"ready\n"
    return child


async def read_acks(child: asyncio.subprocess.Process) -> dict[int, float]:
    assert child.stdout is not None
    acks = {}
    while line := await asyncio.wait_for(child.stdout.readline(), timeout=60):
        parts = line.split()
        if parts[:1] == [b"ack"]:
            acks[int(parts[1])] = float(parts[4])
    assert await child.wait() == 0
    return acks


async def test_racing_processes_become_visible_in_revision_order(pg_url: str) -> None:
    total = PROCESSES * TASKS * PER_TASK
    schema = pg_url.rsplit("schema=", 1)[1]
    watcher = factory.open_event_log(url=pg_url)
    await watcher.start()
    children = []
    try:
        children = [await start_writer(pg_url, f"w{n}-") for n in range(PROCESSES)]
        subscription = await watcher.subscribe(group="", resource="pods", namespace=None, after=0)
        reader = await asyncpg.connect(conftest.pg_dsn(), server_settings={"search_path": schema})

        async def poll_table() -> int:
            """Reads the table as fast as it can; every read must continue exactly where the last ended."""
            last, reads = 0, 0
            while last < total:
                rows = await reader.fetch("SELECT revision FROM events WHERE revision > $1 ORDER BY revision", last)
                seen = [row[0] for row in rows]
                assert seen == list(range(last + 1, last + 1 + len(seen))), f"after {last} saw {seen[:5]}..."
                last += len(seen)
                reads += 1
            return reads

        async def watch() -> dict[int, float]:
            received: dict[int, float] = {}
            while len(received) < total:
                batch = await subscription.next_batch(timeout=30)
                assert batch, "stream ended or stalled"
                now = time.time()
                for event in batch:
                    received[event.revision] = now
            return received

        polling = asyncio.ensure_future(poll_table())
        watching = asyncio.ensure_future(watch())
        for child in children:
            assert child.stdin is not None
            child.stdin.write(b"go\n")
        acks: dict[int, float] = {}
        for child in children:
            acks.update(await read_acks(child))
        reads, received = await polling, await watching
        await reader.close()
    finally:
        for child in children:
            if child.returncode is None:
                child.kill()
                await child.wait()
        await watcher.close()

    assert sorted(acks) == list(range(1, total + 1))
    assert list(received) == list(range(1, total + 1))  # in revision order, no gap, no duplicate
    assert reads > 1
    lag = sorted(received[revision] - acked for revision, acked in acks.items())
    print(f"lag p50 {lag[len(lag) // 2] * 1000:.1f} ms max {lag[-1] * 1000:.1f} ms reads {reads}")
    assert lag[-1] <= 0.1, f"slowest delivery {lag[-1] * 1000:.1f} ms (p50 {lag[len(lag) // 2] * 1000:.1f} ms)"


async def test_a_write_in_one_process_reaches_a_watch_in_another(pg_url: str) -> None:
    first, second = (factory.open_event_log(url=pg_url) for _ in range(2))
    await first.start()
    await second.start()
    try:
        subscription = await second.subscribe(group="", resource="pods", namespace=None, after=0)
        for i in range(20):
            started = time.monotonic()
            event = await first.append(log.Write(
                type="ADDED", group="", resource="pods", namespace="x", name=f"p{i}",
                object={"metadata": {"name": f"p{i}"}}, expected_revision=0, time=time.time()))
            batch = await subscription.next_batch(timeout=5)
            assert batch == [event]
            assert time.monotonic() - started < 0.1
        assert second.revision == first.revision == 20
    finally:
        await first.close()
        await second.close()
