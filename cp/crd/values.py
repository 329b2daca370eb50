"""How Go shows JSON values in the messages of custom-resource and schema errors. Pure.

apimachinery's `field.Error` prints strings quoted (`%q`), Go numbers and booleans with `%v` and every
other value as `json.Marshal` writes it; kube-openapi's messages put bounds in with `%v`. Values here are
decoded JSON (`dict`, `list`, `str`, `int`, `float`, `bool`, `None`), as an unstructured object holds them.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

from cp.errors import GoValue

_HTML = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def go_float(value: float) -> str:
    """Go's `%v` of a float64 (`strconv` 'g' at the shortest precision): `%e` form when the decimal
    exponent is < -4 or >= 6 (`1e+06`, `1.5e-05`)."""
    return _float(value, low=-4, high=6)


def _float(value: float, *, low: int, high: int, short_exponent: bool = False) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if math.isnan(value):
        return "NaN"
    if value == 0:
        return "-0" if math.copysign(1, value) < 0 else "0"
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    text = "".join(str(d) for d in digits)
    exp = len(text) + exponent - 1
    prefix = "-" if sign else ""
    if exp < low or exp >= high:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        digits_of_exp = str(abs(exp)) if short_exponent and exp < 0 else f"{abs(exp):02d}"
        return f"{prefix}{mantissa}e{'-' if exp < 0 else '+'}{digits_of_exp}"
    if exponent >= 0:
        return prefix + text + "0" * exponent
    point = len(text) + exponent
    if point > 0:
        return prefix + text[:point] + "." + text[point:]
    return prefix + "0." + "0" * -point + text


def go_quote(value: str) -> str:
    """Go's `%q` of a string (close enough: JSON's escapes, non-ASCII kept)."""
    return json.dumps(value, ensure_ascii=False)


def go_json(value: Any) -> str:
    """`json.Marshal` of a decoded JSON value: compact, map keys sorted, `<`, `>` and `&` escaped, floats
    in Go's shortest form (`1` for 1.0, `1e+21` from 1e21 on)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False).translate(_HTML)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float(value, low=-6, high=21, short_exponent=True)
    if isinstance(value, dict):
        return "{" + ",".join(f"{go_json(str(k))}:{go_json(value[k])}" for k in sorted(value)) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(go_json(v) for v in value) + "]"
    return go_json(str(value))


def bad_value(value: Any) -> Any:
    """A value as `field.Error` shows it: strings, integers and booleans as they are (the Cause renders
    them as Go does), floats with `%v`, everything else as JSON."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return GoValue(go_float(value))
    return GoValue(go_json(value))


def go_v(value: Any) -> str:
    """`%v` of a scalar as kube-openapi puts bounds and factors into its messages."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return go_float(value)
    return str(value)
