"""Real DRA kubelet plugins on fleet nodes: a plugin written against the protocol only (a grpc.aio
server in the test, on unix sockets under a short temporary directory) registers on a node's
kubelet; a pod with a claim runs only after its NodePrepareResources; deleting it calls
NodeUnprepareResources; a prepare error is an event and the pod stays Pending; a health stream
update reaches the pod's status; a plugin that dies is deregistered and its slices are wiped after
the grace delay. The fleet and the device-health reporter run on a VirtualClock; registrations are
awaited through `Plugins.scan()` (no sleeps)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest

from api import server as servers
from controllers import fleet as fleets
from controllers import health
from controllers.fleet import plugins as kubelet_plugins
from controllers.fleet.nodedirs import NodeDir
from controllers.runtime import client as clients
from controllers.runtime import manager as managers
from cp import clock as clocks
from cp import errors
from cp.kubeletapi import (
    dra_v1_pb2,
    dra_v1_pb2_grpc,
    dra_v1beta1_pb2,
    dra_v1beta1_pb2_grpc,
    drahealth_v1_pb2,
    drahealth_v1_pb2_grpc,
    drahealth_v1alpha1_pb2,
    drahealth_v1alpha1_pb2_grpc,
    pluginregistration_v1_pb2,
    pluginregistration_v1_pb2_grpc,
)
from tests.controllers.fleet.conftest import EXAMPLES
from tests.controllers.support import settle
from tests.waiting import eventually

CLAIMS = "resourceclaims.resource.k8s.io"
SLICES = "resourceslices.resource.k8s.io"
DRIVER = "gpu.example.com"
NODE = "gpu-node-0"


# ---------------------------------------------------------------------- a plugin, from the protocol


class ProtocolPlugin(pluginregistration_v1_pb2_grpc.RegistrationServicer, dra_v1_pb2_grpc.DRAPluginServicer,
                 drahealth_v1alpha1_pb2_grpc.DRAResourceHealthServicer):
    """A DRA kubelet plugin as a driver author writes one: registration socket in the kubelet's
    plugins_registry, its DRA (and health) service on its own socket under plugins/."""

    def __init__(self, node_dir: Path, *, driver: str = DRIVER, versions: tuple[str, ...] = (
            "v1.DRAPlugin", "v1alpha1.DRAResourceHealth")) -> None:
        self.driver = driver
        self.versions = versions
        self.registration_socket = node_dir / "plugins_registry" / f"{driver}-reg.sock"
        self.endpoint = node_dir / "plugins" / driver / "dra.sock"
        self.prepared: list[list[tuple[str, str, str]]] = []
        self.unprepared: list[list[tuple[str, str, str]]] = []
        self.statuses: list[tuple[bool, str]] = []
        self.registered = asyncio.Event()
        self.prepare_error = ""  # per claim
        self.prepare_abort: tuple[grpc.StatusCode, str] | None = None  # the whole call
        self.health: asyncio.Queue[drahealth_v1alpha1_pb2.NodeWatchResourcesResponse] = asyncio.Queue()
        self.health_v1: asyncio.Queue[drahealth_v1_pb2.NodeWatchResourcesResponse] = asyncio.Queue()
        self.watching = asyncio.Event()
        self.watching_v1 = asyncio.Event()
        self._servers: list[grpc.aio.Server] = []

    async def start(self) -> None:
        self.endpoint.parent.mkdir(parents=True, exist_ok=True)
        dra = grpc.aio.server()
        dra_v1_pb2_grpc.add_DRAPluginServicer_to_server(self, dra)
        if "v1beta1.DRAPlugin" in self.versions:
            dra_v1beta1_pb2_grpc.add_DRAPluginServicer_to_server(_V1beta1(self), dra)
        drahealth_v1alpha1_pb2_grpc.add_DRAResourceHealthServicer_to_server(self, dra)
        drahealth_v1_pb2_grpc.add_DRAResourceHealthServicer_to_server(_HealthV1(self), dra)
        dra.add_insecure_port(f"unix:{self.endpoint}")
        reg = grpc.aio.server()
        pluginregistration_v1_pb2_grpc.add_RegistrationServicer_to_server(self, reg)
        reg.add_insecure_port(f"unix:{self.registration_socket}")
        for server in (dra, reg):
            await server.start()
            self._servers.append(server)

    async def stop(self) -> None:
        for server in self._servers:
            await server.stop(None)
        self._servers.clear()

    # Registration
    async def GetInfo(self, request: Any, context: Any) -> pluginregistration_v1_pb2.PluginInfo:
        return pluginregistration_v1_pb2.PluginInfo(type="DRAPlugin", name=self.driver, endpoint=str(self.endpoint),
                                                    supported_versions=list(self.versions))

    async def NotifyRegistrationStatus(self, request: Any, context: Any) -> Any:
        self.statuses.append((request.plugin_registered, request.error))
        if request.plugin_registered:
            self.registered.set()
        return pluginregistration_v1_pb2.RegistrationStatusResponse()

    # DRAPlugin v1
    async def NodePrepareResources(self, request: Any, context: Any) -> Any:
        claims = [(c.namespace, c.name, c.uid) for c in request.claims]
        self.prepared.append(claims)
        if self.prepare_abort is not None:
            await context.abort(*self.prepare_abort)
        out = dra_v1_pb2.NodePrepareResourcesResponse()
        for c in request.claims:
            if self.prepare_error:
                out.claims[c.uid].error = self.prepare_error
            else:
                out.claims[c.uid].devices.append(dra_v1_pb2.Device(
                    request_names=["gpu"], pool_name=NODE, device_name="gpu-1",
                    cdi_device_ids=[f"k8s.{DRIVER}/gpu=gpu-1"]))
        return out

    async def NodeUnprepareResources(self, request: Any, context: Any) -> Any:
        self.unprepared.append([(c.namespace, c.name, c.uid) for c in request.claims])
        out = dra_v1_pb2.NodeUnprepareResourcesResponse()
        for c in request.claims:
            out.claims[c.uid].error = ""
        return out

    # DRAResourceHealth v1alpha1
    async def NodeWatchResources(self, request: Any, context: Any) -> Any:
        self.watching.set()
        while True:
            yield await self.health.get()


class _HealthV1(drahealth_v1_pb2_grpc.DRAResourceHealthServicer):
    def __init__(self, plugin: ProtocolPlugin) -> None:
        self.plugin = plugin

    async def NodeWatchResources(self, request: Any, context: Any) -> Any:
        self.plugin.watching_v1.set()
        while True:
            yield await self.plugin.health_v1.get()


class _V1beta1(dra_v1beta1_pb2_grpc.DRAPluginServicer):
    def __init__(self, plugin: ProtocolPlugin) -> None:
        self.plugin = plugin

    async def NodePrepareResources(self, request: Any, context: Any) -> Any:
        self.plugin.prepared.append([(c.namespace, c.name, c.uid) for c in request.claims])
        out = dra_v1beta1_pb2.NodePrepareResourcesResponse()
        for c in request.claims:
            out.claims[c.uid].devices.append(dra_v1beta1_pb2.Device(pool_name=NODE, device_name="gpu-1"))
        return out


# ---------------------------------------------------------------------- fixtures


@pytest.fixture
def clock() -> clocks.VirtualClock:
    return clocks.VirtualClock(start=1_800_000_000.0)


@contextlib.asynccontextmanager
async def fleet_with_plugins(srv: servers.Running, clock: clocks.Clock, root: Path, *,
                             with_health: bool = False) -> AsyncIterator[fleets.Simulator]:
    client = clients.Client(srv.url)
    manager = managers.Manager(client=client, clock=clock, name="test-fleet")
    controller = fleets.new(manager.context(), fleet=fleets.load_fleet(EXAMPLES / "demo.yaml"), workers=4,
                            kubelet_root=root)
    manager.add(controller)
    if with_health:
        manager.add(health.new(manager.context()))
    stop = asyncio.Event()
    task = asyncio.get_running_loop().create_task(manager.run(stop), name="test:fleet-manager")
    try:
        await asyncio.wait_for(manager.leading.wait(), 10)
        sim = controller.simulator  # type: ignore[attr-defined]
        assert isinstance(sim, fleets.Simulator) and sim.plugins is not None
        await eventually(lambda: NODE in sim.plugins.nodes, what="node directory watched")
        yield sim
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)
        await client.close()


@contextlib.asynccontextmanager
async def plugin_on(root: Path, **kwargs: Any) -> AsyncIterator[ProtocolPlugin]:
    plugin = ProtocolPlugin(root / NODE, **kwargs)
    await plugin.start()
    try:
        yield plugin
    finally:
        await plugin.stop()


async def register(sim: fleets.Simulator, plugin: ProtocolPlugin) -> None:
    assert sim.plugins is not None
    await sim.plugins.scan()
    assert plugin.statuses and plugin.statuses[-1] == (True, ""), plugin.statuses
    assert sim.plugins.registered(NODE, plugin.driver)


async def claimed_pod(client: clients.Client, name: str = "trainer") -> tuple[dict[str, Any], dict[str, Any]]:
    """A claim allocated on gpu-node-0 and reserved for a pod bound there (what the scheduler writes)."""
    claim = await client.create(CLAIMS, {
        "metadata": {"name": f"{name}-gpu", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER}}]}}})
    pod = await client.create("pods", {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"nodeName": NODE, "resourceClaims": [{"name": "gpu", "resourceClaimName": f"{name}-gpu"}],
                 "containers": [{"name": "app", "image": "nginx:1.27", "resources": {"claims": [{"name": "gpu"}]}}]}})
    allocation = {"devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": NODE, "device": "gpu-1"}]},
                  "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                      {"key": "metadata.name", "operator": "In", "values": [NODE]}]}]}}
    await client.patch(CLAIMS, f"{name}-gpu", {"status": {"allocation": allocation}}, namespace="default",
                       subresource="status")
    claim = await client.patch(CLAIMS, f"{name}-gpu", {"status": {"reservedFor": [
        {"resource": "pods", "name": name, "uid": pod["metadata"]["uid"]}]}}, namespace="default", subresource="status")
    return claim, pod


async def phase(client: clients.Client, name: str) -> str:
    try:
        return str((await client.get("pods", name, namespace="default"))["status"].get("phase"))
    except errors.NotFound:
        return "<gone>"


async def slices_of(client: clients.Client, node: str, driver: str) -> list[str]:
    return sorted(s["metadata"]["name"] for s in (await client.list(SLICES)).items
                  if s["spec"].get("nodeName") == node and s["spec"]["driver"] == driver)


# ---------------------------------------------------------------------- tests


async def test_a_pod_runs_only_after_node_prepare_and_its_deletion_unprepares(
        srv: servers.Running, client: clients.Client, clock: clocks.VirtualClock, root: Path) -> None:
    async with fleet_with_plugins(srv, clock, root) as sim, plugin_on(root) as plugin:
        await eventually(lambda: slices_of(client, NODE, DRIVER), what="fake slices published")
        await register(sim, plugin)
        # The fake driver of the same name steps aside on this node (its slices go), not elsewhere.
        await eventually(lambda: _not(slices_of(client, NODE, DRIVER)), what="fake gpu slices gone on gpu-node-0")
        assert await slices_of(client, "gpu-node-1", DRIVER) == ["gpu-node-1-gpu.example.com"]
        assert await slices_of(client, NODE, "nic.example.com") == ["gpu-node-0-nic.example.com"]

        claim, _pod = await claimed_pod(client)
        await eventually(lambda: _is(client, "trainer", "Running"), what="running after prepare")
        uid = claim["metadata"]["uid"]
        assert plugin.prepared == [[("default", "trainer-gpu", uid)]]
        # The checkpoint remembers what the plugin prepared, with its CDI device ids.
        prepared = NodeDir(root=root, node=NODE).prepared()
        assert prepared[uid].namespace == "default" and prepared[uid].name == "trainer-gpu"
        (device,) = prepared[uid].drivers[DRIVER]
        assert (device.pool_name, device.device_name, device.cdi_device_ids) == (
            NODE, "gpu-1", (f"k8s.{DRIVER}/gpu=gpu-1",))
        # No fake prepare for the plugin's driver: status.devices and CDI specs are the driver's to write.
        assert not (await client.get(CLAIMS, "trainer-gpu", namespace="default"))["status"].get("devices")
        assert not [p.name for p in (root / NODE / "cdi").iterdir() if uid in p.name]

        await client.delete("pods", "trainer", namespace="default")
        clock.advance(1)  # the containers' stop time
        await eventually(lambda: _is(client, "trainer", "<gone>"), what="pod removed")
        assert plugin.unprepared == [[("default", "trainer-gpu", uid)]]
        assert uid not in NodeDir(root=root, node=NODE).prepared()
        assert len(plugin.prepared) == 1


async def test_a_prepare_error_is_an_event_and_the_pod_stays_pending_until_a_retry_succeeds(
        srv: servers.Running, client: clients.Client, clock: clocks.VirtualClock, root: Path) -> None:
    async with fleet_with_plugins(srv, clock, root) as sim, plugin_on(root) as plugin:
        await register(sim, plugin)
        plugin.prepare_error = "no such GPU: gpu-1"
        await claimed_pod(client)

        async def failed_event() -> list[dict[str, Any]]:
            events = (await client.list("events", namespace="default")).items
            return [e for e in events if e["reason"] == "FailedPrepareDynamicResources"]
        (event, *_more) = await eventually(failed_event, what="FailedPrepareDynamicResources event")
        assert event["type"] == "Warning"
        assert event["involvedObject"]["kind"] == "Pod" and event["involvedObject"]["name"] == "trainer"
        assert event["source"]["component"] == "kubelet"
        assert event["message"] == ("Failed to prepare dynamic resources: prepare dynamic resources: "
                                    "NodePrepareResources failed for ResourceClaim trainer-gpu: no such GPU: gpu-1")
        pod = await client.get("pods", "trainer", namespace="default")
        assert pod["status"]["phase"] == "Pending"
        assert pod["status"]["containerStatuses"][0]["state"] == {"waiting": {"reason": "ContainerCreating"}}

        # Retried on the next pod sync (the back-off on the clock); the same failure counts up the event.
        def advance_until(done: Any) -> Any:
            async def check() -> Any:  # each turn moves the clock past the back-off (the last
                clock.advance(10)  # failure may not have been requeued when the test saw it)
                return await done()
            return check
        await eventually(advance_until(lambda: _counted(failed_event(), 2)), what="tried again, counted up")
        # Fixed, it runs.
        assert await phase(client, "trainer") == "Pending"
        plugin.prepare_error = ""
        await eventually(advance_until(lambda: _is(client, "trainer", "Running")), what="running after the retry")
        assert len(plugin.prepared) >= 3


async def test_a_call_error_is_reported_as_the_kubelet_does(
        srv: servers.Running, client: clients.Client, clock: clocks.VirtualClock, root: Path) -> None:
    async with fleet_with_plugins(srv, clock, root) as sim, plugin_on(root) as plugin:
        await register(sim, plugin)
        plugin.prepare_abort = (grpc.StatusCode.INTERNAL, "driver exploded")
        await claimed_pod(client)

        async def messages() -> list[str]:
            events = (await client.list("events", namespace="default")).items
            return [e["message"] for e in events if e["reason"] == "FailedPrepareDynamicResources"]
        (message, *_more) = await eventually(messages, what="event")
        assert message == ("Failed to prepare dynamic resources: prepare dynamic resources: NodePrepareResources: "
                           "rpc error: code = Internal desc = driver exploded")
        assert await phase(client, "trainer") == "Pending"


async def test_v1beta1_is_used_when_the_plugin_offers_only_that(
        srv: servers.Running, client: clients.Client, clock: clocks.VirtualClock, root: Path) -> None:
    async with fleet_with_plugins(srv, clock, root) as sim, plugin_on(root, versions=("v1beta1.DRAPlugin",)) as plugin:
        await register(sim, plugin)
        await claimed_pod(client)
        await eventually(lambda: _is(client, "trainer", "Running"), what="running after a v1beta1 prepare")
        assert len(plugin.prepared) == 1


async def test_a_bad_registration_is_refused_with_the_kubelets_message(
        srv: servers.Running, client: clients.Client, clock: clocks.VirtualClock, root: Path) -> None:
    async with fleet_with_plugins(srv, clock, root) as sim, plugin_on(root, versions=("v9.DRAPlugin",)) as plugin:
        assert sim.plugins is not None
        await sim.plugins.scan()
        assert plugin.statuses == [(False, (
            "RegisterPlugin error -- plugin validation failed with err: invalid supported gRPC versions of DRA "
            f"driver plugin {DRIVER} at endpoint {plugin.endpoint}: none of services supported by the plugin "
            '(["v9.DRAPlugin"]) are supported by the kubelet (["v1.DRAPlugin" "v1beta1.DRAPlugin"])'))]
        assert not sim.plugins.registered(NODE, DRIVER)
        assert await slices_of(client, NODE, DRIVER) == ["gpu-node-0-gpu.example.com"]  # the fake driver stays


async def test_a_health_update_shows_in_the_pods_status(
        srv: servers.Running, client: clients.Client, clock: clocks.VirtualClock, root: Path) -> None:
    async with fleet_with_plugins(srv, clock, root, with_health=True) as sim, plugin_on(root) as plugin:
        await register(sim, plugin)
        await asyncio.wait_for(plugin.watching.wait(), 10)  # advertised: the kubelet opened the stream
        await claimed_pod(client)
        await eventually(lambda: _is(client, "trainer", "Running"), what="running")
        update = drahealth_v1alpha1_pb2.NodeWatchResourcesResponse(devices=[drahealth_v1alpha1_pb2.DeviceHealth(
            device=drahealth_v1alpha1_pb2.DeviceIdentifier(pool_name=NODE, device_name="gpu-1"),
            health=drahealth_v1alpha1_pb2.UNHEALTHY, last_updated_time=1_800_000_000)])

        async def resource_status() -> Any:
            pod = await client.get("pods", "trainer", namespace="default")
            (status,) = pod["status"]["containerStatuses"]
            return status.get("allocatedResourcesStatus")
        # Before any report the device is Unknown (as for drivers without the health service)...
        assert await resource_status() in (None, [{"name": "claim:gpu", "resources": [
            {"resourceID": f"{DRIVER}/{NODE}/gpu-1", "health": "Unknown"}]}])
        plugin.health.put_nowait(update)
        # ...the plugin's report reaches the pod's status.
        await eventually(lambda: _eq(resource_status(), [{"name": "claim:gpu", "resources": [
            {"resourceID": f"{DRIVER}/{NODE}/gpu-1", "health": "Unhealthy"}]}]), what="Unhealthy in the pod status")
        report = await client.get(health.DEVICE_HEALTHS, health.health_object_name(DRIVER, NODE, "gpu-1"))
        assert report["spec"]["health"] == "Unhealthy"


async def test_without_the_health_service_no_stream_is_opened(
        srv: servers.Running, client: clients.Client, clock: clocks.VirtualClock, root: Path) -> None:
    async with fleet_with_plugins(srv, clock, root) as sim, plugin_on(root, versions=("v1.DRAPlugin",)) as plugin:
        await register(sim, plugin)
        await settle(50)
        assert not plugin.watching.is_set()


async def test_a_plugin_that_dies_is_deregistered_and_its_slices_wiped_after_the_grace_delay(
        srv: servers.Running, client: clients.Client, clock: clocks.VirtualClock, root: Path) -> None:
    async with fleet_with_plugins(srv, clock, root) as sim:
        assert sim.plugins is not None
        async with plugin_on(root) as plugin:
            await register(sim, plugin)
            await eventually(lambda: _not(slices_of(client, NODE, DRIVER)), what="fake slices gone")
            # The plugin publishes its own slice (as the kubelet plugin helper does).
            await client.create(SLICES, {"metadata": {"name": f"{NODE}-{DRIVER}-abcde"},
                                         "spec": {"driver": DRIVER, "nodeName": NODE,
                                                  "pool": {"name": NODE, "generation": 1, "resourceSliceCount": 1},
                                                  "devices": [{"name": "gpu-0"}]}})
        # The plugin's process is gone: its sockets go with its servers.
        await sim.plugins.scan()
        await eventually(lambda: not sim.plugins.registered(NODE, DRIVER), what="deregistered")
        await settle(20)
        assert await slices_of(client, NODE, DRIVER) == [f"{NODE}-{DRIVER}-abcde"]  # within the grace delay
        clock.advance(kubelet_plugins.WIPE_DELAY)
        # Wiped; then the fleet's fake driver takes the node back.
        await eventually(lambda: _eq(slices_of(client, NODE, DRIVER), ["gpu-node-0-gpu.example.com"]),
                         what="the plugin's slices wiped, the fake driver's back")


async def test_a_lost_connection_deregisters_the_plugin(
        srv: servers.Running, client: clients.Client, clock: clocks.VirtualClock, root: Path) -> None:
    async with fleet_with_plugins(srv, clock, root) as sim, plugin_on(root) as plugin:
        assert sim.plugins is not None
        await register(sim, plugin)
        await eventually(lambda: _not(slices_of(client, NODE, DRIVER)), what="fake slices gone")
        await client.create(SLICES, {"metadata": {"name": f"{NODE}-{DRIVER}-abcde"},
                                     "spec": {"driver": DRIVER, "nodeName": NODE,
                                              "pool": {"name": NODE, "generation": 1, "resourceSliceCount": 1},
                                              "devices": [{"name": "gpu-0"}]}})
        # Only the DRA service dies (its registration socket stays): the connection is lost.
        await plugin._servers[0].stop(None)
        # gRPC notices in real time (its channel fails to reconnect): slower on a loaded machine.
        await eventually(lambda: not sim.plugins.registered(NODE, DRIVER), within=30, what="deregistered")
        await settle(20)

        # The registration socket is asked again (after the back-off, in real time): registered,
        # but without its DRA service it is not usable, and its slices go after the grace delay.
        async def registered_again() -> bool:
            assert sim.plugins is not None
            await sim.plugins.scan()
            return sim.plugins.registered(NODE, DRIVER)
        await eventually(registered_again, within=10, interval=0.1, what="registered again")
        assert await slices_of(client, NODE, DRIVER) == [f"{NODE}-{DRIVER}-abcde"]
        clock.advance(kubelet_plugins.WIPE_DELAY)
        await eventually(lambda: _eq(slices_of(client, NODE, DRIVER), []), what="wiped; the fake driver stays aside")


async def _is(client: clients.Client, name: str, want: str) -> bool:
    return await phase(client, name) == want


async def _not(value: Any) -> bool:
    return not await value


async def _counted(events: Any, at_least: int) -> list[dict[str, Any]]:
    """The failure events when there is one, counted up to `at_least` (a repeat is not a new event)."""
    got = await events
    return got if len(got) == 1 and got[0]["count"] >= at_least else []


async def _eq(value: Any, want: Any) -> bool:
    return bool(await value == want)


async def test_a_shared_claim_is_unprepared_when_its_last_pod_on_the_node_goes(
        srv: servers.Running, client: clients.Client, clock: clocks.VirtualClock, root: Path) -> None:
    async with fleet_with_plugins(srv, clock, root) as sim, plugin_on(root) as plugin:
        await register(sim, plugin)
        claim, first = await claimed_pod(client, "first")
        second = await client.create("pods", {
            "metadata": {"name": "second", "namespace": "default"},
            "spec": {"nodeName": NODE, "resourceClaims": [{"name": "gpu", "resourceClaimName": "first-gpu"}],
                     "containers": [{"name": "app", "image": "nginx:1.27"}]}})
        await client.patch(CLAIMS, "first-gpu", {"status": {"reservedFor": [
            {"resource": "pods", "name": p["metadata"]["name"], "uid": p["metadata"]["uid"]} for p in (first, second)]}},
            namespace="default", subresource="status")
        await eventually(lambda: _is(client, "first", "Running"), what="first running")
        await eventually(lambda: _is(client, "second", "Running"), what="second running")
        assert len(plugin.prepared) == 1  # prepared once for both pods

        await client.delete("pods", "first", namespace="default")
        clock.advance(1)
        await eventually(lambda: _is(client, "first", "<gone>"), what="first removed")
        assert plugin.unprepared == []  # the other pod still uses it
        await client.delete("pods", "second", namespace="default")
        clock.advance(1)
        await eventually(lambda: _is(client, "second", "<gone>"), what="second removed")
        assert plugin.unprepared == [[("default", "first-gpu", claim["metadata"]["uid"])]]


async def test_deallocation_unprepares_a_claim_whose_pod_vanished(
        srv: servers.Running, client: clients.Client, clock: clocks.VirtualClock, root: Path) -> None:
    async with fleet_with_plugins(srv, clock, root) as sim, plugin_on(root) as plugin:
        await register(sim, plugin)
        claim, _pod = await claimed_pod(client)
        await eventually(lambda: _is(client, "trainer", "Running"), what="running")
        await client.delete("pods", "trainer", namespace="default", grace_period_seconds=0)  # forced: no kubelet
        await eventually(lambda: _is(client, "trainer", "<gone>"), what="pod gone")
        await settle(20)
        assert plugin.unprepared == []
        # What the resourceclaim controller then does: release and deallocate.
        await client.patch(CLAIMS, "trainer-gpu", {"status": {"reservedFor": None, "allocation": None}},
                           namespace="default", subresource="status")
        uid = claim["metadata"]["uid"]
        await eventually(lambda: plugin.unprepared == [[("default", "trainer-gpu", uid)]], what="unprepared")
        await eventually(lambda: uid not in NodeDir(root=root, node=NODE).prepared(), what="checkpoint forgot it")


async def test_a_plugin_back_within_the_grace_delay_keeps_its_slices(
        srv: servers.Running, client: clients.Client, clock: clocks.VirtualClock, root: Path) -> None:
    async with fleet_with_plugins(srv, clock, root) as sim:
        assert sim.plugins is not None
        async with plugin_on(root) as plugin:
            await register(sim, plugin)
            await eventually(lambda: _not(slices_of(client, NODE, DRIVER)), what="fake slices gone")
            await client.create(SLICES, {"metadata": {"name": f"{NODE}-{DRIVER}-abcde"},
                                         "spec": {"driver": DRIVER, "nodeName": NODE,
                                                  "pool": {"name": NODE, "generation": 1, "resourceSliceCount": 1},
                                                  "devices": [{"name": "gpu-0"}]}})
        await sim.plugins.scan()
        await eventually(lambda: not sim.plugins.registered(NODE, DRIVER), what="deregistered")
        clock.advance(kubelet_plugins.WIPE_DELAY / 2)
        async with plugin_on(root) as again:  # restarted (a new process, new sockets)
            await register(sim, again)
            clock.advance(kubelet_plugins.WIPE_DELAY)
            await settle(50)
            assert await slices_of(client, NODE, DRIVER) == [f"{NODE}-{DRIVER}-abcde"]


async def test_a_stopped_kubelet_forgets_its_plugins_and_registers_them_again_when_it_starts(
        srv: servers.Running, client: clients.Client, clock: clocks.VirtualClock, root: Path) -> None:
    async with fleet_with_plugins(srv, clock, root) as sim, plugin_on(root) as plugin:
        assert sim.plugins is not None
        await register(sim, plugin)
        await eventually(lambda: _not(slices_of(client, NODE, DRIVER)), what="fake slices gone")
        await client.patch("nodes", NODE, {"metadata": {"annotations": {"sim.cplane.dev/kubelet": "stopped"}}})
        await eventually(lambda: not sim.plugins.registered(NODE, DRIVER), what="registration forgotten")
        await client.patch("nodes", NODE, {"metadata": {"annotations": {"sim.cplane.dev/kubelet": None}}})
        await eventually(lambda: NODE in sim.plugins.nodes, what="kubelet started")
        assert DRIVER in sim.plugins.aside(NODE)  # the fake driver stays aside meanwhile
        await sim.plugins.scan()
        assert sim.plugins.registered(NODE, DRIVER) and plugin.statuses[-1] == (True, "")
        clock.advance(kubelet_plugins.WIPE_DELAY)
        await settle(50)
        assert await slices_of(client, NODE, DRIVER) == []  # neither wiped-and-republished nor fake


async def test_a_plugin_restarted_between_two_scans_is_registered_anew(
        srv: servers.Running, client: clients.Client, clock: clocks.VirtualClock, root: Path) -> None:
    async with fleet_with_plugins(srv, clock, root) as sim:
        assert sim.plugins is not None
        async with plugin_on(root) as first:
            await register(sim, first)
        async with plugin_on(root) as second:  # same paths, new sockets, before the next scan
            await register(sim, second)
            claim, _pod = await claimed_pod(client)
            await eventually(lambda: _is(client, "trainer", "Running"), what="running")
            assert second.prepared == [[("default", "trainer-gpu", claim["metadata"]["uid"])]]
            assert first.prepared == []


async def test_health_v1_is_preferred_and_carries_its_message_and_timeout(
        srv: servers.Running, client: clients.Client, clock: clocks.VirtualClock, root: Path) -> None:
    versions = ("v1.DRAPlugin", "v1alpha1.DRAResourceHealth", "v1.DRAResourceHealth")
    async with fleet_with_plugins(srv, clock, root, with_health=True) as sim, \
            plugin_on(root, versions=versions) as plugin:
        await register(sim, plugin)
        await asyncio.wait_for(plugin.watching_v1.wait(), 10)
        assert not plugin.watching.is_set()  # the newest advertised version only
        await claimed_pod(client)
        await eventually(lambda: _is(client, "trainer", "Running"), what="running")
        plugin.health_v1.put_nowait(drahealth_v1_pb2.NodeWatchResourcesResponse(devices=[drahealth_v1_pb2.DeviceHealth(
            device=drahealth_v1_pb2.DeviceIdentifier(pool_name=NODE, device_name="gpu-1"),
            health=drahealth_v1_pb2.UNHEALTHY, last_updated_time=1_800_000_000, health_check_timeout_seconds=60,
            message="ECC errors")]))

        async def resource_status() -> Any:
            pod = await client.get("pods", "trainer", namespace="default")
            return pod["status"]["containerStatuses"][0].get("allocatedResourcesStatus")
        await eventually(lambda: _eq(resource_status(), [{"name": "claim:gpu", "resources": [
            {"resourceID": f"{DRIVER}/{NODE}/gpu-1", "health": "Unhealthy", "message": "ECC errors"}]}]),
            what="Unhealthy with its message")
        report = await client.get(health.DEVICE_HEALTHS, health.health_object_name(DRIVER, NODE, "gpu-1"))
        assert report["spec"]["timeoutSeconds"] == 60
        # No report within the plugin's timeout: Unknown, as the kubelet's health cache decides.
        clock.advance(61)
        await eventually(lambda: _eq(_health_of(resource_status()), "Unknown"), what="Unknown after the timeout")


async def _health_of(status: Any) -> str:
    got = await status
    return str(got[0]["resources"][0]["health"]) if got else ""


async def test_a_starting_kubelet_wipes_slices_its_plugins_left_unless_they_register_again(
        srv: servers.Running, client: clients.Client, clock: clocks.VirtualClock, root: Path) -> None:
    """Slices of real plugins from before the kubelet started (a fleet restarted while a plugin was
    gone) are wiped after the grace delay, as upstream's kubelet does at start; a plugin that registers
    in time keeps its slices; the fake drivers' own slices are never wiped so."""
    for driver in ("gone.example.dev", "back.example.dev"):
        await client.create(SLICES, {"metadata": {"name": f"{NODE}-{driver}"},
                                     "spec": {"driver": driver, "nodeName": NODE,
                                              "pool": {"name": NODE, "generation": 1, "resourceSliceCount": 1},
                                              "devices": [{"name": "dev-0"}]}})
    async with fleet_with_plugins(srv, clock, root) as sim, plugin_on(root, driver="back.example.dev") as plugin:
        await register(sim, plugin)
        await eventually(lambda: slices_of(client, NODE, DRIVER), what="fake slices published")
        clock.advance(kubelet_plugins.WIPE_DELAY)
        await eventually(lambda: _eq(slices_of(client, NODE, "gone.example.dev"), []), what="left-over slices wiped")
        assert await slices_of(client, NODE, "back.example.dev") == [f"{NODE}-back.example.dev"]
        assert await slices_of(client, NODE, DRIVER)  # the fake driver's
