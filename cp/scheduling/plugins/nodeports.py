"""NodePorts (pure): the pod's host ports (containers and sidecars, `hostPort` > 0) must be free on
the node — "node(s) didn't have free ports for the requested pod ports". A port conflicts with the
same protocol and port on the same host IP, and `0.0.0.0` (or an empty hostIP) conflicts with every
IP. PreFilter skips the Filter for a pod without host ports."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

from cp.scheduling import framework, plugins, profiles

__all__ = ["ERR_REASON", "NodePorts", "host_ports", "ports_conflict"]

ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
ANY_IP = "0.0.0.0"

Port = tuple[str, str, int]  # (host IP, protocol, port)


def host_ports(pod: Mapping[str, Any]) -> list[Port]:
    """`GetHostPorts`: the host ports of the sidecars (restartable init containers) and containers."""
    spec = pod.get("spec") or {}
    out: list[Port] = []
    for group in ("initContainers", "containers"):
        for c in spec.get(group) or ():
            if group == "initContainers" and c.get("restartPolicy") != "Always":
                continue
            for p in c.get("ports") or ():
                hp = int(p.get("hostPort") or 0)
                if hp > 0:
                    out.append((str(p.get("hostIP") or ANY_IP), str(p.get("protocol") or "TCP"), hp))
    return out


def ports_conflict(want: Iterable[Port], used: Mapping[Port, int]) -> bool:
    """`HostPortInfo.CheckConflict` for each wanted port."""
    if not used:
        return False
    for ip, proto, port in want:
        if ip == ANY_IP:
            if any(p == port and pr == proto for (_i, pr, p) in used):
                return True
        elif (ANY_IP, proto, port) in used or (ip, proto, port) in used:
            return True
    return False


class NodePorts(framework.Plugin):
    name: ClassVar[str] = "NodePorts"
    points: ClassVar[frozenset[str]] = frozenset({"PreFilter", "Filter"})
    events: ClassVar[tuple[str, ...]] = ("AssignedPod/Delete", "Node/Add")

    def pre_filter(self, state: framework.CycleState, pod: framework.PodInfo,
                   snapshot: framework.Snapshot) -> framework.Status | None:
        ports = host_ports(pod.pod)
        if not ports:
            return framework.SKIPPED
        state[self.name] = ports
        return None

    def filter(self, state: framework.CycleState, pod: framework.PodInfo,
               node: framework.NodeState) -> framework.Status | None:
        want: Sequence[Port] | None = state.get(self.name)
        if want is None:
            want = host_ports(pod.pod)
        if ports_conflict(want, node.usage.ports):
            return framework.Status(plugins.UNSCHEDULABLE, [ERR_REASON])
        return None


profiles.PLUGINS[NodePorts.name] = lambda _args: NodePorts()
