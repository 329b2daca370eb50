"""Printers of networking.k8s.io and discovery.k8s.io: Ingresses, IngressClasses, NetworkPolicies,
IPAddresses, ServiceCIDRs and EndpointSlices (upstream's `printIngress`, `printEndpointSlice`, ...).
Pure; no I/O."""

from __future__ import annotations

from typing import Any

from cp.printers.common import AGE_COL, NAME_COL, E, Obj, Printer, col, selector_format, since

__all__ = ["PRINTERS"]


def _hosts(rules: Any) -> str:
    """`formatHosts`: up to three rule hosts, "*" when none names one."""
    shown: list[str] = []
    more = False
    for rule in rules or ():
        if len(shown) == 3:
            more = True
        if not more and rule.get("host"):
            shown.append(rule["host"])
    if not shown:
        return "*"
    text = ",".join(shown)
    return f"{text} + {len(rules) - 3} more..." if more else text


def _address(status: Obj) -> str:
    seen: set[str] = set()
    for ing in (status.get("loadBalancer") or E).get("ingress") or ():
        if ing.get("ip"):
            seen.add(ing["ip"])
        elif ing.get("hostname"):
            seen.add(ing["hostname"])
    return ",".join(sorted(seen))


def _ingress_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or E
    spec = o.get("spec") or E
    klass = spec.get("ingressClassName")
    return [
        meta.get("name", ""),
        "<none>" if klass is None else klass,
        _hosts(spec.get("rules")),
        _address(o.get("status") or E),
        "80, 443" if spec.get("tls") else "80",
        since(meta.get("creationTimestamp")),
    ]


def _ingress_class_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or E
    spec = o.get("spec") or E
    params = spec.get("parameters")
    text = "<none>"
    if params is not None:
        text = params.get("kind") or ""
        if params.get("apiGroup") is not None:
            text += "." + params["apiGroup"]
        text += "/" + (params.get("name") or "")
    return [meta.get("name", ""), spec.get("controller") or "", text, since(meta.get("creationTimestamp"))]


def _network_policy_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or E
    return [meta.get("name", ""), selector_format((o.get("spec") or E).get("podSelector") or {}),
            since(meta.get("creationTimestamp"))]


def _ip_address_row(o: Obj) -> list[Any]:
    # Upstream's row carries the age although the table has no Age column; so does this one.
    meta = o.get("metadata") or E
    ref = (o.get("spec") or E).get("parentRef")
    parent = "<none>"
    if ref is not None:
        group, resource = ref.get("group") or "", ref.get("resource") or ""
        parent = (f"{resource}.{group}" if group else resource).lower()
        if ref.get("namespace"):
            parent += "/" + ref["namespace"]
        parent += "/" + (ref.get("name") or "")
    return [meta.get("name", ""), parent, since(meta.get("creationTimestamp"))]


def _service_cidr_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or E
    return [meta.get("name", ""), ",".join((o.get("spec") or E).get("cidrs") or ()),
            since(meta.get("creationTimestamp"))]


def _with_more(shown: list[str], *, more: bool, count: int) -> str:
    """`listWithMoreString` (at most three shown)."""
    text = ",".join(shown)
    if more:
        return f"{text} + {count - 3} more..."
    return text or "<unset>"


def _slice_ports(ports: Any) -> str:
    shown: list[str] = []
    more = False
    count = 0
    for p in ports or ():
        if len(shown) < 3:
            if p.get("port") is not None:
                shown.append(str(p["port"]))
            elif p.get("name") is not None:
                shown.append(p["name"])
            else:
                shown.append("*")
        elif len(shown) == 3:
            more = True
        count += 1
    return _with_more(shown, more=more, count=count)


def _slice_endpoints(endpoints: Any) -> str:
    shown: list[str] = []
    more = False
    count = 0
    for ep in endpoints or ():
        for address in ep.get("addresses") or ():
            if len(shown) < 3:
                shown.append(address)
            elif len(shown) == 3:
                more = True
            count += 1
    return _with_more(shown, more=more, count=count)


def _endpoint_slice_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or E
    return [meta.get("name", ""), o.get("addressType") or "", _slice_ports(o.get("ports")),
            _slice_endpoints(o.get("endpoints")), since(meta.get("creationTimestamp"))]


PRINTERS: dict[str, Printer] = {
    "Ingress": Printer([
        NAME_COL,
        col("Class", "string", "Name of the IngressClass of the ingress."),
        col("Hosts", "string", "Hosts the ingress rules match, up to three."),
        col("Address", "string", "Ingress points of the load balancer."),
        col("Ports", "string", "Ports the ingress opens (443 with TLS)."),
        AGE_COL,
    ], _ingress_row),
    "IngressClass": Printer([
        NAME_COL,
        col("Controller", "string", "Controller that implements the class."),
        col("Parameters", "string", "Resource with the class's parameters, as kind.group/name."),
        AGE_COL,
    ], _ingress_class_row),
    "NetworkPolicy": Printer([
        NAME_COL,
        col("Pod-Selector", "string", "Label selector of the pods the policy applies to."),
        AGE_COL,
    ], _network_policy_row),
    "IPAddress": Printer([
        NAME_COL,
        col("ParentRef", "string", "The object the address is allocated to, as resource.group[/namespace]/name."),
    ], _ip_address_row),
    "ServiceCIDR": Printer([
        NAME_COL,
        col("CIDRs", "string", "The ranges of the ServiceCIDR."),
        AGE_COL,
    ], _service_cidr_row),
    "EndpointSlice": Printer([
        NAME_COL,
        col("AddressType", "string", "IPv4, IPv6 or FQDN."),
        col("Ports", "string", "Ports of the slice, up to three."),
        col("Endpoints", "string", "Endpoint addresses, up to three."),
        AGE_COL,
    ], _endpoint_slice_row),
}
