"""kubectl's printers, as the server runs them for `meta.k8s.io/v1` Table output: the columns and the
cells of one object's row, per kind.

Columns and cell rules follow upstream's printers (`pkg/printers/internalversion/printers.go`)
for the kinds we serve; unknown kinds get Name and Age. Ages are rendered like apimachinery's
`duration.HumanDuration`.

Row builders run once per object on lists of up to 10,000 objects, so they read the raw dicts
directly; the pod printer, the one with real rules, is a handful of small functions (one per cell
rule: init containers, containers, deletion, restarts, readiness gates). A row depends on its object
only: ages are `Since` cells, rendered with the table's `now` (unix seconds, passed in), so
`cp.tables.RowCache` can keep rows between requests. Pure; no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from cp import selectors
from cp.errors import BadRequest

__all__ = ["Obj", "RowFn", "Since", "columns", "human_duration", "render", "row", "row_fn"]

Obj = Mapping[str, Any]
RowFn = Callable[[Obj], list[Any]]

_E: Mapping[str, Any] = {}

# ---------------------------------------------------------------------------------------------
# Time


def human_duration(seconds: float) -> str:
    """Render a duration the way apimachinery's `duration.HumanDuration` does ("5m", "2d3h")."""
    s = int(seconds)  # truncates toward zero, like Go's int(d.Seconds())
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rest = s % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 192:
        rest = hours % 24
        return f"{hours // 24}d{rest}h" if rest else f"{hours // 24}d"
    days = hours // 24
    if hours < 24 * 365 * 2:
        return f"{days}d"
    if hours < 24 * 365 * 8:
        rest = days % 365
        return f"{days // 365}y{rest}d" if rest else f"{days // 365}y"
    return f"{days // 365}y"


_EPOCHS: dict[str, float | None] = {}
_AGES: dict[float, tuple[float, str]] = {}
_CACHE_LIMIT = 1 << 16


def _parse_epoch(ts: str) -> float | None:
    try:
        dt = datetime.fromisoformat(ts)
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


def _epoch(ts: Any) -> float | None:
    """Seconds since the epoch for an RFC 3339 timestamp; None when missing or unparsable.

    Memoised: objects in one list tend to share timestamps (to the second)."""
    if not ts or not isinstance(ts, str):
        return None
    try:
        return _EPOCHS[ts]
    except KeyError:
        pass
    if len(_EPOCHS) >= _CACHE_LIMIT:
        _EPOCHS.clear()
    t = _EPOCHS[ts] = _parse_epoch(ts)
    return t


class Since:
    """A cell that reads how long ago `epoch` was ("5m", or "<unknown>" without an epoch), optionally
    inside text ("3 (5m ago)"). Row builders return these instead of strings, so that a row depends on
    its object only and can be kept (`RowCache`); `render(now)` happens when the table is built."""

    __slots__ = ("epoch", "prefix", "suffix")

    def __init__(self, epoch: float | None, *, prefix: str = "", suffix: str = "") -> None:
        self.epoch = epoch
        self.prefix = prefix
        self.suffix = suffix

    def render(self, now: float) -> str:
        if self.epoch is None:
            return "<unknown>"
        age = _age(self.epoch, now)
        return f"{self.prefix}{age}{self.suffix}" if self.prefix or self.suffix else age

    def __repr__(self) -> str:
        return f"Since({self.epoch!r}, prefix={self.prefix!r}, suffix={self.suffix!r})"


_UNKNOWN = Since(None)
_SINCE: dict[str, Since] = {}


def _age(epoch: float, now: float) -> str:
    """`human_duration(now - epoch)`, memoised per epoch for the same `now` (a table has one `now`)."""
    hit = _AGES.get(epoch)
    if hit is not None and hit[0] == now:
        return hit[1]
    age = human_duration(now - epoch)
    if len(_AGES) >= _CACHE_LIMIT:
        _AGES.clear()
    _AGES[epoch] = (now, age)
    return age


def _since(ts: Any) -> Since:
    """`translateTimestampSince` of an RFC 3339 timestamp, as a `Since` cell (shared per timestamp)."""
    if type(ts) is not str:
        return _UNKNOWN
    cell = _SINCE.get(ts)
    if cell is None:
        if len(_SINCE) >= _CACHE_LIMIT:
            _SINCE.clear()
        cell = _SINCE[ts] = Since(_epoch(ts))
    return cell


# ---------------------------------------------------------------------------------------------
# Columns


def _col(name: str, type_: str, description: str, *, priority: int = 0, fmt: str = "") -> dict[str, Any]:
    return {"name": name, "type": type_, "format": fmt, "description": description, "priority": priority}


_NAME_COL = _col("Name", "string", "Name of the object, unique within its namespace.", fmt="name")
_AGE_COL = _col("Age", "string", "Time since the object was created (metadata.creationTimestamp).")
_CONTAINERS_COL = _col("Containers", "string", "Names of the containers in the pod template.", priority=1)
_IMAGES_COL = _col("Images", "string", "Images of the containers in the pod template.", priority=1)


def _selector_col(what: str) -> dict[str, Any]:
    return _col("Selector", "string", f"Label selector of the pods this {what} manages.", priority=1)


_COLUMNS: dict[str, list[dict[str, Any]]] = {
    "Namespace": [
        _NAME_COL,
        _col("Status", "string", "Lifecycle phase of the namespace."),
        _AGE_COL,
    ],
    "Node": [
        _NAME_COL,
        _col("Status", "string", "Readiness of the node, and whether scheduling is disabled."),
        _col("Roles", "string", "Roles taken from the node-role.kubernetes.io/* labels."),
        _AGE_COL,
        _col("Version", "string", "Kubelet version reported by the node."),
        _col("Internal-IP", "string", "First InternalIP address of the node.", priority=1),
        _col("External-IP", "string", "First ExternalIP address of the node.", priority=1),
        _col("OS-Image", "string", "Operating system image reported by the node.", priority=1),
        _col("Kernel-Version", "string", "Kernel version reported by the node.", priority=1),
        _col("Container-Runtime", "string", "Container runtime and version reported by the node.",
             priority=1),
    ],
    "Pod": [
        _NAME_COL,
        _col("Ready", "string", "Ready containers out of all containers of the pod."),
        _col("Status", "string", "Summary of the pod's phase and its containers' states."),
        _col("Restarts", "string", "Container restarts, and how long ago the last one happened."),
        _AGE_COL,
        _col("IP", "string", "First IP address allocated to the pod.", priority=1),
        _col("Node", "string", "Node the pod is bound to.", priority=1),
        _col("Nominated Node", "string", "Node nominated by preemption, if any.", priority=1),
        _col("Readiness Gates", "string", "Readiness gates whose condition is True, out of all.",
             priority=1),
    ],
    "Event": [
        _col("Last Seen", "string", "Time since the event was last observed."),
        _col("Type", "string", "Type of the event (Normal, Warning)."),
        _col("Reason", "string", "Short machine-readable reason for the event."),
        _col("Object", "string", "Object the event is about, as kind/name."),
        _col("Subobject", "string", "Field path inside the object, if any.", priority=1),
        _col("Source", "string", "Component (and host) that reported the event.", priority=1),
        _col("Message", "string", "Human-readable description of the event."),
        _col("First Seen", "string", "Time since the event was first observed.", priority=1),
        _col("Count", "string", "Number of times the event occurred.", priority=1),
        _col("Name", "string", "Name of the event object.", priority=1, fmt="name"),
    ],
    "ConfigMap": [
        _NAME_COL,
        _col("Data", "string", "Number of keys in data and binaryData."),
        _AGE_COL,
    ],
    "Deployment": [
        _NAME_COL,
        _col("Ready", "string", "Ready pods out of desired replicas."),
        _col("Up-to-date", "string", "Pods running the current pod template."),
        _col("Available", "string", "Pods available for at least minReadySeconds."),
        _AGE_COL,
        _CONTAINERS_COL,
        _IMAGES_COL,
        _selector_col("deployment"),
    ],
    "ReplicaSet": [
        _NAME_COL,
        _col("Desired", "integer", "Desired number of replicas."),
        _col("Current", "integer", "Most recently observed number of replicas."),
        _col("Ready", "integer", "Number of ready replicas."),
        _AGE_COL,
        _CONTAINERS_COL,
        _IMAGES_COL,
        _selector_col("replica set"),
    ],
    "HorizontalPodAutoscaler": [
        _NAME_COL,
        _col("Reference", "string", "Scale target, as Kind/name."),
        _col("Targets", "string", "Current and target values of the metrics."),
        _col("MinPods", "string", "Lower bound for the number of replicas."),
        _col("MaxPods", "string", "Upper bound for the number of replicas."),
        _col("Replicas", "string", "Current number of replicas."),
        _AGE_COL,
    ],
    "Lease": [
        _NAME_COL,
        _col("Holder", "string", "Identity of the current holder of the lease."),
        _AGE_COL,
    ],
    "DeviceClass": [_NAME_COL, _AGE_COL],
    "ResourceClaim": [
        _NAME_COL,
        _col("State", "string", "Summary of the claim's state (pending, allocated, reserved, deleted)."),
        _AGE_COL,
    ],
    "ResourceClaimTemplate": [_NAME_COL, _AGE_COL],
    "ResourceSlice": [
        _NAME_COL,
        _col("Node", "string", "Node that provides the devices, if node-local."),
        _col("Driver", "string", "DRA driver that publishes the slice."),
        _col("Pool", "string", "Name of the pool the slice belongs to."),
        _AGE_COL,
    ],
    "DeviceTaintRule": [_NAME_COL, _AGE_COL],
    # The sandbox's own kinds (sim.cplane.dev).
    "Clock": [_NAME_COL, _col("Time", "string", "The virtual time."), _AGE_COL],
    "DeviceHealth": [
        _NAME_COL,
        _col("Driver", "string", "DRA driver of the device."),
        _col("Pool", "string", "Pool of the device."),
        _col("Device", "string", "Device name within the pool."),
        _col("Health", "string", "Healthy, Unhealthy or Unknown, as last reported."),
        _col("Message", "string", "Why, as reported.", priority=1),
        _AGE_COL,
    ],
}
_DEFAULT_COLUMNS = [_NAME_COL, _AGE_COL]

# Kinds whose printers we implement, by API group (another group's kind of the same name is unknown).
_GROUP_OF = {
    "Namespace": "", "Node": "", "Pod": "", "Event": "", "ConfigMap": "",
    "Deployment": "apps", "ReplicaSet": "apps",
    "HorizontalPodAutoscaler": "autoscaling",
    "Lease": "coordination.k8s.io",
    "DeviceClass": "resource.k8s.io", "ResourceClaim": "resource.k8s.io",
    "ResourceClaimTemplate": "resource.k8s.io", "ResourceSlice": "resource.k8s.io",
    "DeviceTaintRule": "resource.k8s.io",
    "Clock": "sim.cplane.dev", "DeviceHealth": "sim.cplane.dev",
}


def _known(group: str, kind: str) -> bool:
    return _GROUP_OF.get(kind) == group


def columns(*, group: str, kind: str) -> list[dict[str, Any]]:
    """`columnDefinitions` for a kind (fresh dicts; callers may mutate them)."""
    cols = _COLUMNS[kind] if _known(group, kind) else _DEFAULT_COLUMNS
    return [dict(c) for c in cols]


# ---------------------------------------------------------------------------------------------
# Row builders


def _name_age(o: Obj) -> list[Any]:
    meta = o.get("metadata") or _E
    return [meta.get("name", ""), _since(meta.get("creationTimestamp"))]


def _namespace_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or _E
    return [meta.get("name", ""), (o.get("status") or _E).get("phase") or "",
            _since(meta.get("creationTimestamp"))]


def _node_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or _E
    spec = o.get("spec") or _E
    status = o.get("status") or _E
    ready = None
    for cond in status.get("conditions") or ():
        if cond.get("type") == "Ready":
            ready = cond  # the last one wins, as in upstream's condition map
    state = "Unknown" if ready is None else "Ready" if ready.get("status") == "True" else "NotReady"
    if spec.get("unschedulable"):
        state += ",SchedulingDisabled"
    roles: set[str] = set()
    for k, v in (meta.get("labels") or _E).items():
        if k.startswith("node-role.kubernetes.io/"):
            if len(k) > 24:
                roles.add(k[24:])
        elif k == "kubernetes.io/role" and v:
            roles.add(v)
    info = status.get("nodeInfo") or _E
    internal = external = "<none>"
    for addr in status.get("addresses") or ():
        t = addr.get("type")
        if t == "InternalIP" and internal == "<none>":
            internal = addr.get("address", "")
        elif t == "ExternalIP" and external == "<none>":
            external = addr.get("address", "")
    return [
        meta.get("name", ""),
        state,
        ",".join(sorted(roles)) if roles else "<none>",
        _since(meta.get("creationTimestamp")),
        info.get("kubeletVersion") or "",
        internal,
        external,
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


def _cond_true(conditions: Any, ctype: str) -> bool:
    for c in conditions:
        if c.get("type") == ctype:
            return bool(c.get("status") == "True")
    return False


class _PodTally:
    """What the pod printer gathers over the container statuses: the STATUS reason, ready containers,
    restarts and the last restart (all containers, and the sidecars' alone)."""

    __slots__ = ("last", "ready", "reason", "restarts", "sidecar_last", "sidecar_restarts")

    def __init__(self, reason: str) -> None:
        self.reason = reason
        self.ready = 0
        self.restarts = 0
        self.last: float | None = None
        self.sidecar_restarts = 0
        self.sidecar_last: float | None = None


def _pod_row(o: Obj) -> list[Any]:
    """kubectl's pod printer: NAME READY STATUS RESTARTS AGE IP NODE NOMINATED NODE READINESS GATES."""
    meta = o.get("metadata") or _E
    spec = o.get("spec") or _E
    status = o.get("status") or _E
    init_specs = spec.get("initContainers")
    sidecars: frozenset[str] | tuple[()] = _sidecar_names(init_specs) if init_specs else ()
    total = len(spec.get("containers") or ()) + len(sidecars)
    phase = status.get("phase") or ""
    conditions = status.get("conditions") or ()
    tally = _PodTally(_scheduling_reason(status.get("reason") or phase, conditions))
    init_statuses = status.get("initContainerStatuses")
    initializing = init_statuses and _tally_init_containers(tally, init_statuses, n_init=len(init_specs or ()),
                                                            sidecars=sidecars)
    if not initializing or _cond_true(conditions, "Initialized"):
        tally.restarts = tally.sidecar_restarts
        tally.last = tally.sidecar_last
        _tally_containers(tally, status.get("containerStatuses"), conditions)
    gates = spec.get("readinessGates")
    return [
        meta.get("name", ""),
        f"{tally.ready}/{total}",
        _deletion_reason(status, phase=phase, reason=tally.reason) if meta.get("deletionTimestamp") else tally.reason,
        _restarts_cell(tally.restarts, tally.last),
        _since(meta.get("creationTimestamp")),
        _pod_ip(status) or "<none>",
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        _readiness_gates_cell(gates, conditions) if gates else "<none>",
    ]


def _sidecar_names(init_specs: Any) -> frozenset[str]:
    """Init containers with restartPolicy Always (sidecars count among the pod's containers)."""
    return frozenset(c.get("name") for c in init_specs if c.get("restartPolicy") == "Always")


def _scheduling_reason(reason: str, conditions: Any) -> str:
    for c in conditions:
        if c.get("reason") == "SchedulingGated" and c.get("type") == "PodScheduled":
            reason = "SchedulingGated"
    return reason


def _later(last: float | None, finished: float | None) -> float | None:
    return finished if finished is not None and (last is None or finished > last) else last


def _finished_at(cs: Obj) -> float | None:
    """When the container's previous run ended (None without a terminated last state)."""
    prev = (cs.get("lastState") or _E).get("terminated")
    return _epoch(prev.get("finishedAt")) if prev is not None else None


def _terminated_reason(term: Obj) -> Any:
    why = term.get("reason")
    if why:
        return why
    if term.get("signal"):
        return f"Signal:{term['signal']}"
    return f"ExitCode:{term.get('exitCode') or 0}"


def _init_reason(state: Obj, term: Obj | None, *, index: int, n_init: int) -> str:
    reason: str
    if term is not None:
        reason = "Init:" + _terminated_reason(term)
        return reason
    why = (state.get("waiting") or _E).get("reason")
    if why and why != "PodInitializing":
        reason = "Init:" + why
        return reason
    return f"Init:{index}/{n_init}"


def _tally_init_containers(tally: _PodTally, statuses: Any, *, n_init: int, sidecars: Container[str]) -> bool:
    """Count the init containers' restarts and ready sidecars; True (and the reason set) when one is
    still initializing."""
    for i, cs in enumerate(statuses or ()):
        count = cs.get("restartCount") or 0
        tally.restarts += count
        finished = _finished_at(cs)
        tally.last = _later(tally.last, finished)
        sidecar = cs.get("name") in sidecars
        if sidecar:
            tally.sidecar_restarts += count
            tally.sidecar_last = _later(tally.sidecar_last, finished)
        state = cs.get("state") or _E
        term = state.get("terminated")
        if term is not None and not term.get("exitCode"):
            continue
        if sidecar and cs.get("started"):
            if cs.get("ready"):
                tally.ready += 1
            continue
        tally.reason = _init_reason(state, term, index=i, n_init=n_init)
        return True
    return False


def _tally_containers(tally: _PodTally, statuses: Any, conditions: Any) -> None:
    """The regular containers, last first (the first container's state wins the reason)."""
    reason, ready, restarts, last = tally.reason, tally.ready, tally.restarts, tally.last
    running = False
    for cs in reversed(statuses or ()):
        count = cs.get("restartCount")
        if count:
            restarts += count
        prev = (cs.get("lastState") or _E).get("terminated")
        if prev is not None:
            last = _later(last, _epoch(prev.get("finishedAt")))
        state = cs.get("state") or _E
        waiting = state.get("waiting")
        if waiting is not None and waiting.get("reason"):
            reason = waiting["reason"]
            continue
        term = state.get("terminated")
        if term is not None:
            reason = _terminated_reason(term)
        elif cs.get("ready") and state.get("running") is not None:
            running = True
            ready += 1
    if reason == "Completed" and running:
        reason = "Running" if _cond_true(conditions, "Ready") else "NotReady"
    tally.reason, tally.ready, tally.restarts, tally.last = reason, ready, restarts, last


def _deletion_reason(status: Obj, *, phase: str, reason: str) -> str:
    """The reason of a pod being deleted."""
    if status.get("reason") == "NodeLost":
        return "Unknown"
    if phase != "Succeeded" and phase != "Failed":
        return "Terminating"
    return reason


def _restarts_cell(restarts: int, last: float | None) -> Any:
    if restarts and last is not None:
        return Since(last, prefix=f"{restarts} (", suffix=" ago)")
    return str(restarts)


def _pod_ip(status: Obj) -> Any:
    ips = status.get("podIPs")
    return (ips[0] or _E).get("ip") if ips else status.get("podIP")


def _readiness_gates_cell(gates: Any, conditions: Any) -> str:
    ok = 0
    for g in gates:
        want = g.get("conditionType")
        for c in conditions:
            if c.get("type") == want:
                if c.get("status") == "True":
                    ok += 1
                break
    return f"{ok}/{len(gates)}"


def _event_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or _E
    first_ts = o.get("firstTimestamp")
    first = _since(first_ts) if first_ts else _since(o.get("eventTime"))
    last_ts = o.get("lastTimestamp")
    last = _since(last_ts) if last_ts else first
    count = o.get("count") or 0
    series = o.get("series")
    if series is not None:
        last = _since(series.get("lastObservedTime"))
        count = series.get("count") or 0
    elif count == 0:
        count = 1  # singleton events from the new API carry no count
    inv = o.get("involvedObject") or _E
    kind = (inv.get("kind") or "").lower()
    target = f"{kind}/{inv['name']}" if inv.get("name") else kind
    source = o.get("source") or _E
    component = source.get("component") or o.get("reportingComponent") or ""
    host = source.get("host") or o.get("reportingInstance") or ""
    return [
        last,
        o.get("type") or "",
        o.get("reason") or "",
        target,
        inv.get("fieldPath") or "",
        f"{component}, {host}" if host else component,
        (o.get("message") or "").strip(),
        first,
        count,
        meta.get("name", ""),
    ]


def _configmap_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or _E
    return [meta.get("name", ""), len(o.get("data") or _E) + len(o.get("binaryData") or _E),
            _since(meta.get("creationTimestamp"))]


def _containers_images(spec: Obj) -> tuple[str, str]:
    containers = ((spec.get("template") or _E).get("spec") or _E).get("containers") or ()
    return (",".join(c.get("name") or "" for c in containers),
            ",".join(c.get("image") or "" for c in containers))


def _selector_key(sel: Any) -> Any:
    """A hashable rendering of a metav1.LabelSelector (for memoising its string form)."""
    if sel is None:
        return None
    labels = sel.get("matchLabels") or _E
    exprs = sel.get("matchExpressions") or ()
    return (tuple(labels.items()),
            tuple((e.get("key"), e.get("operator"), tuple(e.get("values") or ())) for e in exprs))


def _selector_from_key(key: Any) -> dict[str, Any] | None:
    if key is None:
        return None
    labels, exprs = key
    return {"matchLabels": dict(labels),
            "matchExpressions": [{"key": k, "operator": op, "values": list(v)} for k, op, v in exprs]}


@lru_cache(maxsize=4096)
def _selector_text(key: Any) -> str:
    """`LabelSelectorAsSelector(...).String()`, "<invalid>" on error (Deployment's printer)."""
    try:
        return str(selectors.from_label_selector_object(_selector_from_key(key)))
    except BadRequest:
        return "<invalid>"


@lru_cache(maxsize=4096)
def _selector_format(key: Any) -> str:
    """`metav1.FormatLabelSelector` (ReplicaSet's printer)."""
    return selectors.to_string(_selector_from_key(key))


def _deployment_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or _E
    spec = o.get("spec") or _E
    status = o.get("status") or _E
    replicas = spec.get("replicas")
    names, images = _containers_images(spec)
    return [
        meta.get("name", ""),
        f"{status.get('readyReplicas') or 0}/{1 if replicas is None else replicas}",
        status.get("updatedReplicas") or 0,
        status.get("availableReplicas") or 0,
        _since(meta.get("creationTimestamp")),
        names,
        images,
        _selector_text(_selector_key(spec.get("selector"))),
    ]


def _replicaset_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or _E
    spec = o.get("spec") or _E
    status = o.get("status") or _E
    replicas = spec.get("replicas")
    names, images = _containers_images(spec)
    return [
        meta.get("name", ""),
        1 if replicas is None else replicas,
        status.get("replicas") or 0,
        status.get("readyReplicas") or 0,
        _since(meta.get("creationTimestamp")),
        names,
        images,
        _selector_format(_selector_key(spec.get("selector"))),
    ]


def _quantity(q: Any) -> str:
    # Quantities are printed as stored; a missing pointer prints like Go's nil *Quantity.
    return "<nil>" if q is None else str(q)


def _hpa_metric(spec: Obj, status: Obj | None) -> str:
    mtype = spec.get("type")
    if mtype == "External":
        src = spec.get("external") or _E
        cur_src = (status or _E).get("external")
        target = src.get("target") or _E
        if target.get("averageValue") is not None:
            cur = "<unknown>"
            if cur_src is not None and (cur_src.get("current") or _E).get("averageValue") is not None:
                cur = _quantity(cur_src["current"]["averageValue"])
            return f"{cur}/{_quantity(target['averageValue'])} (avg)"
        cur = "<unknown>" if cur_src is None else _quantity((cur_src.get("current") or _E).get("value"))
        return f"{cur}/{_quantity(target.get('value'))}"
    if mtype == "Pods":
        src = spec.get("pods") or _E
        cur_src = (status or _E).get("pods")
        cur = "<unknown>" if cur_src is None else _quantity(
            (cur_src.get("current") or _E).get("averageValue"))
        return f"{cur}/{_quantity((src.get('target') or _E).get('averageValue'))}"
    if mtype == "Object":
        src = spec.get("object") or _E
        cur_src = (status or _E).get("object")
        target = src.get("target") or _E
        if target.get("averageValue") is not None:
            cur = "<unknown>"
            if cur_src is not None and (cur_src.get("current") or _E).get("averageValue") is not None:
                cur = _quantity(cur_src["current"]["averageValue"])
            return f"{cur}/{_quantity(target['averageValue'])} (avg)"
        cur = "<unknown>" if cur_src is None else _quantity((cur_src.get("current") or _E).get("value"))
        return f"{cur}/{_quantity(target.get('value'))}"
    if mtype in ("Resource", "ContainerResource"):
        field = "resource" if mtype == "Resource" else "containerResource"
        src = spec.get(field) or _E
        cur_src = (status or _E).get(field)
        target = src.get("target") or _E
        name = src.get("name") or ""
        if target.get("averageValue") is not None:
            cur = "<unknown>" if cur_src is None else _quantity(
                (cur_src.get("current") or _E).get("averageValue"))
            return f"{name}: {cur}/{_quantity(target['averageValue'])}"
        cur = "<unknown>"
        if cur_src is not None:
            util = (cur_src.get("current") or _E).get("averageUtilization")
            if util is not None:
                cur = f"{util}%"
        want = target.get("averageUtilization")
        return f"{name}: {cur}/{'<auto>' if want is None else f'{want}%'}"
    return "<unknown type>"


def _hpa_targets(specs: Any, statuses: Any) -> str:
    if not specs:
        return "<none>"
    statuses = statuses or ()
    shown = [_hpa_metric(s, statuses[i] if i < len(statuses) else None) for i, s in enumerate(specs[:2])]
    text = ", ".join(shown)
    if len(specs) > 2:
        return f"{text} + {len(specs) - 2} more..."
    return text


def _hpa_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or _E
    spec = o.get("spec") or _E
    status = o.get("status") or _E
    ref = spec.get("scaleTargetRef") or _E
    min_replicas = spec.get("minReplicas")
    return [
        meta.get("name", ""),
        f"{ref.get('kind') or ''}/{ref.get('name') or ''}",
        _hpa_targets(spec.get("metrics"), status.get("currentMetrics")),
        "<unset>" if min_replicas is None else str(min_replicas),
        spec.get("maxReplicas") or 0,
        status.get("currentReplicas") or 0,
        _since(meta.get("creationTimestamp")),
    ]


def _lease_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or _E
    return [meta.get("name", ""), (o.get("spec") or _E).get("holderIdentity") or "",
            _since(meta.get("creationTimestamp"))]


def _claim_state(o: Obj) -> str:
    deleted = bool((o.get("metadata") or _E).get("deletionTimestamp"))
    status = o.get("status") or _E
    states = ["deleted"] if deleted else []
    if status.get("allocation") is None:
        if not deleted:
            states.append("pending")
    else:
        states.append("allocated")
        if status.get("reservedFor"):
            states.append("reserved")
    return ",".join(states)


def _claim_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or _E
    return [meta.get("name", ""), _claim_state(o), _since(meta.get("creationTimestamp"))]


def _slice_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or _E
    spec = o.get("spec") or _E
    return [meta.get("name", ""), spec.get("nodeName") or "", spec.get("driver") or "",
            (spec.get("pool") or _E).get("name") or "", _since(meta.get("creationTimestamp"))]


_ROWS: dict[str, RowFn] = {
    "Namespace": _namespace_row,
    "Node": _node_row,
    "Pod": _pod_row,
    "Event": _event_row,
    "ConfigMap": _configmap_row,
    "Deployment": _deployment_row,
    "ReplicaSet": _replicaset_row,
    "HorizontalPodAutoscaler": _hpa_row,
    "Lease": _lease_row,
    "DeviceClass": _name_age,
    "ResourceClaim": _claim_row,
    "ResourceClaimTemplate": _name_age,
    "ResourceSlice": _slice_row,
    "DeviceTaintRule": _name_age,
    "Clock": lambda o: [(o.get("metadata") or _E).get("name", ""), (o.get("spec") or _E).get("time", ""),
                             _since((o.get("metadata") or _E).get("creationTimestamp"))],
    "DeviceHealth": lambda o: [
        (o.get("metadata") or _E).get("name", ""),
        *((o.get("spec") or _E).get(k) or "" for k in ("driver", "pool", "device", "health", "message")),
        _since((o.get("metadata") or _E).get("creationTimestamp"))],
}


def row_fn(group: str, kind: str) -> RowFn:
    return _ROWS[kind] if _known(group, kind) else _name_age


def render(cells: list[Any], now: float) -> list[Any]:
    """`cells` with every `Since` cell rendered at `now` (in place)."""
    for i, cell in enumerate(cells):
        if type(cell) is Since:
            cells[i] = cell.render(now)
    return cells


def row(obj: Obj, *, group: str, kind: str, now: float) -> list[Any]:
    """The cells of one object's row, in `columns()` order."""
    return render(row_fn(group, kind)(obj), now)
