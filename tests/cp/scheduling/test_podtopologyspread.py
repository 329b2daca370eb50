"""PodTopologySpread: upstream's tables (podtopologyspread/filtering_test.go TestPreFilterState /
TestSingleConstraint / TestMultipleConstraints, scoring_test.go TestPodTopologySpreadScore) as data,
with upstream's expected domain counts, filter codes and normalized scores; plus the default
constraints with the default selector (`helper.DefaultSelector`)."""

from __future__ import annotations

from typing import Any

import pytest

from cp.scheduling import framework
from cp.scheduling.plugins import podtopologyspread as pts

OK, NO, UNRES = "Success", "Unschedulable", "UnschedulableAndUnresolvable"
HARD, SOFT = "DoNotSchedule", "ScheduleAnyway"
FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
BAR = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}
LIST_ARGS = {"defaultingType": "List"}


def spread(max_skew: int, key: str, when: str, selector: dict[str, Any] | None, **extra: Any) -> dict[str, Any]:
    c: dict[str, Any] = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when, **extra}
    if selector is not None:
        c["labelSelector"] = selector
    return c


def pod(name: str, *, node: str = "", labels: tuple[str, ...] | dict[str, str] = (), ns: str = "",
        constraints: tuple[dict[str, Any], ...] = (), **spec: Any) -> dict[str, Any]:
    lab = dict(labels) if isinstance(labels, dict) else dict.fromkeys(labels, "")
    body: dict[str, Any] = {"containers": [{"name": "c"}], **spec}
    if node:
        body["nodeName"] = node
    if constraints:
        body["topologySpreadConstraints"] = list(constraints)
    return {"metadata": {"name": name, "namespace": ns, "uid": f"{ns}/{name}", "labels": lab}, "spec": body}


def node(name: str, taints: list[dict[str, Any]] | None = None, **labels: str) -> dict[str, Any]:
    n: dict[str, Any] = {"metadata": {"name": name, "labels": labels}, "status": {"allocatable": {"pods": "110"}}}
    if taints:
        n["spec"] = {"taints": taints}
    return n


def zn(name: str, zone: str, **more: str) -> dict[str, Any]:
    """A node labelled zone=<zone>, node=<name>."""
    return node(name, zone=zone, node=name, **more)


def snapshot(nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> framework.Snapshot:
    return framework.Snapshot([framework.NodeState.of(
        n, [p for p in pods if p["spec"].get("nodeName") == n["metadata"]["name"]]) for n in nodes])


FOUR = [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-x", "zone2"), zn("node-y", "zone2")]


def foo_pods(*where: str, ns: str = "") -> list[dict[str, Any]]:
    """Pods labelled foo on the given nodes (node names without the "node-" prefix)."""
    return [pod(f"p-{w}{i}", node=f"node-{w}", labels=("foo",), ns=ns) for i, w in enumerate(where)]


# ------------------------------------------------------------------ TestPreFilterState

PRE_FILTER: list[tuple[str, dict[str, Any], list[dict[str, Any]], list[dict[str, Any]], list[dict[str, int]], list[int]]] = [
    ("clean cluster with one constraint",
     pod("p", labels=("foo",), constraints=(spread(5, "zone", HARD, {"matchLabels": {"foo": "bar"}}),)),
     FOUR, [], [{"zone1": 0, "zone2": 0}], [0]),
    ("one constraint", pod("p", labels=("foo",), constraints=(spread(1, "zone", HARD, FOO),)),
     FOUR, foo_pods("a", "a", "b", "y", "y"), [{"zone1": 3, "zone2": 2}], [2]),
    ("a null label selector matches nothing", pod("p", labels=("foo",), constraints=(spread(1, "zone", HARD, None),)),
     FOUR, foo_pods("a", "a", "b", "y", "y"), [{"zone1": 0, "zone2": 0}], [0]),
    ("one constraint on a 3-zone cluster", pod("p", labels=("foo",), constraints=(spread(1, "zone", HARD, FOO),)),
     [*FOUR, zn("node-o", "zone3"), zn("node-p", "zone3")], foo_pods("a", "a", "b", "y", "y"),
     [{"zone1": 3, "zone2": 2, "zone3": 0}], [0]),
    ("pods of other namespaces do not count", pod("p", labels=("foo",), constraints=(spread(1, "zone", HARD, FOO),)),
     FOUR, [*foo_pods("a", "b", "y"), *foo_pods("a", ns="ns1"), *foo_pods("y", ns="ns2")],
     [{"zone1": 2, "zone2": 1}], [1]),
    ("two constraints", pod("p", labels=("foo",), constraints=(spread(1, "zone", HARD, FOO), spread(1, "node", HARD, FOO))),
     FOUR, foo_pods("a", "a", "b", "y", "y", "y", "y"),
     [{"zone1": 3, "zone2": 4}, {"node-a": 2, "node-b": 1, "node-x": 0, "node-y": 4}], [3, 0]),
    ("soft constraints are left out",
     pod("p", labels=("foo",), constraints=(spread(1, "zone", SOFT, FOO), spread(1, "zone", HARD, FOO),
                                            spread(1, "node", SOFT, FOO), spread(1, "node", HARD, FOO))),
     [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-y", "zone2")], foo_pods("a", "a", "b", "y", "y", "y", "y"),
     [{"zone1": 3, "zone2": 4}, {"node-a": 2, "node-b": 1, "node-y": 4}], [3, 1]),
    ("different label selectors",
     pod("p", labels=("foo", "bar"), constraints=(spread(1, "zone", HARD, FOO), spread(1, "node", HARD, BAR))),
     [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-y", "zone2")], foo_pods("a"),
     [{"zone1": 1, "zone2": 0}, {"node-a": 0, "node-b": 0, "node-y": 0}], [0, 0]),
    ("(ours) nodes not matching the node affinity are left out (nodeAffinityPolicy Honor)",
     pod("p", labels=("foo",), constraints=(spread(1, "zone", HARD, FOO),), nodeSelector={"foo": ""}),
     [zn("node-a", "zone1", foo=""), zn("node-b", "zone1"), zn("node-x", "zone2", foo=""), zn("node-y", "zone2")],
     foo_pods("a", "b", "x", "y", "y"), [{"zone1": 1, "zone2": 1}], [1]),
    ("(ours) nodeAffinityPolicy Ignore counts every node",
     pod("p", labels=("foo",), constraints=(spread(1, "zone", HARD, FOO, nodeAffinityPolicy="Ignore"),),
         nodeSelector={"foo": ""}),
     [zn("node-a", "zone1", foo=""), zn("node-b", "zone1"), zn("node-x", "zone2", foo=""), zn("node-y", "zone2")],
     foo_pods("a", "b", "x", "y", "y"), [{"zone1": 2, "zone2": 3}], [2]),
    ("(ours) nodeTaintsPolicy Honor leaves out nodes with untolerated taints",
     pod("p", labels=("foo",), constraints=(spread(1, "zone", HARD, FOO, nodeTaintsPolicy="Honor"),)),
     [zn("node-a", "zone1"), node("node-b", taints=[{"key": "k", "effect": "NoSchedule"}], zone="zone1", node="node-b"),
      zn("node-x", "zone2"), zn("node-y", "zone2")],
     foo_pods("a", "b", "x", "y", "y"), [{"zone1": 1, "zone2": 3}], [1]),
]


def run_pre_filter(incoming: dict[str, Any], nodes: list[dict[str, Any]], pods: list[dict[str, Any]],
                   args: dict[str, Any] | None = None, **kwargs: Any
                   ) -> tuple[pts.PodTopologySpread, framework.CycleState, framework.Snapshot, framework.Status | None]:
    plugin = pts.PodTopologySpread(LIST_ARGS if args is None else args, **kwargs)
    snap = snapshot(nodes, pods)
    state = framework.CycleState()
    st = plugin.pre_filter(state, framework.PodInfo(incoming), snap)
    return plugin, state, snap, st


@pytest.mark.parametrize(("incoming", "nodes", "pods", "counts", "minimum"), [c[1:] for c in PRE_FILTER],
                         ids=[c[0] for c in PRE_FILTER])
def test_pre_filter_state(incoming: dict[str, Any], nodes: list[dict[str, Any]], pods: list[dict[str, Any]],
                          counts: list[dict[str, int]], minimum: list[int]) -> None:
    _plugin, state, _snap, st = run_pre_filter(incoming, nodes, pods)
    assert st is None
    s = state["PreFilterPodTopologySpread"]
    assert s.counts == counts
    assert s.min_match == minimum


def test_pre_filter_skips_without_hard_constraints() -> None:
    *_, st = run_pre_filter(pod("p", labels=("foo",), constraints=(spread(1, "zone", SOFT, FOO),)), FOUR, [])
    assert st is framework.SKIPPED
    *_, st = run_pre_filter(pod("p", labels=("foo",)), FOUR, [], args={})  # system defaults: all soft
    assert st is framework.SKIPPED


# ------------------------------------------------------------------ TestSingleConstraint / TestMultipleConstraints

FILTER: list[tuple[str, dict[str, Any], list[dict[str, Any]], list[dict[str, Any]], dict[str, str]]] = [
    ("no existing pods", pod("p", labels=("foo",), constraints=(spread(1, "zone", HARD, FOO),)), FOUR, [],
     {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK}),
    ("no existing pods, the pod does not match itself",
     pod("p", labels=("foo",), constraints=(spread(1, "zone", HARD, BAR),)), FOUR, [],
     {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK}),
    ("pods of other namespaces do not count", pod("p", labels=("foo",), constraints=(spread(1, "zone", HARD, FOO),)),
     FOUR, [*foo_pods("a", ns="ns1"), *foo_pods("a", ns="ns2"), *foo_pods("x", "y")],
     {"node-a": OK, "node-b": OK, "node-x": NO, "node-y": NO}),
    ("existing pods do not match a null selector", pod("p", labels=("foo",), constraints=(spread(1, "zone", HARD, None),)),
     FOUR, foo_pods("x", "y"), {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK}),
    ("pods spread 3/3 across zones: all nodes fit", pod("p", labels=("foo",), constraints=(spread(1, "zone", HARD, FOO),)),
     FOUR, foo_pods("a", "a", "b", "y", "y", "y"), {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK}),
    ("spread 1/2 as node-b lacks the zone label",
     pod("p", labels=("foo",), constraints=(spread(1, "zone", HARD, FOO),)),
     [zn("node-a", "zone1"), node("node-b", zon="zone1", node="node-b"), zn("node-x", "zone2"), zn("node-y", "zone2")],
     foo_pods("a", "b", "x", "y"), {"node-a": OK, "node-b": UNRES, "node-x": NO, "node-y": NO}),
    ("no node has the rack label", pod("p", labels=("foo",), constraints=(spread(1, "rack", HARD, FOO),)),
     [zn("node-a", "zone1"), zn("node-x", "zone2")], [], {"node-a": UNRES, "node-x": UNRES}),
    ("pods spread 2/1/0/3 across nodes: only node-x fits",
     pod("p", labels=("foo",), constraints=(spread(1, "node", HARD, FOO),)), FOUR, foo_pods("a", "a", "b", "y", "y", "y"),
     {"node-a": NO, "node-b": NO, "node-x": OK, "node-y": NO}),
    ("pods spread 2/1/0/3 across nodes, maxSkew 2: node-b and node-x fit",
     pod("p", labels=("foo",), constraints=(spread(2, "node", HARD, FOO),)), FOUR, foo_pods("a", "a", "b", "y", "y", "y"),
     {"node-a": NO, "node-b": OK, "node-x": OK, "node-y": NO}),
    ("pods spread 2/1/0/3 across nodes, the pod does not match itself",
     pod("p", labels=("bar",), constraints=(spread(1, "node", HARD, FOO),)), FOUR, foo_pods("a", "a", "b", "y", "y", "y"),
     {"node-a": NO, "node-b": OK, "node-x": OK, "node-y": NO}),
    # -- cases of ours (minDomains, several constraints), expectations worked out from the rules above
    ("minDomains above the domains: the global minimum is 0",
     pod("p", labels=("foo",), constraints=(spread(1, "zone", HARD, FOO, minDomains=3),)), FOUR,
     foo_pods("a", "a", "y", "y"), {"node-a": NO, "node-b": NO, "node-x": NO, "node-y": NO}),
    ("minDomains met: the global minimum counts",
     pod("p", labels=("foo",), constraints=(spread(1, "zone", HARD, FOO, minDomains=2),)), FOUR,
     foo_pods("a", "a", "y", "y"), {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK}),
    ("two constraints: zone and node",
     pod("p", labels=("foo",), constraints=(spread(1, "zone", HARD, FOO), spread(1, "node", HARD, FOO))),
     FOUR, foo_pods("a", "b", "x", "y", "y"), {"node-a": OK, "node-b": OK, "node-x": NO, "node-y": NO}),
    ("two constraints: 3/3 zones, only the emptiest node fits",
     pod("p", labels=("foo",), constraints=(spread(1, "zone", HARD, FOO), spread(1, "node", HARD, FOO))),
     FOUR, foo_pods("a", "b", "y", "y", "y", "a"), {"node-a": NO, "node-b": NO, "node-x": OK, "node-y": NO}),
    ("two constraints with different selectors",
     pod("p", labels=("foo", "bar"), constraints=(spread(1, "zone", HARD, FOO), spread(1, "node", HARD, BAR))),
     FOUR, foo_pods("a", "y"), {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK}),
]


@pytest.mark.parametrize(("incoming", "nodes", "pods", "want"), [c[1:] for c in FILTER], ids=[c[0] for c in FILTER])
def test_filter(incoming: dict[str, Any], nodes: list[dict[str, Any]], pods: list[dict[str, Any]],
                want: dict[str, str]) -> None:
    plugin, state, snap, st = run_pre_filter(incoming, nodes, pods)
    assert st is None
    info = framework.PodInfo(incoming)
    got = {}
    for n in snap.nodes:
        s = plugin.filter(state, info, n)
        got[n.name] = OK if s is None else s.code
        if s is not None:
            assert s.message() == (pts.ERR_REASON_NODE_LABEL_NOT_MATCH if s.code == UNRES
                                   else pts.ERR_REASON_CONSTRAINTS_NOT_MATCH)
    assert got == want


def test_add_and_remove_pod() -> None:
    """TestPreFilterStateAddPod / RemovePod: counts and the global minimum follow the pods."""
    incoming = pod("p", labels=("foo",), constraints=(spread(1, "zone", HARD, FOO),))
    plugin, state, snap, _ = run_pre_filter(incoming, FOUR, foo_pods("a", "x"))
    info = framework.PodInfo(incoming)
    before = state.clone()
    added = framework.PodInfo(pod("new", node="node-b", labels=("foo",)))
    plugin.add_pod(state, info, added, snap.by_name["node-b"])
    s = state["PreFilterPodTopologySpread"]
    assert (s.counts, s.min_match) == ([{"zone1": 2, "zone2": 1}], [1])
    other_ns = framework.PodInfo(pod("other", node="node-b", labels=("foo",), ns="ns1"))
    plugin.add_pod(state, info, other_ns, snap.by_name["node-b"])
    assert s.counts == [{"zone1": 2, "zone2": 1}]
    plugin.remove_pod(state, info, framework.PodInfo(foo_pods("x")[0]), snap.by_name["node-x"])
    assert (s.counts, s.min_match) == ([{"zone1": 2, "zone2": 0}], [0])
    assert before["PreFilterPodTopologySpread"].counts == [{"zone1": 1, "zone2": 1}]


def test_terminating_pods_do_not_count() -> None:
    gone = foo_pods("y")[0]
    gone["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    _p, state, _s, _ = run_pre_filter(pod("p", labels=("foo",), constraints=(spread(1, "zone", HARD, FOO),)),
                                      FOUR, [*foo_pods("a"), gone])
    assert state["PreFilterPodTopologySpread"].counts == [{"zone1": 1, "zone2": 0}]


def test_match_label_keys_narrow_the_selector() -> None:
    incoming = pod("p", labels={"foo": "", "rev": "2"},
                   constraints=(spread(1, "node", HARD, FOO, matchLabelKeys=["rev"]),))
    old = [pod(f"old{i}", node="node-a", labels={"foo": "", "rev": "1"}) for i in range(3)]
    _p, state, _s, _ = run_pre_filter(incoming, FOUR, old)
    assert state["PreFilterPodTopologySpread"].counts == [{"node-a": 0, "node-b": 0, "node-x": 0, "node-y": 0}]


# ------------------------------------------------------------------ TestPodTopologySpreadScore

HOST = "kubernetes.io/hostname"


def hn(name: str, **more: str) -> dict[str, Any]:
    return node(name, **{HOST: name}, **more)


def spread_on(**counts: int) -> list[dict[str, Any]]:
    """foo pods: node letter -> how many."""
    return [pod(f"p-{w}{i}", node=f"node-{w}", labels=("foo",)) for w, n in counts.items() for i in range(n)]


def run_score(incoming: dict[str, Any], pods: list[dict[str, Any]], nodes: list[dict[str, Any]],
              failed: list[dict[str, Any]] | None = None, args: dict[str, Any] | None = None,
              services: list[dict[str, Any]] | None = None) -> str | list[int]:
    def selector(p: framework.PodInfo) -> Any:
        return pts.default_selector(p.pod, services=services or [], lookup=lambda _k, _ns, _n: None)

    plugin = pts.PodTopologySpread(LIST_ARGS if args is None else args, default_selector=selector)
    snap = snapshot([*nodes, *(failed or [])], pods)
    state = framework.CycleState()
    state[framework.SNAPSHOT_KEY] = snap
    info = framework.PodInfo(incoming)
    candidates = [snap.by_name[n["metadata"]["name"]] for n in nodes]
    st = plugin.pre_score(state, info, candidates)
    if st is not None:
        assert st.code == framework.SKIP
        return "skip"
    scores = [plugin.score(state, info, n) for n in candidates]
    plugin.normalize(state, info, scores)
    return scores


ON_HOST = pod("p", labels=("foo",), constraints=(spread(1, HOST, SOFT, FOO),))
ABCD = [hn("node-a"), hn("node-b"), hn("node-c"), hn("node-d")]

SCORE: list[tuple[str, dict[str, Any], list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]], list[int]]] = [
    ("one constraint on node, no existing pods", ON_HOST, [], [hn("node-a"), hn("node-b")], [], [100, 100]),
    ("one constraint on node, one candidate", ON_HOST, spread_on(a=2, b=1), [hn("node-a")], [hn("node-b")], [100]),
    ("one constraint on node, as many matching pods everywhere", ON_HOST, spread_on(a=1, b=1),
     [hn("node-a"), hn("node-b")], [], [100, 100]),
    ("one constraint on node, 2/1/0/3", ON_HOST, spread_on(a=2, b=1, d=3), ABCD, [], [20, 60, 100, 0]),
    ("one constraint on node, a null selector",
     pod("p", labels=("foo",), constraints=(spread(1, HOST, SOFT, None),)), spread_on(a=2, b=1, d=3), ABCD, [],
     [100, 100, 100, 100]),
    ("one constraint on node, 2/1/0/3, maxSkew 2",
     pod("p", labels=("foo",), constraints=(spread(2, HOST, SOFT, FOO),)), spread_on(a=2, b=1, d=3), ABCD, [],
     [33, 66, 100, 16]),
    ("one constraint on node, 4/3/2/1, maxSkew 3",
     pod("p", labels=("foo",), constraints=(spread(3, HOST, SOFT, FOO),)), spread_on(a=4, b=3, c=2, d=1), ABCD, [],
     [44, 66, 77, 100]),
    ("one constraint on node, 3 of 4 nodes candidates (4/2/1/~3~)", ON_HOST, spread_on(a=4, b=2, x=1, y=3),
     [hn("node-a"), hn("node-b"), hn("node-x")], [hn("node-y")], [33, 83, 100]),
]


@pytest.mark.parametrize(("incoming", "pods", "nodes", "failed", "want"), [c[1:] for c in SCORE],
                         ids=[c[0] for c in SCORE])
def test_score(incoming: dict[str, Any], pods: list[dict[str, Any]], nodes: list[dict[str, Any]],
               failed: list[dict[str, Any]], want: list[int]) -> None:
    assert run_score(incoming, pods, nodes, failed) == want


def test_system_default_spreading_with_a_service() -> None:
    """System defaulting, nodes without a zone, pods selected by a Service: as one hostname constraint
    with maxSkew 3."""
    service = {"metadata": {"namespace": ""}, "spec": {"selector": {"foo": ""}}}
    got = run_score(pod("p", labels=("foo",)), spread_on(a=4, b=3, c=2, d=1), ABCD, args={}, services=[service])
    assert got == [44, 66, 77, 100]


def test_system_default_spreading_skips_pods_nothing_selects() -> None:
    assert run_score(pod("p", labels=("foo",)), spread_on(a=4), ABCD, args={}) == "skip"


# ------------------------------------------------------------------ helper.DefaultSelector

def _owned(kind: str, api_version: str) -> dict[str, Any]:
    p = pod("p", labels={"app": "web", "tier": "fe"}, ns="ns")
    p["metadata"]["ownerReferences"] = [{"apiVersion": api_version, "kind": kind, "name": "owner", "controller": True}]
    return p


DEFAULT_SELECTOR: list[tuple[str, dict[str, Any], list[dict[str, Any]], dict[str, Any] | None, str]] = [
    ("nothing selects the pod", pod("p", labels={"app": "web"}, ns="ns"), [], None, ""),
    ("a service selects it", pod("p", labels={"app": "web"}, ns="ns"),
     [{"metadata": {"namespace": "ns"}, "spec": {"selector": {"app": "web"}}},
      {"metadata": {"namespace": "other"}, "spec": {"selector": {"app": "web", "x": "y"}}},
      {"metadata": {"namespace": "ns"}, "spec": {}}], None, "app=web"),
    ("a ReplicaSet owns it", _owned("ReplicaSet", "apps/v1"), [],
     {"spec": {"selector": {"matchLabels": {"tier": "fe"}}}}, "tier=fe"),
    ("a StatefulSet owns it", _owned("StatefulSet", "apps/v1"), [],
     {"spec": {"selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]}}},
     "app in (web)"),
    ("a ReplicationController owns it", _owned("ReplicationController", "v1"),
     [{"metadata": {"namespace": "ns"}, "spec": {"selector": {"app": "web"}}}], {"spec": {"selector": {"tier": "fe"}}},
     "app=web,tier=fe"),
    ("another kind of owner does not count", _owned("Job", "batch/v1"), [], {"spec": {"selector": {"tier": "fe"}}}, ""),
]


@pytest.mark.parametrize(("p", "services", "owner", "want"), [c[1:] for c in DEFAULT_SELECTOR],
                         ids=[c[0] for c in DEFAULT_SELECTOR])
def test_default_selector(p: dict[str, Any], services: list[dict[str, Any]], owner: dict[str, Any] | None,
                          want: str) -> None:
    assert str(pts.default_selector(p, services=services, lookup=lambda _k, _ns, _n: owner)) == want


def test_args_are_validated() -> None:
    with pytest.raises(pts.ArgsError, match=r"when \.defaultConstraints are not empty"):
        pts.PodTopologySpread({"defaultingType": "System", "defaultConstraints": [spread(1, "zone", SOFT, None)]})
    with pytest.raises(pts.ArgsError, match="must not define a selector"):
        pts.PodTopologySpread({"defaultingType": "List", "defaultConstraints": [spread(1, "zone", SOFT, FOO)]})
