"""What the web UI reads to show the cluster at a past revision: exact LISTs
(`?resourceVersion=R&resourceVersionMatch=Exact`) of the kinds its views draw, each as it was then."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from tests.samples import samples

KINDS = [("", "v1", "nodes"), ("", "v1", "pods"), ("resource.k8s.io", "v1", "resourceslices"),
         ("resource.k8s.io", "v1", "resourceclaims"), ("resource.k8s.io", "v1", "deviceclasses"),
         ("resource.k8s.io", "v1", "devicetaintrules")]


def _path(group: str, version: str, plural: str, namespace: str = "") -> str:
    base = f"/apis/{group}/{version}" if group else f"/api/{version}"
    return f"{base}/namespaces/{namespace}/{plural}" if namespace else f"{base}/{plural}"


async def _list(http: aiohttp.ClientSession, path: str, rv: int | None = None) -> dict[str, Any]:
    params = {"resourceVersion": str(rv), "resourceVersionMatch": "Exact"} if rv is not None else {}
    async with http.get(path, params=params) as r:
        assert r.status == 200, await r.text()
        body: dict[str, Any] = await r.json()
        return body


@pytest.mark.parametrize(("group", "version", "plural"), KINDS)
async def test_exact_lists_show_the_past(http: aiohttp.ClientSession, group: str, version: str, plural: str) -> None:
    obj = samples("default")[(group, plural)]
    namespaced = plural in ("pods", "resourceclaims")
    path = _path(group, version, plural, "default" if namespaced else "")
    async with http.post(path, json=obj) as r:
        assert r.status == 201, await r.text()
        created = await r.json()
    name = created["metadata"]["name"]
    before = int(created["metadata"]["resourceVersion"])
    labels = {"metadata": {"labels": {"ui": "later"}}}
    async with http.patch(f"{path}/{name}", json=labels,
                          headers={"Content-Type": "application/merge-patch+json"}) as r:
        assert r.status == 200, await r.text()
        changed = int((await r.json())["metadata"]["resourceVersion"])
    async with http.delete(f"{path}/{name}", params={"gracePeriodSeconds": "0"}) as r:
        assert r.status in (200, 202), await r.text()

    def named(body: dict[str, Any]) -> list[dict[str, Any]]:
        return [i for i in body["items"] if i["metadata"]["name"] == name]

    then = await _list(http, _path(group, version, plural), before)
    assert then["metadata"]["resourceVersion"] == str(before)
    assert [i["metadata"]["resourceVersion"] for i in named(then)] == [str(before)]
    assert "ui" not in (named(then)[0]["metadata"].get("labels") or {})
    later = await _list(http, _path(group, version, plural), changed)
    assert named(later)[0]["metadata"]["labels"]["ui"] == "later"
    now = await _list(http, _path(group, version, plural))
    assert named(now) == [] or named(now)[0]["metadata"].get("deletionTimestamp")
