"""One scheduling cycle (serialized by the scheduler): PreEnqueue's claim checks, PreFilter,
Filter over the nodes in round-robin order until enough feasible ones are found, PostFilter
(deallocation), Score, and Reserve (the allocations and the pod are assumed at once, so the next
cycle never hands out the same devices). The outcome is a `Plan` for the binding cycle, or why not.

The DynamicResources filter keeps, per node, its last answer for the same claim specs while none
of the node's pools changed; a search that takes longer than `ON_LOOP_SLICE` continues in a worker
thread with claim-state changes held back (`AssumeCache.mutate`)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import operator
import random
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import msgspec
import structlog

from controllers.runtime import cache as caches
from controllers.runtime import client as clients
from controllers.runtime import informer as informers
from controllers.scheduler.assume import AssumeCache
from controllers.scheduler.binding import delete_claim
from controllers.scheduler.config import (
    BINDING_TIMEOUT,
    CLAIMS,
    COMPONENT,
    DRA_PLUGIN,
    EXTENDED_CLAIM_PLACEHOLDER,
    NODE_ALLOCATABLE_STATUSES,
    ON_LOOP_SLICE,
    RESERVED_FOR_MAX,
    YIELD_EVERY,
)
from controllers.scheduler.nodes import NodeCache, NodeEntry
from controllers.scheduler.plan import (
    CANNOT_ALLOCATE,
    ClaimPlan,
    Error,
    Gate,
    Gated,
    Outcome,
    Plan,
    PreFilterReject,
    SchedError,
    Stats,
    Unschedulable,
    allocation_of,
    reserved_for,
)
from controllers.scheduler.preemption import Preemption
from cp import clock as clocks
from cp import errors
from cp.dra import (
    ADMIN_ACCESS_NAMESPACE_LABEL,
    AllocationError,
    AllocationTimeout,
    Allocator,
    NodeAllocationError,
    claim_requests_admin_access,
    namespace_allows_admin_access,
    nodeallocatable,
)
from cp.dra import binding as bindings
from cp.dra import extended as ext
from cp.dra.model import tolerates_taint
from cp.dra.nodeselector import NodeSelectorError, node_selector_matches
from cp.objects import controller_uid_of, display_key, meta_of, spec_of, status_of, uid_of
from cp.scheduling import framework, plugins, profiles
from cp.scheduling import preemption as preemptions
from cp.scheduling.plugins import noderesources, volumebinding

logger = structlog.get_logger("cplane.controllers.scheduler")

_encode = msgspec.json.Encoder().encode

Feasible = tuple[NodeEntry, list[dict[str, Any]], ext.ExtendedResourceClaim | None]
_first = operator.itemgetter(0)
_answer = operator.itemgetter(3)  # of a DRA cache entry (gen, dra_version, shared, answer)
_dra_cache_of = operator.attrgetter("dra_cache")
_RESOURCE_PLUGINS = ("NodeResourcesFit", "NodeResourcesBalancedAllocation")


class DraCycle:
    """The DynamicResources plugin's cycle state for one pod."""

    __slots__ = ("active", "alloc_claims", "blocked", "claims", "ext_existing", "ext_template", "has_selectors",
                 "prioritized", "selectors", "signature", "to_allocate", "unavailable")

    def __init__(self) -> None:
        self.active = False
        self.claims: list[dict[str, Any]] = []  # user claims, then an existing extended claim
        self.ext_existing: dict[str, Any] | None = None
        self.ext_template = False  # the extended claim must be built per node and created
        self.selectors: list[Mapping[str, Any] | None] = []  # allocation node selectors
        self.to_allocate: list[int] = []  # indices into claims
        self.signature = b""
        self.unavailable: set[int] = set()
        self.alloc_claims: list[dict[str, Any]] = []  # claims[i] for i in to_allocate
        self.has_selectors = False
        self.prioritized = False  # some claim to allocate has a request with subrequests
        # Allocated claims whose binding failed or timed out (binding conditions): unavailable on
        # every node, so that PostFilter deallocates them.
        self.blocked: list[int] = []


class SchedulingCycle:
    def __init__(self, *, client: clients.Client, claims: informers.Informer, namespaces: informers.Informer,
                 assume: AssumeCache, nodes: NodeCache, stats: Stats, rng: random.Random,
                 filter_timeout: float, pod_filter_timeout: float, percentage_of_nodes_to_score: int,
                 profile: framework.Profile | None = None, preemption: Preemption | None = None,
                 clock: clocks.Clock | None = None, binding_timeout: float = BINDING_TIMEOUT,
                 volumes: volumebinding.VolumeLookup | None = None, node_allocatable: bool = False) -> None:
        self.client = client
        # DRANodeAllocatableResources: the devices allocated to the pod's claims take their
        # `nodeAllocatableResources` of the node (`_node_allocatable_filter`)
        self.node_allocatable = node_allocatable
        self.volumes = volumes
        self.preemption = preemption  # DefaultPreemption (None: no PostFilter preemption)
        self.clock: clocks.Clock = clock if clock is not None else clocks.RealClock()
        self.binding_timeout = binding_timeout
        self.profile = profile if profile is not None else profiles.default_profile()
        self.claims = claims
        self.namespaces = namespaces
        self.assume = assume
        self.node_cache = nodes
        self.stats = stats
        self.rng = rng
        self.filter_timeout = filter_timeout
        self.pod_filter_timeout = pod_filter_timeout
        self.percentage = percentage_of_nodes_to_score
        self._cycle_deadline = 0.0  # time.monotonic() by which the current cycle's searches end
        self._log = logger
        weights = {p.name: (p, w) for p, w in self.profile.scores}
        fit, balanced = weights.get("NodeResourcesFit"), weights.get("NodeResourcesBalancedAllocation")
        self._resource_fast = (
            fit is not None and isinstance(fit[0], noderesources.Fit) and fit[1] == 1
            and fit[0].strategy == noderesources.LEAST_ALLOCATED and fit[0].resources == noderesources.DEFAULT_RESOURCES
            and balanced is not None and isinstance(balanced[0], noderesources.BalancedAllocation)
            and balanced[1] == 1 and balanced[0].resources == noderesources.DEFAULT_RESOURCES)
        # Claims shared by a PodGroup (DRAWorkloadResourceClaims): `controllers.scheduler.podgroupclaims`.
        self.workload_claims: Any = None

    def _reserved(self, claim: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
        """`IsReservedForPod` (a PodGroup's reservation counts with DRAWorkloadResourceClaims)."""
        if reserved_for(claim, uid_of(pod)):
            return True
        return self.workload_claims is not None and bool(self.workload_claims.reserved(pod, claim))

    async def run(self, pod: dict[str, Any]) -> Outcome:
        """PreEnqueue, PreFilter, Filter, PostFilter, Score and Reserve for one pod."""
        outcome = await self._run(pod, skip_known=True)
        if outcome is _AGAIN:  # no node fits: visit every node for each one's reason
            outcome = await self._run(pod, skip_known=False)
        assert not isinstance(outcome, _Again)
        return outcome

    async def _run(self, pod: dict[str, Any], *, skip_known: bool) -> Outcome | _Again:
        """`skip_known`: the nodes known not to fit the pod's claims (`NodeCache.infeasible_mask`)
        are passed over without a visit; when no node fits, `_AGAIN` (the caller runs the cycle
        again visiting them, for their reasons: the same outcome as a single pass)."""
        if spec_of(pod).get("schedulingGates"):
            return Gate(reason="scheduling gates")
        try:
            user_claims = self.pod_claims(pod)
        except Gated as exc:
            return Gate(reason=str(exc))
        nodes = list(self.node_cache.nodes.values())
        members = self.node_cache.members
        if not nodes:
            return Unschedulable(message=plugins.NO_NODES_AVAILABLE, nominate="")
        req = plugins.pod_requests(pod)
        self.assume.get_allocator()  # (re)builds the class mapping too
        self._cycle_deadline = time.monotonic() + self.pod_filter_timeout
        try:
            dra = self._dra_prefilter(pod, req, user_claims)
        except PreFilterReject as exc:
            result = self._preempt_rejected(pod, req, nodes, exc.status)
            return Unschedulable(message=plugins.fit_error(
                len(nodes), {}, prefilter=exc.status,
                post_filter=_post_filter_message("no new claims to deallocate", result)),
                nominate=result.nominate, preemption=result.candidate,
                plugins=frozenset({exc.status.plugin or DRA_PLUGIN}))
        except SchedError as exc:
            return Error(message=str(exc))

        owner = controller_uid_of(pod)
        info = plugins.PodInfo(pod, req, owner)
        pinfo = framework.PodInfo(pod, req, owner)
        state = framework.CycleState()
        snapshot = framework.Snapshot(nodes, _NamespaceLabels(self.namespaces), self.assume.ext_mapping, self.volumes,
                                      counts=self.node_cache.counts)
        active, rejected = self.profile.run_pre_filter(state, pinfo, snapshot)
        if rejected is not None:
            result = self._preempt_rejected(pod, req, nodes, rejected)
            return Unschedulable(message=plugins.fit_error(
                len(nodes), {}, prefilter=rejected, post_filter=result.message if not result.success else ""),
                nominate=result.nominate, preemption=result.candidate,
                plugins=frozenset({rejected.plugin}) if rejected.plugin else frozenset())
        run_filters = framework.Profile.run_filters
        statuses: dict[str, plugins.Status] = {}
        nominator = self.preemption.nominator if self.preemption is not None else None
        filters = preemptions.Filters(info=info, pod=pinfo, active=active,
                                      extensions=self._extensions(active), ext_mapping=self.assume.ext_mapping,
                                      nominated=nominator.pods_on if nominator is not None else None,
                                      fused=self.profile.fused_core)
        nominated = nominator.by_node if nominator is not None else {}
        nnn = str(status_of(pod).get("nominatedNodeName") or "")
        if nnn and nnn in self.node_cache.nodes:
            # evaluateNominatedNode: the node a preemption made room on is tried first, alone.
            hit = await self._filter_nominated(pod, filters, state, dra, self.node_cache.nodes[nnn])
            if isinstance(hit, plugins.Status):
                statuses[nnn] = hit
            else:
                return self._reserve(pod, pinfo, state, dra, self.node_cache.nodes[nnn], *hit)
        feasible: list[tuple[NodeEntry, list[dict[str, Any]], ext.ExtendedResourceClaim | None]] = []
        all_nodes, all_n = nodes, len(nodes)
        if state.node_names is not None:  # a PreFilterResult: the other nodes are not evaluated
            names = sorted(set(state.node_names_plugins))
            absent = plugins.Status(plugins.UNRESOLVABLE, [f"node(s) didn't satisfy plugin(s) [{' '.join(names)}]"],
                                    names[0])
            statuses.update((e.name, absent) for e in nodes if e.name not in state.node_names and e.name not in statuses)
            nodes = [e for e in nodes if e.name in state.node_names]
        n = len(nodes)
        percentage = self.profile.percentage_of_nodes_to_score
        to_find = plugins.num_feasible_nodes_to_find(n, self.percentage if percentage is None else percentage)
        start = self.node_cache.next_start % n if n else 0
        processed = 0
        last_yield = time.perf_counter()
        ext_mapping = self.assume.ext_mapping
        no_allocs: list[dict[str, Any]] = []
        # The DynamicResources filter's common case inline: claims to allocate whose answer for
        # this node is cached and still valid (no device of the node's pools changed since).
        dra_active = dra.active
        fast = dra_active and not dra.ext_template and not dra.has_selectors and not dra.blocked and bool(dra.alloc_claims)
        fused = self.profile.fused_core
        simple = info.simple
        signature = dra.signature
        gen, shared = self.assume.allocator_gen, self.assume.shared_version
        hits = 0
        # The nodes known not to fit these claims, skipped in runs (only over every node, in the
        # node cache's order, while the set of nodes is the one listed above).
        # The common case in few steps: claims whose answer is cached, the fused core filters all
        # but free (no other filter plugin, no nominated pods); anything else takes the full path.
        quick = fast and fused and simple and not active and not self.node_allocatable
        mask, fmask = self.node_cache.masks(signature, gen, shared) \
            if skip_known and fast and nodes is all_nodes and members == self.node_cache.members else (None, None)
        if not quick:
            fmask = None  # (known to fit only a pod the core filters have nothing to say about)
        mask_gen, mask_shared = gen, shared
        skipped = taken = 0
        visited = 0
        check_at = 16
        i = 0  # offset from `start` in round-robin order
        try:
            while i < n:
                if visited >= check_at:
                    check_at = visited + 16
                    if time.perf_counter() - last_yield > YIELD_EVERY:
                        await asyncio.sleep(0)
                        last_yield = time.perf_counter()
                        gen, shared = self.assume.allocator_gen, self.assume.shared_version
                        if mask is not None and (gen, shared, members) != (mask_gen, mask_shared,
                                                                           self.node_cache.members):
                            mask = fmask = None
                pos = start + i if start + i < n else start + i - n
                end = n if pos >= start else start  # this lap's end
                if mask is not None and mask[pos]:
                    nxt = mask.find(0, pos, end)
                    if nxt < 0:
                        skipped += end - pos
                        i += end - pos
                        processed = i
                        continue
                    skipped += nxt - pos
                    i += nxt - pos
                    pos = nxt
                if fmask is not None and mask is not None and fmask[pos] and not nominated:
                    # a run of nodes known to fit: taken with their cached allocations, in C
                    stop = fmask.find(0, pos, end)
                    if stop < 0:
                        stop = end
                    bad = mask.find(1, pos, stop)
                    if bad >= 0:
                        stop = bad
                    k = min(stop - pos, to_find - len(feasible))
                    run = nodes[pos:pos + k]
                    feasible.extend(zip(run, map(_answer, map(operator.methodcaller("get", signature),
                                                              map(_dra_cache_of, run))), itertools.repeat(None)))
                    hits += k
                    taken += k
                    visited += k
                    i += k
                    processed = i
                    if len(feasible) >= to_find:
                        break
                    continue
                entry = nodes[pos]
                i += 1
                processed = i
                visited += 1
                ni = entry.info
                usage = entry.usage
                if quick and not nominated and ni.plain and usage.pods < ni.alloc.pods:
                    cached = entry.dra_cache.get(signature)
                    if cached is not None and cached[1] == entry.dra_version and cached[0] == gen \
                            and cached[2] == shared:
                        hits += 1
                        result = cached[3]
                        if type(result) is list:
                            feasible.append((entry, result, None))
                            if fmask is not None and gen == mask_gen and shared == mask_shared:
                                fmask[pos] = 1
                            if len(feasible) >= to_find:
                                break
                            continue
                        if result is None:
                            statuses[entry.name] = CANNOT_ALLOCATE
                            if mask is not None and gen == mask_gen and shared == mask_shared:
                                mask[pos] = 1
                            continue
                again = False  # addGENominatedPods added some: the filters run again without them
                if nominated and entry.name in nominated:
                    state1, entry1, again = filters.with_nominated(state, entry)
                    status = filters.core(state1, entry1)
                else:
                    if not fused or (simple and ni.plain and usage.pods < ni.alloc.pods):
                        status = None  # (not fused: the core filters are among the active plugins)
                    else:
                        status = info.filter(ni, usage, ext_mapping)
                    if status is None and active:
                        status = run_filters(active, state, pinfo, entry)
                allocs = no_allocs
                node_ext: ext.ExtendedResourceClaim | None = None
                if status is None and dra_active:
                    cached = entry.dra_cache.get(signature) if fast else None
                    if cached is not None and cached[1] == entry.dra_version and cached[0] == gen \
                            and cached[2] == shared:
                        hits += 1
                        result = cached[3]
                        if type(result) is list:
                            allocs = result
                        elif result is None:
                            status = CANNOT_ALLOCATE
                            if mask is not None and gen == mask_gen and shared == mask_shared:
                                mask[pos] = 1
                        else:
                            status = result
                    else:
                        status, allocs, node_ext = await self._dra_filter(pod, dra, entry)
                        gen, shared = self.assume.allocator_gen, self.assume.shared_version
                        if mask is not None and (gen, shared, members) != (mask_gen, mask_shared,
                                                                           self.node_cache.members):
                            mask = fmask = None  # changed meanwhile: no longer known
                if status is None and dra_active and self.node_allocatable:
                    status = self._node_allocatable_filter(pod, dra, entry, allocs, node_ext)
                if again and status is None:
                    status = filters.core(state, entry)
                if status is not None:
                    statuses[entry.name] = status
                else:
                    feasible.append((entry, allocs, node_ext))
                    if len(feasible) >= to_find:
                        break
        except SchedError as exc:
            return Error(message=f'running "{DRA_PLUGIN}" filter plugin: {exc}')
        finally:
            self.node_cache.next_start = (start + processed) % n if n else start
            self.stats.nodes_filtered += processed
            self.stats.nodes_skipped += skipped
            self.stats.nodes_taken += taken
            self.stats.dra_cache_hits += hits

        if not feasible and skipped:
            self.node_cache.next_start = start
            return _AGAIN
        if not feasible:
            dra_msg = await self._dra_post_filter(pod, dra)
            try:
                result = await self._preempt(pod, filters, state, dra, all_nodes, statuses)
            except SchedError as exc:
                result = preemptions.Result(code=framework.ERROR, message=f"preemption: {exc}")
            message = plugins.fit_error(all_n, statuses, post_filter=_post_filter_message(dra_msg, result))
            why = self._why_short(pod, dra, statuses)
            return Unschedulable(message=f"{message} {why}" if why else message, nominate=result.nominate,
                                 preemption=result.candidate,
                                 plugins=unschedulable_plugins(statuses.values()))

        entry, allocs, node_ext = self._select_host(info, pinfo, state, dra, feasible)
        return self._reserve(pod, pinfo, state, dra, entry, allocs, node_ext)

    def pod_claims(self, pod: Mapping[str, Any]) -> list[dict[str, Any]]:
        """`foreachPodResourceClaim`: the pod's claims, or Gated with upstream's reason."""
        ns, name = caches.key_of(pod)
        statuses = {str(s.get("name")): s for s in status_of(pod).get("resourceClaimStatuses") or []
                    if isinstance(s, Mapping)}
        uid = uid_of(pod)
        out: list[dict[str, Any]] = []
        for rc in spec_of(pod).get("resourceClaims") or []:
            if not isinstance(rc, Mapping):
                continue
            check_owner = False
            if rc.get("resourceClaimName"):
                claim_name = str(rc["resourceClaimName"])
            elif rc.get("resourceClaimTemplateName"):
                st = statuses.get(str(rc.get("name")))
                if st is None:
                    raise Gated(f'pod "{ns}/{name}": ResourceClaim not created yet')
                if not st.get("resourceClaimName"):
                    continue
                claim_name, check_owner = str(st["resourceClaimName"]), True
            else:
                raise Gated(f'pod "{ns}/{name}", spec.resourceClaim "{rc.get("name")}": '
                             "none of the supported fields are set")
            claim = self.assume.view(ns, claim_name)
            if claim is None:
                raise Gated(f'resourceclaim.resource.k8s.io "{claim_name}" not found')
            if meta_of(claim).get("deletionTimestamp"):
                raise Gated(f'resourceclaim "{claim_name}" is being deleted')
            if check_owner and controller_uid_of(claim) != uid and not (
                    self.workload_claims is not None and self.workload_claims.owned_by_group(pod, claim)):
                raise Gated(f"ResourceClaim {claim_name} was not created for pod {ns}/{name} (pod is not owner)")
            out.append(claim)
        return out

    def _extended_claim(self, pod: Mapping[str, Any], req: plugins.PodRequests) -> tuple[dict[str, Any] | None, bool]:
        """(existing special claim, a new one must be built per node)."""
        if not plugins.requested_dra_extended(req, self.assume.ext_mapping):
            return None, False
        ns = str(meta_of(pod).get("namespace") or "")
        st = status_of(pod).get("extendedResourceClaimStatus")
        if isinstance(st, Mapping) and st.get("resourceClaimName"):
            claim = self.assume.view(ns, str(st["resourceClaimName"]))
            if claim is not None and controller_uid_of(claim) == uid_of(pod):
                return claim, False
        owned = self.claims.cache.by_index(caches.OWNER_UID, uid_of(pod))
        found = ext.find_extended_resource_claim(pod, owned)
        if found is not None:
            return self.assume.view(*caches.key_of(found)) or dict(found), False
        return None, True

    def _dra_prefilter(self, pod: Mapping[str, Any], req: plugins.PodRequests,
                       user_claims: list[dict[str, Any]]) -> DraCycle:
        d = DraCycle()
        ext_existing, ext_template = self._extended_claim(pod, req)
        claims = list(user_claims)
        if ext_existing is not None:
            claims.append(ext_existing)
        d.ext_existing, d.ext_template = ext_existing, ext_template
        if not claims and not ext_template:
            return d
        pod_key = caches.key_of(pod)
        namespace = self.namespaces.cache.get("", str(meta_of(pod).get("namespace") or ""))
        for index, claim in enumerate(claims):
            alloc = allocation_of(claim)
            if alloc is not None:
                reserved = status_of(claim).get("reservedFor") or []
                if len(reserved) >= RESERVED_FOR_MAX and not self._reserved(claim, pod):
                    raise PreFilterReject(plugins.Status(plugins.UNRESOLVABLE, ["resourceclaim in use"]))
                if not self._reserved(claim, pod):
                    tainted = self._untolerated_no_execute(alloc)
                    if tainted:
                        raise PreFilterReject(plugins.Status(plugins.UNRESOLVABLE, [
                            f"resource claim {display_key(claim)}: device {tainted} has a NoExecute taint "
                            "that the claim does not tolerate"], DRA_PLUGIN))
                selector = alloc.get("nodeSelector")
                if selector is not None:
                    try:
                        node_selector_matches(selector, {})
                    except NodeSelectorError as e:
                        raise SchedError(str(e)) from None
                d.selectors.append(selector)
                if bindings.allocation_has_binding_conditions(alloc) and self._binding_failed(claim):
                    d.blocked.append(index)
                continue
            d.selectors.append(None)
            d.to_allocate.append(index)
            owner = self.assume.in_flight.get(uid_of(claim))
            if owner is not None and owner != pod_key:
                raise PreFilterReject(plugins.Status(plugins.UNRESOLVABLE, [
                    f"resource claim {display_key(claim)} is in the process of being allocated"]))
            if claim is ext_existing:
                continue
            for request in ((spec_of(claim).get("devices") or {}).get("requests") or []):
                rname = str(request.get("name") or "")
                if request.get("exactly") is not None:
                    self._validate_class(str(request["exactly"].get("deviceClassName") or ""), rname)
                elif request.get("firstAvailable"):
                    for sub in request["firstAvailable"]:
                        self._validate_class(str(sub.get("deviceClassName") or ""), f"{rname}/{sub.get('name')}")
                else:
                    raise PreFilterReject(plugins.Status(plugins.UNRESOLVABLE, [
                        f"resource claim {display_key(claim)}, request {rname}: unknown request type"]))
            if claim_requests_admin_access(claim) and not namespace_allows_admin_access(namespace):
                raise PreFilterReject(plugins.Status(plugins.UNRESOLVABLE, [
                    f"resource claim {display_key(claim)}: admin access to devices requires the "
                    f"`{ADMIN_ACCESS_NAMESPACE_LABEL}: true` label on the containing namespace"]))
        d.claims = claims
        d.active = True
        d.alloc_claims = [claims[i] for i in d.to_allocate]
        d.has_selectors = any(sel is not None for sel in d.selectors)
        d.prioritized = any(r.get("firstAvailable") for c in d.alloc_claims
                            for r in ((spec_of(c).get("devices") or {}).get("requests") or []))
        if d.to_allocate:
            d.signature = _encode([spec_of(c) for c in d.alloc_claims])
        return d

    def _binding_failed(self, claim: Mapping[str, Any]) -> bool:
        """Filter's binding-conditions check of an allocated claim: a failure condition is True,
        or the conditions are still not met `bindingTimeout` after the allocation."""
        try:
            ready = bindings.claim_ready_for_binding(claim)
        except bindings.BindingFailed as exc:
            self._log.debug("claim_binding_failed", claim=display_key(claim), error=str(exc))
            return True
        if not ready and bindings.claim_timed_out(claim, now=self.clock.now(), timeout=self.binding_timeout):
            self._log.debug("claim_binding_timed_out", claim=display_key(claim))
            return True
        return False

    def _untolerated_no_execute(self, alloc: Mapping[str, Any]) -> str:
        """KEP-5055: an allocated claim whose device has a NoExecute taint that its allocation
        result does not tolerate is not reserved for new pods (its current pods are evicted by the
        device taint eviction controller); the first such device as driver/pool/device, or ""."""
        allocator = self.assume.allocator or self.assume.get_allocator()
        for result in ((alloc.get("devices") or {}).get("results") or []):
            driver, pool, device = (str(result.get(k) or "") for k in ("driver", "pool", "device"))
            tolerations = result.get("tolerations") or []
            for taint in allocator.device_taints(driver=driver, pool=pool, device=device):
                if taint.get("effect") == "NoExecute" and not any(
                        tolerates_taint(t, taint) for t in tolerations):
                    return f"{driver}/{pool}/{device}"
        return ""

    def _validate_class(self, class_name: str, request_name: str) -> None:
        if not class_name:
            raise SchedError(f"request {request_name}: unsupported request type")
        if class_name not in self.assume.class_map:
            raise PreFilterReject(plugins.Status(plugins.UNRESOLVABLE, [
                f"request {request_name}: device class {class_name} does not exist"]))

    async def _dra_filter(self, pod: Mapping[str, Any], d: DraCycle, entry: NodeEntry
                          ) -> tuple[plugins.Status | None, list[dict[str, Any]], ext.ExtendedResourceClaim | None]:
        node_ext: ext.ExtendedResourceClaim | None = None
        claims = d.alloc_claims
        signature = d.signature
        if d.ext_template:
            try:
                node_ext = ext.build_extended_resource_claim(pod, self.assume.class_map, node=entry.node)
            except ext.ExtendedResourceUnfit as e:
                return plugins.Status(plugins.UNSCHEDULABLE, [f"Insufficient {e.resource}"], DRA_PLUGIN), [], None
            if node_ext is None and not d.claims:
                return None, [], None  # satisfied by the node's device plugin
            if node_ext is not None:
                claims = [*claims, node_ext.claim]
                signature += _encode(node_ext.claim["spec"])
        unavailable = False
        if d.has_selectors:
            for index, selector in enumerate(d.selectors):
                if selector is not None and not node_selector_matches(selector, entry.node):
                    d.unavailable.add(index)
                    unavailable = True
        if d.blocked:
            d.unavailable.update(d.blocked)
            unavailable = True
        allocs: list[dict[str, Any]] = []
        if claims:
            result = await self._allocate_cached(entry, claims, signature)
            if result is None:
                return CANNOT_ALLOCATE, [], None
            if isinstance(result, plugins.Status):
                return result, [], None
            allocs = result
        if unavailable:
            return plugins.Status(plugins.UNRESOLVABLE, ["resourceclaim not available on the node"], DRA_PLUGIN), [], None
        return None, allocs, node_ext

    async def _allocate_cached(self, entry: NodeEntry, claims: list[dict[str, Any]], signature: bytes
                               ) -> list[dict[str, Any]] | plugins.Status | None:
        """Allocate on one node, reusing the previous answer for the same claim specs while none of
        the node's pools changed (no device allocated or freed there, same allocator)."""
        allocator = self.assume.allocator or self.assume.get_allocator()
        version = (self.assume.allocator_gen, entry.dra_version, self.assume.shared_version)
        cached = entry.dra_cache.get(signature)
        if cached is not None and cached[:3] == version:
            self.stats.dra_cache_hits += 1
            return cached[3]  # type: ignore[no-any-return]
        self.stats.allocate_calls += 1
        try:
            result = await self._allocate(allocator, entry, claims)
        except AllocationTimeout:
            raise SchedError(f"node {entry.name}: timed out trying to allocate devices") from None
        except NodeAllocationError as e:
            out: plugins.Status | list[dict[str, Any]] | None = plugins.Status(plugins.UNRESOLVABLE, [str(e)], DRA_PLUGIN)
        except AllocationError as e:
            raise SchedError(str(e)) from None
        else:
            out = result
        if self.assume.allocator is allocator and version == (self.assume.allocator_gen, entry.dra_version, self.assume.shared_version) \
                and not _has_shares(out):
            if len(entry.dra_cache) > 64:
                entry.dra_cache.clear()
                self.node_cache.dra_changed(entry.name)  # (its answers forgotten: no longer known)
            entry.dra_cache[signature] = (*version, out)
        return out

    async def _allocate(self, allocator: Allocator, entry: NodeEntry, claims: list[dict[str, Any]]
                        ) -> list[dict[str, Any]] | None:
        """On the event loop for up to ON_LOOP_SLICE, then (starting over) in a thread with the
        rest of the per-node time limit while claim-state changes wait."""
        begin = time.monotonic()
        deadline = min(begin + self.filter_timeout, self._cycle_deadline)
        if deadline - begin <= ON_LOOP_SLICE:
            return allocator.allocate(node=entry.node, claims=claims, deadline=deadline)
        try:
            return allocator.allocate(node=entry.node, claims=claims, deadline=begin + ON_LOOP_SLICE)
        except AllocationTimeout:
            pass
        self.stats.threaded_allocations += 1
        self._log.debug("allocation_slow_moving_to_thread", node=entry.name, limit_seconds=self.filter_timeout)
        self.assume.deferred = []
        try:
            return await asyncio.to_thread(allocator.allocate, node=entry.node, claims=claims, deadline=deadline)
        finally:
            pending, self.assume.deferred = self.assume.deferred, None
            for fn in pending or ():
                fn()

    async def _dra_post_filter(self, pod: Mapping[str, Any], d: DraCycle) -> str:
        """DynamicResources PostFilter: deallocate one allocated claim that is unusable on some
        node and reserved by nobody else, so that the next attempt can allocate it afresh."""
        if not d.active:
            return "no new claims to deallocate"
        pod_uid = uid_of(pod)
        for index in sorted(d.unavailable):
            claim = d.claims[index]
            if claim is d.ext_existing:
                continue
            reserved = status_of(claim).get("reservedFor") or []
            if not reserved or (len(reserved) == 1 and reserved[0].get("uid") == pod_uid):
                body = caches.deep_copy(claim)
                status = body.setdefault("status", {})
                for key in ("reservedFor", "allocation", "devices"):
                    status.pop(key, None)
                try:
                    await self.client.update_status(CLAIMS, body, field_manager=COMPONENT)
                except errors.StatusError as exc:
                    self._log.info("deallocation_failed", claim=display_key(claim), error=exc.message)
                    return "still not schedulable"
                self._log.info("claim_deallocated", claim=display_key(claim), pod=display_key(pod))
                return "deallocation of ResourceClaim completed"
        if d.ext_existing is not None:
            # A special claim from an earlier attempt: start over with a fresh one.
            with contextlib.suppress(errors.NotFound):
                await delete_claim(self.client, d.ext_existing)
            return "deletion of ResourceClaim completed"
        return "still not schedulable"

    def _select_host(self, info: plugins.PodInfo, pinfo: framework.PodInfo, state: framework.CycleState,
                     d: DraCycle, feasible: Sequence[tuple[NodeEntry, list[dict[str, Any]], ext.ExtendedResourceClaim | None]]
                     ) -> tuple[NodeEntry, list[dict[str, Any]], ext.ExtendedResourceClaim | None]:
        if len(feasible) == 1:
            return feasible[0]
        nodes = list(map(_first, feasible))
        extra = self._extra_scores(pinfo, d, feasible)
        totals, _per_plugin = self.profile.run_scores(state, pinfo, nodes, extra, skip=self._fused_scores(extra, pinfo, nodes))
        return feasible[self._pick_best(totals)]

    def _pick_best(self, totals: Sequence[float]) -> int:
        """selectHost: a uniformly random one among the top scores (the scheduler's seedable rng)."""
        best = max(totals)
        if totals.count(best) == 1:
            return totals.index(best)
        top = [i for i, score in enumerate(totals) if score == best]
        return top[self.rng.randrange(len(top))]

    def _fused_scores(self, extra: list[tuple[str, list[int], int]], pinfo: framework.PodInfo,
                      nodes: Sequence[NodeEntry]) -> tuple[str, ...]:
        """The fast path: NodeResourcesFit and NodeResourcesBalancedAllocation with their default
        args and weights scored in one call per node (appended to `extra`); the plugins to skip."""
        if not self._resource_fast:
            return ()
        balanced = bool(pinfo.req.requests.cpu or pinfo.req.requests.memory)
        extra.append(("NodeResources", noderesources.default_resource_scores(pinfo, nodes, balanced=balanced), 1))
        return _RESOURCE_PLUGINS

    def _extra_scores(self, pinfo: framework.PodInfo, d: DraCycle,
                      feasible: Sequence[tuple[NodeEntry, list[dict[str, Any]], ext.ExtendedResourceClaim | None]]
                      ) -> list[tuple[str, list[int], int]]:
        """Scores from outside the profile's plugins: DynamicResources' score (1.37: the
        prioritized-list subrequests chosen; normalized, with the profile's weight for it)."""
        extra: list[tuple[str, list[int], int]] = []
        weight = self.profile.dra_weight
        if d.prioritized and weight:
            dra = [plugins.dynamic_resources_score(d.claims, allocs) if allocs else 0 for _e, allocs, _x in feasible]
            framework.default_normalize(dra, reverse=False)
            extra.append((DRA_PLUGIN, dra, weight))
        return extra

    def _reserve(self, pod: dict[str, Any], pinfo: framework.PodInfo, state: framework.CycleState, d: DraCycle,
                 entry: NodeEntry, allocs: list[dict[str, Any]], node_ext: ext.ExtendedResourceClaim | None) -> Plan:
        pod_uid = uid_of(pod)
        pod_key = caches.key_of(pod)
        plan = Plan(node=entry.name, claims=[])
        to_alloc = {index: allocs[i] for i, index in enumerate(d.to_allocate)}
        for index, claim in enumerate(d.claims):
            uid = uid_of(claim)
            alloc = to_alloc.get(index)
            if alloc is not None:
                self.assume.assume(uid, alloc)
                self.assume.in_flight[uid] = pod_key
            plan.claims.append(ClaimPlan(claim=claim, allocation=alloc, key=uid, extended=claim is d.ext_existing,
                                          reserve=not self._reserved(claim, pod),
                                          consumer=(self.workload_claims.consumer(pod, claim)
                                                    if self.workload_claims is not None else None)))
        if node_ext is not None:
            alloc = allocs[len(d.to_allocate)]
            key = f"extended:{pod_uid}"
            self.assume.assume(key, alloc)
            plan.claims.append(ClaimPlan(claim=None, allocation=alloc, key=key, extended=True))
            plan.extended_claim = node_ext.claim
            plan.mappings = node_ext.mappings
        if self.node_allocatable and d.active:
            # assume: the pod counts on the node with what its claims take there
            claim_statuses = self._node_allocatable_statuses(pod, d, allocs, node_ext)
            status = {k: v for k, v in status_of(pod).items() if k != NODE_ALLOCATABLE_STATUSES}
            if claim_statuses:
                status[NODE_ALLOCATABLE_STATUSES] = claim_statuses
                plan.node_allocatable = claim_statuses
            assumed = {**pod, "status": status}
            pinfo = framework.PodInfo(assumed, plugins.pod_requests(assumed, node_allocatable_claims=True),
                                      pinfo.owner)
        binding = self.profile.plugin("VolumeBinding")
        if isinstance(binding, volumebinding.VolumeBinding):
            volumes = binding.bindings(state, entry)
            if volumes:
                plan.volume_bindings = [(dict(pv), dict(claim)) for claim, pv in volumes.static]
                plan.provision_claims = [dict(claim) for claim in volumes.provision]
        self.node_cache.assume_pod(pinfo, entry.name)
        if self.preemption is not None:
            self.preemption.nominator.delete(pinfo.uid)  # DeleteNominatedPodIfExists
        return plan

    # ------------------------------------------------------------------ node allocatable resources

    def _node_allocatable_statuses(self, pod: Mapping[str, Any], d: DraCycle, allocs: Sequence[dict[str, Any]],
                                   node_ext: ext.ExtendedResourceClaim | None) -> list[dict[str, Any]]:
        """`pod.status.nodeAllocatableResourceClaimStatuses` for the pod's claims with what they
        have or are allocated on this node (the extended-resource claim to create under a
        placeholder name, replaced once it exists)."""
        new = {index: allocs[i] for i, index in enumerate(d.to_allocate) if i < len(allocs)}
        pairs: list[tuple[Mapping[str, Any], Mapping[str, Any] | None]] = [
            (claim, new.get(index, allocation_of(claim))) for index, claim in enumerate(d.claims)]
        if node_ext is not None and len(allocs) > len(d.to_allocate):
            pairs.append(({"metadata": {"name": EXTENDED_CLAIM_PLACEHOLDER}}, allocs[len(d.to_allocate)]))
        allocator = self.assume.allocator or self.assume.get_allocator()
        try:
            return nodeallocatable.claim_statuses(
                pod=pod, claims=pairs,
                device=lambda driver, pool, device: allocator.device(driver=driver, pool=pool, device=device))
        except nodeallocatable.FootprintError as exc:
            raise SchedError(str(exc)) from None

    def _node_allocatable_filter(self, pod: Mapping[str, Any], d: DraCycle, entry: NodeEntry,
                                 allocs: Sequence[dict[str, Any]], node_ext: ext.ExtendedResourceClaim | None
                                 ) -> plugins.Status | None:
        """DynamicResources' Filter, last part (KEP-5517): a claim whose device maps onto a node
        resource is not shared with another pod; with what the claims take of the node, the pod
        stays within its pod-level resources and fits the node's allocatable resources."""
        allocator = self.assume.allocator or self.assume.get_allocator()
        for claim in d.claims:
            alloc = allocation_of(claim)
            if alloc is None or not status_of(claim).get("reservedFor") or self._reserved(claim, pod):
                continue
            if any(nodeallocatable.has_mapping(allocator.device(
                    driver=str(r.get("driver") or ""), pool=str(r.get("pool") or ""), device=str(r.get("device") or "")))
                    for r in ((alloc.get("devices") or {}).get("results") or ())):
                return plugins.Status(plugins.UNRESOLVABLE, [
                    f"node allocatable resource claim {meta_of(claim).get('name')} has a mapped device and cannot "
                    "be shared across pods"], DRA_PLUGIN)
        claim_statuses = self._node_allocatable_statuses(pod, d, allocs, node_ext)
        if not claim_statuses:
            return None
        with_claims = {**pod, "status": {**status_of(pod), NODE_ALLOCATABLE_STATUSES: claim_statuses}}
        shortfall = nodeallocatable.pod_level_shortfall(with_claims, claim_statuses)
        if shortfall is not None:
            return plugins.Status(plugins.UNRESOLVABLE, [shortfall], DRA_PLUGIN)
        req = plugins.pod_requests(with_claims, node_allocatable_claims=True)
        return plugins.node_allocatable_fit(req.requests, entry.info.alloc, entry.usage, plugin=DRA_PLUGIN)

    # ------------------------------------------------------------------ preemption

    def _extensions(self, active: Sequence[framework.Plugin]) -> list[framework.Plugin]:
        """The PreFilter plugins whose AddPod/RemovePod run (those not skipped this cycle)."""
        running = {p.name for p in active}
        skipped = {p.name for p in self.profile.filters} - running
        return [p for p in self.profile.pre_filters if p.name not in skipped]

    async def _filter_nominated(self, pod: Mapping[str, Any], filters: preemptions.Filters,
                                state: framework.CycleState, d: DraCycle, entry: NodeEntry
                                ) -> plugins.Status | tuple[list[dict[str, Any]], ext.ExtendedResourceClaim | None]:
        """All the filters on one node (the pod's nominated node): the rejection, or what DRA allocated."""
        state1, entry1, again = filters.with_nominated(state, entry)
        status = filters.core(state1, entry1)
        allocs: list[dict[str, Any]] = []
        node_ext: ext.ExtendedResourceClaim | None = None
        if status is None and d.active:
            try:
                status, allocs, node_ext = await self._dra_filter(pod, d, entry)
            except SchedError as exc:  # logged; the full search follows, as upstream
                self._log.info("nominated_node_evaluation_failed", node=entry.name, error=str(exc))
                return plugins.Status(framework.ERROR, [str(exc)])
            if status is None and self.node_allocatable:
                try:
                    status = self._node_allocatable_filter(pod, d, entry, allocs, node_ext)
                except SchedError as exc:
                    self._log.info("nominated_node_evaluation_failed", node=entry.name, error=str(exc))
                    return plugins.Status(framework.ERROR, [str(exc)])
        if status is None and again:
            status = filters.core(state, entry)
        return status if status is not None else (allocs, node_ext)

    async def _preempt(self, pod: Mapping[str, Any], filters: preemptions.Filters, state: framework.CycleState,
                       d: DraCycle, nodes: Sequence[NodeEntry], statuses: Mapping[str, plugins.Status]
                       ) -> preemptions.Result:
        """DefaultPreemption's PostFilter after a Filter phase that found no node. DynamicResources
        has no AddPod/RemovePod in 1.37, so its verdict per node is taken once, before the dry runs."""
        if self.preemption is None:
            return preemptions.Result(code=plugins.UNSCHEDULABLE,
                                      message=plugins.preemption_message(pod, len(nodes), statuses, None))
        if not self._preemption_enabled():
            return preemptions.Result(code=plugins.UNSCHEDULABLE)
        absent = plugins.Status(plugins.UNRESOLVABLE, [])
        if d.active and spec_of(pod).get("preemptionPolicy") != preemptions.PREEMPT_NEVER:
            verdicts: dict[str, plugins.Status | None] = {}
            for entry in preemptions.potential_nodes(nodes, statuses, absent):
                verdicts[entry.name] = (await self._dra_filter(pod, d, entry))[0]
            filters.final = lambda node: verdicts.get(node.name)
        return self.preemption.post_filter(pod=pod, state=state, nodes=nodes, statuses=statuses, absent=absent,
                                           args=self._preemption_args(),
                                           filters=filters)

    def _preemption_args(self) -> preemptions.Args | None:
        """The profile's DefaultPreemptionArgs (pluginConfig; validated when the profile was built)."""
        args = self.profile.plugin_args.get(preemptions.PLUGIN)
        return preemptions.Args.of(args) if args is not None else None

    def _preemption_enabled(self) -> bool:
        """DefaultPreemption is in the profile (a profile listing no plugins has the defaults)."""
        return not self.profile.enabled or preemptions.PLUGIN in self.profile.enabled

    def _preempt_rejected(self, pod: Mapping[str, Any], req: plugins.PodRequests, nodes: Sequence[NodeEntry],
                          rejected: plugins.Status) -> preemptions.Result:
        """PostFilter after a PreFilter rejection: every node has the PreFilter's status."""
        if self.preemption is None:
            return preemptions.Result(code=plugins.UNSCHEDULABLE,
                                      message=plugins.preemption_message(pod, len(nodes), {}, rejected))
        if not self._preemption_enabled():
            return preemptions.Result(code=plugins.UNSCHEDULABLE)
        owner = controller_uid_of(pod)
        filters = preemptions.Filters(info=plugins.PodInfo(pod, req, owner), pod=framework.PodInfo(pod, req, owner),
                                      ext_mapping=self.assume.ext_mapping,
                                      nominated=self.preemption.nominator.pods_on)
        return self.preemption.post_filter(pod=pod, state=framework.CycleState(), nodes=nodes, statuses={},
                                           args=self._preemption_args(),
                                           absent=rejected, filters=filters)

    def _why_short(self, pod: Mapping[str, Any], dra: Any, statuses: Mapping[str, Any]) -> str:
        """Issue #12: after upstream's sentence, say why the DRA filter rejected the nodes (at most
        50 ms of search, on this failure path only; deterministic text, so an unchanged verdict does
        not rewrite the pod's condition). Scripts matching the upstream wording keep working."""
        if not dra.alloc_claims:
            return ""
        from cp.scheduling import explain

        rejected = [self.node_cache.nodes[name].node for name, st in statuses.items()
                    if getattr(st, "plugin", "") == DRA_PLUGIN and name in self.node_cache.nodes]
        if not rejected:
            return ""
        held = self.assume.held_claims()
        try:
            return explain.short_reason(self.assume.get_allocator(), pod=pod, claims=dra.alloc_claims,
                                        nodes=rejected, all_claims=held)
        except Exception:  # the explanation must never break scheduling
            logger.exception("why_short_failed", pod=meta_of(pod).get("name"))
            return ""


def unschedulable_plugins(statuses: Iterable[plugins.Status]) -> frozenset[str]:
    """`Diagnosis.UnschedulablePlugins`: the plugins whose statuses rejected some node."""
    return frozenset(st.plugin for st in statuses if st.plugin)


class _Again:
    """`SchedulingCycle._run`'s answer when it skipped nodes and none fit: run again, visiting them."""


_AGAIN = _Again()


class _NamespaceLabels(Mapping[str, Mapping[str, str]]):
    """The namespaces' labels from the informer, looked up as needed (`GetNamespaceLabelsSnapshot`)."""

    def __init__(self, namespaces: informers.Informer) -> None:
        self._cache = namespaces.cache

    def __getitem__(self, name: str) -> Mapping[str, str]:
        ns = self._cache.get("", name)
        if ns is None:
            raise KeyError(name)
        return meta_of(ns).get("labels") or {}

    def __iter__(self) -> Iterator[str]:
        return (caches.key_of(ns)[1] for ns in self._cache.list())

    def __len__(self) -> int:
        return len(self._cache.list())


class InformerVolumes:
    """`volumebinding.VolumeLookup` over the scheduler's informers."""

    def __init__(self, *, pvcs: informers.Informer, pvs: informers.Informer, classes: informers.Informer) -> None:
        self._pvcs, self._pvs, self._classes = pvcs.cache, pvs.cache, classes.cache

    def claim(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self._pvcs.get(namespace, name)

    def volume(self, name: str) -> Mapping[str, Any] | None:
        return self._pvs.get("", name)

    def volumes(self) -> Iterable[Mapping[str, Any]]:
        return self._pvs.list()

    def storage_class(self, name: str) -> Mapping[str, Any] | None:
        return self._classes.get("", name)
def _post_filter_message(dra_message: str, result: preemptions.Result) -> str:
    """`RunPostFilterPlugins`' message: none once a plugin succeeds; an error's own message; else the
    reasons of DynamicResources and DefaultPreemption joined."""
    if result.success:
        return ""
    if result.code == framework.ERROR:
        return result.message
    return ", ".join(m for m in (dra_message, result.message) if m)


def _has_shares(result: Any) -> bool:
    if not isinstance(result, list):
        return False
    for alloc in result:
        for r in ((alloc.get("devices") or {}).get("results") or []):
            if "shareID" in r:
                return True
    return False

