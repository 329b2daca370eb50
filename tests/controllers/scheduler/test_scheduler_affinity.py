"""InterPodAffinity and PodTopologySpread end to end through the API: four nodes in two zones, the
scheduler with the fleet under one Manager. A Deployment-like set of pods with required
anti-affinity on the hostname lands one per node (the fifth stays Pending with upstream's reason),
and a topology spread constraint with maxSkew 1 over zones puts two pods in each zone."""

from __future__ import annotations

from collections import Counter
from typing import Any

from controllers.runtime import client as clients
from tests.controllers.scheduler import support as s
from tests.controllers.scheduler.conftest import StartCluster

ZONE = "topology.kubernetes.io/zone"
GPU = "gpu.example.com"

ZONED_FLEET = {
    "apiVersion": "sim.cplane.dev/v1alpha1", "kind": "Fleet", "metadata": {"name": "zones"},
    "nodePools": [
        {"name": f"zone-{z}", "count": 2, "labels": {ZONE: z},
         "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
         "drivers": [{"name": GPU, "devices": [{"type": "gpu", "count": 1, "model": "A100"}]}]}
        for z in ("a", "b")
    ],
}


def web(name: str, **spec: Any) -> dict[str, Any]:
    body = s.pod(name, **spec)
    body["metadata"]["labels"] = {"app": "web"}
    return body


async def zone_of(client: clients.Client, node: str) -> str:
    obj = await client.get("nodes", node)
    return str(obj["metadata"]["labels"][ZONE])


async def test_required_anti_affinity_spreads_one_pod_per_node(client: clients.Client,
                                                               start_cluster: StartCluster) -> None:
    await start_cluster(fleet=ZONED_FLEET)
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    for i in range(4):
        await client.create("pods", web(f"web-{i}", affinity=anti))
    nodes = [await s.wait_bound(client, f"web-{i}") for i in range(4)]
    assert len(set(nodes)) == 4
    await client.create("pods", web("web-4", affinity=anti))
    cond = await s.wait_unschedulable(client, "web-4")
    assert cond["message"].startswith("0/4 nodes are available: 4 node(s) didn't match pod anti-affinity rules.")


async def test_topology_spread_max_skew_one_across_zones(client: clients.Client, start_cluster: StartCluster) -> None:
    await start_cluster(fleet=ZONED_FLEET)
    constraint = {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
                  "labelSelector": {"matchLabels": {"app": "web"}}}
    # Two pods pinned to zone a first: the spread must then send the next two to zone b.
    pin = {"nodeSelector": {ZONE: "a"}}
    for i in range(2):
        await client.create("pods", web(f"pinned-{i}", **pin))
        await s.wait_bound(client, f"pinned-{i}")
    for i in range(2):
        await client.create("pods", web(f"spread-{i}", topologySpreadConstraints=[constraint]))
    zones = Counter([await zone_of(client, await s.wait_bound(client, f"spread-{i}")) for i in range(2)])
    assert zones == {"b": 2}
    # Balanced now (2/2): a fifth pod may go to either zone, a sixth must go to the other one.
    await client.create("pods", web("spread-2", topologySpreadConstraints=[constraint]))
    first = await zone_of(client, await s.wait_bound(client, "spread-2"))
    await client.create("pods", web("spread-3", topologySpreadConstraints=[constraint]))
    second = await zone_of(client, await s.wait_bound(client, "spread-3"))
    assert {first, second} == {"a", "b"}


async def test_topology_spread_rejects_a_skewed_zone(client: clients.Client, start_cluster: StartCluster) -> None:
    """Three pods in zone a, none in b: a pod held to zone a by its nodeSelector (counting every
    node, nodeAffinityPolicy Ignore) would make the skew 4 - 0 > 1."""
    await start_cluster(fleet=ZONED_FLEET)
    for i in range(3):
        await client.create("pods", web(f"pinned-{i}", nodeSelector={ZONE: "a"}))
        await s.wait_bound(client, f"pinned-{i}")
    constraint = {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
                  "labelSelector": {"matchLabels": {"app": "web"}}, "nodeAffinityPolicy": "Ignore"}
    await client.create("pods", web("skewed", nodeSelector={ZONE: "a"}, topologySpreadConstraints=[constraint]))
    cond = await s.wait_unschedulable(client, "skewed")
    assert cond["message"].startswith(
        "0/4 nodes are available: 2 node(s) didn't match Pod's node affinity/selector, "
        "2 node(s) didn't match pod topology spread constraints.")
