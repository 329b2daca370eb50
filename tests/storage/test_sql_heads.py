"""LISTs served from memory (`storage.heads`) answer exactly as the database does.

In scope: the SQL backends' `list_objects()` with the head cache on, compared with the database read
(`_list_stored`) after every change: writes, deletes, re-creates, other processes' writes (a second
log on the same database), pagination pinned to a revision, namespaces, skipped revisions (import)
and the size bound. Out of scope: what the API does with the results (tests/api).
"""

from __future__ import annotations

import random

import pytest

from storage import heads, log, sql
from tests.storage import writes
from tests.storage.conftest import OpenLog

PODS = {"group": "", "resource": "pods"}


async def _both(event_log: sql.SqlEventLog, **query: object) -> tuple[log.ListResult, log.ListResult]:
    """(served by `list_objects`, read from the database at the same revision)."""
    args: dict[str, object] = {"namespace": None, "start_after": None, "limit": None, "revision": None, **query}
    served = await event_log.list_objects(**PODS, **args)  # type: ignore[arg-type]
    args["revision"] = served.revision
    stored = await event_log._list_stored(PODS["group"], PODS["resource"], args["namespace"],  # type: ignore[arg-type]
                                          args["revision"], args["start_after"], args["limit"])  # type: ignore[arg-type]
    return served, stored


async def test_lists_follow_every_write_exactly(event_log: sql.SqlEventLog) -> None:
    rng = random.Random(7)
    live: dict[tuple[str, str], log.Event] = {}
    first = await event_log.list_objects(**PODS, namespace=None)
    assert first.events == []
    assert event_log._broadcaster.heads.loaded_at(group="", resource="pods") is not None  # loaded by that LIST
    for step in range(120):
        key = (rng.choice(["a", "b", "c"]), f"p{rng.randrange(12)}")
        current = live.get(key)
        if current is None:
            live[key] = await event_log.append(writes.added(key[1], namespace=key[0]))
        elif rng.random() < 0.3:
            await event_log.append(writes.deleted(current))
            del live[key]
        else:
            live[key] = await event_log.append(writes.modified(current, spec={"step": step}))
        if step % 10 == 0:
            await event_log.append(writes.added(f"cm{step}", resource="configmaps"))  # another resource
        namespace = rng.choice([None, "a", "b", "z"])
        served, stored = await _both(event_log, namespace=namespace)
        assert served == stored
        assert served.revision == event_log.revision
        assert [(e.namespace, e.name) for e in served.events] == sorted(
            k for k in live if namespace is None or k[0] == namespace)


async def test_pages_pinned_to_a_revision(event_log: sql.SqlEventLog) -> None:
    for ns in ("a", "b"):
        for i in range(7):
            await event_log.append(writes.added(f"p{i}", namespace=ns))
    first, stored = await _both(event_log, limit=5)
    assert first == stored and first.more
    pages = [first]
    while pages[-1].more:
        last = pages[-1].events[-1]
        page, stored = await _both(event_log, revision=first.revision, start_after=(last.namespace, last.name),
                                   limit=5)
        assert page == stored
        pages.append(page)
    assert [len(p.events) for p in pages] == [5, 5, 4]
    # A change after the first page: later pages still show the state at its revision.
    victim = first.events[0]
    await event_log.append(writes.deleted(victim))
    page, stored = await _both(event_log, revision=first.revision, start_after=("a", "p0"), limit=3)
    assert page == stored
    assert [e.name for e in page.events] == ["p1", "p2", "p3"]
    again, stored = await _both(event_log, revision=first.revision, namespace="b", start_after=("a", "p6"))
    assert again == stored and len(again.events) == 7


async def test_another_writer_is_seen_at_once(open_log: OpenLog) -> None:
    """A second log on the same database stands for another process (another replica): a LIST
    served from memory must still reflect its committed writes."""
    first, second = await open_log(), await open_log()
    await first.list_objects(**PODS, namespace=None)  # loads pods into `first`'s memory
    written = await second.append(writes.added("from-elsewhere"))
    served = await first.list_objects(**PODS, namespace=None)
    assert [e.name for e in served.events] == ["from-elsewhere"]
    assert served.revision >= written.revision
    gone = await second.append(writes.deleted(written))
    served = await first.list_objects(**PODS, namespace=None)
    assert served.events == [] and served.revision >= gone.revision


async def test_skipped_revisions_drop_what_is_kept(event_log: sql.SqlEventLog) -> None:
    await event_log.append(writes.added("p0"))
    await event_log.list_objects(**PODS, namespace=None)
    heads = event_log._broadcaster.heads
    assert len(heads) == 1
    event_log._skip_to(event_log.revision + 5, reason="imported")
    assert heads.loaded_at(group="", resource="pods") is None and len(heads) == 0
    served, stored = await _both(event_log)
    assert served == stored


async def test_a_resource_too_large_to_keep_is_read_from_the_database(event_log: sql.SqlEventLog) -> None:
    heads = event_log._broadcaster.heads
    for i in range(4):
        await event_log.append(writes.added(f"p{i}"))
    heads.max_bytes = 3 * _cost_of_one(await event_log.list_objects(**PODS, namespace=None)) + 10  # 3 fit, not 4
    heads.reset()
    served, stored = await _both(event_log)
    assert served == stored and len(served.events) == 4
    assert heads.loaded_at(group="", resource="pods") is None  # refused
    await event_log.append(writes.added("c0", resource="configmaps"))
    await event_log.list_objects(group="", resource="configmaps", namespace=None)
    assert heads.loaded_at(group="", resource="configmaps") is not None
    for i in range(1, 4):
        await event_log.append(writes.added(f"c{i}", resource="configmaps"))
    assert heads.loaded_at(group="", resource="configmaps") is None  # grew past the bound: dropped
    assert len((await event_log.list_objects(group="", resource="configmaps", namespace=None)).events) == 4


@pytest.mark.parametrize("limit", [None, 1, 3])
async def test_namespace_and_start_after_combinations(event_log: sql.SqlEventLog, limit: int | None) -> None:
    for ns in ("a", "b", "c"):
        for name in ("x", "y"):
            await event_log.append(writes.added(name, namespace=ns))
    await event_log.list_objects(**PODS, namespace=None)
    for namespace in (None, "a", "b", "c", "d"):
        for start_after in (None, ("a", "x"), ("b", "y"), ("b", ""), ("c", "z")):
            served, stored = await _both(event_log, namespace=namespace, start_after=start_after, limit=limit)
            assert served == stored, (namespace, start_after, limit)


def _cost_of_one(listed: log.ListResult) -> int:
    costs = {heads.cost(event) for event in listed.events}
    assert len(costs) == 1
    return costs.pop()


def test_the_count_stays_exact_when_a_load_is_refused_half_way() -> None:
    cache = heads.HeadCache(max_bytes=3 * (heads.ENTRY_OVERHEAD + 3) + 1)  # 3 objects named with one letter
    ticket = cache.begin_load(group="", resource="pods")
    assert ticket is not None

    def event(revision: int, name: str, type_: str = "ADDED") -> log.Event:
        return log.Event(revision=revision, type=type_, group="", resource="pods", namespace="d", name=name,  # type: ignore[arg-type]
                         uid="", object=b"{}", prev_revision=0, time=0.0, actor=log.Actor())

    cache.observe([event(3, "b"), event(4, "c"), event(5, "a", "DELETED")])  # held back
    cache.finish_load(ticket, group="", resource="pods", events=[event(1, "a"), event(2, "z")], revision=2)  # a, z; + b, c: over 3
    assert cache.loaded_at(group="", resource="pods") is None and len(cache) == 0
    ticket = cache.begin_load(group="", resource="configmaps")
    assert ticket is not None
    cache.finish_load(ticket, group="", resource="configmaps", events=[], revision=6)
    assert cache.loaded_at(group="", resource="configmaps") == 6 and len(cache) == 0
