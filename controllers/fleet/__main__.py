"""`python -m controllers.fleet --server URL [--fleet FILE] [--root-dir DIR]`: run the simulated fleet
on its own against an API server (with `--root-dir`, its kubelets host real DRA kubelet plugins
under DIR/<node>/); `--check FILE` validates a fleet file and prints a summary."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from pathlib import Path

from controllers.fleet import objects as objs
from controllers.fleet.controller import DEFAULT_WORKERS, new
from controllers.fleet.loading import load_fleet
from controllers.fleet.model import Fleet, FleetError
from controllers.runtime import client as clients
from controllers.runtime import manager as managers
from cp import clock as clocks
from cp import collector, logs


def _summary(fleet: Fleet) -> str:
    plan = objs.Plan(fleet)
    slices = sum(len(objs.slices_for(plan, plan.nodes[p.node_name(0)])) * p.count
                 for p in fleet.node_pools if p.count)
    devices = sum(sum(len(dd.devices) for dd in plan.devices(plan.nodes[p.node_name(0)]).values()) * p.count
                  for p in fleet.node_pools if p.count)
    classes = [c["metadata"]["name"] for c in objs.device_classes(fleet)]
    return (f"fleet {fleet.name}: {fleet.node_count()} nodes in {len(fleet.node_pools)} pools, "
            f"{slices} ResourceSlices, {devices} devices, DeviceClasses: {', '.join(classes) or '-'}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m controllers.fleet",
                                description="Run the simulated fleet against an API server, or check a fleet file.")
    p.add_argument("--fleet", metavar="FILE", help="fleet YAML (see docs/fleet.md)")
    p.add_argument("--check", metavar="FILE", help="validate a fleet file, print a summary, exit")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--server", metavar="URL")
    where.add_argument("--kubeconfig", metavar="FILE")
    p.add_argument("--root-dir", type=Path, default=None, metavar="DIR",
                   help="the kubelets' root directory: per node DIR/<node>/plugins_registry, plugins/, cdi/ "
                        "(real DRA kubelet plugins register there; docs/fleet.md)")
    p.add_argument("--workers", type=int, default=DEFAULT_WORKERS)
    p.add_argument("--log-format", choices=("console", "json"), default="console")
    p.add_argument("--log-level", default="info")
    args = p.parse_args(argv)
    if args.check:
        try:
            print(_summary(load_fleet(args.check)))
        except FleetError as exc:
            print(exc, file=sys.stderr)
            return 1
        return 0
    if not (args.server or args.kubeconfig):
        p.error("--server or --kubeconfig is required (or --check FILE)")
    try:
        fleet = load_fleet(args.fleet) if args.fleet else None
    except FleetError as exc:
        print(exc, file=sys.stderr)
        return 1
    logs.configure(fmt=args.log_format, level=args.log_level)

    async def run() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        tuner: asyncio.Task[None] | None = None
        # The kubelets' writes go through the lean keep-alive pool (`controllers.runtime.http1`).
        client = (clients.Client(args.server, lean=True) if args.server
                  else clients.Client.from_kubeconfig(args.kubeconfig, lean=True))
        try:
            collector.tune(thresholds=collector.CONTROLLERS)  # the start-up heap (fleet plan, schemas)
            manager = managers.Manager(client=client, clock=clocks.RealClock(), name="cplane-fleet")
            controller = new(manager.context(), fleet=fleet, workers=args.workers, kubelet_root=args.root_dir)
            manager.add(controller)
            # Once every Node is registered the caches hold the fleet's Nodes and slices for good:
            # frozen, so the collector stops traversing them (as `cplane controllers` once synced).
            simulator = getattr(controller, "simulator", None)
            tuner = None if simulator is None else asyncio.create_task(
                collector.tune_when(simulator.registered, thresholds=collector.CONTROLLERS), name="fleet:tune-gc")
            await manager.run(stop)
        finally:
            if tuner is not None:
                tuner.cancel()
            await client.close()

    asyncio.run(run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
