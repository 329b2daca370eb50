"""The taint eviction controller (kube-controller-manager's `taint-eviction-controller`,
`pkg/controller/tainteviction`): deletes the pods bound to a Node with `NoExecute` taints they do
not tolerate, at once or when their `tolerationSeconds` run out. (Device taints are
`controllers/taint_evictor.py`'s job.)

**Decision, per pod** (upstream's `processPodOnNode`), whenever its Node's NoExecute taints change
or the pod is bound or its tolerations change:
- the Node has no NoExecute taint: a scheduled eviction is cancelled;
- a taint no toleration matches (`ToleratesTaint`: effect empty or equal, key empty or equal,
  `Exists` or an equal value): evict now;
- otherwise the tolerations that match some taint decide: one with `tolerationSeconds` ≤ 0 means
  now, else the smallest `tolerationSeconds` after the moment the controller first saw the taint
  on that pod; none with `tolerationSeconds` means never (a scheduled eviction is cancelled). An
  eviction already scheduled keeps its time (upstream's quirk: a shorter toleration added later
  does not bring it forward).
The DefaultTolerationSeconds admission (cp/defaulting/core.py) gives every pod 300 s for
`node.kubernetes.io/not-ready` and `node.kubernetes.io/unreachable`, which the node lifecycle
controller (`controllers/nodelifecycle.py`) puts on Nodes whose kubelet stops reporting.

**Eviction**, on the controller's clock: the Normal Event `TaintManagerEviction` "Marking for
deletion Pod NS/NAME", the condition `DisruptionTarget=True` (reason `DeletionByTaintManager`,
"Taint manager: deleting due to NoExecute taint") through `pods/status`, then DELETE (the pod's own
grace period; the Eviction API and PodDisruptionBudgets are not involved, as upstream). Cancelling
a scheduled eviction emits "Cancelling deletion of Pod NS/NAME". Pods already terminating are left
alone. Departure: the DELETE carries a UID precondition, so a newer pod of the same name is never
hit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec
import structlog

from controllers.runtime import cache as caches
from controllers.runtime import client as clients
from controllers.runtime import informer as informers
from controllers.runtime import manager as managers
from controllers.runtime.reconcile import Request, Result
from cp import clock as clocks
from cp import errors
from cp.objects import meta_of, spec_of, status_of, uid_of
from cp.scheduling.plugins import tolerates

NAME = "taint-eviction"
COMPONENT = "taint-eviction-controller"  # Event source and field manager, as upstream
FIELD_MANAGER = COMPONENT
NO_EXECUTE = "NoExecute"

NODES = clients.resolve("nodes")
PODS = clients.resolve("pods")
POD_INDEXERS: dict[str, caches.IndexFunc] = {caches.NODE: caches.by_node}

EVENT_REASON = "TaintManagerEviction"
DISRUPTION_TARGET = "DisruptionTarget"
DISRUPTION_REASON = "DeletionByTaintManager"
DISRUPTION_MESSAGE = "Taint manager: deleting due to NoExecute taint"

logger = structlog.get_logger("cplane.controllers.taint_eviction")


class Scheduled(msgspec.Struct, frozen=True, kw_only=True):
    """An eviction waiting on the clock (upstream's TimedWorker)."""

    uid: str
    created: float
    fire_at: float


def no_execute_taints(node: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    if node is None:
        return []
    return [t for t in spec_of(node).get("taints") or [] if isinstance(t, Mapping) and t.get("effect") == NO_EXECUTE]


def eviction_delay(taints: Sequence[Mapping[str, Any]], tolerations: Sequence[Mapping[str, Any]]) -> float | None:
    """Seconds until a pod with these tolerations must go from these NoExecute taints (0: now),
    None when it tolerates them for ever (upstream GetMatchingTolerations + getMinTolerationTime)."""
    used: list[Mapping[str, Any]] = []
    for taint in taints:
        matching = [t for t in tolerations if tolerates(t, taint)]
        if not matching:
            return 0.0
        used.extend(t for t in matching if t not in used)
    seconds: float | None = None
    for tol in used:
        value = tol.get("tolerationSeconds")
        if value is None:
            continue
        if float(value) <= 0:
            return 0.0
        seconds = float(value) if seconds is None else min(seconds, float(value))
    return seconds


def _tolerations(pod: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    if pod is None:
        return []
    return [t for t in spec_of(pod).get("tolerations") or [] if isinstance(t, Mapping)]


class TaintEviction:
    """The reconciler; keys are pods (`ns/name`)."""

    def __init__(self, *, client: clients.Client, informer_factory: informers.InformerFactory, clock: clocks.Clock,
                 recorder: managers.EventRecorder) -> None:
        self.client = client
        self.clock = clock
        self.recorder = recorder
        self.nodes = informer_factory.informer(NODES).cache
        self.pods = informer_factory.informer(PODS, indexers=POD_INDEXERS).cache
        self.pending: dict[tuple[str, str], Scheduled] = {}
        self.evicted = 0
        self._log = logger.bind(controller=NAME)

    def watches(self) -> list[managers.Watch]:
        return [managers.Watch(kind=NODES, map=self._map_node),
                managers.Watch(kind=PODS, map=self._map_pod, indexers=POD_INDEXERS)]

    def on_start(self) -> None:
        self.pending.clear()

    def _map_node(self, change: managers.Change) -> list[Request]:
        if change.type == "update" and change.old is not None and \
                no_execute_taints(change.old) == no_execute_taints(change.obj):
            return []
        name = str(meta_of(change.obj).get("name") or "")
        return [Request(namespace=ns, name=n) for ns, n in sorted(self.pods.index_keys(caches.NODE, name))]

    def _map_pod(self, change: managers.Change) -> list[Request]:
        old, new = change.old, change.obj
        if change.type == "update" and old is not None and _tolerations(old) == _tolerations(new) and \
                spec_of(old).get("nodeName") == spec_of(new).get("nodeName"):
            return []
        ns, name = caches.key_of(new)
        return [Request(namespace=ns, name=name)]

    async def _cancel(self, key: tuple[str, str]) -> None:
        if self.pending.pop(key, None) is not None:
            ns, name = key
            await self.recorder.normal(_pod_ref(ns, name), EVENT_REASON, f"Cancelling deletion of Pod {ns}/{name}")

    async def reconcile(self, request: Request) -> Result | None:
        key = (request.namespace, request.name)
        pod = self.pods.get(*key)
        if pod is None:
            await self._cancel(key)
            return None
        if meta_of(pod).get("deletionTimestamp") or status_of(pod).get("phase") in ("Succeeded", "Failed"):
            self.pending.pop(key, None)  # going anyway
            return None
        node_name = str(spec_of(pod).get("nodeName") or "")
        taints = no_execute_taints(self.nodes.get("", node_name) if node_name else None)
        if not taints:
            await self._cancel(key)
            return None
        delay = eviction_delay(taints, _tolerations(pod))
        if delay is None:
            await self._cancel(key)
            return None
        now = self.clock.now()
        scheduled = self.pending.get(key)
        if scheduled is not None and scheduled.uid != uid_of(pod):
            scheduled = None
        if delay == 0:
            if scheduled is not None and scheduled.fire_at > now:
                await self._cancel(key)
            scheduled = Scheduled(uid=uid_of(pod), created=now, fire_at=now)
        elif scheduled is None:
            scheduled = Scheduled(uid=uid_of(pod), created=now, fire_at=now + delay)
            self._log.info("eviction_scheduled", namespace=key[0], name=key[1], at=scheduled.fire_at)
        self.pending[key] = scheduled
        if now < scheduled.fire_at:
            return Result(requeue_after=scheduled.fire_at - now)
        self.pending.pop(key, None)
        if await self._evict(pod):
            self.evicted += 1
        return None

    async def _evict(self, pod: Mapping[str, Any]) -> bool:
        ns, name = caches.key_of(pod)
        uid = uid_of(pod)
        await self.recorder.normal(_pod_ref(ns, name), EVENT_REASON, f"Marking for deletion Pod {ns}/{name}")
        try:
            live = await self.client.get(PODS, name, namespace=ns)
        except errors.NotFound:
            return False
        if uid_of(live) != uid or meta_of(live).get("deletionTimestamp"):
            return False
        existing = next((c for c in status_of(live).get("conditions") or []
                         if isinstance(c, Mapping) and c.get("type") == DISRUPTION_TARGET), None)
        if existing is None or (existing.get("status"), existing.get("reason"), existing.get("message")) != \
                ("True", DISRUPTION_REASON, DISRUPTION_MESSAGE):
            wanted = {"type": DISRUPTION_TARGET, "status": "True", "reason": DISRUPTION_REASON,
                      "message": DISRUPTION_MESSAGE, "lastTransitionTime": clocks.rfc3339(self.clock.now())}
            try:
                await self.client.patch(PODS, name, {"metadata": {"uid": uid}, "status": {"conditions": [wanted]}},
                                        namespace=ns, patch_type="strategic", subresource="status",
                                        field_manager=FIELD_MANAGER)
            except errors.NotFound:
                return False
        try:
            await self.client.delete(PODS, name, namespace=ns, preconditions={"uid": uid})
        except (errors.NotFound, errors.Conflict):
            return False
        self._log.info("pod_evicted", namespace=ns, name=name, node=spec_of(pod).get("nodeName"))
        return True


def _pod_ref(ns: str, name: str) -> dict[str, Any]:
    """The pod as the Events' involved object: kind, apiVersion, name, namespace (as upstream's ref)."""
    return {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": name, "namespace": ns}}


class TaintEvictionController(managers.Controller):
    def on_start(self) -> None:
        reconciler = self.reconciler
        assert isinstance(reconciler, TaintEviction)
        reconciler.on_start()


def new(ctx: managers.ControllerContext, *, workers: int = 4) -> managers.Controller:
    reconciler = TaintEviction(client=ctx.client, informer_factory=ctx.informers, clock=ctx.clock,
                               recorder=ctx.recorder(COMPONENT))
    return TaintEvictionController(name=NAME, reconciler=reconciler, watches=reconciler.watches(),
                                   workers=workers)
