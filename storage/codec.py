"""Encoding between `log.Write`/`log.Event` and table rows. Pure; no I/O.

Encoders and decoders are module-level and reused (msgspec keeps per-instance state).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from storage import log

_encoder = msgspec.json.Encoder()
_EMPTY_ACTOR = log.Actor()

# An event row (schema.EVENT_COLUMNS order): a tuple to insert; any sequence (sqlite3 tuple, asyncpg
# Record) when read.
Row = tuple[Any, ...]
Key = tuple[str, str, str, str]  # (group, resource, namespace, name)


def key_of(write: log.Write) -> Key:
    return (write.group, write.resource, write.namespace, write.name)


def stamp(write: log.Write, *, revision: int) -> tuple[bytes, str]:
    """The object's JSON with metadata.resourceVersion = revision, and its uid.

    The caller's dict is not modified: the top level and metadata are copied (shallow).
    """
    obj = write.object
    metadata = obj.get("metadata")
    metadata = dict(metadata) if metadata else {}
    metadata["resourceVersion"] = str(revision)
    stamped = dict(obj)
    stamped["metadata"] = metadata
    uid = metadata.get("uid")
    return _encoder.encode(stamped), uid if isinstance(uid, str) else ""


def event_from_write(write: log.Write, *, revision: int, prev_revision: int, obj: bytes,
                     uid: str) -> log.Event:
    return log.Event(
        revision=revision, type=write.type, group=write.group, resource=write.resource,
        namespace=write.namespace, name=write.name, uid=uid, object=obj,
        prev_revision=prev_revision, time=write.time, actor=write.actor,
    )


def row_from_event(event: log.Event) -> Row:
    actor = event.actor
    return (
        event.revision, event.type, event.group, event.resource, event.namespace, event.name,
        event.uid, event.prev_revision, event.time, actor.user, actor.field_manager,
        actor.user_agent, actor.request_id, event.object,
    )


def event_from_row(row: Sequence[Any], offset: int = 0) -> log.Event:
    """`row[offset:]` holds schema.EVENT_COLUMNS."""
    o = offset
    user, manager, agent, request_id = row[o + 9], row[o + 10], row[o + 11], row[o + 12]
    if user or manager or agent or request_id:
        actor = log.Actor(user=user, field_manager=manager, user_agent=agent, request_id=request_id)
    else:
        actor = _EMPTY_ACTOR
    return log.Event(
        revision=row[o], type=row[o + 1], group=row[o + 2], resource=row[o + 3],
        namespace=row[o + 4], name=row[o + 5], uid=row[o + 6], object=bytes(row[o + 13]),
        prev_revision=row[o + 7], time=row[o + 8], actor=actor,
    )
