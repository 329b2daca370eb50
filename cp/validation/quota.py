"""Validation rules for core/v1 LimitRanges and ResourceQuotas (the admission plugins that enforce them
are `api.admission.limitranger` and `api.admission.resourcequota`).

Behaviour follows upstream `pkg/apis/core/validation` (ValidateLimitRange, ValidateResourceQuota,
ValidateResourceQuotaSpec/Status): resource names per limit type, the ordering of min, default request,
default limit and max, ratios, and the quota's resources, values and scopes. Where upstream walks a set
of resource names (random order), the names are taken in sorted order. Pure.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from cp import quantity
from cp.errors import Cause
from cp.validation.common import (
    GoValue,
    as_dict,
    as_list,
    as_str,
    each,
    is_qualified_name,
    name_is_dns_subdomain,
    not_supported,
    parse_quantity,
)
from cp.validation.meta import validate_object_meta
from cp.validation.registry import Rules

_STANDARD_QUOTA = frozenset((
    "pods", "services", "replicationcontrollers", "resourcequotas", "secrets", "configmaps",
    "persistentvolumeclaims", "services.nodeports", "services.loadbalancers", "cpu", "memory", "ephemeral-storage",
    "requests.cpu", "requests.memory", "requests.storage", "requests.ephemeral-storage", "limits.cpu",
    "limits.memory", "limits.ephemeral-storage"))
_INTEGER_QUOTA = frozenset((
    "pods", "services", "replicationcontrollers", "resourcequotas", "secrets", "configmaps",
    "persistentvolumeclaims", "services.nodeports", "services.loadbalancers"))
_SCOPES = ("Terminating", "NotTerminating", "BestEffort", "NotBestEffort", "PriorityClass",
           "CrossNamespacePodAffinity", "VolumeAttributesClass")
_SCOPE_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def _canonical(raw: Any) -> str:
    try:
        return quantity.canonical(raw)
    except (quantity.QuantityError, TypeError):
        return str(raw)


def _overcommit_allowed(name: str) -> bool:
    native = "/" not in name or name.startswith("kubernetes.io/")
    return native and not name.startswith("hugepages-")


# ---------------------------------------------------------------- LimitRange

_STANDARD_RESOURCES = frozenset((
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage",
    "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "services", "replicationcontrollers",
    "resourcequotas", "secrets", "configmaps", "persistentvolumeclaims", "storage", "requests.storage",
    "services.nodeports", "services.loadbalancers"))
_LIMIT_TYPES = ("Pod", "Container", "PersistentVolumeClaim")


def _resource_name(name: str, path: str, errs: list[Cause]) -> bool:
    """validateResourceName; whether the name was a valid qualified name."""
    msgs = is_qualified_name(name)
    each(errs, path, name, msgs)
    if msgs:
        return False
    if "/" not in name and name not in _STANDARD_RESOURCES and \
            not name.startswith(("hugepages-", "requests.hugepages-", "limits.hugepages-")):
        errs.append(Cause("Invalid", path, "must be a standard resource type or fully qualified", name))
    return True


def _limit_resource_name(limit_type: str, name: str, path: str, errs: list[Cause]) -> None:
    """validateLimitRangeResourceName: container resource names for Pod and Container limits."""
    _resource_name(name, path, errs)
    if limit_type not in ("Pod", "Container"):
        return
    if "/" not in name:
        if name not in ("cpu", "memory", "ephemeral-storage") and not name.startswith("hugepages-"):
            errs.append(Cause("Invalid", path, "must be a standard resource for containers", name))
    elif "kubernetes.io/" not in name and not _is_extended(name):
        errs.append(Cause("Invalid", path, "doesn't follow extended resource name standard", name))


def _limit_type(limit_type: str, path: str, errs: list[Cause]) -> None:
    msgs = is_qualified_name(limit_type)
    each(errs, path, limit_type, msgs)
    if not msgs and "/" not in limit_type and limit_type not in _LIMIT_TYPES:
        errs.append(Cause("Invalid", path, "must be a standard limit type or fully qualified", limit_type))


def _limit_item(item: dict[str, Any], path: str, errs: list[Cause]) -> None:
    limit_type = as_str(item.get("type"))
    values: dict[str, dict[str, Decimal]] = {s: {} for s in _SECTIONS}
    raw: dict[str, dict[str, Any]] = {s: {} for s in _SECTIONS}

    def section(name: str) -> None:
        for resource, value in sorted(as_dict(item.get(name)).items()):
            _limit_resource_name(limit_type, resource, f"{path}.{name}[{resource}]", errs)
            q = parse_quantity(value)
            if q is not None:
                values[name][resource], raw[name][resource] = q, value

    section("max")
    section("min")
    if limit_type == "Pod":
        for key in ("default", "defaultRequest"):
            if as_dict(item.get(key)):
                errs.append(Cause("Forbidden", f"{path}.{key}", "may not be specified when `type` is 'Pod'"))
    else:
        section("default")
        section("defaultRequest")
    if limit_type == "PersistentVolumeClaim" and "storage" not in as_dict(item.get("min")) \
            and "storage" not in as_dict(item.get("max")):
        errs.append(Cause("Required", f"{path}.limits", "either minimum or maximum storage value is required, but "
                          "neither was provided"))
    section("maxLimitRequestRatio")
    for name in sorted(set().union(*values.values())):
        _compare(name, values, raw, path, errs)


def _compare(name: str, values: dict[str, dict[str, Decimal]], raw: dict[str, dict[str, Any]], path: str,
             errs: list[Cause]) -> None:
    low, high = values["min"].get(name), values["max"].get(name)
    default, request = values["default"].get(name), values["defaultRequest"].get(name)
    ratio = values["maxLimitRequestRatio"].get(name)

    def text(section: str) -> str:
        return _canonical(raw[section][name])

    def invalid(section: str, shown: str, message: str) -> None:
        errs.append(Cause("Invalid", f"{path}.{section}[{name}]", message, GoValue(text(shown))))

    if low is not None and high is not None and low > high:
        invalid("min", "min", f"min value {text('min')} is greater than max value {text('max')}")
    if request is not None and low is not None and low > request:
        invalid("defaultRequest", "defaultRequest",
                f"min value {text('min')} is greater than default request value {text('defaultRequest')}")
    if request is not None and high is not None and request > high:
        invalid("defaultRequest", "defaultRequest",
                f"default request value {text('defaultRequest')} is greater than max value {text('max')}")
    if request is not None and default is not None and request > default:
        invalid("defaultRequest", "defaultRequest", f"default request value {text('defaultRequest')} is greater "
                f"than default limit value {text('default')}")
    if default is not None and low is not None and low > default:
        invalid("default", "min", f"min value {text('min')} is greater than default value {text('default')}")
    if default is not None and high is not None and default > high:
        invalid("default", "max", f"default value {text('default')} is greater than max value {text('max')}")
    if ratio is not None and ratio < 1:
        invalid("maxLimitRequestRatio", "maxLimitRequestRatio",
                f"ratio {text('maxLimitRequestRatio')} is less than 1")
    if ratio is not None and low is not None and high is not None and low > 0:
        limit = float(high) / float(low)
        if float(ratio) > limit:
            invalid("maxLimitRequestRatio", "maxLimitRequestRatio",
                    f"ratio {text('maxLimitRequestRatio')} is greater than max/min = {limit:f}")
    if not _overcommit_allowed(name) and default is not None and request is not None and default != request:
        invalid("defaultRequest", "defaultRequest", f"default value {text('default')} must equal to defaultRequest "
                f"value {text('defaultRequest')} in {name}")


_SECTIONS = ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio")


def _limit_range_spec(obj: dict[str, Any], errs: list[Cause]) -> None:
    seen: set[str] = set()
    for i, item in enumerate(as_list(as_dict(obj.get("spec")).get("limits"))):
        item = as_dict(item)
        path = f"spec.limits[{i}]"
        limit_type = as_str(item.get("type"))
        _limit_type(limit_type, f"{path}.type", errs)
        if limit_type in seen:
            errs.append(Cause("Duplicate", f"{path}.type", "", limit_type))
        seen.add(limit_type)
        _limit_item(item, path, errs)


def _limit_range_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=namespaced, name_fn=name_is_dns_subdomain)
    _limit_range_spec(obj, errs)


def _limit_range_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    _limit_range_spec(new, errs)


# ---------------------------------------------------------------- ResourceQuota

def _quota_resources(hard: Any, path: str, errs: list[Cause]) -> None:
    for name, value in sorted(as_dict(hard).items()):
        rpath = f"{path}[{name}]"
        if _resource_name(name, rpath, errs) and "/" not in name and name not in _STANDARD_QUOTA \
                and not name.startswith(("hugepages-", "requests.hugepages-")):
            errs.append(Cause("Invalid", rpath, "must be a standard resource for quota", name))
        q = parse_quantity(value)
        if q is None:
            continue
        if q < 0:
            errs.append(Cause("Invalid", rpath, "must be greater than or equal to 0", GoValue(_canonical(value))))
        integer = name in _INTEGER_QUOTA or _is_extended(name)
        if integer and q != q.to_integral_value():
            errs.append(Cause("Invalid", rpath, "must be an integer", GoValue(_canonical(value))))


_POD_COMPUTE = frozenset(("cpu", "memory", "limits.cpu", "limits.memory", "requests.cpu", "requests.memory"))


def _scope_applies(scope: str, resource: str) -> bool:
    """IsResourceQuotaScopeValidForResource."""
    if scope in ("Terminating", "NotTerminating", "NotBestEffort", "PriorityClass", "CrossNamespacePodAffinity"):
        return resource == "pods" or resource in _POD_COMPUTE
    if scope == "BestEffort":
        return resource == "pods"
    if scope == "VolumeAttributesClass":
        return resource in ("persistentvolumeclaims", "requests.storage")
    return True


def _is_extended(name: str) -> bool:
    """helper.IsExtendedResourceName: not native, not a request, and valid behind `requests.` (extended
    resources and object counts `count/<resource>` hold whole numbers)."""
    native = "/" not in name or "kubernetes.io/" in name
    return not native and not name.startswith("requests.") and not is_qualified_name("requests." + name)


def _go_scopes(scopes: list[Any]) -> GoValue:
    return GoValue("[]core.ResourceQuotaScope{" + ", ".join(f'"{s}"' for s in scopes) + "}")


def _quota_spec(spec: dict[str, Any], errs: list[Cause]) -> None:
    hard = as_dict(spec.get("hard"))
    _quota_resources(hard, "spec.hard", errs)
    scopes = as_list(spec.get("scopes"))
    for scope in scopes:
        if scope not in _SCOPES:
            errs.append(Cause("Invalid", "spec.scopes", "unsupported scope", _go_scopes(scopes)))
        for name in sorted(hard):
            if name in _STANDARD_QUOTA and not _scope_applies(str(scope), name):
                errs.append(Cause("Invalid", "spec.scopes", "unsupported scope applied to resource",
                                  _go_scopes(scopes)))
    for pair in (("BestEffort", "NotBestEffort"), ("Terminating", "NotTerminating")):
        if all(s in scopes for s in pair):
            errs.append(Cause("Invalid", "spec.scopes", "conflicting scopes", _go_scopes(scopes)))
    selector = spec.get("scopeSelector")
    for i, req in enumerate(as_list(as_dict(selector).get("matchExpressions"))):
        req = as_dict(req)
        rpath = f"spec.scopeSelector.matchExpressions[{i}]"
        if req.get("scopeName") not in _SCOPES:
            errs.append(Cause("Invalid", f"{rpath}.scopeName", "unsupported scope", req.get("scopeName")))
        operator = req.get("operator")
        if operator not in _SCOPE_OPERATORS:
            not_supported(errs, f"{rpath}.operator", operator, _SCOPE_OPERATORS)
        values = as_list(req.get("values"))
        if operator in ("In", "NotIn") and not values:
            errs.append(Cause("Required", f"{rpath}.values", "must be at least one value when `operator` is 'In' or "
                              "'NotIn' for scope selector"))
        elif operator in ("Exists", "DoesNotExist") and values:
            errs.append(Cause("Invalid", f"{rpath}.values", "must be no value when `operator` is 'Exist' or "
                              "'DoesNotExist' for scope selector", GoValue("[]string{" + ", ".join(
                                  f'"{v}"' for v in values) + "}")))


def _quota_status(obj: dict[str, Any], errs: list[Cause]) -> None:
    status = as_dict(obj.get("status"))
    _quota_resources(status.get("hard"), "status.hard", errs)
    _quota_resources(status.get("used"), "status.used", errs)


def _quota_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=namespaced, name_fn=name_is_dns_subdomain)
    _quota_spec(as_dict(obj.get("spec")), errs)
    _quota_status(obj, errs)


def _quota_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    _quota_spec(as_dict(new.get("spec")), errs)
    # Scopes are fixed at creation.
    scopes = as_list(as_dict(new.get("spec")).get("scopes"))
    if set(map(str, scopes)) != set(map(str, as_list(as_dict(old.get("spec")).get("scopes")))):
        errs.append(Cause("Invalid", "spec.scopes", "field is immutable", _go_scopes(scopes)))


def _quota_status_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    _quota_status(new, errs)


RULES = {
    ("", "LimitRange"): Rules(_limit_range_create, _limit_range_update),
    ("", "ResourceQuota"): Rules(_quota_create, _quota_update, _quota_status_update),
}
