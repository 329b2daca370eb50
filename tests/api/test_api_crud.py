"""The API server over HTTP: discovery, CRUD verbs, subresources, errors, lists, time travel.

In scope: request/response behaviour a client sees, checked against upstream semantics
(kubectl-compat.md). Out of scope: watch streams (test_api_watch.py), real kubectl
(tests/kubectl/), the Python client libraries (tests/clients/).
"""

from __future__ import annotations

import io
import json
from typing import Any

import aiohttp

AGG = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"


def pod(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}


def claim(name: str) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}


def deployment(name: str, replicas: int = 1) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


async def _json(resp: aiohttp.ClientResponse) -> Any:
    return json.loads(await resp.read())


async def test_version_and_trailing_slash(http: aiohttp.ClientSession) -> None:
    for path in ("/version", "/version/"):
        async with http.get(path) as r:
            body = await _json(r)
            assert r.status == 200
            assert body["major"] == "1" and body["minor"] == "37"


async def test_aggregated_discovery_content_type(http: aiohttp.ClientSession) -> None:
    async with http.get("/apis", headers={"Accept": AGG}) as r:
        assert r.status == 200
        ct = r.headers["Content-Type"]
        params = {p.strip() for p in ct.split(";")[1:]}
        assert {"g=apidiscovery.k8s.io", "v=v2", "as=APIGroupDiscoveryList"} <= params
        body = await _json(r)
    groups = {g["metadata"]["name"]: g for g in body["items"]}
    rk = groups["resource.k8s.io"]["versions"][0]
    assert rk["version"] == "v1"
    claims = next(x for x in rk["resources"] if x["resource"] == "resourceclaims")
    assert claims["scope"] == "Namespaced"
    assert claims["subresources"][0]["subresource"] == "status"
    deploy = next(x for x in groups["apps"]["versions"][0]["resources"] if x["resource"] == "deployments")
    scale = next(s for s in deploy["subresources"] if s["subresource"] == "scale")
    assert scale["responseKind"] == {"group": "autoscaling", "version": "v1", "kind": "Scale"}
    assert deploy["shortNames"] == ["deploy"] and deploy["categories"] == ["all"]


async def test_legacy_discovery(http: aiohttp.ClientSession) -> None:
    for path in ("/api", "/api/"):
        async with http.get(path) as r:
            assert (await _json(r))["versions"] == ["v1"]
    async with http.get("/apis/") as r:
        groups = {g["name"]: g for g in (await _json(r))["groups"]}
    assert groups["resource.k8s.io"]["preferredVersion"]["version"] == "v1"
    async with http.get("/api/v1") as r:
        names = {x["name"]: x for x in (await _json(r))["resources"]}
    assert names["pods"]["shortNames"] == ["po"]
    assert "pods/status" in names and "pods/binding" in names
    async with http.get("/apis/apps/v1") as r:
        names = {x["name"]: x for x in (await _json(r))["resources"]}
    assert names["deployments/scale"]["group"] == "autoscaling"


async def test_bootstrap_namespaces(http: aiohttp.ClientSession) -> None:
    async with http.get("/api/v1/namespaces") as r:
        items = (await _json(r))["items"]
    names = {i["metadata"]["name"]: i for i in items}
    assert {"default", "kube-system", "kube-public", "kube-node-lease"} <= set(names)
    assert names["default"]["status"]["phase"] == "Active"
    assert names["default"]["spec"]["finalizers"] == ["kubernetes"]


async def test_create_get_defaults_and_metadata(http: aiohttp.ClientSession) -> None:
    async with http.post("/api/v1/namespaces/default/pods", json=pod("web", app="web")) as r:
        assert r.status == 201
        created = await _json(r)
    meta = created["metadata"]
    assert meta["uid"] and meta["creationTimestamp"].endswith("Z")
    assert int(meta["resourceVersion"]) > 0
    assert meta["generation"] == 1
    assert created["spec"]["restartPolicy"] == "Always"
    assert created["spec"]["containers"][0]["terminationMessagePath"] == "/dev/termination-log"
    assert created["status"]["phase"] == "Pending"
    assert meta["managedFields"][0]["operation"] == "Update"
    async with http.get("/api/v1/namespaces/default/pods/web") as r:
        assert await _json(r) == created


async def test_create_without_content_type_is_json(http: aiohttp.ClientSession) -> None:
    body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "b"}})
    async with http.post("/api/v1/namespaces/default/configmaps", data=body.encode(),
                         headers={"Content-Type": ""}) as r:
        assert r.status == 201, await r.text()
        cm = await _json(r)
    assert cm["data"] == {"a": "b"} and "generation" not in cm["metadata"]


async def test_status_errors(http: aiohttp.ClientSession) -> None:
    async with http.get("/api/v1/namespaces/default/pods/nope") as r:
        assert r.status == 404
        body = await _json(r)
    assert body == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": 'pods "nope" not found', "reason": "NotFound",
                    "details": {"name": "nope", "kind": "pods"}, "code": 404}
    async with http.get("/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/x") as r:
        body = await _json(r)
    assert body["message"] == 'resourceclaims.resource.k8s.io "x" not found'
    assert body["details"]["group"] == "resource.k8s.io"
    async with http.get("/api/v1/nosuch") as r:
        assert r.status == 404
        assert (await _json(r))["reason"] == "NotFound"
    await http.post("/api/v1/namespaces/default/pods", json=pod("dup"))
    async with http.post("/api/v1/namespaces/default/pods", json=pod("dup")) as r:
        assert r.status == 409
        assert (await _json(r))["reason"] == "AlreadyExists"
    async with http.post("/api/v1/namespaces/default/pods", data=b"{not json",
                         headers={"Content-Type": "application/json"}) as r:
        assert r.status == 400
        assert (await _json(r))["kind"] == "Status"
    async with http.patch("/api/v1/namespaces/default/pods/dup", data=b"{}",
                          headers={"Content-Type": "text/plain"}) as r:
        assert r.status == 415
        assert "application/merge-patch+json" in (await _json(r))["message"]
    async with http.post("/api/v1/namespaces/default/configmaps", data=io.BytesIO(b"x" * (3 * 1024 * 1024 + 10)),
                         headers={"Content-Type": "application/json"}) as r:
        assert r.status == 413
        assert (await _json(r))["reason"] == "RequestEntityTooLarge"
    async with http.put("/api/v1/namespaces/default/pods") as r:
        assert r.status == 405
        assert (await _json(r))["reason"] == "MethodNotAllowed"


async def test_namespace_must_exist_and_match(http: aiohttp.ClientSession) -> None:
    async with http.post("/api/v1/namespaces/ghost/pods", json=pod("p")) as r:
        assert r.status == 404
        assert (await _json(r))["message"] == 'namespaces "ghost" not found'
    bad = pod("p")
    bad["metadata"]["namespace"] = "other"
    async with http.post("/api/v1/namespaces/default/pods", json=bad) as r:
        assert r.status == 400


async def test_validation_invalid_422(http: aiohttp.ClientSession) -> None:
    bad = pod("Bad_Name")
    async with http.post("/api/v1/namespaces/default/pods", json=bad) as r:
        assert r.status == 422
        body = await _json(r)
    assert body["reason"] == "Invalid"
    assert body["details"]["kind"] == "Pod"
    assert any(c["field"] == "metadata.name" for c in body["details"]["causes"])


async def test_update_conflict_and_unconditional(http: aiohttp.ClientSession) -> None:
    async with http.post("/api/v1/namespaces/default/configmaps",
                         json={"metadata": {"name": "c"}, "data": {"a": "1"}}) as r:
        cm = await _json(r)
    stale = dict(cm)
    cm["data"] = {"a": "2"}
    async with http.put("/api/v1/namespaces/default/configmaps/c", json=cm) as r:
        assert r.status == 200
        updated = await _json(r)
    assert int(updated["metadata"]["resourceVersion"]) > int(stale["metadata"]["resourceVersion"])
    stale["data"] = {"a": "3"}
    async with http.put("/api/v1/namespaces/default/configmaps/c", json=stale) as r:
        assert r.status == 409
        body = await _json(r)
    assert body["reason"] == "Conflict"
    assert body["message"].startswith('Operation cannot be fulfilled on configmaps "c": the object has been modified')
    del stale["metadata"]["resourceVersion"]
    async with http.put("/api/v1/namespaces/default/configmaps/c", json=stale) as r:
        assert r.status == 200
        assert (await _json(r))["data"] == {"a": "3"}


async def test_noop_update_keeps_revision(http: aiohttp.ClientSession) -> None:
    async with http.post("/api/v1/namespaces/default/configmaps",
                         json={"metadata": {"name": "c"}, "data": {"a": "1"}}) as r:
        cm = await _json(r)
    async with http.put("/api/v1/namespaces/default/configmaps/c", json=cm) as r:
        assert (await _json(r))["metadata"]["resourceVersion"] == cm["metadata"]["resourceVersion"]


async def test_generation_bumps_on_spec_only(http: aiohttp.ClientSession) -> None:
    async with http.post("/apis/apps/v1/namespaces/default/deployments", json=deployment("web")) as r:
        d = await _json(r)
    assert d["metadata"]["generation"] == 1
    async with http.patch("/apis/apps/v1/namespaces/default/deployments/web",
                          json={"metadata": {"labels": {"x": "1"}}},
                          headers={"Content-Type": "application/merge-patch+json"}) as r:
        d = await _json(r)
    assert d["metadata"]["generation"] == 1
    async with http.patch("/apis/apps/v1/namespaces/default/deployments/web",
                          data=json.dumps({"spec": {"replicas": 3}}),
                          headers={"Content-Type": "application/strategic-merge-patch+json"}) as r:
        d = await _json(r)
    assert d["metadata"]["generation"] == 2 and d["spec"]["replicas"] == 3


async def test_status_subresource_ignores_spec_and_vice_versa(http: aiohttp.ClientSession) -> None:
    async with http.post("/apis/apps/v1/namespaces/default/deployments", json=deployment("web")) as r:
        d = await _json(r)
    d["spec"]["replicas"] = 5
    d["status"] = {"replicas": 2, "observedGeneration": 1}
    async with http.put("/apis/apps/v1/namespaces/default/deployments/web/status", json=d) as r:
        assert r.status == 200
        s = await _json(r)
    assert s["spec"]["replicas"] == 1 and s["status"]["replicas"] == 2
    s["status"] = {"replicas": 9}
    s["spec"]["replicas"] = 4
    async with http.put("/apis/apps/v1/namespaces/default/deployments/web", json=s) as r:
        m = await _json(r)
    assert m["spec"]["replicas"] == 4 and m["status"]["replicas"] == 2


async def test_json_patch_test_op_fails_422(http: aiohttp.ClientSession) -> None:
    async with http.post("/api/v1/namespaces/default/configmaps", json={"metadata": {"name": "c"}}) as r:
        cm = await _json(r)
    rv = cm["metadata"]["resourceVersion"]
    patch = [{"op": "test", "path": "/metadata/resourceVersion", "value": rv},
             {"op": "add", "path": "/metadata/finalizers", "value": ["x.example.com/f"]}]
    async with http.patch("/api/v1/namespaces/default/configmaps/c", json=patch,
                          headers={"Content-Type": "application/json-patch+json"}) as r:
        assert r.status == 200
        assert (await _json(r))["metadata"]["finalizers"] == ["x.example.com/f"]
    async with http.patch("/api/v1/namespaces/default/configmaps/c", json=patch,
                          headers={"Content-Type": "application/json-patch+json"}) as r:
        assert r.status == 422


async def test_patch_with_stale_resource_version_conflicts(http: aiohttp.ClientSession) -> None:
    async with http.post("/api/v1/namespaces/default/configmaps", json={"metadata": {"name": "c"}}) as r:
        cm = await _json(r)
    await http.patch("/api/v1/namespaces/default/configmaps/c", json={"data": {"a": "1"}},
                     headers={"Content-Type": "application/merge-patch+json"})
    async with http.patch("/api/v1/namespaces/default/configmaps/c",
                          json={"metadata": {"resourceVersion": cm["metadata"]["resourceVersion"]},
                                "data": {"a": "2"}},
                          headers={"Content-Type": "application/merge-patch+json"}) as r:
        assert r.status == 409


async def test_dry_run_writes_nothing(http: aiohttp.ClientSession) -> None:
    async with http.post("/api/v1/namespaces/default/pods?dryRun=All", json=pod("dry")) as r:
        assert r.status == 201
        assert (await _json(r))["metadata"]["uid"]
    async with http.get("/api/v1/namespaces/default/pods/dry") as r:
        assert r.status == 404
    await http.post("/api/v1/namespaces/default/pods", json=pod("real"))
    async with http.delete("/api/v1/namespaces/default/pods/real?dryRun=All") as r:
        assert r.status == 200
    async with http.get("/api/v1/namespaces/default/pods/real") as r:
        assert r.status == 200


async def test_generate_name(http: aiohttp.ClientSession) -> None:
    body = {"metadata": {"generateName": "web-"}, "data": {}}
    async with http.post("/api/v1/namespaces/default/configmaps", json=body) as r:
        name = (await _json(r))["metadata"]["name"]
    assert name.startswith("web-") and len(name) == len("web-") + 5


async def test_finalizers_and_deletion(http: aiohttp.ClientSession) -> None:
    body = {"metadata": {"name": "c", "finalizers": ["example.com/keep"]}}
    await http.post("/api/v1/namespaces/default/configmaps", json=body)
    async with http.delete("/api/v1/namespaces/default/configmaps/c",
                           json={"propagationPolicy": "Background"}) as r:
        assert r.status in (200, 202)
        obj = await _json(r)
    assert obj["metadata"]["deletionTimestamp"]
    assert obj["metadata"]["deletionGracePeriodSeconds"] == 0
    async with http.patch("/api/v1/namespaces/default/configmaps/c",
                          json=[{"op": "remove", "path": "/metadata/finalizers"}],
                          headers={"Content-Type": "application/json-patch+json"}) as r:
        assert r.status == 200
    async with http.get("/api/v1/namespaces/default/configmaps/c") as r:
        assert r.status == 404


async def test_delete_returns_status_or_pod(http: aiohttp.ClientSession) -> None:
    await http.post("/api/v1/namespaces/default/configmaps", json={"metadata": {"name": "c"}})
    async with http.delete("/api/v1/namespaces/default/configmaps/c") as r:
        body = await _json(r)
    assert body["kind"] == "Status" and body["status"] == "Success"
    assert body["details"]["name"] == "c" and body["details"]["kind"] == "configmaps"
    await http.post("/api/v1/namespaces/default/pods", json=pod("p"))
    async with http.delete("/api/v1/namespaces/default/pods/p") as r:
        assert (await _json(r))["kind"] == "Pod"
    async with http.delete("/api/v1/namespaces/default/pods/p") as r:
        assert r.status == 404


async def test_delete_preconditions(http: aiohttp.ClientSession) -> None:
    await http.post("/api/v1/namespaces/default/configmaps", json={"metadata": {"name": "c"}})
    async with http.delete("/api/v1/namespaces/default/configmaps/c",
                           json={"preconditions": {"uid": "not-it"}}) as r:
        assert r.status == 409


async def test_scale_subresource(http: aiohttp.ClientSession) -> None:
    await http.post("/apis/apps/v1/namespaces/default/deployments", json=deployment("web", 1))
    async with http.get("/apis/apps/v1/namespaces/default/deployments/web/scale") as r:
        scale = await _json(r)
    assert scale["kind"] == "Scale" and scale["apiVersion"] == "autoscaling/v1"
    assert scale["spec"]["replicas"] == 1 and scale["status"]["selector"] == "app=web"
    async with http.patch("/apis/apps/v1/namespaces/default/deployments/web/scale",
                          json={"spec": {"replicas": 3}},
                          headers={"Content-Type": "application/merge-patch+json"}) as r:
        assert (await _json(r))["spec"]["replicas"] == 3
    stale = dict(scale)
    stale["spec"] = {"replicas": 7}
    async with http.put("/apis/apps/v1/namespaces/default/deployments/web/scale",
                        data=json.dumps(stale).encode(), headers={"Content-Type": ""}) as r:
        assert r.status == 409
    async with http.get("/apis/apps/v1/namespaces/default/deployments/web/scale") as r:
        fresh = await _json(r)
    fresh["spec"]["replicas"] = 0
    async with http.put("/apis/apps/v1/namespaces/default/deployments/web/scale", json=fresh) as r:
        assert r.status == 200
    async with http.get("/apis/apps/v1/namespaces/default/deployments/web") as r:
        assert (await _json(r))["spec"]["replicas"] == 0


async def test_binding(http: aiohttp.ClientSession) -> None:
    await http.post("/api/v1/namespaces/default/pods", json=pod("p"))
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
               "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}}
    async with http.post("/api/v1/namespaces/default/pods/p/binding", json=binding) as r:
        assert r.status == 201
    async with http.get("/api/v1/namespaces/default/pods/p") as r:
        p = await _json(r)
    assert p["spec"]["nodeName"] == "node-1"
    assert any(c["type"] == "PodScheduled" and c["status"] == "True" for c in p["status"]["conditions"])
    async with http.post("/api/v1/namespaces/default/pods/p/binding", json=binding) as r:
        assert r.status == 409


async def test_list_selectors_and_pagination(http: aiohttp.ClientSession) -> None:
    for i in range(7):
        await http.post("/api/v1/namespaces/default/pods", json=pod(f"p{i}", tier="fe" if i % 2 else "be"))
    async with http.get("/api/v1/namespaces/default/pods", params={"labelSelector": "tier in (fe)"}) as r:
        names = [i["metadata"]["name"] for i in (await _json(r))["items"]]
    assert names == ["p1", "p3", "p5"]
    async with http.get("/api/v1/pods", params={"fieldSelector": "metadata.name=p4"}) as r:
        assert [i["metadata"]["name"] for i in (await _json(r))["items"]] == ["p4"]
    seen: list[str] = []
    token = ""
    rv = None
    while True:
        params = {"limit": "3"}
        if token:
            params["continue"] = token
        async with http.get("/api/v1/namespaces/default/pods", params=params) as r:
            page = await _json(r)
        rv = rv or page["metadata"]["resourceVersion"]
        seen += [i["metadata"]["name"] for i in page["items"]]
        token = page["metadata"].get("continue", "")
        if not token:
            break
        # A write between pages does not show up: the continue token is pinned to the first page's RV.
        await http.post("/api/v1/namespaces/default/pods", json=pod(f"late{len(seen)}"))
    assert seen == [f"p{i}" for i in range(7)]
    async with http.get("/api/v1/namespaces/default/pods", params={"fieldSelector": "nosuch=1"}) as r:
        assert r.status == 400


async def test_time_travel_exact_list(http: aiohttp.ClientSession) -> None:
    async with http.post("/api/v1/namespaces/default/configmaps",
                         json={"metadata": {"name": "c"}, "data": {"v": "1"}}) as r:
        rv1 = (await _json(r))["metadata"]["resourceVersion"]
    await http.patch("/api/v1/namespaces/default/configmaps/c", json={"data": {"v": "2"}},
                     headers={"Content-Type": "application/merge-patch+json"})
    await http.delete("/api/v1/namespaces/default/configmaps/c")
    async with http.get("/api/v1/namespaces/default/configmaps",
                        params={"resourceVersion": rv1, "resourceVersionMatch": "Exact"}) as r:
        body = await _json(r)
    assert body["metadata"]["resourceVersion"] == rv1
    assert [i["data"] for i in body["items"]] == [{"v": "1"}]
    async with http.get("/api/v1/namespaces/default/configmaps") as r:
        assert (await _json(r))["items"] == []
    async with http.get("/api/v1/namespaces/default/configmaps",
                        params={"resourceVersion": "999999", "resourceVersionMatch": "Exact"}) as r:
        assert r.status == 504


async def test_table_output(http: aiohttp.ClientSession) -> None:
    await http.post("/api/v1/namespaces/default/pods", json=pod("web"))
    async with http.get("/api/v1/namespaces/default/pods", headers={"Accept": TABLE}) as r:
        table = await _json(r)
    assert table["kind"] == "Table" and table["apiVersion"] == "meta.k8s.io/v1"
    names = [c["name"] for c in table["columnDefinitions"]]
    assert names[:5] == ["Name", "Ready", "Status", "Restarts", "Age"]
    row = table["rows"][0]
    assert row["cells"][0] == "web" and row["cells"][1] == "0/1"
    assert row["object"]["kind"] == "PartialObjectMetadata"
    async with http.get("/api/v1/namespaces/default/pods/web", headers={"Accept": TABLE}) as r:
        assert len((await _json(r))["rows"]) == 1


async def test_table_list_follows_every_change(http: aiohttp.ClientSession) -> None:
    """Rows are kept between LISTs per object revision: a change must show at once."""
    await http.post("/api/v1/namespaces/default/pods", json=pod("web"))
    await http.post("/api/v1/namespaces/default/pods", json=pod("db"))

    async def rows() -> dict[str, list[Any]]:
        async with http.get("/api/v1/namespaces/default/pods", headers={"Accept": TABLE}) as r:
            return {row["cells"][0]: [row["cells"][2], row["object"]["metadata"].get("labels") or None]
                    for row in (await _json(r))["rows"]}

    assert await rows() == await rows() == {"web": ["Pending", None], "db": ["Pending", None]}
    status = {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
    async with http.patch("/api/v1/namespaces/default/pods/web/status", json=status,
                          headers={"Content-Type": "application/merge-patch+json"}) as r:
        assert r.status == 200
    async with http.patch("/api/v1/namespaces/default/pods/db", json={"metadata": {"labels": {"tier": "db"}}},
                          headers={"Content-Type": "application/merge-patch+json"}) as r:
        assert r.status == 200
    assert await rows() == {"web": ["Running", None], "db": ["Pending", {"tier": "db"}]}
    async with http.delete("/api/v1/namespaces/default/pods/db", params={"gracePeriodSeconds": "0"}) as r:
        assert r.status == 200
    assert await rows() == {"web": ["Running", None]}


async def test_deletecollection(http: aiohttp.ClientSession) -> None:
    for i in range(3):
        await http.post("/api/v1/namespaces/default/configmaps",
                        json={"metadata": {"name": f"c{i}", "labels": {"drop": "yes" if i < 2 else "no"}}})
    async with http.delete("/api/v1/namespaces/default/configmaps", params={"labelSelector": "drop=yes"}) as r:
        assert r.status == 200
    async with http.get("/api/v1/namespaces/default/configmaps") as r:
        assert [i["metadata"]["name"] for i in (await _json(r))["items"]] == ["c2"]


async def test_namespace_delete_terminates(http: aiohttp.ClientSession) -> None:
    async with http.post("/api/v1/namespaces/team/configmaps", json={"metadata": {"name": "a"}}) as r:
        assert r.status == 404  # no such namespace yet
    await http.post("/api/v1/namespaces", json={"metadata": {"name": "team"}})
    async with http.post("/api/v1/namespaces/team/configmaps", json={"metadata": {"name": "b"}}) as r:
        assert r.status == 201  # admission has now seen the namespace open (and may keep that)
    async with http.delete("/api/v1/namespaces/team") as r:
        ns = await _json(r)
    assert ns["status"]["phase"] == "Terminating"
    async with http.post("/api/v1/namespaces/team/configmaps", json={"metadata": {"name": "c"}}) as r:
        assert r.status == 403
        assert "being terminated" in (await _json(r))["message"]
    ns["spec"]["finalizers"] = []
    async with http.put("/api/v1/namespaces/team/finalize", json=ns) as r:
        assert r.status == 200
    async with http.get("/api/v1/namespaces/team") as r:
        assert r.status == 404
    async with http.post("/api/v1/namespaces/team/configmaps", json={"metadata": {"name": "d"}}) as r:
        assert r.status == 404
    await http.post("/api/v1/namespaces", json={"metadata": {"name": "team"}})
    async with http.post("/api/v1/namespaces/team/configmaps", json={"metadata": {"name": "e"}}) as r:
        assert r.status == 201  # created again: open again


async def test_resource_claim_defaults_and_metrics(http: aiohttp.ClientSession) -> None:
    async with http.post("/apis/resource.k8s.io/v1/namespaces/default/resourceclaims", json=claim("c")) as r:
        assert r.status == 201, await r.text()
        c = await _json(r)
    exactly = c["spec"]["devices"]["requests"][0]["exactly"]
    assert exactly["allocationMode"] == "ExactCount" and exactly["count"] == 1
    async with http.get("/metrics") as r:
        text = await r.text()
    assert 'apiserver_request_total{code="201",group="resource.k8s.io",resource="resourceclaims"' in text
    assert "cplane_event_log_revision" in text
    for path in ("/healthz", "/livez", "/readyz"):
        async with http.get(path) as r:
            assert r.status == 200


async def test_device_class_with_bad_cel_is_invalid(http: aiohttp.ClientSession) -> None:
    bad = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.example.com"},
           "spec": {"selectors": [{"cel": {"expression": "device.driver == "}}]}}
    async with http.post("/apis/resource.k8s.io/v1/deviceclasses", json=bad) as r:
        assert r.status == 422
        body = await _json(r)
    assert body["details"]["causes"][0]["field"] == "spec.selectors[0].cel.expression"
    bad["spec"]["selectors"][0]["cel"]["expression"] = 'device.driver == "gpu.example.com"'
    async with http.post("/apis/resource.k8s.io/v1/deviceclasses", json=bad) as r:
        assert r.status == 201


async def test_concurrent_patches_retry_instead_of_conflicting(http: aiohttp.ClientSession) -> None:
    """Patches that do not name a resourceVersion are re-applied on a storage conflict (upstream's
    GuaranteedUpdate), so concurrent writers never see a 409 and no change is lost."""
    import asyncio

    await http.post("/api/v1/namespaces/default/configmaps", json={"metadata": {"name": "busy"}})

    async def label(i: int) -> int:
        async with http.patch("/api/v1/namespaces/default/configmaps/busy",
                              json={"metadata": {"labels": {f"k{i}": "v"}}},
                              headers={"Content-Type": "application/merge-patch+json"}) as r:
            return r.status

    assert set(await asyncio.gather(*(label(i) for i in range(20)))) == {200}
    async with http.get("/api/v1/namespaces/default/configmaps/busy") as r:
        assert len((await _json(r))["metadata"]["labels"]) == 20


async def test_apply_on_scale(http: aiohttp.ClientSession) -> None:
    await http.post("/apis/apps/v1/namespaces/default/deployments", json=deployment("web", 1))
    body = json.dumps({"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "web"},
                       "spec": {"replicas": 4}})
    async with http.patch("/apis/apps/v1/namespaces/default/deployments/web/scale?fieldManager=me",
                          data=body, headers={"Content-Type": "application/apply-patch+yaml"}) as r:
        assert r.status == 200, await r.text()
        assert (await _json(r))["spec"]["replicas"] == 4
    async with http.patch("/apis/apps/v1/namespaces/default/deployments/web/scale",
                          data=body, headers={"Content-Type": "application/apply-patch+yaml"}) as r:
        assert r.status == 422  # no fieldManager: PatchOptions are invalid, as on the main resource
        assert (await _json(r))["message"] == ('PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required '
                                               'value: is required for apply patch')


async def test_generate_name_collision_draws_another(http: aiohttp.ClientSession,
                                                     monkeypatch: Any) -> None:
    """kube-apiserver (1.32+) retries a generated name that is taken instead of answering 409."""
    from cp import objects

    names = iter(["web-aaaaa", "web-aaaaa", "web-bbbbb"])
    monkeypatch.setattr(objects, "generate_name", lambda prefix: next(names))
    body = {"metadata": {"generateName": "web-"}, "data": {}}
    async with http.post("/api/v1/namespaces/default/configmaps", json=body) as r:
        assert (await _json(r))["metadata"]["name"] == "web-aaaaa"
    async with http.post("/api/v1/namespaces/default/configmaps", json=body) as r:
        assert r.status == 201
        assert (await _json(r))["metadata"]["name"] == "web-bbbbb"
