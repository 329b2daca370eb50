"""Validation rules for core/v1 PersistentVolumes and PersistentVolumeClaims (and the claim templates
of StatefulSets).

Behaviour follows upstream `pkg/apis/core/validation` (ValidatePersistentVolume(Spec|Update|StatusUpdate),
ValidatePersistentVolumeClaim(Spec|Update|StatusUpdate)) with 1.37's feature gates: a claim's spec is
immutable but for the storage request of a bound claim (which may shrink down to, not below, the
capacity after a failed expansion), its volume attributes class and, once, its volume name; a volume's
source and volume mode never change. Where upstream appends a diff of the two specs to the
message, the same diff is made of the Go-shaped specs (`cp.validation.godiff`; the rarer volume sources
are shaped from their JSON names). Pure.
"""

from __future__ import annotations

import posixpath
from typing import Any

from cp import quantity
from cp.errors import Cause
from cp.validation import godiff
from cp.validation.common import (
    GoValue,
    as_dict,
    as_list,
    as_str,
    each,
    is_dns1123_label,
    is_dns1123_subdomain,
    meta_of,
    name_is_dns_subdomain,
    not_supported,
    parse_quantity,
)
from cp.validation.meta import validate_label_selector, validate_object_meta
from cp.validation.registry import Rules

ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
_VOLUME_MODES = ("Block", "Filesystem")
_BETA_CLASS = "volume.beta.kubernetes.io/storage-class"
_RECLAIM_POLICIES = ("Delete", "Recycle", "Retain")
_PHASES_PVC = ("Bound", "Lost", "Pending")
# PersistentVolumeSource, in upstream's order of checks.
PV_SOURCES = ("hostPath", "gcePersistentDisk", "awsElasticBlockStore", "glusterfs", "flocker", "nfs", "rbd",
              "quobyte", "cephfs", "iscsi", "cinder", "fc", "flexVolume", "azureFile", "vsphereVolume",
              "photonPersistentDisk", "portworxVolume", "azureDisk", "scaleIO", "local", "storageos", "csi")
_HOST_PATH_TYPES = ("", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate",
                    "Socket")


def _access_modes(modes: Any, path: str, errs: list[Cause], *, required_detail: str) -> None:
    modes = as_list(modes)
    if not modes:
        errs.append(Cause("Required", path, required_detail))
    for mode in modes:
        if mode not in ACCESS_MODES:
            not_supported(errs, path, mode, ACCESS_MODES)
    if "ReadWriteOncePod" in modes and any(m != "ReadWriteOncePod" for m in modes):
        errs.append(Cause("Forbidden", path, "may not use ReadWriteOncePod with other access modes"))


def _positive_quantity(raw: Any, path: str, errs: list[Cause]) -> None:
    q = parse_quantity(raw)
    if q is not None and q <= 0:
        errs.append(Cause("Invalid", path, "must be greater than zero", GoValue(_canonical(raw))))


def _class_name(name: Any, path: str, errs: list[Cause]) -> None:
    if isinstance(name, str) and name:
        each(errs, path, name, is_dns1123_subdomain(name))


def _typed_reference(ref: Any, path: str, errs: list[Cause], *, namespaced: bool) -> None:
    """validateDataSource / validateDataSourceRef."""
    ref = as_dict(ref)
    if not as_str(ref.get("name")):
        errs.append(Cause("Required", f"{path}.name", ""))
    kind = as_str(ref.get("kind"))
    if not kind:
        errs.append(Cause("Required", f"{path}.kind", ""))
    group = as_str(ref.get("apiGroup"))
    if not group and kind != "PersistentVolumeClaim":
        errs.append(Cause("Invalid", path, "must be 'PersistentVolumeClaim' when referencing the default apiGroup",
                          kind))
    if group:
        each(errs, f"{path}.apiGroup", group, is_dns1123_subdomain(group))
    namespace = as_str(ref.get("namespace"))
    if namespaced and namespace:
        each(errs, f"{path}.namespace", namespace, is_dns1123_label(namespace))


def validate_claim_spec(spec: Any, path: str, errs: list[Cause]) -> None:
    """ValidatePersistentVolumeClaimSpec."""
    spec = as_dict(spec)
    _access_modes(spec.get("accessModes"), f"{path}.accessModes", errs,
                  required_detail="at least 1 access mode is required")
    validate_label_selector(spec.get("selector"), f"{path}.selector", errs)
    requests = as_dict(as_dict(spec.get("resources")).get("requests"))
    if "storage" not in requests:
        errs.append(Cause("Required", f"{path}.resources[storage]", ""))
    else:
        _positive_quantity(requests["storage"], f"{path}.resources[storage]", errs)
    _class_name(spec.get("storageClassName"), f"{path}.storageClassName", errs)
    mode = spec.get("volumeMode")
    if mode is not None and mode not in _VOLUME_MODES:
        not_supported(errs, f"{path}.volumeMode", mode, _VOLUME_MODES)
    source, ref = spec.get("dataSource"), spec.get("dataSourceRef")
    if source is not None:
        _typed_reference(source, f"{path}.dataSource", errs, namespaced=False)
    if ref is not None:
        _typed_reference(ref, f"{path}.dataSourceRef", errs, namespaced=True)
    if as_str(as_dict(ref).get("namespace")):
        if source is not None:
            errs.append(Cause("Invalid", path, "may not be specified when dataSourceRef.namespace is specified",
                              GoValue(f"{path}.dataSource")))
    elif source is not None and ref is not None and any(
            as_dict(source).get(k) != as_dict(ref).get(k) for k in ("apiGroup", "kind", "name")):
        errs.append(Cause("Invalid", path, "must match dataSourceRef", GoValue(f"{path}.dataSource")))
    _class_name(spec.get("volumeAttributesClassName"), f"{path}.volumeAttributesClassName", errs)


# ---------------------------------------------------------------- PersistentVolume

def _source(kind: str, source: dict[str, Any], path: str, errs: list[Cause]) -> None:
    """The required fields of the common volume sources."""
    def required(*keys: str) -> None:
        for key in keys:
            if not source.get(key):
                errs.append(Cause("Required", f"{path}.{key}", ""))

    if kind == "hostPath":
        required("path")
        p = as_str(source.get("path"))
        if ".." in p.split("/"):
            errs.append(Cause("Invalid", f"{path}.path", "must not contain '..'", p))
        if source.get("type") not in (None, *_HOST_PATH_TYPES):
            not_supported(errs, f"{path}.type", source.get("type"), _HOST_PATH_TYPES[1:])
    elif kind == "nfs":
        required("server", "path")
        p = as_str(source.get("path"))
        if p and not p.startswith("/"):
            errs.append(Cause("Invalid", f"{path}.path", "must be an absolute path", p))
    elif kind == "local":
        required("path")
    elif kind == "csi":
        required("driver", "volumeHandle")
    elif kind == "iscsi":
        required("targetPortal", "iqn")
    elif kind == "rbd":
        if not as_list(source.get("monitors")):
            errs.append(Cause("Required", f"{path}.monitors", ""))
        required("image")


def _pv_spec(spec: dict[str, Any], errs: list[Cause]) -> None:
    _access_modes(spec.get("accessModes"), "spec.accessModes", errs, required_detail="")
    capacity = as_dict(spec.get("capacity"))
    if not capacity:
        errs.append(Cause("Required", "spec.capacity", ""))
    if "storage" not in capacity or len(capacity) > 1:
        not_supported(errs, "spec.capacity", capacity, ("storage",))
    for name, raw in capacity.items():
        _positive_quantity(raw, f"spec.capacity[{name}]", errs)
    policy = spec.get("persistentVolumeReclaimPolicy")
    if policy and policy not in _RECLAIM_POLICIES:
        not_supported(errs, "spec.persistentVolumeReclaimPolicy", policy, _RECLAIM_POLICIES)
    count = 0
    for kind in PV_SOURCES:
        source = spec.get(kind)
        if source is None:
            continue
        if count and kind != "flexVolume":  # a flex volume is counted, never refused
            # (upstream's path for a second CephFS source is `cephFS`)
            errs.append(Cause("Forbidden", "spec.cephFS" if kind == "cephfs" else f"spec.{kind}",
                              "may not specify more than 1 volume type"))
            continue
        count += 1
        _source(kind, as_dict(source), f"spec.{kind}", errs)
        if kind == "local" and spec.get("nodeAffinity") is None:
            errs.append(Cause("Required", "spec.nodeAffinity", "Local volume requires node affinity"))
    if not count:
        errs.append(Cause("Required", "spec", "must specify a volume type"))
    host = as_dict(spec.get("hostPath"))
    if host and posixpath.normpath(as_str(host.get("path")) or ".") == "/" and policy == "Recycle":
        errs.append(Cause("Forbidden", "spec.persistentVolumeReclaimPolicy",
                          "may not be 'recycle' for a hostPath mount of '/'"))
    _class_name(spec.get("storageClassName"), "spec.storageClassName", errs)
    mode = spec.get("volumeMode")
    if mode is not None and mode not in _VOLUME_MODES:
        not_supported(errs, "spec.volumeMode", mode, _VOLUME_MODES)
    vac = spec.get("volumeAttributesClassName")
    if vac is not None:
        if not vac:
            errs.append(Cause("Required", "spec.volumeAttributesClassName", "an empty string is disallowed"))
        else:
            _class_name(vac, "spec.volumeAttributesClassName", errs)
        if spec.get("csi") is None:
            errs.append(Cause("Required", "spec.csi", "has to be specified when using volumeAttributesClassName"))


def _pv_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=False, name_fn=name_is_dns_subdomain)
    _pv_spec(as_dict(obj.get("spec")), errs)


def _quantities(resources: Any) -> dict[str, str] | None:
    if not isinstance(resources, dict):
        return None
    return {name: _canonical(raw) for name, raw in sorted(resources.items())}


def _canonical(raw: Any) -> str:
    try:
        return quantity.canonical(raw)
    except (quantity.QuantityError, TypeError):
        return str(raw)


def _selector(sel: Any) -> dict[str, Any] | None:
    if not isinstance(sel, dict):
        return None
    return {k: sel[k] for k in ("matchLabels", "matchExpressions") if sel.get(k)}


def _ref(ref: Any, *, namespace: bool) -> dict[str, Any] | None:
    if not isinstance(ref, dict):
        return None
    out = {"APIGroup": ref.get("apiGroup"), "Kind": as_str(ref.get("kind")), "Name": as_str(ref.get("name"))}
    if namespace:
        out["Namespace"] = ref.get("namespace")
    return out


def go_claim_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """core.PersistentVolumeClaimSpec as Go marshals it."""
    resources = as_dict(spec.get("resources"))
    return {
        "AccessModes": spec.get("accessModes"),
        "Selector": _selector(spec.get("selector")),
        "Resources": {"Limits": _quantities(resources.get("limits")),
                      "Requests": _quantities(resources.get("requests"))},
        "VolumeName": as_str(spec.get("volumeName")),
        "StorageClassName": spec.get("storageClassName"),
        "VolumeMode": spec.get("volumeMode"),
        "DataSource": _ref(spec.get("dataSource"), namespace=False),
        "DataSourceRef": _ref(spec.get("dataSourceRef"), namespace=True),
        "VolumeAttributesClassName": spec.get("volumeAttributesClassName"),
    }


# core.PersistentVolumeSource's fields in declaration order, and the fields of the common sources.
_GO_SOURCES = (("gcePersistentDisk", "GCEPersistentDisk"), ("awsElasticBlockStore", "AWSElasticBlockStore"),
               ("hostPath", "HostPath"), ("glusterfs", "Glusterfs"), ("nfs", "NFS"), ("rbd", "RBD"),
               ("quobyte", "Quobyte"), ("iscsi", "ISCSI"), ("flexVolume", "FlexVolume"), ("cinder", "Cinder"),
               ("cephfs", "CephFS"), ("fc", "FC"), ("flocker", "Flocker"), ("azureFile", "AzureFile"),
               ("vsphereVolume", "VsphereVolume"), ("azureDisk", "AzureDisk"),
               ("photonPersistentDisk", "PhotonPersistentDisk"), ("portworxVolume", "PortworxVolume"),
               ("scaleIO", "ScaleIO"), ("local", "Local"), ("storageos", "StorageOS"), ("csi", "CSI"))
_GO_SOURCE_FIELDS: dict[str, tuple[tuple[str, str, Any], ...]] = {
    "hostPath": (("path", "Path", ""), ("type", "Type", None)),
    "nfs": (("server", "Server", ""), ("path", "Path", ""), ("readOnly", "ReadOnly", False)),
    "local": (("path", "Path", ""), ("fsType", "FSType", None)),
    "csi": (("driver", "Driver", ""), ("volumeHandle", "VolumeHandle", ""), ("readOnly", "ReadOnly", False),
            ("fsType", "FSType", ""), ("volumeAttributes", "VolumeAttributes", None),
            ("controllerPublishSecretRef", "ControllerPublishSecretRef", None),
            ("nodeStageSecretRef", "NodeStageSecretRef", None),
            ("nodePublishSecretRef", "NodePublishSecretRef", None),
            ("controllerExpandSecretRef", "ControllerExpandSecretRef", None),
            ("nodeExpandSecretRef", "NodeExpandSecretRef", None)),
}


def _go_source(kind: str, source: Any) -> Any:
    if not isinstance(source, dict):
        return None
    fields = _GO_SOURCE_FIELDS.get(kind)
    if fields is None:  # the rarer sources: their JSON names, capitalized
        return {k[:1].upper() + k[1:]: v for k, v in source.items()}
    return {go: source.get(js, zero) for js, go, zero in fields}


def go_volume_source(spec: dict[str, Any]) -> dict[str, Any]:
    return {go: _go_source(js, spec.get(js)) for js, go in _GO_SOURCES}


def _pv_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    spec, old_spec = as_dict(new.get("spec")), as_dict(old.get("spec"))
    _pv_create(new, meta_of(new), errs, False)
    compared = spec
    csi, old_csi = as_dict(spec.get("csi")), as_dict(old_spec.get("csi"))
    if old_csi and old_csi.get("controllerExpandSecretRef") is None and csi.get("controllerExpandSecretRef"):
        # The expansion secret may be added to a volume that had none.
        compared = {**spec, "csi": {k: v for k, v in csi.items() if k != "controllerExpandSecretRef"}}
    if any(compared.get(k) != old_spec.get(k) for k in PV_SOURCES):
        errs.append(Cause("Forbidden", "spec.persistentvolumesource", "spec.persistentvolumesource is immutable "
                          "after creation\n" + godiff.unified(go_volume_source(old_spec), go_volume_source(compared))))
    if spec.get("volumeMode") != old_spec.get("volumeMode"):
        errs.append(Cause("Invalid", "volumeMode", "field is immutable", spec.get("volumeMode")))
    if old_spec.get("nodeAffinity") is not None and spec.get("nodeAffinity") != old_spec.get("nodeAffinity"):
        errs.append(Cause("Invalid", "nodeAffinity", "field is immutable, except for updating from beta label to GA",
                          spec.get("nodeAffinity")))
    if old_spec.get("volumeAttributesClassName") is not None and spec.get("volumeAttributesClassName") is None:
        errs.append(Cause("Forbidden", "spec.volumeAttributesClassName", "update from non-nil value to nil is "
                          "forbidden"))


# ---------------------------------------------------------------- PersistentVolumeClaim

def _pvc_create(obj: dict[str, Any], meta: dict[str, Any], errs: list[Cause], namespaced: bool) -> None:
    validate_object_meta(meta, errs, namespaced=namespaced, name_fn=name_is_dns_subdomain)
    validate_claim_spec(obj.get("spec"), "spec", errs)


def _storage(spec: dict[str, Any]) -> Any:
    return as_dict(as_dict(spec.get("resources")).get("requests")).get("storage")


def _pvc_update(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    spec, old_spec = as_dict(new.get("spec")), as_dict(old.get("spec"))
    _pvc_create(new, meta_of(new), errs, True)
    allowed, compared = dict(old_spec), dict(spec)
    if not old_spec.get("volumeName"):
        _carry(spec, allowed, "volumeName")  # set once, by the binder
    if old_spec.get("storageClassName") is None and spec.get("storageClassName") is not None:
        beta = as_dict(meta_of(old).get("annotations")).get(_BETA_CLASS)
        if beta is None or beta == spec.get("storageClassName"):
            compared.pop("storageClassName")  # a claim without a class may get one
    if as_dict(new.get("status")).get("phase") == "Bound" and "requests" in as_dict(spec.get("resources")):
        resources = dict(as_dict(spec.get("resources")))
        requests = dict(as_dict(resources.get("requests")))
        requests["storage"] = _storage(old_spec)
        resources["requests"] = requests
        compared["resources"] = resources
    _carry(old_spec, compared, "volumeAttributesClassName")
    if compared != allowed:
        errs.append(Cause("Forbidden", "spec", "spec is immutable after creation except resources.requests and "
                          "volumeAttributesClassName for bound claims\n"
                          + godiff.unified(go_claim_spec(allowed), go_claim_spec(compared))))
    new_size, old_size = parse_quantity(_storage(spec) or "0"), parse_quantity(_storage(old_spec) or "0")
    capacity = parse_quantity(as_dict(as_dict(old.get("status")).get("capacity")).get("storage") or "0")
    if new_size is not None and old_size is not None and capacity is not None and new_size < old_size \
            and new_size <= capacity:
        errs.append(Cause("Forbidden", "spec.resources.requests.storage", "field can not be less than "
                          "status.capacity"))
    if spec.get("volumeMode") != old_spec.get("volumeMode"):
        errs.append(Cause("Invalid", "volumeMode", "field is immutable", spec.get("volumeMode")))
    vac, old_vac = spec.get("volumeAttributesClassName"), old_spec.get("volumeAttributesClassName")
    if old_vac is not None and vac != old_vac:
        if vac is None:
            errs.append(Cause("Forbidden", "spec.volumeAttributesClassName", "update from non-nil value to nil is "
                              "forbidden"))
        elif not vac:
            errs.append(Cause("Forbidden", "spec.volumeAttributesClassName", "update from non-nil value to an "
                              "empty string is forbidden"))


def _carry(source: dict[str, Any], target: dict[str, Any], key: str) -> None:
    if key in source:
        target[key] = source[key]
    else:
        target.pop(key, None)


def _pvc_status(new: dict[str, Any], old: dict[str, Any], errs: list[Cause]) -> None:
    status = as_dict(new.get("status"))
    phase = status.get("phase")
    if phase and phase not in _PHASES_PVC:
        not_supported(errs, "status.phase", phase, _PHASES_PVC)
    _access_modes(status.get("accessModes") or ["ReadWriteOnce"], "status.accessModes", errs, required_detail="")
    for name, raw in as_dict(status.get("capacity")).items():
        q = parse_quantity(raw)
        if q is not None and q < 0:
            errs.append(Cause("Invalid", f"status.capacity[{name}]", "must be greater than or equal to 0", str(raw)))


RULES = {
    # A volume's status write checks nothing beyond metadata (ValidatePersistentVolumeStatusUpdate).
    ("", "PersistentVolume"): Rules(_pv_create, _pv_update),
    ("", "PersistentVolumeClaim"): Rules(_pvc_create, _pvc_update, _pvc_status),
}
