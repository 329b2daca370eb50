"""The Service strategy (`pkg/registry/core/service/strategy.go`) and the pure parts of its REST storage
(`pkg/registry/core/service/storage/storage.go`): `clusterIP` and `clusterIPs` kept in step, values the
server allocated carried over when an update leaves them out, fields of the old type dropped on a type
change. What is allocated is the server's (`api/services.py`). Pure.
"""

from __future__ import annotations

from typing import Any

from cp.strategies.model import Obj, Strategy

NODE_PORT_TYPES = ("NodePort", "LoadBalancer")


def _spec(obj: Obj) -> dict[str, Any]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = {}
        obj["spec"] = spec
    return spec


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def needs_cluster_ip(spec: dict[str, Any]) -> bool:
    return spec.get("type") in ("ClusterIP", *NODE_PORT_TYPES)


def needs_node_ports(spec: dict[str, Any]) -> bool:
    return spec.get("type") in NODE_PORT_TYPES


def needs_health_check_port(spec: dict[str, Any]) -> bool:
    return spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"


def should_allocate_node_ports(spec: dict[str, Any]) -> bool:
    """NodePort services always get node ports; LoadBalancers unless `allocateLoadBalancerNodePorts` is false."""
    if spec.get("type") == "NodePort":
        return True
    return spec.get("type") == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is not False


def node_ports(spec: dict[str, Any]) -> list[int]:
    """Every node port a service holds: its ports' and its health check port (upstream's
    `collectServiceNodePorts` and the health check one)."""
    out = [int(p["nodePort"]) for p in _list(spec.get("ports"))
           if isinstance(p, dict) and isinstance(p.get("nodePort"), int) and p["nodePort"]]
    health = spec.get("healthCheckNodePort")
    if isinstance(health, int) and health:
        out.append(health)
    return out


def normalize_cluster_ips(new: Obj, old: Obj | None) -> None:
    """`normalizeClusterIPs`: a client may manage either `clusterIP` or `clusterIPs`."""
    spec = _spec(new)
    cluster_ip = spec.get("clusterIP") or ""
    ips = _list(spec.get("clusterIPs"))
    if old is None:
        if cluster_ip and not ips:
            spec["clusterIPs"] = [cluster_ip]
        return
    old_spec = _spec(old)
    old_ip = old_spec.get("clusterIP") or ""
    old_ips = _list(old_spec.get("clusterIPs"))
    if cluster_ip != old_ip and ips == old_ips:  # the client changed clusterIP only
        if not cluster_ip:
            spec.pop("clusterIPs", None)
        elif ips:
            spec["clusterIPs"] = [cluster_ip, *ips[1:]]
        else:
            spec["clusterIPs"] = [cluster_ip]
    elif cluster_ip == old_ip and ips != old_ips and ips:  # clusterIPs only
        spec["clusterIP"] = ips[0]


def patch_allocated_values(new: Obj, old: Obj) -> None:
    """`patchAllocatedValues`: an update that leaves out what was allocated keeps it (a PUT of an object
    read before, or written without its cluster IP, keeps its IP and node ports)."""
    spec, old_spec = _spec(new), _spec(old)
    if needs_cluster_ip(old_spec) and needs_cluster_ip(spec):
        if not spec.get("clusterIP") and old_spec.get("clusterIP"):
            spec["clusterIP"] = old_spec["clusterIP"]
        if not _list(spec.get("clusterIPs")) and _list(old_spec.get("clusterIPs")):
            spec["clusterIPs"] = list(old_spec["clusterIPs"])
    if needs_node_ports(old_spec) and needs_node_ports(spec):
        old_ports = [p for p in _list(old_spec.get("ports")) if isinstance(p, dict)]
        new_ports = [p for p in _list(spec.get("ports")) if isinstance(p, dict)]
        used = {p.get("nodePort") for p in old_ports} & {p.get("nodePort") for p in new_ports}
        by_name = {p.get("name") or "": p.get("nodePort") for p in old_ports}
        for port in new_ports:
            if not port.get("nodePort"):
                value = by_name.get(port.get("name") or "")
                if value and value not in used:
                    port["nodePort"] = value
    if needs_health_check_port(old_spec) and needs_health_check_port(spec) \
            and not spec.get("healthCheckNodePort"):
        spec["healthCheckNodePort"] = old_spec.get("healthCheckNodePort")


def drop_type_dependent_fields(new: Obj, old: Obj) -> None:
    """`dropTypeDependentFields`: on a type change, what only the old type had goes, unless the client
    changed it (then validation reports it)."""
    spec, old_spec = _spec(new), _spec(old)
    if needs_cluster_ip(old_spec) and not needs_cluster_ip(spec):
        if spec.get("clusterIP") == old_spec.get("clusterIP") and spec.get("clusterIPs") == old_spec.get("clusterIPs"):
            spec.pop("clusterIP", None)
            spec.pop("clusterIPs", None)
        if spec.get("ipFamilies") == old_spec.get("ipFamilies"):
            spec.pop("ipFamilies", None)
        if spec.get("ipFamilyPolicy") == old_spec.get("ipFamilyPolicy"):
            spec.pop("ipFamilyPolicy", None)
    if needs_node_ports(old_spec) and not needs_node_ports(spec) \
            and set(_port_node_ports(spec)) <= set(_port_node_ports(old_spec)):
        for port in _list(spec.get("ports")):
            if isinstance(port, dict):
                port.pop("nodePort", None)
    if needs_health_check_port(old_spec) and not needs_health_check_port(spec) \
            and spec.get("healthCheckNodePort") == old_spec.get("healthCheckNodePort"):
        spec.pop("healthCheckNodePort", None)
    if spec.get("type") != "LoadBalancer":
        for field in ("allocateLoadBalancerNodePorts", "loadBalancerClass"):
            if field in spec and spec.get(field) == old_spec.get(field):
                spec.pop(field, None)
    externally = spec.get("type") in NODE_PORT_TYPES or (spec.get("type") == "ClusterIP" and spec.get("externalIPs"))
    if not externally and spec.get("externalTrafficPolicy") == old_spec.get("externalTrafficPolicy"):
        spec.pop("externalTrafficPolicy", None)


def _port_node_ports(spec: dict[str, Any]) -> list[Any]:
    return [p.get("nodePort") for p in _list(spec.get("ports")) if isinstance(p, dict) and p.get("nodePort")]


def prepare_service_update(new: Obj, old: Obj) -> None:
    """What an update does before allocation and validation (idempotent)."""
    patch_allocated_values(new, old)
    normalize_cluster_ips(new, old)
    drop_type_dependent_fields(new, old)


def _prepare_for_update(new: Obj, old: Obj, _now: float, subresource: str) -> None:
    if not subresource:
        prepare_service_update(new, old)


def _prepare_for_create(obj: Obj, _now: float) -> None:
    normalize_cluster_ips(obj, None)


STRATEGIES: dict[tuple[str, str], Strategy] = {
    ("", "Service"): Strategy(initial_status=lambda _obj: {"loadBalancer": {}},
                              prepare_for_create=_prepare_for_create, prepare_for_update=_prepare_for_update),
}
