"""A work queue of keys, after client-go's `util/workqueue`.

Invariants:
- the queue holds keys, never events, and each key at most once (`dirty` set);
- a key being processed (`get` returned it, `done` not called yet) is never handed out again; if it
  is added meanwhile it is marked dirty and queued again by `done`, so at most one reconcile per
  key runs at a time and no change is lost;
- `add_after` holds a key until the clock passes its time; a key waiting twice keeps the earlier
  time; `add_rate_limited` waits as long as the rate limiter says (per-item exponential backoff,
  plus an overall token bucket), `forget` resets the item's backoff;
- every delay runs on the injected clock, so a `VirtualClock` drives them in tests.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import heapq
import itertools
import math
from collections.abc import Callable, Hashable
from typing import Any, Generic, Protocol, TypeVar

from cp import clock as clocks

T = TypeVar("T", bound=Hashable)
T_contra = TypeVar("T_contra", bound=Hashable, contravariant=True)


class ShutDownError(Exception):
    """The queue was shut down: no more items will be handed out."""


class RateLimiter(Protocol[T_contra]):
    def when(self, item: T_contra) -> float:
        """Seconds to wait before `item` may be processed again (counts one failure)."""
        ...

    def forget(self, item: T_contra) -> None: ...

    def num_requeues(self, item: T_contra) -> int: ...


class ItemExponentialFailureRateLimiter(Generic[T]):
    """base * 2**failures, capped at max_delay: 5 ms, 10 ms, 20 ms ... 1000 s (client-go defaults)."""

    def __init__(self, *, base: float = 0.005, max_delay: float = 1000.0) -> None:
        self.base = base
        self.max_delay = max_delay
        self._failures: dict[T, int] = {}

    def when(self, item: T) -> float:
        exp = self._failures.get(item, 0)
        self._failures[item] = exp + 1
        if exp >= 64:
            return self.max_delay
        return min(math.ldexp(self.base, exp), self.max_delay)

    def forget(self, item: T) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: T) -> int:
        return self._failures.get(item, 0)


class BucketRateLimiter(Generic[T]):
    """An overall token bucket (qps refill, `burst` capacity) shared by all items."""

    def __init__(self, *, clock: clocks.Clock, qps: float = 10.0, burst: int = 100) -> None:
        self.clock = clock
        self.qps = qps
        self.burst = burst
        self._tokens = float(burst)
        self._last = clock.now()

    def when(self, item: T) -> float:
        now = self.clock.now()
        self._tokens = min(float(self.burst), self._tokens + max(now - self._last, 0.0) * self.qps)
        self._last = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def forget(self, item: T) -> None:
        pass

    def num_requeues(self, item: T) -> int:
        return 0


class MaxOfRateLimiter(Generic[T]):
    """The longest wait of several limiters; requeue counts from the first that counts any."""

    def __init__(self, *limiters: RateLimiter[T]) -> None:
        self.limiters = limiters

    def when(self, item: T) -> float:
        return max(limiter.when(item) for limiter in self.limiters)

    def forget(self, item: T) -> None:
        for limiter in self.limiters:
            limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return max(limiter.num_requeues(item) for limiter in self.limiters)


def default_rate_limiter(clock: clocks.Clock) -> MaxOfRateLimiter[T]:
    """client-go's `DefaultControllerRateLimiter`: per-item 5 ms..1000 s, overall 10 qps burst 100."""
    return MaxOfRateLimiter(ItemExponentialFailureRateLimiter(),
                            BucketRateLimiter(clock=clock, qps=10.0, burst=100))


class WorkQueue(Generic[T]):
    def __init__(self, *, clock: clocks.Clock, rate_limiter: RateLimiter[T] | None = None,
                 name: str = "", retry_clock: clocks.Clock | None = None) -> None:
        self.clock = clock
        # Error retries (the rate limiter's backoff and token bucket) run on wall time even when the
        # injected clock is virtual: a virtual clock that nobody advances must not stall a retry of a
        # 409. Semantic delays (`add_after`: requeue_after, grace periods, windows) use `clock`.
        self.retry_clock: clocks.Clock = retry_clock or (
            clocks.RealClock() if getattr(clock, "virtual", False) else clock)
        self.name = name
        self.rate_limiter: RateLimiter[T] = rate_limiter or default_rate_limiter(self.retry_clock)
        self._queue: collections.deque[T] = collections.deque()
        self._dirty: set[T] = set()
        self._processing: set[T] = set()
        self._getters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._waiting: dict[T, tuple[float, asyncio.Task[None], clocks.Clock]] = {}
        self._seq = itertools.count()
        self._timers: set[asyncio.Task[None]] = set()
        self._shutting_down = False

    # ------------------------------------------------------------------ adding

    def add(self, item: T) -> None:
        if self._shutting_down or item in self._dirty:
            return
        self._dirty.add(item)
        if item in self._processing:
            return  # queued again by done()
        self._push(item)
        self._wake_one()

    def add_after(self, item: T, delay: float, *, clock: clocks.Clock | None = None) -> None:
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(item)
            return
        the_clock = clock or self.clock
        ready_at = the_clock.now() + delay
        existing = self._waiting.get(item)
        if existing is not None:
            if existing[2] is the_clock and existing[0] <= ready_at:
                return  # the earlier time wins (times on different clocks don't compare: the newer wins)
            existing[1].cancel()
        task = asyncio.get_running_loop().create_task(
            self._add_later(item, ready_at, the_clock), name=f"workqueue:{self.name}:after:{next(self._seq)}")
        self._timers.add(task)
        task.add_done_callback(self._timers.discard)
        self._waiting[item] = (ready_at, task, the_clock)

    async def _add_later(self, item: T, ready_at: float, clock: clocks.Clock) -> None:
        await clock.sleep(ready_at - clock.now())
        entry = self._waiting.get(item)
        if entry is not None and entry[1] is asyncio.current_task():
            del self._waiting[item]
        self.add(item)

    def add_rate_limited(self, item: T) -> None:
        self.add_after(item, self.rate_limiter.when(item), clock=self.retry_clock)

    def forget(self, item: T) -> None:
        self.rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return self.rate_limiter.num_requeues(item)

    # ------------------------------------------------------------------ processing

    async def get(self) -> T:
        """The next key (marked processing until `done`). Raises ShutDownError once shut down."""
        while not self._has_queued():
            if self._shutting_down:
                raise ShutDownError(self.name)
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._getters.append(fut)
            try:
                await fut
            finally:
                if not fut.done():
                    fut.cancel()
                with contextlib.suppress(ValueError):
                    self._getters.remove(fut)
        if self._shutting_down:
            raise ShutDownError(self.name)
        item = self._pop()
        self._processing.add(item)
        self._dirty.discard(item)
        return item

    def done(self, item: T) -> None:
        self._processing.discard(item)
        if item in self._dirty and not self._shutting_down:
            self._push(item)
            self._wake_one()

    # The order keys are handed out in: FIFO here; a subclass (the scheduler's active queue) may
    # keep another order by overriding these three and `__len__`.

    def _push(self, item: T) -> None:
        self._queue.append(item)

    def _pop(self) -> T:
        return self._queue.popleft()

    def _has_queued(self) -> bool:
        return bool(self._queue)

    def _clear_queued(self) -> None:
        self._queue.clear()

    def _wake_one(self) -> None:
        while self._getters:
            fut = self._getters.popleft()
            if not fut.done():
                fut.set_result(None)
                return

    # ------------------------------------------------------------------ lifecycle

    def shutdown(self) -> None:
        """Stop handing out keys (pending ones are dropped), cancel delayed adds, wake all getters."""
        self._shutting_down = True
        for _, task, _clock in self._waiting.values():
            task.cancel()
        self._waiting.clear()
        self._clear_queued()
        self._dirty.clear()
        while self._getters:
            fut = self._getters.popleft()
            if not fut.done():
                fut.set_result(None)

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    def __len__(self) -> int:
        return len(self._queue)

    @property
    def processing(self) -> frozenset[T]:
        return frozenset(self._processing)

    @property
    def waiting(self) -> int:
        """How many keys wait for a delayed add."""
        return len(self._waiting)

    async def aclose(self) -> None:
        """Shut down and wait until every delayed-add timer has finished (no task left behind)."""
        self.shutdown()
        timers = list(self._timers)
        if timers:
            await asyncio.gather(*timers, return_exceptions=True)


class PriorityWorkQueue(WorkQueue[T]):
    """A work queue that hands out the queued key with the smallest `order(key)` first (ties: the
    one queued first), with every other guarantee of `WorkQueue`. `order` is read when a key is
    queued, so a key's place is fixed until it is handed out."""

    def __init__(self, *, clock: clocks.Clock, order: Callable[[T], Any],
                 rate_limiter: RateLimiter[T] | None = None, name: str = "",
                 retry_clock: clocks.Clock | None = None) -> None:
        super().__init__(clock=clock, rate_limiter=rate_limiter, name=name, retry_clock=retry_clock)
        self._order = order
        self._heap: list[tuple[Any, int, T]] = []
        self._heap_seq = itertools.count()

    def _push(self, item: T) -> None:
        heapq.heappush(self._heap, (self._order(item), next(self._heap_seq), item))

    def _pop(self) -> T:
        return heapq.heappop(self._heap)[2]

    def _has_queued(self) -> bool:
        return bool(self._heap)

    def _clear_queued(self) -> None:
        self._heap.clear()

    def __len__(self) -> int:
        return len(self._heap)

    def queued(self) -> list[T]:
        """The queued keys in the order they will be handed out."""
        return [entry[2] for entry in sorted(self._heap)]
