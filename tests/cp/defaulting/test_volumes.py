"""cp/defaulting/volumes.py: PersistentVolume, PersistentVolumeClaim, Endpoints and LimitRange
(pkg/apis/core/v1/defaults.go)."""

from __future__ import annotations

from tests.cp.defaulting.support import defaulted, twice_is_once


def test_persistent_volume() -> None:
    obj = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv"},
           "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/d"},
                    "rbd": {"monitors": ["m"], "image": "i"}}}
    out = defaulted(obj)
    assert (out["spec"]["persistentVolumeReclaimPolicy"], out["spec"]["volumeMode"]) == ("Retain", "Filesystem")
    assert out["status"] == {"phase": "Pending"}
    assert out["spec"]["hostPath"] == {"path": "/d", "type": ""}
    assert out["spec"]["rbd"] == {"monitors": ["m"], "image": "i", "pool": "rbd", "user": "admin",
                                  "keyring": "/etc/ceph/keyring"}
    assert twice_is_once(obj)


def test_persistent_volume_claim() -> None:
    obj = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c"},
           "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}
    out = defaulted(obj)
    assert out["spec"]["volumeMode"] == "Filesystem"
    assert out["status"] == {"phase": "Pending"}
    assert defaulted(dict(obj, spec={"volumeMode": "Block"}))["spec"]["volumeMode"] == "Block"
    assert twice_is_once(obj)


def test_endpoints_port_protocol() -> None:
    obj = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "e"},
           "subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}]}]}
    assert [p["protocol"] for p in defaulted(obj)["subsets"][0]["ports"]] == ["TCP", "UDP"]
    assert twice_is_once(obj)


def test_limit_range_container_defaults() -> None:
    obj = {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "l"},
           "spec": {"limits": [
               {"type": "Container", "max": {"cpu": "2", "memory": "1Gi"}, "min": {"cpu": "100m", "ephemeral-storage": "1Gi"},
                "default": {"cpu": "1"}},
               {"type": "Pod", "max": {"cpu": "4"}},
               {"type": "Container"}]}}
    limits = defaulted(obj)["spec"]["limits"]
    assert limits[0]["default"] == {"cpu": "1", "memory": "1Gi"}
    assert limits[0]["defaultRequest"] == {"cpu": "1", "memory": "1Gi", "ephemeral-storage": "1Gi"}
    assert limits[1] == {"type": "Pod", "max": {"cpu": "4"}}
    assert limits[2] == {"type": "Container"}
    assert twice_is_once(obj)
