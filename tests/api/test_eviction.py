"""pods/eviction over HTTP: deletes a pod unless its PodDisruptionBudget forbids it (429), as
kube-apiserver's EvictionREST. The budgets' status is written by hand here (no disruption controller
runs in this server; tests/controllers/disruption/ covers it)."""

from __future__ import annotations

import json
from typing import Any

import aiohttp

NS = "/api/v1/namespaces/default"
PDBS = "/apis/policy/v1/namespaces/default/poddisruptionbudgets"


async def _json(resp: aiohttp.ClientResponse) -> Any:
    return json.loads(await resp.read())


async def _running_pod(http: aiohttp.ClientSession, name: str, *, ready: bool = True,
                       phase: str = "Running", app: str = "web") -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": app}},
           "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    async with http.post(f"{NS}/pods", json=pod) as r:
        assert r.status == 201, await r.text()
        created = await _json(r)
    created["status"] = {"phase": phase, "conditions": [
        {"type": "Ready", "status": "True" if ready else "False"}]}
    async with http.put(f"{NS}/pods/{name}/status", json=created) as r:
        assert r.status == 200, await r.text()


async def _budget(http: aiohttp.ClientSession, name: str, *, allowed: int, healthy: int = 2, desired: int = 2,
                  app: str = "web", policy: str | None = None, observed: bool = True) -> dict[str, Any]:
    spec: dict[str, Any] = {"minAvailable": desired, "selector": {"matchLabels": {"app": app}}}
    if policy:
        spec["unhealthyPodEvictionPolicy"] = policy
    async with http.post(PDBS, json={"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                                     "metadata": {"name": name}, "spec": spec}) as r:
        assert r.status == 201, await r.text()
        pdb = await _json(r)
    pdb["status"] = {"observedGeneration": 1 if observed else 0, "disruptionsAllowed": allowed,
                     "currentHealthy": healthy, "desiredHealthy": desired, "expectedPods": healthy}
    async with http.put(f"{PDBS}/{name}/status", json=pdb) as r:
        assert r.status == 200, await r.text()
        return dict(await _json(r))


def _eviction(name: str, **more: Any) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": "default"},
            **more}


async def _exists(http: aiohttp.ClientSession, name: str) -> bool:
    async with http.get(f"{NS}/pods/{name}") as r:
        return r.status == 200


async def test_discovery_names_the_eviction_subresource(http: aiohttp.ClientSession) -> None:
    async with http.get("/api/v1") as r:
        subs = {x["name"]: x for x in (await _json(r))["resources"]}
    assert subs["pods/eviction"] == {"name": "pods/eviction", "singularName": "", "namespaced": True,
                                     "group": "policy", "version": "v1", "kind": "Eviction", "verbs": ["create"]}


async def test_eviction_without_budget_deletes_the_pod(http: aiohttp.ClientSession) -> None:
    await _running_pod(http, "a")
    async with http.post(f"{NS}/pods/a/eviction", json=_eviction("a")) as r:
        assert r.status == 201
        assert await r.read() == b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201}\n'
    assert not await _exists(http, "a")  # unbound: deleted at once


async def test_missing_pod_is_404_and_names_must_match(http: aiohttp.ClientSession) -> None:
    async with http.post(f"{NS}/pods/nope/eviction", json=_eviction("nope")) as r:
        assert r.status == 404
        assert (await _json(r))["message"] == 'pods "nope" not found'
    await _running_pod(http, "a")
    async with http.post(f"{NS}/pods/a/eviction", json=_eviction("b")) as r:
        assert r.status == 400
        assert (await _json(r))["message"] == "name in URL does not match name in Eviction object"
    async with http.post(f"{NS}/pods/a/eviction", json={**_eviction("a"), "apiVersion": "v1"}) as r:
        assert r.status == 400
    other_ns = _eviction("a")
    other_ns["metadata"]["namespace"] = "elsewhere"
    async with http.post(f"{NS}/pods/a/eviction", json=other_ns) as r:
        assert r.status == 400
        assert (await _json(r))["message"] == ("the namespace of the provided object does not match the "
                                               "namespace sent on the request")
    async with http.get(f"{NS}/pods/a/eviction") as r:
        assert r.status == 405
    assert await _exists(http, "a")


async def test_budget_is_spent_then_429(http: aiohttp.ClientSession) -> None:
    for name in ("a", "b", "c"):
        await _running_pod(http, name)
    await _budget(http, "web", allowed=1, healthy=3, desired=2)
    async with http.post(f"{NS}/pods/a/eviction", json=_eviction("a")) as r:
        assert r.status == 201, await r.text()
    assert not await _exists(http, "a")
    async with http.get(f"{PDBS}/web") as r:
        status = (await _json(r))["status"]
    assert status["disruptionsAllowed"] == 0
    assert list(status["disruptedPods"]) == ["a"]
    cond = next(c for c in status["conditions"] if c["type"] == "DisruptionAllowed")
    assert (cond["status"], cond["reason"]) == ("False", "InsufficientPods")

    # policy/v1beta1 bodies are accepted as well
    async with http.post(f"{NS}/pods/b/eviction", json={**_eviction("b"), "apiVersion": "policy/v1beta1"}) as r:
        assert r.status == 429
        body = await _json(r)
    assert body == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": "Cannot evict pod as it would violate the pod's disruption budget.",
                    "reason": "TooManyRequests",
                    "details": {"causes": [{"reason": "DisruptionBudget",
                                            "message": "The disruption budget web needs 2 healthy pods and "
                                                       "has 3 currently"}]},
                    "code": 429}
    assert await _exists(http, "b")


async def test_budget_not_yet_observed_is_429_with_retry_after(http: aiohttp.ClientSession) -> None:
    await _running_pod(http, "a")
    await _budget(http, "web", allowed=1, observed=False)
    async with http.post(f"{NS}/pods/a/eviction", json=_eviction("a")) as r:
        assert r.status == 429
        assert r.headers["Retry-After"] == "10"
        body = await _json(r)
    assert body["details"] == {"causes": [{"reason": "DisruptionBudget",
                                           "message": "The disruption budget web is still being processed by "
                                                      "the server."}], "retryAfterSeconds": 10}


async def test_dry_run_spends_nothing(http: aiohttp.ClientSession) -> None:
    await _running_pod(http, "a")
    before = await _budget(http, "web", allowed=1)
    async with http.post(f"{NS}/pods/a/eviction", params={"dryRun": "All"}, json=_eviction("a")) as r:
        assert r.status == 201
    assert await _exists(http, "a")
    async with http.get(f"{PDBS}/web") as r:
        assert (await _json(r))["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    body = _eviction("a", deleteOptions={"dryRun": []})
    async with http.post(f"{NS}/pods/a/eviction", params={"dryRun": "All"}, json=body) as r:
        assert r.status == 201
    body = _eviction("a", deleteOptions={"dryRun": ["All"]})
    async with http.post(f"{NS}/pods/a/eviction", json=body) as r:
        assert r.status == 201
    assert await _exists(http, "a")


async def test_pending_and_finished_pods_ignore_budgets(http: aiohttp.ClientSession) -> None:
    await _running_pod(http, "p", phase="Pending")
    await _running_pod(http, "f", phase="Succeeded")
    await _budget(http, "web", allowed=0)
    for name in ("p", "f"):
        async with http.post(f"{NS}/pods/{name}/eviction", json=_eviction(name)) as r:
            assert r.status == 201, await r.text()
        assert not await _exists(http, name)


async def test_unhealthy_pods_and_the_eviction_policy(http: aiohttp.ClientSession) -> None:
    await _running_pod(http, "sick", ready=False)
    await _running_pod(http, "sick2", ready=False, app="db")
    # IfHealthyBudget (the default): the budget is met without it, so it goes without spending
    await _budget(http, "web", allowed=0, healthy=2, desired=2)
    async with http.post(f"{NS}/pods/sick/eviction", json=_eviction("sick")) as r:
        assert r.status == 201, await r.text()
    # not met: the unready pod is guarded like the others
    await _budget(http, "db", allowed=0, healthy=1, desired=2, app="db")
    async with http.post(f"{NS}/pods/sick2/eviction", json=_eviction("sick2")) as r:
        assert r.status == 429
    # AlwaysAllow: unready pods always go
    async with http.get(f"{PDBS}/db") as r:
        pdb = await _json(r)
    pdb["spec"]["unhealthyPodEvictionPolicy"] = "AlwaysAllow"
    async with http.put(f"{PDBS}/db", json=pdb) as r:
        assert r.status == 200
        pdb = await _json(r)
    pdb["status"]["observedGeneration"] = pdb["metadata"]["generation"]
    async with http.put(f"{PDBS}/db/status", json=pdb) as r:
        assert r.status == 200
    async with http.post(f"{NS}/pods/sick2/eviction", json=_eviction("sick2")) as r:
        assert r.status == 201, await r.text()
    async with http.get(f"{PDBS}/db") as r:
        assert (await _json(r))["status"]["disruptionsAllowed"] == 0


async def test_more_than_one_budget(http: aiohttp.ClientSession) -> None:
    await _running_pod(http, "a")
    await _budget(http, "one", allowed=1)
    await _budget(http, "two", allowed=1)
    async with http.post(f"{NS}/pods/a/eviction", json=_eviction("a")) as r:
        assert r.status == 500
        assert await _json(r) == {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "This pod has more than one PodDisruptionBudget, which the eviction subresource "
                       "does not support.", "code": 500}
    assert await _exists(http, "a")


async def test_delete_options_are_used(http: aiohttp.ClientSession) -> None:
    await _running_pod(http, "a")
    body = _eviction("a", deleteOptions={"preconditions": {"uid": "not-it"}})
    async with http.post(f"{NS}/pods/a/eviction", json=body) as r:
        assert r.status == 409
    assert await _exists(http, "a")


async def test_concurrent_evictions_spend_the_budget_once(http: aiohttp.ClientSession) -> None:
    import asyncio

    names = [f"p{i}" for i in range(4)]
    for name in names:
        await _running_pod(http, name)
    await _budget(http, "web", allowed=1, healthy=4, desired=3)

    async def evict(name: str) -> int:
        async with http.post(f"{NS}/pods/{name}/eviction", json=_eviction(name)) as r:
            return r.status

    codes = await asyncio.gather(*(evict(n) for n in names))
    assert sorted(codes) == [201, 429, 429, 429]
    async with http.get(f"{PDBS}/web") as r:
        status = (await _json(r))["status"]
    assert status["disruptionsAllowed"] == 0
    assert list(status["disruptedPods"]) == [names[codes.index(201)]]


async def test_dry_run_options_must_agree(http: aiohttp.ClientSession) -> None:
    await _running_pod(http, "a")
    body = _eviction("a", deleteOptions={"dryRun": ["Nope"]})
    async with http.post(f"{NS}/pods/a/eviction", params={"dryRun": "All"}, json=body) as r:
        assert r.status == 400
        assert (await _json(r))["message"] == ("Non-matching dry-run options in request and content: "
                                               "[All] and [Nope]")
    assert await _exists(http, "a")


async def test_an_evicted_pod_is_marked_as_a_disruption_target(http: aiohttp.ClientSession) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bound", "labels": {"app": "web"}},
           "spec": {"nodeName": "node-0", "containers": [{"name": "c", "image": "nginx"}]}}
    async with http.post(f"{NS}/pods", json=pod) as r:
        created = await _json(r)
    created["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    async with http.put(f"{NS}/pods/bound/status", json=created) as r:
        assert r.status == 200
    async with http.post(f"{NS}/pods/bound/eviction", json=_eviction("bound")) as r:
        assert r.status == 201
    async with http.get(f"{NS}/pods/bound") as r:
        terminating = await _json(r)  # a bound pod is deleted gracefully: still there, terminating
    assert terminating["metadata"]["deletionTimestamp"]
    target = next(c for c in terminating["status"]["conditions"] if c["type"] == "DisruptionTarget")
    assert (target["status"], target["reason"], target["message"]) == (
        "True", "EvictionByEvictionAPI", "Eviction API: evicting")
