"""NodeAffinity (pure).

- Filter: the scheduler-enforced `addedAffinity` (plugin args) first — "node(s) didn't match
  scheduler-enforced node affinity" —, then the pod's `nodeSelector` and required node affinity —
  "node(s) didn't match Pod's node affinity/selector"; both unresolvable. PreFilter skips the Filter
  for a pod with neither (and no added affinity), and rejects a pod whose required terms each ask for
  `metadata.name`s that conflict ("pod affinity terms conflict");
- Score: the summed weights of the preferred terms (the pod's and the added ones) a node matches,
  normalized to 0..100 by the highest.

The fused `plugins.PodInfo.filter` runs the same Filter for the default profile (no added affinity).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from cp.dra.nodeselector import NodeSelectorError, node_selector_matches
from cp.scheduling import framework, plugins, profiles

__all__ = ["ERR_REASON_CONFLICT", "ERR_REASON_ENFORCED", "NodeAffinity"]

ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"


class ArgsError(ValueError):
    pass


def _preferred(terms: Any) -> list[tuple[int, Mapping[str, Any]]]:
    """`NewPreferredSchedulingTerms`: (weight, selector) of each term with a weight; a term with no
    requirement matches nothing and is left out."""
    out: list[tuple[int, Mapping[str, Any]]] = []
    for t in terms or ():
        if not isinstance(t, Mapping):
            continue
        weight = int(t.get("weight") or 0)
        pref = t.get("preference") or {}
        if weight and (pref.get("matchExpressions") or pref.get("matchFields")):
            out.append((weight, {"nodeSelectorTerms": [pref]}))
    return out


def _matches(selector: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    try:
        return node_selector_matches(selector, node)
    except NodeSelectorError:
        return False


class _Required:
    __slots__ = ("affinity", "node_selector")

    def __init__(self, spec: Mapping[str, Any]) -> None:
        self.node_selector = list((spec.get("nodeSelector") or {}).items())
        self.affinity = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution")

    def match(self, node: framework.NodeState) -> bool:
        labels = node.labels
        for k, v in self.node_selector:
            if labels.get(k) != v:
                return False
        return self.affinity is None or _matches(self.affinity, node.node)


class NodeAffinity(framework.Plugin):
    name: ClassVar[str] = "NodeAffinity"
    points: ClassVar[frozenset[str]] = frozenset({"PreFilter", "Filter", "PreScore", "Score", "NormalizeScore"})
    events: ClassVar[tuple[str, ...]] = ("Node/Add", "Node/UpdateNodeLabel")

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        added = (args or {}).get("addedAffinity")
        if added is not None and not isinstance(added, Mapping):
            raise ArgsError("addedAffinity: must be a NodeAffinity object")
        added = added or {}
        self.added_required: Mapping[str, Any] | None = added.get("requiredDuringSchedulingIgnoredDuringExecution")
        if self.added_required is not None:
            try:
                node_selector_matches(self.added_required, {})
            except NodeSelectorError as e:
                raise ArgsError(f"addedAffinity.requiredDuringSchedulingIgnoredDuringExecution: {e}") from None
        self.added_preferred = _preferred(added.get("preferredDuringSchedulingIgnoredDuringExecution"))
        self.has_added_preferred = added.get("preferredDuringSchedulingIgnoredDuringExecution") is not None
        self.default_args = self.added_required is None and not self.has_added_preferred

    # -- Filter ---------------------------------------------------------------------------

    def pre_filter(self, state: framework.CycleState, pod: framework.PodInfo,
                   snapshot: framework.Snapshot) -> framework.Status | None:
        spec = pod.pod.get("spec") or {}
        required = _Required(spec)
        if required.affinity is None and self.added_required is None and spec.get("nodeSelector") is None:
            return framework.SKIPPED
        state[self.name] = required
        terms = (required.affinity or {}).get("nodeSelectorTerms") or []
        if not terms:
            return None
        names: set[str] | None = None
        for term in terms:
            term_names: set[str] | None = None
            for field in (term or {}).get("matchFields") or ():
                if field.get("key") == "metadata.name" and field.get("operator") == "In":
                    values = set(field.get("values") or ())
                    term_names = values if term_names is None else term_names & values
            if term_names is None:
                return None  # this term may match any node (terms are ORed)
            names = term_names if names is None else names | term_names
        if names is not None and not names:
            return framework.Status(plugins.UNRESOLVABLE, [ERR_REASON_CONFLICT])
        if names:
            state.restrict(frozenset(names), self.name)  # PreFilterResult: only these nodes
        return None

    def filter(self, state: framework.CycleState, pod: framework.PodInfo,
               node: framework.NodeState) -> framework.Status | None:
        if self.added_required is not None and not _matches(self.added_required, node.node):
            return framework.Status(plugins.UNRESOLVABLE, [ERR_REASON_ENFORCED])
        required = state.get(self.name)
        if required is None:
            required = _Required(pod.pod.get("spec") or {})
        if not required.match(node):
            return framework.Status(plugins.UNRESOLVABLE, [plugins.ERR_REASON_AFFINITY])
        return None

    # -- Score ----------------------------------------------------------------------------

    def _pod_preferred(self, pod: framework.PodInfo) -> Any:
        return (((pod.pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}).get(
            "preferredDuringSchedulingIgnoredDuringExecution")

    def pre_score(self, state: framework.CycleState, pod: framework.PodInfo,
                  nodes: Sequence[framework.NodeState]) -> framework.Status | None:
        if not nodes:
            return None
        raw = self._pod_preferred(pod)
        if raw is None and not self.has_added_preferred:
            return framework.SKIPPED
        state["PreScore" + self.name] = _preferred(raw) + self.added_preferred
        return None

    def score(self, state: framework.CycleState, pod: framework.PodInfo, node: framework.NodeState) -> int:
        terms = state.get("PreScore" + self.name)
        if terms is None:
            terms = _preferred(self._pod_preferred(pod)) + self.added_preferred
        return sum(weight for weight, sel in terms if _matches(sel, node.node))

    def normalize(self, state: framework.CycleState, pod: framework.PodInfo, scores: list[int]) -> None:
        framework.default_normalize(scores, reverse=False)


profiles.PLUGINS[NodeAffinity.name] = NodeAffinity
