"""An in-memory EventLog with the same contract as the SQL one (storage/log.py).

Used for fast API tests and as the substrate of replay servers. Everything is kept:
the full event list and, per key, the list of its revisions.
"""

from __future__ import annotations

import asyncio
import bisect
from collections import defaultdict

from storage import codec, log


class _Sub:
    def __init__(self, owner: MemoryEventLog, *, group: str, resource: str, namespace: str | None,
                 after: int, buffer: int) -> None:
        self._owner = owner
        self._gr = (group, resource)
        self._namespace = namespace
        self._queue: asyncio.Queue[log.Event | None] = asyncio.Queue(maxsize=buffer)
        self._revision = after
        self._last = after
        self._closed = False

    @property
    def revision(self) -> int:
        if self._queue.empty() and not self._closed:
            return max(self._revision, self._owner.revision)
        return self._revision

    def offer(self, event: log.Event) -> None:
        if self._closed or event.revision <= self._last:
            return
        if self._namespace is not None and event.namespace != self._namespace:
            return
        try:
            self._queue.put_nowait(event)
            self._last = event.revision
        except asyncio.QueueFull:
            self._drop()

    def _drop(self) -> None:
        self._closed = True
        self._owner._unsubscribe(self._gr, self)
        while not self._queue.empty():
            self._queue.get_nowait()
        self._queue.put_nowait(None)

    async def next_batch(self, *, timeout: float | None) -> list[log.Event] | None:  # noqa: ASYNC109
        try:
            first = await asyncio.wait_for(self._queue.get(), timeout) if timeout is not None \
                else await self._queue.get()
        except TimeoutError:
            return []
        if first is None:
            return None
        batch = [first]
        while not self._queue.empty():
            item = self._queue.get_nowait()
            if item is None:
                self._queue.put_nowait(None)
                break
            batch.append(item)
        self._revision = batch[-1].revision
        return batch

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._owner._unsubscribe(self._gr, self)


class MemoryEventLog:
    def __init__(self, *, subscriber_buffer: int = 1000) -> None:
        self._events: list[log.Event] = []
        self._keys: dict[tuple[str, str, str, str], list[int]] = {}  # key -> revisions
        self._subs: dict[tuple[str, str], set[_Sub]] = defaultdict(set)
        self._compacted = 0
        self._changed: dict[tuple[str, str], int] = {}  # (group, resource) -> newest revision
        self._buffer = subscriber_buffer
        self._lock = asyncio.Lock()
        self._revision_waiters: list[tuple[int, asyncio.Future[None]]] = []

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        for subs in list(self._subs.values()):
            for sub in list(subs):
                sub._drop()
        for _, waiter in self._revision_waiters:
            if not waiter.done():
                waiter.set_exception(log.StorageError("event log closed"))
        self._revision_waiters.clear()

    @property
    def revision(self) -> int:
        return self._events[-1].revision if self._events else 0

    @property
    def compacted_revision(self) -> int:
        return self._compacted

    def last_change(self, *, group: str, resource: str) -> int:
        return self._changed.get((group, resource), 0)

    async def ping(self) -> None:
        """In memory: always reachable."""

    async def wait_for_revision(self, *, revision: int) -> None:
        if self.revision >= revision:
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (revision, waiter)
        self._revision_waiters.append(entry)
        try:
            await waiter
        finally:
            if entry in self._revision_waiters:
                self._revision_waiters.remove(entry)

    def _release_waiters(self) -> None:
        revision = self.revision
        keep = []
        for target, waiter in self._revision_waiters:
            if target <= revision:
                if not waiter.done():
                    waiter.set_result(None)
            else:
                keep.append((target, waiter))
        self._revision_waiters = keep

    def _event_at(self, revision: int) -> log.Event:
        return self._events[revision - 1 - self._offset()]

    def _offset(self) -> int:
        return self._events[0].revision - 1 if self._events else 0

    def _latest(self, key: tuple[str, str, str, str], at: int | None = None) -> log.Event | None:
        revs = self._keys.get(key)
        if not revs:
            return None
        if at is None:
            ev = self._event_at(revs[-1])
        else:
            i = bisect.bisect_right(revs, at)
            if i == 0:
                return None
            ev = self._event_at(revs[i - 1])
        return None if ev.type == "DELETED" else ev

    def _check(self, revision: int | None) -> None:
        if revision is None:
            return
        if revision > self.revision:
            raise log.FutureRevisionError(f"revision {revision} is in the future",
                                          requested=revision, current=self.revision)
        if revision <= self._compacted:
            raise log.ExpiredError(f"revision {revision} has been compacted",
                                   requested=revision, compacted=self._compacted)

    async def append(self, write: log.Write) -> log.Event:
        key = (write.group, write.resource, write.namespace, write.name)
        current = self._latest(key)
        if write.type == "ADDED":
            if current is not None:
                raise log.ConflictError("key exists", current=current)
        elif current is None or current.revision != write.expected_revision:
            raise log.ConflictError("revision mismatch", current=current)
        revision = self.revision + 1
        obj, uid = codec.stamp(write, revision=revision)  # the caller's object stays as it was
        revs = self._keys.get(key)
        event = codec.event_from_write(write, revision=revision, prev_revision=revs[-1] if revs else 0,
                                       obj=obj, uid=uid)
        self._events.append(event)
        self._keys.setdefault(key, []).append(revision)
        self._changed[(write.group, write.resource)] = revision
        for sub in list(self._subs.get((write.group, write.resource), ())):
            sub.offer(event)
        if self._revision_waiters:
            self._release_waiters()
        return event

    async def get(self, *, group: str, resource: str, namespace: str, name: str,
                  revision: int | None = None, latest_known: bool = False) -> log.Event | None:
        self._check(revision)
        return self._latest((group, resource, namespace, name), revision)

    async def list_objects(self, *, group: str, resource: str, namespace: str | None,
                   revision: int | None = None, start_after: tuple[str, str] | None = None,
                   limit: int | None = None) -> log.ListResult:
        self._check(revision)
        at = self.revision if revision is None else revision
        keys = sorted(k for k in self._keys
                      if k[0] == group and k[1] == resource and (namespace is None or k[2] == namespace)
                      and (start_after is None or (k[2], k[3]) > start_after))
        out: list[log.Event] = []
        more = False
        for key in keys:
            ev = self._latest(key, at)
            if ev is None:
                continue
            if limit is not None and len(out) >= limit:
                more = True
                break
            out.append(ev)
        return log.ListResult(events=out, revision=at, more=more)

    async def history(self, *, group: str, resource: str, namespace: str, name: str) -> list[log.Event]:
        return [self._event_at(r) for r in self._keys.get((group, resource, namespace, name), [])
                if r > self._compacted]

    async def after(self, revision: int, *, limit: int = 1000) -> list[log.Event]:
        start = max(revision, self._offset())
        return self._events[start - self._offset(): start - self._offset() + limit]

    async def density(self, *, since: int, until: int, width: int) -> log.Density:
        lo = max(since, self._offset())
        hi = min(until, self.revision)
        events = self._events[lo - self._offset():max(hi - self._offset(), 0)] if hi > lo else []
        return log.density_of(events, since=since, width=width)

    async def subscribe(self, *, group: str, resource: str, namespace: str | None,
                        after: int) -> log.Subscription:
        if after < self._compacted:
            raise log.ExpiredError(f"revision {after} has been compacted",
                                   requested=after, compacted=self._compacted)
        sub = _Sub(self, group=group, resource=resource, namespace=namespace, after=after,
                   buffer=self._buffer)
        for ev in self._events[max(after - self._offset(), 0):]:
            if ev.group == group and ev.resource == resource:
                sub.offer(ev)
        self._subs[(group, resource)].add(sub)
        return sub

    def _unsubscribe(self, gr: tuple[str, str], sub: _Sub) -> None:
        self._subs.get(gr, set()).discard(sub)

    async def compact(self, revision: int) -> None:
        self._compacted = max(self._compacted, min(revision, self.revision))
