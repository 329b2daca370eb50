"""The ResourceQuota admission plugin over HTTP, with quota status written as the resource quota
controller would (the controller itself: tests/controllers/resourcequota): each create is charged
to `status.used` of the quotas that count it and refused with upstream's `exceeded quota` text when
it does not fit; scopes select what a quota counts; services, claims, storage classes, object
counts and the DRA quotas (devices per device class, extended resources backed by DRA) count as
upstream's evaluators; concurrent writes are charged one by one; dry runs charge nothing.

Out of scope: ResourceQuota validation (the object itself).
"""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp

NS = "/api/v1/namespaces/default"
CLAIMS = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
CLASSES = "/apis/resource.k8s.io/v1/deviceclasses"


async def _post(http: aiohttp.ClientSession, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    async with http.post(path, json=body) as r:
        return r.status, await r.json()


async def _quota(http: aiohttp.ClientSession, name: str, hard: dict[str, str], *,
                 used: dict[str, str] | None = None, **spec: Any) -> None:
    """A quota whose status says `hard`, and `used` (zero for every name unless given)."""
    code, rq = await _post(http, f"{NS}/resourcequotas", {"metadata": {"name": name}, "spec": {"hard": hard, **spec}})
    assert code == 201, rq
    rq["status"] = {"hard": hard, "used": used if used is not None else dict.fromkeys(hard, "0")}
    async with http.put(f"{NS}/resourcequotas/{name}/status", json=rq) as r:
        assert r.status == 200, await r.text()


async def _used(http: aiohttp.ClientSession, name: str) -> dict[str, str]:
    async with http.get(f"{NS}/resourcequotas/{name}") as r:
        return dict((await r.json())["status"]["used"])


def _pod(name: str, *, requests: dict[str, str] | None = None, limits: dict[str, str] | None = None,
         **spec: Any) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    return {"metadata": {"name": name},
            "spec": {"containers": [{"name": "app", "image": "nginx", "resources": resources}], **spec}}


async def test_pods_are_charged_until_the_quota_is_full(http: aiohttp.ClientSession) -> None:
    await _quota(http, "compute", {"pods": "2", "requests.cpu": "1", "limits.memory": "1Gi", "count/pods": "10"})
    code, _ = await _post(http, f"{NS}/pods", _pod("a", requests={"cpu": "400m"}, limits={"memory": "512Mi"}))
    assert code == 201
    assert await _used(http, "compute") == {"count/pods": "1", "limits.memory": "512Mi", "pods": "1",
                                            "requests.cpu": "400m"}
    code, status = await _post(http, f"{NS}/pods", _pod("b", requests={"cpu": "700m"}, limits={"memory": "256Mi"}))
    assert (code, status["reason"]) == (403, "Forbidden")
    assert status["message"] == ('pods "b" is forbidden: exceeded quota: compute, requested: requests.cpu=700m, '
                                 'used: requests.cpu=400m, limited: requests.cpu=1')
    assert status["details"] == {"name": "b", "kind": "pods"}
    code, _ = await _post(http, f"{NS}/pods?dryRun=All", _pod("dry", requests={"cpu": "100m"},
                                                                limits={"memory": "1Mi"}))
    assert code == 201
    assert (await _used(http, "compute"))["pods"] == "1"  # a dry run charges nothing
    code, status = await _post(http, f"{NS}/pods", _pod("c"))
    assert code == 403
    assert status["message"] == ('pods "c" is forbidden: failed quota: compute: must specify limits.memory for: app; '
                                 'requests.cpu for: app')


async def test_a_quota_without_status_constrains_nothing_until_it_is_measured(http: aiohttp.ClientSession) -> None:
    code, _ = await _post(http, f"{NS}/resourcequotas", {"metadata": {"name": "new"}, "spec": {"hard": {"pods": "0"}}})
    assert code == 201
    code, _ = await _post(http, f"{NS}/pods", _pod("early"))
    assert code == 201  # no status.hard yet: the controller has not seen the quota
    async with http.get(f"{NS}/resourcequotas/new") as r:
        rq = await r.json()
    rq["status"] = {"hard": {"pods": "0"}}
    async with http.put(f"{NS}/resourcequotas/new/status", json=rq) as r:
        assert r.status == 200
    code, status = await _post(http, f"{NS}/pods", _pod("late"))
    assert code == 403
    assert status["message"] == 'pods "late" is forbidden: status unknown for quota: new, resources: pods'


async def test_scopes_select_the_pods_a_quota_counts(http: aiohttp.ClientSession) -> None:
    await _quota(http, "best-effort", {"pods": "1"}, scopes=["BestEffort"])
    await _quota(http, "terminating", {"pods": "1"}, scopes=["Terminating"])
    await _quota(http, "high", {"pods": "1"}, scopeSelector={"matchExpressions": [
        {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]})
    await _quota(http, "cross", {"pods": "0"}, scopes=["CrossNamespacePodAffinity"])
    code, _ = await _post(http, "/apis/scheduling.k8s.io/v1/priorityclasses", {"metadata": {"name": "high"},
                                                                              "value": 1000})
    assert code == 201
    assert (await _post(http, f"{NS}/pods", _pod("be1")))[0] == 201
    code, status = await _post(http, f"{NS}/pods", _pod("be2"))
    assert code == 403
    assert status["message"].startswith('pods "be2" is forbidden: exceeded quota: best-effort,')
    sized = {"requests": {"cpu": "1"}}
    assert (await _post(http, f"{NS}/pods", _pod("burst", **sized)))[0] == 201  # NotBestEffort: not counted
    assert (await _post(http, f"{NS}/pods", _pod("job", activeDeadlineSeconds=60, **sized)))[0] == 201
    assert (await _post(http, f"{NS}/pods", _pod("job2", activeDeadlineSeconds=60, **sized)))[0] == 403
    assert (await _post(http, f"{NS}/pods", _pod("vip", priorityClassName="high", **sized)))[0] == 201
    assert (await _post(http, f"{NS}/pods", _pod("vip2", priorityClassName="high", **sized)))[0] == 403
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone", "namespaceSelector": {}}]}}
    code, status = await _post(http, f"{NS}/pods", _pod("near", affinity=affinity, **sized))
    assert code == 403
    assert status["message"] == ('pods "near" is forbidden: exceeded quota: cross, requested: pods=1, used: pods=0, '
                                 'limited: pods=0')
    assert {q: (await _used(http, q))["pods"] for q in ("best-effort", "terminating", "high", "cross")} == {
        "best-effort": "1", "terminating": "1", "high": "1", "cross": "0"}


async def test_services_claims_and_object_counts(http: aiohttp.ClientSession) -> None:
    await _quota(http, "objects", {"services": "5", "services.nodeports": "2", "services.loadbalancers": "1",
                                   "persistentvolumeclaims": "3", "requests.storage": "10Gi",
                                   "gold.storageclass.storage.k8s.io/requests.storage": "4Gi",
                                   "configmaps": "2", "count/configmaps": "2", "count/deployments.apps": "1"})
    svc = {"metadata": {"name": "web"}, "spec": {"ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}]}}
    assert (await _post(http, f"{NS}/services", svc))[0] == 201
    async with http.patch(f"{NS}/services/web", json={"spec": {"type": "NodePort"}},
                          headers={"Content-Type": "application/merge-patch+json"}) as r:
        assert r.status == 200, await r.text()  # a type change is charged as it happens
    used = await _used(http, "objects")
    assert (used["services"], used["services.nodeports"], used["services.loadbalancers"]) == ("1", "2", "0")
    code, status = await _post(http, f"{NS}/services", {"metadata": {"name": "lb"}, "spec": {
        "type": "LoadBalancer", "ports": [{"port": 80}]}})
    assert code == 403
    assert status["message"] == ('services "lb" is forbidden: exceeded quota: objects, requested: '
                                 'services.nodeports=1, used: services.nodeports=2, limited: services.nodeports=2')

    def claim(name: str, size: str, sc: str) -> dict[str, Any]:
        return {"metadata": {"name": name}, "spec": {"storageClassName": sc, "accessModes": ["ReadWriteOnce"],
                                                     "resources": {"requests": {"storage": size}}}}

    assert (await _post(http, f"{NS}/persistentvolumeclaims", claim("fast", "3Gi", "gold")))[0] == 201
    code, status = await _post(http, f"{NS}/persistentvolumeclaims", claim("more", "2Gi", "gold"))
    assert code == 403
    assert status["message"] == ('persistentvolumeclaims "more" is forbidden: exceeded quota: objects, requested: '
                                 'gold.storageclass.storage.k8s.io/requests.storage=2Gi, used: '
                                 'gold.storageclass.storage.k8s.io/requests.storage=3Gi, limited: '
                                 'gold.storageclass.storage.k8s.io/requests.storage=4Gi')
    assert (await _post(http, f"{NS}/persistentvolumeclaims", claim("slow", "2Gi", "bronze")))[0] == 201
    used = await _used(http, "objects")
    assert (used["persistentvolumeclaims"], used["requests.storage"]) == ("2", "5Gi")

    for name in ("one", "two"):
        assert (await _post(http, f"{NS}/configmaps", {"metadata": {"name": name}}))[0] == 201
    code, status = await _post(http, f"{NS}/configmaps", {"metadata": {"name": "three"}})
    assert code == 403
    assert status["message"] == ('configmaps "three" is forbidden: exceeded quota: objects, requested: '
                                 'configmaps=1,count/configmaps=1, used: configmaps=2,count/configmaps=2, '
                                 'limited: configmaps=2,count/configmaps=2')
    deployment = {"metadata": {"name": "d"}, "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
        "metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}
    assert (await _post(http, "/apis/apps/v1/namespaces/default/deployments", deployment))[0] == 201
    deployment["metadata"]["name"] = "e"
    code, status = await _post(http, "/apis/apps/v1/namespaces/default/deployments", deployment)
    assert code == 403
    assert status["message"] == ('deployments.apps "e" is forbidden: exceeded quota: objects, requested: '
                                 'count/deployments.apps=1, used: count/deployments.apps=1, limited: '
                                 'count/deployments.apps=1')


def _request(name: str, cls: str, *, mode: str = "ExactCount", count: int = 1, **more: Any) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": cls, "allocationMode": mode, **more}
    if mode == "ExactCount":
        exactly["count"] = count
    return {"name": name, "exactly": exactly}


async def test_resource_claims_count_devices_per_device_class(http: aiohttp.ClientSession) -> None:
    for cls in ("gpu", "tpu"):
        assert (await _post(http, CLASSES, {"metadata": {"name": cls}, "spec": {}}))[0] == 201
    await _quota(http, "devices", {"count/resourceclaims.resource.k8s.io": "10",
                                   "gpu.deviceclass.resource.k8s.io/devices": "40",
                                   "tpu.deviceclass.resource.k8s.io/devices": "3"})

    async def claim(name: str, *requests: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        return await _post(http, CLAIMS, {"metadata": {"name": name}, "spec": {"devices": {"requests": list(requests)}}})

    assert (await claim("pair", _request("a", "gpu", count=2)))[0] == 201
    assert (await claim("every", _request("all", "gpu", mode="All")))[0] == 201  # the most one allocation holds
    code, body = await claim("either", {"name": "pick", "firstAvailable": [
        {"name": "big", "deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 4},
        {"name": "small", "deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1},
        {"name": "other", "deviceClassName": "tpu", "allocationMode": "ExactCount", "count": 2}]})
    assert code == 201, body  # the largest alternative of each class: 4 gpus and 2 tpus
    assert await _used(http, "devices") == {"count/resourceclaims.resource.k8s.io": "3",
                                            "gpu.deviceclass.resource.k8s.io/devices": "38",
                                            "tpu.deviceclass.resource.k8s.io/devices": "2"}
    code, status = await claim("too-many", _request("a", "gpu", count=3))
    assert status["message"] == ('resourceclaims.resource.k8s.io "too-many" is forbidden: exceeded quota: devices, '
                                 'requested: gpu.deviceclass.resource.k8s.io/devices=3, used: '
                                 'gpu.deviceclass.resource.k8s.io/devices=38, limited: '
                                 'gpu.deviceclass.resource.k8s.io/devices=40')

    async with http.patch(f"{NS}", json={"metadata": {"labels": {"resource.kubernetes.io/admin-access": "true"}}},
                          headers={"Content-Type": "application/merge-patch+json"}) as r:
        assert r.status == 200
    code, status = await claim("admin", _request("a", "tpu", count=2, adminAccess=True))
    assert code == 403  # admin-access requests count like any other (KEP-5018)
    assert "requested: tpu.deviceclass.resource.k8s.io/devices=2, used: tpu.deviceclass.resource.k8s.io/devices=2" \
        in status["message"]


async def test_extended_resources_backed_by_dra(http: aiohttp.ClientSession) -> None:
    code, body = await _post(http, CLASSES, {"metadata": {"name": "gpu"}, "spec": {
        "extendedResourceName": "example.com/gpu"}})
    assert code == 201, body
    await _quota(http, "gpus", {"requests.example.com/gpu": "3", "requests.deviceclass.resource.kubernetes.io/gpu": "3",
                                "gpu.deviceclass.resource.k8s.io/devices": "10"})
    code, pod = await _post(http, f"{NS}/pods", _pod("trainer", requests={"example.com/gpu": "2"},
                                                      limits={"example.com/gpu": "2"}))
    assert code == 201, pod
    assert (await _used(http, "gpus"))["requests.example.com/gpu"] == "2"

    # The scheduler's special claim for the pod's extended resources: its devices count, and so does the
    # class's implicit extended resource name, but not the extended resource the pod already counts.
    special = {"metadata": {"name": "trainer-extended-resources-x1",
                            "annotations": {"resource.kubernetes.io/extended-resource-claim": "true"},
                            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "trainer",
                                                 "uid": pod["metadata"]["uid"], "controller": True}]},
               "spec": {"devices": {"requests": [_request("container-0-request-0", "gpu", count=2)]}}}
    code, body = await _post(http, CLAIMS, special)
    assert code == 201, body
    assert await _used(http, "gpus") == {"requests.example.com/gpu": "2",
                                         "requests.deviceclass.resource.kubernetes.io/gpu": "2",
                                         "gpu.deviceclass.resource.k8s.io/devices": "2"}

    # A claim of the class made by hand counts as the extended resource too.
    code, status = await _post(http, CLAIMS, {"metadata": {"name": "manual"}, "spec": {"devices": {"requests": [
        _request("a", "gpu", count=2)]}}})
    assert code == 403
    assert status["message"] == ('resourceclaims.resource.k8s.io "manual" is forbidden: exceeded quota: gpus, '
                                 'requested: requests.deviceclass.resource.kubernetes.io/gpu=2,'
                                 'requests.example.com/gpu=2, used: requests.deviceclass.resource.kubernetes.io/gpu=2,'
                                 'requests.example.com/gpu=2, limited: requests.deviceclass.resource.kubernetes.io/gpu=3,'
                                 'requests.example.com/gpu=3')
    code, _ = await _post(http, CLAIMS, {"metadata": {"name": "one"}, "spec": {"devices": {"requests": [
        _request("a", "gpu", count=1)]}}})
    assert code == 201
    assert await _used(http, "gpus") == {"requests.example.com/gpu": "3",
                                         "requests.deviceclass.resource.kubernetes.io/gpu": "3",
                                         "gpu.deviceclass.resource.k8s.io/devices": "3"}


async def test_concurrent_creates_are_charged_one_by_one(http: aiohttp.ClientSession) -> None:
    await _quota(http, "few", {"count/configmaps": "3"})
    results = await asyncio.gather(*(_post(http, f"{NS}/configmaps", {"metadata": {"name": f"cm{i}"}})
                                     for i in range(8)))
    assert sorted(code for code, _ in results) == [201] * 3 + [403] * 5
    assert await _used(http, "few") == {"count/configmaps": "3"}


async def test_objects_outside_namespaces_and_ignored_resources(http: aiohttp.ClientSession) -> None:
    await _quota(http, "nothing", {"count/events": "0", "count/namespaces": "0"})
    event = {"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
             "reason": "Test", "message": "m"}
    assert (await _post(http, f"{NS}/events", event))[0] == 201
    assert (await _post(http, "/api/v1/namespaces", {"metadata": {"name": "fresh"}}))[0] == 201


async def test_a_resize_is_charged_what_grew(http: aiohttp.ClientSession) -> None:
    await _quota(http, "compute", {"requests.cpu": "1"})
    code, _ = await _post(http, f"{NS}/pods", _pod("a", requests={"cpu": "400m"}))
    assert code == 201
    smp = {"Content-Type": "application/strategic-merge-patch+json"}

    async def resize(cpu: str) -> tuple[int, dict[str, Any]]:
        body = {"spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": cpu}}}]}}
        async with http.patch(f"{NS}/pods/a/resize", json=body, headers=smp) as r:
            return r.status, await r.json()

    code, status = await resize("1200m")
    assert (code, status["message"]) == (403, 'pods "a" is forbidden: exceeded quota: compute, requested: '
                                              'requests.cpu=800m, used: requests.cpu=400m, limited: requests.cpu=1')
    code, _ = await resize("900m")
    assert code == 200
    assert await _used(http, "compute") == {"requests.cpu": "900m"}
