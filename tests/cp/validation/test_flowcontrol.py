"""cp/validation/flowcontrol.py: FlowSchemas (precedence, subjects, resource and non-resource rules) and
PriorityLevelConfigurations (exempt and limited levels, queuing and shuffle-sharding bounds)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.cp.validation.rules import create_errors, update_errors

V1 = "flowcontrol.apiserver.k8s.io/v1"


def flow_schema(name: str = "fs", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"priorityLevelConfiguration": {"name": "workload-low"}, "rules": [{
        "subjects": [{"kind": "Group", "group": {"name": "system:authenticated"}}],
        "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]}]}
    body.update(spec)
    return {"apiVersion": V1, "kind": "FlowSchema", "metadata": {"name": name}, "spec": body}


def subject_rule(*subjects: dict[str, Any], **rule: Any) -> list[dict[str, Any]]:
    return [{"subjects": list(subjects), **rule}]


@pytest.mark.parametrize(("spec", "expected"), [
    ({"matchingPrecedence": 10001}, ["spec.matchingPrecedence: Invalid value: 10001: must not be greater than 10000"]),
    ({"priorityLevelConfiguration": {}},
     ["spec.priorityLevelConfiguration.name: Required value: must reference a priority level"]),
    ({"distinguisherMethod": {"type": "ByGroup"}},
     ['spec.distinguisherMethod.type: Unsupported value: {"type":"ByGroup"}: supported values: "ByNamespace", '
      '"ByUser"']),
    ({"rules": subject_rule({"kind": "ServiceAccount", "serviceAccount": {"name": "*"}, "user": {"name": "x"}},
                            resourceRules=[{"verbs": ["get", "*"], "apiGroups": [], "resources": ["pods"]}])},
     ["spec.rules[0].subjects[0].serviceAccount.namespace: Required value: must specify namespace for service "
      "account",
      "spec.rules[0].subjects[0].user: Forbidden: user is forbidden when subject kind is not 'User'",
      'spec.rules[0].resourceRules[0].verbs: Invalid value: ["get","*"]: if \'*\' is present, must not specify other '
      "verbs",
      "spec.rules[0].resourceRules[0].apiGroups: Required value: resource rules must supply at least one api group",
      "spec.rules[0].resourceRules[0].namespaces: Required value: resource rules that are not cluster scoped must "
      "supply at least one namespace"]),
    ({"rules": subject_rule({"kind": "Robot"}, nonResourceRules=[{"verbs": ["fetch"],
                                                                  "nonResourceURLs": ["/a/*/b", "metrics"]}])},
     ['spec.rules[0].subjects[0].kind: Unsupported value: "Robot": supported values: "Group", "ServiceAccount", '
      '"User"',
      'spec.rules[0].nonResourceRules[0].verbs: Unsupported value: ["fetch"]: supported values: "create", "delete", '
      '"deletecollection", "get", "list", "patch", "proxy", "update", "watch"',
      'spec.rules[0].nonResourceRules[0].nonResourceURLs[0]: Invalid value: "/a/*/b": wildcard can only do suffix '
      "matching",
      'spec.rules[0].nonResourceRules[0].nonResourceURLs[1]: Invalid value: "metrics": must start with slash']),
    ({"rules": subject_rule({"kind": "User", "user": {"name": "u"}})},
     ["spec.rules[0]: Required value: at least one of resourceRules and nonResourceRules has to be non-empty"]),
])
def test_flow_schema(spec: dict[str, Any], expected: list[str]) -> None:
    assert create_errors(flow_schema(**spec)) == expected


def test_flow_schema_namespace_and_status_conditions() -> None:
    rules = subject_rule({"kind": "User", "user": {"name": "u"}}, resourceRules=[
        {"verbs": ["get"], "apiGroups": ["*"], "resources": ["*"], "namespaces": ["Kube_System"]}])
    assert create_errors(flow_schema(rules=rules)) == [
        "spec.rules[0].resourceRules[0].namespaces[0]: Invalid value: \"Kube_System\": each member of this list must "
        "be '*' or a DNS-1123 label; a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
        "'-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
        "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"]
    old = flow_schema()
    new = dict(old, status={"conditions": [{"type": "Dangling", "status": "False"}, {"type": "Dangling"}]})
    assert update_errors(new, old, subresource="status") == ['status.conditions[1].type: Duplicate value: "Dangling"']


def level(name: str = "batch", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": V1, "kind": "PriorityLevelConfiguration", "metadata": {"name": name}, "spec": spec}


@pytest.mark.parametrize(("obj", "expected"), [
    (level("exempt", type="Exempt", exempt={"nominalConcurrencyShares": -1, "lendablePercent": 101}),
     ["spec.exempt.nominalConcurrencyShares: Invalid value: -1: must be a non-negative integer",
      "spec.exempt.lendablePercent: Invalid value: 101: must be between 0 and 100, inclusive"]),
    (level(type="Exempt"), ["spec.type: Invalid value: \"Exempt\": type must be 'Exempt' if and only if name is "
                            "'exempt'"]),
    (level(type="Limited", exempt={}, limited={"limitResponse": {"type": "Reject", "queuing": {}}}),
     ["spec.exempt: Forbidden: must be nil if the type is Limited",
      "spec.limited.limitResponse.queuing: Forbidden: must be nil if limited.limitResponse.type is not Limited"]),
    (level(type="Limited", limited={"nominalConcurrencyShares": 0, "borrowingLimitPercent": -5,
                                    "limitResponse": {"type": "Queue"}}),
     ["spec.limited.borrowingLimitPercent: Invalid value: -5: if specified, must be a non-negative integer",
      "spec.limited.limitResponse.queuing: Required value"]),
    (level(type="Limited", limited={"limitResponse": {"type": "Queue", "queuing": {
        "queues": 128, "handSize": 8, "queueLengthLimit": -1}}}),
     ["spec.limited.limitResponse.queuing.queueLengthLimit: Invalid value: -1: must be positive"]),
    (level(type="Limited", limited={"limitResponse": {"type": "Queue", "queuing": {
        "queues": 10000000, "handSize": 9}}}),
     ["spec.limited.limitResponse.queuing.handSize: Invalid value: 9: required entropy bits of deckSize 10000000 and "
      "handSize 9 should not be greater than 60"]),
    (level(type="Limited"), ["spec.limited: Required value"]),
    (level(), ["spec.type: Required value"]),
    (level(type="Burst"), ['spec.type: Unsupported value: "Burst": supported values: "Exempt", "Limited"']),
])
def test_priority_level(obj: dict[str, Any], expected: list[str]) -> None:
    assert create_errors(obj) == expected
