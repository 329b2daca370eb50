"""Dynamic Resource Allocation: the pure structured-parameters allocation library.

`Allocator` gives, for the same cluster state, the allocation the kube-scheduler DRA plugin gives
(see `allocator.py` for the algorithm, `pools.py` for pool gathering, `celenv.py` for the CEL
environment, `extended.py` for extended resources backed by DRA). Objects are plain dicts in their
JSON (camelCase) form. No I/O anywhere in this package.
"""

from cp.dra.allocator import (
    ADMIN_ACCESS_NAMESPACE_LABEL,
    ALLOCATION_RESULTS_MAX_SIZE,
    AllocationError,
    AllocationTimeout,
    Allocator,
    DRAAllocationError,
    Features,
    NodeAllocationError,
    Stats,
    allocation_uses_admin_access,
    claim_requests_admin_access,
    namespace_allows_admin_access,
)
from cp.dra.celenv import CelCache, CelError
from cp.dra.state import AllocatedState
from cp.quantity import Quantity, QuantityError

__all__ = [
    "ADMIN_ACCESS_NAMESPACE_LABEL",
    "ALLOCATION_RESULTS_MAX_SIZE",
    "AllocatedState",
    "AllocationError",
    "AllocationTimeout",
    "Allocator",
    "CelCache",
    "CelError",
    "DRAAllocationError",
    "Features",
    "NodeAllocationError",
    "Quantity",
    "QuantityError",
    "Stats",
    "allocation_uses_admin_access",
    "claim_requests_admin_access",
    "namespace_allows_admin_access",
]
