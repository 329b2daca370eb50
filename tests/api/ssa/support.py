"""Helpers for the server-side apply tests: requests against the in-process server, and readers of
managedFields that name owned fields the way upstream prints them (`.spec.replicas`,
`.spec.template.spec.containers[name="web"].image`)."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import msgspec

from cp import fieldpath as fp

APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"

PATHS = {
    "ConfigMap": "/api/v1/namespaces/default/configmaps",
    "Pod": "/api/v1/namespaces/default/pods",
    "Deployment": "/apis/apps/v1/namespaces/default/deployments",
    "ResourceClaim": "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims",
}


def configmap(name: str = "cm", *, labels: dict[str, str] | None = None, **data: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if labels is not None:
        meta["labels"] = labels
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}
    if data:
        obj["data"] = data
    return obj


def container(name: str, image: str = "nginx:1.27", **more: Any) -> dict[str, Any]:
    return {"name": name, "image": image, **more}


def deployment(name: str = "web", *, replicas: int | None = None, containers: list[dict[str, Any]] | None = None,
               labels: dict[str, str] | None = None, template_extra: dict[str, Any] | None = None,
               selector: bool = True) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if replicas is not None:
        spec["replicas"] = replicas
    if selector:
        spec["selector"] = {"matchLabels": {"app": name}}
    pod_spec: dict[str, Any] = {"containers": containers if containers is not None else [container("web")]}
    pod_spec.update(template_extra or {})
    spec["template"] = {"metadata": {"labels": {"app": name}}, "spec": pod_spec}
    meta: dict[str, Any] = {"name": name}
    if labels is not None:
        meta["labels"] = labels
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": spec}


class Reply(msgspec.Struct):
    status: int
    body: dict[str, Any]


class Api:
    """Writes and reads of one object kind at a time over HTTP, with the manager as a parameter."""

    def __init__(self, http: aiohttp.ClientSession) -> None:
        self.http = http

    @staticmethod
    def _url(obj: dict[str, Any], subresource: str = "") -> str:
        url = f"{PATHS[obj['kind']]}/{obj['metadata']['name']}"
        return f"{url}/{subresource}" if subresource else url

    async def _send(self, method: str, url: str, body: bytes, ctype: str, params: dict[str, str]) -> Reply:
        async with self.http.request(method, url, data=body, params=params,
                                     headers={"Content-Type": ctype}) as r:
            return Reply(r.status, json.loads(await r.read()))

    async def apply(self, obj: dict[str, Any], manager: str, *, force: bool | None = None,
                    subresource: str = "", dry_run: bool = False) -> Reply:
        params = {"fieldManager": manager}
        if force is not None:
            params["force"] = "true" if force else "false"
        if dry_run:
            params["dryRun"] = "All"
        return await self._send("PATCH", self._url(obj, subresource), json.dumps(obj).encode(), APPLY, params)

    async def create(self, obj: dict[str, Any], manager: str) -> Reply:
        return await self._send("POST", PATHS[obj["kind"]], json.dumps(obj).encode(), "application/json",
                                {"fieldManager": manager})

    async def replace(self, obj: dict[str, Any], manager: str, subresource: str = "") -> Reply:
        return await self._send("PUT", self._url(obj, subresource), json.dumps(obj).encode(),
                                "application/json", {"fieldManager": manager})

    async def patch(self, obj: dict[str, Any], patch: Any, manager: str, *, ctype: str = MERGE,
                    subresource: str = "") -> Reply:
        return await self._send("PATCH", self._url(obj, subresource), json.dumps(patch).encode(), ctype,
                                {"fieldManager": manager})

    async def get(self, obj: dict[str, Any]) -> dict[str, Any]:
        async with self.http.get(self._url(obj)) as r:
            assert r.status == 200, await r.text()
            return dict(json.loads(await r.read()))


def entries(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return list((obj.get("metadata") or {}).get("managedFields") or [])


def owners(obj: dict[str, Any]) -> dict[str, set[str]]:
    """manager (with `/Update`, `/Apply` and `/<subresource>` when not the main resource) -> owned paths."""
    out: dict[str, set[str]] = {}
    for e in entries(obj):
        label = f"{e['manager']}/{e['operation']}" + (f"/{e['subresource']}" if e.get("subresource") else "")
        out[label] = {fp.path_string(p) for p in fp.paths(e.get("fieldsV1") or {})}
    return out


def owned_by(obj: dict[str, Any], path: str) -> set[str]:
    """Who owns `path` (managers as in `owners`)."""
    return {m for m, paths in owners(obj).items() if path in paths}


def fields_of(obj: dict[str, Any], manager: str, operation: str = "Apply") -> dict[str, Any]:
    for e in entries(obj):
        if e["manager"] == manager and e["operation"] == operation:
            return dict(e["fieldsV1"])
    raise AssertionError(f"no {manager}/{operation} entry in {[(e['manager'], e['operation']) for e in entries(obj)]}")


def key_order(s: Any) -> Any:
    """The key order of a FieldsV1 value, recursively (JSON object order is what a client sees)."""
    if isinstance(s, dict):
        return [(k, key_order(v)) for k, v in s.items()]
    return s
