"""Which drivers of a claim the kubelet calls (DRAOptionalNodeOperations): an operation is skipped
for a driver only when every one of its results lists it (or `*`)."""

from __future__ import annotations

from cp.dra import nodeops


def result(driver: str, *skip: str) -> dict[str, object]:
    return {"driver": driver, "device": "d", "skipNodeOperations": list(skip)} if skip else {"driver": driver}


def test_every_device_of_a_driver_must_skip() -> None:
    results = [result("a", "*"), result("a", "NodePrepareResources", "NodeUnprepareResources"),
               result("b", "*"), result("b"), result("c", "NodeUnprepareResources")]
    assert nodeops.skipped(results, nodeops.PREPARE) == {"a"}
    assert nodeops.skipped(results, nodeops.UNPREPARE) == {"a", "c"}


def test_no_results_skip_nothing() -> None:
    assert nodeops.skipped([], nodeops.PREPARE) == frozenset()
    assert nodeops.results_of({"status": {}}) == []
