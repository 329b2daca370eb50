"""The event log's reads: get/list at the latest and at exact past revisions, pagination, `after`.

In scope: `get`, `list`, `history`, `after` on both backends, their revision checks
(FutureRevisionError, ExpiredError). Out of scope: how compaction chooses what to drop (see
test_event_log_compaction.py).
"""

from __future__ import annotations

import asyncio
import random

import pytest

from storage import log, sql
from tests.storage import writes


def names(result: log.ListResult) -> list[tuple[str, str]]:
    return [(event.namespace, event.name) for event in result.events]


async def test_list_orders_by_namespace_then_name_in_byte_order(event_log: sql.SqlEventLog) -> None:
    keys = [("b", "x"), ("a", "z"), ("a-b", "a"), ("a", "Z"), ("a", "a.b"), ("a", "a-b"), ("", "node")]
    for namespace, name in keys:
        await event_log.append(writes.added(name, namespace=namespace))
    result = await event_log.list_objects(group="", resource="pods", namespace=None)
    assert names(result) == sorted(keys)  # Python str order == byte order for ASCII
    assert result.revision == event_log.revision == len(keys) and not result.more
    only_a = await event_log.list_objects(group="", resource="pods", namespace="a")
    assert names(only_a) == sorted(k for k in keys if k[0] == "a")


async def test_list_has_only_live_objects_of_the_resource(event_log: sql.SqlEventLog) -> None:
    a = await event_log.append(writes.added("a"))
    await event_log.append(writes.added("b"))
    await event_log.append(writes.deleted(a))
    await event_log.append(writes.added("c", resource="services"))
    await event_log.append(writes.added("d", group="apps", resource="pods"))
    result = await event_log.list_objects(group="", resource="pods", namespace="default")
    assert [e.name for e in result.events] == ["b"]
    assert result.revision == 5


async def test_list_of_an_empty_resource_reports_the_current_revision(event_log: sql.SqlEventLog) -> None:
    await event_log.append(writes.added("a", resource="services"))
    result = await event_log.list_objects(group="", resource="pods", namespace=None)
    assert result.events == [] and result.revision == 1 and not result.more


async def test_time_travel_get_and_list(event_log: sql.SqlEventLog) -> None:
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


async def test_revisions_out_of_range(event_log: sql.SqlEventLog) -> None:
    a = await event_log.append(writes.added("a"))
    await event_log.append(writes.modified(a))
    for call in (lambda r: event_log.get(group="", resource="pods", namespace="default", name="a", revision=r),
                 lambda r: event_log.list_objects(group="", resource="pods", namespace=None, revision=r)):
        with pytest.raises(log.FutureRevisionError) as future:
            await call(3)
        assert (future.value.requested, future.value.current) == (3, 2)
        assert await call(2) is not None


async def test_paginated_list_is_pinned_to_the_first_page_revision(event_log: sql.SqlEventLog) -> None:
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


async def test_pagination_within_one_namespace(event_log: sql.SqlEventLog) -> None:
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


async def test_list_is_one_consistent_snapshot_under_concurrent_writes(event_log: sql.SqlEventLog) -> None:
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


async def test_history_and_after(event_log: sql.SqlEventLog) -> None:
    a = await event_log.append(writes.added("a"))
    b = await event_log.append(writes.added("b", resource="services"))
    a2 = await event_log.append(writes.modified(a))
    a3 = await event_log.append(writes.deleted(a2))
    a4 = await event_log.append(writes.added("a"))
    assert await event_log.history(group="", resource="pods", namespace="default", name="a") == [a, a2, a3, a4]
    assert await event_log.after(0) == [a, b, a2, a3, a4]
    assert await event_log.after(2, limit=2) == [a2, a3]
    assert await event_log.after(5) == []
