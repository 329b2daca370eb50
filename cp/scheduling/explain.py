"""Why a pod does or does not fit, node by node and device by device (issue #12). Pure; no I/O.

The diagnosis replays what the scheduler does for the pod, with the scheduler's own pieces:

- node filters: `cp.scheduling.plugins` (NodeUnschedulable, NodeName, TaintToleration,
  NodeAffinity, NodeResourcesFit) — the first failing one is the upstream verdict, and every
  failing one is listed with its numbers;
- DRA: `Allocator.allocate()` — the allocator's own search, not a second implementation — with a
  `SearchRecorder` attached. The allocator tells the recorder about every candidate device it
  rejects (`Recorder` in `allocator.py`; with no recorder, which is what the scheduler runs, the
  search pays one `is not None` test per rejection outside its hot loop). The recorder groups the
  rejections per claim, request and reason, naming the object responsible (the claim holding a
  device, the DeviceTaintRule or ResourceSlice carrying a taint, the class or request selector
  that was false, the counter that ran out, the constraint and the values it saw...);
- pools: the allocator's own pool gathering (`Allocator.gather_pools`), plus the slices of the
  node whose pools it dropped as obsolete;
- "the smallest change": the allocator runs again with one thing relaxed at a time (tolerate a
  device taint, deallocate one claim, ask for fewer devices, drop a constraint or a selector,
  tolerate a node taint, uncordon...), cheapest first; the first that makes the pod fit on some
  node is reported, with up to two alternatives.

Entry points: `explain_pod(snapshot, namespace=…, name=…)` → a JSON-able dict (the
`PodSchedulingExplanation` served by `api/why.py`, rendered by `controllers/why.py`), and
`short_reason(allocator, pod=…, claims=…, nodes=…)` → one line the scheduler can append to its
`FailedScheduling` message.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgspec

from cp.scheduling import plugins
from cp.dra import extended as ext
from cp.dra.allocator import (
    ADMIN_ACCESS_NAMESPACE_LABEL,
    ALLOCATION_RESULTS_MAX_SIZE,
    AllocationError,
    AllocationTimeout,
    Allocator,
    Features,
    NodeAllocationError,
    claim_requests_admin_access,
    namespace_allows_admin_access,
)
from cp.dra.celenv import CelCache
from cp.dra.constraints import (
    DistinctAttributeConstraint,
    MatchAttributeConstraint,
    attribute_as_set,
    lookup_attribute,
)
from cp.dra.model import DeviceID, DeviceInfo, SliceInfo, device_id_str, tolerates_taint
from cp.dra.nodeselector import NodeSelectorError, node_selector_matches
from cp.dra.pools import GatherError
from cp.dra.pools import _slice_matches as slice_matches
from cp.quantity import BINARY_SI, Quantity
from cp.dra.state import AllocatedState

__all__ = [
    "API_VERSION",
    "KIND",
    "REASONS",
    "SearchRecorder",
    "Snapshot",
    "explain_pod",
    "short_reason",
]

API_VERSION = "sim.cplane.dev/v1alpha1"
KIND = "PodSchedulingExplanation"

# The scheduler's settings (controllers/scheduler/config.py; tests/why check they stay equal).
FEATURES = Features(list_type_attributes=False)
FILTER_TIMEOUT = 10.0
RESERVED_FOR_MAX = 256
SCHEDULER_NAME = "default-scheduler"
DRA_PLUGIN = "DynamicResources"
CANNOT_ALLOCATE = "cannot allocate all claims"

# Why a candidate device was rejected (the `reason` of a rejection group).
REASONS: dict[str, str] = {
    "in-use": "already allocated to another claim",
    "in-use-attempt": "picked for another request of this pod in the same attempt",
    "shared": "shared with other claims (consumable capacity) and this request needs it exclusively",
    "class-selector": "a selector of the DeviceClass is false",
    "request-selector": "a selector of the request is false",
    "device-node-selection": "the device is not available on this node (per-device node selection)",
    "binding-conditions": "the device has binding conditions and DRADeviceBindingConditions is off",
    "capacity-missing": "the device lacks a capacity the request asks for",
    "capacity-policy": "the capacity request violates the device's request policy",
    "capacity-exhausted": "not enough capacity left on the device",
    "partitionable-disabled": "the device consumes counters and DRAPartitionableDevices is off",
    "counters": "a shared counter of the pool is exhausted",
    "taint": "untolerated device taint",
    "constraint": "a claim constraint cannot be satisfied",
}
# Request-level stops.
STOPS: dict[str, str] = {
    "max-size": f"more than {ALLOCATION_RESULTS_MAX_SIZE} devices in one claim",
    "pruned": "fewer usable devices left than still needed",
    "no-devices": "no device matches (allocationMode All)",
}
# Kinds of device rejections that depend on what else was picked in the attempt.
_DYNAMIC = frozenset({"in-use-attempt", "counters", "constraint", "capacity-exhausted", "shared"})

MAX_LISTED = 6  # devices / names listed per group before "…"
OTHER_CLAIMS = "other claims"  # holders of allocated devices whose claim is not known


class Snapshot(msgspec.Struct, kw_only=True):
    """The objects the diagnosis reads, all at one revision of the event log."""

    revision: int = 0
    pods: list[dict[str, Any]] = msgspec.field(default_factory=list)
    nodes: list[dict[str, Any]] = msgspec.field(default_factory=list)
    claims: list[dict[str, Any]] = msgspec.field(default_factory=list)
    slices: list[dict[str, Any]] = msgspec.field(default_factory=list)
    classes: list[dict[str, Any]] = msgspec.field(default_factory=list)
    rules: list[dict[str, Any]] = msgspec.field(default_factory=list)
    namespaces: list[dict[str, Any]] = msgspec.field(default_factory=list)


# Kinds a snapshot needs: (group, plural, Snapshot field).
SNAPSHOT_KINDS: tuple[tuple[str, str, str], ...] = (
    ("", "pods", "pods"), ("", "nodes", "nodes"), ("", "namespaces", "namespaces"),
    ("resource.k8s.io", "resourceclaims", "claims"), ("resource.k8s.io", "resourceslices", "slices"),
    ("resource.k8s.io", "deviceclasses", "classes"), ("resource.k8s.io", "devicetaintrules", "rules"),
)


# ---------------------------------------------------------------------------------------------
# Small helpers


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    m = obj.get("metadata")
    return m if isinstance(m, Mapping) else {}


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    s = obj.get("spec")
    return s if isinstance(s, Mapping) else {}


def _status(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    s = obj.get("status")
    return s if isinstance(s, Mapping) else {}


def _kobj(obj: Mapping[str, Any]) -> str:
    meta = _meta(obj)
    ns, name = meta.get("namespace") or "", meta.get("name") or ""
    return f"{ns}/{name}" if ns else str(name)


def _uid(obj: Mapping[str, Any]) -> str:
    return str(_meta(obj).get("uid") or "")


def _controller_uid(obj: Mapping[str, Any]) -> str:
    for ref in _meta(obj).get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller"):
            return str(ref.get("uid") or "")
    return ""


def _allocation(claim: Mapping[str, Any]) -> dict[str, Any] | None:
    alloc = _status(claim).get("allocation")
    return alloc if isinstance(alloc, dict) else None


def _reserved_by(claim: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [r for r in _status(claim).get("reservedFor") or [] if isinstance(r, Mapping)]


def _listing(items: Sequence[str], limit: int = MAX_LISTED) -> str:
    if len(items) <= limit:
        return ", ".join(items)
    return ", ".join(items[:limit]) + f", … ({len(items) - limit} more)"


def _plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else (many or word + 's')}"


def _short_device(did: DeviceID, node: str = "") -> str:
    """`pool/device` (the driver is in the group text), `device` when the pool is the node's own."""
    _driver, pool, device = did
    return device if pool == node else f"{pool}/{device}"


def _taint_text(taint: Mapping[str, Any]) -> str:
    key, value, effect = taint.get("key") or "", taint.get("value") or "", taint.get("effect") or ""
    return f"{key}={value}:{effect}" if value else f"{key}:{effect}"


def _value_text(attr: Mapping[str, Any] | None) -> str:
    if attr is None:
        return "(none)"
    s = attribute_as_set(attr)
    if s is None:
        return "(none)"
    values = sorted(str(v) for v in s[1])
    return values[0] if len(values) == 1 else "[" + ", ".join(values) + "]"


def _q(nanos: int) -> str:
    """A nano-unit amount as a quantity (binary suffixes where exact: `20Gi`)."""
    return Quantity(nanos, BINARY_SI).canonical()


def _milli_text(m: int) -> str:
    return f"{m // 1000}" if m % 1000 == 0 else f"{m}m"


def _bytes_text(b: int) -> str:
    for unit, size in (("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
        if b >= size and b % size == 0:
            return f"{b // size}{unit}"
    for unit, size in (("Gi", 1 << 30), ("Mi", 1 << 20)):
        if b >= size:
            return f"{b / size:.1f}{unit}"
    return str(b)


def _holders(claims: Iterable[Mapping[str, Any]]) -> tuple[dict[DeviceID, list[str]], dict[DeviceID, list[str]]]:
    """Device → claims allocated to it: (exclusive, shares)."""
    exclusive: dict[DeviceID, list[str]] = {}
    shared: dict[DeviceID, list[str]] = {}
    for claim in claims:
        alloc = _allocation(claim)
        if not alloc:
            continue
        name = _kobj(claim)
        for r in (alloc.get("devices") or {}).get("results") or []:
            if r.get("adminAccess"):
                continue
            did = (str(r.get("driver") or ""), str(r.get("pool") or ""), str(r.get("device") or ""))
            target = shared if r.get("shareID") is not None else exclusive
            names = target.setdefault(did, [])
            if name not in names:
                names.append(name)
    return exclusive, shared


# ---------------------------------------------------------------------------------------------
# The recorder


class _Group:
    __slots__ = ("by", "detail", "devices", "key", "reason")

    def __init__(self, reason: str, key: tuple[Any, ...], detail: dict[str, Any]) -> None:
        self.reason = reason
        self.key = key
        self.detail = detail
        self.devices: dict[DeviceID, None] = {}
        self.by: dict[str, dict[DeviceID, None]] = {}  # responsible object / value -> devices


class _Trace:
    """What happened to one request (or subrequest) on one node."""

    __slots__ = ("considered", "groups", "rd", "stops", "usable")

    def __init__(self, rd: Any) -> None:
        self.rd = rd
        self.considered: dict[DeviceID, None] = {}
        self.usable: dict[DeviceID, None] = {}
        self.groups: dict[tuple[Any, ...], _Group] = {}
        self.stops: dict[str, Any] = {}


class SearchRecorder:
    """`allocator.Recorder`: collects, per request, the devices the search looked at and why each
    was rejected. One recorder per `allocate()` call (`begin` resets it)."""

    def __init__(self, *, holders: Mapping[DeviceID, list[str]] | None = None,
                 share_holders: Mapping[DeviceID, list[str]] | None = None) -> None:
        self.holders = holders or {}
        self.share_holders = share_holders or {}
        self.run: Any = None
        self.traces: dict[tuple[int, int, int], _Trace] = {}
        self.last: tuple[int, int, int] | None = None

    # -- the Recorder protocol --------------------------------------------------------------

    def begin(self, run: Any) -> None:
        self.run = run
        self.traces = {}
        self.last = None

    def reject(self, run: Any, rd: Any, dev: DeviceInfo, reason: str, detail: Any = None) -> None:
        t = self._trace(rd)
        did = dev.id
        t.considered[did] = None
        reason, key, info, by = self._describe(run, rd, dev, reason, detail)
        g = t.groups.get(key)
        if g is None:
            g = t.groups[key] = _Group(reason, key, info)
        elif reason == "constraint":
            seen = g.detail.setdefault("established", [])
            for v in info.get("established") or []:
                if v not in seen:
                    seen.append(v)
        g.devices[did] = None
        for name in by:
            g.by.setdefault(name, {})[did] = None

    def scanned(self, run: Any, rd: Any, begin: tuple[int, int], end: tuple[int, int] | None) -> None:
        t = self._trace(rd)
        segments = run.segments
        seg0, idx0 = begin
        seg_end, idx_end = end if end is not None else (len(segments), 0)
        for seg in range(seg0, min(seg_end + 1, len(segments))):
            devices = segments[seg]
            lo = idx0 if seg == seg0 else 0
            hi = idx_end if seg == seg_end else len(devices)
            for idx in range(lo, hi):
                dev = devices[idx]
                t.considered[dev.id] = None
                if run.in_use(rd, dev.id):
                    self.reject(run, rd, dev, "in-use")
        if end is not None:
            did = segments[seg_end][idx_end].id
            t.considered[did] = None
            t.usable[did] = None

    def request_failed(self, run: Any, rd: Any, reason: str, detail: Any = None) -> None:
        t = self._trace(rd)
        if reason in ("max-size", "pruned") and isinstance(detail, int):
            t.stops[reason] = max(int(t.stops.get(reason) or 0), detail)
        else:
            t.stops[reason] = detail

    # -- details ------------------------------------------------------------------------------

    def _trace(self, rd: Any) -> _Trace:
        self.last = rd.key
        t = self.traces.get(rd.key)
        if t is None:
            t = self.traces[rd.key] = _Trace(rd)
        return t

    def _describe(self, run: Any, rd: Any, dev: DeviceInfo, reason: str, detail: Any
                  ) -> tuple[str, tuple[Any, ...], dict[str, Any], list[str]]:
        """(reason, group key, detail, responsible objects) for one rejection."""
        did = dev.id
        if reason == "in-use":
            if rd.admin:
                return "in-use-attempt", ("in-use-attempt",), {}, [f"{_kobj(run.claims[rd.claim_index])} (same claim)"]
            if did in run.state.allocated_devices:
                # No name: an allocation the caller counts but did not list (the scheduler's
                # in-flight assumptions), or no claims list given at all.
                return "in-use", ("in-use",), {}, [f"claim {n}" for n in self.holders.get(did) or [OTHER_CLAIMS]]
            picked = []
            for ci in sorted(run.allocating.get(did) or ()):
                for p in run.results[ci]:
                    if p.device.id == did:
                        picked.append(f"claim {_kobj(run.claims[ci])} request {p.request.result_name()}")
            return "in-use-attempt", ("in-use-attempt",), {}, picked or ["another request"]
        if reason == "shared":
            return "shared", ("shared",), {}, [f"claim {n}" for n in self.share_holders.get(did) or ["(in this attempt)"]]
        if reason == "class-selector":
            i = int(detail)
            expr = rd.class_selectors[i].expression if i < len(rd.class_selectors) and rd.class_selectors[i] else ""
            return reason, (reason, rd.class_name, i), {"class": rd.class_name, "index": i, "expression": expr}, []
        if reason == "request-selector":
            i = int(detail)
            expr = rd.selectors[i].expression if i < len(rd.selectors) and rd.selectors[i] else ""
            return reason, (reason, i), {"index": i, "expression": expr}, []
        if reason == "binding-conditions":
            return reason, (reason,), {}, [",".join(dev.binding_conditions)]
        if reason == "capacity-missing":
            return reason, (reason, detail), {"capacity": str(detail)}, []
        if reason == "capacity-policy":
            name, consumed = detail
            cap = dev.capacity.get(name)
            policy = (dev.raw.get("capacity") or {}).get(name, {}).get("requestPolicy") if cap else None
            return reason, (reason, name), {"capacity": name, "requested": consumed.canonical(),
                                            "requestPolicy": policy}, []
        if reason == "capacity-exhausted":
            name, consumed, in_use = detail
            cap = dev.capacity.get(name)
            total = cap.value.canonical() if cap else "?"
            return reason, (reason, name), {"capacity": name, "requested": consumed.canonical()}, [
                f"{_q(in_use)} of {total} in use"]
        if reason == "counters":
            return self._counters(run, dev)
        if reason == "taint":
            for taint in run.a._taints(dev):
                if taint.get("effect") not in ("NoSchedule", "NoExecute"):
                    continue
                if any(tolerates_taint(t, taint) for t in rd.tolerations):
                    continue
                rule = run.a.taint_rule_names.get(id(taint))
                source = ("DeviceTaintRule", rule) if rule is not None else ("ResourceSlice", dev.slice.name)
                info = {"key": taint.get("key") or "", "value": taint.get("value") or "",
                        "effect": taint.get("effect") or "", "source": source[0], "sourceName": source[1],
                        "taint": _taint_text(taint)}
                return reason, (reason, info["key"], info["value"], info["effect"], *source), info, []
            return reason, (reason,), {}, []
        if reason == "constraint":
            return self._constraint(run, rd, dev, int(detail))
        return reason, (reason,), {}, []

    def _counters(self, run: Any, dev: DeviceInfo) -> tuple[str, tuple[Any, ...], dict[str, Any], list[str]]:
        pool = run.pools_by_id.get((dev.id[0], dev.id[1]))
        if pool is None:
            return "counters", ("counters",), {}, []
        avail = run._available_for(pool)
        consumed = run.consumed_counters.get(pool.name) or {}
        needs: dict[str, dict[str, int]] = {}
        for set_name, counters in dev.consumes:
            target = needs.setdefault(set_name, {})
            for cname, v in counters.items():
                target[cname] = target.get(cname, 0) + v
        for set_name, counters in avail.items():
            used = consumed.get(set_name) or {}
            for cname, v in counters.items():
                need = (needs.get(set_name) or {}).get(cname, 0)
                if v < used.get(cname, 0) + need:
                    total = pool.counter_sets.get(set_name, {}).get(cname, 0)
                    info = {"pool": str(pool), "counterSet": set_name, "counter": cname,
                            "total": _q(total),
                            "allocated": _q(total - v),
                            "inThisAttempt": _q(used.get(cname, 0)),
                            "available": _q(v - used.get(cname, 0))}
                    return "counters", ("counters", str(pool), set_name, cname), info, [
                        f"needs {_q(need)}"]
        return "counters", ("counters", str(pool)), {"pool": str(pool)}, []

    def _constraint(self, run: Any, rd: Any, dev: DeviceInfo, i: int
                    ) -> tuple[str, tuple[Any, ...], dict[str, Any], list[str]]:
        c = run.constraints[rd.claim_index][i]
        kind = "matchAttribute" if isinstance(c, MatchAttributeConstraint) else "distinctAttribute"
        established: list[str] = []
        if isinstance(c, MatchAttributeConstraint):
            if c.list_mode and c.intersection is not None:
                established.append("[" + ", ".join(sorted(str(v) for v in c.intersection[1])) + "]")
            elif c.first is not None:
                established.append(_value_text(c.first))
        elif isinstance(c, DistinctAttributeConstraint):
            established.extend(_value_text(v) for v in c.values.values())
        value = lookup_attribute(dev, c.attribute)
        info = {"index": i, "type": kind, "attribute": c.attribute, "requests": sorted(c.requests),
                "established": established}
        return "constraint", ("constraint", i), info, [
            "lacks the attribute" if value is None else f"has {_value_text(value)}"]


# ---------------------------------------------------------------------------------------------
# Turning a recorder into a per-node verdict


def _group_message(g: _Group, node: str) -> str:
    n = len(g.devices)
    devs = _listing([_short_device(d, node) for d in g.devices])
    d = g.detail
    r = g.reason
    if r == "in-use":
        holders = _listing([f"{name.removeprefix('claim ')} ({', '.join(_short_device(x, node) for x in ds)})"
                            for name, ds in g.by.items()], 4)
        return f"{_plural(n, 'device')} already allocated: {holders}"
    if r == "in-use-attempt":
        return f"{_plural(n, 'device')} picked for another request of this pod in the same attempt ({devs})"
    if r == "shared":
        return f"{_plural(n, 'device')} shared by {_listing(list(g.by), 4)} (this request needs them exclusively)"
    if r == "class-selector":
        return (f"{_plural(n, 'device')} rejected by DeviceClass {d['class']} selector #{d['index']} "
                f"`{d['expression']}` ({devs})")
    if r == "request-selector":
        return f"{_plural(n, 'device')} rejected by request selector #{d['index']} `{d['expression']}` ({devs})"
    if r == "device-node-selection":
        return f"{_plural(n, 'device')} not available on this node by their own node selection ({devs})"
    if r == "binding-conditions":
        return f"{_plural(n, 'device')} with binding conditions while DRADeviceBindingConditions is off ({devs})"
    if r == "capacity-missing":
        return f"{_plural(n, 'device')} without capacity {d['capacity']} ({devs})"
    if r == "capacity-policy":
        policy = d.get("requestPolicy")
        return (f"{_plural(n, 'device')}: capacity {d['capacity']} request {d['requested']} violates the request "
                f"policy {msgspec.json.encode(policy).decode() if policy else ''} ({devs})")
    if r == "capacity-exhausted":
        per = _listing([f"{_short_device(x, node)}: {name}" for name, ds in g.by.items() for x in ds], 4)
        return f"{_plural(n, 'device')} without {d['requested']} of {d['capacity']} left ({per})"
    if r == "partitionable-disabled":
        return f"{_plural(n, 'device')} consume counters while DRAPartitionableDevices is off ({devs})"
    if r == "counters":
        if "counter" not in d:
            return f"{_plural(n, 'device')}: shared counters of pool {d.get('pool', '?')} exhausted ({devs})"
        return (f"{_plural(n, 'device')}: counter {d['counter']} of counter set {d['counterSet']} in pool {d['pool']} "
                f"exhausted ({d['allocated']} of {d['total']} allocated, {d['inThisAttempt']} picked in this "
                f"attempt; {_listing(list(g.by), 3)}) ({devs})")
    if r == "taint":
        if "taint" not in d:
            return f"{_plural(n, 'device')} with an untolerated taint ({devs})"
        return (f"{_plural(n, 'device')} with untolerated taint {d['taint']} from {d['source']} {d['sourceName']} "
                f"({devs})")
    if r == "constraint":
        seen = _listing([f"{_short_device(x, node)} {what}" for what, ds in g.by.items() for x in ds], 4)
        if d["type"] == "matchAttribute":
            fixed = " or ".join(d.get("established") or []) or "(none)"
            before = f"the device picked first had {fixed}"
        else:
            before = f"already used: {', '.join(d.get('established') or []) or '(none)'}"
        return f"{_plural(n, 'device')} break constraint {d['type']} {d['attribute']} ({before}; {seen})"
    return f"{_plural(n, 'device')}: {REASONS.get(r, r)} ({devs})"


def _request_need(rd: Any) -> int:
    return int(rd.num_devices if rd.mode == "All" else rd.count)


def _trace_view(t: _Trace | None, rd: Any, node: str, run: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"request": rd.result_name(), "class": rd.class_name, "mode": rd.mode,
                           "count": _request_need(rd) if rd.mode != "All" else None}
    if rd.admin:
        out["adminAccess"] = True
    if t is None:
        out.update(reached=False, considered=0, usable=0, rejections=[], stops=[])
        return out
    usable = dict(t.usable)
    if rd.mode == "All":
        considered = {d.id: None for seg in run.segments for d in seg}
        considered.update(t.considered)
        rejected_later = {did for g in t.groups.values() if g.reason not in ("class-selector", "request-selector",
                                                                               "device-node-selection",
                                                                               "binding-conditions",
                                                                               "capacity-missing",
                                                                               "capacity-policy",
                                                                               "capacity-exhausted")
                          for did in g.devices}
        usable = {d.id: None for d in rd.all_devices if d.id not in rejected_later}
        out["count"] = len(rd.all_devices)
    else:
        considered = t.considered
    groups = sorted(t.groups.values(), key=lambda g: (-len(g.devices), list(REASONS).index(g.reason)
                                                      if g.reason in REASONS else 99))
    out.update(reached=True, considered=len(considered), usable=len(usable))
    out["rejections"] = [{
        "reason": g.reason, "count": len(g.devices), "message": _group_message(g, node),
        "devices": [device_id_str(d) for d in list(g.devices)[:50]],
        **({"objects": list(g.by)} if g.by else {}), **({"detail": g.detail} if g.detail else {}),
    } for g in groups]
    stops = []
    for reason, detail in t.stops.items():
        if reason == "max-size":
            text = (f"the claim would need {detail} devices, more than the limit of {ALLOCATION_RESULTS_MAX_SIZE} "
                    "per claim" if isinstance(detail, int) else STOPS[reason])
        elif reason == "pruned":
            text = "stopped early: fewer usable devices left than still needed"
        else:
            text = STOPS.get(reason, reason)
        stops.append({"reason": reason, "message": text})
    out["stops"] = stops
    return out


def _pools_view(allocator: Allocator, run: Any, node: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every pool the node could see: the gathered ones (complete / incomplete / invalid) and those
    dropped as obsolete (a newer generation exists elsewhere)."""
    name = str(_meta(node).get("name") or "")
    pools = list(run.pools) if run is not None else allocator.gather_pools(node)
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for p in pools:
        seen.add(p.id)
        gen_slices = [allocator._info(s) for s in allocator._slices_by_pool.get(p.id, ())]
        if p.incomplete:
            gens = [s for s in gen_slices if s.generation == max((x.generation for x in gen_slices), default=0)]
            want = gens[0].count if gens else 0
            out.append({"pool": str(p), "state": "incomplete", "devices": 0,
                        "reason": f"incomplete: {len(gens)} of {want} ResourceSlices of generation "
                                  f"{gens[0].generation if gens else 0} published"})
        elif p.invalid:
            out.append({"pool": str(p), "state": "invalid", "devices": 0, "reason": f"invalid: {p.invalid_reason}"})
        else:
            out.append({"pool": str(p), "state": "ok", "devices": sum(len(s.devices) for s in p.slices)})
    raw = [*allocator._slices_on_node.get(name, ()), *allocator._slices_shared]
    for s in raw:
        info: SliceInfo = allocator._info(s)
        pid = (info.driver, info.pool_name)
        if pid in seen:
            continue
        try:
            relevant = slice_matches(info, node)
        except GatherError:
            relevant = False
        if not relevant:
            continue
        seen.add(pid)
        newest = max((allocator._info(x).generation for x in allocator._slices_by_pool.get(pid, ())), default=0)
        if newest > info.generation:
            out.append({"pool": f"{pid[0]}/{pid[1]}", "state": "obsolete", "devices": 0,
                        "reason": f"obsolete: ResourceSlice {info.name} has generation {info.generation}, but "
                                  f"generation {newest} exists (the driver is republishing the pool)"})
        else:
            out.append({"pool": f"{pid[0]}/{pid[1]}", "state": "skipped", "devices": 0,
                        "reason": "skipped: uses partitionable-device fields while DRAPartitionableDevices is off"})
    return out


def _dra_view(allocator: Allocator, rec: SearchRecorder, node: Mapping[str, Any], claims: Sequence[Mapping[str, Any]],
              outcome: str, message: str, result: list[dict[str, Any]] | None) -> dict[str, Any]:
    node_name = str(_meta(node).get("name") or "")
    run = rec.run
    view: dict[str, Any] = {"outcome": outcome}
    if message:
        view["message"] = message
    view["pools"] = _pools_view(allocator, run, node)
    claim_views = []
    if run is not None:
        for ci, claim in enumerate(claims):
            reqs = []
            for ri in range(len(run.claim_requests[ci]) if ci < len(run.claim_requests) else 0):
                si = 0
                while (ci, ri, si) in run.requests:
                    rd = run.requests[(ci, ri, si)]
                    reqs.append(_trace_view(rec.traces.get(rd.key), rd, node_name, run))
                    si += 1
            claim_views.append({"claim": _kobj(claim) or _meta(claim).get("generateName", "") + "*",
                                "requests": reqs})
    view["claims"] = claim_views
    if result is not None:
        view["allocation"] = [{"claim": _kobj(c) or str(_meta(c).get("generateName", "")) + "*",
                               "devices": [{"request": r.get("request"),
                                            "device": f"{r.get('driver')}/{r.get('pool')}/{r.get('device')}",
                                            **({"bindingConditions": r["bindingConditions"]}
                                               if r.get("bindingConditions") else {})}
                                           for r in (a.get("devices") or {}).get("results") or []]}
                              for c, a in zip(claims, result, strict=False)]
    view["blocker"] = _blocker(view) if outcome != "fits" else ""
    return view


def _blocker(view: Mapping[str, Any]) -> str:
    """The one-line reason this node cannot allocate the claims."""
    outcome = view.get("outcome")
    if outcome in ("error", "timeout", "invalid-pools", "not-available"):
        return str(view.get("message") or outcome)
    candidates: list[tuple[int, str]] = []
    first_short: str | None = None
    for cv in view.get("claims") or []:
        for rv in cv.get("requests") or []:
            if not rv.get("reached"):
                continue
            need = rv.get("count") or 0
            head = f"claim {cv['claim']}, request {rv['request']}"
            rej = rv.get("rejections") or []
            if rv.get("considered", 0) == 0 and not rej:
                bad = [p for p in view.get("pools") or [] if p.get("state") != "ok"]
                why = "; ".join(p["reason"].split(":")[0] + f" pool {p['pool']}" for p in bad)
                text = f"{head}: no devices on this node" + (f" ({why})" if why else "")
                if first_short is None:
                    first_short = text
                continue
            stops = [s["message"] for s in rv.get("stops") or [] if s["reason"] == "max-size"]
            if rv.get("usable", 0) < need or (rv.get("mode") == "All" and rej):
                top = "; ".join(r["message"] for r in rej[:2]) if rej else (stops[0] if stops else "")
                text = f"{head}: {rv.get('usable', 0)} of {rv.get('considered', 0)} devices usable, {need} needed"
                text += f"; {top}" if top else ""
                if first_short is None:
                    first_short = text
            elif rej or stops:
                dyn = [r for r in rej if r["reason"] in _DYNAMIC]
                top = (dyn or rej)[0]["message"] if (dyn or rej) else stops[0]
                weight = sum(r["count"] for r in dyn) + (100 if stops else 0)
                candidates.append((weight, f"{head}: {top}" if not stops else f"{head}: {stops[0]}"))
    if first_short is not None:
        return first_short
    if candidates:
        candidates.sort(key=lambda c: -c[0])
        return candidates[0][1]
    bad = [p for p in view.get("pools") or [] if p.get("state") != "ok"]
    if bad:
        return "; ".join(f"pool {p['pool']} {p['reason']}" for p in bad)
    return "no combination of devices satisfies all claims"


# ---------------------------------------------------------------------------------------------
# The pod-level diagnosis


class _Ctx:
    """Everything the diagnosis of one pod shares across nodes."""

    def __init__(self, snap: Snapshot, pod: Mapping[str, Any], *, features: Features, cel_cache: CelCache | None,
                 filter_timeout: float) -> None:
        self.snap = snap
        self.pod = pod
        self.features = features
        self.filter_timeout = filter_timeout
        self.cel_cache = cel_cache if cel_cache is not None else CelCache()
        self.pod_uid = _uid(pod)
        self.ns = str(_meta(pod).get("namespace") or "")
        self.class_map = {str(_meta(c).get("name")): c for c in snap.classes}
        self.ext_mapping = ext.extended_resource_class_mapping(self.class_map)
        self.claims_by_key = {(str(_meta(c).get("namespace") or ""), str(_meta(c).get("name") or "")): c
                              for c in snap.claims}
        self.namespaces = {str(_meta(n).get("name") or ""): n for n in snap.namespaces}
        self.bound_node = str(_spec(pod).get("nodeName") or "")
        # Claims this pod alone holds are re-allocated in the diagnosis of a bound pod.
        self.own_claims: set[str] = set()
        self.pod_claims: list[dict[str, Any]] = []  # resolved claims, in pod order (+ extended claim)
        self.claim_rows: list[dict[str, Any]] = []
        self.alloc_claims: list[dict[str, Any]] = []  # claims to allocate (allocation stripped when own)
        self.allocated: list[tuple[dict[str, Any], Mapping[str, Any] | None]] = []  # (claim, nodeSelector)
        self.ext_template = False
        self.state: AllocatedState | None = None
        self.allocator: Allocator | None = None
        self.holders: dict[DeviceID, list[str]] = {}
        self.share_holders: dict[DeviceID, list[str]] = {}
        self.reservations: dict[str, list[str]] = {}
        self.usage: dict[str, plugins.NodeUsage] = {}
        self.req = plugins.pod_requests(pod)
        # A bound pod is diagnosed as if it were pending again (spec.nodeName is the binding, not a
        # request for that node).
        as_pending = pod if not self.bound_node else {**pod, "spec": {k: v for k, v in _spec(pod).items()
                                                                      if k != "nodeName"}}
        self.info = plugins.PodInfo(as_pending, self.req, _controller_uid(pod))
        self.trials = 0

    def build_state(self) -> None:
        counted = [c for c in self.snap.claims if _uid(c) not in self.own_claims]
        self.state = AllocatedState.from_claims(counted, consumable_capacity=self.features.consumable_capacity)
        self.holders, self.share_holders = _holders(counted)
        for c in counted:
            ns = str(_meta(c).get("namespace") or "")
            pods = [f"pod {ns}/{r.get('name', '')}" if (r.get("resource") or "pods") == "pods"
                    else f"{r.get('resource')}/{r.get('name', '')}" for r in _reserved_by(c)]
            if pods:
                self.reservations[_kobj(c)] = pods
        self.allocator = self.new_allocator()
        for p in self.snap.pods:
            if _uid(p) == self.pod_uid:
                continue
            node = str(_spec(p).get("nodeName") or "")
            if not node or _status(p).get("phase") in ("Succeeded", "Failed"):
                continue
            self.usage.setdefault(node, plugins.NodeUsage()).add(plugins.pod_requests(p), _controller_uid(p))

    def new_allocator(self, *, state: AllocatedState | None = None, classes: Mapping[str, Any] | None = None,
                      features: Features | None = None) -> Allocator:
        return Allocator(slices=self.snap.slices, classes=classes if classes is not None else self.class_map,
                         allocated=state if state is not None else self.state or AllocatedState(),
                         taint_rules=self.snap.rules, features=features or self.features, cel_cache=self.cel_cache)

    def recorder(self) -> SearchRecorder:
        return SearchRecorder(holders=self.holders, share_holders=self.share_holders)


class _Waiting(Exception):
    """The scheduler would not look at the pod yet (PreEnqueue)."""


class _PreFilter(Exception):
    """The scheduler rejects the pod for every node before filtering."""


def _resolve_claims(ctx: _Ctx) -> None:
    pod = ctx.pod
    ns = ctx.ns
    statuses = {str(s.get("name")): s for s in _status(pod).get("resourceClaimStatuses") or []
                if isinstance(s, Mapping)}
    for rc in _spec(pod).get("resourceClaims") or []:
        if not isinstance(rc, Mapping):
            continue
        row: dict[str, Any] = {"name": rc.get("name")}
        ctx.claim_rows.append(row)
        check_owner = False
        if rc.get("resourceClaimName"):
            claim_name = str(rc["resourceClaimName"])
        elif rc.get("resourceClaimTemplateName"):
            row["template"] = rc.get("resourceClaimTemplateName")
            st = statuses.get(str(rc.get("name")))
            if st is None:
                row["state"] = "not created yet"
                raise _Waiting(f"ResourceClaim for pod claim {rc.get('name')} (template "
                               f"{rc.get('resourceClaimTemplateName')}) not created yet — the resourceclaim "
                               "controller creates it")
            if not st.get("resourceClaimName"):
                row["state"] = "not needed"
                continue
            claim_name, check_owner = str(st["resourceClaimName"]), True
        else:
            raise _Waiting(f"spec.resourceClaims {rc.get('name')}: none of the supported fields are set")
        row["claim"] = f"{ns}/{claim_name}"
        claim = ctx.claims_by_key.get((ns, claim_name))
        if claim is None:
            row["state"] = "missing"
            raise _Waiting(f'resourceclaim.resource.k8s.io "{claim_name}" not found')
        if _meta(claim).get("deletionTimestamp"):
            row["state"] = "being deleted"
            raise _Waiting(f'resourceclaim "{claim_name}" is being deleted')
        if check_owner and _controller_uid(claim) != ctx.pod_uid:
            row["state"] = "not owned by the pod"
            raise _Waiting(f"ResourceClaim {claim_name} was not created for pod {_kobj(pod)} (pod is not owner)")
        alloc = _allocation(claim)
        reserved = _reserved_by(claim)
        row["state"] = "allocated" if alloc else "pending"
        row["reservedFor"] = [str(r.get("name") or "") for r in reserved]
        if alloc:
            row["devices"] = [f"{r.get('driver')}/{r.get('pool')}/{r.get('device')}"
                              for r in (alloc.get("devices") or {}).get("results") or []]
            if ctx.bound_node and reserved and all(r.get("uid") == ctx.pod_uid for r in reserved):
                ctx.own_claims.add(_uid(claim))
        ctx.pod_claims.append(claim)


def _prefilter(ctx: _Ctx) -> None:
    """DynamicResources PreFilter, as controllers/scheduler/cycle.py `_dra_prefilter` does it."""
    pod = ctx.pod
    if plugins.requested_dra_extended(ctx.req, ctx.ext_mapping):
        existing = None
        st = _status(pod).get("extendedResourceClaimStatus")
        if isinstance(st, Mapping) and st.get("resourceClaimName"):
            c = ctx.claims_by_key.get((ctx.ns, str(st["resourceClaimName"])))
            if c is not None and _controller_uid(c) == ctx.pod_uid:
                existing = c
        if existing is None:
            owned = [c for c in ctx.snap.claims if _controller_uid(c) == ctx.pod_uid]
            found = ext.find_extended_resource_claim(pod, owned)
            existing = dict(found) if found is not None else None
        if existing is not None:
            ctx.pod_claims.append(existing)
            if ctx.bound_node:
                ctx.own_claims.add(_uid(existing))
        else:
            ctx.ext_template = True
    namespace = ctx.namespaces.get(ctx.ns)
    for claim in ctx.pod_claims:
        alloc = _allocation(claim)
        own = _uid(claim) in ctx.own_claims
        if alloc is not None and not own:
            reserved = _reserved_by(claim)
            if len(reserved) >= RESERVED_FOR_MAX and not any(r.get("uid") == ctx.pod_uid for r in reserved):
                raise _PreFilter(f"resourceclaim in use: claim {_kobj(claim)} is already reserved for "
                                 f"{RESERVED_FOR_MAX} consumers")
            ctx.allocated.append((claim, alloc.get("nodeSelector")))
            continue
        body = claim
        if alloc is not None:  # a bound pod's own claim: diagnosed as if not allocated yet
            body = {k: v for k, v in claim.items() if k != "status"}
        ctx.alloc_claims.append(body)
        if ext.EXTENDED_RESOURCE_CLAIM_ANNOTATION in (_meta(claim).get("annotations") or {}):
            continue
        for request in ((_spec(claim).get("devices") or {}).get("requests") or []):
            rname = str(request.get("name") or "")
            subs = [(str((request.get("exactly") or {}).get("deviceClassName") or ""), rname)] \
                if request.get("exactly") is not None else \
                [(str(s.get("deviceClassName") or ""), f"{rname}/{s.get('name')}") for s in request.get("firstAvailable") or []]
            for cls, label in subs:
                if cls and cls not in ctx.class_map:
                    raise _PreFilter(f"request {label}: device class {cls} does not exist "
                                     f"(claim {_kobj(claim)}; create DeviceClass {cls})")
        if claim_requests_admin_access(claim) and not namespace_allows_admin_access(namespace):
            raise _PreFilter(f"resource claim {_kobj(claim)}: admin access to devices requires the "
                             f"`{ADMIN_ACCESS_NAMESPACE_LABEL}: true` label on the containing namespace")


# -- node filters ---------------------------------------------------------------------------------


def _filter_view(ctx: _Ctx, ni: plugins.NodeInfo) -> dict[str, Any] | None:
    """None if the node passes the filters before DynamicResources, else the upstream verdict
    (first failing plugin) and every failing check with its numbers."""
    info = ctx.info
    usage = ctx.usage.get(ni.name)
    status = info.filter(ni, usage, ctx.ext_mapping)
    if status is None:
        return None
    checks: list[dict[str, Any]] = []
    if ni.unschedulable and not info.tolerates_unschedulable:
        checks.append({"plugin": "NodeUnschedulable", "message": "the node is cordoned (spec.unschedulable) and the "
                       "pod does not tolerate node.kubernetes.io/unschedulable:NoSchedule", "relax": "uncordon"})
    if info.node_name and info.node_name != ni.name:
        checks.append({"plugin": "NodeName", "message": f"the pod asks for node {info.node_name}"})
    untolerated = [t for t in ni.hard_taints if not any(plugins.tolerates(tol, t) for tol in info.tolerations)]
    if untolerated:
        checks.append({"plugin": "TaintToleration", "relax": "tolerate-node-taints",
                       "taints": [dict(t) for t in untolerated],
                       "message": "untolerated node taint" + ("s " if len(untolerated) > 1 else " ")
                       + ", ".join(_taint_text(t) for t in untolerated)})
    if (info.node_selector or info.affinity is not None) and not info.affinity_matches(ni):
        wrong = [f"{k}={v} (node has {ni.labels.get(k, 'no such label')})" for k, v in info.node_selector
                 if ni.labels.get(k) != v]
        parts = []
        if wrong:
            parts.append("nodeSelector " + ", ".join(wrong))
        if info.affinity is not None:
            try:
                ok = node_selector_matches(info.affinity, ni.node)
            except NodeSelectorError:
                ok = False
            if not ok:
                parts.append("required node affinity terms do not match the node's labels")
        checks.append({"plugin": "NodeAffinity", "relax": "drop-affinity", "message": "; ".join(parts)})
    reasons = plugins.fit_reasons(ctx.req.requests, ni.alloc, usage, ctx.ext_mapping)
    if reasons:
        have = ni.alloc.resources
        used = usage.requested if usage is not None else plugins.Resources()
        want = ctx.req.requests
        parts = []
        for r in reasons:
            if r == plugins.ERR_REASON_TOO_MANY_PODS:
                parts.append(f"too many pods ({usage.pods if usage else 0} of {ni.alloc.pods} allowed)")
            elif r == "Insufficient cpu":
                parts.append(f"cpu: requests {_milli_text(want.cpu)}, {_milli_text(have.cpu - used.cpu)} free of "
                             f"{_milli_text(have.cpu)} allocatable")
            elif r == "Insufficient memory":
                parts.append(f"memory: requests {_bytes_text(want.memory)}, {_bytes_text(max(have.memory - used.memory, 0))}"
                             f" free of {_bytes_text(have.memory)} allocatable")
            else:
                parts.append(r)
        checks.append({"plugin": "NodeResourcesFit", "reasons": reasons, "message": "; ".join(parts)})
    return {"plugin": status.plugin, "reasons": list(status.reasons), "code": status.code, "checks": checks}


# -- DRA per node ----------------------------------------------------------------------------------


def _node_claims(ctx: _Ctx, node: Mapping[str, Any]) -> tuple[list[dict[str, Any]], str | None, Any]:
    """The claims to allocate on this node (with the node's extended-resource claim), or a reason
    the node cannot take the pod before allocation."""
    claims = list(ctx.alloc_claims)
    node_ext = None
    if ctx.ext_template:
        try:
            node_ext = ext.build_extended_resource_claim(ctx.pod, ctx.class_map, node=node)
        except ext.ExtendedResourceUnfit as e:
            return claims, f"Insufficient {e.resource}", None
        if node_ext is not None:
            claims.append(node_ext.claim)
    return claims, None, node_ext


def _dra_node(ctx: _Ctx, node: Mapping[str, Any]) -> dict[str, Any]:
    """The DynamicResources filter on one node, with a recorder on the allocator."""
    assert ctx.allocator is not None
    unavailable = []
    for claim, selector in ctx.allocated:
        if selector is not None:
            try:
                ok = node_selector_matches(selector, node)
            except NodeSelectorError:
                ok = False
            if not ok:
                unavailable.append(_kobj(claim))
    claims, unfit, _ = _node_claims(ctx, node)
    rec = ctx.recorder()
    if unfit is not None:
        return {"outcome": "not-available", "message": unfit, "pools": [], "claims": [], "blocker": unfit}
    result = None
    outcome, message = "fits", ""
    steps = ctx.allocator.stats.allocate_one_invocations
    if claims:
        try:
            result = ctx.allocator.allocate(node=node, claims=claims, deadline=time.monotonic() + ctx.filter_timeout,
                                            recorder=rec)
            if result is None:
                outcome = "cannot-allocate"
        except AllocationTimeout:
            outcome, message = "timeout", (f"timed out after {ctx.filter_timeout:g}s trying to allocate devices "
                                           f"(the scheduler's filter time limit)")
        except NodeAllocationError as e:
            outcome, message = "invalid-pools", str(e)
        except AllocationError as e:
            outcome, message = "error", str(e)
    if outcome == "fits" and unavailable:
        outcome = "not-available"
        message = ("resourceclaim not available on the node: " + ", ".join(unavailable)
                   + " is allocated to devices this node cannot reach")
    view = _dra_view(ctx.allocator, rec, node, claims, outcome, message, result)
    if outcome == "invalid-pools":
        bad = [f"pool {p['pool']} {p['reason']}" for p in view["pools"] if p["state"] == "invalid"]
        if bad:
            view["message"] = view["blocker"] = f"{message} ({'; '.join(bad)})"
    if outcome == "timeout" and rec.last is not None and rec.run is not None:
        rd = rec.run.requests.get(rec.last)
        if rd is not None:
            view["message"] += (f"; last at claim {_kobj(claims[rd.claim_index])} request {rd.result_name()}, after "
                                f"{ctx.allocator.stats.allocate_one_invocations - steps:,} search steps")
            view["blocker"] = view["message"]
    if result is not None:
        view["rawAllocation"] = result
    return view


# -- scores ----------------------------------------------------------------------------------------


def _scores(ctx: _Ctx, feasible: list[tuple[plugins.NodeInfo, dict[str, Any]]]
            ) -> tuple[list[float], list[dict[str, Any]]]:
    """The scheduler's scores (`scheduler_plugins.total_scores`) and their raw inputs."""
    inputs = []
    for ni, dra in feasible:
        allocs = (dra or {}).get("rawAllocation") or []
        dra_score = plugins.prioritized_list_score(ctx.alloc_claims, allocs) if allocs else 0
        inputs.append(ctx.info.raw_score(ni, ctx.usage.get(ni.name), dra_score))
    details = [{"leastAllocated": round(s.least, 3), "balancedAllocation": round(s.balanced, 3),
                "untoleratedPreferNoScheduleTaints": s.taints, "preferredAffinity": s.affinity,
                "siblingsOnNode": s.siblings, "prioritizedList": s.dra} for s in inputs]
    return plugins.total_scores(inputs), details


# -- the smallest change ------------------------------------------------------------------------


class _Relax(msgspec.Struct, kw_only=True):
    rank: int
    kind: str
    node: str
    change: str
    claims: list[dict[str, Any]] | None = None
    state: Any = None
    classes: dict[str, Any] | None = None
    features: Features | None = None
    objects: list[str] = msgspec.field(default_factory=list)
    dra_only: bool = True  # False: a node-filter relaxation; DRA must fit as it is


def _copy(obj: Any) -> Any:
    return msgspec.json.decode(msgspec.json.encode(obj))


def _claim_requests_of(claim: dict[str, Any]) -> list[dict[str, Any]]:
    return ((claim.setdefault("spec", {}).setdefault("devices", {})).get("requests")) or []


def _request_specs(claim: dict[str, Any], request_name: str) -> list[dict[str, Any]]:
    """The mutable spec dicts of a request (`exactly`) or one subrequest (`parent/sub`)."""
    parent, _, sub = request_name.partition("/")
    out = []
    for req in _claim_requests_of(claim):
        if req.get("name") != parent:
            continue
        if sub:
            out.extend(s for s in req.get("firstAvailable") or [] if s.get("name") == sub)
        elif req.get("exactly") is not None:
            out.append(req["exactly"])
    return out


def _with_claim_change(ctx: _Ctx, ci: int, change: Any) -> list[dict[str, Any]]:
    claims = [_copy(c) if i == ci else c for i, c in enumerate(ctx.alloc_claims)]
    change(claims[ci])
    return claims


def _relaxations(ctx: _Ctx, node: str, dra: Mapping[str, Any], claims_by_name: Mapping[str, int]) -> list[_Relax]:
    out: list[_Relax] = []
    seen: set[tuple[Any, ...]] = set()

    def add(r: _Relax, key: tuple[Any, ...]) -> None:
        if key not in seen:
            seen.add(key)
            out.append(r)

    for cv in dra.get("claims") or []:
        ci = claims_by_name.get(cv["claim"])
        if ci is None:
            continue
        claim_label = cv["claim"].split("/", 1)[-1]
        for rv in cv.get("requests") or []:
            rname = rv["request"]
            for rej in rv.get("rejections") or []:
                reason, d = rej["reason"], rej.get("detail") or {}
                if reason == "taint" and d.get("key") is not None:
                    tol = {"key": d["key"], "operator": "Equal" if d.get("value") else "Exists",
                           "effect": d["effect"]}
                    if d.get("value"):
                        tol["value"] = d["value"]

                    def tolerate(c: dict[str, Any], tol: dict[str, Any] = tol) -> None:
                        for req in _claim_requests_of(c):
                            specs = [req["exactly"]] if req.get("exactly") is not None else list(
                                req.get("firstAvailable") or [])
                            for s in specs:
                                s["tolerations"] = [*(s.get("tolerations") or []), tol]

                    what = f"{d['key']}={d['value']}:{d['effect']}" if d.get("value") else f"{d['key']}:{d['effect']}"
                    add(_Relax(rank=1, kind="tolerate-device-taint", node=node,
                               change=f"claim {claim_label} tolerated {what}",
                               claims=_with_claim_change(ctx, ci, tolerate),
                               objects=[f"{d['source']}/{d['sourceName']}"]), ("taint", ci, what))
                    if len(ctx.alloc_claims) > 1:
                        all_claims = [_copy(c) for c in ctx.alloc_claims]
                        for c in all_claims:
                            tolerate(c)
                        add(_Relax(rank=2, kind="tolerate-device-taint", node=node,
                                   change=f"every claim of the pod tolerated {what}", claims=all_claims,
                                   objects=[f"{d['source']}/{d['sourceName']}"]), ("taint-all", what))
                elif reason in ("in-use", "shared", "capacity-exhausted", "counters"):
                    holders: list[str] = []
                    if reason in ("in-use", "shared"):
                        holders = [o.removeprefix("claim ") for o in rej.get("objects") or []
                                   if o.startswith("claim ") and o != f"claim {OTHER_CLAIMS}"]
                    else:
                        holders = _holders_of_pool(ctx, rej, reason)
                    for h in holders:
                        held = [dv for dv, names in ctx.holders.items() if h in names]
                        held += [dv for dv, names in ctx.share_holders.items() if h in names]
                        pods = ctx.reservations.get(h) or []
                        by = f", reserved for {_listing(pods, 2)}" if pods else ""
                        add(_Relax(rank=3, kind="deallocate", node=node,
                                   change=f"claim {h} (holding {_listing([device_id_str(x) for x in held], 2)}{by}) "
                                          "were deallocated",
                                   state=("without", h), objects=[f"ResourceClaim/{h}"]), ("dealloc", h))
                elif reason == "constraint":
                    i = int(d.get("index", 0))

                    def drop_constraint(c: dict[str, Any], i: int = i) -> None:
                        cons = c["spec"]["devices"].get("constraints") or []
                        del cons[i]

                    add(_Relax(rank=4, kind="drop-constraint", node=node,
                               change=f"claim {claim_label} did not require {d.get('type')} {d.get('attribute')}",
                               claims=_with_claim_change(ctx, ci, drop_constraint),
                               objects=[f"ResourceClaim/{cv['claim']}"]), ("constraint", ci, i))
                elif reason == "request-selector":
                    i = int(d.get("index", 0))

                    def drop_selector(c: dict[str, Any], i: int = i, rname: str = rname) -> None:
                        for s in _request_specs(c, rname):
                            sels = s.get("selectors") or []
                            if i < len(sels):
                                del sels[i]

                    add(_Relax(rank=5, kind="drop-request-selector", node=node,
                               change=f"claim {claim_label} request {rname} did not have selector `{d.get('expression')}`",
                               claims=_with_claim_change(ctx, ci, drop_selector),
                               objects=[f"ResourceClaim/{cv['claim']}"]), ("reqsel", ci, rname, i))
                elif reason == "class-selector":
                    cls_name, i = d.get("class"), int(d.get("index", 0))
                    cls = ctx.class_map.get(str(cls_name))
                    if cls is not None:
                        new_cls = _copy(cls)
                        sels = new_cls.get("spec", {}).get("selectors") or []
                        if i < len(sels):
                            del sels[i]
                        add(_Relax(rank=7, kind="drop-class-selector", node=node,
                                   change=f"DeviceClass {cls_name} did not have selector `{d.get('expression')}`",
                                   classes={**ctx.class_map, str(cls_name): new_cls},
                                   objects=[f"DeviceClass/{cls_name}"]), ("classsel", cls_name, i))
                elif reason == "binding-conditions":
                    add(_Relax(rank=8, kind="feature", node=node,
                               change="the DRADeviceBindingConditions feature were enabled",
                               features=msgspec.structs.replace(ctx.features, device_binding_and_status=True)),
                        ("feature", "binding"))
                elif reason == "partitionable-disabled":
                    add(_Relax(rank=8, kind="feature", node=node,
                               change="the DRAPartitionableDevices feature were enabled",
                               features=msgspec.structs.replace(ctx.features, partitionable_devices=True)),
                        ("feature", "partitionable"))
            usable, need = rv.get("usable", 0), rv.get("count") or 0
            if rv.get("mode") == "ExactCount" and rv.get("reached") and 0 < usable < need:
                def fewer(c: dict[str, Any], rname: str = rname, usable: int = usable) -> None:
                    for s in _request_specs(c, rname):
                        s["count"] = usable

                add(_Relax(rank=4, kind="reduce-count", node=node,
                           change=f"claim {claim_label} request {rname} asked for {_plural(usable, 'device')} instead of {need}",
                           claims=_with_claim_change(ctx, ci, fewer), objects=[f"ResourceClaim/{cv['claim']}"]),
                    ("count", ci, rname))
    return out


def _holders_of_pool(ctx: _Ctx, rej: Mapping[str, Any], reason: str) -> list[str]:
    """Claims whose devices keep a counter or a device's capacity busy."""
    d = rej.get("detail") or {}
    devices = [tuple(x.split("/", 2)) for x in rej.get("devices") or []]
    names: list[str] = []
    if reason == "capacity-exhausted":
        for did in devices:
            for n in ctx.share_holders.get(did) or []:  # type: ignore[call-overload]
                if n not in names:
                    names.append(n)
        return names
    pool = str(d.get("pool") or "")
    set_name = d.get("counterSet")
    if not pool or ctx.allocator is None:
        return names
    driver, _, pool_name = pool.partition("/")
    consuming: set[DeviceID] = set()
    for s in ctx.allocator._slices_by_pool.get((driver, pool_name), ()):
        for dev in ctx.allocator._info(s).devices:
            if any(cs == set_name for cs, _ in dev.consumes):
                consuming.add(dev.id)
    for did in sorted(consuming):
        for n in (ctx.holders.get(did) or []) + (ctx.share_holders.get(did) or []):
            if n not in names:
                names.append(n)
    return names


def _node_relaxations(ctx: _Ctx, ni: plugins.NodeInfo, fv: Mapping[str, Any]) -> list[_Relax]:
    checks = fv.get("checks") or []
    if len(checks) != 1:
        return []
    check = checks[0]
    kind = check.get("relax")
    if kind == "tolerate-node-taints":
        taints = check.get("taints") or []
        what = ", ".join(_taint_text(t) for t in taints)
        return [_Relax(rank=3, kind="tolerate-node-taint", node=ni.name, dra_only=False,
                       change=f"the pod tolerated node taint{'s' if len(taints) > 1 else ''} {what}",
                       objects=[f"Node/{ni.name}"])]
    if kind == "uncordon":
        return [_Relax(rank=5, kind="uncordon", node=ni.name, dra_only=False,
                       change=f"node {ni.name} were uncordoned", objects=[f"Node/{ni.name}"])]
    if kind == "drop-affinity":
        return [_Relax(rank=6, kind="drop-affinity", node=ni.name, dra_only=False,
                       change=f"the pod's node selector / affinity allowed {ni.name} ({check.get('message')})",
                       objects=[f"Pod/{_kobj(ctx.pod)}"])]
    if check.get("plugin") == "NodeResourcesFit":
        return [_Relax(rank=6, kind="free-resources", node=ni.name, dra_only=False,
                       change=f"{ni.name} had room for the pod ({check.get('message')})", objects=[f"Node/{ni.name}"])]
    return []


def _try(ctx: _Ctx, r: _Relax, node: Mapping[str, Any]) -> list[dict[str, Any]] | bool | None:
    """Does the pod fit on the node with this relaxation? Allocation results, True (fits without
    claims), or None."""
    ctx.trials += 1
    claims = r.claims if r.claims is not None else list(ctx.alloc_claims)
    if ctx.ext_template:
        _, unfit, node_ext = _node_claims(ctx, node)
        if unfit is not None:
            return None
        if node_ext is not None:
            claims = [*claims, node_ext.claim]
    for _claim, selector in ctx.allocated:
        if selector is not None:
            try:
                if not node_selector_matches(selector, node):
                    return None
            except NodeSelectorError:
                return None
    if not claims:
        return True
    allocator = ctx.allocator
    assert allocator is not None
    if r.state is not None or r.classes is not None or r.features is not None:
        state = None
        if r.state is not None:
            _, holder = r.state
            state = (ctx.state or AllocatedState()).copy()
            for c in ctx.snap.claims:
                if _kobj(c) == holder and _uid(c) not in ctx.own_claims:
                    state.remove_claim(c)
        allocator = ctx.new_allocator(state=state, classes=r.classes, features=r.features)
    try:
        return allocator.allocate(node=node, claims=claims,
                                  deadline=time.monotonic() + min(ctx.filter_timeout, 2.0))
    except (AllocationError, AllocationTimeout, NodeAllocationError):
        return None


def _suggest(ctx: _Ctx, nodes: Mapping[str, Mapping[str, Any]], verdicts: list[dict[str, Any]],
             infos: Mapping[str, plugins.NodeInfo], *, max_trials: int, budget: float) -> list[dict[str, Any]]:
    claims_by_name = {(_kobj(c) or str(_meta(c).get("generateName", "")) + "*"): i
                      for i, c in enumerate(ctx.alloc_claims)}
    relaxes: list[_Relax] = []
    for v in verdicts:
        name = v["node"]
        if v.get("filter") is not None:
            relaxes.extend(_node_relaxations(ctx, infos[name], v["filter"]))
        elif v.get("dra") is not None and v["dra"].get("outcome") == "cannot-allocate":
            relaxes.extend(_relaxations(ctx, name, v["dra"], claims_by_name))
    relaxes.sort(key=lambda r: r.rank)  # stable: node order within a rank
    found: list[dict[str, Any]] = []
    kinds: set[str] = set()
    deadline = time.monotonic() + budget
    for r in relaxes:
        if len(found) >= 3 or ctx.trials >= max_trials or time.monotonic() > deadline:
            break
        if r.kind in kinds:
            continue
        result = _try(ctx, r, nodes[r.node])
        if result is None:
            continue
        kinds.add(r.kind)
        entry: dict[str, Any] = {"node": r.node, "kind": r.kind, "change": r.change,
                                 "message": f"{r.node} would fit if {r.change}", "objects": r.objects}
        if isinstance(result, list):
            entry["devices"] = [f"{x.get('driver')}/{x.get('pool')}/{x.get('device')}"
                                for a in result for x in (a.get("devices") or {}).get("results") or []]
        found.append(entry)
    return found


# -- entry point ---------------------------------------------------------------------------------


def find_pod(snap: Snapshot, namespace: str, name: str) -> dict[str, Any] | None:
    for p in snap.pods:
        m = _meta(p)
        if m.get("name") == name and (m.get("namespace") or "") == namespace:
            return p
    return None


def explain_pod(snap: Snapshot, *, namespace: str, name: str, node: str | None = None,
                features: Features = FEATURES, cel_cache: CelCache | None = None,
                filter_timeout: float = FILTER_TIMEOUT, suggest: bool = True, max_trials: int = 64,
                suggest_budget: float = 5.0) -> dict[str, Any]:
    """The diagnosis of one pod against a snapshot. Raises KeyError if the pod does not exist."""
    pod = find_pod(snap, namespace, name)
    if pod is None:
        raise KeyError(f"{namespace}/{name}")
    ctx = _Ctx(snap, pod, features=features, cel_cache=cel_cache, filter_timeout=filter_timeout)
    out: dict[str, Any] = {
        "apiVersion": API_VERSION, "kind": KIND,
        "metadata": {"namespace": namespace, "name": name, "resourceVersion": str(snap.revision)},
        "verdict": "", "summary": "",
        "pod": {"uid": ctx.pod_uid, "nodeName": ctx.bound_node or None, "phase": _status(pod).get("phase"),
                "schedulerName": _spec(pod).get("schedulerName") or SCHEDULER_NAME},
    }
    cond = next((c for c in _status(pod).get("conditions") or []
                 if isinstance(c, Mapping) and c.get("type") == "PodScheduled"), None)
    if cond is not None and cond.get("status") == "False":
        out["pod"]["schedulerMessage"] = cond.get("message")

    def finish(verdict: str, summary: str) -> dict[str, Any]:
        out["verdict"] = verdict
        out["summary"] = summary
        out["claims"] = ctx.claim_rows
        return out

    if _meta(pod).get("deletionTimestamp"):
        return finish("Deleting", "the pod is being deleted; the scheduler ignores it")
    if _status(pod).get("phase") in ("Succeeded", "Failed"):
        return finish("Terminal", f"the pod has finished ({_status(pod).get('phase')})")
    if (_spec(pod).get("schedulerName") or SCHEDULER_NAME) != SCHEDULER_NAME:
        return finish("NotResponsible", f"the pod asks for scheduler {_spec(pod).get('schedulerName')}, "
                                        f"not {SCHEDULER_NAME}")
    if _spec(pod).get("schedulingGates") and not ctx.bound_node:
        gates = ", ".join(str(g.get("name")) for g in _spec(pod)["schedulingGates"] if isinstance(g, Mapping))
        return finish("Gated", f"scheduling gates {gates} hold the pod back")
    try:
        _resolve_claims(ctx)
        _prefilter(ctx)
    except _Waiting as exc:
        return finish("Waiting", f"the scheduler waits before trying this pod: {exc}")
    except _PreFilter as exc:
        ctx.build_state()
        n = len(snap.nodes)
        out["upstreamMessage"] = plugins.fit_error(n, {}, prefilter=plugins.Status(plugins.UNRESOLVABLE, [str(exc)]))
        return finish("Unschedulable", f"rejected before looking at nodes: {exc}")
    ctx.build_state()

    node_objs = {str(_meta(n).get("name") or ""): n for n in snap.nodes}
    names = sorted(node_objs)
    if node is not None:
        if node not in node_objs:
            raise KeyError(f"node {node}")
        names = [node]
    infos = {n: plugins.NodeInfo(node_objs[n]) for n in names}
    verdicts: list[dict[str, Any]] = []
    statuses: dict[str, plugins.Status] = {}
    feasible: list[tuple[plugins.NodeInfo, dict[str, Any]]] = []
    errors: list[str] = []
    dra_active = bool(ctx.alloc_claims or ctx.allocated or ctx.ext_template)
    for n in names:
        ni = infos[n]
        v: dict[str, Any] = {"node": n, "fits": False}
        fv = _filter_view(ctx, ni)
        if fv is not None:
            v["filter"] = fv
            statuses[n] = plugins.Status(fv["code"], fv["reasons"], fv["plugin"])
        elif dra_active:
            dra = _dra_node(ctx, node_objs[n])
            v["dra"] = dra
            if dra["outcome"] == "fits":
                v["fits"] = True
                feasible.append((ni, dra))
            elif dra["outcome"] in ("error", "timeout"):
                errors.append(f"{n}: {dra['message']}")
                statuses[n] = plugins.Status(plugins.UNRESOLVABLE, [dra["message"]], DRA_PLUGIN)
            elif dra["outcome"] == "invalid-pools":
                statuses[n] = plugins.Status(plugins.UNRESOLVABLE, [dra["message"]], DRA_PLUGIN)
            elif dra["outcome"] == "not-available":
                statuses[n] = plugins.Status(plugins.UNRESOLVABLE, [
                    "resourceclaim not available on the node" if "resourceclaim" in dra["message"]
                    else dra["message"]], DRA_PLUGIN)
            else:
                statuses[n] = plugins.Status(plugins.UNRESOLVABLE, [CANNOT_ALLOCATE], DRA_PLUGIN)
        else:
            v["fits"] = True
            feasible.append((ni, {}))
        verdicts.append(v)
    out["nodes"] = verdicts
    if ctx.bound_node:
        out["bound"] = {"node": ctx.bound_node, "claims": [
            {"claim": r.get("claim"), "devices": r.get("devices") or []} for r in ctx.claim_rows if r.get("claim")]}

    if feasible:
        totals, details = _scores(ctx, feasible)
        best = max(totals)
        for (ni, _dra), score, detail in zip(feasible, totals, details, strict=True):
            v = next(v for v in verdicts if v["node"] == ni.name)
            v["score"] = round(score, 3)
            v["scoreDetail"] = detail
        top = [ni.name for (ni, _), s in zip(feasible, totals, strict=True) if s == best]
        chosen_ni, chosen_dra = next(f for f in feasible if f[0].name == top[0])
        chosen: dict[str, Any] = {"node": chosen_ni.name, "score": round(best, 3), "tiedWith": top[1:],
                                  "allocation": (chosen_dra or {}).get("allocation") or []}
        out["chosen"] = chosen
        if errors:
            out["errors"] = errors
        where = f"{chosen_ni.name}" + (f" (tied with {_listing(top[1:], 3)}; the scheduler picks one at random)"
                                       if len(top) > 1 else "")
        devs = [d["device"] for a in chosen["allocation"] for d in a.get("devices") or []]
        if ctx.bound_node:
            summary = (f"bound to {ctx.bound_node}; scheduled again now it would go to {where}"
                       + (f" with {_listing(devs, 4)}" if devs else ""))
            return finish("Bound", summary)
        return finish("Schedulable", f"fits: {len(feasible)} of {len(names)} nodes feasible; best {where}"
                      + (f" with {_listing(devs, 4)}" if devs else ""))

    n_all = len(names)
    dra_msg = "still not schedulable" if dra_active else "no new claims to deallocate"
    post = f"{dra_msg}, {plugins.preemption_message(pod, n_all, statuses, None)}"
    out["upstreamMessage"] = plugins.fit_error(n_all, statuses, post_filter=post)
    if errors:
        out["errors"] = errors
    if suggest:
        out["suggestions"] = _suggest(ctx, node_objs, verdicts, infos, max_trials=max_trials, budget=suggest_budget)
    if not names:
        summary = "no nodes"
    else:
        filtered = sum(1 for v in verdicts if v.get("filter") is not None)
        summary = f"0/{n_all} nodes fit: {filtered} filtered before DRA, {n_all - filtered} cannot allocate the claims"
        if out.get("suggestions"):
            summary += f"; smallest change: {out['suggestions'][0]['message']}"
    if ctx.bound_node:
        return finish("Bound", f"bound to {ctx.bound_node}; scheduled again now it would not fit ({summary})")
    return finish("Error" if errors else "Unschedulable", summary)


# ---------------------------------------------------------------------------------------------
# The scheduler's short form


def short_reason(allocator: Allocator, *, pod: Mapping[str, Any], claims: Sequence[Mapping[str, Any]],
                 nodes: Sequence[Mapping[str, Any]], all_claims: Iterable[Mapping[str, Any]] | None = None,
                 max_nodes: int = 8, budget: float = 0.05, limit: int = 600) -> str:
    """One line for the `FailedScheduling` event and `PodScheduled` message, appended after the
    upstream sentence: why each of (up to `max_nodes`, by name) the nodes the DynamicResources
    filter rejected cannot allocate `claims`, nodes with the same blocker grouped. `all_claims`
    (optional) names the claims holding devices. Runs the allocator again with a recorder, so it
    costs one allocation per node listed — only on the failure path — and at most `budget` seconds
    of search in all (nodes left when it is spent are "not analysed"). The text has no timings,
    so the same state gives the same text."""
    if not claims or not nodes:
        return ""
    holders, shares = _holders(all_claims) if all_claims is not None else ({}, {})
    ordered = sorted(nodes, key=lambda n: str(_meta(n).get("name") or ""))
    by_text: dict[str, list[str]] = {}
    deadline = time.monotonic() + budget
    analysed = 0
    for node in ordered[:max_nodes]:
        if analysed and time.monotonic() > deadline:
            break
        analysed += 1
        name = str(_meta(node).get("name") or "")
        rec = SearchRecorder(holders=holders, share_holders=shares)
        try:
            result = allocator.allocate(node=node, claims=claims, deadline=deadline, recorder=rec)
            view = _dra_view(allocator, rec, node, claims, "fits" if result is not None else "cannot-allocate",
                             "", result)
            text = view["blocker"] if result is None else "fits now"
        except AllocationTimeout:
            text = "the search takes longer than the explanation's budget"
        except NodeAllocationError as e:
            text = str(e)
        except AllocationError as e:
            text = str(e)
        by_text.setdefault(text, []).append(name)
    parts = []
    for text, names in sorted(by_text.items(), key=lambda kv: (-len(kv[1]), kv[1][0])):
        parts.append(f"{_listing(names, 3)}: {text}")
    more = len(ordered) - analysed
    msg = "cplane why: " + "; ".join(parts) + (f"; {more} more nodes not analysed" if more > 0 else "")
    if len(msg) > limit:
        msg = msg[:limit - 4] + " ..."
    return msg + "."
