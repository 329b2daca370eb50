"""The DaemonSet and StatefulSet controllers on a secure server (TLS, RBAC), each acting as its own
ServiceAccount (`daemon-set-controller`, `statefulset-controller`) with the roles of cp/rbac.py, as
`cplane serve` runs them: a DaemonSet whose first revision name is taken (collisionCount bumped:
a live GET and a status update) rolls out on every fleet node, and a StatefulSet with claims under
Delete/Delete comes up and scales down with its claims garbage-collected (claims created and patched).
A refused write would leave them stuck."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from api import auth
from api import server as servers
from controllers import fleet as fleets
from controllers import registry
from controllers.runtime import client as clients
from controllers.statefulset import rules as sts_rules
from storage import memory
from tests.waiting import eventually

FLEET = {"apiVersion": "sim.cplane.dev/v1alpha1", "kind": "Fleet", "metadata": {"name": "rbac"},
         "nodePools": [{"name": "node", "count": 2}]}
NAMES = ["garbage-collector", "scheduler", "fleet", "daemonset", "statefulset"]


@pytest.fixture
async def admin(tmp_path: Path) -> AsyncIterator[clients.Client]:
    log = memory.MemoryEventLog()
    await log.start()
    try:
        async with servers.running(data_dir=tmp_path / "data", event_log=log, secure=True) as srv:
            assert srv.auth is not None and srv.auth.credentials is not None
            ca = srv.auth.credentials.ca_cert

            def identity(name: str) -> clients.Client:
                return clients.Client(srv.url, token=auth.controller_token(srv.auth, name),
                                      ssl_context=auth.client_ssl_context(ca), root_ca=ca.decode())

            stop, ready = asyncio.Event(), asyncio.Event()
            task = asyncio.ensure_future(registry.run_controllers(
                server_url=srv.url, names=NAMES, stop_event=stop, ready=ready, identities=identity,
                overrides={fleets.NAME: fleets.factory(fleets.fleet_from_dict(FLEET))}))
            await asyncio.wait_for(ready.wait(), 20)
            async with clients.Client(srv.url, token=srv.auth.credentials.admin_token,
                                      ssl_context=auth.client_ssl_context(ca)) as client:
                try:
                    yield client
                finally:
                    stop.set()
                    await asyncio.wait_for(task, 20)
    finally:
        await log.close()


def _template(app: str) -> dict[str, Any]:
    return {"metadata": {"labels": {"app": app}},
            "spec": {"terminationGracePeriodSeconds": 0, "containers": [{"name": "c", "image": "i"}]}}


async def test_controllers_act_with_their_own_roles(admin: clients.Client) -> None:
    from controllers.daemonset import rules as ds_rules

    ds = {"metadata": {"name": "agent", "namespace": "default"},
          "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": _template("agent")}}
    defaulted = await admin.create("daemonsets.apps", ds, dry_run=True)
    await admin.create("controllerrevisions.apps", {
        "metadata": {"name": f"agent-{ds_rules.template_hash(defaulted)}", "namespace": "default"},
        "data": {"other": True}, "revision": 1})
    await admin.create("daemonsets.apps", ds)
    sts = {"metadata": {"name": "web", "namespace": "default"},
           "spec": {"replicas": 2, "serviceName": "web", "selector": {"matchLabels": {"app": "web"}},
                    "template": _template("web"),
                    "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete", "whenScaled": "Delete"},
                    "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}}
    await admin.create("statefulsets.apps", sts)

    async def both_up() -> bool:
        d = (await admin.get("daemonsets.apps", "agent", namespace="default")).get("status") or {}
        s = (await admin.get("statefulsets.apps", "web", namespace="default")).get("status") or {}
        return (d.get("numberAvailable") == 2 and d.get("updatedNumberScheduled") == 2
                and d.get("collisionCount") == 1 and s.get("readyReplicas") == 2)

    await eventually(both_up, within=30, what="the DaemonSet and the StatefulSet up")
    claims = (await admin.list("persistentvolumeclaims", namespace="default")).items
    assert sorted(c["metadata"]["name"] for c in claims) == ["data-web-0", "data-web-1"]
    await admin.patch("statefulsets.apps", "web", {"spec": {"replicas": 1}}, namespace="default", subresource="scale")

    async def scaled() -> bool:
        names = {c["metadata"]["name"] for c in (await admin.list("persistentvolumeclaims", namespace="default")).items
                 if not c["metadata"].get("deletionTimestamp")}
        pods = {p["metadata"]["name"] for p in (await admin.list("pods", namespace="default")).items
                if sts_rules.is_member(sts, p) and not p["metadata"].get("deletionTimestamp")}
        return names == {"data-web-0"} and pods == {"web-0"}

    await eventually(scaled, within=30, what="web-1 and its claim gone")
