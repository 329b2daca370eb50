"""One ResourceClaim shared by a PodGroup (DRAWorkloadResourceClaims + GenericWorkload) end to end: the
ResourceClaim controller generates one claim for the group from the template, owned by the PodGroup and
recorded in its status and in each pod's; the scheduler allocates it once and reserves it for the
PodGroup, so every pod of the group lands where its devices are; the reservation goes when the last pod
of the group does, which deallocates the claim."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from api import server as servers
from controllers import fleet as fleets
from controllers import resourceclaim, scheduler
from controllers.runtime import client as clients
from controllers.runtime import manager as managers
from cp import clock as clocks
from cp import features
from cp import resources as res
from tests.controllers.scheduler import support as s
from tests.controllers.scheduler.conftest import FLEET, Cluster, wait_fleet
from tests.controllers.scheduler.support import eventually

GATES = features.FeatureGates({features.GENERIC_WORKLOAD: True, features.DRA_WORKLOAD_RESOURCE_CLAIMS: True})
PODGROUPS = res.gated_kind("scheduling.k8s.io", "podgroups")
CLAIMS = clients.resolve("resourceclaims.resource.k8s.io")


@pytest.fixture
async def srv(tmp_path: Path, clock: clocks.Clock) -> AsyncIterator[servers.Running]:
    async with servers.running(data_dir=tmp_path / "data", db_url="memory:", clock=clock,
                               app_options={"feature_gates": GATES}) as running:
        yield running


@pytest.fixture
async def cluster(srv: servers.Running, client: clients.Client, clock: clocks.VirtualClock) -> AsyncIterator[Cluster]:
    manager = managers.Manager(client=client, clock=clock)
    ctx = manager.context()
    the_fleet = fleets.fleet_from_dict(FLEET)
    manager.add(fleets.new(ctx, fleet=the_fleet, workers=8))
    manager.add(resourceclaim.new(ctx, feature_gates=GATES))
    manager.add(scheduler.new(ctx, seed=7, feature_gates=GATES))
    stop = asyncio.Event()
    task = asyncio.ensure_future(manager.run(stop))
    await asyncio.wait_for(manager.leading.wait(), 10)
    the_cluster = Cluster(manager)
    await wait_fleet(client, the_fleet)
    await the_cluster.settle()
    yield the_cluster
    stop.set()
    for _ in range(5):
        await asyncio.sleep(0)
    clock.advance(24 * 3600)
    await asyncio.wait_for(task, 10)


def member(name: str) -> dict[str, Any]:
    pod = s.pod(name, template="two-gpus", schedulingGroup={"podGroupName": "trainers"})
    return pod


async def test_one_claim_for_the_group(client: clients.Client, cluster: Cluster) -> None:
    await s.template(client, "two-gpus", s.claim_spec(s.request(count=2)))
    group = await client.create(PODGROUPS, {
        "metadata": {"name": "trainers", "namespace": "default"},
        "spec": {"schedulingPolicy": {"basic": {}},
                 "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "two-gpus"}]}})
    names = [f"t-{i}" for i in range(4)]
    for name in names:
        await client.create("pods", member(name))
    nodes = {n: await s.wait_bound(client, n) for n in names}
    assert len(set(nodes.values())) == 1  # the shared devices pin the group to one node

    claims = (await client.list(CLAIMS, namespace="default")).items
    assert len(claims) == 1
    claim = claims[0]
    owner = claim["metadata"]["ownerReferences"][0]
    assert (owner["apiVersion"], owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "scheduling.k8s.io/v1beta1", "PodGroup", "trainers", group["metadata"]["uid"], True)
    assert claim["metadata"]["generateName"] == "trainers-gpu-"
    assert claim["metadata"]["annotations"]["resource.kubernetes.io/pod-claim-name"] == "gpu"
    assert claim["status"]["reservedFor"] == [{"apiGroup": "scheduling.k8s.io", "resource": "podgroups",
                                              "name": "trainers", "uid": group["metadata"]["uid"]}]
    assert len(s.devices(claim)) == 2
    pg = await client.get(PODGROUPS, "trainers", namespace="default")
    assert pg["status"]["resourceClaimStatuses"] == [{"name": "gpu", "resourceClaimName": claim["metadata"]["name"]}]
    for name in names:
        pod = await client.get("pods", name, namespace="default")
        assert pod["status"]["resourceClaimStatuses"] == [{"name": "gpu",
                                                            "resourceClaimName": claim["metadata"]["name"]}]

    # The last pod of the group going releases the reservation, and with it the devices.
    for name in names[:-1]:
        await client.delete("pods", name, namespace="default", grace_period_seconds=0)
    await cluster.settle()
    still = await client.get(CLAIMS, claim["metadata"]["name"], namespace="default")
    assert still["status"].get("reservedFor") and still["status"].get("allocation")
    await client.delete("pods", names[-1], namespace="default", grace_period_seconds=0)

    async def released() -> bool:
        c = await client.get(CLAIMS, claim["metadata"]["name"], namespace="default")
        return not c["status"].get("reservedFor") and not c["status"].get("allocation")
    await eventually(released, what="the group's claim deallocated")
