"""Issue #7's story end to end with every real controller: a queue consumer whose pods each need a
GPU, scaled by an HPA with minReplicas 0 on an external metric, on a simulated fleet, on the virtual
clock. Queue empty -> after the stabilization window, 0 replicas and no GPU claims left; queue depth 25
with target 10 -> 3 replicas Running on fleet GPUs.

Out of scope: the replica arithmetic in detail (tests/controllers/hpa/test_calc.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from cp import testing

FLEET = {
    "apiVersion": "sim.cplane.dev/v1alpha1", "kind": "Fleet", "metadata": {"name": "gpus"},
    "nodePools": [{"name": "gpu-node", "count": 2, "drivers": [
        {"name": "gpu.example.com", "devices": [{"type": "gpu", "count": 2, "model": "A100"}]}]}],
}
NS = "default"

TEMPLATE = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "one-gpu"},
            "spec": {"spec": {"devices": {"requests": [
                {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}}

DEPLOYMENT = {
    "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "consumer"},
    "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "consumer"}},
             "template": {"metadata": {"labels": {"app": "consumer"}},
                          "spec": {"terminationGracePeriodSeconds": 0,
                                   "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
                                   "containers": [{"name": "worker", "image": "registry.example.com/consumer:1",
                                                   "resources": {"claims": [{"name": "gpu"}]}}]}}},
}

HPA = {
    "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "consumer"},
    "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "consumer"},
             "minReplicas": 0, "maxReplicas": 4,
             "metrics": [{"type": "External", "external": {
                 "metric": {"name": "queue_depth"}, "target": {"type": "AverageValue", "averageValue": "10"}}}]},
}


def _metric(value: int) -> dict[str, Any]:
    return {"apiVersion": "sim.cplane.dev/v1alpha1", "kind": "ExternalMetric",
            "metadata": {"name": "queue-depth", "namespace": NS},
            "spec": {"metricName": "queue_depth", "value": str(value)}}


@pytest.mark.cplane(controllers=["garbage-collector", "replicaset", "deployment", "resourceclaim", "scheduler",
                                 "horizontal-pod-autoscaler"], fleet=FLEET, virtual_clock=True,
                    feature_gates="HPAScaleToZero=true")
async def test_queue_consumer_scales_to_zero_and_back_on_gpus(cplane_sandbox: testing.Sandbox) -> None:
    sb = cplane_sandbox
    c = sb.client
    await c.create("resourceclaimtemplates.resource.k8s.io", TEMPLATE, namespace=NS)
    await c.create("externalmetrics.sim.cplane.dev", _metric(0), namespace=NS)
    await c.create("deployments.apps", DEPLOYMENT, namespace=NS)

    async def running_pods() -> list[dict[str, Any]]:
        pods = await c.list("pods", namespace=NS)
        return [p for p in pods.items if (p.get("status") or {}).get("phase") == "Running"
                and not p["metadata"].get("deletionTimestamp")]

    async def claims() -> list[dict[str, Any]]:
        return (await c.list("resourceclaims.resource.k8s.io", namespace=NS)).items

    await sb.wait_for(lambda: _count(running_pods, 1), timeout=20)
    await c.create("horizontalpodautoscalers.autoscaling", HPA, namespace=NS)

    # Queue empty: the HPA waits out the 300 s scale-down stabilization window, then goes to 0.
    await sb.advance(60)
    deploy = await c.get("deployments.apps", "consumer", namespace=NS)
    assert deploy["spec"]["replicas"] == 1
    for _ in range(6):
        await sb.advance(60)
    await sb.wait_for(lambda: _replicas(c, 0), timeout=20)
    await sb.wait_for(lambda: _count(running_pods, 0), timeout=20)
    await sb.wait_for(lambda: _count(claims, 0), timeout=20)  # the pods' GPU claims are released
    hpa = await c.get("horizontalpodautoscalers.autoscaling", "consumer", namespace=NS)
    conditions = {x["type"]: x for x in hpa["status"].get("conditions") or []}
    assert conditions["ScaledToZero"]["status"] == "True"

    # Queue depth 25, target 10 per replica: ceil(25 / 10) = 3 replicas, each on its own fleet GPU.
    metric = await c.get("externalmetrics.sim.cplane.dev", "queue-depth", namespace=NS)
    metric["spec"]["value"] = "25"
    await c.update("externalmetrics.sim.cplane.dev", metric)
    await sb.advance(15)
    await sb.wait_for(lambda: _replicas(c, 3), timeout=20)
    pods = await sb.wait_for(lambda: _exactly(running_pods, 3), timeout=30)
    allocated = await sb.wait_for(lambda: _allocated(claims, 3), timeout=30)
    devices = {(r["pool"], r["device"]) for cl in allocated
               for r in cl["status"]["allocation"]["devices"]["results"]}
    assert len(devices) == 3  # three different GPUs
    assert {p["spec"]["nodeName"] for p in pods} <= {"gpu-node-0", "gpu-node-1"}


async def _count(fetch: Any, n: int) -> bool:
    return len(await fetch()) == n


async def _exactly(fetch: Any, n: int) -> list[dict[str, Any]] | None:
    items = await fetch()
    return items if len(items) == n else None


async def _allocated(fetch: Any, n: int) -> list[dict[str, Any]] | None:
    items = [x for x in await fetch() if (x.get("status") or {}).get("allocation")]
    return items if len(items) == n else None


async def _replicas(client: Any, n: int) -> bool:
    deploy = await client.get("deployments.apps", "consumer", namespace=NS)
    return bool(deploy["spec"]["replicas"] == n)
