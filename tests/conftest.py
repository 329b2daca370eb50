"""Shared fixtures: an in-process API server on a fresh store, and an HTTP client for it."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from api import server as servers

PG_URL = os.environ.get("CPLANE_TEST_PG_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test")


@pytest.fixture
async def api_server(tmp_path: Path) -> AsyncIterator[servers.Running]:
    """An API server (no controllers) on a fresh SQLite store in tmp_path."""
    async with servers.running(data_dir=tmp_path / "data", db_url=os.environ.get("CPLANE_TEST_DB")) as srv:
        yield srv


@pytest.fixture
async def http(api_server: servers.Running) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(base_url=api_server.url) as session:
        yield session
