"""Helpers of the ResourcePoolStatusRequest tests: a server with DRAResourcePoolStatus and
`--runtime-config resource.k8s.io/v1alpha3=true`, HTTP calls as kubectl makes them, and the objects."""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from api import server as servers
from controllers import registry
from controllers import resourcepoolstatusrequest as poolstatus
from cp import features, resources, runtimeconfig

BASE = "/apis/resource.k8s.io/v1alpha3/resourcepoolstatusrequests"
SLICES = "/apis/resource.k8s.io/v1/resourceslices"
CLAIMS = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
GATES = features.FeatureGates({features.DRA_RESOURCE_POOL_STATUS: True})
ALPHA = "resource.k8s.io/v1alpha3=true"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


def runtime(text: str) -> runtimeconfig.RuntimeConfig:
    return runtimeconfig.parse(text, group_versions=resources.builtin_group_versions())


@pytest.fixture
def options() -> dict[str, Any]:
    return {"feature_gates": GATES, "runtime_config": runtime(ALPHA)}


@pytest.fixture
async def srv(tmp_path: Path, options: dict[str, Any]) -> AsyncIterator[servers.Running]:
    async with servers.running(data_dir=tmp_path / "data", db_url="memory:", app_options=options) as running:
        yield running


@pytest.fixture
async def http(srv: servers.Running) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(base_url=srv.url) as session:
        yield session


async def call(http: aiohttp.ClientSession, method: str, path: str, body: Any = None,
               content_type: str = "application/json", accept: str = "application/json") -> tuple[int, Any]:
    data = None if body is None else json.dumps(body)
    async with http.request(method, path, data=data,
                            headers={"Content-Type": content_type, "Accept": accept}) as r:
        return r.status, json.loads(await r.read())


def request(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1alpha3", "kind": "ResourcePoolStatusRequest",
            "metadata": {"name": name}, "spec": {"driver": "gpu.example.com", **spec}}


def slice_(name: str, *, pool: str, node: str | None, devices: list[dict[str, Any]], generation: int = 1,
           count: int = 1, driver: str = "gpu.example.com") -> dict[str, Any]:
    spec: dict[str, Any] = {"driver": driver, "pool": {"name": pool, "generation": generation,
                                                       "resourceSliceCount": count}, "devices": devices}
    if node is None:
        spec["allNodes"] = True
    else:
        spec["nodeName"] = node
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name}, "spec": spec}


async def allocated_claim(http: aiohttp.ClientSession, name: str, results: list[dict[str, Any]]) -> None:
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
             "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}
    status, created = await call(http, "POST", CLAIMS, claim)
    assert status == 201, created
    created["status"] = {"allocation": {"devices": {"results": [{"request": "r", **r} for r in results]}}}
    status, out = await call(http, "PUT", f"{CLAIMS}/{name}/status", created)
    assert status == 200, out


async def run_controller(srv: servers.Running, stop: asyncio.Event) -> asyncio.Task[None]:
    ready = asyncio.Event()
    task = asyncio.create_task(registry.run_controllers(
        server_url=srv.url, names=[poolstatus.NAME], stop_event=stop, ready=ready,
        overrides={poolstatus.NAME: functools.partial(poolstatus.new, enabled=True)}))
    await ready.wait()
    return task


