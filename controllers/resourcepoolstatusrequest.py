"""The ResourcePoolStatusRequest controller: fills in the status of each
`resource.k8s.io/v1alpha3` ResourcePoolStatusRequest once (kube-controller-manager's
`resourcepoolstatusrequest-controller`, `pkg/controller/resourcepoolstatusrequest`, KEP-5677).

It runs only while the DRAResourcePoolStatus gate is on and the server serves the kind
(`--runtime-config resource.k8s.io/v1alpha3=true`): `new(ctx, enabled=False)`, the default, watches
nothing and does nothing (`cp.cli.controllers.gate_overrides` enables it).

- A request without status is computed from the informers' ResourceSlices, ResourceClaims and
  (while DRADeviceTaintRules is on) DeviceTaintRules (`cp.dra.poolstatus`) and written with one
  `PUT .../status`. A request with status is never computed again; slice, claim and rule changes
  enqueue nothing (delete and recreate a request for fresh numbers).
- A pool whose slices are still being published (fewer than its `resourceSliceCount`) makes the
  controller try again with the queue's backoff, at most `MAX_RETRIES` times; then it gives up and
  the request stays without status (as upstream).
- Cleanup: a request with status is deleted `COMPLETED_TTL` (1 h) after its `Complete` or `Failed`
  condition's time, one without status `PENDING_TTL` (24 h) after its creation, with a uid
  precondition. Upstream sweeps every 10 minutes; here each request is requeued for its own
  deadline, on the controller's clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog

from controllers.runtime import client as clients
from controllers.runtime import informer as informers
from controllers.runtime import manager as managers
from controllers.runtime import reconcile
from cp import clock as clocks
from cp import errors
from cp import resources as res
from cp.dra import poolstatus
from cp.objects import meta_of, status_of, uid_of

NAME = "resourcepoolstatusrequest"
COMPONENT = "resourcepoolstatusrequest-controller"
REQUESTS = res.gated_kind("resource.k8s.io", "resourcepoolstatusrequests")
SLICES = clients.resolve("resourceslices.resource.k8s.io")
CLAIMS = clients.resolve("resourceclaims.resource.k8s.io")
RULES = clients.resolve("devicetaintrules.resource.k8s.io")
MAX_RETRIES = 5
COMPLETED_TTL = 3600.0
PENDING_TTL = 24 * 3600.0

logger = structlog.get_logger("cplane.controllers.resourcepoolstatusrequest")


def name_of(obj: Mapping[str, Any]) -> str:
    return str(meta_of(obj).get("name") or "")


class PoolsIncomplete(Exception):
    """A pool's slices are not all published yet: try again later."""


def expires_at(request: Mapping[str, Any]) -> float | None:
    """When the request is deleted: its Complete/Failed condition's time + 1 h once it has status
    (its creation + 1 h when it has no such condition), its creation + 24 h before."""
    created = clocks.time_of(meta_of(request).get("creationTimestamp"))
    if "status" not in request or request.get("status") is None:
        return None if created is None else created + PENDING_TTL
    for cond in status_of(request).get("conditions") or ():
        if isinstance(cond, Mapping) and cond.get("type") in (poolstatus.COMPLETE, poolstatus.FAILED):
            done = clocks.time_of(cond.get("lastTransitionTime"))
            return None if done is None else done + COMPLETED_TTL
    return None if created is None else created + COMPLETED_TTL


class ResourcePoolStatusRequestController:
    def __init__(self, *, client: clients.Client, informer_factory: informers.InformerFactory,
                 clock: clocks.Clock, taint_rules: bool, partition_types: bool = False) -> None:
        self.client = client
        self.partition_types = partition_types
        self.clock = clock
        self.requests = informer_factory.informer(REQUESTS).cache
        self.slices = informer_factory.informer(SLICES).cache
        self.claims = informer_factory.informer(CLAIMS).cache
        self.rules = informer_factory.informer(RULES).cache if taint_rules else None
        self._attempts: dict[str, int] = {}  # uid -> tries that met an incomplete pool

    def watches(self) -> list[managers.Watch]:
        ignore = _ignore
        return [managers.Watch(kind=REQUESTS, map=self.map_request),
                managers.Watch(kind=SLICES, map=ignore), managers.Watch(kind=CLAIMS, map=ignore),
                *([managers.Watch(kind=RULES, map=ignore)] if self.rules is not None else [])]

    @staticmethod
    def map_request(change: managers.Change) -> list[reconcile.Request]:
        if change.type == "delete":
            return []
        return [reconcile.Request(name=name_of(change.obj))]

    async def reconcile(self, request: reconcile.Request) -> reconcile.Result | None:
        cached = self.requests.get("", request.name)
        if cached is None:
            return None
        expiry = expires_at(cached)
        now = self.clock.now()
        if expiry is not None and now >= expiry:
            await self._delete(cached)
            return None
        if cached.get("status") is None:
            await self._process(cached)
            cached = self.requests.get("", request.name) or cached
            expiry = expires_at(cached) if cached.get("status") is not None else expiry
        return reconcile.Result(requeue_after=expiry - now) if expiry is not None and expiry > now else None

    async def _process(self, request: Mapping[str, Any]) -> None:
        uid = uid_of(request)
        computed = poolstatus.compute(request, slices=self.slices.list(), claims=self.claims.list(),
                                      taint_rules=self.rules.list() if self.rules is not None else (),
                                      partition_types=self.partition_types,
                                      now=clocks.rfc3339(self.clock.now()))
        if computed.incomplete:
            tries = self._attempts.get(uid, 0) + 1
            if tries > MAX_RETRIES:
                self._attempts.pop(uid, None)
                raise reconcile.TerminalError(f"pools of {name_of(request)} still incomplete after "
                                              f"{MAX_RETRIES} retries")
            self._attempts[uid] = tries
            raise PoolsIncomplete(f"incomplete pools for {name_of(request)}, requeueing")
        self._attempts.pop(uid, None)
        written = {**request, "status": computed.status}
        try:
            await self.client.update_status(REQUESTS, written)
        except errors.NotFound:
            return
        except errors.Invalid as exc:
            # Retrying cannot fix it (a pool at generation 0: the API requires a generation, and a
            # zero int64 is unset): upstream drops the request after its retries, so do we, at once.
            raise reconcile.TerminalError(f"status of {name_of(request)} refused: {exc}") from exc
        logger.info("pool_status_written", request=name_of(request), pools=computed.status.get("poolCount"))

    async def _delete(self, request: Mapping[str, Any]) -> None:
        try:
            await self.client.delete(REQUESTS, name_of(request), preconditions={"uid": uid_of(request)})
        except (errors.NotFound, errors.Conflict):
            return  # gone, or another request by that name now
        self._attempts.pop(uid_of(request), None)
        logger.info("request_expired", request=name_of(request))


def _ignore(_change: managers.Change) -> list[reconcile.Request]:
    return []  # the caches are read when a request is processed; their changes trigger nothing


class _Idle:
    async def reconcile(self, request: reconcile.Request) -> reconcile.Result | None:
        return None


def new(ctx: managers.ControllerContext, *, enabled: bool = False, taint_rules: bool = True,
        partition_types: bool = False, workers: int = 1) -> managers.Controller:
    """The controller; idle unless `enabled` (the gate is on and the kind served). `taint_rules`:
    whether DeviceTaintRules count (the DRADeviceTaintRules gate); `partition_types`: whether pools
    get partition summaries (DRAPartitionableDevicesType)."""
    if not enabled:
        return managers.Controller(name=NAME, reconciler=_Idle(), watches=[], workers=workers)
    controller = ResourcePoolStatusRequestController(client=ctx.client, informer_factory=ctx.informers,
                                                     clock=ctx.clock, taint_rules=taint_rules,
                                                     partition_types=partition_types)
    return managers.Controller(name=NAME, reconciler=controller, watches=controller.watches(), workers=workers)
