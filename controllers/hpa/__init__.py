"""The HorizontalPodAutoscaler controller: `controller` (the reconcile; see its docstring), `metrics`
(the client of the metrics APIs), `calc` (the replica calculation and normalization, pure)."""

from controllers.hpa.controller import COMPONENT, NAME, SYNC_PERIOD, HorizontalController, new
from controllers.hpa.metrics import MetricError, MetricsClient

__all__ = ["COMPONENT", "NAME", "SYNC_PERIOD", "HorizontalController", "MetricError", "MetricsClient", "new"]
