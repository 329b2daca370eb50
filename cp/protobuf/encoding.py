"""Encoding JSON-shaped objects as Kubernetes protobuf, byte for byte as Go's generated marshalers do.

What the server stores is the JSON Go would write; client-go reads the protobuf Go would write for the
same struct. So encoding is Go's `json.Unmarshal` into the struct followed by its `Marshal`:

- fields in field-number order; a non-pointer scalar is always written, zero or not (`name` as an empty
  string), a pointer only when set; a non-pointer struct is always written, as an empty message when
  zero; lists item by item (scalars unpacked: proto2), maps entry by entry in sorted key order, each
  entry's key and value always written (a nil `[]byte` value left out);
- `Time` is {seconds, nanos=0} (Go keeps seconds only), `MicroTime` {seconds, nanos to the
  microsecond}, a zero time an empty message; `Quantity` its canonical string; `IntOrString` all three
  of {type, intVal, strVal}; `RawExtension`, `FieldsV1` and apiextensions' `JSON` the compact JSON of their
  value; the apiextensions unions as their UnmarshalJSON reads them.

JSON fields the message does not have are dropped, as Go's decoder drops them. A value of the wrong
JSON type raises `Unencodable` (stored objects passed the structural schema, so this is a bug). Pure.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import re
import struct
from typing import Any

import msgspec

from cp import quantity
from cp.protobuf import table as t

_json = msgspec.json.Encoder()


class Unencodable(Exception):
    """A value does not fit its protobuf field; `path` names the field."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail
        self.path: list[str] = []


def put_varint(out: bytearray, n: int) -> None:
    if 0 <= n < 0x80:
        out.append(n)
        return
    n &= 0xFFFFFFFFFFFFFFFF
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)


def put_bytes(out: bytearray, tag: bytes, data: bytes | bytearray) -> None:
    out += tag
    put_varint(out, len(data))
    out += data


def put_str(out: bytearray, tag: bytes, value: Any) -> None:
    if not isinstance(value, str):
        raise Unencodable(f"expected a string, got {_json_type(value)}")
    data = value.encode("utf-8", "surrogatepass")
    out += tag
    put_varint(out, len(data))
    out += data


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def _int(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise Unencodable(f"expected an integer, got {_json_type(value)}")


_TIME = re.compile(r"^(\d{4})-(\d\d)-(\d\d)[Tt](\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?([Zz]|[+-]\d\d:\d\d)$")


def _time(value: Any, *, micro: bool) -> bytes:
    """A Time or MicroTime message (its content): RFC 3339 text to {1: seconds, 2: nanos}; the zero
    time (year 1) is empty, as Go's Time marshals it."""
    if value is None:
        return b""
    m = _TIME.match(value) if isinstance(value, str) else None
    if m is None:
        raise Unencodable(f"expected an RFC 3339 time, got {value!r}")
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    fraction, zone = m.group(7) or "", m.group(8)
    try:
        moment = datetime.datetime(year, month, day, hour, minute, min(second, 59), tzinfo=datetime.UTC)
    except ValueError:
        raise Unencodable(f"expected an RFC 3339 time, got {value!r}") from None
    seconds = int((moment - _EPOCH).total_seconds()) + (second - min(second, 59))
    if zone not in ("Z", "z"):
        sign = 1 if zone[0] == "+" else -1
        seconds -= sign * (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60)
    if seconds == _ZERO_SECONDS:
        return b""
    nanos = int((fraction + "000000000")[:9]) // 1000 * 1000 if micro else 0
    out = bytearray(b"\x08")
    put_varint(out, seconds)
    out += b"\x10"
    put_varint(out, nanos)
    return bytes(out)


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_ZERO_SECONDS = -62135596800  # 0001-01-01T00:00:00Z, Go's zero time


def _quantity(value: Any) -> bytes:
    try:
        text = quantity.canonical("0" if value is None else value)
    except quantity.QuantityError as e:
        raise Unencodable(f"invalid quantity {value!r}: {e}") from None
    out = bytearray()
    put_str(out, b"\x0a", text)
    return bytes(out)


def _int_or_string(value: Any) -> bytes:
    if value is None:
        return b"\x08\x00\x10\x00\x1a\x00"
    if isinstance(value, str):
        out = bytearray(b"\x08\x01\x10\x00")
        put_str(out, b"\x1a", value)
        return bytes(out)
    out = bytearray(b"\x08\x00\x10")
    put_varint(out, _int(value))
    out += b"\x1a\x00"
    return bytes(out)


def _raw_json(value: Any) -> bytes:
    """RawExtension, FieldsV1, JSON: {1: the value's compact JSON}; null is no data."""
    if value is None:
        return b""
    out = bytearray()
    put_bytes(out, b"\x0a", _json.encode(value))
    return bytes(out)


def _union(kind: int, value: Any, table: dict[str, t.Message]) -> bytes:
    """apiextensions' JSONSchemaPropsOr{Array,Bool,StringArray}, as their UnmarshalJSON fills them."""
    props = table[t.SCHEMA_PROPS]
    out = bytearray()
    if kind == t.P_BOOL:
        if isinstance(value, dict):
            out += b"\x08\x01"
            put_bytes(out, b"\x12", encode_message(value, props, table))
        elif isinstance(value, bool) or value is None:
            out += b"\x08\x01" if value else b"\x08\x00"
        else:
            raise Unencodable(f"expected a boolean or a schema, got {_json_type(value)}")
        return bytes(out)
    if isinstance(value, dict):
        put_bytes(out, b"\x0a", encode_message(value, props, table))
    elif isinstance(value, list):
        for item in value:
            if kind == t.P_ARRAY:
                put_bytes(out, b"\x12", encode_message(_object(item), props, table))
            else:
                put_str(out, b"\x12", item)
    elif value is not None:
        raise Unencodable(f"expected a schema or an array, got {_json_type(value)}")
    return bytes(out)


def _object(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise Unencodable(f"expected an object, got {_json_type(value)}")
    return value


def _special(kind: int, value: Any, table: dict[str, t.Message]) -> bytes:
    if kind == t.TIME:
        return _time(value, micro=False)
    if kind == t.MICROTIME:
        return _time(value, micro=True)
    if kind == t.QUANTITY:
        return _quantity(value)
    if kind == t.INTSTR:
        return _int_or_string(value)
    if kind in (t.P_ARRAY, t.P_BOOL, t.P_SARRAY):
        return _union(kind, value, table)
    return _raw_json(value)


def _element(field: t.Field, value: Any, table: dict[str, t.Message], out: bytearray) -> None:
    """One value of the field's type with its key: a singular field's, a list item's or (tag 2) a
    map value's."""
    kind = field.kind
    tag = field.tag if not field.map else (b"\x10" if kind in t.VARINTS else b"\x12")
    if kind == t.STR:
        put_str(out, tag, "" if value is None else value)
    elif kind in t.VARINTS:
        out += tag
        if kind == t.BOOL:
            if not isinstance(value, bool) and value is not None:
                raise Unencodable(f"expected a boolean, got {_json_type(value)}")
            out.append(1 if value else 0)
        else:
            number = 0 if value is None else _int(value)
            if not (-(1 << 31) <= number < 1 << 31 if kind == t.INT32 else -(1 << 63) <= number < 1 << 63):
                raise Unencodable(f"{number} is out of range")
            put_varint(out, number)
    elif kind == t.MSG:
        if field.wrapper:
            item_field = table[field.message].fields[1]
            sub = bytearray()
            for item in value or ():
                _element(item_field, item, table, sub)
            put_bytes(out, tag, sub)
        else:
            put_bytes(out, tag, encode_message(_object(value), table[field.message], table))
    elif kind == t.BYTES:
        if not isinstance(value, str):
            raise Unencodable(f"expected base64 text, got {_json_type(value)}")
        try:
            data = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise Unencodable("invalid base64 data") from None
        put_bytes(out, tag, data)
    elif kind == t.F64:
        if isinstance(value, bool) or not isinstance(value, int | float | None):
            raise Unencodable(f"expected a number, got {_json_type(value)}")
        out += tag
        out += struct.pack("<d", float(value or 0))
    else:
        put_bytes(out, tag, _special(kind, value, table))


def encode_message(obj: dict[str, Any], message: t.Message, table: dict[str, t.Message]) -> bytes:
    """The protobuf of one message from its JSON dict (without the envelope)."""
    if not obj and message.zero_bytes is not None:
        return message.zero_bytes
    out = bytearray()
    get = obj.get
    for field in message.order:
        if field.inline:
            put_bytes(out, field.tag, encode_message(obj, table[field.message], table))
            continue
        value = get(field.name)
        if value is None:  # absent or null: Go's zero value, written unless nil-able
            absent = field.absent
            if absent is None:
                absent = field.absent = _absent(field, table)
            out += absent
            continue
        try:
            if field.kind == t.STR and not (field.repeated or field.map):
                put_str(out, field.tag, value)
            else:
                _encode_value(field, value, table, out)
        except Unencodable as e:
            e.path.insert(0, field.name)
            raise
    data = bytes(out)
    if not obj:
        message.zero_bytes = data
    return data


def _absent(field: t.Field, table: dict[str, t.Message]) -> bytes:
    """What Go writes for a field the JSON leaves out: nothing for a pointer, list or map; else the key
    and the zero value (an empty string, 0, false, an empty Time, the zero struct)."""
    if field.repeated or field.map or field.nilable:
        return b""
    out = bytearray()
    _element(field, None, table, out)
    return bytes(out)


def _encode_value(field: t.Field, value: Any, table: dict[str, t.Message], out: bytearray) -> None:
    """A field the JSON has a (non-null) value for."""
    if field.repeated:
        if not isinstance(value, list):
            raise Unencodable(f"expected an array, got {_json_type(value)}")
        for item in value:
            _element(field, item, table, out)
        return
    if field.map:
        if not isinstance(value, dict):
            raise Unencodable(f"expected an object, got {_json_type(value)}")
        for key in sorted(value):
            item = value[key]
            entry = bytearray()
            put_str(entry, b"\x0a", key)
            if item is not None or field.kind != t.BYTES:
                _element(field, item, table, entry)
            put_bytes(out, field.tag, entry)
        return
    _element(field, value, table, out)
