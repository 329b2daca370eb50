"""Printers of resource.k8s.io: DeviceClasses, ResourceClaims (their state), ResourceClaimTemplates,
ResourceSlices and DeviceTaintRules (upstream's `printResourceClaim`, `printResourceSlice`, ...).
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
}
