"""The migrations produce exactly the model in storage/schema.py (alembic's autogenerate finds nothing),
and the SQLite head-schema snapshot (used for fresh files) is exactly what the migrations produce.

In scope: migrations applied by `start()` on both backends. Out of scope: data migrations (none yet).
"""

from __future__ import annotations

import asyncio
import pathlib
import sqlite3

import alembic.autogenerate
import alembic.migration
import pytest
import sqlalchemy as sa
from sqlalchemy.ext import asyncio as sa_asyncio

from storage import factory, migrating, schema, sql, sqlite
from tests.storage.conftest import fresh_pg_url


def _diff(connection: sa.Connection) -> list[object]:
    context = alembic.migration.MigrationContext.configure(connection, opts={"compare_type": True})
    return alembic.autogenerate.compare_metadata(context, schema.metadata)


async def test_migrated_database_matches_the_model(event_log: sql.SqlEventLog, log_url: str) -> None:
    url = sa.make_url(log_url)
    connect_args = {}
    if url.drivername.startswith("postgresql"):
        connect_args = {"server_settings": {"search_path": url.query["schema"]}}
        url = url.difference_update_query(["schema"])
    engine = sa_asyncio.create_async_engine(url, connect_args=connect_args)
    try:
        async with engine.connect() as connection:
            differences = await connection.run_sync(_diff)
            version = (await connection.exec_driver_sql("SELECT version_num FROM alembic_version")).scalar()
    finally:
        await engine.dispose()
    assert differences == []
    assert version == migrating.head_revision() == "0002"


def _sqlite_schema(path: pathlib.Path) -> dict[str, object]:
    db = sqlite3.connect(path)
    try:
        objects = sorted((kind, name, "".join((text or "").split()))
                         for kind, name, text in db.execute("SELECT type, name, sql FROM sqlite_master"))
        return {"objects": objects, "meta": db.execute("SELECT * FROM meta").fetchall(),
                "version": db.execute("SELECT version_num FROM alembic_version").fetchall()}
    finally:
        db.close()


async def _start_and_close(path: pathlib.Path) -> None:
    event_log = sqlite.SqliteEventLog(path=path)
    await event_log.start()
    await event_log.close()


async def test_fresh_sqlite_snapshot_is_what_the_migrations_produce(tmp_path: pathlib.Path) -> None:
    """A fresh SQLite file is created from `sqlite.HEAD_SCHEMA`, not by alembic: it must be exactly
    what alembic makes (tables, indexes, WITHOUT ROWID, the meta row and the stamped revision)."""
    assert migrating.head_revision() == sqlite.HEAD_SCHEMA_REVISION, \
        "a migration was added: regenerate storage/sqlite.py HEAD_SCHEMA from a migrated database"
    migrated = tmp_path / "migrated.db"
    migrating.upgrade_sqlite(migrated)
    fresh = tmp_path / "fresh.db"
    await _start_and_close(fresh)
    assert _sqlite_schema(fresh) == _sqlite_schema(migrated)


async def test_sqlite_falls_back_to_alembic_when_the_snapshot_is_stale(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite, "HEAD_SCHEMA_REVISION", "stale")
    stale = tmp_path / "stale.db"
    await _start_and_close(stale)
    migrated = tmp_path / "migrated.db"
    migrating.upgrade_sqlite(migrated)
    assert _sqlite_schema(stale) == _sqlite_schema(migrated)


async def test_sqlite_at_head_is_left_alone_and_keeps_its_data(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "c.db"
    await _start_and_close(path)
    db = sqlite3.connect(path)
    db.execute("UPDATE meta SET compacted_revision = 7")
    db.commit()
    db.close()
    await _start_and_close(path)
    assert _sqlite_schema(path)["meta"] == [(1, 7)]


@pytest.mark.postgres
@pytest.mark.parametrize("round_", range(5))
async def test_servers_starting_at_once_on_a_new_schema_all_start(round_: int) -> None:
    """Replicas of a fresh deployment start together: one creates the schema and migrates, the others
    wait for it (CREATE SCHEMA IF NOT EXISTS alone is not safe against a concurrent creator)."""
    async with fresh_pg_url() as url:
        logs = [factory.open_event_log(url=url) for _ in range(6)]
        try:
            await asyncio.gather(*(event_log.start() for event_log in logs))
            revisions = {event_log.revision for event_log in logs}
        finally:
            for event_log in logs:
                await event_log.close()
    assert len(revisions) == 1
