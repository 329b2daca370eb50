"""cp/defaulting/service.py: SetDefaults_Service."""

from __future__ import annotations

from typing import Any

from tests.cp.defaulting.support import defaulted, twice_is_once


def service(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}, "spec": spec}


def test_cluster_ip_defaults() -> None:
    spec = defaulted(service(ports=[{"port": 80}, {"port": 443, "targetPort": "https", "protocol": "UDP"}]))["spec"]
    assert spec["type"] == "ClusterIP"
    assert spec["sessionAffinity"] == "None"
    assert spec["internalTrafficPolicy"] == "Cluster"
    assert "externalTrafficPolicy" not in spec
    assert spec["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80},
                             {"port": 443, "targetPort": "https", "protocol": "UDP"}]


def test_node_port_and_load_balancer_defaults() -> None:
    spec = defaulted(service(type="NodePort", ports=[{"port": 80}]))["spec"]
    assert spec["externalTrafficPolicy"] == "Cluster"
    assert "allocateLoadBalancerNodePorts" not in spec
    spec = defaulted(service(type="LoadBalancer", ports=[{"port": 80}]))["spec"]
    assert spec["externalTrafficPolicy"] == "Cluster"
    assert spec["allocateLoadBalancerNodePorts"] is True


def test_session_affinity() -> None:
    spec = defaulted(service(sessionAffinity="ClientIP", ports=[{"port": 80}]))["spec"]
    assert spec["sessionAffinityConfig"] == {"clientIP": {"timeoutSeconds": 10800}}
    spec = defaulted(service(sessionAffinityConfig={"clientIP": {"timeoutSeconds": 5}}, ports=[{"port": 80}]))["spec"]
    assert "sessionAffinityConfig" not in spec


def test_external_name_gets_no_traffic_policies() -> None:
    spec = defaulted(service(type="ExternalName", externalName="example.com"))["spec"]
    assert "internalTrafficPolicy" not in spec and "externalTrafficPolicy" not in spec


def test_idempotent() -> None:
    assert twice_is_once(service(type="LoadBalancer", ports=[{"port": 80}], sessionAffinity="ClientIP"))
