"""Services through the server (api/services.py): cluster IPs from the service range as IPAddress objects,
node ports, the `kubernetes` Service, its Endpoints and EndpointSlice and the default ServiceCIDR."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from api import server as servers
from api import services
from api import state as st
from cp import allocation

SVC = "/api/v1/namespaces/default/services"
IPS = "/apis/networking.k8s.io/v1/ipaddresses"


def service(name: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"selector": {"app": name}, "ports": [{"port": 80}]}
    body.update(spec)
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": body}


async def call(http: aiohttp.ClientSession, method: str, path: str, body: Any = None,
               content_type: str = "application/json") -> tuple[int, dict[str, Any]]:
    data = None if body is None else json.dumps(body)
    async with http.request(method, path, data=data, headers={"Content-Type": content_type}) as r:
        return r.status, json.loads(await r.read())


async def test_the_kubernetes_service(http: aiohttp.ClientSession, api_server: servers.Running) -> None:
    code, svc = await call(http, "GET", f"{SVC}/kubernetes")
    assert code == 200
    assert svc["metadata"]["labels"] == {"component": "apiserver", "provider": "kubernetes"}
    assert svc["spec"]["clusterIP"] == "10.0.0.1" and svc["spec"]["clusterIPs"] == ["10.0.0.1"]
    assert svc["spec"]["ports"] == [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": api_server.port}]
    assert svc["spec"]["ipFamilies"] == ["IPv4"] and svc["spec"]["ipFamilyPolicy"] == "SingleStack"
    address = servers.advertised_address("127.0.0.1")
    code, eps = await call(http, "GET", "/api/v1/namespaces/default/endpoints/kubernetes")
    if address is None:
        assert code == 404
    else:
        assert eps["subsets"] == [{"addresses": [{"ip": address}],
                                   "ports": [{"name": "https", "port": api_server.port, "protocol": "TCP"}]}]
        code, eps = await call(http, "GET", "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes")
        assert code == 200
        assert eps["metadata"]["labels"] == {"kubernetes.io/service-name": "kubernetes"}
        assert eps["addressType"] == "IPv4"
        assert eps["endpoints"] == [{"addresses": [address], "conditions": {"ready": True}}]
        assert eps["ports"] == [{"name": "https", "port": api_server.port, "protocol": "TCP"}]
    code, cidr = await call(http, "GET", "/apis/networking.k8s.io/v1/servicecidrs/kubernetes")
    assert code == 200 and cidr["spec"]["cidrs"] == ["10.0.0.0/24"]
    assert [(c["type"], c["status"], c["message"]) for c in cidr["status"]["conditions"]] == [
        ("Ready", "True", "Kubernetes default Service CIDR is ready")]
    code, ip = await call(http, "GET", f"{IPS}/10.0.0.1")
    assert code == 200
    assert ip["spec"]["parentRef"] == {"group": "", "resource": "services", "namespace": "default",
                                       "name": "kubernetes"}


async def test_cluster_ip_is_allocated_and_released(http: aiohttp.ClientSession) -> None:
    code, svc = await call(http, "POST", SVC, service("web"))
    assert code == 201, svc
    ip = svc["spec"]["clusterIP"]
    assert svc["spec"]["clusterIPs"] == [ip]
    assert allocation.in_range(ip, allocation.parse_service_cidr("10.0.0.0/24")) and ip != "10.0.0.1"
    assert svc["spec"]["ipFamilies"] == ["IPv4"] and svc["spec"]["ipFamilyPolicy"] == "SingleStack"
    assert svc["status"] == {"loadBalancer": {}}
    code, obj = await call(http, "GET", f"{IPS}/{ip}")
    assert code == 200
    assert obj["metadata"]["labels"] == {"ipaddress.kubernetes.io/ip-family": "IPv4",
                                         "ipaddress.kubernetes.io/managed-by": "ipallocator.k8s.io"}
    assert obj["spec"]["parentRef"] == {"group": "", "resource": "services", "namespace": "default", "name": "web"}
    assert (await call(http, "DELETE", f"{SVC}/web"))[0] == 200
    assert (await call(http, "GET", f"{IPS}/{ip}"))[0] == 404


async def test_requested_ips(http: aiohttp.ClientSession) -> None:
    code, svc = await call(http, "POST", SVC, service("a", clusterIP="10.0.0.5"))
    assert code == 201 and svc["spec"]["clusterIPs"] == ["10.0.0.5"]
    code, status = await call(http, "POST", SVC, service("b", clusterIP="10.0.0.5"))
    assert code == 422
    assert status["message"] == ('Service "b" is invalid: spec.clusterIPs: Invalid value: []string{"10.0.0.5"}: '
                                 "failed to allocate IP 10.0.0.5: provided IP is already allocated")
    code, status = await call(http, "POST", SVC, service("c", clusterIP="10.9.0.5"))
    assert code == 422
    assert status["details"]["causes"] == [{
        "reason": "FieldValueInvalid", "field": "spec.clusterIPs",
        "message": 'Invalid value: []string{"10.9.0.5"}: failed to allocate IP 10.9.0.5: the provided IP (10.9.0.5) '
                   "is not in the valid range. The range of valid IPs is 10.0.0.0/24"}]


async def test_a_failed_create_gives_its_ip_back(http: aiohttp.ClientSession) -> None:
    code, _ = await call(http, "POST", SVC, service("bad", clusterIP="10.0.0.7", ports=[{"port": 80}, {"port": 81}]))
    assert code == 422
    assert (await call(http, "GET", f"{IPS}/10.0.0.7"))[0] == 404
    code, _ = await call(http, "POST", "/api/v1/namespaces/nowhere/services", service("lost", clusterIP="10.0.0.8"))
    assert code == 404
    assert (await call(http, "GET", f"{IPS}/10.0.0.8"))[0] == 404


async def test_dry_run_allocates_nothing(http: aiohttp.ClientSession) -> None:
    code, svc = await call(http, "POST", f"{SVC}?dryRun=All", service("dry", clusterIP="10.0.0.9"))
    assert code == 201 and svc["spec"]["clusterIP"] == "10.0.0.9"
    assert (await call(http, "GET", f"{IPS}/10.0.0.9"))[0] == 404
    assert (await call(http, "GET", f"{SVC}/dry"))[0] == 404


async def test_concurrent_creates_get_distinct_ips(http: aiohttp.ClientSession) -> None:
    results = await asyncio.gather(*(call(http, "POST", SVC, service(f"s{i}", type="NodePort")) for i in range(24)))
    assert all(code == 201 for code, _ in results), results
    ips = [svc["spec"]["clusterIP"] for _, svc in results]
    ports = [svc["spec"]["ports"][0]["nodePort"] for _, svc in results]
    assert len(set(ips)) == len(ips) and len(set(ports)) == len(ports)
    async with http.get(IPS) as r:
        names = {item["metadata"]["name"] for item in json.loads(await r.read())["items"]}
    assert set(ips) | {"10.0.0.1"} == names


async def test_cluster_ip_may_not_change(http: aiohttp.ClientSession) -> None:
    code, svc = await call(http, "POST", SVC, service("web"))
    ip = svc["spec"]["clusterIP"]
    other = "10.0.0.2" if ip != "10.0.0.2" else "10.0.0.3"
    changed = json.loads(json.dumps(svc))
    changed["spec"]["clusterIP"] = other
    code, status = await call(http, "PUT", f"{SVC}/web", changed)
    assert code == 422
    assert status["message"] == (f'Service "web" is invalid: spec.clusterIPs[0]: Invalid value: []string{{"{other}"}}: '
                                 "may not change once set")
    # A replacement without the allocated values keeps them.
    fresh = service("web")
    fresh["metadata"]["resourceVersion"] = svc["metadata"]["resourceVersion"]
    fresh["spec"]["selector"] = {"app": "other"}
    code, updated = await call(http, "PUT", f"{SVC}/web", fresh)
    assert code == 200, updated
    assert updated["spec"]["clusterIP"] == ip and updated["spec"]["selector"] == {"app": "other"}


async def test_node_ports(http: aiohttp.ClientSession) -> None:
    code, svc = await call(http, "POST", SVC, service("np", type="NodePort", ports=[
        {"name": "http", "port": 80}, {"name": "fixed", "port": 81, "nodePort": 30081}]))
    assert code == 201, svc
    first = svc["spec"]["ports"][0]["nodePort"]
    assert 30000 <= first <= 32767 and svc["spec"]["ports"][1]["nodePort"] == 30081
    assert svc["spec"]["externalTrafficPolicy"] == "Cluster"
    code, status = await call(http, "POST", SVC, service("np2", type="NodePort", ports=[{"port": 80, "nodePort": 30081}]))
    assert code == 422
    assert status["message"] == ('Service "np2" is invalid: spec.ports[0].nodePort: Invalid value: 30081: '
                                 "provided port is already allocated")
    code, status = await call(http, "POST", SVC, service("np3", type="NodePort", ports=[{"port": 80, "nodePort": 8080}]))
    assert code == 422
    assert status["message"].endswith("spec.ports[0].nodePort: Invalid value: 8080: provided port is not in the valid "
                                      "range. The range of valid ports is 30000-32767")
    # Back to ClusterIP: the node ports go, and may be taken again.
    code, svc = await call(http, "PATCH", f"{SVC}/np", {"spec": {"type": "ClusterIP"}},
                           content_type="application/merge-patch+json")
    assert code == 200, svc
    assert all("nodePort" not in p for p in svc["spec"]["ports"]) and "externalTrafficPolicy" not in svc["spec"]
    code, _ = await call(http, "POST", SVC, service("np2", type="NodePort", ports=[{"port": 80, "nodePort": 30081}]))
    assert code == 201


async def test_load_balancer_local_gets_a_health_check_port(http: aiohttp.ClientSession) -> None:
    code, svc = await call(http, "POST", SVC, service("lb", type="LoadBalancer", externalTrafficPolicy="Local"))
    assert code == 201, svc
    spec = svc["spec"]
    assert spec["allocateLoadBalancerNodePorts"] is True
    ports = {spec["ports"][0]["nodePort"], spec["healthCheckNodePort"]}
    assert len(ports) == 2 and all(30000 <= p <= 32767 for p in ports)


async def test_external_name_and_headless(http: aiohttp.ClientSession) -> None:
    code, svc = await call(http, "POST", SVC, service("ext", type="ExternalName", externalName="db.example.com",
                                                      ports=[], selector=None))
    assert code == 201, svc
    assert "clusterIP" not in svc["spec"] and "ipFamilies" not in svc["spec"]
    code, svc = await call(http, "PATCH", f"{SVC}/ext", {"spec": {"type": "ClusterIP", "externalName": None,
                                                                 "ports": [{"port": 80}]}},
                           content_type="application/merge-patch+json")
    assert code == 200, svc
    ip = svc["spec"]["clusterIP"]
    assert (await call(http, "GET", f"{IPS}/{ip}"))[0] == 200
    code, svc = await call(http, "POST", SVC, service("headless", clusterIP="None"))
    assert code == 201, svc
    assert svc["spec"]["clusterIPs"] == ["None"] and svc["spec"]["ipFamilies"] == ["IPv4"]
    code, svc = await call(http, "POST", SVC, service("bare", clusterIP="None", selector=None))
    assert code == 201, svc
    assert svc["spec"]["ipFamilyPolicy"] == "RequireDualStack" and svc["spec"]["ipFamilies"] == ["IPv4", "IPv6"]


@pytest.fixture
async def small(tmp_path: Path) -> AsyncIterator[aiohttp.ClientSession]:
    ranges = allocation.ServiceRanges(cluster_ip_range="10.96.0.0/29", node_port_range="30000-30001")
    async with servers.running(data_dir=tmp_path / "small", db_url="memory:",
                               app_options={"service_ranges": ranges}) as srv, \
            aiohttp.ClientSession(base_url=srv.url) as http:
        yield http


async def test_range_exhaustion(small: aiohttp.ClientSession) -> None:
    code, svc = await call(small, "GET", f"{SVC}/kubernetes")
    assert svc["spec"]["clusterIP"] == "10.96.0.1"
    for i in range(5):  # 10.96.0.2-6: the rest of the range
        assert (await call(small, "POST", SVC, service(f"s{i}")))[0] == 201
    code, status = await call(small, "POST", SVC, service("full"))
    assert code == 500
    assert status["reason"] == "InternalError"
    assert status["message"] == "Internal error occurred: failed to allocate a serviceIP: range is full"
    assert (await call(small, "DELETE", f"{SVC}/s0"))[0] == 200
    assert (await call(small, "POST", SVC, service("full")))[0] == 201
    # Node ports run out the same way.
    for name in ("s1", "s2", "s3"):
        assert (await call(small, "DELETE", f"{SVC}/{name}"))[0] == 200
    assert (await call(small, "POST", SVC, service("n1", type="NodePort")))[0] == 201
    assert (await call(small, "POST", SVC, service("n2", type="NodePort")))[0] == 201
    code, status = await call(small, "POST", SVC, service("n3", type="NodePort"))
    assert code == 500
    assert status["message"] == "Internal error occurred: failed to allocate a nodePort: range is full"


async def test_two_servers_of_one_log_never_share_an_address(tmp_path: Path) -> None:
    from storage import memory

    shared = memory.MemoryEventLog()
    await shared.start()
    try:
        async with servers.running(data_dir=tmp_path / "a", event_log=shared) as a, \
                servers.running(data_dir=tmp_path / "b", event_log=shared) as b, \
                aiohttp.ClientSession(base_url=a.url) as ha, aiohttp.ClientSession(base_url=b.url) as hb:
            for srv in (a, b):  # both try the same addresses in the same order: every one is contended
                allocator = srv.app[st.STORE].hooks[("", "services")]
                assert isinstance(allocator, services.ServiceAllocator)
                allocator.rng = random.Random(7)
            results = await asyncio.gather(*(call(ha if i % 2 else hb, "POST", SVC, service(f"r{i}"))
                                             for i in range(30)))
            assert all(code == 201 for code, _ in results), results
            ips = [svc["spec"]["clusterIP"] for _, svc in results]
            assert len(set(ips)) == len(ips) and "10.0.0.1" not in ips
    finally:
        await shared.close()


@pytest.mark.parametrize(("spec", "cause"), [
    ({"ipFamilyPolicy": "RequireDualStack"},
     {"field": "spec.ipFamilyPolicy", "reason": "FieldValueInvalid",
      "message": 'Invalid value: "RequireDualStack": this cluster is not configured for dual-stack services'}),
    ({"ipFamilies": ["IPv6"]},
     {"field": "spec.ipFamilies[0]", "reason": "FieldValueInvalid",
      "message": 'Invalid value: "IPv6": not configured on this cluster'}),
    ({"clusterIP": "fd00::10"},
     {"field": "spec.clusterIPs[0]", "reason": "FieldValueInvalid",
      "message": 'Invalid value: []string{"fd00::10"}: IPv6 is not configured on this cluster'}),
    ({"ipFamilyPolicy": "SingleStack", "ipFamilies": ["IPv4", "IPv6"]},
     {"field": "spec.ipFamilyPolicy", "reason": "FieldValueInvalid",
      "message": "Invalid value: \"SingleStack\": must be 'RequireDualStack' or 'PreferDualStack' when multiple IP "
                 "families are specified"}),
])
async def test_a_single_stack_cluster(http: aiohttp.ClientSession, spec: dict[str, Any],
                                      cause: dict[str, str]) -> None:
    code, status = await call(http, "POST", SVC, service("dual", **spec))
    assert code == 422
    assert status["details"]["causes"] == [cause]
    code, svc = await call(http, "POST", SVC, service("prefer", ipFamilyPolicy="PreferDualStack"))
    assert code == 201 and svc["spec"]["ipFamilies"] == ["IPv4"]


async def test_the_control_plane_objects_come_back(http: aiohttp.ClientSession, api_server: servers.Running) -> None:
    from tests.waiting import eventually

    for path in (f"{SVC}/kubernetes", "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes"):
        assert (await call(http, "DELETE", path))[0] == 200

        async def back(path: str = path) -> bool:
            return (await call(http, "GET", path))[0] == 200

        await eventually(back, what=f"{path} created again")
    _, svc = await call(http, "GET", f"{SVC}/kubernetes")
    assert svc["spec"]["ports"][0]["targetPort"] == api_server.port
