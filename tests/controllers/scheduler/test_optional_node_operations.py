"""DRAOptionalNodeOperations (alpha): the scheduler copies a slice's `skipNodeOperations` into the
allocation result of each of its devices; with the gate off (a default 1.37 cluster) the server drops
the slice's field, so nothing is copied. A claim of such a control-plane resource runs its pod on a
fleet node whose kubelet has no plugin for the driver."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cp import testing

DEMO = str(Path(__file__).resolve().parents[3] / "examples" / "fleets" / "demo.yaml")
DRIVER = "control-plane.example.com"
SLICES, CLAIMS, CLASSES = ("resourceslices.resource.k8s.io", "resourceclaims.resource.k8s.io",
                           "deviceclasses.resource.k8s.io")


async def _allocate(sb: testing.Sandbox) -> dict[str, Any]:
    node = "gpu-node-0"  # a node of the demo fleet
    await sb.client.create(SLICES, {
        "metadata": {"name": "control-plane-resources"},
        "spec": {"driver": DRIVER, "nodeName": node, "skipNodeOperations": ["*"],
                 "pool": {"name": "central-pool", "generation": 1, "resourceSliceCount": 1},
                 "devices": [{"name": "virtual-device-1"}]}})
    await sb.client.create(CLASSES, {"metadata": {"name": DRIVER}, "spec": {"selectors": [
        {"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})
    await sb.client.create(CLAIMS, {"metadata": {"name": "virtual"}, "spec": {"devices": {"requests": [
        {"name": "dev", "exactly": {"deviceClassName": DRIVER}}]}}}, namespace="default")
    await sb.client.create("pods", {"metadata": {"name": "app"}, "spec": {
        "resourceClaims": [{"name": "dev", "resourceClaimName": "virtual"}],
        "containers": [{"name": "main", "image": "app", "resources": {"claims": [{"name": "dev"}]}}]}},
        namespace="default")

    async def running() -> bool:
        pod = await sb.client.get("pods", "app", namespace="default")
        return (pod.get("status") or {}).get("phase") == "Running"

    await sb.wait_for(running, timeout=30)
    claim = await sb.client.get(CLAIMS, "virtual", namespace="default")
    (result,) = claim["status"]["allocation"]["devices"]["results"]
    return dict(result)


@pytest.mark.cplane(fleet=DEMO, feature_gates="DRAOptionalNodeOperations=true")
async def test_the_slices_skipped_operations_are_copied_into_the_result(cplane_sandbox: testing.Sandbox) -> None:
    result = await _allocate(cplane_sandbox)
    assert (result["driver"], result["device"], result["skipNodeOperations"]) == (DRIVER, "virtual-device-1", ["*"])


@pytest.mark.cplane(fleet=DEMO)
async def test_with_the_gate_off_nothing_is_skipped(cplane_sandbox: testing.Sandbox) -> None:
    result = await _allocate(cplane_sandbox)
    assert "skipNodeOperations" not in result
    stored = await cplane_sandbox.client.get(SLICES, "control-plane-resources")
    assert "skipNodeOperations" not in stored["spec"]
