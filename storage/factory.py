"""Open the event log named by a URL (un-started: the caller awaits `start()` and later `close()`).

- `sqlite+aiosqlite:///ABS/PATH/cplane.db` (default, embedded);
- `postgresql+asyncpg://user@host:port/db[?schema=NAME]` (`schema`: tables live in that schema, which
  is created if missing; the default is the connection's search_path).
"""

from __future__ import annotations

import sqlalchemy as sa

from storage import compaction, sql

Retention = compaction.Retention


def open_event_log(*, url: str, retention: Retention | None = None, durability: str = "normal") -> sql.SqlEventLog:
    parsed = sa.make_url(url)
    if parsed.drivername == "sqlite+aiosqlite":
        from storage import sqlite

        return sqlite.SqliteEventLog(url=parsed, retention=retention, durability=durability)
    if parsed.drivername == "postgresql+asyncpg":
        from storage import postgres  # asyncpg and its dialect load only when used

        return postgres.PostgresEventLog(url=parsed, retention=retention, durability=durability)
    raise ValueError(f"unsupported event log URL {parsed.drivername!r}: "
                     "use sqlite+aiosqlite:///PATH or postgresql+asyncpg://...")
