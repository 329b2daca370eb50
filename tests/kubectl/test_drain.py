"""kubectl cordon, uncordon and drain on fleet nodes, with the controllers that make a Deployment's
pods come back elsewhere (scheduler, deployment, replicaset, disruption) on real time: drain evicts
through pods/eviction, is refused (429) while the PodDisruptionBudget allows no disruption, retries
(kubectl waits 5 s between attempts) and finishes once the replacement runs on the other node.

Out of scope: the eviction answers one by one (tests/api/test_eviction.py), the budget arithmetic
(tests/cp/test_disruption.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from cp import testing
from tests.kubectl.conftest import Kubectl, kubectl_on

FLEET = {"apiVersion": "sim.cplane.dev/v1alpha1", "kind": "Fleet", "metadata": {"name": "drain"},
         "nodePools": [{"name": "node", "count": 2}]}
CONTROLLERS = ["garbage-collector", "replicaset", "deployment", "scheduler", "disruption"]

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 0
      containers: [{name: web, image: nginx}]
      volumes: [{name: scratch, emptyDir: {}}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web}
spec:
  maxUnavailable: 1
  selector: {matchLabels: {app: web}}
"""


@pytest.fixture
async def kubectl(cplane_sandbox: testing.Sandbox, tmp_path: Path) -> AsyncIterator[Kubectl]:
    async with kubectl_on(cplane_sandbox, tmp_path) as k:
        yield k


async def _pods(sb: testing.Sandbox) -> list[dict[str, Any]]:
    return [p for p in (await sb.client.list("pods", namespace="default")).items
            if not p["metadata"].get("deletionTimestamp")]


def _running_on(pods: list[dict[str, Any]], node: str) -> list[str]:
    return [p["metadata"]["name"] for p in pods if p["spec"].get("nodeName") == node
            and any(c.get("type") == "Ready" and c.get("status") == "True"
                    for c in (p.get("status") or {}).get("conditions") or [])]


@pytest.mark.cplane(controllers=CONTROLLERS, fleet=FLEET)
async def test_cordon_and_uncordon(cplane_sandbox: testing.Sandbox, kubectl: Kubectl) -> None:
    r = await kubectl("cordon", "node-0")
    assert r.stdout.strip() == "node/node-0 cordoned"
    assert await kubectl.jsonpath("node", "node-0", path="{.spec.unschedulable}") == "true"
    rows = {row[0]: row[1] for row in (await kubectl("get", "nodes")).rows()[1:]}
    assert rows == {"node-0": "Ready,SchedulingDisabled", "node-1": "Ready"}
    assert (await kubectl("cordon", "node-0")).stdout.strip() == "node/node-0 already cordoned"
    assert (await kubectl("uncordon", "node-0")).stdout.strip() == "node/node-0 uncordoned"
    assert await kubectl.jsonpath("node", "node-0", path="{.spec.unschedulable}") == ""


@pytest.mark.cplane(controllers=CONTROLLERS, fleet=FLEET)
async def test_drain_respects_the_budget_and_pods_come_back_elsewhere(cplane_sandbox: testing.Sandbox,
                                                                      kubectl: Kubectl) -> None:
    sb = cplane_sandbox
    await kubectl("cordon", "node-1")  # both replicas land on node-0
    await kubectl("apply", "-f", kubectl.write("web.yaml", DEPLOYMENT))

    async def both_on_node_0() -> bool:
        return len(_running_on(await _pods(sb), "node-0")) == 2

    await sb.wait_for(both_on_node_0, timeout=20)

    async def budget_allows_one() -> bool:
        pdb = await sb.client.get("poddisruptionbudgets.policy", "web", namespace="default")
        return (pdb.get("status") or {}).get("disruptionsAllowed") == 1

    await sb.wait_for(budget_allows_one, timeout=20)
    rows = (await kubectl("get", "pdb")).rows()
    assert rows[0] == ["NAME", "MIN AVAILABLE", "MAX UNAVAILABLE", "ALLOWED DISRUPTIONS", "AGE"]
    assert rows[1][:4] == ["web", "N/A", "1", "1"]
    await kubectl("uncordon", "node-1")

    r = await kubectl("drain", "node-0", "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=60s",
                      timeout=90)
    assert "node/node-0 cordoned" in r.stdout
    assert r.stdout.count("evicted") == 2, r.stdout
    assert r.stdout.rstrip().endswith("node/node-0 drained")
    # the second eviction was refused until the first pod's replacement ran on node-1
    assert "Cannot evict pod as it would violate the pod's disruption budget." in r.stderr, r.stderr
    assert "will retry after 5s" in r.stderr

    async def back_on_node_1() -> bool:
        return len(_running_on(await _pods(sb), "node-1")) == 2

    await sb.wait_for(back_on_node_1, timeout=20)
    assert await kubectl.jsonpath("node", "node-0", path="{.spec.unschedulable}") == "true"
    assert not [p for p in await _pods(sb) if p["spec"].get("nodeName") == "node-0"]
