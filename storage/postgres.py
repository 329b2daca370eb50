"""The event log on PostgreSQL, via SQLAlchemy's asyncpg engine; several server processes may share it.

- Writers (in any process) take `LOCK TABLE events IN EXCLUSIVE MODE` for the whole batch: the next
  revision is max+1 read under the lock, and commits happen in revision order, so a reader's snapshot
  always holds a gapless prefix of the log (eventsourcing's approach). Readers are not blocked (the
  lock allows ACCESS SHARE).
- Each commit also sends `pg_notify(channel, newest revision)`; every process LISTENs on a dedicated
  connection and its poller reads the new events at once (polling every `poll_interval` is the
  fallback if a notification is missed, e.g. while the listening connection reconnects).
- The channel is per schema, so logs in different schemas of one database do not wake each other.
- Durability follows the server's `synchronous_commit` (on by default: a commit is flushed to the
  server's WAL before `append()` returns); `durability` only matters for SQLite.

Hot paths use asyncpg directly (prepared statements, arrays via `unnest`, COPY for imports).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
import structlog
from sqlalchemy.ext import asyncio as sa_asyncio

from storage import codec, compaction, heads, migrating, schema, sql

_logger = structlog.get_logger(__name__)

READERS = 3
CONNECT_TIMEOUT = 5.0  # seconds to open a connection: while the database is unreachable, requests fail this fast

_SQL_LOOKUP = (
    "SELECT k.i - 1, h.revision, CASE WHEN h.deleted THEN 1 ELSE 0 END, 0::bigint "
    "FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS k(g, r, ns, n, i) "
    "JOIN heads h ON h.resource = k.r AND h.api_group = k.g AND h.namespace = k.ns AND h.name = k.n "
    "UNION ALL SELECT -1, (SELECT COALESCE(MAX(revision), 0) FROM events), 0, "
    "(SELECT compacted_revision FROM meta)"
)
_SQL_INSERT_EVENTS = (
    f"INSERT INTO events ({', '.join(schema.EVENT_COLUMNS)}) SELECT * FROM unnest("
    "$1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bigint[], "
    "$9::float8[], $10::text[], $11::text[], $12::text[], $13::text[], $14::bytea[])"
)
_SQL_UPSERT_HEADS = (
    "INSERT INTO heads (resource, api_group, namespace, name, revision, deleted) SELECT * FROM unnest("
    "$1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::bool[]) "
    "ON CONFLICT (resource, api_group, namespace, name) "
    "DO UPDATE SET revision = excluded.revision, deleted = excluded.deleted"
)

_placeholders: dict[str, str] = {}


def _numbered(sql_text: str) -> str:
    """`?` placeholders -> `$1, $2...` (asyncpg). The shared SQL has no other `?`."""
    out = _placeholders.get(sql_text)
    if out is None:
        parts = sql_text.split("?")
        out = parts[0] + "".join(f"${i}{part}" for i, part in enumerate(parts[1:], 1))
        _placeholders[sql_text] = out
    return out


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


class PostgresEventLog(sql.SqlEventLog):
    backend = "postgresql"
    list_sql = sql.SQL_LIST_LATERAL

    def __init__(self, *, url: sa.URL, retention: compaction.Retention | None = None,
                 durability: str = "normal", subscriber_buffer: int = 1000,
                 cache_bytes: int = heads.DEFAULT_MAX_BYTES, warm_cache: bool = False) -> None:
        super().__init__(retention=retention, durability=durability, subscriber_buffer=subscriber_buffer,
                         cache_bytes=cache_bytes, warm_cache=warm_cache)
        self.schema: str | None = url.query.get("schema")  # type: ignore[assignment]
        self._url = url.difference_update_query(["schema"])
        self._engine: sa_asyncio.AsyncEngine | None = None
        self._connections: dict[int, sa_asyncio.AsyncConnection] = {}
        self._writer: Any = None  # asyncpg.Connection
        self._listener: Any = None
        self._readers: asyncio.Queue[Any] = asyncio.Queue()
        self._channel = ""

    # -- connections --------------------------------------------------------------------------------

    async def _open(self) -> None:
        server_settings = {"jit": "off"}
        if self.schema:
            server_settings["search_path"] = self.schema
        engine = self._engine = sa_asyncio.create_async_engine(
            self._url, pool_size=READERS + 2, max_overflow=4,
            connect_args={"server_settings": server_settings, "timeout": CONNECT_TIMEOUT})
        if self.schema:
            # Replicas of a new deployment start together, and CREATE SCHEMA IF NOT EXISTS is not safe
            # against a concurrent creator (one of them fails on the catalog's unique index): the
            # creators take turns under a transaction-scoped advisory lock named after the schema.
            async with engine.begin() as connection:
                await connection.exec_driver_sql(
                    f"SELECT pg_advisory_xact_lock(hashtext({_literal('cplane-schema:' + self.schema)}))")
                await connection.exec_driver_sql(
                    f'CREATE SCHEMA IF NOT EXISTS "{self.schema.replace(chr(34), chr(34) * 2)}"')
        await migrating.upgrade(engine)
        self._writer = await self._driver_connection()
        for _ in range(READERS):
            self._readers.put_nowait(await self._driver_connection())
        current_schema = await self._writer.fetchval("SELECT current_schema()")
        self._channel = f"cplane_{current_schema}"[:63]
        await self._listen()

    async def _driver_connection(self) -> Any:
        assert self._engine is not None
        connection = await self._engine.connect()
        raw = await connection.get_raw_connection()
        driver = raw.driver_connection
        self._connections[id(driver)] = connection
        return driver

    async def _release(self, driver: Any) -> None:
        connection = self._connections.pop(id(driver), None)
        if connection is not None:
            with contextlib.suppress(Exception):
                await connection.invalidate()
                await connection.close()

    async def _replace_if_broken(self, driver: Any) -> Any:
        if not driver.is_closed():
            return driver
        await self._release(driver)
        return await self._driver_connection()

    async def _listen(self) -> None:
        self._listener = await self._driver_connection()
        await self._listener.add_listener(self._channel, self._on_notify)

    def _on_notify(self, _connection: Any, _pid: int, _channel: str, payload: str) -> None:
        try:
            revision = int(payload)
        except ValueError:
            revision = -1
        if revision < 0 or revision > self._broadcaster.revision:
            self._wake_poller.set()

    async def _catch_up(self) -> None:
        if self._listener is None or self._listener.is_closed():
            if self._listener is not None:
                await self._release(self._listener)
                self._listener = None
            await self._listen()
            _logger.info("listener_reconnected", revision=self.revision, outcome="ok")
        await super()._catch_up()

    async def _close_backend(self) -> None:
        if self._listener is not None and not self._listener.is_closed():
            with contextlib.suppress(Exception):
                await self._listener.remove_listener(self._channel, self._on_notify)
        for connection in list(self._connections.values()):
            with contextlib.suppress(Exception):
                await connection.close()
        self._connections.clear()
        if self._engine is not None:
            await self._engine.dispose()
            self._engine = None

    # -- primitives ---------------------------------------------------------------------------------

    async def _read(self, sql_text: str, args: Sequence[Any]) -> list[sql.Row]:
        connection = await self._readers.get()
        try:
            connection = await self._replace_if_broken(connection)  # e.g. after a server restart
            rows: list[sql.Row] = await connection.fetch(_numbered(sql_text), *args)
            return rows
        except Exception as error:
            raise self._translated(error) from error
        finally:
            self._readers.put_nowait(connection)

    def _unavailable(self, error: BaseException) -> bool:
        """Lost or refused connections, a server shutting down or starting, connect timeouts: the
        database cannot be reached (SQLAlchemy wraps asyncpg's errors when it opens connections)."""
        import asyncpg

        seen: set[int] = set()
        current: BaseException | None = error
        while current is not None and id(current) not in seen:
            seen.add(id(current))
            if isinstance(current, OSError | TimeoutError | asyncpg.exceptions.InterfaceError
                          | asyncpg.exceptions.PostgresConnectionError | asyncpg.exceptions.CannotConnectNowError
                          | asyncpg.exceptions.AdminShutdownError | asyncpg.exceptions.CrashShutdownError):
                return True
            if getattr(current, "connection_invalidated", False):
                return True
            current = getattr(current, "orig", None) or current.__cause__
        return False

    async def _begin_write(self) -> None:
        self._writer = await self._replace_if_broken(self._writer)
        await self._writer.execute("BEGIN; LOCK TABLE events IN EXCLUSIVE MODE")

    async def _commit_write(self, *, revision: int | None) -> None:
        if revision is None:
            await self._writer.execute("COMMIT")
        else:
            await self._writer.execute(f"SELECT pg_notify({_literal(self._channel)}, '{int(revision)}'); COMMIT")

    async def _rollback_write(self) -> None:
        if not self._writer.is_closed() and self._writer.is_in_transaction():
            await self._writer.execute("ROLLBACK")

    async def _write_fetch(self, sql_text: str, args: Sequence[Any]) -> list[sql.Row]:
        rows: list[sql.Row] = await self._writer.fetch(_numbered(sql_text), *args)
        return rows

    async def _write_execute(self, sql_text: str, args: Sequence[Any]) -> None:
        await self._writer.execute(_numbered(sql_text), *args)

    async def _write_executemany(self, sql_text: str, rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            return
        if sql_text is sql.SQL_UPSERT_HEAD or sql_text is sql.SQL_INSERT_HEAD:
            await self._writer.execute(_SQL_UPSERT_HEADS, *map(list, zip(*rows, strict=True)))
        else:
            await self._writer.executemany(_numbered(sql_text), rows)

    async def _insert_events(self, rows: list[codec.Row]) -> None:
        if len(rows) >= 5000:  # imports
            await self._writer.copy_records_to_table("events", records=rows, columns=schema.EVENT_COLUMNS,
                                                     schema_name=self.schema)
        else:
            await self._writer.execute(_SQL_INSERT_EVENTS, *map(list, zip(*rows, strict=True)))

    async def _lookup_heads(self, keys: list[codec.Key]) -> tuple[dict[codec.Key, tuple[int, bool]], int, int]:
        groups, resources, namespaces, names = (list(column) for column in zip(*keys, strict=True))
        rows = await self._writer.fetch(_SQL_LOOKUP, groups, resources, namespaces, names)
        heads: dict[codec.Key, tuple[int, bool]] = {}
        current = compacted = 0
        for index, revision, deleted, extra in rows:
            if index < 0:
                current, compacted = revision, extra
            else:
                heads[keys[index]] = (revision, bool(deleted))
        return heads, current, compacted

    async def _secondary_indexes(self) -> list[tuple[str, str]]:
        rows = await self._writer.fetch(
            "SELECT i.indexname, i.indexdef FROM pg_indexes i WHERE i.schemaname = current_schema() "
            "AND i.tablename = 'events' AND i.indexname NOT IN ("
            "  SELECT conname FROM pg_constraint WHERE conrelid = 'events'::regclass AND contype = 'p')")
        return [(row[0], row[1]) for row in rows]

    async def _after_bulk_load(self) -> None:
        # Fresh statistics, as after any bulk load: without them the planner guesses a tiny table and
        # sorts whole revision ranges for every page of a scan.
        for table in ("events", "heads"):
            await self._writer.execute(f"ANALYZE {table}")
