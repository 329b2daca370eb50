"""What the explainer's modules share: the texts of rejection reasons and stops, the scheduler's settings
the diagnosis must agree with, the snapshot of objects it reads, and small text helpers. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgspec

from cp import objects
from cp.dra.allocator import (
    ALLOCATION_RESULTS_MAX_SIZE,
    allocator_features,
)
from cp.dra.constraints import (
    attribute_as_set,
)
from cp.dra.model import DeviceID
from cp.features import DEFAULT
from cp.quantity import BINARY_SI, Quantity

API_VERSION = "sim.cplane.dev/v1alpha1"


KIND = "PodSchedulingExplanation"


# The scheduler's settings (controllers/scheduler/config.py; tests/cp/scheduling/explain/test_recorder.py
# checks they stay equal).
FEATURES = allocator_features(gates=DEFAULT)


FILTER_TIMEOUT = 10.0


RESERVED_FOR_MAX = 256


SCHEDULER_NAME = "default-scheduler"


DRA_PLUGIN = "DynamicResources"


CANNOT_ALLOCATE = "cannot allocate all claims"


# Why a candidate device was rejected (the `reason` of a rejection group).
REASONS: dict[str, str] = {
    "in-use": "already allocated to another claim",
    "in-use-attempt": "picked for another request of this pod in the same attempt",
    "shared": "shared with other claims (consumable capacity) and this request needs it exclusively",
    "class-selector": "a selector of the DeviceClass is false",
    "request-selector": "a selector of the request is false",
    "device-node-selection": "the device is not available on this node (per-device node selection)",
    "binding-conditions": "the device has binding conditions and DRADeviceBindingConditions is off",
    "capacity-missing": "the device lacks a capacity the request asks for",
    "capacity-policy": "the capacity request violates the device's request policy",
    "capacity-exhausted": "not enough capacity left on the device",
    "partitionable-disabled": "the device consumes counters and DRAPartitionableDevices is off",
    "counters": "a shared counter of the pool is exhausted",
    "compatibility-groups-disabled": "the device declares compatibility groups and DRADeviceCompatibilityGroups "
                                     "is off",
    "compatibility-groups": "no compatibility group in common with the devices already on its counter set",
    "taint": "untolerated device taint",
    "constraint": "a claim constraint cannot be satisfied",
}


# Request-level stops.
STOPS: dict[str, str] = {
    "max-size": f"more than {ALLOCATION_RESULTS_MAX_SIZE} devices in one claim",
    "pruned": "fewer usable devices left than still needed",
    "no-devices": "no device matches (allocationMode All)",
}


# Kinds of device rejections that depend on what else was picked in the attempt.
DYNAMIC = frozenset({"in-use-attempt", "counters", "constraint", "capacity-exhausted", "shared",
                     "compatibility-groups"})


MAX_LISTED = 6  # devices / names listed per group before "…"


OTHER_CLAIMS = "other claims"  # holders of allocated devices whose claim is not known


class Snapshot(msgspec.Struct, kw_only=True):
    """The objects the diagnosis reads, all at one revision of the event log."""

    revision: int = 0
    pods: list[dict[str, Any]] = msgspec.field(default_factory=list)
    nodes: list[dict[str, Any]] = msgspec.field(default_factory=list)
    claims: list[dict[str, Any]] = msgspec.field(default_factory=list)
    slices: list[dict[str, Any]] = msgspec.field(default_factory=list)
    classes: list[dict[str, Any]] = msgspec.field(default_factory=list)
    rules: list[dict[str, Any]] = msgspec.field(default_factory=list)
    namespaces: list[dict[str, Any]] = msgspec.field(default_factory=list)


# Kinds a snapshot needs: (group, plural, Snapshot field).
SNAPSHOT_KINDS: tuple[tuple[str, str, str], ...] = (
    ("", "pods", "pods"), ("", "nodes", "nodes"), ("", "namespaces", "namespaces"),
    ("resource.k8s.io", "resourceclaims", "claims"), ("resource.k8s.io", "resourceslices", "slices"),
    ("resource.k8s.io", "deviceclasses", "classes"), ("resource.k8s.io", "devicetaintrules", "rules"),
)


def allocation(claim: Mapping[str, Any]) -> dict[str, Any] | None:
    alloc = objects.status_of(claim).get("allocation")
    return alloc if isinstance(alloc, dict) else None


def reserved_by(claim: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [r for r in objects.status_of(claim).get("reservedFor") or [] if isinstance(r, Mapping)]


def listing(items: Sequence[str], limit: int = MAX_LISTED) -> str:
    if len(items) <= limit:
        return ", ".join(items)
    return ", ".join(items[:limit]) + f", … ({len(items) - limit} more)"


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else (many or word + 's')}"


def short_device(did: DeviceID, node: str = "") -> str:
    """`pool/device` (the driver is in the group text), `device` when the pool is the node's own."""
    _driver, pool, device = did
    return device if pool == node else f"{pool}/{device}"


def taint_text(taint: Mapping[str, Any]) -> str:
    key, value, effect = taint.get("key") or "", taint.get("value") or "", taint.get("effect") or ""
    return f"{key}={value}:{effect}" if value else f"{key}:{effect}"


def value_text(attr: Mapping[str, Any] | None) -> str:
    if attr is None:
        return "(none)"
    s = attribute_as_set(attr)
    if s is None:
        return "(none)"
    values = sorted(str(v) for v in s[1])
    return values[0] if len(values) == 1 else "[" + ", ".join(values) + "]"


def quantity_text(nanos: int) -> str:
    """A nano-unit amount as a quantity (binary suffixes where exact: `20Gi`)."""
    return Quantity(nanos, BINARY_SI).canonical()


def milli_text(m: int) -> str:
    return f"{m // 1000}" if m % 1000 == 0 else f"{m}m"


def bytes_text(b: int) -> str:
    for unit, size in (("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
        if b >= size and b % size == 0:
            return f"{b // size}{unit}"
    for unit, size in (("Gi", 1 << 30), ("Mi", 1 << 20)):
        if b >= size:
            return f"{b / size:.1f}{unit}"
    return str(b)


def device_holders(claims: Iterable[Mapping[str, Any]]) -> tuple[dict[DeviceID, list[str]], dict[DeviceID, list[str]]]:
    """Device → claims allocated to it: (exclusive, shares)."""
    exclusive: dict[DeviceID, list[str]] = {}
    shared: dict[DeviceID, list[str]] = {}
    for claim in claims:
        alloc = allocation(claim)
        if not alloc:
            continue
        name = objects.display_key(claim)
        for r in (alloc.get("devices") or {}).get("results") or []:
            if r.get("adminAccess"):
                continue
            did = (str(r.get("driver") or ""), str(r.get("pool") or ""), str(r.get("device") or ""))
            target = shared if r.get("shareID") is not None else exclusive
            names = target.setdefault(did, [])
            if name not in names:
                names.append(name)
    return exclusive, shared
