"""`cplane clock show|advance|set`: the virtual clock of a server started with `--clock virtual` (each
move is an event in the log)."""

from __future__ import annotations

import argparse
import asyncio
import sys

from cp.cli import endpoint

CLOCK_PATH = "/apis/sim.cplane.dev/v1alpha1/clocks/cluster"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("clock", help="show or move the virtual clock of a server started with --clock virtual",
                       description="Show or move a virtual clock. Each move is an event in the log.")
    csub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    show = csub.add_parser("show", help="print the clock's mode and time")
    endpoint.add_args(show)
    adv = csub.add_parser("advance", help="move the clock forward by a duration (30s, 5m, 1h30m)")
    adv.add_argument("value", metavar="DURATION")
    endpoint.add_args(adv)
    st = csub.add_parser("set", help="move the clock forward to an RFC 3339 time")
    st.add_argument("value", metavar="TIME")
    endpoint.add_args(st)
    p.set_defaults(func=run)


async def _clock_async(args: argparse.Namespace) -> int:
    import json

    import aiohttp

    from cp import clock as clocks

    url, headers = endpoint.url_and_headers(args)
    tls = endpoint.tls(args)
    connector = aiohttp.TCPConnector(ssl=tls) if tls is not None else None
    async with aiohttp.ClientSession(base_url=url, headers=headers, connector=connector) as http:
        for _attempt in range(10):
            async with http.get(CLOCK_PATH) as r:
                if r.status == 404:
                    if args.action == "show":
                        print("mode: Real (wall time)")
                        return 0
                    print("cplane clock: the server runs on real time; start it with `cplane serve --clock "
                          "virtual` to move time by hand", file=sys.stderr)
                    return 1
                body = json.loads(await r.read())
                if r.status != 200:
                    print(f"cplane clock: {body.get('message', r.status)}", file=sys.stderr)
                    return 1
            now = clocks.parse_time(body["spec"]["time"])
            if args.action == "show":
                print(f"mode: Virtual\ntime: {body['spec']['time']}\nrevision: "
                      f"{body['metadata']['resourceVersion']}")
                return 0
            try:
                moved_to = now + clocks.parse_duration(args.value) if args.action == "advance" \
                    else clocks.parse_time(args.value)
            except ValueError as exc:
                print(f"cplane clock: {exc}", file=sys.stderr)
                return 2
            body["spec"]["time"] = clocks.rfc3339_micro(moved_to)
            async with http.put(CLOCK_PATH, json=body) as r:
                out = json.loads(await r.read())
                if r.status == 409:
                    continue
                if r.status != 200:
                    print(f"cplane clock: {out.get('message', r.status)}", file=sys.stderr)
                    return 1
            print(f"time: {out['spec']['time']}")
            return 0
    print("cplane clock: too many concurrent changes; try again", file=sys.stderr)
    return 1


def run(args: argparse.Namespace) -> int:
    try:
        return asyncio.run(_clock_async(args))
    except (OSError, ValueError) as exc:
        print(f"cplane clock: {exc}", file=sys.stderr)
        return 1
