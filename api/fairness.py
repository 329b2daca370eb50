"""Fair shares of the server's request seats: API Priority and Fairness, in the small.

kube-apiserver (APF, `staging/src/k8s.io/apiserver/pkg/util/flowcontrol`) gives each priority level a
number of seats; a request that finds them all taken waits in a queue chosen by its flow (a user, by
default), queues are served fairly, and a request that cannot queue or waits too long gets 429.
Here: one `FairSeats` per pool (reads and writes, as `--max-requests-inflight` and
`--max-mutating-requests-inflight` split them); a flow is a user; when a seat frees, it goes to the
waiting flow that holds the fewest seats (oldest waiter first within a flow). So a user who floods the
server waits behind its own requests, while another user's request takes the next free seat.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib

from cp import errors


def too_many_requests() -> errors.TooManyRequests:
    return errors.TooManyRequests("Too many requests, please try again later.",
                                  details={"retryAfterSeconds": 1}, headers={"Retry-After": "1"})


class FairSeats:
    """`seats` requests at once; the rest wait in per-flow queues of at most `queue_length` for at
    most `queue_wait` seconds (`queue_length=0`: refuse at once)."""

    def __init__(self, *, seats: int, queue_length: int, queue_wait: float) -> None:
        self.seats = seats
        self.queue_length = queue_length
        self.queue_wait = queue_wait
        self.in_use = 0
        self.held: dict[str, int] = {}  # flow -> seats held
        self.waiting: dict[str, collections.deque[asyncio.Future[None]]] = {}

    @property
    def queued(self) -> int:
        return sum(len(q) for q in self.waiting.values())

    async def acquire(self, flow: str) -> None:
        """Take a seat for `flow`, waiting in its queue if every seat is taken; 429 when the queue is
        full or the wait too long. Every successful acquire is paired with one `release(flow)`."""
        if self.in_use < self.seats and not self.waiting:
            self._take(flow)
            return
        queue = self.waiting.get(flow)
        if (queue is not None and len(queue) >= self.queue_length) or self.queue_length <= 0:
            raise too_many_requests()
        if queue is None:
            queue = self.waiting[flow] = collections.deque()
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        queue.append(waiter)
        try:
            async with asyncio.timeout(self.queue_wait):
                await waiter
        except BaseException as exc:
            if waiter.done() and not waiter.cancelled():
                self.release(flow)  # granted just as the wait ended: give the seat back
            else:
                waiter.cancel()
                self._forget(flow, waiter)
            if isinstance(exc, TimeoutError):
                raise too_many_requests() from None
            raise

    def release(self, flow: str) -> None:
        self.in_use -= 1
        left = self.held.get(flow, 1) - 1
        if left > 0:
            self.held[flow] = left
        else:
            self.held.pop(flow, None)
        self._dispatch()

    def _take(self, flow: str) -> None:
        self.in_use += 1
        self.held[flow] = self.held.get(flow, 0) + 1

    def _forget(self, flow: str, waiter: asyncio.Future[None]) -> None:
        queue = self.waiting.get(flow)
        if queue is None:
            return
        with contextlib.suppress(ValueError):  # handed a seat, so already off the queue
            queue.remove(waiter)
        if not queue:
            del self.waiting[flow]

    def _dispatch(self) -> None:
        """Hand free seats to the waiting flows holding the fewest."""
        while self.in_use < self.seats and self.waiting:
            flow = min(self.waiting, key=lambda f: self.held.get(f, 0))
            queue = self.waiting[flow]
            waiter = queue.popleft()
            if not queue:
                del self.waiting[flow]
            if waiter.done():  # timed out or cancelled while queued
                continue
            self._take(flow)
            waiter.set_result(None)
