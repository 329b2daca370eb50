"""Strategies of apps/v1 and autoscaling kinds."""

from __future__ import annotations

from cp.strategies.model import Strategy

STRATEGIES: dict[tuple[str, str], Strategy] = {
    # Status fields Go writes without omitempty start at zero.
    ("apps", "ReplicaSet"): Strategy(initial_status=lambda _obj: {"replicas": 0},
                                     status_keeps_metadata=("labels", "annotations")),
    # The deployment controller records its revision annotations with its status writes.
    ("apps", "Deployment"): Strategy(status_keeps_metadata=("annotations",)),
    ("apps", "StatefulSet"): Strategy(status_keeps_metadata=("labels", "annotations")),
    ("apps", "DaemonSet"): Strategy(status_keeps_metadata=("labels", "annotations")),
    ("autoscaling", "HorizontalPodAutoscaler"): Strategy(initial_status=lambda _obj: {"desiredReplicas": 0}),
}
