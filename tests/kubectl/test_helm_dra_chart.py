"""Helm v4 with its default storage (release Secrets, written in protobuf) runs the whole lifecycle of a
realistic DRA application chart, `examples/charts/gpu-inference` (a DeviceClass with a CEL selector for
the demo fleet's GPUs, a ResourceClaimTemplate, a ServiceAccount, a Service and a Deployment whose pods
each claim a GPU), against a server with the demo fleet and the controllers: install (`--wait` waits on
the Deployment's readiness), upgrade, rollback, uninstall; the pods get their claims allocated and run,
and a foreground uninstall removes pods and claims before it returns.

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
    return not await _pods(sb) and not await _claims(sb)
