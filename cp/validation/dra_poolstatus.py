"""Validation rules for resource.k8s.io/v1alpha3 ResourcePoolStatusRequest (KEP-5677, gate
DRAResourcePoolStatus; served only with the gate and `--runtime-config`, `cp.resources.GATED`).

1.37 validates the kind declaratively, from the `+k8s:` tags of k8s.io/api `resource/v1alpha3/types.go`,
beside `pkg/apis/resource/validation`'s handwritten checks: the name a DNS subdomain; `spec.driver`
required, a DNS subdomain of any case (`k8s-long-name-caseless`); `spec.poolName` a resource pool name
when set; `spec.limit` (defaulted to 100) between 1 and 1000; the spec immutable; `status`, once set,
immutable too, and checked when first written: `poolCount` required and not negative, at most 1000
pools each with its driver, pool name, node name, non-negative counts (`resourceSliceCount` at least 1)
and a `validationError` of at most 256 bytes (`generation` required: zero is unset), at most 32
entries per summary (partition types unique by attribute and type), at most 10 conditions
(metav1's condition rules). Pure.
"""

from __future__ import annotations

from typing import Any

from cp.errors import Cause
from cp.names import is_dns1123_subdomain
from cp.validation.common import (
    as_dict,
    as_list,
    as_str,
    each,
    immutable,
    is_dns1123_subdomain_caseless,
    is_int,
    name_is_dns_subdomain,
    too_many,
)
from cp.validation.dra_fields import fully_qualified_name, metav1_conditions, pool_name
from cp.validation.meta import validate_object_meta
from cp.validation.registry import Rules

MAX_LIMIT = 1000
MAX_POOLS = 1000
MAX_SUMMARY = 32
MAX_CONDITIONS = 10
MAX_VALIDATION_ERROR = 256


def _minimum(errs: list[Cause], path: str, value: Any, least: int) -> None:
    if is_int(value) and value < least:
        errs.append(Cause("Invalid", path, f"must be greater than or equal to {least}", value))


def _driver(errs: list[Cause], path: str, value: Any) -> None:
    text = as_str(value)
    if not text:
        errs.append(Cause("Required", path, ""))
    else:
        each(errs, path, text, is_dns1123_subdomain_caseless(text))


def _spec(errs: list[Cause], spec: dict[str, Any]) -> None:
    _driver(errs, "spec.driver", spec.get("driver"))
    if spec.get("poolName") is not None:  # optional, but an empty name is not a pool name
        text = as_str(spec.get("poolName"))
        if text:
            pool_name(text, "spec.poolName", errs)
        else:
            each(errs, "spec.poolName", text, is_dns1123_subdomain(text))
    limit = spec.get("limit")
    if limit is None:
        errs.append(Cause("Required", "spec.limit", ""))
    elif is_int(limit):
        _minimum(errs, "spec.limit", limit, 1)
        if limit > MAX_LIMIT:
            errs.append(Cause("Invalid", "spec.limit", f"must be less than or equal to {MAX_LIMIT}", limit))
    if spec.get("defaultPartitionTypeAttribute") is not None:  # kept only with DRAPartitionableDevicesType
        fully_qualified_name(spec.get("defaultPartitionTypeAttribute"), "spec.defaultPartitionTypeAttribute", errs)


def _create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=False, name_fn=name_is_dns_subdomain)
    _spec(errs, as_dict(obj.get("spec")))


def _update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    immutable(errs, "spec", new.get("spec"), old.get("spec"), shown="")


def _pool(errs: list[Cause], path: str, pool: dict[str, Any]) -> None:
    _driver(errs, f"{path}.driver", pool.get("driver"))
    pool_name(pool.get("poolName"), f"{path}.poolName", errs)
    generation = pool.get("generation")
    if not generation:  # `+k8s:required` of an int64: zero is unset
        errs.append(Cause("Required", f"{path}.generation", ""))
    _minimum(errs, f"{path}.generation", generation, 0)
    _minimum(errs, f"{path}.resourceSliceCount", pool.get("resourceSliceCount"), 1)
    for field in ("totalDevices", "allocatedDevices", "availableDevices", "unavailableDevices"):
        _minimum(errs, f"{path}.{field}", pool.get(field), 0)
    node = pool.get("nodeName")
    if node is not None:
        each(errs, f"{path}.nodeName", as_str(node), is_dns1123_subdomain(as_str(node)))
    problem = pool.get("validationError")
    if problem is not None and len(as_str(problem).encode()) > MAX_VALIDATION_ERROR:
        errs.append(Cause("TooLong", f"{path}.validationError",
                          f"may not be more than {MAX_VALIDATION_ERROR} bytes"))
    partitions = as_list(pool.get("partitionSummary"))
    if len(partitions) > MAX_SUMMARY:
        too_many(errs, f"{path}.partitionSummary", len(partitions), MAX_SUMMARY)
    seen: set[tuple[str, str]] = set()
    for j, entry in enumerate(partitions):
        entry, epath = as_dict(entry), f"{path}.partitionSummary[{j}]"
        key = (as_str(entry.get("attribute")), as_str(entry.get("type")))
        if key in seen:  # `+k8s:unique=map` on (attribute, type)
            errs.append(Cause("Duplicate", epath, "", {"attribute": key[0], "type": key[1]}))
        seen.add(key)
        for field in ("attribute", "type", "total", "allocatable"):
            if entry.get(field) in (None, ""):
                errs.append(Cause("Required", f"{epath}.{field}", ""))
        _minimum(errs, f"{epath}.total", entry.get("total"), 0)
        _minimum(errs, f"{epath}.allocatable", entry.get("allocatable"), 0)
    shareable = pool.get("shareableSummary")
    if isinstance(shareable, dict):
        spath = f"{path}.shareableSummary"
        for field in ("fullyAvailableDevices", "partiallyAvailableDevices"):
            if shareable.get(field) is None:
                errs.append(Cause("Required", f"{spath}.{field}", ""))
            _minimum(errs, f"{spath}.{field}", shareable.get(field), 0)
        capacity = as_list(shareable.get("capacity"))
        if len(capacity) > MAX_SUMMARY:
            too_many(errs, f"{spath}.capacity", len(capacity), MAX_SUMMARY)
        for j, entry in enumerate(capacity):
            entry = as_dict(entry)
            for field in ("name", "total", "consumed", "available"):
                if entry.get(field) in (None, ""):
                    errs.append(Cause("Required", f"{spath}.capacity[{j}].{field}", ""))


def _status_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    if old.get("status") is not None:
        # A request with status is complete: its status may not change.
        immutable(errs, "status", new.get("status"), old.get("status"), shown="")
        return
    status = new.get("status")
    if status is None:
        return
    status = as_dict(status)
    count = status.get("poolCount")
    if count is None:
        errs.append(Cause("Required", "status.poolCount", ""))
    _minimum(errs, "status.poolCount", count, 0)
    pools = as_list(status.get("pools"))
    if len(pools) > MAX_POOLS:
        too_many(errs, "status.pools", len(pools), MAX_POOLS)
    for i, pool in enumerate(pools):
        _pool(errs, f"status.pools[{i}]", as_dict(pool))
    conditions = as_list(status.get("conditions"))
    if len(conditions) > MAX_CONDITIONS:
        too_many(errs, "status.conditions", len(conditions), MAX_CONDITIONS)
    metav1_conditions(conditions, "status.conditions", errs)


RULES = {
    ("resource.k8s.io", "ResourcePoolStatusRequest"): Rules(_create, _update, _status_update),
}
