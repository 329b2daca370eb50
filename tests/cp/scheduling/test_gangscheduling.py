"""The GangScheduling plugin's decisions, with the cases of upstream's gangscheduling_test.go
(TestPreEnqueue, TestPlacementFeasible and the queueing-hint tests; the CompositePodGroup cases are left
out, that gate being off)."""

from __future__ import annotations

from typing import Any

import pytest

from cp.scheduling.plugins import gangscheduling as gs

WAITING_FOR_PG1 = 'waiting for pod\'s pod group "pg1" to appear in scheduling queue'


def pod(name: str, group: str | None = None, ns: str = "ns1", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = dict(spec)
    if group is not None:
        body["schedulingGroup"] = {"podGroupName": group}
    return {"metadata": {"name": name, "namespace": ns}, "spec": body}


def gang(name: str, min_count: int, ns: str = "ns1") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": ns},
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}}}


def basic(name: str, ns: str = "ns1") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": ns}, "spec": {"schedulingPolicy": {"basic": {}}}}


GROUPS = {"pg1": gang("pg1", 3), "pg2": gang("pg2", 4), "pg3": basic("pg3")}


# (name, pod, other pods of the cluster, pod groups, expected rejection)
PRE_ENQUEUE = [
    ("non-gang pod succeeds immediately", pod("non-gang"), [], GROUPS, None),
    ("basic policy pod succeeds immediately", pod("basic-pod", "pg3"), [], GROUPS, None),
    ("gang pod fails PreEnqueue when pod group is not yet created", pod("p1", "pg1"),
     [pod("p2", "pg1"), pod("p3", "pg1"), pod("p4", "pg2"), pod("p5", "pg2")], {}, WAITING_FOR_PG1),
    ("gang pod fails PreEnqueue when quorum is not met", pod("p1", "pg1"),
     [pod("p2", "pg1"), pod("p4", "pg2"), pod("p5", "pg2")], GROUPS, gs.WAITING_FOR_QUORUM),
    ("gang pod passes PreEnqueue", pod("p1", "pg1"),
     [pod("p2", "pg1"), pod("p3", "pg1"), pod("p4", "pg2"), pod("p5", "pg2")], GROUPS, None),
]


@pytest.mark.parametrize(("name", "the_pod", "others", "groups", "want"), PRE_ENQUEUE, ids=[c[0] for c in PRE_ENQUEUE])
def test_pre_enqueue(name: str, the_pod: dict[str, Any], others: list[dict[str, Any]],
                     groups: dict[str, dict[str, Any]], want: str | None) -> None:
    group_name = gs.pod_group_name(the_pod)
    count = 1 + sum(1 for p in others if gs.pod_group_name(p) == group_name)  # the pod itself counts
    group = groups.get(group_name) if group_name else None
    assert gs.pre_enqueue(the_pod, pod_group=group, all_pods=count) == want


S, W, U = gs.SUCCESS, gs.WAIT, gs.UNSCHEDULABLE
# (name, minCount (0: basic), pods in the group cycle, each pod's own result, expected per step,
#  pods of the group scheduled before)
PLACEMENT = [
    ("All pods succeed, minCount met at end", 2, 2, [S, S], [W, S], 0),
    ("First pod fails, minCount not satisfiable", 3, 3, [U], [U], 0),
    ("Second pod fails, minCount not satisfiable", 2, 2, [S, U], [W, U], 0),
    ("Non-gang pod group with 0 scheduled pods fails", 0, 1, [U], [U], 0),
    ("Non-gang pod group with succeeds once 1 pod is scheduled", 0, 1, [S], [S], 0),
    ("Non-gang pod group with 1 initially scheduled pod succeeds", 0, 1, [U], [S], 1),
    ("More than minCount pods, all succeed", 2, 3, [S, S, S], [W, S, S], 0),
    ("More than minCount pods, first fails", 2, 3, [U, S, S], [W, W, S], 0),
    ("More than minCount pods, minCount not satisfiable", 2, 3, [U, U], [W, U], 0),
    ("1 pod scheduled, 2 unscheduled pods succeed, minCount 3 met", 3, 2, [S, S], [W, S], 1),
    ("minCount already met by scheduled pods", 2, 1, [U], [S], 2),
    ("1 pod scheduled, minCount 3, first unscheduled fails, not enough remaining", 3, 2, [U], [U], 1),
    ("1 pod scheduled, minCount 4, first unscheduled succeeds, not enough remaining", 4, 2, [S], [U], 1),
]


@pytest.mark.parametrize(("name", "min_count", "children", "results", "want", "initially"), PLACEMENT,
                         ids=[c[0] for c in PLACEMENT])
def test_placement_feasible(name: str, min_count: int, children: int, results: list[str], want: list[str],
                            initially: int) -> None:
    group = gang("pg", min_count) if min_count else basic("pg")
    scheduled = initially
    got = []
    for i, result in enumerate(results):
        scheduled += result == S
        code, _message = gs.placement_feasible(minimum=gs.min_count(group), scheduled=scheduled,
                                               remaining=children - (i + 1))
        got.append(code)
    assert got == want


def test_placement_messages() -> None:
    assert gs.placement_feasible(minimum=3, scheduled=2, remaining=0) == (
        U, "minCount (3) cannot be satisfied: 2 scheduled, 0 remaining")
    assert gs.placement_feasible(minimum=3, scheduled=1, remaining=2) == (
        W, "minCount (3) is not yet satisfied: 1 scheduled, 2 remaining")


# isSchedulableAfterPodAdded (CompositePodGroup off): (name, pod, added pod, queue?)
POD_ADDED = [
    ("add a newPod which matches the pod's scheduling group", pod("p", "pg"), pod("", "pg"), True),
    ("add a newPod with NodeName set which matches the pod's scheduling group", pod("p", "pg"),
     pod("", "pg", nodeName="node1"), True),
    ("add a newPod which doesn't match the pod's namespace", pod("p", "pg"), pod("", "pg", ns="foo"), False),
    ("add a newPod which doesn't match the pod's pod group name", pod("p", "pg1"), pod("", "pg2"), False),
    ("add a newPod which belongs to a different scheduling group", pod("p1", "pg1"), pod("p2", "pg2"), False),
]


@pytest.mark.parametrize(("name", "the_pod", "added", "want"), POD_ADDED, ids=[c[0] for c in POD_ADDED])
def test_hint_pod_added(name: str, the_pod: dict[str, Any], added: dict[str, Any], want: bool) -> None:
    assert gs.hint_pod_added(the_pod, added) is want


POD_GROUP_ADDED = [
    ("add a pod group which matches the pod's pod group name", pod("p", "pg"), gang("pg", 1), True),
    ("add a pod group which doesn't match the pod's scheduling group name", pod("p", "pg1"), gang("pg2", 1), False),
    ("add a pod group which doesn't match the pod's scheduling group namespace", pod("p", "pg"),
     gang("pg", 1, ns="ns2"), False),
]


@pytest.mark.parametrize(("name", "the_pod", "added", "want"), POD_GROUP_ADDED, ids=[c[0] for c in POD_GROUP_ADDED])
def test_hint_pod_group_added(name: str, the_pod: dict[str, Any], added: dict[str, Any], want: bool) -> None:
    assert gs.hint_pod_group_added(the_pod, added) is want


POD_GROUP_UPDATED = [
    ("minCount decreased matches target pod", pod("p", "pg"), gang("pg", 4), gang("pg", 3), True),
    ("update Basic policy", pod("p", "pg"), basic("pg"), basic("pg"), False),
    ("minCount increased matches target pod", pod("p", "pg"), gang("pg", 3), gang("pg", 4), False),
    ("minCount unchanged matches target pod", pod("p", "pg"), gang("pg", 3), gang("pg", 3), False),
    ("minCount decreased but pod group name doesn't match target pod", pod("p", "pg-other"), gang("pg", 4),
     gang("pg", 3), False),
    ("minCount decreased but pod group namespace doesn't match target pod", pod("p", "pg", ns="ns-other"),
     gang("pg", 4), gang("pg", 3), False),
    ("pod without a scheduling group is skipped", pod("p"), gang("pg", 4), gang("pg", 3), False),
]


@pytest.mark.parametrize(("name", "the_pod", "old", "new", "want"), POD_GROUP_UPDATED,
                         ids=[c[0] for c in POD_GROUP_UPDATED])
def test_hint_pod_group_updated(name: str, the_pod: dict[str, Any], old: dict[str, Any], new: dict[str, Any],
                                want: bool) -> None:
    assert gs.hint_pod_group_updated(the_pod, old, new) is want


def test_group_order_priority_then_age() -> None:
    pods = [
        {"metadata": {"name": "b", "creationTimestamp": "2026-01-01T00:00:02Z"}, "spec": {"priority": 0}},
        {"metadata": {"name": "a", "creationTimestamp": "2026-01-01T00:00:03Z"}, "spec": {"priority": 10}},
        {"metadata": {"name": "c", "creationTimestamp": "2026-01-01T00:00:01Z"}, "spec": {}},
    ]
    assert [p["metadata"]["name"] for p in gs.group_order(pods)] == ["a", "c", "b"]
