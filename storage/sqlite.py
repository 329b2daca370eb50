"""The event log on SQLite (the default, embedded backend).

- WAL journal: readers never block the writer and see a committed prefix of the log.
- One writer: a plain `sqlite3` connection owned by one dedicated thread. A group commit takes two
  thread hops, not one per statement (a hop costs ~50-70 us on a busy 2-core machine, as much as the
  SQLite work of a small batch): [BEGIN IMMEDIATE, read the heads] there, check/assign/encode here,
  [insert, upsert the heads, COMMIT] there. `BEGIN IMMEDIATE` takes SQLite's write lock before the heads
  are read, so revisions are allocated and committed in order even if another process writes the
  same file.
- Readers: a few aiosqlite connections, each on its own thread (rows as plain tuples).
- Schema: a fresh file gets the head schema from `HEAD_SCHEMA` (a snapshot of what the migrations
  produce, checked by tests/storage/test_schema.py) in one transaction; an existing file at head needs
  nothing; anything else is upgraded by alembic. SQLAlchemy and alembic are imported only then, which
  keeps them off the start-up path (~0.3 s of imports).
- Durability: "normal" = `synchronous=NORMAL`: a commit is in the WAL file before `append()` returns,
  so no acknowledged write is lost when the process dies (kill -9); after a power loss or OS crash
  the last transactions since the previous WAL sync can be lost. "full" = `synchronous=FULL`: the WAL
  is fsync'ed at every commit (group commit amortises it), so acknowledged writes survive power loss.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import pathlib
import sqlite3
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import aiosqlite
import msgspec

from storage import codec, compaction, heads, log, migrating, sql

READERS = 2
# sqlite3.OperationalError texts that mean the file cannot be used now, not that the statement is wrong.
_UNAVAILABLE = ("disk I/O error", "database or disk is full", "unable to open database file", "database is locked",
                "readonly database")

_T = TypeVar("_T")
_json = msgspec.json.Encoder()

_SQL_LOOKUP = (
    "SELECT k.key, h.revision, h.deleted, 0 FROM json_each(?) AS k JOIN heads h "
    "ON h.resource = k.value ->> 1 AND h.api_group = k.value ->> 0 "
    "AND h.namespace = k.value ->> 2 AND h.name = k.value ->> 3 "
    "UNION ALL SELECT -1, (SELECT COALESCE(MAX(revision), 0) FROM events), 0, "
    "(SELECT compacted_revision FROM meta)"
)


# The head schema as the migrations leave it on SQLite (statements as SQLite stores them), with the
# rows they insert. Regenerate it when a migration is added (the schema test fails until then, and
# start-up falls back to alembic while HEAD_SCHEMA_REVISION is not the head).
HEAD_SCHEMA_REVISION = "0002"
HEAD_SCHEMA = (
    "CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL, "
    "CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num))",
    "CREATE TABLE events (revision INTEGER NOT NULL, type TEXT NOT NULL, api_group TEXT NOT NULL, "
    "resource TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL, uid TEXT NOT NULL, "
    "prev_revision BIGINT NOT NULL, time FLOAT NOT NULL, actor_user TEXT NOT NULL, "
    "actor_field_manager TEXT NOT NULL, actor_user_agent TEXT NOT NULL, actor_request_id TEXT NOT NULL, "
    "object BLOB NOT NULL, PRIMARY KEY (revision))",
    "CREATE UNIQUE INDEX events_key_prev_revision ON events "
    "(resource, api_group, namespace, name, prev_revision)",
    "CREATE INDEX events_name_revision ON events (name, revision)",
    "CREATE INDEX events_actor_user_revision ON events (actor_user, revision)",
    "CREATE TABLE heads (resource TEXT NOT NULL, api_group TEXT NOT NULL, namespace TEXT NOT NULL, "
    "name TEXT NOT NULL, revision BIGINT NOT NULL, deleted BOOLEAN NOT NULL, "
    "PRIMARY KEY (resource, api_group, namespace, name)) WITHOUT ROWID",
    "CREATE TABLE meta (id INTEGER NOT NULL, compacted_revision BIGINT NOT NULL, PRIMARY KEY (id))",
    "INSERT INTO meta (id, compacted_revision) VALUES (1, 0)",
    f"INSERT INTO alembic_version (version_num) VALUES ('{HEAD_SCHEMA_REVISION}')",
)


_SQL_UPSERT_HEADS_OF_EVENTS = (
    "INSERT INTO heads (resource, api_group, namespace, name, revision, deleted) "
    "SELECT resource, api_group, namespace, name, revision, type = 'DELETED' FROM events "
    "WHERE revision BETWEEN ? AND ? ORDER BY revision "
    "ON CONFLICT (resource, api_group, namespace, name) DO UPDATE SET revision = excluded.revision, "
    "deleted = excluded.deleted")


def _pragmas(durability: str) -> list[str]:
    synchronous = "FULL" if durability == "full" else "NORMAL"
    return ["journal_mode=WAL", f"synchronous={synchronous}", "busy_timeout=30000", "cache_size=-65536",
            "temp_store=MEMORY", "foreign_keys=OFF"]


class SqliteEventLog(sql.SqlEventLog):
    backend = "sqlite"

    def __init__(self, *, path: str | pathlib.Path, retention: compaction.Retention | None = None,
                 durability: str = "normal", subscriber_buffer: int = 1000,
                 cache_bytes: int = heads.DEFAULT_MAX_BYTES, warm_cache: bool = False) -> None:
        super().__init__(retention=retention, durability=durability, subscriber_buffer=subscriber_buffer,
                         cache_bytes=cache_bytes, warm_cache=warm_cache)
        if not str(path) or str(path) == ":memory:":
            raise ValueError("the SQLite event log needs a file: sqlite+aiosqlite:///ABS/PATH/cplane.db")
        self.path = pathlib.Path(path)
        self._readers: asyncio.Queue[aiosqlite.Connection] = asyncio.Queue()
        self._connections: list[aiosqlite.Connection] = []
        self._writer_thread: concurrent.futures.ThreadPoolExecutor | None = None
        self._db: sqlite3.Connection | None = None  # the writer; only used on `_writer_thread`

    # -- connections --------------------------------------------------------------------------------

    async def _open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._writer_thread = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix=f"sqlite-writer:{self.path.name}")
        self._db = await self._on_writer(self._connect_writer)
        if not await self._on_writer(self._ensure_schema_now):
            await self._on_writer(migrating.upgrade_sqlite, self.path)
        for _ in range(READERS):
            connection = await aiosqlite.connect(self.path, isolation_level=None)
            self._connections.append(connection)
            for pragma in _pragmas(self.durability):
                await connection.execute(f"PRAGMA {pragma}")
            self._readers.put_nowait(connection)

    def _ensure_schema_now(self) -> bool:
        """True when the file is at head: it was already, or it was empty and got `HEAD_SCHEMA`.
        False: alembic must upgrade it."""
        db = self._writer_db()
        db.execute("BEGIN IMMEDIATE")  # two processes on one fresh file: the second sees the schema
        try:
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            head = migrating.head_revision()
            if "alembic_version" in tables:
                row = db.execute("SELECT version_num FROM alembic_version").fetchone()
                at_head = row is not None and row[0] == head
            elif not tables and head == HEAD_SCHEMA_REVISION:
                for statement in HEAD_SCHEMA:
                    db.execute(statement)
                at_head = True
            else:
                at_head = False
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        return at_head

    def _connect_writer(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        for pragma in _pragmas(self.durability):
            db.execute(f"PRAGMA {pragma}")
        return db

    async def _on_writer(self, function: Callable[..., _T], *args: Any) -> _T:
        """Run `function(*args)` on the writer thread."""
        assert self._writer_thread is not None
        return await asyncio.get_running_loop().run_in_executor(
            self._writer_thread, functools.partial(function, *args))

    def _writer_db(self) -> sqlite3.Connection:
        if self._db is None:
            raise log.StorageError("the SQLite writer is closed")
        return self._db

    async def _close_backend(self) -> None:
        if self._writer_thread is not None:
            if self._db is not None:
                await self._on_writer(self._db.close)
                self._db = None
            self._writer_thread.shutdown(wait=True)
            self._writer_thread = None
        for connection in self._connections:
            await connection.close()
        self._connections.clear()
        self._readers = asyncio.Queue()

    # -- reads --------------------------------------------------------------------------------------

    async def _read(self, sql_text: str, args: Sequence[Any]) -> list[sql.Row]:
        connection = await self._readers.get()
        try:
            rows = await connection.execute_fetchall(sql_text, args)
            return rows if isinstance(rows, list) else list(rows)  # a list already (fetchall)
        except Exception as error:
            raise self._translated(error) from error
        finally:
            self._readers.put_nowait(connection)

    def _unavailable(self, error: BaseException) -> bool:
        """A file the database cannot read or write now: I/O errors, a full disk, a lock held too long."""
        return isinstance(error, sqlite3.OperationalError) and any(
            text in str(error) for text in _UNAVAILABLE)

    # -- writes: the group commit in two hops ---------------------------------------------------------

    async def _commit_writes(self, writes: list[log.Write]) -> list[log.Event | sql._Conflict | ValueError]:
        # SQL on the writer thread, Python (checks, encoding, events) here: two threads both running
        # Python would fight over the GIL (5 ms switch interval), which costs far more than a hop.
        keys = sql.keys_of(writes)
        heads, current, compacted = await self._on_writer(self._begin_and_lookup_now, keys)
        try:
            batch = sql.plan_batch(writes, heads=heads, revision=max(current, compacted))
        except BaseException:
            await self._rollback_write()
            raise
        await self._on_writer(self._finish_now, batch)
        return batch.results

    def _begin_and_lookup_now(self, keys: list[codec.Key]) -> tuple[dict[codec.Key, tuple[int, bool]], int, int]:
        db = self._writer_db()
        db.execute("BEGIN IMMEDIATE")
        try:
            return self._lookup_heads_now(keys)
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def _finish_now(self, batch: sql.Batch) -> None:
        db = self._writer_db()
        try:
            if batch.rows:
                db.executemany(sql.SQL_INSERT_EVENT, batch.rows)
                db.executemany(sql.SQL_UPSERT_HEAD, batch.head_rows())
                db.execute("COMMIT")
            else:
                db.execute("ROLLBACK")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise

    def _lookup_heads_now(self, keys: list[codec.Key]) -> tuple[dict[codec.Key, tuple[int, bool]], int, int]:
        heads: dict[codec.Key, tuple[int, bool]] = {}
        current = compacted = 0
        for index, revision, deleted, extra in self._writer_db().execute(_SQL_LOOKUP, (_json.encode(keys),)):
            if index < 0:
                current, compacted = revision, extra
            else:
                heads[keys[index]] = (revision, bool(deleted))
        return heads, current, compacted

    async def _lookup_heads(self, keys: list[codec.Key]) -> tuple[dict[codec.Key, tuple[int, bool]], int, int]:
        return await self._on_writer(self._lookup_heads_now, keys)

    # -- write primitives (compaction, import): one hop per statement -------------------------------

    async def _begin_write(self) -> None:
        await self._on_writer(self._execute_now, "BEGIN IMMEDIATE", ())

    async def _commit_write(self, *, revision: int | None) -> None:
        await self._on_writer(self._execute_now, "COMMIT", ())

    async def _rollback_write(self) -> None:
        await self._on_writer(self._rollback_now)

    def _rollback_now(self) -> None:
        db = self._writer_db()
        if db.in_transaction:
            db.execute("ROLLBACK")

    def _execute_now(self, sql_text: str, args: Sequence[Any]) -> None:
        self._writer_db().execute(sql_text, args)

    def _fetch_now(self, sql_text: str, args: Sequence[Any]) -> list[sql.Row]:
        return self._writer_db().execute(sql_text, args).fetchall()

    def _executemany_now(self, sql_text: str, rows: Sequence[Sequence[Any]]) -> None:
        self._writer_db().executemany(sql_text, rows)

    async def _write_fetch(self, sql_text: str, args: Sequence[Any]) -> list[sql.Row]:
        return await self._on_writer(self._fetch_now, sql_text, args)

    async def _write_execute(self, sql_text: str, args: Sequence[Any]) -> None:
        await self._on_writer(self._execute_now, sql_text, args)

    async def _write_executemany(self, sql_text: str, rows: Sequence[Sequence[Any]]) -> None:
        await self._on_writer(self._executemany_now, sql_text, rows)

    async def _upsert_heads_of(self, rows: list[codec.Row]) -> None:
        # From the rows just inserted, in SQL (in revision order: each key ends at its last row): a
        # fraction of building the heads' rows in Python.
        await self._write_execute(_SQL_UPSERT_HEADS_OF_EVENTS, (rows[0][0], rows[-1][0]))

    async def _secondary_indexes(self) -> list[tuple[str, str]]:
        rows = await self._write_fetch(
            "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'events' AND sql IS NOT NULL",
            ())
        return [(name, definition) for name, definition in rows]
