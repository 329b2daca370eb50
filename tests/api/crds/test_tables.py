"""Custom resources as Tables (`Accept: ...;as=Table`), as apiextensions-apiserver's table convertor
prints them: the definition's printer columns (JSONPath, types, priority, descriptions), upstream's
default Name and Age without columns, and new columns as soon as the definition changes."""

from __future__ import annotations

import copy
import json
from typing import Any

import aiohttp

from tests import waiting
from tests.api.crds.test_serving import CRDS, establish
from tests.crds import WIDGETS

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
BASE = "/apis/example.com/v1/namespaces/default/widgets"

COLUMNS = [
    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas", "description": "Desired replicas"},
    {"name": "Color", "type": "string", "jsonPath": ".spec.color", "priority": 1},
    {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
    {"name": "Ratio", "type": "number", "jsonPath": ".spec.ratio"},
    {"name": "Paused", "type": "boolean", "jsonPath": ".spec.paused"},
    {"name": "Since", "type": "date", "jsonPath": ".status.since", "format": "date-time"},
    {"name": "Labels", "type": "string", "jsonPath": ".metadata.labels"},
]


def _crd(columns: list[dict[str, Any]]) -> dict[str, Any]:
    crd = copy.deepcopy(WIDGETS)
    version = crd["spec"]["versions"][0]
    version["additionalPrinterColumns"] = columns
    props = version["schema"]["openAPIV3Schema"]["properties"]
    props["spec"]["properties"].update({"ratio": {"type": "number"}, "paused": {"type": "boolean"}})
    props["status"]["properties"].update({
        "since": {"type": "string"},
        "conditions": {"type": "array", "items": {"type": "object", "properties": {
            "type": {"type": "string"}, "status": {"type": "string"}}}}})
    return crd


async def _table(http: aiohttp.ClientSession, path: str) -> dict[str, Any]:
    async with http.get(path, headers={"Accept": TABLE}) as resp:
        assert resp.status == 200, await resp.text()
        body: dict[str, Any] = json.loads(await resp.read())
    assert body["kind"] == "Table"
    return body


async def _create(http: aiohttp.ClientSession, name: str, spec: dict[str, Any], **meta: Any) -> dict[str, Any]:
    async with http.post(BASE, json={"apiVersion": "example.com/v1", "kind": "Widget",
                                     "metadata": {"name": name, **meta}, "spec": spec}) as resp:
        assert resp.status == 201, await resp.text()
        created: dict[str, Any] = json.loads(await resp.read())
    return created


async def test_printer_columns_are_the_table(http: aiohttp.ClientSession) -> None:
    await establish(http, _crd(COLUMNS))
    w = await _create(http, "w1", {"replicas": 3, "color": "blue", "ratio": 2, "paused": True},
                      labels={"app": "w"})
    w["status"] = {"conditions": [{"type": "Progressing", "status": "False"}, {"type": "Ready", "status": "True"}],
                   "since": "2020-01-01T00:00:00Z"}
    async with http.put(f"{BASE}/w1/status", json=w) as resp:
        assert resp.status == 200, await resp.text()
    await _create(http, "w2", {"replicas": 1})

    table = await _table(http, BASE)
    defs = table["columnDefinitions"]
    assert [(c["name"], c["type"], c["priority"]) for c in defs] == [
        ("Name", "string", 0), ("Replicas", "integer", 0), ("Color", "string", 1), ("Ready", "string", 0),
        ("Ratio", "number", 0), ("Paused", "boolean", 0), ("Since", "date", 0), ("Labels", "string", 0)]
    assert defs[0]["format"] == "name" and defs[0]["description"].startswith("Name must be unique")
    assert defs[1]["description"] == "Desired replicas"
    assert defs[2]["description"] == "Custom resource definition column (in JSONPath format): .spec.color"
    assert defs[6]["format"] == "date-time"
    rows = {r["cells"][0]: r for r in table["rows"]}
    w1 = rows["w1"]["cells"]
    assert w1[:6] == ["w1", 3, "blue", "True", 2.0, True]
    assert w1[6].endswith(("y", "d"))  # an age, rendered by the server as upstream's convertor does
    assert w1[7] == '{"app":"w"}'  # a map in a string column: the JSONPath printer's JSON
    # Missing values are null cells; a string column reads them as nothing found too.
    assert rows["w2"]["cells"][1:] == [1, None, None, None, None, None, None]
    assert rows["w1"]["object"]["kind"] == "PartialObjectMetadata"
    # one object, and a watch's rows, print the same
    single = await _table(http, f"{BASE}/w1")
    assert single["rows"][0]["cells"][:6] == w1[:6]


async def test_without_columns_name_and_age(http: aiohttp.ClientSession) -> None:
    await establish(http, WIDGETS)
    await _create(http, "plain", {})
    table = await _table(http, "/apis/example.com/v1/widgets")
    assert [(c["name"], c["type"]) for c in table["columnDefinitions"]] == [("Name", "string"), ("Age", "date")]
    assert table["columnDefinitions"][1]["description"].startswith("CreationTimestamp is a timestamp")
    ((name, age),) = [r["cells"] for r in table["rows"]]
    assert name == "plain" and age.endswith("s")


async def test_new_columns_when_the_definition_changes(http: aiohttp.ClientSession) -> None:
    crd = await establish(http, _crd(COLUMNS[:1]))
    await _create(http, "w1", {"replicas": 2, "color": "red"})
    first = await _table(http, BASE)
    assert first["rows"][0]["cells"] == ["w1", 2]

    crd["spec"]["versions"][0]["additionalPrinterColumns"] = [COLUMNS[1]]
    async with http.put(f"{CRDS}/{crd['metadata']['name']}", json=crd) as resp:
        assert resp.status == 200, await resp.text()

    async def recolumned() -> dict[str, Any] | None:
        table = await _table(http, BASE)
        return table if table["columnDefinitions"][1]["name"] == "Color" else None

    table = await waiting.eventually(recolumned, within=5.0)
    assert table["rows"][0]["cells"] == ["w1", "red"]  # the cached row was not reused


async def test_a_table_watch_prints_the_columns(http: aiohttp.ClientSession) -> None:
    await establish(http, _crd(COLUMNS[:1]))
    await _create(http, "w1", {"replicas": 4})
    async with http.get(f"{BASE}?watch=1&timeoutSeconds=1", headers={"Accept": TABLE}) as resp:
        line = await resp.content.readline()
    event = json.loads(line)
    assert event["type"] == "ADDED"
    assert [c["name"] for c in event["object"]["columnDefinitions"]] == ["Name", "Replicas"]
    assert event["object"]["rows"][0]["cells"] == ["w1", 4]


async def test_each_version_prints_its_own_columns(http: aiohttp.ClientSession) -> None:
    crd = _crd(COLUMNS[:1])
    beta = copy.deepcopy(crd["spec"]["versions"][0])
    beta.update(name="v1beta1", storage=False, additionalPrinterColumns=[COLUMNS[1]])
    crd["spec"]["versions"].append(beta)
    await establish(http, crd)
    await _create(http, "w1", {"replicas": 2, "color": "red"})
    table = await _table(http, "/apis/example.com/v1beta1/namespaces/default/widgets")
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Color"]
    assert table["rows"][0]["cells"] == ["w1", "red"]
    single = await _table(http, "/apis/example.com/v1beta1/namespaces/default/widgets/w1")
    assert single["rows"][0]["cells"] == ["w1", "red"]
    table = await _table(http, BASE)  # the storage version's columns, from the same kept rows' objects
    assert table["rows"][0]["cells"] == ["w1", 2]
