"""Builders for the plugin tests, after upstream's `st.MakeNode()` / `st.MakePod()`: nodes whose
capacity is also their allocatable, pods with one container per `req(...)`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cp.scheduling import framework


def make_node(name: str, capacity: Mapping[str, str] | None = None, *, labels: Mapping[str, str] | None = None,
              taints: Sequence[Mapping[str, Any]] = (), unschedulable: bool = False,
              images: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    alloc = dict(capacity or {})
    alloc.setdefault("pods", "110")  # upstream's MakeNode().Capacity() keeps the pods count it had
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = [dict(t) for t in taints]
    if unschedulable:
        spec["unschedulable"] = True
    status: dict[str, Any] = {"capacity": alloc, "allocatable": alloc}
    if images:
        status["images"] = [dict(i) for i in images]
    return {"metadata": {"name": name, "labels": dict(labels or {})}, "spec": spec, "status": status}


def make_pod(*reqs: Mapping[str, str], name: str = "p", node: str = "", uid: str = "",
             containers: int = 0, **spec: Any) -> dict[str, Any]:
    """One container per `reqs` entry (its requests), plus `containers` containers without any."""
    cs: list[dict[str, Any]] = [{"name": f"c{i}", "image": "pause", "resources": {"requests": dict(r)}}
                                for i, r in enumerate(reqs)]
    cs += [{"name": f"e{i}", "image": "pause"} for i in range(containers)]
    body: dict[str, Any] = {"containers": cs, **spec}
    if node:
        body["nodeName"] = node
    return {"metadata": {"name": name, "namespace": "default", "uid": uid or f"uid-{name}-{id(body)}"},
            "spec": body}


def states(nodes: Sequence[Mapping[str, Any]], pods: Sequence[Mapping[str, Any]] = ()) -> list[framework.NodeState]:
    """NodeStates with the existing pods (by `spec.nodeName`) on them."""
    out = []
    for n in nodes:
        name = n["metadata"]["name"]
        out.append(framework.NodeState.of(n, [p for p in pods if p["spec"].get("nodeName") == name]))
    return out


def run_scores(plugin: framework.Plugin, pod: Mapping[str, Any], nodes: Sequence[framework.NodeState]
               ) -> list[int] | None:
    """PreScore, Score on every node and NormalizeScore, as the framework runs one plugin;
    None when PreScore skips it."""
    state = framework.CycleState()
    state[framework.SNAPSHOT_KEY] = framework.Snapshot(nodes)
    info = framework.PodInfo(pod)
    if "PreScore" in plugin.points:
        st = plugin.pre_score(state, info, nodes)
        if st is not None and st.code == framework.SKIP:
            return None
    scores = [plugin.score(state, info, n) for n in nodes]
    if "NormalizeScore" in plugin.points:
        plugin.normalize(state, info, scores)
    return scores


def run_filter(plugin: framework.Plugin, pod: Mapping[str, Any], node: framework.NodeState,
               snapshot: framework.Snapshot | None = None) -> framework.Status | None:
    """PreFilter then Filter on one node; a PreFilter rejection is returned as is, a skip passes."""
    state = framework.CycleState()
    info = framework.PodInfo(pod)
    if "PreFilter" in plugin.points:
        st = plugin.pre_filter(state, info, snapshot or framework.Snapshot([node]))
        if st is not None:
            return None if st.code == framework.SKIP else st
    return plugin.filter(state, info, node)
