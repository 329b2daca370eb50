"""Issue #23's fleet gaps end to end (in the secure mode, each controller as its own identity):
nodes named freely (`kind-worker`, `kind-worker2`) register and get their slices; GPUs published
with their partitions first and the whole GPU last; two claims share one shareable partition
(consumable `cores` under its request policy) and their pods run on it.

Out of scope: the file's checks and the builders' exact output (test_fleet_model.py,
test_fleet_objects.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cp.testing import Sandbox, sandbox
from tests.controllers.fleet.conftest import EXAMPLES, START
from tests.waiting import eventually

R = "resource.k8s.io"


async def _running(sb: Sandbox) -> list[dict[str, Any]]:
    pods = (await sb.client.list("pods", namespace="default")).items
    return [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]


async def test_named_nodes_and_a_shared_partition(tmp_path: Path) -> None:
    async with sandbox(data_dir=tmp_path / "cplane", controllers=("resourceclaim", "scheduler"),
                       fleet=EXAMPLES / "kind.yaml", virtual_clock=True, clock_start=START, secure=True) as sb:
        async def registered() -> bool:
            nodes = (await sb.client.list("nodes")).items
            slices = (await sb.client.list(f"resourceslices.{R}")).items
            return sorted(n["metadata"]["name"] for n in nodes) == ["kind-worker", "kind-worker2"] and len(slices) == 4

        await eventually(registered, within=10, what="the named nodes and their slices")
        nodes = {n["metadata"]["name"]: n for n in (await sb.client.list("nodes")).items}
        assert nodes["kind-worker2"]["metadata"]["labels"]["kubernetes.io/hostname"] == "kind-worker2"
        (devices,) = [s["spec"]["devices"] for s in (await sb.client.list(f"resourceslices.{R}")).items
                      if s["spec"]["nodeName"] == "kind-worker" and s["spec"].get("devices")]
        assert [d["name"] for d in devices][:5] == ["gpu-0-mig-1g-5gb-0", "gpu-0-mig-1g-5gb-1", "gpu-0-mig-1g-5gb-2",
                                                    "gpu-0-mig-4g-20gb-0", "gpu-0"]
        request = {"name": "mig", "exactly": {"deviceClassName": "mig.gpu.example.com",
                                              "capacity": {"requests": {"cores": "50"}}}}
        for name in ("a", "b"):
            await sb.client.create(f"resourceclaims.{R}", {"metadata": {"name": name}, "spec": {
                "devices": {"requests": [request]}}}, namespace="default")
            await sb.client.create("pods", {"metadata": {"name": name}, "spec": {
                "nodeSelector": {"kubernetes.io/hostname": "kind-worker"},
                "resourceClaims": [{"name": "mig", "resourceClaimName": name}],
                "containers": [{"name": "c", "image": "busybox", "resources": {"claims": [{"name": "mig"}]}}]}},
                namespace="default")
        await eventually(lambda: _running_count(sb, 2), within=10, what="both pods Running")
        claims = (await sb.client.list(f"resourceclaims.{R}", namespace="default")).items
        results = [c["status"]["allocation"]["devices"]["results"][0] for c in claims]
        assert {(r["pool"], r["device"]) for r in results} == {("kind-worker", "gpu-0-mig-1g-5gb-0")}
        assert len({r["shareID"] for r in results}) == 2
        assert all(r["consumedCapacity"] == {"cores": "50"} for r in results)


async def _running_count(sb: Sandbox, n: int) -> bool:
    return len(await _running(sb)) == n
