"""Defaulting of flowcontrol.apiserver.k8s.io/v1 FlowSchemas and PriorityLevelConfigurations.

Source of behaviour (read, not copied): `pkg/apis/flowcontrol/v1/defaults.go`: matching precedence
1000; limited levels get 30 nominal shares and lend nothing, exempt levels 0 and 0; queuing uses 64
queues, hands of 8 and 50 requests per queue. Pure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cp.defaulting.fields import child, setdefault, sub

MATCHING_PRECEDENCE = 1000
NOMINAL_CONCURRENCY_SHARES = 30


def _flow_schema(obj: dict[str, Any]) -> None:
    spec = child(obj, "spec")
    if not spec.get("matchingPrecedence"):
        spec["matchingPrecedence"] = MATCHING_PRECEDENCE
    child(spec, "priorityLevelConfiguration")


def _priority_level(obj: dict[str, Any]) -> None:
    spec = child(obj, "spec")
    exempt = sub(spec, "exempt")
    if exempt is not None:
        setdefault(exempt, "nominalConcurrencyShares", 0)
        setdefault(exempt, "lendablePercent", 0)
    limited = sub(spec, "limited")
    if limited is not None:
        setdefault(limited, "nominalConcurrencyShares", NOMINAL_CONCURRENCY_SHARES)
        setdefault(limited, "lendablePercent", 0)
        queuing = sub(child(limited, "limitResponse"), "queuing")
        if queuing is not None:
            for key, value in (("handSize", 8), ("queues", 64), ("queueLengthLimit", 50)):
                if not queuing.get(key):
                    queuing[key] = value


DEFAULTERS: dict[tuple[str, str, str], Callable[[dict[str, Any]], None]] = {
    ("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema"): _flow_schema,
    ("flowcontrol.apiserver.k8s.io", "v1", "PriorityLevelConfiguration"): _priority_level,
}
