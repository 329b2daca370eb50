"""Another cluster's changes written into an empty log (`storage.importing`): the objects read back at
their revisions, and a source that fails part-way leaves the store empty."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from cp import importing
from storage import importing as writer
from storage import log as contract
from storage import sql

CONFIGMAPS = {"group": "", "resource": "configmaps"}

def cm(name: str, value: str) -> importing.Change:
    return importing.Change(object={"apiVersion": "v1", "kind": "ConfigMap",
                                    "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
                                    "data": {"v": value}}, time=1_800_000_000.0, user="alice", source="77")

def numbered(changes: list[importing.Change]) -> Iterator[importing.Event]:
    seq = importing.Sequencer(keep_secrets=True)
    for c in changes:
        yield from seq.feed(c)

def test_an_encoded_event_decodes_as_its_row() -> None:
    """What an audit import's worker sends (msgpack of `importing.Event`s) is read as the store's rows."""
    import msgspec

    events = list(numbered([cm("a", "1"), cm("a", "2")]))
    decoded = msgspec.msgpack.decode(msgspec.msgpack.encode(events), type=list[writer.WireRow])
    assert decoded == [writer.row(event) for event in events]


async def test_imported_objects_read_back(event_log: sql.SqlEventLog) -> None:
    count = await writer.import_events(event_log, numbered([cm("a", "1"), cm("b", "1"), cm("a", "2")]))
    assert count == 3
    got = await event_log.get(**CONFIGMAPS, namespace="default", name="a")
    assert got is not None and got.revision == 3 and got.type == "MODIFIED" and got.prev_revision == 1
    assert got.actor.user == "alice" and got.actor.request_id == "source=77"
    assert got.time == 1_800_000_000.0

async def test_a_failing_source_writes_nothing(event_log: sql.SqlEventLog) -> None:
    def broken() -> Iterator[importing.Event]:
        yield from numbered([cm("a", "1")])
        raise contract.ImportRejectedError("dump.yaml line 7: not an object", line=7)

    with pytest.raises(contract.ImportRejectedError):
        await writer.import_events(event_log, broken())
    assert await event_log.get(**CONFIGMAPS, namespace="default", name="a") is None
    assert await writer.import_events(event_log, numbered([cm("b", "1")])) == 1  # still empty, so importable

def _unused(_: Any) -> None: ...


async def test_batches_append_after_the_import(event_log: sql.SqlEventLog) -> None:
    seq = importing.Sequencer(keep_secrets=True)
    await writer.import_events(event_log, seq.feed(cm("a", "1")))
    batch = [*seq.feed(cm("a", "2")), *seq.feed(cm("b", "1"))]
    assert await writer.append_events(event_log, batch) == 3
    await event_log.wait_for_revision(revision=3)
    got = await event_log.get(**CONFIGMAPS, namespace="default", name="a")
    assert got is not None and got.revision == 2 and got.prev_revision == 1 and got.type == "MODIFIED"
    deleted = importing.Change(deleted=True, object={"apiVersion": "v1", "kind": "ConfigMap",
                                                     "metadata": {"name": "b", "namespace": "default"}},
                               time=1_800_000_001.0)
    assert await writer.append_events(event_log, seq.feed(deleted)) == 4
    assert await event_log.get(**CONFIGMAPS, namespace="default", name="b") is None
    listed = await event_log.list_objects(**CONFIGMAPS, namespace=None)
    assert [e.name for e in listed.events] == ["a"]


async def test_an_appended_batch_with_a_gap_writes_nothing(event_log: sql.SqlEventLog) -> None:
    seq = importing.Sequencer(keep_secrets=True, first_revision=2)
    with pytest.raises(contract.ImportRejectedError, match="comes next"):
        await writer.append_events(event_log, [*seq.feed(cm("a", "1")), *seq.feed(cm("b", "1"))])
    assert event_log.revision == 0
    assert await event_log.get(**CONFIGMAPS, namespace="default", name="b") is None
    assert await writer.append_events(event_log, []) == 0


@pytest.mark.parametrize("size", [1, 2, 7])
async def test_rows_imported_with_their_heads_chunk_by_chunk(event_log: sql.SqlEventLog, size: int) -> None:
    """Without `heads=`, each chunk's keys go to the heads with the chunk: a key written again in a later
    chunk, deleted, or created again ends at its last row, as when the heads come at the end."""
    seq = importing.Sequencer(keep_secrets=True)

    def gone(name: str) -> importing.Change:
        return importing.Change(deleted=True, object={"apiVersion": "v1", "kind": "ConfigMap",
                                                      "metadata": {"name": name, "namespace": "default"}},
                                time=1_800_000_001.0)
    changes = [cm("a", "1"), cm("b", "1"), cm("a", "2"), gone("b"), cm("c", "1"), cm("a", "3"), cm("b", "2"), gone("c")]
    rows = [writer.row(e) for c in changes for e in seq.feed(c)]
    count = await writer.import_rows(event_log, [rows[i:i + size] for i in range(0, len(rows), size)])
    assert count == 8
    heads = await event_log._read("SELECT name, revision, deleted FROM heads ORDER BY name", ())
    assert [(name, revision, bool(deleted)) for name, revision, deleted in heads] == [
        ("a", 6, False), ("b", 7, False), ("c", 8, True)]


async def test_deleted_keys_are_read_back_for_a_resumed_recording(event_log: sql.SqlEventLog) -> None:
    seq = importing.Sequencer(keep_secrets=True)
    gone = importing.Change(deleted=True, object={"apiVersion": "v1", "kind": "ConfigMap",
                                                  "metadata": {"name": "a", "namespace": "default"}}, time=1.0)
    await writer.import_events(event_log, [e for c in (cm("a", "1"), cm("b", "1"), gone) for e in seq.feed(c)])
    assert await event_log.deleted_keys(**CONFIGMAPS) == [("default", "a", 3)]
    assert await event_log.deleted_keys(group="", resource="secrets") == []
