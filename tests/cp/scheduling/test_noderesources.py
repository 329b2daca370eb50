"""NodeResourcesFit (Filter; LeastAllocated, MostAllocated, RequestedToCapacityRatio scores) and
NodeResourcesBalancedAllocation: upstream's test tables (fit_test.go, least_allocated_test.go,
most_allocated_test.go, requested_to_capacity_ratio_test.go, balanced_allocation_test.go) with
their expected integers. Quantities as upstream writes them ("4000" cpu is 4000 cores)."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

from cp.scheduling import framework, plugins
from cp.scheduling.plugins import noderesources as nr
from tests.cp.scheduling.builders import make_node, make_pod, run_filter, run_scores, states

EXT = "example.com/foo"  # upstream's extendedRes in the scoring tests
EXTENDED_SET = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}, {"name": EXT, "weight": 1}]


def fit(strategy: str = "LeastAllocated", resources: Any = None, **more: Any) -> nr.Fit:
    scoring: dict[str, Any] = {"type": strategy}
    if resources is not None:
        scoring["resources"] = resources
    scoring.update(more)
    return nr.Fit({"scoringStrategy": scoring})


def caps(cpu: str, memory: str, ext: str = "") -> dict[str, str]:
    """Allocatable cpu and memory, and `ext` of example.com/foo."""
    return {"cpu": cpu, "memory": memory, **({EXT: ext} if ext else {})}


# ---------------------------------------------------------------------- LeastAllocated

LEAST = [
    # (name, pod requests, nodes (name, capacity), existing pods (node, requests...), resources, scores)
    ("nothing scheduled, nothing requested", [], [("node1", caps("4000", "10000")), ("node2", caps("4000", "10000"))],
     [], None, [100, 100]),
    # node1: cpu (4000-3000)*100/4000 = 25, memory 50 -> 37; node2: 50, 50 -> 50
    ("nothing scheduled, resources requested, differently sized nodes",
     [{"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"}],
     [("node1", caps("4000", "10000")), ("node2", caps("6000", "10000"))], [], None, [37, 50]),
    ("no resources requested, pods scheduled", [], [("node1", caps("4000", "10000")), ("node2", caps("4000", "10000"))],
     [("node1", []), ("node1", []), ("node2", []), ("node2", [])], None, [100, 100]),
    # node1: cpu 40, memory 100 -> 70; node2: cpu 40, memory 75 -> 57
    ("no resources requested, pods scheduled with resources", [],
     [("node1", caps("10000", "20000")), ("node2", caps("10000", "20000"))],
     [("node1", [{"cpu": "3000", "memory": "0"}]), ("node1", [{"cpu": "3000", "memory": "0"}]),
      ("node2", [{"cpu": "3000", "memory": "0"}]), ("node2", [{"cpu": "3000", "memory": "5000"}])], None, [70, 57]),
    ("resources requested, pods scheduled with resources",
     [{"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"}],
     [("node1", caps("10000", "20000")), ("node2", caps("10000", "20000"))],
     [("node1", [{"cpu": "3000", "memory": "0"}]), ("node2", [{"cpu": "3000", "memory": "5000"}])], None, [57, 45]),
    ("resources requested, pods scheduled with resources, differently sized nodes",
     [{"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"}],
     [("node1", caps("10000", "20000")), ("node2", caps("10000", "50000"))],
     [("node1", [{"cpu": "3000", "memory": "0"}]), ("node2", [{"cpu": "3000", "memory": "5000"}])], None, [57, 60]),
    # cpu 6000 > 4000: 0; memory 100 / 50
    ("requested resources exceed node capacity", [{"cpu": "3000", "memory": "0"}],
     [("node1", caps("4000", "10000")), ("node2", caps("4000", "10000"))],
     [("node1", [{"cpu": "3000", "memory": "0"}]), ("node2", [{"cpu": "3000", "memory": "5000"}])], None, [50, 25]),
    ("zero node resources, pods scheduled with resources", [], [("node1", {}), ("node2", {})],
     [("node1", [{"cpu": "3000", "memory": "0"}]), ("node2", [{"cpu": "3000", "memory": "5000"}])], None, [0, 0]),
    # (25*1 + 50*2) / 3 = 41; (50 + 100) / 3 = 50
    ("resources requested with different weight on CPU and memory",
     [{"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"}],
     [("node1", caps("4000", "10000")), ("node2", caps("6000", "10000"))], [],
     [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}], [41, 50]),
    ("bypass extended resource if the pod does not request",
     [{"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"}],
     [("node1", caps("6000", "10000")), ("node2", caps("6000", "10000", ext="4"))], [],
     EXTENDED_SET, [50, 50]),
    # extended: (4-2)*100/4 = 50 and (10-2)*100/10 = 80 -> (50+50+50)/3, (50+50+80)/3
    ("honor extended resource if the pod requests", [{"cpu": "3000", "memory": "5000", EXT: "2"}],
     [("node1", caps("6000", "10000", ext="4")), ("node2", caps("6000", "10000", ext="10"))],
     [], EXTENDED_SET, [50, 60]),
    ("if the node doesn't have a resource", [{"cpu": "3000", "memory": "4000"}],
     [("node1", caps("6000", "10000")), ("node2", caps("6000", "10000", ext="4"))], [],
     [{"name": EXT, "weight": 2}, {"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}], [55, 55]),
]

MOST = [
    ("nothing scheduled, nothing requested", [], [("node1", caps("4000", "10000")), ("node2", caps("4000", "10000"))],
     [], None, [0, 0]),
    # node1: 75, 50 -> 62; node2: 50, 50 -> 50
    ("nothing scheduled, resources requested, differently sized nodes",
     [{"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"}],
     [("node1", caps("4000", "10000")), ("node2", caps("6000", "10000"))], [], None, [62, 50]),
    ("no resources requested, pods scheduled with resources", [],
     [("node1", caps("10000", "20000")), ("node2", caps("10000", "20000"))],
     [("node1", [{"cpu": "3000", "memory": "0"}]), ("node1", [{"cpu": "3000", "memory": "0"}]),
      ("node2", [{"cpu": "3000", "memory": "0"}]), ("node2", [{"cpu": "3000", "memory": "5000"}])], None, [30, 42]),
    ("resources requested, pods scheduled with resources",
     [{"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"}],
     [("node1", caps("10000", "20000")), ("node2", caps("10000", "20000"))],
     [("node1", [{"cpu": "3000", "memory": "0"}]), ("node2", [{"cpu": "3000", "memory": "5000"}])], None, [42, 55]),
    ("resources requested equal node capacity",
     [{"cpu": "2000", "memory": "4000"}, {"cpu": "3000", "memory": "5000"}],
     [("node1", caps("5000", "10000")), ("node2", caps("10000", "9000"))], [], None, [95, 75]),
    ("different weight on CPU and memory", [{"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"}],
     [("node1", caps("4000", "10000")), ("node2", caps("6000", "10000"))], [],
     [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}], [58, 50]),
    # the non-zero defaults (100m, 200Mi) of containers without requests: node1 300m/250m -> 100,
    # 600Mi/1000Mi -> 60: 80; node2 100m -> 40, 200Mi -> 20: 30
    ("no resources requested, pods scheduled, nonzero request for resource", "one-container",
     [("node1", caps("250m", "1000Mi")), ("node2", caps("250m", "1000Mi"))],
     [("node1", "one-container"), ("node1", "one-container")], None, [80, 30]),
    ("bypass extended resource if the pod does not request",
     [{"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"}],
     [("node1", caps("6000", "10000")), ("node2", caps("6000", "10000", ext="4"))], [],
     EXTENDED_SET, [50, 50]),
    ("honor extended resource if the pod requests", [{"cpu": "3000", "memory": "5000", EXT: "2"}],
     [("node1", caps("6000", "10000", ext="4")), ("node2", caps("6000", "10000", ext="10"))],
     [], EXTENDED_SET, [50, 40]),
    ("if the node doesn't have a resource", [{"cpu": "3000", "memory": "4000"}],
     [("node1", caps("6000", "10000")), ("node2", caps("6000", "10000", ext="4"))], [],
     [{"name": EXT, "weight": 2}, {"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}], [45, 45]),
]


def _pod_of(reqs: Any, **kw: Any) -> dict[str, Any]:
    if reqs == "one-container":
        return make_pod(containers=1, **kw)
    return make_pod(*reqs, **kw)


def _case(pod_reqs: Any, nodes: Any, existing: Any) -> tuple[dict[str, Any], list[framework.NodeState]]:
    pod = _pod_of(pod_reqs)
    node_objs = [make_node(n, c) for n, c in nodes]
    pods = [_pod_of(r, node=n, name=f"e{i}") for i, (n, r) in enumerate(existing)]
    return pod, states(node_objs, pods)


@pytest.mark.parametrize(("name", "pod", "nodes", "existing", "resources", "want"), LEAST, ids=[c[0] for c in LEAST])
def test_least_allocated(name: str, pod: Any, nodes: Any, existing: Any, resources: Any, want: list[int]) -> None:
    p, ns = _case(pod, nodes, existing)
    assert run_scores(fit("LeastAllocated", resources), p, ns) == want


@pytest.mark.parametrize(("name", "pod", "nodes", "existing", "resources", "want"), MOST, ids=[c[0] for c in MOST])
def test_most_allocated(name: str, pod: Any, nodes: Any, existing: Any, resources: Any, want: list[int]) -> None:
    p, ns = _case(pod, nodes, existing)
    assert run_scores(fit("MostAllocated", resources), p, ns) == want


@pytest.mark.parametrize(("strategy", "resources", "field"), [
    ("LeastAllocated", [{"name": "memory", "weight": -1}, {"name": "cpu", "weight": 1}], "scoringStrategy.resources[0].weight"),
    ("LeastAllocated", [{"name": "memory", "weight": 1}, {"name": "cpu", "weight": 101}], "scoringStrategy.resources[1].weight"),
    ("MostAllocated", [{"name": "memory", "weight": 101}], "scoringStrategy.resources[0].weight"),
    ("MostAllocated", [{"name": "cpu", "weight": 1}, {"name": "cpu", "weight": 1}], "scoringStrategy.resources[1].name"),
])
def test_invalid_weights_are_rejected(strategy: str, resources: Any, field: str) -> None:
    with pytest.raises(nr.ArgsError, match=re.escape(field)):
        fit(strategy, resources)


def test_zero_weight_defaults_to_one_as_v1_config_does() -> None:
    # (the internal config rejects 0; kubescheduler.config.k8s.io/v1 defaulting makes it 1)
    assert fit("LeastAllocated", [{"name": "memory", "weight": 1}, {"name": "cpu", "weight": 0}]).resources == (
        ("memory", 1), ("cpu", 1))


def test_unknown_strategy_is_rejected() -> None:
    with pytest.raises(nr.ArgsError, match=r"scoringStrategy\.type"):
        fit("Fancy")


# ---------------------------------------------------------------------- RequestedToCapacityRatio

LEAST_SHAPE = [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]


@pytest.mark.parametrize(("pod", "nodes", "existing", "want"), [
    ([], [("node1", caps("4000", "10000")), ("node2", caps("4000", "10000"))], [("node1", []), ("node1", [])],
     [100, 100]),
    # node1: cpu 75% -> 25, memory 50% -> 50: round(37.5) = 38; node2: 50, 50
    ([{"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"}],
     [("node1", caps("4000", "10000")), ("node2", caps("6000", "10000"))], [("node1", []), ("node1", [])], [38, 50]),
    ([], [("node1", caps("4000", "10000")), ("node2", caps("6000", "10000"))],
     [("node1", [{"cpu": "3000", "memory": "5000"}]), ("node2", [{"cpu": "3000", "memory": "5000"}])], [38, 50]),
])
def test_requested_to_capacity_ratio(pod: Any, nodes: Any, existing: Any, want: list[int]) -> None:
    p, ns = _case(pod, nodes, existing)
    plugin = fit("RequestedToCapacityRatio", None, requestedToCapacityRatio={"shape": LEAST_SHAPE})
    assert run_scores(plugin, p, ns) == want


@pytest.mark.parametrize(("points", "checks"), [
    ([(10, 1), (90, 9)], [(-10, 1), (0, 1), (9, 1), (10, 1), (15, 1), (19, 1), (20, 2), (89, 8), (90, 9), (99, 9),
                          (100, 9), (110, 9)]),
    ([(0, 2), (40, 10), (100, 0)], [(-10, 2), (0, 2), (20, 6), (30, 8), (40, 10), (70, 5), (100, 0), (110, 0)]),
    ([(0, 2), (40, 2), (100, 2)], [(-10, 2), (0, 2), (20, 2), (30, 2), (40, 2), (70, 2), (100, 2), (110, 2)]),
])
def test_broken_linear_function(points: list[tuple[int, int]], checks: list[tuple[int, int]]) -> None:
    for p, want in checks:
        assert nr.broken_linear(points, p) == want, p


EXT_SHAPE = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 1}]
FOO, BAR = "intel.com/foo", "intel.com/bar"


def _bin_node(name: str, **scalars: str) -> dict[str, Any]:
    return make_node(name, {"cpu": "4", "memory": str(10000 * 1024 * 1024), **scalars})


@pytest.mark.parametrize(("pod", "existing", "want"), [
    ({}, [], [0, 0]),  # the pod requests no intel.com/foo: nothing to score
    ({FOO: "2"}, [("node1", {})], [2, 5]),  # 2/8 -> 25% -> 2; 2/4 -> 50% -> 5
    ({FOO: "2"}, [("node2", {FOO: "2"})], [2, 10]),  # node2 full after the pod
    ({FOO: "4"}, [("node1", {})], [5, 10]),
])
def test_bin_packing_single_extended(pod: dict[str, str], existing: Any, want: list[int]) -> None:
    nodes = [_bin_node("node1", **{FOO: "8"}), _bin_node("node2", **{FOO: "4"})]
    p = make_pod(pod) if pod else make_pod()
    olds = [make_pod(r, node=n, name=f"e{i}") if r else make_pod(node=n, name=f"e{i}")
            for i, (n, r) in enumerate(existing)]
    plugin = fit("RequestedToCapacityRatio", [{"name": FOO, "weight": 1}], requestedToCapacityRatio={"shape": EXT_SHAPE})
    assert run_scores(plugin, p, states(nodes, olds)) == want


@pytest.mark.parametrize(("pod", "existing", "want"), [
    ({}, [], [0, 0]),
    # node1: foo 2/8 -> 2 (x3), bar 2/4 -> 5 (x5): round(31/8) = 4; node2: foo 5, bar 2: round(25/8) = 3
    ({FOO: "2", BAR: "2"}, [], [4, 3]),
    # node1: foo 4/8 -> 5, bar 2/4 -> 5: 5; node2: foo 4/4 -> 10, bar 2/8 -> 2: round(40/8) = 5
    ({FOO: "4", BAR: "2"}, [], [5, 5]),
    # with a pod holding 2 foo and 2 bar: node1 foo 4/8 -> 5, bar 4/4 -> 10: round(65/8) = 8;
    # node2 foo 4/4 -> 10, bar 4/8 -> 5: round(55/8) = 7
    ({FOO: "2", BAR: "2"}, [("node1", {FOO: "2", BAR: "2"}), ("node2", {FOO: "2", BAR: "2"})], [8, 7]),
])
def test_bin_packing_multiple_extended(pod: dict[str, str], existing: Any, want: list[int]) -> None:
    nodes = [_bin_node("node1", **{FOO: "8", BAR: "4"}), _bin_node("node2", **{FOO: "4", BAR: "8"})]
    p = make_pod(pod) if pod else make_pod()
    olds = [make_pod(r, node=n, name=f"e{i}") for i, (n, r) in enumerate(existing)]
    plugin = fit("RequestedToCapacityRatio", [{"name": FOO, "weight": 3}, {"name": BAR, "weight": 5}],
                 requestedToCapacityRatio={"shape": EXT_SHAPE})
    assert run_scores(plugin, p, states(nodes, olds)) == want


@pytest.mark.parametrize(("shape", "message"), [
    ([], "at least one point"),
    ([{"utilization": 50, "score": 1}, {"utilization": 40, "score": 2}], "increasing order"),
    ([{"utilization": 101, "score": 1}], "not in valid range"),
    ([{"utilization": 10, "score": 11}], "not in valid range"),
])
def test_invalid_shapes_are_rejected(shape: Any, message: str) -> None:
    with pytest.raises(nr.ArgsError, match=message):
        fit("RequestedToCapacityRatio", None, requestedToCapacityRatio={"shape": shape})


# ---------------------------------------------------------------------- BalancedAllocation (1.37)

CPU_AND_MEMORY = [{"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000"}]
CPU_ONLY = [{"cpu": "1000m", "memory": "0"}, {"cpu": "2000m", "memory": "0"}]


@pytest.mark.parametrize(("name", "pod", "nodes", "existing", "want"), [
    ("nothing scheduled, nothing requested: best-effort pods are skipped", [],
     [("machine1", caps("4000m", "10000")), ("machine2", caps("4000m", "10000"))], [], None),
    # machine1: with the pod 75% / 50%: std 0.125 -> 87; without 100: 50 + (50+87-100)/2 = 68;
    # machine2: 50% / 50% -> 100 both: 75 (no change to the balance)
    ("nothing scheduled, resources requested, differently sized machines", CPU_AND_MEMORY,
     [("machine1", caps("4000m", "10000")), ("machine2", caps("6000m", "10000"))], [], [68, 75]),
    # machine1: 60% / 25% -> 82 with, 30% / 0% -> 85 without: 50 + 47/2 = 73;
    # machine2: 60% / 50% -> 95 with, 30% / 25% -> 97 without: 50 + 48/2 = 74
    ("resources requested, pods scheduled with resources", CPU_AND_MEMORY,
     [("machine1", caps("10000m", "20000")), ("machine2", caps("10000m", "20000"))],
     [("machine1", CPU_ONLY), ("machine2", CPU_AND_MEMORY)], [73, 74]),
    # machine2: 60% / 20% -> 80 with, 30% / 10% -> 90 without: 50 + 40/2 = 70
    ("resources requested, pods scheduled with resources, differently sized machines", CPU_AND_MEMORY,
     [("machine1", caps("10000m", "20000")), ("machine2", caps("10000m", "50000"))],
     [("machine1", CPU_ONLY), ("machine2", CPU_AND_MEMORY)], [73, 70]),
    # cpu over capacity, the fraction capped at 1: machine1 100% / 0% -> 50 with, 75% / 0% -> 62
    # without: 50 + 38/2 = 69; machine2 100% / 50% -> 75 with, 75% / 50% -> 87 without: 69
    ("requested resources exceed node capacity", CPU_ONLY,
     [("machine1", caps("4000m", "10000")), ("machine2", caps("4000m", "10000"))],
     [("machine1", CPU_ONLY), ("machine2", CPU_AND_MEMORY)], [69, 69]),
    ("zero node resources, pods scheduled with resources", CPU_AND_MEMORY, [("machine1", {}), ("machine2", {})],
     [("machine1", CPU_ONLY), ("machine2", CPU_AND_MEMORY)], [75, 75]),
])
def test_balanced_allocation(name: str, pod: Any, nodes: Any, existing: Any, want: list[int] | None) -> None:
    p, ns = _case(pod, nodes, existing)
    assert run_scores(nr.BalancedAllocation({}), p, ns) == want


def test_balanced_allocation_with_three_resources_uses_the_standard_deviation() -> None:
    # fractions 0.5, 0.25, 0.75: mean 0.5, std sqrt((0 + 1/16 + 1/16) / 3) = 0.2041 -> 79; without: 100
    node = make_node("n", {"cpu": "4", "memory": "4000", EXT: "4"})
    pod = make_pod({"cpu": "2", "memory": "1000", EXT: "3"})
    plugin = nr.BalancedAllocation({"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": EXT}]})
    assert nr.balanced_std_score([2000, 1000, 3], [4000, 4000, 4]) == 79
    assert run_scores(plugin, pod, states([node])) == [50 + (50 + 79 - 100) // 2]


def test_balanced_allocation_weights_must_be_one() -> None:
    with pytest.raises(nr.ArgsError, match=r"resources\[0\].weight"):
        nr.BalancedAllocation({"resources": [{"name": "cpu", "weight": 2}]})


# ---------------------------------------------------------------------- Filter (fit_test.go)


def _alloc(cpu: int = 10, memory: int = 20, pods: int = 32, ext_a: int = 5, hugepages: int = 5) -> dict[str, str]:
    """upstream's makeAllocatableResources(10, 20, 32, 5, 20, 5): milli-cpu, bytes, pods,
    example.com/aaa, hugepages-2Mi."""
    return {"cpu": f"{cpu}m", "memory": str(memory), "pods": str(pods), "example.com/aaa": str(ext_a),
            "hugepages-2Mi": str(hugepages)}


def _r(cpu: int = 0, memory: int = 0, **scalars: int) -> dict[str, str]:
    out = {"cpu": f"{cpu}m", "memory": str(memory)}
    out.update({k.replace("__", "/").replace("_", "-"): str(v) for k, v in scalars.items()})
    return out


A, B = "example.com__aaa", "example.com__bbb"
FIT_CASES: list[tuple[str, list[dict[str, str]], list[dict[str, str]], list[dict[str, str]], dict[str, Any], Any]] = [
    # (name, pod containers, pod init containers, existing pod containers, args, (code, reasons) or None)
    ("no resources requested always fits", [], [], [_r(10, 20)], {}, None),
    ("too many resources fails", [_r(1, 1)], [], [_r(10, 20)], {},
     (plugins.UNSCHEDULABLE, ["Insufficient cpu", "Insufficient memory"])),
    ("too many resources fails due to init container cpu", [_r(1, 1)], [_r(3, 1)], [_r(8, 19)], {},
     (plugins.UNSCHEDULABLE, ["Insufficient cpu"])),
    ("too many resources fails due to highest init container cpu", [_r(1, 1)], [_r(3, 1), _r(2, 1)], [_r(8, 19)], {},
     (plugins.UNSCHEDULABLE, ["Insufficient cpu"])),
    ("too many resources fails due to init container memory", [_r(1, 1)], [_r(1, 3)], [_r(9, 19)], {},
     (plugins.UNSCHEDULABLE, ["Insufficient memory"])),
    ("init container fits because it's the max, not sum, of containers and init containers", [_r(1, 1)],
     [_r(1, 1), _r(1, 1)], [_r(9, 19)], {}, None),
    ("both resources fit", [_r(1, 1)], [], [_r(5, 5)], {}, None),
    ("one resource memory fits", [_r(2, 1)], [], [_r(9, 5)], {}, (plugins.UNSCHEDULABLE, ["Insufficient cpu"])),
    ("one resource cpu fits", [_r(1, 2)], [], [_r(5, 19)], {}, (plugins.UNSCHEDULABLE, ["Insufficient memory"])),
    ("equal edge case", [_r(5, 1)], [], [_r(5, 19)], {}, None),
    ("extended resource fits", [_r(**{A: 1})], [], [_r()], {}, None),
    ("extended resource capacity enforced", [_r(**{A: 10})], [], [_r()], {},
     (plugins.UNRESOLVABLE, ["Insufficient example.com/aaa"])),
    ("extended resource allocatable enforced", [_r(**{A: 1})], [], [_r(**{A: 5})], {},
     (plugins.UNSCHEDULABLE, ["Insufficient example.com/aaa"])),
    ("extended resource allocatable enforced for multiple containers", [_r(**{A: 3}), _r(**{A: 3})], [],
     [_r(**{A: 2})], {}, (plugins.UNRESOLVABLE, ["Insufficient example.com/aaa"])),  # 6 > 5 allocatable
    ("extended resource allocatable admits multiple init containers", [_r()], [_r(**{A: 3}), _r(**{A: 2})],
     [_r(**{A: 2})], {}, None),
    ("extended resource allocatable enforced for unknown resource", [_r(**{B: 1})], [], [_r()], {},
     (plugins.UNRESOLVABLE, ["Insufficient example.com/bbb"])),
    ("hugepages resource capacity enforced", [_r(hugepages_2Mi=10)], [], [_r()], {},
     (plugins.UNRESOLVABLE, ["Insufficient hugepages-2Mi"])),
    ("hugepages resource allocatable enforced", [_r(hugepages_2Mi=1)], [], [_r(hugepages_2Mi=5)], {},
     (plugins.UNSCHEDULABLE, ["Insufficient hugepages-2Mi"])),
    ("skip checking ignored extended resource", [_r(**{B: 1})], [], [_r()], {"ignoredResources": ["example.com/bbb"]},
     None),
    ("skip checking ignored extended resource via resource groups", [_r(**{B: 1})], [], [_r()],
     {"ignoredResourceGroups": ["example.com"]}, None),
    ("ignored resource groups do not skip native resources", [_r(11, 1)], [], [_r()],
     {"ignoredResourceGroups": ["example.com"]}, (plugins.UNRESOLVABLE, ["Insufficient cpu"])),
    ("requests beyond the whole node are unresolvable", [_r(11, 21)], [], [_r()], {},
     (plugins.UNRESOLVABLE, ["Insufficient cpu", "Insufficient memory"])),
]


def _fit_pod(containers: list[dict[str, str]], inits: list[dict[str, str]]) -> dict[str, Any]:
    pod = make_pod(*containers)
    if inits:
        pod["spec"]["initContainers"] = [{"name": f"i{i}", "resources": {"requests": r}} for i, r in enumerate(inits)]
    return pod


@pytest.mark.parametrize(("name", "containers", "inits", "existing", "args", "want"), FIT_CASES,
                         ids=[c[0] for c in FIT_CASES])
def test_fit_filter(name: str, containers: Any, inits: Any, existing: Any, args: dict[str, Any], want: Any) -> None:
    node = make_node("machine1", _alloc())
    node_state = states([node], [make_pod(*existing, node="machine1", name="old")])[0]
    st = run_filter(nr.Fit(args), _fit_pod(containers, inits), node_state)
    got = None if st is None else (st.code, st.reasons)
    assert got == want


def test_fit_filter_counts_pods() -> None:
    node = make_node("machine1", _alloc(pods=1))
    node_state = states([node], [make_pod(_r(10, 20), node="machine1", name="old")])[0]
    st = run_filter(nr.Fit({}), make_pod(_r(1, 1)), node_state)
    assert st is not None and st.code == plugins.UNSCHEDULABLE
    assert st.reasons == ["Too many pods", "Insufficient cpu", "Insufficient memory"]


def test_extended_resource_backed_by_a_device_class_is_left_to_dra() -> None:
    # KEP-5004: the node does not advertise it (or advertises 0); a DeviceClass maps it
    pod = make_pod({"example.com/gpu": "1"})
    for alloc in ({}, {"example.com/gpu": "0"}):
        node_state = states([make_node("n", {**_alloc(), **alloc})])[0]
        snap = framework.Snapshot([node_state], dra_backed={"example.com/gpu": "gpu-class"})
        assert run_filter(nr.Fit({}), pod, node_state, snap) is None
        st = run_filter(nr.Fit({}), pod, node_state)
        assert st is not None and st.reasons == ["Insufficient example.com/gpu"]
    # advertised by a device plugin: checked as any extended resource
    node_state = states([make_node("n", {**_alloc(), "example.com/gpu": "1"})],
                        [make_pod({"example.com/gpu": "1"}, node="n", name="old")])[0]
    snap = framework.Snapshot([node_state], dra_backed={"example.com/gpu": "gpu-class"})
    st = run_filter(nr.Fit({}), pod, node_state, snap)
    assert st is not None and (st.code, st.reasons) == (plugins.UNSCHEDULABLE, ["Insufficient example.com/gpu"])


def test_ignored_resource_groups_must_not_contain_a_slash() -> None:
    with pytest.raises(nr.ArgsError, match="ignoredResourceGroups"):
        nr.Fit({"ignoredResourceGroups": ["example.com/aaa"]})


# ---------------------------------------------------------------------- the cycle's fast path


def test_fast_path_gives_the_plugins_integers() -> None:
    """`default_resource_scores` == LeastAllocated + BalancedAllocation (defaults), on random nodes."""
    rng = random.Random(7)
    fit_plugin, balanced = nr.Fit({}), nr.BalancedAllocation({})
    for _ in range(300):
        nodes = [make_node(f"n{i}", {"cpu": f"{rng.choice([0, rng.randint(1, 8000)])}m",
                                     "memory": str(rng.choice([0, rng.randint(1, 2 ** 34)]))}) for i in range(3)]
        olds = []
        for i in range(rng.randint(0, 6)):
            reqs = rng.choice([{}, {"cpu": f"{rng.randint(0, 3000)}m"}, {"memory": str(rng.randint(0, 2 ** 32))},
                               {"cpu": f"{rng.randint(1, 3000)}m", "memory": str(rng.randint(1, 2 ** 32))}])
            olds.append(make_pod(reqs, node=f"n{rng.randint(0, 2)}", name=f"o{i}"))
        pod = make_pod(rng.choice([{}, {"cpu": "500m"}, {"memory": "1Gi"}, {"cpu": "2", "memory": "3Gi"}]))
        ns = states(nodes, olds)
        least = run_scores(fit_plugin, pod, ns) or [0] * 3
        bal = run_scores(balanced, pod, ns) or [0] * 3
        info = framework.PodInfo(pod)
        scored = bool(info.req.requests.cpu or info.req.requests.memory)
        fast = nr.default_resource_scores(info, ns, balanced=scored)
        assert fast == [a + b for a, b in zip(least, bal, strict=True)]
