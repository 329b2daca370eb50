"""Printers of the core group (`/api/v1`): upstream's `printPod`, `printNode`, `printEvent`,
`printService`, `printPersistentVolume`... (`pkg/printers/internalversion/printers.go`).

The pod printer, the one with real rules, is a handful of small functions (one per cell rule:
init containers, containers, deletion, restarts, readiness gates). Pure; no I/O.
"""

from __future__ import annotations

from collections.abc import Container
from typing import Any

from cp.printers.common import (
    AGE_COL,
    CONTAINERS_COL,
    CREATED_AT_COL,
    IMAGES_COL,
    NAME_COL,
    E,
    Obj,
    Printer,
    Since,
    col,
    containers_images,
    epoch,
    format_labels,
    name_created_at,
    replicas_row,
    since,
)

__all__ = ["PRINTERS", "event_row"]



def _namespace_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or E
    return [meta.get("name", ""), (o.get("status") or E).get("phase") or "",
            since(meta.get("creationTimestamp"))]


def _node_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or E
    spec = o.get("spec") or E
    status = o.get("status") or E
    ready = None
    for cond in status.get("conditions") or ():
        if cond.get("type") == "Ready":
            ready = cond  # the last one wins, as in upstream's condition map
    state = "Unknown" if ready is None else "Ready" if ready.get("status") == "True" else "NotReady"
    if spec.get("unschedulable"):
        state += ",SchedulingDisabled"
    roles: set[str] = set()
    for k, v in (meta.get("labels") or E).items():
        if k.startswith("node-role.kubernetes.io/"):
            if len(k) > 24:
                roles.add(k[24:])
        elif k == "kubernetes.io/role" and v:
            roles.add(v)
    info = status.get("nodeInfo") or E
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
        since(meta.get("creationTimestamp")),
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
    meta = o.get("metadata") or E
    spec = o.get("spec") or E
    status = o.get("status") or E
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
        since(meta.get("creationTimestamp")),
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
    prev = (cs.get("lastState") or E).get("terminated")
    return epoch(prev.get("finishedAt")) if prev is not None else None


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
    why = (state.get("waiting") or E).get("reason")
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
        state = cs.get("state") or E
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
        prev = (cs.get("lastState") or E).get("terminated")
        if prev is not None:
            last = _later(last, epoch(prev.get("finishedAt")))
        state = cs.get("state") or E
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
    return (ips[0] or E).get("ip") if ips else status.get("podIP")


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


def event_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or E
    first_ts = o.get("firstTimestamp")
    first = since(first_ts) if first_ts else since(o.get("eventTime"))
    last_ts = o.get("lastTimestamp")
    last = since(last_ts) if last_ts else first
    count = o.get("count") or 0
    series = o.get("series")
    if series is not None:
        last = since(series.get("lastObservedTime"))
        count = series.get("count") or 0
    elif count == 0:
        count = 1  # singleton events from the new API carry no count
    inv = o.get("involvedObject") or E
    kind = (inv.get("kind") or "").lower()
    target = f"{kind}/{inv['name']}" if inv.get("name") else kind
    source = o.get("source") or E
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
    meta = o.get("metadata") or E
    return [meta.get("name", ""), len(o.get("data") or E) + len(o.get("binaryData") or E),
            since(meta.get("creationTimestamp"))]



def _secret_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or E
    return [meta.get("name", ""), o.get("type") or "", len(o.get("data") or E), since(meta.get("creationTimestamp"))]


def _service_account_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or E
    return [meta.get("name", ""), len(o.get("secrets") or ()), since(meta.get("creationTimestamp"))]


def _load_balancer_text(status: Obj) -> str:
    """`loadBalancerStatusStringer` (the server prints wide, so nothing is clipped): the sorted, distinct
    IPs (or else hostnames) of the load balancer's ingress points."""
    seen: set[str] = set()
    for ing in (status.get("loadBalancer") or E).get("ingress") or ():
        if ing.get("ip"):
            seen.add(ing["ip"])
        elif ing.get("hostname"):
            seen.add(ing["hostname"])
    return ",".join(sorted(seen))


def _service_external_ip(spec: Obj, status: Obj) -> str:
    stype = spec.get("type")
    external = spec.get("externalIPs") or ()
    if stype in ("ClusterIP", "NodePort"):
        return ",".join(external) if external else "<none>"
    if stype == "LoadBalancer":
        lb = _load_balancer_text(status)
        if external:
            return ",".join([*(lb.split(",") if lb else ()), *external])
        return lb or "<pending>"
    if stype == "ExternalName":
        return str(spec.get("externalName") or "")
    return "<unknown>"


def _service_ports(ports: Any) -> str:
    pieces = []
    for p in ports or ():
        proto = p.get("protocol") or ""
        node_port = p.get("nodePort") or 0
        pieces.append(f"{p.get('port') or 0}:{node_port}/{proto}" if node_port > 0 else f"{p.get('port') or 0}/{proto}")
    return ",".join(pieces) or "<none>"


def _service_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or E
    spec = o.get("spec") or E
    ips = spec.get("clusterIPs")
    return [
        meta.get("name", ""),
        spec.get("type") or "",
        ips[0] if ips else "<none>",
        _service_external_ip(spec, o.get("status") or E),
        _service_ports(spec.get("ports")),
        since(meta.get("creationTimestamp")),
        format_labels(spec.get("selector")),
    ]


def _host_port(ip: str, port: int) -> str:
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def _endpoints_text(subsets: Any) -> str:
    """`formatEndpoints` with all ports: up to three ip:port pairs, then "+ N more..."."""
    if not subsets:
        return "<none>"
    shown: list[str] = []
    more = False
    count = 0
    for ss in subsets:
        addresses = ss.get("addresses") or ()
        ports = ss.get("ports") or ()
        if not ports:
            count += len(addresses)
            for a in addresses:
                if len(shown) == 3:
                    more = True
                    break
                shown.append(a.get("ip") or "")
            continue
        for p in ports:
            count += len(addresses)
            for a in addresses:
                if len(shown) == 3:
                    more = True
                    break
                shown.append(_host_port(a.get("ip") or "", p.get("port") or 0))
    text = ",".join(shown)
    return f"{text} + {count - 3} more..." if more else text


def _endpoints_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or E
    return [meta.get("name", ""), _endpoints_text(o.get("subsets")), since(meta.get("creationTimestamp"))]


_ACCESS_MODES = (("ReadWriteOnce", "RWO"), ("ReadOnlyMany", "ROX"), ("ReadWriteMany", "RWX"),
                 ("ReadWriteOncePod", "RWOP"))


def _access_modes(modes: Any) -> str:
    """`GetAccessModesAsString`: the short forms in a fixed order, each once."""
    have = set(modes or ())
    return ",".join(short for mode, short in _ACCESS_MODES if mode in have)


def _storage(resources: Any) -> str:
    # A missing quantity prints as the zero Quantity.
    q = (resources or E).get("storage")
    return "0" if q is None else str(q)


_BETA_CLASS = "volume.beta.kubernetes.io/storage-class"


def _pv_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or E
    spec = o.get("spec") or E
    status = o.get("status") or E
    ref = spec.get("claimRef")
    claim = f"{ref.get('namespace') or ''}/{ref.get('name') or ''}" if ref is not None else ""
    annotations = meta.get("annotations") or E
    klass = annotations[_BETA_CLASS] if _BETA_CLASS in annotations else spec.get("storageClassName") or ""
    vac = spec.get("volumeAttributesClassName")
    mode = spec.get("volumeMode")
    return [
        meta.get("name", ""),
        _storage(spec.get("capacity")),
        _access_modes(spec.get("accessModes")),
        spec.get("persistentVolumeReclaimPolicy") or "",
        "Terminating" if meta.get("deletionTimestamp") else status.get("phase") or "",
        claim,
        klass,
        "<unset>" if vac is None else vac,
        status.get("reason") or "",
        since(meta.get("creationTimestamp")),
        "<unset>" if mode is None else mode,
    ]


def _pvc_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or E
    spec = o.get("spec") or E
    status = o.get("status") or E
    annotations = meta.get("annotations") or E
    klass = annotations[_BETA_CLASS] if _BETA_CLASS in annotations else spec.get("storageClassName") or ""
    volume = spec.get("volumeName") or ""
    capacity = access = ""
    if volume:
        access = _access_modes(status.get("accessModes"))
        capacity = _storage(status.get("capacity"))
    vac = spec.get("volumeAttributesClassName")
    mode = spec.get("volumeMode")
    return [
        meta.get("name", ""),
        "Terminating" if meta.get("deletionTimestamp") else status.get("phase") or "",
        volume,
        capacity,
        access,
        klass,
        "<unset>" if vac is None else vac,
        since(meta.get("creationTimestamp")),
        "<unset>" if mode is None else mode,
    ]


def _rc_row(o: Obj) -> list[Any]:
    return replicas_row(o, selector=format_labels((o.get("spec") or E).get("selector")))


def _pod_template_row(o: Obj) -> list[Any]:
    meta = o.get("metadata") or E
    template = o.get("template") or E
    names, images = containers_images(template.get("spec") or E)
    return [meta.get("name", ""), names, images, format_labels((template.get("metadata") or E).get("labels"))]


def _quota_row(o: Obj) -> list[Any]:
    """Used/hard per resource of the status, sorted by name; `limits.*` in the Limit cell."""
    meta = o.get("metadata") or E
    status = o.get("status") or E
    hard = status.get("hard") or E
    used = status.get("used") or E
    requests: list[str] = []
    limits: list[str] = []
    for name in sorted(hard):
        pieces = name.split(".")
        out = limits if len(pieces) > 1 and pieces[0] == "limits" else requests
        have = used.get(name)
        out.append(f"{name}: {'0' if have is None else have}/{hard[name]}")
    return [meta.get("name", ""), ", ".join(requests), ", ".join(limits), since(meta.get("creationTimestamp"))]


def _component_status_row(o: Obj) -> list[Any]:
    state, message, error = "Unknown", "", ""
    for c in o.get("conditions") or ():
        if c.get("type") == "Healthy":
            state = "Healthy" if c.get("status") == "True" else "Unhealthy"
            message = c.get("message") or ""
            error = c.get("error") or ""
            break
    return [(o.get("metadata") or E).get("name", ""), state, message, error]


PRINTERS: dict[str, Printer] = {
    "Namespace": Printer([
        NAME_COL,
        col("Status", "string", "Lifecycle phase of the namespace."),
        AGE_COL,
    ], _namespace_row),
    "Node": Printer([
        NAME_COL,
        col("Status", "string", "Readiness of the node, and whether scheduling is disabled."),
        col("Roles", "string", "Roles taken from the node-role.kubernetes.io/* labels."),
        AGE_COL,
        col("Version", "string", "Kubelet version reported by the node."),
        col("Internal-IP", "string", "First InternalIP address of the node.", priority=1),
        col("External-IP", "string", "First ExternalIP address of the node.", priority=1),
        col("OS-Image", "string", "Operating system image reported by the node.", priority=1),
        col("Kernel-Version", "string", "Kernel version reported by the node.", priority=1),
        col("Container-Runtime", "string", "Container runtime and version reported by the node.", priority=1),
    ], _node_row),
    "Pod": Printer([
        NAME_COL,
        col("Ready", "string", "Ready containers out of all containers of the pod."),
        col("Status", "string", "Summary of the pod's phase and its containers' states."),
        col("Restarts", "string", "Container restarts, and how long ago the last one happened."),
        AGE_COL,
        col("IP", "string", "First IP address allocated to the pod.", priority=1),
        col("Node", "string", "Node the pod is bound to.", priority=1),
        col("Nominated Node", "string", "Node nominated by preemption, if any.", priority=1),
        col("Readiness Gates", "string", "Readiness gates whose condition is True, out of all.", priority=1),
    ], _pod_row),
    "Event": Printer([
        col("Last Seen", "string", "Time since the event was last observed."),
        col("Type", "string", "Type of the event (Normal, Warning)."),
        col("Reason", "string", "Short machine-readable reason for the event."),
        col("Object", "string", "Object the event is about, as kind/name."),
        col("Subobject", "string", "Field path inside the object, if any.", priority=1),
        col("Source", "string", "Component (and host) that reported the event.", priority=1),
        col("Message", "string", "Human-readable description of the event."),
        col("First Seen", "string", "Time since the event was first observed.", priority=1),
        col("Count", "string", "Number of times the event occurred.", priority=1),
        col("Name", "string", "Name of the event object.", priority=1, fmt="name"),
    ], event_row),
    "ConfigMap": Printer([
        NAME_COL,
        col("Data", "string", "Number of keys in data and binaryData."),
        AGE_COL,
    ], _configmap_row),
    "Secret": Printer([
        NAME_COL,
        col("Type", "string", "Type of the secret (Opaque, kubernetes.io/tls...)."),
        col("Data", "string", "Number of keys in data."),
        AGE_COL,
    ], _secret_row),
    "ServiceAccount": Printer([
        NAME_COL,
        col("Secrets", "string", "Number of secrets listed by the service account."),
        AGE_COL,
    ], _service_account_row),
    "Service": Printer([
        NAME_COL,
        col("Type", "string", "How the service is exposed (ClusterIP, NodePort, LoadBalancer, ExternalName)."),
        col("Cluster-IP", "string", "First cluster IP of the service."),
        col("External-IP", "string", "External IPs, load-balancer ingress points or the external name."),
        col("Port(s)", "string", "Ports of the service, as port[:nodePort]/protocol."),
        AGE_COL,
        col("Selector", "string", "Labels of the pods the service routes to.", priority=1),
    ], _service_row),
    "Endpoints": Printer([
        NAME_COL,
        col("Endpoints", "string", "Up to three endpoint addresses (ip:port)."),
        AGE_COL,
    ], _endpoints_row),
    "PersistentVolume": Printer([
        NAME_COL,
        col("Capacity", "string", "Storage capacity of the volume."),
        col("Access Modes", "string", "Access modes, abbreviated (RWO, ROX, RWX, RWOP)."),
        col("Reclaim Policy", "string", "What happens to the volume when its claim is released."),
        col("Status", "string", "Phase of the volume."),
        col("Claim", "string", "The claim bound to the volume, as namespace/name."),
        col("StorageClass", "string", "Storage class of the volume."),
        col("VolumeAttributesClass", "string", "Volume attributes class of the volume."),
        col("Reason", "string", "Why the volume is in its phase, if reported."),
        AGE_COL,
        col("VolumeMode", "string", "Filesystem or Block.", priority=1),
    ], _pv_row),
    "PersistentVolumeClaim": Printer([
        NAME_COL,
        col("Status", "string", "Phase of the claim."),
        col("Volume", "string", "Name of the bound volume."),
        col("Capacity", "string", "Capacity of the bound volume."),
        col("Access Modes", "string", "Access modes of the bound volume, abbreviated."),
        col("StorageClass", "string", "Storage class of the claim."),
        col("VolumeAttributesClass", "string", "Volume attributes class of the claim."),
        AGE_COL,
        col("VolumeMode", "string", "Filesystem or Block.", priority=1),
    ], _pvc_row),
    "ReplicationController": Printer([
        NAME_COL,
        col("Desired", "integer", "Desired number of replicas."),
        col("Current", "integer", "Most recently observed number of replicas."),
        col("Ready", "integer", "Number of ready replicas."),
        AGE_COL,
        CONTAINERS_COL,
        IMAGES_COL,
        col("Selector", "string", "Labels of the pods the controller manages.", priority=1),
    ], _rc_row),
    "PodTemplate": Printer([
        NAME_COL,
        col("Containers", "string", "Names of the containers in the template."),
        col("Images", "string", "Images of the containers in the template."),
        col("Pod Labels", "string", "Labels of the pod template."),
    ], _pod_template_row),
    "ResourceQuota": Printer([
        NAME_COL,
        col("Request", "string", "Used and hard amounts of each resource other than limits.*."),
        col("Limit", "string", "Used and hard amounts of each limits.* resource."),
        AGE_COL,
    ], _quota_row),
    "ComponentStatus": Printer([
        NAME_COL,
        col("Status", "string", "Healthy, Unhealthy or Unknown."),
        col("Message", "string", "Message of the Healthy condition."),
        col("Error", "string", "Error of the Healthy condition."),
    ], _component_status_row),
    # LimitRange has no printer upstream: kube-apiserver's default table.
    "LimitRange": Printer([NAME_COL, CREATED_AT_COL], name_created_at),
}
