"""Which controllers exist, and the one entry point that runs a set of them against a server.

`cplane serve` runs them in-process next to the API; `cplane controllers --server URL --only NAMES`
runs them as their own process. Either way they reach the server only over HTTP.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterable, Mapping

import structlog

from controllers import (
    cronjob,
    daemonset,
    deployment,
    disruption,
    endpoints,
    endpointslice,
    fleet,
    garbage_collector,
    health,
    hpa,
    job,
    namespace,
    nodelifecycle,
    replicaset,
    resourceclaim,
    resourcepoolstatusrequest,
    resourcequota,
    rootcacert,
    scheduler,
    serviceaccount,
    statefulset,
    taint_eviction,
    taint_evictor,
    ttl_after_finished,
    volumes,
)
from controllers.runtime import client as clients
from controllers.runtime import leaderelection as elections
from controllers.runtime import manager as managers
from cp import clock as clocks

ControllerFactory = Callable[[managers.ControllerContext], managers.Controller]

CONTROLLERS: dict[str, ControllerFactory] = {
    garbage_collector.NAME: garbage_collector.new,
    namespace.NAME: namespace.new,
    serviceaccount.NAME: serviceaccount.new,
    rootcacert.NAME: rootcacert.new,
    taint_evictor.NAME: taint_evictor.new,
    nodelifecycle.NAME: nodelifecycle.new,
    taint_eviction.NAME: taint_eviction.new,
    volumes.NAME: volumes.new,
    health.NAME: health.new,
    replicaset.NAME: replicaset.new,
    deployment.NAME: deployment.new,
    daemonset.NAME: daemonset.new,
    statefulset.NAME: statefulset.new,
    job.NAME: job.new,
    ttl_after_finished.NAME: ttl_after_finished.new,
    cronjob.NAME: cronjob.new,
    disruption.NAME: disruption.new,
    endpointslice.NAME: endpointslice.new,
    endpoints.NAME: endpoints.new,
    resourceclaim.NAME: resourceclaim.new,
    resourcequota.NAME: resourcequota.new,
    resourcepoolstatusrequest.NAME: resourcepoolstatusrequest.new,
    fleet.NAME: fleet.new,
    hpa.NAME: hpa.new,
    scheduler.NAME: scheduler.new,
}

# kube-controller-manager's names (current and pre-1.28) map to ours.
ALIASES = {
    "garbage-collector-controller": garbage_collector.NAME,
    "garbagecollector": garbage_collector.NAME,
    "namespace-controller": namespace.NAME,
    "serviceaccount-controller": serviceaccount.NAME,
    "root-ca-certificate-publisher-controller": rootcacert.NAME,
    taint_evictor.COMPONENT: taint_evictor.NAME,
    nodelifecycle.UPSTREAM_NAME: nodelifecycle.NAME,
    taint_eviction.COMPONENT: taint_eviction.NAME,
    volumes.UPSTREAM_NAME: volumes.NAME,
    "replicaset-controller": replicaset.NAME,
    "deployment-controller": deployment.NAME,
    daemonset.COMPONENT: daemonset.NAME,
    statefulset.COMPONENT: statefulset.NAME,
    job.COMPONENT: job.NAME,
    ttl_after_finished.COMPONENT: ttl_after_finished.NAME,
    "ttlafterfinished": ttl_after_finished.NAME,
    cronjob.COMPONENT: cronjob.NAME,
    "disruption-controller": disruption.NAME,
    "endpointslice-controller": endpointslice.NAME,
    "endpoints-controller": endpoints.NAME,
    "endpoint": endpoints.NAME,
    "resourceclaim-controller": resourceclaim.NAME,
    resourcequota.COMPONENT: resourcequota.NAME,
    resourcepoolstatusrequest.COMPONENT: resourcepoolstatusrequest.NAME,
    "horizontal-pod-autoscaler-controller": hpa.NAME,
    "horizontalpodautoscaling": hpa.NAME,
    "kube-scheduler": scheduler.NAME,
}

logger = structlog.get_logger("cplane.controllers")


def resolve_names(names: Iterable[str] | None) -> list[str]:
    """Controller names from a selection like kube-controller-manager's `--controllers`: None, `*`
    or empty = all; `-name` drops one; unknown names raise ValueError."""
    requested = [n.strip() for n in (names or []) if n.strip()]
    if not requested:
        requested = ["*"]
    selected: list[str] = []
    excluded: set[str] = set()
    for raw in requested:
        neg = raw.startswith("-")
        name = raw[1:] if neg else raw
        if name == "*":
            if not neg:
                selected.extend(n for n in CONTROLLERS if n not in selected)
            continue
        canonical = ALIASES.get(name, name)
        if canonical not in CONTROLLERS:
            raise ValueError(f"unknown controller {name!r}; known: {', '.join(sorted(CONTROLLERS))}")
        if neg:
            excluded.add(canonical)
        elif canonical not in selected:
            selected.append(canonical)
    return [n for n in selected if n not in excluded]


async def run_controllers(*, server_url: str | None = None, kubeconfig: str | os.PathLike[str] | None = None,
                          names: Iterable[str] | None = None, clock: clocks.Clock | None = None,
                          stop_event: asyncio.Event,
                          leader_election: bool | elections.LeaderElectionConfig = False,
                          workers: int | None = None,
                          ready: asyncio.Event | None = None,
                          overrides: Mapping[str, ControllerFactory] | None = None,
                          identities: Callable[[str], clients.Client] | None = None) -> None:
    """Run the named controllers (None: all) against the API server at `server_url` (or the one a
    kubeconfig names) until `stop_event` is set, then stop them cleanly and return.

    `leader_election=True` (or a config) makes this one candidate for the Lease
    `kube-system/cplane-controller-manager`: controllers run only while it is held. `workers`
    overrides each controller's worker count. `ready` is set once caches have synced and the
    controllers run (or, with leader election, once caches have synced). `overrides` replaces the
    factories of some controllers (e.g. `{"fleet": fleet.factory(loaded_fleet)}`).
    `identities` (a secure server, issue #10): `identities(name)` returns the client a component
    runs with — `"kube-controller-manager"` for the shared informers and leader election, then each
    controller's own (its ServiceAccount; the scheduler as `system:kube-scheduler`), so that each
    acts with its own least-privilege RBAC role.
    """
    if (server_url is None) == (kubeconfig is None):
        raise ValueError("pass exactly one of server_url or kubeconfig")
    selected = resolve_names(names)
    the_clock = clock or clocks.RealClock()
    if identities is not None:
        client = identities("kube-controller-manager")
    else:
        client = (clients.Client(server_url) if server_url is not None
                  else clients.Client.from_kubeconfig(kubeconfig))
    own_clients: list[clients.Client] = []
    config: elections.LeaderElectionConfig | None
    if isinstance(leader_election, elections.LeaderElectionConfig):
        config = leader_election
    else:
        config = elections.LeaderElectionConfig() if leader_election else None
    try:
        manager = managers.Manager(client=client, clock=the_clock, leader_election=config)
        ctx = manager.context()
        for name in selected:
            cctx = ctx
            if identities is not None:
                own_clients.append(identities("kube-scheduler" if name == scheduler.NAME else name))
                cctx = managers.ControllerContext(client=own_clients[-1], informers=ctx.informers,
                                                  clock=ctx.clock, identity=ctx.identity)
            controller = ((overrides or {}).get(name) or CONTROLLERS[name])(cctx)
            if workers is not None:
                controller.workers = workers
            manager.add(controller)
        logger.info("controllers_starting", controllers=selected, server=client.base_url,
                    leader_election=config is not None)
        if ready is not None:
            notifier = asyncio.get_running_loop().create_task(
                _notify_ready(manager, ready, elected=config is not None), name="controllers:ready")
        try:
            await manager.run(stop_event)
        finally:
            if ready is not None:
                notifier.cancel()
                await asyncio.gather(notifier, return_exceptions=True)
    finally:
        for own in own_clients:
            await own.close()
        await client.close()


async def _notify_ready(manager: managers.Manager, ready: asyncio.Event, *, elected: bool) -> None:
    if elected:
        await manager.informers.wait_for_sync()  # started by manager.run
    else:
        await manager.leading.wait()
    ready.set()
