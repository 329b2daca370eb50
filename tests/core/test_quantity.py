"""cp/quantity.py: parsing and the canonical form upstream re-encodes quantities in."""

from __future__ import annotations

from decimal import Decimal

import pytest

from cp import quantity


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
