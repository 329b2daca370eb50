"""Several scheduler profiles through the API (KubeSchedulerConfiguration): each pod is scheduled
by the profile its `spec.schedulerName` names — a packing profile puts pods on one node while
default-scheduler spreads them — and a pod naming a scheduler we do not run stays Pending,
untouched (no condition, no event), for the user's own scheduler."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from controllers.runtime import client as clients
from cp.scheduling import framework, profiles
from tests.controllers.scheduler import support as s
from tests.controllers.scheduler.conftest import StartCluster

HEAD = {"apiVersion": profiles.API_VERSION, "kind": profiles.KIND}


class _PackByCpu(framework.Plugin):
    """A test score plugin: MostAllocated on cpu (requested after placing the pod / allocatable)."""

    name = "ExamplePackByCpu"
    points = frozenset({"Score"})

    def __init__(self, args: Mapping[str, Any]) -> None:
        self.args = dict(args)

    def score(self, state: framework.CycleState, pod: framework.PodInfo, node: framework.NodeState) -> int:
        capacity = node.info.alloc.resources.cpu
        used = node.usage.requested.cpu + pod.req.requests.cpu
        return framework.MAX_NODE_SCORE * used // capacity if capacity else 0


@pytest.fixture
def pack_plugin() -> Iterator[None]:
    profiles.PLUGINS[_PackByCpu.name] = _PackByCpu
    try:
        yield
    finally:
        profiles.PLUGINS.pop(_PackByCpu.name, None)


def _pod(name: str, scheduler_name: str) -> dict[str, Any]:
    return s.pod(name, schedulerName=scheduler_name,
                 containers=[{"name": "app", "image": "registry.k8s.io/pause:3.10",
                              "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}])


async def _spread_then_pack(client: clients.Client, packer: str) -> None:
    spread = [await _bind(client, _pod(f"spread-{i}", "default-scheduler")) for i in range(3)]
    assert len(set(spread)) == 3  # LeastAllocated: one per node
    packed = [await _bind(client, _pod(f"packed-{i}", packer)) for i in range(3)]
    assert len(set(packed)) == 1  # the packing profile: all on one node


async def _bind(client: clients.Client, body: dict[str, Any]) -> str:
    await client.create("pods", body)
    return await s.wait_bound(client, body["metadata"]["name"])


@pytest.mark.usefixtures("pack_plugin")
async def test_each_pod_uses_the_profile_its_scheduler_name_names(client: clients.Client,
                                                                  start_cluster: StartCluster) -> None:
    config = profiles.parse_config({**HEAD, "profiles": [
        {"schedulerName": "default-scheduler"},
        {"schedulerName": "packer", "plugins": {"score": {"enabled": [{"name": _PackByCpu.name, "weight": 10}]}}},
    ]})
    cluster = await start_cluster(config=config)
    assert cluster.scheduler.scheduler_names == {"default-scheduler", "packer"}
    await _spread_then_pack(client, "packer")
    await client.create("pods", _pod("mine", "my-scheduler"))
    await cluster.settle()
    pod = await s.get(client, "pods", "mine")
    assert pod is not None and not pod["spec"].get("nodeName")
    assert not (pod.get("status") or {}).get("conditions")  # untouched: no PodScheduled condition
    events = (await client.list("events", namespace="default")).items
    assert not [e for e in events if e["involvedObject"]["name"] == "mine"]


async def test_most_allocated_profile_packs(client: clients.Client, start_cluster: StartCluster) -> None:
    """The issue's case: NodeResourcesFit with the MostAllocated scoring strategy."""
    profiles.default_profile()  # imports the plugin modules
    if "NodeResourcesFit" not in profiles.PLUGINS:
        pytest.skip("needs the NodeResourcesFit plugin class (cp/scheduling/plugins/noderesources.py)")
    config = profiles.parse_config({**HEAD, "profiles": [
        {"schedulerName": "default-scheduler"},
        {"schedulerName": "bin-packing", "pluginConfig": [{"name": "NodeResourcesFit", "args": {
            "scoringStrategy": {"type": "MostAllocated",
                                "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]}}}]},
    ]})
    await start_cluster(config=config)
    await _spread_then_pack(client, "bin-packing")
