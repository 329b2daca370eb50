"""cp/strategies/service.py: clusterIP/clusterIPs kept in step, allocated values carried over, fields of
the old type dropped (upstream's normalizeClusterIPs, patchAllocatedValues, dropTypeDependentFields)."""

from __future__ import annotations

from typing import Any

from cp.strategies import service


def svc(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "web"}, "spec": spec}


def test_cluster_ip_alone_fills_cluster_ips() -> None:
    obj = svc(clusterIP="10.0.0.5")
    service.normalize_cluster_ips(obj, None)
    assert obj["spec"]["clusterIPs"] == ["10.0.0.5"]


def test_clearing_cluster_ip_clears_cluster_ips() -> None:
    old = svc(type="ClusterIP", clusterIP="10.0.0.5", clusterIPs=["10.0.0.5"])
    new = svc(type="ClusterIP", clusterIP="", clusterIPs=["10.0.0.5"])
    service.normalize_cluster_ips(new, old)
    assert "clusterIPs" not in new["spec"]


def test_patch_keeps_allocated_values_by_port_name() -> None:
    old = svc(type="NodePort", clusterIP="10.0.0.5", clusterIPs=["10.0.0.5"],
              ports=[{"name": "http", "port": 80, "nodePort": 30080}, {"name": "dns", "port": 53, "nodePort": 30053}])
    new = svc(type="NodePort", ports=[{"name": "dns", "port": 5353}, {"name": "http", "port": 8080}])
    service.prepare_service_update(new, old)
    assert new["spec"]["clusterIP"] == "10.0.0.5" and new["spec"]["clusterIPs"] == ["10.0.0.5"]
    assert [p["nodePort"] for p in new["spec"]["ports"]] == [30053, 30080]


def test_a_port_in_use_elsewhere_is_not_patched_in() -> None:
    old = svc(type="NodePort", ports=[{"name": "a", "port": 80, "nodePort": 30080}])
    new = svc(type="NodePort", ports=[{"name": "b", "port": 81, "nodePort": 30080}, {"name": "a", "port": 80}])
    service.patch_allocated_values(new, old)
    assert "nodePort" not in new["spec"]["ports"][1]


def test_type_change_drops_what_the_old_type_had() -> None:
    old = svc(type="LoadBalancer", clusterIP="10.0.0.5", clusterIPs=["10.0.0.5"], ipFamilies=["IPv4"],
              ipFamilyPolicy="SingleStack", externalTrafficPolicy="Local", healthCheckNodePort=31000,
              allocateLoadBalancerNodePorts=True, ports=[{"port": 80, "nodePort": 30080}])
    new = svc(**{**old["spec"], "type": "ExternalName", "externalName": "example.com"})
    new["spec"]["ports"] = [{"port": 80, "nodePort": 30080}]
    service.drop_type_dependent_fields(new, old)
    spec = new["spec"]
    for gone in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy", "externalTrafficPolicy",
                 "healthCheckNodePort", "allocateLoadBalancerNodePorts"):
        assert gone not in spec, gone
    assert spec["ports"] == [{"port": 80}]


def test_changed_values_stay_for_validation_to_report() -> None:
    old = svc(type="NodePort", ports=[{"port": 80, "nodePort": 30080}])
    new = svc(type="ClusterIP", ports=[{"port": 80, "nodePort": 30081}])
    service.drop_type_dependent_fields(new, old)
    assert new["spec"]["ports"] == [{"port": 80, "nodePort": 30081}]


def test_node_ports_collects_the_health_check_port() -> None:
    assert service.node_ports({"ports": [{"nodePort": 30080}, {"port": 1}], "healthCheckNodePort": 31000}) == [
        30080, 31000]
