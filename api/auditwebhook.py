"""kube-apiserver's audit webhook backend in batch mode (`cplane serve --audit-webhook-config-file`):
audit events POSTed as `audit.k8s.io/v1` EventList JSON to the webhook a kubeconfig names (its
cluster's `server` is the URL; its CA, client certificate and bearer token are used), so that tools
built for kube-apiserver's webhook (Falco's k8saudit plugin, log collectors) take cplane's events.

As upstream's buffered backend with its defaults:
- events are queued (`--audit-webhook-batch-buffer-size`, 10,000; beyond it an event is dropped and
  counted, and `audit_webhook_dropped` logged with the next batch sent);
- a batch is sent when it holds `--audit-webhook-batch-max-size` events (400) or
  `--audit-webhook-batch-max-wait` (30 s) after its first event, one POST at a time;
- a POST that fails (transport error, timeout, non-2xx) is retried after
  `--audit-webhook-initial-backoff` (10 s), 1.5 times longer each time, 5 attempts in all; then the
  batch is dropped and logged (`audit_webhook_failed`);
- at shutdown what is queued is sent, one attempt per batch, for at most 10 s; what is left then is
  dropped and logged (`audit_webhook_dropped`).

The events are rendered (`put(render)`, as the log backend takes them) when their batch is sent, in a
thread. The `blocking` modes, which hold each request until its event is sent, are not served.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ssl
from collections.abc import Callable

import aiohttp
import structlog

from api.auth import credentials
from cp import kubeconfig

logger = structlog.get_logger("cplane.audit")

DEFAULT_MAX_SIZE = 400
DEFAULT_MAX_WAIT = 30.0
DEFAULT_BUFFER_SIZE = 10_000
DEFAULT_INITIAL_BACKOFF = 10.0
_ATTEMPTS = 5
_BACKOFF_FACTOR = 1.5
_TIMEOUT = 30.0  # seconds a POST may take
_SHUTDOWN = 10.0  # seconds `close` waits for what is queued to be sent
_HEAD = b'{"kind":"EventList","apiVersion":"audit.k8s.io/v1","metadata":{},"items":['


class AuditWebhook:
    """The batching webhook backend (see the module). `put` is called on the event loop."""

    def __init__(self, endpoint: kubeconfig.Endpoint, *, max_size: int = DEFAULT_MAX_SIZE,
                 max_wait: float = DEFAULT_MAX_WAIT, buffer_size: int = DEFAULT_BUFFER_SIZE,
                 initial_backoff: float = DEFAULT_INITIAL_BACKOFF) -> None:
        if not endpoint.server:
            raise ValueError("the kubeconfig names no server")
        self.url = endpoint.server
        self.endpoint = endpoint
        self.max_size = max_size
        self.max_wait = max_wait
        self.buffer_size = buffer_size
        self.initial_backoff = initial_backoff
        self.sent = 0  # events delivered
        self.dropped = 0  # events dropped (buffer full, or their batch failed)
        self._queue: list[Callable[[], bytes]] = []
        self._put = 0  # events put so far
        self._done = 0  # events sent or dropped so far
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []  # (`_done` awaited, flush waiting)
        self._unlogged = 0  # events dropped for a full buffer since the last log line
        self._wake: asyncio.Event | None = None  # a batch is full, or a flush or close is asked
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self._session: aiohttp.ClientSession | None = None
        self._ssl = _ssl_context(endpoint)
        self._headers = {"Content-Type": "application/json", "User-Agent": "cplane-audit-webhook"}
        if endpoint.token:
            self._headers["Authorization"] = f"Bearer {endpoint.token}"

    def put(self, render: Callable[[], bytes]) -> None:
        if self._closing:
            return
        self._put += 1
        if len(self._queue) >= self.buffer_size:
            self.dropped += 1
            self._done += 1
            self._unlogged += 1
            return
        self._queue.append(render)
        if self._task is None:
            self._wake = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._run(), name="audit-webhook")
        if len(self._queue) == 1 or len(self._queue) >= self.max_size:  # (a batch's wait starts, or it is full)
            assert self._wake is not None
            self._wake.set()

    async def flushed(self) -> None:
        """Wait until every event put before now is sent (or dropped), sending at once."""
        if self._done >= self._put:
            return
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((self._put, done))
        assert self._wake is not None
        self._wake.set()
        await done

    async def close(self) -> None:
        """Send what is queued (one attempt a batch, for at most `_SHUTDOWN` seconds) and stop."""
        self._closing = True
        if self._task is not None:
            assert self._wake is not None
            self._wake.set()
            try:
                await asyncio.wait_for(asyncio.shield(self._task), _SHUTDOWN)
            except TimeoutError:
                self._task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._task
                lost = self._put - self._done
                self.dropped += lost
                self._done = self._put
                logger.error("audit_webhook_dropped", url=self.url, events=lost, reason="shutdown")
                for _, done in self._waiters:
                    if not done.done():
                        done.set_result(None)
        if self._session is not None:
            await self._session.close()

    async def _run(self) -> None:
        assert self._wake is not None
        while True:
            if not self._queue:
                if self._closing:
                    return
                self._wake.clear()
                await self._wake.wait()
                continue
            if len(self._queue) < self.max_size and not self._closing and not self._waiters:
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self.max_wait)
            batch, self._queue = self._queue[:self.max_size], self._queue[self.max_size:]
            await self._send(batch)
            self._done += len(batch)
            if self._unlogged:
                logger.warning("audit_webhook_dropped", url=self.url, events=self._unlogged, reason="buffer full")
                self._unlogged = 0
            waiting = []
            for until, done in self._waiters:
                if self._done >= until:
                    if not done.done():
                        done.set_result(None)
                else:
                    waiting.append((until, done))
            self._waiters = waiting

    async def _send(self, batch: list[Callable[[], bytes]]) -> None:
        lines = await asyncio.to_thread(_render, batch)
        body = _HEAD + b",".join(lines) + b"]}"
        delay = self.initial_backoff
        attempts = 1 if self._closing else _ATTEMPTS
        error = ""
        for attempt in range(attempts):
            try:
                async with self._session_for().post(self.url, data=body, headers=self._headers) as response:
                    if 200 <= response.status < 300:
                        self.sent += len(lines)
                        return
                    error = f"HTTP {response.status}: {(await response.text())[:200]}"
            except (aiohttp.ClientError, TimeoutError, OSError) as exc:
                error = str(exc) or type(exc).__name__
            if attempt + 1 == attempts or self._closing:
                break
            await asyncio.sleep(delay)
            delay *= _BACKOFF_FACTOR
        self.dropped += len(lines)
        logger.error("audit_webhook_failed", url=self.url, events=len(lines), error=error)

    def _session_for(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(ssl=self._ssl if self._ssl is not None else True, limit=1),
                timeout=aiohttp.ClientTimeout(total=_TIMEOUT))
        return self._session


def _render(batch: list[Callable[[], bytes]]) -> list[bytes]:
    out = []
    for render in batch:
        try:
            out.append(render().rstrip(b"\n"))
        except Exception:
            logger.exception("audit_event_failed")
    return out


def _ssl_context(endpoint: kubeconfig.Endpoint) -> ssl.SSLContext | bool | None:
    if not endpoint.server.startswith("https"):
        return None
    if endpoint.insecure_skip_tls_verify:
        return False
    decoded = [base64.b64decode(data) if data else b""
               for data in (endpoint.ca_data, endpoint.client_cert_data, endpoint.client_key_data)]
    return credentials.client_ssl_context(decoded[0], cert=decoded[1], key=decoded[2])


def load(config_file: str, *, max_size: int = DEFAULT_MAX_SIZE, max_wait: float = DEFAULT_MAX_WAIT,
         buffer_size: int = DEFAULT_BUFFER_SIZE, initial_backoff: float = DEFAULT_INITIAL_BACKOFF) -> AuditWebhook:
    """The backend of `--audit-webhook-config-file` (a kubeconfig: its current context's cluster and
    user); OSError or ValueError naming what cannot be used."""
    return AuditWebhook(kubeconfig.load(config_file), max_size=max_size, max_wait=max_wait,
                        buffer_size=buffer_size, initial_backoff=initial_backoff)
