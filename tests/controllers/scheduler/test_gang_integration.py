"""Gang scheduling end to end through the API (GenericWorkload + GangScheduling on): pods of a PodGroup
with `minCount` are placed all together or not at all; with the gates off (a default 1.37 cluster) the
pods' `schedulingGroup` is dropped and they are scheduled one by one."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from api import server as servers
from controllers.runtime import client as clients
from cp import clock as clocks
from cp import errors, features
from cp import resources as res
from tests.controllers.scheduler import support as s
from tests.controllers.scheduler.conftest import StartCluster
from tests.controllers.scheduler.support import eventually

GATES = features.FeatureGates({features.GENERIC_WORKLOAD: True, features.GANG_SCHEDULING: True})
PODGROUPS = res.gated_kind("scheduling.k8s.io", "podgroups")

# One node with room for two of the 1-CPU pods below (and a device class, which the fixture waits for).
SMALL = {
    "apiVersion": "sim.cplane.dev/v1alpha1", "kind": "Fleet", "metadata": {"name": "gang"},
    "deviceClasses": [{"name": "gpu.example.com", "driver": "gpu.example.com"}],
    "nodePools": [{"name": "small", "count": 1, "capacity": {"cpu": "2", "memory": "8Gi", "pods": "110"}}],
}


@pytest.fixture
def gates() -> features.FeatureGates:
    return GATES


@pytest.fixture
async def srv(tmp_path: Path, clock: clocks.Clock, gates: features.FeatureGates) -> AsyncIterator[servers.Running]:
    async with servers.running(data_dir=tmp_path / "data", db_url="memory:", clock=clock,
                               app_options={"feature_gates": gates}) as running:
        yield running


def member(name: str, group: str = "trainers") -> dict[str, Any]:
    return s.pod(name, requests={"cpu": "1"}, schedulingGroup={"podGroupName": group})


def pod_group(name: str, min_count: int) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}}}


async def bound(client: clients.Client, names: list[str]) -> dict[str, str]:
    return {n: await s.bound_node(client, n) for n in names}


async def test_a_gang_binds_all_together_or_not_at_all(client: clients.Client, start_cluster: StartCluster) -> None:
    cluster = await start_cluster(fleet=SMALL, claims=False, feature_gates=GATES)
    await client.create(PODGROUPS, pod_group("trainers", 3))
    names = ["t-0", "t-1", "t-2"]
    for name in names[:2]:
        await client.create("pods", member(name))
    await cluster.settle()
    # Two of three: PreEnqueue keeps them out of the queue, silently.
    for name in names[:2]:
        pod = await s.get(client, "pods", name)
        assert s.condition(pod or {}, "PodScheduled") is None

    await client.create("pods", member("t-2"))
    # All three tried together: two fit, the third does not, so none is bound.
    cond = await s.wait_unschedulable(client, "t-2")
    assert cond["message"].startswith("0/1 nodes are available: 1 Insufficient cpu.")
    for name in names[:2]:
        c = await s.wait_unschedulable(client, name)
        assert c["message"] == "minCount (3) cannot be satisfied: 2 scheduled, 0 remaining"
    await cluster.settle()
    assert await bound(client, names) == dict.fromkeys(names, "")
    group = await client.get(PODGROUPS, "trainers", namespace="default")
    pg_cond = s.condition(group, "PodGroupInitiallyScheduled")
    assert pg_cond is not None and (pg_cond["status"], pg_cond["reason"]) == ("False", "Unschedulable")

    # More capacity: a second node brings the gang back, and all three bind.
    await client.create("nodes", {"metadata": {"name": "extra", "labels": {"kubernetes.io/hostname": "extra"}},
                                  "status": {"capacity": {"cpu": "2", "memory": "8Gi", "pods": "110"},
                                             "allocatable": {"cpu": "2", "memory": "8Gi", "pods": "110"}}})
    nodes = {n: await s.wait_bound(client, n) for n in names}
    assert sorted(nodes.values()).count("extra") in (1, 2) and "" not in nodes.values()

    async def initially_scheduled() -> bool:
        pg = await client.get(PODGROUPS, "trainers", namespace="default")
        c = s.condition(pg, "PodGroupInitiallyScheduled")
        return c is not None and c["status"] == "True" and c["reason"] == "Scheduled"
    await eventually(initially_scheduled, what="PodGroupInitiallyScheduled=True")


async def test_pods_wait_for_their_pod_group(client: clients.Client, start_cluster: StartCluster) -> None:
    cluster = await start_cluster(fleet=SMALL, claims=False, feature_gates=GATES)
    for name in ("w-0", "w-1"):
        await client.create("pods", member(name, group="late"))
    await cluster.settle()
    assert await bound(client, ["w-0", "w-1"]) == {"w-0": "", "w-1": ""}
    await client.create(PODGROUPS, pod_group("late", 2))  # the group appears: both fit on the node
    assert {await s.wait_bound(client, n) for n in ("w-0", "w-1")} == {"small-0"}


async def test_lowering_min_count_lets_a_partial_gang_in(client: clients.Client, start_cluster: StartCluster) -> None:
    cluster = await start_cluster(fleet=SMALL, claims=False, feature_gates=GATES)
    await client.create(PODGROUPS, pod_group("four", 4))
    for name in ("f-0", "f-1"):
        await client.create("pods", member(name, group="four"))
    await cluster.settle()
    assert await bound(client, ["f-0", "f-1"]) == {"f-0": "", "f-1": ""}
    await client.patch(PODGROUPS, "four", {"spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}},
                       namespace="default", patch_type="merge")
    assert {await s.wait_bound(client, n) for n in ("f-0", "f-1")} == {"small-0"}


class TestGatesOff:
    @pytest.fixture
    def gates(self) -> features.FeatureGates:
        return features.DEFAULT

    async def test_the_field_is_dropped_and_pods_schedule_one_by_one(
            self, client: clients.Client, start_cluster: StartCluster) -> None:
        await start_cluster(fleet=SMALL, claims=False)
        with pytest.raises(errors.NotFound):  # scheduling.k8s.io/v1beta1 is not served
            await client.create(PODGROUPS, pod_group("trainers", 3))
        for name in ("t-0", "t-1", "t-2"):
            created = await client.create("pods", member(name))
            assert "schedulingGroup" not in created["spec"]
        assert {await s.wait_bound(client, n) for n in ("t-0", "t-1")} == {"small-0"}
        cond = await s.wait_unschedulable(client, "t-2")
        assert cond["message"].startswith("0/1 nodes are available: 1 Insufficient cpu.")


async def test_a_gang_that_does_not_fit_allocates_nothing(client: clients.Client, start_cluster: StartCluster) -> None:
    # Two GPU nodes with four GPUs each: two of three four-GPU pods fit, so the gang of three gets
    # nothing — no claim allocated or reserved — until its minCount is lowered to two.
    cluster = await start_cluster(feature_gates=GATES)
    await s.template(client, "four-gpus", s.claim_spec(s.request(count=4)))
    await client.create(PODGROUPS, pod_group("big", 3))
    names = ["b-0", "b-1", "b-2"]
    for name in names:
        await client.create("pods", s.pod(name, template="four-gpus", schedulingGroup={"podGroupName": "big"}))
    for name in names:
        await s.wait_unschedulable(client, name)
    await cluster.settle()
    assert await bound(client, names) == dict.fromkeys(names, "")
    for name in names:
        claim = await s.pod_claim(client, name)
        assert not claim.get("status", {}).get("allocation") and not claim.get("status", {}).get("reservedFor")
    await client.patch(PODGROUPS, "big", {"spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}},
                       namespace="default", patch_type="merge")

    async def two_bound() -> bool:
        return sorted(v for v in (await bound(client, names)).values() if v) == ["gpu-a-0", "gpu-h-0"]
    await eventually(two_bound, what="two of the gang bound")
