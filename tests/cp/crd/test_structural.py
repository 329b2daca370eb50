"""cp/crd/structural.py: what kube-apiserver refuses in a CRD's openAPIV3Schema (structural schemas, the
Kubernetes extensions, defaults), with upstream's field paths and messages; and how the CRD rules report
them (`spec.validation` for a shared schema, `spec.versions[i].schema` otherwise)."""

from __future__ import annotations

from typing import Any

import pytest

from cp.crd.structural import check_crd_schema
from cp.validation.meta import validate_embedded_object_meta
from tests.cp.validation.rules import create_errors

P = "spec.validation.openAPIV3Schema"
S = f"{P}.properties[spec]"


def root(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props}


def spec(**props: Any) -> dict[str, Any]:
    return root(spec={"type": "object", "properties": props})


def errors_of(schema: dict[str, Any], **kw: Any) -> list[str]:
    return [c.text() for c in check_crd_schema(schema, path=P, object_meta=validate_embedded_object_meta, **kw)]


@pytest.mark.parametrize(("schema", "expected"), [
    # accepted
    (root(), []),
    (spec(replicas={"type": "integer", "minimum": 0, "default": 1}, name={"type": "string", "maxLength": 10}), []),
    (spec(port={"x-kubernetes-int-or-string": True}), []),
    (spec(port={"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]}), []),
    (spec(port={"x-kubernetes-int-or-string": True,
                "allOf": [{"anyOf": [{"type": "integer"}, {"type": "string"}]}, {"pattern": "^[0-9]+$"}]}), []),
    (spec(anything={"x-kubernetes-preserve-unknown-fields": True}), []),
    (spec(template={"type": "object", "x-kubernetes-embedded-resource": True,
                    "x-kubernetes-preserve-unknown-fields": True}), []),
    (spec(labels={"type": "object", "additionalProperties": {"type": "string"}}), []),
    (root(metadata={"type": "object", "properties": {"name": {"type": "string", "maxLength": 20}}}), []),
    (spec(size={"type": "string", "x-kubernetes-validations": [{"rule": "self.size() > 1"}]}), []),
    (root(spec={"type": "object", "x-kubernetes-validations": [{"rule": "self.a == self.b", "message": "m"}],
                "properties": {"a": {"type": "string"}, "b": {"type": "string"}}}), []),
    (spec(ports={"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                 "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}}), []),
    (spec(v={"type": "object", "anyOf": [{"required": ["a"]}, {"required": ["b"]}],
             "properties": {"a": {"type": "string"}, "b": {"type": "string"}}}), []),
    # missing types
    ({"properties": {}}, [f"{P}.type: Required value: must not be empty at the root"]),
    (root(spec={"properties": {"a": {"type": "string"}}}),
     [f"{S}.type: Required value: must not be empty for specified object fields"]),
    (spec(list={"type": "array", "items": {}}),
     [f"{S}.properties[list].items.type: Required value: must not be empty for specified array items"]),
    (spec(list={"type": "array"}), [f"{S}.properties[list].items: Required value: must be specified"]),
    ({"type": "string"}, [f'{P}.type: Invalid value: "string": must be object at the root']),
    (spec(x={"type": "float"}),
     [f'{S}.properties[x].type: Unsupported value: "float": supported values: "array", "boolean", "integer", '
      '"number", "object", "string"']),
    (spec(x={"type": "null"}),
     [f'{S}.properties[x].type: Unsupported value: "null": supported values: "array", "boolean", "integer", '
      '"number", "object", "string"',
      f"{S}.properties[x].type: Forbidden: type cannot be set to null, use nullable as an alternative"]),
    # value validations under logic junctors
    (spec(x={"type": "string", "anyOf": [{"type": "string"}, {"maxLength": 3}]}),
     [f"{S}.properties[x].anyOf[0].type: Forbidden: must be empty to be structural"]),
    (spec(x={"type": "object", "properties": {"a": {"type": "string"}},
             "oneOf": [{"properties": {"b": {"description": "b", "nullable": True, "default": "z"}}}]}),
     [f"{S}.properties[x].oneOf[0].properties[b].default: Forbidden: must be undefined to be structural",
      f"{S}.properties[x].oneOf[0].properties[b].description: Forbidden: must be empty to be structural",
      f"{S}.properties[x].oneOf[0].properties[b].nullable: Forbidden: must be false to be structural"]),
    # completeness is checked for the root's junctors only (as upstream)
    (root(spec={"type": "object", "not": {"properties": {"b": {"maxLength": 1}}}}), []),
    (dict(root(spec={"type": "object"}), allOf=[{"properties": {"spec": {"properties": {"c": {"minLength": 1}}}}}]),
     [f"{S}.properties[c]: Required value: because it is defined in "
      f"{P}.allOf[0].properties[spec].properties[c]"]),
    (spec(x={"type": "string", "allOf": [{"x-kubernetes-validations": [{"rule": "true"}]}]}),
     [f"{S}.properties[x].allOf[0].x-kubernetes-validations: Forbidden: must be empty to be structural"]),
    (spec(x={"type": "object", "properties": {"a": {"type": "string"}},
             "anyOf": [{"properties": {"metadata": {"maxLength": 1}}}]}),
     [f"{S}.properties[x].anyOf[0].properties[metadata]: Forbidden: must not be specified in a nested context"]),
    # extensions
    (spec(x={"type": "object", "x-kubernetes-preserve-unknown-fields": False}),
     [f"{S}.properties[x].x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined"]),
    (spec(x={"x-kubernetes-int-or-string": True, "x-kubernetes-preserve-unknown-fields": True}),
     [f"{S}.properties[x].x-kubernetes-preserve-unknown-fields: Invalid value: true: must be false if "
      "x-kubernetes-int-or-string is true"]),
    (spec(x={"x-kubernetes-embedded-resource": True, "x-kubernetes-preserve-unknown-fields": True}),
     [f"{S}.properties[x].type: Required value: must be object if x-kubernetes-embedded-resource is true"]),
    (spec(x={"type": "object", "x-kubernetes-embedded-resource": True}),
     [f"{S}.properties[x].properties: Required value: must not be empty if x-kubernetes-embedded-resource is "
      "true without x-kubernetes-preserve-unknown-fields"]),
    (spec(x={"type": "object", "x-kubernetes-embedded-resource": True, "properties": {"kind": {"type": "integer"}}}),
     [f'{S}.properties[x].properties[kind].type: Invalid value: "integer": must be string']),
    (spec(x={"type": "object", "x-kubernetes-embedded-resource": True, "x-kubernetes-preserve-unknown-fields": True,
             "properties": {"metadata": {"type": "object", "x-kubernetes-embedded-resource": True,
                                         "x-kubernetes-preserve-unknown-fields": True}}}),
     [f"{S}.properties[x].properties[metadata].x-kubernetes-embedded-resource: Forbidden: must not be used inside "
      "of resource meta"]),
    (spec(x={"type": "string", "x-kubernetes-map-type": "atomic"}),
     [f'{S}.properties[x].type: Invalid value: "string": must be object if x-kubernetes-map-type is specified']),
    (spec(x={"type": "object", "x-kubernetes-map-type": "granularish"}),
     [f'{S}.properties[x].x-kubernetes-map-type: Unsupported value: "granularish": supported values: "atomic", '
      '"granular"']),
    (spec(x={"type": "object", "x-kubernetes-list-type": "set"}),
     [f'{S}.properties[x].type: Invalid value: "object": must be array if x-kubernetes-list-type is specified']),
    (spec(x={"type": "array", "x-kubernetes-list-type": "bag", "items": {"type": "string"}}),
     [f'{S}.properties[x].x-kubernetes-list-type: Unsupported value: "bag": supported values: "atomic", "set", '
      '"map"']),
    (spec(x={"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "object"}}),
     [f"{S}.properties[x].items.x-kubernetes-map-type: Invalid value: null: must be atomic as item of a list "
      "with x-kubernetes-list-type=set"]),
    (spec(x={"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string", "nullable": True}}),
     [f"{S}.properties[x].items.nullable: Forbidden: cannot be nullable when x-kubernetes-list-type is set"]),
    (spec(x={"type": "array", "x-kubernetes-list-map-keys": ["a"], "items": {"type": "object"}}),
     [f"{S}.properties[x].x-kubernetes-list-type: Required value: must be map if x-kubernetes-list-map-keys is "
      "non-empty"]),
    (spec(x={"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "string"}}),
     [f"{S}.properties[x].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type "
      "is map",
      f'{S}.properties[x].items.type: Invalid value: "string": must be object if parent array\'s '
      "x-kubernetes-list-type is map"]),
    (spec(x={"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["a", "b", "a"],
             "items": {"type": "object", "properties": {"a": {"type": "string", "nullable": True},
                                                        "c": {"type": "object"}}}}),
     [f'{S}.properties[x].x-kubernetes-list-map-keys: Invalid value: ["a","b","a"]: entries must all be names of '
      "item properties",
      f'{S}.properties[x].x-kubernetes-list-map-keys: Invalid value: ["a","b","a"]: must not contain duplicate '
      "entries",
      f"{S}.properties[x].items.properties[a].default: Required value: this property is in "
      "x-kubernetes-list-map-keys, so it must have a default or be a required property",
      f"{S}.properties[x].items.properties[a].nullable: Forbidden: this property is in x-kubernetes-list-map-keys, "
      "so it cannot be nullable",
      f"{S}.properties[x].items.properties[a].default: Required value: this property is in "
      "x-kubernetes-list-map-keys, so it must have a default or be a required property",
      f"{S}.properties[x].items.properties[a].nullable: Forbidden: this property is in x-kubernetes-list-map-keys, "
      "so it cannot be nullable"]),
    # forbidden JSON-schema features
    (spec(x={"type": "array", "uniqueItems": True, "items": {"type": "string"}}),
     [f"{S}.properties[x].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity "
      "becomes quadratic"]),
    (spec(x={"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False}),
     [f"{S}.properties[x].additionalProperties: Forbidden: additionalProperties and properties are mutual "
      "exclusive"]),
    (dict(root(), additionalProperties={"type": "string"}),
     [f"{P}.additionalProperties: Forbidden: must not be used at the root"]),
    (spec(x={"$ref": "#/definitions/x"}), [f"{S}.properties[x].$ref: Forbidden: $ref is not supported"]),
    (spec(x={"type": "object", "patternProperties": {"^a": {"type": "string"}}}),
     [f"{S}.properties[x].patternProperties: Forbidden: patternProperties is not supported"]),
    (spec(x={"type": "array", "items": [{"type": "string"}]}),
     [f"{S}.properties[x].items: Forbidden: items must be a schema object and not an array"]),
    (spec(x={"type": "string", "pattern": "(unclosed"}),
     [f'{S}.properties[x].pattern: Invalid value: "(unclosed": must be a valid regular expression, but isn\'t: '
      "error parsing regexp: missing closing ): `(unclosed`"]),
    (spec(x={"type": "string", "pattern": "^(?=a)"}),
     [f"{S}.properties[x].pattern: Invalid value: \"^(?=a)\": must be a valid regular expression, but isn't: "
      "error parsing regexp: invalid or unsupported Perl syntax: `(?=`"]),
    # RE2 syntax Python's re lacks is accepted (prometheus-operator's CRDs use flags mid-pattern)
    (spec(x={"type": "string", "pattern": "^((?i)sun|mon)day(?:((:(sun|mon)day)$)|$)"}), []),
    (spec(x={"type": "string", "pattern": "^[[:alpha:]]\\p{L}*$"}), []),
    # metadata at the root
    (root(metadata={"type": "object", "properties": {"labels": {"type": "object"}}}),
     [f"{P}.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but "
      "metadata is implicitly specified"]),
    (root(metadata={"type": "string"}),
     [f'{P}.properties[metadata].type: Invalid value: "string": must be object']),
    (root(metadata={"type": "object", "default": {"name": "x"}}),
     [f"{P}.properties[metadata].default: Forbidden: must not be set in top-level metadata"]),
    (root(spec={"type": "object", "properties": {"template": {
        "type": "object", "x-kubernetes-embedded-resource": True, "properties": {"metadata": {
            "type": "object", "additionalProperties": {"type": "string", "default": "x"}}}}}}),
     [f"{S}.properties[template].properties[metadata].additionalProperties.default: Forbidden: must not be set "
      "inside additionalProperties applying to object metadata"]),
    ({"type": "object", "nullable": True}, [f"{P}.nullable: Forbidden: nullable cannot be true at the root"]),
    # defaults
    (spec(replicas={"type": "integer", "default": "x"}),
     [f'{S}.properties[replicas].default: Invalid value: "string":  in body must be of type integer: "string"']),
    (spec(size={"type": "string", "enum": ["a", "b"], "default": "c"}),
     [f'{S}.properties[size].default: Unsupported value: "c": supported values: "a", "b"']),
    (spec(o={"type": "object", "properties": {"a": {"type": "string"}}, "default": {"a": "x", "b": 1}}),
     [f'{S}.properties[o].default: Invalid value: {{"a":"x","b":1}}: must not have unknown fields']),
    (spec(o={"type": "object", "required": ["a"], "properties": {"a": {"type": "string"}}, "default": {}}),
     [f"{S}.properties[o].default.a: Required value"]),
    (spec(t={"type": "object", "x-kubernetes-embedded-resource": True, "x-kubernetes-preserve-unknown-fields": True,
             "default": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a/b"}}}),
     [f"{S}.properties[t].default.metadata.name: Invalid value: \"a/b\": may not contain '/'"]),
    (spec(t={"type": "object", "x-kubernetes-embedded-resource": True, "x-kubernetes-preserve-unknown-fields": True,
             "default": {"metadata": {}}}),
     [f"{S}.properties[t].default.apiVersion: Required value", f"{S}.properties[t].default.kind: Required value"]),
    (spec(n={"type": "string", "nullable": True, "default": None}), []),
])
def test_check_crd_schema(schema: dict[str, Any], expected: list[str]) -> None:
    assert errors_of(schema) == expected


def test_structural_errors_come_sorted_and_hide_the_defaults() -> None:
    """ValidateStructural sorts its errors; defaults are only looked at once the schema is structural."""
    schema = spec(b={"properties": {}}, a={"type": "array"}, c={"type": "integer", "default": "x"})
    assert errors_of(schema) == [
        f"{S}.properties[a].items: Required value: must be specified",
        f"{S}.properties[b].type: Required value: must not be empty for specified object fields"]


def test_unsupported_fields_are_reported_once() -> None:
    """NewStructural refuses `$schema` too; upstream shows that only when nothing else is wrong."""
    assert errors_of(dict(root(), **{"$schema": "x"})) == [
        f'{P}: Invalid value: "": OpenAPIV3Schema \'schema\' is not supported']
    assert errors_of(dict(root(), id="x")) == [f"{P}.id: Forbidden: id is not supported"]


@pytest.mark.parametrize(("schema", "expected"), [
    (root(status={"type": "object"}), []),
    ({"type": "object", "properties": {}, "x-kubernetes-validations": [{"rule": "true"}], "required": ["spec"]}, []),
    ({"type": "array", "items": {"type": "string"}},
     [f'{P}.type: Invalid value: "array": only "object" is allowed as the type at the root of the schema if the '
      "status subresource is enabled",
      f'{P}.type: Invalid value: "array": must be object at the root']),
    ({"type": "object", "minProperties": 1},
     [f'{P}: Invalid value: {{"minProperties":1,"type":"object"}}: only [Description Type Format Title Maximum '
      "ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf "
      "Required Items Properties ExternalDocs Example XPreserveUnknownFields XValidations] fields are allowed at the "
      "root of the schema if the status subresource is enabled"]),
])
def test_root_with_status_subresource(schema: dict[str, Any], expected: list[str]) -> None:
    assert errors_of(schema, status_enabled=True) == expected


def crd(*versions: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "widgets", "kind": "Widget"}, "versions": list(versions)}}


def version(name: str, schema: dict[str, Any], *, storage: bool = False, status: bool = False) -> dict[str, Any]:
    v: dict[str, Any] = {"name": name, "served": True, "storage": storage, "schema": {"openAPIV3Schema": schema}}
    if status:
        v["subresources"] = {"status": {}}
    return v


def test_a_crd_reports_a_shared_schema_at_spec_validation() -> None:
    bad = spec(x={"properties": {}})
    assert create_errors(crd(version("v1", bad, storage=True), version("v1beta1", bad))) == [
        "spec.validation.openAPIV3Schema.properties[spec].properties[x].type: Required value: must not be empty "
        "for specified object fields"]


def test_a_crd_reports_per_version_schemas_at_their_version() -> None:
    bad = spec(x={"properties": {}})
    assert create_errors(crd(version("v1", root(), storage=True), version("v1beta1", bad))) == [
        "spec.versions[1].schema.openAPIV3Schema.properties[spec].properties[x].type: Required value: must not be "
        "empty for specified object fields"]


def test_a_crd_with_the_status_subresource_restricts_its_root() -> None:
    assert create_errors(crd(version("v1", {"type": "object", "enum": [{}]}, storage=True, status=True))) == [
        'spec.validation.openAPIV3Schema: Invalid value: {"enum":[{}],"type":"object"}: only [Description Type '
        "Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems "
        "MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example XPreserveUnknownFields "
        "XValidations] fields are allowed at the root of the schema if the status subresource is enabled"]


def test_defaults_inside_resource_metadata_must_make_valid_metadata() -> None:
    template = {"type": "object", "x-kubernetes-embedded-resource": True, "properties": {
        "metadata": {"type": "object", "properties": {"name": {"type": "string", "default": "a/b"},
                                                      "labels": {"type": "object", "default": {"k": "v"},
                                                                 "additionalProperties": {"type": "string"}}}},
        "kind": {"type": "string", "default": "Pod"}}}
    assert errors_of(spec(template=template)) == [
        f'{S}.properties[template].properties[metadata].properties[name].default: Invalid value: "a/b": must '
        "result in valid metadata: metadata.name: Invalid value: \"a/b\": may not contain '/'"]
