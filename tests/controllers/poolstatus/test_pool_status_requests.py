"""The ResourcePoolStatusRequest controller (KEP-5677) against a server that serves the kind: each
request answered once with its driver's pools — device counts, allocated devices (shared ones once,
admin access skipped), tainted ones, generations, the limit —, incomplete pools retried then given up,
answered requests deleted after an hour and unanswered ones after a day."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest

from api import server as servers
from controllers import resourcepoolstatusrequest as poolstatus
from controllers.runtime import client as clients
from controllers.runtime import informer as informers
from controllers.runtime import reconcile
from cp import clock as clocks
from cp.testing import eventually
from tests.controllers.poolstatus.support import (
    BASE,
    SLICES,
    TABLE,
    allocated_claim,
    call,
    http,
    options,
    request,
    run_controller,
    slice_,
    srv,
)

__all__ = ["http", "options", "srv"]  # the fixtures


async def test_controller_fills_in_the_fleet_pools(srv: servers.Running, http: aiohttp.ClientSession) -> None:
    gpus = [{"name": f"gpu-{i}"} for i in range(4)]
    for node in ("node-0", "node-1"):
        status, out = await call(http, "POST", SLICES, slice_(f"{node}-gpus", pool=node, node=node, devices=gpus))
        assert status == 201, out
    # node-1's pool is on its second generation: the old slice does not count.
    await call(http, "POST", SLICES, slice_("node-1-old", pool="node-1", node="node-1", generation=0,
                                           devices=[{"name": "old"}]))
    # A tainted device is unavailable; another driver's pool is not reported.
    tainted = [{"name": "gpu-0", "taints": [{"key": "broken", "effect": "NoSchedule"}]}, {"name": "gpu-1"}]
    await call(http, "POST", SLICES, slice_("shared", pool="shared", node=None, devices=tainted))
    await call(http, "POST", SLICES, slice_("nic", pool="node-0", node="node-0", driver="nic.example.com",
                                           devices=[{"name": "nic-0"}]))
    # Two claims share node-0's gpu-0 (counted once), one has gpu-1; an admin-access one is skipped.
    await allocated_claim(http, "a", [{"driver": "gpu.example.com", "pool": "node-0", "device": "gpu-0"},
                                      {"driver": "gpu.example.com", "pool": "node-0", "device": "gpu-1"}])
    await allocated_claim(http, "b", [{"driver": "gpu.example.com", "pool": "node-0", "device": "gpu-0"}])
    await allocated_claim(http, "admin", [{"driver": "gpu.example.com", "pool": "node-1", "device": "gpu-3",
                                           "adminAccess": True}])
    stop = asyncio.Event()
    task = await run_controller(srv, stop)
    try:
        status, out = await call(http, "POST", BASE, request("all"))
        assert status == 201, out
        status, out = await call(http, "POST", BASE, request("one", poolName="node-1"))
        status, out = await call(http, "POST", BASE, request("first", limit=1))

        async def done(name: str) -> Any:
            status, out = await call(http, "GET", f"{BASE}/{name}")
            return out if status == 200 and out.get("status") else None

        everything = (await eventually(lambda: done("all"), what="status of all"))["status"]
        assert everything["poolCount"] == 3
        assert [(p["poolName"], p.get("nodeName"), p["resourceSliceCount"], p["totalDevices"], p["allocatedDevices"],
                 p["availableDevices"], p["unavailableDevices"], p["generation"]) for p in everything["pools"]] == [
            ("node-0", "node-0", 1, 4, 2, 2, 0, 1),
            ("node-1", "node-1", 1, 4, 0, 4, 0, 1),
            ("shared", None, 1, 2, 0, 1, 1, 1)]
        [cond] = everything["conditions"]
        assert (cond["type"], cond["status"], cond["reason"], cond["message"]) == (
            "Complete", "True", "CalculationComplete", "Calculated status for 3 pools")

        one = (await eventually(lambda: done("one")))["status"]
        assert one["poolCount"] == 1 and [p["poolName"] for p in one["pools"]] == ["node-1"]
        first = (await eventually(lambda: done("first")))["status"]
        assert first["poolCount"] == 3 and [p["poolName"] for p in first["pools"]] == ["node-0"]
        status, table = await call(http, "GET", f"{BASE}/first",
                                   accept=TABLE)
        assert table["rows"][0]["cells"][2:9] == [4, 2, 2, 0, 0, 3, "Complete (1/3 pools)"]

        # Computed once: a new slice changes nothing of a request already answered.
        await call(http, "POST", SLICES, slice_("node-2-gpus", pool="node-2", node="node-2", devices=gpus))
        status, _ = await call(http, "POST", BASE, request("later"))
        assert status == 201
        later = (await eventually(lambda: done("later")))["status"]
        assert later["poolCount"] == 4
        status, out = await call(http, "GET", f"{BASE}/all")
        assert out["status"] == everything
    finally:
        stop.set()
        await task


async def test_incomplete_pools_are_retried_then_given_up(srv: servers.Running,
                                                          http: aiohttp.ClientSession) -> None:
    """Reconciles driven by hand on the controller's caches: a pool with one of its two slices makes
    each try fail (the queue's backoff retries it) and the sixth give up for good, writing nothing;
    once the second slice is there the status is written."""
    status, created = await call(http, "POST", BASE, request("r"))
    assert status == 201
    clock = clocks.VirtualClock(start=clocks.parse_time(created["metadata"]["creationTimestamp"]))
    async with clients.Client(srv.url) as client:
        factory = informers.InformerFactory(client, clock=clock)
        ctl = poolstatus.ResourcePoolStatusRequestController(client=client, informer_factory=factory,
                                                            clock=clock, taint_rules=True)
        ctl.requests.upsert(created)
        ctl.slices.upsert(slice_("half-0", pool="p", node="n", count=2, devices=[{"name": "a"}]))
        key = reconcile.Request(name="r")
        for _ in range(poolstatus.MAX_RETRIES):
            with pytest.raises(poolstatus.PoolsIncomplete):
                await ctl.reconcile(key)
        with pytest.raises(reconcile.TerminalError):
            await ctl.reconcile(key)
        status, out = await call(http, "GET", f"{BASE}/r")
        assert "status" not in out

        ctl.slices.upsert(slice_("half-1", pool="p", node="n", count=2, devices=[{"name": "b"}]))
        result = await ctl.reconcile(key)
        assert result is not None and result.requeue_after == poolstatus.PENDING_TTL  # until the cache sees it
        status, out = await call(http, "GET", f"{BASE}/r")
        [pool] = out["status"]["pools"]
        assert (pool["resourceSliceCount"], pool["totalDevices"], pool["availableDevices"]) == (2, 2, 2)


async def test_answered_requests_are_deleted_an_hour_later(srv: servers.Running,
                                                         http: aiohttp.ClientSession) -> None:
    status, created = await call(http, "POST", BASE, request("r"))
    assert status == 201
    start = clocks.parse_time(created["metadata"]["creationTimestamp"])
    clock = clocks.VirtualClock(start=start)
    async with clients.Client(srv.url) as client:
        factory = informers.InformerFactory(client, clock=clock)
        ctl = poolstatus.ResourcePoolStatusRequestController(client=client, informer_factory=factory,
                                                            clock=clock, taint_rules=False)
        key = reconcile.Request(name="r")
        ctl.requests.upsert(created)
        await ctl.reconcile(key)
        status, answered = await call(http, "GET", f"{BASE}/r")
        ctl.requests.upsert(answered)
        done = clocks.parse_time(answered["status"]["conditions"][0]["lastTransitionTime"])
        result = await ctl.reconcile(key)
        assert result is not None and result.requeue_after == pytest.approx(done + 3600 - start)
        clock.advance(3599)
        assert (await call(http, "GET", f"{BASE}/r"))[0] == 200
        clock.advance(done + 3600 - start - 3599)
        assert await ctl.reconcile(key) is None
        assert (await call(http, "GET", f"{BASE}/r"))[0] == 404

        # One never answered goes 24 hours after its creation.
        status, pending = await call(http, "POST", BASE, request("pending"))
        ctl.requests.upsert({**pending, "metadata": {**pending["metadata"],
                                                     "creationTimestamp": clocks.rfc3339(clock.now() - 24 * 3600)}})
        assert await ctl.reconcile(reconcile.Request(name="pending")) is None
        assert (await call(http, "GET", f"{BASE}/pending"))[0] == 404


def test_expiry() -> None:
    created = {"metadata": {"creationTimestamp": "2026-12-05T00:00:00Z"}}
    start = clocks.parse_time("2026-12-05T00:00:00Z")
    assert poolstatus.expires_at(created) == start + 24 * 3600
    done = {**created, "status": {"poolCount": 0, "conditions": [
        {"type": "Complete", "status": "True", "lastTransitionTime": "2026-12-05T02:00:00Z"}]}}
    assert poolstatus.expires_at(done) == start + 3 * 3600


async def test_a_refused_status_is_not_retried(srv: servers.Running, http: aiohttp.ClientSession) -> None:
    """A pool at generation 0 cannot be reported (the API requires a generation; zero is unset)."""
    status, created = await call(http, "POST", BASE, request("r"))
    assert status == 201
    clock = clocks.VirtualClock(start=clocks.parse_time(created["metadata"]["creationTimestamp"]))
    async with clients.Client(srv.url) as client:
        ctl = poolstatus.ResourcePoolStatusRequestController(
            client=client, informer_factory=informers.InformerFactory(client, clock=clock), clock=clock,
            taint_rules=False)
        ctl.requests.upsert(created)
        ctl.slices.upsert(slice_("s", pool="p", node="n", generation=0, devices=[{"name": "a"}]))
        with pytest.raises(reconcile.TerminalError, match="generation: Required value"):
            await ctl.reconcile(reconcile.Request(name="r"))
