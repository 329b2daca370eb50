"""Printers of storage.k8s.io: StorageClasses, VolumeAttributesClasses, CSIDrivers, CSINodes,
CSIStorageCapacities and VolumeAttachments (upstream's `printStorageClass`, `printCSIDriver`, ...).
Pure; no I/O."""

from __future__ import annotations

from typing import Any

from cp.printers.common import AGE_COL, NAME_COL, E, Obj, Printer, col, since

__all__ = ["PRINTERS"]

_DEFAULT_CLASS = ("storageclass.kubernetes.io/is-default-class", "storageclass.beta.kubernetes.io/is-default-class")
_DEFAULT_VAC = "volumeattributesclass.alpha.kubernetes.io/is-default-class"


def _storage_class_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or E
    annotations = meta.get("annotations") or E
    name = meta.get("name", "")
    if any(annotations.get(a) == "true" for a in _DEFAULT_CLASS):
        name += " (default)"
    reclaim = o.get("reclaimPolicy")
    binding = o.get("volumeBindingMode")
    return [
        name,
        o.get("provisioner") or "",
        "Delete" if reclaim is None else reclaim,
        "Immediate" if binding is None else binding,
        bool(o.get("allowVolumeExpansion")),
        since(meta.get("creationTimestamp")),
    ]


def _vac_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or E
    name = meta.get("name", "")
    if (meta.get("annotations") or E).get(_DEFAULT_VAC) == "true":
        name += " (default)"
    return [name, o.get("driverName") or "", since(meta.get("creationTimestamp"))]


def _csi_driver_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or E
    spec = o.get("spec") or E
    attach = spec.get("attachRequired")
    tokens = spec.get("tokenRequests")
    modes = ",".join(spec.get("volumeLifecycleModes") or ())
    return [
        meta.get("name", ""),
        True if attach is None else bool(attach),
        bool(spec.get("podInfoOnMount")),
        bool(spec.get("storageCapacity")),
        "<unset>" if tokens is None else ",".join(t.get("audience") or "" for t in tokens),
        bool(spec.get("requiresRepublish")),
        modes or "<none>",
        since(meta.get("creationTimestamp")),
    ]


def _csi_node_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or E
    return [meta.get("name", ""), len((o.get("spec") or E).get("drivers") or ()), since(meta.get("creationTimestamp"))]


def _capacity_row(o: Obj) -> list[Any]:
    capacity = o.get("capacity")
    return [(o.get("metadata") or E).get("name", ""), o.get("storageClassName") or "",
            "<unset>" if capacity is None else str(capacity)]


def _attachment_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or E
    spec = o.get("spec") or E
    return [
        meta.get("name", ""),
        spec.get("attacher") or "",
        (spec.get("source") or E).get("persistentVolumeName") or "",
        spec.get("nodeName") or "",
        bool((o.get("status") or E).get("attached")),
        since(meta.get("creationTimestamp")),
    ]


PRINTERS: dict[str, Printer] = {
    "StorageClass": Printer([
        NAME_COL,
        col("Provisioner", "string", "The volume plugin or CSI driver that provisions volumes."),
        col("ReclaimPolicy", "string", "What happens to provisioned volumes when released."),
        col("VolumeBindingMode", "string", "When volumes are bound and provisioned."),
        col("AllowVolumeExpansion", "string", "Whether volumes of the class may be expanded."),
        AGE_COL,
    ], _storage_class_row),
    "VolumeAttributesClass": Printer([
        NAME_COL,
        col("DriverName", "string", "The CSI driver the class is for."),
        AGE_COL,
    ], _vac_row),
    "CSIDriver": Printer([
        NAME_COL,
        col("AttachRequired", "boolean", "Whether volumes need an attach operation."),
        col("PodInfoOnMount", "boolean", "Whether the driver gets pod information on mount."),
        col("StorageCapacity", "boolean", "Whether the scheduler considers storage capacity."),
        col("TokenRequests", "string", "Audiences of the service account tokens the driver gets."),
        col("RequiresRepublish", "boolean", "Whether volumes are republished periodically."),
        col("Modes", "string", "Volume lifecycle modes the driver supports."),
        AGE_COL,
    ], _csi_driver_row),
    "CSINode": Printer([
        NAME_COL,
        col("Drivers", "integer", "Number of CSI drivers registered on the node."),
        AGE_COL,
    ], _csi_node_row),
    "CSIStorageCapacity": Printer([
        NAME_COL,
        col("StorageClassName", "string", "The storage class the capacity is for."),
        col("Capacity", "string", "Capacity reported for the topology segment."),
    ], _capacity_row),
    "VolumeAttachment": Printer([
        NAME_COL,
        col("Attacher", "string", "The volume driver that attaches the volume.", fmt="name"),
        col("PV", "string", "Name of the persistent volume attached."),
        col("Node", "string", "Node the volume is attached to."),
        col("Attached", "boolean", "Whether the attach operation succeeded."),
        AGE_COL,
    ], _attachment_row),
}
