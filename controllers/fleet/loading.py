"""Reading a fleet file and checking it: first its shape (unknown fields, types, as msgspec decodes
it into `controllers.fleet.model`), then its meaning (names, quantities, counts, CIDRs), then — for
the first node of every pool — the Node and ResourceSlices it generates (`controllers.fleet.objects`)
are put through the API server's own validation, so a fleet that loads is a fleet whose objects the
server accepts. Every error names the field at fault, e.g.
`fleet.yaml: nodePools[0].drivers[1].devices[0].count: must be >= 0, got -1`.

Pure (no I/O besides reading the file in `load_fleet`).
"""

from __future__ import annotations

import ipaddress
import math
import os
import re
from pathlib import Path
from typing import Any

import msgspec
import yaml

from controllers.fleet import objects as fleet_objects
from controllers.fleet.model import (
    API_VERSION,
    DEFAULT_CAPACITY,
    DEVICE_TAINT_EFFECTS,
    KIND,
    MAX_NODE_NAME,
    TAINT_EFFECTS,
    WHOLE_DEVICE_POSITIONS,
    Attribute,
    AttributeValue,
    Capacity,
    DeviceGroup,
    Driver,
    Fleet,
    FleetError,
    Kubelet,
    NodePool,
    group_prefix,
)
from cp import errors, quantity
from cp import validation as v

# ---------------------------------------------------------------------- loading


def load_fleet(path: str | os.PathLike[str]) -> Fleet:
    """Read, decode and check a fleet file. Raises FleetError naming the file and field."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise FleetError(f"{p}: cannot read: {exc.strerror or exc}") from None
    return parse_fleet(text, source=str(p))


def parse_fleet(text: str, *, source: str = "<fleet>") -> Fleet:
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise FleetError(f"{source}: not valid YAML: {exc}") from None
    return fleet_from_dict(raw, source=source)


def fleet_from_dict(raw: Any, *, source: str = "<fleet>") -> Fleet:
    if not isinstance(raw, dict):
        raise FleetError(f"{source}: a fleet is a YAML mapping (apiVersion: {API_VERSION}, kind: {KIND}, ...)")
    try:
        fleet = msgspec.convert(raw, Fleet, strict=True)
    except msgspec.ValidationError as exc:
        raise FleetError(f"{source}: {_msgspec_message(str(exc))}") from None
    problems = check(fleet)
    if problems:
        shown = "\n  ".join(problems[:20])
        more = f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else ""
        raise FleetError(f"{source}: invalid fleet:\n  {shown}{more}")
    return fleet


def _msgspec_message(text: str) -> str:
    """`Expected int, got str - at $.nodePools[0].count` -> `nodePools[0].count: expected int, got str`."""
    message, sep, where = text.rpartition(" - at `")
    if not sep:
        return text
    path = where.rstrip("`").removeprefix("$").removeprefix(".")
    message = message.replace("`", "")
    return f"{path or '(top level)'}: {message[:1].lower()}{message[1:]}"


# ---------------------------------------------------------------------- checks


class _Checker:
    def __init__(self) -> None:
        self.problems: list[str] = []

    def add(self, path: str, message: str) -> None:
        self.problems.append(f"{path}: {message}")

    def each(self, path: str, messages: list[str]) -> None:
        for m in messages:
            self.add(path, m)

    def quantity(self, path: str, value: str | int, *, nonnegative: bool = True) -> None:
        try:
            q = quantity.parse(value)
        except (quantity.QuantityError, TypeError) as exc:
            self.add(path, f"{value!r} is not a quantity ({exc})")
            return
        if nonnegative and q < 0:
            self.add(path, f"must not be negative, got {value!r}")

    def count(self, path: str, value: int, *, minimum: int = 0) -> None:
        if value < minimum:
            self.add(path, f"must be >= {minimum}, got {value}")

    def labels(self, path: str, labels: dict[str, str]) -> None:
        for key, value in labels.items():
            self.each(f"{path}[{key!r}]", v.is_qualified_name(key))
            self.each(f"{path}[{key!r}]", v.is_label_value(value))

    def semver(self, path: str, value: str) -> None:
        if not _SEMVER.match(value):
            self.add(path, f"{value!r} is not a semantic version (e.g. 1.2.3)")


_SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$")


def check(fleet: Fleet) -> list[str]:
    """Every problem found, as `path: message` (empty: the fleet is usable)."""
    c = _Checker()
    if fleet.api_version != API_VERSION:
        c.add("apiVersion", f"must be {API_VERSION!r}, got {fleet.api_version!r}")
    if fleet.kind != KIND:
        c.add("kind", f"must be {KIND!r}, got {fleet.kind!r}")
    c.each("metadata.name", v.is_dns1123_label(fleet.name))
    _check_kubelet(c, fleet.kubelet)
    _check_network(c, fleet)
    pool_names: set[str] = set()
    node_names: dict[str, str] = {}
    for i, pool in enumerate(fleet.node_pools):
        path = f"nodePools[{i}]"
        if pool.name in pool_names:
            c.add(f"{path}.name", f"duplicate pool name {pool.name!r}")
        pool_names.add(pool.name)
        _check_pool(c, path, pool)
        if pool.count > 0 and not c.problems:
            for n in range(pool.count):
                name = pool.node_name(n)
                if name in node_names:
                    where = f"{path}.nodes[{n}]" if pool.nodes else f"{path}.name"
                    c.add(where, f"node {name!r} is also generated by {node_names[name]}")
                    break
                node_names[name] = f"{path}.nodes[{n}]" if pool.nodes else path
    for i, dc in enumerate(fleet.device_classes):
        path = f"deviceClasses[{i}]"
        c.each(f"{path}.name", v.is_dns1123_subdomain(dc.name))
        if (dc.expression is None) == (dc.driver is None):
            c.add(path, "exactly one of `expression` or `driver` is required")
    if not c.problems:
        _check_generated(c, fleet)
    return c.problems


def _check_kubelet(c: _Checker, k: Kubelet) -> None:
    if not re.match(r"^v\d+\.\d+\.\d+", k.version):
        c.add("kubelet.version", f"{k.version!r} is not a Kubernetes version like v1.37.0")
    for name in ("lease_renew_interval_seconds", "status_report_interval_seconds"):
        if getattr(k, name) <= 0:
            c.add(f"kubelet.{_camel(name)}", f"must be > 0, got {getattr(k, name)}")
    for name in ("pod_shutdown_seconds", "orphan_pod_quarantine_seconds"):
        if getattr(k, name) < 0:
            c.add(f"kubelet.{_camel(name)}", f"must be >= 0, got {getattr(k, name)}")
    if k.lease_duration_seconds <= 0:
        c.add("kubelet.leaseDurationSeconds", f"must be > 0, got {k.lease_duration_seconds}")
    if k.default_run_seconds is not None and not 0 <= k.default_run_seconds < math.inf:
        c.add("kubelet.defaultRunSeconds", f"must be >= 0, got {k.default_run_seconds}")
    if not 0 <= k.default_exit_code <= 255:
        c.add("kubelet.defaultExitCode", f"must be 0..255, got {k.default_exit_code}")


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.title() for p in rest)


def _check_network(c: _Checker, fleet: Fleet) -> None:
    net = fleet.network
    try:
        pods = ipaddress.ip_network(net.pod_cidr)
    except ValueError as exc:
        c.add("network.podCIDR", str(exc))
        pods = None
    if pods is not None:
        if not pods.prefixlen <= net.node_cidr_mask_size <= pods.max_prefixlen - 2:
            c.add("network.nodeCIDRMaskSize", f"must be between {pods.prefixlen} (the podCIDR's) and "
                                              f"{pods.max_prefixlen - 2}, got {net.node_cidr_mask_size}")
        else:
            blocks = 2 ** (net.node_cidr_mask_size - pods.prefixlen)
            if blocks < fleet.node_count():
                c.add("network.podCIDR", f"{net.pod_cidr} holds {blocks} node blocks of "
                                         f"/{net.node_cidr_mask_size}; the fleet has {fleet.node_count()} nodes")
    try:
        nodes = ipaddress.ip_network(net.node_address_cidr)
    except ValueError as exc:
        c.add("network.nodeAddressCIDR", str(exc))
    else:
        if nodes.num_addresses < fleet.node_count() + 3:
            c.add("network.nodeAddressCIDR", f"{net.node_address_cidr} is too small for "
                                             f"{fleet.node_count()} nodes")


def _check_pool(c: _Checker, path: str, pool: NodePool) -> None:
    c.each(f"{path}.name", v.is_dns1123_label(pool.name))
    c.count(f"{path}.count", pool.count)
    if pool.nodes:
        if pool.name_prefix is not None:
            c.add(f"{path}.namePrefix", "not with `nodes`: the nodes are named one by one")
        if pool.count != len(pool.nodes):
            c.add(f"{path}.count", f"must be the number of `nodes` ({len(pool.nodes)}) or be left out, got {pool.count}")
        for n, node in enumerate(pool.nodes):
            problems = v.is_dns1123_subdomain(node)
            if len(node) > MAX_NODE_NAME:
                problems.append(f"must be no more than {MAX_NODE_NAME} characters (it is the hostname label)")
            for m in problems:
                c.add(f"{path}.nodes[{n}]", f"node name {node!r}: {m}")
    elif pool.count > 0:
        last = pool.node_name(pool.count - 1)
        problems = v.is_dns1123_subdomain(last)
        if len(last) > MAX_NODE_NAME:
            problems.append(f"must be no more than {MAX_NODE_NAME} characters (it is the hostname label)")
        for m in problems:
            c.add(f"{path}.namePrefix" if pool.name_prefix is not None else f"{path}.name",
                  f"node name {last!r}: {m}")
    c.labels(f"{path}.labels", pool.labels)
    for key in pool.annotations:
        c.each(f"{path}.annotations[{key!r}]", v.is_qualified_name(key))
    if pool.instance_type is not None:
        c.each(f"{path}.instanceType", v.is_label_value(pool.instance_type))
    for j, t in enumerate(pool.taints):
        tpath = f"{path}.taints[{j}]"
        c.each(f"{tpath}.key", v.is_qualified_name(t.key))
        if t.value is not None:
            c.each(f"{tpath}.value", v.is_label_value(t.value))
        if t.effect not in TAINT_EFFECTS:
            c.add(f"{tpath}.effect", f"must be one of {', '.join(TAINT_EFFECTS)}, got {t.effect!r}")
    for field, resources in (("capacity", pool.capacity), ("allocatable", pool.allocatable)):
        for key, value in resources.items():
            c.quantity(f"{path}.{field}[{key!r}]", value)
    for key in pool.allocatable:
        if key not in pool.capacity and key not in DEFAULT_CAPACITY:
            c.add(f"{path}.allocatable[{key!r}]", "is not in capacity")
    c.count(f"{path}.topology.numaNodes", pool.topology.numa_nodes, minimum=1)
    if pool.topology.pcie_roots is not None:
        c.count(f"{path}.topology.pcieRoots", pool.topology.pcie_roots, minimum=1)
    drivers: set[str] = set()
    for j, d in enumerate(pool.drivers):
        dpath = f"{path}.drivers[{j}]"
        if d.name in drivers:
            c.add(f"{dpath}.name", f"driver {d.name!r} appears twice in the pool")
        drivers.add(d.name)
        _check_driver(c, dpath, d)


def _check_driver(c: _Checker, path: str, d: Driver) -> None:
    if not d.name or len(d.name) > 63:
        c.add(f"{path}.name", "a driver name is 1 to 63 characters")
    c.each(f"{path}.name", v.is_dns1123_subdomain(d.name.lower()))
    try:
        d.slice_name.format(node="n", driver="d")
    except (KeyError, IndexError, ValueError) as exc:
        c.add(f"{path}.sliceName", f"bad template {d.slice_name!r}: only {{node}} and {{driver}} ({exc})")
    if isinstance(d.device_class, str):
        c.each(f"{path}.deviceClass", v.is_dns1123_subdomain(d.device_class))
    prefixes: dict[str, int] = {}
    for k, g in enumerate(d.devices):
        gpath = f"{path}.devices[{k}]"
        prefix = group_prefix(g)
        if prefix in prefixes:
            c.add(f"{gpath}.namePrefix", f"{prefix!r} is also used by devices[{prefixes[prefix]}]; "
                                         "device names would clash")
        prefixes[prefix] = k
        _check_group(c, gpath, g)



def _check_group(c: _Checker, path: str, g: DeviceGroup) -> None:
    c.count(f"{path}.count", g.count)
    if g.memory is not None:
        c.quantity(f"{path}.memory", g.memory)
    if g.driver_version is not None:
        c.semver(f"{path}.driverVersion", g.driver_version)
    if g.type != "gpu" and g.partitions is not None:
        c.add(f"{path}.partitions", "only gpu devices can be partitioned")
    if g.type != "nic":
        for name in ("speed_gbps", "rdma", "network"):
            if getattr(g, name) is not None:
                c.add(f"{path}.{_camel(name)}", "only for nic devices")
    if g.network is not None:
        try:
            net = ipaddress.ip_network(g.network.cidr)
        except ValueError as exc:
            c.add(f"{path}.network.cidr", str(exc))
        else:
            if net.num_addresses < g.network.addresses_per_node + 2:
                c.add(f"{path}.network.cidr", f"{g.network.cidr} is smaller than addressesPerNode")
        c.count(f"{path}.network.addressesPerNode", g.network.addresses_per_node, minimum=1)
    for key, value in g.attributes.items():
        _check_device_key(c, f"{path}.attributes[{key!r}]", key)
        _check_attribute(c, f"{path}.attributes[{key!r}]", value)
    for key, cap in g.capacity.items():
        cpath = f"{path}.capacity[{key!r}]"
        _check_device_key(c, cpath, key)
        if isinstance(cap, Capacity):
            c.quantity(f"{cpath}.value", cap.value)
            if cap.request_policy is not None and not g.allow_multiple_allocations:
                c.add(f"{cpath}.requestPolicy", "needs allowMultipleAllocations: true on the device group")
        else:
            c.quantity(cpath, cap)
    for j, t in enumerate(g.taints):
        if t.effect not in DEVICE_TAINT_EFFECTS:
            c.add(f"{path}.taints[{j}].effect", f"must be one of {', '.join(DEVICE_TAINT_EFFECTS)}, "
                                                f"got {t.effect!r}")
    if g.partitions is not None:
        p = g.partitions
        ppath = f"{path}.partitions"
        if not p.counters:
            c.add(f"{ppath}.counters", "at least one counter is required")
        for key, value in p.counters.items():
            c.each(f"{ppath}.counters[{key!r}]", v.is_dns1123_label(key))
            c.quantity(f"{ppath}.counters[{key!r}]", value)
        if p.whole_device_position not in WHOLE_DEVICE_POSITIONS:
            c.add(f"{ppath}.wholeDevicePosition", f"must be one of {', '.join(WHOLE_DEVICE_POSITIONS)}, "
                                                  f"got {p.whole_device_position!r}")
        _check_template(c, f"{ppath}.wholeDeviceName", p.whole_device_name, ("name", "index"))
        _check_template(c, f"{ppath}.partitionName", p.partition_name, ("name", "index", "profile", "k"))
        _check_template(c, f"{ppath}.counterSetName", p.counter_set_name, ("name", "index"))
        names: set[str] = set()
        for j, prof in enumerate(p.profiles):
            jpath = f"{ppath}.profiles[{j}]"
            if prof.name in names:
                c.add(f"{jpath}.name", f"duplicate profile {prof.name!r}")
            names.add(prof.name)
            c.count(f"{jpath}.count", prof.count)
            for key, cap in prof.capacity.items():
                cpath = f"{jpath}.capacity[{key!r}]"
                _check_device_key(c, cpath, key)
                if isinstance(cap, Capacity):
                    c.quantity(f"{cpath}.value", cap.value)
                    if cap.request_policy is not None and not prof.allow_multiple_allocations:
                        c.add(f"{cpath}.requestPolicy", "needs allowMultipleAllocations: true on the profile")
                else:
                    c.quantity(cpath, cap)
            if not prof.consumes:
                c.add(f"{jpath}.consumes", "at least one counter is required")
            for key, value in prof.consumes.items():
                if key not in p.counters:
                    c.add(f"{jpath}.consumes[{key!r}]", f"no such counter; counters are {sorted(p.counters)}")
                    continue
                c.quantity(f"{jpath}.consumes[{key!r}]", value)
                try:
                    if quantity.parse(value) > quantity.parse(p.counters[key]):
                        c.add(f"{jpath}.consumes[{key!r}]", f"{value} is more than the whole device has "
                                                            f"({p.counters[key]})")
                except quantity.QuantityError:
                    pass
            for key, value in prof.attributes.items():
                _check_device_key(c, f"{jpath}.attributes[{key!r}]", key)
                _check_attribute(c, f"{jpath}.attributes[{key!r}]", value)


def _check_template(c: _Checker, path: str, template: str, keys: tuple[str, ...]) -> None:
    try:
        template.format(**{k: 0 for k in keys})
    except (KeyError, IndexError, ValueError) as exc:
        c.add(path, f"bad template {template!r}: only {', '.join('{' + k + '}' for k in keys)} ({exc})")


_C_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,31}$")


def _check_device_key(c: _Checker, path: str, key: str) -> None:
    """Attribute and capacity names: `<C identifier, <= 32>` or `<domain>/<C identifier>`."""
    domain, _, ident = key.rpartition("/")
    if not _C_IDENTIFIER.match(ident) or (domain and (len(domain) > 63 or v.is_dns1123_subdomain(domain))):
        c.add(path, "must be a C identifier of at most 32 characters, optionally after a domain "
                    "(e.g. model, example.com/numa)")


def _check_attribute(c: _Checker, path: str, value: AttributeValue) -> None:
    if not isinstance(value, Attribute):
        return
    set_ = [n for n in ("string", "int_", "bool_", "version") if getattr(value, n) is not None]
    if len(set_) != 1:
        c.add(path, "exactly one of string, int, bool, version")
        return
    if isinstance(value.int_, str) and "{" not in value.int_:
        c.add(f"{path}.int", f"{value.int_!r} is neither an int nor a template like \"{{index}}\"")
    if value.version is not None and "{" not in value.version:
        c.semver(f"{path}.version", value.version)


def _check_generated(c: _Checker, fleet: Fleet) -> None:
    """Build the first node of every pool and validate its objects as the API server would."""
    plan = fleet_objects.Plan(fleet)
    seen_drivers: dict[str, str] = {}
    for i, pool in enumerate(fleet.node_pools):
        if pool.count == 0:
            continue
        node = plan.node(pool.node_name(0))
        assert node is not None
        path = f"nodePools[{i}]"
        try:
            objs: list[tuple[str, dict[str, Any]]] = [("Node", fleet_objects.node_object(plan, node))]
            objs += [("ResourceSlice", s) for s in fleet_objects.slices_for(plan, node)]
        except (KeyError, IndexError, ValueError) as exc:
            c.add(path, f"cannot build node {node.name}: {exc}")
            continue
        for kind, obj in objs:
            _validate_object(c, path, kind, obj, what=f"node {node.name}")
        for j, (driver_name, dd) in enumerate(plan.devices(node).items()):
            seen: set[str] = set()
            for device in dd.devices:
                if device["name"] in seen:
                    c.add(f"{path}.drivers[{j}]", f"node {node.name}: driver {driver_name} would publish device "
                                                  f"{device['name']!r} twice (see namePrefix, partitions.partitionName "
                                                  "and partitions.wholeDeviceName)")
                    break
                seen.add(device["name"])
            sets = [cs["name"] for cs in dd.counter_sets]
            clash = next((n for k, n in enumerate(sets) if n in sets[:k]), None)
            if clash is not None:
                c.add(f"{path}.drivers[{j}]", f"node {node.name}: driver {driver_name} would publish counter set "
                                              f"{clash!r} twice (see partitions.counterSetName)")
        for driver in pool.drivers:
            seen_drivers.setdefault(driver.name, path)
    from cp.dra import celenv

    cel = celenv.CelCache()
    explicit = {dc.name: i for i, dc in enumerate(fleet.device_classes)}
    for dc in fleet_objects.device_classes(fleet):
        name = dc["metadata"]["name"]
        path = f"deviceClasses[{explicit[name]}]" if name in explicit else f"deviceClass {name!r}"
        expression = dc["spec"]["selectors"][0]["cel"]["expression"]
        error = cel.compile(expression).error
        if error is not None:
            c.add(f"{path}.expression" if name in explicit else path, f"CEL does not compile: {error}")
        _validate_object(c, path, "DeviceClass", dc, what="fleet")


def _validate_object(c: _Checker, path: str, kind: str, obj: dict[str, Any], *, what: str) -> None:
    group = "resource.k8s.io" if kind in ("ResourceSlice", "DeviceClass") else ""
    version = "v1"
    name = obj["metadata"]["name"]
    try:
        checked, _warnings = v.check_structure(obj, group=group, version=version, kind=kind,
                                               field_validation="Strict")
        v.validate_create(checked, group=group, version=version, kind=kind, namespaced=False)
    except errors.StatusError as exc:
        c.add(path, f"{what}: the generated {kind} {name!r} would be rejected: {exc.message}")
