"""PersistentVolume binding and the simulated provisioner against a sandbox with a fleet: the fleet's
default StorageClass `standard` (WaitForFirstConsumer) keeps a claim Pending until a pod using it is
scheduled, then a volume is provisioned on that pod's node and both sides are bound with upstream's
fields and annotations; an Immediate class binds at once; a pre-made volume is matched by class,
size and access modes (the smallest that fits); deleting a claim releases its volume, which is
deleted under reclaim policy Delete and kept Released under Retain.

Out of scope: the default class admission (tests/api/admission/test_storageclass.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from controllers import volumes
from cp import errors, testing

FLEET = {"apiVersion": "sim.cplane.dev/v1alpha1", "kind": "Fleet", "metadata": {"name": "storage"},
         "nodePools": [{"name": "node", "count": 2}]}
CONTROLLERS = ["garbage-collector", "scheduler", volumes.NAME]
NS = "default"
CLAIMS = "persistentvolumeclaims"
VOLUMES = "persistentvolumes"


def _claim(name: str, size: str = "1Gi", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}, **spec}}


def _pod(name: str, claim: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"terminationGracePeriodSeconds": 0, "containers": [{"name": "c", "image": "nginx"}],
                     "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]}}


def _volume(name: str, size: str, klass: str, *, modes: tuple[str, ...] = ("ReadWriteOnce",),
            policy: str = "Retain") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": size}, "accessModes": list(modes), "storageClassName": klass,
                     "persistentVolumeReclaimPolicy": policy, "hostPath": {"path": f"/data/{name}"}}}


async def _bound(sb: testing.Sandbox, name: str) -> dict[str, Any]:
    async def check() -> dict[str, Any] | None:
        claim = await sb.client.get(CLAIMS, name, namespace=NS)
        return claim if (claim.get("status") or {}).get("phase") == "Bound" else None

    return dict(await sb.wait_for(check, timeout=10))


async def _events(sb: testing.Sandbox, name: str) -> list[tuple[str, str, str]]:
    return [(e["type"], e["reason"], e["message"]) for e in (await sb.client.list("events", namespace=NS)).items
            if e["involvedObject"]["name"] == name]


@pytest.mark.cplane(controllers=CONTROLLERS, fleet=FLEET)
async def test_default_class_binds_when_the_first_consumer_is_scheduled(cplane_sandbox: testing.Sandbox) -> None:
    sb = cplane_sandbox
    c = sb.client

    async def default_class() -> dict[str, Any] | None:
        try:
            return dict(await c.get("storageclasses.storage.k8s.io", "standard"))
        except errors.NotFound:  # the fleet creates it at start
            return None

    sc = await sb.wait_for(default_class)
    assert sc["metadata"]["annotations"] == {"storageclass.kubernetes.io/is-default-class": "true"}
    assert (sc["provisioner"], sc["reclaimPolicy"], sc["volumeBindingMode"]) == (
        "sim.cplane.dev/hostpath", "Delete", "WaitForFirstConsumer")

    claim = await c.create(CLAIMS, _claim("data", "2Gi"), namespace=NS)
    assert claim["spec"]["storageClassName"] == "standard"  # DefaultStorageClass admission

    async def waiting() -> bool:
        return ("Normal", "WaitForFirstConsumer", "waiting for first consumer to be created before binding") \
            in await _events(sb, "data")

    await sb.wait_for(waiting)
    assert (await c.get(CLAIMS, "data", namespace=NS))["status"]["phase"] == "Pending"
    assert not (await c.list(VOLUMES)).items

    await c.create("pods", _pod("user", "data"), namespace=NS)
    claim = await _bound(sb, "data")
    pod = await c.get("pods", "user", namespace=NS)
    node = pod["spec"]["nodeName"]
    pv_name = f"pvc-{claim['metadata']['uid']}"
    assert claim["spec"]["volumeName"] == pv_name
    annotations = claim["metadata"]["annotations"]
    assert annotations["volume.kubernetes.io/selected-node"] == node
    assert annotations["volume.kubernetes.io/storage-provisioner"] == "sim.cplane.dev/hostpath"
    assert annotations["pv.kubernetes.io/bind-completed"] == "yes"
    assert annotations["pv.kubernetes.io/bound-by-controller"] == "yes"
    assert claim["status"]["capacity"] == {"storage": "2Gi"}
    assert claim["status"]["accessModes"] == ["ReadWriteOnce"]

    pv = await c.get(VOLUMES, pv_name)
    assert pv["metadata"]["annotations"] == {"pv.kubernetes.io/provisioned-by": "sim.cplane.dev/hostpath"}
    assert pv["status"]["phase"] == "Bound"
    ref = pv["spec"]["claimRef"]
    assert (ref["kind"], ref["namespace"], ref["name"], ref["uid"]) == (
        "PersistentVolumeClaim", NS, "data", claim["metadata"]["uid"])
    assert (pv["spec"]["storageClassName"], pv["spec"]["persistentVolumeReclaimPolicy"]) == ("standard", "Delete")
    assert pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == [node]
    assert ("Normal", "ProvisioningSucceeded", f"Successfully provisioned volume {pv_name}") in await _events(
        sb, "data")

    # Reclaim policy Delete: the volume goes with its claim.
    await c.delete("pods", "user", namespace=NS, grace_period_seconds=0)
    await c.delete(CLAIMS, "data", namespace=NS)

    async def volume_gone() -> bool:
        return not (await c.list(VOLUMES)).items

    await sb.wait_for(volume_gone)


@pytest.mark.cplane(controllers=CONTROLLERS, fleet=FLEET)
async def test_immediate_class_and_static_volumes(cplane_sandbox: testing.Sandbox) -> None:
    sb = cplane_sandbox
    c = sb.client
    await c.create("storageclasses.storage.k8s.io", {
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "fast"},
        "provisioner": volumes.SIM_PROVISIONER, "volumeBindingMode": "Immediate", "reclaimPolicy": "Retain"})
    await c.create(CLAIMS, _claim("now", storageClassName="fast"), namespace=NS)
    claim = await _bound(sb, "now")
    pv = await c.get(VOLUMES, claim["spec"]["volumeName"])
    assert "nodeAffinity" not in pv["spec"]

    # Static volumes of class "manual": the smallest one that fits, with every access mode asked for.
    await c.create(VOLUMES, _volume("small", "1Gi", "manual"))
    await c.create(VOLUMES, _volume("big", "10Gi", "manual"))
    await c.create(VOLUMES, _volume("shared", "5Gi", "manual", modes=("ReadWriteMany",)))
    await c.create(VOLUMES, _volume("other", "5Gi", "other"))

    async def available() -> bool:
        return all((v.get("status") or {}).get("phase") == "Available"
                   for v in (await c.list(VOLUMES)).items if v["metadata"]["name"] != pv["metadata"]["name"])

    await sb.wait_for(available)
    await c.create(CLAIMS, _claim("two", "2Gi", storageClassName="manual"), namespace=NS)
    await c.create(CLAIMS, _claim("many", "1Gi", storageClassName="manual",
                                  accessModes=["ReadWriteMany"]), namespace=NS)
    two, many = await _bound(sb, "two"), await _bound(sb, "many")
    assert (two["spec"]["volumeName"], many["spec"]["volumeName"]) == ("big", "shared")
    assert two["status"]["capacity"] == {"storage": "10Gi"}
    big = await c.get(VOLUMES, "big")
    assert big["metadata"]["annotations"] == {"pv.kubernetes.io/bound-by-controller": "yes"}

    # No volume fits and the class has no provisioner: Pending.
    await c.create(CLAIMS, _claim("huge", "100Gi", storageClassName="manual"), namespace=NS)

    async def failed() -> bool:
        return any(r == "ProvisioningFailed" for _, r, _ in await _events(sb, "huge"))

    await sb.wait_for(failed)
    assert ("Warning", "ProvisioningFailed", 'storageclass.storage.k8s.io "manual" not found') in await _events(
        sb, "huge")
    assert (await c.get(CLAIMS, "huge", namespace=NS))["status"]["phase"] == "Pending"

    # Retain: a deleted claim's volume stays, Released.
    await c.delete(CLAIMS, "two", namespace=NS)

    async def released() -> bool:
        return (await c.get(VOLUMES, "big")).get("status", {}).get("phase") == "Released"

    await sb.wait_for(released)
