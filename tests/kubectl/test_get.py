"""`kubectl get`: server-side Tables (default and wide columns), the object formats, selectors,
all-namespaces, labels, sorting, pagination and watching.

In scope: the output a user sees (kubectl-compat.md §4, §5). Out of scope: Table cell rules in
detail (tests/cp/ for cp.tables), watch semantics over raw HTTP (tests/api/test_api_watch.py).
"""

from __future__ import annotations

import json
import re

import pytest

from tests.kubectl import manifests as m
from tests.kubectl.conftest import Kubectl

pytestmark = pytest.mark.kubectl


async def _seed(kubectl: Kubectl) -> None:
    """Pods in two namespaces, with labels, one bound to a node."""
    path = kubectl.write("seed.yaml", m.docs(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-a\n",
        m.pod("web", labels={"app": "web", "tier": "fe"}, node="n1"),
        m.pod("api", labels={"app": "api", "tier": "be"}),
        m.pod("db", labels={"app": "db", "tier": "be"}),
        m.pod("cache", namespace="team-a", labels={"app": "cache"}),
    ))
    r = await kubectl("create", "-f", path)
    assert r.lines == ["namespace/team-a created", "pod/web created", "pod/api created", "pod/db created",
                       "pod/cache created"]


async def test_get_tables_and_formats(kubectl: Kubectl) -> None:
    await _seed(kubectl)

    r = await kubectl("get", "pods")
    rows = r.rows()
    assert rows[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    body = {row[0]: row for row in rows[1:]}
    assert set(body) == {"web", "api", "db"}
    assert body["web"][1:4] == ["0/1", "Pending", "0"]
    assert re.fullmatch(r"\d+s", body["web"][4])

    r = await kubectl("get", "pods", "-o", "wide")
    rows = r.rows()
    assert rows[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED NODE",
                       "READINESS GATES"]
    body = {row[0]: row for row in rows[1:]}
    assert body["web"][5:] == ["<none>", "n1", "<none>", "<none>"]
    assert body["api"][5:] == ["<none>", "<none>", "<none>", "<none>"]

    r = await kubectl("get", "pod", "web")  # a single object is a Table too
    assert r.rows()[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"] and r.rows()[1][0] == "web"

    r = await kubectl("get", "pod", "web", "-o", "yaml")
    assert "apiVersion: v1\nkind: Pod\nmetadata:\n" in r.stdout
    assert "  name: web\n  namespace: default\n" in r.stdout
    assert "  nodeName: n1\n" in r.stdout and "  - image: nginx:1.27\n" in r.stdout
    assert "  phase: Pending\n" in r.stdout

    r = await kubectl("get", "pods", "-o", "json")
    doc = r.json()
    assert doc["kind"] == "List" and doc["apiVersion"] == "v1"
    assert sorted(i["metadata"]["name"] for i in doc["items"]) == ["api", "db", "web"]
    assert all(i["kind"] == "Pod" and i["metadata"]["uid"] for i in doc["items"])

    r = await kubectl("get", "pods", "-o", "name")
    assert sorted(r.lines) == ["pod/api", "pod/db", "pod/web"]

    r = await kubectl("get", "pod", "web", "-o", "jsonpath={.metadata.labels.tier}/{.spec.nodeName}")
    assert r.stdout == "fe/n1"

    r = await kubectl("get", "pods", "-o", "custom-columns=NAME:.metadata.name,APP:.metadata.labels.app",
                      "--sort-by=.metadata.name")
    assert r.rows() == [["NAME", "APP"], ["api", "api"], ["db", "db"], ["web", "web"]]

    r = await kubectl("get", "ns")
    assert r.rows()[0] == ["NAME", "STATUS", "AGE"]
    assert {row[0]: row[1] for row in r.rows()[1:]} == {
        "default": "Active", "kube-node-lease": "Active", "kube-public": "Active", "kube-system": "Active",
        "team-a": "Active"}

    # What a kubelet would report shows up in the columns.
    status = {"phase": "Running", "podIP": "10.244.1.5", "podIPs": [{"ip": "10.244.1.5"}],
              "containerStatuses": [{"name": "web", "image": "nginx:1.27", "imageID": "", "ready": True,
                                     "started": True, "restartCount": 2,
                                     "state": {"running": {"startedAt": "2026-12-01T00:00:00Z"}}}]}
    await kubectl("patch", "pod", "web", "--subresource=status", "--type=merge", "-p", json.dumps({"status": status}))
    r = await kubectl("get", "pod", "web", "-o", "wide")
    row = r.rows()[1]
    assert row[:4] == ["web", "1/1", "Running", "2"] and row[5:7] == ["10.244.1.5", "n1"]

    r = await kubectl("get", "pod", "nope", check=False)
    assert r.code == 1 and 'Error from server (NotFound): pods "nope" not found' in r.stderr
    r = await kubectl("get", "pod", "nope", "-n", "ghost", check=False)
    assert r.code == 1 and 'namespaces "ghost" not found' in r.stderr


async def test_get_selectors_namespaces_labels_sorting_paging(kubectl: Kubectl) -> None:
    await _seed(kubectl)

    r = await kubectl("get", "pods", "-l", "tier=be", "-o", "name")
    assert sorted(r.lines) == ["pod/api", "pod/db"]
    r = await kubectl("get", "pods", "-l", "app in (web,db),tier!=fe", "-o", "name")
    assert r.lines == ["pod/db"]
    r = await kubectl("get", "pods", "-l", "!tier", "-A", "-o", "name")
    assert r.lines == ["pod/cache"]
    r = await kubectl("get", "pods", "-l", "tier=nope")
    assert r.stdout == "" and "No resources found in default namespace." in r.stderr

    r = await kubectl("get", "pods", "--field-selector", "metadata.name=api", "-o", "name")
    assert r.lines == ["pod/api"]
    r = await kubectl("get", "pods", "--field-selector", "spec.nodeName=n1,status.phase=Pending", "-o", "name")
    assert r.lines == ["pod/web"]
    r = await kubectl("get", "pods", "--field-selector", "status.phase!=Pending")
    assert "No resources found in default namespace." in r.stderr
    r = await kubectl("get", "pods", "--field-selector", "spec.nope=1", check=False)
    assert r.code == 1 and "BadRequest" in r.stderr and "spec.nope" in r.stderr

    r = await kubectl("get", "pods", "-A")
    rows = r.rows()
    assert rows[0] == ["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert sorted((row[0], row[1]) for row in rows[1:]) == [
        ("default", "api"), ("default", "db"), ("default", "web"), ("team-a", "cache")]

    r = await kubectl("get", "pods", "-n", "team-a")
    assert [row[0] for row in r.rows()[1:]] == ["cache"]

    r = await kubectl("get", "pods", "--show-labels")
    rows = r.rows()
    assert rows[0][-1] == "LABELS"
    assert {row[0]: row[-1] for row in rows[1:]} == {"web": "app=web,tier=fe", "api": "app=api,tier=be",
                                                     "db": "app=db,tier=be"}
    r = await kubectl("get", "pods", "-L", "tier")
    assert r.rows()[0][-1] == "TIER"
    assert {row[0]: row[-1] for row in r.rows()[1:]} == {"web": "fe", "api": "be", "db": "be"}

    r = await kubectl("get", "pods", "--sort-by=.metadata.name")
    assert [row[0] for row in r.rows()[1:]] == ["api", "db", "web"]
    r = await kubectl("get", "pods", "-A", "--sort-by=.metadata.labels.app", "--no-headers")
    assert [row[1] for row in r.rows()] == ["api", "cache", "db", "web"]

    # Pagination: three pages of one and two objects; one header, every object once.
    r = await kubectl("get", "pods", "-A", "--chunk-size=2", "-v=6")
    rows = r.rows()
    assert rows[0][0] == "NAMESPACE" and sum(1 for row in rows if row[0] == "NAMESPACE") == 1
    assert sorted(row[1] for row in rows[1:]) == ["api", "cache", "db", "web"]
    assert "limit=2" in r.stderr and "continue=" in r.stderr
    r = await kubectl("get", "pods", "-A", "--chunk-size=1", "-o", "name")
    assert sorted(r.lines) == ["pod/api", "pod/cache", "pod/db", "pod/web"]


async def test_get_other_kinds_wide(kubectl: Kubectl) -> None:
    path = kubectl.write("things.yaml", m.docs(m.NODE, m.deployment("web", replicas=2), m.DEVICE_CLASS,
                                               m.RESOURCE_CLAIM, m.RESOURCE_SLICE, m.HPA))
    await kubectl("create", "-f", path)

    r = await kubectl("get", "deploy", "-o", "wide")
    assert r.rows()[0] == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS", "IMAGES",
                           "SELECTOR"]
    row = r.rows()[1]
    assert row[:4] == ["web", "0/2", "0", "0"] and row[5:] == ["nginx", "nginx:1.27", "app=web"]

    r = await kubectl("get", "nodes", "-o", "wide")
    assert r.rows()[0] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION", "INTERNAL-IP", "EXTERNAL-IP",
                           "OS-IMAGE", "KERNEL-VERSION", "CONTAINER-RUNTIME"]
    row = r.rows()[1]
    assert row[:3] == ["n1", "Ready", "<none>"] and row[4:] == [
        "v1.37.0", "10.0.0.11", "<none>", "Ubuntu 24.04 LTS", "6.8.0", "containerd://2.1.0"]

    r = await kubectl("get", "resourceclaims")
    assert r.rows()[0] == ["NAME", "STATE", "AGE"] and r.rows()[1][:2] == ["gpu-claim", "pending"]
    # A scheduler's allocation and a consumer's reservation show in the STATE column.
    r = await kubectl("patch", "resourceclaim", "gpu-claim", "--subresource=status", "--type=merge", "-p", json.dumps(
        {"status": {"allocation": {"devices": {"results": [
            {"request": "gpu", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-0"}]}},
            "reservedFor": [{"resource": "pods", "name": "web", "uid": "6e4fdd55-6d5d-4a0e-9d2c-2a4b5c7b0001"}]}}))
    assert r.stdout == "resourceclaim.resource.k8s.io/gpu-claim patched\n"
    r = await kubectl("get", "resourceclaims")
    assert r.rows()[1][:2] == ["gpu-claim", "allocated,reserved"]
    r = await kubectl("get", "resourceslices")
    assert r.rows()[0] == ["NAME", "NODE", "DRIVER", "POOL", "AGE"]
    assert r.rows()[1][:4] == ["n1-gpu.example.com", "n1", "gpu.example.com", "n1"]
    r = await kubectl("get", "resourceslices", "--field-selector", "spec.nodeName=n2")
    assert "No resources found" in r.stderr
    r = await kubectl("get", "deviceclasses.resource.k8s.io")
    assert r.rows()[0] == ["NAME", "AGE"] and r.rows()[1][0] == "gpu.example.com"
    # Cordoning a node (a strategic merge patch of spec.unschedulable) shows in its STATUS.
    r = await kubectl("cordon", "n1")
    assert r.stdout == "node/n1 cordoned\n"
    assert (await kubectl("get", "node", "n1")).rows()[1][:2] == ["n1", "Ready,SchedulingDisabled"]
    r = await kubectl("uncordon", "n1")
    assert r.stdout == "node/n1 uncordoned\n"
    assert (await kubectl("get", "node", "n1")).rows()[1][:2] == ["n1", "Ready"]

    # The "all" category: one table per kind, names qualified by kind.
    await kubectl("create", "-f", "-", input=m.pod("web"))
    r = await kubectl("get", "all")
    names = [line.split()[0] for line in r.lines if line and not line.startswith("NAME")]
    assert names == ["pod/web", "service/kubernetes", "deployment.apps/web",
                     "horizontalpodautoscaler.autoscaling/web"]

    r = await kubectl("get", "hpa")
    assert r.rows()[0] == ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"]
    assert r.rows()[1][:2] == ["web", "Deployment/web"] and r.rows()[1][3:6] == ["1", "5", "0"]


async def test_get_watch_prints_events(kubectl: Kubectl) -> None:
    await kubectl("create", "-f", kubectl.write("web.yaml", m.pod("web", labels={"app": "web"})))
    watch = await kubectl.start("get", "pods", "-w")
    await watch.expect(r"^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\n")
    await watch.expect(r"^web\s+0/1\s+Pending\s+0\s+\S+\n")
    # A new pod, a change to an existing one, and a deletion: each prints a row as it happens.
    await kubectl("create", "-f", kubectl.write("late.yaml", m.pod("late")))
    await watch.expect(r"^late\s+0/1\s+Pending\s+0\s+\S+\n")
    await kubectl("patch", "pod", "web", "--subresource=status", "--type=merge",
                  "-p", '{"status":{"phase":"Running"}}')
    await watch.expect(r"^web\s+0/1\s+Running\s+0\s+\S+\n")
    await kubectl("delete", "pod", "late")
    await watch.expect(r"(?s)^late\s+0/1\s+Pending.*^late\s+0/1\s+Pending\s+0\s+\S+\n")
    result = await watch.stop()
    assert result.stdout.count("NAME") == 1  # headers only once
    assert "error" not in result.stderr.lower()

    # --output-watch-events adds an EVENT column naming each event's type.
    events = await kubectl.start("get", "pods", "-w", "--output-watch-events")
    await events.expect(r"^EVENT\s+NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\n")
    await events.expect(r"^ADDED\s+web\s+0/1\s+Running\s")
    await kubectl("label", "pod", "web", "extra=1")
    await events.expect(r"^MODIFIED\s+web\s+0/1\s+Running\s")
    await kubectl("delete", "pod", "web", "--wait=false")
    await events.expect(r"^DELETED\s+web\s+0/1\s+Running\s")
    await events.stop()
