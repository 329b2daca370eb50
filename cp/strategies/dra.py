"""Strategies of resource.k8s.io kinds: device taint times, a deallocated claim's device statuses."""

from __future__ import annotations

from typing import Any

from cp import clock as clocks
from cp import defaulting
from cp.strategies.model import Obj, Strategy


def _taint_times_on_create(obj: Obj, now: float) -> None:
    defaulting.default_device_taints(obj, now_rfc3339=clocks.rfc3339(now))


def refresh_taint_times(new: Obj, old: Obj, now: float, _subresource: str = "") -> None:
    """Device taints get `timeAdded` when missing, and a fresh one when their effect changes
    (upstream resets it so eviction timing starts over)."""
    if new.get("kind") == "DeviceTaintRule":
        taint = (new.get("spec") or {}).get("taint")
        old_taint = (old.get("spec") or {}).get("taint") or {}
        if isinstance(taint, dict) and old_taint.get("timeAdded") and \
                taint.get("effect") == old_taint.get("effect") and not taint.get("timeAdded"):
            taint["timeAdded"] = old_taint["timeAdded"]
        elif isinstance(taint, dict) and taint.get("effect") != old_taint.get("effect"):
            taint.pop("timeAdded", None)
    defaulting.default_device_taints(new, now_rfc3339=clocks.rfc3339(now))


def _device_key(entry: dict[str, Any]) -> tuple[Any, Any, Any, Any]:
    return (entry.get("driver"), entry.get("pool"), entry.get("device"), entry.get("shareID") or None)


def still_allocated_status_devices(devices: list[Any], allocation: Any) -> list[dict[str, Any]]:
    """The `status.devices` entries whose device (and share, for a shared device) `allocation` still
    holds: what upstream's `dropDeallocatedStatusDevices` keeps."""
    results = ((allocation.get("devices") or {}).get("results") or []) if isinstance(allocation, dict) else []
    allocated = {_device_key(r) for r in results if isinstance(r, dict)}
    return [d for d in devices if isinstance(d, dict) and _device_key(d) in allocated]


def drop_deallocated_status_devices(claim: dict[str, Any]) -> None:
    """`status.devices` entries of devices that are not (or no longer) allocated are dropped, as the
    upstream claim strategy does when a claim is deallocated: the server removes the driver's
    entries, not the client deallocating."""
    status = claim.get("status")
    if not isinstance(status, dict) or not status.get("devices"):
        return
    kept = still_allocated_status_devices(list(status["devices"]), status.get("allocation"))
    if kept:
        status["devices"] = kept
    else:
        status.pop("devices")


def _claim_update(new: Obj, old: Obj, now: float, subresource: str) -> None:
    drop_deallocated_status_devices(new)
    refresh_taint_times(new, old, now)


def _pool_status_request_create(obj: Obj, _now: float) -> None:
    """A ResourcePoolStatusRequest starts without status (the controller's to write, once); its
    `defaultPartitionTypeAttribute` is dropped while DRAPartitionableDevicesType is off
    (`cp.strategies.disabled`)."""
    obj.pop("status", None)


_TAINTED = Strategy(prepare_for_create=_taint_times_on_create, prepare_for_update=refresh_taint_times)

STRATEGIES: dict[tuple[str, str], Strategy] = {
    ("resource.k8s.io", "ResourceClaim"): Strategy(prepare_for_create=_taint_times_on_create,
                                                   prepare_for_update=_claim_update),
    ("resource.k8s.io", "DeviceClass"): _TAINTED,
    ("resource.k8s.io", "ResourceClaimTemplate"): _TAINTED,
    ("resource.k8s.io", "ResourceSlice"): _TAINTED,
    ("resource.k8s.io", "DeviceTaintRule"): _TAINTED,
    ("resource.k8s.io", "ResourcePoolStatusRequest"): Strategy(prepare_for_create=_pool_status_request_create),
}
