"""What admission plugins read of other objects, as upstream plugins read informer listers: the
objects of one resource (in one namespace, or cluster-wide), decoded once and kept while the event
log reports no change to that resource since they were read (`EventLog.last_change`).
"""

from __future__ import annotations

import builtins
from typing import Any

import msgspec

from storage import log

_decode = msgspec.json.Decoder().decode


def decode(body: bytes) -> dict[str, Any]:
    """A stored object from its JSON."""
    return dict(_decode(body))


class Lister:
    """Objects of one resource by namespace ("" for cluster-scoped ones)."""

    def __init__(self, *, group: str, resource: str) -> None:
        self.group = group
        self.resource = resource
        self._cache: dict[str, tuple[int, list[dict[str, Any]]]] = {}

    async def list(self, event_log: log.EventLog, namespace: str = "") -> list[dict[str, Any]]:
        """The live objects, ordered by name. Callers must not change them (copy first)."""
        cached = self.peek(event_log, namespace)
        if cached is not None:
            return cached
        as_of = event_log.revision
        listed = await event_log.list_objects(group=self.group, resource=self.resource, namespace=namespace)
        objects = [decode(ev.object) for ev in listed.events]
        self._cache[namespace] = (as_of, objects)
        return objects

    def peek(self, event_log: log.EventLog, namespace: str = "") -> builtins.list[dict[str, Any]] | None:
        """What `list` would answer from memory, or None when it would have to read the log."""
        cached = self._cache.get(namespace)
        if cached is not None and cached[0] >= event_log.last_change(group=self.group, resource=self.resource):
            return cached[1]
        return None
