"""ImageLocality: upstream's image_locality_test.go cases (spread-scaled image sizes, 23 MB minimum,
1000 MB per container maximum, `:latest` normalization)."""

from __future__ import annotations

from typing import Any

import pytest

from cp.scheduling.plugins.imagelocality import ImageLocality, normalized_image_name
from tests.cp.scheduling.builders import make_node, make_pod, run_scores, states

MB = 1024 * 1024


def image_pod(*images: str, inits: tuple[str, ...] = ()) -> dict[str, Any]:
    pod = make_pod()
    pod["spec"]["containers"] = [{"name": f"c{i}", "image": im} for i, im in enumerate(images)]
    if inits:
        pod["spec"]["initContainers"] = [{"name": f"i{i}", "image": im} for i, im in enumerate(inits)]
    return pod


# upstream's node images
NODE_40_140_2000 = [{"names": ["gcr.io/40:latest", "gcr.io/40:v1"], "sizeBytes": 40 * MB},
                    {"names": ["gcr.io/300:latest", "gcr.io/300:v1"], "sizeBytes": 300 * MB},
                    {"names": ["gcr.io/2000:latest"], "sizeBytes": 2000 * MB}]
NODE_250_10 = [{"names": ["gcr.io/250:latest"], "sizeBytes": 250 * MB},
               {"names": ["gcr.io/10:latest", "gcr.io/10:v1"], "sizeBytes": 10 * MB}]
NODE_WITH_LARGE_IMAGE = [{"names": ["gcr.io/600:latest"], "sizeBytes": 600 * MB}]


@pytest.mark.parametrize(("name", "pod", "nodes", "want"), [
    # node1: 40 MB * 1/2 = 20 MB < 23 MB -> 0; node2: 250 MB * 1/2 = 125 MB -> 100*(125-23)/(2000-23) = 5
    ("two images spread on two nodes, prefer the larger image one", image_pod("gcr.io/40", "gcr.io/250"),
     [NODE_40_140_2000, NODE_250_10], [0, 5]),
    # node1: (40 + 300) * 1/2 = 170 MB -> 100*(170-23)/(2000-23) = 7; node2: 10 * 1/2 = 5 MB -> 0
    ("two images on one node, prefer this node", image_pod("gcr.io/40", "gcr.io/300"),
     [NODE_40_140_2000, NODE_250_10], [7, 0]),
    # node1: 2000 * 1/2 = 1000 MB -> 100*(1000-23)/(2000-23) = 49; node2: 10 * 1/2 -> 0
    ("if exceed limit, use limit", image_pod("gcr.io/2000", "gcr.io/10"), [NODE_40_140_2000, NODE_250_10], [49, 0]),
    # node1: 2000 * 1/3 = 666 MB -> 100*(666-23)/(2000-23) = 32; node2: 10 * 1/3 -> 0; node3 nothing
    ("if exceed limit, use limit (with node which has no images present)", image_pod("gcr.io/2000", "gcr.io/10"),
     [NODE_40_140_2000, NODE_250_10, []], [32, 0, 0]),
    # two containers: the maximum is 2000 MB; node1 2000 * 1/2 = 1000 MB -> 100*977/1977 = 49;
    # node2 600 * 1/2 = 300 MB -> 100*277/1977 = 14
    ("pod with multiple large images", image_pod("gcr.io/2000", "gcr.io/600"),
     [NODE_40_140_2000, NODE_WITH_LARGE_IMAGE], [49, 14]),
    # init containers count as containers and their images as the pod's
    ("pod with init container images", image_pod("gcr.io/10", inits=("gcr.io/2000",)),
     [NODE_40_140_2000, NODE_250_10], [49, 0]),
    # the same image on every node counts little: 600 * 2/2 = 600 MB on both -> 100*577/977 = 59
    ("an image on every node", image_pod("gcr.io/600"), [NODE_WITH_LARGE_IMAGE, NODE_WITH_LARGE_IMAGE], [59, 59]),
])
def test_score(name: str, pod: dict[str, Any], nodes: list[Any], want: list[int]) -> None:
    ns = states([make_node(f"node{i}", images=im) for i, im in enumerate(nodes)])
    got = run_scores(ImageLocality(), pod, ns)
    assert (got or [0] * len(ns)) == want


def test_no_feasible_node_with_the_images_skips_the_score() -> None:
    ns = states([make_node("a"), make_node("b", images=NODE_250_10)])
    assert run_scores(ImageLocality(), image_pod("gcr.io/40"), ns) is None


@pytest.mark.parametrize(("name", "want"), [
    ("root", "root:latest"), ("root:tag", "root:tag"), ("gcr.io:5000/root", "gcr.io:5000/root:latest"),
    ("root@" + "sha256:" + "0" * 64, "root@sha256:" + "0" * 64),
])
def test_normalized_image_name(name: str, want: str) -> None:
    assert normalized_image_name(name) == want
