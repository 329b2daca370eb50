"""The upstream DRA example driver's quickstart, end to end with the real kubectl 1.37.1 (issue #23):
its kinds of workload — one GPU per pod, a GPU shared by a pod's containers, a claim shared by pods,
several GPUs for one container — applied to `make run`'s fleet, then its verification loop (for each
pod and container, `kubectl logs … | grep -E "GPU_DEVICE_[0-9]+=" | grep -v "RESOURCE_CLAIM"`) shows
each container the GPUs its claims were allocated, and nothing else."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from cp import testing
from tests.kubectl.conftest import Kubectl, kubectl_on

pytestmark = pytest.mark.kubectl

DEMO = Path(__file__).resolve().parents[2] / "examples/fleets/demo.yaml"
COMMAND = ["bash", "-c", "export; trap 'exit 0' TERM; sleep 9999 & wait"]  # upstream's demo pods


def _namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def _claim_spec(request: str, **exactly: Any) -> dict[str, Any]:
    return {"devices": {"requests": [{"name": request, "exactly": {"deviceClassName": "gpu.example.com",
                                                                   **exactly}}]}}


def _template(ns: str, name: str, request: str, **exactly: Any) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": ns}, "spec": {"spec": _claim_spec(request, **exactly)}}


def _pod(ns: str, name: str, claim: dict[str, str], *containers: bool) -> dict[str, Any]:
    """A pod with one pod claim (`{name, resourceClaimName|resourceClaimTemplateName}`) and one
    container per entry of `containers`, using that claim when the entry is True."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns}, "spec": {
        "containers": [{"name": f"ctr{i}", "image": "ubuntu:22.04", "command": COMMAND,
                        **({"resources": {"claims": [{"name": claim["name"]}]}} if uses else {})}
                       for i, uses in enumerate(containers)],
        "resourceClaims": [claim]}}


# gpu-test1: a GPU per pod; gpu-test2: one GPU shared by a pod's two containers; gpu-test3: one claim
# shared by two pods; gpu-test4: two GPUs for one container, its sibling without the claim.
WORKLOADS = [
    _namespace("gpu-test1"), _template("gpu-test1", "single-gpu", "gpu"),
    *(_pod("gpu-test1", p, {"name": "gpu", "resourceClaimTemplateName": "single-gpu"}, True)
      for p in ("pod0", "pod1")),
    _namespace("gpu-test2"), _template("gpu-test2", "single-gpu", "gpu"),
    _pod("gpu-test2", "pod0", {"name": "shared-gpu", "resourceClaimTemplateName": "single-gpu"}, True, True),
    _namespace("gpu-test3"),
    {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
     "metadata": {"name": "single-gpu", "namespace": "gpu-test3"}, "spec": _claim_spec("gpu")},
    *(_pod("gpu-test3", p, {"name": "shared-gpu", "resourceClaimName": "single-gpu"}, True)
      for p in ("pod0", "pod1")),
    _namespace("gpu-test4"),
    _template("gpu-test4", "two-gpus", "gpus", allocationMode="ExactCount", count=2),
    _pod("gpu-test4", "pod0", {"name": "gpus", "resourceClaimTemplateName": "two-gpus"}, True, False),
]

GPU_LINE = re.compile(r'declare -x GPU_DEVICE_[0-9]+="(gpu-[0-9]+)"')


@pytest.fixture
async def kubectl(cplane_sandbox: testing.Sandbox, tmp_path: Path) -> AsyncIterator[Kubectl]:
    async with kubectl_on(cplane_sandbox, tmp_path) as k:
        yield k


@pytest.mark.cplane(fleet=DEMO, controllers=["resourceclaim", "scheduler"])
async def test_the_quickstart_verification_shows_each_containers_gpus(kubectl: Kubectl) -> None:
    await kubectl("apply", "-f", kubectl.write("workloads.json", json.dumps({"apiVersion": "v1", "kind": "List",
                                                                          "items": WORKLOADS})))
    for ns in ("gpu-test1", "gpu-test2", "gpu-test3", "gpu-test4"):
        await kubectl("wait", "-n", ns, "--for=condition=Ready", "pods", "--all", "--timeout=30s")

    # What each container shows: upstream's loop over namespaces, pods and containers.
    shown: dict[tuple[str, str, str], list[str]] = {}
    nodes: dict[tuple[str, str], str] = {}
    for ns in ("gpu-test1", "gpu-test2", "gpu-test3", "gpu-test4"):
        pods = json.loads((await kubectl("get", "pods", "-n", ns, "-o", "json")).stdout)["items"]
        for pod in pods:
            name = pod["metadata"]["name"]
            nodes[ns, name] = pod["spec"]["nodeName"]
            for ctr in pod["spec"]["containers"]:
                out = (await kubectl("logs", "-n", ns, name, "-c", ctr["name"])).stdout
                lines = [ln for ln in out.splitlines()
                         if re.search(r"GPU_DEVICE_[0-9]+=", ln) and "RESOURCE_CLAIM" not in ln]
                shown[ns, name, ctr["name"]] = sorted(m.group(1) for ln in lines if (m := GPU_LINE.fullmatch(ln)))
                assert len(shown[ns, name, ctr["name"]]) == len(lines), out

    # What the claims were allocated, per pod.
    allocated: dict[tuple[str, str], list[str]] = {}
    claims = json.loads((await kubectl("get", "resourceclaims", "-A", "-o", "json")).stdout)["items"]
    for claim in claims:
        devices = sorted(r["device"] for r in claim["status"]["allocation"]["devices"]["results"])
        for ref in claim["status"]["reservedFor"]:
            allocated[claim["metadata"]["namespace"], ref["name"]] = devices

    # One GPU per pod, each its own (a GPU is its node's and its name).
    assert [len(shown["gpu-test1", p, "ctr0"]) for p in ("pod0", "pod1")] == [1, 1]
    assert len({(nodes["gpu-test1", p], shown["gpu-test1", p, "ctr0"][0]) for p in ("pod0", "pod1")}) == 2
    # A pod's two containers share its one GPU.
    assert shown["gpu-test2", "pod0", "ctr0"] == shown["gpu-test2", "pod0", "ctr1"] \
        == allocated["gpu-test2", "pod0"]
    # Two pods share one claim, so one GPU.
    assert shown["gpu-test3", "pod0", "ctr0"] == shown["gpu-test3", "pod1", "ctr0"] \
        == allocated["gpu-test3", "pod0"] == allocated["gpu-test3", "pod1"]
    # A container gets the two GPUs of its claim; its sibling without the claim gets none.
    assert len(shown["gpu-test4", "pod0", "ctr0"]) == 2
    assert shown["gpu-test4", "pod0", "ctr1"] == []
    # And every container shows exactly what its pod's claims were allocated.
    for (ns, pod, ctr), gpus in shown.items():
        if (ns, pod, ctr) != ("gpu-test4", "pod0", "ctr1"):
            assert gpus == allocated[ns, pod], (ns, pod, ctr)
