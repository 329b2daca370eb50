"""What a pod requests and limits in total (k8s.io/component-helpers `resource.PodRequests` and
`PodLimits`), as ResourceQuota charges it and LimitRanger's `Pod` limits check it. Pure.

Containers add up; an init container runs before them, so each resource counts the largest of
(every regular container and sidecar summed) and (each plain init container plus the sidecars
started before it) — the sidecar KEP's formula. Pod-level `spec.resources` (cpu, memory, hugepages)
replaces the container sum where set; `spec.overhead` adds to requests, and to limits that are set.
With `use_status`, a container being resized counts the larger of what its spec asks and what its
status reports (allocated or actual), or the status alone when the resize is infeasible.

The scheduler keeps its own integer sums (`cp.scheduling.plugins.pod_requests`: milli-cpu and bytes
with non-zero defaults for scoring); this is the generic form over any resource name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cp import resourcelists as rl
from cp.resourcelists import ResourceList

POD_LEVEL_RESOURCES = ("cpu", "memory")
HUGEPAGES_PREFIX = "hugepages-"


def _dicts(value: Any) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _resources(c: Mapping[str, Any], which: str) -> ResourceList:
    res = c.get("resources")
    return rl.parse(res.get(which)) if isinstance(res, Mapping) else {}


def is_pod_level_resource(name: str, *, hugepages: bool = True) -> bool:
    """cpu and memory, and (for component-helpers, not LimitRanger's copy) hugepages-*."""
    return name in POD_LEVEL_RESOURCES or (hugepages and name.startswith(HUGEPAGES_PREFIX))


def pod_level(pod: Mapping[str, Any], which: str, *, hugepages: bool = True) -> ResourceList:
    """The pod-level requests or limits of `spec.resources` that pod-level resources support."""
    spec = pod.get("spec")
    res = spec.get("resources") if isinstance(spec, Mapping) else None
    if not isinstance(res, Mapping):
        return {}
    return {k: v for k, v in rl.parse(res.get(which)).items() if is_pod_level_resource(k, hugepages=hugepages)}


def is_pod_level_resources_set(pod: Mapping[str, Any]) -> bool:
    return bool(pod_level(pod, "requests") or pod_level(pod, "limits"))


def _resize_infeasible(pod: Mapping[str, Any]) -> bool:
    status = pod.get("status")
    for cond in _dicts(status.get("conditions")) if isinstance(status, Mapping) else []:
        if cond.get("type") == "PodResizePending":
            return cond.get("reason") == "Infeasible"
    return False


def _statuses(pod: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    status = pod.get("status")
    if not isinstance(status, Mapping):
        return {}
    out: dict[str, Mapping[str, Any]] = {}
    for key in ("containerStatuses", "initContainerStatuses"):
        for cs in _dicts(status.get(key)):
            out[str(cs.get("name") or "")] = cs
    return out


def _effective(pod: Mapping[str, Any], c: Mapping[str, Any], which: str,
               statuses: Mapping[str, Mapping[str, Any]] | None) -> ResourceList:
    """A container's requests or limits; with status resources, as `determineContainerReqs/Limits`."""
    spec_value = _resources(c, which)
    if statuses is None:
        return spec_value
    cs = statuses.get(str(c.get("name") or ""))
    actual = cs.get("resources") if cs is not None else None
    if not isinstance(actual, Mapping):
        return spec_value
    status_value = rl.parse(actual.get(which))
    infeasible = _resize_infeasible(pod)
    out: ResourceList = {} if infeasible else dict(spec_value)
    rl.max_into(out, status_value)
    if which == "requests" and cs is not None:
        rl.max_into(out, rl.parse(cs.get("allocatedResources")))
    return out


def _aggregate(pod: Mapping[str, Any], which: str, *, use_status: bool) -> ResourceList:
    spec = pod.get("spec") if isinstance(pod.get("spec"), Mapping) else {}
    assert isinstance(spec, Mapping)
    statuses = _statuses(pod) if use_status else None
    total: ResourceList = {}
    for c in _dicts(spec.get("containers")):
        rl.add_into(total, _effective(pod, c, which, statuses))
    sidecars: ResourceList = {}
    init_max: ResourceList = {}
    for c in _dicts(spec.get("initContainers")):
        sidecar = c.get("restartPolicy") == "Always"
        value = _effective(pod, c, which, statuses) if sidecar else _resources(c, which)
        if sidecar:
            rl.add_into(total, value)
            rl.add_into(sidecars, value)
            running = dict(sidecars)
        else:
            running = dict(value)
            rl.add_into(running, sidecars)
        rl.max_into(init_max, running)
    rl.max_into(total, init_max)
    return total


def pod_requests(pod: Mapping[str, Any], *, use_status: bool = False, overhead: bool = True,
                 pod_level_resources: bool = True) -> ResourceList:
    """`resource.PodRequests`."""
    reqs = _aggregate(pod, "requests", use_status=use_status)
    if pod_level_resources:
        reqs.update(pod_level(pod, "requests"))
    if overhead:
        spec = pod.get("spec")
        if isinstance(spec, Mapping):
            rl.add_into(reqs, rl.parse(spec.get("overhead")))
    return reqs


def pod_limits(pod: Mapping[str, Any], *, use_status: bool = False, overhead: bool = True,
               pod_level_resources: bool = True) -> ResourceList:
    """`resource.PodLimits`: overhead is added to the limits that are set and non-zero."""
    limits = _aggregate(pod, "limits", use_status=use_status)
    if pod_level_resources and is_pod_level_resources_set(pod):
        limits.update(pod_level(pod, "limits"))
    if overhead:
        spec = pod.get("spec")
        for name, q in rl.parse(spec.get("overhead") if isinstance(spec, Mapping) else None).items():
            have = limits.get(name)
            if have is not None and not have.is_zero():
                limits[name] = rl.plus(have, q)
    return limits
