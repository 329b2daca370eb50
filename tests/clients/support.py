"""Shared pieces of the client-library scenarios.

- `Cluster`: where a client connects (URL + kubeconfig).
- `Wiretap`: a recording HTTP proxy between a client and the API server; it forwards requests
  byte for byte (a missing Content-Type stays missing, watch streams are relayed line by line) and
  keeps every JSON object the server returned, so the schema test can check them all.
- `schema_problems`: strict validation against the official 1.37 JSON schemas shipped by
  `kubernetes-validate`; `typed_problems`: what the typed clients (`kubernetes` 37, lightkube's
  models) fail on when reading an object.
- `watch_until`: waiting for a watch event (`cp.testing.eventually` polls where there is none).
- Sample objects for the served kinds.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import jsonschema
import kubernetes.client
import kubernetes_validate
import kubernetes_validate.utils as kv_utils
import msgspec
import referencing
import yarl
from aiohttp import web

from api import server as servers

K8S_VERSION = "1.37.0"
DRIVER = "gpu.example.com"


class Cluster(msgspec.Struct, kw_only=True):
    url: str
    kubeconfig: Path


# ------------------------------------------------------------------------------------------ waiting


async def watch_until(session: aiohttp.ClientSession, path: str,
                      predicate: Callable[[dict[str, Any]], bool], *, what: str,
                      params: dict[str, str] | None = None, within: float = 15.0) -> dict[str, Any]:
    """Open a raw watch on `path` and return the first event for which `predicate(event)` holds
    (within `within` seconds)."""
    query = {"watch": "true", "timeoutSeconds": str(int(within) + 5), **(params or {})}
    seen: list[str] = []

    async def run() -> dict[str, Any]:
        async with session.get(path, params=query) as resp:
            assert resp.status == 200, await resp.text()
            async for raw in resp.content:
                if not raw.strip():
                    continue
                event = json.loads(raw)
                seen.append(f"{event['type']} {(event['object'].get('metadata') or {}).get('name')}")
                if predicate(event):
                    return event
        raise AssertionError(f"watch on {path} ended before {what}; saw {seen}")

    try:
        return await asyncio.wait_for(run(), within)
    except TimeoutError:
        raise AssertionError(f"timed out after {within}s waiting for {what}; saw {seen}") from None


# ------------------------------------------------------------------------------------------ schemas

_SCHEMA_DIR = f"kubernetes-json-schema/v{K8S_VERSION}-local-strict"
# Kinds of meta.k8s.io whose apiVersion on the wire is plain "v1": kubernetes-validate names their
# schema files `<kind>-meta-v1.json`, which `kubernetes_validate.validate` cannot find from "v1".
_META_KINDS = {"Status", "APIVersions", "APIGroupList", "APIGroup", "APIResourceList", "WatchEvent",
               "DeleteOptions", "Table", "PartialObjectMetadata", "PartialObjectMetadataList"}


@functools.cache
def _definitions() -> referencing.Resource[Any]:
    return referencing.Resource.from_contents(
        kv_utils.schema_contents(f"{_SCHEMA_DIR}/_definitions.json", K8S_VERSION))


@functools.cache
def _validator(kind: str, api_version: str) -> jsonschema.protocols.Validator | None:
    """The same validator `kubernetes_validate.validate(..., strict=True)` builds, compiled once."""
    if kind in _META_KINDS and api_version == "v1":
        stem = f"{kind.lower()}-meta-v1"
    else:
        stem = f"{kind.lower()}-" + re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    try:
        schema = kv_utils.schema_contents(f"{_SCHEMA_DIR}/{stem}.json", K8S_VERSION)
    except FileNotFoundError:
        return None
    resource = referencing.Resource.from_contents(schema)
    registry = _definitions() @ (resource @ referencing.Registry())
    return jsonschema.validators.Draft202012Validator(schema, registry=registry)


def schema_problems(obj: dict[str, Any]) -> list[str]:
    """Every strict-schema violation of `obj` ([] if valid); a kind without a schema is a problem too."""
    kind = obj.get("kind")
    api_version = obj.get("apiVersion") or ("v1" if kind == "APIVersions" else None)
    if not kind or not api_version:
        return [f"no kind/apiVersion: {sorted(obj)}"]
    validator = _validator(str(kind), str(api_version))
    if validator is None:
        return [f"no 1.37 schema for {kind} {api_version}"]
    data = dict(obj, apiVersion=api_version)
    return [f"{'.'.join(str(p) for p in err.absolute_path) or '<root>'}: {err.message}"
            for err in validator.iter_errors(data)]


@functools.cache
def _api_client() -> kubernetes.client.ApiClient:
    return kubernetes.client.ApiClient(kubernetes.client.Configuration())


def typed_model(api_version: str, kind: str) -> str | None:
    """The `kubernetes` 37 model class of an (apiVersion, kind) — `V1Node`, `V2HorizontalPodAutoscaler`,
    and, where two groups share a name, the group-prefixed one (`CoreV1Event`, `EventsV1Event`,
    `ResourceV1ResourceClaim`) — or None for types it has none of (tables, the sandbox's own kinds)."""
    group, _, version = api_version.rpartition("/")
    prefix = group.split(".")[0].capitalize() if group else "Core"
    for name in (f"{prefix}{version.capitalize()}{kind}", f"{version.capitalize()}{kind}"):
        if hasattr(kubernetes.client, name):
            return name
    return None


def typed_problems(obj: dict[str, Any]) -> list[str]:
    """What the typed clients fail on when reading `obj`: `kubernetes` 37 (`ApiClient.deserialize` with
    client-side validation, as `CoreV1Api().list_node()`) and lightkube's models (`from_dict`).
    Kinds neither has a model for (discovery documents, tables) pass."""
    kind, api_version = obj.get("kind"), obj.get("apiVersion")
    if not isinstance(kind, str) or not isinstance(api_version, str):
        return []
    out = []
    model = typed_model(api_version, kind)
    if model is not None:
        try:
            _api_client().deserialize(json.dumps(obj), model, "application/json")
        except (ValueError, TypeError, AttributeError) as exc:
            lines = [ln.strip() for ln in str(exc).splitlines() if not ln.strip().startswith("For further")]
            out.append(f"kubernetes {model}: {'; '.join(lines)}")
    # lightkube reads a list item by item, each with its resource's model.
    base = kind.removesuffix("List")
    lightkube = lightkube_model(api_version, base)
    items = obj.get("items") if base != kind else [obj]
    for i, item in enumerate(items if lightkube is not None and isinstance(items, list) else ()):
        try:
            lightkube.from_dict(item)
        except (msgspec.ValidationError, TypeError, ValueError) as exc:
            out.append(f"lightkube {base}{f' item {i}' if base != kind else ''}: {exc}")
    return out


def lightkube_model(api_version: str, kind: str) -> Any:
    from lightkube.core.exceptions import LoadResourceError
    from lightkube.core.resource_registry import resource_registry

    try:
        return resource_registry.load(api_version, kind)
    except LoadResourceError:
        return None


def check_against_library(obj: dict[str, Any]) -> None:
    """Validate with the library's own entry point (used to keep `schema_problems` honest)."""
    kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


# ------------------------------------------------------------------------------------------ wiretap


class Captured(msgspec.Struct, kw_only=True):
    method: str
    path: str
    status: int
    where: str  # "body" or "watch <TYPE>"
    obj: dict[str, Any]

    def label(self) -> str:
        meta = self.obj.get("metadata") or {}
        return (f"{self.method} {self.path} -> {self.status} [{self.where}] "
                f"{self.obj.get('kind')} {meta.get('namespace', '')}/{meta.get('name', '')}")


_HOP = {"host", "content-length", "transfer-encoding", "connection", "keep-alive", "accept-encoding",
        "upgrade", "te", "trailer", "proxy-connection"}
_AUTO = ("Content-Type", "Accept", "Accept-Encoding", "User-Agent")  # aiohttp would add these


class Wiretap:
    """A recording reverse proxy in front of the API server."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.captured: list[Captured] = []
        self._session: aiohttp.ClientSession | None = None
        # Requests being relayed: a watch whose client went away would wait on the server forever
        # (aiohttp does not cancel a handler when its client disconnects), so close() cancels them.
        self._relaying: set[asyncio.Task[Any]] = set()

    def _record(self, request: web.Request, status: int, where: str, doc: Any) -> None:
        # Every JSON object answered, except the two kind-less documents (version.Info, OpenAPI):
        # an object that lacks its kind is itself a problem.
        if isinstance(doc, dict) and request.path.rstrip("/") != "/version" and \
                not request.path.startswith("/openapi/"):
            self.captured.append(Captured(method=request.method, path=request.raw_path, status=status,
                                          where=where, obj=doc))

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        task = asyncio.current_task()
        assert task is not None
        self._relaying.add(task)
        try:
            return await self._relay(request)
        finally:
            self._relaying.discard(task)

    async def _relay(self, request: web.Request) -> web.StreamResponse:
        assert self._session is not None
        body = await request.read()
        headers = [(k, v) for k, v in request.headers.items() if k.lower() not in _HOP]
        present = {k.lower() for k, _ in headers}
        skip = [h for h in _AUTO if h.lower() not in present]
        url = yarl.URL(self.upstream + request.raw_path, encoded=True)
        async with self._session.request(request.method, url, data=body if body else None,
                                         headers=headers, skip_auto_headers=skip,
                                         allow_redirects=False) as up:
            out_headers = [(k, v) for k, v in up.headers.items() if k.lower() not in _HOP]
            watching = request.method == "GET" and request.query.get("watch") in (
                "1", "t", "T", "true", "True", "TRUE") and up.status == 200
            if not watching:
                data = await up.read()
                with contextlib.suppress(ValueError):
                    self._record(request, up.status, "body", json.loads(data))
                resp = web.Response(body=data, status=up.status)
                for k, v in out_headers:
                    resp.headers.add(k, v)
                return resp
            stream = web.StreamResponse(status=up.status)
            for k, v in out_headers:
                stream.headers.add(k, v)
            stream.enable_chunked_encoding()
            await stream.prepare(request)
            try:
                async for line in up.content:
                    if line.strip():
                        with contextlib.suppress(ValueError):
                            event = json.loads(line)
                            if isinstance(event, dict):
                                self._record(request, up.status, f"watch {event.get('type')}",
                                             event.get("object"))
                    await stream.write(line)
                await stream.write_eof()
            except (ConnectionResetError, aiohttp.ClientError):
                pass
            return stream

    @contextlib.asynccontextmanager
    async def running(self, kubeconfig: Path) -> AsyncIterator[Cluster]:
        self._session = aiohttp.ClientSession(auto_decompress=False,
                                              timeout=aiohttp.ClientTimeout(total=None))
        app = web.Application(client_max_size=8 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1, handle_signals=False)
        try:
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            server = site._server
            assert server is not None
            port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            url = f"http://127.0.0.1:{port}"
            servers.write_kubeconfig(kubeconfig, server=url)
            yield Cluster(url=url, kubeconfig=kubeconfig)
        finally:
            for task in self._relaying:
                task.cancel()
            await asyncio.gather(*self._relaying, return_exceptions=True)
            await self._session.close()
            await runner.cleanup()

    def problems(self) -> list[str]:
        """Schema violations of everything captured, one line each, deduplicated."""
        out: dict[str, None] = {}
        seen: set[bytes] = set()
        for cap in self.captured:
            key = msgspec.json.encode(cap.obj)
            if key in seen:
                continue
            seen.add(key)
            for problem in schema_problems(cap.obj) + typed_problems(cap.obj):
                out[f"{cap.label()}: {problem}"] = None
        return list(out)


# ------------------------------------------------------------------------------------------ samples


def pod(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels},
            "spec": {"containers": [{"name": "c", "image": "registry.example/app:1.0"}]}}


def configmap(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def deployment(name: str, replicas: int = 1) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c",
                                                           "image": "registry.example/app:1.0"}]}}}}


def device_class(name: str = DRIVER) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}}


def claim_spec(device_class_name: str = DRIVER) -> dict[str, Any]:
    return {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": device_class_name}}]}}


def resource_claim(name: str) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
            "spec": claim_spec()}


def resource_claim_template(name: str) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": name},
            "spec": {"metadata": {"labels": {"app": name}}, "spec": claim_spec()}}


def resource_slice(name: str, node: str = "node-1") -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": DRIVER, "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": "gpu-0",
                                  "attributes": {"model": {"string": "a100"}},
                                  "capacity": {"memory": {"value": "40Gi"}}}]}}


def device_taint_rule(name: str) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": name},
            "spec": {"deviceSelector": {"driver": DRIVER, "pool": "node-1", "device": "gpu-0"},
                     "taint": {"key": "example.com/unhealthy", "value": "true", "effect": "NoSchedule"}}}


def allocation(node: str = "node-1") -> dict[str, Any]:
    """A ResourceClaimStatus.allocation as the scheduler writes it."""
    return {"devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": node, "device": "gpu-0"}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}
