"""Open the event log named by a URL (un-started: the caller awaits `start()` and later `close()`).

- `sqlite+aiosqlite:///ABS/PATH/cplane.db` (default, embedded);
- `postgresql+asyncpg://user@host:port/db[?schema=NAME]` (`schema`: tables live in that schema, which
  is created if missing; the default is the connection's search_path).
"""

from __future__ import annotations

from storage import compaction, heads, sql

Retention = compaction.Retention

SQLITE_PREFIX = "sqlite+aiosqlite:///"


def open_event_log(*, url: str, retention: Retention | None = None, durability: str = "normal",
                   cache_bytes: int = heads.DEFAULT_MAX_BYTES, warm_cache: bool = False) -> sql.SqlEventLog:
    """`cache_bytes`, `warm_cache`: the objects kept in memory for LISTs and GETs (`storage.heads`)."""
    if url.startswith(SQLITE_PREFIX):  # parsed by hand: SQLAlchemy stays off the SQLite start-up path
        from storage import sqlite

        path, _, query = url[len(SQLITE_PREFIX):].partition("?")
        if query:
            raise ValueError(f"the SQLite event log takes no URL options, got {query!r}")
        return sqlite.SqliteEventLog(path=path, retention=retention, durability=durability,
                                     cache_bytes=cache_bytes, warm_cache=warm_cache)
    import sqlalchemy as sa

    parsed = sa.make_url(url)
    if parsed.drivername == "sqlite+aiosqlite":
        raise ValueError("the SQLite event log needs a file: sqlite+aiosqlite:///ABS/PATH/cplane.db")
    if parsed.drivername == "postgresql+asyncpg":
        from storage import postgres  # asyncpg and its dialect load only when used

        return postgres.PostgresEventLog(url=parsed, retention=retention, durability=durability,
                                         cache_bytes=cache_bytes, warm_cache=warm_cache)
    raise ValueError(f"unsupported event log URL {parsed.drivername!r}: "
                     "use sqlite+aiosqlite:///PATH or postgresql+asyncpg://...")


def shown(url: str) -> str:
    """An event-log URL as messages show it: without its password (as given when it does not parse)."""
    import sqlalchemy

    try:
        return sqlalchemy.make_url(url).render_as_string(hide_password=True)
    except sqlalchemy.exc.ArgumentError:
        return url
