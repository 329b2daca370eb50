"""The Job controller's pure rules (controllers/job/rules.py): index intervals, generated names,
pod failure and success policies, the backoff, conditions."""

from __future__ import annotations

from typing import Any

from controllers.job import rules
from cp import clock as clocks


def test_index_intervals_round_trip() -> None:
    assert rules.parse_indexes("0-2,5,7-8", 8) == {0, 1, 2, 5, 7}  # 8 is out of range
    assert rules.parse_indexes("", 4) == set() and rules.parse_indexes("x,1", 4) == {1}
    assert rules.format_indexes([5, 0, 1, 2, 7, 8]) == "0-2,5,7,8"
    assert rules.format_indexes([]) == "" and rules.format_indexes([3]) == "3"
    assert rules.format_indexes([0, 1, 3]) == "0,1,3" and rules.parse_indexes("0,1,3", 4) == {0, 1, 3}


def test_generated_names() -> None:
    assert rules.generate_name("pi", None) == "pi-" and rules.generate_name("pi", 3) == "pi-3-"
    long = "j" * 60
    name = rules.generate_name(long, 12)
    assert len(name) == rules.MAX_GENERATED_NAME and name.endswith("-12-")


def failed_pod(*, code: int = 1, container: str = "main", conditions: list[dict[str, str]] | None = None) -> dict[str, Any]:
    return {"metadata": {"namespace": "ns", "name": "p"},
            "status": {"phase": "Failed", "conditions": conditions or [],
                       "containerStatuses": [{"name": container, "state": {"terminated": {
                           "exitCode": code, "finishedAt": "2027-01-15T08:00:05Z"}}}]}}


def test_pod_failure_policy_first_matching_rule_decides() -> None:
    policy = {"rules": [
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
        {"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In", "values": [42]}},
        {"action": "Count", "onExitCodes": {"operator": "NotIn", "values": [0, 42]}},
    ]}
    m = rules.match_pod_failure_policy(policy, failed_pod(code=42))
    assert (m.action, m.counts) == ("FailJob", True)
    assert m.message == "Container main for pod ns/p failed with exit code 42 matching FailJob rule at index 1"
    disrupted = failed_pod(code=42, conditions=[{"type": "DisruptionTarget", "status": "True"}])
    m = rules.match_pod_failure_policy(policy, disrupted)
    assert (m.action, m.counts, m.message) == ("Ignore", False, None)
    m = rules.match_pod_failure_policy(policy, failed_pod(code=42, container="side"))  # rule 1 names main
    assert (m.action, m.counts) == (None, True)  # and rule 2 excludes 42: no rule, counted
    assert rules.match_pod_failure_policy(policy, failed_pod(code=3)).action == "Count"
    assert rules.match_pod_failure_policy(None, failed_pod()).counts
    cond_policy = {"rules": [{"action": "FailJob", "onPodConditions": [{"type": "ConfigIssue"}]}]}
    m = rules.match_pod_failure_policy(cond_policy, failed_pod(conditions=[{"type": "ConfigIssue", "status": "True"}]))
    assert m.message == "Pod ns/p has condition ConfigIssue matching FailJob rule at index 0"


def test_success_policy() -> None:
    policy = {"rules": [{"succeededIndexes": "0-2", "succeededCount": 2}, {"succeededCount": 4}]}
    assert rules.match_success_policy(policy, {5}, 8) is None
    assert rules.match_success_policy(policy, {0, 2}, 8) == 0
    assert rules.match_success_policy(policy, {3, 4, 5, 6}, 8) == 1
    assert rules.match_success_policy({"rules": [{"succeededIndexes": "1,3"}]}, {1}, 4) is None
    assert rules.match_success_policy({"rules": [{"succeededIndexes": "1,3"}]}, {1, 3}, 4) == 0


def test_backoff_doubles_to_the_cap() -> None:
    assert rules.backoff_remaining(0, None, 100.0) == 0.0
    assert rules.backoff_remaining(1, 100.0, 100.0) == 10.0
    assert rules.backoff_remaining(3, 100.0, 105.0) == 35.0  # 40 s after the third failure
    assert rules.backoff_remaining(10, 100.0, 100.0) == rules.MAX_BACKOFF
    assert rules.backoff_remaining(2, 100.0, 121.0) == 0.0


def test_conditions_move_transition_time_only_on_status_change() -> None:
    conds: list[dict[str, Any]] = []
    assert not rules.set_condition(conds, type_="Suspended", status="False", reason="JobResumed",
                                   message="Job resumed", now=0.0)  # never suspended: nothing to say
    assert rules.set_condition(conds, type_="Suspended", status="True", reason="JobSuspended",
                               message="Job suspended", now=10.0)
    assert not rules.set_condition(conds, type_="Suspended", status="True", reason="JobSuspended",
                                   message="Job suspended", now=20.0)
    assert rules.set_condition(conds, type_="Suspended", status="False", reason="JobResumed",
                               message="Job resumed", now=30.0)
    assert conds == [{"type": "Suspended", "status": "False", "reason": "JobResumed", "message": "Job resumed",
                      "lastProbeTime": clocks.rfc3339(30.0), "lastTransitionTime": clocks.rfc3339(30.0)}]
