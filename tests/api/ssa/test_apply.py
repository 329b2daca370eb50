"""Server-side apply over HTTP, beyond ownership: creation, request checks, dryRun, no-op writes,
managedFields sent by clients, the scale subresource, the manager cap, timestamps, and the
client-side-apply annotation (`kubectl.kubernetes.io/last-applied-configuration`) handling that upstream
does for the "kubectl" manager (lastappliedmanager.go, lastappliedupdater.go)."""

from __future__ import annotations

import json
from typing import Any

import aiohttp

from cp import fieldmanager
from tests.api.ssa.support import (
    APPLY,
    JSON_PATCH,
    Api,
    configmap,
    container,
    deployment,
    entries,
    key_order,
    owned_by,
    owners,
)

LAST = fieldmanager.LAST_APPLIED


async def _raw(http: aiohttp.ClientSession, method: str, path: str, body: Any, ctype: str,
               **params: str) -> tuple[int, dict[str, Any]]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    async with http.request(method, path, data=data, params=params, headers={"Content-Type": ctype}) as r:
        return r.status, json.loads(await r.read())


CM_PATH = "/api/v1/namespaces/default/configmaps"


async def test_apply_creates_then_updates(api: Api) -> None:
    r = await api.apply(configmap("cm", a="1"), "m")
    assert r.status == 201
    (e,) = entries(r.body)
    assert list(e) == ["manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1"]
    assert (e["manager"], e["operation"], e["apiVersion"], e["fieldsType"]) == ("m", "Apply", "v1", "FieldsV1")
    assert e["fieldsV1"] == {"f:data": {"f:a": {}}}
    r2 = await api.apply(configmap("cm", a="2"), "m")
    assert r2.status == 200 and r2.body["data"] == {"a": "2"}
    assert r2.body["metadata"]["uid"] == r.body["metadata"]["uid"]


async def test_apply_request_checks(http: aiohttp.ClientSession) -> None:
    body = configmap("cm", a="1")
    code, st = await _raw(http, "PATCH", f"{CM_PATH}/cm", body, APPLY)
    assert (code, st["reason"]) == (422, "Invalid")  # ValidatePatchOptions: errors.NewInvalid
    assert st["message"] == 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch'
    code, st = await _raw(http, "PATCH", f"{CM_PATH}/cm", {**body, "apiVersion": "apps/v1", "kind": "Deployment"},
                          APPLY, fieldManager="m")
    assert code == 400 and st["message"] == "invalid object type: apps/v1, Kind=Deployment"
    code, st = await _raw(http, "PATCH", f"{CM_PATH}/cm", {**body, "apiVersion": "v2"}, APPLY, fieldManager="m")
    assert code == 400 and st["message"] == "invalid object type: /v2, Kind=ConfigMap"
    code, st = await _raw(http, "PATCH", f"{CM_PATH}/cm",
                          {**body, "metadata": {"name": "cm", "managedFields": [{"manager": "x"}]}},
                          APPLY, fieldManager="m")
    assert code == 400 and st["message"] == "metadata.managedFields must be nil"
    # A configuration the schema cannot type is the client's error: 400 with the typed conversion's text
    # (upstream answers 500, kubernetes#122480).
    dup = deployment("web", containers=[container("a"), container("a", "other")])
    code, st = await _raw(http, "PATCH", "/apis/apps/v1/namespaces/default/deployments/web", dup, APPLY,
                          fieldManager="m")
    assert (code, st["reason"]) == (400, "BadRequest")
    assert st["message"] == ("failed to create typed patch object (default/web; apps/v1, Kind=Deployment): "
                             '.spec.template.spec.containers: duplicate entries for key [name="a"]')
    code, st = await _raw(http, "PATCH", f"{CM_PATH}/cm/status", body, APPLY, fieldManager="m")
    assert code == 404  # configmaps have no status subresource
    # YAML works as well as JSON.
    code, st = await _raw(http, "PATCH", f"{CM_PATH}/cm",
                          b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  a: '1'\n", APPLY,
                          fieldManager="m")
    assert code == 201 and st["data"] == {"a": "1"}


async def _apply_raw(http: aiohttp.ClientSession, path: str, body: Any,
                     **params: str) -> tuple[int, dict[str, Any], list[str]]:
    """An apply PATCH: code, body and the Warning headers."""
    async with http.patch(path, data=json.dumps(body).encode(), params={"fieldManager": "m", **params},
                          headers={"Content-Type": APPLY}) as r:
        return r.status, json.loads(await r.read()), r.headers.getall("Warning", [])


async def test_apply_unknown_fields_follow_field_validation(http: aiohttp.ClientSession) -> None:
    """Fields the schema does not declare, at the top or nested: Strict rejects the apply (400, nothing
    stored), Warn (the default) drops them with a warning each, Ignore drops them silently; the manager
    owns only the declared fields it applied."""
    deployments = "/apis/apps/v1/namespaces/default/deployments"
    bogus = {**configmap("cm", a="1"), "bogus": 1}
    code, st, _ = await _apply_raw(http, f"{CM_PATH}/cm", bogus, fieldValidation="Strict")
    assert (code, st["reason"]) == (400, "BadRequest")
    assert st["message"] == ("failed to create typed patch object (default/cm; /v1, Kind=ConfigMap): "
                             ".bogus: field not declared in schema")
    async with http.get(f"{CM_PATH}/cm") as r:
        assert r.status == 404

    code, st, warnings = await _apply_raw(http, f"{CM_PATH}/cm", bogus)
    assert code == 201 and warnings == ['299 - "unknown field \\"bogus\\""']
    assert "bogus" not in st and st["data"] == {"a": "1"}
    assert owners(st) == {"m/Apply": {".data.a"}}
    code, st, warnings = await _apply_raw(http, f"{CM_PATH}/cm", {**bogus, "data": {"a": "2"}},
                                          fieldValidation="Ignore")
    assert (code, warnings) == (200, []) and "bogus" not in st and st["data"] == {"a": "2"}

    nested = deployment("web", containers=[container("web", bogus="x")])
    nested["spec"]["template"]["spec"]["bogusToo"] = True
    code, st, _ = await _apply_raw(http, f"{deployments}/web", nested, fieldValidation="Strict")
    assert code == 400
    assert st["message"] == (
        "failed to create typed patch object (default/web; apps/v1, Kind=Deployment): errors:\n"
        '  .spec.template.spec.containers[name="web"].bogus: field not declared in schema\n'
        "  .spec.template.spec.bogusToo: field not declared in schema")
    code, st, warnings = await _apply_raw(http, f"{deployments}/web", nested)
    assert code == 201
    assert sorted(warnings) == ['299 - "unknown field \\"spec.template.spec.bogusToo\\""',
                                '299 - "unknown field \\"spec.template.spec.containers[0].bogus\\""']
    pod_spec = st["spec"]["template"]["spec"]
    assert "bogusToo" not in pod_spec and "bogus" not in pod_spec["containers"][0]
    assert not any("bogus" in path for path in owners(st)["m/Apply"])


async def test_apply_dry_run(api: Api, http: aiohttp.ClientSession) -> None:
    r = await api.apply(configmap("cm", a="1"), "m", dry_run=True)
    assert r.status == 201 and r.body["data"] == {"a": "1"}
    async with http.get(f"{CM_PATH}/cm") as resp:
        assert resp.status == 404
    await api.apply(configmap("cm", a="1"), "m")
    r = await api.apply(configmap("cm", a="2"), "other", force=True, dry_run=True)
    assert r.status == 200 and r.body["data"] == {"a": "2"} and owned_by(r.body, ".data.a") == {"other/Apply"}
    live = await api.get(configmap("cm"))
    assert live["data"] == {"a": "1"} and owned_by(live, ".data.a") == {"m/Apply"}
    r = await api.apply(configmap("cm", a="2"), "other", dry_run=True)
    assert r.status == 409


async def test_noop_apply_keeps_resource_version_and_time(api: Api) -> None:
    first = (await api.apply(configmap("cm", a="1"), "m")).body
    again = (await api.apply(configmap("cm", a="1"), "m")).body
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    assert entries(again) == entries(first)
    # A new manager applying the same values: only managedFields change (a new write), and its entry
    # has no time, as upstream records times only for changes.
    shared = (await api.apply(configmap("cm", a="1"), "n")).body
    assert int(shared["metadata"]["resourceVersion"]) > int(first["metadata"]["resourceVersion"])
    by = {e["manager"]: e for e in entries(shared)}
    assert "time" not in by["n"] and by["m"]["time"] == entries(first)[0]["time"]
    assert [e["manager"] for e in entries(shared)] == ["n", "m"]  # Apply entries by time, none first


async def test_update_managers_and_key_order(api: Api) -> None:
    """POST records an Update entry owning what it set (with `.` for the maps and items it added) in
    upstream's serialization order: "." first, fields by name, list keys by value (80 before 1000)."""
    d = deployment("web", replicas=2, containers=[container("b", ports=[{"containerPort": 1000},
                                                                        {"containerPort": 80}]),
                                                   container("a")], labels={"z": "1", "app": "web"})
    r = await api.create(d, "creator")
    assert r.status == 201
    (e,) = entries(r.body)
    assert (e["manager"], e["operation"]) == ("creator", "Update")
    f = e["fieldsV1"]
    assert key_order(f["f:metadata"]) == [("f:labels", [(".", []), ("f:app", []), ("f:z", [])])]
    containers = f["f:spec"]["f:template"]["f:spec"]["f:containers"]
    assert list(containers) == ['k:{"name":"a"}', 'k:{"name":"b"}']
    ports = containers['k:{"name":"b"}']["f:ports"]
    assert list(ports) == [".", 'k:{"containerPort":80,"protocol":"TCP"}',
                           'k:{"containerPort":1000,"protocol":"TCP"}']
    assert list(ports['k:{"containerPort":80,"protocol":"TCP"}']) == [".", "f:containerPort", "f:protocol"]
    # Defaulted fields belong to the creator, as upstream (defaulting happens before the field manager).
    assert ".spec.revisionHistoryLimit" in owners(r.body)["creator/Update"]
    assert '.spec.template.spec.containers[name="a"].imagePullPolicy' in owners(r.body)["creator/Update"]
    assert not any(p.startswith(".status") for p in owners(r.body)["creator/Update"])


async def test_scale_subresource_owns_replicas(api: Api, http: aiohttp.ClientSession) -> None:
    await api.apply(deployment("web", replicas=2), "app")
    code, _ = await _raw(http, "PATCH", "/apis/apps/v1/namespaces/default/deployments/web/scale",
                         {"spec": {"replicas": 4}}, "application/merge-patch+json", fieldManager="hpa")
    assert code == 200
    live = await api.get(deployment("web"))
    assert owned_by(live, ".spec.replicas") == {"hpa/Update/scale"}
    r = await api.apply(deployment("web", replicas=2), "app")
    assert r.status == 409
    assert r.body["message"] == ('Apply failed with 1 conflict: conflict with "hpa" with subresource "scale" '
                                 'using apps/v1: .spec.replicas')
    # The documented way out: stop applying replicas.
    r = await api.apply(deployment("web"), "app")
    assert r.status == 200 and r.body["spec"]["replicas"] == 4


async def test_update_managers_are_capped(api: Api) -> None:
    await api.create(configmap("cm", m0="0"), "m0")
    for i in range(1, 12):
        r = await api.patch(configmap("cm"), {"data": {f"m{i}": str(i)}}, f"m{i}")
        assert r.status == 200
    got = owners(r.body)
    assert len([m for m in got if m.endswith("/Update")]) == 10
    assert "ancient-changes/Update" in got
    assert {".data.m0", ".data.m1"} <= got["ancient-changes/Update"]
    assert "m0/Update" not in got and "m1/Update" not in got


async def test_managed_fields_sent_by_clients(api: Api, http: aiohttp.ClientSession) -> None:
    cm = (await api.apply(configmap("cm", a="1", b="2"), "m")).body
    # A PUT carrying different managedFields replaces them (how kubectl migrates client-side apply).
    mine = [{"manager": "mine", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1",
             "fieldsV1": {"f:data": {"f:b": {}, "f:a": {}}}}]
    r = await api.replace({**cm, "metadata": {**cm["metadata"], "managedFields": mine}}, "putter")
    assert r.status == 200
    (e,) = entries(r.body)
    assert e["manager"] == "mine" and list(e["fieldsV1"]["f:data"]) == ["f:a", "f:b"]  # normalized order
    # Invalid entries are ignored (the live ones stay), and the PUT's own change is recorded.
    cur = r.body
    bad = [{"manager": "x", "operation": "Bogus", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {}}]
    r = await api.replace({**cur, "metadata": {**cur["metadata"], "managedFields": bad}, "data": {"a": "9", "b": "2"}},
                          "putter")
    assert r.status == 200
    assert owners(r.body) == {"mine/Apply": {".data.b"}, "putter/Update": {".data.a"}}
    # A JSON patch replacing managedFields (kubectl's csaupgrade sends exactly this shape).
    rv = r.body["metadata"]["resourceVersion"]
    patch = [{"op": "replace", "path": "/metadata/managedFields", "value": mine},
             {"op": "replace", "path": "/metadata/resourceVersion", "value": rv}]
    code, body = await _raw(http, "PATCH", f"{CM_PATH}/cm", patch, JSON_PATCH, fieldManager="kubectl")
    assert code == 200 and owners(body) == {"mine/Apply": {".data.a", ".data.b"}}
    # An empty list resets them; an existing object without managedFields is then not tracked by
    # updates (skipNonAppliedManager) ...
    code, body = await _raw(http, "PATCH", f"{CM_PATH}/cm", [{"op": "replace", "path": "/metadata/managedFields",
                                                              "value": []}], JSON_PATCH)
    assert code == 200 and "managedFields" not in body["metadata"]
    r = await api.patch(configmap("cm"), {"data": {"c": "3"}}, "editor")
    assert r.status == 200 and "managedFields" not in r.body["metadata"]
    # ... until an apply: what exists then belongs to "before-first-apply".
    r = await api.apply(configmap("cm", a="1"), "m")
    assert r.status == 409 and r.body["message"] == ('Apply failed with 1 conflict: conflict with '
                                                     '"before-first-apply" using v1: .data.a')
    r = await api.apply(configmap("cm", a="9"), "m")
    assert r.status == 200
    assert owners(r.body) == {"m/Apply": {".data.a"},
                              "before-first-apply/Update": {".data", ".data.a", ".data.b", ".data.c"}}


async def test_create_honours_managed_fields_in_the_body(api: Api) -> None:
    body = configmap("cm", a="1", b="2")
    body["metadata"]["managedFields"] = [{"manager": "importer", "operation": "Apply", "apiVersion": "v1",
                                          "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}, "f:zz": {}}}}]
    r = await api.create(body, "creator")
    assert r.status == 201
    got = owners(r.body)
    assert got["importer/Apply"] == {".data.zz"}  # the creator took .data.a: it set it
    assert got["creator/Update"] == {".data", ".data.a", ".data.b"}


async def test_kubectl_last_applied_annotation(api: Api) -> None:
    """A "kubectl" apply on an object carrying the client-side annotation: conflicts with fields that the
    annotation set to their live values are not conflicts, and the annotation follows the applied
    configuration. Another manager gets no such treatment."""
    cfg = deployment("web", replicas=3)
    cfg["metadata"]["annotations"] = {LAST: json.dumps(cfg, separators=(",", ":"), sort_keys=True) + "\n"}
    r = await api.create(cfg, "kubectl-client-side-apply")
    assert r.status == 201
    ssa = deployment("web", replicas=4)
    r = await api.apply(ssa, "someone-else")
    assert r.status == 409
    r = await api.apply(ssa, "kubectl")
    assert r.status == 200 and r.body["spec"]["replicas"] == 4
    annotation = r.body["metadata"]["annotations"][LAST]
    assert annotation == json.dumps(ssa, separators=(",", ":"), sort_keys=True) + "\n"
    assert owned_by(r.body, ".spec.replicas") == {"kubectl/Apply"}
    # The annotation is owned by the client-side manager only: kubectl applies it separately.
    assert owned_by(r.body, f".metadata.annotations.{LAST}") == {"kubectl-client-side-apply/Update"}
    # When the live value no longer matches the annotation (someone changed it), the conflict stays.
    await api.patch(deployment("web"), {"spec": {"replicas": 7}}, "scaler")
    r = await api.apply(deployment("web", replicas=5), "kubectl")
    assert r.status == 409 and r.body["message"] == ('Apply failed with 1 conflict: conflict with "scaler" using '
                                                     'apps/v1: .spec.replicas')


async def test_apply_to_status_of_missing_object(api: Api) -> None:
    r = await api.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                         "status": {"message": "x"}}, "kubelet", subresource="status")
    assert r.status == 404


async def test_resource_version_in_the_configuration_is_a_precondition(api: Api) -> None:
    first = (await api.apply(configmap("cm", a="1"), "m")).body
    await api.apply(configmap("cm", a="2"), "m")
    stale = configmap("cm", a="3")
    stale["metadata"]["resourceVersion"] = first["metadata"]["resourceVersion"]
    r = await api.apply(stale, "m")
    assert r.status == 409 and r.body["message"] == (
        'Operation cannot be fulfilled on configmaps "cm": the object has been modified; please apply your '
        "changes to the latest version and try again")


async def test_concurrent_applies_retry_instead_of_failing(api: Api) -> None:
    """Without a resourceVersion in the configuration, an apply racing another write applies again to the
    newer object (upstream's GuaranteedUpdate retry)."""
    import asyncio

    await api.apply(configmap("cm", base="0"), "base")
    replies = await asyncio.gather(*(api.apply(configmap("cm", **{f"k{i}": str(i)}), f"m{i}") for i in range(12)))
    assert [r.status for r in replies] == [200] * 12
    live = await api.get(configmap("cm"))
    assert live["data"] == {"base": "0", **{f"k{i}": str(i) for i in range(12)}}
    assert owners(live)[f"m{7}/Apply"] == {".data.k7"}
