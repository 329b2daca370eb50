"""The device taint eviction controller (kube-controller-manager's `device-taint-eviction-controller`,
KEP-5055): deletes pods whose allocated devices carry a `NoExecute` taint they do not tolerate, and
reports on every DeviceTaintRule what it did (`EvictionInProgress`).

**Taints.** A device's taints are those on it in its pool's ResourceSlices at the pool's highest
generation, plus the taint of every DeviceTaintRule whose `spec.deviceSelector` matches its driver,
pool and device (a missing selector matches nothing, an empty one every device). Only `NoExecute`
taints evict. A taint without `timeAdded` (the server defaults it) counts from its object's
creation.

**Which pods.** A pod is considered when it is bound (`spec.nodeName`), not terminating, not
terminal, and for each `spec.resourceClaims[]` entry whose claim (resolved as upstream: a direct
`resourceClaimName`, or the generated name in `status.resourceClaimStatuses` of a claim the pod
controls) is allocated and has the pod in `status.reservedFor`.

**When.** Per allocated device and NoExecute taint: a toleration *copied into that allocation
result* whose effect is exactly `NoExecute` and which matches the taint either ignores the taint
(no `tolerationSeconds`) or delays it: eviction at `timeAdded + min(tolerationSeconds)` (negative
seconds count as 0). Without a matching toleration the time is `timeAdded`. A claim's time is
the earliest over its devices, a pod's the earliest over its claims. Upstream quirk kept: a
toleration with an empty effect lets the allocator use a device but does not stop eviction.

**Eviction**, on the controller's clock (a `VirtualClock` in tests and `--clock virtual`): GET the
pod (stop if it was replaced or is already terminating), emit the Normal Event
`DeviceTaintManagerEviction` "Marking for deletion", add the pod condition `DisruptionTarget=True`
(reason `DeletionByDeviceTaintManager`) through `pods/status` guarded by resourceVersion, then
DELETE with a UID precondition (not the Eviction API: PodDisruptionBudgets are not consulted). A
scheduled eviction whose cause goes away first (taint removed, toleration, claim released) is
cancelled with "Cancelling deletion".

**DeviceTaintRule status.** Condition `EvictionInProgress` with `observedGeneration`, written on
creation and on every spec change, then at most every 10 s (`RULE_STATUS_PERIOD`) while pods are
affected, in upstream's words: NoExecute → True/`PodsPendingEviction` "N pods need to be evicted
in M different namespaces." or False/`Completed` (pods were evicted) / `NotStarted`; None →
False/`NoEffect` with a one-time dry run ("X published devices selected. Y allocated devices
selected. Z pods would be evicted in M different namespaces if the effect was NoExecute. ...");
other effects → False/`OtherEffect`. Every message ends with "K pods evicted since starting the
controller." once K > 0.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
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
from cp.objects import uid_of as uid_of  # re-exported: the health controller uses `taint_evictor.uid_of`

NAME = "device-taint-eviction"
COMPONENT = "device-taint-eviction-controller"  # Event source and field manager, as upstream
FIELD_MANAGER = COMPONENT

RULE_STATUS_PERIOD = 10.0  # seconds between DeviceTaintRule status refreshes (upstream ruleStatusPeriod)
EVICTED_UID_CACHE = 500  # upstream maxUIDCacheEntries

CONDITION = "EvictionInProgress"
DISRUPTION_TARGET = "DisruptionTarget"
DISRUPTION_REASON = "DeletionByDeviceTaintManager"
DISRUPTION_MESSAGE = "Device Taint manager: deleting due to NoExecute taint"
EVENT_REASON = "DeviceTaintManagerEviction"
EVENT_MARK = "Marking for deletion"
EVENT_CANCEL = "Cancelling deletion"

NO_EXECUTE = "NoExecute"
NO_SCHEDULE = "NoSchedule"
EFFECT_NONE = "None"

PODS = "pods"
CLAIMS = "resourceclaims.resource.k8s.io"
SLICES = "resourceslices.resource.k8s.io"
RULES = "devicetaintrules.resource.k8s.io"

# Cache indexes (shared with the health reporter, which imports them: same names, same functions).
CLAIM_DEVICE_INDEX = "dra.allocated-device"  # claims by "driver|pool|device" of each allocated device
CLAIM_POOL_INDEX = "dra.allocated-pool"  # claims by "driver|pool"
SLICE_POOL_INDEX = "dra.pool"  # slices by "driver|pool"

logger = structlog.get_logger("cplane.controllers.taint_evictor")


# ---------------------------------------------------------------------- small accessors


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def device_key(driver: str, pool: str, device: str) -> str:
    return f"{driver}|{pool}|{device}"


def pool_key(driver: str, pool: str) -> str:
    return f"{driver}|{pool}"


def allocation_results(claim: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """`status.allocation.devices.results` (empty when not allocated)."""
    allocation = _dict(_dict(claim.get("status")).get("allocation"))
    return [r for r in _list(_dict(allocation.get("devices")).get("results")) if isinstance(r, Mapping)]


def is_allocated(claim: Mapping[str, Any]) -> bool:
    return bool(_dict(claim.get("status")).get("allocation"))


def device_of_result(result: Mapping[str, Any]) -> tuple[str, str, str]:
    """(driver, pool, device) of an allocation result."""
    return str(result.get("driver") or ""), str(result.get("pool") or ""), str(result.get("device") or "")


def claim_devices(claim: Mapping[str, Any]) -> list[str]:
    """Index function: `driver|pool|device` of each allocated device."""
    return sorted({device_key(*device_of_result(r)) for r in allocation_results(claim)})


def claim_pools(claim: Mapping[str, Any]) -> list[str]:
    """Index function: `driver|pool` of each allocated device."""
    return sorted({pool_key(*device_of_result(r)[:2]) for r in allocation_results(claim)})


def slice_pool(slice_: Mapping[str, Any]) -> list[str]:
    """Index function: a ResourceSlice's `driver|pool`."""
    spec = _dict(slice_.get("spec"))
    return [pool_key(str(spec.get("driver") or ""), str(_dict(spec.get("pool")).get("name") or ""))]


CLAIM_INDEXERS: dict[str, caches.IndexFunc] = {CLAIM_DEVICE_INDEX: claim_devices,
                                               CLAIM_POOL_INDEX: claim_pools}
SLICE_INDEXERS: dict[str, caches.IndexFunc] = {SLICE_POOL_INDEX: slice_pool}
POD_INDEXERS: dict[str, caches.IndexFunc] = {caches.CLAIM_NAME: caches.by_claim_name}


def is_bound(pod: Mapping[str, Any]) -> bool:
    return bool(_dict(pod.get("spec")).get("nodeName"))


def is_terminating(obj: Mapping[str, Any]) -> bool:
    return bool(caches.meta(obj).get("deletionTimestamp"))


def is_terminal(pod: Mapping[str, Any]) -> bool:
    return _dict(pod.get("status")).get("phase") in ("Succeeded", "Failed")


# ---------------------------------------------------------------------- claims of a pod


def resolve_claim_name(pod: Mapping[str, Any], pod_claim: Mapping[str, Any]) -> tuple[str | None, bool]:
    """`resourceclaim.Name`: (claim name or None, whether the claim must be controlled by the pod)."""
    direct = pod_claim.get("resourceClaimName")
    if direct:
        return str(direct), False
    if not pod_claim.get("resourceClaimTemplateName"):
        return None, False
    for st in _list(_dict(pod.get("status")).get("resourceClaimStatuses")):
        st = _dict(st)
        if st.get("name") == pod_claim.get("name"):
            name = st.get("resourceClaimName")
            return (str(name), True) if name else (None, False)
    return None, False  # not created yet


def is_controlled_by(obj: Mapping[str, Any], owner_uid: str) -> bool:
    return any(_dict(ref).get("controller") and str(_dict(ref).get("uid") or "") == owner_uid
               for ref in _list(caches.meta(obj).get("ownerReferences")))


def is_reserved_for(claim: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    uid = uid_of(pod)
    for ref in _list(_dict(claim.get("status")).get("reservedFor")):
        ref = _dict(ref)
        if not ref.get("apiGroup") and ref.get("resource") == "pods" and str(ref.get("uid") or "") == uid:
            return True
    return False


def pod_claims(pod: Mapping[str, Any], claims: caches.Cache) -> list[tuple[str, dict[str, Any]]]:
    """(pod claim name, ResourceClaim) for each of the pod's claims that exists and belongs to it."""
    ns = str(caches.meta(pod).get("namespace") or "")
    out: list[tuple[str, dict[str, Any]]] = []
    for pc in _list(_dict(pod.get("spec")).get("resourceClaims")):
        pc = _dict(pc)
        name, must_own = resolve_claim_name(pod, pc)
        if name is None:
            continue
        claim = claims.get(ns, name)
        if claim is None or (must_own and not is_controlled_by(claim, uid_of(pod))):
            continue
        out.append((str(pc.get("name") or ""), claim))
    return out


def reserved_pod_names(claim: Mapping[str, Any]) -> list[str]:
    return [str(_dict(r).get("name")) for r in _list(_dict(claim.get("status")).get("reservedFor"))
            if not _dict(r).get("apiGroup") and _dict(r).get("resource") == "pods" and _dict(r).get("name")]


def pods_of_claim(claim: Mapping[str, Any], pods: caches.Cache) -> list[dict[str, Any]]:
    """Cached pods that may use `claim`: those in its reservedFor and those naming it."""
    ns, name = caches.key_of(claim)
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for pod_name in reserved_pod_names(claim):
        pod = pods.get(ns, pod_name)
        if pod is not None:
            found[(ns, pod_name)] = pod
    for pod in pods.by_index(caches.CLAIM_NAME, name):
        if caches.meta(pod).get("namespace") == ns:
            found[caches.key_of(pod)] = pod
    return [found[k] for k in sorted(found)]


# ---------------------------------------------------------------------- taints and tolerations


class Taint(msgspec.Struct, frozen=True, kw_only=True):
    key: str
    value: str = ""
    effect: str
    time_added: float
    rule: str = ""  # the DeviceTaintRule's name ("" for a ResourceSlice taint)
    rule_uid: str = ""


class Eviction(msgspec.Struct, frozen=True, kw_only=True):
    """When a pod (or claim) must go, and the DeviceTaintRules (uid → name) among the causes."""

    when: float
    rules: tuple[tuple[str, str], ...] = ()


def _time(value: Any, fallback: float) -> float:
    if isinstance(value, str) and value:
        try:
            return clocks.parse_time(value)
        except ValueError:
            pass
    return fallback


def _created(obj: Mapping[str, Any]) -> float:
    return _time(caches.meta(obj).get("creationTimestamp"), 0.0)


def rule_taint(rule: Mapping[str, Any], *, effect: str | None = None) -> Taint:
    t = _dict(_dict(rule.get("spec")).get("taint"))
    return Taint(key=str(t.get("key") or ""), value=str(t.get("value") or ""),
                 effect=effect if effect is not None else str(t.get("effect") or ""),
                 time_added=_time(t.get("timeAdded"), _created(rule)),
                 rule=str(caches.meta(rule).get("name") or ""), rule_uid=uid_of(rule))


def rule_matches(rule: Mapping[str, Any], driver: str, pool: str, device: str) -> bool:
    """A rule's selector: nil matches nothing, each set field must be equal."""
    selector = _dict(rule.get("spec")).get("deviceSelector")
    if not isinstance(selector, Mapping):
        return False
    for field, value in (("driver", driver), ("pool", pool), ("device", device)):
        want = selector.get(field)
        if want is not None and str(want) != value:
            return False
    return True


def tolerates(toleration: Mapping[str, Any], taint: Taint) -> bool:
    """`resourceclaim.ToleratesTaint`: effect empty or equal, key empty or equal, then the operator."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.effect:
        return False
    key = toleration.get("key") or ""
    if key and key != taint.key:
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    if operator == "Equal":
        return str(toleration.get("value") or "") == taint.value
    return False


def current_slices(slices: caches.Cache, driver: str, pool: str) -> list[dict[str, Any]]:
    """The pool's ResourceSlices at its highest generation."""
    members = slices.by_index(SLICE_POOL_INDEX, pool_key(driver, pool))
    if not members:
        return []
    newest = max(_generation(s) for s in members)
    return [s for s in members if _generation(s) == newest]


def _generation(slice_: Mapping[str, Any]) -> int:
    return int(_dict(_dict(slice_.get("spec")).get("pool")).get("generation") or 0)


def published_devices(slices: caches.Cache, driver: str,
                      pool: str) -> Iterator[tuple[dict[str, Any], Mapping[str, Any]]]:
    for s in current_slices(slices, driver, pool):
        for device in _list(_dict(s.get("spec")).get("devices")):
            if isinstance(device, Mapping):
                yield s, device


def slice_taints(slices: caches.Cache, driver: str, pool: str, device: str) -> list[Taint]:
    out: list[Taint] = []
    for s, dev in published_devices(slices, driver, pool):
        if dev.get("name") != device:
            continue
        for t in _list(dev.get("taints")):
            t = _dict(t)
            out.append(Taint(key=str(t.get("key") or ""), value=str(t.get("value") or ""),
                             effect=str(t.get("effect") or ""),
                             time_added=_time(t.get("timeAdded"), _created(s))))
        break
    return out


def device_taints(slices: caches.Cache, rules: Iterable[Mapping[str, Any]], driver: str, pool: str,
                  device: str) -> list[Taint]:
    """Every taint of one device: its slice's, then the matching rules' (by rule name)."""
    out = slice_taints(slices, driver, pool, device)
    for rule in sorted(rules, key=lambda r: str(caches.meta(r).get("name") or "")):
        if rule_matches(rule, driver, pool, device):
            out.append(rule_taint(rule))
    return out


def taint_deadline(taint: Taint, tolerations: Sequence[Mapping[str, Any]]) -> float | None:
    """When a NoExecute taint evicts under these tolerations (None: tolerated for ever)."""
    seconds: float | None = None
    for tol in tolerations:
        if tol.get("effect") != NO_EXECUTE or not tolerates(tol, taint):
            continue
        if tol.get("tolerationSeconds") is None:
            return None
        s = max(float(tol["tolerationSeconds"]), 0.0)
        seconds = s if seconds is None else min(seconds, s)
    return taint.time_added + (seconds or 0.0)


class TaintView:
    """Taints as the eviction controller sees them, from the slice and rule caches. `override`
    replaces (or adds) rules by name: the dry run of an effect-None rule passes it as NoExecute."""

    def __init__(self, slices: caches.Cache, rules: caches.Cache,
                 override: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self.slices = slices
        by_name: dict[str, Mapping[str, Any]] = {str(caches.meta(r).get("name") or ""): r for r in rules}
        by_name.update(override or {})
        self.evicting_rules = [r for r in by_name.values()
                               if _dict(_dict(r.get("spec")).get("taint")).get("effect") == NO_EXECUTE]

    def claim_eviction(self, claim: Mapping[str, Any]) -> Eviction | None:
        when: float | None = None
        causes: dict[str, str] = {}
        for result in allocation_results(claim):
            tolerations = [_dict(t) for t in _list(result.get("tolerations"))]
            taints = device_taints(self.slices, self.evicting_rules, *device_of_result(result))
            for taint in taints:
                if taint.effect != NO_EXECUTE:
                    continue
                deadline = taint_deadline(taint, tolerations)
                if deadline is None:
                    continue
                if taint.rule_uid:
                    causes[taint.rule_uid] = taint.rule
                when = deadline if when is None else min(when, deadline)
        if when is None:
            return None
        return Eviction(when=when, rules=tuple(sorted(causes.items())))

    def pod_eviction(self, pod: Mapping[str, Any], claims: caches.Cache) -> Eviction | None:
        """None unless the pod is bound, live, and holds an allocated claim reserved for it whose
        devices carry an untolerated NoExecute taint."""
        if not is_bound(pod) or is_terminating(pod) or is_terminal(pod):
            return None
        when: float | None = None
        causes: dict[str, str] = {}
        for _pc, claim in pod_claims(pod, claims):
            if not is_allocated(claim) or not is_reserved_for(claim, pod):
                continue
            ev = self.claim_eviction(claim)
            if ev is None:
                continue
            causes.update(ev.rules)
            when = ev.when if when is None else min(when, ev.when)
        if when is None:
            return None
        return Eviction(when=when, rules=tuple(sorted(causes.items())))


# ---------------------------------------------------------------------- rule status


def _plural(n: int, one: str, many: str) -> str:
    return f"1 {one}" if n == 1 else f"{n} {many}"


def rule_condition(effect: str, *, pending_pods: int = 0, pending_namespaces: int = 0, evicted: int = 0,
                   published_devices: int = 0, allocated_devices: int = 0) -> tuple[str, str, str]:
    """(status, reason, message) of `EvictionInProgress`, worded as upstream."""
    status, message = "False", ""
    if effect == NO_EXECUTE:
        if pending_pods > 0:
            status, reason = "True", "PodsPendingEviction"
            message = ("1 pod needs to be evicted in " if pending_pods == 1
                       else f"{pending_pods} pods need to be evicted in ")
            message += ("1 namespace." if pending_namespaces == 1
                        else f"{pending_namespaces} different namespaces.")
        elif evicted > 0:
            reason = "Completed"
        else:
            reason = "NotStarted"
    elif effect == EFFECT_NONE:
        reason = "NoEffect"
        message = (f"{_plural(published_devices, 'published device', 'published devices')} selected. "
                   f"{_plural(allocated_devices, 'allocated device', 'allocated devices')} selected. "
                   + ("1 pod would be evicted in " if pending_pods == 1
                      else f"{pending_pods} pods would be evicted in ")
                   + ("1 namespace " if pending_namespaces == 1
                      else f"{pending_namespaces} different namespaces ")
                   + "if the effect was NoExecute. This information will not be updated again. "
                     "Recreate the DeviceTaintRule to trigger an update.")
    else:
        reason = "OtherEffect"
        message = "Eviction only happens for the NoExecute effect."
    if evicted > 0:
        message = (message + " " if message else "") + \
            f"{_plural(evicted, 'pod', 'pods')} evicted since starting the controller."
    return status, reason, message


def find_condition(obj: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    for c in _list(_dict(obj.get("status")).get("conditions")):
        if _dict(c).get("type") == type_:
            return _dict(c)
    return None


# ---------------------------------------------------------------------- the controller


class _UidCache:
    """A bounded set of pod uids already evicted (upstream's uidCache)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: collections.OrderedDict[str, None] = collections.OrderedDict()

    def add(self, uid: str) -> None:
        self._items[uid] = None
        self._items.move_to_end(uid)
        while len(self._items) > self._size:
            self._items.popitem(last=False)

    def __contains__(self, uid: object) -> bool:
        return uid in self._items


def _pod_request(ns: str, name: str) -> Request:
    return Request(resource=PODS, namespace=ns, name=name)


def _rule_request(name: str) -> Request:
    return Request(resource=RULES, name=name)


class TaintEvictor:
    def __init__(self, *, client: clients.Client, informer_factory: informers.InformerFactory,
                 recorder: managers.EventRecorder, clock: clocks.Clock, use_rules: bool = True) -> None:
        self.client = client
        self.clock = clock
        self.recorder = recorder
        self.pods = informer_factory.informer(PODS, indexers=POD_INDEXERS).cache
        self.claims = informer_factory.informer(CLAIMS, indexers=CLAIM_INDEXERS).cache
        self.slices = informer_factory.informer(SLICES, indexers=SLICE_INDEXERS).cache
        # DRADeviceTaintRules off: no rule informer, DeviceTaintRules taint nothing (upstream passes none).
        self.use_rules = use_rules
        self.rules = informer_factory.informer(RULES).cache if use_rules else caches.Cache()
        self.controller: managers.Controller | None = None
        # Pods with an eviction scheduled: (namespace, name) → (uid, eviction).
        self.pending: dict[tuple[str, str], tuple[str, Eviction]] = {}
        self.evicted = _UidCache(EVICTED_UID_CACHE)
        self.evicted_by_rule: dict[str, int] = {}  # rule uid → pods evicted since start
        self._log = logger

    def watches(self) -> list[managers.Watch]:
        return [
            managers.Watch(kind=clients.resolve(PODS), map=self.map_pod, indexers=POD_INDEXERS),
            managers.Watch(kind=clients.resolve(CLAIMS), map=self.map_claim, indexers=CLAIM_INDEXERS),
            managers.Watch(kind=clients.resolve(SLICES), map=self.map_slice, indexers=SLICE_INDEXERS),
            *([managers.Watch(kind=clients.resolve(RULES), map=self.map_rule)] if self.use_rules else []),
        ]

    def view(self, override: Mapping[str, Mapping[str, Any]] | None = None) -> TaintView:
        return TaintView(self.slices, self.rules, override)

    def _add_after(self, request: Request, delay: float) -> None:
        if self.controller is not None and self.controller.queue is not None:
            self.controller.queue.add_after(request, delay)

    # ------------------------------------------------------------------ event mapping

    @staticmethod
    def map_pod(change: managers.Change) -> list[Request]:
        pod, old = change.obj, change.old
        if not _dict(pod.get("spec")).get("resourceClaims"):
            return []
        if old is not None:
            before, after = _dict(old.get("status")), _dict(pod.get("status"))
            if (_dict(old.get("spec")).get("nodeName") == _dict(pod.get("spec")).get("nodeName")
                    and before.get("resourceClaimStatuses") == after.get("resourceClaimStatuses")
                    and before.get("phase") == after.get("phase")
                    and is_terminating(old) == is_terminating(pod) and uid_of(old) == uid_of(pod)):
                return []  # nothing that matters here (e.g. our own DisruptionTarget condition)
        ns, name = caches.key_of(pod)
        return [_pod_request(ns, name)]

    def _pods_of(self, claims: Iterable[Mapping[str, Any]]) -> list[Request]:
        out: dict[tuple[str, str], None] = {}
        for claim in claims:
            ns = str(caches.meta(claim).get("namespace") or "")
            for pod_name in reserved_pod_names(claim):
                out[(ns, pod_name)] = None
        return [_pod_request(ns, name) for ns, name in out]

    def map_claim(self, change: managers.Change) -> list[Request]:
        claim, old = change.obj, change.old
        if old is not None:
            before, after = _dict(old.get("status")), _dict(claim.get("status"))
            if (before.get("allocation") == after.get("allocation")
                    and before.get("reservedFor") == after.get("reservedFor")
                    and uid_of(old) == uid_of(claim)):
                return []
        return self._pods_of([claim] + ([old] if old is not None else []))

    def _claims_in_pool(self, key: str) -> list[dict[str, Any]]:
        return self.claims.by_index(CLAIM_POOL_INDEX, key)

    def map_slice(self, change: managers.Change) -> list[Request]:
        objs = [change.obj] + ([change.old] if change.old is not None else [])
        keys = {k for o in objs for k in slice_pool(o)}
        out: list[Request] = []
        for key in sorted(keys):
            # Only pools with a NoExecute taint somewhere (before or after) can change an eviction.
            tainted = any(_has_no_execute(o) for o in objs) or any(
                _has_no_execute(s) for s in self.slices.by_index(SLICE_POOL_INDEX, key))
            if tainted:
                out.extend(self._pods_of(self._claims_in_pool(key)))
        return out

    def map_rule(self, change: managers.Change) -> list[Request]:
        rule, old = change.obj, change.old
        name = str(caches.meta(rule).get("name") or "")
        out: list[Request] = []
        if change.type == "delete":
            self.evicted_by_rule.pop(uid_of(rule), None)
        elif old is None or old.get("spec") != rule.get("spec") or uid_of(old) != uid_of(rule):
            out.append(_rule_request(name))  # status at once on creation and on every spec change
        if old is not None and old.get("spec") == rule.get("spec") and uid_of(old) == uid_of(rule):
            return out  # a status write
        affected = [r for r in (rule, old) if r is not None
                    and _dict(_dict(r.get("spec")).get("taint")).get("effect") == NO_EXECUTE]
        if not affected:
            return out
        claims = [c for c in self.claims
                  if any(rule_matches(r, *device_of_result(res))
                         for r in affected for res in allocation_results(c))]
        return out + self._pods_of(claims)

    # ------------------------------------------------------------------ reconcile

    async def reconcile(self, request: Request) -> Result | None:
        if request.resource == RULES:
            return await self.reconcile_rule(request.name)
        return await self.reconcile_pod(request.namespace, request.name)

    async def reconcile_pod(self, namespace: str, name: str) -> Result | None:
        key = (namespace, name)
        pod = self.pods.get(namespace, name)
        if pod is None or is_terminating(pod) or is_terminal(pod):
            self.pending.pop(key, None)  # gone or going anyway: nothing to cancel out loud
            return None
        uid = uid_of(pod)
        scheduled = self.pending.get(key)
        if scheduled is not None and scheduled[0] != uid:
            del self.pending[key]  # that pod was replaced by one of the same name
        eviction = self.view().pod_eviction(pod, self.claims)
        if eviction is None:
            if self.pending.pop(key, None) is not None:
                self._log.info("pod_eviction_cancelled", namespace=namespace, name=name)
                await self.recorder.normal(pod, EVENT_REASON, EVENT_CANCEL)
            return None
        if uid in self.evicted:
            return None
        self.pending[key] = (uid, eviction)
        for _rule_uid, rule_name in eviction.rules:
            self._add_after(_rule_request(rule_name), RULE_STATUS_PERIOD)
        delay = eviction.when - self.clock.now()
        if delay > 0:
            return Result(requeue_after=delay)
        counted = await self._evict(pod)
        self.pending.pop(key, None)
        self.evicted.add(uid)
        if counted:
            self._log.info("pod_evicted", namespace=namespace, name=name, uid=uid,
                           rules=[n for _, n in eviction.rules],
                           latency=round(self.clock.now() - eviction.when, 3))
            for rule_uid, rule_name in eviction.rules:
                self.evicted_by_rule[rule_uid] = self.evicted_by_rule.get(rule_uid, 0) + 1
                self._add_after(_rule_request(rule_name), RULE_STATUS_PERIOD)
        return None

    async def _evict(self, cached: Mapping[str, Any]) -> bool:
        """Condition, then DELETE with a UID precondition. False when there was nothing to do (the
        pod is gone or was replaced)."""
        ns, name = caches.key_of(cached)
        uid = uid_of(cached)
        try:
            pod = await self.client.get(PODS, name, namespace=ns)
        except errors.NotFound:
            return False
        if uid_of(pod) != uid:
            return False
        if is_terminating(pod):
            return True  # already being deleted: upstream counts it as done
        await self.recorder.normal(pod, EVENT_REASON, EVENT_MARK)
        current = find_condition(pod, DISRUPTION_TARGET)
        wanted = {"type": DISRUPTION_TARGET, "status": "True", "reason": DISRUPTION_REASON,
                  "message": DISRUPTION_MESSAGE}
        if current is None or any(current.get(k) != v for k, v in wanted.items()):
            since = current.get("lastTransitionTime") if current is not None and \
                current.get("status") == "True" else None
            wanted["lastTransitionTime"] = str(since) if since else clocks.rfc3339(self.clock.now())
            # A strategic merge patch keyed by condition type (as upstream's PatchPodStatus): it
            # cannot conflict with the kubelet or the health reporter writing other status fields.
            try:
                patch = {"metadata": {"uid": uid}, "status": {"conditions": [wanted]}}
                await self.client.patch(PODS, name, patch, namespace=ns, patch_type="strategic",
                                        subresource="status", field_manager=FIELD_MANAGER)
            except errors.NotFound:
                return False
        try:
            await self.client.delete(PODS, name, namespace=ns, preconditions={"uid": uid})
        except errors.NotFound:
            return False
        except errors.Conflict:
            return False  # replaced by a pod of the same name in the meantime
        return True

    # ------------------------------------------------------------------ rule status

    def count_pending(self, rule: Mapping[str, Any], view: TaintView) -> tuple[int, int]:
        """Pods (not terminating) whose eviction has this rule among its causes, and their namespaces."""
        uid = uid_of(rule)
        namespaces: set[str] = set()
        count = 0
        for pod in self.pods:
            if not _dict(pod.get("spec")).get("resourceClaims"):
                continue
            eviction = view.pod_eviction(pod, self.claims)
            if eviction is not None and any(u == uid for u, _ in eviction.rules):
                count += 1
                namespaces.add(str(caches.meta(pod).get("namespace") or ""))
        return count, len(namespaces)

    def count_devices(self, rule: Mapping[str, Any]) -> tuple[int, int]:
        """Devices the rule selects: published ones (pools' current slices) and allocated ones."""
        published = 0
        for key in self.slices.index_values(SLICE_POOL_INDEX):
            driver, _, pool = key.partition("|")
            published += sum(1 for _s, dev in published_devices(self.slices, driver, pool)
                             if rule_matches(rule, driver, pool, str(dev.get("name") or "")))
        allocated = sum(1 for claim in self.claims for r in allocation_results(claim)
                        if rule_matches(rule, *device_of_result(r)))
        return published, allocated

    async def reconcile_rule(self, name: str) -> Result | None:
        rule = self.rules.get("", name)
        if rule is None:
            return None
        generation = int(caches.meta(rule).get("generation") or 0)
        existing = find_condition(rule, CONDITION)
        now = self.clock.now()
        if existing is not None and int(existing.get("observedGeneration") or 0) == generation:
            since = now - _time(existing.get("lastTransitionTime"), 0.0)
            if since < RULE_STATUS_PERIOD:
                return Result(requeue_after=RULE_STATUS_PERIOD - since)
        effect = str(_dict(_dict(rule.get("spec")).get("taint")).get("effect") or "")
        evicted = self.evicted_by_rule.get(uid_of(rule), 0)
        if effect == NO_EXECUTE:
            pods, namespaces = self.count_pending(rule, self.view())
            status, reason, message = rule_condition(effect, pending_pods=pods, pending_namespaces=namespaces,
                                                     evicted=evicted)
        elif effect == EFFECT_NONE:
            simulated = cache_copy(rule)
            simulated["spec"]["taint"]["effect"] = NO_EXECUTE
            pods, namespaces = self.count_pending(rule, self.view({name: simulated}))
            published, allocated = self.count_devices(rule)
            status, reason, message = rule_condition(effect, pending_pods=pods, pending_namespaces=namespaces,
                                                     evicted=evicted, published_devices=published,
                                                     allocated_devices=allocated)
        else:
            status, reason, message = rule_condition(effect, evicted=evicted)
        if existing is not None and (existing.get("status"), existing.get("reason"), existing.get("message"),
                                     int(existing.get("observedGeneration") or 0)) == \
                (status, reason, message, generation):
            return None
        condition = {"type": CONDITION, "status": status, "observedGeneration": generation,
                     "lastTransitionTime": clocks.rfc3339(now), "reason": reason, "message": message}

        def with_condition(obj: Mapping[str, Any]) -> dict[str, Any] | None:
            st = caches.deep_copy(_dict(obj.get("status")))
            conditions = [c for c in _list(st.get("conditions")) if isinstance(c, dict)]
            at = next((i for i, c in enumerate(conditions) if c.get("type") == CONDITION), None)
            if at is None:
                conditions.append(condition)
            else:
                conditions[at] = condition
            st["conditions"] = conditions
            return st

        if not await write_status(self.client, RULES, rule, with_condition, field_manager=FIELD_MANAGER):
            return None
        self._log.info("rule_status", rule=name, status=status, reason=reason, message=message)
        return None


def cache_copy(obj: Mapping[str, Any]) -> dict[str, Any]:
    return caches.deep_copy(obj)


STATUS_WRITE_ATTEMPTS = 5


async def write_status(client: clients.Client, resource: str, obj: Mapping[str, Any],
                       compute: Callable[[Mapping[str, Any]], dict[str, Any] | None], *,
                       field_manager: str) -> bool:
    """PUT `compute(obj)` as the object's status, guarded by its resourceVersion; on a conflict
    read it again and recompute, a few times, before giving up (raising Conflict). Retrying here
    rather than through the work queue keeps a busy object from waiting on a virtual clock's
    backoff. `compute` returns None when nothing needs writing. False when the object is gone
    (or was replaced) or nothing was written."""
    current: Mapping[str, Any] = obj
    uid = uid_of(obj)
    ns, name = caches.key_of(obj)
    for _attempt in range(STATUS_WRITE_ATTEMPTS):
        status = compute(current)
        if status is None:
            return False
        updated = caches.deep_copy(current)
        updated["status"] = status
        try:
            await client.update_status(resource, updated, field_manager=field_manager)
            return True
        except errors.NotFound:
            return False
        except errors.Conflict:
            try:
                current = await client.get(resource, name, namespace=ns)
            except errors.NotFound:
                return False
            if uid_of(current) != uid:
                return False
    raise errors.Conflict(f"could not update the status of {resource} {name}: kept conflicting")


def _has_no_execute(slice_: Mapping[str, Any]) -> bool:
    return any(_dict(t).get("effect") == NO_EXECUTE
               for d in _list(_dict(slice_.get("spec")).get("devices"))
               for t in _list(_dict(d).get("taints")))


def new(ctx: managers.ControllerContext, *, workers: int = 2, use_rules: bool = True) -> managers.Controller:
    """The controller; `use_rules=False` with DRADeviceTaintRules off (kube-controller-manager does not
    start it at all with DRADeviceTaints off: `cp.cli.controllers.gated_out`)."""
    evictor = TaintEvictor(client=ctx.client, informer_factory=ctx.informers, clock=ctx.clock,
                           recorder=ctx.recorder(COMPONENT), use_rules=use_rules)
    controller = managers.Controller(name=NAME, reconciler=evictor, watches=evictor.watches(),
                                     workers=workers)
    evictor.controller = controller
    return controller
