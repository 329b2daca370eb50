"""The EventLog contract (`storage/log.py`), run on every implementation: SQLite, PostgreSQL, memory,
and the replay log (forked, over an empty recording).

In scope: `append` (revisions, preconditions, races), `get`, `list_objects`, `history`, `after` at the
latest and at exact past revisions with their checks (FutureRevisionError, ExpiredError),
`subscribe` (replay + live hand-over without gap or duplicate, filters, order, progress, expired
start revisions) and `wait_for_revision`. Out of scope: what only the SQL logs do (group-commit
batches, several logs on one database, retention, the LIST cache, durability: test_sql_*.py).
"""

from __future__ import annotations

import asyncio
import collections
import random

import msgspec
import pytest

from storage import log, replay
from tests.storage import streams, writes
from tests.storage.streams import collect


@pytest.fixture
async def event_log(contract_log: log.EventLog) -> log.EventLog:
    """Here `event_log` is any implementation (conftest's `contract_log`), not only the SQL ones."""
    return contract_log


def names(result: log.ListResult) -> list[tuple[str, str]]:
    return [(event.namespace, event.name) for event in result.events]


async def test_list_orders_by_namespace_then_name_in_byte_order(event_log: log.EventLog) -> None:
    keys = [("b", "x"), ("a", "z"), ("a-b", "a"), ("a", "Z"), ("a", "a.b"), ("a", "a-b"), ("", "node")]
    for namespace, name in keys:
        await event_log.append(writes.added(name, namespace=namespace))
    result = await event_log.list_objects(group="", resource="pods", namespace=None)
    assert names(result) == sorted(keys)  # Python str order == byte order for ASCII
    assert result.revision == event_log.revision == len(keys) and not result.more
    only_a = await event_log.list_objects(group="", resource="pods", namespace="a")
    assert names(only_a) == sorted(k for k in keys if k[0] == "a")


async def test_list_has_only_live_objects_of_the_resource(event_log: log.EventLog) -> None:
    a = await event_log.append(writes.added("a"))
    await event_log.append(writes.added("b"))
    await event_log.append(writes.deleted(a))
    await event_log.append(writes.added("c", resource="services"))
    await event_log.append(writes.added("d", group="apps", resource="pods"))
    result = await event_log.list_objects(group="", resource="pods", namespace="default")
    assert [e.name for e in result.events] == ["b"]
    assert result.revision == 5


async def test_list_of_an_empty_resource_reports_the_current_revision(event_log: log.EventLog) -> None:
    await event_log.append(writes.added("a", resource="services"))
    result = await event_log.list_objects(group="", resource="pods", namespace=None)
    assert result.events == [] and result.revision == 1 and not result.more


async def test_time_travel_get_and_list(event_log: log.EventLog) -> None:
    states: dict[int, dict[str, int]] = {}  # revision -> {name: the object's revision}
    live: dict[str, log.Event] = {}
    rng = random.Random(7)
    for _ in range(120):
        name = f"p{rng.randrange(12)}"
        current = live.get(name)
        if current is None:
            event = await event_log.append(writes.added(name))
        elif rng.random() < 0.3:
            event = await event_log.append(writes.deleted(current))
        else:
            event = await event_log.append(writes.modified(current, spec={"n": rng.random()}))
        if event.type == "DELETED":
            live.pop(name)
        else:
            live[name] = event
        states[event.revision] = {n: e.revision for n, e in live.items()}

    for revision, expected in states.items():
        result = await event_log.list_objects(group="", resource="pods", namespace="default", revision=revision)
        assert result.revision == revision
        assert {e.name: e.revision for e in result.events} == expected
        assert [e.name for e in result.events] == sorted(expected)
        for name in ("p0", "p5"):
            got = await event_log.get(group="", resource="pods", namespace="default", name=name, revision=revision)
            assert (got.revision if got else None) == expected.get(name)
            if got is not None:
                assert writes.body(got)["metadata"]["resourceVersion"] == str(got.revision)


async def test_revisions_out_of_range(event_log: log.EventLog) -> None:
    a = await event_log.append(writes.added("a"))
    await event_log.append(writes.modified(a))
    for call in (lambda r: event_log.get(group="", resource="pods", namespace="default", name="a", revision=r),
                 lambda r: event_log.list_objects(group="", resource="pods", namespace=None, revision=r)):
        with pytest.raises(log.FutureRevisionError) as future:
            await call(3)
        assert (future.value.requested, future.value.current) == (3, 2)
        assert await call(2) is not None


async def test_revisions_and_limits_beyond_int64(event_log: log.EventLog) -> None:
    """A revision past the databases' 64-bit integers is a future one like any other (the SQL logs must
    not hand it to the driver); the largest int64 limit lists everything."""
    await event_log.append(writes.added("a"))
    await event_log.append(writes.added("b"))
    for revision in (log.MAX_REVISION, log.MAX_REVISION + 1, 1 << 64):
        with pytest.raises(log.FutureRevisionError) as future:
            await event_log.get(group="", resource="pods", namespace="default", name="a", revision=revision)
        assert (future.value.requested, future.value.current) == (revision, 2)
        with pytest.raises(log.FutureRevisionError):
            await event_log.list_objects(group="", resource="pods", namespace=None, revision=revision)
    for revision in (None, 2):
        listed = await event_log.list_objects(group="", resource="pods", namespace=None, revision=revision,
                                              limit=log.MAX_REVISION)
        assert [e.name for e in listed.events] == ["a", "b"] and not listed.more


async def test_paginated_list_is_pinned_to_the_first_page_revision(event_log: log.EventLog) -> None:
    created = {}
    for i in range(25):
        created[f"p{i:02d}"] = await event_log.append(writes.added(f"p{i:02d}", namespace=f"ns{i % 3}"))
    expected = await event_log.list_objects(group="", resource="pods", namespace=None)

    first = await event_log.list_objects(group="", resource="pods", namespace=None, limit=10)
    assert first.more and len(first.events) == 10 and first.revision == 25
    # The world moves on between pages.
    await event_log.append(writes.deleted(created["p03"]))
    await event_log.append(writes.added("p99", namespace="ns0"))
    await event_log.append(writes.modified(created["p10"], spec={"changed": True}))

    pages = [first]
    while pages[-1].more:
        last = pages[-1].events[-1]
        pages.append(await event_log.list_objects(group="", resource="pods", namespace=None, revision=first.revision,
                                          start_after=(last.namespace, last.name), limit=10))
    assert [len(p.events) for p in pages] == [10, 10, 5]
    assert all(p.revision == first.revision for p in pages)
    assert [e for p in pages for e in p.events] == expected.events


async def test_pagination_within_one_namespace(event_log: log.EventLog) -> None:
    for i in range(7):
        await event_log.append(writes.added(f"p{i}", namespace="x"))
        await event_log.append(writes.added(f"p{i}", namespace="y"))
    seen, start_after = [], None
    while True:
        page = await event_log.list_objects(group="", resource="pods", namespace="y", limit=3, start_after=start_after)
        seen += [e.name for e in page.events]
        if not page.more:
            break
        start_after = (page.events[-1].namespace, page.events[-1].name)
    assert seen == [f"p{i}" for i in range(7)]
    exact = await event_log.list_objects(group="", resource="pods", namespace="y", limit=7)
    assert len(exact.events) == 7 and not exact.more


async def test_list_is_one_consistent_snapshot_under_concurrent_writes(event_log: log.EventLog) -> None:
    events = await asyncio.gather(*(event_log.append(writes.added(f"p{i:03d}")) for i in range(100)))

    async def churn() -> None:
        for event in events[:60]:
            await event_log.append(writes.modified(event, spec={"x": 1}))

    async def lists() -> list[log.ListResult]:
        return [await event_log.list_objects(group="", resource="pods", namespace="default") for _ in range(10)]

    _, results = await asyncio.gather(churn(), lists())
    for result in results:
        # Everything in the list is at or below the list's revision, and the list equals the time-travel
        # list at that revision.
        assert max(e.revision for e in result.events) <= result.revision
        pinned = await event_log.list_objects(group="", resource="pods", namespace="default", revision=result.revision)
        assert pinned.events == result.events


async def test_history_and_after(event_log: log.EventLog) -> None:
    a = await event_log.append(writes.added("a"))
    b = await event_log.append(writes.added("b", resource="services"))
    a2 = await event_log.append(writes.modified(a))
    a3 = await event_log.append(writes.deleted(a2))
    a4 = await event_log.append(writes.added("a"))
    assert await event_log.history(group="", resource="pods", namespace="default", name="a") == [a, a2, a3, a4]
    assert await event_log.after(0) == [a, b, a2, a3, a4]
    assert await event_log.after(2, limit=2) == [a2, a3]
    assert await event_log.after(5) == []


# -------------------------------------------------------------------------------- writes


async def test_create_update_delete_assigns_gapless_revisions(event_log: log.EventLog) -> None:
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


async def test_the_callers_object_is_not_modified(event_log: log.EventLog) -> None:
    write = writes.added("web-0")
    await event_log.append(write)
    assert "resourceVersion" not in write.object["metadata"]


async def test_get_returns_the_stored_event(event_log: log.EventLog) -> None:
    created = await event_log.append(writes.added("web-0", namespace="prod", spec={"a": [1, "x"]}))
    got = await event_log.get(group="", resource="pods", namespace="prod", name="web-0")
    assert got == created
    assert await event_log.get(group="", resource="pods", namespace="default", name="web-0") is None
    assert await event_log.get(group="apps", resource="pods", namespace="prod", name="web-0") is None


async def test_the_latest_known_version_of_this_process_own_writes_is_the_stored_one(event_log: log.EventLog) -> None:
    key = {"group": "", "resource": "pods", "namespace": "prod", "name": "web-0"}
    await event_log.list_objects(group="", resource="pods", namespace=None)  # kept in memory where a log keeps objects
    created = await event_log.append(writes.added("web-0", namespace="prod"))
    await event_log.wait_for_revision(revision=created.revision)
    assert await event_log.get(**key, latest_known=True) == created
    changed = await event_log.append(writes.modified(created, spec={"a": 1}))
    await event_log.wait_for_revision(revision=changed.revision)
    assert await event_log.get(**key, latest_known=True) == changed
    await event_log.append(writes.deleted(changed))
    assert await event_log.get(**key) is None


async def test_added_on_an_existing_key_conflicts_with_the_live_event(event_log: log.EventLog) -> None:
    created = await event_log.append(writes.added("web-0"))
    with pytest.raises(log.ConflictError) as caught:
        await event_log.append(writes.added("web-0"))
    assert caught.value.current == created
    assert event_log.revision == 1


async def test_a_deleted_key_can_be_created_again(event_log: log.EventLog) -> None:
    created = await event_log.append(writes.added("web-0"))
    gone = await event_log.append(writes.deleted(created))
    again = await event_log.append(writes.added("web-0", uid="uid-2"))
    assert again.prev_revision == gone.revision
    assert again.uid == "uid-2"
    assert await event_log.get(group="", resource="pods", namespace="default", name="web-0") == again


async def test_stale_update_conflicts_with_the_current_event(event_log: log.EventLog) -> None:
    created = await event_log.append(writes.added("web-0"))
    updated = await event_log.append(writes.modified(created, spec={"v": 1}))
    for write in (writes.modified(created, spec={"v": 2}), writes.deleted(created)):
        with pytest.raises(log.ConflictError) as caught:
            await event_log.append(write)
        assert caught.value.current == updated


async def test_update_or_delete_of_an_absent_key_conflicts_with_none(event_log: log.EventLog) -> None:
    created = await event_log.append(writes.added("web-0"))
    gone = await event_log.append(writes.deleted(created))
    never = msgspec.structs.replace(created, name="never")
    for write in (writes.modified(created), writes.deleted(created), writes.modified(gone),
                  writes.modified(never)):
        with pytest.raises(log.ConflictError) as caught:
            await event_log.append(write)
        assert caught.value.current is None


async def test_racing_writers_from_one_revision_only_one_wins(event_log: log.EventLog) -> None:
    created = await event_log.append(writes.added("web-0"))
    results = await asyncio.gather(*(event_log.append(writes.modified(created, spec={"writer": i}))
                                     for i in range(20)), return_exceptions=True)
    winners = [r for r in results if isinstance(r, log.Event)]
    losers = [r for r in results if isinstance(r, log.ConflictError)]
    assert len(winners) == 1 and len(losers) == 19
    assert all(loser.current == winners[0] for loser in losers)
    assert event_log.revision == 2


async def test_racing_creators_of_one_key_only_one_wins(event_log: log.EventLog) -> None:
    results = await asyncio.gather(*(event_log.append(writes.added("web-0", uid=f"u{i}")) for i in range(10)),
                                   return_exceptions=True)
    assert collections.Counter(type(r).__name__ for r in results) == {"Event": 1, "ConflictError": 9}


async def test_concurrent_appends_are_group_committed_in_order(event_log: log.EventLog) -> None:
    events = await asyncio.gather(*(event_log.append(writes.added(f"pod-{i:03d}")) for i in range(200)))
    assert sorted(e.revision for e in events) == list(range(1, 201))
    assert [e.name for e in events] == [f"pod-{i:03d}" for i in range(200)]  # queue order = revision order
    assert [e.revision for e in events] == list(range(1, 201))
    assert event_log.revision == 200


async def test_writes_to_one_key_in_one_batch_chain(event_log: log.EventLog) -> None:
    created = await event_log.append(writes.added("web-0"))
    # Queued together: the second sees the first (same batch) and conflicts; the DELETE of the new
    # revision (known only after the first commits) is tested separately.
    first, second = await asyncio.gather(event_log.append(writes.modified(created, spec={"v": 1})),
                                         event_log.append(writes.modified(created, spec={"v": 2})),
                                         return_exceptions=True)
    assert isinstance(first, log.Event)
    assert isinstance(second, log.ConflictError) and second.current == first


# -------------------------------------------------------------------------------- watches


async def test_replays_history_then_delivers_live_events(event_log: log.EventLog) -> None:
    a = await event_log.append(writes.added("a"))
    await event_log.append(writes.added("x", resource="services"))
    a2 = await event_log.append(writes.modified(a))
    sub = await event_log.subscribe(group="", resource="pods", namespace=None, after=1)
    assert await sub.next_batch(timeout=5) == [a2]
    b = await event_log.append(writes.added("b", namespace="other"))
    assert await sub.next_batch(timeout=5) == [b]
    assert sub.revision == event_log.revision == 4


async def test_namespace_filter(event_log: log.EventLog) -> None:
    sub = await event_log.subscribe(group="", resource="pods", namespace="one", after=0)
    cluster = await event_log.subscribe(group="", resource="nodes", namespace="", after=0)
    await event_log.append(writes.added("a", namespace="two"))
    mine = await event_log.append(writes.added("b", namespace="one"))
    node = await event_log.append(writes.added("n", namespace="", resource="nodes"))
    assert await collect(sub, until=3) == [mine]
    assert await collect(cluster, until=3) == [node]


async def test_events_written_while_subscribing_are_neither_lost_nor_duplicated(
        event_log: log.EventLog) -> None:
    for i in range(300):
        await event_log.append(writes.added(f"seed-{i}"))

    async def writer(prefix: str) -> None:
        i = 0
        while event_log.revision < 900:
            await event_log.append(writes.added(f"{prefix}-{i}", namespace=prefix))
            i += 1

    writers = [asyncio.create_task(writer(f"w{n}")) for n in range(4)]
    subs = []
    for after in (0, 10, 150, 299):
        subs.append((after, None, await event_log.subscribe(group="", resource="pods", namespace=None,
                                                            after=after)))
        subs.append((after, "w1", await event_log.subscribe(group="", resource="pods", namespace="w1",
                                                            after=after)))
    assert event_log.revision < 900  # the subscriptions started while the writers were running
    await asyncio.gather(*writers)
    end = event_log.revision
    for after, namespace, sub in subs:
        got = await collect(sub, until=end)
        assert got == await streams.expected(event_log, resource="pods", namespace=namespace, after=after)


async def test_concurrent_writers_are_delivered_in_revision_order(event_log: log.EventLog) -> None:
    subs = [await event_log.subscribe(group="", resource="pods", namespace=None, after=0) for _ in range(3)]

    async def writer(n: int) -> None:
        event = await event_log.append(writes.added(f"w{n}"))
        for i in range(40):
            event = await event_log.append(writes.modified(event, spec={"i": i}))

    await asyncio.gather(*(writer(n) for n in range(8)))
    want = await streams.expected(event_log, resource="pods", namespace=None, after=0)
    assert [e.revision for e in want] == list(range(1, 329))
    for sub in subs:
        assert await collect(sub, until=event_log.revision) == want


async def test_progress_without_own_events(event_log: log.EventLog) -> None:
    await event_log.append(writes.added("a"))
    sub = await event_log.subscribe(group="", resource="pods", namespace=None, after=1)
    assert sub.revision == 1
    await event_log.append(writes.added("s", resource="services"))
    assert await sub.next_batch(timeout=0) == []
    assert sub.revision == 2  # a bookmark may say 2
    assert await sub.next_batch(timeout=0.01) == []  # times out with nothing new


async def test_subscribing_after_a_revision_not_yet_published(event_log: log.EventLog) -> None:
    await event_log.append(writes.added("a"))
    sub = await event_log.subscribe(group="", resource="pods", namespace=None, after=3)
    assert sub.revision == 3
    await event_log.append(writes.added("b"))
    await event_log.append(writes.added("c"))
    d = await event_log.append(writes.added("d"))
    assert await collect(sub, until=4) == [d]


async def test_expired_start_revisions(event_log: log.EventLog) -> None:
    a = await event_log.append(writes.added("a"))
    for i in range(5):
        a = await event_log.append(writes.modified(a, spec={"i": i}))
    await event_log.compact(3)
    if isinstance(event_log, replay.ReplayLog):  # a replay keeps every event it was given: nothing expires
        sub = await event_log.subscribe(group="", resource="pods", namespace=None, after=2)
        assert [e.revision for e in await collect(sub, until=6)] == [3, 4, 5, 6]
        return
    with pytest.raises(log.ExpiredError) as caught:
        await event_log.subscribe(group="", resource="pods", namespace=None, after=2)
    assert (caught.value.requested, caught.value.compacted) == (2, 3)
    sub = await event_log.subscribe(group="", resource="pods", namespace=None, after=3)
    assert [e.revision for e in await collect(sub, until=6)] == [4, 5, 6]


async def test_a_kept_wake_up_never_ends_a_wait_before_its_deadline(event_log: log.EventLog) -> None:
    """`next_batch` keeps its timer across calls while the next deadline is close after it; a timer
    that fires before the current deadline must only make the call wait again."""
    sub = await event_log.subscribe(group="", resource="pods", namespace=None, after=0)
    loop = asyncio.get_running_loop()
    waiting = asyncio.ensure_future(sub.next_batch(timeout=0.3))  # arms a wake-up at +0.3 s
    await asyncio.sleep(0)
    created = await event_log.append(writes.added("a"))
    assert await waiting == [created]  # woken by the event; the wake-up stays armed
    started = loop.time()
    assert await sub.next_batch(timeout=0.4) == []  # deadline after the armed wake-up: reused
    assert loop.time() - started >= 0.4
    sub.close()


# -------------------------------------------------------------------------------- waiting for a revision


async def test_wait_for_revision_returns_once_the_revision_is_written(event_log: log.EventLog) -> None:
    await event_log.append(writes.added("a"))
    await event_log.wait_for_revision(revision=1)  # written already: at once
    waiting = asyncio.ensure_future(event_log.wait_for_revision(revision=3))
    await event_log.append(writes.added("b"))
    await asyncio.sleep(0)
    assert not waiting.done()
    await event_log.append(writes.added("c"))
    await asyncio.wait_for(waiting, timeout=5)
    assert event_log.revision >= 3


async def test_a_timed_out_wait_for_revision_leaves_the_log_as_it_was(event_log: log.EventLog) -> None:
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.05):
            await event_log.wait_for_revision(revision=1)
    created = await event_log.append(writes.added("a"))
    assert created.revision == 1
    await asyncio.wait_for(event_log.wait_for_revision(revision=1), timeout=5)


async def test_close_ends_a_pending_wait_for_revision(event_log: log.EventLog) -> None:
    waiting = asyncio.ensure_future(event_log.wait_for_revision(revision=5))
    await asyncio.sleep(0)
    await event_log.close()
    with pytest.raises(log.StorageError):
        await asyncio.wait_for(waiting, timeout=5)
