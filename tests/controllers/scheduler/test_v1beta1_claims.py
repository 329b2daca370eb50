"""A ResourceClaim written through resource.k8s.io/v1beta1 (`--runtime-config
resource.k8s.io/v1beta1=true`, as older drivers' and NVIDIA's tests write them) is allocated by the
scheduler like any claim: the controllers read v1, the client reads its allocation back in v1beta1's
shape, and watches of v1beta1 see the scheduler's writes.

Out of scope: the conversion field by field (tests/cp/test_conversions.py, tests/api/test_runtime_config.py)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from cp import testing

DEMO = str(Path(__file__).resolve().parents[3] / "examples" / "fleets" / "demo.yaml")
CLAIMS = "/apis/resource.k8s.io/v1beta1/namespaces/default/resourceclaims"

CLAIM = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim", "metadata": {"name": "two-gpus"},
         "spec": {"devices": {"requests": [{
             "name": "gpu", "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 2,
             "selectors": [{"cel": {"expression": 'device.attributes["gpu.example.com"].model == "A100-SXM4-80GB"'}}]}],
             "constraints": [{"requests": ["gpu"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}]}}}
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "trainer"},
       "spec": {"resourceClaims": [{"name": "gpus", "resourceClaimName": "two-gpus"}],
                "containers": [{"name": "main", "image": "trainer", "resources": {"claims": [{"name": "gpus"}]}}]}}


async def _get(http: aiohttp.ClientSession, path: str) -> Any:
    async with http.get(path) as r:
        assert r.status == 200, await r.text()
        return json.loads(await r.read())


@pytest.mark.cplane(fleet=DEMO, runtime_config="resource.k8s.io/v1beta1=true")
async def test_a_v1beta1_claim_is_allocated(cplane_sandbox: testing.Sandbox) -> None:
    sb = cplane_sandbox
    async with aiohttp.ClientSession(base_url=sb.url) as http:
        listed = await _get(http, CLAIMS)
        params = {"watch": "1", "resourceVersion": listed["metadata"]["resourceVersion"], "timeoutSeconds": "30"}
        async with http.get(CLAIMS, params=params) as watch:
            async with http.post(CLAIMS, json=CLAIM) as r:
                assert r.status == 201, await r.text()
                assert "deprecated in v1.35+" in r.headers["Warning"]
            await sb.client.create("pods", POD, namespace="default")

            async def allocated() -> Any:
                claim = await _get(http, f"{CLAIMS}/two-gpus")
                return claim if (claim.get("status") or {}).get("allocation") and \
                    (claim["status"].get("reservedFor") or []) else None

            claim = await sb.wait_for(allocated, timeout=30)
            seen: list[dict[str, Any]] = []
            while not any((e["object"].get("status") or {}).get("allocation") for e in seen):
                seen.append(json.loads(await asyncio.wait_for(watch.content.readline(), 30)))
    assert claim["apiVersion"] == "resource.k8s.io/v1beta1"
    # the request as written, flat (the scheduler wrote the v1 object it read)
    assert claim["spec"]["devices"]["requests"] == CLAIM["spec"]["devices"]["requests"]
    results = claim["status"]["allocation"]["devices"]["results"]
    assert [r["request"] for r in results] == ["gpu", "gpu"]
    assert len({r["pool"] for r in results}) == 1 and {r["driver"] for r in results} == {"gpu.example.com"}
    assert claim["status"]["reservedFor"][0]["name"] == "trainer"
    assert all(e["object"]["apiVersion"] == "resource.k8s.io/v1beta1" for e in seen)
    async def bound() -> Any:  # the claim is reserved (PreBind) before the pod's binding is written
        pod = await sb.client.get("pods", "trainer", namespace="default")
        return pod if pod["spec"].get("nodeName") else None

    pod = await sb.wait_for(bound, timeout=30)
    assert pod["spec"]["nodeName"] == results[0]["pool"]
