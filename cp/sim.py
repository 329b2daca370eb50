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


def validate(new: dict[str, Any], old: dict[str, Any] | None, *, kind: str) -> None:
    if kind == "Clock":
        _validate_clock(new, old)


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
