"""The ResourceClaim controller: generates ResourceClaims for pods from ResourceClaimTemplates and
cleans up reservations, allocations and generated claims (kube-controller-manager's
`resourceclaim-controller`, `pkg/controller/resourceclaim`; shared/reference/dra-api.md §10).

Keys are `Request(resource="pods", ...)` and `Request(resource="resourceclaims.resource.k8s.io", ...)`.

**Pods** (`sync_pod`), skipped while being deleted. For each `spec.resourceClaims[]` entry:
- `resourceClaimName`: nothing to create;
- `resourceClaimTemplateName`: the claim's name is read from `status.resourceClaimStatuses`
  (an entry without `resourceClaimName` means no claim is needed). If the named claim exists and
  is controlled by the pod, nothing to do. Otherwise adopt an orphan — a claim controlled by the
  pod (by uid) carrying annotation `resource.kubernetes.io/pod-claim-name: <podClaim>` (or with
  the pre-1.28 deterministic name `<pod>-<podClaim>`), including claims this controller created
  but the informer has not delivered yet — or create one: `generateName: <pod>-<podClaim>-`
  (when longer than 57 characters both parts are cut proportionally:
  `pod[:len(pod)*57//len(base)] + "-" + claim[:len(claim)*57//len(base)]`), the template's
  labels, its annotations plus `pod-claim-name`, its `spec.spec`, and a controller
  ownerReference to the pod with blockOwnerDeletion. A failure emits the Warning
  `FailedResourceClaimCreation` ("PodResourceClaim <name>: ...") and is retried.
- All new names go into `pod.status.resourceClaimStatuses` in ONE strategic-merge patch of
  `pods/status` (merge key `name`; upstream uses a forced server-side apply with field manager
  `ResourceClaimController` — this server's apply is a plain merge that would replace the list).
- A pod that already has `spec.nodeName` (the scheduler was bypassed) gets appended to
  `reservedFor` of each allocated claim not yet reserved for it (below 256 entries).

**Claims** (`sync_claim`):
- drop `reservedFor` pod entries whose pod is known deleted (a 500-entry uid cache), is missing
  from the informer and then from a live GET, has another uid, or is done (Succeeded/Failed, or
  deleted before being scheduled); non-pod consumers are an error;
- if something was dropped: one PUT of the status; when nothing is left and the claim has the
  finalizer `resource.kubernetes.io/delete-protection`, `status.allocation` is cleared in that
  same update (deallocation); then the finalizer is removed (PUT of the claim);
- a claim being deleted, with the finalizer and no reservations: clear the allocation, remove
  the finalizer;
- an unreserved claim generated for a pod that is done, or replaced by a pod with another uid,
  is deleted; if the pod is simply not in the informer the garbage collector handles it.

**Claims shared by a PodGroup** (DRAWorkloadResourceClaims with GenericWorkload; off by default, as
in 1.37; KEP-5729 and k8s.io/dynamic-resource-allocation `resourceclaim`, `cp.dra.podgroups`): a pod
claim equal to one of its PodGroup's `spec.resourceClaims` uses the PodGroup's claim. For a template,
ONE claim is generated for the group when its first such pod is seen — `generateName:
<podgroup>-<claim>-`, controlled by the PodGroup (`scheduling.k8s.io/v1beta1`, blockOwnerDeletion), the
`pod-claim-name` annotation — recorded in the PodGroup's `status.resourceClaimStatuses` and in each pod's
`status.resourceClaimStatuses`. The scheduler reserves it for the PodGroup; a PodGroup entry in
`reservedFor` is kept while the PodGroup (same uid) exists and a pod of the group using the claim may
still run, so the claim is deallocated once the last such pod is gone; the garbage collector deletes it
with its PodGroup.

Pod events enqueue the pod when it needs work, and its claims when it is deleted, done, or
deleted before scheduling (so reservations are released). Claim events enqueue the claim and
the pods using it. Template events enqueue the pods that refer to the template and still miss
their claim (upstream only retries with backoff).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import Mapping
from typing import Any

import structlog

from controllers import replicaset as rsc
from controllers.runtime import cache as caches
from controllers.runtime import client as clients
from controllers.runtime import informer as informers
from controllers.runtime import manager as managers
from controllers.runtime import reconcile
from cp import clock as clocks
from cp import errors
from cp import features as gates
from cp import resources as res
from cp.dra import podgroups

NAME = "resourceclaim"
COMPONENT = "resource_claim"  # upstream's event source component
FIELD_MANAGER = "ResourceClaimController"
POD_CLAIM_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
DELETE_PROTECTION = "resource.kubernetes.io/delete-protection"
RESERVED_FOR_MAX = 256
MAX_BASE_LEN = 57  # 63 - hyphen - 5 random characters
DELETED_UID_CACHE = 500
MUTATION_TTL = 3600.0  # our own creates, until the informer has them

PODS = rsc.PODS
CLAIMS = clients.resolve("resourceclaims.resource.k8s.io")
TEMPLATES = clients.resolve("resourceclaimtemplates.resource.k8s.io")
PODGROUPS = res.gated_kind("scheduling.k8s.io", "podgroups")

POD_TEMPLATE_INDEX = "claim-template"


def by_claim_template(obj: Mapping[str, Any]) -> list[str]:
    """The ResourceClaimTemplate names a pod refers to."""
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        return []
    return sorted({str(c["resourceClaimTemplateName"]) for c in spec.get("resourceClaims") or []
                   if isinstance(c, Mapping) and c.get("resourceClaimTemplateName")})


POD_INDEXERS = {caches.CLAIM_NAME: caches.by_claim_name, POD_TEMPLATE_INDEX: by_claim_template}
CLAIM_INDEXERS = {caches.OWNER_UID: caches.by_owner_uid}

logger = structlog.get_logger("cplane.controllers.resourceclaim")


class ClaimNotCreated(Exception):
    """The template claim has no entry in pod.status.resourceClaimStatuses yet."""


class ClaimCreationFailed(Exception):
    """The API server refused a generated claim (the message says why)."""


def pod_claims(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [c for c in rsc.spec_of(pod).get("resourceClaims") or [] if isinstance(c, Mapping)]


def claim_name(pod: Mapping[str, Any], pod_claim: Mapping[str, Any]) -> tuple[str | None, bool]:
    """upstream `resourceclaim.Name`: (claim name or None when no claim is needed, whether the
    claim must be owned by the pod). Raises ClaimNotCreated for a template claim without a
    status entry, ValueError for an entry with neither source."""
    if pod_claim.get("resourceClaimName"):
        return str(pod_claim["resourceClaimName"]), False
    if pod_claim.get("resourceClaimTemplateName"):
        for entry in rsc.status_of(pod).get("resourceClaimStatuses") or []:
            if isinstance(entry, Mapping) and entry.get("name") == pod_claim.get("name"):
                name = entry.get("resourceClaimName")
                return (str(name) if name else None), True
        raise ClaimNotCreated(f'pod "{rsc.name_of(pod)}": ResourceClaim not created yet')
    raise ValueError(f"pod claim {pod_claim.get('name')!r}: neither resourceClaimName nor "
                     "resourceClaimTemplateName set (unsupported source)")


def is_for_pod(pod: Mapping[str, Any], claim: Mapping[str, Any]) -> bool:
    """upstream `resourceclaim.IsForPod`: a controller ownerReference with the pod's uid."""
    ref = rsc.controller_ref(claim)
    return ref is not None and str(ref.get("uid") or "") == rsc.uid_of(pod)


def owning_pod(claim: Mapping[str, Any]) -> tuple[str, str]:
    """(name, uid) of the Pod controlling a generated claim, or ("", "")."""
    for ref in rsc.meta(claim).get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller") is True and ref.get("apiVersion") == "v1" \
                and ref.get("kind") == "Pod":
            return str(ref.get("name") or ""), str(ref.get("uid") or "")
    return "", ""


def reserved_for(claim: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [dict(r) for r in rsc.status_of(claim).get("reservedFor") or [] if isinstance(r, Mapping)]


def is_reserved_for(pod: Mapping[str, Any], claim: Mapping[str, Any]) -> bool:
    return any(r.get("uid") == rsc.uid_of(pod) for r in reserved_for(claim))


def can_be_reserved(claim: Mapping[str, Any]) -> bool:
    return len(reserved_for(claim)) < RESERVED_FOR_MAX


def is_allocated(claim: Mapping[str, Any]) -> bool:
    return rsc.status_of(claim).get("allocation") is not None


def is_pod_done(pod: Mapping[str, Any]) -> bool:
    """Certain never to run (again): terminal phase, or deleted before it was scheduled."""
    phase = rsc.status_of(pod).get("phase")
    return phase in ("Succeeded", "Failed") or (rsc.is_deleting(pod) and not rsc.spec_of(pod).get("nodeName"))


def pod_needs_claims(pod: Mapping[str, Any], deleted: bool) -> bool:
    if deleted:
        return False
    if rsc.status_of(pod).get("phase") in ("Succeeded", "Failed"):
        return False
    return not (rsc.is_deleting(pod) and not rsc.spec_of(pod).get("nodeName"))


def generate_name(pod_name: str, pod_claim_name: str) -> str:
    """`<pod>-<podClaim>-`, both parts cut proportionally when longer than 57 characters."""
    base = f"{pod_name}-{pod_claim_name}-"
    if len(base) <= MAX_BASE_LEN:
        return base
    return (pod_name[:len(pod_name) * MAX_BASE_LEN // len(base)] + "-"
            + pod_claim_name[:len(pod_claim_name) * MAX_BASE_LEN // len(base)])


class _UidCache:
    """The last N uids of deleted pods (upstream's LRU `uidCache`)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: collections.OrderedDict[str, None] = collections.OrderedDict()

    def add(self, uid: str) -> None:
        if not uid:
            return
        self._items[uid] = None
        self._items.move_to_end(uid)
        while len(self._items) > self.size:
            self._items.popitem(last=False)

    def __contains__(self, uid: object) -> bool:
        return uid in self._items


class ResourceClaimController:
    def __init__(self, *, client: clients.Client, informer_factory: informers.InformerFactory,
                 recorder: managers.EventRecorder, clock: clocks.Clock,
                 feature_gates: gates.FeatureGates = gates.DEFAULT) -> None:
        self.client = client
        self.informers = informer_factory
        self.recorder = recorder
        self.clock = clock
        self.pod_cache = informer_factory.informer(PODS, indexers=POD_INDEXERS).cache
        self.claim_cache = informer_factory.informer(CLAIMS, indexers=CLAIM_INDEXERS).cache
        self.template_cache = informer_factory.informer(TEMPLATES).cache
        self.deleted = _UidCache(DELETED_UID_CACHE)
        # Claims we created, by (namespace, name), with the time they were made: a mutation cache
        # over the informer so a retry before the informer catches up adopts instead of re-creating.
        self._created: dict[tuple[str, str], tuple[float, dict[str, Any]]] = {}
        # Claims shared by a PodGroup (DRAWorkloadResourceClaims): the PodGroups, and the claims we
        # generated per (namespace, podgroup uid, claim name) until the PodGroup's status shows them.
        self.pod_group_cache = (informer_factory.informer(PODGROUPS).cache
                                if feature_gates.enabled(gates.DRA_WORKLOAD_RESOURCE_CLAIMS) else None)
        self._group_created: dict[tuple[str, str, str], str] = {}
        self._group_locks: dict[tuple[str, str, str], asyncio.Lock] = {}  # one generation per group claim

    def watches(self) -> list[managers.Watch]:
        return [managers.Watch(kind=PODS, map=self.map_pod, indexers=POD_INDEXERS),
                managers.Watch(kind=CLAIMS, map=self.map_claim, indexers=CLAIM_INDEXERS),
                managers.Watch(kind=TEMPLATES, map=self.map_template),
                *([managers.Watch(kind=PODGROUPS, map=self.map_pod_group)] if self.pod_group_cache is not None else [])]

    # ------------------------------------------------------------------ PodGroups (DRAWorkloadResourceClaims)

    def pod_group_of(self, pod: Mapping[str, Any]) -> dict[str, Any] | None:
        name = podgroups.pod_group_name(pod)
        if self.pod_group_cache is None or name is None:
            return None
        return self.pod_group_cache.get(rsc.namespace_of(pod), name)

    def for_pod(self, pod: Mapping[str, Any], claim: Mapping[str, Any]) -> bool:
        """`IsForPod`, PodGroup owners accepted while the gate is on."""
        return is_for_pod(pod, claim) or (self.pod_group_cache is not None
                                          and podgroups.is_for_pod_group_by_pod(pod, claim))

    def reserved(self, pod: Mapping[str, Any], claim: Mapping[str, Any]) -> bool:
        return podgroups.is_reserved_for_pod(pod, claim, accept_pod_group=self.pod_group_cache is not None)

    def map_pod_group(self, change: managers.Change) -> list[reconcile.Request]:
        """A PodGroup appearing (or its claim statuses changing) may let its pods get their claims."""
        group = change.obj
        ns, name = rsc.namespace_of(group), rsc.name_of(group)
        if change.type == "delete":
            return []
        return [self.pod_request(pod) for pod in self.pod_cache.list()
                if rsc.namespace_of(pod) == ns and podgroups.pod_group_name(pod) == name and self.pod_needs_work(pod)]

    # ------------------------------------------------------------------ claim lookups

    def _expire_created(self) -> None:
        now = self.clock.now()
        for key, (made, _claim) in list(self._created.items()):
            if now - made > MUTATION_TTL or key in self.claim_cache:
                del self._created[key]

    def get_claim(self, namespace: str, name: str) -> dict[str, Any] | None:
        cached = self.claim_cache.get(namespace, name)
        if cached is not None:
            return cached
        entry = self._created.get((namespace, name))
        return entry[1] if entry is not None else None

    def claims_owned_by(self, pod: Mapping[str, Any]) -> list[dict[str, Any]]:
        self._expire_created()
        ns, uid = rsc.namespace_of(pod), rsc.uid_of(pod)
        found = {caches.key_of(c): c for c in self.claim_cache.by_index(caches.OWNER_UID, uid)
                 if rsc.namespace_of(c) == ns}
        for (cns, cname), (_made, claim) in self._created.items():
            if cns == ns and (cns, cname) not in found and uid in caches.by_owner_uid(claim):
                found[(cns, cname)] = claim
        return [c for c in found.values() if owning_pod(c)[1] == uid]

    # ------------------------------------------------------------------ event mapping

    @staticmethod
    def pod_request(pod: Mapping[str, Any]) -> reconcile.Request:
        return reconcile.Request(resource="pods", namespace=rsc.namespace_of(pod), name=rsc.name_of(pod))

    @staticmethod
    def claim_request(namespace: str, name: str) -> reconcile.Request:
        return reconcile.Request(resource=CLAIMS.group_resource, namespace=namespace, name=name)

    def map_pod(self, change: managers.Change) -> list[reconcile.Request]:
        return self.enqueue_pod(change.obj, deleted=change.type == "delete")

    def enqueue_pod(self, pod: Mapping[str, Any], *, deleted: bool) -> list[reconcile.Request]:
        if not pod_claims(pod):
            return []
        if deleted:
            self.deleted.add(rsc.uid_of(pod))
        out: list[reconcile.Request] = []
        if not pod_needs_claims(pod, deleted):
            for pod_claim in pod_claims(pod):
                try:
                    name, _ = claim_name(pod, pod_claim)
                except (ClaimNotCreated, ValueError):
                    continue
                if name:
                    out.append(self.claim_request(rsc.namespace_of(pod), name))
        if not deleted and self.pod_needs_work(pod):
            out.append(self.pod_request(pod))
        return out

    def pod_needs_work(self, pod: Mapping[str, Any]) -> bool:
        if rsc.is_deleting(pod) or _pod_done(pod):
            return False  # upstream podNeedsClaims: deleted or terminated pods get no (new) claims
        for pod_claim in pod_claims(pod):
            try:
                name, check_owner = claim_name(pod, pod_claim)
            except (ClaimNotCreated, ValueError):
                return True
            if name is None:
                continue
            claim = self.get_claim(rsc.namespace_of(pod), name)
            if claim is None:
                if pod_claim.get("resourceClaimTemplateName"):
                    return True  # must be (re)created from the template
                continue  # the user must create it
            if check_owner and not self.for_pod(pod, claim):
                continue  # a conflicting claim the user must remove
            if not rsc.spec_of(pod).get("nodeName"):
                continue
            if is_allocated(claim) and not self.reserved(pod, claim) and can_be_reserved(claim):
                return True
        return False

    def map_claim(self, change: managers.Change) -> list[reconcile.Request]:
        claim = change.obj
        ns, name = rsc.namespace_of(claim), rsc.name_of(claim)
        out = [] if change.type == "delete" else [self.claim_request(ns, name)]
        for pod in self.pod_cache.by_index(caches.CLAIM_NAME, name):
            if rsc.namespace_of(pod) == ns:
                out.extend(self.enqueue_pod(pod, deleted=False))
        return out

    def map_template(self, change: managers.Change) -> list[reconcile.Request]:
        if change.type == "delete":
            return []
        template = change.obj
        ns = rsc.namespace_of(template)
        return [self.pod_request(pod) for pod in self.pod_cache.by_index(POD_TEMPLATE_INDEX, rsc.name_of(template))
                if rsc.namespace_of(pod) == ns and self.pod_needs_work(pod)]

    # ------------------------------------------------------------------ reconcile

    async def reconcile(self, request: reconcile.Request) -> reconcile.Result | None:
        if request.resource == "pods":
            await self.sync_pod(request.namespace, request.name)
        elif request.resource == CLAIMS.group_resource:
            await self.sync_claim(request.namespace, request.name)
        else:
            raise reconcile.TerminalError(f"unexpected key {request}")
        return None

    async def sync_pod(self, namespace: str, name: str) -> None:
        cached = self.pod_cache.get(namespace, name)
        if cached is None or rsc.is_deleting(cached) or _pod_done(cached):
            return
        pod = cached
        new_claims: dict[str, str] = {}
        for pod_claim in pod_claims(pod):
            try:
                await self.handle_claim(pod, pod_claim, new_claims)
            except Exception as exc:
                await self.recorder.warning(pod, "FailedResourceClaimCreation",
                                            f"PodResourceClaim {pod_claim.get('name')}: {rsc.message_of(exc)}")
                raise
        if new_claims:
            statuses = [{"name": k, "resourceClaimName": v} for k, v in new_claims.items()]
            patched = await self.client.patch(PODS, name, {"status": {"resourceClaimStatuses": statuses}},
                                              namespace=namespace, patch_type="strategic", subresource="status",
                                              field_manager=FIELD_MANAGER)
            pod = patched
        if not rsc.spec_of(pod).get("nodeName"):
            return  # the scheduler deals with reservations
        for pod_claim in pod_claims(pod):
            claim_name_, check_owner = claim_name(pod, pod_claim)
            if claim_name_ is None:
                continue
            claim = self.get_claim(namespace, claim_name_)
            if claim is None:
                return
            if check_owner and not self.for_pod(pod, claim):
                raise errors.Conflict(f'ResourceClaim {namespace}/{claim_name_} was not created for pod '
                                      f'{namespace}/{name} (pod is not owner)')
            if is_allocated(claim) and not self.reserved(pod, claim) and can_be_reserved(claim):
                await self.reserve_for_pod(pod, claim)

    async def handle_claim(self, pod: Mapping[str, Any], pod_claim: Mapping[str, Any],
                           new_claims: dict[str, str]) -> None:
        ns = rsc.namespace_of(pod)
        try:
            name, must_check_owner = claim_name(pod, pod_claim)
        except ClaimNotCreated:
            pass
        except ValueError as exc:
            raise errors.Invalid(kind="Pod", group="", name=rsc.name_of(pod), causes=[
                errors.Cause("Invalid", "spec.resourceClaims", str(exc))]) from exc
        else:
            if name is None:
                return  # no claim needed
            claim = self.get_claim(ns, name)
            if claim is not None and (not must_check_owner or self.for_pod(pod, claim)):
                return  # already there
            if claim is not None:
                logger.warning("claim_not_owned_recreating", pod=rsc.key_of(pod), claim=name)
        template_name = pod_claim.get("resourceClaimTemplateName")
        if not template_name:
            return
        group = self.pod_group_of(pod)
        if group is not None and podgroups.group_claim_of(pod, group, pod_claim) is not None:
            new_claims[str(pod_claim.get("name"))] = await self.group_claim(group, pod_claim, str(template_name))
            return
        claim = self.find_pod_claim(pod, pod_claim)
        if claim is None:
            template = self.template_cache.get(ns, str(template_name))
            if template is None:
                raise errors.NotFound(f'resource claim template "{template_name}": '
                                      f'resourceclaimtemplate.resource.k8s.io "{template_name}" not found')
            claim = await self.create_claim(pod, pod_claim, template)
        new_claims[str(pod_claim.get("name"))] = rsc.name_of(claim)

    async def group_claim(self, group: Mapping[str, Any], pod_claim: Mapping[str, Any], template_name: str) -> str:
        """The name of the claim generated for the PodGroup's `pod_claim`, generating it first if needed."""
        ns, group_uid, claim_key = rsc.namespace_of(group), rsc.uid_of(group), str(pod_claim.get("name"))
        lock = self._group_locks.setdefault((ns, group_uid, claim_key), asyncio.Lock())
        async with lock:  # pods of one group are synced concurrently: generate the claim once
            return await self._group_claim(group, pod_claim, template_name)

    async def _group_claim(self, group: Mapping[str, Any], pod_claim: Mapping[str, Any], template_name: str) -> str:
        ns, group_uid, claim_key = rsc.namespace_of(group), rsc.uid_of(group), str(pod_claim.get("name"))
        for name in (podgroups.name_from_pod_group(group, pod_claim), self._group_created.get((ns, group_uid, claim_key))):
            if name:
                claim = self.get_claim(ns, name)
                if claim is not None and podgroups.is_for_pod_group(group, claim):
                    return name
        template = self.template_cache.get(ns, template_name)
        if template is None:
            raise errors.NotFound(f'resource claim template "{template_name}": '
                                  f'resourceclaimtemplate.resource.k8s.io "{template_name}" not found')
        owner = {"apiVersion": PODGROUPS.api_version, "kind": "PodGroup", "name": rsc.name_of(group),
                 "uid": group_uid, "controller": True, "blockOwnerDeletion": True}
        created = await self._create_from_template(ns, generate_name(rsc.name_of(group), claim_key), owner,
                                                   claim_key, template)
        name = rsc.name_of(created)
        self._group_created[(ns, group_uid, claim_key)] = name
        statuses = [dict(s) for s in rsc.status_of(group).get("resourceClaimStatuses") or []
                    if isinstance(s, Mapping) and s.get("name") != claim_key]
        statuses.append({"name": claim_key, "resourceClaimName": name})
        await self.client.patch(PODGROUPS, rsc.name_of(group), {"status": {"resourceClaimStatuses": statuses}},
                                namespace=ns, patch_type="merge", subresource="status", field_manager=FIELD_MANAGER)
        logger.info("pod_group_claim_created", pod_group=rsc.key_of(group), pod_claim=claim_key, claim=name)
        return name

    def find_pod_claim(self, pod: Mapping[str, Any], pod_claim: Mapping[str, Any]) -> dict[str, Any] | None:
        """An orphaned claim generated for this pod claim (the status patch failed after create)."""
        deterministic = f"{rsc.name_of(pod)}-{pod_claim.get('name')}"  # Kubernetes <= 1.27 naming
        for claim in sorted(self.claims_owned_by(pod), key=rsc.by_creation):
            annotations = rsc.meta(claim).get("annotations") or {}
            if POD_CLAIM_ANNOTATION in annotations:
                if annotations[POD_CLAIM_ANNOTATION] == pod_claim.get("name"):
                    return claim
            elif rsc.name_of(claim) == deterministic:
                return claim
        return None

    async def create_claim(self, pod: Mapping[str, Any], pod_claim: Mapping[str, Any],
                           template: Mapping[str, Any]) -> dict[str, Any]:
        owner = {"apiVersion": "v1", "kind": "Pod", "name": rsc.name_of(pod), "uid": rsc.uid_of(pod),
                 "controller": True, "blockOwnerDeletion": True}
        created = await self._create_from_template(rsc.namespace_of(pod),
                                                   generate_name(rsc.name_of(pod), str(pod_claim.get("name"))),
                                                   owner, str(pod_claim.get("name")), template)
        logger.info("claim_created", pod=rsc.key_of(pod), pod_claim=pod_claim.get("name"),
                    claim=rsc.name_of(created))
        return created

    async def _create_from_template(self, namespace: str, generate: str, owner: dict[str, Any], pod_claim_name: str,
                                    template: Mapping[str, Any]) -> dict[str, Any]:
        tspec = rsc.spec_of(template)
        tmeta = tspec.get("metadata") or {}
        annotations = dict(tmeta.get("annotations") or {})
        annotations[POD_CLAIM_ANNOTATION] = pod_claim_name
        meta: dict[str, Any] = {
            "generateName": generate,
            "namespace": namespace,
            "ownerReferences": [owner],
            "annotations": annotations,
        }
        if tmeta.get("labels"):
            meta["labels"] = dict(tmeta["labels"])
        # the template's spec as it is: the body is only encoded, never changed (no copy)
        body = {"apiVersion": CLAIMS.api_version, "kind": CLAIMS.kind, "metadata": meta,
                "spec": tspec.get("spec") or {}}
        try:
            created = await self.client.create(CLAIMS, body, namespace=namespace)
        except errors.StatusError as exc:
            raise ClaimCreationFailed(f"create ResourceClaim {meta['generateName']}: {exc.message}") from exc
        self._created[caches.key_of(created)] = (self.clock.now(), created)
        return created

    async def reserve_for_pod(self, pod: Mapping[str, Any], claim: Mapping[str, Any]) -> None:
        body = dict(claim)  # a new status with a new reservedFor: no deep copy of the cached claim
        status = body["status"] = dict(body.get("status") or {})
        status["reservedFor"] = [*reserved_for(claim),
                                 {"resource": "pods", "name": rsc.name_of(pod), "uid": rsc.uid_of(pod)}]
        await self.client.update_status(CLAIMS, body, field_manager=FIELD_MANAGER)
        logger.info("claim_reserved", claim=rsc.key_of(claim), pod=rsc.key_of(pod))

    # ------------------------------------------------------------------ claims

    async def sync_claim(self, namespace: str, name: str) -> None:
        cached = self.claim_cache.get(namespace, name)
        if cached is None:
            return
        claim: dict[str, Any] | None = caches.deep_copy(cached)
        assert claim is not None
        entries = reserved_for(claim)
        valid: list[dict[str, Any]] = []
        for entry in entries:
            if self.pod_group_cache is not None and podgroups.is_pod_group_entry(entry):
                if self.keep_group_reservation(namespace, entry, name):
                    valid.append(entry)
                continue
            if entry.get("apiGroup") or entry.get("resource") != "pods":
                raise reconcile.TerminalError(f"unsupported ReservedFor entry: {entry}")
            if await self.keep_reservation(namespace, entry):
                valid.append(entry)
        has_finalizer = DELETE_PROTECTION in (rsc.meta(claim).get("finalizers") or [])
        if len(valid) < len(entries):
            status = dict(rsc.status_of(claim))
            status["reservedFor"] = valid
            if not valid:
                status.pop("reservedFor")
                if has_finalizer:
                    status.pop("allocation", None)  # deallocate together with the last release
            claim["status"] = status
            claim = await self.client.update_status(CLAIMS, claim, field_manager=FIELD_MANAGER)
            logger.info("reservations_released", claim=f"{namespace}/{name}", kept=len(valid),
                        dropped=len(entries) - len(valid))
            if DELETE_PROTECTION in (rsc.meta(claim).get("finalizers") or []) and not is_allocated(claim):
                claim = await self.remove_finalizer(claim)
        elif has_finalizer and rsc.is_deleting(claim) and not valid:
            if is_allocated(claim):
                status = dict(rsc.status_of(claim))
                status.pop("allocation", None)
                claim["status"] = status
                claim = await self.client.update_status(CLAIMS, claim, field_manager=FIELD_MANAGER)
            claim = await self.remove_finalizer(claim)
        if valid or claim is None:
            return
        pod_name, pod_uid = owning_pod(claim)
        if not pod_name:
            return
        pod = self.pod_cache.get(namespace, pod_name)
        if pod is None:
            return  # maybe not seen yet; if it is gone the garbage collector deletes the claim
        if rsc.uid_of(pod) != pod_uid or is_pod_done(pod):
            logger.info("deleting_unused_generated_claim", claim=f"{namespace}/{name}", pod=pod_name)
            with contextlib.suppress(errors.NotFound):
                await self.client.delete(CLAIMS, name, namespace=namespace)

    async def keep_reservation(self, namespace: str, entry: Mapping[str, Any]) -> bool:
        uid = str(entry.get("uid") or "")
        if uid in self.deleted:
            return False
        pod = self.pod_cache.get(namespace, str(entry.get("name") or ""))
        if pod is None:
            # Not in the informer (yet?): removing a reservation of a pod being scheduled would be
            # wrong, so ask the server.
            try:
                live = await self.client.get(PODS, str(entry.get("name") or ""), namespace=namespace)
            except errors.NotFound:
                return False
            return rsc.uid_of(live) == uid
        if rsc.uid_of(pod) != uid:
            return False
        return not is_pod_done(pod)

    def keep_group_reservation(self, namespace: str, entry: Mapping[str, Any], claim_name_: str) -> bool:
        """A PodGroup's reservation stays while the PodGroup (same uid) exists and one of its pods
        using the claim may still run."""
        assert self.pod_group_cache is not None
        group = self.pod_group_cache.get(namespace, str(entry.get("name") or ""))
        if group is None or rsc.uid_of(group) != entry.get("uid"):
            return False
        for pod in self.pod_cache.by_index(caches.CLAIM_NAME, claim_name_):
            if rsc.namespace_of(pod) == namespace and podgroups.pod_group_name(pod) == rsc.name_of(group) \
                    and rsc.uid_of(pod) not in self.deleted and pod_needs_claims(pod, False):
                return True
        return False

    async def remove_finalizer(self, claim: dict[str, Any]) -> dict[str, Any] | None:
        body = caches.deep_copy(claim)
        body["metadata"]["finalizers"] = [f for f in rsc.meta(claim).get("finalizers") or []
                                          if f != DELETE_PROTECTION]
        try:
            return await self.client.update(CLAIMS, body, field_manager=FIELD_MANAGER)
        except errors.NotFound:
            return None


def new(ctx: managers.ControllerContext, *, workers: int = 10,
        feature_gates: gates.FeatureGates = gates.DEFAULT) -> managers.Controller:
    controller = ResourceClaimController(client=ctx.client, informer_factory=ctx.informers,
                                         recorder=ctx.recorder(COMPONENT), clock=ctx.clock,
                                         feature_gates=feature_gates)
    return managers.Controller(name=NAME, reconciler=controller, watches=controller.watches(), workers=workers)


def _pod_done(pod: Mapping[str, Any]) -> bool:
    """Succeeded or Failed: such a pod never needs (re-created) claims."""
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")
