"""Alembic environment: runs on the connection `storage.migrating` hands over (online only)."""

from __future__ import annotations

from alembic import context

from storage import schema

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=schema.metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
