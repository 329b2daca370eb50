"""The namespace controller's reconcile, sample-controller style (fake client, recorded writes):
nothing for a live namespace; for a terminating one, a deletecollection per namespaced kind, the
five status conditions, then the finalize call without `kubernetes`; content that keeps
finalizers holds the namespace (conditions say why, and it checks back after estimate/2+1 s);
unchanged conditions are not rewritten; a deletion in a terminating namespace enqueues it.

Out of scope: the server removing the namespace (test_namespace_integration.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from controllers import namespace as namespaces
from controllers.runtime import manager as managers
from controllers.runtime import reconcile
from cp import clock as clocks
from tests.controllers.support import FakeClient, cm, seeded_informers


def _ns(name: str, *, deleting: bool = True, phase: str = "Terminating") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if deleting:
        meta["deletionTimestamp"] = "2027-01-15T08:00:00Z"
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta,
            "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": phase}}


def _controller(fake: FakeClient) -> namespaces.NamespaceController:
    factory = seeded_informers(fake)
    recorder = managers.EventRecorder(fake, component="namespace-controller", clock=fake.clock)  # type: ignore[arg-type]
    return namespaces.NamespaceController(client=fake, informer_factory=factory, clock=fake.clock,  # type: ignore[arg-type]
                                          recorder=recorder)


def _conditions(obj: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in obj["status"]["conditions"]}


async def test_live_namespace_is_left_alone() -> None:
    fake = FakeClient(("namespaces", _ns("app", deleting=False, phase="Active")), ("configmaps", cm("a", "app")))
    nc = _controller(fake)
    assert await nc.reconcile(reconcile.Request(name="app")) is None
    assert fake.writes == []
    assert await nc.reconcile(reconcile.Request(name="missing")) is None


async def test_terminating_namespace_is_emptied_then_finalized() -> None:
    fake = FakeClient(("namespaces", _ns("app")), ("configmaps", cm("a", "app")), ("configmaps", cm("b", "app")),
                      ("configmaps", cm("elsewhere", "default")))
    nc = _controller(fake)
    assert await nc.reconcile(reconcile.Request(name="app")) is None
    writes = fake.writes
    collections = [a for a in writes if a.verb == "deletecollection"]
    assert [a.resource for a in collections] == [k.group_resource for k in namespaces.content_kinds()]
    assert collections[0].resource == "pods"
    assert all(a.namespace == "app" and a.body == {"propagationPolicy": "Background"} for a in collections)
    status_write, finalize = writes[len(collections):]
    assert (status_write.verb, status_write.subresource) == ("update", "status")
    assert _conditions(status_write.body) == {
        "NamespaceDeletionDiscoveryFailure": ("False", "ResourcesDiscovered", "All resources successfully discovered"),
        "NamespaceDeletionGroupVersionParsingFailure": ("False", "ParsedGroupVersions",
                                                        "All legacy kube types successfully parsed"),
        "NamespaceDeletionContentFailure": ("False", "ContentDeleted",
                                            "All content successfully deleted, may be waiting on finalization"),
        "NamespaceContentRemaining": ("False", "ContentRemoved", "All content successfully removed"),
        "NamespaceFinalizersRemaining": ("False", "ContentHasNoFinalizers",
                                         "All content-preserving finalizers finished"),
    }
    assert (finalize.verb, finalize.subresource) == ("update", "finalize")
    assert finalize.body["spec"]["finalizers"] == []
    assert fake.stored("configmaps", "elsewhere", "default") is not None
    assert fake.stored("namespaces", "app") is None


async def test_content_with_finalizers_holds_the_namespace() -> None:
    fake = FakeClient(("namespaces", _ns("app")),
                      ("configmaps", cm("held", "app", finalizers=["example.com/hold"])),
                      ("configmaps", cm("gone", "app")))
    nc = _controller(fake)
    result = await nc.reconcile(reconcile.Request(name="app"))
    assert result == reconcile.Result(requeue_after=namespaces.FINALIZER_ESTIMATE_SECONDS / 2 + 1)
    status_writes = [a for a in fake.writes if a.subresource == "status"]
    assert len(status_writes) == 1
    conditions = _conditions(status_writes[0].body)
    assert conditions["NamespaceContentRemaining"] == (
        "True", "SomeResourcesRemain", "Some resources are remaining: configmaps. has 1 resource instances")
    assert conditions["NamespaceFinalizersRemaining"] == (
        "True", "SomeFinalizersRemain",
        "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances")
    assert not [a for a in fake.writes if a.subresource == "finalize"]

    # A second pass with nothing new does not rewrite the conditions.
    fake.actions.clear()
    await nc.reconcile(reconcile.Request(name="app"))
    assert not [a for a in fake.writes if a.subresource == "status"]

    # The finalizer goes: the next pass flips the conditions and finalizes.
    held = fake.objects[("configmaps", "app", "held")]
    held["metadata"]["finalizers"] = []
    del fake.objects[("configmaps", "app", "held")]
    fake.actions.clear()
    fake.clock.advance(60)  # type: ignore[attr-defined]
    assert await nc.reconcile(reconcile.Request(name="app")) is None
    status_writes = [a for a in fake.writes if a.subresource == "status"]
    assert _conditions(status_writes[0].body)["NamespaceContentRemaining"][0] == "False"
    transitions = {c["type"]: c["lastTransitionTime"] for c in status_writes[0].body["status"]["conditions"]}
    # only the conditions whose status flipped get a new transition time
    assert transitions["NamespaceContentRemaining"] != transitions["NamespaceDeletionContentFailure"]
    assert [a.subresource for a in fake.writes][-1] == "finalize"


async def test_phase_is_set_to_terminating_first() -> None:
    fake = FakeClient(("namespaces", _ns("app", phase="Active")))
    nc = _controller(fake)
    await nc.reconcile(reconcile.Request(name="app"))
    first = fake.writes[0]
    assert (first.verb, first.subresource) == ("update", "status")
    assert first.body["status"]["phase"] == "Terminating"


async def test_other_spec_finalizers_are_kept() -> None:
    ns = _ns("app")
    ns["spec"]["finalizers"] = ["kubernetes", "example.com/cleanup"]
    fake = FakeClient(("namespaces", ns))
    nc = _controller(fake)
    await nc.reconcile(reconcile.Request(name="app"))
    assert fake.writes[-1].body["spec"]["finalizers"] == ["example.com/cleanup"]
    assert fake.stored("namespaces", "app") is not None


async def test_pods_grace_period_sets_the_estimate() -> None:
    fake = FakeClient(("namespaces", _ns("app")))
    now = fake.clock.now()
    fake.put("pods", {"metadata": {"name": "p", "namespace": "app", "finalizers": [],
                                   "deletionTimestamp": clocks.rfc3339(now + 40),
                                   "deletionGracePeriodSeconds": 40},
                      "spec": {"nodeName": "n1", "terminationGracePeriodSeconds": 40}})
    nc = _controller(fake)
    # deletecollection on the fake removes objects without finalizers; keep the pod around
    nc._unsupported.add(("pods", "deletecollection"))
    result = await nc.reconcile(reconcile.Request(name="app"))
    assert result is not None and result.requeue_after == pytest.approx(40 / 2 + 1)


def test_content_deletion_in_terminating_namespace_enqueues_it() -> None:
    fake = FakeClient(("namespaces", _ns("app")), ("namespaces", _ns("live", deleting=False, phase="Active")))
    nc = _controller(fake)
    kind = nc.kinds[0]
    gone = cm("x", "app")
    assert list(nc._content_deleted(managers.Change(type="delete", kind=kind, obj=gone))) == [
        reconcile.Request(name="app")]
    assert list(nc._content_deleted(managers.Change(type="add", kind=kind, obj=gone))) == []
    assert list(nc._content_deleted(managers.Change(type="delete", kind=kind, obj=cm("y", "live")))) == []
    assert {w.kind.group_resource for w in nc.watches()} >= {"namespaces", "configmaps", "pods"}
