"""The audit log (`cplane serve --audit-log-path FILE --audit-policy-file POLICY`): kube-apiserver's
audit.k8s.io/v1 Events, one JSON line per event, for the stages of every request the policy
(`cp.audit`) records.

The request path calls in (`api.app` and `api.auth.chain`), as kube-apiserver's filters do:
- `Auditor.begin`, as a request arrives (its time is `requestReceivedTimestamp`);
- `RequestAudit.authenticated`, once the user is known (before impersonation): the policy is evaluated
  for the request's attributes and `RequestReceived` is written; `impersonated`, `authorized` (the
  `authorization.k8s.io/decision` and `reason` annotations) follow;
- `RequestAudit.started`, when the response headers go out: `ResponseStarted`, for long-running requests
  only (watch, proxy, exec, attach, log, portforward);
- `RequestAudit.complete`: `ResponseComplete` (or `Panic` for an unexpected exception), with the
  response status, and the request and response objects at the Request and RequestResponse levels.
  A request refused before it was authenticated (401) is one `ResponseStarted` event, as upstream.

Events are queued to a thread (`AuditLog`) that decodes the bodies they carry, encodes the line,
appends it and flushes after each batch, and rotates the file as kube-apiserver's `lumberjack` does
(`--audit-log-maxsize` MiB, 100 by default; `--audit-log-maxbackup` old files kept, all by default;
`--audit-log-maxage` days an old file is kept, by the time in its name; `--audit-log-compress`: old
files gzipped, `NAME-TIME.EXT.gz`, in a thread of their own).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ipaddress
import os
import queue
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any, Protocol

import msgspec
import structlog
from aiohttp import web

from api import codec
from cp import audit, rbac
from cp import clock as clocks

logger = structlog.get_logger("cplane.audit")

MAX_USER_AGENT = 1024
DEFAULT_MAX_SIZE_MB = 100  # lumberjack's default when --audit-log-maxsize is 0
LONG_RUNNING_VERBS = frozenset({"watch", "proxy"})
LONG_RUNNING_SUBRESOURCES = frozenset({"attach", "exec", "proxy", "log", "portforward"})
_WITH_OBJECT_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_GO_ESCAPES = ((b"<", b"\\u003c"), (b">", b"\\u003e"), (b"&", b"\\u0026"),
               (b"\xe2\x80\xa8", b"\\u2028"), (b"\xe2\x80\xa9", b"\\u2029"))
_encoder = msgspec.json.Encoder()
_BACKUP_TIME = "%Y-%m-%dT%H-%M-%S"


# ------------------------------------------------------------------------------------------- the file


class AuditLog:
    """Appends lines to PATH (`-`: standard output) from a thread of its own. `put(render)` queues a
    function that makes the line (called in the thread); `flushed()` waits until every line queued
    before it is written and flushed; `close()` writes what is queued and stops."""

    def __init__(self, path: str, *, max_size_mb: int = 0, max_backups: int = 0, max_age_days: int = 0,
                 compress: bool = False) -> None:
        self.path = path
        self._max_bytes = (max_size_mb or DEFAULT_MAX_SIZE_MB) * 1024 * 1024
        self._max_backups = max_backups
        self._max_age = timedelta(days=max_age_days) if max_age_days > 0 else None
        self._compress = compress
        self._mill: threading.Thread | None = None  # compressing and removing old files
        self._file: IO[bytes]
        if path == "-":
            self._file = sys.stdout.buffer
            self._size = 0
        else:
            self._file = self._open()
            self._size = os.fstat(self._file.fileno()).st_size
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._batch: list[Callable[[], bytes]] = []
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="audit-log", daemon=True)
        self._thread.start()

    def _open(self) -> IO[bytes]:
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        return os.fdopen(fd, "ab")

    def put(self, render: Callable[[], bytes]) -> None:
        """Queue a line; called on the event loop, whose lines of one loop iteration go to the thread
        together (one wake-up of the thread for many lines)."""
        if self._closed:
            return
        if not self._batch:
            try:
                asyncio.get_running_loop().call_soon(self._hand_off)
            except RuntimeError:  # no loop running: hand it over at once
                self._queue.put([render])
                return
        self._batch.append(render)

    def _hand_off(self) -> None:
        batch, self._batch = self._batch, []
        if batch:
            self._queue.put(batch)

    async def flushed(self) -> None:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()

        def resolve() -> None:
            if not done.done():
                done.set_result(None)

        def mark() -> None:
            loop.call_soon_threadsafe(resolve)

        self._hand_off()
        self._queue.put(_Mark(mark))
        await done

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._hand_off()
        self._queue.put(None)
        await asyncio.to_thread(self._thread.join)
        if self.path != "-":
            self._file.close()
        if self._mill is not None:
            await asyncio.to_thread(self._mill.join)

    def _run(self) -> None:
        while True:
            items = [self._queue.get()]
            with contextlib.suppress(queue.Empty):
                while len(items) < 1000:
                    items.append(self._queue.get_nowait())
            stop = False
            marks: list[_Mark] = []
            for item in items:
                if item is None:
                    stop = True
                elif isinstance(item, _Mark):
                    marks.append(item)
                else:
                    for render in item:
                        self._write(render)
            try:
                self._file.flush()
            except OSError as exc:
                logger.error("audit_log_write_failed", path=self.path, error=str(exc))
            for m in marks:
                m.done()
            if stop:
                return

    def _write(self, render: Callable[[], bytes]) -> None:
        try:
            line = render()
        except Exception:
            logger.exception("audit_event_failed")
            return
        try:
            if self.path != "-" and self._size and self._size + len(line) > self._max_bytes:
                self._rotate()
            self._file.write(line)
            self._size += len(line)
        except OSError as exc:
            logger.error("audit_log_write_failed", path=self.path, error=str(exc))

    def _rotate(self) -> None:
        """As lumberjack: the file becomes NAME-<UTC time>.EXT beside it, a new one is started, and the
        oldest backups beyond `max_backups` (0: keep all) are removed."""
        self._file.close()
        path = Path(self.path)
        when = datetime.now(UTC)
        while True:  # a name no backup has (several rotations in one millisecond)
            backup = path.with_name(f"{path.stem}-{when.strftime(_BACKUP_TIME)}.{when.microsecond // 1000:03d}"
                                    f"{path.suffix}")
            if not backup.exists():
                break
            when += timedelta(milliseconds=1)
        os.replace(path, backup)
        self._file = self._open()
        self._size = 0
        if self._max_backups > 0 or self._max_age is not None or self._compress:
            if self._mill is not None:
                self._mill.join()  # (one at a time, as lumberjack's mill)
            self._mill = threading.Thread(target=self._mill_once, name="audit-log-mill", daemon=True)
            self._mill.start()

    def _mill_once(self) -> None:
        """As lumberjack's mill: the old files beyond `max_backups` (newest kept) and those older than
        `max_age` by the time in their names are removed; with `compress`, the others are gzipped
        (written beside, then the plain one removed)."""
        path = Path(self.path)
        backups: list[tuple[datetime, Path]] = []
        for candidate in path.parent.glob(f"{path.stem}-*"):
            name = candidate.name.removesuffix(".gz")
            if candidate == path or not name.endswith(path.suffix):
                continue
            stamp = name[len(path.stem) + 1:len(name) - len(path.suffix)]
            try:
                when = datetime.strptime(stamp, _BACKUP_TIME + ".%f").replace(tzinfo=UTC)
            except ValueError:
                continue  # not one of ours
            backups.append((when, candidate))
        backups.sort(reverse=True)
        keep = backups[:self._max_backups] if self._max_backups > 0 else backups
        if self._max_age is not None:
            cutoff = datetime.now(UTC) - self._max_age
            keep = [(when, p) for when, p in keep if when >= cutoff]
        kept = {p for _, p in keep}
        for _, old in backups:
            if old not in kept:
                with contextlib.suppress(OSError):
                    old.unlink()
        if self._compress:
            for _, plain in keep:
                if plain.suffix != ".gz":
                    self._gzip(plain)

    @staticmethod
    def _gzip(plain: Path) -> None:
        import gzip
        import shutil

        packed = plain.with_name(plain.name + ".gz")
        try:
            with plain.open("rb") as src, gzip.open(packed, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
            os.chmod(packed, 0o600)
            plain.unlink()
        except OSError as exc:
            logger.error("audit_log_compress_failed", path=str(plain), error=str(exc))
            with contextlib.suppress(OSError):
                packed.unlink()


class _Mark:
    def __init__(self, done: Callable[[], None]) -> None:
        self.done = done


# ------------------------------------------------------------------------------------------- the auditor


class Backend(Protocol):
    """Where audit events go: the log file (`AuditLog`), the webhook (`api.auditwebhook`)."""

    def put(self, render: Callable[[], bytes]) -> None: ...
    async def flushed(self) -> None: ...
    async def close(self) -> None: ...


class Auditor:
    """The server's audit policy and its backends (the log file, the webhook: both, as upstream's union
    backend, each event rendered once). `default_attributes`: the attributes of a request when the
    app authenticates nobody (no `api.auth` middleware calls `authenticated`), given by `api.app`."""

    def __init__(self, *, checker: audit.Checker, log: AuditLog | None = None,
                 webhook: Backend | None = None) -> None:
        self.checker = checker
        self.log = log
        self._backends: tuple[Backend, ...] = tuple(b for b in (log, webhook) if b is not None)
        self.clock: clocks.Clock = clocks.RealClock()
        self.default_attributes: Callable[[web.Request], tuple[rbac.Attributes, bool]] | None = None

    def begin(self, request: web.Request, *, audit_id: str) -> RequestAudit:
        a = RequestAudit(self, request, audit_id=audit_id, received=self.clock.now())
        if self.default_attributes is not None:
            attrs, long_running = self.default_attributes(request)
            a.authenticated(attrs, long_running=long_running)
        return a

    def put(self, render: Callable[[], bytes]) -> None:
        if len(self._backends) > 1:
            render = functools.cache(render)  # (rendered once, by whichever backend asks first)
        for backend in self._backends:
            backend.put(render)

    async def flushed(self) -> None:
        """Every event so far written and sent."""
        for backend in self._backends:
            await backend.flushed()

    async def close(self) -> None:
        for backend in self._backends:
            await backend.close()


def source_ips(request: web.Request) -> list[str]:
    """X-Forwarded-For's addresses, X-Real-Ip's unless already there, then the peer unless it is the last."""
    headers = request.headers
    if "X-Forwarded-For" not in headers and "X-Real-Ip" not in headers:
        return [request.remote] if request.remote else []
    found: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = []
    for part in request.headers.get("X-Forwarded-For", "").split(","):
        with contextlib.suppress(ValueError):
            found.append(ipaddress.ip_address(part.strip()))
    real = request.headers.get("X-Real-Ip", "")
    if real:
        with contextlib.suppress(ValueError):
            ip = ipaddress.ip_address(real.strip())
            if ip not in found:
                found.append(ip)
    peer = request.remote or ""
    with contextlib.suppress(ValueError):
        ip = ipaddress.ip_address(peer.split("%", 1)[0])
        if not found or found[-1] != ip:
            found.append(ip)
    return [str(ip) for ip in found]


def _user_agent(request: web.Request) -> str:
    ua = request.headers.get("User-Agent", "")
    return ua[:MAX_USER_AGENT] + "...TRUNCATED" if len(ua) > MAX_USER_AGENT else ua


class RequestAudit:
    """One request's audit state (see the module's docstring for who calls what)."""

    __slots__ = ("_auditor", "_config", "_event", "_received", "_refused", "_request", "_started", "admission_annotations",
                 "audit_id", "long_running")
    _started: int  # the code of the ResponseStarted event written, 0 before

    def __init__(self, auditor: Auditor, request: web.Request, *, audit_id: str, received: float) -> None:
        self._auditor = auditor
        self._request = request
        self.audit_id = audit_id
        self._received = received
        self._config: audit.RequestConfig | None = None
        self._event: audit.Event | None = None
        self._started = 0
        self._refused: rbac.Attributes | None = None
        self.long_running = False
        # what admission adds (a ValidatingAdmissionPolicy's auditAnnotations and Audit failures):
        # the write's `api.store.WriteContext.audit_annotations` (api.handlers)
        self.admission_annotations: dict[str, str] = {}

    def _base(self, attrs: rbac.Attributes | None, config: audit.RequestConfig) -> audit.Event:
        request = self._request
        ref = None
        if attrs is not None and attrs.resource_request:
            ref = audit.ObjectReference(resource=attrs.resource, namespace=attrs.namespace, name=attrs.name,
                                        apiGroup=attrs.api_group, apiVersion=attrs.api_version,
                                        subresource=attrs.subresource)
        return audit.Event(
            kind="Event", apiVersion=audit.API_VERSION, level=config.level, auditID=self.audit_id,
            stage=audit.REQUEST_RECEIVED, requestURI=request.raw_path,
            verb=attrs.verb if attrs is not None else request.method.lower(),
            user=audit.UserInfo.of(attrs.user) if attrs is not None else audit.UserInfo(),
            sourceIPs=source_ips(request), userAgent=_user_agent(request), objectRef=ref,
            requestReceivedTimestamp="", stageTimestamp="")

    def authenticated(self, attrs: rbac.Attributes, *, long_running: bool) -> None:
        """The authenticated user is known: decide the level, write RequestReceived."""
        config = self._auditor.checker.evaluate(attrs)
        self._config = config
        self.long_running = long_running
        if config.level == audit.NONE:
            return
        self._event = event = self._base(attrs, config)
        self._emit(msgspec.structs.replace(event), audit.REQUEST_RECEIVED)

    def unauthenticated(self, attrs: rbac.Attributes) -> None:
        """The request is refused for want of credentials (401): `attrs` without a user, for its one event."""
        self._refused = attrs

    def impersonated(self, user: rbac.UserInfo) -> None:
        if self._event is not None:
            self._event.impersonatedUser = audit.UserInfo.of(user)

    def authorized(self, decision: rbac.Decision) -> None:
        if self._event is not None:
            self._event.annotations = {**self._event.annotations,
                                       audit.DECISION_ANNOTATION: "allow" if decision.allowed else "forbid",
                                       audit.REASON_ANNOTATION: decision.reason}

    def started(self, code: int) -> None:
        """The response's headers are going out: ResponseStarted for a long-running request."""
        event = self._event
        if event is None or not self.long_running or self._started:
            return
        self._started = code
        self._emit(msgspec.structs.replace(event, responseStatus=audit.response_status(code)),
                   audit.RESPONSE_STARTED, stamp=self._auditor.clock.now())

    def complete(self, *, code: int, response: web.StreamResponse | None,
                 failure: dict[str, Any] | None = None, panic: BaseException | None = None,
                 cancelled: bool = False) -> None:
        now = self._auditor.clock.now()
        if self._config is None:  # refused before authentication: one ResponseStarted event
            if code != 401 or cancelled:
                return
            attrs = self._refused or rbac.Attributes(user=rbac.UserInfo(name=""), verb=self._request.method.lower(),
                                                     resource_request=False, path=self._request.path)
            config = self._auditor.checker.evaluate(attrs)
            if config.level == audit.NONE:
                return
            event = self._base(attrs, config)
            self._emit(event, audit.RESPONSE_STARTED, stamp=now, status=failure, code=code,
                       response=response, config=config)
            return
        if self._event is None:
            return
        event = self._event
        if cancelled:  # the client went away (or the server stops): as the response started, if it did
            if not self._started:
                return
            code = self._started
        if self.long_running and not self._started and panic is None:
            self.started(code)
        if self.admission_annotations:  # an annotation set first keeps its value, as upstream
            event.annotations = {**self.admission_annotations, **event.annotations}
        if panic is not None:
            status = {"status": "Failure", "reason": "InternalError", "message": f"APIServer panic'd: {panic}"}
            self._emit(msgspec.structs.replace(event), audit.PANIC, stamp=now, status=status, code=500)
            return
        self._emit(msgspec.structs.replace(event), audit.RESPONSE_COMPLETE, stamp=now, status=failure,
                   code=code, response=response, config=self._config, with_request=True)

    def _emit(self, event: audit.Event, stage: str, *, stamp: float | None = None,
              status: dict[str, Any] | None = None, code: int = 0, response: web.StreamResponse | None = None,
              config: audit.RequestConfig | None = None, with_request: bool = False) -> None:
        cfg = config or self._config
        assert cfg is not None
        if stage in cfg.omit_stages:
            return
        event.stage = stage
        received = self._received
        staged = received if stamp is None else stamp
        if event.objectRef is not None:
            event.objectRef = msgspec.structs.replace(event.objectRef)
        request_body: tuple[bytes, str] | None = None
        if with_request and self._request.method in _WITH_OBJECT_METHODS:
            body = self._request.get(codec.BODY)
            request_body = (body or b"", self._request.headers.get("Content-Type", ""))
        response_body: tuple[bytes, str] | None = None
        if code and isinstance(response, web.Response) and isinstance(response.body, bytes) and not status:
            response_body = (response.body, response.content_type)
        query = dict(self._request.query) if request_body is not None else {}

        def render() -> bytes:
            if len(event.annotations) > 1:  # a Go map: its keys sorted
                event.annotations = dict(sorted(event.annotations.items()))
            event.requestReceivedTimestamp = _micro_time(received)
            event.stageTimestamp = _micro_time(staged)
            _finish(event, cfg, code=code, status=status, request_body=request_body,
                    response_body=response_body, query=query)
            line = _encoder.encode(event)
            for raw, escaped in _GO_ESCAPES:
                if raw in line:
                    line = line.replace(raw, escaped)
            return line + b"\n"

        self._auditor.put(render)


# ------------------------------------------------------------------------------------------- in the thread


_SECOND: list[tuple[int, str]] = [(0, "")]  # the last whole second formatted (one tuple: swapped at once)


def _micro_time(ts: float) -> str:
    """`cp.clock.rfc3339_micro`, its whole seconds formatted once a second (events come thousands a second)."""
    whole = int(ts)
    micro = round((ts - whole) * 1e6)
    if micro >= 1_000_000:
        return clocks.rfc3339_micro(ts)
    cached = _SECOND[0]
    if cached[0] != whole or not cached[1]:
        cached = (whole, datetime.fromtimestamp(whole, UTC).strftime("%Y-%m-%dT%H:%M:%S"))
        _SECOND[0] = cached
    return f"{cached[1]}.{micro:06d}Z"


def _decode(body: bytes, content_type: str) -> Any:
    """A request or response body as JSON values; None when it is none of JSON, YAML or protobuf."""
    media = content_type.split(";", 1)[0].strip().lower()
    try:
        if media == codec.PROTOBUF:
            from cp import protobuf

            return protobuf.decode(body)
        if media.endswith("yaml"):
            from cp import bodies

            return bodies.decode_yaml(body, error_prefix="")
        return codec.decoder.decode(body)
    except Exception:
        return None


def _is_status(body: bytes, content_type: str) -> bool:
    if content_type == codec.PROTOBUF:
        return b"\x12\x06Status" in body[:24]
    return body.startswith(b'{"kind":"Status"')


_DELETE_OPTIONS = ("gracePeriodSeconds", "propagationPolicy", "orphanDependents", "dryRun")


def _finish(event: audit.Event, config: audit.RequestConfig, *, code: int, status: dict[str, Any] | None,
            request_body: tuple[bytes, str] | None, response_body: tuple[bytes, str] | None,
            query: dict[str, str]) -> None:
    """Complete an event in the writer thread: response status, objectRef from the request object,
    request and response objects at their levels."""
    if code:
        if status is None and response_body is not None and (code >= 400 or _is_status(*response_body)):
            decoded = _decode(*response_body)
            status = decoded if isinstance(decoded, dict) and decoded.get("kind") == "Status" else None
        event.responseStatus = audit.response_status(code, status)
    if request_body is not None and event.objectRef is not None:
        raw, content_type = request_body
        obj = _decode(raw, content_type) if raw else None
        if event.verb in ("delete", "deletecollection"):
            options = obj if isinstance(obj, dict) else {}
            for key in _DELETE_OPTIONS:
                if key in query and key not in options:
                    options[key] = query[key]
            obj = {"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1",
                   **{k: v for k, v in options.items() if k not in ("kind", "apiVersion")}}
        elif event.verb in ("create", "update") and isinstance(obj, dict):
            meta = obj.get("metadata")
            if isinstance(meta, dict):
                ref = event.objectRef
                ref.namespace = ref.namespace or str(meta.get("namespace") or "")
                ref.name = ref.name or str(meta.get("name") or "")
                ref.uid = ref.uid or str(meta.get("uid") or "")
                ref.resourceVersion = ref.resourceVersion or str(meta.get("resourceVersion") or "")
        # as upstream, the object is logged by the handler: not for a request refused before it
        if obj is not None and config.at_least(audit.REQUEST) and code not in (401, 429) \
                and event.annotations.get(audit.DECISION_ANNOTATION) != "forbid":
            event.requestObject = audit.without_managed_fields(obj) if config.omit_managed_fields else obj
    if response_body is not None and event.objectRef is not None and config.at_least(audit.REQUEST_RESPONSE):
        obj = _decode(*response_body)
        if obj is not None:
            event.responseObject = audit.without_managed_fields(obj) if config.omit_managed_fields else obj


def load(*, policy_file: str, log_path: str | None, max_size_mb: int = 0, max_backups: int = 0,
         max_age_days: int = 0, compress: bool = False, webhook: Backend | None = None) -> Auditor:
    """An Auditor from kube-apiserver's flags (the log at `log_path`, and/or `webhook`);
    `audit.PolicyError` or OSError, with the file named."""
    try:
        data = Path(policy_file).read_bytes()
    except OSError as exc:
        raise audit.PolicyError(f'failed to read file path "{policy_file}": {exc.strerror or exc}') from None
    try:
        policy = audit.load_policy(data)
    except audit.PolicyError as exc:
        raise audit.PolicyError(f"{exc}: from file {policy_file}") from None
    log = None if log_path is None else AuditLog(log_path, max_size_mb=max_size_mb, max_backups=max_backups,
                                                 max_age_days=max_age_days, compress=compress)
    return Auditor(checker=audit.Checker(policy), log=log, webhook=webhook)

