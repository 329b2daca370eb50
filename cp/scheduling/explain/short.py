"""The scheduler's short form: one line appended to its `FailedScheduling` message. Pure."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from cp import objects
from cp.dra.allocator import (
    AllocationError,
    AllocationTimeout,
    Allocator,
    NodeAllocationError,
)
from cp.scheduling.explain.common import (
    device_holders,
    listing,
)
from cp.scheduling.explain.recorder import (
    SearchRecorder,
    dra_view,
)


def short_reason(allocator: Allocator, *, pod: Mapping[str, Any], claims: Sequence[Mapping[str, Any]],
                 nodes: Sequence[Mapping[str, Any]], all_claims: Iterable[Mapping[str, Any]] | None = None,
                 max_nodes: int = 8, budget: float = 0.05, limit: int = 600) -> str:
    """One line for the `FailedScheduling` event and `PodScheduled` message, appended after the
    upstream sentence: why each of (up to `max_nodes`, by name) the nodes the DynamicResources
    filter rejected cannot allocate `claims`, nodes with the same blocker grouped. `all_claims`
    (optional) names the claims holding devices. Runs the allocator again with a recorder, so it
    costs one allocation per node listed — only on the failure path — and at most `budget` seconds
    of search in all (nodes left when it is spent are "not analysed"). The text has no timings,
    so the same state gives the same text."""
    if not claims or not nodes:
        return ""
    holders, shares = device_holders(all_claims) if all_claims is not None else ({}, {})
    ordered = sorted(nodes, key=lambda n: str(objects.meta_of(n).get("name") or ""))
    by_text: dict[str, list[str]] = {}
    deadline = time.monotonic() + budget
    analysed = 0
    for node in ordered[:max_nodes]:
        if analysed and time.monotonic() > deadline:
            break
        analysed += 1
        name = str(objects.meta_of(node).get("name") or "")
        rec = SearchRecorder(holders=holders, share_holders=shares)
        try:
            result = allocator.allocate(node=node, claims=claims, deadline=deadline, recorder=rec)
            view = dra_view(allocator, rec, node, claims, "fits" if result is not None else "cannot-allocate",
                             "", result)
            text = view["blocker"] if result is None else "fits now"
        except AllocationTimeout:
            text = "the search takes longer than the explanation's budget"
        except NodeAllocationError as e:
            text = str(e)
        except AllocationError as e:
            text = str(e)
        by_text.setdefault(text, []).append(name)
    parts = []
    for text, names in sorted(by_text.items(), key=lambda kv: (-len(kv[1]), kv[1][0])):
        parts.append(f"{listing(names, 3)}: {text}")
    more = len(ordered) - analysed
    msg = "cplane why: " + "; ".join(parts) + (f"; {more} more nodes not analysed" if more > 0 else "")
    if len(msg) > limit:
        msg = msg[:limit - 4] + " ..."
    return msg + "."
