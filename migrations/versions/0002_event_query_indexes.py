"""Indexes for `cplane log events --name/--user`: events by object name and by authenticated user.

`--name N` (with or without --resource/-n) seeks (name, revision): a name is selective on its own, and
the revision order lets a query read one page of a revision range in order; the resource, group and
namespace of the few rows found are checked on them. `--user U` seeks (actor_user, revision). The
existing rows are indexed in place; nothing else changes.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-05
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("events_name_revision", "events", ["name", "revision"])
    op.create_index("events_actor_user_revision", "events", ["actor_user", "revision"])


def downgrade() -> None:
    op.drop_index("events_actor_user_revision", table_name="events")
    op.drop_index("events_name_revision", table_name="events")
