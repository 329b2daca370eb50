"""Apply the alembic migrations under `migrations/` at start-up (upgrade to head).

SQLAlchemy and alembic load only when a migration actually runs: a database already at head (both
backends) and a fresh SQLite file (created from `storage.sqlite`'s snapshot of the head schema) need
neither.
"""

from __future__ import annotations

import functools
import pathlib
import re
import time
from typing import TYPE_CHECKING, Any

import structlog

import migrations

if TYPE_CHECKING:
    import alembic.config
    import sqlalchemy as sa
    from sqlalchemy.ext import asyncio as sa_asyncio

_logger = structlog.get_logger(__name__)

MIGRATIONS_DIR = pathlib.Path(migrations.__file__).parent


def alembic_config(*, connection: sa.Connection | None = None) -> alembic.config.Config:
    import alembic.config

    config = alembic.config.Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = connection
    return config


@functools.cache
def head_revision() -> str:
    """The newest migration, read from the files (no alembic import: start-up stays fast)."""
    revisions: dict[str, str | None] = {}
    for path in (MIGRATIONS_DIR / "versions").glob("*.py"):
        text = path.read_text()
        rev = re.search(r'^revision\s*=\s*"([^"]+)"', text, re.M)
        down = re.search(r'^down_revision\s*=\s*(?:"([^"]+)"|None)', text, re.M)
        if rev:
            revisions[rev.group(1)] = down.group(1) if down else None
    heads = set(revisions) - {d for d in revisions.values() if d}
    if len(heads) != 1:
        raise RuntimeError(f"migrations must have exactly one head, found {sorted(heads)}")
    return heads.pop()


def _current(connection: sa.Connection) -> str | None:
    import sqlalchemy as sa

    if not sa.inspect(connection).has_table("alembic_version"):
        return None
    row = connection.exec_driver_sql("SELECT version_num FROM alembic_version").first()
    return str(row[0]) if row else None


def _upgrade(connection: sa.Connection) -> None:
    import alembic.command

    if connection.dialect.name == "postgresql":
        # Several servers may start at once on one database: one migrates, the others wait.
        connection.exec_driver_sql(
            "SELECT pg_advisory_xact_lock(hashtext('cplane-migrations:' || current_schema()))")
    alembic.command.upgrade(alembic_config(connection=connection), "head")


async def upgrade(engine: sa_asyncio.AsyncEngine) -> None:
    """Upgrade the database behind `engine` (PostgreSQL) to head; nothing to do when it is there."""
    started = time.perf_counter()
    async with engine.connect() as connection:
        current = await connection.run_sync(_current)
    if current == head_revision():
        _logger.debug("migrations_current", revision=current, outcome="skipped")
        return
    async with engine.begin() as connection:
        await connection.run_sync(_upgrade)
    _logger.debug("migrations_applied", duration_ms=round((time.perf_counter() - started) * 1000, 1),
                  outcome="ok")


def upgrade_sqlite(path: pathlib.Path) -> None:
    """Upgrade the SQLite file at `path` to head with alembic (blocking: call it off the event loop).
    The transaction starts with `BEGIN IMMEDIATE`, so two processes starting on one file migrate one
    after the other (SQLite's DDL is transactional)."""
    import sqlalchemy as sa
    from sqlalchemy import event as sa_event
    from sqlalchemy import pool

    started = time.perf_counter()
    engine = sa.create_engine(f"sqlite:///{path}", poolclass=pool.NullPool)

    @sa_event.listens_for(engine, "connect")
    def _autocommit(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # transactions are explicit
        dbapi_connection.execute("PRAGMA busy_timeout=30000")

    @sa_event.listens_for(engine, "begin")
    def _begin(connection: sa.Connection) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    try:
        with engine.begin() as connection:
            if _current(connection) != head_revision():
                _upgrade(connection)
    finally:
        engine.dispose()
    _logger.debug("migrations_applied", duration_ms=round((time.perf_counter() - started) * 1000, 1),
                  outcome="ok")
