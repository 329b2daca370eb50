"""Prometheus metrics of one API server (its own registry, so in-process servers don't collide)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import prometheus_client as prom

from cp import features as gates

# Upstream apiserver_request_duration_seconds buckets, trimmed to the range a sandbox sees.
_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class Metrics:
    def __init__(self, *, revision: Callable[[], float], features: gates.FeatureGates = gates.DEFAULT) -> None:
        self.registry = prom.CollectorRegistry(auto_describe=True)
        # component-base's feature metric: one series per gate, 1 when on (GA's stage label is "").
        enabled = prom.Gauge(
            "kubernetes_feature_enabled",
            "[BETA] This metric records the data about the stage and enablement of a k8s feature.",
            ["name", "stage"], registry=self.registry)
        for name, stage, on in features.states():
            enabled.labels(name, gates.stage_label(stage)).set(1 if on else 0)
        self.requests = prom.Counter(
            "apiserver_request", "Requests by verb, group, resource, subresource and HTTP code.",
            ["verb", "group", "resource", "subresource", "code"], registry=self.registry)
        self.duration = prom.Histogram(
            "apiserver_request_duration_seconds", "Request latency by verb, group and resource.",
            ["verb", "group", "resource"], buckets=_BUCKETS, registry=self.registry)
        self.watches = prom.Gauge(
            "apiserver_registered_watchers", "Open watch streams by group and resource.",
            ["group", "resource"], registry=self.registry)
        self.revision = prom.Gauge("cplane_event_log_revision", "Newest committed event-log revision.",
                                   registry=self.registry)
        self.revision.set_function(revision)
        self._children: dict[tuple[str, ...], tuple[Any, Any]] = {}

    def observe_request(self, *, verb: str, group: str, resource: str, subresource: str, code: int,
                        seconds: float) -> None:
        """Count a request and record its latency (not for watches: they last)."""
        key = (verb, group, resource, subresource, str(code))
        children = self._children.get(key)
        if children is None:  # `labels()` costs more than the increment: look each series up once
            duration = None if verb == "WATCH" else self.duration.labels(verb, group, resource)
            children = self._children[key] = (self.requests.labels(*key), duration)
        children[0].inc()
        if children[1] is not None:
            children[1].observe(seconds)

    def render(self) -> bytes:
        return prom.generate_latest(self.registry)
