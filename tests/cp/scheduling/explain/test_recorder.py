"""The recorder observes the allocator's own search without changing it."""

from __future__ import annotations

import random
from typing import Any

import pytest

from controllers import scheduler
from controllers.scheduler import plan as scheduler_plan
from cp.dra import AllocationError, Allocator, CelCache, NodeAllocationError
from cp.scheduling import explain
from tests.cp.dra import test_allocator as table


def _outcome(allocator: Allocator, case_node: dict[str, Any], claims: list[dict[str, Any]],
             recorder: explain.SearchRecorder | None) -> Any:
    try:
        return table._normalize(allocator.allocate(node=case_node, claims=claims, recorder=recorder))
    except (AllocationError, NodeAllocationError) as e:
        return (type(e).__name__, str(e))


def _check_coverage(rec: explain.SearchRecorder) -> None:
    """Every device the search looked at is either usable or rejected for a named reason."""
    for trace in rec.traces.values():
        explained = set(trace.usable)
        for g in trace.groups.values():
            explained.update(g.devices)
        assert set(trace.considered) <= explained, (trace.rd.result_name(), set(trace.considered) - explained)


@pytest.mark.parametrize("prune", [False, True], ids=["exhaustive", "pruned"])
@pytest.mark.parametrize("case", table.CASES, ids=[c.name for c in table.CASES])
def test_same_results_and_effort_with_a_recorder(case: table.Case, prune: bool) -> None:
    runs = []
    for with_recorder in (False, True):
        allocator = Allocator(slices=case.slices, classes=case.classes, allocated=table._state(case),
                              taint_rules=case.rules, features=case.features, cel_cache=CelCache(), prune=prune)
        rec = explain.SearchRecorder() if with_recorder else None
        out = _outcome(allocator, case.node, case.claims, rec)
        runs.append((out, allocator.stats.allocate_one_invocations))
        if rec is not None and rec.run is not None:
            _check_coverage(rec)
            view = explain.dra_view(allocator, rec, case.node, case.claims,
                                     "cannot-allocate" if out is None else "fits", "", None)
            assert isinstance(view["blocker"], str)
    assert runs[0] == runs[1]


def test_random_scenarios_agree_with_and_without_recorder() -> None:
    rng = random.Random(4321)
    kinds: set[str] = set()
    for _ in range(300):
        slices, claims, state = table._random_scenario(rng)
        runs = []
        for rec in (None, explain.SearchRecorder()):
            allocator = Allocator(slices=slices, classes=table.DEFAULT_CLASSES, allocated=state)
            runs.append((_outcome(allocator, table.node(), claims, rec), allocator.stats.allocate_one_invocations))
            if rec is not None and rec.run is not None:
                _check_coverage(rec)
                for t in rec.traces.values():
                    kinds.update(g.reason for g in t.groups.values())
        assert runs[0] == runs[1]
    assert {"in-use", "taint", "counters", "constraint", "request-selector"} <= kinds


def test_scheduler_settings_match() -> None:
    assert explain.FEATURES == scheduler.FEATURES
    assert explain.FILTER_TIMEOUT == scheduler.FILTER_TIMEOUT
    assert explain.RESERVED_FOR_MAX == scheduler.RESERVED_FOR_MAX
    assert explain.SCHEDULER_NAME == scheduler.SCHEDULER_NAME
    assert explain.DRA_PLUGIN == scheduler.DRA_PLUGIN
    assert scheduler_plan.CANNOT_ALLOCATE.reasons == [explain.CANNOT_ALLOCATE]


def test_no_recorder_by_default() -> None:
    allocator = Allocator(slices=[], classes={}, allocated=table._state(table.CASES[0]))
    assert allocator.recorder is None
