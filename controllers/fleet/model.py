"""The fleet description: simulated node pools and the fake DRA drivers on their nodes (issue #4).

A fleet is one YAML document (`docs/fleet.md` is the reference, `examples/fleets/` has examples),
decoded into the msgspec Structs below (`controllers.fleet.loading` reads and checks it;
`controllers.fleet.objects` builds the objects it describes). Pure.
"""

from __future__ import annotations

from typing import Literal

import msgspec

API_VERSION = "sim.cplane.dev/v1alpha1"
KIND = "Fleet"
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
DEVICE_TAINT_EFFECTS = ("NoSchedule", "NoExecute", "None")
DEFAULT_CAPACITY = {"cpu": "32", "memory": "256Gi", "pods": "110", "ephemeral-storage": "1Ti",
                    "hugepages-1Gi": "0", "hugepages-2Mi": "0"}
MAX_NODE_NAME = 63  # node names double as the `kubernetes.io/hostname` label value


class FleetError(ValueError):
    """A fleet file that cannot be used; the message names the file and the bad field."""


class _Struct(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True, omit_defaults=True):
    pass


# ---------------------------------------------------------------------- fleet-wide settings


class Metadata(_Struct, kw_only=True):
    name: str = "fleet"


class Kubelet(_Struct, kw_only=True):
    """The simulated kubelet. Times are seconds on the controller's clock."""

    version: str = "v1.37.0"
    container_runtime_version: str = "containerd://2.1.3"
    os_image: str = "Ubuntu 24.04.2 LTS"
    kernel_version: str = "6.8.0-60-generic"
    lease_duration_seconds: int = 40
    lease_renew_interval_seconds: float = 10.0  # kubelet: 0.25 x leaseDuration
    status_report_interval_seconds: float = 40.0  # node status heartbeat (lastHeartbeatTime)
    pod_shutdown_seconds: float = 1.0  # graceful deletion: min(grace period, this) before the final DELETE
    orphan_pod_quarantine_seconds: float = 40.0  # pod GC: pods bound to a node that never existed
    # The container lifecycle model (controllers/fleet/lifecycle.py): how long the app containers of
    # a pod with restartPolicy Never/OnFailure run when no annotation says (None: until deleted),
    # and the exit code they end with.
    default_run_seconds: float | None = None
    default_exit_code: int = 0


class Network(_Struct, kw_only=True):
    pod_cidr: str = msgspec.field(default="10.244.0.0/16", name="podCIDR")  # node n gets block n
    node_cidr_mask_size: int = msgspec.field(default=24, name="nodeCIDRMaskSize")
    node_address_cidr: str = msgspec.field(default="172.18.0.0/16", name="nodeAddressCIDR")  # node n: base+n+2


class DeviceClassSpec(_Struct, kw_only=True):
    """An extra DeviceClass (drivers get one each unless they opt out)."""

    name: str
    expression: str | None = None  # CEL; one selector. Default: the driver match below.
    driver: str | None = None  # shorthand for expression `device.driver == "<driver>"`
    extended_resource_name: str | None = None


# ---------------------------------------------------------------------- devices


class Attribute(_Struct, kw_only=True):
    """A typed device attribute, as in the API (exactly one of these)."""

    string: str | None = None
    int_: int | str | None = msgspec.field(default=None, name="int")  # str: a "{index}" template
    bool_: bool | None = msgspec.field(default=None, name="bool")
    version: str | None = None


AttributeValue = str | int | bool | Attribute


class ValidRange(_Struct, kw_only=True):
    min: str | int
    max: str | int | None = None
    step: str | int | None = None


class RequestPolicy(_Struct, kw_only=True):
    default: str | int | None = None
    valid_values: list[str | int] | None = None
    valid_range: ValidRange | None = None


class Capacity(_Struct, kw_only=True):
    value: str | int
    request_policy: RequestPolicy | None = None


CapacityValue = str | int | Capacity


class DeviceTaint(_Struct, kw_only=True):
    key: str
    value: str | None = None
    effect: str = "NoSchedule"


class Profile(_Struct, kw_only=True):
    """A partition shape of a partitionable GPU (MIG-like): how many, and which counters each uses.
    `allowMultipleAllocations` makes each partition shareable; `capacity` adds to (or overrides) the
    capacity a partition gets from what it consumes, with request policies as a device group's."""

    name: str
    count: int = 1
    consumes: dict[str, str | int]
    attributes: dict[str, AttributeValue] = msgspec.field(default_factory=dict)
    capacity: dict[str, CapacityValue] = msgspec.field(default_factory=dict)
    allow_multiple_allocations: bool | None = None


WHOLE_DEVICE_POSITIONS = ("first", "last")
DEFAULT_PARTITION_NAME = "{name}-{profile}-{k}"


class Partitions(_Struct, kw_only=True):
    """Per physical GPU: one counter set `counters`, the whole device (unless `wholeDevice: false`)
    consuming all of it, and `count` devices per profile consuming their share.

    Naming and order, as upstream drivers publish them: `wholeDeviceName` (template, default
    `{name}`, the GPU's own name `<namePrefix>-<i>`; also `{index}`), `wholeDevicePosition`
    (`first`, default, or `last`: after the GPU's partitions), `partitionName` (template, default
    `{name}-{profile}-{k}`; `{profile}` is the profile name made a DNS label, `{k}` the partition's
    number within its profile, `{index}` the GPU's), `counterSetName` (template, default
    `{name}-counters`; `{name}`, `{index}`)."""

    counters: dict[str, str | int]
    profiles: list[Profile]
    whole_device: bool = True
    whole_device_name: str = "{name}"
    whole_device_position: str = "first"
    partition_name: str = DEFAULT_PARTITION_NAME
    counter_set_name: str = "{name}-counters"


class NicNetwork(_Struct, kw_only=True):
    """Where the fake driver takes the addresses it reports in claim `status.devices[].networkData`."""

    cidr: str = "192.168.0.0/16"
    addresses_per_node: int = 64


class DeviceGroup(_Struct, kw_only=True):
    """`count` devices of one `type`. gpu and nic get realistic default attributes (overridable);
    generic devices have only what `attributes` / `capacity` say. String values may use the
    templates {index}, {node}, {numaNode}, {pcieRoot}; `int: "{index}"` gives an int."""

    type: Literal["gpu", "nic", "generic"] = "generic"
    count: int = 1
    name_prefix: str | None = None  # device names <prefix>-<i>; default gpu / nic / device
    model: str | None = None
    memory: str | int | None = None  # gpu: capacity memory
    driver_version: str | None = None  # gpu, nic: a semantic version
    architecture: str | None = None
    speed_gbps: int | None = None  # nic
    rdma: bool | None = None  # nic
    network: NicNetwork | None = None  # nic
    attributes: dict[str, AttributeValue] = msgspec.field(default_factory=dict)
    capacity: dict[str, CapacityValue] = msgspec.field(default_factory=dict)
    allow_multiple_allocations: bool | None = None
    taints: list[DeviceTaint] = msgspec.field(default_factory=list)
    partitions: Partitions | None = None  # gpu only


class Driver(_Struct, kw_only=True):
    """A fake DRA driver on every node of the pool: one pool per node (pool name = node name)."""

    name: str
    slice_name: str = "{node}-{driver}"  # template for the slice name ({node}, {driver})
    device_class: str | bool | None = None  # None/true: a class named after the driver; false: none
    devices: list[DeviceGroup] = msgspec.field(default_factory=list)


# ---------------------------------------------------------------------- nodes


class Taint(_Struct, kw_only=True):
    key: str
    value: str | None = None
    effect: str = "NoSchedule"


class Topology(_Struct, kw_only=True):
    """Devices of each group are spread evenly over the PCIe roots; roots over the NUMA nodes."""

    numa_nodes: int = 1
    pcie_roots: int | None = None  # default: one per NUMA node


_COUNT_NOT_GIVEN = -(2**62)  # `count` left out: 1, or the number of `nodes`


class NodePool(_Struct, kw_only=True):
    name: str
    count: int = _COUNT_NOT_GIVEN
    name_prefix: str | None = None  # node names <prefix>-<i>; default the pool name
    nodes: list[str] = msgspec.field(default_factory=list)  # node names given one by one (then no prefix)
    instance_type: str | None = None  # node.kubernetes.io/instance-type; default sim.<pool name>
    labels: dict[str, str] = msgspec.field(default_factory=dict)
    annotations: dict[str, str] = msgspec.field(default_factory=dict)
    taints: list[Taint] = msgspec.field(default_factory=list)
    capacity: dict[str, str | int] = msgspec.field(default_factory=dict)
    allocatable: dict[str, str | int] = msgspec.field(default_factory=dict)  # missing: = capacity
    topology: Topology = msgspec.field(default_factory=Topology)
    drivers: list[Driver] = msgspec.field(default_factory=list)

    def __post_init__(self) -> None:
        if self.count == _COUNT_NOT_GIVEN:
            self.count = len(self.nodes) if self.nodes else 1

    @property
    def prefix(self) -> str:
        return self.name_prefix if self.name_prefix is not None else self.name

    def node_name(self, i: int) -> str:
        """Node `i` of the pool: `nodes[i]` when the pool lists its nodes (e.g. `kind-worker`,
        `kind-worker2`), else `<namePrefix>-<i>`."""
        if self.nodes:
            return self.nodes[i]
        return f"{self.prefix}-{i}"


class Fleet(_Struct, kw_only=True):
    api_version: str = API_VERSION
    kind: str = KIND
    metadata: Metadata = msgspec.field(default_factory=Metadata)
    kubelet: Kubelet = msgspec.field(default_factory=Kubelet)
    network: Network = msgspec.field(default_factory=Network)
    device_classes: list[DeviceClassSpec] = msgspec.field(default_factory=list)
    node_pools: list[NodePool] = msgspec.field(default_factory=list)
    # Be the kubelet of Nodes the pools do not generate (made by hand, imported, recorded) too;
    # false: only of the fleet's own Nodes.
    adopt_nodes: bool = True

    @property
    def name(self) -> str:
        return self.metadata.name

    def node_count(self) -> int:
        return sum(p.count for p in self.node_pools)


def group_prefix(g: DeviceGroup) -> str:
    if g.name_prefix is not None:
        return g.name_prefix
    return {"gpu": "gpu", "nic": "nic"}.get(g.type, "device")
