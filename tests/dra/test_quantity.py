"""Quantities (parsing, rounding, canonical form, arithmetic) and semantic versions."""

from __future__ import annotations

import itertools

import pytest

from cp.dra import semver
from cp.quantity import Quantity, QuantityError


@pytest.mark.parametrize(("text", "canonical"), [
    ("1Gi", "1Gi"), ("1024Mi", "1Gi"), ("1000Mi", "1000Mi"), ("1.5Gi", "1536Mi"), ("0.5Gi", "512Mi"),
    ("1023Ki", "1023Ki"), ("512Ki", "512Ki"), ("100", "100"), ("1000", "1k"), ("1500000", "1500k"),
    ("1.5", "1500m"), (".5", "500m"), ("5.", "5"), ("100m", "100m"), ("0.0001", "100u"), ("1n", "1n"),
    ("0.1n", "1n"), ("1e3", "1e3"), ("1E3", "1e3"), ("12e-3", "12e-3"), ("1000e-3", "1"), ("1M", "1M"),
    ("-1.5Gi", "-1536Mi"), ("0", "0"), ("-0", "0"), ("+4", "4"), ("2Ei", "2Ei"),
])
def test_canonical_form(text: str, canonical: str) -> None:
    assert Quantity.parse(text).canonical() == canonical


@pytest.mark.parametrize("text", ["", "x", "1Q", "1.2.3", "+", "e3", "1Ki3", "1 Gi", "--1"])
def test_invalid(text: str) -> None:
    with pytest.raises(QuantityError):
        Quantity.parse(text)


def test_compare_and_arithmetic() -> None:
    q = Quantity.parse
    assert q("1Gi") == q("1073741824") and q("1Gi") > q("1G") and q("999m") < q("1")
    assert q("1Gi").add(q("1Gi")).canonical() == "2Gi"
    assert q("1").sub(q("1500m")).canonical() == "-500m"
    assert q("1500m").value() == 2 and q("-1500m").value() == -2 and q("2").value() == 2
    assert q("2").as_int64() == 2 and q("2.5").as_int64() is None


def test_semver_order() -> None:
    ordered = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2",
               "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.2.0", "1.10.0", "2.0.0"]
    versions = [semver.parse(v) for v in ordered]
    for a, b in itertools.pairwise(versions):
        assert a.compare(b) == -1 and b.compare(a) == 1
    assert semver.parse("1.0.0+x").compare(semver.parse("1.0.0+y")) == 0


@pytest.mark.parametrize("text", ["1.0", "01.0.0", "1.0.0-", "1.0.0-01", "v1.0.0", "1.0.0+", "a.b.c"])
def test_semver_invalid(text: str) -> None:
    with pytest.raises(semver.SemverError):
        semver.parse(text)


def test_semver_normalize() -> None:
    assert str(semver.normalize_and_parse("v1")) == "1.0.0"
    assert str(semver.normalize_and_parse("01.02.03")) == "1.2.3"
    with pytest.raises(semver.SemverError):
        semver.normalize_and_parse("1.0-rc")
