"""`kubectl describe` (pod, node, deployment, resourceclaim), `kubectl events`, and `kubectl get --raw`
including a time-travel list at an exact past resourceVersion.

In scope: that the typed describers (which ask for protobuf and get it, tests/kubectl/test_protobuf.py)
print the key fields and the events they look up with field selectors (kubectl-compat.md §4).
"""

from __future__ import annotations

import json
import re
from typing import Any

import aiohttp
import pytest

from tests.kubectl import manifests as m
from tests.kubectl.conftest import Kubectl

pytestmark = pytest.mark.kubectl


def _field(text: str, label: str) -> str:
    """The value printed after `label:` on its own line of describe output."""
    for line in text.splitlines():
        if line.startswith(label + ":"):
            return line[len(label) + 1:].strip()
    raise AssertionError(f"no {label!r} line in:\n{text}")


async def _post_event(api: aiohttp.ClientSession, *, name: str, kind: str, obj: str, uid: str, reason: str,
                      message: str, namespace: str = "default", type_: str = "Normal") -> dict[str, Any]:
    body = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": namespace},
            "involvedObject": {"apiVersion": "v1" if kind in ("Pod", "Node") else "apps/v1", "kind": kind,
                               "name": obj, "namespace": namespace if kind != "Node" else "", "uid": uid},
            "reason": reason, "message": message, "type": type_, "count": 1,
            "source": {"component": "default-scheduler"},
            "firstTimestamp": "2026-12-01T00:00:00Z", "lastTimestamp": "2026-12-01T00:00:00Z"}
    async with api.post(f"/api/v1/namespaces/{namespace}/events", json=body) as r:
        assert r.status == 201, await r.text()
        return json.loads(await r.read())


async def _uid(kubectl: Kubectl, *target: str) -> str:
    return (await kubectl("get", *target, "-o", "jsonpath={.metadata.uid}")).stdout


async def test_describe_pod_and_events(kubectl: Kubectl, api: aiohttp.ClientSession) -> None:
    await kubectl("create", "-f", "-", input=m.docs(m.NODE, m.pod("web", labels={"app": "web"}, node="n1")))
    uid = await _uid(kubectl, "pod", "web")
    await _post_event(api, name="web.1", kind="Pod", obj="web", uid=uid, reason="Scheduled",
                      message="Successfully assigned default/web to n1")
    await _post_event(api, name="web.2", kind="Pod", obj="web", uid=uid, reason="BackOff", type_="Warning",
                      message="Back-off pulling image nginx:1.27")

    r = await kubectl("describe", "pod", "web")
    out = r.stdout
    assert _field(out, "Name") == "web" and _field(out, "Namespace") == "default"
    assert _field(out, "Node") == "n1/" or _field(out, "Node").startswith("n1")
    assert _field(out, "Labels") == "app=web"
    assert _field(out, "Status") == "Pending"
    assert _field(out, "QoS Class") == "BestEffort"
    assert re.search(r"^Containers:\n  web:\n    Image:\s+nginx:1\.27\n", out, re.M)
    events = out.split("\nEvents:", 1)[1]
    assert "Normal   Scheduled" in events and "Successfully assigned default/web to n1" in events
    assert "Warning  BackOff" in events and "Back-off pulling image nginx:1.27" in events

    r = await kubectl("events")
    rows = r.rows()
    assert rows[0] == ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert ["Normal", "Scheduled", "Pod/web", "Successfully assigned default/web to n1"] in [row[1:] for row in rows[1:]]
    assert ["Warning", "BackOff", "Pod/web", "Back-off pulling image nginx:1.27"] in [row[1:] for row in rows[1:]]
    r = await kubectl("events", "--for", "pod/web", "--types=Warning")
    assert [row[1:] for row in r.rows()[1:]] == [["Warning", "BackOff", "Pod/web", "Back-off pulling image nginx:1.27"]]

    r = await kubectl("get", "events")
    assert r.rows()[0] == ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert {row[2] for row in r.rows()[1:]} == {"Scheduled", "BackOff"}
    r = await kubectl("get", "events", "--field-selector", "involvedObject.name=web,reason=BackOff", "-o", "name")
    assert r.lines == ["event/web.2"]

    r = await kubectl("describe", "pod", "nope", check=False)
    assert r.code == 1 and 'pods "nope" not found' in r.stderr
    # describe with a name prefix: falls back to listing and matches.
    r = await kubectl("describe", "pods", "we")
    assert _field(r.stdout, "Name") == "web"


async def test_describe_node_deployment_claim(kubectl: Kubectl, api: aiohttp.ClientSession) -> None:
    await kubectl("create", "-f", "-", input=m.docs(
        m.NODE, m.pod("web", node="n1"), m.deployment("web", replicas=2), m.DEVICE_CLASS, m.RESOURCE_CLAIM,
        m.RESOURCE_SLICE))
    await _post_event(api, name="n1.1", kind="Node", obj="n1", uid=await _uid(kubectl, "node", "n1"),
                      reason="NodeReady", message="Node n1 status is now: NodeReady")

    r = await kubectl("describe", "node", "n1")
    out = r.stdout
    assert _field(out, "Name") == "n1" and _field(out, "Roles") == "<none>"
    assert _field(out, "Labels") == "kubernetes.io/hostname=n1"
    assert re.search(r"^  Ready\s+True\s+.*\s+KubeletReady\s+kubelet is posting ready status$", out, re.M)
    assert "  InternalIP:  10.0.0.11" in out
    assert "  Kernel Version:             6.8.0" in out
    assert "  OS Image:                   Ubuntu 24.04 LTS" in out
    assert "  Container Runtime Version:  containerd://2.1.0" in out
    assert re.search(r"^Node-Local ResourceSlices:\n.*\n.*\n  gpu\.example\.com\s+n1\s+1\s+2$", out, re.M)
    assert re.search(r"^Non-terminated Pods:\s+\(1 in total\)$", out, re.M)
    assert re.search(r"^  default\s+web\s+0 \(0%\)", out, re.M)
    assert "NodeReady" in out.split("\nEvents:", 1)[1]
    assert r.stderr == ""

    # The ReplicaSet a deployment controller would have made (none runs here): describe finds it through
    # the deployment's selector and its owner reference.
    deploy_uid = await _uid(kubectl, "deploy", "web")
    rs = f"""\
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: web-5d4f8
  labels: {{app: web, pod-template-hash: 5d4f8}}
  annotations: {{deployment.kubernetes.io/revision: "1"}}
  ownerReferences:
  - {{apiVersion: apps/v1, kind: Deployment, name: web, uid: {deploy_uid}, controller: true, blockOwnerDeletion: true}}
spec:
  replicas: 2
  selector:
    matchLabels: {{app: web, pod-template-hash: 5d4f8}}
  template:
    metadata:
      labels: {{app: web, pod-template-hash: 5d4f8}}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
"""
    await kubectl("create", "-f", "-", input=rs)
    r = await kubectl("get", "rs", "-o", "wide")
    assert r.rows()[0] == ["NAME", "DESIRED", "CURRENT", "READY", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"]
    assert r.rows()[1][:4] == ["web-5d4f8", "2", "0", "0"]
    assert r.rows()[1][-1] == "app=web,pod-template-hash=5d4f8"
    r = await kubectl("rollout", "history", "deploy/web")
    assert re.search(r"^REVISION\s+CHANGE-CAUSE\n1\s+<none>$", r.stdout, re.M), r.stdout

    r = await kubectl("describe", "deployment", "web")
    out = r.stdout
    assert _field(out, "Name") == "web" and _field(out, "Namespace") == "default"
    assert _field(out, "Selector") == "app=web"
    assert _field(out, "Replicas") == "2 desired | 0 updated | 0 total | 0 available | 0 unavailable"
    assert _field(out, "StrategyType") == "RollingUpdate"
    assert _field(out, "RollingUpdateStrategy") == "25% max unavailable, 25% max surge"
    assert re.search(r"^  Containers:\n   nginx:\n    Image:\s+nginx:1\.27$", out, re.M)
    assert _field(out, "OldReplicaSets") == "<none>"
    assert _field(out, "NewReplicaSet") == "web-5d4f8 (0/2 replicas created)"
    assert _field(out, "Events") == "<none>"
    assert r.stderr == ""

    r = await kubectl("describe", "resourceclaim", "gpu-claim")
    out = r.stdout
    assert _field(out, "Name") == "gpu-claim" and _field(out, "Namespace") == "default"
    assert _field(out, "API Version") == "resource.k8s.io/v1" and _field(out, "Kind") == "ResourceClaim"
    assert re.search(r"^Spec:\n  Devices:\n    Requests:\n      Exactly:\n"
                     r"        Allocation Mode:\s+ExactCount\n        Count:\s+1\n"  # server defaults
                     r"        Device Class Name:\s+gpu\.example\.com\n      Name:\s+gpu$", out, re.M)
    assert _field(out, "Events") == "<none>"
    assert r.stderr == ""

    r = await kubectl("describe", "resourceslices")
    assert _field(r.stdout, "Name") == "n1-gpu.example.com" and "Driver:" in r.stdout


async def test_get_raw_and_time_travel(kubectl: Kubectl) -> None:
    await kubectl("create", "-f", "-", input=m.docs(m.pod("web"), m.configmap("cfg", {"v": "1"})))

    r = await kubectl("get", "--raw", "/api/v1/namespaces/default/pods")
    doc = r.json()
    assert doc["kind"] == "PodList" and doc["apiVersion"] == "v1"
    assert [i["metadata"]["name"] for i in doc["items"]] == ["web"]
    r = await kubectl("get", "--raw", "/apis/resource.k8s.io/v1")
    assert r.json()["groupVersion"] == "resource.k8s.io/v1"
    r = await kubectl("get", "--raw", "/api/v1/namespaces/default/pods/nope", check=False)
    assert r.code == 1 and "NotFound" in r.stderr

    rv1 = (await kubectl("get", "cm", "cfg", "-o", "jsonpath={.metadata.resourceVersion}")).stdout
    await kubectl("patch", "cm", "cfg", "--type=merge", "-p", '{"data":{"v":"2"}}')
    await kubectl("create", "-f", "-", input=m.configmap("later", {"v": "x"}))
    rv2 = (await kubectl("get", "cm", "later", "-o", "jsonpath={.metadata.resourceVersion}")).stdout
    await kubectl("delete", "cm", "cfg")

    r = await kubectl("get", "--raw", f"/api/v1/namespaces/default/configmaps?resourceVersion={rv1}"
                                      "&resourceVersionMatch=Exact")
    doc = r.json()
    assert doc["metadata"]["resourceVersion"] == rv1
    assert [(i["metadata"]["name"], i["data"]) for i in doc["items"]] == [("cfg", {"v": "1"})]
    r = await kubectl("get", "--raw", f"/api/v1/namespaces/default/configmaps?resourceVersion={rv2}"
                                      "&resourceVersionMatch=Exact")
    assert [(i["metadata"]["name"], i["data"]) for i in r.json()["items"]] == [("cfg", {"v": "2"}),
                                                                              ("later", {"v": "x"})]
    r = await kubectl("get", "--raw", "/api/v1/namespaces/default/configmaps")
    assert [i["metadata"]["name"] for i in r.json()["items"]] == ["later"]
