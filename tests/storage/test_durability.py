"""kill -9 under load: every acknowledged write survives, revisions stay gapless, the log restarts.

In scope: a child process appending with 16 concurrent writers (group commit) is SIGKILLed; the
parent reopens the log. SQLite runs with the default durability (synchronous=NORMAL, WAL).
Out of scope: power loss (see docs/event-log.md, "Durability").
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from storage import factory, sql, sqlite
from tests.storage import writes

ROOT = Path(__file__).resolve().parents[2]
ACKS_BEFORE_KILL = 1500


async def test_acknowledged_writes_survive_kill_9(open_log, log_url: str) -> None:
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.storage.child_writer", "--url", log_url, "--prefix", "k",
        cwd=ROOT, stdout=asyncio.subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert child.stdout is not None
    acked: dict[int, tuple[str, str]] = {}  # revision -> (type, name)
    killed = False
    try:
        while True:
            line = await asyncio.wait_for(child.stdout.readline(), timeout=60)
            if not line:
                break
            parts = line.split()
            if parts[:1] == [b"ack"]:
                acked[int(parts[1])] = (parts[2].decode(), parts[3].decode())
                if len(acked) >= ACKS_BEFORE_KILL and not killed:
                    child.kill()  # SIGKILL, mid-load; keep reading what it already acknowledged
                    killed = True
    finally:
        if child.returncode is None and not killed:
            child.kill()
        await child.wait()
    assert killed and child.returncode == -9

    restarted: sql.SqlEventLog = await open_log()
    top = restarted.revision
    assert top >= max(acked)
    stored = await restarted.scan(start=1, end=top, limit=top + 1)
    assert [event.revision for event in stored] == list(range(1, top + 1))  # gapless
    by_revision = {event.revision: event for event in stored}
    for revision, (kind, name) in acked.items():
        event = by_revision[revision]
        assert (event.type, event.name) == (kind, name)
        assert writes.body(event)["metadata"]["resourceVersion"] == str(revision)
    # The restarted log goes on from there.
    assert (await restarted.append(writes.added("after-restart"))).revision == top + 1


async def test_durability_setting_selects_the_sqlite_sync_mode(tmp_path: Path) -> None:
    for durability, expected in (("normal", 1), ("full", 2)):
        event_log = factory.open_event_log(url=f"sqlite+aiosqlite:///{tmp_path / durability}.db",
                                           durability=durability)
        await event_log.start()
        try:
            assert isinstance(event_log, sqlite.SqliteEventLog)
            assert (await event_log._write_fetch("PRAGMA synchronous", ()))[0][0] == expected
            assert (await event_log._read("PRAGMA journal_mode", ()))[0][0] == "wal"
            assert (await event_log.append(writes.added("a"))).revision == 1
        finally:
            await event_log.close()
    with pytest.raises(ValueError, match="durability"):
        factory.open_event_log(url=f"sqlite+aiosqlite:///{tmp_path / 'x.db'}", durability="fsync")
