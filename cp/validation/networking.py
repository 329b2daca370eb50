"""Validation rules for networking.k8s.io/v1 (NetworkPolicy, Ingress, IngressClass, IPAddress, ServiceCIDR)
and discovery.k8s.io/v1 EndpointSlice.

Behaviour follows upstream `pkg/apis/networking/validation` and `pkg/apis/discovery/validation`. Fields
that k8s.io/api 1.37 tags for declarative validation at beta (`+k8s:beta(...)=+k8s:required`,
`immutable`...) are reported as the declarative validator reports them, after the hand-written errors,
because kube-apiserver 1.37 enforces beta declarative rules in place of the hand-written ones they
cover. Pure.
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
    go_json,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_domain_prefixed_path,
    is_fully_qualified_domain_name,
    is_int,
    is_label_value,
    is_valid_port_name,
    is_valid_port_num,
    is_wildcard_dns1123_subdomain,
    name_is_dns_label,
    name_is_dns_subdomain,
    not_supported,
    too_long,
    too_many,
    validate_labels,
    validate_path_segment_name,
    validate_qualified_name,
)
from cp.validation.meta import validate_label_selector, validate_object_meta
from cp.validation.registry import Rules

_PROTOCOLS = ("TCP", "UDP", "SCTP")
_INGRESS_CLASS_ANNOTATION = "kubernetes.io/ingress.class"


def _immutable_dv(errs: list[Cause], path: str, new: Any, old: Any) -> None:
    """A beta `+k8s:immutable` field: the declarative validator reports no value."""
    if new != old:
        errs.append(Cause("Invalid", path, "field is immutable", GoValue("null")))


# ---------------------------------------------------------------- NetworkPolicy

def _np_port(port: dict[str, Any], path: str, errs: list[Cause]) -> None:
    proto = port.get("protocol")
    if proto is not None and proto not in _PROTOCOLS:
        not_supported(errs, f"{path}.protocol", proto, _PROTOCOLS)
    value, end = port.get("port"), port.get("endPort")
    if value is None:
        if end is not None:
            errs.append(Cause("Invalid", f"{path}.endPort", "may not be specified when `port` is not specified",
                              end))
    elif is_int(value):
        each(errs, f"{path}.port", value, is_valid_port_num(value))
        if is_int(end):
            if end < value:
                errs.append(Cause("Invalid", f"{path}.endPort", "must be greater than or equal to `port`", end))
            each(errs, f"{path}.endPort", end, is_valid_port_num(end))
    else:
        if end is not None:
            errs.append(Cause("Invalid", f"{path}.endPort", "may not be specified when `port` is non-numeric", end))
        each(errs, f"{path}.port", as_str(value), is_valid_port_name(as_str(value)))


def _ip_block(block: dict[str, Any], path: str, errs: list[Cause], dv: list[Cause], old_cidrs: list[str]) -> None:
    cidr = as_str(block.get("cidr"))
    if not cidr:
        dv.append(Cause("Required", f"{path}.cidr", ""))
        return
    errs.extend(ip.is_valid_cidr_for_legacy_field(f"{path}.cidr", cidr, strict=True, valid_old=old_cidrs))
    net = ip.parse_cidr_sloppy(cidr)
    if net is None:
        return
    for i, exc in enumerate(as_list(block.get("except"))):
        epath = f"{path}.except[{i}]"
        exc = as_str(exc)
        errs.extend(ip.is_valid_cidr_for_legacy_field(epath, exc, strict=True, valid_old=old_cidrs))
        enet = ip.parse_cidr_sloppy(exc)
        if enet is None:
            continue
        if enet.version != net.version or enet.network_address not in net or net.prefixlen >= enet.prefixlen:
            errs.append(Cause("Invalid", epath, "must be a strict subset of `cidr`", exc))


def _np_peer(peer: dict[str, Any], path: str, errs: list[Cause], dv: list[Cause], old_cidrs: list[str]) -> None:
    count = 0
    for key in ("podSelector", "namespaceSelector"):
        if peer.get(key) is not None:
            count += 1
            validate_label_selector(peer[key], f"{path}.{key}", errs)
    block = peer.get("ipBlock")
    if block is not None:
        count += 1
        _ip_block(as_dict(block), f"{path}.ipBlock", errs, dv, old_cidrs)
    if count == 0:
        errs.append(Cause("Required", path, "must specify a peer"))
    elif count > 1 and block is not None:
        errs.append(Cause("Forbidden", path, "may not specify both ipBlock and another peer"))


def _np_spec(spec: dict[str, Any], errs: list[Cause], old_cidrs: list[str]) -> None:
    dv: list[Cause] = []
    validate_label_selector(spec.get("podSelector"), "spec.podSelector", errs)
    for direction, peers in (("ingress", "from"), ("egress", "to")):
        for i, rule in enumerate(as_list(spec.get(direction))):
            rule = as_dict(rule)
            rpath = f"spec.{direction}[{i}]"
            for j, port in enumerate(as_list(rule.get("ports"))):
                _np_port(as_dict(port), f"{rpath}.ports[{j}]", errs)
            for j, peer in enumerate(as_list(rule.get(peers))):
                _np_peer(as_dict(peer), f"{rpath}.{peers}[{j}]", errs, dv, old_cidrs)
    types = as_list(spec.get("policyTypes"))
    if len(types) > 2:
        errs.append(Cause("Invalid", "spec.policyTypes", "may not specify more than two policyTypes",
                          go_json(types)))
    else:
        for i, ptype in enumerate(types):
            if ptype not in ("Ingress", "Egress"):
                not_supported(errs, f"spec.policyTypes[{i}]", ptype, ("Ingress", "Egress"))
    errs.extend(dv)


def _np_cidrs(obj: dict[str, Any]) -> list[str]:
    """Every CIDR of the stored policy: an update may keep values that no longer validate."""
    spec = as_dict(obj.get("spec"))
    out: list[str] = []
    for direction, peers in (("ingress", "from"), ("egress", "to")):
        for rule in as_list(spec.get(direction)):
            for peer in as_list(as_dict(rule).get(peers)):
                block = as_dict(as_dict(peer).get("ipBlock"))
                if block:
                    out.append(as_str(block.get("cidr")))
                    out.extend(as_str(c) for c in as_list(block.get("except")))
    return out


def _np_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=namespaced, name_fn=name_is_dns_subdomain)
    _np_spec(as_dict(obj.get("spec")), errs, [])


def _np_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    _np_spec(as_dict(new.get("spec")), errs, _np_cidrs(old))


# ---------------------------------------------------------------- Ingress

def _typed_local_ref(ref: dict[str, Any], path: str, errs: list[Cause], dv: list[Cause] | None) -> None:
    """A TypedLocalObjectReference (Ingress resource backends) or an IngressClass parameters
    reference, whose required kind and name are beta declarative rules (`dv`)."""
    group = ref.get("apiGroup")
    if isinstance(group, str):
        each(errs, f"{path}.apiGroup", group, is_dns1123_subdomain(group))
    for key in ("kind", "name"):
        value = as_str(ref.get(key))
        if not value:
            (dv if dv is not None else errs).append(Cause("Required", f"{path}.{key}", ""))
        else:
            each(errs, f"{path}.{key}", value, validate_path_segment_name(value, False))


def _backend(backend: dict[str, Any], path: str, errs: list[Cause]) -> None:
    resource, service = backend.get("resource"), backend.get("service")
    if resource is not None and service is not None:
        errs.append(Cause("Invalid", path, "cannot set both resource and service backends", ""))
        return
    if resource is not None:
        _typed_local_ref(as_dict(resource), f"{path}.resource", errs, None)
        return
    if service is None:
        errs.append(Cause("Invalid", path, "resource or service backend is required", ""))
        return
    service = as_dict(service)
    name = as_str(service.get("name"))
    if not name:
        errs.append(Cause("Required", f"{path}.service.name", ""))
    else:
        # RelaxedServiceNameValidation: Service names are DNS labels.
        each(errs, f"{path}.service.name", name, name_is_dns_label(name, False))
    port = as_dict(service.get("port"))
    pname, number = as_str(port.get("name")), port.get("number") or 0
    if pname and number:
        errs.append(Cause("Invalid", path, "cannot set both port name & port number", ""))
    elif pname:
        each(errs, f"{path}.service.port.name", pname, is_valid_port_name(pname))
    elif number:
        each(errs, f"{path}.service.port.number", number, is_valid_port_num(number))
    else:
        errs.append(Cause("Required", path, "port name or number is required"))


def _host(host: str, path: str, errs: list[Cause]) -> bool:
    """A rule's host; True when it is a wildcard."""
    if ip.parse_ip_sloppy(host) is not None:
        errs.append(Cause("Invalid", path, "must be a DNS name, not an IP address", host))
    if "*" in host:
        each(errs, path, host, is_wildcard_dns1123_subdomain(host))
        return True
    each(errs, path, host, is_dns1123_subdomain(host))
    return False


_PATH_SEQUENCES = ("//", "/./", "/../", "%2f", "%2F")
_PATH_SUFFIXES = ("/..", "/.")
_PATH_TYPES = ("Exact", "ImplementationSpecific", "Prefix")


def _http_path(p: dict[str, Any], path: str, errs: list[Cause]) -> None:
    ptype = p.get("pathType")
    if ptype is None:
        errs.append(Cause("Required", f"{path}.pathType", "pathType must be specified"))
        return
    value = as_str(p.get("path"))
    if ptype in ("Exact", "Prefix"):
        if not value.startswith("/"):
            errs.append(Cause("Invalid", f"{path}.path", "must be an absolute path", value))
        if value:
            for seq in _PATH_SEQUENCES:
                if seq in value:
                    errs.append(Cause("Invalid", f"{path}.path", f"must not contain '{seq}'", value))
            for suffix in _PATH_SUFFIXES:
                if value.endswith(suffix):
                    errs.append(Cause("Invalid", f"{path}.path", f"cannot end with '{suffix}'", value))
    elif ptype == "ImplementationSpecific":
        if value and not value.startswith("/"):
            errs.append(Cause("Invalid", f"{path}.path", "must be an absolute path", value))
    else:
        not_supported(errs, f"{path}.pathType", ptype, _PATH_TYPES)
    _backend(as_dict(p.get("backend")), f"{path}.backend", errs)


def _rule_value(rule: dict[str, Any], path: str, errs: list[Cause]) -> None:
    http = rule.get("http")
    if http is None:
        return
    paths = as_list(as_dict(http).get("paths"))
    if not paths:
        errs.append(Cause("Required", f"{path}.http.paths", ""))
    for i, p in enumerate(paths):
        _http_path(as_dict(p), f"{path}.http.paths[{i}]", errs)


def _ingress_spec(spec: dict[str, Any], errs: list[Cause], *, old: dict[str, Any] | None) -> None:
    rules, default = as_list(spec.get("rules")), spec.get("defaultBackend")
    if not rules and default is None:
        errs.append(Cause("Invalid", "spec", "either `defaultBackend` or `rules` must be specified",
                          go_json(spec.get("rules"))))
    if default is not None:
        _backend(as_dict(default), "spec.defaultBackend", errs)
    old_spec = as_dict((old or {}).get("spec"))
    lenient_wildcards = any("*" in as_str(as_dict(r).get("host")) and _rule_errors(as_dict(r))
                            for r in as_list(old_spec.get("rules")))
    for i, rule in enumerate(rules):
        rule = as_dict(rule)
        host = as_str(rule.get("host"))
        wildcard = _host(host, f"spec.rules[{i}].host", errs) if host else False
        if not wildcard or not lenient_wildcards:
            _rule_value(rule, f"spec.rules[{i}]", errs)
    lenient_secrets = any(is_dns1123_subdomain(as_str(as_dict(t).get("secretName")))
                          for t in as_list(old_spec.get("tls")) if as_str(as_dict(t).get("secretName")))
    for i, tls in enumerate(as_list(spec.get("tls"))):
        tls = as_dict(tls)
        for j, host in enumerate(as_list(tls.get("hosts"))):
            host = as_str(host)
            hpath = f"spec.tls[{i}].hosts[{j}]"
            each(errs, hpath, host, is_wildcard_dns1123_subdomain(host) if "*" in host else
                 is_dns1123_subdomain(host))
        secret = as_str(tls.get("secretName"))
        if secret and not lenient_secrets:
            each(errs, f"spec.tls[{i}].secretName", secret, is_dns1123_subdomain(secret))
    klass = spec.get("ingressClassName")
    if isinstance(klass, str):
        each(errs, "spec.ingressClassName", klass, name_is_dns_subdomain(klass, False))


def _rule_errors(rule: dict[str, Any]) -> bool:
    found: list[Cause] = []
    _rule_value(rule, "", found)
    return bool(found)


def _ingress_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=namespaced, name_fn=name_is_dns_subdomain)
    spec = as_dict(obj.get("spec"))
    _ingress_spec(spec, errs, old=None)
    annotation = as_dict(meta.get("annotations")).get(_INGRESS_CLASS_ANNOTATION)
    klass = spec.get("ingressClassName")
    if isinstance(annotation, str) and isinstance(klass, str) and annotation != klass:
        errs.append(Cause("Invalid", "annotations." + _INGRESS_CLASS_ANNOTATION,
                          "must match `ingressClassName` when both are specified", annotation))


def _ingress_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    _ingress_spec(as_dict(new.get("spec")), errs, old=old)


def _load_balancer_status(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    """ValidateIngressLoadBalancerStatus (Ingress status writes)."""
    path = "status.loadBalancer"
    old_ips = [as_str(as_dict(i).get("ip")) for i in as_list(as_dict(as_dict(old.get("status"))
                                                                      .get("loadBalancer")).get("ingress"))]
    for i, entry in enumerate(as_list(as_dict(as_dict(new.get("status")).get("loadBalancer")).get("ingress"))):
        entry = as_dict(entry)
        epath = f"{path}.ingress[{i}]"
        address = as_str(entry.get("ip"))
        if address:
            errs.extend(ip.is_valid_ip_for_legacy_field(f"{epath}.ip", address, strict=True,
                                                        valid_old=[o for o in old_ips if o]))
        hostname = as_str(entry.get("hostname"))
        if hostname:
            each(errs, f"{epath}.hostname", hostname, is_dns1123_subdomain(hostname))
            if ip.parse_ip_sloppy(hostname) is not None:
                errs.append(Cause("Invalid", f"{epath}.hostname", "must be a DNS name, not an IP address", hostname))


# ---------------------------------------------------------------- IngressClass

def _ingress_class_spec(spec: dict[str, Any], errs: list[Cause]) -> None:
    dv: list[Cause] = []
    controller = as_str(spec.get("controller"))
    if not controller:
        errs.append(Cause("Required", "spec.controller", ""))
    else:
        if len(controller) > 250:
            too_long(errs, "spec.controller", 250)
        errs.extend(is_domain_prefixed_path("spec.controller", controller))
    params = spec.get("parameters")
    if params is not None:
        params = as_dict(params)
        path = "spec.parameters"
        _typed_local_ref(params, path, errs, dv)
        scope = params.get("scope")
        if scope is None:
            errs.append(Cause("Required", f"{path}.scope", ""))
        elif scope not in ("Cluster", "Namespace"):
            not_supported(errs, f"{path}.scope", scope, ("Cluster", "Namespace"))
        elif scope == "Namespace":
            ns = params.get("namespace")
            if ns is None:
                errs.append(Cause("Required", f"{path}.namespace", "`parameters.scope` is set to 'Namespace'"))
            else:
                each(errs, f"{path}.namespace", as_str(ns), name_is_dns_label(as_str(ns), False))
        elif params.get("namespace") is not None:
            errs.append(Cause("Forbidden", f"{path}.namespace", "`parameters.scope` is set to 'Cluster'"))
    errs.extend(dv)


def _ingress_class_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=False, name_fn=name_is_dns_subdomain)
    _ingress_class_spec(as_dict(obj.get("spec")), errs)


def _ingress_class_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    spec, old_spec = as_dict(new.get("spec")), as_dict(old.get("spec"))
    if spec.get("controller") != old_spec.get("controller"):
        errs.append(Cause("Invalid", "spec.controller", "field is immutable", as_str(spec.get("controller"))))
    _ingress_class_spec(spec, errs)


# ---------------------------------------------------------------- IPAddress

def _ip_address_name(name: str, prefix: bool) -> list[str]:
    """The name is the address itself, in canonical form (generateName makes no sense for it)."""
    return [c.detail for c in ip.is_valid_ip("", name)]


def _parent_ref(spec: dict[str, Any], errs: list[Cause], dv: list[Cause]) -> None:
    ref = spec.get("parentRef")
    if ref is None:
        dv.append(Cause("Required", "spec.parentRef", ""))
        return
    ref, path = as_dict(ref), "spec.parentRef"
    group = as_str(ref.get("group"))
    if group:
        each(errs, f"{path}.group", group, is_dns1123_subdomain(group))
    for key in ("resource", "name"):
        value = as_str(ref.get(key))
        if not value:
            dv.append(Cause("Required", f"{path}.{key}", ""))
        else:
            each(errs, f"{path}.{key}", value, validate_path_segment_name(value, False))
    namespace = as_str(ref.get("namespace"))
    if namespace:
        each(errs, f"{path}.namespace", namespace, validate_path_segment_name(namespace, False))


def _ip_address_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    dv: list[Cause] = []
    validate_object_meta(meta, errs, namespaced=False, name_fn=_ip_address_name)
    _parent_ref(as_dict(obj.get("spec")), errs, dv)
    errs.extend(dv)


def _ip_address_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    dv: list[Cause] = []
    spec = as_dict(new.get("spec"))
    _parent_ref(spec, errs, dv)
    _immutable_dv(dv, "spec.parentRef", spec.get("parentRef"), as_dict(old.get("spec")).get("parentRef"))
    errs.extend(dv)


# ---------------------------------------------------------------- ServiceCIDR

def _service_cidr_spec(spec: dict[str, Any], errs: list[Cause]) -> None:
    path = "spec.cidrs"
    cidrs = as_list(spec.get("cidrs"))
    if not cidrs:
        errs.append(Cause("Required", path, "at least one CIDR required"))
        return
    if len(cidrs) > 2:
        errs.append(Cause("Invalid", path, "may only hold up to 2 values", go_json(spec)))
        return
    for i, cidr in enumerate(cidrs):
        errs.extend(ip.is_valid_cidr(f"{path}[{i}]", as_str(cidr)))
    if len(cidrs) == 2:
        fam = ip.cidr_family(cidrs[0])
        if fam and fam == ip.cidr_family(cidrs[1]):
            errs.append(Cause("Invalid", path, "may specify no more than one IP for each IP family, i.e "
                              "192.168.0.0/24 and 2001:db8::/64", go_json(cidrs)))


def _service_cidr_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=False, name_fn=name_is_dns_subdomain)
    _service_cidr_spec(as_dict(obj.get("spec")), errs)


def _service_cidr_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    spec = as_dict(new.get("spec"))
    cidrs, old_cidrs = as_list(spec.get("cidrs")), as_list(as_dict(old.get("spec")).get("cidrs"))
    if len(cidrs) == len(old_cidrs):
        for i, (a, b) in enumerate(zip(old_cidrs, cidrs, strict=True)):
            if a != b:
                errs.append(Cause("Invalid", f"spec.cidrs[{i}]", "field is immutable", b))
    elif len(old_cidrs) == 1 and len(cidrs) == 2:  # a single-stack range may gain its other family
        if cidrs[0] != old_cidrs[0]:
            errs.append(Cause("Invalid", "spec.cidrs[0]", "field is immutable", cidrs[0]))
        _service_cidr_spec(spec, errs)
    else:
        errs.append(Cause("Invalid", "spec.cidrs", "field is immutable", go_json(spec.get("cidrs"))))


# ---------------------------------------------------------------- EndpointSlice (discovery.k8s.io)

_ADDRESS_TYPES = ("FQDN", "IPv4", "IPv6")


def _endpoints(obj: dict[str, Any], errs: list[Cause], dv: list[Cause]) -> None:
    address_type = obj.get("addressType")
    endpoints = as_list(obj.get("endpoints"))
    if len(endpoints) > 1000:
        too_many(errs, "endpoints", len(endpoints), 1000)
        return
    for i, ep in enumerate(endpoints):
        ep = as_dict(ep)
        path = f"endpoints[{i}]"
        addresses = as_list(ep.get("addresses"))
        if not addresses:
            dv.append(Cause("Required", f"{path}.addresses", ""))
        elif len(addresses) > 100:
            dv.append(Cause("TooMany", f"{path}.addresses", "must have at most 100 items", len(addresses)))
        for j, address in enumerate(addresses):
            apath, address = f"{path}.addresses[{j}]", as_str(address)
            if address_type in ("IPv4", "IPv6"):
                problems = ip.is_valid_ip_for_legacy_field(apath, address, strict=True)
                if problems:
                    errs.extend(problems)
                else:
                    if ip.ip_family(address) != int(address_type[-1]):
                        errs.append(Cause("Invalid", apath, f"must be an {address_type} address", address))
                    errs.extend(_endpoint_ip(address, apath))
            elif address_type == "FQDN":
                errs.extend(is_fully_qualified_domain_name(apath, address))
        node = ep.get("nodeName")
        if isinstance(node, str):
            each(errs, f"{path}.nodeName", node, name_is_dns_subdomain(node, False))
        topology = as_dict(ep.get("deprecatedTopology"))
        if len(topology) > 16:
            too_many(errs, f"{path}.deprecatedTopology", len(topology), 16)
        validate_labels(topology, f"{path}.deprecatedTopology", errs)
        hostname = ep.get("hostname")
        if isinstance(hostname, str):
            each(errs, f"{path}.hostname", hostname, is_dns1123_label(hostname))
        if ep.get("hints") is not None:
            _hints(as_dict(ep.get("hints")), f"{path}.hints", errs)


def _endpoint_ip(address: str, path: str) -> list[Cause]:
    """apivalidation.ValidateEndpointIP: addresses an endpoint may not point at."""
    addr = ip.parse_ip_sloppy(address)
    if addr is None:
        return []
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    out = []
    if addr.is_unspecified:
        out.append(Cause("Invalid", path, f"may not be unspecified ({address})", address))
    if addr.is_loopback:
        out.append(Cause("Invalid", path, "may not be in the loopback range (127.0.0.0/8, ::1/128)", address))
    if addr.is_link_local and not addr.is_multicast:
        out.append(Cause("Invalid", path, "may not be in the link-local range (169.254.0.0/16, fe80::/10)",
                         address))
    link_local_multicast = (int(addr) >> 8 == 0xE00000) if addr.version == 4 else \
        ((int(addr) >> 112) & 0xFF0F == 0xFF02)
    if link_local_multicast:
        out.append(Cause("Invalid", path, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)",
                         address))
    return out


def _hints(hints: dict[str, Any], path: str, errs: list[Cause]) -> None:
    for key, check in (("forZones", is_label_value), ("forNodes", lambda n: name_is_dns_subdomain(n, False))):
        items = as_list(hints.get(key))
        if len(items) > 8:
            too_many(errs, f"{path}.{key}", len(items), 8)
            continue
        seen: set[str] = set()
        for i, item in enumerate(items):
            name = as_str(as_dict(item).get("name"))
            npath = f"{path}.{key}[{i}].name"
            if name in seen:
                errs.append(Cause("Duplicate", npath, "", name))
            seen.add(name)
            each(errs, npath, name, check(name))


def _endpoint_ports(obj: dict[str, Any], errs: list[Cause]) -> None:
    ports = as_list(obj.get("ports"))
    if len(ports) > 20000:
        too_many(errs, "ports", len(ports), 20000)
        return
    names: set[str] = set()
    for i, port in enumerate(ports):
        port = as_dict(port)
        path = f"ports[{i}]"
        name = as_str(port.get("name"))
        if name:
            each(errs, f"{path}.name", name, is_dns1123_label(name))
        if name in names:
            errs.append(Cause("Duplicate", f"{path}.name", "", name))
        names.add(name)
        proto = port.get("protocol")
        if proto is None:
            errs.append(Cause("Required", f"{path}.protocol", ""))
        elif proto not in _PROTOCOLS:
            not_supported(errs, f"{path}.protocol", proto, ("SCTP", "TCP", "UDP"))
        app = port.get("appProtocol")
        if isinstance(app, str):
            validate_qualified_name(app, f"{path}.appProtocol", errs)


def _address_type(obj: dict[str, Any], dv: list[Cause]) -> None:
    value = obj.get("addressType")
    if not value:
        dv.append(Cause("Required", "addressType", ""))
    elif value not in _ADDRESS_TYPES:
        not_supported(dv, "addressType", value, _ADDRESS_TYPES)


def _slice_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    dv: list[Cause] = []
    validate_object_meta(meta, errs, namespaced=namespaced, name_fn=name_is_dns_subdomain)
    _address_type(obj, dv)
    _endpoints(obj, errs, dv)
    _endpoint_ports(obj, errs)
    errs.extend(dv)


def _slice_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    dv: list[Cause] = []
    _address_type(new, dv)
    _endpoints(new, errs, dv)
    _endpoint_ports(new, errs)
    _immutable_dv(dv, "addressType", new.get("addressType"), old.get("addressType"))
    errs.extend(dv)


RULES = {
    ("networking.k8s.io", "NetworkPolicy"): Rules(_np_create, _np_update),
    ("networking.k8s.io", "Ingress"): Rules(_ingress_create, _ingress_update, _load_balancer_status),
    ("networking.k8s.io", "IngressClass"): Rules(_ingress_class_create, _ingress_class_update),
    ("networking.k8s.io", "IPAddress"): Rules(_ip_address_create, _ip_address_update),
    ("networking.k8s.io", "ServiceCIDR"): Rules(_service_cidr_create, _service_cidr_update),
    ("discovery.k8s.io", "EndpointSlice"): Rules(_slice_create, _slice_update),
}
