"""The SQL logs' writes beyond the EventLog contract: several logs on one database, the refusals
before queueing, close and reopen, failed starts, one bad object in a group commit, `last_change`
across logs, and a wait for a revision another log writes.

In scope: `append()` on both backends (the `log_url` fixture runs each test on SQLite and PostgreSQL).
Out of scope: what every implementation does (test_event_log_contract.py); reads at past revisions,
watches, compaction, import/export (their own modules).
"""

from __future__ import annotations

import asyncio

import msgspec
import pytest
import sqlalchemy.exc

from storage import factory, log, sql
from tests.storage import writes
from tests.storage.conftest import OpenLog


async def test_racing_logs_on_one_database_only_one_wins(open_log, log_url: str) -> None:
    """Two EventLog instances (separate connections, as two servers would be) race on one key."""
    first, second = await open_log(), await open_log()
    created = await first.append(writes.added("web-0"))
    await second._catch_up()
    results = await asyncio.gather(
        *(lg.append(writes.modified(created, spec={"writer": i})) for i, lg in enumerate([first, second] * 5)),
        return_exceptions=True)
    assert sum(isinstance(r, log.Event) for r in results) == 1
    assert sum(isinstance(r, log.ConflictError) for r in results) == 9


async def test_invalid_writes_are_refused_before_queueing(event_log: sql.SqlEventLog) -> None:
    bad_added = msgspec.structs.replace(writes.added("web-0"), expected_revision=3)
    with pytest.raises(ValueError, match="ADDED"):
        await event_log.append(bad_added)
    with pytest.raises(ValueError, match="name"):
        await event_log.append(writes.added(""))
    assert event_log.revision == 0


async def test_append_after_close_fails_and_close_acknowledges_queued_writes(open_log) -> None:
    event_log = await open_log()
    # gather starts the appends (they queue) before close(), which must still acknowledge them.
    *appended, _ = await asyncio.gather(*(event_log.append(writes.added(f"p{i}")) for i in range(5)),
                                        event_log.close())
    assert [event.revision for event in appended] == [1, 2, 3, 4, 5]
    with pytest.raises(log.StorageError):
        await event_log.append(writes.added("late"))


async def test_reopening_continues_the_revisions(open_log, log_url: str) -> None:
    event_log = await open_log()
    for i in range(3):
        await event_log.append(writes.added(f"p{i}"))
    await event_log.close()
    reopened = await open_log()
    assert reopened.revision == 3
    assert (await reopened.append(writes.added("p3"))).revision == 4


async def test_a_failed_start_leaves_nothing_open(tmp_path) -> None:
    for url in ("postgresql+asyncpg://postgres@127.0.0.1:1/none",
                f"sqlite+aiosqlite:///{tmp_path / 'file'}/sub/cplane.db"):
        if "sqlite" in url:
            (tmp_path / "file").write_text("not a directory")
        event_log = factory.open_event_log(url=url)
        with pytest.raises((OSError, log.StorageError, sqlalchemy.exc.SQLAlchemyError)):
            await event_log.start()
        await event_log.close()
        with pytest.raises(log.StorageError):
            await event_log.append(writes.added("a"))


async def test_an_unencodable_object_fails_only_its_own_write(event_log: sql.SqlEventLog) -> None:
    bad = msgspec.structs.replace(writes.added("bad"), object={"metadata": {"name": "bad"}, "x": object()})
    results = await asyncio.gather(event_log.append(writes.added("a")), event_log.append(bad),
                                   event_log.append(writes.added("b")), return_exceptions=True)
    assert isinstance(results[1], ValueError)
    assert [r.revision for r in (results[0], results[2])] == [1, 2]  # type: ignore[union-attr]


async def test_last_change_follows_the_resources_writes_and_other_writers(open_log: OpenLog) -> None:
    """`last_change` lets the API keep small caches: it must move past what a reader saw as soon as
    the resource changes, by this log or by another one on the same database (another replica)."""
    first, second = await open_log(), await open_log()
    assert first.last_change(group="", resource="pods") <= first.revision
    pod = await first.append(writes.added("web-0"))
    assert first.last_change(group="", resource="pods") == pod.revision
    config = await first.append(writes.added("settings", resource="configmaps"))
    assert first.last_change(group="", resource="pods") == pod.revision  # another resource
    assert first.last_change(group="", resource="configmaps") == config.revision

    watch = await first.subscribe(group="", resource="pods", namespace=None, after=first.revision)
    remote = await second.append(writes.modified(pod, spec={"replicas": 3}))
    batch = await watch.next_batch(timeout=10)
    watch.close()
    assert batch is not None and batch[-1].revision == remote.revision
    assert first.last_change(group="", resource="pods") >= remote.revision


async def test_a_wait_for_revision_sees_another_logs_write(open_log: OpenLog, log_url: str) -> None:
    """Another log on the same database stands for another replica: a wait for a revision it has
    committed wakes the poller instead of waiting for the next poll."""
    first = factory.open_event_log(url=log_url)
    first.poll_interval = 60.0  # from its start: the poller wakes only when told to (or NOTIFY)
    await first.start()
    try:
        second = await open_log()
        await second.append(writes.added("from-elsewhere"))
        await asyncio.wait_for(first.wait_for_revision(revision=1), timeout=5)
        assert first.revision == 1
    finally:
        await first.close()
