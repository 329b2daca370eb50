"""Pure rules of the Job controller (`pkg/controller/job`): completion-index sets and their
interval text, pod failure policy and success policy matching, the pod-recreation backoff, and the
Job condition helpers. No I/O; the controller module reads the caches and writes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from cp import clock as clocks
from cp.objects import meta_of, spec_of, status_of

COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"  # annotation and label
INDEX_FAILURE_COUNT = "batch.kubernetes.io/job-index-failure-count"
INDEX_IGNORED_FAILURE_COUNT = "batch.kubernetes.io/job-index-ignored-failure-count"
TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
COMPLETION_INDEX_ENV = "JOB_COMPLETION_INDEX"
CONTROLLER_NAME = "kubernetes.io/job-controller"  # spec.managedBy value this controller serves
MAX_GENERATED_NAME = 58  # upstream `MaxGeneratedNameLength` (63 - 5 random characters)

DEFAULT_BACKOFF = 10.0  # upstream `DefaultJobPodFailureBackOff`
MAX_BACKOFF = 600.0  # upstream `MaxJobPodFailureBackOff`

# Condition types and reasons (k8s.io/api/batch/v1)
COMPLETE = "Complete"
FAILED = "Failed"
SUSPENDED = "Suspended"
FAILURE_TARGET = "FailureTarget"
SUCCESS_CRITERIA_MET = "SuccessCriteriaMet"
REASON_BACKOFF_LIMIT = "BackoffLimitExceeded"
REASON_DEADLINE = "DeadlineExceeded"
REASON_POD_FAILURE_POLICY = "PodFailurePolicy"
REASON_MAX_FAILED_INDEXES = "MaxFailedIndexesExceeded"
REASON_FAILED_INDEXES = "FailedIndexes"
REASON_SUCCESS_POLICY = "SuccessPolicy"
REASON_COMPLETIONS_REACHED = "CompletionsReached"
MSG_BACKOFF_LIMIT = "Job has reached the specified backoff limit"
MSG_DEADLINE = "Job was active longer than specified deadline"
MSG_MAX_FAILED_INDEXES = "Job has exceeded the specified maximal number of failed indexes"
MSG_FAILED_INDEXES = "Job has failed indexes"
MSG_COMPLETIONS_REACHED = "Reached expected number of succeeded pods"


# ---------------------------------------------------------------------- indexes


def parse_indexes(text: str | None, completions: int) -> set[int]:
    """`1,3-5,7` as a set, keeping only indexes below `completions` (upstream
    `parseIndexesFromString` ignores malformed parts and out-of-range values)."""
    out: set[int] = set()
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        first, _, last = part.partition("-")
        try:
            lo = int(first)
            hi = int(last) if last else lo
        except ValueError:
            continue
        out.update(i for i in range(max(lo, 0), min(hi, completions - 1) + 1))
    return out


def format_indexes(indexes: Iterable[int]) -> str:
    """Sorted intervals: runs of three or more as `a-b`, a pair as `a,b` (upstream
    `orderedIntervals.String`)."""
    ordered = sorted(set(indexes))
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        if i == j:
            parts.append(str(ordered[i]))
        else:
            parts.append(f"{ordered[i]}{',' if j == i + 1 else '-'}{ordered[j]}")
        i = j + 1
    return ",".join(parts)


def completion_index(pod: Mapping[str, Any]) -> int | None:
    """The pod's index from the annotation (then the label); None when missing or malformed."""
    meta = meta_of(pod)
    for source in (meta.get("annotations") or {}, meta.get("labels") or {}):
        raw = source.get(COMPLETION_INDEX)
        if raw is None:
            continue
        try:
            value = int(str(raw))
        except ValueError:
            return None
        return value if value >= 0 else None
    return None


def _int_annotation(pod: Mapping[str, Any], key: str) -> int:
    try:
        return max(int(str((meta_of(pod).get("annotations") or {}).get(key) or 0)), 0)
    except ValueError:
        return 0


def index_failure_count(pod: Mapping[str, Any]) -> int:
    return _int_annotation(pod, INDEX_FAILURE_COUNT)


def index_ignored_failure_count(pod: Mapping[str, Any]) -> int:
    return _int_annotation(pod, INDEX_IGNORED_FAILURE_COUNT)


def generate_name(job_name: str, index: int | None) -> str:
    """`<job>-` or, for an index, `<job>-<index>-` with the job name cut so the prefix stays within
    58 characters (upstream `podGenerateNameWithIndex`)."""
    if index is None:
        return f"{job_name}-"
    suffix = f"-{index}-"
    prefix = job_name + suffix
    if len(prefix) > MAX_GENERATED_NAME:
        prefix = job_name[:MAX_GENERATED_NAME - len(suffix)] + suffix
    return prefix


# ---------------------------------------------------------------------- policies


def _terminated_containers(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    status = status_of(pod)
    return [cs for key in ("containerStatuses", "initContainerStatuses") for cs in status.get(key) or []
            if isinstance(cs, Mapping) and isinstance((cs.get("state") or {}).get("terminated"), Mapping)]


def _matches_exit_codes(pod: Mapping[str, Any], requirement: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The first terminated container (main, then init) with a non-zero exit code the requirement
    matches (upstream `matchOnExitCodes`)."""
    container = requirement.get("containerName")
    values = {int(v) for v in requirement.get("values") or []}
    operator = requirement.get("operator")
    for cs in _terminated_containers(pod):
        if container and cs.get("name") != container:
            continue
        code = int(cs["state"]["terminated"].get("exitCode") or 0)
        if code == 0:
            continue
        if (operator == "In" and code in values) or (operator == "NotIn" and code not in values):
            return cs
    return None


def _matches_conditions(pod: Mapping[str, Any], patterns: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    for cond in status_of(pod).get("conditions") or []:
        for pattern in patterns:
            if cond.get("type") == pattern.get("type") and cond.get("status") == (pattern.get("status") or "True"):
                return dict(cond)
    return None


class PolicyMatch:
    """What the pod failure policy says of a failed pod: the action of the first matching rule
    (None: no rule matched), whether the failure counts, and the FailJob message."""

    __slots__ = ("action", "counts", "message")

    def __init__(self, action: str | None, counts: bool, message: str | None) -> None:
        self.action = action
        self.counts = counts
        self.message = message


def match_pod_failure_policy(policy: Mapping[str, Any] | None, pod: Mapping[str, Any]) -> PolicyMatch:
    """upstream `matchPodFailurePolicy`: rules in order, the first match decides; Ignore does not
    count the failure; FailJob carries upstream's message."""
    if not policy:
        return PolicyMatch(None, True, None)
    ns, name = meta_of(pod).get("namespace"), meta_of(pod).get("name")
    for i, rule in enumerate(policy.get("rules") or []):
        action = str(rule.get("action") or "")
        message: str | None = None
        if rule.get("onExitCodes") is not None:
            cs = _matches_exit_codes(pod, rule["onExitCodes"])
            if cs is None:
                continue
            code = cs["state"]["terminated"].get("exitCode")
            message = (f"Container {cs.get('name')} for pod {ns}/{name} failed with exit code {code} "
                       f"matching {action} rule at index {i}")
        elif rule.get("onPodConditions") is not None:
            cond = _matches_conditions(pod, rule["onPodConditions"])
            if cond is None:
                continue
            message = f"Pod {ns}/{name} has condition {cond.get('type')} matching {action} rule at index {i}"
        else:
            continue
        if action == "Ignore":
            return PolicyMatch(action, False, None)
        return PolicyMatch(action, True, message if action == "FailJob" else None)
    return PolicyMatch(None, True, None)


def match_success_policy(policy: Mapping[str, Any] | None, succeeded: set[int], completions: int) -> int | None:
    """The index of the first success policy rule the succeeded indexes satisfy (upstream
    `matchSuccessPolicy`): with `succeededIndexes`, enough (succeededCount, else all) of those
    indexes succeeded; with only `succeededCount`, that many indexes succeeded."""
    if not policy:
        return None
    for i, rule in enumerate(policy.get("rules") or []):
        wanted = rule.get("succeededIndexes")
        count = rule.get("succeededCount")
        if wanted is not None:
            targets = parse_indexes(str(wanted), completions)
            done = len(targets & succeeded)
            if (count is not None and done >= int(count)) or (count is None and targets and done == len(targets)):
                return i
        elif count is not None and len(succeeded) >= int(count):
            return i
    return None


def backoff_remaining(failures: int, last_failure: float | None, now: float, *,
                      base: float = DEFAULT_BACKOFF, cap: float = MAX_BACKOFF) -> float:
    """Seconds to wait before creating a replacement pod: base · 2^(failures-1), at most `cap`,
    counted from the last failure (upstream `getRemainingTimeForFailuresCount`)."""
    if failures <= 0 or last_failure is None:
        return 0.0
    delay = base
    for _ in range(1, failures):
        delay *= 2
        if delay >= cap:
            delay = cap
            break
    elapsed = now - last_failure
    return 0.0 if delay < elapsed else delay - elapsed


def finish_time(pod: Mapping[str, Any], default: float) -> float:
    """When a finished pod finished: the latest container finishedAt, else its Ready condition's
    last transition (upstream `getFinishedTime`), else `default`."""
    stamps: list[float] = []
    for cs in _terminated_containers(pod):
        raw = cs["state"]["terminated"].get("finishedAt")
        if raw:
            with contextlib.suppress(ValueError):
                stamps.append(clocks.parse_time(str(raw)))
    if stamps:
        return max(stamps)
    for cond in status_of(pod).get("conditions") or []:
        if cond.get("type") == "Ready" and cond.get("lastTransitionTime"):
            try:
                return clocks.parse_time(str(cond["lastTransitionTime"]))
            except ValueError:
                break
    return default


# ---------------------------------------------------------------------- job helpers


def is_indexed(job: Mapping[str, Any]) -> bool:
    return spec_of(job).get("completionMode") == "Indexed"


def completions_of(job: Mapping[str, Any]) -> int | None:
    value = spec_of(job).get("completions")
    return int(value) if value is not None else None


def parallelism_of(job: Mapping[str, Any]) -> int:
    value = spec_of(job).get("parallelism")
    return int(value) if value is not None else 1


def only_replace_failed(job: Mapping[str, Any]) -> bool:
    """upstream `onlyReplaceFailedPods`: podReplacementPolicy Failed, or a pod failure policy."""
    spec = spec_of(job)
    return spec.get("podReplacementPolicy") == "Failed" or bool(spec.get("podFailurePolicy"))


def condition(conditions: Sequence[Mapping[str, Any]], type_: str) -> Mapping[str, Any] | None:
    return next((c for c in conditions if c.get("type") == type_), None)


def is_true(conditions: Sequence[Mapping[str, Any]], type_: str) -> bool:
    c = condition(conditions, type_)
    return c is not None and c.get("status") == "True"


def finished(job: Mapping[str, Any]) -> bool:
    conds = status_of(job).get("conditions") or []
    return is_true(conds, COMPLETE) or is_true(conds, FAILED)


def set_condition(conditions: list[dict[str, Any]], *, type_: str, status: str, reason: str, message: str,
                  now: float) -> bool:
    """Add or update a condition (upstream `ensureJobConditionStatus`): probe time always moves,
    transition time only when the status changes. False when nothing changed."""
    stamp = clocks.rfc3339(now)
    for c in conditions:
        if c.get("type") == type_:
            if c.get("status") == status and c.get("reason") == reason and c.get("message") == message:
                return False
            if c.get("status") != status:
                c["lastTransitionTime"] = stamp
            c.update(status=status, reason=reason, message=message, lastProbeTime=stamp)
            return True
    if status != "True" and type_ == SUSPENDED:
        return False  # no condition yet: a running job needs no Suspended=False
    conditions.append({"type": type_, "status": status, "lastProbeTime": stamp, "lastTransitionTime": stamp,
                       "reason": reason, "message": message})
    return True
