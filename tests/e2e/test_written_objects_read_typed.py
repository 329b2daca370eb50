"""Every object the server, the fleet and every controller write reads in the typed clients and validates
strictly: a GPU Deployment with an HPA and a ResourceQuota runs on a simulated fleet with all controllers
(Nodes, Leases, ResourceSlices, pods with claims allocated and reserved, scheduler Events, ReplicaSets,
HPA, quota and DeviceTaintRule status), then every stored kind is listed and each item is checked with
`kubernetes` 37 (`ApiClient.deserialize`, as `CoreV1Api().list_node()`), lightkube's models and the
strict 1.37 schema.

Out of scope: what the controllers decide (their own tests); the sandbox's own kinds (no upstream schema).
"""

from __future__ import annotations

from typing import Any

import pytest

from controllers import registry
from cp import resources as res
from cp import testing
from tests.clients import support
from tests.e2e.test_hpa_gpu_story import DEPLOYMENT, FLEET, HPA, NS, TEMPLATE, _metric

# Taints no device of the fleet (its selector matches nothing): the evictor reports on it all the same.
TAINT_RULE = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": "none"},
              "spec": {"deviceSelector": {"driver": "other.example.com"},
                       "taint": {"key": "example.com/maintenance", "effect": "NoExecute"}}}
QUOTA = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "gpus"},
         "spec": {"hard": {"pods": "10", "count/resourceclaims.resource.k8s.io": "10"}}}


@pytest.mark.cplane(controllers=list(registry.CONTROLLERS), fleet=FLEET, virtual_clock=True)
async def test_objects_written_by_fleet_and_controllers_read_typed(cplane_sandbox: testing.Sandbox) -> None:
    sb = cplane_sandbox
    c = sb.client
    await c.create("resourcequotas", QUOTA, namespace=NS)
    await c.create("devicetaintrules.resource.k8s.io", TAINT_RULE)
    await c.create("resourceclaimtemplates.resource.k8s.io", TEMPLATE, namespace=NS)
    await c.create("externalmetrics.sim.cplane.dev", _metric(15), namespace=NS)
    await c.create("deployments.apps", {**DEPLOYMENT, "spec": {**DEPLOYMENT["spec"], "replicas": 2}}, namespace=NS)
    await c.create("horizontalpodautoscalers.autoscaling", HPA, namespace=NS)

    async def running() -> bool:
        pods = (await c.list("pods", namespace=NS)).items
        return len([p for p in pods if (p.get("status") or {}).get("phase") == "Running"]) >= 2

    await sb.wait_for(running, timeout=20)
    await sb.advance(30)  # heartbeats, HPA and quota status

    async def hpa_status() -> bool:
        hpa = await c.get("horizontalpodautoscalers.autoscaling", "consumer", namespace=NS)
        return bool((hpa.get("status") or {}).get("conditions"))

    await sb.wait_for(hpa_status, timeout=20)

    async def rule_status() -> bool:
        rule = await c.get("devicetaintrules.resource.k8s.io", "none")
        return bool((rule.get("status") or {}).get("conditions"))

    await sb.wait_for(rule_status, timeout=20)

    problems: list[str] = []
    seen: dict[str, int] = {}
    for kind in res.KINDS:
        if kind.group == res.SIM_GROUP or not kind.stored:
            continue
        for item in (await c.list(kind)).items:
            obj: dict[str, Any] = {"apiVersion": kind.api_version, "kind": kind.kind, **item}
            seen[kind.kind] = seen.get(kind.kind, 0) + 1
            name = f"{kind.kind} {obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}"
            problems += [f"{name}: {p}" for p in support.schema_problems(obj) + support.typed_problems(obj)]
    for written in ("Node", "Lease", "ResourceSlice", "Pod", "ResourceClaim", "ReplicaSet", "Event",
                    "HorizontalPodAutoscaler", "ResourceQuota"):
        assert seen.get(written), f"no {written} written: {seen}"
    assert not problems, "\n".join(problems)
