"""The process's cyclic garbage collector: every setting a cplane process makes to it, in one place.

The process entry points (`cplane serve`, `cplane controllers`, `cplane replay`, `python -m
controllers`) call `tune` once their long-lived state is built; library code and in-process test
servers never change the collector for the whole process. The one local change is `paused()`, around a
burst of decoding that allocates no cycles (on the event loop, or in a worker thread decoding a large
request body: the collector is process-wide, and the first pause to end enables it again).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import Iterator

# The API server: its start-up heap (schemas, registries: tens of thousands of objects) is frozen,
# and young generations grow, since a LIST decodes thousands of dicts at once and with the default
# thresholds every decode burst triggers full traversals of that heap (measured 5x slower).
SERVER = (20_000, 20, 20)
# Controllers: once the informer caches have synced they hold hundreds of thousands of long-lived
# dicts that every full collection would traverse again (about 0.5 s each at 5,000 pods and 5,000
# claims, a dozen times while 2,500 pods are scheduled: 3 ms per pod, more than the scheduling cycle).
CONTROLLERS = (50_000, 20, 100)


def tune(*, thresholds: tuple[int, int, int]) -> None:
    """Freeze every object alive now (later collections skip them) and raise the thresholds to at least
    `thresholds` (a server with in-process controllers ends with the larger of both). No
    `gc.collect()` first: it costs 40-70 ms of start-up to reclaim a few start-up cycles. Reference
    counting still frees everything that is not a cycle."""
    gc.freeze()
    current = gc.get_threshold()
    gc.set_threshold(*(max(c, t) for c, t in zip(current, thresholds, strict=True)))


async def tune_when(ready: asyncio.Event, *, thresholds: tuple[int, int, int]) -> None:
    """`tune` once `ready` is set (controllers: when their caches have synced)."""
    await ready.wait()
    tune(thresholds=thresholds)


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """No cyclic garbage collection inside the block, for decoding thousands of objects and building
    their table at once: decoded JSON holds no cycles, so the collections it would trigger are pure
    cost (they doubled it). The block must not await: nothing else should run with it paused."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
