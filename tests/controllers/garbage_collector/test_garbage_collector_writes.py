"""The garbage collector's reconcile, sample-controller style: objects are pushed straight into
informer caches and a fake client; reconcile is called directly; the recorded writes are compared
with the expected ones. Covers dangling owners (absent, or replaced by another uid), solid owners
(no API call at all), mixed owners (reference removal), the orphan and foreground flows, an
invalid cluster-scoped → namespaced reference, unknown owner kinds, and the event → key mapping.

Out of scope: running against a server (test_garbage_collector_integration.py).
"""

from __future__ import annotations

from typing import Any

from controllers import garbage_collector as gcs
from controllers.runtime import manager as managers
from controllers.runtime import reconcile
from tests.controllers.support import Action, FakeClient, cm, owner_ref, seeded_informers, sync_caches


def _gc(fake: FakeClient) -> tuple[gcs.GarbageCollector, Any]:
    factory = seeded_informers(fake)
    recorder = managers.EventRecorder(fake, component="garbage-collector-controller",  # type: ignore[arg-type]
                                      clock=fake.clock)
    return gcs.GarbageCollector(client=fake, informer_factory=factory, recorder=recorder), factory  # type: ignore[arg-type]


def _req(name: str, resource: str = "configmaps", namespace: str = "default") -> reconcile.Request:
    return reconcile.Request(resource=resource, namespace=namespace, name=name)


def _delete(name: str, *, uid: str, rv: str, policy: str = "Background") -> Action:
    return Action(verb="delete", resource="configmaps", namespace="default", name=name,
                  body={"propagationPolicy": policy, "preconditions": {"uid": uid, "resourceVersion": rv}})


async def test_dependent_of_absent_owner_is_deleted() -> None:
    ghost = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "uid-gone"}
    fake = FakeClient()
    dep = fake.put("configmaps", cm("dep", owners=[ghost]))
    gc, _ = _gc(fake)
    assert await gc.reconcile(_req("dep")) is None
    assert fake.writes == [_delete("dep", uid=dep["metadata"]["uid"], rv=dep["metadata"]["resourceVersion"])]
    # the owner is looked up live (cache miss), the dependent re-read before it is deleted
    assert [(a.verb, a.name) for a in fake.actions] == [("get", "owner"), ("get", "dep"), ("delete", "dep")]
    assert "uid-gone" in gc.absent
    assert fake.stored("configmaps", "dep", "default") is None


async def test_solid_owner_makes_no_calls() -> None:
    owner = cm("owner")
    fake = FakeClient(("configmaps", owner))
    fake.put("configmaps", cm("dep", owners=[owner_ref(owner, controller=True)]))
    gc, _ = _gc(fake)
    assert await gc.reconcile(_req("dep")) is None
    assert fake.actions == []


async def test_owner_replaced_by_another_uid_counts_as_gone() -> None:
    owner = cm("owner")
    fake = FakeClient(("configmaps", owner))
    stale_ref = dict(owner_ref(owner), uid="uid-of-an-earlier-owner")
    dep = fake.put("configmaps", cm("dep", owners=[stale_ref]))
    gc, _ = _gc(fake)
    await gc.reconcile(_req("dep"))
    assert fake.writes == [_delete("dep", uid=dep["metadata"]["uid"], rv=dep["metadata"]["resourceVersion"])]


async def test_dangling_refs_removed_when_a_solid_owner_remains() -> None:
    alive = cm("alive")
    fake = FakeClient(("configmaps", alive))
    ghost = {"apiVersion": "v1", "kind": "ConfigMap", "name": "ghost", "uid": "uid-ghost"}
    dep = fake.put("configmaps", cm("dep", owners=[owner_ref(alive), ghost]))
    gc, _ = _gc(fake)
    await gc.reconcile(_req("dep"))
    assert fake.writes == [Action(verb="patch", resource="configmaps", namespace="default", name="dep", body={
        "metadata": {"resourceVersion": dep["metadata"]["resourceVersion"], "ownerReferences": [owner_ref(alive)]}})]


async def test_orphan_removes_refs_then_the_finalizer() -> None:
    owner = cm("owner", finalizers=["orphan"], deleting=True)
    fake = FakeClient(("configmaps", owner))
    other = fake.put("configmaps", cm("other"))
    d1 = fake.put("configmaps", cm("d1", owners=[owner_ref(owner)]))
    d2 = fake.put("configmaps", cm("d2", owners=[owner_ref(owner), owner_ref(other)]))
    gc, _ = _gc(fake)
    await gc.reconcile(_req("owner"))
    assert fake.writes == [
        Action(verb="patch", resource="configmaps", namespace="default", name="d1",
               body={"metadata": {"resourceVersion": d1["metadata"]["resourceVersion"], "ownerReferences": None}}),
        Action(verb="patch", resource="configmaps", namespace="default", name="d2",
               body={"metadata": {"resourceVersion": d2["metadata"]["resourceVersion"],
                                  "ownerReferences": [owner_ref(other)]}}),
        Action(verb="patch", resource="configmaps", namespace="default", name="owner",
               body={"metadata": {"resourceVersion": owner["metadata"]["resourceVersion"], "finalizers": None}}),
    ]
    assert fake.stored("configmaps", "owner", "default") is None  # finalizers gone → deleted
    assert "ownerReferences" not in fake.stored("configmaps", "d1", "default")["metadata"]  # type: ignore[index]


async def test_orphan_refetches_on_conflict() -> None:
    owner = cm("owner", finalizers=["orphan"], deleting=True)
    fake = FakeClient(("configmaps", owner))
    fake.put("configmaps", cm("d1", owners=[owner_ref(owner)]))
    gc, factory = _gc(fake)
    # the live dependent moved on since the cache saw it
    fake.objects[("configmaps", "default", "d1")]["metadata"]["resourceVersion"] = "999"
    await gc.reconcile(_req("owner"))
    patches = [(a.name, a.body["metadata"]["resourceVersion"]) for a in fake.actions if a.verb == "patch"]
    assert patches[:2] == [("d1", factory.cache("configmaps").get("default", "d1")["metadata"]["resourceVersion"]),
                           ("d1", "999")]
    assert patches[-1][0] == "owner"


async def test_foreground_waits_for_blocking_dependents_then_releases_owner() -> None:
    owner = cm("owner", finalizers=["foregroundDeletion"], deleting=True)
    fake = FakeClient(("configmaps", owner))
    blocking = fake.put("configmaps", cm("blocking", owners=[owner_ref(owner, block=True)]))
    loose = fake.put("configmaps", cm("loose", owners=[owner_ref(owner)]))
    gc, factory = _gc(fake)

    await gc.reconcile(_req("owner"))
    assert fake.writes == []  # a blocking dependent is left

    # the dependents see an owner waiting for them, and go
    await gc.reconcile(_req("blocking"))
    await gc.reconcile(_req("loose"))
    assert fake.writes == [
        _delete("blocking", uid=blocking["metadata"]["uid"], rv=blocking["metadata"]["resourceVersion"]),
        _delete("loose", uid=loose["metadata"]["uid"], rv=loose["metadata"]["resourceVersion"]),
    ]
    sync_caches(fake, factory)
    fake.actions.clear()
    await gc.reconcile(_req("owner"))
    assert fake.writes == [Action(verb="patch", resource="configmaps", namespace="default", name="owner", body={
        "metadata": {"resourceVersion": owner["metadata"]["resourceVersion"], "finalizers": None}})]


async def test_dependent_with_own_dependents_propagates_foreground() -> None:
    owner = cm("owner", finalizers=["foregroundDeletion"], deleting=True)
    fake = FakeClient(("configmaps", owner))
    middle = fake.put("configmaps", cm("middle", owners=[owner_ref(owner, block=True)]))
    fake.put("configmaps", cm("leaf", owners=[owner_ref(middle, block=True)]))
    gc, _ = _gc(fake)
    await gc.reconcile(_req("middle"))
    assert fake.writes == [_delete("middle", uid=middle["metadata"]["uid"],
                                   rv=middle["metadata"]["resourceVersion"], policy="Foreground")]


async def test_solid_owner_plus_foreground_owner_drops_the_waiting_ref() -> None:
    alive = cm("alive")
    going = cm("going", finalizers=["foregroundDeletion"], deleting=True)
    fake = FakeClient(("configmaps", alive), ("configmaps", going))
    dep = fake.put("configmaps", cm("dep", owners=[owner_ref(alive), owner_ref(going, block=True)]))
    gc, _ = _gc(fake)
    await gc.reconcile(_req("dep"))
    assert fake.writes == [Action(verb="patch", resource="configmaps", namespace="default", name="dep", body={
        "metadata": {"resourceVersion": dep["metadata"]["resourceVersion"], "ownerReferences": [owner_ref(alive)]}})]


async def test_cluster_scoped_dependent_with_namespaced_owner() -> None:
    owner = cm("owner")
    fake = FakeClient(("configmaps", owner))
    node = fake.put("nodes", {"metadata": {"name": "n1", "ownerReferences": [owner_ref(owner)]}})
    gc, _ = _gc(fake)
    await gc.reconcile(_req("n1", resource="nodes", namespace=""))
    writes = fake.writes
    assert [(a.verb, a.resource) for a in writes] == [("create", "events"), ("delete", "nodes")]
    event = writes[0].body
    assert event["reason"] == "OwnerRefInvalidNamespace" and event["type"] == "Warning"
    assert event["involvedObject"]["name"] == "n1" and event["metadata"]["namespace"] == "default"
    assert event["source"] == {"component": "garbage-collector-controller"}
    assert writes[1].body["preconditions"]["uid"] == node["metadata"]["uid"]


async def test_unknown_owner_kind_is_never_collected() -> None:
    foreign = {"apiVersion": "example.com/v1", "kind": "Widget", "name": "w", "uid": "uid-w"}
    fake = FakeClient(("configmaps", cm("dep", owners=[foreign])))
    gc, _ = _gc(fake)
    await gc.reconcile(_req("dep"))
    assert fake.actions == []


async def test_deleting_object_without_gc_finalizers_is_left_alone() -> None:
    ghost = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "uid-gone"}
    fake = FakeClient(("configmaps", cm("dep", owners=[ghost], finalizers=["example.com/x"], deleting=True)))
    gc, _ = _gc(fake)
    await gc.reconcile(_req("dep"))
    await gc.reconcile(_req("missing"))
    assert fake.actions == []


def test_map_enqueues_dependents_and_owners() -> None:
    owner = cm("owner")
    fake = FakeClient(("configmaps", owner))
    fake.put("configmaps", cm("d1", owners=[owner_ref(owner)]))
    fake.put("deployments.apps", {"metadata": {"name": "d2", "namespace": "default",
                                               "ownerReferences": [owner_ref(owner)]}})
    gc, _ = _gc(fake)
    kind = gc.kinds[[k.group_resource for k in gc.kinds].index("configmaps")]
    deps = {_req("d1"), _req("d2", resource="deployments.apps")}

    assert set(gc.map(managers.Change(type="delete", kind=kind, obj=owner))) == deps
    assert list(gc.map(managers.Change(type="add", kind=kind, obj=owner))) == []  # no refs, not deleting
    foreground = cm("owner", finalizers=["foregroundDeletion"], deleting=True)
    foreground["metadata"]["uid"] = owner["metadata"]["uid"]
    assert set(gc.map(managers.Change(type="update", kind=kind, obj=foreground, old=owner))) == deps | {_req("owner")}
    dep = fake.stored("configmaps", "d1", "default")
    assert dep is not None
    assert list(gc.map(managers.Change(type="add", kind=kind, obj=dep))) == [_req("d1")]
    assert set(gc.map(managers.Change(type="delete", kind=kind, obj=dep))) == {_req("owner")}
    unowned = cm("d1")
    assert list(gc.map(managers.Change(type="update", kind=kind, obj=unowned, old=dep))) == [_req("owner")]
    assert "events" not in {k.group_resource for k in gc.kinds}
