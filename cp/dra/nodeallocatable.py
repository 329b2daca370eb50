"""DRA node allocatable resources (KEP-5517, alpha gate DRANodeAllocatableResources): what the
devices allocated to a pod's claims take of the node's cpu, memory, ephemeral storage and hugepages,
as kube-scheduler 1.37's DynamicResources plugin computes it (`nodeallocatabledynamicresources.go`)
and component-helpers' `PodRequests` adds it to a pod's requests. Pure.

A device's `nodeAllocatableResources` maps a resource name to
- a `mapping`: `deviceMultiplier` per allocated device, or the claim's `consumedCapacity` of
  `capacityKey` times `capacityMultiplier` (a capacity the allocation did not consume adds
  nothing); summed over the claim's devices into one quantity per resource;
- an `overhead`: `perPod` and `perContainer`, summed over the claim's devices.

`claim_statuses` gives `pod.status.nodeAllocatableResourceClaimStatuses` (one entry per claim
with such a device, by claim name, with the containers referencing the claim, init containers
first); `requests` what those entries add to the pod's requests: each mapping once, each
overhead's `perPod` once plus `perContainer` once per container listed (a claim shared by several
containers counts once; a claim no container references counts too).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from cp import podresources, resourcelists
from cp.quantity import Quantity, QuantityError, parse_quantity

DeviceLookup = Callable[[str, str, str], Mapping[str, Any] | None]  # (driver, pool, device) -> device

_NANO = 10**9


class FootprintError(ValueError):
    """An allocation the mapping cannot be computed for (a capacity key without consumed capacity)."""


def _q(value: Any) -> Quantity | None:
    if value is None:
        return None
    try:
        return parse_quantity(value)
    except QuantityError:
        return None


def _times(q: Quantity, multiplier: Quantity) -> Quantity:
    """q times multiplier in q's format (rounded up to the nano, as a Quantity holds it)."""
    product = q.nanos * multiplier.nanos
    return Quantity(-((-product) // _NANO), q.format)  # the ceiling


def has_mapping(device: Mapping[str, Any] | None) -> bool:
    """The device maps itself onto a node resource (a `mapping`, not only an overhead): a claim
    holding it cannot be shared by several pods."""
    resources = (device or {}).get("nodeAllocatableResources")
    return isinstance(resources, Mapping) and any(
        isinstance(e, Mapping) and e.get("mapping") is not None for e in resources.values())


def _lookup_capacity(consumed: Mapping[str, Any], key: str, driver: str) -> Any:
    """`draapi.LookupByQualifiedName`: the key as written, or with / without the driver's domain."""
    if key in consumed:
        return consumed[key]
    if "/" not in key:
        return consumed.get(f"{driver}/{key}")
    domain, _, name = key.partition("/")
    return consumed.get(name) if domain == driver else None


def _pod_claim_refs(pod: Mapping[str, Any]) -> dict[str, list[str]]:
    """claim name -> the `spec.resourceClaims[].name`s that resolve to it."""
    generated = {str(s.get("name")): s.get("resourceClaimName")
                 for s in ((pod.get("status") or {}).get("resourceClaimStatuses") or []) if isinstance(s, Mapping)}
    refs: dict[str, list[str]] = {}
    for rc in ((pod.get("spec") or {}).get("resourceClaims") or []):
        if not isinstance(rc, Mapping):
            continue
        name = rc.get("resourceClaimName") or generated.get(str(rc.get("name")))
        if name:
            refs.setdefault(str(name), []).append(str(rc.get("name")))
    return refs


def claim_statuses(*, pod: Mapping[str, Any], claims: Sequence[tuple[Mapping[str, Any], Mapping[str, Any] | None]],
                   device: DeviceLookup) -> list[dict[str, Any]]:
    """`buildNodeAllocatableDRAInfo`: the pod's `nodeAllocatableResourceClaimStatuses` for its
    claims (each with the allocation it has or is about to get). Raises FootprintError."""
    refs = _pod_claim_refs(pod)
    spec = pod.get("spec") or {}
    out: list[dict[str, Any]] = []
    for claim, alloc in claims:
        if not isinstance(alloc, Mapping):
            continue
        meta = claim.get("metadata") or {}
        name = str(meta.get("name") or "")
        mapped: dict[str, Quantity] = {}
        overheads: dict[str, dict[str, Quantity]] = {}
        for result in ((alloc.get("devices") or {}).get("results") or []):
            driver = str(result.get("driver") or "")
            dev = device(driver, str(result.get("pool") or ""), str(result.get("device") or ""))
            resources = (dev or {}).get("nodeAllocatableResources")
            if not isinstance(resources, Mapping):
                continue
            for resource in sorted(resources):
                entry = resources[resource]
                if not isinstance(entry, Mapping):
                    continue
                mapping = entry.get("mapping")
                if isinstance(mapping, Mapping):
                    _add_mapping(mapped, resource, mapping, result, driver, name)
                overhead = entry.get("overhead")
                if isinstance(overhead, Mapping):
                    for part in ("perPod", "perContainer"):
                        q = _q(overhead.get(part))
                        if q is not None:
                            have = overheads.setdefault(resource, {})
                            have[part] = q if part not in have else resourcelists.plus(have[part], q)
        if not mapped and not overheads:
            continue
        status: dict[str, Any] = {"resourceClaimName": name}
        ref_names = set(refs.get(name, ()))
        containers: list[str] = []
        for group in ("initContainers", "containers"):
            for c in spec.get(group) or ():
                cname = str(c.get("name") or "")
                if cname not in containers and any(
                        isinstance(r, Mapping) and r.get("name") in ref_names
                        for r in ((c.get("resources") or {}).get("claims") or ())):
                    containers.append(cname)
        if containers:
            status["containers"] = containers
        if mapped:
            status["mapping"] = [{"name": r, "quantity": mapped[r].canonical()} for r in sorted(mapped)]
        if overheads:
            status["overhead"] = [{"name": r, **{part: q.canonical() for part, q in overheads[r].items()}}
                                  for r in sorted(overheads)]
        out.append(status)
    out.sort(key=lambda s: str(s["resourceClaimName"]))
    return out


def _add_mapping(totals: dict[str, Quantity], resource: str, mapping: Mapping[str, Any], result: Mapping[str, Any],
                 driver: str, claim_name: str) -> None:
    key = mapping.get("capacityKey")
    if key:
        consumed = result.get("consumedCapacity")
        if not isinstance(consumed, Mapping):
            raise FootprintError(
                f"claim {claim_name}, device {result.get('device')}: ConsumedCapacity is nil, but Capacity key "
                f"'{key}' is set in NodeAllocatableResources for resource {resource}")
        q = _q(_lookup_capacity(consumed, str(key), driver))
        if q is None:
            return  # not consumed by this allocation: the mapping does not apply
        multiplier = _q(mapping.get("capacityMultiplier"))
        if multiplier is not None and multiplier.nanos != _NANO:
            q = _times(q, multiplier)
    else:
        multiplier = _q(mapping.get("deviceMultiplier"))
        if multiplier is None:
            return
        q = multiplier
    have = totals.get(resource)
    totals[resource] = q if have is None else resourcelists.plus(have, q)


def _claim_amounts(status: Mapping[str, Any], *, per_container_times: int) -> dict[str, Quantity]:
    out: dict[str, Quantity] = {}

    def add(name: str, q: Quantity) -> None:
        have = out.get(name)
        out[name] = q if have is None else resourcelists.plus(have, q)

    for m in status.get("mapping") or ():
        q = _q(m.get("quantity")) if isinstance(m, Mapping) else None
        if q is not None:
            add(str(m.get("name")), q)
    for o in status.get("overhead") or ():
        if not isinstance(o, Mapping):
            continue
        amount = Quantity(0)
        per_pod = _q(o.get("perPod"))
        if per_pod is not None:
            amount = resourcelists.plus(amount, per_pod)
        per_container = _q(o.get("perContainer"))
        if per_container is not None and per_container_times:
            amount = resourcelists.plus(amount, Quantity(per_container.nanos * per_container_times,
                                                         per_container.format))
        add(str(o.get("name")), amount)
    return out


def requests(statuses: Sequence[Any]) -> dict[str, Quantity]:
    """`addDRANodeAllocatableClaimResources`: what the statuses add to the pod's requests."""
    out: dict[str, Quantity] = {}
    for status in statuses:
        if isinstance(status, Mapping):
            resourcelists.add_into(out, _claim_amounts(status, per_container_times=len(status.get("containers") or ())))
    return out


def container_allocations(statuses: Sequence[Any], container: str) -> dict[str, Quantity]:
    """`GetContainerDRAAllocations`: the mappings and overheads (`perPod` + `perContainer`) of the
    claims a container references."""
    out: dict[str, Quantity] = {}
    for status in statuses:
        if isinstance(status, Mapping) and container in (status.get("containers") or ()):
            resourcelists.add_into(out, _claim_amounts(status, per_container_times=1))
    return out


def pod_level_shortfall(pod: Mapping[str, Any], statuses: Sequence[Any]) -> str | None:
    """`validatePodLevelResourcesCoverDRA`: with pod-level resources, the containers' requests plus
    what the claims add must fit the pod-level requests; the containers' hugepage limits plus the
    claims' hugepages the pod-level hugepage limits; and each container's limit plus what its claims
    add, the pod-level limit. The first shortfall's reason (UnschedulableAndUnresolvable), or None."""
    resources = (pod.get("spec") or {}).get("resources")
    if not statuses or not isinstance(resources, Mapping):
        return None
    dra = requests(statuses)
    if resources.get("requests") is not None:
        total = podresources.pod_requests(pod, overhead=False, pod_level_resources=False)
        resourcelists.add_into(total, dra)
        pod_requests = podresources.pod_level(pod, "requests")
        for name in sorted(pod_requests):
            have = total.get(name)
            if have is not None and have.cmp(pod_requests[name]) > 0:
                return (f"pod level request for {name} is insufficient to cover the aggregated container and "
                        "node-allocatable DRA requests")
    if resources.get("limits") is not None:
        pod_limits = resourcelists.parse(resources.get("limits"))
        limits = podresources.pod_limits(pod, overhead=False, pod_level_resources=False)
        for name in sorted(pod_limits):
            if not name.startswith(podresources.HUGEPAGES_PREFIX):
                continue
            have = limits.get(name)
            if name in dra:
                have = dra[name] if have is None else resourcelists.plus(have, dra[name])
            if have is not None and have.cmp(pod_limits[name]) > 0:
                return (f"pod level limit for {name} is insufficient to cover the aggregated container and "
                        "node-allocatable DRA limits")
        for c in (pod.get("spec") or {}).get("containers") or ():
            cname = str(c.get("name") or "")
            own = container_allocations(statuses, cname)
            for name, limit in sorted(resourcelists.parse((c.get("resources") or {}).get("limits")).items()):
                if name.startswith(podresources.HUGEPAGES_PREFIX) or name not in pod_limits:
                    continue
                effective = resourcelists.plus(limit, own[name]) if name in own else limit
                if effective.cmp(pod_limits[name]) > 0:
                    return (f"pod level limit for {name} is insufficient to cover the limit and DRA overhead for "
                            f"container {cname}")
    return None
