"""PersistentVolume binding (kube-controller-manager's `persistentvolume-binder-controller`,
`pkg/controller/volume/persistentvolume`) and a simulated dynamic provisioner for the fleet's
default StorageClass (`standard`, provisioner `sim.cplane.dev/hostpath`; what a CSI driver's
external-provisioner does on a real cluster).

**Claims** (key `persistentvolumeclaims:NS/NAME`), when not yet bound:
1. A claim naming a volume (`spec.volumeName`) binds to it if the volume is free or already points
   at this claim; else it stays Pending (Event `FailedBinding` "volume NAME already bound to a
   different claim.").
2. Otherwise a matching volume is looked for: one pre-bound to this claim (`claimRef` with its
   namespace and name, uid empty or equal), else the smallest free one (`claimRef` unset, phase not
   Released/Failed) of the same class (`""` matches volumes without a class) with at least the
   requested `storage`, every requested access mode, the same `volumeMode`, and labels matching the
   claim's `selector`. For a class with `volumeBindingMode: WaitForFirstConsumer` nothing is chosen
   before the claim has the `volume.kubernetes.io/selected-node` annotation.
3. No volume, but the class has a provisioner: with `WaitForFirstConsumer` and no selected node,
   the claim waits (Event `WaitForFirstConsumer` "waiting for first consumer to be created before
   binding") until a pod using it is bound to a node; that node becomes the selected node (the
   scheduler's VolumeBinding PreBind normally sets it first, as upstream; upstream also binds the
   pod only once the claim is bound, this scheduler does not wait). Then the claim gets the
   `volume.kubernetes.io/storage-provisioner` (and beta) annotation, and Event
   `ExternalProvisioning` names the provisioner. For `sim.cplane.dev/hostpath` the simulated
   provisioner creates the volume `pvc-<claim uid>`: capacity = the request, the claim's access
   modes and volume mode, the class's reclaim policy and mount options, a `hostPath` source under
   `/var/lib/cplane/volumes/`, `claimRef` pre-bound to the claim (with its uid), annotation
   `pv.kubernetes.io/provisioned-by`, and for a selected node a node affinity on
   `kubernetes.io/hostname`; Event `ProvisioningSucceeded` "Successfully provisioned volume NAME".
4. No volume and no provisioner: Pending, with `FailedBinding` "no persistent volumes available
   for this claim and no storage class is set" (or the class is missing: `storageclass.storage.k8s.io
   "NAME" not found`).

**Binding** (upstream's `bind`), each step one PUT guarded by resourceVersion: the volume's
`spec.claimRef` (kind, namespace, name, uid, apiVersion, resourceVersion) and annotation
`pv.kubernetes.io/bound-by-controller: "yes"` when the controller set it; the volume's phase
`Bound`; the claim's `spec.volumeName` and annotations `pv.kubernetes.io/bind-completed: "yes"`
(and `bound-by-controller` when the controller chose the volume); the claim's phase `Bound` with the
volume's `accessModes` and `capacity`. Phase changes set `lastPhaseTransitionTime` on volumes.

**Volumes** (key `persistentvolumes:NAME`): no `claimRef`, or pre-bound to a claim that does not exist
yet: `Available`. Bound to a claim (by uid) that is gone (checked live): `Released`; then the reclaim
policy: `Delete` deletes the volume (Event `VolumeDelete` on failure), `Retain` keeps it Released.
A bound claim whose volume disappears becomes `Lost` (Warning `ClaimLost` "Bound claim has lost its
PersistentVolume. Data on the volume is lost!").

Departures: no `kubernetes.io/pvc-protection` / `pv-protection` finalizers (the
StorageObjectInUseProtection admission plugin is not installed), no volume expansion, no
`Recycle`; a node affinity on a pre-existing volume is not checked against the selected node.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog

from controllers.runtime import cache as caches
from controllers.runtime import client as clients
from controllers.runtime import informer as informers
from controllers.runtime import manager as managers
from controllers.runtime.reconcile import Request, Result, TerminalError
from cp import clock as clocks
from cp import errors, quantity, selectors
from cp.objects import meta_of, spec_of, status_of, uid_of

NAME = "persistentvolume-binder"
UPSTREAM_NAME = "persistentvolume-binder-controller"
COMPONENT = "persistentvolume-controller"  # Event source, as upstream
FIELD_MANAGER = "persistentvolume-binder-controller"

SIM_PROVISIONER = "sim.cplane.dev/hostpath"
DEFAULT_CLASS = "standard"
VOLUME_ROOT = "/var/lib/cplane/volumes"

ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
ANN_STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_BETA_CLASS = "volume.beta.kubernetes.io/storage-class"
ANN_DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"

CLAIMS = clients.resolve("persistentvolumeclaims")
VOLUMES = clients.resolve("persistentvolumes")
CLASSES = clients.resolve("storageclasses.storage.k8s.io")
PODS = clients.resolve("pods")
R_CLAIM = "persistentvolumeclaims"
R_VOLUME = "persistentvolumes"
WFFC = "WaitForFirstConsumer"

logger = structlog.get_logger("cplane.controllers.volumes")


def default_storage_class() -> dict[str, Any]:
    """The fleet's default StorageClass: `standard`, dynamically provisioned by the simulated
    hostpath provisioner, bound when a pod using the claim is scheduled (kind's `standard` class)."""
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": DEFAULT_CLASS, "annotations": {ANN_DEFAULT_CLASS: "true"}},
            "provisioner": SIM_PROVISIONER, "reclaimPolicy": "Delete", "volumeBindingMode": WFFC}


# ---------------------------------------------------------------------- pure helpers


def claim_class(claim: Mapping[str, Any]) -> str:
    """`GetPersistentVolumeClaimClass`: the beta annotation wins over `spec.storageClassName`."""
    beta = (meta_of(claim).get("annotations") or {}).get(ANN_BETA_CLASS)
    if beta is not None:
        return str(beta)
    return str(spec_of(claim).get("storageClassName") or "")


def volume_class(volume: Mapping[str, Any]) -> str:
    beta = (meta_of(volume).get("annotations") or {}).get(ANN_BETA_CLASS)
    if beta is not None:
        return str(beta)
    return str(spec_of(volume).get("storageClassName") or "")


def _storage(resources: Any) -> int:
    raw = resources.get("storage") if isinstance(resources, Mapping) else None
    if raw is None:
        return 0
    try:
        return int(quantity.parse(str(raw)))
    except (ValueError, ArithmeticError):
        return 0


def requested(claim: Mapping[str, Any]) -> int:
    return _storage((spec_of(claim).get("resources") or {}).get("requests"))


def capacity(volume: Mapping[str, Any]) -> int:
    return _storage(spec_of(volume).get("capacity"))


def claim_ref_matches(volume: Mapping[str, Any], claim: Mapping[str, Any]) -> bool:
    """The volume's claimRef names this claim (and, when it has a uid, this very claim)."""
    ref = spec_of(volume).get("claimRef")
    if not isinstance(ref, Mapping):
        return False
    ns, name = caches.key_of(claim)
    if ref.get("namespace") != ns or ref.get("name") != name:
        return False
    return not ref.get("uid") or ref.get("uid") == uid_of(claim)


def volume_fits(volume: Mapping[str, Any], claim: Mapping[str, Any]) -> bool:
    """Class, size, access modes, volume mode and selector (upstream's findMatchingVolume checks)."""
    if volume_class(volume) != claim_class(claim):
        return False
    if capacity(volume) < requested(claim):
        return False
    have = set(spec_of(volume).get("accessModes") or [])
    if not set(spec_of(claim).get("accessModes") or []) <= have:
        return False
    if (spec_of(volume).get("volumeMode") or "Filesystem") != (spec_of(claim).get("volumeMode") or "Filesystem"):
        return False
    selector = spec_of(claim).get("selector")
    if isinstance(selector, Mapping) and selector:
        try:
            if not selectors.from_label_selector_object(selector).matches(meta_of(volume).get("labels") or {}):
                return False
        except ValueError:
            return False
    return True


def find_volume(claim: Mapping[str, Any], volumes: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The volume a claim without `volumeName` binds to: one pre-bound to it, else the smallest free fit."""
    for volume in volumes:
        if claim_ref_matches(volume, claim) and volume_fits(volume, claim) and not meta_of(volume).get(
                "deletionTimestamp"):
            return volume
    free = [v for v in volumes if not spec_of(v).get("claimRef") and not meta_of(v).get("deletionTimestamp")
            and status_of(v).get("phase") not in ("Released", "Failed") and volume_fits(v, claim)]
    if not free:
        return None
    return min(free, key=lambda v: (capacity(v), str(meta_of(v).get("name"))))


def provisioned_volume(claim: Mapping[str, Any], storage_class: Mapping[str, Any], *,
                       node: str | None) -> dict[str, Any]:
    """The volume the simulated provisioner creates for a claim (pre-bound to it)."""
    ns, name = caches.key_of(claim)
    pv_name = f"pvc-{uid_of(claim)}"
    spec: dict[str, Any] = {
        "capacity": {"storage": str((spec_of(claim).get("resources") or {}).get("requests", {}).get("storage")
                                    or "1Gi")},
        "accessModes": list(spec_of(claim).get("accessModes") or ["ReadWriteOnce"]),
        "volumeMode": spec_of(claim).get("volumeMode") or "Filesystem",
        "persistentVolumeReclaimPolicy": storage_class.get("reclaimPolicy") or "Delete",
        "storageClassName": str(meta_of(storage_class).get("name")),
        "hostPath": {"path": f"{VOLUME_ROOT}/{pv_name}", "type": "DirectoryOrCreate"},
        "claimRef": {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": ns, "name": name,
                     "uid": uid_of(claim), "resourceVersion": str(meta_of(claim).get("resourceVersion") or "")},
    }
    if storage_class.get("mountOptions"):
        spec["mountOptions"] = list(storage_class["mountOptions"])
    if node:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}
    return {"apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": pv_name, "annotations": {ANN_PROVISIONED_BY: SIM_PROVISIONER}},
            "spec": spec}


def pod_claim_names(pod: Mapping[str, Any]) -> list[str]:
    return [str(v["persistentVolumeClaim"]["claimName"]) for v in spec_of(pod).get("volumes") or []
            if isinstance(v, Mapping) and isinstance(v.get("persistentVolumeClaim"), Mapping)
            and v["persistentVolumeClaim"].get("claimName")]


def _by_pod_claim(pod: Mapping[str, Any]) -> list[str]:
    return pod_claim_names(pod)


POD_CLAIM_INDEX = "pvc-name"
CLASS_INDEX = "storage-class"
POD_INDEXERS: dict[str, caches.IndexFunc] = {POD_CLAIM_INDEX: _by_pod_claim}
CLAIM_INDEXERS: dict[str, caches.IndexFunc] = {CLASS_INDEX: lambda claim: [claim_class(claim)]}


# ---------------------------------------------------------------------- the controller


class Binder:
    """The reconciler; keys `persistentvolumeclaims:NS/NAME` and `persistentvolumes:NAME`."""

    def __init__(self, *, client: clients.Client, informer_factory: informers.InformerFactory,
                 clock: clocks.Clock, recorder: managers.EventRecorder,
                 provisioner_recorder: managers.EventRecorder) -> None:
        self.client = client
        self.clock = clock
        self.recorder = recorder
        self.provisioner_recorder = provisioner_recorder
        self.claims = informer_factory.informer(CLAIMS, indexers=CLAIM_INDEXERS).cache
        self.volumes = informer_factory.informer(VOLUMES).cache
        self.classes = informer_factory.informer(CLASSES).cache
        self.pods = informer_factory.informer(PODS, indexers=POD_INDEXERS).cache
        self._reported: dict[str, str] = {}  # claim uid -> the last waiting reason an Event said
        self._log = logger.bind(controller=NAME)

    def watches(self) -> list[managers.Watch]:
        return [managers.Watch(kind=CLAIMS, map=self._map_claim, indexers=CLAIM_INDEXERS),
                managers.Watch(kind=VOLUMES, map=self._map_volume),
                managers.Watch(kind=CLASSES, map=self._map_class),
                managers.Watch(kind=PODS, map=self._map_pod, indexers=POD_INDEXERS)]

    # ------------------------------------------------------------------ event mapping

    def _map_claim(self, change: managers.Change) -> list[Request]:
        ns, name = caches.key_of(change.obj)
        out = [Request(resource=R_CLAIM, namespace=ns, name=name)]
        if change.type == "delete":
            self._reported.pop(uid_of(change.obj), None)
            volume = spec_of(change.obj).get("volumeName")
            if volume:
                out.append(Request(resource=R_VOLUME, name=str(volume)))
        return out

    def _map_volume(self, change: managers.Change) -> list[Request]:
        out = [Request(resource=R_VOLUME, name=str(meta_of(change.obj).get("name") or ""))]
        ref = spec_of(change.obj).get("claimRef")
        if isinstance(ref, Mapping) and ref.get("name"):
            out.append(Request(resource=R_CLAIM, namespace=str(ref.get("namespace") or ""), name=str(ref["name"])))
        elif change.type != "delete":  # a new free volume may fit a waiting claim of its class
            out += [Request(resource=R_CLAIM, namespace=ns, name=n)
                    for ns, n in sorted(self.claims.index_keys(CLASS_INDEX, volume_class(change.obj)))]
        return out

    def _map_class(self, change: managers.Change) -> list[Request]:
        name = str(meta_of(change.obj).get("name") or "")
        return [Request(resource=R_CLAIM, namespace=ns, name=n)
                for ns, n in sorted(self.claims.index_keys(CLASS_INDEX, name))]

    def _map_pod(self, change: managers.Change) -> list[Request]:
        node = spec_of(change.obj).get("nodeName")
        if change.type == "delete" or not node:
            return []
        if change.old is not None and spec_of(change.old).get("nodeName") == node:
            return []
        ns = str(meta_of(change.obj).get("namespace") or "")
        return [Request(resource=R_CLAIM, namespace=ns, name=n) for n in pod_claim_names(change.obj)]

    # ------------------------------------------------------------------ reconcile

    async def reconcile(self, request: Request) -> Result | None:
        if request.resource == R_CLAIM:
            await self._sync_claim(request.namespace, request.name)
        elif request.resource == R_VOLUME:
            await self._sync_volume(request.name)
        else:
            raise TerminalError(f"unexpected request {request}")
        return None

    async def _event_once(self, claim: Mapping[str, Any], type_: str, reason: str, message: str, *,
                          recorder: managers.EventRecorder | None = None) -> None:
        key = f"{reason}:{message}"
        if self._reported.get(uid_of(claim)) == key:
            return
        self._reported[uid_of(claim)] = key
        await (recorder or self.recorder).event(claim, type_, reason, message)

    async def _sync_claim(self, ns: str, name: str) -> None:
        claim = self.claims.get(ns, name)
        if claim is None or meta_of(claim).get("deletionTimestamp"):
            return
        volume_name = str(spec_of(claim).get("volumeName") or "")
        if volume_name:
            await self._sync_claim_with_volume(claim, volume_name)
            return
        klass_name = claim_class(claim)
        klass = self.classes.get("", klass_name) if klass_name else None
        wffc = klass is not None and klass.get("volumeBindingMode") == WFFC
        selected = (meta_of(claim).get("annotations") or {}).get(ANN_SELECTED_NODE)
        if wffc and not selected:
            node = self._consumer_node(claim)
            if node is None:
                await self._event_once(claim, "Normal", "WaitForFirstConsumer",
                                       "waiting for first consumer to be created before binding")
                return
            claim = await self._annotate(claim, {ANN_SELECTED_NODE: node})
            selected = node
        volume = find_volume(claim, self.volumes.list())
        if volume is not None:
            await self._bind(volume, claim)
            return
        if klass is None and klass_name:
            await self._event_once(claim, "Warning", "ProvisioningFailed",
                                   f'storageclass.storage.k8s.io "{klass_name}" not found')
            return
        provisioner = str((klass or {}).get("provisioner") or "")
        if not provisioner:
            await self._event_once(claim, "Normal", "FailedBinding",
                                   "no persistent volumes available for this claim and no storage class is set")
            return
        if provisioner == "kubernetes.io/no-provisioner":
            await self._event_once(claim, "Normal", "WaitForPodScheduled" if wffc else "FailedBinding",
                                   "waiting for a volume to be created, either by external provisioner or "
                                   "manually created by system administrator")
            return
        assert klass is not None
        annotations = meta_of(claim).get("annotations") or {}
        if annotations.get(ANN_STORAGE_PROVISIONER) != provisioner:
            claim = await self._annotate(claim, {ANN_STORAGE_PROVISIONER: provisioner,
                                                 ANN_BETA_STORAGE_PROVISIONER: provisioner})
            await self.recorder.normal(
                claim, "ExternalProvisioning",
                f"Waiting for a volume to be created either by the external provisioner '{provisioner}' or "
                "manually by the system administrator. If volume creation is delayed, please verify that the "
                "provisioner is running and correctly registered.")
        if provisioner != SIM_PROVISIONER:
            return
        await self._provision(claim, klass, node=str(selected) if wffc and selected else None)

    def _consumer_node(self, claim: Mapping[str, Any]) -> str | None:
        """The node of a scheduled pod that uses the claim (the oldest such pod's)."""
        ns, name = caches.key_of(claim)
        pods = [p for p in self.pods.by_index(POD_CLAIM_INDEX, name)
                if meta_of(p).get("namespace") == ns and spec_of(p).get("nodeName")]
        if not pods:
            return None
        first = min(pods, key=lambda p: (str(meta_of(p).get("creationTimestamp") or ""), str(meta_of(p).get("name"))))
        return str(spec_of(first)["nodeName"])

    async def _annotate(self, claim: Mapping[str, Any], annotations: Mapping[str, str]) -> dict[str, Any]:
        ns, name = caches.key_of(claim)
        patch = {"metadata": {"annotations": dict(annotations),
                              "resourceVersion": meta_of(claim).get("resourceVersion")}}
        return await self.client.patch(CLAIMS, name, patch, namespace=ns, field_manager=FIELD_MANAGER)

    async def _provision(self, claim: Mapping[str, Any], klass: Mapping[str, Any], *, node: str | None) -> None:
        volume = provisioned_volume(claim, klass, node=node)
        try:
            created = await self.client.create(VOLUMES, volume, field_manager=SIM_PROVISIONER)
        except errors.AlreadyExists:
            return  # provisioned before: its event brings the claim back
        await self.provisioner_recorder.normal(claim, "ProvisioningSucceeded",
                                               f"Successfully provisioned volume {meta_of(created).get('name')}")
        self._log.info("volume_provisioned", claim=f"{caches.key_of(claim)[0]}/{caches.key_of(claim)[1]}",
                       volume=meta_of(created).get("name"), node=node)
        await self._bind(created, claim)

    async def _sync_claim_with_volume(self, claim: Mapping[str, Any], volume_name: str) -> None:
        volume = self.volumes.get("", volume_name)
        if volume is None:
            if status_of(claim).get("phase") == "Bound":
                try:  # the cache may lag behind a volume just created
                    await self.client.get(VOLUMES, volume_name)
                    return
                except errors.NotFound:
                    pass
                await self._claim_phase(claim, "Lost")
                await self.recorder.warning(claim, "ClaimLost",
                                            "Bound claim has lost its PersistentVolume. Data on the volume is lost!")
            return
        ref = spec_of(volume).get("claimRef")
        if isinstance(ref, Mapping) and ref.get("name") and not claim_ref_matches(volume, claim):
            await self._event_once(claim, "Warning", "FailedBinding",
                                   f"volume {volume_name} already bound to a different claim.")
            return
        await self._bind(volume, claim)

    async def _bind(self, volume: Mapping[str, Any], claim: Mapping[str, Any]) -> None:
        """Both sides, in upstream's order: volume claimRef, volume phase, claim volumeName, claim phase."""
        volume = await self._bind_volume(volume, claim)
        claim = await self._bind_claim(claim, volume)
        self._reported.pop(uid_of(claim), None)

    async def _bind_volume(self, volume: Mapping[str, Any], claim: Mapping[str, Any]) -> dict[str, Any]:
        updated = caches.deep_copy(volume)
        ref = spec_of(volume).get("claimRef")
        if not (isinstance(ref, Mapping) and ref.get("uid") == uid_of(claim) and claim_ref_matches(volume, claim)):
            ns, name = caches.key_of(claim)
            updated["spec"]["claimRef"] = {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": ns,
                                           "name": name, "uid": uid_of(claim),
                                           "resourceVersion": str(meta_of(claim).get("resourceVersion") or "")}
            if not isinstance(ref, Mapping) or not ref.get("name"):
                updated["metadata"].setdefault("annotations", {})[ANN_BOUND_BY_CONTROLLER] = "yes"
            updated = await self.client.update(VOLUMES, updated, field_manager=FIELD_MANAGER)
        return await self._volume_phase(updated, "Bound")

    async def _volume_phase(self, volume: Mapping[str, Any], phase: str) -> dict[str, Any]:
        if status_of(volume).get("phase") == phase:
            return dict(volume)
        updated = caches.deep_copy(volume)
        updated["status"] = {"phase": phase, "lastPhaseTransitionTime": clocks.rfc3339(self.clock.now())}
        written = await self.client.update_status(VOLUMES, updated, field_manager=FIELD_MANAGER)
        self._log.info("volume_phase", volume=meta_of(volume).get("name"), phase=phase)
        return written

    async def _bind_claim(self, claim: Mapping[str, Any], volume: Mapping[str, Any]) -> dict[str, Any]:
        volume_name = str(meta_of(volume).get("name"))
        annotations = meta_of(claim).get("annotations") or {}
        current: dict[str, Any] = dict(claim)
        if spec_of(claim).get("volumeName") != volume_name or annotations.get(ANN_BIND_COMPLETED) != "yes":
            updated = caches.deep_copy(claim)
            ann = updated["metadata"].setdefault("annotations", {})
            if spec_of(claim).get("volumeName") != volume_name:
                updated["spec"]["volumeName"] = volume_name
                ann[ANN_BOUND_BY_CONTROLLER] = "yes"
            ann[ANN_BIND_COMPLETED] = "yes"
            current = await self.client.update(CLAIMS, updated, field_manager=FIELD_MANAGER)
        status = status_of(current)
        want = {"phase": "Bound", "accessModes": list(spec_of(volume).get("accessModes") or []),
                "capacity": dict(spec_of(volume).get("capacity") or {})}
        if all(status.get(k) == v for k, v in want.items()):
            return current
        updated = caches.deep_copy(current)
        updated["status"] = {**status, **want}
        written = await self.client.update_status(CLAIMS, updated, field_manager=FIELD_MANAGER)
        ns, name = caches.key_of(claim)
        self._log.info("claim_bound", claim=f"{ns}/{name}", volume=volume_name)
        return written

    async def _claim_phase(self, claim: Mapping[str, Any], phase: str) -> None:
        if status_of(claim).get("phase") == phase:
            return
        updated = caches.deep_copy(claim)
        updated["status"] = {**status_of(claim), "phase": phase}
        await self.client.update_status(CLAIMS, updated, field_manager=FIELD_MANAGER)

    async def _sync_volume(self, name: str) -> None:
        volume = self.volumes.get("", name)
        if volume is None or meta_of(volume).get("deletionTimestamp"):
            return
        ref = spec_of(volume).get("claimRef")
        if not isinstance(ref, Mapping) or not ref.get("name"):
            if status_of(volume).get("phase") not in ("Available", "Failed"):
                await self._volume_phase(volume, "Available")
            return
        ns, claim_name = str(ref.get("namespace") or ""), str(ref["name"])
        claim = self.claims.get(ns, claim_name)
        if claim is not None and (not ref.get("uid") or ref.get("uid") == uid_of(claim)):
            if not ref.get("uid") and status_of(volume).get("phase") not in ("Available", "Bound"):
                await self._volume_phase(volume, "Available")
            return  # the claim's sync binds (or has bound) it
        if not ref.get("uid"):
            if status_of(volume).get("phase") != "Available":
                await self._volume_phase(volume, "Available")  # pre-bound, waiting for its claim
            return
        try:  # the claims cache may lag: ask the server before releasing
            live = await self.client.get(CLAIMS, claim_name, namespace=ns)
            if uid_of(live) == ref.get("uid"):
                return
        except errors.NotFound:
            pass
        volume = await self._volume_phase(volume, "Released")
        policy = spec_of(volume).get("persistentVolumeReclaimPolicy") or "Retain"
        if policy != "Delete":
            return
        try:
            await self.client.delete(VOLUMES, name, preconditions={"uid": uid_of(volume)})
        except (errors.NotFound, errors.Conflict):
            return
        self._log.info("volume_deleted", volume=name, claim=f"{ns}/{claim_name}")


def new(ctx: managers.ControllerContext, *, workers: int = 4) -> managers.Controller:
    binder = Binder(client=ctx.client, informer_factory=ctx.informers, clock=ctx.clock,
                    recorder=ctx.recorder(COMPONENT),
                    provisioner_recorder=ctx.recorder(SIM_PROVISIONER.replace("/", "_")))
    return managers.Controller(name=NAME, reconciler=binder, watches=binder.watches(), workers=workers)
