"""The one clock that server and controllers read time from.

`RealClock` follows wall time. `VirtualClock` moves only when told (`advance`, `set`), so tests
and replays of time-dependent behaviour never sleep. Waiters (`sleep_until`) wake when the clock
passes their deadline, whichever clock it is.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from datetime import UTC, datetime
from typing import Any, Protocol


class Clock(Protocol):
    def now(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class RealClock:
    virtual = False

    def now(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(seconds, 0.0))


class VirtualClock:
    """Time that moves only on `advance`/`set`; `sleep` wakes when the clock passes the deadline."""

    virtual = True

    def __init__(self, *, start: float | None = None) -> None:
        self._now = time.time() if start is None else start
        self._waiters: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    def now(self) -> float:
        return self._now

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (self._now + seconds, next(self._seq), fut))
        await fut

    def set(self, when: float) -> None:
        self._now = max(self._now, when)
        while self._waiters and self._waiters[0][0] <= self._now:
            _, _, fut = heapq.heappop(self._waiters)
            if not fut.done():
                fut.set_result(None)

    def advance(self, seconds: float) -> None:
        self.set(self._now + seconds)


_last_rfc3339: tuple[int, str] = (-1, "")


def rfc3339(ts: float) -> str:
    """Kubernetes metav1.Time: second precision, UTC, `Z` (the last second's text is reused: a
    write stamps two or three times, and a busy server writes many times per second)."""
    global _last_rfc3339
    second = int(ts)
    if _last_rfc3339[0] == second:
        return _last_rfc3339[1]
    text = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    _last_rfc3339 = (second, text)
    return text


def rfc3339_micro(ts: float) -> str:
    """Kubernetes metav1.MicroTime."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def rfc3339_milli(ts: float) -> str:
    """RFC 3339 UTC with milliseconds: `2026-01-02T03:04:05.678Z`."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def parse_time(text: str) -> float:
    """Parse RFC 3339 leniently (`Z` or offsets, optional fraction), as clients send it."""
    t = text.strip()
    if t.endswith(("Z", "z")):
        t = t[:-1] + "+00:00"
    dt = datetime.fromisoformat(t)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


def time_of(value: Any) -> float | None:
    """An object's timestamp field as seconds, or None when it is absent or not RFC 3339."""
    if not value:
        return None
    try:
        return parse_time(str(value))
    except ValueError:
        return None


_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(text: str) -> float:
    """Go-style durations (`90s`, `5m`, `1h30m`, `250ms`), plus `d` for days. Returns seconds."""
    import re

    t = text.strip()
    if not t:
        raise ValueError("empty duration")
    sign = -1.0 if t.startswith("-") else 1.0
    t = t.lstrip("+-")
    parts = re.findall(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h|d)", t)
    if not parts or "".join(n + u for n, u in parts) != t:
        raise ValueError(f'invalid duration "{text}" (examples: 30s, 5m, 1h30m)')
    return sign * sum(float(n) * _UNITS[u] for n, u in parts)
