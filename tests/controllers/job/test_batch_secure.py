"""The batch controllers in a secure `cplane serve` (TLS, authentication, each controller as its own
ServiceAccount with its RBAC role) and the demo fleet, in real time: a Job runs to completion and
is deleted by TTL-after-finished (the job and ttl-after-finished controllers' writes are never
refused), and the CronJob controller's role allows what it does."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from cp.testing import eventually
from tests.kubectl.conftest import KUBECTL
from tests.kubectl.test_secure import CPLANE, ROOT, run

pytestmark = [pytest.mark.kubectl, pytest.mark.skipif(KUBECTL is None, reason="kubectl not installed")]

JOB = """
apiVersion: batch/v1
kind: Job
metadata: {name: quick}
spec:
  completions: 2
  parallelism: 2
  ttlSecondsAfterFinished: 3
  template:
    metadata:
      annotations: {sim.cplane.dev/run-seconds: "1"}
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox}]
"""


async def test_batch_controllers_act_with_their_own_identities(tmp_path: Path) -> None:
    data = tmp_path / "data"
    log_path = tmp_path / "server.log"
    with log_path.open("wb") as log_file:
        server = await asyncio.create_subprocess_exec(
            *CPLANE, "serve", "--data-dir", str(data), "--port", "0", "--fleet",
            str(ROOT / "examples/fleets/demo.yaml"), "--log-format", "json",
            stdout=log_file, stderr=asyncio.subprocess.STDOUT, cwd=ROOT)
    home = tmp_path / "home"
    home.mkdir()
    admin = data / "kubeconfig"

    async def k(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
        return await run(str(KUBECTL), *args, kubeconfig=admin, home=home, stdin=stdin)

    async def ok(*args: str) -> bool:
        return admin.exists() and (await k(*args))[0] == 0

    try:
        await eventually(lambda: ok("get", "--raw", "/readyz"), within=30, interval=0.3, what="readyz")
        await eventually(lambda: ok("get", "sa", "default"), within=30, interval=0.3, what="the default account")
        code, out, err = await k("apply", "-f", "-", stdin=JOB)
        assert code == 0, err
        code, out, err = await k("wait", "--for=condition=complete", "job/quick", "--timeout=30s")
        assert code == 0 and "condition met" in out, err

        async def gone() -> bool:
            code, out, _ = await k("get", "jobs", "-o", "name")
            return code == 0 and "job.batch/quick" not in out
        await eventually(gone, within=30, interval=0.3, what="the Job deleted by its TTL")
        for verb, resource in (("create", "jobs.batch"), ("delete", "jobs.batch"), ("update", "cronjobs.batch/status")):
            code, out, _ = await k("auth", "can-i", verb, resource,
                                   "--as=system:serviceaccount:kube-system:cronjob-controller")
            assert out.strip() == "yes", (verb, resource, out)
    finally:
        server.terminate()
        await asyncio.wait_for(server.wait(), 20)
    actors = set()
    for line in log_path.read_text().splitlines():
        if line.startswith("{") and '"event": "request"' in line:
            entry = json.loads(line)
            actors.add(entry["user"])
            if entry["code"] in (401, 403) and entry["user"].startswith("system:serviceaccount:kube-system:"):
                raise AssertionError(f"controller refused: {line}")
    assert {"system:serviceaccount:kube-system:job-controller",
            "system:serviceaccount:kube-system:ttl-after-finished-controller"} <= actors, actors
