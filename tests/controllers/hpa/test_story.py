"""The HPA end to end, on the virtual clock (issue #7): a queue consumer scaled to zero and back.

A Deployment `queue-consumer` (1 replica) is autoscaled with `minReplicas: 0` on the External
metric `queue_depth` (target value 10), written with `cplane metrics set external`:

1. depth 0: the HPA proposes 0 at once, but the default 300 s scale-down window keeps 1 replica
   (`ScaleDownStabilized`) until the first sync after the window: then 0 replicas, `ScaledToZero=True`
   and a `SuccessfulRescale` "All metrics below target";
2. at 0 the metric is still read; depth 25 -> `ceil(25 / 10)` = 3 replicas (`NotScaledToZero`),
   "external metric queue_depth(nil) above target";
3. the queue drains to 10 (10/10, within tolerance): 3 replicas stay; the real kubectl's
   `get hpa` and `describe hpa` read as upstream;
4. `kubectl scale --replicas=0` by hand is a pause: `ScalingActive=False/ScalingDisabled`,
   TARGETS `<unknown>/10`, and a high depth does not wake it.

Only the HPA controller runs; `support.Workload` plays ReplicaSet + scheduler + kubelet when the test
says so. Every clock move and metric change goes through the API, so all of it is in the event log.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
from pathlib import Path

import aiohttp
import pytest

from cp.cli import metrics as hpa_cli
from tests.controllers.hpa import support
from tests.controllers.hpa.support import condition
from tests.kubectl.conftest import KUBECTL, Kubectl

ROOT = Path(__file__).resolve().parents[3]

HPA_YAML = """\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: queue-consumer
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: queue-consumer
  minReplicas: 0
  maxReplicas: 10
  metrics:
  - type: External
    external:
      metric:
        name: queue_depth
      target:
        type: Value
        value: "10"
"""

CPU_ONLY_ZERO = """\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: cpu-zero
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: queue-consumer}
  minReplicas: 0
  maxReplicas: 10
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}
"""


async def _cli(server_url: str, *args: str) -> str:
    """Run the `cplane metrics` command line (the installed entry point) against the server."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "cp.cli", "metrics", *args, "--server", server_url,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0, err.decode()
    return out.decode()


def _field(text: str, label: str) -> str:
    for line in text.splitlines():
        if line.startswith(label + ":"):
            return line[len(label) + 1:].strip()
    raise AssertionError(f"no {label!r} line in:\n{text}")


def _condition_rows(describe: str) -> dict[str, list[str]]:
    block = describe.split("Conditions:", 1)[1].split("Events:", 1)[0]
    rows = [re.split(r"\s{2,}", line.strip(), maxsplit=3) for line in block.splitlines()[3:] if line.strip()]
    return {r[0]: r[1:] for r in rows}


@pytest.mark.kubectl
async def test_queue_consumer_scales_to_zero_and_back(tmp_path: Path) -> None:
    if KUBECTL is None:
        pytest.skip("kubectl not found: run `make test` (tests/tools/fetch-kubectl.sh) or set CPLANE_KUBECTL")
    async with support.cluster(tmp_path) as cl:
        kubectl = Kubectl(cl.srv, home=tmp_path / "home", workdir=tmp_path / "work")
        try:
            await _story(cl, kubectl)
        finally:
            await kubectl.close()


async def _story(cl: support.Cluster, kubectl: Kubectl) -> None:
    await cl.client.create("nodes", support.node())
    await cl.client.create(support.DEPLOYMENTS, support.deployment("queue-consumer", replicas=1))
    work = support.Workload(cl, "queue-consumer")
    assert await work.sync() == 1

    # minReplicas 0 needs an Object or External metric (upstream's message, 422).
    r = await kubectl("create", "-f", "-", input=CPU_ONLY_ZERO, check=False)
    assert r.code == 1
    assert ("spec.metrics: Forbidden: must specify at least one Object or External metric to support scaling "
            "to zero replicas") in r.stderr

    out = await _cli(cl.srv.url, "set", "external", "queue_depth", "0", "-n", "default")
    assert out.strip() == "externalmetric.sim.cplane.dev/queue-depth created"
    await kubectl("create", "-f", "-", input=HPA_YAML)
    t0 = cl.clock.now()
    await cl.synced("queue-consumer", at=t0)

    # 1. Depth 0: 0 is proposed at once, the 300 s scale-down window holds 1 replica.
    h = await cl.hpa("queue-consumer")
    assert condition(h, "AbleToScale")[:2] == ("True", "ScaleDownStabilized")
    assert condition(h, "ScalingActive")[:2] == ("True", "ValidMetricFound")
    assert h["status"]["currentMetrics"] == [
        {"type": "External", "external": {"metric": {"name": "queue_depth"}, "current": {"value": "0"}}}]
    for _ in range(20):  # t0 + 15 ... t0 + 300: a sample exactly 300 s old still counts
        await cl.tick("queue-consumer")
        assert await cl.replicas("queue-consumer") == 1
    assert cl.clock.now() == t0 + 300
    await cl.tick("queue-consumer")  # t0 + 315: the window has passed
    assert await cl.replicas("queue-consumer") == 0
    h = await cl.hpa("queue-consumer")
    assert condition(h, "ScaledToZero") == ("True", "ScaledToZero", "the HPA controller scaled the workload to zero")
    assert condition(h, "AbleToScale")[:2] == ("True", "SucceededRescale")
    assert h["status"]["desiredReplicas"] == 0 and h["status"]["currentReplicas"] == 1
    assert h["status"]["lastScaleTime"]
    assert await work.sync() == 0

    # 2. At zero the metric is still read: nothing to do at depth 0, 3 replicas at depth 25.
    await cl.tick("queue-consumer")
    h = await cl.hpa("queue-consumer")
    assert condition(h, "ScalingActive")[:2] == ("True", "ValidMetricFound")
    assert await cl.replicas("queue-consumer") == 0
    out = await _cli(cl.srv.url, "set", "external", "queue_depth", "25", "-n", "default")
    assert out.strip() == "externalmetric.sim.cplane.dev/queue-depth configured"
    await cl.tick("queue-consumer")
    assert await cl.replicas("queue-consumer") == 3
    h = await cl.hpa("queue-consumer")
    assert condition(h, "ScaledToZero") == ("False", "NotScaledToZero",
                                            "the HPA controller did not scale the workload to zero")
    r = await kubectl("get", "hpa")
    assert r.rows() == [["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"],
                        ["queue-consumer", "Deployment/queue-consumer", "25/10", "0", "10", "0", "5m45s"]]
    assert await work.sync() == 3

    # 3. The queue drains to the target: 10/10 is within the tolerance, 3 replicas stay.
    async with aiohttp.ClientSession(base_url=cl.srv.url) as http:
        assert (await hpa_cli.set_external(http, metric="queue_depth", value="10"))[0] == "configured"
    await cl.tick("queue-consumer")
    assert await cl.replicas("queue-consumer") == 3
    r = await kubectl("get", "hpa", "queue-consumer")
    assert r.rows()[1] == ["queue-consumer", "Deployment/queue-consumer", "10/10", "0", "10", "3", "6m"]

    d = (await kubectl("describe", "hpa", "queue-consumer")).stdout
    assert _field(d, "Name") == "queue-consumer" and _field(d, "Namespace") == "default"
    assert _field(d, "Reference") == "Deployment/queue-consumer"
    assert _field(d, "Metrics") == "( current / target )"
    assert re.search(r'^\s+"queue_depth" \(target value\):\s+10 / 10$', d, re.M), d
    assert _field(d, "Min replicas") == "0" and _field(d, "Max replicas") == "10"
    assert _field(d, "Deployment pods") == "3 current / 3 desired"
    rows = _condition_rows(d)
    assert rows["AbleToScale"] == ["True", "ReadyForNewScale", "recommended size matches current size"]
    assert rows["ScalingActive"] == ["True", "ValidMetricFound", "the HPA was able to successfully calculate a "
                                     "replica count from external metric queue_depth(nil)"]
    assert rows["ScalingLimited"] == ["False", "DesiredWithinRange", "the desired count is within the acceptable range"]
    assert rows["ScaledToZero"] == ["False", "NotScaledToZero", "the HPA controller did not scale the workload to zero"]
    events = d.split("Events:", 1)[1]
    assert re.search(r"Normal\s+SuccessfulRescale\s+\S+\s+horizontal-pod-autoscaler\s+New size: 0; reason: All "
                     r"metrics below target", events), events
    assert re.search(r"Normal\s+SuccessfulRescale\s+\S+\s+horizontal-pod-autoscaler\s+New size: 3; reason: external "
                     r"metric queue_depth\(nil\) above target", events), events

    # 4. Scaled to zero by hand: a pause, not the HPA's zero.
    await kubectl("scale", "deployment/queue-consumer", "--replicas=0")
    await work.sync()
    async with aiohttp.ClientSession(base_url=cl.srv.url) as http:
        assert (await hpa_cli.set_external(http, metric="queue_depth", value="500"))[0] == "configured"
    await cl.tick("queue-consumer")
    await cl.tick("queue-consumer")
    assert await cl.replicas("queue-consumer") == 0
    h = await cl.hpa("queue-consumer")
    assert condition(h, "ScalingActive") == ("False", "ScalingDisabled",
                                             "scaling is disabled since the replica count of the target is zero")
    assert "currentMetrics" not in h["status"]
    r = await kubectl("get", "hpa", "queue-consumer")
    assert r.rows()[1][2] == "<unknown>/10"

    # Every decision is in the event log: the clock moves, the metric writes and the rescales.
    async with aiohttp.ClientSession(base_url=cl.srv.url) as http, \
            http.get("/apis/sim.cplane.dev/v1alpha1/namespaces/default/externalmetrics/queue-depth") as resp:
        assert (await resp.json())["metadata"]["generation"] == 4  # 0, 25, 10, 500
    history = await cl.srv.event_log.history(group="apps", resource="deployments", namespace="default",
                                             name="queue-consumer")
    assert len(history) >= 4
