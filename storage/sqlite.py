"""The event log on SQLite (the default, embedded backend), via SQLAlchemy's aiosqlite engine.

- WAL journal: readers never block the writer and see a committed prefix of the log.
- One writer connection (the group-commit task); `BEGIN IMMEDIATE` takes SQLite's write lock before
  the heads are read, so revisions are allocated and committed in order even if another process
  writes the same file.
- A few reader connections (each runs on its own aiosqlite thread, so reads overlap the writer).
- Durability: "normal" = `synchronous=NORMAL`: a commit is in the WAL file before `append()` returns,
  so no acknowledged write is lost when the process dies (kill -9); after a power loss or OS crash
  the last transactions since the previous WAL sync can be lost. "full" = `synchronous=FULL`: the WAL
  is fsync'ed at every commit (group commit amortises it), so acknowledged writes survive power loss.

The hot paths use the aiosqlite driver connection underneath SQLAlchemy's pooled connection: one
thread hop per statement, no SQL compilation, rows as plain tuples.
"""

from __future__ import annotations

import asyncio
import contextlib
import pathlib
import sqlite3
from collections.abc import Sequence
from typing import Any

import msgspec
import sqlalchemy as sa
from sqlalchemy import event as sa_event
from sqlalchemy.ext import asyncio as sa_asyncio

from storage import codec, compaction, migrating, sql

READERS = 2

_json = msgspec.json.Encoder()

_SQL_LOOKUP = (
    "SELECT k.key, h.revision, h.deleted, 0 FROM json_each(?) AS k JOIN heads h "
    "ON h.resource = k.value ->> 1 AND h.api_group = k.value ->> 0 "
    "AND h.namespace = k.value ->> 2 AND h.name = k.value ->> 3 "
    "UNION ALL SELECT -1, (SELECT COALESCE(MAX(revision), 0) FROM events), 0, "
    "(SELECT compacted_revision FROM meta)"
)


class SqliteEventLog(sql.SqlEventLog):
    backend = "sqlite"

    def __init__(self, *, url: sa.URL, retention: compaction.Retention | None = None,
                 durability: str = "normal", subscriber_buffer: int = 1000) -> None:
        super().__init__(retention=retention, durability=durability, subscriber_buffer=subscriber_buffer)
        if not url.database or url.database == ":memory:":
            raise ValueError("the SQLite event log needs a file: sqlite+aiosqlite:///ABS/PATH/cplane.db")
        self.path = pathlib.Path(url.database)
        self._url = url
        self._engine: sa_asyncio.AsyncEngine | None = None
        self._connections: list[sa_asyncio.AsyncConnection] = []
        self._writer: Any = None  # aiosqlite.Connection
        self._readers: asyncio.Queue[Any] = asyncio.Queue()

    async def _open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        engine = self._engine = sa_asyncio.create_async_engine(
            self._url, pool_size=READERS + 2, max_overflow=2)
        synchronous = "FULL" if self.durability == "full" else "NORMAL"

        @sa_event.listens_for(engine.sync_engine, "connect")
        def _configure(dbapi_connection: Any, _record: Any) -> None:
            # Autocommit at the driver: transactions are explicit (BEGIN IMMEDIATE / BEGIN below).
            dbapi_connection.isolation_level = None
            cursor = dbapi_connection.cursor()
            for pragma in ("journal_mode=WAL", f"synchronous={synchronous}", "busy_timeout=30000",
                           "cache_size=-65536", "temp_store=MEMORY", "foreign_keys=OFF"):
                cursor.execute(f"PRAGMA {pragma}")
            cursor.close()

        @sa_event.listens_for(engine.sync_engine, "begin")
        def _begin(connection: sa.Connection) -> None:
            connection.exec_driver_sql("BEGIN IMMEDIATE")

        await migrating.upgrade(engine)
        self._writer = await self._driver_connection()
        for _ in range(READERS):
            self._readers.put_nowait(await self._driver_connection())

    async def _driver_connection(self) -> Any:
        assert self._engine is not None
        connection = await self._engine.connect()
        self._connections.append(connection)
        raw = await connection.get_raw_connection()
        return raw.driver_connection

    async def _close_backend(self) -> None:
        for connection in self._connections:
            await connection.close()
        self._connections.clear()
        if self._engine is not None:
            await self._engine.dispose()
            self._engine = None

    async def _read(self, sql_text: str, args: Sequence[Any]) -> list[sql.Row]:
        connection = await self._readers.get()
        try:
            return list(await connection.execute_fetchall(sql_text, args))
        finally:
            self._readers.put_nowait(connection)

    async def _begin_write(self) -> None:
        await self._writer.execute("BEGIN IMMEDIATE")

    async def _commit_write(self, *, revision: int | None) -> None:
        await self._writer.execute("COMMIT")

    async def _rollback_write(self) -> None:
        with contextlib.suppress(sqlite3.OperationalError):  # "no transaction is active"
            await self._writer.execute("ROLLBACK")

    async def _write_fetch(self, sql_text: str, args: Sequence[Any]) -> list[sql.Row]:
        return list(await self._writer.execute_fetchall(sql_text, args))

    async def _write_execute(self, sql_text: str, args: Sequence[Any]) -> None:
        await self._writer.execute(sql_text, args)

    async def _write_executemany(self, sql_text: str, rows: Sequence[Sequence[Any]]) -> None:
        await self._writer.executemany(sql_text, rows)

    async def _lookup_heads(self, keys: list[codec.Key]) -> tuple[dict[codec.Key, tuple[int, bool]], int, int]:
        rows = await self._writer.execute_fetchall(_SQL_LOOKUP, (_json.encode(keys),))
        heads: dict[codec.Key, tuple[int, bool]] = {}
        current = compacted = 0
        for index, revision, deleted, extra in rows:
            if index < 0:
                current, compacted = revision, extra
            else:
                heads[keys[index]] = (revision, bool(deleted))
        return heads, current, compacted

    async def _secondary_indexes(self) -> list[tuple[str, str]]:
        rows = await self._write_fetch(
            "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'events' AND sql IS NOT NULL",
            ())
        return [(name, definition) for name, definition in rows]
