"""What a ResourcePoolStatusRequest reports (resource.k8s.io/v1alpha3, KEP-5677, gate
DRAResourcePoolStatus): the status kube-controller-manager's `resourcepoolstatusrequest-controller`
computes from the ResourceSlices, ResourceClaims and DeviceTaintRules it sees.

Read from upstream (`pkg/controller/resourcepoolstatusrequest`, the KEP's "Controller Implementation"),
written here:

- **Pools**: slices of `spec.driver` (and of `spec.poolName` when given), grouped by pool; only the
  slices of a pool's highest `pool.generation` count. `resourceSliceCount` is the number of them,
  `totalDevices` their devices, `nodeName` the slices' node when they all name the same one.
- **Incomplete pools**: fewer slices at that generation than the first one's `pool.resourceSliceCount`
  get a `validationError` starting `PoolIncomplete:` and no counts; the controller then writes nothing
  and tries again later (`incomplete`).
- **allocatedDevices**: the distinct devices of the pool named by allocation results of any claim, a
  device counted once however many claims share it; `adminAccess` results are skipped.
- **unavailableDevices**: devices with a `NoSchedule` or `NoExecute` taint of their own or from a
  DeviceTaintRule whose selector names their driver, pool and device where it names them (a rule
  without selector matches nothing; CEL selectors are not looked at); rules count only while
  DRADeviceTaintRules is on.
- **availableDevices** = total - allocated - unavailable, never below 0 (a device both allocated and
  tainted is subtracted twice, as upstream).
- **shareableSummary** for pools with devices that allow multiple allocations: those devices without
  any allocation (`fullyAvailableDevices`) and with one (`partiallyAvailableDevices`), and per capacity
  name their total, what allocations consumed (`consumedCapacity` of the pool's results) and what is
  left (never negative). More than 32 capacity names is a `ShareableSummaryOverCap:` error instead.
- **partitionSummary** (DRAPartitionableDevicesType, `partition_types`) for a pool that publishes
  shared counters: its devices that consume counters, grouped by (attribute, value) where the attribute
  is their slice's `partitionTypeAttribute`, else the request's `defaultPartitionTypeAttribute` (a
  device without that string attribute, or with no attribute named, is in no group); per group `total`
  (its devices) and `allocatable`: how many more of them could be allocated — its devices neither
  allocated nor unavailable, and no more than the counters left (the counter sets' values less what
  allocated devices consume) cover at the group's cost (its first device's `consumesCounters`; devices
  of one type share one cost). Sorted by attribute then type; more than 32 groups is a
  `PartitionSummaryOverCap:` error instead.
- Pools sorted by driver then name; `poolCount` all of them, `pools` the first `spec.limit` (100
  by default); one `Complete` condition (reason `CalculationComplete`, `Calculated status for N pools`,
  with ` (M incomplete)` when M of them carry a validation error).

Pure: objects in, the status dict out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from cp.quantity import Quantity, QuantityError, parse_quantity

DEFAULT_LIMIT = 100  # ResourcePoolStatusRequestLimitDefault
MAX_LIMIT = 1000  # ResourcePoolStatusRequestLimitMax
MAX_SUMMARY_ITEMS = 32  # +k8s:maxItems of partitionSummary and shareableSummary.capacity
MAX_VALIDATION_ERROR = 256  # +k8s:maxBytes of a pool's validationError
COMPLETE = "Complete"
FAILED = "Failed"
INCOMPLETE_PREFIX = "PoolIncomplete:"
SHAREABLE_OVER_CAP_PREFIX = "ShareableSummaryOverCap:"
PARTITION_OVER_CAP_PREFIX = "PartitionSummaryOverCap:"
_UNAVAILABLE_EFFECTS = ("NoSchedule", "NoExecute")


class Computed(msgspec.Struct, frozen=True, kw_only=True):
    """The status to write, and whether a pool was still incomplete (then nothing is written yet)."""

    status: dict[str, Any]
    incomplete: bool


class _Pool:
    __slots__ = ("counter_sets", "devices", "driver", "expected", "generation", "mixed_nodes", "name", "node",
                 "slices", "type_attributes", "unavailable", "unavailable_names")

    def __init__(self, *, driver: str, name: str, generation: int, node: str, expected: int) -> None:
        self.driver = driver
        self.name = name
        self.generation = generation
        self.node = node
        self.mixed_nodes = False
        self.expected = expected
        self.slices = 0
        self.unavailable = 0
        self.unavailable_names: set[str] = set()
        self.devices: list[Mapping[str, Any]] = []
        self.type_attributes: list[str] = []  # per device: its slice's partitionTypeAttribute, or ""
        self.counter_sets: dict[str, dict[str, int]] = {}  # shared counter set -> counter -> nanos


def _d(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _rule_makes_unavailable(rule: Mapping[str, Any], driver: str, pool: str, device: str) -> bool:
    spec = _d(rule.get("spec"))
    if _d(spec.get("taint")).get("effect") not in _UNAVAILABLE_EFFECTS:
        return False
    selector = spec.get("deviceSelector")
    if not isinstance(selector, Mapping):
        return False  # a rule without selector makes nothing unavailable here
    return all(selector.get(field) is None or selector.get(field) == value
               for field, value in (("driver", driver), ("pool", pool), ("device", device)))


def _unavailable(device: Mapping[str, Any], driver: str, pool: str, rules: list[Mapping[str, Any]]) -> bool:
    for taint in device.get("taints") or ():
        if _d(taint).get("effect") in _UNAVAILABLE_EFFECTS:
            return True
    name = str(device.get("name") or "")
    return any(_rule_makes_unavailable(rule, driver, pool, name) for rule in rules)


def _quantity(value: Any) -> Quantity | None:
    try:
        return parse_quantity(value)
    except (QuantityError, TypeError, ValueError):
        return None


def _plus(total: Quantity | None, value: Quantity) -> Quantity:
    """Go's `Quantity.Add` onto a zero Quantity: the first value's format wins."""
    return value.copy() if total is None else total.add(value)


def _truncate(message: str) -> str:
    data = message.encode()
    return data[:MAX_VALIDATION_ERROR].decode(errors="ignore") if len(data) > MAX_VALIDATION_ERROR else message


def _shareable_summary(pool: _Pool, in_use: set[str],
                       consumed: Mapping[str, Quantity]) -> tuple[dict[str, Any] | None, str]:
    full = partial = 0
    totals: dict[str, Quantity] = {}
    shareable = False
    for device in pool.devices:
        if device.get("allowMultipleAllocations") is not True:
            continue
        shareable = True
        if str(device.get("name") or "") in in_use:
            partial += 1
        else:
            full += 1
        for name, capacity in _d(device.get("capacity")).items():
            value = _quantity(_d(capacity).get("value"))
            if value is not None:
                totals[name] = _plus(totals.get(name), value)
    if not shareable:
        return None, ""
    if len(totals) > MAX_SUMMARY_ITEMS:
        return None, (f"{SHAREABLE_OVER_CAP_PREFIX} pool {pool.driver}/{pool.name} has {len(totals)} shareable "
                      f"capacity keys, exceeding the maximum of {MAX_SUMMARY_ITEMS}")
    capacities = []
    for name in sorted(totals):
        total = totals[name]
        used = consumed.get(name)
        left = total if used is None else total.sub(used)
        if left.sign() < 0:
            left = Quantity(0, total.format)
        capacities.append({"name": name, "total": total.canonical(),
                           "consumed": "0" if used is None else used.canonical(), "available": left.canonical()})
    summary: dict[str, Any] = {"fullyAvailableDevices": full, "partiallyAvailableDevices": partial}
    if capacities:
        summary["capacity"] = capacities
    return summary, ""


def _counter_values(counters: Any) -> dict[str, int]:
    """A `counters` map (name -> {value}) in nano units (an unreadable value counts 0)."""
    out: dict[str, int] = {}
    for name, counter in _d(counters).items():
        value = _quantity(_d(counter).get("value"))
        out[name] = value.nanos if value is not None else 0
    return out


def _cost(device: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    cost: dict[str, dict[str, int]] = {}
    for consumption in device.get("consumesCounters") or ():
        consumption = _d(consumption)
        counters = cost.setdefault(str(consumption.get("counterSet") or ""), {})
        for name, nanos in _counter_values(consumption.get("counters")).items():
            counters[name] = counters.get(name, 0) + nanos
    return cost


def _type_of(device: Mapping[str, Any], attribute: str, driver: str) -> str | None:
    attributes = _d(device.get("attributes"))
    value = attributes.get(attribute)
    if value is None and attribute.startswith(driver + "/"):
        value = attributes.get(attribute[len(driver) + 1:])
    text = _d(value).get("string")
    return text if isinstance(text, str) else None


def _partition_summary(pool: _Pool, in_use: set[str], default: str) -> tuple[list[dict[str, Any]] | None, str]:
    if not pool.counter_sets:
        return None, ""
    left = {name: dict(counters) for name, counters in pool.counter_sets.items()}
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for device, own in zip(pool.devices, pool.type_attributes, strict=True):
        if not device.get("consumesCounters"):
            continue
        if str(device.get("name") or "") in in_use:
            for set_name, counters in _cost(device).items():
                for cname, nanos in counters.items():
                    if set_name in left and cname in left[set_name]:
                        left[set_name][cname] -= nanos
        attribute = own or default
        kind = _type_of(device, attribute, pool.driver) if attribute else None
        if kind is not None:
            groups.setdefault((attribute, kind), []).append(device)
    if not groups:
        return None, ""
    if len(groups) > MAX_SUMMARY_ITEMS:
        return None, (f"{PARTITION_OVER_CAP_PREFIX} pool {pool.driver}/{pool.name} has {len(groups)} partition "
                      f"types, exceeding the maximum of {MAX_SUMMARY_ITEMS}")
    entries = []
    for (attribute, kind), devices in sorted(groups.items()):
        free = sum(1 for d in devices if str(d.get("name") or "") not in in_use
                   and str(d.get("name") or "") not in pool.unavailable_names)
        for set_name, counters in _cost(devices[0]).items():
            for cname, nanos in counters.items():
                if nanos > 0:
                    free = min(free, max(0, left.get(set_name, {}).get(cname, 0)) // nanos)
        entries.append({"attribute": attribute, "type": kind, "total": len(devices), "allocatable": free})
    return entries, ""


def compute(request: Mapping[str, Any], *, slices: Iterable[Mapping[str, Any]],
            claims: Iterable[Mapping[str, Any]], taint_rules: Iterable[Mapping[str, Any]] = (),
            now: str, partition_types: bool = False) -> Computed:
    """The status of `request` from the cluster's `slices`, `claims` and `taint_rules` (pass none
    while DRADeviceTaintRules is off); `now` (RFC 3339) is the condition's time; `partition_types`:
    DRAPartitionableDevicesType is on (partition summaries)."""
    spec = _d(request.get("spec"))
    driver = str(spec.get("driver") or "")
    pool_filter = spec.get("poolName")
    limit = spec.get("limit")
    limit = limit if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0 else DEFAULT_LIMIT
    rules = [r for r in taint_rules if isinstance(r, Mapping)]

    chosen = [s for s in (_d(x.get("spec")) for x in slices)
              if s.get("driver") == driver and (not pool_filter or _d(s.get("pool")).get("name") == pool_filter)]
    newest: dict[str, int] = {}
    for s in chosen:
        pool = _d(s.get("pool"))
        name = str(pool.get("name") or "")
        newest[name] = max(newest.get(name, _int(pool.get("generation"))), _int(pool.get("generation")))
    pools: dict[str, _Pool] = {}
    for s in chosen:
        ref = _d(s.get("pool"))
        name = str(ref.get("name") or "")
        if _int(ref.get("generation")) < newest[name]:
            continue  # an older generation's slice
        node = str(s.get("nodeName") or "")
        info = pools.get(name)
        if info is None:
            info = pools[name] = _Pool(driver=driver, name=name, generation=newest[name], node=node,
                                       expected=_int(ref.get("resourceSliceCount")))
        elif node != info.node:
            info.mixed_nodes = True
        info.slices += 1
        for counter_set in s.get("sharedCounters") or ():
            counter_set = _d(counter_set)
            info.counter_sets.setdefault(str(counter_set.get("name") or ""), {}).update(
                _counter_values(counter_set.get("counters")))
        for device in s.get("devices") or ():
            device = _d(device)
            info.devices.append(device)
            info.type_attributes.append(str(s.get("partitionTypeAttribute") or ""))
            if _unavailable(device, driver, name, rules):
                info.unavailable += 1
                info.unavailable_names.add(str(device.get("name") or ""))

    in_use: dict[str, set[str]] = {}
    consumed: dict[str, dict[str, Quantity]] = {}
    for claim in claims:
        allocation = _d(_d(claim.get("status")).get("allocation"))
        for result in _d(allocation.get("devices")).get("results") or ():
            result = _d(result)
            if result.get("adminAccess") is True or result.get("driver") != driver:
                continue
            pool_name = str(result.get("pool") or "")
            in_use.setdefault(pool_name, set()).add(str(result.get("device") or ""))
            for cap_name, amount in _d(result.get("consumedCapacity")).items():
                value = _quantity(amount)
                if value is not None:
                    per_pool = consumed.setdefault(pool_name, {})
                    per_pool[cap_name] = _plus(per_pool.get(cap_name), value)

    out: list[dict[str, Any]] = []
    incomplete = False
    for name in sorted(pools):
        info = pools[name]
        entry: dict[str, Any] = {"driver": info.driver, "poolName": info.name, "generation": info.generation}
        if info.node and not info.mixed_nodes:
            entry["nodeName"] = info.node
        if info.slices < info.expected:
            incomplete = True
            entry["validationError"] = _truncate(
                f"{INCOMPLETE_PREFIX} pool {info.driver}/{info.name} is incomplete: observed "
                f"{info.slices}/{info.expected} slices at generation {info.generation}")
            out.append(entry)
            continue
        used = in_use.get(name, set())
        total, allocated = len(info.devices), len(used)
        entry.update(resourceSliceCount=info.slices, totalDevices=total, allocatedDevices=allocated,
                     availableDevices=max(0, total - allocated - info.unavailable),
                     unavailableDevices=info.unavailable)
        if partition_types:
            partitions, error = _partition_summary(info, used, str(spec.get("defaultPartitionTypeAttribute") or ""))
            if partitions is not None:
                entry["partitionSummary"] = partitions
            if error:
                entry["validationError"] = _truncate(error)
        summary, error = _shareable_summary(info, used, consumed.get(name, {}))
        if summary is not None:
            entry["shareableSummary"] = summary
        if error:
            entry["validationError"] = _truncate(error)
        out.append(entry)

    shown = out[:limit]
    flagged = sum(1 for p in shown if "validationError" in p)
    message = f"Calculated status for {len(shown)} pools"
    if flagged:
        message += f" ({flagged} incomplete)"
    status: dict[str, Any] = {"poolCount": len(out)}
    if shown:
        status["pools"] = shown
    status["conditions"] = [{"type": COMPLETE, "status": "True", "lastTransitionTime": now,
                             "reason": "CalculationComplete", "message": message}]
    return Computed(status=status, incomplete=incomplete)


def failed(message: str, *, now: str) -> dict[str, Any]:
    """The status of a request that could not be computed (a list of slices, claims or rules failed)."""
    return {"poolCount": 0, "conditions": [{"type": FAILED, "status": "True", "lastTransitionTime": now,
                                            "reason": "CalculationFailed", "message": message}]}
