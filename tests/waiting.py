"""Waiting on eventual state in tests without sleeping blindly: poll a check every 10 ms."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any


async def eventually(check: Callable[[], Any], *, within: float = 5.0, what: str = "") -> Any:
    """Poll `check` (sync or async) until it returns something truthy, and return that; fail with
    AssertionError after `within` real seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        result = check()
        if asyncio.iscoroutine(result):
            result = await result
        if result:
            return result
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what or check}")
        await asyncio.sleep(0.01)
