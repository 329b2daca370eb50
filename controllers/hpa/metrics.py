"""The HPA's client of the three metrics APIs (upstream `metrics.NewRESTMetricsClient`): resource
metrics of pods (`metrics.k8s.io`), custom metrics of pods and objects (`custom.metrics.k8s.io`),
external metrics (`external.metrics.k8s.io`); paths and names from `cp.metrics`, values as
`calc` reads them."""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from typing import Any

import msgspec

from controllers.hpa import calc
from controllers.runtime import client as clients
from cp import clock as clocks
from cp import errors
from cp import metrics as metrics_apis

DEFAULT_CUSTOM_WINDOW = 60.0  # custom metrics without windowSeconds (upstream's default window)

_dec = msgspec.json.Decoder()


class MetricError(Exception):
    """A metrics API call failed; the message is upstream's."""


def _q(segment: str) -> str:
    return urllib.parse.quote(segment, safe="")


class MetricsClient:
    """The HPA's view of the three metrics APIs (upstream `metrics.NewRESTMetricsClient`)."""

    def __init__(self, client: clients.Client) -> None:
        self.client = client

    async def _get(self, path: str, params: Mapping[str, str]) -> dict[str, Any]:
        raw = await self.client.request("GET", path, params={k: val for k, val in params.items() if val})
        out = _dec.decode(raw) if raw else {}
        return out if isinstance(out, dict) else {}

    async def resource_metric(self, resource: str, namespace: str, selector: str,
                              container: str) -> calc.PodMetrics:
        try:
            body = await self._get(f"/apis/{metrics_apis.METRICS_GROUP}/{metrics_apis.METRICS_VERSION}"
                                   f"/namespaces/{_q(namespace)}/pods", {"labelSelector": selector})
        except (errors.StatusError, OSError, TimeoutError) as exc:
            raise MetricError(f"unable to fetch metrics from resource metrics API: {message_of(exc)}") from None
        items = [i for i in body.get("items") or [] if isinstance(i, dict)]
        if not items:
            raise MetricError("no metrics returned from resource metrics API")
        out: calc.PodMetrics = {}
        for item in items:
            name = str((item.get("metadata") or {}).get("name") or "")
            ts = _parse_time(item.get("timestamp"))
            window = _parse_duration(item.get("window"), 60.0)
            containers = [c for c in item.get("containers") or [] if isinstance(c, dict)]
            if container:
                found = next((c for c in containers if c.get("name") == container), None)
                if found is None:
                    raise MetricError(f"failed to get container metrics: container {container} not present in "
                                      f"metrics for pod {namespace}/{name}")
                value = (found.get("usage") or {}).get(resource)
                if value is not None:
                    out[name] = calc.PodMetric(calc.milli_value(value), ts, window)
                continue
            total = 0
            missing = not containers
            for c in containers:
                value = (c.get("usage") or {}).get(resource)
                if value is None:
                    missing = True
                    break
                total += calc.milli_value(value)
            if not missing:
                out[name] = calc.PodMetric(total, ts, window)
        return out

    async def raw_metric(self, metric: str, namespace: str, selector: str, metric_selector: str) -> calc.PodMetrics:
        try:
            body = await self._get(f"/apis/{metrics_apis.CUSTOM_GROUP}/{metrics_apis.CUSTOM_VERSION}/namespaces/"
                                   f"{_q(namespace)}/pods/*/{_q(metric)}",
                                   {"labelSelector": selector, "metricLabelSelector": metric_selector})
        except (errors.StatusError, OSError, TimeoutError) as exc:
            raise MetricError(f"unable to fetch metrics from custom metrics API: {message_of(exc)}") from None
        items = [i for i in body.get("items") or [] if isinstance(i, dict)]
        if not items:
            raise MetricError("no metrics returned from custom metrics API")
        out: calc.PodMetrics = {}
        for item in items:
            name = str((item.get("describedObject") or {}).get("name") or "")
            window = float(item["windowSeconds"]) if item.get("windowSeconds") else DEFAULT_CUSTOM_WINDOW
            out[name] = calc.PodMetric(calc.milli_value(item.get("value", 0)), _parse_time(item.get("timestamp")),
                                       window)
        return out

    async def object_metric(self, metric: str, namespace: str, ref: Mapping[str, Any],
                            metric_selector: str) -> int:
        api_version = str(ref.get("apiVersion") or "")
        kind = str(ref.get("kind") or "")
        base = f"/apis/{metrics_apis.CUSTOM_GROUP}/{metrics_apis.CUSTOM_VERSION}/namespaces/{_q(namespace)}"
        if kind == "Namespace" and "/" not in api_version:
            path = f"{base}/metrics/{_q(metric)}"
        else:
            resource = metrics_apis.resource_for(api_version, kind)
            path = f"{base}/{resource}/{_q(str(ref.get('name') or ''))}/{_q(metric)}"
        try:
            body = await self._get(path, {"metricLabelSelector": metric_selector})
        except (errors.StatusError, OSError, TimeoutError) as exc:
            raise MetricError(f"unable to fetch metrics from custom metrics API: {message_of(exc)}") from None
        items = [i for i in body.get("items") or [] if isinstance(i, dict)]
        if len(items) != 1:
            raise MetricError(f"unable to fetch metrics from custom metrics API: the custom metrics API server "
                              f"returned {len(items)} results when we asked for exactly one")
        return calc.milli_value(items[0].get("value", 0))

    async def external_metric(self, metric: str, namespace: str, selector: str) -> list[int]:
        try:
            body = await self._get(f"/apis/{metrics_apis.EXTERNAL_GROUP}/{metrics_apis.EXTERNAL_VERSION}"
                                   f"/namespaces/{_q(namespace)}/{_q(metric)}", {"labelSelector": selector})
        except (errors.StatusError, OSError, TimeoutError) as exc:
            raise MetricError(f"unable to fetch metrics from external metrics API: {message_of(exc)}") from None
        items = [i for i in body.get("items") or [] if isinstance(i, dict)]
        if not items:
            raise MetricError("no metrics returned from external metrics API")
        return [calc.milli_value(i.get("value", 0)) for i in items]


def message_of(exc: BaseException) -> str:
    """An error's text as the HPA reports it."""
    if isinstance(exc, errors.StatusError):
        return exc.message
    return str(exc) or type(exc).__name__


def _parse_time(value: Any) -> float:
    try:
        return clocks.parse_time(str(value)) if value else 0.0
    except ValueError:
        return 0.0


def _parse_duration(value: Any, default: float) -> float:
    try:
        return clocks.parse_duration(str(value)) if value else default
    except ValueError:
        return default
