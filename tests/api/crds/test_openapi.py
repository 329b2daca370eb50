"""Custom resources in `/openapi/v3` and `/openapi/v2`, as apiextensions-apiserver's OpenAPI controllers
publish them: the kind and list kind built from the definition's schema, with the metadata references,
group-version-kinds, selectable fields and paths; new hashes and ETags as soon as a definition changes,
and nothing left of it once it is deleted."""

from __future__ import annotations

import copy
import json
from typing import Any

import aiohttp

from tests import waiting
from tests.api.crds.test_serving import CRDS, establish
from tests.cp.test_openapi_v2 import _kube_openapi_problems
from tests.crds import WIDGETS

PB = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"


def _crd() -> dict[str, Any]:
    crd = copy.deepcopy(WIDGETS)
    version = crd["spec"]["versions"][0]
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["description"] = "What the widget should be."
    spec["properties"]["color"].update({"description": "The widget's color.", "default": "blue"})
    spec["properties"]["size"] = {"x-kubernetes-int-or-string": True}
    spec["properties"]["note"] = {"type": "string", "nullable": True}
    spec["properties"]["extra"] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    version["selectableFields"] = [{"jsonPath": ".spec.color"}]
    return crd


async def _json(http: aiohttp.ClientSession, path: str, **headers: str) -> tuple[Any, aiohttp.typedefs.LooseHeaders]:
    async with http.get(path, headers=headers) as resp:
        assert resp.status == 200, await resp.text()
        return json.loads(await resp.read()), resp.headers


async def _v3_url(http: aiohttp.ClientSession) -> str | None:
    index, _ = await _json(http, "/openapi/v3")
    entry = index["paths"].get("apis/example.com/v1")
    return None if entry is None else str(entry["serverRelativeURL"])


async def test_v3_document_of_a_custom_resource(http: aiohttp.ClientSession) -> None:
    await establish(http, _crd())
    url = await _v3_url(http)
    assert url is not None and url.startswith("/openapi/v3/apis/example.com/v1?hash=")
    doc, headers = await _json(http, url)
    assert headers["Etag"] == f'"{url.split("hash=")[1]}"'
    schemas = doc["components"]["schemas"]
    widget = schemas["com.example.v1.Widget"]
    assert widget["x-kubernetes-group-version-kind"] == [{"group": "example.com", "version": "v1", "kind": "Widget"}]
    assert widget["x-kubernetes-selectable-fields"] == [{"fieldPath": "spec.color"}]
    props = widget["properties"]
    assert props["metadata"]["allOf"] == [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}]
    assert props["apiVersion"]["type"] == "string" and props["kind"]["type"] == "string"
    spec = props["spec"]
    assert spec["description"] == "What the widget should be."
    assert spec["properties"]["color"] == {"description": "The widget's color.", "type": "string", "default": "blue"}
    assert spec["properties"]["size"]["anyOf"] == [{"type": "integer"}, {"type": "string"}]  # unfolded
    assert spec["properties"]["note"]["nullable"] is True
    widgets = schemas["com.example.v1.WidgetList"]
    assert widgets["x-kubernetes-group-version-kind"] == [{"group": "example.com", "version": "v1", "kind": "WidgetList"}]
    assert widgets["properties"]["items"]["items"] == {"$ref": "#/components/schemas/com.example.v1.Widget"}
    assert "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" in schemas
    assert "io.k8s.api.autoscaling.v1.Scale" in schemas
    paths = doc["paths"]
    item = paths["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]
    assert item["patch"]["x-kubernetes-group-version-kind"]["kind"] == "Widget"
    assert "application/strategic-merge-patch+json" not in item["patch"]["requestBody"]["content"]
    assert "/apis/example.com/v1/namespaces/{namespace}/widgets/{name}/scale" in paths
    assert "/apis/example.com/v1/namespaces/{namespace}/widgets/{name}/status" in paths
    assert "/apis/example.com/v1/widgets" in paths


async def test_documents_change_with_the_definition(http: aiohttp.ClientSession) -> None:
    crd = await establish(http, _crd())
    url = await _v3_url(http)
    _, v2_headers = await _json(http, "/openapi/v2", Accept="application/json")
    apps_before = (await _json(http, "/openapi/v3"))[0]["paths"]["apis/apps/v1"]

    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["shape"] = {
        "type": "string", "description": "A new field."}
    async with http.put(f"{CRDS}/widgets.example.com", json=crd) as resp:
        assert resp.status == 200, await resp.text()

    async def rehashed() -> str | None:
        new = await _v3_url(http)
        return new if new != url else None

    new_url = await waiting.eventually(rehashed, within=5.0)
    assert new_url is not None
    doc, _ = await _json(http, new_url)
    spec = doc["components"]["schemas"]["com.example.v1.Widget"]["properties"]["spec"]
    assert spec["properties"]["shape"]["description"] == "A new field."
    assert (await _json(http, "/openapi/v3"))[0]["paths"]["apis/apps/v1"] == apps_before  # the rest is as it was
    swagger, headers = await _json(http, "/openapi/v2", Accept="application/json")
    assert headers["Etag"] != v2_headers["Etag"]
    assert "shape" in swagger["definitions"]["com.example.v1.Widget"]["properties"]["spec"]["properties"]

    async with http.delete(f"{CRDS}/widgets.example.com") as resp:
        assert resp.status == 200

    async def dropped() -> bool:
        return await _v3_url(http) is None

    await waiting.eventually(dropped, within=5.0)
    swagger, _ = await _json(http, "/openapi/v2", Accept="application/json")
    assert "com.example.v1.Widget" not in swagger["definitions"]


async def test_v2_document_of_a_custom_resource(http: aiohttp.ClientSession) -> None:
    await establish(http, _crd())
    swagger, headers = await _json(http, "/openapi/v2", Accept="application/json")
    definitions = swagger["definitions"]
    widget = definitions["com.example.v1.Widget"]
    assert widget["x-kubernetes-group-version-kind"] == [{"group": "example.com", "version": "v1", "kind": "Widget"}]
    assert widget["properties"]["metadata"]["$ref"] == "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    spec = widget["properties"]["spec"]["properties"]
    assert "default" not in spec["color"]  # defaults pruned, as upstream's v2 controller does
    assert spec["size"] == {"x-kubernetes-int-or-string": True}  # no junctors in v2
    assert spec["note"] == {}  # nullable: no type
    assert spec["extra"] == {"x-kubernetes-preserve-unknown-fields": True}
    assert definitions["com.example.v1.WidgetList"]["properties"]["items"]["items"] == {
        "$ref": "#/definitions/com.example.v1.Widget"}
    for name in ("com.example.v1.Widget", "com.example.v1.WidgetList"):
        assert _kube_openapi_problems(name, definitions[name], set(definitions)) == []
    patch = swagger["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"]["kind"] == "Widget"
    async with http.get("/openapi/v2", headers={"Accept": PB}) as resp:
        assert resp.status == 200 and resp.headers["Etag"] == headers["Etag"]
        assert len(await resp.read()) > 1000
