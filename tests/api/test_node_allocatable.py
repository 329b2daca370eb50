"""KEP-5517's fields through the server (DRANodeAllocatableResources): a slice's device
`nodeAllocatableResources` and a pod's `status.nodeAllocatableResourceClaimStatuses` are kept with the
gate on, dropped with it off unless the stored object used them, validated, and read and written
through resource.k8s.io/v1beta1 (in `basic`) as through v1."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from api import server as servers
from cp import features, resources, runtimeconfig

V1 = "/apis/resource.k8s.io/v1/resourceslices"
V1BETA1 = "/apis/resource.k8s.io/v1beta1/resourceslices"
PODS = "/api/v1/namespaces/default/pods"
ON = features.FeatureGates({features.DRA_NODE_ALLOCATABLE_RESOURCES: True})

MAPPINGS = {"cpu": {"mapping": {"capacityKey": "dra.example.com/cores", "capacityMultiplier": "2"}},
            "memory": {"overhead": {"perPod": "1Gi"}}}
STATUSES = [{"resourceClaimName": "cpus", "containers": ["app"], "mapping": [{"name": "cpu", "quantity": "4"}]}]


@pytest.fixture
def gates() -> features.FeatureGates:
    return ON


@pytest.fixture
async def http(tmp_path: Path, gates: features.FeatureGates) -> AsyncIterator[aiohttp.ClientSession]:
    runtime = runtimeconfig.parse("resource.k8s.io/v1beta1=true", group_versions=resources.builtin_group_versions())
    async with servers.running(data_dir=tmp_path / "data", db_url="memory:",
                               app_options={"feature_gates": gates, "runtime_config": runtime}) as srv, \
            aiohttp.ClientSession(base_url=srv.url) as session:
        yield session


async def call(http: aiohttp.ClientSession, method: str, path: str, body: Any = None,
               content_type: str = "application/json") -> tuple[int, Any]:
    async with http.request(method, path, data=None if body is None else json.dumps(body),
                            headers={"Content-Type": content_type}) as r:
        return r.status, json.loads(await r.read())


def device(**extra: Any) -> dict[str, Any]:
    return {"name": "socket-0", "allowMultipleAllocations": True,
            "capacity": {"dra.example.com/cores": {"value": "64"}}, **extra}


def a_slice(name: str = "s", **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": "dra.example.com", "nodeName": "n1",
                     "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                     "devices": [device(**extra)]}}


async def test_written_in_v1beta1_read_in_v1_and_back(http: aiohttp.ClientSession) -> None:
    beta = a_slice()
    beta["apiVersion"] = "resource.k8s.io/v1beta1"
    beta["spec"]["devices"] = [{"name": "socket-0", "basic": {**{k: v for k, v in device().items() if k != "name"},
                                                              "nodeAllocatableResources": MAPPINGS}}]
    status, created = await call(http, "POST", V1BETA1, beta)
    assert status == 201, created
    assert created["spec"]["devices"][0]["basic"]["nodeAllocatableResources"] == MAPPINGS
    status, v1 = await call(http, "GET", f"{V1}/s")
    assert status == 200 and v1["spec"]["devices"][0]["nodeAllocatableResources"] == MAPPINGS
    status, again = await call(http, "GET", f"{V1BETA1}/s")
    assert again["spec"]["devices"][0]["basic"]["nodeAllocatableResources"] == MAPPINGS


async def test_invalid_mapping_is_a_status_error(http: aiohttp.ClientSession) -> None:
    status, body = await call(http, "POST", V1, a_slice(nodeAllocatableResources={
        "example.com/gpu": {"mapping": {"capacityKey": "dra.example.com/threads", "capacityMultiplier": "1"}}}))
    assert status == 422 and body["kind"] == "Status" and body["reason"] == "Invalid", body
    assert [c["field"] for c in body["details"]["causes"]] == [
        "spec.devices[0].nodeAllocatableResources[example.com/gpu]",
        "spec.devices[0].nodeAllocatableResources[example.com/gpu].mapping.capacityKey"]


async def pod_with_status(http: aiohttp.ClientSession, statuses: list[dict[str, Any]]) -> tuple[int, Any]:
    status, pod = await call(http, "POST", PODS, {"metadata": {"name": "p"}, "spec": {
        "resourceClaims": [{"name": "cpus", "resourceClaimName": "cpus"}],
        "containers": [{"name": "app", "image": "x", "resources": {"claims": [{"name": "cpus"}]}}]}})
    assert status == 201, pod
    return await call(http, "PATCH", f"{PODS}/p/status", {"status": {"nodeAllocatableResourceClaimStatuses": statuses}},
                      content_type="application/merge-patch+json")


async def test_pod_status_kept_and_validated(http: aiohttp.ClientSession) -> None:
    status, pod = await pod_with_status(http, STATUSES)
    assert status == 200 and pod["status"]["nodeAllocatableResourceClaimStatuses"] == STATUSES
    status, body = await call(http, "PATCH", f"{PODS}/p/status", {"status": {"nodeAllocatableResourceClaimStatuses": [
        {"resourceClaimName": "cpus", "overhead": [{"name": "memory"}]}]}}, content_type="application/merge-patch+json")
    assert status == 422 and body["details"]["causes"][0]["message"] == (
        'Invalid value: "": at least one of perPod or perContainer must be set')
    # the scheduler's Unreserve: an explicit empty list clears it
    status, pod = await call(http, "PATCH", f"{PODS}/p/status",
                             {"status": {"nodeAllocatableResourceClaimStatuses": []}},
                             content_type="application/merge-patch+json")
    assert status == 200 and not pod["status"].get("nodeAllocatableResourceClaimStatuses")


@pytest.mark.parametrize("gates", [features.DEFAULT])
async def test_a_default_server_drops_both(http: aiohttp.ClientSession) -> None:
    status, created = await call(http, "POST", V1, a_slice(nodeAllocatableResources=MAPPINGS))
    assert status == 201 and "nodeAllocatableResources" not in created["spec"]["devices"][0]
    status, pod = await pod_with_status(http, STATUSES)
    assert status == 200 and "nodeAllocatableResourceClaimStatuses" not in pod["status"]


async def test_an_update_keeps_what_the_stored_slice_used(tmp_path: Path) -> None:
    data, db = tmp_path / "data", f"sqlite+aiosqlite:///{tmp_path / 'log.db'}"
    async with servers.running(data_dir=data, db_url=db, app_options={"feature_gates": ON}) as srv, \
            aiohttp.ClientSession(base_url=srv.url) as http:
        status, created = await call(http, "POST", V1, a_slice(nodeAllocatableResources=MAPPINGS))
        assert status == 201
    async with servers.running(data_dir=data, db_url=db) as srv, aiohttp.ClientSession(base_url=srv.url) as http:
        created["spec"]["devices"].append({"name": "socket-1", "nodeAllocatableResources": {
            "cpu": {"mapping": {"deviceMultiplier": "1"}}}})
        status, updated = await call(http, "PUT", f"{V1}/s", created)
        assert status == 200, updated
        assert [d.get("nodeAllocatableResources") for d in updated["spec"]["devices"]] == [
            MAPPINGS, {"cpu": {"mapping": {"deviceMultiplier": "1"}}}]
