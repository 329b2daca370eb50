"""Server-side apply of custom resources honours the definition's schema: `x-kubernetes-list-type: map`
lists merge by their keys, so two managers own different entries, and a `set` keeps both managers'
values; a conflict on a field another manager owns is a 409."""

from __future__ import annotations

import copy
import json
from typing import Any

import aiohttp

from tests.api.crds.test_serving import establish
from tests.crds import WIDGETS

APPLY = {"Content-Type": "application/apply-patch+yaml"}
BASE = "/apis/example.com/v1/namespaces/default/widgets"


def _crd() -> dict[str, Any]:
    crd = copy.deepcopy(WIDGETS)
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    spec["ports"] = {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                     "items": {"type": "object", "required": ["name"],
                               "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}}
    spec["tags"] = {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}
    return crd


async def _apply(http: aiohttp.ClientSession, manager: str, body: dict[str, Any], *,
                 force: bool = False) -> tuple[int, dict[str, Any]]:
    query = f"?fieldManager={manager}" + ("&force=true" if force else "")
    async with http.patch(f"{BASE}/w{query}", data=json.dumps(body), headers=APPLY) as resp:
        return resp.status, json.loads(await resp.read())


async def test_list_maps_and_sets_merge_per_entry_across_managers(http: aiohttp.ClientSession) -> None:
    await establish(http, _crd())
    head = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    code, _ = await _apply(http, "alice", {**head, "spec": {"ports": [{"name": "http", "port": 80}],
                                                            "tags": ["a"], "color": "blue"}})
    assert code == 201
    code, got = await _apply(http, "bob", {**head, "spec": {"ports": [{"name": "grpc", "port": 9090}],
                                                            "tags": ["b"]}})
    assert code == 200, got
    assert got["spec"]["ports"] == [{"name": "http", "port": 80}, {"name": "grpc", "port": 9090}]
    assert sorted(got["spec"]["tags"]) == ["a", "b"]
    managers = {m["manager"]: m["fieldsV1"] for m in got["metadata"]["managedFields"]}
    assert 'k:{"name":"grpc"}' in managers["bob"]["f:spec"]["f:ports"]
    code, conflict = await _apply(http, "bob", {**head, "spec": {"color": "red"}})
    assert code == 409 and conflict["reason"] == "Conflict"
    assert 'conflict with "alice"' in conflict["message"] and ".spec.color" in conflict["message"]
    # alice stops applying her port: it goes, bob's stays
    code, got = await _apply(http, "alice", {**head, "spec": {"tags": ["a"], "color": "blue"}})
    assert got["spec"]["ports"] == [{"name": "grpc", "port": 9090}]
