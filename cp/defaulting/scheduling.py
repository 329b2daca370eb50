"""Defaulting of scheduling.k8s.io/v1 PriorityClass.

Source of behaviour (read, not copied): `pkg/apis/scheduling/v1/defaults.go`: a class without a
preemption policy preempts lower priorities. Pure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cp.defaulting.fields import setdefault


def _priority_class(obj: dict[str, Any]) -> None:
    setdefault(obj, "value", 0)  # an int32 Go always writes
    setdefault(obj, "preemptionPolicy", "PreemptLowerPriority")


DEFAULTERS: dict[tuple[str, str, str], Callable[[dict[str, Any]], None]] = {
    ("scheduling.k8s.io", "v1", "PriorityClass"): _priority_class,
}
