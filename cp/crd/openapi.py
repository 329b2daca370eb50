"""The OpenAPI definitions of a custom resource version, as apiextensions-apiserver's OpenAPI
controllers publish them (`pkg/controller/openapi/builder`): the kind and its list kind, named like
upstream's models (`com.example.v1.Widget`, `com.example.v1.WidgetList`), for the v3 documents
(`cp.openapi`) and the v2 one (`cp.openapi_v2`).

- The kind's schema is the version's `openAPIV3Schema` as a structural schema publishes it: its
  keywords, value validations and `x-kubernetes-*` extensions, without what a structural schema
  cannot hold (`$ref`, `definitions`, `patternProperties`...); `x-kubernetes-int-or-string` unfolded
  into `anyOf: [integer, string]` (v3). `apiVersion`, `kind` and `metadata` (a reference to
  ObjectMeta) are added at the root and in embedded resources; `x-kubernetes-group-version-kind` and
  the version's `x-kubernetes-selectable-fields` mark it. A version without a schema is `type: object`.
- The list kind: `items` (references to the kind), `metadata` (ListMeta), the list kind's GVK.
- v2 (`ToStructuralOpenAPIV2` and the v2 controller): junctors (`allOf`, `anyOf`, `oneOf`, `not`) are
  dropped, a nullable field loses its type, properties and items (and its place in `required`), a
  field that preserves unknown fields loses its properties and items (and its `object` type), an
  array without items loses its type, and defaults are pruned; a root that preserves unknown fields is
  `type: object` alone (kubectl would otherwise refuse the unknown fields).

References are written in the v3 form (`#/components/schemas/...`, and `allOf: [{$ref}]` beside a
description); `cp.openapi_v2` rewrites them for v2 as for the built-in definitions. Pure.
"""

from __future__ import annotations

import functools
from typing import Any

from cp import resources as res

__all__ = ["item_schema", "list_schema", "model_name"]

_COMPONENTS = "#/components/schemas/"
_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_LIST_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"

# The keywords a structural schema keeps, in the order they are written.
_KEPT = ("description", "type", "format", "title", "default", "example", "externalDocs", "nullable",
         "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum", "maxLength", "minLength", "pattern",
         "maxItems", "minItems", "uniqueItems", "multipleOf", "enum", "maxProperties", "minProperties",
         "required")
_FLAGS = ("nullable", "exclusiveMaximum", "exclusiveMinimum", "uniqueItems")  # written only when true
_EXTENSIONS = ("x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource",
               "x-kubernetes-int-or-string")  # written only when true
_LIST_EXTENSIONS = ("x-kubernetes-list-map-keys", "x-kubernetes-list-type", "x-kubernetes-map-type",
                    "x-kubernetes-validations")
_JUNCTORS = ("allOf", "anyOf", "oneOf")


def model_name(kind: res.ResourceKind, *, list_kind: bool = False) -> str:
    """Upstream's model name: the group reversed, the version, the kind (`com.example.v1.Widget`)."""
    group = ".".join(reversed(kind.group.split(".")))
    return f"{group}.{kind.version}.{kind.list_kind if list_kind else kind.kind}"


@functools.cache
def _descriptions() -> dict[str, str]:
    """The descriptions of the fields every object has (TypeMeta's, the object and list metadata)."""
    from cp import schemas

    defs = schemas.definitions()
    item = (defs.get("io.k8s.api.core.v1.ConfigMap") or {}).get("properties") or {}
    items = (defs.get("io.k8s.api.core.v1.ConfigMapList") or {}).get("properties") or {}
    return {name: str((props.get(field) or {}).get("description") or "")
            for name, props, field in (("apiVersion", item, "apiVersion"), ("kind", item, "kind"),
                                       ("metadata", item, "metadata"), ("listMetadata", items, "metadata"))}


def _type_meta(field: str) -> dict[str, Any]:
    return {"description": _descriptions()[field], "type": "string"}


def _ref(name: str, description: str) -> dict[str, Any]:
    return {"allOf": [{"$ref": _COMPONENTS + name}], "description": description}


def _dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


# ------------------------------------------------------------------------------------------ v3


def _is_int_or_string_any_of(node: dict[str, Any]) -> bool:
    any_of = node.get("anyOf")
    return (isinstance(any_of, list) and len(any_of) == 2 and any_of[0] == {"type": "integer"}
            and any_of[1] == {"type": "string"})


def _structural(node: Any) -> dict[str, Any]:
    """A JSONSchemaProps node as a structural schema publishes it (v3 form)."""
    src = _dict(node)
    out: dict[str, Any] = {}
    for key in _KEPT:
        if key not in src:
            continue
        value = src[key]
        if key in _FLAGS and value is not True:
            continue
        if key == "required" and not value:
            continue
        out[key] = value
    items = src.get("items")
    if isinstance(items, list):  # JSONSchemaPropsOrArray: a structural schema has one items schema
        items = items[0] if items else None
    if isinstance(items, dict):
        out["items"] = _structural(items)
    props = src.get("properties")
    if isinstance(props, dict):
        out["properties"] = {name: _structural(sub) for name, sub in props.items()}
    extra = src.get("additionalProperties")
    if isinstance(extra, bool):
        out["additionalProperties"] = extra
    elif isinstance(extra, dict):
        out["additionalProperties"] = _structural(extra)
    for key in _JUNCTORS:
        subs = src.get(key)
        if isinstance(subs, list) and subs:
            out[key] = [_structural(s) for s in subs]
    if isinstance(src.get("not"), dict):
        out["not"] = _structural(src["not"])
    for key in _EXTENSIONS:
        if src.get(key) is True:
            out[key] = True
    for key in _LIST_EXTENSIONS:
        if src.get(key):
            out[key] = src[key]
    if out.get("x-kubernetes-int-or-string") and not _is_int_or_string_any_of(out):
        first_all = (out.get("allOf") or [{}])[0]
        if not _is_int_or_string_any_of(_dict(first_all)):
            either = [{"type": "integer"}, {"type": "string"}]
            if "anyOf" not in out:
                out["anyOf"] = either
            else:
                out["allOf"] = [{"anyOf": either}, *(out.get("allOf") or [])]
    return out


def _embedded(node: dict[str, Any], *, v2: bool) -> None:
    """TypeMeta and ObjectMeta in every embedded resource (`addEmbeddedProperties`)."""
    for sub in (node.get("properties") or {}).values():
        _embedded(sub, v2=v2)
    if isinstance(node.get("items"), dict):
        _embedded(node["items"], v2=v2)
    if isinstance(node.get("additionalProperties"), dict):
        _embedded(node["additionalProperties"], v2=v2)
    if v2 and node.get("x-kubernetes-preserve-unknown-fields"):
        return
    if node.get("x-kubernetes-embedded-resource"):
        props = node.setdefault("properties", {})
        props["apiVersion"] = _type_meta("apiVersion")
        props["kind"] = _type_meta("kind")
        props["metadata"] = _ref(_OBJECT_META, _descriptions()["metadata"])
        required = list(node.get("required") or [])
        required += [f for f in ("kind", "apiVersion") if f not in required]
        node["required"] = required


# ------------------------------------------------------------------------------------------ v2


def _to_v2(node: dict[str, Any]) -> dict[str, Any]:
    """`ToStructuralOpenAPIV2`, and defaults pruned."""
    out = {k: v for k, v in node.items() if k not in (*_JUNCTORS, "not", "default")}
    if out.get("nullable"):
        for key in ("type", "nullable", "items", "properties"):
            out.pop(key, None)
    if out.get("x-kubernetes-preserve-unknown-fields"):
        out.pop("items", None)
        out.pop("properties", None)
    if out.get("type") == "array" and "items" not in out:
        out.pop("type")
    if out.get("x-kubernetes-preserve-unknown-fields") and out.get("type") == "object":
        out.pop("type")
    props = out.get("properties")
    if isinstance(props, dict):
        nullable = {name for name, sub in props.items() if isinstance(sub, dict) and sub.get("nullable")}
        if nullable and out.get("required"):
            required = [r for r in out["required"] if r not in nullable]
            if required:
                out["required"] = required
            else:
                out.pop("required")
        out["properties"] = {name: _to_v2(sub) for name, sub in props.items()}
    if isinstance(out.get("items"), dict):
        out["items"] = _to_v2(out["items"])
    extra = out.get("additionalProperties")
    if isinstance(extra, dict):
        if extra.get("nullable"):
            out.pop("required", None)
        out["additionalProperties"] = _to_v2(extra)
    return out


# ------------------------------------------------------------------------------------------ the kinds


def _selectable_fields(kind: res.ResourceKind) -> list[dict[str, str]]:
    return [{"fieldPath": path.removeprefix(".")} for path in kind.custom.selectable]


def item_schema(kind: res.ResourceKind, *, v2: bool = False) -> dict[str, Any]:
    """The definition of a custom resource version's kind (`kind.custom` set)."""
    schema = kind.custom.openapi
    root: dict[str, Any]
    if not isinstance(schema, dict):
        root = {"type": "object"}
    else:
        root = _structural(schema)
        if v2 and root.get("x-kubernetes-preserve-unknown-fields"):
            root = {"type": "object"}
        else:
            if v2:
                root = _to_v2(root)
            props = root.setdefault("properties", {})
            props["metadata"] = _ref(_OBJECT_META, _descriptions()["metadata"])
            props["apiVersion"] = _type_meta("apiVersion")
            props["kind"] = _type_meta("kind")
            _embedded(root, v2=v2)
            root["properties"] = dict(sorted(props.items()))
    root["x-kubernetes-group-version-kind"] = [{"group": kind.group, "version": kind.version, "kind": kind.kind}]
    if kind.custom.selectable:
        root["x-kubernetes-selectable-fields"] = _selectable_fields(kind)
    return root


def list_schema(kind: res.ResourceKind) -> dict[str, Any]:
    """The definition of a custom resource version's list kind."""
    out: dict[str, Any] = {
        "description": f"{kind.list_kind} is a list of {kind.kind}",
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": _type_meta("apiVersion"),
            "items": {"description": f"List of {kind.plural}.", "type": "array",
                      "items": {"$ref": _COMPONENTS + model_name(kind)}},
            "kind": _type_meta("kind"),
            "metadata": _ref(_LIST_META, _descriptions()["listMetadata"]),
        },
        "x-kubernetes-group-version-kind": [{"group": kind.group, "version": kind.version,
                                             "kind": kind.list_kind}],
    }
    if kind.custom.selectable:
        out["x-kubernetes-selectable-fields"] = _selectable_fields(kind)
    return out
