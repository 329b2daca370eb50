"""The server side of SPDY/3.1 framing, as much as `kubectl port-forward` needs (issue #23).

kubectl 1.37 forwards ports over a WebSocket whose subprotocol is `SPDY/3.1+portforward.k8s.io`:
the binary messages carry a SPDY/3.1 session as a byte stream (upstream's PortForwardWebsockets
tunnel). For each local connection it opens two streams, an `error` stream and a `data` stream,
whose headers name the `port` and a `requestID`; the server answers each SYN_STREAM with a
SYN_REPLY, copies bytes on the data stream, writes any error on the error stream, and ends both
with a FIN. What is implemented of the framing (draft 3.1): SYN_STREAM, SYN_REPLY, RST_STREAM,
PING (answered), SETTINGS, WINDOW_UPDATE and GOAWAY (read, ignored), DATA with FIN; header blocks
are zlib streams (one per direction and session; the client's starts from the protocol's
dictionary, ours uses none, which a reader accepts).
"""

from __future__ import annotations

import asyncio
import dataclasses
import struct
import zlib
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

VERSION = 3
SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE = 1, 2, 3, 4, 6, 7, 8, 9
FLAG_FIN = 0x01
MAX_DATA = 1 << 16  # bytes per DATA frame we send

# The header compression dictionary of SPDY/3 (draft 3, "Compression"): these words, each after its
# length as four bytes, then the raw text below.
_WORDS = (
    "options", "head", "post", "put", "delete", "trace", "accept", "accept-charset", "accept-encoding",
    "accept-language", "accept-ranges", "age", "allow", "authorization", "cache-control", "connection",
    "content-base", "content-encoding", "content-language", "content-length", "content-location",
    "content-md5", "content-range", "content-type", "date", "etag", "expect", "expires", "from", "host",
    "if-match", "if-modified-since", "if-none-match", "if-range", "if-unmodified-since", "last-modified",
    "location", "max-forwards", "pragma", "proxy-authenticate", "proxy-authorization", "range", "referer",
    "retry-after", "server", "te", "trailer", "transfer-encoding", "upgrade", "user-agent", "vary", "via",
    "warning", "www-authenticate", "method", "get", "status", "200 OK", "version", "HTTP/1.1", "url",
    "public", "set-cookie", "keep-alive", "origin",
)
_TAIL = (
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
    "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized"
    "403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Unavailable"
    "Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT"
    "chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,"
    "text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0."
)
DICTIONARY = b"".join(struct.pack(">I", len(w)) + w.encode() for w in _WORDS) + _TAIL.encode()


class ProtocolError(Exception):
    pass


@dataclasses.dataclass
class Stream:
    id: int
    headers: dict[str, str]
    inbound: asyncio.Queue[bytes | None] = dataclasses.field(default_factory=asyncio.Queue)  # None: FIN
    closed_local: bool = False
    reset: bool = False

    async def read(self) -> bytes | None:
        """The next bytes the client sent, or None once it finished (FIN or reset)."""
        if self.reset:
            return None
        return await self.inbound.get()


def encode_headers(headers: dict[str, str]) -> bytes:
    out = [struct.pack(">I", len(headers))]
    for k, v in headers.items():
        kb, vb = k.lower().encode(), v.encode()
        out += [struct.pack(">I", len(kb)), kb, struct.pack(">I", len(vb)), vb]
    return b"".join(out)


def decode_headers(block: bytes) -> dict[str, str]:
    try:
        (count,), pos = struct.unpack_from(">I", block), 4
        out: dict[str, str] = {}
        for _ in range(count):
            (n,) = struct.unpack_from(">I", block, pos)
            name = block[pos + 4:pos + 4 + n].decode()
            pos += 4 + n
            (n,) = struct.unpack_from(">I", block, pos)
            value = block[pos + 4:pos + 4 + n].decode()
            pos += 4 + n
            out[name.lower()] = value.split("\x00")[0]
        return out
    except (struct.error, UnicodeDecodeError) as e:
        raise ProtocolError(f"bad header block: {e}") from None


class Session:
    """One SPDY server session: `feed` it the bytes that arrive; it writes frames through `send`
    and calls `on_stream` (a coroutine, run as a task) for each stream the client opens, after its
    SYN_REPLY."""

    def __init__(self, *, send: Callable[[bytes], Awaitable[None]],
                 on_stream: Callable[[Stream], Coroutine[Any, Any, None]]) -> None:
        self._send = send
        self._on_stream = on_stream
        self._buffer = b""
        self._inflate = zlib.decompressobj(zdict=DICTIONARY)
        self._deflate = zlib.compressobj()
        self.streams: dict[int, Stream] = {}
        self.tasks: set[asyncio.Task[None]] = set()
        self.gone = False
        self._lock = asyncio.Lock()

    async def feed(self, data: bytes) -> None:
        self._buffer += data
        while len(self._buffer) >= 8:
            (length,) = struct.unpack(">I", b"\x00" + self._buffer[5:8])
            if len(self._buffer) < 8 + length:
                return
            frame, self._buffer = self._buffer[:8 + length], self._buffer[8 + length:]
            await self._frame(frame)

    async def _frame(self, frame: bytes) -> None:
        first, flags, body = struct.unpack(">I", frame[:4])[0], frame[4], frame[8:]
        if not first & 0x80000000:  # DATA
            stream = self.streams.get(first & 0x7FFFFFFF)
            if stream is None:
                return
            if body:
                stream.inbound.put_nowait(body)
            if flags & FLAG_FIN:
                stream.inbound.put_nowait(None)
            return
        version, kind = (first >> 16) & 0x7FFF, first & 0xFFFF
        if version != VERSION:
            raise ProtocolError(f"SPDY version {version}")
        if kind == SYN_STREAM:
            stream_id = struct.unpack(">I", body[:4])[0] & 0x7FFFFFFF
            block = self._inflate.decompress(body[10:])
            stream = Stream(id=stream_id, headers=decode_headers(block))
            self.streams[stream_id] = stream
            await self.write(self._control(SYN_REPLY, 0, struct.pack(">I", stream_id) + self._compress({})))
            if flags & FLAG_FIN:
                stream.inbound.put_nowait(None)
            task = asyncio.create_task(self._on_stream(stream), name=f"spdy:stream:{stream_id}")
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
        elif kind == RST_STREAM:
            stream = self.streams.get(struct.unpack(">I", body[:4])[0] & 0x7FFFFFFF)
            if stream is not None:
                stream.reset = True
                stream.inbound.put_nowait(None)
        elif kind == PING:
            await self.write(frame)
        elif kind == GOAWAY:
            self.gone = True
        elif kind == HEADERS:
            self._inflate.decompress(body[4:])  # keeps the shared zlib state in step
        # SETTINGS, WINDOW_UPDATE: nothing to do for a server that sends little

    def _compress(self, headers: dict[str, str]) -> bytes:
        return self._deflate.compress(encode_headers(headers)) + self._deflate.flush(zlib.Z_SYNC_FLUSH)

    @staticmethod
    def _control(kind: int, flags: int, body: bytes) -> bytes:
        return struct.pack(">HHI", 0x8000 | VERSION, kind, (flags << 24) | len(body)) + body

    async def write(self, data: bytes) -> None:
        async with self._lock:
            await self._send(data)

    async def send_data(self, stream: Stream, data: bytes, *, fin: bool = False) -> None:
        if stream.closed_local or stream.reset:
            return
        for start in range(0, max(len(data), 1), MAX_DATA):
            chunk = data[start:start + MAX_DATA]
            last = start + MAX_DATA >= len(data)
            flags = FLAG_FIN if fin and last else 0
            await self.write(struct.pack(">II", stream.id & 0x7FFFFFFF, (flags << 24) | len(chunk)) + chunk)
        if fin:
            stream.closed_local = True

    async def close_stream(self, stream: Stream) -> None:
        await self.send_data(stream, b"", fin=True)

    def stop(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        for stream in self.streams.values():
            stream.inbound.put_nowait(None)
