"""Services' REST storage beyond the generic store (`pkg/registry/core/service/storage`): cluster IPs and
node ports allocated as a Service is created or changes type, and given back when it goes.

- **Cluster IPs**, as 1.37's MultiCIDRServiceAllocator: one `networking.k8s.io/v1` IPAddress object per
  allocated address (named by the address, `spec.parentRef` to the Service, labelled as managed by
  `ipallocator.k8s.io`). Creating that object is the allocation: the log's conditional create lets one
  writer win, so concurrent Services never share an address. It is deleted when the Service goes, or
  when the write that allocated it fails.
- **Node ports** (and health check node ports) are the ports the stored Services hold, plus those this
  server handed out to writes not yet visible in what it lists (kept until a list shows them), so
  concurrent writes through one server never share one. (Upstream keeps a bitmap in etcd instead.)
- The IP family fields (`ipFamilies`, `ipFamilyPolicy`) are initialised as upstream's
  `initIPFamilyFields`, for a single-stack cluster of the range's family.

The store calls `begin_create` / `begin_update` before it validates (upstream's BeginCreate and
BeginUpdate) and the returned `finish(succeeded)` after the write, and `after_delete` once a Service has
left the log. Dry runs allocate nothing.
"""

from __future__ import annotations

import asyncio
import copy
import random
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
import structlog

from api.admission import listers
from cp import allocation, errors
from cp import clock as clocks
from cp import resources as res
from cp.strategies import service as strategy
from cp.validation import service as rules
from storage import log

logger = structlog.get_logger("cplane.api.services")

Finish = Callable[[bool], Awaitable[None]]
Writer = Callable[[], Any]  # a new WriteContext of the server itself (api.app.server_context)
_decode = msgspec.json.Decoder().decode


async def _nothing(_succeeded: bool) -> None:
    return None


def _invalid(name: str, causes: list[errors.Cause]) -> errors.Invalid:
    return errors.Invalid(kind="Service", group="", name=name, causes=causes)


def _spec(obj: dict[str, Any]) -> dict[str, Any]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = {}
        obj["spec"] = spec
    return spec


def _strs(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


class ServiceAllocator:
    """The allocators of one server (`Store.hooks[("", "services")]`)."""

    def __init__(self, *, ranges: allocation.ServiceRanges, writer: Writer, rng: random.Random | None = None) -> None:
        self.ranges = ranges
        self.network = ranges.network
        self.ports = ranges.ports
        self.family = ranges.family
        self.writer = writer
        self.rng = rng or random.Random()
        self._ip_addresses = listers.Lister(group="networking.k8s.io", resource="ipaddresses")
        self._taken: set[str] | None = None  # addresses known to be allocated (see _allocate_next_ip)
        # Node ports handed out: port -> revision of the write that took it (None while in flight).
        self._pending: dict[int, int | None] = {}
        self._services_at = -1
        self._used_ports: set[int] = set()
        self._ports_of: dict[tuple[str, str], tuple[int, list[int]]] = {}  # Service -> (revision, node ports)

    # ---------------------------------------------------------------- hooks

    async def begin_create(self, store: Any, obj: dict[str, Any], ctx: Any) -> Finish:
        name = str((obj.get("metadata") or {}).get("name") or "")
        strategy.normalize_cluster_ips(obj, None)
        self.init_ip_families(obj, None, name=name)
        spec = _spec(obj)
        ips = await self._allocate_cluster_ips(store, obj, name=name, dry_run=ctx.dry_run)
        try:
            ports = await self._allocate_node_ports(store, spec, None, name=name, dry_run=ctx.dry_run)
        except BaseException:
            await self._release_ips(store, ips)
            raise

        async def finish(succeeded: bool) -> None:
            await self._settle_ports(store, ports, succeeded)
            if not succeeded:
                await self._release_ips(store, ips)

        return finish

    async def begin_update(self, store: Any, new: dict[str, Any], old: dict[str, Any], ctx: Any) -> Finish:
        meta, old_meta = new.get("metadata"), old.get("metadata") or {}
        if isinstance(meta, dict):  # the store keeps the stored name and namespace anyway
            for key in ("name", "namespace"):
                meta[key] = old_meta.get(key)
        name = str(old_meta.get("name") or "")
        strategy.prepare_service_update(new, old)
        self.init_ip_families(new, old, name=name)
        spec, old_spec = _spec(new), _spec(old)
        allocated: list[str] = []
        released: list[str] = []
        if old_spec.get("type") == "ExternalName" and spec.get("type") != "ExternalName":
            allocated = await self._allocate_cluster_ips(store, new, name=name, dry_run=ctx.dry_run)
        elif old_spec.get("type") != "ExternalName" and spec.get("type") == "ExternalName" \
                and not rules.is_headless(old_spec):
            released = [ip for ip in _strs(old_spec.get("clusterIPs")) if ip and ip != "None"]
        try:
            ports = await self._allocate_node_ports(store, spec, old_spec, name=name, dry_run=ctx.dry_run)
        except BaseException:
            await self._release_ips(store, allocated)
            raise

        async def finish(succeeded: bool) -> None:
            await self._settle_ports(store, ports, succeeded)
            if ctx.dry_run:
                return
            await self._release_ips(store, released if succeeded else allocated)

        return finish

    async def after_delete(self, store: Any, obj: dict[str, Any], _ctx: Any) -> None:
        spec = _spec(obj)
        if spec.get("type") == "ExternalName":
            return
        await self._release_ips(store, [ip for ip in _strs(spec.get("clusterIPs")) if ip != "None"],
                                owner=obj)

    # ---------------------------------------------------------------- IP families

    def init_ip_families(self, obj: dict[str, Any], old: dict[str, Any] | None, *, name: str) -> None:
        """`initIPFamilyFields` for a single-stack cluster."""
        spec = _spec(obj)
        if spec.get("type") == "ExternalName":
            return
        selectorless_headless = spec.get("clusterIP") == "None" and not spec.get("selector")
        if spec.get("ipFamilyPolicy") is None:
            old_policy = _spec(old).get("ipFamilyPolicy") if old is not None else None
            if old_policy is not None:
                spec["ipFamilyPolicy"] = old_policy
            elif selectorless_headless:
                spec["ipFamilyPolicy"] = "RequireDualStack"
            else:
                spec["ipFamilyPolicy"] = "SingleStack"
        causes: list[errors.Cause] = []
        rules.validate_cluster_ips(spec, causes)
        if causes:
            raise _invalid(name, causes)
        policy = spec["ipFamilyPolicy"]
        ips = _strs(spec.get("clusterIPs"))
        families = _strs(spec.get("ipFamilies"))
        if policy == "SingleStack":
            if len(ips) == 2:
                causes.append(errors.Cause("Invalid", "spec.ipFamilyPolicy", "must be 'RequireDualStack' or "
                                           "'PreferDualStack' when multiple cluster IPs are specified", policy))
            if len(families) == 2:
                causes.append(errors.Cause("Invalid", "spec.ipFamilyPolicy", "must be 'RequireDualStack' or "
                                           "'PreferDualStack' when multiple IP families are specified", policy))
        for i, value in enumerate(ips):
            if value == "None":
                break
            family = "IPv6" if ":" in value else "IPv4"
            if i >= len(families):
                if family != self.family:
                    causes.append(errors.Cause("Invalid", f"spec.clusterIPs[{i}]",
                                               f"{family} is not configured on this cluster", rules.strings(ips)))
                else:
                    families.append(family)
        if causes:
            raise _invalid(name, causes)
        if selectorless_headless:
            if not families:
                families = [self.family]
            if len(families) < 2 and policy != "SingleStack":
                families.append("IPv6" if families[0] == "IPv4" else "IPv4")
            spec["ipFamilies"] = families
            return
        if policy == "RequireDualStack":
            causes.append(errors.Cause("Invalid", "spec.ipFamilyPolicy",
                                       "this cluster is not configured for dual-stack services", policy))
        for i, family in enumerate(families):
            if family != self.family:
                causes.append(errors.Cause("Invalid", f"spec.ipFamilies[{i}]", "not configured on this cluster",
                                           family))
        if causes:
            raise _invalid(name, causes)
        spec["ipFamilies"] = families or [self.family]

    # ---------------------------------------------------------------- cluster IPs

    async def _allocate_cluster_ips(self, store: Any, obj: dict[str, Any], *, name: str, dry_run: bool) -> list[str]:
        """Allocate the Service's cluster IP (the one its family asks for); the addresses taken."""
        spec = _spec(obj)
        if spec.get("type") == "ExternalName":
            return []
        ips = _strs(spec.get("clusterIPs"))
        if ips and ips[0] == "None":
            return []
        wanted = ips[0] if ips else ""
        namespace = str((obj.get("metadata") or {}).get("namespace") or "")
        if wanted:
            if not allocation.in_range(wanted, self.network):
                raise self._ip_error(name, ips, wanted, allocation.not_in_ip_range(wanted, self.network))
            if not dry_run and not await self._create_ip_address(store, wanted, namespace=namespace, name=name):
                raise self._ip_error(name, ips, wanted, allocation.IP_ALLOCATED)
            taken = wanted
        elif dry_run:
            taken = str(self.network.network_address)  # upstream's dry run does not look for a free one
        else:
            taken = await self._allocate_next_ip(store, namespace=namespace, name=name)
        spec["clusterIPs"] = [taken, *ips[1:]]
        spec["clusterIP"] = taken
        return [] if dry_run else [taken]

    @staticmethod
    def _ip_error(name: str, ips: list[str], ip: str, why: str) -> errors.Invalid:
        return _invalid(name, [errors.Cause("Invalid", "spec.clusterIPs", f"failed to allocate IP {ip}: {why}",
                                            rules.strings(ips))])

    async def _allocate_next_ip(self, store: Any, *, namespace: str, name: str) -> str:
        """A free address, in upstream's order. What is taken is known from one list of the IPAddresses
        and kept up to date by this server's own allocations and releases; an address another server
        took since is learnt from the refused create, one it released from a new list once the range
        looks full."""
        for fresh in (False, True):
            if self._taken is None or fresh:
                self._taken = {str((o.get("metadata") or {}).get("name"))
                               for o in await self._ip_addresses.list(store.log)}
            for candidate in allocation.ip_candidates(self.network, self.rng):
                if candidate in self._taken:
                    continue
                if await self._create_ip_address(store, candidate, namespace=namespace, name=name):
                    return candidate
                # Taken by a concurrent writer since: try the next one, as upstream does.
        raise allocation.ip_full()

    async def _create_ip_address(self, store: Any, ip: str, *, namespace: str, name: str) -> bool:
        kind = res.lookup("networking.k8s.io", "v1", "ipaddresses")
        assert kind is not None
        body = {"metadata": {"name": ip, "labels": {allocation.LABEL_IP_FAMILY: self.family,
                                                    allocation.LABEL_MANAGED_BY: allocation.MANAGED_BY}},
                "spec": {"parentRef": {"group": "", "resource": "services", "namespace": namespace, "name": name}}}
        try:
            await store.create(kind, "", body, self.writer())
        except errors.AlreadyExists:
            if self._taken is not None:
                self._taken.add(ip)
            return False
        if self._taken is not None:
            self._taken.add(ip)
        logger.debug("cluster_ip_allocated", ip=ip, namespace=namespace, service=name)
        return True

    async def _release_ips(self, store: Any, ips: list[str], *, owner: dict[str, Any] | None = None) -> None:
        """Delete the IPAddress objects of these addresses (those of `owner` only, when given)."""
        kind = res.lookup("networking.k8s.io", "v1", "ipaddresses")
        assert kind is not None
        for ip in ips:
            if owner is not None:
                current = await store.log.get(group=kind.group, resource=kind.plural, namespace="", name=ip)
                if current is None:
                    continue
                ref = (_decode(current.object).get("spec") or {}).get("parentRef") or {}
                meta = owner.get("metadata") or {}
                if ref.get("resource") != "services" or ref.get("namespace") != meta.get("namespace") \
                        or ref.get("name") != meta.get("name"):
                    continue
            if self._taken is not None:
                self._taken.discard(ip)
            try:
                await store.delete(kind, "", ip, {}, self.writer())
            except errors.NotFound:
                continue
            logger.debug("cluster_ip_released", ip=ip)

    # ---------------------------------------------------------------- node ports

    async def _used(self, store: Any) -> set[int]:
        """Node ports held by stored Services or handed out by this server and not yet listed."""
        event_log: log.EventLog = store.log
        if self._services_at < event_log.last_change(group="", resource="services"):
            listed = await event_log.list_objects(group="", resource="services", namespace=None)
            used: set[int] = set()
            known: dict[tuple[str, str], tuple[int, list[int]]] = {}
            for ev in listed.events:  # only Services written since the last list are decoded
                key = (ev.namespace, ev.name)
                seen = self._ports_of.get(key)
                if seen is None or seen[0] != ev.revision:
                    seen = (ev.revision, strategy.node_ports(_spec(dict(_decode(ev.object)))))
                known[key] = seen
                used.update(seen[1])
            self._ports_of = known
            self._used_ports = used
            self._services_at = listed.revision
            for port, revision in list(self._pending.items()):
                if revision is not None and revision <= listed.revision:
                    del self._pending[port]
        return self._used_ports | set(self._pending)

    async def _allocate_node_ports(self, store: Any, spec: dict[str, Any], old: dict[str, Any] | None, *,
                                   name: str, dry_run: bool) -> list[int]:
        """`initNodePorts` / `updateNodePorts` and the health check node port; the ports newly taken."""
        if not (strategy.needs_node_ports(spec) or strategy.needs_health_check_port(spec)):
            return []
        lo, hi = self.ports
        kept = set(strategy.node_ports(old)) if old is not None else set()
        used = await self._used(store)  # nothing below awaits until the ports are reserved
        taken: list[int] = []

        def take(port: int) -> None:
            taken.append(port)
            used.add(port)

        def explicit(port: int, path: str) -> None:
            if port in kept or port in taken:
                return
            why = allocation.not_in_port_range(lo, hi) if not lo <= port <= hi else \
                allocation.PORT_ALLOCATED if port in used else ""
            if why:
                raise _invalid(name, [errors.Cause("Invalid", path, why, port)])
            take(port)

        def dynamic() -> int:
            for candidate in allocation.port_candidates(lo, hi, self.rng):
                if candidate not in used:
                    take(candidate)
                    return candidate
            raise allocation.ports_full()

        if strategy.needs_node_ports(spec):
            by_port: dict[Any, int] = {}
            allocate = strategy.should_allocate_node_ports(spec)
            for i, port in enumerate(p for p in spec.get("ports") or [] if isinstance(p, dict)):
                value = port.get("nodePort") or 0
                if not isinstance(value, int):
                    continue  # the structure check refuses it
                if not value and not allocate:
                    continue
                if value:
                    explicit(value, f"spec.ports[{i}].nodePort")
                elif old is None and port.get("port") in by_port:
                    port["nodePort"] = by_port[port.get("port")]  # one node port per service port number
                else:
                    port["nodePort"] = dynamic()
                by_port.setdefault(port.get("port"), port["nodePort"])
        if strategy.needs_health_check_port(spec):
            value = spec.get("healthCheckNodePort") or 0
            kept_health = old.get("healthCheckNodePort") if old is not None and \
                strategy.needs_health_check_port(old) else None
            if isinstance(value, int) and value and value != kept_health:
                if (value in used and value not in kept) or not lo <= value <= hi:
                    why = allocation.PORT_ALLOCATED if lo <= value <= hi else allocation.not_in_port_range(lo, hi)
                    raise errors.InternalError(
                        f"Internal error occurred: failed to allocate requested HealthCheck NodePort {value}: {why}")
                take(value)
            elif not value:
                spec["healthCheckNodePort"] = dynamic()
        if dry_run:
            return []
        for number in taken:
            self._pending[number] = None
        return taken

    async def _settle_ports(self, store: Any, ports: list[int], succeeded: bool) -> None:
        if not ports:
            return
        revision = store.log.revision
        for port in ports:
            if succeeded:
                self._pending[port] = revision  # until a list of Services shows them
            else:
                self._pending.pop(port, None)


# ---------------------------------------------------------------- the kubernetes Service

KUBERNETES = "kubernetes"


def default_service_cidr(ranges: allocation.ServiceRanges) -> dict[str, Any]:
    return {"metadata": {"name": allocation.DEFAULT_SERVICE_CIDR_NAME}, "spec": {"cidrs": [str(ranges.network)]}}


def kubernetes_service(ranges: allocation.ServiceRanges, *, port: int) -> dict[str, Any]:
    """The Service of the API server itself, as kube-apiserver's controlplane reconciler writes it."""
    ip = ranges.first_ip()
    return {"metadata": {"name": KUBERNETES, "namespace": "default",
                         "labels": {"component": "apiserver", "provider": "kubernetes"}},
            "spec": {"type": "ClusterIP", "clusterIP": ip, "clusterIPs": [ip], "sessionAffinity": "None",
                     "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}]}}


def kubernetes_endpoints(*, address: str, port: int) -> dict[str, Any]:
    return {"metadata": {"name": KUBERNETES, "namespace": "default",
                         "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
            "subsets": [{"addresses": [{"ip": address}],
                         "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}]}


def kubernetes_endpoint_slice(*, address: str, port: int) -> dict[str, Any]:
    return {"metadata": {"name": KUBERNETES, "namespace": "default",
                         "labels": {"kubernetes.io/service-name": KUBERNETES}},
            "addressType": "IPv6" if ":" in address else "IPv4",
            "endpoints": [{"addresses": [address], "conditions": {"ready": True}}],
            "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}


async def reconcile_control_plane(store: Any, ranges: allocation.ServiceRanges, *, address: str | None,
                                  port: int, ctx: Any, create_only: bool = False) -> None:
    """Keep the default ServiceCIDR, the `kubernetes` Service in `default` and its Endpoints and
    EndpointSlice (the server's advertised address and port), as kube-apiserver does at start-up.
    Without an address an endpoint may name (the host has only loopback), no endpoints are written.
    `create_only`: create what is missing, change nothing that exists."""
    await _ensure(store, "networking.k8s.io", "servicecidrs", "", default_service_cidr(ranges), ctx,
                  create_only=create_only, same=lambda cur, want: cur.get("spec") == want["spec"], replace_spec=False)
    await _default_cidr_ready(store, ctx)
    service = kubernetes_service(ranges, port=port)
    await _ensure(store, "", "services", "default", service, ctx, replace_spec=True, create_only=create_only,
                  same=lambda cur, want: _same_ports(cur, want) and (cur.get("metadata") or {}).get("labels")
                  == want["metadata"]["labels"])
    if address is None:
        logger.warning("no_advertise_address", why="the host has no non-loopback address for the kubernetes "
                       "Service's endpoints; pass --advertise-address")
        return
    await _ensure(store, "", "endpoints", "default", kubernetes_endpoints(address=address, port=port), ctx,
                  create_only=create_only,
                  same=lambda cur, want: cur.get("subsets") == want["subsets"]
                  and (cur.get("metadata") or {}).get("labels") == want["metadata"]["labels"])
    await _ensure(store, "discovery.k8s.io", "endpointslices", "default",
                  kubernetes_endpoint_slice(address=address, port=port), ctx, create_only=create_only,
                  same=lambda cur, want: all(cur.get(k) == want[k] for k in ("addressType", "endpoints", "ports"))
                  and (cur.get("metadata") or {}).get("labels") == want["metadata"]["labels"])


# What the keeper follows; the IPAddress of the Service's cluster IP too: a deleted Service gives its
# address back after its deletion is in the log, so its re-creation may first find the address taken
# and is tried again once the address is free.
_WATCHED = (("networking.k8s.io", "servicecidrs", ""), ("", "services", "default"), ("", "endpoints", "default"),
            ("discovery.k8s.io", "endpointslices", "default"), ("networking.k8s.io", "ipaddresses", ""))


class ControlPlaneKeeper:
    """Keeps the control plane objects (`reconcile_control_plane`) while the server runs: sets them at
    start, and creates again any that is deleted (upstream's reconcilers look every 10 s; here on the
    deletion itself). Changes are left alone: replicas of one log each set their own address and port
    at start, and must not fight over them afterwards."""

    def __init__(self, store: Any, ranges: allocation.ServiceRanges, *, address: str | None, port: int,
                 writer: Writer) -> None:
        self.store = store
        self.ranges = ranges
        self.address = address
        self.port = port
        self.writer = writer
        self._tasks: list[asyncio.Task[None]] = []
        self._wake = asyncio.Event()

    async def start(self) -> None:
        after = self.store.log.revision
        await self.reconcile()
        loop = asyncio.get_running_loop()
        for group, resource, namespace in _WATCHED:
            self._tasks.append(loop.create_task(self._follow(group, resource, namespace, after),
                                                name=f"services:control-plane:{resource}"))
        self._tasks.append(loop.create_task(self._keep(), name="services:control-plane"))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()

    async def reconcile(self) -> None:
        await reconcile_control_plane(self.store, self.ranges, address=self.address, port=self.port,
                                      ctx=self.writer())

    async def _keep(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                await reconcile_control_plane(self.store, self.ranges, address=self.address, port=self.port,
                                              ctx=self.writer(), create_only=True)
            except errors.StatusError as exc:
                logger.warning("control_plane_reconcile_failed", why=exc.message)
            except log.StorageError as exc:
                logger.warning("control_plane_reconcile_failed", why=str(exc))

    async def _follow(self, group: str, resource: str, namespace: str, after: int) -> None:
        name = {"servicecidrs": allocation.DEFAULT_SERVICE_CIDR_NAME,
                "ipaddresses": self.ranges.first_ip()}.get(resource, KUBERNETES)
        while True:
            try:
                sub = await self.store.log.subscribe(group=group, resource=resource, namespace=namespace or None,
                                                     after=after)
            except log.ExpiredError:
                after = self.store.log.revision
                self._wake.set()
                continue
            try:
                while True:
                    batch = await sub.next_batch(timeout=30.0)
                    if batch is None:
                        break
                    for ev in batch:
                        after = max(after, ev.revision)
                        if ev.type == "DELETED" and ev.name == name and ev.namespace == namespace:
                            self._wake.set()
            finally:
                sub.close()


async def _default_cidr_ready(store: Any, ctx: Any) -> None:
    """The default ServiceCIDR's Ready condition, as kube-apiserver's default-servicecidr controller sets it."""
    kind = res.lookup("networking.k8s.io", "v1", "servicecidrs")
    assert kind is not None

    def mutate(cur: dict[str, Any]) -> dict[str, Any]:
        conditions = [c for c in (cur.get("status") or {}).get("conditions") or [] if c.get("type") != "Ready"]
        ready = {"type": "Ready", "status": "True", "lastTransitionTime": clocks.rfc3339(store.clock.now()),
                 "reason": "", "message": "Kubernetes default Service CIDR is ready"}
        cur["status"] = {"conditions": [*conditions, ready]}
        return cur

    current = await store.log.get(group=kind.group, resource=kind.plural, namespace="",
                                  name=allocation.DEFAULT_SERVICE_CIDR_NAME)
    if current is None:
        return
    status = dict(_decode(current.object)).get("status") or {}
    if any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or []):
        return
    await store.guaranteed_update(kind, "", allocation.DEFAULT_SERVICE_CIDR_NAME, mutate, ctx, subresource="status")


def _same_ports(cur: dict[str, Any], want: dict[str, Any]) -> bool:
    ports = [{k: p.get(k) for k in ("name", "port", "protocol", "targetPort")} for p in (cur.get("spec") or {}).get("ports") or []]
    return ports == want["spec"]["ports"] and (cur.get("spec") or {}).get("type") == "ClusterIP"


async def _ensure(store: Any, group: str, plural: str, namespace: str, want: dict[str, Any], ctx: Any, *,
                  same: Callable[[dict[str, Any], dict[str, Any]], bool], replace_spec: bool = True,
                  create_only: bool = False) -> None:
    kind = res.lookup(group, "v1", plural)
    assert kind is not None
    name = want["metadata"]["name"]
    current = await store.log.get(group=group, resource=plural, namespace=namespace, name=name)
    if current is None:
        try:
            await store.create(kind, namespace, copy.deepcopy(want), ctx)
        except errors.AlreadyExists:
            return  # another server of the same log was first
        except errors.Invalid as exc:
            # The Service's address is taken: by another server of the same log creating it at this
            # moment, or by a Service of a cluster whose range changed. Serving goes on either way.
            logger.warning("control_plane_object_not_created", resource=plural, namespace=namespace, name=name,
                           why=exc.message)
            return
        logger.info("control_plane_object_created", resource=plural, namespace=namespace, name=name)
        return
    obj = dict(_decode(current.object))
    if create_only or same(obj, want) or not replace_spec:
        return

    def mutate(cur: dict[str, Any]) -> dict[str, Any]:
        cur.setdefault("metadata", {})["labels"] = want["metadata"].get("labels")
        for key, value in want.items():
            if key == "spec":
                cur["spec"] = {**(cur.get("spec") or {}), "ports": value["ports"], "type": value["type"]}
            elif key not in ("metadata", "apiVersion", "kind"):
                cur[key] = value
        return cur

    await store.guaranteed_update(kind, namespace, name, mutate, ctx)
    logger.info("control_plane_object_reset", resource=plural, namespace=namespace, name=name)
