"""cp/quantity.py: parsing and the canonical form upstream re-encodes quantities in (the module functions
and the `Quantity` type: rounding, comparison, arithmetic)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from cp import quantity
from cp.quantity import Quantity, QuantityError


@pytest.mark.parametrize(("text", "value"), [
    ("100m", Decimal("0.1")), ("1", 1), ("1Ki", 1024), ("1.5Gi", 1610612736), ("1e3", 1000), ("1E-3", Decimal("0.001")),
    ("-2k", -2000), ("+5", 5), (".5", Decimal("0.5")), ("5.", 5), (3, 3), (0.25, Decimal("0.25")), (" 7 ", 7),
])
def test_parse(text: str | int | float, value: Decimal | int) -> None:
    assert quantity.parse(text) == value


@pytest.mark.parametrize("text", ["", "abc", "1.2.3", "1Kb", "1 Gi", "--1", ".", "1e", "Gi", True, None])
def test_parse_errors(text: object) -> None:
    with pytest.raises(quantity.QuantityError):
        quantity.parse(text)  # type: ignore[arg-type]


@pytest.mark.parametrize(("text", "canonical"), [
    ("100m", "100m"), ("0.5", "500m"), (0.5, "500m"), (1, "1"), ("1000", "1k"), ("1500", "1500"), ("2000m", "2"),
    ("1Gi", "1Gi"), ("1024Mi", "1Gi"), ("1.5Gi", "1536Mi"), ("1000Ki", "1000Ki"), ("0.1Gi", "107374182400m"),
    ("100", "100"), ("1.5Ki", "1536"), ("1e3", "1e3"), ("12e6", "12e6"), ("1000k", "1M"), ("0", "0"), ("0Gi", "0"),
    ("-1", "-1"), ("1n", "1n"), ("128974848", "128974848"), ("129e6", "129e6"), ("129M", "129M"), ("123Mi", "123Mi"),
])
def test_canonical(text: str | int | float, canonical: str) -> None:
    assert quantity.canonical(text) == canonical


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
