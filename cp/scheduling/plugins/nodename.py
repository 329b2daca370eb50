"""NodeName (pure): a pod naming a node (`spec.nodeName`) fits only there — "node(s) didn't match the
requested node name", unresolvable. The fused `plugins.PodInfo.filter` runs the same check for the
default profile."""

from __future__ import annotations

from typing import ClassVar

from cp.scheduling import framework, plugins, profiles

__all__ = ["NodeName"]


class NodeName(framework.Plugin):
    name: ClassVar[str] = "NodeName"
    points: ClassVar[frozenset[str]] = frozenset({"Filter"})
    events: ClassVar[tuple[str, ...]] = ("Node/Add",)

    def filter(self, state: framework.CycleState, pod: framework.PodInfo,
               node: framework.NodeState) -> framework.Status | None:
        wanted = (pod.pod.get("spec") or {}).get("nodeName") or ""
        if wanted and wanted != node.name:
            return framework.Status(plugins.UNRESOLVABLE, [plugins.ERR_REASON_NODE_NAME])
        return None


profiles.PLUGINS[NodeName.name] = lambda _args: NodeName()
