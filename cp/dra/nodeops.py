"""Optional node operations (KEP-5945, DRAOptionalNodeOperations): which of a claim's drivers the
kubelet calls for NodePrepareResources and NodeUnprepareResources. A slice lists the operations its
devices do not need (`spec.skipNodeOperations`); the scheduler copies the list into each device's
allocation result; the kubelet skips an operation for a driver when every device of that driver in the
claim skips it. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

PREPARE = "NodePrepareResources"
UNPREPARE = "NodeUnprepareResources"
ALL = "*"


def results_of(claim: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The device results of a claim's allocation."""
    allocation = (claim.get("status") or {}).get("allocation") or {}
    results = (allocation.get("devices") or {}).get("results") or []
    return [r for r in results if isinstance(r, Mapping)]


def skipped(results: Iterable[Mapping[str, Any]], operation: str) -> frozenset[str]:
    """The drivers for which `operation` is skipped: each of their results lists it (or `*`)."""
    skip: dict[str, bool] = {}
    for r in results:
        driver = str(r.get("driver") or "")
        ops = r.get("skipNodeOperations") or ()
        skip[driver] = skip.get(driver, True) and (operation in ops or ALL in ops)
    return frozenset(d for d, s in skip.items() if s)
