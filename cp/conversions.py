"""Conversions between the stored version of a kind and the other versions it is served in, as
kube-apiserver stores one resource and converts on the way in and out: `events.k8s.io/v1` Events are
core/v1 Events (`pkg/apis/events/v1/conversion.go`), `autoscaling/v1` HorizontalPodAutoscalers are
autoscaling/v2 ones (`pkg/apis/autoscaling/v1/conversion.go`: the CPU target is the CPU utilization
metric, what v1 cannot say rides in `autoscaling.alpha.kubernetes.io/...` annotations).

A served kind names its storage in the registry (`ResourceKind.storage_of`); `to_served` and
`to_storage` convert whole objects; `served_json` renders a stored object's bytes as the served
version's JSON, with the fields Go writes for that type (through its protobuf message). Pure.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from cp import resources as res

_decode = msgspec.json.Decoder().decode
_encode = msgspec.json.Encoder().encode

Converter = Callable[[dict[str, Any]], dict[str, Any]]


def _meta(obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    return copy.deepcopy(dict(meta)) if isinstance(meta, Mapping) else {}


def _put(out: dict[str, Any], key: str, value: Any) -> None:
    if value is not None and value != "" and value != {} and value != []:
        out[key] = value


# ------------------------------------------------------------------------------ events.k8s.io/v1

# core/v1 field -> events.k8s.io/v1 field, in events/v1's field order.
_EVENT_FIELDS = (("eventTime", "eventTime"), ("series", "series"), ("reportingComponent", "reportingController"),
                 ("reportingInstance", "reportingInstance"), ("action", "action"), ("reason", "reason"),
                 ("involvedObject", "regarding"), ("related", "related"), ("message", "note"), ("type", "type"),
                 ("source", "deprecatedSource"), ("firstTimestamp", "deprecatedFirstTimestamp"),
                 ("lastTimestamp", "deprecatedLastTimestamp"), ("count", "deprecatedCount"))


def event_to_v1(core: dict[str, Any]) -> dict[str, Any]:
    """A core/v1 Event as events.k8s.io/v1 (involvedObject is `regarding`, message is `note`, source,
    first/last timestamps and count are `deprecated...`, reportingComponent is `reportingController`)."""
    out: dict[str, Any] = {"kind": "Event", "apiVersion": "events.k8s.io/v1", "metadata": _meta(core)}
    for old, new in _EVENT_FIELDS:
        _put(out, new, copy.deepcopy(core.get(old)))
    return out


def event_from_v1(v1: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": "Event", "apiVersion": "v1", "metadata": _meta(v1)}
    for old, new in _EVENT_FIELDS:
        _put(out, old, copy.deepcopy(v1.get(new)))
    return out


# ------------------------------------------------------------------------------ autoscaling/v1

METRIC_SPECS = "autoscaling.alpha.kubernetes.io/metrics"
METRIC_STATUSES = "autoscaling.alpha.kubernetes.io/current-metrics"
CONDITIONS = "autoscaling.alpha.kubernetes.io/conditions"
BEHAVIOR = "autoscaling.alpha.kubernetes.io/behavior"
_ROUND_TRIP = (METRIC_SPECS, METRIC_STATUSES, CONDITIONS, BEHAVIOR)
DEFAULT_CPU_UTILIZATION = 80


def _go(value: Any) -> str:
    return _encode(value).decode()


def _is_cpu_utilization(metric: Mapping[str, Any]) -> bool:
    resource = metric.get("resource") or {}
    return metric.get("type") == "Resource" and resource.get("name") == "cpu" and \
        (resource.get("target") or {}).get("averageUtilization") is not None


def _metric_to_v1(m: Mapping[str, Any]) -> dict[str, Any]:
    """An autoscaling/v2 MetricSpec as autoscaling/v1's (the v2beta1 shape)."""
    out: dict[str, Any] = {"type": m.get("type", "")}
    if isinstance(m.get("object"), Mapping):
        o = m["object"]
        metric, target = o.get("metric") or {}, o.get("target") or {}
        src: dict[str, Any] = {"target": o.get("describedObject") or {}, "metricName": metric.get("name", ""),
                               "targetValue": target.get("value", "0")}
        _put(src, "selector", metric.get("selector"))
        _put(src, "averageValue", target.get("averageValue"))
        out["object"] = src
    if isinstance(m.get("pods"), Mapping):
        p = m["pods"]
        metric, target = p.get("metric") or {}, p.get("target") or {}
        src = {"metricName": metric.get("name", ""), "targetAverageValue": target.get("averageValue", "0")}
        _put(src, "selector", metric.get("selector"))
        out["pods"] = src
    for key in ("resource", "containerResource"):
        if isinstance(m.get(key), Mapping):
            r = m[key]
            target = r.get("target") or {}
            src = {"name": r.get("name", "")}
            _put(src, "targetAverageUtilization", target.get("averageUtilization"))
            _put(src, "targetAverageValue", target.get("averageValue"))
            if key == "containerResource":
                src["container"] = r.get("container", "")
            out[key] = src
    if isinstance(m.get("external"), Mapping):
        e = m["external"]
        metric, target = e.get("metric") or {}, e.get("target") or {}
        src = {"metricName": metric.get("name", "")}
        _put(src, "metricSelector", metric.get("selector"))
        _put(src, "targetValue", target.get("value"))
        _put(src, "targetAverageValue", target.get("averageValue"))
        out["external"] = src
    return out


def _metric_from_v1(m: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"type": m.get("type", "")}
    if isinstance(m.get("object"), Mapping):
        o = m["object"]
        metric: dict[str, Any] = {"name": o.get("metricName", "")}
        _put(metric, "selector", o.get("selector"))
        target: dict[str, Any] = {"type": "Value" if o.get("averageValue") is None else "AverageValue",
                                  "value": o.get("targetValue", "0")}
        _put(target, "averageValue", o.get("averageValue"))
        out["object"] = {"describedObject": o.get("target") or {}, "target": target, "metric": metric}
    if isinstance(m.get("pods"), Mapping):
        p = m["pods"]
        metric = {"name": p.get("metricName", "")}
        _put(metric, "selector", p.get("selector"))
        out["pods"] = {"metric": metric,
                       "target": {"type": "AverageValue", "averageValue": p.get("targetAverageValue", "0")}}
    for key in ("resource", "containerResource"):
        if isinstance(m.get(key), Mapping):
            r = m[key]
            utilization = r.get("targetAverageUtilization")
            target = {"type": "AverageValue" if utilization is None else "Utilization"}
            _put(target, "averageValue", r.get("targetAverageValue"))
            _put(target, "averageUtilization", utilization)
            src: dict[str, Any] = {"name": r.get("name", ""), "target": target}
            if key == "containerResource":
                src["container"] = r.get("container", "")
            out[key] = src
    if isinstance(m.get("external"), Mapping):
        e = m["external"]
        metric = {"name": e.get("metricName", "")}
        _put(metric, "selector", e.get("metricSelector"))
        target = {"type": "Value" if e.get("targetAverageValue") is None else "AverageValue"}
        _put(target, "value", e.get("targetValue"))
        _put(target, "averageValue", e.get("targetAverageValue"))
        out["external"] = {"metric": metric, "target": target}
    return out


def _status_to_v1(m: Mapping[str, Any]) -> dict[str, Any]:
    """An autoscaling/v2 MetricStatus as autoscaling/v1's."""
    out: dict[str, Any] = {"type": m.get("type", "")}
    if isinstance(m.get("object"), Mapping):
        o = m["object"]
        metric, current = o.get("metric") or {}, o.get("current") or {}
        src: dict[str, Any] = {"target": o.get("describedObject") or {}, "metricName": metric.get("name", ""),
                               "currentValue": current.get("value", "0")}
        _put(src, "selector", metric.get("selector"))
        _put(src, "averageValue", current.get("averageValue"))
        out["object"] = src
    if isinstance(m.get("pods"), Mapping):
        p = m["pods"]
        metric, current = p.get("metric") or {}, p.get("current") or {}
        src = {"metricName": metric.get("name", ""), "currentAverageValue": current.get("averageValue", "0")}
        _put(src, "selector", metric.get("selector"))
        out["pods"] = src
    for key in ("resource", "containerResource"):
        if isinstance(m.get(key), Mapping):
            r = m[key]
            current = r.get("current") or {}
            src = {"name": r.get("name", "")}
            _put(src, "currentAverageUtilization", current.get("averageUtilization"))
            src["currentAverageValue"] = current.get("averageValue", "0")
            if key == "containerResource":
                src["container"] = r.get("container", "")
            out[key] = src
    if isinstance(m.get("external"), Mapping):
        e = m["external"]
        metric, current = e.get("metric") or {}, e.get("current") or {}
        src = {"metricName": metric.get("name", "")}
        _put(src, "metricSelector", metric.get("selector"))
        src["currentValue"] = current.get("value", "0")
        _put(src, "currentAverageValue", current.get("averageValue"))
        out["external"] = src
    return out


def _status_from_v1(m: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"type": m.get("type", "")}
    if isinstance(m.get("object"), Mapping):
        o = m["object"]
        metric: dict[str, Any] = {"name": o.get("metricName", "")}
        _put(metric, "selector", o.get("selector"))
        current: dict[str, Any] = {"value": o.get("currentValue", "0")}
        _put(current, "averageValue", o.get("averageValue"))
        out["object"] = {"metric": metric, "current": current, "describedObject": o.get("target") or {}}
    if isinstance(m.get("pods"), Mapping):
        p = m["pods"]
        metric = {"name": p.get("metricName", "")}
        _put(metric, "selector", p.get("selector"))
        out["pods"] = {"metric": metric, "current": {"averageValue": p.get("currentAverageValue", "0")}}
    for key in ("resource", "containerResource"):
        if isinstance(m.get(key), Mapping):
            r = m[key]
            current = {"averageValue": r.get("currentAverageValue", "0")}
            _put(current, "averageUtilization", r.get("currentAverageUtilization"))
            src: dict[str, Any] = {"name": r.get("name", ""), "current": current}
            if key == "containerResource":
                src["container"] = r.get("container", "")
            out[key] = src
    if isinstance(m.get("external"), Mapping):
        e = m["external"]
        metric = {"name": e.get("metricName", "")}
        _put(metric, "selector", e.get("metricSelector"))
        current = {"value": e.get("currentValue", "0")}
        _put(current, "averageValue", e.get("currentAverageValue"))
        out["external"] = {"metric": metric, "current": current}
    return out


def hpa_to_v1(v2: dict[str, Any]) -> dict[str, Any]:
    """An autoscaling/v2 HorizontalPodAutoscaler as autoscaling/v1: the CPU utilization metric is
    `targetCPUUtilizationPercentage` (and its current value `currentCPUUtilizationPercentage`); the
    other metrics, the current metrics, the conditions and the behavior go to annotations."""
    spec = v2.get("spec") or {}
    status = v2.get("status") or {}
    meta = _meta(v2)
    metrics = [m for m in spec.get("metrics") or [] if isinstance(m, Mapping)]
    others = [_metric_to_v1(m) for m in metrics if not _is_cpu_utilization(m)]
    current = [m for m in status.get("currentMetrics") or [] if isinstance(m, Mapping)]
    conditions = [c for c in status.get("conditions") or [] if isinstance(c, Mapping)]
    annotations = dict(meta.get("annotations") or {})
    if others:
        annotations[METRIC_SPECS] = _go(others)
    if current:
        annotations[METRIC_STATUSES] = _go([_status_to_v1(m) for m in current])
    if spec.get("behavior") is not None:
        annotations[BEHAVIOR] = _go(spec["behavior"])
    if conditions:
        annotations[CONDITIONS] = _go(conditions)
    if annotations:
        meta["annotations"] = annotations
    v1_spec: dict[str, Any] = {"scaleTargetRef": copy.deepcopy(spec.get("scaleTargetRef") or {})}
    _put(v1_spec, "minReplicas", spec.get("minReplicas"))
    v1_spec["maxReplicas"] = spec.get("maxReplicas", 0)
    for m in metrics:
        if _is_cpu_utilization(m):
            v1_spec["targetCPUUtilizationPercentage"] = m["resource"]["target"]["averageUtilization"]
            break
    v1_status: dict[str, Any] = {}
    _put(v1_status, "observedGeneration", status.get("observedGeneration"))
    _put(v1_status, "lastScaleTime", status.get("lastScaleTime"))
    v1_status["currentReplicas"] = status.get("currentReplicas", 0)
    v1_status["desiredReplicas"] = status.get("desiredReplicas", 0)
    for m in current:
        resource = m.get("resource") or {}
        utilization = (resource.get("current") or {}).get("averageUtilization")
        if m.get("type") == "Resource" and resource.get("name") == "cpu" and utilization is not None:
            v1_status["currentCPUUtilizationPercentage"] = utilization
            break
    return {"kind": "HorizontalPodAutoscaler", "apiVersion": "autoscaling/v1", "metadata": meta,
            "spec": v1_spec, "status": v1_status}


def _annotation(annotations: Mapping[str, Any], key: str) -> Any:
    text = annotations.get(key)
    if not isinstance(text, str):
        return None
    try:
        return _decode(text)
    except msgspec.DecodeError:
        return None  # as upstream: an annotation that does not decode is ignored


def hpa_from_v1(v1: dict[str, Any]) -> dict[str, Any]:
    """An autoscaling/v1 HorizontalPodAutoscaler as autoscaling/v2 (the annotations read back and
    dropped; no metric at all means the implicit 80% CPU utilization target)."""
    spec = v1.get("spec") or {}
    status = v1.get("status") or {}
    meta = _meta(v1)
    annotations = dict(meta.get("annotations") or {})
    metrics: list[dict[str, Any]] = []
    others = _annotation(annotations, METRIC_SPECS)
    if isinstance(others, list):
        metrics.extend(_metric_from_v1(m) for m in others if isinstance(m, Mapping))
    cpu = spec.get("targetCPUUtilizationPercentage")
    if cpu is not None:
        metrics.append({"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": cpu}}})
    if not metrics:
        metrics.append({"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": DEFAULT_CPU_UTILIZATION}}})
    v2_spec: dict[str, Any] = {"scaleTargetRef": copy.deepcopy(spec.get("scaleTargetRef") or {})}
    _put(v2_spec, "minReplicas", spec.get("minReplicas"))
    v2_spec["maxReplicas"] = spec.get("maxReplicas", 0)
    v2_spec["metrics"] = metrics
    behavior = _annotation(annotations, BEHAVIOR)
    if isinstance(behavior, Mapping):
        v2_spec["behavior"] = dict(behavior)
    v2_status: dict[str, Any] = {}
    _put(v2_status, "observedGeneration", status.get("observedGeneration"))
    _put(v2_status, "lastScaleTime", status.get("lastScaleTime"))
    v2_status["currentReplicas"] = status.get("currentReplicas", 0)
    v2_status["desiredReplicas"] = status.get("desiredReplicas", 0)
    current = _annotation(annotations, METRIC_STATUSES)
    if isinstance(current, list):
        _put(v2_status, "currentMetrics", [_status_from_v1(m) for m in current if isinstance(m, Mapping)])
    elif status.get("currentCPUUtilizationPercentage") is not None:
        v2_status["currentMetrics"] = [{"type": "Resource", "resource": {"name": "cpu", "current": {
            "averageUtilization": status["currentCPUUtilizationPercentage"]}}}]
    conditions = _annotation(annotations, CONDITIONS)
    if isinstance(conditions, list):
        _put(v2_status, "conditions", [dict(c) for c in conditions if isinstance(c, Mapping)])
    for key in _ROUND_TRIP:
        annotations.pop(key, None)
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    return {"kind": "HorizontalPodAutoscaler", "apiVersion": "autoscaling/v2", "metadata": meta,
            "spec": v2_spec, "status": v2_status}


# ------------------------------------------------------------------------------ resource.k8s.io/v1beta2

def _renamed(api_version: str) -> Converter:
    """A conversion between two versions of one shape: only `apiVersion` changes (resource.k8s.io's
    v1beta2 and v1 have the same fields, numbers and JSON names: upstream converts them field by
    field with generated functions only, `pkg/apis/resource/v1beta2`)."""
    def convert(obj: dict[str, Any]) -> dict[str, Any]:
        out = copy.deepcopy(obj)
        out["apiVersion"] = api_version
        return out

    return convert


_DRA_KINDS = ("DeviceClass", "DeviceTaintRule", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice")


# ------------------------------------------------------------------------------ resource.k8s.io/v1beta1
# Upstream's `pkg/apis/resource/v1beta1/conversion.go`: a request's `exactly` is flat in v1beta1 (its
# fields beside `name` and `firstAvailable`), a device's fields are in its `basic` wrapper, and a
# slice's `nodeName` and `allNodes` are a plain string and bool there (empty and false are unset).
# Nothing v1 can say is lost in v1beta1 but those unset values, so no annotation carries anything.

# The fields of v1's ExactDeviceRequest, flat in a v1beta1 DeviceRequest.
_EXACT = ("deviceClassName", "selectors", "allocationMode", "count", "adminAccess", "tolerations", "capacity",
          "derivedAttributes")
# A v1beta1 request says something of `exactly` when one of these is set (Go's zero is unset; a slice
# is set when present, even empty: `hasAnyMainRequestFieldsSet`).
_SET: dict[str, Callable[[Any], bool]] = {
    "deviceClassName": lambda v: bool(v), "selectors": lambda v: v is not None,
    "allocationMode": lambda v: bool(v), "count": lambda v: bool(v), "adminAccess": lambda v: v is not None,
    "tolerations": lambda v: v is not None, "capacity": lambda v: v is not None,
    "derivedAttributes": lambda v: v is not None}


def _request_to_v1beta1(request: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: copy.deepcopy(v) for k, v in request.items() if k != "exactly"}
    exactly = request.get("exactly")
    if isinstance(exactly, Mapping):
        out.update({k: copy.deepcopy(exactly[k]) for k in _EXACT if k in exactly})
    return out


def _request_from_v1beta1(request: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: copy.deepcopy(v) for k, v in request.items() if k not in _EXACT}
    if any(_SET[k](request.get(k)) for k in _EXACT):
        out["exactly"] = {k: copy.deepcopy(request[k]) for k in _EXACT if request.get(k) is not None}
    return out


def _claim_spec(spec: Any, convert: Converter) -> Any:
    if not isinstance(spec, Mapping) or not isinstance(spec.get("devices"), Mapping):
        return copy.deepcopy(spec)
    devices = dict(copy.deepcopy(spec["devices"]))
    if isinstance(devices.get("requests"), list):
        devices["requests"] = [convert(r) if isinstance(r, dict) else r for r in devices["requests"]]
    return {**copy.deepcopy(dict(spec)), "devices": devices}


def _claim(api_version: str, convert: Converter) -> Converter:
    def run(obj: dict[str, Any]) -> dict[str, Any]:
        out = copy.deepcopy(obj)
        out["apiVersion"] = api_version
        if "spec" in obj:
            out["spec"] = _claim_spec(obj["spec"], convert)
        return out

    return run


def _template(api_version: str, convert: Converter) -> Converter:
    def run(obj: dict[str, Any]) -> dict[str, Any]:
        out = copy.deepcopy(obj)
        out["apiVersion"] = api_version
        spec = obj.get("spec")
        if isinstance(spec, Mapping) and "spec" in spec:
            out["spec"] = {**copy.deepcopy(dict(spec)), "spec": _claim_spec(spec["spec"], convert)}
        return out

    return run


def _device_to_v1beta1(device: Mapping[str, Any]) -> dict[str, Any]:
    return {"name": device.get("name", ""),
            "basic": {k: copy.deepcopy(v) for k, v in device.items() if k != "name"}}


def _device_from_v1beta1(device: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"name": device.get("name", "")}
    basic = device.get("basic")
    if isinstance(basic, Mapping):
        out.update(copy.deepcopy(dict(basic)))
    return out


def _slice(api_version: str, convert: Converter) -> Converter:
    def run(obj: dict[str, Any]) -> dict[str, Any]:
        out = copy.deepcopy(obj)
        out["apiVersion"] = api_version
        spec = out.get("spec")
        if isinstance(spec, dict):
            if not spec.get("nodeName"):  # "" and unset are one (a string in v1beta1, a pointer in v1)
                spec.pop("nodeName", None)
            if not spec.get("allNodes"):  # false and unset are one
                spec.pop("allNodes", None)
            if isinstance(spec.get("devices"), list):
                spec["devices"] = [convert(d) if isinstance(d, dict) else d for d in spec["devices"]]
        return out

    return run


_V1BETA1 = "resource.k8s.io/v1beta1"
_V1 = "resource.k8s.io/v1"


# ------------------------------------------------------------------------------ the other groups
# The optional versions whose every field is the stored version's (the 1.37 schemas of both agree
# field by field; upstream converts them with generated functions only): only `apiVersion` changes.
_SAME_SHAPE = (
    ("admissionregistration.k8s.io", "v1beta1", "v1", "MutatingAdmissionPolicy"),
    ("admissionregistration.k8s.io", "v1beta1", "v1", "MutatingAdmissionPolicyBinding"),
    ("admissionregistration.k8s.io", "v1alpha1", "v1", "MutatingAdmissionPolicy"),
    ("admissionregistration.k8s.io", "v1alpha1", "v1", "MutatingAdmissionPolicyBinding"),
    ("certificates.k8s.io", "v1beta1", "v1", "ClusterTrustBundle"),
    ("scheduling.k8s.io", "v1alpha3", "v1beta1", "PodGroup"),
    ("scheduling.k8s.io", "v1alpha3", "v1beta1", "Workload"),
    ("storagemigration.k8s.io", "v1beta1", "v1", "StorageVersionMigration"),
)

# certificates.k8s.io/v1beta1's PodCertificateRequest has two fields v1 dropped (`pkixPublicKey` and
# `proofOfPossession`, deprecated for `stubPKCS10Request`): the stored v1 object cannot hold them.
_PCR_V1BETA1_ONLY = ("pkixPublicKey", "proofOfPossession")


def _pcr_from_v1beta1(obj: dict[str, Any]) -> dict[str, Any]:
    out = _renamed("certificates.k8s.io/v1")(obj)
    spec = out.get("spec")
    if isinstance(spec, dict):
        for key in _PCR_V1BETA1_ONLY:
            spec.pop(key, None)
    return out


# ------------------------------------------------------------------------------ the registry

_CONVERTERS: dict[tuple[str, str, str], tuple[Converter, Converter]] = {
    ("events.k8s.io", "v1", "Event"): (event_to_v1, event_from_v1),
    ("autoscaling", "v1", "HorizontalPodAutoscaler"): (hpa_to_v1, hpa_from_v1),
    **{("resource.k8s.io", "v1beta2", kind): (_renamed("resource.k8s.io/v1beta2"), _renamed("resource.k8s.io/v1"))
       for kind in _DRA_KINDS},
    ("resource.k8s.io", "v1beta1", "DeviceClass"): (_renamed(_V1BETA1), _renamed(_V1)),
    # v1alpha3's DeviceTaintRule has v1's shape (upstream's v1alpha3 has generated conversions only)
    ("resource.k8s.io", "v1alpha3", "DeviceTaintRule"): (_renamed("resource.k8s.io/v1alpha3"), _renamed(_V1)),
    ("resource.k8s.io", "v1beta1", "ResourceClaim"): (_claim(_V1BETA1, _request_to_v1beta1),
                                                      _claim(_V1, _request_from_v1beta1)),
    ("resource.k8s.io", "v1beta1", "ResourceClaimTemplate"): (_template(_V1BETA1, _request_to_v1beta1),
                                                              _template(_V1, _request_from_v1beta1)),
    ("resource.k8s.io", "v1beta1", "ResourceSlice"): (_slice(_V1BETA1, _device_to_v1beta1),
                                                      _slice(_V1, _device_from_v1beta1)),
    **{(group, version, kind): (_renamed(f"{group}/{version}"), _renamed(f"{group}/{stored}"))
       for group, version, stored, kind in _SAME_SHAPE},
    ("certificates.k8s.io", "v1beta1", "PodCertificateRequest"): (_renamed("certificates.k8s.io/v1beta1"),
                                                                  _pcr_from_v1beta1),
}


def _converters(kind: res.ResourceKind) -> tuple[Converter, Converter]:
    if kind.custom is not None:
        return _custom_converters(kind)
    found = _CONVERTERS.get((kind.group, kind.version, kind.kind))
    if found is None:
        raise KeyError(f"no conversion for {kind.api_version} {kind.kind}")
    return found


def to_served(kind: res.ResourceKind, stored: dict[str, Any]) -> dict[str, Any]:
    """A stored object (the storage kind's version) as `kind`'s version."""
    return _converters(kind)[0](stored)


def to_storage(kind: res.ResourceKind, served: dict[str, Any]) -> dict[str, Any]:
    """An object of `kind`'s version as the storage version."""
    return _converters(kind)[1](served)


def _custom_converters(kind: res.ResourceKind) -> tuple[Converter, Converter]:
    """A custom resource's versions with the `None` conversion strategy: only `apiVersion` changes."""
    served = kind.api_version
    stored = f"{kind.group}/{kind.custom.storage_version}"

    def to_served(obj: dict[str, Any]) -> dict[str, Any]:
        return {**obj, "apiVersion": served}

    def to_stored(obj: dict[str, Any]) -> dict[str, Any]:
        return {**obj, "apiVersion": stored}

    return to_served, to_stored


def served_object(kind: res.ResourceKind, raw: bytes) -> dict[str, Any]:
    """Stored JSON as the served version's object, with the fields Go writes for that type (the zero
    values of fields without `omitempty`), as decoding its protobuf message gives them."""
    from cp import protobuf

    if kind.custom is not None:
        return to_served(kind, dict(_decode(raw)))
    obj = to_served(kind, dict(_decode(raw)))
    return protobuf.decode(protobuf.encode(obj, api_version=kind.api_version, kind=kind.kind))


def served_json(kind: res.ResourceKind, raw: bytes) -> bytes:
    return _encode(served_object(kind, raw))


# ------------------------------------------------------------------------------ between any two versions
# The field manager keeps each manager's fields in the version it wrote with and compares them in that
# version (upstream's versionConverter for structured-merge-diff): objects go from one version to another
# through the stored one.

_VERSIONS: dict[tuple[str, str], dict[str, res.ResourceKind]] = {}


def versions_of(stored: res.ResourceKind) -> dict[str, res.ResourceKind]:
    """The built-in versions `stored`'s objects can be converted to, by apiVersion (itself included),
    served by default or only with `--runtime-config`. A custom resource: its own version only."""
    if stored.custom is not None:
        return {stored.api_version: stored}
    key = (stored.group, stored.plural)
    found = _VERSIONS.get(key)
    if found is None:
        found = {stored.api_version: stored}
        for k in (*res.SERVED, *res.OPTIONAL):
            if k.storage_of == key and (k.group, k.version, k.kind) in _CONVERTERS:
                found[k.api_version] = k
        _VERSIONS[key] = found
    return found


def convert(obj: dict[str, Any], *, stored: res.ResourceKind, source: res.ResourceKind,
            target: res.ResourceKind) -> dict[str, Any]:
    """An object of `source`'s version as `target`'s (both versions of `stored`), through the stored
    version. The fields Go writes at their zero value (`served_object`) are not added: the field
    manager compares objects as the apiserver's typed values hold them, where such a zero (a null
    `deprecatedFirstTimestamp`) is the zero object's too, never a change."""
    if source == target:
        return obj
    at_storage = obj if source == stored else to_storage(source, obj)
    if target == stored:
        return at_storage
    return to_served(target, at_storage)
