"""Strategies of core/v1 kinds: pods, namespaces, nodes, persistent volumes and claims.

A new volume or claim starts `Pending` (a volume records when it entered the phase, and a status write
that changes the phase without a new time gets one: PersistentVolumeLastPhaseTransitionTime).

A Pod's `ephemeralcontainers` and `resize` subresources write part of its spec (upstream's
podEphemeralContainersStrategy and podResizeStrategy): the stored pod with, of the write, only the
ephemeral containers, or only each container's `resources` and `resizePolicy` (matched by name; a
container the write does not name keeps its own)."""

from __future__ import annotations

from typing import Any

from cp import clock as clocks
from cp.strategies.model import Obj, Strategy


def qos_class(spec: dict[str, Any]) -> str:
    """The pod's QoS class (`pkg/apis/core/helper/qos`): BestEffort without requests or limits for cpu
    and memory, Guaranteed when every container's limits equal its requests for both, else Burstable."""
    limits_all = True
    any_set = False
    for c in list(spec.get("containers") or []) + list(spec.get("initContainers") or []):
        r = (c.get("resources") or {})
        req = r.get("requests") or {}
        lim = r.get("limits") or {}
        for res_name in ("cpu", "memory"):
            value = req.get(res_name, lim.get(res_name))
            if value is not None or lim.get(res_name) is not None:
                any_set = True
            if lim.get(res_name) is None or value is None or str(value) != str(lim.get(res_name)):
                limits_all = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if limits_all else "Burstable"


def bind_pod(pod: Obj, binding: Obj, *, now: float) -> Obj:
    """`pod` as a Binding to `binding`'s target node leaves it (upstream's setPodNodeAndMetadata, the
    checks aside): `spec.nodeName`, the binding's annotations merged into the pod's, the
    `PodScheduled` condition True (its time `now` when it was not True), and no nominated node
    (ClearingNominatedNodeNameAfterBinding). A copy: `pod` is not changed."""
    out = {**pod, "spec": {**(pod.get("spec") or {}), "nodeName": str((binding.get("target") or {}).get("name") or "")}}
    annotations = (binding.get("metadata") or {}).get("annotations")
    if isinstance(annotations, dict) and annotations:
        meta = dict(pod.get("metadata") or {})
        meta["annotations"] = {**(meta.get("annotations") or {}), **annotations}
        out["metadata"] = meta
    status = dict(pod.get("status") or {})
    conditions = list(status.get("conditions") or [])
    scheduled = next((c for c in conditions if isinstance(c, dict) and c.get("type") == "PodScheduled"), None)
    if scheduled is None or scheduled.get("status") != "True":
        conditions = [c for c in conditions if c is not scheduled]
        conditions.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                           "lastTransitionTime": clocks.rfc3339(now)})
    status["conditions"] = conditions
    status.pop("nominatedNodeName", None)
    out["status"] = status
    return out


def _pod_status(obj: Obj) -> Obj:
    return {"phase": "Pending", "qosClass": qos_class(obj.get("spec") or {})}


def _claim_create(obj: Obj, _now: float) -> None:
    """NormalizeDataSources (AnyVolumeDataSource): `dataSource` and `dataSourceRef` name the same source;
    a cross-namespace reference has no `dataSource`."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    source, ref = spec.get("dataSource"), spec.get("dataSourceRef")
    if isinstance(source, dict) and ref is None:
        spec["dataSourceRef"] = {k: source[k] for k in ("apiGroup", "kind", "name") if k in source}
    elif isinstance(ref, dict) and source is None and not ref.get("namespace"):
        spec["dataSource"] = {k: ref[k] for k in ("apiGroup", "kind", "name") if k in ref}


def _volume_create(obj: Obj, now: float) -> None:
    status = obj.get("status")
    if isinstance(status, dict):
        status["lastPhaseTransitionTime"] = clocks.rfc3339(now)


def _volume_update(new: Obj, old: Obj, now: float, subresource: str) -> None:
    status, old_status = new.get("status"), old.get("status") or {}
    if subresource != "status" or not isinstance(status, dict) or not isinstance(old_status, dict):
        return
    if status.get("phase") != old_status.get("phase") and \
            status.get("lastPhaseTransitionTime") == old_status.get("lastPhaseTransitionTime"):
        status["lastPhaseTransitionTime"] = clocks.rfc3339(now)


def _set_or_drop(target: dict[str, Any], key: str, value: Any) -> None:
    if value is None:
        target.pop(key, None)
    else:
        target[key] = value


def _spec(obj: Obj) -> dict[str, Any]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = obj["spec"] = {}
    return spec


def _ephemeral_containers_write(new: Obj, stored: Obj) -> Obj:
    """Of the write, only `spec.ephemeralContainers` (validation then forbids changing existing ones)."""
    raw = new.get("spec")
    written = raw.get("ephemeralContainers") if isinstance(raw, dict) else None
    _set_or_drop(_spec(stored), "ephemeralContainers", written)
    return stored


def _resize_write(new: Obj, stored: Obj) -> Obj:
    """Of the write, only the regular containers' `resources` and `resizePolicy`, by container name."""
    raw = new.get("spec")
    written = raw.get("containers") if isinstance(raw, dict) else None
    by_name = {c.get("name"): c for c in written or [] if isinstance(c, dict)}
    for container in _spec(stored).get("containers") or []:
        if not isinstance(container, dict) or container.get("name") not in by_name:
            continue
        source = by_name[container.get("name")]
        for key in ("resources", "resizePolicy"):
            _set_or_drop(container, key, source.get(key))
    return stored


def _apply_label_keys(selector: Any, keys: Any, operator: str, labels: dict[str, Any]) -> None:
    """`applyLabelKeysToLabelSelector`: `key <operator> (the pod's value)` for each key the pod has."""
    for key in keys or ():
        if isinstance(key, str) and key in labels:
            exprs = selector.get("matchExpressions")
            if not isinstance(exprs, list):
                exprs = selector["matchExpressions"] = []
            exprs.append({"key": key, "operator": operator, "values": [labels[key]]})


def _pod_create(obj: Obj, _now: float) -> None:
    """PrepareForCreate's selector merges: pod (anti-)affinity terms' `matchLabelKeys` (In) and
    `mismatchLabelKeys` (NotIn), and topology spread constraints' `matchLabelKeys` (In,
    MatchLabelKeysInPodTopologySpreadSelectorMerge), into their `labelSelector`; a term without a
    labelSelector selects nothing and is left alone."""
    labels = (obj.get("metadata") or {}).get("labels")
    labels = labels if isinstance(labels, dict) else {}
    spec = _spec(obj)
    affinity = spec.get("affinity")
    if isinstance(affinity, dict):
        for kind in ("podAffinity", "podAntiAffinity"):
            rules = affinity.get(kind)
            if not isinstance(rules, dict):
                continue
            terms = list(rules.get("requiredDuringSchedulingIgnoredDuringExecution") or [])
            terms += [w.get("podAffinityTerm") for w in rules.get("preferredDuringSchedulingIgnoredDuringExecution") or []
                      if isinstance(w, dict)]
            for term in terms:
                if not isinstance(term, dict) or not isinstance(term.get("labelSelector"), dict):
                    continue
                _apply_label_keys(term["labelSelector"], term.get("matchLabelKeys"), "In", labels)
                _apply_label_keys(term["labelSelector"], term.get("mismatchLabelKeys"), "NotIn", labels)
    for constraint in spec.get("topologySpreadConstraints") or ():
        if isinstance(constraint, dict) and isinstance(constraint.get("labelSelector"), dict):
            _apply_label_keys(constraint["labelSelector"], constraint.get("matchLabelKeys"), "In", labels)


STRATEGIES: dict[tuple[str, str], Strategy] = {
    ("", "PersistentVolume"): Strategy(initial_status=lambda _obj: {"phase": "Pending"},
                                       prepare_for_create=_volume_create, prepare_for_update=_volume_update),
    ("", "PersistentVolumeClaim"): Strategy(initial_status=lambda _obj: {"phase": "Pending"},
                                            prepare_for_create=_claim_create),
    ("", "Pod"): Strategy(initial_status=_pod_status, prepare_for_create=_pod_create, partial_writes=(
        ("ephemeralcontainers", _ephemeral_containers_write), ("resize", _resize_write))),
    ("", "Namespace"): Strategy(initial_status=lambda _obj: {"phase": "Active"}),
    ("", "Node"): Strategy(status_on_create=True),  # the kubelet registers a node with its status
}
