"""Field ownership across the versions of one resource, as kube-apiserver keeps it: each managedFields
entry carries the apiVersion its manager wrote with and owns fields by that version's paths
(autoscaling/v1's CPU target is `targetCPUUtilizationPercentage`, v2's a metric; events.k8s.io/v1's
message is `note`), for Apply and Update operations alike. (A ResourceClaim's requests and a
ResourceSlice's devices, where v1beta1's shape differs from v1's, are atomic lists in both versions:
owned whole, by one path.) Conflicts
and the removal of fields a manager stops applying compare every manager's fields in its own version
(structured-merge-diff's version converter), and managedFields read through any version are the
entries as recorded.

Out of scope: one-version ownership (test_ownership.py, test_apply.py), the conversions themselves
(tests/api/test_runtime_config.py, tests/api/test_served_versions.py).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from api import server as servers
from cp import fieldpath as fp
from cp import resources, runtimeconfig
from tests.api.ssa.support import APPLY, entries, owners

CLAIMS = "/apis/resource.k8s.io/{version}/namespaces/default/resourceclaims"
CLASSES = "/apis/resource.k8s.io/{version}/deviceclasses"
HPAS = "/apis/autoscaling/{version}/namespaces/default/horizontalpodautoscalers"
EVENTS_V1 = "/apis/events.k8s.io/v1/namespaces/default/events"
CORE_EVENTS = "/api/v1/namespaces/default/events"
GPU_CLASS = "gpu.example.com"
REQUESTS = ".spec.devices.requests"  # an atomic list in every version
DEFAULTED = {"deviceClassName": GPU_CLASS, "allocationMode": "ExactCount", "count": 1}  # the request as stored


@pytest.fixture
async def http(tmp_path: Path) -> AsyncIterator[aiohttp.ClientSession]:
    runtime = runtimeconfig.parse("api/beta=true", group_versions=resources.builtin_group_versions())
    async with servers.running(data_dir=tmp_path / "data", db_url="memory:",
                               app_options={"runtime_config": runtime}) as srv, \
            aiohttp.ClientSession(base_url=srv.url) as session:
        yield session


async def call(http: aiohttp.ClientSession, method: str, path: str, body: Any, *,
               ctype: str = "application/json", **params: str) -> tuple[int, dict[str, Any]]:
    async with http.request(method, path, data=json.dumps(body), params=params,
                            headers={"Content-Type": ctype}) as r:
        return r.status, dict(json.loads(await r.read()))


async def apply(http: aiohttp.ClientSession, path: str, obj: dict[str, Any], manager: str, *,
                force: bool = False) -> tuple[int, dict[str, Any]]:
    params = {"fieldManager": manager, **({"force": "true"} if force else {})}
    return await call(http, "PATCH", f"{path}/{obj['metadata']['name']}", obj, ctype=APPLY, **params)


async def get(http: aiohttp.ClientSession, path: str) -> dict[str, Any]:
    async with http.get(path) as r:
        assert r.status == 200, await r.text()
        return dict(json.loads(await r.read()))


def versions(obj: dict[str, Any]) -> dict[str, str]:
    """manager/operation -> the apiVersion of its entry."""
    return {f"{e['manager']}/{e['operation']}": e["apiVersion"] for e in entries(obj)}


def owners_of(entry: dict[str, Any]) -> set[str]:
    return {fp.path_string(p) for p in fp.paths(entry["fieldsV1"])}


def claim_v1beta1(**request: Any) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim", "metadata": {"name": "claim"},
            "spec": {"devices": {"requests": [{"name": "gpu", **request}]}}}


def claim_v1(**exactly: Any) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "claim"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}}


# ------------------------------------------------------------------------------ resource.k8s.io


async def test_each_manager_owns_fields_in_the_version_it_applied(http: aiohttp.ClientSession) -> None:
    code, body = await apply(http, CLAIMS.format(version="v1beta1"), claim_v1beta1(deviceClassName=GPU_CLASS), "beta")
    assert code == 201, body
    assert versions(body) == {"beta/Apply": "resource.k8s.io/v1beta1"}
    assert REQUESTS in owners(body)["beta/Apply"]
    # the same (atomic) requests applied through v1 are shared, each entry at its own version
    code, body = await apply(http, CLAIMS.format(version="v1"), claim_v1(**DEFAULTED), "stable")
    assert code == 200, body
    assert versions(body) == {"beta/Apply": "resource.k8s.io/v1beta1", "stable/Apply": "resource.k8s.io/v1"}
    assert REQUESTS in owners(body)["beta/Apply"] and REQUESTS in owners(body)["stable/Apply"]
    # read through any version, the entries are the ones recorded
    for version in ("v1", "v1beta1", "v1beta2"):
        read = await get(http, f"{CLAIMS.format(version=version)}/claim")
        assert entries(read) == entries(body), version


async def test_a_v1_apply_conflicts_with_a_v1beta1_manager(http: aiohttp.ClientSession) -> None:
    code, body = await apply(http, CLAIMS.format(version="v1beta1"), claim_v1beta1(deviceClassName=GPU_CLASS), "beta")
    assert code == 201, body
    code, body = await apply(http, CLAIMS.format(version="v1"), claim_v1(deviceClassName="other.example.com"),
                             "stable")
    assert code == 409, body
    assert body["reason"] == "Conflict"
    assert body["message"] == f'Apply failed with 1 conflict: conflict with "beta": {REQUESTS}'
    assert body["details"]["causes"] == [{"reason": "FieldManagerConflict", "message": 'conflict with "beta"',
                                          "field": REQUESTS}]
    # and the other way round: a v1 manager's field, changed through v1beta1
    code, body = await apply(http, CLAIMS.format(version="v1"), claim_v1(**DEFAULTED), "stable")
    assert code == 200, body
    code, body = await apply(http, CLAIMS.format(version="v1beta1"),
                             claim_v1beta1(deviceClassName="other.example.com"), "third")
    assert code == 409, body
    assert body["message"] == ("Apply failed with 2 conflicts: conflicts with \"beta\":\n"
                               f"- {REQUESTS}\n"
                               "conflicts with \"stable\":\n"
                               f"- {REQUESTS}")
    # forced, the ownership moves (and the claim's spec, immutable, is not changed: 422)
    code, body = await apply(http, CLAIMS.format(version="v1beta1"),
                             claim_v1beta1(deviceClassName="other.example.com"), "third", force=True)
    assert code == 422, body


def device_class(version: str, **spec: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"apiVersion": f"resource.k8s.io/{version}", "kind": "DeviceClass",
                           "metadata": {"name": GPU_CLASS}}
    if spec:
        out["spec"] = spec
    return out


SELECTORS = [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]
CONFIG = [{"opaque": {"driver": GPU_CLASS, "parameters": {"sharing": "time"}}}]


async def test_a_field_dropped_from_a_v1beta1_apply_is_removed_unless_a_v1_manager_owns_it(
        http: aiohttp.ClientSession) -> None:
    code, body = await apply(http, CLASSES.format(version="v1beta1"),
                             device_class("v1beta1", selectors=SELECTORS, config=CONFIG,
                                          extendedResourceName="example.com/gpu"), "beta")
    assert code == 201, body
    code, body = await apply(http, CLASSES.format(version="v1"), device_class("v1", config=CONFIG), "stable")
    assert code == 200, body
    assert owners(body)["stable/Apply"] >= {".spec.config"}
    assert versions(body) == {"beta/Apply": "resource.k8s.io/v1beta1", "stable/Apply": "resource.k8s.io/v1"}
    # beta applies again without the selectors, the config (shared with the v1 manager) or the name
    code, body = await apply(http, CLASSES.format(version="v1beta1"), device_class("v1beta1"), "beta")
    assert code == 200, body
    assert "selectors" not in body["spec"] and "extendedResourceName" not in body["spec"]
    assert body["spec"]["config"] == CONFIG  # still the v1 manager's
    assert "beta/Apply" not in owners(body)
    assert versions(body) == {"stable/Apply": "resource.k8s.io/v1"}
    stored = await get(http, f"{CLASSES.format(version='v1')}/{GPU_CLASS}")
    assert stored["spec"] == {"config": CONFIG}


async def test_a_forced_v1_apply_takes_a_v1beta1_managers_field(http: aiohttp.ClientSession) -> None:
    code, body = await apply(http, CLASSES.format(version="v1beta1"),
                             device_class("v1beta1", selectors=SELECTORS, extendedResourceName="example.com/gpu"),
                             "beta")
    assert code == 201, body
    code, body = await apply(http, CLASSES.format(version="v1"),
                             device_class("v1", extendedResourceName="example.com/accel"), "stable")
    assert code == 409, body
    assert body["message"] == 'Apply failed with 1 conflict: conflict with "beta": .spec.extendedResourceName'
    code, body = await apply(http, CLASSES.format(version="v1"),
                             device_class("v1", extendedResourceName="example.com/accel"), "stable", force=True)
    assert code == 200, body
    assert body["spec"]["extendedResourceName"] == "example.com/accel"
    assert ".spec.extendedResourceName" not in owners(body)["beta/Apply"]
    assert ".spec.extendedResourceName" in owners(body)["stable/Apply"]
    # beta no longer owns it: applying without it leaves it alone
    code, body = await apply(http, CLASSES.format(version="v1beta1"), device_class("v1beta1", selectors=SELECTORS),
                             "beta")
    assert code == 200, body
    assert body["spec"]["extendedResourceName"] == "example.com/accel"


async def test_update_operations_record_the_version_written_with(http: aiohttp.ClientSession) -> None:
    beta = claim_v1beta1(deviceClassName=GPU_CLASS)
    code, body = await call(http, "POST", CLAIMS.format(version="v1beta1"), beta, fieldManager="creator")
    assert code == 201, body
    assert versions(body) == {"creator/Update": "resource.k8s.io/v1beta1"}
    assert REQUESTS in owners(body)["creator/Update"]
    # a label through v1: its own entry at v1, the creator's untouched
    code, body = await call(http, "PATCH", f"{CLAIMS.format(version='v1')}/claim",
                            {"metadata": {"labels": {"team": "ml"}}}, ctype="application/merge-patch+json",
                            fieldManager="labeller")
    assert code == 200, body
    assert versions(body) == {"creator/Update": "resource.k8s.io/v1beta1",
                              "labeller/Update": "resource.k8s.io/v1"}
    assert owners(body)["labeller/Update"] == {".metadata.labels", ".metadata.labels.team"}
    # the same manager writing through another version is another entry, and takes the label's value
    code, body = await call(http, "PATCH", f"{CLAIMS.format(version='v1beta1')}/claim",
                            {"metadata": {"labels": {"team": "infra"}}}, ctype="application/merge-patch+json",
                            fieldManager="labeller")
    assert code == 200, body
    assert [(e["manager"], e["apiVersion"], e["operation"]) for e in entries(body)] == [
        ("creator", "resource.k8s.io/v1beta1", "Update"), ("labeller", "resource.k8s.io/v1", "Update"),
        ("labeller", "resource.k8s.io/v1beta1", "Update")]
    assert [owners_of(e) for e in entries(body)][1:] == [{".metadata.labels"}, {".metadata.labels.team"}]


# ------------------------------------------------------------------------------ autoscaling


def hpa_v1(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, **spec}}


def hpa_v2(**spec: Any) -> dict[str, Any]:
    return {**hpa_v1(**spec), "apiVersion": "autoscaling/v2"}


def cpu(utilization: int) -> list[dict[str, Any]]:
    return [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                        "averageUtilization": utilization}}}]


async def test_a_helm_v1_hpa_then_a_kubectl_v2_apply(http: aiohttp.ClientSession) -> None:
    code, body = await apply(http, HPAS.format(version="v1"),
                             hpa_v1(minReplicas=2, maxReplicas=5, targetCPUUtilizationPercentage=50), "helm")
    assert code == 201, body
    assert versions(body) == {"helm/Apply": "autoscaling/v1"}
    assert owners(body)["helm/Apply"] >= {".spec.targetCPUUtilizationPercentage", ".spec.maxReplicas",
                                          ".spec.minReplicas"}
    # kubectl through v2: the CPU metric is helm's CPU target
    code, body = await apply(http, HPAS.format(version="v2"), hpa_v2(maxReplicas=5, metrics=cpu(70)), "kubectl")
    assert code == 409, body
    assert body["message"] == ('Apply failed with 1 conflict: conflict with "helm": '
                               ".spec.targetCPUUtilizationPercentage")
    code, body = await apply(http, HPAS.format(version="v2"), hpa_v2(maxReplicas=5, metrics=cpu(70)), "kubectl",
                             force=True)
    assert code == 200, body
    assert body["spec"]["metrics"] == cpu(70) and body["spec"]["minReplicas"] == 2
    assert versions(body) == {"helm/Apply": "autoscaling/v1", "kubectl/Apply": "autoscaling/v2"}
    assert ".spec.targetCPUUtilizationPercentage" not in owners(body)["helm/Apply"]
    assert {".spec.metrics", ".spec.maxReplicas"} <= owners(body)["kubectl/Apply"]
    assert ".spec.maxReplicas" in owners(body)["helm/Apply"]  # shared: the same value
    # helm's next upgrade: its CPU target is now kubectl's metrics
    code, body = await apply(http, HPAS.format(version="v1"),
                             hpa_v1(minReplicas=2, maxReplicas=5, targetCPUUtilizationPercentage=50), "helm")
    assert code == 409, body
    assert body["message"] == 'Apply failed with 1 conflict: conflict with "kubectl": .spec.metrics'
    # helm stops applying minReplicas (owned by nobody else): removed, and defaulted again
    code, body = await apply(http, HPAS.format(version="v1"), hpa_v1(maxReplicas=5), "helm")
    assert code == 200, body
    assert body["spec"]["minReplicas"] == 1 and body["spec"]["targetCPUUtilizationPercentage"] == 70
    v2 = await get(http, f"{HPAS.format(version='v2')}/web")
    assert v2["spec"]["metrics"] == cpu(70) and v2["spec"]["minReplicas"] == 1
    assert entries(v2) == entries(body)


# ------------------------------------------------------------------------------ events


async def test_an_events_v1_writer_and_a_core_v1_writer(http: aiohttp.ClientSession) -> None:
    event = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e1"},
             "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "example.com/ctl",
             "reportingInstance": "ctl-0", "action": "Sync", "reason": "Synced", "type": "Normal",
             "note": "synced", "regarding": {"kind": "Pod", "name": "web", "namespace": "default"}}
    code, body = await call(http, "POST", EVENTS_V1, event, fieldManager="ctl")
    assert code == 201, body
    assert versions(body) == {"ctl/Update": "events.k8s.io/v1"}
    # what kube-scheduler's events.k8s.io/v1 Events record: v1's names, no deprecated (zero) field
    assert owners(body)["ctl/Update"] == {".action", ".eventTime", ".note", ".reason", ".regarding",
                                          ".reportingController", ".reportingInstance", ".type"}
    core = await get(http, f"{CORE_EVENTS}/e1")
    assert entries(core) == entries(body)
    core["message"] = "synced again"
    code, body = await call(http, "PUT", f"{CORE_EVENTS}/e1", core, fieldManager="other")
    assert code == 200, body
    assert versions(body) == {"ctl/Update": "events.k8s.io/v1", "other/Update": "v1"}
    assert owners(body)["other/Update"] == {".message"}
    assert ".note" not in owners(body)["ctl/Update"]


async def test_a_manager_that_moves_to_another_version(http: aiohttp.ClientSession) -> None:
    """What a manager applied through v1 and no longer applies through v2 is removed (compared in the
    version it last applied with), and its entry moves to v2."""
    code, body = await apply(http, HPAS.format(version="v1"),
                             hpa_v1(minReplicas=2, maxReplicas=5, targetCPUUtilizationPercentage=50), "helm")
    assert code == 201, body
    code, body = await apply(http, HPAS.format(version="v2"), hpa_v2(maxReplicas=6, metrics=cpu(50)), "helm")
    assert code == 200, body
    assert versions(body) == {"helm/Apply": "autoscaling/v2"}
    assert body["spec"]["minReplicas"] == 1 and body["spec"]["maxReplicas"] == 6
    assert ".spec.metrics" in owners(body)["helm/Apply"]
    assert ".spec.minReplicas" not in owners(body)["helm/Apply"]


async def test_a_v1_update_leaves_a_v2_managers_metrics_alone(http: aiohttp.ClientSession) -> None:
    """A write through autoscaling/v1 that does not touch the metrics takes nothing from their v2
    manager, though the round trip through v1 stores the CPU metric last: the v2 manager's fields are
    compared between the old and the new object as v1 sees them, each converted to v2."""
    memory = {"type": "Resource", "resource": {"name": "memory", "target": {"type": "Utilization",
                                                                             "averageUtilization": 80}}}
    code, body = await apply(http, HPAS.format(version="v2"), hpa_v2(maxReplicas=5, metrics=[*cpu(70), memory]),
                             "kubectl")
    assert code == 201, body
    code, body = await call(http, "PATCH", f"{HPAS.format(version='v1')}/web", {"spec": {"minReplicas": 2}},
                            ctype="application/merge-patch+json", fieldManager="patcher")
    assert code == 200, body
    assert versions(body) == {"kubectl/Apply": "autoscaling/v2", "patcher/Update": "autoscaling/v1"}
    assert owners(body)["patcher/Update"] == {".spec.minReplicas"}
    assert ".spec.metrics" in owners(body)["kubectl/Apply"]
    v2 = await get(http, f"{HPAS.format(version='v2')}/web")
    assert v2["spec"]["metrics"] == [memory, *cpu(70)]
