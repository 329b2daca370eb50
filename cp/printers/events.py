"""Printer of events.k8s.io/v1 Events: upstream serves them from the core events registry, so they
print as core Events; the row reads the new field names (`regarding`, `note`, `deprecated*`).
Pure; no I/O."""

from __future__ import annotations

from typing import Any

from cp.printers.common import E, Obj, Printer
from cp.printers.core import PRINTERS as CORE
from cp.printers.core import event_row

__all__ = ["PRINTERS"]


def _events_v1_row(o: Obj) -> list[Any]:
    return event_row({
        "metadata": o.get("metadata") or E,
        "involvedObject": o.get("regarding") or E,
        "message": o.get("note"),
        "type": o.get("type"),
        "reason": o.get("reason"),
        "source": o.get("deprecatedSource") or E,
        "firstTimestamp": o.get("deprecatedFirstTimestamp"),
        "lastTimestamp": o.get("deprecatedLastTimestamp"),
        "count": o.get("deprecatedCount"),
        "eventTime": o.get("eventTime"),
        "series": o.get("series"),
        "reportingComponent": o.get("reportingController"),
        "reportingInstance": o.get("reportingInstance"),
    })


PRINTERS: dict[str, Printer] = {"Event": Printer(CORE["Event"].columns, _events_v1_row)}
