"""What kube-apiserver does to a custom resource with its CRD version's structural schema: pruning,
defaulting and validation. Pure.

Upstream: apiextensions-apiserver `pkg/apiserver/schema/pruning` (unknown fields dropped, their paths
kept for `fieldValidation=Strict`/`Warn`), `.../schema/defaulting` (`PruneNonNullableNullsWithoutDefaults`
and `Default`), `.../schema/objectmeta` (the `apiVersion`, `kind` and `metadata` of embedded resources),
`.../schema/listtype` (uniqueness of `x-kubernetes-list-type` `set` and `map` lists) and kube-openapi's
`validation/validate` as `pkg/apiserver/validation` runs it (`ValidateCustomResource`), with its messages
(`spec.replicas in body must be of type integer: "string"`) turned into field errors the same way.

`compile_schema` reads a version's `openAPIV3Schema` once; `Schema.prune`, `apply_defaults` and
`validate` then walk an object against that tree. The CRD's schema is expected to have passed
`cp.crd.structural.check_crd_schema`; anything it refuses is read leniently here, never raised.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any, Protocol

from cp.crd import formats, regexps
from cp.crd.values import bad_value, go_float, go_json, go_quote, go_v
from cp.errors import Cause, GoValue

_META_FIELDS = frozenset(("apiVersion", "kind", "metadata"))
# metav1.ObjectMeta's JSON fields: what an embedded resource's metadata keeps (the rest is dropped and,
# for fieldValidation=Strict/Warn, reported).
OBJECT_META_FIELDS = frozenset((
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations",
    "ownerReferences", "finalizers", "managedFields"))
_META_STRINGS = ("name", "generateName", "namespace", "selfLink", "uid", "resourceVersion")
_META_INTS = ("generation", "deletionGracePeriodSeconds")
_META_STRING_MAPS = ("labels", "annotations")


class ObjectMetaRule(Protocol):
    """Validates an embedded resource's metadata (apimachinery `ValidateObjectMeta` as upstream's
    `objectmeta.Validate` calls it: name checked as a path segment, namespaced when it has a namespace)
    and returns the causes, their fields under `path`."""

    def __call__(self, meta: dict[str, Any], *, path: str) -> list[Cause]: ...


# ---------------------------------------------------------------- reading a schema


_PY_TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "integer": (int,), "number": (int, float),
                                          "boolean": (bool,), "object": (dict,), "array": (list,)}


def _num(v: Any) -> float | int | None:
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return None


class Node:
    """One schema of the tree: the structural part (type, properties, items, additionalProperties,
    extensions, default) and the value validations kube-openapi checks."""

    __slots__ = (
        # what the walks need to know without looking (computed from the above)
        "accepts",
        "additional",
        "additional_allows",
        "additional_set",
        "all_of",
        "any_of",
        "checks_number",
        "checks_string",
        "checks_type",
        "default",
        "defaulted",
        "defaulting_children",
        "defaults_below",
        "embedded",
        "embedded_below",
        "enum",
        "enum_strings",
        "exclusive_maximum",
        "exclusive_minimum",
        "format",
        "has_default",
        "int_or_string",
        "int_range",
        "items",
        "junctors",
        "list_type",
        "lists_below",
        "map_keys",
        "max_items",
        "max_length",
        "max_properties",
        "maximum",
        "min_items",
        "min_length",
        "min_properties",
        "minimum",
        "multiple_of",
        "not_",
        "nullable",
        "one_of",
        "pattern",
        "pattern_error",
        "pattern_text",
        "preserve",
        "properties",
        "required",
        "type",
        "types",
        "unique_items",
    )

    def __init__(self, raw: Any) -> None:
        raw = raw if isinstance(raw, dict) else {}
        t = raw.get("type")
        self.type: str = t if isinstance(t, str) else ""
        self.int_or_string: bool = raw.get("x-kubernetes-int-or-string") is True
        self.types: tuple[str, ...] = (("integer", "string") if self.int_or_string
                                        else (self.type,) if self.type else ())
        self.nullable: bool = raw.get("nullable") is True
        self.has_default: bool = raw.get("default") is not None
        self.default: Any = raw.get("default")
        props = raw.get("properties")
        self.properties: dict[str, Node] = (
            {k: Node(v) for k, v in props.items()} if isinstance(props, dict) else {})
        add = raw.get("additionalProperties")
        self.additional_set: bool = isinstance(add, (dict, bool))
        self.additional: Node | None = Node(add) if isinstance(add, dict) else None
        self.additional_allows: bool = isinstance(add, dict) or add is True
        items = raw.get("items")
        self.items: Node | None = Node(items) if isinstance(items, dict) else None
        self.preserve: bool = raw.get("x-kubernetes-preserve-unknown-fields") is True
        self.embedded: bool = raw.get("x-kubernetes-embedded-resource") is True
        lt = raw.get("x-kubernetes-list-type")
        self.list_type: str | None = lt if isinstance(lt, str) else None
        keys = raw.get("x-kubernetes-list-map-keys")
        self.map_keys: tuple[str, ...] = tuple(k for k in keys if isinstance(k, str)) if isinstance(keys, list) else ()
        fmt = raw.get("format")
        self.format: str = formats.kept_format("" if self.int_or_string else self.type,
                                               fmt if isinstance(fmt, str) else "")
        enum = raw.get("enum")
        self.enum: list[Any] | None = enum if isinstance(enum, list) and enum else None
        self.maximum = _num(raw.get("maximum"))
        self.minimum = _num(raw.get("minimum"))
        self.exclusive_maximum: bool = raw.get("exclusiveMaximum") is True
        self.exclusive_minimum: bool = raw.get("exclusiveMinimum") is True
        self.multiple_of = _num(raw.get("multipleOf"))
        self.max_length = _int(raw.get("maxLength"))
        self.min_length = _int(raw.get("minLength"))
        self.max_items = _int(raw.get("maxItems"))
        self.min_items = _int(raw.get("minItems"))
        self.max_properties = _int(raw.get("maxProperties"))
        self.min_properties = _int(raw.get("minProperties"))
        self.unique_items: bool = raw.get("uniqueItems") is True
        req = raw.get("required")
        self.required: tuple[str, ...] = tuple(r for r in req if isinstance(r, str)) if isinstance(req, list) else ()
        pattern = raw.get("pattern")
        self.pattern_text: str = pattern if isinstance(pattern, str) else ""
        self.pattern: re.Pattern[str] | None = None
        self.pattern_error: str = ""
        if self.pattern_text:
            try:
                self.pattern = regexps.compile_go(self.pattern_text)  # None: RE2 syntax Python lacks
            except regexps.GoRegexpError as e:
                self.pattern_error = str(e)
        self.all_of: list[Node] = [Node(s) for s in raw.get("allOf") or () if isinstance(s, dict)] \
            if isinstance(raw.get("allOf"), list) else []
        self.any_of: list[Node] = [Node(s) for s in raw.get("anyOf") or () if isinstance(s, dict)] \
            if isinstance(raw.get("anyOf"), list) else []
        self.one_of: list[Node] = [Node(s) for s in raw.get("oneOf") or () if isinstance(s, dict)] \
            if isinstance(raw.get("oneOf"), list) else []
        not_ = raw.get("not")
        self.not_: Node | None = Node(not_) if isinstance(not_, dict) else None
        self.junctors: bool = bool(self.all_of or self.any_of or self.one_of or self.not_ is not None)
        self.checks_type: bool = bool(self.types or self.format)
        self.checks_string: bool = bool(self.max_length is not None or self.min_length is not None
                                        or self.pattern_text or self.format)
        self.checks_number: bool = bool(self.maximum is not None or self.minimum is not None
                                        or self.multiple_of is not None or self.format in ("int32", "float"))
        children = [*self.properties.values(), *(c for c in (self.additional, self.items) if c is not None)]
        self.embedded_below: bool = self.embedded or any(c.embedded_below for c in children)
        self.lists_below: bool = self.list_type in ("set", "map") or any(c.lists_below for c in children)
        self.defaults_below: bool = any(c.has_default or c.defaults_below for c in children)
        self.defaulted: tuple[tuple[str, Node], ...] = tuple((k, p) for k, p in self.properties.items() if p.has_default)
        self.defaulting_children: tuple[tuple[str, Node], ...] = tuple(
            (k, p) for k, p in self.properties.items() if p.defaults_below)
        # Shortcuts for the common leaves: the Python types a value may have to pass a schema that checks
        # nothing but its type; the string values of an enum; an integer's inclusive range.
        self.accepts: frozenset[type] | None = None
        if not (self.junctors or self.enum is not None or self.checks_string or self.checks_number
                or self.properties or self.additional_set or self.items is not None or self.required
                or self.min_items is not None or self.max_items is not None or self.unique_items
                or self.min_properties is not None or self.max_properties is not None or not self.types):
            self.accepts = frozenset(t for name in self.types for t in _PY_TYPES.get(name, ()))
        self.enum_strings: frozenset[str] = frozenset(e for e in self.enum or () if isinstance(e, str))
        self.int_range: tuple[float, float] | None = None
        if self.type == "integer" and not self.int_or_string and not self.format and self.multiple_of is None:
            low = -math.inf if self.minimum is None else self.minimum
            high = math.inf if self.maximum is None else self.maximum
            if all(isinstance(b, int) or math.isinf(b) for b in (low, high)):
                self.int_range = (low + self.exclusive_minimum, high - self.exclusive_maximum)

    def child(self, key: str) -> Node | None:
        """The schema of property `key`: a declared property, else additionalProperties' schema."""
        prop = self.properties.get(key)
        return prop if prop is not None else self.additional


# ---------------------------------------------------------------- pruning (pkg/apiserver/schema/pruning)


def _join(parent: str, key: str) -> str:
    return f"{parent}.{key}" if parent else key


def prune_value(x: Any, s: Node | None, *, is_resource_root: bool, unknown: list[str] | None = None,
                parent: str = "") -> None:
    """`pruning.PruneWithOptions`: drops the object fields `s` does not specify from `x` in place, not
    touching `apiVersion`, `kind` and `metadata` of (embedded) resources; records the dropped fields'
    paths in `unknown` when given."""
    _prune(x, s, unknown, parent, root=is_resource_root, nulls=False)


def _drops_null(s: Node | None) -> bool:
    """PruneNonNullableNullsWithoutDefaults: a null under this schema is dropped."""
    return s is not None and not s.nullable and not s.has_default


def _prune(x: Any, s: Node | None, unknown: list[str] | None, parent: str, *, root: bool = False,
           nulls: bool) -> None:
    """Pruning, and with `nulls` the removal of non-nullable, non-defaulted nulls in the same walk (upstream
    runs the second over the result of the first; the fields it looks at are those kept here)."""
    if s is not None and s.preserve:
        _skip_prune(x, s, unknown, parent, root=root, nulls=nulls)
        return
    if type(x) is dict:
        if s is None:
            if unknown is not None:
                unknown.extend(_join(parent, k) for k in x)
            x.clear()
            return
        embedded = s.embedded or root
        props = s.properties
        drop: list[str] | None = None
        for k, v in x.items():
            sub = props.get(k)
            if sub is None and embedded and k in _META_FIELDS:
                if v is None and nulls and s.additional_set and _drops_null(s.additional):
                    drop = [*(drop or ()), k]
                continue
            if sub is None and not s.additional_set:
                if unknown is not None and (k not in _META_FIELDS or parent):
                    unknown.append(_join(parent, k))
                drop = [*(drop or ()), k]
                continue
            if sub is None:
                sub = s.additional
            if v is None:
                if nulls and _drops_null(sub):
                    drop = [*(drop or ()), k]
            elif embedded and k in _META_FIELDS:
                continue
            elif type(v) is dict or type(v) is list:
                _prune(v, sub, unknown, _join(parent, k) if unknown is not None else "", nulls=nulls)
        if drop:
            for k in drop:
                del x[k]
    elif type(x) is list:
        items = s.items if s is not None else None
        for i, v in enumerate(x):
            if type(v) is dict or type(v) is list:
                _prune(v, items, unknown, f"{parent}[{i}]" if unknown is not None else "", nulls=nulls)


def _skip_prune(x: Any, s: Node, unknown: list[str] | None, parent: str, *, root: bool, nulls: bool) -> None:
    if type(x) is dict:
        embedded = s.embedded or root
        drop: list[str] | None = None
        for k, v in x.items():
            sub = s.properties.get(k)
            if sub is None and not s.additional_set:
                continue
            if sub is None:
                sub = s.additional
            if v is None:
                if nulls and _drops_null(sub):
                    drop = [*(drop or ()), k]
            elif not (embedded and k in _META_FIELDS):
                _prune(v, sub, unknown, _join(parent, k) if unknown is not None else "", nulls=nulls)
        if drop:
            for k in drop:
                del x[k]
    elif type(x) is list and s.items is not None:
        for i, v in enumerate(x):
            _skip_prune(v, s.items, unknown, f"{parent}[{i}]" if unknown is not None else "", root=False,
                        nulls=nulls)


_OWNER_REFERENCE_FIELDS = frozenset(("apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion"))
_MANAGED_FIELDS_FIELDS = frozenset(("manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1",
                                    "subresource"))


def prune_object_meta(meta: Any, prefix: str, unknown: list[str] | None) -> None:
    """What decoding into metav1.ObjectMeta drops (and its strict decoding names): fields ObjectMeta,
    its ownerReferences and its managedFields entries do not have."""
    if type(meta) is not dict:
        return
    if not meta.keys() <= OBJECT_META_FIELDS:
        for k in [k for k in meta if k not in OBJECT_META_FIELDS]:
            if unknown is not None:
                unknown.append(f"{prefix}.{k}")
            del meta[k]
    if "ownerReferences" not in meta and "managedFields" not in meta:
        return
    for key, known in (("ownerReferences", _OWNER_REFERENCE_FIELDS), ("managedFields", _MANAGED_FIELDS_FIELDS)):
        entries = meta.get(key)
        if type(entries) is list:
            for i, entry in enumerate(entries):
                if type(entry) is dict:
                    for k in [k for k in entry if k not in known]:
                        if unknown is not None:
                            unknown.append(f"{prefix}.{key}[{i}].{k}")
                        del entry[k]


def _coerce_embedded_meta(x: Any, s: Node | None, unknown: list[str] | None, parent: str,
                          *, root: bool = False) -> None:
    """`objectmeta.Coerce` for embedded resources: the metadata of each embedded object keeps
    ObjectMeta's fields only."""
    if s is None:
        return
    if isinstance(x, dict):
        if s.embedded and not root:
            prune_object_meta(x.get("metadata"), _join(parent, "metadata"), unknown)
        for k, v in x.items():
            if isinstance(v, (dict, list)):
                prop = s.properties.get(k)
                if prop is not None:
                    _coerce_embedded_meta(v, prop, unknown, _join(parent, k))
                elif s.additional is not None:
                    _coerce_embedded_meta(v, s.additional, unknown, f"{parent}[{k}]")
    elif isinstance(x, list) and s.items is not None:
        for i, v in enumerate(x):
            if isinstance(v, (dict, list)):
                _coerce_embedded_meta(v, s.items, unknown, f"{parent}[{i}]")


# ---------------------------------------------------------------- defaulting (pkg/apiserver/schema/defaulting)


def _copy(v: Any) -> Any:
    """A deep copy of a JSON value (runtime.DeepCopyJSONValue)."""
    if type(v) is dict:
        return {k: _copy(x) for k, x in v.items()}
    if type(v) is list:
        return [_copy(x) for x in v]
    return v


def default_value(x: Any, s: Node | None) -> None:
    """`defaulting.Default`: fills absent fields (and non-nullable nulls) from their schemas' defaults,
    deep-copied, then descends; list items and additionalProperties values that are non-nullable nulls
    are defaulted too. Subtrees without defaults are not walked."""
    if s is None or not s.defaults_below:
        return
    if type(x) is dict:
        for k, prop in s.defaulted:
            if x.get(k, _ABSENT) is _ABSENT or (x[k] is None and not prop.nullable):
                x[k] = _copy(prop.default)
        for k, prop in s.defaulting_children:
            v = x.get(k)
            if type(v) is dict or type(v) is list:
                default_value(v, prop)
        add = s.additional
        if add is not None and (add.has_default or add.defaults_below):
            props = s.properties
            for k, v in x.items():
                if k in props:
                    continue
                if v is None and not add.nullable and add.has_default:
                    v = x[k] = _copy(add.default)
                if type(v) is dict or type(v) is list:
                    default_value(v, add)
    elif type(x) is list:
        items = s.items
        if items is None:
            return
        for i, v in enumerate(x):
            if v is None and not items.nullable and items.has_default:
                v = x[i] = _copy(items.default)
            if type(v) is dict or type(v) is list:
                default_value(v, items)


_ABSENT = object()


# ---------------------------------------------------------------- kube-openapi validation


class _Err:
    """One kube-openapi error: `kind` is its code (`type`, `required`, `enum`, `tooLong`, `maxItems`,
    `maxProperties`, `other`) or `composite` (a message about the whole value, with no field)."""

    __slots__ = ("kind", "message", "name", "valid", "value", "values")

    def __init__(self, kind: str, name: str, message: str, value: Any = "", valid: Any = None,
                 values: list[Any] | None = None) -> None:
        self.kind = kind
        self.name = name
        self.message = message
        self.value = value
        self.valid = valid
        self.values = values


_Add = Callable[[_Err], None]


class _Result:
    __slots__ = ("errors", "matches", "seen")

    def __init__(self) -> None:
        self.errors: list[_Err] = []
        self.seen: set[str] = set()
        self.matches = 0

    def add(self, err: _Err) -> None:
        if err.message not in self.seen:
            self.seen.add(err.message)
            self.errors.append(err)

    def merge(self, other: _Result) -> None:
        for err in other.errors:
            self.add(err)
        self.matches += other.matches


def _in(path: str) -> str:
    return f"{path} in body"


def _type_error(path: str, type_name: str, value: Any) -> _Err:
    """errors.InvalidType: a string value (the Go type or the data) is shown after a colon."""
    if isinstance(value, str):
        return _Err("type", path, f"{_in(path)} must be of type {type_name}: {go_quote(value)}", value)
    return _Err("type", path, f"{_in(path)} must be of type {type_name}", value)


def _type_of(v: Any) -> tuple[str, str]:
    """kube-openapi's schemaInfoForType for decoded JSON: (type, format)."""
    if isinstance(v, str):
        return "string", ""
    if isinstance(v, bool):
        return "boolean", ""
    if isinstance(v, int):
        return "integer", "int64"
    if isinstance(v, float):
        return "number", "float64"
    if isinstance(v, list):
        return "array", ""
    if isinstance(v, dict):
        return "object", ""
    return "", ""


def _float_is_int(f: float) -> bool:
    """swag.IsFloat64AJSONInteger."""
    if math.isnan(f) or math.isinf(f) or abs(f) > 2 ** 53:
        return False
    if f == math.floor(f):
        return True
    g = float(int(f))
    diff = abs(f - g)
    if g == 0:
        return diff < 1e-9 * 5e-324
    return diff / min(abs(f) + abs(g), 1.7976931348623157e308) < 1e-9


def _json_equal(a: Any, b: Any) -> bool:
    """reflect.DeepEqual after Go's numeric conversion (an integer equals the same float)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def _validate(s: Node, data: Any, path: str) -> _Result:
    """SchemaValidator.Validate: the type, schema-props (allOf/anyOf/oneOf/not), string, format, number,
    slice, common (enum) and object validators, in that order, each where it applies."""
    # `matches` counts as kube-openapi's MatchCount does (one per validator that applies, one per
    # validator that counts itself, one for the schema): it picks the alternative of a failed anyOf or
    # oneOf whose errors are shown.
    res = _Result()
    if data is None:
        if s.types and not s.nullable:
            res.add(_type_error(path, ",".join(s.types), "null"))
        else:
            res.matches += 1
        _check_enum(s, data, path, res.add)
        return res
    kind, fmt = _type_of(data)
    if s.types or s.format:
        res.matches += 1 + _check_type(s, data, kind, fmt, path, res.add)
    if s.all_of or s.any_of or s.one_of or s.not_ is not None:
        _check_schema_props(s, data, path, res)
    else:
        res.matches += 1
    res.matches += 1
    if kind == "string":
        _check_string(s, data, path, res.add)
        res.matches += 1
        if s.format:
            if not formats.check(s.format, data):
                res.add(_type_error(path, s.format, data))
            res.matches += 1
    elif kind in ("integer", "number"):
        _check_number(s, data, kind, path, res.add)
        res.matches += 2
    elif kind == "array":
        for i, v in enumerate(data):
            if s.items is not None:
                res.merge(_validate(s.items, v, f"{path}[{i}]"))
        _array_counts(s, data, path, res.add)
        res.matches += 2
    if s.enum is not None:
        _check_enum(s, data, path, res.add)
    res.matches += 1
    if kind == "object":
        _check_object(s, data, path, res)
        res.matches += 1
    res.matches += 1
    return res


_KINDS: dict[type, tuple[str, str]] = {str: ("string", ""), bool: ("boolean", ""), int: ("integer", "int64"),
                                       float: ("number", "float64"), list: ("array", ""), dict: ("object", "")}


_NO_OLD: Any = object()


def _same(a: Any, b: Any) -> bool:
    """reflect.DeepEqual of two decoded JSON values (an int64 1 is not a float64 1.0, nor true)."""
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        return a.keys() == b.keys() and all(_same(v, b[k]) for k, v in a.items())
    if type(a) is list:
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _old_item(s: Node, item: Any, old: Any) -> Any:
    """The item of the old list an item of a `map` list correlates with (same key values), else none:
    the items of other lists are not correlated (apiserver's CorrelatedObject.Index)."""
    if s.list_type != "map" or type(old) is not list or type(item) is not dict or not s.map_keys:
        return _NO_OLD
    keys = s.map_keys
    for candidate in old:
        if type(candidate) is dict and all(_same(item.get(k, _NO_OLD), candidate.get(k, _NO_OLD)) for k in keys):
            return candidate
    return _NO_OLD


def _fast(s: Node, data: Any, path: str, add: _Add, old: Any = _NO_OLD) -> None:
    """The same validation as `_validate` for a schema without allOf/anyOf/oneOf/not, where kube-openapi's
    match counting never matters: errors go straight to `add`. Junctors fall back to `_validate`.

    With `old` (an update, CRDValidationRatcheting): a value equal to the old value it correlates with
    (same property; same keys in a map list) reports nothing, as upstream turns such errors into
    warnings."""
    if s.accepts is not None and type(data) in s.accepts:
        return
    if old is not _NO_OLD and _same(data, old):
        return
    if s.junctors:
        for err in _validate(s, data, path).errors:
            add(err)
        return
    if data is None:
        if s.types and not s.nullable:
            add(_type_error(path, ",".join(s.types), "null"))
        if s.enum is not None:
            _check_enum(s, data, path, add)
        return
    kind, fmt = _KINDS.get(type(data)) or _type_of(data)
    if s.checks_type and (s.format or kind not in s.types):
        _check_type(s, data, kind, fmt, path, add)
    if kind == "object":
        props = s.properties
        additional = s.additional
        if s.min_properties is not None or s.max_properties is not None or (
                s.additional_set and not s.additional_allows):
            _object_counts(s, data, path, add)
        old_map = old if type(old) is dict else None
        for k, v in data.items():
            sub = props.get(k)
            if sub is not None:
                if sub.accepts is None or type(v) not in sub.accepts:
                    prev = _NO_OLD if old_map is None or (not path and k in ("apiVersion", "kind")) \
                        else old_map.get(k, _NO_OLD)
                    _fast(sub, v, f"{path}.{k}" if path else k, add, prev)
            elif additional is not None and (additional.accepts is None or type(v) not in additional.accepts):
                _fast(additional, v, f"{path}.{k}", add, _NO_OLD if old_map is None else old_map.get(k, _NO_OLD))
        for k in s.required:
            if k not in data:
                add(_Err("required", f"{path}.{k}", f"{path}.{k} in body is required"))
    elif kind == "string":
        if s.checks_string:
            _check_string(s, data, path, add)
            if s.format and not formats.check(s.format, data):
                add(_type_error(path, s.format, data))
    elif kind == "array":
        items = s.items
        if items is not None:
            for i, v in enumerate(data):
                _fast(items, v, f"{path}[{i}]", add, _NO_OLD if old is _NO_OLD else _old_item(s, v, old))
        if s.min_items is not None or s.max_items is not None or s.unique_items:
            _array_counts(s, data, path, add)
    elif kind in ("integer", "number") and s.checks_number:
        r = s.int_range
        if r is None or kind != "integer" or not r[0] <= data <= r[1]:
            _check_number(s, data, kind, path, add)
    if s.enum is not None and not (kind == "string" and data in s.enum_strings):
        _check_enum(s, data, path, add)


def _array_counts(s: Node, data: list[Any], path: str, add: _Add) -> None:
    n = len(data)
    if s.min_items is not None and n < s.min_items:
        add(_Err("other", path, f"{_in(path)} should have at least {s.min_items} items", n))
    if s.max_items is not None and n > s.max_items:
        add(_Err("maxItems", path, f"{_in(path)} should have at most {s.max_items} items", n, s.max_items))
    if s.unique_items:
        for i, v in enumerate(data):
            if any(_json_equal(v, u) for u in data[:i]):
                add(_Err("other", path, f"{_in(path)} shouldn't contain duplicates"))
                break


def _object_counts(s: Node, data: dict[str, Any], path: str, add: _Add) -> None:
    n = len(data)
    if s.min_properties is not None and n < s.min_properties:
        add(_Err("other", path, f"{_in(path)} should have at least {s.min_properties} properties", n))
    if s.max_properties is not None and n > s.max_properties:
        add(_Err("maxProperties", path, f"{_in(path)} should have at most {s.max_properties} properties", n,
                 s.max_properties))
    if s.additional_set and not s.additional_allows:
        for k in data:
            if k not in s.properties:
                add(_Err("other", path, f"{path}.{k} in body is a forbidden property", k))


def _check_type(s: Node, data: Any, kind: str, fmt: str, path: str, add: _Add) -> int:
    """The type validator; 1 when it passed (it counts itself then), else 0."""
    types = s.types
    is_float_int = kind == "number" and "integer" in types and _float_is_int(data)
    is_int_float = kind == "integer" and "number" in types
    if kind not in ("string", "array") and s.format and not (
            kind in types or fmt == s.format or is_float_int or is_int_float
            or (s.format == "int64" and fmt == "int32") or (s.format == "float64" and fmt == "float32")):
        add(_type_error(path, s.format, fmt))
        return 0
    if "number" not in types and "integer" not in types and s.format and kind in ("string", "array"):
        return 1
    if not (kind in types or is_float_int or is_int_float):
        add(_type_error(path, ",".join(types), kind))
        return 0
    return 1


def _check_string(s: Node, data: str, path: str, add: _Add) -> None:
    """The string validator reports the first of maxLength, minLength, pattern that fails."""
    if s.max_length is not None and len(data) > s.max_length:
        add(_Err("tooLong", path, f"{_in(path)} should be at most {s.max_length} chars long", data,
                     s.max_length))
    elif s.min_length is not None and len(data) < s.min_length:
        add(_Err("other", path, f"{_in(path)} should be at least {s.min_length} chars long", data))
    elif s.pattern_text:
        if s.pattern_error:
            add(_Err("other", path, f"{_in(path)} should match '{s.pattern_text}, but pattern is invalid: "
                         f"{s.pattern_error}'", data))
        elif s.pattern is not None and not s.pattern.search(data):
            add(_Err("other", path, f"{_in(path)} should match '{s.pattern_text}'", data))


def _range_ok(value: float, type_name: str, fmt: str) -> bool:
    """IsValueValidAgainstRange: whether a number fits the schema's integer type and format."""
    if isinstance(value, float) and not math.isfinite(value):
        return False
    if type_name != "integer":
        return not (fmt == "float" and abs(value) > 3.4028234663852886e38)
    if isinstance(value, float) and not value.is_integer():
        return False
    limit = 2 ** 31 if fmt == "int32" else 2 ** 63
    return -limit <= value < limit


def _check_number(s: Node, data: int | float, kind: str, path: str, add: _Add) -> None:
    type_name = s.type if s.type in ("integer", "number") and not s.int_or_string else ""
    fmt = s.format if type_name else ""
    if not _range_ok(data, type_name, fmt):
        add(_Err("composite", path, f"Checked value must be of type {type_name or 'number'} "
                     f"{'with format ' + fmt if fmt else '(default format)'} in {path}"))
    native_int = kind == "integer"
    if s.multiple_of is not None:
        factor = s.multiple_of
        if native_int and _range_ok(factor, type_name, fmt):
            ifactor = int(factor)
            if ifactor <= 0:
                add(_Err("other", path, f"factor MultipleOf declared for {path} must be positive: {ifactor}",
                             ifactor))
            elif int(data) % ifactor:
                add(_Err("other", path, f"{_in(path)} should be a multiple of {ifactor}", data))
        else:
            f = float(factor)
            if f <= 0:
                add(_Err("other", path, f"factor MultipleOf declared for {path} must be positive: "
                             f"{go_float(f)}", GoValue(go_float(f))))
            elif not _float_is_int(1 / f * data if f < 1 else data / f):
                add(_Err("other", path, f"{_in(path)} should be a multiple of {go_float(f)}", data))
    for bound, exclusive, is_max in ((s.minimum, s.exclusive_minimum, False),
                                     (s.maximum, s.exclusive_maximum, True)):
        if bound is None:
            continue
        if native_int and _range_ok(bound, type_name, fmt):
            b: int | float = int(bound)
            shown = str(b)
        else:
            b = float(bound)
            shown = go_float(b)
        if is_max:
            failed = data >= b if exclusive else data > b
            words = "less than" if exclusive else "less than or equal to"
        else:
            failed = data <= b if exclusive else data < b
            words = "greater than" if exclusive else "greater than or equal to"
        if failed:
            add(_Err("other", path, f"{_in(path)} should be {words} {shown}", data))


def _check_enum(s: Node, data: Any, path: str, add: _Add) -> None:
    if s.enum is None:
        return
    if data is not None and any(_json_equal(data, e) for e in s.enum):
        return
    values = " ".join(go_v(e) if not isinstance(e, (dict, list)) else go_json(e) for e in s.enum)
    add(_Err("enum", path, f"{_in(path)} should be one of [{values}]", data, values=s.enum))


def _check_object(s: Node, data: dict[str, Any], path: str, res: _Result) -> None:
    _object_counts(s, data, path, res.add)
    props = s.properties
    if s.additional is not None:
        for k, v in data.items():
            if k not in props:
                res.merge(_validate(s.additional, v, f"{path}.{k}"))
    if props:
        for k, sub in props.items():
            if k in data:
                res.merge(_validate(sub, data[k], f"{path}.{k}" if path else k))
    for k in s.required:
        if k not in data:
            res.add(_Err("required", f"{path}.{k}", f"{path}.{k} in body is required"))


def _check_schema_props(s: Node, data: Any, path: str, res: _Result) -> None:
    """allOf, anyOf, oneOf and not as kube-openapi's schemaPropsValidator combines them: a failed anyOf
    or oneOf also shows the errors of the alternative that matched best."""
    if s.any_of:
        best: _Result | None = None
        first_success: _Result | None = None
        for alt in s.any_of:
            r = _validate(alt, data, path)
            if not r.errors:
                first_success, best = r, None
                break
            if best is None or r.matches > best.matches:
                best = r
        if first_success is None:
            res.add(_Err("composite", path, f"{go_quote(path)} must validate at least one schema (anyOf)"))
        if best is not None:
            res.merge(best)
        elif first_success is not None:
            res.merge(first_success)
    if s.one_of:
        best = None
        first_success = None
        validated = 0
        for alt in s.one_of:
            r = _validate(alt, data, path)
            if not r.errors:
                validated += 1
                best = None
                if first_success is None:
                    first_success = r
                continue
            if validated == 0 and (best is None or r.matches > best.matches):
                best = r
        if validated != 1:
            more = "Found none valid" if validated == 0 else f"Found {validated} valid alternatives"
            res.add(_Err("composite", path,
                         f"{go_quote(path)} must validate one and only one schema (oneOf). {more}"))
            if best is not None:
                res.merge(best)
        elif first_success is not None:
            res.merge(first_success)
    if s.all_of:
        validated = 0
        for alt in s.all_of:
            r = _validate(alt, data, path)
            if not r.errors:
                validated += 1
            res.merge(r)
        if validated != len(s.all_of):
            more = ". None validated" if validated == 0 else ""
            res.add(_Err("composite", path, f"{go_quote(path)} must validate all the schemas (allOf){more}"))
    if s.not_ is not None and not _validate(s.not_, data, path).errors:
        res.add(_Err("composite", path, f"{go_quote(path)} must not validate the schema (not)"))
    res.matches += 1


def _run(s: Node, value: Any, old: Any = _NO_OLD) -> list[_Err]:
    """kube-openapi's errors for `value`, each message once (Result.AddErrors drops repeats); ratcheted
    against `old` when given."""
    found: list[_Err] = []
    _fast(s, value, "", found.append, old)
    if len(found) > 1:
        seen: set[str] = set()
        found = [e for e in found if not (e.message in seen or seen.add(e.message))]  # type: ignore[func-returns-value]
    return found


def _child_path(base: str | None, name: str) -> str | None:
    if not name or name == ".":
        return base
    name = name.removeprefix(".")
    return f"{base}.{name}" if base is not None else name


def _to_causes(errs: list[_Err], base: str | None) -> list[Cause]:
    """kubeOpenAPIResultToFieldErrors: each kube-openapi error as a field error under `base` (`<nil>`
    when there is none, as upstream prints a nil path)."""
    out: list[Cause] = []
    for e in errs:
        if e.kind == "composite":
            out.append(Cause("Invalid", base if base is not None else "<nil>", e.message, ""))
            continue
        field = _child_path(base, e.name)
        shown = field if field is not None else "<nil>"
        if e.kind == "required":
            out.append(Cause("Required", shown))
        elif e.kind == "enum":
            supported = ", ".join(go_quote(v if isinstance(v, str) else go_json(v)) for v in e.values or ())
            out.append(Cause("NotSupported", shown, f"supported values: {supported}", bad_value(e.value)))
        elif e.kind == "tooLong":
            out.append(Cause("TooLong", shown, f"may not be more than {e.valid} {'byte' if e.valid == 1 else 'bytes'}"))
        elif e.kind in ("maxItems", "maxProperties"):
            out.append(Cause("TooMany", shown, f"must have at most {e.valid} {'item' if e.valid == 1 else 'items'}",
                             e.value))
        elif e.kind == "type":
            out.append(Cause("TypeInvalid", shown, e.message, bad_value(e.value)))
        else:
            out.append(Cause("Invalid", shown, e.message, bad_value(e.value)))
    return out


def validate_value(s: Node, value: Any, *, base: str | None) -> list[Cause]:
    """`ValidateCustomResource(base, value, validator)`: kube-openapi's validation of `value` against `s`,
    as field errors."""
    return _to_causes(_run(s, value), base)


# ---------------------------------------------------------------- embedded resources (objectmeta.Validate)

_KIND = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_KIND_MSG = ("may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case "
             "alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric "
             "character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")


def _child(path: str | None, name: str) -> str:
    return f"{path}.{name}" if path is not None else name


def _meta_type_error(meta: Any) -> str:
    """The error `json.Unmarshal` into metav1.ObjectMeta gives for a field of the wrong JSON type."""
    if not isinstance(meta, dict):
        return f"json: cannot unmarshal {_json_kind(meta)} into Go value of type v1.ObjectMeta"
    for key, value in meta.items():
        go_type = ("string" if key in _META_STRINGS or key in ("creationTimestamp", "deletionTimestamp")
                   else "int64" if key in _META_INTS else "map[string]string" if key in _META_STRING_MAPS
                   else "[]string" if key == "finalizers" else "")
        if not go_type or value is None:
            continue
        ok = (isinstance(value, str) if go_type == "string"
              else isinstance(value, int) and not isinstance(value, bool) if go_type == "int64"
              else isinstance(value, dict) and all(isinstance(v, str) for v in value.values())
              if go_type == "map[string]string"
              else isinstance(value, list) and all(isinstance(v, str) for v in value))
        if not ok:
            field = f"ObjectMeta.{key}"
            return f"json: cannot unmarshal {_json_kind(value)} into Go struct field {field} of type {go_type}"
    return ""


def _json_kind(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    return "null"


def _api_version_error(api_version: str) -> str:
    """schema.ParseGroupVersion's error, or `""`."""
    if api_version.count("/") > 1:
        return f"unexpected GroupVersion string: {api_version}"
    return ""


def embedded_errors(value: Any, s: Node, *, path: str | None, meta_rule: ObjectMetaRule | None,
                    root: bool) -> list[Cause]:
    """`objectmeta.Validate(path, value, s, root)`: the causes about embedded resources in `value`."""
    errs: list[Cause] = []
    _validate_embedded(value, s, path, meta_rule, errs, root=root)
    return errs


def _validate_embedded(x: Any, s: Node | None, path: str | None, meta_rule: ObjectMetaRule | None,
                      errs: list[Cause], *, root: bool = False) -> None:
    """`objectmeta.Validate`: every embedded resource (not the root unless `root`) needs `apiVersion` and
    `kind`, both non-empty strings (kind a mixed-case DNS-1035 label, apiVersion a group/version), and
    metadata that decodes as ObjectMeta and passes `meta_rule`."""
    if s is None:
        return
    if isinstance(x, dict):
        if s.embedded or root:
            _validate_embedded_resource(x, path, meta_rule, errs)
        for k, v in x.items():
            if isinstance(v, (dict, list)):
                prop = s.properties.get(k)
                if prop is not None:
                    _validate_embedded(v, prop, _child(path, k), meta_rule, errs)
                elif s.additional_set:
                    _validate_embedded(v, s.additional, f"{path if path is not None else ''}[{k}]", meta_rule, errs)
    elif isinstance(x, list) and s.items is not None:
        for i, v in enumerate(x):
            if isinstance(v, (dict, list)):
                _validate_embedded(v, s.items, f"{path if path is not None else ''}[{i}]", meta_rule, errs)


def _validate_embedded_resource(x: dict[str, Any], path: str | None, meta_rule: ObjectMetaRule | None,
                                errs: list[Cause]) -> None:
    if "apiVersion" not in x:
        errs.append(Cause("Required", _child(path, "apiVersion")))
    if "kind" not in x:
        errs.append(Cause("Required", _child(path, "kind")))
    for k, v in x.items():
        if k == "apiVersion":
            if not isinstance(v, str):
                errs.append(Cause("Invalid", _child(path, k), "must be a string", bad_value(v)))
            elif not v:
                errs.append(Cause("Invalid", _child(path, k), "must not be empty", v))
            elif problem := _api_version_error(v):
                errs.append(Cause("Invalid", _child(path, k), problem, v))
        elif k == "kind":
            if not isinstance(v, str):
                errs.append(Cause("Invalid", _child(path, k), "must be a string", bad_value(v)))
            elif not v:
                errs.append(Cause("Invalid", _child(path, k), "must not be empty", v))
            elif len(v) > 63 or not _KIND.match(v.lower()):
                detail = _KIND_MSG if len(v) <= 63 else (
                    "may have mixed case, but should otherwise match: must be no more than 63 characters")
                errs.append(Cause("Invalid", _child(path, k), detail, v))
        elif k == "metadata":
            problem = _meta_type_error(v)
            if problem:
                errs.append(Cause("Invalid", _child(path, k), problem, bad_value(v)))
            elif meta_rule is not None and isinstance(v, dict):
                meta = dict(v)
                if not meta.get("name"):
                    meta["name"] = "fakename"  # as upstream: embedded objects need no name
                errs.extend(meta_rule(meta, path=_child(path, k)))


# ---------------------------------------------------------------- list types (schema/listtype)


def _validate_list_types(x: Any, s: Node | None, path: str | None, errs: list[Cause]) -> None:
    """`ValidateListSetsAndMaps`: items of `x-kubernetes-list-type: set` lists are unique, and so are the
    keys of `map` lists (whose items must be objects); the second of equal items is the Duplicate."""
    if s is None:
        return
    if isinstance(x, dict):
        if s.additional is not None:
            for k, v in x.items():
                if isinstance(v, (dict, list)):
                    _validate_list_types(v, s.additional, f"{path if path is not None else ''}[{k}]", errs)
        if s.properties:
            for k, v in x.items():
                sub = s.properties.get(k)
                if sub is not None and isinstance(v, (dict, list)):
                    _validate_list_types(v, sub, _child(path, k), errs)
    elif isinstance(x, list):
        base = path if path is not None else ""
        if s.list_type == "set":
            for i in _non_unique(x):
                errs.append(Cause("Duplicate", f"{base}[{i}]", "", bad_value(x[i])))
        elif s.list_type == "map":
            _validate_list_map(x, s, base, errs)
        if s.items is not None:
            for i, v in enumerate(x):
                if isinstance(v, (dict, list)):
                    _validate_list_types(v, s.items, f"{base}[{i}]", errs)


_UNSPECIFIED = object()


def _key_of(v: Any) -> Any:
    """A value's identity in validateListSet: compounds by their JSON, scalars by Go type and value
    (int64 1, float64 1.0, "1" and true are four values)."""
    if isinstance(v, (dict, list)):
        return ("json", go_json(v))
    return (type(v).__name__, v)


def _non_unique(values: list[Any]) -> list[int]:
    """validateListSet: the index of each value's second appearance."""
    if len(values) <= 1:
        return []
    seen: dict[Any, int] = {}
    out: list[int] = []
    for i, v in enumerate(values):
        key = ("unspecified",) if v is _UNSPECIFIED else _key_of(v)
        times = seen.get(key, 0)
        seen[key] = times + 1
        if times == 1:
            out.append(i)
    return out


def _validate_list_map(x: list[Any], s: Node, base: str, errs: list[Cause]) -> None:
    for i, item in enumerate(x):
        if item is not None and not isinstance(item, dict):
            errs.append(Cause("Invalid", f"{base}[{i}]", "must be an object for an array of list-type map",
                              bad_value(item)))
            return
    if len(x) <= 1:
        return
    if len(s.map_keys) == 1:
        key_field = s.map_keys[0]
        keys = [_UNSPECIFIED if item is None or key_field not in item else item[key_field] for item in x]
        for i in _non_unique(keys):
            shown = {} if keys[i] is _UNSPECIFIED else {key_field: keys[i]}
            errs.append(Cause("Duplicate", f"{base}[{i}]", "", GoValue(go_json(shown))))
        return
    composite = [{k: item[k] for k in s.map_keys if k in item} if isinstance(item, dict) else {} for item in x]
    for i in _non_unique(composite):
        errs.append(Cause("Duplicate", f"{base}[{i}]", "", GoValue(go_json(composite[i]))))


# ---------------------------------------------------------------- the compiled schema


class Schema:
    """A CRD version's structural schema, compiled once (`compile_schema`) and run per object.

    The order kube-apiserver runs them in: `prune` when an object is decoded (its result is the unknown
    fields `fieldValidation=Strict` refuses and `Warn` reports as `unknown field "<path>"`), then
    `apply_defaults`, then `validate` in the registry strategy.
    """

    __slots__ = ("_meta_rule", "root")

    def __init__(self, root: Node, *, object_meta: ObjectMetaRule | None) -> None:
        self.root = root
        self._meta_rule = object_meta

    def prune(self, obj: dict[str, Any]) -> list[str]:
        """Drops from `obj` (in place) every field the schema does not declare, keeping what
        `x-kubernetes-preserve-unknown-fields` preserves and the `apiVersion`, `kind` and `metadata` of
        the root and of embedded resources (their metadata, the root's too, keeps ObjectMeta's fields
        only); then drops null fields that are neither nullable nor defaulted. Returns the dropped
        fields' paths as upstream's decoder lists them for `fieldValidation`: the root's metadata ones
        (`metadata.foo`), then the schema's, sorted (`spec.foo`, `spec.items[0].bar`), then embedded
        resources' metadata ones, sorted."""
        root_meta: list[str] = []
        prune_object_meta(obj.get("metadata"), "metadata", root_meta)
        unknown: list[str] = []
        _prune(obj, self.root, unknown, "", root=True, nulls=True)
        unknown.sort()
        if self.root.embedded_below:
            meta_unknown: list[str] = []
            _coerce_embedded_meta(obj, self.root, meta_unknown, "", root=True)
            unknown.extend(sorted(meta_unknown))
        return root_meta + unknown if root_meta else unknown

    def apply_defaults(self, obj: dict[str, Any]) -> None:
        """Fills in the schema's defaults (upstream `defaulting.Default`): an absent field, or a null one
        whose schema is not nullable, gets a deep copy of its default; then nested objects, list items
        and additionalProperties values are defaulted in turn."""
        default_value(obj, self.root)

    def validate(self, obj: dict[str, Any]) -> list[Cause]:
        """The schema's checks on a custom resource, as the CR strategy runs them: kube-openapi's value
        validation (types, nullable, int-or-string, formats, enum, bounds, lengths, pattern, item and
        property counts, required, allOf/anyOf/oneOf/not), then embedded resources' apiVersion, kind
        and metadata, then list-type set/map uniqueness. (Root metadata and type meta, CEL rules and
        the scale subresource's paths are the caller's.)"""
        errs = _to_causes(_run(self.root, obj), None)
        if self.root.embedded_below:
            _validate_embedded(obj, self.root, None, self._meta_rule, errs)
        if self.root.lists_below:
            _validate_list_types(obj, self.root, None, errs)
        return errs

    def validate_update(self, new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
        """`validate` for an update, as upstream's ValidateUpdate with CRDValidationRatcheting (GA): a
        value that did not change (compared where it correlates with the old object: same property,
        same keys of a map list) is not held against the object even if the schema now refuses it;
        list-type uniqueness is only checked when the old object passed it."""
        errs = _to_causes(_run(self.root, new, old), None)
        if self.root.embedded_below:
            _validate_embedded(new, self.root, None, self._meta_rule, errs)
        if self.root.lists_below:
            old_errs: list[Cause] = []
            _validate_list_types(old, self.root, None, old_errs)
            if not old_errs:
                _validate_list_types(new, self.root, None, errs)
        return errs

    def validate_status_update(self, new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
        """A write of the status subresource (upstream's status strategy): the new `status`, when there
        is one, against the status schema (ratcheted against the old status), then list-type
        uniqueness over the whole object unless the old object already broke it."""
        errs = self.validate_status(new["status"], old.get("status", _NO_OLD)) if "status" in new else []
        if self.root.lists_below:
            new_errs: list[Cause] = []
            _validate_list_types(new, self.root, None, new_errs)
            if new_errs:
                old_errs: list[Cause] = []
                _validate_list_types(old, self.root, None, old_errs)
                if not old_errs:
                    errs.extend(new_errs)
        return errs

    def validate_status(self, status: Any, old_status: Any = _NO_OLD) -> list[Cause]:
        """The status subresource's check (`ValidateStatusUpdate`): `status` against the schema's
        `properties.status`, paths under `status`, ratcheted against the old status when given."""
        sub = self.root.properties.get("status")
        if sub is None:
            return []
        return _to_causes(_run(sub, status, old_status), "status")


def compile_schema(schema: dict[str, Any], *, object_meta: ObjectMetaRule | None = None) -> Schema:
    """Compiles a CRD version's `openAPIV3Schema`. `object_meta` validates the metadata of embedded
    resources (e.g. `cp.validation.meta.validate_embedded_object_meta`); without it their metadata is
    only type-checked."""
    return Schema(Node(schema), object_meta=object_meta)

