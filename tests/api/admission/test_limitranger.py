"""The LimitRanger admission plugin over HTTP: a namespace's LimitRanges give new pods' containers
their default requests and limits (and say so in the `kubernetes.io/limit-ranger` annotation), and
pods and PersistentVolumeClaims outside the `min`/`max`/`maxLimitRequestRatio` bounds of the
Container, Pod and PersistentVolumeClaim items are refused with upstream's messages.

Out of scope: LimitRange defaulting and validation (the object itself).
"""

from __future__ import annotations

from typing import Any

import aiohttp

NS = "/api/v1/namespaces/default"


def _pod(name: str, *containers: dict[str, Any], init: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": list(containers) or [{"name": "app", "image": "nginx"}]}
    if init:
        spec["initContainers"] = list(init)
    return {"metadata": {"name": name}, "spec": spec}


def _container(name: str, *, requests: dict[str, str] | None = None,
               limits: dict[str, str] | None = None) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    return {"name": name, "image": "nginx", "resources": resources}


async def _post(http: aiohttp.ClientSession, what: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    async with http.post(f"{NS}/{what}", json=body) as r:
        return r.status, await r.json()


async def _limits(http: aiohttp.ClientSession, name: str, *items: dict[str, Any]) -> None:
    code, body = await _post(http, "limitranges", {"metadata": {"name": name}, "spec": {"limits": list(items)}})
    assert code == 201, body


async def test_containers_get_the_defaults(http: aiohttp.ClientSession) -> None:
    await _limits(http, "defaults", {"type": "Container", "default": {"cpu": "500m", "memory": "256Mi"},
                                     "defaultRequest": {"cpu": "100m", "memory": "128Mi"}})
    code, pod = await _post(http, "pods", _pod("web", _container("app"), _container("side", limits={"cpu": "1"}),
                                                init=(_container("setup"),)))
    assert code == 201, pod
    app, side = pod["spec"]["containers"]
    assert app["resources"] == {"limits": {"cpu": "500m", "memory": "256Mi"},
                                "requests": {"cpu": "100m", "memory": "128Mi"}}
    # A limit the container gave stays, and (defaulted before admission) is its request too.
    assert side["resources"] == {"limits": {"cpu": "1", "memory": "256Mi"}, "requests": {"cpu": "1", "memory": "128Mi"}}
    assert pod["spec"]["initContainers"][0]["resources"] == app["resources"]
    assert pod["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for container app; "
        "memory request for container side; memory limit for container side; "
        "cpu, memory request for init container setup; cpu, memory limit for init container setup")
    assert pod["status"]["qosClass"] == "Burstable"  # computed from the defaulted resources


async def test_container_bounds(http: aiohttp.ClientSession) -> None:
    await _limits(http, "bounds", {"type": "Container", "max": {"cpu": "1"}, "min": {"memory": "64Mi"},
                                   "maxLimitRequestRatio": {"cpu": "2"}})
    code, status = await _post(http, "pods", _pod("big", _container(
        "app", requests={"cpu": "500m", "memory": "32Mi"}, limits={"cpu": "2", "memory": "32Mi"})))
    assert (code, status["reason"]) == (403, "Forbidden")
    assert status["message"] == (
        'pods "big" is forbidden: [minimum memory usage per Container is 64Mi, but request is 32Mi, '
        'maximum cpu usage per Container is 1, but limit is 2, '
        'cpu max limit to request ratio per Container is 2, but provided ratio is 4.000000]')
    # A Container max is also the default limit and request (the LimitRange's defaulting).
    code, pod = await _post(http, "pods", _pod("unlimited", _container("app", requests={"memory": "64Mi"})))
    assert code == 201, pod
    assert pod["spec"]["containers"][0]["resources"] == {"limits": {"cpu": "1"},
                                                         "requests": {"cpu": "1", "memory": "64Mi"}}
    code, pod = await _post(http, "pods", _pod("fits", _container(
        "app", requests={"cpu": "500m", "memory": "64Mi"}, limits={"cpu": "1", "memory": "64Mi"})))
    assert code == 201, pod


async def test_pod_bounds_without_limits(http: aiohttp.ClientSession) -> None:
    await _limits(http, "pod-bounds", {"type": "Pod", "max": {"cpu": "1"}, "maxLimitRequestRatio": {"cpu": "2"}})
    code, status = await _post(http, "pods", _pod("unlimited", _container("app", requests={"memory": "64Mi"})))
    assert code == 403
    assert status["message"] == ('pods "unlimited" is forbidden: [maximum cpu usage per Pod is 1.  No limit '
                                 'is specified, cpu max limit to request ratio per Pod is 2, but no request '
                                 'is specified or request is 0]')


async def test_pod_bounds_count_init_containers_as_the_scheduler(http: aiohttp.ClientSession) -> None:
    await _limits(http, "per-pod", {"type": "Pod", "max": {"memory": "1Gi"}})
    two = (_container("a", limits={"memory": "600Mi"}), _container("b", limits={"memory": "600Mi"}))
    code, status = await _post(http, "pods", _pod("pair", *two))
    assert code == 403
    assert status["message"] == 'pods "pair" is forbidden: maximum memory usage per Pod is 1Gi, but limit is 1200Mi'
    code, pod = await _post(http, "pods", _pod("staged", _container("a", limits={"memory": "600Mi"}),
                                               init=(_container("init", limits={"memory": "900Mi"}),)))
    assert code == 201, pod  # the init container runs before the others: max(900Mi, 600Mi)


async def test_claim_storage_bounds(http: aiohttp.ClientSession) -> None:
    await _limits(http, "storage", {"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"},
                                    "max": {"storage": "10Gi"}})

    def claim(name: str, size: str) -> dict[str, Any]:
        return {"metadata": {"name": name}, "spec": {"accessModes": ["ReadWriteOnce"],
                                                     "resources": {"requests": {"storage": size}}}}

    code, status = await _post(http, "persistentvolumeclaims", claim("huge", "20Gi"))
    assert code == 403
    assert status["message"] == ('persistentvolumeclaims "huge" is forbidden: maximum storage usage per '
                                 'PersistentVolumeClaim is 10Gi, but request is 20Gi')
    code, status = await _post(http, "persistentvolumeclaims", claim("tiny", "100Mi"))
    assert status["message"] == ('persistentvolumeclaims "tiny" is forbidden: minimum storage usage per '
                                 'PersistentVolumeClaim is 1Gi, but request is 100Mi')
    code, _ = await _post(http, "persistentvolumeclaims", claim("fine", "5Gi"))
    assert code == 201
    # Only a bound claim may ask for more storage.
    async with http.patch(f"{NS}/persistentvolumeclaims/fine/status",
                          json={"status": {"phase": "Bound", "capacity": {"storage": "5Gi"}}},
                          headers={"Content-Type": "application/merge-patch+json"}) as r:
        assert r.status == 200, await r.text()
    async with http.patch(f"{NS}/persistentvolumeclaims/fine",
                          json={"spec": {"resources": {"requests": {"storage": "50Gi"}}}},
                          headers={"Content-Type": "application/merge-patch+json"}) as r:
        assert r.status == 403  # an expansion is checked too


async def test_without_limit_ranges_pods_are_left_alone(http: aiohttp.ClientSession) -> None:
    code, pod = await _post(http, "pods", _pod("plain"))
    assert code == 201
    assert pod["spec"]["containers"][0]["resources"] == {}
    assert "annotations" not in pod["metadata"]


async def test_a_resize_is_held_to_the_bounds(http: aiohttp.ClientSession) -> None:
    await _limits(http, "bounds", {"type": "Container", "max": {"cpu": "1"}})
    code, pod = await _post(http, "pods", _pod("web", _container("app", requests={"cpu": "200m"},
                                                                  limits={"cpu": "500m"})))
    assert code == 201, pod
    smp = {"Content-Type": "application/strategic-merge-patch+json"}
    body = {"spec": {"containers": [{"name": "app", "resources": {"limits": {"cpu": "2"}}}]}}
    async with http.patch(f"{NS}/pods/web/resize", json=body, headers=smp) as r:
        assert r.status == 403, await r.text()
        assert (await r.json())["message"] == ('pods "web" is forbidden: maximum cpu usage per Container is 1, '
                                               'but limit is 2')
    body["spec"]["containers"][0]["resources"]["limits"]["cpu"] = "800m"
    async with http.patch(f"{NS}/pods/web/resize", json=body, headers=smp) as r:
        assert r.status == 200, await r.text()
