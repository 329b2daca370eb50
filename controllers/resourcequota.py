"""The resource quota controller: keeps each ResourceQuota's `status.hard` (its `spec.hard`) and
`status.used` (what the namespace uses of it) current, as kube-controller-manager's
`resourcequota` controller does (`pkg/controller/resourcequota`).

Admission (`api.admission.resourcequota`) charges writes as they happen; this controller measures
usage from scratch (`cp.quota.calculate_usage`, the same evaluators) when a quota is created or its
spec changes, when an object a quota counts goes away or stops counting (a pod that finished, a
service that is no longer a NodePort or LoadBalancer, a claim whose allocated storage changed), and
every `resync` seconds (upstream's `--resource-quota-sync-period`, 5 minutes), which also gives
back charges for writes that failed after admission. It informs on every namespaced kind a quota
can count (`count/<resource>.<group>`), and on DeviceClasses for the DRA extended resources.

A custom resource (a CustomResourceDefinition's) is informed on once a quota counts it: a quota
naming `count/widgets.example.com` resolves the resource through discovery (`client.mapper`, read
again only when the name is unknown, at most once a second) and the controller starts its informer
and waits for it before measuring, as upstream's quota monitors do for the resources discovery lists.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import structlog

from controllers.runtime import cache as caches
from controllers.runtime import client as clients
from controllers.runtime import informer as informers
from controllers.runtime import manager as managers
from controllers.runtime import reconcile
from cp import clock as clocks
from cp import errors, quota
from cp import resourcelists as rl
from cp import resources as res

NAME = "resourcequota"
COMPONENT = "resourcequota-controller"
RESYNC_SECONDS = 300.0
MONITOR_SYNC_TIMEOUT = 10.0  # seconds a reconcile waits for a newly counted resource's informer

RESOURCE_QUOTAS = clients.resolve("resourcequotas")
DEVICE_CLASSES = clients.resolve("deviceclasses.resource.k8s.io")

logger = structlog.get_logger("cplane.controllers.resourcequota")


def countable_kinds() -> list[res.ResourceKind]:
    """Namespaced kinds stored in the log that can be listed and watched, and that quota counts."""
    return [k for k in res.KINDS if k.namespaced and k.stored and {"list", "watch"} <= set(k.verbs)
            and not quota.is_ignored(k.group, k.plural)]


def _hard(obj: Mapping[str, Any], part: str) -> rl.ResourceList:
    section = obj.get(part)
    return rl.parse(section.get("hard")) if isinstance(section, Mapping) else {}


def needs_sync(rq: Mapping[str, Any]) -> bool:
    """A quota whose status does not reflect its spec yet: `status.hard` differs from `spec.hard`,
    or a constrained name has no usage."""
    status = rq.get("status") if isinstance(rq.get("status"), Mapping) else {}
    assert isinstance(status, Mapping)
    if "hard" not in status or not rl.equals(_hard(rq, "spec"), _hard(rq, "status")):
        return True
    used = status.get("used")
    return not isinstance(used, Mapping) or any(name not in used for name in _hard(rq, "status"))


def stops_counting(kind: res.ResourceKind, old: Mapping[str, Any], new: Mapping[str, Any], *, now: float) -> bool:
    """An update after which the object counts less or in other scopes (upstream's replenishment
    update filter): a pod that is no longer charged, changed its compute usage or its Terminating
    scope; a service whose quota type changed; a claim whose allocated storage changed."""
    gr = (kind.group, kind.plural)
    if gr == ("", "pods"):
        ev = quota.evaluator_for("", "pods")
        if quota.pod_is_charged(old, now=now) and not quota.pod_is_charged(new, now=now):
            return True
        if ev.matches_scope(quota.Scope(scope_name="Terminating"), old) != \
                ev.matches_scope(quota.Scope(scope_name="Terminating"), new):
            return True
        return not rl.equals(quota.pod_usage(old, now=now), quota.pod_usage(new, now=now))
    if gr == ("", "services"):
        return quota.quota_service_type(old) != quota.quota_service_type(new)
    if gr == ("", "persistentvolumeclaims"):
        def allocated(pvc: Mapping[str, Any]) -> Any:
            status = pvc.get("status")
            return ((status.get("allocatedResources") or {}) if isinstance(status, Mapping) else {}).get("storage")
        return bool(allocated(old) != allocated(new))
    return False


class ResourceQuotaController:
    def __init__(self, *, client: clients.Client, informer_factory: informers.InformerFactory,
                 clock: clocks.Clock, resync: float = RESYNC_SECONDS,
                 kinds: Sequence[res.ResourceKind] | None = None) -> None:
        self.client = client
        self.informers = informer_factory
        self.clock = clock
        self.resync = resync
        self.kinds = list(kinds) if kinds is not None else countable_kinds()
        self._by_gr = {(k.group, k.plural): k for k in self.kinds}
        self.controller: managers.Controller | None = None  # set by `new`: counted custom resources add watches

    def watches(self) -> list[managers.Watch]:
        out = [managers.Watch(kind=RESOURCE_QUOTAS, map=self._quota_changed),
               managers.Watch(kind=DEVICE_CLASSES, map=lambda _change: [])]
        out.extend(managers.Watch(kind=k, map=self._content_changed) for k in self.kinds
                   if k.group_resource != RESOURCE_QUOTAS.group_resource)
        return out

    # ------------------------------------------------------------------ what to look at again

    def _quota_changed(self, change: managers.Change) -> Iterable[reconcile.Request]:
        """A new quota, or one whose spec is not (yet) in its status; its own usage writes are not.
        A deleted quota is counted by the others (`count/resourcequotas`)."""
        if change.type == "delete":
            return self._content_changed(change)
        if change.type == "update" and change.old is not None and not needs_sync(change.obj) \
                and change.old.get("spec") == change.obj.get("spec"):
            return []
        return managers.own_request(change)

    def _content_changed(self, change: managers.Change) -> Iterable[reconcile.Request]:
        """Replenishment: quotas of the namespace that count this kind, after a delete or an update
        that makes the object count less."""
        if change.type == "add":
            return []  # admission charged it
        ns = str(caches.meta(change.obj).get("namespace") or "")
        quotas = self.informers.cache(RESOURCE_QUOTAS).list(namespace=ns) if ns else []
        if not quotas:
            return []
        if change.type == "update" and (change.old is None or
                                        not stops_counting(change.kind, change.old, change.obj, now=self.clock.now())):
            return []
        evaluator = quota.evaluator_for(change.kind.group, change.kind.plural, ctx=self._context())
        return [reconcile.Request(namespace=ns, name=str(caches.meta(q).get("name") or ""))
                for q in quotas if evaluator.matching_resources(_hard(q, "status"))]

    # ------------------------------------------------------------------ measuring

    def _context(self) -> quota.UsageContext:
        ctx = quota.UsageContext(now=self.clock.now())
        ctx.class_extended_names, ctx.extended_resource_classes = quota.device_class_context(
            self.informers.cache(DEVICE_CLASSES).list())
        pods = self.informers.cache(clients.resolve("pods"))
        claims = self.informers.cache(clients.resolve("resourceclaims.resource.k8s.io"))
        ctx.pod = lambda ns, name: pods.get(ns, name)
        ctx.owned_claims = lambda ns, uid: [c for c in claims.list(namespace=ns)
                                            if any(r.get("uid") == uid and r.get("controller") is True
                                                   for r in caches.meta(c).get("ownerReferences") or [])]
        return ctx

    def usage(self, rq: Mapping[str, Any]) -> rl.ResourceList:
        """`status.used` as it should be: measured for the names some evaluator can measure, what
        it was for the others, only for names in `spec.hard`."""
        ns = str(caches.meta(rq).get("namespace") or "")
        hard = _hard(rq, "spec")
        status = rq.get("status") if isinstance(rq.get("status"), Mapping) else {}
        assert isinstance(status, Mapping)
        used = rl.parse(status.get("used"))
        ctx = self._context()
        evaluators = quota.evaluators_for(hard, ctx=ctx, countable=lambda g, r: (g, r) in self._by_gr)

        def objects(evaluator: quota.Evaluator) -> list[dict[str, Any]]:
            kind = self._by_gr.get((evaluator.group, evaluator.resource))
            return self.informers.cache(kind).list(namespace=ns) if kind is not None else []

        used.update(quota.calculate_usage(hard=hard, scopes=quota.scopes_of(rq), evaluators=evaluators,
                                          objects=objects, ctx=ctx))
        return rl.mask(used, hard)

    async def _monitor_counted(self, hard: Iterable[str]) -> None:
        """Inform on the custom resources `count/<resource>.<group>` names that no informer covers
        yet (resolved through discovery), and wait until their caches have synced."""
        started: list[informers.Informer] = []
        for name in hard:
            if not name.startswith("count/"):
                continue
            resource, _, group = name[len("count/"):].partition(".")
            if (group, resource) in self._by_gr or quota.is_ignored(group, resource):
                continue
            kind = await self.client.mapper.resource_for(f"{resource}.{group}" if group else resource)
            if kind is None or not kind.namespaced or not {"list", "watch"} <= set(kind.verbs):
                continue
            self.kinds.append(kind)
            self._by_gr[(kind.group, kind.plural)] = kind
            watch = managers.Watch(kind=kind, map=self._content_changed)
            inf = self.controller.add_watch(watch) if self.controller is not None else None
            started.append(inf if inf is not None else self.informers.informer(kind))
            logger.info("quota_monitor_started", resource=kind.group_resource)
        if started:
            try:
                async with asyncio.timeout(MONITOR_SYNC_TIMEOUT):
                    await self.informers.wait_for_sync(started)
            except TimeoutError:
                logger.warning("quota_monitor_sync_timeout", resources=[i.kind.group_resource for i in started])

    async def reconcile(self, request: reconcile.Request) -> reconcile.Result | None:
        rq = self.informers.cache(RESOURCE_QUOTAS).get(request.namespace, request.name)
        if rq is None:
            return None
        await self._monitor_counted(_hard(rq, "spec"))
        used = self.usage(rq)
        hard = _hard(rq, "spec")
        status = rq.get("status") if isinstance(rq.get("status"), Mapping) else {}
        assert isinstance(status, Mapping)
        if needs_sync(rq) or not rl.equals(used, rl.parse(status.get("used"))):
            updated = caches.deep_copy(rq)
            updated["status"] = {"hard": rl.render(hard), "used": rl.render(used)}
            try:
                await self.client.update_status(RESOURCE_QUOTAS, updated)
            except errors.NotFound:
                return None
            logger.info("quota_usage_updated", namespace=request.namespace, name=request.name,
                        used=rl.render(used))
        return reconcile.Result(requeue_after=self.resync)


def new(ctx: managers.ControllerContext, *, workers: int = 2) -> managers.Controller:
    rc = ResourceQuotaController(client=ctx.client, informer_factory=ctx.informers, clock=ctx.clock)
    controller = managers.Controller(name=NAME, reconciler=rc, watches=rc.watches(), workers=workers)
    rc.controller = controller
    return controller
