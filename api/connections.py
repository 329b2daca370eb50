"""Connections: what a client can hold before it has sent a request, and answers to requests that
are not HTTP enough to reach the application.

aiohttp's connection handler (`web_protocol.RequestHandler`) with kube-apiserver's connection-level
bounds added (`Limits`):

- a request's headers must be complete `header_timeout` seconds after its first byte arrives (and
  after the connection is accepted): kube-apiserver's `ReadHeaderTimeout` of 32 s. Idle keep-alive
  connections stay bounded by aiohttp's keep-alive timeout;
- a TLS handshake must complete within `handshake_timeout`;
- at most `max_connections` connections at once (derived from the file-descriptor limit when 0), so
  that descriptors never run out: a connection over the cap is answered `503` with a `Status` and
  `Retry-After` and closed; refusals are logged once per `REFUSAL_LOG_PERIOD`, with their count;
- requests the HTTP parser rejects (bad request line or headers, a URL or header over the limits) get
  a `Status` body, never aiohttp's plain text echoing the raw bytes: 414 for a URL over
  `MAX_URL_BYTES`, 431 for a header line over `MAX_FIELD_BYTES`, 400 otherwise. Their log lines are
  rate-limited as the refusals are.
"""

from __future__ import annotations

import asyncio
import resource
import ssl
import weakref
from typing import Any

import structlog
from aiohttp import http_exceptions, web, web_protocol, web_request

from api import codec
from api.limits import Limits
from cp import errors

logger = structlog.get_logger("cplane.api")

# A long-running request (a watch) whose handler is cancelled when its client disconnects. Other
# requests are bounded by the request timeout and are not interrupted half-way.
_CANCEL_ON_DISCONNECT = web.RequestKey("cancel_on_disconnect", asyncio.Task)

MAX_URL_BYTES = 8192  # the request line (method, URL, version); longer: 414
MAX_FIELD_BYTES = 65536  # one header (name and value); longer: 431. Bearer tokens can be large
REFUSAL_LOG_PERIOD = 10.0  # seconds between log lines about refused connections or unparsable requests
RESERVED_DESCRIPTORS = 256  # left for the database, files and outgoing connections


def default_max_connections() -> int:
    """The connection cap that keeps `RESERVED_DESCRIPTORS` free under this process's soft limit."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 100_000
    return max(32, soft - RESERVED_DESCRIPTORS)


def raise_descriptor_limit() -> int:
    """Raise the soft file-descriptor limit to the hard one, as Go programs (kube-apiserver) do at
    start; returns the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError):
            return soft
        return hard
    return soft


def cancel_on_disconnect(request: web.Request) -> None:
    """Cancel the task serving `request` (the current one) if its client disconnects: a watch that
    has nothing to send would otherwise not notice until its deadline (Go cancels the request's
    context; aiohttp does not, by default)."""
    task = asyncio.current_task()
    if task is not None:
        request[_CANCEL_ON_DISCONNECT] = task


class _Throttled:
    """A log line at most once per period, carrying how many times it happened since the last."""

    def __init__(self, event: str) -> None:
        self.event = event
        self.count = 0
        self.last = -REFUSAL_LOG_PERIOD

    def note(self, loop: asyncio.AbstractEventLoop, **fields: Any) -> None:
        self.count += 1
        now = loop.time()
        if now - self.last >= REFUSAL_LOG_PERIOD:
            logger.warning(self.event, count=self.count, period_s=REFUSAL_LOG_PERIOD, **fields)
            self.count = 0
            self.last = now


class ConnectionGuard:
    """The connection-level bounds of one server (see the module docstring)."""

    def __init__(self, *, limits: Limits) -> None:
        self.limits = limits
        self.max_connections = limits.max_connections or default_max_connections()
        # Handlers are created when a connection is accepted (before a TLS handshake); one that never
        # gets `connection_made` (a failed handshake) leaves the set when it is collected.
        self.live: weakref.WeakSet[GuardedRequestHandler] = weakref.WeakSet()
        self.refusals = _Throttled("connections_refused")
        self.bad_requests = _Throttled("http_requests_unparsable")

    @property
    def open(self) -> int:
        return len(self.live)


_REFUSED = errors.StatusError("the server has too many open connections, please try again later",
                              details={"retryAfterSeconds": 1})
_REFUSED.code, _REFUSED.reason = 503, "ServiceUnavailable"
_REFUSED_BODY = codec.status_body(_REFUSED.status())
REFUSED_RESPONSE = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
                    b"Connection: close\r\nContent-Length: " + str(len(_REFUSED_BODY)).encode() + b"\r\n\r\n"
                    + _REFUSED_BODY)


class _Refusal(asyncio.Protocol):
    """A connection over the cap: one 503 Status, then closed."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.WriteTransport)
        transport.write(REFUSED_RESPONSE)
        transport.close()


def _parse_error_status(exc: BaseException | None, status: int) -> errors.StatusError:
    """The Status for a request the HTTP parser rejected; no byte of the request is echoed."""
    if isinstance(exc, http_exceptions.LineTooLong):
        if exc.args[1] == MAX_URL_BYTES:
            err = errors.StatusError(f"the request URI is too long (more than {MAX_URL_BYTES} bytes)")
            err.code, err.reason = 414, "RequestURITooLong"
        else:
            err = errors.StatusError(f"a request header is too large (more than {MAX_FIELD_BYTES} bytes)")
            err.code, err.reason = 431, "RequestHeaderFieldsTooLarge"
        return err
    if status == 500 or exc is None:
        return errors.InternalError("an error on the server has prevented the request from succeeding")
    what = {
        http_exceptions.BadHttpMethod: "bad HTTP method",
        http_exceptions.BadStatusLine: "bad request line",
        http_exceptions.InvalidHeader: "invalid header",
        http_exceptions.InvalidURLError: "invalid URL",
        http_exceptions.TransferEncodingError: "invalid transfer encoding",
        http_exceptions.ContentLengthError: "invalid content length",
        http_exceptions.ContentEncodingError: "invalid content encoding",
    }
    text = next((v for k, v in what.items() if isinstance(exc, k)), "malformed request")
    if isinstance(exc, http_exceptions.BadHttpMethod) and "HTTPS traffic" in str(exc):
        text = "HTTPS traffic on an HTTP port"
    err = errors.BadRequest(f"the request could not be parsed: {text}")
    err.code = status if 400 <= status < 500 else 400
    return err


class GuardedRequestHandler(web_protocol.RequestHandler):
    """aiohttp's connection handler with a header deadline and Status answers to parse errors."""

    def __init__(self, manager: web.Server, *, guard: ConnectionGuard, **kwargs: Any) -> None:
        super().__init__(manager, **kwargs)
        self._guard = guard
        self._header_deadline: asyncio.TimerHandle | None = None
        self._requests_seen = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._arm()

    def _arm(self) -> None:
        self._header_deadline = self._loop.call_later(self._guard.limits.header_timeout, self._headers_late)

    def _disarm(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._request_count != self._requests_seen:  # a request's headers are complete
            self._requests_seen = self._request_count
            self._disarm()
        elif self._header_deadline is None and not self._request_in_progress and not self._messages \
                and self.transport is not None:
            self._arm()  # the first bytes of the next request on a kept-alive connection

    def _headers_late(self) -> None:
        self._header_deadline = None
        if self._request_count == self._requests_seen and not self._request_in_progress:
            logger.debug("request_headers_timeout", timeout_s=self._guard.limits.header_timeout)
            self.force_close()

    def connection_lost(self, exc: BaseException | None) -> None:
        self._disarm()
        self._guard.live.discard(self)
        request = self._current_request
        task = request.get(_CANCEL_ON_DISCONNECT) if isinstance(request, web.Request) else None
        lingering = self._task_handler if not self._request_in_progress else None
        super().connection_lost(exc)
        if task is not None and not task.done():
            task.cancel()
        if lingering is not None and not lingering.done():
            lingering.cancel()  # reading the rest of an unread body for a client that has gone

    def handle_error(self, request: web_request.BaseRequest, status: int = 500,
                     exc: BaseException | None = None, message: str | None = None) -> web.StreamResponse:
        """A Status instead of aiohttp's text; logged once per period, without the request's bytes."""
        err = _parse_error_status(exc, status)
        self._guard.bad_requests.note(self._loop, code=err.code, error_type=type(exc).__name__ if exc else "")
        if request.writer.output_size > 0:  # the response has begun: nothing to do but close
            raise ConnectionError("Response is sent already, cannot send another response "
                                  "with the error message")
        resp = web.Response(status=err.code, body=codec.status_body(err.status()), content_type=codec.JSON)
        resp.force_close()
        return resp


class _GuardedServer:
    """The protocol factory a site listens with: aiohttp's `web.Server`, making guarded handlers and
    refusing connections over the cap. Everything else is the wrapped server's."""

    def __init__(self, server: web.Server, guard: ConnectionGuard) -> None:
        self._server = server
        self._guard = guard
        self._kwargs = {**server._kwargs, "max_line_size": MAX_URL_BYTES, "max_field_size": MAX_FIELD_BYTES}

    def __call__(self) -> asyncio.Protocol:
        guard = self._guard
        if guard.open >= guard.max_connections:
            guard.refusals.note(asyncio.get_running_loop(), open=guard.open, limit=guard.max_connections)
            return _Refusal()
        handler = GuardedRequestHandler(self._server, guard=guard, loop=asyncio.get_running_loop(),
                                        **self._kwargs)
        guard.live.add(handler)
        return handler

    def __getattr__(self, name: str) -> Any:
        return getattr(self._server, name)


class GuardedRunner(web.AppRunner):
    """`web.AppRunner` whose server hands out guarded connection handlers."""

    def __init__(self, app: web.Application, *, guard: ConnectionGuard, **kwargs: Any) -> None:
        super().__init__(app, **kwargs)
        self.guard = guard

    async def _make_server(self) -> web.Server:
        server = await super()._make_server()
        return _GuardedServer(server, self.guard)  # type: ignore[return-value]  # a web.Server in all but name


class GuardedSite(web.TCPSite):
    """`web.TCPSite` with a bound on the TLS handshake (asyncio's default is 60 s)."""

    def __init__(self, runner: GuardedRunner, host: str, port: int, *, ssl_context: ssl.SSLContext | None,
                 handshake_timeout: float) -> None:
        super().__init__(runner, host, port, ssl_context=ssl_context, reuse_address=True)
        self._handshake_timeout = handshake_timeout

    async def start(self) -> None:
        await web.BaseSite.start(self)
        loop = asyncio.get_running_loop()
        server = self._runner.server
        assert server is not None
        self._server = await loop.create_server(
            server, self._host, self._port, ssl=self._ssl_context, backlog=self._backlog,
            reuse_address=self._reuse_address, reuse_port=self._reuse_port,
            ssl_handshake_timeout=self._handshake_timeout if self._ssl_context else None)
        self._bound_port = self._server.sockets[0].getsockname()[1]
