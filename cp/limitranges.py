"""LimitRanger: the defaults and bounds a namespace's LimitRanges put on pods and claims
(kubernetes `plugin/pkg/admission/limitranger/admission.go`). Pure: callers pass the LimitRanges.

- Defaults (pod create): each container and init container without a request or limit for a
  resource gets the `defaultRequest` / `default` of the `Container` items; the pod is annotated
  `kubernetes.io/limit-ranger: "LimitRanger plugin set: cpu, memory request for container app; ..."`.
- Bounds: `Container` items check each container's requests and limits against `min`, `max` and
  `maxLimitRequestRatio`; `Pod` items the pod's total (init containers counted as the scheduler
  does, pod-level resources where set); `PersistentVolumeClaim` items the claim's storage request
  against `min` and `max`. Every violation of one LimitRange is reported, with upstream's messages.

Values are compared in milli-units when all three fit (cpu-style precision), otherwise in units.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from cp import podresources
from cp import resourcelists as rl
from cp.quantity import Quantity
from cp.resourcelists import ResourceList

ANNOTATION = "kubernetes.io/limit-ranger"
CONTAINER, POD, PVC = "Container", "Pod", "PersistentVolumeClaim"
_MAX_MILLI_VALUE = (2**63 - 1) // 1000  # resource.MaxMilliValue
_NANO = 10**9


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _items(limit_range: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    limits = _dict(limit_range.get("spec")).get("limits")
    return [item for item in limits if isinstance(item, Mapping)] if isinstance(limits, list) else []


def _containers(spec: Mapping[str, Any], key: str) -> list[dict[str, Any]]:
    value = spec.get(key)
    return [c for c in value if isinstance(c, dict)] if isinstance(value, list) else []


def join_errors(messages: Sequence[str]) -> str:
    """`utilerrors.NewAggregate(errs).Error()`: one message alone, several (deduplicated) in brackets."""
    unique = list(dict.fromkeys(messages))
    if len(unique) <= 1:
        return unique[0] if unique else ""
    return "[" + ", ".join(unique) + "]"


# ---------------------------------------------------------------- defaults

def default_requirements(limit_range: Mapping[str, Any]) -> tuple[ResourceList, ResourceList]:
    """(requests, limits) that containers get by default from the `Container` items."""
    requests: ResourceList = {}
    limits: ResourceList = {}
    for item in _items(limit_range):
        if item.get("type") == CONTAINER:
            requests.update(rl.parse(item.get("defaultRequest")))
            limits.update(rl.parse(item.get("default")))
    return requests, limits


def _merge_container(c: dict[str, Any], requests: ResourceList, limits: ResourceList, what: str,
                     notes: list[str]) -> None:
    res = c.get("resources")
    if not isinstance(res, dict):
        res = c["resources"] = {}
    set_requests: list[str] = []
    set_limits: list[str] = []
    for which, defaults, changed in (("limits", limits, set_limits), ("requests", requests, set_requests)):
        if not defaults:
            continue
        have = res.get(which)
        if not isinstance(have, dict):
            have = res[which] = {}
        for name, q in defaults.items():
            if name not in have:
                have[name] = q.canonical()
                changed.append(name)
    if set_requests:
        notes.append(f"{', '.join(sorted(set_requests))} request for {what} {c.get('name', '')}")
    if set_limits:
        notes.append(f"{', '.join(sorted(set_limits))} limit for {what} {c.get('name', '')}")


def apply_pod_defaults(pod: dict[str, Any], limit_range: Mapping[str, Any]) -> None:
    """`PodMutateLimitFunc`: fill in missing container requests and limits, in place."""
    requests, limits = default_requirements(limit_range)
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    notes: list[str] = []
    for c in _containers(spec, "containers"):
        _merge_container(c, requests, limits, "container", notes)
    for c in _containers(spec, "initContainers"):
        _merge_container(c, requests, limits, "init container", notes)
    if notes:
        meta = pod.setdefault("metadata", {})
        annotations = meta.get("annotations")
        if not isinstance(annotations, dict):
            annotations = meta["annotations"] = {}
        annotations[ANNOTATION] = "LimitRanger plugin set: " + "; ".join(notes)


# ---------------------------------------------------------------- bounds

def _milli(q: Quantity) -> int:
    return -((-q.nanos) // 1_000_000)  # MilliValue rounds up


def _comparable(*quantities: Quantity | None) -> list[int]:
    """`requestLimitEnforcedValues`: milli-values when none is too large for them, else values."""
    present = [q if q is not None else Quantity(0) for q in quantities]
    values = [q.value() for q in present]
    if all(v <= _MAX_MILLI_VALUE for v in values):
        return [_milli(q) for q in present]
    return values


def _min(limit_type: str, name: str, enforced: Quantity, requests: Mapping[str, Quantity],
         limits: Mapping[str, Quantity]) -> str:
    req, lim = requests.get(name), limits.get(name)
    req_v, lim_v, enf_v = _comparable(req, lim, enforced)
    if req is None:
        return f"minimum {name} usage per {limit_type} is {enforced}.  No request is specified"
    if req_v < enf_v:
        return f"minimum {name} usage per {limit_type} is {enforced}, but request is {req}"
    if lim is not None and lim_v < enf_v:
        return f"minimum {name} usage per {limit_type} is {enforced}, but limit is {lim}"
    return ""


def _max_request(limit_type: str, name: str, enforced: Quantity, requests: Mapping[str, Quantity]) -> str:
    req = requests.get(name)
    req_v, _, enf_v = _comparable(req, None, enforced)
    if req is None:
        return f"maximum {name} usage per {limit_type} is {enforced}.  No request is specified"
    if req_v > enf_v:
        return f"maximum {name} usage per {limit_type} is {enforced}, but request is {req}"
    return ""


def _max(limit_type: str, name: str, enforced: Quantity, requests: Mapping[str, Quantity],
         limits: Mapping[str, Quantity]) -> str:
    req, lim = requests.get(name), limits.get(name)
    req_v, lim_v, enf_v = _comparable(req, lim, enforced)
    if lim is None:
        return f"maximum {name} usage per {limit_type} is {enforced}.  No limit is specified"
    if lim_v > enf_v:
        return f"maximum {name} usage per {limit_type} is {enforced}, but limit is {lim}"
    if req is not None and req_v > enf_v:
        return f"maximum {name} usage per {limit_type} is {enforced}, but request is {req}"
    return ""


def _ratio(limit_type: str, name: str, enforced: Quantity, requests: Mapping[str, Quantity],
           limits: Mapping[str, Quantity]) -> str:
    req, lim = requests.get(name), limits.get(name)
    req_v, lim_v, _ = _comparable(req, lim, enforced)
    if req is None or req_v == 0:
        return (f"{name} max limit to request ratio per {limit_type} is {enforced}, "
                "but no request is specified or request is 0")
    if lim is None or lim_v == 0:
        return (f"{name} max limit to request ratio per {limit_type} is {enforced}, "
                "but no limit is specified or limit is 0")
    observed = lim_v / req_v
    shown = observed
    maximum = float(enforced.value())
    if enforced.value() <= _MAX_MILLI_VALUE:
        observed *= 1000
        maximum = float(_milli(enforced))
    if observed > maximum:
        return f"{name} max limit to request ratio per {limit_type} is {enforced}, but provided ratio is {shown:f}"
    return ""


def _check(item: Mapping[str, Any], requests: Mapping[str, Quantity], limits: Mapping[str, Quantity],
           errs: list[str]) -> None:
    limit_type = str(item.get("type") or "")
    for name, q in sorted(rl.parse(item.get("min")).items()):
        errs.append(_min(limit_type, name, q, requests, limits))
    for name, q in sorted(rl.parse(item.get("max")).items()):
        errs.append(_max(limit_type, name, q, requests, limits))
    for name, q in sorted(rl.parse(item.get("maxLimitRequestRatio")).items()):
        errs.append(_ratio(limit_type, name, q, requests, limits))


def _container_lists(c: Mapping[str, Any]) -> tuple[ResourceList, ResourceList]:
    res = _dict(c.get("resources"))
    return rl.parse(res.get("requests")), rl.parse(res.get("limits"))


def validate_pod(pod: Mapping[str, Any], limit_range: Mapping[str, Any]) -> str:
    """`PodValidateLimitFunc`: the violations of one LimitRange ("" when none)."""
    spec = _dict(pod.get("spec"))
    errs: list[str] = []
    for item in _items(limit_range):
        if item.get("type") == CONTAINER:
            for key in ("containers", "initContainers"):
                for c in _containers(spec, key):
                    requests, limits = _container_lists(c)
                    _check(item, requests, limits, errs)
        elif item.get("type") == POD:
            requests = podresources.pod_requests(pod, overhead=False, pod_level_resources=False)
            requests.update(podresources.pod_level(pod, "requests", hugepages=False))
            limits = podresources.pod_limits(pod, overhead=False, pod_level_resources=False)
            limits.update(podresources.pod_level(pod, "limits", hugepages=False))
            _check(item, requests, limits, errs)
    return join_errors([e for e in errs if e])


def validate_pvc(pvc: Mapping[str, Any], limit_range: Mapping[str, Any]) -> str:
    """`PersistentVolumeClaimValidateLimitFunc`: storage requests within `min` and `max`."""
    requests = rl.parse(_dict(_dict(pvc.get("spec")).get("resources")).get("requests"))
    errs: list[str] = []
    for item in _items(limit_range):
        if item.get("type") != PVC:
            continue
        for name, q in sorted(rl.parse(item.get("min")).items()):
            errs.append(_min(PVC, name, q, requests, {}))
        for name, q in sorted(rl.parse(item.get("max")).items()):
            errs.append(_max_request(PVC, name, q, requests))
    return join_errors([e for e in errs if e])


def sort_ranges(ranges: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """LimitRanges in the order they are applied (by name: the first violating one is reported)."""
    return sorted(ranges, key=lambda lr: str(_dict(lr.get("metadata")).get("name") or ""))
