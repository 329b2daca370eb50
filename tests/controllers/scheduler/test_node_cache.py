"""The scheduler's node cache (issue #22): the counts a cycle's snapshot reads instead of scanning
every node, and the masks of nodes known not to fit a claim signature."""

from __future__ import annotations

from typing import Any

from controllers.scheduler.nodes import NodeCache


def _node(name: str, *, images: bool = False, soft_taint: bool = False, labels: dict[str, str] | None = None
          ) -> dict[str, Any]:
    node: dict[str, Any] = {"metadata": {"name": name, "labels": labels or {}}, "spec": {},
                            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}
    if images:
        node["status"]["images"] = [{"names": ["registry.k8s.io/pause:3.10"], "sizeBytes": 1000}]
    if soft_taint:
        node["spec"]["taints"] = [{"key": "k", "effect": "PreferNoSchedule"}]
    return node


def _pod(uid: str, node: str, *, affinity: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeName": node, "containers": [{"name": "c", "image": "i"}]}
    if affinity:
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"a": "b"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    return {"metadata": {"name": uid, "namespace": "default", "uid": uid}, "spec": spec, "status": {}}


def test_counts_follow_nodes_and_pods() -> None:
    cache = NodeCache()
    cache.node_set(_node("a", images=True))
    cache.node_set(_node("b", soft_taint=True))
    assert (cache.counts.nodes_with_images, cache.counts.soft_tainted) == (1, 1)
    cache.node_set(_node("a"))  # images gone
    cache.node_set(_node("b"))  # taint gone
    assert (cache.counts.nodes_with_images, cache.counts.soft_tainted) == (0, 0)
    cache.account_pod(_pod("p1", "a", affinity=True))
    cache.account_pod(_pod("p2", "b"))
    assert (cache.counts.pods_with_affinity, cache.counts.pods_with_required_anti_affinity) == (1, 1)
    cache.pod_deleted(_pod("p1", "a", affinity=True))
    assert (cache.counts.pods_with_affinity, cache.counts.pods_with_required_anti_affinity) == (0, 0)
    cache.node_deleted(_node("b"))
    cache.node_set(_node("c", images=True))
    assert cache.counts.nodes_with_images == 1


def test_masks_are_cleared_as_nodes_change() -> None:
    cache = NodeCache()
    for name in ("a", "b", "c"):
        cache.node_set(_node(name))
    mask, fits = cache.masks(b"sig", 1, 0)
    assert mask == fits == bytearray(3)
    mask[1] = mask[2] = 1
    fits[0] = 1
    assert cache.masks(b"sig", 1, 0) == (mask, fits)  # the same while nothing changed
    cache.dra_changed("b")  # a device of b's pools allocated or freed
    assert (mask, fits) == (bytearray([0, 0, 1]), bytearray([1, 0, 0]))
    cache.account_pod(_pod("p1", "a"))  # a pod on a: known to fit no longer, known misfits stay
    assert (mask, fits) == (bytearray([0, 0, 1]), bytearray(3))
    fits[0] = 1
    cache.pod_deleted(_pod("p1", "a"))
    assert fits == bytearray(3)
    cache.node_set(_node("c", labels={"zone": "z"}))  # relabelled: its answers may change
    assert mask == bytearray(3)
    fits[1] = 1
    cache.node_set(_node("b", soft_taint=True))  # tainted: the core filters have something to say
    assert fits == bytearray(3)
    mask[0] = 1
    assert cache.masks(b"sig", 2, 0) == (bytearray(3), bytearray(3))  # a new allocator generation
    assert cache.masks(b"sig", 2, 1) == (bytearray(3), bytearray(3))  # a shared pool changed
    kept, _ = cache.masks(b"sig", 2, 1)
    kept[0] = 1
    cache.node_set(_node("d"))  # positions may move: every mask dropped
    assert cache.masks(b"sig", 2, 1) == (bytearray(4), bytearray(4))
