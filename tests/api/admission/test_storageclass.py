"""The DefaultStorageClass admission plugin, over HTTP: a new claim with no class gets the default
StorageClass's name (the newest of two defaults), an explicit class or `""` or the beta annotation is
kept, an update is left alone, and without a default class nothing changes.

Out of scope: claim validation (tests/cp/validation), binding (tests/controllers/volumes).
"""

from __future__ import annotations

from typing import Any

import aiohttp

from api.admission import storageclass

CLAIMS = "/api/v1/namespaces/default/persistentvolumeclaims"
CLASSES = "/apis/storage.k8s.io/v1/storageclasses"


def _claim(name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, **spec}}


def _class(name: str, *, default: bool) -> dict[str, Any]:
    annotations = {storageclass.DEFAULT_ANNOTATION: "true"} if default else {}
    return {"metadata": {"name": name, "annotations": annotations}, "provisioner": "example.com/p"}


async def _post(http: aiohttp.ClientSession, path: str, body: dict[str, Any]) -> dict[str, Any]:
    async with http.post(path, json=body) as r:
        assert r.status == 201, await r.text()
        return dict(await r.json())


async def test_no_default_class_leaves_the_claim_alone(http: aiohttp.ClientSession) -> None:
    await _post(http, CLASSES, _class("plain", default=False))
    claim = await _post(http, CLAIMS, _claim("a"))
    assert "storageClassName" not in claim["spec"]


async def test_the_default_class_fills_in_a_claim_without_one(http: aiohttp.ClientSession) -> None:
    await _post(http, CLASSES, _class("standard", default=True))
    assert (await _post(http, CLAIMS, _claim("a")))["spec"]["storageClassName"] == "standard"
    assert (await _post(http, CLAIMS, _claim("b", storageClassName="fast")))["spec"]["storageClassName"] == "fast"
    assert (await _post(http, CLAIMS, _claim("c", storageClassName="")))["spec"]["storageClassName"] == ""
    beta = _claim("d")
    beta["metadata"]["annotations"] = {storageclass.BETA_CLASS_ANNOTATION: "old"}
    assert "storageClassName" not in (await _post(http, CLAIMS, beta))["spec"]


def test_newest_default_wins_then_name() -> None:
    def cls(name: str, created: str, default: bool = True) -> dict[str, Any]:
        ann = {storageclass.BETA_DEFAULT_ANNOTATION if name == "beta" else storageclass.DEFAULT_ANNOTATION:
               "true" if default else "false"}
        return {"metadata": {"name": name, "creationTimestamp": created, "annotations": ann}}

    assert storageclass.default_class([]) is None
    assert storageclass.default_class([cls("x", "2026-01-01T00:00:00Z", default=False)]) is None
    assert storageclass.default_class([cls("old", "2026-01-01T00:00:00Z"),
                                       cls("new", "2026-02-01T00:00:00Z")]) == "new"
    assert storageclass.default_class([cls("b", "2026-02-01T00:00:00Z"), cls("a", "2026-02-01T00:00:00Z"),
                                       cls("beta", "2026-02-01T00:00:00Z")]) == "a"
