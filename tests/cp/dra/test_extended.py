"""Extended resources backed by DRA: class mapping and the scheduler's special claim."""

from __future__ import annotations

from typing import Any

import pytest

from cp.dra import AllocatedState, Allocator
from cp.dra.extended import (
    EXTENDED_RESOURCE_CLAIM_ANNOTATION,
    ExtendedResourceUnfit,
    build_extended_resource_claim,
    extended_resource_class_mapping,
    find_extended_resource_claim,
    is_dra_extended_resource_name,
    pod_extended_resource_claim_status,
)
from tests.cp.dra.builders import classes, device, device_class, node, rslice

GPU = "example.com/gpu"
GPU_CLASSES = classes(device_class("gpu.example.com", "driver-a", extended=GPU), device_class("fpga", "driver-b"))


def container(name: str, restart: str | None = None, **requests: str) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "image": "pause"}
    if requests:
        c["resources"] = {"requests": {k.replace("__", "/").replace("_", "."): v for k, v in requests.items()}}
    if restart:
        c["restartPolicy"] = restart
    return c


def pod(*containers: dict[str, Any], init: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": list(containers)}
    if init:
        spec["initContainers"] = init
    return {"metadata": {"name": "web", "namespace": "ns", "uid": "pod-uid"}, "spec": spec}


def exact(name: str, cls: str, count: int) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": cls, "allocationMode": "ExactCount", "count": count}}


def m(container_name: str, resource: str, request: str) -> dict[str, str]:
    return {"containerName": container_name, "resourceName": resource, "requestName": request}


def test_resource_names() -> None:
    assert is_dra_extended_resource_name("example.com/gpu")
    assert is_dra_extended_resource_name("deviceclass.resource.kubernetes.io/gpu")
    assert not is_dra_extended_resource_name("cpu")
    assert not is_dra_extended_resource_name("kubernetes.io/something")
    assert not is_dra_extended_resource_name("requests.example.com/gpu")


def test_class_mapping_explicit_and_implicit_with_ties() -> None:
    mapping = extended_resource_class_mapping([
        device_class("old", extended=GPU, created="2026-01-01T00:00:00Z"),
        device_class("new-b", extended=GPU, created="2026-02-01T00:00:00Z"),
        device_class("new-a", extended=GPU, created="2026-02-01T00:00:00Z"),
    ])
    assert mapping[GPU] == "new-a"
    assert mapping["deviceclass.resource.kubernetes.io/old"] == "old"


def test_simple_pod() -> None:
    out = build_extended_resource_claim(pod(container("app", example_com__gpu="2", cpu="1")), GPU_CLASSES)
    assert out is not None
    assert out.claim == {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"namespace": "ns", "generateName": "web-extended-resources-",
                     "annotations": {EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"},
                     "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "web", "uid": "pod-uid",
                                          "controller": True}]},
        "spec": {"devices": {"requests": [exact("container-0-request-1", "gpu.example.com", 2)]}},
    }
    assert out.mappings == [m("app", GPU, "container-0-request-1")]
    assert pod_extended_resource_claim_status("web-extended-resources-abcde", out.mappings) == {
        "requestMappings": out.mappings, "resourceClaimName": "web-extended-resources-abcde"}


def test_implicit_class_name_and_several_containers() -> None:
    p = pod(container("a", deviceclass_resource_kubernetes_io__fpga="1"),
            container("b", example_com__gpu="1", deviceclass_resource_kubernetes_io__fpga="3"))
    out = build_extended_resource_claim(p, GPU_CLASSES)
    assert out is not None
    assert out.claim["spec"]["devices"]["requests"] == [
        exact("container-0-request-0", "fpga", 1),
        exact("container-1-request-0", "fpga", 3),
        exact("container-1-request-1", "gpu.example.com", 1),
    ]
    assert out.mappings == [
        m("a", "deviceclass.resource.kubernetes.io/fpga", "container-0-request-0"),
        m("b", "deviceclass.resource.kubernetes.io/fpga", "container-1-request-0"),
        m("b", GPU, "container-1-request-1"),
    ]


def test_init_containers_reuse_devices_and_only_the_largest_is_requested() -> None:
    p = pod(container("app", example_com__gpu="1"),
            init=[container("init-small", example_com__gpu="2"), container("init-big", example_com__gpu="4"),
                  container("sidecar", "Always", example_com__gpu="1")])
    out = build_extended_resource_claim(p, GPU_CLASSES)
    assert out is not None
    # containers: 0 init-small, 1 init-big, 2 sidecar (long-lived), 3 app (long-lived).
    # init-small reuses sidecar+app (2 devices) fully; init-big reuses them and needs 2 more.
    assert out.claim["spec"]["devices"]["requests"] == [
        exact("container-1-request-0", "gpu.example.com", 2),
        exact("container-2-request-0", "gpu.example.com", 1),
        exact("container-3-request-0", "gpu.example.com", 1),
    ]
    assert out.mappings == [
        m("sidecar", GPU, "container-2-request-0"), m("app", GPU, "container-3-request-0"),
        m("init-small", GPU, "container-2-request-0"), m("init-small", GPU, "container-3-request-0"),
        m("init-big", GPU, "container-2-request-0"), m("init-big", GPU, "container-3-request-0"),
        m("init-big", GPU, "container-1-request-0"),
    ]


def test_short_lived_requests_collapse_to_the_biggest() -> None:
    p = pod(container("app"), init=[container("i1", example_com__gpu="1"), container("i2", example_com__gpu="3")])
    out = build_extended_resource_claim(p, GPU_CLASSES)
    assert out is not None
    assert out.claim["spec"]["devices"]["requests"] == [exact("container-1-request-0", "gpu.example.com", 3)]
    assert out.mappings == [m("i1", GPU, "container-1-request-0"), m("i2", GPU, "container-1-request-0")]


def test_node_with_device_plugin_resource_uses_no_dra() -> None:
    p = pod(container("app", example_com__gpu="1"))
    plugin_node = {**node(), "status": {"allocatable": {GPU: "8"}}}
    assert build_extended_resource_claim(p, GPU_CLASSES, node=plugin_node) is None
    zero_node = {**node(), "status": {"allocatable": {GPU: "0"}}}
    assert build_extended_resource_claim(p, GPU_CLASSES, node=zero_node) is not None


def test_unbacked_resource_does_not_fit() -> None:
    p = pod(container("app", example_com__gpu="1", other_io__thing="1"))
    with pytest.raises(ExtendedResourceUnfit, match=r"other\.io/thing"):
        build_extended_resource_claim(p, GPU_CLASSES, node=node())


def test_pods_without_mapped_resources() -> None:
    assert build_extended_resource_claim(pod(container("app", cpu="1", memory="1Gi")), GPU_CLASSES) is None
    assert build_extended_resource_claim(pod(container("app", example_com__gpu="0")), GPU_CLASSES) is None


def test_find_existing_claim() -> None:
    p = pod(container("app"))
    out = build_extended_resource_claim(pod(container("app", example_com__gpu="1")), GPU_CLASSES)
    assert out is not None
    stored = {**out.claim, "metadata": {**out.claim["metadata"], "name": "web-extended-resources-x"}}
    assert find_extended_resource_claim(p, [{"metadata": {"name": "other"}}, stored]) is stored
    assert find_extended_resource_claim({**p, "metadata": {**p["metadata"], "uid": "other"}}, [stored]) is None


def test_claim_allocates_with_the_allocator() -> None:
    out = build_extended_resource_claim(pod(container("app", example_com__gpu="2")), GPU_CLASSES)
    assert out is not None
    slices = [rslice("s", "node-1", "pool-1", "driver-a", device("gpu-0"), device("gpu-1"))]
    result = Allocator(slices=slices, classes=GPU_CLASSES, allocated=AllocatedState()).allocate(
        node=node(), claims=[out.claim])
    assert result is not None
    assert [r["device"] for r in result[0]["devices"]["results"]] == ["gpu-0", "gpu-1"]
