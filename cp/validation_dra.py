"""Validation rules for resource.k8s.io/v1: DeviceClass, ResourceClaim(+status), ResourceClaimTemplate,
ResourceSlice and DeviceTaintRule.

Behaviour follows upstream `pkg/apis/resource/validation/validation.go` (and the declarative
limits of k8s.io/api resource/v1): field paths, limits and messages as documented in
`../shared/reference/dra-api.md` §2-§8. CEL expressions are length-checked here and compiled by
the hook installed with `cp.validation.set_cel_checker`. Pure.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from cp import quantity
from cp import validation as v
from cp.errors import Cause

_list, _dict, _str, _is_int = v._list, v._dict, v._str, v._is_int

MAX_REQUESTS = 32  # DeviceRequestsMaxSize
MAX_FIRST_AVAILABLE = 8
MAX_SELECTORS = 32
MAX_CONSTRAINTS = 32
MAX_CONFIG = 32
MAX_TOLERATIONS = 16
CEL_MAX_LEN = 10 * 1024
OPAQUE_MAX_LEN = 10 * 1024
STATUS_DATA_MAX_LEN = 10 * 1024
MAX_RESULTS = 32
MAX_RESERVED_FOR = 256
MAX_DEVICE_CONDITIONS = 8
MAX_DEVICES = 128
MAX_DEVICES_ADVANCED = 64
MAX_COUNTER_SETS = 8
MAX_COUNTERS_PER_SET = 32
MAX_CONSUMPTIONS_PER_DEVICE = 2
MAX_COUNTERS_PER_CONSUMPTION = 32
MAX_ATTRS_AND_CAPACITY = 32
MAX_ATTRIBUTE_VALUES = 48
MAX_DEVICE_TAINTS = 16
MAX_BINDING_CONDITIONS = 4
MAX_ID_LEN = 32
MAX_DOMAIN_LEN = 63
MAX_ATTR_VALUE_LEN = 64
MAX_POOL_NAME = 253
MAX_IPS = 16
MAX_INTERFACE_NAME = 256
MAX_HARDWARE_ADDRESS = 128
MAX_TAINT_RULE_CONDITIONS = 8
MAX_VALID_VALUES = 10

_ALLOCATION_MODES = ("All", "ExactCount")
_TAINT_EFFECTS = ("NoExecute", "NoSchedule", "None")
_TOLERATION_OPS = ("Equal", "Exists")
_CONFIG_SOURCES = ("FromClaim", "FromClass")
_SKIP_NODE_OPS = ("*", "NodePrepareResources", "NodeUnprepareResources")

_NUM = r"(0|[1-9]\d*)"
_PRE = r"(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)"
_BUILD = r"[0-9a-zA-Z-]+"
_SEMVER = re.compile(rf"^{_NUM}\.{_NUM}\.{_NUM}(-{_PRE}(\.{_PRE})*)?(\+{_BUILD}(\.{_BUILD})*)?$")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_NAMESPACE_ADMIN_LABEL = "resource.kubernetes.io/admin-access"


# ---------------------------------------------------------------- names

def _label(value: str, path: str, errs: list[Cause]) -> None:
    v._each(errs, path, value, v.is_dns1123_label(value))


def _driver(value: Any, path: str, errs: list[Cause]) -> None:
    v._driver_name_errors(_str(value), path, errs)


def _pool_name(value: Any, path: str, errs: list[Cause]) -> None:
    name = _str(value)
    if not name:
        errs.append(Cause("Required", path, ""))
        return
    if len(name) > MAX_POOL_NAME:
        v._too_long(errs, path, MAX_POOL_NAME)
    for part in name.split("/"):
        v._each(errs, path, part, v.is_dns1123_subdomain(part))


def _device_class_ref(value: Any, path: str, errs: list[Cause]) -> None:
    name = _str(value)
    if not name:
        errs.append(Cause("Required", path, ""))
    else:
        v._each(errs, path, name, v.is_dns1123_subdomain(name))


def _c_identifier(value: str, path: str, errs: list[Cause]) -> None:
    if len(value) > MAX_ID_LEN:
        v._too_long(errs, path, MAX_ID_LEN)
    v._each(errs, path, value, v.is_c_identifier(value))


def _qualified_name(name: str, path: str, errs: list[Cause]) -> None:
    for type_, detail, value in _qualified_name_problems(name):
        errs.append(Cause(type_, path, detail, value))


@functools.lru_cache(maxsize=8192)
def _qualified_name_problems(name: str) -> tuple[tuple[str, str, Any], ...]:
    """Problems of a QualifiedName, cached: the same attribute names repeat on every device."""
    found: list[Cause] = []
    _check_qualified_name(name, "", found)
    return tuple((c.type, c.detail, c.value) for c in found)


def _check_qualified_name(name: str, path: str, errs: list[Cause]) -> None:
    parts = name.split("/")
    if len(parts) == 1:
        _c_identifier(parts[0], path, errs)
    elif len(parts) == 2:
        if not parts[0]:
            errs.append(Cause("Invalid", path, "the domain must not be empty", ""))
        else:
            _driver(parts[0], path, errs)
        if not parts[1]:
            errs.append(Cause("Invalid", path, "the name must not be empty", ""))
        else:
            _c_identifier(parts[1], path, errs)
    else:
        errs.append(Cause("Invalid", path, "must not contain more than one slash", name))


def _fully_qualified_name(name: Any, path: str, errs: list[Cause]) -> None:
    name = _str(name)
    _qualified_name(name, path, errs)
    if "/" not in name:
        errs.append(Cause("Invalid", path, "a fully qualified name must be a domain and a name separated by a slash",
                          name))


def _uid(value: Any, path: str, errs: list[Cause]) -> None:
    uid = _str(value)
    if not _UUID.match(uid):
        errs.append(Cause("Invalid", path, f"error validating uid: invalid UUID length: {len(uid)}"
                          if len(uid) not in (32, 36, 38, 45) else "error validating uid: invalid UUID format", uid))
    elif uid != uid.lower():
        errs.append(Cause("Invalid", path, "uid must be in RFC 4122 normalized form, "
                          "`xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with lowercase hexadecimal characters", uid))


def _label_name(value: Any, path: str, errs: list[Cause]) -> None:
    v.validate_label_name(_str(value), path, errs)


def _label_value(value: Any, path: str, errs: list[Cause]) -> None:
    v._each(errs, path, _str(value), v.is_label_value(_str(value)))


# ---------------------------------------------------------------- list helpers

def _too_many(items: list[Any], limit: int, path: str, errs: list[Cause]) -> bool:
    if limit >= 0 and len(items) > limit:
        v._too_many(errs, path, len(items), limit)
        return True
    return False


def _duplicates(keys: list[Any], path: str, errs: list[Cause]) -> None:
    seen: set[Any] = set()
    for i, key in enumerate(keys):
        if key in seen:
            errs.append(Cause("Duplicate", f"{path}[{i}]", "", key))
        else:
            seen.add(key)


# ---------------------------------------------------------------- CEL

def _cel(expression: Any, path: str, errs: list[Cause], *, stored: bool) -> None:
    if stored:
        return
    expr = _str(expression)
    if len(expr) > CEL_MAX_LEN:
        v._too_long(errs, path, CEL_MAX_LEN)
        return
    if not expr.strip():
        errs.append(Cause("Required", path, ""))
        return
    checker = v._cel_checker
    if checker is not None:
        problem = checker(expr)
        if problem:
            errs.append(Cause("Invalid", path, problem, expr))


def _selectors(selectors: Any, path: str, errs: list[Cause], *, stored: bool) -> None:
    items = _list(selectors)
    if _too_many(items, MAX_SELECTORS, path, errs):
        return
    for i, sel in enumerate(items):
        cel = _dict(sel).get("cel")
        if not isinstance(cel, dict):
            errs.append(Cause("Required", f"{path}[{i}].cel", ""))
        else:
            _cel(cel.get("expression"), f"{path}[{i}].cel.expression", errs, stored=stored)


# ---------------------------------------------------------------- opaque config

def _raw_extension(value: Any, path: str, errs: list[Cause], *, stored: bool, limit: int) -> None:
    if value is None:
        errs.append(Cause("Required", path, ""))
        return
    raw = json.dumps(value, separators=(",", ":"))
    if not stored and len(raw.encode()) > limit:
        v._too_long(errs, path, limit)
    elif not isinstance(value, dict):
        errs.append(Cause("Invalid", path, "must be a valid JSON object", "<value omitted>"))


def _device_configuration(config: dict[str, Any], path: str, errs: list[Cause], *, stored: bool) -> None:
    opaque = config.get("opaque")
    if not isinstance(opaque, dict):
        errs.append(Cause("Required", f"{path}.opaque", ""))
        return
    _driver(opaque.get("driver"), f"{path}.opaque.driver", errs)
    _raw_extension(opaque.get("parameters"), f"{path}.opaque.parameters", errs, stored=stored, limit=OPAQUE_MAX_LEN)


# ---------------------------------------------------------------- tolerations and taints

def _device_toleration(t: Any, path: str, errs: list[Cause]) -> None:
    t = _dict(t)
    key = _str(t.get("key"))
    if key:
        _label_name(key, f"{path}.key", errs)
    op = _str(t.get("operator"))
    value = _str(t.get("value"))
    if op == "Exists":
        if value:
            errs.append(Cause("Invalid", f"{path}.value", "must be empty for operator `Exists`", value))
    elif op == "Equal":
        _label_value(value, f"{path}.value", errs)
    elif op == "":
        errs.append(Cause("Required", f"{path}.operator", ""))
    else:
        v._not_supported(errs, f"{path}.operator", op, _TOLERATION_OPS)
    effect = _str(t.get("effect"))
    if effect and effect not in _TAINT_EFFECTS:
        v._not_supported(errs, f"{path}.effect", effect, _TAINT_EFFECTS)


def _device_taint(t: Any, old: Any, path: str, errs: list[Cause]) -> None:
    t = _dict(t)
    _label_name(t.get("key"), f"{path}.key", errs)
    value = _str(t.get("value"))
    if value:
        _label_value(value, f"{path}.value", errs)
    effect = _str(t.get("effect"))
    if old is None or _str(_dict(old).get("effect")) != effect:
        if not effect:
            errs.append(Cause("Required", f"{path}.effect", ""))
        elif effect not in _TAINT_EFFECTS:
            v._not_supported(errs, f"{path}.effect", effect, _TAINT_EFFECTS)


def _tolerations(items: Any, path: str, errs: list[Cause]) -> None:
    items = _list(items)
    if _too_many(items, MAX_TOLERATIONS, path, errs):
        return
    for i, t in enumerate(items):
        _device_toleration(t, f"{path}[{i}]", errs)


# ---------------------------------------------------------------- claims

class _RequestNames:
    __slots__ = ("names",)

    def __init__(self, devices: dict[str, Any]) -> None:
        self.names: dict[str, set[str] | None] = {}
        for r in _list(devices.get("requests")):
            r = _dict(r)
            subs = _list(r.get("firstAvailable"))
            self.names[_str(r.get("name"))] = {_str(_dict(s).get("name")) for s in subs} if subs else None

    def has(self, ref: str) -> bool:
        parts = ref.split("/")
        if len(parts) > 2 or parts[0] not in self.names:
            return False
        if len(parts) == 1:
            return True
        subs = self.names[parts[0]]
        return subs is not None and parts[1] in subs


_REF_MSG = "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"


def _request_ref(name: Any, path: str, names: _RequestNames, errs: list[Cause]) -> None:
    name = _str(name)
    parts = name.split("/")
    if len(parts) > 2:
        errs.append(Cause("Invalid", path, _REF_MSG, name))
        return
    for part in parts:
        _label(part, path, errs)
    if not names.has(name):
        errs.append(Cause("Invalid", path, _REF_MSG, name))


def _request_refs(refs: Any, path: str, names: _RequestNames, errs: list[Cause]) -> None:
    items = _list(refs)
    if _too_many(items, MAX_REQUESTS, path, errs):
        return
    for i, ref in enumerate(items):
        _request_ref(ref, f"{path}[{i}]", names, errs)
    _duplicates(items, path, errs)


def _allocation_mode(body: dict[str, Any], path: str, errs: list[Cause]) -> None:
    mode = body.get("allocationMode") or ""
    count = body.get("count", 0)
    if mode == "All":
        if count:
            errs.append(Cause("Invalid", f"{path}.count", "must not be specified when allocationMode is 'All'", count))
    elif mode == "ExactCount":
        if _is_int(count) and count <= 0:
            errs.append(Cause("Invalid", f"{path}.count", "must be greater than zero", count))
    else:
        v._not_supported(errs, f"{path}.allocationMode", mode, _ALLOCATION_MODES)


def _capacity_requests(body: dict[str, Any], path: str, errs: list[Cause]) -> None:
    cap = body.get("capacity")
    if not isinstance(cap, dict):
        return
    for key in _dict(cap.get("requests")):
        _qualified_name(key, f"{path}.capacity.requests", errs)


def _exact_request(body: dict[str, Any], path: str, errs: list[Cause], *, stored: bool) -> None:
    _device_class_ref(body.get("deviceClassName"), f"{path}.deviceClassName", errs)
    _selectors(body.get("selectors"), f"{path}.selectors", errs, stored=stored)
    _allocation_mode(body, path, errs)
    _tolerations(body.get("tolerations"), f"{path}.tolerations", errs)
    _capacity_requests(body, path, errs)


def _sub_request(body: dict[str, Any], path: str, errs: list[Cause], *, stored: bool) -> None:
    """A firstAvailable subrequest: a named exact request."""
    _label(_str(body.get("name")), f"{path}.name", errs)
    _exact_request(body, path, errs, stored=stored)


def _device_request(req: dict[str, Any], path: str, errs: list[Cause], *, stored: bool) -> None:
    _label(_str(req.get("name")), f"{path}.name", errs)
    first = req.get("firstAvailable")
    has_first = bool(_list(first))
    exactly = req.get("exactly")
    has_exactly = isinstance(exactly, dict)
    if not has_first and not has_exactly:
        errs.append(Cause("Required", path, "exactly one of `exactly` or `firstAvailable` is required"))
    elif has_first and has_exactly:
        errs.append(Cause("Invalid", path, "exactly one of `exactly` or `firstAvailable` is required, but multiple "
                          "fields are set", v.GoValue("null")))
    elif has_first:
        subs = _list(first)
        fpath = f"{path}.firstAvailable"
        if not _too_many(subs, MAX_FIRST_AVAILABLE, fpath, errs):
            for i, sub in enumerate(subs):
                _sub_request(_dict(sub), f"{fpath}[{i}]", errs, stored=stored)
            _duplicates([_str(_dict(s).get("name")) for s in subs], fpath, errs)
    else:
        assert isinstance(exactly, dict)
        _exact_request(exactly, f"{path}.exactly", errs, stored=stored)


def validate_claim_spec(spec: Any, path: str, errs: list[Cause], *, stored: bool = False) -> None:
    devices = _dict(_dict(spec).get("devices"))
    dpath = f"{path}.devices"
    names = _RequestNames(devices)
    requests = _list(devices.get("requests"))
    rpath = f"{dpath}.requests"
    if not _too_many(requests, MAX_REQUESTS, rpath, errs):
        for i, req in enumerate(requests):
            _device_request(_dict(req), f"{rpath}[{i}]", errs, stored=stored)
        _duplicates([_str(_dict(r).get("name")) for r in requests], rpath, errs)
    constraints = _list(devices.get("constraints"))
    cpath = f"{dpath}.constraints"
    if not _too_many(constraints, MAX_CONSTRAINTS, cpath, errs):
        for i, c in enumerate(constraints):
            c = _dict(c)
            ipath = f"{cpath}[{i}]"
            _request_refs(c.get("requests"), f"{ipath}.requests", names, errs)
            if c.get("matchAttribute") is not None:
                _fully_qualified_name(c.get("matchAttribute"), f"{ipath}.matchAttribute", errs)
            elif c.get("distinctAttribute") is not None:
                _fully_qualified_name(c.get("distinctAttribute"), f"{ipath}.distinctAttribute", errs)
            else:
                errs.append(Cause("Required", ipath, 'exactly one of "matchAttribute" or "distinctAttribute" is '
                                  "required, but multiple fields are set"))
    configs = _list(devices.get("config"))
    gpath = f"{dpath}.config"
    if not _too_many(configs, MAX_CONFIG, gpath, errs):
        for i, c in enumerate(configs):
            c = _dict(c)
            _request_refs(c.get("requests"), f"{gpath}[{i}].requests", names, errs)
            _device_configuration(c, f"{gpath}[{i}]", errs, stored=stored)


def _claim_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    v.validate_object_meta(meta, errs, namespaced=namespaced, name_fn=v.name_is_dns_subdomain)
    validate_claim_spec(obj.get("spec"), "spec", errs)


def _claim_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    if new.get("spec") != old.get("spec"):
        errs.append(Cause("Invalid", "spec", "field is immutable", v.GoValue("resource.ResourceClaimSpec{...}")))


def _claim_status_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    status, old_status = _dict(new.get("status")), _dict(old.get("status"))
    names = _RequestNames(_dict(_dict(new.get("spec")).get("devices")))
    reserved = _list(status.get("reservedFor"))
    rpath = "status.reservedFor"
    if not _too_many(reserved, MAX_RESERVED_FOR, rpath, errs):
        for i, ref in enumerate(reserved):
            ref = _dict(ref)
            for key in ("resource", "name", "uid"):
                if not _str(ref.get(key)):
                    errs.append(Cause("Required", f"{rpath}[{i}].{key}", ""))
        _duplicates([_str(_dict(r).get("uid")) for r in reserved], rpath, errs)
    allocation = status.get("allocation")
    old_allocation = old_status.get("allocation")
    allocated: set[tuple[str, str, str, str]] = set()
    if isinstance(allocation, dict):
        for r in _list(_dict(allocation.get("devices")).get("results")):
            r = _dict(r)
            allocated.add((_str(r.get("driver")), _str(r.get("pool")), _str(r.get("device")),
                           _str(r.get("shareID"))))
    devices = _list(status.get("devices"))
    keys = []
    for i, d in enumerate(devices):
        d = _dict(d)
        keys.append((_str(d.get("driver")), _str(d.get("pool")), _str(d.get("device")), _str(d.get("shareID"))))
        _device_status(d, f"status.devices[{i}]", allocated, errs)
    seen: set[tuple[str, str, str, str]] = set()
    for i, key in enumerate(keys):
        if key in seen:
            errs.append(Cause("Duplicate", f"status.devices[{i}]", "", v.GoValue("/".join(k for k in key if k))))
        seen.add(key)
    if reserved:
        if allocation is None:
            errs.append(Cause("Forbidden", rpath, "may not be specified when `allocated` is not set"))
        elif _meta_deleting(new):
            old_uids = {json.dumps(r, sort_keys=True) for r in _list(old_status.get("reservedFor"))}
            if any(json.dumps(r, sort_keys=True) not in old_uids for r in reserved):
                errs.append(Cause("Forbidden", rpath, "new entries may not be added while `deallocationRequested` "
                                  "or `deletionTimestamp` are set"))
    if old_allocation is not None and allocation is not None:
        if allocation != old_allocation:
            errs.append(Cause("Invalid", "status.allocation", "field is immutable",
                              v.GoValue("resource.AllocationResult{...}")))
    elif isinstance(allocation, dict):
        _allocation_result(allocation, "status.allocation", names, errs)


def _meta_deleting(obj: dict[str, Any]) -> bool:
    return bool(v._meta(obj).get("deletionTimestamp"))


def _binding_conditions(obj: dict[str, Any], path: str, errs: list[Cause]) -> None:
    conds = _list(obj.get("bindingConditions"))
    fails = _list(obj.get("bindingFailureConditions"))
    for key, items in (("bindingConditions", conds), ("bindingFailureConditions", fails)):
        if not _too_many(items, MAX_BINDING_CONDITIONS, f"{path}.{key}", errs):
            for i, c in enumerate(items):
                _label_name(c, f"{path}.{key}[{i}]", errs)
    seen: set[str] = set()
    for i, c in enumerate(conds):
        if c in seen:
            errs.append(Cause("Duplicate", f"{path}.bindingConditions[{i}]", "", c))
        seen.add(c)
    fseen: set[str] = set()
    for i, c in enumerate(fails):
        if c in fseen:
            errs.append(Cause("Duplicate", f"{path}.bindingFailureConditions[{i}]", "", c))
        fseen.add(c)
        if c in conds:
            errs.append(Cause("Invalid", f"{path}.bindingFailureConditions[{i}]",
                              "bindingFailureConditions must not overlap with bindingConditions", c))
    if not conds and fails:
        errs.append(Cause("Invalid", f"{path}.bindingConditions",
                          "bindingConditions are required to use bindingFailureConditions", v.GoValue("[]string(nil)")))
    if not fails and conds:
        errs.append(Cause("Invalid", f"{path}.bindingFailureConditions",
                          "bindingFailureConditions are required to use bindingConditions", v.GoValue("[]string(nil)")))


def _skip_node_operations(ops: Any, path: str, errs: list[Cause]) -> None:
    items = _list(ops)
    for i, op in enumerate(items):
        if op not in _SKIP_NODE_OPS:
            v._not_supported(errs, f"{path}[{i}]", op, _SKIP_NODE_OPS)
    if "NodePrepareResources" in items and "NodeUnprepareResources" not in items and "*" not in items:
        errs.append(Cause("Invalid", path, "NodePrepareResources cannot be skipped unless NodeUnprepareResources is "
                          "also skipped", v.GoValue("[...]")))


def _allocation_result(allocation: dict[str, Any], path: str, names: _RequestNames, errs: list[Cause]) -> None:
    devices = _dict(allocation.get("devices"))
    results = _list(devices.get("results"))
    rpath = f"{path}.devices.results"
    if not _too_many(results, MAX_RESULTS, rpath, errs):
        for i, r in enumerate(results):
            r = _dict(r)
            ipath = f"{rpath}[{i}]"
            _request_ref(r.get("request"), f"{ipath}.request", names, errs)
            _driver(r.get("driver"), f"{ipath}.driver", errs)
            _pool_name(r.get("pool"), f"{ipath}.pool", errs)
            _label(_str(r.get("device")), f"{ipath}.device", errs)
            _binding_conditions(r, ipath, errs)
            for j, t in enumerate(_list(r.get("tolerations"))):
                _device_toleration(t, f"{ipath}.tolerations[{j}]", errs)
            if r.get("shareID") is not None:
                _uid(r.get("shareID"), f"{ipath}.shareID", errs)
            _skip_node_operations(r.get("skipNodeOperations"), f"{ipath}.skipNodeOperations", errs)
    configs = _list(devices.get("config"))
    cpath = f"{path}.devices.config"
    if not _too_many(configs, 2 * MAX_CONFIG, cpath, errs):
        for i, c in enumerate(configs):
            c = _dict(c)
            ipath = f"{cpath}[{i}]"
            source = _str(c.get("source"))
            if not source:
                errs.append(Cause("Required", f"{ipath}.source", ""))
            elif source not in _CONFIG_SOURCES:
                v._not_supported(errs, f"{ipath}.source", source, _CONFIG_SOURCES)
            _request_refs(c.get("requests"), f"{ipath}.requests", names, errs)
            _device_configuration(c, ipath, errs, stored=False)
    selector = allocation.get("nodeSelector")
    if isinstance(selector, dict):
        _node_selector(selector, f"{path}.nodeSelector", errs)


def _device_status(d: dict[str, Any], path: str, allocated: set[tuple[str, str, str, str]],
                   errs: list[Cause]) -> None:
    _driver(d.get("driver"), f"{path}.driver", errs)
    _pool_name(d.get("pool"), f"{path}.pool", errs)
    _label(_str(d.get("device")), f"{path}.device", errs)
    share = d.get("shareID")
    if share is not None:
        _uid(share, f"{path}.shareID", errs)
    key = (_str(d.get("driver")), _str(d.get("pool")), _str(d.get("device")), _str(share))
    if key not in allocated:
        shown = "/".join(key[:3]) + (f"/{share}" if share else "")
        errs.append(Cause("Invalid", path, "must be an allocated device in the claim", shown))
    conditions = _list(d.get("conditions"))
    if len(conditions) > MAX_DEVICE_CONDITIONS:
        v._too_many(errs, f"{path}.conditions", len(conditions), MAX_DEVICE_CONDITIONS)
    _conditions(conditions, f"{path}.conditions", errs)
    data = d.get("data")
    if data is not None:
        _raw_extension(data, f"{path}.data", errs, stored=False, limit=STATUS_DATA_MAX_LEN)
    net = d.get("networkData")
    if isinstance(net, dict):
        if len(_str(net.get("interfaceName")).encode()) > MAX_INTERFACE_NAME:
            v._too_long(errs, f"{path}.networkData.interfaceName", MAX_INTERFACE_NAME)
        if len(_str(net.get("hardwareAddress")).encode()) > MAX_HARDWARE_ADDRESS:
            v._too_long(errs, f"{path}.networkData.hardwareAddress", MAX_HARDWARE_ADDRESS)
        ips = _list(net.get("ips"))
        ipath = f"{path}.networkData.ips"
        if not _too_many(ips, MAX_IPS, ipath, errs):
            for i, ip in enumerate(ips):
                if not _is_interface_address(_str(ip)):
                    errs.append(Cause("Invalid", f"{ipath}[{i}]", "must be a valid address in CIDR form, "
                                      "(e.g. 10.9.8.7/24 or 2001:db8::1/64)", ip))
            _duplicates(ips, ipath, errs)


def _is_interface_address(text: str) -> bool:
    import ipaddress

    if "/" not in text:
        return False
    try:
        ipaddress.ip_interface(text)
    except ValueError:
        return False
    return True


_CONDITION_STATUSES = ("False", "True", "Unknown")
_REASON = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
_REASON_MSG = ("a condition reason must start with alphabetic character, optionally followed by a string of "
               "alphanumeric characters or '_,:', and must end with an alphanumeric character or '_' (e.g. "
               "'my_name',  or 'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or 'ReasonA:ReasonB', regex used "
               "for validation is '[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')")


def _conditions(conditions: list[Any], path: str, errs: list[Cause]) -> None:
    """metav1 ValidateConditions: unique types, then each condition's fields."""
    seen: set[str] = set()
    for i, c in enumerate(conditions):
        c = _dict(c)
        ipath = f"{path}[{i}]"
        ctype = _str(c.get("type"))
        if ctype in seen:
            errs.append(Cause("Duplicate", f"{ipath}.type", "", ctype))
        seen.add(ctype)
        _label_name(ctype, f"{ipath}.type", errs)
        status = _str(c.get("status"))
        if status not in _CONDITION_STATUSES:
            v._not_supported(errs, f"{ipath}.status", status, _CONDITION_STATUSES)
        og = c.get("observedGeneration")
        if _is_int(og) and og < 0:
            errs.append(Cause("Invalid", f"{ipath}.observedGeneration", "must be greater than or equal to zero", og))
        if not c.get("lastTransitionTime"):
            errs.append(Cause("Required", f"{ipath}.lastTransitionTime", "must be set"))
        reason = _str(c.get("reason"))
        if not reason:
            errs.append(Cause("Required", f"{ipath}.reason", "must be set"))
        else:
            if not _REASON.match(reason):
                errs.append(Cause("Invalid", f"{ipath}.reason", _REASON_MSG, reason))
            if len(reason) > 1024:
                v._too_long(errs, f"{ipath}.reason", 1024)
        if len(_str(c.get("message"))) > 32768:
            v._too_long(errs, f"{ipath}.message", 32768)


# ---------------------------------------------------------------- node selectors

_NODE_SELECTOR_OPS = ("DoesNotExist", "Exists", "Gt", "In", "Lt", "NotIn")


def _node_selector(selector: dict[str, Any], path: str, errs: list[Cause]) -> None:
    terms = _list(selector.get("nodeSelectorTerms"))
    if not terms:
        errs.append(Cause("Required", f"{path}.nodeSelectorTerms", "must have at least one node selector term"))
    for i, term in enumerate(terms):
        term = _dict(term)
        tpath = f"{path}.nodeSelectorTerms[{i}]"
        for j, req in enumerate(_list(term.get("matchExpressions"))):
            _node_selector_requirement(_dict(req), f"{tpath}.matchExpressions[{j}]", errs, fields=False)
        for j, req in enumerate(_list(term.get("matchFields"))):
            _node_selector_requirement(_dict(req), f"{tpath}.matchFields[{j}]", errs, fields=True)


def _node_selector_requirement(req: dict[str, Any], path: str, errs: list[Cause], *, fields: bool) -> None:
    op = _str(req.get("operator"))
    values = _list(req.get("values"))
    if op in ("In", "NotIn"):
        if not values:
            errs.append(Cause("Required", f"{path}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
    elif op in ("Exists", "DoesNotExist"):
        if values:
            errs.append(Cause("Forbidden", f"{path}.values",
                              "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
    elif op in ("Gt", "Lt"):
        if len(values) != 1:
            errs.append(Cause("Required", f"{path}.values",
                              "must be specified single value when `operator` is 'Lt' or 'Gt'"))
    else:
        errs.append(Cause("Invalid", f"{path}.operator", "not a valid selector operator", op))
    key = _str(req.get("key"))
    if fields:
        if key != "metadata.name":
            v._not_supported(errs, f"{path}.key", key, ("metadata.name",))
        elif op in ("In", "NotIn") and len(values) != 1:
            errs.append(Cause("Required", f"{path}.values", "must be only one value when `operator` is 'In' or "
                              "'NotIn' for node field selector"))
    else:
        _label_name(key, f"{path}.key", errs)


# ---------------------------------------------------------------- templates

def _template_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    v.validate_object_meta(meta, errs, namespaced=namespaced, name_fn=v.name_is_dns_subdomain)
    spec = _dict(obj.get("spec"))
    v.validate_template_object_meta(spec.get("metadata"), "spec.metadata", errs)
    validate_claim_spec(spec.get("spec"), "spec.spec", errs)


def _template_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    if new.get("spec") != old.get("spec"):
        errs.append(Cause("Invalid", "spec", "field is immutable",
                          v.GoValue("resource.ResourceClaimTemplateSpec{...}")))


# ---------------------------------------------------------------- device classes

def _class_spec(spec: Any, old_spec: Any, errs: list[Cause]) -> None:
    spec = _dict(spec)
    old = _dict(old_spec) if old_spec is not None else None
    stored = old is not None and spec.get("selectors") == old.get("selectors")
    _selectors(spec.get("selectors"), "spec.selectors", errs, stored=stored)
    configs = _list(spec.get("config"))
    stored = old is not None and spec.get("config") == old.get("config")
    if not _too_many(configs, MAX_CONFIG, "spec.config", errs):
        for i, c in enumerate(configs):
            _device_configuration(_dict(c), f"spec.config[{i}]", errs, stored=stored)
    ern = spec.get("extendedResourceName")
    if ern is not None and not _is_extended_resource_name(_str(ern)):
        errs.append(Cause("Invalid", "spec.extendedResourceName", "must be a valid extended resource name", ern))


def _is_extended_resource_name(name: str) -> bool:
    if "/" not in name or name.startswith("kubernetes.io/") or name.startswith("requests."):
        return False
    return not v.is_qualified_name("requests." + name)


def _class_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    v.validate_object_meta(meta, errs, namespaced=False, name_fn=v.name_is_dns_subdomain)
    _class_spec(obj.get("spec"), None, errs)


def _class_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    meta = v._meta(new)
    _each_name = v.name_is_dns_subdomain(_str(meta.get("name")), False)
    v._each(errs, "metadata.name", _str(meta.get("name")), _each_name)
    _class_spec(new.get("spec"), old.get("spec") or {}, errs)


# ---------------------------------------------------------------- resource slices

_LIST_KEYS = ("bools", "ints", "strings", "versions")


def _device_attribute(attr: Any, path: str, errs: list[Cause]) -> None:
    attr = _dict(attr)
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
        if len(_str(attr["string"]).encode()) > MAX_ATTR_VALUE_LEN:
            v._too_long(errs, f"{path}.string", MAX_ATTR_VALUE_LEN)
    if attr.get("version") is not None:
        n += 1
        _version(attr["version"], f"{path}.version", errs)
    for key in ("bools", "ints", "strings", "versions"):
        items = attr.get(key)
        if items is None:
            continue
        n += 1
        if not _list(items):
            errs.append(Cause("Invalid", f"{path}.{key}", "must not be empty if specified", v.GoValue("[]")))
        for i, item in enumerate(_list(items)):
            if key == "strings" and len(_str(item).encode()) > MAX_ATTR_VALUE_LEN:
                v._too_long(errs, f"{path}.strings[{i}]", MAX_ATTR_VALUE_LEN)
            if key == "versions":
                _version(item, f"{path}.versions[{i}]", errs)
    if n == 0:
        errs.append(Cause("Invalid", path, "exactly one value must be specified", ""))
    elif n > 1:
        errs.append(Cause("Invalid", path, "exactly one value must be specified", v.GoValue("resource.DeviceAttribute{...}")))


def _version(value: Any, path: str, errs: list[Cause]) -> None:
    text = _str(value)
    if not _SEMVER.match(text):
        errs.append(Cause("Invalid", path, "must be a string compatible with semver.org spec 2.0.0", text))
    if len(text.encode()) > MAX_ATTR_VALUE_LEN:
        v._too_long(errs, path, MAX_ATTR_VALUE_LEN)


def _key_path(path: str, key: str, limit: int) -> str:
    if len(key) <= limit:
        return f"{path}[{key}]"
    limit = max(limit, 16)
    if len(key) > limit:
        remaining = limit - 3
        key = key[: (remaining + 1) // 2] + "..." + key[len(key) - remaining // 2:]
    return f"{path}[{key}]"


def _capacity(cap: Any, path: str, errs: list[Cause], *, multi: bool) -> None:
    cap = _dict(cap)
    policy = cap.get("requestPolicy")
    if policy is None:
        return
    if not multi:
        errs.append(Cause("Forbidden", f"{path}.requestPolicy", "allowMultipleAllocations must be true"))
        return
    policy = _dict(policy)
    ppath = f"{path}.requestPolicy"
    maximum = _q(cap.get("value"))
    values = _list(policy.get("validValues"))
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
        if _too_many(values, MAX_VALID_VALUES, vpath, errs):
            return
        d = _q(default)
        found = False
        for i, (raw, q) in enumerate(zip(values, parsed, strict=True)):
            if q is not None and maximum is not None and q > maximum:
                errs.append(Cause("Invalid", f"{vpath}[{i}]", f"option is larger than capacity value: {cap.get('value')}",
                                  str(raw)))
            if q is not None and q == d:
                found = True
        _duplicates(parsed, vpath, errs)
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
        if step is not None:
            if step <= 0:
                errs.append(Cause("Invalid", f"{rpath}.step", "must be greater than zero", str(rng.get("step"))))
            else:
                if maximum is not None and lo + step > maximum:
                    errs.append(Cause("Invalid", f"{rpath}.step", f"one step {lo + step} is larger than capacity "
                                      f"value: {cap.get('value')}", str(rng.get("step"))))
                for value, raw in ((d, default), (hi, rng.get("max"))):
                    if value is not None and (value - lo) % step != 0:
                        errs.append(Cause("Invalid", f"{rpath}.step", f"value is not a multiple of a given step "
                                          f"({rng.get('step')}) from ({rng.get('min')})", str(raw)))


def _q(value: Any) -> Any:
    if value is None:
        return None
    try:
        return quantity.parse(value)
    except (quantity.QuantityError, TypeError):
        return None


def _device(device: dict[str, Any], old: dict[str, Any] | None, path: str, per_device: bool,
            errs: list[Cause]) -> None:
    multi = device.get("allowMultipleAllocations") is True
    _label(_str(device.get("name")), f"{path}.name", errs)
    attrs = _dict(device.get("attributes"))
    capacity = _dict(device.get("capacity"))
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
        if _qualified_name_problems(key):
            _qualified_name(key, apath, errs)
        _device_attribute(attr, _key_path(apath, key, key_limit), errs)
    if old is None or old.get("capacity") != device.get("capacity"):
        for key, cap in capacity.items():
            _qualified_name(key, f"{path}.capacity", errs)
            _capacity(cap, _key_path(f"{path}.capacity", key, key_limit), errs, multi=multi)
    if old is None or old.get("taints") != device.get("taints"):
        taints = _list(device.get("taints"))
        if not _too_many(taints, MAX_DEVICE_TAINTS, f"{path}.taints", errs):
            for i, t in enumerate(taints):
                _device_taint(t, None, f"{path}.taints[{i}]", errs)
    consumes = _list(device.get("consumesCounters"))
    cpath = f"{path}.consumesCounters"
    if not _too_many(consumes, MAX_CONSUMPTIONS_PER_DEVICE, cpath, errs):
        for i, c in enumerate(consumes):
            c = _dict(c)
            ipath = f"{cpath}[{i}]"
            counter_set = _str(c.get("counterSet"))
            if not counter_set:
                errs.append(Cause("Required", f"{ipath}.counterSet", ""))
            else:
                _label(counter_set, f"{ipath}.counterSet", errs)
            _counters(c.get("counters"), f"{ipath}.counters", MAX_COUNTERS_PER_CONSUMPTION, errs)
        _duplicates([_str(_dict(c).get("counterSet")) for c in consumes], cpath, errs)
    node_fields = [k for k in ("nodeName", "nodeSelector", "allNodes") if device.get(k) is not None]
    if per_device:
        set_fields = []
        node_name = device.get("nodeName")
        if node_name is not None:
            if node_name:
                set_fields.append("`nodeName`")
                v._each(errs, f"{path}.nodeName", node_name, v.is_dns1123_subdomain(node_name))
            else:
                errs.append(Cause("Invalid", f"{path}.nodeName", "must not be empty", ""))
        if isinstance(device.get("nodeSelector"), dict):
            set_fields.append("`nodeSelector`")
            _node_selector(device["nodeSelector"], f"{path}.nodeSelector", errs)
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
                          "`perDeviceNodeSelection` is set to true in the ResourceSlice spec", v.GoValue("null")))
    _binding_conditions(device, path, errs)


def _counters(counters: Any, path: str, limit: int, errs: list[Cause]) -> None:
    counters = _dict(counters)
    if not counters:
        errs.append(Cause("Required", path, ""))
        return
    if len(counters) > limit:
        v._too_many(errs, path, len(counters), limit)
        return
    for name in counters:
        _label(name, path, errs)


def _slice_spec(spec: dict[str, Any], old: dict[str, Any] | None, errs: list[Cause]) -> None:
    _driver(spec.get("driver"), "spec.driver", errs)
    pool = _dict(spec.get("pool"))
    _pool_name(pool.get("name"), "spec.pool.name", errs)
    rsc = pool.get("resourceSliceCount", 0)
    if _is_int(rsc) and rsc <= 0:
        errs.append(Cause("Invalid", "spec.pool.resourceSliceCount", "must be greater than zero", rsc))
    gen = pool.get("generation", 0)
    if _is_int(gen) and gen < 0:
        errs.append(Cause("Invalid", "spec.pool.generation", "must be greater than or equal to zero", gen))
    if old is not None:
        old_pool = _dict(old.get("pool"))
        v._immutable(errs, "spec.pool.name", pool.get("name", ""), old_pool.get("name", ""))
        v._immutable(errs, "spec.driver", spec.get("driver", ""), old.get("driver", ""))
        if spec.get("nodeName") != old.get("nodeName"):
            errs.append(Cause("Invalid", "spec.nodeName", "field is immutable",
                              spec.get("nodeName") if spec.get("nodeName") is not None else v.GoValue("null")))
    set_fields = []
    node_name = spec.get("nodeName")
    if node_name is not None:
        if node_name:
            set_fields.append("`nodeName`")
            v._each(errs, "spec.nodeName", node_name, v.is_dns1123_subdomain(node_name))
        else:
            errs.append(Cause("Invalid", "spec.nodeName", "must be either unset or set to a non-empty string", ""))
    selector = spec.get("nodeSelector")
    if isinstance(selector, dict):
        set_fields.append("`nodeSelector`")
        _node_selector(selector, "spec.nodeSelector", errs)
        terms = _list(selector.get("nodeSelectorTerms"))
        if len(terms) != 1:
            errs.append(Cause("Invalid", "spec.nodeSelector.nodeSelectorTerms", "must have exactly one node selector "
                              "term", v.GoValue("[...]")))
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
    device_list = _list(devices)
    advanced = any(_list(_dict(d).get("taints")) or _list(_dict(d).get("consumesCounters")) or
                   any(isinstance(a, dict) and any(k in _LIST_KEYS for k in a)
                       for a in _dict(_dict(d).get("attributes")).values())
                   for d in device_list)
    limit = MAX_DEVICES_ADVANCED if advanced else MAX_DEVICES
    if not _too_many(device_list, limit, "spec.devices", errs):
        old_devices = {_str(_dict(d).get("name")): _dict(d) for d in _list((old or {}).get("devices"))}
        per_device = spec.get("perDeviceNodeSelection") is True
        for i, d in enumerate(device_list):
            d = _dict(d)
            _device(d, old_devices.get(_str(d.get("name"))) if old is not None else None, f"spec.devices[{i}]",
                    per_device, errs)
        _duplicates([_str(_dict(d).get("name")) for d in device_list], "spec.devices", errs)
    counter_sets = _list(shared)
    if not _too_many(counter_sets, MAX_COUNTER_SETS, "spec.sharedCounters", errs):
        for i, cs in enumerate(counter_sets):
            cs = _dict(cs)
            ipath = f"spec.sharedCounters[{i}]"
            name = _str(cs.get("name"))
            if not name:
                errs.append(Cause("Required", f"{ipath}.name", ""))
            else:
                _label(name, f"{ipath}.name", errs)
            _counters(cs.get("counters"), f"{ipath}.counters", MAX_COUNTERS_PER_SET, errs)
        _duplicates([_str(_dict(cs).get("name")) for cs in counter_sets], "spec.sharedCounters", errs)
    pta = spec.get("partitionTypeAttribute")
    if pta is not None:
        if not any(_list(_dict(d).get("consumesCounters")) for d in device_list):
            errs.append(Cause("Invalid", "spec.partitionTypeAttribute", "may only be set on a slice which declares "
                              "devices that consume counters", pta))
        else:
            _fully_qualified_name(pta, "spec.partitionTypeAttribute", errs)
    _skip_node_operations(spec.get("skipNodeOperations"), "spec.skipNodeOperations", errs)


def _slice_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    v.validate_object_meta(meta, errs, namespaced=False, name_fn=v.name_is_dns_subdomain)
    _slice_spec(_dict(obj.get("spec")), None, errs)


def _slice_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    _slice_spec(_dict(new.get("spec")), _dict(old.get("spec")), errs)


# ---------------------------------------------------------------- device taint rules

def _taint_rule_spec(spec: dict[str, Any], old: dict[str, Any] | None, errs: list[Cause]) -> None:
    selector = spec.get("deviceSelector")
    if isinstance(selector, dict):
        if selector.get("driver") is not None:
            _driver(selector.get("driver"), "spec.deviceSelector.driver", errs)
        if selector.get("pool") is not None:
            _pool_name(selector.get("pool"), "spec.deviceSelector.pool", errs)
        if selector.get("device") is not None:
            _label(_str(selector.get("device")), "spec.deviceSelector.device", errs)
    old_taint = _dict(old.get("taint")) if old is not None else None
    _device_taint(spec.get("taint"), old_taint, "spec.taint", errs)


def _taint_rule_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    v.validate_object_meta(meta, errs, namespaced=False, name_fn=v.name_is_dns_subdomain)
    _taint_rule_spec(_dict(obj.get("spec")), None, errs)


def _taint_rule_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    _taint_rule_spec(_dict(new.get("spec")), _dict(old.get("spec")), errs)


def _taint_rule_status_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    conditions = _list(_dict(new.get("status")).get("conditions"))
    _conditions(conditions, "status.conditions", errs)
    if len(conditions) > MAX_TAINT_RULE_CONDITIONS:
        v._too_many(errs, "status.conditions", len(conditions), MAX_TAINT_RULE_CONDITIONS)


def install() -> None:
    R = v._Rules
    g = "resource.k8s.io"
    v.register(g, "DeviceClass", R(_class_create, _class_update))
    v.register(g, "ResourceClaim", R(_claim_create, _claim_update, _claim_status_update))
    v.register(g, "ResourceClaimTemplate", R(_template_create, _template_update))
    v.register(g, "ResourceSlice", R(_slice_create, _slice_update))
    v.register(g, "DeviceTaintRule", R(_taint_rule_create, _taint_rule_update, _taint_rule_status_update))
