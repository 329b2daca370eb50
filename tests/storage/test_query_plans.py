"""The LIST queries keep their plan: walk the heads in key order, one indexed lookup per head.

In scope: the four LIST statements (latest / past revision x one namespace / all) on both backends,
on PostgreSQL also after ANALYZE (table statistics once tempted it to hash the whole events table).
Out of scope: timings (bench/storage.py).
"""

from __future__ import annotations

import asyncio

from storage import postgres, sql
from tests.storage import writes


async def plan(event_log: sql.SqlEventLog, sql_text: str, args: list[object]) -> str:
    if event_log.backend == "sqlite":
        rows = await event_log._read("EXPLAIN QUERY PLAN " + sql_text, args)
        return "\n".join(str(row[-1]) for row in rows)
    assert isinstance(event_log, postgres.PostgresEventLog)
    rows = await event_log._read("EXPLAIN " + sql_text, args)
    return "\n".join(row[0] for row in rows)


async def assert_loops_without_sorting(event_log: sql.SqlEventLog) -> None:
    for (at_revision, namespaced), sql_text in event_log.list_sql.items():
        args: list[object] = [10, 10] if at_revision else []
        args += ["pods", "", "ns1", ""] if namespaced else ["pods", "", "", ""]
        args.append(sql.NO_LIMIT)
        text = await plan(event_log, sql_text, args)
        assert "TEMP B-TREE" not in text and "Sort" not in text, text
        assert "Hash" not in text and "SCAN events" not in text and "Seq Scan on events" not in text, text


async def test_list_plans_loop_over_heads_without_sorting(event_log: sql.SqlEventLog) -> None:
    await asyncio.gather(*(event_log.append(writes.added(f"p{i:04d}", namespace=f"ns{i % 4}")) for i in range(400)))
    await assert_loops_without_sorting(event_log)
    if event_log.backend == "postgresql":  # autovacuum will analyze the tables sooner or later
        for table in ("events", "heads"):
            await event_log._write_execute(f"ANALYZE {table}", ())
        await assert_loops_without_sorting(event_log)
