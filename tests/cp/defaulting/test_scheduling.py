"""cp/defaulting/scheduling.py: a PriorityClass preempts lower priorities unless it says otherwise."""

from __future__ import annotations

from tests.cp.defaulting.support import defaulted


def test_priority_class() -> None:
    obj = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "p"}}
    out = defaulted(obj)
    assert (out["value"], out["preemptionPolicy"]) == (0, "PreemptLowerPriority")
    assert defaulted(dict(obj, value=5, preemptionPolicy="Never"))["preemptionPolicy"] == "Never"
