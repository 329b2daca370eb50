"""Printers of the sandbox's own kinds (sim.cplane.dev): the virtual clock and device health reports.
Its other kinds print like custom resources without printer columns: Name and Age. Pure; no I/O."""

from __future__ import annotations

from typing import Any

from cp.printers.common import AGE_COL, NAME_COL, E, Obj, Printer, col, since

__all__ = ["PRINTERS"]


def _clock_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or E
    return [meta.get("name", ""), (o.get("spec") or E).get("time", ""), since(meta.get("creationTimestamp"))]


def _health_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or E
    spec = o.get("spec") or E
    return [meta.get("name", ""), *(spec.get(k) or "" for k in ("driver", "pool", "device", "health", "message")),
            since(meta.get("creationTimestamp"))]


PRINTERS: dict[str, Printer] = {
    "Clock": Printer([NAME_COL, col("Time", "string", "The virtual time."), AGE_COL], _clock_row),
    "DeviceHealth": Printer([
        NAME_COL,
        col("Driver", "string", "DRA driver of the device."),
        col("Pool", "string", "Pool of the device."),
        col("Device", "string", "Device name within the pool."),
        col("Health", "string", "Healthy, Unhealthy or Unknown, as last reported."),
        col("Message", "string", "Why, as reported.", priority=1),
        AGE_COL,
    ], _health_row),
}
