"""Validation rules for the other core/v1 kinds (Namespace, Node, ConfigMap, Event, Endpoints) and
coordination.k8s.io/v1 Lease.

Behaviour follows upstream `pkg/apis/core/validation` and `pkg/apis/coordination/validation`. Pure.
"""

from __future__ import annotations

from typing import Any

from cp.errors import Cause
from cp.validation.common import (
    as_dict,
    as_list,
    as_str,
    each,
    is_config_map_key,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_int,
    is_qualified_name,
    is_valid_port_num,
    meta_of,
    name_is_dns_label,
    name_is_dns_subdomain,
    not_supported,
    parse_quantity,
)
from cp.validation.ip import is_valid_ip_for_legacy_field, parse_ip_sloppy
from cp.validation.meta import (
    STANDARD_FINALIZERS,
    validate_object_meta,
)
from cp.validation.pod import (
    validate_taints,
)
from cp.validation.registry import Rules

_CONFIG_MAP_MAX = 1024 * 1024
_LEASE_STRATEGIES = ("OldestEmulationVersion",)

# ---------------------------------------------------------------- core/v1 others

def _validate_namespace_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause],
                               namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=False, name_fn=name_is_dns_label)
    _validate_namespace_finalizers(obj, errs)


def _validate_namespace_finalizers(obj: dict[str, Any], errs: list[Cause]) -> None:
    for i, f in enumerate(as_list(as_dict(obj.get("spec")).get("finalizers"))):
        f = as_str(f)
        path = f"spec.finalizers[{i}]"
        msgs = is_qualified_name(f)
        if msgs:
            each(errs, path, f, msgs)
        elif "/" not in f and f not in STANDARD_FINALIZERS:
            errs.append(Cause("Invalid", path, "name is neither a standard finalizer name nor is it fully "
                              "qualified", f))


def _validate_namespace_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    _validate_namespace_finalizers(new, errs)


def _validate_node_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=False, name_fn=name_is_dns_subdomain)
    _validate_node_spec(obj, errs)


def _validate_node_spec(obj: dict[str, Any], errs: list[Cause]) -> None:
    spec = as_dict(obj.get("spec"))
    validate_taints(spec.get("taints"), "spec.taints", errs)
    status = as_dict(obj.get("status"))
    for key in ("capacity", "allocatable"):
        for name, raw in as_dict(status.get(key)).items():
            q = parse_quantity(raw)
            if q is not None and q < 0:
                errs.append(Cause("Invalid", f"status.{key}[{name}]", "must be greater than or equal to 0", str(raw)))


def _validate_node_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    _validate_node_spec(new, errs)
    spec, old_spec = as_dict(new.get("spec")), as_dict(old.get("spec"))
    old_cidrs = as_list(old_spec.get("podCIDRs"))
    if old_cidrs and as_list(spec.get("podCIDRs")) != old_cidrs:
        errs.append(Cause("Forbidden", "spec.podCIDRs", "node updates may not change podCIDR except from \"\" to "
                          "valid"))
    if old_spec.get("providerID") and spec.get("providerID") != old_spec.get("providerID"):
        errs.append(Cause("Forbidden", "spec.providerID", "node updates may not change providerID except from \"\" "
                          "to valid"))


def _validate_configmap_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause],
                               namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=namespaced, name_fn=name_is_dns_subdomain)
    _validate_configmap_data(obj, errs)


def _validate_configmap_data(obj: dict[str, Any], errs: list[Cause]) -> None:
    total = 0
    data, binary = as_dict(obj.get("data")), as_dict(obj.get("binaryData"))
    for key, value in data.items():
        each(errs, "data[" + key + "]", key, is_config_map_key(key))
        total += len(value.encode()) if isinstance(value, str) else 0
    for key, value in binary.items():
        each(errs, "binaryData[" + key + "]", key, is_config_map_key(key))
        if key in data:
            errs.append(Cause("Invalid", "data[" + key + "]", "duplicate of key present in binaryData", key))
        total += len(value) * 3 // 4 if isinstance(value, str) else 0
    if total > _CONFIG_MAP_MAX:
        errs.append(Cause("TooLong", "", f"may not be more than {_CONFIG_MAP_MAX} bytes"))


def _validate_configmap_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    if old.get("immutable") is True:
        if new.get("immutable") is not True:
            errs.append(Cause("Forbidden", "immutable", "field is immutable when `immutable` is set"))
        if new.get("data") != old.get("data"):
            errs.append(Cause("Forbidden", "data", "field is immutable when `immutable` is set"))
        if new.get("binaryData") != old.get("binaryData"):
            errs.append(Cause("Forbidden", "binaryData", "field is immutable when `immutable` is set"))
    _validate_configmap_data(new, errs)


def _validate_event_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=namespaced, name_fn=name_is_dns_subdomain)
    _validate_event(obj, meta, errs)


def validate_events_v1_create(event: dict[str, Any]) -> list[Cause]:
    """ValidateEventCreate for an events.k8s.io/v1 request (the event already converted to core/v1):
    the legacy rules, with `reportingController` named as that version names it, then the strict
    rules new Events are held to: a valid series, eventTime set, type Normal or Warning, and none of
    the deprecated fields set. (Object metadata is the store's to check, after name generation.)"""
    errs: list[Cause] = []
    meta = meta_of(event)
    _validate_event(event, meta, errs, controller_field="reportingController")
    series = event.get("series")
    if isinstance(series, dict):
        count = series.get("count")
        if not is_int(count) or count < 2:
            errs.append(Cause("Invalid", "series.count", "should be at least 2", ""))
        if not series.get("lastObservedTime"):
            errs.append(Cause("Required", "series.lastObservedTime", ""))
    if not event.get("eventTime"):
        errs.append(Cause("Required", "eventTime", ""))
    type_ = as_str(event.get("type"))
    if type_ not in ("Normal", "Warning"):
        errs.append(Cause("Invalid", "type", f"has invalid value: {type_}", ""))
    for key in ("firstTimestamp", "lastTimestamp", "count"):
        if event.get(key):
            errs.append(Cause("Invalid", key, "needs to be unset", ""))
    source = as_dict(event.get("source"))
    if source.get("component") or source.get("host"):
        errs.append(Cause("Invalid", "source", "needs to be unset", ""))
    return errs


def _validate_event(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], *,
                    controller_field: str = "reportingComponent") -> None:
    """legacyValidateEvent (core/v1 requests name the reporting controller `reportingComponent`)."""
    involved = as_dict(obj.get("involvedObject"))
    ns = as_str(meta.get("namespace"))
    ins = as_str(involved.get("namespace"))
    mismatch = Cause("Invalid", "involvedObject.namespace", "does not match event.namespace", ins)
    if not obj.get("eventTime"):
        if not ins:
            if ns not in ("", "default"):
                errs.append(mismatch)
        elif ns != ins:
            errs.append(mismatch)
    else:
        if not ins and ns not in ("default", "kube-system"):
            errs.append(mismatch)
        controller = as_str(obj.get("reportingComponent"))
        if not controller:
            errs.append(Cause("Required", controller_field, ""))
        each(errs, controller_field, controller, is_qualified_name(controller))
        instance = as_str(obj.get("reportingInstance"))
        if not instance:
            errs.append(Cause("Required", "reportingInstance", ""))
        if len(instance) > 128:
            errs.append(Cause("Invalid", "reportingInstance", "can have at most 128 characters", ""))
        for key, limit in (("action", 128), ("reason", 128)):
            value = as_str(obj.get(key))
            if not value:
                errs.append(Cause("Required", key, ""))
            if len(value) > limit:
                errs.append(Cause("Invalid", key, f"can have at most {limit} characters", ""))
        if len(as_str(obj.get("message"))) > 4096:
            errs.append(Cause("Invalid", "message", "can have at most 4096 characters", ""))
    each(errs, "namespace", ns, is_dns1123_subdomain(ns))


def _validate_event_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    _validate_event(new, meta_of(new), errs)


def _validate_lease_spec(obj: dict[str, Any], errs: list[Cause]) -> None:
    spec = as_dict(obj.get("spec"))
    lds = spec.get("leaseDurationSeconds")
    if is_int(lds) and lds <= 0:
        errs.append(Cause("Invalid", "spec.leaseDurationSeconds", "must be greater than 0", lds))
    lt = spec.get("leaseTransitions")
    if is_int(lt) and lt < 0:
        errs.append(Cause("Invalid", "spec.leaseTransitions", "must be greater than or equal to 0", lt))
    strategy = spec.get("strategy")
    if isinstance(strategy, str):
        # ValidateCoordinatedLeaseStrategy, which upstream reports at `spec.strategy.strategy`.
        if "/" not in strategy:
            if strategy not in _LEASE_STRATEGIES:
                errs.append(Cause("NotSupported", "spec.strategy.strategy",
                                  "supported values: " + ", ".join(f'"{s}"' for s in _LEASE_STRATEGIES), strategy))
        else:
            each(errs, "spec.strategy.strategy", strategy, is_qualified_name(strategy))
    if spec.get("preferredHolder") and not strategy:
        errs.append(Cause("Forbidden", "spec.preferredHolder", "may only be specified if `strategy` is defined"))


def _validate_lease_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=namespaced, name_fn=name_is_dns_subdomain)
    _validate_lease_spec(obj, errs)


def _validate_lease_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    _validate_lease_spec(new, errs)


# ---------------------------------------------------------------- Endpoints

_PROTOCOLS = ("SCTP", "TCP", "UDP")


def _special_ip(text: str, path: str, errs: list[Cause]) -> None:
    """ValidateNonSpecialIP: endpoints may not point at unspecified, loopback or link-local addresses."""
    addr = parse_ip_sloppy(text)
    if addr is None:
        errs.append(Cause("Invalid", path, "must be a valid IP address", text))
        return
    if addr.is_unspecified:
        errs.append(Cause("Invalid", path, f"may not be unspecified ({text})", text))
    if addr.is_loopback:
        errs.append(Cause("Invalid", path, "may not be in the loopback range (127.0.0.0/8, ::1/128)", text))
    multicast_local = (addr.version == 4 and addr.packed[:3] == bytes((224, 0, 0))) or \
        (addr.version == 6 and addr.packed[:2] == bytes((0xff, 0x02)))
    if multicast_local:
        errs.append(Cause("Invalid", path, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)",
                          text))
    if addr.is_link_local and not multicast_local:
        errs.append(Cause("Invalid", path, "may not be in the link-local range (169.254.0.0/16, fe80::/10)", text))


def _endpoint_address(address: dict[str, Any], path: str, errs: list[Cause], old_ips: list[str] | None) -> None:
    ip = as_str(address.get("ip"))
    errs.extend(is_valid_ip_for_legacy_field(f"{path}.ip", ip, strict=True, valid_old=old_ips))
    hostname = as_str(address.get("hostname"))
    if hostname:
        each(errs, f"{path}.hostname", hostname, is_dns1123_label(hostname))
    node = address.get("nodeName")
    if isinstance(node, str):
        each(errs, f"{path}.nodeName", node, name_is_dns_subdomain(node, False))
    _special_ip(ip, f"{path}.ip", errs)


def _endpoint_port(port: dict[str, Any], path: str, errs: list[Cause], *, named: bool) -> None:
    name = as_str(port.get("name"))
    if named and not name:
        errs.append(Cause("Required", f"{path}.name", ""))
    elif name:
        each(errs, f"{path}.name", name, is_dns1123_label(name))
    each(errs, f"{path}.port", port.get("port"), is_valid_port_num(port.get("port")))
    protocol = port.get("protocol")
    if not protocol:
        errs.append(Cause("Required", f"{path}.protocol", ""))
    elif protocol not in _PROTOCOLS:
        not_supported(errs, f"{path}.protocol", protocol, _PROTOCOLS)
    app = port.get("appProtocol")
    if isinstance(app, str):
        each(errs, f"{path}.appProtocol", app, is_qualified_name(app))


def _validate_endpoints(obj: dict[str, Any], errs: list[Cause], old_ips: list[str] | None = None) -> None:
    for i, subset in enumerate(as_list(obj.get("subsets"))):
        subset = as_dict(subset)
        path = f"subsets[{i}]"
        if not as_list(subset.get("addresses")) and not as_list(subset.get("notReadyAddresses")):
            errs.append(Cause("Required", path, "must specify `addresses` or `notReadyAddresses`"))
        for key in ("addresses", "notReadyAddresses"):
            for j, address in enumerate(as_list(subset.get(key))):
                _endpoint_address(as_dict(address), f"{path}.{key}[{j}]", errs, old_ips)
        ports = as_list(subset.get("ports"))
        for j, port in enumerate(ports):
            _endpoint_port(as_dict(port), f"{path}.ports[{j}]", errs, named=len(ports) > 1)


def _endpoint_ips(obj: dict[str, Any]) -> list[str]:
    return [as_str(as_dict(a).get("ip")) for s in as_list(obj.get("subsets")) for key in ("addresses",
            "notReadyAddresses") for a in as_list(as_dict(s).get(key))]


def _validate_endpoints_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause],
                               namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=namespaced, name_fn=name_is_dns_subdomain)
    _validate_endpoints(obj, errs)


def _validate_endpoints_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    # Addresses stored before strict IP validation may stay.
    _validate_endpoints(new, errs, old_ips=_endpoint_ips(old))


RULES = {
    ("", "Namespace"): Rules(_validate_namespace_create, _validate_namespace_update),
    ("", "Node"): Rules(_validate_node_create, _validate_node_update),
    ("", "ConfigMap"): Rules(_validate_configmap_create, _validate_configmap_update),
    ("", "Event"): Rules(_validate_event_create, _validate_event_update),
    ("", "Endpoints"): Rules(_validate_endpoints_create, _validate_endpoints_update),
    ("coordination.k8s.io", "Lease"): Rules(_validate_lease_create, _validate_lease_update),
}
