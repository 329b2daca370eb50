"""A real plugin's failed NodePrepareResources as kubectl 1.37 shows it: the pod ContainerCreating in
`kubectl get pods`, and the kubelet's FailedPrepareDynamicResources event, counted up on a repeat,
in `kubectl describe pod` and `kubectl get events`. A sandbox with the demo fleet on the virtual
clock; the plugin is the protocol-only one of test_plugins.py."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from cp import testing
from tests.controllers.fleet.conftest import EXAMPLES
from tests.controllers.fleet.test_plugins import NODE, ProtocolPlugin, claimed_pod
from tests.kubectl.conftest import Kubectl, kubectl_on
from tests.waiting import eventually

pytestmark = pytest.mark.kubectl


@pytest.fixture
def data_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="cpk-", dir="/tmp"))  # short: unix socket paths
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
async def sandbox(data_dir: Path) -> AsyncIterator[testing.Sandbox]:
    async with testing.sandbox(data_dir=data_dir, controllers=["fleet"], fleet=EXAMPLES / "demo.yaml",
                               virtual_clock=True) as sb:
        yield sb


@pytest.fixture
async def kubectl(sandbox: testing.Sandbox, tmp_path: Path) -> AsyncIterator[Kubectl]:
    async with kubectl_on(sandbox, tmp_path) as k:
        yield k


async def test_kubectl_shows_a_failed_prepare(sandbox: testing.Sandbox, kubectl: Kubectl, data_dir: Path) -> None:
    assert sandbox.kubelet_root is not None
    await eventually(lambda: (sandbox.kubelet_root / NODE / "plugins_registry").is_dir(), what="node directory")
    plugin = ProtocolPlugin(data_dir / "nodes" / NODE)
    plugin.prepare_error = "GPU gpu-1 is in use by another process"
    await plugin.start()
    try:
        await eventually(plugin.registered.is_set, within=10, what="registered by the kubelet's watch")
        await claimed_pod(sandbox.client)
        await eventually(lambda: plugin.prepared, what="NodePrepareResources called")

        async def retried() -> bool:  # the back-off passes (again, until the first failure was requeued)
            await sandbox.advance(10)
            return len(plugin.prepared) >= 2
        await eventually(retried, interval=0.05, what="tried again")

        async def counted() -> str:
            out = (await kubectl("get", "events", "--field-selector", "reason=FailedPrepareDynamicResources",
                                 "-o", "jsonpath={.items[*].count}")).stdout
            return out if out.strip() == str(len(plugin.prepared)) else ""
        await eventually(counted, what="one event, counted up")

        header, *rows = (await kubectl("get", "pods")).rows()
        assert header[:3] == ["NAME", "READY", "STATUS"]
        assert [(r[0], r[2]) for r in rows] == [("trainer", "ContainerCreating")]
        described = (await kubectl("describe", "pod", "trainer")).stdout
        assert "Warning  FailedPrepareDynamicResources" in described
        assert ("Failed to prepare dynamic resources: prepare dynamic resources: NodePrepareResources failed "
                "for ResourceClaim trainer-gpu: GPU gpu-1 is in use by another process") in described
        assert "kubelet" in described
    finally:
        await plugin.stop()
