"""The device health reporter: what the kubelet's DRA manager does with a driver's `NodeHealth`
stream (KEP-4680), plus an optional remediation policy that taints unhealthy devices.

**Health signals** are cluster-scoped `sim.cplane.dev/v1alpha1` `DeviceHealth` objects, one per
device, named `health_object_name(driver, pool, device)` (`<driver>.<pool>.<device>`, lower-cased;
when that is not a valid DNS subdomain as is, or is too long, the invalid characters become `-`
and `-<8 hex of sha256("driver/pool/device")>` is appended):

    spec:
      driver: gpu.example.com     # the DRA driver
      pool: node-1                # the ResourceSlice pool
      device: gpu-0
      health: Healthy             # Healthy | Unhealthy | Unknown (anything else counts as Unknown)
      message: "..."              # optional, shown in the pod status (≤1024 characters)
      lastUpdated: "2027-01-15T08:00:00Z"   # optional; see below
      timeoutSeconds: 30          # optional; default 30 (the kubelet's health_check_timeout_seconds)

The simulated fleet's fake drivers publish `Healthy` for their devices (`health_object`,
`heartbeat`); users flip one with `kubectl patch devicehealth NAME --type merge -p
'{"spec":{"health":"Unhealthy","message":"ECC errors"}}'` or `cplane device health set
DRIVER/POOL/DEVICE unhealthy --message "ECC errors"` (`set_health`, `add_cli`).

**Staleness.** A report's time is the latest of `spec.lastUpdated`, the times of its
`metadata.managedFields` entries (the server's clock at each write that changed it) and its
creation; a device whose report is older than its timeout (30 s by default) is `Unknown`, on the
controller's clock (virtual in tests and with `--clock virtual`). A device without any report is
`Unknown`, as the kubelet reports devices of drivers without the health service.

**Pod status.** For every bound pod and every container (init containers too) that uses a claim
through `resources.claims[]`, the reporter keeps `allocatedResourcesStatus` current: one entry per
container claim reference, named `claim:<podClaim>` or `claim:<podClaim>/<request>`, listing the
claim's allocated devices (only the named request's devices when a request is given; the kubelet
lists all the claim's devices there) as `{resourceID: <driver>/<pool>/<device>, health,
message?}`; entries without devices are dropped. Claims come from `spec.resourceClaims` resolved as
upstream (direct name, or the generated name of a claim the pod controls), and from
`status.extendedResourceClaimStatus` (entry `claim:<claim>/<request>`). A container without a
status entry yet gets a minimal one (`ready: false`, `restartCount: 0`) holding just that field.
Writes are `PUT pods/status` guarded by resourceVersion (`containerStatuses` is atomic), retried
inline on conflict; a writer that keeps dropping the field is not fought for ever (the same
content is written at most `MAX_SAME_WRITES` times in a row, then a warning is logged).

**Claim status.** For an `Unhealthy` device, the claim's `status.devices[]` entry of that device
gets condition `Ready=False`, reason `DeviceUnhealthy`, with the message; when the device is
`Healthy` again a condition this reporter set becomes `Ready=True`, reason `DeviceHealthy`.
`Unknown` leaves the condition alone.

**Remediation** (off by default; `taint_unhealthy="NoSchedule"|"NoExecute"`, `--taint-unhealthy`):
an `Unhealthy` device gets a DeviceTaintRule `device-unhealthy.<health object name>` selecting
exactly that device, with taint `sim.cplane.dev/device-unhealthy=true:<effect>`, labelled
`app.kubernetes.io/managed-by=cplane-device-health` and owned by the DeviceHealth object (so it goes
when the report goes); it is deleted when the device is `Healthy` again and left alone while it
is `Unknown`. With NoExecute that closes the loop: health → taint → the taint evictor deletes the
pod → its workload controller recreates it → the allocator picks an untainted device.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import msgspec
import structlog

from controllers import taint_evictor as te
from controllers.runtime import cache as caches
from controllers.runtime import client as clients
from controllers.runtime import informer as informers
from controllers.runtime import manager as managers
from controllers.runtime.reconcile import Request, Result
from cp import clock as clocks
from cp import errors, sim
from cp import resources as res

NAME = "device-health"
COMPONENT = "device-health-reporter"
FIELD_MANAGER = COMPONENT

DEVICE_HEALTHS = f"devicehealths.{res.SIM_GROUP}"
API_VERSION = f"{res.SIM_GROUP}/{res.SIM_VERSION}"
KIND = "DeviceHealth"

HEALTHY, UNHEALTHY, UNKNOWN = "Healthy", "Unhealthy", "Unknown"
HEALTH_VALUES = (HEALTHY, UNHEALTHY, UNKNOWN)
DEFAULT_TIMEOUT = 30.0  # seconds without an update before a device is Unknown (kubelet default)
MESSAGE_MAX = 1024
MAX_SAME_WRITES = 10  # identical allocatedResourcesStatus writes in a row before giving up on a pod

READY = "Ready"
REASON_UNHEALTHY = "DeviceUnhealthy"
REASON_HEALTHY = "DeviceHealthy"

TAINT_KEY = f"{res.SIM_GROUP}/device-unhealthy"
TAINT_VALUE = "true"
TAINT_EFFECTS = ("NoSchedule", "NoExecute")
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "cplane-device-health"
SOURCE_ANNOTATION = f"{res.SIM_GROUP}/device-health"
RULE_PREFIX = "device-unhealthy."

DEVICE_INDEX = "sim.device"  # DeviceHealth objects by "driver|pool|device"

logger = structlog.get_logger("cplane.controllers.health")

_dict = te._dict
_list = te._list


# ---------------------------------------------------------------------- the DeviceHealth object

_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def _is_subdomain(name: str) -> bool:
    return 0 < len(name) <= 253 and all(_LABEL.match(part) for part in name.split("."))


def health_object_name(driver: str, pool: str, device: str) -> str:
    """`<driver>.<pool>.<device>` as a DNS subdomain (see the module docstring)."""
    raw = f"{driver}.{pool}.{device}".lower()
    if _is_subdomain(raw):
        return raw
    digest = hashlib.sha256(f"{driver}/{pool}/{device}".encode()).hexdigest()[:8]
    parts = []
    for part in raw.split("."):
        part = re.sub(r"[^a-z0-9-]+", "-", part).strip("-")
        if part:
            parts.append(part)
    base = ".".join(parts)[: 253 - 9].rstrip(".-")
    return f"{base}-{digest}" if base else digest


def normalize_health(value: Any) -> str:
    text = str(value or "").strip().lower()
    for h in HEALTH_VALUES:
        if text == h.lower():
            return h
    return UNKNOWN


def health_object(driver: str, pool: str, device: str, health: str = HEALTHY, message: str = "",
                  now: float | None = None, *, timeout_seconds: int | None = None) -> dict[str, Any]:
    """A DeviceHealth object for one device, ready to create (what a fake driver publishes).
    `now` (seconds since the epoch, on the server's clock) becomes `spec.lastUpdated`."""
    spec: dict[str, Any] = {"driver": driver, "pool": pool, "device": device,
                            "health": normalize_health(health)}
    if message:
        spec["message"] = message
    if now is not None:
        spec["lastUpdated"] = clocks.rfc3339(now)
    if timeout_seconds is not None:
        spec["timeoutSeconds"] = int(timeout_seconds)
    return {"apiVersion": API_VERSION, "kind": KIND,
            "metadata": {"name": health_object_name(driver, pool, device)}, "spec": spec}


def validate_device_health(obj: Mapping[str, Any]) -> list[errors.Cause]:
    """What the server rejects for a DeviceHealth (the rules live in `cp.sim`)."""
    return sim.device_health_causes(dict(obj))


def device_of(dh: Mapping[str, Any]) -> tuple[str, str, str]:
    spec = _dict(dh.get("spec"))
    return str(spec.get("driver") or ""), str(spec.get("pool") or ""), str(spec.get("device") or "")


def by_device(dh: Mapping[str, Any]) -> list[str]:
    """Index function: the `driver|pool|device` a DeviceHealth reports on."""
    driver, pool, device = device_of(dh)
    return [te.device_key(driver, pool, device)] if driver and device else []


DH_INDEXERS: dict[str, caches.IndexFunc] = {DEVICE_INDEX: by_device}


def last_update(dh: Mapping[str, Any]) -> float:
    meta = caches.meta(dh)
    times = [te._time(_dict(dh.get("spec")).get("lastUpdated"), 0.0),
             te._time(meta.get("creationTimestamp"), 0.0)]
    times.extend(te._time(_dict(e).get("time"), 0.0) for e in _list(meta.get("managedFields")))
    return max(times)


class Health(msgspec.Struct, frozen=True, kw_only=True):
    state: str
    message: str = ""
    expires: float | None = None  # when it turns Unknown for want of updates


def effective_health(reports: Sequence[Mapping[str, Any]], now: float, *,
                     default_timeout: float = DEFAULT_TIMEOUT) -> Health:
    """A device's health from its reports (the newest wins) at time `now`."""
    if not reports:
        return Health(state=UNKNOWN)
    dh = max(reports, key=last_update)
    spec = _dict(dh.get("spec"))
    last = last_update(dh)
    timeout = spec.get("timeoutSeconds")
    seconds = float(timeout) if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) \
        and timeout > 0 else default_timeout
    if now >= last + seconds:
        return Health(state=UNKNOWN, message=f"no health update since {clocks.rfc3339(last)} "
                                             f"(timeout {seconds:g}s)")
    message = str(spec.get("message") or "")
    if len(message) > MESSAGE_MAX:
        message = message[:MESSAGE_MAX - 3] + "..."
    return Health(state=normalize_health(spec.get("health")), message=message, expires=last + seconds)


# ---------------------------------------------------------------------- pod status


def _claim_entries(pod: Mapping[str, Any], container: Mapping[str, Any],
                   claims: Mapping[str, Mapping[str, Any]], ext_claim: Mapping[str, Any] | None,
                   health: Callable[[str, str, str], Health]) -> list[dict[str, Any]]:
    """The desired `allocatedResourcesStatus` of one container."""
    entries: list[dict[str, Any]] = []
    seen: set[str] = set()

    def add(name: str, results: Iterable[Mapping[str, Any]]) -> None:
        if name in seen:
            return
        resources: list[dict[str, Any]] = []
        ids: set[str] = set()
        for r in results:
            driver, pool, device = te.device_of_result(r)
            rid = f"{driver}/{pool}/{device}"
            if rid in ids:
                continue
            ids.add(rid)
            h = health(driver, pool, device)
            item: dict[str, Any] = {"resourceID": rid, "health": h.state}
            if h.message:
                item["message"] = h.message
            resources.append(item)
        if resources:
            seen.add(name)
            entries.append({"name": name, "resources": resources})

    for ref in _list(_dict(container.get("resources")).get("claims")):
        ref = _dict(ref)
        claim = claims.get(str(ref.get("name") or ""))
        if claim is None:
            continue
        request = str(ref.get("request") or "")
        results = [r for r in te.allocation_results(claim) if not request or r.get("request") == request
                   or str(r.get("request") or "").startswith(request + "/")]
        add(f"claim:{ref.get('name')}" + (f"/{request}" if request else ""), results)
    if ext_claim is not None:
        ext = _dict(_dict(pod.get("status")).get("extendedResourceClaimStatus"))
        claim_name = str(ext.get("resourceClaimName") or "")
        for mapping in _list(ext.get("requestMappings")):
            mapping = _dict(mapping)
            if mapping.get("containerName") != container.get("name"):
                continue
            request = str(mapping.get("requestName") or "")
            add(f"claim:{claim_name}/{request}",
                [r for r in te.allocation_results(ext_claim) if r.get("request") == request])
    return entries


def desired_pod_status(pod: Mapping[str, Any], claims_cache: caches.Cache,
                       health: Callable[[str, str, str], Health]) -> dict[str, Any] | None:
    """The pod's `status` with every claim-using container's `allocatedResourcesStatus` current,
    or None when nothing changes."""
    ns = str(caches.meta(pod).get("namespace") or "")
    claims = {name: claim for name, claim in te.pod_claims(pod, claims_cache) if te.is_allocated(claim)}
    ext_claim: Mapping[str, Any] | None = None
    ext_name = _dict(_dict(pod.get("status")).get("extendedResourceClaimStatus")).get("resourceClaimName")
    if ext_name:
        candidate = claims_cache.get(ns, str(ext_name))
        if candidate is not None and te.is_controlled_by(candidate, te.uid_of(pod)) and \
                te.is_allocated(candidate):
            ext_claim = candidate
    spec = _dict(pod.get("spec"))
    status = caches.deep_copy(_dict(pod.get("status")))
    changed = False
    for containers_field, statuses_field in (("initContainers", "initContainerStatuses"),
                                             ("containers", "containerStatuses")):
        statuses = [s for s in _list(status.get(statuses_field)) if isinstance(s, dict)]
        by_name = {str(s.get("name") or ""): s for s in statuses}
        added = False
        for container in _list(spec.get(containers_field)):
            container = _dict(container)
            cname = str(container.get("name") or "")
            uses = bool(_list(_dict(container.get("resources")).get("claims"))) or ext_claim is not None
            current = by_name.get(cname)
            if not uses and (current is None or "allocatedResourcesStatus" not in current):
                continue
            wanted = _claim_entries(pod, container, claims, ext_claim, health) if uses else []
            if current is None:
                if not wanted:
                    continue
                current = {"name": cname, "image": str(container.get("image") or ""), "imageID": "",
                           "ready": False, "restartCount": 0}
                by_name[cname] = current
                added = True
            if wanted:
                if current.get("allocatedResourcesStatus") != wanted:
                    current["allocatedResourcesStatus"] = wanted
                    changed = True
            elif "allocatedResourcesStatus" in current:
                del current["allocatedResourcesStatus"]
                changed = True
        if added:
            order = [str(_dict(c).get("name") or "") for c in _list(spec.get(containers_field))]
            status[statuses_field] = sorted(by_name.values(), key=lambda s: order.index(s["name"])
                                            if s["name"] in order else len(order))
            changed = True
    return status if changed else None


def _fingerprint(pod: Mapping[str, Any], status: Mapping[str, Any]) -> bytes:
    """What `allocatedResourcesStatus` a status write would carry, per container."""
    out = []
    for field in ("initContainerStatuses", "containerStatuses"):
        for cs in _list(status.get(field)):
            cs = _dict(cs)
            out.append((field, cs.get("name"), cs.get("allocatedResourcesStatus")))
    return msgspec.json.encode(out)


# ---------------------------------------------------------------------- claim status


def _set_condition(conditions: list[dict[str, Any]], *, status: str, reason: str, message: str,
                   generation: int, now: float) -> bool:
    current = next((c for c in conditions if c.get("type") == READY), None)
    if current is not None and (current.get("status"), current.get("reason"), current.get("message"),
                                current.get("observedGeneration")) == (status, reason, message, generation):
        return False
    transition = clocks.rfc3339(now)
    if current is not None and current.get("status") == status and current.get("lastTransitionTime"):
        transition = str(current["lastTransitionTime"])
    wanted = {"type": READY, "status": status, "observedGeneration": generation,
              "lastTransitionTime": transition, "reason": reason, "message": message}
    if current is None:
        conditions.append(wanted)
    else:
        current.clear()
        current.update(wanted)
    return True


def desired_claim_status(claim: Mapping[str, Any], health: Callable[[str, str, str], Health],
                         now: float) -> dict[str, Any] | None:
    """The claim's `status` with `Ready` conditions reflecting device health, or None if unchanged."""
    status = caches.deep_copy(_dict(claim.get("status")))
    devices = [d for d in _list(status.get("devices")) if isinstance(d, dict)]
    generation = int(caches.meta(claim).get("generation") or 0)
    changed = False
    for result in te.allocation_results(claim):
        driver, pool, device = te.device_of_result(result)
        share = result.get("shareID")
        h = health(driver, pool, device)
        entry = next((d for d in devices if (d.get("driver"), d.get("pool"), d.get("device"),
                                             d.get("shareID")) == (driver, pool, device, share)), None)
        ready = next((c for c in _list((entry or {}).get("conditions"))
                      if _dict(c).get("type") == READY), None)
        if h.state == UNHEALTHY:
            want = ("False", REASON_UNHEALTHY, h.message or "the device is unhealthy")
        elif h.state == HEALTHY and ready is not None and _dict(ready).get("reason") == REASON_UNHEALTHY:
            want = ("True", REASON_HEALTHY, h.message or "the device is healthy again")
        else:
            continue
        if entry is None:
            entry = {"driver": driver, "pool": pool, "device": device}
            if share:
                entry["shareID"] = share
            devices.append(entry)
        conditions = [c for c in _list(entry.get("conditions")) if isinstance(c, dict)]
        if _set_condition(conditions, status=want[0], reason=want[1], message=want[2], generation=generation,
                          now=now):
            entry["conditions"] = conditions
            changed = True
    if not changed:
        return None
    status["devices"] = devices
    return status


# ---------------------------------------------------------------------- remediation rules


def rule_name_for(health_name: str) -> str:
    name = RULE_PREFIX + health_name
    if len(name) <= 253:
        return name
    digest = hashlib.sha256(health_name.encode()).hexdigest()[:8]
    return f"{name[:253 - 9].rstrip('.-')}-{digest}"


def remediation_rule(dh: Mapping[str, Any], effect: str) -> dict[str, Any]:
    driver, pool, device = device_of(dh)
    meta = caches.meta(dh)
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule",
        "metadata": {
            "name": rule_name_for(str(meta.get("name") or "")),
            "labels": {MANAGED_BY_LABEL: MANAGED_BY},
            "annotations": {SOURCE_ANNOTATION: str(meta.get("name") or "")},
            "ownerReferences": [{"apiVersion": API_VERSION, "kind": KIND, "name": str(meta.get("name") or ""),
                                 "uid": str(meta.get("uid") or ""), "controller": True}],
        },
        "spec": {"deviceSelector": {"driver": driver, "pool": pool, "device": device},
                 "taint": {"key": TAINT_KEY, "value": TAINT_VALUE, "effect": effect}},
    }


def is_managed_rule(rule: Mapping[str, Any]) -> bool:
    return _dict(caches.meta(rule).get("labels")).get(MANAGED_BY_LABEL) == MANAGED_BY


# ---------------------------------------------------------------------- the controller


def _request(resource: str, namespace: str, name: str) -> Request:
    return Request(resource=resource, namespace=namespace, name=name)


class HealthReporter:
    def __init__(self, *, client: clients.Client, informer_factory: informers.InformerFactory,
                 clock: clocks.Clock, recorder: managers.EventRecorder | None = None,
                 taint_unhealthy: str | None = None, default_timeout: float = DEFAULT_TIMEOUT) -> None:
        if taint_unhealthy is not None and taint_unhealthy not in TAINT_EFFECTS:
            raise ValueError(f"taint_unhealthy must be one of {', '.join(TAINT_EFFECTS)} (or None)")
        self.client = client
        self.clock = clock
        self.recorder = recorder
        self.taint_unhealthy = taint_unhealthy
        self.default_timeout = default_timeout
        self.pods = informer_factory.informer(te.PODS, indexers=te.POD_INDEXERS).cache
        self.claims = informer_factory.informer(te.CLAIMS, indexers=te.CLAIM_INDEXERS).cache
        self.reports = informer_factory.informer(DEVICE_HEALTHS, indexers=DH_INDEXERS).cache
        self.rules = informer_factory.informer(te.RULES).cache if taint_unhealthy else None
        self.controller: managers.Controller | None = None
        # Pod → (uid, fingerprint of the last allocatedResourcesStatus written, times in a row).
        self._rewrites: dict[tuple[str, str], tuple[str, bytes, int]] = {}
        self._log = logger

    def watches(self) -> list[managers.Watch]:
        out = [
            managers.Watch(kind=clients.resolve(DEVICE_HEALTHS), map=self.map_report, indexers=DH_INDEXERS),
            managers.Watch(kind=clients.resolve(te.PODS), map=self.map_pod, indexers=te.POD_INDEXERS),
            managers.Watch(kind=clients.resolve(te.CLAIMS), map=self.map_claim, indexers=te.CLAIM_INDEXERS),
        ]
        if self.taint_unhealthy:
            out.append(managers.Watch(kind=clients.resolve(te.RULES), map=self.map_rule))
        return out

    def health(self, driver: str, pool: str, device: str) -> Health:
        reports = self.reports.by_index(DEVICE_INDEX, te.device_key(driver, pool, device))
        return effective_health(reports, self.clock.now(), default_timeout=self.default_timeout)

    # ------------------------------------------------------------------ event mapping

    def users_of(self, keys: Iterable[str]) -> list[Request]:
        """Claims holding any of these devices, and the pods using those claims."""
        out: dict[Request, None] = {}
        for key in keys:
            for claim in self.claims.by_index(te.CLAIM_DEVICE_INDEX, key):
                ns, name = caches.key_of(claim)
                out[_request(te.CLAIMS, ns, name)] = None
                for pod in te.pods_of_claim(claim, self.pods):
                    out[_request(te.PODS, *caches.key_of(pod))] = None
        return list(out)

    def map_report(self, change: managers.Change) -> list[Request]:
        keys = set(by_device(change.obj)) | (set(by_device(change.old)) if change.old is not None else set())
        out = [_request(DEVICE_HEALTHS, "", caches.key_of(change.obj)[1])] if change.type != "delete" else []
        return out + self.users_of(sorted(keys))

    @staticmethod
    def map_pod(change: managers.Change) -> list[Request]:
        pod = change.obj
        if not _dict(pod.get("spec")).get("resourceClaims") and \
                not _dict(pod.get("status")).get("extendedResourceClaimStatus"):
            return []
        return [_request(te.PODS, *caches.key_of(pod))]

    def map_claim(self, change: managers.Change) -> list[Request]:
        if change.type == "delete":
            return []
        claim, old = change.obj, change.old
        ns, name = caches.key_of(claim)
        out = [_request(te.CLAIMS, ns, name)] if te.is_allocated(claim) else []
        before = _dict(old.get("status")) if old is not None else {}
        after = _dict(claim.get("status"))
        if old is None or before.get("allocation") != after.get("allocation") or \
                before.get("reservedFor") != after.get("reservedFor"):
            out.extend(_request(te.PODS, *caches.key_of(p)) for p in te.pods_of_claim(claim, self.pods))
        return out

    @staticmethod
    def map_rule(change: managers.Change) -> list[Request]:
        rule = change.obj
        if not is_managed_rule(rule):
            return []
        source = _dict(caches.meta(rule).get("annotations")).get(SOURCE_ANNOTATION)
        return [_request(DEVICE_HEALTHS, "", str(source))] if source else []

    # ------------------------------------------------------------------ reconcile

    async def reconcile(self, request: Request) -> Result | None:
        if request.resource == te.PODS:
            await self.reconcile_pod(request.namespace, request.name)
            return None
        if request.resource == te.CLAIMS:
            await self.reconcile_claim(request.namespace, request.name)
            return None
        return await self.reconcile_report(request.name)

    async def reconcile_pod(self, namespace: str, name: str) -> None:
        key = (namespace, name)
        pod = self.pods.get(namespace, name)
        if pod is None or not te.is_bound(pod):
            self._rewrites.pop(key, None)
            return None
        status = desired_pod_status(pod, self.claims, self.health)
        if status is None:
            return None
        # Guard against a writer that keeps dropping the field (a kubelet that rebuilds
        # containerStatuses without it): the same content written MAX_SAME_WRITES times in a row
        # is not written again until it changes.
        fingerprint = _fingerprint(pod, status)
        uid, last, count = self._rewrites.get(key, ("", b"", 0))
        count = count + 1 if (uid, last) == (te.uid_of(pod), fingerprint) else 1
        self._rewrites[key] = (te.uid_of(pod), fingerprint, count)
        if count > MAX_SAME_WRITES:
            if count == MAX_SAME_WRITES + 1:
                self._log.warning("allocated_resources_status_dropped_by_another_writer", namespace=namespace,
                                  name=name, writes=MAX_SAME_WRITES)
            return None
        if await te.write_status(self.client, te.PODS, pod,
                                 lambda live: desired_pod_status(live, self.claims, self.health),
                                 field_manager=FIELD_MANAGER):
            self._log.info("pod_resource_health", namespace=namespace, name=name)
        return None

    async def reconcile_claim(self, namespace: str, name: str) -> None:
        claim = self.claims.get(namespace, name)
        if claim is None or not te.is_allocated(claim):
            return None
        if await te.write_status(self.client, te.CLAIMS, claim,
                                 lambda live: desired_claim_status(live, self.health, self.clock.now()),
                                 field_manager=FIELD_MANAGER):
            self._log.info("claim_device_health", namespace=namespace, name=name)
        return None

    async def reconcile_report(self, name: str) -> Result | None:
        dh = self.reports.get("", name)
        if dh is None:
            return None  # the garbage collector removes the rule it owned
        driver, pool, device = device_of(dh)
        h = self.health(driver, pool, device)
        # Users see the change (or the timeout) through the claims and pods of the device.
        if self.controller is not None and self.controller.queue is not None:
            for request in self.users_of([te.device_key(driver, pool, device)]):
                self.controller.queue.add(request)
        if self.taint_unhealthy:
            await self._remediate(dh, h)
        if h.expires is not None:
            return Result(requeue_after=max(h.expires - self.clock.now(), 0.001))
        return None

    async def _remediate(self, dh: Mapping[str, Any], h: Health) -> None:
        assert self.rules is not None and self.taint_unhealthy is not None
        rule_name = rule_name_for(str(caches.meta(dh).get("name") or ""))
        rule = self.rules.get("", rule_name)
        if h.state == UNHEALTHY and rule is None:
            try:
                await self.client.create(te.RULES, remediation_rule(dh, self.taint_unhealthy),
                                         field_manager=FIELD_MANAGER)
            except errors.AlreadyExists:
                return
            self._log.info("device_tainted", rule=rule_name, device="/".join(device_of(dh)),
                           effect=self.taint_unhealthy)
        elif h.state == HEALTHY and rule is not None and is_managed_rule(rule):
            try:
                await self.client.delete(te.RULES, rule_name, preconditions={"uid": te.uid_of(rule)})
            except (errors.NotFound, errors.Conflict):
                return
            self._log.info("device_untainted", rule=rule_name, device="/".join(device_of(dh)))


def new(ctx: managers.ControllerContext, *, taint_unhealthy: str | None = None,
        default_timeout: float = DEFAULT_TIMEOUT, workers: int = 2) -> managers.Controller:
    """The health reporter. `taint_unhealthy` ("NoSchedule" | "NoExecute") turns remediation on."""
    reporter = HealthReporter(client=ctx.client, informer_factory=ctx.informers, clock=ctx.clock,
                              recorder=ctx.recorder(COMPONENT), taint_unhealthy=taint_unhealthy,
                              default_timeout=default_timeout)
    controller = managers.Controller(name=NAME, reconciler=reporter, watches=reporter.watches(),
                                     workers=workers)
    reporter.controller = controller
    return controller


def factory(*, taint_unhealthy: str | None = None, default_timeout: float = DEFAULT_TIMEOUT,
            ) -> Callable[[managers.ControllerContext], managers.Controller]:
    """A registry factory with options: `CONTROLLERS[NAME] = health.factory(taint_unhealthy=...)`
    (what `cplane serve --taint-unhealthy=NoExecute` should install)."""
    if taint_unhealthy is not None and taint_unhealthy not in TAINT_EFFECTS:
        raise ValueError(f"--taint-unhealthy must be one of {', '.join(TAINT_EFFECTS)}")

    def make(ctx: managers.ControllerContext) -> managers.Controller:
        return new(ctx, taint_unhealthy=taint_unhealthy, default_timeout=default_timeout)

    return make


# ---------------------------------------------------------------------- publishing reports


async def server_now(client: clients.Client) -> float:
    """The server's time: its virtual Clock object when it has one, else wall time."""
    try:
        obj = await client.get(f"clocks.{res.SIM_GROUP}", "cluster")
    except errors.NotFound:
        return time.time()
    return clocks.parse_time(str(_dict(obj.get("spec")).get("time")))


async def set_health(client: clients.Client, driver: str, pool: str, device: str, health: str,
                     message: str = "", *, now: float | None = None,
                     timeout_seconds: int | None = None, field_manager: str = "cplane") -> dict[str, Any]:
    """Create or update the DeviceHealth of one device (what `cplane device health set` does, and a
    simulated kubelet with each report of a plugin's health stream). `now` defaults to the server's
    clock. Returns the stored object."""
    if now is None:
        now = await server_now(client)
    obj = health_object(driver, pool, device, health, message, now, timeout_seconds=timeout_seconds)
    try:
        return await client.create(DEVICE_HEALTHS, obj, field_manager=field_manager)
    except errors.AlreadyExists:
        pass
    spec = dict(obj["spec"])
    spec["message"] = message or None  # clear an old message
    return await client.patch(DEVICE_HEALTHS, obj["metadata"]["name"], {"spec": spec}, field_manager=field_manager)


async def heartbeat(client: clients.Client, driver: str, pool: str, device: str, now: float, *,
                    field_manager: str = "cplane-fleet") -> dict[str, Any]:
    """A driver's periodic report: refresh `lastUpdated` without touching the health a user may
    have set; creates a `Healthy` report when there is none."""
    name = health_object_name(driver, pool, device)
    try:
        return await client.patch(DEVICE_HEALTHS, name, {"spec": {"lastUpdated": clocks.rfc3339(now)}},
                                  field_manager=field_manager)
    except errors.NotFound:
        pass
    try:
        return await client.create(DEVICE_HEALTHS, health_object(driver, pool, device, HEALTHY, "", now),
                                   field_manager=field_manager)
    except errors.AlreadyExists:
        return await client.patch(DEVICE_HEALTHS, name, {"spec": {"lastUpdated": clocks.rfc3339(now)}},
                                  field_manager=field_manager)


# ---------------------------------------------------------------------- `cplane device health`
