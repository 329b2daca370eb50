"""docs/driver-development.md, end to end: `cplane serve` (TLS, RBAC) with the demo fleet, the example
DRA driver as its own process on gpu-node-0 with the node's kubeconfig, and the real kubectl: the
driver's slice, `examples/dra-driver/pod.yaml` Running after the kubelet had the driver prepare its
claim (CDI spec and checkpoint on the node; the driver's `status.devices` entry written with the
node's credentials; `kubectl logs` showing the GPU its CDI spec injected), the claim unprepared and deleted when the pod goes, the driver
deregistered when it stops, and no request refused on the way."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from cp.testing import eventually
from tests.kubectl.conftest import KUBECTL

ROOT = Path(__file__).resolve().parents[2]
CPLANE = [sys.executable, "-c", "from cp.cli import main; raise SystemExit(main())"]
DRIVER = [sys.executable, str(ROOT / "examples/dra-driver/dra_example_driver.py")]
NODE = "gpu-node-0"
pytestmark = [pytest.mark.kubectl, pytest.mark.skipif(KUBECTL is None, reason="kubectl not installed")]

Kubectl = Callable[..., Awaitable[tuple[int, str, str]]]


@contextlib.asynccontextmanager
async def serve(data: Path, log: Path) -> AsyncIterator[Kubectl]:
    with log.open("wb") as out:
        server = await asyncio.create_subprocess_exec(
            *CPLANE, "serve", "--data-dir", str(data), "--port", "0", "--fleet", str(ROOT / "examples/fleets/demo.yaml"),
            stdout=out, stderr=asyncio.subprocess.STDOUT, cwd=ROOT)
    home = data.parent / "home"
    home.mkdir()

    async def kubectl(*args: str, kubeconfig: Path | None = None) -> tuple[int, str, str]:
        env = {**os.environ, "HOME": str(home), "KUBECONFIG": str(kubeconfig or data / "kubeconfig")}
        proc = await asyncio.create_subprocess_exec(str(KUBECTL), *args, env=env, stdout=asyncio.subprocess.PIPE,
                                                    stderr=asyncio.subprocess.PIPE, cwd=ROOT)
        stdout, stderr = await asyncio.wait_for(proc.communicate(), 30)
        return proc.returncode or 0, stdout.decode(), stderr.decode()

    async def ready() -> bool:
        return (data / "kubeconfig").exists() and (await kubectl("get", "--raw", "/readyz"))[0] == 0

    try:
        await eventually(ready, within=30, interval=0.3, what="cplane serve ready")
        yield kubectl
    finally:
        server.terminate()
        await asyncio.wait_for(server.wait(), 20)


async def test_the_driver_development_walkthrough() -> None:
    # Unix socket paths are short (108 bytes): the data dir gets a short /tmp name.
    short = Path(tempfile.mkdtemp(prefix="drv-", dir="/tmp"))
    data, node_dir = short / "data", short / "data" / "nodes" / NODE
    try:
        async with serve(data, short / "server.log") as kubectl:
            await eventually((node_dir / "kubeconfig").exists, within=30, interval=0.2, what="the node's kubeconfig")
            code, out, err = await kubectl("auth", "whoami", "-o", "json", kubeconfig=node_dir / "kubeconfig")
            assert code == 0, err
            assert json.loads(out)["status"]["userInfo"]["extra"]["authentication.kubernetes.io/node-name"] == [NODE]

            with (short / "driver.log").open("wb") as out_file:
                driver = await asyncio.create_subprocess_exec(
                    *DRIVER, "--data-dir", str(data), "--node", NODE, "--device-status", stdout=out_file,
                    stderr=asyncio.subprocess.STDOUT, cwd=ROOT)
            try:
                async def registered() -> bool:
                    return "plugin_registered" in (short / "driver.log").read_text()

                await eventually(registered, within=30, interval=0.2, what="the driver registered by the kubelet")
                code, out, err = await kubectl("get", "resourceslices", "--field-selector",
                                               "spec.driver=gpu.example.dev", "-o", "jsonpath={.items[*].spec.nodeName}")
                assert (code, out) == (0, NODE), err

                code, out, err = await kubectl("apply", "-f", "examples/dra-driver/pod.yaml")
                assert code == 0, err

                async def running() -> bool:
                    code, out, _ = await kubectl("get", "pod", "pod0", "-o", "jsonpath={.status.phase}")
                    return code == 0 and out == "Running"

                await eventually(running, within=30, interval=0.3, what="pod0 Running")
                code, out, err = await kubectl("get", "resourceclaims", "-o", "jsonpath={.items[0].metadata.uid}")
                assert code == 0, err
                uid = out
                spec = node_dir / "cdi" / f"k8s.gpu.example.dev-gpu_{uid}.json"
                assert spec.exists()
                checkpoint = json.loads((node_dir / "dra_manager_state").read_text())
                (device,) = checkpoint["claims"][uid]["drivers"]["gpu.example.dev"]
                assert device["cdi_device_ids"][0] == "k8s.gpu.example.dev/gpu=common"

                async def device_status() -> str:
                    _, out, _ = await kubectl("get", "resourceclaims", "-o", "jsonpath={.items[0].status.devices[*].device}")
                    return out

                assert await eventually(device_status, within=30, interval=0.2, what="status.devices") == device["device_name"]

                # The upstream README's verification: the container's environment has the driver's GPU.
                code, out, err = await kubectl("logs", "pod0", "-c", "ctr0")
                assert code == 0, err
                gpu = device["device_name"]
                # pod0 runs `bash -c "export; ..."`: its environment as bash's `export` prints it.
                assert f'declare -x GPU_DEVICE_{gpu.removeprefix("gpu-")}="{gpu}"' in out.splitlines(), out

                code, out, err = await kubectl("delete", "pod", "pod0")
                assert code == 0, err
                await eventually(lambda: not spec.exists(), within=30, interval=0.2, what="the claim unprepared")

                async def claim_gone() -> bool:  # deallocated despite the driver's status.devices, and deleted
                    code, out, _ = await kubectl("get", "resourceclaims", "-o", "name")
                    return code == 0 and out.strip() == ""

                await eventually(claim_gone, within=30, interval=0.3, what="the template's claim deleted")
            finally:
                if driver.returncode is None:
                    driver.send_signal(signal.SIGTERM)
                await asyncio.wait_for(driver.wait(), 20)
            assert driver.returncode == 0, (short / "driver.log").read_text()

            async def deregistered() -> bool:
                return "plugin_deregistered" in (short / "server.log").read_text()

            await eventually(deregistered, within=30, interval=0.2, what="the driver deregistered")
        log = (short / "server.log").read_text()
        assert "claim_prepared" in log
        refused = [line for line in log.splitlines() if "forbidden" in line.lower()]
        assert not refused, refused[:5]
    finally:
        shutil.rmtree(short, ignore_errors=True)
