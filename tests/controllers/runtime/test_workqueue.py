"""The work queue on a VirtualClock: de-duplication, one reconcile per key at a time, dirty keys
requeued on done, rate-limited retries with exponential per-item backoff, delayed adds (earlier
time wins), forget, shutdown.

Out of scope: how workers use the queue (test_manager_*.py).
"""

from __future__ import annotations

import asyncio

import pytest

from controllers.runtime import workqueue
from cp import clock as clocks
from tests.controllers.support import settle


def _queue(clock: clocks.Clock | None = None) -> workqueue.WorkQueue[str]:
    the_clock = clock or clocks.VirtualClock(start=1000.0)
    return workqueue.WorkQueue(clock=the_clock, name="test", retry_clock=the_clock)


async def test_error_retries_run_on_wall_time_under_a_virtual_clock() -> None:
    """A virtual clock nobody advances must not stall the retry of a failed reconcile."""
    q: workqueue.WorkQueue[str] = workqueue.WorkQueue(clock=clocks.VirtualClock(start=1000.0), name="t")
    q.add_rate_limited("a")  # 5 ms of wall time
    assert await asyncio.wait_for(q.get(), 2) == "a"
    q.done("a")
    q.shutdown()


async def test_add_deduplicates_queued_keys() -> None:
    q = _queue()
    q.add("a")
    q.add("b")
    q.add("a")
    assert len(q) == 2
    assert await q.get() == "a"
    assert await q.get() == "b"
    assert len(q) == 0
    await q.aclose()


async def test_key_added_while_processing_is_held_until_done() -> None:
    q = _queue()
    q.add("a")
    item = await q.get()
    q.add("a")  # changes while reconciling: must run again, but not concurrently
    q.add("a")
    assert len(q) == 0 and q.processing == {"a"}
    getter = asyncio.ensure_future(q.get())
    await settle()
    assert not getter.done()
    q.done(item)
    assert await asyncio.wait_for(getter, 1) == "a"
    q.done("a")
    assert len(q) == 0
    await q.aclose()


async def test_one_worker_per_key_with_many_workers() -> None:
    q = _queue()
    running: dict[str, int] = {}
    max_seen: dict[str, int] = {}
    handled: list[str] = []
    release = asyncio.Event()

    async def worker() -> None:
        while True:
            try:
                key = await q.get()
            except workqueue.ShutDownError:
                return
            running[key] = running.get(key, 0) + 1
            max_seen[key] = max(max_seen.get(key, 0), running[key])
            await release.wait()
            handled.append(key)
            running[key] -= 1
            q.done(key)

    workers = [asyncio.ensure_future(worker()) for _ in range(4)]
    for _ in range(3):
        q.add("x")
        q.add("y")
        await settle()
    release.set()
    for _ in range(3):
        await settle()
    assert max_seen == {"x": 1, "y": 1}
    # the first run of each key, plus one more for the adds made while it was running
    assert sorted(handled) == ["x", "x", "y", "y"]
    q.shutdown()
    await asyncio.gather(*workers)
    await q.aclose()


def test_exponential_backoff_grows_and_caps() -> None:
    limiter: workqueue.ItemExponentialFailureRateLimiter[str] = workqueue.ItemExponentialFailureRateLimiter()
    delays = [limiter.when("a") for _ in range(5)]
    assert delays == pytest.approx([0.005, 0.01, 0.02, 0.04, 0.08])
    assert limiter.num_requeues("a") == 5
    assert limiter.when("b") == pytest.approx(0.005)  # per item
    for _ in range(40):
        limiter.when("a")
    assert limiter.when("a") == 1000.0
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
    assert limiter.when("a") == pytest.approx(0.005)


def test_bucket_limiter_spends_burst_then_paces() -> None:
    clock = clocks.VirtualClock(start=0.0)
    bucket: workqueue.BucketRateLimiter[str] = workqueue.BucketRateLimiter(clock=clock, qps=10, burst=3)
    assert [bucket.when("x") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.when("x") == pytest.approx(0.1)
    clock.advance(1.0)
    assert bucket.when("x") == 0.0


async def test_add_rate_limited_waits_on_the_clock_and_doubles() -> None:
    clock = clocks.VirtualClock(start=1000.0)
    q = _queue(clock)
    q.add_rate_limited("a")  # 5 ms
    await settle()
    assert len(q) == 0 and q.waiting == 1
    clock.advance(0.0049)
    await settle()
    assert len(q) == 0
    clock.advance(0.0002)
    await settle()
    assert len(q) == 1
    key = await q.get()
    q.done(key)
    q.add_rate_limited("a")  # second failure: 10 ms
    clock.advance(0.0099)
    await settle()
    assert len(q) == 0
    clock.advance(0.0002)
    await settle()
    assert len(q) == 1
    assert q.num_requeues("a") == 2
    q.forget("a")
    assert q.num_requeues("a") == 0
    await q.aclose()


async def test_add_after_keeps_the_earlier_time() -> None:
    clock = clocks.VirtualClock(start=1000.0)
    q = _queue(clock)
    q.add_after("a", 10)
    q.add_after("a", 30)  # later: ignored
    q.add_after("b", 5)
    q.add_after("b", 2)  # earlier: replaces
    await settle()
    clock.advance(2)
    await settle()
    assert len(q) == 1 and await q.get() == "b"
    clock.advance(7)
    await settle()
    assert len(q) == 0
    clock.advance(1)
    await settle()
    assert await q.get() == "a"
    clock.advance(100)
    await settle()
    assert len(q) == 0  # the later add_after of "a" did not fire a second time
    await q.aclose()


async def test_add_after_zero_adds_now() -> None:
    q = _queue()
    q.add_after("a", 0)
    assert len(q) == 1
    await q.aclose()


async def test_shutdown_wakes_getters_and_drops_timers() -> None:
    clock = clocks.VirtualClock(start=1000.0)
    q = _queue(clock)
    getter = asyncio.ensure_future(q.get())
    q.add_after("later", 5)
    await settle()
    await q.aclose()
    with pytest.raises(workqueue.ShutDownError):
        await getter
    q.add("x")  # ignored after shutdown
    assert len(q) == 0 and q.waiting == 0
    with pytest.raises(workqueue.ShutDownError):
        await q.get()


async def test_priority_work_queue_hands_out_the_smallest_order_first() -> None:
    """Same guarantees as the FIFO queue (de-duplication, dirty keys requeued on done), another
    order: the smallest `order(key)`, ties by insertion."""
    clock = clocks.VirtualClock(start=1000.0)
    rank = {"low": 3, "high": 1, "mid": 2, "mid2": 2}
    q: workqueue.PriorityWorkQueue[str] = workqueue.PriorityWorkQueue(clock=clock, order=rank.__getitem__,
                                                                      name="prio", retry_clock=clock)
    for key in ("low", "mid", "high", "mid2", "low"):
        q.add(key)
    assert len(q) == 4 and q.queued() == ["high", "mid", "mid2", "low"]
    first = await q.get()
    assert first == "high"
    q.add("high")  # while processing: dirty, queued again by done
    assert len(q) == 3
    q.done("high")
    got = [await q.get() for _ in range(4)]
    assert got == ["high", "mid", "mid2", "low"]
    for key in got:
        q.done(key)
    q.add_after("mid", 1.0)
    clock.advance(1.0)
    await settle()
    assert q.queued() == ["mid"]
    await q.aclose()
    with pytest.raises(workqueue.ShutDownError):
        await q.get()
