"""The real kubectl 1.37.1 against the DaemonSet controller, the scheduler and a 3-node fleet: `kubectl
apply` puts one pod on each fleet node, `kubectl rollout status ds/agent` waits for it, `kubectl set
image` rolls an update that `rollout status` follows to the end, and `kubectl rollout history` lists
the two ControllerRevisions. A DRA driver's DaemonSet tolerating the GPU nodes' taint lands on every
node. Skipped without kubectl."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from cp import testing
from tests.kubectl.conftest import Kubectl, kubectl_on

FLEET = {"apiVersion": "sim.cplane.dev/v1alpha1", "kind": "Fleet", "metadata": {"name": "ds"},
         "nodePools": [{"name": "gpu", "count": 2,
                        "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
                        "drivers": [{"name": "gpu.example.com", "devices": [{"type": "gpu", "count": 2}]}]},
                       {"name": "cpu", "count": 1}]}
CONTROLLERS = ["garbage-collector", "scheduler", "daemonset"]

DAEMONSET = """\
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: default}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      terminationGracePeriodSeconds: 0
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
      containers: [{name: agent, image: "agent:1"}]
"""


@pytest.fixture
async def kubectl(cplane_sandbox: testing.Sandbox, tmp_path: Path) -> AsyncIterator[Kubectl]:
    async with kubectl_on(cplane_sandbox, tmp_path) as k:
        yield k


@pytest.mark.kubectl
@pytest.mark.cplane(controllers=CONTROLLERS, fleet=FLEET)
async def test_daemonset_on_every_node_and_rolling_update(kubectl: Kubectl) -> None:
    await kubectl("apply", "-f", kubectl.write("ds.yaml", DAEMONSET))
    r = await kubectl("rollout", "status", "ds/agent", "--timeout=60s", timeout=70)
    assert r.stdout.strip().endswith('daemon set "agent" successfully rolled out')
    rows = (await kubectl("get", "pods", "-o", "wide")).rows()[1:]
    assert sorted(row[6] for row in rows) == ["cpu-0", "gpu-0", "gpu-1"]
    assert all(row[2] == "Running" for row in rows)
    rows = (await kubectl("get", "ds", "agent")).rows()
    assert rows[0][:6] == ["NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE"]
    assert rows[1][1:6] == ["3", "3", "3", "3", "3"]

    await kubectl("set", "image", "ds/agent", "agent=agent:2")
    r = await kubectl("rollout", "status", "ds/agent", "--timeout=60s", timeout=70)
    assert r.stdout.strip().endswith('daemon set "agent" successfully rolled out')
    images = (await kubectl.jsonpath("pods", path="{.items[*].spec.containers[0].image}")).split()
    assert images == ["agent:2"] * 3
    history = (await kubectl("rollout", "history", "ds/agent")).lines
    assert [line.split()[0] for line in history[2:] if line.strip()] == ["1", "2"]

    # `rollout undo` patches the DaemonSet with revision 1's data; the old template comes back as revision 3.
    r = await kubectl("rollout", "undo", "ds/agent")
    assert r.stdout.strip() == "daemonset.apps/agent rolled back"
    r = await kubectl("rollout", "status", "ds/agent", "--timeout=60s", timeout=70)
    assert r.stdout.strip().endswith('daemon set "agent" successfully rolled out')
    images = (await kubectl.jsonpath("pods", path="{.items[*].spec.containers[0].image}")).split()
    assert images == ["agent:1"] * 3
    history = (await kubectl("rollout", "history", "ds/agent")).lines
    assert [line.split()[0] for line in history[2:] if line.strip()] == ["2", "3"]
