"""InterPodAffinity (pure): required pod affinity / anti-affinity as a filter, preferred terms (and
the existing pods' terms) as a score, following kube-scheduler's
`pkg/scheduler/framework/plugins/interpodaffinity`.

**PreFilter** counts, per topology pair (`topologyKey`, node label value):

- existing pods whose required anti-affinity terms select the incoming pod (terms scoped to
  `kubernetes.io/hostname` are checked on the node itself in Filter);
- existing pods matching *all* of the incoming pod's required affinity terms (only when one of them
  is wider than the hostname; otherwise Filter looks at the node's own pods), and pods matching each
  of its non-hostname anti-affinity terms.

The incoming pod's `namespaceSelector`s are resolved once against the namespaces of the snapshot;
existing pods' terms are matched against the incoming pod's namespace labels. Nothing to count and
no terms: the plugin is skipped for the cycle (`Skip`), so it costs nothing per node.

**Filter**, in order, with upstream's reasons: the affinity terms ("node(s) didn't match pod
affinity rules", unresolvable; the first pod of a group that matches its own terms may go to any
node with the topology labels when no pod matches yet), the pod's anti-affinity ("node(s) didn't
match pod anti-affinity rules") and the existing pods' anti-affinity ("node(s) didn't satisfy
existing pods anti-affinity rules"), both resolvable by preemption. AddPod / RemovePod update the
counts for preemption's dry runs.

**Score**: per topology pair, the weights of the incoming pod's preferred terms matched by existing
pods (anti-affinity negative), plus the existing pods' preferred terms matched by the incoming pod
and their required affinity terms weighted by `hardPodAffinityWeight` (default 1); a node scores the
sum over its labels, normalized min..max to 0..100. `ignorePreferredTermsOfExistingPods` skips the
existing pods' terms when the incoming pod has no preferred terms.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

from cp import selectors
from cp.scheduling import framework, profiles

__all__ = ["ERR_REASON_AFFINITY", "ERR_REASON_ANTI_AFFINITY", "ERR_REASON_EXISTING_ANTI_AFFINITY", "NAME",
           "InterPodAffinity"]

NAME = "InterPodAffinity"
HOSTNAME = "kubernetes.io/hostname"

ERR_REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_REASON_AFFINITY = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"

_PRE_FILTER_KEY = "PreFilter" + NAME
_PRE_SCORE_KEY = "PreScore" + NAME

Pair = tuple[str, str]


class ArgsError(ValueError):
    """Invalid InterPodAffinityArgs (upstream's validation message)."""


def _resolve(term: framework.AffinityTerm, namespaces: Mapping[str, Mapping[str, str]]) -> framework.AffinityTerm:
    """`mergeAffinityTermNamespacesIfNotEmpty` on a copy: the incoming pod's namespace selector
    becomes the namespaces it selects now (an empty selector keeps matching every namespace)."""
    if term.namespace_selector.empty or term.namespace_selector.matches_nothing:
        return term
    out = object.__new__(framework.AffinityTerm)
    out.topology_key = term.topology_key
    out.selector = term.selector
    out.weight = term.weight
    out.namespaces = set(term.namespaces)
    for name in namespaces:
        if term.namespace_selector.matches(namespaces[name]):
            out.namespaces.add(name)
    out.namespace_selector = selectors.LabelSelector.nothing()
    return out


def _matches_all(terms: Sequence[framework.AffinityTerm], pod: framework.PodInfo) -> bool:
    """`podMatchesAllAffinityTerms` (namespace selectors already merged: no namespace labels)."""
    if not terms:
        return False
    return all(t.matches(pod, None) for t in terms)


def _add(counts: dict[Pair, int], labels: Mapping[str, str], key: str, value: int) -> None:
    tv = labels.get(key)
    if tv is None:
        return
    pair = (key, tv)
    n = counts.get(pair, 0) + value
    if n == 0:
        counts.pop(pair, None)
    else:
        counts[pair] = n


class _FilterState:
    __slots__ = ("affinity_counts", "all_affinity", "anti_affinity_counts", "existing_counts", "host_affinity",
                 "host_anti_affinity", "matching_host_affinity_pod", "namespace_labels", "non_host_anti_affinity",
                 "pod", "required_affinity")

    def __init__(self, pod: framework.PodInfo, required_affinity: list[framework.AffinityTerm],
                 required_anti_affinity: list[framework.AffinityTerm],
                 namespace_labels: Mapping[str, str] | None) -> None:
        self.pod = pod
        self.namespace_labels = namespace_labels
        self.required_affinity = required_affinity
        # classifyTermsBasedOnScope
        if all(t.topology_key == HOSTNAME for t in required_affinity):
            self.host_affinity, self.all_affinity = required_affinity, []
        else:
            self.host_affinity, self.all_affinity = [], required_affinity
        self.host_anti_affinity = [t for t in required_anti_affinity if t.topology_key == HOSTNAME]
        self.non_host_anti_affinity = [t for t in required_anti_affinity if t.topology_key != HOSTNAME]
        self.existing_counts: dict[Pair, int] = {}
        self.affinity_counts: dict[Pair, int] = {}
        self.anti_affinity_counts: dict[Pair, int] = {}
        self.matching_host_affinity_pod = False

    def clone(self) -> _FilterState:
        out = object.__new__(_FilterState)
        for name in self.__slots__:
            setattr(out, name, getattr(self, name))
        out.existing_counts = dict(self.existing_counts)
        out.affinity_counts = dict(self.affinity_counts)
        out.anti_affinity_counts = dict(self.anti_affinity_counts)
        return out

    def update_with_pod(self, other: framework.PodInfo, labels: Mapping[str, str], multiplier: int) -> None:
        for t in other.required_anti_affinity:
            if t.matches(self.pod, self.namespace_labels):
                _add(self.existing_counts, labels, t.topology_key, multiplier)
        if _matches_all(self.all_affinity, other):
            for t in self.all_affinity:
                _add(self.affinity_counts, labels, t.topology_key, multiplier)
        for t in self.non_host_anti_affinity:
            if t.matches(other, None):
                _add(self.anti_affinity_counts, labels, t.topology_key, multiplier)


class _ScoreState:
    __slots__ = ("topology_score",)

    def __init__(self, topology_score: dict[str, dict[str, int]]) -> None:
        self.topology_score = topology_score


class InterPodAffinity(framework.Plugin):
    name: ClassVar[str] = NAME
    points: ClassVar[frozenset[str]] = frozenset(
        {"PreFilter", "Filter", "AddPod", "RemovePod", "PreScore", "Score", "NormalizeScore"})
    # The cluster events that may make a pod this plugin rejected schedulable (EventsToRegister).
    events: ClassVar[tuple[str, ...]] = ("Pod/Add", "Pod/UpdatePodLabel", "Pod/Delete", "Node/Add",
                                         "Node/UpdateNodeLabel", "Node/UpdateNodeTaint")

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        args = args or {}
        weight = args.get("hardPodAffinityWeight", 1)
        if isinstance(weight, bool) or not isinstance(weight, int) or not 0 <= weight <= 100:
            raise ArgsError(f"hardPodAffinityWeight: Invalid value: {weight!r}: not in valid range [0-100]")
        self.hard_pod_affinity_weight = weight
        self.ignore_preferred_terms_of_existing_pods = bool(args.get("ignorePreferredTermsOfExistingPods", False))

    # -- PreFilter / Filter ----------------------------------------------------------------------

    def pre_filter(self, state: framework.CycleState, pod: framework.PodInfo, snapshot: framework.Snapshot
                   ) -> framework.Status | None:
        state[framework.SNAPSHOT_KEY] = snapshot
        anti_nodes = snapshot.have_pods_with_required_anti_affinity()
        if not pod.required_affinity and not pod.required_anti_affinity and not anti_nodes:
            return framework.SKIPPED
        namespaces = snapshot.namespaces
        required_affinity = [_resolve(t, namespaces) for t in pod.required_affinity]
        required_anti_affinity = [_resolve(t, namespaces) for t in pod.required_anti_affinity]
        s = _FilterState(pod, required_affinity, required_anti_affinity, snapshot.namespace_labels(pod.namespace))
        ns_labels = s.namespace_labels
        # existing pods' anti-affinity terms selecting the incoming pod (hostname terms: in Filter)
        host_scoped = False
        for node in anti_nodes:
            labels = node.labels
            for other in node.pods:
                for t in other.required_anti_affinity:
                    if t.topology_key == HOSTNAME:
                        host_scoped = True
                    elif t.matches(pod, ns_labels):
                        _add(s.existing_counts, labels, t.topology_key, 1)
        if s.all_affinity or s.non_host_anti_affinity:
            for node in snapshot.nodes:
                labels = node.labels
                for other in node.pods:
                    if _matches_all(s.all_affinity, other):
                        for t in s.all_affinity:
                            _add(s.affinity_counts, labels, t.topology_key, 1)
                    for t in s.non_host_anti_affinity:
                        if t.matches(other, None):
                            _add(s.anti_affinity_counts, labels, t.topology_key, 1)
        if s.host_affinity:
            s.matching_host_affinity_pod = any(_matches_all(s.host_affinity, other)
                                               for node in snapshot.nodes for other in node.pods)
        if not s.existing_counts and not host_scoped and not required_affinity and not required_anti_affinity:
            return framework.SKIPPED
        state[_PRE_FILTER_KEY] = s
        return None

    def add_pod(self, state: framework.CycleState, pod: framework.PodInfo, other: framework.PodInfo,
                node: framework.NodeState) -> None:
        s = state.get(_PRE_FILTER_KEY)
        if isinstance(s, _FilterState):
            s.update_with_pod(other, node.labels, 1)

    def remove_pod(self, state: framework.CycleState, pod: framework.PodInfo, other: framework.PodInfo,
                   node: framework.NodeState) -> None:
        s = state.get(_PRE_FILTER_KEY)
        if isinstance(s, _FilterState):
            s.update_with_pod(other, node.labels, -1)

    def filter(self, state: framework.CycleState, pod: framework.PodInfo, node: framework.NodeState
               ) -> framework.Status | None:
        s = state.get(_PRE_FILTER_KEY)
        if not isinstance(s, _FilterState):
            return framework.Status(framework.ERROR, [f'error reading "{_PRE_FILTER_KEY}" from cycleState'])
        labels = node.labels
        if s.host_affinity:
            if not any(_matches_all(s.host_affinity, other) for other in node.pods) and \
                    not _self_affinity(s, labels):
                return framework.Status(framework.UNRESOLVABLE, [ERR_REASON_AFFINITY])
        elif s.all_affinity and not _topology_matches_affinity(s, labels):
            return framework.Status(framework.UNRESOLVABLE, [ERR_REASON_AFFINITY])
        if _conflicts_with_anti_affinity(s, node):
            return framework.Status(framework.UNSCHEDULABLE, [ERR_REASON_ANTI_AFFINITY])
        if not _satisfies_existing_anti_affinity(s, node):
            return framework.Status(framework.UNSCHEDULABLE, [ERR_REASON_EXISTING_ANTI_AFFINITY])
        return None

    def explain(self, state: framework.CycleState, pod: framework.PodInfo, node: framework.NodeState) -> str:
        """Which term rejected the node: the pod's own (anti-)affinity term, or an existing pod's
        anti-affinity term that matches this pod."""
        s = state.get(_PRE_FILTER_KEY)
        snapshot = state.get(framework.SNAPSHOT_KEY)
        if not isinstance(s, _FilterState) or not isinstance(snapshot, framework.Snapshot):
            return ""
        labels = node.labels

        def domain_pods(key: str) -> list[framework.PodInfo]:
            value = labels.get(key)
            if value is None:
                return []
            return [p for n in snapshot.nodes if n.labels.get(key) == value for p in n.pods]

        for i, t in enumerate(s.required_affinity):
            if t.topology_key not in labels:
                return f"required affinity term {i + 1}: the node has no {t.topology_key} label"
            if not any(t.matches(p, None) for p in domain_pods(t.topology_key)) and not _self_affinity(s, labels):
                return (f"required affinity term {i + 1} (topologyKey {t.topology_key}, selector {t.selector}): "
                        f"no matching pod in {t.topology_key}={labels[t.topology_key]}")
        for i, t in enumerate(pod.required_anti_affinity):
            for p in domain_pods(t.topology_key):
                if t.matches(p, None):
                    return (f"required anti-affinity term {i + 1} (topologyKey {t.topology_key}, selector "
                            f"{t.selector}): pod {p.namespace}/{p.name} runs in "
                            f"{t.topology_key}={labels[t.topology_key]}")
        for n in snapshot.have_pods_with_required_anti_affinity():
            for p in n.pods:
                for t in p.required_anti_affinity:
                    value = n.labels.get(t.topology_key)
                    if value is not None and labels.get(t.topology_key) == value and \
                            t.matches(pod, s.namespace_labels):
                        return (f"pod {p.namespace}/{p.name} in {t.topology_key}={value} has a required "
                                f"anti-affinity term (selector {t.selector}) that matches this pod")
        return ""

    # -- PreScore / Score ------------------------------------------------------------------------

    def pre_score(self, state: framework.CycleState, pod: framework.PodInfo, nodes: Sequence[framework.NodeState]
                  ) -> framework.Status | None:
        snapshot = state.get(framework.SNAPSHOT_KEY)
        all_nodes: Sequence[framework.NodeState] = snapshot.nodes if isinstance(snapshot, framework.Snapshot) \
            else nodes
        has_constraints = bool(pod.preferred_affinity or pod.preferred_anti_affinity)
        if self.ignore_preferred_terms_of_existing_pods and not has_constraints:
            return framework.SKIPPED
        to_process: Iterable[framework.NodeState]
        if has_constraints:
            to_process = all_nodes
        elif isinstance(snapshot, framework.Snapshot):
            to_process = snapshot.have_pods_with_affinity()
        else:
            to_process = [n for n in all_nodes if n.usage.with_affinity]
        namespaces: Mapping[str, Mapping[str, str]] = snapshot.namespaces if isinstance(
            snapshot, framework.Snapshot) else {}
        ns_labels = snapshot.namespace_labels(pod.namespace) if isinstance(snapshot, framework.Snapshot) else None
        preferred = [_resolve(t, namespaces) for t in pod.preferred_affinity]
        preferred_anti = [_resolve(t, namespaces) for t in pod.preferred_anti_affinity]
        hard = self.hard_pod_affinity_weight
        scores: dict[str, dict[str, int]] = {}

        def add(term: framework.AffinityTerm, weight: int, target: framework.PodInfo,
                target_ns_labels: Mapping[str, str] | None, labels: Mapping[str, str]) -> None:
            if term.matches(target, target_ns_labels):
                tv = labels.get(term.topology_key)
                if tv is not None:
                    per_key = scores.setdefault(term.topology_key, {})
                    per_key[tv] = per_key.get(tv, 0) + weight

        for node in to_process:
            labels = node.labels
            if not labels:
                continue
            for other in node.pods:
                if not has_constraints and not other.has_affinity:
                    continue
                for t in preferred:
                    add(t, t.weight, other, None, labels)
                for t in preferred_anti:
                    add(t, -t.weight, other, None, labels)
                if hard > 0:
                    for t in other.required_affinity:
                        add(t, hard, pod, ns_labels, labels)
                for t in other.preferred_affinity:
                    add(t, t.weight, pod, ns_labels, labels)
                for t in other.preferred_anti_affinity:
                    add(t, -t.weight, pod, ns_labels, labels)
        if not scores:
            return framework.SKIPPED
        state[_PRE_SCORE_KEY] = _ScoreState(scores)
        return None

    def score(self, state: framework.CycleState, pod: framework.PodInfo, node: framework.NodeState) -> int:
        s = state.get(_PRE_SCORE_KEY)
        if not isinstance(s, _ScoreState):
            return 0
        labels = node.labels
        total = 0
        for key, values in s.topology_score.items():
            v = labels.get(key)
            if v is not None:
                total += values.get(v, 0)
        return total

    def normalize(self, state: framework.CycleState, pod: framework.PodInfo, scores: list[int]) -> None:
        s = state.get(_PRE_SCORE_KEY)
        if not isinstance(s, _ScoreState) or not s.topology_score or not scores:
            return
        lo, hi = min(scores), max(scores)
        diff = hi - lo
        for i, v in enumerate(scores):
            scores[i] = math.trunc(framework.MAX_NODE_SCORE * ((v - lo) / diff)) if diff > 0 else 0


def _self_affinity(s: _FilterState, labels: Mapping[str, str]) -> bool:
    """`satisfiesSelfAffinityCheck`: the first pod of a group matching its own terms may go to any
    node that has every topology key, while no other pod matches them."""
    if s.matching_host_affinity_pod or not _matches_all(s.required_affinity, s.pod):
        return False
    return all(t.topology_key in labels for t in s.required_affinity)


def _topology_matches_affinity(s: _FilterState, labels: Mapping[str, str]) -> bool:
    pods_exist = True
    for t in s.all_affinity:
        tv = labels.get(t.topology_key)
        if tv is None:
            return False
        if s.affinity_counts.get((t.topology_key, tv), 0) <= 0:
            pods_exist = False
    if not pods_exist:
        return not s.affinity_counts and _self_affinity(s, labels)
    return True


def _conflicts_with_anti_affinity(s: _FilterState, node: framework.NodeState) -> bool:
    labels = node.labels
    if s.anti_affinity_counts:
        for t in s.non_host_anti_affinity:
            tv = labels.get(t.topology_key)
            if tv is not None and s.anti_affinity_counts.get((t.topology_key, tv), 0) > 0:
                return True
    for t in s.host_anti_affinity:
        for other in node.pods:
            if t.matches(other, None):
                return True
    return False


def _satisfies_existing_anti_affinity(s: _FilterState, node: framework.NodeState) -> bool:
    if s.existing_counts:
        counts = s.existing_counts
        for pair in node.labels.items():
            if counts.get(pair, 0) > 0:
                return False
    if node.usage.with_required_anti_affinity:
        for other in node.pods:
            for t in other.required_anti_affinity:
                if t.topology_key == HOSTNAME and t.matches(s.pod, s.namespace_labels):
                    return False
    return True


profiles.PLUGINS[NAME] = InterPodAffinity
