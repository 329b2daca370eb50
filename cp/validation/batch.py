"""Validation rules for batch/v1 Jobs and CronJobs.

Behaviour follows upstream `pkg/apis/batch/validation` with 1.37's feature gates: the generated selector
and its labels (unless `manualSelector`), completion modes, per-index backoff, pod failure and success
policies, pod replacement policy, the immutable parts of a Job's spec (a suspended Job that never started
may change its pods' scheduling directives), and a CronJob's schedule (robfig/cron's standard format; a
`TZ=` prefix only where the old schedule had one) and time zone. Pure.
"""

from __future__ import annotations

import re
from typing import Any

from cp.errors import Cause
from cp.strategies.workloads import CONTROLLER_UID, LEGACY_CONTROLLER_UID
from cp.validation import cron
from cp.validation.common import (
    as_dict,
    as_list,
    as_str,
    each,
    go_label_selector,
    is_domain_prefixed_path,
    is_int,
    is_qualified_name,
    meta_of,
    name_is_dns_subdomain,
    nonnegative,
    not_supported,
    too_long,
    too_many,
)
from cp.validation.meta import validate_label_selector, validate_object_meta, validate_template_object_meta
from cp.validation.registry import Rules
from cp.validation.templates import check_selector_matches, selector_converts, validate_pod_template_spec

_MAX_INDEXED = 100_000
_MAX_POD_FAILURE_RULES = 20
_MAX_EXIT_CODES = 255
_MAX_SUCCESS_RULES = 20
_COMPLETION_MODES = ("NonIndexed", "Indexed")
_REPLACEMENT_POLICIES = ("Failed", "TerminatingOrFailed")
_FAILURE_ACTIONS = ("Count", "FailIndex", "FailJob", "Ignore")
_CONCURRENCY = ("Allow", "Forbid", "Replace")
_TZ_PART = re.compile(r"^[A-Za-z.\-_0-9+]{1,14}$")
_CRON_JOB_NAME_MAX = 52
_MAX_MANAGED_BY = 63


# ---------------------------------------------------------------- Job

def _generated_selector(obj: dict[str, Any], errs: list[Cause]) -> None:
    """validateGeneratedSelector: unless the selector is manual, it selects the Job's uid."""
    spec = as_dict(obj.get("spec"))
    if spec.get("manualSelector") is True:
        return
    labels = as_dict(as_dict(spec.get("template")).get("metadata")).get("labels")
    if not isinstance(labels, dict):
        errs.append(Cause("Required", "spec.template.metadata.labels", ""))
        return
    uid = as_str(meta_of(obj).get("uid"))
    if not uid:
        errs.append(Cause("Required", "metadata.uid", ""))
    for key in (LEGACY_CONTROLLER_UID, CONTROLLER_UID):
        path = f"spec.template.metadata.labels[{key}]"
        if key not in labels:
            errs.append(Cause("Required", path, ""))
        elif labels[key] != uid:
            errs.append(Cause("Invalid", path, f"must be '{uid}'", labels[key]))
    selector = spec.get("selector")
    if not isinstance(selector, dict):
        return  # reported with the rest of the spec
    match = as_dict(selector.get("matchLabels"))
    path = f"spec.selector.matchLabels[{CONTROLLER_UID}]"
    if CONTROLLER_UID not in match:
        errs.append(Cause("Required", path, ""))
    elif match[CONTROLLER_UID] != uid:
        errs.append(Cause("Invalid", path, f"must be '{uid}'", match[CONTROLLER_UID]))


def _pod_failure_policy(policy: dict[str, Any], spec: dict[str, Any], path: str, errs: list[Cause]) -> None:
    rules = as_list(policy.get("rules"))
    if len(rules) > _MAX_POD_FAILURE_RULES:
        too_many(errs, f"{path}.rules", len(rules), _MAX_POD_FAILURE_RULES)
    containers = {as_str(as_dict(c).get("name")) for key in ("containers", "initContainers")
                  for c in as_list(as_dict(as_dict(spec.get("template")).get("spec")).get(key))}
    for i, rule in enumerate(rules[:_MAX_POD_FAILURE_RULES]):
        rule = as_dict(rule)
        rpath = f"{path}.rules[{i}]"
        action = rule.get("action")
        if action not in _FAILURE_ACTIONS:
            not_supported(errs, f"{rpath}.action", action, _FAILURE_ACTIONS)
        elif action == "FailIndex" and spec.get("backoffLimitPerIndex") is None:
            errs.append(Cause("Invalid", f"{rpath}.action", "requires the backoffLimitPerIndex to be set", action))
        codes, conditions = rule.get("onExitCodes"), rule.get("onPodConditions")
        if (codes is None) == (conditions is None):
            errs.append(Cause("Invalid", rpath, "specifying one of OnExitCodes and OnPodConditions is required",
                              rule))
        if isinstance(codes, dict):
            _exit_codes(codes, containers, f"{rpath}.onExitCodes", errs)
        for j, pattern in enumerate(as_list(conditions)):
            pattern = as_dict(pattern)
            ppath = f"{rpath}.onPodConditions[{j}]"
            status = pattern.get("status")
            if status not in ("False", "True", "Unknown"):
                not_supported(errs, f"{ppath}.status", status, ("False", "True", "Unknown"))
            ctype = as_str(pattern.get("type"))
            if not ctype:
                errs.append(Cause("Required", f"{ppath}.type", ""))
            else:
                each(errs, f"{ppath}.type", ctype, is_qualified_name(ctype))


def _exit_codes(req: dict[str, Any], containers: set[str], path: str, errs: list[Cause]) -> None:
    name = req.get("containerName")
    if isinstance(name, str) and name not in containers:
        errs.append(Cause("Invalid", f"{path}.containerName", "must be one of the container or initContainer "
                          "names in the pod template", name))
    operator = req.get("operator")
    if operator not in ("In", "NotIn"):
        not_supported(errs, f"{path}.operator", operator, ("In", "NotIn"))
    values = as_list(req.get("values"))
    if not values:
        errs.append(Cause("Invalid", f"{path}.values", "at least one value is required", values))
    if len(values) > _MAX_EXIT_CODES:
        too_many(errs, f"{path}.values", len(values), _MAX_EXIT_CODES)
    previous: int | None = None
    for k, value in enumerate(values):
        vpath = f"{path}.values[{k}]"
        if value == previous:
            errs.append(Cause("Duplicate", vpath, "", value))
        if operator == "In" and value == 0:
            errs.append(Cause("Invalid", vpath, "must not be 0 for the In operator", value))
        if is_int(value) and previous is not None and value < previous:
            errs.append(Cause("Invalid", vpath, "must be ordered", value))
        previous = value if is_int(value) else previous


def _success_policy(policy: dict[str, Any], spec: dict[str, Any], path: str, errs: list[Cause]) -> None:
    if spec.get("completionMode") != "Indexed":
        errs.append(Cause("Invalid", path, "requires indexed completion mode", policy))
        return
    rules = as_list(policy.get("rules"))
    if not rules:
        errs.append(Cause("Required", f"{path}.rules", "at least one rules must be specified when the "
                          "successPolicy is specified"))
    if len(rules) > _MAX_SUCCESS_RULES:
        too_many(errs, f"{path}.rules", len(rules), _MAX_SUCCESS_RULES)
    for i, rule in enumerate(rules):
        rule = as_dict(rule)
        rpath = f"{path}.rules[{i}]"
        indexes, count = rule.get("succeededIndexes"), rule.get("succeededCount")
        if indexes is None and count is None:
            errs.append(Cause("Required", rpath, "at least one of succeededCount or succeededIndexes must be "
                              "specified"))
        if is_int(count):
            nonnegative(errs, f"{rpath}.succeededCount", count)
            completions = spec.get("completions")
            if is_int(completions) and count > completions:
                errs.append(Cause("Invalid", f"{rpath}.succeededCount",
                                  f"must be less than or equal to {completions} (the number of specified "
                                  "completions)", count))


def _job_spec(spec: dict[str, Any], path: str, errs: list[Cause]) -> None:
    """validateJobSpec: what Jobs and a CronJob's job template share."""
    for key in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished"):
        nonnegative(errs, f"{path}.{key}", spec.get(key))
    mode = spec.get("completionMode")
    per_index, max_failed = spec.get("backoffLimitPerIndex"), spec.get("maxFailedIndexes")
    completions, parallelism = spec.get("completions"), spec.get("parallelism")
    if per_index is not None:
        nonnegative(errs, f"{path}.backoffLimitPerIndex", per_index)
        if mode != "Indexed":
            errs.append(Cause("Forbidden", f"{path}.backoffLimitPerIndex", "requires indexed completion mode"))
    if max_failed is not None:
        nonnegative(errs, f"{path}.maxFailedIndexes", max_failed)
        if per_index is None:
            errs.append(Cause("Required", f"{path}.backoffLimitPerIndex", "when maxFailedIndexes is specified"))
        if is_int(max_failed) and is_int(completions) and max_failed > completions:
            errs.append(Cause("Invalid", f"{path}.maxFailedIndexes", "must be less than or equal to completions",
                              max_failed))
    if mode is not None:
        if mode not in _COMPLETION_MODES:
            not_supported(errs, f"{path}.completionMode", mode, _COMPLETION_MODES)
        if mode == "Indexed":
            if completions is None:
                errs.append(Cause("Required", f"{path}.completions", "when completion mode is Indexed"))
            if is_int(parallelism) and parallelism > _MAX_INDEXED:
                errs.append(Cause("Invalid", f"{path}.parallelism",
                                  f"must be less than or equal to {_MAX_INDEXED} when completion mode is Indexed",
                                  parallelism))
    managed_by = spec.get("managedBy")
    if isinstance(managed_by, str):
        if len(managed_by) > _MAX_MANAGED_BY:
            too_long(errs, f"{path}.managedBy", _MAX_MANAGED_BY)
        errs.extend(is_domain_prefixed_path(f"{path}.managedBy", managed_by))
    failure = spec.get("podFailurePolicy")
    if isinstance(failure, dict):
        _pod_failure_policy(failure, spec, f"{path}.podFailurePolicy", errs)
    success = spec.get("successPolicy")
    if isinstance(success, dict):
        _success_policy(success, spec, f"{path}.successPolicy", errs)
    replacement = spec.get("podReplacementPolicy")
    if replacement is not None:
        if failure is not None:
            if replacement != "Failed":
                not_supported(errs, f"{path}.podReplacementPolicy", replacement, ("Failed",))
        elif replacement not in _REPLACEMENT_POLICIES:
            not_supported(errs, f"{path}.podReplacementPolicy", replacement, _REPLACEMENT_POLICIES)
    template = spec.get("template")
    validate_pod_template_spec(template, f"{path}.template", errs)
    policy = as_dict(as_dict(template).get("spec")).get("restartPolicy")
    if policy not in ("OnFailure", "Never"):
        not_supported(errs, f"{path}.template.spec.restartPolicy", policy, ("OnFailure", "Never"))
    elif failure is not None and policy != "Never":
        errs.append(Cause("Invalid", f"{path}.template.spec.restartPolicy",
                          'only "Never" is supported when podFailurePolicy is specified', policy))


def _job_selector(spec: dict[str, Any], errs: list[Cause]) -> None:
    selector = spec.get("selector")
    if selector is None:
        errs.append(Cause("Required", "spec.selector", ""))
    else:
        validate_label_selector(selector, "spec.selector", errs)
    # Whether manual or generated, the selector must select the pods the Job makes.
    if isinstance(selector, dict) and selector_converts(selector):
        check_selector_matches(selector, spec.get("template"), "spec.template", errs)


def _validate_job(obj: dict[str, Any], errs: list[Cause]) -> None:
    _generated_selector(obj, errs)
    spec = as_dict(obj.get("spec"))
    _job_spec(spec, "spec", errs)
    _job_selector(spec, errs)


def _job_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=namespaced, name_fn=name_is_dns_subdomain)
    _validate_job(obj, errs)


_SCHEDULING = ("nodeSelector", "affinity", "tolerations", "schedulingGates")


def _job_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    _validate_job(new, errs)
    spec, old_spec = as_dict(new.get("spec")), as_dict(old.get("spec"))
    indexed = spec.get("completionMode") == "Indexed"
    completions, parallelism = spec.get("completions"), spec.get("parallelism")
    if not indexed:
        _immutable(spec, old_spec, "completions", errs)
    if spec.get("selector") != old_spec.get("selector"):
        errs.append(Cause("Invalid", "spec.selector", "field is immutable", go_label_selector(spec.get("selector"))))
    _template_update(spec, old_spec, as_dict(old.get("status")), errs)
    for key in ("completionMode", "podFailurePolicy", "backoffLimitPerIndex", "managedBy", "successPolicy"):
        _immutable(spec, old_spec, key, errs)
    # Elastic indexed Jobs: completions change together with parallelism.
    if indexed and completions != old_spec.get("completions") and completions != parallelism:
        errs.append(Cause("Invalid", "spec.completions", "can only be modified in tandem with spec.parallelism",
                          completions))


def _immutable(spec: dict[str, Any], old_spec: dict[str, Any], key: str, errs: list[Cause]) -> None:
    if spec.get(key) != old_spec.get(key):
        errs.append(Cause("Invalid", f"spec.{key}", "field is immutable", spec.get(key)))


def _template_update(spec: dict[str, Any], old_spec: dict[str, Any], old_status: dict[str, Any],
                     errs: list[Cause]) -> None:
    """The pod template is immutable, but a suspended Job that never started may change where and when
    its pods schedule (and their labels and annotations)."""
    template, old_template = as_dict(spec.get("template")), as_dict(old_spec.get("template"))
    if template == old_template:
        return
    if old_spec.get("suspend") is True and old_status.get("startTime") is None:
        allowed = {**old_template, "metadata": {**as_dict(old_template.get("metadata"))}}
        allowed["spec"] = {**as_dict(old_template.get("spec"))}
        for key in ("labels", "annotations"):
            _carry(as_dict(template.get("metadata")), allowed["metadata"], key)
        for key in _SCHEDULING:
            _carry(as_dict(template.get("spec")), allowed["spec"], key)
        if template == allowed:
            return
    errs.append(Cause("Invalid", "spec.template", "field is immutable", template))


def _carry(source: dict[str, Any], target: dict[str, Any], key: str) -> None:
    if key in source:
        target[key] = source[key]
    else:
        target.pop(key, None)


def _job_status(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    status = as_dict(new.get("status"))
    for key in ("active", "succeeded", "failed", "ready", "terminating"):
        nonnegative(errs, f"status.{key}", status.get(key))
    ready, active = status.get("ready"), status.get("active")
    if is_int(ready) and is_int(active) and ready > active:
        errs.append(Cause("Invalid", "status.ready", "must be less than or equal to active", ready))


# ---------------------------------------------------------------- CronJob

def _cron_job_name(name: str, prefix: bool) -> list[str]:
    msgs = name_is_dns_subdomain(name, prefix)
    if len(name) > _CRON_JOB_NAME_MAX:
        msgs.append(f"must be no more than {_CRON_JOB_NAME_MAX} characters")
    return msgs


def _schedule(schedule: str, *, allow_tz: bool, time_zone: Any, errs: list[Cause]) -> None:
    try:
        cron.parse_standard(schedule)
    except cron.CronError as exc:
        errs.append(Cause("Invalid", "spec.schedule", str(exc), schedule))
    if allow_tz and "TZ" in schedule and time_zone is not None:
        errs.append(Cause("Invalid", "spec.schedule", "cannot use both timeZone field and TZ or CRON_TZ in schedule",
                          schedule))
    elif not allow_tz and "TZ" in schedule:
        errs.append(Cause("Invalid", "spec.schedule", "cannot use TZ or CRON_TZ in schedule, use timeZone field "
                          "instead", schedule))


def _time_zone(zone: Any, errs: list[Cause]) -> None:
    if not isinstance(zone, str):
        return
    path = "spec.timeZone"
    if not zone:
        errs.append(Cause("Invalid", path, "timeZone must be nil or non-empty string", zone))
        return
    for part in zone.split("/"):
        if part in (".", "..") or part.startswith("-") or not _TZ_PART.match(part):
            errs.append(Cause("Invalid", path, f"unknown time zone {zone}", zone))
            return
    if zone.lower() == "local":
        errs.append(Cause("Invalid", path, "timeZone must be an explicit time zone as defined in "
                          "https://www.iana.org/time-zones", zone))
    try:
        cron.load_location(zone)
    except cron.CronError as exc:
        errs.append(Cause("Invalid", path, str(exc), zone))


def _cron_job_spec(spec: dict[str, Any], errs: list[Cause], *, allow_tz: bool) -> None:
    schedule = as_str(spec.get("schedule"))
    if not schedule:
        errs.append(Cause("Required", "spec.schedule", ""))
    else:
        _schedule(schedule, allow_tz=allow_tz, time_zone=spec.get("timeZone"), errs=errs)
    nonnegative(errs, "spec.startingDeadlineSeconds", spec.get("startingDeadlineSeconds"))
    policy = spec.get("concurrencyPolicy")
    if not policy:
        errs.append(Cause("Required", "spec.concurrencyPolicy", ""))
    elif policy not in _CONCURRENCY:
        not_supported(errs, "spec.concurrencyPolicy", policy, _CONCURRENCY)
    job_template = as_dict(spec.get("jobTemplate"))
    validate_template_object_meta(job_template.get("metadata"), "spec.jobTemplate.metadata", errs)
    job_spec = as_dict(job_template.get("spec"))
    _job_spec(job_spec, "spec.jobTemplate.spec", errs)
    if job_spec.get("selector") is not None:
        errs.append(Cause("Invalid", "spec.jobTemplate.spec.selector", "`selector` will be auto-generated",
                          go_label_selector(job_spec.get("selector"))))
    if job_spec.get("manualSelector") is True:
        not_supported(errs, "spec.jobTemplate.spec.manualSelector", True, ("nil", "false"))
    for key in ("successfulJobsHistoryLimit", "failedJobsHistoryLimit"):
        nonnegative(errs, f"spec.{key}", spec.get(key))
    _time_zone(spec.get("timeZone"), errs)


def _cron_job_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=namespaced, name_fn=_cron_job_name)
    _cron_job_spec(as_dict(obj.get("spec")), errs, allow_tz=False)


def _cron_job_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    # A schedule that had a TZ prefix may keep it; the 52-character name limit is not re-checked.
    allow_tz = "TZ" in as_str(as_dict(old.get("spec")).get("schedule"))
    _cron_job_spec(as_dict(new.get("spec")), errs, allow_tz=allow_tz)


def _cron_job_status(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    for i, ref in enumerate(as_list(as_dict(new.get("status")).get("active"))):
        if not as_str(as_dict(ref).get("name")):
            errs.append(Cause("Required", f"status.active[{i}].name", ""))


RULES = {
    ("batch", "Job"): Rules(_job_create, _job_update, _job_status),
    ("batch", "CronJob"): Rules(_cron_job_create, _cron_job_update, _cron_job_status),
}
