"""The recorder the allocator reports rejected candidate devices to (`allocator.Recorder`), and turning
what it recorded into a per-node DRA verdict: groups of devices per claim, request and reason, with the
object responsible. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from cp import objects
from cp.dra.allocator import (
    ALLOCATION_RESULTS_MAX_SIZE,
    Allocator,
)
from cp.dra.constraints import (
    DistinctAttributeConstraint,
    MatchAttributeConstraint,
    lookup_attribute,
)
from cp.dra.model import DeviceID, DeviceInfo, SliceInfo, device_id_str, tolerates_taint
from cp.dra.pools import GatherError
from cp.dra.pools import _slice_matches as slice_matches
from cp.scheduling.explain.common import (
    DYNAMIC,
    OTHER_CLAIMS,
    REASONS,
    STOPS,
    listing,
    plural,
    quantity_text,
    short_device,
    taint_text,
    value_text,
)


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
                return "in-use-attempt", ("in-use-attempt",), {}, [f"{objects.display_key(run.claims[rd.claim_index])} (same claim)"]
            if did in run.state.allocated_devices:
                # No name: an allocation the caller counts but did not list (the scheduler's
                # in-flight assumptions), or no claims list given at all.
                return "in-use", ("in-use",), {}, [f"claim {n}" for n in self.holders.get(did) or [OTHER_CLAIMS]]
            picked = []
            for ci in sorted(run.allocating.get(did) or ()):
                for p in run.results[ci]:
                    if p.device.id == did:
                        picked.append(f"claim {objects.display_key(run.claims[ci])} request {p.request.result_name()}")
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
                f"{quantity_text(in_use)} of {total} in use"]
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
                        "taint": taint_text(taint)}
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
                            "total": quantity_text(total),
                            "allocated": quantity_text(total - v),
                            "inThisAttempt": quantity_text(used.get(cname, 0)),
                            "available": quantity_text(v - used.get(cname, 0))}
                    return "counters", ("counters", str(pool), set_name, cname), info, [
                        f"needs {quantity_text(need)}"]
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
                established.append(value_text(c.first))
        elif isinstance(c, DistinctAttributeConstraint):
            established.extend(value_text(v) for v in c.values.values())
        value = lookup_attribute(dev, c.attribute)
        info = {"index": i, "type": kind, "attribute": c.attribute, "requests": sorted(c.requests),
                "established": established}
        return "constraint", ("constraint", i), info, [
            "lacks the attribute" if value is None else f"has {value_text(value)}"]


def _group_message(g: _Group, node: str) -> str:
    n = len(g.devices)
    devs = listing([short_device(d, node) for d in g.devices])
    d = g.detail
    r = g.reason
    if r == "in-use":
        holders = listing([f"{name.removeprefix('claim ')} ({', '.join(short_device(x, node) for x in ds)})"
                            for name, ds in g.by.items()], 4)
        return f"{plural(n, 'device')} already allocated: {holders}"
    if r == "in-use-attempt":
        return f"{plural(n, 'device')} picked for another request of this pod in the same attempt ({devs})"
    if r == "shared":
        return f"{plural(n, 'device')} shared by {listing(list(g.by), 4)} (this request needs them exclusively)"
    if r == "class-selector":
        return (f"{plural(n, 'device')} rejected by DeviceClass {d['class']} selector #{d['index']} "
                f"`{d['expression']}` ({devs})")
    if r == "request-selector":
        return f"{plural(n, 'device')} rejected by request selector #{d['index']} `{d['expression']}` ({devs})"
    if r == "device-node-selection":
        return f"{plural(n, 'device')} not available on this node by their own node selection ({devs})"
    if r == "binding-conditions":
        return f"{plural(n, 'device')} with binding conditions while DRADeviceBindingConditions is off ({devs})"
    if r == "capacity-missing":
        return f"{plural(n, 'device')} without capacity {d['capacity']} ({devs})"
    if r == "capacity-policy":
        policy = d.get("requestPolicy")
        return (f"{plural(n, 'device')}: capacity {d['capacity']} request {d['requested']} violates the request "
                f"policy {msgspec.json.encode(policy).decode() if policy else ''} ({devs})")
    if r == "capacity-exhausted":
        per = listing([f"{short_device(x, node)}: {name}" for name, ds in g.by.items() for x in ds], 4)
        return f"{plural(n, 'device')} without {d['requested']} of {d['capacity']} left ({per})"
    if r == "partitionable-disabled":
        return f"{plural(n, 'device')} consume counters while DRAPartitionableDevices is off ({devs})"
    if r == "compatibility-groups-disabled":
        return f"{plural(n, 'device')} declare compatibility groups while DRADeviceCompatibilityGroups is off ({devs})"
    if r == "compatibility-groups":
        return (f"{plural(n, 'device')} without a compatibility group in common with the devices already on "
                f"their counter sets ({devs})")
    if r == "counters":
        if "counter" not in d:
            return f"{plural(n, 'device')}: shared counters of pool {d.get('pool', '?')} exhausted ({devs})"
        return (f"{plural(n, 'device')}: counter {d['counter']} of counter set {d['counterSet']} in pool {d['pool']} "
                f"exhausted ({d['allocated']} of {d['total']} allocated, {d['inThisAttempt']} picked in this "
                f"attempt; {listing(list(g.by), 3)}) ({devs})")
    if r == "taint":
        if "taint" not in d:
            return f"{plural(n, 'device')} with an untolerated taint ({devs})"
        return (f"{plural(n, 'device')} with untolerated taint {d['taint']} from {d['source']} {d['sourceName']} "
                f"({devs})")
    if r == "constraint":
        seen = listing([f"{short_device(x, node)} {what}" for what, ds in g.by.items() for x in ds], 4)
        if d["type"] == "matchAttribute":
            fixed = " or ".join(d.get("established") or []) or "(none)"
            before = f"the device picked first had {fixed}"
        else:
            before = f"already used: {', '.join(d.get('established') or []) or '(none)'}"
        return f"{plural(n, 'device')} break constraint {d['type']} {d['attribute']} ({before}; {seen})"
    return f"{plural(n, 'device')}: {REASONS.get(r, r)} ({devs})"


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
    name = str(objects.meta_of(node).get("name") or "")
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


def dra_view(allocator: Allocator, rec: SearchRecorder, node: Mapping[str, Any], claims: Sequence[Mapping[str, Any]],
              outcome: str, message: str, result: list[dict[str, Any]] | None) -> dict[str, Any]:
    node_name = str(objects.meta_of(node).get("name") or "")
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
            claim_views.append({"claim": objects.display_key(claim) or objects.meta_of(claim).get("generateName", "") + "*",
                                "requests": reqs})
    view["claims"] = claim_views
    if result is not None:
        view["allocation"] = [{"claim": objects.display_key(c) or str(objects.meta_of(c).get("generateName", "")) + "*",
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
                dyn = [r for r in rej if r["reason"] in DYNAMIC]
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
