"""The CronJob controller (controllers/cronjob.py): schedules in a time zone, and end to end on a
VirtualClock — a Job every minute, history limits, Forbid, suspend, lastScheduleTime and
lastSuccessfulTime."""

from __future__ import annotations

import datetime as dt
import zoneinfo
from typing import Any

from controllers import cronjob
from controllers.runtime import client as clients
from cp import clock as clocks
from tests.controllers.job import support as s
from tests.controllers.job.conftest import StartBatch
from tests.controllers.support import START

T = clocks.parse_time


def test_schedules_and_descriptors() -> None:
    utc = cronjob.Schedule("@hourly", dt.UTC)
    assert utc.next_after(T("2027-01-15T08:00:30Z")) == T("2027-01-15T09:00:00Z")
    assert utc.next_after(T("2027-01-15T09:00:00Z")) == T("2027-01-15T10:00:00Z")  # strictly after
    assert utc.most_recent(T("2027-01-15T07:30:00Z"), T("2027-01-15T08:00:00Z")) == (T("2027-01-15T08:00:00Z"), 1)
    assert utc.most_recent(T("2027-01-15T08:00:00Z"), T("2027-01-15T08:59:59Z")) == (None, 0)
    every = cronjob.Schedule("*/5 * * * *", dt.UTC)
    assert every.most_recent(T("2027-01-15T08:00:00Z"), T("2027-01-15T08:21:00Z")) == (T("2027-01-15T08:20:00Z"), 4)
    last, missed = every.most_recent(T("2027-01-14T00:00:00Z"), T("2027-01-15T00:00:00Z"))
    assert last == T("2027-01-15T00:00:00Z") and missed == cronjob.MAX_MISSED + 1  # counting stops there


def test_time_zone_and_names() -> None:
    ny = cronjob.Schedule("0 9 * * *", zoneinfo.ZoneInfo("America/New_York"))
    nine = ny.next_after(T("2027-01-15T08:00:00Z"))
    assert nine == T("2027-01-15T14:00:00Z")  # 09:00 EST
    assert ny.format(nine) == "2027-01-15T09:00:00-05:00"
    cj: dict[str, Any] = {"metadata": {"name": "nightly"}, "spec": {"timeZone": "Mars/Olympus"}}
    try:
        cronjob.zone_of(cj)
    except ValueError:
        pass
    else:
        raise AssertionError("an unknown zone must be refused")
    assert cronjob.job_name(cj, T("2027-01-15T08:01:00Z")) == f"nightly-{int(T('2027-01-15T08:01:00Z')) // 60}"
    tz = cronjob.Schedule("TZ=America/New_York 0 9 * * *", dt.UTC)  # the prefix picks the zone
    assert tz.next_after(T("2027-01-15T08:00:00Z")) == T("2027-01-15T14:00:00Z")
    every = cronjob.Schedule("@every 90s", dt.UTC)  # robfig's constant delay
    assert every.next_after(T("2027-01-15T08:00:00.5Z")) == T("2027-01-15T08:01:30Z")
    assert every.most_recent(T("2027-01-15T08:00:00Z"), T("2027-01-15T08:05:00Z")) == (T("2027-01-15T08:04:30Z"), 3)
    for bad in ("bogus", "61 * * * *", "* * * *", "0 0 L * *", "*/5 * * * * *"):
        try:
            cronjob.Schedule(bad, dt.UTC)
        except ValueError:
            continue
        raise AssertionError(f"{bad!r} must be refused")


def cron_job(name: str, schedule: str, *, run: float = 10, **spec: Any) -> dict[str, Any]:
    template = s.job("x", run=run)["spec"]
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedule": schedule, "jobTemplate": {"metadata": {"labels": {"cron": name}}, "spec": template},
                     **spec}}


async def jobs_of(client: clients.Client, name: str) -> list[dict[str, Any]]:
    items = (await client.list(s.JOBS, namespace="default", label_selector=f"cron={name}")).items
    return sorted(items, key=lambda j: j["metadata"]["name"])


async def test_a_job_every_minute_of_virtual_time(client: clients.Client, clock: clocks.VirtualClock,
                                                  start_batch: StartBatch) -> None:
    cluster = await start_batch(extra=("cronjob", "garbage-collector"))
    await client.create(s.CRONJOBS, cron_job("tick", "* * * * *", successfulJobsHistoryLimit=2),
                        namespace="default")
    await cluster.settle()
    assert await jobs_of(client, "tick") == []
    names = []
    clock.advance(0.5)  # the controller looks again 100 ms after each scheduled time (upstream)
    for minute in range(1, 5):
        clock.advance(60 if minute == 1 else 50)

        async def started(minute: int = minute) -> list[dict[str, Any]] | None:
            jobs = await jobs_of(client, "tick")
            return jobs if any(j["metadata"]["name"] == f"tick-{int(START) // 60 + minute}" for j in jobs) else None
        jobs = await s.eventually(started, what=f"the Job of minute {minute}")
        names.append(f"tick-{int(START) // 60 + minute}")
        newest = next(j for j in jobs if j["metadata"]["name"] == names[-1])
        assert newest["metadata"]["annotations"][cronjob.SCHEDULED_TIMESTAMP] == clocks.rfc3339(START + 60 * minute)
        assert newest["metadata"]["ownerReferences"][0]["kind"] == "CronJob"
        async def recorded(minute: int = minute) -> dict[str, Any] | None:
            cj = await client.get(s.CRONJOBS, "tick", namespace="default")
            return cj if cj["status"].get("lastScheduleTime") == clocks.rfc3339(START + 60 * minute) else None
        cj = await s.eventually(recorded, what="lastScheduleTime")
        assert [r["name"] for r in cj["status"].get("active") or []][-1] == names[-1]
        await s.eventually(lambda name=names[-1]: s.running(client, name, 1), what="its pod running")
        clock.advance(10)
        await s.eventually(lambda name=names[-1]: s.job_condition(client, name, "Complete"), what="Job complete")
    await cluster.settle()

    async def history() -> list[str] | None:
        jobs = [j["metadata"]["name"] for j in await jobs_of(client, "tick") if not j["metadata"].get("deletionTimestamp")]
        return jobs if jobs == names[-2:] else None
    await s.eventually(history, what="two Jobs of history kept")
    cj = await client.get(s.CRONJOBS, "tick", namespace="default")
    assert "active" not in cj["status"]
    assert cj["status"]["lastSuccessfulTime"] == clocks.rfc3339(START + 60 * 4 + 10)
    reasons = [e[1] for e in await s.events(client, "tick")]
    assert reasons.count("SuccessfulCreate") == 4 and reasons.count("SawCompletedJob") == 4
    assert reasons.count("SuccessfulDelete") == 2


async def test_forbid_skips_while_a_job_runs_and_suspend_stops(client: clients.Client, clock: clocks.VirtualClock,
                                                               start_batch: StartBatch) -> None:
    cluster = await start_batch(extra=("cronjob",))
    await client.create(s.CRONJOBS, cron_job("solo", "@hourly", run=5400, concurrencyPolicy="Forbid"),
                        namespace="default")
    clock.advance(3600.5)
    await s.eventually(lambda: jobs_of(client, "solo"), what="the first Job")
    clock.advance(3600)  # the first Job runs 90 minutes: the 10:00 run is skipped
    await cluster.settle()
    assert len(await jobs_of(client, "solo")) == 1
    assert ("Normal", "JobAlreadyActive", "Not starting job because prior execution is running and concurrency "
            "policy is Forbid") in await s.events(client, "solo")
    await client.patch(s.CRONJOBS, "solo", {"spec": {"suspend": True}}, namespace="default")
    clock.advance(3 * 3600)
    await cluster.settle()
    assert len(await jobs_of(client, "solo")) == 1
