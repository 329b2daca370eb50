"""PodTopologySpread (pure): `topologySpreadConstraints` as a filter (`DoNotSchedule`) and a score
(`ScheduleAnyway`), following kube-scheduler's `pkg/scheduler/framework/plugins/podtopologyspread`.

A constraint counts the pods of the incoming pod's namespace matching its `labelSelector` (merged
with the pod's values of `matchLabelKeys`; terminating pods left out) per domain — a value of the
node label `topologyKey` — over the nodes that carry every constraint's key and pass the inclusion
policies (`nodeAffinityPolicy` Honor by default: the pod's nodeSelector / required node affinity;
`nodeTaintsPolicy` Ignore by default, Honor: untolerated NoSchedule/NoExecute taints exclude a node).

**Filter**: on a node of domain d, `count(d) + (1 if the pod matches the selector) - global minimum`
must not exceed `maxSkew`; the global minimum is 0 while fewer domains than `minDomains` exist.
Reasons: "node(s) didn't match pod topology spread constraints" (resolvable) and "... (missing
required label)" (unresolvable).

**Score**: per constraint, `count * log(domains + 2) + maxSkew - 1` (hostname constraints count the
node's own pods), summed and rounded; normalized so the fewest matching pods score 100. Nodes lacking
a key score 0.

**Default constraints**: a pod without constraints gets the cluster defaults — with
`defaultingType: System` (the default) hostname maxSkew 3 and zone maxSkew 5, both ScheduleAnyway —
with the selector of the Services, ReplicationController, ReplicaSet or StatefulSet selecting it
(`helper.DefaultSelector`, computed by the `default_selector` callable the plugin is given; see
`default_selector()` for the pure rule). A pod selected by nothing has no constraints, and the
plugin is skipped for it (PreFilter and PreScore return `Skip`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar

from cp import selectors
from cp.errors import BadRequest
from cp.scheduling import framework, plugins, profiles

__all__ = ["ERR_REASON_CONSTRAINTS_NOT_MATCH", "ERR_REASON_NODE_LABEL_NOT_MATCH", "NAME", "SYSTEM_DEFAULT_CONSTRAINTS",
           "Constraint", "DefaultSelector", "PodTopologySpread", "default_selector"]

NAME = "PodTopologySpread"
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"
MAX_INT32 = 2**31 - 1

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

SYSTEM_DEFAULT_CONSTRAINTS: tuple[Mapping[str, Any], ...] = (
    {"topologyKey": HOSTNAME, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 3},
    {"topologyKey": ZONE, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 5},
)

_PRE_FILTER_KEY = "PreFilter" + NAME
_PRE_SCORE_KEY = "PreScore" + NAME

# The selector of the workloads and Services selecting a pod (empty: none does).
DefaultSelector = Callable[[framework.PodInfo], selectors.LabelSelector]


class ArgsError(ValueError):
    """Invalid PodTopologySpreadArgs (upstream's validation message)."""


class Constraint:
    """`topologySpreadConstraint`: a constraint with its selector parsed and policies defaulted."""

    __slots__ = ("max_skew", "min_domains", "node_affinity_policy", "node_taints_policy", "selector", "topology_key")

    def __init__(self, *, max_skew: int, topology_key: str, selector: selectors.LabelSelector, min_domains: int = 1,
                 node_affinity_policy: str = HONOR, node_taints_policy: str = IGNORE) -> None:
        self.max_skew = max_skew
        self.topology_key = topology_key
        self.selector = selector
        self.min_domains = min_domains
        self.node_affinity_policy = node_affinity_policy
        self.node_taints_policy = node_taints_policy

    def includes(self, node: framework.NodeState, affinity: plugins.PodInfo) -> bool:
        """`matchNodeInclusionPolicies`."""
        if self.node_affinity_policy == HONOR and not affinity.affinity_matches(node.info):
            return False
        return not (self.node_taints_policy == HONOR and node.info.hard_taints
                    and plugins.untolerated_taint(node.info.hard_taints, affinity.tolerations) is not None)

    def __repr__(self) -> str:
        return (f"Constraint({self.topology_key}, maxSkew={self.max_skew}, selector={self.selector!r}, "
                f"minDomains={self.min_domains})")


def _merge_label_set(match_labels: Mapping[str, str], sel: selectors.LabelSelector) -> selectors.LabelSelector:
    """`mergeLabelSetWithSelector` (a nothing-selector stays nothing)."""
    if sel.matches_nothing:
        return sel
    reqs = [selectors.Requirement(key=k, operator=selectors.OP_EQUALS, values=(v,)) for k, v in match_labels.items()]
    return selectors.LabelSelector([*reqs, *sel.requirements])


def parse_constraints(items: Iterable[Mapping[str, Any]], *, labels: Mapping[str, str], action: str
                      ) -> list[Constraint]:
    """`filterTopologySpreadConstraints`: the constraints with `whenUnsatisfiable: action`.
    Raises `BadRequest` for a selector the API would have rejected."""
    out: list[Constraint] = []
    for c in items:
        if not isinstance(c, Mapping) or c.get("whenUnsatisfiable") != action:
            continue
        sel = selectors.from_label_selector_object(c.get("labelSelector"))
        keys = c.get("matchLabelKeys") or ()
        if keys:
            match = {k: labels[k] for k in keys if k in labels}
            if match:
                sel = _merge_label_set(match, sel)
        min_domains = c.get("minDomains")
        out.append(Constraint(max_skew=int(c.get("maxSkew") or 0), topology_key=str(c.get("topologyKey") or ""),
                              selector=sel, min_domains=int(min_domains) if min_domains is not None else 1,
                              node_affinity_policy=str(c.get("nodeAffinityPolicy") or HONOR),
                              node_taints_policy=str(c.get("nodeTaintsPolicy") or IGNORE)))
    return out


def default_selector(pod: Mapping[str, Any], *, services: Iterable[Mapping[str, Any]],
                     lookup: Callable[[str, str, str], Mapping[str, Any] | None]) -> selectors.LabelSelector:
    """`helper.DefaultSelector`: the union of the selectors of the pod's namespace's Services that
    select it, and of its controller when that is a ReplicationController, ReplicaSet or StatefulSet
    (`lookup(kind, namespace, name)` returns it, or None). Empty when nothing selects the pod."""
    meta = pod.get("metadata") or {}
    ns = str(meta.get("namespace") or "")
    labels: Mapping[str, str] = meta.get("labels") or {}
    label_set: dict[str, str] = {}
    for svc in services:
        if str((svc.get("metadata") or {}).get("namespace") or "") != ns:
            continue
        sel = (svc.get("spec") or {}).get("selector")
        if not sel:
            continue  # services with nil selectors match nothing, not everything
        if all(labels.get(k) == v for k, v in sel.items()):
            label_set.update(sel)
    selector = _from_set(label_set)
    owner = next((r for r in meta.get("ownerReferences") or ()
                  if isinstance(r, Mapping) and r.get("controller")), None)
    if owner is None:
        return selector
    api_version, kind, name = str(owner.get("apiVersion") or ""), str(owner.get("kind") or ""), str(owner.get("name") or "")
    if (api_version, kind) == ("v1", "ReplicationController"):
        rc = lookup(kind, ns, name)
        if rc is not None:
            label_set.update((rc.get("spec") or {}).get("selector") or {})
            selector = _from_set(label_set)
    elif (api_version, kind) in (("apps/v1", "ReplicaSet"), ("apps/v1", "StatefulSet")):
        obj = lookup(kind, ns, name)
        if obj is not None:
            try:
                other = selectors.from_label_selector_object((obj.get("spec") or {}).get("selector"))
            except BadRequest:
                return selector
            if not other.matches_nothing:
                selector = selectors.LabelSelector([*selector.requirements, *other.requirements])
    return selector


def _from_set(label_set: Mapping[str, str]) -> selectors.LabelSelector:
    return selectors.LabelSelector([selectors.Requirement(key=k, operator=selectors.OP_EQUALS, values=(v,))
                                    for k, v in label_set.items()])


def _count_matching(pods: Iterable[framework.PodInfo], sel: selectors.LabelSelector, namespace: str) -> int:
    """`countPodsMatchSelector`: pods of the namespace matching, terminating ones left out."""
    if sel.empty:
        return 0
    n = 0
    for p in pods:
        if p.namespace != namespace or (p.pod.get("metadata") or {}).get("deletionTimestamp"):
            continue
        if sel.matches(p.labels):
            n += 1
    return n


def _has_keys(labels: Mapping[str, str], constraints: Sequence[Constraint]) -> bool:
    """`nodeLabelsMatchSpreadConstraints`."""
    return all(c.topology_key in labels for c in constraints)


class _FilterState:
    __slots__ = ("affinity", "constraints", "counts", "min_match")

    def __init__(self, constraints: list[Constraint], counts: list[dict[str, int]], affinity: plugins.PodInfo
                 ) -> None:
        self.constraints = constraints
        self.counts = counts  # per constraint: domain -> matching pods
        self.affinity = affinity
        self.min_match = [min(c.values(), default=MAX_INT32) for c in counts]

    def clone(self) -> _FilterState:
        return _FilterState(self.constraints, [dict(c) for c in self.counts], self.affinity)

    def update_with_pod(self, pod: framework.PodInfo, other: framework.PodInfo, node: framework.NodeState,
                        delta: int) -> None:
        if other.namespace != pod.namespace or not _has_keys(node.labels, self.constraints):
            return
        for i, c in enumerate(self.constraints):
            if not c.selector.matches(other.labels) or not c.includes(node, self.affinity):
                continue
            value = node.labels[c.topology_key]
            counts = self.counts[i]
            counts[value] = counts.get(value, 0) + delta
            self.min_match[i] = min(counts.values())


class _ScoreState:
    __slots__ = ("constraints", "counts", "ignored", "weights")

    def __init__(self, constraints: list[Constraint], counts: list[dict[str, int]], ignored: set[str],
                 weights: list[float]) -> None:
        self.constraints = constraints
        self.counts = counts
        self.ignored = ignored
        self.weights = weights


class PodTopologySpread(framework.Plugin):
    name: ClassVar[str] = NAME
    points: ClassVar[frozenset[str]] = frozenset(
        {"PreFilter", "Filter", "AddPod", "RemovePod", "PreScore", "Score", "NormalizeScore"})
    # The cluster events that may make a pod this plugin rejected schedulable (EventsToRegister).
    events: ClassVar[tuple[str, ...]] = ("Pod/Add", "Pod/UpdatePodLabel", "Pod/UpdatePodToleration", "Pod/Delete",
                                         "Node/Add", "Node/Delete", "Node/UpdateNodeLabel", "Node/UpdateNodeTaint")

    def __init__(self, args: Mapping[str, Any] | None = None, *, default_selector: DefaultSelector | None = None
                 ) -> None:
        args = args or {}
        defaulting = args.get("defaultingType") or "System"
        defaults = args.get("defaultConstraints") or []
        if defaulting not in ("System", "List"):
            raise ArgsError(f'defaultingType: Unsupported value: "{defaulting}": supported values: "List", "System"')
        if defaulting == "System" and defaults:
            raise ArgsError("defaultingType: Invalid value: \"System\": when .defaultConstraints are not empty")
        for i, c in enumerate(defaults):
            if not isinstance(c, Mapping):
                raise ArgsError(f"defaultConstraints[{i}]: Invalid value: must be an object")
            if c.get("labelSelector") is not None:
                raise ArgsError(f"defaultConstraints[{i}].labelSelector: Forbidden: constraint must not define a "
                                "selector, as they deduced for each pod")
        self.system_defaulted = defaulting == "System"
        self.default_constraints: Sequence[Mapping[str, Any]] = SYSTEM_DEFAULT_CONSTRAINTS if self.system_defaulted \
            else list(defaults)
        self.default_selector = default_selector

    def use_default_selector(self, fn: DefaultSelector | None) -> None:
        """Give the plugin the callable that finds a pod's default selector (the scheduler's listers)."""
        self.default_selector = fn

    # -- constraints -----------------------------------------------------------------------------

    def constraints(self, pod: framework.PodInfo, action: str) -> list[Constraint]:
        """`getConstraints` / `initPreScoreState`: the pod's constraints for `action`, else the
        default constraints with the pod's default selector."""
        spec = pod.pod.get("spec") or {}
        own = spec.get("topologySpreadConstraints")
        if own:
            return parse_constraints(own, labels=pod.labels, action=action)
        if not self.default_constraints or self.default_selector is None:
            return []
        out = parse_constraints(self.default_constraints, labels=pod.labels, action=action)
        if not out:
            return out
        sel = self.default_selector(pod)
        if sel.empty:
            return []
        for c in out:
            c.selector = sel
        return out

    # -- PreFilter / Filter ----------------------------------------------------------------------

    def pre_filter(self, state: framework.CycleState, pod: framework.PodInfo, snapshot: framework.Snapshot
                   ) -> framework.Status | None:
        state[framework.SNAPSHOT_KEY] = snapshot
        try:
            constraints = self.constraints(pod, DO_NOT_SCHEDULE)
        except BadRequest as exc:
            return framework.Status(framework.ERROR, [f"get constraints from pod: {exc}"])
        if not constraints:
            return framework.SKIPPED
        affinity = plugins.PodInfo(pod.pod)
        counts: list[dict[str, int]] = [{} for _ in constraints]
        ns = pod.namespace
        keys = [(NAME, str(c.selector), c.selector.empty, ns) for c in constraints]
        for node in snapshot.nodes:
            labels = node.labels
            if not _has_keys(labels, constraints):
                continue
            usage = node.usage
            for i, c in enumerate(constraints):
                if not c.includes(node, affinity):
                    continue
                value = labels[c.topology_key]
                # the count per node is kept with the node's pods until they change
                hit = usage.memo.get(keys[i])
                if hit is not None and hit[0] == usage.version:
                    n = hit[1]
                else:
                    n = _count_matching(node.pods, c.selector, ns)
                    usage.memo[keys[i]] = (usage.version, n)
                counts[i][value] = counts[i].get(value, 0) + n
        state[_PRE_FILTER_KEY] = _FilterState(constraints, counts, affinity)
        return None

    def add_pod(self, state: framework.CycleState, pod: framework.PodInfo, other: framework.PodInfo,
                node: framework.NodeState) -> None:
        s = state.get(_PRE_FILTER_KEY)
        if isinstance(s, _FilterState):
            s.update_with_pod(pod, other, node, 1)

    def remove_pod(self, state: framework.CycleState, pod: framework.PodInfo, other: framework.PodInfo,
                   node: framework.NodeState) -> None:
        s = state.get(_PRE_FILTER_KEY)
        if isinstance(s, _FilterState):
            s.update_with_pod(pod, other, node, -1)

    def filter(self, state: framework.CycleState, pod: framework.PodInfo, node: framework.NodeState
               ) -> framework.Status | None:
        s = state.get(_PRE_FILTER_KEY)
        if not isinstance(s, _FilterState):
            return framework.Status(framework.ERROR, [f'reading "{_PRE_FILTER_KEY}" from cycleState: not found'])
        labels = node.labels
        for i, c in enumerate(s.constraints):
            value = labels.get(c.topology_key)
            if value is None:
                return framework.Status(framework.UNRESOLVABLE, [ERR_REASON_NODE_LABEL_NOT_MATCH])
            counts = s.counts[i]
            min_match = 0 if len(counts) < c.min_domains else s.min_match[i]
            self_match = 1 if c.selector.matches(pod.labels) else 0
            if counts.get(value, 0) + self_match - min_match > c.max_skew:
                return framework.Status(framework.UNSCHEDULABLE, [ERR_REASON_CONSTRAINTS_NOT_MATCH])
        return None

    def explain(self, state: framework.CycleState, pod: framework.PodInfo, node: framework.NodeState) -> str:
        """Which constraint rejected the node, with the skew Filter computed."""
        s = state.get(_PRE_FILTER_KEY)
        if not isinstance(s, _FilterState):
            return ""
        labels = node.labels
        for i, c in enumerate(s.constraints):
            value = labels.get(c.topology_key)
            if value is None:
                return f"constraint {i + 1} (topologyKey {c.topology_key}): the node has no {c.topology_key} label"
            counts = s.counts[i]
            min_match = 0 if len(counts) < c.min_domains else s.min_match[i]
            self_match = 1 if c.selector.matches(pod.labels) else 0
            skew = counts.get(value, 0) + self_match - min_match
            if skew > c.max_skew:
                domains = ", ".join(f"{k}={n}" for k, n in sorted(counts.items()))
                return (f"constraint {i + 1} (topologyKey {c.topology_key}, maxSkew {c.max_skew}, selector "
                        f"{c.selector or '<everything>'}): placing the pod in {c.topology_key}={value} makes the "
                        f"skew {skew} (matching pods per domain: {domains or 'none'}; global minimum {min_match}"
                        + (f", fewer domains than minDomains {c.min_domains}" if len(counts) < c.min_domains
                           else "") + ")")
        return ""

    # -- PreScore / Score ------------------------------------------------------------------------

    def pre_score(self, state: framework.CycleState, pod: framework.PodInfo, nodes: Sequence[framework.NodeState]
                  ) -> framework.Status | None:
        snapshot = state.get(framework.SNAPSHOT_KEY)
        all_nodes = snapshot.nodes if isinstance(snapshot, framework.Snapshot) else nodes
        if not all_nodes:
            return framework.SKIPPED
        spec = pod.pod.get("spec") or {}
        # Only non-system-default constraints need every key on a node (hostname spreading works
        # on nodes without a zone label).
        require_all = bool(spec.get("topologySpreadConstraints")) or not self.system_defaulted
        try:
            constraints = self.constraints(pod, SCHEDULE_ANYWAY)
        except BadRequest as exc:
            return framework.Status(framework.ERROR, [f"calculating preScoreState: {exc}"])
        if not constraints:
            return framework.SKIPPED
        counts: list[dict[str, int]] = [{} for _ in constraints]
        ignored: set[str] = set()
        for node in nodes:
            labels = node.labels
            if require_all and not _has_keys(labels, constraints):
                ignored.add(node.name)
                continue
            for i, c in enumerate(constraints):
                if c.topology_key != HOSTNAME:
                    counts[i].setdefault(labels.get(c.topology_key, ""), 0)
        weights = [_normalizing_weight(len(nodes) - len(ignored) if c.topology_key == HOSTNAME else len(counts[i]))
                   for i, c in enumerate(constraints)]
        affinity = plugins.PodInfo(pod.pod)
        ns = pod.namespace
        for node in all_nodes:
            labels = node.labels
            if require_all and not _has_keys(labels, constraints):
                continue
            for i, c in enumerate(constraints):
                value = labels.get(c.topology_key, "")
                if value not in counts[i] or not c.includes(node, affinity):
                    continue
                counts[i][value] += _count_matching(node.pods, c.selector, ns)
        state[_PRE_SCORE_KEY] = _ScoreState(constraints, counts, ignored, weights)
        state[_PRE_SCORE_KEY + "/nodes"] = [n.name in ignored for n in nodes]
        return None

    def score(self, state: framework.CycleState, pod: framework.PodInfo, node: framework.NodeState) -> int:
        s = state.get(_PRE_SCORE_KEY)
        if not isinstance(s, _ScoreState) or node.name in s.ignored:
            return 0
        labels = node.labels
        total = 0.0
        for i, c in enumerate(s.constraints):
            value = labels.get(c.topology_key)
            if value is None:
                continue
            if c.topology_key == HOSTNAME:
                cnt = _count_matching(node.pods, c.selector, pod.namespace)
            else:
                cnt = s.counts[i].get(value, 0)
            total += cnt * s.weights[i] + (c.max_skew - 1)
        return math.floor(total + 0.5)  # math.Round: halves away from zero (scores are >= 0)

    def normalize(self, state: framework.CycleState, pod: framework.PodInfo, scores: list[int]) -> None:
        ignored = state.get(_PRE_SCORE_KEY + "/nodes")
        if not isinstance(ignored, list) or len(ignored) != len(scores):
            ignored = [False] * len(scores)
        valid = [s for s, skip in zip(scores, ignored, strict=True) if not skip]
        lo = min(valid, default=0)
        hi = max(0, max(valid, default=0))
        for i, s in enumerate(scores):
            if ignored[i]:
                scores[i] = 0
            elif hi == 0:
                scores[i] = framework.MAX_NODE_SCORE
            else:
                scores[i] = framework.MAX_NODE_SCORE * (hi + lo - s) // hi


def _normalizing_weight(size: int) -> float:
    """`topologyNormalizingWeight`: log(size + 2)."""
    return math.log(size + 2)


profiles.PLUGINS[NAME] = PodTopologySpread
