"""The controller manager: shared informers, one work queue and N workers per controller, leader
election, Events, structured logs and a clean shutdown (controller-runtime's manager + internal
controller, sample-controller's `processNextWorkItem`).

A controller is a name, a `Reconciler`, and `Watch`es: which resource to inform on and how a change
maps to the `Request`s to enqueue. Handlers only enqueue; workers call `reconcile` and apply the
outcome rules written in `controllers.runtime.reconcile`.

Lifecycle of `Manager.run(stop)`: start informers → wait for their caches → (acquire the Lease) →
start controllers → ... → stop: shut the queues down, let in-flight reconciles finish for a short
grace period (then cancel them), stop informers, release the Lease. Every task is named and none
is left behind.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import random
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

import structlog

from controllers.runtime import cache as caches
from controllers.runtime import client as clients
from controllers.runtime import informer as informers
from controllers.runtime import leaderelection as elections
from controllers.runtime import reconcile, workqueue
from cp import clock as clocks
from cp import errors
from cp import resources as res

logger = structlog.get_logger("cplane.controllers")

GRACE_SECONDS = 2.0  # real seconds in-flight reconciles get on stop before they are cancelled


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Change:
    """One cache change as a Watch's map function sees it."""

    type: Literal["add", "update", "delete"]
    kind: res.ResourceKind
    obj: dict[str, Any]
    old: dict[str, Any] | None = None  # for updates


MapFunc = Callable[[Change], Iterable[reconcile.Request]]


def own_request(change: Change) -> list[reconcile.Request]:
    """Enqueue the changed object itself (single-kind controllers)."""
    ns, name = caches.key_of(change.obj)
    return [reconcile.Request(namespace=ns, name=name)]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Watch:
    """Inform on `kind`; `map` turns each change into the Requests to enqueue; `indexers` are added
    to the shared cache of that kind."""

    kind: res.ResourceKind
    map: MapFunc = own_request
    indexers: Mapping[str, caches.IndexFunc] = dataclasses.field(default_factory=dict)


class Controller:
    def __init__(self, *, name: str, reconciler: reconcile.Reconciler, watches: Sequence[Watch],
                 workers: int = 1,
                 rate_limiter: Callable[[clocks.Clock], workqueue.RateLimiter[reconcile.Request]] | None = None
                 ) -> None:
        self.name = name
        self.reconciler = reconciler
        self.watches = list(watches)
        self.workers = workers
        self.rate_limiter = rate_limiter
        self.queue: workqueue.WorkQueue[reconcile.Request] | None = None  # set while running
        self._manager: Manager | None = None  # set by Manager.add

    def add_watch(self, watch: Watch) -> informers.Informer | None:
        """Watch one more resource from now on (the garbage collector's monitors of custom resources,
        added as their definitions appear). With a manager, returns the shared informer, started; its
        objects reach this controller as adds once it has synced."""
        self.watches.append(watch)
        if self._manager is None:
            return None
        return self._manager.attach(self, watch)

    async def remove_watch(self, kind: res.ResourceKind) -> None:
        """Stop watching `kind` (a resource the server no longer serves); its informer stops when no
        controller of the manager watches it any more."""
        self.watches = [w for w in self.watches if w.kind.group_resource != kind.group_resource]
        if self._manager is not None:
            await self._manager.detach(self, kind)

    def new_queue(self, *, clock: clocks.Clock, retry_clock: clocks.Clock) -> workqueue.WorkQueue[reconcile.Request]:
        """The work queue of one term. A controller that needs another order than FIFO (the
        scheduler's active queue) returns its own `WorkQueue` subclass here."""
        limiter = self.rate_limiter(retry_clock) if self.rate_limiter else None
        return workqueue.WorkQueue(clock=clock, rate_limiter=limiter, name=self.name, retry_clock=retry_clock)

    def on_start(self) -> None:
        """Called at the start of each term, once `queue` is set and before any handler enqueues
        (the objects already cached are replayed as adds right after)."""

    def on_stop(self) -> None:
        """Called at the end of each term, before the workers are stopped: cancel work the controller
        runs beside its workers."""

    def enqueue(self, request: reconcile.Request) -> None:
        if self.queue is not None:
            self.queue.add(request)


class EventRecorder:
    """Writes core/v1 Events about objects (`kubectl describe` shows them). Never raises: a lost
    Event must not fail a reconcile."""

    def __init__(self, client: clients.Client, *, component: str, clock: clocks.Clock,
                 instance: str = "") -> None:
        self.client = client
        self.component = component
        self.instance = instance or component
        self.clock = clock
        self._seq = itertools.count()
        self._log = logger.bind(controller=component)

    def build(self, obj: Mapping[str, Any], type_: str, reason: str, message: str) -> dict[str, Any]:
        meta = caches.meta(obj)
        now = clocks.rfc3339(self.clock.now())
        namespace = str(meta.get("namespace") or "") or "default"
        involved: dict[str, Any] = {"kind": obj.get("kind", ""), "apiVersion": obj.get("apiVersion", ""),
                                    "name": meta.get("name", ""), "uid": meta.get("uid", "")}
        if meta.get("namespace"):
            involved["namespace"] = meta["namespace"]
        if meta.get("resourceVersion"):
            involved["resourceVersion"] = meta["resourceVersion"]
        return {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": self._event_name(str(meta.get("name") or "unknown")), "namespace": namespace},
            "involvedObject": involved, "reason": reason, "message": message[:1024], "type": type_,
            "source": {"component": self.component}, "reportingComponent": self.component,
            "reportingInstance": self.instance, "firstTimestamp": now, "lastTimestamp": now, "count": 1,
        }

    def _event_name(self, name: str) -> str:
        """`<object>.<hex nanoseconds>` as client-go's recorder names Events (unique per recorder even
        when a virtual clock stands still)."""
        stamp = int(self.clock.now() * 1e9) + next(self._seq)
        return f"{name[:253 - 17]}.{stamp:x}"

    async def event(self, obj: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
        try:
            event = self.build(obj, type_, reason, message)
            try:
                await self.client.create_event(event)
            except errors.AlreadyExists:  # another recorder, same nanosecond
                event["metadata"]["name"] += f"{random.randrange(1 << 16):04x}"
                await self.client.create_event(event)
        except (errors.StatusError, OSError, TimeoutError) as exc:
            self._log.warning("event_failed", reason=reason, error=repr(exc))

    async def normal(self, obj: Mapping[str, Any], reason: str, message: str) -> None:
        await self.event(obj, "Normal", reason, message)

    async def warning(self, obj: Mapping[str, Any], reason: str, message: str) -> None:
        await self.event(obj, "Warning", reason, message)


class ControllerContext:
    """What a controller factory gets: the client, shared informers, the clock, Events."""

    def __init__(self, *, client: clients.Client, informers: informers.InformerFactory, clock: clocks.Clock,
                 identity: str = "") -> None:
        self.client = client
        self.informers = informers
        self.clock = clock
        self.identity = identity

    def recorder(self, component: str) -> EventRecorder:
        return EventRecorder(self.client, component=component, clock=self.clock, instance=self.identity)


class _Handler:
    """Informer handler: map each change to Requests and enqueue them on the controller."""

    def __init__(self, controller: Controller, watch: Watch) -> None:
        self.controller = controller
        self.watch = watch

    def _enqueue(self, change: Change) -> None:
        for request in self.watch.map(change):
            self.controller.enqueue(request)

    def on_add(self, obj: dict[str, Any]) -> None:
        self._enqueue(Change(type="add", kind=self.watch.kind, obj=obj))

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self._enqueue(Change(type="update", kind=self.watch.kind, obj=new, old=old))

    def on_delete(self, obj: dict[str, Any]) -> None:
        self._enqueue(Change(type="delete", kind=self.watch.kind, obj=obj))


class Manager:
    def __init__(self, *, client: clients.Client, clock: clocks.Clock, name: str = "cplane-controller-manager",
                 informer_factory: informers.InformerFactory | None = None,
                 leader_election: elections.LeaderElectionConfig | None = None,
                 grace_seconds: float = GRACE_SECONDS, log: Any = None,
                 retry_clock: clocks.Clock | None = None) -> None:
        self.client = client
        self.clock = clock
        # Error-retry backoff runs on wall time under a virtual clock (see WorkQueue.retry_clock).
        self.retry_clock = retry_clock or (clocks.RealClock() if getattr(clock, "virtual", False) else clock)
        self.name = name
        self.informers = informer_factory or informers.InformerFactory(client, clock=clock)
        self.leader_election = leader_election
        self.elector = (elections.LeaderElector(client, clock=clock, config=leader_election)
                        if leader_election is not None else None)
        self.identity = leader_election.identity if leader_election is not None else elections.default_identity()
        self.controllers: list[Controller] = []
        self._tasks: dict[str, list[asyncio.Task[None]]] = {}
        self._handlers: list[tuple[informers.Informer, _Handler]] = []
        self.leading = asyncio.Event()  # set while this manager's controllers run
        self.terms = 0
        self.grace_seconds = grace_seconds
        self._informers_started = False
        self._log = (log or logger).bind(manager=name, identity=self.identity)

    def context(self) -> ControllerContext:
        return ControllerContext(client=self.client, informers=self.informers, clock=self.clock,
                                 identity=self.identity)

    def add(self, controller: Controller) -> None:
        self.controllers.append(controller)
        controller._manager = self
        for watch in controller.watches:
            self.informers.informer(watch.kind, indexers=watch.indexers)

    def attach(self, controller: Controller, watch: Watch) -> informers.Informer:
        """A watch added while running (`Controller.add_watch`): start its informer if the others
        run, and hand its changes to the controller if it runs."""
        inf = self.informers.informer(watch.kind, indexers=watch.indexers)
        if self._informers_started and not inf.running:
            inf.start()
        if controller.queue is not None:
            handler = _Handler(controller, watch)
            self._handlers.append((inf, handler))
            inf.add_handler(handler)
        return inf

    async def detach(self, controller: Controller, kind: res.ResourceKind) -> None:
        gr = kind.group_resource
        for inf, handler in list(self._handlers):
            if handler.controller is controller and handler.watch.kind.group_resource == gr:
                inf.remove_handler(handler)
                self._handlers.remove((inf, handler))
        if not any(w.kind.group_resource == gr for c in self.controllers for w in c.watches):
            await self.informers.remove(kind)

    # ------------------------------------------------------------------ run

    async def run(self, stop: asyncio.Event) -> None:
        """Run until `stop` is set; everything started here is stopped before returning."""
        self.informers.start()
        self._informers_started = True
        try:
            synced = await _until(_true(self.informers.wait_for_sync()), stop)
            if synced is None:
                return
            self._log.info("caches_synced", informers=len(self.informers.informers))
            if self.elector is None:
                await self._start_controllers()
                try:
                    await stop.wait()
                finally:
                    await self._stop_controllers()
                return
            await self._run_elected(stop, self.elector)
        finally:
            self._informers_started = False
            await self.informers.stop()

    async def _run_elected(self, stop: asyncio.Event, elector: elections.LeaderElector) -> None:
        try:
            while not stop.is_set():
                acquired = await _until(_true(elector.acquire()), stop)
                if acquired is None:
                    return
                await self._start_controllers()
                try:
                    await _until(_true(elector.hold()), stop)
                finally:
                    await self._stop_controllers()
                if not stop.is_set():
                    self._log.warning("leadership_lost_restarting_election")
        finally:
            if self.leader_election is not None and self.leader_election.release_on_cancel:
                await elector.release()

    async def _start_controllers(self) -> None:
        self.terms += 1
        loop = asyncio.get_running_loop()
        for controller in self.controllers:
            controller.queue = controller.new_queue(clock=self.clock, retry_clock=self.retry_clock)
            controller.on_start()
            for watch in controller.watches:
                inf = self.informers.informer(watch.kind)
                handler = _Handler(controller, watch)
                self._handlers.append((inf, handler))
                inf.add_handler(handler)  # replays an add per cached object
            self._tasks[controller.name] = [
                loop.create_task(self._worker(controller, controller.queue),
                                 name=f"controller:{controller.name}:worker:{i}")
                for i in range(controller.workers)]
            self._log.info("controller_started", controller=controller.name, workers=controller.workers)
        self.leading.set()

    async def _stop_controllers(self) -> None:
        self.leading.clear()
        for inf, handler in self._handlers:
            inf.remove_handler(handler)
        self._handlers.clear()
        tasks: list[asyncio.Task[None]] = []
        queues: list[workqueue.WorkQueue[reconcile.Request]] = []
        for controller in self.controllers:
            controller.on_stop()
            if controller.queue is not None:
                controller.queue.shutdown()
                queues.append(controller.queue)
                controller.queue = None
            tasks.extend(self._tasks.pop(controller.name, []))
        if tasks:
            _done, pending = await asyncio.wait(tasks, timeout=self.grace_seconds)
            for task in pending:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        for queue in queues:
            await queue.aclose()
        for controller in self.controllers:
            self._log.info("controller_stopped", controller=controller.name)

    # ------------------------------------------------------------------ workers

    async def _worker(self, controller: Controller, queue: workqueue.WorkQueue[reconcile.Request]) -> None:
        while True:
            try:
                request = await queue.get()
            except workqueue.ShutDownError:
                return
            try:
                await self._process(controller, queue, request)
            finally:
                queue.done(request)

    async def _process(self, controller: Controller, queue: workqueue.WorkQueue[reconcile.Request],
                       request: reconcile.Request) -> None:
        reconcile_id = uuid.uuid4().hex[:16]
        attempt = queue.num_requeues(request) + 1
        log = self._log.bind(controller=controller.name, reconcile_id=reconcile_id,
                             namespace=request.namespace, name=request.name, attempt=attempt)
        if request.resource:
            log = log.bind(resource=request.resource)
        start = time.perf_counter()
        try:
            with structlog.contextvars.bound_contextvars(controller=controller.name, reconcile_id=reconcile_id):
                result = await controller.reconciler.reconcile(request)
        except asyncio.CancelledError:
            raise
        except reconcile.TerminalError as exc:
            queue.forget(request)
            log.error("reconcile_done", outcome="terminal_error", error=str(exc), duration_ms=_ms(start))
            return
        except errors.Conflict as exc:
            queue.add_rate_limited(request)
            log.info("reconcile_done", outcome="conflict", error=exc.message, duration_ms=_ms(start))
            return
        except Exception as exc:
            queue.add_rate_limited(request)
            log.warning("reconcile_done", outcome="error", error=repr(exc), duration_ms=_ms(start),
                        exc_info=not isinstance(exc, errors.StatusError))
            return
        queue.forget(request)
        if result is not None and result.requeue_after is not None and result.requeue_after > 0:
            queue.add_after(request, result.requeue_after)
            log.debug("reconcile_done", outcome="requeue_after", requeue_after=result.requeue_after,
                      duration_ms=_ms(start))
            return
        log.debug("reconcile_done", outcome="success", duration_ms=_ms(start))


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)


async def _true(aw: Awaitable[None]) -> bool:
    await aw
    return True


async def _until(aw: Awaitable[bool], stop: asyncio.Event) -> bool | None:
    """Await `aw` unless `stop` is set first (then cancel it and return None)."""
    main = asyncio.ensure_future(aw)
    stopper = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({main, stopper}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (main, stopper):
            if not task.done():
                task.cancel()
        await asyncio.gather(main, stopper, return_exceptions=True)
    if main.cancelled():
        return None
    return main.result()
