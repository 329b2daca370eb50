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

import pytest

from cp import testing
from tests.kubectl.conftest import Kubectl, kubectl_on

pytestmark = pytest.mark.kubectl

DEMO = Path(__file__).resolve().parents[2] / "examples/fleets/demo.yaml"
RUN = """["bash", "-c"]
    args: ["export; trap 'exit 0' TERM; sleep 9999 & wait"]"""

WORKLOADS = f"""\
apiVersion: v1
kind: Namespace
metadata: {{name: gpu-test1}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {{name: single-gpu, namespace: gpu-test1}}
spec:
  spec:
    devices:
      requests:
      - {{name: gpu, exactly: {{deviceClassName: gpu.example.com}}}}
---
apiVersion: v1
kind: Pod
metadata: {{name: pod0, namespace: gpu-test1}}
spec:
  containers:
  - name: ctr0
    image: ubuntu:22.04
    command: {RUN}
    resources: {{claims: [{{name: gpu}}]}}
  resourceClaims: [{{name: gpu, resourceClaimTemplateName: single-gpu}}]
---
apiVersion: v1
kind: Pod
metadata: {{name: pod1, namespace: gpu-test1}}
spec:
  containers:
  - name: ctr0
    image: ubuntu:22.04
    command: {RUN}
    resources: {{claims: [{{name: gpu}}]}}
  resourceClaims: [{{name: gpu, resourceClaimTemplateName: single-gpu}}]
---
apiVersion: v1
kind: Namespace
metadata: {{name: gpu-test2}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {{name: single-gpu, namespace: gpu-test2}}
spec:
  spec:
    devices:
      requests:
      - {{name: gpu, exactly: {{deviceClassName: gpu.example.com}}}}
---
apiVersion: v1
kind: Pod
metadata: {{name: pod0, namespace: gpu-test2}}
spec:
  containers:
  - name: ctr0
    image: ubuntu:22.04
    command: {RUN}
    resources: {{claims: [{{name: shared-gpu}}]}}
  - name: ctr1
    image: ubuntu:22.04
    command: {RUN}
    resources: {{claims: [{{name: shared-gpu}}]}}
  resourceClaims: [{{name: shared-gpu, resourceClaimTemplateName: single-gpu}}]
---
apiVersion: v1
kind: Namespace
metadata: {{name: gpu-test3}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {{name: single-gpu, namespace: gpu-test3}}
spec:
  devices:
    requests:
    - {{name: gpu, exactly: {{deviceClassName: gpu.example.com}}}}
---
apiVersion: v1
kind: Pod
metadata: {{name: pod0, namespace: gpu-test3}}
spec:
  containers:
  - name: ctr0
    image: ubuntu:22.04
    command: {RUN}
    resources: {{claims: [{{name: shared-gpu}}]}}
  resourceClaims: [{{name: shared-gpu, resourceClaimName: single-gpu}}]
---
apiVersion: v1
kind: Pod
metadata: {{name: pod1, namespace: gpu-test3}}
spec:
  containers:
  - name: ctr0
    image: ubuntu:22.04
    command: {RUN}
    resources: {{claims: [{{name: shared-gpu}}]}}
  resourceClaims: [{{name: shared-gpu, resourceClaimName: single-gpu}}]
---
apiVersion: v1
kind: Namespace
metadata: {{name: gpu-test4}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {{name: two-gpus, namespace: gpu-test4}}
spec:
  spec:
    devices:
      requests:
      - {{name: gpus, exactly: {{deviceClassName: gpu.example.com, allocationMode: ExactCount, count: 2}}}}
---
apiVersion: v1
kind: Pod
metadata: {{name: pod0, namespace: gpu-test4}}
spec:
  containers:
  - name: ctr0
    image: ubuntu:22.04
    command: {RUN}
    resources: {{claims: [{{name: gpus}}]}}
  - name: ctr1
    image: ubuntu:22.04
    command: {RUN}
  resourceClaims: [{{name: gpus, resourceClaimTemplateName: two-gpus}}]
"""

GPU_LINE = re.compile(r'declare -x GPU_DEVICE_[0-9]+="(gpu-[0-9]+)"')


@pytest.fixture
async def kubectl(cplane_sandbox: testing.Sandbox, tmp_path: Path) -> AsyncIterator[Kubectl]:
    async with kubectl_on(cplane_sandbox, tmp_path) as k:
        yield k


@pytest.mark.cplane(fleet=DEMO, controllers=["resourceclaim", "scheduler"])
async def test_the_quickstart_verification_shows_each_containers_gpus(kubectl: Kubectl) -> None:
    await kubectl("apply", "-f", kubectl.write("workloads.yaml", WORKLOADS))
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
