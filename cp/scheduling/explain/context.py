"""The pod-level context of a diagnosis: the pod's claims resolved, the scheduler's PreFilter checks,
the node filters (`cp.scheduling.plugins`) and DRA per node, and the scores of feasible nodes. Pure."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from cp import objects
from cp.dra import extended as ext
from cp.dra.allocator import (
    ADMIN_ACCESS_NAMESPACE_LABEL,
    AllocationError,
    AllocationTimeout,
    Allocator,
    Features,
    NodeAllocationError,
    claim_requests_admin_access,
    namespace_allows_admin_access,
)
from cp.dra.celenv import CelCache
from cp.dra.model import DeviceID
from cp.dra.nodeselector import NodeSelectorError, node_selector_matches
from cp.dra.state import AllocatedState
from cp.scheduling import framework, plugins, profiles
from cp.scheduling.explain.common import (
    RESERVED_FOR_MAX,
    Snapshot,
    allocation,
    bytes_text,
    device_holders,
    milli_text,
    reserved_by,
    taint_text,
)
from cp.scheduling.explain.recorder import (
    SearchRecorder,
    dra_view,
)


class Context:
    """Everything the diagnosis of one pod shares across nodes."""

    def __init__(self, snap: Snapshot, pod: Mapping[str, Any], *, features: Features, cel_cache: CelCache | None,
                 filter_timeout: float) -> None:
        self.snap = snap
        self.pod = pod
        self.features = features
        self.filter_timeout = filter_timeout
        self.cel_cache = cel_cache if cel_cache is not None else CelCache()
        self.pod_uid = objects.uid_of(pod)
        self.ns = str(objects.meta_of(pod).get("namespace") or "")
        self.class_map = {str(objects.meta_of(c).get("name")): c for c in snap.classes}
        self.ext_mapping = ext.extended_resource_class_mapping(self.class_map)
        self.claims_by_key = {(str(objects.meta_of(c).get("namespace") or ""), str(objects.meta_of(c).get("name") or "")): c
                              for c in snap.claims}
        self.namespaces = {str(objects.meta_of(n).get("name") or ""): n for n in snap.namespaces}
        self.bound_node = str(objects.spec_of(pod).get("nodeName") or "")
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
        as_pending = pod if not self.bound_node else {**pod, "spec": {k: v for k, v in objects.spec_of(pod).items()
                                                                      if k != "nodeName"}}
        self.info = plugins.PodInfo(as_pending, self.req, objects.controller_uid_of(pod))
        self.trials = 0

    def build_state(self) -> None:
        counted = [c for c in self.snap.claims if objects.uid_of(c) not in self.own_claims]
        self.state = AllocatedState.from_claims(counted, consumable_capacity=self.features.consumable_capacity)
        self.holders, self.share_holders = device_holders(counted)
        for c in counted:
            ns = str(objects.meta_of(c).get("namespace") or "")
            pods = [f"pod {ns}/{r.get('name', '')}" if (r.get("resource") or "pods") == "pods"
                    else f"{r.get('resource')}/{r.get('name', '')}" for r in reserved_by(c)]
            if pods:
                self.reservations[objects.display_key(c)] = pods
        self.allocator = self.new_allocator()
        for p in self.snap.pods:
            if objects.uid_of(p) == self.pod_uid:
                continue
            node = str(objects.spec_of(p).get("nodeName") or "")
            if not node or objects.status_of(p).get("phase") in ("Succeeded", "Failed"):
                continue
            pi = framework.PodInfo(p, owner=objects.controller_uid_of(p))
            self.usage.setdefault(node, plugins.NodeUsage()).add(pi.req, pi.owner, pi)

    def new_allocator(self, *, state: AllocatedState | None = None, classes: Mapping[str, Any] | None = None,
                      features: Features | None = None) -> Allocator:
        return Allocator(slices=self.snap.slices, classes=classes if classes is not None else self.class_map,
                         allocated=state if state is not None else self.state or AllocatedState(),
                         taint_rules=self.snap.rules, features=features or self.features, cel_cache=self.cel_cache)

    def recorder(self) -> SearchRecorder:
        return SearchRecorder(holders=self.holders, share_holders=self.share_holders)


class Waiting(Exception):
    """The scheduler would not look at the pod yet (PreEnqueue)."""


class PreFilter(Exception):
    """The scheduler rejects the pod for every node before filtering."""


def resolve_claims(ctx: Context) -> None:
    pod = ctx.pod
    ns = ctx.ns
    statuses = {str(s.get("name")): s for s in objects.status_of(pod).get("resourceClaimStatuses") or []
                if isinstance(s, Mapping)}
    for rc in objects.spec_of(pod).get("resourceClaims") or []:
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
                raise Waiting(f"ResourceClaim for pod claim {rc.get('name')} (template "
                               f"{rc.get('resourceClaimTemplateName')}) not created yet — the resourceclaim "
                               "controller creates it")
            if not st.get("resourceClaimName"):
                row["state"] = "not needed"
                continue
            claim_name, check_owner = str(st["resourceClaimName"]), True
        else:
            raise Waiting(f"spec.resourceClaims {rc.get('name')}: none of the supported fields are set")
        row["claim"] = f"{ns}/{claim_name}"
        claim = ctx.claims_by_key.get((ns, claim_name))
        if claim is None:
            row["state"] = "missing"
            raise Waiting(f'resourceclaim.resource.k8s.io "{claim_name}" not found')
        if objects.meta_of(claim).get("deletionTimestamp"):
            row["state"] = "being deleted"
            raise Waiting(f'resourceclaim "{claim_name}" is being deleted')
        if check_owner and objects.controller_uid_of(claim) != ctx.pod_uid:
            row["state"] = "not owned by the pod"
            raise Waiting(f"ResourceClaim {claim_name} was not created for pod {objects.display_key(pod)} (pod is not owner)")
        alloc = allocation(claim)
        reserved = reserved_by(claim)
        row["state"] = "allocated" if alloc else "pending"
        row["reservedFor"] = [str(r.get("name") or "") for r in reserved]
        if alloc:
            row["devices"] = [f"{r.get('driver')}/{r.get('pool')}/{r.get('device')}"
                              for r in (alloc.get("devices") or {}).get("results") or []]
            if ctx.bound_node and reserved and all(r.get("uid") == ctx.pod_uid for r in reserved):
                ctx.own_claims.add(objects.uid_of(claim))
        ctx.pod_claims.append(claim)


def prefilter(ctx: Context) -> None:
    """DynamicResources PreFilter, as controllers/scheduler/cycle.py `_dra_prefilter` does it."""
    pod = ctx.pod
    if plugins.requested_dra_extended(ctx.req, ctx.ext_mapping):
        existing = None
        st = objects.status_of(pod).get("extendedResourceClaimStatus")
        if isinstance(st, Mapping) and st.get("resourceClaimName"):
            c = ctx.claims_by_key.get((ctx.ns, str(st["resourceClaimName"])))
            if c is not None and objects.controller_uid_of(c) == ctx.pod_uid:
                existing = c
        if existing is None:
            owned = [c for c in ctx.snap.claims if objects.controller_uid_of(c) == ctx.pod_uid]
            found = ext.find_extended_resource_claim(pod, owned)
            existing = dict(found) if found is not None else None
        if existing is not None:
            ctx.pod_claims.append(existing)
            if ctx.bound_node:
                ctx.own_claims.add(objects.uid_of(existing))
        else:
            ctx.ext_template = True
    namespace = ctx.namespaces.get(ctx.ns)
    for claim in ctx.pod_claims:
        alloc = allocation(claim)
        own = objects.uid_of(claim) in ctx.own_claims
        if alloc is not None and not own:
            reserved = reserved_by(claim)
            if len(reserved) >= RESERVED_FOR_MAX and not any(r.get("uid") == ctx.pod_uid for r in reserved):
                raise PreFilter(f"resourceclaim in use: claim {objects.display_key(claim)} is already reserved for "
                                 f"{RESERVED_FOR_MAX} consumers")
            ctx.allocated.append((claim, alloc.get("nodeSelector")))
            continue
        body = claim
        if alloc is not None:  # a bound pod's own claim: diagnosed as if not allocated yet
            body = {k: v for k, v in claim.items() if k != "status"}
        ctx.alloc_claims.append(body)
        if ext.EXTENDED_RESOURCE_CLAIM_ANNOTATION in (objects.meta_of(claim).get("annotations") or {}):
            continue
        for request in ((objects.spec_of(claim).get("devices") or {}).get("requests") or []):
            rname = str(request.get("name") or "")
            subs = [(str((request.get("exactly") or {}).get("deviceClassName") or ""), rname)] \
                if request.get("exactly") is not None else \
                [(str(s.get("deviceClassName") or ""), f"{rname}/{s.get('name')}") for s in request.get("firstAvailable") or []]
            for cls, label in subs:
                if cls and cls not in ctx.class_map:
                    raise PreFilter(f"request {label}: device class {cls} does not exist "
                                     f"(claim {objects.display_key(claim)}; create DeviceClass {cls})")
        if claim_requests_admin_access(claim) and not namespace_allows_admin_access(namespace):
            raise PreFilter(f"resource claim {objects.display_key(claim)}: admin access to devices requires the "
                             f"`{ADMIN_ACCESS_NAMESPACE_LABEL}: true` label on the containing namespace")


def filter_view(ctx: Context, ni: plugins.NodeInfo) -> dict[str, Any] | None:
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
                       + ", ".join(taint_text(t) for t in untolerated)})
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
                parts.append(f"cpu: requests {milli_text(want.cpu)}, {milli_text(have.cpu - used.cpu)} free of "
                             f"{milli_text(have.cpu)} allocatable")
            elif r == "Insufficient memory":
                parts.append(f"memory: requests {bytes_text(want.memory)}, {bytes_text(max(have.memory - used.memory, 0))}"
                             f" free of {bytes_text(have.memory)} allocatable")
            else:
                parts.append(r)
        checks.append({"plugin": "NodeResourcesFit", "reasons": reasons, "message": "; ".join(parts)})
    return {"plugin": status.plugin, "reasons": list(status.reasons), "code": status.code, "checks": checks}


def node_claims(ctx: Context, node: Mapping[str, Any]) -> tuple[list[dict[str, Any]], str | None, Any]:
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


def dra_node(ctx: Context, node: Mapping[str, Any]) -> dict[str, Any]:
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
                unavailable.append(objects.display_key(claim))
    claims, unfit, _ = node_claims(ctx, node)
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
    view = dra_view(ctx.allocator, rec, node, claims, outcome, message, result)
    if outcome == "invalid-pools":
        bad = [f"pool {p['pool']} {p['reason']}" for p in view["pools"] if p["state"] == "invalid"]
        if bad:
            view["message"] = view["blocker"] = f"{message} ({'; '.join(bad)})"
    if outcome == "timeout" and rec.last is not None and rec.run is not None:
        rd = rec.run.requests.get(rec.last)
        if rd is not None:
            view["message"] += (f"; last at claim {objects.display_key(claims[rd.claim_index])} request {rd.result_name()}, after "
                                f"{ctx.allocator.stats.allocate_one_invocations - steps:,} search steps")
            view["blocker"] = view["message"]
    if result is not None:
        view["rawAllocation"] = result
    return view


def scores(ctx: Context, feasible: list[tuple[plugins.NodeInfo, dict[str, Any]]]
           ) -> tuple[list[int], list[dict[str, Any]]]:
    """The scheduler's scores: the default profile's score plugins (each normalized to 0..100,
    times its weight, summed: exact integers, as the scheduler's cycle), plus DynamicResources'
    score. Each node's detail: every plugin's normalized score before its weight."""
    profile = profiles.default_profile()
    pinfo = framework.PodInfo(ctx.info.pod, ctx.req, ctx.info.owner)
    states = {n.name: framework.NodeState(n.node, ctx.usage.get(n.name) or plugins.NodeUsage())
              for n in (plugins.NodeInfo(node) for node in ctx.snap.nodes)}
    nodes = [states.get(ni.name) or framework.NodeState(ni.node, ctx.usage.get(ni.name)) for ni, _dra in feasible]
    state = framework.CycleState()
    state[framework.SNAPSHOT_KEY] = framework.Snapshot(list(states.values()), dra_backed=ctx.ext_mapping)
    extra: list[tuple[str, list[int], int]] = []
    # As the scheduler: scored when a claim to allocate has subrequests; allocated claims count
    # with their own allocation (a bound pod's own claims are diagnosed as not allocated yet).
    prioritized = any(r.get("firstAvailable") for c in ctx.alloc_claims
                      for r in ((objects.spec_of(c).get("devices") or {}).get("requests") or []))
    if prioritized and profile.dra_weight:
        ordered = [c if allocation(c) is None or objects.uid_of(c) not in ctx.own_claims
                   else {k: v for k, v in c.items() if k != "status"} for c in ctx.pod_claims]
        dra = []
        for _ni, view in feasible:
            allocs = (view or {}).get("rawAllocation") or []
            dra.append(plugins.dynamic_resources_score(ordered, allocs) if allocs else 0)
        framework.default_normalize(dra, reverse=False)
        extra.append(("DynamicResources", dra, profile.dra_weight))
    totals, per_plugin = profile.run_scores(state, pinfo, nodes, extra)
    details = [{name: values[i] for name, values in per_plugin.items()} for i in range(len(nodes))]
    return totals, details
