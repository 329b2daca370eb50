"""Testing a DRA-aware controller with the cplane sandbox (`cplane_sandbox` fixture).

Run from the repository: `.venv/bin/pytest examples/dra-controller` (the suite also runs it).
"""

from __future__ import annotations

import pytest

import gpu_labeler
from cp import testing

FLEET = {
    "apiVersion": "sim.cplane.dev/v1alpha1", "kind": "Fleet", "metadata": {"name": "two-nodes"},
    "nodePools": [{"name": "gpu-node", "count": 2, "drivers": [
        {"name": "gpu.example.com", "devices": [{"type": "gpu", "count": 2, "model": "H100"}]}]}],
}


def _pod(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
                     "containers": [{"name": "main", "image": "registry.example.com/app:1",
                                     "resources": {"claims": [{"name": "gpu"}]}}]}}


TEMPLATE = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "one-gpu"},
            "spec": {"spec": {"devices": {"requests": [
                {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}}


@pytest.mark.cplane(controllers=["resourceclaim", "scheduler"], fleet=FLEET, virtual_clock=True)
async def test_pods_get_the_model_of_their_gpu(cplane_sandbox: testing.Sandbox) -> None:
    sb = cplane_sandbox
    async with sb.run_controllers(gpu_labeler.new):
        await sb.client.create("resourceclaimtemplates.resource.k8s.io", TEMPLATE, namespace="default")
        await sb.client.create("pods", _pod("train"), namespace="default")

        async def labelled() -> str | None:
            pod = await sb.client.get("pods", "train", namespace="default")
            return (pod["metadata"].get("labels") or {}).get(gpu_labeler.LABEL)

        assert await sb.wait_for(labelled) == "H100"
