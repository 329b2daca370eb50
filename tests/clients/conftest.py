"""Fixtures for the client-library scenarios: a live server and its kubeconfig (direct or wiretapped)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from api import server as servers
from tests.clients import support


@pytest.fixture
async def cluster(api_server: servers.Running) -> support.Cluster:
    """The in-process API server, reached directly (plain HTTP, no auth)."""
    return support.Cluster(url=api_server.url, kubeconfig=api_server.kubeconfig)


@pytest.fixture
async def wiretap(api_server: servers.Running) -> support.Wiretap:
    return support.Wiretap(api_server.url)


@pytest.fixture
async def tapped(wiretap: support.Wiretap, tmp_path: Path) -> AsyncIterator[support.Cluster]:
    """The same server behind the recording proxy (`wiretap.captured` holds every returned object)."""
    async with wiretap.running(tmp_path / "tapped" / "kubeconfig") as cluster:
        yield cluster
