"""Claim constraints: `matchAttribute` and `distinctAttribute`.

Follows the experimental allocator's `matchAttributeConstraint` / `distinctAttributeConstraint`,
including their observable quirks (kept so that results match upstream):

- attribute lookup: exact fully-qualified key, else the unprefixed key when the domain is the
  device's driver; a device without the attribute fails the constraint;
- with ListTypeAttributes, values are sets (scalars are one-element sets): `matchAttribute` keeps a
  running intersection that must stay non-empty, `distinctAttribute` requires disjoint sets; a
  removed device does not widen the running intersection again until the constraint is empty;
- without it, scalars must be equal (match) or differ (distinct); list values never match;
- `distinctAttribute` remembers one value per *base request name* (the latest device added for
  that request), and removing a device forgets the request's value.
Pure; no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cp.dra.model import DeviceInfo

__all__ = ["Constraint", "DistinctAttributeConstraint", "MatchAttributeConstraint", "lookup_attribute"]

_LIST_KINDS = (("ints", "int"), ("bools", "bool"), ("strings", "string"), ("versions", "version"))
_SCALAR_KINDS = ("int", "bool", "string", "version")


def lookup_attribute(device: DeviceInfo, name: str) -> Mapping[str, Any] | None:
    attrs: Mapping[str, Mapping[str, Any]] = device.attributes
    attr = attrs.get(name)
    if attr is not None:
        return attr
    idx = name.find("/")
    if idx < 0 or name[:idx] != device.driver:
        return None
    return attrs.get(name[idx + 1:])


def attribute_as_set(attr: Mapping[str, Any]) -> tuple[str, frozenset[Any]] | None:
    for list_key, kind in _LIST_KINDS:
        values = attr.get(list_key)
        if values:
            return kind, frozenset(values)
    for kind in _SCALAR_KINDS:
        v = attr.get(kind)
        if v is not None:
            return kind, frozenset((v,))
    return None


def _scalar(attr: Mapping[str, Any]) -> tuple[str, Any] | None:
    for kind in ("string", "int", "bool", "version"):
        v = attr.get(kind)
        if v is not None:
            return kind, v
    return None


class Constraint:
    __slots__ = ("attribute", "list_mode", "num_devices", "requests")

    def __init__(self, attribute: str, requests: list[str], list_mode: bool) -> None:
        self.attribute = attribute
        self.requests = frozenset(requests)
        self.list_mode = list_mode
        self.num_devices = 0

    def applies(self, request: str, sub_request: str) -> bool:
        if not self.requests:
            return True
        if not sub_request:
            return request in self.requests
        return request in self.requests or f"{request}/{sub_request}" in self.requests

    def add(self, request: str, sub_request: str, device: DeviceInfo,
            derived: Mapping[str, Mapping[str, Any]] | None = None) -> bool:
        """Whether `device`, picked for the request, keeps the constraint satisfied (and record it).
        `derived` holds the request's derived attributes for the device (DRADerivedAttributes): one
        named like the constraint's attribute is used instead of the device's own."""
        raise NotImplementedError

    def attribute_of(self, device: DeviceInfo, derived: Mapping[str, Mapping[str, Any]] | None
                     ) -> Mapping[str, Any] | None:
        if derived:
            value = derived.get(self.attribute)
            if value is not None:
                return value
        return lookup_attribute(device, self.attribute)

    def remove(self, request: str, sub_request: str, device: DeviceInfo) -> None:
        raise NotImplementedError


class MatchAttributeConstraint(Constraint):
    __slots__ = ("first", "intersection")

    def __init__(self, attribute: str, requests: list[str], list_mode: bool) -> None:
        super().__init__(attribute, requests, list_mode)
        self.first: Mapping[str, Any] | None = None
        self.intersection: tuple[str, frozenset[Any]] | None = None

    def add(self, request: str, sub_request: str, device: DeviceInfo,
            derived: Mapping[str, Mapping[str, Any]] | None = None) -> bool:
        if not self.applies(request, sub_request):
            return True
        attr = self.attribute_of(device, derived)
        if attr is None:
            return False
        if self.num_devices == 0:
            if self.list_mode:
                s = attribute_as_set(attr)
                if s is None:
                    return False
                self.intersection = s
            else:
                self.first = attr
            self.num_devices = 1
            return True
        if self.list_mode:
            s = attribute_as_set(attr)
            cur = self.intersection
            if s is None or cur is None or s[0] != cur[0]:
                return False
            inter = cur[1] & s[1]
            if not inter:
                return False
            self.intersection = (cur[0], inter)
        else:
            new = _scalar(attr)
            if new is None:
                return False
            old = (self.first or {}).get(new[0])
            if old is None or old != new[1] or type(old) is not type(new[1]):
                return False
        self.num_devices += 1
        return True

    def remove(self, request: str, sub_request: str, device: DeviceInfo) -> None:
        if not self.applies(request, sub_request):
            return
        self.num_devices -= 1


class DistinctAttributeConstraint(Constraint):
    __slots__ = ("values",)

    def __init__(self, attribute: str, requests: list[str], list_mode: bool) -> None:
        super().__init__(attribute, requests, list_mode)
        self.values: dict[str, Mapping[str, Any]] = {}

    def add(self, request: str, sub_request: str, device: DeviceInfo,
            derived: Mapping[str, Mapping[str, Any]] | None = None) -> bool:
        if not self.applies(request, sub_request):
            return True
        attr = self.attribute_of(device, derived)
        if attr is None:
            return False
        if self.num_devices == 0:
            self.values[request] = attr
            self.num_devices = 1
            return True
        if not self._distinct(attr):
            return False
        self.values[request] = attr
        self.num_devices += 1
        return True

    def _distinct(self, attr: Mapping[str, Any]) -> bool:
        if self.list_mode:
            new = attribute_as_set(attr)
            if new is None:
                return False
            for other in self.values.values():
                old = attribute_as_set(other)
                if old is None:
                    continue
                if old[0] == new[0] and old[1] & new[1]:
                    return False
            return True
        new_s = _scalar(attr)
        for other in self.values.values():
            if new_s is None:
                return False
            old = other.get(new_s[0])
            if old is not None and old == new_s[1] and type(old) is type(new_s[1]):
                return False
        return True

    def remove(self, request: str, sub_request: str, device: DeviceInfo) -> None:
        if not self.applies(request, sub_request):
            return
        self.values.pop(request, None)
        self.num_devices -= 1
