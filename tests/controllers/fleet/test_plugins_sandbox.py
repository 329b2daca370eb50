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
from tests.controllers.fleet.test_plugins import DRIVER, NODE, SLICES, FakePlugin
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
        plugin = FakePlugin(data_dir / "nodes" / NODE)
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
