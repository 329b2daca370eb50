"""The real kubectl on the kinds served in a second version: `kubectl get events.v1.events.k8s.io`,
`kubectl get hpa.v1.autoscaling` (Tables and objects of the asked version), and `kubectl autoscale`,
whose HorizontalPodAutoscaler reads back through autoscaling/v1.

Out of scope: the conversions themselves (tests/cp/test_conversions.py, tests/api/test_served_versions.py).
"""

from __future__ import annotations

import json

import aiohttp

from tests.kubectl.conftest import Kubectl

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx}]
"""


async def test_get_events_in_both_versions(kubectl: Kubectl, api: aiohttp.ClientSession) -> None:
    event = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "web.1"},
             "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "example.com/ctl",
             "reportingInstance": "ctl-1", "action": "Scale", "reason": "Scaled", "type": "Normal",
             "regarding": {"kind": "Deployment", "namespace": "default", "name": "web"}, "note": "scaled up"}
    async with api.post("/apis/events.k8s.io/v1/namespaces/default/events", json=event) as r:
        assert r.status == 201, await r.text()
    rows = (await kubectl("get", "events.v1.events.k8s.io")).rows()
    assert rows[0] == ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert rows[1][1:] == ["Normal", "Scaled", "deployment/web", "scaled up"]
    v1 = (await kubectl("get", "events.v1.events.k8s.io", "web.1", "-o", "json")).json()
    assert (v1["apiVersion"], v1["note"], v1["regarding"]["name"]) == ("events.k8s.io/v1", "scaled up", "web")
    core = (await kubectl("get", "events", "web.1", "-o", "json")).json()
    assert (core["apiVersion"], core["message"], core["involvedObject"]["name"]) == ("v1", "scaled up", "web")


async def test_autoscale_and_get_hpa_v1(kubectl: Kubectl) -> None:
    await kubectl("apply", "-f", kubectl.write("web.yaml", DEPLOYMENT))
    r = await kubectl("autoscale", "deployment", "web", "--min=2", "--max=5", "--cpu-percent=70")
    assert r.stdout.strip() == "horizontalpodautoscaler.autoscaling/web autoscaled"
    v2 = (await kubectl("get", "hpa", "web", "-o", "json")).json()
    assert v2["apiVersion"] == "autoscaling/v2"
    assert v2["spec"]["metrics"] == [{"type": "Resource", "resource": {"name": "cpu", "target": {
        "type": "Utilization", "averageUtilization": 70}}}]
    # The resource's full name: kubectl's short-name expansion keeps group and resource but not the
    # version (`hpa.v1.autoscaling` is read at the preferred version, v2), a client-side choice.
    v1 = (await kubectl("get", "horizontalpodautoscalers.v1.autoscaling", "web", "-o", "json")).json()
    assert v1["apiVersion"] == "autoscaling/v1"
    assert v1["spec"] == {"scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
                          "minReplicas": 2, "maxReplicas": 5, "targetCPUUtilizationPercentage": 70}
    rows = (await kubectl("get", "hpa.v1.autoscaling")).rows()
    full = (await kubectl("get", "horizontalpodautoscalers.v1.autoscaling")).rows()
    assert [r[:-1] for r in rows] == [r[:-1] for r in full]  # all but AGE
    assert rows[0][:4] == ["NAME", "REFERENCE", "TARGETS", "MINPODS"]
    assert rows[1][:2] == ["web", "Deployment/web"]
    # an edit through v1 is seen through v2
    await kubectl("patch", "horizontalpodautoscalers.v1.autoscaling", "web", "--type=merge", "-p",
                  json.dumps({"spec": {"targetCPUUtilizationPercentage": 55}}))
    target = await kubectl.jsonpath("hpa", "web", path="{.spec.metrics[0].resource.target.averageUtilization}")
    assert target == "55"


HPA_V1 = """\
apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: {max}
  targetCPUUtilizationPercentage: {cpu}
"""


HPA_V2_CPU = """\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 4
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 90}}
"""


async def test_server_side_apply_of_an_hpa_v1_manifest(kubectl: Kubectl) -> None:
    """Helm v4 and `kubectl apply --server-side` apply a chart's autoscaling/v1 HPA as written: the
    configuration is merged in v1 and the manager owns v1's fields (its entry at autoscaling/v1); a
    second apply changes what it owns, and a change through v2 by another manager is a conflict until
    forced, named by v1's path when it is the CPU target."""
    await kubectl("apply", "-f", kubectl.write("web.yaml", DEPLOYMENT))
    first = kubectl.write("hpa.yaml", HPA_V1.replace("{max}", "4").replace("{cpu}", "60"))
    r = await kubectl("apply", "--server-side", "--field-manager=chart", "-f", first)
    assert r.stdout.strip() == "horizontalpodautoscaler.autoscaling/web serverside-applied"
    v1 = (await kubectl("get", "horizontalpodautoscalers.v1.autoscaling", "web", "-o", "json",
                        "--show-managed-fields")).json()
    assert (v1["spec"]["maxReplicas"], v1["spec"]["targetCPUUtilizationPercentage"]) == (4, 60)
    (entry,) = v1["metadata"]["managedFields"]
    assert (entry["manager"], entry["apiVersion"]) == ("chart", "autoscaling/v1")
    assert "f:targetCPUUtilizationPercentage" in entry["fieldsV1"]["f:spec"]
    tuned = kubectl.write("hpa-v2.yaml", HPA_V2_CPU)
    conflict = await kubectl("apply", "--server-side", "--field-manager=tuner", "-f", tuned, check=False)
    assert conflict.code != 0
    assert 'conflict with "chart": .spec.targetCPUUtilizationPercentage' in conflict.stderr, conflict.stderr
    second = kubectl.write("hpa2.yaml", HPA_V1.replace("{max}", "6").replace("{cpu}", "75"))
    await kubectl("apply", "--server-side", "--field-manager=chart", "-f", second)
    v2 = (await kubectl("get", "hpa", "web", "-o", "json")).json()
    assert v2["spec"]["maxReplicas"] == 6
    assert v2["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 75
    await kubectl("patch", "hpa", "web", "--type=merge", "--field-manager=someone", "-p",
                  json.dumps({"spec": {"maxReplicas": 9}}))
    conflict = await kubectl("apply", "--server-side", "--field-manager=chart", "-f", second, check=False)
    assert conflict.code != 0 and "conflict" in conflict.stderr.lower(), conflict.stderr
    await kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=chart", "-f", second)
    assert await kubectl.jsonpath("hpa", "web", path="{.spec.maxReplicas}") == "6"
