"""The DRA CEL environment: device variables, Kubernetes library functions, errors, caching.

Excluded: how the allocator reports these errors (test_allocator.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from cp.dra.celenv import CelCache, CelDevice, CelError

DEVICE = CelDevice(
    driver="dra.example.com",
    attributes={
        "model": {"string": "A100"},
        "numa": {"int": 1},
        "healthy": {"bool": True},
        "driverVersion": {"version": "1.2.3"},
        "cores": {"ints": [0, 1, 2]},
        "kinds": {"strings": ["a", "b"]},
        "compat": {"versions": ["1.0.0", "2.0.0-rc.1"]},
        "other.example.com/rack": {"string": "r7"},
        "resource.kubernetes.io/pcieRoot": {"string": "pci0000:00"},
    },
    capacity={"memory": {"value": "80Gi"}, "other.example.com/slots": {"value": "4"}},
    allow_multiple_allocations=True,
)


def evaluate(expression: str, device: CelDevice = DEVICE) -> bool:
    cache = CelCache()
    return cache.matches(cache.compile(expression), device)


TRUE_EXPRESSIONS = [
    'device.driver == "dra.example.com"',
    'device.attributes["dra.example.com"].model == "A100"',
    'device.attributes["dra.example.com"].numa == 1 && device.attributes["dra.example.com"].healthy',
    'device.attributes["other.example.com"].rack == "r7"',
    'device.attributes["resource.kubernetes.io"].pcieRoot.startsWith("pci")',
    # quantities
    'device.capacity["dra.example.com"].memory.compareTo(quantity("80Gi")) == 0',
    'device.capacity["dra.example.com"].memory == quantity("81920Mi")',
    'device.capacity["dra.example.com"].memory.isGreaterThan(quantity("80G"))',
    'quantity("1k").isLessThan(quantity("1Ki"))',
    'device.capacity["other.example.com"].slots.asInteger() == 4',
    'quantity("1500m").isInteger() == false && quantity("1500m").asApproximateFloat() == 1.5',
    'quantity("1").add(quantity("500m")) == quantity("1.5") && quantity("2").sub(1) == quantity("1")',
    'quantity("-1").sign() == -1 && quantity("0").sign() == 0',
    'isQuantity("1Gi") && !isQuantity("1 Gi")',
    # semantic versions
    'device.attributes["dra.example.com"].driverVersion == semver("1.2.3")',
    'device.attributes["dra.example.com"].driverVersion.isGreaterThan(semver("1.2.0"))',
    'device.attributes["dra.example.com"].driverVersion.isLessThan(semver("1.10.0"))',
    'device.attributes["dra.example.com"].driverVersion.compareTo(semver("1.2.3-alpha")) == 1',
    'device.attributes["dra.example.com"].driverVersion.major() == 1 && '
    'device.attributes["dra.example.com"].driverVersion.minor() == 2 && '
    'device.attributes["dra.example.com"].driverVersion.patch() == 3',
    'semver("1.0.0+build.5") == semver("1.0.0")',
    'semver("v01.2", true) == semver("1.2.0") && isSemver("v1", true) && !isSemver("v1")',
    'semver("1.0.0-alpha").isLessThan(semver("1.0.0-alpha.1")) && semver("1.0.0-beta.2").isLessThan(semver("1.0.0-beta.11"))',
    # list attributes and includes()
    'device.attributes["dra.example.com"].cores.includes(2)',
    '!device.attributes["dra.example.com"].cores.includes(7)',
    'device.attributes["dra.example.com"].kinds.includes("b")',
    'device.attributes["dra.example.com"].numa.includes(1)',
    'device.attributes["dra.example.com"].compat.includes(semver("2.0.0-rc.1"))',
    'device.attributes["dra.example.com"].cores.exists(c, c > 1)',
    'size(device.attributes["dra.example.com"].cores) == 3',
    # unknown domains are empty maps
    '!has(device.attributes["unknown.example.com"].model)',
    'size(device.capacity["unknown.example.com"]) == 0',
    '!("unknown.example.com" in device.attributes)',
    # allowMultipleAllocations, cel.bind, lists and strings libraries
    'device.allowMultipleAllocations',
    'cel.bind(dra, device.attributes["dra.example.com"], dra.model == "A100" && dra.numa == 1)',
    'cel.bind(x, 2, cel.bind(y, 3, x * y == 6))',
    '[1, 2, 3].isSorted() && [3, 1].indexOf(1) == 1 && [1, 2, 1].lastIndexOf(1) == 2',
    '"a100-sxm".find("[0-9]+") == "100" && "a1b2".findAll("[0-9]").size() == 2',
    '"A100".lowerAscii() == "a100" && "a,b".split(",").size() == 2',
    'sets.contains([1, 2, 3], [2])',
    'device.attributes["dra.example.com"].model.matches("^A[0-9]+$")',
    '"cel.bind(x, 1, x)" == "cel.bind(x, 1, x)"',
]


@pytest.mark.parametrize("expression", TRUE_EXPRESSIONS)
def test_true_expressions(expression: str) -> None:
    assert evaluate(expression) is True


@pytest.mark.parametrize(("expression", "message"), [
    ('device.attributes["dra.example.com"].missing', "no such key: missing"),
    ('device.attributes["unknown.example.com"].model == "x"', "no such key: model"),
    ('device.driver', "CEL result of type string could not be converted to bool"),
    ('quantity("bogus") == quantity("1")', "quantities must match the regular expression"),
    ('semver("1.0") == semver("1.0.0")', "No Major.Minor.Patch elements found"),
    ('device.attributes["dra.example.com"].numa.isGreaterThan(1)', "no such overload"),
    ('quantity("1.5").asInteger() == 1', "cannot convert value to integer"),
])
def test_runtime_errors(expression: str, message: str) -> None:
    with pytest.raises(CelError) as info:
        evaluate(expression)
    assert message in str(info.value)


@pytest.mark.parametrize(("expression", "message"), [
    ("noSuchVar", "undeclared reference to 'noSuchVar'"),
    ("device.driver == other", "undeclared reference to 'other'"),
    ("frobnicate(device)", "undeclared reference to 'frobnicate'"),
    ("device.driver ==", "compilation failed: ERROR: <input>:1:"),
])
def test_compile_errors(expression: str, message: str) -> None:
    compiled = CelCache().compile(expression)
    assert compiled.error is not None and message in compiled.error
    with pytest.raises(CelError):
        evaluate(expression)


def test_includes_is_available_without_list_type_attributes() -> None:
    """Upstream's stored-expression environment (used by the scheduler) always has it."""
    assert evaluate('device.attributes["dra.example.com"].cores.includes(1)')


def test_includes_refuses_long_lists() -> None:
    dev = CelDevice(driver="d", attributes={"l": {"ints": list(range(60))}}, capacity=None,
                    allow_multiple_allocations=None)
    with pytest.raises(CelError, match="cannot be applied to lists longer than 48 values"):
        evaluate('device.attributes["d"].l.includes(59)', dev)


def test_allow_multiple_allocations_defaults_to_false() -> None:
    dev = CelDevice(driver="d", attributes=None, capacity=None, allow_multiple_allocations=None)
    assert evaluate("device.allowMultipleAllocations == false", dev)


@pytest.mark.parametrize(("attributes", "message"), [
    ({"broken": {}}, "attribute broken: unsupported attribute value"),
    ({"v": {"version": "1.2"}}, "attribute v: parse semantic version"),
])
def test_invalid_attribute_values_fail_every_expression(attributes: dict[str, Any], message: str) -> None:
    dev = CelDevice(driver="d", attributes=attributes, capacity=None, allow_multiple_allocations=None)
    with pytest.raises(CelError, match=message):
        evaluate('device.driver == "d"', dev)


def test_results_are_cached_per_device_and_expression() -> None:
    cache = CelCache()
    dev = CelDevice(driver="d", attributes={"n": {"int": 1}}, capacity=None, allow_multiple_allocations=None)
    compiled = cache.compile('device.attributes["d"].n == 1')
    assert cache.compile('device.attributes["d"].n == 1') is compiled
    assert cache.matches(compiled, dev) is True
    assert dev.results[compiled.expression] is True
    bad = cache.compile('device.attributes["d"].nope == 1')
    for _ in range(2):
        with pytest.raises(CelError, match="no such key: nope"):
            cache.matches(bad, dev)
    assert isinstance(dev.results[bad.expression], CelError)
