"""Decoding of Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`).

Since 1.35, client-go's typed clients send writes as protobuf and never fall back to JSON
on a 415 (`../shared/reference/kubectl-compat.md` §7). Observed with kubectl 1.37.1, the
protobuf writers to kinds we serve are `create namespace`, `create configmap`, `create
deployment`, `autoscale` (an autoscaling/v2 HPA), `debug` (the Pod it creates, for
`--copy-to` and `node/...`) and `drain --disable-eviction` (DeleteOptions in the DELETE
body); `drain`'s Evictions, `run`, `create -f`, `apply`, `delete`, `scale` and the patching
commands send JSON. Go controllers and DRA drivers built on client-go send protobuf for
every built-in kind, hence the tables cover all the kinds in `cp.resources`.

A body is the 4-byte prefix `k8s\\x00` followed by a `runtime.Unknown` message: `typeMeta`
(apiVersion, kind), `raw` (the typed message), `contentEncoding` and `contentType` (both
empty). `decode` turns it into the dict the JSON path would have produced from the same
object as Go's `encoding/json` writes it:

- JSON field names; inlined Go structs (`LocalObjectReference`, `ProbeHandler`,
  `VolumeSource`...) merge into their parent;
- scalars that Go writes with `omitempty` are left out when zero. gogo-protobuf puts every
  non-pointer field on the wire even when zero, so a scalar that is present is kept only
  when it is a pointer in Go (`replicas`, `immutable`...) or has no `omitempty` (these
  carry `!` in the tables); nested messages that are present are always kept, as Go's
  JSON writes `"spec": {}`;
- empty lists and maps are left out (the wire cannot tell nil from empty), except that a
  list Go writes without `omitempty` (`containers`, HPA `status.currentMetrics`...) is
  `null` when absent, as Go writes a nil slice;
- `Time` is RFC 3339 in seconds, `MicroTime` with six fractional digits, and a zero time
  is `null` (left out for `creationTimestamp`, which is `omitzero`); `Quantity` is its
  string; `IntOrString` an int or a string; `bytes` values (ConfigMap `binaryData`) are
  base64; `RawExtension` and `FieldsV1` are the JSON they carry.

Fields the tables do not know are skipped, as upstream does, so `fieldValidation=Strict`
cannot flag them. The message descriptions follow the `generated.proto` files of
kubernetes/api and apimachinery for 1.37 (numbers from there; JSON names and pointer/
omitempty facts from `types.go`). Known gaps: four alpha fields added late in 1.37 whose
field numbers were not available: `NodeSystemInfo.runningInUserNamespace`,
`DeviceCounterConsumption.compatibilityGroups` and `derivedAttributes` of
`ExactDeviceRequest`/`DeviceSubRequest`; they are dropped if sent.

The message descriptions are `cp/protobuf_messages.py`. Pure; no I/O. The tables are compiled on the
first call.
"""

from __future__ import annotations

import base64
import datetime
import functools
import json
from typing import Any

from cp import bodies, errors
from cp.protobuf_messages import CORE_PKG, META_PKG, PACKAGES, message_for, supported_kinds

__all__ = ["MAGIC", "PROTOBUF", "Field", "Message", "decode", "message_for", "messages", "supported_kinds"]

PROTOBUF = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"

# --------------------------------------------------------------------------------------------
# Compiled form.
# --------------------------------------------------------------------------------------------

# Field kinds.
(_STR, _INT64, _INT32, _BOOL, _BYTES, _MSG,
 _TIME, _MICROTIME, _QUANTITY, _INTSTR, _RAWEXT, _FIELDSV1) = range(12)
_SCALARS = {"s": _STR, "i64": _INT64, "i32": _INT32, "bool": _BOOL, "bytes": _BYTES}
_SPECIALS = {"Time": _TIME, "MicroTime": _MICROTIME, "Quantity": _QUANTITY, "IntOrString": _INTSTR,
             "RawExtension": _RAWEXT, "FieldsV1": _FIELDSV1}
_VARINT_KINDS = frozenset((_INT64, _INT32, _BOOL))


class Field:
    """One compiled field of a message description.

    `cost`: what one occurrence adds to the decoded JSON besides its value's own bytes (which the body
    holds): `"name":` and a comma for a singular field, quotes and separators for a list item (the list's
    name is not counted) or a map entry, nothing for an inlined struct (its fields count themselves)."""

    __slots__ = ("cost", "inline", "keep", "kind", "map", "message", "name", "omitzero", "repeated")

    def __init__(self, *, name: str, kind: int, message: str, repeated: bool, map: bool,
                 keep: bool, omitzero: bool, inline: bool) -> None:
        self.name = name
        self.kind = kind
        self.message = message  # full name, for _MSG and inlined fields
        self.repeated = repeated
        self.map = map
        self.keep = keep
        self.omitzero = omitzero
        self.inline = inline
        self.cost = 0 if inline else 6 if map else 3 if repeated else len(name) + 4


class Message:
    """A compiled description: fields by number, and the lists that are `null` when absent.

    `cost`: what one occurrence adds to the decoded JSON by itself (braces and its `"list":null`s)."""

    __slots__ = ("cost", "fields", "nulls")

    def __init__(self, *, fields: dict[int, Field]) -> None:
        self.fields = fields
        self.nulls: tuple[str, ...] = ()
        self.cost = 2


def _resolve(*, name: str, package: str) -> str:
    for pkg in (package, META_PKG, CORE_PKG):
        if name in PACKAGES[pkg]:
            return f"{pkg}.{name}"
    raise ValueError(f"protobuf tables: unknown message {name!r} referenced from {package}")


def _compile_field(*, token: str, package: str) -> tuple[int, Field]:
    number, _, rest = token.strip().partition(" ")
    inline = rest.startswith("...")
    if inline:
        name, type_, flag = "", rest[3:], ""
    else:
        flag = rest[-1] if rest[-1] in "!?" else ""
        name, _, type_ = rest.rstrip("!?").partition(":")
    type_ = type_ or "s"
    repeated = type_.startswith("[")
    is_map = type_.startswith("{")
    if repeated or is_map:
        type_ = type_[1:-1]
    message = ""
    if type_ in _SCALARS:
        kind = _SCALARS[type_]
        if is_map and kind not in (_STR, _BYTES):
            raise ValueError(f"protobuf tables: map of {type_} is not supported ({token!r})")
    elif type_ in _SPECIALS:
        kind = _SPECIALS[type_]
    else:
        kind = _MSG
        message = _resolve(name=type_, package=package)
    return int(number), Field(name=name, kind=kind, message=message, repeated=repeated, map=is_map,
                               keep=flag == "!", omitzero=flag == "?", inline=inline)


@functools.cache
def messages() -> dict[str, Message]:
    """Every message description, by full name (e.g. `io.k8s.api.core.v1.PodSpec`)."""
    out: dict[str, Message] = {}
    for package, table in PACKAGES.items():
        for name, spec in table.items():
            fields: dict[int, Field] = {}
            for token in spec.split(","):
                number, field = _compile_field(token=token, package=package)
                if number in fields:
                    raise ValueError(f"protobuf tables: {name} repeats field {number}")
                fields[number] = field
            out[f"{package}.{name}"] = Message(fields=fields)

    def nulls(message: Message) -> tuple[str, ...]:
        names: list[str] = []
        for field in message.fields.values():
            if field.inline:
                names.extend(nulls(out[field.message]))
            elif field.repeated and field.keep:
                names.append(field.name)
        return tuple(names)

    for message in out.values():
        message.nulls = nulls(message)
        message.cost = 2 + sum(len(name) + 8 for name in message.nulls)
    return out


# --------------------------------------------------------------------------------------------
# Wire format.
# --------------------------------------------------------------------------------------------

class _Decoding:
    """One body's decoding: the message tables, and how many bytes of JSON the output may still grow by.

    The body's own bytes are the output's content (strings, numbers, base64 of bytes within a small
    factor), so the budget starts at `bodies.MAX_BYTES` less the body's length, and every field occurrence
    and message spends its `cost` (the names, braces and nulls the wire does not carry). A body whose
    output would pass the bound stops there, before building it: a tag byte can stand for a 30-byte JSON
    key, and an empty message for a dict with nulls, so a 3 MiB body could otherwise decode into
    hundreds of megabytes."""

    __slots__ = ("left", "table")

    def __init__(self, *, table: dict[str, Message], body_size: int) -> None:
        self.table = table
        self.left = bodies.MAX_BYTES - body_size


class _TooLarge(Exception):
    pass


class _Malformed(Exception):
    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail
        self.path: list[str] = []


_WIRE_NAMES = ("varint", "64-bit", "length-delimited", "start-group", "end-group", "32-bit")
_MAX_GROUP_DEPTH = 64


def _varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise _Malformed("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise _Malformed("varint longer than 10 bytes")


def _read_field(buf: bytes, pos: int, end: int) -> tuple[int, int, int, int]:
    """One field at `pos`: (number, wire type, value, next position).

    The value is the integer for varints, and the start offset for length-delimited fields
    (the data is `buf[value:next]`); it is 0 for the skipped fixed-size and group fields.
    """
    tag, pos = _varint(buf, pos, end)
    number, wire = tag >> 3, tag & 7
    if number == 0:
        raise _Malformed("field number 0")
    if wire == 0:
        value, pos = _varint(buf, pos, end)
        return number, wire, value, pos
    if wire == 2:
        length, pos = _varint(buf, pos, end)
        if length > end - pos:
            raise _Malformed("truncated length-delimited field")
        return number, wire, pos, pos + length
    if wire in (1, 5):
        pos += 8 if wire == 1 else 4
        if pos > end:
            raise _Malformed("truncated fixed-size field")
        return number, wire, 0, pos
    if wire == 3:
        return number, wire, 0, _skip_group(buf, pos, end, number)
    raise _Malformed(f"invalid wire type {wire}")


def _skip_group(buf: bytes, pos: int, end: int, number: int) -> int:
    """Skip a (long deprecated) group up to its matching end-group tag."""
    open_groups = [number]
    while open_groups:
        if pos >= end:
            raise _Malformed("unterminated group")
        tag, pos = _varint(buf, pos, end)
        inner, wire = tag >> 3, tag & 7
        if wire == 4:
            if inner != open_groups.pop():
                raise _Malformed("mismatched end-group")
        elif wire == 3:
            open_groups.append(inner)
            if len(open_groups) > _MAX_GROUP_DEPTH:
                raise _Malformed("groups nested too deeply")
        elif wire == 0:
            _, pos = _varint(buf, pos, end)
        elif wire == 2:
            length, pos = _varint(buf, pos, end)
            pos += length
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        else:
            raise _Malformed(f"invalid wire type {wire}")
        if pos > end:
            raise _Malformed("truncated group")
    return pos


def _signed64(value: int) -> int:
    value &= 0xFFFFFFFFFFFFFFFF
    return value - (1 << 64) if value >= 1 << 63 else value


def _signed32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def _text(buf: bytes, start: int, end: int) -> str:
    # Go does not check UTF-8 here; its JSON encoder then writes U+FFFD for bad bytes.
    return buf[start:end].decode("utf-8", "replace")


# --------------------------------------------------------------------------------------------
# Decoding.
# --------------------------------------------------------------------------------------------

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def _time(buf: bytes, start: int, end: int, *, micro: bool) -> str | None:
    """metav1.Time / MicroTime: {1: seconds, 2: nanos}; an empty message is the zero time."""
    if start == end:
        return None
    seconds = nanos = 0
    pos = start
    while pos < end:
        number, wire, value, pos = _read_field(buf, pos, end)
        if number in (1, 2):
            if wire != 0:
                raise _Malformed(f"time field {number} has wire type {_WIRE_NAMES[wire]}")
            if number == 1:
                seconds = _signed64(value)
            else:
                nanos = _signed32(value)
    try:
        t = _EPOCH + datetime.timedelta(seconds=seconds, microseconds=nanos // 1000)
    except OverflowError:
        raise _Malformed(f"time out of range: {seconds}s") from None
    text = (f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}")
    return f"{text}.{t.microsecond:06d}Z" if micro else f"{text}Z"


def _quantity(buf: bytes, start: int, end: int) -> str:
    """resource.Quantity: {1: string}, already in canonical form; absent means zero."""
    out = "0"
    pos = start
    while pos < end:
        number, wire, value, pos = _read_field(buf, pos, end)
        if number == 1:
            if wire != 2:
                raise _Malformed(f"quantity has wire type {_WIRE_NAMES[wire]}")
            out = _text(buf, value, pos) or "0"
    return out


def _int_or_string(buf: bytes, start: int, end: int) -> int | str:
    """intstr.IntOrString: {1: type (0 int, 1 string), 2: intVal, 3: strVal}."""
    type_, int_val, str_val = 0, 0, ""
    pos = start
    while pos < end:
        number, wire, value, pos = _read_field(buf, pos, end)
        if number in (1, 2):
            if wire != 0:
                raise _Malformed(f"int-or-string field {number} has wire type {_WIRE_NAMES[wire]}")
            if number == 1:
                type_ = _signed64(value)
            else:
                int_val = _signed32(value)
        elif number == 3:
            if wire != 2:
                raise _Malformed(f"int-or-string field 3 has wire type {_WIRE_NAMES[wire]}")
            str_val = _text(buf, value, pos)
    return str_val if type_ == 1 else int_val


def _embedded_json(buf: bytes, start: int, end: int, *, what: str) -> Any:
    """RawExtension / FieldsV1: {1: raw}, where raw is JSON; no data is null."""
    raw = b""
    pos = start
    while pos < end:
        number, wire, value, pos = _read_field(buf, pos, end)
        if number == 1:
            if wire != 2:
                raise _Malformed(f"{what} has wire type {_WIRE_NAMES[wire]}")
            raw = buf[value:pos]
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        raise _Malformed(f"{what} does not hold JSON") from None


def _special(kind: int, buf: bytes, start: int, end: int) -> Any:
    if kind == _TIME:
        return _time(buf, start, end, micro=False)
    if kind == _MICROTIME:
        return _time(buf, start, end, micro=True)
    if kind == _QUANTITY:
        return _quantity(buf, start, end)
    if kind == _INTSTR:
        return _int_or_string(buf, start, end)
    return _embedded_json(buf, start, end, what="RawExtension" if kind == _RAWEXT else "FieldsV1")


def _scalar(kind: int, value: int) -> int | bool:
    if kind == _INT64:
        return _signed64(value)
    if kind == _INT32:
        return _signed32(value)
    return value != 0


def _value(field: Field, buf: bytes, start: int, end: int, state: _Decoding) -> Any:
    """A length-delimited value of `field`'s type (not a map)."""
    kind = field.kind
    if kind == _STR:
        return _text(buf, start, end)
    if kind == _BYTES:
        return base64.b64encode(buf[start:end]).decode("ascii")
    if kind == _MSG:
        out: dict[str, Any] = {}
        _decode_into(buf, start, end, state.table[field.message], state, out)
        return out
    return _special(kind, buf, start, end)


def _map_entry(field: Field, buf: bytes, start: int, end: int,
               state: _Decoding) -> tuple[str, Any]:
    key = ""
    value: Any = None
    pos = start
    while pos < end:
        number, wire, at, pos = _read_field(buf, pos, end)
        if number == 1:
            if wire != 2:
                raise _Malformed(f"map key has wire type {_WIRE_NAMES[wire]}")
            key = _text(buf, at, pos)
        elif number == 2:
            if wire != 2:
                raise _Malformed(f"map value has wire type {_WIRE_NAMES[wire]}")
            value = _value(field, buf, at, pos, state)
    if value is None:  # absent value: the zero value of its type
        value = _value(field, buf, end, end, state)
    return key, value


def _decode_into(buf: bytes, start: int, end: int, message: Message, state: _Decoding,
                 out: dict[str, Any]) -> None:
    spent = message.cost
    field_of = message.fields.get
    pos = start
    while pos < end:
        number, wire, value, pos = _read_field(buf, pos, end)
        field = field_of(number)
        if field is None:
            continue  # unknown field: skipped, as upstream does
        spent += field.cost
        try:
            _apply(field, wire, value, pos, buf, state, out)
        except _Malformed as e:
            if field.name:
                e.path.insert(0, field.name)
            raise
    # Settled once per message (nested ones settle as they end): what one message's own fields add
    # beyond the body's bytes is a small multiple of them, so the check cannot be outrun by much.
    state.left -= spent
    if state.left < 0:
        raise _TooLarge
    for name in message.nulls:
        out.setdefault(name, None)


def _apply(field: Field, wire: int, value: int, end: int, buf: bytes, state: _Decoding,
           out: dict[str, Any]) -> None:
    kind = field.kind
    name = field.name
    if kind in _VARINT_KINDS and not field.map:
        if wire == 0:
            scalar = _scalar(kind, value)
            if field.repeated:
                _list(out, name).append(scalar)
            elif scalar or field.keep:
                out[name] = scalar
            else:
                out.pop(name, None)
            return
        if wire == 2 and field.repeated:  # packed
            items = _list(out, name)
            pos = value
            while pos < end:
                item, pos = _varint(buf, pos, end)
                items.append(_scalar(kind, item))
            if not items:
                del out[name]
            return
        raise _Malformed(f"wire type {_WIRE_NAMES[wire]} where a varint was expected")
    if wire != 2:
        raise _Malformed(f"wire type {_WIRE_NAMES[wire]} where length-delimited data was expected")
    if field.map:
        key, item = _map_entry(field, buf, value, end, state)
        entries = out.get(name)
        if entries is None:
            entries = out[name] = {}
        entries[key] = item
    elif field.inline:
        _decode_into(buf, value, end, state.table[field.message], state, out)
    elif field.repeated:
        _list(out, name).append(_value(field, buf, value, end, state))
    elif kind == _MSG:
        # A repeated occurrence of a singular message merges into the first, as in proto.
        sub = out.get(name)
        if not isinstance(sub, dict):
            sub = out[name] = {}
        _decode_into(buf, value, end, state.table[field.message], state, sub)
    else:
        item = _value(field, buf, value, end, state)
        if (kind in (_STR, _BYTES) and not item and not field.keep) or (item is None and field.omitzero):
            out.pop(name, None)
        else:
            out[name] = item


def _list(out: dict[str, Any], name: str) -> list[Any]:
    items: list[Any] | None = out.get(name)
    if items is None:  # absent, or a null from an earlier occurrence of the parent message
        items = out[name] = []
    return items


def _envelope(body: bytes) -> tuple[str, str, int, int]:
    """The runtime.Unknown after the prefix: (apiVersion, kind, raw start, raw end)."""
    api_version = kind = encoding = content_type = ""
    raw = (0, 0)
    pos, end = len(MAGIC), len(body)
    while pos < end:
        number, wire, value, pos = _read_field(body, pos, end)
        if number not in (1, 2, 3, 4):
            continue
        if wire != 2:
            raise _Malformed(f"runtime.Unknown field {number} has wire type {_WIRE_NAMES[wire]}")
        if number == 1:
            tpos = value
            while tpos < pos:
                tnum, twire, tvalue, tpos = _read_field(body, tpos, pos)
                if tnum in (1, 2):
                    if twire != 2:
                        raise _Malformed(f"typeMeta field {tnum} has wire type {_WIRE_NAMES[twire]}")
                    if tnum == 1:
                        api_version = _text(body, tvalue, tpos)
                    else:
                        kind = _text(body, tvalue, tpos)
        elif number == 2:
            raw = (value, pos)
        elif number == 3:
            encoding = _text(body, value, pos)
        else:
            content_type = _text(body, value, pos)
    if encoding:
        raise _Malformed(f"unsupported contentEncoding {encoding!r}")
    if content_type and content_type != PROTOBUF:
        raise _Malformed(f"unsupported contentType {content_type!r} in runtime.Unknown")
    return api_version, kind, raw[0], raw[1]


def decode(body: bytes) -> dict[str, Any]:
    """Decode a protobuf request body into the JSON-shaped dict of the object it carries.

    Raises `BadRequest` for malformed data, `UnsupportedMediaType` for kinds without a
    message description here, and `RequestEntityTooLarge` when the object would be more than
    `bodies.MAX_BYTES` of JSON (see `_Decoding`).
    """
    body = bytes(body)
    if not body.startswith(MAGIC):
        raise errors.BadRequest(
            "the body is not a Kubernetes protobuf message: it must start with the prefix "
            f"{MAGIC!r} ({PROTOBUF})")
    try:
        api_version, kind, start, end = _envelope(body)
    except _Malformed as e:
        raise errors.BadRequest(f"malformed protobuf body: {e.detail}") from None
    if not kind:
        raise errors.BadRequest("malformed protobuf body: Object 'Kind' is missing")
    if not api_version:
        raise errors.BadRequest("malformed protobuf body: Object 'apiVersion' is missing")
    name = message_for(api_version=api_version, kind=kind)
    if name is None:
        raise errors.UnsupportedMediaType(
            f"this server cannot decode {kind} ({api_version}) from {PROTOBUF}; "
            "send it as application/json")
    table = messages()
    out: dict[str, Any] = {"kind": kind, "apiVersion": api_version}
    try:
        _decode_into(body, start, end, table[name], _Decoding(table=table, body_size=len(body)), out)
    except _TooLarge:
        raise bodies.too_large(f"the protobuf body for {kind} ({api_version}) decodes to more than "
                               f"{bodies.MAX_BYTES} bytes of JSON") from None
    except _Malformed as e:
        where = ".".join(e.path)
        raise errors.BadRequest(
            f"malformed protobuf body for {kind} ({api_version})"
            + (f" at {where}" if where else "") + f": {e.detail}") from None
    return out
