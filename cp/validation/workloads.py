"""Validation rules for apps/v1 Deployments and ReplicaSets and autoscaling/v2 HorizontalPodAutoscalers.

Behaviour follows upstream `pkg/apis/apps/validation` and `pkg/apis/autoscaling/validation`. Pure.
"""

from __future__ import annotations

from typing import Any

from cp import features as gates
from cp.errors import Cause
from cp.validation.common import (
    PERCENT,
    as_dict,
    as_list,
    as_str,
    each,
    go_label_selector,
    go_string_map,
    is_dns1123_label,
    is_int,
    name_is_dns_subdomain,
    nonnegative,
    not_supported,
    parse_quantity,
    validate_annotations,
    validate_labels,
    validate_path_segment_name,
)
from cp.validation.meta import (
    selector_matches,
    validate_label_selector,
    validate_object_meta,
)
from cp.validation.pod import (
    validate_pod_spec,
)
from cp.validation.registry import Rules
from cp.validation.templates import selector_converts

# ---------------------------------------------------------------- apps/v1

def _validate_pod_template(template: Any, selector: Any, path: str, errs: list[Cause]) -> None:
    """ValidatePodTemplateSpecForReplicaSet."""
    if not isinstance(template, dict):
        errs.append(Cause("Required", path, ""))
        return
    meta = as_dict(template.get("metadata"))
    labels = as_dict(meta.get("labels"))
    if isinstance(selector, dict) and (selector.get("matchLabels") or selector.get("matchExpressions")) \
            and not selector_matches(selector, labels):
        errs.append(Cause("Invalid", f"{path}.metadata.labels", "`selector` does not match template `labels`",
                              go_string_map(labels)))
    validate_labels(meta.get("labels"), f"{path}.labels", errs)
    validate_annotations(meta.get("annotations"), f"{path}.annotations", errs)
    spec = as_dict(template.get("spec"))
    validate_pod_spec(spec, f"{path}.spec", errs)
    rp = spec.get("restartPolicy")
    if rp and rp != "Always":
        not_supported(errs, f"{path}.spec.restartPolicy", rp, ("Always",))
    if spec.get("activeDeadlineSeconds") is not None:
        errs.append(Cause("Invalid", f"{path}.spec.activeDeadlineSeconds",
                          "activeDeadlineSeconds in ReplicaSet is not Supported", spec.get("activeDeadlineSeconds")))


def _validate_selector_and_template(spec: dict[str, Any], errs: list[Cause], what: str) -> None:
    """Selector required and non-empty; the template is validated only when the selector converts
    (upstream reports `invalid label selector` otherwise)."""
    sel = spec.get("selector")
    if sel is None:
        errs.append(Cause("Required", "spec.selector", ""))
    else:
        validate_label_selector(sel, "spec.selector", errs)
        if not as_dict(sel).get("matchLabels") and not as_dict(sel).get("matchExpressions"):
            errs.append(Cause("Invalid", "spec.selector", f"empty selector is invalid for {what}",
                              go_label_selector(sel)))
    if sel is not None and not selector_converts(sel):
        errs.append(Cause("Invalid", "spec.selector", "invalid label selector", go_label_selector(sel)))
        return
    _validate_pod_template(spec.get("template"), sel, "spec.template", errs)


def _int_or_percent(value: Any, path: str, errs: list[Cause]) -> tuple[int | None, bool]:
    """ValidatePositiveIntOrPercent; returns (number, is_percent)."""
    if isinstance(value, str):
        if not PERCENT.match(value):
            errs.append(Cause("Invalid", path, "a valid percent string must be a numeric string followed by an "
                              "ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')", value))
            return None, True
        return int(value[:-1]), True
    if is_int(value):
        if value < 0:
            errs.append(Cause("Invalid", path, "must be greater than or equal to 0", value))
        return value, False
    return None, False


def _validate_deployment_spec(spec: dict[str, Any], errs: list[Cause]) -> None:
    nonnegative(errs, "spec.replicas", spec.get("replicas"))
    _validate_selector_and_template(spec, errs, "deployment")
    strategy = as_dict(spec.get("strategy"))
    stype = strategy.get("type")
    if not stype:
        errs.append(Cause("Required", "spec.strategy.type", ""))
    elif stype not in ("Recreate", "RollingUpdate"):
        not_supported(errs, "spec.strategy.type", stype, ("Recreate", "RollingUpdate"))
    ru = strategy.get("rollingUpdate")
    if stype == "Recreate" and ru is not None:
        errs.append(Cause("Forbidden", "spec.strategy.rollingUpdate",
                          "may not be specified when strategy `type` is 'Recreate'"))
    if stype == "RollingUpdate" and isinstance(ru, dict):
        mu, mu_pct = _int_or_percent(ru.get("maxUnavailable"), "spec.strategy.rollingUpdate.maxUnavailable", errs)
        ms, _ = _int_or_percent(ru.get("maxSurge"), "spec.strategy.rollingUpdate.maxSurge", errs)
        if mu_pct and mu is not None and mu > 100:
            errs.append(Cause("Invalid", "spec.strategy.rollingUpdate.maxUnavailable",
                              "must not be greater than 100%", ru.get("maxUnavailable")))
        if mu == 0 and ms == 0:
            errs.append(Cause("Invalid", "spec.strategy.rollingUpdate.maxUnavailable",
                              "may not be 0 when `maxSurge` is 0", ru.get("maxUnavailable")))
    nonnegative(errs, "spec.revisionHistoryLimit", spec.get("revisionHistoryLimit"))
    mrs = spec.get("minReadySeconds")
    nonnegative(errs, "spec.minReadySeconds", mrs)
    pds = spec.get("progressDeadlineSeconds")
    if is_int(pds):
        nonnegative(errs, "spec.progressDeadlineSeconds", pds)
        if is_int(mrs) and pds <= mrs:
            errs.append(Cause("Invalid", "spec.progressDeadlineSeconds", "must be greater than minReadySeconds",
                              pds))


def _validate_deployment_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause],
                                namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=namespaced, name_fn=name_is_dns_subdomain)
    _validate_deployment_spec(as_dict(obj.get("spec")), errs)


def _validate_deployment_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    spec, old_spec = as_dict(new.get("spec")), as_dict(old.get("spec"))
    _validate_deployment_spec(spec, errs)
    if spec.get("selector") != old_spec.get("selector"):
        errs.append(Cause("Invalid", "spec.selector", "field is immutable", go_label_selector(spec.get("selector"))))


def _validate_replicaset_spec(spec: dict[str, Any], errs: list[Cause]) -> None:
    nonnegative(errs, "spec.replicas", spec.get("replicas"))
    nonnegative(errs, "spec.minReadySeconds", spec.get("minReadySeconds"))
    _validate_selector_and_template(spec, errs, "deployment")


def _validate_replicaset_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause],
                                namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=namespaced, name_fn=name_is_dns_subdomain)
    _validate_replicaset_spec(as_dict(obj.get("spec")), errs)


def _validate_replicaset_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    spec, old_spec = as_dict(new.get("spec")), as_dict(old.get("spec"))
    _validate_replicaset_spec(spec, errs)
    if spec.get("selector") != old_spec.get("selector"):
        errs.append(Cause("Invalid", "spec.selector", "field is immutable", go_label_selector(spec.get("selector"))))


def _validate_workload_status(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    status = as_dict(new.get("status"))
    for key in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas", "unavailableReplicas",
                "fullyLabeledReplicas", "terminatingReplicas", "observedGeneration", "collisionCount"):
        nonnegative(errs, f"status.{key}", status.get(key))
    replicas, ready, avail = status.get("replicas"), status.get("readyReplicas"), status.get("availableReplicas")
    if is_int(ready) and is_int(replicas) and ready > replicas:
        errs.append(Cause("Invalid", "status.readyReplicas", "cannot be greater than status.replicas", ready))
    if is_int(avail) and is_int(replicas) and avail > replicas:
        errs.append(Cause("Invalid", "status.availableReplicas", "cannot be greater than status.replicas", avail))
    if is_int(avail) and is_int(ready) and avail > ready:
        errs.append(Cause("Invalid", "status.availableReplicas", "cannot be greater than readyReplicas", avail))


# ---------------------------------------------------------------- autoscaling/v2

def _validate_cross_version_ref(ref: Any, path: str, errs: list[Cause]) -> None:
    ref = as_dict(ref)
    for key in ("kind", "name"):
        value = as_str(ref.get(key))
        if not value:
            errs.append(Cause("Required", f"{path}.{key}", ""))
        else:
            each(errs, f"{path}.{key}", value, validate_path_segment_name(value, False))


def _validate_metric_target(mt: Any, path: str, errs: list[Cause]) -> None:
    mt = as_dict(mt)
    mtype = as_str(mt.get("type"))
    if not mtype:
        errs.append(Cause("Required", f"{path}.type", "must specify a metric target type"))
    if mtype not in ("Utilization", "Value", "AverageValue"):
        errs.append(Cause("Invalid", f"{path}.type", "must be either Utilization, Value, or AverageValue", mtype))
    for key in ("value", "averageValue"):
        if mt.get(key) is not None:
            q = parse_quantity(mt[key])
            if q is not None and q <= 0:
                errs.append(Cause("Invalid", f"{path}.{key}", "must be positive", str(mt[key])))
    au = mt.get("averageUtilization")
    if is_int(au) and au < 1:
        errs.append(Cause("Invalid", f"{path}.averageUtilization", "must be greater than 0", au))


def _validate_metric_identifier(mid: Any, path: str, errs: list[Cause]) -> None:
    name = as_str(as_dict(mid).get("name"))
    if not name:
        errs.append(Cause("Required", f"{path}.name", "must specify a metric name"))
    else:
        each(errs, f"{path}.name", name, validate_path_segment_name(name, False))


_METRIC_TYPES = ("ContainerResource", "External", "Object", "Pods", "Resource")
_METRIC_FIELDS = {"Object": "object", "Pods": "pods", "Resource": "resource", "External": "external",
                  "ContainerResource": "containerResource"}


def _validate_metric_spec(spec: dict[str, Any], path: str, errs: list[Cause]) -> None:
    mtype = as_str(spec.get("type"))
    if not mtype:
        errs.append(Cause("Required", f"{path}.type", "must specify a metric source type"))
    if mtype not in _METRIC_TYPES:
        not_supported(errs, f"{path}.type", mtype, _METRIC_TYPES)
    present: list[str] = []
    for key in ("object", "external", "pods", "resource", "containerResource"):
        src = spec.get(key)
        if src is None:
            continue
        present.append(key)
        if len(present) != 1:
            continue
        spath = f"{path}.{key}"
        src = as_dict(src)
        target = as_dict(src.get("target"))
        if key == "object":
            _validate_cross_version_ref(src.get("describedObject"), f"{spath}.describedObject", errs)
            _validate_metric_identifier(src.get("metric"), f"{spath}.metric", errs)
            _validate_metric_target(target, f"{spath}.target", errs)
            if target.get("value") is None and target.get("averageValue") is None:
                errs.append(Cause("Required", f"{spath}.target.averageValue",
                                  "must set either a target value or averageValue"))
        elif key == "external":
            _validate_metric_identifier(src.get("metric"), f"{spath}.metric", errs)
            _validate_metric_target(target, f"{spath}.target", errs)
            if target.get("value") is None and target.get("averageValue") is None:
                errs.append(Cause("Required", f"{spath}.target.averageValue",
                                  "must set either a target value for metric or a per-pod target"))
            if target.get("value") is not None and target.get("averageValue") is not None:
                errs.append(Cause("Forbidden", f"{spath}.target.value",
                                  "may not set both a target value for metric and a per-pod target"))
        elif key == "pods":
            _validate_metric_identifier(src.get("metric"), f"{spath}.metric", errs)
            _validate_metric_target(target, f"{spath}.target", errs)
            if target.get("averageValue") is None:
                errs.append(Cause("Required", f"{spath}.target.averageValue",
                                  "must specify a positive target averageValue"))
        else:
            if not as_str(src.get("name")):
                errs.append(Cause("Required", f"{spath}.name", "must specify a resource name"))
            if key == "containerResource":
                container = as_str(src.get("container"))
                if not container:
                    errs.append(Cause("Required", f"{spath}.container", "must specify a container"))
                else:
                    each(errs, f"{spath}.container", container, is_dns1123_label(container))
            _validate_metric_target(target, f"{spath}.target", errs)
            if target.get("averageUtilization") is None and target.get("averageValue") is None:
                errs.append(Cause("Required", f"{spath}.target.averageUtilization",
                                  "must set either a target raw value or a target utilization"))
            if target.get("averageUtilization") is not None and target.get("averageValue") is not None:
                errs.append(Cause("Forbidden", f"{spath}.target.averageValue",
                                  "may not set both a target raw value and a target utilization"))
    expected = _METRIC_FIELDS.get(mtype)
    if expected is not None and spec.get(expected) is None:
        errs.append(Cause("Required", f"{path}.{expected}", "must populate information for the given metric source"))
    if len(present) != 1:
        for key in present:
            if key != expected:
                errs.append(Cause("Forbidden", f"{path}.{key}", "must populate the given metric source only"))


def _validate_scaling_rules(rules: Any, path: str, errs: list[Cause]) -> None:
    if not isinstance(rules, dict):
        return
    sws = rules.get("stabilizationWindowSeconds")
    if is_int(sws) and sws < 0:
        errs.append(Cause("Invalid", f"{path}.stabilizationWindowSeconds", "must be greater than or equal to zero",
                          sws))
    if is_int(sws) and sws > 3600:
        errs.append(Cause("Invalid", f"{path}.stabilizationWindowSeconds", "must be less than or equal to 3600",
                          sws))
    sp = rules.get("selectPolicy")
    if sp is not None and sp not in ("Disabled", "Max", "Min"):
        not_supported(errs, f"{path}.selectPolicy", sp, ("Disabled", "Max", "Min"))
    tol = rules.get("tolerance")
    if tol is not None:
        q = parse_quantity(tol)
        if q is not None and q < 0:
            errs.append(Cause("Invalid", f"{path}.tolerance", "must be greater than or equal to zero", str(tol)))
    policies = as_list(rules.get("policies"))
    if not policies:
        errs.append(Cause("Required", f"{path}.policies", "must specify at least one Policy"))
    for i, p in enumerate(policies):
        p = as_dict(p)
        ppath = f"{path}.policies[{i}]"
        if p.get("type") not in ("Pods", "Percent"):
            not_supported(errs, f"{ppath}.type", p.get("type") or "", ("Percent", "Pods"))
        value = p.get("value", 0)
        if is_int(value) and value <= 0:
            errs.append(Cause("Invalid", f"{ppath}.value", "must be greater than zero", value))
        period = p.get("periodSeconds", 0)
        if is_int(period) and period <= 0:
            errs.append(Cause("Invalid", f"{ppath}.periodSeconds", "must be greater than zero", period))
        if is_int(period) and period > 1800:
            errs.append(Cause("Invalid", f"{ppath}.periodSeconds", "must be less than or equal to 1800", period))


def _validate_hpa_spec(spec: dict[str, Any], errs: list[Cause], *, min_lower_bound: int) -> None:
    minr, maxr = spec.get("minReplicas"), spec.get("maxReplicas", 0)
    if is_int(minr) and minr < min_lower_bound:
        errs.append(Cause("Invalid", "spec.minReplicas", f"must be greater than or equal to {min_lower_bound}",
                          minr))
    if is_int(maxr) and maxr < 1:
        errs.append(Cause("Invalid", "spec.maxReplicas", "must be greater than 0", maxr))
    if is_int(minr) and is_int(maxr) and maxr < minr:
        errs.append(Cause("Invalid", "spec.maxReplicas", "must be greater than or equal to `minReplicas`", maxr))
    _validate_cross_version_ref(spec.get("scaleTargetRef"), "spec.scaleTargetRef", errs)
    has_object_or_external = False
    for i, m in enumerate(as_list(spec.get("metrics"))):
        m = as_dict(m)
        _validate_metric_spec(m, f"spec.metrics[{i}]", errs)
        if m.get("type") in ("Object", "External"):
            has_object_or_external = True
    if minr == 0 and not has_object_or_external:
        errs.append(Cause("Forbidden", "spec.metrics",
                          "must specify at least one Object or External metric to support scaling to zero replicas"))
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        _validate_scaling_rules(behavior.get("scaleUp"), "spec.behavior.scaleUp", errs)
        _validate_scaling_rules(behavior.get("scaleDown"), "spec.behavior.scaleDown", errs)


def _validate_hpa_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=namespaced, name_fn=name_is_dns_subdomain)


def _validate_hpa_spec_gated(new: dict[str, Any], old: dict[str, Any] | None, errs: list[Cause],
                             features: gates.FeatureGates) -> None:
    """The spec, with upstream's `MinReplicasLowerBound`: 0 while HPAScaleToZero is on, or when the
    stored HPA already has `minReplicas: 0` (it stays valid after the gate is turned off); else 1."""
    old_min = as_dict(old.get("spec")).get("minReplicas") if old is not None else None
    zero = features.enabled(gates.HPA_SCALE_TO_ZERO) or old_min == 0
    _validate_hpa_spec(as_dict(new.get("spec")), errs, min_lower_bound=0 if zero else 1)


def _validate_hpa_status(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    status = as_dict(new.get("status"))
    nonnegative(errs, "status.currentReplicas", status.get("currentReplicas"))
    nonnegative(errs, "status.desiredReplicas", status.get("desiredReplicas"))




RULES = {
    ("apps", "Deployment"): Rules(_validate_deployment_create, _validate_deployment_update, _validate_workload_status),
    ("apps", "ReplicaSet"): Rules(_validate_replicaset_create, _validate_replicaset_update, _validate_workload_status),
    ("autoscaling", "HorizontalPodAutoscaler"): Rules(_validate_hpa_create, None, _validate_hpa_status,
                                                      gated=_validate_hpa_spec_gated),
}
