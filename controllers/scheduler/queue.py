"""The scheduling queue beyond the work queue (which is the active queue): the unschedulable pool,
per-pod backoff, and which pods are in their scheduling cycle right now (so that an event that could
help them is not lost while they are being tried)."""

from __future__ import annotations

from collections.abc import Callable

import structlog

from controllers.runtime import reconcile, workqueue
from controllers.scheduler.config import INITIAL_BACKOFF, MAX_BACKOFF
from cp import clock as clocks

Key = tuple[str, str]  # (namespace, name) of a pod

logger = structlog.get_logger("cplane.controllers.scheduler")


def request_of(key: Key) -> reconcile.Request:
    return reconcile.Request(namespace=key[0], name=key[1])


class SchedulingQueue:
    """`still_gated(key)`: whether a pod gated by PreEnqueue is still pending and gated;
    `active()`: the controller's work queue while it runs (None otherwise)."""

    def __init__(self, *, clock: clocks.Clock, still_gated: Callable[[Key], bool],
                 active: Callable[[], workqueue.WorkQueue[reconcile.Request] | None]) -> None:
        self.clock = clock
        self._still_gated = still_gated
        self._active = active
        self.unschedulable: dict[Key, float] = {}  # pod key -> when it entered the pool
        self.gated: set[Key] = set()  # pods of the pool waiting for PreEnqueue (no attempt made)
        self.backing_off: dict[Key, float] = {}  # moved out of the pool, waiting for backoff
        self.attempts: dict[Key, int] = {}
        self.last_attempt: dict[Key, float] = {}
        # The pod in its scheduling cycle -> whether an event that could help it arrived meanwhile
        # (then a failed attempt is retried instead of waiting for the next event).
        self.in_cycle: dict[Key, bool] = {}
        self._log = logger

    def reset(self) -> None:
        """A new term: forget the pool and backoff (every pending pod is enqueued again)."""
        self.unschedulable.clear()
        self.gated.clear()
        self.backing_off.clear()
        self.attempts.clear()
        self.last_attempt.clear()

    def backoff(self, key: Key) -> float:
        attempts = self.attempts.get(key, 0)
        if attempts <= 0:
            return 0.0
        return min(INITIAL_BACKOFF * float(2 ** (attempts - 1)), MAX_BACKOFF)

    def record_attempt(self, key: Key) -> None:
        self.attempts[key] = self.attempts.get(key, 0) + 1
        self.last_attempt[key] = self.clock.now()

    def park(self, key: Key, *, gated: bool) -> None:
        """Into the unschedulable pool (`gated`: PreEnqueue rejected it, no attempt was made)."""
        self.unschedulable[key] = self.clock.now()
        if gated:
            self.gated.add(key)

    def pool_wait(self, key: Key, *, limit: float) -> float:
        """For a pod still in the pool (not gated): how long until it has been there `limit`
        seconds (0 when it is not in the pool or the time is up)."""
        entered = self.unschedulable.get(key)
        if entered is None or key in self.gated:
            return 0.0
        return max(entered + limit - self.clock.now(), 0.0)

    def waiting(self, key: Key) -> bool:
        """In the pool or in its cycle: an event may matter to the pod."""
        return key in self.unschedulable or key in self.in_cycle

    def idle(self) -> bool:
        """No pod in the pool or in its cycle (claim events need no mapping then)."""
        return not self.unschedulable and not self.in_cycle

    def popped(self, key: Key) -> None:
        """The work queue handed the pod out: its backoff timer, if any, is spent."""
        self.backing_off.pop(key, None)

    def begin_cycle(self, key: Key) -> None:
        """The pod is being attempted: out of the pool, and events from now on are noted."""
        self.unschedulable.pop(key, None)
        self.gated.discard(key)
        self.in_cycle[key] = False

    def end_cycle(self, key: Key) -> bool:
        """Whether an event that could help the pod arrived during its cycle."""
        return self.in_cycle.pop(key, False)

    def requeue(self, key: Key) -> None:
        """Move a pod out of the unschedulable pool: to the queue now if its backoff is over or
        nothing else is queued (`SchedulerPopFromBackoffQ`), else when the backoff ends. A pod
        gated by PreEnqueue stays until the gate opens (checked here, without an attempt)."""
        if key in self.gated:
            if self._still_gated(key):
                return
            self.gated.discard(key)
        self.unschedulable.pop(key, None)
        queue = self._active()
        if queue is None:
            return
        ready = self.last_attempt.get(key, 0.0) + self.backoff(key)
        delay = ready - self.clock.now()
        if delay <= 0:
            self.backing_off.pop(key, None)
            queue.add(request_of(key))
        else:
            self.backing_off[key] = ready
            queue.add_after(request_of(key), delay)
            self.pump()

    def pump(self) -> None:
        """`SchedulerPopFromBackoffQ`: while nothing is queued, the pod whose backoff ends first
        goes now (its timer, firing later, finds it handled)."""
        queue = self._active()
        if queue is None or len(queue) or not self.backing_off:
            return
        key = min(self.backing_off, key=self.backing_off.__getitem__)
        del self.backing_off[key]
        queue.add(request_of(key))

    def move_all(self, event: str) -> None:
        for key in self.in_cycle:
            self.in_cycle[key] = True
        if self.unschedulable:
            self._log.debug("moving_unschedulable_pods", trigger=event, pods=len(self.unschedulable))
            for key in list(self.unschedulable):
                self.requeue(key)

    def nudge(self, key: Key) -> None:
        """An event that may help this pod: noted if it is in its cycle, else out of the pool."""
        if key in self.in_cycle:
            self.in_cycle[key] = True
        elif key in self.unschedulable:
            self.requeue(key)

    def forget(self, key: Key) -> None:
        self.unschedulable.pop(key, None)
        self.gated.discard(key)
        self.backing_off.pop(key, None)
        self.attempts.pop(key, None)
        self.last_attempt.pop(key, None)
