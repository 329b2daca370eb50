"""The scheduler's node cache: each node pre-digested for the filter and score plugins, what the
pods on it request (from the pod informer plus pods assumed on it by a scheduling cycle whose
binding the informer has not shown yet), and where the round-robin search starts next."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controllers.scheduler.config import TERMINAL
from cp.objects import controller_uid_of, meta_of, spec_of, status_of, uid_of
from cp.scheduling import framework, plugins

PodUsage = tuple[str, framework.PodInfo]  # (node, the pod as the plugins see it)
NodeEntry = framework.NodeState


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
                status_of(old).get("allocatable") != status_of(node).get("allocatable") or \
                status_of(old).get("images") != status_of(node).get("images"):
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
                usage.remove(old[1].req, old[1].owner, old[1])
                if usage.pods <= 0 and old[0] not in self.nodes:
                    del self.usage[old[0]]
        if value is not None:
            self.pod_usage[uid] = value
            usage = self.usage.get(value[0])
            if usage is None:
                usage = self.usage[value[0]] = plugins.NodeUsage()
            usage.add(value[1].req, value[1].owner, value[1])

    def account_pod(self, pod: dict[str, Any]) -> None:
        uid = uid_of(pod)
        node = str(spec_of(pod).get("nodeName") or "")
        if node and status_of(pod).get("phase") not in TERMINAL:
            self.assumed_pods.pop(uid, None)
            current = self.pod_usage.get(uid)
            if current is None or current[0] != node or (current[1].pod is not pod and (
                    meta_of(current[1].pod).get("labels") != meta_of(pod).get("labels")
                    or meta_of(current[1].pod).get("deletionTimestamp") != meta_of(pod).get("deletionTimestamp"))):
                self.set_usage(uid, (node, framework.PodInfo(pod, owner=controller_uid_of(pod))))
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
