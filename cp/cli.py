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
from typing import Any

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
                   help="serve plain HTTP without authentication (loopback addresses only); by default the "
                        "server speaks TLS (CA and certificate in DIR/pki) and requires credentials")
    p.add_argument("--token-auth-file", default=None, metavar="FILE",
                   help="more users: kube-apiserver's CSV token file, `token,user,uid[,\"group1,group2\"]`")
    p.add_argument("--no-controllers", action="store_true", help="serve the API only")
    p.add_argument("--fleet", type=Path, default=None, metavar="FILE",
                   help="YAML description of simulated nodes and their fake DRA drivers")
    p.add_argument("--clock", choices=("real", "virtual"), default="real",
                   help="real: wall time; virtual: time moves only with `cplane clock advance|set` "
                        "(stored as the sim.cplane.dev Clock object, so replays reproduce it)")
    p.add_argument("--taint-unhealthy", choices=("NoSchedule", "NoExecute"), default=None,
                   help="remediation: taint devices reported unhealthy (DeviceTaintRule), so their pods "
                        "are evicted (NoExecute) and rescheduled on healthy devices")
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
                              db_url=args.db, clock=the_clock, secure=not args.insecure,
                              token_auth_file=args.token_auth_file, insecure_limits=args.insecure) as srv:
        log.info("serving", url=srv.url, kubeconfig=str(srv.kubeconfig), revision=srv.event_log.revision)
        print(f"cplane: serving {srv.url}; export KUBECONFIG={srv.kubeconfig}", file=sys.stderr, flush=True)
        controllers_task: asyncio.Task[None] | None = None
        if not args.no_controllers:
            from controllers import registry

            overrides = _fleet_overrides(args)
            if args.taint_unhealthy:
                from controllers import health

                overrides[health.NAME] = health.factory(taint_unhealthy=args.taint_unhealthy)
            identities = _controller_identities(srv) if srv.auth is not None else None
            controllers_task = asyncio.create_task(
                registry.run_controllers(server_url=srv.url, clock=the_clock, stop_event=stop,
                                         overrides=overrides, identities=identities),
                name="controllers")
        await stop.wait()
        log.info("stopping")
        if controllers_task is not None:
            await controllers_task
    return 0


def _controller_identities(srv: Any) -> Any:
    """Clients for in-process components of a secure server, each with its own identity (issue #10)."""
    from api import auth
    from controllers.runtime import client as clients

    ca = srv.auth.credentials.ca_cert

    def identity(name: str) -> clients.Client:
        return clients.Client(srv.url, token=auth.controller_token(srv.auth, name),
                              ssl_context=auth.client_ssl_context(ca))

    return identity


def _serve(args: argparse.Namespace) -> int:
    from cp import logs

    if args.token_auth_file and args.insecure:
        print("cplane serve: --token-auth-file needs authentication (drop --insecure)", file=sys.stderr)
        return 2
    if args.token_auth_file:
        from api import auth

        try:
            auth.parse_token_file(Path(args.token_auth_file).read_text())
        except (OSError, ValueError) as exc:
            print(f"cplane serve: --token-auth-file: {exc}", file=sys.stderr)
            return 2
    if args.insecure and not _is_loopback(args.host):
        print(f"cplane serve: --insecure serves without authentication and only on loopback addresses; "
              f"{args.host!r} is not one", file=sys.stderr)
        return 2
    if args.fleet is not None:
        if args.no_controllers:
            print("cplane serve: --fleet needs the controllers (drop --no-controllers)", file=sys.stderr)
            return 2
        if not _load_fleet(args, command="serve"):
            return 2
    logs.configure(fmt=args.log_format, level=args.log_level)
    try:
        return asyncio.run(_serve_async(args))
    except OSError as exc:
        print(f"cplane serve: {exc}", file=sys.stderr)
        return 1


def _load_fleet(args: argparse.Namespace, *, command: str) -> bool:
    """Load `--fleet` into `args.loaded_fleet`; on a bad file print one error line and return False."""
    from controllers import fleet

    try:
        args.loaded_fleet = fleet.load_fleet(args.fleet)
    except (OSError, fleet.FleetError) as exc:
        print(f"cplane {command}: fleet {args.fleet}: {exc}", file=sys.stderr)
        return False
    return True


def _fleet_overrides(args: argparse.Namespace) -> dict[str, object]:
    """The fleet controller bound to the loaded `--fleet`, as a `run_controllers` override."""
    if getattr(args, "fleet", None) is None:
        return {}
    from controllers import fleet

    return {fleet.NAME: fleet.factory(args.loaded_fleet)}


async def _controllers_async(args: argparse.Namespace) -> int:
    from controllers import registry

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    names = [n for n in (args.only or "").split(",") if n] or None
    kwargs: dict[str, object] = {"server_url": args.server} if args.server else {"kubeconfig": args.kubeconfig}
    await registry.run_controllers(**kwargs, names=names, stop_event=stop,  # type: ignore[arg-type]
                                   leader_election=args.leader_elect, overrides=_fleet_overrides(args))
    return 0


def _controllers(args: argparse.Namespace) -> int:
    from cp import logs

    if args.fleet is not None:
        from controllers import fleet, registry

        try:
            selected = registry.resolve_names([n for n in (args.only or "").split(",") if n] or None)
        except ValueError as exc:
            print(f"cplane controllers: {exc}", file=sys.stderr)
            return 2
        if fleet.NAME not in selected:
            print("cplane controllers: --fleet needs the fleet controller (add it to --only)", file=sys.stderr)
            return 2
        if not _load_fleet(args, command="controllers"):
            return 2
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
    p = sub.add_parser("controllers", help="run controllers as their own process against a server",
                       description="Run controllers against an API server, over HTTP only. Names as in "
                                   "docs/controllers.md; an unknown name lists the known ones.")
    _target_args(p)
    p.add_argument("--only", default=None, metavar="NAMES",
                   help="comma-separated controller names (default all; -name excludes one)")
    p.add_argument("--leader-elect", action="store_true",
                   help="take part in leader election through the Lease kube-system/cplane-controller-manager")
    p.add_argument("--fleet", type=Path, default=None, metavar="FILE",
                   help="YAML description of simulated nodes and their fake DRA drivers (run by the fleet "
                        "controller, as with `cplane serve --fleet`)")
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


def _tls(args: argparse.Namespace) -> Any:
    """The TLS settings of the kubeconfig's cluster (CA data, client certificate), None for http."""
    if args.server:
        return None
    from controllers.runtime import client as clients
    from cp import kubeconfig

    return clients._ssl_context(kubeconfig.load(args.kubeconfig))


CLOCK_PATH = "/apis/sim.cplane.dev/v1alpha1/clocks/cluster"


async def _clock_async(args: argparse.Namespace) -> int:
    import json

    import aiohttp

    from cp import clock as clocks

    url, headers = _endpoint(args)
    tls = _tls(args)
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
        progress = _progress("exporting", total=(args.until or event_log.revision) - args.since)
        try:
            count = await ndjson.export_events(event_log, out=_progress_writer(out, progress), start=args.since,
                                               end=args.until)
        finally:
            progress.close()
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
        progress = _progress("importing", total=_file_size(src), unit="bytes")
        try:
            count = await ndjson.import_events(event_log, lines=_progress_lines(src, progress))
        except log.ImportRejectedError as exc:
            progress.close()
            where = f"line {exc.line}: " if exc.line else ""
            print(f"cplane log import: {where}{exc}", file=sys.stderr)
            return 1
        finally:
            progress.close()
            if src is not sys.stdin.buffer:
                src.close()
    finally:
        await event_log.close()
    print(f"imported {count} events", file=sys.stderr)
    return 0


def _log(args: argparse.Namespace) -> int:
    from cp import logs

    logs.configure(level="warning")  # log lines go to stderr, never into exported NDJSON on stdout
    handlers = {"export": _log_export, "import": _log_import}
    try:
        return asyncio.run(handlers[args.log_command](args))
    except OSError as exc:
        print(f"cplane log {args.log_command}: {exc}", file=sys.stderr)
        return 1


def _log_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("log", help="read and move the event log (export, import, show, history, diff, events)",
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
    _log_view_parsers(lsub)
    p.set_defaults(func=_log)


# -- progress bars for `log export|import` (stderr, terminals only; rendering in cp/logview.py) --------


def _progress(label: str, *, total: int | None, unit: str = "events") -> Any:
    from cp import logview

    return logview.Progress(sys.stderr, label=label, total=total, unit=unit,
                            min_total=10_000 if unit == "events" else 10 << 20)


def _progress_writer(out: Any, progress: Any) -> Any:
    from cp import logview

    return logview.ProgressWriter(out, progress) if progress.enabled else out


def _progress_lines(src: Any, progress: Any) -> Any:
    from cp import logview

    return logview.progress_lines(src, progress) if progress.enabled else src


def _file_size(f: Any) -> int | None:
    import os
    import stat

    try:
        st = os.fstat(f.fileno())
    except (OSError, ValueError):
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) else None


# -- `cplane log show|history|diff|events` (implemented in api/replay.py; docs/replay.md) ---------------


def _source_args(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--data-dir", type=Path, help="a cplane data directory (its cplane.db)")
    g.add_argument("--db", metavar="URL", help="an event-log database URL")
    g.add_argument("-f", "--file", metavar="PATH", help="an NDJSON export (`cplane log export`; - for stdin) "
                                                         "or an SQLite event-log file")


def _log_view(args: argparse.Namespace) -> int:
    from api import replay
    from cp import logs

    logs.configure(level="warning")
    return replay.run_log_command(args)


def _log_view_parsers(lsub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    show = lsub.add_parser("show", help="the cluster's objects as they were at a revision (like kubectl get)",
                           description="Print the state of the cluster at revision REV (default: the newest) "
                                       "or at a time, like `kubectl get`. All namespaces unless -n.")
    _source_args(show)
    show.add_argument("resource", nargs="?", metavar="RESOURCE",
                      help="pods, deployments.apps, rc... (default: every kind)")
    show.add_argument("--at", type=int, metavar="REV", help="the revision (default: the newest)")
    show.add_argument("--at-time", metavar="TIME", help="the state at an RFC 3339 time (its last revision)")
    show.add_argument("-n", "--namespace", help="one namespace only")
    show.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace (the default)")
    show.add_argument("-o", "--output", choices=("table", "wide", "yaml", "json", "name"), default="table")
    show.set_defaults(func=_log_view)

    hist = lsub.add_parser("history", help="every version of one object, with who changed what",
                           description="Every version of one object: revision, time, type, actor (user, "
                                       "field manager, user agent) and the field-level diff from the version "
                                       "before. metadata.resourceVersion/managedFields are left out unless "
                                       "--all-fields.")
    _source_args(hist)
    hist.add_argument("object", metavar="RESOURCE/NAME", help="e.g. pods/web (with -n) or pods/default/web")
    hist.add_argument("-n", "--namespace", help="the object's namespace (default: default)")
    hist.add_argument("--all-fields", action="store_true", help="diff resourceVersion and managedFields too")
    hist.add_argument("-o", "--output", choices=("text", "ndjson"), default="text")
    hist.set_defaults(func=_log_view)

    diff = lsub.add_parser("diff", help="objects added, removed and changed between two revisions",
                           description="Objects added, removed and changed from REV1 to REV2, with field-level "
                                       "diffs. With --against OTHER_SOURCE: from OTHER (e.g. the original "
                                       "recording) to this source (e.g. a fork's branch), each at its newest "
                                       "revision (or at REV, or at --at-time in both), and the fork point.")
    _source_args(diff)
    diff.add_argument("items", nargs="*", metavar="REV1 REV2 [RESOURCE]",
                      help="two revisions (one or none with --against), then optionally a resource")
    diff.add_argument("--against", metavar="OTHER_SOURCE", help="compare with another log (data dir, URL, file)")
    diff.add_argument("--at-time", metavar="TIME", help="with --against: each source at this RFC 3339 time")
    diff.add_argument("-n", "--namespace", help="one namespace only")
    diff.add_argument("--all-fields", action="store_true", help="diff resourceVersion and managedFields too")
    diff.add_argument("--brief", action="store_true", help="object names only, no field diffs")
    diff.add_argument("-o", "--output", choices=("text", "json"), default="text")
    diff.set_defaults(func=_log_view)

    ev = lsub.add_parser("events", help="the raw event stream, filtered, as a table or NDJSON",
                         description="The events of the log in revision order. --since/--until take a "
                                     "revision (since: exclusive) or an RFC 3339 time. --actor matches the "
                                     "user, field manager or user agent (substring).")
    _source_args(ev)
    ev.add_argument("--resource", metavar="R", help="one resource (pods, deployments.apps...)")
    ev.add_argument("-n", "--namespace", help="one namespace")
    ev.add_argument("--name", help="one object name")
    ev.add_argument("--actor", metavar="A", help="user, field manager or user agent containing A")
    ev.add_argument("--type", choices=("ADDED", "MODIFIED", "DELETED"))
    ev.add_argument("--since", metavar="REV|TIME", help="events after revision REV, or at/after TIME")
    ev.add_argument("--until", metavar="REV|TIME", help="events up to revision REV, or up to TIME")
    ev.add_argument("--limit", type=int, metavar="N", help="stop after N events")
    ev.add_argument("--follow", action="store_true", help="keep printing new events (data dir or database)")
    ev.add_argument("-o", "--output", choices=("table", "ndjson"), default="table")
    ev.set_defaults(func=_log_view)


# -- `cplane replay` (implemented in api/replay.py; docs/replay.md) -------------------------------------


def _replay(args: argparse.Namespace) -> int:
    from api import replay
    from cp import logs

    logs.configure(fmt=args.log_format, level=args.log_level)
    return replay.run_replay_command(args)


def _replay_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "replay", help="serve a recorded event log as a Kubernetes API that replays it; control a replay",
        usage="cplane replay SOURCE [--port PORT] [--from REV] [--until REV] [--speed X | --step] [--fork]\n"
              "       cplane replay {status,step [N],until REV|--object R/NS/NAME|--time T,play [--speed X],"
              "pause,fork,save [-o FILE]} [--server URL | --kubeconfig FILE]",
        description="Serve SOURCE (a data dir, a database URL or an NDJSON export) as a Kubernetes API whose "
                    "state starts at --from and advances through the recorded events, at recorded pace "
                    "scaled by --speed, or by `cplane replay step|until` against the running replay. Writes "
                    "are refused (405) unless --fork. See docs/replay.md.")
    p.add_argument("source", metavar="SOURCE|ACTION")
    p.add_argument("operands", nargs="*", metavar="ARG", help="step: N; until: REV")
    serve = p.add_argument_group("serving a recording")
    serve.add_argument("--port", type=int, default=0, help="TCP port (default: a free one, printed)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--from", dest="start", type=int, metavar="REV", help="the first state served")
    serve.add_argument("--until", type=int, metavar="REV", help="stop replaying at this revision")
    pace = serve.add_mutually_exclusive_group()
    pace.add_argument("--speed", metavar="X",
                      help="play at X times the recorded pace (default 1; max: as fast as possible); with "
                           "`replay play`: the new speed")
    pace.add_argument("--step", action="store_true", help="start paused; advance with replay step|until|play")
    serve.add_argument("--max-gap", metavar="DURATION", help="cap recorded idle gaps at DURATION (e.g. 2s)")
    serve.add_argument("--fork", action="store_true",
                       help="accept writes: the first write (or `replay fork`) branches a live cluster at the "
                            "current revision")
    serve.add_argument("--fork-at", type=int, metavar="REV", help="replay up to REV, then fork there")
    serve.add_argument("--controllers", metavar="NAMES",
                       help="run these controllers in-process once forked (comma-separated; * = all)")
    serve.add_argument("--log-format", choices=("console", "json"), default="console")
    serve.add_argument("--log-level", default="warning")
    control = p.add_argument_group("controlling a running replay")
    control.add_argument("--server", metavar="URL", help="the replay server (overrides the kubeconfig)")
    control.add_argument("--kubeconfig", metavar="FILE",
                         help="serving: also write a kubeconfig here; controlling: read the server from it "
                              "(default $KUBECONFIG)")
    control.add_argument("--object", metavar="R/NS/NAME", help="until: the next event of this object")
    control.add_argument("--time", metavar="TIME", help="until: the last event at or before this RFC 3339 time")
    control.add_argument("-o", "--output", metavar="FORMAT|FILE",
                         help="status/step/until/play/pause/fork: text or json; save: the NDJSON file "
                              "(default stdout)")
    p.set_defaults(func=_replay)


def _kubeconfig_create(args: argparse.Namespace) -> int:
    """`cplane kubeconfig create USER --group G`: a client certificate signed by the server's CA."""
    import base64
    import time

    from api import server
    from cp import certs
    from cp import kubeconfig as kubeconfigs

    pki = Path(args.data_dir) / "pki"
    try:
        ca_cert, ca_key = (pki / "ca.crt").read_bytes(), (pki / "ca.key").read_bytes()
    except OSError:
        print(f"cplane kubeconfig create: no CA in {pki}; start `cplane serve --data-dir {args.data_dir}` "
              "(without --insecure) once first", file=sys.stderr)
        return 1
    url = args.server
    if not url:
        try:
            url = kubeconfigs.load(Path(args.data_dir) / "kubeconfig").server
        except (OSError, ValueError):
            url = ""
    if not url or not url.startswith("https://"):
        print("cplane kubeconfig create: no https server URL; pass --server https://HOST:PORT", file=sys.stderr)
        return 1
    cert, key = certs.new_client_cert(ca_cert, ca_key, user=args.user, groups=args.group or [], now=time.time(),
                                      days=args.days)
    text = server.kubeconfig_text(server=url, ca_data=base64.b64encode(ca_cert).decode(),
                                  client_cert_data=base64.b64encode(cert).decode(),
                                  client_key_data=base64.b64encode(key).decode(), user_name=args.user)
    if args.output in (None, "-"):
        sys.stdout.write(text)
    else:
        import os

        out = Path(args.output)
        fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(out, 0o600)
        print(f"wrote {out} for user {args.user!r}" + (f" in groups {', '.join(args.group)}" if args.group else ""),
              file=sys.stderr)
    return 0


def _kubeconfig_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("kubeconfig", help="write kubeconfigs for new identities (client certificates)",
                       description="Credentials for a secure `cplane serve` (docs/security.md).")
    ksub = p.add_subparsers(dest="kubeconfig_command", metavar="ACTION", required=True)
    c = ksub.add_parser("create", help="a kubeconfig with a client certificate for USER, signed by the CA",
                        description="Write a kubeconfig whose client certificate names USER (CN) and its "
                                    "groups (O). What USER may do is up to RBAC: bind roles to it.")
    c.add_argument("user", metavar="USER")
    c.add_argument("--group", action="append", default=[], metavar="G", help="a group (repeatable)")
    c.add_argument("--data-dir", type=Path, required=True, help="the server's data directory (its pki/)")
    c.add_argument("--server", default=None, metavar="URL", help="server URL (default: DIR/kubeconfig's)")
    c.add_argument("--days", type=float, default=365, help="validity in days (default 365)")
    c.add_argument("-o", "--output", default=None, metavar="FILE", help="file to write (mode 0600; default stdout)")
    c.set_defaults(func=_kubeconfig_create)


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
    _replay_parser(sub)
    _kubeconfig_parser(sub)
    from controllers import hpa_cli  # `cplane metrics` (issue #7); stdlib-only import
    hpa_cli.add_parser(sub)
    from controllers import health_cli  # `cplane device health set|list` (issue #6)

    health_cli.add_cli(sub)
    from controllers import why  # `cplane why pod/NAME` (issue #12); stdlib-only import
    why.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    from cp import logs  # noqa: F401  (first: structlog then loads without `rich`, whoever imports it)

    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
