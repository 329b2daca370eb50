"""The Priority admission plugin and the system PriorityClasses, over HTTP: the server creates
system-node-critical and system-cluster-critical at start, a pod's priorityClassName resolves to
its priority and preemptionPolicy from the stored classes (the globalDefault class, or 0, without
one), unknown classes and mismatching values are refused with upstream's messages, a second
globalDefault class is refused, and the system classes cannot be deleted by name and come back
after a collection delete.

Out of scope: PriorityClass validation (value bounds, the reserved `system-` prefix).
"""

from __future__ import annotations

from typing import Any

import aiohttp

PODS = "/api/v1/namespaces/default/pods"
PCS = "/apis/scheduling.k8s.io/v1/priorityclasses"


def _pod(name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "app", "image": "nginx"}], **spec}}


async def _create(http: aiohttp.ClientSession, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    async with http.post(path, json=body) as r:
        return r.status, await r.json()


async def test_system_classes_exist_at_start(http: aiohttp.ClientSession) -> None:
    async with http.get(f"{PCS}/system-node-critical") as r:
        assert r.status == 200
        node = await r.json()
    assert (node["value"], node["preemptionPolicy"], node.get("globalDefault", False)) == (
        2000001000, "PreemptLowerPriority", False)
    assert node["description"] == "Used for system critical pods that must not be moved from their current node."
    async with http.get(f"{PCS}/system-cluster-critical") as r:
        assert (await r.json())["value"] == 2000000000
    async with http.get("/readyz?verbose") as r:
        assert "[+]poststarthook/scheduling/bootstrap-system-priority-classes ok" in await r.text()


async def test_pod_priority_comes_from_its_class(http: aiohttp.ClientSession) -> None:
    code, pod = await _create(http, PODS, _pod("plain"))
    assert code == 201
    assert (pod["spec"]["priority"], pod["spec"]["preemptionPolicy"]) == (0, "PreemptLowerPriority")
    assert "priorityClassName" not in pod["spec"]

    code, pod = await _create(http, PODS, _pod("critical", priorityClassName="system-node-critical"))
    assert code == 201 and pod["spec"]["priority"] == 2000001000

    code, _ = await _create(http, PCS, {"metadata": {"name": "batch"}, "value": 100, "preemptionPolicy": "Never"})
    assert code == 201
    code, pod = await _create(http, PODS, _pod("batch-job", priorityClassName="batch"))
    assert code == 201
    assert (pod["spec"]["priority"], pod["spec"]["preemptionPolicy"]) == (100, "Never")


async def test_the_global_default_class_names_itself_in_pods_without_one(http: aiohttp.ClientSession) -> None:
    code, _ = await _create(http, PCS, {"metadata": {"name": "standard"}, "value": 1000, "globalDefault": True,
                                        "preemptionPolicy": "PreemptLowerPriority"})
    assert code == 201
    code, pod = await _create(http, PODS, _pod("web"))
    assert code == 201
    assert (pod["spec"]["priorityClassName"], pod["spec"]["priority"]) == ("standard", 1000)

    code, status = await _create(http, PCS, {"metadata": {"name": "other"}, "value": 5, "globalDefault": True})
    assert code == 403
    assert status["message"] == ('priorityclasses.scheduling.k8s.io "other" is forbidden: PriorityClass standard '
                                 'is already marked as default. Only one default can exist')
    assert status["details"] == {"name": "other", "group": "scheduling.k8s.io", "kind": "priorityclasses"}
    async with http.patch(f"{PCS}/standard", json={"description": "still the default"},
                          headers={"Content-Type": "application/merge-patch+json"}) as r:
        assert r.status == 200  # the default itself may change


async def test_unknown_classes_and_given_values_are_refused(http: aiohttp.ClientSession) -> None:
    code, status = await _create(http, PODS, _pod("lost", priorityClassName="nope"))
    assert (code, status["reason"]) == (403, "Forbidden")
    assert status["message"] == 'pods "lost" is forbidden: no PriorityClass with name nope was found'
    code, status = await _create(http, PODS, _pod("greedy", priorityClassName="system-cluster-critical",
                                                  priority=7))
    assert code == 403
    assert status["message"] == ('pods "greedy" is forbidden: the integer value of priority (7) must not be '
                                 'provided in pod spec; priority admission controller computed 2000000000 from '
                                 'the given PriorityClass name')
    code, status = await _create(http, PODS, _pod("polite", preemptionPolicy="Never"))
    assert code == 403
    assert status["message"] == ('pods "polite" is forbidden: the string value of PreemptionPolicy (Never) must '
                                 'not be provided in pod spec; priority admission controller computed '
                                 'PreemptLowerPriority from the given PriorityClass name')
    code, pod = await _create(http, PODS, _pod("matching", priority=0, preemptionPolicy="PreemptLowerPriority"))
    assert code == 201 and pod["spec"]["priority"] == 0


async def test_an_update_keeps_the_pods_priority(http: aiohttp.ClientSession) -> None:
    code, pod = await _create(http, PODS, _pod("keep", priorityClassName="system-node-critical"))
    assert code == 201
    body = {**pod, "metadata": {**pod["metadata"], "labels": {"x": "y"}}}
    body["spec"] = {k: v for k, v in pod["spec"].items() if k not in ("priority", "preemptionPolicy")}
    async with http.put(f"{PODS}/keep", json=body) as r:
        assert r.status == 200, await r.text()
        updated = await r.json()
    assert (updated["spec"]["priority"], updated["spec"]["preemptionPolicy"]) == (2000001000, "PreemptLowerPriority")


async def test_system_classes_cannot_be_deleted_and_come_back(http: aiohttp.ClientSession) -> None:
    async with http.delete(f"{PCS}/system-node-critical") as r:
        assert r.status == 403
        status = await r.json()
    assert status["message"] == ('priorityclasses.scheduling.k8s.io "system-node-critical" is forbidden: this is a '
                                 'system priority class and cannot be deleted')
    async with http.get(f"{PCS}/system-node-critical") as r:
        uid = (await r.json())["metadata"]["uid"]
    async with http.delete(PCS) as r:  # a collection delete goes through, as upstream's
        assert r.status == 200
    async with http.get(PCS) as r:
        names = {pc["metadata"]["name"]: pc["metadata"]["uid"] for pc in (await r.json())["items"]}
    assert set(names) == {"system-node-critical", "system-cluster-critical"}
    assert names["system-node-critical"] != uid  # created again
