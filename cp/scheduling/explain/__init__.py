"""Why a pod does or does not fit, node by node and device by device (issue #12). Pure; no I/O.

The diagnosis replays what the scheduler does for the pod, with the scheduler's own pieces:

- node filters: `cp.scheduling.plugins` (NodeUnschedulable, NodeName, TaintToleration,
  NodeAffinity, NodeResourcesFit) — the first failing one is the upstream verdict, and every
  failing one is listed with its numbers;
- DRA: `Allocator.allocate()` — the allocator's own search, not a second implementation — with a
  `SearchRecorder` attached. The allocator tells the recorder about every candidate device it
  rejects (`Recorder` in `allocator.py`; with no recorder, which is what the scheduler runs, the
  search pays one `is not None` test per rejection outside its hot loop). The recorder groups the
  rejections per claim, request and reason, naming the object responsible (the claim holding a
  device, the DeviceTaintRule or ResourceSlice carrying a taint, the class or request selector
  that was false, the counter that ran out, the constraint and the values it saw...);
- pools: the allocator's own pool gathering (`Allocator.gather_pools`), plus the slices of the
  node whose pools it dropped as obsolete;
- "the smallest change": the allocator runs again with one thing relaxed at a time (tolerate a
  device taint, deallocate one claim, ask for fewer devices, drop a constraint or a selector,
  tolerate a node taint, uncordon...), cheapest first; the first that makes the pod fit on some
  node is reported, with up to two alternatives.

Entry points: `explain_pod(snapshot, namespace=…, name=…)` → a JSON-able dict (the
`PodSchedulingExplanation` served by `api/why.py`, rendered by `cp/scheduling/explain_text.py`), and
`short_reason(allocator, pod=…, claims=…, nodes=…)` → one line the scheduler can append to its
`FailedScheduling` message.

Modules: `common` (reasons, settings, the snapshot, text helpers), `recorder` (the SearchRecorder and the
per-node DRA verdict), `context` (claims, PreFilter, node filters and DRA per node, scores), `relax` (the
smallest change), `diagnosis` (`explain_pod`), `short` (`short_reason`).
"""

from cp.scheduling.explain.common import (
    API_VERSION,
    CANNOT_ALLOCATE,
    DRA_PLUGIN,
    FEATURES,
    FILTER_TIMEOUT,
    KIND,
    REASONS,
    RESERVED_FOR_MAX,
    SCHEDULER_NAME,
    SNAPSHOT_KINDS,
    Snapshot,
)
from cp.scheduling.explain.diagnosis import explain_pod, find_pod
from cp.scheduling.explain.recorder import SearchRecorder, dra_view
from cp.scheduling.explain.short import short_reason

__all__ = [
    "API_VERSION",
    "CANNOT_ALLOCATE",
    "DRA_PLUGIN",
    "FEATURES",
    "FILTER_TIMEOUT",
    "KIND",
    "REASONS",
    "RESERVED_FOR_MAX",
    "SCHEDULER_NAME",
    "SNAPSHOT_KINDS",
    "SearchRecorder",
    "Snapshot",
    "dra_view",
    "explain_pod",
    "find_pod",
    "short_reason",
]
