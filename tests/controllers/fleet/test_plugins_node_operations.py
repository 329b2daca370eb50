"""Optional node operations (DRAOptionalNodeOperations, alpha): a registered plugin is not called for
the operations every device of its driver in a claim skips (the allocation results'
`skipNodeOperations`, which the scheduler copies from the slice). Skipping both runs the pod without
NodePrepareResources; skipping only NodeUnprepareResources prepares it but leaves the deletion
without a call. With the gate off the server drops the field, and both calls happen."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from api import server as servers
from controllers.fleet.nodedirs import NodeDir
from controllers.runtime import client as clients
from cp import clock as clocks
from cp import features
from tests.controllers.fleet.test_plugins import (
    CLAIMS,
    DRIVER,
    NODE,
    _is,
    fleet_with_plugins,
    plugin_on,
    register,
)
from tests.waiting import eventually


@contextlib.asynccontextmanager
async def server(tmp_path: Path, clock: clocks.Clock, gates: str) -> AsyncIterator[tuple[servers.Running,
                                                                                          clients.Client]]:
    async with servers.running(data_dir=tmp_path / "data", db_url="memory:", clock=clock,
                               app_options={"feature_gates": features.parse(gates)}) as srv, \
            clients.Client(srv.url) as client:
        yield srv, client


async def skipping_pod(client: clients.Client, skip: list[str]) -> dict[str, Any]:
    """A claim allocated on gpu-node-0 with `skip` in its result, reserved for a pod bound there."""
    await client.create(CLAIMS, {
        "metadata": {"name": "cp-gpu", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER}}]}}})
    pod = await client.create("pods", {
        "metadata": {"name": "cp", "namespace": "default"},
        "spec": {"nodeName": NODE, "resourceClaims": [{"name": "gpu", "resourceClaimName": "cp-gpu"}],
                 "containers": [{"name": "app", "image": "nginx:1.27", "resources": {"claims": [{"name": "gpu"}]}}]}})
    result = {"request": "gpu", "driver": DRIVER, "pool": NODE, "device": "gpu-1", "skipNodeOperations": skip}
    allocation = {"devices": {"results": [result]}, "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": [NODE]}]}]}}
    await client.patch(CLAIMS, "cp-gpu", {"status": {"allocation": allocation}}, namespace="default",
                       subresource="status")
    return await client.patch(CLAIMS, "cp-gpu", {"status": {"reservedFor": [
        {"resource": "pods", "name": "cp", "uid": pod["metadata"]["uid"]}]}}, namespace="default",
        subresource="status")


@pytest.mark.parametrize(("gates", "skip", "prepared", "unprepared"), [
    ("DRAOptionalNodeOperations=true", ["*"], False, False),
    ("DRAOptionalNodeOperations=true", ["NodeUnprepareResources"], True, False),
    ("DRAOptionalNodeOperations=true", ["NodePrepareResources", "NodeUnprepareResources"], False, False),
    ("", ["*"], True, True),  # the gate off: the field is dropped, the plugin is called
])
async def test_skipped_operations_are_not_called(tmp_path: Path, root: Path, gates: str, skip: list[str],
                                                 prepared: bool, unprepared: bool) -> None:
    clock = clocks.VirtualClock(start=1_800_000_000.0)
    async with server(tmp_path, clock, gates) as (srv, client), fleet_with_plugins(srv, clock, root) as sim, \
            plugin_on(root) as plugin:
        await register(sim, plugin)
        claim = await skipping_pod(client, skip)
        uid = claim["metadata"]["uid"]
        stored = claim["status"]["allocation"]["devices"]["results"][0]
        assert ("skipNodeOperations" in stored) == bool(gates)
        await eventually(lambda: _is(client, "cp", "Running"), what="running")
        assert plugin.prepared == ([[("default", "cp-gpu", uid)]] if prepared else [])
        assert (uid in NodeDir(root=root, node=NODE).prepared()) == prepared

        await client.delete("pods", "cp", namespace="default")
        clock.advance(1)  # the containers' stop time
        await eventually(lambda: _is(client, "cp", "<gone>"), what="pod removed")
        assert plugin.unprepared == ([[("default", "cp-gpu", uid)]] if unprepared else [])
        assert uid not in NodeDir(root=root, node=NODE).prepared()
