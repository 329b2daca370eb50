"""cp/collector.py: the process's garbage-collector settings (made by the entry points only)."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator

import pytest

from cp import collector


@pytest.fixture
def restored() -> Iterator[None]:
    thresholds, enabled = gc.get_threshold(), gc.isenabled()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)
    if enabled:
        gc.enable()


def test_tune_freezes_and_only_raises_thresholds(restored: None) -> None:
    gc.set_threshold(700, 50, 10)
    collector.tune(thresholds=collector.SERVER)
    assert gc.get_threshold() == (20_000, 50, 20)
    assert gc.get_freeze_count() > 0
    collector.tune(thresholds=collector.CONTROLLERS)  # a server with in-process controllers
    assert gc.get_threshold() == (50_000, 50, 100)
    collector.tune(thresholds=collector.SERVER)  # never lowers what is set
    assert gc.get_threshold() == (50_000, 50, 100)


async def test_tune_when_waits_for_ready(restored: None) -> None:
    gc.set_threshold(700, 10, 10)
    ready = asyncio.Event()
    task = asyncio.create_task(collector.tune_when(ready, thresholds=collector.CONTROLLERS))
    await asyncio.sleep(0)
    assert gc.get_threshold() == (700, 10, 10)
    ready.set()
    await task
    assert gc.get_threshold() == collector.CONTROLLERS


def test_paused_restores_what_was_there(restored: None) -> None:
    with collector.paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    with collector.paused():
        assert not gc.isenabled()
    assert not gc.isenabled()  # it was off before: it stays off
