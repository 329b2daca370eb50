"""Printers of autoscaling: HorizontalPodAutoscalers (upstream's `printHorizontalPodAutoscaler` and
`formatHPAMetrics`), for the v2 shape and v1's single CPU target, and the Scale subresource
(`printScale`). Pure; no I/O."""

from __future__ import annotations

from typing import Any

from cp.printers.common import AGE_COL, NAME_COL, E, Obj, Printer, col, since

__all__ = ["PRINTERS"]


def _quantity(q: Any) -> str:
    # Quantities are printed as stored; a missing pointer prints like Go's nil *Quantity.
    return "<nil>" if q is None else str(q)


def _hpa_metric(spec: Obj, status: Obj | None) -> str:
    mtype = spec.get("type")
    if mtype == "External":
        src = spec.get("external") or E
        cur_src = (status or E).get("external")
        target = src.get("target") or E
        if target.get("averageValue") is not None:
            cur = "<unknown>"
            if cur_src is not None and (cur_src.get("current") or E).get("averageValue") is not None:
                cur = _quantity(cur_src["current"]["averageValue"])
            return f"{cur}/{_quantity(target['averageValue'])} (avg)"
        cur = "<unknown>" if cur_src is None else _quantity((cur_src.get("current") or E).get("value"))
        return f"{cur}/{_quantity(target.get('value'))}"
    if mtype == "Pods":
        src = spec.get("pods") or E
        cur_src = (status or E).get("pods")
        cur = "<unknown>" if cur_src is None else _quantity(
            (cur_src.get("current") or E).get("averageValue"))
        return f"{cur}/{_quantity((src.get('target') or E).get('averageValue'))}"
    if mtype == "Object":
        src = spec.get("object") or E
        cur_src = (status or E).get("object")
        target = src.get("target") or E
        if target.get("averageValue") is not None:
            cur = "<unknown>"
            if cur_src is not None and (cur_src.get("current") or E).get("averageValue") is not None:
                cur = _quantity(cur_src["current"]["averageValue"])
            return f"{cur}/{_quantity(target['averageValue'])} (avg)"
        cur = "<unknown>" if cur_src is None else _quantity((cur_src.get("current") or E).get("value"))
        return f"{cur}/{_quantity(target.get('value'))}"
    if mtype in ("Resource", "ContainerResource"):
        field = "resource" if mtype == "Resource" else "containerResource"
        src = spec.get(field) or E
        cur_src = (status or E).get(field)
        target = src.get("target") or E
        name = src.get("name") or ""
        if target.get("averageValue") is not None:
            cur = "<unknown>" if cur_src is None else _quantity(
                (cur_src.get("current") or E).get("averageValue"))
            return f"{name}: {cur}/{_quantity(target['averageValue'])}"
        cur = "<unknown>"
        if cur_src is not None:
            util = (cur_src.get("current") or E).get("averageUtilization")
            if util is not None:
                cur = f"{util}%"
        want = target.get("averageUtilization")
        return f"{name}: {cur}/{'<auto>' if want is None else f'{want}%'}"
    return "<unknown type>"


def _hpa_targets(specs: Any, statuses: Any) -> str:
    if not specs:
        return "<none>"
    statuses = statuses or ()
    shown = [_hpa_metric(s, statuses[i] if i < len(statuses) else None) for i, s in enumerate(specs[:2])]
    text = ", ".join(shown)
    if len(specs) > 2:
        return f"{text} + {len(specs) - 2} more..."
    return text


def _v1_metrics(spec: Obj, status: Obj) -> tuple[Any, Any]:
    """autoscaling/v1's CPU target as the v2 Resource metric it converts to (none without a target)."""
    target = spec.get("targetCPUUtilizationPercentage")
    if target is None:
        return None, None
    specs = [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                           "averageUtilization": target}}}]
    current = status.get("currentCPUUtilizationPercentage")
    statuses = None if current is None else [
        {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": current}}}]
    return specs, statuses


def _hpa_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or E
    spec = o.get("spec") or E
    status = o.get("status") or E
    ref = spec.get("scaleTargetRef") or E
    min_replicas = spec.get("minReplicas")
    if "metrics" not in spec and "targetCPUUtilizationPercentage" in spec:
        specs, statuses = _v1_metrics(spec, status)
    else:
        specs, statuses = spec.get("metrics"), status.get("currentMetrics")
    return [
        meta.get("name", ""),
        f"{ref.get('kind') or ''}/{ref.get('name') or ''}",
        _hpa_targets(specs, statuses),
        "<unset>" if min_replicas is None else str(min_replicas),
        spec.get("maxReplicas") or 0,
        status.get("currentReplicas") or 0,
        since(meta.get("creationTimestamp")),
    ]


def _scale_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or E
    return [meta.get("name", ""), (o.get("spec") or E).get("replicas") or 0,
            (o.get("status") or E).get("replicas") or 0, since(meta.get("creationTimestamp"))]


PRINTERS: dict[str, Printer] = {
    "HorizontalPodAutoscaler": Printer([
        NAME_COL,
        col("Reference", "string", "Scale target, as Kind/name."),
        col("Targets", "string", "Current and target values of the metrics."),
        col("MinPods", "string", "Lower bound for the number of replicas."),
        col("MaxPods", "string", "Upper bound for the number of replicas."),
        col("Replicas", "string", "Current number of replicas."),
        AGE_COL,
    ], _hpa_row),
    # The scale subresource (`kubectl get deployment x --subresource=scale`); upstream's Name column has
    # no "name" format.
    "Scale": Printer([
        col("Name", "string", "Name of the scaled object."),
        col("Desired", "integer", "Desired number of replicas."),
        col("Available", "integer", "Observed number of replicas."),
        AGE_COL,
    ], _scale_row),
}
