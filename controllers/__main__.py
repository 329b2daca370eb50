"""`python -m controllers --server URL [--only NAMES] [--leader-elect]`: run controllers as their own
process against a running API server (what `cplane controllers` will wrap)."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from pathlib import Path

from controllers import registry, scheduler
from cp import collector, logs
from cp.scheduling import profiles


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m controllers", description=__doc__)
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--server", metavar="URL", help="API server base URL, e.g. http://127.0.0.1:6443")
    where.add_argument("--kubeconfig", metavar="FILE", help="kubeconfig naming the server")
    p.add_argument("--only", default="*", metavar="NAMES",
                   help=f"comma-separated controllers, `*` for all, `-name` to drop one "
                        f"(known: {', '.join(registry.CONTROLLERS)})")
    p.add_argument("--leader-elect", action="store_true",
                   help="run only while holding the Lease kube-system/cplane-controller-manager")
    p.add_argument("--scheduler-config", type=Path, default=None, metavar="FILE",
                   help="KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) for the scheduler")
    p.add_argument("--scheduler-seed", type=int, default=None, metavar="N",
                   help="seed the scheduler's choice among equally scored nodes")
    p.add_argument("--log-format", choices=("console", "json"), default="console")
    p.add_argument("--log-level", default="info")
    args = p.parse_args(argv)
    try:
        names = registry.resolve_names(args.only.split(","))
    except ValueError as exc:
        p.error(str(exc))
    overrides: dict[str, registry.ControllerFactory] = {}
    config = None
    if args.scheduler_config is not None:
        try:
            config = profiles.load_config(args.scheduler_config.read_text(), source=str(args.scheduler_config))
            profiles.build_profiles(config)
        except OSError as exc:
            p.error(f"--scheduler-config {args.scheduler_config}: cannot read: {exc.strerror or exc}")
        except profiles.ConfigError as exc:
            p.error(f"--scheduler-config: {' '.join(str(exc).split())}")
    if config is not None or args.scheduler_seed is not None:
        overrides[scheduler.NAME] = scheduler.factory(config=config, seed=args.scheduler_seed)
    logs.configure(fmt=args.log_format, level=args.log_level)

    async def run() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        ready = asyncio.Event()
        tuner = loop.create_task(collector.tune_when(ready, thresholds=collector.CONTROLLERS),
                                 name="controllers:tune-gc")
        try:
            await registry.run_controllers(server_url=args.server, kubeconfig=args.kubeconfig, names=names,
                                           stop_event=stop, leader_election=args.leader_elect, ready=ready,
                                           overrides=overrides)
        finally:
            tuner.cancel()
            await asyncio.gather(tuner, return_exceptions=True)

    asyncio.run(run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
