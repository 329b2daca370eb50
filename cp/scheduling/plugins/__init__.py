"""The scheduler's node filters and scores, and the texts it reports (pure; no I/O).

What kube-scheduler's default plugins decide for one pod on one node, in their order:

- **NodeUnschedulable**: `spec.unschedulable` nodes only take pods tolerating the
  `node.kubernetes.io/unschedulable:NoSchedule` taint — "node(s) were unschedulable";
- **NodeName**: a pod naming a node fits only there — "node(s) didn't match the requested node name";
- **TaintToleration**: every `NoSchedule` / `NoExecute` taint must be tolerated —
  "node(s) had untolerated taint(s)";
- **NodeAffinity**: `spec.nodeSelector` labels and `requiredDuringSchedulingIgnoredDuringExecution`
  — "node(s) didn't match Pod's node affinity/selector";
- **NodeResourcesFit**: pod count, cpu, memory, ephemeral storage and scalar (extended, hugepages)
  requests against `status.allocatable` minus the requests of the pods already on the node —
  "Too many pods", "Insufficient cpu", ... Extended resources the node does not advertise but a
  DeviceClass backs are left to DRA (KEP-5004).

The first four are "unresolvable" (preemption cannot help), NodeResourcesFit is "unschedulable".
Pod requests follow `resourcehelper.PodRequests`: the sum of the containers, restartable init
containers (sidecars) added, plain init containers as a maximum on top of the sidecars started
before them, plus overhead; pod-level `spec.resources.requests` win for cpu and memory. Scoring
uses the non-zero requests (100m cpu / 200Mi memory for a container that requests nothing).

The scores are the framework plugins' (one module each in this package, exact integers as upstream);
`dynamic_resources_score` is the DynamicResources plugin's raw score.

`fit_error` builds the `0/N nodes are available: ...` text (`FitError.Error()`), including the
PostFilter part the DynamicResources plugin and DefaultPreemption add.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from decimal import ROUND_CEILING
from typing import Any

from cp import quantity as quantities
from cp.dra import extended, nodeallocatable
from cp.dra.nodeselector import NodeSelectorError, node_selector_matches

__all__ = [
    "DEFAULT_MEMORY_REQUEST",
    "DEFAULT_MILLI_CPU_REQUEST",
    "ERR_REASON_AFFINITY",
    "ERR_REASON_NODE_NAME",
    "ERR_REASON_TAINT",
    "ERR_REASON_UNSCHEDULABLE",
    "NodeUsage",
    "PodRequests",
    "Status",
    "fit_error",
    "num_feasible_nodes_to_find",
    "pod_requests",
]

DEFAULT_MILLI_CPU_REQUEST = 100  # schedutil.DefaultMilliCPURequest
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024  # schedutil.DefaultMemoryRequest
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
HOSTNAME_LABEL = "kubernetes.io/hostname"

ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
ERR_REASON_NODE_NAME = "node(s) didn't match the requested node name"
ERR_REASON_TAINT = "node(s) had untolerated taint(s)"
ERR_REASON_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_TOO_MANY_PODS = "Too many pods"
NO_NODES_AVAILABLE = "no nodes available to schedule pods"
PREEMPTION_NOT_HELPFUL = "Preemption is not helpful for scheduling"
PREEMPTION_NO_VICTIMS = "No preemption victims found for incoming pod"

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
MAX_NODE_SCORE = 100
FIRST_AVAILABLE_MAX = 8  # resourceapi.FirstAvailableDeviceRequestMaxSize

UNSCHEDULABLE = "Unschedulable"
UNRESOLVABLE = "UnschedulableAndUnresolvable"

_NATIVE = ("cpu", "memory", "ephemeral-storage", "pods")


class Status:
    """Why a node was rejected: the code (`Unschedulable` or `UnschedulableAndUnresolvable`)
    and one or more reasons (each counted in the `0/N nodes` histogram)."""

    __slots__ = ("code", "plugin", "reasons")

    def __init__(self, code: str, reasons: Sequence[str], plugin: str = "") -> None:
        self.code = code
        self.reasons = list(reasons)
        self.plugin = plugin

    @property
    def resolvable(self) -> bool:
        return self.code == UNSCHEDULABLE

    def message(self) -> str:
        return ", ".join(self.reasons)

    def __repr__(self) -> str:
        return f"Status({self.code}, {self.reasons!r}, plugin={self.plugin!r})"


# ---------------------------------------------------------------------- quantities


def _milli(value: Any) -> int:
    """`Quantity.MilliValue()` (rounded up)."""
    try:
        d = quantities.parse(value)
    except quantities.QuantityError:
        return 0
    return int((d * 1000).to_integral_value(rounding=ROUND_CEILING))


def _whole(value: Any) -> int:
    """`Quantity.Value()` (rounded up)."""
    try:
        d = quantities.parse(value)
    except quantities.QuantityError:
        return 0
    return int(d.to_integral_value(rounding=ROUND_CEILING))


def is_scalar_resource_name(name: str) -> bool:
    """`schedutil.IsScalarResourceName`: extended, hugepages, prefixed native, attachable volumes."""
    if name.startswith("hugepages-") or name.startswith("attachable-volumes-"):
        return True
    if "/" not in name:
        return False
    # extended (`example.com/gpu`) or prefixed native (`kubernetes.io/...`), but not a quota name
    return not name.startswith("requests.")


class Resources:
    """A ResourceList in scheduler units: milli-cpu, bytes, counts."""

    __slots__ = ("cpu", "ephemeral", "memory", "scalar")

    def __init__(self) -> None:
        self.cpu = 0
        self.memory = 0
        self.ephemeral = 0
        self.scalar: dict[str, int] = {}

    @classmethod
    def of(cls, rl: Mapping[str, Any] | None) -> Resources:
        r = cls()
        if rl:
            r.add_list(rl)
        return r

    def add_list(self, rl: Mapping[str, Any]) -> None:
        for name, value in rl.items():
            if name == "cpu":
                self.cpu += _milli(value)
            elif name == "memory":
                self.memory += _whole(value)
            elif name == "ephemeral-storage":
                self.ephemeral += _whole(value)
            elif name != "pods" and is_scalar_resource_name(name):
                self.scalar[name] = self.scalar.get(name, 0) + _whole(value)

    def add(self, other: Resources) -> None:
        self.cpu += other.cpu
        self.memory += other.memory
        self.ephemeral += other.ephemeral
        for k, v in other.scalar.items():
            self.scalar[k] = self.scalar.get(k, 0) + v

    def sub(self, other: Resources) -> None:
        self.cpu -= other.cpu
        self.memory -= other.memory
        self.ephemeral -= other.ephemeral
        for k, v in other.scalar.items():
            n = self.scalar.get(k, 0) - v
            if n:
                self.scalar[k] = n
            else:
                self.scalar.pop(k, None)

    def max_with(self, other: Resources) -> None:
        self.cpu = max(self.cpu, other.cpu)
        self.memory = max(self.memory, other.memory)
        self.ephemeral = max(self.ephemeral, other.ephemeral)
        for k, v in other.scalar.items():
            self.scalar[k] = max(self.scalar.get(k, 0), v)

    def copy(self) -> Resources:
        r = Resources()
        r.cpu, r.memory, r.ephemeral, r.scalar = self.cpu, self.memory, self.ephemeral, dict(self.scalar)
        return r

    def is_zero(self) -> bool:
        return not (self.cpu or self.memory or self.ephemeral or any(self.scalar.values()))

    def __repr__(self) -> str:
        return f"Resources(cpu={self.cpu}m, memory={self.memory}, ephemeral={self.ephemeral}, scalar={self.scalar})"


class PodRequests:
    """What a pod asks for: requests (fit) and non-zero requests (scoring)."""

    __slots__ = ("non_zero", "requests")

    def __init__(self, requests: Resources, non_zero: Resources) -> None:
        self.requests = requests
        self.non_zero = non_zero


def _container_requests(c: Mapping[str, Any], non_zero: bool) -> Resources:
    rl = ((c.get("resources") or {}).get("requests")) or {}
    r = Resources.of(rl)
    if non_zero:
        if "cpu" not in rl:
            r.cpu = DEFAULT_MILLI_CPU_REQUEST
        if "memory" not in rl:
            r.memory = DEFAULT_MEMORY_REQUEST
    return r


def _sum_requests(spec: Mapping[str, Any], non_zero: bool, dra: Resources | None = None) -> Resources:
    reqs = Resources()
    for c in spec.get("containers") or []:
        reqs.add(_container_requests(c, non_zero))
    restartable = Resources()
    init_max = Resources()
    for c in spec.get("initContainers") or []:
        creqs = _container_requests(c, non_zero)
        if c.get("restartPolicy") == "Always":
            reqs.add(creqs)
            restartable.add(creqs)
            init_max.max_with(restartable)
        else:
            tmp = creqs.copy()
            tmp.add(restartable)
            init_max.max_with(tmp)
    reqs.max_with(init_max)
    if dra is not None:
        reqs.add(dra)
    pod_level = ((spec.get("resources") or {}).get("requests")) or {}
    if "cpu" in pod_level:
        reqs.cpu = _milli(pod_level["cpu"])
    if "memory" in pod_level:
        reqs.memory = _whole(pod_level["memory"])
    overhead = spec.get("overhead")
    if overhead:
        reqs.add_list(overhead)
    return reqs


def pod_requests(pod: Mapping[str, Any], *, node_allocatable_claims: bool = False) -> PodRequests:
    """With `node_allocatable_claims` (DRANodeAllocatableResources), what the pod's
    `status.nodeAllocatableResourceClaimStatuses` say its claims take of the node counts too
    (`UseDRANodeAllocatableResourceClaimStatus`), before pod-level requests and overhead."""
    spec = pod.get("spec") or {}
    dra: Resources | None = None
    if node_allocatable_claims:
        statuses = (pod.get("status") or {}).get("nodeAllocatableResourceClaimStatuses")
        if statuses:
            dra = Resources.of({name: q.canonical() for name, q in nodeallocatable.requests(statuses).items()})
    return PodRequests(_sum_requests(spec, False, dra), _sum_requests(spec, True, dra))


def node_allocatable_fit(r: Resources, alloc: Allocatable, usage: NodeUsage | None, *, plugin: str) -> Status | None:
    """The DynamicResources plugin's `nodeFitsResources` (KEP-5517): the pod's requests with what
    its claims take of the node, against the node's allocatable cpu, memory, ephemeral storage and
    hugepages minus what the pods there take; unresolvable when a request exceeds the whole node."""
    have = alloc.resources
    used = usage.requested if usage is not None else _ZERO
    reasons: list[str] = []
    unresolvable = False
    for name, want, cap, taken in (("cpu", r.cpu, have.cpu, used.cpu), ("memory", r.memory, have.memory, used.memory),
                                   ("ephemeral-storage", r.ephemeral, have.ephemeral, used.ephemeral)):
        if want > 0 and want > cap - taken:
            reasons.append(f"Insufficient {name}")
            unresolvable |= want > cap
    for name, want in r.scalar.items():
        if name.startswith("hugepages-"):
            cap = have.scalar.get(name, 0)
            if want > cap - used.scalar.get(name, 0):
                reasons.append(f"Insufficient {name}")
                unresolvable |= want > cap
    if not reasons:
        return None
    return Status(UNRESOLVABLE if unresolvable else UNSCHEDULABLE, reasons, plugin)


class NodeUsage:
    """What the pods bound to (or assumed on) one node request, how many siblings of each
    controller run there, and (when given) the pods themselves as `framework.PodInfo`s
    (`members`, by uid) with counts of those having pod (anti-)affinity and their host ports."""

    __slots__ = ("members", "memo", "non_zero", "owners", "pods", "ports", "requested", "version", "with_affinity",
                 "with_required_anti_affinity")

    def __init__(self) -> None:
        self.requested = Resources()
        self.non_zero = Resources()
        self.pods = 0
        self.owners: dict[str, int] = {}
        self.members: dict[str, Any] = {}
        self.with_affinity = 0
        self.with_required_anti_affinity = 0
        self.ports: dict[tuple[str, str, int], int] = {}
        # bumped by every add/remove; `memo` holds what plugins derived from the pods at a version
        # (e.g. PodTopologySpread's count of pods matching a selector)
        self.version = 0
        self.memo: dict[Any, tuple[int, Any]] = {}

    def add(self, req: PodRequests, owner: str, info: Any = None) -> None:
        self.version += 1
        self.requested.add(req.requests)
        self.non_zero.add(req.non_zero)
        self.pods += 1
        if owner:
            self.owners[owner] = self.owners.get(owner, 0) + 1
        if info is not None:
            self.members[info.uid] = info
            if info.has_affinity:
                self.with_affinity += 1
            if info.required_anti_affinity:
                self.with_required_anti_affinity += 1
            for port in info.host_ports:
                self.ports[port] = self.ports.get(port, 0) + 1

    def remove(self, req: PodRequests, owner: str, info: Any = None) -> None:
        self.version += 1
        self.requested.sub(req.requests)
        self.non_zero.sub(req.non_zero)
        self.pods -= 1
        if owner:
            n = self.owners.get(owner, 0) - 1
            if n > 0:
                self.owners[owner] = n
            else:
                self.owners.pop(owner, None)
        if info is not None and self.members.pop(info.uid, None) is not None:
            if info.has_affinity:
                self.with_affinity -= 1
            if info.required_anti_affinity:
                self.with_required_anti_affinity -= 1
            for port in info.host_ports:
                n = self.ports.get(port, 0) - 1
                if n > 0:
                    self.ports[port] = n
                else:
                    self.ports.pop(port, None)

    def copy(self) -> NodeUsage:
        """A copy to change (preemption's dry runs remove victims from it)."""
        u = NodeUsage()
        u.requested, u.non_zero, u.pods = self.requested.copy(), self.non_zero.copy(), self.pods
        u.owners, u.members, u.ports = dict(self.owners), dict(self.members), dict(self.ports)
        u.with_affinity, u.with_required_anti_affinity = self.with_affinity, self.with_required_anti_affinity
        return u


class Allocatable:
    """`status.allocatable` of a node in scheduler units (parsed once per node version)."""

    __slots__ = ("pods", "resources", "zero_scalar")

    def __init__(self, node: Mapping[str, Any]) -> None:
        rl = ((node.get("status") or {}).get("allocatable")) or {}
        self.resources = Resources.of(rl)
        self.pods = _whole(rl.get("pods", 0))
        # Advertised with a value of 0: DRA-backed extended resources then go through DRA.
        self.zero_scalar = {k for k, v in self.resources.scalar.items() if v == 0}


# ---------------------------------------------------------------------- tolerations, affinity


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """core/v1 `Toleration.ToleratesTaint`."""
    effect = toleration.get("effect") or ""
    if effect and effect != (taint.get("effect") or ""):
        return False
    key = toleration.get("key") or ""
    if key and key != (taint.get("key") or ""):
        return False
    op = toleration.get("operator") or "Equal"
    if op == "Exists":
        return True
    if op == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return False


def untolerated_taint(taints: Iterable[Mapping[str, Any]], tolerations: Sequence[Mapping[str, Any]],
                      effects: tuple[str, ...] = ("NoSchedule", "NoExecute")) -> Mapping[str, Any] | None:
    for taint in taints:
        if taint.get("effect") not in effects:
            continue
        if not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


# ---------------------------------------------------------------------- pre-digested pods and nodes


class NodeInfo:
    """What the filters and scores need from a Node, parsed once per node version."""

    __slots__ = ("alloc", "hard_taints", "images", "labels", "name", "node", "plain", "soft_taints",
                 "unschedulable")

    def __init__(self, node: Mapping[str, Any]) -> None:
        self.update(node)

    def update(self, node: Mapping[str, Any]) -> None:
        self.node = node
        meta = node.get("metadata") or {}
        spec = node.get("spec") or {}
        self.name = str(meta.get("name") or "")
        self.labels = meta.get("labels") or {}
        self.unschedulable = bool(spec.get("unschedulable"))
        taints = spec.get("taints") or []
        self.hard_taints = [t for t in taints if t.get("effect") in ("NoSchedule", "NoExecute")]
        self.soft_taints = [t for t in taints if t.get("effect") == "PreferNoSchedule"]
        self.alloc = Allocatable(node)
        self.plain = not self.unschedulable and not self.hard_taints  # nothing for a pod to tolerate
        # image name -> size (`status.images`, for ImageLocality)
        self.images: dict[str, int] = {}
        for image in ((node.get("status") or {}).get("images") or ()):
            if isinstance(image, Mapping):
                for image_name in image.get("names") or ():
                    self.images[str(image_name)] = int(image.get("sizeBytes") or 0)


class PodInfo:
    """What the fused core filters need from the pod being scheduled, computed once per cycle."""

    __slots__ = ("affinity", "node_name", "node_selector", "owner", "pod", "req", "req_zero",
                 "simple", "tolerates_unschedulable", "tolerations")

    def __init__(self, pod: Mapping[str, Any], req: PodRequests | None = None, owner: str = "") -> None:
        self.pod = pod
        spec = pod.get("spec") or {}
        self.req = req if req is not None else pod_requests(pod)
        self.req_zero = self.req.requests.is_zero()
        self.owner = owner
        self.tolerations = list(spec.get("tolerations") or [])
        self.tolerates_unschedulable = any(
            tolerates(t, {"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"}) for t in self.tolerations)
        self.node_name = spec.get("nodeName") or ""
        self.node_selector = list((spec.get("nodeSelector") or {}).items())
        node_affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
        self.affinity = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
        # On a node without taints only the pod count can reject such a pod.
        self.simple = self.req_zero and not self.node_name and not self.node_selector and self.affinity is None

    # -- filters ---------------------------------------------------------------------------

    def filter(self, ni: NodeInfo, usage: NodeUsage | None, dra_backed: Mapping[str, str]) -> Status | None:
        """The default filter plugins before DynamicResources, in order; the first rejection wins."""
        if ni.unschedulable and not self.tolerates_unschedulable:
            return Status(UNRESOLVABLE, [ERR_REASON_UNSCHEDULABLE], "NodeUnschedulable")
        if self.node_name and self.node_name != ni.name:
            return Status(UNRESOLVABLE, [ERR_REASON_NODE_NAME], "NodeName")
        if ni.hard_taints:
            tols = self.tolerations
            for taint in ni.hard_taints:
                if not any(tolerates(t, taint) for t in tols):
                    return Status(UNRESOLVABLE, [ERR_REASON_TAINT], "TaintToleration")
        if (self.node_selector or self.affinity is not None) and not self.affinity_matches(ni):
            return Status(UNRESOLVABLE, [ERR_REASON_AFFINITY], "NodeAffinity")
        alloc = ni.alloc
        if self.req_zero and (usage.pods if usage is not None else 0) < alloc.pods:
            return None
        reasons, unresolvable = fit_check(self.req.requests, alloc, usage, dra_backed)
        if reasons:
            return Status(UNRESOLVABLE if unresolvable else UNSCHEDULABLE, reasons, "NodeResourcesFit")
        return None

    def affinity_matches(self, ni: NodeInfo) -> bool:
        labels = ni.labels
        for k, v in self.node_selector:
            if labels.get(k) != v:
                return False
        if self.affinity is not None:
            try:
                return node_selector_matches(self.affinity, ni.node)
            except NodeSelectorError:
                return False
        return True

    # -- scores ----------------------------------------------------------------------------



def filter_node(pod: Mapping[str, Any], req: PodRequests, node: Mapping[str, Any], alloc: Allocatable,
                usage: NodeUsage | None, dra_backed: Mapping[str, str]) -> Status | None:
    """The default filter plugins before DynamicResources for one pod on one node."""
    ni = NodeInfo(node)
    ni.alloc = alloc
    return PodInfo(pod, req).filter(ni, usage, dra_backed)


def node_affinity_matches(pod: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """`nodeaffinity.GetRequiredNodeAffinity(pod).Match(node)`: nodeSelector and required terms."""
    return PodInfo(pod).affinity_matches(NodeInfo(node))


def fit_reasons(r: Resources, alloc: Allocatable, usage: NodeUsage | None,
                dra_backed: Mapping[str, str]) -> list[str]:
    """`fitsRequest`: every insufficient resource, "Too many pods" first."""
    return fit_check(r, alloc, usage, dra_backed)[0]


def is_extended_resource_name(name: str) -> bool:
    """`v1helper.IsExtendedResourceName`: a prefixed name outside `kubernetes.io/`, not a quota name."""
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")


def fit_check(r: Resources, alloc: Allocatable, usage: NodeUsage | None, dra_backed: Mapping[str, str], *,
              ignored: frozenset[str] = frozenset(), ignored_groups: frozenset[str] = frozenset()
              ) -> tuple[list[str], bool]:
    """`fitsRequest` with NodeResourcesFit's `ignoredResources` / `ignoredResourceGroups`: the
    reasons, and whether some request exceeds the node's whole allocatable (unresolvable)."""
    reasons: list[str] = []
    pods = usage.pods if usage is not None else 0
    if pods + 1 > alloc.pods:
        reasons.append(ERR_REASON_TOO_MANY_PODS)
    if r.is_zero():
        return reasons, False
    have = alloc.resources
    used = usage.requested if usage is not None else _ZERO
    unresolvable = False
    if r.cpu > 0 and r.cpu > have.cpu - used.cpu:
        reasons.append("Insufficient cpu")
        unresolvable |= r.cpu > have.cpu
    if r.memory > 0 and r.memory > have.memory - used.memory:
        reasons.append("Insufficient memory")
        unresolvable |= r.memory > have.memory
    if r.ephemeral > 0 and r.ephemeral > have.ephemeral - used.ephemeral:
        reasons.append("Insufficient ephemeral-storage")
        unresolvable |= r.ephemeral > have.ephemeral
    for name, q in r.scalar.items():
        if q == 0:
            continue
        if (ignored or ignored_groups) and is_extended_resource_name(name) and (
                name in ignored or name.split("/", 1)[0] in ignored_groups):
            continue
        if name in dra_backed and (name not in have.scalar or name in alloc.zero_scalar):
            continue  # left to the DynamicResources plugin (extended resource backed by DRA)
        cap = have.scalar.get(name, 0)
        if q > cap - used.scalar.get(name, 0):
            reasons.append(f"Insufficient {name}")
            unresolvable |= q > cap
    return reasons, unresolvable


_ZERO = Resources()


def requested_dra_extended(req: PodRequests, dra_backed: Mapping[str, str]) -> bool:
    return any(q and name in dra_backed and extended.is_dra_extended_resource_name(name)
               for name, q in req.requests.scalar.items())


# ---------------------------------------------------------------------- scores


def prioritized_list_score(claims: Sequence[Mapping[str, Any]], allocations: Sequence[Mapping[str, Any]]) -> int:
    """DynamicResources `computeScore`: for every request with subrequests, a higher score for an
    earlier chosen subrequest."""
    score = 0
    for claim, alloc in zip(claims, allocations, strict=False):
        chosen = {r.get("request") for r in ((alloc.get("devices") or {}).get("results") or [])
                  if "/" in str(r.get("request") or "")}
        if not chosen:
            continue
        for req in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []:
            for i, sub in enumerate(req.get("firstAvailable") or []):
                if f"{req.get('name')}/{sub.get('name')}" in chosen:
                    score += FIRST_AVAILABLE_MAX - i
    return score


def dynamic_resources_score(claims: Sequence[Mapping[str, Any]], allocations: Sequence[Mapping[str, Any]]) -> int:
    """DynamicResources `Score` (1.37, kubernetes#139017): `computeScore` over all of the pod's
    claims in order, an allocated claim with its own allocation, the others with the node's
    allocation results (`allocations`, in the order of the claims to allocate)."""
    paired_claims: list[Mapping[str, Any]] = []
    paired: list[Mapping[str, Any]] = []
    pending = iter(allocations)
    for claim in claims:
        alloc = (claim.get("status") or {}).get("allocation")
        if not isinstance(alloc, Mapping):
            alloc = next(pending, None)
            if alloc is None:
                break
        paired_claims.append(claim)
        paired.append(alloc)
    return prioritized_list_score(paired_claims, paired)


# ---------------------------------------------------------------------- reporting


def num_feasible_nodes_to_find(num_all_nodes: int, percentage: int = 0) -> int:
    """`numFeasibleNodesToFind` with the default adaptive `percentageOfNodesToScore`."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    if percentage <= 0:
        percentage = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    if percentage >= 100:
        return num_all_nodes
    return max(num_all_nodes * percentage // 100, MIN_FEASIBLE_NODES_TO_FIND)


def _histogram(reasons: Iterable[str]) -> str:
    counts: dict[str, int] = {}
    for r in reasons:
        counts[r] = counts.get(r, 0) + 1
    return ", ".join(sorted(f"{n} {r}" for r, n in counts.items()))


def fit_error(num_nodes: int, statuses: Mapping[str, Status], *, prefilter: Status | None = None,
              post_filter: str = "") -> str:
    """`FitError.Error()`: `0/N nodes are available: <PreFilterMsg>. <histogram>. <PostFilterMsg>`."""
    msg = f"0/{num_nodes} nodes are available:"
    if prefilter is not None:
        msg += f" {prefilter.message()}."
    else:
        hist = _histogram(r for st in statuses.values() for r in st.reasons)
        if hist:
            msg += f" {hist}."
    if post_filter:
        msg += f" {post_filter}"
    return msg


def preemption_message(pod: Mapping[str, Any], num_nodes: int, statuses: Mapping[str, Status],
                       prefilter: Status | None) -> str:
    """What DefaultPreemption's PostFilter reports when it finds nothing to preempt (this
    scheduler never preempts): nodes rejected as unresolvable are "not helpful", the others
    "no victims"."""
    if (pod.get("spec") or {}).get("preemptionPolicy") == "Never":
        return "preemption: not eligible due to preemptionPolicy=Never."
    if prefilter is not None:
        reasons = [PREEMPTION_NO_VICTIMS if prefilter.resolvable else PREEMPTION_NOT_HELPFUL] * num_nodes
    else:
        reasons = [PREEMPTION_NO_VICTIMS if st.resolvable else PREEMPTION_NOT_HELPFUL for st in statuses.values()]
        reasons += [PREEMPTION_NOT_HELPFUL] * max(num_nodes - len(statuses), 0)
    return f"preemption: 0/{num_nodes} nodes are available: {_histogram(reasons)}."
