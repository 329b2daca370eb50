"""`cplane device health set|list`: the argument parsers, kept free of heavy imports so that
`cplane --help` stays fast; the commands themselves live in `controllers.health`."""

from __future__ import annotations

import argparse
from typing import Any

from cp.cli import endpoint

HEALTH_VALUES = ("Healthy", "Unhealthy", "Unknown")


def _health_arg(text: str) -> str:
    value = text.strip().lower()
    for h in HEALTH_VALUES:
        if value == h.lower():
            return h
    raise argparse.ArgumentTypeError("must be healthy, unhealthy or unknown")


def _lazy(name: str) -> Any:
    def run(args: argparse.Namespace) -> int:
        from controllers import health

        return health._run(getattr(health, name))(args)

    return run


def add_health_cli(device_subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add `health {set,list}` under an existing `device` subcommand's subparsers."""
    h = device_subparsers.add_parser(
        "health", help="simulated device health (DeviceHealth objects)",
        description="Report and show the health of simulated DRA devices, as a driver's NodeHealth "
                    "stream would. Pods using a device see it in "
                    "status.containerStatuses[].allocatedResourcesStatus.")
    hsub = h.add_subparsers(dest="health_command", metavar="ACTION", required=True)
    s = hsub.add_parser("set", help="set a device's health: DRIVER/POOL/DEVICE healthy|unhealthy|unknown")
    s.add_argument("device", metavar="DRIVER/POOL/DEVICE")
    s.add_argument("health", type=_health_arg, metavar="HEALTH", help="healthy, unhealthy or unknown")
    s.add_argument("--message", "-m", default="", help="why (shown in pod and claim status)")
    s.add_argument("--timeout", type=int, default=None, metavar="SECONDS",
                   help="seconds without an update before the device counts as Unknown (default 30)")
    endpoint.add_args(s)
    s.set_defaults(func=_lazy("_set_async"))
    ls = hsub.add_parser("list", help="list device health reports and their effective health now")
    endpoint.add_args(ls)
    ls.set_defaults(func=_lazy("_list_async"))
    return h


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Register `cplane device health set|list` on the top-level `cplane` subparsers."""
    p = subparsers.add_parser("device", help="simulated DRA devices (health)",
                              description="Simulated DRA devices.")
    dsub = p.add_subparsers(dest="device_command", metavar="COMMAND", required=True)
    add_health_cli(dsub)
    return p
