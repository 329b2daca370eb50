"""NodeUnschedulable (pure): a node with `spec.unschedulable` only takes pods tolerating the
`node.kubernetes.io/unschedulable:NoSchedule` taint — "node(s) were unschedulable", unresolvable.
The fused `plugins.PodInfo.filter` runs the same check for the default profile."""

from __future__ import annotations

from typing import ClassVar

from cp.scheduling import framework, plugins, profiles

__all__ = ["NodeUnschedulable"]

_TAINT = {"key": plugins.UNSCHEDULABLE_TAINT, "effect": "NoSchedule"}


class NodeUnschedulable(framework.Plugin):
    name: ClassVar[str] = "NodeUnschedulable"
    points: ClassVar[frozenset[str]] = frozenset({"Filter"})
    events: ClassVar[tuple[str, ...]] = ("Node/Add", "Node/UpdateNodeTaint", "UnscheduledPod/UpdatePodToleration")

    def filter(self, state: framework.CycleState, pod: framework.PodInfo,
               node: framework.NodeState) -> framework.Status | None:
        if not node.info.unschedulable:
            return None
        tolerations = (pod.pod.get("spec") or {}).get("tolerations") or ()
        if any(plugins.tolerates(t, _TAINT) for t in tolerations):
            return None
        return framework.Status(plugins.UNRESOLVABLE, [plugins.ERR_REASON_UNSCHEDULABLE])


profiles.PLUGINS[NodeUnschedulable.name] = lambda _args: NodeUnschedulable()
