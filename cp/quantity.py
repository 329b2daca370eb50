"""Kubernetes `resource.Quantity` strings: parsing to exact decimals and canonical formatting.

Follows the grammar of `apimachinery/pkg/api/resource/quantity.go`:
`<signedNumber><suffix>` where the suffix is a binary SI suffix (Ki..Ei), a decimal SI suffix
(n u m "" k M G T P E) or a decimal exponent (e3, E-2). Pure.
"""

from __future__ import annotations

import functools
import re
from decimal import Decimal, InvalidOperation

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
def _canonical_text(text: str) -> str:
    amount, fmt = _parse(text)
    return _format(amount, fmt)


def canonical(value: str | int | float) -> str:
    """The string upstream serializes a parsed quantity as (`Quantity.String()`).

    Decimal formats: the value as an integer times 10^e with e a multiple of 3 as large as possible,
    with an SI suffix (DecimalSI) or `e<n>` (DecimalExponent). BinarySI: values of at least 1024
    that are whole numbers use the largest power-of-1024 suffix that divides them; others fall back
    to DecimalSI.
    """
    if isinstance(value, bool):
        raise QuantityError(FORMAT_ERROR)
    if isinstance(value, int):
        return _format(Decimal(value), "DecimalSI")
    if isinstance(value, float):
        return _canonical_text(repr(value))
    return _canonical_text(value)


def _format(amount: Decimal, fmt: str) -> str:
    if amount == 0:
        return "0"
    sign = "-" if amount < 0 else ""
    mag = -amount if amount < 0 else amount
    integral = mag == mag.to_integral_value()
    if fmt == "BinarySI":
        if mag < 1024 or not integral:
            fmt = "DecimalSI"
        else:
            n = int(mag)
            power = 0
            while n % 1024 == 0 and power < 6:
                n //= 1024
                power += 1
            suffix = {0: "", 1: "Ki", 2: "Mi", 3: "Gi", 4: "Ti", 5: "Pi", 6: "Ei"}[power]
            return f"{sign}{n}{suffix}"
    exp = 0
    scaled = mag
    while scaled != scaled.to_integral_value():
        scaled = scaled.scaleb(3)
        exp -= 3
    n = int(scaled)
    while n % 1000 == 0:
        n //= 1000
        exp += 3
    if fmt == "DecimalExponent":
        m, e = n, exp
        while m % 10 == 0:
            m //= 10
            e += 1
        # Exponent form keeps a multiple of 3 as well (1e3, 12e6, 15e2 -> 1500).
        while e % 3:
            m *= 10
            e -= 1
        return f"{sign}{m}" if e == 0 else f"{sign}{m}e{e}"
    suffix = _DECIMAL_SUFFIX.get(exp)
    if suffix is None:
        return f"{sign}{n}e{exp}"
    return f"{sign}{n}{suffix}"


_DECIMAL_SUFFIX = {power: suffix for suffix, power in DECIMAL.items()}
