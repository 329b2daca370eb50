"""The simulated kubelets' plugin managers: per node, the plugin watcher over
`ROOT/<node>/plugins_registry`, the registrations of DRA plugins, the DRA calls the kubelet makes for
pods and claims, the health streams, and the wiping of a dead driver's ResourceSlices.

**Watching.** The registry directories of the nodes whose kubelet runs are scanned every
`SCAN_INTERVAL` seconds of real time (a poll, where upstream uses inotify; sockets appear in real
time whatever clock the fleet runs on), recursively, skipping names that start with "." — listed
again only when one of their directories changed (`RegistryWatch`); `scan()`
runs one scan and waits for the registrations it starts (what tests await). A new socket (or a socket
re-created at the same path) is registered: `GetInfo`, the checks of `registration.validate`, a
gRPC channel to the endpoint, `NotifyRegistrationStatus` (with the kubelet's error text on failure;
a failed registration is tried again, with a back-off, while the socket stays). A removed socket
deregisters its plugin.

**Dead plugins.** A registered plugin whose connection is lost (the channel cannot reconnect) is
deregistered too; its registration socket, if left behind, is asked again with the back-off. A
plugin is usable once connected. When a driver has no usable plugin on a node, its ResourceSlices of
that node (`spec.nodeName`, `spec.driver`) are deleted `WIPE_DELAY` seconds later on the fleet's
clock (upstream's 30 s grace for a restarting plugin), unless a plugin of the driver is connected
by then (a pending wipe keeps its time; a connection cancels it).

**The fake drivers step aside** (`aside(node)`): from the registration of a real plugin of a driver
on a node until its slices are wiped with no plugin of it registered, the fleet's fake driver of that
name does not publish slices, prepare or unprepare there; other drivers and other nodes keep their
fake drivers.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import grpc.aio
import structlog

from controllers import health
from controllers.fleet.nodedirs import NodeDir, PreparedClaim, PreparedDevice
from controllers.fleet.plugins import client as plugin_client
from controllers.fleet.plugins import registration
from controllers.fleet.plugins.client import Plugin
from controllers.runtime import client as clients
from cp import clock as clocks
from cp import errors
from cp.dra import nodeops

SCAN_INTERVAL = 1.0  # seconds (real time) between two scans of the registry directories
WIPE_DELAY = 30.0  # seconds (fleet clock) before a dead driver's slices are wiped (upstream's default)
WIPE_RETRY_MAX = 300.0
HEALTH_RETRY = 5.0  # seconds (fleet clock) before a health stream that ended is opened again
REGISTER_RETRY = 1.0  # seconds (real time) before a failed registration is tried again, doubling...
REGISTER_RETRY_MAX = 60.0  # ...up to this
FIELD_MANAGER = "kubelet"
SLICES = clients.resolve("resourceslices.resource.k8s.io")

logger = structlog.get_logger("cplane.controllers.fleet.plugins")

Claim = tuple[str, str, str]  # namespace, name, uid
SocketId = tuple[int, int]  # inode, modification time (a socket re-created at a path differs)


def find_sockets(registry: Path, dirs: dict[str, int] | None = None) -> dict[str, SocketId]:
    """The unix sockets under a registry directory (recursively; dot-names skipped). `dirs`, when
    given, gets each directory scanned with its modification time (`RegistryWatch`)."""
    out: dict[str, SocketId] = {}
    try:
        if dirs is not None:
            dirs[str(registry)] = os.stat(registry).st_mtime_ns
        entries = list(os.scandir(registry))
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return out
    for entry in entries:
        if entry.name.startswith("."):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISSOCK(st.st_mode):
            out[entry.path] = (st.st_ino, st.st_mtime_ns)
        elif stat.S_ISDIR(st.st_mode):
            out.update(find_sockets(Path(entry.path), dirs))
    return out


class RegistryWatch:
    """One node's registry, scanned only when it may have changed: a socket made or removed changes
    the modification time of its directory, so a scan stats the directories the last scan saw (one
    `stat` for a registry with no subdirectory) and lists them again only when one of them changed —
    a fleet of 10,000 nodes costs 10,000 `stat`s a second, not 10,000 directory listings."""

    def __init__(self, registry: Path) -> None:
        self.registry = registry
        self.dirs: dict[str, int] = {}  # directory -> modification time when last listed

    def changed(self) -> dict[str, SocketId] | None:
        """The sockets now, or None when no directory changed since the last listing."""
        if self.dirs:
            try:
                if all(os.stat(d).st_mtime_ns == m for d, m in self.dirs.items()):
                    return None
            except OSError:
                pass  # a directory went: list again
        dirs: dict[str, int] = {}
        found = find_sockets(self.registry, dirs)
        self.dirs = dirs
        return found


class NodePlugins:
    """The plugin manager of one node's kubelet."""

    def __init__(self, *, node: str, node_dir: NodeDir, owner: Plugins) -> None:
        self.node = node
        self.dir = node_dir
        self.owner = owner
        self.sockets: dict[str, SocketId] = {}  # registration socket -> identity last handled
        self.by_socket: dict[str, Plugin] = {}
        self.drivers: dict[str, list[Plugin]] = {}  # in registration order
        self.retry: dict[str, tuple[float, float]] = {}  # failed socket -> (next try, back-off)
        self.aside: set[str] = set()  # drivers the fake drivers leave to real plugins here
        self.wipes: dict[str, asyncio.Task[None]] = {}
        self.checkpoint_loaded = False
        self.watch = RegistryWatch(node_dir.registry)
        # The DRA calls of one node, one at a time: two pods sharing a claim must not both see it
        # unprepared (upstream's kubelet locks its claim cache around the same decisions).
        self.calls = asyncio.Lock()
        self._log = logger.bind(node=node)

    # ------------------------------------------------------------------ lookups

    def get(self, driver: str) -> Plugin | None:
        """The plugin to call for a driver: the newest connected one, else the newest."""
        plugins = self.drivers.get(driver) or []
        for plugin in reversed(plugins):
            if plugin.connected:
                return plugin
        return plugins[-1] if plugins else None

    def usable(self, driver: str) -> bool:
        return any(p.connected for p in self.drivers.get(driver) or [])

    # ------------------------------------------------------------------ registration

    async def sync_sockets(self, found: Mapping[str, SocketId]) -> None:
        """Register new sockets, deregister removed ones (one scan's worth)."""
        for path in sorted(set(self.sockets) - set(found)):
            del self.sockets[path]
            self.retry.pop(path, None)
            plugin = self.by_socket.pop(path, None)
            if plugin is not None:
                await self.deregister(plugin, reason="socket removed")
        now = time.monotonic()
        todo = []
        for path, ident in sorted(found.items()):
            if self.sockets.get(path) == ident:
                retry = self.retry.get(path)
                if retry is None or retry[0] > now:
                    continue
            elif path in self.sockets:  # re-created: the old registration goes first
                self.retry.pop(path, None)
                old = self.by_socket.pop(path, None)
                if old is not None:
                    await self.deregister(old, reason="socket re-created")
            self.sockets[path] = ident
            todo.append(path)
        await asyncio.gather(*(self.register(path) for path in todo))

    def _failed(self, path: str) -> None:
        _at, backoff = self.retry.get(path, (0.0, REGISTER_RETRY / 2))
        backoff = min(backoff * 2, REGISTER_RETRY_MAX)
        self.retry[path] = (time.monotonic() + backoff, backoff)

    async def register(self, path: str) -> None:
        try:
            channel, info = await plugin_client.get_info(path)
        except grpc.aio.AioRpcError as exc:
            self._log.warning("plugin_get_info_failed", socket=path, error=plugin_client.go_status(exc))
            self._failed(path)
            return
        try:
            error = ""
            try:
                reg = registration.validate(plugin_type=info.type, name=info.name, endpoint=info.endpoint,
                                            supported_versions=list(info.supported_versions), socket=path,
                                            root=self.dir.path)
            except registration.RegistrationError as exc:
                error = str(exc)
            else:
                if any(p.endpoint == reg.endpoint for p in self.drivers.get(reg.driver) or []):
                    error = ("RegisterPlugin error -- plugin registration failed with err: endpoint "
                             f"{reg.endpoint} already registered for DRA driver plugin {reg.driver}")
                else:
                    self.add(reg)
            if error:
                self._log.warning("plugin_registration_failed", socket=path, error=error)
                self._failed(path)
            else:
                self.retry.pop(path, None)
            try:
                await plugin_client.notify(channel, registered=not error, error=error)
            except grpc.aio.AioRpcError as exc:
                self._log.warning("plugin_notify_failed", socket=path, error=plugin_client.go_status(exc))
        finally:
            await channel.close()

    def add(self, reg: registration.PluginInfo) -> Plugin:
        plugin = Plugin(reg, node=self.node)
        self.drivers.setdefault(reg.driver, []).append(plugin)
        self.by_socket[reg.socket] = plugin
        plugin.tasks.append(self.owner.spawn(plugin.watch_connection(on_connected=self._connected, on_lost=self._lost),
                                             name=f"plugin:{self.node}:{reg.driver}:connection"))
        if reg.health_service:
            plugin.tasks.append(self.owner.spawn(self._health(plugin), name=f"plugin:{self.node}:{reg.driver}:health"))
        # Not usable until its connection is up: as upstream's kubelet, the driver's slices are wiped
        # after the grace delay unless a plugin of it is connected by then (a wipe already pending
        # keeps its time; a connection cancels it).
        self._ensure_wipe(reg.driver)
        if not self.checkpoint_loaded:
            self.checkpoint_loaded = True
            for claim in self.dir.prepared().values():
                self.owner.note(claim.namespace, claim.name, self.node, present=True)
        self.aside.add(reg.driver)
        self._log.info("plugin_registered", driver=reg.driver, endpoint=reg.endpoint, service=reg.dra_service,
                       health_service=reg.health_service or None)
        self.owner.changed(self.node)
        return plugin

    def _connected(self, plugin: Plugin) -> None:
        wipe = self.wipes.pop(plugin.driver, None)
        if wipe is not None:
            wipe.cancel()

    def _lost(self, plugin: Plugin) -> None:
        """A lost connection deregisters the plugin; its registration socket, if it stays, is asked
        again on the next scans (with the back-off), as a kubelet would reconnect."""
        socket = plugin.info.socket
        if self.by_socket.get(socket) is plugin and socket not in self.retry:
            self.retry[socket] = (time.monotonic() + REGISTER_RETRY, REGISTER_RETRY)
        self.owner.spawn(self.deregister(plugin, reason="connection lost"),
                         name=f"plugin:{self.node}:{plugin.driver}:deregister")

    async def deregister(self, plugin: Plugin, *, reason: str, wipe: bool = True) -> None:
        plugins = self.drivers.get(plugin.driver) or []
        if plugin not in plugins:
            return
        plugins.remove(plugin)
        if not plugins:
            self.drivers.pop(plugin.driver, None)
        for path, p in list(self.by_socket.items()):
            if p is plugin:
                del self.by_socket[path]
        self._log.info("plugin_deregistered", driver=plugin.driver, endpoint=plugin.endpoint, reason=reason)
        if wipe and not self.usable(plugin.driver):
            self._ensure_wipe(plugin.driver)
        await plugin.close()
        self.owner.changed(self.node)

    async def close(self) -> None:
        """Forget every registration (the kubelet stops): no wiping."""
        for task in self.wipes.values():
            task.cancel()
        self.wipes.clear()
        for plugins in list(self.drivers.values()):
            for plugin in list(plugins):
                await self.deregister(plugin, reason="kubelet stopped", wipe=False)
        self.sockets.clear()
        self.retry.clear()
        self.watch = RegistryWatch(self.dir.registry)  # the next scan lists the registry again

    # ------------------------------------------------------------------ wiping

    def _ensure_wipe(self, driver: str) -> None:
        if driver not in self.wipes:
            self.wipes[driver] = self.owner.spawn(self._wipe(driver, self.owner.wipe_due()),
                                                  name=f"plugin:{self.node}:{driver}:wipe")

    async def _wipe(self, driver: str, due: float) -> None:
        """Delete the driver's slices of this node at `due` (fleet clock) unless it is usable again."""
        clock = self.owner.clock
        await clock.sleep(max(due - clock.now(), 0.0))
        delay = 1.0
        while not self.usable(driver):
            selector = f"spec.nodeName={self.node},spec.driver={driver}"
            try:
                await self.owner.client.delete_collection(SLICES, field_selector=selector)
            except (errors.StatusError, OSError, TimeoutError) as exc:
                self._log.warning("resourceslices_wipe_failed", driver=driver, error=repr(exc), retry_in=delay)
                await clock.sleep(delay)
                delay = min(delay * 2, WIPE_RETRY_MAX)
                continue
            self._log.info("resourceslices_wiped", driver=driver)
            if not self.drivers.get(driver):
                self.aside.discard(driver)  # the fake driver (if any) takes over again
            break
        self.wipes.pop(driver, None)
        self.owner.changed(self.node)

    # ------------------------------------------------------------------ health

    async def _health(self, plugin: Plugin) -> None:
        """NodeWatchResources for as long as the plugin is registered; reopened `HEALTH_RETRY`
        seconds after it ends."""
        while True:
            try:
                async for devices in plugin.watch_health():
                    await self.owner.report_health(plugin.driver, devices)
            except grpc.aio.AioRpcError as exc:
                self._log.info("health_stream_ended", driver=plugin.driver, error=plugin_client.go_status(exc))
            await self.owner.clock.sleep(HEALTH_RETRY)

    # ------------------------------------------------------------------ DRA calls

    async def prepare(self, claims: Iterable[tuple[Claim, Sequence[str]]], *,
                      no_unprepare: Mapping[str, frozenset[str]] | None = None) -> str:
        """NodePrepareResources, per driver with a real plugin here, for the claims not yet prepared
        (per the checkpoint); what succeeded is recorded, with whether the claim's allocation skips
        its NodeUnprepareResources (`no_unprepare`: claim uid -> drivers). The kubelet's error text,
        or ""."""
        async with self.calls:
            return await self._prepare(claims, no_unprepare or {})

    async def _prepare(self, claims: Iterable[tuple[Claim, Sequence[str]]],
                       no_unprepare: Mapping[str, frozenset[str]]) -> str:
        wanted = [(claim, sorted(set(drivers) & self.aside)) for claim, drivers in claims]
        if not any(drivers for _claim, drivers in wanted):
            return ""
        prepared = self.dir.prepared()
        batches: dict[str, list[Claim]] = {}
        for claim, drivers in wanted:
            entry = prepared.get(claim[2])
            for driver in drivers:
                if entry is None or driver not in entry.drivers:
                    batches.setdefault(driver, []).append(claim)
        for driver, batch in sorted(batches.items()):
            plugin = self.get(driver)
            if plugin is None:
                return f"failed to get gRPC client for driver {driver}: DRA driver {driver} is not registered"
            try:
                results = await plugin.prepare(batch)
            except grpc.aio.AioRpcError as exc:
                return f"NodePrepareResources: {plugin_client.go_status(exc)}"
            by_uid = {c[2]: c for c in batch}
            done: list[tuple[Claim, Sequence[PreparedDevice]]] = []
            for uid, result in results.items():
                asked = by_uid.get(uid)
                if asked is None:
                    return f"NodePrepareResources returned result for unknown claim UID {uid}"
                if result.error:
                    return f"NodePrepareResources failed for ResourceClaim {asked[1]}: {result.error}"
                done.append((asked, result.devices))
            for (ns, name, uid), devices in done:
                self.dir.record(uid=uid, namespace=ns, name=name, driver=driver, devices=devices,
                                skip_unprepare=driver in no_unprepare.get(uid, ()))
                self.owner.note(ns, name, self.node, present=True)
                self._log.info("claim_prepared", namespace=ns, name=name, uid=uid, driver=driver,
                               devices=len(devices))
            if len(batch) > len(results):
                return f"NodePrepareResources skipped {len(batch) - len(results)} ResourceClaims"
        return ""

    async def unprepare(self, entries: Callable[[], Iterable[PreparedClaim]]) -> str:
        """NodeUnprepareResources for the checkpoint entries `entries()` picks (under the node's
        lock), per driver with a registered plugin; what succeeded is forgotten. A driver without a
        plugin here is left alone."""
        async with self.calls:
            return await self._unprepare(entries())

    async def _unprepare(self, entries: Iterable[PreparedClaim]) -> str:
        for entry in entries:
            claim = (entry.namespace, entry.name, entry.uid)
            for driver in sorted(entry.drivers):
                if driver in entry.skip_unprepare:  # DRAOptionalNodeOperations: no call, forgotten
                    self.dir.forget(uid=entry.uid, driver=driver)
                    continue
                plugin = self.get(driver) if driver in self.aside else None
                if plugin is None:
                    continue
                try:
                    results = await plugin.unprepare([claim])
                except grpc.aio.AioRpcError as exc:
                    return f"NodeUnprepareResources: {plugin_client.go_status(exc)}"
                result = results.get(entry.uid)
                if result is None:
                    return "NodeUnprepareResources skipped 1 ResourceClaims"
                if result.error:
                    return f"NodeUnprepareResources failed for ResourceClaim {entry.name}: {result.error}"
                self.dir.forget(uid=entry.uid, driver=driver)
                self._log.info("claim_unprepared", namespace=entry.namespace, name=entry.name, uid=entry.uid,
                               driver=driver)
            if entry.uid not in self.dir.prepared():
                self.owner.note(entry.namespace, entry.name, self.node, present=False)
        return ""


class Plugins:
    """The plugin managers of the fleet's kubelets (`ROOT/<node>/`), one `NodePlugins` per node
    whose kubelet runs. `on_change(node)` is called when a node's registrations change (the fleet
    re-syncs its slices and retries its pending pods)."""

    def __init__(self, *, root: Path, client: clients.Client, clock: clocks.Clock,
                 on_change: Callable[[str], None], wipe_delay: float = WIPE_DELAY,
                 scan_interval: float = SCAN_INTERVAL) -> None:
        self.root = root
        self.client = client
        self.clock = clock
        self.on_change = on_change
        self.wipe_delay = wipe_delay
        self.scan_interval = scan_interval
        self.nodes: dict[str, NodePlugins] = {}
        self._where: dict[tuple[str, str], set[str]] = {}  # claim (namespace, name) -> nodes with it prepared
        self._stopped: dict[str, set[str]] = {}  # node whose kubelet stopped -> the drivers that were real there
        self._tasks: set[asyncio.Task[Any]] = set()
        self._scan_lock = asyncio.Lock()
        self._log = logger

    # ------------------------------------------------------------------ nodes

    def ensure_node(self, node: str) -> NodePlugins:
        """The node's plugin manager, its kubelet directory created (its registry is watched). A
        kubelet that starts again keeps the fake drivers aside for the real plugins it had; each
        such driver's slices are wiped after the grace delay unless its plugin registers again."""
        np = self.nodes.get(node)
        if np is None:
            node_dir = NodeDir(root=self.root, node=node).create()
            np = self.nodes[node] = NodePlugins(node=node, node_dir=node_dir, owner=self)
            for driver in sorted(self._stopped.pop(node, ())):
                np.aside.add(driver)
                np.wipes[driver] = self.spawn(np._wipe(driver, self.wipe_due()), name=f"plugin:{node}:{driver}:wipe")
        return np

    def wipe_unless_registered(self, node: str, drivers: Iterable[str]) -> None:
        """A kubelet that starts wipes its node's ResourceSlices after the grace delay unless a plugin
        of their driver is connected by then (upstream's registration handler at kubelet start): for
        the drivers of slices left on the node that no fake driver of the fleet publishes there."""
        np = self.nodes.get(node)
        if np is None:
            return
        for driver in sorted(drivers):
            if not np.usable(driver):
                np._ensure_wipe(driver)

    def drop_node(self, node: str) -> None:
        """The node's kubelet stopped or the node went: its registrations are forgotten (which
        drivers were real is remembered for a restart)."""
        np = self.nodes.pop(node, None)
        if np is not None:
            if np.aside:
                self._stopped[node] = set(np.aside)
            self.spawn(np.close(), name=f"plugins:{node}:close")

    def aside(self, node: str) -> frozenset[str]:
        """The drivers whose fake driver steps aside on this node."""
        np = self.nodes.get(node)
        return frozenset(np.aside) if np is not None else frozenset()

    def registered(self, node: str, driver: str) -> bool:
        np = self.nodes.get(node)
        return np is not None and bool(np.drivers.get(driver))

    def knows(self, namespace: str, name: str) -> bool:
        """Whether a claim of this name is prepared by a real plugin on some node."""
        return (namespace, name) in self._where

    def note(self, namespace: str, name: str, node: str, *, present: bool) -> None:
        nodes = self._where.setdefault((namespace, name), set())
        if present:
            nodes.add(node)
        else:
            nodes.discard(node)
        if not nodes:
            del self._where[(namespace, name)]

    def changed(self, node: str) -> None:
        self.on_change(node)

    def wipe_due(self) -> float:
        """When slices of a driver that became unusable now are wiped."""
        return self.clock.now() + self.wipe_delay

    # ------------------------------------------------------------------ tasks

    def spawn(self, coro: Any, *, name: str) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self._log.error("plugin_task_failed", task=task.get_name(), error=repr(task.exception()))

    async def run(self) -> None:
        """Scan until cancelled; then every registration is closed (a new term registers again)."""
        try:
            while True:
                try:
                    await self.scan()
                except (OSError, RuntimeError) as exc:
                    self._log.warning("plugin_scan_failed", error=repr(exc))
                await asyncio.sleep(self.scan_interval)
        finally:
            await self.close()

    async def close(self) -> None:
        nodes, self.nodes = list(self.nodes.values()), {}
        for np in nodes:
            with contextlib.suppress(Exception):
                await np.close()
        current = asyncio.current_task()
        tasks = [t for t in self._tasks if t is not current]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._where.clear()
        self._stopped.clear()

    async def scan(self) -> None:
        """One scan of every watched registry; returns once the registrations it started are done."""
        async with self._scan_lock:
            nodes = list(self.nodes.values())
            found = await asyncio.to_thread(lambda: [np.watch.changed() for np in nodes])
            now = time.monotonic()
            for np, sockets in zip(nodes, found, strict=True):
                if self.nodes.get(np.node) is not np:
                    continue
                if sockets is None:  # nothing changed: only a failed registration may be due again
                    if not any(at <= now for at, _ in np.retry.values()):
                        continue
                    sockets = dict(np.sockets)
                await np.sync_sockets(sockets)

    # ------------------------------------------------------------------ the kubelet's calls

    async def prepare(self, node: str, claims: Iterable[Mapping[str, Any]]) -> str:
        """NodePrepareResources for a pod's claims (allocated, reserved) on its node; "" when every
        claim with a real plugin's driver is prepared, else the kubelet's error."""
        np = self.nodes.get(node)
        if np is None or not np.aside:
            return ""
        wanted: list[tuple[Claim, list[str]]] = []
        no_unprepare: dict[str, frozenset[str]] = {}
        for claim in claims:
            meta = claim.get("metadata") or {}
            results = nodeops.results_of(claim)
            skip = nodeops.skipped(results, nodeops.PREPARE)  # DRAOptionalNodeOperations
            drivers = [str(r.get("driver") or "") for r in results if r.get("driver") not in skip]
            uid = str(meta.get("uid") or "")
            no_unprepare[uid] = nodeops.skipped(results, nodeops.UNPREPARE)
            wanted.append(((str(meta.get("namespace") or ""), str(meta.get("name") or ""), uid), drivers))
        return await np.prepare(wanted, no_unprepare=no_unprepare)

    async def unprepare(self, node: str, namespace: str, names: Iterable[str], *,
                        in_use: Callable[[str, str], bool], keep_uid: Callable[[str, str], str] | None = None) -> str:
        """NodeUnprepareResources for the named claims prepared on the node, except those `in_use`
        (namespace, name) by another pod there, and the incarnation `keep_uid(namespace, name)` (a
        claim still allocated). "" or the first error."""
        np = self.nodes.get(node)
        wanted = set(names)
        if np is None or not np.aside or not wanted:
            return ""

        def entries() -> list[PreparedClaim]:
            assert np is not None
            return [e for e in np.dir.prepared().values() if e.namespace == namespace and e.name in wanted
                    and not in_use(e.namespace, e.name)
                    and (keep_uid is None or keep_uid(e.namespace, e.name) != e.uid)]
        return await np.unprepare(entries)

    def nodes_of(self, namespace: str, name: str) -> list[str]:
        return sorted(self._where.get((namespace, name), ()))

    async def report_health(self, driver: str, devices: Sequence[plugin_client.DeviceHealth]) -> None:
        """One message of a health stream: each device's health as its DeviceHealth report (the
        device-health reporter turns them into pods' `allocatedResourcesStatus`)."""
        now = self.clock.now()
        for d in devices:
            timeout = d.timeout_seconds if d.timeout_seconds > 0 else int(health.DEFAULT_TIMEOUT)
            message = d.message if len(d.message) <= health.MESSAGE_MAX else d.message[:health.MESSAGE_MAX - 3] + "..."
            try:
                await health.set_health(self.client, driver, d.pool, d.device, d.health, message, now=now,
                                        timeout_seconds=timeout, field_manager=FIELD_MANAGER)
            except errors.StatusError as exc:
                self._log.warning("device_health_write_failed", driver=driver, pool=d.pool, device=d.device,
                                  error=str(exc))
