"""Watch fan-out of the SQL logs (`storage.broadcasting`): what the EventLog contract leaves open.

In scope: replay in pages with a small buffer, slow-subscriber drop (the subscriber first hands out
what it held), ends of streams on close. The contract every implementation keeps (replay + live
hand-over, filters, order, progress, expired starts) is test_event_log_contract.py.
Out of scope: several processes on one PostgreSQL database (test_postgres_processes.py).
"""

from __future__ import annotations

import asyncio

from storage import broadcasting, log
from tests.storage import writes
from tests.storage.streams import collect, expected


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


async def test_streams_end_on_close(open_log) -> None:
    event_log = await open_log()
    closed_by_client = await event_log.subscribe(group="", resource="pods", namespace=None, after=0)
    waiting = await event_log.subscribe(group="", resource="pods", namespace=None, after=0)
    closed_by_client.close()
    assert await closed_by_client.next_batch(timeout=5) is None
    pending = asyncio.ensure_future(waiting.next_batch(timeout=None))
    await event_log.close()
    assert await pending is None
