"""The protobuf wire format itself: reading keys, varints and length-delimited fields, with errors for
malformed data. Shared by the decoder of request bodies and the envelope reader. Pure.
"""

from __future__ import annotations

MAGIC = b"k8s\x00"  # the prefix of a Kubernetes protobuf body, before its runtime.Unknown
WIRE_NAMES = ("varint", "64-bit", "length-delimited", "start-group", "end-group", "32-bit")
_MAX_GROUP_DEPTH = 64


class Malformed(Exception):
    """The data is not valid protobuf for the message being read; `path` is filled in on the way out."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail
        self.path: list[str] = []


def read_varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise Malformed("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise Malformed("varint longer than 10 bytes")


def read_field(buf: bytes, pos: int, end: int) -> tuple[int, int, int, int]:
    """One field at `pos`: (number, wire type, value, next position).

    The value is the integer for varints, the start offset for length-delimited fields (the data is
    `buf[value:next]`) and for 64-bit fields; it is 0 for the skipped 32-bit and group fields.
    """
    tag, pos = read_varint(buf, pos, end)
    number, wire = tag >> 3, tag & 7
    if number == 0:
        raise Malformed("field number 0")
    if wire == 0:
        value, pos = read_varint(buf, pos, end)
        return number, wire, value, pos
    if wire == 2:
        length, pos = read_varint(buf, pos, end)
        if length > end - pos:
            raise Malformed("truncated length-delimited field")
        return number, wire, pos, pos + length
    if wire in (1, 5):
        start = pos
        pos += 8 if wire == 1 else 4
        if pos > end:
            raise Malformed("truncated fixed-size field")
        return number, wire, start, pos
    if wire == 3:
        return number, wire, 0, _skip_group(buf, pos, end, number)
    raise Malformed(f"invalid wire type {wire}")


def _skip_group(buf: bytes, pos: int, end: int, number: int) -> int:
    """Skip a (long deprecated) group up to its matching end-group tag."""
    open_groups = [number]
    while open_groups:
        if pos >= end:
            raise Malformed("unterminated group")
        tag, pos = read_varint(buf, pos, end)
        inner, wire = tag >> 3, tag & 7
        if wire == 4:
            if inner != open_groups.pop():
                raise Malformed("mismatched end-group")
        elif wire == 3:
            open_groups.append(inner)
            if len(open_groups) > _MAX_GROUP_DEPTH:
                raise Malformed("groups nested too deeply")
        elif wire == 0:
            _, pos = read_varint(buf, pos, end)
        elif wire == 2:
            length, pos = read_varint(buf, pos, end)
            pos += length
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        else:
            raise Malformed(f"invalid wire type {wire}")
        if pos > end:
            raise Malformed("truncated group")
    return pos


def signed64(value: int) -> int:
    value &= 0xFFFFFFFFFFFFFFFF
    return value - (1 << 64) if value >= 1 << 63 else value


def signed32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def text(buf: bytes, start: int, end: int) -> str:
    # Go does not check UTF-8 here; its JSON encoder then writes U+FFFD for bad bytes.
    return buf[start:end].decode("utf-8", "replace")


def envelope(body: bytes) -> tuple[str, str, int, int, str, str]:
    """The runtime.Unknown after the prefix: (apiVersion, kind, raw start, raw end, contentEncoding,
    contentType)."""
    api_version = kind = encoding = content_type = ""
    raw = (0, 0)
    pos, end = len(MAGIC), len(body)
    while pos < end:
        number, wire, value, pos = read_field(body, pos, end)
        if number not in (1, 2, 3, 4):
            continue
        if wire != 2:
            raise Malformed(f"runtime.Unknown field {number} has wire type {WIRE_NAMES[wire]}")
        if number == 1:
            tpos = value
            while tpos < pos:
                tnum, twire, tvalue, tpos = read_field(body, tpos, pos)
                if tnum in (1, 2):
                    if twire != 2:
                        raise Malformed(f"typeMeta field {tnum} has wire type {WIRE_NAMES[twire]}")
                    if tnum == 1:
                        api_version = text(body, tvalue, tpos)
                    else:
                        kind = text(body, tvalue, tpos)
        elif number == 2:
            raw = (value, pos)
        elif number == 3:
            encoding = text(body, value, pos)
        else:
            content_type = text(body, value, pos)
    return api_version, kind, raw[0], raw[1], encoding, content_type
