"""The Deployment controller: rolls a Deployment's pod template out through ReplicaSets
(kube-controller-manager's `deployment` controller, `pkg/controller/deployment`).

Per Deployment key (`namespace/name`):

1. A Deployment with an empty selector (`{}`) only gets a `SelectingAll` Warning and its
   observedGeneration bumped.
2. **Claim ReplicaSets** in its namespace (adopt matching orphans, release owned non-matching
   ones) — the same ControllerRefManager rules as the ReplicaSet controller's pods.
3. Being deleted → only the status is synced. Otherwise the `Progressing` condition goes to
   Unknown/`DeploymentPaused` or `DeploymentResumed` as `spec.paused` changes; a paused
   Deployment, or a **scaling event** (an active ReplicaSet's `desired-replicas` annotation differs
   from `spec.replicas`), is handled by `sync`: scale (proportionally across ReplicaSets during
   a rollout), clean up old ReplicaSets if paused, write the status.
4. Otherwise the strategy runs:
   - **RollingUpdate**: find or create the new ReplicaSet, scale it up within `maxSurge`, scale
     old ones down within `maxUnavailable` (unhealthy replicas first), clean up history once
     complete, then sync the rollout status;
   - **Recreate**: scale every old ReplicaSet to 0, wait until none of their pods is left
     running (terminating pods count), then create / scale up the new one.

The new ReplicaSet is `<deployment>-<pod-template-hash>`; the hash label `pod-template-hash` is
added to its selector, its template labels, and so to its pods. Hash: FNV-32a, then upstream's
`SafeEncodeString` rendering — but over the template's canonical JSON (sorted keys, compact)
rather than over Go's `spew` dump of the typed struct, which cannot be reproduced from JSON; so
names have upstream's shape and alphabet but not the same characters as a real cluster's. When the
name is taken by a ReplicaSet with another template (a hash collision), `status.collisionCount`
is increased and the next pass hashes with it (4 little-endian bytes + 4 zero bytes appended, as
upstream).

Annotations on ReplicaSets: `deployment.kubernetes.io/revision` (max old revision + 1; a reused
ReplicaSet keeps its older revisions in `revision-history`), `desired-replicas`,
`max-replicas` (replicas + maxSurge), plus the Deployment's own annotations except
kubectl's last-applied configuration and these. The Deployment's own `revision` annotation is
written with a metadata merge patch (upstream writes it through the status update, which this
server's status strategy does not carry over).

Status: observedGeneration, replicas, updatedReplicas, readyReplicas, availableReplicas,
unavailableReplicas, collisionCount (zero fields omitted, as Go's omitempty), and conditions:
`Available` (MinimumReplicasAvailable / MinimumReplicasUnavailable: available >= replicas -
maxUnavailable), `Progressing` (NewReplicaSetCreated, FoundNewReplicaSet, ReplicaSetUpdated,
NewReplicaSetAvailable, ProgressDeadlineExceeded on the injected clock, ReplicaSetCreateError,
DeploymentPaused / DeploymentResumed), and `ReplicaFailure` copied from a ReplicaSet. While a
rollout is in progress the key is requeued for the moment its progress deadline would pass.

Events (component `deployment-controller`): `ScalingReplicaSet` "Scaled up replica set web-abc
from 0 to 3" (upstream's current wording), `ReplicaSetCreateError`, `SelectingAll`.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import structlog

from controllers import replicaset as rsc
from controllers.deployment.rules import (
    DEADLINE_SLACK,
    DESIRED_REPLICAS,
    FAILED_RS_CREATE,
    FOUND_NEW_RS,
    HASH_LABEL,
    MAX_INT32,
    MIN_AVAILABLE,
    MIN_UNAVAILABLE,
    NEW_RS_AVAILABLE,
    NEW_RS_CREATED,
    PAUSED,
    REPLICASET_UPDATED,
    RESUMED,
    REVISION,
    TIMED_OUT,
    active,
    annotation_int,
    compute_hash,
    deployment_complete,
    deployment_progressing,
    deployment_timed_out,
    equal_ignore_hash,
    find_active_or_latest,
    find_new_replicaset,
    find_old_replicasets,
    has_progress_deadline,
    is_rolling,
    is_saturated,
    max_revision,
    max_surge,
    max_unavailable,
    new_condition,
    new_rs_new_replicas,
    normalized_status,
    remove_condition,
    replicas_annotations_need_update,
    replicas_of,
    replicaset_proportion,
    revision,
    rs_replicas,
    set_condition,
    set_new_replicaset_annotations,
    set_replicas_annotations,
    status_int,
    time_of,
    total_spec_replicas,
    total_status,
)
from controllers.runtime import cache as caches
from controllers.runtime import client as clients
from controllers.runtime import informer as informers
from controllers.runtime import manager as managers
from controllers.runtime.reconcile import Request, Result
from cp import clock as clocks
from cp import errors

NAME = "deployment"
COMPONENT = "deployment-controller"
FIELD_MANAGER = "deployment-controller"

DEPLOYMENTS = clients.resolve("deployments.apps")
REPLICASETS = rsc.REPLICASETS
PODS = rsc.PODS

logger = structlog.get_logger("cplane.controllers.deployment")


# ---------------------------------------------------------------------- one pass


class _Pass:
    """The state one reconcile works on: the Deployment (replaced by each write's response, so
    later writes carry the newest resourceVersion) and its ReplicaSets (idem)."""

    def __init__(self, d: dict[str, Any], rss: list[dict[str, Any]]) -> None:
        self.d = d
        self.rss = {rsc.uid_of(rs): rs for rs in rss}

    def rs_list(self) -> list[dict[str, Any]]:
        return list(self.rss.values())

    def put(self, rs: dict[str, Any]) -> dict[str, Any]:
        self.rss[rsc.uid_of(rs)] = rs
        return rs


class DeploymentController:
    def __init__(self, *, client: clients.Client, informer_factory: informers.InformerFactory,
                 recorder: managers.EventRecorder, clock: clocks.Clock) -> None:
        self.client = client
        self.informers = informer_factory
        self.recorder = recorder
        self.clock = clock
        self.d_cache = informer_factory.informer(DEPLOYMENTS).cache
        self.rs_cache = informer_factory.informer(REPLICASETS, indexers=rsc.INDEXERS).cache
        self.pod_cache = informer_factory.informer(PODS, indexers=rsc.INDEXERS).cache

    def watches(self) -> list[managers.Watch]:
        return [managers.Watch(kind=DEPLOYMENTS),
                managers.Watch(kind=REPLICASETS, map=self.map_replicaset, indexers=rsc.INDEXERS),
                managers.Watch(kind=PODS, map=self.map_pod, indexers=rsc.INDEXERS)]

    # ------------------------------------------------------------------ event mapping

    @staticmethod
    def _request(obj: Mapping[str, Any]) -> Request:
        return Request(namespace=rsc.namespace_of(obj), name=rsc.name_of(obj))

    def resolve_controller(self, namespace: str, ref: Mapping[str, Any] | None) -> dict[str, Any] | None:
        if ref is None or ref.get("kind") != DEPLOYMENTS.kind or \
                str(ref.get("apiVersion") or "").partition("/")[0] != "apps":
            return None
        d = self.d_cache.get(namespace, str(ref.get("name") or ""))
        if d is None or rsc.uid_of(d) != str(ref.get("uid") or ""):
            return None
        return d

    def deployments_selecting(self, rs: Mapping[str, Any]) -> list[dict[str, Any]]:
        labels = rsc.labels_of(rs)
        out = []
        for d in self.d_cache.list(rsc.namespace_of(rs)):
            sel = rsc.selector_of(d)
            if sel is not None and not sel.empty and sel.matches(labels):
                out.append(d)
        return out

    def map_replicaset(self, change: managers.Change) -> list[Request]:
        rs = change.obj
        ns = rsc.namespace_of(rs)
        ref = rsc.controller_ref(rs)
        if change.type == "delete" or (change.type == "add" and rsc.is_deleting(rs)):
            d = self.resolve_controller(ns, ref)
            return [self._request(d)] if d is not None else []
        if change.type == "add":
            if ref is not None:
                d = self.resolve_controller(ns, ref)
                return [self._request(d)] if d is not None else []
            return [self._request(d) for d in self.deployments_selecting(rs)]
        old = change.old or {}
        if rsc.meta(old).get("resourceVersion") == rsc.meta(rs).get("resourceVersion"):
            return []
        old_ref = rsc.controller_ref(old)
        out = []
        ref_changed = ref != old_ref
        if ref_changed and old_ref is not None:
            d = self.resolve_controller(ns, old_ref)
            if d is not None:
                out.append(self._request(d))
        if ref is not None:
            d = self.resolve_controller(ns, ref)
            if d is not None:
                out.append(self._request(d))
            return out
        if ref_changed or rsc.labels_of(old) != rsc.labels_of(rs):
            out += [self._request(d) for d in self.deployments_selecting(rs)]
        return out

    def map_pod(self, change: managers.Change) -> list[Request]:
        """A deleted pod may unblock a Recreate rollout waiting for old pods to go."""
        if change.type != "delete":
            return []
        pod = change.obj
        ns = rsc.namespace_of(pod)
        ref = rsc.controller_ref(pod)
        if ref is None or ref.get("kind") != REPLICASETS.kind:
            return []
        rs = self.rs_cache.get(ns, str(ref.get("name") or ""))
        if rs is None or rsc.uid_of(rs) != str(ref.get("uid") or ""):
            return []
        d = self.resolve_controller(ns, rsc.controller_ref(rs))
        if d is None or is_rolling(d):
            return []
        return [self._request(d)]

    # ------------------------------------------------------------------ reconcile

    async def reconcile(self, request: Request) -> Result | None:
        cached = self.d_cache.get(request.namespace, request.name)
        if cached is None:
            return None
        d = caches.deep_copy(cached)
        selector = rsc.selector_of(d)
        if selector is None:
            logger.warning("invalid_selector", deployment=rsc.key_of(d))
            return None
        if selector.empty:
            await self.recorder.warning(d, "SelectingAll",
                                        "This deployment is selecting all pods. A non-empty selector is required.")
            generation = int(rsc.meta(d).get("generation") or 0)
            if int(rsc.status_of(d).get("observedGeneration") or 0) < generation:
                d["status"] = {**rsc.status_of(d), "observedGeneration": generation}
                await self.client.update_status(DEPLOYMENTS, d, field_manager=FIELD_MANAGER)
            return None
        rss = await self.replicasets_for(d, selector)
        run = _Pass(d, rss)
        if rsc.is_deleting(d):
            await self.sync_status_only(run)
            return None
        await self.check_paused_conditions(run)
        if rsc.spec_of(run.d).get("paused"):
            await self.sync(run)
            return None
        if await self.is_scaling_event(run):
            await self.sync(run)
            return None
        if is_rolling(run.d):
            return await self.rollout_rolling(run)
        return await self.rollout_recreate(run)

    async def replicasets_for(self, d: Mapping[str, Any], selector: Any) -> list[dict[str, Any]]:
        manager = rsc.RefManager(client=self.client, controller=d, controller_kind=DEPLOYMENTS,
                                 dependent_kind=REPLICASETS, selector=selector, field_manager=FIELD_MANAGER,
                                 can_adopt=rsc.recheck_controller(self.client, DEPLOYMENTS, d))
        claimed = await manager.claim(self.rs_cache.list(rsc.namespace_of(d)))
        return [caches.deep_copy(rs) for rs in claimed]

    def pod_map(self, d: Mapping[str, Any], rss: Iterable[Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
        """Pods matching the Deployment's selector (terminating ones included), by the uid of the
        claimed ReplicaSet controlling them (upstream `getPodMapForDeployment`)."""
        selector = rsc.selector_of(d)
        out: dict[str, list[dict[str, Any]]] = {rsc.uid_of(rs): [] for rs in rss}
        if selector is None:
            return out
        for pod in self.pod_cache.list(rsc.namespace_of(d)):
            if not selector.matches(rsc.labels_of(pod)):
                continue
            ref = rsc.controller_ref(pod)
            if ref is not None and str(ref.get("uid") or "") in out:
                out[str(ref["uid"])].append(pod)
        return out

    # ------------------------------------------------------------------ writes

    async def write_status(self, run: _Pass, status: dict[str, Any]) -> None:
        body = dict(run.d)
        body["status"] = normalized_status(status)
        run.d = await self.client.update_status(DEPLOYMENTS, body, field_manager=FIELD_MANAGER)

    async def set_revision(self, run: _Pass, value: str) -> None:
        """The Deployment's revision annotation (a metadata merge patch; see the module doc)."""
        if not value or (rsc.meta(run.d).get("annotations") or {}).get(REVISION) == value:
            return
        patched = await self.client.patch(DEPLOYMENTS, rsc.name_of(run.d),
                                          {"metadata": {"annotations": {REVISION: value}}},
                                          namespace=rsc.namespace_of(run.d), field_manager=FIELD_MANAGER)
        run.d.setdefault("metadata", {})["annotations"] = dict(rsc.meta(patched).get("annotations") or {})
        run.d["metadata"]["resourceVersion"] = rsc.meta(patched).get("resourceVersion")

    async def update_replicaset(self, run: _Pass, rs: dict[str, Any]) -> dict[str, Any]:
        updated = await self.client.update(REPLICASETS, rs, field_manager=FIELD_MANAGER)
        return run.put(updated)

    # ------------------------------------------------------------------ new / old ReplicaSets

    async def all_replicasets(self, run: _Pass, *, create: bool) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """upstream `getAllReplicaSetsAndSyncRevision`: (new RS or None, every old RS)."""
        old = find_old_replicasets(run.d, run.rs_list())
        new_rs = await self.new_replicaset(run, old, create=create)
        return new_rs, find_old_replicasets(run.d, run.rs_list())

    async def new_replicaset(self, run: _Pass, old: list[dict[str, Any]], *, create: bool) -> dict[str, Any] | None:
        d = run.d
        existing = find_new_replicaset(d, run.rs_list())
        new_revision = max_revision(old) + 1
        if existing is not None:
            rs = copy.deepcopy(existing)
            annotations_changed = set_new_replicaset_annotations(d, rs, new_revision, exists=True)
            min_ready = rsc.spec_of(d).get("minReadySeconds") or 0
            if annotations_changed or (rsc.spec_of(rs).get("minReadySeconds") or 0) != min_ready:
                rs.setdefault("spec", {})["minReadySeconds"] = min_ready
                return await self.update_replicaset(run, rs)
            await self.set_revision(run, str((rsc.meta(rs).get("annotations") or {}).get(REVISION) or ""))
            if has_progress_deadline(d) and \
                    rsc.get_condition(rsc.conditions_of(rsc.status_of(run.d)), "Progressing") is None:
                status = dict(rsc.status_of(run.d))
                set_condition(status, new_condition("Progressing", "True", FOUND_NEW_RS,
                                                    f'Found new replica set "{rsc.name_of(rs)}"', self.clock.now()))
                await self.write_status(run, status)
            return rs
        if not create:
            return None
        return await self.create_new_replicaset(run, old, new_revision)

    async def create_new_replicaset(self, run: _Pass, old: list[dict[str, Any]], new_revision: int
                                    ) -> dict[str, Any] | None:
        d = run.d
        spec = rsc.spec_of(d)
        collision_count = rsc.status_of(d).get("collisionCount")
        template = copy.deepcopy(spec.get("template") or {})
        pod_hash = compute_hash(template, int(collision_count) if collision_count is not None else None)
        tmeta = template.setdefault("metadata", {})
        tmeta["labels"] = {**(tmeta.get("labels") or {}), HASH_LABEL: pod_hash}
        selector = copy.deepcopy(spec.get("selector") or {})
        selector["matchLabels"] = {**(selector.get("matchLabels") or {}), HASH_LABEL: pod_hash}
        name = f"{rsc.name_of(d)}-{pod_hash}"
        new_rs: dict[str, Any] = {
            "apiVersion": REPLICASETS.api_version, "kind": REPLICASETS.kind,
            "metadata": {"name": name, "namespace": rsc.namespace_of(d), "labels": dict(tmeta["labels"]),
                         "ownerReferences": [rsc.new_controller_ref(d, DEPLOYMENTS)]},
            "spec": {"replicas": 0, "minReadySeconds": spec.get("minReadySeconds") or 0,
                     "selector": selector, "template": template},
        }
        replicas = new_rs_new_replicas(d, [*old, new_rs], new_rs)
        new_rs["spec"]["replicas"] = replicas
        set_new_replicaset_annotations(d, new_rs, new_revision, exists=False)
        already_exists = False
        try:
            created = await self.client.create(REPLICASETS, new_rs, namespace=rsc.namespace_of(d),
                                               field_manager=FIELD_MANAGER)
        except errors.AlreadyExists:
            already_exists = True
            found = self.rs_cache.get(rsc.namespace_of(d), name)
            if found is None:  # our own create from an earlier pass, not seen by the cache yet
                found = await self.client.get(REPLICASETS, name, namespace=rsc.namespace_of(d))
            ref = rsc.controller_ref(found)
            if ref is not None and ref.get("uid") == rsc.uid_of(d) and \
                    equal_ignore_hash(rsc.spec_of(d).get("template") or {},
                                      rsc.spec_of(found).get("template") or {}):
                created = caches.deep_copy(found)
            else:
                # A hash collision: hash again with a higher collisionCount next time.
                status = dict(rsc.status_of(d))
                status["collisionCount"] = int(status.get("collisionCount") or 0) + 1
                try:
                    await self.write_status(run, status)
                    logger.info("hash_collision", deployment=rsc.key_of(d), replicaset=name,
                                collision_count=status["collisionCount"])
                except errors.StatusError:
                    pass
                raise
        except errors.StatusError as exc:
            if rsc.has_status_cause(exc, rsc.NAMESPACE_TERMINATING_CAUSE):
                raise
            msg = f'Failed to create new replica set "{name}": {exc.message}'
            if has_progress_deadline(d):
                status = dict(rsc.status_of(d))
                set_condition(status, new_condition("Progressing", "False", FAILED_RS_CREATE, msg, self.clock.now()))
                with contextlib.suppress(errors.StatusError):  # the create error is the one to report
                    await self.write_status(run, status)
            await self.recorder.warning(d, FAILED_RS_CREATE, msg)
            raise
        run.put(created)
        if not already_exists and replicas > 0:
            await self.recorder.normal(run.d, "ScalingReplicaSet",
                                       f"Scaled up replica set {rsc.name_of(created)} from 0 to {replicas}")
        await self.set_revision(run, str(new_revision))
        if not already_exists and has_progress_deadline(run.d):
            status = dict(rsc.status_of(run.d))
            set_condition(status, new_condition("Progressing", "True", NEW_RS_CREATED,
                                                f'Created new replica set "{rsc.name_of(created)}"',
                                                self.clock.now()))
            await self.write_status(run, status)
        return created

    # ------------------------------------------------------------------ scaling

    async def scale_replicaset(self, run: _Pass, rs: dict[str, Any], new_scale: int) -> tuple[bool, dict[str, Any]]:
        """Set spec.replicas and the replica annotations; event on a size change (upstream
        `scaleReplicaSet`)."""
        d = run.d
        replicas = replicas_of(d)
        max_total = replicas + max_surge(d)
        size_changed = rs_replicas(rs) != new_scale
        if not size_changed and not replicas_annotations_need_update(rs, replicas, max_total):
            return False, rs
        old_scale = rs_replicas(rs)
        body = copy.deepcopy(rs)
        body.setdefault("spec", {})["replicas"] = new_scale
        set_replicas_annotations(body, replicas, max_total)
        updated = await self.update_replicaset(run, body)
        if size_changed:
            direction = "up" if old_scale < new_scale else "down"
            await self.recorder.normal(d, "ScalingReplicaSet",
                                       f"Scaled {direction} replica set {rsc.name_of(updated)} "
                                       f"from {old_scale} to {new_scale}")
        return size_changed, updated

    async def scale_and_record(self, run: _Pass, rs: dict[str, Any], new_scale: int) -> tuple[bool, dict[str, Any]]:
        if rs_replicas(rs) == new_scale:
            return False, rs
        return await self.scale_replicaset(run, rs, new_scale)

    async def scale(self, run: _Pass, new_rs: dict[str, Any] | None, old_rss: list[dict[str, Any]]) -> None:
        """Scale for a replicas change: the one active (or the latest) ReplicaSet takes it all;
        during a rollout the change is spread proportionally (upstream `scale`)."""
        d = run.d
        target = find_active_or_latest(new_rs, old_rss)
        if target is not None:
            if rs_replicas(target) != replicas_of(d):
                await self.scale_and_record(run, target, replicas_of(d))
            return
        if is_saturated(d, new_rs):
            for old in active(old_rss):
                await self.scale_and_record(run, old, 0)
            return
        if not is_rolling(d):
            return
        all_rss = active([*old_rss, new_rs])
        current = total_spec_replicas(all_rss)
        allowed = replicas_of(d) + max_surge(d) if replicas_of(d) > 0 else 0
        to_add = allowed - current
        if to_add > 0:  # larger first; among equals the newer first (reversed creation order)
            all_rss.sort(key=rsc.by_creation, reverse=True)
            all_rss.sort(key=rs_replicas, reverse=True)
        elif to_add < 0:  # larger first; among equals the older first
            all_rss.sort(key=rsc.by_creation)
            all_rss.sort(key=rs_replicas, reverse=True)
        added = 0
        sizes: dict[str, int] = {}
        for rs in all_rss:
            if to_add != 0:
                proportion = replicaset_proportion(rs, d, to_add, added)
                sizes[rsc.name_of(rs)] = rs_replicas(rs) + proportion
                added += proportion
            else:
                sizes[rsc.name_of(rs)] = rs_replicas(rs)
        for i, rs in enumerate(all_rss):
            name = rsc.name_of(rs)
            if i == 0 and to_add != 0:
                sizes[name] = max(sizes[name] + to_add - added, 0)
            await self.scale_replicaset(run, rs, sizes[name])

    async def is_scaling_event(self, run: _Pass) -> bool:
        new_rs, old_rss = await self.all_replicasets(run, create=False)
        for rs in active([*old_rss, new_rs]):
            desired = annotation_int(rs, DESIRED_REPLICAS)
            if desired is not None and desired != replicas_of(run.d):
                return True
        return False

    async def check_paused_conditions(self, run: _Pass) -> None:
        d = run.d
        if not has_progress_deadline(d):
            return
        cond = rsc.get_condition(rsc.conditions_of(rsc.status_of(d)), "Progressing")
        if cond is not None and cond.get("reason") == TIMED_OUT:
            return
        paused_cond = cond is not None and cond.get("reason") == PAUSED
        status = dict(rsc.status_of(d))
        if rsc.spec_of(d).get("paused") and not paused_cond:
            set_condition(status, new_condition("Progressing", "Unknown", PAUSED, "Deployment is paused",
                                                self.clock.now()))
        elif not rsc.spec_of(d).get("paused") and paused_cond:
            set_condition(status, new_condition("Progressing", "Unknown", RESUMED, "Deployment is resumed",
                                                self.clock.now()))
        else:
            return
        await self.write_status(run, status)

    async def sync(self, run: _Pass) -> None:
        """Scaling events and paused Deployments: scale, clean up if paused, write the status."""
        new_rs, old_rss = await self.all_replicasets(run, create=False)
        await self.scale(run, new_rs, old_rss)
        new_rs, old_rss = self._refresh(run, new_rs, old_rss)
        if rsc.spec_of(run.d).get("paused"):
            await self.cleanup(run, old_rss)
        await self.sync_deployment_status(run, [*old_rss, new_rs], new_rs)

    async def sync_status_only(self, run: _Pass) -> None:
        new_rs, old_rss = await self.all_replicasets(run, create=False)
        await self.sync_deployment_status(run, [*old_rss, new_rs], new_rs)

    @staticmethod
    def _refresh(run: _Pass, new_rs: dict[str, Any] | None, old_rss: list[dict[str, Any]]
                 ) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """The newest copies of these ReplicaSets after writes made in this pass."""
        fresh = run.rss
        new_out = fresh.get(rsc.uid_of(new_rs), new_rs) if new_rs is not None else None
        return new_out, [fresh.get(rsc.uid_of(rs), rs) for rs in old_rss]

    async def cleanup(self, run: _Pass, old_rss: list[dict[str, Any]]) -> None:
        """Delete the oldest revisions beyond spec.revisionHistoryLimit (only empty, settled ones)."""
        limit = rsc.spec_of(run.d).get("revisionHistoryLimit")
        if limit is None or int(limit) == MAX_INT32:
            return
        alive = [rs for rs in old_rss if not rsc.is_deleting(rs)]
        diff = len(alive) - int(limit)
        if diff <= 0:
            return
        alive.sort(key=lambda rs: (revision(rs), *rsc.by_creation(rs)))
        for rs in alive[:diff]:
            if (status_int(rs, "replicas") != 0 or rs_replicas(rs) != 0
                    or int(rsc.meta(rs).get("generation") or 0) > status_int(rs, "observedGeneration")
                    or rsc.is_deleting(rs)):
                continue
            logger.info("deleting_old_replicaset", deployment=rsc.key_of(run.d), replicaset=rsc.name_of(rs))
            with contextlib.suppress(errors.NotFound):
                await self.client.delete(REPLICASETS, rsc.name_of(rs), namespace=rsc.namespace_of(rs))

    # ------------------------------------------------------------------ status

    def calculate_status(self, d: Mapping[str, Any], all_rss: Sequence[Mapping[str, Any] | None],
                         new_rs: Mapping[str, Any] | None) -> dict[str, Any]:
        available = total_status(all_rss, "availableReplicas")
        total = total_spec_replicas(all_rss)
        status: dict[str, Any] = {
            "observedGeneration": int(rsc.meta(d).get("generation") or 0),
            "replicas": total_status(all_rss, "replicas"),
            "updatedReplicas": total_status([new_rs], "replicas"),
            "readyReplicas": total_status(all_rss, "readyReplicas"),
            "availableReplicas": available,
            "unavailableReplicas": max(total - available, 0),
            "collisionCount": rsc.status_of(d).get("collisionCount"),
            "conditions": rsc.conditions_of(rsc.status_of(d)),
        }
        now = self.clock.now()
        if available >= replicas_of(d) - max_unavailable(d):
            set_condition(status, new_condition("Available", "True", MIN_AVAILABLE,
                                                "Deployment has minimum availability.", now))
        else:
            set_condition(status, new_condition("Available", "False", MIN_UNAVAILABLE,
                                                "Deployment does not have minimum availability.", now))
        return status

    async def sync_deployment_status(self, run: _Pass, all_rss: Sequence[Mapping[str, Any] | None],
                                     new_rs: Mapping[str, Any] | None) -> None:
        status = self.calculate_status(run.d, all_rss, new_rs)
        if normalized_status(status) != normalized_status(rsc.status_of(run.d)):
            await self.write_status(run, status)

    async def sync_rollout_status(self, run: _Pass, all_rss: Sequence[Mapping[str, Any] | None],
                                  new_rs: Mapping[str, Any] | None) -> Result | None:
        """Status plus the Progressing condition and ReplicaFailure (upstream `syncRolloutStatus`);
        asks to be requeued for the progress deadline when nothing changed."""
        d = run.d
        now = self.clock.now()
        status = self.calculate_status(d, all_rss, new_rs)
        if not has_progress_deadline(d):
            remove_condition(status, "Progressing")
        current = rsc.get_condition(rsc.conditions_of(rsc.status_of(d)), "Progressing")
        complete_already = (int(status.get("replicas") or 0) == int(status.get("updatedReplicas") or 0)
                            and current is not None and current.get("reason") == NEW_RS_AVAILABLE)
        if has_progress_deadline(d) and not complete_already:
            if deployment_complete(d, status):
                msg = (f'ReplicaSet "{rsc.name_of(new_rs)}" has successfully progressed.' if new_rs is not None
                       else f'Deployment "{rsc.name_of(d)}" has successfully progressed.')
                set_condition(status, new_condition("Progressing", "True", NEW_RS_AVAILABLE, msg, now))
            elif deployment_progressing(d, status):
                msg = (f'ReplicaSet "{rsc.name_of(new_rs)}" is progressing.' if new_rs is not None
                       else f'Deployment "{rsc.name_of(d)}" is progressing.')
                cond = new_condition("Progressing", "True", REPLICASET_UPDATED, msg, now)
                existing = rsc.get_condition(rsc.conditions_of(status), "Progressing")
                if existing is not None:
                    if existing.get("status") == "True":
                        cond["lastTransitionTime"] = existing.get("lastTransitionTime")
                    remove_condition(status, "Progressing")
                set_condition(status, cond)
            elif deployment_timed_out(d, status, now):
                msg = (f'ReplicaSet "{rsc.name_of(new_rs)}" has timed out progressing.' if new_rs is not None
                       else f'Deployment "{rsc.name_of(d)}" has timed out progressing.')
                set_condition(status, new_condition("Progressing", "False", TIMED_OUT, msg, now))
        failures = self.replica_failures(all_rss, new_rs)
        if failures:
            set_condition(status, failures[0])
        else:
            remove_condition(status, "ReplicaFailure")
        if normalized_status(status) == normalized_status(rsc.status_of(d)):
            return self.requeue_stuck(d, status, now)
        await self.write_status(run, status)
        return None

    @staticmethod
    def replica_failures(all_rss: Sequence[Mapping[str, Any] | None], new_rs: Mapping[str, Any] | None
                         ) -> list[dict[str, Any]]:
        """ReplicaFailure conditions of the new ReplicaSet, else of any ReplicaSet, as
        Deployment conditions."""

        def of(rs: Mapping[str, Any]) -> list[dict[str, Any]]:
            return [{"type": c.get("type"), "status": c.get("status"),
                     "lastUpdateTime": c.get("lastTransitionTime"),
                     "lastTransitionTime": c.get("lastTransitionTime"),
                     "reason": c.get("reason"), "message": c.get("message")}
                    for c in rsc.conditions_of(rsc.status_of(rs)) if c.get("type") == "ReplicaFailure"]

        if new_rs is not None and (found := of(new_rs)):
            return found
        return [c for rs in all_rss if rs is not None for c in of(rs)]

    @staticmethod
    def requeue_stuck(d: Mapping[str, Any], status: Mapping[str, Any], now: float) -> Result | None:
        """Look again when the progress deadline passes (upstream `requeueStuckDeployment`)."""
        current = rsc.get_condition(rsc.conditions_of(rsc.status_of(d)), "Progressing")
        if not has_progress_deadline(d) or current is None:
            return None
        if deployment_complete(d, status) or current.get("reason") == TIMED_OUT:
            return None
        deadline = time_of(current.get("lastUpdateTime")) + int(rsc.spec_of(d)["progressDeadlineSeconds"])
        return Result(requeue_after=max(deadline - now, 0.0) + DEADLINE_SLACK)

    # ------------------------------------------------------------------ strategies

    async def rollout_rolling(self, run: _Pass) -> Result | None:
        new_rs, old_rss = await self.all_replicasets(run, create=True)
        all_rss: list[dict[str, Any] | None] = [*old_rss, new_rs]
        if new_rs is not None and await self.reconcile_new_replicaset(run, all_rss, new_rs):
            new_rs, old_rss = self._refresh(run, new_rs, old_rss)
            return await self.sync_rollout_status(run, [*old_rss, new_rs], new_rs)
        new_rs, old_rss = self._refresh(run, new_rs, old_rss)
        if new_rs is not None and await self.reconcile_old_replicasets(run, [*old_rss, new_rs], active(old_rss),
                                                                      new_rs):
            new_rs, old_rss = self._refresh(run, new_rs, old_rss)
            return await self.sync_rollout_status(run, [*old_rss, new_rs], new_rs)
        new_rs, old_rss = self._refresh(run, new_rs, old_rss)
        if deployment_complete(run.d, rsc.status_of(run.d)):
            await self.cleanup(run, old_rss)
        return await self.sync_rollout_status(run, [*old_rss, new_rs], new_rs)

    async def reconcile_new_replicaset(self, run: _Pass, all_rss: Sequence[Mapping[str, Any] | None],
                                       new_rs: dict[str, Any]) -> bool:
        replicas = replicas_of(run.d)
        if rs_replicas(new_rs) == replicas:
            return False
        if rs_replicas(new_rs) > replicas:
            scaled, _ = await self.scale_and_record(run, new_rs, replicas)
            return scaled
        target = new_rs_new_replicas(run.d, [rs for rs in all_rss if rs is not None], new_rs)
        scaled, _ = await self.scale_and_record(run, new_rs, target)
        return scaled

    async def reconcile_old_replicasets(self, run: _Pass, all_rss: Sequence[Mapping[str, Any] | None],
                                        old_rss: list[dict[str, Any]], new_rs: dict[str, Any]) -> bool:
        old_count = total_spec_replicas(old_rss)
        if old_count == 0:
            return False
        all_count = total_spec_replicas(all_rss)
        min_available = replicas_of(run.d) - max_unavailable(run.d)
        new_unavailable = rs_replicas(new_rs) - status_int(new_rs, "availableReplicas")
        max_scaled_down = all_count - min_available - new_unavailable
        if max_scaled_down <= 0:
            return False
        old_rss, cleaned = await self.cleanup_unhealthy_replicas(run, old_rss, max_scaled_down)
        scaled_down = await self.scale_down_old_for_rolling(run, [*old_rss, new_rs], old_rss)
        return cleaned + scaled_down > 0

    async def cleanup_unhealthy_replicas(self, run: _Pass, old_rss: list[dict[str, Any]], max_cleanup: int
                                         ) -> tuple[list[dict[str, Any]], int]:
        """Scale old ReplicaSets down by their unavailable replicas first (oldest first)."""
        old_rss = sorted(old_rss, key=rsc.by_creation)
        total = 0
        for i, rs in enumerate(old_rss):
            if total >= max_cleanup:
                break
            replicas = rs_replicas(rs)
            available = status_int(rs, "availableReplicas")
            if replicas == 0 or replicas == available:
                continue
            count = min(max_cleanup - total, replicas - available)
            _, old_rss[i] = await self.scale_and_record(run, rs, replicas - count)
            total += count
        return old_rss, total

    async def scale_down_old_for_rolling(self, run: _Pass, all_rss: Sequence[Mapping[str, Any] | None],
                                         old_rss: list[dict[str, Any]]) -> int:
        min_available = replicas_of(run.d) - max_unavailable(run.d)
        available = total_status(all_rss, "availableReplicas")
        if available <= min_available:
            return 0
        budget = available - min_available
        total = 0
        for rs in sorted(old_rss, key=rsc.by_creation):
            if total >= budget:
                break
            if rs_replicas(rs) == 0:
                continue
            count = min(rs_replicas(rs), budget - total)
            await self.scale_and_record(run, rs, rs_replicas(rs) - count)
            total += count
        return total

    async def rollout_recreate(self, run: _Pass) -> Result | None:
        new_rs, old_rss = await self.all_replicasets(run, create=False)
        scaled_down = False
        for rs in active(old_rss):
            scaled, _ = await self.scale_and_record(run, rs, 0)
            scaled_down = scaled_down or scaled
        new_rs, old_rss = self._refresh(run, new_rs, old_rss)
        if scaled_down:
            return await self.sync_rollout_status(run, [*old_rss, new_rs], new_rs)
        if self.old_pods_running(run, new_rs, old_rss):
            return await self.sync_rollout_status(run, [*old_rss, new_rs], new_rs)
        if new_rs is None:
            new_rs, old_rss = await self.all_replicasets(run, create=True)
        if new_rs is not None:
            await self.scale_and_record(run, new_rs, replicas_of(run.d))
        new_rs, old_rss = self._refresh(run, new_rs, old_rss)
        if deployment_complete(run.d, rsc.status_of(run.d)):
            await self.cleanup(run, old_rss)
        return await self.sync_rollout_status(run, [*old_rss, new_rs], new_rs)

    def old_pods_running(self, run: _Pass, new_rs: Mapping[str, Any] | None, old_rss: Sequence[Mapping[str, Any]]
                         ) -> bool:
        if total_status(old_rss, "replicas") > 0:
            return True
        new_uid = rsc.uid_of(new_rs) if new_rs is not None else None
        for uid, pods in self.pod_map(run.d, run.rs_list()).items():
            if uid == new_uid:
                continue
            for pod in pods:
                if rsc.status_of(pod).get("phase") not in ("Failed", "Succeeded"):
                    return True
        return False


def new(ctx: managers.ControllerContext, *, workers: int = 5) -> managers.Controller:
    controller = DeploymentController(client=ctx.client, informer_factory=ctx.informers,
                                      recorder=ctx.recorder(COMPONENT), clock=ctx.clock)
    return managers.Controller(name=NAME, reconciler=controller, watches=controller.watches(), workers=workers)
