"""What kube-apiserver refuses in a CustomResourceDefinition's `openAPIV3Schema`. Pure.

Upstream: apiextensions-apiserver `pkg/apis/apiextensions/validation` (`validateCustomResourceDefinitionValidation`
and `ValidateCustomResourceDefinitionOpenAPISchema` with the v3 `specStandardValidator`), and
`pkg/apiserver/schema` (`NewStructural`, `ValidateStructural`: structurality, the int-or-string and
embedded-resource invariants, the root's metadata restrictions) and `.../schema/defaulting`
(`ValidateDefaults`: defaults are pruned, and valid against their schema). The options are those of a
v1 CRD being created or changed: schemas must be structural, defaults allowed and pruned, set items
atomic, map-list keys required or defaulted.

`x-kubernetes-validations` is accepted as it stands: its rules are compiled and checked by
`cp.crd.cel`.
"""

from __future__ import annotations

from copy import deepcopy
from typing import Any

from cp.crd import regexps
from cp.crd.schema import Node, ObjectMetaRule, embedded_errors, prune_value, validate_value
from cp.crd.values import bad_value, go_json
from cp.errors import Cause, GoValue

_TYPES = ("array", "boolean", "integer", "number", "object", "string")
_META_FIELDS = ("metadata", "kind", "apiVersion")
# JSONSchemaProps fields a root schema may set when the status subresource is enabled (as JSON names).
_ROOT_WITH_STATUS = frozenset((
    "description", "type", "format", "title", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
    "maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems", "multipleOf", "required",
    "items", "properties", "externalDocs", "example", "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-validations"))
_ROOT_WITH_STATUS_GO = ("[Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum "
                        "MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items "
                        "Properties ExternalDocs Example XPreserveUnknownFields XValidations]")
_ROOT, _ITEM, _FIELD = 0, 1, 2


def _dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _str(v: Any) -> str:
    return v if isinstance(v, str) else ""


def _set(raw: dict[str, Any], key: str) -> bool:
    """Whether a JSONSchemaProps field is set to a non-zero value (Go's zero: "", false, empty, null)."""
    v = raw.get(key)
    return v is not None and v is not False and v != "" and v != [] and v != {}


def _key(path: str, key: str) -> str:
    return f"{path}[{key}]"


def check_crd_schema(schema: dict[str, Any], *, path: str, is_root: bool = True, status_enabled: bool = False,
                     object_meta: ObjectMetaRule | None = None) -> list[Cause]:
    """Every cause upstream finds in one `openAPIV3Schema`, `path` naming it (for a v1 CRD
    `spec.validation.openAPIV3Schema` when all versions share one schema, as upstream reports it after
    converting to its internal version, else `spec.versions[i].schema.openAPIV3Schema`).

    `is_root`: the schema is a resource's root (its metadata restrictions apply); `status_enabled`: the
    version has the status subresource (the root may then only use some fields); `object_meta` checks
    the metadata of embedded resources' defaults."""
    if not isinstance(schema, dict):
        return [Cause("Invalid", path, "must be an object", bad_value(schema))]
    errs: list[Cause] = []
    if is_root:
        if status_enabled:
            _status_root(schema, path, errs)
        if schema.get("nullable") is True:
            errs.append(Cause("Forbidden", f"{path}.nullable", "nullable cannot be true at the root"))
    init_error = _unsupported(schema)
    if init_error is None:
        structural: list[Cause] = []
        _invariants(schema, _ROOT if is_root else _FIELD, path, structural)
        _completeness(schema, schema, path, path, structural)
        structural.sort(key=lambda c: c.text())
        if structural:
            errs.extend(structural)
        else:
            _defaults(schema, path, errs, meta_rule=object_meta, resource_root=is_root)
    _openapi(schema, path, errs, is_root=is_root, allow_defaults=True, reason="", inside_meta=False)
    if not errs and init_error is not None:
        errs.append(Cause("Invalid", path, init_error, ""))
    return errs


def _status_root(schema: dict[str, Any], path: str, errs: list[Cause]) -> None:
    """With the status subresource only some fields may be set at the root (its `properties.status`
    becomes the status' own schema); the first offending field is reported."""
    for key in schema:
        if not _set(schema, key):
            continue
        if key == "type":
            if schema["type"] != "object":
                errs.append(Cause("Invalid", f"{path}.type", 'only "object" is allowed as the type at the root of '
                                  "the schema if the status subresource is enabled", bad_value(schema["type"])))
                return
            continue
        if key not in _ROOT_WITH_STATUS:
            errs.append(Cause("Invalid", path, f"only {_ROOT_WITH_STATUS_GO} fields are allowed at the root of the "
                              "schema if the status subresource is enabled", GoValue(go_json(schema))))
            return


def _unsupported(raw: dict[str, Any]) -> str | None:
    """NewStructural's refusal (the first found), or None."""
    for key, name in (("id", "id"), ("$schema", "schema"), ("$ref", "$ref"), ("patternProperties", "patternProperties"),
                      ("dependencies", "dependencies"), ("additionalItems", "additionalItems"),
                      ("definitions", "definitions")):
        if key == "additionalItems":
            if raw.get(key) is not None:
                return f"OpenAPIV3Schema '{name}' is not supported"
        elif _set(raw, key):
            return f"OpenAPIV3Schema '{name}' is not supported"
    for key in ("not",):
        if isinstance(raw.get(key), dict) and (problem := _unsupported(raw[key])):
            return problem
    for key in ("allOf", "anyOf", "oneOf"):
        for sub in raw.get(key) or () if isinstance(raw.get(key), list) else ():
            if problem := _unsupported(_dict(sub)):
                return problem
    if raw.get("x-kubernetes-preserve-unknown-fields") is False:
        return "internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined"
    items = raw.get("items")
    if isinstance(items, list) and items:
        return "OpenAPIV3Schema 'items' must be a schema, but is an array"
    if isinstance(items, dict) and (problem := _unsupported(items)):
        return problem
    for sub in _dict(raw.get("properties")).values():
        if problem := _unsupported(_dict(sub)):
            return problem
    add = raw.get("additionalProperties")
    if isinstance(add, dict):
        return _unsupported(add)
    return None


# ---------------------------------------------------------------- ValidateStructural


def _level_detail(level: int) -> str:
    return ("must not be empty at the root" if level == _ROOT else
            "must not be empty for specified array items" if level == _ITEM else
            "must not be empty for specified object fields")


_INT_OR_STRING_ANY_OF = [{"type": "integer"}, {"type": "string"}]


def _int_or_string_any_of(raw: dict[str, Any]) -> bool:
    any_of = raw.get("anyOf")
    return isinstance(any_of, list) and len(any_of) == 2 and [
        {k: v for k, v in _dict(a).items() if _set(_dict(a), k)} for a in any_of] == _INT_OR_STRING_ANY_OF


def _invariants(raw: dict[str, Any], level: int, path: str, errs: list[Cause]) -> None:
    """validateStructuralInvariants."""
    t = _str(raw.get("type"))
    items = raw.get("items")
    if t == "array" and not isinstance(items, dict):
        errs.append(Cause("Required", f"{path}.items", "must be specified"))
    if isinstance(items, dict):
        _invariants(items, _ITEM, f"{path}.items", errs)
    props = _dict(raw.get("properties"))
    for k, sub in props.items():
        _invariants(_dict(sub), _FIELD, _key(f"{path}.properties", k), errs)
    add = raw.get("additionalProperties")
    if isinstance(add, (dict, bool)):
        if level == _ROOT:
            errs.append(Cause("Forbidden", f"{path}.additionalProperties", "must not be used at the root"))
        if isinstance(add, dict):
            _invariants(add, _FIELD, f"{path}.additionalProperties", errs)
    int_or_string = raw.get("x-kubernetes-int-or-string") is True
    preserve = raw.get("x-kubernetes-preserve-unknown-fields") is True
    embedded = raw.get("x-kubernetes-embedded-resource") is True
    if int_or_string and preserve:
        errs.append(Cause("Invalid", f"{path}.x-kubernetes-preserve-unknown-fields",
                          "must be false if x-kubernetes-int-or-string is true", True))
    if int_or_string and embedded:
        errs.append(Cause("Invalid", f"{path}.x-kubernetes-embedded-resource",
                          "must be false if x-kubernetes-int-or-string is true", True))
    all_of: list[Any] = raw["allOf"] if isinstance(raw.get("allOf"), list) else []
    skip_first = bool(all_of) and _int_or_string_any_of(_dict(all_of[0]))
    _value_validation(raw, skip_any_of=_int_or_string_any_of(raw), skip_first_all_of_any_of=skip_first,
                      path=path, errs=errs)
    check_metadata = level == _ROOT or embedded
    if embedded and t != "object":
        if not t:
            errs.append(Cause("Required", f"{path}.type", "must be object if x-kubernetes-embedded-resource is true"))
        else:
            errs.append(Cause("Invalid", f"{path}.type", "must be object if x-kubernetes-embedded-resource is true", t))
    elif not t and not int_or_string and not preserve:
        errs.append(Cause("Required", f"{path}.type", _level_detail(level)))
    if embedded and isinstance(add, (dict, bool)):
        errs.append(Cause("Forbidden", f"{path}.additionalProperties",
                          "must not be used if x-kubernetes-embedded-resource is set"))
    if level == _ROOT and t and t != "object":
        errs.append(Cause("Invalid", f"{path}.type", "must be object at the root", t))
    for name in ("kind", "apiVersion"):
        if name in props and check_metadata:
            sub_type = _str(_dict(props[name]).get("type"))
            if sub_type != "string":
                errs.append(Cause("Invalid", f"{_key(f'{path}.properties', name)}.type", "must be string", sub_type))
    if "metadata" in props:
        _metadata_invariants(_dict(props["metadata"]), check_metadata, level, _key(f"{path}.properties", "metadata"),
                             errs)
    if embedded and not preserve and not props:
        errs.append(Cause("Required", f"{path}.properties", "must not be empty if x-kubernetes-embedded-resource is "
                          "true without x-kubernetes-preserve-unknown-fields"))


def _metadata_invariants(raw: dict[str, Any], check: bool, level: int, path: str, errs: list[Cause]) -> None:
    """The root's metadata may only say that it is an object and restrict name and generateName."""
    t = _str(raw.get("type"))
    if check and t != "object":
        errs.append(Cause("Invalid", f"{path}.type", "must be object", t))
    if level != _ROOT:
        return
    props = _dict(raw.get("properties"))
    rest = {k for k in raw if _set(raw, k)} - {"type", "default"}
    if set(props) <= {"name", "generateName"} and props:
        rest.discard("properties")
    if rest:
        errs.append(Cause("Forbidden", path, "must not specify anything other than name and generateName, but "
                          "metadata is implicitly specified"))


def _value_validation(raw: dict[str, Any], *, skip_any_of: bool, skip_first_all_of_any_of: bool, path: str,
                      errs: list[Cause]) -> None:
    """validateValueValidation: what lies under anyOf, allOf, oneOf and not must be value validation only."""
    if not skip_any_of:
        for i, sub in enumerate(raw.get("anyOf") or () if isinstance(raw.get("anyOf"), list) else ()):
            _nested(_dict(sub), False, f"{path}.anyOf[{i}]", errs)
    for i, sub in enumerate(raw.get("allOf") or () if isinstance(raw.get("allOf"), list) else ()):
        _nested(_dict(sub), skip_first_all_of_any_of and i == 0, f"{path}.allOf[{i}]", errs)
    for i, sub in enumerate(raw.get("oneOf") or () if isinstance(raw.get("oneOf"), list) else ()):
        _nested(_dict(sub), False, f"{path}.oneOf[{i}]", errs)
    if isinstance(raw.get("not"), dict):
        _nested(raw["not"], False, f"{path}.not", errs)
    pattern = raw.get("pattern")
    if isinstance(pattern, str) and pattern:
        try:
            regexps.compile_go(pattern)
        except regexps.GoRegexpError as e:
            errs.append(Cause("Invalid", f"{path}.pattern", f"must be a valid regular expression, but isn't: {e}",
                              pattern))


_NESTED_FORBIDDEN = (
    ("title", "must be empty to be structural"),
    ("description", "must be empty to be structural"),
    ("nullable", "must be false to be structural"),
    ("x-kubernetes-preserve-unknown-fields", "must be false to be structural"),
    ("x-kubernetes-embedded-resource", "must be false to be structural"),
    ("x-kubernetes-int-or-string", "must be false to be structural"),
    ("x-kubernetes-list-map-keys", "must be empty to be structural"),
)


def _nested(raw: dict[str, Any], skip_any_of: bool, path: str, errs: list[Cause]) -> None:
    """validateNestedValueValidation."""
    _value_validation(raw, skip_any_of=skip_any_of, skip_first_all_of_any_of=False, path=path, errs=errs)
    if isinstance(raw.get("items"), dict):
        _nested(raw["items"], False, f"{path}.items", errs)
    props = _dict(raw.get("properties"))
    for k, sub in props.items():
        _nested(_dict(sub), False, _key(f"{path}.properties", k), errs)
    if _set(raw, "type"):
        errs.append(Cause("Forbidden", f"{path}.type", "must be empty to be structural"))
    add = raw.get("additionalProperties")
    if isinstance(add, dict) or add is True:
        errs.append(Cause("Forbidden", f"{path}.additionalProperties", "must be undefined to be structural"))
    if raw.get("default") is not None:
        errs.append(Cause("Forbidden", f"{path}.default", "must be undefined to be structural"))
    for key, detail in _NESTED_FORBIDDEN:
        if _set(raw, key):
            errs.append(Cause("Forbidden", f"{path}.{key}", detail))
    for key in ("x-kubernetes-list-type", "x-kubernetes-map-type"):
        if raw.get(key) is not None:
            errs.append(Cause("Forbidden", f"{path}.{key}", "must be undefined to be structural"))
    if _set(raw, "x-kubernetes-validations"):
        errs.append(Cause("Forbidden", f"{path}.x-kubernetes-validations", "must be empty to be structural"))
    if "metadata" in props:
        errs.append(Cause("Forbidden", _key(f"{path}.properties", "metadata"),
                          "must not be specified in a nested context"))


def _completeness(v: dict[str, Any], s: dict[str, Any] | None, s_path: str, v_path: str,
                  errs: list[Cause]) -> None:
    """validateStructuralCompleteness: every property or items a root-level anyOf/allOf/oneOf/not
    speaks about must also be specified structurally."""
    if s is None:
        errs.append(Cause("Required", s_path, f"because it is defined in {v_path}"))
        return
    if isinstance(v.get("not"), dict):
        _nested_completeness(v["not"], s, s_path, f"{v_path}.not", errs)
    for key in ("allOf", "anyOf", "oneOf"):
        for i, sub in enumerate(v.get(key) or () if isinstance(v.get(key), list) else ()):
            _nested_completeness(_dict(sub), s, s_path, f"{v_path}.{key}[{i}]", errs)


def _nested_completeness(v: dict[str, Any], s: dict[str, Any] | None, s_path: str, v_path: str,
                         errs: list[Cause]) -> None:
    if s is None:
        errs.append(Cause("Required", s_path, f"because it is defined in {v_path}"))
        return
    _completeness(v, s, s_path, v_path, errs)
    if isinstance(v.get("items"), dict):
        items = s.get("items")
        _nested_completeness(v["items"], items if isinstance(items, dict) else None, f"{s_path}.items",
                             f"{v_path}.items", errs)
    s_props = _dict(s.get("properties"))
    for k, sub in _dict(v.get("properties")).items():
        if k not in s_props:
            errs.append(Cause("Required", _key(f"{s_path}.properties", k),
                              f"because it is defined in {_key(f'{v_path}.properties', k)}"))
        else:
            _nested_completeness(_dict(sub), _dict(s_props[k]), _key(f"{s_path}.properties", k),
                                 _key(f"{v_path}.properties", k), errs)


# ---------------------------------------------------------------- ValidateDefaults


def _defaults(raw: dict[str, Any], path: str, errs: list[Cause], *, meta_rule: ObjectMetaRule | None,
              resource_root: bool = False, inside_meta: bool = False, resource: Node | None = None,
              chain: tuple[str | None, ...] = ()) -> None:
    """Each default must survive pruning unchanged ("must not have unknown fields"), give valid embedded
    metadata and validate against its own schema; a default inside a resource's `metadata`, `kind` or
    `apiVersion` must make that resource's metadata valid once put in place (`chain` is the way from the
    resource down to it, None for list items). additionalProperties are not followed (defaults there are
    not checked, as upstream)."""
    embedded = raw.get("x-kubernetes-embedded-resource") is True or resource_root
    node: Node | None = None
    if embedded:
        inside_meta = False
        node = Node(raw)
        node.embedded = node.embedded_below = True
        resource, chain = node, ()
    default = raw.get("default")
    if default is not None:
        if node is None:
            node = Node(raw)
        where = f"{path}.default"
        if inside_meta and resource is not None:
            surrounding = _surrounding(default, chain)
            meta_errs = embedded_errors(surrounding, resource, path=None, meta_rule=meta_rule, root=True)
            if meta_errs:
                errs.append(Cause("Invalid", where, f"must result in valid metadata: {_aggregate(meta_errs)}",
                                  bad_value(default)))
            else:
                errs.extend(validate_value(node, default, base=where))
        else:
            pruned = deepcopy(default)
            prune_value(pruned, node, is_resource_root=embedded)
            if pruned != default:
                errs.append(Cause("Invalid", where, "must not have unknown fields", bad_value(default)))
            found = embedded_errors(default, node, path=where, meta_rule=meta_rule, root=embedded)
            errs.extend(found or validate_value(node, default, base=where))
    if isinstance(raw.get("items"), dict):
        _defaults(raw["items"], f"{path}.items", errs, meta_rule=meta_rule, inside_meta=inside_meta,
                  resource=resource, chain=(*chain, None))
    for k, sub in _dict(raw.get("properties")).items():
        _defaults(_dict(sub), _key(f"{path}.properties", k), errs, meta_rule=meta_rule,
                  inside_meta=inside_meta or (embedded and k in _META_FIELDS), resource=resource, chain=(*chain, k))


def _surrounding(value: Any, chain: tuple[str | None, ...]) -> Any:
    """The resource a default inside its metadata or type meta stands in (upstream's
    SurroundingObjectFunc): the value wrapped along `chain`, with `apiVersion: validation/v1` and
    `kind: Validation` where the default does not give them."""
    obj = deepcopy(value)
    for step in reversed(chain):
        obj = [obj] if step is None else {step: obj}
    if isinstance(obj, dict):
        obj.setdefault("kind", "Validation")
        obj.setdefault("apiVersion", "validation/v1")
    return obj


def _aggregate(causes: list[Cause]) -> str:
    """utilerrors.Aggregate's message: one error as it is, several in brackets, each once."""
    texts = list(dict.fromkeys(c.text() for c in causes))
    return texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"


# ---------------------------------------------------------------- ValidateCustomResourceDefinitionOpenAPISchema


def _openapi(raw: dict[str, Any], path: str, errs: list[Cause], *, is_root: bool, allow_defaults: bool, reason: str,
             inside_meta: bool) -> None:
    """ValidateCustomResourceDefinitionOpenAPISchema with the v3 standard validator, recursively."""
    _standard(raw, path, errs, allow_defaults=allow_defaults, reason=reason, inside_meta=inside_meta)
    if raw.get("uniqueItems") is True:
        errs.append(Cause("Forbidden", f"{path}.uniqueItems",
                          "uniqueItems cannot be set to true since the runtime complexity becomes quadratic"))
    props = _dict(raw.get("properties"))
    add = raw.get("additionalProperties")
    embedded = raw.get("x-kubernetes-embedded-resource") is True

    def sub(schema: Any, sub_path: str, *, allow: bool = allow_defaults, why: str = reason,
            meta: bool = inside_meta) -> None:
        if isinstance(schema, dict):
            _openapi(schema, sub_path, errs, is_root=False, allow_defaults=allow, reason=why, inside_meta=meta)

    if isinstance(add, (dict, bool)):
        if props and (add is False or isinstance(add, dict)):
            errs.append(Cause("Forbidden", f"{path}.additionalProperties",
                              "additionalProperties and properties are mutual exclusive"))
        if inside_meta:
            sub(add, f"{path}.additionalProperties", allow=False,
                why="inside additionalProperties applying to object metadata")
        else:
            sub(add, f"{path}.additionalProperties")
    for k, schema in props.items():
        if (is_root or embedded) and k in _META_FIELDS:
            if is_root:
                sub(schema, _key(f"{path}.properties", k), meta=True, allow=False, why=f"in top-level {k}")
            else:
                sub(schema, _key(f"{path}.properties", k), meta=True)
        else:
            sub(schema, _key(f"{path}.properties", k))
    sub(raw.get("not"), f"{path}.not")
    for key in ("allOf", "oneOf", "anyOf"):
        for i, schema in enumerate(raw.get(key) or () if isinstance(raw.get(key), list) else ()):
            sub(schema, f"{path}.{key}[{i}]")
    for k, schema in _dict(raw.get("definitions")).items():
        sub(schema, _key(f"{path}.definitions", k))
    items = raw.get("items")
    if isinstance(items, dict):
        sub(items, f"{path}.items")
    elif isinstance(items, list):
        for i, schema in enumerate(items):
            sub(schema, f"{path}.items[{i}]")
    for k, dep in _dict(raw.get("dependencies")).items():
        sub(dep, _key(f"{path}.dependencies", k))
    _extensions(raw, path, errs)


def _standard(raw: dict[str, Any], path: str, errs: list[Cause], *, allow_defaults: bool, reason: str,
              inside_meta: bool) -> None:
    """specStandardValidatorV3.validate."""
    t = _str(raw.get("type"))
    if t and t not in _TYPES:
        errs.append(Cause("NotSupported", f"{path}.type", "supported values: " + ", ".join(f'"{x}"' for x in _TYPES),
                          t))
    if "default" in raw and not allow_defaults:
        errs.append(Cause("Forbidden", f"{path}.default", "must not be set" + (f" {reason}" if reason else "")))
    if _set(raw, "id"):
        errs.append(Cause("Forbidden", f"{path}.id", "id is not supported"))
    if raw.get("additionalItems") is not None:
        errs.append(Cause("Forbidden", f"{path}.additionalItems", "additionalItems is not supported"))
    for key in ("patternProperties", "definitions"):
        if _set(raw, key):
            errs.append(Cause("Forbidden", f"{path}.{key}", f"{key} is not supported"))
    if raw.get("dependencies") is not None:
        errs.append(Cause("Forbidden", f"{path}.dependencies", "dependencies is not supported"))
    if raw.get("$ref") is not None:
        errs.append(Cause("Forbidden", f"{path}.$ref", "$ref is not supported"))
    if t == "null":
        errs.append(Cause("Forbidden", f"{path}.type", "type cannot be set to null, use nullable as an alternative"))
    if isinstance(raw.get("items"), list) and raw["items"]:
        errs.append(Cause("Forbidden", f"{path}.items", "items must be a schema object and not an array"))
    if inside_meta and raw.get("x-kubernetes-embedded-resource") is True:
        errs.append(Cause("Forbidden", f"{path}.x-kubernetes-embedded-resource",
                          "must not be used inside of resource meta"))


def _extensions(raw: dict[str, Any], path: str, errs: list[Cause]) -> None:
    """The Kubernetes extensions: preserve-unknown-fields, map and list types, map-list keys."""
    t = _str(raw.get("type"))
    if raw.get("x-kubernetes-preserve-unknown-fields") is False:
        errs.append(Cause("Invalid", f"{path}.x-kubernetes-preserve-unknown-fields", "must be true or undefined",
                          False))
    map_type = raw.get("x-kubernetes-map-type")
    if map_type is not None and t != "object":
        detail = "must be object if x-kubernetes-map-type is specified"
        errs.append(Cause("Required", f"{path}.type", detail) if not t else Cause("Invalid", f"{path}.type", detail, t))
    if map_type is not None and map_type not in ("atomic", "granular"):
        errs.append(Cause("NotSupported", f"{path}.x-kubernetes-map-type", 'supported values: "atomic", "granular"',
                          bad_value(map_type)))
    list_type = raw.get("x-kubernetes-list-type")
    items = raw.get("items")
    item = _dict(items)
    if list_type is not None and t != "array":
        detail = "must be array if x-kubernetes-list-type is specified"
        errs.append(Cause("Required", f"{path}.type", detail) if not t else Cause("Invalid", f"{path}.type", detail, t))
    elif list_type == "set" and isinstance(items, dict):
        detail = "must be atomic as item of a list with x-kubernetes-list-type=set"
        item_type = item.get("type")
        if item_type == "array":
            lt = item.get("x-kubernetes-list-type")
            if lt is not None and lt != "atomic":
                errs.append(Cause("Invalid", f"{path}.items.x-kubernetes-list-type", detail, GoValue(go_json(lt))))
        elif item_type == "object":
            mt = item.get("x-kubernetes-map-type")
            if mt != "atomic":
                shown = item.get("x-kubernetes-list-type")
                errs.append(Cause("Invalid", f"{path}.items.x-kubernetes-map-type", detail, GoValue(go_json(shown))))
    if list_type is not None and list_type not in ("atomic", "set", "map"):
        errs.append(Cause("NotSupported", f"{path}.x-kubernetes-list-type",
                          'supported values: "atomic", "set", "map"', bad_value(list_type)))
    keys = raw.get("x-kubernetes-list-map-keys")
    keys = keys if isinstance(keys, list) else []
    if keys:
        detail = "must be map if x-kubernetes-list-map-keys is non-empty"
        if list_type is None:
            errs.append(Cause("Required", f"{path}.x-kubernetes-list-type", detail))
        elif list_type != "map":
            errs.append(Cause("Invalid", f"{path}.x-kubernetes-list-type", detail, bad_value(list_type)))
    if list_type == "map":
        if not keys:
            errs.append(Cause("Required", f"{path}.x-kubernetes-list-map-keys",
                              "must not be empty if x-kubernetes-list-type is map"))
        if items is None:
            errs.append(Cause("Required", f"{path}.items", "must have a schema if x-kubernetes-list-type is map"))
        elif not isinstance(items, dict):
            errs.append(Cause("Invalid", f"{path}.items", "must only have a single schema if x-kubernetes-list-type "
                              "is map", bad_value(items)))
        elif item.get("type") != "object":
            errs.append(Cause("Invalid", f"{path}.items.type", "must be object if parent array's "
                              "x-kubernetes-list-type is map", bad_value(_str(item.get("type")))))
        else:
            item_props = _dict(item.get("properties"))
            seen: set[Any] = set()
            for k in keys:
                if k in item_props:
                    if _dict(item_props[k]).get("type") in ("array", "object"):
                        errs.append(Cause("Invalid", f"{_key(f'{path}.items.properties', str(k))}.type",
                                          "must be a scalar type if parent array's x-kubernetes-list-type is map",
                                          "object"))
                else:
                    errs.append(Cause("Invalid", f"{path}.x-kubernetes-list-map-keys",
                                      "entries must all be names of item properties", GoValue(go_json(keys))))
                if str(k) in seen:
                    errs.append(Cause("Invalid", f"{path}.x-kubernetes-list-map-keys",
                                      "must not contain duplicate entries", GoValue(go_json(keys))))
                seen.add(str(k))
    if isinstance(items, dict) and list_type in ("set", "map"):
        _map_set_items(item, keys, list_type, path, errs)


def _map_set_items(item: dict[str, Any], keys: list[Any], list_type: str, path: str, errs: list[Cause]) -> None:
    """validateMapListKeysMapSet: set and map items are not nullable; map keys are required or defaulted,
    and not nullable."""
    if item.get("nullable") is True:
        errs.append(Cause("Forbidden", f"{path}.items.nullable", f"cannot be nullable when x-kubernetes-list-type "
                          f"is {list_type}"))
    if list_type != "map":
        return
    required = set(r for r in item.get("required") or () if isinstance(r, str)) \
        if isinstance(item.get("required"), list) else set()
    props = _dict(item.get("properties"))
    for k in keys:
        if not isinstance(k, str) or k not in props:
            continue
        prop = _dict(props[k])
        where = _key(f"{path}.items.properties", k)
        if k not in required and "default" not in prop:
            errs.append(Cause("Required", f"{where}.default", "this property is in x-kubernetes-list-map-keys, so "
                              "it must have a default or be a required property"))
        if prop.get("nullable") is True:
            errs.append(Cause("Forbidden", f"{where}.nullable", "this property is in x-kubernetes-list-map-keys, so "
                              "it cannot be nullable"))
