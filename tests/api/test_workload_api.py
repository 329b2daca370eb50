"""The 1.37 Workload API (scheduling.k8s.io/v1beta1 Workload and PodGroup) through the server: served
only with the GenericWorkload gate (`--feature-gates`), as kube-apiserver serves a beta version only when
enabled; a pod's `spec.schedulingGroup` kept only then (dropped otherwise, as upstream's
dropDisabledFields); a PodGroup's `resourceClaims` only with DRAWorkloadResourceClaims."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from api import server as servers
from cp import features, protobuf

PODGROUPS = "/apis/scheduling.k8s.io/v1beta1/namespaces/default/podgroups"
WORKLOADS = "/apis/scheduling.k8s.io/v1beta1/namespaces/default/workloads"
PODS = "/api/v1/namespaces/default/pods"
GATES = features.FeatureGates({features.GENERIC_WORKLOAD: True})


@pytest.fixture
def gates() -> features.FeatureGates:
    return GATES


@pytest.fixture
async def http(tmp_path: Path, gates: features.FeatureGates) -> AsyncIterator[aiohttp.ClientSession]:
    async with servers.running(data_dir=tmp_path / "data", db_url="memory:",
                               app_options={"feature_gates": gates}) as srv, \
            aiohttp.ClientSession(base_url=srv.url) as session:
        yield session


async def call(http: aiohttp.ClientSession, method: str, path: str, body: Any = None,
               content_type: str = "application/json") -> tuple[int, Any]:
    data = None if body is None else json.dumps(body)
    async with http.request(method, path, data=data, headers={"Content-Type": content_type}) as r:
        return r.status, json.loads(await r.read())


def pod_group(name: str = "g", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": name},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}, **spec}}


def pod(name: str = "p") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "i"}], "schedulingGroup": {"podGroupName": "g"}}}


async def test_served_with_generic_workload(http: aiohttp.ClientSession) -> None:
    status, group = await call(http, "GET", "/apis/scheduling.k8s.io")
    assert status == 200
    assert [v["version"] for v in group["versions"]] == ["v1", "v1beta1"]
    assert group["preferredVersion"]["version"] == "v1"
    status, listing = await call(http, "GET", "/apis/scheduling.k8s.io/v1beta1")
    assert [(r["name"], r["kind"], r["namespaced"]) for r in listing["resources"]] == [
        ("podgroups", "PodGroup", True), ("podgroups/status", "PodGroup", True),
        ("workloads", "Workload", True)]

    status, created = await call(http, "POST", PODGROUPS, pod_group())
    assert status == 201, created
    assert created["spec"]["disruptionMode"] == {"single": {}}
    status, out = await call(http, "PATCH", f"{PODGROUPS}/g", {"spec": {"schedulingPolicy": {"gang": {"minCount": 3}}}},
                             content_type="application/merge-patch+json")
    assert status == 200 and out["spec"]["schedulingPolicy"]["gang"]["minCount"] == 3
    assert out["metadata"]["generation"] == 2
    cond = {"type": "PodGroupInitiallyScheduled", "status": "False", "reason": "Unschedulable", "message": "m",
            "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": 2}
    status, out = await call(http, "PATCH", f"{PODGROUPS}/g/status", {"status": {"conditions": [cond]}},
                             content_type="application/merge-patch+json")
    assert status == 200 and out["status"]["conditions"][0]["reason"] == "Unschedulable"
    status, out = await call(http, "POST", PODGROUPS, pod_group("bad", schedulingPolicy={}))
    assert status == 422
    assert out["details"]["causes"][0]["field"] == "spec.schedulingPolicy"

    workload = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": "w"},
                "spec": {"podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 4}}}]}}
    status, out = await call(http, "POST", WORKLOADS, workload)
    assert status == 201, out

    status, created = await call(http, "POST", PODS, pod())
    assert status == 201 and created["spec"]["schedulingGroup"] == {"podGroupName": "g"}


async def test_protobuf_and_openapi(http: aiohttp.ClientSession) -> None:
    status, _ = await call(http, "POST", PODGROUPS, pod_group())
    assert status == 201
    # client-go asks built-in kinds as protobuf first
    async with http.get(f"{PODGROUPS}/g", headers={"Accept": "application/vnd.kubernetes.protobuf, application/json"}) as r:
        assert r.status == 200 and r.headers["Content-Type"] == "application/vnd.kubernetes.protobuf"
        decoded = protobuf.decode(await r.read())
    assert decoded["spec"]["schedulingPolicy"] == {"gang": {"minCount": 2}}
    status, index = await call(http, "GET", "/openapi/v3")
    url = index["paths"]["apis/scheduling.k8s.io/v1beta1"]["serverRelativeURL"]
    status, doc = await call(http, "GET", url)
    assert status == 200
    assert "io.k8s.api.scheduling.v1beta1.PodGroup" in doc["components"]["schemas"]
    assert "/apis/scheduling.k8s.io/v1beta1/namespaces/{namespace}/podgroups/{name}/status" in doc["paths"]


async def test_pod_group_claims_need_their_gate(http: aiohttp.ClientSession) -> None:
    claims = [{"name": "shared", "resourceClaimName": "gpus"}]
    status, created = await call(http, "POST", PODGROUPS, pod_group(resourceClaims=claims))
    assert status == 201 and "resourceClaims" not in created["spec"]


class TestGatesOff:
    @pytest.fixture
    def gates(self) -> features.FeatureGates:
        return features.DEFAULT

    async def test_not_served_and_the_pod_field_dropped(self, http: aiohttp.ClientSession) -> None:
        status, group = await call(http, "GET", "/apis/scheduling.k8s.io")
        assert [v["version"] for v in group["versions"]] == ["v1"]
        status, _ = await call(http, "GET", "/apis/scheduling.k8s.io/v1beta1")
        assert status == 404
        status, _ = await call(http, "POST", PODGROUPS, pod_group())
        assert status == 404
        status, created = await call(http, "POST", PODS, pod())
        assert status == 201 and "schedulingGroup" not in created["spec"]


class TestClaimsGateOn:
    @pytest.fixture
    def gates(self) -> features.FeatureGates:
        return GATES.with_enabled([features.DRA_WORKLOAD_RESOURCE_CLAIMS])

    async def test_pod_group_claims_kept(self, http: aiohttp.ClientSession) -> None:
        claims = [{"name": "shared", "resourceClaimName": "gpus"}]
        status, created = await call(http, "POST", PODGROUPS, pod_group(resourceClaims=claims))
        assert status == 201 and created["spec"]["resourceClaims"] == claims
