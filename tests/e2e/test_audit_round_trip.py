"""The audit log both ways: what `cplane serve --audit-log-path` writes at RequestResponse level, imported
by `cplane log import --audit` into an empty store, reproduces the source's objects — every field but
the resourceVersion (the log's own revision) — for creates, updates, patches (status too), deletes, a
pod's binding, a deployment's scale and a no-op update, with each write's user and audit ID."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import aiohttp

from cp.cli import log_audit
from storage import factory
from tests.api.test_audit import auditor, events, insecure_server

POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  nonResourceURLs: ["*"]
- level: RequestResponse
"""
KINDS = (("", "configmaps"), ("", "pods"), ("resource.k8s.io", "resourceclaims"), ("apps", "deployments"))


async def _write(http: aiohttp.ClientSession, method: str, path: str, body: Any = None,
                 content_type: str = "application/json") -> None:
    data = None if body is None else json.dumps(body)
    async with http.request(method, path, data=data, headers={"Content-Type": content_type}) as r:
        assert r.status < 300, await r.text()


def _bare(obj: dict[str, Any]) -> dict[str, Any]:
    meta = {k: v for k, v in obj["metadata"].items() if k != "resourceVersion"}
    return {**obj, "metadata": meta}


async def _state(log: Any) -> dict[tuple[str, str, str, str], dict[str, Any]]:
    out = {}
    for group, resource in KINDS:
        listed = await log.list_objects(group=group, resource=resource, namespace=None)
        for e in listed.events:
            if e.namespace == "default":
                out[(group, resource, e.namespace, e.name)] = _bare(json.loads(e.object))
    return out


async def test_a_cplane_audit_log_imports_as_the_same_objects(tmp_path: Path) -> None:
    source_auditor = auditor(tmp_path, POLICY)
    async with insecure_server(tmp_path, source_auditor) as srv, aiohttp.ClientSession(base_url=srv.url) as http:
        cms, pods = "/api/v1/namespaces/default/configmaps", "/api/v1/namespaces/default/pods"
        claims = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
        await _write(http, "POST", cms, {"metadata": {"name": "settings"}, "data": {"mode": "fast"}})
        await _write(http, "POST", cms, {"metadata": {"name": "gone"}, "data": {}})
        await _write(http, "PATCH", f"{cms}/settings", {"data": {"mode": "slow"}}, "application/merge-patch+json")
        await _write(http, "DELETE", f"{cms}/gone")
        await _write(http, "POST", pods, {"metadata": {"name": "web", "labels": {"app": "web"}}, "spec": {
            "containers": [{"name": "main", "image": "nginx:1.27"}]}})
        await _write(http, "PATCH", f"{pods}/web/status", {"status": {"phase": "Running"}},
                     "application/merge-patch+json")
        await _write(http, "POST", claims, {"metadata": {"name": "gpu"}, "spec": {"devices": {"requests": [
            {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}})
        await _write(http, "PATCH", f"{claims}/gpu?fieldManager=tuner", {"metadata": {"labels": {"tier": "a"}}},
                     "application/merge-patch+json")
        await _write(http, "PATCH", f"{cms}/settings", {"data": {"mode": "slow"}},  # changes nothing
                     "application/merge-patch+json")
        await _write(http, "POST", pods, {"metadata": {"name": "bound"}, "spec": {
            "containers": [{"name": "main", "image": "nginx:1.27"}]}})
        await _write(http, "POST", f"{pods}/bound/binding", {"apiVersion": "v1", "kind": "Binding", "metadata": {
            "name": "bound", "annotations": {"example.com/placed-by": "test"}}, "target": {"name": "node-1"}})
        deployments = "/apis/apps/v1/namespaces/default/deployments"
        await _write(http, "POST", deployments, {"metadata": {"name": "api"}, "spec": {
            "replicas": 1, "selector": {"matchLabels": {"app": "api"}}, "template": {
                "metadata": {"labels": {"app": "api"}}, "spec": {"containers": [{"name": "c", "image": "api:1"}]}}}})
        await _write(http, "PATCH", f"{deployments}/api/scale", {"spec": {"replicas": 4}},
                     "application/merge-patch+json")
        written = await events(srv.app, tmp_path / "audit.log")
        source = await _state(srv.event_log)

    assert {e["stage"] for e in written} == {"ResponseComplete"}
    data = tmp_path / "imported"
    args = argparse.Namespace(audit=[tmp_path / "audit.log"], keep_secrets=True, data_dir=data, db=None)
    assert await log_audit.run(args, store_url=f"sqlite+aiosqlite:///{data / 'cplane.db'}") == 0
    imported_log = factory.open_event_log(url=f"sqlite+aiosqlite:///{data / 'cplane.db'}")
    await imported_log.start()
    try:
        imported = await _state(imported_log)
        claim = await imported_log.get(group="resource.k8s.io", resource="resourceclaims", namespace="default",
                                       name="gpu")
    finally:
        await imported_log.close()
    # The binding's PodScheduled time is the server's clock while it wrote (to the second); the import
    # takes the audit event's: the second the request was received or completed.
    bound = next(e for e in written if e["objectRef"].get("subresource") == "binding")
    seconds = (bound["requestReceivedTimestamp"][:19] + "Z", bound["stageTimestamp"][:19] + "Z")
    for state in (source, imported):
        [condition] = state[("", "pods", "default", "bound")]["status"]["conditions"]
        assert seconds[0] <= condition.pop("lastTransitionTime") <= seconds[1]
    assert imported == source
    assert sorted(k[3] for k in imported) == ["api", "bound", "gpu", "settings", "web"]
    assert imported[("apps", "deployments", "default", "api")]["spec"]["replicas"] == 4
    assert imported[("", "pods", "default", "bound")]["spec"]["nodeName"] == "node-1"
    assert imported[("", "pods", "default", "web")]["status"]["phase"] == "Running"
    assert claim is not None and claim.actor.field_manager == "tuner"
    assert claim.actor.request_id.startswith("source=") and claim.actor.user == "system:admin"
