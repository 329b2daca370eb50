"""Validation rules for the workload controllers beyond deployments and replica sets: DaemonSets,
StatefulSets and ControllerRevisions (apps/v1), ReplicationControllers and PodTemplates (core/v1).

Behaviour follows upstream `pkg/apis/apps/validation` and `pkg/apis/core/validation`
(ValidateReplicationController*, ValidatePodTemplate*): selectors that select their template's pods,
restart policy `Always`, update strategies, the StatefulSet spec fields an update may change, a
revision's immutable data. Pod templates are validated as pods are (`cp.validation.templates`). Pure.
"""

from __future__ import annotations

from typing import Any

from cp.errors import Cause
from cp.validation.common import (
    PERCENT,
    as_dict,
    go_label_selector,
    go_string_map,
    is_int,
    name_is_dns_label,
    name_is_dns_subdomain,
    nonnegative,
    not_supported,
    validate_annotations,
    validate_labels,
)
from cp.validation.meta import selector_matches, validate_label_selector, validate_object_meta
from cp.validation.policy import int_or_percent
from cp.validation.registry import Rules
from cp.validation.templates import (
    check_restart_always,
    check_selector_matches,
    selector_converts,
    template_labels,
    validate_pod_template_spec,
)

_RETENTION = ("Retain", "Delete")
_STS_MUTABLE = ("replicas", "template", "updateStrategy", "minReadySeconds", "ordinals", "revisionHistoryLimit",
                "persistentVolumeClaimRetentionPolicy")


def _status_counts(status: dict[str, Any], keys: tuple[str, ...], errs: list[Cause]) -> None:
    for key in keys:
        nonnegative(errs, f"status.{key}", status.get(key))


def _not_above(status: dict[str, Any], key: str, bound: str, errs: list[Cause], *, shown: str = "") -> None:
    value, limit = status.get(key), status.get(bound)
    if is_int(value) and is_int(limit) and value > limit:
        errs.append(Cause("Invalid", f"status.{key}", f"cannot be greater than {shown or 'status.' + bound}", value))


# ---------------------------------------------------------------- ReplicationController

def _rc_spec(spec: dict[str, Any], errs: list[Cause]) -> None:
    nonnegative(errs, "spec.minReadySeconds", spec.get("minReadySeconds"))
    selector = as_dict(spec.get("selector"))
    if not selector:
        errs.append(Cause("Required", "spec.selector", ""))
    nonnegative(errs, "spec.replicas", spec.get("replicas"))
    template = spec.get("template")
    if not isinstance(template, dict):
        errs.append(Cause("Required", "spec.template", ""))
        return
    labels = template_labels(template)
    if selector and any(labels.get(k) != v for k, v in selector.items()):
        errs.append(Cause("Invalid", "spec.template.metadata.labels", "`selector` does not match template `labels`",
                          go_string_map(labels)))
    validate_pod_template_spec(template, "spec.template", errs)
    check_restart_always(template, "spec.template", errs, kind="ReplicationController")


def _rc_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=namespaced, name_fn=name_is_dns_subdomain)
    _rc_spec(as_dict(obj.get("spec")), errs)


def _rc_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    _rc_spec(as_dict(new.get("spec")), errs)


def _rc_status(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    status = as_dict(new.get("status"))
    _status_counts(status, ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas",
                            "observedGeneration"), errs)
    for key in ("fullyLabeledReplicas", "readyReplicas", "availableReplicas"):
        _not_above(status, key, "replicas", errs)
    _not_above(status, "availableReplicas", "readyReplicas", errs, shown="readyReplicas")


# ---------------------------------------------------------------- PodTemplate

def _pod_template_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=namespaced, name_fn=name_is_dns_subdomain)
    validate_pod_template_spec(obj.get("template"), "template", errs)


def _pod_template_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    validate_pod_template_spec(new.get("template"), "template", errs)


# ---------------------------------------------------------------- DaemonSet

def _nonzero(value: Any) -> bool:
    if isinstance(value, str):
        return bool(PERCENT.match(value)) and int(value[:-1]) != 0
    return is_int(value) and value != 0


def _daemon_set_strategy(strategy: dict[str, Any], errs: list[Cause]) -> None:
    path = "spec.updateStrategy"
    stype = strategy.get("type")
    if stype == "OnDelete":
        return
    if stype != "RollingUpdate":
        not_supported(errs, path, strategy, ("RollingUpdate", "OnDelete"))
        return
    rolling = strategy.get("rollingUpdate")
    if not isinstance(rolling, dict):
        errs.append(Cause("Required", f"{path}.rollingUpdate", ""))
        return
    for key in ("maxUnavailable", "maxSurge"):
        if rolling.get(key) is not None:
            int_or_percent(rolling[key], f"{path}.rollingUpdate.{key}", errs)
    unavailable, surge = _nonzero(rolling.get("maxUnavailable")), _nonzero(rolling.get("maxSurge"))
    if unavailable and surge:
        errs.append(Cause("Invalid", f"{path}.rollingUpdate.maxSurge", "may not be set when maxUnavailable is "
                          "non-zero", rolling.get("maxSurge")))
    elif not unavailable and not surge:
        errs.append(Cause("Required", f"{path}.rollingUpdate.maxUnavailable", "cannot be 0 when maxSurge is 0"))


def _daemon_set_spec(spec: dict[str, Any], errs: list[Cause]) -> None:
    selector = spec.get("selector")
    validate_label_selector(selector, "spec.selector", errs)
    template = spec.get("template")
    if selector is None:  # a nil selector selects nothing
        errs.append(Cause("Invalid", "spec.template.metadata.labels", "`selector` does not match template `labels`",
                          go_string_map(template_labels(template))))
    elif selector_converts(selector):
        check_selector_matches(selector, template, "spec.template", errs)
    if isinstance(selector, dict) and not selector.get("matchLabels") and not selector.get("matchExpressions"):
        errs.append(Cause("Invalid", "spec.selector", "empty selector is invalid for daemonset",
                          go_label_selector(selector)))
    validate_pod_template_spec(template, "spec.template", errs)
    check_restart_always(template, "spec.template", errs, kind="DaemonSet")
    nonnegative(errs, "spec.minReadySeconds", spec.get("minReadySeconds"))
    _daemon_set_strategy(as_dict(spec.get("updateStrategy")), errs)
    nonnegative(errs, "spec.revisionHistoryLimit", spec.get("revisionHistoryLimit"))


def _daemon_set_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=namespaced, name_fn=name_is_dns_subdomain)
    _daemon_set_spec(as_dict(obj.get("spec")), errs)


def _daemon_set_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    spec, old_spec = as_dict(new.get("spec")), as_dict(old.get("spec"))
    _daemon_set_spec(spec, errs)
    # The apps/v1 strategy adds this after the spec rules.
    if spec.get("selector") != old_spec.get("selector"):
        errs.append(Cause("Invalid", "spec.selector", "field is immutable", go_label_selector(spec.get("selector"))))


def _collisions_kept(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    count = as_dict(new.get("status")).get("collisionCount")
    old_count = as_dict(old.get("status")).get("collisionCount")
    if is_int(old_count) and (count is None or (is_int(count) and count < old_count)):
        errs.append(Cause("Invalid", "status.collisionCount", "cannot be decremented", count or 0))


def _daemon_set_status(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    _status_counts(as_dict(new.get("status")), (
        "currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady",
        "observedGeneration", "updatedNumberScheduled", "numberAvailable", "numberUnavailable", "collisionCount"),
        errs)
    _collisions_kept(new, old, errs)


# ---------------------------------------------------------------- StatefulSet

def _stateful_set_spec(spec: dict[str, Any], errs: list[Cause]) -> None:
    policy = spec.get("podManagementPolicy")
    if not policy:
        errs.append(Cause("Required", "spec.podManagementPolicy", ""))
    elif policy not in ("OrderedReady", "Parallel"):
        errs.append(Cause("Invalid", "spec.podManagementPolicy", "must be 'OrderedReady' or 'Parallel'", policy))
    strategy = as_dict(spec.get("updateStrategy"))
    stype = strategy.get("type")
    rolling = strategy.get("rollingUpdate")
    if not stype:
        errs.append(Cause("Required", "spec.updateStrategy", ""))
    elif stype == "OnDelete":
        if rolling is not None:
            errs.append(Cause("Invalid", "spec.updateStrategy.rollingUpdate",
                              "only allowed for updateStrategy 'RollingUpdate'", rolling))
    elif stype == "RollingUpdate":
        if isinstance(rolling, dict):
            nonnegative(errs, "spec.updateStrategy.rollingUpdate.partition", rolling.get("partition"))
            unavailable = rolling.get("maxUnavailable")
            if unavailable is not None:
                path = "spec.updateStrategy.rollingUpdate.maxUnavailable"
                int_or_percent(unavailable, path, errs, percent_limit=False)
                if not _nonzero(unavailable):
                    errs.append(Cause("Invalid", path, "cannot be 0", unavailable))
                int_or_percent(unavailable, path, errs, percent_only=True)
    else:
        errs.append(Cause("Invalid", "spec.updateStrategy", "must be 'RollingUpdate' or 'OnDelete'", strategy))
    retention = spec.get("persistentVolumeClaimRetentionPolicy")
    if isinstance(retention, dict):
        for key in ("whenDeleted", "whenScaled"):
            if retention.get(key) not in _RETENTION:
                not_supported(errs, f"spec.persistentVolumeClaimRetentionPolicy.{key}", retention.get(key) or "",
                              _RETENTION)
    nonnegative(errs, "spec.replicas", spec.get("replicas"))
    nonnegative(errs, "spec.ordinals.start", as_dict(spec.get("ordinals")).get("start"))
    nonnegative(errs, "spec.minReadySeconds", spec.get("minReadySeconds"))
    selector = spec.get("selector")
    if selector is None:
        errs.append(Cause("Required", "spec.selector", ""))
    else:
        validate_label_selector(selector, "spec.selector", errs)
        if not as_dict(selector).get("matchLabels") and not as_dict(selector).get("matchExpressions"):
            errs.append(Cause("Invalid", "spec.selector", "empty selector is invalid for statefulset",
                              go_label_selector(selector)))
    template = spec.get("template")
    if selector is not None and not selector_converts(selector):
        errs.append(Cause("Invalid", "spec.selector", "", go_label_selector(selector)))
    else:
        if isinstance(selector, dict) and (selector.get("matchLabels") or selector.get("matchExpressions")) \
                and not selector_matches(selector, template_labels(template)):
            errs.append(Cause("Invalid", "spec.template.metadata.labels",
                              "`selector` does not match template `labels`", go_string_map(template_labels(template))))
        # Upstream checks only the template's labels and annotations here (at these paths), not its pod
        # spec: the pods' volumes come from the claim templates as well.
        meta = as_dict(as_dict(template).get("metadata"))
        validate_labels(meta.get("labels"), "spec.template.labels", errs)
        validate_annotations(meta.get("annotations"), "spec.template.annotations", errs)
    check_restart_always(template, "spec.template", errs, kind="StatefulSet")
    nonnegative(errs, "spec.revisionHistoryLimit", spec.get("revisionHistoryLimit"))


def _stateful_set_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    # Pods take the set's name plus an ordinal as hostname: a DNS label.
    validate_object_meta(meta, errs, namespaced=namespaced, name_fn=name_is_dns_label)
    _stateful_set_spec(as_dict(obj.get("spec")), errs)


def _stateful_set_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    spec, old_spec = as_dict(new.get("spec")), as_dict(old.get("spec"))
    _stateful_set_spec(spec, errs)
    rest = {k: v for k, v in spec.items() if k not in _STS_MUTABLE}
    old_rest = {k: v for k, v in old_spec.items() if k not in _STS_MUTABLE}
    if rest != old_rest:
        errs.append(Cause("Forbidden", "spec", "updates to statefulset spec for fields other than 'replicas', "
                          "'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', "
                          "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"))


def _stateful_set_status(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    status = as_dict(new.get("status"))
    _status_counts(status, ("replicas", "readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas",
                            "observedGeneration", "collisionCount"), errs)
    for key in ("readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas"):
        _not_above(status, key, "replicas", errs)
    _not_above(status, "availableReplicas", "readyReplicas", errs)
    _collisions_kept(new, old, errs)


# ---------------------------------------------------------------- ControllerRevision

def _revision(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=namespaced, name_fn=name_is_dns_subdomain)
    if obj.get("data") is None:
        errs.append(Cause("Required", "data", "data is mandatory"))
    nonnegative(errs, "revision", obj.get("revision"))


def _revision_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    _revision(new, as_dict(new.get("metadata")), errs, True)
    if new.get("data") != old.get("data"):
        errs.append(Cause("Invalid", "data", "field is immutable", new.get("data")))


RULES = {
    ("", "ReplicationController"): Rules(_rc_create, _rc_update, _rc_status),
    ("", "PodTemplate"): Rules(_pod_template_create, _pod_template_update),
    ("apps", "DaemonSet"): Rules(_daemon_set_create, _daemon_set_update, _daemon_set_status),
    ("apps", "StatefulSet"): Rules(_stateful_set_create, _stateful_set_update, _stateful_set_status),
    ("apps", "ControllerRevision"): Rules(_revision, _revision_update),
}
