"""Replay: the Kubernetes API over a recorded event log, at any revision — and the readers behind
`cplane log show|history|diff|events`. User guide: docs/replay.md.

Sources (`open_source`): a data dir (its cplane.db), a database URL, an SQLite file or an NDJSON export.
- `SqlSource` reads a SQL event log in place: time-travel lists, one object's history and revision
  scans are indexed queries, so the `log` commands stay fast on logs of millions of events. It is
  opened only after a read-only check that the database really is a cplane event log, so a wrong
  source is never migrated or written.
- `Recording` is a whole log in memory, indexed by revision, by object and by resource. NDJSON is
  validated line by line with the checks of `cplane log import` (a truncated or foreign file fails
  with its line number, before anything is served).

The replay server (`serving`):
- `ReplayLog` is a `storage.log.EventLog` over a Recording whose visible revision is the replay
  *cursor*: reads at or below it (time travel below it works as on a live server), subscriptions fed
  as it advances, with the recorded bytes, so watches see exactly the recorded events with their
  original resourceVersions. The server's VirtualClock follows the recording: the time of the last
  applied event, and the `sim.cplane.dev` Clock object where the recording has one.
- `Replayer` moves the cursor: `step(n)`, `until(revision | object | time)`, `play(speed)` at the
  recorded pace (gaps between event times divided by the speed; `inf` = as fast as possible) and
  `pause()`. Until it forks, writes are refused with 405. `fork()` turns the server into a live,
  writable cluster branching from the recording at the cursor: later recorded events are dropped from
  this server's view and new writes get revisions cursor+1, cursor+2... It happens on reaching
  `fork_at`, on `POST {CONTROL}/fork` (with `fork_on_write` or `fork_at`), or with `fork_on_write` on
  the first write.
- Control endpoints under the sandbox group: `GET {CONTROL}` (status), `POST {CONTROL}/step?count=N`,
  `POST {CONTROL}/until?revision=R|object=pods/default/web|time=T`, `POST {CONTROL}/play?speed=X`,
  `POST {CONTROL}/pause`, `POST {CONTROL}/fork`, and `GET {CONTROL}/events?since=R` (the visible log
  as NDJSON, e.g. to save a fork's branch).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import math
import sqlite3
import sys
import tempfile
import time
from bisect import bisect_left, bisect_right
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol

import msgspec
import structlog

from cp import clock as clocks
from cp import errors, logview, sim
from cp import resources as res
from storage import codec, log

if TYPE_CHECKING:  # the server stack is imported only to serve (the `log` commands stay light)
    from aiohttp import web

_logger = structlog.get_logger("cplane.replay")
_decode = msgspec.json.Decoder().decode
_encode = msgspec.json.Encoder().encode

CONTROL = f"/apis/{res.SIM_GROUP}/{res.SIM_VERSION}/replay"
WRITES_REFUSED = "this server replays a recording; writes are refused (start it with --fork to branch)"
SCAN_PAGE = 5000
MAX_BATCH = 5000  # events per subscription batch (one watch write)
PLAY_CHUNK = 2000  # events applied per step of the player at full speed
NO_END = 1 << 62
NEWLINE = b"\n"
CLOCK_KEY = (res.SIM_GROUP, "clocks", "", sim.CLOCK_NAME)

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
    """A whole recorded log in memory (immutable once loaded); a `Source`, and what replays serve from."""

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

    async def close(self) -> None:
        await self.log.close()


def _read_only_sqlite(path: Path) -> Any:
    """A `storage.sql.SqlEventLog` on an SQLite file, read-only: the storage layer's own reads (its
    SQL, its checks) over a stdlib sqlite3 connection opened with `mode=ro`. No engine and no
    migrations: opening costs milliseconds and cannot write; it reads alongside a live server (WAL)."""
    from storage import sql

    class ReadOnlySqliteLog(sql.SqlEventLog):
        backend = "sqlite-read-only"

        def __init__(self) -> None:
            super().__init__()
            self._con: sqlite3.Connection | None = None

        async def _open(self) -> None:
            self._con = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)

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


def _describe(spec: str) -> str:
    if "://" in spec:
        import sqlalchemy as sa

        try:
            return sa.make_url(spec).render_as_string(hide_password=True)
        except Exception:
            return spec
    return spec


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
        path = Path(spec)
        if path.is_dir():
            if expect not in (None, "dir"):
                raise SourceError(f"{description}: is a directory")
            sqlite_path = path / "cplane.db"
            if not sqlite_path.is_file():
                raise SourceError(f"{description}: no event log in this directory (no cplane.db)")
            _check_sqlite(sqlite_path, str(sqlite_path))
        elif path.exists():
            if expect == "dir":
                raise SourceError(f"{description}: not a directory")
            if _sniff(path, description) == "sqlite":
                sqlite_path = path
                _check_sqlite(path, description)
            else:
                with path.open("rb") as f:
                    return Recording.from_ndjson(f, description=description)
        else:
            raise SourceError(f"{description}: no such file or directory")
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


async def state_at(source: Source, revision: int, kinds: Sequence[res.ResourceKind],
                   namespace: str | None) -> list[tuple[res.ResourceKind, list[log.Event]]]:
    out = []
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


# =============================================================================================
# The replay EventLog


class ReadOnlyError(log.StorageError):
    """A write reached a replay that has not forked."""


class _ReplaySub:
    """A subscription over the index: no buffer to overflow, never dropped; it reads the recorded
    events between what it delivered and the cursor."""

    def __init__(self, owner: ReplayLog, *, group: str, resource: str, namespace: str | None, after: int) -> None:
        self._owner = owner
        self._gr = (group, resource)
        self._namespace = namespace
        self._last = after
        self._closed = False

    def _revisions(self) -> list[int]:
        index = self._owner._index
        if self._namespace is None:
            return index.by_resource.get(self._gr, [])
        return index.by_namespace.get((*self._gr, self._namespace), [])

    @property
    def revision(self) -> int:
        revs = self._revisions()
        cursor = self._owner.revision
        if bisect_right(revs, cursor) <= bisect_right(revs, self._last):
            return max(self._last, cursor)
        return self._last

    def _take(self) -> list[log.Event]:
        revs = self._revisions()
        cursor = self._owner.revision
        lo = bisect_right(revs, self._last)
        hi = len(revs) if revs and revs[-1] <= cursor else bisect_right(revs, cursor)
        if lo >= hi:
            return []
        hi = min(hi, lo + MAX_BATCH)
        event = self._owner._index.event
        batch = [event(r) for r in revs[lo:hi]]
        self._last = batch[-1].revision
        return batch

    async def next_batch(self, *, timeout: float | None) -> list[log.Event] | None:
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            if self._closed or self._owner._closed:
                return None
            batch = self._take()
            if batch:
                return batch
            changed = self._owner._changed
            if deadline is None:
                await changed.wait()
                continue
            remaining = deadline - loop.time()
            if remaining <= 0:
                return []
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), remaining)

    def close(self) -> None:
        self._closed = True


class ReplayLog:
    """`storage.log.EventLog` over a Recording; the visible revision is the cursor (see module doc)."""

    def __init__(self, recording: Recording, *, start: int | None = None, until: int | None = None,
                 clock: clocks.VirtualClock | None = None) -> None:
        self.recording = recording
        self._index = recording.index
        # A replay may start at the compacted revision itself: the state there is whole (compaction
        # keeps the newest version of every live key), only reads *at* it are refused, as live.
        lo, hi = recording.compacted, recording.last
        self._compacted = recording.compacted
        self._cursor = lo if start is None else start
        self.end = hi if until is None else until
        if not lo <= self._cursor <= self.end <= hi:
            raise SourceError(f"out of range: --from {self._cursor} --until {self.end}: "
                              f"{recording.description} replays from revision {lo} to {hi}")
        self.start_revision = self._cursor
        self.clock = clock
        self.forked_at: int | None = None
        self._changed = asyncio.Event()
        self._closed = False
        self._follow_clock()

    # -- the cursor --------------------------------------------------------------------------------

    @property
    def revision(self) -> int:
        return self._cursor

    @property
    def compacted_revision(self) -> int:
        return self._compacted

    def last_change(self, *, group: str, resource: str) -> int:
        return self._cursor  # the cursor moves both ways (seek): treat everything as just changed

    async def wait_for_revision(self, *, revision: int) -> None:
        while self._cursor < revision:  # the player (or a forked write) moves the cursor
            if self._closed:
                raise log.StorageError("event log closed")
            await self._changed.wait()

    @property
    def forked(self) -> bool:
        return self.forked_at is not None

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def next_revisions(self, count: int) -> list[int]:
        """The next `count` recorded revisions after the cursor, within `end`."""
        if self.forked:
            return []
        revs = self._index.revisions
        i = self._index.position(self._cursor)
        j = min(i + count, self._index.position(self.end))
        return revs[i:j]

    def next_event(self) -> log.Event | None:
        nxt = self.next_revisions(1)
        return self._index.event(nxt[0]) if nxt else None

    def next_of(self, key: Key) -> int | None:
        """The revision of the object's next recorded event after the cursor, within `end`."""
        revs = self._index.by_key.get(key) or []
        i = bisect_right(revs, self._cursor)
        return revs[i] if i < len(revs) and revs[i] <= self.end else None

    def last_at_time(self, when: float, *, limit: int) -> int:
        """The cursor target that applies the next events whose time is <= `when` (at most `limit`)."""
        events = self._index.events
        i = self._index.position(self._cursor)
        stop = min(self._index.position(self.end), i + limit)
        target = self._cursor
        while i < stop and events[i].time <= when:
            target = events[i].revision
            i += 1
        return target

    def time_at_cursor(self) -> float:
        i = self._index.position(self._cursor)
        if i > 0:
            return self._index.events[i - 1].time
        return self._index.events[0].time if self._index.events else time.time()

    def advance_to(self, revision: int) -> int:
        """Move the cursor forward to `revision` (clamped to `end`); returns how many events applied."""
        if self.forked:
            raise ReadOnlyError("the replay has forked: it no longer follows the recording")
        target = min(revision, self.end)
        if target <= self._cursor:
            return 0
        applied = self._index.position(target) - self._index.position(self._cursor)
        self._cursor = target
        self._follow_clock()
        self._notify()
        return applied

    def _follow_clock(self) -> None:
        if self.clock is None:
            return
        when = self.time_at_cursor()
        clock_ev = self._index.latest(CLOCK_KEY, self._cursor)
        if clock_ev is not None:
            with contextlib.suppress(Exception):
                when = max(when, sim.clock_time(_decode(clock_ev.object)))
        self.clock.set(when)

    def has_clock_object(self) -> bool:
        return self._index.latest(CLOCK_KEY, self._cursor) is not None

    def fork(self) -> int:
        """Branch at the cursor: drop later recorded events from view and accept writes."""
        if self.forked_at is None:
            self._index = self._index.truncated(self._cursor)
            self.forked_at = self._cursor
            self.end = NO_END
            self._notify()
        return self.forked_at

    def visible(self, after: int, *, limit: int | None = None) -> list[log.Event]:
        """The events with after < revision <= cursor (at most `limit`)."""
        i = self._index.position(after)
        j = self._index.position(self._cursor)
        return self._index.events[i:j if limit is None else min(j, i + limit)]

    def remaining(self) -> int:
        """Recorded events still to replay (0 once forked)."""
        if self.forked:
            return 0
        return self._index.position(self.end) - self._index.position(self._cursor)

    # -- EventLog ------------------------------------------------------------------------------------

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        self._closed = True
        self._notify()

    def _check(self, revision: int | None) -> int:
        if revision is None:
            return self._cursor
        if revision > self._cursor:
            raise log.FutureRevisionError(f"revision {revision} is newer than the replay's revision {self._cursor}",
                                          requested=revision, current=self._cursor)
        if revision <= self._compacted:
            raise log.ExpiredError(f"revision {revision} is compacted (compacted revision {self._compacted})",
                                   requested=revision, compacted=self._compacted)
        return revision

    async def append(self, write: log.Write) -> log.Event:
        if not self.forked:
            raise ReadOnlyError(WRITES_REFUSED)
        key = (write.group, write.resource, write.namespace, write.name)
        current = self._index.latest(key, self._cursor)
        if write.type == "ADDED":
            if write.expected_revision != 0:
                raise ValueError("ADDED needs expected_revision 0")
            if current is not None:
                raise log.ConflictError("key exists", current=current)
        elif current is None or current.revision != write.expected_revision:
            raise log.ConflictError("revision mismatch", current=current)
        revision = self._cursor + 1
        obj, uid = codec.stamp(write, revision=revision)
        revs = self._index.by_key.get(key)
        event = codec.event_from_write(write, revision=revision, prev_revision=revs[-1] if revs else 0,
                                       obj=obj, uid=uid)
        self._index.add(event)
        self._cursor = revision
        self._notify()
        return event

    async def get(self, *, group: str, resource: str, namespace: str, name: str,
                  revision: int | None = None) -> log.Event | None:
        return self._index.latest((group, resource, namespace, name), self._check(revision))

    async def list_objects(self, *, group: str, resource: str, namespace: str | None,
                           revision: int | None = None, start_after: tuple[str, str] | None = None,
                           limit: int | None = None) -> log.ListResult:
        at = self._check(revision)
        events, more = self._index.list_at(group, resource, namespace, at, start_after=start_after, limit=limit)
        return log.ListResult(events=events, revision=at, more=more)

    async def history(self, *, group: str, resource: str, namespace: str, name: str) -> list[log.Event]:
        revs = self._index.by_key.get((group, resource, namespace, name)) or []
        return [self._index.event(r) for r in revs[:bisect_right(revs, self._cursor)]]

    async def after(self, revision: int, *, limit: int = 1000) -> list[log.Event]:
        if revision < self._compacted:
            raise log.ExpiredError(f"revision {revision} is compacted (compacted revision {self._compacted})",
                                   requested=revision, compacted=self._compacted)
        return self.visible(revision, limit=limit)

    async def subscribe(self, *, group: str, resource: str, namespace: str | None,
                        after: int) -> log.Subscription:
        if after < self._compacted:
            raise log.ExpiredError(f"revision {after} is compacted (compacted revision {self._compacted})",
                                   requested=after, compacted=self._compacted)
        return _ReplaySub(self, group=group, resource=resource, namespace=namespace, after=after)

    async def compact(self, revision: int) -> None:
        return None  # a replay keeps everything it was given


# =============================================================================================
# The player


def _summary(ev: log.Event) -> dict[str, Any]:
    return {"revision": ev.revision, "type": ev.type, "object": logview.event_ref(ev),
            "time": logview.format_time(ev.time), "actor": logview.actor_text(ev.actor)}


ForkHook = Callable[[int], None]


class Replayer:
    """Moves a ReplayLog's cursor: steps, untils, paced play; forks (see module doc)."""

    def __init__(self, replay_log: ReplayLog, *, speed: float | None = 1.0, pacer: clocks.Clock | None = None,
                 fork_on_write: bool = False, fork_at: int | None = None, max_gap: float | None = None) -> None:
        if speed is not None and not speed > 0:
            raise ValueError("speed must be > 0")
        if fork_at is not None and not replay_log.revision <= fork_at <= replay_log.end:
            raise SourceError(f"--fork-at {fork_at} is out of range: the replay runs from "
                              f"{replay_log.revision} to {replay_log.end}")
        self.log = replay_log
        self.speed = speed if speed is not None else 1.0
        self._autoplay = speed is not None
        self.pacer = pacer or clocks.RealClock()
        self.fork_on_write = fork_on_write  # the first write forks (--fork)
        self.fork_allowed = fork_on_write or fork_at is not None  # POST .../fork may fork
        self.fork_at = fork_at
        self.max_gap = max_gap
        self.on_fork: list[ForkHook] = []
        self._task: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    # -- lifecycle -----------------------------------------------------------------------------------

    def start(self) -> None:
        if self.fork_at is not None and self.log.revision >= self.fork_at:
            self._fork()
        elif self._autoplay:
            self.play(self.speed)

    async def close(self) -> None:
        self.pause()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()

    def spawn(self, coro: Awaitable[Any], *, name: str) -> asyncio.Task[Any]:
        """A task that lives as long as the replayer (closed with it)."""
        task = asyncio.ensure_future(coro)
        task.set_name(name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # -- state -----------------------------------------------------------------------------------------

    @property
    def playing(self) -> bool:
        return self._task is not None and not self._task.done()

    @property
    def mode(self) -> str:
        if self.log.forked:
            return "forked"
        if self.playing:
            return "playing"
        if self.log.revision >= self.log.end:
            return "finished"
        return "paused"

    def status(self, *, applied: Sequence[log.Event] = ()) -> dict[str, Any]:
        rlog = self.log
        nxt = rlog.next_event()
        rec = rlog.recording
        out: dict[str, Any] = {
            "kind": "ReplayStatus", "apiVersion": f"{res.SIM_GROUP}/{res.SIM_VERSION}",
            "source": rec.description, "mode": self.mode, "speed": self.speed if math.isfinite(self.speed) else "max",
            "revision": rlog.revision, "time": logview.format_time(rlog.clock.now()) if rlog.clock else None,
            "first": rec.first, "last": rec.last, "from": rlog.start_revision,
            "until": None if rlog.forked else rlog.end,
            "remaining": rlog.remaining(),
            "forkOnWrite": self.fork_on_write, "forkAt": self.fork_at, "forkedAt": rlog.forked_at,
            "next": _summary(nxt) if nxt is not None else None,
        }
        if applied:
            out["applied"] = len(applied)
            out["events"] = [_summary(ev) for ev in applied[-100:]]
        return out

    # -- moving --------------------------------------------------------------------------------------

    def _refuse_if_forked(self) -> None:
        if self.log.forked:
            raise errors.Conflict(f"the replay forked at revision {self.log.forked_at}: it is a live cluster now "
                                  "and no longer follows the recording")

    def _advance(self, target: int) -> list[log.Event]:
        """Apply the recorded events up to `target` (stopping at `fork_at`, and forking there)."""
        if self.fork_at is not None:
            target = min(target, self.fork_at)
        before = self.log.revision
        self.log.advance_to(target)
        applied = self.log.visible(before)
        if self.fork_at is not None and self.log.revision >= self.fork_at:
            self._fork()
        return applied

    def step(self, count: int = 1) -> list[log.Event]:
        self._refuse_if_forked()
        if count < 1:
            raise errors.BadRequest("count must be >= 1")
        self.pause()
        nxt = self.log.next_revisions(count)
        return self._advance(nxt[-1]) if nxt else []

    def until_revision(self, revision: int) -> list[log.Event]:
        self._refuse_if_forked()
        if revision < self.log.revision:
            raise errors.BadRequest(f"revision {revision} is behind the replay (at {self.log.revision}); "
                                    "a replay only moves forward: restart it with --from")
        if revision > self.log.end:
            raise errors.BadRequest(f"revision {revision} is beyond the end of the replay ({self.log.end})")
        self.pause()
        return self._advance(revision)

    def until_object(self, key: Key) -> list[log.Event]:
        self._refuse_if_forked()
        nxt = self.log.next_of(key)
        if nxt is None:
            raise errors.NotFound(f"no later event of {logview.ref(*key)} in the recording "
                                  f"(after revision {self.log.revision})")
        self.pause()
        return self._advance(nxt)

    def until_time(self, when: float) -> list[log.Event]:
        self._refuse_if_forked()
        self.pause()
        return self._advance(self.log.last_at_time(when, limit=NO_END))

    def play(self, speed: float | None = None) -> None:
        self._refuse_if_forked()
        if speed is not None:
            if not speed > 0:
                raise errors.BadRequest("speed must be > 0 (inf: as fast as possible)")
            self.speed = speed
        if not self.playing:
            self._task = self.spawn(self._play(), name="replay:player")

    def pause(self) -> None:
        task, self._task = self._task, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()

    async def _play(self) -> None:
        while self._task is asyncio.current_task() and not self.log.forked:
            nxt = self.log.next_event()
            if nxt is None:
                break
            if not math.isfinite(self.speed):
                self._advance(self.log.next_revisions(PLAY_CHUNK)[-1])
                await asyncio.sleep(0)
                continue
            gap = max(0.0, nxt.time - self.log.time_at_cursor())
            if self.max_gap is not None:
                gap = min(gap, self.max_gap)
            wait = gap / self.speed
            if wait > 0:
                await self.pacer.sleep(wait)
                if self._task is not asyncio.current_task():
                    break
            self._advance(max(nxt.revision, self.log.last_at_time(nxt.time, limit=PLAY_CHUNK)))
            if wait <= 0:
                await asyncio.sleep(0)
        if self._task is asyncio.current_task():
            self._task = None

    def fork(self) -> int:
        """Become a live cluster at the cursor (idempotent). Runs the `on_fork` hooks once."""
        if self.log.forked:
            return self.log.forked_at  # type: ignore[return-value]
        if not self.fork_allowed:
            raise errors.MethodNotAllowed(WRITES_REFUSED)
        return self._fork()

    def _fork(self) -> int:
        self.pause()
        revision = self.log.fork()
        _logger.info("replay_forked", revision=revision)
        clock = self.log.clock
        if clock is not None and not self.log.has_clock_object():
            self.spawn(_tick(clock), name="replay:clock")  # a wall-time recording: time moves on
        for hook in self.on_fork:
            hook(revision)
        return revision


async def _tick(clock: clocks.VirtualClock, interval: float = 0.05) -> None:
    """After a fork of a wall-time recording: the clock runs on from the fork's time at wall speed."""
    loop = asyncio.get_running_loop()
    base, started = clock.now(), loop.time()
    while True:
        await asyncio.sleep(interval)
        clock.set(base + loop.time() - started)


# =============================================================================================
# HTTP: control endpoints and the write guard


def _json_response(body: dict[str, Any]) -> web.Response:
    from api import codec as api_codec

    return api_codec.json_response(_encode(body))


def _int_param(request: web.Request, name: str, default: int | None = None) -> int | None:
    value = request.query.get(name)
    if value in (None, ""):
        return default
    try:
        return int(value)  # type: ignore[arg-type]
    except ValueError:
        raise errors.BadRequest(f'{name}: invalid value "{value}": must be an integer') from None


def control_routes(replayer: Replayer) -> list[web.RouteDef]:
    from aiohttp import web

    async def status(request: web.Request) -> web.StreamResponse:
        return _json_response(replayer.status())

    async def step(request: web.Request) -> web.StreamResponse:
        count = _int_param(request, "count", 1)
        assert count is not None
        return _json_response(replayer.status(applied=replayer.step(count)))

    async def until(request: web.Request) -> web.StreamResponse:
        q = request.query
        given = [k for k in ("revision", "object", "time") if q.get(k)]
        if len(given) != 1:
            raise errors.BadRequest("until needs exactly one of revision=R, object=RESOURCE/NAMESPACE/NAME "
                                    "or time=RFC3339")
        if given[0] == "revision":
            revision = _int_param(request, "revision")
            assert revision is not None
            applied = replayer.until_revision(revision)
        elif given[0] == "object":
            try:
                kind, namespace, name = logview.parse_ref(q["object"])
            except ValueError as exc:
                raise errors.BadRequest(str(exc)) from None
            applied = replayer.until_object((kind.group, kind.plural, namespace, name))
        else:
            try:
                when = clocks.parse_time(q["time"])
            except ValueError:
                raise errors.BadRequest(f'time: invalid RFC 3339 time "{q["time"]}"') from None
            applied = replayer.until_time(when)
        return _json_response(replayer.status(applied=applied))

    async def play(request: web.Request) -> web.StreamResponse:
        text = request.query.get("speed")
        speed = None
        if text:
            try:
                speed = parse_speed(text)
            except ValueError as exc:
                raise errors.BadRequest(str(exc)) from None
        replayer.play(speed)
        return _json_response(replayer.status())

    async def pause(request: web.Request) -> web.StreamResponse:
        replayer.pause()
        return _json_response(replayer.status())

    async def fork(request: web.Request) -> web.StreamResponse:
        replayer.fork()
        return _json_response(replayer.status())

    async def events(request: web.Request) -> web.StreamResponse:
        since = _int_param(request, "since", 0) or 0
        resp = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
        await resp.prepare(request)
        batch = replayer.log.visible(since)
        for i in range(0, len(batch), SCAN_PAGE):
            await resp.write(b"".join(logview.event_ndjson(ev) for ev in batch[i:i + SCAN_PAGE]))
        await resp.write_eof()
        return resp

    return [web.get(CONTROL, status), web.get(CONTROL + "/", status),
            web.post(CONTROL + "/step", step), web.post(CONTROL + "/until", until),
            web.post(CONTROL + "/play", play), web.post(CONTROL + "/pause", pause),
            web.post(CONTROL + "/fork", fork), web.get(CONTROL + "/events", events)]


_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def write_guard(replayer: Replayer) -> Any:
    """Middleware: refuse writes (405) until the replay forks; with `fork_on_write`, a write forks it."""
    from aiohttp import web

    @web.middleware
    async def guard(request: web.Request, handler: Any) -> web.StreamResponse:
        if request.method in _SAFE_METHODS or replayer.log.forked or request.path.startswith(CONTROL):
            return await handler(request)
        if not replayer.fork_on_write:
            if replayer.fork_at is not None:
                raise errors.MethodNotAllowed(f"this server replays a recording; writes are refused until it forks "
                                              f"at revision {replayer.fork_at} (--fork-at); it is at "
                                              f"{replayer.log.revision}")
            raise errors.MethodNotAllowed(WRITES_REFUSED)
        replayer.fork()
        return await handler(request)

    return guard


def parse_speed(text: str) -> float:
    if text.strip().lower() in ("max", "inf", "infinity"):
        return math.inf
    try:
        speed = float(text)
    except ValueError:
        raise ValueError(f'invalid speed "{text}": a positive number, or "max"') from None
    if not speed > 0:
        raise ValueError(f'invalid speed "{text}": a positive number, or "max"')
    return speed


# =============================================================================================
# Serving


@dataclasses.dataclass(frozen=True, kw_only=True)
class ReplayServer:
    url: str
    port: int
    kubeconfig: Path
    replayer: Replayer
    log: ReplayLog
    clock: clocks.VirtualClock
    app: web.Application


@contextlib.asynccontextmanager
async def serving(recording: Recording, *, data_dir: Path, host: str = "127.0.0.1", port: int = 0,
                  start: int | None = None, until: int | None = None, speed: float | None = 1.0,
                  pacer: clocks.Clock | None = None, fork: bool = False, fork_at: int | None = None,
                  max_gap: float | None = None) -> AsyncIterator[ReplayServer]:
    """Serve the Kubernetes API over `recording` from revision `start` (default: its beginning).
    `speed` None: paused (step mode). Raises SourceError for out-of-range revisions."""
    from api import server as servers

    clock = clocks.VirtualClock(start=0.0)
    rlog = ReplayLog(recording, start=start, until=until, clock=clock)
    replayer = Replayer(rlog, speed=speed, pacer=pacer, fork_on_write=fork, fork_at=fork_at, max_gap=max_gap)
    options = {"bootstrap_objects": False, "middlewares": [write_guard(replayer)],
               "routes": control_routes(replayer)}
    try:
        async with servers.running(data_dir=data_dir, host=host, port=port, clock=clock, event_log=rlog,
                                   app_options=options) as srv:
            replayer.start()
            try:
                yield ReplayServer(url=srv.url, port=srv.port, kubeconfig=srv.kubeconfig, replayer=replayer,
                                   log=rlog, clock=clock, app=srv.app)
            finally:
                await replayer.close()
    finally:
        await rlog.close()


# =============================================================================================
# Commands (`cplane log show|history|diff|events`, `cplane replay ...`); parsers live in cp/cli.py


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


def _kinds(resource: str | None) -> list[res.ResourceKind]:
    if resource:
        try:
            return [logview.resolve_resource(resource)]
        except ValueError as exc:
            raise SourceError(str(exc)) from None
    return list(res.KINDS)


async def _target_revision(source: Source, at: int | None, at_time: str | None) -> int:
    if at is not None and at_time is not None:
        raise SourceError("give --at or --at-time, not both")
    if at_time is not None:
        when = parse_when(at_time)
        if isinstance(when, int):
            raise SourceError(f'--at-time "{at_time}" is not an RFC 3339 time')
        revision = await revision_at_time(source, when)
        if revision == 0 and source.compacted:
            raise SourceError(f"no event at or before {at_time} in {source.description}")
        return check_revision(source, revision)
    return check_revision(source, source.last if at is None else at)


async def log_show(args: argparse.Namespace) -> int:
    spec, expect = _source_spec(args)
    kinds = _kinds(args.resource)
    async with opened(spec, expect=expect) as source:
        revision = await _target_revision(source, args.at, args.at_time)
        namespace = None if args.all_namespaces else args.namespace
        groups = await state_at(source, revision, kinds, namespace)
        now = await cluster_time(source, revision)
    fmt = args.output
    if fmt == "name":  # names need no decoding
        _note(f"# {source.description} at revision {revision} ({logview.format_time(now)})")
        _out("".join(f"{logview.kind_prefix(kind)}/{ev.name}\n" for kind, evs in groups for ev in evs))
        return 0
    from cp import tables  # here only: `log history|events` start faster without it

    with tables.collector_paused():  # decoding thousands of objects at once
        decoded = [(kind, [_decode(ev.object) for ev in evs]) for kind, evs in groups]
    total = sum(len(objs) for _, objs in decoded)
    if fmt in ("yaml", "json"):
        body = logview.list_object((o for _, objs in decoded for o in objs), revision=revision)
        _out(logview.yaml_text(body) if fmt == "yaml" else logview.json_text(body))
        return 0
    _note(f"# {source.description} at revision {revision} ({logview.format_time(now)})")
    if total == 0:
        where = f" in {namespace} namespace" if namespace else ""
        _note(f"No resources found{where} at revision {revision}.")
        return 0
    with tables.collector_paused():
        text = logview.tables_text(decoded, now=now, wide=fmt == "wide", all_namespaces=namespace is None)
    _out(text)
    return 0


async def log_history(args: argparse.Namespace) -> int:
    spec, expect = _source_spec(args)
    try:
        kind, namespace, name = logview.parse_ref(args.object, namespace=args.namespace)
    except ValueError as exc:
        raise SourceError(str(exc)) from None
    async with opened(spec, expect=expect) as source:
        events = await source.history(kind.group, kind.plural, namespace, name)
    if not events:
        raise SourceError(f"{logview.ref(kind.group, kind.plural, namespace, name)}: no events in "
                          f"{source.description}")
    if args.output == "ndjson":
        sys.stdout.buffer.write(b"".join(logview.event_ndjson(ev) for ev in events))
        return 0
    _out(logview.history_text(events, [_decode(ev.object) for ev in events], all_fields=args.all_fields))
    return 0


async def _state_map(source: Source, revision: int, kinds: Sequence[res.ResourceKind],
                     namespace: str | None) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for _kind, evs in await state_at(source, revision, kinds, namespace):
        for ev in evs:
            out[logview.event_ref(ev)] = _decode(ev.object)
    return out


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


async def log_diff(args: argparse.Namespace) -> int:
    spec, expect = _source_spec(args)
    revisions: list[int] = []
    resource: str | None = None
    for item in args.items:
        try:
            revisions.append(int(item))
        except ValueError:
            if resource is not None:
                raise SourceError(f"one RESOURCE at most (got {resource} and {item})") from None
            resource = item
    kinds = _kinds(resource)
    namespace = args.namespace
    async with opened(spec, expect=expect) as source:
        if args.against:
            if len(revisions) > 1:
                raise SourceError("with --against give at most one REV (read in both sources)")
            async with opened(args.against) as other:
                point = await fork_point(source, other)
                if revisions:
                    rev_a = rev_b = revisions[0]
                elif args.at_time:
                    when = parse_when(args.at_time)
                    rev_a = await revision_at_time(source, float(when))
                    rev_b = await revision_at_time(other, float(when))
                else:
                    rev_a, rev_b = source.last, other.last
                check_revision(source, rev_a)
                check_revision(other, rev_b)
                after = await _state_map(source, rev_a, kinds, namespace)
                before = await _state_map(other, rev_b, kinds, namespace)
            title = (f"{other.description} (revision {rev_b}) -> {source.description} (revision {rev_a}); "
                     f"identical up to revision {point}")
            extra: dict[str, Any] = {"forkPoint": point, "from": {"source": other.description, "revision": rev_b},
                                     "to": {"source": source.description, "revision": rev_a}}
        else:
            if len(revisions) != 2:
                raise SourceError("give two revisions: cplane log diff REV1 REV2 [RESOURCE] "
                                  "(or --against OTHER_SOURCE)")
            rev1, rev2 = check_revision(source, revisions[0]), check_revision(source, revisions[1])
            before = await _state_map(source, rev1, kinds, namespace)
            after = await _state_map(source, rev2, kinds, namespace)
            title = f"revision {rev1} -> revision {rev2}"
            extra = {"from": rev1, "to": rev2}
    d = logview.state_diff(before, after, all_fields=args.all_fields)
    if args.output == "json":
        _out(logview.json_text(logview.state_diff_json(d, **extra)))
    else:
        _out(logview.state_diff_text(d, title=title, details=not args.brief))
    return 0


class EventFilter(msgspec.Struct, kw_only=True):
    kind: res.ResourceKind | None = None
    namespace: str | None = None
    name: str | None = None
    actor: str | None = None
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
        if self.actor is not None and not logview.actor_matches(ev.actor, self.actor):
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


async def log_events(args: argparse.Namespace, *, stop: asyncio.Event | None = None,
                     out: IO[bytes] | None = None) -> int:
    spec, expect = _source_spec(args)
    flt = EventFilter(namespace=args.namespace, name=args.name, actor=args.actor, type=args.type)
    if args.resource:
        flt.kind = _kinds(args.resource)[0]
    sink = out or sys.stdout.buffer
    async with opened(spec, expect=expect) as source:
        start, end = 0, source.last
        if args.since is not None:
            since = parse_when(args.since)
            if isinstance(since, int):
                start = since
            else:
                flt.since_time = since
                start = await revision_at_time(source, since, strict=True)
        if args.until is not None:
            until = parse_when(args.until)
            if isinstance(until, int):
                end = min(until, end)
            else:
                flt.until_time = until
                end = await revision_at_time(source, until)
        if args.follow and args.until is not None:
            raise SourceError("--follow and --until do not go together")
        if args.follow and isinstance(source, Recording):
            raise SourceError(f"{source.description}: --follow needs a data dir or a database URL")
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
                    sink.write(b"".join(logview.event_ndjson(ev) for ev in chosen))
                else:
                    sink.write(logview.events_text(chosen, header=header).encode())
                    header = False
                sink.flush()
            return limit is None or shown < limit

        cursor = start
        async for page in events_between(source, start, end):
            cursor = page[-1].revision
            if not emit(page):
                return 0
        if args.follow:
            async for page in follow(source, max(cursor, end), stop=stop):
                if not emit(page):
                    return 0
        if shown == 0 and args.output != "ndjson" and not args.follow:
            _note("No events match.")
    return 0


LOG_COMMANDS: dict[str, Callable[[argparse.Namespace], Awaitable[int]]] = {
    "show": log_show, "history": log_history, "diff": log_diff, "events": log_events,
}


def run_log_command(args: argparse.Namespace) -> int:
    """Entry point of `cplane log show|history|diff|events`: one error line and exit 1 on failure."""
    name = args.log_command
    try:
        return asyncio.run(LOG_COMMANDS[name](args))
    except SourceError as exc:
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


# -- cplane replay ----------------------------------------------------------------------------------

REPLAY_ACTIONS = ("status", "step", "until", "play", "pause", "fork", "save")


async def _serve_replay(args: argparse.Namespace) -> int:
    import signal

    speed = None if args.step else parse_speed(args.speed) if args.speed else 1.0
    max_gap = clocks.parse_duration(args.max_gap) if args.max_gap else None
    names = [n for n in (args.controllers or "").split(",") if n]
    if names:
        from controllers import registry

        registry.resolve_names(names)  # an unknown name fails now, not at the fork
    source = await open_source(args.source, in_memory=True)
    assert isinstance(source, Recording)
    if not len(source):
        raise SourceError(f"{source.description}: no events to replay")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    with tempfile.TemporaryDirectory(prefix="cplane-replay-") as tmp:
        async with serving(source, data_dir=Path(tmp), host=args.host, port=args.port, start=args.start,
                           until=args.until, speed=speed, fork=args.fork, fork_at=args.fork_at,
                           max_gap=max_gap) as srv:
            kubeconfig = srv.kubeconfig
            if args.kubeconfig:
                from api import server as servers

                kubeconfig = Path(args.kubeconfig)
                servers.write_kubeconfig(kubeconfig, server=srv.url)
            controllers: list[asyncio.Task[None]] = []
            if names:
                def start_controllers(revision: int) -> None:
                    _note(f"cplane replay: forked at revision {revision}; starting controllers")
                    controllers.append(asyncio.ensure_future(registry.run_controllers(
                        server_url=srv.url, names=names, clock=srv.clock, stop_event=stop)))

                srv.replayer.on_fork.append(start_controllers)
                if srv.log.forked:
                    start_controllers(srv.log.forked_at or 0)
            rec = source
            _note(f"cplane replay: serving {rec.description} (revisions {rec.first}..{rec.last}, {len(rec):,} events) "
                  f"at {srv.url} from revision {srv.log.revision}, {srv.replayer.mode}"
                  + (f" at speed {args.speed}" if srv.replayer.playing else "")
                  + f"; export KUBECONFIG={kubeconfig}")
            await stop.wait()
            for task in controllers:
                await task
    return 0


async def _control(args: argparse.Namespace) -> int:
    import aiohttp

    from cp import kubeconfig as kubeconfigs

    if args.server:
        url, headers = args.server.rstrip("/"), {}
    else:
        import os

        path = args.kubeconfig or os.environ.get("KUBECONFIG") or str(Path.home() / ".kube" / "config")
        try:
            ep = kubeconfigs.load(path)
        except (OSError, ValueError, KeyError) as exc:
            raise SourceError(f"cannot read the kubeconfig {path}: {exc}; use --server URL") from None
        url = ep.server
        headers = {"Authorization": f"Bearer {ep.token}"} if ep.token else {}
    action = args.source
    operands = args.operands
    params: dict[str, str] = {}
    method, path = "POST", f"{CONTROL}/{action}"
    if action == "status":
        method, path = "GET", CONTROL
    elif action == "step":
        if len(operands) > 1:
            raise SourceError("step takes one count at most: cplane replay step [N]")
        params["count"] = operands[0] if operands else "1"
    elif action == "until":
        given = [v for v in (args.object, args.time) if v] + list(operands)
        if len(given) != 1:
            raise SourceError("until takes one of REV, --object RESOURCE/NAMESPACE/NAME or --time TIME")
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
        method, path = "GET", f"{CONTROL}/events"
    async with aiohttp.ClientSession(base_url=url, headers=headers) as http:
        try:
            async with http.request(method, path, params=params) as r:
                body = await r.read()
                if r.status != 200:
                    try:
                        message = _decode(body).get("message", r.status)
                    except Exception:
                        message = f"HTTP {r.status}"
                    if r.status == 404 and action == "status":
                        message = f"{url} is not a replay server"
                    raise SourceError(str(message))
        except aiohttp.ClientError as exc:
            raise SourceError(f"cannot reach {url}: {exc}") from None
    if action == "save":
        target = args.output or "-"
        if target == "-":
            sys.stdout.buffer.write(body)
        else:
            Path(target).write_bytes(body)
            _note(f"saved {body.count(NEWLINE):,} events to {target}")
        return 0
    status = _decode(body)
    if args.output == "json":
        _out(logview.json_text(status))
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
    label = "cplane replay" + (f" {args.source}" if args.source in REPLAY_ACTIONS else "")
    try:
        if args.source in REPLAY_ACTIONS:
            return asyncio.run(_control(args))
        if args.operands:
            raise SourceError(f"unexpected arguments: {' '.join(args.operands)}")
        return asyncio.run(_serve_replay(args))
    except (SourceError, ValueError) as exc:
        _note(f"{label}: {exc}")
        return 1
    except OSError as exc:
        _note(f"{label}: {exc}")
        return 1
    except KeyboardInterrupt:
        return 130
