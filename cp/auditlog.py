"""Reading kube-apiserver audit logs (audit.k8s.io/v1) as another cluster's changes, for `cplane log
import --audit` (docs/replay.md, "Bringing a real cluster in: audit logs").

Input: files of `Event` JSON lines as the log backend writes them (a line may also hold an `EventList`,
as the webhook backend batches them), rotated files and gzip files among them, or one `EventList` JSON
document spread over lines. The files are read lazily and merged by each event's `stageTimestamp`
(`requestReceivedTimestamp` when it has none), keeping one event per file in memory; each file is
taken in its own order (the order the server wrote it). A document that is not one line is read whole.

Each audit event is decoded into typed Structs holding only the fields read here; the request and
response objects stay raw JSON until a write needs them. `Translator.changes` turns the successful
writes (`ResponseComplete` stage, 2xx, not a dry run) into `cp.importing.Change`s:

- create, update, patch: the `responseObject` (RequestResponse level), the object as the server stored
  it (peeked, not decoded: `importing.Encoded`); a subresource write (status, ephemeralcontainers...)
  when its response is the parent object; a response that keeps the object's resourceVersion wrote
  nothing and is dropped by the sequencer (`Change.version`);
- `pods/binding` (the Binding) and the scale of a built-in workload (the Scale): a change the
  sequencer applies to the object it holds (`importing.applied`), as the server applies it;
- at Request level only the request is known: a create or an update is taken as its `requestObject`
  (the object as the client sent it: fields the server sets are missing, but the objectRef's uid and
  resourceVersion are filled in when it has them, and a create's creationTimestamp is the time the
  request was received); a patch's result is unknown and is reported, not guessed;
- delete: the deletion of the objectRef's object, unless the response is the object still there
  (deletionTimestamp set and finalizers pending, or a grace period running), which is then a change;
  deletecollection at RequestResponse level: each item of the returned list likewise.

The user of a change is the impersonated user when the client impersonated one. Everything else is
counted per resource in `Translator.report` under a reason (`REASONS`): reads,
failed or dry-run requests, writes at Metadata level, writes whose ResponseComplete stage never
came, patches at Request level, subresource writes whose response is not the parent object, creates
without a name (generateName at Request level), non-resource requests.

Malformed input raises `AuditError` naming the file and line. Pure (files are read, nothing written).
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import gzip
import heapq
import itertools
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any
from urllib.parse import unquote_plus

import msgspec

from cp import importing
from cp import resources as res

API_VERSION = "audit.k8s.io/v1"
WRITES = frozenset({"create", "update", "patch", "delete", "deletecollection"})

# Why an audit event gave no change (the keys of `Translator.report`'s counts).
READ = "reads"
FAILED = "failed"
DRY_RUN = "dry run"
METADATA = "Metadata level"
NO_COMPLETE = "no ResponseComplete"
PATCH_REQUEST = "patch at Request level"
SUBRESOURCE = "subresource, not the parent object"
NO_OBJECT = "no object in the event"
NON_RESOURCE = "non-resource requests"
REASONS = (READ, FAILED, DRY_RUN, METADATA, NO_COMPLETE, PATCH_REQUEST, SUBRESOURCE, NO_OBJECT, NON_RESOURCE)


class AuditError(ValueError):
    """Malformed input: `where` is `FILE:LINE`."""

    def __init__(self, message: str, *, path: str, line: int) -> None:
        super().__init__(f"{path}:{line}: {message}")
        self.path = path
        self.line = line


class UserInfo(msgspec.Struct, frozen=True):
    username: str = ""


class ObjectRef(msgspec.Struct, frozen=True, rename="camel"):
    resource: str = ""
    namespace: str = ""
    name: str = ""
    uid: str = ""
    api_group: str = ""
    api_version: str = ""
    resource_version: str = ""
    subresource: str = ""


class ResponseStatus(msgspec.Struct, frozen=True):
    code: int = 0


class AuditEvent(msgspec.Struct, frozen=True, kw_only=True, tag="Event", tag_field="kind"):
    """The fields of an audit.k8s.io/v1 Event read here; the objects stay raw (`Raw()` when absent)."""

    api_version: str = msgspec.field(default="", name="apiVersion")
    level: str = ""
    audit_id: str = msgspec.field(default="", name="auditID")
    stage: str = ""
    request_uri: str = msgspec.field(default="", name="requestURI")
    verb: str = ""
    user: UserInfo = UserInfo()
    impersonated_user: UserInfo | None = msgspec.field(default=None, name="impersonatedUser")
    user_agent: str = msgspec.field(default="", name="userAgent")
    object_ref: ObjectRef | None = msgspec.field(default=None, name="objectRef")
    response_status: ResponseStatus | None = msgspec.field(default=None, name="responseStatus")
    request_object: msgspec.Raw = msgspec.field(default=msgspec.Raw(), name="requestObject")
    response_object: msgspec.Raw = msgspec.field(default=msgspec.Raw(), name="responseObject")
    request_received: str = msgspec.field(default="", name="requestReceivedTimestamp")
    stage_timestamp: str = msgspec.field(default="", name="stageTimestamp")


class AuditEventList(msgspec.Struct, frozen=True, kw_only=True, tag="EventList", tag_field="kind"):
    api_version: str = msgspec.field(default="", name="apiVersion")
    items: list[AuditEvent] = []


_decoder = msgspec.json.Decoder(AuditEvent | AuditEventList)
_object_decoder = msgspec.json.Decoder(dict[str, Any] | None)


class Located(msgspec.Struct, frozen=True, array_like=True):
    """An audit event, when it happened (unix seconds) and where it was read."""

    time: float
    path: str
    line: int
    event: AuditEvent


def _seconds(text: str) -> float:
    """Unix seconds of an RFC 3339 time; the server's form (`2026-12-01T10:00:01.123456Z`, UTC,
    microseconds) parses its whole seconds once per second of log."""
    if len(text) == 27 and text[19] == "." and text[26] == "Z":
        return _whole_seconds(text[:19]) + int(text[20:26]) / 1e6
    return datetime.datetime.fromisoformat(text).timestamp()


@functools.lru_cache(maxsize=1024)
def _whole_seconds(text: str) -> float:
    return datetime.datetime.fromisoformat(text + "+00:00").timestamp()


@contextlib.contextmanager
def _opened(path: Path) -> Iterator[IO[bytes]]:
    """The file's bytes, gunzipped if it is gzip (whatever its name)."""
    with path.open("rb") as f:
        if f.peek(2)[:2] == b"\x1f\x8b":
            with gzip.GzipFile(fileobj=f, mode="rb") as unzipped:
                yield unzipped  # type: ignore[misc]
        else:
            yield f


def _items(decoded: AuditEvent | AuditEventList, *, path: str, line: int) -> Iterator[AuditEvent]:
    if decoded.api_version != API_VERSION:
        what = "EventList" if isinstance(decoded, AuditEventList) else "Event"
        raise AuditError(f'an audit {what} of apiVersion "{decoded.api_version}" (expected {API_VERSION})',
                         path=path, line=line)
    if isinstance(decoded, AuditEventList):
        yield from decoded.items
    else:
        yield decoded


def _located(event: AuditEvent, *, path: str, line: int) -> Located:
    stamp = event.stage_timestamp or event.request_received
    if not stamp:
        raise AuditError("an audit Event without stageTimestamp or requestReceivedTimestamp", path=path, line=line)
    try:
        return Located(time=_seconds(stamp), path=path, line=line, event=event)
    except ValueError:
        raise AuditError(f'timestamp "{stamp}" is not an RFC 3339 time', path=path, line=line) from None


def read_file(path: Path) -> Iterator[Located]:
    """The audit events of one file, in its order. Raises AuditError (file:line) on malformed input."""
    name = str(path)
    second, whole = "", 0.0  # the last whole second parsed, and its unix seconds
    with _opened(path) as f:
        first = True
        for number, raw in enumerate(f, 1):
            if raw.isspace():
                continue
            try:
                decoded = _decoder.decode(raw)
            except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                if first and raw.strip() in (b"{", b"["):
                    yield from _document(path, first_line=number)  # one EventList over several lines
                    return
                what = "not an audit.k8s.io/v1 Event" if isinstance(exc, msgspec.ValidationError) else "malformed JSON"
                raise AuditError(f"{what}: {exc}", path=name, line=number) from None
            first = False
            if type(decoded) is AuditEvent and decoded.api_version == API_VERSION and decoded.stage_timestamp:
                stamp = decoded.stage_timestamp  # the common case, inline (the server's form: see _seconds)
                if len(stamp) == 27 and stamp[19] == "." and stamp[26] == "Z":
                    try:
                        if stamp[:19] != second:
                            second, whole = stamp[:19], _whole_seconds(stamp[:19])
                        yield Located(whole + int(stamp[20:26]) / 1e6, name, number, decoded)
                        continue
                    except ValueError:
                        pass  # _located says what is wrong
            for event in _items(decoded, path=name, line=number):
                yield _located(event, path=name, line=number)


def _document(path: Path, *, first_line: int) -> Iterator[Located]:
    name = str(path)
    with _opened(path) as f:
        body = f.read()
    try:
        decoded = _decoder.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise AuditError(f"not an audit.k8s.io/v1 Event or EventList document: {exc}", path=name,
                         line=first_line) from None
    for index, event in enumerate(_items(decoded, path=name, line=first_line)):
        yield _located(event, path=f"{name} (items[{index}])", line=first_line)


def merged(paths: Sequence[Path]) -> Iterator[Located]:
    """The events of every file, merged by time (ties: the files' order, then each file's). Rotated
    files whose times do not overlap (each one's last event before the next one's first) are read one
    after the other, which is the same order without the merge's cost."""
    if len(paths) == 1:
        yield from read_file(paths[0])
        return
    disjoint = _in_sequence(paths)
    if disjoint is not None:
        for path in disjoint:
            yield from read_file(path)
        return
    keyed = [_keyed(index, path) for index, path in enumerate(paths)]
    for *_, loc in heapq.merge(*keyed):  # (time, file, n) always differ: events are never compared
        yield loc


def _in_sequence(paths: Sequence[Path]) -> list[Path] | None:
    """`paths` ordered so that each file's events all come before the next one's (by the first and last
    line's `stageTimestamp`), or None when that cannot be told cheaply (gzip, an EventList document,
    a line that is not an Event) or the files overlap."""
    spans: list[tuple[str, str, int, Path]] = []
    for index, path in enumerate(paths):
        span = _span(path)
        if span is None:
            return None
        spans.append((span[0], span[1], index, path))
    spans.sort()
    for (_first, last, _i, _p), (first, _last, _j, _q) in itertools.pairwise(spans):
        if not last < first:
            return None
    return [path for *_, path in spans]


def _span(path: Path) -> tuple[str, str] | None:
    """The `stageTimestamp` of a plain file's first and last line (server form: they sort as text)."""
    try:
        with path.open("rb") as f:
            if f.peek(2)[:2] == b"\x1f\x8b":
                return None
            first = f.readline()
            size = f.seek(0, 2)
            f.seek(max(0, size - 65536))
            tail = f.read().rstrip(b"\n").rsplit(b"\n", 1)[-1]
        decoded = [_decoder.decode(line) for line in (first, tail)]
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None
    stamps = [d.stage_timestamp for d in decoded if isinstance(d, AuditEvent)]
    if len(stamps) != 2:
        return None
    if not all(len(s) == 27 and s.endswith("Z") for s in stamps):
        return None
    return stamps[0], stamps[1]


def _keyed(index: int, path: Path) -> Iterator[tuple[float, int, int, Located]]:
    for n, loc in enumerate(read_file(path)):
        yield loc.time, index, n, loc


class Report(msgspec.Struct, kw_only=True):
    """What an import took and left, per resource (`pods`, `deployments.apps`, `pods/binding`...)."""

    events: int = 0  # audit events read
    imported: dict[str, int] = {}
    left: dict[str, dict[str, int]] = {}  # resource -> reason -> audit events

    def count(self, label: str, reason: str) -> None:
        per = self.left.setdefault(label, {})
        per[reason] = per.get(reason, 0) + 1

    def lines(self) -> list[str]:
        """A table: one row per resource, imported writes then each reason's count."""
        labels = sorted(set(self.imported) | set(self.left))
        reasons = [r for r in REASONS if any(r in per for per in self.left.values())]
        header = ["RESOURCE", "IMPORTED", *(r.upper() for r in reasons)]
        rows = [header] + [[label, str(self.imported.get(label, 0)),
                            *(str(self.left.get(label, {}).get(r, 0)) for r in reasons)] for label in labels]
        widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
        return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]


def _label(ref: ObjectRef) -> str:
    base = f"{ref.resource}.{ref.api_group}" if ref.api_group else ref.resource
    return f"{base}/{ref.subresource}" if ref.subresource else base


def _kind_of(obj: dict[str, Any] | importing.Encoded) -> Any:
    return obj.peek.kind if isinstance(obj, importing.Encoded) else obj.get("kind")


def _resource_version(obj: dict[str, Any] | importing.Encoded) -> str:
    if isinstance(obj, importing.Encoded):
        return (obj.peek.metadata.resource_version or "") if obj.peek.metadata is not None else ""
    version = (obj.get("metadata") or {}).get("resourceVersion")
    return version if isinstance(version, str) else ""


def _still_there(obj: dict[str, Any] | importing.Encoded) -> bool:
    """A deleted object the server still holds: finalizers pending or a grace period running (a
    namespace: its spec.finalizers too)."""
    if isinstance(obj, importing.Encoded):
        peeked = obj.peek.metadata
        if obj.peek.kind != "Namespace":
            return peeked is not None and bool(peeked.deletion_timestamp) and (
                bool(peeked.finalizers) or (peeked.deletion_grace_period_seconds or 0) > 0)
        obj = importing.decoded(obj)
    assert isinstance(obj, dict)
    meta = obj.get("metadata") or {}
    if not meta.get("deletionTimestamp"):
        return False
    if meta.get("finalizers") or (meta.get("deletionGracePeriodSeconds") or 0) > 0:
        return True
    return obj.get("kind") == "Namespace" and bool((obj.get("spec") or {}).get("finalizers"))


def _query(uri: str, name: str) -> str:
    """The first value of the query parameter `name` of `uri` ("" when absent)."""
    _, _, query = uri.partition("?")
    for pair in query.split("&"):
        key, _, value = pair.partition("=")
        if key == name:
            return unquote_plus(value)
    return ""


@functools.lru_cache(maxsize=1024)
def _field_manager(uri: str) -> str:
    """The fieldManager query parameter of `uri` (a client's writes repeat the same few URIs)."""
    return _query(uri, "fieldManager")


class Translator:
    """Audit events -> changes, counting what is left out (see the module)."""

    def __init__(self) -> None:
        self.report = Report()
        self._kinds: dict[tuple[str, str], str] = {}  # (group, resource) -> kind, learned from the objects
        self._pending: dict[str, str] = {}  # auditID -> resource label of writes not yet complete

    def _kind(self, ref: ObjectRef) -> str:
        known = self._kinds.get((ref.api_group, ref.resource))
        if known is None:
            kind = res.by_group_resource(ref.api_group, ref.resource)
            known = kind.kind if kind is not None else ""
        return known

    def _object(self, raw: msgspec.Raw, loc: Located) -> dict[str, Any] | None:
        if not raw:
            return None
        try:
            obj = _object_decoder.decode(raw)
        except msgspec.ValidationError as exc:
            raise AuditError(f"an audit Event's object is not a JSON object: {exc}", path=loc.path,
                             line=loc.line) from None
        return obj

    def _response(self, raw: msgspec.Raw, loc: Located) -> dict[str, Any] | importing.Encoded | None:
        """The response object, peeked (`importing.Encoded`) when it can be, else decoded."""
        if not raw:
            return None
        return importing.encoded(bytes(raw)) or self._object(raw, loc)

    def changes(self, loc: Located) -> list[importing.Change]:
        ev = loc.event
        self.report.events += 1
        ref = ev.object_ref
        label = _label(ref) if ref is not None else "(non-resource)"
        if ev.stage != "ResponseComplete":
            if ev.verb in WRITES:
                if ev.stage == "RequestReceived":
                    self._pending[ev.audit_id] = label
                elif ev.stage == "Panic":
                    self._pending.pop(ev.audit_id, None)
                    self.report.count(label, FAILED)
            return []
        if self._pending:
            self._pending.pop(ev.audit_id, None)
        if ref is None:
            self.report.count(label, NON_RESOURCE)
            return []
        if ev.verb not in WRITES:
            self.report.count(label, READ)
            return []
        code = ev.response_status.code if ev.response_status is not None else 0
        if not 200 <= code < 300:
            self.report.count(label, FAILED)
            return []
        if "dryRun=" in ev.request_uri and _query(ev.request_uri, "dryRun"):
            self.report.count(label, DRY_RUN)
            return []
        if ev.level not in ("Request", "RequestResponse") and (ev.verb != "delete" or ref.subresource):
            self.report.count(label, METADATA)  # (a deletion's names are in the objectRef: it is taken)
            return []
        out = self._write(loc, ref, label)
        if out:
            self.report.imported[label] = self.report.imported.get(label, 0) + 1
        return out

    def finish(self) -> None:
        """Count the writes whose ResponseComplete stage never came."""
        for label in self._pending.values():
            self.report.count(label, NO_COMPLETE)
        self._pending.clear()

    def _change(self, loc: Located, obj: dict[str, Any] | importing.Encoded, *, deleted: bool = False,
                response: bool = False) -> importing.Change:
        """`response`: `obj` is the server's response (its resourceVersion tells a write that changed
        nothing)."""
        ev = loc.event
        manager = _field_manager(ev.request_uri) if "fieldManager=" in ev.request_uri else ""
        # An impersonating client acts as the impersonated user: the change is that user's.
        user = ev.impersonated_user.username if ev.impersonated_user is not None else ev.user.username
        return importing.Change(object=obj, deleted=deleted, time=loc.time, user=user, user_agent=ev.user_agent,
                                field_manager=manager, source=ev.audit_id,
                                version=_resource_version(obj) if response else "")

    def _learn(self, ref: ObjectRef, obj: dict[str, Any] | importing.Encoded) -> None:
        kind = _kind_of(obj)
        if isinstance(kind, str) and (ref.api_group, ref.resource) not in self._kinds:
            self._kinds[(ref.api_group, ref.resource)] = kind

    def _write(self, loc: Located, ref: ObjectRef, label: str) -> list[importing.Change]:
        ev = loc.event
        verb = ev.verb
        if verb == "deletecollection":
            listed = self._object(ev.response_object, loc) if ev.level == "RequestResponse" else None
            return self._delete(loc, ref, label, listed)
        response = self._response(ev.response_object, loc) if ev.level == "RequestResponse" else None
        if verb == "delete":
            return self._delete(loc, ref, label, response)
        parent = self._kind(ref) if ref.subresource else ""
        kind = _kind_of(response) if response is not None else None
        if response is not None and kind not in (None, "Status") and (not ref.subresource or kind == parent):
            if not ref.subresource:
                self._learn(ref, response)
            return [self._change(loc, response, response=True)]
        if ref.subresource in ("binding", "scale"):
            written = self._subresource_write(loc, ref, response)
            if written is not None:
                return written
        if ref.subresource and (response is not None or verb == "create"):
            self.report.count(label, SUBRESOURCE)
            return []
        if verb == "patch":
            self.report.count(label, PATCH_REQUEST if response is None else NO_OBJECT)
            return []
        request = self._object(ev.request_object, loc)
        if request is None or response is not None:
            self.report.count(label, NO_OBJECT)
            return []
        if ref.subresource and request.get("kind") != parent:
            self.report.count(label, SUBRESOURCE)
            return []
        obj = self._from_request(loc, ref, request)
        if obj is None:
            self.report.count(label, NO_OBJECT)
            return []
        return [self._change(loc, obj)]

    def _subresource_write(self, loc: Located, ref: ObjectRef,
                           response: dict[str, Any] | importing.Encoded | None) -> list[importing.Change] | None:
        """A `pods/binding` create (its Binding: the request, at Request level and above) or a scale
        write of a built-in workload (the Scale: the response, or an update's request at Request
        level), as a change the sequencer applies to the object (`importing.applied`); None when the
        event does not hold what that takes."""
        ev = loc.event
        parent = self._kind(ref)
        version = ""
        if ref.subresource == "binding" and (ref.api_group, ref.resource, ev.verb) == ("", "pods", "create"):
            written = self._object(ev.request_object, loc)
            expected = "Binding"
        elif ref.subresource == "scale" and (ref.api_group, parent) in importing.SCALED \
                and ev.verb in ("update", "patch"):
            written = importing.decoded(response) if response is not None else \
                self._object(ev.request_object, loc) if ev.verb == "update" else None
            if response is not None and written is not None:
                version = _resource_version(written)
            expected = "Scale"
        else:
            return None
        if written is None or written.get("kind") not in (None, expected) or not ref.name or not parent:
            return None
        if expected == "Scale" and not isinstance((written.get("spec") or {}).get("replicas"), int):
            return None
        api_version = f"{ref.api_group}/{ref.api_version}" if ref.api_group else ref.api_version
        meta = {"name": ref.name, "namespace": ref.namespace} if ref.namespace else {"name": ref.name}
        return [msgspec.structs.replace(self._change(loc, {"apiVersion": api_version, "kind": parent, "metadata": meta}),
                                        subresource=ref.subresource, written=written, version=version)]

    def _from_request(self, loc: Located, ref: ObjectRef, request: dict[str, Any]) -> dict[str, Any] | None:
        """A create's or update's request object as the object: what the objectRef knows filled in."""
        obj = dict(request)
        if not obj.get("apiVersion"):
            obj["apiVersion"] = f"{ref.api_group}/{ref.api_version}" if ref.api_group else ref.api_version
        if not obj.get("kind"):
            kind = self._kind(ref)
            if not kind:
                return None
            obj["kind"] = kind
        meta = dict(obj.get("metadata") or {})
        for field, value in (("name", ref.name), ("namespace", ref.namespace), ("uid", ref.uid)):
            if value and not meta.get(field):
                meta[field] = value
        if not meta.get("name"):
            return None  # generateName: the name the server chose is not in a Request-level event
        if loc.event.verb == "create" and not meta.get("creationTimestamp"):
            received = loc.event.request_received or loc.event.stage_timestamp
            meta["creationTimestamp"] = received[:19] + "Z"
        obj["metadata"] = meta
        return obj

    def _delete(self, loc: Located, ref: ObjectRef, label: str,
                response: dict[str, Any] | importing.Encoded | None) -> list[importing.Change]:
        if ref.subresource:
            self.report.count(label, SUBRESOURCE)
            return []
        if loc.event.verb == "deletecollection":
            response = importing.decoded(response) if response is not None else {}
            items, list_kind = response.get("items"), str(response.get("kind") or "")
            if not isinstance(items, list) or not list_kind.endswith("List"):
                self.report.count(label, NO_OBJECT)
                return []
            head = {"apiVersion": response.get("apiVersion"), "kind": list_kind[:-4]}
            objs = [{**head, **item} for item in items if isinstance(item, dict)]
            return [self._change(loc, obj, deleted=not _still_there(obj)) for obj in objs]
        if response is not None and _kind_of(response) not in (None, "Status"):
            return [self._change(loc, response, deleted=not _still_there(response))]
        kind = self._kind(ref)
        if not kind or not ref.name:
            self.report.count(label, NO_OBJECT)
            return []
        api_version = f"{ref.api_group}/{ref.api_version}" if ref.api_group else ref.api_version
        meta = {"name": ref.name, "namespace": ref.namespace} if ref.namespace else {"name": ref.name}
        return [self._change(loc, {"apiVersion": api_version, "kind": kind, "metadata": meta}, deleted=True)]


def events(paths: Sequence[Path], *, sequencer: importing.Sequencer,
           translator: Translator) -> Iterator[importing.Event]:
    """The log's events of the audit files `paths`, numbered by `sequencer` (`translator.finish()` at
    the end). Raises AuditError."""
    changes, feed = translator.changes, sequencer.feed
    for loc in merged(paths):
        for change in changes(loc):
            try:
                yield from feed(change)
            except importing.ImportError_ as exc:
                raise AuditError(str(exc), path=loc.path, line=loc.line) from None
    translator.finish()

