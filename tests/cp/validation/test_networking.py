"""cp/validation/networking.py: NetworkPolicy, Ingress, IngressClass, IPAddress, ServiceCIDR and
EndpointSlice rules, with upstream's paths, types and messages (pkg/apis/networking/validation,
pkg/apis/discovery/validation; beta declarative rules of k8s.io/api 1.37 after the hand-written ones)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.cp.validation.rules import changed, create_errors, update_errors

LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
             "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
             "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")


def policy(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "p"},
            "spec": {"podSelector": {}, **spec}}


def ingress(**spec: Any) -> dict[str, Any]:
    body = {"rules": [{"host": "web.example.com", "http": {"paths": [
        {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}
    body.update(spec)
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "web"}, "spec": body}


def ingress_class(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": {"name": "nginx"},
            "spec": {"controller": "k8s.io/ingress-nginx", **spec}}


def endpoint_slice(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "s"},
            "addressType": "IPv4", "endpoints": [{"addresses": ["10.1.2.3"]}], **fields}


def rule(**peer: Any) -> list[dict[str, Any]]:
    return [{"from": [peer]}]


@pytest.mark.parametrize(("spec", "expected"), [
    ({"ingress": [{"ports": [{"port": "-web"}]}]},
     ['spec.ingress[0].ports[0].port: Invalid value: "-web": must not begin or end with a hyphen']),
    ({"ingress": [{"ports": [{"port": "web", "endPort": 90}]}]},
     ["spec.ingress[0].ports[0].endPort: Invalid value: 90: may not be specified when `port` is non-numeric"]),
    ({"egress": [{"ports": [{"port": 90, "endPort": 80}]}]},
     ["spec.egress[0].ports[0].endPort: Invalid value: 80: must be greater than or equal to `port`"]),
    ({"ingress": [{"ports": [{"port": 0}]}]},
     ["spec.ingress[0].ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive"]),
    ({"ingress": [{"ports": [{"protocol": "ICMP"}]}]},
     ['spec.ingress[0].ports[0].protocol: Unsupported value: "ICMP": supported values: "TCP", "UDP", "SCTP"']),
    ({"ingress": rule()}, ["spec.ingress[0].from[0]: Required value: must specify a peer"]),
    ({"ingress": rule(podSelector={}, ipBlock={"cidr": "10.0.0.0/8"})},
     ["spec.ingress[0].from[0]: Forbidden: may not specify both ipBlock and another peer"]),
    ({"ingress": rule(ipBlock={"except": ["10.0.0.0/8"]})}, ["spec.ingress[0].from[0].ipBlock.cidr: Required value"]),
    ({"ingress": rule(ipBlock={"cidr": "10.0.0.0/16", "except": ["10.0.0.0/8", "10.0.1.0/24"]})},
     ['spec.ingress[0].from[0].ipBlock.except[0]: Invalid value: "10.0.0.0/8": must be a strict subset of `cidr`']),
    ({"ingress": rule(ipBlock={"cidr": "10.0.0.1/8"})},
     ['spec.ingress[0].from[0].ipBlock.cidr: Invalid value: "10.0.0.1/8": must not have bits set beyond the prefix '
      "length"]),
    ({"policyTypes": ["Ingress", "Both"]},
     ['spec.policyTypes[1]: Unsupported value: "Both": supported values: "Ingress", "Egress"']),
    ({"policyTypes": ["Ingress", "Egress", "Ingress"]},
     ['spec.policyTypes: Invalid value: ["Ingress","Egress","Ingress"]: may not specify more than two policyTypes']),
])
def test_network_policy(spec: dict[str, Any], expected: list[str]) -> None:
    assert create_errors(policy(**spec)) == expected


def test_network_policy_update_keeps_stored_cidrs() -> None:
    """A CIDR the stored policy already had is not judged again (it may predate stricter rules)."""
    old = policy(ingress=rule(ipBlock={"cidr": "10.0.0.1/8"}))
    new = changed(old, lambda o: o["spec"]["ingress"].append({"from": [{"ipBlock": {"cidr": "10.1.0.1/16"}}]}))
    assert update_errors(new, old) == [
        'spec.ingress[1].from[0].ipBlock.cidr: Invalid value: "10.1.0.1/16": must not have bits set beyond the prefix '
        "length"]


@pytest.mark.parametrize(("spec", "expected"), [
    ({"rules": None}, ["spec: Invalid value: null: either `defaultBackend` or `rules` must be specified"]),
    ({"rules": [{"host": "10.0.0.1"}]}, ['spec.rules[0].host: Invalid value: "10.0.0.1": must be a DNS name, not an '
                                        "IP address"]),
    ({"rules": [{"host": "*.*.example.com"}]},
     ["spec.rules[0].host: Invalid value: \"*.*.example.com\": a wildcard DNS-1123 subdomain must start with '*.', "
      "followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and "
      "end with an alphanumeric character (e.g. '*.example.com', regex used for validation is "
      "'\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"]),
    ({"rules": [{"http": {"paths": []}}]}, ["spec.rules[0].http.paths: Required value"]),
    ({"rules": [{"http": {"paths": [{"path": "/a//b", "pathType": "Exact",
                                     "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]},
     ["spec.rules[0].http.paths[0].path: Invalid value: \"/a//b\": must not contain '//'"]),
    ({"rules": [{"http": {"paths": [{"path": "api", "pathType": "Prefix",
                                     "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]},
     ['spec.rules[0].http.paths[0].path: Invalid value: "api": must be an absolute path']),
    ({"rules": [{"http": {"paths": [{"path": "/", "pathType": "Regex", "backend": {}}]}}]},
     ['spec.rules[0].http.paths[0].pathType: Unsupported value: "Regex": supported values: "Exact", '
      '"ImplementationSpecific", "Prefix"',
      'spec.rules[0].http.paths[0].backend: Invalid value: "": resource or service backend is required']),
    ({"rules": None, "defaultBackend": {"resource": {"kind": "Bucket", "name": "b"},
                                        "service": {"name": "web", "port": {"number": 80}}}},
     ['spec.defaultBackend: Invalid value: "": cannot set both resource and service backends']),
    ({"rules": None, "defaultBackend": {"service": {"name": "web", "port": {"name": "http", "number": 80}}}},
     ['spec.defaultBackend: Invalid value: "": cannot set both port name & port number']),
    ({"rules": None, "defaultBackend": {"service": {"name": "Web", "port": {}}}},
     [f'spec.defaultBackend.service.name: Invalid value: "Web": {LABEL_MSG}',
      "spec.defaultBackend: Required value: port name or number is required"]),
    ({"tls": [{"hosts": ["*.example.com"], "secretName": "Bad_Secret"}]},
     ['spec.tls[0].secretName: Invalid value: "Bad_Secret": a lowercase RFC 1123 subdomain must consist of lower case '
      "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
      "'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"]),
])
def test_ingress(spec: dict[str, Any], expected: list[str]) -> None:
    obj = ingress(**spec)
    if spec.get("rules", "") is None:
        del obj["spec"]["rules"]
    assert create_errors(obj) == expected


def test_ingress_class_annotation_must_agree_with_class_name() -> None:
    obj = ingress(ingressClassName="nginx")
    obj["metadata"]["annotations"] = {"kubernetes.io/ingress.class": "traefik"}
    assert create_errors(obj) == ['annotations.kubernetes.io/ingress.class: Invalid value: "traefik": must match '
                                  "`ingressClassName` when both are specified"]


def test_ingress_status_load_balancer() -> None:
    old = ingress()
    new = changed(old, lambda o: o.update(status={"loadBalancer": {"ingress": [
        {"ip": "10.0.0.1"}, {"ip": "010.0.0.2"}, {"hostname": "1.2.3.4"}]}}))
    assert update_errors(new, old, subresource="status") == [
        'status.loadBalancer.ingress[1].ip: Invalid value: "010.0.0.2": must not have leading 0s',
        'status.loadBalancer.ingress[2].hostname: Invalid value: "1.2.3.4": must be a DNS name, not an IP address']


@pytest.mark.parametrize(("spec", "expected"), [
    ({"controller": ""}, ["spec.controller: Required value"]),
    ({"controller": "example.com/" + "c" * 240}, ["spec.controller: Too long: may not be more than 250 bytes"]),
    ({"parameters": {"kind": "P", "name": "p", "scope": "Namespace"}},
     ["spec.parameters.namespace: Required value: `parameters.scope` is set to 'Namespace'"]),
    ({"parameters": {"kind": "P", "name": "p", "scope": "Cluster", "namespace": "x"}},
     ["spec.parameters.namespace: Forbidden: `parameters.scope` is set to 'Cluster'"]),
    ({"parameters": {"apiGroup": "Bad", "name": "p"}},
     ['spec.parameters.apiGroup: Invalid value: "Bad": a lowercase RFC 1123 subdomain must consist of lower case '
      "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
      "'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
      "spec.parameters.kind: Required value"]),
])
def test_ingress_class(spec: dict[str, Any], expected: list[str]) -> None:
    assert create_errors(ingress_class(**spec)) == expected


def test_ingress_class_defaults_scope_and_keeps_controller() -> None:
    old = ingress_class()
    new = changed(old, lambda o: o["spec"].update(controller="example.com/other"))
    assert update_errors(new, old) == ['spec.controller: Invalid value: "example.com/other": field is immutable']


def ip_address(address: str, **ref: Any) -> dict[str, Any]:
    parent = {"group": "", "resource": "services", "namespace": "default", "name": "web", **ref}
    return {"apiVersion": "networking.k8s.io/v1", "kind": "IPAddress", "metadata": {"name": address},
            "spec": {"parentRef": parent}}


def test_ip_address() -> None:
    assert create_errors(ip_address("10.0.0.1")) == []
    assert create_errors(ip_address("2001:db8::0001")) == [
        'metadata.name: Invalid value: "2001:db8::0001": must be in canonical form ("2001:db8::1")']
    assert create_errors(ip_address("10.0.0.1", resource="", name="a/b")) == [
        "spec.parentRef.name: Invalid value: \"a/b\": may not contain '/'", "spec.parentRef.resource: Required value"]
    old = ip_address("10.0.0.1")
    assert update_errors(changed(old, lambda o: o["spec"]["parentRef"].update(name="other")), old) == [
        "spec.parentRef: Invalid value: null: field is immutable"]


def service_cidr(*cidrs: str) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "ServiceCIDR", "metadata": {"name": "c"},
            "spec": {"cidrs": list(cidrs)}}


@pytest.mark.parametrize(("cidrs", "expected"), [
    (("10.96.0.0/12", "fd00::/108"), []),
    ((), ["spec.cidrs: Required value: at least one CIDR required"]),
    (("10.96.0.0/12", "10.0.0.0/8"), ['spec.cidrs: Invalid value: ["10.96.0.0/12","10.0.0.0/8"]: may specify no more '
                                      "than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"]),
    (("10.96.0.0/12", "fd00::/108", "10.0.0.0/8"),
     ['spec.cidrs: Invalid value: {"cidrs":["10.96.0.0/12","fd00::/108","10.0.0.0/8"]}: may only hold up to 2 values']),
])
def test_service_cidr(cidrs: tuple[str, ...], expected: list[str]) -> None:
    assert create_errors(service_cidr(*cidrs)) == expected


def test_service_cidr_may_only_gain_its_other_family() -> None:
    old = service_cidr("10.96.0.0/12")
    assert update_errors(service_cidr("10.96.0.0/12", "fd00::/108"), old) == []
    assert update_errors(service_cidr("10.100.0.0/16"), old) == [
        'spec.cidrs[0]: Invalid value: "10.100.0.0/16": field is immutable']
    assert update_errors(service_cidr(), old) == ["spec.cidrs: Invalid value: []: field is immutable"]


@pytest.mark.parametrize(("fields", "expected"), [
    ({"addressType": "IPv4", "endpoints": [{"addresses": ["fd00::1"]}]},
     ['endpoints[0].addresses[0]: Invalid value: "fd00::1": must be an IPv4 address']),
    ({"endpoints": [{"addresses": ["169.254.169.254", "0.0.0.0"]}]},
     ['endpoints[0].addresses[0]: Invalid value: "169.254.169.254": may not be in the link-local range '
      "(169.254.0.0/16, fe80::/10)",
      'endpoints[0].addresses[1]: Invalid value: "0.0.0.0": may not be unspecified (0.0.0.0)']),
    ({"addressType": "FQDN", "endpoints": [{"addresses": ["example"]}]},
     ['endpoints[0].addresses[0]: Invalid value: "example": should be a domain with at least two segments separated '
      "by dots"]),
    ({"endpoints": [{"addresses": []}]}, ["endpoints[0].addresses: Required value"]),
    ({"ports": [{"name": "http", "port": 80}, {"name": "http", "port": 81, "protocol": "QUIC"}]},
     ['ports[1].name: Duplicate value: "http"',
      'ports[1].protocol: Unsupported value: "QUIC": supported values: "SCTP", "TCP", "UDP"']),
    ({"addressType": ""}, ["addressType: Required value"]),
])
def test_endpoint_slice(fields: dict[str, Any], expected: list[str]) -> None:
    assert create_errors(endpoint_slice(**fields)) == expected


def test_endpoint_slice_address_type_is_immutable() -> None:
    old = endpoint_slice()
    new = changed(old, lambda o: o.update(addressType="FQDN", endpoints=[{"addresses": ["web.example.com"]}]))
    assert update_errors(new, old) == ["addressType: Invalid value: null: field is immutable"]
