"""cp/strategies/core.py: what the Pod strategy prepares on create — the selector merges of
`matchLabelKeys` / `mismatchLabelKeys` (pod affinity, MatchLabelKeysInPodAffinity) and of topology
spread `matchLabelKeys` (MatchLabelKeysInPodTopologySpreadSelectorMerge), as upstream's
`PrepareForCreate` does (pkg/registry/core/pod/strategy_test.go cases, in our words)."""

from __future__ import annotations

from typing import Any

from cp import resources as res
from cp import strategies
from cp.strategies import core


def _create(pod: dict[str, Any]) -> dict[str, Any]:
    kind = res.by_kind("", "Pod")
    assert kind is not None
    strategies.prepare_for_create(kind, pod, now=0)
    return pod


def _term(**extra: Any) -> dict[str, Any]:
    return {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "web"}}, **extra}


def test_affinity_label_keys_are_merged_into_the_selector() -> None:
    pod = _create({"metadata": {"labels": {"app": "web", "version": "v1", "team": "a"}}, "spec": {
        "affinity": {
            "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                _term(matchLabelKeys=["version", "missing"])],
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 10, "podAffinityTerm": _term(mismatchLabelKeys=["team"])}]},
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                _term(matchLabelKeys=["version"], mismatchLabelKeys=["team"])]}}}})
    aff = pod["spec"]["affinity"]
    assert aff["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]["labelSelector"] == {
        "matchLabels": {"app": "web"}, "matchExpressions": [{"key": "version", "operator": "In", "values": ["v1"]}]}
    preferred = aff["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"]
    assert preferred["labelSelector"]["matchExpressions"] == [{"key": "team", "operator": "NotIn", "values": ["a"]}]
    anti = aff["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]["labelSelector"]
    assert anti["matchExpressions"] == [{"key": "version", "operator": "In", "values": ["v1"]},
                                        {"key": "team", "operator": "NotIn", "values": ["a"]}]


def test_a_term_without_a_selector_is_left_alone() -> None:
    pod = _create({"metadata": {"labels": {"version": "v1"}}, "spec": {"affinity": {"podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "zone", "matchLabelKeys": ["version"]}]}}}})
    assert "labelSelector" not in pod["spec"]["affinity"]["podAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"][0]


def test_topology_spread_match_label_keys_are_merged() -> None:
    pod = _create({"metadata": {"labels": {"app": "web", "pod-template-hash": "abc"}}, "spec": {
        "topologySpreadConstraints": [
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchLabels": {"app": "web"}}, "matchLabelKeys": ["pod-template-hash"]},
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
             "matchLabelKeys": ["pod-template-hash"]}]}})
    first, second = pod["spec"]["topologySpreadConstraints"]
    assert first["labelSelector"]["matchExpressions"] == [
        {"key": "pod-template-hash", "operator": "In", "values": ["abc"]}]
    assert "labelSelector" not in second


def test_a_binding_assigns_the_node_merges_its_annotations_and_marks_the_pod_scheduled() -> None:
    pending = {"metadata": {"name": "p", "annotations": {"a": "1"}}, "spec": {"containers": []},
               "status": {"phase": "Pending", "nominatedNodeName": "n0", "conditions": [
                   {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}}
    bound = core.bind_pod(pending, {"metadata": {"name": "p", "annotations": {"b": "2"}},
                                    "target": {"kind": "Node", "name": "n1"}}, now=1_796_119_200.0)
    assert bound["spec"]["nodeName"] == "n1" and bound["metadata"]["annotations"] == {"a": "1", "b": "2"}
    assert bound["status"]["conditions"] == [{"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                                              "lastTransitionTime": "2026-12-01T10:00:00Z"}]
    assert "nominatedNodeName" not in bound["status"] and pending["spec"] == {"containers": []}  # (a copy)
    again = core.bind_pod({**bound, "spec": {}}, {"target": {"name": "n2"}}, now=1_796_119_300.0)
    assert again["status"]["conditions"] == bound["status"]["conditions"]  # already True: its time kept
