"""Leader election on a coordination.k8s.io/v1 Lease against an in-process server, on a
VirtualClock: acquire by create, renew, a standby that waits out a killed leader's lease (and not
a second less), takeover right after a release, giving up when the Lease is taken, and two
managers that never run their controllers at the same time.

Out of scope: the reconcile loop itself (test_manager_reconcile.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from api import server as servers
from controllers.runtime import client as clients
from controllers.runtime import leaderelection as elections
from controllers.runtime import manager as managers
from controllers.runtime import reconcile
from cp import clock as clocks
from tests.waiting import eventually

LEASES = "leases.coordination.k8s.io"


def _config(identity: str, *, release: bool = True) -> elections.LeaderElectionConfig:
    return elections.LeaderElectionConfig(lease_name="test-lease", lease_namespace="kube-system",
                                          identity=identity, release_on_cancel=release)


async def advance_until(clock: clocks.VirtualClock, predicate: Callable[[], object], *, step: float = 0.25,
                        limit: float = 60.0, check: Callable[[], None] | None = None) -> float:
    """Move virtual time in steps (letting HTTP round trips finish in between) until `predicate`
    holds; returns the virtual seconds it took. `check` runs after every step (invariants)."""
    start = clock.now()
    stepped = False

    def reached() -> bool:
        nonlocal stepped
        if stepped and check is not None:
            check()
        if predicate():
            return True
        if clock.now() - start > limit:
            raise AssertionError(f"not reached after {clock.now() - start:.2f} virtual seconds")
        clock.advance(step)
        stepped = True
        return False

    await eventually(reached, within=20, what=f"the condition within {limit} virtual seconds")
    return clock.now() - start


async def _lease(client: clients.Client) -> dict[str, Any]:
    return dict((await client.get(LEASES, "test-lease", namespace="kube-system"))["spec"])


async def test_acquire_creates_the_lease_and_renews(client: clients.Client) -> None:
    clock = clocks.VirtualClock(start=1_800_000_000.0)
    e1 = elections.LeaderElector(client, clock=clock, config=_config("one"))
    await asyncio.wait_for(e1.acquire(), 5)
    assert e1.is_leader
    spec = await _lease(client)
    assert spec["holderIdentity"] == "one" and spec["leaseDurationSeconds"] == 15
    assert spec["leaseTransitions"] == 0 and spec["acquireTime"] == spec["renewTime"]
    holding = asyncio.ensure_future(e1.hold())
    first_renew = spec["renewTime"]
    await advance_until(clock, lambda: e1.attempts >= 3)
    await eventually(lambda: e1.attempts >= 3)
    spec = await _lease(client)
    assert spec["holderIdentity"] == "one" and spec["renewTime"] > first_renew
    assert spec["acquireTime"] == first_renew  # kept while renewing
    holding.cancel()
    await asyncio.gather(holding, return_exceptions=True)
    assert await e1.release()
    spec = await _lease(client)
    assert spec["holderIdentity"] == "" and spec["leaseDurationSeconds"] == 1


async def test_standby_waits_out_a_killed_leaders_lease(client: clients.Client) -> None:
    clock = clocks.VirtualClock(start=1_800_000_000.0)
    e1 = elections.LeaderElector(client, clock=clock, config=_config("one", release=False))
    e2 = elections.LeaderElector(client, clock=clock, config=_config("two"))
    await e1.acquire()
    holding = asyncio.ensure_future(e1.hold())
    standby = asyncio.ensure_future(e2.acquire())
    await advance_until(clock, lambda: e2.attempts >= 4)
    assert not standby.done() and e1.is_leader and not e2.is_leader
    # "kill" the leader: it stops renewing and never releases
    holding.cancel()
    await asyncio.gather(holding, return_exceptions=True)
    last_renew = clocks.parse_time((await _lease(client))["renewTime"])
    await advance_until(clock, standby.done, limit=40)
    await standby
    assert e2.is_leader
    taken_after = clock.now() - last_renew
    assert taken_after >= 15.0, f"took over {taken_after:.2f}s after the last renewal"
    assert taken_after <= 15.0 + 2 * 2.4 + 1.0
    spec = await _lease(client)
    assert spec["holderIdentity"] == "two" and spec["leaseTransitions"] == 1


async def test_standby_takes_over_right_after_release(client: clients.Client) -> None:
    clock = clocks.VirtualClock(start=1_800_000_000.0)
    e1 = elections.LeaderElector(client, clock=clock, config=_config("one"))
    e2 = elections.LeaderElector(client, clock=clock, config=_config("two"))
    await e1.acquire()
    standby = asyncio.ensure_future(e2.acquire())
    await advance_until(clock, lambda: e2.attempts >= 2)
    assert await e1.release()
    took = await advance_until(clock, standby.done, limit=10)
    await standby
    assert took <= 2.4 + 0.5  # one retry period (with jitter), not a lease duration
    assert (await _lease(client))["holderIdentity"] == "two"


async def test_leader_gives_up_when_the_lease_is_taken(client: clients.Client) -> None:
    clock = clocks.VirtualClock(start=1_800_000_000.0)
    e1 = elections.LeaderElector(client, clock=clock, config=_config("one"))
    await e1.acquire()
    holding = asyncio.ensure_future(e1.hold())
    lease = await client.get(LEASES, "test-lease", namespace="kube-system")
    lease["spec"]["holderIdentity"] = "intruder"
    await client.update(LEASES, lease)
    await advance_until(clock, holding.done, limit=10)
    await holding
    assert not e1.is_leader and e1.observed_holder == "intruder"
    assert not await e1.release()  # not ours to release


def test_config_checks_the_timing_relation() -> None:
    with pytest.raises(ValueError):
        elections.LeaderElectionConfig(lease_duration=10, renew_deadline=10)
    assert elections.LeaderElectionConfig().identity  # generated


class Recording:
    """A controller that records which manager reconciled what, and flags overlap."""

    def __init__(self, identity: str, others: list[managers.Manager], log: list[tuple[str, str]],
                 overlaps: list[str]) -> None:
        self.identity = identity
        self.others = others
        self.log = log
        self.overlaps = overlaps

    async def reconcile(self, request: reconcile.Request) -> reconcile.Result | None:
        if any(m.leading.is_set() for m in self.others):
            self.overlaps.append(f"{self.identity} reconciled {request.name} while another manager leads")
        self.log.append((self.identity, request.name))
        return None


def _managers(client: clients.Client, clock: clocks.VirtualClock, *,
              release: bool) -> tuple[list[managers.Manager], list[tuple[str, str]], list[str]]:
    log: list[tuple[str, str]] = []
    overlaps: list[str] = []
    mgrs: list[managers.Manager] = []
    for identity in ("one", "two"):
        mgr = managers.Manager(client=client, clock=clock,
                               leader_election=_config(identity, release=release if identity == "one" else True))
        mgrs.append(mgr)
    for mgr in mgrs:
        others = [m for m in mgrs if m is not mgr]
        mgr.add(managers.Controller(name="recording", reconciler=Recording(mgr.identity, others, log, overlaps),
                                    watches=[managers.Watch(kind=clients.resolve("configmaps"))]))
    return mgrs, log, overlaps


async def _cm(client: clients.Client, name: str) -> None:
    await client.create("configmaps", {"metadata": {"name": name, "namespace": "default"}})


@pytest.mark.parametrize("release", [True, False], ids=["released", "killed"])
async def test_two_managers_never_both_act(srv: servers.Running, client: clients.Client, release: bool) -> None:
    clock = clocks.VirtualClock(start=1_800_000_000.0)
    (one, two), log, overlaps = _managers(client, clock, release=release)

    def exclusive() -> None:
        assert not (one.leading.is_set() and two.leading.is_set()), "both managers lead"

    stop_one, stop_two = asyncio.Event(), asyncio.Event()
    run_one = asyncio.ensure_future(one.run(stop_one))
    await asyncio.wait_for(one.leading.wait(), 5)  # the first candidate takes the free lease at once
    run_two = asyncio.ensure_future(two.run(stop_two))
    try:
        await _cm(client, "first")
        await eventually(lambda: ("one", "first") in log)
        await advance_until(clock, lambda: two.elector is not None and two.elector.attempts >= 3, check=exclusive)
        assert not two.leading.is_set()

        if release:
            stop_one.set()  # clean stop: releases the lease
            await run_one
        else:
            run_one.cancel()  # a crash: no release, the lease must run out
            await asyncio.gather(run_one, return_exceptions=True)
        assert not one.leading.is_set()
        took = await advance_until(clock, two.leading.is_set, check=exclusive, limit=40)
        if release:
            assert took <= 2.4 + 0.5
        else:
            assert took >= 15.0 - 2.4 - 0.5
        await _cm(client, "second")
        await eventually(lambda: ("two", "second") in log)
        assert ("two", "first") in log  # the new leader starts from the cache: level-based
        assert {who for who, name in log if name == "second"} == {"two"}
        assert overlaps == []
    finally:
        stop_one.set()
        stop_two.set()
        await asyncio.gather(run_one, run_two, return_exceptions=True)
