"""The compiled message table: `cp/protobuf/descriptors.py` (generated from upstream's `.proto` files and
Go struct tags by `tools/protobuf_tables.py`) turned into `Message`s and `Field`s, on first use.

Each message also knows its *zero JSON*: what Go's `encoding/json` writes for the zero value of the
struct (`{"spec":{"containers":null},"status":{}}` for a Pod; a non-pointer struct is never left out by
`omitempty`, a zero `Time` is `null`, a zero `Quantity` is `"0"`). Decoding starts every message from it,
so a body decodes to exactly the JSON Go would write for it, fields the sender left unset included.
Pure; no I/O.
"""

from __future__ import annotations

import functools
from typing import Any

# Field kinds.
(STR, INT32, INT64, BOOL, BYTES, F64, MSG,
 TIME, MICROTIME, QUANTITY, INTSTR, RAWEXT, FIELDSV1, JSON, P_ARRAY, P_BOOL, P_SARRAY) = range(17)
_SCALARS = {"s": STR, "i32": INT32, "i64": INT64, "bool": BOOL, "bytes": BYTES, "f64": F64}
_SPECIALS = {"Time": TIME, "MicroTime": MICROTIME, "Quantity": QUANTITY, "IntOrString": INTSTR,
             "RawExtension": RAWEXT, "FieldsV1": FIELDSV1, "JSON": JSON, "PropsOrArray": P_ARRAY,
             "PropsOrBool": P_BOOL, "PropsOrStringArray": P_SARRAY}
VARINTS = frozenset((INT32, INT64, BOOL))
# apiextensions' unions hold this message (JSONSchemaPropsOrArray, ...OrBool, ...OrStringArray).
SCHEMA_PROPS = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps"

# Wire types.
VARINT, FIXED64, LEN = 0, 1, 2


def varint(n: int) -> bytes:
    """A protobuf varint; negative numbers as their 64-bit two's complement (Go's `uint64(int32(x))`)."""
    n &= 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


class Field:
    """One compiled field.

    `nilable`: a Go pointer, `[]byte` or named slice type (on the wire only when set; kept in JSON even
    when zero). `keep`: no `omitempty` (JSON writes the zero value, or null, when unset). `omitzero`: the
    JSON tag's `omitzero`. `wrapper`: the message is a named slice type, a bare JSON array. `cost`: what one
    occurrence adds to decoded JSON besides its value's bytes (`"name":` and a comma for a singular
    field, quotes and separators for an item or entry). `tag`: the encoded key, for the field's wire type
    (varint, fixed64 or length-delimited). `absent`: the bytes Go writes for the field when JSON has no
    value for it (nothing for pointers, lists and maps; the key and a zero value otherwise), filled in by
    the encoder on first use."""

    __slots__ = ("absent", "cost", "inline", "keep", "kind", "map", "message", "name", "nilable", "number",
                 "omitzero", "repeated", "tag", "wrapper")

    def __init__(self, *, number: int, name: str, kind: int, message: str, repeated: bool, map: bool,
                 nilable: bool, keep: bool, omitzero: bool, inline: bool) -> None:
        self.number = number
        self.name = name
        self.kind = kind
        self.message = message  # full name, for MSG and inlined fields (and SCHEMA_PROPS for the unions)
        self.repeated = repeated
        self.map = map
        self.nilable = nilable
        self.keep = keep
        self.omitzero = omitzero
        self.inline = inline
        self.wrapper = False
        self.absent: bytes | None = None  # what Go writes when the JSON has no value (the encoder's cache)
        wire = VARINT if kind in VARINTS and not map else FIXED64 if kind == F64 and not map else LEN
        self.tag = varint(number << 3 | wire)
        self.cost = 0 if inline else 6 if map else 3 if repeated else len(name) + 4


class Message:
    """A compiled message: its fields by number and in wire order (by number, as Go writes them), and
    its zero JSON (`zero`: (name, value) pairs; a value that is a Message stands for that message's own
    zero JSON), with `zero_cost` its length, which decoding charges per occurrence."""

    __slots__ = ("cost", "fields", "name", "order", "wrapper", "zero", "zero_bytes")

    def __init__(self, *, name: str, fields: dict[int, Field], wrapper: bool) -> None:
        self.name = name
        self.fields = fields
        self.order = tuple(fields[n] for n in sorted(fields))
        self.wrapper = wrapper
        self.zero: tuple[tuple[str, Any], ...] = ()
        self.cost = 2
        self.zero_bytes: bytes | None = None

    def zero_json(self) -> dict[str, Any]:
        """A new dict of the zero JSON."""
        out: dict[str, Any] = {}
        for name, value in self.zero:
            out[name] = value.zero_json() if isinstance(value, Message) else value
        return out


def _resolve(token: str, *, package: str, aliases: dict[str, str]) -> str:
    alias, _, name = token.rpartition(".")
    return f"{aliases[alias]}.{name}" if alias else f"{package}.{name}"


def _compile_field(token: str, *, package: str, aliases: dict[str, str]) -> Field:
    number_text, _, rest = token.strip().partition(" ")
    number = int(number_text)
    if rest.startswith("..."):
        return Field(number=number, name="", kind=MSG, message=_resolve(rest[3:], package=package, aliases=aliases),
                     repeated=False, map=False, nilable=False, keep=False, omitzero=False, inline=True)
    flags = ""
    while rest and rest[-1] in "*!?":
        flags += rest[-1]
        rest = rest[:-1]
    name, _, type_ = rest.partition(":")
    type_ = type_ or "s"
    repeated = type_.startswith("[")
    is_map = type_.startswith("{")
    if repeated or is_map:
        type_ = type_[1:-1]
    message = ""
    if type_ in _SCALARS:
        kind = _SCALARS[type_]
    elif type_ in _SPECIALS:
        kind = _SPECIALS[type_]
        if kind in (P_ARRAY, P_BOOL, P_SARRAY):
            message = SCHEMA_PROPS
    else:
        kind = MSG
        message = _resolve(type_, package=package, aliases=aliases)
    return Field(number=number, name=name, kind=kind, message=message, repeated=repeated, map=is_map,
                 nilable="*" in flags or kind == BYTES, keep="!" in flags, omitzero="?" in flags,
                 inline=False)


_SCALAR_ZERO: dict[int, Any] = {STR: "", INT32: 0, INT64: 0, BOOL: False, F64: 0.0, BYTES: None}
# What Go's JSON writes for a zero non-pointer special: MarshalJSON of a zero Time, RawExtension, JSON or
# FieldsV1 is null, a zero Quantity "0", a zero IntOrString 0, a zero JSONSchemaPropsOrBool false.
_SPECIAL_ZERO: dict[int, Any] = {TIME: None, MICROTIME: None, QUANTITY: "0", INTSTR: 0, RAWEXT: None,
                                 FIELDSV1: None, JSON: None, P_ARRAY: None, P_BOOL: False, P_SARRAY: None}


def _zero_entries(message: Message, table: dict[str, Message]) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for field in message.order:
        if field.inline:
            out.extend(_zero_entries(table[field.message], table))
            continue
        if field.repeated or field.map or field.nilable or field.wrapper:
            if field.keep:
                out.append((field.name, None))
        elif field.omitzero:
            continue
        elif field.kind == MSG:
            out.append((field.name, table[field.message]))
        elif field.kind in _SPECIAL_ZERO:
            out.append((field.name, _SPECIAL_ZERO[field.kind]))
        elif field.keep:
            out.append((field.name, _SCALAR_ZERO[field.kind]))
    return out


@functools.cache
def messages() -> dict[str, Message]:
    """Every message of the table, by full name (`io.k8s.api.core.v1.PodSpec`); loaded and compiled on
    the first call (the data module is about 100 KB)."""
    from cp.protobuf import descriptors as data

    out: dict[str, Message] = {}
    for package, table in data.PACKAGES.items():
        for name, spec in table.items():
            fields: dict[int, Field] = {}
            for token in spec.split(",") if spec else ():
                field = _compile_field(token, package=package, aliases=data.ALIASES)
                if field.number in fields:
                    raise ValueError(f"protobuf table: {name} repeats field {field.number}")
                fields[field.number] = field
            full = f"{package}.{name}"
            out[full] = Message(name=full, fields=fields, wrapper=full in data.WRAPPERS)
    for message in out.values():
        for field in message.fields.values():
            if field.message and field.message not in out:
                raise ValueError(f"protobuf table: {message.name} refers to unknown {field.message}")
            if field.kind == MSG and out[field.message].wrapper:
                field.wrapper = True
    zero_cost: dict[str, int] = {}

    def cost(message: Message) -> int:  # the length of the zero JSON, nested zeros included
        if message.name not in zero_cost:
            total = 2
            for name, value in message.zero:
                total += len(name) + 4 + (cost(value) if isinstance(value, Message) else 4)
            zero_cost[message.name] = total
        return zero_cost[message.name]

    for message in out.values():
        message.zero = tuple(_zero_entries(message, out))
    for message in out.values():
        message.cost = cost(message)
    return out


@functools.cache
def _kinds() -> dict[tuple[str, str], str]:
    from cp.protobuf import descriptors as data

    return {(api_version, kind): message for api_version, kinds in data.KINDS.items()
            for kind, message in kinds.items()}


_OPTIONS = frozenset(("DeleteOptions", "CreateOptions", "UpdateOptions", "PatchOptions", "GetOptions",
                      "ListOptions"))
_META = "io.k8s.apimachinery.pkg.apis.meta.v1"


def message_for(*, api_version: str, kind: str) -> str | None:
    """The message of a (apiVersion, kind), or None. The options kinds are registered in every group
    version (client-go labels DeleteOptions with its client's group version)."""
    if kind in _OPTIONS:
        return f"{_META}.{kind}"
    return _kinds().get((api_version, kind))


def supported_kinds() -> list[tuple[str, str]]:
    """(apiVersion, kind) pairs with a message, besides the options kinds of any group version."""
    return sorted(_kinds())
