"""Validation rules of core/v1 Service, as upstream's `pkg/apis/core/validation` (`ValidateService`,
`ValidateServiceUpdate`, `ValidateServiceStatusUpdate`, `ValidateServiceClusterIPsRelatedFields`) checks
the defaulted, allocated object. Pure.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from cp.errors import Cause
from cp.validation import ip
from cp.validation.common import (
    GoValue,
    as_dict,
    as_list,
    as_str,
    each,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_int,
    is_qualified_name,
    is_valid_port_name,
    is_valid_port_num,
    name_is_dns1035_label,
    not_supported,
    validate_labels,
)
from cp.validation.meta import validate_object_meta
from cp.validation.registry import Rules

_TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
_AFFINITIES = ("ClientIP", "None")
_PROTOCOLS = ("SCTP", "TCP", "UDP")
_TRAFFIC_POLICIES = ("Cluster", "Local")
_FAMILIES = ("IPv4", "IPv6")
_FAMILY_POLICIES = ("PreferDualStack", "RequireDualStack", "SingleStack")
_MAX_CLIENT_IP_TIMEOUT = 86400  # core.MaxClientIPServiceAffinitySeconds
_TOPOLOGY_HINTS = "service.kubernetes.io/topology-aware-hints"
_TOPOLOGY_MODE = "service.kubernetes.io/topology-mode"
_SOURCE_RANGES = "service.beta.kubernetes.io/load-balancer-source-ranges"


def strings(values: list[Any]) -> GoValue:
    """A []string as Go's `%#v` shows it in a field error."""
    return GoValue("[]string{" + ", ".join(f'"{v}"' for v in values) + "}")


def is_headless(spec: dict[str, Any]) -> bool:
    ips = as_list(spec.get("clusterIPs"))
    return len(ips) == 1 and ips[0] == "None"


def needs_health_check(spec: dict[str, Any]) -> bool:
    """`apiservice.NeedsHealthCheck`: a LoadBalancer whose external traffic stays on its node."""
    return spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"


def _externally_accessible(spec: dict[str, Any]) -> bool:
    return spec.get("type") in ("NodePort", "LoadBalancer") or \
        (spec.get("type") == "ClusterIP" and bool(spec.get("externalIPs")))


def _port_key(port: dict[str, Any]) -> GoValue:
    return GoValue(f'core.ServicePort{{Name:"", Protocol:"{as_str(port.get("protocol"))}", '
                   f'AppProtocol:(*string)(nil), Port:{port.get("port", 0)}, '
                   'TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:""}, NodePort:0}')


def _validate_port(port: dict[str, Any], path: str, *, require_name: bool, names: set[str],
                   errs: list[Cause]) -> None:
    name = as_str(port.get("name"))
    if require_name and not name:
        errs.append(Cause("Required", f"{path}.name"))
    elif name:
        each(errs, f"{path}.name", name, is_dns1123_label(name))
        if name in names:
            errs.append(Cause("Duplicate", f"{path}.name", value=name))
        names.add(name)
    number = port.get("port", 0)
    each(errs, f"{path}.port", number, is_valid_port_num(number))
    protocol = as_str(port.get("protocol"))
    if not protocol:
        errs.append(Cause("Required", f"{path}.protocol"))
    elif protocol not in _PROTOCOLS:
        not_supported(errs, f"{path}.protocol", protocol, _PROTOCOLS)
    target = port.get("targetPort")
    if isinstance(target, str):
        if not target:
            errs.append(Cause("Required", f"{path}.targetPort"))
        else:
            each(errs, f"{path}.targetPort", target, is_valid_port_name(target))
    elif is_int(target):
        each(errs, f"{path}.targetPort", target, is_valid_port_num(target))
    app_protocol = port.get("appProtocol")
    if isinstance(app_protocol, str):
        each(errs, f"{path}.appProtocol", app_protocol, is_qualified_name(app_protocol))


def _non_special_ip(value: str, path: str) -> list[Cause]:
    """`ValidateNonSpecialIP`: external IPs that cannot be an address of the service."""
    addr = ip.parse_ip_sloppy(value)
    if addr is None:
        return []
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    out = []
    if addr.is_unspecified:
        out.append(Cause("Invalid", path, f"may not be unspecified ({value})", value))
    if addr.is_loopback:
        out.append(Cause("Invalid", path, "may not be in the loopback range (127.0.0.0/8, ::1/128)", value))
    if addr.is_link_local and not addr.is_multicast:
        out.append(Cause("Invalid", path, "may not be in the link-local range (169.254.0.0/16, fe80::/10)", value))
    if (int(addr) >> 8 == 0xE00000) if addr.version == 4 else ((int(addr) >> 112) & 0xFF0F == 0xFF02):
        out.append(Cause("Invalid", path, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)",
                         value))
    return out


def validate_cluster_ips(spec: dict[str, Any], errs: list[Cause]) -> None:
    """`ValidateServiceClusterIPsRelatedFields` (also the allocator's pre-check)."""
    if spec.get("type") == "ExternalName":
        return
    cluster_ip = as_str(spec.get("clusterIP"))
    ips = [as_str(v) for v in as_list(spec.get("clusterIPs"))]
    families = [as_str(v) for v in as_list(spec.get("ipFamilies"))]
    if cluster_ip:
        if not ips:
            errs.append(Cause("Required", "spec.clusterIPs"))
        elif ips[0] != cluster_ip:
            errs.append(Cause("Invalid", "spec.clusterIPs", "first value must match `clusterIP`", strings(ips)))
    elif ips:
        errs.append(Cause("Invalid", "spec.clusterIPs", "must be empty when `clusterIP` is not specified",
                          strings(ips)))
    seen: set[str] = set()
    for i, family in enumerate(families):
        if family not in _FAMILIES:
            not_supported(errs, f"spec.ipFamilies[{i}]", family, _FAMILIES)
        if family in seen:
            errs.append(Cause("Duplicate", f"spec.ipFamilies[{i}]", value=family))
        seen.add(family)
    policy = spec.get("ipFamilyPolicy")
    if policy is not None and policy not in _FAMILY_POLICIES:
        not_supported(errs, "spec.ipFamilyPolicy", policy, _FAMILY_POLICIES)
    invalid = False
    for i, value in enumerate(ips):
        if i == 0 and value == "None":
            if len(ips) > 1:
                invalid = True
                errs.append(Cause("Invalid", "spec.clusterIPs", "'None' must be the first and only value",
                                  strings(ips)))
            continue
        found = ip.is_valid_ip(f"spec.clusterIPs[{i}]", value)
        invalid = invalid or bool(found)
        errs.extend(found)
    if len(ips) > 2:
        errs.append(Cause("Invalid", "spec.clusterIPs", "may only hold up to 2 values", strings(ips)))
    if invalid:
        return
    if len(ips) > 1 and len({ip.ip_family(v) for v in ips}) != len(ips):
        errs.append(Cause("Invalid", "spec.clusterIPs", "may specify no more than one IP for each IP family",
                          strings(ips)))
    if not is_headless(spec) and ips and families:
        for i, value in enumerate(ips[:len(families)]):
            v6 = ip.ip_family(value) == 6
            if families[i] == "IPv4" and v6:
                errs.append(Cause("Invalid", f"spec.clusterIPs[{i}]",
                                  f"expected an IPv4 value as indicated by `ipFamilies[{i}]`", value))
            if families[i] == "IPv6" and not v6:
                errs.append(Cause("Invalid", f"spec.clusterIPs[{i}]",
                                  f"expected an IPv6 value as indicated by `ipFamilies[{i}]`", value))


def _validate_service(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=namespaced, name_fn=name_is_dns1035_label)
    _validate_spec(obj, meta, errs)


def _validate_spec(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause]) -> None:
    annotations = as_dict(meta.get("annotations"))
    if _TOPOLOGY_MODE in annotations and _TOPOLOGY_HINTS in annotations \
            and annotations[_TOPOLOGY_MODE] != annotations[_TOPOLOGY_HINTS]:
        errs.append(Cause("Invalid", f"metadata.annotations[{_TOPOLOGY_MODE}]",
                          f"must match annotations[{_TOPOLOGY_HINTS}] when both are specified",
                          annotations[_TOPOLOGY_MODE]))
    spec = as_dict(obj.get("spec"))
    kind = as_str(spec.get("type"))
    ports = [as_dict(p) for p in as_list(spec.get("ports"))]
    headless = is_headless(spec)
    if not ports and not headless and kind != "ExternalName":
        errs.append(Cause("Required", "spec.ports"))
    if kind in ("LoadBalancer", "NodePort") and headless:
        errs.append(Cause("Invalid", "spec.clusterIPs[0]", f"may not be set to 'None' for {kind} services", "None"))
    elif kind == "ExternalName":
        for field in ("clusterIPs", "ipFamilies"):
            if as_list(spec.get(field)):
                errs.append(Cause("Forbidden", f"spec.{field}", "may not be set for ExternalName services"))
        if spec.get("ipFamilyPolicy") is not None:
            errs.append(Cause("Forbidden", "spec.ipFamilyPolicy", "may not be set for ExternalName services"))
        cname = as_str(spec.get("externalName")).removesuffix(".")
        if cname:
            each(errs, "spec.externalName", cname, is_dns1123_subdomain(cname))
        else:
            errs.append(Cause("Required", "spec.externalName"))
    names: set[str] = set()
    for i, port in enumerate(ports):
        _validate_port(port, f"spec.ports[{i}]", require_name=len(ports) > 1, names=names, errs=errs)
    if spec.get("selector") is not None:
        validate_labels(spec.get("selector"), "spec.selector", errs)
    _validate_affinity(spec, errs)
    validate_cluster_ips(spec, errs)
    for i, value in enumerate(as_list(spec.get("externalIPs"))):
        path = f"spec.externalIPs[{i}]"
        found = ip.is_valid_ip(path, as_str(value))
        errs.extend(found or _non_special_ip(as_str(value), path))
    if not kind:
        errs.append(Cause("Required", "spec.type"))
    elif kind not in _TYPES:
        not_supported(errs, "spec.type", kind, _TYPES)
    if kind == "ClusterIP":
        for i, port in enumerate(ports):
            if port.get("nodePort"):
                errs.append(Cause("Forbidden", f"spec.ports[{i}].nodePort",
                                  "may not be used when `type` is 'ClusterIP'"))
    node_ports: set[tuple[str, Any]] = set()
    for i, port in enumerate(ports):
        if not port.get("nodePort"):
            continue
        key = (as_str(port.get("protocol")), port.get("nodePort"))
        if key in node_ports:
            errs.append(Cause("Duplicate", f"spec.ports[{i}].nodePort", value=port.get("nodePort")))
        node_ports.add(key)
    seen_ports: set[tuple[str, Any]] = set()
    for i, port in enumerate(ports):
        key = (as_str(port.get("protocol")), port.get("port"))
        if key in seen_ports:
            errs.append(Cause("Duplicate", f"spec.ports[{i}]", value=_port_key(port)))
        seen_ports.add(key)
    _validate_source_ranges(spec, annotations, kind, errs)
    if spec.get("allocateLoadBalancerNodePorts") is not None and kind != "LoadBalancer":
        errs.append(Cause("Forbidden", "spec.allocateLoadBalancerNodePorts",
                          "may only be used when `type` is 'LoadBalancer'"))
    if kind == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
        errs.append(Cause("Required", "allocateLoadBalancerNodePorts"))
    _validate_load_balancer_class(spec, None, errs)
    _validate_traffic(spec, errs)


def _validate_affinity(spec: dict[str, Any], errs: list[Cause]) -> None:
    affinity = as_str(spec.get("sessionAffinity"))
    if not affinity:
        errs.append(Cause("Required", "spec.sessionAffinity"))
    elif affinity not in _AFFINITIES:
        not_supported(errs, "spec.sessionAffinity", affinity, _AFFINITIES)
    config = spec.get("sessionAffinityConfig")
    if affinity == "ClientIP":
        client_ip = as_dict(as_dict(config).get("clientIP")) if config is not None else None
        if config is None:
            errs.append(Cause("Required", "spec.sessionAffinityConfig"))
        elif client_ip is None or as_dict(config).get("clientIP") is None:
            errs.append(Cause("Required", "spec.sessionAffinityConfig.clientIP"))
        else:
            timeout = client_ip.get("timeoutSeconds")
            if timeout is None:
                errs.append(Cause("Required", "spec.sessionAffinityConfig.clientIP.timeoutSeconds"))
            elif not is_int(timeout) or not 0 < timeout <= _MAX_CLIENT_IP_TIMEOUT:
                errs.append(Cause("Invalid", "spec.sessionAffinityConfig.clientIP.timeoutSeconds",
                                  f"must be greater than 0 and less than {_MAX_CLIENT_IP_TIMEOUT}s", timeout))
    elif affinity == "None" and config is not None:
        errs.append(Cause("Forbidden", "spec.sessionAffinityConfig", "must not be set when session affinity is None"))


def _validate_source_ranges(spec: dict[str, Any], annotations: dict[str, Any], kind: str,
                            errs: list[Cause]) -> None:
    ranges = as_list(spec.get("loadBalancerSourceRanges"))
    if ranges:
        path = "spec.LoadBalancerSourceRanges"
        if kind != "LoadBalancer":
            errs.append(Cause("Forbidden", path, "may only be used when `type` is 'LoadBalancer'"))
        for i, value in enumerate(ranges):
            errs.extend(ip.is_valid_cidr(f"{path}[{i}]", as_str(value).strip()))
    elif _SOURCE_RANGES in annotations:
        path = f"metadata.annotations[{_SOURCE_RANGES}]"
        if kind != "LoadBalancer":
            errs.append(Cause("Forbidden", path, "may only be used when `type` is 'LoadBalancer'"))
        text = as_str(annotations[_SOURCE_RANGES]).strip()
        for value in text.split(",") if text else []:
            errs.extend(ip.is_valid_cidr(path, value.strip()))


def _validate_load_balancer_class(spec: dict[str, Any], old: dict[str, Any] | None, errs: list[Cause]) -> None:
    value = spec.get("loadBalancerClass")
    if old is not None and old.get("type") == "LoadBalancer" and spec.get("type") == "LoadBalancer" \
            and old.get("loadBalancerClass") != value:
        errs.append(Cause("Invalid", "spec.loadBalancerClass", "may not change once set", value))
    if old is not None:
        return
    if spec.get("type") == "LoadBalancer":
        if isinstance(value, str):
            each(errs, "spec.loadBalancerClass", value, is_qualified_name(value))
    elif value is not None:
        errs.append(Cause("Forbidden", "spec.loadBalancerClass", "may only be used when `type` is 'LoadBalancer'"))


def _validate_traffic(spec: dict[str, Any], errs: list[Cause]) -> None:
    external = spec.get("externalTrafficPolicy")
    if not _externally_accessible(spec):
        if external:
            errs.append(Cause("Invalid", "spec.externalTrafficPolicy",
                              "may only be set for externally-accessible services", external))
    elif not external:
        errs.append(Cause("Required", "spec.externalTrafficPolicy"))
    elif external not in _TRAFFIC_POLICIES:
        not_supported(errs, "spec.externalTrafficPolicy", external, _TRAFFIC_POLICIES)
    health = spec.get("healthCheckNodePort") or 0
    if not needs_health_check(spec):
        if health:
            errs.append(Cause("Invalid", "spec.healthCheckNodePort",
                              "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is "
                              "'Local'", health))
    elif not health:
        errs.append(Cause("Required", "spec.healthCheckNodePort"))
    else:
        each(errs, "spec.healthCheckNodePort", health, is_valid_port_num(health))
    internal = spec.get("internalTrafficPolicy")
    if internal is None and spec.get("type") in ("NodePort", "LoadBalancer", "ClusterIP"):
        errs.append(Cause("Required", "spec.internalTrafficPolicy"))
    if internal is not None and internal not in _TRAFFIC_POLICIES:
        not_supported(errs, "spec.internalTrafficPolicy", internal, _TRAFFIC_POLICIES)
    distribution = spec.get("trafficDistribution")
    if distribution is not None and distribution != "PreferClose":
        not_supported(errs, "spec.trafficDistribution", distribution, ("PreferClose",))


def _validate_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    spec, old_spec = as_dict(new.get("spec")), as_dict(old.get("spec"))
    _upgrade_downgrade_cluster_ips(old_spec, spec, errs)
    _upgrade_downgrade_families(old_spec, spec, errs)
    _validate_load_balancer_class(spec, old_spec, errs)
    if needs_health_check(old_spec) and needs_health_check(spec) \
            and spec.get("healthCheckNodePort") != old_spec.get("healthCheckNodePort"):
        errs.append(Cause("Forbidden", "spec.healthCheckNodePort", "field is immutable"))
    _validate_spec(new, as_dict(new.get("metadata")), errs)


def _upgrade_downgrade_cluster_ips(old: dict[str, Any], new: dict[str, Any], errs: list[Cause]) -> None:
    if "ExternalName" in (new.get("type"), old.get("type")):
        return
    if is_headless(old) and is_headless(new):
        return
    old_ips = [as_str(v) for v in as_list(old.get("clusterIPs"))]
    ips = [as_str(v) for v in as_list(new.get("clusterIPs"))]
    changed = "may not change once set"
    if len(old_ips) == len(ips):
        for i, value in enumerate(old_ips):
            if value != ips[i]:
                errs.append(Cause("Invalid", f"spec.clusterIPs[{i}]", changed, strings(ips)))
    elif len(old_ips) > len(ips):
        if not ips:
            errs.append(Cause("Invalid", "spec.clusterIPs[0]", "primary clusterIP can not be unset", strings(ips)))
        elif ips[0] != old_ips[0]:
            errs.append(Cause("Invalid", "spec.clusterIPs[0]", changed, strings(ips)))
        if len(ips) == 1 and new.get("ipFamilyPolicy") != "SingleStack":
            errs.append(Cause("Invalid", "spec.ipFamilyPolicy",
                              "must be set to 'SingleStack' when releasing the secondary clusterIP",
                              new.get("ipFamilyPolicy")))
    elif old_ips and ips[0] != old_ips[0]:
        errs.append(Cause("Invalid", "spec.clusterIPs[0]", changed, strings(ips)))


def _upgrade_downgrade_families(old: dict[str, Any], new: dict[str, Any], errs: list[Cause]) -> None:
    if "ExternalName" in (new.get("type"), old.get("type")):
        return
    if is_headless(old) or is_headless(new):
        return
    old_families = [as_str(v) for v in as_list(old.get("ipFamilies"))]
    families = [as_str(v) for v in as_list(new.get("ipFamilies"))]
    ips = [as_str(v) for v in as_list(new.get("clusterIPs"))]
    changed = "may not change once set"
    if len(old_families) == len(families):
        for i, value in enumerate(old_families):
            if value != families[i]:
                errs.append(Cause("Invalid", "spec.ipFamilies[0]", changed, strings(families)))
    elif len(old_families) > len(families):
        if not ips:
            errs.append(Cause("Invalid", "spec.ipFamilies[0]", "primary ipFamily can not be unset",
                              strings(families)))
        if families and families[0] != old_families[0]:
            errs.append(Cause("Invalid", "spec.ipFamilies[0]", changed, strings(ips)))
        if len(families) == 1 and new.get("ipFamilyPolicy") != "SingleStack":
            errs.append(Cause("Invalid", "spec.ipFamilyPolicy",
                              "must be set to 'SingleStack' when releasing the secondary ipFamily",
                              new.get("ipFamilyPolicy")))
    elif old_families and families and families[0] != old_families[0]:
        errs.append(Cause("Invalid", "spec.ipFamilies[0]", changed, strings(ips)))


def _validate_status_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    """`ValidateLoadBalancerStatus`: ingress IPs and hostnames, and an ipMode only with an IP."""
    balancer = as_dict(as_dict(new.get("status")).get("loadBalancer"))
    for i, ingress in enumerate(as_list(balancer.get("ingress"))):
        ingress = as_dict(ingress)
        path = f"status.loadBalancer.ingress[{i}]"
        address = ingress.get("ip")
        if address:
            errs.extend(ip.is_valid_ip_for_legacy_field(f"{path}.ip", as_str(address), strict=False))
        mode = ingress.get("ipMode")
        if mode is not None:
            if not address:
                errs.append(Cause("Forbidden", f"{path}.ipMode", "may not be specified when `ip` is not"))
            elif mode not in ("Proxy", "VIP"):
                not_supported(errs, f"{path}.ipMode", mode, ("Proxy", "VIP"))
        elif address:
            errs.append(Cause("Required", f"{path}.ipMode", "must be specified when `ip` is set"))
        hostname = ingress.get("hostname")
        if hostname:
            each(errs, f"{path}.hostname", hostname, is_dns1123_subdomain(as_str(hostname)))
            if ip.parse_ip_sloppy(as_str(hostname)) is not None:
                errs.append(Cause("Invalid", f"{path}.hostname", "must be a DNS name, not an IP address", hostname))


RULES: dict[tuple[str, str], Rules] = {
    ("", "Service"): Rules(_validate_service, _validate_update, _validate_status_update),
}
