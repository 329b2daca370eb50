"""`SqlEventLog`: the `log.EventLog` contract over one SQL database; SQLite and PostgreSQL subclass it.

Writes. `append()` queues the write and awaits a future. One writer task takes everything queued (up to
`max_batch`) and commits it in ONE transaction (group commit): begin (SQLite: BEGIN IMMEDIATE;
PostgreSQL: LOCK TABLE events IN EXCLUSIVE MODE), read the heads of the batch's keys and the newest
revision, check every precondition in order (a later write in the batch sees the earlier ones),
assign revisions max+1, max+2..., insert the events, upsert the heads, commit. Because allocation and
commit happen under one database-wide write lock, revisions become visible in the order they were
assigned, with no gap, even with writers in several processes. The unique index on
(key, prev_revision) makes a lost race impossible to commit (kine's optimistic lock).

Delivery. After commit the events are published to the in-process subscriptions (`broadcasting`) if
they directly follow the newest published revision; otherwise (another process wrote in between)
the poller reads the missing range first. The poller also wakes on a timer (and on PostgreSQL on
LISTEN/NOTIFY) to pick up writes of other processes. `revision` is the newest published revision.

Reads use SQL that both databases accept (`?` placeholders, translated to `$n` for asyncpg). A read
that must report or check revisions returns a "sentinel" row first (newest revision, compacted
revision) computed in the same statement, hence the same snapshot, as the data rows.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import structlog

from storage import broadcasting, codec, compaction, heads, log

_logger = structlog.get_logger(__name__)

NO_LIMIT = 1 << 62
_AFTER_EVERY_NAME = "\U0010ffff"  # sorts (UTF-8 bytes) after every name
POLL_PAGE = 1000
POLL_FAILURE_LOG_PERIOD = 30.0  # seconds between "poll_failed" lines while the database stays unreachable
LIST_CATCH_UP_WAIT = 2.0  # seconds a LIST served from memory waits for this process to catch up
LOAD_PAGE = 2000  # objects per read when loading a resource into memory (other reads go in between)

_COLS = ("revision, type, api_group, resource, namespace, name, uid, prev_revision, time, actor_user, "
         "actor_field_manager, actor_user_agent, actor_request_id, object")
_E_COLS = ", ".join("e." + c.strip() for c in _COLS.split(","))
_NULLS = ", ".join(["NULL"] * 14)

# The first row of a checked read: (newest revision, compacted revision, NULL x 14).
_SENTINEL = (f"SELECT (SELECT COALESCE(MAX(revision), 0) FROM events), "
             f"(SELECT compacted_revision FROM meta), {_NULLS}")

# The row of one key live at revision R (kine-style seek in the (key, prev_revision) index): the
# key's last row whose prev_revision <= R is either that row (its revision <= R) or its successor
# (then the answer is its prev_revision). A missing row (0, or compacted) means "absent at R".
_SEEK = ("SELECT CASE WHEN y.revision <= ? THEN y.revision ELSE y.prev_revision END FROM events y "
         "WHERE y.resource = {r} AND y.api_group = {g} AND y.namespace = {ns} AND y.name = {n} "
         "AND y.prev_revision <= ? ORDER BY y.prev_revision DESC LIMIT 1")

SQL_META = _SENTINEL
SQL_GET_LATEST = (f"SELECT {_E_COLS} FROM heads h JOIN events e ON e.revision = h.revision "
                  "WHERE h.resource = ? AND h.api_group = ? AND h.namespace = ? AND h.name = ? "
                  "AND NOT h.deleted")
SQL_GET_AT = (f"{_SENTINEL} UNION ALL SELECT CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), {_E_COLS} FROM events e WHERE e.revision = ("
              + _SEEK.format(r="?", g="?", ns="?", n="?") + ") AND e.type <> 'DELETED'")


def _list_sql(*, at_revision: bool, namespaced: bool, lateral: bool) -> str:
    """A LIST walks the heads of one resource (and namespace) in primary-key order, i.e. (namespace,
    name) order, so it needs no sort; each head leads to the event at the asked revision.

    `lateral`: PostgreSQL form. The per-head event lookup is a LATERAL subquery fenced with LIMIT 1,
    which pins the plan to that nested loop even when table statistics would tempt the planner into
    hashing the whole events table (SQLite has no LATERAL and needs none: its plan is the loop)."""
    where = ("h.resource = ? AND h.api_group = ? "
             + ("AND h.namespace = ? AND h.name > ? " if namespaced else "AND (h.namespace, h.name) > (?, ?) "))
    seek = _SEEK.format(r="h.resource", g="h.api_group", ns="h.namespace", n="h.name")
    if at_revision:
        match, live = f"e.revision = ({seek}) AND e.type <> 'DELETED'", ""
    else:
        match, live = "e.revision = h.revision", "AND NOT h.deleted "
    if lateral:
        source = f"heads h CROSS JOIN LATERAL (SELECT * FROM events e WHERE {match} LIMIT 1) AS e WHERE {where}{live}"
    else:
        source = f"heads h JOIN events e ON {match} WHERE {where}{live}"
    return (f"{_SENTINEL} UNION ALL SELECT * FROM (SELECT CAST(NULL AS BIGINT) AS c0, CAST(NULL AS BIGINT) AS c1, "
            f"{_E_COLS} FROM {source}ORDER BY h.namespace, h.name LIMIT ?) AS d")


# (at a past revision, one namespace) -> SQL
SQL_LIST = {(at, ns): _list_sql(at_revision=at, namespaced=ns, lateral=False)
            for at in (False, True) for ns in (False, True)}
SQL_LIST_LATERAL = {(at, ns): _list_sql(at_revision=at, namespaced=ns, lateral=True)
                    for at in (False, True) for ns in (False, True)}
SQL_HISTORY = (f"SELECT {_COLS} FROM events WHERE resource = ? AND api_group = ? AND namespace = ? "
               "AND name = ? ORDER BY prev_revision")
SQL_AFTER = (f"{_SENTINEL} UNION ALL SELECT * FROM (SELECT CAST(NULL AS BIGINT) AS c0, CAST(NULL AS BIGINT) AS c1, {_COLS} FROM events "
             "WHERE revision > ? ORDER BY revision LIMIT ?) AS d")


def _replay_sql(*, namespaced: bool) -> str:
    ns = "AND namespace = ? " if namespaced else ""
    return (f"{_SENTINEL} UNION ALL SELECT * FROM (SELECT CAST(NULL AS BIGINT) AS c0, CAST(NULL AS BIGINT) AS c1, {_COLS} FROM events "
            f"WHERE revision > ? AND revision <= ? AND resource = ? AND api_group = ? {ns}"
            "ORDER BY revision LIMIT ?) AS d")


SQL_REPLAY = {ns: _replay_sql(namespaced=ns) for ns in (False, True)}
# The web UI's timeline density (`density`): one aggregate over the events of a revision range.
SQL_DENSITY = ("SELECT (revision - ? - 1) / ? AS b, api_group, resource, namespace, COUNT(*), MIN(revision) "
               "FROM events WHERE revision > ? AND revision <= ? GROUP BY b, api_group, resource, namespace")
SQL_SCAN = f"SELECT {_COLS} FROM events WHERE revision >= ? AND revision <= ? ORDER BY revision LIMIT ?"
SQL_BY_REVISION = f"SELECT {_COLS} FROM events WHERE revision = ?"
SQL_FIRST_SINCE = "SELECT revision FROM events WHERE revision > ? AND time >= ? ORDER BY revision LIMIT 1"
SQL_RESOURCES = "SELECT api_group, resource, COUNT(*) FROM heads WHERE NOT deleted GROUP BY resource, api_group"
SQL_IS_EMPTY = "SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM events LIMIT 1) AS x), compacted_revision FROM meta"

SQL_INSERT_EVENT = f"INSERT INTO events ({_COLS}) VALUES ({', '.join(['?'] * 14)})"
SQL_UPSERT_HEAD = ("INSERT INTO heads (resource, api_group, namespace, name, revision, deleted) "
                   "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (resource, api_group, namespace, name) "
                   "DO UPDATE SET revision = excluded.revision, deleted = excluded.deleted")
SQL_INSERT_HEAD = ("INSERT INTO heads (resource, api_group, namespace, name, revision, deleted) "
                   "VALUES (?, ?, ?, ?, ?, ?)")
SQL_SET_COMPACTED = "UPDATE meta SET compacted_revision = ? WHERE id = 1"
SQL_COMPACTED = "SELECT compacted_revision FROM meta WHERE id = 1"
# Compaction of the window (lo, hi]: rows superseded by a row of the window, then its tombstones
# (and their heads). The newest row of every live key survives.
SQL_WINDOW_TOMBSTONES = ("SELECT resource, api_group, namespace, name, revision FROM events "
                         "WHERE revision > ? AND revision <= ? AND type = 'DELETED'")
SQL_DELETE_SUPERSEDED = ("DELETE FROM events WHERE revision IN (SELECT prev_revision FROM events "
                         "WHERE revision > ? AND revision <= ? AND prev_revision > 0)")
SQL_DELETE_TOMBSTONES = "DELETE FROM events WHERE revision > ? AND revision <= ? AND type = 'DELETED'"
SQL_DELETE_HEAD = ("DELETE FROM heads WHERE resource = ? AND api_group = ? AND namespace = ? AND name = ? "
                   "AND revision = ?")

Row = Sequence[Any]


def scan_matching_sql(*, start: int, end: int, limit: int, name: str | None, user: str | None,
                      indexed: bool = True) -> tuple[str, tuple[Any, ...]]:
    """The statement of `SqlEventLog.scan_matching` and its arguments. Only the indexed exact
    filters go to SQL (a resource or namespace term could lead the planner to the key index, which
    reads every event of the resource); the caller checks the others on the rows found.
    `indexed=False` (SQLite only, for benchmarks): the same query over a full table scan."""
    terms = ["revision >= ?", "revision <= ?"]
    args: list[Any] = [start, end]
    if name is not None:
        terms.append("name = ?")
        args.append(name)
    if user is not None:
        terms.append("actor_user = ?")
        args.append(user)
    table = "events" if indexed else "events NOT INDEXED"
    args.append(limit)
    return f"SELECT {_COLS} FROM {table} WHERE {' AND '.join(terms)} ORDER BY revision LIMIT ?", tuple(args)


def _describe(error: BaseException) -> str:
    """`Type: message` of an error, with the database driver's error the cause of a wrapper (SQLAlchemy)."""
    cause = getattr(error, "orig", None) or error.__cause__ or error
    text = str(cause).strip().splitlines()[0] if str(cause).strip() else ""
    return f"{type(cause).__name__}: {text}" if text else type(cause).__name__


def _retrieve(task: asyncio.Task[None]) -> None:
    """A load's outcome is read by the LISTs waiting for it; none may be left (they went away)."""
    if not task.cancelled():
        task.exception()


def _cancelling() -> bool:
    """Whether the current task itself is being cancelled (not only a task it waited for)."""
    current = asyncio.current_task()
    return current is not None and current.cancelling() > 0


def split_sentinel(rows: Sequence[Row]) -> tuple[int, int, list[Row]]:
    """(newest revision, compacted revision, data rows) of a checked read."""
    for i, row in enumerate(rows):  # first, unless the database reordered the UNION ALL
        if row[0] is not None:
            return int(row[0]), int(row[1]), [*rows[:i], *rows[i + 1:]]
    raise log.StorageError("read returned no sentinel row")


class _Conflict:
    __slots__ = ("current", "current_revision", "reason")

    def __init__(self, reason: str, *, current_revision: int | None, current: log.Event | None) -> None:
        self.reason = reason  # "exists" | "absent" | "stale"
        self.current_revision = current_revision
        self.current = current


def keys_of(writes: list[log.Write]) -> list[codec.Key]:
    """The distinct keys of a batch, in order."""
    return list(dict.fromkeys(codec.key_of(write) for write in writes))


class Batch:
    """The outcome of checking a batch of writes against the heads (pure; no I/O)."""

    __slots__ = ("changed", "results", "revision", "rows")

    def __init__(self) -> None:
        self.results: list[log.Event | _Conflict | ValueError] = []  # one per write
        self.rows: list[codec.Row] = []  # events to insert
        self.changed: dict[codec.Key, tuple[int, bool]] = {}  # new heads
        self.revision = 0  # the newest revision assigned

    def head_rows(self) -> list[tuple[str, str, str, str, int, bool]]:
        return [(k[1], k[0], k[2], k[3], rev, deleted) for k, (rev, deleted) in self.changed.items()]


def plan_batch(writes: list[log.Write], *, heads: dict[codec.Key, tuple[int, bool]], revision: int) -> Batch:
    """Check each write's precondition in order (a write sees the earlier ones of the batch) and
    assign revisions after `revision`. `heads`: key -> (revision, deleted) before the batch."""
    batch = Batch()
    results, rows, changed = batch.results, batch.rows, batch.changed
    in_batch: dict[codec.Key, log.Event] = {}
    for write in writes:
        key = codec.key_of(write)
        head = heads.get(key)
        if write.type == "ADDED":
            if head is not None and not head[1]:
                results.append(_Conflict("exists", current_revision=head[0], current=in_batch.get(key)))
                continue
        elif head is None or head[1]:
            results.append(_Conflict("absent", current_revision=None, current=None))
            continue
        elif head[0] != write.expected_revision:
            results.append(_Conflict("stale", current_revision=head[0], current=in_batch.get(key)))
            continue
        try:
            obj, uid = codec.stamp(write, revision=revision + 1)
        except Exception as error:  # this write's object only; the rest of the batch goes on
            results.append(ValueError(f"the object cannot be stored as JSON: {error}"))
            continue
        revision += 1
        event = codec.event_from_write(write, revision=revision, prev_revision=head[0] if head else 0,
                                       obj=obj, uid=uid)
        rows.append(codec.row_from_event(event))
        heads[key] = changed[key] = (revision, write.type == "DELETED")
        in_batch[key] = event
        results.append(event)
    batch.revision = revision
    return batch


class BulkImport:
    """The sink `ndjson.import_events` writes into, inside one write transaction."""

    def __init__(self, owner: SqlEventLog) -> None:
        self._owner = owner

    async def insert(self, rows: list[codec.Row], *, heads: bool = False) -> None:
        """`rows` (consecutive revisions) inserted; with `heads`, their keys' heads written too, each at
        its last row (replacing what an earlier chunk wrote)."""
        await self._owner._insert_events(rows)
        if heads and rows:
            await self._owner._upsert_heads_of(rows)

    async def finish(self, *, heads: dict[codec.Key, tuple[int, bool]], compacted: int) -> None:
        for definition in self._owner._dropped_indexes:
            await self._owner._write_execute(definition, ())
        self._owner._dropped_indexes = []
        await self._owner._write_executemany(
            SQL_INSERT_HEAD, [(k[1], k[0], k[2], k[3], rev, deleted) for k, (rev, deleted) in heads.items()])
        if compacted:
            await self._owner._write_execute(SQL_SET_COMPACTED, (compacted,))
        await self._owner._after_bulk_load()


class SqlEventLog:
    """Shared logic; subclasses provide the connection primitives (`_open` ... `_insert_events`)."""

    backend = "sql"
    poll_interval = 1.0  # seconds between polls when nothing wakes the poller
    max_batch = 1000  # writes per group commit
    list_from_memory = True  # serve LISTs from `storage.heads` where it answers as the database would
    list_sql = SQL_LIST

    def __init__(self, *, retention: compaction.Retention | None = None, durability: str = "normal",
                 subscriber_buffer: int = 1000, cache_bytes: int = heads.DEFAULT_MAX_BYTES,
                 warm_cache: bool = False) -> None:
        """`cache_bytes`: the memory budget of the objects kept for LISTs and GETs (`storage.heads`;
        0: keep none). `warm_cache`: load every resource into it in the background once started."""
        if durability not in ("normal", "full"):
            raise ValueError(f"durability must be 'normal' or 'full', not {durability!r}")
        self.retention = retention
        self.durability = durability
        self.warm_cache = warm_cache
        self._broadcaster = broadcasting.Broadcaster(revision=0, buffer_limit=subscriber_buffer,
                                                     cache_bytes=cache_bytes)
        self._loads: dict[tuple[str, str], asyncio.Task[None]] = {}  # loads under way, by resource
        self._revision_read: asyncio.Future[int] | None = None  # the next shared read of the current revision
        self._revision_task: asyncio.Task[None] | None = None  # runs the shared reads
        self.warmed = asyncio.Event()  # the start-up warm-up is over (set at once without one)
        self._compacted = 0
        self._pending: list[tuple[log.Write, asyncio.Future[log.Event]]] = []
        self._work = asyncio.Event()
        self._idle = asyncio.Event()
        self._wake_poller = asyncio.Event()
        self._poll_failing = False
        self._poll_failure_logged = -POLL_FAILURE_LOG_PERIOD
        self._write_lock = asyncio.Lock()
        self._revision_waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._state = "new"  # new -> started -> closing -> closed
        self._importing = False
        self._dropped_indexes: list[str] = []

    # -- backend primitives -------------------------------------------------------------------------

    async def _open(self) -> None:
        """Create the engine, apply migrations, acquire connections."""
        raise NotImplementedError

    async def _close_backend(self) -> None:
        raise NotImplementedError

    async def _read(self, sql: str, args: Sequence[Any]) -> list[Row]:
        """Run one statement on a reader connection (autocommit: one statement, one snapshot)."""
        raise NotImplementedError

    async def _begin_write(self) -> None:
        """Begin a transaction on the writer connection holding the database-wide write lock."""
        raise NotImplementedError

    async def _commit_write(self, *, revision: int | None) -> None:
        """Commit; `revision` (the newest written) is announced to other processes."""
        raise NotImplementedError

    async def _rollback_write(self) -> None:
        raise NotImplementedError

    async def _write_fetch(self, sql: str, args: Sequence[Any]) -> list[Row]:
        raise NotImplementedError

    async def _write_execute(self, sql: str, args: Sequence[Any]) -> None:
        raise NotImplementedError

    async def _write_executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        raise NotImplementedError

    async def _lookup_heads(self, keys: list[codec.Key]) -> tuple[dict[codec.Key, tuple[int, bool]], int, int]:
        """Inside the write transaction: the heads of `keys`, the newest and the compacted revision."""
        raise NotImplementedError

    async def _insert_events(self, rows: list[codec.Row]) -> None:
        await self._write_executemany(SQL_INSERT_EVENT, rows)

    async def _secondary_indexes(self) -> list[tuple[str, str]]:
        """(name, CREATE statement) of the events table's indexes other than the primary key."""
        raise NotImplementedError

    async def _upsert_heads_of(self, rows: list[codec.Row]) -> None:
        """Inside the write transaction: the heads of the keys of `rows` (just inserted, consecutive
        revisions) set to each key's last row. Backends may do it from the inserted rows in SQL."""
        last = {(r[3], r[2], r[4], r[5]): (r[3], r[2], r[4], r[5], r[0], r[1] == "DELETED") for r in rows}
        await self._write_executemany(SQL_UPSERT_HEAD, list(last.values()))

    async def _after_bulk_load(self) -> None:
        """Inside the import transaction, after the last row."""

    def _unavailable(self, error: BaseException) -> bool:
        """Whether `error` means the database cannot be reached (backends say which errors do)."""
        return False

    def _translated(self, error: Exception) -> Exception:
        """`error` as the log reports it: UnavailableError when the database cannot be reached."""
        if isinstance(error, log.StorageError) or not self._unavailable(error):
            return error
        return log.UnavailableError(f"the event log's database is unavailable: {_describe(error)}")

    async def ping(self) -> None:
        self._check_started()
        await self._read(SQL_META, ())

    # -- lifecycle ----------------------------------------------------------------------------------

    async def start(self) -> None:
        if self._state != "new":
            raise log.StorageError(f"event log is {self._state}")
        started = time.perf_counter()
        try:
            await self._open()
            current, compacted, _ = split_sentinel(await self._read(SQL_META, ()))
        except BaseException as error:
            await self._close_backend()
            self._state = "closed"
            if isinstance(error, Exception) and not isinstance(error, log.StorageError | ValueError):
                translated = self._translated(error)
                if translated is error:
                    translated = log.StorageError(f"the event log cannot be opened: {_describe(error)}")
                raise translated from error
            raise
        self._broadcaster.revision = max(current, compacted)
        self._compacted = compacted
        self._state = "started"
        self._idle.set()
        self._tasks.append(asyncio.create_task(self._write_loop(), name=f"event-log:{self.backend}:writer"))
        self._tasks.append(asyncio.create_task(self._poll_loop(), name=f"event-log:{self.backend}:poller"))
        if self.retention is not None:
            self._tasks.append(asyncio.create_task(self._retention_loop(),
                                                   name=f"event-log:{self.backend}:retention"))
        if self.warm_cache and self.list_from_memory:
            self._tasks.append(asyncio.create_task(self._warm(), name=f"event-log:{self.backend}:warm-up"))
        else:
            self.warmed.set()
        _logger.info("event_log_started", backend=self.backend, revision=self.revision,
                     compacted_revision=compacted, durability=self.durability,
                     duration_ms=round((time.perf_counter() - started) * 1000, 1), outcome="ok")

    async def close(self) -> None:
        if self._state in ("closing", "closed"):
            return
        was_started = self._state == "started"
        self._state = "closing"
        if was_started:
            await self._idle.wait()  # acknowledge everything already queued
        for task in reversed(self._tasks):
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        for load in list(self._loads.values()):
            load.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await load
        if self._revision_task is not None:
            self._revision_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._revision_task
        self._broadcaster.end_all()
        for _, waiter in self._revision_waiters:
            if not waiter.done():
                waiter.set_exception(log.StorageError("event log closed"))
        self._revision_waiters.clear()
        await self._close_backend()
        self._state = "closed"
        _logger.info("event_log_closed", backend=self.backend, revision=self.revision, outcome="ok")

    def _check_started(self) -> None:
        if self._state != "started":
            raise log.StorageError(f"event log is {self._state}")

    # -- revisions ----------------------------------------------------------------------------------

    @property
    def revision(self) -> int:
        return self._broadcaster.revision

    @property
    def compacted_revision(self) -> int:
        return self._compacted

    def last_change(self, *, group: str, resource: str) -> int:
        return self._broadcaster.last_change(group=group, resource=resource)

    def _check_representable(self, revision: int) -> None:
        """A revision beyond int64 is in the future of every log, and must not reach the driver."""
        if revision > log.MAX_REVISION:
            raise log.FutureRevisionError(
                f"revision {revision} is newer than the current revision {self.revision}",
                requested=revision, current=self.revision)

    def _check_readable(self, revision: int, *, current: int, compacted: int) -> None:
        self._compacted = max(self._compacted, compacted)
        if revision > max(current, self.revision):
            raise log.FutureRevisionError(
                f"revision {revision} is newer than the current revision {current}",
                requested=revision, current=current)
        if revision <= compacted:
            raise log.ExpiredError.at(requested=revision, compacted=compacted)

    # -- writes -------------------------------------------------------------------------------------

    async def append(self, write: log.Write) -> log.Event:
        if self._state != "started":
            raise log.StorageError(f"event log is {self._state}")
        if write.type == "ADDED":
            if write.expected_revision != 0:
                raise ValueError("ADDED needs expected_revision 0")
        elif write.type not in ("MODIFIED", "DELETED"):
            raise ValueError(f"unknown event type {write.type!r}")
        if not write.name or not write.resource:
            raise ValueError("a write needs a resource and a name")
        future: asyncio.Future[log.Event] = asyncio.get_running_loop().create_future()
        self._pending.append((write, future))
        self._idle.clear()
        self._work.set()
        return await future

    async def _write_loop(self) -> None:
        while True:
            await self._work.wait()
            self._work.clear()
            while self._pending:
                batch = self._pending[:self.max_batch]
                del self._pending[:self.max_batch]
                try:
                    await self._write_batch(batch)
                except Exception as error:  # a bug after commit: never leave a caller waiting
                    _logger.exception("append_delivery_failed", writes=len(batch), outcome="error")
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(log.StorageError(f"append failed: {error!r}"))
            self._idle.set()

    async def _write_batch(self, batch: list[tuple[log.Write, asyncio.Future[log.Event]]]) -> None:
        try:
            async with self._write_lock:
                results = await self._commit_writes([write for write, _ in batch])
        except Exception as error:
            failure = self._translated(error)
            if not isinstance(failure, log.UnavailableError):
                failure = log.StorageError(f"append failed: {error!r}")
            _logger.error("append_failed", writes=len(batch), outcome="error", error_type=type(error).__name__,
                          error=_describe(error))
            for _, future in batch:
                if not future.done():
                    future.set_exception(failure)
            return
        except BaseException:
            for _, future in batch:
                if not future.done():
                    future.set_exception(log.StorageError("event log closed during append"))
            raise
        events = [result for result in results if isinstance(result, log.Event)]
        if events and not self._publish(events):
            # Another process committed revisions in between: read them first (keeps order).
            await self.wait_for_revision(revision=events[-1].revision)
        for (write, future), result in zip(batch, results, strict=True):
            if future.done():
                continue
            if isinstance(result, log.Event):
                future.set_result(result)
            elif isinstance(result, _Conflict):
                future.set_exception(await self._conflict_error(write, result))
            else:
                future.set_exception(result)

    async def _commit_writes(self, writes: list[log.Write]) -> list[log.Event | _Conflict | ValueError]:
        """One group commit (under `_write_lock`). SQLite overrides it to run in one thread hop."""
        await self._begin_write()
        try:
            keys = keys_of(writes)
            heads, current, compacted = await self._lookup_heads(keys)
            batch = plan_batch(writes, heads=heads, revision=max(current, compacted))
            if batch.rows:
                await self._insert_events(batch.rows)
                await self._write_executemany(SQL_UPSERT_HEAD, batch.head_rows())
                await self._commit_write(revision=batch.revision)
            else:
                await self._rollback_write()
        except BaseException:
            with contextlib.suppress(Exception):
                await self._rollback_write()
            raise
        return batch.results

    async def _conflict_error(self, write: log.Write, conflict: _Conflict) -> log.ConflictError:
        current = conflict.current
        if current is None and conflict.current_revision is not None:
            rows = await self._read(SQL_BY_REVISION, (conflict.current_revision,))
            current = codec.event_from_row(rows[0]) if rows else None
        what = f"{write.resource} {write.namespace + '/' if write.namespace else ''}{write.name}"
        if conflict.reason == "exists":
            message = f"{what} already exists"
        elif conflict.reason == "absent":
            message = f"{what} not found"
        else:
            message = (f"{what} has been modified: expected revision {write.expected_revision}, "
                       f"current {conflict.current_revision}")
        return log.ConflictError(message, current=current)

    # -- delivery -----------------------------------------------------------------------------------

    def _publish(self, events: list[log.Event]) -> bool:
        """Publish committed events; False when they do not follow the newest published revision."""
        published = self._broadcaster.revision
        if events[0].revision <= published:
            events = [event for event in events if event.revision > published]
            if not events:
                return True
        if events[0].revision != published + 1:
            return False
        self._broadcaster.publish(events)
        if self._revision_waiters:
            self._release_waiters()
        return True

    def _release_waiters(self) -> None:
        revision = self._broadcaster.revision
        keep = []
        for target, waiter in self._revision_waiters:
            if target <= revision:
                if not waiter.done():
                    waiter.set_result(None)
            else:
                keep.append((target, waiter))
        self._revision_waiters = keep

    async def wait_for_revision(self, *, revision: int) -> None:
        """Wake the poller (another process may have written `revision`) and wait until it is published."""
        if self._broadcaster.revision >= revision:
            return
        if self._state in ("new", "closed"):  # while closing, `close()` fails the waiters
            raise log.StorageError(f"event log is {self._state}")
        self._wake_poller.set()
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (revision, waiter)
        self._revision_waiters.append(entry)
        try:
            await waiter
        finally:  # cancelled (a timeout): forget the waiter now, not at the next release
            if entry in self._revision_waiters:
                self._revision_waiters.remove(entry)

    async def _poll_loop(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.poll_interval):
                    await self._wake_poller.wait()
            self._wake_poller.clear()
            try:
                await self._catch_up()
            except Exception as error:
                now = time.monotonic()
                if now - self._poll_failure_logged >= POLL_FAILURE_LOG_PERIOD:  # not once per poll
                    self._poll_failure_logged = now
                    _logger.warning("poll_failed", revision=self.revision, outcome="error",
                                    error_type=type(error).__name__, error=_describe(error))
                self._poll_failing = True
            else:
                if self._poll_failing:
                    self._poll_failing = False
                    self._poll_failure_logged = -POLL_FAILURE_LOG_PERIOD
                    _logger.info("poll_recovered", revision=self.revision, outcome="ok")

    async def _catch_up(self) -> None:
        """Publish every committed event newer than `revision` (written by any process)."""
        while not self._importing:
            after = self._broadcaster.revision
            _, compacted, rows = split_sentinel(await self._read(SQL_AFTER, (after, POLL_PAGE)))
            if self._importing:  # the import publishes nothing: it ends the subscriptions instead
                return
            self._compacted = max(self._compacted, compacted)
            if not rows:
                if compacted > after:  # the newest revisions were compacted away
                    self._skip_to(compacted)
                return
            events = [codec.event_from_row(row, 2) for row in rows]
            events = [event for event in events if event.revision > self._broadcaster.revision]
            if events and not self._publish(events):
                # Only compaction removes revisions; subscribers behind it cannot be served.
                self._skip_to(events[0].revision - 1)
                self._publish(events)
            if len(rows) < POLL_PAGE:
                return

    def _skip_to(self, revision: int, *, reason: str = "compacted") -> None:
        """Jump the published revision to `revision`, ending the subscriptions (they would miss events)."""
        log_event = _logger.info if reason == "imported" else _logger.warning
        log_event("revisions_skipped", revision=self._broadcaster.revision, skipped_to=revision,
                  compacted_revision=self._compacted, reason=reason, outcome="subscribers_ended")
        self._broadcaster.revision = max(self._broadcaster.revision, revision)
        self._broadcaster.end_all()
        self._release_waiters()

    # -- reads --------------------------------------------------------------------------------------

    async def get(self, *, group: str, resource: str, namespace: str, name: str,
                  revision: int | None = None, latest_known: bool = False) -> log.Event | None:
        self._check_started()
        if revision is None:
            cache = self._broadcaster.heads
            if self.list_from_memory and cache.loaded_at(group=group, resource=resource) is not None \
                    and (latest_known or await self._caught_up(cache, group, resource, wait=False)):
                return cache.get(group=group, resource=resource, namespace=namespace, name=name)
            rows = await self._read(SQL_GET_LATEST, (resource, group, namespace, name))
            return codec.event_from_row(rows[0]) if rows else None
        self._check_representable(revision)
        current, compacted, rows = split_sentinel(await self._read(
            SQL_GET_AT, (revision, resource, group, namespace, name, revision)))
        self._check_readable(revision, current=current, compacted=compacted)
        return codec.event_from_row(rows[0], 2) if rows else None

    async def list_objects(self, *, group: str, resource: str, namespace: str | None,
                   revision: int | None = None, start_after: tuple[str, str] | None = None,
                   limit: int | None = None) -> log.ListResult:
        self._check_started()
        if revision is not None:
            self._check_representable(revision)
        if self.list_from_memory:
            kept = await self._list_kept(group, resource, namespace, revision, start_after, limit)
            if kept is not None:
                return kept
        return await self._list_stored(group, resource, namespace, revision, start_after, limit)

    async def _list_kept(self, group: str, resource: str, namespace: str | None, revision: int | None,
                         start_after: tuple[str, str] | None, limit: int | None) -> log.ListResult | None:
        """The LIST from `storage.heads` when it can answer exactly as the database would; None when not.
        At the latest revision: load the resource on its first LIST, then wait until this process has
        published the database's current revision (writes by other processes included). At a pinned
        revision R (a continued LIST): when the resource has not changed since R."""
        cache = self._broadcaster.heads
        if revision is not None:
            loaded = cache.loaded_at(group=group, resource=resource)
            if (loaded is None or not (loaded <= revision <= self.revision) or revision <= self._compacted
                    or self.last_change(group=group, resource=resource) > revision):
                return None
        elif not await self._caught_up_for_list(cache, group, resource,
                                                wait_for_load=namespace is None and not limit):
            return None
        events, more = cache.list_objects(group=group, resource=resource, namespace=namespace,
                                  start_after=start_after, limit=limit)
        served_at = self.revision if revision is None else revision
        return log.ListResult(events=events, revision=served_at, more=more)

    async def _caught_up_for_list(self, cache: heads.HeadCache, group: str, resource: str, *,
                                  wait_for_load: bool) -> bool:
        """For a read at the latest revision: load the resource if it is not kept yet (or wait for the
        load under way), then wait until this process has published the database's current revision.
        False: read the database instead. `wait_for_load=False` (a page or one namespace, which the
        database answers quickly): start the load if none is under way, but do not wait for it."""
        if cache.loaded_at(group=group, resource=resource) is None and \
                not await self._load(group, resource, wait=wait_for_load):
            return False  # too large to keep, or the load failed, or not waited for
        return await self._caught_up(cache, group, resource)

    async def _caught_up(self, cache: heads.HeadCache, group: str, resource: str, *, wait: bool = True) -> bool:
        """Wait until this process has published the database's current revision (as read after this
        call began); whether the resource is kept then (a read at the latest revision may use it).
        `wait=False` (a GET, which the database answers at once): False when it has not published it."""
        target = await self._database_revision()
        if self._broadcaster.revision < target and not wait:
            return False
        if self._broadcaster.revision < target:
            try:
                async with asyncio.timeout(LIST_CATCH_UP_WAIT):
                    await self.wait_for_revision(revision=target)
            except TimeoutError:
                return False  # this process lags behind the database: read the database itself
        # False when dropped meanwhile (revisions skipped, or the budget dropped it)
        return cache.loaded_at(group=group, resource=resource) is not None

    async def _database_revision(self) -> int:
        """The database's current revision, read after this call began. Concurrent callers share one
        read: those arriving while a read runs wait for the next one, which starts after they came
        (a revision read before a caller arrived could miss a write it must see)."""
        waiting = self._revision_read
        if waiting is None:
            waiting = self._revision_read = asyncio.get_running_loop().create_future()
            if self._revision_task is None:
                self._revision_task = asyncio.get_running_loop().create_task(
                    self._read_revisions(), name=f"event-log:{self.backend}:revision-read")
        return await asyncio.shield(waiting)

    async def _read_revisions(self) -> None:
        try:
            while (waiting := self._revision_read) is not None:
                self._revision_read = None
                try:
                    current, compacted, _ = split_sentinel(await self._read(SQL_META, ()))
                except BaseException as error:
                    failure = error if isinstance(error, Exception) else log.StorageError("event log closed")
                    waiting.set_exception(failure)
                    waiting.exception()  # retrieved here too: its callers may have gone (cancelled)
                    if not isinstance(error, Exception):
                        raise
                    continue
                self._compacted = max(self._compacted, compacted)
                waiting.set_result(max(current, compacted))
        finally:
            self._revision_task = None

    async def _load(self, group: str, resource: str, *, wait: bool = True) -> bool:
        """Load the resource into `storage.heads` (or wait for the load under way); whether it is kept.
        The load is a task of its own: a LIST that started it and goes away does not end it.
        `wait=False`: start it, and answer at once whether the resource is kept already."""
        cache = self._broadcaster.heads
        key = (group, resource)
        running = self._loads.get(key)
        if running is None:
            ticket = cache.begin_load(group=group, resource=resource)
            if ticket is None:
                return cache.loaded_at(group=group, resource=resource) is not None
            running = self._loads[key] = asyncio.get_running_loop().create_task(
                self._run_load(cache, ticket, group, resource), name=f"event-log:{self.backend}:load:{resource}")
            running.add_done_callback(_retrieve)
        if not wait:
            return cache.loaded_at(group=group, resource=resource) is not None
        try:
            await asyncio.shield(running)
        except asyncio.CancelledError:
            if running.cancelled() and not _cancelling():
                return False  # the log closed under the load
            raise
        except Exception:
            return False  # the load failed: read the database
        return cache.loaded_at(group=group, resource=resource) is not None

    async def _run_load(self, cache: heads.HeadCache, ticket: int, group: str, resource: str) -> None:
        try:
            await self._load_pages(cache, ticket, group, resource)
        except BaseException:
            cache.abandon_load(ticket, group=group, resource=resource)
            raise
        finally:
            self._loads.pop((group, resource), None)

    async def _load_pages(self, cache: heads.HeadCache, ticket: int, group: str, resource: str) -> None:
        """Read the live objects in pages of LOAD_PAGE (each at its own revision), then wait until this
        process has published the newest of those revisions, then apply what was held back."""
        start_after: tuple[str, str] | None = None
        newest = 0
        while True:
            page = await self._list_stored(group, resource, None, None, start_after, LOAD_PAGE)
            newest = max(newest, page.revision)
            if not cache.add_page(ticket, group=group, resource=resource, events=page.events,
                                  revision=page.revision, last=not page.more):
                if cache.refused(group=group, resource=resource):  # else: reset meanwhile (skipped revisions)
                    _logger.info("watch_cache_refused", group=group, resource=resource, revision=page.revision,
                                 budget_bytes=cache.max_bytes, outcome="not_kept")
                return
            if not page.more:
                break
            last = page.events[-1]
            start_after = (last.namespace, last.name)
        if self._broadcaster.revision < newest:
            try:
                async with asyncio.timeout(LIST_CATCH_UP_WAIT):
                    await self.wait_for_revision(revision=newest)
            except TimeoutError:
                cache.abandon_load(ticket, group=group, resource=resource)
                return
        cache.finish_load(ticket, group=group, resource=resource)

    async def _warm(self) -> None:
        """Load every resource with live objects, fewest objects first, while the budget lasts (the
        server is ready meanwhile: a LIST of a resource not loaded yet loads it itself, or waits for
        the load under way)."""
        started = time.perf_counter()
        cache = self._broadcaster.heads
        try:
            rows = await self._read(SQL_RESOURCES, ())
            for group, resource, _count in sorted(rows, key=lambda row: int(row[2])):
                if cache.loaded_at(group=group, resource=resource) is None:
                    await self._load(group, resource)
        except Exception as error:  # the cache stays partly warm; LISTs load what they need
            _logger.warning("watch_cache_warm_failed", revision=self.revision, outcome="error",
                            error_type=type(error).__name__, error=_describe(error))
        finally:
            self.warmed.set()
        _logger.info("watch_cache_warmed", revision=self.revision, objects=len(cache), bytes=cache.bytes,
                     duration_ms=round((time.perf_counter() - started) * 1000, 1), outcome="ok")

    async def _list_stored(self, group: str, resource: str, namespace: str | None, revision: int | None,
                           start_after: tuple[str, str] | None, limit: int | None) -> log.ListResult:
        fetch = limit + 1 if limit is not None and 0 < limit < NO_LIMIT else NO_LIMIT  # int64 for the driver
        after_ns, after_name = start_after if start_after is not None else ("", "")
        args: list[Any] = [] if revision is None else [revision, revision]
        if namespace is None:
            args += [resource, group, after_ns, after_name, fetch]
        else:
            if after_ns != namespace:  # before this namespace: from its start; after it: nothing
                after_name = "" if after_ns < namespace else _AFTER_EVERY_NAME
            args += [resource, group, namespace, after_name, fetch]
        sql = self.list_sql[(revision is not None, namespace is not None)]
        current, compacted, rows = split_sentinel(await self._read(sql, args))
        if revision is not None:
            self._check_readable(revision, current=current, compacted=compacted)
        else:
            self._compacted = max(self._compacted, compacted)
            revision = max(current, compacted)
        more = fetch != NO_LIMIT and len(rows) == fetch
        if more:
            del rows[-1]
        from_row = codec.event_from_row
        return log.ListResult(events=[from_row(row, 2) for row in rows], revision=revision, more=more)

    async def deleted_keys(self, *, group: str, resource: str) -> list[tuple[str, str, int]]:
        """The keys of a resource whose last event deleted them: (namespace, name, that revision). A
        recording that resumes needs them: a key created again follows its deletion (`prev_revision`)."""
        self._check_started()
        rows = await self._read("SELECT namespace, name, revision FROM heads "
                                "WHERE api_group = ? AND resource = ? AND deleted", (group, resource))
        return [(str(r[0]), str(r[1]), int(r[2])) for r in rows]

    async def history(self, *, group: str, resource: str, namespace: str, name: str) -> list[log.Event]:
        self._check_started()
        rows = await self._read(SQL_HISTORY, (resource, group, namespace, name))
        return [codec.event_from_row(row) for row in rows]

    async def after(self, revision: int, *, limit: int = 1000) -> list[log.Event]:
        self._check_started()
        _, compacted, rows = split_sentinel(await self._read(SQL_AFTER, (revision, limit)))
        self._compacted = max(self._compacted, compacted)
        if revision < compacted:
            raise log.ExpiredError.at(requested=revision, compacted=compacted)
        return [codec.event_from_row(row, 2) for row in rows]

    async def density(self, *, since: int, until: int, width: int) -> log.Density:
        self._check_started()
        if width < 1:
            raise ValueError("width must be >= 1")
        until = min(until, log.MAX_REVISION)
        counts: list[log.DensityCount] = []
        first: dict[int, int] = {}
        if until > since:
            for b, group, resource, namespace, n, lowest in await self._read(SQL_DENSITY, (since, width, since, until)):
                counts.append(log.DensityCount(bucket=int(b), group=group, resource=resource, namespace=namespace,
                                               count=int(n)))
                first[int(b)] = min(first.get(int(b), lowest), lowest)
        times: dict[int, float] = {}
        revisions = sorted(first.values())
        for i in range(0, len(revisions), 500):
            chunk = revisions[i:i + 500]
            rows = await self._read(f"SELECT revision, time FROM events WHERE revision IN "
                                    f"({', '.join(['?'] * len(chunk))})", chunk)
            times.update((int(r), float(t)) for r, t in rows)
        return log.Density(counts=counts, firsts={b: (r, times.get(r, 0.0)) for b, r in first.items()})

    async def scan(self, *, start: int, end: int, limit: int) -> list[log.Event]:
        """Retained events with start <= revision <= end, oldest first (no compaction check)."""
        self._check_started()
        return [codec.event_from_row(row) for row in await self._read(SQL_SCAN, (start, end, limit))]

    async def scan_matching(self, *, start: int, end: int, limit: int, name: str | None = None,
                            user: str | None = None) -> list[log.Event]:
        """As `scan`, only the events of objects named `name` and/or written by the authenticated
        user `user` (exact matches): seeks in the (name, revision) and (actor_user, revision) indexes."""
        self._check_started()
        return [codec.event_from_row(row) for row in await self._read(*scan_matching_sql(
            start=start, end=end, limit=limit, name=name, user=user))]

    # -- watch --------------------------------------------------------------------------------------

    async def subscribe(self, *, group: str, resource: str, namespace: str | None,
                        after: int) -> broadcasting.Subscriber:
        self._check_started()
        if after < self._compacted:
            raise log.ExpiredError.at(requested=after, compacted=self._compacted)
        subscriber = broadcasting.Subscriber(broadcaster=self._broadcaster, replay=self._replay_page,
                                             group=group, resource=resource, namespace=namespace,
                                             after=after)
        self._broadcaster.add(subscriber)  # first: nothing published from now on is missed
        try:
            await subscriber.prefetch()
        except BaseException:
            subscriber.close()
            raise
        return subscriber

    async def _replay_page(self, group: str, resource: str, namespace: str | None, after: int, upto: int,
                           limit: int) -> tuple[list[log.Event], int]:
        args: list[Any] = [after, upto, resource, group]
        if namespace is not None:
            args.append(namespace)
        args.append(limit)
        _, compacted, rows = split_sentinel(await self._read(SQL_REPLAY[namespace is not None], args))
        self._compacted = max(self._compacted, compacted)
        return [codec.event_from_row(row, 2) for row in rows], compacted

    # -- compaction ---------------------------------------------------------------------------------

    async def compact(self, revision: int) -> None:
        """Compact history at or below `revision`. The newest revision is never compacted (a LIST at the
        latest revision must stay continuable), so `revision` is clamped to `self.revision - 1`."""
        self._check_started()
        current, compacted, _ = split_sentinel(await self._read(SQL_META, ()))
        current = max(current, compacted, self.revision)  # another process may be ahead of us
        self._compacted = max(self._compacted, compacted)
        if revision > current:
            raise log.FutureRevisionError(f"cannot compact to {revision}: newer than {current}",
                                          requested=revision, current=current)
        revision = min(revision, current - 1)
        if revision <= self._compacted:
            return
        started = time.perf_counter()
        first = self._compacted
        for lo, hi in compaction.windows(start=self._compacted, end=revision):
            async with self._write_lock:
                await self._compact_window(lo, hi)
            self._compacted = max(self._compacted, hi)
        _logger.info("compacted", revision=revision, previous_revision=first,
                     duration_ms=round((time.perf_counter() - started) * 1000, 1), outcome="ok")

    async def _compact_window(self, lo: int, hi: int) -> None:
        await self._begin_write()
        try:
            done = (await self._write_fetch(SQL_COMPACTED, ()))[0][0]
            if done >= hi:
                await self._rollback_write()
                return
            lo = max(lo, done)
            tombstones = await self._write_fetch(SQL_WINDOW_TOMBSTONES, (lo, hi))
            await self._write_execute(SQL_DELETE_SUPERSEDED, (lo, hi))
            await self._write_execute(SQL_DELETE_TOMBSTONES, (lo, hi))
            if tombstones:
                await self._write_executemany(SQL_DELETE_HEAD, [tuple(row) for row in tombstones])
            await self._write_execute(SQL_SET_COMPACTED, (hi,))
            await self._commit_write(revision=None)
        except BaseException:
            with contextlib.suppress(Exception):
                await self._rollback_write()
            raise

    async def apply_retention(self) -> int:
        """Compact as the retention policy allows; the compacted revision afterwards."""
        self._check_started()
        retention = self.retention
        if retention is None:
            return self._compacted
        first_newer = None
        if retention.keep_seconds is not None:
            rows = await self._read(SQL_FIRST_SINCE, (self._compacted, time.time() - retention.keep_seconds))
            first_newer = int(rows[0][0]) if rows else None
        target = compaction.target(retention=retention, current=self.revision,
                                   first_newer_than_cutoff=first_newer)
        if target > self._compacted:
            await self.compact(target)
        return self._compacted

    async def _retention_loop(self) -> None:
        assert self.retention is not None
        while True:
            await asyncio.sleep(self.retention.interval_seconds)
            try:
                await self.apply_retention()
            except Exception as error:
                _logger.warning("retention_failed", revision=self.revision, outcome="error", error=repr(error))

    # -- import -------------------------------------------------------------------------------------

    async def append_numbered(self, rows: list[codec.Row]) -> int:
        """Append events numbered elsewhere (`cp.importing.Sequencer`: a recording of another
        cluster) right after the current revision, in one write transaction: all or nothing. The
        rows' revisions must follow the newest one without gaps (`log.ImportRejectedError`
        otherwise). Returns the newest revision; the events are published as other processes' are."""
        self._check_started()
        if not rows:
            return self.revision
        heads: dict[codec.Key, tuple[int, bool]] = {}
        for row in rows:  # (revision, type, group, resource, namespace, name, ...)
            heads[(str(row[2]), str(row[3]), str(row[4]), str(row[5]))] = (int(row[0]), row[1] == "DELETED")
        async with self._write_lock:
            await self._begin_write()
            try:
                current, compacted, _ = split_sentinel(await self._write_fetch(SQL_META, ()))
                expected = max(current, compacted) + 1
                for offset, row in enumerate(rows):
                    if int(row[0]) != expected + offset:
                        raise log.ImportRejectedError(
                            f"revision {row[0]} where {expected + offset} comes next: appended events are "
                            "numbered after the newest without gaps", line=0)
                await self._insert_events(rows)
                await self._write_executemany(
                    SQL_UPSERT_HEAD, [(k[1], k[0], k[2], k[3], rev, deleted) for k, (rev, deleted) in heads.items()])
                await self._commit_write(revision=int(rows[-1][0]))
            except BaseException:
                with contextlib.suppress(Exception):
                    await self._rollback_write()
                raise
        self._wake_poller.set()
        return int(rows[-1][0])


    @contextlib.asynccontextmanager
    async def bulk_import(self, *, keep_indexes: bool = False) -> AsyncIterator[BulkImport]:
        """One write transaction into an EMPTY store; committed when the block ends without error.
        `keep_indexes`: grow the secondary indexes row by row (cheaper when the rows come slower than
        the database inserts them, from a reader in another process) instead of building them at the end."""
        self._check_started()
        async with self._write_lock:
            await self._begin_write()
            self._importing = True  # the poller must not publish the imported events
            try:
                has_events, compacted = (await self._write_fetch(SQL_IS_EMPTY, ()))[0]
                if has_events or compacted:
                    raise log.ImportRejectedError("the event log is not empty: import needs an empty store", line=0)
                # Building an index once from all rows is faster than growing it row by row; the
                # definitions come from the database itself, so they cannot drift from the migrations.
                self._dropped_indexes = []
                for name, definition in [] if keep_indexes else await self._secondary_indexes():
                    await self._write_execute(f'DROP INDEX "{name}"', ())
                    self._dropped_indexes.append(definition)
                yield BulkImport(self)
                current, compacted, _ = split_sentinel(await self._write_fetch(SQL_META, ()))
                await self._commit_write(revision=current)
            except BaseException:
                self._importing = False
                with contextlib.suppress(Exception):
                    await self._rollback_write()
                raise
        # Nobody can have watched an empty store usefully: end its subscriptions, start from here.
        self._compacted = compacted
        self._skip_to(max(current, compacted), reason="imported")
        self._importing = False
