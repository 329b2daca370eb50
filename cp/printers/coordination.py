"""Printer of coordination.k8s.io Leases (upstream's `printLease`). Pure; no I/O."""

from __future__ import annotations

from typing import Any

from cp.printers.common import AGE_COL, NAME_COL, E, Obj, Printer, col, since

__all__ = ["PRINTERS"]


def _lease_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or E
    return [meta.get("name", ""), (o.get("spec") or E).get("holderIdentity") or "",
            since(meta.get("creationTimestamp"))]


PRINTERS: dict[str, Printer] = {
    "Lease": Printer([
        NAME_COL,
        col("Holder", "string", "Identity of the current holder of the lease."),
        AGE_COL,
    ], _lease_row),
}
