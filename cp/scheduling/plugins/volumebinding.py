"""VolumeBinding (pure), as far as PersistentVolumeClaims exist: what the pod's claims allow.

PreFilter (skipped for a pod without claims, or without volume data):
- a claim that does not exist — `persistentvolumeclaim "x" not found` (for a generic ephemeral
  volume: waiting for the ephemeral volume controller), is lost, being deleted, or (ephemeral) not
  owned by the pod — rejects the pod, unresolvable;
- an unbound claim of an `Immediate` class (or pre-bound to a volume but not yet bound) — "pod has
  unbound immediate PersistentVolumeClaims", unresolvable: the PV controller binds it first;
- the bound claims' volumes with a `kubernetes.io/hostname In` node affinity narrow the nodes
  (PreFilterResult).

Filter, per node (`FindPodVolumes`), unresolvable with one reason per failed check:
- a bound claim's volume must exist — "node(s) unavailable due to one or more pvc(s) bound to
  non-existent pv(s)" — and its node affinity match the node — "node(s) didn't match
  PersistentVolume's node affinity";
- a `WaitForFirstConsumer` claim: with a `volume.kubernetes.io/selected-node` annotation only that
  node; else an available volume of its class matching it on this node (size, access modes,
  volume mode, selector, node affinity), or a class that provisions dynamically (a provisioner other
  than `kubernetes.io/no-provisioner`, its `allowedTopologies` matching the node) — else "node(s)
  didn't find available persistent volumes to bind".

Reserve/PreBind (`bindings`): on the chosen node, each delayed claim's matching volume gets the claim
as its `claimRef` (the PV controller then binds the pre-bound pair) and each claim to provision gets
the `volume.kubernetes.io/selected-node` annotation. Not modelled: CSIStorageCapacity ("not enough
free storage"), the StorageCapacityScoring score, and PreBind waiting for the claims to be bound
before the pod is (the PV controller binds them right after).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar, Protocol

from cp import quantity as quantities
from cp import selectors
from cp.dra.nodeselector import NodeSelectorError, node_selector_matches
from cp.objects import meta_of, spec_of
from cp.scheduling import framework, plugins, profiles

__all__ = ["ERR_REASON_BIND_CONFLICT", "ERR_REASON_NODE_CONFLICT", "ERR_REASON_PV_NOT_EXIST",
           "ERR_REASON_UNBOUND_IMMEDIATE", "StaticVolumes", "VolumeBinding", "VolumeBindings", "VolumeLookup",
           "pod_claims"]

ERR_REASON_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
ERR_REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"

ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
HOSTNAME = "kubernetes.io/hostname"
WFFC = "WaitForFirstConsumer"


class VolumeLookup(Protocol):
    """The PersistentVolumeClaims, PersistentVolumes and StorageClasses the scheduler knows."""

    def claim(self, namespace: str, name: str) -> Mapping[str, Any] | None: ...

    def volume(self, name: str) -> Mapping[str, Any] | None: ...

    def volumes(self) -> Iterable[Mapping[str, Any]]: ...

    def storage_class(self, name: str) -> Mapping[str, Any] | None: ...


class StaticVolumes:
    """A VolumeLookup over lists of objects (tests, `cplane why`)."""

    def __init__(self, *, claims: Iterable[Mapping[str, Any]] = (), volumes: Iterable[Mapping[str, Any]] = (),
                 classes: Iterable[Mapping[str, Any]] = ()) -> None:
        self._claims = {(meta_of(c).get("namespace") or "", meta_of(c).get("name") or ""): c for c in claims}
        self._volumes = {meta_of(v).get("name") or "": v for v in volumes}
        self._classes = {meta_of(c).get("name") or "": c for c in classes}

    def claim(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self._claims.get((namespace, name))

    def volume(self, name: str) -> Mapping[str, Any] | None:
        return self._volumes.get(name)

    def volumes(self) -> Iterable[Mapping[str, Any]]:
        return self._volumes.values()

    def storage_class(self, name: str) -> Mapping[str, Any] | None:
        return self._classes.get(name)


def pod_claims(pod: Mapping[str, Any]) -> list[tuple[str, bool]]:
    """(claim name, from a generic ephemeral volume) for each of the pod's claim volumes."""
    pod_name = str(meta_of(pod).get("name") or "")
    out = []
    for vol in spec_of(pod).get("volumes") or ():
        if not isinstance(vol, Mapping):
            continue
        if vol.get("persistentVolumeClaim"):
            out.append((str(vol["persistentVolumeClaim"].get("claimName") or ""), False))
        elif vol.get("ephemeral"):
            out.append((f"{pod_name}-{vol.get('name')}", True))
    return out


def claim_class(claim: Mapping[str, Any]) -> str:
    """`GetPersistentVolumeClaimClass`: the beta annotation wins over spec.storageClassName."""
    ann = (meta_of(claim).get("annotations") or {}).get("volume.beta.kubernetes.io/storage-class")
    if ann is not None:
        return str(ann)
    return str(spec_of(claim).get("storageClassName") or "")


def volume_class(volume: Mapping[str, Any]) -> str:
    ann = (meta_of(volume).get("annotations") or {}).get("volume.beta.kubernetes.io/storage-class")
    if ann is not None:
        return str(ann)
    return str(spec_of(volume).get("storageClassName") or "")


def _storage(value: Any) -> int:
    try:
        return int(quantities.parse(value))
    except (quantities.QuantityError, TypeError, ValueError):
        return 0


def _node_affinity_matches(volume: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """`CheckNodeAffinity`: the volume's required node affinity (labels and fields) matches."""
    required = (spec_of(volume).get("nodeAffinity") or {}).get("required")
    if required is None:
        return True
    try:
        return node_selector_matches(required, node)
    except NodeSelectorError:
        return False


def _hostname_nodes(volume: Mapping[str, Any]) -> set[str] | None:
    """`GetLocalPersistentVolumeNodeNames`: the `kubernetes.io/hostname In` values of its terms."""
    required = (spec_of(volume).get("nodeAffinity") or {}).get("required") or {}
    result: set[str] | None = None
    for term in required.get("nodeSelectorTerms") or ():
        nodes: set[str] | None = None
        for expr in (term or {}).get("matchExpressions") or ():
            if expr.get("key") == HOSTNAME and expr.get("operator") == "In":
                values = set(expr.get("values") or ())
                nodes = values if nodes is None else nodes & values
        if nodes is not None:
            result = nodes if result is None else result | nodes
    return result


def _fully_bound(claim: Mapping[str, Any]) -> bool:
    return bool(spec_of(claim).get("volumeName")) and ANN_BIND_COMPLETED in (meta_of(claim).get("annotations") or {})


def _volume_matches(volume: Mapping[str, Any], claim: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """`FindMatchingVolume`'s checks for one volume (delayed binding, on `node`)."""
    vspec, cspec = spec_of(volume), spec_of(claim)
    if volume_class(volume) != claim_class(claim):
        return False
    ref = vspec.get("claimRef")
    if ref and not (ref.get("namespace") == meta_of(claim).get("namespace") and ref.get("name") == meta_of(claim).get(
            "name") and (not ref.get("uid") or ref.get("uid") == meta_of(claim).get("uid"))):
        return False
    if (volume.get("status") or {}).get("phase") not in (None, "Available") and not ref:
        return False
    if not set(cspec.get("accessModes") or ()) <= set(vspec.get("accessModes") or ()):
        return False
    if (vspec.get("volumeMode") or "Filesystem") != (cspec.get("volumeMode") or "Filesystem"):
        return False
    want = _storage(((cspec.get("resources") or {}).get("requests") or {}).get("storage", 0))
    if _storage((vspec.get("capacity") or {}).get("storage", 0)) < want:
        return False
    selector = cspec.get("selector")
    if selector:
        try:
            if not selectors.from_label_selector_object(selector).matches(meta_of(volume).get("labels") or {}):
                return False
        except Exception:
            return False
    return _node_affinity_matches(volume, node)


class VolumeBindings:
    """What PreBind writes for the chosen node: each static volume's `claimRef` to its claim, and
    the `volume.kubernetes.io/selected-node` annotation on each claim to provision."""

    __slots__ = ("provision", "static")

    def __init__(self, *, static: list[tuple[Mapping[str, Any], Mapping[str, Any]]],
                 provision: list[Mapping[str, Any]]) -> None:
        self.static = static
        self.provision = provision

    def __bool__(self) -> bool:
        return bool(self.static or self.provision)


class _State:
    __slots__ = ("bound", "delayed", "lookup")

    def __init__(self, lookup: VolumeLookup, bound: list[Mapping[str, Any]], delayed: list[Mapping[str, Any]]) -> None:
        self.lookup = lookup
        self.bound = bound
        self.delayed = delayed


def _size(claim: Mapping[str, Any]) -> int:
    return _storage(((spec_of(claim).get("resources") or {}).get("requests") or {}).get("storage", 0))


class VolumeBinding(framework.Plugin):
    name: ClassVar[str] = "VolumeBinding"
    points: ClassVar[frozenset[str]] = frozenset({"PreFilter", "Filter"})
    events: ClassVar[tuple[str, ...]] = (
        "PersistentVolumeClaim/Add", "PersistentVolumeClaim/Update", "PersistentVolume/Add",
        "PersistentVolume/Update", "StorageClass/Add", "StorageClass/Update", "Node/Add", "Node/UpdateNodeLabel",
        "CSINode/Add", "CSINode/Update", "CSIDriver/Update", "CSIStorageCapacity/Add",
        "CSIStorageCapacity/Update")

    def pre_filter(self, state: framework.CycleState, pod: framework.PodInfo,
                   snapshot: framework.Snapshot) -> framework.Status | None:
        lookup: VolumeLookup | None = getattr(snapshot, "volumes", None)
        names = pod_claims(pod.pod)
        if lookup is None or not names:
            return framework.SKIPPED
        ns = pod.namespace
        claims = []
        for claim_name, ephemeral in names:
            claim = lookup.claim(ns, claim_name)
            if claim is None:
                msg = (f'waiting for ephemeral volume controller to create the persistentvolumeclaim "{claim_name}"'
                       if ephemeral else f'persistentvolumeclaim "{claim_name}" not found')
                return framework.Status(plugins.UNRESOLVABLE, [msg])
            if (claim.get("status") or {}).get("phase") == "Lost":
                return framework.Status(plugins.UNRESOLVABLE, [
                    f'persistentvolumeclaim "{claim_name}" bound to non-existent persistentvolume '
                    f'"{spec_of(claim).get("volumeName") or ""}"'])
            if meta_of(claim).get("deletionTimestamp"):
                return framework.Status(plugins.UNRESOLVABLE, [f'persistentvolumeclaim "{claim_name}" is being deleted'])
            if ephemeral and not any(isinstance(r, Mapping) and r.get("controller") and r.get("uid") == pod.uid
                                     for r in meta_of(claim).get("ownerReferences") or ()):
                return framework.Status(plugins.UNRESOLVABLE, [
                    f"PVC {ns}/{claim_name} was not created for pod {ns}/{pod.name} (pod is not owner)"])
            claims.append(claim)
        bound: list[Mapping[str, Any]] = []
        delayed: list[Mapping[str, Any]] = []
        immediate = False
        for claim in claims:
            if _fully_bound(claim):
                bound.append(claim)
                continue
            klass = lookup.storage_class(claim_class(claim)) if claim_class(claim) else None
            if klass is not None and klass.get("volumeBindingMode") == WFFC and not spec_of(claim).get("volumeName"):
                delayed.append(claim)
            else:
                immediate = True
        if immediate:
            return framework.Status(plugins.UNRESOLVABLE, [ERR_REASON_UNBOUND_IMMEDIATE])
        state[self.name] = _State(lookup, bound, sorted(delayed, key=_size))
        eligible: set[str] | None = None
        for claim in bound:
            volume = lookup.volume(str(spec_of(claim).get("volumeName")))
            if volume is None:
                eligible = None
                break
            nodes = _hostname_nodes(volume)
            if nodes:
                eligible = set(nodes) if eligible is None else eligible & nodes
        if eligible is not None:
            state.restrict(frozenset(eligible), self.name)
        return None

    def filter(self, state: framework.CycleState, pod: framework.PodInfo,
               node: framework.NodeState) -> framework.Status | None:
        s: _State | None = state.get(self.name)
        if s is None:
            return None
        reasons = self.find_pod_volumes(s, node)
        return framework.Status(plugins.UNRESOLVABLE, reasons) if reasons else None

    @staticmethod
    def find_pod_volumes(s: _State, node: framework.NodeState) -> list[str]:
        bound_ok = found = unbound_ok = True
        for claim in s.bound:
            volume = s.lookup.volume(str(spec_of(claim).get("volumeName")))
            if volume is None:
                found = False
                break
            if not _node_affinity_matches(volume, node.node):
                bound_ok = False
                break
        if s.delayed:
            unbound_ok = VolumeBinding.delayed_bindings(s, node) is not None
        reasons = []
        if not bound_ok:
            reasons.append(ERR_REASON_NODE_CONFLICT)
        if not unbound_ok:
            reasons.append(ERR_REASON_BIND_CONFLICT)
        if not found:
            reasons.append(ERR_REASON_PV_NOT_EXIST)
        return reasons

    def bindings(self, state: framework.CycleState, node: framework.NodeState) -> VolumeBindings | None:
        """Reserve (`AssumePodVolumes`) on the chosen node: the available volume each delayed claim
        binds to, and the claims to provision there (None: nothing to do)."""
        s: _State | None = state.get(self.name)
        if s is None or not s.delayed:
            return None
        return self.delayed_bindings(s, node)

    @staticmethod
    def delayed_bindings(s: _State, node: framework.NodeState) -> VolumeBindings | None:
        """The WaitForFirstConsumer claims on this node: (claim, volume) pairs and the claims to
        provision, or None when some claim can have neither."""
        to_match: list[Mapping[str, Any]] = []
        to_provision: list[Mapping[str, Any]] = []
        for claim in s.delayed:
            selected = (meta_of(claim).get("annotations") or {}).get(ANN_SELECTED_NODE)
            if selected is not None:
                if selected != node.name:
                    return None
                to_provision.append(claim)
            else:
                to_match.append(claim)
        chosen: set[str] = set()
        static: list[tuple[Mapping[str, Any], Mapping[str, Any]]] = []
        for claim in to_match:
            best: Mapping[str, Any] | None = None
            for volume in s.lookup.volumes():
                vname = str(meta_of(volume).get("name") or "")
                if vname in chosen or not _volume_matches(volume, claim, node.node):
                    continue
                ref = spec_of(volume).get("claimRef")
                if ref:  # pre-bound to this claim: the one
                    best = volume
                    break
                if best is None or _storage((spec_of(volume).get("capacity") or {}).get("storage", 0)) < _storage(
                        (spec_of(best).get("capacity") or {}).get("storage", 0)):
                    best = volume
            if best is None:
                to_provision.append(claim)
            else:
                chosen.add(str(meta_of(best).get("name") or ""))
                static.append((claim, best))
        for claim in to_provision:
            klass = s.lookup.storage_class(claim_class(claim))
            if klass is None:
                return None
            provisioner = str(klass.get("provisioner") or "")
            if not provisioner or provisioner == NO_PROVISIONER:
                return None
            if not _topology_matches(klass.get("allowedTopologies"), node.labels):
                return None
        return VolumeBindings(static=static, provision=to_provision)


def _topology_matches(terms: Sequence[Mapping[str, Any]] | None, labels: Mapping[str, str]) -> bool:
    """`MatchTopologySelectorTerms`: no terms match everything; terms are ORed, their label
    expressions ANDed, each an `In` over values."""
    if not terms:
        return True
    for term in terms:
        exprs = (term or {}).get("matchLabelExpressions") or ()
        if all(labels.get(str(e.get("key"))) in set(e.get("values") or ()) for e in exprs):
            return True
    return False


profiles.PLUGINS[VolumeBinding.name] = lambda _args: VolumeBinding()
