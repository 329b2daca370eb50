"""Printers of resource.k8s.io: DeviceClasses, ResourceClaims (their state), ResourceClaimTemplates,
ResourceSlices, DeviceTaintRules and v1alpha3 ResourcePoolStatusRequests (upstream's `printResourceClaim`, `printResourceSlice`, ...).
Pure; no I/O."""

from __future__ import annotations

from typing import Any

from cp.printers.common import AGE_COL, NAME_COL, E, Obj, Printer, col, name_age, since

__all__ = ["PRINTERS"]


def _claim_state(o: Obj) -> str:
    deleted = bool((o.get("metadata") or E).get("deletionTimestamp"))
    status = o.get("status") or E
    states = ["deleted"] if deleted else []
    if status.get("allocation") is None:
        if not deleted:
            states.append("pending")
    else:
        states.append("allocated")
        if status.get("reservedFor"):
            states.append("reserved")
    return ",".join(states)


def _claim_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or E
    return [meta.get("name", ""), _claim_state(o), since(meta.get("creationTimestamp"))]


def _slice_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or E
    spec = o.get("spec") or E
    return [meta.get("name", ""), spec.get("nodeName") or "", spec.get("driver") or "",
            (spec.get("pool") or E).get("name") or "", since(meta.get("creationTimestamp"))]

def _pool_status_row(o: Obj) -> list[Any]:
    """KEP-5677's columns: cluster-wide sums over the reported pools, the pools with a validation
    error, `poolCount`, the request's state and how long ago it completed."""
    meta = o.get("metadata") or E
    status = o.get("status")
    pools = [p for p in ((status or E).get("pools") or ()) if isinstance(p, dict)]

    def total(field: str) -> int:
        return sum(p.get(field) or 0 for p in pools if isinstance(p.get(field), int))

    count = (status or E).get("poolCount")
    state, done = "Pending", None
    for cond in (status or E).get("conditions") or ():
        if isinstance(cond, dict) and cond.get("status") == "True" and cond.get("type") in ("Complete", "Failed"):
            state, done = str(cond["type"]), cond.get("lastTransitionTime")
            if state == "Complete" and isinstance(count, int) and len(pools) < count:
                state = f"Complete ({len(pools)}/{count} pools)"
            break
    return [meta.get("name", ""), (o.get("spec") or E).get("driver") or "", total("totalDevices"),
            total("availableDevices"), total("allocatedDevices"), total("unavailableDevices"),
            sum(1 for p in pools if p.get("validationError")), count if isinstance(count, int) else 0, state,
            since(done) if done else "<none>"]


PRINTERS: dict[str, Printer] = {
    "DeviceClass": Printer([NAME_COL, AGE_COL], name_age),
    "ResourceClaim": Printer([
        NAME_COL,
        col("State", "string", "Summary of the claim's state (pending, allocated, reserved, deleted)."),
        AGE_COL,
    ], _claim_row),
    "ResourceClaimTemplate": Printer([NAME_COL, AGE_COL], name_age),
    "ResourceSlice": Printer([
        NAME_COL,
        col("Node", "string", "Node that provides the devices, if node-local."),
        col("Driver", "string", "DRA driver that publishes the slice."),
        col("Pool", "string", "Name of the pool the slice belongs to."),
        AGE_COL,
    ], _slice_row),
    # Upstream prints these with a handler newer than the printers this follows; until its columns are
    # checked, Name and Age.
    "DeviceTaintRule": Printer([NAME_COL, AGE_COL], name_age),
    # v1alpha3 (DRAResourcePoolStatus): the columns of KEP-5677's kubectl section.
    "ResourcePoolStatusRequest": Printer([
        NAME_COL,
        col("Driver", "string", "The DRA driver whose pools are reported."),
        col("Total", "integer", "Devices in the reported pools."),
        col("Available", "integer", "Devices available for allocation in the reported pools."),
        col("Allocated", "integer", "Devices allocated to claims in the reported pools."),
        col("Unavailable", "integer", "Devices tainted NoSchedule or NoExecute in the reported pools."),
        col("Errors", "integer", "Reported pools with a validation error."),
        col("Pools", "integer", "Pools that matched the request (status.poolCount)."),
        col("Status", "string", "Pending, Complete (with the reported and matching pools when truncated) "
                                "or Failed."),
        col("Completed", "string", "Time since the request was completed or failed."),
    ], _pool_status_row),
}
