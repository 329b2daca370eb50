"""The virtual clock: the Clock object, server timestamps following it, `cplane clock` commands.

Out of scope: controllers' timers on the clock (tests/controllers/).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from api import server as servers
from cp import clock as clocks

START = clocks.parse_time("2030-01-01T00:00:00Z")
CPLANE = str(Path(sys.executable).parent / "cplane")


@pytest.fixture
async def virtual(tmp_path: Path) -> AsyncIterator[tuple[servers.Running, clocks.VirtualClock]]:
    clock = clocks.VirtualClock(start=START)
    async with servers.running(data_dir=tmp_path / "d", db_url="memory:", clock=clock) as srv:
        yield srv, clock


async def _cli(*args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(CPLANE, *args, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    return proc.returncode or 0, out.decode(), err.decode()


async def test_timestamps_follow_the_virtual_clock(virtual: tuple[servers.Running, clocks.VirtualClock]) -> None:
    srv, clock = virtual
    async with aiohttp.ClientSession(base_url=srv.url) as http:
        async with http.get("/apis/sim.cplane.dev/v1alpha1/clocks/cluster") as r:
            obj = json.loads(await r.read())
        assert obj["spec"] == {"mode": "Virtual", "time": "2030-01-01T00:00:00.000000Z"}
        async with http.post("/api/v1/namespaces/default/configmaps", json={"metadata": {"name": "a"}}) as r:
            assert json.loads(await r.read())["metadata"]["creationTimestamp"] == "2030-01-01T00:00:00Z"

        code, out, err = await _cli("clock", "advance", "5m", "--server", srv.url)
        assert code == 0, err
        assert "2030-01-01T00:05:00" in out
        assert clock.now() == START + 300
        async with http.post("/api/v1/namespaces/default/configmaps", json={"metadata": {"name": "b"}}) as r:
            assert json.loads(await r.read())["metadata"]["creationTimestamp"] == "2030-01-01T00:05:00Z"

        code, out, err = await _cli("clock", "set", "2029-01-01T00:00:00Z", "--server", srv.url)
        assert code == 1 and "only moves forward" in err
        code, out, _ = await _cli("clock", "show", "--kubeconfig", str(srv.kubeconfig))
        assert code == 0 and "time: 2030-01-01T00:05:00.000000Z" in out


async def test_clock_on_real_time_server(api_server: servers.Running) -> None:
    code, out, _ = await _cli("clock", "show", "--server", api_server.url)
    assert code == 0 and "Real" in out
    code, _, err = await _cli("clock", "advance", "1m", "--server", api_server.url)
    assert code == 1 and "--clock virtual" in err


async def test_sleepers_wake_when_the_clock_passes() -> None:
    clock = clocks.VirtualClock(start=0)
    woke: list[float] = []

    async def sleeper(seconds: float) -> None:
        await clock.sleep(seconds)
        woke.append(clock.now())

    tasks = [asyncio.create_task(sleeper(s)) for s in (10, 300, 5)]
    await asyncio.sleep(0)
    clock.advance(60)
    await asyncio.sleep(0)
    assert sorted(woke) == [60, 60]
    clock.advance(240)
    await asyncio.gather(*tasks)
    assert woke[-1] == 300


def test_parse_duration() -> None:
    assert clocks.parse_duration("1h30m") == 5400
    assert clocks.parse_duration("250ms") == 0.25
    with pytest.raises(ValueError):
        clocks.parse_duration("5 minutes")
