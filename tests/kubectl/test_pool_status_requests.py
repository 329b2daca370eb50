"""The real kubectl against a server with DRAResourcePoolStatus and `--runtime-config
resource.k8s.io/v1alpha3=true`, its ResourcePoolStatusRequest controller running, as KEP-5677's kubectl
section uses it: `create -f`, `wait --for=condition=Complete`, `get` (the table and `-o yaml`), a
server-side apply, `delete`; a bad spec is kubectl's `is invalid` error, and without the flag kubectl
finds no such resource."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from api import server as servers
from controllers import registry
from controllers import resourcepoolstatusrequest as poolstatus
from cp import features
from tests.kubectl.conftest import Kubectl, runtime_config

REQUEST = """\
apiVersion: resource.k8s.io/v1alpha3
kind: ResourcePoolStatusRequest
metadata: {name: gpus}
spec: {driver: gpu.example.com}
"""

SLICE = """\
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: node-0-gpus}
spec:
  driver: gpu.example.com
  nodeName: node-0
  pool: {name: node-0, generation: 1, resourceSliceCount: 1}
  devices: [{name: gpu-0}, {name: gpu-1}, {name: gpu-2}]
"""


@pytest.fixture
def runtime() -> str:
    return "resource.k8s.io/v1alpha3=true"


@pytest.fixture
async def server(tmp_path: Path, runtime: str) -> AsyncIterator[servers.Running]:
    options = {"feature_gates": features.FeatureGates({features.DRA_RESOURCE_POOL_STATUS: True})}
    if runtime:
        options["runtime_config"] = runtime_config(runtime)
    async with servers.running(data_dir=tmp_path / "data", app_options=options) as srv:
        stop, ready = asyncio.Event(), asyncio.Event()
        task = asyncio.create_task(registry.run_controllers(
            server_url=srv.url, names=[poolstatus.NAME], stop_event=stop, ready=ready,
            overrides={poolstatus.NAME: functools.partial(poolstatus.new, enabled=bool(runtime))}))
        await ready.wait()
        try:
            yield srv
        finally:
            stop.set()
            await task


async def test_create_wait_get(kubectl: Kubectl) -> None:
    await kubectl("create", "-f", kubectl.write("slice.yaml", SLICE))
    r = await kubectl("create", "-f", kubectl.write("request.yaml", REQUEST))
    assert r.stdout.strip() == "resourcepoolstatusrequest.resource.k8s.io/gpus created"
    r = await kubectl("wait", "--for=condition=Complete", "resourcepoolstatusrequest/gpus", "--timeout=30s")
    assert r.stdout.strip() == "resourcepoolstatusrequest.resource.k8s.io/gpus condition met"
    rows = (await kubectl("get", "resourcepoolstatusrequests")).rows()
    assert rows[0] == ["NAME", "DRIVER", "TOTAL", "AVAILABLE", "ALLOCATED", "UNAVAILABLE", "ERRORS", "POOLS",
                       "STATUS", "COMPLETED"]
    assert rows[1][:9] == ["gpus", "gpu.example.com", "3", "3", "0", "0", "0", "1", "Complete"]
    got = (await kubectl("get", "resourcepoolstatusrequest", "gpus", "-o", "json")).json()
    assert got["spec"] == {"driver": "gpu.example.com", "limit": 100}
    assert got["status"]["pools"] == [{"driver": "gpu.example.com", "poolName": "node-0", "nodeName": "node-0",
                                       "generation": 1, "resourceSliceCount": 1, "totalDevices": 3,
                                       "allocatedDevices": 0, "availableDevices": 3, "unavailableDevices": 0}]
    # Labels may change (server-side apply included); the spec may not.
    labelled = REQUEST.replace("metadata: {name: gpus}", "metadata: {name: gpus, labels: {team: ml}}")
    r = await kubectl("apply", "--server-side", "-f", kubectl.write("labelled.yaml", labelled))
    assert r.stdout.strip() == "resourcepoolstatusrequest.resource.k8s.io/gpus serverside-applied"
    changed = REQUEST.replace("{driver: gpu.example.com}", "{driver: gpu.example.com, limit: 5}")
    r = await kubectl("apply", "--server-side", "--force-conflicts", "-f", kubectl.write("changed.yaml", changed),
                      check=False)
    assert r.code != 0 and "spec: Invalid value" in r.stderr and "field is immutable" in r.stderr, r.stderr
    await kubectl("delete", "resourcepoolstatusrequest", "gpus")
    assert await kubectl.gone("resourcepoolstatusrequests", "gpus")


async def test_a_bad_spec_is_invalid(kubectl: Kubectl) -> None:
    bad = REQUEST.replace("{driver: gpu.example.com}", "{driver: '', limit: 5000}")
    r = await kubectl("create", "-f", kubectl.write("bad.yaml", bad), check=False)
    assert r.code != 0
    assert 'The ResourcePoolStatusRequest "gpus" is invalid' in r.stderr, r.stderr
    assert "spec.driver: Required value" in r.stderr
    assert "spec.limit: Invalid value: 5000: must be less than or equal to 1000" in r.stderr


@pytest.mark.parametrize("runtime", [""])
async def test_without_the_flag_kubectl_finds_none(kubectl: Kubectl) -> None:
    r = await kubectl("get", "resourcepoolstatusrequests", check=False)
    assert r.code != 0 and 'the server doesn\'t have a resource type "resourcepoolstatusrequests"' in r.stderr, \
        r.stderr
