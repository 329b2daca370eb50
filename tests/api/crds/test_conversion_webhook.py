"""A definition whose versions convert through a webhook (`spec.conversion.strategy: Webhook`): the
server sends ConversionReviews to the test's HTTPS webhook for reads, lists, watches, writes and
patches of the version that is not stored, and answers a failing webhook with upstream's 500."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from tests.api.crds.test_serving import _json, establish
from tests.webhook_servers import WebhookServer

V1, V2 = "stable.example.com/v1", "stable.example.com/v2"
BASE = "/apis/stable.example.com/{}/namespaces/default/crontabs"


def _convert(obj: dict[str, Any], desired: str) -> dict[str, Any]:
    """v1's `spec.cronSpec` is v2's `spec.schedule`."""
    spec = dict(obj.get("spec") or {})
    if desired == V2 and "cronSpec" in spec:
        spec["schedule"] = spec.pop("cronSpec")
    if desired == V1 and "schedule" in spec:
        spec["cronSpec"] = spec.pop("schedule")
    return {**obj, "apiVersion": desired, "spec": spec}


def _review(review: dict[str, Any]) -> dict[str, Any]:
    request = review["request"]
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": request["uid"], "result": {"status": "Success"},
                         "convertedObjects": [_convert(o, request["desiredAPIVersion"]) for o in request["objects"]]}}


@pytest.fixture
async def hook() -> AsyncIterator[WebhookServer]:
    async with WebhookServer() as srv:
        srv.route("/convert", _review)
        yield srv


def _crd(hook: WebhookServer) -> dict[str, Any]:
    def version(name: str, field: str, *, storage: bool) -> dict[str, Any]:
        return {"name": name, "served": True, "storage": storage, "schema": {"openAPIV3Schema": {
            "type": "object", "properties": {"spec": {"type": "object", "properties": {field: {"type": "string"}}}}}}}

    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "crontabs.stable.example.com"},
            "spec": {"group": "stable.example.com", "scope": "Namespaced",
                     "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab"},
                     "versions": [version("v1", "cronSpec", storage=True), version("v2", "schedule", storage=False)],
                     "conversion": {"strategy": "Webhook", "webhook": {
                         "clientConfig": {"url": hook.url("/convert"), "caBundle": hook.ca_bundle},
                         "conversionReviewVersions": ["v1"]}}}}


async def test_the_other_version_is_converted_by_the_webhook(http: aiohttp.ClientSession,
                                                             hook: WebhookServer) -> None:
    await establish(http, _crd(hook))
    async with http.post(BASE.format("v2"), json={"apiVersion": V2, "kind": "CronTab", "metadata": {"name": "c"},
                                                  "spec": {"schedule": "*/5 * * * *"}}) as resp:
        assert resp.status == 201, await resp.text()
        assert (await _json(resp))["spec"] == {"schedule": "*/5 * * * *"}
    async with http.get(f"{BASE.format('v1')}/c") as resp:
        assert (await _json(resp))["spec"] == {"cronSpec": "*/5 * * * *"}  # stored as v1
    async with http.get(BASE.format("v2")) as resp:
        listed = await _json(resp)
    assert [i["spec"] for i in listed["items"]] == [{"schedule": "*/5 * * * *"}]
    async with http.patch(f"{BASE.format('v2')}/c", data=json.dumps({"spec": {"schedule": "0 * * * *"}}),
                          headers={"Content-Type": "application/merge-patch+json"}) as resp:
        assert resp.status == 200, await resp.text()
        assert (await _json(resp))["spec"] == {"schedule": "0 * * * *"}
    async with http.get(f"{BASE.format('v2')}?watch=1&timeoutSeconds=1") as resp:
        first = json.loads(await resp.content.readline())
    assert first["type"] == "ADDED" and first["object"]["spec"] == {"schedule": "0 * * * *"}
    assert all(call["request"]["desiredAPIVersion"] in (V1, V2) for call in hook.calls["/convert"])


async def test_a_failing_webhook_is_an_internal_error(http: aiohttp.ClientSession, hook: WebhookServer) -> None:
    await establish(http, _crd(hook))
    async with http.post(BASE.format("v1"), json={"apiVersion": V1, "kind": "CronTab", "metadata": {"name": "c"},
                                                  "spec": {"cronSpec": "* * * * *"}}) as resp:
        assert resp.status == 201
    hook.route("/convert", lambda review: {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                                           "response": {"uid": review["request"]["uid"],
                                                        "result": {"status": "Failure", "message": "no way"}}})
    async with http.get(f"{BASE.format('v2')}/c") as resp:
        assert resp.status == 500
        status = await _json(resp)
    assert status["reason"] == "InternalError"
    assert "conversion webhook for stable.example.com/v1, Kind=CronTab failed: no way" in status["message"]
