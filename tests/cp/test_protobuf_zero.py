"""`cp.protobuf.zero`: the fields Go's JSON encoder always writes, filled in as kube-apiserver's round trip
through the typed struct has them. Out of scope: defaulting (tests/cp/test_defaulting.py)."""

from __future__ import annotations

from cp import defaulting
from cp.protobuf import zero


def test_node_system_info_gets_every_field() -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"},
            "status": {"nodeInfo": {"kubeletVersion": "v1.37.0"}, "conditions": [{"type": "Ready", "status": "True"}]}}
    zero.fill(node, api_version="v1", kind="Node")
    assert node["status"]["nodeInfo"] == {
        "machineID": "", "systemUUID": "", "bootID": "", "kernelVersion": "", "osImage": "",
        "containerRuntimeVersion": "", "kubeletVersion": "v1.37.0", "kubeProxyVersion": "",
        "operatingSystem": "", "architecture": ""}
    assert node["status"]["daemonEndpoints"] == {"kubeletEndpoint": {"Port": 0}}
    assert node["spec"] == {}
    # Zero values Go writes as null (a zero Time, nil slices) are left out.
    assert node["status"]["conditions"] == [{"type": "Ready", "status": "True"}]
    assert "metadata" in node and node["metadata"] == {"name": "n"}


def test_nested_structs_lists_and_maps() -> None:
    deploy = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
              "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}}
    zero.fill(deploy, api_version="apps/v1", kind="Deployment")
    assert deploy["spec"]["template"]["spec"]["containers"] == [{"name": "c", "image": "i", "resources": {}}]
    assert deploy["spec"]["strategy"] == {} and deploy["status"] == {}
    assert "selector" not in deploy["spec"]  # a pointer: null in Go, left out
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"},
             "spec": {"scopeSelector": {"matchExpressions": [{"operator": "Exists"}]}}}
    zero.fill(quota, api_version="v1", kind="ResourceQuota")
    assert quota["spec"]["scopeSelector"]["matchExpressions"] == [{"operator": "Exists", "scopeName": ""}]


def test_present_values_kept_and_unknown_kinds_untouched() -> None:
    obj = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "spec": None,
           "status": {"nodeInfo": {"architecture": "arm64"}}}
    zero.fill(obj, api_version="v1", kind="Node")
    assert obj["spec"] == {}  # Go decodes null into a struct as its zero value
    assert obj["status"]["nodeInfo"]["architecture"] == "arm64"
    sim = {"apiVersion": "sim.cplane.dev/v1alpha1", "kind": "Clock", "metadata": {"name": "c"}}
    zero.fill(sim, api_version="sim.cplane.dev/v1alpha1", kind="Clock")
    assert sim == {"apiVersion": "sim.cplane.dev/v1alpha1", "kind": "Clock", "metadata": {"name": "c"}}


def test_defaulting_fills_them_last() -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "status": {"nodeInfo": {}}}
    defaulting.apply_defaults(node, group="", version="v1", kind="Node")
    assert node["status"]["nodeInfo"]["kubeProxyVersion"] == ""
