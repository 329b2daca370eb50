"""pods/ephemeralcontainers and pods/resize over HTTP: writes that change only their part of the pod
(the rest of the body is ignored), with upstream's 422s (ValidatePodEphemeralContainersUpdate,
ValidatePodResize)."""

from __future__ import annotations

import json
from typing import Any

import aiohttp

NS = "/api/v1/namespaces/default"
SMP = {"Content-Type": "application/strategic-merge-patch+json"}
MERGE = {"Content-Type": "application/merge-patch+json"}


async def _json(resp: aiohttp.ClientResponse) -> Any:
    return json.loads(await resp.read())


async def _pod(http: aiohttp.ClientSession, name: str, resources: dict[str, Any] | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "nginx"}
    if resources is not None:
        container["resources"] = resources
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "web"}},
           "spec": {"containers": [container]}}
    async with http.post(f"{NS}/pods", json=pod) as r:
        assert r.status == 201, await r.text()
        return dict(await _json(r))


async def test_discovery_lists_both_subresources(http: aiohttp.ClientSession) -> None:
    async with http.get("/api/v1") as r:
        found = {x["name"]: x for x in (await _json(r))["resources"]}
    for name in ("pods/ephemeralcontainers", "pods/resize"):
        assert found[name]["kind"] == "Pod"
        assert sorted(found[name]["verbs"]) == ["get", "patch", "update"]


async def test_ephemeral_container_added_and_nothing_else_changes(http: aiohttp.ClientSession) -> None:
    await _pod(http, "p1")
    patch = {"metadata": {"labels": {"app": "other"}},
             "spec": {"activeDeadlineSeconds": 5,
                      "ephemeralContainers": [{"name": "dbg", "image": "busybox", "targetContainerName": "c"}]}}
    async with http.patch(f"{NS}/pods/p1/ephemeralcontainers", data=json.dumps(patch), headers=SMP) as r:
        assert r.status == 200, await r.text()
        pod = await _json(r)
    assert pod["metadata"]["labels"] == {"app": "web"}
    assert "activeDeadlineSeconds" not in pod["spec"]
    (dbg,) = pod["spec"]["ephemeralContainers"]
    assert dbg["name"] == "dbg" and dbg["targetContainerName"] == "c"
    assert dbg["imagePullPolicy"] == "Always" and dbg["terminationMessagePolicy"] == "File"  # defaulted
    assert pod["metadata"]["generation"] == 2
    async with http.get(f"{NS}/pods/p1/ephemeralcontainers") as r:
        assert r.status == 200
        assert (await _json(r))["spec"]["ephemeralContainers"][0]["name"] == "dbg"


async def test_ephemeral_containers_may_not_change_or_go(http: aiohttp.ClientSession) -> None:
    await _pod(http, "p2")
    add = {"spec": {"ephemeralContainers": [{"name": "dbg", "image": "busybox"}]}}
    async with http.patch(f"{NS}/pods/p2/ephemeralcontainers", data=json.dumps(add), headers=SMP) as r:
        assert r.status == 200, await r.text()
        pod = await _json(r)
    pod["spec"]["ephemeralContainers"][0]["image"] = "alpine"
    async with http.put(f"{NS}/pods/p2/ephemeralcontainers", json=pod) as r:
        assert r.status == 422, await r.text()
        body = await _json(r)
    (cause,) = body["details"]["causes"]
    assert cause["field"] == "spec.ephemeralContainers[dbg]"
    assert cause["message"].startswith('Forbidden: existing ephemeral containers "dbg" may not be changed')
    pod["spec"]["ephemeralContainers"] = []
    async with http.put(f"{NS}/pods/p2/ephemeralcontainers", json=pod) as r:
        assert r.status == 422, await r.text()
        assert 'existing ephemeral containers "dbg" may not be removed' in (await _json(r))["message"]


async def test_ephemeral_container_rules(http: aiohttp.ClientSession) -> None:
    await _pod(http, "p3")
    bad = {"spec": {"ephemeralContainers": [
        {"name": "c", "image": "busybox", "ports": [{"containerPort": 80}],
         "resources": {"limits": {"cpu": "1"}}, "targetContainerName": "nope"}]}}
    async with http.patch(f"{NS}/pods/p3/ephemeralcontainers", data=json.dumps(bad), headers=SMP) as r:
        assert r.status == 422, await r.text()
        causes = {(c["field"], c["message"]) for c in (await _json(r))["details"]["causes"]}
    assert ("spec.ephemeralContainers[0].name", 'Duplicate value: "c"') in causes
    assert ("spec.ephemeralContainers[0].ports", "Forbidden: cannot be set for an Ephemeral Container") in causes
    assert ("spec.ephemeralContainers[0].resources",
            "Forbidden: cannot be set for an Ephemeral Container") in causes
    assert ("spec.ephemeralContainers[0].targetContainerName", 'Not found: "nope"') in causes


async def test_ephemeral_containers_not_through_the_pod(http: aiohttp.ClientSession) -> None:
    await _pod(http, "p4")
    add = {"spec": {"ephemeralContainers": [{"name": "dbg", "image": "busybox"}]}}
    async with http.patch(f"{NS}/pods/p4", data=json.dumps(add), headers=SMP) as r:
        assert r.status == 422, await r.text()


async def test_resize_changes_resources_only(http: aiohttp.ClientSession) -> None:
    await _pod(http, "r1", {"requests": {"cpu": "100m"}, "limits": {"cpu": "200m"}})
    patch = {"metadata": {"labels": {"app": "x"}},
             "spec": {"containers": [{"name": "c", "image": "other",
                                      "resources": {"requests": {"cpu": "150m"}, "limits": {"cpu": "300m"}}}]}}
    async with http.patch(f"{NS}/pods/r1/resize", data=json.dumps(patch), headers=SMP) as r:
        assert r.status == 200, await r.text()
        pod = await _json(r)
    (c,) = pod["spec"]["containers"]
    assert c["image"] == "nginx" and pod["metadata"]["labels"] == {"app": "web"}
    assert c["resources"] == {"requests": {"cpu": "150m"}, "limits": {"cpu": "300m"}}
    assert pod["metadata"]["generation"] == 2
    patch["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "200m"}}
    async with http.patch(f"{NS}/pods/r1", data=json.dumps(patch), headers=SMP) as r:
        assert r.status == 422, await r.text()  # not through the pod itself


async def test_resize_rules(http: aiohttp.ClientSession) -> None:
    await _pod(http, "r2", {"requests": {"cpu": "100m", "memory": "64Mi"},
                            "limits": {"cpu": "200m", "memory": "128Mi"}})
    cases = [
        ({"requests": {"cpu": "200m", "memory": "128Mi"}},
         "spec", "Invalid value: \"Burstable\": Pod QOS Class may not change as a result of resizing"),
        ({"limits": {"memory": None}},
         "spec.containers[0].resources.limits", "Forbidden: resource limits cannot be removed"),
        ({"limits": {"ephemeral-storage": "1Gi"}}, "spec", "Forbidden: only cpu and memory resources are mutable"),
        ({"requests": {"cpu": "1"}}, "spec.containers[0].resources.requests",
         'Invalid value: "1": must be less than or equal to cpu limit of 200m'),
    ]
    for resources, field, message in cases:
        patch = {"spec": {"containers": [{"name": "c", "resources": resources}]}}
        async with http.patch(f"{NS}/pods/r2/resize", data=json.dumps(patch), headers=SMP) as r:
            assert r.status == 422, (resources, await r.text())
            causes = [(c["field"], c["message"]) for c in (await _json(r))["details"]["causes"]]
        assert (field, message) in causes, causes


async def test_best_effort_pod_may_not_gain_requests(http: aiohttp.ClientSession) -> None:
    await _pod(http, "r3")
    patch = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"memory": "40Mi"}}}]}}
    async with http.patch(f"{NS}/pods/r3/resize", data=json.dumps(patch), headers=MERGE) as r:
        assert r.status == 422, await r.text()
        assert "Pod QOS Class may not change as a result of resizing" in (await _json(r))["message"]
