"""Defaulting of scheduling.k8s.io/v1 PriorityClass and v1beta1 PodGroup.

Source of behaviour (read, not copied): `pkg/apis/scheduling/v1/defaults.go`: a class without a
preemption policy preempts lower priorities; k8s.io/api `scheduling/v1beta1/types.go`: a PodGroup's
`disruptionMode` defaults to `{single: {}}` (`+default`). Pure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cp.defaulting.fields import setdefault


def _priority_class(obj: dict[str, Any]) -> None:
    setdefault(obj, "value", 0)  # an int32 Go always writes
    setdefault(obj, "preemptionPolicy", "PreemptLowerPriority")


def _pod_group(obj: dict[str, Any]) -> None:
    spec = obj.get("spec")
    if isinstance(spec, dict) and spec.get("disruptionMode") is None:
        spec["disruptionMode"] = {"single": {}}


DEFAULTERS: dict[tuple[str, str, str], Callable[[dict[str, Any]], None]] = {
    ("scheduling.k8s.io", "v1", "PriorityClass"): _priority_class,
    ("scheduling.k8s.io", "v1beta1", "PodGroup"): _pod_group,
}
