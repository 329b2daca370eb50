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
              "subteam1.team2": {"team": "team2"}, "subteam2.team2": {"team": "team2"}}


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
    ("the incoming pod violates the existing pods' terms on every node",
     pod(labels={"foo": "", "bar": ""}),
     [pod(node="nodeA", terms=(req(ANTI, term("zone", expr("foo", "Exists"))),)),
      pod(node="nodeA", terms=(req(ANTI, term("region", expr("bar", "Exists"))),))],
     [ZA := node("nodeA", {"region": "r1", "zone": "z1", "hostname": "nodeA"}),
      ZB := node("nodeB", {"region": "r1", "zone": "z2", "hostname": "nodeB"})],
     [NOT_EXISTING, NOT_EXISTING]),
    ("the incoming pod's anti-affinity is violated by one term on each node",
     pod(terms=(req(ANTI, term("zone", expr("foo", "Exists"))), req(ANTI, term("region", expr("bar", "Exists"))))),
     [pod(node="nodeA", labels={"foo": ""}), pod(node="nodeB", labels={"bar": ""})],
     [ZA, ZB], [NOT_ANTI, NOT_ANTI]),
    ("existing anti-affinity: selector and topology key must both match (one key invalid)",
     pod(labels={"foo": "", "bar": ""}),
     [pod(node="nodeA", terms=(req(ANTI, term("invalid-node-label", expr("foo", "Exists"))),
                               req(ANTI, term("zone", expr("bar", "Exists")))))],
     [ZA, ZB], [NOT_EXISTING, None]),
    ("incoming anti-affinity: selector and topology key must both match (one key invalid)",
     pod(terms=(req(ANTI, term("invalid-node-label", expr("foo", "Exists"))),
                req(ANTI, term("zone", expr("bar", "Exists"))))),
     [pod(name="podA", node="nodeA", labels={"foo": "", "bar": ""})],
     [ZA, ZB], [NOT_ANTI, None]),
    ("existing anti-affinity: selector and topology key must both match (all keys valid)",
     pod(labels={"foo": "", "bar": ""}),
     [pod(node="nodeA", terms=(req(ANTI, term("region", expr("foo", "Exists"))),
                               req(ANTI, term("zone", expr("bar", "Exists")))))],
     [ZA, ZB], [NOT_EXISTING, NOT_EXISTING]),
    ("incoming anti-affinity: selector and topology key must both match (all keys valid)",
     pod(terms=(req(ANTI, term("region", expr("foo", "Exists"))), req(ANTI, term("zone", expr("bar", "Exists"))))),
     [pod(node="nodeA", labels={"foo": "", "bar": ""})],
     [ZA, ZB], [NOT_ANTI, NOT_ANTI]),
    ("existing pods on nodeA and nodeB each have a term matching: only nodeC fits",
     pod(labels={"foo": "", "bar": ""}),
     [pod(node="nodeA", terms=(req(ANTI, term("zone", expr("foo", "Exists"))),
                               req(ANTI, term("zone", expr("labelA", "Exists"))))),
      pod(node="nodeB", terms=(req(ANTI, term("zone", expr("bar", "Exists"))),
                               req(ANTI, term("zone", expr("labelB", "Exists")))))],
     [ZA, ZB, node("nodeC", {"region": "r1", "zone": "z3", "hostname": "nodeC"})],
     [NOT_EXISTING, NOT_EXISTING, None]),
    ("incoming affinity: all terms match one pod, then the topology keys",
     pod(terms=(req(AFF, term("region", expr("foo", "Exists"))), req(AFF, term("zone", expr("bar", "Exists"))))),
     [pod(name="pod1", node="nodeA", labels={"foo": "", "bar": ""})],
     [ZA, node("nodeB", {"region": "r1", "zone": "z1", "hostname": "nodeB"})], [None, None]),
    ("incoming affinity: the terms must be satisfied by the same pod",
     pod(terms=(req(AFF, term("region", expr("foo", "Exists"))), req(AFF, term("zone", expr("bar", "Exists"))))),
     [pod(name="pod1", node="nodeA", labels={"foo": ""}), pod(name="pod2", node="nodeB", labels={"bar": ""})],
     [ZA, ZB], [NOT_AFF, NOT_AFF]),
]


@pytest.mark.parametrize(("incoming", "pods", "nodes", "want"), [c[1:] for c in MULTI_NODE],
                         ids=[c[0] for c in MULTI_NODE])
def test_required_affinity_multiple_nodes(incoming: dict[str, Any], pods: list[dict[str, Any]],
                                          nodes: list[dict[str, Any]], want: Any) -> None:
    assert run_filter(incoming, pods, nodes) == want


def test_filter_without_prefilter_is_an_error() -> None:
    """TestPreFilterDisabled."""
    got = ipa.InterPodAffinity({}).filter(framework.CycleState(), framework.PodInfo(pod()),
                                          framework.NodeState.of(node("n", {})))
    assert got is not None and got.code == framework.ERROR
    assert got.message() == 'error reading "PreFilterInterPodAffinity" from cycleState'


# ------------------------------------------------------------------ TestPreFilterStateAddRemovePod

LABEL1, LABEL2, LABEL3 = {"region": "r1", "zone": "z11"}, {"region": "r1", "zone": "z12"}, {"region": "r2", "zone": "z21"}
FOO_BAR = term("region", expr("foo", "In", "bar"))
COMPLEX = (term("region", expr("foo", "In", "bar", "buzz")), term("zone", expr("service", "NotIn", "bar", "security", "test")))

ADD_REMOVE: list[tuple[str, dict[str, Any], dict[str, Any], dict[tuple[str, str], int]]] = [
    ("anti-affinity counts after adding a pod",
     pod(name="pending", labels={"foo": "bar"}, terms=(req(ANTI, FOO_BAR),)),
     pod(name="addedPod", labels={"foo": "bar"}, node="nodeB", terms=(req(ANTI, FOO_BAR),)),
     {("region", "r1"): 2}),
    ("anti-affinity counts after adding a pod (two terms)",
     pod(name="pending", labels={"foo": "bar"}, terms=tuple(req(ANTI, t) for t in COMPLEX)),
     pod(name="addedPod", labels={"foo": "bar"}, node="nodeA", terms=tuple(req(ANTI, t) for t in COMPLEX)),
     {("region", "r1"): 2, ("zone", "z11"): 2, ("zone", "z21"): 1}),
]


@pytest.mark.parametrize(("pending", "added", "want"), [c[1:] for c in ADD_REMOVE], ids=[c[0] for c in ADD_REMOVE])
def test_prefilter_state_add_remove_pod(pending: dict[str, Any], added: dict[str, Any],
                                        want: dict[tuple[str, str], int]) -> None:
    existing = [pod(name="p1", labels={"foo": "bar"}, node="nodeA"),
                pod(name="p2", node="nodeC", terms=(req(ANTI, FOO_BAR),))]
    snap = snapshot([node("nodeA", LABEL1), node("nodeB", LABEL2), node("nodeC", LABEL3)], existing)
    plugin = ipa.InterPodAffinity({})
    state = framework.CycleState()
    info = framework.PodInfo(pending)
    assert plugin.pre_filter(state, info, snap) is None
    before = state.clone()
    target = snap.by_name[added["spec"]["nodeName"]]
    plugin.add_pod(state, info, framework.PodInfo(added), target)
    s = state["PreFilterInterPodAffinity"]
    assert s.anti_affinity_counts == want
    assert s.affinity_counts == {}
    plugin.remove_pod(state, info, framework.PodInfo(added), target)
    s0 = before["PreFilterInterPodAffinity"]
    assert (s.anti_affinity_counts, s.affinity_counts, s.existing_counts) == (
        s0.anti_affinity_counts, s0.affinity_counts, s0.existing_counts)


# ------------------------------------------------------------------ TestPreferredAffinity (scoring)


def run_score(incoming: dict[str, Any], pods: list[dict[str, Any]], nodes: list[dict[str, Any]],
              args: dict[str, Any] | None = None) -> str | list[int]:
    plugin = ipa.InterPodAffinity(args or {})
    snap = snapshot(nodes, pods)
    state = framework.CycleState()
    state[framework.SNAPSHOT_KEY] = snap
    info = framework.PodInfo(incoming)
    st = plugin.pre_score(state, info, snap.nodes)
    if st is not None:
        assert st.code == framework.SKIP
        return SKIP
    scores = [plugin.score(state, info, n) for n in snap.nodes]
    plugin.normalize(state, info, scores)
    return scores


S1, S2 = {"security": "S1"}, {"security": "S2"}
CN, IN, AZ1, AZ2, CN_AZ1 = {"region": "China"}, {"region": "India"}, {"az": "az1"}, {"az": "az2"}, {
    "region": "China", "az": "az1"}
WITH_S1_IN_REGION = (pref(AFF, term("region", expr("security", "In", "S1")), 5),)
WITH_S2_IN_REGION = (pref(AFF, term("region", expr("security", "In", "S2")), 6),)
AFFINITY3 = (pref(AFF, term("region", expr("security", "NotIn", "S1"), expr("security", "In", "S2")), 8),
             pref(AFF, term("region", expr("security", "Exists"), expr("wrongkey", "DoesNotExist")), 2))
HARD = (req(AFF, term("region", expr("security", "In", "S1", "value2"))),
        req(AFF, term("region", expr("security", "Exists"), expr("wrongkey", "DoesNotExist"))))
AWAY_S1_IN_AZ = (pref(ANTI, term("az", expr("security", "In", "S1")), 5),)
AWAY_S2_IN_AZ = (pref(ANTI, term("az", expr("security", "In", "S2")), 5),)
WITH_S1_AWAY_S2 = (pref(AFF, term("region", expr("security", "In", "S1")), 8),
                   pref(ANTI, term("az", expr("security", "In", "S2")), 5))
NS_SELECTOR = {"namespaces": ["subteam2.team2"], "namespaceSelector": TEAM1}
AFF_NS = (pref(AFF, term("region", expr("security", "In", "S1"), **NS_SELECTOR), 5),)
ANTI_NS = (pref(ANTI, term("region", expr("security", "In", "S1"), **NS_SELECTOR), 5),)


def on(node_name: str, labels: dict[str, str] | None = None, terms: tuple[Any, ...] = (), ns: str = "") -> dict[str, Any]:
    return pod(node=node_name, labels=labels, terms=terms, ns=ns)


def nodes_of(*labels: dict[str, str]) -> list[dict[str, Any]]:
    return [node(f"node{i + 1}", lab) for i, lab in enumerate(labels)]


PREFERRED: list[tuple[str, dict[str, Any], list[dict[str, Any]], list[dict[str, Any]], Any]] = [
    ("no affinity anywhere: skipped", pod(labels=S1), [], nodes_of(CN, IN, AZ1), SKIP),
    ("affinity: matching pods in the topology score high",
     pod(labels=S1, terms=WITH_S1_IN_REGION), [on("node1", S1), on("node2", S2), on("node3", S1)],
     nodes_of(CN, IN, AZ1), [100, 0, 0]),
    ("affinity: every node of the matching topology value scores the same",
     pod(terms=WITH_S1_IN_REGION), [on("node1", S1)], nodes_of(CN, CN_AZ1, IN), [100, 100, 0]),
    ("affinity: the region with more matching pods scores high",
     pod(labels=S1, terms=WITH_S2_IN_REGION),
     [on("node1", S2), on("node1", S2), on("node2", S2), on("node3", S2), on("node4", S2), on("node5", S2)],
     nodes_of(CN, IN, CN, CN, IN), [100, 0, 100, 100, 0]),
    ("affinity: several operators, some terms not matching",
     pod(labels=S1, terms=AFFINITY3), [on("node1", S1), on("node2", S2), on("node3", S1)],
     nodes_of(CN, IN, AZ1), [20, 100, 0]),
    ("affinity symmetry: the existing pods' preferred terms",
     pod(labels=S2), [on("node1", S1, WITH_S1_IN_REGION), on("node2", S2, WITH_S2_IN_REGION)],
     nodes_of(CN, IN, AZ1), [0, 100, 0]),
    ("affinity symmetry with a namespace selector",
     pod(labels=S1, ns="subteam1.team1"), [on("node1", S1, AFF_NS), on("node2", S2, WITH_S2_IN_REGION)],
     nodes_of(CN, IN, AZ1), [100, 0, 0]),
    ("anti-affinity symmetry with a namespace selector",
     pod(labels=S1, ns="subteam1.team1"), [on("node1", S1, ANTI_NS), on("node2", S2, WITH_S2_IN_REGION)],
     nodes_of(CN, IN, AZ1), [0, 100, 100]),
    ("affinity symmetry: the existing pods' required terms (hardPodAffinityWeight)",
     pod(labels=S1), [on("node1", S1, HARD), on("node2", S2, HARD)], nodes_of(CN, IN, AZ1), [100, 100, 0]),
    ("anti-affinity: the node without matching pods scores high",
     pod(labels=S1, terms=AWAY_S1_IN_AZ), [on("node1", S1), on("node2", S2)], nodes_of(AZ1, CN), [0, 100]),
    ("anti-affinity: the node without the topology key scores high",
     pod(labels=S1, terms=AWAY_S1_IN_AZ), [on("node1", S1), on("node2", S1)], nodes_of(AZ1, CN), [0, 100]),
    ("anti-affinity: the node with more matching pods scores low",
     pod(labels=S1, terms=AWAY_S1_IN_AZ), [on("node1", S1), on("node1", S1), on("node2", S2)],
     nodes_of(AZ1, IN), [0, 100]),
    ("anti-affinity symmetry",
     pod(labels=S2), [on("node1", S1, AWAY_S2_IN_AZ), on("node2", S2, AWAY_S1_IN_AZ)], nodes_of(AZ1, AZ2), [0, 100]),
    ("affinity and anti-affinity",
     pod(labels=S1, terms=WITH_S1_AWAY_S2), [on("node1", S1), on("node2", S1)], nodes_of(CN, AZ1), [100, 0]),
    ("affinity and anti-affinity with pods of the same labels",
     pod(labels=S1, terms=WITH_S1_AWAY_S2),
     [on("node1", S1), on("node1", S1), on("node2", S1), on("node3", S1), on("node3", S1), on("node4", S1),
      on("node5", S1)],
     nodes_of(CN_AZ1, IN, CN, CN, IN), [100, 0, 100, 100, 0]),
    ("affinity, anti-affinity and symmetry together",
     pod(labels=S1, terms=WITH_S1_AWAY_S2),
     [on("node1", S1), on("node2", S2), on("node3", None, WITH_S1_AWAY_S2), on("node4", None, AWAY_S1_IN_AZ)],
     nodes_of(CN, AZ1, IN, AZ2), [100, 0, 100, 0]),
    ("no panic when only some nodes of a topology have pods with affinity",
     pod(labels=S1), [on("node1", S1), on("node2", None, WITH_S1_AWAY_S2)], nodes_of(CN, CN), [0, 0]),
    ("affinity with pods matching the namespaceSelector",
     pod(labels=S1, ns="subteam1.team1", terms=AFF_NS),
     [on("node1", S1, ns="subteam1.team1"), on("node1", S1, ns="subteam1.team1"), on("node1", S1, ns="subteam1.team2"),
      on("node2", S1, ns="subteam2.team1")], nodes_of(CN, IN), [100, 0]),
    ("affinity with pods matching the namespaceSelector and namespaces",
     pod(labels=S1, ns="subteam1.team1", terms=AFF_NS),
     [on("node1", S1, ns="subteam1.team1"), on("node1", S1, ns="subteam1.team1"), on("node1", S1, ns="subteam2.team2"),
      on("node2", S1, ns="subteam2.team1")], nodes_of(CN, IN), [100, 0]),
    ("anti-affinity with pods matching the namespaceSelector",
     pod(labels=S1, ns="subteam1.team1", terms=ANTI_NS),
     [on("node1", S1, ns="subteam1.team1"), on("node1", S1, ns="subteam1.team1"), on("node1", S1, ns="subteam1.team2"),
      on("node2", S1, ns="subteam2.team1")], nodes_of(CN, IN), [0, 100]),
    ("anti-affinity with pods matching the namespaceSelector and namespaces",
     pod(labels=S1, ns="subteam1.team1", terms=ANTI_NS),
     [on("node1", S1, ns="subteam1.team1"), on("node1", S1, ns="subteam1.team1"), on("node1", S1, ns="subteam2.team2"),
      on("node2", S1, ns="subteam2.team1")], nodes_of(CN, IN), [0, 100]),
    ("preferred terms of existing pods are not ignored by default",
     pod(labels=S2), [on("node1", S1, WITH_S1_AWAY_S2), on("node2", S2, WITH_S2_IN_REGION)], nodes_of(CN, IN),
     [0, 100]),
    ("no nodes to score", pod(labels=S2), [], [], SKIP),
]


@pytest.mark.parametrize(("incoming", "pods", "nodes", "want"), [c[1:] for c in PREFERRED],
                         ids=[c[0] for c in PREFERRED])
def test_preferred_affinity(incoming: dict[str, Any], pods: list[dict[str, Any]], nodes: list[dict[str, Any]],
                            want: Any) -> None:
    assert run_score(incoming, pods, nodes) == want


def test_ignore_preferred_terms_of_existing_pods() -> None:
    got = run_score(pod(labels=S2), [on("node1", S1, WITH_S1_AWAY_S2), on("node2", S2, WITH_S2_IN_REGION)],
                    nodes_of(CN, IN), {"ignorePreferredTermsOfExistingPods": True})
    assert got == SKIP


# ------------------------------------------------------------------ TestPreferredAffinityWithHardPodAffinitySymmetricWeight

HARD_NS = (req(AFF, term("region", expr("service", "In", "S1"), namespaces=["", "subteam2.team2"],
                         namespaceSelector=TEAM1)),)
HARD_WEIGHT: list[tuple[str, str, int, Any]] = [
    ("with the default weight", "", 1, [100, 100, 0]),
    ("with a zero weight", "", 0, SKIP),
    ("with no matching namespace", "subteam1.team2", 1, SKIP),
    ("with a matching namespaceSelector", "subteam1.team1", 1, [100, 100, 0]),
    ("with matching namespaces", "subteam2.team2", 1, [100, 100, 0]),
]


@pytest.mark.parametrize(("ns", "weight", "want"), [c[1:] for c in HARD_WEIGHT], ids=[c[0] for c in HARD_WEIGHT])
def test_hard_pod_affinity_symmetric_weight(ns: str, weight: int, want: Any) -> None:
    got = run_score(pod(labels={"service": "S1"}, ns=ns), [on("node1", None, HARD_NS), on("node2", None, HARD_NS)],
                    nodes_of(CN, IN, AZ1), {"hardPodAffinityWeight": weight})
    assert got == want


def test_args_are_validated() -> None:
    with pytest.raises(ipa.ArgsError, match=r"hardPodAffinityWeight: Invalid value: 101: not in valid range \[0-100\]"):
        ipa.InterPodAffinity({"hardPodAffinityWeight": 101})
