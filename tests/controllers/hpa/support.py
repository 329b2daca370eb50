"""Helpers for the HPA tests: a server on a virtual clock with only the HPA controller running, a
fake workload (scheduler + kubelet + ReplicaSet in one, driven explicitly by the test so every
step is deterministic), and bounded polling."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from api import server as servers
from controllers import hpa
from controllers.runtime import client as clients
from controllers.runtime import manager as managers
from cp import clock as clocks
from cp import errors, features
from tests.waiting import eventually

DEPLOYMENTS = "deployments.apps"
CLOCK_PATH = "/apis/sim.cplane.dev/v1alpha1/clocks/cluster"


@dataclass
class Cluster:
    srv: servers.Running
    clock: clocks.VirtualClock
    client: clients.Client
    controller: hpa.HorizontalController

    async def advance(self, seconds: float) -> float:
        """Move the virtual clock through the API (so the log records it) and return the new time."""
        for _ in range(5):
            body = json.loads(await self.client.request("GET", CLOCK_PATH))
            target = clocks.parse_time(body["spec"]["time"]) + seconds
            body["spec"]["time"] = clocks.rfc3339_micro(target)
            try:
                await self.client.request("PUT", CLOCK_PATH, body=body)
            except errors.Conflict:
                continue
            return self.clock.now()
        raise AssertionError("could not move the clock")

    async def synced(self, name: str, *, at: float | None = None, namespace: str = "default") -> None:
        """Wait until the HPA's sync at clock time `at` (default: now) has finished."""
        when = self.clock.now() if at is None else at
        await eventually(lambda: (self.controller.last_sync(namespace, name) or 0) >= when,
                         what=f"HPA {namespace}/{name} synced at {when}")

    async def tick(self, name: str, seconds: float = hpa.SYNC_PERIOD, namespace: str = "default") -> None:
        """Advance one sync period and wait for the HPA's sync."""
        now = await self.advance(seconds)
        await self.synced(name, at=now, namespace=namespace)

    async def hpa(self, name: str, namespace: str = "default") -> dict[str, Any]:
        return await self.client.get("horizontalpodautoscalers.autoscaling", name, namespace=namespace)

    async def replicas(self, name: str, namespace: str = "default") -> int:
        scale = await self.client.get_scale(DEPLOYMENTS, name, namespace=namespace)
        return int(scale["spec"].get("replicas") or 0)

    async def events(self, name: str, namespace: str = "default") -> list[dict[str, Any]]:
        got = await self.client.list("events", namespace=namespace,
                                     field_selector=f"involvedObject.name={name}")
        return sorted(got.items, key=lambda e: (e.get("lastTimestamp") or "", e["metadata"]["name"]))


def condition(hpa_obj: dict[str, Any], type_: str) -> tuple[str, str, str]:
    for c in (hpa_obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == type_:
            return c.get("status", ""), c.get("reason", ""), c.get("message", "")
    return ("", "", "")


@contextlib.asynccontextmanager
async def cluster(tmp_path: Path, *, start: float | None = None,
                  gates: str = "HPAScaleToZero=true") -> AsyncIterator[Cluster]:
    """An API server on a virtual clock (an hour behind wall time, so kubectl prints sane ages) with
    the HPA controller running in-process; `gates` are its `--feature-gates` (scaling to zero needs
    the alpha HPAScaleToZero, as upstream)."""
    clock = clocks.VirtualClock(start=start if start is not None else float(int(time.time()) - 3600))
    async with servers.running(data_dir=tmp_path / "data", db_url="memory:", clock=clock,
                               app_options={"feature_gates": features.parse(gates)}) as srv:
        client = clients.Client(srv.url)
        manager = managers.Manager(client=client, clock=clock)
        controller = hpa.new(manager.context())
        manager.add(controller)
        stop = asyncio.Event()
        task = asyncio.create_task(manager.run(stop), name="test:hpa-manager")
        try:
            await eventually(manager.leading.is_set, what="the HPA controller to start")
            reconciler = controller.reconciler
            assert isinstance(reconciler, hpa.HorizontalController)
            yield Cluster(srv=srv, clock=clock, client=client, controller=reconciler)
        finally:
            stop.set()
            await task
            await client.close()


# ---------------------------------------------------------------------- objects


def node(name: str = "n1") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
                       "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                       "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}


def deployment(name: str, *, replicas: int, cpu: str = "250m", memory: str = "64Mi") -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": name}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "worker", "image": "worker:1",
                                                           "resources": {"requests": {"cpu": cpu,
                                                                                      "memory": memory}}}]}}}}


class Workload:
    """Keeps `spec.replicas` Running and Ready pods of a Deployment on a node, when told to: the
    part of the cluster (ReplicaSet controller, scheduler, kubelet) these tests do not run."""

    def __init__(self, cl: Cluster, name: str, *, node: str = "n1") -> None:
        self.cl = cl
        self.name = name
        self.node = node
        self.serial = 0

    async def pods(self) -> list[dict[str, Any]]:
        got = await self.cl.client.list("pods", namespace="default", label_selector=f"app={self.name}")
        return sorted(got.items, key=lambda p: p["metadata"]["name"])

    async def sync(self) -> int:
        want = await self.cl.replicas(self.name)
        pods = await self.pods()
        for pod in pods[want:]:
            await self.cl.client.delete("pods", pod["metadata"]["name"], namespace="default", grace_period_seconds=0)
        for _ in range(want - len(pods)):
            await self._start_pod()
        dep = await self.cl.client.get(DEPLOYMENTS, self.name, namespace="default")
        dep["status"] = {"observedGeneration": dep["metadata"]["generation"], "replicas": want,
                         "readyReplicas": want, "availableReplicas": want, "updatedReplicas": want}
        await self.cl.client.update_status(DEPLOYMENTS, dep)
        return want

    async def _start_pod(self) -> None:
        dep = await self.cl.client.get(DEPLOYMENTS, self.name, namespace="default")
        template = dep["spec"]["template"]
        self.serial += 1
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": f"{self.name}-{self.serial}", "namespace": "default",
                            "labels": dict(template["metadata"]["labels"])},
               "spec": {**template["spec"], "nodeName": self.node}}
        created = await self.cl.client.create("pods", pod)
        now = clocks.rfc3339(self.cl.clock.now())
        created["status"] = {"phase": "Running", "startTime": now, "podIP": f"10.244.0.{self.serial}",
                             "conditions": [{"type": cond, "status": "True", "lastTransitionTime": now}
                                            for cond in ("PodScheduled", "Initialized", "ContainersReady", "Ready")]}
        await self.cl.client.update_status("pods", created)
