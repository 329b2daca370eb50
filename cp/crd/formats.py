"""The string formats a CRD schema's `format` is checked against, as apiextensions-apiserver runs
kube-openapi's `strfmt.Default` registry. Pure.

Upstream (`pkg/apiserver/validation/formats.go`) keeps a schema's format only when it is one of the
supported names for the type (strings: the registry below; integers: `int32`, `int64`; numbers:
`float`, `double`) and drops it otherwise, so an unknown format never fails a custom resource. Names are
compared with their dashes removed, as go-openapi normalises them (`date-time` is `datetime`).
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
from collections.abc import Callable
from datetime import date
from urllib.parse import urlsplit

_UUID = re.compile(r"^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$", re.IGNORECASE)
_UUID3 = re.compile(r"^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$", re.IGNORECASE)
_UUID4 = re.compile(r"^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$", re.IGNORECASE)
_UUID5 = re.compile(r"^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$", re.IGNORECASE)
_HOST_CHAR = r"[^\W_]"  # letters and digits of any script (Go: a-zA-Z0-9, \p{L}, \p{S})
_HOSTNAME = re.compile(
    rf"^({_HOST_CHAR}((-?{_HOST_CHAR}{{0,62}})?)|({_HOST_CHAR}(([\w-]{{0,61}}{_HOST_CHAR})?)(\.)){{1,}}"
    r"([^\W\d_]){2,63})$")
_TIME = re.compile(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$")
_DURATION_GO = re.compile(r"^[-+]?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+$")
_DURATION_WORDS = re.compile(r"(\d+)\s*([A-Za-zµ]+)")
_DURATION_UNITS = {"ns", "us", "ms", "s", "m", "h", "d", "w"}
_MAC = re.compile(r"^([0-9a-fA-F]{2}[:-]){5}[0-9a-fA-F]{2}$|^([0-9a-fA-F]{2}[:-]){7}[0-9a-fA-F]{2}$|"
                  r"^([0-9a-fA-F]{2}[:-]){19}[0-9a-fA-F]{2}$|^([0-9a-fA-F]{4}\.){2}[0-9a-fA-F]{4}$|"
                  r"^([0-9a-fA-F]{4}\.){3}[0-9a-fA-F]{4}$|^([0-9a-fA-F]{4}\.){9}[0-9a-fA-F]{4}$")
_EMAIL = re.compile(r"^(?:[^<>()\[\]\\,;:\s@\"]+|\"[^\"]*\")@[^\s@<>()\[\],;:\"]+$")
_HEXCOLOR = re.compile(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$")
_RGBCOLOR = re.compile(r"^rgb\(\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])"
                       r"\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*\)$")
_SSN = re.compile(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$")
_CREDITCARD = re.compile(r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|"
                         r"3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11})$")
_BSON = re.compile(r"^[0-9a-fA-F]{24}$")
_SHORT_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LONG_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def _is_date(value: str) -> bool:
    if not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", value):
        return False
    try:
        date.fromisoformat(value)
    except ValueError:
        return False
    return True


def _is_datetime(value: str) -> bool:
    """strfmt.IsDateTime: a full date, a `T` and a time with a zone (any case)."""
    if len(value) < 4:
        return False
    parts = value.lower().split("t")
    if len(parts) < 2 or not _is_date(parts[0]):
        return False
    m = _TIME.match(parts[1])
    return m is not None and m.group(1) <= "23" and m.group(2) <= "59" and m.group(3) <= "59"


def _is_duration(value: str) -> bool:
    """Go's time.ParseDuration, or strfmt's `<n> <unit>` words (`3 days` is not, `3d` is)."""
    if value in ("0", "+0", "-0") or _DURATION_GO.match(value):
        return True
    found = False
    for number, unit in _DURATION_WORDS.findall(value):
        del number
        if unit not in _DURATION_UNITS:
            return False
        found = True
    return found


def _is_ipv4(value: str) -> bool:
    if "." not in value:
        return False
    try:
        ipaddress.ip_address(value if ":" in value else ".".join(str(int(p)) for p in value.split(".")))
    except ValueError:
        return False
    return True


def _is_ipv6(value: str) -> bool:
    try:
        return ipaddress.ip_address(value).version == 6
    except ValueError:
        return False


def _is_cidr(value: str) -> bool:
    try:
        ipaddress.ip_network(value, strict=False)
    except ValueError:
        return False
    return "/" in value


def _is_uri(value: str) -> bool:
    """govalidator.IsRequestURI: url.ParseRequestURI — absolute URI or an absolute path."""
    if not value or any(c in value for c in " \t\n\x7f"):
        return False
    if value.startswith("/"):
        return True
    try:
        parts = urlsplit(value)
    except ValueError:
        return False
    return bool(parts.scheme) and re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*", parts.scheme) is not None


def _is_hostname(value: str) -> bool:
    return bool(_HOSTNAME.match(value)) and len(value) <= 255 and all(len(p) <= 63 for p in value.split("."))


def _is_isbn10(value: str) -> bool:
    digits = re.sub(r"[\s-]", "", value)
    if not re.fullmatch(r"\d{9}[\dX]", digits):
        return False
    total = sum((10 - i) * (10 if c == "X" else int(c)) for i, c in enumerate(digits))
    return total % 11 == 0


def _is_isbn13(value: str) -> bool:
    digits = re.sub(r"[\s-]", "", value)
    if not re.fullmatch(r"\d{13}", digits):
        return False
    total = sum(int(c) * (1 if i % 2 == 0 else 3) for i, c in enumerate(digits[:12]))
    return (10 - total % 10) % 10 == int(digits[12])


def _is_creditcard(value: str) -> bool:
    digits = re.sub(r"[^0-9]", "", value)
    if not _CREDITCARD.match(digits):
        return False
    total, double = 0, False
    for c in reversed(digits):
        d = int(c) * (2 if double else 1)
        total += d - 9 if d > 9 else d
        double = not double
    return total % 10 == 0


def _is_base64(value: str) -> bool:
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


FORMATS: dict[str, Callable[[str], bool]] = {
    "bsonobjectid": lambda v: bool(_BSON.match(v)),
    "uri": _is_uri,
    "email": lambda v: bool(_EMAIL.match(v.strip())),
    "hostname": _is_hostname,
    "ipv4": _is_ipv4,
    "ipv6": _is_ipv6,
    "cidr": _is_cidr,
    "mac": lambda v: bool(_MAC.match(v)),
    "uuid": lambda v: bool(_UUID.match(v)),
    "uuid3": lambda v: bool(_UUID3.match(v)),
    "uuid4": lambda v: bool(_UUID4.match(v)),
    "uuid5": lambda v: bool(_UUID5.match(v)),
    "isbn": lambda v: _is_isbn10(v) or _is_isbn13(v),
    "isbn10": _is_isbn10,
    "isbn13": _is_isbn13,
    "creditcard": _is_creditcard,
    "ssn": lambda v: bool(_SSN.match(v)),
    "hexcolor": lambda v: bool(_HEXCOLOR.match(v)),
    "rgbcolor": lambda v: bool(_RGBCOLOR.match(v)),
    "byte": _is_base64,
    "password": lambda v: True,
    "date": _is_date,
    "duration": _is_duration,
    "datetime": _is_datetime,
    "k8sshortname": lambda v: len(v) <= 63 and bool(_SHORT_NAME.match(v)),
    "k8slongname": lambda v: len(v) <= 253 and bool(_LONG_NAME.match(v)),
}


def kept_format(schema_type: str, fmt: str) -> str:
    """The format upstream keeps for a schema of this type (`""` when it is dropped)."""
    if not fmt:
        return ""
    if schema_type in ("", "string"):
        return fmt if fmt.replace("-", "") in FORMATS else ""
    if schema_type == "integer":
        return fmt if fmt in ("int32", "int64") else ""
    if schema_type == "number":
        return fmt if fmt in ("float", "double") else ""
    return ""


def check(fmt: str, value: str) -> bool:
    """Whether `value` is in the (kept) string format `fmt`."""
    checker = FORMATS.get(fmt.replace("-", ""))
    return checker is None or checker(value)
