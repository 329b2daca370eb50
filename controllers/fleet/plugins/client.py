"""The kubelet's side of one registered plugin: a gRPC channel to its endpoint, its DRA calls in the
chosen version (v1, or v1beta1 when the plugin offers only that), its health stream, and a watch on
the connection (a plugin whose connection is lost is reported dead, as upstream's stats handler
notices `ConnEnd`; an idle connection is asked to reconnect, as upstream's `Connect()` does).

Errors are rendered as Go's gRPC status errors (`rpc error: code = Unavailable desc = ...`), so the
messages built from them read as the kubelet's.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import grpc
import grpc.aio

from controllers.fleet.nodedirs import PreparedDevice
from controllers.fleet.plugins.registration import PluginInfo
from cp import kubeletapi
from cp.kubeletapi import (
    dra_v1_pb2,
    dra_v1_pb2_grpc,
    dra_v1beta1_pb2,
    dra_v1beta1_pb2_grpc,
    drahealth_v1_pb2,
    drahealth_v1_pb2_grpc,
    drahealth_v1alpha1_pb2,
    drahealth_v1alpha1_pb2_grpc,
    drahealth_v1beta1_pb2,
    drahealth_v1beta1_pb2_grpc,
    pluginregistration_v1_pb2,
    pluginregistration_v1_pb2_grpc,
)

CALL_TIMEOUT = 45.0  # seconds a plugin has to answer a DRA call (the kubelet's default)
REGISTRATION_TIMEOUT = 10.0  # GetInfo / NotifyRegistrationStatus
HEALTH_NAMES = {0: "Unknown", 1: "Healthy", 2: "Unhealthy"}  # HealthStatus -> DeviceHealth spec.health


def target(path: str) -> str:
    return f"unix:{path}"


def go_status(exc: grpc.aio.AioRpcError) -> str:
    """A gRPC error as Go's `status.Error` prints it."""
    code = exc.code()
    name = "OK" if code == grpc.StatusCode.OK else "".join(w.capitalize() for w in code.name.split("_"))
    return f"rpc error: code = {name} desc = {exc.details() or ''}"


class ClaimResult:
    """One claim's entry of a NodePrepareResources / NodeUnprepareResources answer."""

    __slots__ = ("devices", "error")

    def __init__(self, *, devices: Sequence[PreparedDevice] = (), error: str = "") -> None:
        self.devices = tuple(devices)
        self.error = error


class DeviceHealth:
    __slots__ = ("device", "health", "message", "pool", "timeout_seconds")

    def __init__(self, *, pool: str, device: str, health: str, message: str, timeout_seconds: int) -> None:
        self.pool, self.device, self.health = pool, device, health
        self.message, self.timeout_seconds = message, timeout_seconds


async def get_info(socket: str) -> tuple[grpc.aio.Channel, pluginregistration_v1_pb2.PluginInfo]:
    """GetInfo on a registration socket; the channel stays open for NotifyRegistrationStatus."""
    channel = grpc.aio.insecure_channel(target(socket))
    try:
        stub = pluginregistration_v1_pb2_grpc.RegistrationStub(channel)
        info: pluginregistration_v1_pb2.PluginInfo = await stub.GetInfo(
            pluginregistration_v1_pb2.InfoRequest(), timeout=REGISTRATION_TIMEOUT)
    except BaseException:
        await channel.close()
        raise
    return channel, info


async def notify(channel: grpc.aio.Channel, *, registered: bool, error: str) -> None:
    stub = pluginregistration_v1_pb2_grpc.RegistrationStub(channel)
    await stub.NotifyRegistrationStatus(
        pluginregistration_v1_pb2.RegistrationStatus(plugin_registered=registered, error=error),
        timeout=REGISTRATION_TIMEOUT)


class Plugin:
    """One registered plugin of a DRA driver on one node."""

    def __init__(self, info: PluginInfo, *, node: str) -> None:
        self.info = info
        self.node = node
        self.driver = info.driver
        self.endpoint = info.endpoint
        self.channel = grpc.aio.insecure_channel(target(info.endpoint))
        self.connected = False
        self.tasks: list[asyncio.Task[None]] = []
        if info.dra_service == kubeletapi.DRA_V1:
            self._pb: Any = dra_v1_pb2
            self._stub: Any = dra_v1_pb2_grpc.DRAPluginStub(self.channel)
        else:
            self._pb = dra_v1beta1_pb2
            self._stub = dra_v1beta1_pb2_grpc.DRAPluginStub(self.channel)

    def __repr__(self) -> str:
        return f"Plugin({self.driver!r} on {self.node!r} at {self.endpoint!r})"

    async def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        self.tasks.clear()
        await self.channel.close()

    # ------------------------------------------------------------------ DRA

    def _claims(self, claims: Sequence[tuple[str, str, str]]) -> list[Any]:
        return [self._pb.Claim(namespace=ns, uid=uid, name=name) for ns, name, uid in claims]

    async def prepare(self, claims: Sequence[tuple[str, str, str]]) -> dict[str, ClaimResult]:
        """NodePrepareResources for (namespace, name, uid) claims: claim uid -> its result.
        Raises grpc.aio.AioRpcError for a failed call."""
        response = await self._stub.NodePrepareResources(
            self._pb.NodePrepareResourcesRequest(claims=self._claims(claims)), timeout=CALL_TIMEOUT)
        out: dict[str, ClaimResult] = {}
        for uid, result in response.claims.items():
            devices = [PreparedDevice(request_names=tuple(d.request_names), pool_name=d.pool_name,
                                      device_name=d.device_name, cdi_device_ids=tuple(d.cdi_device_ids))
                       for d in result.devices]
            out[str(uid)] = ClaimResult(devices=devices, error=str(result.error))
        return out

    async def unprepare(self, claims: Sequence[tuple[str, str, str]]) -> dict[str, ClaimResult]:
        response = await self._stub.NodeUnprepareResources(
            self._pb.NodeUnprepareResourcesRequest(claims=self._claims(claims)), timeout=CALL_TIMEOUT)
        return {str(uid): ClaimResult(error=str(result.error)) for uid, result in response.claims.items()}

    # ------------------------------------------------------------------ health

    async def watch_health(self) -> AsyncIterator[list[DeviceHealth]]:
        """NodeWatchResources in the version chosen at registration: each message's device list."""
        service = self.info.health_service
        if service == kubeletapi.HEALTH_V1:
            pb: Any = drahealth_v1_pb2
            stub: Any = drahealth_v1_pb2_grpc.DRAResourceHealthStub(self.channel)
        elif service == kubeletapi.HEALTH_V1BETA1:
            pb, stub = drahealth_v1beta1_pb2, drahealth_v1beta1_pb2_grpc.DRAResourceHealthStub(self.channel)
        else:
            pb, stub = drahealth_v1alpha1_pb2, drahealth_v1alpha1_pb2_grpc.DRAResourceHealthStub(self.channel)
        call = stub.NodeWatchResources(pb.NodeWatchResourcesRequest())
        try:
            async for response in call:
                yield [DeviceHealth(pool=d.device.pool_name, device=d.device.device_name,
                                    health=HEALTH_NAMES.get(int(d.health), "Unknown"),
                                    message=str(getattr(d, "message", "")),
                                    timeout_seconds=int(getattr(d, "health_check_timeout_seconds", 0)))
                       for d in response.devices]
        finally:
            call.cancel()

    # ------------------------------------------------------------------ connection

    async def watch_connection(self, *, on_connected: Callable[[Plugin], None],
                               on_lost: Callable[[Plugin], None]) -> None:
        """Follow the channel: connected once READY (`on_connected`); an idle channel reconnects;
        once connected, a failure to reconnect is a lost connection (`on_lost`, once). Until its
        first connection a plugin stays registered but unusable (gRPC keeps trying), as upstream's
        kubelet keeps it."""
        state = self.channel.get_state(try_to_connect=True)
        while True:
            if state == grpc.ChannelConnectivity.READY:
                if not self.connected:
                    self.connected = True
                    on_connected(self)
            elif self.connected and state in (grpc.ChannelConnectivity.TRANSIENT_FAILURE,
                                              grpc.ChannelConnectivity.SHUTDOWN):
                self.connected = False
                on_lost(self)
                return
            await self.channel.wait_for_state_change(state)
            state = self.channel.get_state(try_to_connect=True)
