"""The container surface with the fake drivers' CDI devices (issue #23): the upstream example
driver's quickstart check, `kubectl logs pod0 -c ctr0 | grep GPU_DEVICE`, shows the pod's GPUs;
`kubectl exec pod0 -- printenv` answers the CDI variables; files a CDI spec mounts are what `cat`
reads."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from api import server as servers
from controllers import fleet as fleets
from controllers.fleet import surface
from controllers.runtime import client as clients
from cp import clock as clocks
from tests.controllers.fleet.conftest import running_fleet
from tests.kubectl.conftest import Kubectl, kubectl_on
from tests.waiting import eventually

CLAIMS = "resourceclaims.resource.k8s.io"


@pytest.fixture
async def kubectl(srv: servers.Running, tmp_path: Path) -> AsyncIterator[Kubectl]:
    async with kubectl_on(srv, tmp_path) as k:
        yield k


@pytest.mark.kubectl
async def test_the_example_drivers_quickstart_check(srv: servers.Running, client: clients.Client,
                                                    clock: clocks.VirtualClock, demo: fleets.Fleet,
                                                    tmp_path: Path, kubectl: Kubectl) -> None:
    async with running_fleet(srv, clock, demo, kubelet_root=tmp_path / "nodes"):
        await client.create(CLAIMS, {
            "metadata": {"name": "gpus", "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "gpus", "exactly": {
                "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 2}}]}}})
        pod = await client.create("pods", {
            "metadata": {"name": "pod0", "namespace": "default"},
            "spec": {"nodeName": "gpu-node-1", "resourceClaims": [{"name": "gpus", "resourceClaimName": "gpus"}],
                     "containers": [{"name": "ctr0", "image": "ubuntu:22.04", "resources": {"claims": [{"name": "gpus"}]},
                                     "env": [{"name": "APP", "value": "demo"}]}]}})
        await client.patch(CLAIMS, "gpus", {"status": {
            "allocation": {"devices": {"results": [
                {"request": "gpus", "driver": "gpu.example.com", "pool": "gpu-node-1", "device": d}
                for d in ("gpu-2", "gpu-3")]}},
            "reservedFor": [{"resource": "pods", "name": "pod0", "uid": pod["metadata"]["uid"]}]}},
            namespace="default", subresource="status")

        async def running() -> bool:
            p = await client.get("pods", "pod0", namespace="default")
            return bool(p["status"].get("phase") == "Running")
        await eventually(running, what="pod0 running")

        logs = (await kubectl("logs", "pod0", "-c", "ctr0")).stdout.splitlines()
        assert [ln for ln in logs if ln.startswith("GPU_DEVICE_") and "_RESOURCE_CLAIM" not in ln
                and "=gpu-" in ln] == ["GPU_DEVICE_2=gpu-2", "GPU_DEVICE_3=gpu-3"]
        assert logs[9] == "APP=demo" and "KUBERNETES_NODE_NAME=gpu-node-1" in logs  # after the service variables
        result = await kubectl("exec", "pod0", "--", "printenv", "GPU_DEVICE_3", "GPU_DEVICE_3_SHARING_STRATEGY")
        assert result.stdout == "gpu-3\nTimeSlicing\n"


def test_files_a_cdi_spec_mounts(tmp_path: Path) -> None:
    (tmp_path / "driver").mkdir()
    (tmp_path / "driver" / "info").write_text("model: example\n")
    (tmp_path / "driver" / "sub").mkdir()
    (tmp_path / "driver" / "sub" / "id").write_text("42\n")
    (tmp_path / "one.conf").write_text("x=1\n")
    files = surface.mounted_files([("/etc/driver", str(tmp_path / "driver")), ("/etc/one.conf", str(tmp_path / "one.conf")),
                                   ("/missing", str(tmp_path / "nope"))])
    assert files == {"/etc/driver/info": b"model: example\n", "/etc/driver/sub/id": b"42\n", "/etc/one.conf": b"x=1\n"}
    box = surface.Container(env=[], files=files)
    assert surface.run_command(["cat", "/etc/driver/sub/id"], box).stdout == b"42\n"
