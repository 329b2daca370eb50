"""Defaulting of the workload kinds beyond deployments and replica sets: ReplicationControllers and
PodTemplates (core/v1), DaemonSets and StatefulSets (apps/v1), Jobs and CronJobs (batch/v1).

Sources of behaviour (read, not copied): `pkg/apis/core/v1/defaults.go` (SetDefaults_ReplicationController),
`pkg/apis/apps/v1/defaults.go` (DaemonSet, StatefulSet with StatefulSetAutoDeletePVC on, as in 1.37),
`pkg/apis/batch/v1/defaults.go` (Job with JobPodReplacementPolicy and JobBackoffLimitPerIndex on, CronJob).
Pod templates get the pod spec defaults (`default_pod_spec`), claim templates the claim defaults. Pure.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from cp.defaulting.core import default_pod_spec
from cp.defaulting.fields import child, dicts, setdefault, sub
from cp.defaulting.volumes import default_claim

_INT32_MAX = 2**31 - 1


def default_template(template: Any) -> None:
    """A PodTemplateSpec: its pod spec gets the pod spec defaults."""
    if isinstance(template, dict):
        spec = sub(template, "spec")
        if spec is not None:
            default_pod_spec(spec)


# ---------------------------------------------------------------- core/v1

def _replication_controller(obj: dict[str, Any]) -> None:
    spec = child(obj, "spec")
    template = sub(spec, "template")
    labels = sub(template, "metadata") if template is not None else None
    template_labels = labels.get("labels") if labels is not None else None
    # The template's labels stand in for an empty selector and empty object labels.
    if isinstance(template_labels, dict):
        if not spec.get("selector"):
            spec["selector"] = dict(template_labels)
        meta = child(obj, "metadata")
        if not meta.get("labels"):
            meta["labels"] = dict(template_labels)
    setdefault(spec, "replicas", 1)
    default_template(template)


def _pod_template(obj: dict[str, Any]) -> None:
    default_template(obj.get("template"))


# ---------------------------------------------------------------- apps/v1

def _daemon_set(obj: dict[str, Any]) -> None:
    spec = child(obj, "spec")
    strategy = child(spec, "updateStrategy")
    if not strategy.get("type"):
        strategy["type"] = "RollingUpdate"
    if strategy["type"] == "RollingUpdate":
        rolling = child(strategy, "rollingUpdate")
        setdefault(rolling, "maxUnavailable", 1)
        setdefault(rolling, "maxSurge", 0)
    setdefault(spec, "revisionHistoryLimit", 10)
    default_template(spec.get("template"))


def _stateful_set(obj: dict[str, Any]) -> None:
    spec = child(obj, "spec")
    if not spec.get("podManagementPolicy"):
        spec["podManagementPolicy"] = "OrderedReady"
    strategy = child(spec, "updateStrategy")
    if not strategy.get("type"):
        strategy["type"] = "RollingUpdate"
        child(strategy, "rollingUpdate")
    rolling = sub(strategy, "rollingUpdate")
    if strategy["type"] == "RollingUpdate" and rolling is not None:
        setdefault(rolling, "partition", 0)
    retention = child(spec, "persistentVolumeClaimRetentionPolicy")
    for key in ("whenDeleted", "whenScaled"):
        if not retention.get(key):
            retention[key] = "Retain"
    setdefault(spec, "replicas", 1)
    setdefault(spec, "revisionHistoryLimit", 10)
    default_template(spec.get("template"))
    for claim in dicts(spec.get("volumeClaimTemplates")):
        default_claim(claim)


# ---------------------------------------------------------------- batch/v1

def _job(obj: dict[str, Any]) -> None:
    spec = child(obj, "spec")
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
    setdefault(spec, "parallelism", 1)
    if spec.get("backoffLimit") is None:
        # With a per-index limit the global one is effectively unbounded.
        spec["backoffLimit"] = _INT32_MAX if spec.get("backoffLimitPerIndex") is not None else 6
    copy_template_labels(obj)
    if not spec.get("completionMode"):
        spec["completionMode"] = "NonIndexed"
    setdefault(spec, "suspend", False)
    policy = sub(spec, "podFailurePolicy")
    if policy is not None:
        for rule in dicts(policy.get("rules")):
            for pattern in dicts(rule.get("onPodConditions")):
                if not pattern.get("status"):
                    pattern["status"] = "True"
    if not spec.get("podReplacementPolicy"):
        spec["podReplacementPolicy"] = "Failed" if policy is not None else "TerminatingOrFailed"
    setdefault(spec, "manualSelector", False)
    default_template(spec.get("template"))


def copy_template_labels(obj: dict[str, Any]) -> None:
    """A Job without labels of its own carries its pod template's (upstream's defaulting shares the
    template's label map, so the labels the strategy generates show on the Job too)."""
    spec = sub(obj, "spec")
    template = sub(spec, "template") if spec is not None else None
    template_meta = sub(template, "metadata") if template is not None else None
    labels = template_meta.get("labels") if template_meta is not None else None
    if isinstance(labels, dict):
        meta = child(obj, "metadata")
        if not meta.get("labels"):
            meta["labels"] = copy.copy(labels)


def _cron_job(obj: dict[str, Any]) -> None:
    spec = child(obj, "spec")
    if not spec.get("concurrencyPolicy"):
        spec["concurrencyPolicy"] = "Allow"
    setdefault(spec, "suspend", False)
    setdefault(spec, "successfulJobsHistoryLimit", 3)
    setdefault(spec, "failedJobsHistoryLimit", 1)
    job_template = sub(spec, "jobTemplate")
    job_spec = sub(job_template, "spec") if job_template is not None else None
    if job_spec is not None:
        default_template(job_spec.get("template"))


DEFAULTERS: dict[tuple[str, str, str], Callable[[dict[str, Any]], None]] = {
    ("", "v1", "ReplicationController"): _replication_controller,
    ("", "v1", "PodTemplate"): _pod_template,
    ("apps", "v1", "DaemonSet"): _daemon_set,
    ("apps", "v1", "StatefulSet"): _stateful_set,
    ("batch", "v1", "Job"): _job,
    ("batch", "v1", "CronJob"): _cron_job,
}
