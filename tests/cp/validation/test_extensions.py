"""cp/validation/extensions.py: APIServices (name, group, priorities, service or local), what a
CustomResourceDefinition needs as an object (name, group, scope, names, one storage version, stored
versions, conversion) and StorageVersionMigrations (resource, status transitions)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.cp.validation.rules import changed, create_errors, update_errors

DNS1035 = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
           "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
           "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")


def api_service(name: str = "v1beta1.metrics.k8s.io", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100,
                            "versionPriority": 100, "service": {"name": "metrics-server", "namespace": "kube-system"}}
    body.update(spec)
    return {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": name},
            "spec": body}


@pytest.mark.parametrize(("obj", "expected"), [
    (api_service(), []),
    (api_service("v1.", group="", version="v1", service=None), []),
    (api_service("v2.", group="", version="v2"),
     ["spec.group: Required value: only v1 may have an empty group and it better be legacy kube"]),
    (api_service(groupPriorityMinimum=0, versionPriority=1001, service={"name": "m", "port": 70000}),
     ["spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000",
      "spec.versionPriority: Invalid value: 1001: must be positive and less than 1000",
      "spec.service.namespace: Required value",
      "spec.service.port: Invalid value: 70000: port is not valid: must be between 1 and 65535, inclusive"]),
    (api_service(caBundle="Y2E=", insecureSkipTLSVerify=True),
     ["spec.insecureSkipTLSVerify: Invalid value: true: may not be true if caBundle is present"]),
    (api_service(service=None, caBundle="Y2E="),
     ['spec.caBundle: Invalid value: "2 bytes": local APIServices may not have a caBundle']),
])
def test_api_service(obj: dict[str, Any], expected: list[str]) -> None:
    if obj["spec"].get("service") is None:
        obj["spec"].pop("service")
    assert create_errors(obj) == expected


def crd(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "group": "example.com", "scope": "Namespaced", "names": {"plural": "widgets", "kind": "Widget"},
        "versions": [{"name": "v1", "served": True, "storage": True,
                      "schema": {"openAPIV3Schema": {"type": "object"}}}]}
    body.update(spec)
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"}, "spec": body}


def version(name: str, *, storage: bool = False) -> dict[str, Any]:
    return {"name": name, "served": True, "storage": storage, "schema": {"openAPIV3Schema": {"type": "object"}}}


@pytest.mark.parametrize(("spec", "expected"), [
    ({}, []),
    ({"group": "example"},
     ['metadata.name: Invalid value: "widgets.example.com": must be spec.names.plural+"."+spec.group',
      'spec.group: Invalid value: "example": should be a domain with at least one dot']),
    ({"scope": ""}, ["spec.scope: Required value"]),
    ({"names": {"plural": "widgets", "kind": "Widget", "listKind": "Widget", "shortNames": ["W"]}},
     ['spec.names.shortNames[0]: Invalid value: "W": ' + DNS1035,
      'spec.names.listKind: Invalid value: "Widget": kind and listKind may not be the same']),
    ({"versions": [version("v1", storage=True), version("v1beta1")]}, []),
    ({"versions": [version("v1"), version("V2")]},
     ['spec.versions[1].name: Invalid value: "V2": ' + DNS1035,
      "spec.versions: Invalid value: "
      '[{"name":"v1","served":true,"storage":false,"schema":{"openAPIV3Schema":{"type":"object"}}},'
      '{"name":"V2","served":true,"storage":false,"schema":{"openAPIV3Schema":{"type":"object"}}}]: '
      "must have exactly one version marked as storage version",
      "status.storedVersions: Invalid value: null: must have at least one stored version"]),
    ({"versions": [{"name": "v1", "served": True, "storage": True}]},
     ["spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required"]),
    ({"conversion": {"strategy": "Webhook", "webhook": {"clientConfig": {"url": "https://conv.example.com"},
                                                        "conversionReviewVersions": ["v2"]}}},
     ['spec.conversion.conversionReviewVersions: Invalid value: ["v2"]: must include at least one of v1, v1beta1']),
    ({"conversion": {"strategy": "None", "webhook": {"clientConfig": {"url": "https://conv.example.com"}}}},
     ["spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to Webhook"]),
])
def test_crd(spec: dict[str, Any], expected: list[str]) -> None:
    assert create_errors(crd(**spec)) == expected


def test_crd_update() -> None:
    old = crd()
    new = changed(old, lambda o: o["spec"].update(group="example.org", scope="Cluster"))
    new["metadata"]["name"] = "widgets.example.com"
    assert update_errors(new, old) == ['spec.group: Invalid value: "example.org": field is immutable']
    # A new storage version joins the stored versions.
    assert update_errors(changed(old, lambda o: o["spec"].update(
        versions=[version("v1"), version("v2", storage=True)])), old) == []


def migration(**resource: Any) -> dict[str, Any]:
    return {"apiVersion": "storagemigration.k8s.io/v1", "kind": "StorageVersionMigration",
            "metadata": {"name": "m"}, "spec": {"resource": {"group": "apps", "resource": "deployments", **resource}}}


def condition(ctype: str, status: str = "True") -> dict[str, Any]:
    return {"type": ctype, "status": status, "reason": "R", "lastTransitionTime": "2026-01-01T00:00:00Z"}


def test_storage_version_migration() -> None:
    assert create_errors(migration(resource="")) == ["spec.resource.resource: Required value: resource is required"]
    old = migration()
    assert update_errors(migration(resource="replicasets"), old) == [
        'resource: Invalid value: "replicasets": field is immutable']
    running = changed(old, lambda o: o.update(status={"resourceVersion": "12", "conditions": [
        condition("Running"), condition("Succeeded")]}))
    errors = update_errors(running, old, subresource="status")
    assert [e.split(": Invalid value: ")[0] for e in errors] == ["status.conditions"]
    assert errors[0].endswith(": Running condition cannot be true when success condition is true")
    bad_rv = changed(old, lambda o: o.update(status={"resourceVersion": "x"}))
    assert update_errors(bad_rv, old, subresource="status") == [
        'status.resourceVersion: Invalid value: "x": failed to parse resource version "x": strconv.ParseInt: parsing '
        '"x": invalid syntax']
