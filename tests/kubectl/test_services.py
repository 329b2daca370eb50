"""Services with the real kubectl: `kubectl create service`, `kubectl expose`, `kubectl cluster-info`
(over plain HTTP and over TLS with authentication)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from api import server as servers
from tests.kubectl.conftest import KUBECTL, Kubectl

pytestmark = [pytest.mark.kubectl, pytest.mark.skipif(KUBECTL is None, reason="kubectl not installed")]
ANSI = re.compile(r"\x1b\[[0-9;]*m")


async def test_create_service_clusterip_and_nodeport(kubectl: Kubectl) -> None:
    out = await kubectl("create", "service", "clusterip", "web", "--tcp=80:8080")
    assert out.stdout.strip() == "service/web created"
    ip = await kubectl.jsonpath("service", "web", path="{.spec.clusterIP}")
    assert re.fullmatch(r"10\.0\.0\.\d+", ip) and ip != "10.0.0.1"
    assert await kubectl.jsonpath("ipaddress", ip, path="{.spec.parentRef.name}") == "web"
    await kubectl("create", "service", "nodeport", "edge", "--tcp=443:8443", "--node-port=30443")
    assert await kubectl.jsonpath("service", "edge", path="{.spec.ports[0].nodePort}") == "30443"
    taken = await kubectl("create", "service", "nodeport", "edge2", "--tcp=443:8443", "--node-port=30443",
                          check=False)
    assert taken.code == 1
    assert taken.stderr == ('error: failed to create NodePort service: Service "edge2" is invalid: '
                            "spec.ports[0].nodePort: Invalid value: 30443: provided port is already allocated\n")
    await kubectl("create", "service", "externalname", "db", "--external-name=db.example.com")
    assert await kubectl.jsonpath("service", "db", path="{.spec.clusterIP}") == ""
    await kubectl("delete", "service", "web")
    assert await kubectl.gone("ipaddress", ip)


async def test_expose_deployment(kubectl: Kubectl) -> None:
    await kubectl("create", "deployment", "api", "--image=nginx", "--port=8080")
    out = await kubectl("expose", "deployment", "api", "--port=80", "--target-port=8080")
    assert out.stdout.strip() == "service/api exposed"
    spec = (await kubectl("get", "service", "api", "-o", "json")).json()["spec"]
    assert spec["selector"] == {"app": "api"}
    assert spec["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 8080}]
    assert spec["type"] == "ClusterIP" and spec["clusterIPs"] == [spec["clusterIP"]]


async def test_cluster_info(kubectl: Kubectl, server: servers.Running) -> None:
    out = await kubectl("cluster-info")
    assert ANSI.sub("", out.stdout).splitlines()[0] == f"Kubernetes control plane is running at {server.url}"


@pytest.fixture
async def secure_server(tmp_path: Path) -> AsyncIterator[servers.Running]:
    async with servers.running(data_dir=tmp_path / "tls", secure=True) as srv:
        yield srv


async def test_cluster_info_over_tls(secure_server: servers.Running, tmp_path: Path) -> None:
    k = Kubectl(secure_server, home=tmp_path / "home", workdir=tmp_path / "work")
    try:
        out = await k("cluster-info")
        assert secure_server.url.startswith("https://127.0.0.1:")
        assert ANSI.sub("", out.stdout).splitlines()[0] == \
            f"Kubernetes control plane is running at {secure_server.url}"
        assert (await k.jsonpath("service", "kubernetes", path="{.spec.ports[0].targetPort}")) == \
            str(secure_server.port)
    finally:
        await k.close()


SERVICE = """
apiVersion: v1
kind: Service
metadata: {name: api}
spec:
  type: NodePort
  selector: {app: api}
  ports: [{name: http, port: %d, targetPort: 8080}]
"""


@pytest.mark.parametrize("mode", [(), ("--server-side",)])
async def test_apply_again_keeps_what_was_allocated(kubectl: Kubectl, mode: tuple[str, ...]) -> None:
    await kubectl("apply", *mode, "-f", "-", input=SERVICE % 80)
    before = (await kubectl("get", "service", "api", "-o", "json")).json()["spec"]
    await kubectl("apply", *mode, "-f", "-", input=SERVICE % 81)
    after = (await kubectl("get", "service", "api", "-o", "json")).json()["spec"]
    assert after["clusterIP"] == before["clusterIP"]
    assert after["ports"][0]["port"] == 81
    assert after["ports"][0]["nodePort"] == before["ports"][0]["nodePort"]  # kept by port name
    replaced = await kubectl("replace", "-f", "-", input=SERVICE % 82)
    assert replaced.stdout.strip() == "service/api replaced"
    final = (await kubectl("get", "service", "api", "-o", "json")).json()["spec"]
    assert final["clusterIP"] == before["clusterIP"] and final["ports"][0]["nodePort"] == before["ports"][0]["nodePort"]
