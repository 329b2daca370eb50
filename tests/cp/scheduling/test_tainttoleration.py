"""TaintToleration: upstream's taint_toleration_test.go cases (Filter, and PreScore/Score/
NormalizeScore on untolerated PreferNoSchedule taints)."""

from __future__ import annotations

from typing import Any

import pytest

from cp.scheduling import plugins
from cp.scheduling.plugins.tainttoleration import TaintToleration
from tests.cp.scheduling.builders import make_node, make_pod, run_filter, run_scores, states


def taint(key: str, value: str, effect: str) -> dict[str, str]:
    return {"key": key, "value": value, "effect": effect}


def tol(key: str, value: str, effect: str, op: str = "Equal") -> dict[str, str]:
    return {"key": key, "operator": op, "value": value, "effect": effect}


PNS = "PreferNoSchedule"

SCORE_CASES: list[tuple[str, list[dict[str, str]], list[list[dict[str, str]]], list[int]]] = [
    ("node with taints tolerated by the pod gets a higher score than those with intolerable taints",
     [tol("foo", "bar", PNS)], [[taint("foo", "bar", PNS)], [taint("foo", "blah", PNS)]], [100, 0]),
    ("nodes whose taints are all tolerated get the same score, however many they have",
     [tol("cpu-type", "arm64", PNS), tol("disk-type", "ssd", PNS)],
     [[], [taint("cpu-type", "arm64", PNS)], [taint("cpu-type", "arm64", PNS), taint("disk-type", "ssd", PNS)]],
     [100, 100, 100]),
    ("the more intolerable taints a node has, the lower score it gets",
     [tol("foo", "bar", PNS)],
     [[], [taint("cpu-type", "arm64", PNS)], [taint("cpu-type", "arm64", PNS), taint("disk-type", "ssd", PNS)]],
     [100, 50, 0]),
    ("only taints and tolerations with effect PreferNoSchedule are checked",
     [tol("cpu-type", "arm64", "NoSchedule"), tol("disk-type", "ssd", "NoSchedule")],
     [[], [taint("cpu-type", "arm64", "NoSchedule")],
      [taint("cpu-type", "arm64", PNS), taint("disk-type", "ssd", PNS)]],
     [100, 100, 0]),
    ("default behaviour: no taints and tolerations, lands on the node with no taints",
     [], [[], [taint("cpu-type", "arm64", PNS)]], [100, 0]),
]


@pytest.mark.parametrize(("name", "tolerations", "node_taints", "want"), SCORE_CASES, ids=[c[0] for c in SCORE_CASES])
def test_score(name: str, tolerations: Any, node_taints: Any, want: list[int]) -> None:
    nodes = states([make_node(f"node{i}", taints=t) for i, t in enumerate(node_taints)])
    assert run_scores(TaintToleration(), make_pod(tolerations=tolerations), nodes) == want


FILTER_CASES: list[tuple[str, list[dict[str, str]], list[dict[str, str]], bool]] = [
    ("a pod having no tolerations can't be scheduled onto a node with nonempty taints",
     [], [taint("dedicated", "user1", "NoSchedule")], False),
    ("a pod which can be scheduled on a dedicated node assigned to user1 with effect NoSchedule",
     [tol("dedicated", "user1", "NoSchedule")], [taint("dedicated", "user1", "NoSchedule")], True),
    ("a pod which can't be scheduled on a dedicated node assigned to user2 with effect NoSchedule",
     [tol("dedicated", "user2", "NoSchedule")], [taint("dedicated", "user1", "NoSchedule")], False),
    ("a pod can be scheduled onto the node, with a toleration using operator Exists that tolerates the taints",
     [{"key": "foo", "operator": "Exists", "effect": "NoSchedule"}], [taint("foo", "bar", "NoSchedule")], True),
    ("a pod has multiple tolerations, node has multiple taints, all the taints are tolerated",
     [tol("dedicated", "user2", "NoSchedule"), {"key": "foo", "operator": "Exists", "effect": "NoSchedule"}],
     [taint("dedicated", "user2", "NoSchedule"), taint("foo", "bar", "NoSchedule")], True),
    ("a pod has a toleration that keys and values match the taint on the node, but (non-empty) effect doesn't "
     "match, can't be scheduled onto the node",
     [tol("foo", "bar", PNS)], [taint("foo", "bar", "NoSchedule")], False),
    ("the pod has a toleration that keys and values match the taint on the node, the effect of toleration is "
     "empty, and the effect of taint is NoSchedule. Pod can be scheduled onto the node",
     [{"key": "foo", "operator": "Equal", "value": "bar"}], [taint("foo", "bar", "NoSchedule")], True),
    ("the pod has a toleration that key and value don't match the taint on the node, but the effect of taint "
     "on node is PreferNoSchedule. Pod can be scheduled onto the node",
     [tol("dedicated", "user2", "NoSchedule")], [taint("dedicated", "user1", PNS)], True),
    ("the pod has no toleration, but the effect of taint on node is PreferNoSchedule. Pod can be scheduled "
     "onto the node", [], [taint("dedicated", "user1", PNS)], True),
    ("NoExecute taints must be tolerated too", [], [taint("gone", "", "NoExecute")], False),
]


@pytest.mark.parametrize(("name", "tolerations", "node_taints", "fits"), FILTER_CASES, ids=[c[0][:60] for c in FILTER_CASES])
def test_filter(name: str, tolerations: Any, node_taints: Any, fits: bool) -> None:
    node = states([make_node("n", taints=node_taints)])[0]
    st = run_filter(TaintToleration(), make_pod(tolerations=tolerations), node)
    if fits:
        assert st is None
    else:
        assert st is not None and (st.code, st.reasons) == (plugins.UNRESOLVABLE, [plugins.ERR_REASON_TAINT])
