"""resource.k8s.io/v1alpha3 ResourcePoolStatusRequest (KEP-5677) through the server: served only with
DRAResourcePoolStatus and `--runtime-config resource.k8s.io/v1alpha3=true` (404 otherwise), defaulted,
validated (422), its status the controller's, printed as a Table, documented in OpenAPI."""

from __future__ import annotations

import aiohttp
import pytest

from cp import features, protobuf
from tests.controllers.poolstatus.support import (
    ALPHA,
    BASE,
    GATES,
    TABLE,
    call,
    http,
    options,
    request,
    runtime,
    srv,
)

__all__ = ["http", "options", "srv"]  # the fixtures
PROTOBUF = "application/vnd.kubernetes.protobuf"


async def test_served_with_the_gate_and_the_runtime_config(http: aiohttp.ClientSession) -> None:
    status, listing = await call(http, "GET", "/apis/resource.k8s.io/v1alpha3")
    assert status == 200
    assert [(r["name"], r["kind"], r["namespaced"]) for r in listing["resources"]] == [
        ("devicetaintrules", "DeviceTaintRule", False), ("devicetaintrules/status", "DeviceTaintRule", False),
        ("resourcepoolstatusrequests", "ResourcePoolStatusRequest", False),
        ("resourcepoolstatusrequests/status", "ResourcePoolStatusRequest", False)]
    status, created = await call(http, "POST", BASE, {**request("r"), "status": {"poolCount": 3}})
    assert status == 201, created
    assert created["spec"] == {"driver": "gpu.example.com", "limit": 100}
    assert "status" not in created  # status is the controller's to write
    assert "generation" not in created["metadata"]  # upstream's strategy sets none
    # DRAPartitionableDevicesType (alpha) is off: its field is dropped.
    status, out = await call(http, "POST", BASE, request("typed", defaultPartitionTypeAttribute="gpu.example.com/p"))
    assert status == 201 and "defaultPartitionTypeAttribute" not in out["spec"], out
    status, out = await call(http, "GET", f"{BASE}/r",
                             accept=TABLE)
    assert [c["name"] for c in out["columnDefinitions"]] == [
        "Name", "Driver", "Total", "Available", "Allocated", "Unavailable", "Errors", "Pools", "Status",
        "Completed"]
    assert out["rows"][0]["cells"] == ["r", "gpu.example.com", 0, 0, 0, 0, 0, 0, "Pending", "<none>"]
    status, out = await call(http, "GET", "/openapi/v3/apis/resource.k8s.io/v1alpha3")
    assert status == 200
    assert "io.k8s.api.resource.v1alpha3.ResourcePoolStatusRequest" in out["components"]["schemas"]


@pytest.mark.parametrize("options", [{"feature_gates": features.parse(
    "DRAResourcePoolStatus=true,DRAPartitionableDevicesType=true"), "runtime_config": runtime(ALPHA)}])
async def test_the_default_partition_type_attribute_with_its_gate(http: aiohttp.ClientSession) -> None:
    status, out = await call(http, "POST", BASE, request("typed", defaultPartitionTypeAttribute="gpu.example.com/p"))
    assert status == 201 and out["spec"]["defaultPartitionTypeAttribute"] == "gpu.example.com/p", out
    status, out = await call(http, "POST", BASE, request("bad", defaultPartitionTypeAttribute="profile"))
    assert status == 422
    assert [c["field"] for c in out["details"]["causes"]] == ["spec.defaultPartitionTypeAttribute"]


@pytest.mark.parametrize("options", [
    {"feature_gates": GATES},  # the gate alone: the version is off
    {"runtime_config": runtime(ALPHA)},  # the version alone: the gate is off
], ids=["gate-only", "runtime-config-only"])
async def test_not_served_without_both(http: aiohttp.ClientSession) -> None:
    status, out = await call(http, "POST", BASE, request("r"))
    assert status == 404, out
    status, out = await call(http, "GET", BASE)
    assert status == 404


async def test_validation(http: aiohttp.ClientSession) -> None:
    cases = [
        ({"driver": ""}, ("FieldValueRequired", "spec.driver")),
        ({"limit": 0}, ("FieldValueInvalid", "spec.limit")),
        ({"limit": 1001}, ("FieldValueInvalid", "spec.limit")),
        ({"poolName": "Not/A_Pool"}, ("FieldValueInvalid", "spec.poolName")),
        ({"poolName": ""}, ("FieldValueInvalid", "spec.poolName")),
        ({"driver": "not a driver"}, ("FieldValueInvalid", "spec.driver")),
    ]
    for i, (spec, (reason, field)) in enumerate(cases):
        status, out = await call(http, "POST", BASE, request(f"bad-{i}", **spec))
        assert status == 422, (spec, out)
        assert out["reason"] == "Invalid"
        assert (out["details"]["causes"][0]["reason"], out["details"]["causes"][0]["field"]) == (reason, field)
    status, out = await call(http, "POST", BASE, request("ok", poolName="node-1", limit=1000))
    assert status == 201, out
    # The spec is immutable.
    status, out = await call(http, "PATCH", f"{BASE}/ok", {"spec": {"limit": 5}},
                             content_type="application/merge-patch+json")
    assert status == 422 and out["details"]["causes"][0]["field"] == "spec", out
    # Status, once written, is too.
    cond = {"type": "Complete", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z",
            "reason": "CalculationComplete", "message": "Calculated status for 0 pools"}
    status, out = await call(http, "PATCH", f"{BASE}/ok/status", {"status": {"poolCount": 0, "conditions": [cond]}},
                             content_type="application/merge-patch+json")
    assert status == 200, out
    status, out = await call(http, "PATCH", f"{BASE}/ok/status", {"status": {"poolCount": 1}},
                             content_type="application/merge-patch+json")
    assert status == 422 and out["details"]["causes"][0]["field"] == "status", out
    # A status without poolCount, or with a negative count, is refused.
    status, _ = await call(http, "POST", BASE, request("fresh"))
    status, out = await call(http, "PATCH", f"{BASE}/fresh/status",
                             {"status": {"pools": [{"driver": "gpu.example.com", "poolName": "p", "generation": 0,
                                                    "totalDevices": -1}]}},
                             content_type="application/merge-patch+json")
    assert status == 422, out
    assert {(c["reason"], c["field"]) for c in out["details"]["causes"]} == {
        ("FieldValueRequired", "status.poolCount"), ("FieldValueRequired", "status.pools[0].generation"),
        ("FieldValueInvalid", "status.pools[0].totalDevices")}


async def test_protobuf_both_ways(http: aiohttp.ClientSession) -> None:
    """client-go's typed clients write and read built-in kinds as protobuf."""
    body = protobuf.encode(request("pb", poolName="node-1"), api_version="resource.k8s.io/v1alpha3",
                           kind="ResourcePoolStatusRequest")
    async with http.post(BASE, data=body, headers={"Content-Type": PROTOBUF, "Accept": PROTOBUF}) as r:
        assert r.status == 201 and r.headers["Content-Type"] == PROTOBUF
        created = protobuf.decode(await r.read())
    assert created["spec"] == {"driver": "gpu.example.com", "poolName": "node-1", "limit": 100}
    status = {"poolCount": 1, "pools": [{"driver": "gpu.example.com", "poolName": "node-1", "generation": 1,
                                         "resourceSliceCount": 1, "totalDevices": 0, "allocatedDevices": 0,
                                         "availableDevices": 0, "unavailableDevices": 0}],
              "conditions": [{"type": "Complete", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z",
                              "reason": "CalculationComplete", "message": "Calculated status for 1 pools"}]}
    body = protobuf.encode({**created, "status": status}, api_version="resource.k8s.io/v1alpha3",
                           kind="ResourcePoolStatusRequest")
    async with http.put(f"{BASE}/pb/status", data=body, headers={"Content-Type": PROTOBUF, "Accept": PROTOBUF}) as r:
        assert r.status == 200
        written = protobuf.decode(await r.read())
    # The zero counts (pointers) are written as set.
    assert written["status"]["pools"][0] == status["pools"][0]
    assert written["status"]["poolCount"] == 1
