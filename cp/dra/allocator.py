"""The structured-parameters device allocator (what the kube-scheduler DRA plugin runs per node).

Behaviour follows `k8s.io/dynamic-resource-allocation/structured` (the variant used when all
features are enabled, `internal/experimental`), so that for the same cluster state the same
devices are picked in the same order:

- `Allocator(slices=…, classes=…, allocated=…)` is built once per scheduling cycle; `allocate(
  node=…, claims=…)` runs per node and returns one AllocationResult dict per claim, `None` when
  the claims cannot be allocated on that node, or raises `AllocationError` (fatal for the pod),
  `NodeAllocationError` (only this node: invalid pools were seen and nothing fit) or
  `AllocationTimeout` (the deadline passed; checked on every recursion step);
- pools are gathered per node (see `pools.py`); per claim, each request (or each subrequest of a
  `firstAvailable` request) is validated and sized; then a depth-first search over claims →
  requests → device slots picks the first complete solution. Within one request only
  combinations are tried (each slot looks only after the previous slot's device); a request
  with subrequests tries them in order and the first that leads to a solution of *everything
  that follows* wins; the 32-results-per-claim limit is detected early and makes the search move
  on to smaller subrequests;
- candidate checks: in use (admin access: only same-claim picks block), selectable (class then
  request CEL selectors, per-device node selection, binding conditions only with
  DeviceBindingAndStatus), consumable capacity, then `allocate_device`: in use again, shared
  counters, taints vs. tolerations, claim constraints, and recording (multi-allocatable devices
  get a fresh share id and their consumed capacity);
- every reservation made for a candidate is undone when the candidate is rejected or
  backtracked (counters, constraints, in-use marks, capacity), as upstream does since
  kubernetes/kubernetes#140431; allow-multiple devices with a persisted share skip the counter
  check (#140437), and a dedicated allocation is refused over a live share (#140798).

Deviations (documented in `README.md` next to this file): an optional pruning step (`prune=True`)
abandons a request's search as soon as fewer already-evaluated candidate devices remain than
slots to fill; it never changes the outcome, only the work done (disable it to get upstream's
exact `allocate_one` invocation counts). Pure; no I/O.

One module on purpose, over the ~800 lines the project allows: the search, its candidate checks and
the undo of every reservation share one mutable state per `allocate()` call and are read together
against upstream's `allocator.go`; split, each half would only make sense beside the other.
"""

from __future__ import annotations

import bisect
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

import msgspec

from cp import features as feature_names
from cp.dra.celenv import SKEY, CelCache, CelError, CompiledExpression
from cp.dra.constraints import Constraint, DistinctAttributeConstraint, MatchAttributeConstraint
from cp.dra.model import (
    CapInfo,
    DeviceID,
    DeviceInfo,
    SliceInfo,
    device_id_str,
    slice_cache_key,
    tolerates_taint,
)
from cp.dra.nodeselector import NodeSelectorError, node_matches
from cp.dra.pools import GatherError, Pool, gather_pools
from cp.dra.state import AllocatedState
from cp.features import FeatureGates
from cp.quantity import BINARY_SI, Quantity, QuantityError

__all__ = [
    "ADMIN_ACCESS_NAMESPACE_LABEL",
    "ALLOCATION_RESULTS_MAX_SIZE",
    "AllocationError",
    "AllocationTimeout",
    "Allocator",
    "DRAAllocationError",
    "Features",
    "NodeAllocationError",
    "Recorder",
    "Stats",
    "allocation_uses_admin_access",
    "allocator_features",
    "claim_requests_admin_access",
    "namespace_allows_admin_access",
]

ALLOCATION_RESULTS_MAX_SIZE = 32
ADMIN_ACCESS_NAMESPACE_LABEL = "resource.kubernetes.io/admin-access"
_NO_SUCH_KEY_HINT = (". consider using CEL optional chaining (.? followed by orValue()) or guarding the "
                     "check with has() for optional fields")


class Features(msgspec.Struct, frozen=True, kw_only=True):
    """Allocator features (the DRA feature gates that change allocation); all on, as in 1.37."""

    admin_access: bool = True
    prioritized_list: bool = True
    partitionable_devices: bool = True
    device_taints: bool = True
    consumable_capacity: bool = True
    device_binding_and_status: bool = True
    list_type_attributes: bool = True
    optional_node_operations: bool = True
    compatibility_groups: bool = True
    derived_attributes: bool = True
    # DRAFractionalCapacityRange: beta, but off in a default 1.37 cluster (on only from
    # --min-compatibility-version 1.37); see `allocator_features`.
    fractional_capacity_range: bool = True


DEFAULT_FEATURES = Features()


def allocator_features(*, gates: FeatureGates) -> Features:
    """The allocator features a scheduler running with `gates` has (upstream's scheduler builds its
    allocator's `Features` from the same gates)."""
    return Features(
        admin_access=gates.enabled(feature_names.DRA_ADMIN_ACCESS),
        prioritized_list=gates.enabled(feature_names.DRA_PRIORITIZED_LIST),
        partitionable_devices=gates.enabled(feature_names.DRA_PARTITIONABLE_DEVICES),
        device_taints=gates.enabled(feature_names.DRA_DEVICE_TAINTS),
        consumable_capacity=gates.enabled(feature_names.DRA_CONSUMABLE_CAPACITY),
        device_binding_and_status=gates.enabled(feature_names.DRA_DEVICE_BINDING_CONDITIONS),
        list_type_attributes=gates.enabled(feature_names.DRA_LIST_TYPE_ATTRIBUTES),
        optional_node_operations=gates.enabled(feature_names.DRA_OPTIONAL_NODE_OPERATIONS),
        compatibility_groups=gates.enabled(feature_names.DRA_DEVICE_COMPATIBILITY_GROUPS),
        derived_attributes=gates.enabled(feature_names.DRA_DERIVED_ATTRIBUTES),
        fractional_capacity_range=gates.enabled(feature_names.DRA_FRACTIONAL_CAPACITY_RANGE),
    )


def derived_attribute(value: Any) -> dict[str, Any] | None:
    """A derived attribute's CEL value as a device attribute (`{"int": 1}`, `{"strings": [...]}`), or
    None for a value of another type."""
    for kind, test in _SCALARS:
        if test(value):
            return {kind: _attribute_text(kind, value)}
    if isinstance(value, list) and value:
        for kind, test in _SCALARS:
            if all(test(v) for v in value):
                return {kind + "s": [_attribute_text(kind, v) for v in value]}
    return None


def _is_semver_value(v: Any) -> bool:
    return isinstance(v, dict) and len(v) == 1 and SKEY in v


_SCALARS: tuple[tuple[str, Callable[[Any], bool]], ...] = (
    ("bool", lambda v: isinstance(v, bool)),
    ("int", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    ("string", lambda v: isinstance(v, str)),
    ("version", _is_semver_value),
)


def _attribute_text(kind: str, value: Any) -> Any:
    return value[SKEY] if kind == "version" else value


def compatibility_groups(dev: DeviceInfo) -> list[tuple[str, frozenset[str]]]:
    """(counter set, its compatibility groups) of each of a device's `consumesCounters` entries."""
    return [(str(c.get("counterSet") or ""), frozenset(c.get("compatibilityGroups") or ()))
            for c in dev.raw.get("consumesCounters") or () if isinstance(c, Mapping)]


class Stats(msgspec.Struct, kw_only=True):
    """Search effort, cumulative over the allocator's lifetime (upstream `GetStats`)."""

    allocate_one_invocations: int = 0
    pruned: int = 0


class DRAAllocationError(Exception):
    """Base class of everything `Allocator.allocate` raises."""


class AllocationError(DRAAllocationError):
    """Fatal for the pod (invalid input such as a CEL error, an unknown class, too many devices):
    retrying on another node cannot help. The message is upstream's text."""


class NodeAllocationError(DRAAllocationError):
    """Allocation failed on this node only; other nodes may still work (upstream
    `ErrFailedAllocationOnNode`). The message explains why, for the unschedulable status."""


class AllocationTimeout(DRAAllocationError):
    """The deadline passed while searching (upstream: the filter timeout cancels the context)."""


_ORIGIN = (0, 0)


class _MaxSizeExceeded(Exception):
    """`errAllocationResultMaxSizeExceeded`: a signal inside the search, never leaves it."""


class Recorder(Protocol):
    """Notified of every candidate rejection of one `allocate()` call (diagnostics, `explain.py`).

    Optional: with no recorder (the default) the search pays one `is not None` test per rejection
    outside the hot "device in use" skip, which is reported in ranges instead (`scanned`). The
    arguments are the allocator's own internal objects (`_Run`, `_Request`, `DeviceInfo`)."""

    def begin(self, run: Any) -> None:
        """Pools are gathered; the claims are about to be prepared."""

    def reject(self, run: Any, rd: Any, dev: DeviceInfo, reason: str, detail: Any = None) -> None:
        """`dev` cannot serve request `rd` (see `explain.REASONS`)."""

    def scanned(self, run: Any, rd: Any, begin: tuple[int, int], end: tuple[int, int] | None) -> None:
        """The scan for one slot of `rd` looked at the devices from `begin` up to (not including)
        `end` (None: to the end) without using them: those in use were skipped silently."""

    def request_failed(self, run: Any, rd: Any, reason: str, detail: Any = None) -> None:
        """A request-level stop: "max-size" (32 results per claim), "pruned", "no-devices"."""


# ---------------------------------------------------------------------------------------------
# Helpers for callers


def claim_requests_admin_access(claim: Mapping[str, Any]) -> bool:
    """True if any request of the claim asks for admin access (then the claim's namespace must
    carry the `resource.kubernetes.io/admin-access: "true"` label — checked by the caller)."""
    for req in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []:
        if ((req or {}).get("exactly") or {}).get("adminAccess"):
            return True
    return False


def namespace_allows_admin_access(namespace: Mapping[str, Any] | None) -> bool:
    labels = ((namespace or {}).get("metadata") or {}).get("labels") or {}
    return labels.get(ADMIN_ACCESS_NAMESPACE_LABEL) == "true"


def allocation_uses_admin_access(allocation: Mapping[str, Any]) -> bool:
    return any(r.get("adminAccess") for r in ((allocation.get("devices") or {}).get("results") or []))


def _kobj(claim: Mapping[str, Any]) -> str:
    meta = claim.get("metadata") or {}
    ns, name = meta.get("namespace") or "", meta.get("name") or ""
    return f"{ns}/{name}" if ns else name


# ---------------------------------------------------------------------------------------------
# Per-request data


class _Request:
    """One request or one subrequest of a claim, prepared for the search."""

    __slots__ = (
        "admin", "all_devices", "cand_positions", "capacities", "claim_index", "class_", "class_name",
        "class_selectors", "count", "derived", "derived_values", "evaluable", "evaluated", "failures",
        "has_admin", "key", "match", "mode",
        "name", "num_devices", "parent", "parent_name", "raw", "request_index", "selectors",
        "sub_index", "tolerations",
    )

    def __init__(self, raw: Mapping[str, Any], parent: Mapping[str, Any] | None,
                 key: tuple[int, int, int]) -> None:
        self.raw = raw
        self.parent = parent
        self.key = key
        self.claim_index, self.request_index, self.sub_index = key
        self.name: str = raw.get("name", "")
        self.parent_name: str = parent.get("name", "") if parent is not None else ""
        spec: Mapping[str, Any] = raw if parent is not None else (raw.get("exactly") or {})
        self.class_name: str = spec.get("deviceClassName") or ""
        self.mode: str = spec.get("allocationMode") or "ExactCount"
        count = spec.get("count")
        if self.mode == "ExactCount" and not count:
            count = 1
        self.count = int(count or 0)
        self.has_admin = parent is None and spec.get("adminAccess") is not None
        self.admin = parent is None and bool(spec.get("adminAccess"))
        self.tolerations: list[Mapping[str, Any]] = list(spec.get("tolerations") or [])
        self.capacities: dict[str, Quantity] | None = None
        self.class_: Mapping[str, Any] | None = None
        self.class_selectors: list[CompiledExpression | None] = []
        self.selectors: list[CompiledExpression | None] = []
        # DRADerivedAttributes: (name, expression), and their values per device once computed
        self.derived: list[tuple[str, CompiledExpression]] = []
        self.derived_values: dict[DeviceID, dict[str, Mapping[str, Any]]] = {}
        self.num_devices = 0
        self.all_devices: list[DeviceInfo] = []
        self.match: dict[DeviceID, bool] = {}
        self.evaluated = 0
        self.evaluable = -1
        self.failures = 0
        self.cand_positions: list[int] | None = None

    @property
    def spec(self) -> Mapping[str, Any]:
        return self.raw if self.parent is not None else (self.raw.get("exactly") or {})

    def result_name(self) -> str:
        return f"{self.parent_name}/{self.name}" if self.parent is not None else self.name


class _Picked:
    """One device picked for a claim (upstream `internalDeviceResult`)."""

    __slots__ = ("admin", "consumed", "device", "request", "share_id")

    def __init__(self, request: _Request, device: DeviceInfo, share_id: str | None,
                 consumed: dict[str, Quantity] | None) -> None:
        self.request = request
        self.device = device
        self.share_id = share_id
        self.consumed = consumed
        self.admin = request.admin


# ---------------------------------------------------------------------------------------------
# Consumable capacity (`consumable_capacity.go`)


def _consumed_for(requested: Quantity | None, cap: CapInfo, *, fractional: bool) -> Quantity:
    """`calculateConsumedCapacity`; `fractional`: the DRAFractionalCapacityRange feature."""
    if requested is None:
        if cap.default is not None:
            return cap.default
        return cap.value
    if not cap.has_policy:
        return requested
    if cap.has_range and cap.range_min is not None:
        if requested.nanos < cap.range_min.nanos:
            return cap.range_min
        step_q = cap.range_step
        if step_q is None:
            return requested
        if _use_milli(cap, fractional=fractional):
            # Milli-unit arithmetic: whole results stay whole, in the step's format.
            req, step, lo = _milli(requested), _milli(step_q), _milli(cap.range_min)
            n = _go_div(req - lo, step)
            if _go_mod(req - lo, step):
                n += 1
            val = lo + step * n
            if val % _MILLI == 0:
                return Quantity.from_int(val // _MILLI, step_q.format)
            return Quantity(val * (_NANOS_PER_UNIT // _MILLI), step_q.format)
        req, step, lo = requested.value(), step_q.value(), cap.range_min.value()
        added = req - lo
        n = _go_div(added, step)
        if _go_mod(added, step):
            n += 1
        return Quantity.from_int(lo + step * n, BINARY_SI)
    if cap.valid_values is not None:
        for v in cap.valid_values:
            if requested.nanos <= v.nanos:
                return v
        return requested
    return requested


_MILLI = 1000
_NANOS_PER_UNIT = 10**9
_MAX_MILLI_VALUE = (2**63 - 1) // _MILLI  # resource.MaxMilliValue


def _milli(q: Quantity) -> int:
    """`Quantity.MilliValue()`: the value in thousandths, rounded up away from zero."""
    per = _NANOS_PER_UNIT // _MILLI
    return -((-q.nanos) // per) if q.nanos >= 0 else q.nanos // per


def _use_milli(cap: CapInfo, *, fractional: bool) -> bool:
    """`useMilli`: with DRAFractionalCapacityRange on, a range whose min, max or step is not a
    whole number (and all of which fit milli-units, with a step of at least 1m) is computed in
    milli-units; every other range in whole units (`Quantity.Value()`, which rounds up)."""
    if not fractional:
        return False
    has_fraction = False
    for q in (cap.range_min, cap.range_max, cap.range_step):
        if q is None:
            continue
        if q.value() > _MAX_MILLI_VALUE:
            return False
        if _milli(q) % _MILLI:
            has_fraction = True
    if not has_fraction:
        return False
    return cap.range_step is None or _milli(cap.range_step) >= 1


def _go_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _go_mod(a: int, b: int) -> int:
    return a - b * _go_div(a, b)


def _violates_policy(consumed: Quantity, cap: CapInfo, *, fractional: bool) -> bool:
    """`violatesPolicy`."""
    if not cap.has_policy:
        return False
    if cap.default is not None and consumed.nanos == cap.default.nanos:
        return False
    if cap.has_range:
        if cap.range_max is not None and consumed.nanos > cap.range_max.nanos:
            return True
        if cap.range_step is not None:
            if _use_milli(cap, fractional=fractional):
                lo = _milli(cap.range_min) if cap.range_min is not None else 0
                value, step = _milli(consumed), _milli(cap.range_step)
            else:
                lo = cap.range_min.value() if cap.range_min is not None else 0
                value, step = consumed.value(), cap.range_step.value()
            if step and _go_mod(value - lo, step) != 0:
                return True
        return False
    if cap.valid_values:
        return not any(v.nanos == consumed.nanos for v in cap.valid_values)
    return False


# ---------------------------------------------------------------------------------------------
# The allocator


class Allocator:
    """Allocates devices for claims on one node at a time. See the module docstring.

    `deadline` is an absolute `time.monotonic()` value (None = no limit); `allocate()` accepts a
    per-call override. `prune` enables the search-space pruning described above.
    """

    def __init__(
        self,
        *,
        slices: Iterable[Mapping[str, Any]],
        classes: Mapping[str, Mapping[str, Any]],
        allocated: AllocatedState,
        taint_rules: Iterable[Mapping[str, Any]] = (),
        features: Features = DEFAULT_FEATURES,
        cel_cache: CelCache | None = None,
        deadline: float | None = None,
        prune: bool = True,
        recorder: Recorder | None = None,
    ) -> None:
        self.features = features
        self.classes = classes
        self.allocated = allocated
        self.cel_cache = cel_cache if cel_cache is not None else CelCache()
        self.deadline = deadline
        self.prune = prune
        self.recorder = recorder
        self.stats = Stats()
        self._slices_on_node: dict[str, list[Mapping[str, Any]]] = {}
        self._slices_shared: list[Mapping[str, Any]] = []
        self._slices_by_pool: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
        for s in slices:
            spec = s.get("spec") or {}
            node_name = spec.get("nodeName") or ""
            if node_name:
                self._slices_on_node.setdefault(node_name, []).append(s)
            else:
                self._slices_shared.append(s)
            pid = (spec.get("driver", ""), (spec.get("pool") or {}).get("name", ""))
            self._slices_by_pool.setdefault(pid, []).append(s)
        self._infos: dict[int, SliceInfo] = {}
        self._taint_rules: list[tuple[str | None, str | None, str | None, Mapping[str, Any]]] = []
        self.taint_rule_names: dict[int, str] = {}  # id(taint dict) -> DeviceTaintRule name (diagnostics)
        for rule in taint_rules:
            spec = rule.get("spec") or {}
            sel = spec.get("deviceSelector")
            taint = spec.get("taint") or {}
            self.taint_rule_names[id(taint)] = str((rule.get("metadata") or {}).get("name") or "")
            if sel is None:
                self._taint_rules.append((None, None, None, taint))
            else:
                self._taint_rules.append((sel.get("driver"), sel.get("pool"), sel.get("device"), taint))
        self._rule_taints: dict[DeviceID, list[Mapping[str, Any]]] = {}
        # Shared counters available per pool (keyed by pool name, as upstream does), computed on
        # first use from the allocated state and reused across allocate() calls.
        self._available_counters: dict[str, dict[str, dict[str, int]]] = {}
        self._counters_version = allocated.version

    # -- slice access -----------------------------------------------------------------------

    def _info(self, raw: Mapping[str, Any]) -> SliceInfo:
        info = self._infos.get(id(raw))
        if info is None:
            key = slice_cache_key(raw)
            if key is None:
                info = SliceInfo(raw)
            else:
                info = self.cel_cache.device(("slice", *key), lambda: SliceInfo(raw))
            self._infos[id(raw)] = info
        return info

    def device_taints(self, *, driver: str, pool: str, device: str) -> list[Mapping[str, Any]]:
        """The taints of one device: its own in the pool's slices plus those of the matching
        DeviceTaintRules ([] for a device no slice lists)."""
        for info in self._pool_slices((driver, pool)):
            for dev in info.devices:
                if dev.name == device:
                    return self._taints(dev)
        return []

    def device(self, *, driver: str, pool: str, device: str) -> Mapping[str, Any] | None:
        """One device as its slice lists it (None for a device no slice lists)."""
        for info in self._pool_slices((driver, pool)):
            for dev in info.devices:
                if dev.name == device:
                    return dev.raw
        return None

    def _pool_slices(self, pid: tuple[str, str]) -> list[SliceInfo]:
        return [self._info(s) for s in self._slices_by_pool.get(pid, ())]

    def _taints(self, dev: DeviceInfo) -> list[Mapping[str, Any]]:
        if not self._taint_rules:
            return dev.taints
        taints = self._rule_taints.get(dev.id)
        if taints is None:
            taints = list(dev.taints)
            for driver, pool, device, taint in self._taint_rules:
                if driver is not None and driver != dev.driver:
                    continue
                if pool is not None and pool != dev.id[1]:
                    continue
                if device is not None and device != dev.name:
                    continue
                taints.append(taint)
            self._rule_taints[dev.id] = taints
        return taints

    # -- entry point ------------------------------------------------------------------------

    def allocate(self, *, node: Mapping[str, Any], claims: Sequence[Mapping[str, Any]],
                 deadline: float | None = None, recorder: Recorder | None = None) -> list[dict[str, Any]] | None:
        """Allocate all claims on this node; see the class docstring for the outcomes. `recorder`
        (default: the allocator's own, normally None) is told about every rejected candidate."""
        if self.allocated.version != self._counters_version:
            self._available_counters.clear()
            self._counters_version = self.allocated.version
        run = _Run(self, node, claims, deadline if deadline is not None else self.deadline,
                   recorder if recorder is not None else self.recorder)
        return run.execute()

    def gather_pools(self, node: Mapping[str, Any]) -> list[Pool]:
        """The pools (in allocation order) this node can allocate from; for diagnostics."""
        name = (node.get("metadata") or {}).get("name") or ""
        raw = [*self._slices_on_node.get(name, ()), *self._slices_shared]
        return gather_pools(node=node, slices_for_node=[self._info(s) for s in raw],
                            slices_for_pool=self._pool_slices,
                            partitionable_devices=self.features.partitionable_devices)


class _Run:
    """The state of one `Allocator.allocate` call (upstream's unexported `allocator`)."""

    def __init__(self, a: Allocator, node: Mapping[str, Any], claims: Sequence[Mapping[str, Any]],
                 deadline: float | None, recorder: Recorder | None = None) -> None:
        self.a = a
        self.rec = recorder
        self.f = a.features
        self.node = node
        self.claims = claims
        self.deadline = deadline
        self.cel = a.cel_cache
        self.state = a.allocated
        self.requests: dict[tuple[int, int, int], _Request] = {}
        self.claim_requests: list[list[Mapping[str, Any]]] = []
        self.constraints: list[list[Constraint]] = []
        self.results: list[list[_Picked]] = [[] for _ in claims]
        self.selected_sub: dict[tuple[int, int], int] = {}
        self.allocating: dict[DeviceID, set[int]] = {}
        # In-flight consumed capacity per device: (number of live shares, capacity in nano units).
        self.allocating_capacity: dict[DeviceID, tuple[int, dict[str, int]]] = {}
        self.consumed_counters: dict[str, dict[str, dict[str, int]]] = {}
        self._compat_in_use: dict[tuple[str, str], list[tuple[DeviceID, frozenset[str]]]] = {}
        self.pools: list[Pool] = []
        self.pools_by_id: dict[tuple[str, str], Pool] = {}
        # The devices ExactCount requests scan, in allocation order: one list per device slice of
        # every complete, valid pool. A scan position is (segment index, device index).
        self.segments: list[list[DeviceInfo]] = []
        self._offsets: list[int] | None = None
        self._position: dict[DeviceID, int] | None = None

    # -- driver -----------------------------------------------------------------------------

    def execute(self) -> list[dict[str, Any]] | None:
        node_name = (self.node.get("metadata") or {}).get("name") or ""
        raw = [*self.a._slices_on_node.get(node_name, ()), *self.a._slices_shared]
        try:
            self.pools = gather_pools(node=self.node, slices_for_node=[self.a._info(s) for s in raw],
                                      slices_for_pool=self.a._pool_slices,
                                      partitionable_devices=self.f.partitionable_devices)
        except GatherError as e:
            raise AllocationError(f"gather pool information: {e}") from None
        for pool in self.pools:
            if pool.incomplete or pool.invalid:
                continue
            self.pools_by_id[pool.id] = pool
            for s in pool.slices:
                if s.devices:
                    self.segments.append(s.devices)

        if self.rec is not None:
            self.rec.begin(self)
        self._prepare()
        # One recursion level per device slot plus a few per request and claim; the default
        # limit (1000) is too low for pods with many claims of many devices.
        depth = sum(len(reqs) * 3 for reqs in self.claim_requests) + sum(
            rd.num_devices for rd in self.requests.values()) + 100
        if depth > sys.getrecursionlimit() - 200:
            sys.setrecursionlimit(depth + 400)
        try:
            done = self._allocate_one(0, 0, 0, 0, False, (0, 0))
        except _MaxSizeExceeded:
            # Upstream returns errAllocationResultMaxSizeExceeded as an ordinary (fatal) error
            # when it escapes the first claim; prepare() makes that practically unreachable.
            raise AllocationError("allocation max size exceeded") from None
        if not done:
            if any(p.invalid for p in self.pools):
                raise NodeAllocationError("invalid resource pools were encountered")
            return None
        return [self._build_result(ci) for ci in range(len(self.claims))]

    # -- preparation (errors here are fatal) ------------------------------------------------

    def _prepare(self) -> None:
        f = self.f
        for ci, claim in enumerate(self.claims):
            kobj = _kobj(claim)
            devices = (claim.get("spec") or {}).get("devices") or {}
            reqs = list(devices.get("requests") or [])
            self.claim_requests.append(reqs)
            min_devices = 0
            for ri, req in enumerate(reqs):
                subs = req.get("firstAvailable") or []
                if subs and not f.prioritized_list:
                    raise AllocationError(f"claim {kobj}, request {req.get('name', '')}: has subrequests, "
                                          "but the DRAPrioritizedList feature is disabled")
                if not f.consumable_capacity:
                    if (req.get("exactly") or {}).get("capacity") is not None:
                        raise AllocationError(f"claim {kobj}, request {req.get('name', '')}: has capacity requests, "
                                              "but the DRAConsumableCapacity feature is disabled")
                    for sub in subs:
                        if sub.get("capacity") is not None:
                            raise AllocationError(f"claim {kobj}, subrequest {sub.get('name', '')}: has capacity "
                                                  "requests, but the DRAConsumableCapacity feature is disabled")
                if subs:
                    least = None
                    for si, sub in enumerate(subs):
                        rd = self._validate(claim, _Request(sub, req, (ci, ri, si)))
                        self.requests[(ci, ri, si)] = rd
                        if least is None or rd.num_devices < least:
                            least = rd.num_devices
                    min_devices += least or 0
                else:
                    rd = self._validate(claim, _Request(req, None, (ci, ri, 0)))
                    self.requests[(ci, ri, 0)] = rd
                    min_devices += rd.num_devices
            if min_devices > ALLOCATION_RESULTS_MAX_SIZE:
                raise AllocationError(f"claim {kobj}: number of requested devices {min_devices} exceeds the "
                                      f"claim limit of {ALLOCATION_RESULTS_MAX_SIZE}")
            constraints: list[Constraint] = []
            for i, c in enumerate(devices.get("constraints") or []):
                requests = list(c.get("requests") or [])
                if c.get("matchAttribute") is not None:
                    constraints.append(MatchAttributeConstraint(c["matchAttribute"], requests,
                                                                f.list_type_attributes))
                elif c.get("distinctAttribute") is not None:
                    constraints.append(DistinctAttributeConstraint(c["distinctAttribute"], requests,
                                                                   f.list_type_attributes))
                else:
                    raise AllocationError(f"claim {kobj}, constraint #{i}: empty constraint "
                                          "(unsupported constraint type?)")
            self.constraints.append(constraints)

    def _validate(self, claim: Mapping[str, Any], rd: _Request) -> _Request:
        kobj = _kobj(claim)
        spec = rd.spec
        for i, sel in enumerate(spec.get("selectors") or []):
            expr = ((sel or {}).get("cel") or {}).get("expression")
            if expr is None:
                raise AllocationError(f"claim {kobj}, request {rd.name}, selector #{i}: CEL expression empty "
                                      "(unsupported selector type?)")
            rd.selectors.append(self.cel.compile(expr))
        if self.f.derived_attributes:
            for d in spec.get("derivedAttributes") or []:
                rd.derived.append((str((d or {}).get("name") or ""), self.cel.compile(str((d or {}).get("expression")
                                                                                          or ""))))
        if not self.f.admin_access and rd.has_admin:
            raise AllocationError(f"claim {kobj}, request {rd.name}: admin access is requested, but the "
                                  "feature is disabled")
        if not rd.class_name:
            raise AllocationError(f"claim {kobj}, request {rd.name}: missing device class name "
                                  "(unsupported request type?)")
        cls = self.a.classes.get(rd.class_name)
        if cls is None:
            raise AllocationError(f"claim {kobj}, request {rd.name}: could not retrieve device class "
                                  f"{rd.class_name}: deviceclass.resource.k8s.io \"{rd.class_name}\" not found")
        rd.class_ = cls
        for sel in ((cls.get("spec") or {}).get("selectors") or []):
            expr = ((sel or {}).get("cel") or {}).get("expression")
            rd.class_selectors.append(None if expr is None else self.cel.compile(expr))
        caps = (spec.get("capacity") or {}).get("requests")
        if caps is not None:
            try:
                rd.capacities = {k: Quantity.parse(v) for k, v in caps.items()}
            except QuantityError as e:
                raise AllocationError(f"claim {kobj}, request {rd.name}: capacity: {e}") from None

        if rd.mode == "ExactCount":
            rd.num_devices = rd.count
        elif rd.mode == "All":
            for pool in self.pools:
                if pool.incomplete:
                    raise AllocationError(f"claim {kobj}, request {rd.name}: asks for all devices, but resource "
                                          f"pool {pool} is currently being updated")
                if pool.invalid:
                    raise AllocationError(f"claim {kobj}, request {rd.name}: asks for all devices, but resource "
                                          f"pool {pool} is currently invalid")
                for s in pool.slices:
                    for d in s.devices:
                        if not self._selectable(rd, d):
                            continue
                        if self.f.consumable_capacity and not self._capacity_ok(rd, d):
                            continue
                        rd.all_devices.append(d)
            rd.num_devices = len(rd.all_devices)
        else:
            raise AllocationError(f"claim {kobj}, request {rd.name}: unsupported count mode {rd.mode}")
        return rd

    # -- the search -------------------------------------------------------------------------

    def _allocate_one(self, ci: int, ri: int, si: int, di: int, allocate_sub: bool,
                      start: tuple[int, int]) -> bool:
        stats = self.a.stats
        stats.allocate_one_invocations += 1
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise AllocationTimeout("filter operation aborted: allocation timed out (deadline exceeded)")
        if ci >= len(self.claims):
            return True
        if ri >= len(self.claim_requests[ci]):
            try:
                return self._allocate_one(ci + 1, 0, 0, 0, False, _ORIGIN)
            except _MaxSizeExceeded:
                return False
        rd = self.requests[(ci, ri, si)]

        if not allocate_sub and rd.parent is not None:
            all_exceeded = True
            sub = 0
            while (ci, ri, sub) in self.requests:
                try:
                    ok = self._allocate_one(ci, ri, sub, di, True, _ORIGIN)
                except _MaxSizeExceeded:
                    sub += 1
                    continue
                all_exceeded = False
                if ok:
                    self.selected_sub[(ci, ri)] = sub
                    return True
                sub += 1
            if all_exceeded:
                raise _MaxSizeExceeded
            return False

        all_mode = rd.mode == "All"
        if all_mode and not rd.all_devices:
            if self.rec is not None:
                self.rec.request_failed(self, rd, "no-devices")
            return False
        if di >= rd.num_devices:
            return self._allocate_one(ci, ri + 1, 0, 0, False, _ORIGIN)
        if len(self.results[ci]) + rd.num_devices - di > ALLOCATION_RESULTS_MAX_SIZE:
            if self.rec is not None:
                self.rec.request_failed(self, rd, "max-size", len(self.results[ci]) + rd.num_devices - di)
            raise _MaxSizeExceeded

        if all_mode:
            undo = self._allocate_device(rd, rd.all_devices[di], must=True)
            if undo is None:
                return False
            try:
                done = self._allocate_one(ci, ri, si, di + 1, allocate_sub, _ORIGIN)
            except _MaxSizeExceeded:
                undo()
                raise
            if not done:
                undo()
            return done

        if rd.failures and self.a.prune and self._prune(rd, di, start):
            stats.pruned += 1
            if self.rec is not None:
                self.rec.request_failed(self, rd, "pruned", rd.num_devices - di)
            return False

        admin = rd.admin
        allocated = self.state.allocated_devices
        allocating = self.allocating
        consumable = self.f.consumable_capacity
        segments = self.segments
        seg_start, dev_start = start
        rec = self.rec
        scan_from = start  # with a recorder: the first device not yet reported
        for seg in range(seg_start, len(segments)):
            devices = segments[seg]
            for idx in range(dev_start if seg == seg_start else 0, len(devices)):
                dev = devices[idx]
                did = dev.id
                if admin:
                    s = allocating.get(did)
                    if s and ci in s:
                        continue
                elif did in allocated or allocating.get(did):
                    continue
                if not self._selectable(rd, dev):
                    continue
                if consumable and not self._capacity_ok(rd, dev):
                    continue
                undo = self._allocate_device(rd, dev, must=False)
                if undo is None:
                    continue
                if rec is not None:
                    rec.scanned(self, rd, scan_from, (seg, idx))
                    scan_from = (seg, idx + 1)
                try:
                    done = self._allocate_one(ci, ri, si, di + 1, allocate_sub, (seg, idx + 1))
                except _MaxSizeExceeded:
                    undo()
                    raise
                if done:
                    return True
                undo()
        if rec is not None:
            rec.scanned(self, rd, scan_from, None)
        rd.failures += 1
        return False

    def in_use(self, rd: _Request, did: DeviceID) -> bool:
        """The "in use" skip of the scan loop in `_allocate_one` (kept inline there for speed)."""
        if rd.admin:
            s = self.allocating.get(did)
            return bool(s and rd.claim_index in s)
        return did in self.state.allocated_devices or bool(self.allocating.get(did))

    def _positions(self) -> tuple[list[int], dict[DeviceID, int]]:
        if self._offsets is None or self._position is None:
            offsets: list[int] = []
            position: dict[DeviceID, int] = {}
            n = 0
            for devices in self.segments:
                offsets.append(n)
                for d in devices:
                    position.setdefault(d.id, n)
                    n += 1
            self._offsets, self._position = offsets, position
        return self._offsets, self._position

    def _prune(self, rd: _Request, di: int, start: tuple[int, int]) -> bool:
        """True if fewer candidates than still-needed slots remain at or after `start`.

        Only used for requests whose search already failed once (backtracking), and only once
        every device of the node was evaluated for the request, so skipping the scan can never
        hide a CEL error upstream would have reported."""
        need = rd.num_devices - di
        cand = rd.cand_positions
        offsets, position = self._positions()
        if cand is None:
            if rd.evaluable < 0:
                total = len(position)
                if rd.admin:
                    rd.evaluable = total
                else:
                    allocated = self.state.allocated_devices
                    rd.evaluable = sum(1 for did in position if did not in allocated)
            if rd.evaluated < rd.evaluable:
                return False
            cand = sorted(position[did] for did, ok in rd.match.items() if ok and did in position)
            rd.cand_positions = cand
        seg, idx = start
        begin = offsets[seg] + idx if seg < len(offsets) else len(position)
        available = len(cand) - bisect.bisect_left(cand, begin)
        if available < need:
            return True
        # Devices picked in this run (by any claim, or by this claim for admin access) are no
        # candidates either; there are only a few of them.
        busy = 0
        ci = rd.claim_index
        for did, claims in self.allocating.items():
            if not claims or (rd.admin and ci not in claims):
                continue
            p = position.get(did)
            if p is not None and p >= begin and rd.match.get(did):
                busy += 1
        return available - busy < need

    # -- candidate checks -------------------------------------------------------------------

    def _selectable(self, rd: _Request, dev: DeviceInfo) -> bool:
        """`isSelectable`: class and request selectors, per-device node selection."""
        if not self.f.device_binding_and_status and dev.binding_conditions:
            if self.rec is not None:
                self.rec.reject(self, rd, dev, "binding-conditions")
            return False
        cached = rd.match.get(dev.id)
        if cached is not None:
            return cached
        ok = self._selectable_uncached(rd, dev)
        rd.match[dev.id] = ok
        rd.evaluated += 1
        return ok

    def _selectable_uncached(self, rd: _Request, dev: DeviceInfo) -> bool:
        cel_dev = None
        for i, compiled in enumerate(rd.class_selectors):
            if compiled is None:
                raise AllocationError(f"class {rd.class_name}: selector #{i}: CEL expression empty "
                                      "(unsupported selector type?)")
            if cel_dev is None:
                cel_dev = dev.cel_device()
            if not self._match(compiled, cel_dev, dev, f"class {rd.class_name}", i):
                if self.rec is not None:
                    self.rec.reject(self, rd, dev, "class-selector", i)
                return False
        for i, compiled in enumerate(rd.selectors):
            assert compiled is not None
            if cel_dev is None:
                cel_dev = dev.cel_device()
            if not self._match(compiled, cel_dev, dev, f"claim {_kobj(self.claims[rd.claim_index])}", i):
                if self.rec is not None:
                    self.rec.reject(self, rd, dev, "request-selector", i)
                return False
        if dev.slice.per_device:
            try:
                if not node_matches(self.node, dev.node_name, dev.all_nodes, dev.node_selector):
                    if self.rec is not None:
                        self.rec.reject(self, rd, dev, "device-node-selection")
                    return False
            except NodeSelectorError as e:
                raise AllocationError(f"failed to parse node selector: {e}") from None
        return True

    def _match(self, compiled: CompiledExpression, cel_dev: Any, dev: DeviceInfo, owner: str, i: int) -> bool:
        try:
            return self.cel.matches(compiled, cel_dev)
        except CelError as e:
            if compiled.error is not None:
                raise AllocationError(f"{owner}: selector #{i}: CEL compile error: {e}") from None
            msg = str(e)
            if "no such key:" in msg:
                msg += _NO_SUCH_KEY_HINT
            raise AllocationError(f"{owner}: selector #{i} on device {device_id_str(dev.id)}: "
                                  f"CEL runtime error: {msg}") from None

    def _capacity_ok(self, rd: _Request, dev: DeviceInfo) -> bool:
        """`CmpRequestOverCapacity` (a request naming a capacity the device lacks: not eligible)."""
        caps = dev.capacity
        requests = rd.capacities
        if requests:
            for name in requests:
                if name not in caps:
                    if self.rec is not None:
                        self.rec.reject(self, rd, dev, "capacity-missing", name)
                    return False
        if not caps:
            return True
        current = self.state.aggregated_capacity.get(dev.id)
        inflight = self.allocating_capacity.get(dev.id)
        allocating = inflight[1] if inflight is not None else None
        for name, cap in caps.items():
            fractional = self.f.fractional_capacity_range
            consumed = _consumed_for(requests.get(name) if requests else None, cap, fractional=fractional)
            if _violates_policy(consumed, cap, fractional=fractional):
                if self.rec is not None:
                    self.rec.reject(self, rd, dev, "capacity-policy", (name, consumed))
                return False
            total = consumed.nanos
            if current is not None:
                total += current.get(name, 0)
            if allocating is not None:
                total += allocating.get(name, 0)
            if total > cap.value.nanos:
                if self.rec is not None:
                    self.rec.reject(self, rd, dev, "capacity-exhausted", (name, consumed, total - consumed.nanos))
                return False
        return True

    def _capacity_in_use(self, did: DeviceID) -> bool:
        """`deviceCapacityInUse`: persisted consumed capacity or share, or an in-flight share."""
        return (did in self.state.aggregated_capacity or did in self.state.shared_devices
                or did in self.allocating_capacity)

    def _allocate_device(self, rd: _Request, dev: DeviceInfo, *, must: bool) -> Callable[[], None] | None:
        """Check availability, counters, taints and constraints for one candidate and record it.
        Returns the undo function, or None if the device cannot be used."""
        ci = rd.claim_index
        did = dev.id
        f = self.f
        allow_multi = f.consumable_capacity and dev.allow_multi
        claims_using = self.allocating.get(did)
        if not allow_multi and rd.admin and claims_using and ci in claims_using:
            if self.rec is not None:
                self.rec.reject(self, rd, dev, "in-use")
            return None
        if not rd.admin:
            if did in self.state.allocated_devices or claims_using:
                if self.rec is not None:
                    self.rec.reject(self, rd, dev, "in-use")
                return None
            if not allow_multi and self._capacity_in_use(did):
                if self.rec is not None:
                    self.rec.reject(self, rd, dev, "shared")
                return None
        if not f.partitionable_devices and dev.consumes:
            if self.rec is not None:
                self.rec.reject(self, rd, dev, "partitionable-disabled")
            return None
        if dev.consumes:
            groups = compatibility_groups(dev)
            if not f.compatibility_groups:
                if any(g for _s, g in groups):  # devices declaring groups are not used with the gate off
                    if self.rec is not None:
                        self.rec.reject(self, rd, dev, "compatibility-groups-disabled")
                    return None
            elif not self._compatible(dev, groups):
                if self.rec is not None:
                    self.rec.reject(self, rd, dev, "compatibility-groups")
                return None

        counters_reserved = False
        if dev.consumes and not (allow_multi and self._capacity_in_use(did)):
            if not self._reserve_counters(dev):
                if self.rec is not None:
                    self.rec.reject(self, rd, dev, "counters")
                return None
            counters_reserved = True

        base = rd.parent_name if rd.parent is not None else rd.name
        sub = rd.name if rd.parent is not None else ""

        if f.device_taints and self._taint_prevents(dev, rd):
            if counters_reserved:
                self._release_counters(dev)
            if self.rec is not None:
                self.rec.reject(self, rd, dev, "taint")
            return None

        constraints = self.constraints[ci]
        derived = self._derived(rd, dev) if rd.derived and constraints else None
        for i, c in enumerate(constraints):
            if not c.add(base, sub, dev, derived):
                for j in range(i):
                    constraints[j].remove(base, sub, dev)
                if counters_reserved:
                    self._release_counters(dev)
                if self.rec is not None:
                    self.rec.reject(self, rd, dev, "constraint", i)
                if must:
                    raise AllocationError(f"claim {_kobj(self.claims[ci])}, request {rd.name}: cannot add device "
                                          f"{device_id_str(did)} because a claim constraint would not be satisfied")
                return None

        consumed: dict[str, Quantity] | None = None
        share_id: str | None = None
        capacity_reserved = False
        if f.consumable_capacity:
            # Same check as before the call, now also counting what this run reserved meanwhile.
            if not self._capacity_ok(rd, dev):
                for c in constraints:
                    c.remove(base, sub, dev)
                if counters_reserved:
                    self._release_counters(dev)
                return None
            if allow_multi:
                requests = rd.capacities
                consumed = {name: _consumed_for(requests.get(name) if requests else None, cap,
                                                fractional=f.fractional_capacity_range)
                            for name, cap in dev.capacity.items()}
                share_id = str(uuid.uuid4())
                n, agg = self.allocating_capacity.get(did, (0, {}))
                agg = dict(agg)
                for name, q in consumed.items():
                    agg[name] = agg.get(name, 0) + q.nanos
                self.allocating_capacity[did] = (n + 1, agg)
                capacity_reserved = True

        if not allow_multi:
            self.allocating.setdefault(did, set()).add(ci)
        results = self.results[ci]
        results.append(_Picked(rd, dev, share_id, consumed or None))
        n_before = len(results) - 1

        def undo() -> None:
            for c in constraints:
                c.remove(base, sub, dev)
            if not allow_multi:
                s = self.allocating.get(did)
                if s is not None:
                    s.discard(ci)
                    if not s:
                        del self.allocating[did]
            if capacity_reserved and consumed is not None:
                n, agg = self.allocating_capacity[did]
                if n <= 1:
                    del self.allocating_capacity[did]
                else:
                    agg = dict(agg)
                    for name, q in consumed.items():
                        agg[name] = agg.get(name, 0) - q.nanos
                    self.allocating_capacity[did] = (n - 1, agg)
            if counters_reserved:
                self._release_counters(dev)
            del results[n_before:]

        return undo

    def _taint_prevents(self, dev: DeviceInfo, rd: _Request) -> bool:
        if not self.f.device_taints:  # upstream skips the check with DRADeviceTaints off
            return False
        for taint in self.a._taints(dev):
            if taint.get("effect") not in ("NoSchedule", "NoExecute"):
                continue
            if not any(tolerates_taint(t, taint) for t in rd.tolerations):
                return True
        return False

    # -- derived attributes (DRADerivedAttributes) ---------------------------------------------

    def _derived(self, rd: _Request, dev: DeviceInfo) -> dict[str, Mapping[str, Any]]:
        """The request's derived attributes for a device that passed its selectors, as attributes. A
        runtime error, or a value of another type than a scalar or a list of scalars, fails the
        allocation (upstream aborts scheduling of the pod rather than match silently)."""
        values = rd.derived_values.get(dev.id)
        if values is None:
            values = {}
            cel_dev = dev.cel_device()
            for name, compiled in rd.derived:
                owner = f"claim {_kobj(self.claims[rd.claim_index])}, request {rd.name}, derived attribute {name}"
                try:
                    value = self.cel.value(compiled, cel_dev)
                except CelError as e:
                    if compiled.error is not None:
                        raise AllocationError(f"{owner}: CEL compile error: {e}") from None
                    raise AllocationError(f"{owner} on device {device_id_str(dev.id)}: CEL runtime error: "
                                          f"{e}") from None
                attribute = derived_attribute(value)
                if attribute is None:
                    raise AllocationError(f"{owner} on device {device_id_str(dev.id)}: the expression must "
                                          "evaluate to a string, int, bool or semver, or a list of one of them")
                values[name] = attribute
            rd.derived_values[dev.id] = values
        return values

    # -- compatibility groups (DRADeviceCompatibilityGroups) ----------------------------------

    def _groups_in_use(self, pool: Pool, counter_set: str) -> list[tuple[DeviceID, frozenset[str]]]:
        """The groups of the devices already allocated (by other claims) that consume `counter_set`."""
        key = (pool.name, counter_set)
        cached = self._compat_in_use.get(key)
        if cached is None:
            is_allocated = self.state.is_allocated
            cached = [(d.id, g) for group in (pool.slices, pool.slices_not_targeting) for s in group
                      for d in s.devices if d.consumes and is_allocated(d.id)
                      for name, g in compatibility_groups(d) if name == counter_set]
            self._compat_in_use[key] = cached
        return cached

    def _compatible(self, dev: DeviceInfo, groups: list[tuple[str, frozenset[str]]]) -> bool:
        """Whether `dev` may be co-allocated with the devices already on its counter sets: all of them
        declare no group, or all declare groups with a common one (the intersection is not empty)."""
        pool = self.pools_by_id.get((dev.id[0], dev.id[1]))
        if pool is None:
            return True
        for counter_set, mine in groups:
            members = [g for did, g in self._groups_in_use(pool, counter_set) if did != dev.id]
            for picked in self.results:
                for p in picked:
                    other = p.device
                    if other.id != dev.id and other.id[:2] == dev.id[:2] and other.consumes:
                        members += [g for name, g in compatibility_groups(other) if name == counter_set]
            if not members:
                continue
            if not mine:
                if any(members):
                    return False
                continue
            common = set(mine)
            for g in members:
                common &= g
                if not common:
                    return False
        return True

    # -- shared counters --------------------------------------------------------------------

    def _available_for(self, pool: Pool) -> dict[str, dict[str, int]]:
        cache = self.a._available_counters
        avail = cache.get(pool.name)
        if avail is None:
            avail = {name: dict(counters) for name, counters in pool.counter_sets.items()}
            is_allocated = self.state.is_allocated
            for group in (pool.slices, pool.slices_not_targeting):
                for s in group:
                    for d in s.devices:
                        if not d.consumes or not is_allocated(d.id):
                            continue
                        for set_name, counters in d.consumes:
                            target = avail.get(set_name)
                            if target is None:
                                continue
                            for cname, v in counters.items():
                                if cname in target:
                                    target[cname] -= v
            cache[pool.name] = avail
        return avail

    def _reserve_counters(self, dev: DeviceInfo) -> bool:
        pool = self.pools_by_id.get((dev.id[0], dev.id[1]))
        if pool is None:
            return False
        avail = self._available_for(pool)
        consumed = self.consumed_counters.setdefault(pool.name, {})
        for set_name, counters in dev.consumes:
            target = consumed.setdefault(set_name, {})
            for cname, v in counters.items():
                target[cname] = target.get(cname, 0) + v
        for set_name, counters in avail.items():
            used = consumed.get(set_name) or {}
            for cname, v in counters.items():
                if v < used.get(cname, 0):
                    self._release_counters(dev)
                    return False
        return True

    def _release_counters(self, dev: DeviceInfo) -> None:
        pool = self.pools_by_id.get((dev.id[0], dev.id[1]))
        if pool is None:
            return
        consumed = self.consumed_counters.get(pool.name) or {}
        for set_name, counters in dev.consumes:
            target = consumed.get(set_name)
            if target is None:
                continue
            for cname, v in counters.items():
                target[cname] = target.get(cname, 0) - v

    # -- results ----------------------------------------------------------------------------

    def _build_result(self, ci: int) -> dict[str, Any]:
        claim = self.claims[ci]
        f = self.f
        results: list[dict[str, Any]] = []
        for p in self.results[ci]:
            d = p.device
            r: dict[str, Any] = {"request": p.request.result_name(), "driver": d.id[0], "pool": d.id[1],
                                 "device": d.name}
            if p.admin:
                r["adminAccess"] = True
            if p.request.tolerations:
                r["tolerations"] = [dict(t) for t in p.request.tolerations]
            if f.device_binding_and_status:
                if d.binding_conditions:
                    r["bindingConditions"] = list(d.binding_conditions)
                if d.binding_failure_conditions:
                    r["bindingFailureConditions"] = list(d.binding_failure_conditions)
            if p.share_id is not None:
                r["shareID"] = p.share_id
            if p.consumed:
                r["consumedCapacity"] = {k: v.canonical() for k, v in p.consumed.items()}
            if f.optional_node_operations:
                skip = (d.slice.raw.get("spec") or {}).get("skipNodeOperations")
                if skip:  # the slice's node operations the kubelet skips for this device
                    r["skipNodeOperations"] = list(skip)
            results.append(r)

        # Configs: class configs once per class (in request order, chosen subrequest's class),
        # then claim configs that apply, then "covers every request" becomes "no requests".
        reqs = self.claim_requests[ci]
        config: list[dict[str, Any]] = []
        class_ranges: dict[str, tuple[int, int]] = {}
        for ri in range(len(reqs)):
            rd = self._chosen(ci, ri)
            name = rd.result_name()
            rng = class_ranges.get(rd.class_name)
            if rng is not None:
                for i in range(*rng):
                    config[i]["requests"].append(name)
                continue
            begin = len(config)
            for entry in ((rd.class_ or {}).get("spec") or {}).get("config") or []:
                c: dict[str, Any] = {"source": "FromClass", "requests": [name]}
                c.update({k: v for k, v in entry.items() if k not in ("source", "requests")})
                config.append(c)
            class_ranges[rd.class_name] = (begin, len(config))
        for entry in ((claim.get("spec") or {}).get("devices") or {}).get("config") or []:
            names = list(entry.get("requests") or [])
            applies = not names
            if not applies:
                for ri, req in enumerate(reqs):
                    if req.get("name") in names:
                        applies = True
                        break
                    rd = self._chosen(ci, ri)
                    if rd.parent is not None and rd.result_name() in names:
                        applies = True
                        break
            if applies:
                c = {"source": "FromClaim"}
                if names:
                    c["requests"] = names
                c.update({k: v for k, v in entry.items() if k not in ("source", "requests")})
                config.append(c)
        for c in config:
            listed = c.get("requests")
            if not listed:
                continue
            covers = True
            for ri, req in enumerate(reqs):
                if req.get("name") in listed:
                    continue
                rd = self._chosen(ci, ri)
                if rd.parent is not None and rd.result_name() in listed:
                    continue
                covers = False
                break
            if covers:
                del c["requests"]
        # Key order as the API serves it: source, requests, opaque.
        config = [{k: c[k] for k in ("source", "requests") if k in c} | {k: v for k, v in c.items()
                  if k not in ("source", "requests")} for c in config]

        devices: dict[str, Any] = {}
        if results:
            devices["results"] = results
        if config:
            devices["config"] = config
        out: dict[str, Any] = {"devices": devices}
        try:
            selector = self._node_selector(self.results[ci])
        except ValueError as e:
            raise AllocationError(f"create NodeSelector for claim {(claim.get('metadata') or {}).get('name', '')}: "
                                  f"{e}") from None
        if selector is not None:
            out["nodeSelector"] = selector
        return out

    def _chosen(self, ci: int, ri: int) -> _Request:
        rd = self.requests[(ci, ri, 0)]
        if rd.parent is not None:
            rd = self.requests[(ci, ri, self.selected_sub.get((ci, ri), 0))]
        return rd

    def _node_selector(self, picked: list[_Picked]) -> dict[str, Any] | None:
        fields: list[dict[str, Any]] = []
        exprs: list[dict[str, Any]] = []
        node_name = (self.node.get("metadata") or {}).get("name") or ""
        for p in picked:
            d = p.device
            if d.slice.per_device:
                name, selector = d.node_name, d.node_selector
            else:
                name, selector = d.slice.node_name, d.slice.node_selector
            if name or d.binds_to_node:
                return {"nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}
            if selector is not None:
                terms = selector.get("nodeSelectorTerms") or []
                if len(terms) == 1:
                    _merge_requirements(terms[0].get("matchFields") or [], fields)
                    _merge_requirements(terms[0].get("matchExpressions") or [], exprs)
                elif len(terms) > 1:
                    raise ValueError(f"unsupported ResourceSlice.NodeSelector with {len(terms)} terms")
        if not fields and not exprs:
            return None
        term: dict[str, Any] = {}
        if exprs:
            term["matchExpressions"] = exprs
        if fields:
            term["matchFields"] = fields
        return {"nodeSelectorTerms": [term]}


def _merge_requirements(src: Iterable[Mapping[str, Any]], dst: list[dict[str, Any]]) -> None:
    for req in src:
        values = set(req.get("values") or [])
        if any(r.get("key") == req.get("key") and r.get("operator") == req.get("operator")
               and set(r.get("values") or []) == values for r in dst):
            continue
        dst.append({k: (list(v) if isinstance(v, list) else v) for k, v in req.items()})
