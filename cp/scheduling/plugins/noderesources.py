"""NodeResourcesFit and NodeResourcesBalancedAllocation (pure), in kube-scheduler 1.37's integer
arithmetic.

- **NodeResourcesFit** Filter: pod count, cpu, memory, ephemeral storage and scalar requests against
  `status.allocatable` minus what the node's pods request; `ignoredResources` /
  `ignoredResourceGroups` skip extended resources by name or by the prefix before the `/`; an
  extended resource the node does not advertise (or advertises as 0) but a DeviceClass backs is left
  to DynamicResources (KEP-5004). Rejections are `Unschedulable`, or `UnschedulableAndUnresolvable`
  when some request exceeds the node's whole allocatable (preemption cannot help).
- **NodeResourcesFit** Score with its `scoringStrategy`: `LeastAllocated` (default, cpu and memory
  with weight 1), `MostAllocated` or `RequestedToCapacityRatio` (a broken-linear `shape` over
  utilization 0..100 with scores 0..10). cpu and memory count the non-zero requests (100m / 200Mi for
  a container that requests nothing); a scalar resource the pod does not request is left out.
- **NodeResourcesBalancedAllocation** Score: how much the pod improves the balance of the node's
  requested fractions (1 - standard deviation, before and after adding the pod), mapped to 50..100;
  best-effort pods are skipped at PreScore.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from cp.scheduling import framework, plugins, profiles

__all__ = ["DEFAULT_RESOURCES", "ArgsError", "BalancedAllocation", "Fit", "ResourceSpec"]

MAX_UTILIZATION = 100
MAX_CUSTOM_PRIORITY_SCORE = 10  # config.MaxCustomPriorityScore
MAX_WEIGHT = 100  # resource weights are 1..MaxNodeScore

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"

ResourceSpec = tuple[str, int]  # (resource name, weight)
DEFAULT_RESOURCES: tuple[ResourceSpec, ...] = (("cpu", 1), ("memory", 1))


class ArgsError(ValueError):
    """Invalid plugin args (what upstream's validation rejects), with the field path."""


# ---------------------------------------------------------------------- integer helpers


def go_div(a: int, b: int) -> int:
    """Go's integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def go_round_ratio(num: int, den: int) -> int:
    """`math.Round(float64(num) / float64(den))` for non-negative integers (half away from zero)."""
    return (2 * num + den) // (2 * den)


def least_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * plugins.MAX_NODE_SCORE // capacity


def most_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0:
        return 0
    requested = min(requested, capacity)  # pods without requests count the defaults
    return requested * plugins.MAX_NODE_SCORE // capacity


def _weighted(fn: Any, resources: Sequence[ResourceSpec], requested: Sequence[int], allocatable: Sequence[int]) -> int:
    node_score = weight_sum = 0
    for i, (_name, weight) in enumerate(resources):
        if allocatable[i] == 0:
            continue
        node_score += fn(requested[i], allocatable[i]) * weight
        weight_sum += weight
    return node_score // weight_sum if weight_sum else 0


def scaled_utilization(requested: int, capacity: int, top: int = MAX_UTILIZATION) -> int:
    """requested * top / capacity with requested clamped to 0..capacity (exact)."""
    if capacity <= 0 or requested <= 0:
        return 0
    if requested >= capacity:
        return top
    return requested * top // capacity


def broken_linear(shape: Sequence[tuple[int, int]], p: int) -> int:
    """`helper.BuildBrokenLinearFunction`: the score at utilization p, interpolated with Go's
    truncating integer division."""
    for i, (util, score) in enumerate(shape):
        if p <= util:
            if i == 0:
                return shape[0][1]
            u0, s0 = shape[i - 1]
            return s0 + go_div((score - s0) * (p - u0), util - u0)
    return shape[-1][1]


def rtcr_score(shape: Sequence[tuple[int, int]], resources: Sequence[ResourceSpec], requested: Sequence[int],
               allocatable: Sequence[int]) -> int:
    """RequestedToCapacityRatio: the weighted mean (rounded) of the positive per-resource scores."""
    node_score = weight_sum = 0
    for i, (_name, weight) in enumerate(resources):
        cap = allocatable[i]
        if cap == 0:
            continue
        req = requested[i]
        util = MAX_UTILIZATION if req > cap else scaled_utilization(req, cap)
        s = broken_linear(shape, util)
        if s > 0:
            node_score += s * weight
            weight_sum += weight
    return go_round_ratio(node_score, weight_sum) if weight_sum else 0


def balanced_std_score(requested: Sequence[int], allocatable: Sequence[int]) -> int:
    """(1 - std of the requested fractions) * 100, truncated; resources with no allocatable are
    left out, fractions capped at 1; two resources: |f1 - f2| / 2."""
    fractions: list[float] = []
    total = 0.0
    for req, cap in zip(requested, allocatable, strict=True):
        if cap == 0:
            continue
        f = float(req) / float(cap)
        if f > 1:
            f = 1.0
        total += f
        fractions.append(f)
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = total / len(fractions)
        acc = 0.0
        for f in fractions:
            acc = acc + (f - mean) * (f - mean)
        std = math.sqrt(acc / len(fractions))
    return int((1 - std) * float(plugins.MAX_NODE_SCORE))


def balanced_score(requested: Sequence[int], allocated: Sequence[int], allocatable: Sequence[int]) -> int:
    """The balance with the pod against without it: 75 for no change, towards 100 when the pod
    improves it, towards 50 when it worsens it."""
    with_pod = balanced_std_score(requested, allocatable)
    without_pod = balanced_std_score(allocated, allocatable)
    half = plugins.MAX_NODE_SCORE // 2
    return half + go_div(half + with_pod - without_pod, 2)


# ---------------------------------------------------------------------- requests


def _value(res: plugins.Resources, name: str) -> int:
    if name == "cpu":
        return res.cpu
    if name == "memory":
        return res.memory
    if name == "ephemeral-storage":
        return res.ephemeral
    return res.scalar.get(name, 0)


def pod_request_list(req: plugins.PodRequests, resources: Sequence[ResourceSpec], *, use_requested: bool) -> list[int]:
    """`calculatePodResourceRequestList`: the pod's request per listed resource (non-zero cpu and
    memory unless `use_requested`)."""
    src = req.requests if use_requested else req.non_zero
    return [_value(src, name) for name, _w in resources]


def allocatable_requested(node: framework.NodeState, name: str, pod_request: int, *, use_requested: bool
                          ) -> tuple[int, int, int]:
    """`calculateResourceAllocatableRequest`: (allocatable, requested with the pod, requested
    without it); (0, 0, 0) leaves the resource out (a scalar the pod does not request, or one the
    node does not have)."""
    if pod_request == 0 and plugins.is_scalar_resource_name(name):
        return 0, 0, 0
    have = node.info.alloc.resources
    usage = node.usage
    if name in ("cpu", "memory"):
        used = _value(usage.requested if use_requested else usage.non_zero, name)
        return _value(have, name), used + pod_request, used
    if name == "ephemeral-storage":
        used = usage.requested.ephemeral
        return have.ephemeral, used + pod_request, used
    if name in have.scalar:
        used = usage.requested.scalar.get(name, 0)
        return have.scalar[name], used + pod_request, used
    return 0, 0, 0


def node_vectors(node: framework.NodeState, resources: Sequence[ResourceSpec], pod_requests: Sequence[int], *,
                 use_requested: bool) -> tuple[list[int], list[int], list[int]]:
    n = len(resources)
    requested, allocated, allocatable = [0] * n, [0] * n, [0] * n
    for i, (name, _w) in enumerate(resources):
        alloc, req, used = allocatable_requested(node, name, pod_requests[i], use_requested=use_requested)
        if alloc == 0:
            continue
        allocatable[i], requested[i], allocated[i] = alloc, req, used
    return requested, allocated, allocatable


# ---------------------------------------------------------------------- args


def _resources(raw: Any, path: str, *, balanced: bool) -> tuple[ResourceSpec, ...]:
    if raw is None or raw == []:
        return DEFAULT_RESOURCES
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        raise ArgsError(f"{path}: must be a list of {{name, weight}}")
    out: list[ResourceSpec] = []
    seen: set[str] = set()
    for i, item in enumerate(raw):
        if not isinstance(item, Mapping) or not item.get("name"):
            raise ArgsError(f"{path}[{i}].name: Required value")
        name = str(item["name"])
        weight = item.get("weight")
        weight = 1 if weight in (None, 0) else weight  # v1 defaulting
        if not isinstance(weight, int) or isinstance(weight, bool):
            raise ArgsError(f"{path}[{i}].weight: must be an integer")
        if name in seen:
            raise ArgsError(f'{path}[{i}].name: Duplicate value: "{name}"')
        seen.add(name)
        if balanced and weight != 1:
            raise ArgsError(f"{path}[{i}].weight: Invalid value: {weight}: must be 1")
        if not balanced and not 1 <= weight <= MAX_WEIGHT:
            raise ArgsError(f"{path}[{i}].weight: Invalid value: {weight}: must be in the range [1, {MAX_WEIGHT}]")
        out.append((name, weight))
    return tuple(out)


def _shape(raw: Any) -> tuple[tuple[int, int], ...]:
    path = "scoringStrategy.requestedToCapacityRatio.shape"
    if not isinstance(raw, Sequence) or isinstance(raw, str) or not raw:
        raise ArgsError(f"{path}: Required value: at least one point must be specified")
    out: list[tuple[int, int]] = []
    for i, point in enumerate(raw):
        if not isinstance(point, Mapping):
            raise ArgsError(f"{path}[{i}]: must be {{utilization, score}}")
        util, score = point.get("utilization", 0), point.get("score", 0)
        if not isinstance(util, int) or not isinstance(score, int):
            raise ArgsError(f"{path}[{i}]: utilization and score must be integers")
        if not 0 <= util <= MAX_UTILIZATION:
            raise ArgsError(f"{path}[{i}].utilization: Invalid value: {util}: not in valid range [0, 100]")
        if out and util <= out[-1][0]:
            raise ArgsError(f"{path}[{i}].utilization: Invalid value: {util}: utilization values must be sorted "
                            "in increasing order")
        if not 0 <= score <= MAX_CUSTOM_PRIORITY_SCORE:
            raise ArgsError(f"{path}[{i}].score: Invalid value: {score}: not in valid range [0, 10]")
        out.append((util, score * (plugins.MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE)))
    return tuple(out)


# ---------------------------------------------------------------------- plugins


class Fit(framework.Plugin):
    name: ClassVar[str] = "NodeResourcesFit"
    points: ClassVar[frozenset[str]] = frozenset({"PreFilter", "Filter", "PreScore", "Score"})
    events: ClassVar[tuple[str, ...]] = ("AssignedPod/Delete", "AssignedPod/UpdatePodScaleDown",
                                         "UnscheduledPod/UpdatePodScaleDown", "Node/Add",
                                         "Node/UpdateNodeAllocatable", "DeviceClass/Add", "DeviceClass/Update")

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        args = args or {}
        self.ignored_resources = frozenset(str(r) for r in args.get("ignoredResources") or ())
        groups = [str(g) for g in args.get("ignoredResourceGroups") or ()]
        for i, g in enumerate(groups):
            if "/" in g:
                raise ArgsError(f'ignoredResourceGroups[{i}]: Invalid value: "{g}": resource group name can\'t '
                                "contain '/'")
        self.ignored_groups = frozenset(groups)
        strategy = args.get("scoringStrategy") or {}
        if not isinstance(strategy, Mapping):
            raise ArgsError("scoringStrategy: must be an object")
        self.strategy = str(strategy.get("type") or LEAST_ALLOCATED)
        if self.strategy not in (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO):
            raise ArgsError(f'scoringStrategy.type: Unsupported value: "{self.strategy}": supported values: '
                            '"LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"')
        self.resources = _resources(strategy.get("resources"), "scoringStrategy.resources", balanced=False)
        self.shape: tuple[tuple[int, int], ...] = ()
        if self.strategy == REQUESTED_TO_CAPACITY_RATIO:
            self.shape = _shape((strategy.get("requestedToCapacityRatio") or {}).get("shape"))
        # the fused filter (`plugins.PodInfo.filter`) gives the same answers for default args
        self.default_args = not self.ignored_resources and not self.ignored_groups

    # -- Filter ---------------------------------------------------------------------------

    def pre_filter(self, state: framework.CycleState, pod: framework.PodInfo,
                   snapshot: framework.Snapshot) -> framework.Status | None:
        state[self.name] = getattr(snapshot, "dra_backed", None) or {}
        return None

    def filter(self, state: framework.CycleState, pod: framework.PodInfo,
               node: framework.NodeState) -> framework.Status | None:
        dra_backed = state.get(self.name) or {}
        return fit_status(pod.req.requests, node.info.alloc, node.usage, dra_backed,
                          ignored=self.ignored_resources, ignored_groups=self.ignored_groups)

    # -- Score ----------------------------------------------------------------------------

    def pre_score(self, state: framework.CycleState, pod: framework.PodInfo,
                  nodes: Sequence[framework.NodeState]) -> framework.Status | None:
        state["PreScore" + self.name] = pod_request_list(pod.req, self.resources, use_requested=False)
        return None

    def score(self, state: framework.CycleState, pod: framework.PodInfo, node: framework.NodeState) -> int:
        reqs = state.get("PreScore" + self.name)
        if reqs is None:
            reqs = pod_request_list(pod.req, self.resources, use_requested=False)
        requested, _allocated, allocatable = node_vectors(node, self.resources, reqs, use_requested=False)
        if self.strategy == LEAST_ALLOCATED:
            return _weighted(least_requested_score, self.resources, requested, allocatable)
        if self.strategy == MOST_ALLOCATED:
            return _weighted(most_requested_score, self.resources, requested, allocatable)
        return rtcr_score(self.shape, self.resources, requested, allocatable)


class BalancedAllocation(framework.Plugin):
    name: ClassVar[str] = "NodeResourcesBalancedAllocation"
    points: ClassVar[frozenset[str]] = frozenset({"PreScore", "Score"})
    events: ClassVar[tuple[str, ...]] = ()

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        args = args or {}
        self.resources = _resources(args.get("resources"), "resources", balanced=True)

    def pre_score(self, state: framework.CycleState, pod: framework.PodInfo,
                  nodes: Sequence[framework.NodeState]) -> framework.Status | None:
        reqs = pod_request_list(pod.req, self.resources, use_requested=True)
        if not any(reqs):
            return framework.SKIPPED  # best-effort pods are not scored (kubernetes#129138)
        state["PreScore" + self.name] = reqs
        return None

    def score(self, state: framework.CycleState, pod: framework.PodInfo, node: framework.NodeState) -> int:
        reqs = state.get("PreScore" + self.name)
        if reqs is None:
            reqs = pod_request_list(pod.req, self.resources, use_requested=True)
            if not any(reqs):
                return 0
        requested, allocated, allocatable = node_vectors(node, self.resources, reqs, use_requested=True)
        return balanced_score(requested, allocated, allocatable)


# ---------------------------------------------------------------------- the fast path


def default_resource_scores(pod: framework.PodInfo, nodes: Sequence[framework.NodeState], *, balanced: bool
                            ) -> list[int]:
    """NodeResourcesFit (LeastAllocated over cpu and memory, weight 1 each) plus, unless the pod is
    best-effort (`balanced` False), NodeResourcesBalancedAllocation (cpu and memory) with their
    default args, on every node: the same integers as the two plugins, in one pass."""
    nz = pod.req.non_zero
    pc, pm = nz.cpu, nz.memory
    rq = pod.req.requests
    rc, rm = rq.cpu, rq.memory
    # Incremental: a node's score for this request is kept in its usage's memo until a pod on it
    # changes (the usage's version) or its allocatable does (a new `Allocatable`).
    key = f"NodeResources/{pc}/{pm}/{rc}/{rm}/{balanced:d}"  # a str: its hash is computed once
    out = []
    for node in nodes:
        usage = node.usage
        alloc = node.info.alloc
        hit = usage.memo.get(key)
        if hit is not None and hit[0] == usage.version and hit[1][0] is alloc:
            out.append(hit[1][1])
            continue
        have = alloc.resources
        hc, hm = have.cpu, have.memory
        cpu = usage.non_zero.cpu + pc
        mem = usage.non_zero.memory + pm
        if hc and hm:
            total = (((hc - cpu) * 100 // hc if cpu <= hc else 0) + ((hm - mem) * 100 // hm if mem <= hm else 0)) // 2
        elif hc:
            total = (hc - cpu) * 100 // hc if cpu <= hc else 0
        elif hm:
            total = (hm - mem) * 100 // hm if mem <= hm else 0
        else:
            total = 0
        if balanced:
            uc, um = usage.requested.cpu, usage.requested.memory
            if hc and hm:  # two fractions: std = |f1 - f2| / 2
                with_pod = _two_balance(uc + rc, hc, um + rm, hm)
                without = _two_balance(uc, hc, um, hm)
                total += 50 + go_div(50 + with_pod - without, 2)
            else:
                total += 75  # at most one resource: std 0 with and without the pod
        usage.memo[key] = (usage.version, (alloc, total))
        out.append(total)
    return out


def _two_balance(r1: int, c1: int, r2: int, c2: int) -> int:
    f1 = float(r1) / float(c1)
    f2 = float(r2) / float(c2)
    if f1 > 1:
        f1 = 1.0
    if f2 > 1:
        f2 = 1.0
    return int((1 - abs((f1 - f2) / 2)) * 100.0)


# ---------------------------------------------------------------------- Filter (shared with the fused path)


def fit_status(r: plugins.Resources, alloc: plugins.Allocatable, usage: plugins.NodeUsage | None,
               dra_backed: Mapping[str, str], *, ignored: frozenset[str] = frozenset(),
               ignored_groups: frozenset[str] = frozenset()) -> framework.Status | None:
    """`fitsRequest` + Filter's status: every insufficient resource ("Too many pods" first),
    unresolvable when a request exceeds the node's whole allocatable."""
    reasons, unresolvable = plugins.fit_check(r, alloc, usage, dra_backed, ignored=ignored,
                                              ignored_groups=ignored_groups)
    if not reasons:
        return None
    return framework.Status(plugins.UNRESOLVABLE if unresolvable else plugins.UNSCHEDULABLE, reasons)


profiles.PLUGINS[Fit.name] = Fit
profiles.PLUGINS[BalancedAllocation.name] = BalancedAllocation
