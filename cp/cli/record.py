"""`cplane record`: record a live cluster into an event log (issue #25).

    cplane record --kubeconfig FILE [--context C] [--kinds pods,resourceclaims.resource.k8s.io,...]
                  [--for 10m] [--keep-secrets] --data-dir DIR

Discovery (aggregated, else the legacy documents) says what the cluster serves; the recorder keeps the
resources cplane serves too (`cp.resources`), plus CustomResourceDefinitions and their custom resources
(a definition is always recorded before its objects). Per resource: a LIST, paged with limit/continue,
then a WATCH from its resourceVersion with bookmarks. Every observed change becomes a
`cp.importing.Change` — the cluster's time (creationTimestamp for an ADDED, else the time of the latest
managedFields entry, else now), its manager as user and field manager, the object's resourceVersion as
source — numbered by one `cp.importing.Sequencer` and appended to the log in batches, each in one
transaction (`storage.importing.append_events`). A watch that expires (410 Gone) relists: the objects
that differ, and the deletions of those gone, are recorded as resync events. SIGINT, SIGTERM or
`--for` stop it after the batch under way; the log is never left half written.

Only the standard library is imported at module level (`cplane --help` stays fast).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import datetime
import os
import signal
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from controllers.runtime import client as clients
    from cp import importing
    from cp import resources as res
    from storage import sql

BATCH = 5000  # changes per committed batch, at most
QUEUE_LIMIT = 4 * BATCH  # changes received and not yet committed: the watches wait beyond it
RETRY_SECONDS = (0.5, 1.0, 2.0, 5.0)  # between attempts after a transport failure
CRD = ("apiextensions.k8s.io", "customresourcedefinitions")
USER_AGENT = "cplane-record/v0.1.0"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "record", help="record a live cluster (LIST then WATCH of every kind cplane serves) into an event log",
        description="Record a live cluster into a new event log: discovery, then per resource a paged LIST and a "
                    "WATCH from its resourceVersion; every change is an event with the cluster's time, manager and "
                    "resourceVersion (as source=...). A watch that expires (410) relists and records the "
                    "difference as resync events. Stops on Ctrl-C, SIGTERM or --for, after the batch under way. "
                    "Secret and ConfigMap values are redacted unless --keep-secrets. Read the recording with "
                    "`cplane log show/history`, `cplane why --data-dir`, `cplane replay`. See docs/replay.md.")
    p.add_argument("--kubeconfig", default=None, help="the cluster's kubeconfig (default $KUBECONFIG, ~/.kube/config)")
    p.add_argument("--context", default=None, help="the kubeconfig context (default its current-context)")
    p.add_argument("--kinds", default=None, metavar="R[,R...]",
                   help="only these resources (group-resource names: pods,resourceclaims.resource.k8s.io); "
                        "custom resources bring their CustomResourceDefinitions")
    p.add_argument("--for", dest="duration", default=None, metavar="DURATION",
                   help="stop after DURATION (30s, 10m, 1h); default: until interrupted")
    p.add_argument("--keep-secrets", action="store_true", help="keep Secret and ConfigMap values (redacted otherwise)")
    p.add_argument("--resume", action="store_true",
                   help="go on recording into a log that holds a recording of this cluster already: each resource "
                        "is listed again and what changed or went meanwhile is recorded as resync events")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--data-dir", type=Path, help="the new recording's data directory (created, mode 0700)")
    where.add_argument("--db", metavar="URL", help="an EMPTY event-log database instead (postgresql+asyncpg://...: "
                                                  "`cplane replay URL` and `cplane serve --db URL` read it)")
    p.set_defaults(func=run)


# -- changes --------------------------------------------------------------------------------------


def _parse_time(text: Any) -> float | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _latest_manager(meta: Mapping[str, Any]) -> tuple[str, float | None]:
    """The manager of the newest managedFields entry and its time (entries without time come first)."""
    best: tuple[float, str] | None = None
    for entry in meta.get("managedFields") or ():
        if not isinstance(entry, Mapping):
            continue
        when = _parse_time(entry.get("time"))
        key = (when if when is not None else float("-inf"), str(entry.get("manager") or ""))
        if best is None or key[0] >= best[0]:
            best = key
    if best is None:
        return "", None
    return best[1], best[0] if best[0] != float("-inf") else None


def change_of(event_type: str, obj: dict[str, Any], *, resync: bool = False,
              now: Callable[[], float] = time.time) -> importing.Change:
    """A watch event's (or a listed object's: ADDED) change, with the cluster's time and manager."""
    from cp import importing

    meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
    assert isinstance(meta, Mapping)
    manager, managed_time = _latest_manager(meta)
    when = _parse_time(meta.get("creationTimestamp")) if event_type == "ADDED" else None
    if when is None:
        when = managed_time
    if when is None or event_type == "DELETED":
        when = now()
    return importing.Change(deleted=event_type == "DELETED", object=obj, time=when, user=manager,
                            field_manager=manager, source=str(meta.get("resourceVersion") or ""), resync=resync)


# -- discovery ------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Target:
    """One resource to record, at the version the cluster serves it."""

    kind: res.ResourceKind
    custom: bool = False

    @property
    def name(self) -> str:
        return self.kind.group_resource


async def _aggregated(client: clients.Client) -> list[tuple[str, str, dict[str, Any]]] | None:
    """(group, version, resource entry) from the aggregated documents, preferred versions first; None
    when the server serves only the legacy ones."""
    import msgspec

    from controllers.runtime import discovery

    out: list[tuple[str, str, dict[str, Any]]] = []
    for path in ("/api", "/apis"):
        doc = msgspec.json.decode(await client.request("GET", path, accept=discovery.AGGREGATED))
        if not isinstance(doc, dict) or doc.get("kind") != "APIGroupDiscoveryList":
            return None
        for group in doc.get("items") or ():
            name = str((group.get("metadata") or {}).get("name") or "")
            for version in group.get("versions") or ():
                for entry in version.get("resources") or ():
                    kind = (entry.get("responseKind") or {}).get("kind") or ""
                    out.append((name, str(version.get("version")), {
                        "name": entry.get("resource"), "kind": kind, "verbs": entry.get("verbs") or [],
                        "namespaced": entry.get("scope") != "Cluster",
                        "singularName": entry.get("singularResource") or ""}))
    return out


async def _legacy(client: clients.Client) -> list[tuple[str, str, dict[str, Any]]]:
    """The same from /api/v1 and /apis/GROUP/VERSION (APIResourceList), preferred versions first."""
    import msgspec

    decode = msgspec.json.decode
    versions: list[tuple[str, str, str]] = [("", "v1", "/api/v1")]
    groups = decode(await client.request("GET", "/apis"))
    for group in groups.get("groups") or ():
        name = str(group.get("name") or "")
        preferred = str((group.get("preferredVersion") or {}).get("version") or "")
        listed = [str(v.get("version")) for v in group.get("versions") or ()]
        for version in sorted(listed, key=lambda v: v != preferred):
            versions.append((name, version, f"/apis/{name}/{version}"))
    out: list[tuple[str, str, dict[str, Any]]] = []
    for group_name, version, path in versions:
        doc = decode(await client.request("GET", path))
        out.extend((group_name, version, dict(entry)) for entry in doc.get("resources") or ()
                   if isinstance(entry, dict))
    return out


async def discover(client: clients.Client, *, only: Sequence[str] | None = None) -> list[Target]:
    """The resources to record: served by the cluster and by cplane (at the first version the cluster
    lists that cplane knows), and custom resources; definitions first. `only` narrows (names as
    `--kinds` takes them; unknown ones raise ValueError)."""
    from cp import resources as res

    entries = await _aggregated(client)
    if entries is None:
        entries = await _legacy(client)
    chosen: dict[tuple[str, str], Target] = {}
    for group, version, entry in entries:
        plural = str(entry.get("name") or "")
        verbs = set(entry.get("verbs") or ())
        if not plural or "/" in plural or not {"list", "watch"} <= verbs or (group, plural) in chosen:
            continue
        builtin = res.lookup(group, version, plural)
        if builtin is not None:
            chosen[(group, plural)] = Target(kind=builtin)
        elif res.by_group_resource(group, plural) is None and entry.get("kind"):
            # Recorded once a definition recorded before defines it (`Recorder`): an aggregated
            # API's resources or a built-in cplane does not serve are not.
            kind = str(entry["kind"])
            chosen[(group, plural)] = Target(custom=True, kind=res.ResourceKind(
                group=group, version=version, kind=kind, plural=plural,
                singular=str(entry.get("singularName") or kind.lower()),
                namespaced=bool(entry.get("namespaced", True)), verbs=tuple(sorted(verbs))))
    # A resource served from another's storage (events.k8s.io Events) is recorded once, as that one.
    for key, target in list(chosen.items()):
        if target.kind.storage_of and tuple(target.kind.storage_of) in chosen and tuple(target.kind.storage_of) != key:
            del chosen[key]
    if only is not None:
        wanted: dict[tuple[str, str], Target] = {}
        for name in only:
            plural, _, group = name.strip().partition(".")
            found = chosen.get((group, plural))
            if found is None:
                raise ValueError(f"the cluster serves no resource {name!r} that cplane records")
            wanted[(group, plural)] = found
        if any(t.custom for t in wanted.values()) and CRD in chosen:
            wanted[CRD] = chosen[CRD]
        chosen = wanted
    return sorted(chosen.values(), key=lambda t: (t.custom, (t.kind.group, t.kind.plural) != CRD))


# -- the recorder ---------------------------------------------------------------------------------


@dataclasses.dataclass
class _Relist:
    """A page of a relist (after an expired watch, a recording resumed, or a first LIST whose continue
    token expired): the kind's objects now, compared with what was recorded. `start`: the first page
    (what was seen of an earlier attempt is forgotten); `end`: the last, after which the objects not
    seen are deleted. `queued`: for a first LIST taken again, the keys its pages had queued; the
    other objects are the rest of that LIST, ordinary ADDED changes rather than resync events."""

    target: Target
    items: list[dict[str, Any]]
    start: bool = False
    end: bool = False
    queued: set[tuple[str, str]] | None = None


@dataclasses.dataclass
class _Listed:
    """The end of a resource's first LIST."""

    target: Target


@dataclasses.dataclass
class Stats:
    kinds: int = 0
    listed: int = 0  # kinds whose first LIST is recorded
    events: int = 0
    resyncs: int = 0  # relists after an expired watch
    resync_events: int = 0
    newest: float | None = None  # the newest recorded event's time
    revision: int = 0
    errors: int = 0

    def line(self, *, now: float) -> str:
        lag = f"{max(0.0, now - self.newest):.1f}s" if self.newest is not None else "-"
        extra = f", {self.resyncs} relists ({self.resync_events} resync events)" if self.resyncs else ""
        if self.errors:
            extra += f", {self.errors} failed requests or unreadable objects (retried or skipped)"
        return (f"record: {self.listed}/{self.kinds} kinds listed, {self.events} events recorded, "
                f"lag {lag}{extra}")


class Recorder:
    """LISTs and WATCHes feeding one writer (one Sequencer, batches appended all or nothing)."""

    def __init__(self, *, client: clients.Client, event_log: sql.SqlEventLog, keep_secrets: bool = False,
                 batch: int = BATCH, progress: Callable[[Stats], None] | None = None,
                 page: int = 500, resume: bool = False) -> None:
        """`resume`: an event log that holds a recording already goes on from it (its live objects are
        the sequencer's heads; each resource's first LIST is recorded as a relist: resync events for
        what changed or went meanwhile)."""
        from cp import importing

        if event_log.revision and not resume:
            raise ValueError("a recording needs an empty event log: give a new --data-dir or an empty --db, "
                             "or --resume to go on recording into this one")
        self.resuming = bool(event_log.revision)
        self.client = client
        self.event_log = event_log
        self.sequencer = importing.Sequencer(keep_secrets=keep_secrets, first_revision=1)
        self.stats = Stats()
        self.batch = batch
        self.page = page
        self._progress = progress
        self._queue: asyncio.Queue[importing.Change | _Relist | _Listed | None] = asyncio.Queue(maxsize=QUEUE_LIMIT)
        self._listed: set[str] = set()  # the resources whose first LIST is committed
        self._defined: set[tuple[str, str]] = set()  # (group, plural) of the definitions recorded
        self._relisted: dict[str, set[tuple[str, str]]] = {}  # resource -> keys its relist has seen so far
        self._watchers: dict[str, asyncio.Task[None]] = {}
        self._targets: dict[tuple[str, str], Target] = {}
        self._only: Sequence[str] | None = None
        self._rediscover = asyncio.Event()
        self.recorded = asyncio.Event()  # set after each committed batch (tests wait on it)

    async def run(self, stop: asyncio.Event, *, only: Sequence[str] | None = None) -> Stats:
        """Record until `stop` is set; then finish the changes received and return."""
        self._only = only
        targets = await discover(self.client, only=only)
        if self.resuming:
            await self._resume(targets)
        writer = asyncio.create_task(self._write(), name="record:writer")
        try:
            # Definitions first: their objects are recorded only once the Sequencer knows their kind.
            for target in targets:
                if not target.custom:
                    self._start(target)
            await self._definitions_recorded(stop, writer)
            for target in targets:
                if target.custom and (target.kind.group, target.kind.plural) in self._defined:
                    self._start(target)
            rediscover = asyncio.create_task(self._rediscover_loop(), name="record:discovery")
            waiter = asyncio.create_task(stop.wait())
            await asyncio.wait({waiter, writer}, return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()
            rediscover.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await rediscover
        finally:
            for task in self._watchers.values():
                task.cancel()
            for task in self._watchers.values():
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            if not writer.done():
                await self._queue.put(None)  # the writer commits what is queued, then ends
            await writer
        return self.stats

    async def _resume(self, targets: Sequence[Target]) -> None:
        """The keys the log holds of `targets` become the sequencer's heads: the live objects
        (definitions first: their custom kinds are known before their objects) and the deleted keys."""
        from cp import resources as res

        for target in sorted(targets, key=lambda t: (t.kind.group, t.kind.plural) != CRD):
            stored = res.storage_kind(target.kind) if not target.custom else target.kind
            listed = await self.event_log.list_objects(group=stored.group, resource=stored.plural, namespace=None)
            for event in listed.events:
                source = event.actor.request_id.removeprefix("source=").split(" ")[0] \
                    if event.actor.request_id.startswith("source=") else ""
                self.sequencer.resume(stored, revision=event.revision, obj=event.object, source=source)
                if (stored.group, stored.plural) == CRD:
                    self._defined.add(_defines(event.object))
            for namespace, name, revision in await self.event_log.deleted_keys(group=stored.group,
                                                                               resource=stored.plural):
                self.sequencer.resume_deleted(stored, namespace=namespace, name=name, revision=revision)
        self.sequencer.revision = self.event_log.revision
        self.stats.revision = self.event_log.revision

    def targets(self) -> list[Target]:
        """The resources recorded so far (custom resources join as their definitions appear)."""
        return list(self._targets.values())

    def _start(self, target: Target) -> None:
        key = (target.kind.group, target.kind.plural)
        if key in self._targets:
            return
        self._targets[key] = target
        self.stats.kinds = len(self._targets)
        self._watchers[target.name] = asyncio.create_task(self._record_kind(target), name=f"record:{target.name}")

    async def _definitions_recorded(self, stop: asyncio.Event, writer: asyncio.Task[None]) -> None:
        """Wait until the definitions' LIST (when recorded) is committed, or the recording stops."""
        name = "customresourcedefinitions.apiextensions.k8s.io"
        task = self._watchers.get(name)
        if task is None:
            return
        stopped = asyncio.create_task(stop.wait())
        try:
            while name not in self._listed and not task.done() and not stop.is_set() and not writer.done():
                self.recorded.clear()
                done = asyncio.create_task(self.recorded.wait())
                await asyncio.wait({done, task, stopped, writer}, return_when=asyncio.FIRST_COMPLETED)
                done.cancel()
        finally:
            stopped.cancel()

    async def _rediscover_loop(self) -> None:
        """A definition recorded since: look for the custom resources it serves now."""
        while True:
            await self._rediscover.wait()
            self._rediscover.clear()
            try:
                targets = await discover(self.client, only=self._only)
            except ValueError:
                continue
            except Exception:  # transport: the next definition change tries again
                self.stats.errors += 1
                continue
            for target in targets:
                key = (target.kind.group, target.kind.plural)
                if target.custom and key in self._defined and key not in self._targets:
                    self._start(target)

    async def _relist(self, target: Target, *, queued: set[tuple[str, str]] | None = None) -> str:
        """A LIST compared with what was recorded, page by page into the queue (`_Relist`); an expired
        continue token starts it again. Returns the resourceVersion to watch from."""
        from cp import errors

        cont = ""
        start = True
        while True:
            try:
                page = await self.client.list_page(target.kind, limit=self.page, continue_=cont)
            except errors.Expired:  # the continue token expired: start the LIST again
                cont, start = "", True
                continue
            cont = page.metadata.continue_
            await self._queue.put(_Relist(target=target, items=_typed(target, page.items, page.api_version),
                                          start=start, end=not cont, queued=queued))
            start = False
            if not cont:
                return page.resource_version

    async def _first_list(self, target: Target) -> str:
        """The first LIST, page by page into the queue as ADDED changes (a LIST of any size costs a
        page and the queue's bound, not the whole list); then `_Listed`. Should the continue token
        expire part-way, the LIST is taken again as a relist (compared with the pages already
        queued). Returns the resourceVersion to watch from."""
        from cp import errors

        cont = ""
        queued: set[tuple[str, str]] = set()
        while True:
            try:
                page = await self.client.list_page(target.kind, limit=self.page, continue_=cont)
            except errors.Expired:
                rv = await self._relist(target, queued=queued)
                break
            for item in _typed(target, page.items, page.api_version):
                queued.add(_key_of(item))
                await self._queue.put(change_of("ADDED", item))
            cont = page.metadata.continue_
            if not cont:
                rv = page.resource_version
                break
        await self._queue.put(_Listed(target=target))
        return rv

    async def _record_kind(self, target: Target) -> None:
        from cp import errors

        attempt = 0
        listed = False
        rv: str | None = None  # where the next WATCH starts; None: LIST first
        while True:
            try:
                if rv is None:
                    if listed or self.resuming:  # after an expired watch, or a recording resumed: what
                        rv = await self._relist(target)  # changed meanwhile
                        if not listed:
                            await self._queue.put(_Listed(target=target))
                    else:
                        rv = await self._first_list(target)
                    listed = True
                rv = await self._watch(target, rv)
                attempt = 0
            except (errors.Expired, errors.Gone):
                rv = None
            except asyncio.CancelledError:
                raise
            except Exception:  # transport: try again from where it was, later
                self.stats.errors += 1
                await asyncio.sleep(RETRY_SECONDS[min(attempt, len(RETRY_SECONDS) - 1)])
                attempt += 1

    async def _watch(self, target: Target, rv: str) -> str:
        """One watch from `rv`; returns the resourceVersion to watch from next (the server ended it)."""
        async with self.client.watch(target.kind, resource_version=rv, allow_bookmarks=True,
                                     timeout_seconds=300) as stream:
            async for event in stream:
                obj = event.object
                new_rv = str((obj.get("metadata") or {}).get("resourceVersion") or "")
                if event.type != "BOOKMARK":
                    await self._queue.put(change_of(event.type, obj))
                rv = new_rv or rv
        return rv

    async def _write(self) -> None:
        from cp import importing
        from storage import importing as writer

        ending = False
        while not ending:
            first = await self._queue.get()
            items = [first]
            while len(items) < self.batch and not self._queue.empty():
                items.append(self._queue.get_nowait())
            events: list[importing.Event] = []
            listed: list[str] = []
            crd_changed = False
            for item in items:
                if item is None:
                    ending = True
                elif isinstance(item, _Listed):
                    listed.append(item.target.name)
                else:
                    if isinstance(item, _Relist):
                        fed = self._resync(item)
                        self.stats.resyncs += item.end
                        self.stats.resync_events += sum(e.request_id.endswith("resync") for e in fed)
                    else:
                        try:
                            fed = self.sequencer.feed(item)
                        except importing.ImportError_:
                            self.stats.errors += 1
                            continue
                    events.extend(fed)
                    for event in fed:
                        if (event.group, event.resource) == CRD and event.type != "DELETED":
                            crd_changed = True
                            self._defined.add(_defines(event.object))
            if events:
                self.stats.revision = await writer.append_events(self.event_log, events)
                self.stats.events += len(events)
                self.stats.newest = max(e.time for e in events) if self.stats.newest is None \
                    else max(self.stats.newest, *(e.time for e in events))
            self._listed.update(listed)
            self.stats.listed = len(self._listed)
            if crd_changed:
                self._rediscover.set()
            self.recorded.set()
            if self._progress is not None:
                self._progress(self.stats)

    def _resync(self, relist: _Relist) -> list[importing.Event]:
        """The events a relist's page finds: what differs from what was recorded; after its last
        page, the deletions of what it did not see."""
        from cp import importing
        from cp import resources as res

        stored = res.storage_kind(relist.target.kind) if not relist.target.custom else relist.target.kind
        if relist.start:
            self._relisted[relist.target.name] = set()
        seen = self._relisted.setdefault(relist.target.name, set())
        out: list[importing.Event] = []
        for item in relist.items:
            meta = item.get("metadata") or {}
            seen.add((str(meta.get("namespace") or "") if stored.namespaced else "", str(meta.get("name") or "")))
            if relist.queued is not None and _key_of(item) not in relist.queued:
                change = change_of("ADDED", item)  # (the rest of a first LIST)
            else:
                change = change_of("MODIFIED", item, resync=True)
            try:
                out.extend(self.sequencer.feed(change))
            except importing.ImportError_:
                self.stats.errors += 1
        if not relist.end:
            return out
        del self._relisted[relist.target.name]
        gone = [obj for (group, plural, namespace, name), obj in self.sequencer.live()
                if (group, plural) == (stored.group, stored.plural) and (namespace, name) not in seen]
        for obj in gone:
            out.extend(self.sequencer.feed(importing.Change(deleted=True, object=obj, time=time.time(), resync=True)))
        return out


def _key_of(item: Mapping[str, Any]) -> tuple[str, str]:
    meta = item.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _typed(target: Target, items: list[dict[str, Any]], api_version: str) -> list[dict[str, Any]]:
    """A LIST's items with their apiVersion and kind (a List's items may leave them out)."""
    api_version = api_version or (f"{target.kind.group}/{target.kind.version}" if target.kind.group
                                  else target.kind.version)
    for item in items:
        item.setdefault("apiVersion", api_version)
        item.setdefault("kind", target.kind.kind)
    return items


def _defines(crd: bytes) -> tuple[str, str]:
    """(group, plural) a CustomResourceDefinition defines."""
    import msgspec

    spec = msgspec.json.decode(crd).get("spec") or {}
    return str(spec.get("group") or ""), str((spec.get("names") or {}).get("plural") or "")


# -- the command ----------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    duration: float | None = None
    if args.duration is not None:
        from cp import clock

        try:
            duration = clock.parse_duration(args.duration)
        except ValueError as exc:
            print(f"cplane record: --for: {exc}", file=sys.stderr)
            return 2
    only = [k for k in args.kinds.split(",") if k.strip()] if args.kinds else None
    try:
        return asyncio.run(record(kubeconfig=args.kubeconfig, context=args.context, only=only, duration=duration,
                                  keep_secrets=args.keep_secrets, data_dir=args.data_dir, db=args.db,
                                  resume=args.resume))
    except KeyboardInterrupt:
        return 130


def _prepare(data_dir: Path) -> str:
    """Create the recording's directory (mode 0700); the URL of its event log."""
    data_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(data_dir, 0o700)
    return f"sqlite+aiosqlite:///{(data_dir / 'cplane.db').resolve()}"


async def record(*, kubeconfig: str | None, context: str | None, only: Sequence[str] | None, duration: float | None,
                 keep_secrets: bool, data_dir: Path | None, db: str | None = None,
                 stop: asyncio.Event | None = None, resume: bool = False) -> int:
    """The command: record into `data_dir` (or the database `db`) until `stop`, `duration` or a signal."""
    from controllers.runtime import client as clients
    from storage import factory
    from storage import log as storage_log

    try:
        client = clients.Client.from_kubeconfig(kubeconfig, context=context, user_agent=USER_AGENT)
    except (OSError, ValueError) as exc:
        print(f"cplane record: kubeconfig: {exc}", file=sys.stderr)
        return 2
    if db:
        url, where = db, factory.shown(db)
    else:
        assert data_dir is not None
        url, where = await asyncio.to_thread(_prepare, data_dir), str(data_dir)
    try:
        event_log = factory.open_event_log(url=url)
        await event_log.start()
    except (ValueError, OSError, storage_log.StorageError) as exc:  # a URL or database that cannot be used
        print(f"cplane record: {where}: {exc}", file=sys.stderr)
        return 2
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    handled: list[signal.Signals] = []
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signum, stop.set)
            handled.append(signum)
    timer = loop.call_later(duration, stop.set) if duration is not None else None
    tty = sys.stderr.isatty()
    shown = [0.0, -1.0]  # when the last line was written, and the kinds listed then

    def progress(stats: Stats) -> None:
        now = time.monotonic()
        if now - shown[0] >= 1.0 or stats.listed != shown[1]:
            shown[0], shown[1] = now, stats.listed
            print(("\r" if tty else "") + stats.line(now=time.time()), end="" if tty else "\n", file=sys.stderr,
                  flush=True)

    try:
        try:
            recorder = Recorder(client=client, event_log=event_log, keep_secrets=keep_secrets, progress=progress,
                                resume=resume)
        except ValueError as exc:
            print(f"cplane record: {exc}", file=sys.stderr)
            return 2
        try:
            stats = await recorder.run(stop, only=only)
        except ValueError as exc:
            print(f"cplane record: {exc}", file=sys.stderr)
            return 2
        except Exception as exc:  # the database failed: said, with what is kept
            print(f"\ncplane record: the recording stopped: {type(exc).__name__}: {exc}; the "
                  f"{recorder.stats.events} events committed before (revision {recorder.stats.revision}) are "
                  f"kept in {where}", file=sys.stderr)
            return 1
        print(("\n" if tty else "") + stats.line(now=time.time()), file=sys.stderr)
        skipped = recorder.sequencer.skipped
        if skipped:
            print("cplane record: not served by cplane, skipped: "
                  + ", ".join(f"{k} ({n})" for k, n in sorted(skipped.items())), file=sys.stderr)
        print(f"recorded {stats.events} events (revision {stats.revision}) into {where}", file=sys.stderr)
        return 0
    finally:
        if timer is not None:
            timer.cancel()
        for signum in handled:
            loop.remove_signal_handler(signum)
        await client.close()
        await event_log.close()
