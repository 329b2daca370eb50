"""Partitionable devices (KEP-4815) and consumable capacity on the map: partitions under their counter
set with the counters used/total from the allocated devices, a shareable NIC's bandwidth used/total
from the claims' `consumedCapacity`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from playwright.async_api import expect

from tests.browser.conftest import PageFor, running

# One node: a GPU that is whole or split in two 1g.10gb partitions (or one 7g.80gb), and a NIC shared by
# claims, each taking some of its 200G of bandwidth.
FLEET: dict[str, Any] = {
    "apiVersion": "sim.cplane.dev/v1alpha1", "kind": "Fleet", "metadata": {"name": "partitions"},
    "deviceClasses": [
        {"name": "mig.gpu.example.com",
         "expression": 'device.driver == "gpu.example.com" && device.attributes["gpu.example.com"].type == "mig"'},
        {"name": "shared-nic.example.com", "driver": "nic.example.com"}],
    "nodePools": [{
        "name": "mig-node", "count": 1, "instanceType": "sim.mig",
        "capacity": {"cpu": "8", "memory": "64Gi", "pods": "110"},
        "drivers": [
            {"name": "gpu.example.com", "devices": [{
                "type": "gpu", "count": 1, "memory": "80Gi",
                "partitions": {"counters": {"memory": "80Gi", "compute": "7"}, "profiles": [
                    {"name": "1g.10gb", "count": 2, "consumes": {"memory": "10Gi", "compute": "1"}},
                    {"name": "7g.80gb", "count": 1, "consumes": {"memory": "80Gi", "compute": "7"}}]}}]},
            {"name": "nic.example.com", "deviceClass": False, "devices": [{
                "type": "nic", "count": 1, "allowMultipleAllocations": True,
                "capacity": {"bandwidth": {"value": "200G", "requestPolicy": {
                    "default": "10G", "validRange": {"min": "1G", "max": "200G", "step": "1G"}}}}}]}]}]}
POOL = "mig-node-0"
PARTITIONS = ["gpu-0-1g-10gb-0", "gpu-0-1g-10gb-1"]


def _claim(name: str, cls: str, *, bandwidth: str | None = None) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": cls}
    if bandwidth:
        exactly["capacity"] = {"requests": {"bandwidth": bandwidth}}
    return {"metadata": {"name": name, "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "dev", "exactly": exactly}]}}}


def _pod(name: str, claims: list[str]) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default"}, "spec": {
        "resourceClaims": [{"name": c, "resourceClaimName": c} for c in claims],
        "containers": [{"name": "main", "image": "registry.example.com/app:1",
                        "resources": {"claims": [{"name": c} for c in claims]}}]}}


async def test_partitions_and_consumable_capacity(tmp_path: Path, page_for: PageFor) -> None:
    async with running(tmp_path, fleet=FLEET, nodes=1, devices=5) as cluster:
        page = await page_for(cluster)
        counters = page.locator('[data-counter-set="gpu-0-counters"]')
        # the whole GPU and its partitions, under the counter set they consume
        for device in ["gpu-0", *PARTITIONS, "gpu-0-7g-80gb-0"]:
            await expect(counters.locator(f'[data-device="gpu.example.com/{POOL}/{device}"]')).to_have_count(1)
        await expect(counters.locator(".counters")).to_have_text("memory 0Gi/80Gi, compute 0/7")
        nic = page.locator(f'[data-device="nic.example.com/{POOL}/nic-0"]')
        await expect(nic.locator(".dev-cap")).to_have_text("bandwidth 0G/200G")

        claims = "resourceclaims.resource.k8s.io"
        await cluster.client.create(claims, _claim("slice-a", "mig.gpu.example.com"), namespace="default")
        await cluster.client.create(claims, _claim("net-a", "shared-nic.example.com", bandwidth="20G"), namespace="default")
        await cluster.client.create(claims, _claim("net-b", "shared-nic.example.com", bandwidth="30G"), namespace="default")
        await cluster.client.create("pods", _pod("a", ["slice-a", "net-a"]), namespace="default")
        await cluster.client.create("pods", _pod("b", ["net-b"]), namespace="default")

        await expect(counters.locator(".counters")).to_have_text("memory 10Gi/80Gi, compute 1/7")
        await expect(counters.locator('[data-state="allocated"][data-claim="default/slice-a"]')).to_have_count(1)
        # the whole GPU and the 7g.80gb partition are free, but no longer fit in what is left
        whole = counters.locator(f'[data-device="gpu.example.com/{POOL}/gpu-0"]')
        await expect(whole).to_have_attribute("data-state", "free")
        await expect(whole.locator(".dev-blocked")).to_have_text(
            "counters exhausted: memory 80Gi needed, 70Gi left, compute 7 needed, 6 left")
        free_partition = [p for p in PARTITIONS if await counters.locator(
            f'[data-device="gpu.example.com/{POOL}/{p}"]').get_attribute("data-state") == "free"]
        assert len(free_partition) == 1
        await expect(counters.locator(f'[data-device="gpu.example.com/{POOL}/{free_partition[0]}"] .dev-blocked')).to_have_count(0)
        await expect(nic.locator(".dev-cap")).to_have_text("bandwidth 50G/200G")
        await expect(nic).to_have_attribute("data-claim", "default/net-a default/net-b")
        await expect(nic.locator(".pod")).to_have_text(["default/a", "default/b"])
        await page.context.close()  # before its server stops
