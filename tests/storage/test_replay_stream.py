"""The replay log streamed from the store (issue #22): over a log many pages long it replays exactly as
the recording loaded in memory (the same states at the same revisions, the same watches, the same
clock), reads ahead one page at a time (the page size honoured, the read-ahead bounded), and keeps the
in-memory replay's errors."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from api import replay
from cp import clock as clocks
from storage import factory, log, ndjson, recording
from storage import replay as replay_log
from tests import recordings

EVENTS = 41
PAGE = 4


def _lines() -> list[bytes]:
    """Configmaps added, modified and deleted, with the Clock object moving now and then."""
    lines: list[bytes] = []
    live: dict[str, int] = {}
    last: dict[str, int] = {}  # a name's last event, its deletion included
    clock_rev = 0
    for revision in range(1, EVENTS + 1):
        t = 100.0 + revision
        if revision % 10 == 5:
            lines.append(recordings.clock_line(revision, time=t, to=t + 1000, prev=clock_rev))
            clock_rev = revision
            continue
        name = f"cm-{revision % 7}"
        if name not in live:
            lines.append(recordings.configmap_line(revision, name, time=t, prev=last.get(name, 0)))
            live[name] = revision
        elif revision % 3 == 0:
            lines.append(recordings.configmap_line(revision, name, time=t, type_="DELETED", prev=live.pop(name)))
        else:
            lines.append(recordings.configmap_line(revision, name, time=t, type_="MODIFIED", prev=live[name],
                                                   data={"v": str(revision)}))
            live[name] = revision
        last[name] = revision
    return lines


@pytest.fixture
async def stored(tmp_path: Path) -> AsyncIterator[recording.SqlSource]:
    event_log = factory.open_event_log(url=f"sqlite+aiosqlite:///{tmp_path}/cplane.db")  # tmp_path: absolute
    await event_log.start()
    try:
        await ndjson.import_events(event_log, lines=_lines())
    finally:
        await event_log.close()
    source = await recording.open_source(str(tmp_path))
    assert isinstance(source, recording.SqlSource)
    yield source
    await source.close()


def _counting_reads(source: recording.SqlSource) -> list[Sequence[Any]]:
    """Record the arguments of the player's read-ahead queries on `source`."""
    store = source.log
    reads: list[Sequence[Any]] = []
    original = store._read

    async def read(sql_text: str, args: Sequence[Any]) -> list[Any]:
        if sql_text == replay_log.SQL_AHEAD:
            reads.append(args)
        rows: list[Any] = await original(sql_text, args)
        return rows

    store._read = read
    return reads


async def _state(rlog: log.EventLog) -> list[bytes]:
    listed = await rlog.list_objects(group="", resource="configmaps", namespace=None)
    return [ev.object for ev in listed.events]


async def test_streamed_replay_matches_the_loaded_one_step_by_step(stored: recording.SqlSource) -> None:
    loaded = replay_log.ReplayLog(recording.Recording.from_ndjson(_lines(), description="test"),
                                  clock=clocks.VirtualClock(start=0.0))
    streamed = await replay_log.StreamReplayLog.open(stored, clock=clocks.VirtualClock(start=0.0), page=PAGE)
    reads = _counting_reads(stored)
    a, b = replay.Replayer(loaded, speed=None), replay.Replayer(streamed, speed=None)
    for count in [1, 2, 3, 5, 7, 1, 11, 40]:  # steps within a page, across pages, past the end
        got_a, got_b = await a.step(count), await b.step(count)
        assert (got_b.count, [e.revision for e in got_b.last]) == (got_a.count, [e.revision for e in got_a.last])
        assert got_b.last == got_a.last
        assert streamed.revision == loaded.revision
        assert await _state(streamed) == await _state(loaded)
        assert streamed.clock is not None and loaded.clock is not None
        assert streamed.clock.now() == loaded.clock.now()
        status_a, status_b = await a.status(), await b.status()
        assert status_b.pop("source") == stored.description and status_a.pop("source") == "test"
        assert status_b == status_a
        # Every revision below the cursor reads as the loaded replay's (time travel).
        for at in range(1, streamed.revision + 1):
            assert [e.object for e in (await streamed.list_objects(group="", resource="configmaps", namespace=None,
                                                                   revision=at)).events] == \
                [e.object for e in (await loaded.list_objects(group="", resource="configmaps", namespace=None,
                                                              revision=at)).events]
    assert streamed.revision == EVENTS and b.mode == "finished"
    # The player read ahead a page at a time, each page once.
    assert reads and all(args[2] == PAGE for args in reads)
    assert [args[0] for args in reads] == sorted({args[0] for args in reads})
    assert len(reads) == EVENTS // PAGE + 1


async def test_until_time_object_and_revision_as_the_loaded_replay(stored: recording.SqlSource) -> None:
    loaded = replay_log.ReplayLog(recording.Recording.from_ndjson(_lines(), description="test"))
    streamed = await replay_log.StreamReplayLog.open(stored, page=PAGE)
    a, b = replay.Replayer(loaded, speed=None), replay.Replayer(streamed, speed=None)
    key = ("", "configmaps", "default", "cm-3")
    for move in ("time", "object", "revision", "object", "time"):
        if move == "time":
            when = loaded.time_at_cursor() + 9.5
            got_a, got_b = await a.until_time(when), await b.until_time(when)
        elif move == "object":
            got_a, got_b = await a.until_object(key), await b.until_object(key)
        else:
            to = min(loaded.revision + 13, EVENTS)
            got_a, got_b = await a.until_revision(to), await b.until_revision(to)
        assert (got_b.count, got_b.last) == (got_a.count, got_a.last)
        assert streamed.revision == loaded.revision
        assert await _state(streamed) == await _state(loaded)


async def test_watches_see_the_recorded_events_across_pages(stored: recording.SqlSource) -> None:
    streamed = await replay_log.StreamReplayLog.open(stored, page=PAGE)
    sub = await streamed.subscribe(group="", resource="configmaps", namespace="default", after=0)
    assert await sub.next_batch(timeout=0) == []
    await replay.Replayer(streamed, speed=None).until_revision(EVENTS)
    got: list[log.Event] = []
    while batch := await sub.next_batch(timeout=0):
        got.extend(batch)
    want = [ev for ev in await stored.scan(1, EVENTS, EVENTS) if ev.resource == "configmaps"]
    assert got == want
    assert sub.revision == EVENTS
    sub.close()


async def test_the_read_ahead_stays_bounded(stored: recording.SqlSource) -> None:
    streamed = await replay_log.StreamReplayLog.open(stored, page=PAGE)
    for _ in range(EVENTS):
        assert len(await streamed.ahead(1)) == 1
        assert len(streamed._buffer) <= PAGE
        streamed.advance_over(await streamed.ahead(1))
    assert await streamed.ahead(1) == [] and streamed.revision == EVENTS


async def test_errors_are_the_loaded_replays(stored: recording.SqlSource) -> None:
    with pytest.raises(recording.SourceError, match=r"out of range: --from 50 --until 41: .* replays from revision 0 to 41"):
        await replay_log.StreamReplayLog.open(stored, start=50)
    with pytest.raises(ValueError, match="page must be >= 1"):
        await replay_log.StreamReplayLog.open(stored, page=0)
    streamed = await replay_log.StreamReplayLog.open(stored, start=10, page=PAGE)
    with pytest.raises(log.FutureRevisionError):
        await streamed.get(group="", resource="configmaps", namespace="default", name="cm-1", revision=11)
    with pytest.raises(replay_log.ReadOnlyError):
        await streamed.append(log.Write(type="ADDED", group="", resource="configmaps", namespace="default",
                                        name="x", object={}, expected_revision=0, time=0.0))


async def test_a_fork_branches_at_the_cursor(stored: recording.SqlSource) -> None:
    loaded = replay_log.ReplayLog(recording.Recording.from_ndjson(_lines(), description="test"))
    await replay.Replayer(loaded, speed=None).step(20)
    streamed = await replay_log.StreamReplayLog.open(stored, page=PAGE)
    player = replay.Replayer(streamed, speed=None, fork_on_write=True)
    sub = await streamed.subscribe(group="", resource="configmaps", namespace=None, after=0)
    await player.step(20)
    assert await player.fork() == 20 and streamed.forked and player.mode == "forked"
    assert await _state(streamed) == await _state(loaded)
    written = await streamed.append(log.Write(type="ADDED", group="", resource="configmaps", namespace="default",
                                              name="x", object={"metadata": {"name": "x", "namespace": "default"}},
                                              expected_revision=0, time=0.0))
    assert written.revision == 21 and streamed.revision == 21
    assert (await _state(streamed))[-1] == written.object
    got: list[log.Event] = []
    while batch := await sub.next_batch(timeout=0):
        got.extend(batch)
    recorded = [ev for ev in await stored.scan(1, 20, 20) if ev.resource == "configmaps"]
    assert got == [*recorded, written]
    sub.close()
