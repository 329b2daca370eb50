"""InterPodAffinity: upstream's filter and score tables (interpodaffinity/filtering_test.go
TestRequiredAffinitySingleNode / TestRequiredAffinityMultipleNodes and scoring_test.go
TestPreferredAffinity), as data: each case is the incoming pod, the pods already placed (by node
name) and the nodes, with upstream's expected PreFilter status and per-node Filter statuses or
normalized scores."""

from __future__ import annotations

from typing import Any

import pytest

from cp.scheduling import framework
from cp.scheduling.plugins import interpodaffinity as ipa

AFF, ANTI = "podAffinity", "podAntiAffinity"
REQ, PREF = "required", "preferred"
SKIP = "skip"
NOT_AFF = ("UnschedulableAndUnresolvable", ipa.ERR_REASON_AFFINITY)
NOT_ANTI = ("Unschedulable", ipa.ERR_REASON_ANTI_AFFINITY)
NOT_EXISTING = ("Unschedulable", ipa.ERR_REASON_EXISTING_ANTI_AFFINITY)

# The namespaces of upstream's tests (name -> labels).
NAMESPACES = {"subteam1.team1": {"team": "team1"}, "subteam2.team1": {"team": "team1"},
              "subteam1.team2": {"team": "team2"}}


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    e: dict[str, Any] = {"key": key, "operator": op}
    if values:
        e["values"] = list(values)
    return e


def term(topology: str, *exprs: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"labelSelector": {"matchExpressions": list(exprs)}, "topologyKey": topology, **extra}


def pod(*, labels: dict[str, str] | None = None, ns: str = "", node: str = "", name: str = "",
        terms: tuple[tuple[str, str, dict[str, Any], int], ...] = ()) -> dict[str, Any]:
    """A pod; `terms`: (podAffinity|podAntiAffinity, required|preferred, term, weight)."""
    affinity: dict[str, Any] = {}
    for kind, how, t, weight in terms:
        rules = affinity.setdefault(kind, {})
        if how == REQ:
            rules.setdefault("requiredDuringSchedulingIgnoredDuringExecution", []).append(t)
        else:
            rules.setdefault("preferredDuringSchedulingIgnoredDuringExecution", []).append(
                {"weight": weight, "podAffinityTerm": t})
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    if node:
        spec["nodeName"] = node
    if affinity:
        spec["affinity"] = affinity
    uid = name or f"uid-{id(spec)}"
    return {"metadata": {"name": name or uid, "namespace": ns, "uid": uid, "labels": labels or {}}, "spec": spec}


def req(kind: str, t: dict[str, Any]) -> tuple[str, str, dict[str, Any], int]:
    return (kind, REQ, t, 0)


def pref(kind: str, t: dict[str, Any], weight: int) -> tuple[str, str, dict[str, Any], int]:
    return (kind, PREF, t, weight)


def node(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}, "status": {"allocatable": {"pods": "110"}}}


def snapshot(nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> framework.Snapshot:
    states = [framework.NodeState.of(n, [p for p in pods if p["spec"].get("nodeName") == n["metadata"]["name"]])
              for n in nodes]
    return framework.Snapshot(states, NAMESPACES)


def run_filter(incoming: dict[str, Any], pods: list[dict[str, Any]], nodes: list[dict[str, Any]]
               ) -> str | list[tuple[str, str] | None]:
    plugin = ipa.InterPodAffinity({})
    snap = snapshot(nodes, pods)
    state = framework.CycleState()
    info = framework.PodInfo(incoming)
    st = plugin.pre_filter(state, info, snap)
    if st is not None:
        assert st.code == framework.SKIP
        return SKIP
    out: list[tuple[str, str] | None] = []
    for n in snap.nodes:
        got = plugin.filter(state, info, n)
        out.append(None if got is None else (got.code, got.message()))
    return out


# ------------------------------------------------------------------ TestRequiredAffinitySingleNode

POD_LABEL = {"service": "securityscan"}
POD_LABEL2 = {"security": "S1"}
NODE1 = node("node1", {"region": "r1", "zone": "z11"})
EXISTING = pod(labels=POD_LABEL, node="node1")
TEAM1 = {"matchExpressions": [expr("team", "In", "team1")]}

SINGLE_NODE: list[tuple[str, dict[str, Any], list[dict[str, Any]], Any]] = [
    ("no required affinity, empty node", pod(), [], SKIP),
    ("affinity In matches the existing pod",
     pod(labels=POD_LABEL2, terms=(req(AFF, term("region", expr("service", "In", "securityscan", "value2"))),)),
     [EXISTING], None),
    ("affinity NotIn matches the existing pod",
     pod(labels=POD_LABEL2, terms=(req(AFF, term("region", expr("service", "NotIn", "securityscan3", "value3"))),)),
     [EXISTING], None),
    ("affinity in another namespace does not match",
     pod(labels=POD_LABEL2, terms=(req(AFF, term("", expr("service", "In", "securityscan", "value2"),
                                                  namespaces=["DiffNameSpace"])),)),
     [pod(labels=POD_LABEL, ns="ns", node="node1")], NOT_AFF),
    ("affinity with a selector not matching the existing pod",
     pod(labels=POD_LABEL, terms=(req(AFF, term("", expr("service", "In", "antivirusscan", "value2"))),)),
     [EXISTING], NOT_AFF),
    ("several terms with different operators all match",
     pod(labels=POD_LABEL2, terms=(
         req(AFF, term("region", expr("service", "Exists"), expr("wrongkey", "DoesNotExist"))),
         req(AFF, term("region", expr("service", "In", "securityscan"), expr("service", "NotIn", "WrongValue"))))),
     [EXISTING], None),
    ("matchExpressions are ANDed: one does not match",
     pod(labels=POD_LABEL2, terms=(
         req(AFF, term("region", expr("service", "Exists"), expr("wrongkey", "DoesNotExist"))),
         req(AFF, term("region", expr("service", "In", "securityscan2"), expr("service", "NotIn", "WrongValue"))))),
     [EXISTING], NOT_AFF),
    ("affinity and anti-affinity both satisfied",
     pod(labels=POD_LABEL2, terms=(req(AFF, term("region", expr("service", "In", "securityscan", "value2"))),
                                   req(ANTI, term("node", expr("service", "In", "antivirusscan", "value2"))))),
     [EXISTING], None),
    ("affinity, anti-affinity and the existing pod's anti-affinity satisfied",
     pod(labels=POD_LABEL2, terms=(req(AFF, term("region", expr("service", "In", "securityscan", "value2"))),
                                   req(ANTI, term("node", expr("service", "In", "antivirusscan", "value2"))))),
     [pod(labels=POD_LABEL, node="node1",
          terms=(req(ANTI, term("node", expr("service", "In", "antivirusscan", "value2"))),))], None),
    ("affinity satisfied, anti-affinity not",
     pod(labels=POD_LABEL2, terms=(req(AFF, term("region", expr("service", "In", "securityscan", "value2"))),
                                   req(ANTI, term("zone", expr("service", "In", "securityscan", "value2"))))),
     [EXISTING], NOT_ANTI),
    ("the existing pod's anti-affinity is violated",
     pod(labels=POD_LABEL, terms=(req(AFF, term("region", expr("service", "In", "securityscan", "value2"))),
                                  req(ANTI, term("node", expr("service", "In", "antivirusscan", "value2"))))),
     [pod(labels=POD_LABEL, node="node1",
          terms=(req(ANTI, term("zone", expr("service", "In", "securityscan", "value2"))),))], NOT_EXISTING),
    ("a pod matching its own NotIn term is not the first of its group",
     pod(labels=POD_LABEL, terms=(req(AFF, term("region", expr("service", "NotIn", "securityscan", "value2"))),)),
     [pod(labels={"service": "securityscan"}, node="node2")], NOT_AFF),
    ("existing anti-affinity respected for a pod without any",
     pod(labels=POD_LABEL),
     [pod(labels=POD_LABEL, node="node1",
          terms=(req(ANTI, term("zone", expr("service", "In", "securityscan", "value2"))),))], NOT_EXISTING),
    ("existing anti-affinity not matching a pod without any",
     pod(labels=POD_LABEL),
     [pod(labels=POD_LABEL, node="node1",
          terms=(req(ANTI, term("zone", expr("service", "NotIn", "securityscan", "value2"))),))], SKIP),
    ("anti-affinity with the existing pod, symmetry violated by the incoming pod",
     pod(labels=POD_LABEL, terms=(req(ANTI, term("region", expr("service", "Exists"))),
                                  req(ANTI, term("region", expr("security", "Exists"))))),
     [pod(labels=POD_LABEL2, node="node1", terms=(req(ANTI, term("zone", expr("security", "Exists"))),))],
     NOT_ANTI),
    ("symmetry a1: partial match on terms",
     pod(labels=POD_LABEL, terms=(req(ANTI, term("zone", expr("service", "Exists"))),
                                  req(ANTI, term("zone", expr("security", "Exists"))))),
     [pod(labels=POD_LABEL2, node="node1", terms=(req(ANTI, term("zone", expr("security", "Exists"))),))],
     NOT_ANTI),
    ("symmetry a2: partial match on terms",
     pod(labels=POD_LABEL2, terms=(req(ANTI, term("zone", expr("security", "Exists"))),)),
     [pod(labels=POD_LABEL, node="node1", terms=(req(ANTI, term("zone", expr("service", "Exists"))),
                                                  req(ANTI, term("zone", expr("security", "Exists")))))],
     NOT_EXISTING),
    ("symmetry b1: partial match on terms",
     pod(labels={"abc": "", "xyz": ""}, terms=(req(ANTI, term("zone", expr("abc", "Exists"))),
                                               req(ANTI, term("zone", expr("def", "Exists"))))),
     [pod(labels={"def": "", "xyz": ""}, node="node1", terms=(req(ANTI, term("zone", expr("abc", "Exists"))),
                                                               req(ANTI, term("zone", expr("def", "Exists")))))],
     NOT_ANTI),
    ("symmetry b2: partial match on terms",
     pod(labels={"def": "", "xyz": ""}, terms=(req(ANTI, term("zone", expr("abc", "Exists"))),
                                               req(ANTI, term("zone", expr("def", "Exists"))))),
     [pod(labels={"abc": "", "xyz": ""}, node="node1", terms=(req(ANTI, term("zone", expr("abc", "Exists"))),
                                                               req(ANTI, term("zone", expr("def", "Exists")))))],
     NOT_ANTI),
    ("affinity with a namespaceSelector",
     pod(labels=POD_LABEL2, terms=(req(AFF, term("region", expr("service", "In", "securityscan", "value2"),
                                                  namespaceSelector=TEAM1)),)),
     [pod(labels=POD_LABEL, ns="subteam1.team1", node="node1")], None),
    ("affinity with a non-matching namespaceSelector",
     pod(labels=POD_LABEL2, terms=(req(AFF, term("region", expr("service", "In", "securityscan", "value2"),
                                                  namespaceSelector=TEAM1)),)),
     [pod(labels=POD_LABEL, ns="subteam1.team2", node="node1")], NOT_AFF),
    ("anti-affinity with a matching namespaceSelector",
     pod(labels=POD_LABEL2, ns="subteam1.team1", terms=(
         req(ANTI, term("zone", expr("service", "In", "securityscan", "value2"), namespaceSelector=TEAM1)),)),
     [pod(labels=POD_LABEL, ns="subteam2.team1", node="node1")], NOT_ANTI),
    ("anti-affinity with an empty namespaceSelector (all namespaces)",
     pod(labels=POD_LABEL2, ns="subteam1.team1", terms=(
         req(ANTI, term("zone", expr("service", "In", "securityscan", "value2"), namespaceSelector={})),)),
     [pod(labels=POD_LABEL, ns="subteam2.team1", node="node1")], NOT_ANTI),
    ("anti-affinity with a non-matching namespaceSelector",
     pod(labels=POD_LABEL2, ns="subteam1.team1", terms=(
         req(ANTI, term("zone", expr("service", "In", "securityscan", "value2"), namespaceSelector=TEAM1)),)),
     [pod(labels=POD_LABEL, ns="subteam1.team2", node="node1")], None),
]


@pytest.mark.parametrize(("incoming", "pods", "want"), [c[1:] for c in SINGLE_NODE], ids=[c[0] for c in SINGLE_NODE])
def test_required_affinity_single_node(incoming: dict[str, Any], pods: list[dict[str, Any]], want: Any) -> None:
    got = run_filter(incoming, pods, [NODE1])
    assert got == (SKIP if want == SKIP else [want])


# ------------------------------------------------------------------ TestRequiredAffinityMultipleNodes

CHINA = {"region": "China"}
CHINA_AZ1 = {"region": "China", "az": "az1"}
INDIA = {"region": "India"}

MULTI_NODE: list[tuple[str, dict[str, Any], list[dict[str, Any]], list[dict[str, Any]], Any]] = [
    ("nodes sharing the topology value with a matching pod fit",
     pod(terms=(req(AFF, term("region", expr("foo", "In", "bar"))),)),
     [pod(name="p1", node="node1", labels={"foo": "bar"})],
     [node("node1", CHINA), node("node2", CHINA_AZ1), node("node3", INDIA)],
     [None, None, NOT_AFF]),
    ("the first pod of a same-zone group may go anywhere",
     pod(labels={"foo": "bar", "service": "securityscan"}, terms=(
         req(AFF, term("zone", expr("foo", "In", "bar"))), req(AFF, term("zone", expr("service", "In", "securityscan"))))),
     [pod(name="p1", node="nodeA", labels={"foo": "bar"})],
     [node("nodeA", {"zone": "az1", "hostname": "h1"}), node("nodeB", {"zone": "az2", "hostname": "h2"})],
     [None, None]),
    ("the first pod of a group needs the topology keys",
     pod(labels={"foo": "bar", "service": "securityscan"}, terms=(
         req(AFF, term("zone", expr("foo", "In", "bar"))), req(AFF, term("zone", expr("service", "In", "securityscan"))))),
     [pod(name="p1", node="nodeA", labels={"foo": "bar"})],
     [node("nodeA", {"zoneLabel": "az1", "hostname": "h1"}), node("nodeB", {"zoneLabel": "az2", "hostname": "h2"})],
     [NOT_AFF, NOT_AFF]),
    ("anti-affinity covers every node of the region",
     pod(terms=(req(ANTI, term("region", expr("foo", "In", "abc"))),)),
     [pod(node="nodeA", labels={"foo": "abc"})],
     [node("nodeA", {"region": "r1", "hostname": "nodeA"}), node("nodeB", {"region": "r1", "hostname": "nodeB"})],
     [NOT_ANTI, NOT_ANTI]),
    ("anti-affinity matches when any term matches",
     pod(terms=(req(ANTI, term("region", expr("foo", "In", "abc"))),
                req(ANTI, term("zone", expr("service", "In", "securityscan"))))),
     [pod(node="nodeA", labels={"foo": "abc", "service": "securityscan"})],
     [node("nodeA", {"region": "r1", "zone": "z1", "hostname": "nodeA"}),
      node("nodeB", {"region": "r1", "zone": "z2", "hostname": "nodeB"})],
     [NOT_ANTI, NOT_ANTI]),
    ("anti-affinity: another region fits",
     pod(terms=(req(ANTI, term("region", expr("foo", "In", "abc"))),)),
     [pod(node="nodeA", labels={"foo": "abc"})],
     [node("nodeA", CHINA), node("nodeB", CHINA_AZ1), node("nodeC", INDIA)],
     [NOT_ANTI, NOT_ANTI, None]),
    ("anti-affinity of a pod in another namespace does not apply",
     pod(ns="NS1", labels={"foo": "123"}, terms=(req(ANTI, term("region", expr("foo", "In", "bar"))),)),
     [pod(node="nodeA", ns="NS1", labels={"foo": "bar"}),
      pod(node="nodeC", ns="NS2", terms=(req(ANTI, term("region", expr("foo", "In", "123"))),))],
     [node("nodeA", CHINA), node("nodeB", CHINA_AZ1), node("nodeC", INDIA)],
     [NOT_ANTI, NOT_ANTI, None]),
    ("an existing pod's term with a topology key no node has",
     pod(labels={"foo": ""}),
     [pod(node="nodeA", terms=(req(ANTI, term("invalid-node-label", expr("foo", "Exists"))),))],
     [node("nodeA", {"region": "r1", "zone": "z1", "hostname": "nodeA"}),
      node("nodeB", {"region": "r1", "zone": "z1", "hostname": "nodeB"})],
     SKIP),
    ("the incoming pod's term needs its topology key too",
     pod(node="nodeA", terms=(req(ANTI, term("invalid-node-label", expr("foo", "Exists"))),)),
     [pod(node="nodeA", labels={"foo": ""})],
     [node("nodeA", {"region": "r1", "zone": "z1", "hostname": "nodeA"}),
      node("nodeB", {"region": "r1", "zone": "z1", "hostname": "nodeB"})],
     [None, None]),
]


@pytest.mark.parametrize(("incoming", "pods", "nodes", "want"), [c[1:] for c in MULTI_NODE],
                         ids=[c[0] for c in MULTI_NODE])
def test_required_affinity_multiple_nodes(incoming: dict[str, Any], pods: list[dict[str, Any]],
                                          nodes: list[dict[str, Any]], want: Any) -> None:
    assert run_filter(incoming, pods, nodes) == want
