"""Internal, pre-digested views of ResourceSlices and their devices.

A `SliceInfo` is built once per slice version (and shared across allocator instances through the
`CelCache`, keyed by name, uid, generation and resourceVersion); it holds one `DeviceInfo` per
device with parsed quantities, counter consumption, node selection and the device's CEL view.
Nothing here depends on the node, the claims or the allocated state. Pure; no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cp.dra.celenv import CelDevice
from cp.quantity import Quantity, QuantityError

__all__ = [
    "CapInfo",
    "DeviceID",
    "DeviceInfo",
    "SliceInfo",
    "device_id_str",
    "slice_cache_key",
    "tolerates_taint",
]

DeviceID = tuple[str, str, str]  # (driver, pool, device)


def device_id_str(did: DeviceID) -> str:
    return f"{did[0]}/{did[1]}/{did[2]}"


def _q(value: Any, what: str) -> Quantity:
    try:
        return Quantity.parse(value) if isinstance(value, str) else Quantity.parse(str(value))
    except QuantityError as e:
        raise ValueError(f"{what}: {e}") from None


class CapInfo:
    """One device capacity: its value and request policy."""

    __slots__ = ("default", "has_policy", "has_range", "range_max", "range_min", "range_step",
                 "valid_values", "value")

    def __init__(self, raw: Mapping[str, Any], what: str) -> None:
        self.value = _q(raw.get("value", "0"), what)
        policy = raw.get("requestPolicy")
        self.default: Quantity | None = None
        self.valid_values: list[Quantity] | None = None
        self.range_min: Quantity | None = None
        self.range_max: Quantity | None = None
        self.range_step: Quantity | None = None
        self.has_range = False
        self.has_policy = False
        if policy:
            if policy.get("default") is not None:
                self.default = _q(policy["default"], what)
            if policy.get("validValues") is not None:
                self.valid_values = [_q(v, what) for v in policy["validValues"]]
            rng = policy.get("validRange")
            if rng is not None:
                self.has_range = True
                if rng.get("min") is not None:
                    self.range_min = _q(rng["min"], what)
                if rng.get("max") is not None:
                    self.range_max = _q(rng["max"], what)
                if rng.get("step") is not None:
                    self.range_step = _q(rng["step"], what)
        self.has_policy = policy is not None


class DeviceInfo:
    """One device. Only the identity is computed eagerly; everything else is parsed from the raw
    device on first access (most devices of a node are never looked at beyond "in use?")."""

    __slots__ = (
        "all_nodes", "allow_multi", "attributes", "binding_conditions", "binding_failure_conditions",
        "binds_to_node", "capacity", "capacity_error", "cel", "consumes", "driver", "id", "name",
        "node_name", "node_selector", "raw", "slice", "taints",
    )

    raw: Mapping[str, Any]
    slice: SliceInfo
    name: str
    driver: str
    id: DeviceID
    cel: CelDevice | None
    attributes: Mapping[str, Any]
    capacity: dict[str, CapInfo]
    capacity_error: str | None
    consumes: list[tuple[str, dict[str, int]]]
    taints: list[Mapping[str, Any]]
    binding_conditions: list[str]
    binding_failure_conditions: list[str]
    allow_multi: bool
    binds_to_node: bool
    node_name: str
    all_nodes: bool
    node_selector: Mapping[str, Any] | None

    def __init__(self, raw: Mapping[str, Any], slice_: SliceInfo) -> None:
        self.raw = raw
        self.slice = slice_
        self.name = raw.get("name", "")
        self.driver = slice_.driver
        self.id = (slice_.driver, slice_.pool_name, self.name)
        self.cel = None

    def __getattr__(self, attr: str) -> Any:
        if attr in _LAZY:
            self._load()
            return object.__getattribute__(self, attr)
        raise AttributeError(attr)

    def _load(self) -> None:
        raw = self.raw
        self.attributes = raw.get("attributes") or {}
        capacity: dict[str, CapInfo] = {}
        self.capacity_error = None
        for name, cap in (raw.get("capacity") or {}).items():
            try:
                capacity[name] = CapInfo(cap or {}, f"capacity {name}")
            except ValueError as e:
                self.capacity_error = str(e)
        self.capacity = capacity
        consumes: list[tuple[str, dict[str, int]]] = []
        for cc in raw.get("consumesCounters") or []:
            counters: dict[str, int] = {}
            for cname, c in (cc.get("counters") or {}).items():
                try:
                    counters[cname] = _q((c or {}).get("value", "0"), f"counter {cname}").nanos
                except ValueError:
                    counters[cname] = 0
            consumes.append((cc.get("counterSet", ""), counters))
        self.consumes = consumes
        self.taints = list(raw.get("taints") or [])
        self.binding_conditions = list(raw.get("bindingConditions") or [])
        self.binding_failure_conditions = list(raw.get("bindingFailureConditions") or [])
        self.allow_multi = bool(raw.get("allowMultipleAllocations"))
        self.binds_to_node = bool(raw.get("bindsToNode"))
        self.node_name = raw.get("nodeName") or ""
        self.all_nodes = bool(raw.get("allNodes"))
        self.node_selector = raw.get("nodeSelector")

    def cel_device(self) -> CelDevice:
        d = self.cel
        if d is None:
            d = self.cel = CelDevice(driver=self.driver, attributes=self.raw.get("attributes"),
                                     capacity=self.raw.get("capacity"),
                                     allow_multiple_allocations=bool(self.raw.get("allowMultipleAllocations")))
        return d

    def __repr__(self) -> str:
        return f"DeviceInfo({device_id_str(self.id)})"


_LAZY = frozenset({
    "all_nodes", "allow_multi", "attributes", "binding_conditions", "binding_failure_conditions",
    "binds_to_node", "capacity", "capacity_error", "consumes", "node_name", "node_selector", "taints",
})


class SliceInfo:
    __slots__ = (
        "all_nodes", "consumes_counters", "count", "devices", "driver", "duplicate_name", "generation", "has_binding_conditions", "name",
        "node_name", "node_selector", "per_device", "per_device_set", "pool_name", "raw",
        "shared_counters",
    )

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.raw = raw
        meta = raw.get("metadata") or {}
        spec = raw.get("spec") or {}
        pool = spec.get("pool") or {}
        self.name: str = meta.get("name", "")
        self.driver: str = spec.get("driver", "")
        self.pool_name: str = pool.get("name", "")
        self.generation: int = int(pool.get("generation") or 0)
        self.count: int = int(pool.get("resourceSliceCount") or 0)
        self.node_name: str = spec.get("nodeName") or ""
        self.all_nodes = bool(spec.get("allNodes"))
        self.node_selector: Mapping[str, Any] | None = spec.get("nodeSelector")
        self.per_device_set = spec.get("perDeviceNodeSelection") is not None
        self.per_device = bool(spec.get("perDeviceNodeSelection"))
        self.shared_counters: list[Mapping[str, Any]] = list(spec.get("sharedCounters") or [])
        self.devices: list[DeviceInfo] = [DeviceInfo(d, self) for d in spec.get("devices") or []]
        self.consumes_counters = any(d.raw.get("consumesCounters") for d in self.devices)
        seen: set[str] = set()
        self.duplicate_name: str | None = None
        for d in self.devices:
            if d.name in seen:
                self.duplicate_name = d.name
                break
            seen.add(d.name)
        self.has_binding_conditions = any(
            d.raw.get("bindingConditions") is not None for d in self.devices)

    def __repr__(self) -> str:
        return f"SliceInfo({self.name})"


def slice_cache_key(raw: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """A key that changes whenever the slice may have changed, or None if the object carries no
    version information at all (then it is not cached across allocator instances)."""
    meta = raw.get("metadata") or {}
    uid, gen, rv = meta.get("uid"), meta.get("generation"), meta.get("resourceVersion")
    if uid is None and gen is None and rv is None:
        return None
    return (meta.get("name"), uid, gen, rv)


def tolerates_taint(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """`resourceclaim.ToleratesTaint`."""
    effect = toleration.get("effect") or ""
    if effect and effect != (taint.get("effect") or ""):
        return False
    key = toleration.get("key") or ""
    if key and key != (taint.get("key") or ""):
        return False
    op = toleration.get("operator") or ""
    if op in ("", "Equal"):
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return op == "Exists"
