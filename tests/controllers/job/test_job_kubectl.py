"""The real kubectl against the Job controller and the controllers around it (fleet of two nodes
with four GPUs each, scheduler, ResourceClaim controller): an Indexed Job of 8 pods, each with a
claim from a template for one GPU, runs to completion; `kubectl wait --for=condition=complete`
returns; the claims are deallocated and deleted. Skipped when kubectl is not installed."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from api import server as servers
from controllers.runtime import client as clients
from cp import clock as clocks
from tests.controllers.job import support as s
from tests.controllers.job.conftest import StartBatch
from tests.controllers.scheduler.test_scheduler_kubectl import KUBECTL, kubectl, rows

pytestmark = [pytest.mark.kubectl, pytest.mark.skipif(KUBECTL is None, reason="kubectl not installed")]

MANIFEST = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: one-gpu
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.example.com
---
apiVersion: batch/v1
kind: Job
metadata:
  name: train
spec:
  completionMode: Indexed
  completions: 8
  parallelism: 8
  template:
    metadata:
      annotations:
        sim.cplane.dev/run-seconds: "60"
    spec:
      restartPolicy: Never
      containers:
      - name: shard
        image: registry.k8s.io/pause:3.10
        resources:
          claims:
          - name: gpu
      resourceClaims:
      - name: gpu
        resourceClaimTemplateName: one-gpu
"""


@pytest.fixture
def kubectl_env(srv: servers.Running, tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    return {"HOME": str(home), "KUBECONFIG": str(srv.kubeconfig), "PATH": ""}


async def test_indexed_gpu_job_completes_and_releases_its_claims(
        client: clients.Client, clock: clocks.VirtualClock, start_batch: StartBatch,
        kubectl_env: dict[str, str]) -> None:
    await start_batch()
    out = await kubectl(kubectl_env, "apply", "-f", "-", stdin=MANIFEST)
    assert "job.batch/train created" in out

    async def all_running() -> list[list[str]] | None:
        table = rows(await kubectl(kubectl_env, "get", "pods", "-l", "batch.kubernetes.io/job-name=train"))
        return table if len(table) == 8 and all(r[2] == "Running" for r in table) else None
    await s.eventually(all_running, within=30, what="eight pods Running")
    claims = rows(await kubectl(kubectl_env, "get", "resourceclaims"))
    assert len(claims) == 8 and all(r[1] == "allocated,reserved" for r in claims)
    wide = rows(await kubectl(kubectl_env, "get", "pods", "-o", "wide"))
    assert sorted(r[6] for r in wide) == ["gpu-0"] * 4 + ["gpu-1"] * 4

    waiter = asyncio.ensure_future(kubectl(kubectl_env, "wait", "--for=condition=complete", "job/train",
                                           "--timeout=30s"))
    clock.advance(60)
    assert (await waiter).strip() == "job.batch/train condition met"
    table = rows(await kubectl(kubectl_env, "get", "job", "train"))
    assert table[0][:2] == ["train", "Complete"] and table[0][2] == "8/8"
    job = await s.get_job(client, "train")
    assert job["status"]["completedIndexes"] == "0-7"

    async def claims_gone() -> bool:
        return not (await client.list("resourceclaims.resource.k8s.io", namespace="default")).items
    await s.eventually(claims_gone, within=30, what="claims deallocated and deleted")
