"""The allocator scenario table, in the spirit of upstream's shared `allocatortesting` table.

Each case gives the cluster state (slices, classes, what is already allocated, taint rules), the
claims to allocate on one node and the expected outcome: the AllocationResults in pick order,
`None` (not possible on this node), a fatal `AllocationError` or a node-local
`NodeAllocationError` (matched by substring). Expected results follow upstream semantics (most
cases are upstream cases of the same name); `invocations` is upstream's expected number of
`allocateOne` calls, checked with pruning disabled. Every case also runs with pruning enabled,
which must not change the outcome.

Excluded here: the CEL library itself (test_cel.py), quantities (test_quantity.py), extended
resources (test_extended.py).
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from typing import Any

import pytest

from cp.dra import (
    AllocatedState,
    AllocationError,
    AllocationTimeout,
    Allocator,
    CelCache,
    Features,
    NodeAllocationError,
)
from tests.cp.dra.builders import (
    ALL,
    CLASS_A,
    CLASS_B,
    DRIVER_A,
    DRIVER_B,
    PER_DEVICE,
    SHARE,
    all_req,
    alloc,
    allocated_claim,
    claim,
    claim_config,
    classes,
    consumes,
    counter_set,
    device,
    device_class,
    distinct,
    first,
    labels_selector,
    local,
    many_devices,
    match,
    node,
    opaque,
    req,
    res,
    rslice,
    sel,
    sub,
    taint,
    taint_rule,
    toleration,
)

DEFAULT_CLASSES = classes(device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B))
NO_FEATURES = Features(admin_access=False, prioritized_list=False, partitionable_devices=False,
                       device_taints=False, consumable_capacity=False, device_binding_and_status=False,
                       list_type_attributes=False)

INT_ATTR = "driver-a/numa"
BOOL_ATTR = "driver-a/boolAttribute"
STRING_ATTR = "driver-a/stringAttribute"
VERSION_ATTR = "driver-a/driverVersion"


def mem(q: str) -> str:
    return f'device.capacity["driver-a"].memory.compareTo(quantity("{q}")) >= 0'


def mem_dev(name: str, q: str, **kw: Any) -> dict[str, Any]:
    return device(name, capacity={"memory": q}, **kw)


def counter_dev(name: str, counter_set_name: str = "counter-set-1", **counters: str) -> dict[str, Any]:
    """A partitionable device whose capacity mirrors the counters it consumes."""
    return device(name, capacity=dict(counters), consumesCounters=[consumes(counter_set_name, **counters)])


def range_policy(value: str) -> dict[str, Any]:
    return {"value": value, "requestPolicy": {"default": "2", "validRange": {"min": "2", "step": "2", "max": "4"}}}


# value 1, default 0.2, 0.2..1 in steps of 0.1
FRACTIONAL_RANGE = {"value": "1", "requestPolicy": {"default": "200m",
                                                   "validRange": {"min": "200m", "max": "1", "step": "100m"}}}


def values_policy(value: str, default: str, *more: str) -> dict[str, Any]:
    return {"value": value, "requestPolicy": {"default": default, "validValues": [default, *more]}}


def multi_class(allow: bool) -> dict[str, dict[str, Any]]:
    expr = f'device.driver == "driver-a" && device.allowMultipleAllocations == {str(allow).lower()}'
    return classes(device_class(CLASS_A, DRIVER_A, expression=expr), device_class(CLASS_B, DRIVER_B))


TAINT_NO_SCHEDULE = taint("taint-key", "taint-value", "NoSchedule")
TAINT_NO_EXECUTE = taint("taint-key", "taint-value-2", "NoExecute")
TAINT_NONE = taint("taint-key", "taint-value", "None")
TOL_NO_SCHEDULE = toleration("taint-key", operator="Exists", effect="NoSchedule")
TOL_NO_EXECUTE = toleration("taint-key", operator="Equal", value="taint-value-2", effect="NoExecute")


@dataclass
class Case:
    name: str
    claims: list[dict[str, Any]]
    slices: list[dict[str, Any]] = field(default_factory=list)
    classes: dict[str, dict[str, Any]] = field(default_factory=lambda: DEFAULT_CLASSES)
    node: dict[str, Any] = field(default_factory=node)
    allocated: list[tuple[str, str, str]] = field(default_factory=list)
    allocated_claims: list[dict[str, Any]] = field(default_factory=list)
    features: Features = field(default_factory=Features)
    rules: list[dict[str, Any]] = field(default_factory=list)
    expect: list[dict[str, Any]] | None = None
    error: str | None = None
    node_error: str | None = None
    invocations: int | None = None


def one_slice(*devices: dict[str, Any], **kw: Any) -> list[dict[str, Any]]:
    return [rslice("slice-1", "node-1", "pool-1", DRIVER_A, *devices, **kw)]


CASES: list[Case] = [
    # ---- basics -----------------------------------------------------------------------------
    Case("simple", [claim("claim-0", req("req-0"))], one_slice(device("device-1")),
         expect=[alloc(res("req-0", "device-1"))]),
    Case("other-node", [claim("claim-0", req("req-0"))],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_B, device("device-1")),
          rslice("slice-2", "node-2", "pool-2", DRIVER_A, device("device-1"))],
         node=node("node-2", "region-2"),
         expect=[alloc(res("req-0", "device-1", pool="pool-2"), selector=local("node-2"))]),
    Case("no-slices", [claim("claim-0", req("req-0"))], []),
    Case("no-claims-to-allocate", [], one_slice(device("device-1")), expect=[]),
    Case("claim-without-requests", [claim("claim-0")], one_slice(device("device-1")),
         expect=[alloc(selector=None)]),
    Case("not-enough-suitable-devices", [claim("claim-0", req("req-0")), claim("claim-1", req("req-1"))],
         one_slice(device("device-1"))),
    Case("already-allocated-devices", [claim("claim-0", req("req-0"))], one_slice(device("device-1")),
         allocated=[(DRIVER_A, "pool-1", "device-1"), (DRIVER_A, "pool-1", "device-2")]),
    Case("no-classes", [claim("claim-0", req("req-0"))], one_slice(device("device-1")), classes={},
         error="claim claim-0, request req-0: could not retrieve device class class-a"),
    Case("unknown-class", [claim("claim-0", req("req-0", "unknown-class"))], one_slice(device("device-1")),
         error="could not retrieve device class unknown-class"),
    Case("empty-class", [claim("claim-0", req("req-0", ""))], one_slice(device("device-1")),
         error="claim claim-0, request req-0: missing device class name (unsupported request type?)"),
    Case("namespaced-claim-in-errors", [claim("claim-0", req("req-0", "nope"), namespace="team-a")],
         one_slice(device("device-1")),
         error="claim team-a/claim-0, request req-0: could not retrieve device class nope"),
    Case("devices-split-across-different-slices", [claim("claim-0", req("req-0", CLASS_A, 2))],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_A, device("device-1")),
          rslice("slice-2", "node-1", "pool-2", DRIVER_A, device("device-1"))],
         expect=[alloc(res("req-0", "device-1"), res("req-0", "device-1", pool="pool-2"))]),
    Case("several-different-drivers", [claim("claim-0", req("req-0")), claim("claim-0", req("req-0", CLASS_B))],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_A, device("device-1"), device("device-2")),
          rslice("slice-1", "node-1", "pool-1", DRIVER_B, device("device-1"))],
         expect=[alloc(res("req-0", "device-1")), alloc(res("req-0", "device-1", driver=DRIVER_B))]),
    Case("pool-order-driver-then-pool-then-slice-name", [claim("claim-0", req("req-0", CLASS_A, 3))],
         [rslice("slice-b", "node-1", "pool-2", DRIVER_A, device("d-x")),
          rslice("slice-z", "node-1", "pool-1", DRIVER_A, device("d-z"), count=2),
          rslice("slice-a", "node-1", "pool-1", DRIVER_A, device("d-a"), count=2)],
         expect=[alloc(res("req-0", "d-a"), res("req-0", "d-z"), res("req-0", "d-x", pool="pool-2"))]),

    # ---- backtracking ---------------------------------------------------------------------------
    Case("small-and-large",
         [claim("claim-0", req("req-0", CLASS_A, 1, sel(mem("1Gi"))), req("req-1", CLASS_A, 1, sel(mem("2Gi"))))],
         one_slice(mem_dev("device-1", "1Gi"), mem_dev("device-2", "2Gi")),
         expect=[alloc(res("req-0", "device-1"), res("req-1", "device-2"))]),
    Case("small-and-large-backtrack-requests",
         [claim("claim-0", req("req-0", CLASS_A, 1, sel(mem("1Gi"))), req("req-1", CLASS_A, 1, sel(mem("2Gi"))))],
         one_slice(mem_dev("device-2", "2Gi"), mem_dev("device-1", "1Gi")),
         expect=[alloc(res("req-0", "device-1"), res("req-1", "device-2"))]),
    Case("small-and-large-backtrack-claims",
         [claim("claim-0", req("req-0", CLASS_A, 1, sel(mem("1Gi")))),
          claim("claim-1", req("req-1", CLASS_A, 1, sel(mem("2Gi"))))],
         one_slice(mem_dev("device-2", "2Gi"), mem_dev("device-1", "1Gi")),
         expect=[alloc(res("req-0", "device-1")), alloc(res("req-1", "device-2"))]),
    Case("check-combinations-within-single-request-single-pool-single-slice",
         [claim("claim-0", req("req-0", CLASS_A, 5))],
         one_slice(*(device(f"device-{i}") for i in range(1, 5))), invocations=16),
    Case("check-combinations-within-single-request-many-pools",
         [claim("claim-0", req("req-0", CLASS_A, 5))],
         [rslice(f"slice-{i}", "node-1", f"pool-{i}", DRIVER_A, device(f"device-{i}")) for i in range(1, 5)],
         invocations=16),
    Case("check-combinations-with-backtracking",
         [claim("claim-0", req("req-1", CLASS_A, 2), req("req-2", CLASS_A, 1, sel('device.attributes["driver-a"].type == "X"')))],
         one_slice(device("device-1", attrs={"type": "X"}), device("device-2", attrs={"type": "Y"}),
                   device("device-3", attrs={"type": "Y"})),
         expect=[alloc(res("req-1", "device-2"), res("req-1", "device-3"), res("req-2", "device-1"))],
         invocations=12),
    Case("check-combinations-with-backtracking-across-slices-and-pools",
         [claim("claim-0", req("req-1", CLASS_A, 2), req("req-2", CLASS_A, 1, sel('device.attributes["driver-a"].type == "X"')))],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_A, device("device-1", attrs={"type": "X"}), count=2),
          rslice("slice-2", "node-1", "pool-1", DRIVER_A, device("device-2", attrs={"type": "Y"}), count=2),
          rslice("slice-3", "node-1", "pool-2", DRIVER_A,
                 device("device-3", attrs={"type": "Y"}, bindingConditions=["IsPrepare"], bindingFailureConditions=[]))],
         expect=[alloc(res("req-1", "device-2"), res("req-1", "device-3", pool="pool-2", bc=["IsPrepare"]),
                       res("req-2", "device-1"))],
         invocations=12),
    Case("check-combinations-with-prioritized-list",
         [claim("claim-0",
                first("req-1", sub("subReq-0", CLASS_A, 3, sel('device.attributes["driver-a"].type == "Y"')),
                      sub("subReq-1", CLASS_A, 2)),
                first("req-2", sub("subReq-0", CLASS_A, 2),
                      sub("subReq-1", CLASS_A, 1, sel('device.attributes["driver-a"].type == "X"'))))],
         one_slice(device("device-1", attrs={"type": "X"}), device("device-2", attrs={"type": "Y"}),
                   device("device-3", attrs={"type": "Y"})),
         expect=[alloc(res("req-1/subReq-1", "device-2"), res("req-1/subReq-1", "device-3"),
                       res("req-2/subReq-1", "device-1"))],
         invocations=26),

    # ---- pools: obsolete, duplicate, incomplete, invalid, multi-host ------------------------------
    Case("obsolete-slice", [claim("claim-0", req("req-0"))],
         [rslice("slice-1-obsolete", "node-1", "pool-1", DRIVER_A, device("device-1"), count=2),
          rslice("slice-1-obsolete", "node-1", "pool-1", DRIVER_A, device("device-2"), count=2, generation=2)]),
    Case("duplicate-slice", [claim("claim-0", req("req-0"))],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_A, device("device-1"), count=2),
          rslice("slice-1-2", "node-1", "pool-1", DRIVER_A, device("device-1"), count=2)],
         node_error="invalid resource pools were encountered"),
    Case("no-allocation-from-incomplete-pools", [claim("claim-0", req("req-0"))],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_A, device("device-1"), count=2)]),
    Case("invalid-pool-is-ok-if-devices-can-be-allocated-from-other", [claim("claim-0", req("req-0"))],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_A, device("device-1"), count=2),
          rslice("slice-2", "node-1", "pool-1", DRIVER_A, device("device-1"), count=2),
          rslice("slice-3", "node-1", "pool-2", DRIVER_A, device("device-2"))],
         expect=[alloc(res("req-0", "device-2", pool="pool-2"))]),
    Case("invalid-pool-is-error-if-no-other-device-can-be-allocated", [claim("claim-0", req("req-0"))],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_A, device("device-1"), count=2),
          rslice("slice-2", "node-1", "pool-1", DRIVER_A, device("device-1"), count=2),
          rslice("slice-3", "node-1", "pool-2", DRIVER_A, device("device-2"))],
         allocated=[(DRIVER_A, "pool-2", "device-2")], node_error="invalid resource pools were encountered"),
    Case("multi-host-resource-pool-with-stale-slice-for-current-node", [claim("claim-0", req("req-0"))],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_A, device("device-1"), count=2, generation=1),
          rslice("slice-2", "node-2", "pool-1", DRIVER_A, device("device-2"), count=2, generation=2)]),
    Case("multi-host-resource-pool-complete-update-from-node-1-to-node-2", [claim("claim-0", req("req-0"))],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_A, device("device-1"), count=2, generation=1),
          rslice("slice-1", "node-1", "pool-1", DRIVER_A, device("device-2"), count=2, generation=1),
          rslice("slice-2", "node-2", "pool-1", DRIVER_A, device("device-1"), count=2, generation=2),
          rslice("slice-2", "node-2", "pool-1", DRIVER_A, device("device-2"), count=2, generation=2)],
         expect=[alloc(res("req-0", "device-1"))]),
    Case("multi-host-resource-pool-incomplete-update-from-node-2-to-node-1", [claim("claim-0", req("req-0"))],
         [rslice("slice-1", "node-2", "pool-1", DRIVER_A, device("device-1"), count=2, generation=1),
          rslice("slice-1", "node-2", "pool-1", DRIVER_A, device("device-2"), count=2, generation=1),
          rslice("slice-2", "node-1", "pool-1", DRIVER_A, device("device-1"), count=2, generation=2)]),
    Case("allocation-mode-all-with-multi-host-resource-pool", [claim("claim-0", all_req("req-0"))],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_A, device("device-1"), count=2),
          rslice("slice-2", "node-2", "pool-1", DRIVER_A, device("device-2"), count=2)],
         expect=[alloc(res("req-0", "device-1"))]),
    Case("slice-without-node-selection-is-ignored", [claim("claim-0", req("req-0"))],
         [{"metadata": {"name": "weird"}, "spec": {"driver": DRIVER_A, "pool": {"name": "pool-1", "generation": 1,
                                                                           "resourceSliceCount": 1},
                                                  "devices": [device("device-1")]}}]),

    # ---- allocationMode All ---------------------------------------------------------------------
    Case("all-devices-single", [claim("claim-0", all_req("req-0"))], one_slice(device("device-1")),
         expect=[alloc(res("req-0", "device-1"))]),
    Case("all-devices-many", [claim("claim-0", all_req("req-0"))],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_A, device("device-1")),
          rslice("slice-1", "node-1", "pool-2", DRIVER_A, device("device-1"))],
         expect=[alloc(res("req-0", "device-1"), res("req-0", "device-1", pool="pool-2"))]),
    Case("all-devices-of-the-incomplete-pool", [claim("claim-0", all_req("req-0"))],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_A, device("device-1"), count=2)],
         error="claim claim-0, request req-0: asks for all devices, but resource pool driver-a/pool-1 is currently being updated"),
    Case("all-devices-of-an-invalid-pool", [claim("claim-0", all_req("req-0"))],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_A, device("device-1"), count=2),
          rslice("slice-2", "node-1", "pool-1", DRIVER_A, device("device-1"), count=2)],
         error="asks for all devices, but resource pool driver-a/pool-1 is currently invalid"),
    Case("all-devices-plus-another",
         [claim("claim-0", all_req("req-0")), claim("claim-1", req("req-0", CLASS_B))],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_A, device("device-1")),
          rslice("slice-1", "node-1", "pool-1", DRIVER_B, device("device-1"))],
         expect=[alloc(res("req-0", "device-1")), alloc(res("req-0", "device-1", driver=DRIVER_B))]),
    Case("all-devices-many-plus-another-reversed",
         [claim("claim-1", req("req-0", CLASS_B)), claim("claim-0", all_req("req-0"))],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_A, device("device-1"), device("device-2")),
          rslice("slice-1", "node-1", "pool-1", DRIVER_B, device("device-1"))],
         expect=[alloc(res("req-0", "device-1", driver=DRIVER_B)),
                 alloc(res("req-0", "device-1"), res("req-0", "device-2"))]),
    Case("all-devices-no-solution", [claim("claim-1", req("req-0")), claim("claim-0", all_req("req-0"))],
         one_slice(device("device-1"))),
    Case("all-devices-no-solution-reversed", [claim("claim-0", all_req("req-0")), claim("claim-1", req("req-0"))],
         one_slice(device("device-1"))),
    Case("all-devices-slice-without-devices", [claim("claim-0", all_req("req-0"))], one_slice()),
    Case("all-devices-some-allocated", [claim("claim-0", all_req("req-0"))],
         one_slice(device("device-1"), device("device-2")), allocated=[(DRIVER_A, "pool-1", "device-1")]),
    Case("with-constraint-not-matching-int-attribute-all-devices",
         [claim("claim-0", all_req("req-0"), constraints=[match(INT_ATTR)])],
         one_slice(device("device-1", attrs={"numa": 1}), device("device-2", attrs={"numa": 2})),
         error="claim claim-0, request req-0: cannot add device driver-a/pool-1/device-2 because a claim constraint would not be satisfied"),

    # ---- admin access ---------------------------------------------------------------------------
    Case("admin-access-disabled", [claim("claim-0", req("req-0", admin=True))], one_slice(device("device-1")),
         features=Features(admin_access=False),
         error="claim claim-0, request req-0: admin access is requested, but the feature is disabled"),
    Case("admin-access-enabled", [claim("claim-0", req("req-0", admin=True))], one_slice(device("device-1")),
         allocated=[(DRIVER_A, "pool-1", "device-1"), (DRIVER_A, "pool-1", "device-2")],
         expect=[alloc(res("req-0", "device-1", admin=True))]),
    Case("all-devices-some-allocated-admin-access", [claim("claim-0", all_req("req-0", admin=True))],
         one_slice(device("device-1"), device("device-2")), allocated=[(DRIVER_A, "pool-1", "device-1")],
         expect=[alloc(res("req-0", "device-1", admin=True), res("req-0", "device-2", admin=True))]),
    Case("all-devices-some-allocating-admin-access",
         [claim("claim-0", req("req-0", admin=True), all_req("req-1", admin=True))],
         one_slice(device("device-1"), device("device-2"))),
    Case("count-devices-some-allocated-admin-access", [claim("claim-0", req("req-0", CLASS_A, 2, admin=True))],
         one_slice(device("device-1"), device("device-2")), allocated=[(DRIVER_A, "pool-1", "device-1")],
         expect=[alloc(res("req-0", "device-1", admin=True), res("req-0", "device-2", admin=True))]),
    Case("separate-claims-share-device-admin-access",
         [claim("claim-0", req("req-0", admin=True)), claim("claim-1", req("req-0", admin=True))],
         one_slice(device("device-1"), device("device-2")),
         expect=[alloc(res("req-0", "device-1", admin=True)), alloc(res("req-0", "device-1", admin=True))]),
    Case("admin-access-claims-device-allocating-for-non-admin-access",
         [claim("claim-0", req("req-0")), claim("claim-1", req("req-0", admin=True))],
         one_slice(device("device-1"), device("device-2")),
         expect=[alloc(res("req-0", "device-1")), alloc(res("req-0", "device-1", admin=True))]),
    Case("admin-access-pick-blocks-device-for-later-claims-in-same-run",
         [claim("claim-1", req("req-0", admin=True)), claim("claim-0", req("req-0"))],
         one_slice(device("device-1"), device("device-2")),
         expect=[alloc(res("req-0", "device-1", admin=True)), alloc(res("req-0", "device-2"))]),
    Case("admin-access-results-are-not-allocated-state", [claim("claim-0", req("req-0"))],
         one_slice(device("device-1")),
         allocated_claims=[allocated_claim({"request": "r", "driver": DRIVER_A, "pool": "pool-1",
                                            "device": "device-1", "adminAccess": True})],
         expect=[alloc(res("req-0", "device-1"))]),

    # ---- network-attached devices and node selectors --------------------------------------------
    Case("network-attached-device", [claim("claim-0", req("req-0"))],
         [rslice("slice-1", labels_selector("region", "region-1"), "pool-1", DRIVER_A, device("device-1"))],
         expect=[alloc(res("req-0", "device-1"), selector=labels_selector("region", "region-1"))]),
    Case("unsuccessful-allocation-network-attached-device", [claim("claim-0", req("req-0"))],
         [rslice("slice-1", labels_selector("region", "region-1"), "pool-1", DRIVER_A, device("device-1"))],
         node=node("node-2", "region-2")),
    Case("many-network-attached-devices", [claim("claim-0", req("req-0", CLASS_A, 4))],
         [rslice("slice-1", labels_selector("region", "region-1"), "pool-1", DRIVER_A, device("device-1")),
          rslice("slice-1", ALL, "pool-2", DRIVER_A, device("device-1")),
          rslice("slice-1", labels_selector("planet", "earth"), "pool-3", DRIVER_A, device("device-1")),
          rslice("slice-1", {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                                     "values": ["node-1"]}]}]},
                 "pool-4", DRIVER_A, device("device-1"))],
         expect=[alloc(res("req-0", "device-1"), res("req-0", "device-1", pool="pool-2"),
                       res("req-0", "device-1", pool="pool-3"), res("req-0", "device-1", pool="pool-4"),
                       selector={"nodeSelectorTerms": [{
                           "matchExpressions": [{"key": "region", "operator": "In", "values": ["region-1"]},
                                                {"key": "planet", "operator": "In", "values": ["earth"]}],
                           "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]})]),
    Case("network-attached-selectors-deduplicated", [claim("claim-0", req("req-0", CLASS_A, 2))],
         [rslice("slice-1", labels_selector("region", "region-1"), "pool-1", DRIVER_A, device("device-1")),
          rslice("slice-1", labels_selector("region", "region-1"), "pool-2", DRIVER_A, device("device-1"))],
         expect=[alloc(res("req-0", "device-1"), res("req-0", "device-1", pool="pool-2"),
                       selector=labels_selector("region", "region-1"))]),
    Case("all-nodes-device-has-no-selector", [claim("claim-0", req("req-0"))],
         [rslice("slice-1", ALL, "pool-1", DRIVER_A, device("device-1"))],
         expect=[alloc(res("req-0", "device-1"), selector=None)]),
    Case("local-and-network-attached-devices", [claim("claim-0", req("req-0", CLASS_A, 2))],
         [rslice("slice-1", labels_selector("region", "region-1"), "pool-1", DRIVER_A, device("device-1")),
          rslice("slice-1", "node-1", "pool-2", DRIVER_A, device("device-1"))],
         expect=[alloc(res("req-0", "device-1"), res("req-0", "device-1", pool="pool-2"))]),
    Case("node-restriction-binds-to-node", [claim("claim-0", req("req-0"))],
         [rslice("slice-1", labels_selector("planet", "earth"), "pool-1", DRIVER_A,
                 device("device-1", bindsToNode=True))],
         expect=[alloc(res("req-0", "device-1"))]),
    Case("node-selector-operators", [claim("claim-0", req("req-0", CLASS_A, 3))],
         [rslice("slice-1", {"nodeSelectorTerms": [{"matchExpressions": [
             {"key": "zone", "operator": "DoesNotExist"}, {"key": "region", "operator": "NotIn", "values": ["region-2"]}]}]},
                 "pool-1", DRIVER_A, device("device-1")),
          rslice("slice-1", {"nodeSelectorTerms": [{"matchExpressions": [{"key": "region", "operator": "Exists"}]}]},
                 "pool-2", DRIVER_A, device("device-1")),
          rslice("slice-1", {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "NotIn",
                                                                     "values": ["node-1"]}]}]},
                 "pool-3", DRIVER_A, device("device-1")),
          rslice("slice-1", {"nodeSelectorTerms": [{"matchExpressions": [{"key": "gpus", "operator": "Lt", "values": ["8"]}]}]},
                 "pool-4", DRIVER_A, device("device-1")),
          rslice("slice-1", {"nodeSelectorTerms": [{"matchExpressions": [{"key": "gpus", "operator": "Gt", "values": ["8"]}]}]},
                 "pool-5", DRIVER_A, device("device-1"))],
         node={"metadata": {"name": "node-1", "labels": {"region": "region-1", "gpus": "4"}}},
         expect=[alloc(res("req-0", "device-1"), res("req-0", "device-1", pool="pool-2"),
                       res("req-0", "device-1", pool="pool-4"),
                       selector={"nodeSelectorTerms": [{"matchExpressions": [
                           {"key": "zone", "operator": "DoesNotExist"},
                           {"key": "region", "operator": "NotIn", "values": ["region-2"]},
                           {"key": "region", "operator": "Exists"},
                           {"key": "gpus", "operator": "Lt", "values": ["8"]}]}]})]),
    Case("slice-node-selector-with-two-terms-is-fatal-when-used", [claim("claim-0", req("req-0"))],
         [rslice("slice-1", {"nodeSelectorTerms": [
             {"matchExpressions": [{"key": "region", "operator": "Exists"}]},
             {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}]}, "pool-1", DRIVER_A, device("device-1"))],
         error="create NodeSelector for claim claim-0: unsupported ResourceSlice.NodeSelector with 2 terms"),

    # ---- constraints ----------------------------------------------------------------------------
    Case("with-constraint",
         [claim("claim-0", req("req-0"), req("req-1"),
                constraints=[match(INT_ATTR), match(VERSION_ATTR), match(STRING_ATTR), match(BOOL_ATTR)])],
         one_slice(*(device(n, attrs={"driverVersion": ("version", "1.0.0"), "numa": 1,
                                       "stringAttribute": "stringAttributeValue", "boolAttribute": True})
                     for n in ("device-1", "device-2"))),
         expect=[alloc(res("req-0", "device-1"), res("req-1", "device-2"))]),
    Case("with-constraint-fully-qualified-attribute-names",
         [claim("claim-0", req("req-0", CLASS_A, 2), constraints=[match("example.com/rack")])],
         one_slice(device("device-1", attrs={"example.com/rack": "r1"}), device("device-2", attrs={"example.com/rack": "r2"}),
                   device("device-3", attrs={"example.com/rack": "r2"}), device("device-4", attrs={"rack": "r2"})),
         expect=[alloc(res("req-0", "device-2"), res("req-0", "device-3"))]),
    Case("with-constraint-non-existent-attribute",
         [claim("claim-0", req("req-0"), constraints=[match("driver-a/NonExistentAttribute")])],
         one_slice(device("device-1"))),
    Case("with-constraint-not-matching-int-attribute",
         [claim("claim-0", req("req-0", CLASS_A, 2), constraints=[match(INT_ATTR)])],
         one_slice(device("device-1", attrs={"numa": 1}), device("device-2", attrs={"numa": 2}))),
    Case("with-constraint-not-matching-string-attribute",
         [claim("claim-0", req("req-0", CLASS_A, 2), constraints=[match(STRING_ATTR)])],
         one_slice(device("device-1", attrs={"stringAttribute": "a"}), device("device-2", attrs={"stringAttribute": "b"}))),
    Case("with-constraint-not-matching-bool-attribute",
         [claim("claim-0", req("req-0", CLASS_A, 2), constraints=[match(BOOL_ATTR)])],
         one_slice(device("device-1", attrs={"boolAttribute": True}), device("device-2", attrs={"boolAttribute": False}))),
    Case("with-constraint-not-matching-version-attribute",
         [claim("claim-0", req("req-0", CLASS_A, 2), constraints=[match(VERSION_ATTR)])],
         one_slice(device("device-1", attrs={"driverVersion": ("version", "1.0.0")}),
                   device("device-2", attrs={"driverVersion": ("version", "2.0.0")}))),
    Case("with-constraint-for-request",
         [claim("claim-0", req("req-0"), req("req-1"), constraints=[match(VERSION_ATTR, "req-0")])],
         one_slice(device("device-1", attrs={"driverVersion": ("version", "1.0.0")}),
                   device("device-2", attrs={"driverVersion": ("version", "2.0.0")})),
         expect=[alloc(res("req-0", "device-1"), res("req-1", "device-2"))]),
    Case("with-constraint-for-request-retry",
         [claim("claim-0", req("req-0"), req("req-1"), constraints=[match(VERSION_ATTR, "req-0"), match(STRING_ATTR)])],
         one_slice(device("device-1", attrs={"driverVersion": ("version", "1.0.0"), "stringAttribute": "a"}),
                   device("device-2", attrs={"driverVersion": ("version", "2.0.0"), "stringAttribute": "b"}),
                   device("device-3", attrs={"driverVersion": ("version", "3.0.0"), "stringAttribute": "b"})),
         expect=[alloc(res("req-0", "device-2"), res("req-1", "device-3"))]),
    Case("unknown-constraint", [claim("claim-0", req("req-0"), constraints=[{}])], one_slice(device("device-1")),
         error="claim claim-0, constraint #0: empty constraint (unsupported constraint type?)"),
    Case("with-distinct-constraints",
         [claim("claim-0", req("req-0"), req("req-1"), req("req-2"), req("req-3"),
                constraints=[distinct(BOOL_ATTR, "req-0", "req-1"), distinct(VERSION_ATTR, "req-0", "req-1", "req-2"),
                             distinct(INT_ATTR, "req-0", "req-1", "req-2", "req-3")])],
         one_slice(device("device-1", attrs={"driverVersion": ("version", "1.0.0"), "numa": 0, "boolAttribute": True},
                          allowMultipleAllocations=True),
                   device("device-2", attrs={"driverVersion": ("version", "1.0.1"), "numa": 1, "boolAttribute": False},
                          allowMultipleAllocations=True),
                   device("device-3", attrs={"driverVersion": ("version", "1.0.2"), "numa": 2, "boolAttribute": True},
                          allowMultipleAllocations=True),
                   device("device-4", attrs={"driverVersion": ("version", "1.0.0"), "numa": 3, "boolAttribute": True},
                          allowMultipleAllocations=True)),
         expect=[alloc(res("req-0", "device-1", share=True), res("req-1", "device-2", share=True),
                       res("req-2", "device-3", share=True), res("req-3", "device-4", share=True))]),
    Case("with-distinct-constraints-attribute-not-set",
         [claim("claim-0", req("req-0"), constraints=[distinct(BOOL_ATTR, "req-0")])],
         one_slice(device("device-1", allowMultipleAllocations=True))),
    Case("with-distinct-constraints-unknown-type-attribute",
         [claim("claim-0", req("req-0"), constraints=[distinct(BOOL_ATTR, "req-0")])],
         one_slice(device("device-1", attrs={"boolAttribute": {}}, allowMultipleAllocations=True)),
         error="unsupported attribute value"),
    Case("with-distinct-constraints-with-subrequests",
         [claim("claim-0",
                first("req-0", sub("subReq-0", CLASS_A, 1, sel('device.attributes["driver-a"].boolAttribute')), sub("subReq-1")),
                first("req-1", sub("subReq-0", CLASS_A, 1, sel('device.attributes["driver-a"].boolAttribute')), sub("subReq-1")),
                first("req-2", sub("subReq-0", CLASS_A, 1, sel('device.attributes["driver-a"].boolAttribute')), sub("subReq-1")),
                constraints=[distinct(BOOL_ATTR, "req-0", "req-1")])],
         one_slice(device("device-1", attrs={"boolAttribute": True}, allowMultipleAllocations=True),
                   device("device-2", attrs={"boolAttribute": False}, allowMultipleAllocations=True)),
         expect=[alloc(res("req-0/subReq-0", "device-1", share=True), res("req-1/subReq-1", "device-2", share=True),
                       res("req-2/subReq-0", "device-1", share=True))]),
    Case("distinct-constraint-one-multi-allocatable-device",
         [claim("claim-0", req("req-0", capacity={"capacity-0": "1"}), req("req-1", capacity={"capacity-0": "1"}),
                constraints=[distinct(STRING_ATTR)])],
         one_slice(device("device-1", attrs={"stringAttribute": "v"}, allowMultipleAllocations=True,
                          capacity={"capacity-0": range_policy("2")})),
         classes=multi_class(True)),

    # ---- list-type attributes -----------------------------------------------------------------
    Case("list-attributes-match-list-of-string-values-with-common-elements",
         [claim("claim-0", req("req-0", CLASS_A, 2), constraints=[match(STRING_ATTR)])],
         one_slice(device("device-1", attrs={"stringAttribute": ["value1", "value2", "value3"]}),
                   device("device-2", attrs={"stringAttribute": ["value2", "value3", "value4"]})),
         expect=[alloc(res("req-0", "device-1"), res("req-0", "device-2"))]),
    Case("list-attributes-match-partially-common-elements",
         [claim("claim-0", req("req-0", CLASS_A, 3), constraints=[match(STRING_ATTR)])],
         one_slice(device("device-1", attrs={"stringAttribute": ["value1", "value2"]}),
                   device("device-2", attrs={"stringAttribute": ["value2", "value3"]}),
                   device("device-3", attrs={"stringAttribute": ["value3", "value1"]}))),
    Case("list-attributes-match-mixed-scalar-and-list",
         [claim("claim-0", req("req-0", CLASS_A, 2), constraints=[match(STRING_ATTR)])],
         one_slice(device("device-1", attrs={"stringAttribute": "value1"}),
                   device("device-2", attrs={"stringAttribute": ["value1", "value2"]})),
         expect=[alloc(res("req-0", "device-1"), res("req-0", "device-2"))]),
    Case("list-attributes-match-int-numa-scalar-vs-list",
         [claim("claim-0", req("req-0"), req("req-1"), constraints=[match("resource.kubernetes.io/numaNode")])],
         one_slice(device("device-1", attrs={"resource.kubernetes.io/numaNode": [1, 0]}),
                   device("device-2", attrs={"resource.kubernetes.io/numaNode": 2}),
                   device("device-3", attrs={"resource.kubernetes.io/numaNode": 0})),
         expect=[alloc(res("req-0", "device-1"), res("req-1", "device-3"))]),
    Case("list-attributes-match-versions",
         [claim("claim-0", req("req-0", CLASS_A, 2), constraints=[match(VERSION_ATTR)])],
         one_slice(device("device-1", attrs={"driverVersion": ("versions", ["1.0.0", "1.1.0", "2.0.0"])}),
                   device("device-2", attrs={"driverVersion": ("versions", ["1.1.0", "2.0.0", "2.1.0"])})),
         expect=[alloc(res("req-0", "device-1"), res("req-0", "device-2"))]),
    Case("list-attributes-match-with-empty-or-unknown-type",
         [claim("claim-0", req("req-0", CLASS_A, 2), constraints=[match(STRING_ATTR)])],
         one_slice(device("device-1", attrs={"stringAttribute": {}}), device("device-2", attrs={"stringAttribute": {"strings": []}})),
         error="unsupported attribute value"),
    Case("list-attributes-disabled-match-constraint-with-lists",
         [claim("claim-0", req("req-0", CLASS_A, 2), constraints=[match(STRING_ATTR)])],
         one_slice(device("device-1", attrs={"stringAttribute": ["value1", "value2"]}),
                   device("device-2", attrs={"stringAttribute": ["value2", "value3"]})),
         features=Features(list_type_attributes=False)),
    Case("list-attributes-distinct-list-of-string-values",
         [claim("claim-0", req("req-0", CLASS_A, 2), constraints=[distinct(STRING_ATTR)])],
         one_slice(device("device-1", attrs={"stringAttribute": ["value1", "value2"]}),
                   device("device-2", attrs={"stringAttribute": ["value2", "value3"]}),
                   device("device-3", attrs={"stringAttribute": ["value3", "value4"]})),
         expect=[alloc(res("req-0", "device-1"), res("req-0", "device-3"))]),
    Case("list-attributes-distinct-mixed-scalar-and-list-with-common-elements",
         [claim("claim-0", req("req-0", CLASS_A, 2), constraints=[distinct(STRING_ATTR)])],
         one_slice(device("device-1", attrs={"stringAttribute": "value1"}),
                   device("device-2", attrs={"stringAttribute": ["value1", "value2"]}))),
    Case("list-attributes-distinct-bools",
         [claim("claim-0", req("req-0", CLASS_A, 2), constraints=[distinct(BOOL_ATTR)])],
         one_slice(device("device-1", attrs={"boolAttribute": [True]}), device("device-2", attrs={"boolAttribute": [True, False]}),
                   device("device-3", attrs={"boolAttribute": [False]})),
         expect=[alloc(res("req-0", "device-1"), res("req-0", "device-3"))]),
    Case("list-attributes-disabled-distinct-constraint-with-lists",
         [claim("claim-0", req("req-0", CLASS_A, 2), constraints=[distinct(STRING_ATTR)])],
         one_slice(device("device-1", attrs={"stringAttribute": ["value1"]}), device("device-2", attrs={"stringAttribute": ["value2"]})),
         features=Features(list_type_attributes=False)),

    # ---- config ---------------------------------------------------------------------------------
    Case("with-class-device-config", [claim("claim-0", req("req-0"))], one_slice(device("device-1")),
         classes=classes(device_class(CLASS_A, DRIVER_A, config="classAttribute")),
         expect=[alloc(res("req-0", "device-1"),
                       config=[{"source": "FromClass", "opaque": opaque(DRIVER_A, "classAttribute")}])]),
    Case("with-class-device-config-with-multiple-request-and-configs",
         [claim("claim-0", req("req-0"), req("req-1"), req("req-2", CLASS_B), constraints=[])],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_A, *many_devices(2)),
          rslice("slice-2", "node-1", "pool-1", DRIVER_B, device("device-1"))],
         classes=classes(device_class(CLASS_A, DRIVER_A, config="classAttribute-A"),
                         device_class(CLASS_B, DRIVER_B, config="classAttribute-B")),
         expect=[alloc(res("req-0", "device-0"), res("req-1", "device-1"), res("req-2", "device-1", driver=DRIVER_B),
                       config=[{"source": "FromClass", "requests": ["req-0", "req-1"],
                                "opaque": opaque(DRIVER_A, "classAttribute-A")},
                               {"source": "FromClass", "requests": ["req-2"],
                                "opaque": opaque(DRIVER_B, "classAttribute-B")}])]),
    Case("with-claim-config-for-two-requests",
         [claim("claim-0", req("req-0"), req("req-1"), req("req-2"),
                config=[claim_config(DRIVER_A, "deviceAttribute", "req-0", "req-1")])],
         one_slice(*many_devices(3)),
         expect=[alloc(res("req-0", "device-0"), res("req-1", "device-1"), res("req-2", "device-2"),
                       config=[{"source": "FromClaim", "requests": ["req-0", "req-1"],
                                "opaque": opaque(DRIVER_A, "deviceAttribute")}])]),
    Case("claim-with-device-config", [claim("claim-0", req("req-0"), config=[claim_config(DRIVER_A, "deviceAttribute")])],
         one_slice(device("device-1")),
         expect=[alloc(res("req-0", "device-1"),
                       config=[{"source": "FromClaim", "opaque": opaque(DRIVER_A, "deviceAttribute")}])]),
    Case("class-then-claim-config-order",
         [claim("claim-0", req("req-0"), config=[claim_config(DRIVER_A, "claimAttr")])],
         one_slice(device("device-1")), classes=classes(device_class(CLASS_A, DRIVER_A, config="classAttr")),
         expect=[alloc(res("req-0", "device-1"),
                       config=[{"source": "FromClass", "opaque": opaque(DRIVER_A, "classAttr")},
                               {"source": "FromClaim", "opaque": opaque(DRIVER_A, "claimAttr")}])]),
    Case("prioritized-list-device-config",
         [claim("claim-0", first("req-0", sub("subReq-0"), sub("subReq-1", CLASS_B, 2)),
                config=[claim_config(DRIVER_A, "foo", "req-0/subReq-0"), claim_config(DRIVER_B, "bar", "req-0/subReq-1")])],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_B, device("device-1"), device("device-2"))],
         expect=[alloc(res("req-0/subReq-1", "device-1", driver=DRIVER_B), res("req-0/subReq-1", "device-2", driver=DRIVER_B),
                       config=[{"source": "FromClaim", "opaque": opaque(DRIVER_B, "bar")}])]),
    Case("prioritized-list-class-config",
         [claim("claim-0", first("req-0", sub("subReq-0", CLASS_A, 2), sub("subReq-1", CLASS_B, 2)))],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_B, device("device-1"), device("device-2")),
          rslice("slice-2", "node-1", "pool-2", DRIVER_A, device("device-3"))],
         classes=classes(device_class(CLASS_A, DRIVER_A, config="foo"), device_class(CLASS_B, DRIVER_B, config="bar")),
         expect=[alloc(res("req-0/subReq-1", "device-1", driver=DRIVER_B), res("req-0/subReq-1", "device-2", driver=DRIVER_B),
                       config=[{"source": "FromClass", "opaque": opaque(DRIVER_B, "bar")}])]),
    Case("claim-config-scoped-to-subrequests-of-one-request",
         [claim("claim-0", first("req-0", sub("subReq-0"), sub("subReq-1", CLASS_B)), req("req-1"),
                config=[claim_config(DRIVER_A, "scoped", "req-0/subReq-0", "req-0/subReq-1")])],
         one_slice(*many_devices(2)),
         expect=[alloc(res("req-0/subReq-0", "device-0"), res("req-1", "device-1"),
                       config=[{"source": "FromClaim", "requests": ["req-0/subReq-0", "req-0/subReq-1"],
                                "opaque": opaque(DRIVER_A, "scoped")}])]),
    Case("claim-config-covering-all-requests-is-cleared",
         [claim("claim-0", first("req-0", sub("subReq-0"), sub("subReq-1", CLASS_B)), req("req-1"),
                config=[claim_config(DRIVER_A, "all", "req-0/subReq-0", "req-1")])],
         one_slice(*many_devices(2)),
         expect=[alloc(res("req-0/subReq-0", "device-0"), res("req-1", "device-1"),
                       config=[{"source": "FromClaim", "opaque": opaque(DRIVER_A, "all")}])]),
    Case("claim-config-for-unchosen-subrequest-is-dropped",
         [claim("claim-0", first("req-0", sub("subReq-0", CLASS_B), sub("subReq-1")),
                config=[claim_config(DRIVER_B, "b", "req-0/subReq-0"), claim_config(DRIVER_A, "a", "req-0/subReq-1")])],
         one_slice(device("device-1")),
         expect=[alloc(res("req-0/subReq-1", "device-1"), config=[{"source": "FromClaim", "opaque": opaque(DRIVER_A, "a")}])]),

    # ---- selectors and CEL errors ---------------------------------------------------------------
    Case("unknown-selector", [claim("claim-0", req("req-0", CLASS_A, 1, {}))], one_slice(device("device-1")),
         error="claim claim-0, request req-0, selector #0: CEL expression empty (unsupported selector type?)"),
    Case("unknown-allocation-mode", [claim("claim-0", req("req-0", mode="future-mode"))], one_slice(device("device-1")),
         error="claim claim-0, request req-0: unsupported count mode future-mode"),
    Case("invalid-CEL-one-device", [claim("claim-0", req("req-0", CLASS_A, 1, sel("noSuchVar")))],
         one_slice(device("device-1")),
         error="claim claim-0: selector #0: CEL compile error: compilation failed: ERROR: <input>:1:1: undeclared reference to 'noSuchVar'"),
    Case("invalid-CEL-one-device-class", [claim("claim-0", req("req-0"))], one_slice(device("device-1")),
         classes=classes(device_class(CLASS_A, expression="noSuchVar")),
         error="class class-a: selector #0: CEL compile error: compilation failed: ERROR: <input>:1:1: undeclared reference"),
    Case("invalid-CEL-all-devices", [claim("claim-0", all_req("req-0", CLASS_A, sel("noSuchVar")))],
         one_slice(device("device-1")), error="undeclared reference"),
    Case("invalid-CEL-no-devices-no-error", [claim("claim-0", req("req-0", CLASS_A, 1, sel("noSuchVar")))], one_slice()),
    Case("CEL-unknown-attribute-is-runtime-error",
         [claim("claim-0", req("req-0", CLASS_A, 1, sel('device.attributes["driver-a"].missing == 1')))],
         one_slice(device("device-1", attrs={"present": 1})),
         error="claim claim-0: selector #0 on device driver-a/pool-1/device-1: CEL runtime error: no such key: missing. "
               "consider using CEL optional chaining"),
    Case("CEL-unknown-domain-is-empty-map",
         [claim("claim-0", req("req-0", CLASS_A, 1, sel('!has(device.attributes["other.example.com"].model)')))],
         one_slice(device("device-1")), expect=[alloc(res("req-0", "device-1"))]),
    Case("CEL-error-after-solution-is-not-reported",
         [claim("claim-0", req("req-0", CLASS_A, 1, sel('device.attributes["driver-a"].ok')))],
         one_slice(device("device-1", attrs={"ok": True}), device("device-2")),
         expect=[alloc(res("req-0", "device-1"))]),
    Case("CEL-selector-with-quantity-semver-and-bind",
         [claim("claim-0", req("req-0", CLASS_A, 1, sel(
             'cel.bind(a, device.attributes["driver-a"], a.driverVersion.isGreaterThan(semver("1.2.0")) '
             '&& a.model.startsWith("A1")) && device.capacity["driver-a"].memory.isGreaterThan(quantity("50G"))')))],
         one_slice(device("device-1", attrs={"driverVersion": ("version", "1.2.0"), "model": "A100"}, capacity={"memory": "80Gi"}),
                   device("device-2", attrs={"driverVersion": ("version", "1.10.0"), "model": "A100"}, capacity={"memory": "40Gi"}),
                   device("device-3", attrs={"driverVersion": ("version", "1.10.0"), "model": "A100"}, capacity={"memory": "80Gi"})),
         expect=[alloc(res("req-0", "device-3"))]),

    # ---- the 32-devices-per-claim limit ----------------------------------------------------------
    Case("too-many-devices-single-request", [claim("claim-0", req("req-0", CLASS_A, 500))],
         error="claim claim-0: number of requested devices 500 exceeds the claim limit of 32"),
    Case("many-devices-okay", [claim("claim-0", req("req-0", CLASS_A, 32))]),
    Case("too-many-devices-total", [claim("claim-0", req("req-0", CLASS_A, 32), req("req-1"))],
         one_slice(*many_devices(33)), error="number of requested devices 33 exceeds the claim limit of 32"),
    Case("max-number-devices", [claim("claim-0", req("req-0", CLASS_A, 32))], one_slice(*many_devices(32)),
         expect=[alloc(*(res("req-0", f"device-{i}") for i in range(32)))]),
    Case("prioritized-list-max-allocation-limit-request",
         [claim("claim-0", first("req-0", sub("subReq-0", CLASS_A, 32), sub("subReq-1", CLASS_A, 16)),
                first("req-1", sub("subReq-0", CLASS_A, 32), sub("subReq-1", CLASS_A, 16)))],
         one_slice(*many_devices(64)),
         expect=[alloc(*(res("req-0/subReq-1", f"device-{i}") for i in range(16)),
                       *(res("req-1/subReq-1", f"device-{i}") for i in range(16, 32)))],
         invocations=75),
    Case("prioritized-list-max-allocation-allocation-mode-all",
         [claim("claim-0", first("req-0", sub("subReq-0", CLASS_A, None, mode="All"), sub("subReq-1", CLASS_A, 2)),
                req("req-1", CLASS_B, 2))],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_A, *many_devices(31)),
          rslice("slice-2", "node-1", "pool-2", DRIVER_B, *many_devices(2))],
         expect=[alloc(res("req-0/subReq-1", "device-0"), res("req-0/subReq-1", "device-1"),
                       res("req-1", "device-0", driver=DRIVER_B, pool="pool-2"),
                       res("req-1", "device-1", driver=DRIVER_B, pool="pool-2"))],
         invocations=42),
    Case("prioritized-list-too-many-in-first-subrequest",
         [claim("claim-0", first("req-0", sub("subReq-0", CLASS_B, 500), sub("subReq-1")))],
         one_slice(device("device-1")), expect=[alloc(res("req-0/subReq-1", "device-1"))]),

    # ---- prioritized lists ----------------------------------------------------------------------
    Case("prioritized-list-first-unavailable",
         [claim("claim-0", first("req-0", sub("subReq-0", CLASS_B), sub("subReq-1")))],
         one_slice(device("device-1")), expect=[alloc(res("req-0/subReq-1", "device-1"))]),
    Case("prioritized-list-non-available",
         [claim("claim-0", first("req-0", sub("subReq-0", CLASS_B, 2), sub("subReq-1", CLASS_A, 2)))],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_A, device("device-1")),
          rslice("slice-2", "node-1", "pool-2", DRIVER_B, device("device-1"))]),
    Case("prioritized-list-disabled", [claim("claim-0", first("req-0", sub("subReq-0")))], one_slice(device("device-1")),
         features=Features(prioritized_list=False),
         error="claim claim-0, request req-0: has subrequests, but the DRAPrioritizedList feature is disabled"),
    Case("prioritized-list-subrequests-with-expressions",
         [claim("claim-0", req("req-0", CLASS_A, 1, sel(mem("1Gi"))),
                first("req-1", sub("subReq-0", CLASS_A, 1, sel(mem("4Gi"))), sub("subReq-1", CLASS_A, 2, sel(mem("2Gi")))))],
         one_slice(mem_dev("device-1", "2Gi"), mem_dev("device-2", "2Gi"), mem_dev("device-3", "1Gi")),
         expect=[alloc(res("req-0", "device-3"), res("req-1/subReq-1", "device-1"), res("req-1/subReq-1", "device-2"))]),
    Case("prioritized-list-subrequests-with-constraints-ref-parent-request",
         [claim("claim-0", req("req-0", CLASS_A, 1, sel(mem("8Gi"))),
                first("req-1", sub("subReq-0", CLASS_A, 1, sel(mem("2Gi"))), sub("subReq-1", CLASS_A, 1, sel(mem("1Gi")))),
                constraints=[match(VERSION_ATTR, "req-0", "req-1")])],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_A, mem_dev("device-1", "8Gi", attrs={"driverVersion": ("version", "1.0.0")})),
          rslice("slice-2", "node-1", "pool-2", DRIVER_A,
                 mem_dev("device-2", "2Gi", attrs={"driverVersion": ("version", "2.0.0")}),
                 mem_dev("device-3", "1Gi", attrs={"driverVersion": ("version", "1.0.0")}))],
         expect=[alloc(res("req-0", "device-1"), res("req-1/subReq-1", "device-3", pool="pool-2"))]),
    Case("prioritized-list-subrequests-with-constraints-ref-sub-request",
         [claim("claim-0", req("req-0", CLASS_A, 1, sel(mem("8Gi"))),
                first("req-1", sub("subReq-0", CLASS_A, 1, sel(mem("2Gi"))), sub("subReq-1", CLASS_A, 1, sel(mem("1Gi")))),
                constraints=[match(VERSION_ATTR, "req-0", "req-1/subReq-0")])],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_A, mem_dev("device-1", "8Gi", attrs={"driverVersion": ("version", "1.0.0")})),
          rslice("slice-2", "node-1", "pool-2", DRIVER_A, mem_dev("device-2", "2Gi", attrs={"driverVersion": ("version", "2.0.0")}))],
         expect=[alloc(res("req-0", "device-1"), res("req-1/subReq-1", "device-2", pool="pool-2"))]),
    Case("prioritized-list-subrequests-with-allocation-mode-all",
         [claim("claim-0", first("req-0", sub("subReq-0", CLASS_A, None, mode="All"), sub("subReq-1")))],
         one_slice(device("device-1"), device("device-2")), allocated=[(DRIVER_A, "pool-1", "device-1")],
         expect=[alloc(res("req-0/subReq-1", "device-2"))]),
    Case("prioritized-list-allocation-mode-all-multiple-requests",
         [claim("claim-0", req("req-0"), first("req-1", sub("subReq-0", CLASS_A, None, mode="All"), sub("subReq-1")))],
         one_slice(device("device-1"), device("device-2")),
         expect=[alloc(res("req-0", "device-1"), res("req-1/subReq-1", "device-2"))]),
    Case("prioritized-list-multi-request",
         [claim("claim-0", req("req-1", CLASS_A, 1, sel(mem("8Gi"))),
                first("req-0", sub("subReq-0", CLASS_A, 1, sel(mem("8Gi"))), sub("subReq-1", CLASS_A, 1, sel(mem("4Gi")))))],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_A, mem_dev("device-1", "8Gi")),
          rslice("slice-2", "node-1", "pool-2", DRIVER_A, mem_dev("device-2", "4Gi"))],
         expect=[alloc(res("req-1", "device-1"), res("req-0/subReq-1", "device-2", pool="pool-2"))]),
    Case("prioritized-list-with-backtracking",
         [claim("claim-0", first("req-0", sub("subReq-0", CLASS_A, 1, sel(mem("8Gi"))), sub("subReq-1", CLASS_A, 1, sel(mem("4Gi")))),
                req("req-1", CLASS_A, 1, sel(mem("8Gi"))))],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_A, mem_dev("device-1", "8Gi")),
          rslice("slice-2", "node-1", "pool-2", DRIVER_A, mem_dev("device-2", "4Gi"))],
         expect=[alloc(res("req-0/subReq-1", "device-2", pool="pool-2"), res("req-1", "device-1"))]),
    Case("prioritized-list-backtracking-across-claims",
         [claim("claim-0", first("req-0", sub("subReq-0", CLASS_A, 1, sel(mem("8Gi"))), sub("subReq-1"))),
          claim("claim-1", req("req-0", CLASS_A, 1, sel(mem("8Gi"))))],
         one_slice(mem_dev("device-1", "8Gi"), mem_dev("device-2", "1Gi")),
         expect=[alloc(res("req-0/subReq-1", "device-2")), alloc(res("req-0", "device-1"))]),
    Case("prioritized-list-allocation-mode-all-with-selectors-deviceclass-subset",
         [claim("claim-0", first("req-0",
                                 sub("subReq-0", CLASS_A, None, sel('device.attributes["driver-a"].generation == "v6"'), mode="All"),
                                 sub("subReq-1", CLASS_A, None, sel('device.attributes["driver-a"].generation == "v5"'), mode="All")))],
         one_slice(device("device-1", attrs={"generation": "v6", "selected": False}),
                   device("device-2", attrs={"generation": "v5", "selected": False}),
                   device("device-3", attrs={"generation": "v5", "selected": True})),
         classes=classes(device_class(CLASS_A, expression='device.driver == "driver-a" && device.attributes["driver-a"].selected')),
         expect=[alloc(res("req-0/subReq-1", "device-3"))]),
    Case("all-devices-slice-without-devices-prioritized-list",
         [claim("claim-0", first("req-0", sub("subReq-0", CLASS_A, None, mode="All"), sub("subReq-1", CLASS_B)))],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_A), rslice("slice-2", "node-1", "pool-2", DRIVER_B, device("device-1"))],
         expect=[alloc(res("req-0/subReq-1", "device-1", driver=DRIVER_B, pool="pool-2"))]),

    # ---- partitionable devices ------------------------------------------------------------------
    Case("partitionable-devices-single-device", [claim("claim-0", req("req-0"))],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_A, device("device-1", consumesCounters=[consumes("counter-set-1", memory="4Gi")]), count=2),
          rslice("slice-2", "node-1", "pool-1", DRIVER_A, count=2, counters=[counter_set("counter-set-1", memory="8Gi")])],
         expect=[alloc(res("req-0", "device-1"))]),
    Case("all-devices-with-consumed-counters", [claim("claim-0", all_req("req-0"))],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_A, device("device-1", consumesCounters=[consumes("counter-set-1", memory="4Gi")]), count=2),
          rslice("slice-2", "node-1", "pool-1", DRIVER_A, count=2, counters=[counter_set("counter-set-1", memory="8Gi")])],
         expect=[alloc(res("req-0", "device-1"))]),
    Case("partitionable-devices-multiple-devices", [claim("claim-0", req("req-0"), req("req-1"))],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_A, counter_dev("device-1", memory="4Gi"), counter_dev("device-2", memory="6Gi"),
                 counter_dev("device-3", memory="4Gi"), count=2),
          rslice("slice-2", "node-1", "pool-1", DRIVER_A, count=2, counters=[counter_set("counter-set-1", memory="8Gi")])],
         expect=[alloc(res("req-0", "device-1"), res("req-1", "device-3"))]),
    Case("partitionable-devices-prioritized-list",
         [claim("claim-0", req("req-0"), first("req-1", sub("subReq-0", CLASS_A, 1, sel(mem("6Gi"))), sub("subReq-1", CLASS_A, 1, sel(mem("4Gi")))))],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_A, counter_dev("device-1", memory="4Gi"), counter_dev("device-2", memory="6Gi"),
                 counter_dev("device-3", memory="4Gi"), count=2),
          rslice("slice-2", "node-1", "pool-1", DRIVER_A, count=2, counters=[counter_set("counter-set-1", memory="8Gi")])],
         expect=[alloc(res("req-0", "device-1"), res("req-1/subReq-1", "device-3"))]),
    Case("partitionable-devices-multiple-counters", [claim("claim-0", req("req-0"), req("req-1"))],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_A,
                 device("device-1", consumesCounters=[consumes("counter-set-1", memory="4Gi", cpus="6"), consumes("counter-set-2", cpus="4", memory="2Gi")]),
                 device("device-2", consumesCounters=[consumes("counter-set-1", memory="6Gi", cpus="4"), consumes("counter-set-2", cpus="6", memory="6Gi")]),
                 device("device-3", consumesCounters=[consumes("counter-set-1", memory="4Gi", cpus="4"), consumes("counter-set-2", cpus="4", memory="4Gi")]),
                 count=2),
          rslice("slice-2", "node-1", "pool-1", DRIVER_A, count=2,
                 counters=[counter_set("counter-set-1", cpus="8", memory="18Gi"), counter_set("counter-set-2", cpus="12", memory="18Gi")])],
         expect=[alloc(res("req-0", "device-2"), res("req-1", "device-3"))]),
    Case("partitionable-devices-multiple-pools-with-allocated", [claim("claim-0", req("req-0"), req("req-1"))],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_A, device("device-1", consumesCounters=[consumes("counter-set-1", cpus="6", memory="4Gi")]),
                 device("device-2", consumesCounters=[consumes("counter-set-1", cpus="4", memory="6Gi")]),
                 device("device-3", consumesCounters=[consumes("counter-set-1", cpus="4", memory="4Gi")]), count=2),
          rslice("slice-2", "node-1", "pool-1", DRIVER_A, count=2, counters=[counter_set("counter-set-1", cpus="8", memory="18Gi")]),
          rslice("slice-3", "node-1", "pool-2", DRIVER_A, device("device-1", consumesCounters=[consumes("counter-set-1", cpus="6", memory="4Gi")]),
                 device("device-2", consumesCounters=[consumes("counter-set-1", cpus="1", memory="7Gi")]),
                 device("device-3", consumesCounters=[consumes("counter-set-1", cpus="1", memory="7Gi")]), count=2),
          rslice("slice-4", "node-1", "pool-2", DRIVER_A, count=2, counters=[counter_set("counter-set-1", cpus="8", memory="18Gi")])],
         allocated=[(DRIVER_A, "pool-1", "device-2"), (DRIVER_A, "pool-1", "device-3"), (DRIVER_A, "pool-2", "device-1")],
         expect=[alloc(res("req-0", "device-2", pool="pool-2"), res("req-1", "device-3", pool="pool-2"))]),
    Case("partitionable-devices-counter-exhaustion-backtracks", [claim("claim-0", req("req-0", CLASS_A, 2))],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_A, device("device-1", consumesCounters=[consumes("counter-set-1", memory="5Gi")]),
                 device("device-2", consumesCounters=[consumes("counter-set-1", memory="4Gi")]),
                 device("device-3", consumesCounters=[consumes("counter-set-1", memory="4Gi")]), count=2),
          rslice("slice-2", "node-1", "pool-1", DRIVER_A, count=2, counters=[counter_set("counter-set-1", memory="8Gi", unused="1Gi")])],
         expect=[alloc(res("req-0", "device-2"), res("req-0", "device-3"))]),
    Case("partitionable-devices-no-capacity-available", [claim("claim-0", req("req-0"))],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_A, counter_dev("device-1", memory="4Gi"), counter_dev("device-2", memory="16Gi"), count=2),
          rslice("slice-2", "node-1", "pool-1", DRIVER_A, count=2, counters=[counter_set("counter-set-1", memory="18Gi")])],
         allocated=[(DRIVER_A, "pool-1", "device-2")]),
    Case("partitionable-devices-overallocated-capacity-pool", [claim("claim-0", req("req-0"))],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_A, counter_dev("device-1", memory="4Gi"), counter_dev("device-2", memory="20Gi"), count=2),
          rslice("slice-2", "node-1", "pool-1", DRIVER_A, count=2, counters=[counter_set("counter-set-1", memory="18Gi")])],
         allocated=[(DRIVER_A, "pool-1", "device-2")]),
    Case("partitionable-devices-disabled-device-consumes-counters", [claim("claim-0", req("req-0"))],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_A, device("device-1", consumesCounters=[consumes("counter-set-1", memory="4Gi")])),
          rslice("slice-2", "node-1", "pool-1", DRIVER_A, counters=[counter_set("counter-set-1", memory="18Gi")])],
         features=Features(partitionable_devices=False)),
    Case("partitionable-devices-disabled-other-device-do-not-consume-counters", [claim("claim-0", req("req-0"))],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_A, device("device-1", consumesCounters=[consumes("counter-set-1", memory="4Gi")]),
                 device("device-2"), count=2),
          rslice("slice-2", "node-1", "pool-1", DRIVER_A, count=2, counters=[counter_set("counter-set-1", memory="18Gi")])],
         features=Features(partitionable_devices=False), expect=[alloc(res("req-0", "device-2"))]),
    Case("partitionable-devices-disabled-per-device-node-selection", [claim("claim-0", req("req-0"))],
         [rslice("slice-1", PER_DEVICE, "pool-1", DRIVER_A, device("device-2", nodeName="node-1"))],
         features=Features(partitionable_devices=False)),
    Case("partitionable-devices-per-device-node-selection-nodename",
         [claim("claim-0", first("req-0", sub("subReq-0", CLASS_A, 1, sel(mem("6Gi"))), sub("subReq-1", CLASS_A, 1, sel(mem("4Gi")))))],
         [rslice("slice-1", PER_DEVICE, "pool-1", DRIVER_A, {**counter_dev("device-1", memory="4Gi"), "nodeName": "node-1"},
                 {**counter_dev("device-2", memory="6Gi"), "nodeName": "node-2"}, count=2),
          rslice("slice-2", PER_DEVICE, "pool-1", DRIVER_A, count=2, counters=[counter_set("counter-set-1", memory="18Gi")])],
         expect=[alloc(res("req-0/subReq-1", "device-1"))]),
    Case("partitionable-devices-per-device-node-selection-node-selector", [claim("claim-0", req("req-0"))],
         [rslice("slice-1", PER_DEVICE, "pool-1", DRIVER_A,
                 {**counter_dev("device-1", memory="4Gi"), "nodeSelector": labels_selector("region", "region-1")}, count=2),
          rslice("slice-2", PER_DEVICE, "pool-1", DRIVER_A, count=2, counters=[counter_set("counter-set-1", memory="18Gi")])],
         expect=[alloc(res("req-0", "device-1"), selector=labels_selector("region", "region-1"))]),
    Case("partitionable-devices-devices-consume-counter-set-in-different-nodes", [claim("claim-0", req("req-0"))],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_A, count=3, counters=[counter_set("counter-set-1", memory="8Gi")]),
          rslice("slice-2", "node-1", "pool-1", DRIVER_A, counter_dev("device-1", memory="6Gi"), count=3),
          rslice("slice-3", "node-2", "pool-1", DRIVER_A, counter_dev("device-2", memory="6Gi"), counter_dev("device-3", memory="2Gi"), count=3)],
         node=node("node-2"), allocated=[(DRIVER_A, "pool-1", "device-1")],
         expect=[alloc(res("req-0", "device-3"), selector=local("node-2"))]),
    Case("partitionable-devices-same-counter-set-name-in-different-resource-slices", [claim("claim-0", req("req-0"))],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_A, device("device-1"), count=4),
          rslice("slice-2", "node-1", "pool-1", DRIVER_A, count=4, counters=[counter_set("counter-set-1")]),
          rslice("slice-3", "node-1", "pool-1", DRIVER_A, device("device-2"), count=4),
          rslice("slice-4", "node-1", "pool-1", DRIVER_A, count=4, counters=[counter_set("counter-set-1")])],
         node_error="invalid resource pools were encountered"),
    Case("partitionable-devices-device-counter-consumption-references-unknown-counter-set", [claim("claim-0", req("req-0"))],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_A, device("device-1", consumesCounters=[consumes("counter-set-2")]), count=2),
          rslice("slice-2", "node-1", "pool-1", DRIVER_A, count=2, counters=[counter_set("counter-set-1")])],
         node_error="invalid resource pools were encountered"),
    Case("partitionable-devices-device-counter-consumption-references-unknown-counter", [claim("claim-0", req("req-0"))],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_A, device("device-1", consumesCounters=[consumes("counter-set-1", memory="8Gi")]), count=2),
          rslice("slice-2", "node-1", "pool-1", DRIVER_A, count=2, counters=[counter_set("counter-set-1", **{"other-memory": "8Gi"})])],
         node_error="invalid resource pools were encountered"),

    # ---- taints and tolerations -----------------------------------------------------------------
    Case("tainted-two-devices", [claim("claim-0", req("req-0"))],
         one_slice(device("device-1", taints=[TAINT_NO_SCHEDULE]), device("device-2", taints=[TAINT_NO_EXECUTE]))),
    Case("tainted-two-devices-tolerated", [claim("claim-0", req("req-0", tolerations=[TOL_NO_EXECUTE]))],
         one_slice(device("device-1", taints=[TAINT_NO_SCHEDULE]), device("device-2", taints=[TAINT_NO_EXECUTE])),
         expect=[alloc(res("req-0", "device-2", tolerations=[TOL_NO_EXECUTE]))]),
    Case("tainted-two-devices-prioritized-list-tolerated",
         [claim("claim-0", first("req-0", sub("subReq-0"), sub("subReq-1", tolerations=[TOL_NO_EXECUTE])))],
         one_slice(device("device-1", taints=[TAINT_NO_SCHEDULE]), device("device-2", taints=[TAINT_NO_EXECUTE])),
         expect=[alloc(res("req-0/subReq-1", "device-2", tolerations=[TOL_NO_EXECUTE]))]),
    Case("tainted-no-effect", [claim("claim-0", req("req-0"))], one_slice(device("device-1", taints=[TAINT_NONE])),
         expect=[alloc(res("req-0", "device-1"))]),
    Case("tainted-one-device-two-taints-both-tolerated",
         [claim("claim-0", req("req-0", tolerations=[TOL_NO_SCHEDULE, TOL_NO_EXECUTE]))],
         one_slice(device("device-1", taints=[TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE])),
         expect=[alloc(res("req-0", "device-1", tolerations=[TOL_NO_SCHEDULE, TOL_NO_EXECUTE]))]),
    Case("tainted-disabled", [claim("claim-0", req("req-0"))],
         one_slice(device("device-1", taints=[TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE])),
         features=Features(device_taints=False), expect=[alloc(res("req-0", "device-1"))]),
    Case("tainted-admin-access", [claim("claim-0", req("req-0", admin=True))],
         one_slice(device("device-1", taints=[TAINT_NO_SCHEDULE])),
         allocated=[(DRIVER_A, "pool-1", "device-1"), (DRIVER_A, "pool-1", "device-2")]),
    Case("tainted-all-devices-single", [claim("claim-0", all_req("req-0"))],
         one_slice(device("device-1", taints=[TAINT_NO_SCHEDULE]))),
    Case("taint-rule-by-device", [claim("claim-0", req("req-0"))], one_slice(device("device-1"), device("device-2")),
         rules=[taint_rule("r", TAINT_NO_SCHEDULE, driver=DRIVER_A, pool="pool-1", device_name="device-1")],
         expect=[alloc(res("req-0", "device-2"))]),
    Case("taint-rule-by-pool-tolerated-by-exists-without-key", [claim("claim-0", req("req-0", tolerations=[toleration(operator="Exists")]))],
         one_slice(device("device-1")), rules=[taint_rule("r", TAINT_NO_EXECUTE, pool="pool-1")],
         expect=[alloc(res("req-0", "device-1", tolerations=[toleration(operator="Exists")]))]),
    Case("taint-rule-other-driver-does-not-apply", [claim("claim-0", req("req-0"))], one_slice(device("device-1")),
         rules=[taint_rule("r", TAINT_NO_SCHEDULE, driver=DRIVER_B)], expect=[alloc(res("req-0", "device-1"))]),
    Case("taint-rule-without-selector-applies-to-all", [claim("claim-0", req("req-0"))], one_slice(device("device-1")),
         rules=[taint_rule("r", TAINT_NO_SCHEDULE, no_selector=True)]),
    Case("taint-rule-effect-none", [claim("claim-0", req("req-0"))], one_slice(device("device-1")),
         rules=[taint_rule("r", TAINT_NONE)], expect=[alloc(res("req-0", "device-1"))]),
    Case("toleration-wrong-value-does-not-tolerate",
         [claim("claim-0", req("req-0", tolerations=[toleration("taint-key", value="other", effect="NoSchedule")]))],
         one_slice(device("device-1", taints=[TAINT_NO_SCHEDULE]))),

    # ---- binding conditions ---------------------------------------------------------------------
    Case("device-binding-conditions", [claim("claim-0", req("req-0"))],
         one_slice(device("device-1", bindingConditions=["IsPrepare"], bindingFailureConditions=["BindingFailed"])),
         expect=[alloc(res("req-0", "device-1", bc=["IsPrepare"], bfc=["BindingFailed"]))]),
    Case("binding-conditions-without-feature-gate", [claim("claim-0", req("req-0"))],
         one_slice(device("device-1", bindingConditions=["IsPrepare"], bindingFailureConditions=["BindingFailed"])),
         features=Features(device_binding_and_status=False)),
    Case("binding-conditions-pools-go-last", [claim("claim-0", req("req-0"))],
         [rslice("slice-1", "node-1", "pool-a", DRIVER_A, device("device-1", bindingConditions=["Ready"], bindingFailureConditions=["Failed"])),
          rslice("slice-2", "node-1", "pool-z", DRIVER_A, device("device-2"))],
         expect=[alloc(res("req-0", "device-2", pool="pool-z"))]),
    Case("binding-conditions-slices-go-last-within-a-pool", [claim("claim-0", req("req-0"))],
         [rslice("slice-a", "node-1", "pool-1", DRIVER_A, device("device-1", bindingConditions=["Ready"],
                                                                   bindingFailureConditions=["Failed"]), count=2),
          rslice("slice-b", "node-1", "pool-1", DRIVER_A, device("device-2"), count=2)],
         expect=[alloc(res("req-0", "device-2", pool="pool-1"))]),
    Case("partitionable-devices-with-binding-conditions-multi-slices", [claim("claim-0", req("req-0", CLASS_A, 2))],
         [rslice("slice-4", "node-1", "pool-1", DRIVER_A,
                 {**counter_dev("device-1", memory="4Gi"), "bindingConditions": ["IsPrepare"], "bindingFailureConditions": ["BindingFailed"]}, count=4),
          rslice("slice-3", "node-1", "pool-1", DRIVER_A, count=4, counters=[counter_set("counter-set-1", memory="8Gi")]),
          rslice("slice-2", "node-1", "pool-1", DRIVER_A, counter_dev("device-2", "counter-set-2", memory="4Gi"), count=4),
          rslice("slice-1", "node-1", "pool-1", DRIVER_A, count=4, counters=[counter_set("counter-set-2", memory="8Gi")])],
         expect=[alloc(res("req-0", "device-2"), res("req-0", "device-1", bc=["IsPrepare"], bfc=["BindingFailed"]))]),

    # ---- consumable capacity --------------------------------------------------------------------
    Case("consumable-capacity-disabled-feature", [claim("claim-0", req("req-0", capacity={"capacity-0": "1"}))],
         one_slice(device("device-1")), features=Features(consumable_capacity=False),
         error="claim claim-0, request req-0: has capacity requests, but the DRAConsumableCapacity feature is disabled"),
    Case("consumable-capacity-missing-capacity-on-device", [claim("claim-0", req("req-0", capacity={"capacity-0": "1"}))],
         one_slice(device("device-1", capacity={"capacity-1": "1"}, allowMultipleAllocations=True))),
    Case("consumable-capacity-multi-allocatable-device-without-capacity",
         [claim("claim-0", req("req-0")), claim("claim-1", req("req-0"))],
         one_slice(device("device-1", allowMultipleAllocations=True)), classes=multi_class(True),
         expect=[alloc(res("req-0", "device-1", share=True)), alloc(res("req-0", "device-1", share=True))]),
    Case("consumable-capacity-without-policy-without-request-takes-everything",
         [claim("claim-0", req("req-0")), claim("claim-1", req("req-0"))],
         one_slice(device("device-1", capacity={"capacity-0": "1"}, allowMultipleAllocations=True),
                   device("device-2", capacity={"capacity-0": "1"}, allowMultipleAllocations=True)), classes=multi_class(True),
         expect=[alloc(res("req-0", "device-1", consumed={"capacity-0": "1"})),
                 alloc(res("req-0", "device-2", consumed={"capacity-0": "1"}))]),
    Case("consumable-capacity-without-policy-with-request-shares",
         [claim("claim-0", req("req-0", capacity={"capacity-0": "1"})), claim("claim-1", req("req-0", capacity={"capacity-0": "1"}))],
         one_slice(device("device-1", capacity={"capacity-0": "2"}, allowMultipleAllocations=True)), classes=multi_class(True),
         expect=[alloc(res("req-0", "device-1", consumed={"capacity-0": "1"})),
                 alloc(res("req-0", "device-1", consumed={"capacity-0": "1"}))]),
    Case("consumable-capacity-with-range-policy-default", [claim("claim-0", req("req-0")), claim("claim-1", req("req-0"))],
         one_slice(device("device-1", capacity={"capacity-0": range_policy("4")}, allowMultipleAllocations=True)),
         classes=multi_class(True),
         expect=[alloc(res("req-0", "device-1", consumed={"capacity-0": "2"})),
                 alloc(res("req-0", "device-1", consumed={"capacity-0": "2"}))]),
    Case("consumable-capacity-with-range-policy-step-rounds-up", [claim("claim-0", req("req-0", capacity={"capacity-0": "3"}))],
         one_slice(device("device-1", capacity={"capacity-0": range_policy("4")}, allowMultipleAllocations=True)),
         classes=multi_class(True), expect=[alloc(res("req-0", "device-1", consumed={"capacity-0": "4"}))]),
    Case("consumable-capacity-request-over-max-policy", [claim("claim-0", req("req-0", capacity={"capacity-0": "6"}))],
         one_slice(device("device-1", capacity={"capacity-0": range_policy("10")}, allowMultipleAllocations=True)),
         classes=multi_class(True)),
    Case("consumable-capacity-valid-values-round-up", [claim("claim-0", req("req-0", capacity={"capacity-0": "2"}))],
         one_slice(device("device-1", capacity={"capacity-0": values_policy("3", "1", "3")}, allowMultipleAllocations=True)),
         classes=multi_class(True), expect=[alloc(res("req-0", "device-1", consumed={"capacity-0": "3"}))]),
    Case("consumable-capacity-zero-default-policy", [claim("claim-0", req("req-0")), claim("claim-1", req("req-0"))],
         one_slice(device("device-1", capacity={"capacity-0": values_policy("1", "0")}, allowMultipleAllocations=True)),
         classes=multi_class(True),
         expect=[alloc(res("req-0", "device-1", consumed={"capacity-0": "0"})),
                 alloc(res("req-0", "device-1", consumed={"capacity-0": "0"}))]),
    Case("consumable-capacity-violates-zero-request-policy", [claim("claim-0", req("req-0", capacity={"capacity-0": "1"}))],
         one_slice(device("device-1", capacity={"capacity-0": values_policy("1", "0")}, allowMultipleAllocations=True)),
         classes=multi_class(True)),
    Case("consumable-capacity-allocated-capacity-use-remaining", [claim("claim-0", req("req-0", capacity={"capacity-0": "2"}))],
         one_slice(device("device-1", capacity={"capacity-0": range_policy("4")}, allowMultipleAllocations=True)),
         classes=multi_class(True),
         allocated_claims=[allocated_claim({"request": "r", "driver": DRIVER_A, "pool": "pool-1", "device": "device-1",
                                            "shareID": "11111111-1111-1111-1111-111111111111", "consumedCapacity": {"capacity-0": "2"}})],
         expect=[alloc(res("req-0", "device-1", consumed={"capacity-0": "2"}))]),
    Case("consumable-capacity-allocated-capacity-next-device", [claim("claim-0", req("req-0", capacity={"capacity-0": "2"}))],
         one_slice(device("device-1", capacity={"capacity-0": range_policy("2")}, allowMultipleAllocations=True),
                   device("device-2", capacity={"capacity-0": range_policy("2")}, allowMultipleAllocations=True)),
         classes=multi_class(True),
         allocated_claims=[allocated_claim({"request": "r", "driver": DRIVER_A, "pool": "pool-1", "device": "device-1",
                                            "shareID": "11111111-1111-1111-1111-111111111111", "consumedCapacity": {"capacity-0": "2"}})],
         expect=[alloc(res("req-0", "device-2", consumed={"capacity-0": "2"}))]),
    Case("consumable-capacity-with-multi-allocatable-device-backtrack",
         [claim("claim-0", req("req-0", capacity={"capacity-0": "2"}), req("req-1", capacity={"capacity-0": "2"}),
                constraints=[match(STRING_ATTR)]),
          claim("claim-1", req("req-0", capacity={"capacity-0": "2"}))],
         one_slice(device("device-2", attrs={"stringAttribute": "v1"}, capacity={"capacity-0": range_policy("2")}, allowMultipleAllocations=True),
                   device("device-1", attrs={"stringAttribute": "v2"}, capacity={"capacity-0": range_policy("4")}, allowMultipleAllocations=True)),
         expect=[alloc(res("req-0", "device-1", consumed={"capacity-0": "2"}), res("req-1", "device-1", consumed={"capacity-0": "2"})),
                 alloc(res("req-0", "device-2", consumed={"capacity-0": "2"}))]),
    Case("consumable-capacity-multi-allocatable-device-with-subrequest",
         [claim("claim-0", first("req-0", sub("subReq-0", capacity={"capacity-0": "4"}), sub("subReq-1", capacity={"capacity-0": "2"}),
                                 sub("subReq-2")))],
         one_slice(device("device-1", capacity={"capacity-0": range_policy("2")}, allowMultipleAllocations=True)),
         classes=multi_class(True), expect=[alloc(res("req-0/subReq-1", "device-1", consumed={"capacity-0": "2"}))]),
    Case("consumable-capacity-all-mode-allocating-insufficient",
         [claim("claim-0", req("req-0", capacity={"capacity-0": "1"}), all_req("req-1", capacity={"capacity-0": "1"}))],
         one_slice(device("device-1", capacity={"capacity-0": "1"}, allowMultipleAllocations=True),
                   device("device-2", capacity={"capacity-0": "1"}, allowMultipleAllocations=True))),
    Case("consumable-capacity-all-mode-allocating-sufficient",
         [claim("claim-0", req("req-0", capacity={"capacity-0": "1"}), all_req("req-1", capacity={"capacity-0": "1"}))],
         one_slice(device("device-1", capacity={"capacity-0": "2"}, allowMultipleAllocations=True),
                   device("device-2", capacity={"capacity-0": "1"}, allowMultipleAllocations=True)),
         expect=[alloc(res("req-0", "device-1", consumed={"capacity-0": "1"}), res("req-1", "device-1", consumed={"capacity-0": "1"}),
                       res("req-1", "device-2", consumed={"capacity-0": "1"}))]),
    Case("consumable-capacity-dedicated-device-with-capacity-request", [claim("claim-0", req("req-0", capacity={"capacity-0": "1"}))],
         one_slice(device("device-1", capacity={"capacity-0": "1"})), classes=multi_class(False),
         expect=[alloc(res("req-0", "device-1"))]),
    # DRAFractionalCapacityRange: a fractional range is computed in milli-units with the feature on,
    # in whole units (`Quantity.Value()`, rounded up) with it off.
    Case("consumable-capacity-fractional-range",
         [claim("claim-0", req("req-0", capacity={"capacity-0": "250m"})),
          claim("claim-1", req("req-0", capacity={"capacity-0": "250m"}))],
         one_slice(device("device-1", capacity={"capacity-0": FRACTIONAL_RANGE}, allowMultipleAllocations=True)),
         classes=multi_class(True),
         expect=[alloc(res("req-0", "device-1", consumed={"capacity-0": "300m"})),
                 alloc(res("req-0", "device-1", consumed={"capacity-0": "300m"}))]),
    Case("consumable-capacity-fractional-range-disabled",
         [claim("claim-0", req("req-0", capacity={"capacity-0": "250m"})),
          claim("claim-1", req("req-0", capacity={"capacity-0": "250m"}))],
         one_slice(device("device-1", capacity={"capacity-0": FRACTIONAL_RANGE}, allowMultipleAllocations=True)),
         classes=multi_class(True), features=Features(fractional_capacity_range=False)),
    Case("consumable-capacity-fractional-range-disabled-one-claim",
         [claim("claim-0", req("req-0", capacity={"capacity-0": "250m"}))],
         one_slice(device("device-1", capacity={"capacity-0": FRACTIONAL_RANGE}, allowMultipleAllocations=True)),
         classes=multi_class(True), features=Features(fractional_capacity_range=False), expect=[alloc(res("req-0", "device-1", consumed={"capacity-0": "1"}))]),
    Case("consumable-capacity-fractional-range-remaining",
         [claim("claim-0", req("req-0", capacity={"capacity-0": "500m"}))],
         one_slice(device("device-1", capacity={"capacity-0": FRACTIONAL_RANGE}, allowMultipleAllocations=True)),
         classes=multi_class(True),
         allocated_claims=[allocated_claim({"request": "req-0", "driver": DRIVER_A, "pool": "pool-1", "device": "device-1",
                                                       "shareID": "11111111-1111-1111-1111-111111111111",
                                                       "consumedCapacity": {"capacity-0": "600m"}})]),
    Case("allow-multiple-allocations-not-allocate-multi-allocatable-device-which-already-dedicated",
         [claim("claim-0", req("req-0", capacity={"capacity-0": "1"}))],
         one_slice(device("device-1", capacity={"capacity-0": range_policy("2")}, allowMultipleAllocations=True)),
         classes=multi_class(True), allocated=[(DRIVER_A, "pool-1", "device-1")]),
    Case("dedicated-allocation-refused-over-live-share",
         [claim("claim-0", req("req-0"))], one_slice(device("device-1")),
         allocated_claims=[allocated_claim({"request": "r", "driver": DRIVER_A, "pool": "pool-1", "device": "device-1",
                                            "shareID": "11111111-1111-1111-1111-111111111111"})]),
    Case("allow-multiple-allocations-with-partitionable-device",
         [claim("claim-0", req("req-0"), first("req-1", sub("subReq-0", CLASS_A, 1, sel(mem("6Gi"))), sub("subReq-1", CLASS_A, 1, sel(mem("4Gi")))))],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_A, {**counter_dev("device-1", memory="4Gi"), "allowMultipleAllocations": True},
                 {**counter_dev("device-2", memory="6Gi"), "allowMultipleAllocations": True},
                 {**counter_dev("device-3", memory="4Gi"), "allowMultipleAllocations": True}, count=2),
          rslice("slice-2", "node-1", "pool-1", DRIVER_A, count=2, counters=[counter_set("counter-set-1", memory="8Gi")])],
         classes=multi_class(True),
         expect=[alloc(res("req-0", "device-1", consumed={"memory": "4Gi"}), res("req-1/subReq-1", "device-3", consumed={"memory": "4Gi"}))]),
    Case("allow-multiple-allocations-with-shared-device-counter-cross-cycle",
         [claim("claim-0", req("req-0", CLASS_A, 1, sel('device.attributes["driver-a"].mode == "b"'), capacity={"capacity-0": "1"}))],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_A,
                 {**counter_dev("device-1", **{"capacity-0": "1"}), "allowMultipleAllocations": True, "attributes": {"mode": {"string": "a"}}},
                 {**counter_dev("device-2", **{"capacity-0": "1"}), "allowMultipleAllocations": True, "attributes": {"mode": {"string": "b"}}},
                 count=2),
          rslice("slice-2", "node-1", "pool-1", DRIVER_A, count=2, counters=[counter_set("counter-set-1", **{"capacity-0": "1"})])],
         classes=multi_class(True),
         allocated_claims=[allocated_claim({"request": "r", "driver": DRIVER_A, "pool": "pool-1", "device": "device-1",
                                            "shareID": "11111111-1111-1111-1111-111111111111", "consumedCapacity": {"capacity-0": "1"}})]),
    Case("persisted-share-without-capacity-skips-counter-check",
         [claim("claim-0", req("req-0"))],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_A,
                 {**device("device-1", consumesCounters=[consumes("counter-set-1", memory="8Gi")]), "allowMultipleAllocations": True}, count=2),
          rslice("slice-2", "node-1", "pool-1", DRIVER_A, count=2, counters=[counter_set("counter-set-1", memory="8Gi")])],
         classes=multi_class(True),
         allocated_claims=[allocated_claim({"request": "r", "driver": DRIVER_A, "pool": "pool-1", "device": "device-1",
                                            "shareID": "11111111-1111-1111-1111-111111111111"})],
         expect=[alloc(res("req-0", "device-1", share=True))]),
    Case("counters-released-when-taint-rejects-candidate",
         [claim("claim-0", req("req-0", CLASS_A, 1, sel('device.attributes["driver-a"].kind == "big"')),
                req("req-1", CLASS_A, 1, sel('device.attributes["driver-a"].kind == "small"')))],
         [rslice("slice-1", "node-1", "pool-1", DRIVER_A,
                 device("device-1", attrs={"kind": "big"}, consumesCounters=[consumes("counter-set-1", memory="6Gi")],
                        taints=[TAINT_NO_SCHEDULE]),
                 device("device-2", attrs={"kind": "big"}, consumesCounters=[consumes("counter-set-1", memory="4Gi")]),
                 device("device-3", attrs={"kind": "small"}, consumesCounters=[consumes("counter-set-1", memory="4Gi")]), count=2),
          rslice("slice-2", "node-1", "pool-1", DRIVER_A, count=2, counters=[counter_set("counter-set-1", memory="8Gi")])],
         expect=[alloc(res("req-0", "device-2"), res("req-1", "device-3"))]),
]


def _state(case: Case) -> AllocatedState:
    state = AllocatedState(consumable_capacity=case.features.consumable_capacity)
    for driver, pool, dev in case.allocated:
        state.add_allocation({"devices": {"results": [{"request": "r", "driver": driver, "pool": pool, "device": dev}]}})
    for c in case.allocated_claims:
        state.add_claim(c)
    return state


def _normalize(results: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    if results is None:
        return None
    out = copy.deepcopy(results)
    for r in out:
        for d in (r.get("devices") or {}).get("results") or []:
            if "shareID" in d:
                assert len(d["shareID"]) == 36 and d["shareID"] == d["shareID"].lower()
                d["shareID"] = SHARE
    return out


def _run(case: Case, *, prune: bool) -> tuple[Any, Allocator]:
    snapshot = copy.deepcopy((case.claims, case.slices, case.classes))
    allocator = Allocator(slices=case.slices, classes=case.classes, allocated=_state(case),
                          taint_rules=case.rules, features=case.features, cel_cache=CelCache(), prune=prune)
    try:
        outcome: Any = allocator.allocate(node=case.node, claims=case.claims)
    except (AllocationError, NodeAllocationError) as e:
        outcome = e
    assert snapshot == (case.claims, case.slices, case.classes), "inputs must not be modified"
    return outcome, allocator


@pytest.mark.parametrize("prune", [False, True], ids=["exhaustive", "pruned"])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_allocator(case: Case, prune: bool) -> None:
    outcome, allocator = _run(case, prune=prune)
    if case.error is not None:
        assert isinstance(outcome, AllocationError), outcome
        assert case.error in str(outcome)
        return
    if case.node_error is not None:
        assert isinstance(outcome, NodeAllocationError), outcome
        assert case.node_error in str(outcome)
        return
    assert not isinstance(outcome, Exception), outcome
    assert _normalize(outcome) == case.expect
    if case.invocations is not None and not prune:
        assert allocator.stats.allocate_one_invocations == case.invocations


def test_case_names_are_unique() -> None:
    names = [c.name for c in CASES]
    assert len(names) == len(set(names))


# ---- behaviour outside the table ---------------------------------------------------------------


def test_timeout_on_a_search_without_solution() -> None:
    """32 of 40 matching devices where every device also has to match a constraint no 32 share:
    exponential without a deadline. The deadline stops it."""
    devices = [device(f"device-{i}", attrs={"group": i % 2}) for i in range(40)]
    c = claim("claim-0", req("req-0", CLASS_A, 21), constraints=[match("driver-a/group")])
    allocator = Allocator(slices=one_slice(*devices), classes=DEFAULT_CLASSES, allocated=AllocatedState(),
                          deadline=time.monotonic() + 0.2)
    started = time.monotonic()
    with pytest.raises(AllocationTimeout):
        allocator.allocate(node=node(), claims=[c])
    assert time.monotonic() - started < 2


def test_expired_deadline_fails_immediately() -> None:
    allocator = Allocator(slices=one_slice(device("device-1")), classes=DEFAULT_CLASSES, allocated=AllocatedState())
    with pytest.raises(AllocationTimeout):
        allocator.allocate(node=node(), claims=[claim("claim-0", req("req-0"))], deadline=time.monotonic() - 1)


def test_pruning_cuts_max_minus_one_search() -> None:
    """Upstream's pathological case: requesting one device more than match explores every
    subset (2**n calls) without a pre-check; with pruning the search ends after one descent."""
    c = claim("claim-0", req("req-0", CLASS_A, 16))
    slices = one_slice(*many_devices(15))
    exhaustive = Allocator(slices=slices, classes=DEFAULT_CLASSES, allocated=AllocatedState(), prune=False)
    assert exhaustive.allocate(node=node(), claims=[c]) is None
    assert exhaustive.stats.allocate_one_invocations == 2**15
    pruned = Allocator(slices=slices, classes=DEFAULT_CLASSES, allocated=AllocatedState())
    assert pruned.allocate(node=node(), claims=[c]) is None
    assert pruned.stats.allocate_one_invocations < 200
    assert pruned.stats.pruned > 0


def test_allocator_is_reusable_across_nodes_and_calls() -> None:
    slices = [rslice("slice-1", "node-1", "pool-1", DRIVER_A, device("device-1")),
              rslice("slice-2", "node-2", "pool-2", DRIVER_A, device("device-1"))]
    allocator = Allocator(slices=slices, classes=DEFAULT_CLASSES, allocated=AllocatedState())
    c = claim("claim-0", req("req-0"))
    assert allocator.allocate(node=node("node-1"), claims=[c]) == [alloc(res("req-0", "device-1"))]
    assert allocator.allocate(node=node("node-2"), claims=[c]) == [
        alloc(res("req-0", "device-1", pool="pool-2"), selector=local("node-2"))]
    assert allocator.allocate(node=node("node-3"), claims=[c]) is None


def test_allocated_state_add_and_remove() -> None:
    slices = one_slice(device("device-1"), device("device-2"))
    state = AllocatedState()
    first_claim = claim("claim-0", req("req-0"))
    allocator = Allocator(slices=slices, classes=DEFAULT_CLASSES, allocated=state)
    result = allocator.allocate(node=node(), claims=[first_claim])
    assert result == [alloc(res("req-0", "device-1"))]
    done = {**first_claim, "status": {"allocation": result[0]}}
    state.add_claim(done)
    assert state.is_allocated((DRIVER_A, "pool-1", "device-1"))
    again = Allocator(slices=slices, classes=DEFAULT_CLASSES, allocated=state)
    assert again.allocate(node=node(), claims=[claim("claim-1", req("req-0"))]) == [alloc(res("req-0", "device-2"))]
    state.remove_claim(done)
    assert not state.is_allocated((DRIVER_A, "pool-1", "device-1"))
    assert again.allocate(node=node(), claims=[claim("claim-1", req("req-0"))]) == [alloc(res("req-0", "device-1"))]


def test_allocated_state_shared_capacity_is_reference_counted() -> None:
    share = {"request": "r", "driver": DRIVER_A, "pool": "p", "device": "d", "consumedCapacity": {"mem": "1Gi"}}
    state = AllocatedState()
    state.add_allocation({"devices": {"results": [{**share, "shareID": "a"}]}})
    state.add_allocation({"devices": {"results": [{**share, "shareID": "b"}]}})
    assert state.aggregated_capacity[(DRIVER_A, "p", "d")] == {"mem": 2 * 2**30 * 10**9}
    state.remove_allocation({"devices": {"results": [{**share, "shareID": "a"}]}})
    assert state.aggregated_capacity[(DRIVER_A, "p", "d")] == {"mem": 2**30 * 10**9}
    state.remove_allocation({"devices": {"results": [{**share, "shareID": "b"}]}})
    assert not state.is_allocated((DRIVER_A, "p", "d"))
    off = AllocatedState(consumable_capacity=False)
    off.add_allocation({"devices": {"results": [{**share, "shareID": "a"}]}})
    assert off.allocated_devices == {(DRIVER_A, "p", "d"): 1}


def test_share_ids_are_fresh_uuids() -> None:
    c = [claim("claim-0", req("req-0")), claim("claim-1", req("req-0"))]
    allocator = Allocator(slices=one_slice(device("device-1", allowMultipleAllocations=True)),
                          classes=multi_class(True), allocated=AllocatedState())
    out = allocator.allocate(node=node(), claims=c)
    assert out is not None
    ids = [o["devices"]["results"][0]["shareID"] for o in out]
    assert len(set(ids)) == 2


def test_cel_cache_reused_across_allocators_with_versioned_slices() -> None:
    cache = CelCache()
    s = rslice("slice-1", "node-1", "pool-1", DRIVER_A, device("device-1", attrs={"ok": True}),
               uid="u1", generation=1, resourceVersion="5")
    c = claim("claim-0", req("req-0", CLASS_A, 1, sel('device.attributes["driver-a"].ok')))
    a1 = Allocator(slices=[s], classes=DEFAULT_CLASSES, allocated=AllocatedState(), cel_cache=cache)
    assert a1.allocate(node=node(), claims=[c]) is not None
    info1 = a1._info(s)
    a2 = Allocator(slices=[copy.deepcopy(s)], classes=DEFAULT_CLASSES, allocated=AllocatedState(), cel_cache=cache)
    assert a2.allocate(node=node(), claims=[c]) is not None
    assert a2._info(a2._slices_on_node["node-1"][0]) is info1  # same version: shared, results cached
    changed = copy.deepcopy(s)
    changed["metadata"]["generation"] = 2
    changed["metadata"]["resourceVersion"] = "6"
    changed["spec"]["devices"][0]["attributes"]["ok"] = {"bool": False}
    a3 = Allocator(slices=[changed], classes=DEFAULT_CLASSES, allocated=AllocatedState(), cel_cache=cache)
    assert a3.allocate(node=node(), claims=[c]) is None


def _random_scenario(rng: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]], AllocatedState]:
    slices = []
    for p in range(rng.randint(1, 3)):
        devs = []
        for i in range(rng.randint(0, 6)):
            attrs: dict[str, Any] = {"kind": rng.choice(["x", "y"]), "numa": rng.randint(0, 2)}
            if rng.random() < 0.3:
                attrs["set"] = sorted(rng.sample(["a", "b", "c"], rng.randint(1, 2)))
            extra: dict[str, Any] = {}
            if rng.random() < 0.15:
                extra["taints"] = [TAINT_NO_SCHEDULE]
            if rng.random() < 0.2:
                extra["consumesCounters"] = [consumes("cs", mem=f"{rng.randint(1, 3)}Gi")]
            devs.append(device(f"d{i}", attrs=attrs, **extra))
        counters = [counter_set("cs", mem="4Gi")]
        slices.append(rslice(f"s{p}", "node-1", f"pool-{p}", DRIVER_A, *devs, count=2))
        slices.append(rslice(f"s{p}-counters", "node-1", f"pool-{p}", DRIVER_A, count=2, counters=counters))
    claims = []
    for c in range(rng.randint(1, 3)):
        reqs = []
        for r in range(rng.randint(1, 3)):
            selectors = [sel(f'device.attributes["driver-a"].kind == "{rng.choice(["x", "y"])}"')] if rng.random() < 0.5 else []
            tolerations = [TOL_NO_SCHEDULE] if rng.random() < 0.2 else None
            if rng.random() < 0.3:
                reqs.append(first(f"r{r}", sub("a", CLASS_A, rng.randint(1, 3), *selectors),
                                  sub("b", CLASS_A, 1, tolerations=tolerations)))
            elif rng.random() < 0.1:
                reqs.append(all_req(f"r{r}", CLASS_A, *selectors))
            else:
                reqs.append(req(f"r{r}", CLASS_A, rng.randint(1, 3), *selectors, tolerations=tolerations))
        constraints = []
        if rng.random() < 0.4:
            constraints.append(match("driver-a/numa"))
        if rng.random() < 0.2:
            constraints.append(distinct("driver-a/set"))
        claims.append(claim(f"c{c}", *reqs, constraints=constraints))
    state = AllocatedState()
    for s in slices:
        for d in s["spec"].get("devices", []):
            if rng.random() < 0.15:
                state.add_allocation({"devices": {"results": [
                    {"request": "r", "driver": DRIVER_A, "pool": s["spec"]["pool"]["name"], "device": d["name"]}]}})
    return slices, claims, state


def test_pruning_never_changes_the_outcome() -> None:
    import random

    rng = random.Random(1234)
    outcomes = {"allocated": 0, "none": 0, "error": 0}
    for _ in range(400):
        slices, claims, state = _random_scenario(rng)
        results = []
        for prune in (False, True):
            allocator = Allocator(slices=slices, classes=DEFAULT_CLASSES, allocated=state, prune=prune)
            try:
                out: Any = _normalize(allocator.allocate(node=node(), claims=claims))
            except (AllocationError, NodeAllocationError) as e:
                out = (type(e).__name__, str(e))
            results.append(out)
        assert results[0] == results[1]
        outcomes["none" if results[0] is None else "error" if isinstance(results[0], tuple) else "allocated"] += 1
    assert outcomes["allocated"] > 50 and outcomes["none"] > 50


def test_many_claims_with_many_devices_do_not_hit_the_recursion_limit() -> None:
    claims = [claim(f"claim-{i}", req("req-0", CLASS_A, 32)) for i in range(40)]
    allocator = Allocator(slices=one_slice(*many_devices(40 * 32)), classes=DEFAULT_CLASSES, allocated=AllocatedState())
    out = allocator.allocate(node=node(), claims=claims)
    assert out is not None
    assert [r["device"] for r in out[39]["devices"]["results"]][-1] == f"device-{40 * 32 - 1}"
