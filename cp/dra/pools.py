"""Pool gathering: which resource pools (and devices) a node can use, in allocation order.

Follows `GatherPools` of the structured allocator:

1. candidate slices are those published for the node plus all slices without `nodeName`;
   without PartitionableDevices, slices with `perDeviceNodeSelection` or `sharedCounters` are
   skipped; a slice is relevant if its nodeName / allNodes / nodeSelector matches the node, or
   (per-device node selection) at least one of its devices does; slices with no known
   node-selection field are skipped;
2. slices are grouped by (driver, pool) keeping only the highest generation seen;
3. a pool is complete when it has `resourceSliceCount` slices; otherwise all slices of the pool
   are re-examined: a higher generation anywhere makes the pool obsolete (ignored), fewer
   slices than announced make it incomplete, otherwise it is complete (the extra slices only
   feed counter accounting);
4. complete pools are validated (duplicate device names, duplicate counter sets, consumption
   of unknown counter sets / counters) and marked invalid with a reason;
5. pools are ordered by driver then pool name, pools with binding conditions last; slices by
   name, those with binding conditions last; devices in slice order.
Pure; no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from cp.dra.model import DeviceInfo, SliceInfo
from cp.dra.nodeselector import NodeSelectorError, node_matches
from cp.quantity import Quantity, QuantityError

__all__ = ["GatherError", "Pool", "gather_pools"]


class GatherError(Exception):
    pass


class Pool:
    __slots__ = ("counter_sets", "driver", "has_binding_conditions", "id", "incomplete", "invalid",
                 "invalid_reason", "name", "slices", "slices_not_targeting")

    def __init__(self, driver: str, name: str) -> None:
        self.driver = driver
        self.name = name
        self.id = (driver, name)
        self.incomplete = False
        self.invalid = False
        self.invalid_reason = ""
        self.slices: list[SliceInfo] = []  # device slices relevant for the node, by name
        self.slices_not_targeting: list[SliceInfo] = []
        self.counter_sets: dict[str, dict[str, int]] = {}
        self.has_binding_conditions = False

    def __str__(self) -> str:
        return f"{self.driver}/{self.name}"

    def __repr__(self) -> str:
        flags = "incomplete" if self.incomplete else ("invalid: " + self.invalid_reason if self.invalid else "ok")
        return f"Pool({self}, {flags})"

    def devices(self) -> list[DeviceInfo]:
        return [d for s in self.slices for d in s.devices]


def _slice_matches(s: SliceInfo, node: Mapping[str, Any]) -> bool | None:
    """True/False if the slice is relevant for the node, None if it has no known node selection."""
    if s.node_name or s.all_nodes or s.node_selector is not None:
        try:
            return node_matches(node, s.node_name, s.all_nodes, s.node_selector)
        except NodeSelectorError as e:
            raise GatherError(f"failed to perform node selection for slice {s.name}: "
                              f"failed to parse node selector: {e}") from None
    if s.per_device:
        for d in s.devices:
            try:
                if node_matches(node, d.node_name, d.all_nodes, d.node_selector):
                    return True
            except NodeSelectorError as e:
                raise GatherError(f"failed to perform node selection for device {d.name} in slice "
                                  f"{s.name}: failed to parse node selector: {e}") from None
        return False
    return None


def gather_pools(
    *,
    node: Mapping[str, Any],
    slices_for_node: Sequence[SliceInfo],
    slices_for_pool: Callable[[tuple[str, str]], Sequence[SliceInfo]],
    partitionable_devices: bool,
) -> list[Pool]:
    """Gather the pools for one node. `slices_for_pool` returns every slice of a pool (any node)."""
    grouped: dict[tuple[str, str], list[SliceInfo]] = {}
    for s in slices_for_node:
        if not partitionable_devices and (s.per_device_set or s.shared_counters):
            continue
        relevant = _slice_matches(s, node)
        if not relevant:
            continue
        pid = (s.driver, s.pool_name)
        existing = grouped.get(pid)
        if existing is None:
            grouped[pid] = [s]
        elif s.generation < existing[0].generation:
            continue
        elif s.generation > existing[0].generation:
            grouped[pid] = [s]
        else:
            existing.append(s)

    result: list[Pool] = []
    with_binding: list[Pool] = []
    for pid, pool_slices in grouped.items():
        want = pool_slices[0].count
        generation = pool_slices[0].generation
        if len(pool_slices) == want:
            pool = _build_pool(pid, pool_slices, partitionable_devices, None)
        else:
            obsolete = False
            all_slices: list[SliceInfo] = []
            for s in slices_for_pool(pid):
                if s.generation == generation:
                    all_slices.append(s)
                elif s.generation > generation:
                    obsolete = True
                    break
            if obsolete:
                continue
            if len(all_slices) != want:
                pool = Pool(*pid)
                pool.incomplete = True
                result.append(pool)
                continue
            pool = _build_pool(pid, pool_slices, partitionable_devices, all_slices)
        if pool.has_binding_conditions:
            with_binding.append(pool)
        else:
            result.append(pool)
    result.sort(key=lambda p: p.id)
    with_binding.sort(key=lambda p: p.id)
    result.extend(with_binding)
    return result


def _build_pool(pid: tuple[str, str], pool_slices: list[SliceInfo], partitionable: bool,
                all_slices: list[SliceInfo] | None) -> Pool:
    pool = Pool(*pid)
    if len(pool_slices) > 1:
        pool_slices = sorted(pool_slices, key=lambda s: s.name)
    device_slices: list[SliceInfo] = []
    counter_slices: list[SliceInfo] = []
    for s in pool_slices:
        if partitionable and s.shared_counters:
            counter_slices.append(s)
        else:
            device_slices.append(s)
    not_targeting: list[SliceInfo] = []
    if all_slices is not None and len(pool_slices) < len(all_slices):
        targeting_names = {s.name for s in pool_slices}
        for s in all_slices:
            if s.name in targeting_names:
                continue
            if partitionable and s.shared_counters:
                counter_slices.append(s)
            else:
                not_targeting.append(s)

    if len(device_slices) == 1:
        if device_slices[0].duplicate_name is not None:
            return _invalid(pool, f"duplicate device name {device_slices[0].duplicate_name}")
    else:
        seen: set[str] = set()
        for s in device_slices:
            for d in s.devices:
                if d.name in seen:
                    return _invalid(pool, f"duplicate device name {d.name}")
                seen.add(d.name)
    pool.has_binding_conditions = any(s.has_binding_conditions for s in device_slices)
    if pool.has_binding_conditions and len(device_slices) > 1:
        # Within the pool too, slices with a device that has binding conditions come last.
        device_slices = ([s for s in device_slices if not s.has_binding_conditions]
                         + [s for s in device_slices if s.has_binding_conditions])
    pool.slices = device_slices
    if not partitionable:
        return pool

    counter_sets: dict[str, dict[str, int]] = {}
    for s in counter_slices:
        for cs in s.shared_counters:
            name = cs.get("name", "")
            if name in counter_sets:
                return _invalid(pool, f"duplicate counter set name {name}")
            counters: dict[str, int] = {}
            for cname, c in (cs.get("counters") or {}).items():
                try:
                    counters[cname] = Quantity.parse((c or {}).get("value", "0")).nanos
                except QuantityError:
                    counters[cname] = 0
            counter_sets[name] = counters
    for group in (device_slices, not_targeting):
        for s in group:
            if not s.consumes_counters:
                continue
            for d in s.devices:
                for set_name, counters in d.consumes:
                    cs_counters = counter_sets.get(set_name)
                    if cs_counters is None:
                        return _invalid(pool, f"counter set {set_name} not found")
                    for cname in counters:
                        if cname not in cs_counters:
                            return _invalid(pool, f"counter {cname} not found in counter set {set_name}")
    pool.slices_not_targeting = not_targeting
    pool.counter_sets = counter_sets
    return pool


def _invalid(pool: Pool, reason: str) -> Pool:
    out = Pool(pool.driver, pool.name)
    out.invalid = True
    out.invalid_reason = reason
    return out
