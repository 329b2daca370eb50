"""The sandbox's own kinds (`sim.cplane.dev/v1alpha1`): validation rules. Pure.

Clock (cluster-scoped singleton `cluster`): `spec.mode` Virtual, `spec.time` RFC 3339 (micro)
time. The virtual clock moves only forward; each move is an event, so replays reproduce it.
"""

from __future__ import annotations

from typing import Any

from cp import clock, errors
from cp import resources as res

CLOCK_NAME = "cluster"


def _invalid(kind: str, name: str, causes: list[errors.Cause]) -> errors.Invalid:
    return errors.Invalid(kind=kind, group=res.SIM_GROUP, name=name, causes=causes)


HEALTH_VALUES = ("Healthy", "Unhealthy", "Unknown")


def validate(new: dict[str, Any], old: dict[str, Any] | None, *, kind: str) -> None:
    if kind == "Clock":
        _validate_clock(new, old)
    elif kind == "DeviceHealth":
        causes = device_health_causes(new)
        if causes:
            raise _invalid("DeviceHealth", str((new.get("metadata") or {}).get("name", "")), causes)


def device_health_causes(obj: dict[str, Any]) -> list[errors.Cause]:
    """DeviceHealth (what a DRA driver's health stream reports): spec.driver/pool/device required,
    spec.health one of Healthy|Unhealthy|Unknown, optional message, lastUpdated, timeoutSeconds."""
    causes: list[errors.Cause] = []
    given = obj.get("spec")
    spec: dict[str, Any] = given if isinstance(given, dict) else {}
    for field in ("driver", "pool", "device"):
        if not isinstance(spec.get(field), str) or not spec.get(field):
            causes.append(errors.Cause("Required", f"spec.{field}", ""))
    health = spec.get("health")
    if health not in HEALTH_VALUES:
        causes.append(errors.Cause("NotSupported", "spec.health",
                                   'supported values: "Healthy", "Unhealthy", "Unknown"', health))
    when = spec.get("lastUpdated")
    if when is not None:
        try:
            clock.parse_time(str(when))
        except ValueError:
            causes.append(errors.Cause("Invalid", "spec.lastUpdated", "must be an RFC 3339 time", when))
    timeout = spec.get("timeoutSeconds")
    if timeout is not None and (not isinstance(timeout, int) or isinstance(timeout, bool) or timeout <= 0):
        causes.append(errors.Cause("Invalid", "spec.timeoutSeconds", "must be a positive integer", timeout))
    message = spec.get("message")
    if message is not None and not isinstance(message, str):
        causes.append(errors.Cause("Invalid", "spec.message", "must be a string", message))
    return causes


def _validate_clock(new: dict[str, Any], old: dict[str, Any] | None) -> None:
    name = str((new.get("metadata") or {}).get("name", ""))
    causes: list[errors.Cause] = []
    if name != CLOCK_NAME:
        causes.append(errors.Cause("Invalid", "metadata.name", f'the clock is a singleton named "{CLOCK_NAME}"',
                                   name))
    spec = new.get("spec") or {}
    if spec.get("mode", "Virtual") != "Virtual":
        causes.append(errors.Cause("NotSupported", "spec.mode", 'supported values: "Virtual"', spec.get("mode")))
    when = spec.get("time")
    parsed: float | None = None
    if not isinstance(when, str):
        causes.append(errors.Cause("Required", "spec.time", "an RFC 3339 time"))
    else:
        try:
            parsed = clock.parse_time(when)
        except ValueError:
            causes.append(errors.Cause("Invalid", "spec.time", "must be an RFC 3339 time", when))
    if old is not None and parsed is not None:
        before = (old.get("spec") or {}).get("time")
        if isinstance(before, str) and parsed < clock.parse_time(before):
            causes.append(errors.Cause("Invalid", "spec.time",
                                       f"the clock only moves forward (now {before})", when))
    if causes:
        raise _invalid("Clock", name, causes)


def clock_time(obj: dict[str, Any]) -> float:
    return clock.parse_time(str((obj.get("spec") or {})["time"]))
