"""Watch streams: newline-delimited `{"type","object"}` JSON over a chunked response.

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
from typing import Any

from aiohttp import web

from api import codec, reads, storage_errors
from api import state as st
from api import store as stores
from cp import errors, options, tables
from storage import log

_decode = codec.decoder.decode
_encode = codec.encoder.encode

BOOKMARK_INTERVAL = 5.0  # seconds between idle bookmarks (upstream: about a minute, "not guaranteed")
INITIAL_END = "k8s.io/initial-events-end"


class _Encoder:
    """Turns events into wire lines for one watch (JSON objects or one-row Tables)."""

    def __init__(self, request: web.Request, target: reads.Target) -> None:
        self.kind = target.kind
        self.table = codec.wants_table(request.headers.get("Accept", ""))
        self.include = request.query.get("includeObject", "Metadata")
        self.clock = request.app[st.STORE].clock
        self.headers_sent = False

    def line(self, type_: str, raw: bytes, obj: dict[str, Any] | None = None) -> bytes:
        if not self.table:
            return _json_line(type_, raw)
        if obj is None:
            obj = _decode(raw)
        table = tables.table([obj], group=self.kind.group, kind=self.kind.kind, now=self.clock.now(),
                             include_object=self.include,
                             resource_version=str((obj.get("metadata") or {}).get("resourceVersion", "")),
                             headers=not self.headers_sent)
        self.headers_sent = True
        return _encode({"type": type_, "object": table}) + b"\n"

    def bookmark(self, revision: int, *, initial_end: bool = False) -> bytes:
        meta: dict[str, Any] = {"resourceVersion": str(revision)}
        if initial_end:
            meta["annotations"] = {INITIAL_END: "true"}
        obj = {"kind": self.kind.kind, "apiVersion": self.kind.api_version, "metadata": meta}
        return _encode({"type": "BOOKMARK", "object": obj}) + b"\n"


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


def _expired_line(requested: int, compacted: int) -> bytes:
    status = storage_errors.too_old(requested=requested, compacted=compacted).status()
    return _encode({"type": "ERROR", "object": status}) + b"\n"


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
    initial = bool(send_initial) if send_initial is not None else not rv
    enc = _Encoder(request, target)
    namespace = None if target.all_namespaces else target.namespace
    hint_ns = lq.field.requires_exact_match("metadata.namespace")
    if namespace is None and hint_ns is not None:
        namespace = hint_ns
    filtering = not (lq.label.empty and lq.field.empty)
    known: dict[tuple[str, str], bool] = {}  # key -> currently matching

    resp = web.StreamResponse(status=200, headers={"Content-Type": codec.JSON,
                                                   "Cache-Control": "no-cache, private"})
    resp.enable_chunked_encoding()
    lines: list[bytes] = []
    if initial:
        if rv:
            await reads.wait_until_fresh(store.log, revision=rv)
        events, start, _ = await reads.collect(store, target, lq)
        for ev in events:
            known[(ev.namespace, ev.name)] = True
            lines.append(enc.line("ADDED", ev.object))
        if send_initial:
            lines.append(enc.bookmark(start, initial_end=True))
    else:
        start = rv or 0
    try:
        sub = await store.log.subscribe(group=kind.group, resource=kind.plural, namespace=namespace,
                                        after=start)
    except log.ExpiredError as exc:
        await resp.prepare(request)
        await resp.write(_expired_line(exc.requested, exc.compacted))
        return resp
    watches = request.app[st.WATCHES]
    task = asyncio.current_task()
    if task is not None:
        watches.add(task)
    gauge = request.app[st.METRICS].watches.labels(kind.group, kind.plural)
    gauge.inc()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    last_bookmark = start
    try:
        await resp.prepare(request)
        if lines:
            await resp.write(b"".join(lines))
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            batch = await sub.next_batch(timeout=min(BOOKMARK_INTERVAL, remaining))
            if batch is None:
                break
            if not batch:
                if bookmarks and sub.revision > last_bookmark:
                    last_bookmark = sub.revision
                    await resp.write(enc.bookmark(sub.revision))
                continue
            out: list[bytes] = []
            for ev in batch:
                if not filtering:
                    out.append(enc.line(ev.type, ev.object))
                    continue
                line = await _filtered(store, ev, lq, known, enc)
                if line is not None:
                    out.append(line)
            if out:
                await resp.write(b"".join(out))
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    finally:
        gauge.dec()
        sub.close()
        if task is not None:
            watches.discard(task)
    return resp


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
