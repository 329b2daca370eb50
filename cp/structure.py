"""Structural decoding checks against the official schemas: what Go's JSON decoding into the typed
object would reject (wrong JSON types, unparsable quantities and times) or flag (unknown fields).

Each kind's schema is compiled once into a tree of `_Node`s (cached per definition, cycles allowed),
then objects are walked without further schema lookups. Error wording follows Go's
`json.UnmarshalTypeError` and sigs.k8s.io/json strict decoding, as kube-apiserver reports them
(`<Kind> in version "<v>" cannot be handled as a <Kind>: ...`). Pure.
"""

from __future__ import annotations

import base64
import functools
import re
from typing import Any

from cp import errors, quantity, schemas

# Node kinds
ANY, OBJ, MAP, ARR, STR, INT, NUM, BOOL, IOS, QTY, TIME, BYTES, MICRO = range(13)

_INT_RANGE = {"int32": (-(1 << 31), (1 << 31) - 1), "int64": (-(1 << 63), (1 << 63) - 1)}
_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"

_SPECIAL = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": IOS,
    "io.k8s.apimachinery.pkg.api.resource.Quantity": QTY,
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time": TIME,
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": MICRO,
    "io.k8s.apimachinery.pkg.runtime.RawExtension": ANY,
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1": ANY,
}
_SPECIAL_GO = {
    IOS: "intstr.IntOrString", QTY: "resource.Quantity", TIME: "v1.Time", MICRO: "v1.MicroTime",
}


def _canonical_time(value: str, *, micro: bool) -> str:
    """Re-render as Go's encoder writes metav1.Time (UTC seconds, `Z`) / MicroTime (6 fractional
    digits): clients such as kopf send `…05.608166+00:00`."""
    if not micro and len(value) == 20 and value[-1] == "Z":
        return value
    if micro and len(value) == 27 and value[-1] == "Z":
        return value
    from cp import clock

    ts = clock.parse_time(value)
    return clock.rfc3339_micro(ts) if micro else clock.rfc3339(ts)


class _Node:
    __slots__ = ("go", "item", "keep_empty", "kind", "open", "props", "struct")

    def __init__(self, kind: int, go: str = "") -> None:
        self.kind = kind
        self.go = go  # Go type, for messages
        self.props: dict[str, _Node] = {}
        self.item: _Node | None = None  # array items / map values
        self.struct = ""  # Go struct name (objects)
        self.open = False  # x-kubernetes-preserve-unknown-fields
        self.keep_empty: frozenset[str] = frozenset()  # list/map fields an empty value is kept at


# Optional list fields whose Go struct tag has no `omitempty` (kubernetes/api, the groups served):
# Go writes them even when empty. Every other optional list or map field is dropped when empty, as
# decoding into the typed object and encoding it again does upstream (`env: []` after a strategic
# merge patch deleted the last variable, `labels: {}`, ...). Required ones are always kept.
_NOT_OMITEMPTY = {
    "io.k8s.api.resource.v1.DeviceClaim": ("requests",),
    "io.k8s.api.resource.v1.AllocatedDeviceStatus": ("conditions",),
    "io.k8s.api.core.v1.ProjectedVolumeSource": ("sources",),
    "io.k8s.api.core.v1.ContainerImage": ("names",),
    "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerStatus": ("currentMetrics",),
}


class StructureError(Exception):
    """A decoding error; the caller wraps it with the kind and version."""


_ANY = _Node(ANY, "interface {}")
_by_def: dict[str, _Node] = {}


def _go_name(defname: str) -> str:
    parts = defname.split(".")
    return f"{parts[-2]}.{parts[-1]}" if len(parts) >= 2 else defname


def _types(schema: dict[str, Any]) -> tuple[str, ...]:
    t = schema.get("type")
    if isinstance(t, str):
        return (t,)
    if isinstance(t, list):
        return tuple(x for x in t if x != "null")
    return ()


def _compile(schema: dict[str, Any] | None) -> _Node:
    if not schema:
        return _ANY
    name = schemas.ref_name(schema)
    if name is None:
        all_of = schema.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
            return _compile(all_of[0])
        return _compile_inline(schema, "")
    node = _by_def.get(name)
    if node is not None:
        return node
    special = _SPECIAL.get(name)
    if special is not None:
        node = _Node(special, _SPECIAL_GO.get(special, "interface {}"))
        _by_def[name] = node
        return node
    definition = schemas.definitions().get(name) or {}
    node = _Node(OBJ, _go_name(name))
    _by_def[name] = node  # before recursing: definitions may be recursive
    filled = _compile_inline(definition, name)
    node.kind, node.go, node.props, node.item = filled.kind, filled.go or node.go, filled.props, filled.item
    node.struct, node.open, node.keep_empty = filled.struct, filled.open, filled.keep_empty
    return node


def _compile_inline(schema: dict[str, Any], defname: str) -> _Node:
    if "oneOf" in schema:
        return _ANY
    types = _types(schema)
    fmt = schema.get("format")
    kind = types[0] if len(types) == 1 else ""
    if kind == "object" or (not kind and ("properties" in schema or "additionalProperties" in schema)):
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        if isinstance(props, dict) and props:
            node = _Node(OBJ, _go_name(defname) if defname else "struct")
            node.struct = defname.rsplit(".", 1)[-1] if defname else ""
            node.open = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
            node.props = {k: _compile(v) for k, v in props.items() if isinstance(v, dict)}
            required = schema.get("required")
            node.keep_empty = frozenset((required if isinstance(required, list) else [])
                                        + list(_NOT_OMITEMPTY.get(defname, ())))
            return node
        if isinstance(extra, dict):
            node = _Node(MAP)
            node.item = _compile(extra)
            node.go = f"map[string]{node.item.go}"
            return node
        return _Node(ANY, "map[string]interface {}")
    if kind == "array":
        node = _Node(ARR)
        items = schema.get("items")
        node.item = _compile(items if isinstance(items, dict) else None)
        node.go = f"[]{node.item.go}"
        return node
    if kind == "string":
        if fmt == "date-time":
            return _Node(TIME, "v1.Time")
        if fmt == "byte":
            return _Node(BYTES, "[]uint8")
        return _Node(STR, "string")
    if kind == "integer":
        return _Node(INT, fmt if fmt in _INT_RANGE else "int64")
    if kind == "number":
        return _Node(NUM, "float64")
    if kind == "boolean":
        return _Node(BOOL, "bool")
    return _ANY


@functools.cache
def root_node(group: str, version: str, kind: str) -> _Node | None:
    """The compiled walker of a kind, None when the kind has no official schema."""
    name = schemas.name_for(group, version, kind)
    if name is None:
        return None
    return _compile({"$ref": f"#/$defs/{name}"})


@functools.cache
def object_meta_node() -> _Node:
    return _compile({"$ref": f"#/$defs/{_OBJECT_META}"})


def _json_kind(value: Any) -> str:
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null"


class _Walk:
    __slots__ = ("drop", "unknown")

    def __init__(self, drop: bool) -> None:
        self.unknown: list[str] = []
        self.drop = drop


def _type_error(value: Any, node: _Node, struct: str, gopath: str, *, shown: str = "") -> StructureError:
    what = shown or _json_kind(value)
    if struct or gopath:
        return StructureError(f"json: cannot unmarshal {what} into Go struct field {struct}.{gopath} "
                              f"of type {node.go}")
    return StructureError(f"json: cannot unmarshal {what} into Go value of type {node.go}")


def _walk(value: Any, node: _Node, path: str, gopath: str, struct: str, w: _Walk) -> Any:
    k = node.kind
    if k == OBJ:
        if not isinstance(value, dict):
            raise _type_error(value, node, struct, gopath)
        props = node.props
        sname = node.struct or struct
        drops: list[str] | None = None
        for key, sub in value.items():
            child = props.get(key)
            if child is None:
                if node.open:
                    continue
                w.unknown.append(f"{path}.{key}" if path else key)
                if w.drop:
                    if drops is None:
                        drops = []
                    drops.append(key)
                continue
            ck = child.kind
            if sub is None or (not sub and ((ck == ARR and type(sub) is list) or (ck == MAP and type(sub) is dict))
                               and key not in node.keep_empty):
                if drops is None:
                    drops = []
                drops.append(key)
                continue
            if ck == STR:
                if not isinstance(sub, str):
                    raise _type_error(sub, child, sname, f"{gopath}.{key}" if gopath else key)
                continue
            if ck == ANY:
                continue
            if ck == QTY:
                value[key] = _quantity(sub)
                continue
            if ck in (TIME, MICRO, BYTES):
                value[key] = _walk(sub, child, "", "", sname, w)
                continue
            _walk(sub, child, f"{path}.{key}" if path else key, f"{gopath}.{key}" if gopath else key,
                  sname, w)
        if drops:
            for key in drops:
                del value[key]
        return value
    if k == STR:
        if not isinstance(value, str):
            raise _type_error(value, node, struct, gopath)
        return value
    if k == ARR:
        if not isinstance(value, list):
            raise _type_error(value, node, struct, gopath)
        item = node.item
        assert item is not None
        ik = item.kind
        if ik == STR:
            for v in value:
                if not isinstance(v, str) and v is not None:
                    raise _type_error(v, item, struct, gopath)
            return value
        if ik == ANY:
            return value
        if ik == QTY:
            value[:] = [None if v is None else _quantity(v) for v in value]
            return value
        for i, v in enumerate(value):
            if v is not None:
                _walk(v, item, f"{path}[{i}]", gopath, struct, w)
        return value
    if k == MAP:
        if not isinstance(value, dict):
            raise _type_error(value, node, struct, gopath)
        item = node.item
        assert item is not None
        ik = item.kind
        if ik == STR:
            for v in value.values():
                if not isinstance(v, str) and v is not None:
                    raise _type_error(v, item, struct, gopath)
            return value
        if ik == ANY:
            return value
        if ik == QTY:
            for key, v in value.items():
                if v is not None:
                    value[key] = _quantity(v)
            return value
        if ik == BYTES:  # stored as Go encodes the decoded bytes again
            for key, v in value.items():
                if v is not None:
                    value[key] = _walk(v, item, "", "", struct, w)
            return value
        for key, v in value.items():
            if v is not None:
                _walk(v, item, f"{path}.{key}", f"{gopath}.{key}", struct, w)
        return value
    if k == INT:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _type_error(value, node, struct, gopath)
        if isinstance(value, float):
            raise _type_error(value, node, struct, gopath, shown=f"number {value!r}")
        lo, hi = _INT_RANGE.get(node.go, _INT_RANGE["int64"])
        if not lo <= value <= hi:
            raise _type_error(value, node, struct, gopath, shown=f"number {value}")
        return value
    if k == BOOL:
        if not isinstance(value, bool):
            raise _type_error(value, node, struct, gopath)
        return value
    if k == NUM:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _type_error(value, node, struct, gopath)
        return value
    if k == QTY:
        return _quantity(value)
    if k == IOS:
        if isinstance(value, str):
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise StructureError(f"json: cannot unmarshal {_json_kind(value)} into Go value of type int32")
        if isinstance(value, float) or not -(1 << 31) <= value < (1 << 31):
            raise StructureError(f"json: cannot unmarshal number {value!r} into Go value of type int32")
        return value
    if k in (TIME, MICRO):
        if not isinstance(value, str):
            raise StructureError(f"json: cannot unmarshal {_json_kind(value)} into Go value of type string")
        if not _TIME.match(value):
            raise StructureError(f'parsing time "{value}" as "2006-01-02T15:04:05Z07:00": '
                                 f'cannot parse "{value}" as "2006"')
        return _canonical_time(value, micro=k == MICRO)
    if k == BYTES:
        if not isinstance(value, str):
            raise _type_error(value, node, struct, gopath)
        decoded, bad = go_b64decode(value)
        if bad >= 0:
            raise StructureError(f"illegal base64 data at input byte {bad}")
        return base64.b64encode(decoded).decode()
    return value


def _quantity(value: Any) -> str:
    """Parse a Quantity and return its canonical string (upstream stores quantities re-encoded)."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise StructureError(quantity.FORMAT_ERROR)
    try:
        return quantity.canonical(value)
    except quantity.QuantityError as exc:
        raise StructureError(str(exc)) from None


_B64 = {c: i for i, c in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")}


def go_b64decode(text: str) -> tuple[bytes, int]:
    """Decode as Go's `base64.StdEncoding.Decode` (what JSON decoding of a `[]byte` field uses):
    padding required, `\\r` and `\\n` skipped anywhere, non-zero trailing bits accepted. Returns the
    bytes and -1, or what was decoded and the offset Go's `CorruptInputError` reports."""
    src = text.encode("utf-8", "surrogatepass")
    out = bytearray()
    si, n = 0, len(src)
    while si < n:
        quantum: list[int] = []
        while len(quantum) < 4:
            if si == n:
                if not quantum:
                    return bytes(out), -1
                return bytes(out), si - len(quantum)
            ch = src[si]
            si += 1
            if chr(ch) in _B64:
                quantum.append(_B64[chr(ch)])
                continue
            if ch in (0x0A, 0x0D):
                continue
            if ch != 0x3D or len(quantum) < 2:  # not '=', or padding too early
                return bytes(out), si - 1
            if len(quantum) == 2:  # "==" expected; the first one is read
                while si < n and src[si] in (0x0A, 0x0D):
                    si += 1
                if si == n:
                    return bytes(out), n
                if src[si] != 0x3D:
                    return bytes(out), si - 1
                si += 1
            while si < n and src[si] in (0x0A, 0x0D):
                si += 1
            if si < n:  # trailing data after the padding
                return bytes(out), si
            break
        val = 0
        for q in quantum:
            val = val << 6 | q
        val <<= 6 * (4 - len(quantum))
        out += val.to_bytes(3, "big")[: len(quantum) - 1]
    return bytes(out), -1


def unknown_field_warnings(paths: list[str]) -> list[str]:
    """How strict decoding names unknown fields, in Strict's error and in Warn's warnings."""
    return [f'unknown field "{p}"' for p in paths]


def check(obj: dict[str, Any], *, group: str, version: str, kind: str,
          field_validation: str) -> tuple[dict[str, Any], list[str]]:
    node = root_node(group, version, kind)
    w = _Walk(drop=field_validation != "Strict")
    try:
        if node is None:
            meta = obj.get("metadata")
            if meta is not None:
                _walk(meta, object_meta_node(), "metadata", "metadata", "", w)
        else:
            _walk(obj, node, "", "", kind, w)
    except StructureError as exc:
        raise errors.BadRequest(f'{kind} in version "{version}" cannot be handled as a {kind}: {exc}') from None
    if not w.unknown:
        return obj, []
    fields = unknown_field_warnings(w.unknown)
    if field_validation == "Strict":
        raise errors.BadRequest(f'{kind} in version "{version}" cannot be handled as a {kind}: '
                                f'strict decoding error: {", ".join(fields)}')
    if field_validation == "Ignore":
        return obj, []
    return obj, fields
