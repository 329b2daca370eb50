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
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable
from typing import TypeVar

import structlog

from cp import importing
from storage import codec, sql
from storage import log as contract

CHUNK = 5000
_T = TypeVar("_T")
_logger = structlog.get_logger(__name__)


# An encoded `importing.Event` (array-like) decodes as this: its row.
WireRow = tuple[int, str, str, str, str, str, str, int, float, str, str, str, str, bytes]


def row(event: importing.Event) -> codec.Row:
    """An event as the row `BulkImport.insert` takes."""
    return (event.revision, event.type, event.group, event.resource, event.namespace, event.name, event.uid,
            event.prev_revision, event.time, event.user, event.field_manager, event.user_agent,
            event.request_id, event.object)


async def _each(source: Iterable[_T] | AsyncIterable[_T]) -> AsyncIterator[_T]:
    """A plain or an async iterable, as an async one."""
    if isinstance(source, AsyncIterable):
        async for item in source:
            yield item
    else:
        for item in source:
            yield item


async def import_events(log: sql.SqlEventLog,
                        events: Iterable[importing.Event] | AsyncIterable[importing.Event]) -> int:
    """Insert `events` (consecutive revisions from 1, as a `Sequencer` numbers them) into an empty
    store, atomically. Returns how many were written."""
    heads: dict[codec.Key, tuple[int, bool]] = {}

    async def chunks() -> AsyncIterator[list[codec.Row]]:
        chunk: list[codec.Row] = []
        async for event in _each(events):
            heads[(event.group, event.resource, event.namespace, event.name)] = (
                event.revision, event.type == "DELETED")
            chunk.append(row(event))
            if len(chunk) >= CHUNK:
                yield chunk
                chunk = []
        if chunk:
            yield chunk

    return await import_rows(log, chunks(), heads=lambda: heads)


async def import_rows(log: sql.SqlEventLog, chunks: Iterable[list[codec.Row]] | AsyncIterable[list[codec.Row]],
                      *, heads: Callable[[], dict[codec.Key, tuple[int, bool]]] | None = None,
                      keep_indexes: bool = False) -> int:
    """Insert chunks of rows (`row`; consecutive revisions from 1) into an empty store, atomically:
    each chunk is inserted while the next is made. `heads()`, asked once every chunk is in, gives
    each key's last revision and whether it is deleted; without it, each chunk's keys are written to
    the heads with the chunk (more work in all, but while the source makes the next chunks instead of
    after the last: for a source slower than the inserts). `keep_indexes`: see
    `SqlEventLog.bulk_import`. Returns how many rows were written."""
    started = time.perf_counter()
    count = last = 0
    async with log.bulk_import(keep_indexes=keep_indexes) as sink:
        inserting: asyncio.Future[None] | None = None
        try:
            async for chunk in _each(chunks):
                if not chunk:
                    continue
                if chunk[0][0] != last + 1 or chunk[-1][0] != last + len(chunk):
                    raise contract.ImportRejectedError(
                        f"revisions {chunk[0][0]}..{chunk[-1][0]} after {last}: imported events are numbered "
                        "without gaps", line=0)
                last = chunk[-1][0]
                count += len(chunk)
                if inserting is not None:
                    await inserting
                inserting = asyncio.ensure_future(sink.insert(chunk, heads=heads is None))
            if inserting is not None:
                await inserting
        except BaseException:
            if inserting is not None and not inserting.done():
                with contextlib.suppress(BaseException):
                    await inserting
            raise
        await sink.finish(heads=heads() if heads else {}, compacted=0)
    _logger.info("events_imported", events=count, revision=last,
                 duration_ms=round((time.perf_counter() - started) * 1000, 1), outcome="ok")
    return count


async def append_events(log: sql.SqlEventLog, events: Iterable[importing.Event]) -> int:
    """Append one batch of numbered events (the next revisions of the log, as a `Sequencer` started
    at `log.revision + 1` numbers them) in one transaction. Returns the newest revision."""
    return await log.append_numbered([row(event) for event in events])
