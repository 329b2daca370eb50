"""IP addresses and CIDRs as apimachinery's `validation/ip.go` checks them. Pure.

Go parses leniently first (`netutils.ParseIPSloppy`: IPv4 octets may have leading zeros, read as
decimal) and then, for strict fields, re-parses with `net/netip` rules (no leading zeros, no
IPv4-mapped IPv6 addresses) and asks for the canonical form. Python's `ipaddress` is stricter than the
sloppy parser and formats IPv4-mapped addresses differently, so both steps are written out here.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any

from cp.errors import Cause

_DIGITS = re.compile(r"^[0-9]+$")
_IP_MSG = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
_CIDR_MSG = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"


def _ipv4_sloppy(text: str) -> ipaddress.IPv4Address | None:
    parts = text.split(".")
    if len(parts) != 4 or not all(_DIGITS.match(p) for p in parts):
        return None
    octets = [int(p) for p in parts]
    if any(o > 255 for o in octets):
        return None
    return ipaddress.IPv4Address(bytes(octets))


def parse_ip_sloppy(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """`netutils.ParseIPSloppy`: an address, or None. An IPv4-mapped IPv6 address stays IPv6 here."""
    if not isinstance(text, str) or not text or "%" in text:
        return None
    if ":" not in text:
        return _ipv4_sloppy(text)
    head, _, tail = text.rpartition(":")
    if "." in tail:  # an embedded IPv4 address may have leading zeros too
        embedded = _ipv4_sloppy(tail)
        if embedded is None:
            return None
        text = f"{head}:{embedded}"
    try:
        return ipaddress.IPv6Address(text)
    except ValueError:
        return None


def _is_4in6(addr: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    return isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None


def go_ip_string(addr: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    """Go's `net.IP.String()`: an IPv4-mapped IPv6 address prints as IPv4."""
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return str(addr.ipv4_mapped)
    return addr.compressed


def _strict_ip_problems(text: str, addr: ipaddress.IPv4Address | ipaddress.IPv6Address) -> list[str]:
    out = []
    try:
        ipaddress.ip_address(text)
    except ValueError:
        out.append("must not have leading 0s")
    if _is_4in6(addr):
        out.append("must not be an IPv4-mapped IPv6 address")
    return out


def ip_family(text: str) -> int:
    """4 or 6 for a (sloppily) valid address, 0 otherwise (IPv4-mapped addresses count as IPv4)."""
    addr = parse_ip_sloppy(text)
    if addr is None:
        return 0
    return 4 if isinstance(addr, ipaddress.IPv4Address) or _is_4in6(addr) else 6


def is_valid_ip(path: str, value: str) -> list[Cause]:
    """`IsValidIP`: a strictly valid IP in canonical form."""
    addr = parse_ip_sloppy(value)
    if addr is None:
        return [Cause("Invalid", path, _IP_MSG, value)]
    problems = _strict_ip_problems(value, addr)
    if problems:
        return [Cause("Invalid", path, p, value) for p in problems]
    canonical = go_ip_string(addr)
    if value != canonical:
        return [Cause("Invalid", path, f'must be in canonical form ("{canonical}")', value)]
    return []


def is_valid_ip_for_legacy_field(path: str, value: str, *, strict: bool, valid_old: list[str] | None = None
                                 ) -> list[Cause]:
    """`IsValidIPForLegacyField`: values already stored are accepted as they are."""
    if valid_old and value in valid_old:
        return []
    addr = parse_ip_sloppy(value)
    if addr is None:
        return [Cause("Invalid", path, _IP_MSG, value)]
    return [Cause("Invalid", path, p, value) for p in _strict_ip_problems(value, addr)] if strict else []


def parse_cidr_sloppy(text: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    """`netutils.ParseCIDRSloppy`: the network (host bits cleared), or None."""
    if not isinstance(text, str) or "/" not in text:
        return None
    ip_text, _, bits = text.partition("/")
    addr = _ipv4_sloppy(ip_text) if ":" not in ip_text else parse_ip_sloppy(ip_text)
    if addr is None or not _DIGITS.match(bits):
        return None
    prefix = int(bits)
    if prefix > addr.max_prefixlen:
        return None
    return ipaddress.ip_network(f"{addr}/{prefix}", strict=False)


def _go_cidr_string(net: ipaddress.IPv4Network | ipaddress.IPv6Network) -> str:
    return f"{go_ip_string(net.network_address)}/{net.prefixlen}"


def _strict_cidr_problems(text: str, net: ipaddress.IPv4Network | ipaddress.IPv6Network) -> list[str]:
    ip_text, _, bits = text.partition("/")
    try:
        addr = ipaddress.ip_address(ip_text)
    except ValueError:
        return ["must not have leading 0s in IP or prefix length"]
    if bits != str(int(bits)):
        return ["must not have leading 0s in IP or prefix length"]
    if _is_4in6(addr):
        return ["must not have an IPv4-mapped IPv6 address"]
    if addr != net.network_address:
        return ["must not have bits set beyond the prefix length"]
    return []


def is_valid_cidr(path: str, value: str) -> list[Cause]:
    """`IsValidCIDR`: a strictly valid CIDR in canonical form."""
    net = parse_cidr_sloppy(value)
    if net is None:
        return [Cause("Invalid", path, _CIDR_MSG, value)]
    problems = _strict_cidr_problems(value, net)
    if problems:
        return [Cause("Invalid", path, p, value) for p in problems]
    canonical = _go_cidr_string(net)
    if value != canonical:
        return [Cause("Invalid", path, f'must be in canonical form ("{canonical}")', value)]
    return []


def is_valid_cidr_for_legacy_field(path: str, value: str, *, strict: bool, valid_old: list[str] | None = None
                                   ) -> list[Cause]:
    """`IsValidCIDRForLegacyField`: values already stored are accepted as they are."""
    if valid_old and value in valid_old:
        return []
    net = parse_cidr_sloppy(value)
    if net is None:
        return [Cause("Invalid", path, _CIDR_MSG, value)]
    return [Cause("Invalid", path, p, value) for p in _strict_cidr_problems(value, net)] if strict else []


def cidr_family(text: Any) -> int:
    """4 or 6 for a (sloppily) valid CIDR, 0 otherwise (`netutils.IPFamilyOfCIDRString`)."""
    net = parse_cidr_sloppy(text) if isinstance(text, str) else None
    if net is None:
        return 0
    if isinstance(net, ipaddress.IPv6Network) and net.network_address.ipv4_mapped is not None:
        return 4
    return net.version
