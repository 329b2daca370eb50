"""Field selectors on custom resources, as apiextensions-apiserver accepts and evaluates them:
`metadata.name`, `metadata.namespace` (namespaced resources only) and the version's `selectableFields`,
on lists, watches and collection deletes; any other field is upstream's 400."""

from __future__ import annotations

import copy
import json
from typing import Any

import aiohttp

from tests.api.crds.test_serving import establish
from tests.crds import WIDGETS

BASE = "/apis/example.com/v1/namespaces/default/widgets"


def _crd(*, scope: str = "Namespaced") -> dict[str, Any]:
    crd = copy.deepcopy(WIDGETS)
    crd["spec"]["scope"] = scope
    version = crd["spec"]["versions"][0]
    version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["branded"] = {"type": "boolean"}
    version["selectableFields"] = [{"jsonPath": ".spec.color"}, {"jsonPath": ".spec.replicas"},
                                   {"jsonPath": ".spec.branded"}]
    return crd


async def _names(http: aiohttp.ClientSession, path: str, selector: str) -> list[str]:
    async with http.get(path, params={"fieldSelector": selector}) as resp:
        assert resp.status == 200, await resp.text()
        listed = json.loads(await resp.read())
    return sorted(i["metadata"]["name"] for i in listed["items"])


async def _seed(http: aiohttp.ClientSession, base: str) -> None:
    for name, spec in (("s1", {"color": "blue", "replicas": 2, "branded": True}),
                       ("s2", {"color": "blue", "replicas": 3, "branded": False}),
                       ("s3", {"color": "green", "replicas": 2})):
        async with http.post(base, json={"apiVersion": "example.com/v1", "kind": "Widget",
                                         "metadata": {"name": name}, "spec": spec}) as resp:
            assert resp.status == 201, await resp.text()


async def test_selectable_fields_select(http: aiohttp.ClientSession) -> None:
    await establish(http, _crd())
    await _seed(http, BASE)
    assert await _names(http, BASE, "spec.color=blue") == ["s1", "s2"]
    assert await _names(http, BASE, "spec.replicas=2") == ["s1", "s3"]
    assert await _names(http, BASE, "spec.branded=false") == ["s2"]  # missing reads as ""
    assert await _names(http, BASE, "spec.color=blue,spec.replicas!=2") == ["s2"]
    assert await _names(http, BASE, "metadata.name=s3") == ["s3"]
    assert await _names(http, "/apis/example.com/v1/widgets", "metadata.namespace=default") == ["s1", "s2", "s3"]
    assert await _names(http, "/apis/example.com/v1/widgets", "spec.color==green") == ["s3"]


async def test_an_unknown_field_is_refused_as_upstream(http: aiohttp.ClientSession) -> None:
    await establish(http, _crd())
    for path in (BASE, f"{BASE}?watch=1"):
        async with http.get(path, params={"fieldSelector": "spec.size=M"}) as resp:
            assert resp.status == 400
            status = json.loads(await resp.read())
        assert status["reason"] == "BadRequest"
        assert status["message"] == "field label not supported: spec.size"


async def test_cluster_scoped_has_no_namespace_field(http: aiohttp.ClientSession) -> None:
    await establish(http, _crd(scope="Cluster"))
    base = "/apis/example.com/v1/widgets"
    await _seed(http, base)
    assert await _names(http, base, "spec.color=green") == ["s3"]
    async with http.get(base, params={"fieldSelector": "metadata.namespace=default"}) as resp:
        assert resp.status == 400
        assert json.loads(await resp.read())["message"] == "field label not supported: metadata.namespace"


async def test_a_watch_sees_objects_leave_the_selection(http: aiohttp.ClientSession) -> None:
    await establish(http, _crd())
    await _seed(http, BASE)
    async with http.get(BASE, params={"watch": "1", "fieldSelector": "spec.color=blue",
                                      "timeoutSeconds": "5"}) as watch:
        added = [json.loads(await watch.content.readline()) for _ in range(2)]
        assert sorted(e["object"]["metadata"]["name"] for e in added) == ["s1", "s2"]
        async with http.patch(f"{BASE}/s2", data=json.dumps({"spec": {"color": "red"}}),
                              headers={"Content-Type": "application/merge-patch+json"}) as resp:
            assert resp.status == 200
        left = json.loads(await watch.content.readline())
    assert left["type"] == "DELETED" and left["object"]["metadata"]["name"] == "s2"


async def test_delete_collection_by_selectable_field(http: aiohttp.ClientSession) -> None:
    await establish(http, _crd())
    await _seed(http, BASE)
    async with http.delete(BASE, params={"fieldSelector": "spec.replicas=2"}) as resp:
        assert resp.status == 200, await resp.text()
    assert await _names(http, BASE, "") == ["s2"]


async def test_each_version_selects_on_its_own_fields(http: aiohttp.ClientSession) -> None:
    crd = _crd()
    beta = copy.deepcopy(crd["spec"]["versions"][0])
    beta.update(name="v1beta1", storage=False, selectableFields=[{"jsonPath": ".spec.branded"}])
    crd["spec"]["versions"].append(beta)
    await establish(http, crd)
    await _seed(http, BASE)
    beta_base = "/apis/example.com/v1beta1/namespaces/default/widgets"
    assert await _names(http, beta_base, "spec.branded=true") == ["s1"]
    async with http.get(beta_base, params={"fieldSelector": "spec.color=blue"}) as resp:
        assert resp.status == 400
        assert json.loads(await resp.read())["message"] == "field label not supported: spec.color"
