"""cp/defaulting/networking.py: NetworkPolicy policy types and port protocols, IngressClass parameter
scope, EndpointSlice ports (pkg/apis/networking/v1 and discovery/v1 defaults.go)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.cp.defaulting.support import defaulted, twice_is_once


def policy(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "p"}, "spec": spec}


@pytest.mark.parametrize(("spec", "types"), [
    ({}, ["Ingress"]),
    ({"ingress": [{}]}, ["Ingress"]),
    ({"egress": [{}]}, ["Ingress", "Egress"]),
    ({"egress": [{}], "policyTypes": ["Egress"]}, ["Egress"]),
])
def test_policy_types(spec: dict[str, Any], types: list[str]) -> None:
    out = defaulted(policy(**spec))["spec"]
    assert out["policyTypes"] == types
    assert out["podSelector"] == {}


def test_policy_ports_default_to_tcp() -> None:
    out = defaulted(policy(ingress=[{"ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}]}],
                           egress=[{"ports": [{}]}]))["spec"]
    assert out["ingress"][0]["ports"] == [{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]
    assert out["egress"][0]["ports"] == [{"protocol": "TCP"}]


def test_ingress_class_parameters_are_cluster_scoped_by_default() -> None:
    obj = {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": {"name": "c"},
           "spec": {"controller": "example.com/c", "parameters": {"kind": "P", "name": "p"}}}
    assert defaulted(obj)["spec"]["parameters"]["scope"] == "Cluster"
    obj["spec"].pop("parameters")
    assert "parameters" not in defaulted(obj)["spec"]


def test_endpoint_slice_ports() -> None:
    obj = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "s"},
           "addressType": "IPv4", "endpoints": [], "ports": [{"port": 80}, {"name": "dns", "protocol": "UDP"}]}
    assert defaulted(obj)["ports"] == [{"port": 80, "name": "", "protocol": "TCP"},
                                       {"name": "dns", "protocol": "UDP"}]
    assert twice_is_once(obj)
