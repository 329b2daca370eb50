"""What one scheduling cycle decides — the outcomes (`Unschedulable`, `Error`, `Gate`, or a `Plan`
for the binding cycle) — and the exceptions that end a cycle early, plus the scheduler's counters."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import msgspec

from controllers.scheduler.config import DRA_PLUGIN, SCHEDULER_NAME, TERMINAL
from cp.objects import meta_of, spec_of, status_of
from cp.scheduling import plugins

CANNOT_ALLOCATE = plugins.Status(plugins.UNRESOLVABLE, ["cannot allocate all claims"], DRA_PLUGIN)


class Gated(Exception):
    """PreEnqueue rejected the pod: it waits for an event, without a status update."""


class PreFilterReject(Exception):
    def __init__(self, status: plugins.Status) -> None:
        super().__init__(status.message())
        self.status = status


class SchedError(Exception):
    """An error status: the pod goes to the backoff queue with reason SchedulerError."""


class BindingError(Exception):
    """PreBind or Bind failed; the message is what upstream reports."""


class Unschedulable(msgspec.Struct, kw_only=True):
    message: str
    # the plugins that rejected the pod (`Diagnosis.UnschedulablePlugins`): only events one of
    # them registered move it out of the unschedulable pool; empty: any event does
    plugins: frozenset[str] = frozenset()
    nominate: str | None = None  # status.nominatedNodeName to set ("": clear; None: leave as is)
    preemption: Any = None  # the preemption candidate (node and victims) to prepare


class Error(msgspec.Struct, kw_only=True):
    message: str


class Gate(msgspec.Struct, kw_only=True):
    reason: str


class ClaimPlan(msgspec.Struct, kw_only=True):
    """One claim of the pod in its binding cycle."""

    claim: dict[str, Any] | None  # the cached claim (None: the extended-resource claim to create)
    allocation: dict[str, Any] | None  # to write (None: already allocated, only reserve)
    key: str  # assumption key: the claim uid, or `extended:<pod uid>` before creation
    extended: bool = False
    reserve: bool = True  # False: already reserved for this pod
    consumer: dict[str, str] | None = None  # the reservedFor entry to add, if not the pod (its PodGroup)


class Plan(msgspec.Struct, kw_only=True):
    node: str
    claims: list[ClaimPlan]
    extended_claim: dict[str, Any] | None = None  # to create
    mappings: list[dict[str, str]] = msgspec.field(default_factory=list)
    # VolumeBinding's PreBind: (PersistentVolume, PersistentVolumeClaim) to pre-bind, and claims to
    # provision on the node
    volume_bindings: list[tuple[dict[str, Any], dict[str, Any]]] = msgspec.field(default_factory=list)
    provision_claims: list[dict[str, Any]] = msgspec.field(default_factory=list)
    # DRANodeAllocatableResources: `status.nodeAllocatableResourceClaimStatuses` to write in PreBind
    node_allocatable: list[dict[str, Any]] | None = None
    node_allocatable_written: bool = False  # (Unreserve clears it then)


Outcome = Unschedulable | Error | Gate | Plan


class Stats:
    """Counters for benchmarks and debugging."""

    def __init__(self) -> None:
        self.attempts = 0
        self.scheduled = 0
        self.unschedulable = 0
        self.errors = 0
        self.binding_failures = 0
        self.nodes_filtered = 0
        self.allocate_calls = 0
        self.dra_cache_hits = 0
        self.nodes_skipped = 0  # passed over as known not to fit the pod's claims (counted in nodes_filtered)
        self.nodes_taken = 0  # taken in runs as known to fit (counted in nodes_filtered)
        self.threaded_allocations = 0
        self.cycle_seconds = 0.0


# ---------------------------------------------------------------------- pods and claims


DEFAULT_NAMES: frozenset[str] = frozenset({SCHEDULER_NAME})


def is_responsible(pod: Mapping[str, Any], names: Collection[str] = DEFAULT_NAMES) -> bool:
    """The pod names one of our profiles (`spec.schedulerName`, default `default-scheduler`)."""
    return (spec_of(pod).get("schedulerName") or SCHEDULER_NAME) in names


def is_pending(pod: Mapping[str, Any], names: Collection[str] = DEFAULT_NAMES) -> bool:
    """Unassigned, ours, not deleting and not terminal."""
    return (not spec_of(pod).get("nodeName") and is_responsible(pod, names)
            and not meta_of(pod).get("deletionTimestamp") and status_of(pod).get("phase") not in TERMINAL)


def pod_updated(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """`isPodUpdated`: anything but resourceVersion, generation, managedFields, finalizers and the
    status (except resourceClaimStatuses) changed."""
    def strip(p: Mapping[str, Any]) -> tuple[Any, ...]:
        meta = {k: v for k, v in meta_of(p).items()
                if k not in ("resourceVersion", "generation", "managedFields", "finalizers")}
        return (meta, p.get("spec"), status_of(p).get("resourceClaimStatuses"))
    return strip(old) != strip(new)


def allocation_of(claim: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if claim is None:
        return None
    alloc = status_of(claim).get("allocation")
    return alloc if isinstance(alloc, dict) else None


def reserved_for(claim: Mapping[str, Any], pod_uid: str) -> bool:
    return any(isinstance(r, Mapping) and r.get("uid") == pod_uid for r in status_of(claim).get("reservedFor") or [])
