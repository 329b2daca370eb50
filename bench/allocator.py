"""DRA allocator benchmark: the pure allocation library alone, per pod and per node.

Run: `.venv/bin/python -m bench.allocator [--quick] [--json-out FILE]`.

Cluster shape as in scheduler_perf's DRA tests (performance-anchors.md §2.1): one ResourceSlice
per node (name, pool and nodeName = node name) with devices `instance-<i>` carrying `model`,
`family`, `driverVersion` and `dra.example.com/numa` attributes and 1Gi of `memory` capacity; a
DeviceClass selecting `device.driver == "test-driver.cdi.k8s.io"`; a claim with one request for
one device of that class. Half of every node's devices are already allocated (the first half,
as first-fit allocation of earlier claims leaves them).

A scheduling cycle builds one `Allocator` and calls `allocate()` for every node (the Filter
extension point). Figures:

- `warm`: per-node `allocate()` with the CEL cache already holding this cluster's devices (the
  steady state: slices change rarely, so device/expression results are reused across cycles);
- `cold`: the same with an empty cache (first cycle after start-up or after every slice changed);
- `cycle`: one whole scheduling cycle over all nodes (Allocator construction included), warm.

Upstream's micro-benchmarks (performance-anchors.md §2.3, kubernetes#140806) time one Allocate
call over all nodes of the benchmark; the per-node reference is that figure divided by the
number of nodes.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from cp.dra import AllocatedState, Allocator, CelCache

DRIVER = "test-driver.cdi.k8s.io"
CLASS = "test-class"

# (devices per node, nodes, upstream ms per Allocate over all nodes)
REFERENCE = {10: (100, 2.4), 100: (100, 9.9), 1000: (100, 68.0), 10000: (10, 49.0)}


def make_cluster(devices: int, nodes: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]], AllocatedState]:
    slices = []
    node_objs = []
    state = AllocatedState()
    for n in range(nodes):
        name = f"node-{n}"
        node_objs.append({"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}})
        devs = [{
            "name": f"instance-{i}",
            "attributes": {"model": {"string": "A100"}, "family": {"string": "GPU"},
                           "driverVersion": {"version": "1.2.3"}, "dra.example.com/numa": {"int": i}},
            "capacity": {"memory": {"value": "1Gi"}},
        } for i in range(devices)]
        slices.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                       "metadata": {"name": name, "uid": f"uid-{name}", "generation": 1, "resourceVersion": "1"},
                       "spec": {"driver": DRIVER, "nodeName": name,
                                "pool": {"name": name, "generation": 1, "resourceSliceCount": 1}, "devices": devs}})
        state.add_allocation({"devices": {"results": [
            {"request": "r", "driver": DRIVER, "pool": name, "device": f"instance-{i}"} for i in range(devices // 2)]}})
    return slices, node_objs, state


CLASSES = {CLASS: {"metadata": {"name": CLASS},
                   "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}}}
CLAIM = {"metadata": {"name": "claim-0", "namespace": "default"},
         "spec": {"devices": {"requests": [{"name": "req-0", "exactly": {
             "deviceClassName": CLASS, "allocationMode": "ExactCount", "count": 1}}]}}}


def run(devices: int, nodes: int, rounds: int) -> dict[str, float]:
    slices, node_objs, state = make_cluster(devices, nodes)
    out: dict[str, float] = {}

    cache = CelCache()
    allocator = Allocator(slices=slices, classes=CLASSES, allocated=state, cel_cache=cache)
    t0 = time.perf_counter()
    for nd in node_objs:
        assert allocator.allocate(node=nd, claims=[CLAIM]) is not None
    out["cold_node_us"] = (time.perf_counter() - t0) / nodes * 1e6

    per_node: list[float] = []
    cycles: list[float] = []
    for _ in range(rounds):
        c0 = time.perf_counter()
        allocator = Allocator(slices=slices, classes=CLASSES, allocated=state, cel_cache=cache)
        for nd in node_objs:
            t = time.perf_counter()
            result = allocator.allocate(node=nd, claims=[CLAIM])
            per_node.append(time.perf_counter() - t)
            assert result is not None
        cycles.append(time.perf_counter() - c0)
    out["warm_node_us"] = statistics.median(per_node) * 1e6
    out["warm_node_p99_us"] = sorted(per_node)[int(0.99 * (len(per_node) - 1))] * 1e6
    out["cycle_ms"] = statistics.median(cycles) * 1e3
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds, skip 10000 devices")
    parser.add_argument("--json-out", type=Path, metavar="FILE", help="also write the figures as JSON to FILE")
    args = parser.parse_args()
    figures: dict[str, dict[str, float]] = {}
    rounds = 3 if args.quick else 10
    sizes = [10, 100, 1000] if args.quick else [10, 100, 1000, 10000]
    print("DRA allocator alone, one claim with one device, half of each node's devices allocated")
    print(f"{'devices/node':>12} {'nodes':>5} | {'warm µs/node':>12} {'p99':>8} {'cold µs/node':>12} "
          f"{'cycle ms':>9} | {'upstream µs/node':>16} {'upstream ms/Allocate':>20}")
    for devices in sizes:
        nodes, ref_ms = REFERENCE[devices]
        r = run(devices, nodes, rounds if devices < 10000 else max(1, rounds // 3))
        figures[str(devices)] = r
        print(f"{devices:>12} {nodes:>5} | {r['warm_node_us']:>12.1f} {r['warm_node_p99_us']:>8.1f} "
              f"{r['cold_node_us']:>12.1f} {r['cycle_ms']:>9.2f} | {ref_ms / nodes * 1e3:>16.1f} {ref_ms:>20.1f}")
    if args.json_out is not None:
        args.json_out.write_text(json.dumps(figures))


if __name__ == "__main__":
    main()
