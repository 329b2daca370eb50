"""Bounds on what one client can make the server do, and the deadline sweep that enforces the
time-based ones (request timeouts, stalled watch writes).

`Limits` is one struct for every layer that bounds a client: the connection (`api.connections`:
header and TLS handshake deadlines, the connection cap), the request (`api.auth.chain`: body read
deadline, fair shares of the in-flight seats, the request timeout), the stored object
(`api.auth.admission`: depth and size) and the watch (`api.watching`: a send buffer that stays full).
Defaults are kube-apiserver's where it has one.
"""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec


class Limits(msgspec.Struct, kw_only=True):
    """Bounds on what one client can make the server do (kube-apiserver defaults where it has one)."""

    max_inflight: int = 400  # --max-requests-inflight: read seats
    max_mutating_inflight: int = 200  # --max-mutating-requests-inflight: write seats
    # API Priority and Fairness: a request that finds every seat taken waits in its flow's queue (a flow
    # is a user) at most `queue_wait` seconds (upstream: a quarter of the request timeout) and at most
    # `queue_length` deep per flow; seats are handed to the waiting flow holding the fewest.
    queue_length: int = 50
    queue_wait: float = 15.0
    max_watches_per_user: int = 10_000  # bounded; upstream has no per-user cap (APF), controllers hold many
    request_timeout: float = 60.0  # --request-timeout (not for watches)
    max_depth: int = 100  # nesting of objects (maps and lists) in a request body or stored object
    max_object_bytes: int = 1536 * 1024  # etcd's default --max-request-bytes
    # Connections (api.connections).
    header_timeout: float = 32.0  # kube-apiserver's ReadHeaderTimeout: from a request's first byte
    handshake_timeout: float = 10.0  # TLS handshake
    max_connections: int = 0  # 0: derived from the process's file-descriptor limit
    # A request body must arrive within this (it is read before the request takes a seat).
    body_timeout: float = 60.0
    max_buffered_body_bytes: int = 512 * 1024 * 1024  # request bodies being read at once, all clients
    # A watch whose client stops reading is closed once a write has waited this long.
    watch_write_timeout: float = 30.0


class Deadlines:
    """Deadlines without a timer per request (`asyncio.timeout` was ~5 % of a create's time): tasks
    register a deadline, and one sweep every `interval` cancels those past it. A task thus is
    cancelled between its deadline and `interval` later. `leave` tells whether the sweep cancelled
    it (and withdraws that cancellation), so the task can answer a timeout instead of dying."""

    def __init__(self, timeout: float, *, interval: float | None = None) -> None:
        self.timeout = timeout
        self.interval = interval if interval is not None else max(0.01, min(1.0, timeout / 2))
        self._deadlines: dict[asyncio.Task[Any], float] = {}
        self.expired: set[asyncio.Task[Any]] = set()
        self._sweep_handle: asyncio.TimerHandle | None = None

    def enter(self, task: asyncio.Task[Any], *, at: float | None = None) -> None:
        """Register `task` until `at` (loop time; default: `timeout` from now)."""
        loop = task.get_loop()
        self._deadlines[task] = at if at is not None else loop.time() + self.timeout
        if self._sweep_handle is None:
            self._sweep_handle = loop.call_later(self.interval, self._sweep, loop)

    def leave(self, task: asyncio.Task[Any]) -> bool:
        """Unregister (idempotent); True when the sweep had cancelled it (that cancel is withdrawn)."""
        self._deadlines.pop(task, None)
        if task not in self.expired:
            return False
        self.expired.discard(task)
        task.uncancel()
        return True

    def _sweep(self, loop: asyncio.AbstractEventLoop) -> None:
        self._sweep_handle = None
        now = loop.time()
        for task, deadline in list(self._deadlines.items()):
            if deadline <= now and task not in self.expired:
                self.expired.add(task)
                task.cancel()
        if self._deadlines:
            self._sweep_handle = loop.call_later(self.interval, self._sweep, loop)
