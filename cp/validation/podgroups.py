"""Validation rules for scheduling.k8s.io/v1beta1 Workload and PodGroup (KEP-4671, new in 1.37 behind
GenericWorkload; served only when the gate is on, `cp.resources.GATED`).

1.37 validates these kinds declaratively: the rules are the `+k8s:` tags of k8s.io/api
`scheduling/v1beta1/types.go` (required fields, formats, unions, `maximum`, `maxItems`, list-map keys,
immutability), reported as the declarative validator reports them. Fields of gates cplane does not
implement (CompositePodGroup, TopologyAwareWorkloadScheduling, PodGroupPreemptionPolicy; all off in
1.37) are forbidden, as `+k8s:ifDisabled(...)=+k8s:forbidden` makes them. Pure.
"""

from __future__ import annotations

from typing import Any

from cp.errors import Cause
from cp.names import is_dns1123_label, is_dns1123_subdomain
from cp.validation.common import (
    GoValue,
    as_dict,
    as_str,
    each,
    name_is_dns_subdomain,
    too_many,
    validate_path_segment_name,
)
from cp.validation.meta import validate_object_meta
from cp.validation.registry import Rules

MAX_TEMPLATES = 8  # WorkloadMaxPodGroupTemplates
MAX_CLAIMS = 4  # MaxPodGroupResourceClaims
HIGHEST_USER_PRIORITY = 1_000_000_000
_POLICY_UNION = "`basic`, `gang`"
_DISRUPTION_UNION = "`single`, `all`"
_CLAIM_UNION = "`resourceClaimName`, `resourceClaimTemplateName`"
# (field, gate) of fields forbidden while their (unimplemented, off) gate is off
_FORBIDDEN_POD_GROUP = (("schedulingConstraints", "TopologyAwareWorkloadScheduling"),
                        ("parentCompositePodGroupName", "CompositePodGroup"),
                        ("preemptionPolicy", "PodGroupPreemptionPolicy"))
_FORBIDDEN_TEMPLATE = (("schedulingConstraints", "TopologyAwareWorkloadScheduling"),
                       ("preemptionPolicy", "PodGroupPreemptionPolicy"))


def _union(errs: list[Cause], path: str, obj: Any, members: tuple[str, ...], names: str) -> str | None:
    """A `+union`: exactly one member set; returns the one set."""
    given = as_dict(obj)
    set_ = [m for m in members if given.get(m) is not None]
    if not set_:
        errs.append(Cause("Invalid", path, f"must specify one of: {names}", ""))
        return None
    if len(set_) > 1:
        shown = "{" + ", ".join(f"`{m}`" for m in set_) + "}"
        errs.append(Cause("Invalid", path, f"exactly one of {names} is required, but multiple fields are set",
                          shown))
        return None
    return set_[0]


def _required_format(errs: list[Cause], path: str, value: Any, check: Any) -> None:
    text = as_str(value)
    if not text:
        errs.append(Cause("Required", path, ""))
    else:
        each(errs, path, text, check(text))


def _optional_format(errs: list[Cause], path: str, value: Any, check: Any) -> None:
    if value is not None and as_str(value) != "":
        each(errs, path, as_str(value), check(as_str(value)))


def _scheduling_policy(errs: list[Cause], path: str, policy: Any) -> None:
    chosen = _union(errs, path, policy, ("basic", "gang"), _POLICY_UNION)
    if chosen == "gang":
        min_count = as_dict(as_dict(policy).get("gang")).get("minCount")
        if not min_count:
            errs.append(Cause("Required", f"{path}.gang.minCount", ""))
        elif isinstance(min_count, int) and min_count < 1:
            errs.append(Cause("Invalid", f"{path}.gang.minCount", "must be greater than or equal to 1", min_count))


def _named_entry(errs: list[Cause], path: str, entry: dict[str, Any], seen: set[str]) -> None:
    """An entry of a list keyed by `name`: a DNS label, not named twice (`seen`: the names so far)."""
    name = as_str(entry.get("name"))
    _required_format(errs, f"{path}.name", name, is_dns1123_label)
    if name and name in seen:
        errs.append(Cause("Duplicate", path, "", GoValue("{" + f'"name":"{name}"' + "}")))
    seen.add(name)


def _resource_claims(errs: list[Cause], path: str, claims: Any) -> None:
    if not isinstance(claims, list):
        return
    if len(claims) > MAX_CLAIMS:
        too_many(errs, path, len(claims), MAX_CLAIMS)
    seen: set[str] = set()
    for i, claim in enumerate(claims):
        p = f"{path}[{i}]"
        c = as_dict(claim)
        _named_entry(errs, p, c, seen)
        if _union(errs, p, c, ("resourceClaimName", "resourceClaimTemplateName"), _CLAIM_UNION) is not None:
            _optional_format(errs, f"{p}.resourceClaimName", c.get("resourceClaimName"), is_dns1123_subdomain)
            _optional_format(errs, f"{p}.resourceClaimTemplateName", c.get("resourceClaimTemplateName"),
                             is_dns1123_subdomain)


def _group_fields(errs: list[Cause], path: str, spec: dict[str, Any], forbidden: tuple[tuple[str, str], ...]) -> None:
    """What a PodGroup's spec and a Workload's PodGroupTemplate share."""
    _scheduling_policy(errs, f"{path}.schedulingPolicy", spec.get("schedulingPolicy"))
    _resource_claims(errs, f"{path}.resourceClaims", spec.get("resourceClaims"))
    if spec.get("disruptionMode") is not None:
        _union(errs, f"{path}.disruptionMode", spec.get("disruptionMode"), ("single", "all"), _DISRUPTION_UNION)
    _optional_format(errs, f"{path}.priorityClassName", spec.get("priorityClassName"), is_dns1123_subdomain)
    priority = spec.get("priority")
    if isinstance(priority, int) and priority > HIGHEST_USER_PRIORITY:
        errs.append(Cause("Invalid", f"{path}.priority",
                          f"must be less than or equal to {HIGHEST_USER_PRIORITY}", priority))
    for field, _gate in forbidden:
        if spec.get(field) is not None:
            errs.append(Cause("Forbidden", f"{path}.{field}", ""))


# ---------------------------------------------------------------- PodGroup


def _pod_group_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=True, name_fn=name_is_dns_subdomain)
    spec = as_dict(obj.get("spec"))
    ref = spec.get("workloadRef")
    if ref is not None:
        r = as_dict(ref)
        _required_format(errs, "spec.workloadRef.workloadName", r.get("workloadName"), is_dns1123_subdomain)
        _required_format(errs, "spec.workloadRef.templateName", r.get("templateName"), is_dns1123_label)
    _group_fields(errs, "spec", spec, _FORBIDDEN_POD_GROUP)


_POD_GROUP_IMMUTABLE = ("workloadRef", "schedulingConstraints", "resourceClaims", "disruptionMode",
                        "priorityClassName", "priority", "preemptionPolicy", "parentCompositePodGroupName")


def _pod_group_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    spec, old_spec = as_dict(new.get("spec")), as_dict(old.get("spec"))
    _group_fields(errs, "spec", spec, ())
    for field in _POD_GROUP_IMMUTABLE:
        if spec.get(field) != old_spec.get(field):
            errs.append(Cause("Invalid", f"spec.{field}", "field is immutable", GoValue("null")))
    policy, old_policy = as_dict(spec.get("schedulingPolicy")), as_dict(old_spec.get("schedulingPolicy"))
    if policy.get("basic") != old_policy.get("basic"):
        errs.append(Cause("Invalid", "spec.schedulingPolicy.basic", "field is immutable", GoValue("null")))
    if (policy.get("gang") is None) != (old_policy.get("gang") is None):  # +k8s:update=NoSet,NoUnset
        verb = "set" if old_policy.get("gang") is None else "cleared"
        errs.append(Cause("Invalid", "spec.schedulingPolicy.gang", f"field cannot be {verb} once created",
                          GoValue("null")))


def _pod_group_status_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    status = as_dict(new.get("status"))
    seen: set[str] = set()
    for i, cond in enumerate(status.get("conditions") or []):
        ctype = as_str(as_dict(cond).get("type"))
        if ctype in seen:
            errs.append(Cause("Duplicate", f"status.conditions[{i}]", "", GoValue("{" + f'"type":"{ctype}"' + "}")))
        seen.add(ctype)
    claims = status.get("resourceClaimStatuses")
    if isinstance(claims, list):
        if len(claims) > MAX_CLAIMS:
            too_many(errs, "status.resourceClaimStatuses", len(claims), MAX_CLAIMS)
        for i, entry in enumerate(claims):
            e = as_dict(entry)
            _optional_format(errs, f"status.resourceClaimStatuses[{i}].resourceClaimName",
                             e.get("resourceClaimName"), is_dns1123_subdomain)


# ---------------------------------------------------------------- Workload


def _templates(errs: list[Cause], spec: dict[str, Any]) -> None:
    templates = spec.get("podGroupTemplates")
    if spec.get("compositePodGroupTemplates") is not None:  # CompositePodGroup (alpha, off)
        errs.append(Cause("Forbidden", "spec.compositePodGroupTemplates", ""))
    if not templates:
        errs.append(Cause("Invalid", "spec", "must specify one of: `podGroupTemplates`, `compositePodGroupTemplates`",
                          ""))
        return
    if not isinstance(templates, list):
        return
    if len(templates) > MAX_TEMPLATES:
        too_many(errs, "spec.podGroupTemplates", len(templates), MAX_TEMPLATES)
        return
    seen: set[str] = set()
    for i, template in enumerate(templates):
        p = f"spec.podGroupTemplates[{i}]"
        t = as_dict(template)
        _named_entry(errs, p, t, seen)
        _group_fields(errs, p, t, _FORBIDDEN_TEMPLATE)


def _controller_ref(errs: list[Cause], ref: Any) -> None:
    r = as_dict(ref)
    _optional_format(errs, "spec.controllerRef.apiGroup", r.get("apiGroup"), is_dns1123_subdomain)
    for field in ("kind", "name"):
        _required_format(errs, f"spec.controllerRef.{field}", r.get(field),
                         lambda text: validate_path_segment_name(text, False))


def _workload_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=True, name_fn=name_is_dns_subdomain)
    spec = as_dict(obj.get("spec"))
    if spec.get("controllerRef") is not None:
        _controller_ref(errs, spec.get("controllerRef"))
    _templates(errs, spec)


def _workload_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    spec, old_spec = as_dict(new.get("spec")), as_dict(old.get("spec"))
    if old_spec.get("controllerRef") is not None and spec.get("controllerRef") != old_spec.get("controllerRef"):
        errs.append(Cause("Invalid", "spec.controllerRef", "field is immutable", GoValue("null")))
    names = [as_str(as_dict(t).get("name")) for t in spec.get("podGroupTemplates") or []]
    old_names = [as_str(as_dict(t).get("name")) for t in old_spec.get("podGroupTemplates") or []]
    for i, name in enumerate(names):
        if name not in old_names:  # +k8s:update=NoAddItem
            errs.append(Cause("Forbidden", f"spec.podGroupTemplates[{i}]", "adding list items is not allowed"))
    for name in old_names:
        if name not in names:  # +k8s:update=NoRemoveItem
            errs.append(Cause("Forbidden", "spec.podGroupTemplates", "removing list items is not allowed"))
            break
    olds = {as_str(as_dict(t).get("name")): as_dict(t) for t in old_spec.get("podGroupTemplates") or []}
    for i, template in enumerate(spec.get("podGroupTemplates") or []):
        t = as_dict(template)
        before = olds.get(as_str(t.get("name")))
        if before is None:
            continue
        for field in ("schedulingConstraints", "resourceClaims", "disruptionMode", "priorityClassName", "priority",
                      "preemptionPolicy"):
            if t.get(field) != before.get(field):
                errs.append(Cause("Invalid", f"spec.podGroupTemplates[{i}].{field}", "field is immutable",
                                  GoValue("null")))


# ---------------------------------------------------------------- the pod's reference


def validate_scheduling_group(spec: dict[str, Any], path: str, errs: list[Cause]) -> None:
    """`spec.schedulingGroup` of a pod (kept only with GenericWorkload): exactly one member,
    `podGroupName`, a DNS subdomain."""
    group = spec.get("schedulingGroup")
    if group is None:
        return
    name = as_dict(group).get("podGroupName")
    if name is None:
        errs.append(Cause("Invalid", f"{path}.schedulingGroup", "must specify one of: `podGroupName`", ""))
        return
    _required_format(errs, f"{path}.schedulingGroup.podGroupName", name, is_dns1123_subdomain)


RULES = {
    ("scheduling.k8s.io", "PodGroup"): Rules(_pod_group_create, _pod_group_update, _pod_group_status_update),
    ("scheduling.k8s.io", "Workload"): Rules(_workload_create, _workload_update),
}
