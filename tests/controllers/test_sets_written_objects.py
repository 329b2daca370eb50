"""What the DaemonSet and StatefulSet controllers write reads in the typed clients and validates
strictly against the 1.37 schema: DaemonSet and StatefulSet status, ControllerRevisions, daemon and
stateful pods, claims from volumeClaimTemplates (`kubernetes` 37's `ApiClient.deserialize` and the
strict schema, as tests/e2e/test_written_objects_read_typed.py does for the other controllers)."""

from __future__ import annotations

from typing import Any

import pytest

from cp import testing
from tests.clients import support
from tests.controllers.daemonset.test_daemonset_integration import _ds, _rolled_out
from tests.controllers.statefulset.test_statefulset_integration import _settled, _sts

FLEET = {"apiVersion": "sim.cplane.dev/v1alpha1", "kind": "Fleet", "metadata": {"name": "sets"},
         "nodePools": [{"name": "node", "count": 2}]}


@pytest.mark.cplane(controllers=["garbage-collector", "scheduler", "daemonset", "statefulset"], fleet=FLEET)
async def test_written_objects_read_typed(cplane_sandbox: testing.Sandbox) -> None:
    sb = cplane_sandbox
    await sb.client.create("daemonsets.apps", _ds())
    await sb.client.create("statefulsets.apps", _sts(persistentVolumeClaimRetentionPolicy={
        "whenDeleted": "Delete", "whenScaled": "Delete"}))
    await sb.wait_for(lambda: _rolled_out(sb, "agent", 2), timeout=30)
    await sb.wait_for(lambda: _settled(sb), timeout=30)
    problems: list[str] = []
    seen: dict[str, int] = {}
    for plural, api_version, kind in (("daemonsets.apps", "apps/v1", "DaemonSet"),
                                      ("statefulsets.apps", "apps/v1", "StatefulSet"),
                                      ("controllerrevisions.apps", "apps/v1", "ControllerRevision"),
                                      ("pods", "v1", "Pod"), ("persistentvolumeclaims", "v1", "PersistentVolumeClaim")):
        for item in (await sb.client.list(plural, namespace="default")).items:
            obj: dict[str, Any] = {"apiVersion": api_version, "kind": kind, **item}
            seen[kind] = seen.get(kind, 0) + 1
            name = f"{kind} {obj['metadata']['name']}"
            problems += [f"{name}: {p}" for p in support.schema_problems(obj) + support.typed_problems(obj)]
    assert seen == {"DaemonSet": 1, "StatefulSet": 1, "ControllerRevision": 2, "Pod": 5,
                    "PersistentVolumeClaim": 3}
    assert not problems, "\n".join(problems)
