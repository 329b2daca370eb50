"""What the simulated fleet writes: Nodes, node Leases, ResourceSlices, DeviceClasses, pod and
claim statuses — pure functions from a `Plan` (the fleet with its derived names and addresses),
the current object and the time. The controller in `controllers.fleet.controller` decides *when*; this module
decides *what* (kwok's stages: a selector plus the next status).

Builders are idempotent: given an object's current status they keep its stable fields (transition
times, start times, container ids), so "desired == current" means "nothing to write".
"""

from __future__ import annotations

import dataclasses
import hashlib
import ipaddress
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from controllers.fleet.model import (
    DEFAULT_CAPACITY,
    Attribute,
    AttributeValue,
    Capacity,
    DeviceGroup,
    Driver,
    Fleet,
    Kubelet,
    Network,
    NodePool,
    group_prefix,
)
from cp import clock as clocks
from cp import quantity

SIMULATED = "sim.cplane.dev/simulated"  # "false" on a Node: a real kubelet owns it, hands off
FLEET = "sim.cplane.dev/fleet"
NODE_POOL = "sim.cplane.dev/node-pool"
# Pod annotations of the container lifecycle model (controllers/fleet/lifecycle.py has them all).
RUN_SECONDS = "sim.cplane.dev/run-seconds"
EXIT_CODE = "sim.cplane.dev/exit-code"
KUBELET_STATE = "sim.cplane.dev/kubelet"  # "stopped" on a Node: its simulated kubelet is down (`cplane node stop`)
KUBELET_STOPPED = "stopped"
LEASE_NAMESPACE = "kube-node-lease"
KUBELET_PORT = 10250
MAX_DEVICES = 128  # per slice
MAX_DEVICES_ADVANCED = 64  # per slice when a device has taints or consumes counters
MAX_COUNTER_SETS = 8  # per slice
_NS = uuid.UUID("6f2b1c8e-4d0a-5b7e-9c3f-2a1d0e9b8c7a")  # namespace for the fleet's stable uuids

DEFAULT_GPU_MODEL = "A100-SXM4-80GB"
DEFAULT_GPU_MEMORY = "80Gi"
DEFAULT_GPU_DRIVER_VERSION = "550.54.15"
DEFAULT_NIC_MODEL = "ConnectX-7"
DEFAULT_NIC_SPEED_GBPS = 400
DEFAULT_NIC_DRIVER_VERSION = "28.39.1002"


def stable_uuid(*parts: str) -> uuid.UUID:
    return uuid.uuid5(_NS, "/".join(parts))


def stable_hex(*parts: str) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()


# ---------------------------------------------------------------------- the plan


@dataclasses.dataclass(frozen=True, slots=True)
class NodePlan:
    name: str
    index: int  # position in the fleet: picks the pod CIDR block and the node address
    pool: NodePool


@dataclasses.dataclass(frozen=True, slots=True)
class NetworkData:
    interface_name: str
    ips: tuple[str, ...]
    hardware_address: str

    def status(self) -> dict[str, Any]:
        return {"interfaceName": self.interface_name, "ips": list(self.ips),
                "hardwareAddress": self.hardware_address}


@dataclasses.dataclass(slots=True)
class DriverDevices:
    """One node's pool of one driver: its devices, counter sets, and NIC network data by device."""

    driver: Driver
    devices: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    counter_sets: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    network: dict[str, NetworkData] = dataclasses.field(default_factory=dict)


class Plan:
    """The fleet plus everything derived from it: node names, indexes, CIDRs, per-node devices.
    Also assigns indexes to Nodes that are not in the fleet (created by hand), after the fleet's."""

    def __init__(self, fleet: Fleet | None) -> None:
        self.fleet = fleet or Fleet()
        self.kubelet: Kubelet = self.fleet.kubelet
        self.network: Network = self.fleet.network
        self.nodes: dict[str, NodePlan] = {}
        for pool in self.fleet.node_pools:
            for i in range(pool.count):
                name = pool.node_name(i)
                self.nodes[name] = NodePlan(name=name, index=len(self.nodes), pool=pool)
        self.drivers: frozenset[str] = frozenset(d.name for p in self.fleet.node_pools for d in p.drivers)
        self._extra_index: dict[str, int] = {}
        self._devices: dict[str, dict[str, DriverDevices]] = {}
        self._pod_net = ipaddress.ip_network(self.network.pod_cidr)
        self._node_net = ipaddress.ip_network(self.network.node_address_cidr)

    def node(self, name: str) -> NodePlan | None:
        return self.nodes.get(name)

    def simulates(self, node_obj: Mapping[str, Any]) -> bool:
        """This fleet is the Node's kubelet: not annotated `simulated: "false"`, and the fleet's own
        or adopted (`adoptNodes`, the default)."""
        name = str((node_obj.get("metadata") or {}).get("name") or "")
        return is_simulated(node_obj) and (self.fleet.adopt_nodes or name in self.nodes)

    def index(self, node_name: str) -> int:
        plan = self.nodes.get(node_name)
        if plan is not None:
            return plan.index
        idx = self._extra_index.get(node_name)
        if idx is None:
            idx = len(self.nodes) + len(self._extra_index)
            self._extra_index[node_name] = idx
        return idx

    def block_index(self, cidr: str) -> int | None:
        """Which node block of the pod CIDR `cidr` is (None: not one of ours)."""
        try:
            net = ipaddress.ip_network(cidr, strict=False)
        except ValueError:
            return None
        if net.prefixlen != self.network.node_cidr_mask_size or not net.subnet_of(self._pod_net):  # type: ignore[arg-type]
            return None
        step: int = 2 ** (int(self._pod_net.max_prefixlen) - net.prefixlen)
        return (int(net.network_address) - int(self._pod_net.network_address)) // step

    def assign_index(self, node_name: str, taken: Iterable[int]) -> int:
        """Give a Node made by hand the lowest node index (pod block, address) not taken."""
        used = set(taken) | {p.index for p in self.nodes.values()} | {
            i for n, i in self._extra_index.items() if n != node_name}
        idx = len(self.nodes)
        while idx in used:
            idx += 1
        self._extra_index[node_name] = idx
        return idx

    def adopt_index(self, node_name: str, idx: int) -> None:
        if node_name not in self.nodes:
            self._extra_index[node_name] = idx

    def pod_block(self, node_name: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
        size = self.network.node_cidr_mask_size
        blocks = 2 ** (size - self._pod_net.prefixlen)
        i = self.index(node_name) % blocks
        step = 2 ** (self._pod_net.max_prefixlen - size)
        base = self._pod_net.network_address + i * step
        return ipaddress.ip_network(f"{base}/{size}")

    def node_address(self, node_name: str) -> str:
        n = (self.index(node_name) + 2) % self._node_net.num_addresses
        return str(self._node_net.network_address + n)

    def devices(self, node: NodePlan) -> dict[str, DriverDevices]:
        """The node's devices by driver name (built once, then cached)."""
        got = self._devices.get(node.name)
        if got is None:
            got = _build_devices(self, node)
            self._devices[node.name] = got
        return got

    def network_data(self, node_name: str, driver: str, device: str) -> NetworkData | None:
        node = self.nodes.get(node_name)
        if node is None:
            return None
        dd = self.devices(node).get(driver)
        return dd.network.get(device) if dd is not None else None


# ---------------------------------------------------------------------- nodes


def _quantities(values: Mapping[str, str | int]) -> dict[str, str]:
    return {k: quantity.canonical(v) for k, v in values.items()}


def capacity(pool: NodePool) -> dict[str, str]:
    return _quantities({**DEFAULT_CAPACITY, **pool.capacity})


def allocatable(pool: NodePool) -> dict[str, str]:
    return {**capacity(pool), **_quantities(pool.allocatable)}


def node_labels(plan: Plan, node: NodePlan) -> dict[str, str]:
    return {
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": node.name,
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": node.pool.instance_type or f"sim.{node.pool.name}",
        NODE_POOL: node.pool.name,
        **node.pool.labels,
    }


def node_annotations(plan: Plan, node: NodePlan) -> dict[str, str]:
    return {
        SIMULATED: "true",
        FLEET: plan.fleet.name,
        "node.alpha.kubernetes.io/ttl": "0",
        "volumes.kubernetes.io/controller-managed-attach-detach": "true",
        **node.pool.annotations,
    }


def node_info(kubelet: Kubelet, name: str) -> dict[str, str]:
    return {
        "machineID": stable_uuid("machine", name).hex,
        "systemUUID": str(stable_uuid("system", name)),
        "bootID": str(stable_uuid("boot", name)),
        "kernelVersion": kubelet.kernel_version,
        "osImage": kubelet.os_image,
        "containerRuntimeVersion": kubelet.container_runtime_version,
        "kubeletVersion": kubelet.version,
        # Deprecated, and left empty by kubelets since 1.31; Go's encoder writes it all the same.
        "kubeProxyVersion": "",
        "operatingSystem": "linux",
        "architecture": "amd64",
    }


NODE_CONDITIONS = (
    ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
)


def node_conditions(now: float, existing: Sequence[Mapping[str, Any]] = ()) -> list[dict[str, Any]]:
    """The kubelet's four conditions with a fresh heartbeat (transition times kept when unchanged)."""
    stamp = clocks.rfc3339(now)
    old = {c.get("type"): c for c in existing}
    out = []
    for type_, status, reason, message in NODE_CONDITIONS:
        prev = old.get(type_)
        since = prev.get("lastTransitionTime") if prev and prev.get("status") == status else None
        out.append({"type": type_, "status": status, "lastHeartbeatTime": stamp,
                    "lastTransitionTime": since or stamp, "reason": reason, "message": message})
    return out


def node_addresses(plan: Plan, name: str) -> list[dict[str, str]]:
    return [{"type": "InternalIP", "address": plan.node_address(name)}, {"type": "Hostname", "address": name}]


def node_status(plan: Plan, node: NodePlan, now: float) -> dict[str, Any]:
    return {
        "capacity": capacity(node.pool),
        "allocatable": allocatable(node.pool),
        "conditions": node_conditions(now),
        "addresses": node_addresses(plan, node.name),
        "daemonEndpoints": {"kubeletEndpoint": {"Port": KUBELET_PORT}},
        "nodeInfo": node_info(plan.kubelet, node.name),
    }


def node_object(plan: Plan, node: NodePlan, now: float = 0.0) -> dict[str, Any]:
    block = str(plan.pod_block(node.name))
    spec: dict[str, Any] = {"podCIDR": block, "podCIDRs": [block],
                            "providerID": f"sim://{plan.fleet.name}/{node.name}"}
    if node.pool.taints:
        spec["taints"] = [{k: val for k, val in (("key", t.key), ("value", t.value), ("effect", t.effect))
                           if val is not None} for t in node.pool.taints]
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": node.name, "labels": node_labels(plan, node),
                     "annotations": node_annotations(plan, node)},
        "spec": spec,
        "status": node_status(plan, node, now),
    }


def node_status_patch(plan: Plan, node_obj: Mapping[str, Any], now: float) -> dict[str, Any]:
    """The kubelet's periodic status write: a heartbeat on its conditions, plus whatever a Node
    created by hand lacks (capacity, nodeInfo, addresses...) or a fleet Node drifted from. A Node
    a kubelet reported before (`reported`: imported or recorded) keeps its capacity, allocatable
    and nodeInfo."""
    status = node_obj.get("status") or {}
    name = str((node_obj.get("metadata") or {}).get("name") or "")
    patch: dict[str, Any] = {"conditions": node_conditions(now, status.get("conditions") or [])}
    fleet_node = plan.node(name)
    if fleet_node is not None:
        wanted: dict[str, Any] = {"capacity": capacity(fleet_node.pool), "allocatable": allocatable(fleet_node.pool),
                                  "nodeInfo": node_info(plan.kubelet, name)}
    elif reported(node_obj):
        # A Node a kubelet reported before (imported, recorded): what it reported is kept.
        wanted = {}
    else:
        wanted = {"capacity": {**_quantities(DEFAULT_CAPACITY), **(status.get("capacity") or {})}}
        wanted["allocatable"] = {**wanted["capacity"], **(status.get("allocatable") or {})}
        # A field the server returns empty (Go writes them all) is one nobody set.
        wanted["nodeInfo"] = {**node_info(plan.kubelet, name),
                              **{k: v for k, v in (status.get("nodeInfo") or {}).items() if v}}
    if not status.get("addresses"):
        wanted["addresses"] = node_addresses(plan, name)
    if not status.get("daemonEndpoints"):
        wanted["daemonEndpoints"] = {"kubeletEndpoint": {"Port": KUBELET_PORT}}
    for key, value in wanted.items():
        if status.get(key) != value:
            patch[key] = value
    return {"status": patch}


def heartbeat_due(node_obj: Mapping[str, Any], interval: float) -> float:
    """When the next status heartbeat is due (0: now — no Ready heartbeat yet, or not Ready)."""
    for c in (node_obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            if c.get("status") != "True" or c.get("reason") != "KubeletReady" or not c.get("lastHeartbeatTime"):
                return 0.0
            try:
                return clocks.parse_time(str(c["lastHeartbeatTime"])) + interval
            except ValueError:
                return 0.0
    return 0.0


def reported(node_obj: Mapping[str, Any]) -> bool:
    """A kubelet reported the Node's status before (its `nodeInfo.kubeletVersion`, capacity and
    allocatable are set): an imported or recorded Node, not one made by hand."""
    status = node_obj.get("status") or {}
    return bool((status.get("nodeInfo") or {}).get("kubeletVersion") and status.get("capacity")
                and status.get("allocatable"))


def is_simulated(node_obj: Mapping[str, Any]) -> bool:
    annotations = (node_obj.get("metadata") or {}).get("annotations") or {}
    return annotations.get(SIMULATED) != "false"


def kubelet_stopped(node_obj: Mapping[str, Any]) -> bool:
    """The Node's simulated kubelet is stopped: no Lease renewals, status heartbeats or pod updates."""
    annotations = (node_obj.get("metadata") or {}).get("annotations") or {}
    return annotations.get(KUBELET_STATE) == KUBELET_STOPPED


def owner_ref(node_obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = node_obj.get("metadata") or {}
    return {"apiVersion": "v1", "kind": "Node", "name": meta.get("name"), "uid": meta.get("uid")}


def lease_object(node_obj: Mapping[str, Any], kubelet: Kubelet, now: float) -> dict[str, Any]:
    name = str((node_obj.get("metadata") or {}).get("name"))
    return {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": name, "namespace": LEASE_NAMESPACE, "ownerReferences": [owner_ref(node_obj)]},
        "spec": {"holderIdentity": name, "leaseDurationSeconds": kubelet.lease_duration_seconds,
                 "renewTime": clocks.rfc3339_micro(now)},
    }


def lease_renewal(kubelet: Kubelet, name: str, now: float) -> dict[str, Any]:
    return {"spec": {"holderIdentity": name, "leaseDurationSeconds": kubelet.lease_duration_seconds,
                     "renewTime": clocks.rfc3339_micro(now)}}


# ---------------------------------------------------------------------- devices


def _attr(value: AttributeValue, env: Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(value, Attribute):
        if value.string is not None:
            return {"string": _fill(value.string, env)}
        if value.version is not None:
            return {"version": _fill(value.version, env)}
        if value.bool_ is not None:
            return {"bool": value.bool_}
        if isinstance(value.int_, str):
            return {"int": int(_fill(value.int_, env))}
        return {"int": value.int_}
    if isinstance(value, bool):
        return {"bool": value}
    if isinstance(value, int):
        return {"int": value}
    return {"string": _fill(value, env)}


def _fill(text: str, env: Mapping[str, Any]) -> str:
    return text.format_map(env) if "{" in text else text


def _capacity(value: str | int | Capacity) -> dict[str, Any]:
    if not isinstance(value, Capacity):
        return {"value": quantity.canonical(value)}
    out: dict[str, Any] = {"value": quantity.canonical(value.value)}
    p = value.request_policy
    if p is not None:
        policy: dict[str, Any] = {}
        if p.default is not None:
            policy["default"] = quantity.canonical(p.default)
        if p.valid_values is not None:
            policy["validValues"] = [quantity.canonical(x) for x in p.valid_values]
        if p.valid_range is not None:
            rng = {"min": quantity.canonical(p.valid_range.min)}
            if p.valid_range.max is not None:
                rng["max"] = quantity.canonical(p.valid_range.max)
            if p.valid_range.step is not None:
                rng["step"] = quantity.canonical(p.valid_range.step)
            policy["validRange"] = rng
        out["requestPolicy"] = policy
    return out


def _root_name(r: int) -> str:
    """`resource.kubernetes.io/pcieRoot` values: pci<domain>:<bus>, eight roots per domain."""
    return f"pci{r // 8:04x}:{0x10 + (r % 8) * 0x20:02x}"


def _mac(*parts: str) -> str:
    h = stable_hex(*parts)
    return "02:" + ":".join(h[i:i + 2] for i in range(0, 10, 2))  # locally administered


def _c_identifier(name: str) -> bool:
    return name.isidentifier() and name.isascii() and len(name) <= 32


class _Topology:
    """Assigns PCIe roots, bus ids and NUMA nodes to the devices of one node."""

    def __init__(self, pool: NodePool) -> None:
        self.numa = pool.topology.numa_nodes
        self.roots = pool.topology.pcie_roots or self.numa
        self._slots = [0] * self.roots

    def place(self, i: int, count: int) -> tuple[str, str, int]:
        r = i * self.roots // max(count, 1)
        slot = self._slots[r]
        self._slots[r] += 1
        bus = 0x10 + (r % 8) * 0x20 + 1 + slot
        bdf = f"{r // 8:04x}:{bus % 256:02x}:00.0"
        return _root_name(r), bdf, r * self.numa // self.roots


def _build_devices(plan: Plan, node: NodePlan) -> dict[str, DriverDevices]:
    topo = _Topology(node.pool)
    out: dict[str, DriverDevices] = {}
    for driver in node.pool.drivers:
        dd = DriverDevices(driver=driver)
        for group in driver.devices:
            _group_devices(plan, node, driver, group, topo, dd)
        out[driver.name] = dd
    return out


def _group_devices(plan: Plan, node: NodePlan, driver: Driver, g: DeviceGroup, topo: _Topology,
                   dd: DriverDevices) -> None:
    prefix = group_prefix(g)
    for i in range(g.count):
        name = f"{prefix}-{i}"
        root, bdf, numa = topo.place(i, g.count)
        env = {"index": i, "node": node.name, "numaNode": numa, "pcieRoot": root}
        attrs: dict[str, Any] = {}
        caps: dict[str, Any] = {}
        if g.type == "gpu":
            attrs["type"] = {"string": "gpu"}
            attrs["index"] = {"int": i}
            attrs["uuid"] = {"string": f"GPU-{stable_uuid(node.name, driver.name, name)}"}
            attrs["model"] = {"string": g.model or DEFAULT_GPU_MODEL}
            attrs["driverVersion"] = {"version": g.driver_version or DEFAULT_GPU_DRIVER_VERSION}
            if g.architecture:
                attrs["architecture"] = {"string": g.architecture}
            caps["memory"] = {"value": quantity.canonical(g.memory or DEFAULT_GPU_MEMORY)}
        elif g.type == "nic":
            iface = f"ens{i + 1}f0"
            mac = _mac(node.name, driver.name, name)
            attrs["type"] = {"string": "nic"}
            attrs["index"] = {"int": i}
            attrs["model"] = {"string": g.model or DEFAULT_NIC_MODEL}
            attrs["driverVersion"] = {"version": g.driver_version or DEFAULT_NIC_DRIVER_VERSION}
            attrs["interfaceName"] = {"string": iface}
            attrs["macAddress"] = {"string": mac}
            attrs["speedGbps"] = {"int": g.speed_gbps or DEFAULT_NIC_SPEED_GBPS}
            attrs["rdma"] = {"bool": True if g.rdma is None else g.rdma}
            dd.network[name] = NetworkData(interface_name=iface, ips=(_nic_ip(plan, node, g, i),),
                                           hardware_address=mac)
        elif g.model:
            attrs["model"] = {"string": g.model}
        if g.type in ("gpu", "nic"):
            attrs["resource.kubernetes.io/pcieRoot"] = {"string": root}
            attrs["resource.kubernetes.io/pciBusID"] = {"string": bdf}
            attrs["resource.kubernetes.io/numaNode"] = {"int": numa}
        attrs.update({k: _attr(val, env) for k, val in g.attributes.items()})
        caps.update({k: _capacity(val) for k, val in g.capacity.items()})
        device: dict[str, Any] = {"name": name}
        if attrs:
            device["attributes"] = attrs
        if caps:
            device["capacity"] = caps
        if g.allow_multiple_allocations:
            device["allowMultipleAllocations"] = True
        if g.taints:
            device["taints"] = [{k: val for k, val in (("key", t.key), ("value", t.value), ("effect", t.effect))
                                 if val is not None} for t in g.taints]
        if g.partitions is None:
            dd.devices.append(device)
            continue
        # Partitionable: one counter set per physical GPU, the whole GPU and its partitions consume it.
        p = g.partitions
        counter_set = p.counter_set_name.format(name=name, index=i)
        counters = {k: {"value": quantity.canonical(val)} for k, val in p.counters.items()}
        dd.counter_sets.append({"name": counter_set, "counters": counters})
        whole: dict[str, Any] | None = None
        if p.whole_device:
            whole = dict(device)
            whole["name"] = p.whole_device_name.format(name=name, index=i)
            whole["consumesCounters"] = [{"counterSet": counter_set, "counters": counters}]
            if p.whole_device_position == "first":
                dd.devices.append(whole)
        parent_uuid = attrs.get("uuid", {}).get("string", "")
        for prof in p.profiles:
            slug = profile_slug(prof.name)
            for k in range(prof.count):
                pname = p.partition_name.format(name=name, index=i, profile=slug, k=k)
                pattrs = {key: val for key, val in attrs.items() if key not in ("uuid", "index")}
                pattrs["type"] = {"string": "mig" if g.type == "gpu" else "partition"}
                pattrs["profile"] = {"string": prof.name}
                pattrs["parentIndex"] = {"int": i}
                if parent_uuid:
                    pattrs["parentUUID"] = {"string": parent_uuid}
                pattrs["uuid"] = {"string": f"MIG-{stable_uuid(node.name, driver.name, pname)}"}
                pattrs.update({key: _attr(val, env) for key, val in prof.attributes.items()})
                used = {key: {"value": quantity.canonical(val)} for key, val in prof.consumes.items()}
                # A shared partition's capacity is what `capacity` says only: a capacity without a
                # request policy is taken whole by each allocation, which would forbid sharing.
                pcaps: dict[str, Any] = {} if prof.allow_multiple_allocations else {
                    key: val for key, val in used.items() if _c_identifier(key)}
                pcaps.update({key: _capacity(val) for key, val in prof.capacity.items()})
                part: dict[str, Any] = {"name": pname, "attributes": pattrs}
                if pcaps:
                    part["capacity"] = pcaps
                if prof.allow_multiple_allocations:
                    part["allowMultipleAllocations"] = True
                if device.get("taints"):
                    part["taints"] = device["taints"]
                part["consumesCounters"] = [{"counterSet": counter_set, "counters": used}]
                dd.devices.append(part)
        if whole is not None and p.whole_device_position == "last":
            dd.devices.append(whole)


def profile_slug(profile: str) -> str:
    """A partition profile's name as it appears in partition names: lower case, `-` for the rest."""
    return "".join(ch if ch.isalnum() else "-" for ch in profile.lower()).strip("-")


def _nic_ip(plan: Plan, node: NodePlan, g: DeviceGroup, i: int) -> str:
    net_spec = g.network
    cidr = net_spec.cidr if net_spec is not None else "192.168.0.0/16"
    per_node = net_spec.addresses_per_node if net_spec is not None else 64
    net = ipaddress.ip_network(cidr)
    offset = (node.index * per_node + i + 1) % max(net.num_addresses - 1, 1) or 1
    return f"{net.network_address + offset}/{net.prefixlen}"


def slice_names(driver: Driver, node_name: str, device_chunks: int, counter_chunks: int) -> list[str]:
    base = driver.slice_name.format(node=node_name, driver=driver.name)
    names = [base if device_chunks == 1 else f"{base}-{k}" for k in range(device_chunks)]
    names += [f"{base}-counters" if counter_chunks == 1 else f"{base}-counters-{k}" for k in range(counter_chunks)]
    return names


def _chunks(items: list[dict[str, Any]], size: int) -> list[list[dict[str, Any]]]:
    return [items[k:k + size] for k in range(0, len(items), size)] or [[]]


def slices_for(plan: Plan, node: NodePlan, *, generation: int = 1,
               owner: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """Every ResourceSlice the node's fake drivers publish: one pool per driver named after the
    node, split over as many slices as the per-slice limits require (counter sets in slices of
    their own, as the API wants since 1.35)."""
    out: list[dict[str, Any]] = []
    for name, dd in plan.devices(node).items():
        advanced = any(d.get("consumesCounters") or d.get("taints") for d in dd.devices)
        device_chunks = _chunks(dd.devices, MAX_DEVICES_ADVANCED if advanced else MAX_DEVICES)
        counter_chunks = ([dd.counter_sets[k:k + MAX_COUNTER_SETS]
                           for k in range(0, len(dd.counter_sets), MAX_COUNTER_SETS)])
        names = slice_names(dd.driver, node.name, len(device_chunks), len(counter_chunks))
        total = len(names)
        bodies: list[tuple[str, Any]] = [("devices", c) for c in device_chunks]
        bodies += [("sharedCounters", c) for c in counter_chunks]
        for slice_name, (field, content) in zip(names, bodies, strict=True):
            meta: dict[str, Any] = {"name": slice_name, "labels": {FLEET: plan.fleet.name}}
            if owner is not None:
                meta["ownerReferences"] = [{**owner_ref(owner), "controller": True}]
            out.append({
                "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                "metadata": meta,
                "spec": {"driver": name, "nodeName": node.name,
                         "pool": {"name": node.name, "generation": generation, "resourceSliceCount": total},
                         field: content},
            })
    return out


def device_classes(fleet: Fleet) -> list[dict[str, Any]]:
    """One class per driver (named after it unless the driver says otherwise), then the extras."""
    out: dict[str, dict[str, Any]] = {}
    for pool in fleet.node_pools:
        for d in pool.drivers:
            if d.device_class is False:
                continue
            name = d.device_class if isinstance(d.device_class, str) else d.name
            out.setdefault(name, _device_class(fleet, name, f'device.driver == "{d.name}"', None))
    for dc in fleet.device_classes:
        expr = dc.expression if dc.expression is not None else f'device.driver == "{dc.driver}"'
        out[dc.name] = _device_class(fleet, dc.name, expr, dc.extended_resource_name)
    return list(out.values())


def _device_class(fleet: Fleet, name: str, expression: str, extended: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": expression}}]}
    if extended:
        spec["extendedResourceName"] = extended
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": name, "labels": {FLEET: fleet.name}}, "spec": spec}


# ---------------------------------------------------------------------- pods


def image_ref(image: str) -> tuple[str, str]:
    """(repository, tag) the way the runtime reports them: `busybox` -> docker.io/library/busybox, latest."""
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    tag = ""
    if ":" in last:
        name, tag = name.rsplit(":", 1)
    first = name.split("/", 1)[0]
    if "/" not in name:
        name = f"docker.io/library/{name}"
    elif not ("." in first or ":" in first or first == "localhost"):
        name = f"docker.io/{name}"
    return name, tag or ("" if digest else "latest")


def merge_conditions(existing: Sequence[Mapping[str, Any]], ours: Iterable[tuple[str, str, str, str]],
                     now: float) -> list[dict[str, Any]]:
    old = {c.get("type"): c for c in existing}
    out: list[dict[str, Any]] = []
    mine: set[str] = set()
    for type_, status, reason, message in ours:
        mine.add(type_)
        prev = old.get(type_)
        since = prev.get("lastTransitionTime") if prev and prev.get("status") == status else None
        c: dict[str, Any] = {"type": type_, "status": status,
                             "lastTransitionTime": since or clocks.rfc3339(now)}
        if reason:
            c["reason"] = reason
        if message:
            c["message"] = message
        out.append(c)
    out.extend(dict(c) for c in existing if c.get("type") not in mine)
    return out


def gates_ready(pod: Mapping[str, Any]) -> tuple[bool, str]:
    """Whether every readiness gate's condition is True, and if not the kubelet's message."""
    status = pod.get("status") or {}
    have = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
    problems = []
    for gate in (pod.get("spec") or {}).get("readinessGates") or []:
        t = gate.get("conditionType")
        if t not in have:
            problems.append(f'corresponding condition of pod readiness gate "{t}" does not exist.')
        elif have[t] != "True":
            problems.append(f'the status of pod readiness gate "{t}" is not "True", but {have[t]}')
    return not problems, ", ".join(problems)


def names_list(containers: Iterable[Mapping[str, Any]]) -> str:
    return "[" + " ".join(str(c.get("name")) for c in containers) + "]"


TERMINAL_PHASES = ("Succeeded", "Failed")
OWNED_POD_STATUS = ("phase", "conditions", "hostIP", "hostIPs", "podIP", "podIPs", "startTime",
                    "containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses", "reason", "message")


def status_differs(pod: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    current = pod.get("status") or {}
    return any(current.get(k) != desired.get(k) for k in OWNED_POD_STATUS if k in desired)


def pod_gc_status(pod: Mapping[str, Any], now: float) -> dict[str, Any]:
    """Pod GC's mark before it deletes a pod whose node is gone."""
    status = pod.get("status") or {}
    conds = merge_conditions(status.get("conditions") or [],
                             [("DisruptionTarget", "True", "DeletionByPodGC", "PodGC: node no longer exists")], now)
    out: dict[str, Any] = {"conditions": conds}
    if status.get("phase") not in ("Succeeded", "Failed"):
        out["phase"] = "Failed"
    return out


# ---------------------------------------------------------------------- claims


def device_status(driver: str, pool: str, device: str, share_id: str | None, now: float,
                  network: NetworkData | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"driver": driver, "pool": pool, "device": device}
    if share_id:
        entry["shareID"] = share_id
    entry["conditions"] = [{"type": "Ready", "status": "True", "reason": "DevicePrepared",
                            "message": "prepared by the simulated driver", "lastTransitionTime": clocks.rfc3339(now)}]
    if network is not None:
        entry["networkData"] = network.status()
    return entry


def device_key(entry: Mapping[str, Any]) -> tuple[str, str, str, str]:
    return (str(entry.get("driver") or ""), str(entry.get("pool") or ""), str(entry.get("device") or ""),
            str(entry.get("shareID") or ""))
