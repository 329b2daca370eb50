"""Pod priority resolution (cp.priority) beyond the HTTP tests: of several globalDefault classes
the lowest value wins, a class without preemptionPolicy leaves the pod's alone, and only a second
default is refused."""

from __future__ import annotations

from cp import priority


def _pc(name: str, value: int, *, default: bool = False, policy: str | None = None) -> dict[str, object]:
    pc: dict[str, object] = {"metadata": {"name": name}, "value": value, "globalDefault": default}
    if policy:
        pc["preemptionPolicy"] = policy
    return pc


def test_lowest_global_default_wins() -> None:
    classes = {"a": _pc("a", 50, default=True), "b": _pc("b", 10, default=True), "c": _pc("c", 1)}
    spec: dict[str, object] = {}
    priority.resolve_pod_priority(spec, classes)
    assert spec == {"priorityClassName": "b", "priority": 10}


def test_second_default() -> None:
    classes = [_pc("a", 5, default=True), _pc("b", 1)]
    assert priority.second_default(_pc("new", 1, default=True), classes, creating=True) == "a"
    assert priority.second_default(_pc("a", 6, default=True), classes, creating=False) == ""
    assert priority.second_default(_pc("b", 1, default=True), classes, creating=False) == "a"
    assert priority.second_default(_pc("b", 1), classes, creating=False) == ""
