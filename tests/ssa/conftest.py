"""Fixtures of the server-side apply tests: the shared `api_server`/`http` fixtures, an `Api` helper,
and the real kubectl (the harness of tests/kubectl, one fresh HOME per test)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from api import server as servers
from tests.kubectl.conftest import KUBECTL, Kubectl
from tests.ssa.support import Api


@pytest.fixture
async def api(http: aiohttp.ClientSession) -> Api:
    return Api(http)


@pytest.fixture
async def kubectl(api_server: servers.Running, tmp_path: Path) -> AsyncIterator[Kubectl]:
    if KUBECTL is None:
        pytest.skip("kubectl not found: run `make test` (tests/tools/fetch-kubectl.sh) or set CPLANE_KUBECTL")
    k = Kubectl(api_server, home=tmp_path / "home", workdir=tmp_path / "work")
    try:
        yield k
    finally:
        await k.close()
