"""Export and import of the event log as NDJSON (format: docs/event-log.md, "Export and import").

One line per event, in revision order:
    {"revision":7,"type":"MODIFIED","group":"","resource":"pods","namespace":"default","name":"web-0",
     "uid":"…","prev_revision":3,"time":1764680000.25,"actor":{"user":"alice"},"object":{…}}

`object` is the stored JSON, copied byte for byte (its metadata.resourceVersion equals `revision`).
Import goes into an EMPTY store, in ONE transaction, and checks every line (shape, increasing
revisions, the per-key prev_revision chain, ADDED/MODIFIED/DELETED order, the object's metadata);
the first bad line aborts it with `log.ImportRejectedError(line=N)` and nothing is written.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterable
from typing import BinaryIO

import msgspec
import structlog

from storage import codec, sql
from storage import log as contract

_logger = structlog.get_logger(__name__)

EXPORT_PAGE = 5000
IMPORT_CHUNK = 5000


class Line(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One NDJSON line (format version 1)."""

    revision: int
    type: contract.EventType
    group: str
    resource: str
    namespace: str
    name: str
    uid: str
    prev_revision: int
    time: float
    actor: contract.Actor = contract.Actor()
    object: msgspec.Raw


class _Metadata(msgspec.Struct, frozen=True):
    name: str = ""
    namespace: str = ""
    uid: str = ""
    resourceVersion: str = ""  # the wire name


class _ObjectHead(msgspec.Struct, frozen=True):
    metadata: _Metadata = _Metadata()


_encoder = msgspec.json.Encoder()
_line_decoder = msgspec.json.Decoder(Line)
_head_decoder = msgspec.json.Decoder(_ObjectHead)


def event_ndjson(ev: contract.Event) -> bytes:
    """One line of the export format for `ev` (docs/event-log.md), newline included."""
    return _encoder.encode(Line(
        revision=ev.revision, type=ev.type, group=ev.group, resource=ev.resource, namespace=ev.namespace,
        name=ev.name, uid=ev.uid, prev_revision=ev.prev_revision, time=ev.time, actor=ev.actor,
        object=msgspec.Raw(ev.object))) + b"\n"


async def export_events(log: sql.SqlEventLog, *, out: BinaryIO, start: int = 0, end: int | None = None) -> int:
    """Write the retained events with start < revision <= end (default: up to the newest) to `out`:
    `start` is the last revision NOT wanted (0 = from the beginning), as in `EventLog.after`.
    Returns the number of events written."""
    started = time.perf_counter()
    end = log.revision if end is None else end
    count = 0
    cursor = start + 1
    buffer = bytearray()
    while cursor <= end:
        # A window of revisions per read (not "the next N rows"): each read stays cheap whatever
        # plan the database picks, also on a log with gaps.
        window_end = min(end, cursor + EXPORT_PAGE - 1)
        events = await log.scan(start=cursor, end=window_end, limit=EXPORT_PAGE)
        cursor = window_end + 1
        if not events:
            continue
        buffer.clear()
        for event in events:
            line = Line(revision=event.revision, type=event.type, group=event.group, resource=event.resource,
                        namespace=event.namespace, name=event.name, uid=event.uid,
                        prev_revision=event.prev_revision, time=event.time, actor=event.actor,
                        object=msgspec.Raw(event.object))
            _encoder.encode_into(line, buffer, -1)
            buffer += b"\n"
        out.write(buffer)
        count += len(events)
    _logger.info("events_exported", events=count, start=start, end=end,
                 duration_ms=round((time.perf_counter() - started) * 1000, 1), outcome="ok")
    return count


class _Checker:
    """Validates lines one by one; knows the heads and the compacted revision implied by the input."""

    def __init__(self) -> None:
        self.count = 0
        self.first = 0
        self.last = 0
        self.heads: dict[codec.Key, tuple[int, bool]] = {}
        self._present = bytearray()  # revision - first -> 1 when imported
        self._compacted = 0

    @property
    def compacted(self) -> int:
        """Revisions at or below this may be incomplete in the input: reads there must be refused.

        Every revision above it is present, and no retained row points at a missing predecessor that
        would still have been live above it (a MODIFIED/DELETED whose prev_revision is missing means
        that predecessor was compacted). See docs/event-log.md."""
        return max(self._compacted, self.first - 1) if self.count else 0

    def check(self, number: int, raw: bytes) -> codec.Row | None:
        text = raw.strip()
        if not text:
            return None
        try:
            line = _line_decoder.decode(text)
        except msgspec.DecodeError as error:
            raise contract.ImportRejectedError(f"line {number}: {error}", line=number) from error

        def reject(message: str) -> contract.ImportRejectedError:
            return contract.ImportRejectedError(f"line {number} (revision {line.revision}): {message}", line=number)

        revision = line.revision
        if revision <= self.last:
            raise reject(f"revisions must increase (previous line: {self.last})")
        if not line.resource or not line.name:
            raise reject("resource and name must not be empty")
        if not 0 <= line.prev_revision < revision:
            raise reject("prev_revision must be >= 0 and < revision")
        try:
            head = _head_decoder.decode(line.object).metadata
        except msgspec.DecodeError as error:
            raise reject(f"object: {error}") from error
        if head.resourceVersion != str(revision):
            raise reject(f"object metadata.resourceVersion {head.resourceVersion!r} != revision")
        if (head.name, head.namespace, head.uid) != (line.name, line.namespace, line.uid):
            raise reject("object metadata (name, namespace, uid) does not match the line")

        if self.count == 0:
            self.first = revision
        elif revision > self.last + 1:
            self._compacted = max(self._compacted, revision - 1)
        key = (line.group, line.resource, line.namespace, line.name)
        previous = self.heads.get(key)
        prev = line.prev_revision
        if previous is not None:
            if prev != previous[0]:
                raise reject(f"prev_revision {prev} != the key's previous event {previous[0]}")
            if line.type == "ADDED" and not previous[1]:
                raise reject("ADDED, but the key exists (its previous event is not DELETED)")
            if line.type != "ADDED" and previous[1]:
                raise reject(f"{line.type}, but the key was DELETED")
        elif prev:
            index = prev - self.first
            if 0 <= index < len(self._present) and self._present[index]:
                raise reject(f"prev_revision {prev} is an event of another key")
            if line.type != "ADDED":  # its predecessor was compacted away
                self._compacted = max(self._compacted, revision - 1)
        elif line.type != "ADDED":
            raise reject(f"{line.type} of a key that has no previous event")

        present = self._present
        gap = revision - self.first - len(present)
        if gap:
            present.extend(bytes(gap))
        present.append(1)
        self.heads[key] = (revision, line.type == "DELETED")
        self.last = revision
        self.count += 1
        actor = line.actor
        return (revision, line.type, line.group, line.resource, line.namespace, line.name, line.uid, prev,
                line.time, actor.user, actor.field_manager, actor.user_agent, actor.request_id,
                bytes(line.object))


async def import_events(log: sql.SqlEventLog, *, lines: Iterable[bytes]) -> int:
    """Import NDJSON lines into an empty store, atomically. Returns the number of events imported."""
    started = time.perf_counter()
    checker = _Checker()
    async with log.bulk_import() as sink:
        # The database inserts chunk N while this parses and checks chunk N+1.
        inserting: asyncio.Future[None] | None = None
        try:
            chunk: list[codec.Row] = []
            for number, raw in enumerate(lines, 1):
                row = checker.check(number, raw)
                if row is not None:
                    chunk.append(row)
                    if len(chunk) >= IMPORT_CHUNK:
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
        await sink.finish(heads=checker.heads, compacted=checker.compacted)
    _logger.info("events_imported", events=checker.count, revision=checker.last,
                 compacted_revision=checker.compacted,
                 duration_ms=round((time.perf_counter() - started) * 1000, 1), outcome="ok")
    return checker.count
