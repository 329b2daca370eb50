"""Watch fan-out: committed events go to the live subscriptions of their resource.

A subscription registers with the broadcaster first, then replays the older events it asked for from
the database (`replay_to` = the broadcaster's revision at registration), then hands out the live
events that were queued meanwhile: no gap and no duplicate (kine's "subscribe, replay, de-duplicate",
with an exact boundary instead of a de-duplication window).

Subscriptions are indexed by (group, resource, namespace | None), so publishing an event touches only
the subscriptions that want it. Each has a bounded queue. When a live subscription falls
`buffer_limit` events behind it is dropped: it stops receiving, hands out what it already holds, then
its stream ends (next_batch returns None) and the client re-subscribes from its last revision. A
subscription that overflows while still replaying is not dropped: it discards its queue and extends
its replay to the events it discarded. Writers never wait for subscribers.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Awaitable, Callable

import structlog

from storage import heads, log

_logger = structlog.get_logger(__name__)

REPLAY_PAGE = 1000
TIMER_SLACK = 1.0  # seconds a `next_batch` wake-up may come before its deadline (it then waits again)

# (group, resource, namespace, after, upto, limit) -> (events, compacted revision)
ReplaySource = Callable[[str, str, str | None, int, int, int], Awaitable[tuple[list[log.Event], int]]]


def _release(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class Broadcaster:
    """Knows the newest published revision; owns the live subscriptions."""

    def __init__(self, *, revision: int, buffer_limit: int, cache_bytes: int = heads.DEFAULT_MAX_BYTES) -> None:
        self.revision = revision
        self.buffer_limit = buffer_limit
        self._subscribers: dict[tuple[str, str, str | None], dict[Subscriber, None]] = {}
        self._changed: dict[tuple[str, str], int] = {}  # (group, resource) -> newest published revision
        self._reset = revision  # anything may have changed up to here (start, skipped revisions)
        # live objects of listed resources, following the same events
        self.heads = heads.HeadCache(max_bytes=cache_bytes)

    def last_change(self, *, group: str, resource: str) -> int:
        """`log.EventLog.last_change`: the newest published change of the resource."""
        changed = self._changed.get((group, resource), 0)
        return changed if changed > self._reset else self._reset

    def __len__(self) -> int:
        return sum(len(subs) for subs in self._subscribers.values())

    def add(self, subscriber: Subscriber) -> None:
        key = (subscriber.group, subscriber.resource, subscriber.namespace)
        self._subscribers.setdefault(key, {})[subscriber] = None

    def remove(self, subscriber: Subscriber) -> None:
        key = (subscriber.group, subscriber.resource, subscriber.namespace)
        subs = self._subscribers.get(key)
        if subs is not None:
            subs.pop(subscriber, None)
            if not subs:
                del self._subscribers[key]

    def publish(self, events: list[log.Event]) -> None:
        """`events` are committed, in revision order, directly after `self.revision`."""
        changed = self._changed
        for event in events:
            changed[(event.group, event.resource)] = event.revision
        self.heads.observe(events)
        subscribers = self._subscribers
        if subscribers:
            for event in events:
                group, resource = event.group, event.resource
                everywhere = subscribers.get((group, resource, None))
                if everywhere:
                    for subscriber in tuple(everywhere):
                        subscriber.push(event)
                here = subscribers.get((group, resource, event.namespace))
                if here:
                    for subscriber in tuple(here):
                        subscriber.push(event)
        self.revision = events[-1].revision

    def end_all(self) -> None:
        """End every subscription (the log closed, or history they need was compacted away)."""
        subscribers = [sub for subs in self._subscribers.values() for sub in subs]
        self._subscribers.clear()
        self._changed.clear()
        self._reset = self.revision
        self.heads.reset()
        for subscriber in subscribers:
            subscriber.end(keep_queue=False)


class Subscriber:
    """`log.Subscription` for one resource (optionally one namespace), from revision `after`."""

    __slots__ = ("_broadcaster", "_cursor", "_ended", "_prefetched", "_queue", "_replay", "_replay_to",
                 "_suspended", "_timer", "_timer_at", "_waiter", "group", "namespace", "resource")

    def __init__(self, *, broadcaster: Broadcaster, replay: ReplaySource, group: str, resource: str,
                 namespace: str | None, after: int) -> None:
        self._broadcaster = broadcaster
        self._replay = replay
        self.group = group
        self.resource = resource
        self.namespace = namespace
        self._queue: collections.deque[log.Event] = collections.deque()
        self._waiter: asyncio.Future[None] | None = None
        # The wake-up for `next_batch(timeout=...)`, kept across calls while the next deadline is
        # within TIMER_SLACK after it: a watch waits again after every event, and re-arming a timer
        # for each of a thousand watchers per event is a measurable part of the fan-out.
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0
        self._ended = False
        self._suspended = False  # overflowed while replaying: queued nothing since
        self._prefetched: tuple[list[log.Event], int] | None = None
        # Everything of ours up to `_cursor` was handed out (or does not exist).
        self._cursor = after
        self._replay_to = broadcaster.revision if after < broadcaster.revision else after

    # -- called by the broadcaster / the log ------------------------------------------------------

    def push(self, event: log.Event) -> None:
        if self._suspended:
            return
        queue = self._queue
        if len(queue) >= self._broadcaster.buffer_limit:
            if self._cursor < self._replay_to:
                queue.clear()
                self._suspended = True
                return
            _logger.info("subscriber_dropped", resource=self.resource, namespace=self.namespace,
                         revision=self._cursor, outcome="too_slow")
            self._broadcaster.remove(self)
            self.end(keep_queue=True)
            return
        queue.append(event)
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            _release(waiter)

    def end(self, *, keep_queue: bool) -> None:
        self._ended = True
        if not keep_queue:
            self._queue.clear()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            _release(waiter)

    async def prefetch(self) -> None:
        """Read the first replay page now, so that subscribe() raises ExpiredError itself."""
        if self._cursor < self._replay_to:
            self._prefetched = await self._replay_page()

    # -- log.Subscription -------------------------------------------------------------------------

    @property
    def revision(self) -> int:
        if self._ended or self._cursor < self._replay_to or self._suspended:
            return self._cursor
        queue = self._queue
        if queue:
            return max(self._cursor, queue[0].revision - 1)
        return max(self._cursor, self._broadcaster.revision)

    async def next_batch(self, *, timeout: float | None) -> list[log.Event] | None:  # noqa: ASYNC109 (the contract)
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            if self._prefetched is not None:
                (page, cursor), self._prefetched = self._prefetched, None
                if not self._ended:
                    self._cursor = cursor
                    if page:
                        return page
            if self._suspended and not self._ended:
                self._suspended = False
                self._replay_to = self._broadcaster.revision
            if self._cursor < self._replay_to and not self._ended:
                try:
                    page, cursor = await self._replay_page()
                except log.ExpiredError:
                    self.close()
                    return None
                except Exception:
                    if self._ended:  # the log closed under the read
                        return None
                    raise
                if not self._ended:
                    self._cursor = cursor
                    if page:
                        return page
                continue
            queue = self._queue
            if queue:
                cursor = self._cursor
                if queue[0].revision > cursor:
                    out = list(queue)
                else:
                    out = [event for event in queue if event.revision > cursor]
                queue.clear()
                if out:
                    self._cursor = out[-1].revision
                    return out
                continue
            if self._ended:
                return None
            if deadline is not None and loop.time() >= deadline:
                return []
            waiter = self._waiter = loop.create_future()
            if deadline is not None:
                timer = self._timer
                if timer is None or not deadline - TIMER_SLACK <= self._timer_at <= deadline:
                    if timer is not None:
                        timer.cancel()
                    self._timer = loop.call_at(deadline, self._on_timer)
                    self._timer_at = deadline
            try:
                await waiter
            finally:
                self._waiter = None

    def _on_timer(self) -> None:
        """A timer that fires before the current call's deadline only wakes it to wait again."""
        self._timer = None
        waiter = self._waiter
        if waiter is not None:
            _release(waiter)

    def close(self) -> None:
        if not self._ended:
            self._broadcaster.remove(self)
            self.end(keep_queue=False)

    # -- internals ----------------------------------------------------------------------------------

    async def _replay_page(self) -> tuple[list[log.Event], int]:
        """The next replayed events and the cursor once they are handed out."""
        after, upto = self._cursor, self._replay_to
        events, compacted = await self._replay(self.group, self.resource, self.namespace, after, upto,
                                               REPLAY_PAGE)
        if compacted > after:
            raise log.ExpiredError.at(requested=after, compacted=compacted)
        return events, events[-1].revision if len(events) >= REPLAY_PAGE else upto
