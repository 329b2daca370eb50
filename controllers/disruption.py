"""The disruption controller: keeps each PodDisruptionBudget's status current, as
kube-controller-manager's `disruption` controller (`pkg/controller/disruption`).

For a budget it reads the pods of its namespace its selector matches and, when the budget counts in
percentages or by `maxUnavailable`, the scale of their controllers: a ReplicaSet's (its Deployment's
when one controls it), a StatefulSet's or ReplicationController's from the informers, any other
controller's through its `scale` subresource (custom resources whose definition declares one
included: their kind is resolved through discovery, `client.mapper`). From them it writes `expectedPods`, `desiredHealthy`,
`currentHealthy` (ready pods neither terminating nor just evicted), `disruptionsAllowed`,
`observedGeneration`, the `DisruptionAllowed` condition, and `disruptedPods` without the pods whose
eviction it has seen carried out or that stayed more than two minutes (it looks again then).
When the expected count cannot be computed (a pod's controller has no scale), the budget allows no
disruption (`SyncFailed`), as upstream's fail-safe. The arithmetic is `cp.disruption`'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import structlog

from controllers.runtime import cache as caches
from controllers.runtime import client as clients
from controllers.runtime import informer as informers
from controllers.runtime import manager as managers
from controllers.runtime import reconcile
from cp import clock as clocks
from cp import disruption, errors
from cp import resources as res

NAME = "disruption"
COMPONENT = "controllermanager"  # upstream's recorder component for this controller

PDBS = clients.resolve("poddisruptionbudgets.policy")
PODS = clients.resolve("pods")
REPLICA_SETS = clients.resolve("replicasets.apps")
DEPLOYMENTS = clients.resolve("deployments.apps")
STATEFUL_SETS = clients.resolve("statefulsets.apps")
REPLICATION_CONTROLLERS = clients.resolve("replicationcontrollers")
OWNERS = (REPLICA_SETS, DEPLOYMENTS, STATEFUL_SETS, REPLICATION_CONTROLLERS)

logger = structlog.get_logger("cplane.controllers.disruption")


def _replicas(obj: Mapping[str, Any]) -> int:
    spec = obj.get("spec")
    value = spec.get("replicas") if isinstance(spec, Mapping) else None
    return int(value) if isinstance(value, int) else 1  # apps' default


class DisruptionController:
    def __init__(self, *, client: clients.Client, informer_factory: informers.InformerFactory,
                 clock: clocks.Clock, recorder: managers.EventRecorder | None = None) -> None:
        self.client = client
        self.informers = informer_factory
        self.clock = clock
        self.recorder = recorder

    def watches(self) -> list[managers.Watch]:
        return [managers.Watch(kind=PDBS),
                managers.Watch(kind=PODS, map=self._pod_changed),
                *(managers.Watch(kind=k, map=self._namespace_budgets) for k in OWNERS)]

    # ------------------------------------------------------------------ what to look at again

    def _budgets_in(self, namespace: str) -> list[dict[str, Any]]:
        return self.informers.cache(PDBS).list(namespace=namespace) if namespace else []

    def _pod_changed(self, change: managers.Change) -> Iterable[reconcile.Request]:
        """The budgets selecting the pod now or before the change; the pod itself when it carries a
        DisruptionTarget condition that may go stale (an eviction whose deletion did not follow)."""
        ns = str(caches.meta(change.obj).get("namespace") or "")
        out: list[reconcile.Request] = []
        if change.type != "delete" and \
                disruption.stale_disruption_wait(change.obj, now=self.clock.now()) is not None:
            out.append(reconcile.Request(namespace=ns, name=str(caches.meta(change.obj).get("name") or ""),
                                         resource=PODS.group_resource))
        for pdb in self._budgets_in(ns):
            try:
                selected = disruption.pods_selected(pdb, [p for p in (change.obj, change.old) if p is not None])
            except errors.StatusError:
                selected = []
            if selected:
                out.append(reconcile.Request(namespace=ns, name=str(caches.meta(pdb).get("name") or "")))
        return out

    def _namespace_budgets(self, change: managers.Change) -> Iterable[reconcile.Request]:
        """A controller scaled: the budgets of its namespace (their expected counts may follow)."""
        ns = str(caches.meta(change.obj).get("namespace") or "")
        return [reconcile.Request(namespace=ns, name=str(caches.meta(p).get("name") or ""))
                for p in self._budgets_in(ns)]

    # ------------------------------------------------------------------ scales

    def _owned(self, kind: res.ResourceKind, namespace: str, ref: Mapping[str, Any]) -> dict[str, Any] | None:
        obj = self.informers.cache(kind).get(namespace, str(ref.get("name") or ""))
        if obj is None or caches.meta(obj).get("uid") != ref.get("uid"):
            return None
        return obj

    async def _scale_of(self, namespace: str, ref: Mapping[str, Any]) -> tuple[str, int] | None:
        """What scales the controller `ref` names, as upstream's finders in their order: (uid, replicas)."""
        group = str(ref.get("apiVersion") or "").rpartition("/")[0]
        kind = str(ref.get("kind") or "")
        if (group, kind) == ("apps", "ReplicaSet"):
            rs = self._owned(REPLICA_SETS, namespace, ref)
            if rs is None:
                return None
            owner = disruption.controller_ref(rs)
            if owner is None or owner.get("kind") != "Deployment":
                return str(ref.get("uid")), _replicas(rs)
            deployment = self._owned(DEPLOYMENTS, namespace, owner)
            return (str(owner.get("uid")), _replicas(deployment)) if deployment is not None else None
        for known in (REPLICATION_CONTROLLERS, STATEFUL_SETS):
            if (group, kind) == (known.group, known.kind):
                obj = self._owned(known, namespace, ref)
                return (str(ref.get("uid")), _replicas(obj)) if obj is not None else None
        # Any other controller through its scale subresource, its kind resolved through discovery (a
        # custom resource's too), as upstream's `getScaleController` through the RESTMapper.
        other = await self.client.mapper.kind_for(group, kind)
        if other is None or other.subresource("scale") is None:
            return None
        try:
            scale = await self.client.get_scale(other, str(ref.get("name") or ""), namespace=namespace)
        except errors.NotFound:
            return None
        if caches.meta(scale).get("uid") != ref.get("uid"):
            return None
        spec = scale.get("spec") or {}
        return str(ref.get("uid")), int(spec.get("replicas") or 0)

    async def _scales(self, namespace: str, pods: Sequence[Mapping[str, Any]]) -> dict[str, tuple[str, int]]:
        out: dict[str, tuple[str, int]] = {}
        for pod in pods:
            ref = disruption.controller_ref(pod)
            if ref is None or str(ref.get("uid")) in out:
                continue
            found = await self._scale_of(namespace, ref)
            if found is not None:
                out[str(ref.get("uid"))] = found
        return out

    # ------------------------------------------------------------------ reconcile

    async def _fail(self, pdb: Mapping[str, Any], message: str, *, now: float) -> reconcile.Result | None:
        await self._write(pdb, disruption.failed_status(pdb, message=message, now=now))
        return None

    async def _write(self, pdb: Mapping[str, Any], status: dict[str, Any]) -> None:
        if pdb.get("status") == status:
            return
        updated = caches.deep_copy(pdb)
        updated["status"] = status
        try:
            await self.client.update_status(PDBS, updated)
        except errors.NotFound:
            return
        meta = caches.meta(pdb)
        logger.info("budget_status_updated", namespace=meta.get("namespace"), name=meta.get("name"),
                    disruptions_allowed=status.get("disruptionsAllowed"),
                    current_healthy=status.get("currentHealthy"), desired_healthy=status.get("desiredHealthy"),
                    expected_pods=status.get("expectedPods"))

    async def _stale_disruption(self, request: reconcile.Request) -> reconcile.Result | None:
        """Reset a pod's DisruptionTarget condition two minutes after an eviction that did not delete
        it (upstream's syncStalePodDisruption)."""
        pod = self.informers.cache(PODS).get(request.namespace, request.name)
        if pod is None:
            return None
        now = self.clock.now()
        wait = disruption.stale_disruption_wait(pod, now=now)
        if wait is None:
            return None
        if wait > 0:
            return reconcile.Result(requeue_after=wait)
        try:
            await self.client.update_status(PODS, disruption.reset_disruption_target(pod, now=now))
        except errors.NotFound:
            return None
        logger.info("stale_disruption_target_reset", namespace=request.namespace, name=request.name)
        return None

    async def reconcile(self, request: reconcile.Request) -> reconcile.Result | None:
        if request.resource == PODS.group_resource:
            return await self._stale_disruption(request)
        pdb = self.informers.cache(PDBS).get(request.namespace, request.name)
        if pdb is None or caches.meta(pdb).get("deletionTimestamp"):
            return None
        now = self.clock.now()
        try:
            pods = disruption.pods_selected(pdb, self.informers.cache(PODS).list(namespace=request.namespace))
        except errors.StatusError as exc:
            return await self._fail(pdb, exc.message, now=now)
        if not pods and self.recorder is not None:
            await self.recorder.normal(pdb, "NoPods", "No matching pods found")
        try:
            expected, desired, unmanaged = disruption.expected_count(
                pdb, pods, await self._scales(request.namespace, pods))
        except ValueError as exc:
            if self.recorder is not None:
                await self.recorder.warning(pdb, "CalculateExpectedPodCountFailed",
                                            f"Failed to calculate the number of expected pods: {exc}")
            return await self._fail(pdb, str(exc), now=now)
        if unmanaged:
            logger.info("unmanaged_pods", namespace=request.namespace, name=request.name, pods=unmanaged)
        disrupted, recheck = disruption.disrupted_pods(pdb, pods, now=now)
        healthy = disruption.count_healthy(pods, disrupted)
        status = disruption.compute_status(pdb, current_healthy=healthy, desired_healthy=desired,
                                           expected=expected, disrupted=disrupted, now=now)
        await self._write(pdb, status)
        if recheck is not None:
            return reconcile.Result(requeue_after=max(recheck - now, 0.001))
        return None


def new(ctx: managers.ControllerContext, *, workers: int = 2) -> managers.Controller:
    dc = DisruptionController(client=ctx.client, informer_factory=ctx.informers, clock=ctx.clock,
                              recorder=ctx.recorder(COMPONENT))
    return managers.Controller(name=NAME, reconciler=dc, watches=dc.watches(), workers=workers)
