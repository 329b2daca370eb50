"""The real kubectl 1.37.1 against the StatefulSet controller, the scheduler, the garbage collector and
a 2-node fleet: `kubectl apply` of a StatefulSet of 3 with a claim template, `kubectl rollout status
sts/web` waits until the pods came up in order (web-0, web-1, web-2) with their claims; a rolling
update through `kubectl set image` followed by `rollout status`; `rollout undo` and `rollout history`;
`kubectl scale`. Skipped without kubectl."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from cp import testing
from tests.kubectl.conftest import Kubectl, kubectl_on

FLEET = {"apiVersion": "sim.cplane.dev/v1alpha1", "kind": "Fleet", "metadata": {"name": "sts"},
         "nodePools": [{"name": "node", "count": 2}]}
CONTROLLERS = ["garbage-collector", "scheduler", "statefulset"]

STATEFULSET = """\
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web, namespace: default}
spec:
  replicas: 3
  serviceName: web
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 0
      containers: [{name: web, image: "web:1"}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
"""


@pytest.fixture
async def kubectl(cplane_sandbox: testing.Sandbox, tmp_path: Path) -> AsyncIterator[Kubectl]:
    async with kubectl_on(cplane_sandbox, tmp_path) as k:
        yield k


@pytest.mark.kubectl
@pytest.mark.cplane(controllers=CONTROLLERS, fleet=FLEET)
async def test_statefulset_comes_up_in_order(kubectl: Kubectl) -> None:
    await kubectl("apply", "-f", kubectl.write("sts.yaml", STATEFULSET))
    r = await kubectl("rollout", "status", "sts/web", "--timeout=60s", timeout=70)
    assert r.stdout.strip().endswith("partitioned roll out complete: 3 new pods have been updated...")
    rows = (await kubectl("get", "pods", "--sort-by=.metadata.creationTimestamp")).rows()[1:]
    assert [row[0] for row in rows] == ["web-0", "web-1", "web-2"]
    assert all(row[1] == "1/1" and row[2] == "Running" for row in rows)
    assert (await kubectl.jsonpath("pvc", path="{.items[*].metadata.name}")).split() == \
        ["data-web-0", "data-web-1", "data-web-2"]
    rows = (await kubectl("get", "sts", "web")).rows()
    assert rows[0][:2] == ["NAME", "READY"] and rows[1][1] == "3/3"

    await kubectl("set", "image", "sts/web", "web=web:2")
    r = await kubectl("rollout", "status", "sts/web", "--timeout=60s", timeout=70)
    assert r.stdout.strip().endswith("partitioned roll out complete: 3 new pods have been updated...")
    assert (await kubectl.jsonpath("pods", path="{.items[*].spec.containers[0].image}")).split() == ["web:2"] * 3

    r = await kubectl("rollout", "undo", "sts/web")
    assert r.stdout.strip() == "statefulset.apps/web rolled back"
    r = await kubectl("rollout", "status", "sts/web", "--timeout=60s", timeout=70)
    assert r.stdout.strip().endswith("partitioned roll out complete: 3 new pods have been updated...")
    assert (await kubectl.jsonpath("pods", path="{.items[*].spec.containers[0].image}")).split() == ["web:1"] * 3
    history = (await kubectl("rollout", "history", "sts/web")).lines
    assert [line.split()[0] for line in history[2:] if line.strip()] == ["2", "3"]

    await kubectl("scale", "sts/web", "--replicas=1")
    await kubectl("wait", "--for=delete", "pod/web-2", "pod/web-1", "--timeout=60s", timeout=70)
    assert (await kubectl.jsonpath("pods", path="{.items[*].metadata.name}")).split() == ["web-0"]
    # whenScaled: Retain (the default) keeps the claims.
    assert len((await kubectl.jsonpath("pvc", path="{.items[*].metadata.name}")).split()) == 3
