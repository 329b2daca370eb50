"""Every object the server, the fleet and every controller write reads in the typed clients and validates
strictly: a GPU Deployment with an HPA and a ResourceQuota runs on a simulated fleet with all controllers
(Nodes, Leases, ResourceSlices, pods with claims allocated and reserved, scheduler Events, ReplicaSets,
HPA, quota and DeviceTaintRule status), then every stored kind is listed and each item is checked with
`kubernetes` 37 (`ApiClient.deserialize`, as `CoreV1Api().list_node()`), lightkube's models and the
strict 1.37 schema.

Out of scope: what the controllers decide (their own tests); the sandbox's own kinds (no upstream schema).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import kubernetes.client as k8s
import kubernetes.config as k8s_config
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


@pytest.mark.cplane(controllers=list(registry.CONTROLLERS), fleet=FLEET, virtual_clock=True,
                    feature_gates="HPAScaleToZero=true")  # the story scales a Deployment to zero
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

    # The typed API methods themselves (their own response path), in a thread: the client blocks.
    names = await asyncio.to_thread(_typed_reads, sb.kubeconfig)
    assert names["nodes"] == ["gpu-node-0", "gpu-node-1"] and len(names["pods"]) >= 2, names


def _typed_reads(kubeconfig: Path) -> dict[str, list[str]]:
    with k8s_config.new_client_from_config(config_file=str(kubeconfig)) as api_client:
        core = k8s.CoreV1Api(api_client)
        apps = k8s.AppsV1Api(api_client)
        out = {"nodes": core.list_node().items, "pods": core.list_pod_for_all_namespaces().items,
               "events": core.list_event_for_all_namespaces().items, "quotas": core.list_resource_quota_for_all_namespaces().items,
               "replicasets": apps.list_replica_set_for_all_namespaces().items,
               "hpas": k8s.AutoscalingV2Api(api_client).list_horizontal_pod_autoscaler_for_all_namespaces().items,
               "claims": k8s.ResourceV1Api(api_client).list_resource_claim_for_all_namespaces().items,
               "slices": k8s.ResourceV1Api(api_client).list_resource_slice().items,
               "leases": k8s.CoordinationV1Api(api_client).list_lease_for_all_namespaces().items}
        return {key: sorted(item.metadata.name for item in items) for key, items in out.items()}
