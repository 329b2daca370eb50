"""The migrations produce exactly the model in storage/schema.py (alembic's autogenerate finds nothing).

In scope: migrations applied by `start()` on both backends. Out of scope: data migrations (none yet).
"""

from __future__ import annotations

import alembic.autogenerate
import alembic.migration
import sqlalchemy as sa
from sqlalchemy.ext import asyncio as sa_asyncio

from storage import schema, sql


def _diff(connection: sa.Connection) -> list[object]:
    context = alembic.migration.MigrationContext.configure(connection, opts={"compare_type": True})
    return alembic.autogenerate.compare_metadata(context, schema.metadata)


async def test_migrated_database_matches_the_model(event_log: sql.SqlEventLog, log_url: str) -> None:
    url = sa.make_url(log_url)
    connect_args = {}
    if url.drivername.startswith("postgresql"):
        connect_args = {"server_settings": {"search_path": url.query["schema"]}}
        url = url.difference_update_query(["schema"])
    engine = sa_asyncio.create_async_engine(url, connect_args=connect_args)
    try:
        async with engine.connect() as connection:
            differences = await connection.run_sync(_diff)
            version = (await connection.exec_driver_sql("SELECT version_num FROM alembic_version")).scalar()
    finally:
        await engine.dispose()
    assert differences == []
    assert version == "0001"
