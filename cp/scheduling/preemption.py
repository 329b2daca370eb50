"""DefaultPreemption (PostFilter), as kube-scheduler 1.37 runs it (pure; no I/O).

When no node fits a pod, the plugin looks for nodes where evicting pods of lower priority would let
it in, and picks one:

1. **Eligibility** (`eligible_to_preempt`): not with `preemptionPolicy: Never`; not while a pod of
   lower priority on the pod's nominated node is still terminating because an earlier preemption
   deleted it (unless that node is now unresolvable for the pod).
2. **Nodes to try** (`potential_nodes`): only those whose filter status was `Unschedulable`; nodes
   rejected as `UnschedulableAndUnresolvable` (taints, affinity, node name, DRA's "cannot allocate
   all claims", ...) are "not helpful".
3. **Dry run** (`dry_run`): from a random offset, each node in turn — on a copy of the node's pods
   and of the cycle state — `select_victims_on_node` removes every pod of lower priority, runs the
   filters (with the nominated pods of equal or higher priority counted), and then reprieves as many
   pods as possible, the most important first, those whose eviction would violate a
   PodDisruptionBudget before the others. It stops once `num_candidates` (10% of the nodes, at least
   100: `minCandidateNodesPercentage` / `minCandidateNodesAbsolute`) candidates are found with at
   least one not violating a budget.
4. **Choice** (`pick_one_node`): fewest budget violations, then the lowest highest-victim priority,
   the smallest sum of (shifted) priorities, the fewest victims, the latest start time of the
   highest-priority victims, and finally the first candidate.

`preempt` chains them and returns the outcome with upstream's message
(`preemption: 0/N nodes are available: ...`). The caller then prepares the victims (DisruptionTarget
condition, graceful deletion) and nominates the node.

The filters of a dry run (`Filters`) are the fused core filters (`plugins.PodInfo.filter`), the
profile's active framework filters with their AddPod/RemovePod extensions, and a fixed per-node
verdict for DynamicResources: in 1.37 that plugin has no PreFilter extensions (AddPod/RemovePod;
KEP-5690 "DRA Preemption" was deferred to 1.38), so removing a victim never frees the devices of
its claims and the plugin's verdict on a node does not change during a dry run.
"""

from __future__ import annotations

import copy
import datetime
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from cp import selectors
from cp.scheduling import framework, plugins

__all__ = [
    "PDB",
    "Args",
    "Candidate",
    "Filters",
    "Result",
    "Victims",
    "dry_run",
    "eligible_to_preempt",
    "filter_pods_with_pdb_violation",
    "num_candidates",
    "pick_one_node",
    "potential_nodes",
    "preempt",
    "select_victims_on_node",
    "terminating_by_preemption",
]

PLUGIN = "DefaultPreemption"
MIN_CANDIDATE_NODES_PERCENTAGE = 10  # DefaultPreemptionArgs defaults
MIN_CANDIDATE_NODES_ABSOLUTE = 100
PREEMPT_NEVER = "Never"
DISRUPTION_TARGET = "DisruptionTarget"
REASON_PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"
NO_VICTIMS = plugins.PREEMPTION_NO_VICTIMS
NOT_HELPFUL = plugins.PREEMPTION_NOT_HELPFUL
NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."
_INT32_SHIFT = 2 ** 31  # math.MaxInt32 + 1: keeps every shifted priority >= 0


class Args:
    """`DefaultPreemptionArgs` (validated as `ValidateDefaultPreemptionArgs`)."""

    __slots__ = ("min_candidate_nodes_absolute", "min_candidate_nodes_percentage")

    def __init__(self, *, min_candidate_nodes_percentage: int = MIN_CANDIDATE_NODES_PERCENTAGE,
                 min_candidate_nodes_absolute: int = MIN_CANDIDATE_NODES_ABSOLUTE) -> None:
        if not 0 <= min_candidate_nodes_percentage <= 100:
            raise ValueError("minCandidateNodesPercentage: Invalid value: not in valid range [0, 100]")
        if min_candidate_nodes_absolute < 0:
            raise ValueError("minCandidateNodesAbsolute: Invalid value: not in valid range [0, inf)")
        if min_candidate_nodes_percentage == 0 and min_candidate_nodes_absolute == 0:
            raise ValueError("minCandidateNodesPercentage and minCandidateNodesAbsolute cannot both be zero")
        self.min_candidate_nodes_percentage = min_candidate_nodes_percentage
        self.min_candidate_nodes_absolute = min_candidate_nodes_absolute

    @classmethod
    def of(cls, args: Mapping[str, Any]) -> Args:
        return cls(min_candidate_nodes_percentage=int(args.get("minCandidateNodesPercentage",
                                                               MIN_CANDIDATE_NODES_PERCENTAGE)),
                   min_candidate_nodes_absolute=int(args.get("minCandidateNodesAbsolute",
                                                             MIN_CANDIDATE_NODES_ABSOLUTE)))


DEFAULT_ARGS = Args()


# ---------------------------------------------------------------------- pods


def priority_of(pod: Mapping[str, Any]) -> int:
    """`corev1helpers.PodPriority`: spec.priority, 0 when unset."""
    return int((pod.get("spec") or {}).get("priority") or 0)


def start_time(pod: Mapping[str, Any], now: float) -> float:
    """`GetPodStartTime`: status.startTime, or now for a pod that has not started."""
    raw = (pod.get("status") or {}).get("startTime")
    if isinstance(raw, str) and raw:
        try:
            return datetime.datetime.fromisoformat(raw.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return now
    if isinstance(raw, (int, float)):
        return float(raw)
    return now


def importance(pod: framework.PodInfo, now: float) -> tuple[int, float]:
    """A sort key putting the more important pod first (`util.MoreImportantPod`: higher priority,
    then the one that started earlier)."""
    return (-pod.priority, start_time(pod.pod, now))


def terminating_by_preemption(pod: Mapping[str, Any]) -> bool:
    """`podTerminatingByPreemption`: being deleted, with DisruptionTarget=True from the scheduler."""
    if not (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if isinstance(cond, Mapping) and cond.get("type") == DISRUPTION_TARGET:
            return cond.get("status") == "True" and cond.get("reason") == REASON_PREEMPTION_BY_SCHEDULER
    return False


def eligible_to_preempt(pod: Mapping[str, Any], *, nominated_status: plugins.Status | None,
                        nominated_node: framework.NodeState | None) -> tuple[bool, str]:
    """`PodEligibleToPreemptOthers`: (eligible, why not). `nominated_status`: the filter verdict on
    the pod's nominated node in this cycle; `nominated_node`: that node, if it exists."""
    spec = pod.get("spec") or {}
    if spec.get("preemptionPolicy") == PREEMPT_NEVER:
        return False, NOT_ELIGIBLE_NEVER
    if (pod.get("status") or {}).get("nominatedNodeName"):
        if nominated_status is not None and nominated_status.code == plugins.UNRESOLVABLE:
            return True, ""
        if nominated_node is not None:
            prio = priority_of(pod)
            for other in nominated_node.pods:
                if other.priority < prio and terminating_by_preemption(other.pod):
                    return False, NOT_ELIGIBLE_TERMINATING
    return True, ""


# ---------------------------------------------------------------------- budgets


class PDB:
    """What preemption reads from a PodDisruptionBudget (policy/v1)."""

    __slots__ = ("disrupted", "disruptions_allowed", "name", "namespace", "selector")

    def __init__(self, obj: Mapping[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        self.name = str(meta.get("name") or "")
        self.namespace = str(meta.get("namespace") or "")
        status = obj.get("status") or {}
        self.disruptions_allowed = int(status.get("disruptionsAllowed") or 0)
        self.disrupted = set((status.get("disruptedPods") or {}).keys())
        sel = (obj.get("spec") or {}).get("selector")
        self.selector: selectors.LabelSelector | None
        if not sel or not (sel.get("matchLabels") or sel.get("matchExpressions")):
            self.selector = None  # a nil or empty selector matches nothing here
        else:
            try:
                self.selector = selectors.from_label_selector_object(sel)
            except Exception:  # an invalid selector matches no pod
                self.selector = None

    def matches(self, pod: framework.PodInfo) -> bool:
        return self.namespace == pod.namespace and self.selector is not None and self.selector.matches(pod.labels)


def filter_pods_with_pdb_violation(pods: Sequence[framework.PodInfo], pdbs: Sequence[PDB]
                                   ) -> tuple[list[framework.PodInfo], list[framework.PodInfo]]:
    """`filterPodsWithPDBViolation`: (violating, non-violating), order kept. Each pod matched by a
    budget uses one of its allowed disruptions unless it is already in `disruptedPods`."""
    allowed = [p.disruptions_allowed for p in pdbs]
    violating: list[framework.PodInfo] = []
    others: list[framework.PodInfo] = []
    for pod in pods:
        violated = False
        if pod.labels:
            for i, pdb in enumerate(pdbs):
                if not pdb.matches(pod) or pod.name in pdb.disrupted:
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
        (violating if violated else others).append(pod)
    return violating, others


# ---------------------------------------------------------------------- filters


class Filters:
    """`RunFilterPluginsWithNominatedPods` for one pod: the fused core filters, the profile's active
    framework filters (AddPod/RemovePod on `extensions`, the PreFilter plugins not skipped) and, last,
    a fixed per-node verdict (`final`, DynamicResources). `nominated(node)`: the pods nominated to a
    node (all priorities; those of lower priority, and the pod itself, are left out here)."""

    def __init__(self, *, info: plugins.PodInfo, pod: framework.PodInfo, active: Sequence[framework.Plugin] = (),
                 extensions: Sequence[framework.Plugin] = (), ext_mapping: Mapping[str, str] | None = None,
                 final: Callable[[framework.NodeState], plugins.Status | None] | None = None,
                 nominated: Callable[[str], Iterable[framework.PodInfo]] | None = None, fused: bool = True) -> None:
        self.info = info
        self.fused = fused  # False: the core filters are among `active` (a profile with non-default core plugins)
        self.pod = pod
        self.active = list(active)
        self.extensions = list(extensions)
        self.ext_mapping = ext_mapping or {}
        self.final = final
        self.nominated = nominated

    def core(self, state: framework.CycleState, node: framework.NodeState) -> plugins.Status | None:
        """The fused core filters, then the active framework filters; the first rejection wins."""
        status = self.info.filter(node.info, node.usage, self.ext_mapping) if self.fused else None
        if status is None and self.active:
            status = framework.Profile.run_filters(self.active, state, self.pod, node)
        return status

    def add_pod(self, state: framework.CycleState, other: framework.PodInfo, node: framework.NodeState) -> None:
        node.usage.add(other.req, other.owner, other)
        for p in self.extensions:
            p.add_pod(state, self.pod, other, node)

    def remove_pod(self, state: framework.CycleState, other: framework.PodInfo, node: framework.NodeState) -> None:
        node.usage.remove(other.req, other.owner, other)
        for p in self.extensions:
            p.remove_pod(state, self.pod, other, node)

    def nominated_on(self, node: str) -> list[framework.PodInfo]:
        """`addGENominatedPods`: the other pods nominated to `node` with equal or higher priority."""
        if self.nominated is None:
            return []
        prio, uid = self.pod.priority, self.pod.uid
        return [p for p in self.nominated(node) if p.priority >= prio and p.uid != uid]

    def with_nominated(self, state: framework.CycleState, node: framework.NodeState
                       ) -> tuple[framework.CycleState, framework.NodeState, bool]:
        """A copy of state and node with the nominated pods added (and whether any were)."""
        pods = self.nominated_on(node.name)
        if not pods:
            return state, node, False
        node_out = copy_node(node)
        state_out = state.clone()
        for p in pods:
            self.add_pod(state_out, p, node_out)
        return state_out, node_out, True

    def run(self, state: framework.CycleState, node: framework.NodeState) -> plugins.Status | None:
        """Both passes: with the nominated pods counted, then (if that fits and some were added)
        without them; the fixed verdict after the first pass's filters."""
        state1, node1, added = self.with_nominated(state, node)
        status = self.core(state1, node1)
        if status is None and self.final is not None:
            status = self.final(node)
        if status is None and added:
            status = self.core(state, node)
        return status


def copy_node(node: framework.NodeState) -> framework.NodeState:
    """`NodeInfo.Snapshot()`: the same node with a copy of what its pods use."""
    out = copy.copy(node)
    out.usage = node.usage.copy()
    return out


# ---------------------------------------------------------------------- victims on one node


class Victims:
    """`extenderv1.Victims`: the pods to evict (most important first) and how many violate a budget."""

    __slots__ = ("num_pdb_violations", "pods")

    def __init__(self, pods: list[framework.PodInfo], num_pdb_violations: int = 0) -> None:
        self.pods = pods
        self.num_pdb_violations = num_pdb_violations

    def __repr__(self) -> str:
        return f"Victims({[p.name for p in self.pods]}, pdb_violations={self.num_pdb_violations})"


class Candidate:
    __slots__ = ("name", "victims")

    def __init__(self, name: str, victims: Victims) -> None:
        self.name = name
        self.victims = victims

    def __repr__(self) -> str:
        return f"Candidate({self.name}, {self.victims!r})"


def select_victims_on_node(*, state: framework.CycleState, node: framework.NodeState, filters: Filters,
                           pdbs: Sequence[PDB], now: float
                           ) -> tuple[list[framework.PodInfo], int, plugins.Status | None]:
    """`SelectVictimsOnNode` on a copy of the node and state (both are changed): (victims, number
    violating a budget, None) or ([], 0, why not)."""
    prio = filters.pod.priority
    potential = [p for p in list(node.pods) if p.priority < prio]
    for p in potential:
        filters.remove_pod(state, p, node)
    if not potential:
        return [], 0, plugins.Status(plugins.UNRESOLVABLE, [NO_VICTIMS])
    status = filters.run(state, node)
    if status is not None:
        return [], 0, status
    potential.sort(key=lambda p: importance(p, now))
    violating, non_violating = filter_pods_with_pdb_violation(potential, pdbs)
    victims: list[framework.PodInfo] = []

    def reprieve(p: framework.PodInfo) -> bool:
        filters.add_pod(state, p, node)
        fits = filters.run(state, node) is None
        if not fits:
            filters.remove_pod(state, p, node)
            victims.append(p)
        return fits

    num_violating = 0
    for p in violating:
        if not reprieve(p):
            num_violating += 1
    for p in non_violating:
        reprieve(p)
    if violating and non_violating:
        victims.sort(key=lambda p: importance(p, now))
    return victims, num_violating, None


# ---------------------------------------------------------------------- candidates


def potential_nodes(nodes: Sequence[framework.NodeState], statuses: Mapping[str, plugins.Status],
                    absent: plugins.Status) -> list[framework.NodeState]:
    """`NodesForStatusCode(Unschedulable)`: the nodes whose filter status was Unschedulable (a node
    without one has `absent`)."""
    return [n for n in nodes if statuses.get(n.name, absent).code == plugins.UNSCHEDULABLE]


def num_candidates(num_nodes: int, args: Args = DEFAULT_ARGS) -> int:
    """`calculateNumCandidates`."""
    n = num_nodes * args.min_candidate_nodes_percentage // 100
    n = max(n, args.min_candidate_nodes_absolute)
    return min(n, num_nodes)


def dry_run(*, state: framework.CycleState, nodes: Sequence[framework.NodeState], filters: Filters,
            pdbs: Sequence[PDB], offset: int, candidates: int, now: float
            ) -> tuple[list[Candidate], dict[str, plugins.Status]]:
    """`DryRunPreemption`, one node after the other from `offset`: the candidates (those violating no
    budget first) and the status of every node tried that is not one."""
    non_violating: list[Candidate] = []
    violating: list[Candidate] = []
    statuses: dict[str, plugins.Status] = {}
    n = len(nodes)
    for i in range(n):
        node = nodes[(offset + i) % n]
        pods, num_violations, status = select_victims_on_node(
            state=state.clone(), node=copy_node(node), filters=filters, pdbs=pdbs, now=now)
        if status is None and pods:
            bucket = non_violating if num_violations == 0 else violating
            if len(bucket) < candidates:
                bucket.append(Candidate(node.name, Victims(pods, num_violations)))
            if non_violating and len(non_violating) + len(violating) >= candidates:
                break
            continue
        if status is None:
            status = plugins.Status(framework.ERROR, [f'expected at least one victim pod on node "{node.name}"'])
        statuses[node.name] = status
    return non_violating + violating, statuses


def _earliest_start_of_highest(victims: Victims, now: float) -> float:
    """`GetEarliestPodStartTime`: the earliest start among the victims of the highest priority."""
    first = victims.pods[0]
    best_prio, earliest = first.priority, start_time(first.pod, now)
    for p in victims.pods:
        if p.priority == best_prio:
            earliest = min(earliest, start_time(p.pod, now))
        elif p.priority > best_prio:
            best_prio, earliest = p.priority, start_time(p.pod, now)
    return earliest


def pick_one_node(candidates: Sequence[Candidate], now: float) -> str:
    """`pickOneNodeForPreemption` with the default score functions, ties kept in candidate order."""
    if not candidates:
        return ""
    score_funcs: list[Callable[[Candidate], float]] = [
        lambda c: -c.victims.num_pdb_violations,
        lambda c: -c.victims.pods[0].priority,
        lambda c: -sum(p.priority + _INT32_SHIFT for p in c.victims.pods),
        lambda c: -len(c.victims.pods),
        lambda c: _earliest_start_of_highest(c.victims, now),
    ]
    remaining = list(candidates)
    for f in score_funcs:
        scores = [f(c) for c in remaining]
        top = max(scores)
        remaining = [c for c, s in zip(remaining, scores, strict=True) if s == top]
        if len(remaining) == 1:
            break
    return remaining[0].name


def select_candidate(candidates: Sequence[Candidate], now: float) -> Candidate | None:
    """`SelectCandidate`."""
    if not candidates:
        return None
    if len(candidates) == 1:
        return candidates[0]
    name = pick_one_node(candidates, now)
    return next((c for c in candidates if c.name == name), candidates[0])


# ---------------------------------------------------------------------- the whole PostFilter


class Result:
    """What PostFilter decided. `nominate`: the node to nominate, "" to clear the pod's nomination,
    None to leave it; `status`: Success, Unschedulable or Error with `message` (already prefixed with
    "preemption: ", empty on success); `candidate`: the node and victims to prepare."""

    __slots__ = ("candidate", "code", "message", "nominate", "statuses")

    def __init__(self, *, code: str, message: str = "", nominate: str | None = None,
                 candidate: Candidate | None = None, statuses: Mapping[str, plugins.Status] | None = None) -> None:
        self.code = code
        self.message = message
        self.nominate = nominate
        self.candidate = candidate
        self.statuses = dict(statuses or {})

    @property
    def success(self) -> bool:
        return self.code == framework.SUCCESS

    def __repr__(self) -> str:
        return f"Result({self.code}, {self.message!r}, nominate={self.nominate!r}, candidate={self.candidate!r})"


def _fit_error(num_nodes: int, statuses: Mapping[str, plugins.Status], absent: str) -> str:
    reasons = [r for st in statuses.values() for r in st.reasons]
    reasons += [absent] * max(num_nodes - len(statuses), 0)
    return plugins.fit_error(num_nodes, {"": plugins.Status(plugins.UNSCHEDULABLE, reasons)})


def preempt(*, pod: Mapping[str, Any], state: framework.CycleState, nodes: Sequence[framework.NodeState],
            statuses: Mapping[str, plugins.Status], absent: plugins.Status, filters: Filters,
            pdbs: Sequence[PDB], rng: random.Random, now: float, args: Args = DEFAULT_ARGS) -> Result:
    """`Evaluator.Preempt` for `pod` (the informer's current copy): eligibility, candidates from the
    nodes rejected as Unschedulable (`statuses`, `absent` for the others), dry runs, the choice."""
    nnn = str((pod.get("status") or {}).get("nominatedNodeName") or "")
    by_name = {n.name: n for n in nodes}
    ok, why = eligible_to_preempt(pod, nominated_status=statuses.get(nnn, absent) if nnn else None,
                                  nominated_node=by_name.get(nnn) if nnn else None)
    if not ok:
        return Result(code=plugins.UNSCHEDULABLE, message=f"preemption: {why}")
    if not nodes:
        return Result(code=framework.ERROR, message="preemption: no nodes available")
    potential = potential_nodes(nodes, statuses, absent)
    found: list[Candidate] = []
    tried: dict[str, plugins.Status] = {}
    if potential:
        offset = rng.randrange(len(potential))
        found, tried = dry_run(state=state, nodes=potential, filters=filters, pdbs=pdbs, offset=offset,
                               candidates=num_candidates(len(potential), args), now=now)
        errs = [st.message() for st in tried.values() if st.code == framework.ERROR]
        if errs and not found:
            text = errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]"
            return Result(code=framework.ERROR, message=f"preemption: {text}")
    if not found:
        return Result(code=plugins.UNSCHEDULABLE, nominate="", statuses=tried,
                      message="preemption: " + _fit_error(len(nodes), tried, NOT_HELPFUL))
    best = select_candidate(found, now)
    assert best is not None
    return Result(code=framework.SUCCESS, nominate=best.name, candidate=best)
