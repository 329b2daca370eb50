"""The scheduling framework (pure; no I/O): what kube-scheduler's plugins see and how a profile
runs them.

- `PodInfo`: a pod digested once — requests, controller, labels, (anti-)affinity terms, host ports,
  PVCs — for the pod being scheduled and for every pod already on a node;
- `NodeState`: a node (`plugins.NodeInfo`) with what its pods request (`plugins.NodeUsage`, which
  also holds their `PodInfo`s), plus the DynamicResources plugin's per-node cache;
- `Snapshot`: the nodes of one cycle and the namespace labels (`GetNamespaceLabelsSnapshot`);
- `CycleState`: what a plugin's PreFilter / PreScore leaves for its Filter / Score (copyable, as
  preemption runs the filters again with victims removed);
- `Plugin`: the extension points a plugin may implement (PreFilter, Filter, AddPod/RemovePod,
  PreScore, Score, NormalizeScore);
- `Profile`: one `schedulerName` with its filter and score plugins (weights), run the way
  `frameworkImpl` runs them: filters in order, the first rejection wins; every score plugin's scores
  normalized to 0..100, multiplied by its weight and summed.

The core filters (NodeUnschedulable, NodeName, TaintToleration, NodeAffinity, NodeResourcesFit) also
exist fused in `plugins.PodInfo.filter`, which a profile uses when they run with their defaults (the
hot path); `cp.scheduling.profiles` builds profiles from a KubeSchedulerConfiguration.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

from cp import selectors
from cp.scheduling import plugins

__all__ = [
    "ERROR",
    "MAX_NODE_SCORE",
    "SKIP",
    "SNAPSHOT_KEY",
    "SUCCESS",
    "UNRESOLVABLE",
    "UNSCHEDULABLE",
    "AffinityTerm",
    "CycleState",
    "NodeState",
    "Plugin",
    "PodInfo",
    "Profile",
    "Snapshot",
    "Status",
]

Status = plugins.Status
SUCCESS = "Success"
ERROR = "Error"
UNSCHEDULABLE = plugins.UNSCHEDULABLE
UNRESOLVABLE = plugins.UNRESOLVABLE
SKIP = "Skip"
MAX_NODE_SCORE = plugins.MAX_NODE_SCORE

SKIPPED = Status(SKIP, [])
# CycleState key of the cycle's Snapshot (written before PreFilter; PreScore reads all nodes from it).
SNAPSHOT_KEY = "Snapshot"


# ---------------------------------------------------------------------- pods


class AffinityTerm:
    """`framework.AffinityTerm`: a pod (anti-)affinity term with its namespaces resolved: the
    listed ones, or the pod's own when neither `namespaces` nor `namespaceSelector` is given."""

    __slots__ = ("namespace_selector", "namespaces", "selector", "topology_key", "weight")

    def __init__(self, term: Mapping[str, Any], *, namespace: str, weight: int = 0) -> None:
        self.topology_key = str(term.get("topologyKey") or "")
        self.selector = _selector(term.get("labelSelector"))
        self.namespaces = set(term.get("namespaces") or [])
        ns_sel = term.get("namespaceSelector")
        self.namespace_selector = _selector(ns_sel) if ns_sel is not None else selectors.LabelSelector.nothing()
        if not self.namespaces and ns_sel is None:
            self.namespaces = {namespace}
        self.weight = weight

    def matches(self, pod: PodInfo, namespace_labels: Mapping[str, str] | None) -> bool:
        """`AffinityTerm.Matches`: the pod is in one of the term's namespaces and has its labels."""
        if pod.namespace in self.namespaces or self.namespace_selector.matches(namespace_labels):
            return self.selector.matches(pod.labels)
        return False


def _selector(sel: Mapping[str, Any] | None) -> selectors.LabelSelector:
    try:
        return selectors.from_label_selector_object(sel)
    except Exception:  # validation rejects these; a bad one selects nothing, as upstream's error path
        return selectors.LabelSelector.nothing()


def _terms(items: Iterable[Any] | None, *, namespace: str, weighted: bool) -> list[AffinityTerm]:
    out = []
    for item in items or ():
        if not isinstance(item, Mapping):
            continue
        if weighted:
            term = item.get("podAffinityTerm") or {}
            out.append(AffinityTerm(term, namespace=namespace, weight=int(item.get("weight") or 0)))
        else:
            out.append(AffinityTerm(item, namespace=namespace))
    return out


class PodInfo:
    """`framework.PodInfo`: a pod with what the plugins need from it, computed once."""

    __slots__ = ("has_affinity", "host_ports", "labels", "name", "namespace", "owner", "pod", "preferred_affinity",
                 "preferred_anti_affinity", "priority", "pvcs", "req", "required_affinity",
                 "required_anti_affinity", "uid")

    def __init__(self, pod: Mapping[str, Any], req: plugins.PodRequests | None = None, owner: str | None = None
                 ) -> None:
        self.pod = pod
        meta = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        self.name = str(meta.get("name") or "")
        self.namespace = str(meta.get("namespace") or "")
        self.uid = str(meta.get("uid") or "")
        self.labels: Mapping[str, str] = meta.get("labels") or {}
        self.req = req if req is not None else plugins.pod_requests(pod)
        if owner is None:
            owner = next((str(r.get("uid") or "") for r in meta.get("ownerReferences") or []
                          if isinstance(r, Mapping) and r.get("controller")), "")
        self.owner = owner
        self.priority = int(spec.get("priority") or 0)
        affinity = spec.get("affinity") or {}
        pa = affinity.get("podAffinity") or {}
        paa = affinity.get("podAntiAffinity") or {}
        ns = self.namespace
        self.required_affinity = _terms(pa.get("requiredDuringSchedulingIgnoredDuringExecution"), namespace=ns,
                                        weighted=False)
        self.required_anti_affinity = _terms(paa.get("requiredDuringSchedulingIgnoredDuringExecution"),
                                             namespace=ns, weighted=False)
        self.preferred_affinity = _terms(pa.get("preferredDuringSchedulingIgnoredDuringExecution"), namespace=ns,
                                         weighted=True)
        self.preferred_anti_affinity = _terms(paa.get("preferredDuringSchedulingIgnoredDuringExecution"),
                                              namespace=ns, weighted=True)
        self.has_affinity = bool(self.required_affinity or self.required_anti_affinity or self.preferred_affinity
                                 or self.preferred_anti_affinity)
        # (ip, protocol, port) of every container's hostPort (`GetContainerPorts`)
        ports: list[tuple[str, str, int]] = []
        for group in ("initContainers", "containers"):
            for c in spec.get(group) or ():
                if group == "initContainers" and c.get("restartPolicy") != "Always":
                    continue  # only sidecars run for the pod's lifetime
                for p in c.get("ports") or ():
                    hp = int(p.get("hostPort") or 0)
                    if hp > 0:
                        ports.append((str(p.get("hostIP") or "0.0.0.0"), str(p.get("protocol") or "TCP"), hp))
        self.host_ports = ports
        self.pvcs = [str((v.get("persistentVolumeClaim") or {}).get("claimName") or "")
                     for v in spec.get("volumes") or () if isinstance(v, Mapping) and v.get("persistentVolumeClaim")]

    def __repr__(self) -> str:
        return f"PodInfo({self.namespace}/{self.name})"


# ---------------------------------------------------------------------- nodes


class NodeState:
    """A node as a scheduling cycle sees it: the pre-digested node, what the pods on it request
    (and the pods themselves, `usage.members`), and the DynamicResources plugin's per-node cache
    with a version bumped whenever a device of one of its pools is allocated or freed."""

    __slots__ = ("dra_cache", "dra_version", "info", "name", "usage")

    def __init__(self, node: Mapping[str, Any], usage: plugins.NodeUsage | None = None) -> None:
        self.info = plugins.NodeInfo(node)
        self.name = self.info.name
        self.usage = usage if usage is not None else plugins.NodeUsage()
        # claim-spec signature -> (allocator generation, dra_version, shared version, answer)
        self.dra_cache: dict[bytes, tuple[int, int, int, Any]] = {}
        self.dra_version = 0

    @classmethod
    def of(cls, node: Mapping[str, Any], pods: Iterable[Mapping[str, Any] | PodInfo] = ()) -> NodeState:
        """A node with these pods on it (for tests and `cplane why`)."""
        state = cls(node)
        for pod in pods:
            info = pod if isinstance(pod, PodInfo) else PodInfo(pod)
            state.usage.add(info.req, info.owner, info)
        return state

    @property
    def node(self) -> dict[str, Any]:
        return self.info.node  # type: ignore[return-value]

    @property
    def labels(self) -> Mapping[str, str]:
        return self.info.labels

    @property
    def pods(self) -> Iterable[PodInfo]:
        return self.usage.members.values()

    def __repr__(self) -> str:
        return f"NodeState({self.name}, pods={self.usage.pods})"


class Snapshot:
    """The nodes of one cycle, the namespaces' labels (for affinity namespace selectors), the
    extended resources DeviceClasses back (resource -> class, for NodeResourcesFit) and the
    volume objects (for VolumeRestrictions and VolumeBinding)."""

    __slots__ = ("_affinity", "_anti_affinity", "_by_name", "dra_backed", "namespaces", "nodes", "nodes_with_images",
                 "soft_tainted", "volumes")

    def __init__(self, nodes: Sequence[NodeState], namespaces: Mapping[str, Mapping[str, str]] | None = None,
                 dra_backed: Mapping[str, str] | None = None, volumes: Any = None, *,
                 counts: SnapshotCounts | None = None) -> None:
        self.nodes = nodes
        self._by_name: dict[str, NodeState] | None = None
        self.namespaces = namespaces or {}
        self.dra_backed = dra_backed or {}
        # PersistentVolumeClaims, PersistentVolumes, StorageClasses (`volumebinding.VolumeLookup`;
        # None: unknown, the volume plugins skip)
        self.volumes = volumes
        self._affinity: list[NodeState] | None = None
        self._anti_affinity: list[NodeState] | None = None
        # What the node cache counts as it changes (upstream's snapshot keeps these lists up to date
        # the same way): none of a kind means no scan of the nodes for it. None: unknown, scan.
        self.nodes_with_images: int | None = None
        self.soft_tainted: int | None = None
        if counts is not None:
            if not counts.pods_with_affinity:
                self._affinity = []
            if not counts.pods_with_required_anti_affinity:
                self._anti_affinity = []
            self.nodes_with_images = counts.nodes_with_images
            self.soft_tainted = counts.soft_tainted

    @property
    def by_name(self) -> dict[str, NodeState]:
        if self._by_name is None:
            self._by_name = {n.name: n for n in self.nodes}
        return self._by_name

    def namespace_labels(self, name: str) -> Mapping[str, str] | None:
        return self.namespaces.get(name)

    def have_pods_with_affinity(self) -> list[NodeState]:
        """`HavePodsWithAffinityList`."""
        if self._affinity is None:
            self._affinity = [n for n in self.nodes if n.usage.with_affinity]
        return self._affinity

    def have_pods_with_required_anti_affinity(self) -> list[NodeState]:
        """`HavePodsWithRequiredAntiAffinityList`."""
        if self._anti_affinity is None:
            self._anti_affinity = [n for n in self.nodes if n.usage.with_required_anti_affinity]
        return self._anti_affinity


class SnapshotCounts:
    """Counts a node cache keeps up to date as nodes and pods change, so that a cycle's snapshot
    knows without a scan that no node has images, PreferNoSchedule taints or pods with affinity."""

    __slots__ = ("nodes_with_images", "pods_with_affinity", "pods_with_required_anti_affinity", "soft_tainted")

    def __init__(self) -> None:
        self.nodes_with_images = 0
        self.soft_tainted = 0  # nodes with PreferNoSchedule taints
        self.pods_with_affinity = 0  # over every node's usage (also nodes not (yet) in the cache)
        self.pods_with_required_anti_affinity = 0


class CycleState(dict[str, Any]):
    """Per-cycle plugin data (keyed by plugin name; the cycle's snapshot under `SNAPSHOT_KEY`).
    `clone()` copies each value that has a `clone()` (preemption's dry runs mutate their copy
    through AddPod/RemovePod)."""

    # `PreFilterResult.NodeNames` merged over the PreFilter plugins (None: all nodes), and the
    # plugins that narrowed it
    node_names: frozenset[str] | None = None
    node_names_plugins: tuple[str, ...] = ()

    def restrict(self, names: frozenset[str], plugin: str) -> None:
        """A PreFilter plugin's `PreFilterResult`: only these nodes can fit."""
        self.node_names = names if self.node_names is None else self.node_names & names
        self.node_names_plugins += (plugin,)

    def clone(self) -> CycleState:
        out = CycleState()
        out.node_names, out.node_names_plugins = self.node_names, self.node_names_plugins
        for k, v in self.items():
            out[k] = v.clone() if hasattr(v, "clone") else v
        return out


# ---------------------------------------------------------------------- plugins


class Plugin:
    """A scheduling plugin. Subclasses set `name` and override the extension points they have
    (listed in `points`); the framework calls only those.

    - `pre_filter(state, pod, snapshot)`: None to run Filter, `SKIPPED` to skip this plugin's Filter
      for the cycle, or a rejecting Status (the pod is unschedulable on every node);
    - `filter(state, pod, node)`: None (fits) or a rejecting Status;
    - `add_pod` / `remove_pod(state, pod, other, node)`: update the PreFilter state as if `other`
      were added to / removed from `node` (preemption);
    - `pre_score(state, pod, nodes)`: None, or `SKIPPED` to skip Score for the cycle;
    - `score(state, pod, node)`: a raw score (`score_nodes`: on every feasible node at once);
    - `normalize(state, pod, scores)`: rewrite the raw scores (one per feasible node) to 0..100;
    - `explain(state, pod, node)`: the detail behind a Filter rejection, for `cplane why`.

    `events` lists the cluster events that may help a pod this plugin rejected: only those move the
    pod out of the unschedulable pool (queueing hints).
    """

    name: ClassVar[str] = ""
    points: ClassVar[frozenset[str]] = frozenset()
    # `EventsToRegister`: the cluster events that may make a pod this plugin rejected schedulable
    # (`Resource/Action` names, see `cp.scheduling.events`)
    events: ClassVar[tuple[str, ...]] = ()

    def pre_filter(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> Status | None:
        return None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeState) -> Status | None:
        return None

    def add_pod(self, state: CycleState, pod: PodInfo, other: PodInfo, node: NodeState) -> None:
        return None

    def remove_pod(self, state: CycleState, pod: PodInfo, other: PodInfo, node: NodeState) -> None:
        return None

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeState]) -> Status | None:
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeState) -> int:
        return 0

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeState]) -> list[int]:
        """Score on every node (a plugin may override it to score them all at once, faster)."""
        score = self.score
        return [score(state, pod, n) for n in nodes]

    def normalize(self, state: CycleState, pod: PodInfo, scores: list[int]) -> None:
        return None

    def explain(self, state: CycleState, pod: PodInfo, node: NodeState) -> str:
        """For `cplane why`: what, in detail, made Filter reject the node (which term, which
        constraint and skew); "" when the status's reasons say it all."""
        return ""


def default_normalize(scores: list[int], *, reverse: bool) -> None:
    """`helper.DefaultNormalizeScore`: scale to 0..100 by the highest score (reversed: 100 - that)."""
    top = max(scores, default=0)
    if top == 0:
        if reverse:
            scores[:] = [MAX_NODE_SCORE] * len(scores)
        return
    for i, s in enumerate(scores):
        s = MAX_NODE_SCORE * s // top
        scores[i] = MAX_NODE_SCORE - s if reverse else s


class Profile:
    """One scheduler profile: its name, filter plugins (in order) and weighted score plugins."""

    def __init__(self, *, scheduler_name: str, filters: Sequence[Plugin], scores: Sequence[tuple[Plugin, int]],
                 pre_filters: Sequence[Plugin] | None = None, pre_scores: Sequence[Plugin] | None = None,
                 fused_core: bool = False, percentage_of_nodes_to_score: int | None = None,
                 enabled: Iterable[str] = (), dra_weight: int = 1,
                 plugin_args: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self.scheduler_name = scheduler_name
        # pluginConfig's args by plugin name (for plugins run outside the framework: DefaultPreemption)
        self.plugin_args = dict(plugin_args or {})
        self.filters = list(filters)
        self.scores = list(scores)
        self.pre_filters = list(pre_filters) if pre_filters is not None else [
            p for p in self.filters if "PreFilter" in p.points]
        self.pre_scores = list(pre_scores) if pre_scores is not None else [
            p for p, _w in self.scores if "PreScore" in p.points]
        # The five core filters run fused (`plugins.PodInfo.filter`) and are left out of `filters`.
        self.fused_core = fused_core
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.enabled = frozenset(enabled)
        # DynamicResources runs inside the cycle, not as a Plugin here: its Score weight (0: off)
        self.dra_weight = dra_weight

    def plugin(self, name: str) -> Plugin | None:
        for p in self.filters:
            if p.name == name:
                return p
        for p, _w in self.scores:
            if p.name == name:
                return p
        return None

    def run_pre_filter(self, state: CycleState, pod: PodInfo, snapshot: Snapshot
                       ) -> tuple[list[Plugin], Status | None]:
        """The filter plugins to run on each node (PreFilter skips left out), or the rejection."""
        skipped: set[str] = set()
        state[SNAPSHOT_KEY] = snapshot
        for p in self.pre_filters:
            st = p.pre_filter(state, pod, snapshot)
            if st is None:
                continue
            if st.code == SKIP:
                skipped.add(p.name)
                continue
            if not st.plugin:
                st.plugin = p.name
            return [], st
        if state.node_names is not None and not state.node_names:
            names = state.node_names_plugins
            msg = (f"node(s) didn't satisfy plugin {names[0]}" if len(names) == 1
                   else f"node(s) didn't satisfy plugin(s) [{' '.join(names)}] simultaneously")
            return [], Status(UNRESOLVABLE, [msg], names[0])
        return [p for p in self.filters if p.name not in skipped], None

    @staticmethod
    def run_filters(active: Sequence[Plugin], state: CycleState, pod: PodInfo, node: NodeState) -> Status | None:
        for p in active:
            st = p.filter(state, pod, node)
            if st is not None:
                if not st.plugin:
                    st.plugin = p.name
                return st
        return None

    def run_scores(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeState],
                   extra: Sequence[tuple[str, list[int], int]] = (), skip: Iterable[str] = ()
                   ) -> tuple[list[int], dict[str, list[int]]]:
        """`RunScorePlugins`: the weighted sum per node, and each plugin's normalized scores.
        `extra`: scores computed elsewhere (name, normalized scores, weight), e.g. DynamicResources;
        `skip`: plugins whose scores are among them (a fused fast path)."""
        per_plugin: dict[str, list[int]] = {}
        totals = [0] * len(nodes)
        skipped = frozenset(skip)
        for p, weight in self.scores:
            if p.name in skipped:
                continue
            if "PreScore" in p.points:
                st = p.pre_score(state, pod, nodes)
                if st is not None and st.code == SKIP:
                    continue
            scores = p.score_nodes(state, pod, nodes)
            if "NormalizeScore" in p.points:
                p.normalize(state, pod, scores)
            per_plugin[p.name] = scores
            totals = _add_weighted(totals, scores, weight)
        for name, scores, weight in extra:
            per_plugin[name] = scores
            totals = _add_weighted(totals, scores, weight)
        return totals, per_plugin


def _add_weighted(totals: list[int], scores: list[int], weight: int) -> list[int]:
    """totals + scores * weight, element by element (in C: map over the two lists)."""
    if len(scores) != len(totals):
        raise ValueError(f"{len(scores)} scores for {len(totals)} nodes")
    if not any(scores):  # all zero (or a uniform 0 the plugin left): nothing to add
        return totals
    if weight != 1:
        scores = list(map(weight.__mul__, scores))
    return list(map(operator.add, totals, scores))
