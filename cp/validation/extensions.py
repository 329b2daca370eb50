"""Validation rules for the API extension kinds: apiregistration.k8s.io/v1 APIService, apiextensions.k8s.io/v1
CustomResourceDefinition and storagemigration.k8s.io/v1 StorageVersionMigration.

Behaviour follows kube-aggregator `pkg/apis/apiregistration/validation`, apiextensions-apiserver
`pkg/apis/apiextensions/validation` and upstream `pkg/apis/storagemigration/validation`. For
CustomResourceDefinitions this is what a stored definition needs as an object (its name, group, scope,
names, versions with exactly one storage version, stored versions, conversion), its `openAPIV3Schema`s
(`cp.crd.structural.check_crd_schema`: structural schemas, extensions, defaults), reported where upstream
reports them after converting to its internal version (`spec.validation.openAPIV3Schema` when every
version has the same schema), and the CEL rules of its schemas (`cp.crd.cel`). Pure.
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any

from cp.crd.structural import check_crd_schema
from cp.errors import Cause
from cp.validation.common import (
    GoValue,
    as_dict,
    as_list,
    as_str,
    each,
    go_json,
    is_dns1035_label,
    is_dns1123_subdomain,
    is_int,
    is_valid_port_num,
    name_is_dns_subdomain,
    not_supported,
    validate_path_segment_name,
)
from cp.validation.meta import (
    NameFn,
    validate_conditions,
    validate_embedded_object_meta,
    validate_object_meta,
)
from cp.validation.registry import Rules
from cp.validation.webhook import validate_client_config, validate_review_versions

_INT64 = re.compile(r"^[+-]?[0-9]+$")


# ---------------------------------------------------------------- APIService

def _api_service_fields(obj: dict[str, Any], errs: list[Cause]) -> None:
    spec = as_dict(obj.get("spec"))
    group, version = as_str(spec.get("group")), as_str(spec.get("version"))
    if not group and version != "v1":
        errs.append(Cause("Required", "spec.group", "only v1 may have an empty group and it better be legacy kube"))
    if group:
        each(errs, "spec.group", group, is_dns1123_subdomain(group))
    each(errs, "spec.version", version, is_dns1035_label(version))
    group_min, version_priority = spec.get("groupPriorityMinimum", 0), spec.get("versionPriority", 0)
    if is_int(group_min) and not 0 < group_min <= 20000:
        errs.append(Cause("Invalid", "spec.groupPriorityMinimum", "must be positive and less than 20000", group_min))
    if is_int(version_priority) and not 0 < version_priority <= 1000:
        errs.append(Cause("Invalid", "spec.versionPriority", "must be positive and less than 1000", version_priority))
    ca_bundle = as_str(spec.get("caBundle"))
    insecure = spec.get("insecureSkipTLSVerify") is True
    service = spec.get("service")
    if service is None:
        if ca_bundle:
            size = len(base64.b64decode(ca_bundle, validate=False))
            errs.append(Cause("Invalid", "spec.caBundle", "local APIServices may not have a caBundle",
                              f"{size} bytes"))
        if insecure:
            errs.append(Cause("Invalid", "spec.insecureSkipTLSVerify", "local APIServices may not have "
                              "insecureSkipTLSVerify", True))
        return
    service = as_dict(service)
    for key in ("namespace", "name"):
        if not as_str(service.get(key)):
            errs.append(Cause("Required", f"spec.service.{key}", ""))
    port = service.get("port", 0)
    msgs = is_valid_port_num(port)
    if msgs:
        errs.append(Cause("Invalid", "spec.service.port", "port is not valid: " + ", ".join(msgs), port))
    if insecure and ca_bundle:
        errs.append(Cause("Invalid", "spec.insecureSkipTLSVerify", "may not be true if caBundle is present", True))


def _api_service_name(obj: dict[str, Any]) -> NameFn:
    spec = as_dict(obj.get("spec"))
    required = f"{as_str(spec.get('version'))}.{as_str(spec.get('group'))}"

    def check(name: str, prefix: bool) -> list[str]:
        problems = validate_path_segment_name(name, prefix)
        if problems:
            return problems
        return [] if name == required else [f'must be `spec.version+"."+spec.group`: "{required}"']
    return check


def _api_service_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=False, name_fn=_api_service_name(obj), kube_finalizers=False)
    _api_service_fields(obj, errs)


def _api_service_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    validate_object_meta(as_dict(new.get("metadata")), errs, namespaced=False, name_fn=_api_service_name(new),
                         kube_finalizers=False)
    _api_service_fields(new, errs)


def _api_service_status(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    for i, c in enumerate(as_list(as_dict(new.get("status")).get("conditions"))):
        status = as_dict(c).get("status")
        if status not in ("True", "False", "Unknown"):
            not_supported(errs, f"status.conditions[{i}].status", as_str(status), ("True", "False", "Unknown"))


# ---------------------------------------------------------------- CustomResourceDefinition

def _crd_name(obj: dict[str, Any]) -> NameFn:
    spec = as_dict(obj.get("spec"))
    required = f"{as_str(as_dict(spec.get('names')).get('plural'))}.{as_str(spec.get('group'))}"

    def check(name: str, prefix: bool) -> list[str]:
        out = name_is_dns_subdomain(name, prefix)
        if name != required:
            out.append('must be spec.names.plural+"."+spec.group')
        return out
    return check


def _names(names: dict[str, Any], path: str, errs: list[Cause]) -> None:
    """ValidateCustomResourceDefinitionNames (spec.names and status.acceptedNames)."""
    for key, mixed in (("plural", False), ("singular", False), ("kind", True), ("listKind", True)):
        value = as_str(names.get(key))
        if not value:
            continue
        msgs = is_dns1035_label(value.lower() if mixed else value)
        if msgs:
            detail = ",".join(msgs)
            if mixed:
                detail = "may have mixed case, but should otherwise match: " + detail
            errs.append(Cause("Invalid", f"{path}.{key}", detail, value))
    for key in ("shortNames", "categories"):
        for i, value in enumerate(as_list(names.get(key))):
            value = as_str(value)
            msgs = is_dns1035_label(value)
            if msgs:
                errs.append(Cause("Invalid", f"{path}.{key}[{i}]", ",".join(msgs), value))
    kind = as_str(names.get("kind"))
    if kind and kind == names.get("listKind"):
        errs.append(Cause("Invalid", f"{path}.listKind", "kind and listKind may not be the same", kind))


def _crd_spec(spec: dict[str, Any], errs: list[Cause], *, old: dict[str, Any] | None = None) -> None:
    """The definition's spec; `old`: the stored spec on update (a version keeping its schema is not
    held to the per-expression cost limit again, as upstream)."""
    group = as_str(spec.get("group"))
    if not group:
        errs.append(Cause("Required", "spec.group", ""))
    else:
        msgs = is_dns1123_subdomain(group)
        if msgs:
            errs.append(Cause("Invalid", "spec.group", ",".join(msgs), group))
        elif len(group.split(".")) < 2:
            errs.append(Cause("Invalid", "spec.group", "should be a domain with at least one dot", group))
    scope = as_str(spec.get("scope"))
    if not scope:
        errs.append(Cause("Required", "spec.scope", ""))
    elif scope not in ("Cluster", "Namespaced"):
        not_supported(errs, "spec.scope", scope, ("Cluster", "Namespaced"))
    versions = [as_dict(v) for v in as_list(spec.get("versions"))]
    if not versions:
        errs.append(Cause("Invalid", "spec.versions", "must have exactly one version marked as storage version",
                          GoValue("null")))
    # Upstream validates the internal version: a schema all versions share is its `spec.validation`.
    schemas = [v.get("schema") for v in versions]
    shared_schema = bool(schemas) and schemas[0] is not None and all(s == schemas[0] for s in schemas)
    structural: list[Cause] = []  # the schemas' own problems (their CEL rules are checked only without)
    names_seen: set[str] = set()
    unique = True
    storage = 0
    for i, version in enumerate(versions):
        name = as_str(version.get("name"))
        storage += version.get("storage") is True
        unique = unique and name not in names_seen
        names_seen.add(name)
        msgs = is_dns1035_label(name)
        if msgs:
            errs.append(Cause("Invalid", f"spec.versions[{i}].name", ",".join(msgs), name))
        schema = as_dict(version.get("schema")).get("openAPIV3Schema")
        if schema is None:
            errs.append(Cause("Required", f"spec.versions[{i}].schema.openAPIV3Schema", "schemas are required"))
        elif not shared_schema:
            structural.extend(check_crd_schema(schema, path=f"spec.versions[{i}].schema.openAPIV3Schema",
                                               status_enabled=_status_enabled(version),
                                               object_meta=validate_embedded_object_meta))
    if not unique:
        errs.append(Cause("Invalid", "spec.versions", "must contain unique version names", go_json(versions)))
    if versions and storage != 1:
        errs.append(Cause("Invalid", "spec.versions", "must have exactly one version marked as storage version",
                          go_json(versions)))
    names = as_dict(spec.get("names"))
    for key in ("plural", "singular", "kind", "listKind"):
        if not as_str(names.get(key)):
            errs.append(Cause("Required", f"spec.names.{key}", ""))
    _names(names, "spec.names", errs)
    if shared_schema:
        schema = as_dict(versions[0].get("schema")).get("openAPIV3Schema")
        if schema is not None:
            structural.extend(check_crd_schema(schema, path="spec.validation.openAPIV3Schema",
                                               status_enabled=any(_status_enabled(v) for v in versions),
                                               object_meta=validate_embedded_object_meta))
    errs.extend(structural)
    _conversion(spec.get("conversion"), errs)
    if not structural:  # upstream compiles the rules of structural schemas only
        _cel_rules(versions, errs, shared=shared_schema, old=old)


def _cel_rules(versions: list[dict[str, Any]], errs: list[Cause], *, shared: bool,
               old: dict[str, Any] | None) -> None:
    """The x-kubernetes-validations of each version's schema (`cp.crd.cel.check_crd_rules`: compile
    errors, rule shapes, estimated costs), under `spec.validation.openAPIV3Schema` when every version
    has the same schema (upstream's internal version). On update, a schema the stored definition has
    already is `unchanged` (suppressExpressionCostForUnchangedSchema). The CEL engine is imported only
    for a schema with rules."""
    before = [as_dict(as_dict(v).get("schema")).get("openAPIV3Schema")
              for v in as_list(as_dict(old).get("versions"))] if old is not None else []
    for i, version in enumerate(versions[:1] if shared else versions):
        schema = as_dict(version.get("schema")).get("openAPIV3Schema")
        if isinstance(schema, dict) and "x-kubernetes-validations" in json.dumps(schema):
            from cp.crd.cel import check_crd_rules

            path = "spec.validation.openAPIV3Schema" if shared else f"spec.versions[{i}].schema.openAPIV3Schema"
            errs.extend(check_crd_rules(schema, path=path, unchanged=schema in before))


def _status_enabled(version: dict[str, Any]) -> bool:
    return isinstance(as_dict(version.get("subresources")).get("status"), dict)


def _conversion(conversion: Any, errs: list[Cause]) -> None:
    """ValidateCustomResourceConversion. Paths name the internal fields (`webhookClientConfig`,
    `conversionReviewVersions` directly under `conversion`), as upstream reports them for v1 too."""
    if not isinstance(conversion, dict):
        return
    path = "spec.conversion"
    strategy = as_str(conversion.get("strategy"))
    if not strategy:
        errs.append(Cause("Required", f"{path}.strategy", ""))
    elif strategy not in ("None", "Webhook"):
        not_supported(errs, f"{path}.strategy", strategy, ("None", "Webhook"))
    webhook = as_dict(conversion.get("webhook"))
    config = webhook.get("clientConfig")
    if strategy == "Webhook":
        if config is None:
            errs.append(Cause("Required", f"{path}.webhookClientConfig", "required when strategy is set to Webhook"))
        else:
            validate_client_config(config, f"{path}.webhookClientConfig", errs)
        validate_review_versions(as_list(webhook.get("conversionReviewVersions")), f"{path}.conversionReviewVersions",
                                 errs, require_known=True)
    elif config is not None:
        errs.append(Cause("Forbidden", f"{path}.webhookClientConfig",
                          "should not be set when strategy is not set to Webhook"))


def _stored_versions(obj: dict[str, Any], errs: list[Cause]) -> None:
    path = "status.storedVersions"
    stored = [as_str(v) for v in as_list(as_dict(obj.get("status")).get("storedVersions"))]
    if not stored:
        errs.append(Cause("Invalid", path, "must have at least one stored version", go_json(stored or None)))
        return
    remaining = {v: i for i, v in enumerate(stored)}
    for version in as_list(as_dict(obj.get("spec")).get("versions")):
        version = as_dict(version)
        name = as_str(version.get("name"))
        if version.get("storage") is True and name not in remaining:
            errs.append(Cause("Invalid", path, f"must have the storage version {name}", go_json(version)))
        remaining.pop(name, None)
    for name, i in sorted(remaining.items(), key=lambda kv: kv[1]):
        errs.append(Cause("Invalid", f"{path}[{i}]", "must appear in spec.versions", name))


def _crd_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=False, name_fn=_crd_name(obj), kube_finalizers=False)
    _crd_spec(as_dict(obj.get("spec")), errs)
    _names(as_dict(as_dict(obj.get("status")).get("acceptedNames")), "status.acceptedNames", errs)
    _stored_versions(obj, errs)
    _api_approval(obj, None, errs)


def _api_approval(new: dict[str, Any], old: dict[str, Any] | None, errs: list[Cause]) -> None:
    """validateAPIApproval: a definition in a protected group (`*.k8s.io`, `*.kubernetes.io`) needs the
    approval annotation; an update that keeps the approval state is never refused for it."""
    from cp.crd import custom

    if not custom.protected_group(as_str(as_dict(new.get("spec")).get("group"))):
        return
    annotations = as_dict(new.get("metadata")).get("annotations")
    state, reason = custom.api_approval(annotations)
    if old is not None and custom.api_approval(as_dict(old.get("metadata")).get("annotations"))[0] == state:
        return
    path = f"metadata.annotations[{custom.APPROVAL_ANNOTATION}]"
    if state == "Missing":
        errs.append(Cause("Required", path, reason))
    elif state == "Invalid":
        errs.append(Cause("Invalid", path, reason, as_str(as_dict(annotations).get(custom.APPROVAL_ANNOTATION))))


def _established(obj: dict[str, Any]) -> bool:
    return any(as_dict(c).get("type") == "Established" and as_dict(c).get("status") == "True"
               for c in as_list(as_dict(obj.get("status")).get("conditions")))


def _crd_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    spec, old_spec = as_dict(new.get("spec")), as_dict(old.get("spec"))
    _crd_spec(spec, errs, old=old_spec)
    names, old_names = as_dict(spec.get("names")), as_dict(old_spec.get("names"))
    if _established(old):  # scope and kind are part of how objects are stored once served
        if spec.get("scope") != old_spec.get("scope"):
            errs.append(Cause("Invalid", "spec.scope", "field is immutable", as_str(spec.get("scope"))))
        if names.get("kind") != old_names.get("kind"):
            errs.append(Cause("Invalid", "spec.names.kind", "field is immutable", as_str(names.get("kind"))))
    if spec.get("group") != old_spec.get("group"):
        errs.append(Cause("Invalid", "spec.group", "field is immutable", as_str(spec.get("group"))))
    if names.get("plural") != old_names.get("plural"):
        errs.append(Cause("Invalid", "spec.names.plural", "field is immutable", as_str(names.get("plural"))))
    _names(as_dict(as_dict(new.get("status")).get("acceptedNames")), "status.acceptedNames", errs)
    _stored_versions(new, errs)
    _api_approval(new, old, errs)


def _crd_status_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    _names(as_dict(as_dict(new.get("status")).get("acceptedNames")), "status.acceptedNames", errs)
    _stored_versions(new, errs)


# ---------------------------------------------------------------- StorageVersionMigration

def _svm_fields(obj: dict[str, Any], errs: list[Cause]) -> None:
    resource = as_dict(as_dict(obj.get("spec")).get("resource"))
    if not as_str(resource.get("resource")):
        errs.append(Cause("Required", "spec.resource.resource", "resource is required"))


def _svm_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=False, name_fn=name_is_dns_subdomain)
    _svm_fields(obj, errs)


def _svm_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    _svm_fields(new, errs)
    resource = as_dict(as_dict(new.get("spec")).get("resource"))
    old_resource = as_dict(as_dict(old.get("spec")).get("resource"))
    # Upstream reports these at `group` and `resource`, without the spec.resource prefix.
    for key in ("group", "resource"):
        if as_str(resource.get(key)) != as_str(old_resource.get(key)):
            errs.append(Cause("Invalid", key, "field is immutable", as_str(resource.get(key))))


def _condition_true(obj: dict[str, Any], ctype: str) -> bool:
    return any(as_dict(c).get("type") == ctype and as_dict(c).get("status") == "True"
               for c in as_list(as_dict(obj.get("status")).get("conditions")))


def _svm_status_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    status, path = as_dict(new.get("status")), "status"
    rv, old_rv = as_str(status.get("resourceVersion")), as_str(as_dict(old.get("status")).get("resourceVersion"))
    if rv and not _INT64.match(rv):
        errs.append(Cause("Invalid", f"{path}.resourceVersion",
                          f'failed to parse resource version "{rv}": strconv.ParseInt: parsing "{rv}": invalid syntax',
                          rv))
    elif rv and int(rv) < 0:
        errs.append(Cause("Invalid", f"{path}.resourceVersion", "must be greater than or equal to 0", int(rv)))
    conditions = status.get("conditions")
    validate_conditions(conditions, f"{path}.conditions", errs)
    if old_rv and old_rv != rv:
        errs.append(Cause("Invalid", f"{path}.resourceVersion", "field is immutable", rv))
    shown = go_json(conditions)
    succeeded, failed, running = (_condition_true(new, t) for t in ("Succeeded", "Failed", "Running"))
    if succeeded and failed:
        errs.append(Cause("Invalid", f"{path}.conditions", "Both success and failed conditions cannot be true at "
                          "the same time", shown))
    if succeeded and running:
        errs.append(Cause("Invalid", f"{path}.conditions", "Running condition cannot be true when success condition "
                          "is true", shown))
    if failed and running:
        errs.append(Cause("Invalid", f"{path}.conditions", "Running condition cannot be true when failed condition is "
                          "true", shown))
    if _condition_true(old, "Succeeded") and not succeeded:
        errs.append(Cause("Invalid", f"{path}.conditions", "Success condition cannot be set to false once it is true",
                          shown))
    if _condition_true(old, "Failed") and not failed:
        errs.append(Cause("Invalid", f"{path}.conditions", "Failed condition cannot be set to false once it is true",
                          shown))


RULES = {
    ("apiregistration.k8s.io", "APIService"): Rules(_api_service_create, _api_service_update, _api_service_status),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): Rules(_crd_create, _crd_update, _crd_status_update),
    ("storagemigration.k8s.io", "StorageVersionMigration"): Rules(_svm_create, _svm_update, _svm_status_update),
}
