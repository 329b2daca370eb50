"""The real kubectl against the controllers: `kubectl wait --for=condition=EvictionInProgress=false`
on a DeviceTaintRule, `kubectl describe pod` showing the DisruptionTarget condition and the
DeviceTaintManagerEviction Event, and `kubectl patch devicehealth` flipping a device to Unhealthy.
Skipped when kubectl is not installed."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from api import server as servers
from controllers import health
from controllers.runtime import client as clients
from cp import clock as clocks
from tests.controllers.taints import support as s
from tests.controllers.taints.conftest import StartControllers

KUBECTL = next((p for p in (Path(os.environ.get("CPLANE_KUBECTL", "")), Path(sys.prefix) / "bin" / "kubectl",
                            Path(__file__).resolve().parents[3] / ".venv/bin/kubectl")
                if str(p) not in ("", ".") and p.is_file() and os.access(p, os.X_OK)), None)

pytestmark = [pytest.mark.kubectl, pytest.mark.skipif(KUBECTL is None, reason="kubectl not installed")]


@pytest.fixture
def kubectl_env(srv: servers.Running, tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    return {"HOME": str(home), "KUBECONFIG": str(srv.kubeconfig), "PATH": os.environ.get("PATH", "")}


async def _start(env: dict[str, str], *args: str) -> asyncio.subprocess.Process:
    assert KUBECTL is not None
    return await asyncio.create_subprocess_exec(str(KUBECTL), *args, env=env, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)


async def _run(env: dict[str, str], *args: str) -> tuple[int, str, str]:
    proc = await _start(env, *args)
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_wait_describe_and_patch(client: clients.Client, clock: clocks.VirtualClock,
                                       kubectl_env: dict[str, str], start_controllers: StartControllers) -> None:
    await s.node(client, "node-1")
    await s.resource_slice(client, "node-1", ["gpu-0"])
    await client.create(health.DEVICE_HEALTHS, health.health_object(s.DRIVER, "node-1", "gpu-0", "Healthy", "",
                                                                    clock.now()))
    await s.allocated_claim(client, "claim-a", [("node-1", "gpu-0")], tolerations=[
        {"key": "example.com/maintenance", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}])
    await s.bound_pod(client, "pod-a", "claim-a")
    running = await start_controllers()
    await s.taint_rule(client, "maintenance", effect="NoExecute")

    async def pending() -> bool:
        cond = s.condition(await client.get("devicetaintrules.resource.k8s.io", "maintenance"),
                           "EvictionInProgress")
        return bool(cond and cond["status"] == "True")

    await s.eventually(pending, what="EvictionInProgress=True")
    code, out, err = await _run(kubectl_env, "wait", "--for=condition=EvictionInProgress=false",
                                "devicetaintrule/maintenance", "--timeout=1s")
    assert code != 0, "the condition is True while the pod waits out its toleration"

    waiter = await _start(kubectl_env, "wait", "--for=condition=EvictionInProgress=false",
                          "devicetaintrule/maintenance", "--timeout=20s")
    await running.settle()
    clock.advance(300)
    await s.eventually(lambda: _deleting(client), what="pod evicted")
    await running.settle()  # the status refresh is scheduled 10 s after the eviction, on this clock
    clock.advance(10)
    out_b, err_b = await asyncio.wait_for(waiter.communicate(), 25)
    assert waiter.returncode == 0, err_b.decode()
    assert out_b.decode().strip() == "devicetaintrule.resource.k8s.io/maintenance condition met"

    code, out, err = await _run(kubectl_env, "describe", "pod", "pod-a")
    assert code == 0, err
    assert "DisruptionTarget" in out
    assert "DeviceTaintManagerEviction" in out and "Marking for deletion" in out

    name = health.health_object_name(s.DRIVER, "node-1", "gpu-0")
    code, out, err = await _run(kubectl_env, "patch", "devicehealth", name, "--type=merge",
                                "-p", '{"spec":{"health":"Unhealthy","message":"ECC errors"}}')
    assert code == 0, err

    async def unhealthy() -> bool:
        pod = await client.get("pods", "pod-a", namespace="default")
        return any(r["health"] == "Unhealthy" for e in s.resources_status(pod) for r in e["resources"])

    await s.eventually(unhealthy, what="Unhealthy after kubectl patch")
    code, out, err = await _run(kubectl_env, "get", "pod", "pod-a", "-o",
                                "jsonpath={.status.containerStatuses[0].allocatedResourcesStatus[0].resources[0].health}")
    assert (code, out) == (0, "Unhealthy"), err


async def _deleting(client: clients.Client) -> bool:
    pod = await client.get("pods", "pod-a", namespace="default")
    return bool(pod["metadata"].get("deletionTimestamp"))
