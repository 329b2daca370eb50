"""Helm v4 with its default storage (release Secrets, written in protobuf) runs the whole lifecycle of a
realistic DRA application chart, `examples/charts/gpu-inference` (a DeviceClass with a CEL selector for
the demo fleet's GPUs, a ResourceClaimTemplate, a ServiceAccount, a Service and a Deployment whose pods
each claim a GPU), against a server with the demo fleet and the controllers: install (`--wait` waits on
the Deployment's readiness), upgrade, rollback, uninstall; the pods get their claims allocated and run,
and a foreground uninstall removes pods and claims before it returns. A driver's chart (ServiceAccount,
RBAC, DaemonSet, Service, and an admission policy in cel-go's optional syntax) goes through the same
lifecycle on a bare server.

Out of scope: Helm's chart features (Helm's own business); a chart with a `kind: List` or an unknown kind
(tests/kubectl/test_helm.py); the protobuf encoding of Secrets (tests/kubectl/test_protobuf.py).
"""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from cp import testing
from tests.kubectl.conftest import HELM, KUBECTL, Kubectl

pytestmark = pytest.mark.kubectl

CHART = str(Path(__file__).resolve().parents[2] / "examples/charts/gpu-inference")
FLEET = str(Path(__file__).resolve().parents[2] / "examples/fleets/demo.yaml")
CONTROLLERS = ["garbage-collector", "namespace", "replicaset", "deployment", "resourceclaim", "scheduler"]
APP = "demo-gpu-inference"
SELECTOR = "app.kubernetes.io/instance=demo"


@pytest.fixture
async def tools(cplane_sandbox: testing.Sandbox, tmp_path: Path) -> AsyncIterator[tuple[Kubectl, Kubectl]]:
    if KUBECTL is None or HELM is None:
        pytest.skip("kubectl or helm not found: run `make test` (tests/tools/fetch-kubectl.sh)")
    kubectl = Kubectl(cplane_sandbox, home=tmp_path / "home", workdir=tmp_path / "work")
    helm = Kubectl(cplane_sandbox, home=tmp_path / "home", workdir=tmp_path / "work", binary=HELM)
    try:
        yield kubectl, helm
    finally:
        await helm.close()
        await kubectl.close()


async def _pods(sb: testing.Sandbox) -> list[dict[str, Any]]:
    pods = await sb.client.list("pods", namespace="default", label_selector=SELECTOR)
    return [p for p in pods.items if not p["metadata"].get("deletionTimestamp")]


async def _claims(sb: testing.Sandbox) -> list[dict[str, Any]]:
    return list((await sb.client.list("resourceclaims.resource.k8s.io", namespace="default")).items)


async def _running_with_devices(sb: testing.Sandbox, count: int) -> list[dict[str, Any]] | None:
    """The release's pods when exactly `count` run, each with an allocated claim of its own (and no other
    claims are left)."""
    pods = await _pods(sb)
    if len(pods) != count or any((p.get("status") or {}).get("phase") != "Running" for p in pods):
        return None
    claims = {c["metadata"]["name"]: c for c in await _claims(sb)}
    if len(claims) != count:  # those of deleted pods are gone
        return None
    devices = []
    for pod in pods:
        statuses = (pod.get("status") or {}).get("resourceClaimStatuses") or []
        if len(statuses) != 1 or statuses[0].get("resourceClaimName") not in claims:
            return None
        allocation = (claims[statuses[0]["resourceClaimName"]].get("status") or {}).get("allocation")
        if not allocation:
            return None
        devices += [(r["driver"], r["pool"], r["device"]) for r in allocation["devices"]["results"]]
    assert len(set(devices)) == count  # one GPU each
    return pods


def _release(secret: dict[str, Any]) -> Any:
    """Helm's release record: base64 of gzipped JSON, in the Secret's `release` key."""
    data = base64.b64decode(base64.b64decode(secret["data"]["release"]))
    return json.loads(gzip.decompress(data))


@pytest.mark.cplane(controllers=CONTROLLERS, fleet=FLEET)
async def test_a_dra_chart_installs_upgrades_rolls_back_and_uninstalls(
        cplane_sandbox: testing.Sandbox, tools: tuple[Kubectl, Kubectl]) -> None:
    sb = cplane_sandbox
    kubectl, helm = tools

    assert "0 chart(s) failed" in (await helm("lint", "--strict", CHART)).stdout
    r = await helm("install", "demo", CHART, "--wait", "--timeout", "60s", timeout=90)
    assert "STATUS: deployed" in r.stdout and "REVISION: 1" in r.stdout
    [listed] = (await helm("list", "-o", "json")).json()
    assert (listed["name"], listed["revision"], listed["status"], listed["chart"]) == \
        ("demo", "1", "deployed", "gpu-inference-0.1.0")
    secret = await sb.client.get("secrets", "sh.helm.release.v1.demo.v1", namespace="default")
    assert secret["type"] == "helm.sh/release.v1"
    assert secret["metadata"]["labels"]["owner"] == "helm" and secret["metadata"]["labels"]["status"] == "deployed"
    assert _release(secret)["name"] == "demo"
    for target in (("deviceclass", f"{APP}.gpu.example.com"), ("resourceclaimtemplate", f"{APP}-gpu"),
                   ("serviceaccount", APP), ("service", APP), ("deployment", APP)):
        assert not await kubectl.gone(*target), target
    # --wait waited for the Deployment to report its replica available (kstatus, Helm v4's default)
    assert await kubectl.jsonpath("deployment", APP, path="{.status.availableReplicas}") == "1"
    assert await _running_with_devices(sb, 1)

    r = await helm("upgrade", "demo", CHART, "--set", "replicas=2", "--wait", "--timeout", "60s", timeout=90)
    assert "REVISION: 2" in r.stdout
    assert await kubectl.jsonpath("deployment", APP, path="{.status.availableReplicas}") == "2"
    assert await _running_with_devices(sb, 2)

    r = await helm("rollback", "demo", "1", "--wait", "--timeout", "60s", timeout=90)
    assert "Rollback was a success" in r.stdout
    await sb.wait_for(lambda: _running_with_devices(sb, 1), timeout=30)
    history = (await helm("history", "demo", "-o", "json")).json()
    assert [(h["revision"], h["status"]) for h in history] == [(1, "superseded"), (2, "superseded"),
                                                                (3, "deployed")]
    assert await kubectl.jsonpath("deployment", APP, path="{.spec.replicas}") == "1"

    # Foreground: the Deployment goes only after its ReplicaSet, whose pods go only after their claims
    # (which they own), so once `--wait` returns nothing of the release is left and every GPU is free.
    r = await helm("uninstall", "demo", "--cascade", "foreground", "--wait", "--timeout", "60s", timeout=90)
    assert 'release "demo" uninstalled' in r.stdout
    for target in (("deviceclass", f"{APP}.gpu.example.com"), ("resourceclaimtemplate", f"{APP}-gpu"),
                   ("serviceaccount", APP), ("service", APP), ("deployment", APP),
                   ("secret", "sh.helm.release.v1.demo.v1")):
        assert await kubectl.gone(*target), target
    assert await _none_left(sb)
    assert (await helm("list", "-o", "json")).json() == []
    assert (await kubectl("get", "secrets", "-l", "owner=helm", "-o", "name")).stdout == ""


async def _none_left(sb: testing.Sandbox) -> bool:
    """No pod of the release (not even a terminating one) and no claim."""
    pods = await sb.client.list("pods", namespace="default", label_selector=SELECTOR)
    return not pods.items and not await _claims(sb)


DRIVER_CHART = """apiVersion: v2
name: gpu-driver
version: 0.2.0
"""
# What a DRA driver's own chart holds (the shape of the dra-example-driver's): an identity for the kubelet
# plugin with the rights to publish ResourceSlices, the plugin as a DaemonSet with a metrics Service, and an
# admission policy (in cel-go's optional syntax) that lets a node's plugin touch only its own slices.
DRIVER_TEMPLATES = """apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ .Release.Name }}-plugin
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ .Release.Name }}-plugin
rules:
- apiGroups: ["resource.k8s.io"]
  resources: ["resourceslices"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
- apiGroups: ["resource.k8s.io"]
  resources: ["resourceclaims"]
  verbs: ["get"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{ .Release.Name }}-plugin
subjects:
- kind: ServiceAccount
  name: {{ .Release.Name }}-plugin
  namespace: {{ .Release.Namespace }}
roleRef:
  kind: ClusterRole
  name: {{ .Release.Name }}-plugin
  apiGroup: rbac.authorization.k8s.io
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: {{ .Release.Name }}-plugin
spec:
  selector:
    matchLabels: {app: {{ .Release.Name }}-plugin}
  template:
    metadata:
      labels: {app: {{ .Release.Name }}-plugin}
    spec:
      serviceAccountName: {{ .Release.Name }}-plugin
      containers:
      - name: plugin
        image: registry.example.com/gpu-driver:{{ .Values.tag | default "0.2.0" }}
        ports: [{name: metrics, containerPort: 8080}]
---
apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}-metrics
spec:
  selector: {app: {{ .Release.Name }}-plugin}
  ports: [{name: metrics, port: 8080, targetPort: metrics}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: {{ .Release.Name }}-own-slices
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: ["resource.k8s.io"]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE", "DELETE"]
      resources: ["resourceslices"]
  matchConditions:
  - name: plugin
    expression: "request.userInfo.username == 'system:serviceaccount:{{ .Release.Namespace }}:{{ .Release.Name }}-plugin'"
  variables:
  - name: node
    expression: "request.userInfo.extra[?'authentication.kubernetes.io/node-name'][0].orValue('')"
  - name: sliceNode
    expression: "(request.operation == 'DELETE' ? oldObject : object).spec.?nodeName.orValue('')"
  validations:
  - expression: "variables.node != '' && variables.node == variables.sliceNode"
    messageExpression: "'this plugin may only change the slices of node ' + variables.node"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: {{ .Release.Name }}-own-slices
spec:
  policyName: {{ .Release.Name }}-own-slices
  validationActions: [Deny]
"""


async def test_a_driver_chart_with_a_daemonset_and_an_optional_syntax_policy(helm: Kubectl, kubectl: Kubectl) -> None:
    root = helm.workdir / "gpu-driver"
    (root / "templates").mkdir(parents=True)
    (root / "Chart.yaml").write_text(DRIVER_CHART)
    (root / "templates" / "driver.yaml").write_text(DRIVER_TEMPLATES)
    r = await helm("install", "gpu", str(root), "--namespace", "gpu-system", "--create-namespace")
    assert "STATUS: deployed" in r.stdout
    policy = "{.spec.variables[0].expression}"
    assert (await kubectl.jsonpath("validatingadmissionpolicy", "gpu-own-slices", path=policy)) == \
        "request.userInfo.extra[?'authentication.kubernetes.io/node-name'][0].orValue('')"
    for target in (("serviceaccount", "gpu-plugin"), ("daemonset", "gpu-plugin"), ("service", "gpu-metrics")):
        assert not await kubectl.gone(*target, "-n", "gpu-system"), target
    assert not await kubectl.gone("clusterrolebinding", "gpu-plugin")

    r = await helm("upgrade", "gpu", str(root), "--namespace", "gpu-system", "--set", "tag=0.2.1")
    assert "REVISION: 2" in r.stdout
    image = "{.spec.template.spec.containers[0].image}"
    assert await kubectl.jsonpath("daemonset", "gpu-plugin", "-n", "gpu-system", path=image) == \
        "registry.example.com/gpu-driver:0.2.1"
    await helm("rollback", "gpu", "1", "--namespace", "gpu-system")
    assert await kubectl.jsonpath("daemonset", "gpu-plugin", "-n", "gpu-system", path=image) == \
        "registry.example.com/gpu-driver:0.2.0"
    await helm("uninstall", "gpu", "--namespace", "gpu-system", "--wait")
    assert await kubectl.gone("validatingadmissionpolicy", "gpu-own-slices")
    assert await kubectl.gone("daemonset", "gpu-plugin", "-n", "gpu-system")
