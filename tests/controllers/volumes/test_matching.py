"""Which volume a claim binds to, as pure functions: a volume pre-bound to the claim first (uid empty
or equal), else the smallest free fit by class, size, access modes, volume mode and selector; and the
volume the simulated provisioner makes.

Out of scope: the controller against a server (test_volumes_integration.py).
"""

from __future__ import annotations

from typing import Any

from controllers import volumes

CLAIM = {"metadata": {"name": "data", "namespace": "ns", "uid": "u-1", "resourceVersion": "7"},
         "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "2Gi"}},
                  "storageClassName": "manual"}}


def _pv(name: str, size: str, *, klass: str = "manual", modes: tuple[str, ...] = ("ReadWriteOnce",),
        claim_ref: dict[str, Any] | None = None, labels: dict[str, str] | None = None,
        mode: str | None = None, phase: str = "Available") -> dict[str, Any]:
    spec: dict[str, Any] = {"capacity": {"storage": size}, "accessModes": list(modes), "storageClassName": klass}
    if claim_ref is not None:
        spec["claimRef"] = claim_ref
    if mode is not None:
        spec["volumeMode"] = mode
    return {"kind": "PersistentVolume", "metadata": {"name": name, "labels": labels or {}}, "spec": spec,
            "status": {"phase": phase}}


def _names(pv: dict[str, Any] | None) -> str | None:
    return None if pv is None else str(pv["metadata"]["name"])


def test_smallest_free_fit() -> None:
    pvs = [_pv("tiny", "1Gi"), _pv("huge", "100Gi"), _pv("mid", "5Gi"), _pv("wrong-class", "2Gi", klass="x"),
           _pv("rwx", "2Gi", modes=("ReadWriteMany",)), _pv("block", "2Gi", mode="Block"),
           _pv("released", "2Gi", phase="Released"),
           _pv("taken", "2Gi", claim_ref={"namespace": "ns", "name": "other", "uid": "u-9"})]
    assert _names(volumes.find_volume(CLAIM, pvs)) == "mid"
    assert volumes.find_volume(CLAIM, pvs[:1]) is None


def test_pre_bound_volume_wins() -> None:
    pre = _pv("pre", "50Gi", claim_ref={"namespace": "ns", "name": "data"})
    assert _names(volumes.find_volume(CLAIM, [_pv("fit", "2Gi"), pre])) == "pre"
    stale = _pv("stale", "2Gi", claim_ref={"namespace": "ns", "name": "data", "uid": "old"})
    assert volumes.find_volume(CLAIM, [stale]) is None


def test_selector_and_class_from_the_beta_annotation() -> None:
    claim = {**CLAIM, "spec": {**CLAIM["spec"], "selector": {"matchLabels": {"tier": "gold"}}}}
    pvs = [_pv("plain", "2Gi"), _pv("gold", "3Gi", labels={"tier": "gold"})]
    assert _names(volumes.find_volume(claim, pvs)) == "gold"
    beta = {"metadata": {**CLAIM["metadata"], "annotations": {volumes.ANN_BETA_CLASS: "x"}}, "spec": CLAIM["spec"]}
    assert volumes.claim_class(beta) == "x"
    assert _names(volumes.find_volume(beta, [_pv("x", "2Gi", klass="x"), _pv("m", "2Gi")])) == "x"


def test_provisioned_volume() -> None:
    sc = {**volumes.default_storage_class(), "mountOptions": ["noatime"]}
    pv = volumes.provisioned_volume(CLAIM, sc, node="node-3")
    assert pv["metadata"] == {"name": "pvc-u-1", "annotations": {volumes.ANN_PROVISIONED_BY: volumes.SIM_PROVISIONER}}
    spec = pv["spec"]
    assert spec["capacity"] == {"storage": "2Gi"}
    assert (spec["persistentVolumeReclaimPolicy"], spec["storageClassName"], spec["volumeMode"]) == (
        "Delete", "standard", "Filesystem")
    assert spec["claimRef"] == {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": "ns",
                                "name": "data", "uid": "u-1", "resourceVersion": "7"}
    assert spec["hostPath"] == {"path": "/var/lib/cplane/volumes/pvc-u-1", "type": "DirectoryOrCreate"}
    assert spec["mountOptions"] == ["noatime"]
    assert spec["nodeAffinity"]["required"]["nodeSelectorTerms"] == [{"matchExpressions": [
        {"key": "kubernetes.io/hostname", "operator": "In", "values": ["node-3"]}]}]
    assert "nodeAffinity" not in volumes.provisioned_volume(CLAIM, sc, node=None)["spec"]
