"""The other non-default built-in versions a 1.37 kube-apiserver has compiled in, beyond resource.k8s.io's
(tests/api/test_runtime_config.py): admissionregistration.k8s.io v1beta1 and v1alpha1
MutatingAdmissionPolicy(Binding), certificates.k8s.io/v1beta1 ClusterTrustBundle and
PodCertificateRequest, storagemigration.k8s.io/v1beta1 StorageVersionMigration and scheduling.k8s.io/v1alpha3
Workload and PodGroup (with GenericWorkload). Each is off by default (404), switched on by its
`--runtime-config` key or by `api/beta` / `api/alpha` as its name says, served from the stored version's
objects (a write through either reads the same through both, and a PUT back of what was read is a
no-op), and carries upstream's deprecation warning.

Out of scope: the flag's syntax (tests/cp/test_runtimeconfig.py), the conversions alone
(tests/cp/test_conversions.py)."""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from api import server as servers
from cp import features, protobuf, resources, runtimeconfig
from tests.api import test_builtin_manifests as builtin

GATES = features.FeatureGates({features.GENERIC_WORKLOAD: True})
ADMISSION = "admissionregistration.k8s.io"
CERTIFICATES = "certificates.k8s.io"
MIGRATION = "storagemigration.k8s.io"
SCHEDULING = "scheduling.k8s.io"


def config(text: str) -> runtimeconfig.RuntimeConfig:
    return runtimeconfig.parse(text, group_versions=resources.builtin_group_versions())


def _samples() -> dict[tuple[str, str], dict[str, Any]]:
    out = {(obj["apiVersion"].rpartition("/")[0], path.rsplit("/", 1)[1]): obj for path, obj in builtin.manifests()}
    out[(SCHEDULING, "podgroups")] = {
        "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "g"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}
    out[(SCHEDULING, "workloads")] = {
        "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": "w"},
        "spec": {"podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 4}}}]}}
    return out


SAMPLES = _samples()
# (group, version, plural, stored version, namespaced) of every version added here.
VERSIONS = [
    (ADMISSION, "v1beta1", "mutatingadmissionpolicies", "v1", False),
    (ADMISSION, "v1beta1", "mutatingadmissionpolicybindings", "v1", False),
    (ADMISSION, "v1alpha1", "mutatingadmissionpolicies", "v1", False),
    (ADMISSION, "v1alpha1", "mutatingadmissionpolicybindings", "v1", False),
    (CERTIFICATES, "v1beta1", "clustertrustbundles", "v1", False),
    (CERTIFICATES, "v1beta1", "podcertificaterequests", "v1", True),
    (MIGRATION, "v1beta1", "storageversionmigrations", "v1", False),
    (SCHEDULING, "v1alpha3", "podgroups", "v1beta1", True),
    (SCHEDULING, "v1alpha3", "workloads", "v1beta1", True),
]
IDS = [f"{g.split('.')[0]}-{v}-{p}" for g, v, p, _s, _n in VERSIONS]


async def _server(tmp_path: Path, runtime: str, gates: features.FeatureGates | None = GATES
                  ) -> AsyncIterator[aiohttp.ClientSession]:
    options: dict[str, Any] = {"feature_gates": gates} if gates is not None else {}
    if runtime:
        options["runtime_config"] = config(runtime)
    async with servers.running(data_dir=tmp_path / "data", db_url="memory:", app_options=options) as srv, \
            aiohttp.ClientSession(base_url=srv.url) as session:
        yield session


@pytest.fixture
async def http(tmp_path: Path) -> AsyncIterator[aiohttp.ClientSession]:
    async for session in _server(tmp_path, "api/all=true"):
        yield session


async def call(http: aiohttp.ClientSession, method: str, path: str, body: Any = None,
               **headers: str) -> tuple[int, Any, list[str]]:
    data = None if body is None else json.dumps(body)
    async with http.request(method, path, data=data, headers={"Content-Type": "application/json", **headers}) as r:
        return r.status, json.loads(await r.read()), r.headers.getall("Warning", [])


def _path(group: str, version: str, plural: str, namespaced: bool) -> str:
    base = f"/apis/{group}/{version}"
    return f"{base}/namespaces/default/{plural}" if namespaced else f"{base}/{plural}"


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _comparable(obj: dict[str, Any]) -> dict[str, Any]:
    """An answer without what differs by version or write: apiVersion, managedFields, and the `null`s Go
    writes for unset fields without `omitempty` (an answer in the stored version is the stored JSON; one
    in another version is written as Go writes that type: v1alpha3's `schedulingConstraints: null`,
    v1beta1's `pkixPublicKey: null`, which v1 does not have)."""
    out = _without_nulls(obj)
    out.pop("apiVersion")
    out["metadata"].pop("managedFields", None)
    return dict(out)


def _contains(got: Any, want: Any) -> bool:
    if isinstance(want, dict):
        return isinstance(got, dict) and all(k in got and _contains(got[k], v) for k, v in want.items())
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(map(_contains, got, want))
    return bool(got == want)


async def _prepare(http: aiohttp.ClientSession, group: str, plural: str) -> None:
    """What a sample needs first: a binding's policy."""
    if plural == "mutatingadmissionpolicybindings":
        status, out, _ = await call(http, "POST", f"/apis/{ADMISSION}/v1/mutatingadmissionpolicies",
                                    SAMPLES[(ADMISSION, "mutatingadmissionpolicies")])
        assert status == 201, out


@pytest.mark.parametrize(("group", "version", "plural", "stored", "namespaced"), VERSIONS, ids=IDS)
@pytest.mark.parametrize("written", ["optional", "stored"])
async def test_written_in_one_version_reads_the_same_in_the_other(
        http: aiohttp.ClientSession, group: str, version: str, plural: str, stored: str, namespaced: bool,
        written: str) -> None:
    await _prepare(http, group, plural)
    sample = SAMPLES[(group, plural)]
    write, read = (version, stored) if written == "optional" else (stored, version)
    body = {**copy.deepcopy(sample), "apiVersion": f"{group}/{write}"}
    status, created, _ = await call(http, "POST", _path(group, write, plural, namespaced), body)
    assert status == 201, created
    assert created["apiVersion"] == f"{group}/{write}" and created["kind"] == sample["kind"]
    for key in ("spec", "webhooks"):
        if key in sample:  # every field as written (defaults may add more)
            assert _contains(created[key], sample[key]), key
    name = sample["metadata"]["name"]
    status, other, _ = await call(http, "GET", f"{_path(group, read, plural, namespaced)}/{name}")
    assert status == 200
    assert other["apiVersion"] == f"{group}/{read}" and other["kind"] == sample["kind"]
    assert _comparable(other) == _comparable(created)
    status, again, _ = await call(http, "PUT", f"{_path(group, read, plural, namespaced)}/{name}", other)
    assert status == 200, again
    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]  # a no-op
    status, listed, _ = await call(http, "GET", _path(group, version, plural, namespaced))
    assert listed["apiVersion"] == f"{group}/{version}" and listed["kind"] == f"{sample['kind']}List"
    assert [(i["apiVersion"], i["metadata"]["name"]) for i in listed["items"]] == [(f"{group}/{version}", name)]


@pytest.mark.parametrize("runtime", ["", "api/ga=true", f"{ADMISSION}/v1=true"])
async def test_not_served_by_default(tmp_path: Path, runtime: str) -> None:
    async for http in _server(tmp_path, runtime):
        for group, version, plural, _stored, namespaced in VERSIONS:
            status, out, _ = await call(http, "GET", _path(group, version, plural, namespaced))
            assert status == 404, (group, version, plural)
            assert out["kind"] == "Status"
        status, group_doc, _ = await call(http, "GET", f"/apis/{ADMISSION}")
        assert [v["version"] for v in group_doc["versions"]] == ["v1"]


async def test_beta_and_alpha_as_their_names_say(tmp_path: Path) -> None:
    async for http in _server(tmp_path, "api/beta=true"):
        for group, version, plural, _stored, namespaced in VERSIONS:
            status, _, _ = await call(http, "GET", _path(group, version, plural, namespaced))
            assert status == (200 if "beta" in version else 404), (group, version, plural)
    async for http in _server(tmp_path, "api/alpha=true"):
        for group, version, plural, _stored, namespaced in VERSIONS:
            status, _, _ = await call(http, "GET", _path(group, version, plural, namespaced))
            assert status == (200 if "alpha" in version else 404), (group, version, plural)


async def test_one_version_or_one_resource(tmp_path: Path) -> None:
    async for http in _server(tmp_path, f"{CERTIFICATES}/v1beta1=true,{ADMISSION}/v1alpha1/mutatingadmissionpolicies"):
        assert (await call(http, "GET", f"/apis/{CERTIFICATES}/v1beta1/clustertrustbundles"))[0] == 200
        assert (await call(http, "GET", f"/apis/{CERTIFICATES}/v1beta1/podcertificaterequests"))[0] == 200
        assert (await call(http, "GET", f"/apis/{ADMISSION}/v1alpha1/mutatingadmissionpolicies"))[0] == 200
        assert (await call(http, "GET", f"/apis/{ADMISSION}/v1alpha1/mutatingadmissionpolicybindings"))[0] == 404
        assert (await call(http, "GET", f"/apis/{ADMISSION}/v1beta1/mutatingadmissionpolicies"))[0] == 404
        assert (await call(http, "GET", f"/apis/{MIGRATION}/v1beta1/storageversionmigrations"))[0] == 404


async def test_scheduling_v1alpha3_also_needs_generic_workload(tmp_path: Path) -> None:
    async for http in _server(tmp_path, f"{SCHEDULING}/v1alpha3=true", gates=None):
        status, _, _ = await call(http, "GET", f"/apis/{SCHEDULING}/v1alpha3/namespaces/default/workloads")
        assert status == 404
        status, group_doc, _ = await call(http, "GET", f"/apis/{SCHEDULING}")
        assert [v["version"] for v in group_doc["versions"]] == ["v1"]


async def test_deprecation_warnings(http: aiohttp.ClientSession) -> None:
    expected = {
        f"/apis/{ADMISSION}/v1beta1/mutatingadmissionpolicies":
            f"{ADMISSION}/v1beta1 MutatingAdmissionPolicy is deprecated in v1.37+, unavailable in v1.40+; "
            f"use {ADMISSION}/v1 MutatingAdmissionPolicy",
        f"/apis/{ADMISSION}/v1beta1/mutatingadmissionpolicybindings":
            f"{ADMISSION}/v1beta1 MutatingAdmissionPolicyBinding is deprecated in v1.37+, unavailable in v1.40+; "
            f"use {ADMISSION}/v1 MutatingAdmissionPolicyBinding",
        f"/apis/{ADMISSION}/v1alpha1/mutatingadmissionpolicies":
            f"{ADMISSION}/v1alpha1 MutatingAdmissionPolicy is deprecated in v1.35+, unavailable in v1.38+",
        f"/apis/{ADMISSION}/v1alpha1/mutatingadmissionpolicybindings":
            f"{ADMISSION}/v1alpha1 MutatingAdmissionPolicyBinding is deprecated in v1.35+, unavailable in v1.38+",
        f"/apis/{CERTIFICATES}/v1beta1/clustertrustbundles":
            f"{CERTIFICATES}/v1beta1 ClusterTrustBundle is deprecated in v1.37+, unavailable in v1.40+; "
            f"use {CERTIFICATES}/v1 ClusterTrustBundle",
        f"/apis/{CERTIFICATES}/v1beta1/namespaces/default/podcertificaterequests/missing":
            f"{CERTIFICATES}/v1beta1 PodCertificateRequest is deprecated in v1.37+, unavailable in v1.40+; "
            f"use {CERTIFICATES}/v1 PodCertificateRequest",
        f"/apis/{MIGRATION}/v1beta1/storageversionmigrations":
            f"{MIGRATION}/v1beta1 StorageVersionMigration is deprecated in v1.37+, unavailable in v1.40+; "
            f"use {MIGRATION}/v1 StorageVersionMigration",
    }
    for path, text in expected.items():
        status, _, warnings = await call(http, "GET", path)
        assert status in (200, 404), path
        assert warnings == [f'299 - "{text}"'], path
    for path in (f"/apis/{SCHEDULING}/v1alpha3/namespaces/default/workloads",  # no prerelease lifecycle upstream
                 f"/apis/{ADMISSION}/v1/mutatingadmissionpolicies", f"/apis/{CERTIFICATES}/v1/clustertrustbundles"):
        status, _, warnings = await call(http, "GET", path)
        assert (status, warnings) == (200, []), path


async def test_pod_certificate_request_v1beta1_fields_v1_dropped(http: aiohttp.ClientSession) -> None:
    body = {**copy.deepcopy(SAMPLES[(CERTIFICATES, "podcertificaterequests")]),
            "apiVersion": f"{CERTIFICATES}/v1beta1"}
    body["spec"]["pkixPublicKey"] = "AAEC"
    body["spec"]["proofOfPossession"] = "AwQF"
    path = f"/apis/{CERTIFICATES}/v1beta1/namespaces/default/podcertificaterequests"
    status, created, _ = await call(http, "POST", path, body)
    assert status == 201, created
    # the stored v1 object has no place for them: v1beta1 reads them as Go writes an unset []byte
    assert created["spec"]["pkixPublicKey"] is None and created["spec"]["proofOfPossession"] is None
    assert created["spec"]["stubPKCS10Request"] == body["spec"]["stubPKCS10Request"]
    status, v1, _ = await call(http, "GET", f"/apis/{CERTIFICATES}/v1/namespaces/default/podcertificaterequests/"
                                            f"{body['metadata']['name']}")
    assert status == 200 and "pkixPublicKey" not in v1["spec"] and "proofOfPossession" not in v1["spec"]


async def test_status_subresource_through_v1beta1(http: aiohttp.ClientSession) -> None:
    body = {**copy.deepcopy(SAMPLES[(MIGRATION, "storageversionmigrations")]), "apiVersion": f"{MIGRATION}/v1beta1"}
    base = f"/apis/{MIGRATION}/v1beta1/storageversionmigrations"
    status, created, _ = await call(http, "POST", base, body)
    assert status == 201, created
    condition = {"type": "Running", "status": "True", "reason": "Started", "message": "m",
                 "lastTransitionTime": "2026-01-01T00:00:00Z"}
    async with http.patch(f"{base}/{body['metadata']['name']}/status",
                          data=json.dumps({"status": {"conditions": [condition]}}),
                          headers={"Content-Type": "application/merge-patch+json"}) as r:
        patched = json.loads(await r.read())
        assert r.status == 200, patched
    assert patched["apiVersion"] == f"{MIGRATION}/v1beta1"
    assert patched["status"]["conditions"][0]["reason"] == "Started"
    status, v1, _ = await call(http, "GET", f"/apis/{MIGRATION}/v1/storageversionmigrations/{body['metadata']['name']}")
    assert v1["status"]["conditions"][0]["reason"] == "Started"


async def test_protobuf_through_an_optional_version(http: aiohttp.ClientSession) -> None:
    sample = {**copy.deepcopy(SAMPLES[(CERTIFICATES, "clustertrustbundles")]), "apiVersion": f"{CERTIFICATES}/v1beta1"}
    body = protobuf.encode(sample, api_version=f"{CERTIFICATES}/v1beta1", kind="ClusterTrustBundle")
    async with http.post(f"/apis/{CERTIFICATES}/v1beta1/clustertrustbundles", data=body, headers={
            "Content-Type": "application/vnd.kubernetes.protobuf",
            "Accept": "application/vnd.kubernetes.protobuf,application/json"}) as r:
        assert r.status == 201
        assert r.headers["Content-Type"] == "application/vnd.kubernetes.protobuf"
        created = protobuf.decode(await r.read())
    assert created["apiVersion"] == f"{CERTIFICATES}/v1beta1" and created["spec"] == sample["spec"]


async def test_discovery_and_openapi(http: aiohttp.ClientSession) -> None:
    for group, versions in ((ADMISSION, ["v1", "v1beta1", "v1alpha1"]), (CERTIFICATES, ["v1", "v1beta1"]),
                            (MIGRATION, ["v1", "v1beta1"]), (SCHEDULING, ["v1", "v1beta1", "v1alpha3"])):
        status, doc, _ = await call(http, "GET", f"/apis/{group}")
        assert [v["version"] for v in doc["versions"]] == versions, group
        assert doc["preferredVersion"]["version"] == "v1"
    status, listing, _ = await call(http, "GET", f"/apis/{CERTIFICATES}/v1beta1")
    assert [(r["name"], r["kind"], r["namespaced"]) for r in listing["resources"]] == [
        ("clustertrustbundles", "ClusterTrustBundle", False),
        ("podcertificaterequests", "PodCertificateRequest", True),
        ("podcertificaterequests/status", "PodCertificateRequest", True)]
    status, index, _ = await call(http, "GET", "/openapi/v3")
    for path in (f"apis/{ADMISSION}/v1alpha1", f"apis/{ADMISSION}/v1beta1", f"apis/{CERTIFICATES}/v1beta1",
                 f"apis/{MIGRATION}/v1beta1", f"apis/{SCHEDULING}/v1alpha3"):
        assert path in index["paths"], path
    status, doc, _ = await call(http, "GET", f"/openapi/v3/apis/{ADMISSION}/v1beta1")
    assert status == 200
    assert "io.k8s.api.admissionregistration.v1beta1.MutatingAdmissionPolicy" in doc["components"]["schemas"]
    assert f"/apis/{ADMISSION}/v1beta1/mutatingadmissionpolicies" in doc["paths"]
    status, v2, _ = await call(http, "GET", "/openapi/v2")
    assert f"/apis/{CERTIFICATES}/v1beta1/namespaces/{{namespace}}/podcertificaterequests" in v2["paths"]
    assert "io.k8s.api.scheduling.v1alpha3.Workload" in v2["definitions"]


async def test_a_policy_written_through_v1alpha1_mutates(http: aiohttp.ClientSession) -> None:
    """A MutatingAdmissionPolicy and its binding written as the 1.32 guides write them (v1alpha1) are the
    stored v1 objects admission evaluates."""
    base = f"/apis/{ADMISSION}/v1alpha1"
    policy = {"apiVersion": f"{ADMISSION}/v1alpha1", "kind": "MutatingAdmissionPolicy", "metadata": {"name": "stamp"},
              "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                               "operations": ["CREATE"], "resources": ["configmaps"]}]},
                       "reinvocationPolicy": "Never",
                       "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {
                           "expression": "Object{metadata: Object.metadata{labels: {'stamped': 'yes'}}}"}}]}}
    binding = {"apiVersion": f"{ADMISSION}/v1alpha1", "kind": "MutatingAdmissionPolicyBinding",
               "metadata": {"name": "stamp"}, "spec": {"policyName": "stamp"}}
    for plural, body in (("mutatingadmissionpolicies", policy), ("mutatingadmissionpolicybindings", binding)):
        status, out, warnings = await call(http, "POST", f"{base}/{plural}", body)
        assert status == 201, out
        assert warnings and "v1alpha1" in warnings[0]
    status, v1, _ = await call(http, "GET", f"/apis/{ADMISSION}/v1/mutatingadmissionpolicies/stamp")
    assert v1["spec"]["failurePolicy"] == "Fail"  # defaulted as the stored version
    assert v1["spec"]["matchConstraints"]["matchPolicy"] == "Equivalent"
    status, cm, _ = await call(http, "POST", "/api/v1/namespaces/default/configmaps",
                               {"metadata": {"name": "c"}, "data": {"a": "b"}})
    assert status == 201 and cm["metadata"]["labels"] == {"stamped": "yes"}
