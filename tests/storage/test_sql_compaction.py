"""Compaction and retention: what survives, what becomes ExpiredError, and that nothing else changes.

In scope: `compact()`, `apply_retention()` with revision and age limits, compaction in windows,
a second log on the same database seeing the compaction. Out of scope: watches from compacted
revisions (test_event_log_contract.py, test_sql_watch.py).
"""

from __future__ import annotations

import time

import pytest

from storage import compaction, log, sql
from tests.storage import writes
from tests.storage.writes import churn


async def snapshot(event_log: sql.SqlEventLog, revision: int) -> list[log.Event]:
    return (await event_log.list_objects(group="", resource="pods", namespace=None, revision=revision)).events


@pytest.mark.parametrize("window", [compaction.WINDOW, 7])
async def test_compaction_keeps_every_read_above_it(event_log: sql.SqlEventLog, window: int,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compaction, "WINDOW", window)
    await churn(event_log, steps=200)
    top = event_log.revision
    before = {r: await snapshot(event_log, r) for r in range(101, top + 1)}
    at_100 = await snapshot(event_log, 100)

    await event_log.compact(100)
    assert event_log.compacted_revision == 100
    for revision, events in before.items():
        assert await snapshot(event_log, revision) == events
    # The newest event of each key live at 100 survived; superseded rows and deleted keys did not.
    retained = await event_log.scan(start=1, end=100, limit=1000)
    assert sorted(e.revision for e in retained) == sorted(e.revision for e in at_100)
    assert await event_log.after(100, limit=1000) == [e for e in await event_log.scan(start=101, end=top, limit=1000)]


async def test_compacted_revisions_are_expired(event_log: sql.SqlEventLog) -> None:
    await churn(event_log, steps=30)
    await event_log.compact(20)
    for revision in (1, 20):
        with pytest.raises(log.ExpiredError) as caught:
            await event_log.list_objects(group="", resource="pods", namespace=None, revision=revision)
        assert (caught.value.requested, caught.value.compacted) == (revision, 20)
        with pytest.raises(log.ExpiredError):
            await event_log.get(group="", resource="pods", namespace="a", name="p1", revision=revision)
    with pytest.raises(log.ExpiredError):
        await event_log.after(19)
    await event_log.list_objects(group="", resource="pods", namespace=None, revision=21)
    await event_log.compact(10)  # older than the compaction point: nothing to do
    assert event_log.compacted_revision == 20


async def test_the_newest_revision_is_never_compacted(event_log: sql.SqlEventLog) -> None:
    a = await event_log.append(writes.added("a"))
    gone = await event_log.append(writes.deleted(a))
    with pytest.raises(log.FutureRevisionError):
        await event_log.compact(3)
    await event_log.compact(2)
    assert event_log.compacted_revision == 1
    # Row 1 is superseded only by revision 2, above the compaction point: it stays.
    assert await event_log.history(group="", resource="pods", namespace="default", name="a") == [a, gone]
    first = await event_log.list_objects(group="", resource="pods", namespace=None, limit=1)
    assert first.revision == 2 and first.events == []
    # Revisions go on after compacting deleted keys, and the key can be created again.
    again = await event_log.append(writes.added("a"))
    assert again.revision == 3


async def test_deleted_keys_disappear_with_their_history(event_log: sql.SqlEventLog) -> None:
    a = await event_log.append(writes.added("a"))
    a = await event_log.append(writes.modified(a))
    await event_log.append(writes.deleted(a))
    b = await event_log.append(writes.added("b"))
    await event_log.append(writes.added("c"))
    await event_log.compact(4)
    assert await event_log.history(group="", resource="pods", namespace="default", name="a") == []
    assert await event_log.history(group="", resource="pods", namespace="default", name="b") == [b]
    again = await event_log.append(writes.added("a"))
    assert again.prev_revision == 0 and again.revision == 6


async def test_retention_by_revisions(open_log) -> None:
    event_log = await open_log(retention=compaction.Retention(keep_revisions=10))
    await churn(event_log, steps=50)
    assert await event_log.apply_retention() == 40
    assert event_log.compacted_revision == 40


async def test_retention_by_age(open_log) -> None:
    event_log = await open_log(retention=compaction.Retention(keep_seconds=3600))
    await churn(event_log, steps=30, at=time.time() - 7200)  # two hours old
    await churn(event_log, steps=10, prefix="q")  # now
    assert await event_log.apply_retention() == 30


async def test_retention_with_both_limits_keeps_the_longer_history(open_log) -> None:
    event_log = await open_log(retention=compaction.Retention(keep_revisions=25, keep_seconds=3600))
    await churn(event_log, steps=30, at=time.time() - 7200)
    await churn(event_log, steps=10, prefix="q")
    assert await event_log.apply_retention() == 15  # the age limit alone would allow 30


async def test_without_retention_nothing_is_compacted(event_log: sql.SqlEventLog) -> None:
    await churn(event_log, steps=20, at=0.0)
    assert await event_log.apply_retention() == 0


async def test_another_log_on_the_database_sees_the_compaction(open_log) -> None:
    first, second = await open_log(), await open_log()
    await churn(first, steps=30)
    await first.compact(20)
    with pytest.raises(log.ExpiredError):
        await second.list_objects(group="", resource="pods", namespace=None, revision=15)
    assert second.compacted_revision == 20
    await second.compact(20)  # already done by the other one: no-op
    await second.compact(25)
    assert first.revision == 30
    with pytest.raises(log.ExpiredError):
        await first.get(group="", resource="pods", namespace="a", name="p1", revision=24)
