"""Validation rules for scheduling.k8s.io/v1 PriorityClass and node.k8s.io/v1 RuntimeClass, the two
cluster-scoped classes pods name for their scheduling (priority, runtime handler and overhead).

Behaviour follows upstream `pkg/apis/scheduling/validation` (the reserved `system-` prefix, the bound on
user-defined values, immutable value and preemption policy) and `pkg/apis/node/validation`; RuntimeClass
`handler`, tagged for beta declarative validation in k8s.io/api 1.37, is reported as the declarative
validator reports it. Pure.
"""

from __future__ import annotations

from typing import Any

from cp import priority
from cp.errors import Cause
from cp.validation import podgroups
from cp.validation.common import (
    GoValue,
    as_str,
    each,
    is_dns1123_label,
    name_is_dns_subdomain,
    not_supported,
    validate_labels,
)
from cp.validation.meta import validate_object_meta
from cp.validation.pod import validate_resource_limits, validate_tolerations
from cp.validation.registry import Rules

SYSTEM_PREFIX = "system-"
HIGHEST_USER_PRIORITY = 1_000_000_000
_PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")


def _system_class_problem(name: str, value: Any, global_default: Any) -> str | None:
    """IsKnownSystemPriorityClass: None for one of the built-in classes as they are defined."""
    if name not in priority.SYSTEM_PRIORITY_CLASSES:
        return f"{name} is not a known system priority class"
    expected = priority.SYSTEM_PRIORITY_CLASSES[name][0]
    if value != expected:
        return f"value of {name} PriorityClass must be {expected}"
    if global_default is True:
        return f"globalDefault of {name} PriorityClass must be false"
    return None


def _priority_class_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=False, name_fn=name_is_dns_subdomain)
    name, value = as_str(meta.get("name")), obj.get("value", 0)
    if name.startswith(SYSTEM_PREFIX):
        problem = _system_class_problem(name, value, obj.get("globalDefault"))
        if problem:
            errs.append(Cause("Forbidden", "metadata.name", f"priority class names with '{SYSTEM_PREFIX}' prefix "
                              f"are reserved for system use only. error: {problem}"))
    elif isinstance(value, int) and value > HIGHEST_USER_PRIORITY:
        errs.append(Cause("Forbidden", "value", "maximum allowed value of a user defined priority is "
                          f"{HIGHEST_USER_PRIORITY}"))
    policy = obj.get("preemptionPolicy")
    if policy == "":
        errs.append(Cause("Required", "preemptionPolicy", ""))
    elif policy is not None and policy not in _PREEMPTION_POLICIES:
        not_supported(errs, "preemptionPolicy", policy, _PREEMPTION_POLICIES)


def _priority_class_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    if new.get("value", 0) != old.get("value", 0):
        errs.append(Cause("Forbidden", "value", "may not be changed in an update."))
    if new.get("preemptionPolicy") != old.get("preemptionPolicy"):
        errs.append(Cause("Invalid", "preemptionPolicy", "field is immutable",
                          new.get("preemptionPolicy") if new.get("preemptionPolicy") is not None
                          else GoValue("null")))


def _runtime_class_fields(obj: dict[str, Any], errs: list[Cause], dv: list[Cause]) -> None:
    handler = as_str(obj.get("handler"))
    if not handler:
        dv.append(Cause("Required", "handler", ""))
    else:
        each(dv, "handler", handler, is_dns1123_label(handler))
    overhead = obj.get("overhead")
    if isinstance(overhead, dict):
        validate_resource_limits(overhead.get("podFixed"), "overhead", errs)
    scheduling = obj.get("scheduling")
    if isinstance(scheduling, dict):
        validate_labels(scheduling.get("nodeSelector"), "scheduling.nodeSelector", errs)
        validate_tolerations(scheduling.get("tolerations"), "scheduling.tolerations", errs)


def _runtime_class_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    dv: list[Cause] = []
    validate_object_meta(meta, errs, namespaced=False, name_fn=name_is_dns_subdomain)
    _runtime_class_fields(obj, errs, dv)
    errs.extend(dv)


def _runtime_class_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    dv: list[Cause] = []
    if new.get("handler") != old.get("handler"):
        dv.append(Cause("Invalid", "handler", "field is immutable", GoValue("null")))
    errs.extend(dv)


RULES = {
    ("scheduling.k8s.io", "PriorityClass"): Rules(_priority_class_create, _priority_class_update),
    ("node.k8s.io", "RuntimeClass"): Rules(_runtime_class_create, _runtime_class_update),
    **podgroups.RULES,  # v1beta1 Workload and PodGroup (GenericWorkload)
}
