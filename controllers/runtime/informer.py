"""Informers: keep a `cache.Cache` of one resource in step with the server and tell handlers what
changed (client-go's reflector + shared informer, kopf's watching chain).

The loop, per informer:
1. sync: a watch-list (`sendInitialEvents=true`, ADDED for every object, then the BOOKMARK
   annotated `k8s.io/initial-events-end`) — or, when the server answers 422, a paginated LIST.
   The synced set replaces the cache; the difference reaches handlers as add / update / delete
   (deletes for objects that vanished while we were not watching);
2. watch from the last resourceVersion seen (objects and BOOKMARKs advance it);
3. when the stream ends, watch again from that resourceVersion (no relist needed); on 410
   Expired/Gone (in-stream ERROR or on connect) go back to 1 at once (relist); on other failures
   back off on the clock (0.8 s doubling to 30 s) and resume — or relist after three failures in
   a row, or when the server does not know our resourceVersion (it was reset).

Handlers run inline in the informer task and must only be cheap and non-blocking (enqueue keys).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

import structlog

from controllers.runtime import cache as caches
from controllers.runtime import client as clients
from cp import clock as clocks
from cp import errors
from cp import resources as res

logger = structlog.get_logger("cplane.controllers.informer")

INITIAL_EVENTS_END = "k8s.io/initial-events-end"
MIN_WATCH_TIMEOUT = 300  # seconds; each watch asks for [300, 600) like client-go's reflector
BACKOFF_INITIAL = 0.8
BACKOFF_MAX = 30.0


RESOURCE_VERSION_TOO_LARGE = "ResourceVersionTooLarge"  # metav1.CauseTypeResourceVersionTooLarge


def resource_version_too_large(exc: BaseException) -> bool:
    """The server has not reached the resourceVersion we asked for (504 Timeout whose details carry
    the cause `ResourceVersionTooLarge`, as client-go's `isTooLargeResourceVersionError` reads it)."""
    if not isinstance(exc, errors.Timeout):
        return False
    causes = (exc.details or {}).get("causes") or []
    return any(isinstance(c, Mapping) and c.get("reason") == RESOURCE_VERSION_TOO_LARGE for c in causes)


class EventHandler(Protocol):
    def on_add(self, obj: dict[str, Any]) -> None: ...

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None: ...

    def on_delete(self, obj: dict[str, Any]) -> None:
        """`obj` is the final state the server sent, or (after a relist found it gone) the last
        state this cache saw."""
        ...


class Handlers:
    """An EventHandler from plain functions; any of them may be omitted."""

    def __init__(self, *, on_add: Callable[[dict[str, Any]], None] | None = None,
                 on_update: Callable[[dict[str, Any], dict[str, Any]], None] | None = None,
                 on_delete: Callable[[dict[str, Any]], None] | None = None) -> None:
        self._add = on_add
        self._update = on_update
        self._delete = on_delete

    def on_add(self, obj: dict[str, Any]) -> None:
        if self._add is not None:
            self._add(obj)

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if self._update is not None:
            self._update(old, new)

    def on_delete(self, obj: dict[str, Any]) -> None:
        if self._delete is not None:
            self._delete(obj)


class _StreamEnded(Exception):
    """A watch-list stream closed before its initial-events-end bookmark."""


class Informer:
    def __init__(self, client: clients.Client, kind: res.ResourceKind, *, clock: clocks.Clock,
                 namespace: str | None = None, label_selector: str = "", field_selector: str = "",
                 indexers: Mapping[str, caches.IndexFunc] | None = None, use_watch_list: bool = True) -> None:
        self.client = client
        self.kind = kind
        self.clock = clock
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.cache = caches.Cache(indexers)
        self.use_watch_list = use_watch_list
        self.name = f"informer:{kind.group_resource}"
        self._handlers: list[EventHandler] = []
        self._synced = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._resource_version = ""
        self._need_sync = True
        self.relists = 0  # how many times the informer (re)synced from scratch
        self._log = logger.bind(informer=kind.group_resource)

    # ------------------------------------------------------------------ public

    def add_handler(self, handler: EventHandler) -> None:
        """Register a handler; if the cache already holds objects it gets an add for each."""
        self._handlers.append(handler)
        for obj in self.cache:
            self._call(handler.on_add, obj)

    def remove_handler(self, handler: EventHandler) -> None:
        with contextlib.suppress(ValueError):
            self._handlers.remove(handler)

    def add_indexers(self, indexers: Mapping[str, caches.IndexFunc]) -> None:
        self.cache.add_indexers(indexers)

    @property
    def has_synced(self) -> bool:
        return self._synced.is_set()

    @property
    def resource_version(self) -> str:
        return self._resource_version

    async def wait_for_sync(self) -> None:
        """Return once the first sync is done (bound it with `asyncio.timeout` if needed)."""
        await self._synced.wait()

    def start(self) -> asyncio.Task[None]:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self.run(), name=self.name)
        return self._task

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    # ------------------------------------------------------------------ the loop

    async def run(self) -> None:
        backoff = BACKOFF_INITIAL
        failures = 0
        self._need_sync = True
        while True:
            try:
                if not self._need_sync:
                    await self._watch()
                elif self.use_watch_list:
                    try:
                        await self._watch_list()  # syncs, then goes on as a plain watch
                    except errors.Invalid as exc:
                        if not self._need_sync:
                            raise
                        self._log.info("watch_list_unsupported", message=exc.message)
                        self.use_watch_list = False
                        continue
                else:
                    await self._list()
                    await self._watch()
                backoff, failures = BACKOFF_INITIAL, 0
                continue  # the stream ended: resume from the last resourceVersion
            except (errors.Expired, errors.Gone) as exc:
                self._log.info("watch_expired_relisting", resource_version=self._resource_version,
                               message=exc.message)
                self._need_sync = True
                continue
            except asyncio.CancelledError:
                raise
            except _StreamEnded:
                self._log.info("watch_list_ended_early")
            except Exception as exc:
                failures += 1
                # A resourceVersion the server does not have yet (it was reset) or repeated failures:
                # start over from a fresh list rather than resume.
                if failures >= 3 or resource_version_too_large(exc):
                    self._need_sync = True
                self._log.warning("watch_failed", error=repr(exc), retry_in=round(backoff, 3), failures=failures)
            await self.clock.sleep(backoff * (1 + random.random() * 0.1))
            backoff = min(backoff * 2, BACKOFF_MAX)

    def _watch_timeout(self) -> int:
        return int(MIN_WATCH_TIMEOUT * (1 + random.random()))

    async def _list(self) -> None:
        listed = await self.client.list(self.kind, namespace=self.namespace, label_selector=self.label_selector,
                                        field_selector=self.field_selector)
        self._replace(listed.items, listed.resource_version)

    async def _watch_list(self) -> None:
        """Sync through a watch-list stream, then keep consuming it as a normal watch."""
        initial: list[dict[str, Any]] = []
        syncing = True
        timeout = self._watch_timeout()
        async with self.client.watch(self.kind, namespace=self.namespace, send_initial_events=True,
                                     label_selector=self.label_selector, field_selector=self.field_selector,
                                     timeout_seconds=timeout, read_timeout=timeout + 30) as stream:
            async for event in stream:
                if not syncing:
                    self._apply(event)
                    continue
                if event.type == "BOOKMARK":
                    meta = caches.meta(event.object)
                    annotations = meta.get("annotations") or {}
                    if annotations.get(INITIAL_EVENTS_END) == "true":
                        self._replace(initial, str(meta.get("resourceVersion") or ""))
                        initial = []
                        syncing = False
                    continue
                if event.type == "ADDED":
                    initial.append(event.object)
                else:  # a server that ignores sendInitialEvents: treat as unsupported
                    raise errors.Invalid(kind="ListOptions", group="meta.k8s.io", name="", causes=[])
        if syncing:
            raise _StreamEnded()

    async def _watch(self) -> None:
        timeout = self._watch_timeout()
        async with self.client.watch(self.kind, namespace=self.namespace,
                                     resource_version=self._resource_version,
                                     label_selector=self.label_selector, field_selector=self.field_selector,
                                     timeout_seconds=timeout, read_timeout=timeout + 30) as stream:
            async for event in stream:
                self._apply(event)

    # ------------------------------------------------------------------ applying changes

    def _replace(self, objects: Iterable[dict[str, Any]], resource_version: str) -> None:
        diff = self.cache.replace(objects, resource_version)
        self._resource_version = resource_version
        self._need_sync = False
        self.relists += 1
        self._log.debug("synced", objects=len(self.cache), resource_version=resource_version,
                        added=len(diff.added), updated=len(diff.updated), deleted=len(diff.deleted))
        for obj in diff.added:
            self._dispatch("add", obj)
        for old, new in diff.updated:
            self._dispatch("update", new, old)
        for obj in diff.deleted:
            self._dispatch("delete", obj)
        self._synced.set()

    def _apply(self, event: clients.WatchEvent) -> None:
        obj = event.object
        rv = str(caches.meta(obj).get("resourceVersion") or "")
        if event.type == "BOOKMARK":
            if rv:
                self._resource_version = rv
                self.cache.resource_version = rv
            return
        if event.type in ("ADDED", "MODIFIED"):
            old = self.cache.upsert(obj)
            if old is None:
                self._dispatch("add", obj)
            else:
                self._dispatch("update", obj, old)
        elif event.type == "DELETED":
            self.cache.remove(caches.key_of(obj))
            self._dispatch("delete", obj)
        if rv:
            self._resource_version = rv
            self.cache.resource_version = rv

    def _dispatch(self, what: str, obj: dict[str, Any], old: dict[str, Any] | None = None) -> None:
        for handler in list(self._handlers):
            if what == "add":
                self._call(handler.on_add, obj)
            elif what == "update":
                assert old is not None
                self._call(handler.on_update, old, obj)
            else:
                self._call(handler.on_delete, obj)

    def _call(self, fn: Callable[..., None], *args: dict[str, Any]) -> None:
        try:
            fn(*args)
        except Exception:
            self._log.exception("handler_failed", handler=getattr(fn, "__qualname__", repr(fn)))


class InformerFactory:
    """One informer per resource, shared by every controller of a manager."""

    def __init__(self, client: clients.Client, *, clock: clocks.Clock, namespace: str | None = None,
                 use_watch_list: bool = True) -> None:
        self.client = client
        self.clock = clock
        self.namespace = namespace
        self.use_watch_list = use_watch_list
        self._informers: dict[str, Informer] = {}

    def informer(self, kind: res.ResourceKind | str, *,
                 indexers: Mapping[str, caches.IndexFunc] | None = None) -> Informer:
        k = self.client.resolve(kind)
        inf = self._informers.get(k.group_resource)
        if inf is None:
            inf = Informer(self.client, k, clock=self.clock, namespace=self.namespace,
                           use_watch_list=self.use_watch_list)
            self._informers[k.group_resource] = inf
        if indexers:
            inf.add_indexers(indexers)
        return inf

    def cache(self, kind: res.ResourceKind | str) -> caches.Cache:
        return self.informer(kind).cache

    def has(self, kind: res.ResourceKind) -> bool:
        return kind.group_resource in self._informers

    async def remove(self, kind: res.ResourceKind) -> None:
        """Stop and forget the informer of `kind` (a custom resource no longer served)."""
        inf = self._informers.pop(kind.group_resource, None)
        if inf is not None:
            await inf.stop()

    @property
    def informers(self) -> list[Informer]:
        return list(self._informers.values())

    def start(self) -> None:
        """Start every informer not running yet (call again after adding more)."""
        for inf in self._informers.values():
            if not inf.running:
                inf.start()

    async def wait_for_sync(self, informers: Iterable[Informer] | None = None) -> None:
        targets = list(informers) if informers is not None else self.informers
        await asyncio.gather(*(inf.wait_for_sync() for inf in targets))

    async def stop(self) -> None:
        await asyncio.gather(*(inf.stop() for inf in self._informers.values()))
