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

MANIFEST = (Path(__file__).resolve().parents[3] / "examples" / "batch" / "train.yaml").read_text()


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


SUSPENDED = """
apiVersion: batch/v1
kind: Job
metadata:
  name: shards
spec:
  suspend: true
  completionMode: Indexed
  completions: 2
  parallelism: 2
  backoffLimitPerIndex: 3
  podFailurePolicy:
    rules:
    - action: FailIndex
      onExitCodes: {operator: In, values: [42]}
  template:
    metadata:
      annotations:
        sim.cplane.dev/run-seconds: "10"
        sim.cplane.dev/exit-code: "42"
    spec:
      restartPolicy: Never
      containers:
      - name: shard
        image: registry.k8s.io/pause:3.10
"""


async def test_suspended_job_then_failing_indexes_and_a_cronjob_with_kubectl(
        client: clients.Client, clock: clocks.VirtualClock, start_batch: StartBatch,
        kubectl_env: dict[str, str]) -> None:
    cluster = await start_batch(extra=("cronjob",))
    assert "job.batch/shards created" in await kubectl(kubectl_env, "apply", "-f", "-", stdin=SUSPENDED)
    await s.eventually(lambda: s.job_condition(client, "shards", "Suspended"), what="Suspended")
    clock.advance(60)
    await cluster.settle()
    out = await kubectl(kubectl_env, "get", "pods", "-l", "batch.kubernetes.io/job-name=shards")
    assert out == ""  # "No resources found" goes to stderr
    table = rows(await kubectl(kubectl_env, "get", "job", "shards"))
    assert table[0][1] == "Suspended"
    await kubectl(kubectl_env, "patch", "job", "shards", "--type=merge", "-p", '{"spec":{"suspend":false}}')
    await s.eventually(lambda: s.running(client, "shards", 2), what="two pods after the resume")
    waiter = asyncio.ensure_future(kubectl(kubectl_env, "wait", "--for=condition=failed", "job/shards",
                                           "--timeout=30s"))
    clock.advance(10)  # both exit 42: FailIndex, no retry although backoffLimitPerIndex is 3
    assert (await waiter).strip() == "job.batch/shards condition met"
    assert await kubectl(kubectl_env, "get", "job", "shards", "-o",
                         "jsonpath={.status.failedIndexes} {.status.conditions[?(@.type=='Failed')].reason}") \
        == "0,1 FailedIndexes"
    assert len(await s.pods_of(client, "shards")) == 2

    await kubectl(kubectl_env, "create", "cronjob", "tick", "--image=busybox", "--schedule=* * * * *")
    await cluster.settle()
    clock.advance(60.5)  # the controller looks 100 ms after each minute

    async def jobs(count: int) -> list[list[str]] | None:
        table = [r for r in rows(await kubectl(kubectl_env, "get", "jobs")) if r[0].startswith("tick-")]
        return table if len(table) == count else None
    await s.eventually(lambda: jobs(1), what="the first minute's Job")
    clock.advance(60)
    await s.eventually(lambda: jobs(2), what="the second minute's Job")
    table = rows(await kubectl(kubectl_env, "get", "cronjob", "tick"))
    assert table[0][:2] == ["tick", "* * * * *"] and table[0][4] == "2"  # ACTIVE
