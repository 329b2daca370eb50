"""Writing another cluster's changes into an EMPTY event log, all or nothing: the events `cp.importing`
numbers, inserted in chunks inside one write transaction (`SqlEventLog.bulk_import`), as
`storage.ndjson.import_events` inserts an export. A source that fails part-way (a bad line raises
`log.ImportRejectedError` naming it) leaves the store empty. A recording (`cplane record`) goes on
appending batches after that (`append_events`), each all or nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterable, Iterable

import structlog

from cp import importing
from storage import codec, sql
from storage import log as contract

CHUNK = 5000
_logger = structlog.get_logger(__name__)


def row(event: importing.Event) -> codec.Row:
    """An event as the row `BulkImport.insert` takes."""
    return (event.revision, event.type, event.group, event.resource, event.namespace, event.name, event.uid,
            event.prev_revision, event.time, event.user, event.field_manager, event.user_agent,
            event.request_id, event.object)


async def _events(source: Iterable[importing.Event] | AsyncIterable[importing.Event]
                  ) -> AsyncIterable[importing.Event]:
    if isinstance(source, AsyncIterable):
        async for event in source:
            yield event
    else:
        for event in source:
            yield event


async def import_events(log: sql.SqlEventLog,
                        events: Iterable[importing.Event] | AsyncIterable[importing.Event]) -> int:
    """Insert `events` (consecutive revisions from 1, as a `Sequencer` numbers them) into an empty
    store, atomically. Returns how many were written."""
    started = time.perf_counter()
    heads: dict[codec.Key, tuple[int, bool]] = {}
    count = last = 0
    async with log.bulk_import() as sink:
        inserting: asyncio.Future[None] | None = None
        try:
            chunk: list[codec.Row] = []
            async for event in _events(events):
                if event.revision != last + 1:
                    raise contract.ImportRejectedError(
                        f"revision {event.revision} after {last}: imported events are numbered without gaps", line=0)
                last = event.revision
                heads[(event.group, event.resource, event.namespace, event.name)] = (
                    event.revision, event.type == "DELETED")
                chunk.append(row(event))
                count += 1
                if len(chunk) >= CHUNK:
                    if inserting is not None:
                        await inserting
                    inserting = asyncio.ensure_future(sink.insert(chunk))
                    chunk = []
            if inserting is not None:
                await inserting
            if chunk:
                await sink.insert(chunk)
        except BaseException:
            if inserting is not None and not inserting.done():
                with contextlib.suppress(BaseException):
                    await inserting
            raise
        await sink.finish(heads=heads, compacted=0)
    _logger.info("events_imported", events=count, revision=last,
                 duration_ms=round((time.perf_counter() - started) * 1000, 1), outcome="ok")
    return count


async def append_events(log: sql.SqlEventLog, events: Iterable[importing.Event]) -> int:
    """Append one batch of numbered events (the next revisions of the log, as a `Sequencer` started
    at `log.revision + 1` numbers them) in one transaction. Returns the newest revision."""
    return await log.append_numbered([row(event) for event in events])
