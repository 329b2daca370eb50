"""Upstream's binding-condition cases of the DynamicResources plugin (dynamicresources_test.go:
bound-claim-with-succeeded-binding-conditions, bound-claim-with-failed-binding,
bound-claim-with-timed-out-binding, bound-claim-with-mixed-binding-conditions,
bound-claim-without-binding-conditions, multi-claims-binding-conditions-all-success,
multi-claims-binding-conditions-one-fail), through one reconcile of the scheduler against a fake
API client: the pod's claims are allocated already (to devices of a fabric slice for worker "n1");
the verdict is the binding (with the claims reserved) or upstream's Filter message on the node and
PostFilter's deallocation of the failed claim (allocation and device statuses cleared)."""

from __future__ import annotations

from typing import Any

import pytest

from cp import clock as clocks
from tests.controllers.scheduler.test_scheduler_writes import CLAIMS, REQUEST, Fake, build
from tests.controllers.support import START, settle

DRIVER = "gpu.example.com"
NOT_AVAILABLE = ("0/1 nodes are available: 1 resourceclaim not available on the node. "
                 "deallocation of ResourceClaim completed, preemption: 0/1 nodes are available: "
                 "1 Preemption is not helpful for scheduling.")


def allocated(name: str, device: str, *, bc: bool = True, stamp: float = START,
              conditions: dict[str, str] | None = None) -> tuple[str, dict[str, Any]]:
    result: dict[str, Any] = {"request": "gpu", "driver": DRIVER, "pool": "n1", "device": device}
    if bc:
        result |= {"bindingConditions": ["condition1", "condition2"], "bindingFailureConditions": ["failed"]}
    status: dict[str, Any] = {"allocation": {"devices": {"results": [result]},
                                             "allocationTimestamp": clocks.rfc3339(stamp),
                                             "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                                                 {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}}
    if conditions is not None:
        status["devices"] = [{"driver": DRIVER, "pool": "n1", "device": device, "conditions": [
            {"type": t, "status": st, "reason": "Because", "message": "", "lastTransitionTime": clocks.rfc3339(START)}
            for t, st in conditions.items()]}]
    return (CLAIMS, {"metadata": {"name": name, "namespace": "default", "finalizers": [
        "resource.kubernetes.io/delete-protection"]}, "spec": {"devices": {"requests": [
            {"name": "gpu", "exactly": {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1}}]}},
        "status": status})


def world(*claims: tuple[str, dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    pod_claims = [{"name": f"c{i}", "resourceClaimName": c[1]["metadata"]["name"]} for i, c in enumerate(claims)]
    return [
        ("nodes", {"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "10"}}}),
        ("resourceslices.resource.k8s.io", {"metadata": {"name": "n1-fabric"}, "spec": {
            "driver": DRIVER, "nodeName": "n1", "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": d, "bindingConditions": ["condition1", "condition2"],
                         "bindingFailureConditions": ["failed"]} for d in ("instance-1", "instance-2")]}}),
        ("deviceclasses.resource.k8s.io", {"metadata": {"name": "gpu"}, "spec": {"selectors": [
            {"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}}),
        ("namespaces", {"metadata": {"name": "default"}}),
        *claims,
        ("pods", {"metadata": {"name": "p1", "namespace": "default"}, "spec": {
            "schedulerName": "default-scheduler", "containers": [{"name": "app"}], "resourceClaims": pod_claims}}),
    ]


ALL_TRUE = {"condition1": "True", "condition2": "True"}
CASES = [
    # (name, claims, bound, names of the claims PostFilter deallocates)
    ("bound-claim-with-succeeded-binding-conditions", [allocated("claim", "instance-1", conditions=ALL_TRUE)],
     True, []),
    ("bound-claim-with-failed-binding",
     [allocated("claim", "instance-1", conditions={"condition1": "True", "failed": "True"})], False, ["claim"]),
    ("bound-claim-with-timed-out-binding",
     [allocated("claim", "instance-1", stamp=START - 601, conditions={"condition1": "True"})], False, ["claim"]),
    ("bound-claim-with-mixed-binding-conditions",
     [allocated("claim", "instance-1", stamp=START - 600 - 10, conditions={"condition1": "True", "condition2": "False"})],
     False, ["claim"]),
    ("bound-claim-without-binding-conditions", [allocated("claim", "instance-1", bc=False)], True, []),
    ("multi-claims-binding-conditions-all-success",
     [allocated("claim", "instance-1", conditions=ALL_TRUE), allocated("claim-2", "instance-2", conditions=ALL_TRUE)],
     True, []),
    ("multi-claims-binding-conditions-one-fail",
     [allocated("claim", "instance-1", conditions=ALL_TRUE),
      allocated("claim-2", "instance-2", conditions={"failed": "True"})], False, ["claim-2"]),
]


@pytest.mark.parametrize(("name", "claims", "bound", "deallocated"), CASES, ids=[c[0] for c in CASES])
async def test_binding_condition_cases(name: str, claims: list[tuple[str, dict[str, Any]]], bound: bool,
                                       deallocated: list[str]) -> None:
    fake = Fake(*world(*claims))
    sched = build(fake)
    await sched.reconcile(REQUEST)
    await settle(50)  # a binding cycle with binding conditions runs beside the worker
    if bound:
        assert fake.bound == [("p1", "n1")]
        for _kind, c in claims:
            stored = fake.stored(CLAIMS, c["metadata"]["name"], "default")
            assert stored is not None and [r["name"] for r in stored["status"]["reservedFor"]] == ["p1"]
        return
    assert fake.bound == []
    conditions = [a.body["status"]["conditions"][0] for a in fake.actions
                  if a.verb == "patch" and a.resource == "pods" and a.subresource == "status"]
    assert [c["message"] for c in conditions] == [NOT_AVAILABLE]
    writes = [a for a in fake.actions if a.verb == "update" and a.resource == CLAIMS and a.subresource == "status"]
    assert [a.name for a in writes] == deallocated
    for a in writes:
        assert not {"allocation", "reservedFor", "devices"} & set(a.body.get("status") or {})
