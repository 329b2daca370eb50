"""The scheduler's node cache: each node pre-digested for the filter and score plugins, what the
pods on it request (from the pod informer plus pods assumed on it by a scheduling cycle whose
binding the informer has not shown yet), and where the round-robin search starts next."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controllers.scheduler.config import TERMINAL
from cp.objects import controller_uid_of, meta_of, spec_of, status_of, uid_of
from cp.scheduling import plugins

PodUsage = tuple[str, plugins.PodRequests, str]  # (node, requests, controller uid)


class NodeEntry:
    """A node as the scheduler sees it: its pre-digested info, a per-node cache of DRA results and
    a version bumped whenever a device in one of its pools is allocated or freed."""

    __slots__ = ("dra_cache", "dra_version", "info", "name", "usage")

    def __init__(self, node: dict[str, Any], usage: plugins.NodeUsage) -> None:
        self.info = plugins.NodeInfo(node)
        self.name = self.info.name
        self.usage = usage  # what the pods on the node request (shared with NodeCache.usage)
        # claim-spec signature -> (allocator generation, dra_version, shared version, answer)
        self.dra_cache: dict[bytes, tuple[int, int, int, Any]] = {}
        self.dra_version = 0

    @property
    def node(self) -> dict[str, Any]:
        return self.info.node  # type: ignore[return-value]


class NodeCache:
    def __init__(self) -> None:
        self.nodes: dict[str, NodeEntry] = {}
        self.soft_tainted = 0  # nodes with PreferNoSchedule taints
        self.usage: dict[str, plugins.NodeUsage] = {}
        self.pod_usage: dict[str, PodUsage] = {}  # pod uid -> (node, req, owner)
        self.assumed_pods: dict[str, str] = {}  # pod uid -> node, until the informer shows it bound
        self.next_start = 0

    # ------------------------------------------------------------------ nodes

    def node_set(self, node: dict[str, Any]) -> None:
        name = str(meta_of(node).get("name") or "")
        entry = self.nodes.get(name)
        if entry is None:
            usage = self.usage.get(name)
            if usage is None:
                usage = self.usage[name] = plugins.NodeUsage()
            entry = self.nodes[name] = NodeEntry(node, usage)
            self.soft_tainted += bool(entry.info.soft_taints)
            return
        old = entry.info.node
        if meta_of(old).get("labels") != meta_of(node).get("labels"):
            entry.dra_cache.clear()
        if meta_of(old).get("labels") != meta_of(node).get("labels") or spec_of(old) != spec_of(node) or \
                status_of(old).get("allocatable") != status_of(node).get("allocatable"):
            self.soft_tainted -= bool(entry.info.soft_taints)
            entry.info.update(node)
            self.soft_tainted += bool(entry.info.soft_taints)
        else:
            entry.info.node = node

    def node_deleted(self, node: dict[str, Any]) -> None:
        name = str(meta_of(node).get("name") or "")
        entry = self.nodes.pop(name, None)
        if entry is not None:
            self.soft_tainted -= bool(entry.info.soft_taints)
            if entry.usage.pods <= 0:
                self.usage.pop(name, None)

    # ------------------------------------------------------------------ pods

    def set_usage(self, uid: str, value: PodUsage | None) -> None:
        old = self.pod_usage.pop(uid, None)
        if old is not None:
            usage = self.usage.get(old[0])
            if usage is not None:
                usage.remove(old[1], old[2])
                if usage.pods <= 0 and old[0] not in self.nodes:
                    del self.usage[old[0]]
        if value is not None:
            self.pod_usage[uid] = value
            usage = self.usage.get(value[0])
            if usage is None:
                usage = self.usage[value[0]] = plugins.NodeUsage()
            usage.add(value[1], value[2])

    def account_pod(self, pod: dict[str, Any]) -> None:
        uid = uid_of(pod)
        node = str(spec_of(pod).get("nodeName") or "")
        if node and status_of(pod).get("phase") not in TERMINAL:
            self.assumed_pods.pop(uid, None)
            current = self.pod_usage.get(uid)
            if current is None or current[0] != node:
                self.set_usage(uid, (node, plugins.pod_requests(pod), controller_uid_of(pod)))
        elif uid not in self.assumed_pods:
            self.set_usage(uid, None)

    def pod_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.account_pod(new)

    def pod_deleted(self, pod: dict[str, Any]) -> None:
        uid = uid_of(pod)
        self.assumed_pods.pop(uid, None)
        self.set_usage(uid, None)

    def assume_pod(self, pod: dict[str, Any], node: str, req: plugins.PodRequests) -> None:
        """Reserve: the pod counts on `node` until the informer shows it bound (or it is forgotten)."""
        uid = uid_of(pod)
        self.assumed_pods[uid] = node
        self.set_usage(uid, (node, req, controller_uid_of(pod)))

    def forget_pod(self, pod: Mapping[str, Any], current: dict[str, Any] | None) -> None:
        """Undo `assume_pod`; the informer's view of the pod (`current`, if any) counts again."""
        uid = uid_of(pod)
        if self.assumed_pods.pop(uid, None) is not None:
            self.set_usage(uid, None)
            if current is not None and uid_of(current) == uid:
                self.account_pod(current)
