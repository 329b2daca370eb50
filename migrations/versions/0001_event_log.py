"""The event log: events, heads, meta.

Revision ID: 0001
Revises:
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

_KeyText = sa.Text().with_variant(sa.Text(collation="C"), "postgresql")
_Revision = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "events",
        sa.Column("revision", _Revision, primary_key=True, autoincrement=False),
        sa.Column("type", sa.Text(), nullable=False),
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
    )
    op.create_index(
        "events_key_prev_revision", "events",
        ["resource", "api_group", "namespace", "name", "prev_revision"],
        unique=True, postgresql_include=["revision", "type"],
    )
    op.create_table(
        "heads",
        sa.Column("resource", _KeyText, primary_key=True),
        sa.Column("api_group", _KeyText, primary_key=True),
        sa.Column("namespace", _KeyText, primary_key=True),
        sa.Column("name", _KeyText, primary_key=True),
        sa.Column("revision", sa.BigInteger(), nullable=False),
        sa.Column("deleted", sa.Boolean(), nullable=False),
        sqlite_with_rowid=False,
    )
    meta = op.create_table(
        "meta",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("compacted_revision", sa.BigInteger(), nullable=False),
    )
    op.bulk_insert(meta, [{"id": 1, "compacted_revision": 0}])


def downgrade() -> None:
    op.drop_table("meta")
    op.drop_table("heads")
    op.drop_index("events_key_prev_revision", table_name="events")
    op.drop_table("events")
