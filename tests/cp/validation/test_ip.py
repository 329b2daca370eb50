"""cp/validation/ip.py: IP and CIDR values as apimachinery's ip.go judges them (sloppy parse first, then
the strict and canonical-form rules), with its messages."""

from __future__ import annotations

import pytest

from cp.validation import ip

IP_MSG = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
CIDR_MSG = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"


def details(causes: list) -> list[str]:
    return [c.detail for c in causes]


@pytest.mark.parametrize(("value", "expected"), [
    ("10.0.0.1", []),
    ("2001:db8::1", []),
    ("010.0.0.1", ["must not have leading 0s"]),
    ("::ffff:10.0.0.1", ["must not be an IPv4-mapped IPv6 address"]),
    ("2001:DB8::1", ['must be in canonical form ("2001:db8::1")']),
    ("2001:db8:0:0:0:0:0:1", ['must be in canonical form ("2001:db8::1")']),
    ("10.0.0.256", [IP_MSG]),
    ("fe80::1%eth0", [IP_MSG]),
    ("", [IP_MSG]),
])
def test_is_valid_ip(value: str, expected: list[str]) -> None:
    assert details(ip.is_valid_ip("f", value)) == expected


def test_legacy_ip_fields_accept_stored_values_and_sloppy_ones_when_not_strict() -> None:
    assert details(ip.is_valid_ip_for_legacy_field("f", "010.0.0.1", strict=True)) == ["must not have leading 0s"]
    assert ip.is_valid_ip_for_legacy_field("f", "010.0.0.1", strict=False) == []
    assert ip.is_valid_ip_for_legacy_field("f", "010.0.0.1", strict=True, valid_old=["010.0.0.1"]) == []


@pytest.mark.parametrize(("value", "expected"), [
    ("10.0.0.0/8", []),
    ("fd00::/64", []),
    ("10.0.0.1/8", ["must not have bits set beyond the prefix length"]),
    ("10.0.0.0/08", ["must not have leading 0s in IP or prefix length"]),
    ("010.0.0.0/8", ["must not have leading 0s in IP or prefix length"]),
    ("fd00:0::/64", ['must be in canonical form ("fd00::/64")']),
    ("10.0.0.0/33", [CIDR_MSG]),
    ("10.0.0.0", [CIDR_MSG]),
])
def test_is_valid_cidr(value: str, expected: list[str]) -> None:
    assert details(ip.is_valid_cidr("f", value)) == expected


def test_families() -> None:
    assert (ip.ip_family("10.0.0.1"), ip.ip_family("::1"), ip.ip_family("::ffff:1.2.3.4"), ip.ip_family("x")) == \
        (4, 6, 4, 0)
    assert (ip.cidr_family("10.0.0.0/8"), ip.cidr_family("fd00::/8"), ip.cidr_family("nope")) == (4, 6, 0)
