"""Cluster events and queueing hints (pure; no I/O), after kube-scheduler's `ClusterEvent`,
`EventsToRegister` and `isPodWorthRequeuing`.

An event is named `Resource/Action`: `Node/Add`, `Node/UpdateNodeLabel`, `AssignedPod/Delete`,
`UnscheduledPod/UpdatePodToleration`, `ResourceSlice/Update`. A plugin registers the events that may
make a pod it rejected schedulable (`framework.Plugin.events`; the fused core filters' lists are in
`CORE_EVENTS`); a registration matches an event when

- the resources are equal, or the registration's is `*`, or it is `Pod` and the event's is
  `AssignedPod` or `UnscheduledPod`;
- the actions are equal, or the registration's is `*`, or it is `Update` and the event's action is
  an update (`Update...`).

A pod that failed carries the set of plugins that rejected it (its "unschedulable plugins"). An event
moves it out of the unschedulable pool when a plugin of that set registered the event (`EventMap`);
a pod with an empty set (it failed for no plugin's reason) is moved by any event, as are all pods by
the wildcard events (`UNSCHEDULABLE_TIMEOUT`, `FORCE_ACTIVATE`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from cp.objects import meta_of, spec_of, status_of
from cp.scheduling import plugins

__all__ = ["ACTIONS", "CORE_EVENTS", "DRA_EVENTS", "FORCE_ACTIVATE", "HINTED", "RESOURCES", "UNSCHEDULABLE_TIMEOUT", "EventMap",
           "check", "matches", "node_update_events", "pod_update_events"]

WILDCARD = "*"
UNSCHEDULABLE_TIMEOUT = "*/UnschedulableTimeout"  # the pool's periodic flush
FORCE_ACTIVATE = "*/ForceActivate"
# an event a plugin's own queueing hint function judged helpful for the pod (GangScheduling's)
HINTED = "*/QueueHinted"
_WILDCARD_EVENTS = frozenset({UNSCHEDULABLE_TIMEOUT, FORCE_ACTIVATE, HINTED})

# upstream's EventsToRegister (queueing hints on, 1.37 defaults) of the fused core filters
CORE_EVENTS: Mapping[str, tuple[str, ...]] = {
    "NodeUnschedulable": ("Node/Add", "Node/UpdateNodeTaint", "UnscheduledPod/UpdatePodToleration"),
    "NodeName": ("Node/Add",),
    "TaintToleration": ("Node/Add", "Node/UpdateNodeTaint", "UnscheduledPod/UpdatePodToleration"),
    "NodeAffinity": ("Node/Add", "Node/UpdateNodeLabel"),
    "NodeResourcesFit": ("AssignedPod/Delete", "AssignedPod/UpdatePodScaleDown", "UnscheduledPod/UpdatePodScaleDown",
                         "Node/Add", "Node/UpdateNodeAllocatable", "DeviceClass/Add", "DeviceClass/Update"),
}

# DynamicResources: upstream's registrations plus what the scheduler moved DRA pods on before
# queueing hints (assigned pods deleted or finished, claims deleted, DeviceTaintRules, namespace
# labels for admin access, node taints).
DRA_EVENTS: tuple[str, ...] = (
    "Node/Add", "Node/UpdateNodeLabel", "Node/UpdateNodeAllocatable", "Node/UpdateNodeTaint",
    "ResourceClaim/*", "ResourceSlice/Add", "ResourceSlice/Update", "DeviceClass/Add", "DeviceClass/Update",
    "DeviceTaintRule/*", "Namespace/Update", "AssignedPod/Delete", "UnscheduledPod/UpdatePodGeneratedResourceClaim",
    "UnscheduledPod/Update",  # before hints, any update of the pod itself moved it; kept
)


RESOURCES = frozenset({
    WILDCARD, "Pod", "AssignedPod", "UnscheduledPod", "Node", "Namespace", "PersistentVolume",
    "PersistentVolumeClaim", "StorageClass", "CSINode", "CSIDriver", "CSIStorageCapacity", "VolumeAttachment",
    "ResourceClaim", "ResourceSlice", "DeviceClass", "DeviceTaintRule", "Workload", "PodGroup",
})
ACTIONS = frozenset({
    WILDCARD, "Add", "Delete", "Update", "UpdateNodeAllocatable", "UpdateNodeLabel", "UpdateNodeTaint",
    "UpdateNodeCondition", "UpdateNodeAnnotation", "UpdatePodLabel", "UpdatePodScaleDown", "UpdatePodToleration",
    "UpdatePodSchedulingGatesEliminated", "UpdatePodGeneratedResourceClaim", "UpdatePodOther",
})


def check(event: str) -> None:
    """Raise ValueError unless `event` is a `Resource/Action` name this module knows (so that a
    plugin's misspelt registration fails its tests instead of never matching)."""
    resource, sep, action = event.partition("/")
    if not sep or resource not in RESOURCES or action not in ACTIONS:
        raise ValueError(f"unknown cluster event {event!r}: want Resource/Action with Resource in "
                         f"{sorted(RESOURCES)} and Action in {sorted(ACTIONS)}")


def _split(event: str) -> tuple[str, str]:
    resource, _, action = event.partition("/")
    return resource, action


def matches(registered: str, event: str) -> bool:
    """Whether the registration `registered` covers the incoming `event` (`ClusterEvent.Match`)."""
    if event in _WILDCARD_EVENTS:
        return True
    r_res, r_act = _split(registered)
    e_res, e_act = _split(event)
    if not (r_res in (WILDCARD, e_res) or (r_res == "Pod" and e_res in ("AssignedPod", "UnscheduledPod"))):
        return False
    return r_act in (WILDCARD, e_act) or (r_act == "Update" and e_act.startswith("Update"))


class EventMap:
    """Which plugins registered which events (`queueingHintMap` without the hint functions)."""

    def __init__(self, registrations: Mapping[str, Iterable[str]]) -> None:
        self.registrations: dict[str, tuple[str, ...]] = {name: tuple(evs) for name, evs in registrations.items()}
        self._cache: dict[str, frozenset[str]] = {}

    def plugins_for(self, event: str) -> frozenset[str]:
        """The plugins that registered `event`."""
        found = self._cache.get(event)
        if found is None:
            found = frozenset(name for name, evs in self.registrations.items() if any(matches(r, event) for r in evs))
            self._cache[event] = found
        return found

    def interested(self, event: str) -> bool:
        """Whether any plugin registered `event` (wildcard events interest everybody)."""
        return event in _WILDCARD_EVENTS or bool(self.plugins_for(event))

    def worth_requeuing(self, rejectors: frozenset[str], event: str) -> bool:
        """`isPodWorthRequeuing`: may `event` help a pod that `rejectors` turned down?"""
        if not rejectors or event in _WILDCARD_EVENTS:
            return True
        return not rejectors.isdisjoint(self.plugins_for(event))


# ---------------------------------------------------------------------- what changed


def _conditions(node: Mapping[str, Any]) -> list[tuple[Any, Any]]:
    """Type and status of each condition (heartbeats and messages are not a change)."""
    return [(c.get("type"), c.get("status")) for c in status_of(node).get("conditions") or () if isinstance(c, Mapping)]


def node_update_events(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """`nodeSchedulingPropertiesChange`: the events one node update is (none: nothing the
    scheduler looks at changed)."""
    out: list[str] = []
    if bool(spec_of(old).get("unschedulable")) != bool(spec_of(new).get("unschedulable")) \
            or spec_of(old).get("taints") != spec_of(new).get("taints"):
        out.append("Node/UpdateNodeTaint")
    if status_of(old).get("allocatable") != status_of(new).get("allocatable"):
        out.append("Node/UpdateNodeAllocatable")
    if meta_of(old).get("labels") != meta_of(new).get("labels"):
        out.append("Node/UpdateNodeLabel")
    if _conditions(old) != _conditions(new):
        out.append("Node/UpdateNodeCondition")
    if meta_of(old).get("annotations") != meta_of(new).get("annotations"):
        out.append("Node/UpdateNodeAnnotation")
    return out


def _scaled_down(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Some resource the pod requests went down (in-place resize)."""
    if spec_of(old).get("containers") == spec_of(new).get("containers") and \
            spec_of(old).get("resources") == spec_of(new).get("resources"):
        return False
    a, b = plugins.pod_requests(old).requests, plugins.pod_requests(new).requests
    return (b.cpu < a.cpu or b.memory < a.memory or b.ephemeral < a.ephemeral
            or any(v < a.scalar.get(k, 0) for k, v in b.scalar.items()))


def pod_update_events(old: Mapping[str, Any], new: Mapping[str, Any], *, assigned: bool) -> list[str]:
    """`PodSchedulingPropertiesChange`: the events one pod update is, on `AssignedPod` or
    `UnscheduledPod`; `UpdatePodOther` when nothing more specific changed."""
    resource = "AssignedPod" if assigned else "UnscheduledPod"
    out: list[str] = []
    if meta_of(old).get("labels") != meta_of(new).get("labels"):
        out.append(f"{resource}/UpdatePodLabel")
    if _scaled_down(old, new):
        out.append(f"{resource}/UpdatePodScaleDown")
    if spec_of(old).get("tolerations") != spec_of(new).get("tolerations"):
        out.append(f"{resource}/UpdatePodToleration")
    if spec_of(old).get("schedulingGates") and not spec_of(new).get("schedulingGates"):
        out.append(f"{resource}/UpdatePodSchedulingGatesEliminated")
    if status_of(old).get("resourceClaimStatuses") != status_of(new).get("resourceClaimStatuses"):
        out.append(f"{resource}/UpdatePodGeneratedResourceClaim")
    return out or [f"{resource}/UpdatePodOther"]
