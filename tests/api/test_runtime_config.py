"""Built-in API versions switched on and off with `--runtime-config` (`make_app(runtime_config=...)`), as
kube-apiserver: resource.k8s.io/v1beta2 is off by default (404, not discovered, not in OpenAPI); switched
on, each of its five kinds is the v1 objects converted (a write through either version reads the same
through both, lists and watches included), v1 stays the preferred version, and every request of a
deprecated kind carries upstream's `Warning`. A default version switched off is not served.

Out of scope: the flag's syntax (tests/cp/test_runtimeconfig.py), kubectl (tests/kubectl/test_served_versions.py).
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from api import server as servers
from cp import resources, runtimeconfig

V1 = "/apis/resource.k8s.io/v1"
V1BETA2 = "/apis/resource.k8s.io/v1beta2"
CLAIM_WARNING = '299 - "resource.k8s.io/v1beta2 ResourceClaim is deprecated in v1.36+, unavailable in v1.39+"'


def config(text: str) -> runtimeconfig.RuntimeConfig:
    return runtimeconfig.parse(text, group_versions=resources.builtin_group_versions())


@pytest.fixture
def runtime() -> str:
    return "resource.k8s.io/v1beta2=true"


@pytest.fixture
async def http(tmp_path: Path, runtime: str) -> AsyncIterator[aiohttp.ClientSession]:
    options = {"runtime_config": config(runtime)} if runtime else {}
    async with servers.running(data_dir=tmp_path / "data", db_url="memory:", app_options=options) as srv, \
            aiohttp.ClientSession(base_url=srv.url) as session:
        yield session


async def call(http: aiohttp.ClientSession, method: str, path: str, body: Any = None,
               **headers: str) -> tuple[int, Any, list[str]]:
    data = None if body is None else json.dumps(body)
    async with http.request(method, path, data=data, headers={"Content-Type": "application/json", **headers}) as r:
        return r.status, json.loads(await r.read()), r.headers.getall("Warning", [])


# Objects with every field of their kind that a client writes (v1 and v1beta2 have one shape).
DEVICE_CLASS = {"kind": "DeviceClass", "metadata": {"name": "gpu.example.com", "labels": {"a": "b"}},
                "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}],
                         "config": [{"opaque": {"driver": "gpu.example.com", "parameters": {"sharing": "time"}}}],
                         "extendedResourceName": "example.com/gpu"}}
CLAIM = {"kind": "ResourceClaim", "metadata": {"name": "claim", "namespace": "default"},
         "spec": {"devices": {
             "requests": [
                 {"name": "gpu", "exactly": {
                     "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 2,
                     "selectors": [{"cel": {"expression": 'device.attributes["gpu.example.com"].model == "a100"'}}],
                     "tolerations": [{"key": "example.com/unhealthy", "operator": "Equal", "value": "true",
                                      "effect": "NoSchedule"},
                                     {"key": "example.com/gone", "operator": "Exists", "effect": "NoExecute",
                                      "tolerationSeconds": 30}],
                     "capacity": {"requests": {"memory": "8Gi"}}}},
                 {"name": "nic", "firstAvailable": [
                     {"name": "fast", "deviceClassName": "gpu.example.com", "allocationMode": "All"},
                     {"name": "slow", "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount",
                      "count": 1, "selectors": [{"cel": {"expression": "true"}}]}]}],
             "constraints": [{"requests": ["gpu", "nic"], "matchAttribute": "gpu.example.com/numa"},
                             {"distinctAttribute": "gpu.example.com/index"}],
             "config": [{"requests": ["gpu"], "opaque": {"driver": "gpu.example.com", "parameters": {"a": 1}}}]}}}
TEMPLATE = {"kind": "ResourceClaimTemplate", "metadata": {"name": "tpl", "namespace": "default"},
            "spec": {"metadata": {"labels": {"app": "web"}}, "spec": copy.deepcopy(CLAIM["spec"])}}
SLICE = {"kind": "ResourceSlice", "metadata": {"name": "node-0-gpu"},
         "spec": {"driver": "gpu.example.com", "nodeName": "node-0",
                  "pool": {"name": "node-0", "generation": 1, "resourceSliceCount": 1},
                  "devices": [{"name": "gpu-0",
                               "attributes": {"model": {"string": "a100"}, "index": {"int": 0},
                                              "healthy": {"bool": True}, "driverVersion": {"version": "1.2.3"}},
                               "capacity": {"memory": {"value": "40Gi", "requestPolicy": {
                                   "default": "8Gi", "validRange": {"min": "1Gi", "max": "40Gi", "step": "1Gi"}}}},
                               "taints": [{"key": "example.com/unhealthy", "value": "true", "effect": "NoSchedule",
                                           "timeAdded": "2026-01-01T00:00:00Z"}],
                               "allowMultipleAllocations": True}]}}
RULE = {"kind": "DeviceTaintRule", "metadata": {"name": "rule"},
        "spec": {"deviceSelector": {"driver": "gpu.example.com", "pool": "node-0", "device": "gpu-0"},
                 "taint": {"key": "example.com/maintenance", "value": "planned", "effect": "NoExecute",
                           "timeAdded": "2026-01-01T00:00:00Z"}}}
OBJECTS = [("deviceclasses", DEVICE_CLASS, False), ("resourceclaims", CLAIM, True),
           ("resourceclaimtemplates", TEMPLATE, True), ("resourceslices", SLICE, False),
           ("devicetaintrules", RULE, False)]


def _path(base: str, plural: str, namespaced: bool) -> str:
    return f"{base}/namespaces/default/{plural}" if namespaced else f"{base}/{plural}"


def _comparable(obj: dict[str, Any]) -> dict[str, Any]:
    """An answer without what differs by version or write: apiVersion and managedFields."""
    out = copy.deepcopy(obj)
    out.pop("apiVersion")
    out["metadata"].pop("managedFields", None)
    return out


@pytest.mark.parametrize(("plural", "obj", "namespaced"), OBJECTS, ids=[p for p, _o, _n in OBJECTS])
@pytest.mark.parametrize("written", ["v1", "v1beta2"])
async def test_every_kind_written_in_one_version_reads_the_same_in_the_other(
        http: aiohttp.ClientSession, plural: str, obj: dict[str, Any], namespaced: bool, written: str) -> None:
    read = "v1beta2" if written == "v1" else "v1"
    body = {**copy.deepcopy(obj), "apiVersion": f"resource.k8s.io/{written}"}
    status, created, _ = await call(http, "POST", _path(f"/apis/resource.k8s.io/{written}", plural, namespaced), body)
    assert status == 201, created
    assert created["apiVersion"] == f"resource.k8s.io/{written}"
    for key, value in obj["spec"].items():  # every field as written (defaults may add more)
        assert created["spec"][key] == value or _contains(created["spec"][key], value), key
    name = obj["metadata"]["name"]
    status, other, _ = await call(http, "GET", f"{_path(f'/apis/resource.k8s.io/{read}', plural, namespaced)}/{name}")
    assert status == 200
    assert other["apiVersion"] == f"resource.k8s.io/{read}" and other["kind"] == obj["kind"]
    assert _comparable(other) == _comparable(created)
    # and back: the other version's object written as it was read changes nothing (round trip)
    status, again, _ = await call(http, "PUT", f"{_path(f'/apis/resource.k8s.io/{read}', plural, namespaced)}/{name}",
                                  other)
    assert status == 200, again
    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


def _contains(got: Any, want: Any) -> bool:
    """`want` is in `got` (what defaulting adds aside)."""
    if isinstance(want, dict):
        return isinstance(got, dict) and all(k in got and _contains(got[k], v) for k, v in want.items())
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(map(_contains, got, want))
    return bool(got == want)


async def test_defaults_and_go_zero_fields_in_v1beta2(http: aiohttp.ClientSession) -> None:
    claim = {"apiVersion": "resource.k8s.io/v1beta2", "kind": "ResourceClaim", "metadata": {"name": "c"},
             "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}
    status, created, warnings = await call(http, "POST", f"{V1BETA2}/namespaces/default/resourceclaims", claim)
    assert status == 201, created
    assert created["spec"]["devices"]["requests"][0]["exactly"] == {
        "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1}
    assert warnings == [CLAIM_WARNING]


async def test_list_and_watch_in_v1beta2(http: aiohttp.ClientSession) -> None:
    path = f"{V1BETA2}/namespaces/default/resourceclaims"
    status, listed, warnings = await call(http, "GET", path)
    assert (status, listed["kind"], listed["apiVersion"]) == (200, "ResourceClaimList", "resource.k8s.io/v1beta2")
    assert warnings == [CLAIM_WARNING]
    params = {"watch": "1", "resourceVersion": listed["metadata"]["resourceVersion"], "timeoutSeconds": "5"}
    async with http.get(path, params=params) as w:
        assert w.headers.getall("Warning", []) == [CLAIM_WARNING]
        body = {**copy.deepcopy(CLAIM), "apiVersion": "resource.k8s.io/v1"}
        status, _, warnings = await call(http, "POST", f"{V1}/namespaces/default/resourceclaims", body)
        assert status == 201 and warnings == []  # v1 is not deprecated
        event = json.loads(await asyncio.wait_for(w.content.readline(), 5))
    assert event["type"] == "ADDED"
    assert event["object"]["apiVersion"] == "resource.k8s.io/v1beta2"
    assert event["object"]["spec"] == CLAIM["spec"]
    status, listed, _ = await call(http, "GET", path)
    assert [i["metadata"]["name"] for i in listed["items"]] == ["claim"]
    assert listed["items"][0]["apiVersion"] == "resource.k8s.io/v1beta2"


async def test_warning_on_every_request_of_a_deprecated_kind(http: aiohttp.ClientSession) -> None:
    status, _, warnings = await call(http, "GET", f"{V1BETA2}/namespaces/default/resourceclaims/missing")
    assert (status, warnings) == (404, [CLAIM_WARNING])
    status, _, warnings = await call(http, "GET", f"{V1BETA2}/deviceclasses")
    assert warnings == ['299 - "resource.k8s.io/v1beta2 DeviceClass is deprecated in v1.36+, unavailable in v1.39+"']
    status, _, warnings = await call(http, "GET", f"{V1BETA2}/devicetaintrules")  # deprecated in 1.39 only
    assert (status, warnings) == (200, [])
    status, _, warnings = await call(http, "GET", f"{V1BETA2}")  # discovery is no request of a kind
    assert (status, warnings) == (200, [])


async def test_patch_through_v1beta2(http: aiohttp.ClientSession) -> None:
    body = {**copy.deepcopy(RULE), "apiVersion": "resource.k8s.io/v1beta2"}
    status, _, _ = await call(http, "POST", f"{V1BETA2}/devicetaintrules", body)
    assert status == 201
    async with http.patch(f"{V1BETA2}/devicetaintrules/rule", data=json.dumps({"spec": {"taint": {"value": "now"}}}),
                          headers={"Content-Type": "application/merge-patch+json"}) as r:
        assert r.status == 200
        patched = json.loads(await r.read())
    assert patched["apiVersion"] == "resource.k8s.io/v1beta2" and patched["spec"]["taint"]["value"] == "now"
    status, v1, _ = await call(http, "GET", f"{V1}/devicetaintrules/rule")
    assert v1["spec"]["taint"]["value"] == "now"


async def test_discovery_and_openapi_serve_v1beta2(http: aiohttp.ClientSession) -> None:
    status, group, _ = await call(http, "GET", "/apis/resource.k8s.io")
    assert [v["version"] for v in group["versions"]] == ["v1", "v1beta2"]
    assert group["preferredVersion"]["version"] == "v1"
    status, listing, _ = await call(http, "GET", V1BETA2)
    assert [r["name"] for r in listing["resources"]] == [
        "deviceclasses", "devicetaintrules", "devicetaintrules/status", "resourceclaims", "resourceclaims/status",
        "resourceclaimtemplates", "resourceslices"]
    status, aggregated, _ = await call(
        http, "GET", "/apis", Accept="application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
    (entry,) = [g for g in aggregated["items"] if g["metadata"]["name"] == "resource.k8s.io"]
    assert [v["version"] for v in entry["versions"]] == ["v1", "v1beta2"]
    status, index, _ = await call(http, "GET", "/openapi/v3")
    assert "apis/resource.k8s.io/v1beta2" in index["paths"]
    status, doc, _ = await call(http, "GET", "/openapi/v3/apis/resource.k8s.io/v1beta2")
    assert status == 200
    assert "/apis/resource.k8s.io/v1beta2/namespaces/{namespace}/resourceclaims" in doc["paths"]
    assert "io.k8s.api.resource.v1beta2.ResourceClaim" in doc["components"]["schemas"]
    status, v2, _ = await call(http, "GET", "/openapi/v2")
    assert "/apis/resource.k8s.io/v1beta2/namespaces/{namespace}/resourceclaims" in v2["paths"]
    assert "io.k8s.api.resource.v1beta2.ResourceClaim" in v2["definitions"]


@pytest.mark.parametrize("runtime", [""])
async def test_off_by_default(http: aiohttp.ClientSession) -> None:
    status, body, _ = await call(http, "GET", f"{V1BETA2}/namespaces/default/resourceclaims")
    assert (status, body["reason"]) == (404, "NotFound")
    status, _, _ = await call(http, "GET", V1BETA2)
    assert status == 404
    status, group, _ = await call(http, "GET", "/apis/resource.k8s.io")
    assert [v["version"] for v in group["versions"]] == ["v1"]
    status, index, _ = await call(http, "GET", "/openapi/v3")
    assert "apis/resource.k8s.io/v1beta2" not in index["paths"]
    status, _, _ = await call(http, "GET", "/openapi/v3/apis/resource.k8s.io/v1beta2")
    assert status == 404
    status, v2, _ = await call(http, "GET", "/openapi/v2")
    assert not any(p.startswith(V1BETA2) for p in v2["paths"])


@pytest.mark.parametrize("runtime", ["autoscaling/v1=false"])
async def test_a_default_version_switched_off(http: aiohttp.ClientSession) -> None:
    status, _, _ = await call(http, "GET", "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers")
    assert status == 404
    status, group, _ = await call(http, "GET", "/apis/autoscaling")
    assert [v["version"] for v in group["versions"]] == ["v2"]
    status, _, _ = await call(http, "GET", "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers")
    assert status == 200
    status, index, _ = await call(http, "GET", "/openapi/v3")
    assert "apis/autoscaling/v1" not in index["paths"] and "apis/autoscaling/v2" in index["paths"]
    status, _, _ = await call(http, "GET", "/openapi/v3/apis/autoscaling/v1")
    assert status == 404
    status, v2, _ = await call(http, "GET", "/openapi/v2")
    assert not any(p.startswith("/apis/autoscaling/v1/") for p in v2["paths"])
    assert any(p.startswith("/apis/autoscaling/v2/") for p in v2["paths"])
    status, _, _ = await call(http, "GET", V1BETA2)
    assert status == 404


# ------------------------------------------------------------------------------ resource.k8s.io/v1beta1

V1BETA1 = "/apis/resource.k8s.io/v1beta1"


def _to_v1beta1(obj: dict[str, Any]) -> dict[str, Any]:
    """One of the objects above as a v1beta1 client writes it: flat requests, `basic` devices."""
    out = copy.deepcopy(obj)
    spec = out["spec"]
    claim_spec = spec["spec"] if obj["kind"] == "ResourceClaimTemplate" else spec
    if obj["kind"] in ("ResourceClaim", "ResourceClaimTemplate"):
        claim_spec["devices"]["requests"] = [
            {"name": r["name"], **r["exactly"]} if "exactly" in r else r for r in claim_spec["devices"]["requests"]]
    if obj["kind"] == "ResourceSlice":
        spec["devices"] = [{"name": d["name"], "basic": {k: v for k, v in d.items() if k != "name"}}
                           for d in spec["devices"]]
    return out


BETA1_OBJECTS = [o for o in OBJECTS if o[0] != "devicetaintrules"]


@pytest.mark.parametrize("runtime", ["api/beta=true"])
@pytest.mark.parametrize(("plural", "obj", "namespaced"), BETA1_OBJECTS, ids=[p for p, _o, _n in BETA1_OBJECTS])
async def test_every_kind_written_in_v1beta1_reads_in_v1_and_v1beta2(
        http: aiohttp.ClientSession, plural: str, obj: dict[str, Any], namespaced: bool) -> None:
    beta1 = {**_to_v1beta1(obj), "apiVersion": "resource.k8s.io/v1beta1"}
    status, created, warnings = await call(http, "POST", _path(V1BETA1, plural, namespaced), beta1)
    assert status == 201, created
    assert warnings == [f'299 - "resource.k8s.io/v1beta1 {obj["kind"]} is deprecated in v1.35+, '
                        'unavailable in v1.38+"']
    assert _contains(created["spec"], beta1["spec"])
    name = obj["metadata"]["name"]
    for version in ("v1", "v1beta2"):
        status, other, _ = await call(http, "GET", f"{_path(f'/apis/resource.k8s.io/{version}', plural, namespaced)}/{name}")
        assert status == 200 and other["apiVersion"] == f"resource.k8s.io/{version}"
        assert _contains(other["spec"], obj["spec"]), version  # the v1 shape, field by field
    # v1's object written back through v1beta1 as read there changes nothing
    status, again, _ = await call(http, "PUT", f"{_path(V1BETA1, plural, namespaced)}/{name}", created)
    assert status == 200, again
    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert _comparable(again) == _comparable(created)


@pytest.mark.parametrize("runtime", ["resource.k8s.io/v1beta1=true"])
@pytest.mark.parametrize(("plural", "obj", "namespaced"), BETA1_OBJECTS, ids=[p for p, _o, _n in BETA1_OBJECTS])
async def test_every_kind_written_in_v1_reads_flat_in_v1beta1(
        http: aiohttp.ClientSession, plural: str, obj: dict[str, Any], namespaced: bool) -> None:
    status, created, _ = await call(http, "POST", _path(V1, plural, namespaced),
                                    {**copy.deepcopy(obj), "apiVersion": "resource.k8s.io/v1"})
    assert status == 201, created
    name = obj["metadata"]["name"]
    status, beta1, _ = await call(http, "GET", f"{_path(V1BETA1, plural, namespaced)}/{name}")
    assert status == 200 and beta1["apiVersion"] == "resource.k8s.io/v1beta1"
    assert _contains(beta1["spec"], _to_v1beta1(obj)["spec"])
    if plural == "resourceclaims":  # the request with alternatives: Go writes its empty deviceClassName
        assert beta1["spec"]["devices"]["requests"][1]["deviceClassName"] == ""
        assert "exactly" not in beta1["spec"]["devices"]["requests"][0]
    if plural == "resourceslices":
        assert "attributes" not in beta1["spec"]["devices"][0]


@pytest.mark.parametrize("runtime", ["resource.k8s.io/v1beta1=true"])
async def test_v1beta1_discovery_and_watch(http: aiohttp.ClientSession) -> None:
    status, group, _ = await call(http, "GET", "/apis/resource.k8s.io")
    assert [v["version"] for v in group["versions"]] == ["v1", "v1beta1"]
    assert group["preferredVersion"]["version"] == "v1"
    status, listing, _ = await call(http, "GET", V1BETA1)
    assert [r["name"] for r in listing["resources"]] == [
        "deviceclasses", "resourceclaims", "resourceclaims/status", "resourceclaimtemplates", "resourceslices"]
    status, _, _ = await call(http, "GET", f"{V1BETA1}/devicetaintrules")
    assert status == 404  # not a kind of v1beta1
    status, listed, _ = await call(http, "GET", f"{V1BETA1}/resourceslices")
    params = {"watch": "1", "resourceVersion": listed["metadata"]["resourceVersion"], "timeoutSeconds": "5"}
    async with http.get(f"{V1BETA1}/resourceslices", params=params) as w:
        status, _, _ = await call(http, "POST", f"{V1}/resourceslices", {**copy.deepcopy(SLICE),
                                                                         "apiVersion": "resource.k8s.io/v1"})
        assert status == 201
        event = json.loads(await asyncio.wait_for(w.content.readline(), 5))
    assert event["object"]["apiVersion"] == "resource.k8s.io/v1beta1"
    assert event["object"]["spec"]["devices"][0]["basic"]["attributes"]["model"] == {"string": "a100"}
    status, index, _ = await call(http, "GET", "/openapi/v3")
    assert "apis/resource.k8s.io/v1beta1" in index["paths"] and "apis/resource.k8s.io/v1beta2" not in index["paths"]


@pytest.mark.parametrize("runtime", ["api/beta=true"])
async def test_field_selectors_tables_and_protobuf_per_version(http: aiohttp.ClientSession) -> None:
    status, _, _ = await call(http, "POST", f"{V1}/resourceslices", {**copy.deepcopy(SLICE),
                                                                     "apiVersion": "resource.k8s.io/v1"})
    assert status == 201
    for version in ("v1beta1", "v1beta2"):
        base = f"/apis/resource.k8s.io/{version}/resourceslices"
        status, listed, _ = await call(http, "GET", f"{base}?fieldSelector=spec.nodeName=node-0,spec.driver=gpu.example.com")
        assert [i["metadata"]["name"] for i in listed["items"]] == ["node-0-gpu"]
        status, listed, _ = await call(http, "GET", f"{base}?fieldSelector=spec.nodeName=node-1")
        assert listed["items"] == []
        status, body, _ = await call(http, "GET", f"{base}?fieldSelector=spec.bogus=x")
        assert (status, body["message"]) == (
            400, f"field label not supported for resource.k8s.io/{version}, Kind=ResourceSlice: spec.bogus")
        status, table, _ = await call(http, "GET", base, Accept="application/json;as=Table;v=v1;g=meta.k8s.io")
        assert table["kind"] == "Table" and table["rows"][0]["cells"][:3] == ["node-0-gpu", "node-0", "gpu.example.com"]
        async with http.get(base, headers={"Accept": "application/vnd.kubernetes.protobuf"}) as r:
            body_bytes = await r.read()
        assert body_bytes.startswith(b"k8s\x00") and f"resource.k8s.io/{version}".encode() in body_bytes[:40]


@pytest.mark.parametrize("runtime", ["api/all=true"])
async def test_v1alpha3_device_taint_rule(http: aiohttp.ClientSession) -> None:
    body = {**copy.deepcopy(RULE), "apiVersion": "resource.k8s.io/v1alpha3"}
    status, created, warnings = await call(http, "POST", "/apis/resource.k8s.io/v1alpha3/devicetaintrules", body)
    assert status == 201, created
    assert warnings == ['299 - "resource.k8s.io/v1alpha3 DeviceTaintRule is deprecated in v1.36+, '
                        'unavailable in v1.39+"']
    assert created["spec"] == RULE["spec"]
    for version in ("v1", "v1beta2"):
        status, other, _ = await call(http, "GET", f"/apis/resource.k8s.io/{version}/devicetaintrules/rule")
        assert _comparable(other) == _comparable(created)
    status, group, _ = await call(http, "GET", "/apis/resource.k8s.io")
    assert [v["version"] for v in group["versions"]] == ["v1", "v1beta2", "v1beta1", "v1alpha3"]
    assert group["preferredVersion"]["version"] == "v1"
    status, _, _ = await call(http, "GET", "/apis/resource.k8s.io/v1alpha3/resourceclaims")
    assert status == 404


@pytest.mark.parametrize("runtime", ["api/beta=true"])
async def test_bodies_are_decoded_as_their_own_version(http: aiohttp.ClientSession) -> None:
    """An unknown field of v1beta1 (v1's `exactly`) is a warning and dropped, not converted; a wrong
    type is v1beta1's 400."""
    claim = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim", "metadata": {"name": "c"},
             "spec": {"devices": {"requests": [{"name": "r", "deviceClassName": "gpu.example.com",
                                                "exactly": {"deviceClassName": "other"}}]}}}
    status, created, warnings = await call(http, "POST", f"{V1BETA1}/namespaces/default/resourceclaims", claim)
    assert status == 201, created
    assert '299 - "unknown field \\"spec.devices.requests[0].exactly\\""' in warnings
    status, v1, _ = await call(http, "GET", f"{V1}/namespaces/default/resourceclaims/c")
    assert v1["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == "gpu.example.com"
    async with http.post(f"{V1BETA1}/namespaces/default/resourceclaims?fieldValidation=Strict", json={
            **claim, "metadata": {"name": "d"}}) as r:
        assert r.status == 400
    slice_ = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceSlice", "metadata": {"name": "s"},
              "spec": {"driver": "d", "pool": {"name": "p", "resourceSliceCount": 1}, "nodeName": "n",
                       "devices": [{"name": "a", "basic": 1}]}}
    status, body, _ = await call(http, "POST", f"{V1BETA1}/resourceslices", slice_)
    assert status == 400
    assert body["message"].startswith('ResourceSlice in version "v1beta1" cannot be handled as a ResourceSlice')


@pytest.mark.parametrize("runtime", ["api/beta=true"])
async def test_a_patch_through_v1beta1_is_decoded_as_v1beta1(http: aiohttp.ClientSession) -> None:
    body = {**_to_v1beta1(SLICE), "apiVersion": "resource.k8s.io/v1beta1"}
    status, _, _ = await call(http, "POST", f"{V1BETA1}/resourceslices", body)
    assert status == 201
    patch = {"spec": {"devices": [{"name": "gpu-0", "basic": {"attributes": {"model": {"string": "h100"}}},
                                   "attributes": {"x": {"int": 1}}}]}}
    async with http.patch(f"{V1BETA1}/resourceslices/node-0-gpu", data=json.dumps(patch),
                          headers={"Content-Type": "application/merge-patch+json"}) as r:
        assert r.status == 200, await r.text()
        assert '299 - "unknown field \\"spec.devices[0].attributes\\""' in r.headers.getall("Warning", [])
    status, v1, _ = await call(http, "GET", f"{V1}/resourceslices/node-0-gpu")
    assert v1["spec"]["devices"] == [{"name": "gpu-0", "attributes": {"model": {"string": "h100"}}}]


@pytest.mark.parametrize("runtime", ["resource.k8s.io/v1beta1=true"])
async def test_a_v1beta1_claim_in_protobuf_as_client_go_sends_it(http: aiohttp.ClientSession) -> None:
    from cp import protobuf

    claim = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim", "metadata": {"name": "pb"},
             "spec": {"devices": {"requests": [{"name": "gpu", "deviceClassName": "gpu.example.com", "count": 2}]}}}
    body = protobuf.encode(claim, api_version="resource.k8s.io/v1beta1", kind="ResourceClaim")
    async with http.post(f"{V1BETA1}/namespaces/default/resourceclaims", data=body, headers={
            "Content-Type": "application/vnd.kubernetes.protobuf",
            "Accept": "application/vnd.kubernetes.protobuf,application/json"}) as r:
        assert r.status == 201, await r.read()
        assert r.headers["Content-Type"] == "application/vnd.kubernetes.protobuf"
        created = protobuf.decode(await r.read())
    assert created["apiVersion"] == "resource.k8s.io/v1beta1"
    assert created["spec"]["devices"]["requests"] == [
        {"name": "gpu", "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 2}]
    _, v1, _ = await call(http, "GET", f"{V1}/namespaces/default/resourceclaims/pb")
    assert v1["spec"]["devices"]["requests"] == [{"name": "gpu", "exactly": {
        "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 2}}]
