"""Binding conditions of allocated devices (KEP-5007, `DRADeviceBindingConditions`, beta and on in
1.37, with `DRAResourceClaimDeviceStatus`): what the DynamicResources plugin checks in Filter (an
allocated claim whose binding failed or timed out is "not available", so PostFilter deallocates it)
and while PreBind waits.

A device result with `bindingConditions` is ready once each of them is a True condition in the
claim's `status.devices[]` entry for that device (matched by driver, pool and device; the shareID is
not compared, as upstream's `getAllocatedDeviceStatus`); a True `bindingFailureConditions` entry
fails the binding; the binding times out `bindingTimeout` after the allocation's
`allocationTimestamp`. Pure; no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from cp import clock as clocks
from cp.fieldpath import go_quote

__all__ = ["BINDING_FAILED", "BINDING_TIMEOUT", "BindingFailed", "allocation_has_binding_conditions",
           "claim_ready_for_binding", "claim_timed_out", "claim_timeout_at", "claims_have_binding_conditions"]

BINDING_FAILED = "device binding failed"  # ErrDeviceBindingFailed
BINDING_TIMEOUT = "device binding timeout"  # ErrDeviceBindingTimeout


class BindingFailed(Exception):
    """A binding failure condition of an allocated device is True (upstream's wording)."""


def _status(claim: Mapping[str, Any]) -> Mapping[str, Any]:
    status = claim.get("status")
    return status if isinstance(status, Mapping) else {}


def _results(allocation: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    if not isinstance(allocation, Mapping):
        return []
    devices = allocation.get("devices")
    if not isinstance(devices, Mapping):
        return []
    return [r for r in devices.get("results") or [] if isinstance(r, Mapping)]


def allocation_has_binding_conditions(allocation: Mapping[str, Any] | None) -> bool:
    return any(r.get("bindingConditions") for r in _results(allocation))


def claims_have_binding_conditions(claims: Iterable[Mapping[str, Any] | None]) -> bool:
    """`hasBindingConditions`: some allocated claim has a device with binding conditions."""
    return any(claim is not None and allocation_has_binding_conditions(_status(claim).get("allocation"))
               for claim in claims)


def _device_status(claim: Mapping[str, Any], result: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for entry in _status(claim).get("devices") or []:
        if isinstance(entry, Mapping) and entry.get("device") == result.get("device") and \
                entry.get("driver") == result.get("driver") and entry.get("pool") == result.get("pool"):
            return entry
    return None


def _condition(entry: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    for cond in entry.get("conditions") or []:
        if isinstance(cond, Mapping) and cond.get("type") == type_:
            return cond
    return None


def claim_ready_for_binding(claim: Mapping[str, Any]) -> bool:
    """`isClaimReadyForBinding`: every binding condition of every allocated device is True (also
    when there are none); False while some are not (or the claim is not allocated). Raises
    BindingFailed when a binding failure condition of a device with binding conditions is True."""
    allocation = _status(claim).get("allocation")
    if not isinstance(allocation, Mapping):
        return False
    name = str((claim.get("metadata") or {}).get("name") or "")
    for result in _results(allocation):
        conditions = result.get("bindingConditions") or []
        if not conditions:
            continue
        entry = _device_status(claim, result)
        if entry is None:
            return False
        for type_ in result.get("bindingFailureConditions") or []:
            failed = _condition(entry, str(type_))
            if failed is not None and failed.get("status") == "True":
                raise BindingFailed(f"{BINDING_FAILED}: claim={name}, reason={failed.get('reason') or ''}, "
                                    f"message={go_quote(str(failed.get('message') or ''))}")
        for type_ in conditions:
            cond = _condition(entry, str(type_))
            if cond is None or cond.get("status") != "True":
                return False
    return True


def claim_timeout_at(claim: Mapping[str, Any], *, timeout: float) -> float | None:
    """When the claim's binding times out: `timeout` seconds after its `allocationTimestamp`
    (None: not allocated, no timestamp, or no device with binding conditions)."""
    allocation = _status(claim).get("allocation")
    if not isinstance(allocation, Mapping) or not allocation.get("allocationTimestamp"):
        return None
    if not allocation_has_binding_conditions(allocation):
        return None
    try:
        return clocks.parse_time(str(allocation["allocationTimestamp"])) + timeout
    except ValueError:
        return None


def claim_timed_out(claim: Mapping[str, Any], *, now: float, timeout: float) -> bool:
    """`isClaimTimeout`: the claim has a device with binding conditions and its
    `allocationTimestamp` is more than `timeout` seconds before `now` (no timestamp: never)."""
    at = claim_timeout_at(claim, timeout=timeout)
    return at is not None and at < now
