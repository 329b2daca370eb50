"""The scheduler's node cache: each node pre-digested for the filter and score plugins, what the
pods on it request (from the pod informer plus pods assumed on it by a scheduling cycle whose
binding the informer has not shown yet), and where the round-robin search starts next."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controllers.scheduler.config import TERMINAL
from cp.objects import controller_uid_of, meta_of, spec_of, status_of, uid_of
from cp.scheduling import framework, plugins

_CLAIM_STATUSES = "nodeAllocatableResourceClaimStatuses"
PodUsage = tuple[str, framework.PodInfo]  # (node, the pod as the plugins see it)
NodeEntry = framework.NodeState


class NodeCache:
    def __init__(self, *, node_allocatable: bool = False) -> None:
        # DRANodeAllocatableResources: a pod's `status.nodeAllocatableResourceClaimStatuses` count
        # in what it takes of its node
        self.node_allocatable = node_allocatable
        self.nodes: dict[str, NodeEntry] = {}
        # nodes with PreferNoSchedule taints, with images; pods with (anti-)affinity: kept up to date
        # so that a cycle's snapshot needs no scan for them
        self.counts = framework.SnapshotCounts()
        self.usage: dict[str, plugins.NodeUsage] = {}
        self.pod_usage: dict[str, PodUsage] = {}  # pod uid -> (node, req, owner)
        self.assumed_pods: dict[str, str] = {}  # pod uid -> node, until the informer shows it bound
        self.next_start = 0
        # Per claim-spec signature, two masks over `nodes` by position (one byte per node):
        # - infeasible: the node's cached DynamicResources answer is "cannot allocate" (1), so the
        #   filter loop skips runs of them with `bytearray.find` instead of visiting each;
        # - feasible: the node takes a pod the core filters have nothing to say about (no taint, a
        #   pod slot free) and its cached answer is an allocation (1), so runs of them are taken
        #   as they are, in C.
        # A node's bytes are cleared whenever its answer may change (a device of its pools
        # allocated or freed, its labels changed, its cached answers dropped), its feasible byte
        # also when a pod on it or the node itself changes; all are dropped when the allocator, a
        # shared pool or the set of nodes changes.
        self.members = 0  # bumped when a node is added or deleted (positions move)
        self._masks: dict[bytes, tuple[bytearray, bytearray]] = {}
        self._masks_key: tuple[int, int, int] = (-1, -1, -1)
        self._positions: dict[str, int] | None = None

    # ------------------------------------------------------------------ nodes

    def node_set(self, node: dict[str, Any]) -> None:
        name = str(meta_of(node).get("name") or "")
        entry = self.nodes.get(name)
        if entry is None:
            usage = self.usage.get(name)
            if usage is None:
                usage = self.usage[name] = plugins.NodeUsage()
            entry = self.nodes[name] = NodeEntry(node, usage)
            self._count(entry, 1)
            self.members += 1
            return
        old = entry.info.node
        if meta_of(old).get("labels") != meta_of(node).get("labels"):
            entry.dra_cache.clear()
            self.dra_changed(name)
        if meta_of(old).get("labels") != meta_of(node).get("labels") or spec_of(old) != spec_of(node) or \
                status_of(old).get("allocatable") != status_of(node).get("allocatable") or \
                status_of(old).get("images") != status_of(node).get("images"):
            self._count(entry, -1)
            entry.info.update(node)
            self._count(entry, 1)
            self.dra_changed(name)  # (the feasible byte: taints, allocatable)
        else:
            entry.info.node = node

    @property
    def soft_tainted(self) -> int:
        return self.counts.soft_tainted

    def _count(self, entry: NodeEntry, sign: int) -> None:
        self.counts.soft_tainted += sign * bool(entry.info.soft_taints)
        self.counts.nodes_with_images += sign * bool(entry.info.images)

    def node_deleted(self, node: dict[str, Any]) -> None:
        name = str(meta_of(node).get("name") or "")
        entry = self.nodes.pop(name, None)
        if entry is not None:
            self.members += 1
            self._count(entry, -1)
            if entry.usage.pods <= 0:
                self.usage.pop(name, None)

    # ------------------------------------------------------------------ known DRA misfits

    def masks(self, signature: bytes, gen: int, shared: int) -> tuple[bytearray, bytearray]:
        """The (infeasible, feasible) masks for claims of this signature (allocator generation
        `gen`, shared-pool version `shared`), one byte per node of `nodes` in its order; the caller
        sets bytes from valid cached answers."""
        key = (gen, shared, self.members)
        if key != self._masks_key:
            self._masks.clear()
            self._masks_key = key
            self._positions = None
        masks = self._masks.get(signature)
        if masks is None:
            if len(self._masks) >= 64:
                self._masks.clear()
            masks = self._masks[signature] = (bytearray(len(self.nodes)), bytearray(len(self.nodes)))
        return masks

    def _position(self, name: str) -> int | None:
        if self._positions is None:
            self._positions = {n: i for i, n in enumerate(self.nodes)}
        return self._positions.get(name)

    def dra_changed(self, name: str) -> None:
        """The node's cached DynamicResources answers are stale: it is no longer known to fit or
        not to fit."""
        if not self._masks:
            return
        i = self._position(name)
        if i is not None:
            for infeasible, feasible in self._masks.values():
                infeasible[i] = feasible[i] = 0

    def _usage_changed(self, name: str) -> None:
        """A pod on the node came or went: it is no longer known to have a pod slot free."""
        if not self._masks:
            return
        i = self._position(name)
        if i is not None:
            for _infeasible, feasible in self._masks.values():
                feasible[i] = 0

    # ------------------------------------------------------------------ pods

    def set_usage(self, uid: str, value: PodUsage | None) -> None:
        counts = self.counts
        old = self.pod_usage.pop(uid, None)
        if old is not None:
            self._usage_changed(old[0])
            usage = self.usage.get(old[0])
            if usage is not None:
                a, r = usage.with_affinity, usage.with_required_anti_affinity
                usage.remove(old[1].req, old[1].owner, old[1])
                counts.pods_with_affinity += usage.with_affinity - a
                counts.pods_with_required_anti_affinity += usage.with_required_anti_affinity - r
                if usage.pods <= 0 and old[0] not in self.nodes:
                    counts.pods_with_affinity -= usage.with_affinity
                    counts.pods_with_required_anti_affinity -= usage.with_required_anti_affinity
                    del self.usage[old[0]]
        if value is not None:
            self._usage_changed(value[0])
            self.pod_usage[uid] = value
            usage = self.usage.get(value[0])
            if usage is None:
                usage = self.usage[value[0]] = plugins.NodeUsage()
            a, r = usage.with_affinity, usage.with_required_anti_affinity
            usage.add(value[1].req, value[1].owner, value[1])
            counts.pods_with_affinity += usage.with_affinity - a
            counts.pods_with_required_anti_affinity += usage.with_required_anti_affinity - r

    def account_pod(self, pod: dict[str, Any]) -> None:
        uid = uid_of(pod)
        node = str(spec_of(pod).get("nodeName") or "")
        if node and status_of(pod).get("phase") not in TERMINAL:
            self.assumed_pods.pop(uid, None)
            current = self.pod_usage.get(uid)
            if current is None or current[0] != node or (current[1].pod is not pod and (
                    meta_of(current[1].pod).get("labels") != meta_of(pod).get("labels")
                    or meta_of(current[1].pod).get("deletionTimestamp") != meta_of(pod).get("deletionTimestamp")
                    or (self.node_allocatable and status_of(current[1].pod).get(_CLAIM_STATUSES)
                        != status_of(pod).get(_CLAIM_STATUSES)))):
                req = plugins.pod_requests(pod, node_allocatable_claims=self.node_allocatable)
                self.set_usage(uid, (node, framework.PodInfo(pod, req, owner=controller_uid_of(pod))))
        elif uid not in self.assumed_pods:
            self.set_usage(uid, None)

    def pod_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.account_pod(new)

    def pod_deleted(self, pod: dict[str, Any]) -> None:
        uid = uid_of(pod)
        self.assumed_pods.pop(uid, None)
        self.set_usage(uid, None)

    def assume_pod(self, pod: framework.PodInfo, node: str) -> None:
        """Reserve: the pod counts on `node` until the informer shows it bound (or it is forgotten)."""
        self.assumed_pods[pod.uid] = node
        self.set_usage(pod.uid, (node, pod))

    def forget_pod(self, pod: Mapping[str, Any], current: dict[str, Any] | None) -> None:
        """Undo `assume_pod`; the informer's view of the pod (`current`, if any) counts again."""
        uid = uid_of(pod)
        if self.assumed_pods.pop(uid, None) is not None:
            self.set_usage(uid, None)
            if current is not None and uid_of(current) == uid:
                self.account_pod(current)
