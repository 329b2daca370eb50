"""VolumeRestrictions (pure): volumes a pod cannot share.

- PreFilter (skipped unless the pod has a claim or an in-tree disk volume): a claim that does not
  exist rejects the pod — `persistentvolumeclaim "x" not found`, unresolvable; a claim with the
  `ReadWriteOncePod` access mode already used by a scheduled pod makes every node fail — "node has
  pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode";
- Filter: GCE PD / AWS EBS / iSCSI / RBD disks already used on the node conflict — "node(s) had no
  available disk" (read-only GCE PD, iSCSI and RBD disks may be shared).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from cp.scheduling import framework, plugins, profiles
from cp.scheduling.plugins.volumebinding import VolumeLookup

__all__ = ["ERR_REASON_DISK_CONFLICT", "ERR_REASON_RWOP_CONFLICT", "VolumeRestrictions"]

ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
ERR_REASON_RWOP_CONFLICT = "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"

_DISKS = ("gcePersistentDisk", "awsElasticBlockStore", "iscsi", "rbd")


def _volumes(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [v for v in ((pod.get("spec") or {}).get("volumes") or ()) if isinstance(v, Mapping)]


def _conflict(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """`isVolumeConflict` for one volume of the pod against one of a pod on the node."""
    if a.get("gcePersistentDisk") and b.get("gcePersistentDisk"):
        x, y = a["gcePersistentDisk"], b["gcePersistentDisk"]
        return bool(x.get("pdName") == y.get("pdName") and not (x.get("readOnly") and y.get("readOnly")))
    if a.get("awsElasticBlockStore") and b.get("awsElasticBlockStore"):
        return bool(a["awsElasticBlockStore"].get("volumeID") == b["awsElasticBlockStore"].get("volumeID"))
    if a.get("iscsi") and b.get("iscsi"):
        x, y = a["iscsi"], b["iscsi"]
        return bool(x.get("iqn") == y.get("iqn") and not (x.get("readOnly") and y.get("readOnly")))
    if a.get("rbd") and b.get("rbd"):
        x, y = a["rbd"], b["rbd"]
        shared = set(x.get("monitors") or ()) & set(y.get("monitors") or ())
        return bool(shared and (x.get("pool") or "rbd") == (y.get("pool") or "rbd")
                    and x.get("image") == y.get("image") and not (x.get("readOnly") and y.get("readOnly")))
    return False


class _State:
    __slots__ = ("conflicts", "disks", "rwop")

    def __init__(self, disks: list[Mapping[str, Any]], rwop: set[str], conflicts: int) -> None:
        self.disks = disks
        self.rwop = rwop  # "ns/name" of the pod's ReadWriteOncePod claims
        self.conflicts = conflicts  # how many of them scheduled pods use

    def clone(self) -> _State:
        return _State(self.disks, self.rwop, self.conflicts)


class VolumeRestrictions(framework.Plugin):
    name: ClassVar[str] = "VolumeRestrictions"
    points: ClassVar[frozenset[str]] = frozenset({"PreFilter", "Filter"})
    events: ClassVar[tuple[str, ...]] = ("AssignedPod/Delete", "Node/Add", "PersistentVolumeClaim/Add")

    def pre_filter(self, state: framework.CycleState, pod: framework.PodInfo,
                   snapshot: framework.Snapshot) -> framework.Status | None:
        volumes = _volumes(pod.pod)
        disks = [v for v in volumes if any(v.get(k) for k in _DISKS)]
        claim_names = [str(v["persistentVolumeClaim"].get("claimName") or "") for v in volumes
                       if v.get("persistentVolumeClaim")]
        if not disks and not claim_names:
            return framework.SKIPPED
        lookup: VolumeLookup | None = getattr(snapshot, "volumes", None)
        rwop: set[str] = set()
        if lookup is not None:
            for name in claim_names:
                claim = lookup.claim(pod.namespace, name)
                if claim is None:
                    return framework.Status(plugins.UNRESOLVABLE, [f'persistentvolumeclaim "{name}" not found'])
                if "ReadWriteOncePod" in ((claim.get("spec") or {}).get("accessModes") or ()):
                    rwop.add(f"{pod.namespace}/{name}")
        conflicts = 0
        if rwop:
            used: set[str] = set()
            for node in snapshot.nodes:
                for other in node.pods:
                    used.update(f"{other.namespace}/{c}" for c in other.pvcs)
            conflicts = len(rwop & used)
        state[self.name] = _State(disks, rwop, conflicts)
        return None

    def add_pod(self, state: framework.CycleState, pod: framework.PodInfo, other: framework.PodInfo,
                node: framework.NodeState) -> None:
        s: _State | None = state.get(self.name)
        if s is not None and s.rwop:
            s.conflicts += len(s.rwop & {f"{other.namespace}/{c}" for c in other.pvcs})

    def remove_pod(self, state: framework.CycleState, pod: framework.PodInfo, other: framework.PodInfo,
                   node: framework.NodeState) -> None:
        s: _State | None = state.get(self.name)
        if s is not None and s.rwop:
            s.conflicts -= len(s.rwop & {f"{other.namespace}/{c}" for c in other.pvcs})

    def filter(self, state: framework.CycleState, pod: framework.PodInfo,
               node: framework.NodeState) -> framework.Status | None:
        s: _State | None = state.get(self.name)
        if s is None:
            return None
        if s.disks:
            for other in node.pods:
                for theirs in _volumes(other.pod):
                    if any(_conflict(mine, theirs) for mine in s.disks):
                        return framework.Status(plugins.UNSCHEDULABLE, [ERR_REASON_DISK_CONFLICT])
        if s.conflicts > 0:
            return framework.Status(plugins.UNSCHEDULABLE, [ERR_REASON_RWOP_CONFLICT])
        return None


profiles.PLUGINS[VolumeRestrictions.name] = lambda _args: VolumeRestrictions()
