"""DRAFractionalCapacityRange (KEP-5075): a consumable capacity's `validRange` with fractional min, max
or step is validated and allocated in milli-units with the gate on, in whole units (`Quantity.Value()`,
rounded up) with it off. The validation cases are upstream's `TestValidateDeviceCapacity` ones that
turn on the gate or use fractional quantities."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from controllers.scheduler.config import FEATURES
from cp import errors, features, validation
from cp.dra import allocator
from cp.dra.allocator import Features, allocator_features
from cp.dra.model import CapInfo
from cp.quantity import Quantity

ON = features.parse("DRAFractionalCapacityRange=true")
OFF = features.DEFAULT
CAP = "spec.devices[0].capacity[bandwidth]"
RANGE = f"{CAP}.requestPolicy.validRange"


def slice_with(value: str, policy: dict[str, Any], *, name: str = "s") -> dict[str, Any]:
    device = {"name": "nic-0", "allowMultipleAllocations": True,
              "capacity": {"bandwidth": {"value": value, "requestPolicy": policy}}}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": "nic.example.com", "pool": {"name": "node-1", "generation": 0, "resourceSliceCount": 1},
                     "nodeName": "node-1", "devices": [device]}}


def ranged(default: str, lo: str, hi: str | None = None, step: str | None = None) -> dict[str, Any]:
    rng = {"min": lo} | ({"max": hi} if hi is not None else {}) | ({"step": step} if step is not None else {})
    return {"default": default, "validRange": rng}


def causes(obj: dict[str, Any], *, gates: features.FeatureGates, old: dict[str, Any] | None = None) -> list[str]:
    try:
        if old is None:
            validation.validate_create(obj, group="resource.k8s.io", version="v1", kind="ResourceSlice",
                                       namespaced=False, features=gates)
        else:
            obj["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"] = "5"
            validation.validate_update(obj, old, group="resource.k8s.io", version="v1", kind="ResourceSlice",
                                       features=gates)
    except errors.Invalid as exc:
        return [c.text() for c in exc.causes]
    return []


@pytest.mark.parametrize(("gates", "value", "policy", "expected"), [
    # valid-range-fractional-step: 0.2 = min + 0 * 0.1, 1 = min + 8 * 0.1
    (ON, "1", ranged("200m", "200m", "1", "100m"), []),
    # invalid-range-fractional-step-not-aligned: in milli-units 0.25 is not on a step of 0.1 from 0.2
    (ON, "1", ranged("250m", "200m", "1", "100m"),
     [f'{RANGE}.step: Invalid value: "250m": value is not a multiple of a given step (100m) from (200m)']),
    # fractional-range-gate-disabled-valid / -misaligned: whole units round every value up to 1
    (OFF, "1", ranged("200m", "200m", "1", "100m"), []),
    (OFF, "1", ranged("250m", "200m", "1", "100m"), []),
    # fractional-range-overflow-min: 10P has no int64 milli value
    (ON, "100P", ranged("20P", "10P", step="100m"),
     [f'{RANGE}.default: Invalid value: "20P": value cannot be represented as a milli value',
      f'{RANGE}.min: Invalid value: "10P": value cannot be represented as a milli value']),
    # fractional-too-fine-precision: 10u is finer than a milli-unit
    (ON, "1", ranged("20u", "10u"),
     [f'{RANGE}.default: Invalid value: "20u": value cannot be represented as a milli value',
      f'{RANGE}.min: Invalid value: "10u": value cannot be represented as a milli value']),
    # whole ranges are checked in whole units either way
    (ON, "10Gi", ranged("2Gi", "1Gi", "10Gi", "2Gi"),
     [f'{RANGE}.step: Invalid value: "2Gi": value is not a multiple of a given step (2Gi) from (1Gi)',
      f'{RANGE}.step: Invalid value: "10Gi": value is not a multiple of a given step (2Gi) from (1Gi)']),
    (OFF, "100P", ranged("20P", "10P", step="100m"), []),
])
def test_valid_range(gates: features.FeatureGates, value: str, policy: dict[str, Any], expected: list[str]) -> None:
    assert causes(slice_with(value, policy), gates=gates) == expected


def test_valid_values_are_told_apart_by_whole_units_without_the_gate() -> None:
    policy = {"default": "100m", "validValues": ["100m", "200m", "1"]}
    assert causes(slice_with("10Gi", policy), gates=ON) == []  # valid-fractional-values
    assert causes(slice_with("10Gi", policy), gates=OFF) == [
        f"{CAP}.requestPolicy.validValues[1]: Duplicate value: 1",
        f"{CAP}.requestPolicy.validValues[2]: Duplicate value: 1"]
    same = {"default": "1Ki", "validValues": ["1Ki", "1024"]}  # invalid-options-duplicate-normalized
    for gates in (ON, OFF):
        assert causes(slice_with("10Gi", same), gates=gates) == [
            f"{CAP}.requestPolicy.validValues[1]: Duplicate value: 1024"]


def test_a_stored_range_keeps_validating_as_it_was_written() -> None:
    """fractional-range-stored-object-exemption: an update that keeps the range is not refused for
    values that do not fit milli-units, even with another default."""
    policy = ranged("10P", "10P", step="100m")
    old = slice_with("100P", policy)
    new = slice_with("100P", policy)
    new["spec"]["devices"][0]["attributes"] = {"model": {"string": "x"}}
    assert causes(new, gates=ON, old=old) == []
    changed = slice_with("200P", ranged("10P", "10P", step="200m"))
    assert causes(changed, gates=ON, old=old) == [
        f'{RANGE}.default: Invalid value: "10P": value cannot be represented as a milli value',
        f'{RANGE}.min: Invalid value: "10P": value cannot be represented as a milli value']


def test_the_gate_is_beta_and_off_in_a_default_cluster() -> None:
    spec = features.SPECS[features.DRA_FRACTIONAL_CAPACITY_RANGE]
    assert spec == features.Spec(default=False, stage=features.BETA)
    assert "DRAFractionalCapacityRange=true|false (BETA - default=false)" in features.known_features()
    assert features.parse("AllBeta=true").enabled(features.DRA_FRACTIONAL_CAPACITY_RANGE)
    assert allocator_features(gates=OFF).fractional_capacity_range is False
    assert allocator_features(gates=ON) == msgspec.structs.replace(FEATURES, fractional_capacity_range=True)
    assert Features().fractional_capacity_range  # everything on


# ---------------------------------------------------------------- the allocator's arithmetic
# upstream's `testCalculateConsumedCapacity` / `testViolatesPolicy` / `testUseMilli` cases


def cap(value: str, policy: dict[str, Any]) -> CapInfo:
    return CapInfo({"value": value, "requestPolicy": policy}, "test")


FRACTIONAL = cap("1", ranged("200m", "200m", "1", "100m"))


@pytest.mark.parametrize(("requested", "fractional", "consumed"), [
    ("250m", True, "300m"),   # rounded up to the next step of 0.1 from 0.2
    ("300m", True, "300m"),
    ("100m", True, "200m"),   # below min: min
    ("1", True, "1"),
    ("250m", False, "1"),     # whole units: 0.25 -> 1, min 0.2 -> 1, step 0.1 -> 1
])
def test_consumed_capacity(requested: str, fractional: bool, consumed: str) -> None:
    got = allocator._consumed_for(Quantity.parse(requested), FRACTIONAL, fractional=fractional)
    assert got.nanos == Quantity.parse(consumed).nanos


@pytest.mark.parametrize(("value", "fractional", "violates"), [
    ("300m", True, False),    # 0.3 = min + 1 * step
    ("250m", True, True),     # not on a step of 0.1 from 0.2
    ("250m", False, False),   # whole units cannot see the difference
    ("2", True, True),        # over max
])
def test_violates_policy(value: str, fractional: bool, violates: bool) -> None:
    assert allocator._violates_policy(Quantity.parse(value), FRACTIONAL, fractional=fractional) is violates


@pytest.mark.parametrize(("policy", "fractional", "milli"), [
    (ranged("200m", "200m", "1", "100m"), False, False),   # fractional disabled
    (ranged("200m", "200m", "1", "100m"), True, True),     # all fractional, fits in milli
    (ranged("1", "1", "3", "1"), True, False),             # whole: integer arithmetic
    (ranged("10P", "10P", step="500m"), True, False),      # min overflows milli: integer arithmetic
])
def test_use_milli(policy: dict[str, Any], fractional: bool, milli: bool) -> None:
    assert allocator._use_milli(cap("100P", policy), fractional=fractional) is milli
