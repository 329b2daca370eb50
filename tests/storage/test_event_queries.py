"""`cplane log events --name/--user` through SQL (issue #22): migration 0002 adds the indexes to an
existing 0001 database without losing a row, and the filtered scans return exactly the events the
full scan and the Python filter return (SQLite and PostgreSQL), page by page."""

from __future__ import annotations

import pathlib
import sqlite3
from collections.abc import Callable
from typing import Any

import alembic.command
import msgspec
import pytest
import sqlalchemy as sa
from sqlalchemy.ext import asyncio as sa_asyncio

from cp import resources as res
from storage import factory, log, migrating, recording, sql
from tests.storage.conftest import fresh_pg_url
from tests.storage.writes import added

INDEXES = {"events_name_revision", "events_actor_user_revision"}
USERS = ("alice", "bob", "system:node:n1", "")
NAMES = ("web", "db", "cache")


def _row(revision: int, *, name: str, user: str, namespace: str = "default", resource: str = "pods",
         prev: int = 0) -> tuple[Any, ...]:
    return (revision, "ADDED" if prev == 0 else "MODIFIED", "", resource, namespace, name, f"uid-{name}", prev,
            1_700_000_000.0 + revision, user, "kubectl", "tests/1.0", f"req-{revision}",
            b'{"metadata":{"name":"%s"}}' % name.encode())


# ------------------------------------------------------------------------------ migration 0002


def _write_0001_rows(connection: sa.Connection) -> None:
    connection.execute(sa.text(
        "INSERT INTO events VALUES (:r, :t, :g, :res, :ns, :n, :u, :p, :time, :au, :fm, :ua, :rid, :o)"),
        [dict(zip(("r", "t", "g", "res", "ns", "n", "u", "p", "time", "au", "fm", "ua", "rid", "o"),
                  _row(1, name="web", user="alice"), strict=True)),
         dict(zip(("r", "t", "g", "res", "ns", "n", "u", "p", "time", "au", "fm", "ua", "rid", "o"),
                  _row(2, name="web", user="bob", prev=1), strict=True))])
    connection.execute(sa.text("INSERT INTO heads VALUES ('pods', '', 'default', 'web', 2, false)"))


def _to_0001(connection: sa.Connection) -> None:
    alembic.command.upgrade(migrating.alembic_config(connection=connection), "0001")
    _write_0001_rows(connection)


async def _check_migrated(url: str, indexes: Callable[[], Any]) -> None:
    event_log = factory.open_event_log(url=url)
    await event_log.start()  # migrates to head
    try:
        assert event_log.revision == 2
        events = await event_log.scan(start=0, end=10, limit=10)
        assert [(e.revision, e.actor.user) for e in events] == [(1, "alice"), (2, "bob")]
        assert [e.revision for e in await event_log.scan_matching(start=0, end=10, limit=10, user="bob")] == [2]
        assert await indexes() >= INDEXES
    finally:
        await event_log.close()


async def test_an_existing_sqlite_0001_file_is_migrated_on_open_keeping_its_events(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "cplane.db"
    engine = sa.create_engine(f"sqlite:///{path}")
    with engine.begin() as connection:
        _to_0001(connection)
    engine.dispose()
    db = sqlite3.connect(path)
    assert not INDEXES & {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    db.close()

    async def indexes() -> set[str]:
        db = sqlite3.connect(path)
        try:
            assert db.execute("SELECT version_num FROM alembic_version").fetchone() == ("0002",)
            return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        finally:
            db.close()

    await _check_migrated(f"sqlite+aiosqlite:///{path}", indexes)


@pytest.mark.postgres
async def test_an_existing_postgres_0001_schema_is_migrated_on_start_keeping_its_events() -> None:
    async with fresh_pg_url() as pg_url:
        url = sa.make_url(pg_url)
        schema = url.query["schema"]
        plain = url.difference_update_query(["schema"])
        engine = sa_asyncio.create_async_engine(plain, connect_args={"server_settings": {"search_path": schema}})
        try:
            async with engine.begin() as connection:
                await connection.exec_driver_sql(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
                await connection.run_sync(_to_0001)

            async def indexes() -> set[str]:
                async with engine.connect() as connection:
                    version = (await connection.exec_driver_sql("SELECT version_num FROM alembic_version")).scalar()
                    assert version == "0002"
                    rows = await connection.exec_driver_sql(
                        f"SELECT indexname FROM pg_indexes WHERE schemaname = '{schema}' AND tablename = 'events'")
                    return {r[0] for r in rows}

            await _check_migrated(pg_url, indexes)
        finally:
            await engine.dispose()


# ------------------------------------------------------------------------------ SQL filters = scan


async def _fill(event_log: sql.SqlEventLog) -> list[log.Event]:
    """Same names in several resources and namespaces, four users (one empty), in revision order."""
    i = 0
    for namespace in ("default", "shop"):
        for resource in ("pods", "configmaps"):
            for name in NAMES:
                write = added(name, namespace=namespace, resource=resource)
                user = USERS[i % len(USERS)]
                i += 1
                await event_log.append(msgspec.structs.replace(write, actor=msgspec.structs.replace(write.actor, user=user)))
    return await event_log.scan(start=0, end=recording.NO_END, limit=1000)


FILTERS = [
    {"name": "web"}, {"name": "nope"}, {"user": "bob"}, {"user": ""}, {"user": "system:node:n1"},
    {"name": "db", "user": "alice"}, {"name": "web", "namespace": "shop"},
    {"name": "cache", "resource": "configmaps"}, {"name": "web", "resource": "pods", "namespace": "default"},
    {"user": "bob", "type": "ADDED"}, {"name": "web", "actor": "kube"}, {"user": "alice", "actor": "ali"},
]


@pytest.mark.parametrize("fields", FILTERS, ids=lambda f: ",".join(f"{k}={v}" for k, v in f.items()))
@pytest.mark.parametrize("page", [1, 2, 5000])
async def test_sql_filters_return_what_the_scan_returns(event_log: sql.SqlEventLog, fields: dict[str, str],
                                                        page: int, monkeypatch: pytest.MonkeyPatch) -> None:
    every = await _fill(event_log)
    monkeypatch.setattr(recording, "SCAN_PAGE", page)
    kind = res.by_group_resource("", fields["resource"]) if "resource" in fields else None
    flt = recording.EventFilter(kind=kind, **{k: v for k, v in fields.items() if k != "resource"})
    source = recording.SqlSource(event_log, description="test")
    await source._init()
    last = every[-1].revision
    for start, end in ((0, last), (3, last - 2)):
        want = [ev for ev in every if start < ev.revision <= end and flt(ev)]
        got = [ev async for p in recording.events_matching(source, start, end, flt) for ev in p if flt(ev)]
        scanned = [ev async for p in recording.events_between(source, start, end) for ev in p if flt(ev)]
        assert got == want == scanned
        if "name" in fields or "user" in fields:  # only the candidates were read
            read = [ev async for p in recording.events_matching(source, start, end, flt) for ev in p]
            assert len(read) < len([ev for ev in every if start < ev.revision <= end])


def test_the_sqlite_query_plans_use_the_new_indexes(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "cplane.db"
    migrating.upgrade_sqlite(path)
    db = sqlite3.connect(path)
    try:
        for fields, index in (({"name": "web"}, "events_name_revision"),
                              ({"user": "bob"}, "events_actor_user_revision")):
            text, args = sql.scan_matching_sql(start=1, end=recording.NO_END, limit=10,
                                               name=fields.get("name"), user=fields.get("user"))
            plan = " ".join(str(r[-1]) for r in db.execute(f"EXPLAIN QUERY PLAN {text}", args))
            assert f"USING INDEX {index}" in plan and "TEMP B-TREE" not in plan, plan
    finally:
        db.close()
