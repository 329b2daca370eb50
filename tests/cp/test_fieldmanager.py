"""`cp.fieldmanager` without a server: the schema-typed walks (field sets, merge order, removal), the
entry bookkeeping (order, cap, versions), conflict errors, and the last-applied annotation."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from cp import defaulting, errors, fieldmanager, typed
from cp import fieldpath as fp
from cp import resources as res

DEPLOY = res.lookup("apps", "v1", "deployments")
CM = res.lookup("", "v1", "configmaps")
CLOCK = res.lookup(res.SIM_GROUP, res.SIM_VERSION, "clocks")
T0, T1, T2 = "2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z", "2026-01-01T00:00:02Z"
assert DEPLOY and CM and CLOCK

# What `kubectl create deployment web --image=nginx` records upstream (manager kubectl-create): the
# defaulted fields, `.` on what the create added, none on the structs a zero Deployment already has.
KUBECTL_CREATE_DEPLOYMENT = {
    "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
    "f:spec": {
        "f:progressDeadlineSeconds": {}, "f:replicas": {}, "f:revisionHistoryLimit": {}, "f:selector": {},
        "f:strategy": {"f:rollingUpdate": {".": {}, "f:maxSurge": {}, "f:maxUnavailable": {}}, "f:type": {}},
        "f:template": {
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {
                "f:containers": {'k:{"name":"nginx"}': {
                    ".": {}, "f:image": {}, "f:imagePullPolicy": {}, "f:name": {}, "f:resources": {},
                    "f:terminationMessagePath": {}, "f:terminationMessagePolicy": {}}},
                "f:dnsPolicy": {}, "f:restartPolicy": {}, "f:schedulerName": {}, "f:securityContext": {},
                "f:terminationGracePeriodSeconds": {}}}}}


def kubectl_create_body() -> dict[str, Any]:
    return {"kind": "Deployment", "apiVersion": "apps/v1",
            "metadata": {"name": "web", "namespace": "default", "creationTimestamp": None, "labels": {"app": "web"}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"creationTimestamp": None, "labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "nginx", "image": "nginx", "resources": {}}]}},
                     "strategy": {}},
            "status": {}}


def _created(obj: dict[str, Any], kind: res.ResourceKind = DEPLOY, manager: str = "kubectl-create") -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    defaulting.apply_defaults(obj, group=kind.group, version=kind.version, kind=kind.kind)
    obj["metadata"]["managedFields"] = fieldmanager.on_create(kind, obj, manager=manager, now=T0)
    return obj


def _apply(live: dict[str, Any] | None, config: dict[str, Any], manager: str, *, force: bool = False,
           kind: res.ResourceKind = DEPLOY, now: str = T1) -> dict[str, Any]:
    new, managed = fieldmanager.on_apply(kind, live, config, manager=manager, subresource="", force=force, now=now)
    new = copy.deepcopy(new)
    new.setdefault("metadata", {})["managedFields"] = managed
    return new


def test_create_records_what_kubectl_create_records_upstream() -> None:
    (entry,) = _created(kubectl_create_body())["metadata"]["managedFields"]
    assert entry == {"manager": "kubectl-create", "operation": "Update", "apiVersion": "apps/v1", "time": T0,
                     "fieldsType": "FieldsV1", "fieldsV1": KUBECTL_CREATE_DEPLOYMENT}
    assert json.dumps(entry["fieldsV1"]) == json.dumps(KUBECTL_CREATE_DEPLOYMENT)  # key order too


def deployment(*containers: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": list(containers)}},
                     **spec}}


def test_applied_field_set_shape() -> None:
    """ToFieldSet of a configuration: struct fields lead to leaves without `.`; list items are members;
    map keys are members; empty maps and nulls are owned leaves; an empty list owns nothing."""
    cfg = deployment({"name": "a", "image": "x", "resources": {}, "args": ["1"], "env": []}, replicas=None)
    cfg["metadata"]["labels"] = {"k": "v"}
    obj = _apply(None, cfg, "m")
    (e,) = obj["metadata"]["managedFields"]
    assert "time" in e and e["operation"] == "Apply"
    assert e["fieldsV1"] == {
        "f:metadata": {"f:labels": {"f:k": {}}},
        "f:spec": {"f:replicas": {}, "f:selector": {}, "f:template": {
            "f:metadata": {"f:labels": {"f:app": {}}},
            "f:spec": {"f:containers": {'k:{"name":"a"}': {".": {}, "f:args": {}, "f:image": {}, "f:name": {},
                                                           "f:resources": {}}}}}}}
    assert "replicas" not in obj["spec"]  # applied null: unset


def _names(obj: dict[str, Any]) -> list[str]:
    return [c["name"] for c in obj["spec"]["template"]["spec"]["containers"]]


@pytest.mark.parametrize(("live", "config", "merged"), [
    (["a", "b", "c"], ["c", "d"], ["a", "b", "c", "d"]),
    (["a", "b", "c"], ["c", "a"], ["b", "c", "a"]),
    (["a", "b"], ["x", "b", "y"], ["a", "x", "b", "y"]),
    (["a", "b", "c"], ["b"], ["a", "b", "c"]),
])
def test_associative_list_merge_order(live: list[str], config: list[str], merged: list[str]) -> None:
    """typed/merge.go's order: live items keep their places, configured ones follow the configuration's
    relative order, new ones land after the item before them in the configuration."""
    base = _apply(None, deployment(*({"name": n, "image": "i"} for n in live)), "owner")
    out = _apply(base, deployment(*({"name": n, "image": "i"} for n in config)), "other")
    assert _names(out) == merged


def test_prune_removes_what_only_the_applier_owned() -> None:
    obj = _apply(None, deployment({"name": "a", "image": "x", "env": [{"name": "E", "value": "1"}]},
                                  strategy={"type": "Recreate"}), "m")
    obj = _apply(obj, deployment({"name": "a", "image": "x"}), "m")
    assert obj["spec"]["template"]["spec"]["containers"] == [{"name": "a", "image": "x"}]
    assert "strategy" not in obj["spec"]  # pruned (defaulting puts RollingUpdate back in the store)


def test_conflict_error_shape() -> None:
    obj = _apply(None, deployment({"name": "a", "image": "x"}, replicas=1), "first")
    with pytest.raises(errors.Conflict) as info:
        _apply(obj, deployment({"name": "a", "image": "y"}, replicas=2), "second")
    st = info.value.status()
    assert st["code"] == 409 and st["reason"] == "Conflict"
    assert st["message"] == ('Apply failed with 2 conflicts: conflicts with "first":\n- .spec.replicas\n'
                             '- .spec.template.spec.containers[name="a"].image')
    assert st["details"] == {"causes": [
        {"reason": "FieldManagerConflict", "message": 'conflict with "first"', "field": ".spec.replicas"},
        {"reason": "FieldManagerConflict", "message": 'conflict with "first"',
         "field": '.spec.template.spec.containers[name="a"].image'}]}
    forced = _apply(obj, deployment({"name": "a", "image": "y"}, replicas=2), "second", force=True)
    firsts = {e["manager"]: e for e in forced["metadata"]["managedFields"]}
    assert "f:replicas" not in firsts["first"]["fieldsV1"]["f:spec"]


def test_entries_sorted_like_upstream() -> None:
    obj = _created(deployment({"name": "a", "image": "x"}), manager="zz-creator")
    obj = _apply(obj, deployment({"name": "a", "image": "x"}), "b-applier", now=T2)
    obj = _apply(obj, deployment({"name": "a", "image": "y"}), "a-applier", force=True, now=T1)
    got = [(e["manager"], e["operation"], e.get("time")) for e in obj["metadata"]["managedFields"]]
    # Apply before Update; then by time (none first), then by manager.
    assert got == [("b-applier", "Apply", None), ("a-applier", "Apply", T1), ("zz-creator", "Update", T0)]


def test_other_versions_are_dropped() -> None:
    obj = _created(deployment({"name": "a", "image": "x"}))
    obj["metadata"]["managedFields"].append({"manager": "old", "operation": "Update", "apiVersion": "apps/v1beta1",
                                             "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:paused": {}}}})
    new = copy.deepcopy(obj)
    new["spec"]["paused"] = True
    out = fieldmanager.on_update(DEPLOY, obj, new, manager="pauser", subresource="", now=T1,
                                 requested=obj["metadata"]["managedFields"])
    assert out is not None
    assert [e["manager"] for e in out] == ["kubectl-create", "pauser"]


HPA_V2 = res.lookup("autoscaling", "v2", "horizontalpodautoscalers")
HPA_V1 = res.lookup("autoscaling", "v1", "horizontalpodautoscalers")
assert HPA_V2 and HPA_V1


def _hpa(cpu: int, *, max_replicas: int = 5) -> dict[str, Any]:
    """A stored (autoscaling/v2) HPA with a CPU utilization target."""
    obj = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
           "metadata": {"name": "web", "namespace": "default"},
           "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                    "minReplicas": 1, "maxReplicas": max_replicas,
                    "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
                        "type": "Utilization", "averageUtilization": cpu}}}]}}
    return obj


def test_an_update_through_another_version_takes_fields_by_each_managers_paths() -> None:
    """Written through autoscaling/v1, the creator owns v1's paths; a v2 writer changing the metric
    takes it from the v1 manager by v1's path (`targetCPUUtilizationPercentage`)."""
    obj = _hpa(50)
    obj["metadata"]["managedFields"] = fieldmanager.on_create(HPA_V2, obj, manager="helm", now=T0, served=HPA_V1)
    (entry,) = obj["metadata"]["managedFields"]
    assert entry["apiVersion"] == "autoscaling/v1"
    assert {"f:targetCPUUtilizationPercentage", "f:maxReplicas", "f:scaleTargetRef"} <= set(entry["fieldsV1"]["f:spec"])
    new = _hpa(70)
    out = fieldmanager.on_update(HPA_V2, obj, new, manager="tuner", subresource="", now=T1)
    assert out is not None
    assert [(e["manager"], e["apiVersion"]) for e in out] == [("helm", "autoscaling/v1"), ("tuner", "autoscaling/v2")]
    assert "f:targetCPUUtilizationPercentage" not in out[0]["fieldsV1"]["f:spec"]
    assert out[1]["fieldsV1"] == {"f:spec": {"f:metrics": {}}}
    # nothing changed, nothing converted: the entries as they were
    new["metadata"]["managedFields"] = out
    assert fieldmanager.on_update(HPA_V2, new, copy.deepcopy(new), manager="tuner", subresource="", now=T2) is out


def test_update_managers_are_capped_per_version() -> None:
    """Past ten Update managers the oldest of each version merge into that version's "ancient-changes"."""
    obj = _hpa(50)
    obj["metadata"]["managedFields"] = fieldmanager.on_create(HPA_V2, obj, manager="m0", now=T0, served=HPA_V1)
    for i in range(1, 12):
        new = _hpa(50, max_replicas=5 + i)
        new["metadata"]["labels"] = {f"l{j}": "x" for j in range(i)}
        served = HPA_V1 if i % 2 else None
        new["metadata"]["managedFields"] = fieldmanager.on_update(
            HPA_V2, obj, new, manager=f"m{i}", subresource="", now=f"2026-01-01T00:00:{i:02d}Z", served=served)
        obj = new
    got = [(e["manager"], e["apiVersion"]) for e in obj["metadata"]["managedFields"]]
    assert len(got) == 10
    assert ("ancient-changes", "autoscaling/v1") in got
    assert all(m != "ancient-changes" or v == "autoscaling/v1" for m, v in got)


def test_untyped_kinds() -> None:
    """Kinds without an upstream schema (sim.cplane.dev) are deduced: maps granular, lists atomic."""
    live = _apply(None, {"apiVersion": "sim.cplane.dev/v1alpha1", "kind": "Clock", "metadata": {"name": "c"},
                         "spec": {"a": {"b": 1}, "l": [1, 2]}}, "m", kind=CLOCK)
    (e,) = live["metadata"]["managedFields"]
    assert e["fieldsV1"] == {"f:spec": {".": {}, "f:a": {".": {}, "f:b": {}}, "f:l": {}}}
    with pytest.raises(errors.Conflict):
        _apply(live, {"apiVersion": "sim.cplane.dev/v1alpha1", "kind": "Clock", "metadata": {"name": "c"},
                      "spec": {"l": [3]}}, "n", kind=CLOCK)


def test_schema_conversion_of_patch_strategies() -> None:
    """Without x-kubernetes-list-type, a merge patch strategy makes a list associative (by its merge key,
    or a set without one) as kube-openapi's schema converter does; otherwise lists are atomic."""
    t = typed.compile_schema({"type": "array", "items": {"type": "object", "properties": {"n": {"type": "string"}}},
                               "x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": "n"})
    assert (t.atomic, t.keys) == (False, ("n",))
    t = typed.compile_schema({"type": "array", "items": {"type": "string"}, "x-kubernetes-patch-strategy": "merge"})
    assert (t.atomic, t.keys) == (False, ())
    t = typed.compile_schema({"type": "array", "items": {"type": "string"}})
    assert t.atomic
    t = typed.compile_schema({"type": "object", "additionalProperties": {"type": "string"},
                               "x-kubernetes-map-type": "atomic"})
    assert t.atomic


def test_last_applied_value() -> None:
    cfg = {"kind": "ConfigMap", "apiVersion": "v1",
           "metadata": {"name": "c", "annotations": {fieldmanager.LAST_APPLIED: "old", "a": "<b>"}},
           "data": {"z": "1", "a": "&"}}
    assert fieldmanager.last_applied_value(cfg) == (
        '{"apiVersion":"v1","data":{"a":"\\u0026","z":"1"},"kind":"ConfigMap",'
        '"metadata":{"annotations":{"a":"\\u003cb\\u003e"},"name":"c"}}\n')
    cfg["metadata"].pop("annotations")
    assert '"annotations"' not in fieldmanager.last_applied_value(cfg)


def test_identical_entries_but_time() -> None:
    a = [{"manager": "m", "operation": "Apply", "apiVersion": "v1", "time": T0, "fieldsType": "FieldsV1",
          "fieldsV1": {"f:a": {}}}]
    b = [{**a[0], "time": T1}]
    assert fieldmanager.same_entries(a, b)
    assert not fieldmanager.same_entries(a, [{**b[0], "fieldsV1": {"f:b": {}}}])
    assert not fieldmanager.same_entries(a, [])


def test_fieldsv1_survives_the_set_operations_in_order() -> None:
    obj = _created(kubectl_create_body())
    new = copy.deepcopy(obj)
    new["spec"]["template"]["spec"]["containers"].append({"name": "b", "image": "b", "ports": [
        {"containerPort": 9000}, {"containerPort": 443}]})
    defaulting.apply_defaults(new, group="apps", version="v1", kind="Deployment")
    out = fieldmanager.on_update(DEPLOY, obj, new, manager="kubectl-create", subresource="", now=T1,
                                 requested=obj["metadata"]["managedFields"])
    assert out is not None
    (entry,) = out
    fields = entry["fieldsV1"]
    assert json.dumps(fields) == json.dumps(fp.canonical(fields))
    containers = fields["f:spec"]["f:template"]["f:spec"]["f:containers"]
    assert list(containers) == ['k:{"name":"b"}', 'k:{"name":"nginx"}']
    assert list(containers['k:{"name":"b"}']["f:ports"]) == [
        ".", 'k:{"containerPort":443,"protocol":"TCP"}', 'k:{"containerPort":9000,"protocol":"TCP"}']
    assert entry["time"] == T1
