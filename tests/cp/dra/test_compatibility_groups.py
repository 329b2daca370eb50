"""Device compatibility groups (KEP-5963, DRADeviceCompatibilityGroups, alpha): devices drawing on
the same counter set are co-allocated only when all of them declare no group, or all declare groups
with one in common; a device declaring groups is not used while the gate is off. Co-allocation
counts the devices other claims hold and those picked in the same attempt."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from cp import features
from cp.dra.allocator import Features, allocator_features
from tests.cp.dra.builders import (
    CLASS_A,
    DRIVER_A,
    alloc,
    claim,
    consumes,
    counter_set,
    device,
    req,
    res,
    rslice,
    sel,
)
from tests.cp.dra.test_allocator import Case, _normalize, _run

ON = allocator_features(gates=features.parse("DRADeviceCompatibilityGroups=true"))
OFF = allocator_features(gates=features.DEFAULT)


def dev(name: str, *groups: str, mem: str = "1Gi") -> dict[str, Any]:
    consumption = consumes("gpu-0", memory=mem)
    if groups:
        consumption["compatibilityGroups"] = list(groups)
    return device(name, attrs={"mode": name.split("-")[0]}, consumesCounters=[consumption])


def pool(*devices: dict[str, Any]) -> list[dict[str, Any]]:
    return [rslice("slice-1", "node-1", "pool-1", DRIVER_A, *devices, count=2),
            rslice("slice-2", "node-1", "pool-1", DRIVER_A, count=2, counters=[counter_set("gpu-0", memory="8Gi")])]


def mode(value: str) -> dict[str, Any]:
    return sel(f'device.attributes["{DRIVER_A}"].mode == "{value}"')


DEVICES = pool(dev("mig-0", "mig"), dev("mig-1", "mig"), dev("vgpu-0", "vgpu"), dev("both-0", "mig", "vgpu"),
               dev("plain-0"), dev("plain-1"))


def run(claims: list[dict[str, Any]], *, feats: Features = ON, allocated: list[tuple[str, str, str]] | None = None,
        slices: list[dict[str, Any]] = DEVICES) -> Any:
    outcome, _ = _run(Case("compat", claims, slices, allocated=allocated or [], features=feats), prune=False)
    return _normalize(outcome) if outcome is not None and not isinstance(outcome, Exception) else outcome


def test_devices_with_a_common_group_are_co_allocated() -> None:
    out = run([claim("claim-0", req("a", CLASS_A, 1, mode("mig")), req("b", CLASS_A, 1, mode("both")))])
    assert out == [alloc(res("a", "mig-0"), res("b", "both-0"))]


def test_devices_without_a_common_group_are_not() -> None:
    assert run([claim("claim-0", req("a", CLASS_A, 1, mode("mig")), req("b", CLASS_A, 1, mode("vgpu")))]) is None
    # a device with no group goes only with devices with no group
    assert run([claim("claim-0", req("a", CLASS_A, 1, mode("mig")), req("b", CLASS_A, 1, mode("plain")))]) is None
    out = run([claim("claim-0", req("a", CLASS_A, 1, mode("plain")), req("b", CLASS_A, 1, mode("plain")))])
    assert out == [alloc(res("a", "plain-0"), res("b", "plain-1"))]


def test_the_intersection_of_all_co_allocated_devices_must_not_be_empty() -> None:
    # both-0 shares a group with mig-0 and with vgpu-0, but the three have none in common
    claims = [claim("claim-0", req("a", CLASS_A, 1, mode("mig")), req("b", CLASS_A, 1, mode("both")),
                    req("c", CLASS_A, 1, mode("vgpu")))]
    assert run(claims) is None


def test_devices_held_by_other_claims_count() -> None:
    held = [(DRIVER_A, "pool-1", "vgpu-0")]
    assert run([claim("claim-0", req("a", CLASS_A, 1, mode("mig")))], allocated=held) is None
    out = run([claim("claim-0", req("a", CLASS_A, 1, mode("both")))], allocated=held)
    assert out == [alloc(res("a", "both-0"))]


def test_the_search_backtracks_to_a_compatible_choice() -> None:
    # the first device matching `a` (mig-0) leaves no partner for `b`; vgpu-0 does
    claims = [claim("claim-0", req("a", CLASS_A, 1, sel(f'device.attributes["{DRIVER_A}"].mode in ["mig", "vgpu"]')),
                    req("b", CLASS_A, 1, mode("vgpu")))]
    slices = pool(dev("mig-0", "mig"), dev("vgpu-0", "vgpu"), dev("vgpu-1", "vgpu"))
    assert run(claims, slices=slices) == [alloc(res("a", "vgpu-0"), res("b", "vgpu-1"))]


def test_with_the_gate_off_devices_declaring_groups_are_not_used() -> None:
    assert run([claim("claim-0", req("a", CLASS_A, 1, mode("mig")))], feats=OFF) is None
    out = run([claim("claim-0", req("a", CLASS_A, 1, mode("plain")))], feats=OFF)
    assert out == [alloc(res("a", "plain-0"))]


def test_the_gate_needs_partitionable_devices() -> None:
    with pytest.raises(features.FeatureGateError, match="requires DRAPartitionableDevices"):
        features.parse("DRADeviceCompatibilityGroups=true,DRAPartitionableDevices=false")
    assert msgspec.structs.replace(ON, compatibility_groups=False) == OFF
