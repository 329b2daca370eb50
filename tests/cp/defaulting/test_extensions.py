"""cp/defaulting/extensions.py: APIService service port, CustomResourceDefinition names and conversion."""

from __future__ import annotations

from tests.cp.defaulting.support import defaulted, twice_is_once


def test_api_service_port() -> None:
    obj = {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": "v1.x.io"},
           "spec": {"group": "x.io", "version": "v1", "service": {"name": "s", "namespace": "n"}}}
    assert defaulted(obj)["spec"]["service"]["port"] == 443


def test_crd_names_and_conversion() -> None:
    obj = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "dbs.example.com"},
           "spec": {"group": "example.com", "names": {"plural": "dbs", "kind": "DataBase"}}}
    spec = defaulted(obj)["spec"]
    assert spec["names"] == {"plural": "dbs", "kind": "DataBase", "singular": "database", "listKind": "DataBaseList"}
    assert spec["conversion"] == {"strategy": "None"}
    webhook = {"strategy": "Webhook", "webhook": {"clientConfig": {"service": {"name": "c", "namespace": "n"}},
                                                  "conversionReviewVersions": ["v1"]}}
    obj["spec"]["conversion"] = webhook
    assert defaulted(obj)["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["port"] == 443
    assert twice_is_once(obj)
