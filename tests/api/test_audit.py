"""The audit log (`--audit-log-path`, `--audit-policy-file`): kube-apiserver's audit.k8s.io/v1 Events,
one JSON line each, for the stages and at the levels the policy says."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gzip
import json
import re
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from api import audit as audits
from api import server as servers
from api import state as st
from cp.cli import serve
from storage import log, memory
from tests import waiting
from tests.api.security.conftest import call, secure_server

POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: None
  nonResourceURLs: [/healthz*, /readyz*, /livez*]
- level: RequestResponse
  resources: [{group: resource.k8s.io}]
- level: Metadata
"""
CLAIMS = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
CLAIM = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "gpu"},
         "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}
MICRO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


def auditor(tmp_path: Path, policy: str = POLICY) -> audits.Auditor:
    (tmp_path / "policy.yaml").write_text(policy)
    return audits.load(policy_file=str(tmp_path / "policy.yaml"), log_path=str(tmp_path / "audit.log"))


async def events(app: Any, path: Path) -> list[dict[str, Any]]:
    await app[st.AUDITOR].flushed()
    lines = path.read_bytes().splitlines()  # noqa: ASYNC240 - a small file, after the writer flushed it
    return [json.loads(line) for line in lines]


def by_id(found: list[dict[str, Any]], audit_id: str) -> list[dict[str, Any]]:
    return [e for e in found if e["auditID"] == audit_id]


def timeless(event: dict[str, Any]) -> dict[str, Any]:
    """The event without its timestamps (checked to be microsecond RFC 3339) and the object's volatile fields."""
    assert MICRO.match(event["requestReceivedTimestamp"]) and MICRO.match(event["stageTimestamp"]), event
    assert event["stageTimestamp"] >= event["requestReceivedTimestamp"]
    out = {k: v for k, v in event.items() if k not in ("requestReceivedTimestamp", "stageTimestamp")}
    return out


@contextlib.asynccontextmanager
async def insecure_server(tmp_path: Path, the_auditor: audits.Auditor) -> AsyncIterator[servers.Running]:
    log = memory.MemoryEventLog()
    await log.start()
    try:
        async with servers.running(data_dir=tmp_path / "data", event_log=log, insecure_limits=True,
                                   app_options={"audit": the_auditor}) as srv:
            yield srv
    finally:
        await log.close()


async def test_a_claim_created_patched_and_deleted_is_recorded_with_its_objects(tmp_path: Path) -> None:
    async with insecure_server(tmp_path, auditor(tmp_path)) as srv, aiohttp.ClientSession(srv.url) as http:
        headers = {"User-Agent": "audit-test/1.0", "X-Request-Id": "create-1"}
        async with http.post(CLAIMS, json=CLAIM, headers=headers) as r:
            assert r.status == 201 and r.headers["Audit-Id"] == "create-1"
            created = await r.json()
        async with http.patch(f"{CLAIMS}/gpu", data=b'{"metadata":{"labels":{"a":"b"}}}',
                              headers={"Content-Type": "application/merge-patch+json", "X-Request-Id": "patch-1"}) as r:
            assert r.status == 200
            patched = await r.json()
        async with http.get(f"{CLAIMS}/gpu", headers={"X-Request-Id": "proto-1",
                                                      "Accept": "application/vnd.kubernetes.protobuf"}) as r:
            assert r.status == 200 and r.content_type == "application/vnd.kubernetes.protobuf"
        async with http.delete(f"{CLAIMS}/gpu", headers={"X-Request-Id": "delete-1"}) as r:
            assert r.status == 200
            deleted = await r.json()
        async with http.get("/api/v1/namespaces/default/configmaps/nope", headers={"X-Request-Id": "get-1"}) as r:
            assert r.status == 404
        async with http.get("/healthz", headers={"X-Request-Id": "health-1"}) as r:
            assert r.status == 200
        found = await events(srv.app, tmp_path / "audit.log")
    assert not by_id(found, "health-1")  # level None
    create = by_id(found, "create-1")
    assert [e["stage"] for e in create] == ["RequestReceived", "ResponseComplete"]
    common = {"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "RequestResponse", "auditID": "create-1",
              "requestURI": CLAIMS, "verb": "create",
              "user": {"username": "system:admin", "groups": ["system:masters", "system:authenticated"]},
              "sourceIPs": ["127.0.0.1"], "userAgent": "audit-test/1.0"}
    assert timeless(create[0]) == {**common, "stage": "RequestReceived", "objectRef": {
        "resource": "resourceclaims", "namespace": "default", "apiGroup": "resource.k8s.io", "apiVersion": "v1"}}
    assert create[0]["stageTimestamp"] == create[0]["requestReceivedTimestamp"]
    assert timeless(create[1]) == {**common, "stage": "ResponseComplete", "objectRef": {
        "resource": "resourceclaims", "namespace": "default", "name": "gpu", "apiGroup": "resource.k8s.io",
        "apiVersion": "v1"}, "responseStatus": {"metadata": {}, "code": 201},
        "requestObject": CLAIM, "responseObject": created}
    patch = by_id(found, "patch-1")[-1]
    assert patch["verb"] == "patch" and patch["requestObject"] == {"metadata": {"labels": {"a": "b"}}}
    assert patch["responseObject"] == patched and patch["responseStatus"] == {"metadata": {}, "code": 200}
    assert patch["objectRef"] == {"resource": "resourceclaims", "namespace": "default", "name": "gpu",
                                  "apiGroup": "resource.k8s.io", "apiVersion": "v1"}
    proto = by_id(found, "proto-1")[-1]  # answered in protobuf, recorded as JSON
    assert proto["verb"] == "get" and proto["responseObject"] == patched and "requestObject" not in proto
    delete = by_id(found, "delete-1")[-1]
    assert delete["verb"] == "delete" and delete["responseObject"] == deleted
    assert delete["requestObject"] == {"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"}
    get = by_id(found, "get-1")
    assert [e["stage"] for e in get] == ["RequestReceived", "ResponseComplete"]
    assert get[-1]["level"] == "Metadata" and "responseObject" not in get[-1] and "requestObject" not in get[-1]
    assert get[-1]["objectRef"] == {"resource": "configmaps", "namespace": "default", "name": "nope",
                                    "apiVersion": "v1"}
    assert get[-1]["responseStatus"] == {"metadata": {}, "status": "Failure",
                                         "message": 'configmaps "nope" not found', "reason": "NotFound", "code": 404}


async def test_secure_mode_records_users_groups_impersonation_and_authorization(tmp_path: Path) -> None:
    policy = POLICY.replace("rules:", "omitStages: [RequestReceived]\nrules:")
    async with secure_server(tmp_path, app_options={"audit": auditor(tmp_path, policy)}) as secure:
        admin, alice = secure.session("admin"), secure.session("alice")
        code, _ = await call(admin, "POST", CLAIMS, CLAIM, headers={"X-Request-Id": "admin-create"})
        assert code == 201
        code, _ = await call(alice, "GET", CLAIMS, headers={"X-Request-Id": "alice-list"})
        assert code == 403
        code, _ = await call(admin, "GET", "/api/v1/namespaces/default/configmaps",
                             headers={"X-Request-Id": "as-bob", "Impersonate-User": "bob"})
        assert code == 403
        code, _ = await call(secure.session(), "GET", "/api/v1/pods", headers={"X-Request-Id": "anonymous"})
        assert code == 401
        found = await events(secure.srv.app, tmp_path / "audit.log")
    create = by_id(found, "admin-create")
    assert [e["stage"] for e in create] == ["ResponseComplete"]  # RequestReceived omitted
    assert create[0]["user"] == {"username": "cplane-admin", "groups": ["system:masters", "system:authenticated"]}
    assert create[0]["annotations"] == {"authorization.k8s.io/decision": "allow",
                                        "authorization.k8s.io/reason": "allowed: system:masters"}
    assert create[0]["requestObject"] == CLAIM
    listed = by_id(found, "alice-list")
    assert len(listed) == 1
    assert listed[0]["user"] == {"username": "alice", "uid": "uid-alice", "groups": ["system:authenticated"]}
    assert listed[0]["verb"] == "list" and listed[0]["annotations"] == {
        "authorization.k8s.io/decision": "forbid", "authorization.k8s.io/reason": ""}
    assert listed[0]["responseStatus"]["code"] == 403 and listed[0]["responseStatus"]["reason"] == "Forbidden"
    assert "responseObject" not in listed[0] and "requestObject" not in listed[0]
    bob = by_id(found, "as-bob")[0]
    assert bob["user"]["username"] == "cplane-admin"
    assert bob["impersonatedUser"] == {"username": "bob", "groups": ["system:authenticated"]}
    assert bob["annotations"]["authorization.k8s.io/decision"] == "forbid"
    assert bob["level"] == "Metadata" and bob["objectRef"] == {"resource": "configmaps", "namespace": "default",
                                                               "apiVersion": "v1"}
    anonymous = by_id(found, "anonymous")
    assert [e["stage"] for e in anonymous] == ["ResponseStarted"]
    assert anonymous[0]["user"] == {} and anonymous[0]["verb"] == "list"
    assert anonymous[0]["objectRef"] == {"resource": "pods", "apiVersion": "v1"}
    assert anonymous[0]["responseStatus"] == {"metadata": {}, "status": "Failure", "message": "Unauthorized",
                                              "reason": "Unauthorized", "code": 401}


def _serve_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    serve.add_parser(parser.add_subparsers())
    return parser.parse_args(["serve", "--data-dir", "d", *argv])


def test_a_policy_file_that_cannot_be_used_stops_cplane_serve(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "policy.yaml"
    log = str(tmp_path / "audit.log")
    bad.write_text("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Everything\n")
    assert serve.run(_serve_args("--audit-policy-file", str(bad), "--audit-log-path", log)) == 2
    err = capsys.readouterr().err
    assert err == (f'cplane serve: --audit-policy-file: rules[0].level: Unsupported value: "Everything": supported '
                   f'values: "None", "Metadata", "Request", "RequestResponse": from file {bad}\n')
    assert serve.run(_serve_args("--audit-policy-file", str(tmp_path / "missing.yaml"), "--audit-log-path", log)) == 2
    assert "failed to read file path" in capsys.readouterr().err
    bad.write_text("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: []\n")
    assert serve.run(_serve_args("--audit-policy-file", str(bad))) == 2  # checked without a log too
    assert "loaded illegal policy with 0 rules" in capsys.readouterr().err
    bad.write_text(POLICY)
    assert serve.run(_serve_args("--audit-policy-file", str(bad), "--audit-log-path",
                                 str(tmp_path / "no" / "dir" / "audit.log"))) == 2
    assert capsys.readouterr().err.startswith("cplane serve: --audit-log-path: ")
    assert serve.run(_serve_args("--audit-policy-file", str(bad), "--audit-log-maxbackup", "-1")) == 2
    assert "--audit-log-maxbackup -1 can't be a negative number" in capsys.readouterr().err
    assert serve.run(_serve_args("--audit-policy-file", str(bad), "--audit-log-maxage", "-2")) == 2
    assert "--audit-log-maxage -2 can't be a negative number" in capsys.readouterr().err


async def test_the_log_rotates_as_kube_apiservers(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    log = audits.AuditLog(str(path), max_size_mb=1, max_backups=2)
    assert log.path == str(path)
    line = b"x" * (300 * 1024 - 1) + b"\n"
    for _ in range(10):
        log.put(lambda: line)
    await log.close()
    assert path.stat().st_mode & 0o777 == 0o600
    backups = sorted(p.name for p in tmp_path.iterdir() if p != path)  # noqa: ASYNC240
    assert len(backups) == 2 and all(re.fullmatch(r"audit-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3}\.log", b)
                                     for b in backups), backups
    assert path.stat().st_size == len(line)


async def _panic(request: web.Request) -> web.StreamResponse:
    raise RuntimeError("something broke")


async def _unavailable(request: web.Request) -> web.StreamResponse:
    raise log.UnavailableError("the event log's database is unavailable")


async def test_watches_have_a_response_started_and_errors_a_status_or_a_panic(tmp_path: Path) -> None:
    """Also without authentication at all (the test sandbox's app): everyone is the admin."""
    the_log = memory.MemoryEventLog()
    await the_log.start()
    routes = [web.get("/test/panic", _panic), web.get("/test/unavailable", _unavailable)]
    try:
        async with servers.running(data_dir=tmp_path / "data", event_log=the_log,
                                   app_options={"audit": auditor(tmp_path), "routes": routes}) as srv:
            async with aiohttp.ClientSession(srv.url) as http:
                async with http.post(CLAIMS, json=CLAIM) as r:
                    assert r.status == 201
                watch = await http.get(f"{CLAIMS}?watch=true&resourceVersion=0", headers={"X-Request-Id": "watch-1"})
                assert watch.status == 200
                assert b'"type":"ADDED"' in await watch.content.readline()
                async with http.get("/test/panic", headers={"X-Request-Id": "panic-1"}) as r:
                    assert r.status == 500
                async with http.get("/test/unavailable", headers={"X-Request-Id": "unavailable-1"}) as r:
                    assert r.status == 503
                # the server stops with the watch open: it ends as the response started
            watch.close()
    finally:
        await the_log.close()
    found = [json.loads(line) for line in (tmp_path / "audit.log").read_bytes().splitlines()]
    watched = by_id(found, "watch-1")
    assert [e["stage"] for e in watched] == ["RequestReceived", "ResponseStarted", "ResponseComplete"]
    assert watched[1]["responseStatus"] == watched[2]["responseStatus"] == {"metadata": {}, "code": 200}
    assert watched[0]["verb"] == "watch" and "responseObject" not in watched[2]
    assert watched[0]["user"] == {"username": "system:admin", "groups": ["system:masters", "system:authenticated"]}
    panic = by_id(found, "panic-1")
    assert [e["stage"] for e in panic] == ["RequestReceived", "Panic"]
    assert panic[1]["responseStatus"] == {"metadata": {}, "status": "Failure",
                                          "message": "APIServer panic'd: something broke", "reason": "InternalError",
                                          "code": 500}
    assert panic[1]["verb"] == "get" and "objectRef" not in panic[1]
    unavailable = by_id(found, "unavailable-1")[-1]
    assert unavailable["stage"] == "ResponseComplete" and unavailable["responseStatus"]["code"] == 503
    assert unavailable["responseStatus"]["reason"] == "ServiceUnavailable"


async def test_admission_annotations_join_the_events(tmp_path: Path) -> None:
    adm = "/apis/admissionregistration.k8s.io/v1"
    rules = {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                                "resources": ["configmaps"]}]}
    async with insecure_server(tmp_path, auditor(tmp_path)) as srv, aiohttp.ClientSession(srv.url) as http:
        async with http.post(f"{adm}/validatingadmissionpolicies", json={"metadata": {"name": "audited"}, "spec": {
                "matchConstraints": rules, "validations": [{"expression": "has(object.data)", "message": "no data"}],
                "auditAnnotations": [{"key": "keys", "valueExpression": "string(size(object.metadata.name))"}]}}) as r:
            assert r.status == 201
        async with http.post(f"{adm}/validatingadmissionpolicybindings", json={
                "metadata": {"name": "audited"}, "spec": {"policyName": "audited", "validationActions": ["Audit"]}}) as r:
            assert r.status == 201
        async with http.post("/api/v1/namespaces/default/configmaps", json={"metadata": {"name": "abc"}},
                             headers={"X-Request-Id": "cm-1"}) as r:
            assert r.status == 201
        found = await events(srv.app, tmp_path / "audit.log")
    received, complete = by_id(found, "cm-1")
    assert "annotations" not in received
    assert list(complete["annotations"].items()) == [
        ("audited/keys", "3"),
        ("validation.policy.admission.k8s.io/validation_failure",
         '[{"message":"no data","policy":"audited","binding":"audited","expressionIndex":0,'
         '"validationActions":["Audit"]}]')]


async def test_cplane_serve_writes_the_log_its_flags_name(tmp_path: Path) -> None:
    (tmp_path / "policy.yaml").write_text(POLICY)
    data, path = tmp_path / "data", tmp_path / "audit.log"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "cp.cli", "serve", "--data-dir", str(data), "--port", "0", "--insecure",
        "--no-controllers", "--log-level", "warning", "--audit-policy-file", str(tmp_path / "policy.yaml"),
        "--audit-log-path", str(path), stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    try:
        kubeconfig = data / "kubeconfig"
        await waiting.eventually(lambda: kubeconfig.exists() or proc.returncode is not None, within=30,
                                 what="the server's kubeconfig")
        assert proc.returncode is None
        url = next(line.split("server:")[1].strip() for line in kubeconfig.read_text().splitlines()
                   if "server:" in line)
        async with aiohttp.ClientSession(url) as http:
            async def ready() -> bool:
                async with http.get("/readyz") as r:
                    return r.status == 200

            await waiting.eventually(ready, within=30, what="/readyz")
            async with http.post(CLAIMS, json=CLAIM, headers={"X-Request-Id": "serve-1"}) as r:
                assert r.status == 201 and r.headers["Audit-Id"] == "serve-1"
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
        async with asyncio.timeout(30):
            assert await proc.wait() == 0
    assert path.stat().st_mode & 0o777 == 0o600
    found = [json.loads(line) for line in path.read_bytes().splitlines()]
    stages = [(e["stage"], e["level"], e.get("responseStatus", {}).get("code")) for e in by_id(found, "serve-1")]
    assert stages == [("RequestReceived", "RequestResponse", None), ("ResponseComplete", "RequestResponse", 201)]
    assert all(e["auditID"] != "" and e["user"]["username"] == "system:admin" for e in found)


async def test_old_logs_are_compressed_and_removed_by_age(tmp_path: Path) -> None:
    """`--audit-log-compress` gzips the rotated files (the import reads them as they are);
    `--audit-log-maxage` removes those older than its days by the time in their names."""
    path = tmp_path / "audit.log"
    ancient = tmp_path / "audit-2020-01-01T00-00-00.000.log.gz"
    ancient.write_bytes(gzip.compress(b"{}\n"))
    stranger = tmp_path / "audit-notes.log"  # not a backup's name: left alone
    stranger.write_bytes(b"mine\n")
    log = audits.AuditLog(str(path), max_size_mb=1, max_age_days=30, compress=True)
    line = b"y" * (600 * 1024 - 1) + b"\n"
    for _ in range(3):
        log.put(lambda: line)
    await log.close()
    names = sorted(p.name for p in tmp_path.iterdir())  # noqa: ASYNC240
    backups = [n for n in names if re.fullmatch(r"audit-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3}\.log\.gz", n)]
    assert len(backups) == 2 and ancient.name not in names and stranger.exists(), names
    assert sorted(names) == sorted([*backups, "audit.log", "audit-notes.log"])
    assert gzip.decompress((tmp_path / backups[0]).read_bytes()) == line
    assert (tmp_path / backups[0]).stat().st_mode & 0o777 == 0o600


async def test_an_admission_webhooks_audit_annotations_are_in_the_event(tmp_path: Path) -> None:
    from tests.webhook_servers import WebhookServer, allow

    rr = "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n"
    async with WebhookServer() as hooks, insecure_server(tmp_path, auditor(tmp_path, rr)) as srv, \
            aiohttp.ClientSession(srv.url) as http:
        hooks.route("/check", lambda review: allow(review, auditAnnotations={"verdict": "checked", "rule": "r-7"}))
        webhook = {"name": "checks.example.com", "clientConfig": {"url": hooks.url("/check"), "caBundle": hooks.ca_bundle},
                   "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                              "resources": ["configmaps"]}],
                   "sideEffects": "None", "admissionReviewVersions": ["v1"]}
        async with http.post("/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
                             json={"metadata": {"name": "checks"}, "webhooks": [webhook]}) as r:
            assert r.status == 201, await r.text()
        async with http.post("/api/v1/namespaces/default/configmaps", json={"metadata": {"name": "c"}},
                             headers={"X-Request-Id": "cm-1"}) as r:
            assert r.status == 201, await r.text()
        [done] = by_id(await events(srv.app, tmp_path / "audit.log"), "cm-1")
    assert done["annotations"]["checks.example.com/verdict"] == "checked"
    assert done["annotations"]["checks.example.com/rule"] == "r-7"
