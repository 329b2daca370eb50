"""The ReplicaSet controller: keeps `spec.replicas` pods running for each ReplicaSet
(kube-controller-manager's `replicaset` controller, `pkg/controller/replicaset`).

Per ReplicaSet key (`namespace/name`), read from the informer caches:

1. **Claim pods** (the ControllerRefManager rules): active pods (not terminating, not
   Succeeded/Failed) controlled by this ReplicaSet and still matching its selector are kept; owned
   pods that no longer match are released (our ownerReference removed); orphans that match are
   adopted (a controller ownerReference added) — after a live GET confirms the ReplicaSet is
   still there and not being deleted. Both are merge patches guarded by the pod's resourceVersion.
2. **Manage replicas**, only when the expectations for the key are satisfied (see below) and the
   ReplicaSet is not being deleted:
   - too few: create the missing pods (at most `burst_replicas` = 500 per pass) from
     `spec.template`, `generateName: <rs>-`, with a controller ownerReference; in slow-start
     batches of 1, 2, 4, ... that stop at the first failure, so 1,000 pods go out quickly but a
     failing create (quota, admission, validation) costs one request, not a thousand;
   - too many: delete the surplus, worst pods first (upstream `ActivePodsWithRanks`): unassigned
     < assigned; Pending < Unknown < Running; not ready < ready; lower
     `controller.kubernetes.io/pod-deletion-cost`; more active sibling pods (same owner) on the
     same node; ready for less time (log2 buckets); more container restarts; newer (log2
     buckets); then uid.
3. **Status**: replicas (active claimed pods), fullyLabeledReplicas (pods carrying every template
   label), readyReplicas, availableReplicas (ready for more than `minReadySeconds` on the
   injected clock), observedGeneration, and a `ReplicaFailure` condition (FailedCreate /
   FailedDelete) while creates or deletes fail. Written with PUT /status (resourceVersion
   precondition, one re-GET and retry on failure as upstream), only when something changed.
   When pods are ready but not yet available the key is requeued for the moment the first of
   them becomes available.

**Expectations** (upstream `UIDTrackingControllerExpectations`): before creating N pods the
controller expects N pod ADDED events, before deleting it expects the deletion of those exact
pods; pod events observed by the informer lower the counts. While expectations are pending the
controller does not create or delete again, so a watch lagging behind our own writes never
causes double creation. Expectations expire after 5 minutes on the clock.

Events (component `replicaset-controller`): SuccessfulCreate "Created pod: x", FailedCreate
"Error creating: ...", SuccessfulDelete "Deleted pod: x", FailedDelete "Error deleting: ...".

The helpers for pod readiness, controller references and adoption are shared with the
Deployment controller.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import math
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

import structlog

from controllers.runtime import cache as caches
from controllers.runtime import client as clients
from controllers.runtime import informer as informers
from controllers.runtime import manager as managers
from controllers.runtime import reconcile
from cp import clock as clocks
from cp import errors, selectors
from cp import resources as res
from cp.objects import labels_of as labels_of
from cp.objects import meta_of
from cp.objects import spec_of as spec_of
from cp.objects import status_of as status_of
from cp.objects import uid_of as uid_of  # these: re-exported, other controllers use `replicaset.<name>`

NAME = "replicaset"
COMPONENT = "replicaset-controller"
FIELD_MANAGER = "replicaset-controller"
BURST_REPLICAS = 500  # upstream `burstReplicas`: creates/deletes per sync
SLOW_START_INITIAL_BATCH = 1  # upstream `SlowStartInitialBatchSize`
EXPECTATIONS_TIMEOUT = 5 * 60.0  # upstream `ExpectationsTimeout`
STATUS_UPDATE_RETRIES = 1
AVAILABILITY_SLACK = 0.01  # seconds past the availability moment at which to look again
DELETION_COST_ANNOTATION = "controller.kubernetes.io/pod-deletion-cost"
NAMESPACE_TERMINATING_CAUSE = "NamespaceTerminating"

meta = meta_of  # re-exported under the name the other controllers use

REPLICASETS = clients.resolve("replicasets.apps")
PODS = clients.resolve("pods")

INDEXERS = {caches.OWNER_UID: caches.by_owner_uid}

logger = structlog.get_logger("cplane.controllers.replicaset")


# ---------------------------------------------------------------------- object helpers


def namespace_of(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("namespace") or "")


def name_of(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("name") or "")


def key_of(obj: Mapping[str, Any]) -> str:
    """`namespace/name`, the key expectations are kept under (upstream `KeyFunc`)."""
    return f"{namespace_of(obj)}/{name_of(obj)}"


def replicas_of(obj: Mapping[str, Any]) -> int:
    """spec.replicas (defaulted to 1 by the server; absent means 1 as upstream's defaulting)."""
    value = spec_of(obj).get("replicas")
    return int(value) if value is not None else 1


def is_deleting(obj: Mapping[str, Any]) -> bool:
    return bool(meta(obj).get("deletionTimestamp"))


def controller_ref(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ownerReference with `controller: true` (upstream `metav1.GetControllerOf`)."""
    for ref in meta(obj).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller") is True:
            return ref
    return None


def new_controller_ref(owner: Mapping[str, Any], kind: res.ResourceKind) -> dict[str, Any]:
    """upstream `metav1.NewControllerRef`: controller and blockOwnerDeletion both true."""
    return {"apiVersion": kind.api_version, "kind": kind.kind, "name": name_of(owner), "uid": uid_of(owner),
            "controller": True, "blockOwnerDeletion": True}


def creation_time(obj: Mapping[str, Any]) -> float:
    stamp = meta(obj).get("creationTimestamp")
    if not stamp:
        return 0.0
    try:
        return clocks.parse_time(str(stamp))
    except ValueError:
        return 0.0


def by_creation(obj: Mapping[str, Any]) -> tuple[float, str]:
    """Sort key of upstream `ReplicaSetsByCreationTimestamp`: oldest first, then by name."""
    return (creation_time(obj), name_of(obj))


def selector_of(obj: Mapping[str, Any]) -> selectors.LabelSelector | None:
    """spec.selector as a LabelSelector; None when missing or invalid (upstream skips the object)."""
    sel = spec_of(obj).get("selector")
    if not isinstance(sel, Mapping):
        return None
    try:
        return selectors.from_label_selector_object(sel)
    except (ValueError, errors.StatusError):
        return None


def is_pod_active(pod: Mapping[str, Any]) -> bool:
    """upstream `controller.IsPodActive`: not Succeeded/Failed and not being deleted."""
    phase = status_of(pod).get("phase")
    return phase not in ("Succeeded", "Failed") and not is_deleting(pod)


def pod_condition(pod: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    for cond in status_of(pod).get("conditions") or []:
        if isinstance(cond, Mapping) and cond.get("type") == type_:
            return cond
    return None


def is_pod_ready(pod: Mapping[str, Any]) -> bool:
    cond = pod_condition(pod, "Ready")
    return cond is not None and cond.get("status") == "True"


def ready_since(pod: Mapping[str, Any]) -> float | None:
    """When the pod's Ready condition last turned (None: not ready or no timestamp)."""
    cond = pod_condition(pod, "Ready")
    if cond is None or cond.get("status") != "True" or not cond.get("lastTransitionTime"):
        return None
    try:
        return clocks.parse_time(str(cond["lastTransitionTime"]))
    except ValueError:
        return None


def is_pod_available(pod: Mapping[str, Any], min_ready_seconds: int, now: float) -> bool:
    """upstream `podutil.IsPodAvailable`: ready, and ready for more than minReadySeconds."""
    if not is_pod_ready(pod):
        return False
    if min_ready_seconds <= 0:
        return True
    since = ready_since(pod)
    return since is not None and since + min_ready_seconds < now


def conditions_of(status: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [dict(c) for c in status.get("conditions") or [] if isinstance(c, Mapping)]


def get_condition(conditions: Sequence[Mapping[str, Any]], type_: str) -> Mapping[str, Any] | None:
    return next((c for c in conditions if c.get("type") == type_), None)


def message_of(exc: BaseException) -> str:
    return exc.message if isinstance(exc, errors.StatusError) else str(exc)


def has_status_cause(exc: BaseException, cause_type: str) -> bool:
    """upstream `apierrors.HasStatusCause`: the Status details carry a cause of that type."""
    body = getattr(exc, "status_body", None)
    details = body.get("details") if isinstance(body, Mapping) else getattr(exc, "details", None)
    causes = details.get("causes") if isinstance(details, Mapping) else None
    return any(isinstance(c, Mapping) and (c.get("reason") == cause_type or c.get("type") == cause_type)
               for c in causes or [])


def compact(status: Mapping[str, Any], *, keep: Iterable[str] = ()) -> dict[str, Any]:
    """Drop zero, null and empty fields (Go's `omitempty`), except those in `keep`."""
    kept = set(keep)
    return {k: v for k, v in status.items() if k in kept or v not in (None, 0, "", [], {})}


# ---------------------------------------------------------------------- adoption (ControllerRefManager)


AdoptCheck = Callable[[], Awaitable[None]]


class RefManager:
    """Claims dependents for one controller object, as upstream's `BaseControllerRefManager`:
    keep what we control and still match, release what we control but no longer match, adopt
    matching orphans (after `can_adopt` confirmed the controller, once per claim pass)."""

    def __init__(self, *, client: clients.Client, controller: Mapping[str, Any],
                 controller_kind: res.ResourceKind, dependent_kind: res.ResourceKind,
                 selector: selectors.LabelSelector, can_adopt: AdoptCheck,
                 field_manager: str) -> None:
        self.client = client
        self.controller = controller
        self.controller_kind = controller_kind
        self.dependent_kind = dependent_kind
        self.selector = selector
        self._can_adopt = can_adopt
        self._adopt_checked = False
        self._adopt_error: errors.StatusError | None = None
        self.field_manager = field_manager

    async def can_adopt(self) -> None:
        """Run the adoption check once per pass (upstream wraps it in a sync.Once)."""
        if not self._adopt_checked:
            try:
                await self._can_adopt()
            except errors.StatusError as exc:
                self._adopt_error = exc
            self._adopt_checked = True
        if self._adopt_error is not None:
            raise self._adopt_error

    async def claim(self, objects: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """The dependents this controller owns after the pass; raises the first adopt/release
        error after trying every object (the caller requeues)."""
        claimed: list[dict[str, Any]] = []
        failures: list[BaseException] = []
        for obj in objects:
            try:
                if await self._claim_one(obj):
                    claimed.append(dict(obj))
            except errors.StatusError as exc:
                failures.append(exc)
        if failures:
            raise failures[0]
        return claimed

    async def _claim_one(self, obj: Mapping[str, Any]) -> bool:
        ref = controller_ref(obj)
        controller_uid = uid_of(self.controller)
        matches = self.selector.matches(labels_of(obj))
        if ref is not None:
            if str(ref.get("uid") or "") != controller_uid:
                return False  # someone else's
            if matches:
                return True
            if is_deleting(self.controller):
                return False
            await self._release(obj)
            return False
        if is_deleting(self.controller) or not matches or is_deleting(obj):
            return False
        if namespace_of(self.controller) and namespace_of(self.controller) != namespace_of(obj):
            return False
        try:
            await self.can_adopt()
        except errors.StatusError as exc:
            raise errors.Conflict(f"can't adopt {self.dependent_kind.kind} {key_of(obj)} "
                                  f"({uid_of(obj)}): {exc.message}") from exc
        return await self._adopt(obj)

    async def _adopt(self, obj: Mapping[str, Any]) -> bool:
        refs = [dict(r) for r in meta(obj).get("ownerReferences") or [] if isinstance(r, Mapping)]
        refs.append(new_controller_ref(self.controller, self.controller_kind))
        patch = {"metadata": {"resourceVersion": meta(obj).get("resourceVersion"), "ownerReferences": refs}}
        try:
            await self.client.patch(self.dependent_kind, name_of(obj), patch, namespace=namespace_of(obj),
                                    field_manager=self.field_manager)
        except errors.NotFound:
            return False
        logger.info("adopted", kind=self.dependent_kind.kind, object=key_of(obj),
                    controller=f"{self.controller_kind.kind}/{name_of(self.controller)}")
        return True

    async def _release(self, obj: Mapping[str, Any]) -> None:
        controller_uid = uid_of(self.controller)
        refs = [dict(r) for r in meta(obj).get("ownerReferences") or []
                if isinstance(r, Mapping) and str(r.get("uid") or "") != controller_uid]
        patch = {"metadata": {"resourceVersion": meta(obj).get("resourceVersion"), "ownerReferences": refs or None}}
        try:
            await self.client.patch(self.dependent_kind, name_of(obj), patch, namespace=namespace_of(obj),
                                    field_manager=self.field_manager)
        except (errors.NotFound, errors.Invalid):
            return  # gone, or already released / replaced (upstream ignores both)
        logger.info("released", kind=self.dependent_kind.kind, object=key_of(obj),
                    controller=f"{self.controller_kind.kind}/{name_of(self.controller)}")


def recheck_controller(client: clients.Client, kind: res.ResourceKind, obj: Mapping[str, Any]) -> AdoptCheck:
    """upstream `RecheckDeletionTimestamp` around a live GET: adoption only by a controller that
    still exists with the same uid and is not being deleted."""

    async def check() -> None:
        fresh = await client.get(kind, name_of(obj), namespace=namespace_of(obj))
        if uid_of(fresh) != uid_of(obj):
            raise errors.Conflict(f"original {kind.kind} {key_of(obj)} is gone: got uid {uid_of(fresh)}, "
                                  f"wanted {uid_of(obj)}")
        if is_deleting(fresh):
            raise errors.Conflict(f"{key_of(obj)} has just been deleted at {meta(fresh).get('deletionTimestamp')}")

    return check


async def create_pod(client: clients.Client, recorder: Any, owner: Mapping[str, Any],
                     pod: dict[str, Any]) -> None:
    """upstream's `PodControl.CreatePods`: create `pod` for its controller `owner`, with the
    controller's `SuccessfulCreate` "Created pod: x" or `FailedCreate` "Error creating: ..." Event (the
    error raised again); a namespace being terminated is nothing to report."""
    try:
        created = await client.create(PODS, pod, namespace=namespace_of(owner))
    except errors.StatusError as exc:
        if has_status_cause(exc, NAMESPACE_TERMINATING_CAUSE):
            return
        await recorder.warning(owner, "FailedCreate", f"Error creating: {exc.message}")
        raise
    await recorder.normal(owner, "SuccessfulCreate", f"Created pod: {name_of(created)}")


# ---------------------------------------------------------------------- expectations


@dataclasses.dataclass(slots=True)
class _Expectation:
    add: int
    delete: int
    timestamp: float
    uids: set[str] = dataclasses.field(default_factory=set)


class Expectations:
    """How many creations and which deletions a controller still waits to observe, per key
    (upstream `ControllerExpectations` + `UIDTrackingControllerExpectations`)."""

    def __init__(self, clock: clocks.Clock, *, timeout: float = EXPECTATIONS_TIMEOUT) -> None:
        self.clock = clock
        self.timeout = timeout
        self._items: dict[str, _Expectation] = {}

    def satisfied(self, key: str) -> bool:
        """True when nothing is pending, the record expired, or there is no record."""
        exp = self._items.get(key)
        if exp is None:
            return True
        if exp.add <= 0 and exp.delete <= 0:
            return True
        return self.clock.now() - exp.timestamp > self.timeout

    def expect_creations(self, key: str, count: int) -> None:
        uids = self._items[key].uids if key in self._items else set()
        self._items[key] = _Expectation(add=count, delete=0, timestamp=self.clock.now(), uids=uids)

    def expect_deletions(self, key: str, pod_keys: Iterable[str]) -> None:
        keys = set(pod_keys)
        self._items[key] = _Expectation(add=0, delete=len(keys), timestamp=self.clock.now(), uids=keys)

    def expect(self, key: str, *, creations: int, deletions: Iterable[str]) -> None:
        """Both at once (the DaemonSet controller creates and deletes in one pass)."""
        keys = set(deletions)
        self._items[key] = _Expectation(add=creations, delete=len(keys), timestamp=self.clock.now(), uids=keys)

    def creation_observed(self, key: str) -> None:
        exp = self._items.get(key)
        if exp is not None:
            exp.add -= 1

    def deletion_observed(self, key: str, pod_key: str) -> None:
        exp = self._items.get(key)
        if exp is not None and pod_key in exp.uids:
            exp.uids.discard(pod_key)
            exp.delete -= 1

    def delete(self, key: str) -> None:
        self._items.pop(key, None)

    def pending(self, key: str) -> tuple[int, int] | None:
        """(creations, deletions) still expected, for tests and logs."""
        exp = self._items.get(key)
        return None if exp is None else (exp.add, exp.delete)


async def slow_start_batch(count: int, initial: int, fn: Callable[[], Awaitable[None]]
                           ) -> tuple[int, BaseException | None]:
    """Call `fn` `count` times in batches of initial, 2*initial, 4*initial ... (each batch
    concurrently), stopping after the first batch with a failure. Returns (successes, first error)."""
    remaining = count
    successes = 0
    batch = min(remaining, initial)
    while batch > 0:
        results = await asyncio.gather(*(fn() for _ in range(batch)), return_exceptions=True)
        failures = [r for r in results if isinstance(r, BaseException)]
        for failure in failures:
            if not isinstance(failure, Exception):
                raise failure  # cancellation and friends
        successes += batch - len(failures)
        if failures:
            return successes, failures[0]
        remaining -= batch
        batch = min(2 * batch, remaining)
    return successes, None


# ---------------------------------------------------------------------- deletion ranking


_PHASE_ORDINAL = {"Pending": 0, "Unknown": 1, "Running": 2}


def _deletion_cost(pod: Mapping[str, Any]) -> int:
    value = (meta(pod).get("annotations") or {}).get(DELETION_COST_ANNOTATION)
    try:
        return int(value) if value is not None else 0
    except (TypeError, ValueError):
        return 0


def _max_restarts(pod: Mapping[str, Any]) -> int:
    counts = [int(s.get("restartCount") or 0) for s in status_of(pod).get("containerStatuses") or []
              if isinstance(s, Mapping)]
    return max(counts, default=0)


def _log_rank(stamp: float, now: float) -> int:
    """upstream `logarithmicRankDiff`'s bucket: int(log2(age in ns)), -1 when not in the past."""
    age_ns = (now - stamp) * 1e9
    return int(math.log2(age_ns)) if age_ns > 0 else -1


def _newer_first(t1: float, t2: float, now: float, uid1: str, uid2: str) -> int:
    """-1 if the first is to be deleted first by age (zero < newer < older), 1 if the second, 0 tie.
    Uses upstream's logarithmic buckets (LogarithmicScaleDown, on by default)."""
    if t1 == 0.0 or t2 == 0.0:
        if t1 == t2:
            return 0
        return -1 if t1 == 0.0 else 1
    diff = _log_rank(t1, now) - _log_rank(t2, now)
    if diff == 0:
        return -1 if uid1 < uid2 else (1 if uid1 > uid2 else 0)
    return -1 if diff < 0 else 1


def rank_pods_for_deletion(pods: Sequence[Mapping[str, Any]], related: Iterable[Mapping[str, Any]],
                           now: float) -> list[Mapping[str, Any]]:
    """Pods ordered most-deletable first (upstream `ActivePodsWithRanks` with the rank being
    the number of active related pods on the same node)."""
    on_node: dict[str, int] = {}
    for pod in related:
        if is_pod_active(pod):
            node = str(spec_of(pod).get("nodeName") or "")
            on_node[node] = on_node.get(node, 0) + 1
    ranked = [(pod, on_node.get(str(spec_of(pod).get("nodeName") or ""), 0)) for pod in pods]

    def cmp(a: tuple[Mapping[str, Any], int], b: tuple[Mapping[str, Any], int]) -> int:
        pa, ra = a
        pb, rb = b
        na, nb = str(spec_of(pa).get("nodeName") or ""), str(spec_of(pb).get("nodeName") or "")
        if na != nb and (not na or not nb):
            return -1 if not na else 1  # 1. unassigned first
        oa = _PHASE_ORDINAL.get(str(status_of(pa).get("phase") or ""), 0)
        ob = _PHASE_ORDINAL.get(str(status_of(pb).get("phase") or ""), 0)
        if oa != ob:
            return -1 if oa < ob else 1  # 2. Pending < Unknown < Running
        ready_a, ready_b = is_pod_ready(pa), is_pod_ready(pb)
        if ready_a != ready_b:
            return -1 if not ready_a else 1  # 3. not ready first
        ca, cb = _deletion_cost(pa), _deletion_cost(pb)
        if ca != cb:
            return -1 if ca < cb else 1  # 4. lower deletion cost first
        if ra != rb:
            return -1 if ra > rb else 1  # 5. doubled-up first
        if ready_a and ready_b:  # 6. ready for a shorter time first
            ta, tb = ready_since(pa) or 0.0, ready_since(pb) or 0.0
            if ta != tb:
                order = _newer_first(ta, tb, now, uid_of(pa), uid_of(pb))
                if order:
                    return order
        restarts_a, restarts_b = _max_restarts(pa), _max_restarts(pb)
        if restarts_a != restarts_b:
            return -1 if restarts_a > restarts_b else 1  # 7. more restarts first
        ta, tb = creation_time(pa), creation_time(pb)
        if ta != tb:
            return _newer_first(ta, tb, now, uid_of(pa), uid_of(pb))  # 8. newer first
        return 0

    return [pod for pod, _ in sorted(ranked, key=functools.cmp_to_key(cmp))]


# ---------------------------------------------------------------------- status


def calculate_status(rs: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], manage_error: BaseException | None,
                     *, now: float) -> dict[str, Any]:
    """The ReplicaSet status the claimed active `pods` imply (upstream `calculateStatus`);
    observedGeneration is left as it was (set when written)."""
    status = dict(status_of(rs))
    template_labels = labels_of(spec_of(rs).get("template") or {})
    min_ready = int(spec_of(rs).get("minReadySeconds") or 0)
    fully = ready = available = 0
    for pod in pods:
        pod_labels = labels_of(pod)
        if all(pod_labels.get(k) == v for k, v in template_labels.items()):
            fully += 1
        if is_pod_ready(pod):
            ready += 1
            if is_pod_available(pod, min_ready, now):
                available += 1
    conditions = conditions_of(status)
    failure = get_condition(conditions, "ReplicaFailure")
    if manage_error is not None and failure is None:
        diff = len(pods) - replicas_of(rs)
        reason = "FailedCreate" if diff < 0 else ("FailedDelete" if diff > 0 else "")
        conditions.append({"type": "ReplicaFailure", "status": "True",
                           "lastTransitionTime": clocks.rfc3339(now), "reason": reason,
                           "message": message_of(manage_error)})
    elif manage_error is None and failure is not None:
        conditions = [c for c in conditions if c.get("type") != "ReplicaFailure"]
    status.update(replicas=len(pods), fullyLabeledReplicas=fully, readyReplicas=ready,
                  availableReplicas=available, conditions=conditions)
    return compact(status, keep=("replicas",))


def status_unchanged(rs: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    old = status_of(rs)
    generation = int(meta(rs).get("generation") or 0)
    fields = ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas")
    return (all(int(old.get(f) or 0) == int(new.get(f) or 0) for f in fields)
            and generation == int(old.get("observedGeneration") or 0)
            and conditions_of(old) == conditions_of(new))


def next_availability(rs: Mapping[str, Any], pods: Iterable[Mapping[str, Any]], now: float) -> float | None:
    """Seconds until the first ready-but-not-yet-available pod becomes available (None: none)."""
    min_ready = int(spec_of(rs).get("minReadySeconds") or 0)
    if min_ready <= 0:
        return None
    waits = []
    for pod in pods:
        since = ready_since(pod)
        if since is not None and not is_pod_available(pod, min_ready, now):
            waits.append(max(since + min_ready - now, 0.0) + AVAILABILITY_SLACK)
    return min(waits, default=None)


# ---------------------------------------------------------------------- the controller


class ReplicaSetController:
    def __init__(self, *, client: clients.Client, informer_factory: informers.InformerFactory,
                 recorder: managers.EventRecorder, clock: clocks.Clock,
                 burst_replicas: int = BURST_REPLICAS) -> None:
        self.client = client
        self.informers = informer_factory
        self.recorder = recorder
        self.clock = clock
        self.burst_replicas = burst_replicas
        self.expectations = Expectations(clock)
        self.rs_cache = informer_factory.informer(REPLICASETS, indexers=INDEXERS).cache
        self.pod_cache = informer_factory.informer(PODS, indexers=INDEXERS).cache

    def watches(self) -> list[managers.Watch]:
        return [managers.Watch(kind=REPLICASETS, map=self.map_replicaset, indexers=INDEXERS),
                managers.Watch(kind=PODS, map=self.map_pod, indexers=INDEXERS)]

    # ------------------------------------------------------------------ event mapping

    @staticmethod
    def _request(obj: Mapping[str, Any]) -> reconcile.Request:
        return reconcile.Request(namespace=namespace_of(obj), name=name_of(obj))

    def map_replicaset(self, change: managers.Change) -> list[reconcile.Request]:
        if change.type == "delete":
            self.expectations.delete(key_of(change.obj))
        return [self._request(change.obj)]

    def resolve_controller(self, namespace: str, ref: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """The cached ReplicaSet a controller reference points at (kind and uid must match)."""
        if ref is None or ref.get("kind") != REPLICASETS.kind or \
                str(ref.get("apiVersion") or "").partition("/")[0] != "apps":
            return None
        rs = self.rs_cache.get(namespace, str(ref.get("name") or ""))
        if rs is None or uid_of(rs) != str(ref.get("uid") or ""):
            return None
        return rs

    def replicasets_selecting(self, pod: Mapping[str, Any]) -> list[dict[str, Any]]:
        """ReplicaSets in the pod's namespace whose selector matches its labels (orphan adoption)."""
        labels = labels_of(pod)
        out = []
        for rs in self.rs_cache.list(namespace_of(pod)):
            sel = selector_of(rs)
            if sel is not None and not sel.empty and sel.matches(labels):
                out.append(rs)
        return out

    def _pod_deleted(self, pod: Mapping[str, Any]) -> list[reconcile.Request]:
        rs = self.resolve_controller(namespace_of(pod), controller_ref(pod))
        if rs is None:
            return []
        self.expectations.deletion_observed(key_of(rs), key_of(pod))
        return [self._request(rs)]

    def map_pod(self, change: managers.Change) -> list[reconcile.Request]:
        pod = change.obj
        ns = namespace_of(pod)
        if change.type == "delete":
            return self._pod_deleted(pod)
        if change.type == "add":
            if is_deleting(pod):
                return self._pod_deleted(pod)
            ref = controller_ref(pod)
            if ref is not None:
                rs = self.resolve_controller(ns, ref)
                if rs is None:
                    return []
                self.expectations.creation_observed(key_of(rs))
                return [self._request(rs)]
            return [self._request(rs) for rs in self.replicasets_selecting(pod)]
        old = change.old or {}
        if meta(old).get("resourceVersion") == meta(pod).get("resourceVersion"):
            return []
        labels_changed = labels_of(old) != labels_of(pod)
        if is_deleting(pod):
            out = self._pod_deleted(pod)
            if labels_changed:
                out += self._pod_deleted(old)
            return out
        cur_ref, old_ref = controller_ref(pod), controller_ref(old)
        out = []
        ref_changed = cur_ref != old_ref
        if ref_changed and old_ref is not None:
            rs = self.resolve_controller(ns, old_ref)
            if rs is not None:
                out.append(self._request(rs))
        if cur_ref is not None:
            rs = self.resolve_controller(ns, cur_ref)
            if rs is not None:
                out.append(self._request(rs))
            return out
        if labels_changed or ref_changed:
            out += [self._request(rs) for rs in self.replicasets_selecting(pod)]
        return out

    # ------------------------------------------------------------------ reconcile

    async def reconcile(self, request: reconcile.Request) -> reconcile.Result | None:
        key = f"{request.namespace}/{request.name}"
        cached = self.rs_cache.get(request.namespace, request.name)
        if cached is None:
            self.expectations.delete(key)
            return None
        rs = caches.deep_copy(cached)
        needs_sync = self.expectations.satisfied(key)
        selector = selector_of(rs)
        if selector is None:
            logger.warning("invalid_selector", replicaset=key)
            return None
        active = [p for p in self.pod_cache.list(request.namespace) if is_pod_active(p)]
        manager = RefManager(client=self.client, controller=rs, controller_kind=REPLICASETS,
                             dependent_kind=PODS, selector=selector, field_manager=FIELD_MANAGER,
                             can_adopt=recheck_controller(self.client, REPLICASETS, rs))
        pods = await manager.claim(active)
        manage_error: BaseException | None = None
        if needs_sync and not is_deleting(rs):
            try:
                await self.manage_replicas(pods, rs)
            except Exception as exc:  # reported in the status condition, then retried
                manage_error = exc
        now = self.clock.now()
        updated = await self.update_status(rs, calculate_status(rs, pods, manage_error, now=now))
        if manage_error is not None:
            raise manage_error
        wait = next_availability(updated, pods, self.clock.now())
        return reconcile.Result(requeue_after=wait) if wait is not None else None

    async def manage_replicas(self, pods: Sequence[Mapping[str, Any]], rs: Mapping[str, Any]) -> None:
        key = key_of(rs)
        diff = len(pods) - replicas_of(rs)
        if diff < 0:
            want = min(-diff, self.burst_replicas)
            self.expectations.expect_creations(key, want)
            logger.info("creating_pods", replicaset=key, need=replicas_of(rs), creating=want)
            successes, error = await slow_start_batch(want, SLOW_START_INITIAL_BATCH,
                                                      functools.partial(self.create_pod, rs))
            for _ in range(want - successes):  # never attempted or failed: not expected any more
                self.expectations.creation_observed(key)
            if error is not None:
                raise error
        elif diff > 0:
            surplus = min(diff, self.burst_replicas)
            victims = self.pods_to_delete(rs, pods, surplus)
            self.expectations.expect_deletions(key, [key_of(p) for p in victims])
            logger.info("deleting_pods", replicaset=key, need=replicas_of(rs), deleting=surplus)
            results = await asyncio.gather(*(self.delete_pod(rs, p) for p in victims), return_exceptions=True)
            failures = [r for r in results if isinstance(r, BaseException)]
            for failure in failures:
                if not isinstance(failure, Exception):
                    raise failure
            if failures:
                raise failures[0]

    def pods_to_delete(self, rs: Mapping[str, Any], pods: Sequence[Mapping[str, Any]],
                       count: int) -> list[Mapping[str, Any]]:
        if count >= len(pods):
            return list(pods)[:count]
        return rank_pods_for_deletion(pods, self.related_pods(rs), self.clock.now())[:count]

    def related_pods(self, rs: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Pods of every ReplicaSet with the same controller as `rs` (just its own without one):
        upstream `getIndirectlyRelatedPods`, used to spread deletions across nodes."""
        ref = controller_ref(rs)
        siblings = [rs]
        if ref is not None:
            siblings = [other for other in self.rs_cache.list(namespace_of(rs))
                        if (controller_ref(other) or {}).get("uid") == ref.get("uid")] or [rs]
        seen: dict[str, dict[str, Any]] = {}
        for sibling in siblings:
            sel = selector_of(sibling)
            if sel is None:
                continue
            for pod in self.pod_cache.list(namespace_of(rs)):
                if uid_of(pod) not in seen and sel.matches(labels_of(pod)):
                    seen[uid_of(pod)] = pod
        return list(seen.values())

    def pod_from_template(self, rs: Mapping[str, Any]) -> dict[str, Any]:
        """upstream `GetPodFromTemplate`: template labels/annotations/finalizers/spec, a
        generateName from the ReplicaSet's name, and the controller reference."""
        template = spec_of(rs).get("template") or {}
        tmeta = template.get("metadata") or {}
        pod_meta: dict[str, Any] = {"generateName": f"{name_of(rs)}-", "namespace": namespace_of(rs),
                                    "ownerReferences": [new_controller_ref(rs, REPLICASETS)]}
        for field in ("labels", "annotations", "finalizers"):
            if tmeta.get(field):
                pod_meta[field] = caches.deep_copy({"v": tmeta[field]})["v"]
        return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta,
                "spec": caches.deep_copy(template.get("spec") or {})}

    async def create_pod(self, rs: Mapping[str, Any]) -> None:
        pod = self.pod_from_template(rs)
        if not pod["metadata"].get("labels"):
            raise ValueError("unable to create pods, no labels")
        await create_pod(self.client, self.recorder, rs, pod)

    async def delete_pod(self, rs: Mapping[str, Any], pod: Mapping[str, Any]) -> None:
        try:
            await self.client.delete(PODS, name_of(pod), namespace=namespace_of(pod))
        except errors.NotFound:
            self.expectations.deletion_observed(key_of(rs), key_of(pod))  # no event will come
            return
        except errors.StatusError as exc:
            self.expectations.deletion_observed(key_of(rs), key_of(pod))
            await self.recorder.warning(rs, "FailedDelete", f"Error deleting: {exc.message}")
            raise
        await self.recorder.normal(rs, "SuccessfulDelete", f"Deleted pod: {name_of(pod)}")

    async def update_status(self, rs: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
        """PUT the status unless nothing changed; on failure re-GET once and retry (upstream
        `updateReplicaSetStatus` with statusUpdateRetries = 1)."""
        if status_unchanged(rs, status):
            return rs
        generation = int(meta(rs).get("generation") or 0)
        if generation:
            status["observedGeneration"] = generation
        current = rs
        for attempt in range(STATUS_UPDATE_RETRIES + 1):
            body = dict(current)
            body["status"] = status
            try:
                return await self.client.update_status(REPLICASETS, body, field_manager=FIELD_MANAGER)
            except errors.StatusError:
                if attempt >= STATUS_UPDATE_RETRIES:
                    raise
                current = await self.client.get(REPLICASETS, name_of(rs), namespace=namespace_of(rs))
        raise AssertionError("unreachable")


def new(ctx: managers.ControllerContext, *, workers: int = 5) -> managers.Controller:
    controller = ReplicaSetController(client=ctx.client, informer_factory=ctx.informers,
                                      recorder=ctx.recorder(COMPONENT), clock=ctx.clock)
    return managers.Controller(name=NAME, reconciler=controller, watches=controller.watches(), workers=workers)
