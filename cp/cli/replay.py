"""`cplane replay SOURCE`: serve a recorded event log as a Kubernetes API that replays it, and
`cplane replay status|step|until|play|pause|fork|save` to control a running replay (docs/replay.md)."""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Any

NEWLINE = b"\n"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "replay", help="serve a recorded event log as a Kubernetes API that replays it; control a replay",
        usage="cplane replay SOURCE [--port PORT] [--from REV] [--until REV] [--speed X | --step] [--fork]\n"
              "                     [--fork-at REV] [--controllers NAMES [--fleet FILE]]\n"
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
    serve.add_argument("--fleet", type=Path, default=None, metavar="FILE",
                       help="the fleet file of the `fleet` controller (with --controllers): its node pools, "
                            "kubelet settings and whether it adopts the recorded Nodes (docs/fleet.md)")
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
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from cp import logs

    logs.configure(fmt=args.log_format, level=args.log_level)
    return run_replay_command(args)


def _out(text: str) -> None:
    sys.stdout.write(text)


def _note(text: str) -> None:
    print(text, file=sys.stderr)


REPLAY_ACTIONS = ("status", "step", "until", "play", "pause", "fork", "save")


async def _serve_replay(args: argparse.Namespace) -> int:
    from api import replay
    from cp import clock as clocks
    from storage import recording

    speed = None if args.step else replay.parse_speed(args.speed) if args.speed else 1.0
    max_gap = clocks.parse_duration(args.max_gap) if args.max_gap else None
    names = [n for n in (args.controllers or "").split(",") if n]
    overrides: dict[str, Any] = {}
    if names:
        from controllers import registry

        selected = registry.resolve_names(names)  # an unknown name fails now, not at the fork
        if args.fleet is not None:
            from controllers import fleet
            from cp.cli import controllers as controller_commands

            if fleet.NAME not in selected:
                raise ValueError("--fleet needs the fleet controller (add it to --controllers)")
            if not controller_commands.load_fleet(args, command="replay"):
                return 1
            overrides = controller_commands.fleet_overrides(args)
    elif args.fleet is not None:
        raise ValueError("--fleet needs --controllers with the fleet controller")
    source = await recording.open_source(args.source)  # a SQL log is streamed, an NDJSON export loaded
    try:
        return await _serve_source(args, source, speed=speed, max_gap=max_gap, names=names, overrides=overrides)
    finally:
        await source.close()


async def _serve_source(args: argparse.Namespace, source: Any, *, speed: float | None, max_gap: float | None,
                        names: list[str], overrides: dict[str, Any]) -> int:
    import signal

    from api import replay
    from cp import collector
    from storage import recording

    if not source.first:
        raise recording.SourceError(f"{source.description}: no events to replay")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    with tempfile.TemporaryDirectory(prefix="cplane-replay-") as tmp:
        async with replay.serving(source, data_dir=Path(tmp), host=args.host, port=args.port, start=args.start,
                                  until=args.until, speed=speed, fork=args.fork, fork_at=args.fork_at,
                                  max_gap=max_gap) as srv:
            collector.tune(thresholds=collector.SERVER)
            kubeconfig = srv.kubeconfig
            if args.kubeconfig:
                from api import server as servers

                kubeconfig = Path(args.kubeconfig)
                servers.write_kubeconfig(kubeconfig, server=srv.url)
            controllers: list[asyncio.Task[None]] = []
            if names:
                def start_controllers(revision: int) -> None:
                    from controllers import registry

                    _note(f"cplane replay: forked at revision {revision}; starting controllers")
                    controllers.append(asyncio.ensure_future(registry.run_controllers(
                        server_url=srv.url, names=names, clock=srv.clock, stop_event=stop, overrides=overrides)))

                srv.replayer.on_fork.append(start_controllers)
                if srv.log.forked:
                    start_controllers(srv.log.forked_at or 0)
            rec = source
            size = f", {len(rec):,} events" if isinstance(rec, recording.Recording) else ""
            _note(f"cplane replay: serving {rec.description} (revisions {rec.first}..{rec.last}{size}) "
                  f"at {srv.url} from revision {srv.log.revision}, {srv.replayer.mode}"
                  + (f" at speed {args.speed}" if srv.replayer.playing else "")
                  + f"; export KUBECONFIG={kubeconfig}")
            from api import ui

            _note(f"cplane replay: UI: {ui.address(srv.url, secure=False)}")
            await stop.wait()
            for task in controllers:
                await task
    return 0


async def _control(args: argparse.Namespace) -> int:
    import aiohttp
    import msgspec

    from api import replay
    from cp import kubeconfig as kubeconfigs
    from cp.cli import render
    from storage import recording

    if args.server:
        url, headers = args.server.rstrip("/"), {}
    else:
        import os

        path = args.kubeconfig or os.environ.get("KUBECONFIG") or str(Path.home() / ".kube" / "config")
        try:
            ep = kubeconfigs.load(path)
        except (OSError, ValueError, KeyError) as exc:
            raise recording.SourceError(f"cannot read the kubeconfig {path}: {exc}; use --server URL") from None
        url = ep.server
        headers = {"Authorization": f"Bearer {ep.token}"} if ep.token else {}
    action = args.source
    operands = args.operands
    params: dict[str, str] = {}
    method, path = "POST", f"{replay.CONTROL}/{action}"
    if action == "status":
        method, path = "GET", replay.CONTROL
    elif action == "step":
        if len(operands) > 1:
            raise recording.SourceError("step takes one count at most: cplane replay step [N]")
        params["count"] = operands[0] if operands else "1"
    elif action == "until":
        given = [v for v in (args.object, args.time) if v] + list(operands)
        if len(given) != 1:
            raise recording.SourceError("until takes one of REV, --object RESOURCE/NAMESPACE/NAME or --time TIME")
        if operands:
            params["revision"] = operands[0]
        elif args.object:
            params["object"] = args.object
        else:
            params["time"] = args.time
    elif action == "play":
        if args.speed:
            params["speed"] = args.speed
    elif action == "save":
        method, path = "GET", f"{replay.CONTROL}/events"
    async with aiohttp.ClientSession(base_url=url, headers=headers) as http:
        try:
            async with http.request(method, path, params=params) as r:
                body = await r.read()
                if r.status != 200:
                    try:
                        message = msgspec.json.decode(body).get("message", r.status)
                    except Exception:
                        message = f"HTTP {r.status}"
                    if r.status == 404 and action == "status":
                        message = f"{url} is not a replay server"
                    raise recording.SourceError(str(message))
        except aiohttp.ClientError as exc:
            raise recording.SourceError(f"cannot reach {url}: {exc}") from None
    if action == "save":
        target = args.output or "-"
        if target == "-":
            sys.stdout.buffer.write(body)
        else:
            Path(target).write_bytes(body)  # noqa: ASYNC240 (a one-shot command; nothing else runs)
            _note(f"saved {body.count(NEWLINE):,} events to {target}")
        return 0
    status = msgspec.json.decode(body)
    if args.output == "json":
        _out(render.json_text(status))
        return 0
    _out(status_text(status))
    return 0


def status_text(status: dict[str, Any]) -> str:
    lines = []
    for ev in status.get("events") or []:
        lines.append(f"  {ev['revision']}  {ev['time']}  {ev['type']:<8}  {ev['object']}  by {ev['actor']}")
    applied = status.get("applied")
    if applied is not None and applied > len(status.get("events") or []):
        lines.insert(0, f"  ... {applied - len(status['events']):,} earlier events")
    if status.get("forkedAt") is not None:
        mode = f"forked at {status['forkedAt']}: a live cluster"
    else:
        mode = status["mode"] + (f" at speed {status['speed']}" if status["mode"] == "playing" else "")
        mode += f"; {status['remaining']:,} events left"
        if status.get("forkAt") is not None:
            mode += f"; forks at {status['forkAt']}"
    head = f"revision {status['revision']} ({status['time']}), {mode}"
    nxt = status.get("next")
    tail = (f"next: {nxt['revision']}  {nxt['type']}  {nxt['object']}  by {nxt['actor']}" if nxt
            else ("next: (end of the recording)" if status["mode"] != "forked" else ""))
    return "\n".join([*lines, head] + ([tail] if tail else [])) + "\n"


def run_replay_command(args: argparse.Namespace) -> int:
    """Entry point of `cplane replay SOURCE ...` and `cplane replay ACTION ...`."""
    from storage import recording

    label = "cplane replay" + (f" {args.source}" if args.source in REPLAY_ACTIONS else "")
    try:
        if args.source in REPLAY_ACTIONS:
            return asyncio.run(_control(args))
        if args.operands:
            raise recording.SourceError(f"unexpected arguments: {' '.join(args.operands)}")
        return asyncio.run(_serve_replay(args))
    except (recording.SourceError, ValueError) as exc:
        _note(f"{label}: {exc}")
        return 1
    except OSError as exc:
        _note(f"{label}: {exc}")
        return 1
    except KeyboardInterrupt:
        return 130
