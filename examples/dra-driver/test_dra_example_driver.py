"""The example DRA driver against an in-process secure cplane (TLS, RBAC) with a simulated node: it
publishes its slice with the node's credentials; the kubelet's calls, spoken by the test over the
real gRPC protocols on the node's sockets, register it, prepare a claim (a CDI spec with
`GPU_DEVICE_1`), stream health and unprepare; and with the fleet's own kubelet, a pod whose claim the scheduler allocates from the slice runs once the claim is
prepared, and the claim is unprepared when the pod goes.

Run from the repository: `.venv/bin/pytest examples/dra-driver` (the suite also runs it).
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest

import dra_example_driver as example
from api import auth
from api import server as servers
from controllers import fleet as fleets
from controllers import health, registry
from controllers.fleet.nodedirs import NodeDir
from controllers.runtime import client as clients
from cp import errors, kubeletapi
from cp.kubeletapi import (
    dra_v1_pb2,
    dra_v1_pb2_grpc,
    drahealth_v1alpha1_pb2,
    drahealth_v1alpha1_pb2_grpc,
    pluginregistration_v1_pb2,
    pluginregistration_v1_pb2_grpc,
)
from cp.testing import eventually
from storage import memory

FLEET = {"apiVersion": "sim.cplane.dev/v1alpha1", "kind": "Fleet", "metadata": {"name": "driver"},
         "nodePools": [{"name": "node", "count": 1}]}
NODE = "node-0"


class Cluster:
    def __init__(self, admin: clients.Client, root: Path) -> None:
        self.admin, self.root = admin, root


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    log = memory.MemoryEventLog()
    await log.start()
    # Unix socket paths are short (108 bytes): the node directories go under a short /tmp name.
    with tempfile.TemporaryDirectory(prefix="dra-", dir="/tmp") as short:
        root = Path(short)
        try:
            async with servers.running(data_dir=tmp_path / "data", event_log=log, secure=True) as srv:
                assert srv.auth is not None and srv.auth.credentials is not None
                ca = srv.auth.credentials.ca_cert

                def identity(name: str) -> clients.Client:
                    return clients.Client(srv.url, token=auth.controller_token(srv.auth, name),
                                          ssl_context=auth.client_ssl_context(ca), root_ca=ca.decode())

                stop, ready = asyncio.Event(), asyncio.Event()
                task = asyncio.ensure_future(registry.run_controllers(
                    server_url=srv.url, names=["fleet", "scheduler"], stop_event=stop, ready=ready,
                    identities=identity,
                    overrides={fleets.NAME: fleets.factory(fleets.fleet_from_dict(FLEET), kubelet_root=root)}))
                await asyncio.wait_for(ready.wait(), 20)
                async with clients.Client(srv.url, token=srv.auth.credentials.admin_token,
                                          ssl_context=auth.client_ssl_context(ca)) as admin:
                    try:
                        yield Cluster(admin, root)
                    finally:
                        stop.set()
                        await asyncio.wait_for(task, 20)
        finally:
            await log.close()


@pytest.fixture
async def driver(cluster: Cluster) -> AsyncIterator[example.ExampleDriver]:
    kubeconfig = cluster.root / NODE / "kubeconfig"
    await eventually(kubeconfig.exists, within=20, what="the node's kubeconfig")
    async with clients.Client.from_kubeconfig(kubeconfig) as client:
        drv = example.ExampleDriver(node=NODE, kubelet_dir=cluster.root / NODE, client=client, gpus=2,
                                    device_status=True)
        await drv.start()
        try:
            yield drv
        finally:
            await drv.stop()


def _pod_with_claim() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    cls = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "example-gpu"},
           "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{example.DRIVER}"'}}]}}
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "one-gpu", "namespace": "default"},
             "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "example-gpu"}}]}}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pod0", "namespace": "default"},
           "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimName": "one-gpu"}],
                    "containers": [{"name": "ctr0", "image": "ubuntu:22.04",
                                    "resources": {"claims": [{"name": "gpu"}]}}]}}
    return cls, claim, pod


async def test_the_driver_publishes_registers_prepares_and_reports_health(
        cluster: Cluster, driver: example.ExampleDriver) -> None:
    admin = cluster.admin
    # 1. Its slice, written with the node's credentials (the writer is the plugin's account).
    slices = (await admin.list(example.SLICES, field_selector=f"spec.driver={example.DRIVER}")).items
    assert [s["spec"]["nodeName"] for s in slices] == [NODE]
    assert [d["name"] for d in slices[0]["spec"]["devices"]] == ["gpu-0", "gpu-1"]
    assert slices[0]["metadata"]["ownerReferences"][0]["kind"] == "Node"
    assert (await driver.publish_slices())["metadata"]["resourceVersion"] == slices[0]["metadata"]["resourceVersion"]

    # 2. A claim allocated on its devices (as the scheduler writes it; no pod, so the node's kubelet
    #    leaves the claim to the calls below).
    cls, claim, _pod = _pod_with_claim()
    await admin.create("deviceclasses.resource.k8s.io", cls)
    await admin.create(example.CLAIMS, claim)
    allocation = {"devices": {"results": [{"request": "gpu", "driver": example.DRIVER, "pool": NODE,
                                           "device": "gpu-1"}]},
                  "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                      {"key": "metadata.name", "operator": "In", "values": [NODE]}]}]}}
    allocated_claim = await admin.patch(example.CLAIMS, "one-gpu", {"status": {"allocation": allocation}},
                                        namespace="default", subresource="status")
    uid = allocated_claim["metadata"]["uid"]

    # 3. The kubelet's side of the protocols, on the node's sockets.
    reg_socket = cluster.root / NODE / "plugins_registry" / f"{example.DRIVER}-reg.sock"
    async with grpc.aio.insecure_channel(f"unix://{reg_socket}") as channel:
        registration = pluginregistration_v1_pb2_grpc.RegistrationStub(channel)
        info = await registration.GetInfo(pluginregistration_v1_pb2.InfoRequest())
        assert (info.type, info.name) == (kubeletapi.DRA_PLUGIN_TYPE, example.DRIVER)
        assert list(info.supported_versions) == [kubeletapi.DRA_V1, kubeletapi.HEALTH_V1ALPHA1]
        assert info.endpoint == str(cluster.root / NODE / "plugins" / example.DRIVER / "dra.sock")
        await registration.NotifyRegistrationStatus(pluginregistration_v1_pb2.RegistrationStatus(plugin_registered=True))
    assert driver.registered.is_set()

    claim_ref = dra_v1_pb2.Claim(namespace="default", name="one-gpu", uid=uid)
    async with grpc.aio.insecure_channel(f"unix://{info.endpoint}") as channel:
        dra = dra_v1_pb2_grpc.DRAPluginStub(channel)
        prepared = await dra.NodePrepareResources(dra_v1_pb2.NodePrepareResourcesRequest(claims=[claim_ref]))
        result = prepared.claims[uid]
        assert result.error == ""
        [device] = result.devices
        allocated_device = allocated_claim["status"]["allocation"]["devices"]["results"][0]["device"]
        assert (list(device.request_names), device.pool_name, device.device_name) == (["gpu"], NODE, allocated_device)
        kind = f"k8s.{example.DRIVER}/gpu"
        assert list(device.cdi_device_ids) == [f"{kind}=common", f"{kind}={uid}-{allocated_device}"]
        spec = json.loads((cluster.root / NODE / "cdi" / f"k8s.{example.DRIVER}-gpu_{uid}.json").read_text())
        assert spec["kind"] == kind
        assert spec["devices"] == [{"name": f"{uid}-gpu-1", "containerEdits": {"env": [
            "GPU_DEVICE_1=gpu-1", f"GPU_DEVICE_GPU_1_RESOURCE_CLAIM={uid}"]}}]
        common = json.loads((cluster.root / NODE / "cdi" / f"k8s.{example.DRIVER}-gpu_common.json").read_text())
        assert f"KUBERNETES_NODE_NAME={NODE}" in common["devices"][0]["containerEdits"]["env"]
        # Again: the same answer (idempotent), from the driver's checkpoint.
        again = await dra.NodePrepareResources(dra_v1_pb2.NodePrepareResourcesRequest(claims=[claim_ref]))
        assert again.claims[uid] == result
        # A claim it does not know: that claim's error, not the call's.
        ghost = dra_v1_pb2.Claim(namespace="default", name="ghost", uid="0000")
        failed = await dra.NodePrepareResources(dra_v1_pb2.NodePrepareResourcesRequest(claims=[ghost]))
        assert 'resourceclaims.resource.k8s.io "ghost" not found' in failed.claims["0000"].error

        # 4. Health: every device at once, then each change.
        health = drahealth_v1alpha1_pb2_grpc.DRAResourceHealthStub(channel)
        stream = health.NodeWatchResources(drahealth_v1alpha1_pb2.NodeWatchResourcesRequest())
        first = await stream.read()
        healthy = drahealth_v1alpha1_pb2.HealthStatus.HEALTHY
        assert {(d.device.pool_name, d.device.device_name, d.health) for d in first.devices} == {
            (NODE, "gpu-0", healthy), (NODE, "gpu-1", healthy)}
        await driver.set_health("gpu-1", healthy=False)
        second = await stream.read()
        assert {d.device.device_name: d.health for d in second.devices} == {
            "gpu-0": healthy, "gpu-1": drahealth_v1alpha1_pb2.HealthStatus.UNHEALTHY}
        stream.cancel()

        # 5. Unprepare: the claim's CDI spec goes.
        out = await dra.NodeUnprepareResources(dra_v1_pb2.NodeUnprepareResourcesRequest(claims=[claim_ref]))
        assert out.claims[uid].error == ""
        assert not (cluster.root / NODE / "cdi" / f"k8s.{example.DRIVER}-gpu_{uid}.json").exists()
    assert driver.prepared_calls == [[uid], [uid], ["0000"]]


async def test_a_pod_runs_after_the_nodes_kubelet_had_the_driver_prepare_its_claim(
        cluster: Cluster, driver: example.ExampleDriver) -> None:
    """The whole loop with the fleet's kubelet: it finds the registration socket, registers the
    driver, calls NodePrepareResources before the pod runs, records the CDI ids in its checkpoint,
    turns the health stream into DeviceHealth reports, and calls NodeUnprepareResources when the pod
    is gone."""
    admin = cluster.admin
    await eventually(driver.registered.is_set, within=20, what="registered by the node's kubelet")
    cls, claim, pod = _pod_with_claim()
    await admin.create("deviceclasses.resource.k8s.io", cls)
    await admin.create(example.CLAIMS, claim)
    await admin.create("pods", pod)

    async def running() -> bool:
        return bool((await admin.get("pods", "pod0", namespace="default"))["status"].get("phase") == "Running")

    await eventually(running, within=30, what="pod0 Running")
    uid = (await admin.get(example.CLAIMS, "one-gpu", namespace="default"))["metadata"]["uid"]
    assert driver.prepared_calls == [[uid]]
    spec = cluster.root / NODE / "cdi" / f"k8s.{example.DRIVER}-gpu_{uid}.json"
    assert spec.exists()
    checkpoint = NodeDir(root=cluster.root, node=NODE).prepared()
    (device,) = checkpoint[uid].drivers[example.DRIVER]
    assert device.cdi_device_ids[0] == f"k8s.{example.DRIVER}/gpu=common"

    # The driver published the device in the claim's status, with the node's credentials.
    async def published() -> list[dict[str, Any]]:
        return list((await admin.get(example.CLAIMS, "one-gpu", namespace="default"))["status"].get("devices") or [])

    (entry,) = await eventually(published, within=20, what="status.devices written by the driver")
    assert (entry["driver"], entry["pool"], entry["device"]) == (example.DRIVER, NODE, device.device_name)
    assert entry["conditions"][0]["type"] == "Ready"

    # The kubelet reads the driver's health stream: each device's report is a DeviceHealth.
    reports = "devicehealths.sim.cplane.dev"
    name = health.health_object_name(example.DRIVER, NODE, device.device_name)

    async def reported(want: str) -> bool:
        try:
            return bool((await admin.get(reports, name))["spec"]["health"] == want)
        except errors.NotFound:
            return False

    await eventually(lambda: reported("Healthy"), within=20, what="the device reported Healthy")
    await driver.set_health(device.device_name, healthy=False)
    await eventually(lambda: reported("Unhealthy"), within=20, what="the device reported Unhealthy")

    await admin.delete("pods", "pod0", namespace="default")

    async def unprepared() -> bool:
        return not spec.exists() and uid not in NodeDir(root=cluster.root, node=NODE).prepared()

    await eventually(unprepared, within=30, what="the claim unprepared after the pod went")


async def test_the_driver_may_not_publish_for_another_node(cluster: Cluster) -> None:
    kubeconfig = cluster.root / NODE / "kubeconfig"
    await eventually(kubeconfig.exists, within=20, what="the node's kubeconfig")
    await cluster.admin.create("nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "elsewhere"}})
    async with clients.Client.from_kubeconfig(kubeconfig) as client:
        impostor = example.ExampleDriver(node="elsewhere", kubelet_dir=cluster.root / "elsewhere", client=client)
        with pytest.raises(Exception, match="may not modify resourceslices on node 'elsewhere'"):
            await impostor.publish_slices()


async def test_the_driver_as_a_process(cluster: Cluster) -> None:
    """`python dra_example_driver.py --kubelet-dir ROOT/<node> --node <node>`: registers, serves, and
    deregisters on SIGTERM."""
    kubelet_dir = cluster.root / NODE
    await eventually((kubelet_dir / "kubeconfig").exists, within=20, what="the node's kubeconfig")
    driver_name = "proc.example.dev"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(Path(example.__file__)), "--kubelet-dir", str(kubelet_dir), "--node", NODE,
        "--driver", driver_name, "--gpus", "1", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    reg_socket = kubelet_dir / "plugins_registry" / f"{driver_name}-reg.sock"
    try:
        await eventually(reg_socket.exists, within=20, what="the registration socket")
        async with grpc.aio.insecure_channel(f"unix://{reg_socket}") as channel:
            info = await pluginregistration_v1_pb2_grpc.RegistrationStub(channel).GetInfo(
                pluginregistration_v1_pb2.InfoRequest())
        assert info.name == driver_name
        slices = (await cluster.admin.list(example.SLICES, field_selector=f"spec.driver={driver_name}")).items
        assert [s["spec"]["nodeName"] for s in slices] == [NODE]
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
        _out, err = await asyncio.wait_for(proc.communicate(), 20)
    assert proc.returncode == 0, err.decode()
    assert "plugin_stopped" in err.decode()
    assert not reg_socket.exists()


async def test_the_process_says_why_it_cannot_start(cluster: Cluster) -> None:
    kubelet_dir = cluster.root / NODE
    await eventually((kubelet_dir / "kubeconfig").exists, within=20, what="the node's kubeconfig")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(Path(example.__file__)), "--kubelet-dir", str(kubelet_dir), "--node", "ghost",
        "--kubeconfig", str(kubelet_dir / "kubeconfig"), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    _out, err = await asyncio.wait_for(proc.communicate(), 20)
    assert proc.returncode == 1
    assert err.decode().strip().endswith('dra_example_driver: nodes "ghost" not found')
