"""Printers of what decides where pods run and when they may be evicted: PriorityClasses
(scheduling.k8s.io), RuntimeClasses (node.k8s.io) and PodDisruptionBudgets (policy). Pure; no I/O."""

from __future__ import annotations

from typing import Any

from cp.printers.common import AGE_COL, NAME_COL, E, Obj, Printer, col, since

__all__ = ["PRINTERS"]


def _priority_class_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or E
    return [meta.get("name", ""), o.get("value") or 0, bool(o.get("globalDefault")),
            since(meta.get("creationTimestamp")), o.get("preemptionPolicy") or ""]


def _runtime_class_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or E
    return [meta.get("name", ""), o.get("handler") or "", since(meta.get("creationTimestamp"))]


def _int_or_string(v: Any) -> str:
    return "N/A" if v is None else str(v)


def _pdb_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or E
    spec = o.get("spec") or E
    return [meta.get("name", ""), _int_or_string(spec.get("minAvailable")),
            _int_or_string(spec.get("maxUnavailable")), (o.get("status") or E).get("disruptionsAllowed") or 0,
            since(meta.get("creationTimestamp"))]


PRINTERS: dict[str, Printer] = {
    "PriorityClass": Printer([
        NAME_COL,
        col("Value", "integer", "Priority of the pods of the class."),
        col("Global-Default", "boolean", "Whether pods without a class get this one."),
        AGE_COL,
        col("PreemptionPolicy", "string", "Whether pods of the class may preempt others.", priority=1),
    ], _priority_class_row),
    "RuntimeClass": Printer([
        NAME_COL,
        col("Handler", "string", "The container runtime handler of the class."),
        AGE_COL,
    ], _runtime_class_row),
    "PodDisruptionBudget": Printer([
        NAME_COL,
        col("Min Available", "string", "Pods that must stay available."),
        col("Max Unavailable", "string", "Pods that may be unavailable."),
        col("Allowed Disruptions", "integer", "Pods that may be disrupted now."),
        AGE_COL,
    ], _pdb_row),
}
