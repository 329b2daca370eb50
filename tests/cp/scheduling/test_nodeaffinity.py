"""NodeAffinity: upstream's node_affinity_test.go cases (Filter with nodeSelector, required terms,
matchFields, added affinity; PreFilter's conflicting metadata.name terms; Score on preferred terms,
normalized)."""

from __future__ import annotations

from typing import Any

import pytest

from cp.scheduling import plugins
from cp.scheduling.plugins.nodeaffinity import ERR_REASON_CONFLICT, ERR_REASON_ENFORCED, NodeAffinity
from tests.cp.scheduling.builders import make_node, make_pod, run_filter, run_scores, states


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": op}
    if values:
        out["values"] = list(values)
    return out


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


FIT = None
POD = (plugins.UNRESOLVABLE, [plugins.ERR_REASON_AFFINITY])
ENFORCED = (plugins.UNRESOLVABLE, [ERR_REASON_ENFORCED])
CONFLICT = (plugins.UNRESOLVABLE, [ERR_REASON_CONFLICT])

# (name, pod spec, node name, node labels, plugin args, want)
FILTER_CASES: list[tuple[str, dict[str, Any], str, dict[str, str], dict[str, Any], Any]] = [
    ("no selector", {}, "node1", {}, {}, FIT),
    ("missing labels", {"nodeSelector": {"foo": "bar"}}, "node1", {}, {}, POD),
    ("same labels", {"nodeSelector": {"foo": "bar"}}, "node1", {"foo": "bar"}, {}, FIT),
    ("node labels are superset", {"nodeSelector": {"foo": "bar"}}, "node1", {"foo": "bar", "baz": "blah"}, {}, FIT),
    ("node labels are subset", {"nodeSelector": {"foo": "bar", "baz": "blah"}}, "node1", {"foo": "bar"}, {}, POD),
    ("Pod with matchExpressions using In operator that matches the existing node",
     {"affinity": required({"matchExpressions": [expr("foo", "In", "bar", "value2")]})}, "node1", {"foo": "bar"},
     {}, FIT),
    ("Pod with matchExpressions using Gt operator that matches the existing node",
     {"affinity": required({"matchExpressions": [expr("kernel-version", "Gt", "0204")]})}, "node1",
     {"kernel-version": "0206"}, {}, FIT),
    ("Pod with matchExpressions using NotIn operator that matches the existing node",
     {"affinity": required({"matchExpressions": [expr("mem-type", "NotIn", "DDR", "DDR2")]})}, "node1",
     {"mem-type": "DDR3"}, {}, FIT),
    ("Pod with matchExpressions using Exists operator that matches the existing node",
     {"affinity": required({"matchExpressions": [expr("GPU", "Exists")]})}, "node1", {"GPU": "NVIDIA-GRID-K1"},
     {}, FIT),
    ("Pod with affinity that don't match node's labels won't schedule onto the node",
     {"affinity": required({"matchExpressions": [expr("foo", "In", "value1", "value2")]})}, "node1", {"foo": "bar"},
     {}, POD),
    ("Pod with empty MatchExpressions is not a valid value will match no objects and won't schedule onto the node",
     {"affinity": required({"matchExpressions": []})}, "node1", {"foo": "bar"}, {}, POD),
    ("Pod with no Affinity will schedule onto a node", {}, "node1", {"foo": "bar"}, {}, FIT),
    ("Pod with Affinity but nil NodeSelector will schedule onto a node",
     {"affinity": {"nodeAffinity": {}}}, "node1", {"foo": "bar"}, {}, FIT),
    ("Pod with an empty list of nodeSelectorTerms matches no node", {"affinity": required()}, "node1",
     {"foo": "bar"}, {}, POD),
    ("Pod with multiple matchExpressions ANDed that matches the existing node",
     {"affinity": required({"matchExpressions": [expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER")]})},
     "node1", {"GPU": "NVIDIA-GRID-K1"}, {}, FIT),
    ("Pod with multiple matchExpressions ANDed that doesn't match the existing node",
     {"affinity": required({"matchExpressions": [expr("GPU", "Exists"), expr("GPU", "In", "AMD", "INTER")]})},
     "node1", {"GPU": "NVIDIA-GRID-K1"}, {}, POD),
    ("Pod with multiple NodeSelectorTerms ORed in affinity, matches the node's labels and will schedule",
     {"affinity": required({"matchExpressions": [expr("foo", "In", "bar", "value2")]},
                           {"matchExpressions": [expr("diffkey", "In", "wrong", "value2")]})},
     "node1", {"foo": "bar"}, {}, FIT),
    ("Pod with an Affinity and a PodSpec.NodeSelector(the old thing that we are deprecating) both are satisfied",
     {"nodeSelector": {"foo": "bar"}, "affinity": required({"matchExpressions": [expr("foo", "Exists")]})},
     "node1", {"foo": "bar"}, {}, FIT),
    ("Pod with an Affinity matches node's labels but the PodSpec.NodeSelector is not satisfied",
     {"nodeSelector": {"foo": "bar"}, "affinity": required({"matchExpressions": [expr("foo", "Exists")]})},
     "node1", {"foo": "barrrrrr"}, {}, POD),
    ("Pod with matchFields using In operator that matches the existing node",
     {"affinity": required({"matchFields": [expr("metadata.name", "In", "node1")]})}, "node1", {}, {}, FIT),
    ("Pod with matchFields using In operator that does not match the existing node",
     {"affinity": required({"matchFields": [expr("metadata.name", "In", "node1")]})}, "node2", {}, {}, POD),
    ("Pod with two terms: matchFields does not match, but matchExpressions matches",
     {"affinity": required({"matchFields": [expr("metadata.name", "In", "node1")]},
                           {"matchExpressions": [expr("foo", "In", "bar")]})}, "node2", {"foo": "bar"}, {}, FIT),
    ("Pod with one term: matchFields does not match, but matchExpressions matches",
     {"affinity": required({"matchFields": [expr("metadata.name", "In", "node1")],
                            "matchExpressions": [expr("foo", "In", "bar")]})}, "node2", {"foo": "bar"}, {}, POD),
    ("Pod with one term: both matchFields and matchExpressions match",
     {"affinity": required({"matchFields": [expr("metadata.name", "In", "node1")],
                            "matchExpressions": [expr("foo", "In", "bar")]})}, "node1", {"foo": "bar"}, {}, FIT),
    ("Pod with two terms: both matchFields and matchExpressions do not match",
     {"affinity": required({"matchFields": [expr("metadata.name", "In", "node1")]},
                           {"matchExpressions": [expr("foo", "In", "not-match-to-bar")]})},
     "node2", {"foo": "bar"}, {}, POD),
    ("Pod with two terms of node.Name affinity", {"affinity": required(
        {"matchFields": [expr("metadata.name", "In", "node1")]},
        {"matchFields": [expr("metadata.name", "In", "node2")]})}, "node2", {}, {}, FIT),
    ("Pod with one term of conflicting node.Name affinity", {"affinity": required(
        {"matchFields": [expr("metadata.name", "In", "node1"), expr("metadata.name", "In", "node2")]})},
     "node2", {}, {}, CONFLICT),
    ("Pod with addedAffinity that matches", {}, "node1", {"zone": "foo"},
     {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
         "nodeSelectorTerms": [{"matchExpressions": [expr("zone", "In", "foo")]}]}}}, FIT),
    ("Pod with addedAffinity that doesn't match", {}, "node1", {"zone": "bar"},
     {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
         "nodeSelectorTerms": [{"matchExpressions": [expr("zone", "In", "foo")]}]}}}, ENFORCED),
    ("Pod with addedAffinity and pod affinity that match",
     {"affinity": required({"matchExpressions": [expr("zone", "In", "foo")]})}, "node1", {"zone": "foo", "x": "y"},
     {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
         "nodeSelectorTerms": [{"matchExpressions": [expr("x", "Exists")]}]}}}, FIT),
    ("Pod with addedAffinity that matches but pod affinity that doesn't",
     {"affinity": required({"matchExpressions": [expr("zone", "In", "bar")]})}, "node1", {"zone": "foo", "x": "y"},
     {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
         "nodeSelectorTerms": [{"matchExpressions": [expr("x", "Exists")]}]}}}, POD),
]


@pytest.mark.parametrize(("name", "spec", "node", "labels", "args", "want"), FILTER_CASES,
                         ids=[c[0][:70] for c in FILTER_CASES])
def test_filter(name: str, spec: dict[str, Any], node: str, labels: dict[str, str], args: dict[str, Any],
                want: Any) -> None:
    st = run_filter(NodeAffinity(args), make_pod(**spec), states([make_node(node, labels=labels)])[0])
    assert (None if st is None else (st.code, st.reasons)) == want


LABEL1 = {"foo": "bar"}
LABEL2 = {"key": "value"}
LABEL3 = {"az": "az1"}
LABEL4 = {"abc": "az11", "def": "az22"}
LABEL5 = {"foo": "bar", "key": "value", "az": "az1"}


def preferred(*terms: tuple[int, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    return [{"weight": w, "preference": {"matchExpressions": e}} for w, e in terms]


AFFINITY1 = preferred((2, [expr("foo", "In", "bar")]))
AFFINITY2 = preferred((2, [expr("foo", "In", "bar")]), (4, [expr("key", "In", "value")]),
                      (5, [expr("foo", "In", "bar"), expr("key", "In", "value"), expr("az", "In", "az1")]))


def with_preferred(terms: list[dict[str, Any]]) -> dict[str, Any]:
    return {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": terms}}}


@pytest.mark.parametrize(("name", "spec", "labels", "args", "want"), [
    ("all nodes are same priority as NodeAffinity is nil", {}, [LABEL1, LABEL2, LABEL3], {}, None),
    ("no node matches preferred scheduling requirements in NodeAffinity of pod so all nodes' priority is zero",
     with_preferred(AFFINITY1), [LABEL4, LABEL2, LABEL3], {}, [0, 0, 0]),
    ("only node1 matches the preferred scheduling requirements of pod", with_preferred(AFFINITY1),
     [LABEL1, LABEL2, LABEL3], {}, [100, 0, 0]),
    # raw 2, 11, 4 -> 2*100/11, 100, 4*100/11
    ("all nodes matches the preferred scheduling requirements of pod but with different priorities",
     with_preferred(AFFINITY2), [LABEL1, LABEL5, LABEL2], {}, [18, 100, 36]),
    # added preferred term (weight 3 on key=value) next to the pod's: raw 2, 3, 5
    ("added affinity", with_preferred(AFFINITY1), [LABEL1, LABEL2, LABEL5],
     {"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred(
         (3, [expr("key", "In", "value")]))}}, [40, 60, 100]),
    ("added affinity only", {}, [LABEL1, LABEL2, LABEL5],
     {"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred(
         (3, [expr("key", "In", "value")]))}}, [0, 100, 100]),
])
def test_score(name: str, spec: dict[str, Any], labels: list[dict[str, str]], args: dict[str, Any],
               want: list[int] | None) -> None:
    nodes = states([make_node(f"node{i}", labels=lab) for i, lab in enumerate(labels)])
    assert run_scores(NodeAffinity(args), make_pod(**spec), nodes) == want
