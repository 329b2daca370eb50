"""The ResourceClaim controller's reconcile, sample-controller style (fake client, recorded
writes): claim generation from a template (generateName with proportional truncation,
annotation, labels, owner reference, spec) and the single pods/status patch; orphan adoption;
a missing template (FailedResourceClaimCreation); reserving an allocated claim for a pod that
bypassed the scheduler; reservation cleanup with deallocation and finalizer removal; deleting a
claim being deleted; deleting generated claims of done or replaced pods; the event → key mapping.

Out of scope: running against a server (test_deployment_integration.py covers claims of pods
made by a Deployment).
"""

from __future__ import annotations

from typing import Any

import pytest

from controllers import resourceclaim as rcc
from controllers.runtime import manager as managers
from controllers.runtime import reconcile
from cp import errors
from tests.controllers.support import Action, seeded_informers
from tests.controllers.workload_support import WorkloadFakeClient, pod, recorder

CLAIMS = "resourceclaims.resource.k8s.io"
TEMPLATES = "resourceclaimtemplates.resource.k8s.io"
CLAIM_SPEC = {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}
ALLOCATION = {"devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "n1",
                                       "device": "gpu-0"}]}}


def _controller(fake: WorkloadFakeClient) -> rcc.ResourceClaimController:
    return rcc.ResourceClaimController(client=fake, informer_factory=seeded_informers(fake),  # type: ignore[arg-type]
                                       recorder=recorder(fake, rcc.COMPONENT), clock=fake.clock)


def _template(name: str = "gpu-template") -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"metadata": {"labels": {"team": "ml"}, "annotations": {"note": "from-template"}},
                     "spec": CLAIM_SPEC}}


def _pod(name: str = "web-1", *, node: str = "", template: str = "gpu-template", **kw: Any) -> dict[str, Any]:
    return pod(name, labels={"app": "web"}, node=node, phase=kw.pop("phase", "Pending"),
               resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": template}], **kw)


def _claim(name: str, *, owner: dict[str, Any] | None = None, pod_claim: str | None = "gpu",
           allocated: bool = False, reserved: list[dict[str, Any]] | None = None,
           finalizer: bool = False, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if owner is not None:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": owner["metadata"]["name"],
                                    "uid": owner["metadata"]["uid"], "controller": True,
                                    "blockOwnerDeletion": True}]
    if pod_claim is not None:
        meta["annotations"] = {rcc.POD_CLAIM_ANNOTATION: pod_claim}
    if finalizer:
        meta["finalizers"] = [rcc.DELETE_PROTECTION]
    if deleting:
        meta["deletionTimestamp"] = "2027-01-15T08:00:00Z"
    status: dict[str, Any] = {}
    if allocated:
        status["allocation"] = ALLOCATION
    if reserved:
        status["reservedFor"] = reserved
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": meta, "spec": CLAIM_SPEC,
            "status": status}


def _ref(p: dict[str, Any]) -> dict[str, Any]:
    return {"resource": "pods", "name": p["metadata"]["name"], "uid": p["metadata"]["uid"]}


def _pod_req(name: str = "web-1") -> reconcile.Request:
    return reconcile.Request(resource="pods", namespace="default", name=name)


def _claim_req(name: str) -> reconcile.Request:
    return reconcile.Request(resource=CLAIMS, namespace="default", name=name)


# ---------------------------------------------------------------------- generation


def test_generate_name_truncates_both_parts_proportionally() -> None:
    assert rcc.generate_name("web-1", "gpu") == "web-1-gpu-"
    pod_name, claim = "p" * 50, "gpu-claim-name"  # base = 66 characters
    assert rcc.generate_name(pod_name, claim) == "p" * 43 + "-" + "gpu-claim-na"  # 50*57//66, 14*57//66
    exact = "a" * 50 + "-" + "b" * 5 + "-"  # 57: kept as is
    assert rcc.generate_name("a" * 50, "b" * 5) == exact


async def test_pod_with_template_gets_a_generated_claim_and_status() -> None:
    fake = WorkloadFakeClient()
    fake.put(TEMPLATES, _template())
    p = fake.put("pods", _pod())
    ctl = _controller(fake)
    await ctl.reconcile(_pod_req())
    (create,) = fake.creates(CLAIMS)
    assert create["metadata"] == {
        "generateName": "web-1-gpu-", "namespace": "default",
        "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "web-1", "uid": p["metadata"]["uid"],
                             "controller": True, "blockOwnerDeletion": True}],
        "annotations": {"note": "from-template", rcc.POD_CLAIM_ANNOTATION: "gpu"},
        "labels": {"team": "ml"}}
    assert create["spec"] == CLAIM_SPEC
    writes = fake.non_event_writes()
    assert [(a.verb, a.resource) for a in writes] == [("create", CLAIMS), ("patch", "pods")]
    assert writes[1] == Action(verb="patch", resource="pods", namespace="default", name="web-1", subresource="status",
                               body={"status": {"resourceClaimStatuses": [
                                   {"name": "gpu", "resourceClaimName": "web-1-gpu-bbbbb"}]}})
    stored = fake.stored("pods", "web-1", "default")
    assert stored is not None and stored["status"]["resourceClaimStatuses"] == [
        {"name": "gpu", "resourceClaimName": "web-1-gpu-bbbbb"}]


async def test_several_claims_are_recorded_in_one_status_patch() -> None:
    fake = WorkloadFakeClient()
    fake.put(TEMPLATES, _template())
    fake.put(TEMPLATES, _template("nic"))
    body = _pod()
    body["spec"]["resourceClaims"].append({"name": "net", "resourceClaimTemplateName": "nic"})
    body["spec"]["resourceClaims"].append({"name": "shared", "resourceClaimName": "user-made"})
    fake.put("pods", body)
    ctl = _controller(fake)
    await ctl.reconcile(_pod_req())
    assert len(fake.creates(CLAIMS)) == 2
    (patch,) = [a for a in fake.writes if a.verb == "patch"]
    assert patch.body == {"status": {"resourceClaimStatuses": [
        {"name": "gpu", "resourceClaimName": "web-1-gpu-bbbbb"},
        {"name": "net", "resourceClaimName": "web-1-net-bbbbc"}]}}


async def test_orphaned_claim_is_adopted_instead_of_created() -> None:
    fake = WorkloadFakeClient()
    fake.put(TEMPLATES, _template())
    p = fake.put("pods", _pod())
    fake.put(CLAIMS, _claim("web-1-gpu-xyz12", owner=p))
    ctl = _controller(fake)
    await ctl.reconcile(_pod_req())
    assert fake.creates(CLAIMS) == []
    (patch,) = [a for a in fake.writes if a.verb == "patch"]
    assert patch.body == {"status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "web-1-gpu-xyz12"}]}}


async def test_a_retry_before_the_informer_catches_up_does_not_create_twice() -> None:
    fake = WorkloadFakeClient()
    fake.put(TEMPLATES, _template())
    fake.put("pods", _pod())
    ctl = _controller(fake)
    fake.create_failures["events"] = []
    # the status patch fails after the claim was created
    original = fake.patch

    async def failing_patch(*args: Any, **kw: Any) -> dict[str, Any]:
        raise errors.InternalError("etcd timeout")

    fake.patch = failing_patch  # type: ignore[method-assign]
    with pytest.raises(errors.InternalError):
        await ctl.reconcile(_pod_req())
    fake.patch = original  # type: ignore[method-assign]
    await ctl.reconcile(_pod_req())  # the claim cache has not seen the claim
    assert len(fake.creates(CLAIMS)) == 1


async def test_existing_owned_claim_means_nothing_to_do() -> None:
    fake = WorkloadFakeClient()
    fake.put(TEMPLATES, _template())
    body = _pod()
    body["status"]["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": "web-1-gpu-abcde"}]
    p = fake.put("pods", body)
    fake.put(CLAIMS, _claim("web-1-gpu-abcde", owner=p))
    ctl = _controller(fake)
    await ctl.reconcile(_pod_req())
    assert fake.writes == []
    assert not ctl.pod_needs_work(p)


async def test_missing_template_emits_failed_resource_claim_creation() -> None:
    fake = WorkloadFakeClient()
    fake.put("pods", _pod(template="nope"))
    ctl = _controller(fake)
    with pytest.raises(errors.NotFound):
        await ctl.reconcile(_pod_req())
    (event,) = fake.events()
    assert event["type"] == "Warning" and event["reason"] == "FailedResourceClaimCreation"
    assert event["message"] == ('PodResourceClaim gpu: resource claim template "nope": '
                                'resourceclaimtemplate.resource.k8s.io "nope" not found')
    assert event["source"] == {"component": "resource_claim"}
    assert fake.non_event_writes() == []


async def test_refused_create_is_reported_too() -> None:
    fake = WorkloadFakeClient()
    fake.put(TEMPLATES, _template())
    fake.put("pods", _pod())
    fake.create_failures[CLAIMS] = [errors.Forbidden("resourceclaims is forbidden: exceeded quota")]
    ctl = _controller(fake)
    with pytest.raises(rcc.ClaimCreationFailed):
        await ctl.reconcile(_pod_req())
    (event,) = fake.events("FailedResourceClaimCreation")
    assert event["message"] == ("PodResourceClaim gpu: create ResourceClaim web-1-gpu-: "
                                "resourceclaims is forbidden: exceeded quota")


async def test_deleting_pod_is_left_alone() -> None:
    fake = WorkloadFakeClient()
    fake.put(TEMPLATES, _template())
    fake.put("pods", _pod(deleting=True))
    ctl = _controller(fake)
    await ctl.reconcile(_pod_req())
    assert fake.writes == []


# ---------------------------------------------------------------------- reservations


async def test_scheduler_bypassed_pod_gets_reserved() -> None:
    fake = WorkloadFakeClient()
    body = _pod(node="n1")
    body["status"]["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": "web-1-gpu-abcde"}]
    p = fake.put("pods", body)
    other = {"resource": "pods", "name": "other", "uid": "uid-other"}
    claim = fake.put(CLAIMS, _claim("web-1-gpu-abcde", owner=p, allocated=True, reserved=[other]))
    ctl = _controller(fake)
    assert ctl.pod_needs_work(p)
    await ctl.reconcile(_pod_req())
    (update,) = fake.writes
    assert (update.verb, update.resource, update.subresource) == ("update", CLAIMS, "status")
    assert update.body["status"] == {"allocation": ALLOCATION, "reservedFor": [other, _ref(p)]}
    assert update.body["metadata"]["resourceVersion"] == claim["metadata"]["resourceVersion"]


async def test_unallocated_or_full_claims_are_not_reserved() -> None:
    fake = WorkloadFakeClient()
    body = _pod(node="n1")
    body["spec"]["resourceClaims"] = [{"name": "a", "resourceClaimName": "free"},
                                      {"name": "b", "resourceClaimName": "full"}]
    p = fake.put("pods", body)
    fake.put(CLAIMS, _claim("free", pod_claim=None))
    full = [{"resource": "pods", "name": f"p{i}", "uid": f"u{i}"} for i in range(rcc.RESERVED_FOR_MAX)]
    fake.put(CLAIMS, _claim("full", pod_claim=None, allocated=True, reserved=full))
    ctl = _controller(fake)
    assert not ctl.pod_needs_work(p)
    await ctl.reconcile(_pod_req())
    assert fake.writes == []


async def test_reservation_of_a_deleted_pod_is_dropped_and_the_claim_deallocated() -> None:
    fake = WorkloadFakeClient()
    gone = {"resource": "pods", "name": "gone", "uid": "uid-gone"}
    claim = fake.put(CLAIMS, _claim("shared", pod_claim=None, allocated=True, reserved=[gone], finalizer=True))
    ctl = _controller(fake)
    await ctl.reconcile(_claim_req("shared"))
    assert [(a.verb, a.resource, a.name) for a in fake.actions if a.verb == "get"] == [("get", "pods", "gone")]
    status_update, finalizer_update = fake.writes
    assert status_update.subresource == "status"
    assert status_update.body["status"] == {}  # reservedFor emptied and allocation cleared in ONE update
    assert status_update.body["metadata"]["resourceVersion"] == claim["metadata"]["resourceVersion"]
    assert (finalizer_update.verb, finalizer_update.subresource) == ("update", "")
    assert finalizer_update.body["metadata"]["finalizers"] == []
    stored = fake.stored(CLAIMS, "shared", "default")
    assert stored is not None and not stored["metadata"].get("finalizers")


async def test_known_deleted_pod_needs_no_api_call_and_live_pods_stay() -> None:
    fake = WorkloadFakeClient()
    live = fake.put("pods", _pod("live", node="n1", phase="Running"))
    done = fake.put("pods", _pod("done", node="n1", phase="Succeeded"))
    replaced = fake.put("pods", _pod("replaced", node="n1", phase="Running"))
    entries = [_ref(live), _ref(done), {**_ref(replaced), "uid": "uid-earlier"},
               {"resource": "pods", "name": "deleted", "uid": "uid-deleted"}]
    fake.put(CLAIMS, _claim("shared", pod_claim=None, allocated=True, reserved=entries, finalizer=True))
    ctl = _controller(fake)
    ctl.deleted.add("uid-deleted")
    await ctl.reconcile(_claim_req("shared"))
    assert [a for a in fake.actions if a.verb == "get"] == []
    (update,) = fake.writes  # one consumer left: still allocated, finalizer kept
    assert update.body["status"] == {"allocation": ALLOCATION, "reservedFor": [_ref(live)]}


async def test_pod_missing_from_cache_but_live_keeps_its_reservation() -> None:
    fake = WorkloadFakeClient()
    claim = _claim("shared", pod_claim=None, allocated=True, finalizer=True)
    fake.put(CLAIMS, claim)
    ctl = _controller(fake)
    newcomer = fake.put("pods", _pod("newcomer", node="n1"))  # not in the informer cache
    fake.objects[(CLAIMS, "default", "shared")]["status"]["reservedFor"] = [_ref(newcomer)]
    ctl.claim_cache.upsert(dict(fake.objects[(CLAIMS, "default", "shared")]))
    await ctl.reconcile(_claim_req("shared"))
    assert fake.writes == []


async def test_claim_being_deleted_without_consumers_is_deallocated_and_released() -> None:
    fake = WorkloadFakeClient()
    fake.put(CLAIMS, _claim("shared", pod_claim=None, allocated=True, finalizer=True, deleting=True))
    ctl = _controller(fake)
    await ctl.reconcile(_claim_req("shared"))
    status_update, finalizer_update = fake.writes
    assert status_update.subresource == "status" and status_update.body["status"] == {}
    assert finalizer_update.body["metadata"]["finalizers"] == []
    assert fake.stored(CLAIMS, "shared", "default") is None  # the last finalizer went: deleted


async def test_generated_claim_of_a_done_or_replaced_pod_is_deleted() -> None:
    fake = WorkloadFakeClient()
    done = fake.put("pods", _pod("done", node="n1", phase="Failed"))
    fake.put(CLAIMS, _claim("done-gpu-abcde", owner=done))
    replaced = fake.put("pods", _pod("replaced", node="n1", phase="Running"))
    stale = _claim("replaced-gpu-abcde", owner=replaced)
    stale["metadata"]["ownerReferences"][0]["uid"] = "uid-earlier-pod"
    fake.put(CLAIMS, stale)
    running = fake.put("pods", _pod("running", node="n1", phase="Running"))
    fake.put(CLAIMS, _claim("running-gpu-abcde", owner=running))
    ghost_owner = {"metadata": {"name": "ghost", "uid": "uid-ghost"}}
    fake.put(CLAIMS, _claim("ghost-gpu-abcde", owner=ghost_owner))
    ctl = _controller(fake)
    for name in ("done-gpu-abcde", "replaced-gpu-abcde", "running-gpu-abcde", "ghost-gpu-abcde"):
        await ctl.reconcile(_claim_req(name))
    assert [(a.verb, a.name) for a in fake.writes] == [("delete", "done-gpu-abcde"),
                                                       ("delete", "replaced-gpu-abcde")]


# ---------------------------------------------------------------------- event mapping


def test_pod_events_enqueue_pods_and_claims() -> None:
    fake = WorkloadFakeClient()
    fake.put(TEMPLATES, _template())
    needs = fake.put("pods", _pod("needs"))
    ctl = _controller(fake)
    kind = rcc.PODS
    assert ctl.map_pod(managers.Change(type="add", kind=kind, obj=needs)) == [_pod_req("needs")]
    plain = fake.put("pods", pod("plain", labels={}))
    assert ctl.map_pod(managers.Change(type="add", kind=kind, obj=plain)) == []
    body = _pod("finished", node="n1", phase="Succeeded")
    body["status"]["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": "finished-gpu-abcde"}]
    finished = fake.put("pods", body)
    ctl.claim_cache.upsert(fake.put(CLAIMS, _claim("finished-gpu-abcde", owner=finished)))
    # a terminal pod: its claims are looked at (release), the pod itself needs nothing
    assert ctl.map_pod(managers.Change(type="update", kind=kind, obj=finished, old=finished)) == [
        _claim_req("finished-gpu-abcde")]
    assert ctl.map_pod(managers.Change(type="delete", kind=kind, obj=finished)) == [_claim_req("finished-gpu-abcde")]
    assert finished["metadata"]["uid"] in ctl.deleted


def test_claim_and_template_events_enqueue_their_pods() -> None:
    fake = WorkloadFakeClient()
    body = _pod(node="n1")
    body["status"]["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": "web-1-gpu-abcde"}]
    p = fake.put("pods", body)
    waiting = fake.put("pods", _pod("waiting", template="late"))
    claim = fake.put(CLAIMS, _claim("web-1-gpu-abcde", owner=p, allocated=True))
    ctl = _controller(fake)
    assert ctl.map_claim(managers.Change(type="update", kind=rcc.CLAIMS, obj=claim)) == [
        _claim_req("web-1-gpu-abcde"), _pod_req("web-1")]
    template = fake.put(TEMPLATES, _template("late"))
    assert ctl.map_template(managers.Change(type="add", kind=rcc.TEMPLATES, obj=template)) == [
        _pod_req(waiting["metadata"]["name"])]


def test_finished_pod_needs_no_claims() -> None:
    """A Succeeded pod whose generated claim was deleted does not get it re-created (no create/delete
    loop): upstream's podNeedsClaims is false for terminated pods."""
    import controllers.resourceclaim as rc

    pod = {"metadata": {"name": "p", "namespace": "default", "uid": "u1"},
           "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}]},
           "status": {"phase": "Succeeded", "resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "p-gpu-x"}]}}
    assert rc._pod_done(pod)
    pod["status"]["phase"] = "Running"
    assert not rc._pod_done(pod)
