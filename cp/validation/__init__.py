"""Structural checks and semantic validation of served objects, as kube-apiserver performs them.

`check_structure` decodes against the official schema (see `cp/structure.py`); `validate_create`
and `validate_update` run the per-kind rules of upstream's `pkg/apis/*/validation` and raise one
`errors.Invalid` that carries every cause found (upstream aggregates). Field paths, error types and
messages follow upstream (`field.Invalid`, `Required`, `NotSupported`...). Pure.

The package: `common` (shared helpers and apimachinery's string formats), `ip` (IP and CIDR formats),
`meta` (object metadata, label selectors, conditions), `webhook` (webhook client configurations),
`templates` (pod templates of the workload kinds), `cron` (CronJob schedules), `godiff` (the diffs of
immutability messages), `registry` (the per-kind rules table), and one rule module per API area — `pod`,
`workloads` (Deployment, ReplicaSet, autoscaling), `apps` (DaemonSet, StatefulSet, ControllerRevision,
ReplicationController, PodTemplate), `batch` (Job, CronJob), `policy` (PodDisruptionBudget), `volumes`
(PersistentVolume(Claim)), `quota` (LimitRange, ResourceQuota), `service` (Service), `accounts` (Secret,
ServiceAccount), `core` (the other core/v1
kinds, Lease), `dra_claims` and `dra_slices` (resource.k8s.io,
sharing `dra_fields`), `rbac`, `networking` (networking.k8s.io, discovery.k8s.io), `storage`,
`scheduling` (PriorityClass, RuntimeClass), `certificates`, `admission` (admissionregistration),
`flowcontrol`, `extensions` (APIService, CustomResourceDefinition, StorageVersionMigration). Every rule
module declares its `RULES`; they are registered here with no install step, the modules of the
cluster configuration groups by name (imported on the first object of their group).
"""

from __future__ import annotations

from typing import Any

from cp import errors, structure
from cp import features as gates
from cp.errors import Cause
from cp.validation import (
    accounts,
    apps,
    core,
    dra_claims,
    dra_poolstatus,
    dra_slices,
    pod,
    quota,
    rbac,
    service,
    volumes,
    workloads,
)
from cp.validation.common import (
    GoValue,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_label_value,
    is_qualified_name,
    meta_of,
    name_is_dns_label,
    name_is_dns_subdomain,
    validate_labels,
    validate_path_segment_name,
)
from cp.validation.meta import validate_label_selector, validate_object_meta, validate_object_meta_update
from cp.validation.registry import Rules, register, register_all, register_lazily, rules_for

for _module in (pod, workloads, apps, core, accounts, volumes, quota, dra_claims, dra_slices, dra_poolstatus, rbac,
                service):
    register_all(_module.RULES)
# The cluster configuration groups: their modules load on the first object of the group.
register_lazily({
    "networking.k8s.io": "cp.validation.networking", "discovery.k8s.io": "cp.validation.networking",
    "storage.k8s.io": "cp.validation.storage", "scheduling.k8s.io": "cp.validation.scheduling",
    "node.k8s.io": "cp.validation.scheduling", "certificates.k8s.io": "cp.validation.certificates",
    "admissionregistration.k8s.io": "cp.validation.admission",
    "flowcontrol.apiserver.k8s.io": "cp.validation.flowcontrol",
    "apiregistration.k8s.io": "cp.validation.extensions", "apiextensions.k8s.io": "cp.validation.extensions",
    "storagemigration.k8s.io": "cp.validation.extensions",
    "batch": "cp.validation.batch", "policy": "cp.validation.policy",
})


# Groups whose objects' metadata upstream validates with apimachinery's generic ValidateObjectMeta (no
# rule on unqualified finalizer names), as custom resources.
GENERIC_META_GROUPS = frozenset({"apiextensions.k8s.io", "apiregistration.k8s.io"})


def check_structure(obj: dict[str, Any], *, group: str, version: str, kind: str,
                    field_validation: str) -> tuple[dict[str, Any], list[str]]:
    """Type-check `obj` against the kind's schema; handle unknown fields per `field_validation`.

    Returns the (possibly cleaned) object and warnings. Raises `errors.BadRequest`.
    """
    return structure.check(obj, group=group, version=version, kind=kind, field_validation=field_validation)


def validate_create(obj: dict[str, Any], *, group: str, version: str, kind: str, namespaced: bool,
                    features: gates.FeatureGates = gates.DEFAULT) -> None:
    """`features` are the server's gates (a default 1.37 cluster's unless given)."""
    errs: list[Cause] = []
    rules = rules_for(group=group, kind=kind)
    meta = meta_of(obj)
    if rules is None:  # custom resources and the sandbox's kinds: apimachinery's generic rules
        validate_object_meta(meta, errs, namespaced=namespaced, name_fn=name_is_dns_subdomain,
                             kube_finalizers=False)
    else:
        rules.create(obj, meta, errs, namespaced)
        if rules.gated is not None:
            rules.gated(obj, None, errs, features)
    _raise(errs, obj, group=group, kind=kind)


def validate_update(new: dict[str, Any], old: dict[str, Any], *, group: str, version: str, kind: str,
                    subresource: str = "", features: gates.FeatureGates = gates.DEFAULT) -> None:
    errs: list[Cause] = []
    rules = rules_for(group=group, kind=kind)
    meta, old_meta = meta_of(new), meta_of(old)
    validate_object_meta_update(meta, old_meta, errs,
                                kube_finalizers=rules is not None and group not in GENERIC_META_GROUPS)
    if rules is not None:
        if subresource == "status":
            if rules.status_update is not None:
                rules.status_update(new, old, errs)
        elif subresource:
            check = rules.subresource_updates.get(subresource)
            if check is not None:
                check(new, old, errs)
        else:
            if rules.update is not None:
                rules.update(new, old, errs)
            if rules.gated is not None:
                rules.gated(new, old, errs, features)
    _raise(errs, new, group=group, kind=kind)


def _raise(errs: list[Cause], obj: dict[str, Any], *, group: str, kind: str) -> None:
    if errs:
        name = str(meta_of(obj).get("name") or "")
        raise errors.Invalid(kind=kind, group=group, name=name, causes=errs)


__all__ = [
    "GoValue", "Rules", "check_structure", "is_dns1123_label", "is_dns1123_subdomain", "is_label_value",
    "is_qualified_name", "name_is_dns_label", "name_is_dns_subdomain", "register", "validate_create",
    "validate_label_selector", "validate_labels", "validate_object_meta", "validate_path_segment_name",
    "validate_update",
]
