"""Fields of disabled features, dropped as upstream's registry strategies drop them
(`dropDisabledFields` of `pkg/api/pod/util.go` and the PodGroup/Workload strategies): a field whose
feature gate is off is cleared on create, and on update unless the stored object already uses it (so an
object written while the gate was on keeps working after it is turned off).

- Pods and pod templates: `spec.schedulingGroup` (GenericWorkload).
- PodGroups: `spec.resourceClaims` and `status.resourceClaimStatuses`; Workloads:
  `spec.podGroupTemplates[].resourceClaims` (DRAWorkloadResourceClaims).

Pure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cp import features as gates

Obj = dict[str, Any]


def _at(obj: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


# Where a kind keeps pod specs: the pod's own, or its template's.
_POD_SPECS: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "Pod"): ("spec",),
    ("", "PodTemplate"): ("template", "spec"),
    ("", "ReplicationController"): ("spec", "template", "spec"),
    ("apps", "Deployment"): ("spec", "template", "spec"),
    ("apps", "ReplicaSet"): ("spec", "template", "spec"),
    ("apps", "StatefulSet"): ("spec", "template", "spec"),
    ("apps", "DaemonSet"): ("spec", "template", "spec"),
    ("batch", "Job"): ("spec", "template", "spec"),
    ("batch", "CronJob"): ("spec", "jobTemplate", "spec", "template", "spec"),
}


def _drop_pod_fields(new: Obj, old: Obj | None, path: tuple[str, ...], features: gates.FeatureGates) -> None:
    spec = _at(new, *path)
    if not isinstance(spec, dict) or "schedulingGroup" not in spec:
        return
    if features.enabled(gates.GENERIC_WORKLOAD):
        return
    if old is not None and _at(old, *path, "schedulingGroup") is not None:
        return
    spec.pop("schedulingGroup", None)


def _drop_podgroup_fields(new: Obj, old: Obj | None, features: gates.FeatureGates) -> None:
    if features.enabled(gates.DRA_WORKLOAD_RESOURCE_CLAIMS):
        return
    spec, status = new.get("spec"), new.get("status")
    if isinstance(spec, dict) and spec.get("resourceClaims") and not _at(old, "spec", "resourceClaims"):
        spec.pop("resourceClaims", None)
    if isinstance(status, dict) and status.get("resourceClaimStatuses") \
            and not _at(old, "status", "resourceClaimStatuses"):
        status.pop("resourceClaimStatuses", None)


def _templates_with_claims(obj: Obj | None) -> bool:
    return any(isinstance(t, dict) and t.get("resourceClaims")
               for t in _at(obj, "spec", "podGroupTemplates") or [])


def _drop_workload_fields(new: Obj, old: Obj | None, features: gates.FeatureGates) -> None:
    if features.enabled(gates.DRA_WORKLOAD_RESOURCE_CLAIMS) or _templates_with_claims(old):
        return
    for template in _at(new, "spec", "podGroupTemplates") or []:
        if isinstance(template, dict):
            template.pop("resourceClaims", None)


_OWN: dict[tuple[str, str], Callable[[Obj, Obj | None, gates.FeatureGates], None]] = {
    ("scheduling.k8s.io", "PodGroup"): _drop_podgroup_fields,
    ("scheduling.k8s.io", "Workload"): _drop_workload_fields,
}


def drop_disabled_fields(new: Obj, old: Obj | None, *, group: str, kind: str,
                         features: gates.FeatureGates) -> None:
    """Clear in `new` (in place) the fields of `group`/`kind` whose gates are off; `old` is the stored
    object of an update (None on create)."""
    path = _POD_SPECS.get((group, kind))
    if path is not None:
        _drop_pod_fields(new, old, path, features)
        return
    own = _OWN.get((group, kind))
    if own is not None:
        own(new, old, features)
