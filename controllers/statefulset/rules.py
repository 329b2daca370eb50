"""The pure rules of the StatefulSet controller (upstream `pkg/controller/statefulset`'s
`stateful_set_utils.go`): names and ordinals, a pod's identity and storage, its claims and their
owner references under the retention policy, revisions applied to the set, the status. No I/O.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from controllers import history
from controllers import replicaset as rsc
from controllers.runtime import cache as caches
from cp import resources as res

POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"  # apps.StatefulSetPodNameLabel
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"  # apps.PodIndexLabel (GA in 1.32)
REVISION_LABEL = history.POD_REVISION_LABEL  # apps.StatefulSetRevisionLabel

_PARENT_AND_ORDINAL = re.compile(r"^(.*)-([0-9]+)$")

STATEFULSETS = res.ResourceKind(group="apps", version="v1", kind="StatefulSet", plural="statefulsets",
                                singular="statefulset", namespaced=True)
PODS = res.ResourceKind(group="", version="v1", kind="Pod", plural="pods", singular="pod", namespaced=True)


def parent_and_ordinal(pod: Mapping[str, Any]) -> tuple[str, int]:
    """upstream `getParentNameAndOrdinal`: ("", -1) when the name is not `<parent>-<n>`."""
    match = _PARENT_AND_ORDINAL.match(rsc.name_of(pod))
    if match is None:
        return "", -1
    try:
        return match.group(1), int(match.group(2))
    except ValueError:  # pragma: no cover - the pattern only has digits
        return "", -1


def ordinal_of(pod: Mapping[str, Any]) -> int:
    return parent_and_ordinal(pod)[1]


def is_member(set_: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """upstream `isMemberOf`: the pod's name is `<set>-<ordinal>`."""
    return parent_and_ordinal(pod)[0] == rsc.name_of(set_)


def pod_name(set_: Mapping[str, Any], ordinal: int) -> str:
    return f"{rsc.name_of(set_)}-{ordinal}"


def start_ordinal(set_: Mapping[str, Any]) -> int:
    """spec.ordinals.start (0 without it)."""
    ordinals = rsc.spec_of(set_).get("ordinals") or {}
    return int(ordinals.get("start") or 0)


def end_ordinal(set_: Mapping[str, Any]) -> int:
    return start_ordinal(set_) + rsc.replicas_of(set_) - 1


def in_range(set_: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """upstream `podInOrdinalRange`."""
    ordinal = ordinal_of(pod)
    return start_ordinal(set_) <= ordinal <= end_ordinal(set_)


def claim_name(set_: Mapping[str, Any], template: Mapping[str, Any], ordinal: int) -> str:
    """upstream `getPersistentVolumeClaimName`: `<claim>-<set>-<ordinal>`."""
    return f"{rsc.name_of(template)}-{rsc.name_of(set_)}-{ordinal}"


def claims_for(set_: Mapping[str, Any], ordinal: int) -> dict[str, dict[str, Any]]:
    """upstream `getPersistentVolumeClaims`: template name -> the claim a pod of that ordinal uses
    (the template with its name, the namespace, and the selector's matchLabels added to its labels)."""
    out: dict[str, dict[str, Any]] = {}
    match_labels = dict(((rsc.spec_of(set_).get("selector") or {}).get("matchLabels")) or {})
    for template in rsc.spec_of(set_).get("volumeClaimTemplates") or []:
        claim = caches.deep_copy(dict(template))
        meta = dict(claim.get("metadata") or {})
        meta.pop("namespace", None)
        meta["name"] = claim_name(set_, template, ordinal)
        meta["namespace"] = rsc.namespace_of(set_)
        meta["labels"] = {**(meta.get("labels") or {}), **match_labels}
        claim["metadata"] = meta
        claim.setdefault("apiVersion", "v1")
        claim.setdefault("kind", "PersistentVolumeClaim")
        claim.pop("status", None)
        out[rsc.name_of(template)] = claim
    return out


def update_storage(set_: Mapping[str, Any], pod: dict[str, Any]) -> None:
    """upstream `updateStorage`: a volume per claim template (replacing a pod volume of that name)."""
    ordinal = ordinal_of(pod)
    claims = claims_for(set_, ordinal)
    spec = pod.setdefault("spec", {})
    volumes = [{"name": name, "persistentVolumeClaim": {"claimName": rsc.name_of(claim)}}
               for name, claim in sorted(claims.items())]
    volumes += [v for v in spec.get("volumes") or [] if v.get("name") not in claims]
    if volumes:
        spec["volumes"] = volumes


def update_identity(set_: Mapping[str, Any], pod: dict[str, Any]) -> None:
    """upstream `updateIdentity`: name, namespace, the pod-name and pod-index labels."""
    ordinal = ordinal_of(pod)
    meta = pod.setdefault("metadata", {})
    meta["name"] = pod_name(set_, ordinal)
    meta["namespace"] = rsc.namespace_of(set_)
    labels = dict(meta.get("labels") or {})
    labels[POD_NAME_LABEL] = meta["name"]
    labels[POD_INDEX_LABEL] = str(ordinal)
    meta["labels"] = labels


def identity_matches(set_: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """upstream `identityMatches`."""
    parent, ordinal = parent_and_ordinal(pod)
    labels = rsc.labels_of(pod)
    return (ordinal >= 0 and parent == rsc.name_of(set_) and rsc.namespace_of(pod) == rsc.namespace_of(set_)
            and labels.get(POD_NAME_LABEL) == rsc.name_of(pod) and labels.get(POD_INDEX_LABEL) == str(ordinal))


def storage_matches(set_: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """upstream `storageMatches`: every claim template has a pod volume naming the right claim."""
    ordinal = ordinal_of(pod)
    if ordinal < 0:
        return False
    volumes = {v.get("name"): v for v in rsc.spec_of(pod).get("volumes") or []}
    for name, claim in claims_for(set_, ordinal).items():
        volume = volumes.get(name)
        if volume is None or (volume.get("persistentVolumeClaim") or {}).get("claimName") != rsc.name_of(claim):
            return False
    return True


def new_pod(set_: Mapping[str, Any], ordinal: int) -> dict[str, Any]:
    """upstream `newStatefulSetPod`: the template with a controller reference, the stable name, the
    hostname `<set>-<ordinal>` and subdomain `serviceName`, the identity labels, the claim volumes."""
    template = rsc.spec_of(set_).get("template") or {}
    tmeta = template.get("metadata") or {}
    meta: dict[str, Any] = {"name": pod_name(set_, ordinal), "namespace": rsc.namespace_of(set_),
                            "ownerReferences": [rsc.new_controller_ref(set_, STATEFULSETS)]}
    for field in ("labels", "annotations", "finalizers"):
        if tmeta.get(field):
            meta[field] = caches.deep_copy({"v": tmeta[field]})["v"]
    pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                           "spec": caches.deep_copy(dict(template.get("spec") or {}))}
    update_identity(set_, pod)
    pod["spec"]["hostname"] = meta["name"]
    service = rsc.spec_of(set_).get("serviceName")
    if service:
        pod["spec"]["subdomain"] = service
    update_storage(set_, pod)
    return pod


def apply_revision(set_: Mapping[str, Any], revision: Mapping[str, Any]) -> dict[str, Any]:
    """upstream `ApplyRevision`: the set with the template the revision's patch restores."""
    out = caches.deep_copy(dict(set_))
    template = ((revision.get("data") or {}).get("spec") or {}).get("template")
    if isinstance(template, Mapping):
        restored = {k: caches.deep_copy(v) for k, v in template.items() if k != "$patch"}
        out.setdefault("spec", {})["template"] = restored
    return out


def strategy_of(set_: Mapping[str, Any]) -> str:
    return str((rsc.spec_of(set_).get("updateStrategy") or {}).get("type") or "RollingUpdate")


def partition_of(set_: Mapping[str, Any]) -> int | None:
    rolling = (rsc.spec_of(set_).get("updateStrategy") or {}).get("rollingUpdate")
    if not isinstance(rolling, Mapping):
        return None
    return int(rolling.get("partition") or 0)


def versioned_pod(current_set: Mapping[str, Any], update_set: Mapping[str, Any], current_revision: str,
                  update_revision: str, ordinal: int) -> dict[str, Any]:
    """upstream `newVersionedStatefulSetPod`: ordinals below the partition (without a rollingUpdate
    block: below start + currentReplicas) are created at the current revision, the rest at the update one."""
    start = start_ordinal(current_set)
    partition = partition_of(current_set)
    rolling = strategy_of(current_set) == "RollingUpdate"
    current_replicas = int(rsc.status_of(current_set).get("currentReplicas") or 0)
    if (rolling and partition is None and ordinal < start + current_replicas) or \
            (partition is not None and ordinal < start + partition):
        pod = new_pod(current_set, ordinal)
        pod["metadata"]["labels"][REVISION_LABEL] = current_revision
        return pod
    pod = new_pod(update_set, ordinal)
    pod["metadata"]["labels"][REVISION_LABEL] = update_revision
    return pod


def max_unavailable(set_: Mapping[str, Any], replicas: int) -> int:
    """upstream `getStatefulSetMaxUnavailable`: scaled down from a percentage, at least 1."""
    rolling = (rsc.spec_of(set_).get("updateStrategy") or {}).get("rollingUpdate") or {}
    value = rolling.get("maxUnavailable")
    if value is None:
        return 1
    if isinstance(value, str) and value.endswith("%"):
        count = math.floor(int(value[:-1]) * replicas / 100)
    else:
        count = int(value)
    return max(count, 1)


# ---------------------------------------------------------------------- pod states


def is_created(pod: Mapping[str, Any]) -> bool:
    """upstream `isCreated`: the server gave it a phase."""
    return bool(rsc.status_of(pod).get("phase"))


def phase(pod: Mapping[str, Any]) -> str:
    return str(rsc.status_of(pod).get("phase") or "")


def running_and_ready(pod: Mapping[str, Any]) -> bool:
    return phase(pod) == "Running" and rsc.is_pod_ready(pod)


def healthy(pod: Mapping[str, Any]) -> bool:
    """upstream `isHealthy`: running, ready, not terminating."""
    return running_and_ready(pod) and not rsc.is_deleting(pod)


def revision_of(pod: Mapping[str, Any]) -> str:
    return rsc.labels_of(pod).get(REVISION_LABEL, "")


# ---------------------------------------------------------------------- claim owner references


def _refers_to(ref: Mapping[str, Any], obj: Mapping[str, Any], kind: res.ResourceKind) -> bool:
    """upstream `matchesRef`: same API group, kind and name (any uid)."""
    group = str(ref.get("apiVersion") or "").rpartition("/")[0] if "/" in str(ref.get("apiVersion") or "") else ""
    return group == kind.group and ref.get("kind") == kind.kind and ref.get("name") == rsc.name_of(obj)


def wanted_claim_refs(set_: Mapping[str, Any], pod: Mapping[str, Any], claim: Mapping[str, Any]
                      ) -> list[dict[str, Any]]:
    """upstream `updateClaimOwnerRefForSetAndPod`: the claim's owner references with ours scrubbed and
    set again by the policy — whenDeleted Delete: the set as controller (while the pod is in range);
    whenScaled Delete: the pod as controller once it is scaled away. A claim controlled by someone
    else keeps only the other references."""
    refs = [dict(r) for r in rsc.meta(claim).get("ownerReferences") or [] if isinstance(r, Mapping)]
    ours = [r for r in refs if _refers_to(r, set_, STATEFULSETS) or _refers_to(r, pod, PODS)]
    others = [r for r in refs if r not in ours]
    if any(r.get("controller") is True for r in others):
        return others
    policy = rsc.spec_of(set_).get("persistentVolumeClaimRetentionPolicy") or {}
    when_deleted = policy.get("whenDeleted") or "Retain"
    when_scaled = policy.get("whenScaled") or "Retain"
    scaled_down = not in_range(set_, pod)
    if when_scaled == "Delete" and scaled_down:
        return [*others, rsc.new_controller_ref(pod, PODS)]
    if when_deleted == "Delete" and not (when_scaled == "Delete" and scaled_down):
        return [*others, rsc.new_controller_ref(set_, STATEFULSETS)]
    return others


def claim_refs_match(set_: Mapping[str, Any], pod: Mapping[str, Any], claim: Mapping[str, Any]) -> bool:
    def ident(refs: Iterable[Mapping[str, Any]]) -> set[tuple[str, bool]]:
        return {(str(r.get("uid") or ""), r.get("controller") is True) for r in refs}

    return ident(rsc.meta(claim).get("ownerReferences") or []) == ident(wanted_claim_refs(set_, pod, claim))


def claim_is_stale(claim: Mapping[str, Any], pod_name_: str) -> bool:
    """upstream `PodClaimIsStale` for a pod not yet created: the claim is being deleted, or still names
    an earlier pod of that name as its owner (the garbage collector is about to remove it)."""
    if rsc.is_deleting(claim):
        return True
    return any(r.get("kind") == "Pod" and r.get("name") == pod_name_ and str(r.get("apiVersion")) == "v1"
               for r in rsc.meta(claim).get("ownerReferences") or [])


# ---------------------------------------------------------------------- status


def replica_status(pods: Sequence[Mapping[str, Any]], *, min_ready: int, now: float, current: str,
                   update: str) -> dict[str, int]:
    """upstream `computeReplicaStatus` summed over the pods (created pods only)."""
    out = {"replicas": 0, "readyReplicas": 0, "availableReplicas": 0, "currentReplicas": 0, "updatedReplicas": 0}
    for pod in pods:
        created = is_created(pod)
        if created:
            out["replicas"] += 1
        if running_and_ready(pod):
            out["readyReplicas"] += 1
            if rsc.is_pod_available(pod, min_ready, now):
                out["availableReplicas"] += 1
        if created and not rsc.is_deleting(pod):
            revision = revision_of(pod)
            if revision == current:
                out["currentReplicas"] += 1
            if revision == update:
                out["updatedReplicas"] += 1
    return out


def complete_rolling_update(set_: Mapping[str, Any], status: dict[str, Any]) -> None:
    """upstream `completeRollingUpdate`: all replicas updated and ready -> the update revision is current."""
    replicas = rsc.replicas_of(set_)
    if (strategy_of(set_) == "RollingUpdate" and status.get("updatedReplicas") == replicas
            and status.get("readyReplicas") == replicas and status.get("replicas") == replicas):
        status["currentReplicas"] = status["updatedReplicas"]
        status["currentRevision"] = status["updateRevision"]


STATUS_FIELDS = ("observedGeneration", "replicas", "readyReplicas", "currentReplicas", "updatedReplicas",
                 "availableReplicas", "currentRevision", "updateRevision", "collisionCount")


def status_differs(set_: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
    """upstream `inconsistentStatus`."""
    old = rsc.status_of(set_)
    return (int(status.get("observedGeneration") or 0) > int(old.get("observedGeneration") or 0)
            or any((old.get(f) or 0) != (status.get(f) or 0) for f in STATUS_FIELDS[1:]))
