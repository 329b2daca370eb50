"""The OpenAPI definitions of a custom resource version (`cp.crd.openapi`), v3 and v2, as upstream's
OpenAPI builder makes them from a structural schema: kept keywords and extensions, int-or-string
unfolded, embedded resources given TypeMeta and ObjectMeta, and v2's simplifications."""

from __future__ import annotations

from typing import Any

from cp import resources as res
from cp.crd import openapi
from cp.crd.custom import CustomVersion

META_REF = [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}]


def _kind(schema: dict[str, Any] | None, *, selectable: list[str] | None = None) -> res.ResourceKind:
    custom = CustomVersion(crd_name="widgets.example.com", crd_uid="u", generation=1, version="v1",
                           storage_version="v1", openapi=schema, status=False, scale=None, columns=[],
                           selectable=selectable or [], conversion={})
    return res.ResourceKind(group="example.com", version="v1", kind="Widget", plural="widgets",
                            singular="widget", namespaced=True, custom=custom)


SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object", "required": ["port", "note"],
            "properties": {
                "port": {"x-kubernetes-int-or-string": True, "description": "A port."},
                "ranged": {"x-kubernetes-int-or-string": True,
                           "anyOf": [{"type": "integer"}, {"type": "string"}]},
                "limited": {"x-kubernetes-int-or-string": True, "anyOf": [{"maxLength": 3}]},
                "note": {"type": "string", "nullable": True, "default": "n"},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                         "properties": {"a": {"type": "string"}}},
                "list": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
                "template": {"type": "object", "x-kubernetes-embedded-resource": True,
                             "x-kubernetes-preserve-unknown-fields": True},
                "rules": {"type": "string", "x-kubernetes-validations": [{"rule": "self != 'x'"}],
                          "pattern": "^[a-z]+$", "exclusiveMinimum": False},
            },
        },
    },
}


def test_v3_item() -> None:
    item = openapi.item_schema(_kind(SCHEMA, selectable=[".spec.note"]))
    assert item["x-kubernetes-group-version-kind"] == [{"group": "example.com", "version": "v1", "kind": "Widget"}]
    assert item["x-kubernetes-selectable-fields"] == [{"fieldPath": "spec.note"}]
    assert list(item["properties"]) == ["apiVersion", "kind", "metadata", "spec"]
    assert item["properties"]["metadata"]["allOf"] == META_REF
    spec = item["properties"]["spec"]["properties"]
    assert spec["port"] == {"description": "A port.", "x-kubernetes-int-or-string": True,
                            "anyOf": [{"type": "integer"}, {"type": "string"}]}
    assert spec["ranged"]["anyOf"] == [{"type": "integer"}, {"type": "string"}] and "allOf" not in spec["ranged"]
    assert spec["limited"]["allOf"] == [{"anyOf": [{"type": "integer"}, {"type": "string"}]}]
    assert spec["note"] == {"type": "string", "default": "n", "nullable": True}
    assert spec["list"]["x-kubernetes-list-type"] == "set"
    assert spec["rules"] == {"type": "string", "pattern": "^[a-z]+$",
                             "x-kubernetes-validations": [{"rule": "self != 'x'"}]}
    template = spec["template"]
    assert set(template["properties"]) == {"apiVersion", "kind", "metadata"}
    assert template["required"] == ["kind", "apiVersion"]


def test_v2_item() -> None:
    item = openapi.item_schema(_kind(SCHEMA), v2=True)
    spec = item["properties"]["spec"]
    assert spec["required"] == ["port"]  # the nullable field is no longer required
    props = spec["properties"]
    assert props["port"] == {"description": "A port.", "x-kubernetes-int-or-string": True}
    assert props["note"] == {}
    assert props["free"] == {"x-kubernetes-preserve-unknown-fields": True}
    assert props["template"] == {"x-kubernetes-embedded-resource": True, "x-kubernetes-preserve-unknown-fields": True}
    assert item["properties"]["metadata"]["allOf"] == META_REF


def test_no_schema_and_a_free_root() -> None:
    gvk = [{"group": "example.com", "version": "v1", "kind": "Widget"}]
    assert openapi.item_schema(_kind(None)) == {"type": "object", "x-kubernetes-group-version-kind": gvk}
    free = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    assert openapi.item_schema(_kind(free), v2=True) == {"type": "object", "x-kubernetes-group-version-kind": gvk}
    assert "metadata" in openapi.item_schema(_kind(free))["properties"]


def test_list_kind() -> None:
    kind = _kind(SCHEMA)
    assert openapi.model_name(kind) == "com.example.v1.Widget"
    assert openapi.model_name(kind, list_kind=True) == "com.example.v1.WidgetList"
    lst = openapi.list_schema(kind)
    assert lst["required"] == ["items"]
    assert lst["properties"]["items"]["items"] == {"$ref": "#/components/schemas/com.example.v1.Widget"}
    assert lst["x-kubernetes-group-version-kind"][0]["kind"] == "WidgetList"
