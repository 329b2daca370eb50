"""Resources that are not objects of the event log: `bindings` binds a pod as `pods/{name}/binding`
does; `componentstatuses` is computed (etcd-0 is the event log's database), with upstream's
deprecation warning; neither can be listed, watched or written as stored objects."""

from __future__ import annotations

import aiohttp

PODS = "/api/v1/namespaces/default/pods"


async def test_bindings_bind_the_pod_they_name(http: aiohttp.ClientSession) -> None:
    async with http.post(PODS, json={"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}) as r:
        assert r.status == 201
    async with http.post("/api/v1/namespaces/default/bindings", json={
            "apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
            "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}}) as r:
        assert r.status == 201, await r.text()
    async with http.get(f"{PODS}/p") as r:
        assert (await r.json())["spec"]["nodeName"] == "node-1"
    async with http.post("/api/v1/namespaces/default/bindings", json={"target": {"name": "node-1"}}) as r:
        assert r.status == 400 and (await r.json())["kind"] == "Status"
    async with http.get("/api/v1/namespaces/default/bindings") as r:
        assert r.status == 405


async def test_componentstatuses_report_the_event_log(http: aiohttp.ClientSession) -> None:
    async with http.get("/api/v1/componentstatuses") as r:
        assert r.status == 200
        assert r.headers["Warning"] == '299 - "v1 ComponentStatus is deprecated in v1.19+"'
        body = await r.json()
    assert body["kind"] == "ComponentStatusList"
    assert [(i["metadata"]["name"], i["conditions"][0]["status"]) for i in body["items"]] == [("etcd-0", "True")]
    async with http.get("/api/v1/componentstatuses/etcd-0") as r:
        assert (await r.json())["conditions"] == [{"type": "Healthy", "status": "True", "message": "ok"}]
    async with http.get("/api/v1/componentstatuses/scheduler") as r:
        assert r.status == 404
    async with http.post("/api/v1/componentstatuses", json={"metadata": {"name": "x"}}) as r:
        assert r.status == 405
