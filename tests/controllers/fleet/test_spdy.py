"""The SPDY/3.1 server framing of port-forward (`controllers/fleet/spdy.py`): the header dictionary,
a client's SYN_STREAM answered by a SYN_REPLY whose header block a reader decompresses, DATA with FIN
to the stream, PING answered, RST_STREAM ending a stream, frames split across messages."""

from __future__ import annotations

import struct
import zlib
from typing import Any

from controllers.fleet import spdy
from cp.testing import eventually


def _client_headers(compressor: Any, headers: dict[str, str]) -> bytes:
    return compressor.compress(spdy.encode_headers(headers)) + compressor.flush(zlib.Z_SYNC_FLUSH)


def _control(kind: int, flags: int, body: bytes) -> bytes:
    return struct.pack(">HHI", 0x8000 | 3, kind, (flags << 24) | len(body)) + body


def _frames(data: bytes) -> list[tuple[bool, int, int, bytes]]:
    """(control, type or stream id, flags, body) of each frame."""
    out = []
    while data:
        first, flags_len = struct.unpack(">II", data[:8])
        length = flags_len & 0xFFFFFF
        body, data = data[8:8 + length], data[8 + length:]
        control = bool(first & 0x80000000)
        out.append((control, first & 0xFFFF if control else first & 0x7FFFFFFF, flags_len >> 24, body))
    return out


def test_the_dictionary_is_the_protocols() -> None:
    assert len(spdy.DICTIONARY) == 1423
    assert spdy.DICTIONARY.startswith(b"\x00\x00\x00\x07options\x00\x00\x00\x04head")
    assert spdy.DICTIONARY.endswith(b",*,enq=0.")


async def test_a_session() -> None:
    sent = bytearray()
    streams: list[spdy.Stream] = []
    received: list[bytes | None] = []

    async def send(data: bytes) -> None:
        sent.extend(data)

    async def on_stream(stream: spdy.Stream) -> None:
        streams.append(stream)
        while (chunk := await stream.read()) is not None:
            received.append(chunk)
            await session.send_data(stream, chunk.upper())
        received.append(None)
        await session.close_stream(stream)

    session = spdy.Session(send=send, on_stream=on_stream)
    compressor = zlib.compressobj(zdict=spdy.DICTIONARY)
    block = _client_headers(compressor, {"streamType": "data", "port": "80", "requestID": "0"})
    syn = _control(spdy.SYN_STREAM, 0, struct.pack(">IIH", 1, 0, 0) + block)
    data = struct.pack(">II", 1, 5) + b"hello"
    fin = struct.pack(">II", 1, spdy.FLAG_FIN << 24)
    ping = _control(spdy.PING, 0, struct.pack(">I", 7))
    wire = syn + data + ping + fin
    await session.feed(wire[:5])  # frames arrive in pieces
    await session.feed(wire[5:])
    await eventually(lambda: received == [b"hello", None] and bytes(sent).endswith(fin), what="the echo and FIN")
    assert streams[0].headers == {"streamtype": "data", "port": "80", "requestid": "0"}
    assert received == [b"hello", None]
    frames = _frames(bytes(sent))
    reply = frames[0]
    assert reply[:2] == (True, spdy.SYN_REPLY) and struct.unpack(">I", reply[3][:4])[0] == 1
    assert spdy.decode_headers(zlib.decompressobj().decompress(reply[3][4:])) == {}
    assert (True, spdy.PING, 0, struct.pack(">I", 7)) in frames
    assert (False, 1, 0, b"HELLO") in frames
    assert frames[-1] == (False, 1, spdy.FLAG_FIN, b"")

    # A second stream, reset by the client: its reader sees the end.
    block = _client_headers(compressor, {"streamType": "error", "port": "80", "requestID": "1"})
    await session.feed(_control(spdy.SYN_STREAM, 0, struct.pack(">IIH", 3, 0, 0) + block))
    await session.feed(_control(spdy.RST_STREAM, 0, struct.pack(">II", 3, 5)))
    await eventually(lambda: len(streams) == 2, what="the second stream")
    assert streams[1].headers["streamtype"] == "error" and streams[1].reset
    session.stop()
