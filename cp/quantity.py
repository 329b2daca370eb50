"""Kubernetes `resource.Quantity` (apimachinery `pkg/api/resource/quantity.go`). Pure.

The grammar is `<signedNumber><suffix>`, the suffix binary SI (Ki..Ei), decimal SI (n u m "" k M G T P E)
or a decimal exponent (e3, E-2). Two views of the same value, for the two kinds of caller:
- `parse`, `canonical`, `is_valid`, `format_of`: the exact decimal and the string upstream serializes it
  as, for validation, defaulting and printing;
- `Quantity`: an integer number of nano-units (rounded *up*, away from zero, at parse time, as upstream
  does), with comparison and arithmetic, for the allocator, the scheduler and the fleet. Its canonical
  string keeps the parsed format: binary SI stays binary for integers of magnitude >= 1024 (`1536Mi`),
  otherwise decimal SI, with the largest exponent that loses no precision (`1500m`, `1k`, `1e3`).
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
    """The string is not a valid quantity (apimachinery `ErrFormatWrong` / `ErrSuffix`)."""


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
    decimal_suffix = _DECIMAL_SUFFIX.get(exp)
    if decimal_suffix is None:
        return f"{sign}{n}e{exp}"
    return f"{sign}{n}{decimal_suffix}"


_DECIMAL_SUFFIX = {power: suffix for suffix, power in DECIMAL.items()}

# ---------------------------------------------------------------- the exact nano-unit type

BINARY_SI = "BinarySI"
DECIMAL_SI = "DecimalSI"
DECIMAL_EXPONENT = "DecimalExponent"

_NANO = 10**9
_INT64_MAX = 2**63 - 1
_INT64_MIN = -(2**63)

_DEC_BY_EXP = {v: k for k, v in DECIMAL.items()}
_BIN_BY_EXP = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]

_NUMBER_RE = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?(.*)\Z", re.DOTALL)
_EXP_RE = re.compile(r"[eE]([+-]?[0-9]+)\Z")



def _ceil_div(a: int, b: int) -> int:
    return -((-a) // b)


class Quantity:
    """An exact quantity: `nanos` is the value in units of 1e-9; `format` is the output format."""

    __slots__ = ("format", "nanos")

    def __init__(self, nanos: int, format: str = DECIMAL_SI) -> None:
        self.nanos = nanos
        self.format = format

    # -- construction -----------------------------------------------------------------------

    @classmethod
    def parse(cls, text: str) -> Quantity:
        """Parse like `resource.ParseQuantity`; raises `QuantityError`."""
        if not isinstance(text, str):
            if isinstance(text, bool):
                raise QuantityError("quantities must match the regular expression "
                                    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
            if isinstance(text, int):
                return cls(text * _NANO, DECIMAL_SI)
            raise QuantityError(f"cannot parse {type(text).__name__} as a quantity")
        cached = _PARSE_CACHE.get(text)
        if cached is not None:
            return cls(cached[0], cached[1])
        q = cls._parse(text)
        if len(_PARSE_CACHE) < 65536:
            _PARSE_CACHE[text] = (q.nanos, q.format)
        return q

    @classmethod
    def _parse(cls, text: str) -> Quantity:
        if not text:
            raise QuantityError("quantities must match the regular expression "
                                "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
        m = _NUMBER_RE.match(text)
        if m is None:
            raise QuantityError("quantities must match the regular expression "
                                "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
        sign, whole, frac, suffix = m.group(1), m.group(2), m.group(3), m.group(4)
        if not whole and not frac:
            raise QuantityError("quantities must match the regular expression "
                                "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
        frac = frac or ""
        mantissa = int((whole or "0") + frac)
        scale = -len(frac)  # value = mantissa * 10**scale
        if suffix in BINARY:
            fmt = BINARY_SI
            num, den = mantissa * (2 ** BINARY[suffix]), 1
            if scale < 0:
                den = 10**-scale
        elif suffix in DECIMAL:
            fmt = DECIMAL_SI
            scale += DECIMAL[suffix]
            num, den = (mantissa * 10**scale, 1) if scale >= 0 else (mantissa, 10**-scale)
        else:
            em = _EXP_RE.match(suffix)
            if em is None:
                raise QuantityError("unable to parse quantity's suffix")
            fmt = DECIMAL_EXPONENT
            scale += int(em.group(1))
            num, den = (mantissa * 10**scale, 1) if scale >= 0 else (mantissa, 10**-scale)
        nanos = _ceil_div(num * _NANO, den)  # rounds up to the nearest nano (positive magnitude)
        if fmt == BINARY_SI and 0 < nanos < _NANO:
            fmt = DECIMAL_SI
        if sign == "-":
            nanos = -nanos
        return cls(nanos, fmt)

    @classmethod
    def from_int(cls, value: int, format: str = DECIMAL_SI) -> Quantity:
        return cls(value * _NANO, format)

    def copy(self) -> Quantity:
        return Quantity(self.nanos, self.format)

    # -- comparisons and arithmetic ---------------------------------------------------------

    def cmp(self, other: Quantity) -> int:
        a, b = self.nanos, other.nanos
        return (a > b) - (a < b)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and other.nanos == self.nanos

    def __hash__(self) -> int:
        return hash(self.nanos)

    def __lt__(self, other: Quantity) -> bool:
        return self.nanos < other.nanos

    def __le__(self, other: Quantity) -> bool:
        return self.nanos <= other.nanos

    def __gt__(self, other: Quantity) -> bool:
        return self.nanos > other.nanos

    def __ge__(self, other: Quantity) -> bool:
        return self.nanos >= other.nanos

    def add(self, other: Quantity) -> Quantity:
        return Quantity(self.nanos + other.nanos, self.format)

    def sub(self, other: Quantity) -> Quantity:
        return Quantity(self.nanos - other.nanos, self.format)

    def is_zero(self) -> bool:
        return self.nanos == 0

    def sign(self) -> int:
        return (self.nanos > 0) - (self.nanos < 0)

    def value(self) -> int:
        """`Quantity.Value()`: the integer value, rounded up away from zero."""
        if self.nanos >= 0:
            return _ceil_div(self.nanos, _NANO)
        return -_ceil_div(-self.nanos, _NANO)

    def as_int64(self) -> int | None:
        """`Quantity.AsInt64()`: the exact integer value, or None if fractional / out of range."""
        if self.nanos % _NANO:
            return None
        v = self.nanos // _NANO
        if v > _INT64_MAX or v < _INT64_MIN:
            return None
        return v

    def as_approximate_float(self) -> float:
        return self.nanos / _NANO

    # -- output -----------------------------------------------------------------------------

    def __str__(self) -> str:
        return self.canonical()

    def __repr__(self) -> str:
        return f"Quantity({self.canonical()!r})"

    def canonical(self) -> str:
        nanos = self.nanos
        if nanos == 0:
            return "0"
        fmt = self.format
        neg = nanos < 0
        mag = -nanos if neg else nanos
        if fmt == BINARY_SI and (mag < 1024 * _NANO or mag % _NANO):
            fmt = DECIMAL_SI
        prefix = "-" if neg else ""
        if fmt == BINARY_SI:
            v = mag // _NANO
            exp = 0
            while v % 1024 == 0 and exp < 6:
                v //= 1024
                exp += 1
            return f"{prefix}{v}{_BIN_BY_EXP[exp]}"
        # Decimal: strip factors of ten, then lower the exponent to a multiple of three.
        m, e = mag, -9
        while m % 10 == 0:
            m //= 10
            e += 1
        r = e % 3
        if r:
            m *= 10**r
            e -= r
        if fmt == DECIMAL_EXPONENT:
            return f"{prefix}{m}" + (f"e{e}" if e else "")
        suffix = _DEC_BY_EXP.get(e)
        if suffix is None:
            return f"{prefix}{m}e{e}"
        return f"{prefix}{m}{suffix}"


_PARSE_CACHE: dict[str, tuple[int, str]] = {}


def parse_quantity(value: object) -> Quantity:
    """Parse a quantity from its JSON form (a string, or a bare number as some clients send)."""
    if isinstance(value, Quantity):
        return value
    if isinstance(value, str):
        return Quantity.parse(value)
    if isinstance(value, bool):
        raise QuantityError("a quantity must be a string")
    if isinstance(value, int):
        return Quantity.from_int(value)
    if isinstance(value, float):
        return Quantity.parse(repr(value))
    raise QuantityError("a quantity must be a string")
