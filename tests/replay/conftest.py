"""Fixtures for the replay tests: a recorded run (live server + controllers + writes) and replay
servers over recordings. See tests/replay/support.py."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from api import replay
from storage import recording
from tests.replay import support


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> support.Recorded:
    """One recorded run per module, on disk: the live data dir (SQLite) and its NDJSON export."""
    tmp = tmp_path_factory.mktemp("recorded")
    return asyncio.run(support.record_to_disk(tmp))


@pytest.fixture
async def replayed(recorded: support.Recorded, tmp_path: Path) -> AsyncIterator[replay.ReplayServer]:
    """A paused replay server over the recorded NDJSON, at revision 0."""
    async with recording.opened(str(recorded.ndjson), in_memory=True) as source:
        assert isinstance(source, recording.Recording)
        async with replay.serving(source, data_dir=tmp_path / "replay", speed=None) as srv:
            yield srv


@pytest.fixture
async def http(replayed: replay.ReplayServer) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(base_url=replayed.url) as session:
        yield session


@pytest.fixture(autouse=True)
def _restore_structlog() -> object:
    """CLI entry points configure structlog for their process; put the test process's config back."""
    import structlog

    saved = structlog.get_config()
    yield
    structlog.configure(**saved)
