"""A lean HTTP/1.1 keep-alive connection pool for clients that send many small requests (issue #22).

A simulated fleet's kubelets renew thousands of Leases every 10 s: each renewal is one small PATCH and
one small answer, and aiohttp's client spends more CPU on the request (URL, headers, timers, payload
objects, response objects) than the server spends serving it. This pool writes the request bytes
itself and parses the answer (status line, `Content-Length` or chunked body) on reused connections.
It is what `Client(lean=True)` uses for its non-watch requests; watches stay on aiohttp.

- Connections are opened on demand (at most `limit`), reused while the server keeps them open, and
  closed when the server says `Connection: close` or closes them.
- One request at a time per connection (no pipelining). A request that fails on the transport raises
  `aiohttp.ServerDisconnectedError` / `aiohttp.ClientConnectionError` (as the aiohttp path would: the
  caller's retry logic stays the same); nothing is retried here.
- Time-outs: one sweeper task checks the requests in flight every second and aborts those older
  than `timeout` (`TimeoutError`), instead of a timer per request.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl as ssl_module
import time

import aiohttp
import yarl

_CRLF2 = b"\r\n\r\n"


class _Connection(asyncio.Protocol):
    """One keep-alive connection: feeds the bytes it receives to the response being read."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.reusable = True
        self.started = 0.0  # monotonic start of the request in flight, 0 when idle
        self._buf = bytearray()
        self._waiter: asyncio.Future[tuple[int, bytes]] | None = None
        self._head: tuple[int, int, bool] | None = None  # (status, content length or -1, chunked)
        self._body = bytearray()  # a chunked body decoded so far

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._fail(aiohttp.ServerDisconnectedError("server disconnected") if exc is None
                   else aiohttp.ClientConnectionError(str(exc)))

    def _fail(self, error: BaseException) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(error)

    def send(self, data: bytes, waiter: asyncio.Future[tuple[int, bytes]]) -> None:
        assert self.transport is not None
        self._waiter = waiter
        self._head = None
        self._buf.clear()
        self._body = bytearray()
        self.started = time.monotonic()
        self.transport.write(data)

    def abort(self, error: BaseException) -> None:
        self.reusable = False
        self._fail(error)
        if self.transport is not None:
            self.transport.abort()

    def data_received(self, data: bytes) -> None:
        buf = self._buf
        buf += data
        if self._waiter is None:
            self.abort(aiohttp.ClientResponseError(None, (), message="unexpected data"))  # type: ignore[arg-type]
            return
        try:
            done = self._parse()
        except ValueError as exc:
            self.abort(aiohttp.ClientResponseError(None, (), message=f"bad response: {exc}"))  # type: ignore[arg-type]
            return
        if done is not None:
            waiter, self._waiter = self._waiter, None
            self.started = 0.0
            if not waiter.done():
                waiter.set_result(done)

    def _parse(self) -> tuple[int, bytes] | None:
        buf = self._buf
        if self._head is None:
            end = buf.find(_CRLF2)
            if end < 0:
                return None
            lines = bytes(buf[:end]).split(b"\r\n")
            parts = lines[0].split(b" ", 2)
            if len(parts) < 2 or not parts[0].startswith(b"HTTP/1."):
                raise ValueError(lines[0][:80].decode("latin-1"))
            status = int(parts[1])
            length, chunked = -1, False
            for line in lines[1:]:
                name, _, value = line.partition(b":")
                name = name.strip().lower()
                if name == b"content-length":
                    length = int(value)
                elif name == b"transfer-encoding":
                    chunked = b"chunked" in value.lower()
                elif name == b"connection" and b"close" in value.lower():
                    self.reusable = False
            if parts[0] == b"HTTP/1.0":
                self.reusable = False
            if length < 0 and not chunked:
                raise ValueError("a response without Content-Length or chunked encoding")
            del buf[:end + 4]
            self._head = (status, length, chunked)
        status, length, chunked = self._head
        if not chunked:
            if len(buf) < length:
                return None
            return status, bytes(buf[:length])
        body = self._body
        while True:  # consume whole chunks from the buffer as they arrive
            nl = buf.find(b"\r\n")
            if nl < 0:
                return None
            size = int(bytes(buf[:nl]).split(b";", 1)[0], 16)
            start = nl + 2
            if size == 0:
                if buf.find(b"\r\n", start) < 0:
                    return None  # the trailer's end has not arrived yet
                return status, bytes(body)
            if len(buf) < start + size + 2:
                return None
            body += buf[start:start + size]
            del buf[:start + size + 2]


class Pool:
    """Keep-alive connections to one server (`base_url`: scheme, host and port are used)."""

    def __init__(self, base_url: str, *, ssl: ssl_module.SSLContext | bool | None = None, limit: int = 64,
                 timeout: float = 30.0) -> None:
        url = yarl.URL(base_url)
        self._host = url.host or "127.0.0.1"
        self._port = url.port or (443 if url.scheme == "https" else 80)
        self._ssl: ssl_module.SSLContext | None = None
        if url.scheme == "https":
            if isinstance(ssl, ssl_module.SSLContext):
                self._ssl = ssl
            elif ssl is False:
                self._ssl = ssl_module.create_default_context()
                self._ssl.check_hostname = False
                self._ssl.verify_mode = ssl_module.CERT_NONE
            else:
                self._ssl = ssl_module.create_default_context()
        self.host_header = url.raw_authority.encode()
        self._limit = limit
        self._timeout = timeout
        self._idle: list[_Connection] = []
        self._all: set[_Connection] = set()
        self._slots = asyncio.Semaphore(limit)
        self._sweeper: asyncio.Task[None] | None = None

    async def request(self, head: bytes, body: bytes | None) -> tuple[int, bytes]:
        """Send one request (`head`: request line and headers, ending in CRLF CRLF) and return the
        status and body of the answer."""
        async with self._slots:
            conn = await self._connection()
            waiter: asyncio.Future[tuple[int, bytes]] = asyncio.get_running_loop().create_future()
            conn.send(head + body if body else head, waiter)
            try:
                result = await waiter
            except BaseException:
                conn.abort(aiohttp.ClientConnectionError("request abandoned"))
                self._all.discard(conn)
                raise
            if conn.reusable and not conn.closed:
                self._idle.append(conn)
            else:
                self._all.discard(conn)
                if conn.transport is not None:
                    conn.transport.close()
            return result

    async def _connection(self) -> _Connection:
        while self._idle:
            conn = self._idle.pop()
            if not conn.closed:
                return conn
            self._all.discard(conn)
        loop = asyncio.get_running_loop()
        try:
            _transport, conn = await loop.create_connection(
                _Connection, self._host, self._port, ssl=self._ssl,
                server_hostname=self._host if self._ssl is not None else None)
        except OSError as exc:  # refused, unreachable: as aiohttp reports it, a ClientConnectionError
            raise aiohttp.ClientConnectionError(f"cannot connect to {self._host}:{self._port}: {exc}") from exc
        self._all.add(conn)
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = loop.create_task(self._sweep(), name="http1:sweeper")
        return conn

    async def _sweep(self) -> None:
        while self._all:
            await asyncio.sleep(1.0)
            limit = time.monotonic() - self._timeout
            for conn in list(self._all):
                if conn.started and conn.started < limit:
                    conn.abort(TimeoutError(f"no answer within {self._timeout:g} s"))
                    self._all.discard(conn)

    async def close(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
            self._sweeper = None
        for conn in self._all:
            if conn.transport is not None:
                conn.transport.close()
        self._all.clear()
        self._idle.clear()
