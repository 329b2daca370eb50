"""cp/defaulting/flowcontrol.py: matching precedence, nominal shares, lendable percent, queuing."""

from __future__ import annotations

from tests.cp.defaulting.support import defaulted

V1 = "flowcontrol.apiserver.k8s.io/v1"


def test_flow_schema_precedence() -> None:
    obj = {"apiVersion": V1, "kind": "FlowSchema", "metadata": {"name": "f"},
           "spec": {"priorityLevelConfiguration": {"name": "global-default"}}}
    assert defaulted(obj)["spec"]["matchingPrecedence"] == 1000


def test_priority_levels() -> None:
    limited = {"apiVersion": V1, "kind": "PriorityLevelConfiguration", "metadata": {"name": "l"},
               "spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": {"queues": 16}}}}}
    assert defaulted(limited)["spec"]["limited"] == {
        "nominalConcurrencyShares": 30, "lendablePercent": 0,
        "limitResponse": {"type": "Queue", "queuing": {"queues": 16, "handSize": 8, "queueLengthLimit": 50}}}
    zero = defaulted({**limited, "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 0,
                                                                         "limitResponse": {"type": "Reject"}}}})
    assert zero["spec"]["limited"]["nominalConcurrencyShares"] == 0  # v1 keeps an explicit zero
    exempt = {"apiVersion": V1, "kind": "PriorityLevelConfiguration", "metadata": {"name": "exempt"},
              "spec": {"type": "Exempt", "exempt": {}}}
    assert defaulted(exempt)["spec"]["exempt"] == {"nominalConcurrencyShares": 0, "lendablePercent": 0}
