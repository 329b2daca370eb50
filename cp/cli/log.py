"""`cplane log`: export and import the event log as NDJSON, and read it back — `show` (the objects at
a revision, like kubectl get), `history` (every version of one object), `diff` (between two revisions,
or two logs) and `events` (the raw stream). docs/event-log.md, docs/replay.md.

Only the standard library is imported at module level (`cplane --help` stays fast); each command
imports the storage it reads when it runs.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from cp.cli import log_audit

if TYPE_CHECKING:
    from cp import resources as res
    from storage import log, recording


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    imp.add_argument("--dump", nargs="+", metavar="FILE|DIR",
                     help="instead of NDJSON: a cluster's dump as its starting state (kubectl get -o yaml|json, "
                          "kubectl cluster-info dump, kwok snapshot; see docs/replay.md)")
    imp.add_argument("--keep-secrets", action="store_true",
                     help="with --dump or --audit: keep Secret and ConfigMap values (default: REDACTED)")
    log_audit.add_arguments(imp)
    _reader_parsers(lsub)
    p.set_defaults(func=run)


def _store_args(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--data-dir", type=Path, help="a cplane data directory (its cplane.db)")
    g.add_argument("--db", metavar="URL", help="an event-log database URL")


def _store_url(args: argparse.Namespace) -> str:
    if args.db:
        return str(args.db)
    db = Path(args.data_dir) / "cplane.db"
    return f"sqlite+aiosqlite:///{db.resolve()}"


def _source_args(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--data-dir", type=Path, help="a cplane data directory (its cplane.db)")
    g.add_argument("--db", metavar="URL", help="an event-log database URL")
    g.add_argument("-f", "--file", metavar="PATH", help="an NDJSON export (`cplane log export`; - for stdin) "
                                                         "or an SQLite event-log file")


def _reader_parsers(lsub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    show.add_argument("--api-version", metavar="GROUP/VERSION",
                      help="with RESOURCE and -o yaml|json: the objects as that served version of it reads them "
                           "(e.g. resource.k8s.io/v1beta1, autoscaling/v1), converted as the server converts "
                           "them; tables are the stored version's, as the server's")
    show.set_defaults(func=run_reader)

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
    hist.set_defaults(func=run_reader)

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
    diff.set_defaults(func=run_reader)

    ev = lsub.add_parser("events", help="the raw event stream, filtered, as a table or NDJSON",
                         description="The events of the log in revision order. --since/--until take a "
                                     "revision (since: exclusive) or an RFC 3339 time. --actor matches the "
                                     "user, field manager or user agent (substring); --user is the "
                                     "authenticated user, exactly. On a data dir or database, --name and "
                                     "--user read indexes: fast on logs of millions of events.")
    _source_args(ev)
    ev.add_argument("--resource", metavar="R", help="one resource (pods, deployments.apps...)")
    ev.add_argument("-n", "--namespace", help="one namespace")
    ev.add_argument("--name", help="one object name")
    ev.add_argument("--actor", metavar="A", help="user, field manager or user agent containing A")
    ev.add_argument("--user", metavar="U", help="written by the authenticated user U (exact match, "
                                                "e.g. system:node:node-1)")
    ev.add_argument("--type", choices=("ADDED", "MODIFIED", "DELETED"))
    ev.add_argument("--since", metavar="REV|TIME", help="events after revision REV, or at/after TIME")
    ev.add_argument("--until", metavar="REV|TIME", help="events up to revision REV, or up to TIME")
    ev.add_argument("--limit", type=int, metavar="N", help="stop after N events")
    ev.add_argument("--follow", action="store_true", help="keep printing new events (data dir or database)")
    ev.add_argument("-o", "--output", choices=("table", "ndjson"), default="table")
    ev.set_defaults(func=run_reader)


def run(args: argparse.Namespace) -> int:
    from cp import logs

    logs.configure(level="warning")  # log lines go to stderr, never into exported NDJSON on stdout
    handlers = {"export": _log_export, "import": _log_import}
    try:
        return asyncio.run(handlers[args.log_command](args))
    except OSError as exc:
        print(f"cplane log {args.log_command}: {exc}", file=sys.stderr)
        return 1


def run_reader(args: argparse.Namespace) -> int:
    from cp import logs

    logs.configure(level="warning")
    return run_log_command(args)


# -- export and import -------------------------------------------------------------------------


async def _log_export(args: argparse.Namespace) -> int:
    from storage import factory, ndjson

    if args.data_dir and not (Path(args.data_dir) / "cplane.db").exists():
        print(f"cplane log export: no event log in {args.data_dir}", file=sys.stderr)
        return 1
    event_log = factory.open_event_log(url=_store_url(args))
    await event_log.start()
    try:
        out = sys.stdout.buffer if args.output in (None, "-") else open(args.output, "wb")  # noqa: SIM115, ASYNC230 (a one-shot command)
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

    if getattr(args, "audit", None):
        if args.input != "-" or args.dump:
            print("cplane log import: --audit takes no NDJSON input and no --dump", file=sys.stderr)
            return 2
        return await log_audit.run(args, store_url=_store_url(args))
    if args.dump:
        if args.input != "-" or getattr(args, "audit", None):
            print("cplane log import: --dump takes no NDJSON input and no --audit", file=sys.stderr)
            return 2
        from cp.cli import importdump

        return await importdump.run(args, url=_store_url(args))
    event_log = factory.open_event_log(url=_store_url(args))
    await event_log.start()
    try:
        src = sys.stdin.buffer if args.input == "-" else open(args.input, "rb")  # noqa: SIM115, ASYNC230 (a one-shot command)
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


def _progress(label: str, *, total: int | None, unit: str = "events") -> Any:
    from cp.cli import render

    return render.Progress(sys.stderr, label=label, total=total, unit=unit,
                            min_total=10_000 if unit == "events" else 10 << 20)


def _progress_writer(out: Any, progress: Any) -> Any:
    from cp.cli import render

    return render.ProgressWriter(out, progress) if progress.enabled else out


def _progress_lines(src: Any, progress: Any) -> Any:
    from cp.cli import render

    return render.progress_lines(src, progress) if progress.enabled else src


def _file_size(f: Any) -> int | None:
    import os
    import stat

    try:
        st = os.fstat(f.fileno())
    except (OSError, ValueError):
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) else None


# -- show, history, diff, events ---------------------------------------------------------------


def _source_spec(args: argparse.Namespace) -> tuple[str, str | None]:
    if getattr(args, "data_dir", None):
        return str(args.data_dir), "dir"
    if getattr(args, "db", None):
        return str(args.db), "url"
    return str(args.file), "file"


def _out(text: str) -> None:
    sys.stdout.write(text)


def _note(text: str) -> None:
    print(text, file=sys.stderr)


async def _kinds(source: recording.Source, resource: str | None, *revisions: int) -> list[res.ResourceKind]:
    """The one resource named (custom resources resolve through the log's definitions), or every
    resource served at `revisions`: the built-in ones and the custom ones of the definitions held then."""
    from storage import recording

    if resource:
        return [await recording.resolve_resource(source, resource)]
    return (await recording.registry_at(source, *revisions)).kinds()


async def _target_revision(source: recording.Source, at: int | None, at_time: str | None) -> int:
    from storage import recording

    if at is not None and at_time is not None:
        raise recording.SourceError("give --at or --at-time, not both")
    if at_time is not None:
        when = recording.parse_when(at_time)
        if isinstance(when, int):
            raise recording.SourceError(f'--at-time "{at_time}" is not an RFC 3339 time')
        revision = await recording.revision_at_time(source, when)
        if revision == 0 and source.compacted:
            raise recording.SourceError(f"no event at or before {at_time} in {source.description}")
        return recording.check_revision(source, revision)
    return recording.check_revision(source, source.last if at is None else at)


def _served_version(kinds: Sequence[res.ResourceKind], api_version: str) -> res.ResourceKind:
    """`--api-version`: the built-in served kind of that version whose objects are the one stored kind
    of `kinds` (itself for its own version). Raises SourceError."""
    from cp import resources as res
    from storage import recording

    if len(kinds) != 1:
        raise recording.SourceError("--api-version needs a RESOURCE (e.g. resourceclaims.resource.k8s.io)")
    (kind,) = kinds
    versions = [kind, *(k for k in (*res.SERVED, *res.OPTIONAL) if k.storage_of == (kind.group, kind.plural))]
    for k in versions:
        if k.api_version == api_version:
            return k
    raise recording.SourceError(f"{res.resource_name(kind)} is not served in {api_version} (its versions: "
                                f"{', '.join(k.api_version for k in versions)})")


async def log_show(args: argparse.Namespace) -> int:
    import msgspec

    from cp import clock as clocks
    from cp import resources as res
    from cp.cli import render
    from storage import recording

    spec, expect = _source_spec(args)
    async with recording.opened(spec, expect=expect) as source:
        revision = await _target_revision(source, args.at, args.at_time)
        kinds = await _kinds(source, args.resource, revision)
        served = _served_version(kinds, args.api_version) if args.api_version else None
        namespace = None if args.all_namespaces else args.namespace
        groups = await recording.state_at(source, revision, kinds, namespace)
        now = await recording.cluster_time(source, revision)
    fmt = args.output
    if fmt == "name":  # names need no decoding
        _note(f"# {source.description} at revision {revision} ({clocks.rfc3339_milli(now)})")
        _out("".join(f"{res.kind_prefix(kind)}/{ev.name}\n" for kind, evs in groups for ev in evs))
        return 0
    from cp import collector

    with collector.paused():  # decoding thousands of objects at once
        decoded = [(kind, [msgspec.json.decode(ev.object) for ev in evs]) for kind, evs in groups]
    total = sum(len(objs) for _, objs in decoded)
    if fmt in ("yaml", "json"):
        if served is not None and served.storage_of:
            from cp import conversions

            with collector.paused():
                decoded = [(kind, [conversions.served_object(served, ev.object) for ev in evs]) for kind, evs in groups]
        body = render.list_object((o for _, objs in decoded for o in objs), revision=revision)
        _out(render.yaml_text(body) if fmt == "yaml" else render.json_text(body))
        return 0
    _note(f"# {source.description} at revision {revision} ({clocks.rfc3339_milli(now)})")
    if total == 0:
        where = f" in {namespace} namespace" if namespace else ""
        _note(f"No resources found{where} at revision {revision}.")
        return 0
    with collector.paused():
        text = render.tables_text(decoded, now=now, wide=fmt == "wide", all_namespaces=namespace is None)
    _out(text)
    return 0


async def log_history(args: argparse.Namespace) -> int:
    import msgspec

    from cp import resources as res
    from cp.cli import render
    from storage import ndjson, recording

    spec, expect = _source_spec(args)
    async with recording.opened(spec, expect=expect) as source:
        kind, namespace, name = await recording.resolve_ref(source, args.object, namespace=args.namespace)
        events = await source.history(kind.group, kind.plural, namespace, name)
    if not events:
        raise recording.SourceError(f"{res.ref(kind.group, kind.plural, namespace, name)}: no events in "
                          f"{source.description}")
    if args.output == "ndjson":
        sys.stdout.buffer.write(b"".join(ndjson.event_ndjson(ev) for ev in events))
        return 0
    _out(render.history_text(events, [msgspec.json.decode(ev.object) for ev in events], all_fields=args.all_fields))
    return 0


async def _state_map(source: recording.Source, revision: int, kinds: Sequence[res.ResourceKind],
                     namespace: str | None) -> dict[str, dict[str, Any]]:
    import msgspec

    from cp import resources as res
    from storage import recording

    out: dict[str, dict[str, Any]] = {}
    for _kind, evs in await recording.state_at(source, revision, kinds, namespace):
        for ev in evs:
            out[res.ref(ev.group, ev.resource, ev.namespace, ev.name)] = msgspec.json.decode(ev.object)
    return out


def _merged(a: list[res.ResourceKind], b: list[res.ResourceKind]) -> list[res.ResourceKind]:
    """The kinds of two sources, each group-resource once."""
    seen = {k.group_resource for k in a}
    return [*a, *(k for k in b if k.group_resource not in seen)]


async def log_diff(args: argparse.Namespace) -> int:
    from cp.cli import render
    from storage import recording

    spec, expect = _source_spec(args)
    revisions: list[int] = []
    resource: str | None = None
    for item in args.items:
        try:
            revisions.append(int(item))
        except ValueError:
            if resource is not None:
                raise recording.SourceError(f"one RESOURCE at most (got {resource} and {item})") from None
            resource = item
    namespace = args.namespace
    async with recording.opened(spec, expect=expect) as source:
        if args.against:
            if len(revisions) > 1:
                raise recording.SourceError("with --against give at most one REV (read in both sources)")
            async with recording.opened(args.against) as other:
                point = await recording.fork_point(source, other)
                if revisions:
                    rev_a = rev_b = revisions[0]
                elif args.at_time:
                    when = recording.parse_when(args.at_time)
                    rev_a = await recording.revision_at_time(source, float(when))
                    rev_b = await recording.revision_at_time(other, float(when))
                else:
                    rev_a, rev_b = source.last, other.last
                recording.check_revision(source, rev_a)
                recording.check_revision(other, rev_b)
                kinds = _merged(await _kinds(source, resource, rev_a), await _kinds(other, resource, rev_b))
                after = await _state_map(source, rev_a, kinds, namespace)
                before = await _state_map(other, rev_b, kinds, namespace)
            title = (f"{other.description} (revision {rev_b}) -> {source.description} (revision {rev_a}); "
                     f"identical up to revision {point}")
            extra: dict[str, Any] = {"forkPoint": point, "from": {"source": other.description, "revision": rev_b},
                                     "to": {"source": source.description, "revision": rev_a}}
        else:
            if len(revisions) != 2:
                raise recording.SourceError("give two revisions: cplane log diff REV1 REV2 [RESOURCE] "
                                  "(or --against OTHER_SOURCE)")
            rev1, rev2 = recording.check_revision(source, revisions[0]), recording.check_revision(source, revisions[1])
            kinds = await _kinds(source, resource, rev1, rev2)
            before = await _state_map(source, rev1, kinds, namespace)
            after = await _state_map(source, rev2, kinds, namespace)
            title = f"revision {rev1} -> revision {rev2}"
            extra = {"from": rev1, "to": rev2}
    d = render.state_diff(before, after, all_fields=args.all_fields)
    if args.output == "json":
        _out(render.json_text(render.state_diff_json(d, **extra)))
    else:
        _out(render.state_diff_text(d, title=title, details=not args.brief))
    return 0


async def log_events(args: argparse.Namespace, *, stop: asyncio.Event | None = None,
                     out: IO[bytes] | None = None) -> int:
    from cp.cli import render
    from storage import ndjson, recording

    spec, expect = _source_spec(args)
    flt = recording.EventFilter(namespace=args.namespace, name=args.name, actor=args.actor,
                                user=args.user, type=args.type)
    sink = out or sys.stdout.buffer
    async with recording.opened(spec, expect=expect) as source:
        if args.resource:
            flt.kind = await recording.resolve_resource(source, args.resource)
        start, end = 0, source.last
        if args.since is not None:
            since = recording.parse_when(args.since)
            if isinstance(since, int):
                start = since
            else:
                flt.since_time = since
                start = await recording.revision_at_time(source, since, strict=True)
        if args.until is not None:
            until = recording.parse_when(args.until)
            if isinstance(until, int):
                end = min(until, end)
            else:
                flt.until_time = until
                end = await recording.revision_at_time(source, until)
        if args.follow and args.until is not None:
            raise recording.SourceError("--follow and --until do not go together")
        if args.follow and isinstance(source, recording.Recording):
            raise recording.SourceError(f"{source.description}: --follow needs a data dir or a database URL")
        header = True
        shown = 0
        limit = args.limit

        def emit(page: list[log.Event]) -> bool:
            nonlocal header, shown
            chosen = [ev for ev in page if flt(ev)]
            if limit is not None:
                chosen = chosen[:max(limit - shown, 0)]
            shown += len(chosen)
            if chosen:
                if args.output == "ndjson":
                    sink.write(b"".join(ndjson.event_ndjson(ev) for ev in chosen))
                else:
                    sink.write(render.events_text(chosen, header=header).encode())
                    header = False
                sink.flush()
            return limit is None or shown < limit

        cursor = start
        async for page in recording.events_matching(source, start, end, flt):
            cursor = page[-1].revision
            if not emit(page):
                return 0
        if args.follow:
            async for page in recording.follow(source, max(cursor, end), stop=stop):
                if not emit(page):
                    return 0
        if shown == 0 and args.output != "ndjson" and not args.follow:
            _note("No events match.")
    return 0


LOG_COMMANDS: dict[str, Callable[[argparse.Namespace], Coroutine[Any, Any, int]]] = {
    "show": log_show, "history": log_history, "diff": log_diff, "events": log_events,
}


def run_log_command(args: argparse.Namespace) -> int:
    """Entry point of `cplane log show|history|diff|events`: one error line and exit 1 on failure."""
    import sqlite3

    from storage import log, recording

    name = args.log_command
    try:
        return asyncio.run(LOG_COMMANDS[name](args))
    except recording.SourceError as exc:
        _note(f"cplane log {name}: {exc}")
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # e.g. `| head`: stop quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (OSError, sqlite3.Error, log.StorageError) as exc:
        _note(f"cplane log {name}: {exc}")
        return 1
