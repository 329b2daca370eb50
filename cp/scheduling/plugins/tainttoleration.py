"""TaintToleration (pure).

- Filter: every `NoSchedule` / `NoExecute` taint of the node must be tolerated — "node(s) had
  untolerated taint(s)", unresolvable;
- Score: the number of `PreferNoSchedule` taints not tolerated by the pod's tolerations with an
  empty or `PreferNoSchedule` effect; NormalizeScore reverses it (fewest such taints: 100).

The fused `plugins.PodInfo.filter` runs the same Filter for the default profile."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from cp.scheduling import framework, plugins, profiles

__all__ = ["TaintToleration"]


def _tolerations(pod: framework.PodInfo) -> list[Mapping[str, Any]]:
    return list((pod.pod.get("spec") or {}).get("tolerations") or ())


class TaintToleration(framework.Plugin):
    name: ClassVar[str] = "TaintToleration"
    points: ClassVar[frozenset[str]] = frozenset({"Filter", "PreScore", "Score", "NormalizeScore"})
    events: ClassVar[tuple[str, ...]] = ("Node/Add", "Node/UpdateNodeTaint", "UnscheduledPod/UpdatePodToleration")

    def filter(self, state: framework.CycleState, pod: framework.PodInfo,
               node: framework.NodeState) -> framework.Status | None:
        hard = node.info.hard_taints
        if not hard:
            return None
        tols = _tolerations(pod)
        for taint in hard:
            if not any(plugins.tolerates(t, taint) for t in tols):
                return framework.Status(plugins.UNRESOLVABLE, [plugins.ERR_REASON_TAINT])
        return None

    def pre_score(self, state: framework.CycleState, pod: framework.PodInfo,
                  nodes: Sequence[framework.NodeState]) -> framework.Status | None:
        state["PreScore" + self.name] = [t for t in _tolerations(pod)
                                         if (t.get("effect") or "") in ("", "PreferNoSchedule")]
        return None

    def score(self, state: framework.CycleState, pod: framework.PodInfo, node: framework.NodeState) -> int:
        soft = node.info.soft_taints
        if not soft:
            return 0
        tols = state.get("PreScore" + self.name)
        if tols is None:
            tols = [t for t in _tolerations(pod) if (t.get("effect") or "") in ("", "PreferNoSchedule")]
        return sum(1 for taint in soft if not any(plugins.tolerates(t, taint) for t in tols))

    def score_nodes(self, state: framework.CycleState, pod: framework.PodInfo,
                    nodes: Sequence[framework.NodeState]) -> list[int]:
        snapshot: framework.Snapshot | None = state.get(framework.SNAPSHOT_KEY)
        if (snapshot is not None and snapshot.soft_tainted == 0) or not any(n.info.soft_taints for n in nodes):
            return [0] * len(nodes)  # (the node cache counts the nodes with PreferNoSchedule taints)
        return [self.score(state, pod, n) for n in nodes]

    def normalize(self, state: framework.CycleState, pod: framework.PodInfo, scores: list[int]) -> None:
        framework.default_normalize(scores, reverse=True)


profiles.PLUGINS[TaintToleration.name] = lambda _args: TaintToleration()
