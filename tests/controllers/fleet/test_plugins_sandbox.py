"""A real plugin end to end in the sandbox (`cp.testing.sandbox`): the API server, the scheduler,
the resourceclaim controller and the demo fleet with its kubelets' directories in DATA_DIR/nodes,
on the real clock. The plugin (the test's protocol-only plugin) registers through the kubelet's own
registry watch, publishes its slice, the scheduler allocates from it, and the pod runs after the
plugin's NodePrepareResources; the pod's deletion unprepares."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from cp import errors
from cp.testing import sandbox
from tests.controllers.fleet.conftest import EXAMPLES
from tests.controllers.fleet.test_plugins import DRIVER, NODE, SLICES, ProtocolPlugin
from tests.waiting import eventually


@pytest.fixture
def data_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="cps-", dir="/tmp"))  # short: unix socket paths
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


async def test_a_plugin_serves_a_pod_scheduled_on_its_devices(data_dir: Path) -> None:
    async with sandbox(data_dir=data_dir, controllers=["resourceclaim", "scheduler", "fleet"],
                       fleet=EXAMPLES / "demo.yaml") as sb:
        assert sb.kubelet_root == data_dir / "nodes"
        await eventually(lambda: (sb.kubelet_root / NODE / "plugins_registry").is_dir(), what="node directory")
        plugin = ProtocolPlugin(data_dir / "nodes" / NODE)
        await plugin.start()
        try:
            await eventually(plugin.registered.is_set, within=10, what="registered by the kubelet's watch")
            await sb.client.create(SLICES, {"metadata": {"name": f"{NODE}-{DRIVER}-real"}, "spec": {
                "driver": DRIVER, "nodeName": NODE, "pool": {"name": NODE, "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": "gpu-1"}]}})

            async def only_the_plugins_slice() -> bool:
                names = {s["metadata"]["name"] for s in (await sb.client.list(SLICES)).items
                         if s["spec"].get("nodeName") == NODE and s["spec"]["driver"] == DRIVER}
                return names == {f"{NODE}-{DRIVER}-real"}
            await eventually(only_the_plugins_slice, what="the fake driver stepped aside")

            await sb.client.create("resourceclaimtemplates.resource.k8s.io", {
                "metadata": {"name": "one-gpu", "namespace": "default"},
                "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER}}]}}}})
            await sb.client.create("pods", {
                "metadata": {"name": "trainer", "namespace": "default"},
                "spec": {"nodeSelector": {"kubernetes.io/hostname": NODE},
                         "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
                         "containers": [{"name": "app", "image": "nginx:1.27", "resources": {"claims": [{"name": "gpu"}]}}]}})

            async def running() -> bool:
                pod = await sb.client.get("pods", "trainer", namespace="default")
                return pod["status"].get("phase") == "Running"
            await eventually(running, within=10, what="trainer Running")
            pod = await sb.client.get("pods", "trainer", namespace="default")
            claim_name = pod["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
            claim = await sb.client.get("resourceclaims.resource.k8s.io", claim_name, namespace="default")
            assert claim["status"]["allocation"]["devices"]["results"][0]["pool"] == NODE
            assert plugin.prepared == [[("default", claim_name, claim["metadata"]["uid"])]]

            await sb.client.delete("pods", "trainer", namespace="default")

            async def gone() -> bool:
                try:
                    await sb.client.get("pods", "trainer", namespace="default")
                except errors.NotFound:
                    return True
                return False
            await eventually(gone, within=10, what="pod removed")
            assert plugin.unprepared == [[("default", claim_name, claim["metadata"]["uid"])]]
        finally:
            await plugin.stop()


async def test_a_plugin_in_the_secure_mode(data_dir: Path) -> None:
    """Over TLS with RBAC, the fleet's kubelets act as the fleet-simulator ServiceAccount: its event
    of a failed prepare, the DeviceHealth reports of the health stream (the device-health reporter
    writes them into the pod's status) and the wiping of the dead plugin's slices are all allowed."""
    import structlog

    from cp import clock as clocks
    from tests.controllers.fleet.test_plugins import claimed_pod
    from tests.e2e.test_secure_controllers import refusals

    with structlog.testing.capture_logs() as logs:
        async with sandbox(data_dir=data_dir, controllers=["fleet", "device-health"], fleet=EXAMPLES / "demo.yaml",
                           virtual_clock=True, clock_start=1_800_000_000.0, secure=True) as sb:
            assert isinstance(sb.clock, clocks.VirtualClock)
            await eventually(lambda: (data_dir / "nodes" / NODE / "plugins_registry").is_dir(), what="node directory")
            plugin = ProtocolPlugin(data_dir / "nodes" / NODE)
            plugin.prepare_error = "not yet"
            await plugin.start()
            try:
                await eventually(plugin.registered.is_set, within=10, what="registered")
                await sb.client.create(SLICES, {"metadata": {"name": f"{NODE}-{DRIVER}-real"}, "spec": {
                    "driver": DRIVER, "nodeName": NODE,
                    "pool": {"name": NODE, "generation": 1, "resourceSliceCount": 1}, "devices": [{"name": "gpu-1"}]}})
                await claimed_pod(sb.client)

                async def event() -> bool:
                    events = (await sb.client.list("events", namespace="default")).items
                    return any(e["reason"] == "FailedPrepareDynamicResources" for e in events)
                await eventually(event, what="FailedPrepareDynamicResources")
                plugin.prepare_error = ""

                async def running() -> bool:
                    await sb.advance(10)
                    pod = await sb.client.get("pods", "trainer", namespace="default")
                    return pod["status"].get("phase") == "Running"
                await eventually(running, interval=0.05, what="Running after the retry")

                from cp.kubeletapi import drahealth_v1alpha1_pb2 as h
                plugin.health.put_nowait(h.NodeWatchResourcesResponse(devices=[h.DeviceHealth(
                    device=h.DeviceIdentifier(pool_name=NODE, device_name="gpu-1"), health=h.UNHEALTHY)]))

                async def unhealthy() -> bool:
                    pod = await sb.client.get("pods", "trainer", namespace="default")
                    status = pod["status"]["containerStatuses"][0].get("allocatedResourcesStatus") or []
                    return [r["health"] for e in status for r in e["resources"]] == ["Unhealthy"]
                await eventually(unhealthy, what="Unhealthy in the pod's status")
            finally:
                await plugin.stop()

            async def wiped() -> bool:
                await sb.advance(10)
                return not [s for s in (await sb.client.list(SLICES)).items if s["metadata"]["name"].endswith("-real")]
            await eventually(wiped, interval=0.05, what="the dead plugin's slices wiped")
    assert refusals(logs) == []
