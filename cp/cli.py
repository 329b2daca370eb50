"""The `cplane` command.

Subcommands import their layers lazily so that `cplane --help` and start-up stay fast.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import signal
import sys
from pathlib import Path

LOOPBACK_NAMES = ("localhost",)


def _is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _serve_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "serve", help="serve the Kubernetes API (and controllers) over an event log",
        description="Serve the Kubernetes API over an event log in DIR, write DIR/kubeconfig, and answer "
                    "GET /readyz 200 once ready.")
    p.add_argument("--data-dir", type=Path, required=True, help="directory for the SQLite store and kubeconfig")
    p.add_argument("--port", type=int, default=6443, help="TCP port (0 picks a free one; default 6443)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--db", default=None, metavar="URL",
                   help="event-log database URL: sqlite+aiosqlite:///PATH (default DIR/cplane.db) or "
                        "postgresql+asyncpg://USER@HOST:PORT/DB")
    p.add_argument("--insecure", action="store_true",
                   help="serve plain HTTP without authentication (loopback addresses only)")
    p.add_argument("--no-controllers", action="store_true", help="serve the API only")
    p.add_argument("--fleet", type=Path, default=None, metavar="FILE",
                   help="YAML description of simulated nodes and their fake DRA drivers")
    p.add_argument("--clock", choices=("real", "virtual"), default="real",
                   help="real: wall time; virtual: time moves only with `cplane clock advance|set` "
                        "(stored as the sim.cplane.dev Clock object, so replays reproduce it)")
    p.add_argument("--log-format", choices=("console", "json"), default="console")
    p.add_argument("--log-level", default="info")
    p.set_defaults(func=_serve)


async def _serve_async(args: argparse.Namespace) -> int:
    import structlog

    from api import server

    log = structlog.get_logger("cplane")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    from cp import clock as clocks

    the_clock: clocks.Clock = clocks.VirtualClock() if args.clock == "virtual" else clocks.RealClock()
    async with server.running(data_dir=args.data_dir, host=args.host, port=args.port,
                              db_url=args.db, clock=the_clock) as srv:
        log.info("serving", url=srv.url, kubeconfig=str(srv.kubeconfig), revision=srv.event_log.revision)
        print(f"cplane: serving {srv.url}; export KUBECONFIG={srv.kubeconfig}", file=sys.stderr, flush=True)
        controllers_task: asyncio.Task[None] | None = None
        if not args.no_controllers:
            from controllers import registry

            controllers_task = asyncio.create_task(
                registry.run_controllers(server_url=srv.url, clock=the_clock, stop_event=stop),
                name="controllers")
        await stop.wait()
        log.info("stopping")
        if controllers_task is not None:
            await controllers_task
    return 0


def _serve(args: argparse.Namespace) -> int:
    from cp import logs

    if not args.insecure:
        print("cplane serve: TLS and authentication are not available yet; run with --insecure "
              "(plain HTTP on a loopback address)", file=sys.stderr)
        return 2
    if not _is_loopback(args.host):
        print(f"cplane serve: --insecure serves without authentication and only on loopback addresses; "
              f"{args.host!r} is not one", file=sys.stderr)
        return 2
    if args.fleet is not None and not args.fleet.is_file():
        print(f"cplane serve: fleet file {args.fleet} not found", file=sys.stderr)
        return 2
    logs.configure(fmt=args.log_format, level=args.log_level)
    try:
        return asyncio.run(_serve_async(args))
    except OSError as exc:
        print(f"cplane serve: {exc}", file=sys.stderr)
        return 1


async def _controllers_async(args: argparse.Namespace) -> int:
    from controllers import registry

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    names = [n for n in (args.only or "").split(",") if n] or None
    kwargs: dict[str, object] = {"server_url": args.server} if args.server else {"kubeconfig": args.kubeconfig}
    await registry.run_controllers(**kwargs, names=names, stop_event=stop,  # type: ignore[arg-type]
                                   leader_election=args.leader_elect)
    return 0


def _controllers(args: argparse.Namespace) -> int:
    from cp import logs

    logs.configure(fmt=args.log_format, level=args.log_level)
    if not args.server and not args.kubeconfig:
        import os

        args.kubeconfig = os.environ.get("KUBECONFIG") or str(Path.home() / ".kube" / "config")
    try:
        return asyncio.run(_controllers_async(args))
    except ValueError as exc:
        print(f"cplane controllers: {exc}", file=sys.stderr)
        return 2


def _controllers_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from controllers import registry

    p = sub.add_parser("controllers", help="run controllers as their own process against a server",
                       description="Run controllers against an API server, over HTTP only. Known: "
                                   + ", ".join(sorted(registry.CONTROLLERS)))
    _target_args(p)
    p.add_argument("--only", default=None, metavar="NAMES",
                   help="comma-separated controller names (default all; -name excludes one)")
    p.add_argument("--leader-elect", action="store_true",
                   help="take part in leader election through the Lease kube-system/cplane-controller-manager")
    p.add_argument("--log-format", choices=("console", "json"), default="console")
    p.add_argument("--log-level", default="info")
    p.set_defaults(func=_controllers)


def _target_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--kubeconfig", default=None, help="kubeconfig to read the server from (default $KUBECONFIG)")
    p.add_argument("--server", default=None, metavar="URL", help="server URL (overrides the kubeconfig)")


def _endpoint(args: argparse.Namespace) -> tuple[str, dict[str, str]]:
    from cp import kubeconfig

    if args.server:
        return args.server.rstrip("/"), {}
    ep = kubeconfig.load(args.kubeconfig)
    headers = {"Authorization": f"Bearer {ep.token}"} if ep.token else {}
    return ep.server, headers


CLOCK_PATH = "/apis/sim.cplane.dev/v1alpha1/clocks/cluster"


async def _clock_async(args: argparse.Namespace) -> int:
    import json

    import aiohttp

    from cp import clock as clocks

    url, headers = _endpoint(args)
    async with aiohttp.ClientSession(base_url=url, headers=headers) as http:
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
                target = now + clocks.parse_duration(args.value) if args.action == "advance" \
                    else clocks.parse_time(args.value)
            except ValueError as exc:
                print(f"cplane clock: {exc}", file=sys.stderr)
                return 2
            body["spec"]["time"] = clocks.rfc3339_micro(target)
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


def _clock(args: argparse.Namespace) -> int:
    try:
        return asyncio.run(_clock_async(args))
    except (OSError, ValueError) as exc:
        print(f"cplane clock: {exc}", file=sys.stderr)
        return 1


def _clock_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("clock", help="show or move the virtual clock of a server started with --clock virtual",
                       description="Show or move a virtual clock. Each move is an event in the log.")
    csub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    show = csub.add_parser("show", help="print the clock's mode and time")
    _target_args(show)
    adv = csub.add_parser("advance", help="move the clock forward by a duration (30s, 5m, 1h30m)")
    adv.add_argument("value", metavar="DURATION")
    _target_args(adv)
    st = csub.add_parser("set", help="move the clock forward to an RFC 3339 time")
    st.add_argument("value", metavar="TIME")
    _target_args(st)
    p.set_defaults(func=_clock)


def _store_args(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--data-dir", type=Path, help="a cplane data directory (its cplane.db)")
    g.add_argument("--db", metavar="URL", help="an event-log database URL")


def _store_url(args: argparse.Namespace) -> str:
    if args.db:
        return str(args.db)
    db = Path(args.data_dir) / "cplane.db"
    return f"sqlite+aiosqlite:///{db.resolve()}"


async def _log_export(args: argparse.Namespace) -> int:
    from storage import factory, ndjson

    if args.data_dir and not (Path(args.data_dir) / "cplane.db").exists():
        print(f"cplane log export: no event log in {args.data_dir}", file=sys.stderr)
        return 1
    event_log = factory.open_event_log(url=_store_url(args))
    await event_log.start()
    try:
        out = sys.stdout.buffer if args.output in (None, "-") else open(args.output, "wb")  # noqa: SIM115
        try:
            count = await ndjson.export_events(event_log, out=out, start=args.since, end=args.until)
        finally:
            if out is not sys.stdout.buffer:
                out.close()
    finally:
        await event_log.close()
    print(f"exported {count} events", file=sys.stderr)
    return 0


async def _log_import(args: argparse.Namespace) -> int:
    from storage import factory, log, ndjson

    event_log = factory.open_event_log(url=_store_url(args))
    await event_log.start()
    try:
        src = sys.stdin.buffer if args.input == "-" else open(args.input, "rb")  # noqa: SIM115
        try:
            count = await ndjson.import_events(event_log, lines=src)
        except log.ImportError_ as exc:
            where = f"line {exc.line}: " if exc.line else ""
            print(f"cplane log import: {where}{exc}", file=sys.stderr)
            return 1
        finally:
            if src is not sys.stdin.buffer:
                src.close()
    finally:
        await event_log.close()
    print(f"imported {count} events", file=sys.stderr)
    return 0


def _log(args: argparse.Namespace) -> int:
    handlers = {"export": _log_export, "import": _log_import}
    try:
        return asyncio.run(handlers[args.log_command](args))
    except OSError as exc:
        print(f"cplane log {args.log_command}: {exc}", file=sys.stderr)
        return 1


def _log_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("log", help="read and move the event log (export, import)",
                       description="The event log: every write the server ever made, in revision order. "
                                   "The NDJSON format is documented in docs/event-log.md.")
    lsub = p.add_subparsers(dest="log_command", metavar="ACTION", required=True)
    exp = lsub.add_parser("export", help="write events as NDJSON (one event per line)")
    _store_args(exp)
    exp.add_argument("-o", "--output", default="-", help="file to write (default stdout)")
    exp.add_argument("--since", type=int, default=0, metavar="REV", help="first revision to export is REV+1")
    exp.add_argument("--until", type=int, default=None, metavar="REV", help="last revision to export")
    imp = lsub.add_parser("import", help="load NDJSON events into an EMPTY store, keeping their revisions")
    _store_args(imp)
    imp.add_argument("input", nargs="?", default="-", help="NDJSON file (default stdin)")
    p.set_defaults(func=_log)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cplane",
        description="cplane: an event-sourced replica of the Kubernetes control plane, for Dynamic "
                    "Resource Allocation. Every write is an event in a SQL log; kubectl and client "
                    "libraries talk to it as to a real cluster.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    _serve_parser(sub)
    _clock_parser(sub)
    _log_parser(sub)
    _controllers_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
