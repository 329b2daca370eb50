"""Validation rules for policy/v1 PodDisruptionBudgets.

Behaviour follows upstream `pkg/apis/policy/validation`: `minAvailable` and `maxUnavailable` are each a
non-negative count or a percentage of at most 100%, never both; the selector is a label selector; the
unhealthy pod eviction policy (not defaulted) is one of the two known ones. The spec may change. Pure.
"""

from __future__ import annotations

from typing import Any

from cp.errors import Cause
from cp.validation.common import (
    PERCENT,
    as_dict,
    is_int,
    nonnegative,
    not_supported,
    validate_path_segment_name,
)
from cp.validation.meta import validate_conditions, validate_label_selector, validate_object_meta
from cp.validation.registry import Rules

_EVICTION_POLICIES = ("AlwaysAllow", "IfHealthyBudget")


def int_or_percent(value: Any, path: str, errs: list[Cause], *, percent_limit: bool = True,
                   percent_only: bool = False) -> None:
    """ValidatePositiveIntOrPercent, then IsNotMoreThan100Percent (unless `percent_limit` is false;
    `percent_only` runs that one alone)."""
    if isinstance(value, str):
        if not PERCENT.match(value):
            if not percent_only:
                errs.append(Cause("Invalid", path, "a valid percent string must be a numeric string followed by an "
                                  "ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')", value))
        elif int(value[:-1]) > 100 and (percent_limit or percent_only):
            errs.append(Cause("Invalid", path, "must not be greater than 100%", value))
    elif is_int(value) and not percent_only:
        nonnegative(errs, path, value)


def _spec(spec: dict[str, Any], errs: list[Cause]) -> None:
    min_available, max_unavailable = spec.get("minAvailable"), spec.get("maxUnavailable")
    if min_available is not None and max_unavailable is not None:
        errs.append(Cause("Invalid", "spec", "minAvailable and maxUnavailable cannot be both set", spec))
    for key, value in (("minAvailable", min_available), ("maxUnavailable", max_unavailable)):
        if value is not None:
            int_or_percent(value, f"spec.{key}", errs)
    validate_label_selector(spec.get("selector"), "spec.selector", errs)
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy is not None and policy not in _EVICTION_POLICIES:
        not_supported(errs, "spec.unhealthyPodEvictionPolicy", policy, _EVICTION_POLICIES)


def _create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    # ValidatePodDisruptionBudget checks the spec only; the generic metadata rules (names as path
    # segments) run after it, and only when it passed (rest.BeforeCreate).
    _spec(as_dict(obj.get("spec")), errs)
    if not errs:
        validate_object_meta(meta, errs, namespaced=namespaced, name_fn=validate_path_segment_name)


def _update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    _spec(as_dict(new.get("spec")), errs)


def _status(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    status = as_dict(new.get("status"))
    for key in ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"):
        nonnegative(errs, f"status.{key}", status.get(key))
    validate_conditions(status.get("conditions"), "status.conditions", errs)


RULES = {
    ("policy", "PodDisruptionBudget"): Rules(_create, _update, _status),
}
