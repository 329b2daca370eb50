"""cp.disruption: which budgets guard a pod at eviction, the check-and-decrement, and the
controller's arithmetic (expected pods, desired and current healthy, disrupted pods that expire)."""

from __future__ import annotations

from typing import Any

import pytest

from cp import clock as clocks
from cp import disruption, errors

NOW = 1_800_000_000.0


def pod(name: str, *, ready: bool = True, phase: str = "Running", owner: str = "", ns: str = "default",
        deleting: bool = False, **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "labels": labels or {"app": "web"}}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner, "uid": owner,
                                    "controller": True}]
    if deleting:
        meta["deletionTimestamp"] = clocks.rfc3339(NOW)
    return {"metadata": meta, "status": {"phase": phase, "conditions": [
        {"type": "Ready", "status": "True" if ready else "False"}]}}


def pdb(name: str = "web", *, selector: Any = None, generation: int = 1, **status: Any) -> dict[str, Any]:
    sel = {"matchLabels": {"app": "web"}} if selector is None else selector
    return {"metadata": {"name": name, "namespace": "default", "generation": generation},
            "spec": {"selector": sel}, "status": {"observedGeneration": 1, **status}}


def test_budgets_for_eviction_match_namespace_and_selector() -> None:
    budgets = [pdb("a"), pdb("empty", selector={}), pdb("other", selector={"matchLabels": {"app": "db"}}),
               {**pdb("elsewhere"), "metadata": {"name": "elsewhere", "namespace": "x"}},
               pdb("bad", selector={"matchExpressions": [{"key": "app", "operator": "Near"}]})]
    assert [b["metadata"]["name"] for b in disruption.budgets_for_eviction(pod("p"), budgets)] == ["a"]


def test_which_pods_ignore_budgets() -> None:
    assert not disruption.can_ignore_budgets(pod("p"))
    for phase in ("Pending", "Succeeded", "Failed"):
        assert disruption.can_ignore_budgets(pod("p", phase=phase))
    assert disruption.can_ignore_budgets(pod("p", deleting=True))
    assert disruption.enforces_resource_version(pod("p", phase="Pending"))
    assert not disruption.enforces_resource_version(pod("p", phase="Failed"))


def test_check_and_decrement() -> None:
    budget = pdb(disruptionsAllowed=1, currentHealthy=3, desiredHealthy=2)
    after = disruption.check_and_decrement(budget, pod_name="p", now=NOW, dry_run=False)
    assert after["status"]["disruptionsAllowed"] == 0
    assert after["status"]["disruptedPods"] == {"p": "2027-01-15T08:00:00Z"}
    assert after["status"]["conditions"] == [{"type": "DisruptionAllowed", "status": "False", "observedGeneration": 1,
                                              "lastTransitionTime": "2027-01-15T08:00:00Z",
                                              "reason": "InsufficientPods", "message": ""}]
    assert budget["status"]["disruptionsAllowed"] == 1  # the argument is left alone
    dry = disruption.check_and_decrement(budget, pod_name="p", now=NOW, dry_run=True)
    assert "disruptedPods" not in dry["status"]

    with pytest.raises(errors.TooManyRequests) as refused:
        disruption.check_and_decrement(after, pod_name="q", now=NOW, dry_run=False)
    assert refused.value.details == {"causes": [{"reason": "DisruptionBudget", "message": (
        "The disruption budget web needs 2 healthy pods and has 3 currently")}]}
    with pytest.raises(errors.TooManyRequests) as stale:
        disruption.check_and_decrement(pdb(generation=2, disruptionsAllowed=1), pod_name="p", now=NOW, dry_run=False)
    assert stale.value.details["retryAfterSeconds"] == 10
    with pytest.raises(errors.Forbidden) as negative:
        disruption.check_and_decrement(pdb(disruptionsAllowed=-1), pod_name="p", now=NOW, dry_run=False)
    assert negative.value.message == ('poddisruptionbudget.policy "web" is forbidden: '
                                      "pdb disruptions allowed is negative")


def test_unhealthy_pod_eviction_policy() -> None:
    met = pdb(disruptionsAllowed=0, currentHealthy=2, desiredHealthy=2)
    unmet = pdb(disruptionsAllowed=0, currentHealthy=1, desiredHealthy=2)
    assert disruption.unhealthy_pod_may_go(pod("p", ready=False), met)
    assert not disruption.unhealthy_pod_may_go(pod("p", ready=False), unmet)
    assert not disruption.unhealthy_pod_may_go(pod("p"), met)
    unmet["spec"]["unhealthyPodEvictionPolicy"] = "AlwaysAllow"
    assert disruption.unhealthy_pod_may_go(pod("p", ready=False), unmet)
    unmet["spec"]["unhealthyPodEvictionPolicy"] = "IfHealthyBudget"
    assert not disruption.unhealthy_pod_may_go(pod("p", ready=False), unmet)


@pytest.mark.parametrize(("spec", "expected", "desired"), [
    ({"minAvailable": 2}, 3, 2),  # an integer: the pods there are, no scale needed
    ({"minAvailable": "50%"}, 4, 2),  # percentages of the controllers' scale (4), rounded up
    ({"minAvailable": "30%"}, 4, 2),
    ({"maxUnavailable": 1}, 4, 3),
    ({"maxUnavailable": "25%"}, 4, 3),
    ({"maxUnavailable": "100%"}, 4, 0),
    ({}, 0, 0),
])
def test_expected_count(spec: dict[str, Any], expected: int, desired: int) -> None:
    budget = {"metadata": {"name": "web", "namespace": "default"}, "spec": spec}
    pods = [pod("a", owner="rs1"), pod("b", owner="rs1"), pod("c", owner="rs2")]
    scales = {"rs1": ("deploy", 4), "rs2": ("deploy", 4)}  # two ReplicaSets of one Deployment count once
    got_expected, got_desired, unmanaged = disruption.expected_count(budget, pods, scales)
    assert (got_expected, got_desired, unmanaged) == (expected, desired, [])


def test_expected_count_needs_every_controller() -> None:
    budget = {"metadata": {"name": "web"}, "spec": {"maxUnavailable": 1}}
    with pytest.raises(ValueError, match='found no controllers for pod "a"'):
        disruption.expected_count(budget, [pod("a", owner="gone")], {})
    assert disruption.expected_count(budget, [pod("a")], {}) == (0, 0, ["a"])


def test_disrupted_pods_expire_and_leave() -> None:
    recent = clocks.rfc3339(NOW - 30)
    old = clocks.rfc3339(NOW - 300)
    budget = pdb(disruptedPods={"kept": recent, "expired": old, "gone": recent, "deleting": recent})
    pods = [pod("kept"), pod("expired"), pod("deleting", deleting=True)]
    kept, recheck = disruption.disrupted_pods(budget, pods, now=NOW)
    assert kept == {"kept": recent}
    assert recheck == NOW - 30 + disruption.DELETION_TIMEOUT
    assert disruption.count_healthy([*pods, pod("other"), pod("sick", ready=False)], kept) == 2


def test_compute_and_failed_status() -> None:
    budget = pdb(generation=3)
    status = disruption.compute_status(budget, current_healthy=3, desired_healthy=2, expected=3, disrupted={},
                                       now=NOW)
    assert status == {"observedGeneration": 3, "disruptionsAllowed": 1, "currentHealthy": 3, "desiredHealthy": 2,
                      "expectedPods": 3, "conditions": [{
                          "type": "DisruptionAllowed", "status": "True", "observedGeneration": 3,
                          "lastTransitionTime": "2027-01-15T08:00:00Z", "reason": "SufficientPods",
                          "message": ""}]}
    budget["status"] = status
    later = disruption.compute_status(budget, current_healthy=1, desired_healthy=2, expected=3, disrupted={},
                                      now=NOW + 60)
    assert later["disruptionsAllowed"] == 0
    assert later["conditions"][0]["lastTransitionTime"] == clocks.rfc3339(NOW + 60)
    failed = disruption.failed_status(budget, message="found no controllers", now=NOW + 5)
    assert failed["disruptionsAllowed"] == 0
    assert failed["conditions"][0]["reason"] == "SyncFailed"
    assert failed["conditions"][0]["message"] == "found no controllers"


def test_stale_disruption_target() -> None:
    p = pod("p")
    assert disruption.stale_disruption_wait(p, now=NOW) is None
    disruption.mark_disruption_target(p, now=NOW)
    cond = next(c for c in p["status"]["conditions"] if c["type"] == "DisruptionTarget")
    assert (cond["status"], cond["reason"], cond["lastTransitionTime"]) == (
        "True", "EvictionByEvictionAPI", "2027-01-15T08:00:00Z")
    disruption.mark_disruption_target(p, now=NOW + 5)  # again: the transition time stays
    assert [c["lastTransitionTime"] for c in p["status"]["conditions"] if c["type"] == "DisruptionTarget"] == [
        "2027-01-15T08:00:00Z"]
    assert disruption.stale_disruption_wait(p, now=NOW + 20) == 100.0
    assert disruption.stale_disruption_wait(p, now=NOW + 500) == 0.0
    reset = disruption.reset_disruption_target(p, now=NOW + 500)
    cond = next(c for c in reset["status"]["conditions"] if c["type"] == "DisruptionTarget")
    assert (cond["status"], cond["reason"]) == ("False", "EvictionByEvictionAPI")
    assert disruption.stale_disruption_wait(reset, now=NOW + 600) is None
    assert disruption.stale_disruption_wait(pod("q", deleting=True) | {"status": p["status"]}, now=NOW) is None
