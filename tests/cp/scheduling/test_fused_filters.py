"""The fused core filters (`plugins.PodInfo.filter`, the default profile's hot path) give the same
answers as NodeUnschedulable, NodeName, TaintToleration, NodeAffinity and NodeResourcesFit run one
by one as framework plugins, on the upstream cases of each plugin and on their combinations."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from cp.scheduling import framework, plugins, profiles
from tests.cp.scheduling import test_nodeaffinity, test_noderesources, test_tainttoleration
from tests.cp.scheduling.builders import make_node, make_pod, states

CORE = [profiles.PLUGINS[name]({}) for name in profiles.CORE_FILTERS] if profiles.default_profile() else []


def one_by_one(pod: dict[str, Any], node: framework.NodeState, dra_backed: dict[str, str]) -> Any:
    state = framework.CycleState()
    info = framework.PodInfo(pod)
    profile = framework.Profile(scheduler_name="x", filters=CORE, scores=[])
    active, rejected = profile.run_pre_filter(state, info, framework.Snapshot([node], dra_backed=dra_backed))
    if rejected is not None:
        return "prefilter", rejected.code, rejected.reasons
    st = framework.Profile.run_filters(active, state, info, node)
    return None if st is None else (st.plugin, st.code, st.reasons)


def fused(pod: dict[str, Any], node: framework.NodeState, dra_backed: dict[str, str]) -> Any:
    st = plugins.PodInfo(pod).filter(node.info, node.usage, dra_backed)
    return None if st is None else (st.plugin, st.code, st.reasons)


def _cases() -> list[tuple[str, dict[str, Any], framework.NodeState]]:
    out: list[tuple[str, dict[str, Any], framework.NodeState]] = []
    for name, tols, taints, _fits in test_tainttoleration.FILTER_CASES:
        out.append((name, make_pod(tolerations=tols), states([make_node("n", taints=taints)])[0]))
    for name, spec, node, labels, args, want in test_nodeaffinity.FILTER_CASES:
        if not args and want != test_nodeaffinity.CONFLICT:  # no added affinity in the default profile
            out.append((name, make_pod(**spec), states([make_node(node, labels=labels)])[0]))
    for name, containers, inits, existing, args, _want in test_noderesources.FIT_CASES:
        if not args:
            node_state = states([make_node("machine1", test_noderesources._alloc())],
                                [make_pod(*existing, node="machine1", name="old")])[0]
            out.append((name, test_noderesources._fit_pod(containers, inits), node_state))
    # combinations: several plugins reject, the first in the profile's order wins
    taints = [[], [{"key": "k", "effect": "NoSchedule"}], [{"key": "k", "effect": "PreferNoSchedule"}]]
    for unsched, taint, selector, name_, req in itertools.product(
            (False, True), taints, ({}, {"nodeSelector": {"a": "b"}}), ("", "n", "other"),
            ({}, {"cpu": "100"}, {"example.com/x": "1"})):
        pod = make_pod(req, node=name_, **selector) if req else make_pod(node=name_, **selector)
        node = states([make_node("n", {"cpu": "4", "memory": "1Gi"}, taints=taint, unschedulable=unsched)])[0]
        out.append((f"combined {unsched} {taint} {selector} {name_!r} {req}", pod, node))
    return out


CASES = _cases()


@pytest.mark.parametrize(("name", "pod", "node"), CASES, ids=[c[0][:80] for c in CASES])
def test_fused_filter_matches_the_plugins(name: str, pod: dict[str, Any], node: framework.NodeState) -> None:
    for dra_backed in ({}, {"example.com/x": "class-x"}):
        assert fused(pod, node, dra_backed) == one_by_one(pod, node, dra_backed)


def test_the_default_profile_runs_the_core_pre_filters_beside_the_fused_filter() -> None:
    """Conflicting `metadata.name` terms: NodeAffinity's PreFilter rejects the pod once (the fused
    filter alone would reject every node as not matching); `metadata.name In` terms narrow the
    nodes to evaluate (PreFilterResult)."""
    _name, spec, node, labels, _args, want = next(c for c in test_nodeaffinity.FILTER_CASES
                                                   if c[5] == test_nodeaffinity.CONFLICT)
    ns = states([make_node(node, labels=labels)])[0]
    profile = profiles.default_profile()
    state = framework.CycleState()
    _active, rejected = profile.run_pre_filter(state, framework.PodInfo(make_pod(**spec)), framework.Snapshot([ns]))
    assert rejected is not None and (rejected.code, rejected.reasons) == want
    assert fused(make_pod(**spec), ns, {}) == ("NodeAffinity", plugins.UNRESOLVABLE, [plugins.ERR_REASON_AFFINITY])

    pod = make_pod(affinity=test_nodeaffinity.required(
        {"matchFields": [test_nodeaffinity.expr("metadata.name", "In", "node1", "node3")]}))
    state = framework.CycleState()
    _active, rejected = profile.run_pre_filter(state, framework.PodInfo(pod), framework.Snapshot([ns]))
    assert rejected is None and state.node_names == {"node1", "node3"}
    assert state.node_names_plugins == ("NodeAffinity",)
