"""cp/allocation.py: the service ranges and the order dynamic allocation tries values in, as upstream's
ipallocator (MultiCIDRServiceAllocator) and portallocator."""

from __future__ import annotations

import ipaddress
import random

import pytest

from cp import allocation


def test_defaults_are_kube_apiservers() -> None:
    ranges = allocation.ServiceRanges()
    assert str(ranges.network) == "10.0.0.0/24"
    assert ranges.ports == (30000, 32767)
    assert ranges.first_ip() == "10.0.0.1"
    assert ranges.family == "IPv4"


def test_ip_candidates_cover_the_usable_range_upper_part_first() -> None:
    net = ipaddress.ip_network("10.0.0.0/24")
    tried = list(allocation.ip_candidates(net, random.Random(1)))
    assert len(tried) == len(set(tried)) == 254  # neither .0 nor the broadcast address
    assert "10.0.0.0" not in tried and "10.0.0.255" not in tried
    offset = allocation.ip_range_offset(net)
    assert offset == 16
    upper = tried[:254 - offset]
    assert all(int(ipaddress.ip_address(ip)) >= int(net.network_address) + 1 + offset for ip in upper)
    assert sorted(tried[254 - offset:], key=ipaddress.ip_address)[0] == "10.0.0.1"


def test_small_ranges_have_no_static_part() -> None:
    net = ipaddress.ip_network("10.0.0.0/29")
    assert allocation.ip_range_offset(net) == 0
    assert sorted(allocation.ip_candidates(net, random.Random(0))) == [f"10.0.0.{i}" for i in range(1, 7)]


def test_ipv6_ranges_use_their_last_address() -> None:
    net = allocation.parse_service_cidr("fd00::/120")
    assert allocation.in_range("fd00::ff", net)
    assert not allocation.in_range("fd00::", net)
    assert not allocation.in_range("10.0.0.1", net)
    with pytest.raises(ValueError, match="shortest allowed prefix length for service CIDR is 64"):
        allocation.parse_service_cidr("fd00::/48")


def test_port_candidates() -> None:
    lo, hi = 30000, 32767
    assert allocation.port_range_offset(lo, hi) == 86
    tried = list(allocation.port_candidates(lo, hi, random.Random(3)))
    assert sorted(tried) == list(range(lo, hi + 1))
    assert min(tried[:hi - lo + 1 - 86]) == lo + 86


@pytest.mark.parametrize(("text", "expected"), [("30000-32767", (30000, 32767)), ("8000+10", (8000, 8010)),
                                                ("9000", (9000, 9000))])
def test_port_range_syntax(text: str, expected: tuple[int, int]) -> None:
    assert allocation.parse_port_range(text) == expected


@pytest.mark.parametrize("text", ["a-b", "3-1", "70000-70001"])
def test_bad_port_ranges(text: str) -> None:
    with pytest.raises(ValueError):
        allocation.parse_port_range(text)


def test_range_messages() -> None:
    net = ipaddress.ip_network("10.0.0.0/24")
    assert allocation.not_in_ip_range("10.1.0.1", net) == (
        "the provided IP (10.1.0.1) is not in the valid range. The range of valid IPs is 10.0.0.0/24")
    full = allocation.ip_full().status()
    assert full["code"] == 500
    assert full["message"] == "Internal error occurred: failed to allocate a serviceIP: range is full"
