""""The smallest change": the allocator runs again with one thing relaxed at a time (tolerate a device
taint, deallocate one claim, ask for fewer devices, drop a constraint or a selector, tolerate a node
taint, uncordon...), cheapest first; the first that makes the pod fit on some node is reported, with up
to two alternatives. Pure."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import msgspec

from cp import objects
from cp.dra.allocator import (
    AllocationError,
    AllocationTimeout,
    Features,
    NodeAllocationError,
)
from cp.dra.model import DeviceID, device_id_str
from cp.dra.nodeselector import NodeSelectorError, node_selector_matches
from cp.dra.state import AllocatedState
from cp.scheduling import plugins
from cp.scheduling.explain.common import (
    OTHER_CLAIMS,
    listing,
    plural,
    taint_text,
)
from cp.scheduling.explain.context import (
    Context,
    node_claims,
)


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
    out: list[dict[str, Any]] = []
    for req in _claim_requests_of(claim):
        if req.get("name") != parent:
            continue
        if sub:
            out.extend(s for s in req.get("firstAvailable") or [] if s.get("name") == sub)
        elif req.get("exactly") is not None:
            out.append(req["exactly"])
    return out


def _with_claim_change(ctx: Context, ci: int, change: Any) -> list[dict[str, Any]]:
    claims = [_copy(c) if i == ci else c for i, c in enumerate(ctx.alloc_claims)]
    change(claims[ci])
    return claims


def _relaxations(ctx: Context, node: str, dra: Mapping[str, Any], claims_by_name: Mapping[str, int]) -> list[_Relax]:
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
                if reason in ("capacity-exhausted", "capacity-policy") \
                        and not ctx.features.fractional_capacity_range:
                    # Tried like every change: kept only if milli-unit ranges make the pod fit.
                    add(_Relax(rank=8, kind="feature", node=node,
                               change="the DRAFractionalCapacityRange feature were enabled",
                               features=msgspec.structs.replace(ctx.features, fractional_capacity_range=True)),
                        ("feature", "fractional"))
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
                        by = f", reserved for {listing(pods, 2)}" if pods else ""
                        add(_Relax(rank=3, kind="deallocate", node=node,
                                   change=f"claim {h} (holding {listing([device_id_str(x) for x in held], 2)}{by}) "
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
                elif reason == "compatibility-groups-disabled":
                    add(_Relax(rank=8, kind="feature", node=node,
                               change="the DRADeviceCompatibilityGroups feature were enabled",
                               features=msgspec.structs.replace(ctx.features, compatibility_groups=True)),
                        ("feature", "compatibility-groups"))
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
                           change=f"claim {claim_label} request {rname} asked for {plural(usable, 'device')} instead of {need}",
                           claims=_with_claim_change(ctx, ci, fewer), objects=[f"ResourceClaim/{cv['claim']}"]),
                    ("count", ci, rname))
    return out


def _holders_of_pool(ctx: Context, rej: Mapping[str, Any], reason: str) -> list[str]:
    """Claims whose devices keep a counter or a device's capacity busy."""
    d = rej.get("detail") or {}
    devices = [tuple(x.split("/", 2)) for x in rej.get("devices") or []]
    names: list[str] = []
    if reason == "capacity-exhausted":
        for did in devices:
            for n in ctx.share_holders.get(did) or []:
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


def _node_relaxations(ctx: Context, ni: plugins.NodeInfo, fv: Mapping[str, Any]) -> list[_Relax]:
    checks = fv.get("checks") or []
    if len(checks) != 1:
        return []
    check = checks[0]
    kind = check.get("relax")
    if kind == "tolerate-node-taints":
        taints = check.get("taints") or []
        what = ", ".join(taint_text(t) for t in taints)
        return [_Relax(rank=3, kind="tolerate-node-taint", node=ni.name, dra_only=False,
                       change=f"the pod tolerated node taint{'s' if len(taints) > 1 else ''} {what}",
                       objects=[f"Node/{ni.name}"])]
    if kind == "uncordon":
        return [_Relax(rank=5, kind="uncordon", node=ni.name, dra_only=False,
                       change=f"node {ni.name} were uncordoned", objects=[f"Node/{ni.name}"])]
    if kind == "drop-affinity":
        return [_Relax(rank=6, kind="drop-affinity", node=ni.name, dra_only=False,
                       change=f"the pod's node selector / affinity allowed {ni.name} ({check.get('message')})",
                       objects=[f"Pod/{objects.display_key(ctx.pod)}"])]
    if check.get("plugin") == "NodeResourcesFit":
        return [_Relax(rank=6, kind="free-resources", node=ni.name, dra_only=False,
                       change=f"{ni.name} had room for the pod ({check.get('message')})", objects=[f"Node/{ni.name}"])]
    return []


def _try(ctx: Context, r: _Relax, node: Mapping[str, Any]) -> list[dict[str, Any]] | bool | None:
    """Does the pod fit on the node with this relaxation? Allocation results, True (fits without
    claims), or None."""
    ctx.trials += 1
    claims = r.claims if r.claims is not None else list(ctx.alloc_claims)
    if ctx.ext_template:
        _, unfit, node_ext = node_claims(ctx, node)
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
                if objects.display_key(c) == holder and objects.uid_of(c) not in ctx.own_claims:
                    state.remove_claim(c)
        allocator = ctx.new_allocator(state=state, classes=r.classes, features=r.features)
    try:
        return allocator.allocate(node=node, claims=claims,
                                  deadline=time.monotonic() + min(ctx.filter_timeout, 2.0))
    except (AllocationError, AllocationTimeout, NodeAllocationError):
        return None


def suggest_changes(ctx: Context, nodes: Mapping[str, Mapping[str, Any]], verdicts: list[dict[str, Any]],
             infos: Mapping[str, plugins.NodeInfo], *, max_trials: int, budget: float) -> list[dict[str, Any]]:
    claims_by_name = {(objects.display_key(c) or str(objects.meta_of(c).get("generateName", "")) + "*"): i
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
