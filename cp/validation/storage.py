"""Validation rules for storage.k8s.io/v1: StorageClass, CSIDriver, CSINode, CSIStorageCapacity,
VolumeAttachment and VolumeAttributesClass.

Behaviour follows upstream `pkg/apis/storage/validation`; the fields k8s.io/api 1.37 tags for beta
declarative validation (StorageClass provisioner, parameters, reclaimPolicy and volumeBindingMode;
VolumeAttachment spec and attacher) are reported as the declarative validator reports them, after the
hand-written errors. A VolumeAttachment's inline PersistentVolume spec is checked for presence only
(PersistentVolume validation is core/v1's). Pure.
"""

from __future__ import annotations

from typing import Any

from cp.errors import Cause
from cp.validation.common import (
    GoValue,
    as_dict,
    as_list,
    as_str,
    each,
    go_json,
    inclusive_range_error,
    is_dns1123_subdomain,
    is_dns1123_subdomain_caseless,
    is_int,
    name_is_dns_subdomain,
    nonnegative,
    not_supported,
    parse_quantity,
    too_long,
    validate_driver_name,
    validate_label_name,
    validate_qualified_name,
)
from cp.validation.meta import validate_label_selector, validate_object_meta
from cp.validation.registry import Rules

_MAX_PARAMETERS = 512
_MAX_PARAMETER_BYTES = 256 * 1024
_MAX_ATTACHMENT_METADATA = 256 * 1024
_MAX_ERROR_MESSAGE = 1024
_NODE_ID_MAX = 192
_NODE_ID_LONG_MAX = 256
_INT32_MAX = 2**31 - 1


def _immutable_dv(errs: list[Cause], path: str, new: Any, old: Any) -> None:
    if new != old:
        errs.append(Cause("Invalid", path, "field is immutable", GoValue("null")))


def _provisioner(value: Any, path: str, errs: list[Cause], dv: list[Cause] | None) -> None:
    provisioner = as_str(value)
    if not provisioner:
        (dv if dv is not None else errs).append(Cause("Required", path, ""))
    else:
        validate_qualified_name(provisioner.lower(), path, errs)


def _parameters(params: Any, path: str, errs: list[Cause], *, allow_empty: bool) -> None:
    params = as_dict(params)
    if len(params) > _MAX_PARAMETERS:
        too_long(errs, path, _MAX_PARAMETERS)
        return
    total = 0
    for key, value in params.items():
        if not key:
            errs.append(Cause("Invalid", path, "field can not be empty.", key))
        total += len(key.encode()) + len(as_str(value).encode())
    if total > _MAX_PARAMETER_BYTES:
        too_long(errs, path, _MAX_PARAMETER_BYTES)
    if not allow_empty and not params:
        errs.append(Cause("Required", path, "must contain at least one key/value pair"))


# ---------------------------------------------------------------- StorageClass

def _topology_term(term: dict[str, Any], path: str, errs: list[Cause]) -> dict[str, frozenset[str]]:
    """ValidateTopologySelectorTerm; returns the term as key -> values for the duplicate check."""
    out: dict[str, frozenset[str]] = {}
    for i, req in enumerate(as_list(term.get("matchLabelExpressions"))):
        req = as_dict(req)
        rpath = f"{path}.matchLabelExpressions[{i}]"
        values = as_list(req.get("values"))
        if not values:
            errs.append(Cause("Required", f"{rpath}.values", ""))
        seen: set[str] = set()
        for j, value in enumerate(values):
            if value in seen:
                errs.append(Cause("Duplicate", f"{rpath}.values[{j}]", "", value))
            seen.add(as_str(value))
        key = as_str(req.get("key"))
        validate_label_name(key, f"{rpath}.key", errs)
        if key in out:
            errs.append(Cause("Duplicate", f"{rpath}.key", "", key))
        out[key] = frozenset(seen)
    return out


def _storage_class_fields(obj: dict[str, Any], errs: list[Cause], dv: list[Cause]) -> None:
    _provisioner(obj.get("provisioner"), "provisioner", errs, dv)
    _parameters(obj.get("parameters"), "parameters", errs, allow_empty=True)
    policy = obj.get("reclaimPolicy")
    if policy and policy not in ("Delete", "Retain"):
        not_supported(errs, "reclaimPolicy", policy, ("Delete", "Retain"))
    mode = obj.get("volumeBindingMode")
    if mode is None:
        errs.append(Cause("Required", "volumeBindingMode", ""))
    elif mode not in ("Immediate", "WaitForFirstConsumer"):
        not_supported(errs, "volumeBindingMode", mode, ("Immediate", "WaitForFirstConsumer"))
    terms: list[dict[str, frozenset[str]]] = []
    for i, term in enumerate(as_list(obj.get("allowedTopologies"))):
        expressions = _topology_term(as_dict(term), f"allowedTopologies[{i}]", errs)
        if expressions in terms:
            errs.append(Cause("Duplicate", f"allowedTopologies[{i}].matchLabelExpressions", "", ""))
        terms.append(expressions)


def _storage_class_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    dv: list[Cause] = []
    validate_object_meta(meta, errs, namespaced=False, name_fn=name_is_dns_subdomain)
    _storage_class_fields(obj, errs, dv)
    errs.extend(dv)


def _storage_class_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    dv: list[Cause] = []
    for key in ("provisioner", "parameters", "reclaimPolicy", "volumeBindingMode"):
        _immutable_dv(dv, key, new.get(key) or None, old.get(key) or None)
    errs.extend(dv)


# ---------------------------------------------------------------- VolumeAttachment

def _attacher(value: Any, errs: list[Cause]) -> None:
    """Required, a caseless DNS subdomain of at most 63 characters (beta declarative rules)."""
    attacher, path = as_str(value), "spec.attacher"
    if not attacher:
        errs.append(Cause("Required", path, ""))
        return
    each(errs, path, attacher, is_dns1123_subdomain_caseless(attacher))
    if len(attacher) > 63:
        errs.append(Cause("TooLong", path, "may not be more than 63 characters"))


def _va_source(spec: dict[str, Any], errs: list[Cause]) -> None:
    path = "spec.source"
    source = as_dict(spec.get("source"))
    inline, pv = source.get("inlineVolumeSpec"), source.get("persistentVolumeName")
    if inline is None and pv is None:
        errs.append(Cause("Required", path, "must specify exactly one of inlineVolumeSpec and persistentVolumeName"))
    elif inline is not None and pv is not None:
        errs.append(Cause("Forbidden", path, "must specify exactly one of inlineVolumeSpec and persistentVolumeName"))
    elif pv is not None:
        if not pv:
            errs.append(Cause("Required", f"{path}.persistentVolumeName", "must specify non empty persistentVolumeName"))
        else:
            each(errs, f"{path}.persistentVolumeName", as_str(pv), is_dns1123_subdomain(as_str(pv)))


def _va_status(status: dict[str, Any], errs: list[Cause]) -> None:
    metadata = as_dict(status.get("attachmentMetadata"))
    if sum(len(k.encode()) + len(as_str(v).encode()) for k, v in metadata.items()) > _MAX_ATTACHMENT_METADATA:
        too_long(errs, "status.attachmentMetadata", _MAX_ATTACHMENT_METADATA)
    for key in ("attachError", "detachError"):
        error = status.get(key)
        if not isinstance(error, dict):
            continue
        if len(as_str(error.get("message"))) > _MAX_ERROR_MESSAGE:
            # Upstream reports the metadata bound here, not the message's.
            too_long(errs, f"status.{key}.message", _MAX_ATTACHMENT_METADATA)
        code = error.get("errorCode")
        if is_int(code) and code < 0:
            errs.append(Cause("Invalid", f"status.{key}.errorCode", inclusive_range_error(0, _INT32_MAX), code))


def _va_spec(obj: dict[str, Any], errs: list[Cause], dv: list[Cause]) -> None:
    spec = as_dict(obj.get("spec"))
    _attacher(spec.get("attacher"), dv)
    _va_source(spec, errs)
    node = as_str(spec.get("nodeName"))
    each(errs, "spec.nodeName", node, name_is_dns_subdomain(node, False))
    _va_status(as_dict(obj.get("status")), errs)


def _va_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    dv: list[Cause] = []
    validate_object_meta(meta, errs, namespaced=False, name_fn=name_is_dns_subdomain)
    _va_spec(obj, errs, dv)
    errs.extend(dv)


def _va_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    dv: list[Cause] = []
    _va_spec(new, errs, dv)
    _immutable_dv(dv, "spec", new.get("spec"), old.get("spec"))
    errs.extend(dv)


def _va_status_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    _va_status(as_dict(new.get("status")), errs)


# ---------------------------------------------------------------- CSINode

def _csi_node_drivers(obj: dict[str, Any], errs: list[Cause], *, long_ids: bool) -> None:
    names: set[str] = set()
    limit = _NODE_ID_LONG_MAX if long_ids else _NODE_ID_MAX
    for i, driver in enumerate(as_list(as_dict(obj.get("spec")).get("drivers"))):
        driver = as_dict(driver)
        path = f"spec.drivers[{i}]"
        name = as_str(driver.get("name"))
        validate_driver_name(name, f"{path}.name", errs)
        node_id = as_str(driver.get("nodeID"))
        if not node_id:
            errs.append(Cause("Required", f"{path}.nodeID", ""))
        if len(node_id) > limit:
            errs.append(Cause("Invalid", f"{path}.nodeID", f"must be {limit} characters or less", node_id))
        count = as_dict(driver.get("allocatable")).get("count")
        nonnegative(errs, f"{path}.allocatable.count", count)
        if name in names:
            errs.append(Cause("Duplicate", f"{path}.name", "", name))
        names.add(name)
        keys: set[str] = set()
        for key in as_list(driver.get("topologyKeys")):
            key = as_str(key)
            if not key:
                errs.append(Cause("Required", path, ""))
            if key in keys:
                errs.append(Cause("Duplicate", path, "", key))
            keys.add(key)
            validate_qualified_name(key, path, errs)


def _csi_node_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=False, name_fn=name_is_dns_subdomain)
    _csi_node_drivers(obj, errs, long_ids=False)


def _csi_node_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    old_drivers = [as_dict(d) for d in as_list(as_dict(old.get("spec")).get("drivers"))]
    long_ids = any(len(as_str(d.get("nodeID"))) > _NODE_ID_MAX for d in old_drivers)
    _csi_node_drivers(new, errs, long_ids=long_ids)
    for old_driver in old_drivers:
        for driver in as_list(as_dict(new.get("spec")).get("drivers")):
            driver = as_dict(driver)
            if driver.get("name") != old_driver.get("name"):
                continue
            # MutableCSINodeAllocatableCount: the allocatable count may change, the rest may not.
            a = {k: v for k, v in driver.items() if k != "allocatable"}
            b = {k: v for k, v in old_driver.items() if k != "allocatable"}
            if a != b:
                errs.append(Cause("Invalid", "spec.drivers", "field is immutable", go_json(a)))


# ---------------------------------------------------------------- CSIDriver

_FS_GROUP_POLICIES = ("File", "None", "ReadWriteOnceWithFSType")


def _csi_driver_spec(spec: dict[str, Any], errs: list[Cause]) -> None:
    # Upstream names the first of these `attachedRequired` in its messages.
    for key, path in (("attachRequired", "spec.attachedRequired"), ("podInfoOnMount", "spec.podInfoOnMount"),
                      ("storageCapacity", "spec.storageCapacity")):
        if spec.get(key) is None:
            errs.append(Cause("Required", path, ""))
    policy = spec.get("fsGroupPolicy")
    if policy is not None and policy not in _FS_GROUP_POLICIES:
        not_supported(errs, "spec.fsGroupPolicy", policy, _FS_GROUP_POLICIES)
    audiences: set[str] = set()
    for i, request in enumerate(as_list(spec.get("tokenRequests"))):
        request = as_dict(request)
        path = f"spec.tokenRequests[{i}]"
        audience = as_str(request.get("audience"))
        if audience in audiences:
            errs.append(Cause("Duplicate", f"{path}.audience", "", audience))
            continue
        audiences.add(audience)
        expiry = request.get("expirationSeconds")
        if is_int(expiry):
            if expiry < 600:
                errs.append(Cause("Invalid", f"{path}.expirationSeconds",
                                  "may not specify a duration less than 10 minutes", expiry))
            if expiry > 1 << 32:
                errs.append(Cause("Invalid", f"{path}.expirationSeconds",
                                  "may not specify a duration larger than 2^32 seconds", expiry))
    for mode in as_list(spec.get("volumeLifecycleModes")):
        if mode not in ("Persistent", "Ephemeral"):
            not_supported(errs, "spec.volumeLifecycleModes", mode, ("Persistent", "Ephemeral"))
    if spec.get("seLinuxMount") is None:
        errs.append(Cause("Required", "spec.seLinuxMount", ""))
    period = spec.get("nodeAllocatableUpdatePeriodSeconds")
    if is_int(period) and period < 10:
        errs.append(Cause("Invalid", "spec.nodeAllocatableUpdatePeriodSeconds",
                          "must be greater than or equal to 10 seconds", period))


def _csi_driver_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=False, name_fn=name_is_dns_subdomain)
    _csi_driver_spec(as_dict(obj.get("spec")), errs)


def _csi_driver_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    spec, old_spec = as_dict(new.get("spec")), as_dict(old.get("spec"))
    _csi_driver_spec(spec, errs)
    if spec.get("attachRequired") != old_spec.get("attachRequired"):
        errs.append(Cause("Invalid", "spec.attachedRequired", "field is immutable", spec.get("attachRequired")))
    if spec.get("volumeLifecycleModes") != old_spec.get("volumeLifecycleModes"):
        errs.append(Cause("Invalid", "spec.volumeLifecycleModes", "field is immutable",
                          go_json(spec.get("volumeLifecycleModes"))))


# ---------------------------------------------------------------- CSIStorageCapacity

def _capacity_fields(obj: dict[str, Any], errs: list[Cause]) -> None:
    validate_label_selector(obj.get("nodeTopology"), "nodeTopology", errs)
    klass = as_str(obj.get("storageClassName"))
    each(errs, "storageClassName", klass, name_is_dns_subdomain(klass, False))
    for key in ("capacity", "maximumVolumeSize"):
        raw = obj.get(key)
        q = parse_quantity(raw) if raw is not None else None
        if q is not None and q < 0:
            errs.append(Cause("Invalid", key, "must be greater than or equal to 0", str(raw)))


def _capacity_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=namespaced, name_fn=name_is_dns_subdomain)
    _capacity_fields(obj, errs)


def _capacity_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    _capacity_fields(new, errs)
    if new.get("nodeTopology") != old.get("nodeTopology"):
        errs.append(Cause("Invalid", "nodeTopology", "field is immutable", go_json(new.get("nodeTopology"))))
    if new.get("storageClassName") != old.get("storageClassName"):
        errs.append(Cause("Invalid", "storageClassName", "field is immutable", as_str(new.get("storageClassName"))))


# ---------------------------------------------------------------- VolumeAttributesClass

def _vac_fields(obj: dict[str, Any], errs: list[Cause]) -> None:
    _provisioner(obj.get("driverName"), "driverName", errs, None)
    _parameters(obj.get("parameters"), "parameters", errs, allow_empty=False)


def _vac_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=False, name_fn=name_is_dns_subdomain)
    _vac_fields(obj, errs)


def _vac_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    if new.get("driverName") != old.get("driverName"):
        errs.append(Cause("Forbidden", "driverName", "updates to driverName are forbidden."))
    if (new.get("parameters") or None) != (old.get("parameters") or None):
        errs.append(Cause("Forbidden", "parameters", "updates to parameters are forbidden."))
    _vac_fields(new, errs)


RULES = {
    ("storage.k8s.io", "StorageClass"): Rules(_storage_class_create, _storage_class_update),
    ("storage.k8s.io", "VolumeAttachment"): Rules(_va_create, _va_update, _va_status_update),
    ("storage.k8s.io", "CSINode"): Rules(_csi_node_create, _csi_node_update),
    ("storage.k8s.io", "CSIDriver"): Rules(_csi_driver_create, _csi_driver_update),
    ("storage.k8s.io", "CSIStorageCapacity"): Rules(_capacity_create, _capacity_update),
    ("storage.k8s.io", "VolumeAttributesClass"): Rules(_vac_create, _vac_update),
}
