"""`python -m controllers --server URL [--only NAMES] [--leader-elect]`: run controllers as their own
process against a running API server (what `cplane controllers` will wrap)."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys

from controllers import registry
from cp import collector, logs


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
    p.add_argument("--log-format", choices=("console", "json"), default="console")
    p.add_argument("--log-level", default="info")
    args = p.parse_args(argv)
    try:
        names = registry.resolve_names(args.only.split(","))
    except ValueError as exc:
        p.error(str(exc))
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
                                           stop_event=stop, leader_election=args.leader_elect, ready=ready)
        finally:
            tuner.cancel()
            await asyncio.gather(tuner, return_exceptions=True)

    asyncio.run(run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
