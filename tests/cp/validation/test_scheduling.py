"""cp/validation/scheduling.py: PriorityClass (the reserved `system-` prefix, the bound on user values,
immutable value and preemption policy) and RuntimeClass (handler, overhead, scheduling)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.cp.validation.rules import changed, create_errors, update_errors

RESERVED = "Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: "


def priority_class(name: str = "high", **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": 1000, **fields}


@pytest.mark.parametrize(("obj", "expected"), [
    (priority_class("system-node-critical", value=2000001000), []),
    (priority_class("system-cluster-critical", value=2000000000, globalDefault=True),
     [f"metadata.name: {RESERVED}globalDefault of system-cluster-critical PriorityClass must be false"]),
    (priority_class("system-node-critical", value=5),
     [f"metadata.name: {RESERVED}value of system-node-critical PriorityClass must be 2000001000"]),
    (priority_class("system-mine"), [f"metadata.name: {RESERVED}system-mine is not a known system priority class"]),
    (priority_class(value=1000000000), []),
    (priority_class(value=1000000001), ["value: Forbidden: maximum allowed value of a user defined priority is "
                                        "1000000000"]),
    (priority_class(preemptionPolicy="Sometimes"),
     ['preemptionPolicy: Unsupported value: "Sometimes": supported values: "PreemptLowerPriority", "Never"']),
])
def test_priority_class(obj: dict[str, Any], expected: list[str]) -> None:
    assert create_errors(obj) == expected


def test_priority_class_value_and_preemption_are_fixed() -> None:
    old = priority_class()
    assert update_errors(changed(old, lambda o: o.update(value=7)), old) == [
        "value: Forbidden: may not be changed in an update."]
    assert update_errors(changed(old, lambda o: o.update(preemptionPolicy="Never")), old) == [
        'preemptionPolicy: Invalid value: "Never": field is immutable']
    assert update_errors(changed(old, lambda o: o.update(description="now documented")), old) == []


def runtime_class(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "gvisor"},
            "handler": "runsc", **fields}


def test_runtime_class() -> None:
    assert create_errors(runtime_class(handler="")) == ["handler: Required value"]
    assert create_errors(runtime_class(overhead={"podFixed": {"cpu": "-1"}}, scheduling={
        "nodeSelector": {"sandbox": "-"}, "tolerations": [{"key": "a", "operator": "Exists", "value": "b"}]})) == [
        'overhead.limits[cpu]: Invalid value: "-1": must be greater than or equal to 0',
        "scheduling.nodeSelector: Invalid value: \"-\": a valid label must be an empty string or consist of "
        "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
        "'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?"
        "[A-Za-z0-9])?')",
        "scheduling.tolerations[0].operator: Invalid value: core.Toleration{...}: value must be empty when "
        "`operator` is 'Exists'"]
    old = runtime_class()
    assert update_errors(runtime_class(handler="kata"), old) == ["handler: Invalid value: null: field is immutable"]
