"""The event-log contract: what `api/` and the `cplane` command rely on.

Every write is one appended event with a global, gapless, strictly increasing revision
(the Kubernetes resourceVersion). Reads at the latest or at any exact, uncompacted past revision;
watches from any revision, with no gaps and no duplicates. See docs/event-log.md and
`../shared/reference/storage-semantics.md` (kine, etcd).

Objects are stored as JSON bytes whose `metadata.resourceVersion` already equals the event's
revision, so reads never re-encode: a LIST is a concatenation of stored bytes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal, Protocol

import msgspec

EventType = Literal["ADDED", "MODIFIED", "DELETED"]

# Revisions are 64-bit signed integers in both databases: no revision above this can ever be written.
# A read asking for one is a FutureRevisionError before any SQL (the driver could not even bind it).
MAX_REVISION = (1 << 63) - 1


# gc=False: events hold only scalars, bytes and an Actor (no reference cycles), so the garbage
# collector need not track them; a LIST of 10,000 objects then costs no collector passes.
class Actor(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    """Who made a change: answers "who" for every event in the log."""

    user: str = ""
    field_manager: str = ""
    user_agent: str = ""
    request_id: str = ""

    def describe(self) -> str:
        """`user alice, manager kubectl-edit, agent kubectl/v1.37.1 (linux/amd64)`; "unknown" if empty."""
        parts = [f"{label} {value}" for label, value in (("user", self.user), ("manager", self.field_manager),
                                                         ("agent", self.user_agent)) if value]
        return ", ".join(parts) or "unknown"

    def matches(self, needle: str) -> bool:
        """`--actor A`: A occurs in the user, the field manager or the user agent."""
        return needle in self.user or needle in self.field_manager or needle in self.user_agent


class Event(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    revision: int
    type: EventType
    group: str  # "" for the core group
    resource: str  # plural, e.g. "pods"
    namespace: str  # "" for cluster-scoped objects
    name: str
    uid: str
    object: bytes  # JSON; for DELETED the last state; metadata.resourceVersion == str(revision)
    prev_revision: int  # revision of the key's previous event, 0 if none
    time: float  # wall time of the write (unix seconds, from the server's clock)
    actor: Actor


class Write(msgspec.Struct, frozen=True, kw_only=True):
    """One requested change.

    `expected_revision` is the optimistic-concurrency precondition:
    - ADDED: 0, and the key must not exist (a deleted key may be created again);
    - MODIFIED / DELETED: the key's current revision.
    The log sets `object["metadata"]["resourceVersion"]` to the new revision before storing.
    """

    type: EventType
    group: str
    resource: str
    namespace: str
    name: str
    object: dict[str, Any]
    expected_revision: int
    time: float
    actor: Actor = Actor()


class ListResult(msgspec.Struct, frozen=True, kw_only=True):
    events: list[Event]  # live objects ordered by (namespace, name)
    revision: int  # the revision the list was read at
    more: bool  # true when `limit` cut the list


class DensityCount(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """How many events of one resource in one namespace fall in one bucket of revisions."""

    bucket: int
    group: str
    resource: str
    namespace: str
    count: int


class Density(msgspec.Struct, frozen=True, kw_only=True):
    """The answer of `EventLog.density`: the counts, and per non-empty bucket the revision and time of
    its first retained event."""

    counts: list[DensityCount]
    firsts: dict[int, tuple[int, float]]


def density_of(events: Iterable[Event], *, since: int, width: int) -> Density:
    """`EventLog.density` over events in memory (the logs that hold them there)."""
    counts: dict[tuple[int, str, str, str], int] = {}
    firsts: dict[int, tuple[int, float]] = {}
    for ev in events:
        bucket = (ev.revision - since - 1) // width
        key = (bucket, ev.group, ev.resource, ev.namespace)
        counts[key] = counts.get(key, 0) + 1
        if bucket not in firsts:
            firsts[bucket] = (ev.revision, ev.time)
    return Density(counts=[DensityCount(bucket=b, group=g, resource=r, namespace=ns, count=n)
                           for (b, g, r, ns), n in counts.items()], firsts=firsts)


class StorageError(Exception):
    """Base of storage errors."""


class ConflictError(StorageError):
    """The precondition failed. `current` is the key's current event (None: key absent/deleted)."""

    def __init__(self, message: str, *, current: Event | None) -> None:
        super().__init__(message)
        self.current = current


class ExpiredError(StorageError):
    """The revision asked for is older than the compaction point (→ 410 Expired)."""

    def __init__(self, message: str, *, requested: int, compacted: int) -> None:
        super().__init__(message)
        self.requested = requested
        self.compacted = compacted

    @classmethod
    def at(cls, *, requested: int, compacted: int) -> ExpiredError:
        """The error of a read or watch from revision `requested`, compacted away."""
        return cls(f"revision {requested} is compacted (compacted revision {compacted})",
                   requested=requested, compacted=compacted)


class FutureRevisionError(StorageError):
    """The revision asked for has not been written yet (→ 504 "Too large resource version")."""

    def __init__(self, message: str, *, requested: int, current: int) -> None:
        super().__init__(message)
        self.requested = requested
        self.current = current


class UnavailableError(StorageError):
    """The database cannot be reached now (connection refused or lost, the server restarting, a disk
    that fails writes): the request may succeed if retried (→ 503 with Retry-After). A write that
    fails so may or may not have been committed, as with any database."""


class ImportRejectedError(StorageError):
    """An import was rejected; `line` is the 1-based NDJSON line number (0 when not line-bound)."""

    def __init__(self, message: str, *, line: int) -> None:
        super().__init__(message)
        self.line = line


class Subscription(Protocol):
    """A live watch over one resource (optionally one namespace), from a start revision."""

    @property
    def revision(self) -> int:
        """Every event of this subscription up to this revision has been delivered (bookmark RV)."""
        ...

    # `timeout` is part of the answer ([] with `revision` advanced: a bookmark), not a cancellation.
    async def next_batch(self, *, timeout: float | None) -> list[Event] | None:  # noqa: ASYNC109
        """The next events in revision order; [] when `timeout` passed with nothing new
        (`revision` may still have advanced: send a bookmark); None when the stream ended
        (the subscriber was too slow and was dropped, or the log closed): re-subscribe from the
        last revision seen."""
        ...

    def close(self) -> None: ...


class EventLog(Protocol):
    async def start(self) -> None:
        """Open the database, apply migrations, start background tasks."""
        ...

    async def close(self) -> None: ...

    async def ping(self) -> None:
        """A round trip to the storage; raises UnavailableError if it cannot be reached (the
        readiness check). Bound it with `asyncio.timeout`."""
        ...

    @property
    def revision(self) -> int:
        """The newest revision this process knows is committed and visible."""
        ...

    @property
    def compacted_revision(self) -> int:
        """Revisions at or below this are gone (0 = nothing compacted)."""
        ...

    async def wait_for_revision(self, *, revision: int) -> None:
        """Return once `revision <= self.revision` (at once when it already is), whichever process
        writes it. No timeout of its own: bound it with `asyncio.timeout`. Raises StorageError when
        the log closes first."""
        ...

    def last_change(self, *, group: str, resource: str) -> int:
        """A revision at or after the newest visible change to any object of this resource: what was
        read from it at revision R (R <= `revision` before the read) is still current while
        `last_change(...) <= R`. Lets callers keep small caches (namespaces for admission) without
        a watch, consistent with this process's view of the log (other replicas' writes included)."""
        ...

    async def append(self, write: Write) -> Event:
        """Append one change atomically (concurrent appends are group-committed).
        Raises ConflictError when `expected_revision` does not match."""
        ...

    async def get(self, *, group: str, resource: str, namespace: str, name: str,
                  revision: int | None = None, latest_known: bool = False) -> Event | None:
        """The live object at the latest (or an exact past) revision; None when absent there.
        Raises ExpiredError / FutureRevisionError for revisions out of range.
        `latest_known=True`: the newest version this process has published, without first learning the
        database's current revision — possibly stale when another process wrote since, so only a first
        guess that a write conditioned on its revision checks (upstream's cached existing object)."""
        ...

    async def list_objects(self, *, group: str, resource: str, namespace: str | None,
                   revision: int | None = None, start_after: tuple[str, str] | None = None,
                   limit: int | None = None) -> ListResult:
        """Live objects of one resource (one namespace, or all when None), ordered by
        (namespace, name), strictly after `start_after` when given, at the latest or an exact
        past revision."""
        ...

    async def history(self, *, group: str, resource: str, namespace: str, name: str) -> list[Event]:
        """Every retained event of one object, oldest first."""
        ...

    async def after(self, revision: int, *, limit: int = 1000) -> list[Event]:
        """Events with revision > `revision`, in order (all resources)."""
        ...

    async def density(self, *, since: int, until: int, width: int) -> Density:
        """The retained events with since < revision <= until, counted per bucket of `width` revisions
        (bucket i: since + i*width < revision <= since + (i+1)*width) and per (group, resource,
        namespace): one aggregate query where the events are in a database (the web UI's timeline,
        `api.eventlog`). Meant for `since` at or above the compacted revision (below it, what compaction
        kept is counted, without an error); `until` beyond the newest revision counts up to it."""
        ...

    async def subscribe(self, *, group: str, resource: str, namespace: str | None,
                        after: int) -> Subscription:
        """Watch events with revision > `after`. Raises ExpiredError if `after` is compacted."""
        ...

    async def compact(self, revision: int) -> None:
        """Drop history at or below `revision` (the newest event of each live key survives)."""
        ...
