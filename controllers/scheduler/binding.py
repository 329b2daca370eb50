"""The binding cycle (upstream's PreBind of the DynamicResources plugin, then the DefaultBinder):
write each claim's finalizer, allocation (with its `allocationTimestamp`) and reservation, create the
extended-resource claim, wait for the binding conditions of the allocated devices (KEP-5007), bind
the pod; and Unreserve when any of it fails."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

import structlog

from controllers.runtime import cache as caches
from controllers.runtime import client as clients
from controllers.runtime import informer as informers
from controllers.runtime import manager as managers
from controllers.scheduler.assume import AssumeCache
from controllers.scheduler.config import (
    BINDING_TIMEOUT,
    CLAIMS,
    COMPONENT,
    CONFLICT_RETRIES,
    DRA_PLUGIN,
    EXTENDED_CLAIM_PLACEHOLDER,
    FINALIZER,
    NODE_ALLOCATABLE_STATUSES,
    PODS,
    PVCS,
    PVS,
)
from controllers.scheduler.nodes import NodeCache
from controllers.scheduler.plan import BindingError, ClaimPlan, Plan, allocation_of, reserved_for
from cp import clock as clocks
from cp import errors
from cp.dra import binding as bindings
from cp.dra import extended as ext
from cp.objects import display_key, meta_of, status_of, uid_of

logger = structlog.get_logger("cplane.controllers.scheduler")

_AFTER = 0.001  # a claim has timed out once its timeout is *past* (isClaimTimeout's Before(now))


class Binder:
    def __init__(self, *, client: clients.Client, pods: informers.Informer, assume: AssumeCache,
                 nodes: NodeCache, clock: clocks.Clock, recorder: managers.EventRecorder | None = None,
                 binding_timeout: float = BINDING_TIMEOUT) -> None:
        self.client = client
        self.pods = pods
        self.assume = assume
        self.node_cache = nodes
        self.clock = clock
        self.recorder = recorder
        self.binding_timeout = binding_timeout
        # Claims whose binding conditions a binding cycle waits for: claim uid -> wake-up events.
        self._waiting: dict[str, list[asyncio.Event]] = {}
        self._log = logger

    def may_wait(self, plan: Plan) -> bool:
        """Whether PreBind may wait for binding conditions (a device of the plan has some)."""
        return any(bindings.allocation_has_binding_conditions(
            cplan.allocation if cplan.allocation is not None else allocation_of(cplan.claim)) for cplan in plan.claims)

    def claim_changed(self, claim: Mapping[str, Any]) -> None:
        """Informer handler: wake the binding cycles waiting for this claim's conditions."""
        for event in self._waiting.get(uid_of(claim), ()):
            event.set()

    async def bind(self, pod: dict[str, Any], plan: Plan) -> None:
        """PreBind (the claims) and Bind; failures raise BindingError with upstream's wording."""
        ns, name = caches.key_of(pod)
        pod_uid = uid_of(pod)
        ref = {"resource": "pods", "name": name, "uid": pod_uid}
        try:
            try:
                await self._pre_bind_volumes(plan)
            except errors.StatusError as exc:
                raise BindingError(f'running PreBind plugin "VolumeBinding": {exc.message}') from None
            try:
                await self._pre_bind(plan, ns, name, ref)
                await self._wait_for_binding_conditions(pod, plan)
            except (errors.StatusError, RuntimeError) as exc:
                message = exc.message if isinstance(exc, errors.StatusError) else str(exc)
                raise BindingError(f'running PreBind plugin "{DRA_PLUGIN}": {message}') from None
            try:
                await self.client.bind(namespace=ns, name=name, node=plan.node, uid=pod_uid)
            except errors.StatusError as exc:
                raise BindingError(f'running Bind plugin "DefaultBinder": {exc.message}') from None
        finally:
            for cplan in plan.claims:
                if self.assume.in_flight.get(cplan.key) == (ns, name):
                    del self.assume.in_flight[cplan.key]

    async def _pre_bind_volumes(self, plan: Plan) -> None:
        """VolumeBinding's PreBind (`BindPodVolumes`): pre-bind each chosen volume to its claim
        (`claimRef`, `pv.kubernetes.io/bound-by-controller`), and annotate each claim to provision
        with the node; the PV controller binds and provisions them."""
        for pv, claim in plan.volume_bindings:
            body = caches.deep_copy(pv)
            cmeta = meta_of(claim)
            body.setdefault("spec", {})["claimRef"] = {
                "kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": cmeta.get("namespace"),
                "name": cmeta.get("name"), "uid": cmeta.get("uid"), "resourceVersion": cmeta.get("resourceVersion")}
            body.setdefault("metadata", {}).setdefault("annotations", {})["pv.kubernetes.io/bound-by-controller"] = "yes"
            await self.client.update(PVS, body, field_manager=COMPONENT)
        for claim in plan.provision_claims:
            body = caches.deep_copy(claim)
            body.setdefault("metadata", {}).setdefault("annotations", {})[
                "volume.kubernetes.io/selected-node"] = plan.node
            await self.client.update(PVCS, body, field_manager=COMPONENT)

    async def _pre_bind(self, plan: Plan, ns: str, name: str, ref: dict[str, str]) -> None:
        for cplan in plan.claims:
            if not cplan.reserve:
                continue
            if cplan.claim is None:  # the extended-resource claim: create it first
                body = caches.deep_copy(plan.extended_claim or {})
                meta = body.setdefault("metadata", {})
                meta["finalizers"] = [FINALIZER]
                for owner in meta.get("ownerReferences") or []:
                    owner["blockOwnerDeletion"] = True
                created = await self.client.create(CLAIMS, body, field_manager=COMPONENT)
                cplan.claim = created
                new_key = uid_of(created)
                self.assume.rekey(cplan.key, new_key)
                cplan.key = new_key
                self.assume.in_flight[new_key] = (ns, name)
            cplan.claim = await self._bind_claim(cplan, cplan.consumer or ref)
            self.assume.in_flight.pop(cplan.key, None)
        if plan.extended_claim is not None:
            created_claim = next(cplan.claim for cplan in plan.claims if cplan.extended and cplan.claim is not None)
            patch = {"status": {"extendedResourceClaimStatus": ext.pod_extended_resource_claim_status(
                str(meta_of(created_claim).get("name")), plan.mappings)}}
            await self.client.patch(PODS, name, patch, namespace=ns, subresource="status", field_manager=COMPONENT)
        if plan.node_allocatable:
            await self._patch_node_allocatable(plan, ns, name)

    async def _patch_node_allocatable(self, plan: Plan, ns: str, name: str) -> None:
        """DRANodeAllocatableResources: what the pod's claims take of the node, in the pod's status
        (the extended-resource claim by the name it got)."""
        assert plan.node_allocatable is not None
        created = next((cplan.claim for cplan in plan.claims if cplan.extended and cplan.claim is not None), None)
        for status in plan.node_allocatable:
            if status.get("resourceClaimName") == EXTENDED_CLAIM_PLACEHOLDER and created is not None:
                status["resourceClaimName"] = str(meta_of(created).get("name"))
        patch = {"status": {NODE_ALLOCATABLE_STATUSES: plan.node_allocatable}}
        await self.client.patch(PODS, name, patch, namespace=ns, subresource="status", field_manager=COMPONENT)
        plan.node_allocatable_written = True

    async def _bind_claim(self, cplan: ClaimPlan, ref: dict[str, str]) -> dict[str, Any]:
        """`bindClaim`: finalizer (plain update) and allocation + reservation (status update), with
        a fresh read and another try on conflict."""
        assert cplan.claim is not None
        # the writes below replace the finalizers, the allocation and reservedFor: copies of the
        # cached claim, its metadata and status are enough (no deep copy)
        claim = dict(cplan.claim)
        claim["metadata"] = dict(meta_of(claim))
        if isinstance(claim.get("status"), Mapping):
            claim["status"] = dict(claim["status"])
        kobj = display_key(claim)
        refresh = False
        last: Exception | None = None
        for _ in range(CONFLICT_RETRIES):
            if refresh:
                try:
                    claim = await self.client.get(CLAIMS, str(meta_of(claim)["name"]),
                                                  namespace=str(meta_of(claim).get("namespace") or ""))
                except errors.StatusError as exc:
                    raise RuntimeError(f"get updated claim {kobj} after conflict: {exc.message}") from None
            refresh = True
            if meta_of(claim).get("deletionTimestamp"):
                raise RuntimeError(f"claim {kobj} got deleted in the meantime")
            try:
                if cplan.allocation is not None:
                    if allocation_of(claim) is not None:
                        raise RuntimeError(f"claim {kobj} got allocated elsewhere in the meantime")
                    meta = claim.setdefault("metadata", {})
                    if FINALIZER not in (meta.get("finalizers") or []):
                        meta["finalizers"] = [*(meta.get("finalizers") or []), FINALIZER]
                        try:
                            claim = await self.client.update(CLAIMS, claim, field_manager=COMPONENT)
                        except errors.Conflict:
                            raise
                        except errors.StatusError as exc:
                            raise RuntimeError(f"add finalizer to claim {kobj}: {exc.message}") from None
                    # DRADeviceBindingConditions (beta, on) with DRAResourceClaimDeviceStatus (GA):
                    # the time the binding timeout is measured from, on the scheduler's clock. Set
                    # in the assumed allocation itself, so that the informer's copy of the write
                    # equals the assumption (no recount of the devices).
                    cplan.allocation.setdefault("allocationTimestamp", clocks.rfc3339(self.clock.now()))
                    claim.setdefault("status", {})["allocation"] = cplan.allocation
                elif allocation_of(claim) is None:
                    raise RuntimeError(f"claim {kobj} got deallocated elsewhere in the meantime")
                status = claim.setdefault("status", {})
                status["reservedFor"] = [*(status.get("reservedFor") or []), dict(ref)]
                try:
                    updated = await self.client.update_status(CLAIMS, claim, field_manager=COMPONENT)
                except errors.Conflict:
                    raise
                except errors.StatusError as exc:
                    what = "allocation and reservation" if cplan.allocation is not None else "reservation"
                    raise RuntimeError(f"add {what} to claim {kobj}: {exc.message}") from None
            except errors.Conflict as exc:
                last = exc
                continue
            self.assume.record_write(updated)
            return updated
        assert last is not None
        raise RuntimeError(f"add reservation to claim {kobj}: {last}")

    async def _wait_for_binding_conditions(self, pod: Mapping[str, Any], plan: Plan) -> None:
        """The end of PreBind: when an allocated device of the pod's claims has binding conditions,
        say so (a Normal `BindingConditionsPending` Event) and wait until all of them are True, a
        binding failure condition is True, or `bindingTimeout` passes on the scheduler's clock.
        Upstream polls every 5 s; this re-checks on each change of the claims and at the deadline."""
        claims = [cplan.claim for cplan in plan.claims if cplan.claim is not None]
        if not bindings.claims_have_binding_conditions(claims):
            return
        keys = [(caches.key_of(claim), uid_of(claim)) for claim in claims]
        if self.recorder is not None:
            await self.recorder.normal(pod, "BindingConditionsPending",
                                       f"waiting for binding conditions for device on node {plan.node}")
        ns, name = caches.key_of(pod)
        self._log.info("binding_conditions_pending", namespace=ns, name=name, node=plan.node)
        deadline = self.clock.now() + self.binding_timeout
        wake = asyncio.Event()
        with self._watching([uid for _key, uid in keys], wake):
            while True:
                wake.clear()
                claim_timeout = self._ready_for_binding(keys)
                if claim_timeout is None:
                    self._log.info("binding_conditions_met", namespace=ns, name=name, node=plan.node)
                    return
                now = self.clock.now()
                if deadline - now <= 0:
                    raise RuntimeError(f"{bindings.BINDING_TIMEOUT}: context deadline exceeded")
                # Also wake when a claim's own timeout (from its allocationTimestamp) passes.
                wake_at = min(deadline, claim_timeout + _AFTER)
                await _first(wake.wait(), self.clock.sleep(max(wake_at - now, 0.0)))

    def _ready_for_binding(self, keys: list[tuple[tuple[str, str], str]]) -> float | None:
        """`isPodReadyForBinding` over the claims as the informer (or our last write) has them:
        None when ready, else when the first pending claim times out (inf: never)."""
        now = self.clock.now()
        for (ns, name), uid in keys:
            claim = self.assume.view(ns, name)
            if claim is None or uid_of(claim) != uid:
                raise RuntimeError(f'resourceclaim.resource.k8s.io "{name}" not found')
            try:
                ready = bindings.claim_ready_for_binding(claim)
            except bindings.BindingFailed as exc:
                raise RuntimeError(str(exc)) from None
            if not ready:
                at = bindings.claim_timeout_at(claim, timeout=self.binding_timeout)
                if at is not None and at < now:
                    raise RuntimeError(f"{bindings.BINDING_TIMEOUT}: claim={name}")
                return at if at is not None else float("inf")
        return None

    @contextlib.contextmanager
    def _watching(self, uids: list[str], wake: asyncio.Event) -> Iterator[None]:
        for uid in uids:
            self._waiting.setdefault(uid, []).append(wake)
        try:
            yield
        finally:
            for uid in uids:
                events = self._waiting.get(uid, [])
                if wake in events:
                    events.remove(wake)
                if not events:
                    self._waiting.pop(uid, None)

    def unreserve_local(self, pod: Mapping[str, Any], plan: Plan) -> None:
        """Drop the assumptions of the plan (no writes: the cycle was cancelled)."""
        for cplan in plan.claims:
            if cplan.allocation is not None:
                self.assume.forget(cplan.key, cplan.claim)
            self.assume.in_flight.pop(cplan.key, None)
        self.node_cache.forget_pod(pod, self.pods.cache.get(*caches.key_of(pod)))

    async def unreserve(self, pod: Mapping[str, Any], plan: Plan) -> None:
        """`Unreserve`: drop the assumptions; remove the pod from reservedFor where we added it
        (strategic-merge delete by uid); delete an extended-resource claim we created."""
        self.unreserve_local(pod, plan)
        pod_uid = uid_of(pod)
        if plan.node_allocatable_written:  # an explicit empty list: cleared, not left out
            patch = {"metadata": {"uid": pod_uid}, "status": {NODE_ALLOCATABLE_STATUSES: []}}
            ns, name = caches.key_of(pod)
            try:
                await self.client.patch(PODS, name, patch, namespace=ns, subresource="status", field_manager=COMPONENT)
            except errors.StatusError as exc:
                self._log.info("clear_node_allocatable_failed", pod=display_key(pod), error=exc.message)
        for cplan in plan.claims:
            if cplan.claim is None:
                continue
            if cplan.extended and plan.extended_claim is not None:
                with contextlib.suppress(errors.NotFound):
                    await delete_claim(self.client, cplan.claim)
                continue
            current = self.assume.view(*caches.key_of(cplan.claim))
            if (current is None or not reserved_for(current, pod_uid)) and not reserved_for(cplan.claim, pod_uid):
                continue
            patch = {"metadata": {"uid": uid_of(cplan.claim)},
                     "status": {"reservedFor": [{"$patch": "delete", "uid": pod_uid}]}}
            try:
                await self.client.patch(CLAIMS, str(meta_of(cplan.claim).get("name")), patch,
                                        namespace=str(meta_of(cplan.claim).get("namespace") or ""),
                                        patch_type="strategic", subresource="status", field_manager=COMPONENT)
            except errors.StatusError as exc:
                self._log.info("unreserve_failed", claim=display_key(cplan.claim), error=exc.message)


async def delete_claim(client: clients.Client, claim: Mapping[str, Any]) -> None:
    """Delete a claim we created; with our finalizer on it and no allocation to keep, remove
    the finalizer too."""
    ns, name = caches.key_of(claim)
    await client.delete(CLAIMS, name, namespace=ns, preconditions={"uid": uid_of(claim)})
    for _ in range(CONFLICT_RETRIES):
        try:
            current = await client.get(CLAIMS, name, namespace=ns)
        except errors.NotFound:
            return
        if uid_of(current) != uid_of(claim):
            return
        fins = [f for f in meta_of(current).get("finalizers") or [] if f != FINALIZER]
        if len(fins) == len(meta_of(current).get("finalizers") or []):
            return
        if allocation_of(current) is not None:
            current["status"] = {k: v for k, v in status_of(current).items()
                                 if k not in ("allocation", "reservedFor", "devices")}
            try:
                current = await client.update_status(CLAIMS, current, field_manager=COMPONENT)
            except errors.Conflict:
                continue
        try:
            await client.patch(CLAIMS, name, {"metadata": {
                "resourceVersion": meta_of(current).get("resourceVersion"), "finalizers": fins or None}},
                namespace=ns, field_manager=COMPONENT)
            return
        except errors.Conflict:
            continue


async def _first(*aws: Any) -> None:
    """Wait until the first of the awaitables finishes; cancel the others."""
    tasks = [asyncio.ensure_future(a) for a in aws]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            if not task.done():
                task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
