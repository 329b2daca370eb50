"""cp.patching: JSON patch, merge patch, strategic merge patch, apply bodies.

Expected values come from the upstream semantics (RFC 6902, RFC 7386 and apimachinery `strategicpatch`,
`apiserver/pkg/endpoints/handlers/patch.go`), not from running this code. Note one upstream rule that surprises:
without `$setElementOrder`, a strategic merge puts the patch items in patch order and interleaves the untouched
items in their old order; a new item precedes the untouched items that follow no patch item, so adding one
element with a bare patch puts it first (`[new, old...]`). The strategic-merge expectations were also
cross-checked against Go's implementation through `kubectl patch --local --type strategic`.
"""

from __future__ import annotations

import copy
import json
import time
from typing import Any

import pytest

from cp import errors, patching, schemas

CORE = ("", "v1", "Pod")
APPS = ("apps", "v1", "Deployment")
NODE = ("", "v1", "Node")
CLAIM = ("resource.k8s.io", "v1", "ResourceClaim")
PDB = ("policy", "v1", "PodDisruptionBudget")
WIDGET = ("example.com", "v1", "Widget")  # no schema


def pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": "p", "namespace": "default", "resourceVersion": "104",
            "labels": {"app": "web", "tier": "fe"},
            "finalizers": ["a", "b"],
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs1", "uid": "u1",
                                 "controller": True}],
        },
        "spec": {
            "containers": [
                {"name": "app", "image": "app:1",
                 "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                 "ports": [{"containerPort": 80, "protocol": "TCP"}],
                 "resources": {"limits": {"cpu": "1"}}},
                {"name": "side", "image": "side:1"},
            ],
            "volumes": [{"name": "data", "emptyDir": {}}],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": "claim-1"}],
            "tolerations": [{"key": "k1", "operator": "Exists"}],
            "securityContext": {"runAsUser": 1000},
        },
        "status": {"phase": "Running",
                   "conditions": [{"type": "Ready", "status": "False"}, {"type": "PodScheduled", "status": "True"}]},
    }


def deployment() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "annotations": {"keep": "me"}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
            "template": {"metadata": {"labels": {"app": "web"}},
                         "spec": {"containers": [{"name": "nginx", "image": "nginx:1",
                                                  "env": [{"name": "A", "value": "1"}]}]}},
        },
    }


def node() -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
        "spec": {"podCIDRs": ["10.0.0.0/24"]},
        "status": {
            "conditions": [
                {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory"},
                {"type": "Ready", "status": "False", "reason": "KubeletNotReady"},
            ],
            "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}, {"type": "Hostname", "address": "n1"}],
        },
    }


def claim() -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "default"},
        "spec": {"devices": {
            "requests": [{"name": "a", "exactly": {"deviceClassName": "gpu", "count": 1}},
                         {"name": "b", "exactly": {"deviceClassName": "nic"}}],
            "constraints": [{"requests": ["a", "b"], "matchAttribute": "example.com/numa"}],
        }},
        "status": {"reservedFor": [{"resource": "pods", "name": "p1", "uid": "u1"}]},
    }


def pdb() -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "b"},
            "spec": {"minAvailable": 1,
                     "selector": {"matchLabels": {"a": "1"},
                                  "matchExpressions": [{"key": "k", "operator": "Exists"}]}}}


def widget() -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
            "spec": {"items": [{"name": "a", "size": 1}], "m": {"k": 1, "j": 2}, "tags": ["x"]}}


def smp(obj: dict[str, Any], patch: Any, gvk: tuple[str, str, str] = CORE) -> dict[str, Any]:
    group, version, kind = gvk
    return patching.apply_patch(obj, json.dumps(patch).encode(), content_type=patching.STRATEGIC_MERGE_PATCH,
                                group=group, version=version, kind=kind)


def at(obj: Any, path: str) -> Any:
    for part in path.split("."):
        obj = obj[int(part)] if isinstance(obj, list) else obj[part]
    return obj


def directives(value: Any, path: str = "") -> list[str]:
    """Every `$`-directive key anywhere in value."""
    found = []
    if isinstance(value, dict):
        for k, v in value.items():
            if k in ("$patch", "$retainKeys") or k.startswith(("$setElementOrder", "$deleteFromPrimitiveList")):
                found.append(f"{path}.{k}")
            found += directives(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += directives(v, f"{path}[{i}]")
    return found


APP = pod()["spec"]["containers"][0]
SIDE = pod()["spec"]["containers"][1]

# (id, make object, gvk, patch, path to compare, expected value there)
SMP_CASES: list[tuple[str, Any, tuple[str, str, str], Any, str, Any]] = [
    ("containers merged by name", pod, CORE,
     {"spec": {"containers": [{"name": "side", "image": "side:2"}]}},
     "spec.containers", [APP, {"name": "side", "image": "side:2"}]),
    ("env merged by name", pod, CORE,
     {"spec": {"containers": [{"name": "app", "env": [{"name": "B", "value": "3"}]}]}},
     "spec.containers.0.env", [{"name": "A", "value": "1"}, {"name": "B", "value": "3"}]),
    ("container order kept when an existing one changes", pod, CORE,
     {"spec": {"containers": [{"name": "app", "image": "app:2"}]}},
     "spec.containers", [{**APP, "image": "app:2"}, SIDE]),
    ("new env var without setElementOrder goes first", pod, CORE,
     {"spec": {"containers": [{"name": "app", "env": [{"name": "C", "value": "3"}]}]}},
     "spec.containers.0.env", [{"name": "C", "value": "3"}, {"name": "A", "value": "1"}, {"name": "B", "value": "2"}]),
    ("new env var follows the patch item before it", pod, CORE,
     {"spec": {"containers": [{"name": "app", "env": [{"name": "A", "value": "9"}, {"name": "C", "value": "3"}]}]}},
     "spec.containers.0.env", [{"name": "A", "value": "9"}, {"name": "C", "value": "3"}, {"name": "B", "value": "2"}]),
    ("new container goes first", pod, CORE,
     {"spec": {"containers": [{"name": "new", "image": "n:1"}]}},
     "spec.containers", [{"name": "new", "image": "n:1"}, APP, SIDE]),
    ("ports merged by containerPort", pod, CORE,
     {"spec": {"containers": [{"name": "app", "ports": [{"containerPort": 80, "name": "http"},
                                                         {"containerPort": 443, "protocol": "TCP"}]}]}},
     "spec.containers.0.ports", [{"containerPort": 80, "protocol": "TCP", "name": "http"},
                                 {"containerPort": 443, "protocol": "TCP"}]),
    ("finalizers unioned", pod, CORE,
     {"metadata": {"finalizers": ["b", "c"]}}, "metadata.finalizers", ["a", "b", "c"]),
    ("new finalizer alone goes first", pod, CORE,
     {"metadata": {"finalizers": ["c"]}}, "metadata.finalizers", ["c", "a", "b"]),
    ("empty list patch leaves a merge list alone", pod, CORE,
     {"metadata": {"finalizers": []}}, "metadata.finalizers", ["a", "b"]),
    ("deleteFromPrimitiveList", pod, CORE,
     {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a", "zzz"]}}, "metadata.finalizers", ["b"]),
    ("deleteFromPrimitiveList with additions", pod, CORE,
     {"metadata": {"finalizers": ["c"], "$deleteFromPrimitiveList/finalizers": ["b"]}},
     "metadata.finalizers", ["c", "a"]),
    ("setElementOrder on a primitive list", pod, CORE,
     {"metadata": {"$setElementOrder/finalizers": ["b", "a"]}}, "metadata.finalizers", ["b", "a"]),
    ("setElementOrder with an addition", pod, CORE,
     {"metadata": {"$setElementOrder/finalizers": ["a", "c", "b"], "finalizers": ["c"]}},
     "metadata.finalizers", ["a", "c", "b"]),
    ("$patch delete on a list element", pod, CORE,
     {"spec": {"containers": [{"name": "side", "$patch": "delete"}]}}, "spec.containers", [APP]),
    ("$patch delete on env by name, kubectl style", pod, CORE,
     {"spec": {"$setElementOrder/containers": [{"name": "app"}, {"name": "side"}],
               "containers": [{"name": "app", "$setElementOrder/env": [{"name": "A"}],
                               "env": [{"$patch": "delete", "name": "B"}]}]}},
     "spec.containers.0.env", [{"name": "A", "value": "1"}]),
    ("$patch replace on a map", pod, CORE,
     {"metadata": {"labels": {"$patch": "replace", "new": "1"}}}, "metadata.labels", {"new": "1"}),
    ("$patch replace on a struct", pod, CORE,
     {"spec": {"securityContext": {"$patch": "replace", "runAsGroup": 5}}}, "spec.securityContext",
     {"runAsGroup": 5}),
    ("$patch replace on a list", pod, CORE,
     {"spec": {"containers": [{"$patch": "replace"}, {"name": "solo", "image": "solo:1"}]}},
     "spec.containers", [{"name": "solo", "image": "solo:1"}]),
    ("$patch delete on a map removes the field", pod, CORE,
     {"spec": {"securityContext": {"$patch": "delete"}}}, "spec", {k: v for k, v in pod()["spec"].items()
                                                                    if k != "securityContext"}),
    ("retainKeys switches RollingUpdate to Recreate", deployment, APPS,
     {"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": None, "type": "Recreate"}}},
     "spec.strategy", {"type": "Recreate"}),
    ("retainKeys without the explicit null", deployment, APPS,
     {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}, "spec.strategy", {"type": "Recreate"}),
    ("setElementOrder reorders containers", pod, CORE,
     {"spec": {"$setElementOrder/containers": [{"name": "side"}, {"name": "app"}]}},
     "spec.containers", [SIDE, APP]),
    ("kubectl apply body (compat doc section 6)", deployment, APPS,
     {"metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}\n"}},
      "spec": {"replicas": 3, "template": {"spec": {
          "$setElementOrder/containers": [{"name": "nginx"}],
          "containers": [{"$setElementOrder/env": [{"name": "A"}], "env": [{"name": "A", "value": "2"}],
                          "name": "nginx"}]}}}},
     "", None),  # checked in a dedicated test below
    ("resourceClaims merged by name", pod, CORE,
     {"spec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "tmpl"}]}},
     "spec.resourceClaims", [{"name": "gpu", "resourceClaimName": "claim-1", "resourceClaimTemplateName": "tmpl"}]),
    ("resourceClaims retainKeys in an item", pod, CORE,
     {"spec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "tmpl",
                                   "$retainKeys": ["name", "resourceClaimTemplateName"]}]}},
     "spec.resourceClaims", [{"name": "gpu", "resourceClaimTemplateName": "tmpl"}]),
    ("resourceClaims addition", pod, CORE,
     {"spec": {"resourceClaims": [{"name": "fpga", "resourceClaimName": "claim-2"}]}},
     "spec.resourceClaims", [{"name": "fpga", "resourceClaimName": "claim-2"},
                             {"name": "gpu", "resourceClaimName": "claim-1"}]),
    ("volumes retainKeys switches the source", pod, CORE,
     {"spec": {"volumes": [{"name": "data", "configMap": {"name": "cm"}, "$retainKeys": ["configMap", "name"]}]}},
     "spec.volumes", [{"name": "data", "configMap": {"name": "cm"}}]),
    ("reservedFor merged by uid", claim, CLAIM,
     {"status": {"reservedFor": [{"resource": "pods", "name": "p2", "uid": "u2"}]}},
     "status.reservedFor", [{"resource": "pods", "name": "p2", "uid": "u2"},
                            {"resource": "pods", "name": "p1", "uid": "u1"}]),
    ("reservedFor entry deleted by uid", claim, CLAIM,
     {"status": {"reservedFor": [{"$patch": "delete", "uid": "u1"}]}}, "status.reservedFor", []),
    ("ResourceClaim requests replaced wholesale", claim, CLAIM,
     {"spec": {"devices": {"requests": [{"name": "a", "exactly": {"deviceClassName": "gpu2"}}]}}},
     "spec.devices", {"requests": [{"name": "a", "exactly": {"deviceClassName": "gpu2"}}],
                      "constraints": [{"requests": ["a", "b"], "matchAttribute": "example.com/numa"}]}),
    ("node conditions merged by type", node, NODE,
     {"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}},
     "status.conditions", [{"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory"},
                           {"type": "Ready", "status": "True", "reason": "KubeletReady"}]),
    ("node addresses merged by type", node, NODE,
     {"status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.2"}]}},
     "status.addresses", [{"type": "InternalIP", "address": "10.0.0.2"}, {"type": "Hostname", "address": "n1"}]),
    ("podCIDRs unioned", node, NODE,
     {"spec": {"podCIDRs": ["10.0.0.0/24", "fd00::/64"]}}, "spec.podCIDRs", ["10.0.0.0/24", "fd00::/64"]),
    ("pod conditions merged by type", pod, CORE,
     {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
     "status.conditions", [{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}]),
    ("ownerReferences merged by uid", pod, CORE,
     {"metadata": {"ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "u2"}]}},
     "metadata.ownerReferences", [{"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "u2"},
                                  {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs1", "uid": "u1",
                                   "controller": True}]),
    ("ownerReference updated in place", pod, CORE,
     {"metadata": {"ownerReferences": [{"uid": "u1", "controller": False}]}},
     "metadata.ownerReferences", [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs1", "uid": "u1",
                                   "controller": False}]),
    ("tolerations (no strategy) replaced", pod, CORE,
     {"spec": {"tolerations": [{"key": "k2", "operator": "Exists"}]}},
     "spec.tolerations", [{"key": "k2", "operator": "Exists"}]),
    ("null deletes a label", pod, CORE,
     {"metadata": {"labels": {"tier": None, "new": "x"}}}, "metadata.labels", {"app": "web", "new": "x"}),
    ("null deletes a field of a list item", pod, CORE,
     {"spec": {"containers": [{"name": "app", "resources": None}]}},
     "spec.containers.0", {k: v for k, v in APP.items() if k != "resources"}),
    ("null deletes a merge list", pod, CORE,
     {"metadata": {"finalizers": None}}, "metadata", {k: v for k, v in pod()["metadata"].items()
                                                      if k != "finalizers"}),
    ("null for a missing key is ignored", pod, CORE,
     {"metadata": {"labels": {"nope": None}}}, "metadata.labels", {"app": "web", "tier": "fe"}),
    ("maps under additionalProperties merge", pod, CORE,
     {"spec": {"containers": [{"name": "app", "resources": {"limits": {"memory": "1Gi"}}}]}},
     "spec.containers.0.resources", {"limits": {"cpu": "1", "memory": "1Gi"}}),
    ("replace strategy on a map (PDB selector)", pdb, PDB,
     {"spec": {"selector": {"matchLabels": {"b": "2"}}}}, "spec.selector", {"matchLabels": {"b": "2"}}),
    ("field unknown to the schema merges like a merge patch", pod, CORE,
     {"spec": {"madeUp": {"x": [1, 2], "z": None}}}, "spec.madeUp", {"x": [1, 2]}),
    ("kind without a schema: maps merge, lists replace", widget, WIDGET,
     {"spec": {"items": [{"name": "b"}], "m": {"k": None, "n": 3}, "tags": ["y"]}},
     "spec", {"items": [{"name": "b"}], "m": {"j": 2, "n": 3}, "tags": ["y"]}),
    ("kind without a schema honours $patch replace", widget, WIDGET,
     {"spec": {"m": {"$patch": "replace", "z": 1}}}, "spec.m", {"z": 1}),
    ("new container arriving with directives inside", pod, CORE,
     {"spec": {"containers": [{"name": "new", "image": "n:1",
                               "$setElementOrder/env": [{"name": "X"}],
                               "env": [{"name": "X", "value": "1"}, {"name": "Y", "$patch": "delete"}],
                               "securityContext": {"$patch": "replace", "runAsUser": 1},
                               "resources": {"limits": {"cpu": None, "memory": "1Gi"}}}]}},
     "spec.containers", [{"name": "new", "image": "n:1", "env": [{"name": "X", "value": "1"}],
                          "securityContext": {"runAsUser": 1}, "resources": {"limits": {"memory": "1Gi"}}},
                         APP, SIDE]),
    ("new field arriving with a merge list inside", deployment, APPS,
     {"spec": {"template": {"spec": {"initContainers": [{"name": "i", "image": "i:1",
                                                         "env": [{"name": "Q", "$patch": "delete"}]}]}}}},
     "spec.template.spec.initContainers", [{"name": "i", "image": "i:1", "env": []}]),
    ("services ports merged by port", lambda: {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                                                "spec": {"ports": [{"port": 80, "targetPort": 8080}]}},
     ("", "v1", "Service"),
     {"spec": {"ports": [{"port": 80, "name": "http"}]}}, "spec.ports",
     [{"port": 80, "targetPort": 8080, "name": "http"}]),
]


@pytest.mark.parametrize(("make", "gvk", "patch", "path", "expected"),
                         [c[1:] for c in SMP_CASES], ids=[c[0] for c in SMP_CASES])
def test_strategic_merge_patch(make: Any, gvk: tuple[str, str, str], patch: Any, path: str, expected: Any) -> None:
    obj = make()
    before = copy.deepcopy(obj)
    out = smp(obj, patch, gvk)
    assert obj == before, "the input object was mutated"
    assert directives(out) == []
    if path:
        assert at(out, path) == expected


def test_smp_kubectl_apply_body() -> None:
    body = {"metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}\n"}},
            "spec": {"replicas": 3, "template": {"spec": {
                "$setElementOrder/containers": [{"name": "nginx"}],
                "containers": [{"$setElementOrder/env": [{"name": "A"}], "env": [{"name": "A", "value": "2"}],
                                "name": "nginx"}]}}}}
    out = smp(deployment(), body, APPS)
    expected = deployment()
    expected["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = "{}\n"
    expected["spec"]["replicas"] = 3
    expected["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "A", "value": "2"}]
    assert out == expected


def test_smp_set_element_order_keeps_server_only_items() -> None:
    # B was added by someone else: it is not in the order list, so it stays after the items that are.
    obj = pod()
    out = smp(obj, {"spec": {"containers": [{"name": "app", "$setElementOrder/env": [{"name": "A"}],
                                             "env": [{"name": "A", "value": "2"}]}]}})
    assert at(out, "spec.containers.0.env") == [{"name": "A", "value": "2"}, {"name": "B", "value": "2"}]


def test_smp_replace_root() -> None:
    out = smp(pod(), {"$patch": "replace", "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}})
    assert out == {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}


def test_strategic_merge_direct_with_schema_and_without() -> None:
    schema = schemas.schema_for("", "v1", "Pod")
    original = {"metadata": {"finalizers": ["a"]}, "spec": {"tolerations": [{"key": "x"}]}}
    patch = {"metadata": {"finalizers": ["b"]}, "spec": {"tolerations": [{"key": "y"}]}}
    assert patching.strategic_merge(original, patch, schema=schema) == {
        "metadata": {"finalizers": ["b", "a"]}, "spec": {"tolerations": [{"key": "y"}]}}
    assert patching.strategic_merge(original, patch, schema=None) == {
        "metadata": {"finalizers": ["b"]}, "spec": {"tolerations": [{"key": "y"}]}}
    assert patch == {"metadata": {"finalizers": ["b"]}, "spec": {"tolerations": [{"key": "y"}]}}


SMP_BAD_REQUESTS = [
    ("unknown $patch on a map", {"metadata": {"labels": {"$patch": "bogus"}}}, "unknown patch type"),
    ("unknown $patch in a list", {"spec": {"containers": [{"name": "app", "$patch": "bogus"}]}},
     "unknown patch type"),
    ("$patch merge in a list", {"spec": {"containers": [{"$patch": "merge"}]}}, "merging lists cannot"),
    ("$retainKeys not a list", {"spec": {"securityContext": {"$retainKeys": "runAsUser"}}},
     "invalid patch format of retainKeys"),
    ("patch key missing from $retainKeys",
     {"spec": {"securityContext": {"$retainKeys": ["runAsUser"], "runAsGroup": 1}}},
     "invalid patch format of retainKeys"),
    ("merge item without its key", {"spec": {"containers": [{"image": "x"}]}},
     "does not contain declared merge key: name"),
    ("delete item without its key", {"spec": {"containers": [{"$patch": "delete"}]}},
     "does not contain declared merge key: name"),
    ("$setElementOrder without a field", {"spec": {"$setElementOrder": [{"name": "app"}]}},
     "invalid patch format of setElementOrder list"),
    ("$setElementOrder not a list", {"spec": {"$setElementOrder/containers": {"name": "app"}}},
     "invalid patch format of setElementOrder list"),
    ("$setElementOrder missing a patch item",
     {"spec": {"$setElementOrder/containers": [{"name": "side"}], "containers": [{"name": "app"}]}},
     "doesn't match $setElementOrder list"),
    ("$deleteFromPrimitiveList without a field", {"metadata": {"$deleteFromPrimitiveList": ["a"]}},
     "invalid patch format of primitive list"),
    ("$deleteFromPrimitiveList not a list", {"metadata": {"$deleteFromPrimitiveList/finalizers": "a"}},
     "invalid patch format of primitive list"),
    ("maps mixed with scalars in a merge list", {"spec": {"containers": [{"name": "x"}, "y"]}},
     "list element types are not identical"),
    ("a list among scalars in a merge list", {"metadata": {"finalizers": [["a"]]}},
     "list element types are not identical"),
]


@pytest.mark.parametrize(("patch", "text"), [c[1:] for c in SMP_BAD_REQUESTS], ids=[c[0] for c in SMP_BAD_REQUESTS])
def test_smp_malformed_directives_are_400(patch: Any, text: str) -> None:
    with pytest.raises(errors.BadRequest) as info:
        smp(pod(), patch)
    assert text in info.value.message
    assert info.value.code == 400


def test_smp_list_of_lists_is_422() -> None:
    obj = pod()
    del obj["metadata"]["finalizers"]
    with pytest.raises(errors.Invalid) as info:
        smp(obj, {"metadata": {"finalizers": [["a"]]}})
    assert info.value.code == 422
    assert info.value.status()["details"]["causes"][0]["message"] == "lists of lists are not supported"


@pytest.mark.parametrize(("body", "text"), [
    (b"[]", "json: cannot unmarshal array into Go value of type map[string]interface {}"),
    (b'"x"', "json: cannot unmarshal string into Go value of type map[string]interface {}"),
    (b"{", ""),
    (b"", ""),
])
def test_smp_body_errors_are_400(body: bytes, text: str) -> None:
    with pytest.raises(errors.BadRequest) as info:
        patching.apply_patch(pod(), body, content_type=patching.STRATEGIC_MERGE_PATCH, group="", version="v1",
                             kind="Pod")
    assert text in info.value.message


def test_smp_null_body_changes_nothing() -> None:
    out = patching.apply_patch(pod(), b"null", content_type=patching.STRATEGIC_MERGE_PATCH, group="",
                               version="v1", kind="Pod")
    assert out == pod()


# ---------------------------------------------------------------------------------------------------------
# JSON merge patch (RFC 7386)

RFC7386_APPENDIX = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"a": "foo"}, None, None),
    ({"a": "foo"}, "bar", "bar"),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]


@pytest.mark.parametrize(("target", "patch", "expected"), RFC7386_APPENDIX)
def test_json_merge_patch_rfc7386_appendix(target: Any, patch: Any, expected: Any) -> None:
    before = copy.deepcopy(target)
    assert patching.json_merge_patch(target, patch) == expected
    assert target == before


def merge(obj: dict[str, Any], body: Any, *, content_type: str = patching.MERGE_PATCH) -> dict[str, Any]:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return patching.apply_patch(obj, raw, content_type=content_type, group="", version="v1", kind="Pod")


def test_merge_patch_labels_added_and_removed() -> None:
    out = merge(pod(), {"metadata": {"labels": {"k": "v", "app": None}}})
    assert out["metadata"]["labels"] == {"tier": "fe", "k": "v"}


def test_merge_patch_replaces_lists_and_ignores_directives() -> None:
    out = merge(pod(), {"metadata": {"finalizers": ["c"], "labels": {"$patch": "delete"}},
                        "spec": {"containers": [{"name": "x"}]}})
    assert out["metadata"]["finalizers"] == ["c"]
    assert out["metadata"]["labels"] == {"app": "web", "tier": "fe", "$patch": "delete"}
    assert out["spec"]["containers"] == [{"name": "x"}]


@pytest.mark.parametrize(("body", "text"), [
    (b"null", "Invalid JSON Patch"),
    (b"[1]", "error decoding patch: json: cannot unmarshal array into Go value of type map[string]interface {}"),
    (b"3", "error decoding patch: json: cannot unmarshal number"),
    (b"nope", "error decoding patch: "),
])
def test_merge_patch_body_errors_are_400(body: bytes, text: str) -> None:
    with pytest.raises(errors.BadRequest) as info:
        merge(pod(), body)
    assert text in info.value.message


# ---------------------------------------------------------------------------------------------------------
# JSON patch (RFC 6902)


def jpatch(obj: dict[str, Any], ops: Any) -> dict[str, Any]:
    raw = ops if isinstance(ops, bytes) else json.dumps(ops).encode()
    return patching.apply_patch(obj, raw, content_type=patching.JSON_PATCH, group="", version="v1", kind="Pod")


def test_json_patch_operations() -> None:
    out = jpatch(pod(), [
        {"op": "test", "path": "/metadata/resourceVersion", "value": "104"},
        {"op": "add", "path": "/metadata/labels/k", "value": "v"},
        {"op": "replace", "path": "/spec/containers/0/image", "value": "app:2"},
        {"op": "remove", "path": "/metadata/finalizers/0"},
        {"op": "add", "path": "/metadata/finalizers/-", "value": "z"},
        {"op": "move", "from": "/metadata/labels/tier", "path": "/metadata/labels/layer"},
        {"op": "copy", "from": "/metadata/labels/app", "path": "/metadata/annotations"},
        {"op": "add", "path": "/metadata/labels/a~1b", "value": "escaped"},
    ])
    assert out["metadata"]["labels"] == {"app": "web", "k": "v", "layer": "fe", "a/b": "escaped"}
    assert out["metadata"]["finalizers"] == ["b", "z"]
    assert out["metadata"]["annotations"] == "web"
    assert out["spec"]["containers"][0]["image"] == "app:2"


def test_json_patch_failed_test_is_422_and_changes_nothing() -> None:
    # kopf's optimistic-concurrency patch: test a stale resourceVersion, then change something.
    obj = pod()
    before = copy.deepcopy(obj)
    with pytest.raises(errors.Invalid) as info:
        jpatch(obj, [{"op": "test", "path": "/metadata/resourceVersion", "value": "103"},
                     {"op": "replace", "path": "/metadata/labels/app", "value": "x"}])
    assert obj == before
    status = info.value.status()
    assert status["code"] == 422
    assert status["reason"] == "Invalid"
    assert status["message"] == "the server rejected our request due to an error in our request"
    assert status["details"]["causes"][0]["message"]


def test_json_patch_test_distinguishes_types() -> None:
    with pytest.raises(errors.Invalid):
        jpatch(pod(), [{"op": "test", "path": "/metadata/resourceVersion", "value": 104}])
    with pytest.raises(errors.Invalid):
        jpatch(pod(), [{"op": "test", "path": "/metadata/ownerReferences/0/controller", "value": 1}])


@pytest.mark.parametrize("ops", [
    [{"op": "remove", "path": "/metadata/nope"}],
    [{"op": "replace", "path": "/spec/containers/9/image", "value": "x"}],
    [{"op": "add", "path": "/no/such/parent", "value": 1}],
    [{"op": "frobnicate", "path": "/metadata"}],
    [{"path": "/metadata"}],
    [{"op": "add", "value": 1}],
    [{"op": "add", "path": "/metadata/labels/x"}],
    [{"op": "move", "path": "/metadata/labels/x"}],
    [{"op": "add", "path": "/metadata/finalizers/x", "value": "y"}],
], ids=["remove missing", "index out of range", "missing parent", "unknown op", "no op", "no path", "no value",
        "no from", "bad index"])
def test_json_patch_operation_errors_are_422(ops: Any) -> None:
    with pytest.raises(errors.Invalid) as info:
        jpatch(pod(), ops)
    assert info.value.code == 422


def test_json_patch_result_must_be_an_object() -> None:
    with pytest.raises(errors.Invalid) as info:
        jpatch(pod(), [{"op": "replace", "path": "", "value": [1]}])
    assert info.value.code == 422
    assert "patch: Invalid value" in info.value.message


@pytest.mark.parametrize("body", [b"{}", b'{"op": "add"}', b'["add"]', b"[1]", b"[", b""])
def test_json_patch_undecodable_is_400(body: bytes) -> None:
    with pytest.raises(errors.BadRequest) as info:
        jpatch(pod(), body)
    assert info.value.code == 400
    assert info.value.message.startswith("error decoding patch: ")


def test_json_patch_too_many_operations_is_413() -> None:
    ops = [{"op": "test", "path": "/kind", "value": "Pod"}] * (patching.MAX_JSON_PATCH_OPERATIONS + 1)
    with pytest.raises(errors.RequestEntityTooLarge) as info:
        jpatch(pod(), ops)
    assert info.value.message == ("Request entity too large: The allowed maximum operations in a JSON patch "
                                  "is 10000, got 10001")


def doubling_copies(count: int) -> list[dict[str, Any]]:
    """A 100-character list, then `count` copies of it into itself: each doubles what the next copies."""
    return [{"op": "add", "path": "/spec/x", "value": ["y" * 100]}] + [
        {"op": "copy", "from": "/spec/x", "path": "/spec/x/-"}] * count


def test_json_patch_copies_are_bounded_as_upstream() -> None:
    # 23 doublings would build 2**23 copies (seconds and gigabytes); json-patch's accumulated copy limit,
    # which kube-apiserver sets to 3 MiB, fails the patch at the copy that passes it.
    copied, size = 0, len(json.dumps(["y" * 100], separators=(",", ":")))
    while copied + size <= patching.MAX_JSON_PATCH_COPY_BYTES:
        copied += size
        size = 2 * size + 1  # [v..., copy of v]
    start = time.perf_counter()
    with pytest.raises(patching.PatchRejected) as info:
        jpatch(pod(), doubling_copies(23))
    assert time.perf_counter() - start < 2.0
    assert info.value.code == 422 and info.value.reason == "Invalid"
    assert info.value.message == "the server rejected our request due to an error in our request"
    assert info.value.details == {"causes": [{"message": (
        f"Unable to complete the copy, the accumulated size increase of copy is {copied + size}, "
        "exceeding the limit 3145728")}]}


def test_json_patch_copies_within_the_limit_apply() -> None:
    out = jpatch(pod(), doubling_copies(10))
    assert len(json.dumps(out["spec"]["x"])) > 100 * 2**10
    big = "z" * (1024 * 1024)
    out = jpatch(pod(), [{"op": "add", "path": "/metadata/annotations", "value": {"a": big}},
                         {"op": "copy", "from": "/metadata/annotations/a", "path": "/metadata/annotations/b"}])
    assert out["metadata"]["annotations"] == {"a": big, "b": big}


@pytest.mark.parametrize(("source", "explanation"), [("/spec/nope", "'nope'"),
                                                     ("/spec/containers/-", "invalid array index '-'"),
                                                     ("spec", "Location must start with /")])
def test_json_patch_copy_from_nowhere_is_explained_by_the_operation(source: str, explanation: str) -> None:
    with pytest.raises(patching.PatchRejected) as info:
        jpatch(pod(), [{"op": "copy", "from": source, "path": "/spec/x"}])
    assert info.value.detail.startswith(explanation)


def test_json_patch_add_and_move_are_not_copies() -> None:
    # Only `copy` duplicates: moving a 1 MiB value twenty times adds nothing.
    big = "z" * (1024 * 1024)
    ops: list[dict[str, Any]] = [{"op": "add", "path": "/metadata/annotations", "value": {"k0": big}}]
    ops += [{"op": "move", "from": f"/metadata/annotations/k{i}", "path": f"/metadata/annotations/k{i + 1}"}
            for i in range(20)]
    ops += [{"op": "replace", "path": "/metadata/annotations/k20", "value": big + "!"}]
    assert jpatch(pod(), ops)["metadata"]["annotations"] == {"k20": big + "!"}


@pytest.mark.parametrize("content_type", [patching.JSON_PATCH, patching.MERGE_PATCH, patching.STRATEGIC_MERGE_PATCH])
def test_a_patched_object_larger_than_a_body_may_decode_to_is_413(content_type: str) -> None:
    obj = pod()
    obj["metadata"]["annotations"] = {"a": "x" * (2 * 1024 * 1024)}
    value = "y" * (1024 * 1024 + 100)
    body = ([{"op": "add", "path": "/metadata/annotations/b", "value": value}] if content_type == patching.JSON_PATCH
            else {"metadata": {"annotations": {"b": value}}})
    with pytest.raises(errors.RequestEntityTooLarge) as info:
        patching.apply_patch(obj, json.dumps(body).encode(), content_type=content_type, group="", version="v1",
                             kind="Pod")
    assert info.value.code == 413
    assert info.value.message.startswith("Request entity too large: the patched object is ")
    assert info.value.message.endswith(" bytes, limit is 3145728")


def test_json_patch_empty_or_null_is_a_no_op() -> None:
    assert jpatch(pod(), []) == pod()
    assert jpatch(pod(), b"null") == pod()


# ---------------------------------------------------------------------------------------------------------
# Content types, copying


def test_unknown_content_type_is_415() -> None:
    for ctype in ("application/json", "", "text/plain; charset=utf-8"):
        with pytest.raises(errors.UnsupportedMediaType) as info:
            merge(pod(), {}, content_type=ctype)
        assert info.value.code == 415
        assert info.value.message == (
            "the body of the request was in an unknown format - accepted media types include: "
            "application/json-patch+json, application/merge-patch+json, "
            "application/strategic-merge-patch+json, application/apply-patch+yaml")


def test_content_type_parameters_are_ignored() -> None:
    out = merge(pod(), {"metadata": {"labels": {"k": "v"}}}, content_type="application/merge-patch+json; charset=utf-8")
    assert out["metadata"]["labels"]["k"] == "v"
    assert patching.media_type("Application/Strategic-Merge-Patch+JSON ;charset=UTF-8") == \
        patching.STRATEGIC_MERGE_PATCH


def test_patch_types() -> None:
    assert set(patching.PATCH_TYPES) == {patching.JSON_PATCH, patching.MERGE_PATCH,
                                         patching.STRATEGIC_MERGE_PATCH, patching.APPLY_PATCH}


def test_apply_patch_type_is_not_handled_here() -> None:
    with pytest.raises(ValueError, match="server-side apply"):
        merge(pod(), {}, content_type=patching.APPLY_PATCH)


@pytest.mark.parametrize(("content_type", "body"), [
    (patching.JSON_PATCH, [{"op": "replace", "path": "/spec/replicas", "value": 2}]),
    (patching.MERGE_PATCH, {"spec": {"replicas": 2}}),
    (patching.STRATEGIC_MERGE_PATCH, {"spec": {"replicas": 2}}),
])
def test_result_never_shares_top_level_or_metadata(content_type: str, body: Any) -> None:
    obj = deployment()
    before = copy.deepcopy(obj)
    out = patching.apply_patch(obj, json.dumps(body).encode(), content_type=content_type, group="apps",
                               version="v1", kind="Deployment")
    assert obj == before
    assert out is not obj
    assert out["metadata"] is not obj["metadata"]
    assert out["spec"]["replicas"] == 2
    out["metadata"]["resourceVersion"] = "9"
    assert "resourceVersion" not in obj["metadata"]


def test_smp_does_not_touch_the_patch_body_objects() -> None:
    patch = {"spec": {"containers": [{"name": "new", "env": [{"name": "X", "value": "1"}]}]}}
    before = copy.deepcopy(patch)
    out = patching.strategic_merge(pod(), patch, schema=schemas.schema_for("", "v1", "Pod"))
    assert patch == before
    out["spec"]["containers"][0]["env"].append({"name": "Y"})
    assert patch == before


# ---------------------------------------------------------------------------------------------------------
# apply-patch+yaml bodies


def test_apply_yaml_body_parses_yaml_and_json() -> None:
    yaml_body = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  k: v\n"
    assert patching.apply_yaml_body(yaml_body) == {"apiVersion": "v1", "kind": "ConfigMap",
                                                   "metadata": {"name": "c"}, "data": {"k": "v"}}
    json_body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}).encode()
    assert patching.apply_yaml_body(json_body) == {"apiVersion": "v1", "kind": "ConfigMap",
                                                   "metadata": {"name": "c"}}


def test_apply_yaml_body_stays_json_shaped() -> None:
    out = patching.apply_yaml_body(b"metadata:\n  creationTimestamp: 2024-01-02T03:04:05Z\n"
                                   b"data:\n  2: two\n  true: yes\n  day: 2024-01-02\n")
    assert out == {"metadata": {"creationTimestamp": "2024-01-02T03:04:05Z"},
                   "data": {"2": "two", "true": True, "day": "2024-01-02"}}
    json.dumps(out)


@pytest.mark.parametrize("body", [b"a: [1\n", b"- a\n- b\n", b"just a string\n", b"", b"\xff\xfe\x00"])
def test_apply_yaml_body_errors_are_400(body: bytes) -> None:
    with pytest.raises(errors.BadRequest) as info:
        patching.apply_yaml_body(body)
    assert info.value.message.startswith("error decoding YAML: ")


# The schema facts the strategic merge relies on (a sample of ../shared/reference/smp-merge-keys.txt).
MERGE_KEYS = [
    ("io.k8s.api.core.v1.PodSpec", "containers", "merge", "name"),
    ("io.k8s.api.core.v1.PodSpec", "volumes", "merge,retainKeys", "name"),
    ("io.k8s.api.core.v1.PodSpec", "resourceClaims", "merge,retainKeys", "name"),
    ("io.k8s.api.core.v1.Container", "ports", "merge", "containerPort"),
    ("io.k8s.api.core.v1.Container", "env", "merge", "name"),
    ("io.k8s.api.core.v1.EphemeralContainer", "env", "merge", "name"),
    ("io.k8s.api.core.v1.PodStatus", "resourceClaimStatuses", "merge,retainKeys", "name"),
    ("io.k8s.api.core.v1.NodeStatus", "conditions", "merge", "type"),
    ("io.k8s.api.core.v1.NodeSpec", "podCIDRs", "merge", None),
    ("io.k8s.api.apps.v1.DeploymentSpec", "strategy", "retainKeys", None),
    ("io.k8s.api.resource.v1.ResourceClaimStatus", "reservedFor", "merge", "uid"),
    ("io.k8s.api.resource.v1.DeviceTaintRuleStatus", "conditions", "merge", "type"),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "ownerReferences", "merge", "uid"),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "finalizers", "merge", None),
    ("io.k8s.api.resource.v1.DeviceClaim", "requests", None, None),
]


@pytest.mark.parametrize(("definition", "field", "strategy", "merge_key"), MERGE_KEYS)
def test_schema_patch_extensions(definition: str, field: str, strategy: str | None, merge_key: str | None) -> None:
    prop = schemas.definitions()[definition]["properties"][field]
    assert prop.get("x-kubernetes-patch-strategy") == strategy
    assert prop.get("x-kubernetes-patch-merge-key") == merge_key
