"""The event log's writes: create/update/delete semantics, revisions, optimistic concurrency.

In scope: `append()` on both backends (the `log_url` fixture runs each test on SQLite and PostgreSQL).
Out of scope: reads at past revisions, watches, compaction, import/export (their own modules).
"""

from __future__ import annotations

import asyncio
import collections

import msgspec
import pytest
import sqlalchemy.exc

from storage import factory, log, sql
from tests.storage import writes
from tests.storage.conftest import OpenLog


async def test_create_update_delete_assigns_gapless_revisions(event_log: sql.SqlEventLog) -> None:
    assert event_log.revision == 0
    created = await event_log.append(writes.added("web-0"))
    updated = await event_log.append(writes.modified(created, spec={"replicas": 2}))
    gone = await event_log.append(writes.deleted(updated))

    assert [created.revision, updated.revision, gone.revision] == [1, 2, 3]
    assert [created.type, updated.type, gone.type] == ["ADDED", "MODIFIED", "DELETED"]
    assert [created.prev_revision, updated.prev_revision, gone.prev_revision] == [0, 1, 2]
    assert event_log.revision == 3
    for event in (created, updated, gone):
        assert writes.body(event)["metadata"]["resourceVersion"] == str(event.revision)
        assert event.uid == "uid-default-web-0"
        assert event.actor == writes.ACTOR
        assert (event.group, event.resource, event.namespace, event.name) == ("", "pods", "default", "web-0")
    assert writes.body(updated)["spec"] == {"replicas": 2}
    assert writes.body(gone)["spec"] == {"replicas": 2}  # DELETED carries the last state

    assert await event_log.get(group="", resource="pods", namespace="default", name="web-0") is None
    stored = await event_log.history(group="", resource="pods", namespace="default", name="web-0")
    assert stored == [created, updated, gone]


async def test_the_callers_object_is_not_modified(event_log: sql.SqlEventLog) -> None:
    write = writes.added("web-0")
    await event_log.append(write)
    assert "resourceVersion" not in write.object["metadata"]


async def test_get_returns_the_stored_event(event_log: sql.SqlEventLog) -> None:
    created = await event_log.append(writes.added("web-0", namespace="prod", spec={"a": [1, "x"]}))
    got = await event_log.get(group="", resource="pods", namespace="prod", name="web-0")
    assert got == created
    assert await event_log.get(group="", resource="pods", namespace="default", name="web-0") is None
    assert await event_log.get(group="apps", resource="pods", namespace="prod", name="web-0") is None


async def test_added_on_an_existing_key_conflicts_with_the_live_event(event_log: sql.SqlEventLog) -> None:
    created = await event_log.append(writes.added("web-0"))
    with pytest.raises(log.ConflictError) as caught:
        await event_log.append(writes.added("web-0"))
    assert caught.value.current == created
    assert event_log.revision == 1


async def test_a_deleted_key_can_be_created_again(event_log: sql.SqlEventLog) -> None:
    created = await event_log.append(writes.added("web-0"))
    gone = await event_log.append(writes.deleted(created))
    again = await event_log.append(writes.added("web-0", uid="uid-2"))
    assert again.prev_revision == gone.revision
    assert again.uid == "uid-2"
    assert await event_log.get(group="", resource="pods", namespace="default", name="web-0") == again


async def test_stale_update_conflicts_with_the_current_event(event_log: sql.SqlEventLog) -> None:
    created = await event_log.append(writes.added("web-0"))
    updated = await event_log.append(writes.modified(created, spec={"v": 1}))
    for write in (writes.modified(created, spec={"v": 2}), writes.deleted(created)):
        with pytest.raises(log.ConflictError) as caught:
            await event_log.append(write)
        assert caught.value.current == updated


async def test_update_or_delete_of_an_absent_key_conflicts_with_none(event_log: sql.SqlEventLog) -> None:
    created = await event_log.append(writes.added("web-0"))
    gone = await event_log.append(writes.deleted(created))
    never = msgspec.structs.replace(created, name="never")
    for write in (writes.modified(created), writes.deleted(created), writes.modified(gone),
                  writes.modified(never)):
        with pytest.raises(log.ConflictError) as caught:
            await event_log.append(write)
        assert caught.value.current is None


async def test_racing_writers_from_one_revision_only_one_wins(event_log: sql.SqlEventLog) -> None:
    created = await event_log.append(writes.added("web-0"))
    results = await asyncio.gather(*(event_log.append(writes.modified(created, spec={"writer": i}))
                                     for i in range(20)), return_exceptions=True)
    winners = [r for r in results if isinstance(r, log.Event)]
    losers = [r for r in results if isinstance(r, log.ConflictError)]
    assert len(winners) == 1 and len(losers) == 19
    assert all(loser.current == winners[0] for loser in losers)
    assert event_log.revision == 2


async def test_racing_creators_of_one_key_only_one_wins(event_log: sql.SqlEventLog) -> None:
    results = await asyncio.gather(*(event_log.append(writes.added("web-0", uid=f"u{i}")) for i in range(10)),
                                   return_exceptions=True)
    assert collections.Counter(type(r).__name__ for r in results) == {"Event": 1, "ConflictError": 9}


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


async def test_concurrent_appends_are_group_committed_in_order(event_log: sql.SqlEventLog) -> None:
    events = await asyncio.gather(*(event_log.append(writes.added(f"pod-{i:03d}")) for i in range(200)))
    assert sorted(e.revision for e in events) == list(range(1, 201))
    assert [e.name for e in events] == [f"pod-{i:03d}" for i in range(200)]  # queue order = revision order
    assert [e.revision for e in events] == list(range(1, 201))
    assert event_log.revision == 200


async def test_writes_to_one_key_in_one_batch_chain(event_log: sql.SqlEventLog) -> None:
    created = await event_log.append(writes.added("web-0"))
    # Queued together: the second sees the first (same batch) and conflicts; the DELETE of the new
    # revision (known only after the first commits) is tested separately.
    first, second = await asyncio.gather(event_log.append(writes.modified(created, spec={"v": 1})),
                                         event_log.append(writes.modified(created, spec={"v": 2})),
                                         return_exceptions=True)
    assert isinstance(first, log.Event)
    assert isinstance(second, log.ConflictError) and second.current == first


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
