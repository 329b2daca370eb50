"""The resource quota controller with the ResourceQuota admission plugin, against an in-process API
server: a new quota gets `status.hard` and the usage already in its namespace, admission charges
each write against it and refuses what does not fit with upstream's text, and usage goes down again
when what counted is deleted or stops counting.

Out of scope: the charging rules one by one (tests/cp/quota), admission without the controller
(tests/api/admission/test_resourcequota.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from api import server as servers
from controllers import registry
from controllers.runtime import client as clients
from cp import errors
from tests.controllers import crds
from tests.waiting import eventually


@pytest.fixture
async def controllers(srv: servers.Running) -> AsyncIterator[None]:
    stop, ready = asyncio.Event(), asyncio.Event()
    task = asyncio.ensure_future(registry.run_controllers(kubeconfig=srv.kubeconfig, stop_event=stop, ready=ready,
                                                          names=["resourcequota"]))
    await asyncio.wait_for(ready.wait(), 10)
    yield
    stop.set()
    await asyncio.wait_for(task, 10)


def _pod(name: str, *, cpu: str = "100m", memory: str = "64Mi", **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "team"},
            "spec": {"containers": [{"name": "app", "image": "nginx", "resources": {
                "requests": {"cpu": cpu, "memory": memory}, "limits": {"cpu": cpu, "memory": memory}}}], **spec}}


async def _used(client: clients.Client, name: str = "compute") -> dict[str, str]:
    rq = await client.get("resourcequotas", name, namespace="team")
    return dict((rq.get("status") or {}).get("used") or {})


@pytest.mark.usefixtures("controllers")
async def test_usage_is_measured_charged_and_given_back(client: clients.Client) -> None:
    await client.create("namespaces", {"metadata": {"name": "team"}})
    await client.create("pods", _pod("before"))
    await client.create("configmaps", {"metadata": {"name": "cm", "namespace": "team"}})
    await client.create("resourcequotas", {"metadata": {"name": "compute", "namespace": "team"}, "spec": {"hard": {
        "pods": "2", "requests.cpu": "250m", "limits.memory": "1Gi", "count/configmaps": "5"}}})

    async def measured() -> bool:
        rq = await client.get("resourcequotas", "compute", namespace="team")
        return (rq.get("status") or {}).get("used") == {
            "count/configmaps": "1", "limits.memory": "64Mi", "pods": "1", "requests.cpu": "100m"}

    await eventually(measured, what="the controller measures what the namespace already uses")
    rq = await client.get("resourcequotas", "compute", namespace="team")
    assert rq["status"]["hard"] == {"count/configmaps": "5", "limits.memory": "1Gi", "pods": "2",
                                    "requests.cpu": "250m"}

    await client.create("pods", _pod("second"))
    assert await _used(client) == {"count/configmaps": "1", "limits.memory": "128Mi", "pods": "2",
                                   "requests.cpu": "200m"}
    with pytest.raises(errors.Forbidden) as refused:
        await client.create("pods", _pod("third"))
    assert refused.value.message == ('pods "third" is forbidden: exceeded quota: compute, requested: pods=1,'
                                     'requests.cpu=100m, used: pods=2,requests.cpu=200m, limited: pods=2,'
                                     'requests.cpu=250m')

    await client.delete("pods", "before", namespace="team", grace_period_seconds=0)

    async def given_back() -> bool:
        return (await _used(client)).get("pods") == "1"

    await eventually(given_back, what="usage goes down when a pod goes away")
    await client.create("pods", _pod("third"))
    assert (await _used(client))["requests.cpu"] == "200m"


@pytest.mark.usefixtures("controllers")
async def test_spec_changes_and_objects_that_stop_counting(client: clients.Client) -> None:
    await client.create("namespaces", {"metadata": {"name": "team"}})
    await client.create("resourcequotas", {"metadata": {"name": "compute", "namespace": "team"}, "spec": {"hard": {
        "pods": "5", "count/pods": "5", "services.nodeports": "4"}}})

    async def used_is(want: dict[str, str]) -> bool:
        return await _used(client) == want

    await eventually(lambda: used_is({"count/pods": "0", "pods": "0", "services.nodeports": "0"}), what="measured")
    await client.create("pods", _pod("job"))
    await client.create("services", {"metadata": {"name": "web", "namespace": "team"}, "spec": {
        "type": "NodePort", "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}]}})
    assert await _used(client) == {"count/pods": "1", "pods": "1", "services.nodeports": "2"}

    pod = await client.get("pods", "job", namespace="team")
    pod["status"] = {"phase": "Succeeded"}
    await client.update_status("pods", pod)
    svc = await client.get("services", "web", namespace="team")
    svc["spec"]["type"] = "ClusterIP"
    for port in svc["spec"]["ports"]:
        port.pop("nodePort", None)
    await client.update("services", svc)
    await eventually(lambda: used_is({"count/pods": "1", "pods": "0", "services.nodeports": "0"}),
                     what="a finished pod and a ClusterIP service count no more")

    rq = await client.get("resourcequotas", "compute", namespace="team")
    rq["spec"]["hard"] = {"pods": "1", "count/configmaps": "2"}
    await client.update("resourcequotas", rq)

    async def follows_the_spec() -> bool:
        status = (await client.get("resourcequotas", "compute", namespace="team"))["status"]
        return status == {"hard": {"count/configmaps": "2", "pods": "1"}, "used": {"count/configmaps": "0", "pods": "0"}}

    await eventually(follows_the_spec, what="status.hard follows spec.hard")


@pytest.mark.usefixtures("controllers")
async def test_a_quota_counts_custom_resources(client: clients.Client) -> None:
    widgets = await crds.establish(client)  # defined after the controller started: found by discovery
    await client.create("namespaces", {"metadata": {"name": "team"}})

    def widget(name: str) -> dict[str, Any]:
        return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name, "namespace": "team"}}

    await client.create(widgets, widget("before"))
    await client.create("resourcequotas", {"metadata": {"name": "widgets", "namespace": "team"},
                                           "spec": {"hard": {"count/widgets.example.com": "2"}}})
    await eventually(lambda: _is(_used(client, "widgets"), {"count/widgets.example.com": "1"}),
                     what="the widget already there counted")
    await client.create(widgets, widget("second"))
    with pytest.raises(errors.Forbidden) as refused:
        await client.create(widgets, widget("third"))
    assert "exceeded quota: widgets" in refused.value.message
    await client.delete(widgets, "before", namespace="team")
    await eventually(lambda: _is(_used(client, "widgets"), {"count/widgets.example.com": "1"}),
                     what="given back when a widget goes")
    await client.create(widgets, widget("third"))


async def _is(value: Any, expected: dict[str, str]) -> bool:
    return bool(await value == expected)
