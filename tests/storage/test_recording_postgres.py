"""A PostgreSQL event log as a source (`--db postgresql+asyncpg://...`): the `log` commands read it as
they read the NDJSON export; a URL whose schema holds no event log fails without creating anything.
Skipped when the server at CPLANE_TEST_PG_URL is unreachable."""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from typing import Any

import asyncpg
import pytest

from api import replay
from cp import cli
from storage import factory, ndjson, recording
from storage import replay as replay_log
from tests import recordings

PG_URL = os.environ.get("CPLANE_TEST_PG_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test")
DSN = PG_URL.replace("postgresql+asyncpg://", "postgresql://", 1)

pytestmark = pytest.mark.postgres


async def _reachable() -> bool:
    try:
        connection = await asyncpg.connect(DSN, timeout=5)
    except (OSError, asyncpg.PostgresError, TimeoutError):
        return False
    await connection.close()
    return True


async def _schema_exists(name: str) -> bool:
    connection = await asyncpg.connect(DSN)
    try:
        return bool(await connection.fetchval("SELECT count(*) FROM pg_namespace WHERE nspname = $1", name))
    finally:
        await connection.close()


async def _drop(name: str) -> None:
    connection = await asyncpg.connect(DSN)
    try:
        await connection.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
    finally:
        await connection.close()


def _url(schema: str) -> str:
    return f"{PG_URL}{'&' if '?' in PG_URL else '?'}schema={schema}"


async def _import(url: str, path: Any) -> None:
    event_log = factory.open_event_log(url=url)
    await event_log.start()
    try:
        with path.open("rb") as lines:
            await ndjson.import_events(event_log, lines=lines)
    finally:
        await event_log.close()


def test_a_postgres_log_reads_as_its_export(capsys: Any, recorded: recordings.Recorded) -> None:
    if not asyncio.run(_reachable()):
        pytest.skip(f"PostgreSQL unreachable at {PG_URL}")
    schema = f"cplane_replay_{uuid.uuid4().hex[:8]}"
    url = _url(schema)
    try:
        asyncio.run(_import(url, recorded.ndjson))
        outputs = []
        for source in (["--db", url], ["-f", str(recorded.ndjson)]):
            capsys.readouterr()
            assert cli.main(["log", "show", *source, "--at", str(recorded.last - 3), "-o", "json"]) == 0
            outputs.append(capsys.readouterr().out)
        assert outputs[0] == outputs[1] and json.loads(outputs[0])["items"]
        capsys.readouterr()
        assert cli.main(["log", "diff", "--db", url, "--against", str(recorded.ndjson), "-o", "json"]) == 0
        body = json.loads(capsys.readouterr().out)
        assert body["forkPoint"] == recorded.last and not (body["added"] or body["removed"] or body["changed"])

        async def load() -> int:
            rec = await recording.open_source(url, in_memory=True)
            return len(rec)  # type: ignore[arg-type]

        assert asyncio.run(load()) == recorded.last

        async def streamed() -> None:
            """A replay streamed from PostgreSQL, 5 events a page, moves as one loaded from the export."""
            pg = await recording.open_source(url)
            try:
                assert isinstance(pg, recording.SqlSource)
                loaded = replay_log.ReplayLog(recording.Recording.from_ndjson(
                    recorded.ndjson.read_bytes().splitlines(), description="export"))
                streamed = await replay_log.StreamReplayLog.open(pg, page=5)
                a, b = replay.Replayer(loaded, speed=None), replay.Replayer(streamed, speed=None)
                while streamed.revision < recorded.last:
                    got_a, got_b = await a.step(7), await b.step(7)
                    assert (got_b.count, got_b.last) == (got_a.count, got_a.last)
                    for resource in ("configmaps", "pods", "namespaces"):
                        want = await loaded.list_objects(group="", resource=resource, namespace=None)
                        got = await streamed.list_objects(group="", resource=resource, namespace=None)
                        assert got.events == want.events
                saved = [ev async for page in streamed.visible_pages(0) for ev in page]
                assert saved == loaded.visible(0)
            finally:
                await pg.close()

        asyncio.run(streamed())
    finally:
        asyncio.run(_drop(schema))

    # A schema without an event log: one error line, and nothing created.
    empty = f"cplane_replay_missing_{uuid.uuid4().hex[:8]}"
    capsys.readouterr()
    assert cli.main(["log", "show", "--db", _url(empty)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a cplane event log (no events table)" in err
    assert not asyncio.run(_schema_exists(empty))
