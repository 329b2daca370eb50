"""Defaulting of networking.k8s.io/v1 and discovery.k8s.io/v1 kinds.

Sources of behaviour (read, not copied): `pkg/apis/networking/v1/defaults.go` (NetworkPolicy ports and
policy types, IngressClass parameter scope) and `pkg/apis/discovery/v1/defaults.go` (EndpointSlice
ports), plus what Go's encoder writes for non-pointer structs. Pure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cp.defaulting.fields import child, dicts, setdefault, sub


def _network_policy(obj: dict[str, Any]) -> None:
    spec = child(obj, "spec")
    child(spec, "podSelector")  # metav1.LabelSelector, not a pointer: always written
    for direction in ("ingress", "egress"):
        for rule in dicts(spec.get(direction)):
            for port in dicts(rule.get("ports")):
                setdefault(port, "protocol", "TCP")
    if not spec.get("policyTypes"):
        # Every policy affects ingress; one with egress rules affects egress too.
        spec["policyTypes"] = ["Ingress", "Egress"] if spec.get("egress") else ["Ingress"]


def _ingress_class(obj: dict[str, Any]) -> None:
    spec = sub(obj, "spec")
    params = sub(spec, "parameters") if spec is not None else None
    if params is not None:
        setdefault(params, "scope", "Cluster")


def _ingress(obj: dict[str, Any]) -> None:
    child(obj, "spec")


def _endpoint_slice(obj: dict[str, Any]) -> None:
    for port in dicts(obj.get("ports")):
        setdefault(port, "name", "")
        setdefault(port, "protocol", "TCP")


DEFAULTERS: dict[tuple[str, str, str], Callable[[dict[str, Any]], None]] = {
    ("networking.k8s.io", "v1", "NetworkPolicy"): _network_policy,
    ("networking.k8s.io", "v1", "IngressClass"): _ingress_class,
    ("networking.k8s.io", "v1", "Ingress"): _ingress,
    ("discovery.k8s.io", "v1", "EndpointSlice"): _endpoint_slice,
}
