"""The container lifecycle model as kubectl 1.37 shows it: a sandbox with a fleet on the virtual
clock, pods annotated to complete, fail, be OOM-killed, crash-loop, initialize slowly or never be
ready; `kubectl get pods` prints the STATUS, READY and RESTARTS columns it computes from the
statuses the simulated kubelet wrote, and `kubectl wait` sees the conditions.

Out of scope: the model's timings one by one (test_lifecycle.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from controllers.fleet import lifecycle
from cp import testing
from tests.kubectl.conftest import Kubectl, kubectl_on

FLEET = {"apiVersion": "sim.cplane.dev/v1alpha1", "kind": "Fleet", "metadata": {"name": "life"},
         "nodePools": [{"name": "node", "count": 1}]}

PODS = f"""\
apiVersion: v1
kind: Pod
metadata: {{name: job, annotations: {{{lifecycle.RUN_SECONDS}: "30"}}}}
spec: {{nodeName: node-0, restartPolicy: Never, containers: [{{name: main, image: busybox}}]}}
---
apiVersion: v1
kind: Pod
metadata: {{name: fails, annotations: {{{lifecycle.RUN_SECONDS}: "30", {lifecycle.EXIT_CODE}: "2"}}}}
spec: {{nodeName: node-0, restartPolicy: Never, containers: [{{name: main, image: busybox}}]}}
---
apiVersion: v1
kind: Pod
metadata: {{name: oom, annotations: {{{lifecycle.RUN_SECONDS}: "30", {lifecycle.OOM_KILLED}: "true"}}}}
spec: {{nodeName: node-0, restartPolicy: Never, containers: [{{name: main, image: busybox}}]}}
---
apiVersion: v1
kind: Pod
metadata: {{name: crash, annotations: {{{lifecycle.RUN_SECONDS}: "30", {lifecycle.EXIT_CODE}: "1"}}}}
spec: {{nodeName: node-0, containers: [{{name: main, image: busybox}}]}}
---
apiVersion: v1
kind: Pod
metadata: {{name: slow-init, annotations: {{{lifecycle.RUN_SECONDS}.setup: "600"}}}}
spec:
  nodeName: node-0
  initContainers: [{{name: setup, image: busybox}}]
  containers: [{{name: main, image: nginx}}]
---
apiVersion: v1
kind: Pod
metadata: {{name: unready, annotations: {{{lifecycle.READINESS_PROBE_FAILS}: "true"}}}}
spec:
  nodeName: node-0
  containers: [{{name: main, image: nginx, readinessProbe: {{httpGet: {{path: /, port: 80}}}}}}]
---
apiVersion: v1
kind: Pod
metadata: {{name: web}}
spec: {{nodeName: node-0, containers: [{{name: main, image: nginx}}]}}
"""


@pytest.fixture
async def kubectl(cplane_sandbox: testing.Sandbox, tmp_path: Path) -> AsyncIterator[Kubectl]:
    async with kubectl_on(cplane_sandbox, tmp_path) as k:
        yield k


async def _columns(kubectl: Kubectl) -> dict[str, tuple[str, str, str]]:
    """name -> (READY, STATUS, RESTARTS without its "(Ns ago)")."""
    rows = (await kubectl("get", "pods")).rows()
    assert rows[0][:4] == ["NAME", "READY", "STATUS", "RESTARTS"]
    return {r[0]: (r[1], r[2], r[3]) for r in rows[1:]}


@pytest.mark.cplane(fleet=FLEET, virtual_clock=True)
async def test_kubectl_shows_what_the_simulated_kubelet_reports(cplane_sandbox: testing.Sandbox,
                                                                kubectl: Kubectl) -> None:
    sb = cplane_sandbox
    await kubectl("apply", "-f", "-", input=PODS)

    async def started() -> bool:
        pods = (await sb.client.list("pods", namespace="default")).items
        return len(pods) == 7 and all((p.get("status") or {}).get("phase") in ("Running", "Pending")
                                      and (p.get("status") or {}).get("containerStatuses") for p in pods)
    await sb.wait_for(started)
    assert (await kubectl("wait", "--for=condition=Ready", "pod/web", "--timeout=10s")).stdout.strip() == \
        "pod/web condition met"
    cols = await _columns(kubectl)
    assert cols["web"] == ("1/1", "Running", "0")
    assert cols["unready"] == ("0/1", "Running", "0")
    assert cols["slow-init"] == ("0/1", "Init:0/1", "0")
    assert cols["job"] == ("1/1", "Running", "0")

    await sb.advance(30)

    async def ended() -> bool:
        return (await _columns(kubectl))["job"][1] == "Completed"
    await sb.wait_for(ended)

    async def crashed() -> dict[str, tuple[str, str, str]] | None:
        got = await _columns(kubectl)
        return got if got["crash"][1] == "CrashLoopBackOff" and got["oom"][1] == "OOMKilled" else None
    cols = await sb.wait_for(crashed)
    assert cols["job"] == ("0/1", "Completed", "0")
    assert cols["fails"] == ("0/1", "Error", "0")
    assert cols["oom"] == ("0/1", "OOMKilled", "0")
    assert cols["crash"][:2] == ("0/1", "CrashLoopBackOff")

    await sb.advance(10)  # the back-off ends: the crashing container runs again

    async def restarted() -> bool:
        _ready, status, restarts = (await _columns(kubectl))["crash"]
        return status == "Running" and restarts.split()[0] == "1"
    await sb.wait_for(restarted)
    await kubectl("wait", "--for=jsonpath={.status.phase}=Failed", "pod/fails", "--timeout=10s")
