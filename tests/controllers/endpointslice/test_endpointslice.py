"""The EndpointSlice controller against an in-process API server: slices follow the pods a Service
selects (addresses, readiness, named target ports), an empty Service gets a placeholder, and slices go
when the Service loses its selector."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from api import server as servers
from controllers import endpointslice, registry
from controllers.runtime import client as clients
from cp import errors
from tests.waiting import eventually

NS = "default"


@pytest.fixture
async def controllers(srv: servers.Running) -> AsyncIterator[None]:
    stop, ready = asyncio.Event(), asyncio.Event()
    task = asyncio.ensure_future(registry.run_controllers(kubeconfig=srv.kubeconfig, stop_event=stop, ready=ready,
                                                          names=["endpointslice"]))
    await asyncio.wait_for(ready.wait(), 10)
    yield
    stop.set()
    await asyncio.wait_for(task, 10)


def pod(name: str, *, ip: str | None = None, ready: bool = True, app: str = "web") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": NS, "labels": {"app": app}},
            "spec": {"nodeName": "node-1", "containers": [
                {"name": "c", "image": "nginx", "ports": [{"name": "http", "containerPort": 8080}]}]},
            "status": {"phase": "Running", **({"podIP": ip, "podIPs": [{"ip": ip}]} if ip else {}),
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


async def add_pod(client: clients.Client, obj: dict[str, Any]) -> None:
    status = obj.pop("status")
    created = await client.create("pods", obj)
    created["status"] = status
    await client.update_status("pods", created)


async def slices(client: clients.Client, service: str) -> list[dict[str, Any]]:
    listed = await client.list("endpointslices.discovery.k8s.io", namespace=NS,
                               label_selector=f"kubernetes.io/service-name={service}")
    return [s for s in listed.items if s["metadata"]["name"] != "kubernetes"]


@pytest.mark.usefixtures("controllers")
async def test_slices_follow_the_selected_pods(client: clients.Client) -> None:
    svc = await client.create("services", {"metadata": {"name": "web", "namespace": NS, "labels": {"tier": "front"}},
                                           "spec": {"selector": {"app": "web"},
                                                    "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}})

    async def placeholder() -> bool:
        found = await slices(client, "web")
        return len(found) == 1 and not found[0].get("endpoints")

    await eventually(placeholder, what="an empty Service gets a placeholder slice")
    await add_pod(client, pod("a", ip="10.244.0.5"))
    await add_pod(client, pod("b", ip="10.244.0.6", ready=False))
    await add_pod(client, pod("c"))  # no address yet
    await add_pod(client, pod("other", ip="10.244.0.9", app="db"))

    async def listed() -> bool:
        found = await slices(client, "web")
        return len(found) == 1 and len(found[0].get("endpoints") or []) == 2

    await eventually(listed, what="the slice lists the selected pods that have addresses")
    (s,) = await slices(client, "web")
    assert s["metadata"]["name"].startswith("web-")
    assert s["metadata"]["labels"] == {"tier": "front", "kubernetes.io/service-name": "web",
                                       "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}
    assert s["metadata"]["ownerReferences"] == [{"apiVersion": "v1", "kind": "Service", "name": "web",
                                                 "uid": svc["metadata"]["uid"], "controller": True,
                                                 "blockOwnerDeletion": True}]
    assert s["addressType"] == "IPv4"
    assert s["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
    by_pod = {e["targetRef"]["name"]: e for e in s["endpoints"]}
    assert by_pod["a"]["addresses"] == ["10.244.0.5"] and by_pod["a"]["nodeName"] == "node-1"
    assert by_pod["a"]["conditions"] == {"ready": True, "serving": True, "terminating": False}
    assert by_pod["b"]["conditions"] == {"ready": False, "serving": False, "terminating": False}

    await client.delete("pods", "a", namespace=NS)  # bound to a node: terminating for its grace period

    async def terminating() -> bool:
        found = await slices(client, "web")
        return any(e["targetRef"]["name"] == "a" and e["conditions"] == {
            "ready": False, "serving": True, "terminating": True} for e in found[0].get("endpoints") or [])

    await eventually(terminating, what="a terminating pod stays, not ready but serving")
    await client.delete("pods", "a", namespace=NS, grace_period_seconds=0)

    async def one_left() -> bool:
        found = await slices(client, "web")
        return [e["targetRef"]["name"] for e in found[0].get("endpoints") or []] == ["b"]

    await eventually(one_left, what="a deleted pod leaves the slice")
    await client.patch("services", "web", {"spec": {"selector": None}}, namespace=NS)

    async def gone() -> bool:
        return not await slices(client, "web")

    await eventually(gone, what="a Service without selector has no managed slices")


def test_desired_groups_pods_by_resolved_ports() -> None:
    service = {"metadata": {"name": "web", "namespace": NS},
               "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}}
    other = pod("y", ip="10.0.0.8")
    other["spec"]["containers"][0]["ports"][0]["containerPort"] = 9090
    wanted = endpointslice.desired(service, [pod("x", ip="10.0.0.7"), other, pod("z", ip="10.0.0.9")])
    assert [(ports[0]["port"], [e["targetRef"]["name"] for e in eps]) for ports, eps in wanted] == [
        (8080, ["x", "z"]), (9090, ["y"])]


@pytest.fixture
async def endpoints_controller(srv: servers.Running) -> AsyncIterator[None]:
    stop, ready = asyncio.Event(), asyncio.Event()
    task = asyncio.ensure_future(registry.run_controllers(kubeconfig=srv.kubeconfig, stop_event=stop, ready=ready,
                                                          names=["endpoints"]))
    await asyncio.wait_for(ready.wait(), 10)
    yield
    stop.set()
    await asyncio.wait_for(task, 10)


@pytest.mark.usefixtures("endpoints_controller")
async def test_legacy_endpoints(client: clients.Client) -> None:
    await client.create("services", {"metadata": {"name": "web", "namespace": NS},
                                     "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]}})
    await add_pod(client, pod("b", ip="10.244.0.6", ready=False))
    await add_pod(client, pod("a", ip="10.244.0.5"))

    async def listed() -> bool:
        eps = await client.get("endpoints", "web", namespace=NS)
        return len((eps.get("subsets") or [{}])[0].get("addresses") or []) == 1 and \
            len(eps["subsets"][0].get("notReadyAddresses") or []) == 1

    await eventually(listed, what="the Endpoints list ready and not-ready pods")
    eps = await client.get("endpoints", "web", namespace=NS)
    assert not eps["metadata"].get("labels")  # the Service's (none)
    (subset,) = eps["subsets"]
    assert [a["ip"] for a in subset["addresses"]] == ["10.244.0.5"]
    assert subset["addresses"][0]["targetRef"]["name"] == "a" and subset["addresses"][0]["nodeName"] == "node-1"
    assert [a["ip"] for a in subset["notReadyAddresses"]] == ["10.244.0.6"]
    assert subset["ports"] == [{"name": "", "port": 8080, "protocol": "TCP"}]
    await client.delete("services", "web", namespace=NS)

    async def gone() -> bool:
        try:
            await client.get("endpoints", "web", namespace=NS)
        except errors.NotFound:
            return True
        return False

    await eventually(gone, what="the Endpoints go with their Service")
