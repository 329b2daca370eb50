"""Validation rules for batch/v1 Jobs and CronJobs.

Behaviour follows upstream `pkg/apis/batch/validation` with 1.37's feature gates: the generated selector
and its labels (unless `manualSelector`), completion modes, per-index backoff, pod failure and success
policies, pod replacement policy, the immutable parts of a Job's spec (a suspended Job that never started
may change its pods' scheduling directives), and a CronJob's schedule (robfig/cron's standard format; a
`TZ=` prefix only where the old schedule had one) and time zone. Pure.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from cp.errors import OMITTED, Cause
from cp.strategies.workloads import CONTROLLER_UID, JOB_NAME, LEGACY_CONTROLLER_UID, LEGACY_JOB_NAME
from cp.validation import cron
from cp.validation.common import (
    GoValue,
    as_dict,
    as_list,
    as_str,
    go_label_selector,
    go_string_map,
    is_dns1123_label,
    is_domain_prefixed_path,
    is_int,
    meta_of,
    name_is_dns_subdomain,
    nonnegative,
    not_supported,
    too_long,
    too_many,
    validate_qualified_name,
)
from cp.validation.meta import selector_matches, validate_label_selector, validate_object_meta
from cp.validation.registry import Rules
from cp.validation.templates import check_selector_matches, selector_converts, validate_pod_template_spec

_MAX_INDEXED = 100_000
_MAX_POD_FAILURE_RULES = 20
_MAX_EXIT_CODES = 255
_MAX_SUCCESS_RULES = 20
_COMPLETION_MODES = ("NonIndexed", "Indexed")
_REPLACEMENT_POLICIES = ("Failed", "TerminatingOrFailed")
_FAILURE_ACTIONS = ("Count", "FailIndex", "FailJob", "Ignore")
_EXIT_CODE_OPERATORS = ("In", "NotIn")
_CONDITION_STATUSES = ("False", "True", "Unknown")
_HIGH_COMPLETIONS_LIMIT = 10_000  # parallelism and failed indexes above 10^5 completions with per-index backoff
_CONCURRENCY = ("Allow", "Forbid", "Replace")
_TZ_PART = re.compile(r"^[A-Za-z.\-_0-9+]{1,14}$")
_CRON_JOB_NAME_MAX = 52
_MAX_MANAGED_BY = 63


# ---------------------------------------------------------------- Job

def _has_label(labels: dict[str, Any], key: str, expected: str, errs: list[Cause]) -> None:
    """ValidateHasLabel on the pod template's metadata."""
    path = f"spec.template.metadata.labels[{key}]"
    if key not in labels:
        errs.append(Cause("Required", path, expected))
    elif labels[key] != expected:
        errs.append(Cause("Invalid", path, f"must be '{expected}'", go_string_map(labels)))


def _generated_selector(obj: dict[str, Any], errs: list[Cause], *, prefixed: bool) -> None:
    """validateGeneratedSelector: unless the selector is manual, the template carries the generated labels
    (the `batch.kubernetes.io/` ones where `prefixed`) and the selector selects exactly those."""
    spec = as_dict(obj.get("spec"))
    selector = spec.get("selector")
    if spec.get("manualSelector") is True or not isinstance(selector, dict):
        return  # a missing selector is reported with the rest of the spec
    meta = meta_of(obj)
    uid, name = as_str(meta.get("uid")), as_str(meta.get("name"))
    if not uid:
        errs.append(Cause("Required", "metadata.uid", ""))
    labels = as_dict(as_dict(as_dict(spec.get("template")).get("metadata")).get("labels"))
    _has_label(labels, LEGACY_CONTROLLER_UID, uid, errs)
    _has_label(labels, LEGACY_JOB_NAME, name, errs)
    expected = {LEGACY_CONTROLLER_UID: uid, LEGACY_JOB_NAME: name}
    if prefixed:
        _has_label(labels, CONTROLLER_UID, uid, errs)
        _has_label(labels, JOB_NAME, name, errs)
        expected.update({CONTROLLER_UID: uid, JOB_NAME: name})
    if selector_converts(selector) and not selector_matches(selector, expected):
        errs.append(Cause("Invalid", "spec.selector", "`selector` not auto-generated", go_label_selector(selector)))


def _valid_values(values: tuple[str, ...]) -> str:
    """`fmt.Sprintf("valid values: %q", list)`."""
    return "valid values: [" + " ".join(f'"{v}"' for v in values) + "]"


def _go_int32s(values: list[Any]) -> GoValue:
    return GoValue("[]int32{" + ", ".join(str(v) for v in values) + "}" if values else "[]int32(nil)")


def _pod_failure_policy(policy: dict[str, Any], spec: dict[str, Any], path: str, errs: list[Cause]) -> None:
    rules = as_list(policy.get("rules"))
    if len(rules) > _MAX_POD_FAILURE_RULES:
        too_many(errs, f"{path}.rules", len(rules), _MAX_POD_FAILURE_RULES)
    containers = {as_str(as_dict(c).get("name")) for key in ("containers", "initContainers")
                  for c in as_list(as_dict(as_dict(spec.get("template")).get("spec")).get(key))}
    for i, rule in enumerate(rules):
        rule = as_dict(rule)
        rpath = f"{path}.rules[{i}]"
        action = rule.get("action")
        if not action:
            errs.append(Cause("Required", f"{rpath}.action", _valid_values(_FAILURE_ACTIONS)))
        elif action == "FailIndex":
            if spec.get("backoffLimitPerIndex") is None:
                errs.append(Cause("Invalid", f"{rpath}.action", "requires the backoffLimitPerIndex to be set", action))
        elif action not in _FAILURE_ACTIONS:
            not_supported(errs, f"{rpath}.action", action, _FAILURE_ACTIONS)
        codes, conditions = rule.get("onExitCodes"), as_list(rule.get("onPodConditions"))
        if codes is not None:
            _exit_codes(as_dict(codes), containers, f"{rpath}.onExitCodes", errs)
        if conditions:
            _pod_conditions(conditions, f"{rpath}.onPodConditions", errs)
        if codes is not None and conditions:
            errs.append(Cause("Invalid", rpath, "specifying both OnExitCodes and OnPodConditions is not supported",
                              OMITTED))
        if codes is None and not conditions:
            errs.append(Cause("Invalid", rpath, "specifying one of OnExitCodes and OnPodConditions is required",
                              OMITTED))


def _pod_conditions(patterns: list[Any], path: str, errs: list[Cause]) -> None:
    if len(patterns) > _MAX_POD_FAILURE_RULES:
        too_many(errs, path, len(patterns), _MAX_POD_FAILURE_RULES)
    for j, pattern in enumerate(patterns):
        pattern = as_dict(pattern)
        ppath = f"{path}[{j}]"
        validate_qualified_name(as_str(pattern.get("type")), f"{ppath}.type", errs)
        status = pattern.get("status")
        if not status:
            errs.append(Cause("Required", f"{ppath}.status", _valid_values(_CONDITION_STATUSES)))
        elif status not in _CONDITION_STATUSES:
            not_supported(errs, f"{ppath}.status", status, _CONDITION_STATUSES)


def _exit_codes(req: dict[str, Any], containers: set[str], path: str, errs: list[Cause]) -> None:
    operator = req.get("operator")
    if not operator:
        errs.append(Cause("Required", f"{path}.operator", _valid_values(_EXIT_CODE_OPERATORS)))
    elif operator not in _EXIT_CODE_OPERATORS:
        not_supported(errs, f"{path}.operator", operator, _EXIT_CODE_OPERATORS)
    name = req.get("containerName")
    if isinstance(name, str) and name not in containers:
        errs.append(Cause("Invalid", f"{path}.containerName", "must be one of the container or initContainer "
                          "names in the pod template", name))
    values = as_list(req.get("values"))
    if not values:
        errs.append(Cause("Invalid", f"{path}.values", "at least one value is required", _go_int32s(values)))
    elif len(values) > _MAX_EXIT_CODES:
        too_many(errs, f"{path}.values", len(values), _MAX_EXIT_CODES)
    seen: set[Any] = set()
    ordered = True
    for k, value in enumerate(values):
        vpath = f"{path}.values[{k}]"
        if operator == "In" and value == 0:
            errs.append(Cause("Invalid", vpath, "must not be 0 for the In operator", value))
        if value in seen:
            errs.append(Cause("Duplicate", vpath, "", value))
        else:
            seen.add(value)
        if k > 0 and is_int(value) and is_int(values[k - 1]) and values[k - 1] > value:
            ordered = False
    if not ordered:
        errs.append(Cause("Invalid", f"{path}.values", "must be ordered", _go_int32s(values)))


def _success_policy(spec: dict[str, Any], path: str, errs: list[Cause]) -> None:
    rules = as_list(as_dict(spec.get("successPolicy")).get("rules"))
    if not rules:
        errs.append(Cause("Required", f"{path}.rules", "at least one rules must be specified when the "
                          "successPolicy is specified"))
    if len(rules) > _MAX_SUCCESS_RULES:
        too_many(errs, f"{path}.rules", len(rules), _MAX_SUCCESS_RULES)
    completions = spec.get("completions")
    for i, rule in enumerate(rules):
        rule = as_dict(rule)
        rpath = f"{path}.rules[{i}]"
        indexes, count = rule.get("succeededIndexes"), rule.get("succeededCount")
        if indexes is None and count is None:
            errs.append(Cause("Required", rpath, "at least one of succeededCount or succeededIndexes must be "
                              "specified"))
        total = 0
        if isinstance(indexes, str) and is_int(completions):
            try:
                total = _count_indexes(indexes, completions)
            except ValueError as exc:
                errs.append(Cause("Invalid", f"{rpath}.succeededIndexes", f"error parsing succeededIndexes: {exc}",
                                  indexes))
        if is_int(count):
            nonnegative(errs, f"{rpath}.succeededCount", count)
            if is_int(completions) and count > completions:
                errs.append(Cause("Invalid", f"{rpath}.succeededCount", f"must be less than or equal to "
                                  f"{completions} (the number of specified completions)", count))
            if indexes is not None and count > total:
                errs.append(Cause("Invalid", f"{rpath}.succeededCount", f"must be less than or equal to {total} "
                                  "(the number of indexes in the specified succeededIndexes field)", count))


def _count_indexes(text: str, completions: int) -> int:
    """validateIndexesFormat: increasing intervals `a` or `a-b` within [0, completions)."""
    if not text:
        return 0
    last: int | None = None
    total = 0
    for interval in text.split(","):
        limits = interval.split("-")
        if len(limits) > 2:
            raise ValueError(f"the fragment \"{interval}\" violates the requirement that an index interval can "
                             "have at most two parts separated by '-'")
        bounds = []
        for part in limits:
            if not re.fullmatch(r"[+-]?\d+", part):
                raise ValueError(f'cannot convert string to integer for index: "{part}"')
            value = int(part)
            if value >= completions:
                raise ValueError(f"too large index: {value}")
            bounds.append(value)
        x, y = bounds[0], bounds[-1]
        if x > y:
            raise ValueError(f"non-increasing order, previous: {x}, current: {y}")
        if last is not None and last >= x:
            raise ValueError(f"non-increasing order, previous: {last}, current: {x}")
        total += y - x + 1
        last = y
    return total


def _job_spec(spec: dict[str, Any], path: str, errs: list[Cause]) -> None:
    """validateJobSpec: what Jobs and a CronJob's job template share."""
    for key in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished",
                "backoffLimitPerIndex"):
        nonnegative(errs, f"{path}.{key}", spec.get(key))
    mode = spec.get("completionMode")
    per_index, max_failed = spec.get("backoffLimitPerIndex"), spec.get("maxFailedIndexes")
    if max_failed is not None:
        nonnegative(errs, f"{path}.maxFailedIndexes", max_failed)
        if per_index is None:
            errs.append(Cause("Required", f"{path}.backoffLimitPerIndex", "when maxFailedIndexes is specified"))
    managed_by = spec.get("managedBy")
    if isinstance(managed_by, str):
        errs.extend(is_domain_prefixed_path(f"{path}.managedBy", managed_by))
        if len(managed_by) > _MAX_MANAGED_BY:
            too_long(errs, f"{path}.managedBy", _MAX_MANAGED_BY)
    if mode is not None:
        if mode not in _COMPLETION_MODES:
            not_supported(errs, f"{path}.completionMode", mode, _COMPLETION_MODES)
        if mode == "Indexed":
            _indexed(spec, path, errs)
    if mode in (None, "NonIndexed"):
        for key in ("backoffLimitPerIndex", "maxFailedIndexes"):
            if spec.get(key) is not None:
                errs.append(Cause("Invalid", f"{path}.{key}", "requires indexed completion mode", spec[key]))
    failure = spec.get("podFailurePolicy")
    if isinstance(failure, dict):
        _pod_failure_policy(failure, spec, f"{path}.podFailurePolicy", errs)
    if spec.get("successPolicy") is not None:
        if mode != "Indexed":
            errs.append(Cause("Invalid", f"{path}.successPolicy", "requires indexed completion mode",
                              spec["successPolicy"]))
        else:
            _success_policy(spec, f"{path}.successPolicy", errs)
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
    rpath = f"{path}.template.spec.restartPolicy"
    if policy in (None, "", "Always"):
        errs.append(Cause("Required", rpath, 'valid values: "OnFailure", "Never"'))
    elif policy not in ("OnFailure", "Never"):
        not_supported(errs, rpath, policy, ("OnFailure", "Never"))
    elif failure is not None and policy != "Never":
        errs.append(Cause("Invalid", rpath, 'only "Never" is supported when podFailurePolicy is specified', policy))


def _indexed(spec: dict[str, Any], path: str, errs: list[Cause]) -> None:
    completions, parallelism = spec.get("completions"), spec.get("parallelism")
    per_index, max_failed = spec.get("backoffLimitPerIndex"), spec.get("maxFailedIndexes")
    if completions is None:
        errs.append(Cause("Required", f"{path}.completions", "when completion mode is Indexed"))
    if is_int(parallelism) and parallelism > _MAX_INDEXED:
        errs.append(Cause("Invalid", f"{path}.parallelism",
                          f"must be less than or equal to {_MAX_INDEXED} when completion mode is Indexed", parallelism))
    if is_int(completions) and is_int(max_failed) and max_failed > completions:
        errs.append(Cause("Invalid", f"{path}.maxFailedIndexes", "must be less than or equal to completions",
                          max_failed))
    if is_int(max_failed) and max_failed > _MAX_INDEXED:
        errs.append(Cause("Invalid", f"{path}.maxFailedIndexes", f"must be less than or equal to {_MAX_INDEXED}",
                          max_failed))
    if is_int(completions) and completions > _MAX_INDEXED and per_index is not None:
        high = f"when completions are above {_MAX_INDEXED} and used with backoff limit per index"
        if max_failed is None:
            errs.append(Cause("Required", f"{path}.maxFailedIndexes",
                              f"must be specified when completions is above {_MAX_INDEXED}"))
        if is_int(parallelism) and parallelism > _HIGH_COMPLETIONS_LIMIT:
            errs.append(Cause("Invalid", f"{path}.parallelism",
                              f"must be less than or equal to {_HIGH_COMPLETIONS_LIMIT} {high}", parallelism))
        if is_int(max_failed) and max_failed > _HIGH_COMPLETIONS_LIMIT:
            errs.append(Cause("Invalid", f"{path}.maxFailedIndexes",
                              f"must be less than or equal to {_HIGH_COMPLETIONS_LIMIT} {high}", max_failed))


def _job_spec_with_selector(spec: dict[str, Any], errs: list[Cause]) -> None:
    """ValidateJobSpec: the shared rules, a required selector that selects the template's pods."""
    _job_spec(spec, "spec", errs)
    selector = spec.get("selector")
    if selector is None:
        errs.append(Cause("Required", "spec.selector", ""))
    else:
        validate_label_selector(selector, "spec.selector", errs)
    if isinstance(selector, dict) and selector_converts(selector):
        check_selector_matches(selector, spec.get("template"), "spec.template", errs)


def _validate_job(obj: dict[str, Any], errs: list[Cause], *, prefixed: bool) -> None:
    """ValidateJob (the metadata rules run first, in the callers)."""
    _generated_selector(obj, errs, prefixed=prefixed)
    spec = as_dict(obj.get("spec"))
    _job_spec_with_selector(spec, errs)
    completions, name = spec.get("completions"), as_str(meta_of(obj).get("name"))
    if spec.get("completionMode") == "Indexed" and is_int(completions) and completions > 0:
        # Pods of an indexed Job are named `<job>-<index>`, their hostname a DNS label.
        hostname = f"{name}-{completions - 1}"
        if is_dns1123_label(hostname):
            errs.append(Cause("Invalid", "metadata.name", "will not able to create pod with invalid DNS label: "
                              + hostname, name))


def _job_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=namespaced, name_fn=name_is_dns_subdomain)
    _validate_job(obj, errs, prefixed=True)


def _job_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    """The strategy runs ValidateJob and then ValidateJobUpdate, which validates the spec again: spec
    errors are reported twice, as kube-apiserver does."""
    old_labels = as_dict(as_dict(as_dict(as_dict(old.get("spec")).get("template")).get("metadata")).get("labels"))
    _validate_job(new, errs, prefixed=CONTROLLER_UID in old_labels and JOB_NAME in old_labels)
    spec, old_spec = as_dict(new.get("spec")), as_dict(old.get("spec"))
    _job_spec_with_selector(spec, errs)
    completions = spec.get("completions")
    if spec.get("completionMode") != "Indexed":
        _immutable(spec, old_spec, "completions", errs)
    elif completions != old_spec.get("completions") and completions is not None \
            and completions != spec.get("parallelism"):
        errs.append(Cause("Invalid", "spec.completions", "can only be modified in tandem with spec.parallelism",
                          completions))
    if spec.get("selector") != old_spec.get("selector"):
        errs.append(Cause("Invalid", "spec.selector", "field is immutable", go_label_selector(spec.get("selector"))))
    _template_update(spec, old_spec, as_dict(old.get("status")), errs)
    for key in ("completionMode", "podFailurePolicy", "backoffLimitPerIndex", "managedBy", "successPolicy"):
        _immutable(spec, old_spec, key, errs)


def _immutable(spec: dict[str, Any], old_spec: dict[str, Any], key: str, errs: list[Cause]) -> None:
    if spec.get(key) != old_spec.get(key):
        errs.append(Cause("Invalid", f"spec.{key}", "field is immutable", spec.get(key)))


_SCHEDULING = ("nodeSelector", "tolerations", "schedulingGates")


def _template_update(spec: dict[str, Any], old_spec: dict[str, Any], old_status: dict[str, Any],
                     errs: list[Cause]) -> None:
    """The pod template is immutable, but a suspended Job that never started may change where and when
    its pods schedule (node affinity, node selector, tolerations, scheduling gates) and their labels
    and annotations."""
    template, old_template = as_dict(spec.get("template")), copy.deepcopy(as_dict(old_spec.get("template")))
    if old_spec.get("suspend") is True and old_status.get("startTime") is None:
        meta, old_meta = as_dict(template.get("metadata")), old_template.setdefault("metadata", {})
        pod, old_pod = as_dict(template.get("spec")), old_template.setdefault("spec", {})
        for key in ("labels", "annotations"):
            _carry(meta, old_meta, key)
        for key in _SCHEDULING:
            _carry(pod, old_pod, key)
        affinity, old_affinity = pod.get("affinity"), old_pod.get("affinity")
        if affinity is None and isinstance(old_affinity, dict):
            rest = {k: v for k, v in old_affinity.items() if k != "nodeAffinity"}
            if rest:
                old_pod["affinity"] = rest
            else:
                old_pod.pop("affinity")
        elif isinstance(affinity, dict):
            kept = dict(as_dict(old_affinity))
            _carry(affinity, kept, "nodeAffinity")
            old_pod["affinity"] = kept
    if template != old_template:
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
    ready, active = status.get("ready"), status.get("active", 0)
    if is_int(ready) and is_int(active) and ready > active:
        errs.append(Cause("Invalid", "status.ready", "cannot set more ready pods than active", ready))


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


def _cron_job_spec(spec: dict[str, Any], old_spec: dict[str, Any] | None, errs: list[Cause]) -> None:
    """validateCronJobSpec; on update (`old_spec`) a schedule may keep a `TZ=` prefix it had, and the
    time zone is checked only when it changes."""
    schedule = as_str(spec.get("schedule"))
    if not schedule:
        errs.append(Cause("Required", "spec.schedule", ""))
    else:
        allow_tz = old_spec is not None and "TZ" in as_str(old_spec.get("schedule"))
        _schedule(schedule, allow_tz=allow_tz, time_zone=spec.get("timeZone"), errs=errs)
    nonnegative(errs, "spec.startingDeadlineSeconds", spec.get("startingDeadlineSeconds"))
    if old_spec is None or old_spec.get("timeZone") != spec.get("timeZone"):
        _time_zone(spec.get("timeZone"), errs)
    policy = spec.get("concurrencyPolicy")
    if not policy:
        errs.append(Cause("Required", "spec.concurrencyPolicy", ""))
    elif policy not in _CONCURRENCY:
        not_supported(errs, "spec.concurrencyPolicy", policy, _CONCURRENCY)
    job_spec = as_dict(as_dict(spec.get("jobTemplate")).get("spec"))
    _job_spec(job_spec, "spec.jobTemplate.spec", errs)
    if job_spec.get("selector") is not None:
        errs.append(Cause("Invalid", "spec.jobTemplate.spec.selector", "`selector` will be auto-generated",
                          go_label_selector(job_spec.get("selector"))))
    if job_spec.get("manualSelector") is True:
        not_supported(errs, "spec.jobTemplate.spec.manualSelector", True, ("nil", "false"))
    for key in ("successfulJobsHistoryLimit", "failedJobsHistoryLimit"):
        nonnegative(errs, f"spec.{key}", spec.get(key))


def _cron_job_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=namespaced, name_fn=name_is_dns_subdomain)
    _cron_job_spec(as_dict(obj.get("spec")), None, errs)
    # Jobs are named `<cronjob>-<11-character timestamp>`, at most 63 characters.
    name = as_str(meta.get("name"))
    if len(name) > _CRON_JOB_NAME_MAX:
        errs.append(Cause("Invalid", "metadata.name", f"must be no more than {_CRON_JOB_NAME_MAX} characters", name))


def _cron_job_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    # The 52-character name limit is not checked again: old CronJobs with longer names stay updatable.
    _cron_job_spec(as_dict(new.get("spec")), as_dict(old.get("spec")), errs)


def _cron_job_status(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    for i, ref in enumerate(as_list(as_dict(new.get("status")).get("active"))):
        if not as_str(as_dict(ref).get("name")):
            errs.append(Cause("Required", f"status.active[{i}].name", ""))


RULES = {
    ("batch", "Job"): Rules(_job_create, _job_update, _job_status),
    ("batch", "CronJob"): Rules(_cron_job_create, _cron_job_update, _cron_job_status),
}
