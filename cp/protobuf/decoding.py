"""Decoding protobuf request bodies into the JSON-shaped dict Go would write for the same object.

The result is what client-go's `json.Marshal` of the decoded Go struct would be, so a protobuf body
and the JSON body of the same object reach the store as the same dict: every message starts from its
zero JSON (`table.Message.zero`), then each field on the wire sets its JSON field: a scalar that Go
writes with `omitempty` is left out when zero unless it is a pointer; present lists and maps are
lists and objects; `Time` is RFC 3339 in seconds (Go drops a Time's nanoseconds), `MicroTime` with six
fractional digits, a zero time `null`; `Quantity` is its canonical string; `IntOrString` an int or a
string; `bytes` are base64; `RawExtension`, `FieldsV1` and apiextensions' `JSON` are the JSON they
carry. Fields the table does not know are skipped, as upstream does, so `fieldValidation=Strict`
cannot flag them. Pure.
"""

from __future__ import annotations

import base64
import datetime
import json
import struct
from typing import Any

from cp import bodies, quantity
from cp.protobuf import table as t
from cp.protobuf.wire import WIRE_NAMES, Malformed, read_field, read_varint, signed32, signed64, text


class TooLarge(Exception):
    pass


class Decoding:
    """One body's decoding: the message table, and how many bytes of JSON the output may still grow by.

    The body's own bytes are the output's content (strings, numbers, base64 of bytes within a small
    factor), so the budget starts at `bodies.MAX_BYTES` less the body's length, and every field occurrence
    and message spends its `cost` (the names, braces and zero values the wire does not carry). A body
    whose output would pass the bound stops there, before building it: a tag byte can stand for a 30-byte
    JSON key, and an empty message for a dict of zero values, so a 3 MiB body could otherwise decode into
    hundreds of megabytes."""

    __slots__ = ("left", "table")

    def __init__(self, *, table: dict[str, t.Message], body_size: int) -> None:
        self.table = table
        self.left = bodies.MAX_BYTES - body_size


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def _time(buf: bytes, start: int, end: int, *, micro: bool) -> str | None:
    """metav1.Time / MicroTime: {1: seconds, 2: nanos}; an empty message is the zero time (null)."""
    if start == end:
        return None
    seconds = nanos = 0
    pos = start
    while pos < end:
        number, wire, value, pos = read_field(buf, pos, end)
        if number in (1, 2):
            if wire != 0:
                raise Malformed(f"time field {number} has wire type {WIRE_NAMES[wire]}")
            if number == 1:
                seconds = signed64(value)
            else:
                nanos = signed32(value)
    try:
        moment = _EPOCH + datetime.timedelta(seconds=seconds, microseconds=nanos // 1000 if micro else 0)
    except OverflowError:
        raise Malformed(f"time out of range: {seconds}s") from None
    if moment.year == 1 and moment == datetime.datetime(1, 1, 1, tzinfo=datetime.UTC):
        return None  # Go's zero time
    text_ = (f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T{moment.hour:02d}:{moment.minute:02d}:"
             f"{moment.second:02d}")
    return f"{text_}.{moment.microsecond:06d}Z" if micro else f"{text_}Z"


def _quantity(buf: bytes, start: int, end: int) -> str:
    """resource.Quantity: {1: string}; absent means zero. Written back in canonical form, as Go's
    Quantity parses the string and marshals its canonical text."""
    out = "0"
    pos = start
    while pos < end:
        number, wire, value, pos = read_field(buf, pos, end)
        if number == 1:
            if wire != 2:
                raise Malformed(f"quantity has wire type {WIRE_NAMES[wire]}")
            out = text(buf, value, pos) or "0"
    try:
        return quantity.canonical(out)
    except quantity.QuantityError as e:
        raise Malformed(str(e)) from None


def _int_or_string(buf: bytes, start: int, end: int) -> int | str:
    """intstr.IntOrString: {1: type (0 int, 1 string), 2: intVal, 3: strVal}."""
    type_, int_val, str_val = 0, 0, ""
    pos = start
    while pos < end:
        number, wire, value, pos = read_field(buf, pos, end)
        if number in (1, 2):
            if wire != 0:
                raise Malformed(f"int-or-string field {number} has wire type {WIRE_NAMES[wire]}")
            if number == 1:
                type_ = signed64(value)
            else:
                int_val = signed32(value)
        elif number == 3:
            if wire != 2:
                raise Malformed(f"int-or-string field 3 has wire type {WIRE_NAMES[wire]}")
            str_val = text(buf, value, pos)
    return str_val if type_ == 1 else int_val


def _embedded_json(buf: bytes, start: int, end: int, *, what: str) -> Any:
    """RawExtension / FieldsV1 / JSON: {1: raw}, where raw is JSON; no data is null."""
    raw = b""
    pos = start
    while pos < end:
        number, wire, value, pos = read_field(buf, pos, end)
        if number == 1:
            if wire != 2:
                raise Malformed(f"{what} has wire type {WIRE_NAMES[wire]}")
            raw = buf[value:pos]
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        raise Malformed(f"{what} does not hold JSON") from None


def _union(kind: int, buf: bytes, start: int, end: int, state: Decoding) -> Any:
    """apiextensions' JSONSchemaPropsOrArray {1 schema, 2 jSONSchemas}, ...OrBool {1 allows, 2 schema}
    and ...OrStringArray {1 schema, 2 property}, as their MarshalJSON writes them."""
    props = state.table[t.SCHEMA_PROPS]
    schema: dict[str, Any] | None = None
    items: list[Any] = []
    allows = False
    pos = start
    while pos < end:
        number, wire, value, pos = read_field(buf, pos, end)
        if kind == t.P_BOOL and number == 1:
            if wire != 0:
                raise Malformed(f"allows has wire type {WIRE_NAMES[wire]}")
            allows = value != 0
            continue
        if number not in (1, 2):
            continue
        if wire != 2:
            raise Malformed(f"field {number} has wire type {WIRE_NAMES[wire]}")
        if (number == 2) == (kind == t.P_BOOL):  # the schema
            if schema is None:
                schema = props.zero_json()
            _decode_into(buf, value, pos, props, state, schema)
        elif kind == t.P_ARRAY:
            item = props.zero_json()
            _decode_into(buf, value, pos, props, state, item)
            items.append(item)
        else:
            items.append(text(buf, value, pos))
    if kind == t.P_BOOL:
        return schema if schema is not None else allows
    return items if items else schema


def _special(kind: int, buf: bytes, start: int, end: int, state: Decoding) -> Any:
    if kind == t.TIME:
        return _time(buf, start, end, micro=False)
    if kind == t.MICROTIME:
        return _time(buf, start, end, micro=True)
    if kind == t.QUANTITY:
        return _quantity(buf, start, end)
    if kind == t.INTSTR:
        return _int_or_string(buf, start, end)
    if kind in (t.P_ARRAY, t.P_BOOL, t.P_SARRAY):
        return _union(kind, buf, start, end, state)
    return _embedded_json(buf, start, end, what={t.RAWEXT: "RawExtension", t.FIELDSV1: "FieldsV1"}.get(
        kind, "JSON"))


def _scalar(kind: int, value: int) -> int | bool:
    if kind == t.INT64:
        return signed64(value)
    if kind == t.INT32:
        return signed32(value)
    return value != 0


def _wrapped(field: t.Field, buf: bytes, start: int, end: int, state: Decoding) -> list[Any]:
    """A named slice type (`ExtraValue`): its items, field 1 of the wrapper message."""
    item_field = state.table[field.message].fields[1]
    items: list[Any] = []
    pos = start
    while pos < end:
        number, wire, value, pos = read_field(buf, pos, end)
        if number != 1:
            continue
        if wire != 2:
            raise Malformed(f"list item has wire type {WIRE_NAMES[wire]}")
        items.append(_value(item_field, buf, value, pos, state))
    return items


def _value(field: t.Field, buf: bytes, start: int, end: int, state: Decoding) -> Any:
    """A length-delimited value of `field`'s type (one item of a list, or a map value)."""
    kind = field.kind
    if kind == t.STR:
        return text(buf, start, end)
    if kind == t.BYTES:
        return base64.b64encode(buf[start:end]).decode("ascii")
    if kind == t.MSG:
        if field.wrapper:
            return _wrapped(field, buf, start, end, state)
        message = state.table[field.message]
        out = message.zero_json()
        _decode_into(buf, start, end, message, state, out)
        return out
    return _special(kind, buf, start, end, state)


def _zero_value(field: t.Field, state: Decoding) -> Any:
    """A map value the entry left out: the zero value of its type, as Go's JSON writes it."""
    if field.kind == t.MSG:
        return None if field.wrapper else state.table[field.message].zero_json()
    if field.kind == t.BYTES:
        return ""
    if field.kind in (t.TIME, t.MICROTIME, t.RAWEXT, t.FIELDSV1, t.JSON, t.P_ARRAY, t.P_SARRAY):
        return None
    if field.kind == t.QUANTITY:
        return "0"
    if field.kind == t.P_BOOL:
        return False
    return {t.STR: "", t.F64: 0.0}.get(field.kind, 0)


def _map_entry(field: t.Field, buf: bytes, start: int, end: int, state: Decoding) -> tuple[str, Any]:
    key = ""
    value: Any = None
    found = False
    pos = start
    while pos < end:
        number, wire, at, pos = read_field(buf, pos, end)
        if number == 1:
            if wire != 2:
                raise Malformed(f"map key has wire type {WIRE_NAMES[wire]}")
            key = text(buf, at, pos)
        elif number == 2:
            if field.kind in t.VARINTS:
                if wire != 0:
                    raise Malformed(f"map value has wire type {WIRE_NAMES[wire]}")
                value = _scalar(field.kind, at)
            elif wire != 2:
                raise Malformed(f"map value has wire type {WIRE_NAMES[wire]}")
            else:
                value = _value(field, buf, at, pos, state)
            found = True
    return key, value if found else _zero_value(field, state)


def _decode_into(buf: bytes, start: int, end: int, message: t.Message, state: Decoding,
                 out: dict[str, Any]) -> None:
    """Decode one message's fields into `out`, which holds its zero JSON (or an earlier occurrence)."""
    spent = message.cost
    field_of = message.fields.get
    pos = start
    while pos < end:
        number, wire, value, pos = read_field(buf, pos, end)
        field = field_of(number)
        if field is None:
            continue  # unknown field: skipped, as upstream does
        spent += field.cost
        try:
            _apply(field, wire, value, pos, buf, state, out)
        except Malformed as e:
            if field.name:
                e.path.insert(0, field.name)
            raise
    # Settled once per message (nested ones settle as they end): what one message's own fields add
    # beyond the body's bytes is a small multiple of them, so the check cannot be outrun by much.
    state.left -= spent
    if state.left < 0:
        raise TooLarge


def _apply(field: t.Field, wire: int, value: int, end: int, buf: bytes, state: Decoding,
           out: dict[str, Any]) -> None:
    kind = field.kind
    name = field.name
    if field.map:
        if wire != 2:
            raise Malformed(f"wire type {WIRE_NAMES[wire]} where a map entry was expected")
        key, item = _map_entry(field, buf, value, end, state)
        entries = out.get(name)
        if entries is None:
            entries = out[name] = {}
        entries[key] = item
        return
    if kind in t.VARINTS:
        if wire == 0:
            scalar = _scalar(kind, value)
            if field.repeated:
                _list(out, name).append(scalar)
            else:
                _set(field, out, scalar)
            return
        if wire == 2 and field.repeated:  # packed
            items = _list(out, name)
            pos = value
            while pos < end:
                item, pos = read_varint(buf, pos, end)
                items.append(_scalar(kind, item))
            if not items:
                del out[name]
            return
        raise Malformed(f"wire type {WIRE_NAMES[wire]} where a varint was expected")
    if kind == t.F64:
        if wire == 1:
            number = struct.unpack_from("<d", buf, value)[0]
            if field.repeated:
                _list(out, name).append(number)
            else:
                _set(field, out, number)
            return
        raise Malformed(f"wire type {WIRE_NAMES[wire]} where a 64-bit value was expected")
    if wire != 2:
        raise Malformed(f"wire type {WIRE_NAMES[wire]} where length-delimited data was expected")
    if field.inline:
        _decode_into(buf, value, end, state.table[field.message], state, out)
    elif field.repeated:
        _list(out, name).append(_value(field, buf, value, end, state))
    elif kind == t.MSG and not field.wrapper:
        # A repeated occurrence of a singular message merges into the first, as in proto.
        sub = out.get(name)
        if not isinstance(sub, dict):
            sub = out[name] = state.table[field.message].zero_json()
        _decode_into(buf, value, end, state.table[field.message], state, sub)
    else:
        item = _value(field, buf, value, end, state)
        if field.wrapper and not item and not field.keep:
            out.pop(name, None)  # an empty slice under omitempty
        elif kind in (t.STR, t.BYTES):
            _set(field, out, item)
        elif item is None and field.omitzero:
            out.pop(name, None)
        else:
            out[name] = item


def _set(field: t.Field, out: dict[str, Any], value: Any) -> None:
    """A singular scalar: Go's JSON leaves a zero non-pointer out under omitempty (or omitzero)."""
    if value or (field.nilable and field.kind != t.BYTES) or (field.keep and not field.omitzero):
        out[field.name] = value
    else:
        out.pop(field.name, None)


def _list(out: dict[str, Any], name: str) -> list[Any]:
    items: list[Any] | None = out.get(name)
    if items is None:  # absent, or the null of the zero JSON
        items = out[name] = []
    return items


def decode_message(buf: bytes, start: int, end: int, *, message: str, state: Decoding) -> dict[str, Any]:
    """The JSON dict of one message at `buf[start:end]`."""
    compiled = state.table[message]
    out = compiled.zero_json()
    _decode_into(buf, start, end, compiled, state, out)
    return out
