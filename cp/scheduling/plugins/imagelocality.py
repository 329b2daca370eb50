"""ImageLocality (pure): favours nodes that already have the pod's container images
(`status.images`), each image's size scaled by the share of nodes that have it (so an image on every
node counts little), the sum clamped between 23 MiB and 1000 MiB per container and mapped to 0..100."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from cp.scheduling import framework, profiles

__all__ = ["ImageLocality", "calculate_priority", "normalized_image_name"]

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


def normalized_image_name(name: str) -> str:
    """An image without a tag gets `:latest`."""
    if name.rfind(":") <= name.rfind("/"):
        name += ":latest"
    return name


def calculate_priority(sum_scores: int, num_containers: int) -> int:
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    if sum_scores < MIN_THRESHOLD:
        sum_scores = MIN_THRESHOLD
    elif sum_scores > max_threshold:
        sum_scores = max_threshold
    return 100 * (sum_scores - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)


class _State:
    __slots__ = ("containers", "images", "num_nodes", "spread")

    def __init__(self, images: list[str], containers: int, num_nodes: int, spread: dict[str, int]) -> None:
        self.images = images
        self.containers = containers
        self.num_nodes = num_nodes
        self.spread = spread  # image -> number of nodes having it


class ImageLocality(framework.Plugin):
    name: ClassVar[str] = "ImageLocality"
    points: ClassVar[frozenset[str]] = frozenset({"PreScore", "Score"})
    events: ClassVar[tuple[str, ...]] = ()

    def pre_score(self, state: framework.CycleState, pod: framework.PodInfo,
                  nodes: Sequence[framework.NodeState]) -> framework.Status | None:
        """Counts, over all the snapshot's nodes, those having each of the pod's images; skips the
        Score when no feasible node has any of them (every score would be 0)."""
        snapshot: framework.Snapshot | None = state.get(framework.SNAPSHOT_KEY)
        if snapshot is not None and snapshot.nodes_with_images == 0:
            return framework.SKIPPED  # no node lists images (the node cache counts them)
        spec = pod.pod.get("spec") or {}
        containers = [c for group in ("initContainers", "containers") for c in spec.get(group) or ()]
        images = [normalized_image_name(str(c.get("image") or "")) for c in containers]
        wanted = set(images)
        if not any(n.info.images and not wanted.isdisjoint(n.info.images) for n in nodes):
            return framework.SKIPPED
        all_nodes = snapshot.nodes if snapshot is not None else nodes
        spread = dict.fromkeys(wanted, 0)
        for n in all_nodes:
            if n.info.images:
                for name in wanted.intersection(n.info.images):
                    spread[name] += 1
        state["PreScore" + self.name] = _State(images, len(containers), len(all_nodes), spread)
        return None

    def score(self, state: framework.CycleState, pod: framework.PodInfo, node: framework.NodeState) -> int:
        s: _State | None = state.get("PreScore" + self.name)
        if s is None:
            return 0
        have = node.info.images
        total = 0
        for image in s.images:
            size = have.get(image)
            if size is not None:
                total += int(float(size) * (float(s.spread[image]) / float(s.num_nodes)))
        return calculate_priority(total, s.containers)


profiles.PLUGINS[ImageLocality.name] = lambda _args: ImageLocality()
