"""DefaultPreemption, pure (`cp/scheduling/preemption.py`): upstream's tables from
default_preemption_test.go (TestPostFilter, TestDryRunPreemption, TestSelectBestCandidate,
TestPodEligibleToPreemptOthers, TestPreempt) with NodeResourcesFit as the filter, and the
PodDisruptionBudget grouping. Excluded: cases needing extenders, custom eligibility/ordering
functions, pod groups, and the InterPodAffinity / PodTopologySpread plugins."""

from __future__ import annotations

import random
from typing import Any

import pytest

from cp.scheduling import framework, plugins
from cp.scheduling import preemption as pre

NEG, LOW, MID, HIGH, VERY_HIGH = -100, 0, 100, 1000, 10000
SMALL = {"cpu": "100m", "memory": "100"}
MEDIUM = {"cpu": "200m", "memory": "200"}
LARGE = {"cpu": "300m", "memory": "300"}
VERY_LARGE = {"cpu": "500m", "memory": "500"}
ONE_POD = {"pods": "1"}
NODE_RES = {"cpu": "200m", "memory": "400"}
NOW = 1_000_000.0


def epoch(n: int) -> str:
    """`metav1.NewTime(time.Unix(0, n))` at the second resolution of RFC 3339 (order is what counts)."""
    return f"1970-01-01T00:00:{n:02d}Z"


def node(name: str, capacity: dict[str, str] | None = None, **labels: str) -> dict[str, Any]:
    """`st.MakeNode().Capacity(...)`: 32 pods unless given."""
    alloc = {"pods": "32", **(capacity or {})}
    return {"metadata": {"name": name, "labels": labels}, "spec": {},
            "status": {"capacity": alloc, "allocatable": alloc}}


def pod(name: str, prio: int | None = None, *, req: dict[str, str] | None = None, on: str = "",
        start: str | None = None, labels: dict[str, str] | None = None, ns: str = "default",
        **spec: Any) -> dict[str, Any]:
    s: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": dict(req or {})}}], **spec}
    if prio is not None:
        s["priority"] = prio
    if on:
        s["nodeName"] = on
    status: dict[str, Any] = {}
    if start:
        status["startTime"] = start
    return {"metadata": {"name": name, "namespace": ns, "uid": name, "labels": labels or {}}, "spec": s,
            "status": status}


def cluster(nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> list[framework.NodeState]:
    out = []
    for n in nodes:
        name = n["metadata"]["name"]
        out.append(framework.NodeState.of(n, [p for p in pods if p["spec"].get("nodeName") == name]))
    return out


def filters_for(p: dict[str, Any]) -> pre.Filters:
    return pre.Filters(info=plugins.PodInfo(p), pod=framework.PodInfo(p))


def pdb(labels: dict[str, str], allowed: int, disrupted: tuple[str, ...] = (), ns: str = "default") -> pre.PDB:
    return pre.PDB({"metadata": {"name": "pdb", "namespace": ns}, "spec": {"selector": {"matchLabels": labels}},
                    "status": {"disruptionsAllowed": allowed, "disruptedPods": {d: "x" for d in disrupted}}})


U = plugins.Status(plugins.UNSCHEDULABLE, [])
UU = plugins.Status(plugins.UNRESOLVABLE, [])


def run_preempt(p: dict[str, Any], nodes: list[dict[str, Any]], pods: list[dict[str, Any]],
                statuses: dict[str, plugins.Status] | None = None, pdbs: list[pre.PDB] | None = None,
                ) -> pre.Result:
    states = cluster(nodes, pods)
    if statuses is None:
        statuses = {n["metadata"]["name"]: U for n in nodes}
    return pre.preempt(pod=p, state=framework.CycleState(), nodes=states, statuses=statuses, absent=UU,
                       filters=filters_for(p), pdbs=pdbs or [], rng=random.Random(4), now=NOW)


# ---------------------------------------------------------------------- TestPostFilter

POST_FILTER = [
    ("pod with higher priority can be made schedulable",
     pod("p", HIGH), [pod("p1", on="node1")], [node("node1", ONE_POD)], {"node1": U}, "node1", ""),
    ("pod with tied priority is still unschedulable",
     pod("p"), [pod("p1", on="node1")], [node("node1", ONE_POD)], {"node1": U}, "",
     "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."),
    ("preemption should respect filteredNodesStatuses",
     pod("p", HIGH), [pod("p1", on="node1")], [node("node1", ONE_POD)], {"node1": UU}, "",
     "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."),
    ("preemption should respect absent NodeToStatusReader entry meaning UnschedulableAndUnresolvable",
     pod("p", HIGH), [pod("p1", on="node1")], [node("node1", ONE_POD)], {}, "",
     "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."),
    ("pod can be made schedulable on one node",
     pod("p", MID), [pod("p1", HIGH, on="node1"), pod("p2", LOW, on="node2")],
     [node("node1", ONE_POD), node("node2", ONE_POD)], {"node1": U, "node2": U}, "node2", ""),
    ("no candidate nodes found, no enough resource after removing low priority pods",
     pod("p", HIGH, req=LARGE), [pod("p1", on="node1"), pod("p2", on="node2")],
     [node("node1", NODE_RES), node("node2", NODE_RES)], {"node1": U, "node2": U}, "",
     "preemption: 0/2 nodes are available: 2 Insufficient cpu."),
    ("no candidate nodes found with mixed reasons, no lower priority pod and no enough CPU resource",
     pod("p", HIGH, req=LARGE), [pod("p1", HIGH, on="node1"), pod("p2", on="node2"), pod("p3", HIGH, on="node3")],
     [node("node1", ONE_POD), node("node2", NODE_RES), node("node3", ONE_POD)],
     {"node1": U, "node2": U, "node3": U}, "",
     "preemption: 0/3 nodes are available: 1 Insufficient cpu, 2 No preemption victims found for incoming pod."),
    ("no candidate nodes found with mixed reason, 2 UnschedulableAndUnresolvable nodes and 2 nodes don't have "
     "enough CPU resource",
     pod("p", HIGH, req=LARGE), [pod("p1", on="node1"), pod("p2", on="node2")],
     [node(f"node{i}", NODE_RES) for i in range(1, 5)], {"node1": U, "node2": U, "node4": UU}, "",
     "preemption: 0/4 nodes are available: 2 Insufficient cpu, 2 Preemption is not helpful for scheduling."),
]


@pytest.mark.parametrize(("name", "p", "pods", "nodes", "statuses", "want_node", "want_message"), POST_FILTER,
                         ids=[c[0] for c in POST_FILTER])
def test_post_filter(name: str, p: dict[str, Any], pods: list[dict[str, Any]], nodes: list[dict[str, Any]],
                     statuses: dict[str, plugins.Status], want_node: str, want_message: str) -> None:
    result = run_preempt(p, nodes, pods, statuses)
    assert result.nominate == want_node
    assert result.message == want_message
    assert result.success == bool(want_node)


def test_post_filter_min_highest_priority_node_with_pdbs() -> None:
    """"pod can be made schedulable on minHighestPriority node": both nodes violate one budget."""
    violating, non_violating = {"test.kubernetes.io/is-violating-pdb": "violating"}, \
        {"test.kubernetes.io/is-violating-pdb": "non-violating"}
    pods = [pod("p1", HIGH, on="node1", labels=non_violating), pod("p2", LOW, on="node1", labels=violating),
            pod("p3", MID, on="node2", labels=violating)]
    pdbs = [pdb(violating, 0), pdb(non_violating, 2 ** 31 - 1)]
    result = run_preempt(pod("p", VERY_HIGH), [node("node1", ONE_POD), node("node2", ONE_POD)], pods, pdbs=pdbs)
    assert result.nominate == "node2"
    assert result.candidate is not None
    assert [v.name for v in result.candidate.victims.pods] == ["p3"]
    assert result.candidate.victims.num_pdb_violations == 1


# ---------------------------------------------------------------------- TestDryRunPreemption

def _dry_run(p: dict[str, Any], pods: list[dict[str, Any]], node_names: list[str], pdbs: list[pre.PDB] | None = None,
             args: pre.Args = pre.DEFAULT_ARGS, offset: int = 0) -> list[tuple[str, list[str], int]]:
    states = cluster([node(n, VERY_LARGE) for n in node_names], pods)
    found, _statuses = pre.dry_run(state=framework.CycleState(), nodes=states, filters=filters_for(p),
                                   pdbs=pdbs or [], offset=offset, candidates=pre.num_candidates(len(states), args),
                                   now=NOW)
    return sorted((c.name, sorted(v.name for v in c.victims.pods), c.victims.num_pdb_violations) for c in found)


DRY_RUN = [
    ("a pod that fits on both nodes when lower priority pods are preempted",
     pod("p", HIGH, req=LARGE), [pod("p1", MID, req=LARGE, on="node1"), pod("p2", MID, req=LARGE, on="node2")],
     ["node1", "node2"], None, [("node1", ["p1"], 0), ("node2", ["p2"], 0)]),
    ("a pod that would fit on the nodes, but other pods running are higher priority, no preemption would happen",
     pod("p", LOW, req=LARGE), [pod("p1", MID, req=LARGE, on="node1"), pod("p2", MID, req=LARGE, on="node2")],
     ["node1", "node2"], None, []),
    ("medium priority pod is preempted, but lower priority one stays as it is small",
     pod("p", HIGH, req=LARGE), [pod("p1.1", LOW, req=SMALL, on="node1"), pod("p1.2", MID, req=LARGE, on="node1"),
                                 pod("p2", MID, req=LARGE, on="node2")],
     ["node1", "node2"], None, [("node1", ["p1.2"], 0), ("node2", ["p2"], 0)]),
    ("mixed priority pods are preempted",
     pod("p", HIGH, req=LARGE), [pod("p1.1", MID, req=SMALL, on="node1"), pod("p1.2", LOW, req=SMALL, on="node1"),
                                 pod("p1.3", MID, req=MEDIUM, on="node1"), pod("p1.4", HIGH, req=SMALL, on="node1"),
                                 pod("p2", HIGH, req=LARGE, on="node2")],
     ["node1", "node2"], None, [("node1", ["p1.2", "p1.3"], 0)]),
    ("mixed priority pods are preempted, pick later StartTime one when priorities are equal",
     pod("p", HIGH, req=LARGE),
     [pod("p1.1", LOW, req=SMALL, on="node1", start=epoch(5)), pod("p1.2", LOW, req=SMALL, on="node1", start=epoch(4)),
      pod("p1.3", MID, req=MEDIUM, on="node1", start=epoch(3)),
      pod("p1.4", HIGH, req=SMALL, on="node1", start=epoch(2)), pod("p2", HIGH, req=LARGE, on="node2", start=epoch(1))],
     ["node1", "node2"], None, [("node1", ["p1.1", "p1.3"], 0)]),
    ("preemption with violation of same pdb",
     pod("p", HIGH, req=VERY_LARGE),
     [pod("p1.1", MID, req=MEDIUM, on="node1", labels={"app": "foo"}),
      pod("p1.2", MID, req=MEDIUM, on="node1", labels={"app": "foo"})],
     ["node1"], [pdb({"app": "foo"}, 1)], [("node1", ["p1.1", "p1.2"], 1)]),
    ("preemption with violation of the pdb with pod whose eviction was processed, the victim doesn't belong to "
     "DisruptedPods",
     pod("p", HIGH, req=VERY_LARGE),
     [pod("p1.1", MID, req=MEDIUM, on="node1", labels={"app": "foo"}),
      pod("p1.2", MID, req=MEDIUM, on="node1", labels={"app": "foo"})],
     ["node1"], [pdb({"app": "foo"}, 1, ("p2",))], [("node1", ["p1.1", "p1.2"], 1)]),
    ("preemption with violation of the pdb with pod whose eviction was processed, the victim belongs to "
     "DisruptedPods",
     pod("p", HIGH, req=VERY_LARGE),
     [pod("p1.1", MID, req=MEDIUM, on="node1", labels={"app": "foo"}),
      pod("p1.2", MID, req=MEDIUM, on="node1", labels={"app": "foo"})],
     ["node1"], [pdb({"app": "foo"}, 1, ("p1.2",))], [("node1", ["p1.1", "p1.2"], 0)]),
    ("preemption with violation of the pdb with pod whose eviction was processed, the victim which belongs to "
     "DisruptedPods is treated as 'nonViolating'",
     pod("p", HIGH, req=VERY_LARGE),
     [pod("p1.1", MID, req=MEDIUM, on="node1", labels={"app": "foo"}),
      pod("p1.2", MID, req=MEDIUM, on="node1", labels={"app": "foo"}),
      pod("p1.3", MID, req=MEDIUM, on="node1", labels={"app": "foo"})],
     ["node1"], [pdb({"app": "foo"}, 1, ("p1.3",))], [("node1", ["p1.1", "p1.2", "p1.3"], 1)]),
]


@pytest.mark.parametrize(("name", "p", "pods", "node_names", "pdbs", "want"), DRY_RUN, ids=[c[0] for c in DRY_RUN])
def test_dry_run(name: str, p: dict[str, Any], pods: list[dict[str, Any]], node_names: list[str],
                 pdbs: list[pre.PDB] | None, want: list[tuple[str, list[str], int]]) -> None:
    assert _dry_run(p, pods, node_names, pdbs) == want


def test_dry_run_limited_by_args_starts_at_the_offset() -> None:
    """"all nodes are possible candidates, but DefaultPreemptionArgs limits to 2": offset 4 (upstream's
    seeded draw) visits node5, then node1, and stops."""
    pods = [pod(f"p{i}", MID, req=LARGE, on=f"node{i}") for i in range(1, 6)]
    got = _dry_run(pod("p", HIGH, req=LARGE), pods, [f"node{i}" for i in range(1, 6)],
                   args=pre.Args(min_candidate_nodes_percentage=40, min_candidate_nodes_absolute=1), offset=4)
    assert got == [("node1", ["p1"], 0), ("node5", ["p5"], 0)]


def test_dry_run_reports_why_nodes_are_not_candidates() -> None:
    states = cluster([node("node1", VERY_LARGE), node("node2", NODE_RES)],
                     [pod("p1", HIGH, req=LARGE, on="node1"), pod("p2", LOW, on="node2")])
    p = pod("p", MID, req=LARGE)
    found, statuses = pre.dry_run(state=framework.CycleState(), nodes=states, filters=filters_for(p), pdbs=[],
                                  offset=0, candidates=2, now=NOW)
    assert found == []
    assert {k: (v.code, v.reasons) for k, v in statuses.items()} == {
        "node1": (plugins.UNRESOLVABLE, ["No preemption victims found for incoming pod"]),
        # 300m requested on a 200m node: unresolvable (NodeResourcesFit, request above allocatable)
        "node2": (plugins.UNRESOLVABLE, ["Insufficient cpu"])}


# ---------------------------------------------------------------------- TestSelectBestCandidate

SELECT_BEST = [
    ("a pod that fits on both nodes when lower priority pods are preempted", ["node1", "node2"],
     pod("p", HIGH, req=LARGE),
     [pod("p1", MID, req=LARGE, on="node1", start=epoch(0)), pod("p2", MID, req=LARGE, on="node2", start=epoch(0))],
     {"node1", "node2"}),
    ("node with min highest priority pod is picked", ["node1", "node2", "node3"], pod("p", HIGH, req=VERY_LARGE),
     [pod("p1.1", MID, req=MEDIUM, on="node1"), pod("p1.2", MID, req=LARGE, on="node1"),
      pod("p2.1", MID, req=MEDIUM, on="node2"), pod("p2.2", LOW, req=MEDIUM, on="node2"),
      pod("p3.1", LOW, req=MEDIUM, on="node3"), pod("p3.2", LOW, req=MEDIUM, on="node3")], {"node3"}),
    ("when highest priorities are the same, minimum sum of priorities is picked", ["node1", "node2", "node3"],
     pod("p", HIGH, req=VERY_LARGE),
     [pod("p1.1", MID, req=MEDIUM, on="node1"), pod("p1.2", MID, req=LARGE, on="node1"),
      pod("p2.1", MID, req=LARGE, on="node2"), pod("p2.2", LOW, req=MEDIUM, on="node2"),
      pod("p3.1", MID, req=MEDIUM, on="node3"), pod("p3.2", MID, req=MEDIUM, on="node3")], {"node2"}),
    ("when highest priority and sum are the same, minimum number of pods is picked", ["node1", "node2", "node3"],
     pod("p", HIGH, req=VERY_LARGE),
     [pod("p1.1", MID, req=SMALL, on="node1"), pod("p1.2", NEG, req=SMALL, on="node1"),
      pod("p1.3", MID, req=SMALL, on="node1"), pod("p1.4", NEG, req=SMALL, on="node1"),
      pod("p2.1", MID, req=LARGE, on="node2"), pod("p2.2", NEG, req=MEDIUM, on="node2"),
      pod("p3.1", MID, req=MEDIUM, on="node3"), pod("p3.2", NEG, req=SMALL, on="node3"),
      pod("p3.3", LOW, req=SMALL, on="node3")], {"node2"}),
    ("sum of adjusted priorities is considered", ["node1", "node2", "node3"], pod("p", HIGH, req=VERY_LARGE),
     [pod("p1.1", MID, req=SMALL, on="node1"), pod("p1.2", NEG, req=SMALL, on="node1"),
      pod("p1.3", NEG, req=SMALL, on="node1"),
      pod("p2.1", MID, req=LARGE, on="node2"), pod("p2.2", NEG, req=MEDIUM, on="node2"),
      pod("p3.1", MID, req=MEDIUM, on="node3"), pod("p3.2", NEG, req=SMALL, on="node3"),
      pod("p3.3", LOW, req=SMALL, on="node3")], {"node2"}),
    ("non-overlapping lowest high priority, sum priorities, and number of pods",
     ["node1", "node2", "node3", "node4"], pod("p", VERY_HIGH, req=VERY_LARGE),
     [pod("p1.1", MID, req=SMALL, on="node1"), pod("p1.2", LOW, req=SMALL, on="node1"),
      pod("p1.3", LOW, req=SMALL, on="node1"),
      pod("p2.1", HIGH, req=LARGE, on="node2"),
      pod("p3.1", MID, req=MEDIUM, on="node3"), pod("p3.2", LOW, req=SMALL, on="node3"),
      pod("p3.3", LOW, req=SMALL, on="node3"), pod("p3.4", LOW, req=MEDIUM, on="node3"),
      pod("p4.1", MID, req=MEDIUM, on="node4"), pod("p4.2", MID, req=SMALL, on="node4"),
      pod("p4.3", MID, req=SMALL, on="node4"), pod("p4.4", NEG, req=SMALL, on="node4")], {"node1"}),
    ("same priority, same number of victims, different start time for each node's pod", ["node1", "node2", "node3"],
     pod("p", HIGH, req=VERY_LARGE),
     [pod("p1.1", MID, req=MEDIUM, on="node1", start=epoch(2)), pod("p1.2", MID, req=MEDIUM, on="node1", start=epoch(2)),
      pod("p2.1", MID, req=MEDIUM, on="node2", start=epoch(3)), pod("p2.2", MID, req=MEDIUM, on="node2", start=epoch(3)),
      pod("p3.1", MID, req=MEDIUM, on="node3", start=epoch(1)), pod("p3.2", MID, req=MEDIUM, on="node3", start=epoch(1))],
     {"node2"}),
    ("same priority, same number of victims, different start time for all pods", ["node1", "node2", "node3"],
     pod("p", HIGH, req=VERY_LARGE),
     [pod("p1.1", MID, req=MEDIUM, on="node1", start=epoch(4)), pod("p1.2", MID, req=MEDIUM, on="node1", start=epoch(2)),
      pod("p2.1", MID, req=MEDIUM, on="node2", start=epoch(5)), pod("p2.2", MID, req=MEDIUM, on="node2", start=epoch(1)),
      pod("p3.1", MID, req=MEDIUM, on="node3", start=epoch(3)), pod("p3.2", MID, req=MEDIUM, on="node3", start=epoch(6))],
     {"node3"}),
    ("different priority, same number of victims, different start time for all pods", ["node1", "node2", "node3"],
     pod("p", HIGH, req=VERY_LARGE),
     [pod("p1.1", LOW, req=MEDIUM, on="node1", start=epoch(4)), pod("p1.2", MID, req=MEDIUM, on="node1", start=epoch(2)),
      pod("p2.1", MID, req=MEDIUM, on="node2", start=epoch(6)), pod("p2.2", LOW, req=MEDIUM, on="node2", start=epoch(1)),
      pod("p3.1", LOW, req=MEDIUM, on="node3", start=epoch(3)), pod("p3.2", MID, req=MEDIUM, on="node3", start=epoch(5))],
     {"node2"}),
]


@pytest.mark.parametrize(("name", "node_names", "p", "pods", "expected"), SELECT_BEST, ids=[c[0] for c in SELECT_BEST])
def test_select_best_candidate(name: str, node_names: list[str], p: dict[str, Any], pods: list[dict[str, Any]],
                               expected: set[str]) -> None:
    # upstream gives every pod the same StartTime (epochTime) where it sets none
    pods = [q if q["status"].get("startTime") else {**q, "status": {"startTime": epoch(0)}} for q in pods]
    states = cluster([node(n, VERY_LARGE) for n in node_names], pods)
    rng = random.Random(4)
    found, _ = pre.dry_run(state=framework.CycleState(), nodes=states, filters=filters_for(p), pdbs=[],
                           offset=rng.randrange(len(states)), candidates=pre.num_candidates(len(states)), now=NOW)
    best = pre.select_candidate(found, NOW)
    assert best is not None and best.name in expected


# ---------------------------------------------------------------------- TestPodEligibleToPreemptOthers

def _terminating(p: dict[str, Any], *, disruption: bool) -> dict[str, Any]:
    p["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    if disruption:
        p["status"]["conditions"] = [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}]
    return p


ELIGIBLE = [
    ("Pod with nominated node", pod("p", HIGH, on=""), "node1",
     [_terminating(pod("p1", LOW, on="node1"), disruption=False)], plugins.Status(plugins.UNRESOLVABLE, ["x"]), True),
    ("Pod without nominated node", pod("p", HIGH), "", [], None, True),
    ("Pod with 'PreemptNever' preemption policy", pod("p", HIGH, preemptionPolicy="Never"), "", [], None, False),
    ("preemption victim pod terminating, as indicated by the dedicated DisruptionTarget condition",
     pod("p", HIGH), "node1", [_terminating(pod("p1", LOW, on="node1"), disruption=True)], None, False),
    ("non-victim Pods terminating", pod("p", HIGH), "node1",
     [_terminating(pod("p1", LOW, on="node1"), disruption=False)], None, True),
]


@pytest.mark.parametrize(("name", "p", "nominated", "pods", "status", "expected"), ELIGIBLE,
                         ids=[c[0] for c in ELIGIBLE])
def test_pod_eligible_to_preempt_others(name: str, p: dict[str, Any], nominated: str, pods: list[dict[str, Any]],
                                        status: plugins.Status | None, expected: bool) -> None:
    if nominated:
        p["status"]["nominatedNodeName"] = nominated
    states = {s.name: s for s in cluster([node("node1")], pods)}
    ok, why = pre.eligible_to_preempt(p, nominated_status=status, nominated_node=states.get(nominated))
    assert ok is expected
    if p["spec"].get("preemptionPolicy") == "Never":
        assert why == "not eligible due to preemptionPolicy=Never."


def test_not_eligible_message_is_upstreams() -> None:
    p = pod("p", HIGH)
    p["status"]["nominatedNodeName"] = "node1"
    result = run_preempt(p, [node("node1", ONE_POD)],
                         [_terminating(pod("p1", LOW, on="node1"), disruption=True)])
    assert (result.code, result.message, result.nominate) == (
        plugins.UNSCHEDULABLE, "preemption: not eligible due to a terminating pod on the nominated node.", None)


# ---------------------------------------------------------------------- TestPreempt

PREEMPT = [
    ("basic preemption logic", pod("p", HIGH, req=VERY_LARGE, preemptionPolicy="PreemptLowerPriority"),
     [pod("p1.1", LOW, req=SMALL, on="node1"), pod("p1.2", LOW, req=SMALL, on="node1"),
      pod("p2.1", HIGH, req=LARGE, on="node2"), pod("p3.1", MID, req=MEDIUM, on="node3")], "node1", ["p1.1", "p1.2"]),
    ("no preempting in pod", pod("p", HIGH, req=VERY_LARGE, preemptionPolicy="Never"),
     [pod("p1.1", LOW, req=SMALL, on="node1"), pod("p1.2", LOW, req=SMALL, on="node1"),
      pod("p2.1", HIGH, req=LARGE, on="node2"), pod("p3.1", MID, req=MEDIUM, on="node3")], None, []),
    ("PreemptionPolicy is nil", pod("p", HIGH, req=VERY_LARGE),
     [pod("p1.1", LOW, req=SMALL, on="node1"), pod("p1.2", LOW, req=SMALL, on="node1"),
      pod("p2.1", HIGH, req=LARGE, on="node2"), pod("p3.1", MID, req=MEDIUM, on="node3")], "node1", ["p1.1", "p1.2"]),
]


@pytest.mark.parametrize(("name", "p", "pods", "want", "victims"), PREEMPT, ids=[c[0] for c in PREEMPT])
def test_preempt(name: str, p: dict[str, Any], pods: list[dict[str, Any]], want: str | None,
                 victims: list[str]) -> None:
    result = run_preempt(p, [node(n, VERY_LARGE) for n in ("node1", "node2", "node3")], pods)
    assert result.nominate == want
    got = sorted(v.name for v in result.candidate.victims.pods) if result.candidate is not None else []
    assert got == victims


# ---------------------------------------------------------------------- pieces


def test_filter_pods_with_pdb_violation_keeps_order_and_spends_budgets() -> None:
    pods = [framework.PodInfo(pod(n, LOW, labels={"app": "a"})) for n in ("a1", "a2", "a3")]
    pods.append(framework.PodInfo(pod("b1", LOW, labels={"app": "b"})))
    pods.append(framework.PodInfo(pod("unlabelled", LOW)))
    other_ns = pdb({"app": "b"}, 0, ns="elsewhere")
    violating, others = pre.filter_pods_with_pdb_violation(pods, [pdb({"app": "a"}, 1), other_ns])
    assert [p.name for p in violating] == ["a2", "a3"]
    assert [p.name for p in others] == ["a1", "b1", "unlabelled"]


def test_empty_pdb_selector_matches_nothing() -> None:
    empty = pre.PDB({"metadata": {"name": "x", "namespace": "default"}, "spec": {"selector": {}},
                     "status": {"disruptionsAllowed": 0}})
    violating, _ = pre.filter_pods_with_pdb_violation([framework.PodInfo(pod("a", labels={"k": "v"}))], [empty])
    assert violating == []


@pytest.mark.parametrize(("nodes", "args", "want"), [
    (10, pre.DEFAULT_ARGS, 10), (1000, pre.DEFAULT_ARGS, 100), (5000, pre.DEFAULT_ARGS, 500),
    (5, pre.Args(min_candidate_nodes_percentage=40, min_candidate_nodes_absolute=1), 2),
])
def test_num_candidates(nodes: int, args: pre.Args, want: int) -> None:
    assert pre.num_candidates(nodes, args) == want


def test_args_validation() -> None:
    with pytest.raises(ValueError, match="cannot both be zero"):
        pre.Args(min_candidate_nodes_percentage=0, min_candidate_nodes_absolute=0)
    with pytest.raises(ValueError, match="valid range"):
        pre.Args(min_candidate_nodes_percentage=101)


def test_nominated_pods_of_higher_priority_count_in_the_dry_run() -> None:
    """A pod of equal or higher priority nominated to the node keeps its room (`addGENominatedPods`)."""
    states = cluster([node("node1", VERY_LARGE)], [pod("v", LOW, req=LARGE, on="node1")])
    p = pod("p", MID, req=LARGE)
    nominated = framework.PodInfo(pod("n", HIGH, req=MEDIUM))
    filters = pre.Filters(info=plugins.PodInfo(p), pod=framework.PodInfo(p), nominated=lambda name: [nominated])
    victims, _, status = pre.select_victims_on_node(state=framework.CycleState(), node=pre.copy_node(states[0]),
                                                    filters=filters, pdbs=[], now=NOW)
    assert [v.name for v in victims] == ["v"] and status is None
    big = framework.PodInfo(pod("n", HIGH, req=LARGE))
    filters = pre.Filters(info=plugins.PodInfo(p), pod=framework.PodInfo(p), nominated=lambda name: [big])
    victims, _, status = pre.select_victims_on_node(state=framework.CycleState(), node=pre.copy_node(states[0]),
                                                    filters=filters, pdbs=[], now=NOW)
    assert victims == [] and status is not None and status.reasons == ["Insufficient cpu", "Insufficient memory"]
    # lower-priority nominated pods do not count
    low = framework.PodInfo(pod("n", LOW, req=LARGE))
    filters = pre.Filters(info=plugins.PodInfo(p), pod=framework.PodInfo(p), nominated=lambda name: [low])
    assert filters.run(framework.CycleState(), states[0]) is not None  # v still there
    assert filters.nominated_on("node1") == []


def test_a_fixed_verdict_after_the_filters_rejects_the_dry_run() -> None:
    """DynamicResources in 1.37: no AddPod/RemovePod, so its verdict on a node stands."""
    states = cluster([node("node1", VERY_LARGE)], [pod("v", LOW, req=LARGE, on="node1")])
    p = pod("p", MID, req=LARGE)
    dra = plugins.Status(plugins.UNRESOLVABLE, ["cannot allocate all claims"], "DynamicResources")
    filters = pre.Filters(info=plugins.PodInfo(p), pod=framework.PodInfo(p), final=lambda n: dra)
    result = pre.preempt(pod=p, state=framework.CycleState(), nodes=states, statuses={"node1": U}, absent=UU,
                         filters=filters, pdbs=[], rng=random.Random(0), now=NOW)
    assert result.message == "preemption: 0/1 nodes are available: 1 cannot allocate all claims."
    assert result.nominate == ""


# ---------------------------------------------------------------------- nodesWherePreemptionMightHelp

def _st(code: str, reason: str = "") -> plugins.Status:
    return plugins.Status(code, [reason] if reason else [])


UNRES, UNSCH = plugins.UNRESOLVABLE, plugins.UNSCHEDULABLE
MIGHT_HELP = [
    ("No node should be attempted",
     {"node1": _st(UNRES, "node(s) didn't match Pod's node affinity/selector"),
      "node2": _st(UNRES, "node(s) didn't match the requested node name"),
      "node3": _st(UNRES, "node(s) had untolerated taint(s)"),
      "node4": _st(UNRES, "node(s) didn't match pod affinity rules")}, set()),
    ("ErrReasonAntiAffinityRulesNotMatch should be tried as it indicates that the pod is unschedulable due to "
     "inter-pod anti-affinity",
     {"node1": _st(UNSCH, "node(s) didn't match pod anti-affinity rules"),
      "node2": _st(UNRES, "node(s) didn't match the requested node name"),
      "node3": _st(UNRES, "node(s) were unschedulable")}, {"node1", "node4"}),
    ("Mix of failed predicates works fine",
     {"node1": _st(UNRES, "node(s) had no available disk"), "node2": _st(UNSCH, "Insufficient memory")},
     {"node2", "node3", "node4"}),
    ("ErrReasonConstraintsNotMatch should be tried as it indicates that the pod is unschedulable due to topology "
     "spread constraints",
     {"node1": _st(UNSCH, "node(s) didn't match pod topology spread constraints"),
      "node2": _st(UNRES, "node(s) didn't match the requested node name"),
      "node3": _st(UNSCH, "node(s) didn't match pod topology spread constraints")}, {"node1", "node3", "node4"}),
    ("UnschedulableAndUnresolvable status should be skipped but Unschedulable should be tried",
     {"node2": _st(UNRES), "node3": _st(UNSCH), "node4": _st(UNRES)}, {"node1", "node3"}),
]


@pytest.mark.parametrize(("name", "statuses", "expected"), MIGHT_HELP, ids=[c[0] for c in MIGHT_HELP])
def test_nodes_where_preemption_might_help(name: str, statuses: dict[str, plugins.Status], expected: set[str]) -> None:
    """Upstream's table, where a node without a status may help (an `Unschedulable` absent status)."""
    states = [framework.NodeState.of(node(f"node{i}")) for i in range(1, 5)]
    got = pre.potential_nodes(states, statuses, plugins.Status(plugins.UNSCHEDULABLE, []))
    assert {n.name for n in got} == expected
