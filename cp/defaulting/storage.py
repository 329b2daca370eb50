"""Defaulting of storage.k8s.io/v1 kinds.

Source of behaviour (read, not copied): `pkg/apis/storage/v1/defaults.go` (StorageClass reclaim policy
and binding mode, the CSIDriver capability flags) with the 1.37 feature gates at their defaults. Pure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cp.defaulting.fields import child, setdefault


def _storage_class(obj: dict[str, Any]) -> None:
    setdefault(obj, "reclaimPolicy", "Delete")
    setdefault(obj, "volumeBindingMode", "Immediate")


def _csi_driver(obj: dict[str, Any]) -> None:
    spec = child(obj, "spec")
    setdefault(spec, "attachRequired", True)
    setdefault(spec, "podInfoOnMount", False)
    setdefault(spec, "storageCapacity", False)
    setdefault(spec, "fsGroupPolicy", "ReadWriteOnceWithFSType")
    if not spec.get("volumeLifecycleModes"):
        spec["volumeLifecycleModes"] = ["Persistent"]
    setdefault(spec, "requiresRepublish", False)
    setdefault(spec, "seLinuxMount", False)


def _volume_attachment(obj: dict[str, Any]) -> None:
    child(child(obj, "spec"), "source")


DEFAULTERS: dict[tuple[str, str, str], Callable[[dict[str, Any]], None]] = {
    ("storage.k8s.io", "v1", "StorageClass"): _storage_class,
    ("storage.k8s.io", "v1", "CSIDriver"): _csi_driver,
    ("storage.k8s.io", "v1", "VolumeAttachment"): _volume_attachment,
}
