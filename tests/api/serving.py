"""An API server over an in-memory event log with given limits, for the tests of what bounds a client
(connections, watches)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from api import server as servers
from api.limits import Limits
from storage import memory


@contextlib.asynccontextmanager
async def limited_server(tmp_path: Path, limits: Limits, *, secure: bool = False,
                         insecure_limits: bool = False) -> AsyncIterator[servers.Running]:
    log = memory.MemoryEventLog()
    await log.start()
    try:
        async with servers.running(data_dir=tmp_path, event_log=log, limits=limits, secure=secure,
                                   insecure_limits=insecure_limits) as srv:
            yield srv
    finally:
        await log.close()
