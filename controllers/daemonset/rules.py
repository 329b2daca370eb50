"""The pure rules of the DaemonSet controller (upstream `pkg/controller/daemon` and its `util`):
which nodes should run a daemon pod, the pod a node gets, the revision patch, the rolling-update
arithmetic and the status numbers. No I/O.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from controllers import replicaset as rsc
from controllers.deployment import rules as drules
from controllers.runtime import cache as caches
from cp.scheduling import plugins

HASH_LABEL = "controller-revision-hash"  # apps.DefaultDaemonSetUniqueLabelKey
TEMPLATE_GENERATION_LABEL = "pod-template-generation"  # apps.DaemonSetTemplateGenerationKey
TEMPLATE_GENERATION_ANNOTATION = "deprecated.daemonset.template.generation"

NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
DISK_PRESSURE = "node.kubernetes.io/disk-pressure"
MEMORY_PRESSURE = "node.kubernetes.io/memory-pressure"
PID_PRESSURE = "node.kubernetes.io/pid-pressure"
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
NETWORK_UNAVAILABLE = "node.kubernetes.io/network-unavailable"


def default_tolerations(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """upstream `AddOrUpdateDaemonPodTolerations`: NoExecute not-ready and unreachable (no
    tolerationSeconds: a daemon pod is never evicted for them), NoSchedule disk/memory/pid
    pressure and unschedulable, and network-unavailable for host-network pods."""
    out = [{"key": NOT_READY, "operator": "Exists", "effect": "NoExecute"},
           {"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute"},
           {"key": DISK_PRESSURE, "operator": "Exists", "effect": "NoSchedule"},
           {"key": MEMORY_PRESSURE, "operator": "Exists", "effect": "NoSchedule"},
           {"key": PID_PRESSURE, "operator": "Exists", "effect": "NoSchedule"},
           {"key": UNSCHEDULABLE, "operator": "Exists", "effect": "NoSchedule"}]
    if spec.get("hostNetwork"):
        out.append({"key": NETWORK_UNAVAILABLE, "operator": "Exists", "effect": "NoSchedule"})
    return out


def add_tolerations(tolerations: Sequence[Mapping[str, Any]], extra: Iterable[Mapping[str, Any]]
                    ) -> list[dict[str, Any]]:
    """upstream `v1helper.AddOrUpdateTolerationInPodSpec`: a toleration with the same key, operator,
    value and effect is replaced, others appended."""
    out = [dict(t) for t in tolerations]
    for tol in extra:
        ident = (tol.get("key") or "", tol.get("operator") or "Equal", tol.get("value") or "", tol.get("effect") or "")
        for i, have in enumerate(out):
            if (have.get("key") or "", have.get("operator") or "Equal", have.get("value") or "",
                    have.get("effect") or "") == ident:
                out[i] = dict(tol)
                break
        else:
            out.append(dict(tol))
    return out


def node_name_affinity(affinity: Mapping[str, Any] | None, node_name: str) -> dict[str, Any]:
    """upstream `ReplaceDaemonSetPodNodeNameNodeAffinity`: the required node affinity becomes a single
    term `matchFields metadata.name In [node]` (preferred terms and pod (anti-)affinity are kept)."""
    out = caches.deep_copy(dict(affinity or {}))
    node_affinity = dict(out.get("nodeAffinity") or {})
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}
    out["nodeAffinity"] = node_affinity
    return out


def template_generation(ds: Mapping[str, Any]) -> str | None:
    value = (rsc.meta(ds).get("annotations") or {}).get(TEMPLATE_GENERATION_ANNOTATION)
    return str(value) if value is not None else None


def template_hash(ds: Mapping[str, Any]) -> str:
    """upstream `controller.ComputeHash(&ds.Spec.Template, ds.Status.CollisionCount)`."""
    count = rsc.status_of(ds).get("collisionCount")
    return drules.compute_hash(rsc.spec_of(ds).get("template") or {},
                               int(count) if count is not None else None)


def daemon_pod(ds: Mapping[str, Any], *, node_name: str = "", hash_: str = "") -> dict[str, Any]:
    """The pod a node gets (upstream `NewPod` / `CreatePodTemplate` + the node-name affinity): the
    template, the automatic tolerations, the template-generation and revision-hash labels."""
    template = spec_of_template(ds)
    meta = caches.deep_copy(dict(template.get("metadata") or {}))
    spec = caches.deep_copy(dict(template.get("spec") or {}))
    spec["tolerations"] = add_tolerations(spec.get("tolerations") or [], default_tolerations(spec))
    labels = dict(meta.get("labels") or {})
    generation = template_generation(ds)
    if generation is not None:
        labels[TEMPLATE_GENERATION_LABEL] = generation
    if hash_:
        labels[HASH_LABEL] = hash_
    meta["labels"] = labels
    if node_name:
        spec["affinity"] = node_name_affinity(spec.get("affinity"), node_name)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def spec_of_template(ds: Mapping[str, Any]) -> dict[str, Any]:
    return dict(rsc.spec_of(ds).get("template") or {})


@dataclasses.dataclass(frozen=True, slots=True)
class Placement:
    should_run: bool
    should_continue_running: bool


def node_should_run(node: Mapping[str, Any], ds: Mapping[str, Any]) -> Placement:
    """upstream `NodeShouldRunDaemonPod`: the template's nodeName (if any), nodeSelector and required
    node affinity must match the node; an untolerated NoSchedule/NoExecute taint keeps a new pod off,
    only an untolerated NoExecute one makes a running pod go."""
    pod = daemon_pod(ds)
    spec = pod["spec"]
    node_name = rsc.name_of(node)
    if spec.get("nodeName") and spec["nodeName"] != node_name:
        return Placement(False, False)
    if not plugins.node_affinity_matches(pod, node):
        return Placement(False, False)
    taints = (node.get("spec") or {}).get("taints") or []
    tolerations = spec.get("tolerations") or []
    if plugins.untolerated_taint(taints, tolerations, ("NoExecute",)) is not None:
        return Placement(False, False)
    if plugins.untolerated_taint(taints, tolerations, ("NoSchedule",)) is not None:
        return Placement(False, True)
    return Placement(True, True)


def target_node(pod: Mapping[str, Any]) -> str:
    """upstream `GetTargetNodeName`: spec.nodeName, else the single node the daemon affinity names."""
    spec = rsc.spec_of(pod)
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    for term in required.get("nodeSelectorTerms") or []:
        for field in term.get("matchFields") or []:
            values = field.get("values") or []
            if field.get("key") == "metadata.name" and field.get("operator") == "In" and len(values) == 1:
                return str(values[0])
    return ""


def by_age_and_phase(pod: Mapping[str, Any]) -> tuple[int, float, str]:
    """upstream `podByCreationTimestampAndPhase`: pods bound to a node first, then oldest first, then by name."""
    return (0 if rsc.spec_of(pod).get("nodeName") else 1, rsc.creation_time(pod), rsc.name_of(pod))


def is_updated(pod: Mapping[str, Any], ds: Mapping[str, Any], hash_: str) -> bool:
    """upstream `IsPodUpdated`: the template generation label or the revision hash label is current."""
    labels = rsc.labels_of(pod)
    generation = template_generation(ds)
    return (generation is not None and labels.get(TEMPLATE_GENERATION_LABEL) == generation) \
        or labels.get(HASH_LABEL) == hash_


def find_updated_pods(pods: Sequence[Mapping[str, Any]], ds: Mapping[str, Any], hash_: str
                      ) -> tuple[Mapping[str, Any] | None, Mapping[str, Any] | None, bool]:
    """upstream `findUpdatedPodsOnNode`: (new pod, old pod, ok); not ok when a node has two of a kind."""
    new = old = None
    for pod in pods:
        if rsc.is_deleting(pod):
            continue
        if is_updated(pod, ds, hash_):
            if new is not None:
                return None, None, False
            new = pod
        else:
            if old is not None:
                return None, None, False
            old = pod
    return new, old, True


def scaled(value: Any, total: int) -> int:
    """intstr `GetScaledValueFromIntOrPercent` rounding up (both of the DaemonSet's parameters)."""
    if value is None:
        return 0
    if isinstance(value, str) and value.endswith("%"):
        return math.ceil(int(value[:-1]) * total / 100)
    return int(value)


def surge_and_unavailable(ds: Mapping[str, Any], desired: int) -> tuple[int, int]:
    """(maxSurge, maxUnavailable) for `desired` nodes (upstream `updatedDesiredNodeCounts`): when both
    resolve to 0, maxUnavailable becomes 1."""
    strategy = rsc.spec_of(ds).get("updateStrategy") or {}
    rolling = strategy.get("rollingUpdate") or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return 0, 0
    surge = scaled(rolling.get("maxSurge"), desired)
    unavailable = scaled(rolling.get("maxUnavailable", 1), desired)
    if desired > 0 and surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def calculate_status(ds: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]],
                     node_pods: Mapping[str, Sequence[Mapping[str, Any]]], hash_: str, *, now: float) -> dict[str, Any]:
    """upstream `updateDaemonSetStatus`'s numbers (observedGeneration and collisionCount added by the caller)."""
    desired = current = ready = available = updated = misscheduled = 0
    min_ready = int(rsc.spec_of(ds).get("minReadySeconds") or 0)
    for node in nodes:
        placement = node_should_run(node, ds)
        pods = node_pods.get(rsc.name_of(node)) or []
        if placement.should_run:
            desired += 1
            if not pods:
                continue
            current += 1
            pod = sorted(pods, key=by_age_and_phase)[0]
            if rsc.is_pod_ready(pod):
                ready += 1
                if rsc.is_pod_available(pod, min_ready, now):
                    available += 1
            if is_updated(pod, ds, hash_):
                updated += 1
        elif pods:
            misscheduled += 1
    status: dict[str, Any] = {"currentNumberScheduled": current, "numberMisscheduled": misscheduled,
                              "desiredNumberScheduled": desired, "numberReady": ready,
                              "updatedNumberScheduled": updated, "numberAvailable": available,
                              "numberUnavailable": desired - available}
    return status


class FailedPodBackoff:
    """upstream's `failedPodsBackoff` (client-go `flowcontrol.Backoff`, 1 s doubling to 15 min) per
    DaemonSet and node: a failed daemon pod is deleted at once, the next one on that node only after the
    backoff since the last deletion; an entry untouched for twice the maximum starts over."""

    def __init__(self, *, initial: float = 1.0, maximum: float = 15 * 60.0) -> None:
        self.initial = initial
        self.maximum = maximum
        self._entries: dict[str, tuple[float, float]] = {}  # key -> (backoff, last update)

    def remaining(self, key: str, now: float) -> float:
        """Seconds left in the key's backoff since its last update (0: not backing off)."""
        entry = self._entries.get(key)
        if entry is None:
            return 0.0
        backoff, last = entry
        return max(backoff - (now - last), 0.0)

    def next(self, key: str, now: float) -> None:
        entry = self._entries.get(key)
        if entry is None or now - entry[1] > 2 * self.maximum:
            self._entries[key] = (self.initial, now)
        else:
            self._entries[key] = (min(entry[0] * 2, self.maximum), now)

    def gc(self, now: float) -> None:
        """Forget entries untouched for twice the maximum (upstream's periodic GC)."""
        self._entries = {k: v for k, v in self._entries.items() if now - v[1] <= 2 * self.maximum}


REQUIRED_STATUS = ("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady")
