"""cp/defaulting/storage.py: StorageClass reclaim policy and binding mode, CSIDriver capability flags
(pkg/apis/storage/v1/defaults.go with 1.37's feature gates)."""

from __future__ import annotations

from tests.cp.defaulting.support import defaulted, twice_is_once


def test_storage_class() -> None:
    obj = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "s"},
           "provisioner": "p.example.com"}
    out = defaulted(obj)
    assert (out["reclaimPolicy"], out["volumeBindingMode"]) == ("Delete", "Immediate")
    kept = defaulted(dict(obj, reclaimPolicy="Retain", volumeBindingMode="WaitForFirstConsumer"))
    assert (kept["reclaimPolicy"], kept["volumeBindingMode"]) == ("Retain", "WaitForFirstConsumer")


def test_csi_driver() -> None:
    obj = {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": "d.example.com"}}
    assert defaulted(obj)["spec"] == {
        "attachRequired": True, "podInfoOnMount": False, "storageCapacity": False,
        "fsGroupPolicy": "ReadWriteOnceWithFSType", "volumeLifecycleModes": ["Persistent"],
        "requiresRepublish": False, "seLinuxMount": False}
    assert twice_is_once(obj)
