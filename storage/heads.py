"""The live objects of listed resources, kept in memory: kube-apiserver's watch cache, for LISTs.

A resource is loaded by its first LIST at the latest revision: one read of all its live objects at
revision S, while the events published meanwhile are held back and applied afterwards (those at or
below S are already in the read) — the subscriptions' "subscribe, replay, de-duplicate". From then
on it follows every published event, in revision order, like a watcher that cannot fall behind.

`storage.sql` serves a LIST from here only after learning the database's current revision and
waiting until this process has published it, so the answer is as fresh as a read from the database:
it reflects every write committed before the LIST began, by this or any other process (upstream's
consistent reads from the watch cache). A continued LIST pinned to revision R is served from here
while the resource has not changed since R.

Bounded: at most `max_objects` objects in all; a resource that would go over is not kept (its LISTs
read the database, as before). Everything is dropped when the log skips revisions (compaction past
the published revision, an import): the skipped events never arrive.
"""

from __future__ import annotations

import bisect

from storage import log

Key = tuple[str, str]  # (namespace, name)


class _Heads:
    __slots__ = ("keys", "loaded_at", "objects", "pending")

    def __init__(self) -> None:
        self.objects: dict[Key, log.Event] = {}
        self.keys: list[Key] | None = None  # sorted `objects` keys; None after an add or a delete
        self.pending: list[log.Event] | None = []  # events published while loading; None once loaded
        self.loaded_at = 0  # the revision of the read that loaded it

    def sorted_keys(self) -> list[Key]:
        if self.keys is None:
            self.keys = sorted(self.objects)
        return self.keys


class HeadCache:
    def __init__(self, *, max_objects: int = 200_000) -> None:
        self.max_objects = max_objects
        self._resources: dict[tuple[str, str], _Heads] = {}
        self._refused: set[tuple[str, str]] = set()  # too large to keep
        self._objects = 0
        self._generation = 0  # bumped by `reset`: a load begun before it is discarded

    def __len__(self) -> int:
        """Objects kept (all resources)."""
        return self._objects

    # -- following the log ------------------------------------------------------------------------

    def observe(self, events: list[log.Event]) -> None:
        """Published events, in revision order (every event the log publishes comes here)."""
        resources = self._resources
        if not resources:
            return
        for event in events:
            heads = resources.get((event.group, event.resource))
            if heads is None:
                continue
            if heads.pending is not None:
                heads.pending.append(event)
            else:
                self._apply(heads, event)

    def _apply(self, heads: _Heads, event: log.Event) -> None:
        if event.revision <= heads.loaded_at:
            return  # already in the loading read
        key = (event.namespace, event.name)
        objects = heads.objects
        if event.type == "DELETED":
            if objects.pop(key, None) is not None:
                heads.keys = None
                self._objects -= 1
            return
        if key not in objects:
            heads.keys = None
            self._objects += 1
        objects[key] = event
        if self._objects > self.max_objects:
            self._refuse(group=event.group, resource=event.resource)

    def reset(self) -> None:
        """Forget everything (the log skipped revisions: events were not and will not be seen)."""
        self._resources.clear()
        self._refused.clear()
        self._objects = 0
        self._generation += 1

    def _refuse(self, *, group: str, resource: str) -> None:
        heads = self._resources.pop((group, resource), None)
        if heads is not None:
            self._objects -= len(heads.objects)
        self._refused.add((group, resource))

    # -- loading ----------------------------------------------------------------------------------

    def begin_load(self, *, group: str, resource: str) -> int | None:
        """Start holding back this resource's events; the load's ticket, or None when it is kept,
        being loaded, or refused."""
        key = (group, resource)
        if key in self._resources or key in self._refused or self._objects >= self.max_objects:
            return None
        self._resources[key] = _Heads()
        return self._generation

    def finish_load(self, ticket: int, *, group: str, resource: str, events: list[log.Event],
                    revision: int) -> None:
        """The resource's live objects as read at `revision`; then the held-back events after it."""
        heads = self._resources.get((group, resource))
        if ticket != self._generation or heads is None or heads.pending is None:
            return  # reset meanwhile
        if self._objects + len(events) > self.max_objects:
            self._refuse(group=group, resource=resource)
            return
        heads.objects = {(event.namespace, event.name): event for event in events}
        heads.loaded_at = revision
        self._objects += len(heads.objects)
        pending, heads.pending = heads.pending, None
        for event in pending:
            if self._resources.get((group, resource)) is not heads:
                return  # refused on the way (grew past the bound)
            self._apply(heads, event)

    def abandon_load(self, ticket: int, *, group: str, resource: str) -> None:
        heads = self._resources.get((group, resource))
        if ticket == self._generation and heads is not None and heads.pending is not None:
            del self._resources[(group, resource)]

    # -- reading ----------------------------------------------------------------------------------

    def loaded_at(self, *, group: str, resource: str) -> int | None:
        """The revision the resource was loaded at; None when it is not kept (or still loading)."""
        heads = self._resources.get((group, resource))
        if heads is None or heads.pending is not None:
            return None
        return heads.loaded_at

    def list_objects(self, *, group: str, resource: str, namespace: str | None, start_after: Key | None = None,
             limit: int | None = None) -> tuple[list[log.Event], bool]:
        """As `EventLog.list_objects` at the state kept: live objects ordered by (namespace, name), strictly
        after `start_after`; and whether `limit` cut the list. The resource must be loaded."""
        heads = self._resources[(group, resource)]
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
