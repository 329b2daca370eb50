"""Strategies of core/v1 kinds: pods, namespaces, nodes."""

from __future__ import annotations

from typing import Any

from cp.strategies.model import Obj, Strategy


def qos_class(spec: dict[str, Any]) -> str:
    """The pod's QoS class (`pkg/apis/core/helper/qos`): BestEffort without requests or limits for cpu
    and memory, Guaranteed when every container's limits equal its requests for both, else Burstable."""
    limits_all = True
    any_set = False
    for c in list(spec.get("containers") or []) + list(spec.get("initContainers") or []):
        r = (c.get("resources") or {})
        req = r.get("requests") or {}
        lim = r.get("limits") or {}
        for res_name in ("cpu", "memory"):
            value = req.get(res_name, lim.get(res_name))
            if value is not None or lim.get(res_name) is not None:
                any_set = True
            if lim.get(res_name) is None or value is None or str(value) != str(lim.get(res_name)):
                limits_all = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if limits_all else "Burstable"


def _pod_status(obj: Obj) -> Obj:
    return {"phase": "Pending", "qosClass": qos_class(obj.get("spec") or {})}


STRATEGIES: dict[tuple[str, str], Strategy] = {
    ("", "Pod"): Strategy(initial_status=_pod_status),
    ("", "Namespace"): Strategy(initial_status=lambda _obj: {"phase": "Active"}),
    ("", "Node"): Strategy(status_on_create=True),  # the kubelet registers a node with its status
}
