"""ResourceClaims shared by a PodGroup (KEP-5729; gate DRAWorkloadResourceClaims, beta and off by
default in 1.37): the helpers of k8s.io/dynamic-resource-allocation `resourceclaim` that the scheduler,
the ResourceClaim controller and the kubelet use for them.

- A pod's `spec.resourceClaims[]` entry belongs to its PodGroup when the PodGroup's
  `spec.resourceClaims[]` has an entry equal in every field (name, resourceClaimName,
  resourceClaimTemplateName) — `group_claim_of`.
- Such a claim is reserved for the PodGroup, `{apiGroup: scheduling.k8s.io, resource: podgroups, name,
  uid}`, instead of the pod (`consumer_ref`, upstream `BindTo`), and a pod counts as a consumer of a claim
  reserved for its PodGroup (`is_reserved_for_pod`, `IsReservedForPod`).
- A claim generated from a template for a PodGroup is controlled by the PodGroup; a pod of the group
  may use it (`is_for_pod`, `IsForPod` with PodGroup owners accepted); its name is recorded in the
  PodGroup's `status.resourceClaimStatuses` (`name_from_pod_group`, `NameFromPodGroup`).

Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cp.objects import meta_of, spec_of

GROUP = "scheduling.k8s.io"
RESOURCE = "podgroups"


def pod_group_name(pod: Mapping[str, Any]) -> str | None:
    group = spec_of(pod).get("schedulingGroup")
    name = group.get("podGroupName") if isinstance(group, Mapping) else None
    return str(name) if name else None


def _same_source(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return (a.get("name") == b.get("name") and a.get("resourceClaimName") == b.get("resourceClaimName")
            and a.get("resourceClaimTemplateName") == b.get("resourceClaimTemplateName"))


def belongs_to(pod: Mapping[str, Any], pod_group: Mapping[str, Any] | None) -> bool:
    """`podMatchesPodGroup`: the pod names this PodGroup (same namespace)."""
    return (pod_group is not None and pod_group_name(pod) == meta_of(pod_group).get("name")
            and meta_of(pod).get("namespace") == meta_of(pod_group).get("namespace"))


def group_claim_of(pod: Mapping[str, Any], pod_group: Mapping[str, Any] | None,
                   pod_claim: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The PodGroup's claim entry this pod claim matches exactly, or None (a claim of the pod's own)."""
    if pod_group is None or not belongs_to(pod, pod_group):
        return None
    for group_claim in spec_of(pod_group).get("resourceClaims") or []:
        if isinstance(group_claim, Mapping) and _same_source(group_claim, pod_claim):
            return group_claim
    return None


def consumer_ref(pod: Mapping[str, Any], pod_group: Mapping[str, Any] | None,
                 pod_claim: Mapping[str, Any]) -> dict[str, str]:
    """`BindTo`: the `reservedFor` entry the pod's use of this claim adds. Raises ValueError for a pod
    claim without a source, or a PodGroup that is not the pod's."""
    pod_key = f"{meta_of(pod).get('namespace')}/{meta_of(pod).get('name')}"
    if not pod_claim.get("resourceClaimName") and not pod_claim.get("resourceClaimTemplateName"):
        raise ValueError(f"Pod {pod_key} claim {pod_claim.get('name')}: none of the supported fields are set")
    if pod_group is not None and not belongs_to(pod, pod_group):
        group_key = f"{meta_of(pod_group).get('namespace')}/{meta_of(pod_group).get('name')}"
        if pod_group_name(pod) is None:
            raise ValueError(f"Pod {pod_key} does not belong to a PodGroup")
        raise ValueError(f"Pod {pod_key} belongs to PodGroup {meta_of(pod).get('namespace')}/{pod_group_name(pod)}, "
                         f"not PodGroup {group_key}")
    if group_claim_of(pod, pod_group, pod_claim) is not None:
        assert pod_group is not None
        return {"apiGroup": GROUP, "resource": RESOURCE, "name": str(meta_of(pod_group).get("name") or ""),
                "uid": str(meta_of(pod_group).get("uid") or "")}
    return {"resource": "pods", "name": str(meta_of(pod).get("name") or ""), "uid": str(meta_of(pod).get("uid") or "")}


def is_pod_group_entry(entry: Mapping[str, Any]) -> bool:
    return entry.get("apiGroup") == GROUP and entry.get("resource") == RESOURCE


def is_reserved_for_pod(pod: Mapping[str, Any], claim: Mapping[str, Any], *, accept_pod_group: bool) -> bool:
    """`IsReservedForPod`: by the pod's uid, or (gate on) by its PodGroup's name (pods do not know the
    PodGroup's uid)."""
    uid = meta_of(pod).get("uid")
    group = pod_group_name(pod) if accept_pod_group else None
    status = claim.get("status")
    for entry in (status.get("reservedFor") if isinstance(status, Mapping) else None) or []:
        if not isinstance(entry, Mapping):
            continue
        if entry.get("uid") == uid:
            return True
        if group is not None and is_pod_group_entry(entry) and entry.get("name") == group:
            return True
    return False


def _controller(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for ref in meta_of(obj).get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller"):
            return ref
    return None


def is_for_pod_group_by_pod(pod: Mapping[str, Any], claim: Mapping[str, Any]) -> bool:
    """The claim is controlled by the pod's PodGroup (kind, name, API group; the version is ignored)."""
    group = pod_group_name(pod)
    ref = _controller(claim)
    if meta_of(claim).get("namespace") != meta_of(pod).get("namespace"):
        return False
    return (group is not None and ref is not None and ref.get("name") == group and ref.get("kind") == "PodGroup"
            and str(ref.get("apiVersion") or "").startswith(GROUP + "/"))


def is_for_pod_group(pod_group: Mapping[str, Any], claim: Mapping[str, Any]) -> bool:
    ref = _controller(claim)
    return ref is not None and ref.get("uid") == meta_of(pod_group).get("uid") \
        and meta_of(claim).get("namespace") == meta_of(pod_group).get("namespace")


def name_from_pod_group(pod_group: Mapping[str, Any], group_claim: Mapping[str, Any]) -> str | None:
    """`NameFromPodGroup` for a template claim: the generated claim's name, None while not created."""
    status = pod_group.get("status")
    for entry in (status.get("resourceClaimStatuses") if isinstance(status, Mapping) else None) or []:
        if isinstance(entry, Mapping) and entry.get("name") == group_claim.get("name"):
            name = entry.get("resourceClaimName")
            return str(name) if name else None
    return None
