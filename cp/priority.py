"""Pod priority: the built-in PriorityClasses and how the Priority admission plugin resolves a pod's
priority (kubernetes `pkg/apis/scheduling` SystemPriorityClasses and
`plugin/pkg/admission/priority/admission.go`). Pure: callers pass the PriorityClasses they read.

- `system-node-critical` (2000001000) and `system-cluster-critical` (2000000000) are created by
  the server at start (`scheduling/bootstrap-system-priority-classes`); deleting one by name is
  forbidden.
- On pod create, `priorityClassName` resolves to the class's `value` and `preemptionPolicy`; with
  no name, the `globalDefault` class (the lowest value if several) names itself in the pod, and
  without one the pod gets priority 0 and PreemptLowerPriority. An unknown class, or a priority or
  preemptionPolicy in the pod that differs from the resolved one, is refused.
- On pod update, a priority or preemptionPolicy the write leaves out is kept from the stored pod.
- At most one PriorityClass may be `globalDefault`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from cp import errors

GROUP = "scheduling.k8s.io"
PLURAL = "priorityclasses"
SYSTEM_CRITICAL_PRIORITY = 2_000_000_000
DEFAULT_PRIORITY = 0  # scheduling.DefaultPriorityWhenNoDefaultClassExists
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"

SYSTEM_PRIORITY_CLASSES: dict[str, tuple[int, str]] = {
    "system-node-critical": (SYSTEM_CRITICAL_PRIORITY + 1000,
                             "Used for system critical pods that must not be moved from their current node."),
    "system-cluster-critical": (SYSTEM_CRITICAL_PRIORITY,
                                "Used for system critical pods that must run in the cluster, but can be moved "
                                "to another node if necessary."),
}


def system_class(name: str) -> dict[str, Any]:
    """The PriorityClass object the server creates for a system class (defaulted as stored)."""
    value, description = SYSTEM_PRIORITY_CLASSES[name]
    return {"apiVersion": f"{GROUP}/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value, "description": description, "preemptionPolicy": PREEMPT_LOWER_PRIORITY}


def refuse_system_class_delete(name: str) -> None:
    """Deleting a system class by name is forbidden (the PriorityClass REST storage's Delete; a
    collection delete goes through, and the server creates the class again)."""
    if name in SYSTEM_PRIORITY_CLASSES:
        raise errors.Forbidden.of(group=GROUP, plural=PLURAL, name=name,
                                  reason="this is a system priority class and cannot be deleted")


def _value(pc: Mapping[str, Any]) -> int:
    v = pc.get("value")
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def _name(pc: Mapping[str, Any]) -> str:
    meta = pc.get("metadata")
    return str(meta.get("name") or "") if isinstance(meta, Mapping) else ""


def default_class(classes: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The globalDefault class; if a race left several, the one with the lowest value."""
    best: Mapping[str, Any] | None = None
    for pc in classes:
        if pc.get("globalDefault") is True and (best is None or _value(best) > _value(pc)):
            best = pc
    return best


class PodPriorityError(Exception):
    """A pod the Priority plugin refuses; the message follows `pods "<name>" is forbidden: `."""


def resolve_pod_priority(spec: dict[str, Any], classes: Mapping[str, Mapping[str, Any]]) -> None:
    """Set `priority`, `preemptionPolicy` and (from the default class) `priorityClassName` of a new
    pod's spec in place; `classes` by name. Raises PodPriorityError."""
    name = spec.get("priorityClassName")
    policy: Any
    if not name:
        pc = default_class(classes.values())
        if pc is None:
            value, policy = DEFAULT_PRIORITY, PREEMPT_LOWER_PRIORITY
        else:
            value, policy = _value(pc), pc.get("preemptionPolicy")
            spec["priorityClassName"] = _name(pc)
        if not spec.get("priorityClassName"):
            spec.pop("priorityClassName", None)
    else:
        found = classes.get(str(name))
        if found is None:
            raise PodPriorityError(f"no PriorityClass with name {name} was found")
        value, policy = _value(found), found.get("preemptionPolicy")
    given = spec.get("priority")
    if given is not None and given != value:
        raise PodPriorityError(f"the integer value of priority ({given}) must not be provided in pod spec; "
                               f"priority admission controller computed {value} from the given PriorityClass name")
    spec["priority"] = value
    if isinstance(policy, str) and policy:
        given_policy = spec.get("preemptionPolicy")
        if given_policy is not None and given_policy != policy:
            raise PodPriorityError(f"the string value of PreemptionPolicy ({given_policy}) must not be provided in "
                                   f"pod spec; priority admission controller computed {policy} from the given "
                                   "PriorityClass name")
        spec["preemptionPolicy"] = policy


def keep_pod_priority(spec: dict[str, Any], old_spec: Mapping[str, Any]) -> None:
    """On update: what the plugin set on create stays when the write leaves it out."""
    for key in ("priority", "preemptionPolicy"):
        if spec.get(key) is None and old_spec.get(key) is not None:
            spec[key] = old_spec[key]


def second_default(pc: Mapping[str, Any], classes: Iterable[Mapping[str, Any]], *, creating: bool) -> str:
    """The name of another globalDefault class when `pc` would be a second one ("" when fine)."""
    if pc.get("globalDefault") is not True:
        return ""
    existing = default_class(classes)
    if existing is None:
        return ""
    if creating or _name(existing) != _name(pc):
        return _name(existing)
    return ""
