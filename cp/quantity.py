"""Kubernetes `resource.Quantity` strings: parsing to exact decimals and canonical formatting.

Follows the grammar of `apimachinery/pkg/api/resource/quantity.go`:
`<signedNumber><suffix>` where the suffix is a binary SI suffix (Ki..Ei), a decimal SI suffix
(n u m "" k M G T P E) or a decimal exponent (e3, E-2). Pure.
"""

from __future__ import annotations

import functools
import re
from decimal import ROUND_CEILING, Decimal, InvalidOperation

FORMAT_ERROR = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
_SHAPE = re.compile(r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$")
_NUMBER = re.compile(r"^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)$")
_EXPONENT = re.compile(r"^[eE][+-]?[0-9]+$")

BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


class QuantityError(ValueError):
    pass


@functools.lru_cache(maxsize=4096)
def _parse(text: str) -> tuple[Decimal, str]:
    text = text.strip()
    m = _SHAPE.match(text)
    if not m:
        raise QuantityError(FORMAT_ERROR)
    number, suffix = m.group(1), m.group(2)
    if not _NUMBER.match(number):
        raise QuantityError(FORMAT_ERROR)
    try:
        value = Decimal(number)
    except InvalidOperation:
        raise QuantityError(FORMAT_ERROR) from None
    if suffix in BINARY:
        return value * (Decimal(2) ** BINARY[suffix]), "BinarySI"
    if suffix in DECIMAL:
        return value.scaleb(DECIMAL[suffix]), "DecimalSI"
    if _EXPONENT.match(suffix):
        return value.scaleb(int(suffix[1:])), "DecimalExponent"
    raise QuantityError("unable to parse quantity's suffix")


def parse(value: str | int | float) -> Decimal:
    """The exact value of a quantity; raises QuantityError with upstream's message."""
    if isinstance(value, bool):
        raise QuantityError(FORMAT_ERROR)
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        return _parse(repr(value))[0]
    if not isinstance(value, str):
        raise QuantityError(FORMAT_ERROR)
    return _parse(value)[0]


def is_valid(value: object) -> bool:
    try:
        parse(value)  # type: ignore[arg-type]
    except QuantityError:
        return False
    return True


def format_of(value: str | int | float) -> str:
    if isinstance(value, str):
        return _parse(value)[1]
    return "DecimalSI"


@functools.lru_cache(maxsize=4096)
def canonical(value: str) -> str:
    """The canonical string upstream serializes a parsed quantity as (rounded up to milli)."""
    amount, fmt = _parse(value)
    # Values are rounded up to milli precision (SetDefaults_ResourceList / canonical form).
    amount = amount.quantize(Decimal("0.001"), rounding=ROUND_CEILING) if amount.as_tuple().exponent < -3 \
        else amount  # type: ignore[operator]
    if amount == 0:
        return "0"
    sign = "-" if amount < 0 else ""
    mag = -amount if amount < 0 else amount
    if fmt == "BinarySI" and mag == mag.to_integral_value() and mag >= 1024:
        n = int(mag)
        for suffix, power in sorted(BINARY.items(), key=lambda kv: -kv[1]):
            if n % (1 << power) == 0:
                return f"{sign}{n >> power}{suffix}"
        return f"{sign}{n}"
    # Decimal (and binary values that are not whole multiples of 1024): largest exponent of 3
    # that keeps an integer mantissa.
    if fmt == "BinarySI":
        fmt = "DecimalSI"
    exp = 0
    scaled = mag
    while scaled != scaled.to_integral_value():
        scaled = scaled.scaleb(3)
        exp -= 3
    n = int(scaled)
    while n != 0 and n % 1000 == 0 and exp < 18:
        n //= 1000
        exp += 3
    if fmt == "DecimalExponent":
        return f"{sign}{n}" if exp == 0 else f"{sign}{n}e{exp}"
    for suffix, power in DECIMAL.items():
        if power == exp:
            return f"{sign}{n}{suffix}"
    return f"{sign}{n}e{exp}"
