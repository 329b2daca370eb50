"""A CustomResourceDefinition the tests share: a namespaced `Widget` of example.com with a short name,
the `all` category, and the status and scale subresources."""

from __future__ import annotations

from typing import Any

WIDGETS: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList",
                  "shortNames": ["wd"], "categories": ["all"]},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {
                    "replicas": {"type": "integer"}, "color": {"type": "string"}}},
                "status": {"type": "object", "properties": {
                    "replicas": {"type": "integer"}, "selector": {"type": "string"}}}}}},
            "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                                                     "statusReplicasPath": ".status.replicas",
                                                     "labelSelectorPath": ".status.selector"}},
        }],
    },
}
