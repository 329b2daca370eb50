"""NDJSON export/import: a round trip reproduces identical revisions and state; bad input is refused
with its line number and nothing is imported.

In scope: `ndjson.export_events`, `ndjson.import_events` on both backends, and across backends.
Out of scope: the `cplane log` command line (cp/cli/log.py).
"""

from __future__ import annotations

import io

import msgspec
import pytest

from storage import factory, log, ndjson, sql
from tests.storage import conftest, writes
from tests.storage.writes import churn


async def export(event_log: sql.SqlEventLog, **kwargs: int) -> bytes:
    out = io.BytesIO()
    await ndjson.export_events(event_log, out=out, **kwargs)
    return out.getvalue()


async def assert_same_state(a: sql.SqlEventLog, b: sql.SqlEventLog) -> None:
    assert a.revision == b.revision
    for revision in range(b.compacted_revision + 1, a.revision + 1):
        for resource in ("pods", "services"):
            left = await a.list_objects(group="", resource=resource, namespace=None, revision=revision)
            right = await b.list_objects(group="", resource=resource, namespace=None, revision=revision)
            assert left == right


async def sample(event_log: sql.SqlEventLog) -> None:
    await churn(event_log, steps=120)
    svc = await event_log.append(writes.added("svc", resource="services"))
    await event_log.append(writes.modified(svc, spec={"ports": [80]}))


async def test_round_trip_reproduces_revisions_and_state(open_log, tmp_path) -> None:
    source = await open_log()
    await sample(source)
    data = await export(source)
    lines = data.splitlines()
    assert len(lines) == source.revision
    first = msgspec.json.decode(lines[0])
    assert list(first) == ["revision", "type", "group", "resource", "namespace", "name", "uid", "prev_revision",
                           "time", "actor", "object"]
    assert first["actor"] == {"user": "alice", "field_manager": "kubectl", "user_agent": "tests/1.0",
                              "request_id": "req-1"}

    target = await open_log(url=f"sqlite+aiosqlite:///{tmp_path / 'imported.db'}")
    assert await ndjson.import_events(target, lines=io.BytesIO(data)) == source.revision
    assert await export(target) == data
    assert target.compacted_revision == 0
    await assert_same_state(source, target)
    again = await target.append(writes.added("new"))
    assert again.revision == source.revision + 1


@pytest.mark.postgres
async def test_round_trip_between_backends(tmp_path) -> None:
    async with conftest.fresh_pg_url() as pg_url:
        logs = [factory.open_event_log(url=f"sqlite+aiosqlite:///{tmp_path / 'a.db'}"),
                factory.open_event_log(url=pg_url),
                factory.open_event_log(url=f"sqlite+aiosqlite:///{tmp_path / 'b.db'}")]
        for event_log in logs:
            await event_log.start()
        try:
            await sample(logs[0])
            data = await export(logs[0])
            await ndjson.import_events(logs[1], lines=data.splitlines())
            back = await export(logs[1])
            await ndjson.import_events(logs[2], lines=back.splitlines())
            assert back == data == await export(logs[2])
            await assert_same_state(logs[0], logs[1])
        finally:
            for event_log in logs:
                await event_log.close()


async def test_round_trip_of_a_compacted_log(open_log, tmp_path) -> None:
    source = await open_log()
    await sample(source)
    await source.compact(70)
    data = await export(source)
    target = await open_log(url=f"sqlite+aiosqlite:///{tmp_path / 'imported.db'}")
    await ndjson.import_events(target, lines=data.splitlines())
    assert await export(target) == data
    assert 0 < target.compacted_revision <= 70  # inferred from the input: gaps and missing predecessors
    for revision in range(71, source.revision + 1):
        assert (await source.list_objects(group="", resource="pods", namespace=None, revision=revision)
                == await target.list_objects(group="", resource="pods", namespace=None, revision=revision))


async def test_export_of_a_range(event_log: sql.SqlEventLog) -> None:
    await sample(event_log)
    revisions = [msgspec.json.decode(line)["revision"] for line in (await export(event_log, start=10, end=20)).splitlines()]
    assert revisions == list(range(11, 21))


async def test_many_lines_in_several_chunks(open_log, tmp_path) -> None:
    """Enough events for several import chunks (PostgreSQL: COPY) and export pages."""
    lines = list(synthetic_lines(count=ndjson.IMPORT_CHUNK * 2 + 17))
    target = await open_log()
    assert await ndjson.import_events(target, lines=lines) == len(lines)
    assert (await export(target)).splitlines() == lines
    result = await target.list_objects(group="", resource="pods", namespace="bench")
    assert len(result.events) == 100 and result.revision == len(lines)


def synthetic_lines(*, count: int, objects: int = 100) -> list[bytes]:
    """ADDED for `objects` pods, then MODIFIED round-robin."""
    out = []
    for revision in range(1, count + 1):
        i = (revision - 1) % objects
        name = f"pod-{i:05d}"
        prev = 0 if revision <= objects else revision - objects
        obj = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "namespace": "bench", "uid": f"u{i}", "resourceVersion": str(revision)},
               "spec": {"n": revision}}
        out.append(msgspec.json.encode(ndjson.Line(
            revision=revision, type="ADDED" if prev == 0 else "MODIFIED", group="", resource="pods",
            namespace="bench", name=name, uid=f"u{i}", prev_revision=prev, time=1.5e9 + revision,
            object=msgspec.Raw(msgspec.json.encode(obj)))))
    return out


def _edit(line: bytes, **changes: object) -> bytes:
    data = msgspec.json.decode(line)
    for path, value in changes.items():
        target = data
        *parents, leaf = path.split("__")
        for parent in parents:
            target = target[parent]
        if value is _DROP:
            del target[leaf]
        else:
            target[leaf] = value
    return msgspec.json.encode(data)


_DROP = object()


def _bad_inputs() -> list[tuple[str, list[bytes], int, str]]:
    good = synthetic_lines(count=6, objects=3)  # ADDED 1-3, MODIFIED 4-6
    return [
        ("not json", [good[0], b"{not json", *good[2:]], 2, "line 2"),
        ("missing field", [good[0], _edit(good[1], uid=_DROP)], 2, "uid"),
        ("unknown field", [_edit(good[0], colour="red")], 1, "colour"),
        ("object not an object", [_edit(good[0], object=[1, 2])], 1, "object"),
        ("revision goes back", [good[0], good[2], good[1]], 3, "increase"),
        ("resourceVersion differs", [good[0], _edit(good[1], object__metadata__resourceVersion="9")], 2,
         "resourceVersion"),
        ("name differs", [_edit(good[0], name="other")], 1, "does not match"),
        ("wrong prev_revision", [*good[:3], _edit(good[3], prev_revision=2)], 4, "prev_revision"),
        ("ADDED over a live key", [*good[:3], _edit(good[3], type="ADDED")], 4, "exists"),
        ("MODIFIED of a new key", [_edit(good[0], type="MODIFIED")], 1, "no previous event"),
        ("prev of another key", [good[0], good[1], _edit(good[2], prev_revision=2)], 3, "another key"),
        ("bad type", [_edit(good[0], type="BOOKMARK")], 1, "type"),
        ("blank lines count", [good[0], b"", b"  ", b"{"], 4, "line 4"),
    ]


@pytest.mark.parametrize(("lines", "line", "message"), [case[1:] for case in _bad_inputs()],
                         ids=[case[0] for case in _bad_inputs()])
async def test_bad_input_is_refused_with_its_line_and_nothing_is_imported(
        event_log: sql.SqlEventLog, lines: list[bytes], line: int, message: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ndjson, "IMPORT_CHUNK", 1)  # earlier lines were already inserted: rolled back
    with pytest.raises(log.ImportRejectedError) as caught:
        await ndjson.import_events(event_log, lines=lines)
    assert caught.value.line == line
    assert message in str(caught.value)
    assert event_log.revision == 0
    assert await event_log.after(0) == []
    assert (await event_log.list_objects(group="", resource="pods", namespace=None)).events == []
    # The store is still empty and usable: a good import goes through.
    assert await ndjson.import_events(event_log, lines=synthetic_lines(count=6, objects=3)) == 6


async def test_import_needs_an_empty_store(event_log: sql.SqlEventLog) -> None:
    await event_log.append(writes.added("a"))
    with pytest.raises(log.ImportRejectedError) as caught:
        await ndjson.import_events(event_log, lines=synthetic_lines(count=3))
    assert caught.value.line == 0
    assert event_log.revision == 1


async def test_import_ends_existing_subscriptions(event_log: sql.SqlEventLog) -> None:
    sub = await event_log.subscribe(group="", resource="pods", namespace=None, after=0)
    await ndjson.import_events(event_log, lines=synthetic_lines(count=5))
    assert await sub.next_batch(timeout=5) is None
    assert event_log.revision == 5
