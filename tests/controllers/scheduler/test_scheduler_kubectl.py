"""The real kubectl against the scheduler and the controllers around it: a Deployment whose pods
each need two GPUs of the same model is applied with `kubectl apply`; `kubectl get pods` shows
them Running (on the fleet's simulated kubelet) and `kubectl get resourceclaims` shows their
claims `allocated,reserved`. A fresh HOME per test; KUBECONFIG is the server's. Skipped when
kubectl is not installed."""

from __future__ import annotations

import asyncio
import os
import re
import sys
from pathlib import Path

import pytest

from api import server as servers
from controllers.runtime import client as clients
from tests.controllers.scheduler import support as s
from tests.controllers.scheduler.conftest import StartCluster

KUBECTL = next((p for p in (Path(os.environ.get("CPLANE_KUBECTL", "")), Path(sys.prefix) / "bin" / "kubectl",
                            Path(__file__).resolve().parents[3] / ".venv/bin/kubectl")
                if str(p) not in ("", ".") and p.is_file() and os.access(p, os.X_OK)), None)

pytestmark = [pytest.mark.kubectl, pytest.mark.skipif(KUBECTL is None, reason="kubectl not installed")]

MANIFEST = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: two-matching-gpus
spec:
  spec:
    devices:
      requests:
      - name: gpus
        exactly:
          deviceClassName: gpu.example.com
          count: 2
      constraints:
      - requests: [gpus]
        matchAttribute: gpu.example.com/model
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: trainer
spec:
  replicas: 3
  selector:
    matchLabels: {app: trainer}
  template:
    metadata:
      labels: {app: trainer}
    spec:
      containers:
      - name: trainer
        image: registry.k8s.io/pause:3.10
        resources:
          claims:
          - name: gpus
      resourceClaims:
      - name: gpus
        resourceClaimTemplateName: two-matching-gpus
"""


@pytest.fixture
def kubectl_env(srv: servers.Running, tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    return {"HOME": str(home), "KUBECONFIG": str(srv.kubeconfig), "PATH": os.environ.get("PATH", "")}


async def kubectl(env: dict[str, str], *args: str, stdin: str | None = None) -> str:
    assert KUBECTL is not None
    proc = await asyncio.create_subprocess_exec(
        str(KUBECTL), *args, env=env, stdin=asyncio.subprocess.PIPE if stdin is not None else None,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(stdin.encode() if stdin is not None else None), 30)
    assert proc.returncode == 0, f"kubectl {' '.join(args)}: {err.decode()}"
    return out.decode()


def rows(text: str) -> list[list[str]]:
    return [re.split(r"\s{2,}", line.strip()) for line in text.splitlines()[1:] if line.strip()]


async def test_deployment_pods_get_two_gpus_of_one_model(client: clients.Client, start_cluster: StartCluster,
                                                         kubectl_env: dict[str, str]) -> None:
    await start_cluster(workloads=True)
    out = await kubectl(kubectl_env, "apply", "-f", "-", stdin=MANIFEST)
    assert "deployment.apps/trainer created" in out

    async def all_running() -> list[list[str]] | None:
        table = rows(await kubectl(kubectl_env, "get", "pods", "-l", "app=trainer"))
        return table if len(table) == 3 and all(r[1] == "1/1" and r[2] == "Running" for r in table) else None
    pods = await s.eventually(all_running, within=30, what="three trainer pods Running")

    async def claims_ready() -> list[list[str]] | None:
        table = rows(await kubectl(kubectl_env, "get", "resourceclaims"))
        return table if len(table) == 3 and all(r[1] == "allocated,reserved" for r in table) else None
    claims = await s.eventually(claims_ready, within=30, what="claims allocated,reserved")
    assert {r[0].rsplit("-", 1)[0] for r in claims} == {f"{p[0]}-gpus" for p in pods}

    wide = rows(await kubectl(kubectl_env, "get", "pods", "-l", "app=trainer", "-o", "wide"))
    assert sorted(r[6] for r in wide) in (["gpu-a-0", "gpu-a-0", "gpu-h-0"], ["gpu-a-0", "gpu-h-0", "gpu-h-0"])
    for item in (await client.list(s.CLAIMS, namespace="default")).items:
        results = item["status"]["allocation"]["devices"]["results"]
        assert len(results) == 2 and len({r["pool"] for r in results}) == 1  # one node, hence one model

    # Two GPUs of one model are left: a fourth replica fits, a fifth does not.
    await kubectl(kubectl_env, "scale", "deployment/trainer", "--replicas=5")

    async def two_more() -> list[list[str]] | None:
        table = rows(await kubectl(kubectl_env, "get", "pods", "-l", "app=trainer"))
        return table if len(table) == 5 else None
    await s.eventually(two_more, within=30, what="five trainer pods")
    describe = await s.eventually(lambda: _pending_description(kubectl_env), within=30, what="a Pending pod")
    assert "FailedScheduling" in describe and "cannot allocate all claims" in describe


async def _pending_description(env: dict[str, str]) -> str | None:
    table = rows(await kubectl(env, "get", "pods", "-l", "app=trainer"))
    pending = [r[0] for r in table if r[2] == "Pending"]
    for name in pending:
        text = await kubectl(env, "describe", "pod", name)
        if "FailedScheduling" in text:
            return text
    return None
