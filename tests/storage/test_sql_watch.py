"""Watch fan-out: subscribe from a revision, receive every later event of the resource in order.

In scope: replay + live hand-over (no gap, no duplicate), namespace filters, concurrent writers,
slow-subscriber drop, progress (`Subscription.revision`), expired start revisions, ends of streams.
Out of scope: several processes on one PostgreSQL database (test_postgres_processes.py).
"""

from __future__ import annotations

import asyncio

import pytest

from storage import broadcasting, log, sql
from tests.storage import writes


async def collect(subscription: log.Subscription, *, until: int) -> list[log.Event]:
    """Events until `subscription.revision` reaches `until` (the stream must not end first)."""
    out: list[log.Event] = []
    while subscription.revision < until:
        batch = await subscription.next_batch(timeout=5)
        assert batch is not None, "stream ended"
        out += batch
    return out


async def expected(event_log: sql.SqlEventLog, *, resource: str, namespace: str | None,
                   after: int) -> list[log.Event]:
    everything = await event_log.after(0, limit=1_000_000)
    return [e for e in everything if e.resource == resource and e.revision > after
            and (namespace is None or e.namespace == namespace)]


async def test_replays_history_then_delivers_live_events(event_log: sql.SqlEventLog) -> None:
    a = await event_log.append(writes.added("a"))
    await event_log.append(writes.added("x", resource="services"))
    a2 = await event_log.append(writes.modified(a))
    sub = await event_log.subscribe(group="", resource="pods", namespace=None, after=1)
    assert await sub.next_batch(timeout=5) == [a2]
    b = await event_log.append(writes.added("b", namespace="other"))
    assert await sub.next_batch(timeout=5) == [b]
    assert sub.revision == event_log.revision == 4


async def test_namespace_filter(event_log: sql.SqlEventLog) -> None:
    sub = await event_log.subscribe(group="", resource="pods", namespace="one", after=0)
    cluster = await event_log.subscribe(group="", resource="nodes", namespace="", after=0)
    await event_log.append(writes.added("a", namespace="two"))
    mine = await event_log.append(writes.added("b", namespace="one"))
    node = await event_log.append(writes.added("n", namespace="", resource="nodes"))
    assert await collect(sub, until=3) == [mine]
    assert await collect(cluster, until=3) == [node]


async def test_events_written_while_subscribing_are_neither_lost_nor_duplicated(
        event_log: sql.SqlEventLog) -> None:
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
        assert got == await expected(event_log, resource="pods", namespace=namespace, after=after)


async def test_concurrent_writers_are_delivered_in_revision_order(event_log: sql.SqlEventLog) -> None:
    subs = [await event_log.subscribe(group="", resource="pods", namespace=None, after=0) for _ in range(3)]

    async def writer(n: int) -> None:
        event = await event_log.append(writes.added(f"w{n}"))
        for i in range(40):
            event = await event_log.append(writes.modified(event, spec={"i": i}))

    await asyncio.gather(*(writer(n) for n in range(8)))
    want = await expected(event_log, resource="pods", namespace=None, after=0)
    assert [e.revision for e in want] == list(range(1, 329))
    for sub in subs:
        assert await collect(sub, until=event_log.revision) == want


async def test_long_replay_with_a_small_buffer_still_catches_up(open_log) -> None:
    """More than one replay page, while live events overflow the buffer during the replay."""
    event_log = await open_log(subscriber_buffer=20)
    await asyncio.gather(*(event_log.append(writes.added(f"p{i}")) for i in range(2 * broadcasting.REPLAY_PAGE + 50)))
    sub = await event_log.subscribe(group="", resource="pods", namespace=None, after=5)
    got = list(await sub.next_batch(timeout=5) or [])
    await asyncio.gather(*(event_log.append(writes.added(f"late{i}")) for i in range(100)))  # overflows
    got += await collect(sub, until=event_log.revision)
    assert got == await expected(event_log, resource="pods", namespace=None, after=5)


async def test_a_slow_subscriber_is_dropped_without_slowing_writers(open_log) -> None:
    event_log = await open_log(subscriber_buffer=10)
    slow = await event_log.subscribe(group="", resource="pods", namespace=None, after=0)
    fast = await event_log.subscribe(group="", resource="pods", namespace=None, after=0)
    fast_seen: list[log.Event] = []
    for i in range(30):
        await event_log.append(writes.added(f"p{i}"))
        fast_seen += await fast.next_batch(timeout=5) or []
    assert len(fast_seen) == 30 and fast.revision == 30
    # The slow one hands out what it held, then its stream ends.
    held = await slow.next_batch(timeout=5)
    assert held is not None and [e.revision for e in held] == list(range(1, 11))
    assert await slow.next_batch(timeout=5) is None
    assert slow.revision == 10
    # It re-subscribes from the last revision it saw and misses nothing.
    again = await event_log.subscribe(group="", resource="pods", namespace=None, after=slow.revision)
    assert [e.revision for e in await collect(again, until=30)] == list(range(11, 31))


async def test_progress_without_own_events(event_log: sql.SqlEventLog) -> None:
    await event_log.append(writes.added("a"))
    sub = await event_log.subscribe(group="", resource="pods", namespace=None, after=1)
    assert sub.revision == 1
    await event_log.append(writes.added("s", resource="services"))
    assert await sub.next_batch(timeout=0) == []
    assert sub.revision == 2  # a bookmark may say 2
    assert await sub.next_batch(timeout=0.01) == []  # times out with nothing new


async def test_subscribing_after_a_revision_not_yet_published(event_log: sql.SqlEventLog) -> None:
    await event_log.append(writes.added("a"))
    sub = await event_log.subscribe(group="", resource="pods", namespace=None, after=3)
    assert sub.revision == 3
    await event_log.append(writes.added("b"))
    await event_log.append(writes.added("c"))
    d = await event_log.append(writes.added("d"))
    assert await collect(sub, until=4) == [d]


async def test_expired_start_revisions(event_log: sql.SqlEventLog) -> None:
    a = await event_log.append(writes.added("a"))
    for i in range(5):
        a = await event_log.append(writes.modified(a, spec={"i": i}))
    await event_log.compact(3)
    with pytest.raises(log.ExpiredError) as caught:
        await event_log.subscribe(group="", resource="pods", namespace=None, after=2)
    assert (caught.value.requested, caught.value.compacted) == (2, 3)
    sub = await event_log.subscribe(group="", resource="pods", namespace=None, after=3)
    assert [e.revision for e in await collect(sub, until=6)] == [4, 5, 6]


async def test_streams_end_on_close(open_log) -> None:
    event_log = await open_log()
    closed_by_client = await event_log.subscribe(group="", resource="pods", namespace=None, after=0)
    waiting = await event_log.subscribe(group="", resource="pods", namespace=None, after=0)
    closed_by_client.close()
    assert await closed_by_client.next_batch(timeout=5) is None
    pending = asyncio.ensure_future(waiting.next_batch(timeout=None))
    await event_log.close()
    assert await pending is None


async def test_a_kept_wake_up_never_ends_a_wait_before_its_deadline(event_log: sql.SqlEventLog) -> None:
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
