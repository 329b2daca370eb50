"""The CustomResourceDefinition controllers that run inside kube-apiserver (apiextensions-apiserver's),
so they act with `--no-controllers` too, as envtest users expect:

- **naming and establishing** (`naming_controller.go`, `establishing_controller.go`): a definition's
  requested names are accepted unless another definition of its group holds them; `NamesAccepted` and
  `Established` are written to its status (`cp.crd.custom.names_and_conditions`);
- **serving**: the store's registry (`cp.resources.Registry`) serves the resources of every established
  definition, so handlers, discovery and OpenAPI see them at once (`cp.crd.custom.served_kinds`);
- **finalizing** (`finalizer/crd_finalizer.go`): a definition being deleted (the store adds the
  `customresourcecleanup.apiextensions.k8s.io` finalizer on its first delete) stops accepting new
  instances, has its instances deleted, and loses the finalizer once none is left, which lets it go.

One `Definitions` per server. It follows the definitions in the event log, so several servers of one
log (PostgreSQL) serve the same resources; their status writes are the same, and a write that changes
nothing is not appended. A replay server (`write=False`) only serves what the log holds.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

import msgspec
import structlog

from api import store as stores
from cp import errors
from cp import resources as res
from cp.crd import custom
from cp.validation.meta import validate_embedded_object_meta
from storage import log

logger = structlog.get_logger("cplane.api.crds")
_decode = msgspec.json.Decoder().decode

Writer = Callable[[], stores.WriteContext]  # a new WriteContext of the server itself


def _crd_kind() -> res.ResourceKind:
    kind = res.lookup(custom.GROUP, "v1", custom.PLURAL)
    assert kind is not None
    return kind


class Definitions:
    def __init__(self, store: stores.Store, *, writer: Writer, write: bool = True) -> None:
        self.store = store
        self.writer = writer
        self.write = write
        self._task: asyncio.Task[None] | None = None
        self._definitions: dict[str, dict[str, Any]] = {}  # name -> the newest definition seen
        self._finalizing: set[str] = set()

    async def start(self) -> None:
        """Serve what the log holds now, then follow it."""
        listed = await self.store.log.list_objects(group=custom.GROUP, resource=custom.PLURAL, namespace=None)
        after = listed.revision
        for item in listed.events:
            self._seen(_decode(item.object))
        for name in list(self._definitions):
            await self._reconcile(name)
        self._task = asyncio.get_running_loop().create_task(self._follow(after), name="crds")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    # -------------------------------------------------------------------------------- following the log

    async def _follow(self, after: int) -> None:
        while True:
            try:
                sub = await self.store.log.subscribe(group=custom.GROUP, resource=custom.PLURAL, namespace=None,
                                                     after=after)
            except log.ExpiredError:
                after = self.store.log.revision
                continue
            try:
                while True:
                    # While instances are being deleted, look again at least every second: their own
                    # finalizers may hold them for a while.
                    batch = await sub.next_batch(timeout=1.0 if self._finalizing else 30.0)
                    if batch is None:
                        break
                    changed: list[str] = []
                    for ev in batch:
                        after = max(after, ev.revision)
                        if ev.type == "DELETED":
                            self._definitions.pop(ev.name, None)
                            self._finalizing.discard(ev.name)
                            self.store.registry.set_custom(ev.name, ())
                        else:
                            self._seen(_decode(ev.object))
                            changed.append(ev.name)
                    for name in dict.fromkeys([*changed, *self._finalizing]):
                        await self._reconcile_logged(name)
            finally:
                sub.close()

    def _seen(self, crd: dict[str, Any]) -> None:
        name = str((crd.get("metadata") or {}).get("name") or "")
        self._definitions[name] = crd
        self._serve(name, crd)

    def _serve(self, name: str, crd: dict[str, Any]) -> None:
        kinds = custom.served_kinds(crd, object_meta=validate_embedded_object_meta)
        if not custom.same_served(kinds, self.store.registry.custom(name)):
            self.store.registry.set_custom(name, kinds)
            logger.info("crd_served", crd=name, versions=[k.version for k in kinds])

    async def _reconcile_logged(self, name: str) -> None:
        try:
            await self._reconcile(name)
        except (errors.StatusError, log.StorageError) as exc:
            logger.warning("crd_reconcile_failed", crd=name, why=str(exc))

    # -------------------------------------------------------------------------------- reconciling

    async def _reconcile(self, name: str) -> None:
        crd = self._definitions.get(name)
        if crd is None or not self.write:
            return
        meta = crd.get("metadata") or {}
        if meta.get("deletionTimestamp"):
            await self._finalize(name, crd)
            return
        others = [d for n, d in self._definitions.items() if n != name]
        status = custom.names_and_conditions(crd, others, now=self.store.clock.now())
        if status == (crd.get("status") or {}):
            return

        def mutate(current: dict[str, Any]) -> dict[str, Any]:
            current["status"] = custom.names_and_conditions(current, others, now=self.store.clock.now())
            return current

        result = await self.store.guaranteed_update(_crd_kind(), "", name, mutate, self.writer(),
                                                    subresource="status")
        self._seen(_decode(result.body))

    async def _finalize(self, name: str, crd: dict[str, Any]) -> None:
        """Delete the instances, then drop the cleanup finalizer."""
        if custom.CLEANUP_FINALIZER not in ((crd.get("metadata") or {}).get("finalizers") or []):
            self._finalizing.discard(name)
            return
        self._finalizing.add(name)
        spec = crd.get("spec") or {}
        group, plural = str(spec.get("group") or ""), str((spec.get("names") or {}).get("plural") or "")
        kind = self.store.registry.by_group_resource(group, plural)
        remaining = 0
        if kind is not None:
            listed = await self.store.log.list_objects(group=group, resource=plural, namespace=None)
            remaining = len(listed.events)
            for item in listed.events:
                obj = _decode(item.object)
                if (obj.get("metadata") or {}).get("deletionTimestamp"):
                    continue
                with contextlib.suppress(errors.NotFound, errors.Conflict):
                    await self.store.delete(kind, item.namespace, item.name, {}, self.writer())
            if remaining:
                listed = await self.store.log.list_objects(group=group, resource=plural, namespace=None)
                remaining = len(listed.events)
        now = self.store.clock.now()

        def mutate(current: dict[str, Any]) -> dict[str, Any]:
            status = current.setdefault("status", {})
            conditions = [c for c in status.get("conditions") or [] if c.get("type") != "Terminating"]
            conditions.append(custom.terminating_condition(current, now=now, remaining=remaining))
            status["conditions"] = conditions
            return current

        crd_kind = _crd_kind()
        with contextlib.suppress(errors.NotFound):
            await self.store.guaranteed_update(crd_kind, "", name, mutate, self.writer(), subresource="status")
        if remaining:
            return

        def release(current: dict[str, Any]) -> dict[str, Any]:
            meta = current.setdefault("metadata", {})
            meta["finalizers"] = [f for f in meta.get("finalizers") or [] if f != custom.CLEANUP_FINALIZER]
            return current

        with contextlib.suppress(errors.NotFound):
            await self.store.guaranteed_update(crd_kind, "", name, release, self.writer())
        self._finalizing.discard(name)
