"""TTL after finished (controllers/ttl_after_finished.py) on a VirtualClock: a finished Job is
deleted, with its pods (foreground), `ttlSecondsAfterFinished` after its terminal condition; a
Job without a TTL stays; a TTL added later counts from the finish, not from the change."""

from __future__ import annotations

from controllers import ttl_after_finished as ttl
from controllers.job import rules
from controllers.runtime import client as clients
from cp import clock as clocks
from cp import errors
from tests.controllers.job import support as s
from tests.controllers.job.conftest import StartBatch


def test_expiry_is_the_finish_plus_the_ttl() -> None:
    job = {"metadata": {"name": "j"}, "spec": {"ttlSecondsAfterFinished": 100},
           "status": {"conditions": [{"type": "Complete", "status": "True",
                                      "lastTransitionTime": "2027-01-15T08:00:10Z"}]}}
    assert ttl.expires_at(job) == clocks.parse_time("2027-01-15T08:01:50Z")
    assert ttl.expires_at({**job, "status": {}}) is None
    assert ttl.expires_at({**job, "spec": {}}) is None
    assert ttl.expires_at({**job, "metadata": {"deletionTimestamp": "2027-01-15T08:00:10Z"}}) is None


async def gone(client: clients.Client, name: str) -> bool:
    try:
        await s.get_job(client, name)
    except errors.NotFound:
        return True
    return False


async def deleting(client: clients.Client, name: str) -> bool:
    try:
        job = await s.get_job(client, name)
    except errors.NotFound:
        return True
    return bool(job["metadata"].get("deletionTimestamp"))


async def test_finished_job_is_deleted_after_its_ttl(client: clients.Client, clock: clocks.VirtualClock,
                                                     start_batch: StartBatch) -> None:
    cluster = await start_batch(extra=("ttl-after-finished", "garbage-collector"))
    await client.create(s.JOBS, s.job("short", run=10, ttlSecondsAfterFinished=50), namespace="default")
    await client.create(s.JOBS, s.job("kept", run=10), namespace="default")
    await client.create(s.JOBS, s.job("later", run=10), namespace="default")
    await s.eventually(lambda: s.running(client, "short", 1), what="pod running")
    await s.eventually(lambda: s.running(client, "later", 1), what="pod running")
    clock.advance(10)
    for name in ("short", "kept", "later"):
        await s.eventually(lambda name=name: s.job_condition(client, name, rules.COMPLETE), what="Complete")
    clock.advance(30)
    # 30 s after the finish: a TTL of 50 s counts from the finish (+10), so both expire at +60.
    await client.patch(s.JOBS, "later", {"spec": {"ttlSecondsAfterFinished": 50}}, namespace="default")
    clock.advance(19)
    await cluster.settle()
    assert not await gone(client, "short") and not await gone(client, "later")
    clock.advance(1)  # +60: 50 s after the finish
    await s.eventually(lambda: deleting(client, "short"), what="short being deleted (foreground)")
    await s.eventually(lambda: deleting(client, "later"), what="later being deleted (foreground)")
    clock.advance(30)  # the pods' shutdown on the simulated kubelet
    await s.eventually(lambda: gone(client, "short"), what="short deleted")
    await s.eventually(lambda: gone(client, "later"), what="later deleted")
    await s.eventually(lambda: s.no_pods(client, "short"), what="its pod deleted")
    clock.advance(3600)
    await cluster.settle()
    assert not await gone(client, "kept")
