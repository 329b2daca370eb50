"""A custom resource written through the server is pruned, defaulted and validated by its definition's
schema and CEL rules, with upstream's messages and codes; transition rules see the stored object."""

from __future__ import annotations

import copy
import json
from typing import Any

import aiohttp

from tests.api.crds.test_serving import _json, establish
from tests.crds import WIDGETS

BASE = "/apis/example.com/v1/namespaces/default/widgets"


def _crd() -> dict[str, Any]:
    crd = copy.deepcopy(WIDGETS)
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    spec = schema["properties"]["spec"]
    spec["properties"]["color"] = {"type": "string", "enum": ["blue", "red"], "default": "blue"}
    spec["properties"]["max"] = {"type": "integer", "default": 10}
    spec["x-kubernetes-validations"] = [
        {"rule": "self.replicas <= self.max", "message": "replicas must not exceed max"},
        {"rule": "!has(oldSelf.color) || self.color == oldSelf.color", "message": "color is immutable",
         "reason": "FieldValueForbidden", "fieldPath": ".color"},
    ]
    return crd


def _widget(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec}


async def test_pruned_defaulted_and_validated(http: aiohttp.ClientSession) -> None:
    await establish(http, _crd())
    async with http.post(BASE, json=_widget(replicas=2, size=3)) as resp:
        assert resp.status == 201, await resp.text()
        assert resp.headers.getall("Warning") == ['299 - "unknown field \\"spec.size\\""']
        created = await _json(resp)
    assert created["spec"] == {"replicas": 2, "color": "blue", "max": 10}

    async with http.post(f"{BASE}?fieldValidation=Strict", json={**_widget(size=1), "metadata": {"name": "s"}}) as resp:
        assert resp.status == 400
        assert (await _json(resp))["message"] == ('Widget in version "v1" cannot be handled as a Widget: '
                                                  'strict decoding error: unknown field "spec.size"')

    async with http.post(BASE, json={**_widget(replicas="two", color="green"), "metadata": {"name": "bad"}}) as resp:
        assert resp.status == 422
        status = await _json(resp)
    assert status["reason"] == "Invalid"
    causes = {c["field"]: c["message"] for c in status["details"]["causes"]}
    assert causes["spec.replicas"] == 'Invalid value: "string": spec.replicas in body must be of type integer: "string"'
    assert causes["spec.color"] == 'Unsupported value: "green": supported values: "blue", "red"'


async def test_cel_rules_and_transition_rules(http: aiohttp.ClientSession) -> None:
    await establish(http, _crd())
    async with http.post(BASE, json=_widget(replicas=20)) as resp:
        assert resp.status == 422
        status = await _json(resp)
    assert status["message"] == ('Widget.example.com "w" is invalid: spec: Invalid value: '
                                 'replicas must not exceed max')
    async with http.post(BASE, json=_widget(replicas=1, color="red")) as resp:
        assert resp.status == 201
    async with http.patch(f"{BASE}/w", data=json.dumps({"spec": {"color": "blue"}}),
                          headers={"Content-Type": "application/merge-patch+json"}) as resp:
        assert resp.status == 422
        status = await _json(resp)
    assert status["details"]["causes"] == [{"reason": "FieldValueForbidden", "message": "Forbidden: color is immutable",
                                            "field": "spec.color"}]
