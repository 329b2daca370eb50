"""Kubernetes `resource.Quantity`: exact parsing, comparison, arithmetic and canonical output.

Behaviour follows apimachinery `pkg/api/resource/quantity.go`: a quantity is a signed decimal
number with an optional suffix — binary SI (`Ki` … `Ei`), decimal SI (`n u m k M G T P E`) or a
decimal exponent (`e3`, `E-2`). Values are rounded *up* (away from zero) to the nearest nano at
parse time, so every quantity is held exactly as an integer number of nano-units.

The canonical string form (what the API server writes back) keeps the parsed format: binary SI
stays binary when the value is an integer of magnitude >= 1024 (`1536Mi`), otherwise decimal SI;
the exponent / suffix is as large as possible without losing precision (`1500m`, `1k`, `1e3`).
Pure; no I/O.
"""

from __future__ import annotations

import re

__all__ = ["BINARY_SI", "DECIMAL_EXPONENT", "DECIMAL_SI", "Quantity", "QuantityError"]

BINARY_SI = "BinarySI"
DECIMAL_SI = "DecimalSI"
DECIMAL_EXPONENT = "DecimalExponent"

_NANO = 10**9
_INT64_MAX = 2**63 - 1
_INT64_MIN = -(2**63)

_BIN_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DEC_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DEC_BY_EXP = {v: k for k, v in _DEC_SUFFIXES.items()}
_BIN_BY_EXP = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]

_NUMBER_RE = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?(.*)\Z", re.DOTALL)
_EXP_RE = re.compile(r"[eE]([+-]?[0-9]+)\Z")


class QuantityError(ValueError):
    """The string is not a valid quantity (apimachinery `ErrFormatWrong` / `ErrSuffix`)."""


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
        if suffix in _BIN_SUFFIXES:
            fmt = BINARY_SI
            num, den = mantissa * (2 ** _BIN_SUFFIXES[suffix]), 1
            if scale < 0:
                den = 10**-scale
        elif suffix in _DEC_SUFFIXES:
            fmt = DECIMAL_SI
            scale += _DEC_SUFFIXES[suffix]
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
