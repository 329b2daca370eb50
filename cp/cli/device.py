"""`cplane device health set|list`: report and show the health of simulated DRA devices (DeviceHealth
objects; the health controller, `controllers/health.py`, acts on them). Only the standard library is
imported at module level, so that `cplane --help` stays fast."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from cp.cli import endpoint

if TYPE_CHECKING:
    from controllers.runtime import client as clients

HEALTH_VALUES = ("Healthy", "Unhealthy", "Unknown")


def _health_arg(text: str) -> str:
    value = text.strip().lower()
    for h in HEALTH_VALUES:
        if value == h.lower():
            return h
    raise argparse.ArgumentTypeError("must be healthy, unhealthy or unknown")


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
    s.set_defaults(func=_set)
    ls = hsub.add_parser("list", help="list device health reports and their effective health now")
    endpoint.add_args(ls)
    ls.set_defaults(func=_list)
    return h


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Register `cplane device health set|list` on the top-level `cplane` subparsers."""
    p = subparsers.add_parser("device", help="simulated DRA devices (health)",
                              description="Simulated DRA devices. What each container of a pod gets from its "
                                          "devices (CDI ids, env, mounts...): `cplane pod devices NAME`.")
    dsub = p.add_subparsers(dest="device_command", metavar="COMMAND", required=True)
    add_health_cli(dsub)
    return p


# -- the commands ------------------------------------------------------------------------------


def parse_device(text: str) -> tuple[str, str, str]:
    """`DRIVER/POOL/DEVICE`; the pool may itself contain `/`."""
    driver, sep, rest = text.partition("/")
    pool, sep2, device = rest.rpartition("/")
    if not sep or not sep2 or not driver or not pool or not device:
        raise ValueError(f"{text!r} is not DRIVER/POOL/DEVICE")
    return driver, pool, device


def _client(args: argparse.Namespace) -> clients.Client:
    from controllers.runtime import client as clients

    if args.server:
        return clients.Client(args.server)
    return clients.Client.from_kubeconfig(args.kubeconfig)


async def _set_async(args: argparse.Namespace) -> int:
    from controllers import health
    from cp import objects
    from cp import resources as res

    driver, pool, device = parse_device(args.device)
    async with _client(args) as client:
        obj = await health.set_health(client, driver, pool, device, args.health, args.message or "",
                                      timeout_seconds=args.timeout)
    spec = objects.spec_of(obj)
    print(f"devicehealth.{res.SIM_GROUP}/{objects.meta_of(obj).get('name')} {spec.get('health')}")
    return 0


async def _list_async(args: argparse.Namespace) -> int:
    from controllers import health
    from cp import objects

    async with _client(args) as client:
        items = (await client.list(health.DEVICE_HEALTHS)).items
        now = await health.server_now(client)
    rows = [("NAME", "DRIVER", "POOL", "DEVICE", "REPORTED", "EFFECTIVE", "MESSAGE")]
    for dh in sorted(items, key=lambda o: str(objects.meta_of(o).get("name"))):
        spec = objects.spec_of(dh)
        h = health.effective_health([dh], now)
        rows.append((str(objects.meta_of(dh).get("name")), *health.device_of(dh), str(spec.get("health") or ""),
                     h.state, h.message))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for r in rows:
        print("   ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + "   " + r[-1])
    return 0


def _run(command: Callable[[argparse.Namespace], Coroutine[Any, Any, int]], args: argparse.Namespace) -> int:
    from cp import errors

    try:
        return asyncio.run(command(args))
    except ValueError as exc:
        print(f"cplane device health: {exc}", file=sys.stderr)
        return 2
    except errors.StatusError as exc:
        print(f"cplane device health: {exc.message}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"cplane device health: {exc}", file=sys.stderr)
        return 1


def _set(args: argparse.Namespace) -> int:
    return _run(_set_async, args)


def _list(args: argparse.Namespace) -> int:
    return _run(_list_async, args)
