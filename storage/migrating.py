"""Apply the alembic migrations under `migrations/` at start-up (upgrade to head)."""

from __future__ import annotations

import pathlib
import time

import alembic.command
import alembic.config
import sqlalchemy as sa
import structlog
from sqlalchemy.ext import asyncio as sa_asyncio

import migrations

_logger = structlog.get_logger(__name__)

MIGRATIONS_DIR = pathlib.Path(migrations.__file__).parent


def alembic_config(*, connection: sa.Connection | None = None) -> alembic.config.Config:
    config = alembic.config.Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = connection
    return config


def _upgrade(connection: sa.Connection) -> None:
    if connection.dialect.name == "postgresql":
        # Several servers may start at once on one database: one migrates, the others wait.
        connection.exec_driver_sql(
            "SELECT pg_advisory_xact_lock(hashtext('cplane-migrations:' || current_schema()))")
    alembic.command.upgrade(alembic_config(connection=connection), "head")


async def upgrade(engine: sa_asyncio.AsyncEngine) -> None:
    started = time.perf_counter()
    async with engine.begin() as connection:
        await connection.run_sync(_upgrade)
    _logger.debug("migrations_applied", duration_ms=round((time.perf_counter() - started) * 1000, 1),
                  outcome="ok")
