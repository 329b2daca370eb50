"""What objects count against quota (cp.quota.evaluators), beyond what the HTTP tests show: pods
stop counting compute resources when they finish or are stuck terminating, claims' scopes of
VolumeAttributesClass, the names each evaluator accepts, and the special DRA claim of a pod that
is exempt only when the pod (same uid) names it or names none and it is its first."""

from __future__ import annotations

from typing import Any

import pytest

from cp import quota
from cp import resourcelists as rl
from cp.quota import evaluators as ev

NOW = 1_800_000_000.0


def _ctx(**kw: Any) -> quota.UsageContext:
    return quota.UsageContext(now=NOW, **kw)


def _pod(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "hugepages-2Mi": "4Mi",
                                                                             "example.com/fpga": "1"}}}], **spec}}


def test_the_dra_names_are_the_dra_packages() -> None:
    from cp import dra
    from cp.dra import extended

    assert ev.ALLOCATION_RESULTS_MAX_SIZE == dra.ALLOCATION_RESULTS_MAX_SIZE
    assert ev.DEVICE_CLASS_RESOURCE_PREFIX == extended.DEVICE_CLASS_RESOURCE_PREFIX
    assert ev.EXTENDED_RESOURCE_CLAIM_ANNOTATION == extended.EXTENDED_RESOURCE_CLAIM_ANNOTATION


def test_pod_usage_while_charged() -> None:
    assert rl.render(ev.pod_usage(_pod(), now=NOW)) == {
        "count/pods": "1", "cpu": "1", "hugepages-2Mi": "4Mi", "pods": "1", "requests.cpu": "1",
        "requests.example.com/fpga": "1", "requests.hugepages-2Mi": "4Mi"}
    done = {**_pod(), "status": {"phase": "Succeeded"}}
    assert rl.render(ev.pod_usage(done, now=NOW)) == {"count/pods": "1"}  # object count only
    stuck = _pod()
    stuck["metadata"].update(deletionTimestamp="2027-01-15T08:00:00Z", deletionGracePeriodSeconds=30)
    assert ev.pod_is_charged(stuck, now=NOW + 10)
    assert not ev.pod_is_charged(stuck, now=NOW + 31)


def test_matching_resources() -> None:
    pods = quota.evaluator_for("", "pods")
    names = ["pods", "requests.cpu", "requests.nvidia.com/gpu", "nvidia.com/gpu", "requests.kubernetes.io/x",
             "requests.deviceclass.resource.kubernetes.io/gpu", "hugepages-1Gi", "services", "count/pods"]
    assert pods.matching_resources(names) == ["count/pods", "hugepages-1Gi", "pods", "requests.cpu",
                                              "requests.deviceclass.resource.kubernetes.io/gpu",
                                              "requests.nvidia.com/gpu"]
    claims = quota.evaluator_for("resource.k8s.io", "resourceclaims", ctx=_ctx(
        class_extended_names={"gpu": "nvidia.com/gpu"},
        extended_resource_classes={"nvidia.com/gpu": "gpu", "deviceclass.resource.kubernetes.io/gpu": "gpu",
                                   "deviceclass.resource.kubernetes.io/tpu": "tpu"}))
    assert claims.matching_resources([
        "count/resourceclaims.resource.k8s.io", "gpu.deviceclass.resource.k8s.io/devices", "requests.nvidia.com/gpu",
        "requests.other.com/gpu", "requests.deviceclass.resource.kubernetes.io/gpu",
        "requests.deviceclass.resource.kubernetes.io/tpu"]) == [
        "count/resourceclaims.resource.k8s.io", "gpu.deviceclass.resource.k8s.io/devices",
        "requests.deviceclass.resource.kubernetes.io/gpu", "requests.deviceclass.resource.kubernetes.io/tpu",
        "requests.nvidia.com/gpu"]
    counts = quota.evaluator_for("", "secrets")
    assert counts.matching_resources(["secrets", "count/secrets", "count/configmaps"]) == ["count/secrets", "secrets"]


def test_volume_attributes_class_scope() -> None:
    pvcs = quota.evaluator_for("", "persistentvolumeclaims")
    pvc = {"spec": {"volumeAttributesClassName": "gold"},
           "status": {"modifyVolumeStatus": {"targetVolumeAttributesClassName": "silver"}}}
    exists = quota.Scope(scope_name="VolumeAttributesClass")
    assert pvcs.matches_scope(exists, pvc) and not pvcs.matches_scope(exists, {"spec": {}})
    assert pvcs.matches_scope(quota.Scope(scope_name="VolumeAttributesClass", operator="In", values=("silver",)), pvc)
    assert not pvcs.matches_scope(quota.Scope(scope_name="VolumeAttributesClass", operator="In",
                                              values=("bronze",)), pvc)
    assert pvcs.matches_scope(quota.Scope(scope_name="VolumeAttributesClass", operator="DoesNotExist"), {"spec": {}})
    with pytest.raises(quota.ScopeError, match='"Sometimes" is not a valid scope selector operator'):
        pvcs.matches_scope(quota.Scope(scope_name="VolumeAttributesClass", operator="Sometimes"), pvc)


def _special(name: str, created: str, *, uid: str = "u1") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "creationTimestamp": created,
                         "annotations": {"resource.kubernetes.io/extended-resource-claim": "true"},
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": uid,
                                              "controller": True}]},
            "spec": {"devices": {"requests": [{"name": "r", "exactly": {
                "deviceClassName": "fpga", "allocationMode": "ExactCount", "count": 1}}]}}}


def test_the_special_claim_of_a_pod_is_not_charged_twice() -> None:
    pod = _pod()
    first, second = _special("first", "2027-01-15T08:00:00Z"), _special("second", "2027-01-15T08:00:01Z")
    ctx = _ctx(class_extended_names={"fpga": "example.com/fpga"}, pod=lambda ns, name: pod,
               owned_claims=lambda ns, uid: [first, second])
    claims = quota.evaluator_for("resource.k8s.io", "resourceclaims", ctx=ctx)
    assert "requests.example.com/fpga" not in claims.usage(first, ctx)  # the pod counts it already
    assert rl.render(claims.usage(second, ctx))["requests.example.com/fpga"] == "1"  # not the pod's first claim
    pod["status"] = {"extendedResourceClaimStatus": {"resourceClaimName": "second", "requestMappings": []}}
    assert "requests.example.com/fpga" not in claims.usage(second, ctx)
    assert "requests.example.com/fpga" in claims.usage(first, ctx)
    impostor = _special("first", "2027-01-15T08:00:00Z", uid="someone-else")
    assert "requests.example.com/fpga" in claims.usage(impostor, ctx)
