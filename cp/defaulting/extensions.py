"""Defaulting of the API extension kinds: apiregistration.k8s.io/v1 APIService and apiextensions.k8s.io/v1
CustomResourceDefinition.

Sources of behaviour (read, not copied): kube-aggregator `pkg/apis/apiregistration/v1/defaults.go`
(service port 443) and apiextensions-apiserver `pkg/apis/apiextensions/v1/defaults.go` (singular and
list kind derived from the kind, conversion `None`, webhook service port 443). Pure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cp.defaulting.fields import child, setdefault, sub


def _api_service(obj: dict[str, Any]) -> None:
    spec = sub(obj, "spec")
    service = sub(spec, "service") if spec is not None else None
    if service is not None:
        setdefault(service, "port", 443)


def _crd(obj: dict[str, Any]) -> None:
    spec = child(obj, "spec")
    names = child(spec, "names")
    kind = names.get("kind")
    if isinstance(kind, str) and kind:
        if not names.get("singular"):
            names["singular"] = kind.lower()
        if not names.get("listKind"):
            names["listKind"] = kind + "List"
    conversion = spec.get("conversion")
    if not isinstance(conversion, dict):
        conversion = spec["conversion"] = {"strategy": "None"}
    webhook = sub(conversion, "webhook")
    config = sub(webhook, "clientConfig") if webhook is not None else None
    service = sub(config, "service") if config is not None else None
    if service is not None:
        setdefault(service, "port", 443)


DEFAULTERS: dict[tuple[str, str, str], Callable[[dict[str, Any]], None]] = {
    ("apiregistration.k8s.io", "v1", "APIService"): _api_service,
    ("apiextensions.k8s.io", "v1", "CustomResourceDefinition"): _crd,
}
