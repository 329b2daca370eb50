"""Validation rules for resource.k8s.io/v1 ResourceSlice (devices, attributes, capacity, counters) and
DeviceTaintRule.

Behaviour follows upstream `pkg/apis/resource/validation/validation.go`; the shared field checks are in
`cp.validation.dra_fields`. Pure.
"""

from __future__ import annotations

import math
import re
from decimal import ROUND_CEILING, Decimal
from fractions import Fraction
from typing import Any

from cp import features as gates
from cp import quantity
from cp.errors import Cause
from cp.validation.common import (
    GoValue,
    as_dict,
    as_list,
    as_str,
    each,
    immutable,
    is_dns1123_subdomain,
    is_int,
    name_is_dns_subdomain,
    too_long,
    too_many,
)
from cp.validation.dra_fields import (
    MAX_ATTR_VALUE_LEN,
    MAX_ATTRIBUTE_VALUES,
    MAX_ATTRS_AND_CAPACITY,
    MAX_COMPATIBILITY_GROUPS,
    MAX_CONSUMPTIONS_PER_DEVICE,
    MAX_COUNTER_SETS,
    MAX_COUNTERS_PER_CONSUMPTION,
    MAX_COUNTERS_PER_SET,
    MAX_DEVICE_TAINTS,
    MAX_DEVICES,
    MAX_DEVICES_ADVANCED,
    MAX_DOMAIN_LEN,
    MAX_ID_LEN,
    MAX_TAINT_RULE_CONDITIONS,
    MAX_VALID_VALUES,
    binding_conditions,
    device_taint,
    dns_label,
    driver_name,
    duplicates,
    fully_qualified_name,
    metav1_conditions,
    node_selector,
    pool_name,
    qualified_name,
    qualified_name_problems,
    skip_node_operations,
    too_many_items,
)
from cp.validation.meta import (
    validate_object_meta,
)
from cp.validation.registry import Rules

_NUM = r"(0|[1-9]\d*)"
_PRE = r"(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)"
_BUILD = r"[0-9a-zA-Z-]+"
_SEMVER = re.compile(rf"^{_NUM}\.{_NUM}\.{_NUM}(-{_PRE}(\.{_PRE})*)?(\+{_BUILD}(\.{_BUILD})*)?$")

# ---------------------------------------------------------------- resource slices

_LIST_KEYS = ("bools", "ints", "strings", "versions")


def _device_attribute(attr: Any, path: str, errs: list[Cause]) -> None:
    attr = as_dict(attr)
    if len(attr) == 1:  # the common case: exactly one scalar value
        key, value = next(iter(attr.items()))
        if key in ("int", "bool") and value is not None:
            return
        if key == "string" and isinstance(value, str) and len(value) <= MAX_ATTR_VALUE_LEN // 4:
            return
    n = 0
    if attr.get("bool") is not None:
        n += 1
    if attr.get("int") is not None:
        n += 1
    if attr.get("string") is not None:
        n += 1
        if len(as_str(attr["string"]).encode()) > MAX_ATTR_VALUE_LEN:
            too_long(errs, f"{path}.string", MAX_ATTR_VALUE_LEN)
    if attr.get("version") is not None:
        n += 1
        _version(attr["version"], f"{path}.version", errs)
    for key in ("bools", "ints", "strings", "versions"):
        items = attr.get(key)
        if items is None:
            continue
        n += 1
        if not as_list(items):
            errs.append(Cause("Invalid", f"{path}.{key}", "must not be empty if specified", GoValue("[]")))
        for i, item in enumerate(as_list(items)):
            if key == "strings" and len(as_str(item).encode()) > MAX_ATTR_VALUE_LEN:
                too_long(errs, f"{path}.strings[{i}]", MAX_ATTR_VALUE_LEN)
            if key == "versions":
                _version(item, f"{path}.versions[{i}]", errs)
    if n == 0:
        errs.append(Cause("Invalid", path, "exactly one value must be specified", ""))
    elif n > 1:
        errs.append(Cause("Invalid", path, "exactly one value must be specified", GoValue("resource.DeviceAttribute{...}")))


def _version(value: Any, path: str, errs: list[Cause]) -> None:
    text = as_str(value)
    if not _SEMVER.match(text):
        errs.append(Cause("Invalid", path, "must be a string compatible with semver.org spec 2.0.0", text))
    if len(text.encode()) > MAX_ATTR_VALUE_LEN:
        too_long(errs, path, MAX_ATTR_VALUE_LEN)


def _key_path(path: str, key: str, limit: int) -> str:
    if len(key) <= limit:
        return f"{path}[{key}]"
    limit = max(limit, 16)
    if len(key) > limit:
        remaining = limit - 3
        key = key[: (remaining + 1) // 2] + "..." + key[len(key) - remaining // 2:]
    return f"{path}[{key}]"


def _capacity(cap: Any, old_cap: Any, path: str, errs: list[Cause], *, multi: bool, fractional: bool) -> None:
    """`fractional`: the DRAFractionalCapacityRange feature."""
    cap = as_dict(cap)
    policy = cap.get("requestPolicy")
    if policy is None:
        return
    if not multi:
        errs.append(Cause("Forbidden", f"{path}.requestPolicy", "allowMultipleAllocations must be true"))
        return
    policy = as_dict(policy)
    ppath = f"{path}.requestPolicy"
    maximum = _q(cap.get("value"))
    values = as_list(policy.get("validValues"))
    rng = policy.get("validRange")
    if values and rng is not None:
        errs.append(Cause("Forbidden", ppath, 'exactly one policy can be specified, cannot specify "validValues" '
                          'and "validRange" at the same time'))
        return
    default = policy.get("default")
    if values:
        if default is None:
            errs.append(Cause("Required", f"{ppath}.default", "required when validValues is defined"))
            return
        vpath = f"{ppath}.validValues"
        parsed = [_q(x) for x in values]
        for i in range(len(parsed) - 1):
            a, b = parsed[i], parsed[i + 1]
            if a is not None and b is not None and a > b:
                errs.append(Cause("Invalid", f"{vpath}[{i + 1}]", "values must be sorted in ascending order",
                                  str(values[i + 1])))
        if too_many_items(values, MAX_VALID_VALUES, vpath, errs):
            return
        d = _q(default)
        found = False
        for i, (raw, q) in enumerate(zip(values, parsed, strict=True)):
            if q is not None and maximum is not None and q > maximum:
                errs.append(Cause("Invalid", f"{vpath}[{i}]", f"option is larger than capacity value: {cap.get('value')}",
                                  str(raw)))
            if q is not None and q == d:
                found = True
        # Without DRAFractionalCapacityRange, options are told apart by `Quantity.Value()` (100m and 200m
        # are the same option); with it, by their exact value.
        duplicates(parsed if fractional else [_whole(q) for q in parsed], vpath, errs)
        if not found:
            errs.append(Cause("Invalid", vpath, "default value is not valid according to the requestPolicy",
                              str(default)))
    elif isinstance(rng, dict):
        if default is None:
            errs.append(Cause("Required", f"{ppath}.default", "required when validRange is defined"))
            return
        rpath = f"{ppath}.validRange"
        lo, hi, step, d = _q(rng.get("min")), _q(rng.get("max")), _q(rng.get("step")), _q(default)
        if rng.get("min") is None:
            errs.append(Cause("Required", f"{rpath}.min", "required when validRange is defined"))
            return
        if lo is None or d is None:
            return
        if maximum is not None and lo > maximum:
            errs.append(Cause("Invalid", f"{rpath}.min", f"min is larger than capacity value: {cap.get('value')}",
                              str(rng.get("min"))))
        if d < lo:
            errs.append(Cause("Invalid", f"{rpath}.default", f"default is less than min: {rng.get('min')}",
                              str(default)))
        if hi is not None:
            if lo > hi:
                errs.append(Cause("Invalid", f"{rpath}.max", f"min is larger than max: {rng.get('max')}",
                                  str(rng.get("min"))))
            if maximum is not None and hi > maximum:
                errs.append(Cause("Invalid", f"{rpath}.max", f"max is larger than capacity value: {cap.get('value')}",
                                  str(rng.get("max"))))
            if d > hi:
                errs.append(Cause("Invalid", f"{rpath}.default", f"default is more than max: {rng.get('max')}",
                                  str(default)))
        milli = fractional and _fractional_range(lo, hi, step)
        old_rng = as_dict(as_dict(old_cap).get("requestPolicy")).get("validRange")
        if milli and not _same_range(rng, old_rng):
            for key, q, raw in (("default", d, default), ("min", lo, rng.get("min")), ("max", hi, rng.get("max")),
                                ("step", step, rng.get("step"))):
                if q is not None and not _fits_milli(q):
                    errs.append(Cause("Invalid", f"{rpath}.{key}", "value cannot be represented as a milli value",
                                      str(raw)))
        if step is not None:
            if step <= 0:
                errs.append(Cause("Invalid", f"{rpath}.step", "must be greater than zero", str(rng.get("step"))))
            else:
                if maximum is not None and lo + step > maximum:
                    errs.append(Cause("Invalid", f"{rpath}.step", f"one step {lo + step} is larger than capacity "
                                      f"value: {cap.get('value')}", str(rng.get("step"))))
                for value, raw in ((d, default), (hi, rng.get("max"))):
                    if value is not None and not _on_step(value, lo, step, milli=milli):
                        errs.append(Cause("Invalid", f"{rpath}.step", f"value is not a multiple of a given step "
                                          f"({rng.get('step')}) from ({rng.get('min')})", str(raw)))


# resource.MaxMilliValue: the largest value whose milli-units fit an int64.
_MAX_MILLI_VALUE = (2**63 - 1) // 1000


def _whole(q: Decimal | None) -> Decimal | None:
    """`Quantity.Value()`: rounded up to a whole number."""
    return None if q is None else q.to_integral_value(rounding=ROUND_CEILING)


def _fractional_range(lo: Decimal | None, hi: Decimal | None, step: Decimal | None) -> bool:
    """Whether a valid range's min, max or step is not a whole number: with DRAFractionalCapacityRange
    on, it is then checked in milli-units; otherwise in whole units (`Quantity.Value()`)."""
    return any(q is not None and q != _whole(q) for q in (lo, hi, step))


def _fits_milli(q: Decimal) -> bool:
    milli = q * 1000
    return milli == milli.to_integral_value() and abs(q) <= _MAX_MILLI_VALUE


def _same_range(new: Any, old: Any) -> bool:
    """The stored range, unchanged (by value): it keeps validating as it did when it was written."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return False
    return all(_q(new.get(k)) == _q(old.get(k)) for k in ("min", "max", "step"))


def _on_step(value: Decimal, lo: Decimal, step: Decimal, *, milli: bool) -> bool:
    """Whether `value` is `lo` plus a whole number of steps (`step` > 0): exactly (milli-units, which a
    valid range's values are) or in whole units, each rounded up as `Quantity.Value()` rounds."""
    if milli:
        return (Fraction(value) - Fraction(lo)) % Fraction(step) == 0
    return (math.ceil(Fraction(value)) - math.ceil(Fraction(lo))) % math.ceil(Fraction(step)) == 0


def _q(value: Any) -> Any:
    if value is None:
        return None
    try:
        return quantity.parse(value)
    except (quantity.QuantityError, TypeError):
        return None


def _device(device: dict[str, Any], old: dict[str, Any] | None, path: str, per_device: bool,
            errs: list[Cause], features: gates.FeatureGates) -> None:
    multi = device.get("allowMultipleAllocations") is True
    dns_label(as_str(device.get("name")), f"{path}.name", errs)
    attrs = as_dict(device.get("attributes"))
    capacity = as_dict(device.get("capacity"))
    if len(attrs) + len(capacity) > MAX_ATTRS_AND_CAPACITY:
        errs.append(Cause("Invalid", path, "the total number of attributes and capacities must not exceed "
                          f"{MAX_ATTRS_AND_CAPACITY}", len(attrs) + len(capacity)))
    values = 0
    for a in attrs.values():
        lists = 0
        if isinstance(a, dict) and (len(a) != 1 or next(iter(a)) in _LIST_KEYS):
            for k in _LIST_KEYS:
                items = a.get(k)
                if isinstance(items, list):
                    lists += len(items)
        values += lists if lists else 1
    if values > MAX_ATTRIBUTE_VALUES:
        errs.append(Cause("Invalid", path, "the total number of attribute values must not exceed "
                          f"{MAX_ATTRIBUTE_VALUES}", values))
    key_limit = MAX_DOMAIN_LEN + 1 + MAX_ID_LEN
    apath = f"{path}.attributes"
    for key, attr in attrs.items():
        if qualified_name_problems(key):
            qualified_name(key, apath, errs)
        _device_attribute(attr, _key_path(apath, key, key_limit), errs)
    if old is None or old.get("capacity") != device.get("capacity"):
        for key, cap in capacity.items():
            qualified_name(key, f"{path}.capacity", errs)
            old_cap = as_dict(old.get("capacity")).get(key) if old is not None else None
            _capacity(cap, old_cap, _key_path(f"{path}.capacity", key, key_limit), errs, multi=multi,
                      fractional=features.enabled(gates.DRA_FRACTIONAL_CAPACITY_RANGE))
    if old is None or old.get("taints") != device.get("taints"):
        taints = as_list(device.get("taints"))
        if not too_many_items(taints, MAX_DEVICE_TAINTS, f"{path}.taints", errs):
            for i, t in enumerate(taints):
                device_taint(t, None, f"{path}.taints[{i}]", errs)
    consumes = as_list(device.get("consumesCounters"))
    cpath = f"{path}.consumesCounters"
    if not too_many_items(consumes, MAX_CONSUMPTIONS_PER_DEVICE, cpath, errs):
        for i, c in enumerate(consumes):
            c = as_dict(c)
            ipath = f"{cpath}[{i}]"
            counter_set = as_str(c.get("counterSet"))
            if not counter_set:
                errs.append(Cause("Required", f"{ipath}.counterSet", ""))
            else:
                dns_label(counter_set, f"{ipath}.counterSet", errs)
            _counters(c.get("counters"), f"{ipath}.counters", MAX_COUNTERS_PER_CONSUMPTION, errs)
            groups = as_list(c.get("compatibilityGroups"))
            if not too_many_items(groups, MAX_COMPATIBILITY_GROUPS, f"{ipath}.compatibilityGroups", errs):
                duplicates([as_str(g) for g in groups], f"{ipath}.compatibilityGroups", errs)
        duplicates([as_str(as_dict(c).get("counterSet")) for c in consumes], cpath, errs)
    node_fields = [k for k in ("nodeName", "nodeSelector", "allNodes") if device.get(k) is not None]
    if per_device:
        set_fields = []
        node_name = device.get("nodeName")
        if node_name is not None:
            if node_name:
                set_fields.append("`nodeName`")
                each(errs, f"{path}.nodeName", node_name, is_dns1123_subdomain(node_name))
            else:
                errs.append(Cause("Invalid", f"{path}.nodeName", "must not be empty", ""))
        if isinstance(device.get("nodeSelector"), dict):
            set_fields.append("`nodeSelector`")
            node_selector(device["nodeSelector"], f"{path}.nodeSelector", errs)
        all_nodes = device.get("allNodes")
        if all_nodes is not None:
            if all_nodes is True:
                set_fields.append("`allNodes`")
            else:
                errs.append(Cause("Invalid", f"{path}.allNodes", "must be either unset or set to true", all_nodes))
        msg = ("exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` "
               "is set to true in the ResourceSlice spec")
        if not set_fields:
            errs.append(Cause("Required", path, msg))
        elif len(set_fields) > 1:
            errs.append(Cause("Invalid", path, msg, "{" + ", ".join(set_fields) + "}"))
    elif node_fields:
        errs.append(Cause("Invalid", path, "`nodeName`, `nodeSelector` and `allNodes` can only be set if "
                          "`perDeviceNodeSelection` is set to true in the ResourceSlice spec", GoValue("null")))
    binding_conditions(device, path, errs)
    resources = device.get("nodeAllocatableResources")
    if resources:
        _node_allocatable_resources(as_dict(resources), capacity, f"{path}.nodeAllocatableResources", errs)


def _is_node_allocatable_resource_name(name: str) -> bool:
    """`helper.IsNodeAllocatableResourceName`: cpu, memory, ephemeral-storage and hugepages."""
    return name in ("cpu", "memory", "ephemeral-storage") or name.startswith("hugepages-")


def _node_allocatable_resources(resources: dict[str, Any], capacity: dict[str, Any], path: str,
                                errs: list[Cause]) -> None:
    """`validateNodeAllocatableResources` (KEP-5517): node-allocatable names only, each with a
    `mapping` (exactly one of `capacityKey`, naming one of the device's capacities, with its
    `capacityMultiplier`, and `deviceMultiplier`; multipliers positive) or an `overhead` (`perPod`,
    `perContainer`, at least one, not negative) or both."""
    for name in sorted(resources):
        entry = as_dict(resources[name])
        kpath = f"{path}[{name}]"
        if not _is_node_allocatable_resource_name(name):
            errs.append(Cause("Invalid", kpath, "must be a node allocatable resource name", name))
        mapping, overhead = entry.get("mapping"), entry.get("overhead")
        if mapping is None and overhead is None:
            errs.append(Cause("Required", kpath, "at least one of mapping or overhead must be set"))
        if mapping is not None:
            _node_allocatable_mapping(as_dict(mapping), capacity, f"{kpath}.mapping", errs)
        if overhead is not None:
            _node_allocatable_overhead(as_dict(overhead), f"{kpath}.overhead", errs)


def _node_allocatable_mapping(mapping: dict[str, Any], capacity: dict[str, Any], path: str,
                              errs: list[Cause]) -> None:
    key, capacity_multiplier = mapping.get("capacityKey"), mapping.get("capacityMultiplier")
    device_multiplier = mapping.get("deviceMultiplier")
    members = [m for m in ("capacityKey", "deviceMultiplier") if mapping.get(m) is not None]
    if not members:  # +k8s:unionMember
        errs.append(Cause("Invalid", path, "must specify one of: `capacityKey`, `deviceMultiplier`", ""))
    elif len(members) > 1:
        errs.append(Cause("Invalid", path, "exactly one of `capacityKey`, `deviceMultiplier` is required, but "
                          "multiple fields are set", "{`capacityKey`, `deviceMultiplier`}"))
    if key is not None:
        if key == "":
            errs.append(Cause("Invalid", f"{path}.capacityKey", "capacityKey must not be an empty string", ""))
        elif key not in capacity:
            errs.append(Cause("NotFound", f"{path}.capacityKey", "", key))
        if capacity_multiplier is None:
            errs.append(Cause("Required", f"{path}.capacityMultiplier",
                              "capacityMultiplier is required when capacityKey is set"))
        else:
            _positive(capacity_multiplier, f"{path}.capacityMultiplier", errs)
    if device_multiplier is not None:
        _positive(device_multiplier, f"{path}.deviceMultiplier", errs)
    if capacity_multiplier is not None and key is None:
        errs.append(Cause("Required", f"{path}.capacityKey", "capacityKey is required when capacityMultiplier is set"))


def _positive(value: Any, path: str, errs: list[Cause]) -> None:
    q = _quantity(value)
    if q is not None and q.nanos <= 0:
        errs.append(Cause("Invalid", path, "must be positive", q.canonical()))


def _node_allocatable_overhead(overhead: dict[str, Any], path: str, errs: list[Cause]) -> None:
    if overhead.get("perPod") is None and overhead.get("perContainer") is None:
        errs.append(Cause("Invalid", path, "at least one of perPod or perContainer must be set", ""))
        return
    for key in ("perPod", "perContainer"):
        q = _quantity(overhead.get(key))
        if q is not None and q.nanos < 0:
            errs.append(Cause("Invalid", f"{path}.{key}", "must be non-negative", q.canonical()))


def _quantity(value: Any) -> quantity.Quantity | None:
    if value is None:
        return None
    try:
        return quantity.parse_quantity(value)
    except quantity.QuantityError:
        return None


def _counters(counters: Any, path: str, limit: int, errs: list[Cause]) -> None:
    counters = as_dict(counters)
    if not counters:
        errs.append(Cause("Required", path, ""))
        return
    if len(counters) > limit:
        too_many(errs, path, len(counters), limit)
        return
    for name in counters:
        dns_label(name, path, errs)


def _slice_spec(spec: dict[str, Any], old: dict[str, Any] | None, errs: list[Cause],
                features: gates.FeatureGates) -> None:
    driver_name(spec.get("driver"), "spec.driver", errs)
    pool = as_dict(spec.get("pool"))
    pool_name(pool.get("name"), "spec.pool.name", errs)
    rsc = pool.get("resourceSliceCount", 0)
    if is_int(rsc) and rsc <= 0:
        errs.append(Cause("Invalid", "spec.pool.resourceSliceCount", "must be greater than zero", rsc))
    gen = pool.get("generation", 0)
    if is_int(gen) and gen < 0:
        errs.append(Cause("Invalid", "spec.pool.generation", "must be greater than or equal to zero", gen))
    if old is not None:
        old_pool = as_dict(old.get("pool"))
        immutable(errs, "spec.pool.name", pool.get("name", ""), old_pool.get("name", ""))
        immutable(errs, "spec.driver", spec.get("driver", ""), old.get("driver", ""))
        if spec.get("nodeName") != old.get("nodeName"):
            errs.append(Cause("Invalid", "spec.nodeName", "field is immutable",
                              spec.get("nodeName") if spec.get("nodeName") is not None else GoValue("null")))
    set_fields = []
    node_name = spec.get("nodeName")
    if node_name is not None:
        if node_name:
            set_fields.append("`nodeName`")
            each(errs, "spec.nodeName", node_name, is_dns1123_subdomain(node_name))
        else:
            errs.append(Cause("Invalid", "spec.nodeName", "must be either unset or set to a non-empty string", ""))
    selector = spec.get("nodeSelector")
    if isinstance(selector, dict):
        set_fields.append("`nodeSelector`")
        node_selector(selector, "spec.nodeSelector", errs)
        terms = as_list(selector.get("nodeSelectorTerms"))
        if len(terms) != 1:
            errs.append(Cause("Invalid", "spec.nodeSelector.nodeSelectorTerms", "must have exactly one node selector "
                              "term", GoValue("[...]")))
    for key in ("allNodes", "perDeviceNodeSelection"):
        flag = spec.get(key)
        if flag is not None:
            if flag is True:
                set_fields.append(f"`{key}`")
            else:
                errs.append(Cause("Invalid", f"spec.{key}", "must be either unset or set to true", flag))
    if not set_fields:
        errs.append(Cause("Required", "spec", "exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
                          "`perDeviceNodeSelection` is required"))
    elif len(set_fields) > 1:
        errs.append(Cause("Invalid", "spec", "exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
                          "`perDeviceNodeSelection` is required, but multiple fields are set",
                          "{" + ", ".join(set_fields) + "}"))
    devices = spec.get("devices")
    shared = spec.get("sharedCounters")
    if devices is not None and shared is not None:
        errs.append(Cause("Invalid", "spec", "only one of `sharedCounters` or `devices` is allowed", ""))
    device_list = as_list(devices)
    advanced = any(as_list(as_dict(d).get("taints")) or as_list(as_dict(d).get("consumesCounters")) or
                   any(isinstance(a, dict) and any(k in _LIST_KEYS for k in a)
                       for a in as_dict(as_dict(d).get("attributes")).values())
                   for d in device_list)
    limit = MAX_DEVICES_ADVANCED if advanced else MAX_DEVICES
    if not too_many_items(device_list, limit, "spec.devices", errs):
        old_devices = {as_str(as_dict(d).get("name")): as_dict(d) for d in as_list((old or {}).get("devices"))}
        per_device = spec.get("perDeviceNodeSelection") is True
        for i, d in enumerate(device_list):
            d = as_dict(d)
            _device(d, old_devices.get(as_str(d.get("name"))) if old is not None else None, f"spec.devices[{i}]",
                    per_device, errs, features)
        duplicates([as_str(as_dict(d).get("name")) for d in device_list], "spec.devices", errs)
    counter_sets = as_list(shared)
    if not too_many_items(counter_sets, MAX_COUNTER_SETS, "spec.sharedCounters", errs):
        for i, cs in enumerate(counter_sets):
            cs = as_dict(cs)
            ipath = f"spec.sharedCounters[{i}]"
            name = as_str(cs.get("name"))
            if not name:
                errs.append(Cause("Required", f"{ipath}.name", ""))
            else:
                dns_label(name, f"{ipath}.name", errs)
            _counters(cs.get("counters"), f"{ipath}.counters", MAX_COUNTERS_PER_SET, errs)
        duplicates([as_str(as_dict(cs).get("name")) for cs in counter_sets], "spec.sharedCounters", errs)
    pta = spec.get("partitionTypeAttribute")
    if pta is not None:
        if not any(as_list(as_dict(d).get("consumesCounters")) for d in device_list):
            errs.append(Cause("Invalid", "spec.partitionTypeAttribute", "may only be set on a slice which declares "
                              "devices that consume counters", pta))
        else:
            fully_qualified_name(pta, "spec.partitionTypeAttribute", errs)
    skip_node_operations(spec.get("skipNodeOperations"), "spec.skipNodeOperations", errs)


def _slice_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=False, name_fn=name_is_dns_subdomain)


def _slice_spec_rules(new: dict[str, Any], old: dict[str, Any] | None, errs: list[Cause],
                      features: gates.FeatureGates) -> None:
    """The spec's checks, on create and update (after the metadata's): some depend on the server's
    gates (DRAFractionalCapacityRange)."""
    _slice_spec(as_dict(new.get("spec")), as_dict(old.get("spec")) if old is not None else None, errs, features)


# ---------------------------------------------------------------- device taint rules

def _taint_rule_spec(spec: dict[str, Any], old: dict[str, Any] | None, errs: list[Cause]) -> None:
    selector = spec.get("deviceSelector")
    if isinstance(selector, dict):
        if selector.get("driver") is not None:
            driver_name(selector.get("driver"), "spec.deviceSelector.driver", errs)
        if selector.get("pool") is not None:
            pool_name(selector.get("pool"), "spec.deviceSelector.pool", errs)
        if selector.get("device") is not None:
            dns_label(as_str(selector.get("device")), "spec.deviceSelector.device", errs)
    old_taint = as_dict(old.get("taint")) if old is not None else None
    device_taint(spec.get("taint"), old_taint, "spec.taint", errs)


def _taint_rule_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=False, name_fn=name_is_dns_subdomain)
    _taint_rule_spec(as_dict(obj.get("spec")), None, errs)


def _taint_rule_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    _taint_rule_spec(as_dict(new.get("spec")), as_dict(old.get("spec")), errs)


def _taint_rule_status_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    conditions = as_list(as_dict(new.get("status")).get("conditions"))
    metav1_conditions(conditions, "status.conditions", errs)
    if len(conditions) > MAX_TAINT_RULE_CONDITIONS:
        too_many(errs, "status.conditions", len(conditions), MAX_TAINT_RULE_CONDITIONS)


RULES = {
    ("resource.k8s.io", "ResourceSlice"): Rules(_slice_create, gated=_slice_spec_rules),
    ("resource.k8s.io", "DeviceTaintRule"): Rules(_taint_rule_create, _taint_rule_update, _taint_rule_status_update),
}
