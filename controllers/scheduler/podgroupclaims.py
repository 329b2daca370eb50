"""ResourceClaims shared by a PodGroup, in the scheduler (DRAWorkloadResourceClaims, with
GenericWorkload; off by default as in 1.37). The DynamicResources plugin, as upstream with
k8s.io/dynamic-resource-allocation `resourceclaim` (`cp.dra.podgroups`):

- a pod may use a claim generated for its PodGroup (controlled by the PodGroup, not the pod);
- a claim reserved for the pod's PodGroup counts as reserved for the pod (nothing to add in PreBind,
  and it is not "in use" by others);
- a pod claim equal to one of its PodGroup's `spec.resourceClaims` is reserved for the PodGroup —
  `{apiGroup: scheduling.k8s.io, resource: podgroups, name, uid}` — instead of the pod, so one claim
  serves any number of pods of the group.

The cycle (`SchedulingCycle.workload_claims`) consults this through three narrow calls."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controllers.runtime import informer as informers
from cp import resources as res
from cp.dra import podgroups
from cp.objects import meta_of, spec_of

PODGROUPS = res.gated_kind("scheduling.k8s.io", "podgroups")


class WorkloadClaims:
    def __init__(self, *, informer_factory: informers.InformerFactory) -> None:
        self.pod_groups = informer_factory.informer(PODGROUPS)

    def pod_group_of(self, pod: Mapping[str, Any]) -> dict[str, Any] | None:
        name = podgroups.pod_group_name(pod)
        if name is None:
            return None
        return self.pod_groups.cache.get(str(meta_of(pod).get("namespace") or ""), name)

    def owned_by_group(self, pod: Mapping[str, Any], claim: Mapping[str, Any]) -> bool:
        """`IsForPod` with PodGroup owners accepted."""
        return podgroups.is_for_pod_group_by_pod(pod, claim)

    def reserved(self, pod: Mapping[str, Any], claim: Mapping[str, Any]) -> bool:
        return podgroups.is_reserved_for_pod(pod, claim, accept_pod_group=True)

    def consumer(self, pod: Mapping[str, Any], claim: Mapping[str, Any]) -> dict[str, str] | None:
        """The PodGroup reference to reserve `claim` for, when the pod uses it through its PodGroup."""
        group = self.pod_group_of(pod)
        if group is None:
            return None
        statuses = {str(s.get("name")): s.get("resourceClaimName")
                    for s in (pod.get("status") or {}).get("resourceClaimStatuses") or [] if isinstance(s, Mapping)}
        claim_name = meta_of(claim).get("name")
        for pod_claim in spec_of(pod).get("resourceClaims") or []:
            if not isinstance(pod_claim, Mapping):
                continue
            resolved = pod_claim.get("resourceClaimName") or statuses.get(str(pod_claim.get("name")))
            if resolved == claim_name and podgroups.group_claim_of(pod, group, pod_claim) is not None:
                return podgroups.consumer_ref(pod, group, pod_claim)
        return None
