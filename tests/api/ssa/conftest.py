"""Fixtures of the server-side apply tests over HTTP: the shared `api_server`/`http` fixtures and an
`Api` helper on them."""

from __future__ import annotations

import aiohttp
import pytest

from tests.api.ssa.support import Api


@pytest.fixture
async def api(http: aiohttp.ClientSession) -> Api:
    return Api(http)
