"""The replay log: a `storage.log.EventLog` over a `Recording` whose visible revision is the replay
*cursor* (docs/replay.md). Reads at or below it work as on a live server (time travel included);
subscriptions are fed as the cursor advances, with the recorded bytes, so watches see exactly the
recorded events with their original resourceVersions. The clock follows the recording: the time of the
last applied event, and the `sim.cplane.dev` Clock object where the recording has one. Until it forks,
writes raise `ReadOnlyError`; after `fork()` later recorded events are dropped from this log's view and
new writes get revisions cursor+1, cursor+2...

`StreamReplayLog` is the same over a SQL event log read in place (issue #22): nothing of the log is
loaded; reads, watches and the player's read-ahead are the store's queries, a page at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from bisect import bisect_right
from collections.abc import AsyncIterator, Sequence
from typing import Any

import msgspec

from cp import clock as clocks
from cp import resources as res
from cp import sim
from storage import codec, log
from storage.recording import NO_END, SCAN_PAGE, Key, Recording, SourceError, SqlSource, event_at_or_before

_decode = msgspec.json.Decoder().decode

WRITES_REFUSED = "this server replays a recording; writes are refused (start it with --fork to branch)"
MAX_BATCH = 5000  # events per subscription batch (one watch write)
CLOCK_KEY = (res.SIM_GROUP, "clocks", "", sim.CLOCK_NAME)
Mark = tuple[Any, ...]  # (revision, time, ...) of an event ahead of the cursor: what the player reads


class ReadOnlyError(log.StorageError):
    """A write reached a replay that has not forked."""


class _ReplaySub:
    """A subscription over the index: no buffer to overflow, never dropped; it reads the recorded
    events between what it delivered and the cursor."""

    def __init__(self, owner: ReplayLog, *, group: str, resource: str, namespace: str | None, after: int) -> None:
        self._owner = owner
        self._gr = (group, resource)
        self._namespace = namespace
        self._last = after
        self._closed = False

    def _revisions(self) -> list[int]:
        index = self._owner._index
        if self._namespace is None:
            return index.by_resource.get(self._gr, [])
        return index.by_namespace.get((*self._gr, self._namespace), [])

    @property
    def revision(self) -> int:
        revs = self._revisions()
        cursor = self._owner.revision
        if bisect_right(revs, cursor) <= bisect_right(revs, self._last):
            return max(self._last, cursor)
        return self._last

    def _take(self) -> list[log.Event]:
        revs = self._revisions()
        cursor = self._owner.revision
        lo = bisect_right(revs, self._last)
        hi = len(revs) if revs and revs[-1] <= cursor else bisect_right(revs, cursor)
        if lo >= hi:
            return []
        hi = min(hi, lo + MAX_BATCH)
        event = self._owner._index.event
        batch = [event(r) for r in revs[lo:hi]]
        self._last = batch[-1].revision
        return batch

    async def next_batch(self, *, timeout: float | None) -> list[log.Event] | None:  # noqa: ASYNC109 (the contract)
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            if self._closed or self._owner._closed:
                return None
            batch = self._take()
            if batch:
                return batch
            if not await _wait_changed(self._owner._changed, deadline):
                return []

    def close(self) -> None:
        self._closed = True


class ReplayLog:
    """`storage.log.EventLog` over a Recording; the visible revision is the cursor (see module doc)."""

    def __init__(self, recording: Recording, *, start: int | None = None, until: int | None = None,
                 clock: clocks.VirtualClock | None = None) -> None:
        self.recording = recording
        self._index = recording.index
        # A replay may start at the compacted revision itself: the state there is whole (compaction
        # keeps the newest version of every live key), only reads *at* it are refused, as live.
        lo, hi = recording.compacted, recording.last
        self._compacted = recording.compacted
        self._cursor = lo if start is None else start
        self.end = hi if until is None else until
        if not lo <= self._cursor <= self.end <= hi:
            raise SourceError(f"out of range: --from {self._cursor} --until {self.end}: "
                              f"{recording.description} replays from revision {lo} to {hi}")
        self.start_revision = self._cursor
        self.clock = clock
        self.forked_at: int | None = None
        self._changed = asyncio.Event()
        self._closed = False
        self._follow_clock()

    # -- the cursor --------------------------------------------------------------------------------

    @property
    def revision(self) -> int:
        return self._cursor

    @property
    def compacted_revision(self) -> int:
        return self._compacted

    def last_change(self, *, group: str, resource: str) -> int:
        return self._cursor  # the cursor moves both ways (seek): treat everything as just changed

    async def ping(self) -> None:
        """A recording read into memory: always reachable."""

    async def wait_for_revision(self, *, revision: int) -> None:
        while self._cursor < revision:  # the player (or a forked write) moves the cursor
            if self._closed:
                raise log.StorageError("event log closed")
            await self._changed.wait()

    @property
    def forked(self) -> bool:
        return self.forked_at is not None

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def next_revisions(self, count: int) -> list[int]:
        """The next `count` recorded revisions after the cursor, within `end`."""
        if self.forked:
            return []
        revs = self._index.revisions
        i = self._index.position(self._cursor)
        j = min(i + count, self._index.position(self.end))
        return revs[i:j]

    def next_event(self) -> log.Event | None:
        nxt = self.next_revisions(1)
        return self._index.event(nxt[0]) if nxt else None

    def next_of(self, key: Key) -> int | None:
        """The revision of the object's next recorded event after the cursor, within `end`."""
        revs = self._index.by_key.get(key) or []
        i = bisect_right(revs, self._cursor)
        return revs[i] if i < len(revs) and revs[i] <= self.end else None

    def last_at_time(self, when: float, *, limit: int) -> int:
        """The cursor target that applies the next events whose time is <= `when` (at most `limit`)."""
        events = self._index.events
        i = self._index.position(self._cursor)
        stop = min(self._index.position(self.end), i + limit)
        target = self._cursor
        while i < stop and events[i].time <= when:
            target = events[i].revision
            i += 1
        return target

    def time_at_cursor(self) -> float:
        i = self._index.position(self._cursor)
        if i > 0:
            return self._index.events[i - 1].time
        return self._index.events[0].time if self._index.events else time.time()

    def advance_to(self, revision: int) -> int:
        """Move the cursor forward to `revision` (clamped to `end`); returns how many events applied."""
        if self.forked:
            raise ReadOnlyError("the replay has forked: it no longer follows the recording")
        target = min(revision, self.end)
        if target <= self._cursor:
            return 0
        applied = self._index.position(target) - self._index.position(self._cursor)
        self._cursor = target
        self._follow_clock()
        self._notify()
        return applied

    def _follow_clock(self) -> None:
        if self.clock is None:
            return
        when = self.time_at_cursor()
        clock_ev = self._index.latest(CLOCK_KEY, self._cursor)
        if clock_ev is not None:
            with contextlib.suppress(Exception):
                when = max(when, sim.clock_time(_decode(clock_ev.object)))
        self.clock.set(when)

    def has_clock_object(self) -> bool:
        return self._index.latest(CLOCK_KEY, self._cursor) is not None

    def fork(self) -> int:
        """Branch at the cursor: drop later recorded events from view and accept writes."""
        if self.forked_at is None:
            self._index = self._index.truncated(self._cursor)
            self.forked_at = self._cursor
            self.end = NO_END
            self._notify()
        return self.forked_at

    def visible(self, after: int, *, limit: int | None = None) -> list[log.Event]:
        """The events with after < revision <= cursor (at most `limit`)."""
        i = self._index.position(after)
        j = self._index.position(self._cursor)
        return self._index.events[i:j if limit is None else min(j, i + limit)]

    def remaining(self) -> int:
        """Recorded events still to replay (0 once forked)."""
        if self.forked:
            return 0
        return self._index.position(self.end) - self._index.position(self._cursor)

    # -- what the player uses (the same on `StreamReplayLog`, which reads from the store) -------------

    async def ahead(self, limit: int) -> list[Mark]:
        """(revision, time) of the next recorded events after the cursor, within `end` (at most `limit`;
        none once forked)."""
        if self.forked:
            return []
        i = self._index.position(self._cursor)
        return [(ev.revision, ev.time) for ev in self._index.events[i:min(i + limit, self._index.position(self.end))]]

    def advance_over(self, marks: Sequence[Mark]) -> None:
        """Apply the events of `marks`, the next ones `ahead` returned (a prefix of them)."""
        self.advance_to(marks[-1][0])

    async def peek_event(self) -> log.Event | None:
        return self.next_event()

    async def events_in(self, start: int, end: int, limit: int) -> list[log.Event]:
        """The events with start <= revision <= end (at most `limit`)."""
        return await self.recording.scan(start, end, limit)

    async def next_revision_of(self, key: Key) -> int | None:
        return self.next_of(key)

    async def remaining_count(self) -> int:
        return self.remaining()

    async def branch(self) -> int:
        return self.fork()

    async def visible_pages(self, after: int) -> AsyncIterator[list[log.Event]]:
        """The events with after < revision <= cursor, in pages."""
        batch = self.visible(after)
        for i in range(0, len(batch), SCAN_PAGE):
            yield batch[i:i + SCAN_PAGE]

    # -- EventLog ------------------------------------------------------------------------------------

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        self._closed = True
        self._notify()

    def _check(self, revision: int | None) -> int:
        return _readable(revision, cursor=self._cursor, compacted=self._compacted)

    async def append(self, write: log.Write) -> log.Event:
        if not self.forked:
            raise ReadOnlyError(WRITES_REFUSED)
        key = (write.group, write.resource, write.namespace, write.name)
        current = self._index.latest(key, self._cursor)
        if write.type == "ADDED":
            if write.expected_revision != 0:
                raise ValueError("ADDED needs expected_revision 0")
            if current is not None:
                raise log.ConflictError("key exists", current=current)
        elif current is None or current.revision != write.expected_revision:
            raise log.ConflictError("revision mismatch", current=current)
        revision = self._cursor + 1
        obj, uid = codec.stamp(write, revision=revision)
        revs = self._index.by_key.get(key)
        event = codec.event_from_write(write, revision=revision, prev_revision=revs[-1] if revs else 0,
                                       obj=obj, uid=uid)
        self._index.add(event)
        self._cursor = revision
        self._notify()
        return event

    async def get(self, *, group: str, resource: str, namespace: str, name: str,
                  revision: int | None = None, latest_known: bool = False) -> log.Event | None:
        return self._index.latest((group, resource, namespace, name), self._check(revision))

    async def list_objects(self, *, group: str, resource: str, namespace: str | None,
                           revision: int | None = None, start_after: tuple[str, str] | None = None,
                           limit: int | None = None) -> log.ListResult:
        at = self._check(revision)
        events, more = self._index.list_at(group, resource, namespace, at, start_after=start_after, limit=limit)
        return log.ListResult(events=events, revision=at, more=more)

    async def history(self, *, group: str, resource: str, namespace: str, name: str) -> list[log.Event]:
        revs = self._index.by_key.get((group, resource, namespace, name)) or []
        return [self._index.event(r) for r in revs[:bisect_right(revs, self._cursor)]]

    async def after(self, revision: int, *, limit: int = 1000) -> list[log.Event]:
        if revision < self._compacted:
            raise log.ExpiredError.at(requested=revision, compacted=self._compacted)
        return self.visible(revision, limit=limit)

    async def density(self, *, since: int, until: int, width: int) -> log.Density:
        """Over the events the replay has reached (at most its cursor)."""
        i = self._index.position(since)
        j = self._index.position(min(until, self._cursor))
        return log.density_of(self._index.events[i:j] if j > i else [], since=since, width=width)

    async def subscribe(self, *, group: str, resource: str, namespace: str | None,
                        after: int) -> log.Subscription:
        if after < self._compacted:
            raise log.ExpiredError.at(requested=after, compacted=self._compacted)
        return _ReplaySub(self, group=group, resource=resource, namespace=namespace, after=after)

    async def compact(self, revision: int) -> None:
        return None  # a replay keeps everything it was given


# =============================================================================================
# Streaming from the store


class _StreamSub:
    """A subscription over the store: each batch is the resource's recorded events between what it
    delivered and the cursor, read with the store's indexed query; nothing is kept per subscriber.
    After a fork, it goes on from the branch (in memory)."""

    def __init__(self, owner: StreamReplayLog, *, group: str, resource: str, namespace: str | None,
                 after: int) -> None:
        self._owner = owner
        self._where = (group, resource, namespace)
        self._last = after  # the last revision delivered
        self._seen = after  # every event of the resource up to here was delivered
        self._closed = False
        self._branch: _ReplaySub | None = None

    @property
    def revision(self) -> int:
        if self._branch is not None:
            return self._branch.revision
        return max(self._last, self._seen)

    async def _take(self) -> list[log.Event]:
        owner = self._owner
        if owner._branch is not None and self._seen >= (owner.forked_at or 0):
            if self._branch is None:
                group, resource, namespace = self._where
                self._branch = _ReplaySub(owner._branch, group=group, resource=resource, namespace=namespace,
                                          after=max(self._last, self._seen))
            return self._branch._take()
        upto = owner.revision if owner.forked_at is None else owner.forked_at
        if self._seen >= upto:
            return []
        group, resource, namespace = self._where
        batch: list[log.Event]
        batch, _ = await owner._store._replay_page(group, resource, namespace, self._seen, upto, MAX_BATCH)
        if batch:
            self._last = batch[-1].revision
        self._seen = upto if len(batch) < MAX_BATCH else self._last
        return batch

    async def next_batch(self, *, timeout: float | None) -> list[log.Event] | None:  # noqa: ASYNC109 (the contract)
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            if self._closed or self._owner._closed:
                return None
            changed = self._owner._changed  # before reading: a move while reading wakes the next wait
            batch = await self._take()
            if batch:
                return batch
            if not await _wait_changed(changed, deadline):
                return []

    def close(self) -> None:
        self._closed = True
        if self._branch is not None:
            self._branch.close()


class StreamReplayLog:
    """The replay log over a SQL event log read in place (docs/replay.md): the same behaviour as
    `ReplayLog`, without loading the recording. Reads at the cursor are the store's time-travel
    queries, watches its indexed per-resource queries, and the player reads the events ahead of the
    cursor in pages of `page` events (at most one page and what the player asked for are held). A
    fork loads the recording up to the cursor into a `ReplayLog` and serves from it from then on.
    Needs a cursor above the compacted revision (a store cannot be read *at* it): `usable`."""

    def __init__(self, source: SqlSource, *, start: int | None = None, until: int | None = None,
                 clock: clocks.VirtualClock | None = None, page: int = SCAN_PAGE) -> None:
        if page < 1:
            raise ValueError("page must be >= 1")
        self.recording = source
        self._store: Any = source.log  # storage.sql.SqlEventLog
        lo, hi = source.compacted, source.last
        self._compacted = lo
        self._cursor = lo if start is None else start
        self.end = hi if until is None else until
        if not lo <= self._cursor <= self.end <= hi:
            raise SourceError(f"out of range: --from {self._cursor} --until {self.end}: "
                              f"{source.description} replays from revision {lo} to {hi}")
        if not self.usable(source, start=start):
            raise SourceError(f"{source.description}: a replay from the compacted revision {lo} is served "
                              "from memory")
        self.start_revision = self._cursor
        self.clock = clock
        self.page = page
        self.forked_at: int | None = None
        self._branch: ReplayLog | None = None
        self._buffer: list[Mark] = []  # events after the cursor, read ahead up to `_read_to`
        self._clock_events: dict[int, log.Event] = {}  # the Clock object's, in the buffer
        self._read_to = self._cursor
        self._time: float | None = None  # the time of the last event at or below the cursor
        self._first_time = time.time()
        self._clock_event: log.Event | None = None
        self._changed = asyncio.Event()
        self._closed = False

    @staticmethod
    def usable(source: SqlSource, *, start: int | None) -> bool:
        compacted = source.compacted
        return compacted == 0 or (start if start is not None else compacted) > compacted

    @classmethod
    async def open(cls, source: SqlSource, *, start: int | None = None, until: int | None = None,
                   clock: clocks.VirtualClock | None = None, page: int = SCAN_PAGE) -> StreamReplayLog:
        """The replay log at `start`: reads the last event at or below it and the Clock object there."""
        self = cls(source, start=start, until=until, clock=clock, page=page)
        at = await event_at_or_before(source, self._cursor)
        if at is not None:
            self._time = at.time
        else:
            first = await source.scan(1, NO_END, 1)
            if first:
                self._first_time = first[0].time
        if self._cursor > 0:
            self._clock_event = await self._store.get(group=CLOCK_KEY[0], resource=CLOCK_KEY[1],
                                                      namespace=CLOCK_KEY[2], name=CLOCK_KEY[3],
                                                      revision=self._cursor)
        self._follow_clock()
        return self

    # -- the cursor --------------------------------------------------------------------------------

    @property
    def revision(self) -> int:
        return self._branch.revision if self._branch is not None else self._cursor

    @property
    def compacted_revision(self) -> int:
        return self._compacted

    @property
    def forked(self) -> bool:
        return self.forked_at is not None

    def last_change(self, *, group: str, resource: str) -> int:
        return self.revision

    async def ping(self) -> None:
        await self._store.ping()

    async def wait_for_revision(self, *, revision: int) -> None:
        while self.revision < revision:
            if self._closed:
                raise log.StorageError("event log closed")
            await self._changed.wait()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def time_at_cursor(self) -> float:
        if self._branch is not None:
            return self._branch.time_at_cursor()
        return self._time if self._time is not None else self._first_time

    def _follow_clock(self) -> None:
        if self.clock is None:
            return
        when = self.time_at_cursor()
        if self._clock_event is not None:
            with contextlib.suppress(Exception):
                when = max(when, sim.clock_time(_decode(self._clock_event.object)))
        self.clock.set(when)

    def has_clock_object(self) -> bool:
        if self._branch is not None:
            return self._branch.has_clock_object()
        return self._clock_event is not None

    async def ahead(self, limit: int) -> list[Mark]:
        """(revision, time, ...) of the next recorded events after the cursor, within `end` (at most
        `limit`; none once forked), read from the store a page at a time: what the player needs (the
        Clock object's events are read whole, for the clock)."""
        if self.forked:
            return []
        while len(self._buffer) < limit and self._read_to < self.end:
            page = await self._store._read(SQL_AHEAD, (self._read_to + 1, self.end, self.page))
            for revision, _time, clocks_row in page:
                if clocks_row:  # the Clock object's events: read whole (the clock follows them)
                    ev = (await self.recording.scan(revision, revision, 1))[0]
                    if (ev.group, ev.resource, ev.namespace, ev.name) == CLOCK_KEY:
                        self._clock_events[revision] = ev
            self._buffer.extend(page)
            self._read_to = self.end if len(page) < self.page else int(page[-1][0])
        return self._buffer[:limit]

    def advance_over(self, marks: Sequence[Mark]) -> None:
        """Apply the events of `marks`, the next ones `ahead` returned (a prefix of them)."""
        if self.forked:
            raise ReadOnlyError("the replay has forked: it no longer follows the recording")
        if not marks:
            return
        assert self._buffer[len(marks) - 1] is marks[-1], "advance_over takes what ahead returned"
        del self._buffer[:len(marks)]
        self._cursor, self._time = int(marks[-1][0]), float(marks[-1][1])
        if self._clock_events:
            for mark in reversed(marks):
                ev = self._clock_events.get(mark[0])
                if ev is not None:
                    self._clock_event = None if ev.type == "DELETED" else ev
                    break
            for revision in [r for r in self._clock_events if r <= self._cursor]:
                del self._clock_events[revision]
        self._follow_clock()
        self._notify()

    async def peek_event(self) -> log.Event | None:
        """The next recorded event after the cursor, within `end` (None once forked)."""
        nxt = await self.ahead(1)
        found = await self.events_in(nxt[0][0], nxt[0][0], 1) if nxt else []
        return found[0] if found else None

    async def events_in(self, start: int, end: int, limit: int) -> list[log.Event]:
        """The events with start <= revision <= end (at most `limit`)."""
        return await self.recording.scan(start, end, limit)

    async def next_revision_of(self, key: Key) -> int | None:
        """The revision of the object's next recorded event after the cursor, within `end`."""
        if self.forked:
            return None
        group, resource, namespace, name = key
        for ev in await self._store.history(group=group, resource=resource, namespace=namespace, name=name):
            if ev.revision > self._cursor:
                return ev.revision if ev.revision <= self.end else None
        return None

    async def remaining_count(self) -> int:
        """Recorded events still to replay (0 once forked): every revision above the compacted one is an
        event, and the cursor never is below it, so no count of the rows (a scan of the log) is needed."""
        if self.forked:
            return 0
        return self.end - self._cursor

    async def visible_pages(self, after: int) -> AsyncIterator[list[log.Event]]:
        """The events with after < revision <= cursor, in pages."""
        if self._branch is not None:
            async for page in self._branch.visible_pages(after):
                yield page
            return
        cursor = after
        while cursor < self._cursor:
            page = await self.recording.scan(cursor + 1, self._cursor, self.page)
            if not page:
                return
            yield page
            cursor = page[-1].revision

    async def branch(self) -> int:
        """Fork at the cursor: load the recording up to it (into a `ReplayLog`) and accept writes."""
        if self._branch is None:
            recorded = await Recording.from_source(self.recording, until=self._cursor)
            replay_log = ReplayLog(recorded, start=self._cursor, until=self._cursor, clock=self.clock)
            replay_log.fork()
            self._buffer = []
            self._branch = replay_log
            self.forked_at = self._cursor
            self.end = NO_END
            self._notify()
        assert self.forked_at is not None
        return self.forked_at

    # -- EventLog ------------------------------------------------------------------------------------

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        self._closed = True
        if self._branch is not None:
            await self._branch.close()
        self._notify()

    def _check(self, revision: int | None) -> int:
        return _readable(revision, cursor=self._cursor, compacted=self._compacted)

    async def append(self, write: log.Write) -> log.Event:
        if self._branch is None:
            raise ReadOnlyError(WRITES_REFUSED)
        event = await self._branch.append(write)
        self._notify()
        return event

    async def get(self, *, group: str, resource: str, namespace: str, name: str,
                  revision: int | None = None, latest_known: bool = False) -> log.Event | None:
        if self._branch is not None:
            return await self._branch.get(group=group, resource=resource, namespace=namespace, name=name,
                                          revision=revision)
        at = self._check(revision)
        if at == 0:
            return None
        got: log.Event | None = await self._store.get(group=group, resource=resource, namespace=namespace,
                                                      name=name, revision=at)
        return got

    async def list_objects(self, *, group: str, resource: str, namespace: str | None,
                           revision: int | None = None, start_after: tuple[str, str] | None = None,
                           limit: int | None = None) -> log.ListResult:
        if self._branch is not None:
            return await self._branch.list_objects(group=group, resource=resource, namespace=namespace,
                                                   revision=revision, start_after=start_after, limit=limit)
        at = self._check(revision)
        if at == 0:
            return log.ListResult(events=[], revision=0, more=False)
        listed = await self._store.list_objects(group=group, resource=resource, namespace=namespace, revision=at,
                                                start_after=start_after, limit=limit)
        return log.ListResult(events=listed.events, revision=at, more=listed.more)

    async def history(self, *, group: str, resource: str, namespace: str, name: str) -> list[log.Event]:
        if self._branch is not None:
            return await self._branch.history(group=group, resource=resource, namespace=namespace, name=name)
        return [ev for ev in await self._store.history(group=group, resource=resource, namespace=namespace,
                                                       name=name) if ev.revision <= self._cursor]

    async def after(self, revision: int, *, limit: int = 1000) -> list[log.Event]:
        if self._branch is not None:
            return await self._branch.after(revision, limit=limit)
        if revision < self._compacted:
            raise log.ExpiredError.at(requested=revision, compacted=self._compacted)
        if revision >= self._cursor:
            return []
        page: list[log.Event] = await self.recording.scan(revision + 1, self._cursor, limit)
        return page

    async def density(self, *, since: int, until: int, width: int) -> log.Density:
        """The store's aggregate, up to the cursor."""
        if self._branch is not None:
            return await self._branch.density(since=since, until=until, width=width)
        counted: log.Density = await self._store.density(since=since, until=min(until, self._cursor), width=width)
        return counted

    async def subscribe(self, *, group: str, resource: str, namespace: str | None,
                        after: int) -> log.Subscription:
        if after < self._compacted:
            raise log.ExpiredError.at(requested=after, compacted=self._compacted)
        return _StreamSub(self, group=group, resource=resource, namespace=namespace, after=after)

    async def compact(self, revision: int) -> None:
        return None  # a replay keeps everything it was given


# The player's read-ahead: every column but the object (most of a row's bytes).
SQL_AHEAD = ("SELECT revision, time, CASE WHEN resource = 'clocks' THEN 1 ELSE 0 END FROM events "
             "WHERE revision >= ? AND revision <= ? ORDER BY revision LIMIT ?")


async def _wait_changed(changed: asyncio.Event, deadline: float | None) -> bool:
    """A replay watch waits for the replay to move (or its log to close): False once the
    watch's deadline (loop time) has passed without a move."""
    if deadline is None:
        await changed.wait()
        return True
    remaining = deadline - asyncio.get_running_loop().time()
    if remaining <= 0:
        return False
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(changed.wait(), remaining)
    return True


def _readable(revision: int | None, *, cursor: int, compacted: int) -> int:
    """The revision a read at `revision` sees (None: the replay's own); a revision past the
    replay's or compacted away is refused as the live log refuses it."""
    if revision is None:
        return cursor
    if revision > cursor:
        raise log.FutureRevisionError(f"revision {revision} is newer than the replay's revision {cursor}",
                                      requested=revision, current=cursor)
    if revision <= compacted:
        raise log.ExpiredError.at(requested=revision, compacted=compacted)
    return revision
