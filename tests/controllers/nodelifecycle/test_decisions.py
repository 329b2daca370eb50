"""The node lifecycle and taint eviction decisions as pure functions: which conditions go Unknown
(and with which reasons), which taints a Node's conditions call for (kept, swapped, removed, with
timeAdded), when a pod's tolerations let it stay, and the pod Ready condition going False.

Out of scope: the controllers against a server (test_nodelifecycle_integration.py).
"""

from __future__ import annotations

from typing import Any

from controllers import nodelifecycle as nl
from controllers.taint_eviction import eviction_delay
from cp import clock as clocks
from tests.controllers.support import START

NOW = START + 100
CREATED = clocks.rfc3339(START)
HEARTBEAT = clocks.rfc3339(START + 10)


def _node(*, conditions: list[dict[str, Any]] | None = None, taints: list[dict[str, Any]] | None = None,
          unschedulable: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if taints is not None:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {"metadata": {"name": "n", "creationTimestamp": CREATED}, "spec": spec,
            "status": {"conditions": conditions or []}}


def _cond(type_: str, status: str, reason: str = "Kubelet") -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": "m",
            "lastHeartbeatTime": HEARTBEAT, "lastTransitionTime": CREATED}


def test_unknown_conditions_keep_heartbeats_and_add_missing_ones() -> None:
    node = _node(conditions=[_cond("Ready", "True"), _cond("MemoryPressure", "False"),
                             _cond("NetworkUnavailable", "False"), _cond("PIDPressure", "Unknown", "Earlier")])
    got = {c["type"]: c for c in nl.unknown_conditions(node, NOW)}
    assert got["Ready"] == {"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
                            "message": "Kubelet stopped posting node status.", "lastHeartbeatTime": HEARTBEAT,
                            "lastTransitionTime": clocks.rfc3339(NOW)}
    assert got["MemoryPressure"]["status"] == "Unknown"
    assert got["NetworkUnavailable"] == _cond("NetworkUnavailable", "False")  # not the controller's
    assert got["PIDPressure"] == _cond("PIDPressure", "Unknown", "Earlier")  # already Unknown: untouched
    assert got["DiskPressure"] == {"type": "DiskPressure", "status": "Unknown", "reason": "NodeStatusNeverUpdated",
                                   "message": "Kubelet never posted node status.", "lastHeartbeatTime": CREATED,
                                   "lastTransitionTime": clocks.rfc3339(NOW)}


def _keys(taints: list[dict[str, Any]] | None) -> list[tuple[str, str]] | None:
    return None if taints is None else [(t["key"], t["effect"]) for t in taints]


def test_taints_follow_ready_and_pressure_conditions() -> None:
    stamp = clocks.rfc3339(NOW)
    node = _node(conditions=[_cond("Ready", "Unknown"), _cond("DiskPressure", "True")],
                 taints=[{"key": "example.com/gpu", "effect": "NoSchedule"}])
    taints = nl.desired_taints(node, observed_ready="Unknown", now=NOW)
    assert taints is not None
    assert _keys(taints) == [("example.com/gpu", "NoSchedule"), ("node.kubernetes.io/disk-pressure", "NoSchedule"),
                             (nl.UNREACHABLE, "NoExecute"), (nl.UNREACHABLE, "NoSchedule")]
    assert all(t.get("timeAdded") == stamp for t in taints[1:])
    # Nothing more to do once they are there.
    assert nl.desired_taints(_node(conditions=node["status"]["conditions"], taints=taints),
                             observed_ready="Unknown", now=NOW + 5) is None


def test_not_ready_replaces_unreachable_and_ready_removes_both() -> None:
    had = [{"key": nl.UNREACHABLE, "effect": "NoExecute", "timeAdded": CREATED},
           {"key": nl.UNREACHABLE, "effect": "NoSchedule", "timeAdded": CREATED},
           {"key": "other", "effect": "NoExecute"}]
    swapped = nl.desired_taints(_node(conditions=[_cond("Ready", "False")], taints=had), observed_ready="False",
                                now=NOW)
    assert _keys(swapped) == [("other", "NoExecute"), (nl.NOT_READY, "NoExecute"), (nl.NOT_READY, "NoSchedule")]
    back = nl.desired_taints(_node(conditions=[_cond("Ready", "True")], taints=had), observed_ready="True", now=NOW)
    assert _keys(back) == [("other", "NoExecute")]


def test_unschedulable_gets_its_taint() -> None:
    taints = nl.desired_taints(_node(conditions=[_cond("Ready", "True")], unschedulable=True),
                               observed_ready="True", now=NOW)
    assert _keys(taints) == [(nl.UNSCHEDULABLE, "NoSchedule")]


def test_no_execute_taint_follows_the_observed_ready_status() -> None:
    # The status just went Unknown in this pass: NoSchedule now, NoExecute on the next pass.
    node = _node(conditions=[_cond("Ready", "Unknown")])
    assert _keys(nl.desired_taints(node, observed_ready="True", now=NOW)) == [(nl.UNREACHABLE, "NoSchedule")]


def test_pod_ready_goes_false_once() -> None:
    pod = {"status": {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": CREATED},
                                     {"type": "PodScheduled", "status": "True"}]}}
    status = nl.pod_not_ready_status(pod, NOW)
    assert status is not None
    assert status["conditions"][0] == {"type": "Ready", "status": "False", "lastTransitionTime": clocks.rfc3339(NOW)}
    assert status["conditions"][1] == {"type": "PodScheduled", "status": "True"}
    assert nl.pod_not_ready_status({"status": status}, NOW) is None
    assert nl.pod_not_ready_status({"status": {}}, NOW) is None


UNREACHABLE = {"key": nl.UNREACHABLE, "effect": "NoExecute"}
NOT_READY = {"key": nl.NOT_READY, "effect": "NoExecute"}
DEFAULTS = [{"key": nl.NOT_READY, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            {"key": nl.UNREACHABLE, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]


def test_eviction_delay() -> None:
    assert eviction_delay([UNREACHABLE], DEFAULTS) == 300
    assert eviction_delay([UNREACHABLE], []) == 0  # not tolerated: now
    assert eviction_delay([UNREACHABLE, {"key": "x", "effect": "NoExecute"}], DEFAULTS) == 0
    forever = [{"operator": "Exists"}]  # tolerates everything for ever
    assert eviction_delay([UNREACHABLE, NOT_READY], forever) is None
    shorter = [*DEFAULTS, {"key": nl.UNREACHABLE, "operator": "Exists", "tolerationSeconds": 60,
                           "effect": "NoExecute"}]
    assert eviction_delay([UNREACHABLE], shorter) == 60
    assert eviction_delay([UNREACHABLE], [{"key": nl.UNREACHABLE, "operator": "Exists", "effect": "NoExecute",
                                           "tolerationSeconds": -5}]) == 0
    # Only tolerations matching a present taint count: the not-ready one does not shorten unreachable's.
    mixed = [{"key": nl.NOT_READY, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 10},
             {"key": nl.UNREACHABLE, "operator": "Exists", "effect": "NoExecute"}]
    assert eviction_delay([UNREACHABLE], mixed) is None
    # A toleration for another effect does not match a NoExecute taint.
    assert eviction_delay([UNREACHABLE], [{"key": nl.UNREACHABLE, "operator": "Exists",
                                           "effect": "NoSchedule"}]) == 0


def test_full_disruption() -> None:
    up, down = _node(conditions=[_cond("Ready", "True")]), _node(conditions=[_cond("Ready", "Unknown")])
    excluded = _node(conditions=[_cond("Ready", "True")])
    excluded["metadata"]["labels"] = {nl.EXCLUDE_DISRUPTION: ""}
    assert nl.fully_disrupted([down, _node()])  # no Ready condition counts as down
    assert not nl.fully_disrupted([down, up])
    assert nl.fully_disrupted([down, excluded])
    assert not nl.fully_disrupted([])
    # In full disruption the NoExecute taints go (NoSchedule ones stay).
    tainted = _node(conditions=[_cond("Ready", "Unknown")],
                    taints=[{"key": nl.UNREACHABLE, "effect": "NoExecute", "timeAdded": CREATED},
                            {"key": nl.UNREACHABLE, "effect": "NoSchedule", "timeAdded": CREATED}])
    assert _keys(nl.desired_taints(tainted, observed_ready="Unknown", now=NOW, evicting=False)) == [
        (nl.UNREACHABLE, "NoSchedule")]
    assert _keys(nl.desired_taints(tainted, observed_ready=None, now=NOW, evicting=False)) == [
        (nl.UNREACHABLE, "NoSchedule")]
