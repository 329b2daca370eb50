"""Fixtures for the replay server's tests: a recorded run (tests/recordings.py) and a paused replay
server over it, with an HTTP client for that server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from api import replay
from storage import recording
from tests import recordings
from tests.recordings import recorded as recorded


@pytest.fixture
async def replayed(recorded: recordings.Recorded, tmp_path: Path) -> AsyncIterator[replay.ReplayServer]:
    """A paused replay server over the recorded NDJSON, at revision 0."""
    async with recording.opened(str(recorded.ndjson), in_memory=True) as source:
        assert isinstance(source, recording.Recording)
        async with replay.serving(source, data_dir=tmp_path / "replay", speed=None) as srv:
            yield srv


@pytest.fixture
async def http(replayed: replay.ReplayServer) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(base_url=replayed.url) as session:
        yield session
