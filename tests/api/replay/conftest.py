"""Fixtures for the replay server's tests: a recorded run (tests/recordings.py) and a paused replay
server over it, with an HTTP client for that server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from api import replay
from storage import recording
from storage import replay as replay_log
from tests import recordings
from tests.recordings import recorded as recorded


@pytest.fixture(params=["memory", "stream"])
async def replayed(request: pytest.FixtureRequest, recorded: recordings.Recorded,
                   tmp_path: Path) -> AsyncIterator[replay.ReplayServer]:
    """A paused replay server at revision 0: over the recorded NDJSON loaded in memory, and over the
    recorded data dir streamed from the store, three events a page (the same answers are expected)."""
    spec = str(recorded.ndjson) if request.param == "memory" else str(recorded.data_dir)
    async with recording.opened(spec) as source, \
            replay.serving(source, data_dir=tmp_path / "replay", speed=None, page=3) as srv:
        assert isinstance(srv.log, replay_log.StreamReplayLog) == (request.param == "stream")
        yield srv


@pytest.fixture
async def http(replayed: replay.ReplayServer) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(base_url=replayed.url) as session:
        yield session
