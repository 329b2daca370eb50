"""The scheduling queue (upstream's `backend/queue`): the active queue, the backoff queue and the
unschedulable pool, with queueing hints.

- **activeQ** is the controller's work queue, a `PriorityWorkQueue` ordered as the PrioritySort
  plugin orders it: higher `spec.priority` first, then the earlier queue timestamp (when the pod
  was first queued, refreshed each time it comes back after a failed attempt);
- **backoffQ**: a pod that failed waits `podInitialBackoffSeconds` (1 s) doubling per attempt up
  to `podMaxBackoffSeconds` (10 s) from its last attempt before it is queued again (a delayed add
  of the work queue); while the active queue is empty the pod whose backoff ends first goes at once
  (`SchedulerPopFromBackoffQ`), unless it failed for no plugin's reason (podErrorBackoffQ);
- **unschedulablePods**: a pod that failed for plugins P ("unschedulable plugins", collected by
  the cycle from the rejecting statuses) waits there until a cluster event that a plugin of P
  registered happens (`cp.scheduling.events.EventMap`), then goes to backoffQ or activeQ; after
  `podMaxInUnschedulablePodsDuration` (5 min) it goes anyway (`UnschedulableTimeout`). Events that
  arrive while the pod is in its cycle are kept and checked against P when the cycle fails
  (`inFlightEvents`).
"""

from __future__ import annotations

from collections.abc import Callable

import structlog

from controllers.runtime import reconcile, workqueue
from controllers.scheduler.config import INITIAL_BACKOFF, MAX_BACKOFF
from cp import clock as clocks
from cp.scheduling import events as cluster_events

Key = tuple[str, str]  # (namespace, name) of a pod

logger = structlog.get_logger("cplane.controllers.scheduler")


def request_of(key: Key) -> reconcile.Request:
    return reconcile.Request(namespace=key[0], name=key[1])


class SchedulingQueue:
    """`still_gated(key)`: whether a pod gated by PreEnqueue is still pending and gated;
    `active()`: the controller's work queue while it runs (None otherwise); `priority(key)`: the
    pod's `spec.priority` (0 when unknown); `event_map`: which plugins registered which events."""

    def __init__(self, *, clock: clocks.Clock, still_gated: Callable[[Key], bool],
                 active: Callable[[], workqueue.WorkQueue[reconcile.Request] | None],
                 priority: Callable[[Key], int] = lambda _key: 0,
                 event_map: cluster_events.EventMap | None = None,
                 initial_backoff: float = INITIAL_BACKOFF, max_backoff: float = MAX_BACKOFF) -> None:
        self.clock = clock
        self._still_gated = still_gated
        self._active = active
        self._priority = priority
        self.event_map = event_map or cluster_events.EventMap({})
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.unschedulable: dict[Key, float] = {}  # pod key -> when it entered the pool
        self.gated: set[Key] = set()  # pods of the pool waiting for PreEnqueue (no attempt made)
        self.backing_off: dict[Key, float] = {}  # moved out of the pool, waiting for backoff
        self.attempts: dict[Key, int] = {}
        self.last_attempt: dict[Key, float] = {}
        self.timestamps: dict[Key, float] = {}  # the queue timestamp PrioritySort orders by
        self.rejectors: dict[Key, frozenset[str]] = {}  # the unschedulable plugins of the last attempt
        # The pods in their scheduling cycle -> the events that arrived meanwhile.
        self.in_cycle: dict[Key, list[str]] = {}
        self._log = logger

    def new_active_queue(self, *, clock: clocks.Clock, retry_clock: clocks.Clock, name: str,
                         rate_limiter: workqueue.RateLimiter[reconcile.Request] | None
                         ) -> workqueue.PriorityWorkQueue[reconcile.Request]:
        """The active queue for one term of the controller."""
        return workqueue.PriorityWorkQueue(clock=clock, order=self.order, rate_limiter=rate_limiter, name=name,
                                           retry_clock=retry_clock)

    def order(self, request: reconcile.Request) -> tuple[int, float]:
        """PrioritySort's `Less` as a sort key: higher priority first, then the earlier timestamp."""
        key = (request.namespace, request.name)
        stamp = self.timestamps.get(key)
        if stamp is None:
            stamp = self.timestamps[key] = self.clock.now()
        return (-self._priority(key), stamp)

    def reset(self) -> None:
        """A new term: forget the pool and backoff (every pending pod is enqueued again)."""
        self.unschedulable.clear()
        self.gated.clear()
        self.backing_off.clear()
        self.attempts.clear()
        self.last_attempt.clear()
        self.timestamps.clear()
        self.rejectors.clear()

    def backoff_duration(self, attempts: int) -> float:
        """`calculateBackoffDuration`: none before the first attempt, then the initial backoff
        doubled per further attempt, capped at the maximum."""
        if attempts <= 0:
            return 0.0
        duration = self.initial_backoff
        for _ in range(1, attempts):
            if duration > self.max_backoff - duration:
                return self.max_backoff
            duration += duration
        return min(duration, self.max_backoff)

    def backoff(self, key: Key) -> float:
        return self.backoff_duration(self.attempts.get(key, 0))

    def record_attempt(self, key: Key, rejectors: frozenset[str] = frozenset()) -> None:
        """A failed attempt: count it, note its plugins, and refresh the queue timestamp."""
        now = self.clock.now()
        self.attempts[key] = self.attempts.get(key, 0) + 1
        self.last_attempt[key] = now
        self.timestamps[key] = now
        self.rejectors[key] = rejectors

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
        """No pod in the pool or in its cycle (events need no mapping then)."""
        return not self.unschedulable and not self.in_cycle

    def popped(self, key: Key) -> None:
        """The work queue handed the pod out: its backoff timer, if any, is spent."""
        self.backing_off.pop(key, None)

    def begin_cycle(self, key: Key) -> None:
        """The pod is being attempted: out of the pool, and events from now on are noted."""
        self.unschedulable.pop(key, None)
        self.gated.discard(key)
        self.in_cycle[key] = []

    def end_cycle(self, key: Key) -> list[str]:
        """The events that arrived during the pod's cycle."""
        return self.in_cycle.pop(key, [])

    def worth_requeuing(self, key: Key, events: list[str]) -> bool:
        """`determineSchedulingHintForInFlightPod`: whether the pod that just failed goes to the
        backoff queue rather than the pool — it failed for no plugin's reason, or one of `events`
        (those of its cycle) may help it given its unschedulable plugins."""
        rejectors = self.rejectors.get(key, frozenset())
        if not rejectors:
            return True
        return any(self.event_map.worth_requeuing(rejectors, event) for event in events)

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
        elif not self.rejectors.get(key):
            # podErrorBackoffQ: failed for no plugin's reason; never popped before its time
            queue.add_after(request_of(key), delay)
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
        """`MoveAllToActiveOrBackoffQueue`: every pod of the pool that `event` may help leaves it
        (gated pods: when the gate opens); the pods in their cycle note the event."""
        if not self.event_map.interested(event):
            return  # no plugin registered it: it can help nobody
        for noted in self.in_cycle.values():
            noted.append(event)
        if not self.unschedulable:
            return
        moving = [key for key in self.unschedulable
                  if key in self.gated or self.event_map.worth_requeuing(self.rejectors.get(key, frozenset()), event)]
        if moving:
            self._log.debug("moving_unschedulable_pods", trigger=event, pods=len(moving),
                            staying=len(self.unschedulable) - len(moving))
        for key in moving:
            self.requeue(key)

    def nudge(self, key: Key, event: str) -> None:
        """An event about this pod (its own update, one of its claims): noted if it is in its
        cycle, else it leaves the pool when the event may help it."""
        noted = self.in_cycle.get(key)
        if noted is not None:
            noted.append(event)
        elif key in self.unschedulable and (
                key in self.gated or self.event_map.worth_requeuing(self.rejectors.get(key, frozenset()), event)):
            self.requeue(key)

    def forget(self, key: Key) -> None:
        self.unschedulable.pop(key, None)
        self.gated.discard(key)
        self.backing_off.pop(key, None)
        self.attempts.pop(key, None)
        self.last_attempt.pop(key, None)
        self.timestamps.pop(key, None)
        self.rejectors.pop(key, None)
