"""Read-only views of the event log for the web UI (issue #26), where the Kubernetes API has no answer.

Under `/apis/sim.cplane.dev/v1alpha1/` (cluster-wide) and `.../namespaces/{ns}/` (one namespace and
the cluster-scoped objects), served by `cplane serve` and `cplane replay` (where the log ends at the
replay's cursor). docs/api.md documents the shapes.

- `GET eventlog?since=R&until=R&limit=N[&group=G][&resource=R][&namespace=NS]`: event summaries in
  revision order (no objects), at most `limit` (default 500, at most 10,000) a page; `continue` is
  the `since` of the next page, present while more may follow. A page reads at most `SCAN` events,
  so it may hold fewer than `limit` when the user may see few of them. 410 when `since` is compacted.
- `GET eventlog?watch=1&since=R[&objects=RES,...][&timeoutSeconds=N]`: the events after R as they are
  appended, JSON lines of the same summaries, each with `object` (the stored object, in its stored
  version) when its resource is named in `objects` (plural, or plural.group); a `BOOKMARK` line with
  the revision followed when it has nothing visible to send (at once when it catches up, then every
  `BOOKMARK_INTERVAL`). 410 when `since` is compacted; an `ERROR` line with the Status when the log is
  compacted under it. Reads with `EventLog.after` and waits with `wait_for_revision` (under `cplane
  replay`: the cursor); ends at `timeoutSeconds`, on shutdown (`st.WATCHES`) and when the client goes.
- `GET eventlog/density?buckets=N[&since=R&until=R]`: events counted per bucket of revisions and per
  resource: at most N buckets of a power-of-two width, aligned to multiples of it (`since` is
  rounded down to a bucket boundary), from one aggregate query of the log (`EventLog.density`).
  Complete buckets are remembered per log (until it is compacted or a replay forks), so that a
  timeline asking again reads only its newest bucket.
- `GET eventlog/history?group=&resource=&namespace=&name=`: every retained version of one object with
  its field-level changes (`cp.changes`, as `cplane log history` prints them).
- `GET eventlog/diff?since=A&until=B`: the objects the events in (A, B] touched, each added, deleted,
  modified (with its field-level changes from A to B, `cp.changes`) or created and deleted in between.

Authorization: with authentication on, the endpoints are RBAC-checked as a resource `eventlog` of
sim.cplane.dev (verb `list` for `eventlog`, `watch` for its watch, `get` for `eventlog/density`, `eventlog/history` and `eventlog/diff`: the
view, edit and admin roles grant both), and what they return is filtered with the user's own
permissions, decided once per (group, resource, namespace) a request: an event is listed or counted
only when the user may `list` its resource in its namespace (cluster-scoped: at the cluster); a
history needs `get` on the object.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import weakref
from collections.abc import AsyncGenerator
from typing import Any

import msgspec
from aiohttp import web

from api import codec, connections, storage_errors, watching
from api import state as st
from cp import clock as clocks
from cp import errors, options, rbac
from storage import log

PREFIX = "/apis/sim.cplane.dev/v1alpha1"
RESOURCE = "eventlog"
DEFAULT_LIMIT = 500
MAX_LIMIT = 10_000
SCAN = 50_000  # events read at most for one page of `eventlog`
BOOKMARK_INTERVAL = 5.0  # seconds: an idle watch sends a bookmark at least this often
WATCH_PAGE = 1000  # events read at once by a watch
DEFAULT_BUCKETS = 100
MAX_BUCKETS = 2_000
_encode = msgspec.json.Encoder().encode


class Summary(msgspec.Struct, kw_only=True):
    revision: int
    type: str
    group: str
    resource: str
    namespace: str
    name: str
    time: str
    actor: dict[str, str]


class WatchLine(Summary, kw_only=True):
    """One line of the event log's watch: a summary, with the stored object for the named resources."""

    object: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET


class Bookmark(msgspec.Struct, kw_only=True, tag_field="type", tag="BOOKMARK"):
    """The watch's line when it has nothing visible to send: how far it has read."""

    revision: int


def _actor(actor: log.Actor) -> dict[str, str]:
    return {"user": actor.user, "fieldManager": actor.field_manager, "userAgent": actor.user_agent}


class Visibility:
    """What the requesting user may see, decided with the server's authorizer, each (verb, group,
    resource, namespace) once. `namespace`: the request's (its URL's); None for the whole cluster."""

    def __init__(self, request: web.Request, *, namespace: str | None) -> None:
        from api.auth.config import AUTH

        config = request.app.get(AUTH)
        self._config = config if config is not None and config.secure else None
        self._user = request.get(st.USER_INFO)
        self.namespace = namespace
        self._decisions: dict[tuple[str, str, str, str], bool] = {}

    def may(self, verb: str, group: str, resource: str, namespace: str, name: str = "") -> bool:
        if self.namespace is not None and namespace not in ("", self.namespace):
            return False
        if self._config is None or self._user is None:
            return True
        key = (verb, group, resource, namespace)
        if name:
            return bool(self._config.allowed(self._user, verb, group=group, resource=resource,
                                             namespace=namespace, name=name))
        decided = self._decisions.get(key)
        if decided is None:
            decided = self._decisions[key] = bool(self._config.allowed(self._user, verb, group=group,
                                                                       resource=resource, namespace=namespace))
        return decided

    def forbidden(self, *, group: str, resource: str, namespace: str, name: str) -> errors.Forbidden:
        from api.auth import chain

        assert self._user is not None
        return chain.forbid(rbac.Attributes(user=self._user, verb="get", api_group=group, resource=resource,
                                            namespace=namespace, name=name))


def _revision(request: web.Request, name: str) -> int | None:
    text = request.query.get(name)
    value = options.int64_param(text) if text not in (None, "") else None
    if value is not None and value < 0:
        raise errors.BadRequest(f"{name}: must be a revision (>= 0), got {text!r}")
    return value


def _bounded(request: web.Request, name: str, *, default: int, maximum: int) -> int:
    text = request.query.get(name)
    value = options.int64_param(text) if text not in (None, "") else default
    assert value is not None
    if not 1 <= value <= maximum:
        raise errors.BadRequest(f"{name}: must be between 1 and {maximum}, got {text!r}")
    return value


def _range(request: web.Request, event_log: log.EventLog) -> tuple[int, int]:
    """(since, until) of a request: since defaults to the compacted revision (older: 410), until to
    the newest revision (newer: the newest)."""
    compacted = event_log.compacted_revision
    since = _revision(request, "since")
    until = _revision(request, "until")
    if since is None:
        since = compacted
    elif since < compacted:
        raise storage_errors.too_old(requested=since, compacted=compacted)
    newest = event_log.revision
    until = newest if until is None else min(until, newest)
    return since, max(until, since)


def _scope(request: web.Request) -> str | None:
    return request.match_info.get("namespace")


def _only_get(request: web.Request) -> None:
    if request.method not in ("GET", "HEAD"):
        raise errors.MethodNotAllowed("the server does not allow this method on the requested resource")


class _Scan:
    """The events in (since, until] in revision order, read a page at a time, at most `most` of them:
    `cursor` is the last revision read (`until` once all are), `scanned` how many were read."""

    def __init__(self, event_log: log.EventLog, *, since: int, until: int, most: int, page: int = 1000) -> None:
        self._log = event_log
        self.until = until
        self.most = most
        self.page = page
        self.cursor = since
        self.scanned = 0

    async def events(self) -> AsyncGenerator[log.Event, None]:
        while self.cursor < self.until and self.scanned < self.most:
            try:
                page = await self._log.after(self.cursor, limit=min(self.page, self.most - self.scanned))
            except (log.ExpiredError, log.FutureRevisionError) as exc:
                raise storage_errors.status_of(exc) from None
            if not page:
                self.cursor = self.until
                return
            for ev in page:
                if ev.revision > self.until:
                    self.cursor = self.until
                    return
                self.cursor, self.scanned = ev.revision, self.scanned + 1
                yield ev


async def list_events(request: web.Request) -> web.StreamResponse:
    _only_get(request)
    if codec.parse_bool("watch", request.query.get("watch")):
        return await watch_events(request)
    event_log: log.EventLog = request.app[st.STORE].log
    seen = Visibility(request, namespace=_scope(request))
    since, until = _range(request, event_log)
    limit = _bounded(request, "limit", default=DEFAULT_LIMIT, maximum=MAX_LIMIT)
    q = request.query
    group, resource, namespace = q.get("group"), q.get("resource") or None, q.get("namespace")
    items: list[Summary] = []
    scan = _Scan(event_log, since=since, until=until, most=SCAN, page=min(max(limit, 100), 1000))
    async with contextlib.aclosing(scan.events()) as events:
        async for ev in events:
            if (resource is not None and ev.resource != resource) or (group is not None and ev.group != group) \
                    or (namespace is not None and ev.namespace != namespace) \
                    or not seen.may("list", ev.group, ev.resource, ev.namespace):
                continue
            items.append(Summary(revision=ev.revision, type=ev.type, group=ev.group, resource=ev.resource,
                                 namespace=ev.namespace, name=ev.name, time=clocks.rfc3339_milli(ev.time),
                                 actor=_actor(ev.actor)))
            if len(items) >= limit:
                break
    cursor = scan.cursor
    body: dict[str, Any] = {"kind": "EventLogList", "apiVersion": "sim.cplane.dev/v1alpha1",
                            "revision": event_log.revision, "compacted": event_log.compacted_revision,
                            "since": since, "until": until, "items": items}
    if cursor < until:
        body["continue"] = str(cursor)
    return codec.json_response(_encode(body))


# -- watch -----------------------------------------------------------------------------------------

def _named(text: str) -> set[tuple[str, str | None]]:
    """`objects=pods,resourceslices.resource.k8s.io` -> {("pods", None), ("resourceslices", "resource.k8s.io")}."""
    out: set[tuple[str, str | None]] = set()
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        plural, _, group = part.partition(".")
        if not plural:
            raise errors.BadRequest(f"objects: {part!r} is not a resource (plural or plural.group)")
        out.add((plural, group if group else None))
    return out


async def watch_events(request: web.Request) -> web.StreamResponse:
    """The event log's watch (see the module doc): every visible event after `since`, in order."""
    event_log: log.EventLog = request.app[st.STORE].log
    seen = Visibility(request, namespace=_scope(request))
    since = _revision(request, "since")
    if since is None:
        raise errors.BadRequest("since: a watch of the event log starts after a revision (since=R)")
    if since < event_log.compacted_revision:
        raise storage_errors.too_old(requested=since, compacted=event_log.compacted_revision)
    named = _named(request.query.get("objects", ""))
    timeout = options.int64_param(request.query.get("timeoutSeconds"))
    if timeout is None or timeout <= 0:
        timeout = int(1800 * (1 + random.random()))  # as the API's watches (upstream's min-request-timeout)

    def wanted(ev: log.Event) -> bool:
        return (ev.resource, None) in named or (ev.resource, ev.group) in named

    resp = web.StreamResponse(status=200, headers={"Content-Type": codec.JSON, "Cache-Control": "no-cache, private"})
    resp.enable_chunked_encoding()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + min(timeout, 10 * 365 * 86400)
    connections.cancel_on_disconnect(request)
    watches = request.app[st.WATCHES]
    task = asyncio.current_task()
    if task is not None:
        watches.add(task)
    sender = watching.Sender(request, resp, deadline=deadline)
    cursor = sent = since  # read up to `cursor`; the client knows up to `sent`

    def bookmark() -> bytes:
        nonlocal sent
        sent = cursor
        return _encode(Bookmark(revision=cursor)) + b"\n"

    try:
        await resp.prepare(request)
        while (remaining := deadline - loop.time()) > 0:
            newest = event_log.revision
            if cursor >= newest:
                # caught up: say how far when the last events were not visible, then wait for the next
                if sent < cursor and not await sender.send(bookmark()):
                    return resp
                try:
                    async with asyncio.timeout(min(BOOKMARK_INTERVAL, remaining)):
                        await event_log.wait_for_revision(revision=cursor + 1)
                except TimeoutError:
                    if not await sender.send(bookmark()):
                        return resp
                continue
            if cursor < event_log.compacted_revision:
                raise log.ExpiredError.at(requested=cursor, compacted=event_log.compacted_revision)
            page = await event_log.after(cursor, limit=WATCH_PAGE)
            out: list[bytes] = []
            for ev in page:
                if ev.revision > newest:
                    break
                cursor = ev.revision
                if not seen.may("list", ev.group, ev.resource, ev.namespace):
                    continue
                sent = ev.revision
                out.append(_encode(WatchLine(
                    type=ev.type, revision=ev.revision, group=ev.group, resource=ev.resource,
                    namespace=ev.namespace, name=ev.name, time=clocks.rfc3339_milli(ev.time),
                    actor=_actor(ev.actor), object=msgspec.Raw(ev.object) if wanted(ev) else msgspec.UNSET)) + b"\n")
            if len(page) < WATCH_PAGE:
                cursor = max(cursor, newest)  # every event up to `newest` has been read
            if out and not await sender.send(b"".join(out)):
                return resp
        await sender.finish()
    except log.ExpiredError as exc:
        status = storage_errors.too_old(requested=exc.requested, compacted=exc.compacted).status()
        if await sender.send(codec.go_json({"type": "ERROR", "object": status}) + b"\n"):
            await sender.finish()
    except log.StorageError:
        await sender.finish()  # the log closed: the stream ends; the client reopens it from its last revision
    except (ConnectionResetError, asyncio.CancelledError):
        pass  # the client went away, or the server shuts down (`_shutdown_watches`)
    finally:
        if task is not None:
            watches.discard(task)
    return resp


# -- density -----------------------------------------------------------------------------------------

Counts = dict[tuple[str, str, str], int]  # (group, resource, namespace) -> events


class _Bucket(msgspec.Struct, frozen=True):
    counts: Counts
    first: tuple[int, float] | None  # revision and time of its first event


class _Remembered:
    """Complete buckets of one log, per width, valid while the log's history is the same."""

    def __init__(self) -> None:
        self.identity: tuple[int, int | None] = (0, None)
        self.by_width: dict[int, dict[int, _Bucket]] = {}


_remembered: weakref.WeakKeyDictionary[Any, _Remembered] = weakref.WeakKeyDictionary()


def _identity(event_log: log.EventLog) -> tuple[int, int | None]:
    """Changes when counted buckets may change: compaction, or a replay forking (new events)."""
    return event_log.compacted_revision, getattr(event_log, "forked_at", None)


def _width(since: int, until: int, buckets: int) -> int:
    needed = max(1, -(-(until - since) // buckets))
    return 1 << (needed - 1).bit_length()


async def _buckets(event_log: log.EventLog, *, first: int, last: int, width: int) -> dict[int, _Bucket]:
    """Buckets `first..last` (bucket k: k*width < revision <= (k+1)*width), remembered ones reused."""
    try:
        memo = _remembered.setdefault(event_log, _Remembered())
    except TypeError:  # a log that cannot be referenced weakly: nothing remembered
        memo = _Remembered()
    if memo.identity != _identity(event_log):
        memo.identity, memo.by_width = _identity(event_log), {}
    known = memo.by_width.setdefault(width, {})
    newest = event_log.revision
    out: dict[int, _Bucket] = {}
    k = first
    while k <= last:
        if k in known:
            out[k] = known[k]
            k += 1
            continue
        end = k
        while end + 1 <= last and end + 1 not in known:
            end += 1
        counted = await event_log.density(since=k * width, until=(end + 1) * width, width=width)
        fresh: dict[int, dict[tuple[str, str, str], int]] = {i: {} for i in range(k, end + 1)}
        for c in counted.counts:
            fresh[k + c.bucket][(c.group, c.resource, c.namespace)] = c.count
        for i, counts in fresh.items():
            bucket = _Bucket(counts, counted.firsts.get(i - k))
            out[i] = bucket
            if (i + 1) * width <= newest:  # complete: its events will not change
                known[i] = bucket
        k = end + 1
    return out


def _point(event_log_first: tuple[int, float] | None) -> dict[str, Any] | None:
    if event_log_first is None:
        return None
    return {"revision": event_log_first[0], "time": clocks.rfc3339_milli(event_log_first[1])}


async def _edge(event_log: log.EventLog, after: int) -> tuple[int, float] | None:
    """The revision and time of the first event after `after`."""
    try:
        page = await event_log.after(after, limit=1)
    except (log.ExpiredError, log.FutureRevisionError):
        return None
    return (page[0].revision, page[0].time) if page else None


def visible_counts(counts: Counts, seen: Visibility) -> dict[str, int]:
    """Per resource (plural), the events the user may see."""
    out: dict[str, int] = {}
    for (group, resource, namespace), n in counts.items():
        if seen.may("list", group, resource, namespace):
            out[resource] = out.get(resource, 0) + n
    return out


async def density(request: web.Request) -> web.StreamResponse:
    _only_get(request)
    event_log: log.EventLog = request.app[st.STORE].log
    seen = Visibility(request, namespace=_scope(request))
    since, until = _range(request, event_log)
    width = _width(since, until, _bounded(request, "buckets", default=DEFAULT_BUCKETS, maximum=MAX_BUCKETS))
    first, last = since // width, max(since // width, -(-until // width) - 1)
    got = await _buckets(event_log, first=first, last=last, width=width) if until > since else {}
    buckets = []
    for k in range(first, last + 1) if until > since else ():
        bucket = got[k]
        buckets.append({"from": k * width + 1, "to": min((k + 1) * width, event_log.revision),
                        "time": clocks.rfc3339_milli(bucket.first[1]) if bucket.first else None,
                        "counts": visible_counts(bucket.counts, seen)})
    compacted = event_log.compacted_revision
    newest = event_log.revision
    body = {"kind": "EventLogDensity", "apiVersion": "sim.cplane.dev/v1alpha1", "revision": newest,
            "compacted": compacted, "since": first * width, "until": until, "width": width,
            "first": _point(await _edge(event_log, compacted)),
            "last": _point(await _edge(event_log, newest - 1) if newest else None),
            "buckets": buckets}
    return codec.json_response(_encode(body))


# -- history -----------------------------------------------------------------------------------------

async def history(request: web.Request) -> web.StreamResponse:
    _only_get(request)
    from cp import changes

    event_log: log.EventLog = request.app[st.STORE].log
    q = request.query
    scope = _scope(request)
    group, resource, name = q.get("group", ""), q.get("resource", ""), q.get("name", "")
    namespace = q.get("namespace", "" if scope is None else scope)
    if scope is not None and namespace not in ("", scope):  # its namespace, or a cluster-scoped object
        raise errors.BadRequest(f"namespace: the URL names namespace {scope!r}")
    if not resource or not name:
        raise errors.BadRequest("resource and name are required (and group, namespace where they apply)")
    seen = Visibility(request, namespace=scope)
    if not seen.may("get", group, resource, namespace, name):
        raise seen.forbidden(group=group, resource=resource, namespace=namespace, name=name)
    events = await event_log.history(group=group, resource=resource, namespace=namespace, name=name)
    if not events:
        raise errors.NotFound.of(group=group, plural=resource, name=name)
    objects = [codec.decoder.decode(ev.object) for ev in events]
    diffs = changes.versions(types=[ev.type for ev in events], objects=objects)
    items = [{"revision": ev.revision, "type": ev.type, "uid": ev.uid, "time": clocks.rfc3339_milli(ev.time),
              "actor": _actor(ev.actor), "object": obj, "changes": changes.changes_json(d)}
             for ev, obj, d in zip(events, objects, diffs, strict=True)]
    return codec.json_response(_encode({
        "kind": "EventLogHistory", "apiVersion": "sim.cplane.dev/v1alpha1", "revision": event_log.revision,
        "group": group, "resource": resource, "namespace": namespace, "name": name, "items": items}))


# -- diff ----------------------------------------------------------------------------------------

DIFF_EVENTS = 50_000  # events read between the two revisions at most (beyond: `cut`)
DIFF_DETAILED = 100  # modified objects whose field-level changes are computed


async def diff(request: web.Request) -> web.StreamResponse:
    """The objects the events in (since, until] touched that the user may list, each added, deleted,
    modified (with its field-level changes, `cp.changes`, for the first `DIFF_DETAILED`) or created
    and deleted in between (`transient`): the web UI's `?diff=A..B`, as `cplane log diff` compares."""
    _only_get(request)
    from cp import changes

    event_log: log.EventLog = request.app[st.STORE].log
    seen = Visibility(request, namespace=_scope(request))
    since, until = _range(request, event_log)
    entries: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    scan = _Scan(event_log, since=since, until=until, most=DIFF_EVENTS)
    async for ev in scan.events():
        if not seen.may("list", ev.group, ev.resource, ev.namespace):
            continue
        key = (ev.group, ev.resource, ev.namespace, ev.name)
        entry = entries.get(key)
        if entry is None:
            entry = entries[key] = {"group": ev.group, "resource": ev.resource, "namespace": ev.namespace,
                                    "name": ev.name, "count": 0, "first": ev.type}
        entry["count"] += 1
        entry["last"] = {"revision": ev.revision, "type": ev.type}
    items = [entries[k] for k in sorted(entries)]
    modified = []
    for entry in items:
        at_since, at_until = entry.pop("first") != "ADDED", entry["last"]["type"] != "DELETED"
        entry["change"] = ("modified" if at_until else "deleted") if at_since else \
            ("added" if at_until else "transient")
        if entry["change"] == "modified":
            modified.append(entry)

    async def object_at(entry: dict[str, Any], revision: int) -> dict[str, Any] | None:
        ev = await event_log.get(group=entry["group"], resource=entry["resource"], namespace=entry["namespace"],
                                 name=entry["name"], revision=revision)
        return codec.decoder.decode(ev.object) if ev is not None else None

    for entry in modified[:DIFF_DETAILED]:
        try:
            before, after = await object_at(entry, since), await object_at(entry, until)
        except (log.ExpiredError, log.FutureRevisionError) as exc:
            raise storage_errors.status_of(exc) from None
        entry["changes"] = changes.changes_json(changes.diff(before, after))
    return codec.json_response(_encode({
        "kind": "EventLogDiff", "apiVersion": "sim.cplane.dev/v1alpha1", "since": since, "until": until,
        "events": scan.scanned, "cut": scan.cursor < until, "undetailed": max(0, len(modified) - DIFF_DETAILED),
        "items": items}))


def routes() -> list[web.RouteDef]:
    """Registered by `api.app.make_app` ahead of the generic `/apis/...` handler."""
    out = []
    for base in (f"{PREFIX}/{RESOURCE}", f"{PREFIX}/namespaces/{{namespace}}/{RESOURCE}"):
        out += [web.route("*", base, list_events), web.route("*", f"{base}/density", density),
                web.route("*", f"{base}/history", history), web.route("*", f"{base}/diff", diff)]
    return out
