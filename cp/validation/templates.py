"""Pod templates as the workload kinds validate them (`ValidatePodTemplateSpec` and the per-controller
checks of restart policy and `activeDeadlineSeconds`), shared by the core/v1, apps/v1 and batch/v1 rule
modules. The pod spec rules are those of pods (`cp.validation.pod`). Pure."""

from __future__ import annotations

from typing import Any

from cp.errors import Cause
from cp.validation.common import (
    as_dict,
    as_list,
    as_str,
    go_string_map,
    is_label_value,
    is_qualified_name,
    not_supported,
)
from cp.validation.meta import selector_matches, validate_template_object_meta
from cp.validation.pod import validate_pod_spec


def validate_pod_template_spec(template: Any, path: str, errs: list[Cause]) -> None:
    """ValidatePodTemplateSpec: template labels and annotations, then the pod spec; no ephemeral containers."""
    template = as_dict(template)
    # Upstream reports the template's labels and annotations at `<template>.labels`, without `metadata`.
    validate_template_object_meta(template.get("metadata"), path, errs)
    spec = as_dict(template.get("spec"))
    validate_pod_spec(spec, f"{path}.spec", errs)
    if as_list(spec.get("ephemeralContainers")):
        errs.append(Cause("Forbidden", f"{path}.spec.ephemeralContainers",
                          "ephemeral containers not allowed in pod template"))


def template_labels(template: Any) -> dict[str, Any]:
    return as_dict(as_dict(as_dict(template).get("metadata")).get("labels"))


def check_selector_matches(selector: Any, template: Any, path: str, errs: list[Cause]) -> None:
    """The selector (already converted without error) must select the pods the template makes."""
    labels = template_labels(template)
    if isinstance(selector, dict) and not selector_matches(selector, labels):
        errs.append(Cause("Invalid", f"{path}.metadata.labels", "`selector` does not match template `labels`",
                          go_string_map(labels)))


def check_restart_always(template: Any, path: str, errs: list[Cause], *, kind: str) -> None:
    """Controllers that keep pods running: restart policy `Always`, no active deadline."""
    spec = as_dict(as_dict(template).get("spec"))
    policy = spec.get("restartPolicy")
    if policy != "Always":
        not_supported(errs, f"{path}.spec.restartPolicy", policy, ("Always",))
    if spec.get("activeDeadlineSeconds") is not None:
        errs.append(Cause("Forbidden", f"{path}.spec.activeDeadlineSeconds",
                          f"activeDeadlineSeconds in {kind} is not Supported"))


def selector_converts(sel: Any) -> bool:
    """Whether `metav1.LabelSelectorAsSelector` accepts the selector."""
    for req in as_list(as_dict(sel).get("matchExpressions")):
        req = as_dict(req)
        op, values = req.get("operator"), as_list(req.get("values"))
        if op in ("In", "NotIn") and not values:
            return False
        if op in ("Exists", "DoesNotExist") and values:
            return False
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False
        if is_qualified_name(as_str(req.get("key"))):
            return False
    for key, value in as_dict(as_dict(sel).get("matchLabels")).items():
        if is_qualified_name(key) or is_label_value(as_str(value)):
            return False
    return True
