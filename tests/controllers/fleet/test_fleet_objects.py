"""The fleet's object builders: device topology and NIC data, slice splitting under the API limits,
attribute templates, node status for hand-made Nodes, and slices that the DRA allocator
library can allocate from (whole GPUs, MIG-like partitions with shared counters, shared NICs).

Out of scope: when the controller writes them (test_fleet_integration.py), pod statuses
(test_lifecycle.py).
"""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from controllers import fleet as fleets
from controllers.fleet import objects as objs
from cp import clock as clocks
from cp import dra, quantity
from tests.controllers.fleet.conftest import EXAMPLES, START

BASE = "apiVersion: sim.cplane.dev/v1alpha1\nkind: Fleet\nmetadata: {name: t}\n"


def _plan(body: str) -> objs.Plan:
    return objs.Plan(fleets.parse_fleet(BASE + textwrap.dedent(body)))


def _attr(device: dict[str, Any], name: str) -> Any:
    (value,) = device["attributes"][name].values()
    return value


def test_demo_topology_pairs_gpus_and_nic_on_pcie_roots() -> None:
    plan = objs.Plan(fleets.load_fleet(EXAMPLES / "demo.yaml"))
    devices = plan.devices(plan.nodes["gpu-node-0"])
    gpus = devices["gpu.example.com"].devices
    (nic,) = devices["nic.example.com"].devices
    assert [_attr(g, "resource.kubernetes.io/pcieRoot") for g in gpus] == [
        "pci0000:10", "pci0000:10", "pci0000:30", "pci0000:30"]
    assert [_attr(g, "resource.kubernetes.io/numaNode") for g in gpus] == [0, 0, 1, 1]
    bus_ids = [_attr(g, "resource.kubernetes.io/pciBusID") for g in gpus] + [
        _attr(nic, "resource.kubernetes.io/pciBusID")]
    assert len(set(bus_ids)) == 5
    assert _attr(nic, "resource.kubernetes.io/pcieRoot") == "pci0000:10"
    assert _attr(nic, "interfaceName") == "ens1f0"
    net0 = plan.network_data("gpu-node-0", "nic.example.com", "nic-0")
    net1 = plan.network_data("gpu-node-1", "nic.example.com", "nic-0")
    assert net0 is not None and net1 is not None
    assert net0.ips != net1.ips and net0.hardware_address == _attr(nic, "macAddress")
    assert {_attr(g, "uuid") for g in gpus} == {_attr(g, "uuid") for g in
                                                objs.Plan(plan.fleet).devices(plan.nodes["gpu-node-0"])[
                                                    "gpu.example.com"].devices}  # stable across runs


def test_slices_split_under_the_per_slice_limits() -> None:
    plan = _plan("""
        nodePools:
        - name: n
          drivers:
          - name: many.example.com
            devices: [{count: 200}]
          - name: mig.example.com
            devices:
            - type: gpu
              count: 10
              partitions:
                counters: {memory: 80Gi}
                profiles: [{name: half, count: 2, consumes: {memory: 40Gi}}]
        """)
    slices = objs.slices_for(plan, plan.nodes["n-0"])
    many = [s for s in slices if s["spec"]["driver"] == "many.example.com"]
    assert [s["metadata"]["name"] for s in many] == ["n-0-many.example.com-0", "n-0-many.example.com-1"]
    assert [len(s["spec"]["devices"]) for s in many] == [128, 72]
    assert {s["spec"]["pool"]["resourceSliceCount"] for s in many} == {2}
    mig = [s for s in slices if s["spec"]["driver"] == "mig.example.com"]
    assert [(s["metadata"]["name"], len(s["spec"].get("devices", [])), len(s["spec"].get("sharedCounters", [])))
            for s in mig] == [("n-0-mig.example.com", 30, 0), ("n-0-mig.example.com-counters-0", 0, 8),
                              ("n-0-mig.example.com-counters-1", 0, 2)]
    assert {s["spec"]["pool"]["resourceSliceCount"] for s in mig} == {3}
    big = _plan("""
        nodePools:
        - name: n
          drivers:
          - name: mig.example.com
            devices:
            - type: gpu
              count: 5
              partitions:
                counters: {memory: 80Gi}
                profiles: [{name: 1g.10gb, count: 14, consumes: {memory: 5Gi}}]
        """)
    sizes = [len(s["spec"].get("devices", [])) for s in objs.slices_for(big, big.nodes["n-0"])]
    assert sizes == [64, 11, 0]  # 75 devices consuming counters: at most 64 per slice


def test_attribute_templates_and_typed_values() -> None:
    plan = _plan("""
        nodePools:
        - name: n
          count: 2
          drivers:
          - name: d.example.com
            sliceName: "{node}"
            devices:
            - count: 2
              namePrefix: dev
              attributes:
                host: "{node}"
                slot: {int: "{index}"}
                label: {string: "slot-{index}"}
                fw: {version: 2.0.1}
                fast: true
              capacity: {mem: 2Gi}
        """)
    (s,) = objs.slices_for(plan, plan.nodes["n-1"])
    assert s["metadata"]["name"] == "n-1"
    dev = s["spec"]["devices"][1]
    assert dev == {"name": "dev-1", "attributes": {
        "host": {"string": "n-1"}, "slot": {"int": 1}, "label": {"string": "slot-1"}, "fw": {"version": "2.0.1"},
        "fast": {"bool": True}}, "capacity": {"mem": {"value": "2Gi"}}}


@pytest.mark.parametrize(("image", "repo", "tag"), [
    ("busybox", "docker.io/library/busybox", "latest"),
    ("nginx:1.27", "docker.io/library/nginx", "1.27"),
    ("bitnami/redis:7", "docker.io/bitnami/redis", "7"),
    ("registry.k8s.io/pause:3.10", "registry.k8s.io/pause", "3.10"),
    ("localhost:5000/app", "localhost:5000/app", "latest"),
    ("ghcr.io/x/y@sha256:abc", "ghcr.io/x/y", ""),
])
def test_image_ref(image: str, repo: str, tag: str) -> None:
    assert objs.image_ref(image) == (repo, tag)


def test_node_made_by_hand_gets_defaults_but_keeps_its_own_values() -> None:
    plan = objs.Plan(None)
    node = {"metadata": {"name": "mine"}, "status": {"capacity": {"cpu": "4"}, "nodeInfo": {"osImage": "Custom"}}}
    status = objs.node_status_patch(plan, node, START)["status"]
    assert status["capacity"]["cpu"] == "4" and status["capacity"]["pods"] == "110"
    assert status["allocatable"]["cpu"] == "4"
    assert status["nodeInfo"]["osImage"] == "Custom" and status["nodeInfo"]["kubeletVersion"] == "v1.37.0"
    assert status["addresses"][0] == {"type": "InternalIP", "address": "172.18.0.2"}
    assert [c["type"] for c in status["conditions"]] == ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"]
    assert objs.heartbeat_due(node, 40) == 0
    assert objs.heartbeat_due({"status": status}, 40) == START + 40
    again = objs.node_status_patch(plan, {"metadata": {"name": "mine"}, "status": status}, START + 40)["status"]
    assert set(again) == {"conditions"}  # later heartbeats carry the conditions only
    assert again["conditions"][3]["lastTransitionTime"] == clocks.rfc3339(START)


# ---------------------------------------------------------------------- the allocator agrees


def _claim(name: str, *requests: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": {"devices": {"requests": list(requests)}}}


def _allocate(plan: objs.Plan, node: str, claims: list[dict[str, Any]],
              allocated: list[dict[str, Any]] = ()) -> list[dict[str, Any]] | None:  # type: ignore[assignment]
    slices = [s for n in plan.nodes.values() for s in objs.slices_for(plan, n)]
    classes = {c["metadata"]["name"]: c for c in objs.device_classes(plan.fleet)}
    node_obj = objs.node_object(plan, plan.nodes[node])
    allocator = dra.Allocator(slices=slices, classes=classes, allocated=dra.AllocatedState.from_claims(allocated),
                              cel_cache=dra.CelCache())
    return allocator.allocate(node=node_obj, claims=claims)


def _devices(result: dict[str, Any]) -> list[str]:
    return [r["device"] for r in result["devices"]["results"]]


def test_the_allocator_allocates_from_the_partitionable_fleet() -> None:
    plan = objs.Plan(fleets.load_fleet(EXAMPLES / "partitionable.yaml"))
    sel = 'device.attributes["gpu.example.com"].profile == "3g.40gb"'
    claim = _claim("a", {"name": "mig", "exactly": {"deviceClassName": "mig.gpu.example.com", "count": 2,
                                                     "selectors": [{"cel": {"expression": sel}}]}})
    (result,) = _allocate(plan, "mig-node-0", [claim]) or pytest.fail("no allocation")
    assert _devices(result) == ["gpu-0-3g-40gb-0", "gpu-0-3g-40gb-1"]
    # Both 3g.40gb partitions use up GPU 0's memory slices: the whole GPU 0 no longer fits.
    claim["status"] = {"allocation": result}
    whole = _claim("b", {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "selectors": [
        {"cel": {"expression": 'device.attributes["gpu.example.com"].type == "gpu"'}}]}})
    (second,) = _allocate(plan, "mig-node-0", [whole], [claim]) or pytest.fail("no allocation")
    assert _devices(second) == ["gpu-1"]
    assert second["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == ["mig-node-0"]


def test_the_allocator_shares_the_nic_bandwidth() -> None:
    plan = objs.Plan(fleets.load_fleet(EXAMPLES / "partitionable.yaml"))
    req = {"name": "net", "exactly": {"deviceClassName": "shared-nic.example.com",
                                      "capacity": {"requests": {"bandwidth": "150G"}}}}
    (first,) = _allocate(plan, "mig-node-1", [_claim("a", req)]) or pytest.fail("no allocation")
    (r,) = first["devices"]["results"]
    assert r["device"] == "nic-0" and r["shareID"]
    assert quantity.parse(r["consumedCapacity"]["bandwidth"]) == quantity.parse("150G")
    done = _claim("a", req) | {"status": {"allocation": first}}
    (second,) = _allocate(plan, "mig-node-1", [_claim("b", req)], [done]) or pytest.fail("no allocation")
    assert _devices(second) == ["nic-1"]  # 150G more does not fit on nic-0 (200G)


def test_the_allocator_matches_gpu_and_nic_on_a_pcie_root() -> None:
    plan = objs.Plan(fleets.load_fleet(EXAMPLES / "demo.yaml"))
    claim = _claim("a", {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "count": 2}},
                   {"name": "nic", "exactly": {"deviceClassName": "nic.example.com"}})
    claim["spec"]["devices"]["constraints"] = [{"matchAttribute": "resource.kubernetes.io/pcieRoot"}]
    (result,) = _allocate(plan, "gpu-node-1", [claim]) or pytest.fail("no allocation")
    assert _devices(result) == ["gpu-0", "gpu-1", "nic-0"]
    assert {r["pool"] for r in result["devices"]["results"]} == {"gpu-node-1"}


NAMED = """
nodePools:
- name: workers
  nodes: [kind-worker, kind-worker2]
  drivers:
  - name: gpu.example.com
    devices:
    - type: gpu
      count: 2
      partitions:
        counters: {memory: 40Gi, slices: 4}
        wholeDevicePosition: last
        partitionName: "{name}-mig-{profile}-{k}"
        profiles:
        - name: 1g.10gb
          count: 2
          consumes: {memory: 10Gi, slices: 1}
          allowMultipleAllocations: true
          capacity:
            compute: {value: "100", requestPolicy: {default: "10", validRange: {min: "10", max: "100", step: "10"}}}
- name: named
  nodes: [big]
  drivers:
  - name: gpu.example.com
    devices:
    - type: gpu
      count: 1
      partitions:
        counters: {memory: 40Gi}
        wholeDeviceName: "gpu-{index}-full"
        counterSetName: "gpu-{index}-counter-set"
        profiles: [{name: half, count: 2, consumes: {memory: 20Gi}}]
"""


def test_nodes_named_freely_and_partitions_named_ordered_and_shared() -> None:
    """Issue #23: `nodes: [kind-worker, kind-worker2]`; the whole GPU after its partitions or named
    by the user; shareable partitions with a capacity request policy — and the allocator shares them."""
    plan = _plan(NAMED)
    assert list(plan.nodes) == ["kind-worker", "kind-worker2", "big"]
    assert [plan.index(n) for n in plan.nodes] == [0, 1, 2]
    devices = plan.devices(plan.nodes["kind-worker2"])["gpu.example.com"].devices
    assert [d["name"] for d in devices] == [
        "gpu-0-mig-1g-10gb-0", "gpu-0-mig-1g-10gb-1", "gpu-0",
        "gpu-1-mig-1g-10gb-0", "gpu-1-mig-1g-10gb-1", "gpu-1"]
    part = devices[0]
    assert part["allowMultipleAllocations"] is True
    assert part["capacity"]["compute"] == {"value": "100", "requestPolicy": {
        "default": "10", "validRange": {"min": "10", "max": "100", "step": "10"}}}
    assert set(part["capacity"]) == {"compute"}  # what it consumes is counted once, in counters
    assert devices[3]["capacity"] == part["capacity"]
    assert "allowMultipleAllocations" not in devices[2]
    (big,) = [s for s in objs.slices_for(plan, plan.nodes["big"]) if s["spec"].get("devices")]
    assert [d["name"] for d in big["spec"]["devices"]] == ["gpu-0-full", "gpu-0-half-0", "gpu-0-half-1"]
    assert big["spec"]["pool"]["name"] == "big" and big["spec"]["nodeName"] == "big"
    assert {c["counterSet"] for d in big["spec"]["devices"] for c in d["consumesCounters"]} == {"gpu-0-counter-set"}
    # Two claims share one partition (each 50 of its 100 compute); a third does not fit beside them
    # on that partition and gets the next one.
    sel = 'device.attributes["gpu.example.com"].type == "mig"'
    req = {"name": "mig", "exactly": {"deviceClassName": "gpu.example.com", "selectors": [{"cel": {"expression": sel}}],
                                      "capacity": {"requests": {"compute": "50"}}}}
    (first,) = _allocate(plan, "kind-worker", [_claim("a", req)]) or pytest.fail("no allocation")
    (r,) = first["devices"]["results"]
    assert r["device"] == "gpu-0-mig-1g-10gb-0" and r["shareID"]
    done = [_claim("a", req) | {"status": {"allocation": first}}]
    (second,) = _allocate(plan, "kind-worker", [_claim("b", req)], done) or pytest.fail("no allocation")
    assert _devices(second) == ["gpu-0-mig-1g-10gb-0"]
    done.append(_claim("b", req) | {"status": {"allocation": second}})
    (third,) = _allocate(plan, "kind-worker", [_claim("c", req)], done) or pytest.fail("no allocation")
    assert _devices(third) == ["gpu-0-mig-1g-10gb-1"]
