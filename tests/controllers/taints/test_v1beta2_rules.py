"""The upstream example driver's device-taint demos are written in resource.k8s.io/v1beta2 (their
READMEs say to start the cluster with `--runtime-config=resource.k8s.io/v1beta2=true`): a v1beta2
DeviceTaintRule with NoExecute selecting the driver's devices evicts the pod using one, as the
demo's README says; the rule's status, written by the controller through v1, reads in v1beta2.

Out of scope: the eviction rules themselves (test_taint_eviction_integration.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from cp import errors, testing

DEMO = str(Path(__file__).resolve().parents[3] / "examples" / "fleets" / "demo.yaml")
RULES = "/apis/resource.k8s.io/v1beta2/devicetaintrules"
CLAIM = {"apiVersion": "resource.k8s.io/v1beta2", "kind": "ResourceClaim", "metadata": {"name": "gpu"},
         "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pod0"},
       "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu"}],
                "containers": [{"name": "ctr0", "image": "ubuntu:22.04", "resources": {"claims": [{"name": "gpu"}]}}]}}
RULE = {"apiVersion": "resource.k8s.io/v1beta2", "kind": "DeviceTaintRule", "metadata": {"name": "example"},
        "spec": {"deviceSelector": {"driver": "gpu.example.com"},
                 "taint": {"key": "gpu.example.com/unhealthy", "value": "true", "effect": "NoExecute"}}}


@pytest.mark.cplane(controllers=["garbage-collector", "namespace", "resourceclaim", "scheduler",
                                 "device-taint-eviction"],
                    fleet=DEMO, runtime_config="resource.k8s.io/v1beta2=true")
async def test_a_v1beta2_no_execute_rule_evicts(cplane_sandbox: testing.Sandbox) -> None:
    sb = cplane_sandbox
    async with aiohttp.ClientSession(base_url=sb.url) as http:
        async with http.post("/apis/resource.k8s.io/v1beta2/namespaces/default/resourceclaims", json=CLAIM) as r:
            assert r.status == 201, await r.text()
        await sb.client.create("pods", POD, namespace="default")

        async def running() -> bool:
            pod = await sb.client.get("pods", "pod0", namespace="default")
            return (pod.get("status") or {}).get("phase") == "Running"

        await sb.wait_for(running, timeout=30)
        async with http.post(RULES, json=RULE) as r:
            assert r.status == 201, await r.text()

        async def evicted() -> Any:
            try:
                pod = await sb.client.get("pods", "pod0", namespace="default")
            except errors.NotFound:  # gone: evicted and deleted
                return True
            return pod["metadata"].get("deletionTimestamp") is not None

        await sb.wait_for(evicted, timeout=30)
        async with http.get(f"{RULES}/example") as r:
            rule = json.loads(await r.read())
    assert rule["apiVersion"] == "resource.k8s.io/v1beta2"
    assert rule["spec"]["taint"]["timeAdded"]  # defaulted, as v1's
    assert any(c["type"] == "EvictionInProgress" for c in (rule.get("status") or {}).get("conditions", []))
