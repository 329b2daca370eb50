"""Bounds on what one client can make the server do, and the request timeout that enforces one."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec


class Limits(msgspec.Struct, kw_only=True):
    """Bounds on what one client can make the server do (kube-apiserver defaults where it has one)."""

    max_inflight: int = 400  # --max-requests-inflight
    max_mutating_inflight: int = 200  # --max-mutating-requests-inflight
    max_watches_per_user: int = 10_000  # bounded; upstream has no per-user cap (APF), controllers hold many
    request_timeout: float = 60.0  # --request-timeout (not for watches)
    max_depth: int = 100  # nesting of objects (maps and lists) in a request body or stored object
    max_object_bytes: int = 1536 * 1024  # etcd's default --max-request-bytes


class Deadlines:
    """The request timeout without a timer per request (`asyncio.timeout` was ~5 % of a create's
    time): requests register their deadline, and one sweep every `interval` cancels those past it.
    A request thus times out between `timeout` and `timeout + interval` after it began."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.interval = max(0.01, min(1.0, timeout / 2))
        self._deadlines: dict[asyncio.Task[Any], float] = {}
        self.expired: set[asyncio.Task[Any]] = set()
        self._sweep_handle: asyncio.TimerHandle | None = None

    def enter(self, task: asyncio.Task[Any]) -> None:
        loop = task.get_loop()
        self._deadlines[task] = loop.time() + self.timeout
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
