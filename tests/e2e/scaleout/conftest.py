"""Scale-out fixtures: a fresh PostgreSQL schema per test (as tests/storage does), and the same rule
when the server is unreachable: skip with a notice at the end of the run, or fail under
CPLANE_REQUIRE_PG=1 (CI)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.storage import conftest as storage


@pytest.fixture
async def pg_url() -> AsyncIterator[str]:
    async with storage.fresh_pg_url() as url:
        yield url


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    # tests/storage/conftest.py prints the same notice when it is loaded too; say it once.
    if terminalreporter.config.pluginmanager.is_registered(storage):
        return
    if storage._pg_unreachable and not storage.REQUIRE_PG:
        terminalreporter.write_sep("!", "PostgreSQL tests SKIPPED", yellow=True, bold=True)
        terminalreporter.write_line(f"PostgreSQL unreachable at {storage.PG_URL}: {storage._pg_unreachable[0]}")
        terminalreporter.write_line("The scale-out tests need it. CI sets CPLANE_REQUIRE_PG=1 to fail instead.")
