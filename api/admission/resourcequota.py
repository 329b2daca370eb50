"""The ResourceQuota admission plugin: charges each create (and each update that changes usage) to
the quotas of its namespace, and refuses what would exceed them (`cp.quota` has the rules).

As upstream's plugin: the charge is written to each affected quota's `status.used` before the
object is written, with the quota's resourceVersion as precondition; on a conflict the quotas that
failed are read again and charged again (three more times, then the conflict is the answer). Dry
runs are checked but charge nothing. Writes in one namespace are charged one at a time (upstream
batches them per namespace in one worker). A charge for a write that then fails is not given back:
the resource quota controller's next pass over the namespace measures usage again, as upstream.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import structlog

from api import admission
from api.admission import listers
from cp import errors, quota
from cp import resourcelists as rl
from cp import resources as res
from storage import log

logger = structlog.get_logger("cplane.api.admission")

RETRIES = 3
CLAIMS = ("resource.k8s.io", "resourceclaims")


class _NamespaceLocks:
    """One lock per namespace while someone holds or waits for it."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    @contextlib.asynccontextmanager
    async def hold(self, namespace: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(namespace, (asyncio.Lock(), 0))
        self._locks[namespace] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[namespace]
            if users <= 1:
                del self._locks[namespace]
            else:
                self._locks[namespace] = (lock, users - 1)


class ResourceQuotaPlugin(admission.BasePlugin):
    name = "ResourceQuota"

    def __init__(self, *, event_log: log.EventLog, writer: Callable[[], Any]) -> None:
        self.event_log = event_log
        self.quotas = listers.Lister(group="", resource="resourcequotas")
        self.device_classes = listers.Lister(group="resource.k8s.io", resource="deviceclasses")
        self.writer = writer  # a new WriteContext of the server itself, for quota status writes
        self._locks = _NamespaceLocks()
        quotas_kind = res.lookup("", "v1", "resourcequotas")
        assert quotas_kind is not None
        self._quota_kind = quotas_kind

    def may_handle(self, *, group: str, plural: str, subresource: str, operation: str) -> bool:
        return operation in (admission.CREATE, admission.UPDATE) and not quota.is_ignored(group, plural)

    def handles(self, attrs: admission.Attributes) -> bool:
        kind = attrs.kind
        if not attrs.namespace or attrs.operation not in (admission.CREATE, admission.UPDATE):
            return False
        if self.quotas.peek(self.event_log, attrs.namespace) == []:
            return False  # known to have no quota: the common case costs nothing more
        return kind.stored and not quota.is_ignored(kind.group, kind.plural)

    async def validate(self, attrs: admission.Attributes, store: admission.Store) -> None:
        obj = attrs.obj
        if obj is None:
            return
        evaluator = quota.evaluator_for(attrs.kind.group, attrs.kind.plural)
        if not evaluator.handles(operation=attrs.operation, subresource=attrs.subresource, obj=obj, old=attrs.old):
            return
        if not await self.quotas.list(store.log, attrs.namespace):
            return
        async with self._locks.hold(attrs.namespace):
            await self._charge(attrs, obj, store)

    async def _charge(self, attrs: admission.Attributes, obj: dict[str, Any], store: admission.Store) -> None:
        pending: set[str] | None = None  # on a retry: the quotas whose status write failed
        last: errors.StatusError | None = None
        for _attempt in range(RETRIES + 1):
            states = [quota.QuotaState.of(q) for q in await self.quotas.list(store.log, attrs.namespace)]
            if pending is not None:
                states = [s for s in states if s.name in pending]
            if not states:
                return
            ctx = await self._context(attrs, obj, store)
            evaluator = quota.evaluator_for(attrs.kind.group, attrs.kind.plural, ctx=ctx)
            try:
                charged = quota.check_request(states, evaluator=evaluator, operation=attrs.operation,
                                              subresource=attrs.subresource, obj=obj, old=attrs.old, ctx=ctx)
            except quota.QuotaRefused as exc:
                raise admission.forbidden(attrs, exc.message) from None
            if attrs.dry_run:
                return
            failed: set[str] = set()
            for before, after in zip(states, charged, strict=True):
                if rl.equals(before.used, after.used):
                    continue
                try:
                    await self._write_used(store, after)
                except (errors.Conflict, errors.NotFound) as exc:
                    failed.add(after.name)
                    last = exc
            if not failed:
                return
            pending = failed
        assert last is not None
        raise last

    async def _write_used(self, store: admission.Store, state: quota.QuotaState) -> None:
        """`status.used` of one quota, if it is still the version that was charged."""
        used = rl.render(state.used)

        def mutate(current: dict[str, Any]) -> dict[str, Any]:
            current.setdefault("status", {})["used"] = used
            current.setdefault("metadata", {})["resourceVersion"] = state.resource_version
            return current

        await store.guaranteed_update(self._quota_kind, state.namespace, state.name, mutate, self.writer(),
                                      subresource="status")

    async def _context(self, attrs: admission.Attributes, obj: Mapping[str, Any],
                       store: admission.Store) -> quota.UsageContext:
        ctx = quota.UsageContext(now=store.clock.now())
        if (attrs.kind.group, attrs.kind.plural) != CLAIMS:
            return ctx
        ctx.class_extended_names, ctx.extended_resource_classes = quota.device_class_context(
            await self.device_classes.list(store.log))
        pods: dict[tuple[str, str], dict[str, Any]] = {}
        claims: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for claim in (obj, attrs.old):
            ref = _pod_owner(claim)
            if ref is None:
                continue
            ev = await store.log.get(group="", resource="pods", namespace=attrs.namespace, name=ref[0])
            if ev is not None:
                pods[(attrs.namespace, ref[0])] = listers.decode(ev.object)
            if (attrs.namespace, ref[1]) not in claims:
                listed = await store.log.list_objects(group=CLAIMS[0], resource=CLAIMS[1], namespace=attrs.namespace)
                owned = [c for c in (listers.decode(e.object) for e in listed.events) if _pod_owner(c) == ref]
                claims[(attrs.namespace, ref[1])] = owned
        ctx.pod = lambda ns, name: pods.get((ns, name))
        ctx.owned_claims = lambda ns, uid: claims.get((ns, uid), [])
        return ctx


def _pod_owner(claim: Mapping[str, Any] | None) -> tuple[str, str] | None:
    """(name, uid) of the pod controlling a special extended-resource claim."""
    if claim is None:
        return None
    meta = claim.get("metadata") or {}
    if (meta.get("annotations") or {}).get(quota.EXTENDED_RESOURCE_CLAIM_ANNOTATION) != "true":
        return None
    for ref in meta.get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller") is True and ref.get("kind") == "Pod":
            return str(ref.get("name") or ""), str(ref.get("uid") or "")
    return None
