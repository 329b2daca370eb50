"""The live objects of resources, kept in memory: kube-apiserver's watch cache, for LISTs and GETs.

A resource is loaded by its first LIST at the latest revision, or by the warm-up a server starts in
the background (`storage.sql.SqlEventLog.warm`): reads of its live objects in pages, each page at its
own revision S_k, while the events published meanwhile are held back and applied afterwards — an
event of a key in page k only when it is newer than S_k (what is older is already in the read): the
subscriptions' "subscribe, replay, de-duplicate". From then on it follows every published event, in
revision order, like a watcher that cannot fall behind.

`storage.sql` serves a LIST from here only after learning the database's current revision and
waiting until this process has published it, so the answer is as fresh as a read from the database:
it reflects every write committed before the LIST began, by this or any other process (upstream's
consistent reads from the watch cache). A continued LIST pinned to revision R is served from here
while the resource has not changed since R.

Bounded by memory, not by a count: every kept object is charged its JSON plus its name, uid and
request id, plus `ENTRY_OVERHEAD` for the rest of its `log.Event` and its place in the indexes
(measured with tracemalloc: `tests/storage/test_heads_budget.py`). Over `max_bytes`, the resources
listed least recently are dropped first (their next LIST loads them again); a resource larger than
the whole budget by itself is not kept (its LISTs read the database, as before). Everything is
dropped when the log skips revisions (compaction past the published revision, an import): the
skipped events never arrive.

To stay small, a kept event shares its strings that repeat (type, group, resource, namespace, the
writer's user, field manager and user agent) with every other kept event (`sys.intern`): what is left
per object is its JSON, its name, uid and request id, and the event's own fields.
"""

from __future__ import annotations

import bisect
import sys

from storage import log

Key = tuple[str, str]  # (namespace, name)

DEFAULT_MAX_BYTES = 2 << 30  # 2 GiB: `cplane serve --watch-cache-memory` (~450,000 pods of 3.4 KB)
# Bytes a kept object costs beyond the characters of its JSON, name, uid and request id, measured with
# tracemalloc (`tests/storage/test_heads_budget.py`: ~700 for a pod): the `log.Event` (104) and its
# Actor (48), the objects' headers (bytes 33, three str 49 each), its revision and time (56), the
# (namespace, name) key and its dict slot (~105), the sorted key list (8) and the allocator's rounding.
ENTRY_OVERHEAD = 720

_intern = sys.intern
_EMPTY_ACTOR = log.Actor()


def cost(event: log.Event) -> int:
    """What keeping `event` is charged against the budget (bytes)."""
    return ENTRY_OVERHEAD + len(event.object) + len(event.name) + len(event.uid) + len(event.actor.request_id)


def compact(event: log.Event) -> log.Event:
    """`event` with the strings many events repeat shared with them (equal to `event`)."""
    actor = event.actor
    if not (actor.user or actor.field_manager or actor.user_agent or actor.request_id):
        actor = _EMPTY_ACTOR
    else:
        actor = log.Actor(user=_intern(actor.user), field_manager=_intern(actor.field_manager),
                          user_agent=_intern(actor.user_agent), request_id=actor.request_id)
    return log.Event(revision=event.revision, type=_intern(event.type), group=_intern(event.group),  # type: ignore[arg-type]
                     resource=_intern(event.resource), namespace=_intern(event.namespace), name=event.name,
                     uid=event.uid, object=event.object, prev_revision=event.prev_revision, time=event.time,
                     actor=actor)


class _Heads:
    __slots__ = ("bytes", "keys", "loaded_at", "objects", "pages", "pending")

    def __init__(self) -> None:
        self.objects: dict[Key, log.Event] = {}
        self.keys: list[Key] | None = None  # sorted `objects` keys once a LIST asked; kept up to date
        self.pending: list[log.Event] | None = []  # events published while loading; None once loaded
        self.pages: list[tuple[Key | None, int]] = []  # while loading: (last key of a page or None, its revision)
        self.loaded_at = 0  # the newest revision of the reads that loaded it
        self.bytes = 0  # charged against the budget

    def sorted_keys(self) -> list[Key]:
        if self.keys is None:
            self.keys = sorted(self.objects)
        return self.keys


class HeadCache:
    def __init__(self, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        # Least recently listed first: the order in which the budget drops resources.
        self._resources: dict[tuple[str, str], _Heads] = {}
        self._refused: set[tuple[str, str]] = set()  # larger than the budget by itself
        self._objects = 0
        self._bytes = 0
        self._generation = 0  # bumped by `reset`: a load begun before it is discarded
        self.evictions = 0  # resources dropped to make room (for the metrics and the tests)

    def __len__(self) -> int:
        """Objects kept (all resources)."""
        return self._objects

    @property
    def bytes(self) -> int:
        """Bytes charged against the budget (all resources)."""
        return self._bytes

    # -- following the log ------------------------------------------------------------------------

    def observe(self, events: list[log.Event]) -> None:
        """Published events, in revision order (every event the log publishes comes here)."""
        resources = self._resources
        if not resources:
            return
        for event in events:
            key = (event.group, event.resource)
            heads = resources.get(key)
            if heads is None:
                continue
            if heads.pending is not None:
                heads.pending.append(event)
            elif event.revision > heads.loaded_at:  # older: already in the reads that loaded it
                self._apply(heads, event)
                if self._bytes > self.max_bytes:
                    self._fit(key)

    def _apply(self, heads: _Heads, event: log.Event) -> None:
        key = (event.namespace, event.name)
        objects = heads.objects
        old = objects.get(key)
        if event.type == "DELETED":
            if old is not None:
                del objects[key]
                self._charge(heads, -cost(old), -1)
                keys = heads.keys
                if keys is not None:
                    del keys[bisect.bisect_left(keys, key)]
            return
        event = compact(event)
        objects[key] = event
        if old is None:
            self._charge(heads, cost(event), 1)
            keys = heads.keys
            if keys is not None:
                bisect.insort(keys, key)
        else:
            self._charge(heads, cost(event) - cost(old), 0)

    def _charge(self, heads: _Heads, size: int, count: int) -> None:
        heads.bytes += size
        self._bytes += size
        self._objects += count

    def _fit(self, keep: tuple[str, str]) -> bool:
        """Drop the least recently listed resources other than `keep` until the budget holds; when
        `keep` alone is over it, refuse it too. False when `keep` was refused."""
        for key in list(self._resources):
            if self._bytes <= self.max_bytes:
                return True
            if key != keep and self._resources[key].bytes:
                self._drop(key)
                self.evictions += 1
        if self._bytes <= self.max_bytes:
            return True
        self._drop(keep)
        self._refused.add(keep)
        return False

    def _drop(self, key: tuple[str, str]) -> None:
        heads = self._resources.pop(key, None)
        if heads is not None:
            self._bytes -= heads.bytes
            self._objects -= len(heads.objects)

    def reset(self) -> None:
        """Forget everything (the log skipped revisions: events were not and will not be seen)."""
        self._resources.clear()
        self._refused.clear()
        self._objects = 0
        self._bytes = 0
        self._generation += 1

    # -- loading ----------------------------------------------------------------------------------

    def begin_load(self, *, group: str, resource: str) -> int | None:
        """Start holding back this resource's events; the load's ticket, or None when it is kept,
        being loaded, or refused."""
        key = (group, resource)
        if key in self._resources or key in self._refused or self.max_bytes <= 0:
            return None
        self._resources[key] = _Heads()
        return self._generation

    def refused(self, *, group: str, resource: str) -> bool:
        """Whether the resource is not kept because it is larger than the budget by itself."""
        return (group, resource) in self._refused

    def loading(self, *, group: str, resource: str) -> bool:
        heads = self._resources.get((group, resource))
        return heads is not None and heads.pending is not None

    def add_page(self, ticket: int, *, group: str, resource: str, events: list[log.Event], revision: int,
                 last: bool) -> bool:
        """One page of the load: live objects in key order after the previous page's, read at
        `revision` (`last`: up to the end). False when the load is over (reset meanwhile, or the
        resource does not fit the budget): the loader stops."""
        key = (group, resource)
        heads = self._resources.get(key)
        if ticket != self._generation or heads is None or heads.pending is None:
            return False  # reset meanwhile
        objects = heads.objects
        size = 0
        for event in events:
            event = compact(event)
            objects[(event.namespace, event.name)] = event
            size += cost(event)
        self._charge(heads, size, len(events))
        heads.pages.append((None if last or not events else (events[-1].namespace, events[-1].name), revision))
        heads.loaded_at = max(heads.loaded_at, revision)
        return self._bytes <= self.max_bytes or self._fit(key)

    def finish_load(self, ticket: int, *, group: str, resource: str, events: list[log.Event] | None = None,
                    revision: int = 0) -> None:
        """The load is complete: apply the held-back events (those newer than the read of their key's
        page). With `events`: they are the whole load, read at `revision` (one page). The caller has
        published at least the newest revision of the pages."""
        key = (group, resource)
        if events is not None and not self.add_page(ticket, group=group, resource=resource, events=events,
                                                    revision=revision, last=True):
            return
        heads = self._resources.get(key)
        if ticket != self._generation or heads is None or heads.pending is None:
            return  # reset meanwhile
        pending, heads.pending = heads.pending, None
        pages, heads.pages = heads.pages, []
        heads.sorted_keys()  # read in key order: a linear sort now, not a full one on the first LIST
        bounds = [page_last for page_last, _ in pages[:-1] if page_last is not None]  # the last reaches the end
        revisions = [page_revision for _, page_revision in pages]
        for event in pending:
            at = revisions[bisect.bisect_left(bounds, (event.namespace, event.name))] if revisions else 0
            if event.revision > at:
                self._apply(heads, event)
                if self._bytes > self.max_bytes and not self._fit(key):
                    return  # refused on the way (grew past the budget)

    def abandon_load(self, ticket: int, *, group: str, resource: str) -> None:
        heads = self._resources.get((group, resource))
        if ticket == self._generation and heads is not None and heads.pending is not None:
            self._drop((group, resource))

    # -- reading ----------------------------------------------------------------------------------

    def loaded_at(self, *, group: str, resource: str) -> int | None:
        """The revision the resource was loaded at; None when it is not kept (or still loading)."""
        heads = self._resources.get((group, resource))
        if heads is None or heads.pending is not None:
            return None
        return heads.loaded_at

    def _touch(self, key: tuple[str, str]) -> _Heads:
        """The resource's heads, now the most recently listed."""
        resources = self._resources
        heads = resources.pop(key)
        resources[key] = heads
        return heads

    def list_objects(self, *, group: str, resource: str, namespace: str | None, start_after: Key | None = None,
             limit: int | None = None) -> tuple[list[log.Event], bool]:
        """As `EventLog.list_objects` at the state kept: live objects ordered by (namespace, name), strictly
        after `start_after`; and whether `limit` cut the list. The resource must be loaded."""
        heads = self._touch((group, resource))
        assert heads.pending is None, "list_objects() of a resource still loading"
        keys = heads.sorted_keys()
        objects = heads.objects
        start = 0 if start_after is None else bisect.bisect_right(keys, start_after)
        if namespace is not None:
            start = max(start, bisect.bisect_left(keys, (namespace, "")))
            end = bisect.bisect_left(keys, (namespace + "\x00", ""), lo=start)
        else:
            end = len(keys)
        more = False
        if limit is not None and 0 < limit < end - start:
            end = start + limit
            more = True
        return [objects[key] for key in keys[start:end]], more

    def get(self, *, group: str, resource: str, namespace: str, name: str) -> log.Event | None:
        """The live object kept under the key; None when absent. The resource must be loaded."""
        heads = self._resources[(group, resource)]
        assert heads.pending is None, "get() of a resource still loading"
        return heads.objects.get((namespace, name))
