"""`cplane node stop|start` and the real kubectl: stopping a fleet node's kubelet shows, after the
50 s grace period of virtual time, as `NotReady` in `kubectl get nodes`, the Unknown conditions and
the unreachable taints in `kubectl describe node`; starting it again brings the node back Ready and
untainted. Skipped when kubectl is not installed.

Out of scope: the pods' eviction (test_nodelifecycle_integration.py).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from controllers import nodelifecycle, taint_eviction
from cp import testing
from tests.controllers.nodelifecycle.support import advance
from tests.controllers.support import START
from tests.kubectl.conftest import Kubectl, kubectl_on

FLEET = {"apiVersion": "sim.cplane.dev/v1alpha1", "kind": "Fleet", "metadata": {"name": "lifecycle"},
         "nodePools": [{"name": "node", "count": 2}]}
CONTROLLERS = ["garbage-collector", nodelifecycle.NAME, taint_eviction.NAME]

pytestmark = [pytest.mark.kubectl]


@pytest.fixture
async def kubectl(cplane_sandbox: testing.Sandbox, tmp_path: Path) -> AsyncIterator[Kubectl]:
    async with kubectl_on(cplane_sandbox, tmp_path) as k:
        yield k


async def _cplane(sb: testing.Sandbox, *args: str) -> tuple[int, str, str]:
    """Run the `cplane` command (its own process) against the sandbox."""
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "cp.cli", *args, "--kubeconfig",
                                                str(sb.kubeconfig), stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


@pytest.mark.cplane(controllers=CONTROLLERS, fleet=FLEET, virtual_clock=True, clock_start=START)
async def test_node_stop_shows_not_ready_and_taints_then_start_recovers(cplane_sandbox: testing.Sandbox,
                                                                        kubectl: Kubectl) -> None:
    sb = cplane_sandbox
    rows = {r[0]: r[1] for r in (await kubectl("get", "nodes")).rows()[1:]}
    assert rows == {"node-0": "Ready", "node-1": "Ready"}

    code, out, err = await _cplane(sb, "node", "stop", "node-0")
    assert (code, out, err) == (0, "node/node-0 kubelet stopped\n", "")
    assert await kubectl.jsonpath("node", "node-0", path="{.metadata.annotations.sim\\.cplane\\.dev/kubelet}") \
        == "stopped"
    await advance(sb, 50)

    async def not_ready() -> bool:
        rows = {r[0]: r[1] for r in (await kubectl("get", "nodes")).rows()[1:]}
        taints = await kubectl.jsonpath("node", "node-0", path="{.spec.taints[*].effect}")
        return rows == {"node-0": "NotReady", "node-1": "Ready"} and taints.split() == ["NoSchedule", "NoExecute"]

    await sb.wait_for(not_ready, timeout=15)
    described = (await kubectl("describe", "node", "node-0")).stdout
    assert "Taints:             node.kubernetes.io/unreachable:NoExecute\n" \
           "                    node.kubernetes.io/unreachable:NoSchedule\n" in described, described
    conditions = [line.split() for line in described.split("Conditions:")[1].split("Addresses:")[0].splitlines()]
    ready = next(line for line in conditions if line and line[0] == "Ready")
    assert ready[1] == "Unknown"
    assert " ".join(ready[-6:]) == "NodeStatusUnknown Kubelet stopped posting node status."
    assert "NodeNotReady" in described and "Node node-0 status is now: NodeNotReady" in described

    code, out, err = await _cplane(sb, "node", "start", "node-0")
    assert (code, out, err) == (0, "node/node-0 kubelet started\n", "")

    async def ready_again() -> bool:
        rows = {r[0]: r[1] for r in (await kubectl("get", "nodes")).rows()[1:]}
        return rows == {"node-0": "Ready", "node-1": "Ready"} and \
            await kubectl.jsonpath("node", "node-0", path="{.spec.taints}") == ""

    await sb.wait_for(ready_again, timeout=15)
    code, out, err = await _cplane(sb, "node", "stop", "no-such-node")
    assert code == 1 and 'nodes "no-such-node" not found' in err
