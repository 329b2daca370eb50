"""The CronJob controller: creates a Job for each scheduled time of a CronJob
(kube-controller-manager's `cronjob-controller`, `pkg/controller/cronjob/cronjob_controllerv2.go`).

Schedules are robfig/cron's standard lines — five fields, the descriptors (`@yearly`, `@annually`,
`@monthly`, `@weekly`, `@daily`, `@midnight`, `@hourly`), `@every <duration>` and a `TZ=` prefix —
checked with the server's cron validation and stepped by `croniter`, in `spec.timeZone` (an IANA
name, `zoneinfo`) or else UTC, on the injected clock.

Per CronJob key (`namespace/name`), from the caches:

1. **Children**: Jobs controlled by the CronJob. A finished Job still in `status.active` leaves it
   (Event `SawCompletedJob`); a Complete one moves `status.lastSuccessfulTime` to its completion
   time. An active reference whose Job is in neither the cache nor the server leaves it
   (`MissingJob`); an unfinished child not in the list gets a Warning `UnexpectedJob`.
2. **History**: finished children beyond `successfulJobsHistoryLimit` (Complete) and
   `failedJobsHistoryLimit` (Failed) are deleted, oldest first (background propagation).
3. Being deleted, suspended, an unknown time zone (`UnknownTimeZone`) or an unparseable schedule
   (`UnparseableSchedule`): nothing is scheduled.
4. **Schedule**: the most recent scheduled time after `lastScheduleTime` (else the creation time,
   but no earlier than now - `startingDeadlineSeconds`) and not after now. None: wait for the next
   one. More than 100 missed: Warning `TooManyMissedTimes` (the most recent still runs). Past its
   starting deadline: Warning `MissSchedule`. Already started (`lastScheduleTime`, or its Job in
   the active list): wait.
5. **Concurrency**: `Forbid` with an active Job: `JobAlreadyActive`, wait; `Replace`: delete the
   active Jobs (`SuccessfulDelete`) first; `Allow`: run alongside.
6. **Create** the Job `<cronjob>-<scheduled time in Unix minutes>` from `spec.jobTemplate`
   (labels, annotations, spec), annotated `batch.kubernetes.io/cronjob-scheduled-timestamp`
   (RFC 3339 in the schedule's zone), with a controller reference; `SuccessfulCreate` "Created job
   x" (or `FailedCreate`); add it to `status.active` and set `lastScheduleTime`; requeue for the
   next scheduled time (+100 ms, as upstream).

Each pass reads the CronJob live (one GET; the cache may not show the status the previous pass
wrote, and a stale active list would report a Job twice). Status is written with PUT /status only
when it changed.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from collections.abc import Mapping, Sequence
from typing import Any

import structlog
from croniter import CroniterBadCronError, CroniterBadDateError, CroniterNotAlphaError, croniter

from controllers import replicaset as rsc
from controllers.runtime import cache as caches
from controllers.runtime import client as clients
from controllers.runtime import informer as informers
from controllers.runtime import manager as managers
from controllers.runtime import reconcile
from cp import clock as clocks
from cp import errors
from cp.objects import meta_of, spec_of, status_of, uid_of
from cp.validation import cron

NAME = "cronjob"
COMPONENT = "cronjob-controller"
FIELD_MANAGER = "cronjob-controller"
CRONJOBS = clients.resolve("cronjobs.batch")
JOBS = clients.resolve("jobs.batch")
INDEXERS = {caches.OWNER_UID: caches.by_owner_uid}
SCHEDULED_TIMESTAMP = "batch.kubernetes.io/cronjob-scheduled-timestamp"
MAX_MISSED = 100  # upstream: more missed start times than this is reported
NEXT_SLACK = 0.1  # upstream `nextScheduleDelta`: requeue 100 ms after the scheduled time

logger = structlog.get_logger("cplane.controllers.cronjob")

_BAD_SCHEDULE = (CroniterBadCronError, CroniterBadDateError, CroniterNotAlphaError, ValueError, KeyError)


# ---------------------------------------------------------------------- schedule


class Schedule:
    """A cron line in a time zone: the scheduled times around a moment (seconds since the epoch).

    The line is first checked with robfig/cron's standard rules (`cp.validation.cron`, the server's
    validation, so errors read as upstream's); a `TZ=`/`CRON_TZ=` prefix picks the zone; `@every
    <duration>` is robfig's constant delay (whole seconds, at least 1 s, counted from the previous
    time); everything else is stepped by croniter."""

    def __init__(self, expression: str, zone: dt.tzinfo) -> None:
        cron.parse_standard(expression)  # raises CronError (a ValueError) with robfig's message
        line = expression
        if line.startswith(("TZ=", "CRON_TZ=")):
            name, _, line = line.partition("=")[2].partition(" ")
            zone = dt.UTC if name in ("", "UTC", "Local") else zoneinfo.ZoneInfo(name)
            line = line.strip()
        self.delay: float | None = None
        if line.startswith("@every "):
            self.delay = max(float(int(clocks.parse_duration(line[len("@every "):]))), 1.0)
        elif not croniter.is_valid(line):
            raise ValueError(f"unsupported cron expression {line!r}")
        self.expression = line
        self.zone = zone

    def _at(self, when: float) -> dt.datetime:
        return dt.datetime.fromtimestamp(when, tz=dt.UTC).astimezone(self.zone)

    def next_after(self, when: float) -> float:
        """The first scheduled time strictly after `when`."""
        if self.delay is not None:
            return float(int(when)) + self.delay
        nxt = croniter(self.expression, self._at(when)).get_next(dt.datetime)
        return float(nxt.timestamp())

    def most_recent(self, earliest: float, now: float) -> tuple[float | None, int]:
        """The latest scheduled time t with earliest < t <= now, and how many there are (counted
        up to MAX_MISSED + 1) — upstream `mostRecentScheduleTime`."""
        if now <= earliest:
            return None, 0
        if self.delay is not None:
            base = float(int(earliest))
            count = int((now - base) // self.delay)
            return (base + count * self.delay, min(count, MAX_MISSED + 1)) if count > 0 else (None, 0)
        last = croniter(self.expression, self._at(int(now) + 1)).get_prev(dt.datetime).timestamp()
        if last <= earliest:
            return None, 0
        it = croniter(self.expression, self._at(earliest))
        count = 0
        while count <= MAX_MISSED:
            t = it.get_next(dt.datetime).timestamp()
            if t > now:
                break
            count += 1
        return float(last), count

    def format(self, when: float) -> str:
        """RFC 3339 in the schedule's zone (upstream formats the scheduled time `.In(loc)`)."""
        return self._at(when).isoformat().replace("+00:00", "Z")


def zone_of(cron_job: Mapping[str, Any]) -> dt.tzinfo:
    """spec.timeZone as a zone (UTC without one); raises ValueError for an unknown name."""
    name = spec_of(cron_job).get("timeZone")
    if not name:
        return dt.UTC
    try:
        return zoneinfo.ZoneInfo(str(name))
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(str(exc) or f"unknown time zone {name}") from exc


def job_name(cron_job: Mapping[str, Any], scheduled: float) -> str:
    """`<cronjob>-<scheduled time in minutes since the epoch>` (upstream `getJobName`)."""
    return f"{rsc.name_of(cron_job)}-{int(scheduled) // 60}"


def _finished(job: Mapping[str, Any]) -> str | None:
    """"Complete" or "Failed" when the Job has that condition True (upstream `getFinishedStatus`)."""
    for cond in status_of(job).get("conditions") or []:
        if cond.get("type") in ("Complete", "Failed") and cond.get("status") == "True":
            return str(cond["type"])
    return None


# ---------------------------------------------------------------------- the controller


class CronJobController:
    def __init__(self, *, client: clients.Client, informer_factory: informers.InformerFactory,
                 recorder: managers.EventRecorder, clock: clocks.Clock) -> None:
        self.client = client
        self.recorder = recorder
        self.clock = clock
        self.cron_jobs = informer_factory.informer(CRONJOBS).cache
        self.jobs = informer_factory.informer(JOBS, indexers=INDEXERS).cache

    def watches(self) -> list[managers.Watch]:
        return [managers.Watch(kind=CRONJOBS), managers.Watch(kind=JOBS, map=self.map_job, indexers=INDEXERS)]

    def map_job(self, change: managers.Change) -> list[reconcile.Request]:
        out: list[reconcile.Request] = []
        for obj in (change.obj, change.old or {}):
            ref = rsc.controller_ref(obj)
            if ref is not None and ref.get("kind") == "CronJob":
                request = reconcile.Request(namespace=rsc.namespace_of(change.obj), name=str(ref.get("name") or ""))
                if request not in out:
                    out.append(request)
        return out

    async def reconcile(self, request: reconcile.Request) -> reconcile.Result | None:
        cached = self.cron_jobs.get(request.namespace, request.name)
        if cached is None:
            return None
        try:  # live: a status write of the previous pass may not be in the cache yet
            cj = await self.client.get(CRONJOBS, request.name, namespace=request.namespace)
        except errors.NotFound:
            return None
        children = self.jobs.by_index(caches.OWNER_UID, uid_of(cj))
        children = [j for j in children if (rsc.controller_ref(j) or {}).get("uid") == uid_of(cj)]
        status = caches.deep_copy(status_of(cj))
        await self._sync_children(cj, status, children)
        requeue = await self._schedule(cj, status)
        await self._cleanup_history(cj, children)
        if status != status_of(cj):
            body = dict(cj)
            body["status"] = {k: v for k, v in status.items() if v not in (None, [], {})}
            await self.client.update_status(CRONJOBS, body, field_manager=FIELD_MANAGER)
        return reconcile.Result(requeue_after=requeue) if requeue is not None else None

    # ------------------------------------------------------------------ 1. children

    async def _sync_children(self, cj: Mapping[str, Any], status: dict[str, Any],
                             children: Sequence[Mapping[str, Any]]) -> None:
        active = [dict(r) for r in status.get("active") or []]
        by_uid = {uid_of(j): j for j in children}
        for job in children:
            in_list = any(r.get("uid") == uid_of(job) for r in active)
            outcome = _finished(job)
            if outcome is None and not in_list and not meta_of(job).get("deletionTimestamp"):
                await self.recorder.warning(cj, "UnexpectedJob",
                                            f"Saw a job that the controller did not create or forgot: {rsc.name_of(job)}")
            elif outcome is not None and in_list:
                active = [r for r in active if r.get("uid") != uid_of(job)]
                await self.recorder.normal(cj, "SawCompletedJob",
                                           f"Saw completed job: {rsc.name_of(job)}, condition: {outcome}")
            if outcome == "Complete":
                done = clocks.time_of(status_of(job).get("completionTime"))
                current = clocks.time_of(status.get("lastSuccessfulTime"))
                if done is not None and (current is None or done > current):
                    status["lastSuccessfulTime"] = clocks.rfc3339(done)
        kept: list[dict[str, Any]] = []
        for ref in active:
            if str(ref.get("uid") or "") in by_uid:
                kept.append(ref)
                continue
            try:
                live = await self.client.get(JOBS, str(ref.get("name") or ""), namespace=rsc.namespace_of(cj))
            except errors.NotFound:
                live = None
            if live is not None and uid_of(live) == ref.get("uid"):
                kept.append(ref)  # the cache lags
                continue
            await self.recorder.normal(cj, "MissingJob", f"Active job went missing: {ref.get('name')}")
        status["active"] = kept

    # ------------------------------------------------------------------ 2. history

    async def _cleanup_history(self, cj: Mapping[str, Any], children: Sequence[Mapping[str, Any]]) -> None:
        spec = spec_of(cj)
        for outcome, field in (("Complete", "successfulJobsHistoryLimit"), ("Failed", "failedJobsHistoryLimit")):
            limit = spec.get(field)
            if limit is None:
                continue
            finished = [j for j in children if _finished(j) == outcome and not meta_of(j).get("deletionTimestamp")]
            if len(finished) <= int(limit):
                continue
            finished.sort(key=lambda j: (clocks.time_of(status_of(j).get("startTime")) or rsc.creation_time(j), rsc.name_of(j)))
            for job in finished[:len(finished) - int(limit)]:
                await self._delete_job(cj, job)

    async def _delete_job(self, cj: Mapping[str, Any], job: Mapping[str, Any]) -> bool:
        try:
            await self.client.delete(JOBS, rsc.name_of(job), namespace=rsc.namespace_of(job),
                                     propagation_policy="Background")
        except errors.NotFound:
            return True
        except errors.StatusError as exc:
            await self.recorder.warning(cj, "FailedDelete", f"Deleted job: {exc.message}")
            return False
        await self.recorder.normal(cj, "SuccessfulDelete", f"Deleted job {rsc.name_of(job)}")
        return True

    # ------------------------------------------------------------------ 3-6. schedule

    async def _schedule(self, cj: Mapping[str, Any], status: dict[str, Any]) -> float | None:
        """Start the Job due now, if any; the seconds until the next scheduled time (None: never)."""
        spec = spec_of(cj)
        if meta_of(cj).get("deletionTimestamp") or spec.get("suspend"):
            return None
        try:
            zone = zone_of(cj)
        except ValueError as exc:
            await self.recorder.warning(cj, "UnknownTimeZone", f"invalid timeZone: {spec.get('timeZone')!r}: {exc}")
            return None
        expression = str(spec.get("schedule") or "")
        try:
            schedule = Schedule(expression, zone)
        except _BAD_SCHEDULE as exc:
            await self.recorder.warning(cj, "UnparseableSchedule", f"unparseable schedule: {expression!r} : {exc}")
            return None
        now = self.clock.now()
        wait = schedule.next_after(now) - now + NEXT_SLACK
        earliest = clocks.time_of(status.get("lastScheduleTime")) or rsc.creation_time(cj)
        deadline = spec.get("startingDeadlineSeconds")
        if deadline is not None:
            earliest = max(earliest, now - int(deadline))
        scheduled, missed = schedule.most_recent(earliest, now)
        if scheduled is None:
            return wait
        if missed > MAX_MISSED:
            await self.recorder.warning(cj, "TooManyMissedTimes",
                                        f"too many missed start times: {missed}. Set or decrease "
                                        ".spec.startingDeadlineSeconds or check clock skew")
        if deadline is not None and scheduled + int(deadline) < now:
            await self.recorder.warning(cj, "MissSchedule",
                                        f"Missed scheduled time to start a job: {schedule.format(scheduled)}")
            return wait
        name = job_name(cj, scheduled)
        active = status.get("active") or []
        if any(r.get("name") == name for r in active) or clocks.time_of(status.get("lastScheduleTime")) == scheduled:
            return wait
        policy = spec.get("concurrencyPolicy") or "Allow"
        if policy == "Forbid" and active:
            await self.recorder.normal(cj, "JobAlreadyActive", "Not starting job because prior execution is "
                                       "running and concurrency policy is Forbid")
            return wait
        if policy == "Replace":
            for ref in list(active):
                job = self.jobs.get(rsc.namespace_of(cj), str(ref.get("name") or ""))
                if job is None or await self._delete_job(cj, job):
                    status["active"] = [r for r in status.get("active") or [] if r.get("uid") != ref.get("uid")]
        created = await self._create_job(cj, name, scheduled, schedule)
        if created is not None:
            status["active"] = [*(status.get("active") or []), {
                "kind": "Job", "namespace": rsc.namespace_of(created), "name": rsc.name_of(created),
                "uid": uid_of(created), "apiVersion": "batch/v1",
                "resourceVersion": str(meta_of(created).get("resourceVersion") or "")}]
        status["lastScheduleTime"] = clocks.rfc3339(scheduled)
        return wait

    async def _create_job(self, cj: Mapping[str, Any], name: str, scheduled: float,
                          schedule: Schedule) -> dict[str, Any] | None:
        """upstream `getJobFromTemplate2` + create; None when the Job already existed."""
        template = caches.deep_copy(spec_of(cj).get("jobTemplate") or {})
        tmeta = template.get("metadata") or {}
        annotations = dict(tmeta.get("annotations") or {})
        annotations[SCHEDULED_TIMESTAMP] = schedule.format(scheduled)
        meta: dict[str, Any] = {"name": name, "namespace": rsc.namespace_of(cj), "annotations": annotations,
                                "ownerReferences": [rsc.new_controller_ref(cj, CRONJOBS)]}
        if tmeta.get("labels"):
            meta["labels"] = dict(tmeta["labels"])
        body = {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": template.get("spec") or {}}
        try:
            created = await self.client.create(JOBS, body, namespace=rsc.namespace_of(cj), field_manager=FIELD_MANAGER)
        except errors.AlreadyExists:
            return None  # created by an earlier pass whose status write was lost: it is not started twice
        except errors.StatusError as exc:
            await self.recorder.warning(cj, "FailedCreate", f"Error creating job: {exc.message}")
            raise
        await self.recorder.normal(cj, "SuccessfulCreate", f"Created job {name}")
        logger.info("job_created", cronjob=rsc.key_of(cj), job=name, scheduled=schedule.format(scheduled))
        return created


def new(ctx: managers.ControllerContext, *, workers: int = 5) -> managers.Controller:
    controller = CronJobController(client=ctx.client, informer_factory=ctx.informers,
                                   recorder=ctx.recorder(COMPONENT), clock=ctx.clock)
    return managers.Controller(name=NAME, reconciler=controller, watches=controller.watches(), workers=workers)
