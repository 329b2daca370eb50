"""An example DRA driver's kubelet plugin, in Python: the template a driver developer starts from.

It runs on one node (here: a simulated cplane node, `ROOT/<node>/`, see docs/driver-development.md)
and does what a real DRA kubelet plugin does, over the real protocols:

1. **Publishes its devices** as a ResourceSlice (pool = the node, `spec.nodeName` = the node, owned by
   the Node) through the API, with the node's credentials (`ROOT/<node>/kubeconfig`: a token bound
   to the Node, so it may write this node's slices only).
2. **Serves the DRA gRPC service** (`k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin`) on
   `ROOT/<node>/plugins/<driver>/dra.sock`: `NodePrepareResources` reads each claim's allocation,
   writes a CDI spec for the claim into `ROOT/<node>/cdi/` (env `GPU_DEVICE_<n>=gpu-<n>`, as the
   upstream example driver injects) and answers with the CDI device ids; `NodeUnprepareResources`
   removes it. Both are idempotent, and what was prepared survives a restart (a checkpoint in the
   plugin's directory).
3. **Streams device health** (`v1alpha1.DRAResourceHealth`, `NodeWatchResources`): every device's
   health at once, then again on each change (`ExampleDriver.set_health`).
4. Optionally (`--device-status`) **publishes the prepared devices** in the claim's `status.devices`
   (server-side apply of its own entries; allowed for claims on its node only).
5. **Registers with the kubelet** last, once the services answer: a `pluginregistration.Registration`
   server on `ROOT/<node>/plugins_registry/<driver>-reg.sock` (GetInfo: type `DRAPlugin`, the
   driver name, the DRA socket, the services offered).

Run it against `cplane serve` (a simulated node's directory under `DATA_DIR/nodes`):

    python examples/dra-driver/dra_example_driver.py --data-dir .cplane --node gpu-node-0

or embed it (`ExampleDriver(...)`; `await driver.start()` ... `await driver.stop()`), as its test does.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import grpc
import structlog

from controllers.runtime import client as clients
from cp import errors, kubeletapi
from cp.kubeletapi import (
    dra_v1_pb2,
    dra_v1_pb2_grpc,
    drahealth_v1alpha1_pb2,
    drahealth_v1alpha1_pb2_grpc,
    pluginregistration_v1_pb2,
    pluginregistration_v1_pb2_grpc,
)

DRIVER = "gpu.example.dev"
GPUS = 4
CDI_VERSION = "0.6.0"
SLICES = "resourceslices.resource.k8s.io"
CLAIMS = "resourceclaims.resource.k8s.io"

logger = structlog.get_logger("dra-example-driver")


# --------------------------------------------------------------------------- files


def _write_json(path: Path, doc: Any) -> None:
    """By rename, so the kubelet (or a CDI reader) never sees half a file."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f, indent=2, sort_keys=True)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _env_suffix(device: str, *, whole: bool = False) -> str:
    """`gpu-1` -> `1` (or `GPU_1` whole), as an environment variable name's part."""
    name = device if whole else device.removeprefix("gpu-")
    return name.upper().replace("-", "_").replace(".", "_")


MAX_SOCKET_PATH = 107  # bytes of a unix socket's path (sun_path, less its terminating NUL)


def _fresh_socket(path: Path) -> None:
    """The socket's directory, without a socket left by a previous run."""
    if len(os.fsencode(path)) > MAX_SOCKET_PATH:
        raise ValueError(f"socket path {path} is {len(os.fsencode(path))} bytes, more than a unix socket allows "
                         f"({MAX_SOCKET_PATH}): use a shorter data directory")
    path.parent.mkdir(mode=0o750, parents=True, exist_ok=True)
    path.unlink(missing_ok=True)


class CDI:
    """CDI spec files for this driver in the node's CDI directory: one `common` device (node and
    driver name), and one spec per prepared claim with a device per allocated GPU."""

    def __init__(self, *, directory: Path, driver: str, node: str) -> None:
        self.directory, self.driver, self.node = directory, driver, node
        self.vendor = f"k8s.{driver}"
        self.kind = f"{self.vendor}/gpu"

    def device_id(self, name: str) -> str:
        return f"{self.kind}={name}"

    def _path(self, name: str) -> Path:
        return self.directory / f"{self.vendor}-gpu_{name}.json"

    def write_common(self) -> None:
        _write_json(self._path("common"), {"cdiVersion": CDI_VERSION, "kind": self.kind, "devices": [
            {"name": "common", "containerEdits": {"env": [f"KUBERNETES_NODE_NAME={self.node}",
                                                          f"DRA_RESOURCE_DRIVER_NAME={self.driver}"]}}]})

    def write_claim(self, claim_uid: str, devices: list[str]) -> list[str]:
        """The claim's spec; the CDI ids of the common device and of each of the claim's devices.
        Each device sets `GPU_DEVICE_<n>=gpu-<n>` and `GPU_DEVICE_GPU_<n>_RESOURCE_CLAIM=<claim uid>`,
        the variables the upstream example driver's containers see."""
        spec = {"cdiVersion": CDI_VERSION, "kind": self.kind, "devices": [
            {"name": f"{claim_uid}-{device}", "containerEdits": {"env": [
                f"GPU_DEVICE_{_env_suffix(device)}={device}",
                f"GPU_DEVICE_{_env_suffix(device, whole=True)}_RESOURCE_CLAIM={claim_uid}"]}}
            for device in devices]}
        _write_json(self._path(claim_uid), spec)
        return [self.device_id("common"), *(self.device_id(f"{claim_uid}-{d}") for d in devices)]

    def remove_claim(self, claim_uid: str) -> None:
        self._path(claim_uid).unlink(missing_ok=True)


# --------------------------------------------------------------------------- the driver


class ExampleDriver(dra_v1_pb2_grpc.DRAPluginServicer,
                    drahealth_v1alpha1_pb2_grpc.DRAResourceHealthServicer,
                    pluginregistration_v1_pb2_grpc.RegistrationServicer):
    """The kubelet plugin of driver `driver` on `node`, with its files under `kubelet_dir`
    (`ROOT/<node>/`: `plugins_registry/`, `plugins/<driver>/`, `cdi/`) and `client` for the API."""

    def __init__(self, *, node: str, kubelet_dir: Path, client: clients.Client, driver: str = DRIVER,
                 gpus: int = GPUS, device_status: bool = False) -> None:
        """`device_status`: also publish each prepared device in the claim's `status.devices`."""
        self.node, self.driver, self.client = node, driver, client
        self.device_status = device_status
        self._status_tasks: set[asyncio.Task[None]] = set()
        self.kubelet_dir = kubelet_dir
        self.plugin_dir = kubelet_dir / "plugins" / driver
        self.dra_socket = self.plugin_dir / "dra.sock"
        self.registration_socket = kubelet_dir / "plugins_registry" / f"{driver}-reg.sock"
        self.checkpoint = self.plugin_dir / "checkpoint.json"
        self.cdi = CDI(directory=kubelet_dir / "cdi", driver=driver, node=node)
        self.devices = [f"gpu-{i}" for i in range(gpus)]
        self.health = dict.fromkeys(self.devices, True)
        self.health_changed = asyncio.Condition()
        self._health_version = 0
        self.registered = asyncio.Event()  # the kubelet said it registered us
        self.prepared_calls: list[list[str]] = []  # claim uids of each NodePrepareResources, for inspection
        self._prepared: dict[str, dict[str, Any]] = {}  # claim uid -> {namespace, name, devices: [...]}
        self._servers: list[grpc.aio.Server] = []
        self._log = logger.bind(driver=driver, node=node)

    # -- lifecycle

    async def start(self) -> None:
        """Publish the slice, serve DRA and health, then register (the order upstream's helper keeps)."""
        self._prepared = self._load_checkpoint()
        self.cdi.write_common()
        await self.publish_slices()
        self.plugin_dir.mkdir(mode=0o750, parents=True, exist_ok=True)
        dra = grpc.aio.server()
        dra_v1_pb2_grpc.add_DRAPluginServicer_to_server(self, dra)
        drahealth_v1alpha1_pb2_grpc.add_DRAResourceHealthServicer_to_server(self, dra)
        await self._serve(dra, self.dra_socket)
        registration = grpc.aio.server()
        pluginregistration_v1_pb2_grpc.add_RegistrationServicer_to_server(self, registration)
        await self._serve(registration, self.registration_socket)
        self._log.info("plugin_started", dra_socket=str(self.dra_socket),
                       registration_socket=str(self.registration_socket), devices=len(self.devices))

    async def _serve(self, server: grpc.aio.Server, socket: Path) -> None:
        _fresh_socket(socket)
        server.add_insecure_port(f"unix://{socket}")
        await server.start()
        self._servers.append(server)

    async def stop(self) -> None:
        """Deregister (the registration socket goes first), then stop serving. The slices stay: the
        kubelet removes a plugin's slices once it is gone for good, as upstream's does."""
        for task in self._status_tasks:
            task.cancel()
        await asyncio.gather(*self._status_tasks, return_exceptions=True)
        for server in reversed(self._servers):
            await server.stop(grace=1.0)
        self._servers.clear()
        self.registration_socket.unlink(missing_ok=True)
        self.dra_socket.unlink(missing_ok=True)
        self._log.info("plugin_stopped")

    # -- ResourceSlices

    def slice_spec(self) -> dict[str, Any]:
        devices = [{"name": name, "attributes": {
            "index": {"int": i}, "uuid": {"string": f"gpu-{uuid.uuid5(uuid.NAMESPACE_URL, f'{self.node}/{name}')}"},
            "model": {"string": "LATEST-GPU-MODEL"}, "driverVersion": {"version": "1.0.0"}},
            "capacity": {"memory": {"value": "80Gi"}}} for i, name in enumerate(self.devices)]
        return {"driver": self.driver, "nodeName": self.node, "devices": devices,
                "pool": {"name": self.node, "generation": 1, "resourceSliceCount": 1}}

    async def publish_slices(self) -> dict[str, Any]:
        """One slice with every device, created or brought in line (a new pool generation)."""
        want = self.slice_spec()
        found = (await self.client.list(SLICES, field_selector=f"spec.nodeName={self.node},spec.driver={self.driver}")
                 ).items
        node = await self.client.get("nodes", self.node)
        owner = {"apiVersion": "v1", "kind": "Node", "name": self.node, "uid": node["metadata"]["uid"],
                 "controller": True}
        if not found:
            obj = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                   "metadata": {"generateName": f"{self.node}-{self.driver}-", "ownerReferences": [owner]},
                   "spec": want}
            created = await self.client.create(SLICES, obj, field_manager=self.driver)
            self._log.info("slice_created", name=created["metadata"]["name"], devices=len(self.devices))
            return created
        current, *extra = found
        for other in extra:  # a pool of one slice: others are leftovers
            with contextlib.suppress(errors.NotFound):
                await self.client.delete(SLICES, other["metadata"]["name"])
        have = dict(current["spec"])
        generation = int((have.get("pool") or {}).get("generation") or 0)
        want["pool"]["generation"] = generation
        if {k: have.get(k) for k in want} == want:
            return current
        want["pool"]["generation"] = generation + 1
        current["spec"] = {**have, **want}
        updated = await self.client.update(SLICES, current, field_manager=self.driver)
        self._log.info("slice_updated", name=current["metadata"]["name"], generation=generation + 1)
        return updated

    # -- pluginregistration.Registration

    async def GetInfo(self, request: pluginregistration_v1_pb2.InfoRequest,
                      context: grpc.aio.ServicerContext[Any, Any]) -> pluginregistration_v1_pb2.PluginInfo:
        return pluginregistration_v1_pb2.PluginInfo(
            type=kubeletapi.DRA_PLUGIN_TYPE, name=self.driver, endpoint=str(self.dra_socket),
            supported_versions=[kubeletapi.DRA_V1, kubeletapi.HEALTH_V1ALPHA1])

    async def NotifyRegistrationStatus(
            self, request: pluginregistration_v1_pb2.RegistrationStatus,
            context: grpc.aio.ServicerContext[Any, Any]) -> pluginregistration_v1_pb2.RegistrationStatusResponse:
        if request.plugin_registered:
            self.registered.set()
            self._log.info("plugin_registered")
        else:
            self.registered.clear()
            self._log.warning("plugin_registration_failed", error=request.error)
        return pluginregistration_v1_pb2.RegistrationStatusResponse()

    # -- DRA v1

    async def NodePrepareResources(
            self, request: dra_v1_pb2.NodePrepareResourcesRequest,
            context: grpc.aio.ServicerContext[Any, Any]) -> dra_v1_pb2.NodePrepareResourcesResponse:
        self.prepared_calls.append([c.uid for c in request.claims])
        out = dra_v1_pb2.NodePrepareResourcesResponse()
        for claim in request.claims:
            try:
                devices = await self._prepare(claim.namespace, claim.name, claim.uid)
            except (errors.StatusError, ValueError) as exc:
                self._log.warning("claim_prepare_failed", namespace=claim.namespace, claim=claim.name,
                                  uid=claim.uid, error=str(exc))
                out.claims[claim.uid].error = str(exc)
                continue
            out.claims[claim.uid].devices.extend(devices)
            self._log.info("claim_prepared", namespace=claim.namespace, claim=claim.name, uid=claim.uid,
                           devices=[d.device_name for d in devices])
        return out

    async def _prepare(self, namespace: str, name: str, uid: str) -> list[dra_v1_pb2.Device]:
        done = self._prepared.get(uid)
        if done is None:
            claim = await self.client.get(CLAIMS, name, namespace=namespace)
            if claim["metadata"].get("uid") != uid:
                raise ValueError(f"claim {namespace}/{name} has uid {claim['metadata'].get('uid')}, not {uid}")
            allocation = (claim.get("status") or {}).get("allocation")
            if not allocation:
                raise ValueError(f"claim {namespace}/{name} is not allocated")
            results = [r for r in (allocation.get("devices") or {}).get("results") or []
                       if r.get("driver") == self.driver and r.get("pool") == self.node]
            unknown = sorted({r["device"] for r in results} - set(self.devices))
            if unknown:
                raise ValueError(f"claim {namespace}/{name}: no such device on {self.node}: {', '.join(unknown)}")
            names = [r["device"] for r in results]
            ids = self.cdi.write_claim(uid, names)
            done = {"namespace": namespace, "name": name, "devices": [
                {"request": r["request"], "device": r["device"], "cdi": [ids[0], ids[1 + k]]}
                for k, r in enumerate(results)]}
            self._prepared[uid] = done
            self._save_checkpoint()
            if self.device_status:  # never in the way of the answer: the kubelet waits for it
                task = asyncio.get_running_loop().create_task(
                    self.publish_device_status(namespace, name, uid, names), name=f"device-status:{uid}")
                self._status_tasks.add(task)
                task.add_done_callback(self._status_tasks.discard)
        return [dra_v1_pb2.Device(request_names=[d["request"]], pool_name=self.node, device_name=d["device"],
                                  cdi_device_ids=d["cdi"]) for d in done["devices"]]

    async def publish_device_status(self, namespace: str, name: str, uid: str, devices: list[str]) -> None:
        """This driver's entries of the claim's `status.devices`, by server-side apply: only its own
        entries are its field manager's, so other drivers' stay as they are. The node's credentials
        allow it for claims allocated on this node only (`associated-node:patch` on
        `resourceclaims/driver`); the uid makes it fail on another incarnation of the claim."""
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        body = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                "metadata": {"name": name, "namespace": namespace, "uid": uid},
                "status": {"devices": [{"driver": self.driver, "pool": self.node, "device": device, "conditions": [
                    {"type": "Ready", "status": "True", "reason": "Prepared", "message": "",
                     "lastTransitionTime": now}]} for device in devices]}}
        try:
            await self.client.patch(CLAIMS, name, body, namespace=namespace, subresource="status",
                                    patch_type="apply", field_manager=self.driver, force=True)
        except errors.StatusError as exc:  # gone, replaced or refused: nothing to retry
            self._log.warning("device_status_failed", namespace=namespace, claim=name, uid=uid, error=str(exc))
            return
        self._log.info("device_status_published", namespace=namespace, claim=name, uid=uid, devices=devices)

    async def NodeUnprepareResources(
            self, request: dra_v1_pb2.NodeUnprepareResourcesRequest,
            context: grpc.aio.ServicerContext[Any, Any]) -> dra_v1_pb2.NodeUnprepareResourcesResponse:
        out = dra_v1_pb2.NodeUnprepareResourcesResponse()
        for claim in request.claims:
            self.cdi.remove_claim(claim.uid)
            if self._prepared.pop(claim.uid, None) is not None:
                self._save_checkpoint()
            out.claims[claim.uid].error = ""
            self._log.info("claim_unprepared", namespace=claim.namespace, claim=claim.name, uid=claim.uid)
        return out

    # -- dra-health v1alpha1

    async def set_health(self, device: str, *, healthy: bool) -> None:
        async with self.health_changed:
            self.health[device] = healthy
            self._health_version += 1
            self.health_changed.notify_all()
        self._log.info("device_health_changed", device=device, healthy=healthy)

    def _health_message(self) -> drahealth_v1alpha1_pb2.NodeWatchResourcesResponse:
        status = drahealth_v1alpha1_pb2.HealthStatus
        now = int(time.time())
        return drahealth_v1alpha1_pb2.NodeWatchResourcesResponse(devices=[
            drahealth_v1alpha1_pb2.DeviceHealth(
                device=drahealth_v1alpha1_pb2.DeviceIdentifier(pool_name=self.node, device_name=name),
                health=status.HEALTHY if ok else status.UNHEALTHY, last_updated_time=now)
            for name, ok in self.health.items()])

    async def NodeWatchResources(
            self, request: drahealth_v1alpha1_pb2.NodeWatchResourcesRequest,
            context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[drahealth_v1alpha1_pb2.NodeWatchResourcesResponse]:
        seen = -1
        while True:
            async with self.health_changed:
                while self._health_version == seen:
                    await self.health_changed.wait()
                seen = self._health_version
                message = self._health_message()
            yield message

    # -- checkpoint

    def _load_checkpoint(self) -> dict[str, dict[str, Any]]:
        try:
            doc = json.loads(self.checkpoint.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return {}
        claims = doc.get("claims") if isinstance(doc, dict) else None
        return dict(claims) if isinstance(claims, Mapping) else {}

    def _save_checkpoint(self) -> None:
        _write_json(self.checkpoint, {"version": "v1", "claims": self._prepared})


# --------------------------------------------------------------------------- the process


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="dra_example_driver.py",
                                description="An example DRA kubelet plugin for a simulated cplane node.")
    p.add_argument("--node", required=True, help="the node this plugin runs on")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--data-dir", type=Path, help="cplane serve's data dir (the node's directory is DIR/nodes/NODE)")
    where.add_argument("--kubelet-dir", type=Path, help="the node's kubelet directory itself (ROOT/NODE)")
    p.add_argument("--kubeconfig", type=Path, default=None, help="default: the node's kubeconfig")
    p.add_argument("--driver", default=DRIVER, help=f"driver name (default {DRIVER})")
    p.add_argument("--gpus", type=int, default=GPUS, help=f"devices to publish (default {GPUS})")
    p.add_argument("--device-status", action="store_true",
                   help="publish each prepared device in its claim's status.devices")
    args = p.parse_args(argv)
    kubelet_dir = args.kubelet_dir or args.data_dir / "nodes" / args.node
    kubeconfig = args.kubeconfig or kubelet_dir / "kubeconfig"
    if not kubeconfig.exists():
        print(f"{kubeconfig} not found: is node {args.node} a simulated node of a running cplane?", file=sys.stderr)
        return 2
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))

    async def run() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        async with clients.Client.from_kubeconfig(kubeconfig, user_agent=f"{args.driver}/kubelet-plugin") as client:
            driver = ExampleDriver(node=args.node, kubelet_dir=kubelet_dir, client=client, driver=args.driver,
                                   gpus=args.gpus, device_status=args.device_status)
            try:
                await driver.start()
                await stop.wait()
            finally:
                await driver.stop()

    try:
        asyncio.run(run())
    except (errors.StatusError, ValueError, OSError) as exc:  # refused by the API, or no room for a socket
        print(f"dra_example_driver: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
