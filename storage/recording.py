"""Recordings: event logs to read back, whatever holds them — the readers behind `cplane replay` and
`cplane log show|history|diff|events` (docs/replay.md).

Sources (`open_source`): a data dir (its cplane.db), a database URL, an SQLite file or an NDJSON export.
- `SqlSource` reads a SQL event log in place: time-travel lists, one object's history, revision
  scans and the events of one name or one user (`log events --name/--user`) are indexed queries, so the `log` commands stay fast on logs of millions of events. It is
  opened only after a read-only check that the database really is a cplane event log, so a wrong
  source is never migrated or written.
- `Recording` is a whole log in memory, indexed by revision, by object and by resource. NDJSON is
  validated line by line with the checks of `cplane log import` (a truncated or foreign file fails
  with its line number, before anything is served).
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import sys
import time
from bisect import bisect_left, bisect_right
from collections.abc import AsyncIterator, Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

import msgspec

from cp import clock as clocks
from cp import resources as res
from cp import sim
from cp.crd import custom as crds
from storage import codec, log

_decode = msgspec.json.Decoder().decode

SCAN_PAGE = 5000
NO_END = 1 << 62

Key = tuple[str, str, str, str]  # (group, resource, namespace, name)


class SourceError(Exception):
    """A source that cannot be read as asked (missing, foreign, truncated, revision out of range).
    The message is one line, meant for the user as it is."""


# =============================================================================================
# The in-memory index


class _Index:
    """Revision-ordered events and the lookups reads need. Append-only; `truncated` copies a prefix."""

    def __init__(self) -> None:
        self.events: list[log.Event] = []
        self.revisions: list[int] = []
        self.base = 0  # revision of events[0]; events[r - base] is revision r when there is no gap
        self.by_key: dict[Key, list[int]] = {}
        self.by_resource: dict[tuple[str, str], list[int]] = {}
        self.by_namespace: dict[tuple[str, str, str], list[int]] = {}
        self._names: dict[tuple[str, str], list[tuple[str, str]]] = {}
        self._unsorted: set[tuple[str, str]] = set()

    def add(self, ev: log.Event) -> None:
        r = ev.revision
        if not self.events:
            self.base = r
        self.events.append(ev)
        self.revisions.append(r)
        key = (ev.group, ev.resource, ev.namespace, ev.name)
        gr = (ev.group, ev.resource)
        revs = self.by_key.get(key)
        if revs is None:
            self.by_key[key] = [r]
            names = self._names.get(gr)
            if names is None:
                self._names[gr] = [(ev.namespace, ev.name)]
            else:
                if names[-1] > (ev.namespace, ev.name):
                    self._unsorted.add(gr)
                names.append((ev.namespace, ev.name))
        else:
            revs.append(r)
        by_gr = self.by_resource.get(gr)
        if by_gr is None:
            self.by_resource[gr] = [r]
        else:
            by_gr.append(r)
        grn = (ev.group, ev.resource, ev.namespace)
        by_ns = self.by_namespace.get(grn)
        if by_ns is None:
            self.by_namespace[grn] = [r]
        else:
            by_ns.append(r)

    def names(self, gr: tuple[str, str]) -> list[tuple[str, str]]:
        """Every (namespace, name) the resource ever had, sorted."""
        names = self._names.get(gr)
        if names is None:
            return []
        if gr in self._unsorted:
            names.sort()
            self._unsorted.discard(gr)
        return names

    def event(self, revision: int) -> log.Event:
        events = self.events
        i = revision - self.base
        if 0 <= i < len(events):
            ev = events[i]
            if ev.revision == revision:
                return ev
        i = bisect_left(self.revisions, revision)
        if i < len(events) and self.revisions[i] == revision:
            return events[i]
        raise KeyError(revision)

    def position(self, revision: int) -> int:
        """How many events have a revision <= `revision`."""
        i = revision - self.base + 1
        if 0 <= i <= len(self.events) and (i == 0 or self.events[i - 1].revision == revision):
            return i
        return bisect_right(self.revisions, revision)

    def latest(self, key: Key, at: int) -> log.Event | None:
        """The object's live version at revision `at`, None if absent or deleted there."""
        revs = self.by_key.get(key)
        if not revs:
            return None
        if revs[-1] <= at:
            r = revs[-1]
        else:
            i = bisect_right(revs, at)
            if i == 0:
                return None
            r = revs[i - 1]
        ev = self.event(r)
        return None if ev.type == "DELETED" else ev

    def truncated(self, revision: int) -> _Index:
        """A copy holding only the events at or below `revision` (a fork's starting point)."""
        out = _Index()
        n = self.position(revision)
        out.events = self.events[:n]
        out.revisions = self.revisions[:n]
        out.base = self.base

        def cut(v: list[int]) -> list[int]:
            return v[:bisect_right(v, revision)] if v and v[-1] > revision else list(v)

        out.by_key = {k: cut(v) for k, v in self.by_key.items()}  # emptied keys stay: names stay valid
        out.by_resource = {k: cut(v) for k, v in self.by_resource.items()}
        out.by_namespace = {k: cut(v) for k, v in self.by_namespace.items()}
        out._names = {k: list(v) for k, v in self._names.items()}
        out._unsorted = set(self._unsorted)
        return out

    def list_at(self, group: str, resource: str, namespace: str | None, at: int, *,
                start_after: tuple[str, str] | None = None, limit: int | None = None) -> tuple[list[log.Event], bool]:
        names = self.names((group, resource))
        lo, hi = 0, len(names)
        if namespace is not None:
            lo = bisect_left(names, (namespace, ""))
            hi = bisect_left(names, (namespace + "\x00", ""))
        if start_after is not None:
            lo = max(lo, bisect_right(names, start_after))
        out: list[log.Event] = []
        latest = self.latest
        for i in range(lo, hi):
            ns, name = names[i]
            ev = latest((group, resource, ns, name), at)
            if ev is None:
                continue
            if limit is not None and len(out) >= limit:
                return out, True
            out.append(ev)
        return out, False


# =============================================================================================
# Sources


class Source(Protocol):
    """What the `log` commands read: a recorded event log, at any retained revision."""

    description: str

    @property
    def first(self) -> int:
        """The first retained revision (0: no events)."""
        ...

    @property
    def last(self) -> int:
        """The newest revision."""
        ...

    @property
    def compacted(self) -> int:
        """Revisions at or below this cannot be read as a whole state (0: nothing compacted)."""
        ...

    async def list_at(self, kind: res.ResourceKind, namespace: str | None, revision: int) -> list[log.Event]: ...

    async def history(self, group: str, resource: str, namespace: str, name: str) -> list[log.Event]: ...

    async def scan(self, start: int, end: int, limit: int) -> list[log.Event]:
        """Retained events with start <= revision <= end, in order, at most `limit`."""
        ...

    async def close(self) -> None: ...


class Recording:
    """A whole recorded log in memory (immutable once loaded); a `Source`, and what replays of NDJSON
    exports serve from (SQL sources are replayed in place: `storage.replay.StreamReplayLog`)."""

    def __init__(self, *, index: _Index, compacted: int, description: str) -> None:
        self.index = index
        self.description = description
        self._compacted = compacted

    @property
    def first(self) -> int:
        return self.index.revisions[0] if self.index.revisions else 0

    @property
    def last(self) -> int:
        return max(self.index.revisions[-1] if self.index.revisions else 0, self._compacted)

    @property
    def compacted(self) -> int:
        return self._compacted

    def __len__(self) -> int:
        return len(self.index.events)

    @classmethod
    def from_ndjson(cls, lines: Iterable[bytes], *, description: str) -> Recording:
        """Load NDJSON export lines, validating each as `cplane log import` does. Raises SourceError."""
        from storage import ndjson

        checker = ndjson._Checker()
        index = _Index()
        from_row = codec.event_from_row
        try:
            for number, raw in enumerate(lines, 1):
                row = checker.check(number, raw)
                if row is not None:
                    index.add(from_row(row))
        except log.ImportRejectedError as exc:
            message = str(exc)
            if exc.line == 1 and not index.events:
                message = f"not an NDJSON event log ({message})"
            raise SourceError(f"{description}: {message}") from None
        except UnicodeDecodeError as exc:
            raise SourceError(f"{description}: not an NDJSON event log ({exc})") from None
        return cls(index=index, compacted=checker.compacted, description=description)

    @classmethod
    async def from_source(cls, source: Source, *, until: int | None = None) -> Recording:
        """Load every retained event of another source (up to `until`)."""
        index = _Index()
        end = source.last if until is None else until
        cursor = 0
        while True:
            page = await source.scan(cursor + 1, end, SCAN_PAGE)
            for ev in page:
                index.add(ev)
            if len(page) < SCAN_PAGE:
                break
            cursor = page[-1].revision
        return cls(index=index, compacted=source.compacted, description=source.description)

    async def list_at(self, kind: res.ResourceKind, namespace: str | None, revision: int) -> list[log.Event]:
        return self.index.list_at(kind.group, kind.plural, namespace, revision)[0]

    async def history(self, group: str, resource: str, namespace: str, name: str) -> list[log.Event]:
        return [self.index.event(r) for r in self.index.by_key.get((group, resource, namespace, name), ())]

    async def scan(self, start: int, end: int, limit: int) -> list[log.Event]:
        i = bisect_left(self.index.revisions, start)
        j = min(bisect_right(self.index.revisions, end), i + limit)
        return self.index.events[i:j]

    async def close(self) -> None:
        return None


class SqlSource:
    """A SQL event log read in place: a data dir's cplane.db or an SQLite file (read-only, see
    `_read_only_sqlite`), or a PostgreSQL URL (through the storage layer, after `_check_postgres`)."""

    def __init__(self, event_log: Any, *, description: str) -> None:
        self.log = event_log  # storage.sql.SqlEventLog, started
        self.description = description
        self._first = 0

    @property
    def first(self) -> int:
        return self._first

    @property
    def last(self) -> int:
        return int(self.log.revision)

    @property
    def compacted(self) -> int:
        return int(self.log.compacted_revision)

    async def _init(self) -> None:
        page = await self.log.scan(start=0, end=NO_END, limit=1)
        self._first = page[0].revision if page else 0

    async def list_at(self, kind: res.ResourceKind, namespace: str | None, revision: int) -> list[log.Event]:
        if revision == 0:
            return []
        result = await self.log.list_objects(group=kind.group, resource=kind.plural, namespace=namespace,
                                             revision=revision)
        return list(result.events)

    async def history(self, group: str, resource: str, namespace: str, name: str) -> list[log.Event]:
        return list(await self.log.history(group=group, resource=resource, namespace=namespace, name=name))

    async def scan(self, start: int, end: int, limit: int) -> list[log.Event]:
        return list(await self.log.scan(start=start, end=end, limit=limit))

    async def scan_matching(self, start: int, end: int, limit: int, *, name: str | None,
                            user: str | None) -> list[log.Event]:
        """As `scan`, only events of objects named `name` and/or by the user `user` (indexed)."""
        return list(await self.log.scan_matching(start=start, end=end, limit=limit, name=name, user=user))

    async def close(self) -> None:
        await self.log.close()


def _read_only_sqlite(path: Path) -> Any:
    """A `storage.sql.SqlEventLog` on an SQLite file, read-only: the storage layer's own reads (its
    SQL, its checks) over a stdlib sqlite3 connection opened with `mode=ro`. No engine and no
    migrations: opening costs milliseconds and cannot write; it reads alongside a live server (WAL)."""
    from storage import sql

    uri = path.resolve().as_uri() + "?mode=ro"

    class ReadOnlySqliteLog(sql.SqlEventLog):
        backend = "sqlite-read-only"

        def __init__(self) -> None:
            super().__init__()
            self._con: sqlite3.Connection | None = None

        async def _open(self) -> None:
            self._con = sqlite3.connect(uri, uri=True)

        async def _close_backend(self) -> None:
            if self._con is not None:
                self._con.close()
                self._con = None

        async def _read(self, sql_text: str, args: Sequence[Any]) -> list[Any]:
            assert self._con is not None
            return self._con.execute(sql_text, tuple(args)).fetchall()

        async def _begin_write(self) -> None:
            raise log.StorageError("this event log is opened read-only")

    return ReadOnlySqliteLog()


def _check_sqlite(path: Path, description: str) -> None:
    """Read-only: is this file a cplane event log? (Opening it through the storage layer would
    apply migrations, i.e. write, to whatever it is.)"""
    try:
        with path.open("rb") as f:
            head = f.read(16)
    except OSError as exc:
        raise SourceError(f"{description}: {exc.strerror or exc}") from None
    if head != b"SQLite format 3\x00":
        raise SourceError(f"{description}: not an SQLite database")
    try:
        con = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
        try:
            tables = {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            con.close()
    except sqlite3.Error as exc:
        raise SourceError(f"{description}: unreadable SQLite database ({exc})") from None
    if not {"events", "heads", "meta"} <= tables:
        raise SourceError(f"{description}: not a cplane event log (no events table)")


async def _check_postgres(url: str, description: str) -> None:
    import asyncpg
    import sqlalchemy as sa

    parsed = sa.make_url(url)
    schema = parsed.query.get("schema")
    plain = parsed.difference_update_query(["schema"]).set(drivername="postgresql")
    settings = {"search_path": str(schema)} if schema else {}
    try:
        con = await asyncpg.connect(plain.render_as_string(hide_password=False), server_settings=settings,
                                    timeout=10)
    except (OSError, asyncpg.PostgresError, TimeoutError) as exc:
        raise SourceError(f"{description}: cannot connect ({exc})") from None
    try:
        found = await con.fetchval("SELECT to_regclass('events') IS NOT NULL AND to_regclass('meta') IS NOT NULL")
    finally:
        await con.close()
    if not found:
        raise SourceError(f"{description}: not a cplane event log (no events table)")


def _sniff(path: Path, description: str) -> str:
    try:
        with path.open("rb") as f:
            head = f.read(16)
    except OSError as exc:
        raise SourceError(f"{description}: {exc.strerror or exc}") from None
    if head.startswith(b"SQLite format 3\x00"):
        return "sqlite"
    if not head.strip():
        raise SourceError(f"{description}: empty file: no events")
    return "ndjson"


def _open_path(path: Path, *, expect: str | None, description: str) -> Path | Recording:
    """A data dir or an SQLite file: the checked SQLite path; an NDJSON export: its Recording (file
    reads, so the caller runs this in a thread)."""
    if path.is_dir():
        if expect not in (None, "dir"):
            raise SourceError(f"{description}: is a directory")
        sqlite_path = path / "cplane.db"
        if not sqlite_path.is_file():
            raise SourceError(f"{description}: no event log in this directory (no cplane.db)")
        _check_sqlite(sqlite_path, str(sqlite_path))
        return sqlite_path
    if not path.exists():
        raise SourceError(f"{description}: no such file or directory")
    if expect == "dir":
        raise SourceError(f"{description}: not a directory")
    if _sniff(path, description) == "sqlite":
        _check_sqlite(path, description)
        return path
    with path.open("rb") as f:
        return Recording.from_ndjson(f, description=description)


def _describe(spec: str) -> str:
    from storage import factory

    return factory.shown(spec) if "://" in spec else spec


async def open_source(spec: str, *, expect: str | None = None, in_memory: bool = False) -> Source:
    """Open SOURCE: a data dir, a database URL, an SQLite file, an NDJSON file (`-`: stdin).
    `expect` ("dir" | "url" | "file") checks the kind the user said it is; `in_memory` loads SQL
    sources into a Recording too. Raises SourceError (nothing is written to a bad source)."""
    description = _describe(spec)
    sqlite_path: Path | None = None
    if spec == "-":
        return Recording.from_ndjson(sys.stdin.buffer, description="stdin")
    if "://" in spec:
        if expect not in (None, "url"):
            raise SourceError(f"{description}: expected a {expect}, got a URL")
        if spec.startswith("sqlite+aiosqlite:///"):
            sqlite_path = Path(spec.removeprefix("sqlite+aiosqlite:///"))
            _check_sqlite(sqlite_path, description)
        elif spec.startswith("postgresql+asyncpg://"):
            await _check_postgres(spec, description)
        else:
            raise SourceError(f"{description}: unsupported URL: use sqlite+aiosqlite:///PATH or "
                              "postgresql+asyncpg://USER@HOST:PORT/DB")
    else:
        found = await asyncio.to_thread(_open_path, Path(spec), expect=expect, description=description)
        if isinstance(found, Recording):
            return found
        sqlite_path = found
    if sqlite_path is not None:
        event_log = _read_only_sqlite(sqlite_path)
    else:
        from storage import factory

        event_log = factory.open_event_log(url=spec)
    try:
        await event_log.start()
    except Exception as exc:
        with contextlib.suppress(Exception):
            await event_log.close()
        raise SourceError(f"{description}: cannot open the event log ({exc})") from None
    source = SqlSource(event_log, description=description)
    keep = False
    try:
        await source._init()
        if in_memory:
            return await Recording.from_source(source)
        keep = True
        return source
    finally:
        if not keep:
            await source.close()


@contextlib.asynccontextmanager
async def opened(spec: str, *, expect: str | None = None, in_memory: bool = False) -> AsyncIterator[Source]:
    source = await open_source(spec, expect=expect, in_memory=in_memory)
    try:
        yield source
    finally:
        await source.close()


# -- reading helpers shared by the commands -------------------------------------------------------

def readable_range(source: Source) -> tuple[int, int]:
    """The revisions whose whole state can be read: (lowest, highest)."""
    lo = source.compacted + 1 if source.compacted else 0
    return lo, source.last


def check_revision(source: Source, revision: int) -> int:
    lo, hi = readable_range(source)
    if not lo <= revision <= hi:
        raise SourceError(f"revision {revision} is out of range: {source.description} holds revisions "
                          f"{lo}..{hi}" + (f" (history at or below {source.compacted} was compacted)"
                                           if source.compacted else ""))
    return revision


async def event_at_or_before(source: Source, revision: int) -> log.Event | None:
    if revision <= 0:
        return None
    page = await source.scan(revision, revision, 1)
    if page:
        return page[0]
    lo, hi = source.first, revision  # a compacted gap: search the nearest retained event below
    best: log.Event | None = None
    while lo <= hi:
        mid = (lo + hi) // 2
        page = await source.scan(mid, hi, 1)
        if page and page[0].revision <= revision:
            best = page[0]
            lo = page[0].revision + 1
        else:
            hi = mid - 1
    return best


async def revision_at_time(source: Source, when: float, *, strict: bool = False) -> int:
    """The last revision whose event time is <= `when` (< with `strict`); 0 if none.
    Event times are assumed to grow with revisions (they do, up to concurrent writes)."""
    lo, hi, best = source.first, source.last, 0
    if lo == 0:
        return 0
    while lo <= hi:
        mid = (lo + hi) // 2
        page = await source.scan(mid, hi, 1)
        if not page:
            hi = mid - 1
            continue
        ev = page[0]
        if ev.time < when or (not strict and ev.time == when):
            best = ev.revision
            lo = ev.revision + 1
        else:
            hi = mid - 1
    return best


async def cluster_time(source: Source, revision: int) -> float:
    """The cluster's clock at a revision: the last event's time, or the Clock object's if later."""
    ev = await event_at_or_before(source, revision)
    now = ev.time if ev is not None else time.time()
    clock_kind = res.by_group_resource(res.SIM_GROUP, "clocks")
    if clock_kind is not None and revision > 0:
        for c in await source.list_at(clock_kind, None, revision):
            with contextlib.suppress(Exception):
                now = max(now, sim.clock_time(_decode(c.object)))
    return now


# =============================================================================================
# Custom resources: the kinds the log's CustomResourceDefinitions define


CRDS = res.by_group_resource(crds.GROUP, crds.PLURAL)


def _serve(registry: res.Registry, definitions: Iterable[log.Event]) -> None:
    for ev in definitions:
        with contextlib.suppress(Exception):  # a definition the log holds but no server could serve
            kinds = crds.served_kinds(_decode(ev.object))
            if kinds:
                registry.set_custom(ev.name, kinds)


async def registry_at(source: Source, *revisions: int) -> res.Registry:
    """The resources served at the given revisions (default: the newest): the built-in ones and those
    of every established CustomResourceDefinition the log holds at one of them, as the server that
    wrote it served them (`cp.crd.custom.served_kinds`). Custom resources resolve by name through
    it, offline, as through a server's discovery online."""
    registry = res.Registry()
    assert CRDS is not None
    for revision in revisions or (source.last,):
        if revision > 0:
            _serve(registry, await source.list_at(CRDS, None, revision))
    return registry


async def registry_ever(source: Source) -> res.Registry:
    """As `registry_at`, with every definition the log ever held (the last version of each, its
    deletion included): an object of a resource whose definition was deleted since still resolves,
    for its history and events. Scans the whole log: asked only when a name did not resolve."""
    newest: dict[str, log.Event] = {}
    async for page in events_between(source, 0, source.last):
        for ev in page:
            if ev.group == crds.GROUP and ev.resource == crds.PLURAL:
                newest[ev.name] = ev
    registry = res.Registry()
    _serve(registry, newest.values())
    return registry


async def resolve_ref(source: Source, text: str, *, namespace: str | None = None,
                      ) -> tuple[res.ResourceKind, str, str]:
    """`res.parse_ref` among the log's resources (newest revision, then any definition ever held).
    Raises SourceError."""
    try:
        return res.parse_ref(text, namespace=namespace, kinds=(await registry_at(source)).kinds())
    except ValueError as exc:
        first = exc
    try:
        return res.parse_ref(text, namespace=namespace, kinds=(await registry_ever(source)).kinds())
    except ValueError:
        raise SourceError(str(first)) from None


async def resolve_resource(source: Source, text: str) -> res.ResourceKind:
    """`res.resolve_resource` among the log's resources, as `resolve_ref`. Raises SourceError."""
    try:
        return res.resolve_resource(text, kinds=(await registry_at(source)).kinds())
    except ValueError as exc:
        first = exc
    try:
        return res.resolve_resource(text, kinds=(await registry_ever(source)).kinds())
    except ValueError:
        raise SourceError(str(first)) from None


async def state_at(source: Source, revision: int, kinds: Sequence[res.ResourceKind],
                   namespace: str | None) -> list[tuple[res.ResourceKind, list[log.Event]]]:
    out: list[tuple[res.ResourceKind, list[log.Event]]] = []
    for kind in kinds:
        if namespace is not None and not kind.namespaced:
            out.append((kind, []))
            continue
        out.append((kind, await source.list_at(kind, namespace if kind.namespaced else None, revision)))
    return out


async def events_between(source: Source, start: int, end: int) -> AsyncIterator[list[log.Event]]:
    """Pages of retained events with start < revision <= end."""
    cursor = start
    while cursor < end:
        page = await source.scan(cursor + 1, end, SCAN_PAGE)
        if not page:
            return
        yield page
        cursor = page[-1].revision


async def events_matching(source: Source, start: int, end: int,
                          flt: EventFilter) -> AsyncIterator[list[log.Event]]:
    """Pages of retained events with start < revision <= end that may match `flt` (the caller still
    applies it). A SQL source with a name or user filter reads only those events, through their
    indexes; any other source or filter pages through every event (`events_between`)."""
    if not isinstance(source, SqlSource) or (flt.name is None and flt.user is None):
        async for page in events_between(source, start, end):
            yield page
        return
    cursor = start
    while cursor < end:
        page = await source.scan_matching(cursor + 1, end, SCAN_PAGE, name=flt.name, user=flt.user)
        if not page:
            return
        yield page
        if len(page) < SCAN_PAGE:
            return
        cursor = page[-1].revision


def parse_when(text: str) -> int | float:
    """`--since/--until`: an integer is a revision, anything else an RFC 3339 time (unix seconds)."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return clocks.parse_time(text)
    except ValueError:
        raise SourceError(f'"{text}" is neither a revision nor an RFC 3339 time') from None


async def fork_point(a: Source, b: Source) -> int:
    """The last revision up to which both logs hold the same events (0: they differ from the start)."""
    end = min(a.last, b.last)
    cursor = 0
    agreed = 0
    while cursor < end:
        pa = await a.scan(cursor + 1, end, SCAN_PAGE)
        pb = await b.scan(cursor + 1, end, SCAN_PAGE)
        for ea, eb in zip(pa, pb, strict=False):
            if ea != eb:
                return agreed
            agreed = ea.revision
        if len(pa) != len(pb):
            return agreed
        if not pa:
            break
        cursor = pa[-1].revision
    return end if agreed == end or cursor >= end else agreed


class EventFilter(msgspec.Struct, kw_only=True):
    kind: res.ResourceKind | None = None
    namespace: str | None = None
    name: str | None = None
    actor: str | None = None
    user: str | None = None
    type: str | None = None
    since_time: float | None = None
    until_time: float | None = None

    def __call__(self, ev: log.Event) -> bool:
        if self.kind is not None and (ev.group != self.kind.group or ev.resource != self.kind.plural):
            return False
        if self.namespace is not None and ev.namespace != self.namespace:
            return False
        if self.name is not None and ev.name != self.name:
            return False
        if self.type is not None and ev.type != self.type:
            return False
        if self.actor is not None and not ev.actor.matches(self.actor):
            return False
        if self.user is not None and ev.actor.user != self.user:
            return False
        if self.since_time is not None and ev.time < self.since_time:
            return False
        return not (self.until_time is not None and ev.time > self.until_time)


async def follow(source: Source, after: int, *, interval: float = 0.25,
                 stop: asyncio.Event | None = None) -> AsyncIterator[list[log.Event]]:
    """Pages of new events as a live SQL log grows (polling), until `stop` is set."""
    if isinstance(source, Recording):
        raise SourceError(f"{source.description}: --follow needs a data dir or a database URL")
    cursor = after
    while stop is None or not stop.is_set():
        page = await source.scan(cursor + 1, NO_END, SCAN_PAGE)
        if page:
            cursor = page[-1].revision
            yield page
            continue
        if stop is None:
            await asyncio.sleep(interval)
        else:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), interval)
