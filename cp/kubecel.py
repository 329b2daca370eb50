"""Kubernetes CEL libraries the Rust engine lacks: IP, CIDR, URL and named formats, plus the helpers
the CRD rules' rewritten expressions call (pure).

Behaviour follows `k8s.io/apiserver/pkg/cel/library` (ip.go, cidr.go, urls.go, format.go) and the
value types in `k8s.io/apiserver/pkg/cel` (ip.go, cidr.go, url.go, format.go):

- `ip(s)`, `isIP(s)`, `ip.isCanonical(s)` and the methods `family()`, `isUnspecified()`,
  `isLoopback()`, `isLinkLocalMulticast()`, `isLinkLocalUnicast()`, `isGlobalUnicast()`; addresses
  with a zone or IPv4-mapped IPv6 addresses are refused as upstream refuses them;
- `cidr(s)`, `isCIDR(s)` and `containsIP(ip|string)`, `containsCIDR(cidr|string)`, `ip()`,
  `masked()`, `prefixLength()`;
- `url(s)`, `isURL(s)` (Go's `url.ParseRequestURI`: an absolute URI or an absolute path) and
  `getScheme()`, `getHost()`, `getHostname()`, `getPort()`, `getEscapedPath()`, `getQuery()`;
- `format.named(name)` (an optional), `format.dns1123Label()` ... `format.datetime()` and
  `<format>.validate(s)`: none when valid, else the list of apimachinery's messages;
- `string(x)` of these values (`__k8s_string`, used when an expression uses them).

As in `cp.dra.celenv`, values travel through the engine as one-entry maps whose key names the type
(`{"__k8s_ip__": "10.0.0.1"}`), canonical so that `==` compares them by value.
"""

from __future__ import annotations

import datetime as _dt
import ipaddress
import re
import urllib.parse
import uuid as _uuid
from collections.abc import Callable
from typing import Any

from cel import OptionalValue

from cp import names

__all__ = ["FUNCTIONS", "HELPERS", "KubeCelError", "type_name"]

IPKEY, CIDRKEY, URLKEY, FMTKEY = "__k8s_ip__", "__k8s_cidr__", "__k8s_url__", "__k8s_format__"


class KubeCelError(Exception):
    """A library error; the message is what cel-go reports."""


def _is(x: Any, key: str) -> bool:
    return type(x) is dict and len(x) == 1 and key in x


def type_name(x: Any) -> str | None:
    """The CEL type name of a library value, or None for other values."""
    if type(x) is dict and len(x) == 1:
        key = next(iter(x))
        return {IPKEY: "net.IP", CIDRKEY: "net.CIDR", URLKEY: "kubernetes.URL",
                FMTKEY: "kubernetes.NamedFormat"}.get(key)
    return None


def _no_overload(fn: str) -> KubeCelError:
    return KubeCelError(f"no such overload: {fn}")


# ---------------------------------------------------------------------------------------------- IP


def _parse_ip(s: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """netip.ParseAddr, strict: no zones, no IPv4-mapped IPv6 addresses, no leading zeros."""
    if "%" in s:
        raise ValueError("IP Address with zone value is not allowed")
    addr = ipaddress.ip_address(s)
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        raise ValueError("IPv4-mapped IPv6 address is not allowed")
    return addr


def _ip(s: Any) -> dict[str, str]:
    if not isinstance(s, str):
        raise _no_overload("ip")
    try:
        addr = _parse_ip(s)
    except ValueError as e:
        raise KubeCelError(f"IP Address {s!r} parse error during conversion from string: {e}") from None
    return {IPKEY: str(addr)}


def _is_ip(s: Any) -> bool:
    if not isinstance(s, str):
        raise _no_overload("isIP")
    try:
        _parse_ip(s)
    except ValueError:
        return False
    return True


def _is_canonical(s: Any) -> bool:
    if not isinstance(s, str):
        raise _no_overload("ip.isCanonical")
    try:
        addr = _parse_ip(s)
    except ValueError as e:
        raise KubeCelError(f"IP Address {s!r} parse error during conversion from string: {e}") from None
    return str(addr) == s


def _addr(x: Any, fn: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    if not _is(x, IPKEY):
        raise _no_overload(fn)
    return ipaddress.ip_address(x[IPKEY])


def _family(x: Any) -> int:
    return _addr(x, "family").version


def _ip_predicate(name: str, test: Callable[[Any], bool]) -> Callable[[Any], bool]:
    def fn(x: Any) -> bool:
        return bool(test(_addr(x, name)))
    fn.__name__ = name
    return fn


def _global_unicast(a: Any) -> bool:
    """Go's IsGlobalUnicast: not unspecified, loopback, multicast, link-local, or IPv4 broadcast."""
    if a.is_unspecified or a.is_loopback or a.is_multicast or a.is_link_local:
        return False
    return not (a.version == 4 and str(a) == "255.255.255.255")


def _link_local_multicast(a: Any) -> bool:
    if a.version == 4:
        return a in ipaddress.ip_network("224.0.0.0/24")
    return a in ipaddress.ip_network("ff02::/16")


# -------------------------------------------------------------------------------------------- CIDR


def _parse_cidr(s: str) -> tuple[Any, int]:
    if "%" in s:
        raise ValueError("CIDR with zone value is not allowed")
    if "/" not in s:
        raise ValueError(f'netip.ParsePrefix("{s}"): no \'/\'')
    addr_s, bits_s = s.rsplit("/", 1)
    addr = _parse_ip(addr_s)
    if not bits_s.isdigit() or (len(bits_s) > 1 and bits_s[0] == "0"):
        raise ValueError(f'netip.ParsePrefix("{s}"): bad bits after slash: "{bits_s}"')
    bits = int(bits_s)
    if bits > addr.max_prefixlen:
        raise ValueError(f'netip.ParsePrefix("{s}"): prefix length out of range')
    return addr, bits


def _cidr(s: Any) -> dict[str, str]:
    if not isinstance(s, str):
        raise _no_overload("cidr")
    try:
        addr, bits = _parse_cidr(s)
    except ValueError as e:
        raise KubeCelError(f"network address parse error during conversion from string: {e}") from None
    return {CIDRKEY: f"{addr}/{bits}"}


def _is_cidr(s: Any) -> bool:
    if not isinstance(s, str):
        raise _no_overload("isCIDR")
    try:
        _parse_cidr(s)
    except ValueError:
        return False
    return True


def _net(x: Any, fn: str) -> tuple[Any, int]:
    if not _is(x, CIDRKEY):
        raise _no_overload(fn)
    return _parse_cidr(x[CIDRKEY])


def _contains_ip(c: Any, x: Any) -> bool:
    addr, bits = _net(c, "containsIP")
    other = _ip(x) if isinstance(x, str) else x
    ip = _addr(other, "containsIP")
    if ip.version != addr.version:
        return False
    return ip in ipaddress.ip_network(f"{addr}/{bits}", strict=False)


def _contains_cidr(c: Any, x: Any) -> bool:
    addr, bits = _net(c, "containsCIDR")
    other = _cidr(x) if isinstance(x, str) else x
    oaddr, obits = _net(other, "containsCIDR")
    if oaddr.version != addr.version or obits < bits:
        return False
    return oaddr in ipaddress.ip_network(f"{addr}/{bits}", strict=False)


def _cidr_ip(c: Any) -> dict[str, str]:
    addr, _ = _net(c, "ip")
    return {IPKEY: str(addr)}


def _masked(c: Any) -> dict[str, str]:
    addr, bits = _net(c, "masked")
    return {CIDRKEY: str(ipaddress.ip_network(f"{addr}/{bits}", strict=False))}


def _prefix_length(c: Any) -> int:
    return _net(c, "prefixLength")[1]


def _ip_or_cidr(x: Any) -> Any:
    """`ip(s)` or, on a CIDR, its address (`cidr.ip()`)."""
    if _is(x, CIDRKEY):
        return _cidr_ip(x)
    return _ip(x)


# --------------------------------------------------------------------------------------------- URL


def _parse_request_uri(s: str) -> urllib.parse.SplitResult:
    """Go's url.ParseRequestURI: an absolute URI (scheme:...) or a path starting with '/'."""
    if not s:
        raise ValueError(f'parse "{s}": empty url')
    if any(ord(c) < 0x20 or c == "\x7f" for c in s):
        raise ValueError(f'parse "{s}": net/url: invalid control character in URL')
    m = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*):", s)
    if m is None:
        if s.startswith("/"):
            return urllib.parse.urlsplit(s)
        raise ValueError(f'parse "{s}": invalid URI for request')
    parts = urllib.parse.urlsplit(s)
    rest = s[m.end():]
    if rest and not rest.startswith("/"):
        # an opaque URL: ParseRequestURI refuses a relative path after the scheme
        raise ValueError(f'parse "{s}": invalid URI for request')
    host = parts.netloc.rsplit("@", 1)[-1]
    port = host[host.find("]") + 1:] if host.startswith("[") else host[host.find(":"):] if ":" in host else ""
    if port and not ((port.startswith(":") and port[1:].isdigit()) or port == ":"):
        raise ValueError(f'parse "{s}": invalid port "{port[port.rfind(":"):]}" after host')
    return parts


def _url(s: Any) -> dict[str, str]:
    if not isinstance(s, str):
        raise _no_overload("url")
    try:
        _parse_request_uri(s)
    except ValueError as e:
        raise KubeCelError(f"URL parse error during conversion from string: {e}") from None
    return {URLKEY: s}


def _is_url(s: Any) -> bool:
    if not isinstance(s, str):
        raise _no_overload("isURL")
    try:
        _parse_request_uri(s)
    except ValueError:
        return False
    return True


def _u(x: Any, fn: str) -> urllib.parse.SplitResult:
    if not _is(x, URLKEY):
        raise _no_overload(fn)
    return urllib.parse.urlsplit(str(x[URLKEY]))


def _get_scheme(x: Any) -> str:
    return _u(x, "getScheme").scheme


def _get_host(x: Any) -> str:
    netloc = _u(x, "getHost").netloc
    return netloc.rsplit("@", 1)[-1]


def _get_hostname(x: Any) -> str:
    host = _get_host(x)
    if host.startswith("["):
        return host[1:host.find("]")]
    return host.rsplit(":", 1)[0] if ":" in host else host


def _get_port(x: Any) -> str:
    host = _get_host(x)
    if host.startswith("["):
        rest = host[host.find("]") + 1:]
        return rest[1:] if rest.startswith(":") else ""
    return host.rsplit(":", 1)[1] if ":" in host else ""


def _get_escaped_path(x: Any) -> str:
    """URL.EscapedPath: the path with the characters Go escapes in a path percent-encoded."""
    return urllib.parse.quote(_u(x, "getEscapedPath").path, safe="/:@&=+$,;!*'()~%")


def _get_query(x: Any) -> dict[str, list[str]]:
    return urllib.parse.parse_qs(_u(x, "getQuery").query, keep_blank_values=True)


# ------------------------------------------------------------------------------------------ format

def _prefix(fn: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
    """apimachinery's NameIs... with prefix=true: a trailing '-' is allowed (a generateName)."""
    def check(value: str) -> list[str]:
        # maskTrailingDash: the last two characters become "a"
        return fn(value[:-2] + "a" if len(value) > 1 and value.endswith("-") else value)
    return check


def _qualified_name(value: str) -> list[str]:
    return names.is_qualified_name(value, what="a qualified name")


def _uuid_check(value: str) -> list[str]:
    try:
        _uuid.UUID(value)
    except ValueError:
        return ["does not match the UUID format"]
    return []


def _byte_check(value: str) -> list[str]:
    import base64
    import binascii
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return ["invalid base64"]
    return []


def _date_check(value: str) -> list[str]:
    try:
        _dt.date.fromisoformat(value)
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            raise ValueError
    except ValueError:
        return ["invalid date"]
    return []


def _datetime_check(value: str) -> list[str]:
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})", value):
        return ["invalid datetime"]
    try:
        _dt.datetime.fromisoformat(value.replace("z", "Z").replace("Z", "+00:00").replace("t", "T"))
    except ValueError:
        return ["invalid datetime"]
    return []


def _uri_check(value: str) -> list[str]:
    try:
        _parse_request_uri(value)
    except ValueError:
        return ["invalid URI"]
    return []


_FORMATS: dict[str, Callable[[str], list[str]]] = {
    "dns1123Label": names.is_dns1123_label,
    "dns1123Subdomain": names.is_dns1123_subdomain,
    "dns1035Label": names.is_dns1035_label,
    "qualifiedName": _qualified_name,
    "dns1123LabelPrefix": _prefix(names.is_dns1123_label),
    "dns1123SubdomainPrefix": _prefix(names.is_dns1123_subdomain),
    "dns1035LabelPrefix": _prefix(names.is_dns1035_label),
    "labelValue": names.is_label_value,
    "uri": _uri_check,
    "uuid": _uuid_check,
    "byte": _byte_check,
    "date": _date_check,
    "datetime": _datetime_check,
}


def _format_named(name: Any) -> OptionalValue:
    if not isinstance(name, str):
        raise _no_overload("format.named")
    if name not in _FORMATS:
        return OptionalValue.none()
    return OptionalValue.of({FMTKEY: name})


def _format_fn(name: str) -> Callable[[], dict[str, str]]:
    def fn() -> dict[str, str]:
        return {FMTKEY: name}
    fn.__name__ = name
    return fn


def _validate(fmt: Any, value: Any) -> OptionalValue:
    if not _is(fmt, FMTKEY) or not isinstance(value, str):
        raise _no_overload("validate")
    errs = _FORMATS[fmt[FMTKEY]](value)
    return OptionalValue.of(errs) if errs else OptionalValue.none()


# ----------------------------------------------------------------------------------- the helpers


def _k8s_string(x: Any) -> Any:
    """`string(x)` as cel-go converts: library values by their text, booleans, durations as seconds
    (`3723.004s`), timestamps in RFC 3339 with their offset, everything else as the engine does."""
    if type(x) is dict and len(x) == 1:
        key = next(iter(x))
        if key in (IPKEY, CIDRKEY, URLKEY):
            return x[key]
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, str):
        return x
    if isinstance(x, int):
        return str(x)
    if isinstance(x, float):
        return _go_float(x)
    if isinstance(x, bytes):
        try:
            return x.decode("utf-8")
        except UnicodeDecodeError:
            raise KubeCelError("invalid UTF-8 in bytes, cannot convert to string") from None
    if isinstance(x, _dt.datetime):
        return rfc3339(x)
    if isinstance(x, _dt.timedelta):
        return duration_string(x)
    raise _no_overload("string")


def _go_float(x: float) -> str:
    """strconv.FormatFloat(x, 'g', -1, 64) as cel-go's double-to-string."""
    if x != x:
        return "NaN"
    if x in (float("inf"), float("-inf")):
        return "+Inf" if x > 0 else "-Inf"
    text = repr(x)
    if "e" in text:
        mant, exp = text.split("e")
        sign = "-" if exp.startswith("-") else "+"
        digits = exp.lstrip("+-").rjust(2, "0")
        return f"{mant}e{sign}{digits}"
    return text[:-2] if text.endswith(".0") else text


def duration_string(d: _dt.timedelta) -> str:
    """A google.protobuf.Duration as cel-go prints it: seconds with up to 9 decimals and `s`."""
    micros = (d.days * 86400 + d.seconds) * 1_000_000 + d.microseconds
    sign = "-" if micros < 0 else ""
    micros = abs(micros)
    secs, frac = divmod(micros, 1_000_000)
    if not frac:
        return f"{sign}{secs}s"
    return f"{sign}{secs}.{str(frac).rjust(6, '0').rstrip('0')}s"


def rfc3339(t: _dt.datetime) -> str:
    """time.RFC3339Nano: fractional seconds without trailing zeros, `Z` for UTC."""
    base = t.strftime("%Y-%m-%dT%H:%M:%S")
    if t.microsecond:
        base += "." + str(t.microsecond).rjust(6, "0").rstrip("0")
    off = t.utcoffset()
    if off is None or off == _dt.timedelta(0):
        return base + "Z"
    total = int(off.total_seconds())
    sign = "+" if total >= 0 else "-"
    total = abs(total)
    return f"{base}{sign}{total // 3600:02d}:{total % 3600 // 60:02d}"


def _k8s_size(x: Any) -> int:
    """size(): code points of a string (the engine counts UTF-8 bytes), else the length."""
    if isinstance(x, (str, bytes, list, dict)):
        return len(x)
    raise _no_overload("size")


def _zone(t: Any, tz: Any) -> _dt.datetime:
    if not isinstance(t, _dt.datetime) or not isinstance(tz, str):
        raise _no_overload("timestamp accessor")
    m = re.fullmatch(r"([+-]?)(\d{1,2}):(\d{2})", tz)
    if m:
        delta = _dt.timedelta(hours=int(m.group(2)), minutes=int(m.group(3)))
        return t.astimezone(_dt.timezone(-delta if m.group(1) == "-" else delta))
    if tz == "UTC":
        return t.astimezone(_dt.UTC)
    try:
        from zoneinfo import ZoneInfo
        return t.astimezone(ZoneInfo(tz))
    except Exception:
        raise KubeCelError(f"unknown time zone {tz}") from None


def _getter(name: str, part: Callable[[_dt.datetime], int]) -> Callable[..., int]:
    """The timestamp accessors with a time zone argument (`t.getHours('01:00')`); the engine
    answers the forms without one."""
    def get(t: Any, tz: Any = "UTC") -> int:
        return part(_zone(t, tz))
    get.__name__ = name
    return get


_GETTERS: dict[str, Callable[..., int]] = {
    "getFullYear": _getter("getFullYear", lambda t: t.year),
    "getMonth": _getter("getMonth", lambda t: t.month - 1),
    "getDate": _getter("getDate", lambda t: t.day),
    "getDayOfMonth": _getter("getDayOfMonth", lambda t: t.day - 1),
    "getDayOfWeek": _getter("getDayOfWeek", lambda t: (t.weekday() + 1) % 7),
    "getDayOfYear": _getter("getDayOfYear", lambda t: t.timetuple().tm_yday - 1),
    "getHours": _getter("getHours", lambda t: t.hour),
    "getMinutes": _getter("getMinutes", lambda t: t.minute),
    "getSeconds": _getter("getSeconds", lambda t: t.second),
    "getMilliseconds": _getter("getMilliseconds", lambda t: t.microsecond // 1000),
}


def _format(template: Any, args: Any) -> str:
    """strings.format (cel-go ext strings v2+): %s %d %f %e %b %o %x %X %%, with %.Nf precision."""
    if not isinstance(template, str) or not isinstance(args, list):
        raise _no_overload("format")
    out: list[str] = []
    i = n = 0
    while i < len(template):
        c = template[i]
        if c != "%":
            out.append(c)
            i += 1
            continue
        m = re.compile(r"%(?:\.(\d+))?([sdfebox%X])").match(template, i)
        if m is None:
            raise KubeCelError(f"could not parse formatting clause: unrecognized formatting clause \"{template[i:i + 2]}\"")
        i = m.end()
        verb, prec = m.group(2), m.group(1)
        if verb == "%":
            out.append("%")
            continue
        if n >= len(args):
            raise KubeCelError(f"index {n} out of range")
        v = args[n]
        n += 1
        if verb == "s":
            out.append(v if isinstance(v, str) else _k8s_string(v) if not isinstance(v, (list, dict)) else
                       "[" + ", ".join(_k8s_string(x) for x in v) + "]" if isinstance(v, list) else str(v))
        elif verb == "d":
            out.append(str(int(v)))
        elif verb == "f":
            out.append(f"{float(v):.{int(prec) if prec else 6}f}")
        elif verb == "e":
            mant, exp = f"{float(v):.{int(prec) if prec else 6}e}".split("e")
            sup = str.maketrans("0123456789-+", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺")
            out.append(f"{mant}\u00d710{exp.lstrip('+').translate(sup).rjust(2, '⁰')}")
        elif verb == "b":
            out.append(format(int(v), "b"))
        elif verb == "o":
            out.append(format(int(v), "o"))
        else:
            text = v.encode().hex() if isinstance(v, str) else (v.hex() if isinstance(v, bytes) else format(int(v), "x"))
            out.append(text.upper() if verb == "X" else text)
    return "".join(out)


def _sort_by(items: Any, keys: Any) -> list[Any]:
    """`l.sortBy(e, key)`: `l` ordered by the keys computed per element (stable)."""
    if not isinstance(items, list) or not isinstance(keys, list):
        raise _no_overload("sortBy")
    order = sorted(range(len(items)), key=lambda i: keys[i])
    return [items[i] for i in order]


def _slice(items: Any, start: Any, end: Any) -> list[Any]:
    if not isinstance(items, list) or not isinstance(start, int) or not isinstance(end, int):
        raise _no_overload("slice")
    if start < 0 or end < 0:
        raise KubeCelError(f"cannot slice({start}, {end}), negative indexes not supported")
    if start > end:
        raise KubeCelError(f"cannot slice({start}, {end}), start index must be less than or equal to end index")
    if end > len(items):
        raise KubeCelError(f"cannot slice({start}, {end}), list is length {len(items)}")
    return items[start:end]


def _flatten(items: Any, depth: Any = 1) -> list[Any]:
    if not isinstance(items, list) or not isinstance(depth, int):
        raise _no_overload("flatten")
    if depth < 0:
        raise KubeCelError("level must be non-negative")
    out: list[Any] = []
    for x in items:
        if isinstance(x, list) and depth > 0:
            out.extend(_flatten(x, depth - 1))
        else:
            out.append(x)
    return out


def _opt_select(x: Any, name: str) -> OptionalValue:
    """`x.?name`: none when x is none or has no such field."""
    if isinstance(x, OptionalValue):
        if not x.has_value():
            return x
        x = x.value()
    if isinstance(x, dict):
        return OptionalValue.of(x[name]) if name in x else OptionalValue.none()
    raise _no_overload("_?._")


def _opt_index(x: Any, key: Any) -> OptionalValue:
    """`x[?key]`: none when x is none or lacks the key or index."""
    if isinstance(x, OptionalValue):
        if not x.has_value():
            return x
        x = x.value()
    if isinstance(x, dict):
        return OptionalValue.of(x[key]) if key in x else OptionalValue.none()
    if isinstance(x, list):
        if isinstance(key, int) and not isinstance(key, bool) and 0 <= key < len(x):
            return OptionalValue.of(x[key])
        return OptionalValue.none()
    raise _no_overload("_[?_]")


def _opt_list(items: list[Any]) -> list[Any]:
    """`[a, ?b]`: optional elements are included when they have a value."""
    out: list[Any] = []
    for value, optional in items:
        if optional:
            if not isinstance(value, OptionalValue):
                raise _no_overload("optional list element")
            if value.has_value():
                out.append(value.value())
        else:
            out.append(value)
    return out


def _opt_map(entries: list[Any]) -> dict[Any, Any]:
    """`{k: v, ?k2: opt}`: optional entries are included when they have a value."""
    out: dict[Any, Any] = {}
    for key, value, optional in entries:
        if optional:
            if not isinstance(value, OptionalValue):
                raise _no_overload("optional map entry")
            if value.has_value():
                out[key] = value.value()
        else:
            out[key] = value
    return out


def _entries(x: Any) -> list[list[Any]]:
    """[index or key, value] pairs of a list or a map (the two-variable comprehensions' range)."""
    if isinstance(x, list):
        return [[i, v] for i, v in enumerate(x)]
    if isinstance(x, dict):
        return [[k, v] for k, v in x.items()]
    raise _no_overload("comprehension range")


def _from_entries(pairs: list[list[Any]]) -> dict[Any, Any]:
    return {k: v for k, v in pairs}


def _merge_maps(maps: list[Any]) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    for m in maps:
        if not isinstance(m, dict):
            raise _no_overload("transformMapEntry")
        for k, v in m.items():
            if k in out:
                raise KubeCelError(f"insert failed: key {k} already exists")
            out[k] = v
    return out


def _same(a: Any, b: Any) -> bool:
    """CEL equality of engine values (booleans are not numbers)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(v, b[k]) for k, v in a.items())
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _includes(target: Any, arg: Any) -> bool:
    """`x.includes(y)` (Kubernetes lists library v1): membership in a list, else equality."""
    if isinstance(target, list):
        return any(_same(item, arg) for item in target)
    return _same(target, arg)


def _list_key(item: Any, keys: list[str]) -> tuple[Any, ...]:
    return tuple(repr(item.get(k)) if isinstance(item, dict) else repr(item) for k in keys)


def _list_eq(a: Any, b: Any, mode: str, keys: list[str]) -> bool:
    """`==` on an x-kubernetes-list-type set (any order) or map (items matched by their keys) list."""
    if not isinstance(a, list) or not isinstance(b, list):
        raise _no_overload("_==_")
    if len(a) != len(b):
        return False
    if mode == "set":
        return all(any(_same(x, y) for y in a) for x in b)
    index = {_list_key(item, keys): item for item in a}
    for item in b:
        mine = index.get(_list_key(item, keys))
        if mine is None or not _same(mine, item):
            return False
    return True


def _list_add(a: Any, b: Any, mode: str, keys: list[str]) -> list[Any]:
    """`+` on a set list (the union, in order) or a map list (items of `b` replace those of `a` with the
    same keys, in place; others are appended)."""
    if not isinstance(a, list) or not isinstance(b, list):
        raise _no_overload("_+_")
    out = list(a)
    if mode == "set":
        for x in b:
            if not any(_same(x, y) for y in out):
                out.append(x)
        return out
    where = {_list_key(item, keys): i for i, item in enumerate(out)}
    for item in b:
        k = _list_key(item, keys)
        if k in where:
            out[where[k]] = item
        else:
            where[k] = len(out)
            out.append(item)
    return out


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "ip": _ip_or_cidr,
    "isIP": _is_ip,
    "ip.isCanonical": _is_canonical,
    "family": _family,
    "isUnspecified": _ip_predicate("isUnspecified", lambda a: a.is_unspecified),
    "isLoopback": _ip_predicate("isLoopback", lambda a: a.is_loopback),
    "isLinkLocalMulticast": _ip_predicate("isLinkLocalMulticast", _link_local_multicast),
    "isLinkLocalUnicast": _ip_predicate("isLinkLocalUnicast", lambda a: a.is_link_local and not a.is_multicast),
    "isGlobalUnicast": _ip_predicate("isGlobalUnicast", _global_unicast),
    "cidr": _cidr,
    "isCIDR": _is_cidr,
    "containsIP": _contains_ip,
    "containsCIDR": _contains_cidr,
    "masked": _masked,
    "prefixLength": _prefix_length,
    "url": _url,
    "isURL": _is_url,
    "getScheme": _get_scheme,
    "getHost": _get_host,
    "getHostname": _get_hostname,
    "getPort": _get_port,
    "getEscapedPath": _get_escaped_path,
    "getQuery": _get_query,
    "format.named": _format_named,
    "validate": _validate,
    **{f"format.{name}": _format_fn(name) for name in _FORMATS},
    "format": _format,
    "slice": _slice,
    "flatten": _flatten,
    **_GETTERS,
}
"""Kubernetes library functions, by the name the engine calls them (methods receive the target first)."""

HELPERS: dict[str, Callable[..., Any]] = {
    "__k8s_string": _k8s_string,
    "__k8s_size": _k8s_size,
    "__k8s_sort_by": _sort_by,
    "__k8s_opt_select": _opt_select,
    "__k8s_opt_index": _opt_index,
    "__k8s_opt_list": _opt_list,
    "__k8s_opt_map": _opt_map,
    "__k8s_entries": _entries,
    "__k8s_from_entries": _from_entries,
    "__k8s_merge_maps": _merge_maps,
    "__k8s_list_eq": _list_eq,
    "__k8s_includes": _includes,
    "__k8s_list_add": _list_add,
}
"""The functions `cp.crd.celast.render` calls in rewritten expressions."""
