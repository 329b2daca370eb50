"""controllers/fleet/devices.py: the fake drivers' CDI specs (as the upstream example driver writes
them) and checkpoint entries, removed on unprepare; what each container gets from its claims; and the
fleet controller doing both for a pod that runs and is deleted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from api import server as servers
from controllers import fleet as fleets
from controllers.fleet import devices, nodedirs
from controllers.fleet import objects as objs
from controllers.runtime import client as clients
from cp import cdi, errors
from cp import clock as clocks
from tests.controllers.fleet.conftest import running_fleet
from tests.waiting import eventually

UID = "c0ffee00-1111-2222-3333-444455556666"
GPU = "k8s.gpu.example.com/gpu"
NIC = "k8s.nic.example.com/nic"
CLAIMS = "resourceclaims.resource.k8s.io"


def _claim(uid: str = UID, *, results: list[dict[str, Any]] | None = None,
           config: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    results = results if results is not None else [
        {"request": "gpus", "driver": "gpu.example.com", "pool": "gpu-node-0", "device": "gpu-0"},
        {"request": "gpus", "driver": "gpu.example.com", "pool": "gpu-node-0", "device": "gpu-1"},
        {"request": "nic", "driver": "nic.example.com", "pool": "gpu-node-0", "device": "nic-0"}]
    devs: dict[str, Any] = {"results": results}
    if config:
        devs["config"] = config
    return {"metadata": {"name": "devs", "namespace": "default", "uid": uid},
            "status": {"allocation": {"devices": devs}}}


def _pod(*containers: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "pod0", "namespace": "default"},
            "spec": {"nodeName": "gpu-node-0", "resourceClaims": [{"name": "devs", "resourceClaimName": "devs"}],
                     "containers": list(containers)}}


def test_the_fake_driver_writes_specs_as_the_example_driver(tmp_path: Path, demo: fleets.Fleet) -> None:
    fake = devices.FakeDevices(root=tmp_path, plan=objs.Plan(demo))
    fake.prepare(claim=_claim(), node="gpu-node-0")
    nd = nodedirs.NodeDir(root=tmp_path, node="gpu-node-0")
    assert sorted(p.name for p in nd.cdi.iterdir()) == [
        f"k8s.gpu.example.com-gpu_{UID}.json", "k8s.gpu.example.com-gpu_common.json",
        f"k8s.nic.example.com-nic_{UID}.json", "k8s.nic.example.com-nic_common.json"]

    common = cdi.read_spec(nd.cdi / "k8s.gpu.example.com-gpu_common.json")
    assert (common.cdi_version, common.kind) == ("0.3.0", GPU)
    assert [(d.name, d.container_edits.env) for d in common.devices] == [
        ("common", ["KUBERNETES_NODE_NAME=gpu-node-0", "DRA_RESOURCE_DRIVER_NAME=gpu.example.com"])]
    claim_spec = cdi.read_spec(nd.cdi / f"k8s.gpu.example.com-gpu_{UID}.json")
    assert (claim_spec.cdi_version, claim_spec.kind) == ("0.3.0", GPU)  # device names start with a letter
    assert [(d.name, d.container_edits.env) for d in claim_spec.devices] == [
        (f"{UID}-gpu-0", [f"GPU_DEVICE_GPU_0_RESOURCE_CLAIM={UID}", "DRA_ADMIN_ACCESS=false", "GPU_DEVICE_0=gpu-0",
                          "GPU_DEVICE_0_SHARING_STRATEGY=TimeSlicing", "GPU_DEVICE_0_TIMESLICE_INTERVAL=Default"]),
        (f"{UID}-gpu-1", [f"GPU_DEVICE_GPU_1_RESOURCE_CLAIM={UID}", "DRA_ADMIN_ACCESS=false", "GPU_DEVICE_1=gpu-1",
                          "GPU_DEVICE_1_SHARING_STRATEGY=TimeSlicing", "GPU_DEVICE_1_TIMESLICE_INTERVAL=Default"])]
    nic_spec = cdi.read_spec(nd.cdi / f"k8s.nic.example.com-nic_{UID}.json")
    assert [(d.name, d.container_edits.env) for d in nic_spec.devices] == [
        (f"{UID}-nic-0", [f"NIC_DEVICE_NIC_0_RESOURCE_CLAIM={UID}", "DRA_ADMIN_ACCESS=false"])]

    # The checkpoint: per driver the devices with their request and CDI ids (common first).
    prepared = nd.prepared()[UID]
    assert (prepared.namespace, prepared.name) == ("default", "devs")
    assert prepared.drivers["gpu.example.com"] == [
        nodedirs.PreparedDevice(request_names=("gpus",), pool_name="gpu-node-0", device_name=f"gpu-{i}",
                                cdi_device_ids=(f"{GPU}=common", f"{GPU}={UID}-gpu-{i}")) for i in (0, 1)]
    assert prepared.drivers["nic.example.com"][0].cdi_device_ids == (f"{NIC}=common", f"{NIC}={UID}-nic-0")

    # Preparing again writes nothing; unprepare removes the claim's specs and checkpoint entry.
    stamp = (nd.cdi / f"k8s.gpu.example.com-gpu_{UID}.json").stat().st_mtime_ns
    fake.prepare(claim=_claim(), node="gpu-node-0")
    assert (nd.cdi / f"k8s.gpu.example.com-gpu_{UID}.json").stat().st_mtime_ns == stamp
    fake.unprepare(namespace="default", name="devs")
    assert sorted(p.name for p in nd.cdi.iterdir()) == [
        "k8s.gpu.example.com-gpu_common.json", "k8s.nic.example.com-nic_common.json"]
    assert nd.prepared() == {}


def test_sharing_config_capacity_shares_subrequests_and_admin_access(tmp_path: Path, demo: fleets.Fleet) -> None:
    uid = "0123abcd-0000-0000-0000-000000000000"
    config = [
        {"source": "FromClass", "opaque": {"driver": "gpu.example.com", "parameters": {
            "apiVersion": "gpu.resource.example.com/v1alpha1", "kind": "GpuConfig",
            "sharing": {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Long"}}}}},
        {"source": "FromClaim", "requests": ["split"], "opaque": {"driver": "gpu.example.com", "parameters": {
            "apiVersion": "gpu.resource.example.com/v1alpha1", "kind": "GpuConfig",
            "sharing": {"strategy": "SpacePartitioning", "spacePartitioningConfig": {"partitionCount": 10}}}}},
        {"source": "FromClaim", "opaque": {"driver": "other.example.com", "parameters": {"kind": "GpuConfig"}}}]
    results = [
        {"request": "split/big", "driver": "gpu.example.com", "pool": "gpu-node-1", "device": "gpu-2",
         "shareID": "7f3e", "consumedCapacity": {"memory": "16Gi"}},
        {"request": "slice", "driver": "gpu.example.com", "pool": "gpu-node-1", "device": "gpu-3",
         "adminAccess": True}]
    fake = devices.FakeDevices(root=tmp_path, plan=objs.Plan(demo))
    fake.prepare(claim=_claim(uid, results=results, config=config), node="gpu-node-1")
    nd = nodedirs.NodeDir(root=tmp_path, node="gpu-node-1")
    spec = cdi.read_spec(nd.cdi / f"k8s.gpu.example.com-gpu_{uid}.json")
    assert spec.cdi_version == "0.5.0"  # its device names start with a digit
    assert [(d.name, d.container_edits.env) for d in spec.devices] == [
        (f"{uid}-gpu-2-7f3e", [f"GPU_DEVICE_GPU_2_RESOURCE_CLAIM={uid}", "DRA_ADMIN_ACCESS=false",
                               "GPU_DEVICE_2=gpu-2", "GPU_DEVICE_2_SHARING_STRATEGY=SpacePartitioning",
                               "GPU_DEVICE_2_PARTITION_COUNT=10", "GPU_DEVICE_2_MEMORY=16Gi"]),
        (f"{uid}-gpu-3", [f"GPU_DEVICE_GPU_3_RESOURCE_CLAIM={uid}", "DRA_ADMIN_ACCESS=true",
                          "GPU_DEVICE_3=gpu-3", "GPU_DEVICE_3_SHARING_STRATEGY=TimeSlicing",
                          "GPU_DEVICE_3_TIMESLICE_INTERVAL=Long"])]
    shared = nd.prepared()[uid].drivers["gpu.example.com"][0]
    assert shared.request_names == ("split",) and shared.share_id == "7f3e"  # the parent request, as recorded
    # After a restart (nothing in memory) unprepare finds the specs from the claim's allocation.
    devices.FakeDevices(root=tmp_path, plan=objs.Plan(demo)).unprepare(
        namespace="default", name="devs", claim=_claim(uid, results=results))
    assert not (nd.cdi / f"k8s.gpu.example.com-gpu_{uid}.json").exists() and nd.prepared() == {}


def test_what_each_container_gets(tmp_path: Path, demo: fleets.Fleet) -> None:
    devices.FakeDevices(root=tmp_path, plan=objs.Plan(demo)).prepare(claim=_claim(), node="gpu-node-0")
    nd = nodedirs.NodeDir(root=tmp_path, node="gpu-node-0")
    pod = _pod({"name": "all", "resources": {"claims": [{"name": "devs"}]}},
               {"name": "nic-only", "resources": {"claims": [{"name": "devs", "request": "nic"}]}},
               {"name": "none"})

    every = devices.resolve(node_dir=nd, pod=pod, container="all")
    assert [(c.name, c.request, c.claim, [d.device for d in c.devices]) for c in every.claims] == [
        ("devs", "", "devs", ["gpu-0", "gpu-1", "nic-0"])]
    assert every.cdi_device_ids == [f"{GPU}=common", f"{GPU}={UID}-gpu-0", f"{GPU}={UID}-gpu-1",
                                    f"{NIC}=common", f"{NIC}={UID}-nic-0"]
    env = every.edits.environment()
    assert env["GPU_DEVICE_0"] == "gpu-0" and env["GPU_DEVICE_1"] == "gpu-1"
    assert env["KUBERNETES_NODE_NAME"] == "gpu-node-0"
    assert env["DRA_RESOURCE_DRIVER_NAME"] == "nic.example.com"  # the later spec's value wins
    assert every.edits.env[:4] == ["KUBERNETES_NODE_NAME=gpu-node-0", "DRA_RESOURCE_DRIVER_NAME=gpu.example.com",
                                   f"GPU_DEVICE_GPU_0_RESOURCE_CLAIM={UID}", "DRA_ADMIN_ACCESS=false"]

    nic = devices.container_edits(node_dir=nd, pod=pod, container="nic-only")
    assert nic.environment() == {"KUBERNETES_NODE_NAME": "gpu-node-0", "DRA_RESOURCE_DRIVER_NAME": "nic.example.com",
                                 "NIC_DEVICE_NIC_0_RESOURCE_CLAIM": UID, "DRA_ADMIN_ACCESS": "false"}
    assert devices.container_edits(node_dir=nd, pod=pod, container="none") == cdi.ContainerEdits()

    with pytest.raises(devices.DevicesError, match="pod pod0 has no container 'ghost'"):
        devices.resolve(node_dir=nd, pod=pod, container="ghost")
    other = _pod({"name": "c", "resources": {"claims": [{"name": "devs"}]}})
    other["spec"]["resourceClaims"] = [{"name": "devs", "resourceClaimName": "elsewhere"}]
    elsewhere = devices.resolve(node_dir=nd, pod=other, container="c")  # no driver here prepared it
    assert [(c.claim, c.prepared, c.devices) for c in elsewhere.claims] == [("elsewhere", False, [])]
    assert elsewhere.cdi_device_ids == [] and elsewhere.edits == cdi.ContainerEdits()
    templated = _pod({"name": "c", "resources": {"claims": [{"name": "devs"}]}})
    templated["spec"]["resourceClaims"] = [{"name": "devs", "resourceClaimTemplateName": "t"}]
    with pytest.raises(devices.DevicesError, match="claim for 'devs' has not been created yet"):
        devices.resolve(node_dir=nd, pod=templated, container="c")
    templated["status"] = {"resourceClaimStatuses": [{"name": "devs", "resourceClaimName": "devs"}]}
    assert devices.resolve(node_dir=nd, pod=templated, container="c").cdi_device_ids == every.cdi_device_ids

    (nd.cdi / f"k8s.nic.example.com-nic_{UID}.json").write_text("{")  # a driver wrote a broken spec
    with pytest.raises(devices.DevicesError) as info:
        devices.resolve(node_dir=nd, pod=pod, container="nic-only")
    message = str(info.value)
    assert message.startswith(f"container nic-only of pod default/pod0 on node gpu-node-0: unresolvable CDI "
                              f"devices {NIC}={UID}-nic-0 (failed to load CDI Spec failed to parse CDI Spec ")
    assert f"k8s.nic.example.com-nic_{UID}.json" in message


def test_the_extended_resource_claim_counts_for_its_container(tmp_path: Path, demo: fleets.Fleet) -> None:
    devices.FakeDevices(root=tmp_path, plan=objs.Plan(demo)).prepare(claim=_claim(), node="gpu-node-0")
    nd = nodedirs.NodeDir(root=tmp_path, node="gpu-node-0")
    pod = _pod({"name": "a", "resources": {"requests": {"example.com/gpu": "1"}}},
               {"name": "b", "resources": {"requests": {"example.com/gpu": "0"}}})
    pod["spec"]["resourceClaims"] = []
    pod["status"] = {"extendedResourceClaimStatus": {"resourceClaimName": "devs", "requestMappings": [
        {"containerName": "a", "resourceName": "example.com/gpu", "requestName": "gpus"},
        {"containerName": "b", "resourceName": "example.com/gpu", "requestName": "gpus"}]}}
    got = devices.resolve(node_dir=nd, pod=pod, container="a")
    assert [(c.name, c.request, [d.device for d in c.devices]) for c in got.claims] == [
        ("example.com/gpu", "gpus", ["gpu-0", "gpu-1"])]
    assert devices.resolve(node_dir=nd, pod=pod, container="b").claims == []


async def test_the_fleet_prepares_and_unprepares_cdi_specs(srv: servers.Running, client: clients.Client,
                                                           clock: clocks.VirtualClock, demo: fleets.Fleet,
                                                           tmp_path: Path) -> None:
    root = tmp_path / "nodes"
    async with running_fleet(srv, clock, demo, kubelet_root=root):
        await client.create(CLAIMS, {
            "metadata": {"name": "gpus", "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "gpus", "exactly": {
                "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 2}}]}}})
        pod = await client.create("pods", {
            "metadata": {"name": "pod0", "namespace": "default"},
            "spec": {"nodeName": "gpu-node-1", "resourceClaims": [{"name": "gpus", "resourceClaimName": "gpus"}],
                     "containers": [{"name": "ctr0", "image": "ubuntu:22.04", "resources": {"claims": [{"name": "gpus"}]}}]}})
        claim = await client.patch(CLAIMS, "gpus", {"status": {
            "allocation": {"devices": {"results": [
                {"request": "gpus", "driver": "gpu.example.com", "pool": "gpu-node-1", "device": d}
                for d in ("gpu-2", "gpu-3")]}},
            "reservedFor": [{"resource": "pods", "name": "pod0", "uid": pod["metadata"]["uid"]}]}},
            namespace="default", subresource="status")
        uid = claim["metadata"]["uid"]

        async def running() -> bool:
            p = await client.get("pods", "pod0", namespace="default")
            return bool(p["status"].get("phase") == "Running")
        await eventually(running, what="pod0 running")
        nd = nodedirs.NodeDir(root=root, node="gpu-node-1")
        spec_file = nd.cdi / f"k8s.gpu.example.com-gpu_{uid}.json"
        assert spec_file.exists()
        assert [d.device_name for d in nd.prepared()[uid].drivers["gpu.example.com"]] == ["gpu-2", "gpu-3"]
        running_pod = await client.get("pods", "pod0", namespace="default")
        env = devices.container_edits(node_dir=nd, pod=running_pod, container="ctr0").environment()
        assert (env["GPU_DEVICE_2"], env["GPU_DEVICE_3"]) == ("gpu-2", "gpu-3")
        assert env["KUBERNETES_NODE_NAME"] == "gpu-node-1"

        await client.delete("pods", "pod0", namespace="default")
        clock.advance(1)

        async def unprepared() -> bool:
            try:
                await client.get("pods", "pod0", namespace="default")
                return False
            except errors.NotFound:
                return not spec_file.exists() and nd.prepared() == {}
        await eventually(unprepared, what="claim's CDI spec and checkpoint entry removed")
        assert (nd.cdi / "k8s.gpu.example.com-gpu_common.json").exists()


def test_partitions_and_generic_devices(tmp_path: Path) -> None:
    fleet = fleets.fleet_from_dict({
        "apiVersion": "sim.cplane.dev/v1alpha1", "kind": "Fleet", "metadata": {"name": "p"},
        "nodePools": [{"name": "n", "drivers": [
            {"name": "gpu.example.com", "devices": [{"type": "gpu", "count": 1, "partitions": {
                "counters": {"memory": "80Gi"}, "profiles": [{"name": "1g.10gb", "count": 2,
                                                              "consumes": {"memory": "10Gi"}}]}}]},
            {"name": "fpga.example.com", "devices": [{"count": 1, "namePrefix": "fpga"}]}]}]})
    uid = "feed0000-0000-0000-0000-000000000000"
    claim = _claim(uid, results=[
        {"request": "mig", "driver": "gpu.example.com", "pool": "n-0", "device": "gpu-0-1g-10gb-1"},
        {"request": "fpga", "driver": "fpga.example.com", "pool": "n-0", "device": "fpga-0"}])
    devices.FakeDevices(root=tmp_path, plan=objs.Plan(fleet)).prepare(claim=claim, node="n-0")
    cdi_dir = nodedirs.NodeDir(root=tmp_path, node="n-0").cdi
    mig = cdi.read_spec(cdi_dir / f"k8s.gpu.example.com-gpu_{uid}.json").devices[0]
    assert mig.container_edits.env[2:] == [
        "GPU_DEVICE_0_1G_10GB_1=gpu-0-1g-10gb-1", "GPU_DEVICE_0_1G_10GB_1_SHARING_STRATEGY=TimeSlicing",
        "GPU_DEVICE_0_1G_10GB_1_TIMESLICE_INTERVAL=Default"]
    fpga = cdi.read_spec(cdi_dir / f"k8s.fpga.example.com-device_{uid}.json")
    assert fpga.kind == "k8s.fpga.example.com/device"
    assert fpga.devices[0].container_edits.env == [f"DEVICE_DEVICE_FPGA_0_RESOURCE_CLAIM={uid}", "DRA_ADMIN_ACCESS=false"]


async def test_a_starting_kubelet_sweeps_what_was_prepared_for_claims_deleted_meanwhile(
        srv: servers.Running, client: clients.Client, clock: clocks.VirtualClock, demo: fleets.Fleet,
        tmp_path: Path) -> None:
    """A claim prepared by a fake driver and deleted while no fleet ran: its spec and checkpoint entry
    go when the node's kubelet starts; a claim that still exists keeps them."""
    root = tmp_path / "nodes"
    kept = await client.create(CLAIMS, {"metadata": {"name": "devs", "namespace": "default"},
                                        "spec": {"devices": {"requests": [{"name": "gpus", "exactly": {
                                            "deviceClassName": "gpu.example.com"}}]}}})
    fake = devices.FakeDevices(root=root, plan=objs.Plan(demo))
    fake.prepare(claim=_claim(), node="gpu-node-0")  # uid UID: no such claim
    fake.prepare(claim=_claim(kept["metadata"]["uid"]), node="gpu-node-0")
    nd = nodedirs.NodeDir(root=root, node="gpu-node-0")
    assert sorted(nd.prepared()) == sorted([UID, kept["metadata"]["uid"]])
    async with running_fleet(srv, clock, demo, kubelet_root=root):
        await eventually(lambda: UID not in nd.prepared(), what="the deleted claim's entry swept")
        assert sorted(nd.prepared()) == [kept["metadata"]["uid"]]
        names = sorted(p.name for p in nd.cdi.iterdir())
        assert not any(UID in n for n in names) and any(kept["metadata"]["uid"] in n for n in names)
