"""The allocator's features come from the feature gates (`allocator_features`): a gate turned off
changes allocation as upstream's allocator tests with that feature off."""

from __future__ import annotations

import msgspec
import pytest

from controllers.scheduler.config import FEATURES
from cp import features
from cp.dra.allocator import AllocationError, Features, NodeAllocationError, allocator_features
from tests.cp.dra.test_allocator import CASES, Case, _normalize, _run


def test_default_gates_give_a_default_schedulers_features() -> None:
    assert allocator_features(gates=features.DEFAULT) == FEATURES
    assert allocator_features(gates=features.parse("AllAlpha=true,AllBeta=true")) == Features()


@pytest.mark.parametrize(("gate_text", "expected"), [
    ("DRAPartitionableDevices=false", msgspec.structs.replace(FEATURES, partitionable_devices=False)),
    ("DRADeviceTaints=false", msgspec.structs.replace(FEATURES, device_taints=False)),
    ("DRAConsumableCapacity=false", msgspec.structs.replace(FEATURES, consumable_capacity=False)),
    ("DRADeviceBindingConditions=false", msgspec.structs.replace(FEATURES, device_binding_and_status=False)),
    ("DRAListTypeAttributes=true", msgspec.structs.replace(FEATURES, list_type_attributes=True)),
    ("DRAOptionalNodeOperations=true", msgspec.structs.replace(FEATURES, optional_node_operations=True)),
])
def test_each_gate_turns_off_its_feature(gate_text: str, expected: Features) -> None:
    assert allocator_features(gates=features.parse(gate_text)) == expected


# Upstream's allocator cases written with a feature off, run with the features `--feature-gates` gives.
GATE_OFF = {
    "partitionable-devices-disabled-device-consumes-counters": "DRAPartitionableDevices=false",
    "partitionable-devices-disabled-other-device-do-not-consume-counters": "DRAPartitionableDevices=false",
    "partitionable-devices-disabled-per-device-node-selection": "DRAPartitionableDevices=false",
    "tainted-disabled": "DRADeviceTaints=false",
    "binding-conditions-without-feature-gate": "DRADeviceBindingConditions=false",
    "consumable-capacity-disabled-feature": "DRAConsumableCapacity=false",
    "consumable-capacity-fractional-range-disabled": "DRAFractionalCapacityRange=false",
    "consumable-capacity-fractional-range-disabled-one-claim": "DRAFractionalCapacityRange=false",
}
BY_NAME = {case.name: case for case in CASES}


@pytest.mark.parametrize(("name", "gate_text"), list(GATE_OFF.items()), ids=list(GATE_OFF))
def test_upstream_gate_off_cases(name: str, gate_text: str) -> None:
    case: Case = BY_NAME[name]
    gated = msgspec.structs.replace(allocator_features(gates=features.parse(gate_text)),
                                    list_type_attributes=case.features.list_type_attributes)
    outcome, _ = _run(Case(**{**case.__dict__, "features": gated}), prune=True)
    if case.error is not None:
        assert isinstance(outcome, AllocationError) and case.error in str(outcome)
    elif case.node_error is not None:
        assert isinstance(outcome, NodeAllocationError) and case.node_error in str(outcome)
    else:
        assert not isinstance(outcome, Exception), outcome
        assert _normalize(outcome) == case.expect


@pytest.mark.parametrize("name", ["tainted-disabled", "binding-conditions-without-feature-gate"])
def test_the_same_claims_with_the_gate_at_its_default(name: str) -> None:
    case = BY_NAME[name]
    off, _ = _run(Case(**{**case.__dict__, "features": allocator_features(gates=features.parse(GATE_OFF[name]))}),
                  prune=True)
    on, _ = _run(Case(**{**case.__dict__, "features": allocator_features(gates=features.DEFAULT)}), prune=True)
    assert (off is None) != (on is None)  # one of them allocates, the other cannot


def test_fractional_capacity_range_gate() -> None:
    """Off by default (beta, on only with --min-compatibility-version 1.37): two claims asking for 0.25
    of a device's capacity of 1 in steps of 0.1 from 0.2 each take 1 (whole units, rounded up); with
    the gate on, each takes 0.3 and both fit."""
    case = BY_NAME["consumable-capacity-fractional-range-disabled"]
    off, _ = _run(Case(**{**case.__dict__, "features": allocator_features(gates=features.DEFAULT)}), prune=True)
    assert off is None
    gated = allocator_features(gates=features.parse("DRAFractionalCapacityRange=true"))
    on, _ = _run(Case(**{**case.__dict__, "features": gated}), prune=True)
    assert _normalize(on) == BY_NAME["consumable-capacity-fractional-range"].expect
