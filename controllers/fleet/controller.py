"""The simulated fleet (issue #4): Nodes with a fake kubelet and fake DRA drivers, so pods run,
claims get prepared and time passes without a single real machine (kwok's idea, our own code).

What it does, per Request (`resource` says which kind the key names):

- `nodes` — for a Node of the fleet, once per start: create it (labels, capacity, nodeInfo,
  addresses, Ready status all in one write) or bring an existing one in line, create its Lease,
  and publish its drivers' ResourceSlices (one pool per node and driver, pool name = node name).
  Then, for every Node not annotated `sim.cplane.dev/simulated: "false"` (the fleet's, and others
  unless the fleet sets `adoptNodes: false`: made by hand, imported, recorded), be its kubelet: renew
  the Lease in `kube-node-lease` every `leaseRenewIntervalSeconds` and post a status heartbeat every
  `statusReportIntervalSeconds` (one write each), by requeueing the key on the clock. A Node
  annotated `sim.cplane.dev/kubelet: stopped` (`cplane node stop NAME`) has a stopped kubelet: no
  Lease renewal, no heartbeat, its pods neither updated nor removed, until the annotation goes.
- `pods` — for a pod bound to a simulated node: Pending with containers `ContainerCreating` until
  every resource claim it uses is allocated and reserved for it, then (the fake driver writes the
  claim's `status.devices` first) its sandbox is made (a pod IP from the node's block) and its
  containers run as `controllers.fleet.lifecycle` models them (run times, exit codes, restarts
  with CrashLoopBackOff, init containers and sidecars, probes), requeued for the model's next
  transition. A deleted pod's containers stop (their stop time, at most the grace period), then
  the kubelet removes it (DELETE, grace 0, uid precondition). Pods whose node is gone are failed and deleted
  as the pod GC does. Each transition is one status write; nothing is written when the status
  already matches.
- `resourceclaims.resource.k8s.io` — the fake driver un-prepares: once no running pod uses a claim,
  its `status.devices` entries go (so the claim can be deallocated).
- `deviceclasses.resource.k8s.io` — the fleet's DeviceClasses are created at start unless present.
- `storageclasses.storage.k8s.io` — a fleet with nodes gets the default StorageClass `standard`
  (provisioner `sim.cplane.dev/hostpath`, `WaitForFirstConsumer`; `controllers/volumes.py`
  provisions and binds its claims) at start unless present.

With a kubelet directory (`kubelet_root`), each node's kubelet also hosts real DRA kubelet plugins
(`controllers.fleet.plugins`): a pod runs only after their NodePrepareResources, is unprepared when
done, and the fake driver of a real plugin's driver steps aside on that node (docs/fleet.md,
"Kubelet plugins").

Everything runs on the injected clock; state kept in memory (lease renewals, pod IPs) is rebuilt
from the caches after a restart. `new(ctx)` simulates kubelets for hand-made Nodes only;
`factory(fleet)` (or `new(ctx, fleet=...)`) adds a fleet. `python -m controllers.fleet` runs it on
its own against a server; `--check FILE` validates a fleet file (`controllers/fleet/__main__.py`).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import heapq
import ipaddress
import math
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from controllers import volumes
from controllers.fleet import credentials, kubelet_api, lifecycle, nodedirs, surface
from controllers.fleet import devices as fake_devices
from controllers.fleet import objects as objs
from controllers.fleet.model import Fleet
from controllers.runtime import cache as caches
from controllers.runtime import client as clients
from controllers.runtime import informer as informers
from controllers.runtime import manager as managers
from controllers.runtime import reconcile
from cp import cdi, errors
from cp import clock as clocks
from cp.objects import meta_of, resource_version_of, spec_of, status_of

if TYPE_CHECKING:
    from controllers.fleet import plugins as kubelet_plugins

NAME = "fleet"
DEFAULT_WORKERS = 32
KUBELET = "kubelet"  # field manager of node, lease and pod status writes
POD_GC = "pod-garbage-collector"
R_NODE = "nodes"
R_POD = "pods"
R_CLAIM = "resourceclaims.resource.k8s.io"
R_CLASS = "deviceclasses.resource.k8s.io"
R_STORAGE_CLASS = "storageclasses.storage.k8s.io"
MIN_REQUEUE = 0.001
TERMINAL = ("Succeeded", "Failed")
DELETED_NODES_REMEMBERED = 4096
LEASE_TICK = 0.5  # seconds between two turns of the Lease renewal wheel
LEASE_SENDERS = 64  # Lease renewals in flight at once
LEASE_RETRY = 1.0  # seconds before a failed renewal is tried again
PREPARE_RETRY = 10.0  # seconds before a pod whose claims failed to (un)prepare is synced again (the pod worker's back-off)

NODES = clients.resolve("nodes")
PODS = clients.resolve("pods")
LEASES = clients.resolve("leases.coordination.k8s.io")
NAMESPACES = clients.resolve("namespaces")
CLAIMS = clients.resolve(R_CLAIM)
SLICES = clients.resolve("resourceslices.resource.k8s.io")
CLASSES = clients.resolve(R_CLASS)
STORAGE_CLASSES = clients.resolve(R_STORAGE_CLASS)
POD_INDEXERS = {caches.NODE: caches.by_node, caches.CLAIM_NAME: caches.by_claim_name}
SLICE_INDEXERS = {caches.NODE: caches.by_node}

logger = structlog.get_logger("cplane.controllers.fleet")
Request = reconcile.Request
Result = reconcile.Result


def _node_ip(node: Mapping[str, Any], fallback: str) -> str:
    for a in status_of(node).get("addresses") or []:
        if isinstance(a, Mapping) and a.get("type") == "InternalIP" and a.get("address"):
            return str(a["address"])
    return fallback


class Simulator:
    """The reconciler: kubelets, fake DRA drivers and pod GC for simulated nodes."""

    def __init__(self, *, client: clients.Client, informer_factory: informers.InformerFactory,
                 clock: clocks.Clock, fleet: Fleet | None = None, kubelet_root: Path | None = None,
                 recorder: managers.EventRecorder | None = None) -> None:
        """`kubelet_root`: where each node's kubelet directory goes (`controllers.fleet.nodedirs`:
        `ROOT/<node>/`, with the kubeconfig a real DRA kubelet plugin uses); None: none is made."""
        self.client = client
        self.clock = clock
        self.kubelet_root = kubelet_root
        self.enqueue: Callable[[Request], None] | None = None  # set by the controller while it runs
        self.plan = objs.Plan(fleet)
        # The fake drivers' CDI specs and checkpoint in each node's kubelet dir (controllers/fleet/devices.py).
        self.fake_devices = None if kubelet_root is None else fake_devices.FakeDevices(root=kubelet_root, plan=self.plan)
        self.kubelet = self.plan.kubelet
        self.nodes = informer_factory.informer(NODES)
        self.pods = informer_factory.informer(PODS, indexers=POD_INDEXERS)
        self.claims = informer_factory.informer(CLAIMS)
        self.slices = informer_factory.informer(SLICES, indexers=SLICE_INDEXERS)
        # Real DRA kubelet plugins (`controllers.fleet.plugins`): only with a kubelet directory (and
        # only then is gRPC imported).
        self.plugins: kubelet_plugins.Plugins | None = None
        self.dra: kubelet_plugins.KubeletDRA | None = None
        if kubelet_root is not None:
            from controllers.fleet import plugins as kubelet_plugins

            self.plugins = kubelet_plugins.Plugins(root=kubelet_root, client=client, clock=clock,
                                                   on_change=self._plugins_changed)
            self.dra = kubelet_plugins.KubeletDRA(plugins=self.plugins, client=client, clock=clock,
                                                  pods=self.pods.cache, recorder=recorder)
        self.classes = {c["metadata"]["name"]: c for c in objs.device_classes(self.plan.fleet)}
        self._log = logger.bind(fleet=self.plan.fleet.name)
        # What this kubelet remembers (rebuilt from the caches after a restart).
        self._registered: set[str] = set()
        self._credentials_written: set[str] = set()  # nodes whose kubeconfig was written this term
        self._credentials = credentials.Credentials(client=client)
        self._lease_renewed: dict[str, float] = {}
        # The Lease renewal wheel (`heartbeats`): node -> when its next renewal is due, and a heap of
        # (due, node) entries (an entry whose time is no longer the node's due time is skipped).
        self._lease_due: dict[str, float] = {}
        self._lease_heap: list[tuple[float, str]] = []
        self._lease_sending: set[str] = set()  # renewals in flight
        self._status_reported: dict[str, float] = {}
        self._deleted_nodes: collections.OrderedDict[str, None] = collections.OrderedDict()
        self._orphan_seen: dict[tuple[str, str], float] = {}
        self._node_ips: dict[str, dict[str, str]] = {}  # node -> ip -> pod uid
        self._ip_owner: dict[tuple[str, str], tuple[str, str, str]] = {}  # pod key -> (uid, node, ip)
        self._prepared_rv: dict[tuple[str, str], int] = {}  # claim key -> resourceVersion we wrote
        self._slice_rv: dict[str, int] = {}  # slice name -> resourceVersion of our last write
        # Nodes whose slices were found in line (or written) since their last slice or Node event:
        # a heartbeat of theirs skips building and comparing the slices.
        self._slices_synced: set[str] = set()
        self._started_at = 0.0
        self.registered = asyncio.Event()  # every Node of the fleet registered (this term or before)
        # The kubelets' HTTP API (logs, exec, attach, port-forward), one loopback server for all nodes;
        # it authenticates its callers when this process authenticates to the API server.
        self.kubelet_api = kubelet_api.KubeletServer(
            host=self, secure=bool(client.token) or client.base_url.startswith("https:"))

    # ------------------------------------------------------------------ wiring

    def watches(self) -> list[managers.Watch]:
        return [managers.Watch(kind=NODES, map=self._map_node),
                managers.Watch(kind=PODS, map=self._map_pod, indexers=POD_INDEXERS),
                managers.Watch(kind=CLAIMS, map=self._map_claim),
                managers.Watch(kind=SLICES, map=self._map_slice, indexers=SLICE_INDEXERS)]

    def on_start(self) -> list[Request]:
        """Forget per-term memory; the Requests that (re)build the fleet: classes, then nodes."""
        self._registered.clear()
        self._credentials_written.clear()
        self._credentials = credentials.Credentials(client=self.client)  # ask the server again
        self._slices_synced.clear()
        self._lease_renewed.clear()
        self._lease_due.clear()
        self._lease_heap.clear()
        self._status_reported.clear()
        self._started_at = time.perf_counter()
        if self.plan.nodes or self.classes:
            self._log.info("fleet_starting", nodes=len(self.plan.nodes), drivers=sorted(self.plan.drivers),
                           device_classes=sorted(self.classes))
        storage = [Request(resource=R_STORAGE_CLASS, name=volumes.DEFAULT_CLASS)] if self.plan.nodes else []
        return ([Request(resource=R_CLASS, name=n) for n in self.classes] + storage +
                [Request(resource=R_NODE, name=n) for n in self.plan.nodes])

    def _pods_on(self, node: str) -> list[Request]:
        return [Request(resource=R_POD, namespace=ns, name=n)
                for ns, n in self.pods.cache.index_keys(caches.NODE, node)]

    def _map_node(self, change: managers.Change) -> list[Request]:
        name = str(meta_of(change.obj).get("name") or "")
        out = [Request(resource=R_NODE, name=name)]
        if change.type != "update":
            self._slices_synced.discard(name)
        if change.type == "delete":
            self._deleted_nodes[name] = None
            while len(self._deleted_nodes) > DELETED_NODES_REMEMBERED:
                self._deleted_nodes.popitem(last=False)
            self._lease_renewed.pop(name, None)
            self._lease_due.pop(name, None)
            self._status_reported.pop(name, None)
            self._node_ips.pop(name, None)
            self._credentials_written.discard(name)  # a Node made again gets a token bound to it
            out += self._pods_on(name)
        elif change.type == "add":
            self._deleted_nodes.pop(name, None)
            out += self._pods_on(name)
        elif change.old is not None and (self.plan.simulates(change.old) != self.plan.simulates(change.obj) or
                                         objs.kubelet_stopped(change.old) != objs.kubelet_stopped(change.obj)):
            out += self._pods_on(name)
        return out

    def _map_pod(self, change: managers.Change) -> list[Request]:
        pod = change.obj
        if not spec_of(pod).get("nodeName"):
            return []
        ns, name = caches.key_of(pod)
        self.kubelet_api.changes.notify((ns, name))
        out = [Request(resource=R_POD, namespace=ns, name=name)]
        if change.type == "delete" or status_of(pod).get("phase") in TERMINAL:
            out += [Request(resource=R_CLAIM, namespace=ns, name=c) for c in caches.by_claim_name(pod)]
        return out

    def _map_claim(self, change: managers.Change) -> list[Request]:
        claim = change.obj
        ns, name = caches.key_of(claim)
        status = status_of(claim)
        keys = {k for k in self.pods.cache.index_keys(caches.CLAIM_NAME, name) if k[0] == ns}
        for ref in status.get("reservedFor") or []:
            if isinstance(ref, Mapping) and ref.get("resource") == "pods" and not ref.get("apiGroup"):
                keys.add((ns, str(ref.get("name") or "")))
        out = [Request(resource=R_POD, namespace=k[0], name=k[1]) for k in sorted(keys)]
        if status.get("devices") or (self.plugins is not None and self.plugins.knows(ns, name)):
            out.append(Request(resource=R_CLAIM, namespace=ns, name=name))
        return out

    def _plugins_changed(self, node: str) -> None:
        """A real plugin (de)registered on the node, or its slices were wiped: the fake drivers
        step aside or back in (slices), and pods waiting for their claims are synced again."""
        self._slices_synced.discard(node)
        if self.enqueue is not None:
            for request in [Request(resource=R_NODE, name=node), *self._pods_on(node)]:
                self.enqueue(request)

    def _claim_exists(self, namespace: str, name: str, uid: str) -> bool:
        claim = self.claims.cache.get(namespace, name)
        return claim is not None and str(meta_of(claim).get("uid") or "") == uid

    def _aside(self, node: str) -> frozenset[str]:
        """The drivers whose fake driver steps aside on the node for a real plugin."""
        return frozenset() if self.plugins is None else self.plugins.aside(node)

    def _map_slice(self, change: managers.Change) -> list[Request]:
        name = str(meta_of(change.obj).get("name") or "")
        if change.type == "delete":
            self._slice_rv.pop(name, None)
        elif resource_version_of(change.obj) == self._slice_rv.get(name):
            return []  # our own write arriving
        node = str(spec_of(change.obj).get("nodeName") or "")
        if node in self.plan.nodes and node in self._registered:
            self._slices_synced.discard(node)
            return [Request(resource=R_NODE, name=node)]  # someone else edited or deleted it
        return []

    # ------------------------------------------------------------------ reconcile

    async def reconcile(self, request: Request) -> Result | None:
        if request.resource == R_POD:
            return await self._reconcile_pod(request.namespace, request.name)
        if request.resource == R_NODE:
            return await self._reconcile_node(request.name)
        if request.resource == R_CLAIM:
            return await self._reconcile_claim(request.namespace, request.name)
        if request.resource == R_CLASS:
            await self._ensure_class(request.name)
            return None
        if request.resource == R_STORAGE_CLASS:
            with contextlib.suppress(errors.AlreadyExists):
                await self.client.create(STORAGE_CLASSES, volumes.default_storage_class(), field_manager=NAME)
                self._log.info("storage_class_created", name=request.name)
            return None
        raise reconcile.TerminalError(f"unexpected request {request}")

    # ------------------------------------------------------------------ device classes

    async def _ensure_class(self, name: str) -> None:
        obj = self.classes.get(name)
        if obj is None:
            return
        with contextlib.suppress(errors.AlreadyExists):
            await self.client.create(CLASSES, obj, field_manager=NAME)
            self._log.info("device_class_created", name=name)

    # ------------------------------------------------------------------ nodes

    async def _reconcile_node(self, name: str) -> Result | None:
        node = self.nodes.cache.get("", name)
        if not self.kubelet_api.started.is_set():
            self.kubelet_api.request_start(_advertised_port(node))
            await self.kubelet_api.started.wait()
        planned = self.plan.node(name)
        if planned is not None and name not in self._registered:
            node = await self._register(planned, node)
            self._registered.add(name)
            if len(self._registered) == len(self.plan.nodes):
                self.registered.set()
                self._log.info("fleet_registered", nodes=len(self.plan.nodes),
                               seconds=round(time.perf_counter() - self._started_at, 3))
        if not self._kubelet_runs(node):
            self._lease_renewed.pop(name, None)
            self._lease_due.pop(name, None)
            self._status_reported.pop(name, None)
            if self.plugins is not None:
                self.plugins.drop_node(name)
            return None
        assert node is not None
        node = await self._ensure_endpoint(node)
        if self.plugins is not None:
            starting = name not in self.plugins.nodes
            self.plugins.ensure_node(name)
            if starting:  # slices of real plugins from before this kubelet started go unless they return
                fake = {d.name for d in planned.pool.drivers} if planned is not None else set()
                self.plugins.wipe_unless_registered(name, {
                    str(spec_of(s).get("driver")) for s in self.slices.cache.by_index(caches.NODE, name)} - fake)
                if self.fake_devices is not None:  # what the fake drivers prepared for claims deleted since
                    self.fake_devices.sweep(node=name, live=self._claim_exists, aside=self._aside(name))
        if planned is not None:
            if name not in self._slices_synced and await self._sync_slices(planned, node):
                self._slices_synced.add(name)
        else:
            node = await self._ensure_pod_cidr(node)
        if self.kubelet_root is not None and name not in self._credentials_written:
            # After the node's slices: a fleet's devices are published before its plugin credentials.
            await self._credentials.write(node=node, nodedir=nodedirs.NodeDir(root=self.kubelet_root, node=name))
            self._credentials_written.add(name)
        now = self.clock.now()
        if name not in self._lease_due and name not in self._lease_sending:
            # Renewed now if it is due (a Lease is made at once), then by the wheel (`heartbeats`).
            renew = self.kubelet.lease_renew_interval_seconds
            lease_due = self._lease_renewed.get(name, -math.inf) + renew
            if now >= lease_due:
                await self._renew_lease(node, now)
                lease_due = now + renew
            if name not in self._lease_due:
                self._schedule_lease(name, lease_due)
        report = self.kubelet.status_report_interval_seconds
        status_due = max(objs.heartbeat_due(node, report), self._status_reported.get(name, -math.inf) + report)
        if now >= status_due:
            await self._post_status(node, now)
            status_due = now + report
        return Result(requeue_after=max(status_due - now, MIN_REQUEUE))

    async def _ensure_endpoint(self, node: dict[str, Any]) -> dict[str, Any]:
        """The node names this process's kubelet API: the annotation the API server dials, and the
        port in `status.daemonEndpoints` (a write only when they are not this server's)."""
        endpoint, port = self.kubelet_api.endpoint, self.kubelet_api.port
        if not endpoint:
            return node
        name = str(meta_of(node).get("name"))
        with contextlib.suppress(errors.NotFound):
            if (meta_of(node).get("annotations") or {}).get(kubelet_api.ENDPOINT_ANNOTATION) != endpoint:
                node = await self.client.patch(NODES, name, {"metadata": {"annotations": {
                    kubelet_api.ENDPOINT_ANNOTATION: endpoint}}}, field_manager=KUBELET)
            have = ((status_of(node).get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}).get("Port")
            if have != port:
                node = await self.client.patch(NODES, name, {"status": {"daemonEndpoints": {
                    "kubeletEndpoint": {"Port": port}}}}, subresource="status", field_manager=KUBELET)
        return node

    # ------------------------------------------------------------------ the container surface

    def cached_pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.pods.cache.get(namespace, name)

    def kubelet_running(self, node: str) -> bool:
        return self._kubelet_runs(self.nodes.cache.get("", node))

    async def container_environment(self, pod: Mapping[str, Any],
                                    container: Mapping[str, Any]) -> list[tuple[str, str]]:
        """The environment of a simulated container, as (name, value) in order: its pod spec's `envFrom`
        and `env` resolved as the kubelet does (`controllers/fleet/surface.py`, `resolve_env`: field
        and resource references, ConfigMap and Secret keys, `$(VAR)`), then the `env` edits of its
        devices' CDI specs, as the runtime applies them (a name already set takes the CDI value).
        What `kubectl logs` prints and `kubectl exec -- env` answers."""
        ns = str(meta_of(pod).get("namespace") or "")
        cm_names, secret_names = surface.referenced_objects(container)
        config_maps: dict[str, dict[str, Any]] = {}
        secrets: dict[str, dict[str, Any]] = {}
        for names, kind, into in ((cm_names, "configmaps", config_maps), (secret_names, "secrets", secrets)):
            for n in sorted(names):
                try:
                    into[n] = await self.client.get(kind, n, namespace=ns)
                except errors.StatusError as e:  # missing (optional) or not readable: skipped
                    self._log.debug("container_env_source_unreadable", kind=kind, namespace=ns, name=n, error=str(e))
        links = spec_of(pod).get("enableServiceLinks") is not False
        services: list[dict[str, Any]] = []
        for sns in dict.fromkeys((ns if links else "default", "default")):
            try:
                services += (await self.client.list("services", namespace=sns)).items
            except errors.StatusError as e:  # not readable: no service variables from there
                self._log.debug("container_env_services_unreadable", namespace=sns, error=str(e))
        service_vars = surface.service_env(namespace=ns, services=services, service_links=links)
        env = dict(surface.resolve_env(pod, container, config_maps=config_maps, secrets=secrets,
                                       services=service_vars))
        edits = await self._cdi_edits(pod, container)
        for entry in edits.env if edits is not None else ():
            name, _, value = entry.partition("=")
            env[name] = value
        return list(env.items())

    async def container_files(self, pod: Mapping[str, Any], container: Mapping[str, Any]) -> dict[str, bytes]:
        """The files `cat` finds in a simulated container: `surface.known_files`, and the files its
        devices' CDI specs mount (a mounted file, or the files of a mounted directory, read from the
        host path)."""
        files = surface.known_files(pod)
        edits = await self._cdi_edits(pod, container)
        if edits is not None and edits.mounts:
            mounts = [(m.container_path, m.host_path) for m in edits.mounts if m.container_path and m.host_path]
            files.update(await asyncio.to_thread(surface.mounted_files, mounts))
        return files

    async def _cdi_edits(self, pod: Mapping[str, Any], container: Mapping[str, Any]) -> cdi.ContainerEdits | None:
        """The merged CDI edits of the container's prepared devices (the node's checkpoint and CDI
        directory, `controllers/fleet/devices.py`); None without kubelet directories or when they do
        not resolve (a runtime would not start the container; logged)."""
        node = str(spec_of(pod).get("nodeName") or "")
        if self.fake_devices is None or not node:
            return None
        node_dir = self.fake_devices.node_dir(node)
        try:
            return await asyncio.to_thread(fake_devices.container_edits, node_dir=node_dir, pod=pod,
                                           container=str(container.get("name") or ""))
        except fake_devices.DevicesError as e:
            self._log.warning("container_cdi_unresolved", namespace=meta_of(pod).get("namespace"),
                              pod=meta_of(pod).get("name"), container=container.get("name"), error=str(e))
            return None

    def _kubelet_runs(self, node: Mapping[str, Any] | None) -> bool:
        return node is not None and self.plan.simulates(node) and not meta_of(node).get("deletionTimestamp") \
            and not objs.kubelet_stopped(node)

    # ------------------------------------------------------------------ the Lease renewal wheel

    def _schedule_lease(self, name: str, due: float) -> None:
        self._lease_due[name] = due
        heapq.heappush(self._lease_heap, (due, name))

    def due_leases(self, now: float) -> list[tuple[float, str]]:
        """The (due time, node) of the Lease renewals due at `now`, taken off the wheel."""
        heap, due_at, out = self._lease_heap, self._lease_due, []
        while heap and heap[0][0] <= now:
            due, name = heapq.heappop(heap)
            if due_at.get(name) == due:
                del due_at[name]
                out.append((due, name))
        return out

    async def heartbeats(self) -> None:
        """The kubelets' Lease renewals, one timer for the whole fleet (kwok's and upstream's cadence,
        not one requeue per node): every `LEASE_TICK` the due renewals are sent, `LEASE_SENDERS` at
        a time, each one PATCH of the Lease; the next one is due one interval after this one was
        (the cadence holds however late a turn runs, unless it fell a whole interval behind); a
        failed one is tried again `LEASE_RETRY` later."""
        while True:
            due = self.due_leases(self.clock.now())
            if due:
                pending = iter(due)
                await asyncio.gather(*(self._renew_from(pending) for _ in range(min(LEASE_SENDERS, len(due)))))
            await self.clock.sleep(LEASE_TICK)

    async def _renew_from(self, pending: Iterator[tuple[float, str]]) -> None:
        for due, name in pending:  # shared by the senders of one turn
            await self._renew_due(name, due)

    async def _renew_due(self, name: str, due: float) -> None:
        node = self.nodes.cache.get("", name)
        if not self._kubelet_runs(node) or name in self._lease_due:
            return  # gone, stopped or deleting (its reconcile forgot it), or scheduled again meanwhile
        assert node is not None
        now = self.clock.now()
        self._lease_sending.add(name)
        try:
            await self._renew_lease(node, now)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # transport or server trouble: the wheel tries again soon
            self._log.warning("lease_renewal_failed", node=name, error=repr(exc), retry_in=LEASE_RETRY)
            if name not in self._lease_due:
                self._schedule_lease(name, now + LEASE_RETRY)
            return
        finally:
            self._lease_sending.discard(name)
        if name not in self._lease_due and self._kubelet_runs(self.nodes.cache.get("", name)):
            renew = self.kubelet.lease_renew_interval_seconds
            self._schedule_lease(name, due + renew if now - due < renew else now + renew)

    async def _register(self, planned: objs.NodePlan, node: dict[str, Any] | None) -> dict[str, Any] | None:
        """Create the fleet Node (Ready at once) and its Lease, or bring an existing Node in line."""
        now = self.clock.now()
        desired = objs.node_object(self.plan, planned, now)
        if self.kubelet_api.endpoint:  # where the API server finds this kubelet (`kubelet_api`)
            desired["metadata"]["annotations"][kubelet_api.ENDPOINT_ANNOTATION] = self.kubelet_api.endpoint
            desired["status"]["daemonEndpoints"] = {"kubeletEndpoint": {"Port": self.kubelet_api.port}}
        created = False
        if node is None:
            try:
                node = await self.client.create(NODES, desired, field_manager=KUBELET)
                created = True
                self._status_reported[planned.name] = now
            except errors.AlreadyExists:
                node = await self.client.get(NODES, planned.name)
        if not created:
            assert node is not None
            if not objs.is_simulated(node):
                self._log.warning("fleet_node_not_simulated", node=planned.name,
                                  hint=f'annotated {objs.SIMULATED}: "false"; left alone')
                return node
            node = await self._align_node(node, desired)
            if objs.kubelet_stopped(node):
                return node  # `cplane node stop`: no heartbeat until it starts again
            await self._post_status(node, now)  # the fleet's capacity and nodeInfo, and a heartbeat
        assert node is not None
        await self._renew_lease(node, now, fresh=created)
        self._log.debug("node_registered", node=planned.name, created=created)
        return node

    async def _ensure_pod_cidr(self, node: dict[str, Any]) -> dict[str, Any]:
        """A Node made by hand gets a free pod CIDR block once (node IPAM's job), so its pod
        addresses stay put across restarts; its InternalIP follows the same index."""
        name = str(meta_of(node).get("name"))
        cidr = spec_of(node).get("podCIDR")
        if cidr:
            idx = self.plan.block_index(str(cidr))
            if idx is not None:
                self.plan.adopt_index(name, idx)
            return node
        taken = [i for n in self.nodes.cache if n is not node and
                 (i := self.plan.block_index(str(spec_of(n).get("podCIDR") or ""))) is not None]
        self.plan.assign_index(name, taken)
        block = str(self.plan.pod_block(name))
        with contextlib.suppress(errors.Invalid, errors.NotFound):  # set meanwhile: immutable now
            node = await self.client.patch(NODES, name, {"spec": {"podCIDR": block, "podCIDRs": [block]}},
                                           field_manager="node-ipam-controller")
        return node

    async def _align_node(self, node: dict[str, Any], desired: Mapping[str, Any]) -> dict[str, Any]:
        """The fleet's labels and annotations on an existing Node (others' keys are kept; taints
        and pod CIDRs are only set at registration, as the kubelet and node IPAM do)."""
        meta, want = meta_of(node), meta_of(desired)
        patch: dict[str, Any] = {}
        for field in ("labels", "annotations"):
            have = meta.get(field) or {}
            diff = {k: val for k, val in (want.get(field) or {}).items() if have.get(k) != val}
            if diff:
                patch.setdefault("metadata", {})[field] = diff
        if not spec_of(node).get("podCIDR"):
            patch["spec"] = {k: spec_of(desired)[k] for k in ("podCIDR", "podCIDRs")}
        if patch:
            node = await self.client.patch(NODES, str(meta["name"]), patch, field_manager=KUBELET)
        return node

    async def _renew_lease(self, node: Mapping[str, Any], now: float, *, fresh: bool = False) -> None:
        """One write: renew the node's Lease (create it when missing)."""
        name = str(meta_of(node).get("name"))
        body = objs.lease_renewal(self.kubelet, name, now)
        body["metadata"] = {"ownerReferences": [objs.owner_ref(node)]}
        # Only the outcome matters: the responses are not decoded beyond their metadata.
        if fresh:
            try:
                await self._create_lease(node, now)
            except errors.AlreadyExists:
                await self.client.patch(LEASES, name, body, namespace=objs.LEASE_NAMESPACE, field_manager=KUBELET,
                                        metadata_only=True)
        else:
            try:
                await self.client.patch(LEASES, name, body, namespace=objs.LEASE_NAMESPACE, field_manager=KUBELET,
                                        metadata_only=True)
            except errors.NotFound:
                with contextlib.suppress(errors.AlreadyExists):
                    await self._create_lease(node, now)
        self._lease_renewed[name] = now

    async def _create_lease(self, node: Mapping[str, Any], now: float) -> None:
        lease = objs.lease_object(node, self.kubelet, now)
        try:
            await self.client.create(LEASES, lease, field_manager=KUBELET, metadata_only=True)
        except errors.NotFound:
            # No `kube-node-lease` namespace: a fork of a dump without Namespaces (a server makes it
            # at start-up). Made here, once, so adopted nodes get their Leases.
            with contextlib.suppress(errors.AlreadyExists):
                await self.client.create(NAMESPACES, {"metadata": {"name": objs.LEASE_NAMESPACE}},
                                         field_manager=KUBELET, metadata_only=True)
                self._log.info("lease_namespace_created", namespace=objs.LEASE_NAMESPACE)
            await self.client.create(LEASES, lease, field_manager=KUBELET, metadata_only=True)

    async def _post_status(self, node: Mapping[str, Any], now: float) -> None:
        name = str(meta_of(node).get("name"))
        patch = objs.node_status_patch(self.plan, node, now)
        try:
            await self.client.patch(NODES, name, patch, patch_type="strategic", subresource="status",
                                    field_manager=KUBELET, metadata_only=True)
        except errors.NotFound:
            return
        self._status_reported[name] = now
        self._log.debug("node_status_posted", node=name)

    # ------------------------------------------------------------------ slices

    async def _sync_slices(self, planned: objs.NodePlan, node: Mapping[str, Any]) -> bool:
        """Publish the node's pools: unchanged pools are left alone; a changed pool is rewritten
        whole at the next generation (extra slices deleted). False when a pool was left for later
        (the cache has not seen our last write yet)."""
        synced = True
        desired = objs.slices_for(self.plan, planned, owner=node)
        drivers = {d.name for d in planned.pool.drivers}
        present: dict[str, dict[str, dict[str, Any]]] = {d: {} for d in drivers}
        for s in self.slices.cache.by_index(caches.NODE, planned.name):
            driver = str(spec_of(s).get("driver") or "")
            if driver in drivers and (spec_of(s).get("pool") or {}).get("name") == planned.name:
                present[driver][str(meta_of(s).get("name"))] = s
        by_driver: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
        for s in desired:
            by_driver[s["spec"]["driver"]].append(s)
        aside = self._aside(planned.name)
        for driver in sorted(drivers):
            want, have = by_driver.get(driver, []), present[driver]
            if driver in aside:  # a real plugin publishes this driver's slices here: ours go
                for s in want:
                    current = have.get(s["metadata"]["name"])
                    if current is not None:
                        with contextlib.suppress(errors.NotFound, errors.Conflict):
                            await self.client.delete(SLICES, s["metadata"]["name"],
                                                     preconditions={"uid": str(meta_of(current).get("uid"))})
                        self._slice_rv.pop(s["metadata"]["name"], None)
                continue
            if any(self._slice_rv.get(s["metadata"]["name"], 0) > resource_version_of(have.get(s["metadata"]["name"]) or {})
                   for s in want):
                synced = False
                continue  # the cache has not seen our last write yet; the next heartbeat looks again
            if {s["metadata"]["name"] for s in want} == set(have) and all(
                    _same_slice(have[s["metadata"]["name"]], s) for s in want):
                continue
            generation = max((int((spec_of(s).get("pool") or {}).get("generation") or 0) for s in have.values()),
                             default=0) + 1 if have else 1
            for s in want:
                s["spec"]["pool"]["generation"] = generation
                name = s["metadata"]["name"]
                current = have.get(name)
                if current is None:
                    try:
                        out = await self.client.create(SLICES, s, field_manager=driver, metadata_only=True)
                    except errors.AlreadyExists:  # made by someone else meanwhile: its event brings us back
                        raise errors.Conflict(f"resourceslice {name} exists but is not cached yet") from None
                else:
                    s["metadata"]["resourceVersion"] = meta_of(current).get("resourceVersion")
                    out = await self.client.update(SLICES, s, field_manager=driver, metadata_only=True)
                self._slice_rv[name] = resource_version_of(out)
            for name in set(have) - {s["metadata"]["name"] for s in want}:
                with contextlib.suppress(errors.NotFound):
                    await self.client.delete(SLICES, name, preconditions={"uid": str(meta_of(have[name]).get("uid"))})
                self._slice_rv.pop(name, None)
            self._log.debug("slices_published", node=planned.name, driver=driver, generation=generation,
                            slices=len(want))
        return synced

    # ------------------------------------------------------------------ pods

    async def _reconcile_pod(self, ns: str, name: str) -> Result | None:
        key = (ns, name)
        pod = self.pods.cache.get(ns, name)
        if pod is None:
            self._release_ip(key)
            self._orphan_seen.pop(key, None)
            if self.dra is not None:
                self.dra.forget(key)
            return None
        node_name = str(spec_of(pod).get("nodeName") or "")
        if not node_name:
            return None
        node = self.nodes.cache.get("", node_name)
        if node is None:
            return await self._orphaned(pod, node_name)
        self._orphan_seen.pop(key, None)
        if not self.plan.simulates(node) or objs.kubelet_stopped(node):
            return None  # a real kubelet's pod, or this kubelet is stopped: its pods stay as they are
        if meta_of(pod).get("deletionTimestamp"):
            return await self._terminate(pod, node)
        if status_of(pod).get("phase") in TERMINAL:
            self._release_ip(key)
            return await self._unprepare_pod(pod, node_name)
        now = self.clock.now()
        host_ip = _node_ip(node, self.plan.node_address(node_name))
        if not lifecycle.has_run(pod):  # once started, claim changes do not stop it
            claims, why = self._claims(pod)
            if claims is None:
                desired = lifecycle.pending_status(pod, now=now, host_ip=host_ip)
                if objs.status_differs(pod, desired):
                    await self._write_pod_status(pod, desired)
                    self._log.debug("pod_waiting_for_claims", namespace=ns, name=name, node=node_name, reason=why)
                return None
            await self._prepare(pod, node_name, claims, now)
            if self.dra is not None and await self.dra.prepare(pod, node_name, claims):
                # The kubelet's FailedPrepareDynamicResources is written; the pod stays Pending.
                desired = lifecycle.pending_status(pod, now=now, host_ip=host_ip)
                if objs.status_differs(pod, desired):
                    await self._write_pod_status(pod, desired)
                return Result(requeue_after=PREPARE_RETRY)
        pod_ip = self._pod_ip(pod, node, host_ip)
        step = lifecycle.advance(pod, now=now, kubelet=self.kubelet, host_ip=host_ip, pod_ip=pod_ip)
        if objs.status_differs(pod, step.status):
            await self._write_pod_status(pod, step.status)
            self._log.debug("pod_status", namespace=ns, name=name, node=node_name, phase=step.status["phase"])
        if step.status["phase"] in TERMINAL:
            self._release_ip(key)
            return None
        return None if step.next_at is None else Result(requeue_after=max(step.next_at - now, MIN_REQUEUE))

    async def _unprepare_pod(self, pod: Mapping[str, Any], node_name: str) -> Result | None:
        """NodeUnprepareResources for the claims of a pod that is done (terminal or being removed)
        which no other pod on the node still uses; an error delays the pod's removal (retried)."""
        if self.dra is not None and await self.dra.unprepare_pod(pod, node_name):
            return Result(requeue_after=PREPARE_RETRY)
        return None

    async def _write_pod_status(self, pod: Mapping[str, Any], status: dict[str, Any]) -> dict[str, Any]:
        """One merge-patch of pods/status, guarded by the cached resourceVersion (409: requeued)."""
        ns, name = caches.key_of(pod)
        patch = {"metadata": {"resourceVersion": meta_of(pod).get("resourceVersion")}, "status": status}
        return await self.client.patch(PODS, name, patch, namespace=ns, subresource="status",
                                       field_manager=KUBELET)

    def _claims(self, pod: Mapping[str, Any]) -> tuple[list[dict[str, Any]] | None, str]:
        """The pod's claims if each is allocated and reserved for it (else None and why) —
        resolved as `resourceclaim.Name` does."""
        ns = str(meta_of(pod).get("namespace") or "")
        uid = str(meta_of(pod).get("uid") or "")
        status = status_of(pod)
        generated = {str(s.get("name")): s for s in status.get("resourceClaimStatuses") or []
                     if isinstance(s, Mapping)}
        names: list[tuple[str, bool]] = []
        for rc in spec_of(pod).get("resourceClaims") or []:
            if not isinstance(rc, Mapping):
                continue
            if rc.get("resourceClaimName"):
                names.append((str(rc["resourceClaimName"]), False))
            elif rc.get("resourceClaimTemplateName"):
                entry = generated.get(str(rc.get("name")))
                if entry is None:
                    return None, f"claim for {rc.get('name')!r} not created yet"
                if entry.get("resourceClaimName"):
                    names.append((str(entry["resourceClaimName"]), True))
        extended = status.get("extendedResourceClaimStatus")
        if isinstance(extended, Mapping) and extended.get("resourceClaimName"):
            names.append((str(extended["resourceClaimName"]), True))
        claims: list[dict[str, Any]] = []
        for claim_name, owned in names:
            claim = self.claims.cache.get(ns, claim_name)
            if claim is None:
                return None, f"resourceclaim {claim_name} not found"
            if owned and not any(ref.get("controller") and ref.get("uid") == uid
                                 for ref in meta_of(claim).get("ownerReferences") or []):
                return None, f"resourceclaim {claim_name} was not created for this pod"
            cstatus = status_of(claim)
            if not cstatus.get("allocation"):
                return None, f"resourceclaim {claim_name} is not allocated"
            if not any(isinstance(r, Mapping) and r.get("uid") == uid for r in cstatus.get("reservedFor") or []):
                return None, f"resourceclaim {claim_name} is not reserved for this pod"
            claims.append(claim)
        return claims, ""

    async def _prepare(self, pod: Mapping[str, Any], node_name: str, claims: list[dict[str, Any]],
                       now: float) -> None:
        """The fake drivers' NodePrepareResources: status.devices for their devices, once per allocation."""
        planned = self.plan.node(node_name)
        if planned is None:
            return  # no fake drivers on a Node made by hand: nothing to prepare, nothing blocks
        drivers = {d.name for d in planned.pool.drivers} - self._aside(node_name)
        for claim in claims:
            ckey = caches.key_of(claim)
            if resource_version_of(claim) < self._prepared_rv.get(ckey, 0):
                continue  # our write is not in the cache yet
            if self.fake_devices is not None:
                self.fake_devices.prepare(claim=claim, node=node_name, skip=self._aside(node_name))
            cstatus = status_of(claim)
            results = [r for r in ((cstatus.get("allocation") or {}).get("devices") or {}).get("results") or []
                       if isinstance(r, Mapping)]
            allocated = {objs.device_key(r) for r in results}
            existing = [e for e in cstatus.get("devices") or [] if isinstance(e, Mapping)]
            have = {objs.device_key(e) for e in existing}
            missing: dict[tuple[str, str, str, str], Mapping[str, Any]] = {}
            for r in results:
                k = objs.device_key(r)
                if r.get("driver") in drivers and r.get("pool") == node_name and k not in have:
                    missing.setdefault(k, r)
            if not missing:
                continue
            entries = [dict(e) for e in existing if objs.device_key(e) in allocated]
            for (driver, pool, device, share), _r in missing.items():
                net = self.plan.network_data(node_name, driver, device)
                entries.append(objs.device_status(driver, pool, device, share or None, now, net))
            patch = {"metadata": {"resourceVersion": meta_of(claim).get("resourceVersion")},
                     "status": {"devices": entries}}
            out = await self.client.patch(CLAIMS, ckey[1], patch, namespace=ckey[0], subresource="status",
                                          field_manager=sorted({k[0] for k in missing})[0])
            self._prepared_rv[ckey] = resource_version_of(out)
            self._log.debug("claim_prepared", namespace=ckey[0], name=ckey[1], devices=len(missing))

    async def _terminate(self, pod: Mapping[str, Any], node: Mapping[str, Any]) -> Result | None:
        """Graceful deletion: no container starts any more; each running one stops after its
        stop time or is killed when the grace period ends (`lifecycle`). The stopped containers and
        the terminal phase are written, then the pod is deleted (grace 0, uid precondition)."""
        meta = meta_of(pod)
        ns, name = caches.key_of(pod)
        now = self.clock.now()
        status = status_of(pod)
        if lifecycle.has_run(pod) and status.get("phase") not in TERMINAL:
            # Written before the final DELETE, even with no grace period (the kubelet's status
            # manager): a pod kept by a finalizer (foreground deletion of a pod whose ResourceClaim
            # it owns) must not look Running, or its claims are never released.
            host_ip = _node_ip(node, self.plan.node_address(str(spec_of(pod).get("nodeName"))))
            step = lifecycle.advance(pod, now=now, kubelet=self.kubelet, host_ip=host_ip,
                                     pod_ip=str(status.get("podIP") or ""))
            if objs.status_differs(pod, step.status):
                await self._write_pod_status(pod, step.status)
                self._log.debug("pod_stopping", namespace=ns, name=name, phase=step.status["phase"])
            if not step.stopped:
                wait = (step.next_at if step.next_at is not None else now) - now
                return Result(requeue_after=max(wait, MIN_REQUEUE))
        retry = await self._unprepare_pod(pod, str(spec_of(pod).get("nodeName")))
        if retry is not None:
            return retry
        with contextlib.suppress(errors.NotFound, errors.Conflict):  # gone, or replaced (uid precondition)
            await self.client.delete(PODS, name, namespace=ns, grace_period_seconds=0,
                                     preconditions={"uid": str(meta.get("uid") or "")})
        self._release_ip((ns, name))
        self._log.debug("pod_deleted", namespace=ns, name=name)
        return None

    async def _orphaned(self, pod: Mapping[str, Any], node_name: str) -> Result | None:
        """Pod GC: a pod bound to a Node that was deleted (at once) or never existed (after a
        quarantine and a live check) is marked Failed and force-deleted."""
        key = caches.key_of(pod)
        if node_name in self.plan.nodes and node_name not in self._registered:
            return None  # the fleet creates it soon; its add event brings the pod back
        if node_name not in self._deleted_nodes:
            now = self.clock.now()
            first = self._orphan_seen.setdefault(key, now)
            wait = first + self.kubelet.orphan_pod_quarantine_seconds - now
            if wait > 0:
                return Result(requeue_after=wait)
            try:
                await self.client.get(NODES, node_name)
                return None  # it exists after all: the cache lags
            except errors.NotFound:
                pass
        meta = meta_of(pod)
        ns, name = key
        with contextlib.suppress(errors.NotFound):
            await self.client.patch(PODS, name, {"status": objs.pod_gc_status(pod, self.clock.now())},
                                    namespace=ns, subresource="status", field_manager=POD_GC)
        with contextlib.suppress(errors.NotFound, errors.Conflict):
            await self.client.delete(PODS, name, namespace=ns, grace_period_seconds=0,
                                     preconditions={"uid": str(meta.get("uid") or "")})
        self._orphan_seen.pop(key, None)
        self._release_ip(key)
        self._log.info("orphaned_pod_deleted", namespace=ns, name=name, node=node_name)
        return None

    # ------------------------------------------------------------------ pod IPs

    def _pod_ip(self, pod: Mapping[str, Any], node: Mapping[str, Any], host_ip: str) -> str:
        if spec_of(pod).get("hostNetwork"):
            return host_ip
        key = caches.key_of(pod)
        uid = str(meta_of(pod).get("uid") or "")
        node_name = str(meta_of(node).get("name"))
        owner = self._ip_owner.get(key)
        if owner is not None:
            if owner[0] == uid and owner[1] == node_name:
                return owner[2]
            self._release_ip(key)
        used = self._used_ips(node_name)
        current = str(status_of(pod).get("podIP") or "")
        if current and used.get(current, uid) == uid:
            ip = current
        else:
            block = self._block(node)
            ip = ""
            for host in range(2, block.num_addresses - 1):
                candidate = str(block.network_address + host)
                if candidate not in used:
                    ip = candidate
                    break
            if not ip:
                raise errors.Conflict(f"node {node_name}: pod CIDR {block} has no free address")
        used[ip] = uid
        self._ip_owner[key] = (uid, node_name, ip)
        return ip

    def _block(self, node: Mapping[str, Any]) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
        cidr = spec_of(node).get("podCIDR")
        if cidr:
            with contextlib.suppress(ValueError):
                return ipaddress.ip_network(str(cidr), strict=False)
        return self.plan.pod_block(str(meta_of(node).get("name")))

    def _used_ips(self, node_name: str) -> dict[str, str]:
        used = self._node_ips.get(node_name)
        if used is None:  # first use since start: adopt what the pods on it already have
            used = {}
            for p in self.pods.cache.by_index(caches.NODE, node_name):
                ip = status_of(p).get("podIP")
                if ip and not spec_of(p).get("hostNetwork") and status_of(p).get("phase") not in TERMINAL:
                    used[str(ip)] = str(meta_of(p).get("uid") or "")
                    self._ip_owner.setdefault(caches.key_of(p), (str(meta_of(p).get("uid") or ""), node_name, str(ip)))
            self._node_ips[node_name] = used
        return used

    def _release_ip(self, key: tuple[str, str]) -> None:
        owner = self._ip_owner.pop(key, None)
        if owner is not None:
            used = self._node_ips.get(owner[1])
            if used is not None and used.get(owner[2]) == owner[0]:
                del used[owner[2]]

    # ------------------------------------------------------------------ claims

    async def _reconcile_claim(self, ns: str, name: str) -> Result | None:
        """NodeUnprepareResources: drop the fake drivers' status.devices entries once no pod that
        is still running uses the claim (and entries that no longer match the allocation)."""
        claim = self.claims.cache.get(ns, name)
        # NodeUnprepareResources by real plugins on deallocation (gone, not allocated, another uid).
        retry = Result(requeue_after=PREPARE_RETRY) if self.dra is not None and \
            await self.dra.unprepare_claim(ns, name, claim) else None
        if self.fake_devices is not None and not self._claim_in_use(ns, name, claim):
            self.fake_devices.unprepare(namespace=ns, name=name, claim=claim, aside=self._aside)
        if claim is None:
            self._prepared_rv.pop((ns, name), None)
            return retry
        status = status_of(claim)
        entries = [e for e in status.get("devices") or [] if isinstance(e, Mapping)]
        ours = [e for e in entries if e.get("driver") in self.plan.drivers and e.get("pool") in self.plan.nodes
                and e.get("driver") not in self._aside(str(e.get("pool")))]
        if not ours:
            return None
        results = ((status.get("allocation") or {}).get("devices") or {}).get("results") or []
        allocated = {objs.device_key(r) for r in results if isinstance(r, Mapping)}
        active = self._claim_in_use(ns, name, claim)
        keep = [e for e in entries if e not in ours or (active and objs.device_key(e) in allocated)]
        if len(keep) == len(entries):
            return retry
        patch = {"metadata": {"resourceVersion": meta_of(claim).get("resourceVersion")},
                 "status": {"devices": keep or None}}
        with contextlib.suppress(errors.NotFound):
            await self.client.patch(CLAIMS, name, patch, namespace=ns, subresource="status",
                                    field_manager=str(ours[0].get("driver")))
        self._log.debug("claim_unprepared", namespace=ns, name=name, devices=len(entries) - len(keep))
        return retry

    def _claim_in_use(self, ns: str, name: str, claim: Mapping[str, Any] | None) -> bool:
        """Some bound pod that has not ended uses the claim."""
        for pns, pname in self.pods.cache.index_keys(caches.CLAIM_NAME, name):
            p = self.pods.cache.get(pns, pname)
            if pns == ns and p is not None and spec_of(p).get("nodeName") and status_of(p).get("phase") not in TERMINAL:
                return claim is not None
        return False


def _advertised_port(node: Mapping[str, Any] | None) -> int:
    """The port of the kubelet API a Node names (a previous incarnation of this fleet's), else 0."""
    endpoint = str((meta_of(node or {}).get("annotations") or {}).get(kubelet_api.ENDPOINT_ANNOTATION) or "")
    host, _, port = endpoint.rpartition(":")
    if host in ("127.0.0.1", "[::1]") and port.isdigit():
        return int(port)
    return 0


def _same_slice(current: Mapping[str, Any], want: Mapping[str, Any]) -> bool:
    """Same content, ignoring the generation; owned by the same Node incarnation."""
    a, b = dict(spec_of(current)), dict(want["spec"])
    a["pool"] = {**(a.get("pool") or {}), "generation": 0}
    b["pool"] = {**(b.get("pool") or {}), "generation": 0}
    owners = [(r.get("uid"), r.get("controller")) for r in meta_of(current).get("ownerReferences") or []]
    wanted = [(r.get("uid"), r.get("controller")) for r in want["metadata"].get("ownerReferences") or []]
    return a == b and owners == wanted


# ---------------------------------------------------------------------- the controller


class FleetController(managers.Controller):
    """A Controller whose queue is seeded with the fleet's Requests each time the manager starts it
    (`on_start`, called once the term's queue is set)."""

    def __init__(self, simulator: Simulator, *, workers: int) -> None:
        self.simulator = simulator
        super().__init__(name=NAME, reconciler=simulator, watches=simulator.watches(), workers=workers)

        self._wheel: asyncio.Task[None] | None = None
        self._kubelet_api: asyncio.Task[None] | None = None
        self._plugins: asyncio.Task[None] | None = None

    def on_start(self) -> None:
        if self._kubelet_api is None:
            self._kubelet_api = asyncio.get_running_loop().create_task(self.simulator.kubelet_api.serve(),
                                                                       name=f"controller:{NAME}:kubelet-api")
        requests = self.simulator.on_start()
        if self.queue is not None:
            for request in requests:
                self.queue.add(request)
        loop = asyncio.get_running_loop()
        self._wheel = loop.create_task(self.simulator.heartbeats(), name=f"controller:{NAME}:lease-wheel")
        self.simulator.enqueue = self.enqueue
        if self.simulator.plugins is not None:
            self._plugins = loop.create_task(self.simulator.plugins.run(), name=f"controller:{NAME}:plugins")

    def on_stop(self) -> None:
        self.simulator.enqueue = None
        if self._wheel is not None:
            self._wheel.cancel()
            self._wheel = None
        if self._kubelet_api is not None:
            self._kubelet_api.cancel()
            self._kubelet_api = None
        if self._plugins is not None:
            self._plugins.cancel()  # its registrations are closed as it ends
            self._plugins = None


def new(ctx: managers.ControllerContext, *, fleet: Fleet | None = None,
        workers: int = DEFAULT_WORKERS, kubelet_root: Path | None = None) -> managers.Controller:
    """The fleet controller. Without a fleet it is the kubelet of Nodes made by hand only. With
    `kubelet_root`, each node's kubelet has its directory `kubelet_root/<node>/` and hosts real DRA
    kubelet plugins (`controllers.fleet.plugins`)."""
    sim = Simulator(client=ctx.client, informer_factory=ctx.informers, clock=ctx.clock, fleet=fleet,
                    kubelet_root=kubelet_root, recorder=ctx.recorder(KUBELET))
    return FleetController(sim, workers=workers)


def factory(fleet: Fleet | None, *, workers: int = DEFAULT_WORKERS, kubelet_root: Path | None = None
            ) -> functools.partial[managers.Controller]:
    """A `ControllerFactory` (ctx -> Controller) bound to a loaded fleet, for the registry."""
    return functools.partial(new, fleet=fleet, workers=workers, kubelet_root=kubelet_root)
