"""cp/validation/service.py: ValidateService / ValidateServiceUpdate with upstream's paths and messages,
and the Service strategy's update preparation (cp/strategies/service.py)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.cp.validation.rules import create_errors, update_errors


def service(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"selector": {"app": "web"}, "ports": [{"port": 80}]}
    body.update(spec)
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}, "spec": body}


def allocated(**spec: Any) -> dict[str, Any]:
    """As stored after allocation."""
    obj = service(**spec)
    obj["spec"].setdefault("clusterIP", "10.0.0.10")
    obj["spec"].setdefault("clusterIPs", [obj["spec"]["clusterIP"]])
    obj["spec"].setdefault("ipFamilies", ["IPv4"])
    obj["spec"].setdefault("ipFamilyPolicy", "SingleStack")
    return obj


@pytest.mark.parametrize("obj", [
    service(),
    allocated(),
    service(clusterIP="None", ports=[]),
    service(type="ExternalName", externalName="db.example.com.", ports=[], selector=None),
    allocated(type="NodePort", ports=[{"port": 80, "nodePort": 30080}]),
    allocated(type="LoadBalancer", externalTrafficPolicy="Local", healthCheckNodePort=31000),
    service(ports=[{"name": "http", "port": 80}, {"name": "dns", "port": 53, "protocol": "UDP"}]),
])
def test_valid(obj: dict[str, Any]) -> None:
    assert create_errors(obj) == []


@pytest.mark.parametrize(("obj", "expected"), [
    (service(ports=[]), ["spec.ports: Required value"]),
    (service(ports=[{"port": 80}, {"port": 81}]),
     ["spec.ports[0].name: Required value", "spec.ports[1].name: Required value"]),
    (service(ports=[{"name": "a", "port": 80}, {"name": "a", "port": 80}]),
     ['spec.ports[1].name: Duplicate value: "a"',
      'spec.ports[1]: Duplicate value: core.ServicePort{Name:"", Protocol:"TCP", AppProtocol:(*string)(nil), '
      'Port:80, TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:""}, NodePort:0}']),
    (service(ports=[{"port": 0}]), ["spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
                                    "spec.ports[0].targetPort: Invalid value: 0: must be between 1 and 65535, inclusive"]),
    (service(ports=[{"port": 80, "nodePort": 30080}]),
     ["spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"]),
    (service(type="ExternalName", ports=[]), ["spec.externalName: Required value"]),
    (service(type="ExternalName", externalName="Bad_Name", ports=[]),
     ['spec.externalName: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case '
      "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
      "'example.com', regex used for validation is "
      "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"]),
    (service(type="ExternalName", externalName="db.example.com", clusterIP="10.0.0.3"),
     ["spec.clusterIPs: Forbidden: may not be set for ExternalName services"]),
    (service(type="NodePort", clusterIP="None"),
     ["spec.clusterIPs[0]: Invalid value: \"None\": may not be set to 'None' for NodePort services"]),
    (service(clusterIP="10.0.0.300"),
     ['spec.clusterIPs[0]: Invalid value: "10.0.0.300": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)']),
    (service(type="Funny"),
     ['spec.type: Unsupported value: "Funny": supported values: "ClusterIP", "ExternalName", "LoadBalancer", '
      '"NodePort"']),
    (service(externalTrafficPolicy="Local"),
     ['spec.externalTrafficPolicy: Invalid value: "Local": may only be set for externally-accessible services']),
    (service(healthCheckNodePort=31000),
     ["spec.healthCheckNodePort: Invalid value: 31000: may only be set when `type` is 'LoadBalancer' and "
      "`externalTrafficPolicy` is 'Local'"]),
    (service(type="LoadBalancer", externalTrafficPolicy="Local"), ["spec.healthCheckNodePort: Required value"]),
    (service(externalIPs=["127.0.0.1"]),
     ['spec.externalIPs[0]: Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)']),
])
def test_invalid(obj: dict[str, Any], expected: list[str]) -> None:
    assert create_errors(obj) == expected


def test_name_is_a_dns1035_label() -> None:
    obj = service()
    obj["metadata"]["name"] = "1web"
    assert create_errors(obj)[0].startswith('metadata.name: Invalid value: "1web": a DNS-1035 label')


def test_cluster_ip_may_not_change() -> None:
    old = allocated()
    new = copy.deepcopy(old)
    new["spec"]["clusterIP"] = "10.0.0.11"
    assert update_errors(new, old) == [
        'spec.clusterIPs[0]: Invalid value: []string{"10.0.0.11"}: may not change once set']


def test_update_without_cluster_ip_keeps_the_allocated_one() -> None:
    old = allocated(type="NodePort", ports=[{"name": "http", "port": 80, "nodePort": 30080}])
    new = service(type="NodePort", ports=[{"name": "http", "port": 80}])
    assert update_errors(new, old) == []


def test_type_change_to_external_name_drops_cluster_ips() -> None:
    old = allocated()
    new = copy.deepcopy(old)
    new["spec"].update(type="ExternalName", externalName="example.com")
    assert update_errors(new, old) == []


def test_health_check_node_port_is_immutable() -> None:
    old = allocated(type="LoadBalancer", externalTrafficPolicy="Local", healthCheckNodePort=31000)
    new = copy.deepcopy(old)
    new["spec"]["healthCheckNodePort"] = 31001
    assert update_errors(new, old) == ["spec.healthCheckNodePort: Forbidden: field is immutable"]
