"""Two leader-elected controller managers over two API replicas on one PostgreSQL schema (issue #11).

The managers (`cplane controllers --leader-elect --fleet`, one per replica) run the simulated fleet,
the claim-template controller, the garbage collector and the scheduler. Pods that each need one of
the fleet's 8 GPUs (through a ResourceClaimTemplate) run for a second and finish, so devices are
freed and handed out again. The leading manager is SIGKILLed mid-way (no Lease release):

- the standby takes over once the Lease expires — never earlier than the lease duration after the
  leader's last renewal (that would be two leaders), and at most two retry periods later (one to
  notice the renewal, one to try again after expiry);
- every pod runs to completion across the takeover;
- no device is ever allocated to two claims: checked at every revision of the event log (only claim
  events change allocations), and the API's Exact lists (`resourceVersionMatch=Exact`) agree at each
  revision where an allocation changed.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from controllers.runtime import leaderelection as elections
from cp.testing import eventually
from storage import factory, log
from tests.e2e.scaleout import cluster as clusters

pytestmark = pytest.mark.postgres

ROOT = Path(__file__).resolve().parents[3]
FLEET = ROOT / "examples" / "fleets" / "demo.yaml"  # 2 nodes x 4 GPUs (gpu.example.com) + 1 NIC each
GPUS = 8
CONTROLLERS = "fleet,resourceclaim,garbage-collector,scheduler,serviceaccount"
LEASE = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/cplane-controller-manager"
CLAIMS = "/apis/resource.k8s.io/v1/resourceclaims"
DEFAULTS = elections.LeaderElectionConfig(identity="-")  # what `cplane controllers --leader-elect` uses
TEMPLATE = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "one-gpu", "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [
                {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}}

Device = tuple[str, str, str]  # driver, pool, device


def pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default",
                         "annotations": {"sim.cplane.dev/run-seconds": "1"}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}],
                     "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]}}


def allocated(claim: Mapping[str, Any]) -> list[Device]:
    results = (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
    return [(r["driver"], r["pool"], r["device"]) for r in results]


def double_allocations(claims: Mapping[str, list[Device]]) -> dict[Device, list[str]]:
    holders: dict[Device, list[str]] = {}
    for key, devices in claims.items():
        for device in devices:
            holders.setdefault(device, []).append(key)
    return {device: keys for device, keys in holders.items() if len(keys) > 1}


@pytest.mark.timeout(240)  # ~35 s; the lease alone takes 15-20 s, and a loaded 2-core machine is slow
async def test_the_standby_manager_takes_over_and_no_device_is_ever_allocated_twice(
        pg_url: str, tmp_path: Path) -> None:
    async with clusters.cluster(db_url=pg_url, workdir=tmp_path) as c, aiohttp.ClientSession() as http:
        a, b = await c.replicas(2)
        managers = [await c.manager(server=a.url, fleet=FLEET, only=CONTROLLERS),
                    await c.manager(server=b.url, fleet=FLEET, only=CONTROLLERS)]

        async def lease_holder() -> str:
            async with http.get(b.url + LEASE) as r:
                return str((json.loads(await r.read()).get("spec") or {}).get("holderIdentity") or "") \
                    if r.status == 200 else ""

        async def gpus_published() -> bool:
            slices = await clusters.get_json(http, b.url + "/apis/resource.k8s.io/v1/resourceslices")
            return sum(len(s["spec"].get("devices") or []) for s in slices["items"]
                       if s["spec"]["driver"] == "gpu.example.com") == GPUS

        holder = await eventually(lease_holder, within=30, interval=0.2, what="a leader")
        await eventually(gpus_published, within=30, interval=0.2, what="the fleet's GPUs")
        by_pid = {m.pid: m for m in managers}
        leader = by_pid[int(holder.split("_")[-2])]
        standby = next(m for m in managers if m is not leader)
        async with http.post(a.url + "/apis/resource.k8s.io/v1/namespaces/default/resourceclaimtemplates",
                             json=TEMPLATE) as r:
            assert r.status == 201, await r.text()

        async def create_pods(names: list[str]) -> None:
            for i, name in enumerate(names):  # alternately through each replica
                async with http.post((a, b)[i % 2].url + "/api/v1/namespaces/default/pods",
                                     json=pod(name)) as r:
                    assert r.status == 201, await r.text()

        async def phases() -> Counter[str]:
            pods = await clusters.get_json(http, b.url + "/api/v1/namespaces/default/pods")
            return Counter(p["status"].get("phase", "") for p in pods["items"])

        # 20 pods for 8 GPUs: some wait (Unschedulable) for devices to be freed.
        await create_pods([f"before-{i}" for i in range(20)])
        await eventually(lambda: _at_least(phases, "Succeeded", 8), within=30, interval=0.2,
                         what="8 pods done")
        killed_at = time.time()
        await leader.kill()  # SIGKILL: the Lease is not released
        await create_pods([f"during-{i}" for i in range(12)])

        new_holder = await eventually(_changed(lease_holder, holder), within=40, interval=0.2,
                                      what="a new leader")
        took_over_after = time.time() - killed_at
        assert int(new_holder.split("_")[-2]) == standby.pid
        await create_pods([f"after-{i}" for i in range(8)])
        await eventually(lambda: _exactly(phases, "Succeeded", 40), within=60, interval=0.2,
                         what="every pod done")

        # ---- the Lease's history: one leader at a time, and the takeover bound ------------------------
        events = await read_log(pg_url)
        lease_writes = [(e.time, _decode(e)["spec"]["holderIdentity"]) for e in events
                        if e.resource == "leases" and e.name == "cplane-controller-manager"]
        last_renewal = max(when for when, who in lease_writes if who == holder)
        takeover = min(when for when, who in lease_writes if who == new_holder)
        retry = DEFAULTS.retry_period * elections.JITTER
        print(f"takeover {takeover - last_renewal:.1f} s after the last renewal, {took_over_after:.1f} s "
              f"after the kill (lease {DEFAULTS.lease_duration:.0f} s, retry {DEFAULTS.retry_period:.0f} s)")
        # Never before the lease the standby last saw renewed has run out (no two leaders) ...
        assert takeover - last_renewal >= DEFAULTS.lease_duration
        # ... and soon after: the standby notices the renewal on its next try (<= retry) and takes over
        # on its first try after the lease duration (<= retry), plus request latency.
        assert takeover - last_renewal <= DEFAULTS.lease_duration + 2 * retry + 1.0
        assert [who for _, who in lease_writes if who not in (holder, new_holder)] == []

        # ---- no device allocated twice, at any revision ----------------------------------------------
        claims: dict[str, list[Device]] = {}  # live claims at the current revision -> their devices
        at: dict[int, dict[str, list[Device]]] = {}  # revision -> allocations, where they changed
        ever: dict[Device, set[str]] = {}
        allocations_by_term = Counter[str]()
        checked = 0
        for event in events:
            if event.resource != "resourceclaims":
                continue
            checked += 1
            key = f"{event.namespace}/{event.name}/{event.uid}"
            obj = _decode(event)
            before = claims.get(key)
            if event.type == "DELETED":
                claims.pop(key, None)
            else:
                claims[key] = allocated(obj)
            assert not double_allocations(claims), \
                f"revision {event.revision}: {double_allocations(claims)}"
            if sorted(claims.get(key) or []) != sorted(before or []):
                at[event.revision] = {k: sorted(v) for k, v in claims.items() if v}
            for device in claims.get(key, []):
                ever.setdefault(device, set()).add(key)
            if claims.get(key) and not before:
                allocations_by_term["before" if event.time < killed_at else "after"] += 1
        assert len(ever) == GPUS and sum(map(len, ever.values())) >= 2 * GPUS, \
            "the GPUs were handed out, freed and handed out again"
        assert allocations_by_term["before"] >= 8 and allocations_by_term["after"] >= 8, allocations_by_term

        # The same answer from the API, reading the past exactly at each of those revisions.
        for revision, expected in at.items():
            listed = await clusters.get_json(http, b.url + CLAIMS, resourceVersion=str(revision),
                                             resourceVersionMatch="Exact")
            assert listed["metadata"]["resourceVersion"] == str(revision)
            got = {f"{o['metadata']['namespace']}/{o['metadata']['name']}/{o['metadata']['uid']}":
                   sorted(allocated(o)) for o in listed["items"] if allocated(o)}
            assert got == expected, revision
        print(f"{len(events)} events, {checked} claim events checked, {len(at)} Exact lists, "
              f"{sum(map(len, ever.values()))} "
              f"allocations of {len(ever)} GPUs ({dict(allocations_by_term)} before/after the kill)")


async def read_log(db_url: str) -> list[log.Event]:
    event_log = factory.open_event_log(url=db_url)
    await event_log.start()
    try:
        out: list[log.Event] = []
        while batch := await event_log.after(out[-1].revision if out else 0, limit=1000):
            out += batch
        return out
    finally:
        await event_log.close()


def _decode(event: log.Event) -> dict[str, Any]:
    return json.loads(event.object)  # type: ignore[no-any-return]


async def _at_least(phases: Any, phase: str, count: int) -> bool:
    return bool((await phases())[phase] >= count)


async def _exactly(phases: Any, phase: str, count: int) -> bool:
    seen = await phases()
    return bool(seen[phase] == count == sum(seen.values()))


def _changed(current: Any, old: str) -> Any:
    async def check() -> str:
        holder = await current()
        return holder if holder and holder != old else ""

    return check

