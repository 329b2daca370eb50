"""The event log's tables, as SQLAlchemy metadata (the model the migrations must produce).

`migrations/versions/*` hold the frozen DDL; `tests/storage/test_schema.py` checks that a migrated
database matches this model. See docs/event-log.md for the meaning of every column.

- `events`: the append-only log, one row per change. `revision` is the global, gapless revision
  (the Kubernetes resourceVersion). The unique index on (key, prev_revision) is kine's optimistic
  lock: two writers that start from the same revision of a key cannot both insert. It is also the
  history index: within a key, prev_revision grows with revision.
- `heads`: the newest revision of every key (a derived index of `events`, maintained in the same
  transaction): lists at the latest revision read only live heads; time-travel lists walk the heads
  of one resource/namespace and seek each key's row at the asked revision.
- `meta`: one row; `compacted_revision` (revisions at or below it are gone).
"""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData()

# Byte-order collation on PostgreSQL, so ORDER BY (namespace, name) matches Kubernetes (Go string
# order) and SQLite's BINARY collation.
_KeyText = sa.Text().with_variant(sa.Text(collation="C"), "postgresql")
_Revision = sa.BigInteger().with_variant(sa.Integer(), "sqlite")  # SQLite: INTEGER PRIMARY KEY = rowid

events = sa.Table(
    "events",
    metadata,
    sa.Column("revision", _Revision, primary_key=True, autoincrement=False),
    sa.Column("type", sa.Text(), nullable=False),  # ADDED | MODIFIED | DELETED
    sa.Column("api_group", _KeyText, nullable=False),
    sa.Column("resource", _KeyText, nullable=False),
    sa.Column("namespace", _KeyText, nullable=False),
    sa.Column("name", _KeyText, nullable=False),
    sa.Column("uid", sa.Text(), nullable=False),
    sa.Column("prev_revision", sa.BigInteger(), nullable=False),
    sa.Column("time", sa.Float(precision=53), nullable=False),
    sa.Column("actor_user", sa.Text(), nullable=False),
    sa.Column("actor_field_manager", sa.Text(), nullable=False),
    sa.Column("actor_user_agent", sa.Text(), nullable=False),
    sa.Column("actor_request_id", sa.Text(), nullable=False),
    sa.Column("object", sa.LargeBinary(), nullable=False),
    sa.Index(
        "events_key_prev_revision",
        "resource", "api_group", "namespace", "name", "prev_revision",
        unique=True,
        postgresql_include=["revision", "type"],
    ),
    # `cplane log events --name N` and `--user U` (migration 0002): seek the name or the
    # authenticated user, then read its events in revision order.
    sa.Index("events_name_revision", "name", "revision"),
    sa.Index("events_actor_user_revision", "actor_user", "revision"),
)

heads = sa.Table(
    "heads",
    metadata,
    sa.Column("resource", _KeyText, primary_key=True),
    sa.Column("api_group", _KeyText, primary_key=True),
    sa.Column("namespace", _KeyText, primary_key=True),
    sa.Column("name", _KeyText, primary_key=True),
    sa.Column("revision", sa.BigInteger(), nullable=False),
    sa.Column("deleted", sa.Boolean(), nullable=False),
    sqlite_with_rowid=False,
)

meta = sa.Table(
    "meta",
    metadata,
    sa.Column("id", sa.Integer(), primary_key=True, autoincrement=False),
    sa.Column("compacted_revision", sa.BigInteger(), nullable=False),
)

# The column order every read returns; `codec.event_from_row` relies on it.
EVENT_COLUMNS = (
    "revision", "type", "api_group", "resource", "namespace", "name", "uid", "prev_revision", "time",
    "actor_user", "actor_field_manager", "actor_user_agent", "actor_request_id", "object",
)
