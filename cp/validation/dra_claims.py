"""Validation rules for resource.k8s.io/v1 ResourceClaim (spec and status), ResourceClaimTemplate and
DeviceClass.

Behaviour follows upstream `pkg/apis/resource/validation/validation.go`; the shared field checks are in
`cp.validation.dra_fields`. Pure.
"""

from __future__ import annotations

import json
from typing import Any

from cp.errors import Cause
from cp.validation.common import (
    GoValue,
    as_dict,
    as_list,
    as_str,
    each,
    is_int,
    is_qualified_name,
    meta_of,
    name_is_dns_subdomain,
    not_supported,
    too_long,
    too_many,
)
from cp.validation.dra_fields import (
    MAX_CONFIG,
    MAX_CONSTRAINTS,
    MAX_DERIVED_ATTRIBUTES,
    MAX_DEVICE_CONDITIONS,
    MAX_FIRST_AVAILABLE,
    MAX_HARDWARE_ADDRESS,
    MAX_INTERFACE_NAME,
    MAX_IPS,
    MAX_REQUESTS,
    MAX_RESERVED_FOR,
    MAX_RESULTS,
    STATUS_DATA_MAX_LEN,
    binding_conditions,
    cel_expression,
    device_class_ref,
    device_configuration,
    device_selectors,
    device_toleration,
    device_tolerations,
    dns_label,
    driver_name,
    duplicates,
    fully_qualified_name,
    metav1_conditions,
    node_selector,
    normalized_uid,
    pool_name,
    qualified_name,
    raw_extension,
    skip_node_operations,
    too_many_items,
)
from cp.validation.meta import (
    validate_object_meta,
    validate_template_object_meta,
)
from cp.validation.registry import Rules

_ALLOCATION_MODES = ("All", "ExactCount")
_CONFIG_SOURCES = ("FromClaim", "FromClass")


# ---------------------------------------------------------------- claims

class _RequestNames:
    __slots__ = ("names",)

    def __init__(self, devices: dict[str, Any]) -> None:
        self.names: dict[str, set[str] | None] = {}
        for r in as_list(devices.get("requests")):
            r = as_dict(r)
            subs = as_list(r.get("firstAvailable"))
            self.names[as_str(r.get("name"))] = {as_str(as_dict(s).get("name")) for s in subs} if subs else None

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
    name = as_str(name)
    parts = name.split("/")
    if len(parts) > 2:
        errs.append(Cause("Invalid", path, _REF_MSG, name))
        return
    for part in parts:
        dns_label(part, path, errs)
    if not names.has(name):
        errs.append(Cause("Invalid", path, _REF_MSG, name))


def _request_refs(refs: Any, path: str, names: _RequestNames, errs: list[Cause]) -> None:
    items = as_list(refs)
    if too_many_items(items, MAX_REQUESTS, path, errs):
        return
    for i, ref in enumerate(items):
        _request_ref(ref, f"{path}[{i}]", names, errs)
    duplicates(items, path, errs)


def _allocation_mode(body: dict[str, Any], path: str, errs: list[Cause]) -> None:
    mode = body.get("allocationMode") or ""
    count = body.get("count", 0)
    if mode == "All":
        if count:
            errs.append(Cause("Invalid", f"{path}.count", "must not be specified when allocationMode is 'All'", count))
    elif mode == "ExactCount":
        if is_int(count) and count <= 0:
            errs.append(Cause("Invalid", f"{path}.count", "must be greater than zero", count))
    else:
        not_supported(errs, f"{path}.allocationMode", mode, _ALLOCATION_MODES)


def _capacity_requests(body: dict[str, Any], path: str, errs: list[Cause]) -> None:
    cap = body.get("capacity")
    if not isinstance(cap, dict):
        return
    for key in as_dict(cap.get("requests")):
        qualified_name(key, f"{path}.capacity.requests", errs)


def _derived_attributes(body: dict[str, Any], path: str, errs: list[Cause], *, stored: bool,
                        used: frozenset[str]) -> None:
    """DRADerivedAttributes: at most 32, each a fully qualified name used by a constraint, with a CEL
    expression."""
    items = as_list(body.get("derivedAttributes"))
    dpath = f"{path}.derivedAttributes"
    if too_many_items(items, MAX_DERIVED_ATTRIBUTES, dpath, errs):
        return
    for i, item in enumerate(items):
        item = as_dict(item)
        ipath = f"{dpath}[{i}]"
        name = as_str(item.get("name"))
        if not name:
            errs.append(Cause("Required", f"{ipath}.name", ""))
        else:
            fully_qualified_name(name, f"{ipath}.name", errs)
            if name not in used:
                errs.append(Cause("Invalid", f"{ipath}.name", "must be referenced by at least one matchAttribute or "
                                  "distinctAttribute constraint", name))
        cel_expression(item.get("expression"), f"{ipath}.expression", errs, stored=stored)
    duplicates([as_str(as_dict(d).get("name")) for d in items], dpath, errs)


def _exact_request(body: dict[str, Any], path: str, errs: list[Cause], *, stored: bool,
                   used: frozenset[str] = frozenset()) -> None:
    device_class_ref(body.get("deviceClassName"), f"{path}.deviceClassName", errs)
    device_selectors(body.get("selectors"), f"{path}.selectors", errs, stored=stored)
    if body.get("derivedAttributes") is not None:
        _derived_attributes(body, path, errs, stored=stored, used=used)
    _allocation_mode(body, path, errs)
    device_tolerations(body.get("tolerations"), f"{path}.tolerations", errs)
    _capacity_requests(body, path, errs)


def _sub_request(body: dict[str, Any], path: str, errs: list[Cause], *, stored: bool,
                 used: frozenset[str]) -> None:
    """A firstAvailable subrequest: a named exact request."""
    dns_label(as_str(body.get("name")), f"{path}.name", errs)
    _exact_request(body, path, errs, stored=stored, used=used)


def _device_request(req: dict[str, Any], path: str, errs: list[Cause], *, stored: bool,
                    used: frozenset[str]) -> None:
    dns_label(as_str(req.get("name")), f"{path}.name", errs)
    first = req.get("firstAvailable")
    has_first = bool(as_list(first))
    exactly = req.get("exactly")
    has_exactly = isinstance(exactly, dict)
    if not has_first and not has_exactly:
        errs.append(Cause("Required", path, "exactly one of `exactly` or `firstAvailable` is required"))
    elif has_first and has_exactly:
        errs.append(Cause("Invalid", path, "exactly one of `exactly` or `firstAvailable` is required, but multiple "
                          "fields are set", GoValue("null")))
    elif has_first:
        subs = as_list(first)
        fpath = f"{path}.firstAvailable"
        if not too_many_items(subs, MAX_FIRST_AVAILABLE, fpath, errs):
            for i, sub in enumerate(subs):
                _sub_request(as_dict(sub), f"{fpath}[{i}]", errs, stored=stored, used=used)
            duplicates([as_str(as_dict(s).get("name")) for s in subs], fpath, errs)
    else:
        assert isinstance(exactly, dict)
        _exact_request(exactly, f"{path}.exactly", errs, stored=stored, used=used)


def validate_claim_spec(spec: Any, path: str, errs: list[Cause], *, stored: bool = False) -> None:
    devices = as_dict(as_dict(spec).get("devices"))
    dpath = f"{path}.devices"
    names = _RequestNames(devices)
    requests = as_list(devices.get("requests"))
    rpath = f"{dpath}.requests"
    used = frozenset(as_str(as_dict(c).get(k)) for c in as_list(devices.get("constraints"))
                     for k in ("matchAttribute", "distinctAttribute") if as_dict(c).get(k) is not None)
    if not too_many_items(requests, MAX_REQUESTS, rpath, errs):
        for i, req in enumerate(requests):
            _device_request(as_dict(req), f"{rpath}[{i}]", errs, stored=stored, used=used)
        duplicates([as_str(as_dict(r).get("name")) for r in requests], rpath, errs)
    constraints = as_list(devices.get("constraints"))
    cpath = f"{dpath}.constraints"
    if not too_many_items(constraints, MAX_CONSTRAINTS, cpath, errs):
        for i, c in enumerate(constraints):
            c = as_dict(c)
            ipath = f"{cpath}[{i}]"
            _request_refs(c.get("requests"), f"{ipath}.requests", names, errs)
            if c.get("matchAttribute") is not None:
                fully_qualified_name(c.get("matchAttribute"), f"{ipath}.matchAttribute", errs)
            elif c.get("distinctAttribute") is not None:
                fully_qualified_name(c.get("distinctAttribute"), f"{ipath}.distinctAttribute", errs)
            else:
                errs.append(Cause("Required", ipath, 'exactly one of "matchAttribute" or "distinctAttribute" is '
                                  "required, but multiple fields are set"))
    configs = as_list(devices.get("config"))
    gpath = f"{dpath}.config"
    if not too_many_items(configs, MAX_CONFIG, gpath, errs):
        for i, c in enumerate(configs):
            c = as_dict(c)
            _request_refs(c.get("requests"), f"{gpath}[{i}].requests", names, errs)
            device_configuration(c, f"{gpath}[{i}]", errs, stored=stored)


def _claim_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=namespaced, name_fn=name_is_dns_subdomain)
    validate_claim_spec(obj.get("spec"), "spec", errs)


def _claim_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    if new.get("spec") != old.get("spec"):
        errs.append(Cause("Invalid", "spec", "field is immutable", GoValue("resource.ResourceClaimSpec{...}")))


def _claim_status_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    status, old_status = as_dict(new.get("status")), as_dict(old.get("status"))
    names = _RequestNames(as_dict(as_dict(new.get("spec")).get("devices")))
    reserved = as_list(status.get("reservedFor"))
    rpath = "status.reservedFor"
    if not too_many_items(reserved, MAX_RESERVED_FOR, rpath, errs):
        for i, ref in enumerate(reserved):
            ref = as_dict(ref)
            for key in ("resource", "name", "uid"):
                if not as_str(ref.get(key)):
                    errs.append(Cause("Required", f"{rpath}[{i}].{key}", ""))
        duplicates([as_str(as_dict(r).get("uid")) for r in reserved], rpath, errs)
    allocation = status.get("allocation")
    old_allocation = old_status.get("allocation")
    allocated: set[tuple[str, str, str, str]] = set()
    if isinstance(allocation, dict):
        for r in as_list(as_dict(allocation.get("devices")).get("results")):
            r = as_dict(r)
            allocated.add((as_str(r.get("driver")), as_str(r.get("pool")), as_str(r.get("device")),
                           as_str(r.get("shareID"))))
    devices = as_list(status.get("devices"))
    keys = []
    for i, d in enumerate(devices):
        d = as_dict(d)
        keys.append((as_str(d.get("driver")), as_str(d.get("pool")), as_str(d.get("device")), as_str(d.get("shareID"))))
        _device_status(d, f"status.devices[{i}]", allocated, errs)
    seen: set[tuple[str, str, str, str]] = set()
    for i, device_key in enumerate(keys):
        if device_key in seen:
            errs.append(Cause("Duplicate", f"status.devices[{i}]", "",
                              GoValue("/".join(k for k in device_key if k))))
        seen.add(device_key)
    if reserved:
        if allocation is None:
            errs.append(Cause("Forbidden", rpath, "may not be specified when `allocated` is not set"))
        elif _meta_deleting(new):
            old_uids = {json.dumps(r, sort_keys=True) for r in as_list(old_status.get("reservedFor"))}
            if any(json.dumps(r, sort_keys=True) not in old_uids for r in reserved):
                errs.append(Cause("Forbidden", rpath, "new entries may not be added while `deallocationRequested` "
                                  "or `deletionTimestamp` are set"))
    if old_allocation is not None and allocation is not None:
        if allocation != old_allocation:
            errs.append(Cause("Invalid", "status.allocation", "field is immutable",
                              GoValue("resource.AllocationResult{...}")))
    elif isinstance(allocation, dict):
        _allocation_result(allocation, "status.allocation", names, errs)


def _meta_deleting(obj: dict[str, Any]) -> bool:
    return bool(meta_of(obj).get("deletionTimestamp"))


def _allocation_result(allocation: dict[str, Any], path: str, names: _RequestNames, errs: list[Cause]) -> None:
    devices = as_dict(allocation.get("devices"))
    results = as_list(devices.get("results"))
    rpath = f"{path}.devices.results"
    if not too_many_items(results, MAX_RESULTS, rpath, errs):
        for i, r in enumerate(results):
            r = as_dict(r)
            ipath = f"{rpath}[{i}]"
            _request_ref(r.get("request"), f"{ipath}.request", names, errs)
            driver_name(r.get("driver"), f"{ipath}.driver", errs)
            pool_name(r.get("pool"), f"{ipath}.pool", errs)
            dns_label(as_str(r.get("device")), f"{ipath}.device", errs)
            binding_conditions(r, ipath, errs)
            for j, t in enumerate(as_list(r.get("tolerations"))):
                device_toleration(t, f"{ipath}.tolerations[{j}]", errs)
            if r.get("shareID") is not None:
                normalized_uid(r.get("shareID"), f"{ipath}.shareID", errs)
            skip_node_operations(r.get("skipNodeOperations"), f"{ipath}.skipNodeOperations", errs)
    configs = as_list(devices.get("config"))
    cpath = f"{path}.devices.config"
    if not too_many_items(configs, 2 * MAX_CONFIG, cpath, errs):
        for i, c in enumerate(configs):
            c = as_dict(c)
            ipath = f"{cpath}[{i}]"
            source = as_str(c.get("source"))
            if not source:
                errs.append(Cause("Required", f"{ipath}.source", ""))
            elif source not in _CONFIG_SOURCES:
                not_supported(errs, f"{ipath}.source", source, _CONFIG_SOURCES)
            _request_refs(c.get("requests"), f"{ipath}.requests", names, errs)
            device_configuration(c, ipath, errs, stored=False)
    selector = allocation.get("nodeSelector")
    if isinstance(selector, dict):
        node_selector(selector, f"{path}.nodeSelector", errs)


def _device_status(d: dict[str, Any], path: str, allocated: set[tuple[str, str, str, str]],
                   errs: list[Cause]) -> None:
    driver_name(d.get("driver"), f"{path}.driver", errs)
    pool_name(d.get("pool"), f"{path}.pool", errs)
    dns_label(as_str(d.get("device")), f"{path}.device", errs)
    share = d.get("shareID")
    if share is not None:
        normalized_uid(share, f"{path}.shareID", errs)
    key = (as_str(d.get("driver")), as_str(d.get("pool")), as_str(d.get("device")), as_str(share))
    if key not in allocated:
        shown = "/".join(key[:3]) + (f"/{share}" if share else "")
        errs.append(Cause("Invalid", path, "must be an allocated device in the claim", shown))
    conditions = as_list(d.get("conditions"))
    if len(conditions) > MAX_DEVICE_CONDITIONS:
        too_many(errs, f"{path}.conditions", len(conditions), MAX_DEVICE_CONDITIONS)
    metav1_conditions(conditions, f"{path}.conditions", errs)
    data = d.get("data")
    if data is not None:
        raw_extension(data, f"{path}.data", errs, stored=False, limit=STATUS_DATA_MAX_LEN)
    net = d.get("networkData")
    if isinstance(net, dict):
        if len(as_str(net.get("interfaceName")).encode()) > MAX_INTERFACE_NAME:
            too_long(errs, f"{path}.networkData.interfaceName", MAX_INTERFACE_NAME)
        if len(as_str(net.get("hardwareAddress")).encode()) > MAX_HARDWARE_ADDRESS:
            too_long(errs, f"{path}.networkData.hardwareAddress", MAX_HARDWARE_ADDRESS)
        ips = as_list(net.get("ips"))
        ipath = f"{path}.networkData.ips"
        if not too_many_items(ips, MAX_IPS, ipath, errs):
            for i, ip in enumerate(ips):
                if not _is_interface_address(as_str(ip)):
                    errs.append(Cause("Invalid", f"{ipath}[{i}]", "must be a valid address in CIDR form, "
                                      "(e.g. 10.9.8.7/24 or 2001:db8::1/64)", ip))
            duplicates(ips, ipath, errs)


def _is_interface_address(text: str) -> bool:
    import ipaddress

    if "/" not in text:
        return False
    try:
        ipaddress.ip_interface(text)
    except ValueError:
        return False
    return True


# ---------------------------------------------------------------- templates

def _template_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=namespaced, name_fn=name_is_dns_subdomain)
    spec = as_dict(obj.get("spec"))
    validate_template_object_meta(spec.get("metadata"), "spec.metadata", errs)
    validate_claim_spec(spec.get("spec"), "spec.spec", errs)


def _template_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    if new.get("spec") != old.get("spec"):
        errs.append(Cause("Invalid", "spec", "field is immutable",
                          GoValue("resource.ResourceClaimTemplateSpec{...}")))


# ---------------------------------------------------------------- device classes

def _class_spec(spec: Any, old_spec: Any, errs: list[Cause]) -> None:
    spec = as_dict(spec)
    old = as_dict(old_spec) if old_spec is not None else None
    stored = old is not None and spec.get("selectors") == old.get("selectors")
    device_selectors(spec.get("selectors"), "spec.selectors", errs, stored=stored)
    configs = as_list(spec.get("config"))
    stored = old is not None and spec.get("config") == old.get("config")
    if not too_many_items(configs, MAX_CONFIG, "spec.config", errs):
        for i, c in enumerate(configs):
            device_configuration(as_dict(c), f"spec.config[{i}]", errs, stored=stored)
    ern = spec.get("extendedResourceName")
    if ern is not None and not _is_extended_resource_name(as_str(ern)):
        errs.append(Cause("Invalid", "spec.extendedResourceName", "must be a valid extended resource name", ern))


def _is_extended_resource_name(name: str) -> bool:
    if "/" not in name or name.startswith("kubernetes.io/") or name.startswith("requests."):
        return False
    return not is_qualified_name("requests." + name)


def _class_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=False, name_fn=name_is_dns_subdomain)
    _class_spec(obj.get("spec"), None, errs)


def _class_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    meta = meta_of(new)
    _each_name = name_is_dns_subdomain(as_str(meta.get("name")), False)
    each(errs, "metadata.name", as_str(meta.get("name")), _each_name)
    _class_spec(new.get("spec"), old.get("spec") or {}, errs)




RULES = {
    ("resource.k8s.io", "DeviceClass"): Rules(_class_create, _class_update),
    ("resource.k8s.io", "ResourceClaim"): Rules(_claim_create, _claim_update, _claim_status_update),
    ("resource.k8s.io", "ResourceClaimTemplate"): Rules(_template_create, _template_update),
}
