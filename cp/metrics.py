"""The metrics model shared by the metrics APIs (`api/metrics_apis.py`, which serves it) and the
HPA controller (which reads it over HTTP): the API groups and versions, how Quantities are read
and written in samples, how an object kind is named in a custom-metrics path, and the usage model —
which pods and nodes report, and what each container uses (see `api/metrics_apis.py` for the
rules) — with the PodMetrics / NodeMetrics samples built from it. Pure: no I/O."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from cp import clock as clocks
from cp import errors, objects, quantity, selectors
from cp import resources as res

METRICS_GROUP, METRICS_VERSION = "metrics.k8s.io", "v1beta1"
CUSTOM_GROUP, CUSTOM_VERSION = "custom.metrics.k8s.io", "v1beta2"
EXTERNAL_GROUP, EXTERNAL_VERSION = "external.metrics.k8s.io", "v1beta1"
WINDOW_SECONDS = 15  # reported `window` of resource metrics
RESOURCES = ("cpu", "memory")

Obj = Mapping[str, Any]


def _d(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _name(obj: Obj) -> str:
    return str(objects.meta_of(obj).get("name") or "")


# ---------------------------------------------------------------------- quantities and names


def milli(q: Any) -> int:
    """Quantity -> milli-units, rounded up (Quantity.MilliValue)."""
    return math.ceil(quantity.parse(q) * 1000)


def cpu_quantity(m: int) -> str:
    return quantity.canonical(f"{m}m") if m else "0"


def memory_quantity(m: int) -> str:
    """Bytes (from milli-bytes), in the largest binary suffix that divides them (`64Mi`, `1500Ki`)."""
    b = m // 1000
    if b and b % 1024 == 0:
        return quantity.canonical(f"{b // 1024}Ki")
    return quantity.canonical(str(b)) if b else "0"


def value_quantity(q: Any) -> str:
    return quantity.canonical(q)


def guess_plural(kind: str) -> str:
    """The RESTMapper's guess for kinds this server does not serve (Service -> services)."""
    k = kind.lower()
    if k.endswith("s"):
        return k + "es"
    if k.endswith("y"):
        return k[:-1] + "ies"
    return k + "s"


def resource_for(api_version: str, kind: str) -> str:
    """The group-qualified resource the custom metrics API names an object kind by
    (`deployments.apps`, `services`), as the HPA's client builds its paths."""
    group = api_version.rpartition("/")[0] if "/" in api_version else ""
    known = res.by_kind(group, kind)
    plural = known.plural if known is not None else guess_plural(kind)
    return f"{plural}.{group}" if group else plural


def series_labels(obj: Obj) -> dict[str, str]:
    return {str(k): str(val) for k, val in _d(_d(obj.get("spec")).get("labels")).items()}


def external_metric_name(obj: Obj) -> str:
    return str(_d(obj.get("spec")).get("metricName") or _name(obj))


def selector_object(sel: selectors.LabelSelector) -> dict[str, Any] | None:
    """A parsed label selector as a metav1.LabelSelector (for `metric.selector` in responses)."""
    if sel.empty:
        return None
    match_labels: dict[str, str] = {}
    exprs: list[dict[str, Any]] = []
    names = {selectors.OP_IN: "In", selectors.OP_NOT_IN: "NotIn", selectors.OP_EXISTS: "Exists",
             selectors.OP_DOES_NOT_EXIST: "DoesNotExist"}
    for r in sel.requirements:
        if r.operator in (selectors.OP_EQUALS, selectors.OP_DOUBLE_EQUALS) or \
                (r.operator == selectors.OP_IN and len(r.values) == 1 and r.key not in match_labels):
            match_labels[r.key] = r.values[0]
        elif r.operator == selectors.OP_NOT_EQUALS:
            exprs.append({"key": r.key, "operator": "NotIn", "values": list(r.values)})
        elif r.operator in names:
            e: dict[str, Any] = {"key": r.key, "operator": names[r.operator]}
            if r.values:
                e["values"] = sorted(r.values)
            exprs.append(e)
    out: dict[str, Any] = {}
    if match_labels:
        out["matchLabels"] = match_labels
    if exprs:
        out["matchExpressions"] = exprs
    return out


# ---------------------------------------------------------------------- the usage model


def _ready_condition(obj: Obj) -> bool:
    for c in _d(obj.get("status")).get("conditions") or ():
        if isinstance(c, Mapping) and c.get("type") == "Ready":
            return c.get("status") == "True"
    return False


def node_reports(node: Obj) -> bool:
    """A node metrics-server would scrape: Ready."""
    return _ready_condition(node)


def pod_reports(pod: Obj, reporting_nodes: set[str]) -> bool:
    """A pod with running containers on a reporting node."""
    spec = _d(pod.get("spec"))
    return _d(pod.get("status")).get("phase") == "Running" and str(spec.get("nodeName") or "") in reporting_nodes


def running_containers(pod: Obj) -> list[Mapping[str, Any]]:
    spec = _d(pod.get("spec"))
    out = [c for c in spec.get("containers") or () if isinstance(c, Mapping)]
    out += [c for c in spec.get("initContainers") or ()
            if isinstance(c, Mapping) and c.get("restartPolicy") == "Always"]
    return out


def _request(container: Mapping[str, Any], resource: str) -> int:
    q = _d(_d(container.get("resources")).get("requests")).get(resource)
    try:
        return milli(q) if q is not None else 0
    except quantity.QuantityError:
        return 0


def load_for(pod: Obj, loads: Sequence[Obj]) -> Obj | None:
    """The PodLoad that selects `pod` (same namespace; the first by name)."""
    ns = str(objects.meta_of(pod).get("namespace") or "")
    labels = objects.labels_of(pod)
    for load in sorted(loads, key=_name):
        if str(objects.meta_of(load).get("namespace") or "") != ns:
            continue
        try:
            sel = selectors.from_label_selector_object(_d(load.get("spec")).get("selector"))
        except errors.BadRequest:
            continue
        if sel.matches(labels):
            return load
    return None


def _share(total: int, weights: list[int]) -> list[int]:
    """Split `total` in proportion to `weights` (evenly when they are all 0); the rounding
    remainder goes to the first share."""
    if not weights:
        return []
    if sum(weights) <= 0:
        weights = [1] * len(weights)
    whole = sum(weights)
    shares = [total * w // whole for w in weights]
    shares[0] += total - sum(shares)
    return shares


def container_usage(pod: Obj, load: Obj | None) -> list[tuple[str, dict[str, int]]]:
    """[(container name, {cpu: milli, memory: milli})] for a reporting pod."""
    containers = running_containers(pod)
    names = [str(c.get("name") or "") for c in containers]
    usage: dict[str, dict[str, int]] = {n: {} for n in names}
    spec = _d(load.get("spec")) if load is not None else {}
    overrides = {str(_d(o).get("name") or ""): _d(o) for o in spec.get("containers") or () if isinstance(o, Mapping)}
    for resource in RESOURCES:
        rest: list[int] = []  # indexes of containers the pod-level load (or requests) decides
        for i, name in enumerate(names):
            o = overrides.get(name)
            if o is not None and o.get(resource) is not None:
                usage[name][resource] = milli(o[resource])
            else:
                rest.append(i)
        if load is not None and spec.get(resource) is not None:
            shares = _share(milli(spec[resource]), [_request(containers[i], resource) for i in rest])
            for i, share in zip(rest, shares, strict=True):
                usage[names[i]][resource] = share
        else:
            for i in rest:
                usage[names[i]][resource] = _request(containers[i], resource)
    return [(n, usage[n]) for n in names]


def pod_custom_value(pod: Obj, metric: str, loads: Sequence[Obj]) -> str | None:
    load = load_for(pod, loads)
    if load is None:
        return None
    value = _d(_d(load.get("spec")).get("metrics")).get(metric)
    return None if value is None else str(value)


# ---------------------------------------------------------------------- reading the store


# ---------------------------------------------------------------------- samples


def pod_metrics(pod: Obj, load: Obj | None, now: float) -> dict[str, Any]:
    meta = objects.meta_of(pod)
    out_meta: dict[str, Any] = {"name": meta.get("name", ""), "namespace": meta.get("namespace", ""),
                                "creationTimestamp": clocks.rfc3339(now)}
    if meta.get("labels"):
        out_meta["labels"] = dict(meta["labels"])
    return {
        "metadata": out_meta,
        "timestamp": clocks.rfc3339(now),
        "window": f"{WINDOW_SECONDS}s",
        "containers": [{"name": name, "usage": {"cpu": cpu_quantity(u["cpu"]), "memory": memory_quantity(u["memory"])}}
                       for name, u in container_usage(pod, load)],
    }


def node_metrics(node: Obj, pods: Iterable[Obj], loads: Sequence[Obj], now: float) -> dict[str, Any]:
    cpu = mem = 0
    for pod in pods:
        for _, u in container_usage(pod, load_for(pod, loads)):
            cpu += u["cpu"]
            mem += u["memory"]
    meta = objects.meta_of(node)
    out_meta: dict[str, Any] = {"name": meta.get("name", ""), "creationTimestamp": clocks.rfc3339(now)}
    if meta.get("labels"):
        out_meta["labels"] = dict(meta["labels"])
    return {"metadata": out_meta, "timestamp": clocks.rfc3339(now), "window": f"{WINDOW_SECONDS}s",
            "usage": {"cpu": cpu_quantity(cpu), "memory": memory_quantity(mem)}}
