"""Service cluster IPs and node ports: the ranges and the order in which free values are tried, as
kube-apiserver's allocators (`pkg/registry/core/service/ipallocator`, the IPAddress-backed allocator of
the MultiCIDRServiceAllocator, and `pkg/registry/core/service/portallocator`). Pure: which values are
taken is the caller's (the server keeps one IPAddress object per allocated IP, and reads node ports from
the stored Services).

Both ranges are split (KEP-3070, KEP-3668): dynamic allocation starts at a random place in the upper
part of the range and falls back to the lower part, which stays mostly free for values users ask for.
"""

from __future__ import annotations

import ipaddress
import random
from collections.abc import Iterator

import msgspec

from cp import errors

DEFAULT_SERVICE_CIDR = "10.0.0.0/24"  # kube-apiserver's --service-cluster-ip-range default
DEFAULT_NODE_PORT_RANGE = "30000-32767"  # --service-node-port-range
DEFAULT_SERVICE_CIDR_NAME = "kubernetes"  # the ServiceCIDR object the server keeps for its range
MANAGED_BY = "ipallocator.k8s.io"
LABEL_MANAGED_BY = "ipaddress.kubernetes.io/managed-by"
LABEL_IP_FAMILY = "ipaddress.kubernetes.io/ip-family"

# Errors of the allocators, in upstream's words.
IP_ALLOCATED = "provided IP is already allocated"
PORT_ALLOCATED = "provided port is already allocated"
RANGE_FULL = "range is full"

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class ServiceRanges(msgspec.Struct, frozen=True, kw_only=True):
    """The server's service ranges: `--service-cluster-ip-range` and `--service-node-port-range`."""

    cluster_ip_range: str = DEFAULT_SERVICE_CIDR
    node_port_range: str = DEFAULT_NODE_PORT_RANGE

    @property
    def network(self) -> Network:
        return parse_service_cidr(self.cluster_ip_range)

    @property
    def ports(self) -> tuple[int, int]:
        return parse_port_range(self.node_port_range)

    @property
    def family(self) -> str:
        return "IPv6" if self.network.version == 6 else "IPv4"

    def first_ip(self) -> str:
        """The first usable address: the `kubernetes` Service's (kube-apiserver's default service IP)."""
        return str(first_address(self.network))


def parse_service_cidr(text: str) -> Network:
    """A CIDR as `--service-cluster-ip-range` accepts it (ValueError otherwise)."""
    net = ipaddress.ip_network(text.strip(), strict=False)
    if net.version == 6 and net.prefixlen < 64:
        raise ValueError(f"shortest allowed prefix length for service CIDR is 64, got {net.prefixlen}")
    if int(first_address(net)) > int(last_address(net)):
        raise ValueError(f"the service CIDR {text} holds no usable address")
    return net


def parse_port_range(text: str) -> tuple[int, int]:
    """`--service-node-port-range`: "BASE-END" (inclusive) or "BASE+SIZE", as utilnet.ParsePortRange."""
    value = text.strip()
    try:
        if "+" in value:
            base_s, size_s = value.split("+", 1)
            base = int(base_s)
            end = base + int(size_s)
        else:
            base_s, _, end_s = value.partition("-")
            base = int(base_s)
            end = int(end_s) if end_s else base
    except ValueError:
        raise ValueError(f"unable to parse port range: {text}") from None
    if not 0 <= base <= end <= 65535:
        raise ValueError(f"invalid port range: {text}")
    return base, end


def first_address(net: Network) -> Address:
    """The network's ".0" address is never allocated."""
    return net.network_address + 1


def last_address(net: Network) -> Address:
    """The broadcast address is not allocated for IPv4 (IPv6 has none)."""
    return net.broadcast_address - 1 if net.version == 4 else net.broadcast_address


def _offset(size: int, *, low: int, high: int, step: int) -> int:
    """How many values at the start of a range are kept for static allocation."""
    if size < low:
        return 0
    return max(low, min(high, size // step))


def ip_range_offset(net: Network) -> int:
    return _offset(net.num_addresses, low=16, high=256, step=16)


def port_range_offset(lo: int, hi: int) -> int:
    return _offset(hi - lo + 1, low=16, high=128, step=32)


def in_range(ip: str, net: Network) -> bool:
    try:
        addr = ipaddress.ip_address(ip)
    except ValueError:
        return False
    return addr.version == net.version and int(first_address(net)) <= int(addr) <= int(last_address(net))


def not_in_ip_range(ip: str, net: Network) -> str:
    return f"the provided IP ({ip}) is not in the valid range. The range of valid IPs is {net}"


def not_in_port_range(lo: int, hi: int) -> str:
    return f"provided port is not in the valid range. The range of valid ports is {lo}-{hi}"


def _rotated(first: int, last: int, rng: random.Random) -> Iterator[int]:
    """Every integer of [first, last], from a random one onwards, wrapping around."""
    if last < first:
        return
    size = last - first + 1
    start = rng.randrange(size)
    for i in range(size):
        yield first + (start + i) % size


def ip_candidates(net: Network, rng: random.Random) -> Iterator[str]:
    """The addresses a dynamic allocation tries, in order: the upper part from a random place, then the
    lower part (upstream's `allocateNextService`)."""
    first = int(first_address(net))
    last = int(last_address(net))
    offset = ip_range_offset(net)
    cls = ipaddress.IPv4Address if net.version == 4 else ipaddress.IPv6Address
    for value in _rotated(first + offset, last, rng):
        yield str(cls(value))
    for value in _rotated(first, first + offset - 1, rng):
        yield str(cls(value))


def port_candidates(lo: int, hi: int, rng: random.Random) -> Iterator[int]:
    """The node ports a dynamic allocation tries, in the same order as the IPs'."""
    offset = port_range_offset(lo, hi)
    yield from _rotated(lo + offset, hi, rng)
    yield from _rotated(lo, lo + offset - 1, rng)


def ip_full() -> errors.StatusError:
    """No free address left (upstream answers an internal error, as here)."""
    return _internal(f"failed to allocate a serviceIP: {RANGE_FULL}")


def ports_full() -> errors.StatusError:
    return _internal(f"failed to allocate a nodePort: {RANGE_FULL}")


def _internal(why: str) -> errors.StatusError:
    """`errors.NewInternalError`: the cause in the message and as the one cause of the details."""
    return errors.InternalError(f"Internal error occurred: {why}", details={"causes": [{"message": why}]})
