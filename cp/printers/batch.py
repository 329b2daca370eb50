"""Printers of batch/v1: Jobs (status, completions, duration) and CronJobs (upstream's `printJob`,
`printCronJob`). Pure; no I/O."""

from __future__ import annotations

from typing import Any

from cp.printers.common import (
    AGE_COL,
    CONTAINERS_COL,
    IMAGES_COL,
    NAME_COL,
    E,
    Obj,
    Printer,
    Since,
    col,
    containers_images,
    epoch,
    go_bool,
    human_duration,
    selector_format,
    since,
)

__all__ = ["PRINTERS"]

_SELECTOR_COL = col("Selector", "string", "Label selector of the job's pods.", priority=1)


def _condition_true(conditions: Any, ctype: str) -> bool:
    """`hasJobCondition`: the first condition of the type decides."""
    for c in conditions or ():
        if c.get("type") == ctype:
            return bool(c.get("status") == "True")
    return False


def _job_status(o: Obj, conditions: Any) -> str:
    if _condition_true(conditions, "Complete"):
        return "Complete"
    if _condition_true(conditions, "Failed"):
        return "Failed"
    if (o.get("metadata") or E).get("deletionTimestamp"):
        return "Terminating"
    if _condition_true(conditions, "Suspended"):
        return "Suspended"
    if _condition_true(conditions, "FailureTarget"):
        return "FailureTarget"
    return "Running"


def _completions(spec: Obj, succeeded: int) -> str:
    completions = spec.get("completions")
    if completions is not None:
        return f"{succeeded}/{completions}"
    parallelism = spec.get("parallelism") or 0
    return f"{succeeded}/1 of {parallelism}" if parallelism > 1 else f"{succeeded}/1"


def _duration(status: Obj) -> Any:
    """Start to completion; start to now (a `Since` cell) while running; "" before the start."""
    start = epoch(status.get("startTime"))
    if status.get("startTime") is None:
        return ""
    end = status.get("completionTime")
    if end is None:
        return Since(start)
    finished = epoch(end)
    if start is None or finished is None:
        return "<unknown>"
    return human_duration(finished - start)


def _job_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or E
    spec = o.get("spec") or E
    status = o.get("status") or E
    names, images = containers_images((spec.get("template") or E).get("spec") or E)
    return [
        meta.get("name", ""),
        _job_status(o, status.get("conditions")),
        _completions(spec, status.get("succeeded") or 0),
        _duration(status),
        since(meta.get("creationTimestamp")),
        names,
        images,
        selector_format(spec.get("selector")),
    ]


def _cronjob_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or E
    spec = o.get("spec") or E
    status = o.get("status") or E
    job_spec = (spec.get("jobTemplate") or E).get("spec") or E
    names, images = containers_images((job_spec.get("template") or E).get("spec") or E)
    last = status.get("lastScheduleTime")
    zone = spec.get("timeZone")
    return [
        meta.get("name", ""),
        spec.get("schedule") or "",
        "<none>" if zone is None else zone,
        go_bool(spec.get("suspend")),
        len(status.get("active") or ()),
        "<none>" if last is None else since(last),
        since(meta.get("creationTimestamp")),
        names,
        images,
        selector_format(job_spec.get("selector")),
    ]


PRINTERS: dict[str, Printer] = {
    "Job": Printer([
        NAME_COL,
        col("Status", "string", "Status of the job (Running, Complete, Failed, Suspended...)."),
        col("Completions", "string", "Succeeded pods out of the completions wanted."),
        col("Duration", "string", "Time the job took, or has taken so far."),
        AGE_COL,
        CONTAINERS_COL,
        IMAGES_COL,
        _SELECTOR_COL,
    ], _job_row),
    "CronJob": Printer([
        NAME_COL,
        col("Schedule", "string", "Cron schedule of the job."),
        col("Timezone", "string", "Time zone of the schedule."),
        col("Suspend", "boolean", "Whether later runs are suspended."),
        col("Active", "integer", "Number of running jobs."),
        col("Last Schedule", "string", "Time since the job was last scheduled."),
        AGE_COL,
        CONTAINERS_COL,
        IMAGES_COL,
        _SELECTOR_COL,
    ], _cronjob_row),
}
