"""Watch streams: newline-delimited `{"type","object"}` JSON over a chunked response, or protobuf
`WatchEvent` frames (`application/vnd.kubernetes.protobuf;stream=watch`) when the client asks for them.

Semantics as kube-apiserver (`../shared/reference/kubectl-compat.md` §5):
- resourceVersion unset or "0": synthetic ADDED for the current objects, then changes;
- resourceVersion N: exactly the events after N; compacted → in-stream ERROR 410 Expired;
- `sendInitialEvents=true` (+ `resourceVersionMatch=NotOlderThan`, `allowWatchBookmarks=true`):
  initial ADDED events then a BOOKMARK annotated `k8s.io/initial-events-end`;
- selectors apply to events: an object that stops matching is sent as DELETED, one that starts
  matching as ADDED;
- Table watches (`kubectl get -w`): each object is a one-row Table, column headers on the first only.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable
from typing import Any

import structlog
from aiohttp import web

from api import codec, connections, limits, reads, storage_errors, versions
from api import state as st
from api import store as stores
from cp import conversions, errors, options, tables
from storage import log

_decode = codec.decoder.decode
_encode = codec.encoder.encode

BOOKMARK_INTERVAL = 5.0  # seconds between idle bookmarks (upstream: about a minute, "not guaranteed")
INITIAL_END = "k8s.io/initial-events-end"
MAX_TIMEOUT = 10 * 365 * 86400  # a longer timeoutSeconds is this (no deadline beyond the loop clock's range)

_logger = structlog.get_logger("cplane.api")


class _Encoder:
    """Turns events into what one watch sends: JSON lines (objects, or one-row Tables), or protobuf
    frames (`cp.protobuf.watch_frame`) when the client's Accept asks for
    `application/vnd.kubernetes.protobuf` (client-go's typed informers)."""

    def __init__(self, request: web.Request, target: reads.Target) -> None:
        self.kind = target.kind
        self.served = target.served  # objects are converted to this version (`api.versions`)
        # converted before they get here, through the definition's conversion webhook
        self.converted = versions.uses_webhook(target)
        negotiated = request[st.NEGOTIATED]
        self.negotiated = negotiated
        self.table = negotiated.convert == codec.TABLE
        # Metadata-only watches (client-go's metadata informers). As a list it has no meaning per event:
        # upstream then sends the objects as they are.
        self.partial = negotiated.convert == "PartialObjectMetadata"
        self.protobuf = negotiated.media_type == codec.PROTOBUF
        self.include = request.query.get("includeObject", "Metadata")
        self.clock = request.app[st.STORE].clock
        self.headers_sent = False
        self.printer = tables.printer_for(target.served or target.kind) if self.table else None

    @property
    def content_type(self) -> str:
        return codec.PROTOBUF + ";stream=watch" if self.protobuf else codec.JSON

    def line(self, type_: str, raw: bytes, obj: dict[str, Any] | None = None) -> bytes:
        if self.served is not None and not self.table and not self.converted:
            raw, obj = conversions.served_json(self.served, raw), None
        if self.partial:
            return self._event(type_, codec.metadata_only(obj if obj is not None else _decode(raw), self.negotiated))
        if self.protobuf:
            return _protobuf_line(type_, raw, obj)
        if not self.table:
            return _json_line(type_, raw)
        if obj is None:
            obj = _decode(raw)
        table = tables.table([obj], group=self.kind.group, kind=self.kind.kind, now=self.clock.now(),
                             include_object=self.include,
                             resource_version=str((obj.get("metadata") or {}).get("resourceVersion", "")),
                             headers=not self.headers_sent, printer=self.printer)
        self.headers_sent = True
        return _encode({"type": type_, "object": table}) + b"\n"

    def bookmark(self, revision: int, *, initial_end: bool = False) -> bytes:
        meta: dict[str, Any] = {"resourceVersion": str(revision)}
        if initial_end:
            meta["annotations"] = {INITIAL_END: "true"}
        kind = self.served or self.kind
        obj = {"kind": kind.kind, "apiVersion": kind.api_version, "metadata": meta}
        if self.partial:
            obj = codec.metadata_only(obj, self.negotiated)
        return self._event("BOOKMARK", obj)

    def _event(self, type_: str, obj: dict[str, Any]) -> bytes:
        if self.protobuf:
            return _frame(type_, obj)
        return _encode({"type": type_, "object": obj}) + b"\n"

    def expired(self, requested: int, compacted: int) -> bytes:
        status = storage_errors.too_old(requested=requested, compacted=compacted).status()
        if self.protobuf:
            return _frame("ERROR", status)
        return codec.go_json({"type": "ERROR", "object": status}) + b"\n"


_last_frame: tuple[str, bytes, bytes] = ("", b"", b"")


def _protobuf_line(type_: str, raw: bytes, obj: dict[str, Any] | None) -> bytes:
    """The frame of a stored event; reused by every protobuf watcher of the event, as `_json_line`."""
    global _last_frame
    last_type, last_raw, frame = _last_frame
    if raw is last_raw and type_ == last_type:
        return frame
    frame = _frame(type_, obj if obj is not None else _decode(raw))
    _last_frame = (type_, raw, frame)
    return frame


def _frame(type_: str, obj: dict[str, Any]) -> bytes:
    """One protobuf watch frame: the object's whole body (prefix and envelope) inside a WatchEvent."""
    from cp import protobuf

    body = protobuf.encode(obj, api_version=str(obj.get("apiVersion", "")), kind=str(obj.get("kind", "")))
    return protobuf.watch_frame(type_, body)


_last_line: tuple[str, bytes, bytes] = ("", b"", b"")


def _json_line(type_: str, raw: bytes) -> bytes:
    """`{"type":…,"object":…}` plus newline; every watcher of an event sends the same line, so the
    last one is reused (the memo holds `raw`, so its identity cannot be taken by another object)."""
    global _last_line
    last_type, last_raw, line = _last_line
    if raw is last_raw and type_ == last_type:
        return line
    line = b'{"type":"' + type_.encode() + b'","object":' + raw + b"}\n"
    _last_line = (type_, raw, line)
    return line


async def watch(request: web.Request, target: reads.Target) -> web.StreamResponse:
    store = request.app[st.STORE]
    q = request.query
    kind = target.kind
    lq = reads.list_query_for_watch(request, target)
    send_initial = codec.parse_bool("sendInitialEvents", q.get("sendInitialEvents"))
    bookmarks = bool(codec.parse_bool("allowWatchBookmarks", q.get("allowWatchBookmarks")))
    match = q.get("resourceVersionMatch", "")
    if send_initial is not None:
        causes = []
        if match != "NotOlderThan":
            causes.append(errors.Cause("Forbidden", "resourceVersionMatch",
                                       "sendInitialEvents requires setting resourceVersionMatch to "
                                       "NotOlderThan"))
        if send_initial and not bookmarks:
            causes.append(errors.Cause("Forbidden", "allowWatchBookmarks",
                                       "allowWatchBookmarks must be set to true when sendInitialEvents "
                                       "is specified"))
        if causes:
            raise errors.Invalid(kind="ListOptions", group="meta.k8s.io", name="", causes=causes)
    elif match:
        raise errors.Invalid(kind="ListOptions", group="meta.k8s.io", name="", causes=[
            errors.Cause("Forbidden", "resourceVersionMatch",
                         "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided")])
    rv = options.resource_version_param(q.get("resourceVersion"))
    timeout = options.int64_param(q.get("timeoutSeconds"))
    if timeout is None or timeout <= 0:
        timeout = int(1800 * (1 + random.random()))  # upstream: min-request-timeout x [1, 2)
    timeout = min(timeout, MAX_TIMEOUT)
    initial = bool(send_initial) if send_initial is not None else not rv
    enc = _Encoder(request, target)
    namespace = None if target.all_namespaces else target.namespace
    hint_ns = lq.field.requires_exact_match("metadata.namespace")
    if namespace is None and hint_ns is not None:
        namespace = hint_ns
    filtering = not (lq.label.empty and lq.field.empty)
    known: dict[tuple[str, str], bool] = {}  # key -> currently matching

    resp = web.StreamResponse(status=200, headers={"Content-Type": enc.content_type,
                                                   "Cache-Control": "no-cache, private"})
    resp.enable_chunked_encoding()
    lines: list[bytes] = []
    if initial:
        if rv:
            await reads.wait_until_fresh(store.log, revision=rv)
        events, start, _ = await reads.collect(store, target, lq)
        if enc.converted and target.served is not None:
            events = await versions.served_events(request.app[st.WEBHOOK_CLIENT], target.served, events)
        for ev in events:
            known[(ev.namespace, ev.name)] = True
            lines.append(enc.line("ADDED", ev.object))
        if send_initial:
            lines.append(enc.bookmark(start, initial_end=True))
    else:
        start = rv or 0
    # Everything that can refuse the request is above; from the subscription on, every exit path
    # (a deadline, a stalled client, a disconnect, a cancellation, an error) goes through `finally`.
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    sender = Sender(request, resp, deadline=deadline)
    try:
        sub = await store.log.subscribe(group=kind.group, resource=kind.plural, namespace=namespace,
                                        after=start)
    except log.ExpiredError as exc:
        await resp.prepare(request)
        await sender.send(enc.expired(exc.requested, exc.compacted))
        return resp
    connections.cancel_on_disconnect(request)
    watches = request.app[st.WATCHES]
    task = asyncio.current_task()
    if task is not None:
        watches.add(task)
    gauge = request.app[st.METRICS].watches.labels(kind.group, kind.plural)
    gauge.inc()
    last_bookmark = start
    try:
        await resp.prepare(request)
        if lines and not await sender.send(b"".join(lines)):
            return resp
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0:
                await sender.finish()  # the deadline: end the stream while still counted as a watch
                break
            batch = await sub.next_batch(timeout=min(BOOKMARK_INTERVAL, remaining))
            if batch is None:
                await sender.finish()
                break
            if not batch:
                if bookmarks and sub.revision > last_bookmark:
                    last_bookmark = sub.revision
                    if not await sender.send(enc.bookmark(sub.revision)):
                        break
                continue
            out: list[bytes] = []
            if enc.converted and target.served is not None:
                batch = await versions.served_events(request.app[st.WEBHOOK_CLIENT], target.served, batch)
            for ev in batch:
                if not filtering:
                    out.append(enc.line(ev.type, ev.object))
                    continue
                line = await _filtered(store, ev, lq, known, enc)
                if line is not None:
                    out.append(line)
            if out and not await sender.send(b"".join(out)):
                break
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    finally:
        gauge.dec()
        sub.close()
        if task is not None:
            watches.discard(task)
    return resp


class Sender:
    """Writes of one watch, each bounded: a write that waits (the client's send buffer is full) is
    cancelled once it has waited `Limits.watch_write_timeout`, or at the watch's deadline, whichever
    comes first; the connection is then aborted, since nothing more can be sent on it. Upstream sets
    no write deadline on HTTP/1.1 watches, so a client that stops reading holds its watch (and its
    place under the per-user watch limit) forever; here it is released.

    Large writes go out in slices of `SLICE` bytes: a transport accepts any one write whole (over TLS,
    asyncio pauses the writer only for what comes after it), so slicing is what makes a stalled client
    hold at most about one slice of the server's memory, and be noticed."""

    SLICE = 256 * 1024

    def __init__(self, request: web.Request, resp: web.StreamResponse, *, deadline: float) -> None:
        self.request = request
        self.resp = resp
        self.deadline = deadline
        self.writes: limits.Deadlines = request.app[st.WATCH_WRITES]
        self.loop = asyncio.get_running_loop()
        self.task = asyncio.current_task()

    async def send(self, data: bytes) -> bool:
        """Write `data`; False when the watch must end (a write stalled past its bound)."""
        if len(data) <= self.SLICE:
            return await self._bounded(self.resp.write(data))
        view = memoryview(data)
        for start in range(0, len(data), self.SLICE):
            if not await self._bounded(self.resp.write(view[start:start + self.SLICE])):
                return False
        return True

    async def finish(self) -> None:
        """End the stream (the last chunk), under the same bound: a client that stopped reading gets
        its connection aborted rather than a server task waiting on it forever."""
        if self.request.transport is not None and not self.request.transport.is_closing():
            await self._bounded(self.resp.write_eof(), at=self.loop.time() + self.writes.timeout)

    async def _bounded(self, write: Awaitable[None], *, at: float | None = None) -> bool:
        task = self.task
        assert task is not None
        self.writes.enter(task, at=at if at is not None else
                          min(self.deadline, self.loop.time() + self.writes.timeout))
        try:
            await write
        except asyncio.CancelledError:
            if not self.writes.leave(task):
                raise
            _logger.info("watch_write_stalled", path=self.request.path,
                         timeout_s=self.writes.timeout, user=self.request.get(st.USER, ""))
            transport = self.request.transport
            if transport is not None:
                transport.abort()
            return False
        self.writes.leave(task)
        return True


async def _filtered(store: stores.Store, ev: log.Event, lq: reads.ListQuery, known: dict[tuple[str, str], bool],
                    enc: _Encoder) -> bytes | None:
    key = (ev.namespace, ev.name)
    obj = _decode(ev.object)
    meta = obj.get("metadata") or {}
    now = lq.label.matches(meta.get("labels")) and lq.field.matches(obj)
    was = known.get(key)
    if was is None:
        was = False
        if ev.type != "ADDED" and ev.prev_revision:
            try:
                prev = await store.log.get(group=ev.group, resource=ev.resource, namespace=ev.namespace,
                                           name=ev.name, revision=ev.prev_revision)
            except (log.ExpiredError, log.FutureRevisionError):
                prev = None
            if prev is not None:
                pobj = _decode(prev.object)
                pmeta = pobj.get("metadata") or {}
                was = lq.label.matches(pmeta.get("labels")) and lq.field.matches(pobj)
    if ev.type == "DELETED":
        known.pop(key, None)
        return enc.line("DELETED", ev.object, obj) if was else None
    known[key] = now
    if now and was:
        return enc.line("MODIFIED", ev.object, obj)
    if now:
        return enc.line("ADDED", ev.object, obj)
    if was:
        return enc.line("DELETED", ev.object, obj)
    return None
