"""The taint evictor's decisions, sample-controller style (fake client, seeded caches, recorded
writes): which pods are evicted and when, the exact writes of an eviction, cancellation, the
DeviceTaintRule status condition and its 10 s throttle, upstream's wording, and which changes
enqueue what.

Out of scope: the controller running against a server (test_taint_eviction_integration.py).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from controllers import taint_evictor as te
from controllers.runtime import manager as managers
from controllers.runtime import reconcile
from tests.controllers.support import seeded_informers
from tests.controllers.taints.fakes import (
    CLAIMS,
    NOW,
    PODS,
    RULES,
    SLICES,
    Fake,
    claim,
    pod,
    rule,
    slice_,
    ts,
)


def _evictor(fake: Fake) -> te.TaintEvictor:
    factory = seeded_informers(fake)
    recorder = managers.EventRecorder(fake, component=te.COMPONENT, clock=fake.clock)  # type: ignore[arg-type]
    return te.TaintEvictor(client=fake, informer_factory=factory, recorder=recorder,  # type: ignore[arg-type]
                           clock=fake.clock)


def _world(*, tolerations: list[dict[str, Any]] | None = None, effect: str = "NoExecute",
           added: float = -10.0) -> Fake:
    p = pod("pod-a")
    fake = Fake((SLICES, slice_("node-1", ["gpu-0", "gpu-1"])),
                (RULES, rule("maintenance", effect, added=added)),
                (PODS, p),
                (CLAIMS, claim("claim-a", [("node-1", "gpu-0")], tolerations=tolerations or [], reserved=[p])))
    fake.clock.set(NOW)
    return fake


POD_REQ = reconcile.Request(resource=te.PODS, namespace="default", name="pod-a")


async def test_untolerated_taint_marks_then_deletes_with_uid_precondition() -> None:
    fake = _world()
    evictor = _evictor(fake)
    assert await evictor.reconcile(POD_REQ) is None
    assert [(a.verb, a.resource, a.subresource) for a in fake.actions] == [
        ("get", "pods", ""), ("create", "events", ""), ("patch", "pods", "status"), ("delete", "pods", "")]
    assert fake.events() == [("Normal", "DeviceTaintManagerEviction", "Marking for deletion")]
    status_write = fake.writes[1]
    assert status_write.body == {"metadata": {"uid": "uid-default-pod-a"}, "status": {"conditions": [{
        "type": "DisruptionTarget", "status": "True", "reason": "DeletionByDeviceTaintManager",
        "message": "Device Taint manager: deleting due to NoExecute taint", "lastTransitionTime": ts()}]}}
    delete = fake.writes[2]
    assert delete.body["preconditions"] == {"uid": "uid-default-pod-a"}
    assert evictor.evicted_by_rule == {fake.stored(RULES, "maintenance")["metadata"]["uid"]: 1}
    # Evicted once: a later look at the same pod does nothing.
    fake.actions.clear()
    assert await evictor.reconcile(POD_REQ) is None
    assert fake.writes == []


async def test_condition_is_merged_by_type() -> None:
    fake = _world()
    stored = fake.objects[("pods", "default", "pod-a")]
    stored["metadata"]["finalizers"] = ["example.com/keep"]  # so the fake keeps the deleted pod
    stored["status"]["conditions"] = [{"type": "Ready", "status": "True"},
                                      {"type": "DisruptionTarget", "status": "False", "reason": "Old",
                                       "lastTransitionTime": ts(-60)}]
    await _evictor(fake).reconcile(POD_REQ)
    after = fake.stored(PODS, "pod-a", "default")
    assert after["metadata"]["deletionTimestamp"]
    assert [(c["type"], c["status"], c.get("reason")) for c in after["status"]["conditions"]] == [
        ("Ready", "True", None), ("DisruptionTarget", "True", "DeletionByDeviceTaintManager")]
    assert after["status"]["conditions"][1]["lastTransitionTime"] == ts()  # False → True: a transition


async def test_toleration_delays_to_time_added_plus_seconds() -> None:
    fake = _world(tolerations=[{"key": "example.com/maintenance", "operator": "Exists", "effect": "NoExecute",
                                "tolerationSeconds": 300}], added=0.0)
    evictor = _evictor(fake)
    result = await evictor.reconcile(POD_REQ)
    assert result == reconcile.Result(requeue_after=300.0)
    assert fake.writes == []
    assert evictor.pending[("default", "pod-a")][1].when == NOW + 300
    fake.clock.advance(299)
    assert await evictor.reconcile(POD_REQ) == reconcile.Result(requeue_after=1.0)
    assert fake.writes == []
    fake.clock.advance(1)
    assert await evictor.reconcile(POD_REQ) is None
    assert [a.verb for a in fake.non_event_writes()] == ["patch", "delete"]
    assert ("default", "pod-a") not in evictor.pending


@pytest.mark.parametrize(("tolerations", "expected"), [
    ([], NOW - 10),  # none: at timeAdded
    ([{"operator": "Exists", "effect": "NoExecute"}], None),  # matching, no seconds: never
    ([{"key": "example.com/maintenance", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60},
      {"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}], NOW + 20),  # the smallest
    ([{"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": -5}], NOW - 10),  # negative: 0
    ([{"key": "other", "operator": "Exists", "effect": "NoExecute"}], NOW - 10),  # another key
    ([{"key": "example.com/maintenance", "value": "x", "effect": "NoExecute"}], NOW - 10),  # Equal, wrong value
    ([{"operator": "Exists"}], NOW - 10),  # empty effect: allocatable, yet evicted (upstream quirk)
    ([{"operator": "Exists", "effect": "NoSchedule"}], NOW - 10),  # NoSchedule does not imply NoExecute
])
async def test_eviction_time(tolerations: list[dict[str, Any]], expected: float | None) -> None:
    fake = _world(tolerations=tolerations)
    evictor = _evictor(fake)
    got = evictor.view().pod_eviction(fake.stored(PODS, "pod-a", "default"), evictor.claims)
    assert (got.when if got is not None else None) == expected


@pytest.mark.parametrize("effect", ["NoSchedule", "None"])
async def test_only_no_execute_evicts(effect: str) -> None:
    fake = _world(effect=effect)
    assert await _evictor(fake).reconcile(POD_REQ) is None
    assert fake.writes == []


@pytest.mark.parametrize("variant", ["unbound", "deleting", "succeeded", "not-reserved", "not-owner"])
async def test_pods_that_are_not_evicted(variant: str) -> None:
    p = pod("pod-a", node=None if variant == "unbound" else "node-1", deleting=variant == "deleting",
            phase="Succeeded" if variant == "succeeded" else "Pending", template=variant == "not-owner")
    c = claim("claim-a", [("node-1", "gpu-0")], reserved=[] if variant == "not-reserved" else [p])
    fake = Fake((SLICES, slice_("node-1", ["gpu-0"])), (RULES, rule("maintenance", "NoExecute")), (PODS, p),
                (CLAIMS, c))
    assert await _evictor(fake).reconcile(POD_REQ) is None
    assert fake.writes == []


async def test_template_claim_owned_by_the_pod_counts() -> None:
    p = pod("pod-a", template=True)
    fake = Fake((SLICES, slice_("node-1", ["gpu-0"])), (RULES, rule("maintenance", "NoExecute")), (PODS, p),
                (CLAIMS, claim("claim-a", [("node-1", "gpu-0")], reserved=[p], owner=p)))
    await _evictor(fake).reconcile(POD_REQ)
    assert [a.verb for a in fake.non_event_writes()] == ["patch", "delete"]


async def test_slice_taints_count_only_at_the_newest_generation() -> None:
    p = pod("pod-a")
    tainted = {"name": "gpu-0", "taints": [{"key": "k", "effect": "NoExecute", "timeAdded": ts(-5)}]}
    fake = Fake((SLICES, slice_("node-1", [tainted], generation=1)), (SLICES, slice_("node-1", ["gpu-0"], generation=2)),
                (PODS, p), (CLAIMS, claim("claim-a", [("node-1", "gpu-0")], reserved=[p])))
    evictor = _evictor(fake)
    assert evictor.view().pod_eviction(p, evictor.claims) is None
    fake.put(SLICES, slice_("node-1", [tainted], generation=3))
    _sync(fake, evictor)
    got = evictor.view().pod_eviction(fake.stored(PODS, "pod-a", "default"), evictor.claims)
    assert got is not None and got.when == NOW - 5 and got.rules == ()


def _sync(fake: Fake, evictor: te.TaintEvictor) -> None:
    """Make the evictor's caches match the fake's objects (what watches would deliver)."""
    for resource, cache in ((PODS, evictor.pods), (CLAIMS, evictor.claims), (SLICES, evictor.slices),
                            (RULES, evictor.rules)):
        cache.replace([copy.deepcopy(o) for (gr, _ns, _n), o in fake.objects.items() if gr == resource])


async def test_cause_going_away_cancels_with_an_event() -> None:
    fake = _world(tolerations=[{"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}], added=0.0)
    evictor = _evictor(fake)
    await evictor.reconcile(POD_REQ)
    assert ("default", "pod-a") in evictor.pending
    del fake.objects[("devicetaintrules.resource.k8s.io", "", "maintenance")]
    evictor.rules.remove(("", "maintenance"))
    assert await evictor.reconcile(POD_REQ) is None
    assert fake.events() == [("Normal", "DeviceTaintManagerEviction", "Cancelling deletion")]
    assert fake.non_event_writes() == []
    fake.actions.clear()
    assert await evictor.reconcile(POD_REQ) is None  # nothing pending: no second event
    assert fake.writes == []


async def test_pod_replaced_or_terminating_at_eviction_time() -> None:
    fake = _world()
    evictor = _evictor(fake)
    fake.objects[("pods", "default", "pod-a")]["metadata"]["uid"] = "someone-else"
    await evictor.reconcile(POD_REQ)
    assert fake.writes == []
    assert evictor.evicted_by_rule == {}

    fake = _world()
    evictor = _evictor(fake)
    fake.objects[("pods", "default", "pod-a")]["metadata"]["deletionTimestamp"] = ts()
    await evictor.reconcile(POD_REQ)
    assert fake.writes == []  # already going: no event, no condition, no DELETE
    assert sum(evictor.evicted_by_rule.values()) == 1  # upstream counts it


# ---------------------------------------------------------------------- rule status

RULE_REQ = reconcile.Request(resource=te.RULES, name="maintenance")


def _condition(action: Any) -> dict[str, Any]:
    (cond,) = [c for c in action.body["status"]["conditions"] if c["type"] == "EvictionInProgress"]
    return cond


async def test_rule_status_pending_then_throttled_then_completed() -> None:
    fake = _world(tolerations=[{"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}], added=0.0)
    evictor = _evictor(fake)
    assert await evictor.reconcile(RULE_REQ) is None
    (write,) = fake.writes
    assert (write.verb, write.subresource) == ("update", "status")
    assert _condition(write) == {"type": "EvictionInProgress", "status": "True", "observedGeneration": 1,
                                 "lastTransitionTime": ts(), "reason": "PodsPendingEviction",
                                 "message": "1 pod needs to be evicted in 1 namespace."}
    _sync(fake, evictor)
    fake.actions.clear()
    fake.clock.advance(4)
    assert await evictor.reconcile(RULE_REQ) == reconcile.Result(requeue_after=6.0)
    assert fake.writes == []
    fake.clock.advance(296)
    await evictor.reconcile(POD_REQ)  # evicts
    _sync(fake, evictor)
    fake.actions.clear()
    assert await evictor.reconcile(RULE_REQ) is None
    (write,) = fake.writes
    assert _condition(write) == {"type": "EvictionInProgress", "status": "False", "observedGeneration": 1,
                                 "lastTransitionTime": ts(300), "reason": "Completed",
                                 "message": "1 pod evicted since starting the controller."}


async def test_rule_status_unchanged_is_not_rewritten_and_other_conditions_stay() -> None:
    kept = {"type": "Example", "status": "True", "reason": "Mine", "message": "", "lastTransitionTime": ts(-100)}
    current = {"type": "EvictionInProgress", "status": "False", "observedGeneration": 1,
               "lastTransitionTime": ts(-100), "reason": "OtherEffect",
               "message": "Eviction only happens for the NoExecute effect."}
    fake = Fake((RULES, rule("maintenance", "NoSchedule", conditions=[kept, current])))
    evictor = _evictor(fake)
    assert await evictor.reconcile(RULE_REQ) is None
    assert fake.writes == []
    fake = Fake((RULES, rule("maintenance", "NoSchedule", generation=2, conditions=[kept, current])))
    evictor = _evictor(fake)
    await evictor.reconcile(RULE_REQ)  # a new generation is reported at once
    (write,) = fake.writes
    assert write.body["status"]["conditions"][0] == kept
    assert _condition(write)["observedGeneration"] == 2
    assert _condition(write)["lastTransitionTime"] == ts()


async def test_rule_status_dry_run_for_effect_none() -> None:
    a, b = pod("pod-a"), pod("pod-b", ns="other", claim_name="claim-b")
    fake = Fake((SLICES, slice_("node-1", ["gpu-0", "gpu-1", "gpu-2"])), (SLICES, slice_("node-2", ["gpu-0"])),
                (RULES, rule("maintenance", "None", selector={"driver": "gpu.example.com", "pool": "node-1"})),
                (PODS, a), (PODS, b),
                (CLAIMS, claim("claim-a", [("node-1", "gpu-0")], reserved=[a])),
                (CLAIMS, claim("claim-b", [("node-1", "gpu-1"), ("node-2", "gpu-0")], ns="other", reserved=[b])))
    evictor = _evictor(fake)
    await evictor.reconcile(RULE_REQ)
    (write,) = fake.writes
    cond = _condition(write)
    assert (cond["status"], cond["reason"]) == ("False", "NoEffect")
    assert cond["message"] == (
        "3 published devices selected. 2 allocated devices selected. 2 pods would be evicted in 2 different "
        "namespaces if the effect was NoExecute. This information will not be updated again. Recreate the "
        "DeviceTaintRule to trigger an update.")
    # The simulation did not touch the real rule or evict anybody.
    assert fake.stored(RULES, "maintenance")["spec"]["taint"]["effect"] == "None"
    assert evictor.pending == {}


def test_rule_condition_wording() -> None:
    assert te.rule_condition("NoExecute", pending_pods=2, pending_namespaces=1) == (
        "True", "PodsPendingEviction", "2 pods need to be evicted in 1 namespace.")
    assert te.rule_condition("NoExecute", pending_pods=1, pending_namespaces=1, evicted=3) == (
        "True", "PodsPendingEviction",
        "1 pod needs to be evicted in 1 namespace. 3 pods evicted since starting the controller.")
    assert te.rule_condition("NoExecute") == ("False", "NotStarted", "")
    assert te.rule_condition("None", published_devices=1, allocated_devices=1, pending_pods=1,
                             pending_namespaces=1) == (
        "False", "NoEffect",
        "1 published device selected. 1 allocated device selected. 1 pod would be evicted in 1 namespace if the "
        "effect was NoExecute. This information will not be updated again. Recreate the DeviceTaintRule to "
        "trigger an update.")
    assert te.rule_condition("NoSchedule", evicted=1) == (
        "False", "OtherEffect", "Eviction only happens for the NoExecute effect. 1 pod evicted since starting "
        "the controller.")


# ---------------------------------------------------------------------- what enqueues what


def test_rule_selector_semantics() -> None:
    nil = {"spec": {"taint": {"key": "k", "effect": "NoExecute"}}}
    assert not te.rule_matches(nil, "d", "p", "x")
    everything = {"spec": {"deviceSelector": {}}}
    assert te.rule_matches(everything, "d", "p", "x")
    one = {"spec": {"deviceSelector": {"driver": "d", "device": "x"}}}
    assert te.rule_matches(one, "d", "any-pool", "x") and not te.rule_matches(one, "d", "p", "y")


async def test_map_functions() -> None:
    fake = _world()
    evictor = _evictor(fake)
    p = fake.stored(PODS, "pod-a", "default")
    marked = {**p, "status": {**p["status"], "conditions": [{"type": "DisruptionTarget", "status": "True"}]}}
    assert te.TaintEvictor.map_pod(managers.Change(type="update", kind=te.clients.resolve(PODS), obj=marked,
                                                   old=p)) == []
    assert te.TaintEvictor.map_pod(managers.Change(type="add", kind=te.clients.resolve(PODS), obj=p)) == [POD_REQ]
    c = fake.stored(CLAIMS, "claim-a", "default")
    with_devices = {**c, "status": {**c["status"], "devices": [{"driver": "d", "pool": "p", "device": "x"}]}}
    assert evictor.map_claim(managers.Change(type="update", kind=te.clients.resolve(CLAIMS), obj=with_devices,
                                             old=c)) == []
    assert evictor.map_claim(managers.Change(type="add", kind=te.clients.resolve(CLAIMS), obj=c)) == [POD_REQ]
    r = fake.stored(RULES, "maintenance")
    assert evictor.map_rule(managers.Change(type="add", kind=te.clients.resolve(RULES), obj=r)) == [
        RULE_REQ, POD_REQ]
    status_only = {**r, "status": {"conditions": []}}
    assert evictor.map_rule(managers.Change(type="update", kind=te.clients.resolve(RULES), obj=status_only,
                                            old=r)) == []
    untainted = slice_("node-1", ["gpu-0"])
    assert evictor.map_slice(managers.Change(type="add", kind=te.clients.resolve(SLICES), obj=untainted)) == []
    tainted = slice_("node-1", [{"name": "gpu-0", "taints": [{"key": "k", "effect": "NoExecute"}]}], generation=2)
    assert evictor.map_slice(managers.Change(type="add", kind=te.clients.resolve(SLICES), obj=tainted)) == [POD_REQ]
