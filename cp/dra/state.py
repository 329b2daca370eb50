"""What is already in use: the allocator's `AllocatedState`.

Built by the caller from every ResourceClaim with `status.allocation`, plus allocations the
scheduler has assumed but not yet written (in-flight), exactly as the scheduler plugin does:

- results with `adminAccess: true` are ignored entirely;
- results with a `shareID` (ConsumableCapacity on) are shared allocations: the (device, shareID)
  pair is recorded and their `consumedCapacity` is summed per device;
- every other result marks its device as exclusively allocated.

A device counts as allocated (for shared-counter accounting) if it is in any of those sets.
Everything is reference-counted, so removing one claim's allocation never frees a device another
claim still holds. `version` changes on every mutation (allocators use it to drop caches).
Pure; no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from cp.dra.model import DeviceID
from cp.quantity import Quantity

__all__ = ["AllocatedState"]


class AllocatedState:
    """Allocated devices, shared-device ids and the aggregated consumed capacity per device."""

    def __init__(self, *, consumable_capacity: bool = True) -> None:
        self.consumable_capacity = consumable_capacity
        self.allocated_devices: dict[DeviceID, int] = {}
        self.shared_ids: dict[tuple[DeviceID, str], int] = {}
        self.shared_devices: dict[DeviceID, int] = {}
        # Aggregated consumed capacity (nano units) and how many shares contributed to it.
        self.aggregated_capacity: dict[DeviceID, dict[str, int]] = {}
        self._aggregated_refs: dict[DeviceID, int] = {}
        self.version = 0

    @classmethod
    def from_claims(cls, claims: Iterable[Mapping[str, Any]], *, consumable_capacity: bool = True) -> AllocatedState:
        state = cls(consumable_capacity=consumable_capacity)
        for claim in claims:
            state.add_claim(claim)
        return state

    def copy(self) -> AllocatedState:
        new = AllocatedState(consumable_capacity=self.consumable_capacity)
        new.allocated_devices = dict(self.allocated_devices)
        new.shared_ids = dict(self.shared_ids)
        new.shared_devices = dict(self.shared_devices)
        new.aggregated_capacity = {k: dict(v) for k, v in self.aggregated_capacity.items()}
        new._aggregated_refs = dict(self._aggregated_refs)
        return new

    # -- mutation ---------------------------------------------------------------------------

    def add_claim(self, claim: Mapping[str, Any]) -> None:
        """Record a claim's `status.allocation` (no-op when unallocated)."""
        alloc = (claim.get("status") or {}).get("allocation")
        if alloc:
            self.add_allocation(alloc)

    def remove_claim(self, claim: Mapping[str, Any]) -> None:
        alloc = (claim.get("status") or {}).get("allocation")
        if alloc:
            self.remove_allocation(alloc)

    def add_allocation(self, allocation: Mapping[str, Any]) -> None:
        """Record an AllocationResult (e.g. an in-flight one the scheduler has assumed)."""
        self._apply(allocation, +1)

    def remove_allocation(self, allocation: Mapping[str, Any]) -> None:
        self._apply(allocation, -1)

    def _apply(self, allocation: Mapping[str, Any], sign: int) -> None:
        self.version += 1
        for result in ((allocation.get("devices") or {}).get("results") or []):
            if result.get("adminAccess"):
                continue
            did: DeviceID = (result.get("driver", ""), result.get("pool", ""), result.get("device", ""))
            share = result.get("shareID")
            if self.consumable_capacity and share is not None:
                _bump(self.shared_ids, (did, share), sign)
                _bump(self.shared_devices, did, sign)
                consumed = result.get("consumedCapacity")
                if consumed is not None:
                    agg = self.aggregated_capacity.setdefault(did, {})
                    for name, value in consumed.items():
                        agg[name] = agg.get(name, 0) + sign * Quantity.parse(value).nanos
                    if _bump(self._aggregated_refs, did, sign) == 0:
                        self.aggregated_capacity.pop(did, None)
                continue
            _bump(self.allocated_devices, did, sign)

    # -- queries ----------------------------------------------------------------------------

    def is_allocated(self, did: DeviceID) -> bool:
        """`IsDeviceAllocated`: exclusively allocated, shared, or with consumed capacity."""
        return did in self.allocated_devices or did in self.shared_devices or did in self.aggregated_capacity

    def __repr__(self) -> str:
        return (f"AllocatedState(devices={len(self.allocated_devices)}, shared={len(self.shared_ids)}, "
                f"capacity={len(self.aggregated_capacity)})")


def _bump(d: dict[Any, int], key: Any, sign: int) -> int:
    n = d.get(key, 0) + sign
    if n <= 0:
        d.pop(key, None)
        return 0
    d[key] = n
    return n
