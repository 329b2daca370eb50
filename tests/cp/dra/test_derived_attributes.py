"""Derived attributes (KEP-6080, DRADerivedAttributes, alpha): a request computes virtual attributes
of its candidate devices with CEL, and constraints match them as attributes — a GPU and a NIC of
two drivers on one NUMA node although their drivers name that attribute differently. A CEL runtime
error, or a value that is not a scalar or a list of scalars, fails the allocation; with the gate off
the request's derived attributes are ignored (the server drops them)."""

from __future__ import annotations

from typing import Any

import pytest

from cp import features
from cp.dra.allocator import AllocationError, allocator_features, derived_attribute
from tests.cp.dra.builders import (
    CLASS_A,
    CLASS_B,
    DRIVER_A,
    DRIVER_B,
    alloc,
    claim,
    device,
    distinct,
    match,
    req,
    res,
    rslice,
)
from tests.cp.dra.test_allocator import Case, _normalize, _run

ON = allocator_features(gates=features.parse("DRADerivedAttributes=true"))
LISTS = allocator_features(gates=features.parse("DRADerivedAttributes=true,DRAListTypeAttributes=true"))
OFF = allocator_features(gates=features.DEFAULT)
NUMA = "derived/numa"

SLICES = [
    rslice("gpus", "node-1", "pool-1", DRIVER_A, device("gpu-0", attrs={"numa": 0}), device("gpu-1", attrs={"numa": 1})),
    rslice("nics", "node-1", "pool-2", DRIVER_B, device("nic-0", attrs={"socket": "s1"}),
           device("nic-1", attrs={"socket": "s0"})),
]


def derived(request: dict[str, Any], expression: str, name: str = NUMA) -> dict[str, Any]:
    request["exactly"]["derivedAttributes"] = [{"name": name, "expression": expression}]
    return request


def numa_claim(nic_expression: str = f'int(device.attributes["{DRIVER_B}"].socket.substring(1))') -> dict[str, Any]:
    return claim("claim-0",
                 derived(req("gpu", CLASS_A, 1), f'device.attributes["{DRIVER_A}"].numa'),
                 derived(req("nic", CLASS_B, 1), nic_expression),
                 constraints=[match(NUMA, "gpu", "nic")])


def run(claims: list[dict[str, Any]], feats: Any = ON) -> Any:
    outcome, _ = _run(Case("derived", claims, SLICES, features=feats), prune=False)
    return _normalize(outcome) if outcome is not None and not isinstance(outcome, Exception) else outcome


def test_a_gpu_and_a_nic_on_one_numa_node() -> None:
    # gpu-0 (numa 0) goes with nic-1 (socket s0)
    assert run([numa_claim()]) == [alloc(res("gpu", "gpu-0"), res("nic", "nic-1", driver=DRIVER_B, pool="pool-2"))]


def test_distinct_derived_values() -> None:
    c = claim("claim-0", derived(req("a", CLASS_A, 1), f'device.attributes["{DRIVER_A}"].numa % 1'),
              derived(req("b", CLASS_A, 1), f'device.attributes["{DRIVER_A}"].numa % 1'),
              constraints=[distinct(NUMA, "a", "b")])
    assert run([c]) is None  # both derive 0


def test_the_gate_off_ignores_derived_attributes() -> None:
    # the constraint then reads the devices' own attribute, which neither has
    assert run([numa_claim()], OFF) is None


def test_a_runtime_error_fails_the_allocation() -> None:
    out = run([numa_claim(f'device.attributes["{DRIVER_B}"].missing')])
    assert isinstance(out, AllocationError)
    assert "derived attribute derived/numa on device driver-b/pool-2/nic-0: CEL runtime error" in str(out)


def test_a_value_of_another_type_fails_the_allocation() -> None:
    out = run([numa_claim("{'a': 1}")])
    assert isinstance(out, AllocationError) and "must evaluate to a string, int, bool or semver" in str(out)


def test_list_values_match_as_sets_with_list_type_attributes() -> None:
    c = claim("claim-0", derived(req("gpu", CLASS_A, 1), f'[device.attributes["{DRIVER_A}"].numa, 7]'),
              derived(req("nic", CLASS_B, 1), "[7]"), constraints=[match(NUMA, "gpu", "nic")])
    assert run([c], LISTS) == [alloc(res("gpu", "gpu-0"), res("nic", "nic-0", driver=DRIVER_B, pool="pool-2"))]


@pytest.mark.parametrize(("value", "expected"), [
    (1, {"int": 1}), (True, {"bool": True}), ("x", {"string": "x"}), ([1, 2], {"ints": [1, 2]}),
    (["a"], {"strings": ["a"]}), ({"a": 1}, None), ([1, "a"], None), (1.5, None), ([], None),
])
def test_values_as_attributes(value: Any, expected: Any) -> None:
    assert derived_attribute(value) == expected
