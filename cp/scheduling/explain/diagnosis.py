"""`explain_pod`: the whole diagnosis of one pod over a snapshot, node by node. Pure."""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from cp import objects
from cp.dra.allocator import (
    Features,
)
from cp.dra.celenv import CelCache
from cp.scheduling import framework, plugins, profiles
from cp.scheduling import preemption as preemptions
from cp.scheduling.explain.common import (
    API_VERSION,
    CANNOT_ALLOCATE,
    DRA_PLUGIN,
    FEATURES,
    FILTER_TIMEOUT,
    KIND,
    SCHEDULER_NAME,
    Snapshot,
    listing,
)
from cp.scheduling.explain.context import (
    Context,
    PreFilter,
    Waiting,
    dra_node,
    filter_view,
    prefilter,
    resolve_claims,
    scores,
)
from cp.scheduling.explain.relax import suggest_changes


def find_pod(snap: Snapshot, namespace: str, name: str) -> dict[str, Any] | None:
    for p in snap.pods:
        m = objects.meta_of(p)
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
    ctx = Context(snap, pod, features=features, cel_cache=cel_cache, filter_timeout=filter_timeout)
    out: dict[str, Any] = {
        "apiVersion": API_VERSION, "kind": KIND,
        "metadata": {"namespace": namespace, "name": name, "resourceVersion": str(snap.revision)},
        "verdict": "", "summary": "",
        "pod": {"uid": ctx.pod_uid, "nodeName": ctx.bound_node or None, "phase": objects.status_of(pod).get("phase"),
                "schedulerName": objects.spec_of(pod).get("schedulerName") or SCHEDULER_NAME},
    }
    cond = next((c for c in objects.status_of(pod).get("conditions") or []
                 if isinstance(c, Mapping) and c.get("type") == "PodScheduled"), None)
    if cond is not None and cond.get("status") == "False":
        out["pod"]["schedulerMessage"] = cond.get("message")

    def finish(verdict: str, summary: str) -> dict[str, Any]:
        out["verdict"] = verdict
        out["summary"] = summary
        out["claims"] = ctx.claim_rows
        return out

    if objects.meta_of(pod).get("deletionTimestamp"):
        return finish("Deleting", "the pod is being deleted; the scheduler ignores it")
    if objects.status_of(pod).get("phase") in ("Succeeded", "Failed"):
        return finish("Terminal", f"the pod has finished ({objects.status_of(pod).get('phase')})")
    if (objects.spec_of(pod).get("schedulerName") or SCHEDULER_NAME) != SCHEDULER_NAME:
        return finish("NotResponsible", f"the pod asks for scheduler {objects.spec_of(pod).get('schedulerName')}, "
                                        f"not {SCHEDULER_NAME}")
    if objects.spec_of(pod).get("schedulingGates") and not ctx.bound_node:
        gates = ", ".join(str(g.get("name")) for g in objects.spec_of(pod)["schedulingGates"] if isinstance(g, Mapping))
        return finish("Gated", f"scheduling gates {gates} hold the pod back")
    try:
        resolve_claims(ctx)
        waiting = _waiting_for_binding_conditions(ctx)
        if waiting and not ctx.bound_node:
            return finish("Binding", "allocated and reserved; the scheduler waits in PreBind for binding conditions: "
                          + "; ".join(waiting))
        prefilter(ctx)
    except Waiting as exc:
        return finish("Waiting", f"the scheduler waits before trying this pod: {exc}")
    except PreFilter as exc:
        ctx.build_state()
        out["upstreamMessage"] = plugins.fit_error(len(snap.nodes), {}, prefilter=plugins.Status(plugins.UNRESOLVABLE, [str(exc)]))
        return finish("Unschedulable", f"rejected before looking at nodes: {exc}")
    ctx.build_state()

    node_objs = {str(objects.meta_of(n).get("name") or ""): n for n in snap.nodes}
    # The profile's plugins beyond the core filters (inter-pod affinity, topology spread, ports,
    # volumes): PreFilter over all nodes, then Filter per node after the core filters.
    profile = profiles.default_profile()
    fw_state = framework.CycleState()
    fw_pod = framework.PodInfo(ctx.info.pod, ctx.req, objects.controller_uid_of(pod))
    fw_nodes = {n: framework.NodeState(obj, ctx.usage.get(n)) for n, obj in node_objs.items()}
    fw_snapshot = framework.Snapshot(list(fw_nodes.values()), {
        k: objects.meta_of(v).get("labels") or {} for k, v in ctx.namespaces.items()})
    fw_active, fw_rejected = profile.run_pre_filter(fw_state, fw_pod, fw_snapshot)
    if fw_rejected is not None:
        out["upstreamMessage"] = plugins.fit_error(len(snap.nodes), {}, prefilter=fw_rejected)
        return finish("Unschedulable", f"rejected before looking at nodes by {fw_rejected.plugin}: "
                                       f"{fw_rejected.message()}")
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
        fv = filter_view(ctx, ni)
        if fv is None and fw_active:
            st = framework.Profile.run_filters(fw_active, fw_state, fw_pod, fw_nodes[n])
            if st is not None:
                plugin = profile.plugin(st.plugin)
                why = plugin.explain(fw_state, fw_pod, fw_nodes[n]) if plugin is not None else ""
                fv = {"plugin": st.plugin, "code": st.code, "reasons": list(st.reasons),
                      "checks": [{"plugin": st.plugin, "message": why or st.message()}]}
        if fv is not None:
            v["filter"] = fv
            statuses[n] = plugins.Status(fv["code"], fv["reasons"], fv["plugin"])
        elif dra_active:
            dra = dra_node(ctx, node_objs[n])
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
        totals, details = scores(ctx, feasible)
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
        where = f"{chosen_ni.name}" + (f" (tied with {listing(top[1:], 3)}; the scheduler picks one at random)"
                                       if len(top) > 1 else "")
        devs = [d["device"] for a in chosen["allocation"] for d in a.get("devices") or []]
        if ctx.bound_node:
            summary = (f"bound to {ctx.bound_node}; scheduled again now it would go to {where}"
                       + (f" with {listing(devs, 4)}" if devs else ""))
            return finish("Bound", summary)
        return finish("Schedulable", f"fits: {len(feasible)} of {len(names)} nodes feasible; best {where}"
                      + (f" with {listing(devs, 4)}" if devs else ""))

    n_all = len(names)
    dra_msg = "still not schedulable" if dra_active else "no new claims to deallocate"
    result = _preemption(ctx, pod, fw_state, fw_pod, fw_active, fw_nodes, names, statuses, profile, dra_active)
    if result.success and result.candidate is not None:
        victims = result.candidate.victims
        out["preemption"] = {"node": result.candidate.name,
                             "victims": [f"{v.namespace}/{v.name}" for v in victims.pods],
                             "pdbViolations": victims.num_pdb_violations}
        post = dra_msg
    else:
        out["preemption"] = {"message": result.message}
        post = f"{dra_msg}, {result.message}" if result.message else dra_msg
    out["upstreamMessage"] = plugins.fit_error(n_all, statuses, post_filter=post)
    if errors:
        out["errors"] = errors
    if suggest:
        out["suggestions"] = suggest_changes(ctx, node_objs, verdicts, infos, max_trials=max_trials, budget=suggest_budget)
    if not names:
        summary = "no nodes"
    else:
        filtered = sum(1 for v in verdicts if v.get("filter") is not None)
        summary = f"0/{n_all} nodes fit: {filtered} filtered before DRA, {n_all - filtered} cannot allocate the claims"
        if out.get("suggestions"):
            summary += f"; smallest change: {out['suggestions'][0]['message']}"
    if result.success and result.candidate is not None:
        summary += (f"; preemption would evict {listing(out['preemption']['victims'], 4)} on "
                    f"{result.candidate.name}")
    if ctx.bound_node:
        return finish("Bound", f"bound to {ctx.bound_node}; scheduled again now it would not fit ({summary})")
    return finish("Error" if errors else "Unschedulable", summary)


def _waiting_for_binding_conditions(ctx: Context) -> list[str]:
    """KEP-5007: the pod's claims reserved for it whose devices still miss a binding condition
    (`device d/p/x: condition C not True`), or have a failure condition True."""
    out: list[str] = []
    for claim in ctx.pod_claims:
        if not any(r.get("uid") == ctx.pod_uid for r in objects.status_of(claim).get("reservedFor") or []):
            continue
        alloc = objects.status_of(claim).get("allocation") or {}
        entries = objects.status_of(claim).get("devices") or []
        for result in ((alloc.get("devices") or {}).get("results") or []):
            wanted = result.get("bindingConditions") or []
            if not wanted:
                continue
            key = (result.get("driver"), result.get("pool"), result.get("device"))
            entry: Mapping[str, Any] = next((e for e in entries if (e.get("driver"), e.get("pool"), e.get("device")) == key), {})
            conditions = {c.get("type"): c for c in entry.get("conditions") or [] if isinstance(c, Mapping)}
            device = "/".join(str(k) for k in key)
            for failure in result.get("bindingFailureConditions") or []:
                if (conditions.get(failure) or {}).get("status") == "True":
                    out.append(f"claim {objects.display_key(claim)} device {device}: failure condition {failure} "
                               "is True (the binding fails; the claim is deallocated on the next attempt)")
            missing = [str(c) for c in wanted if (conditions.get(c) or {}).get("status") != "True"]
            if missing:
                out.append(f"claim {objects.display_key(claim)} device {device}: "
                           f"{', '.join(missing)} not True yet")
    return out


def _preemption(ctx: Context, pod: Mapping[str, Any], state: framework.CycleState, fw_pod: framework.PodInfo,
                active: list[framework.Plugin], nodes: Mapping[str, framework.NodeState], names: list[str],
                statuses: Mapping[str, plugins.Status], profile: framework.Profile,
                dra_active: bool) -> preemptions.Result:
    """DefaultPreemption's dry runs, as the scheduler would run them now (PodDisruptionBudgets are
    not in the snapshot: none counts as violated; nominated pods are not counted)."""
    if profile.enabled and preemptions.PLUGIN not in profile.enabled:
        return preemptions.Result(code=plugins.UNSCHEDULABLE)
    filters = preemptions.Filters(info=ctx.info, pod=fw_pod, active=active,
                                  extensions=[p for p in profile.pre_filters
                                              if p in active or p not in profile.filters],
                                  ext_mapping=ctx.ext_mapping, fused=profile.fused_core)
    if dra_active:  # DynamicResources has no AddPod/RemovePod in 1.37: its verdict per node stands
        filters.final = lambda node: (None if dra_node(ctx, node.node)["outcome"] == "fits"
                                      else plugins.Status(plugins.UNRESOLVABLE, [CANNOT_ALLOCATE], DRA_PLUGIN))
    return preemptions.preempt(pod=ctx.info.pod, state=state, nodes=[nodes[n] for n in names], statuses=statuses,
                               absent=plugins.Status(plugins.UNRESOLVABLE, []), filters=filters, pdbs=[],
                               rng=random.Random(0), now=0.0)
