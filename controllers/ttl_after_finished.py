"""The TTL-after-finished controller: deletes a finished Job `spec.ttlSecondsAfterFinished` seconds
after it finished (kube-controller-manager's `ttl-after-finished-controller`,
`pkg/controller/ttlafterfinished`).

Per Job key: a Job that is not being deleted, has a TTL and a `Complete` or `Failed` condition that
is True expires at that condition's `lastTransitionTime` + TTL, on the injected clock. Before then
the key is requeued for the moment it expires. At expiry the Job is read live (the cache may lag a
TTL change or a restart of the Job) and checked again; then it is deleted with
`propagationPolicy: Foreground` and a uid precondition, so its pods go first and a Job recreated
under the same name is never hit. A Job already gone or replaced is not an error. Writes no Events
(as upstream).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog

from controllers.runtime import cache as caches
from controllers.runtime import client as clients
from controllers.runtime import informer as informers
from controllers.runtime import manager as managers
from controllers.runtime import reconcile
from cp import clock as clocks
from cp import errors
from cp.objects import meta_of, spec_of, status_of, uid_of

NAME = "ttl-after-finished"
COMPONENT = "ttl-after-finished-controller"
JOBS = clients.resolve("jobs.batch")

logger = structlog.get_logger("cplane.controllers.ttl_after_finished")


def finish_time(job: Mapping[str, Any]) -> float | None:
    """When the Job finished: the lastTransitionTime of its True Complete or Failed condition
    (upstream `jobFinishTime`); None when it has not finished (or the time is unreadable)."""
    for cond in status_of(job).get("conditions") or []:
        if cond.get("type") in ("Complete", "Failed") and cond.get("status") == "True":
            stamp = cond.get("lastTransitionTime")
            if not stamp:
                return None
            try:
                return clocks.parse_time(str(stamp))
            except ValueError:
                return None
    return None


def expires_at(job: Mapping[str, Any]) -> float | None:
    """finish time + ttlSecondsAfterFinished, or None when the Job is not to be cleaned up (no TTL,
    not finished, or already being deleted) — upstream `needsCleanup` + `getFinishAndExpireTime`."""
    ttl = spec_of(job).get("ttlSecondsAfterFinished")
    if ttl is None or meta_of(job).get("deletionTimestamp"):
        return None
    finished = finish_time(job)
    return None if finished is None else finished + int(ttl)


class TTLAfterFinishedController:
    def __init__(self, *, client: clients.Client, informer_factory: informers.InformerFactory,
                 clock: clocks.Clock) -> None:
        self.client = client
        self.clock = clock
        self.jobs = informer_factory.informer(JOBS).cache

    def watches(self) -> list[managers.Watch]:
        return [managers.Watch(kind=JOBS, map=self.map_job)]

    def map_job(self, change: managers.Change) -> list[reconcile.Request]:
        if change.type == "delete" or expires_at(change.obj) is None:
            return []
        ns, name = caches.key_of(change.obj)
        return [reconcile.Request(namespace=ns, name=name)]

    async def reconcile(self, request: reconcile.Request) -> reconcile.Result | None:
        cached = self.jobs.get(request.namespace, request.name)
        if cached is None:
            return None
        expiry = expires_at(cached)
        if expiry is None:
            return None
        now = self.clock.now()
        if now < expiry:
            return reconcile.Result(requeue_after=expiry - now)
        try:
            fresh = await self.client.get(JOBS, request.name, namespace=request.namespace)
        except errors.NotFound:
            return None
        expiry = expires_at(fresh)
        if expiry is None:
            return None
        if now < expiry:
            return reconcile.Result(requeue_after=expiry - now)
        try:
            await self.client.delete(JOBS, request.name, namespace=request.namespace, propagation_policy="Foreground",
                                     preconditions={"uid": uid_of(fresh)})
        except (errors.NotFound, errors.Conflict):
            return None  # gone, or another Job by that name now
        logger.info("job_expired", job=f"{request.namespace}/{request.name}", expired_at=clocks.rfc3339(expiry))
        return None


def new(ctx: managers.ControllerContext, *, workers: int = 5) -> managers.Controller:
    controller = TTLAfterFinishedController(client=ctx.client, informer_factory=ctx.informers, clock=ctx.clock)
    return managers.Controller(name=NAME, reconciler=controller, watches=controller.watches(), workers=workers)
