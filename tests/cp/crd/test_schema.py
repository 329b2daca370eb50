"""cp/crd/schema.py: pruning, defaulting and validation of custom resources against a structural schema,
with the paths, types and messages kube-apiserver gives (kube-openapi's, through apiextensions)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from cp import errors
from cp.crd.schema import compile_schema
from cp.validation.meta import validate_embedded_object_meta

SPEC: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["name"],
            "properties": {
                "name": {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[a-z]+$"},
                "replicas": {"type": "integer", "format": "int32", "minimum": 0, "maximum": 10},
                "ratio": {"type": "number", "exclusiveMinimum": True, "minimum": 0, "multipleOf": 0.5},
                "step": {"type": "integer", "multipleOf": 3, "exclusiveMaximum": True, "maximum": 9},
                "size": {"type": "string", "enum": ["a", "b"]},
                "level": {"type": "integer", "enum": [1, 2]},
                "port": {"x-kubernetes-int-or-string": True},
                "when": {"type": "string", "format": "date-time"},
                "id": {"type": "string", "format": "uuid"},
                "color": {"type": "string", "format": "no-such-format"},
                "note": {"type": "string", "nullable": True},
                "tags": {"type": "array", "minItems": 1, "maxItems": 3, "x-kubernetes-list-type": "set",
                         "items": {"type": "string"}},
                "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                          "items": {"type": "object", "required": ["name"],
                                    "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}},
                "routes": {"type": "array", "x-kubernetes-list-type": "map",
                           "x-kubernetes-list-map-keys": ["host", "path"],
                           "items": {"type": "object", "properties": {"host": {"type": "string"},
                                                                      "path": {"type": "string"}}}},
                "labels": {"type": "object", "maxProperties": 2, "minProperties": 1,
                           "additionalProperties": {"type": "string", "maxLength": 3}},
                "empty": {"type": "object", "additionalProperties": False},
                "choice": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                           "oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
                "either": {"type": "string", "anyOf": [{"maxLength": 1}, {"pattern": "^x"}]},
                "both": {"type": "integer", "allOf": [{"minimum": 1}, {"maximum": 5}]},
                "never": {"type": "string", "not": {"enum": ["bad"]}},
                "template": {"type": "object", "x-kubernetes-embedded-resource": True,
                             "x-kubernetes-preserve-unknown-fields": True},
            },
        },
    },
}


def cr(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
            "spec": {"name": "ok", **spec}}


def validate(obj: dict[str, Any]) -> list[str]:
    return [c.text() for c in compile_schema(SPEC, object_meta=validate_embedded_object_meta).validate(obj)]


@pytest.mark.parametrize(("spec", "expected"), [
    ({}, []),
    ({"replicas": 3, "ratio": 1.5, "step": 6, "size": "a", "level": 2, "port": "http", "when": "2026-12-05T01:02:03Z",
      "id": "6ba7b810-9dad-11d1-80b4-00c04fd430c8", "color": "whatever", "note": None, "tags": ["x", "y"],
      "ports": [{"name": "a"}, {"name": "b"}], "routes": [{"host": "h", "path": "/a"}, {"host": "h", "path": "/b"}],
      "labels": {"a": "b"}, "empty": {}, "choice": {"a": "x"}, "either": "xyz", "both": 3, "never": "good",
      "template": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}}}, []),
    ({"replicas": 2.0, "port": 8080, "level": 1.0}, []),
    # types
    ({"replicas": "three"},
     ['spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"']),
    # a format on an integer is checked first, with Go's type name of the value (kube-openapi)
    ({"replicas": 1.5},
     ['spec.replicas: Invalid value: "float64": spec.replicas in body must be of type int32: "float64"',
      '<nil>: Invalid value: "": Checked value must be of type integer with format int32 in spec.replicas']),
    ({"replicas": 3000000000},
     ['<nil>: Invalid value: "": Checked value must be of type integer with format int32 in spec.replicas',
      "spec.replicas: Invalid value: 3000000000: spec.replicas in body should be less than or equal to 10"]),
    ({"port": True},
     ['spec.port: Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"']),
    ({"name": None}, ['spec.name: Invalid value: "null": spec.name in body must be of type string: "null"']),
    ({"tags": ["a", 1]}, ['spec.tags[1]: Invalid value: "integer": spec.tags[1] in body must be of type string: '
                          '"integer"']),
    # strings
    ({"name": "a"}, ['spec.name: Invalid value: "a": spec.name in body should be at least 2 chars long']),
    ({"name": "abcdefg"}, ["spec.name: Too long: may not be more than 5 bytes"]),
    ({"name": "AB"}, ["spec.name: Invalid value: \"AB\": spec.name in body should match '^[a-z]+$'"]),
    ({"when": "yesterday"},
     ['spec.when: Invalid value: "yesterday": spec.when in body must be of type date-time: "yesterday"']),
    ({"id": "nope"}, ['spec.id: Invalid value: "nope": spec.id in body must be of type uuid: "nope"']),
    # numbers
    ({"replicas": -1}, ["spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal "
                        "to 0"]),
    ({"ratio": 0.0}, ["spec.ratio: Invalid value: 0: spec.ratio in body should be greater than 0"]),
    # an integer value meets a fractional multipleOf truncated to an integer, as kube-openapi does
    ({"ratio": 0}, ["spec.ratio: Invalid value: 0: factor MultipleOf declared for spec.ratio must be positive: 0",
                    "spec.ratio: Invalid value: 0: spec.ratio in body should be greater than 0"]),
    ({"ratio": 0.7}, ["spec.ratio: Invalid value: 0.7: spec.ratio in body should be a multiple of 0.5"]),
    ({"step": 4}, ["spec.step: Invalid value: 4: spec.step in body should be a multiple of 3"]),
    ({"step": 9}, ["spec.step: Invalid value: 9: spec.step in body should be less than 9"]),
    # enums
    ({"size": "x"}, ['spec.size: Unsupported value: "x": supported values: "a", "b"']),
    ({"level": 3}, ['spec.level: Unsupported value: 3: supported values: "1", "2"']),
    # required
    ({"ports": [{"port": 1}]}, ["spec.ports[0].name: Required value"]),
    # arrays and objects
    ({"tags": []}, ["spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items"]),
    ({"tags": ["a", "b", "c", "d"]}, ["spec.tags: Too many: 4: must have at most 3 items"]),
    ({"labels": {}}, ["spec.labels: Invalid value: 0: spec.labels in body should have at least 1 properties"]),
    ({"labels": {"a": "1", "b": "2", "c": "3"}}, ["spec.labels: Too many: 3: must have at most 2 items"]),
    ({"labels": {"a": "1234"}}, ["spec.labels.a: Too long: may not be more than 3 bytes"]),
    ({"empty": {"x": 1}}, ['spec.empty: Invalid value: "x": spec.empty.x in body is a forbidden property']),
    # list types
    ({"tags": ["a", "b", "a"]}, ['spec.tags[2]: Duplicate value: "a"']),
    ({"tags": ["a", "a", "a"]}, ['spec.tags[1]: Duplicate value: "a"']),
    ({"ports": [{"name": "a"}, {"name": "b", "port": 1}, {"name": "a", "port": 2}]},
     ['spec.ports[2]: Duplicate value: {"name":"a"}']),
    ({"routes": [{"host": "h", "path": "/"}, {"path": "/", "host": "h"}, {"host": "h"}]},
     ['spec.routes[1]: Duplicate value: {"host":"h","path":"/"}']),
    ({"ports": [{"name": "a"}, "b"]},
     ['spec.ports[1]: Invalid value: "string": spec.ports[1] in body must be of type object: "string"',
      'spec.ports[1]: Invalid value: "b": must be an object for an array of list-type map']),
    # junctors
    ({"choice": {}},
     ['<nil>: Invalid value: "": "spec.choice" must validate one and only one schema (oneOf). Found none valid',
      "spec.choice.a: Required value"]),
    ({"choice": {"a": "x", "b": "y"}},
     ['<nil>: Invalid value: "": "spec.choice" must validate one and only one schema (oneOf). Found 2 valid '
      "alternatives"]),
    ({"either": "abc"},
     ['<nil>: Invalid value: "": "spec.either" must validate at least one schema (anyOf)',
      "spec.either: Too long: may not be more than 1 byte"]),
    ({"both": 9},
     ["spec.both: Invalid value: 9: spec.both in body should be less than or equal to 5",
      '<nil>: Invalid value: "": "spec.both" must validate all the schemas (allOf)']),
    ({"never": "bad"}, ['<nil>: Invalid value: "": "spec.never" must not validate the schema (not)']),
    # embedded resources
    ({"template": {"metadata": {"name": "a/b", "labels": {"x": "y z"}}}},
     ["spec.template.apiVersion: Required value", "spec.template.kind: Required value",
      "spec.template.metadata.name: Invalid value: \"a/b\": may not contain '/'",
      'spec.template.metadata.labels: Invalid value: "y z": a valid label must be an empty string or consist of '
      "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
      "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
      "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"]),
    ({"template": {"apiVersion": "a/b/c", "kind": "Config_Map"}},
     ['spec.template.apiVersion: Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c',
      'spec.template.kind: Invalid value: "Config_Map": may have mixed case, but should otherwise match: a DNS-1035 '
      "label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and "
      "end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is "
      "'[a-z]([-a-z0-9]*[a-z0-9])?')"]),
    ({"template": {"apiVersion": "v1", "kind": 3, "metadata": {"name": 5}}},
     ['spec.template.kind: Invalid value: 3: must be a string',
      'spec.template.metadata: Invalid value: {"name":5}: json: cannot unmarshal number into Go struct field '
      "ObjectMeta.name of type string"]),
])
def test_validate(spec: dict[str, Any], expected: list[str]) -> None:
    assert validate(cr(**spec)) == expected


def test_required_and_invalid_root() -> None:
    obj = cr()
    del obj["spec"]["name"]
    assert validate(obj) == ["spec.name: Required value"]
    assert validate({"apiVersion": "example.com/v1", "kind": "Widget", "spec": []}) == [
        'spec: Invalid value: "array": spec in body must be of type object: "array"']


def test_a_cr_message_as_kube_apiserver_writes_it() -> None:
    causes = compile_schema(SPEC).validate(cr(replicas="3", size="x"))
    err = errors.Invalid(kind="Widget", group="example.com", name="w", causes=causes)
    assert err.message == (
        'Widget.example.com "w" is invalid: [spec.replicas: Invalid value: "string": spec.replicas in body must be '
        'of type integer: "string", spec.size: Unsupported value: "x": supported values: "a", "b"]')
    assert err.status()["details"]["causes"][0] == {
        "reason": "FieldValueTypeInvalid", "field": "spec.replicas",
        "message": 'Invalid value: "string": spec.replicas in body must be of type integer: "string"'}


def test_float_values_and_bounds_print_as_go_does() -> None:
    schema = compile_schema({"type": "object", "properties": {"x": {"type": "number", "maximum": 1e6},
                                                              "y": {"type": "number", "enum": [0.5]}}})
    assert [c.text() for c in schema.validate({"x": 2.5e6, "y": 1e21})] == [
        "x: Invalid value: 2.5e+06: x in body should be less than or equal to 1e+06",
        'y: Unsupported value: 1e+21: supported values: "0.5"']


def test_status_is_validated_under_status() -> None:
    schema = compile_schema({"type": "object", "properties": {"status": {"type": "object", "properties": {
        "ready": {"type": "boolean"}}}}})
    assert [c.text() for c in schema.validate_status({"ready": "yes"})] == [
        'status.ready: Invalid value: "string": ready in body must be of type boolean: "string"']


# ---------------------------------------------------------------- pruning

PRUNED: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "a": {"type": "string"},
                "obj": {"type": "object", "properties": {"b": {"type": "integer"}}},
                "list": {"type": "array", "items": {"type": "object", "properties": {"c": {"type": "string"}}}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                         "properties": {"typed": {"type": "object", "properties": {"d": {"type": "string"}}}}},
                "map": {"type": "object", "additionalProperties": {"type": "object",
                                                                    "properties": {"e": {"type": "string"}}}},
                "template": {"type": "object", "x-kubernetes-embedded-resource": True,
                             "properties": {"spec": {"type": "object", "properties": {"f": {"type": "string"}}}}},
                "n": {"type": "string"},
                "nn": {"type": "string", "nullable": True},
                "nd": {"type": "string", "default": "d"},
            },
        },
    },
}


def test_prune_drops_and_names_unknown_fields() -> None:
    obj = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "labels": {"a": "b"}},
           "extra": 1,
           "spec": {"a": "x", "zz": True, "obj": {"b": 1, "y": 2}, "list": [{"c": "x", "q": 1}, {"q": 2}],
                    "free": {"anything": {"goes": 1}, "typed": {"d": "x", "gone": 1}},
                    "map": {"k1": {"e": "x", "no": 1}},
                    "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "bogus": 1},
                                 "spec": {"f": "x", "g": 1}, "status": {}},
                    "n": None, "nn": None, "nd": None}}
    unknown = compile_schema(PRUNED).prune(obj)
    assert unknown == ["extra", "spec.free.typed.gone", "spec.list[0].q", "spec.list[1].q", "spec.map.k1.no",
                       "spec.obj.y", "spec.template.spec.g", "spec.template.status", "spec.zz",
                       "spec.template.metadata.bogus"]
    assert obj == {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "labels": {"a": "b"}},
                   "spec": {"a": "x", "obj": {"b": 1}, "list": [{"c": "x"}, {}],
                            "free": {"anything": {"goes": 1}, "typed": {"d": "x"}},
                            "map": {"k1": {"e": "x"}},
                            "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                                         "spec": {"f": "x"}},
                            "nn": None, "nd": None}}


def test_prune_without_unknown_fields_changes_nothing() -> None:
    obj = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"a": "x"}}
    before = copy.deepcopy(obj)
    assert compile_schema(PRUNED).prune(obj) == []
    assert obj == before


# ---------------------------------------------------------------- defaulting

DEFAULTED: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "default": {},
            "properties": {
                "replicas": {"type": "integer", "default": 1},
                "mode": {"type": "string", "default": "fast", "nullable": True},
                "opts": {"type": "object", "default": {"x": 1}, "properties": {"x": {"type": "integer"},
                                                                               "y": {"type": "integer", "default": 2}}},
                "items": {"type": "array", "items": {"type": "object", "default": {"k": "v"},
                                                     "properties": {"k": {"type": "string"},
                                                                    "w": {"type": "integer", "default": 7}}}},
                "extra": {"type": "object", "additionalProperties": {"type": "string", "default": "dflt"}},
            },
        },
    },
}


@pytest.mark.parametrize(("spec", "expected"), [
    (None, {"replicas": 1, "mode": "fast", "opts": {"x": 1, "y": 2}}),
    ({}, {"replicas": 1, "mode": "fast", "opts": {"x": 1, "y": 2}}),
    ({"replicas": 3, "mode": None, "opts": {}},  # nullable keeps its null; a given object is defaulted inside
     {"replicas": 3, "mode": None, "opts": {"y": 2}}),
    ({"replicas": None}, {"replicas": 1, "mode": "fast", "opts": {"x": 1, "y": 2}}),
    ({"items": [{"w": 1}, None, {}], "extra": {"a": None, "b": "x"}},
     {"replicas": 1, "mode": "fast", "opts": {"x": 1, "y": 2}, "items": [{"w": 1}, {"k": "v", "w": 7}, {"w": 7}],
      "extra": {"a": "dflt", "b": "x"}}),
])
def test_apply_defaults(spec: dict[str, Any] | None, expected: dict[str, Any]) -> None:
    obj: dict[str, Any] = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    if spec is not None:
        obj["spec"] = spec
    compile_schema(DEFAULTED).apply_defaults(obj)
    assert obj["spec"] == expected


def test_defaults_are_copies() -> None:
    schema = compile_schema(DEFAULTED)
    a: dict[str, Any] = {}
    b: dict[str, Any] = {}
    schema.apply_defaults(a)
    schema.apply_defaults(b)
    a["spec"]["opts"]["x"] = 5
    assert b["spec"]["opts"]["x"] == 1


def test_null_pruning_happens_with_prune_then_defaults_fill() -> None:
    """kube-apiserver drops non-nullable nulls without defaults when decoding, then defaults the rest."""
    schema = compile_schema(DEFAULTED)
    obj: dict[str, Any] = {"spec": {"replicas": None, "opts": None, "mode": None, "items": None}}
    assert schema.prune(obj) == []
    assert obj["spec"] == {"replicas": None, "opts": None, "mode": None}
    schema.apply_defaults(obj)
    assert obj["spec"] == {"replicas": 1, "opts": {"x": 1, "y": 2}, "mode": None}


# ---------------------------------------------------------------- updates (CRDValidationRatcheting)


def test_an_update_keeps_values_the_schema_now_refuses_if_unchanged() -> None:
    schema = compile_schema(SPEC)
    old = cr(name="Old1", size="x", ports=[{"name": "a", "port": "80"}, {"name": "b"}])
    new = copy.deepcopy(old)
    new["spec"]["replicas"] = 3
    assert [c.text() for c in schema.validate_update(new, old)] == []
    new["spec"]["ports"] = [{"name": "b"}, {"name": "a", "port": "80"}]  # map lists correlate by key
    assert [c.text() for c in schema.validate_update(new, old)] == []
    new["spec"]["size"] = "y"
    new["spec"]["ports"][1]["port"] = "81"
    assert [c.text() for c in schema.validate_update(new, old)] == [
        'spec.size: Unsupported value: "y": supported values: "a", "b"',
        'spec.ports[1].port: Invalid value: "string": spec.ports[1].port in body must be of type integer: '
        '"string"']


def test_an_update_checks_list_uniqueness_only_when_the_old_object_was_unique() -> None:
    schema = compile_schema(SPEC)
    old = cr(tags=["a", "a"])
    new = cr(tags=["a", "a", "b"])
    assert [c.text() for c in schema.validate_update(new, old)] == []
    assert [c.text() for c in schema.validate_update(new, cr(tags=["a"]))] == ['spec.tags[1]: Duplicate value: "a"']


def test_an_unchanged_status_is_ratcheted() -> None:
    schema = compile_schema({"type": "object", "properties": {"status": {"type": "object", "properties": {
        "ready": {"type": "boolean"}, "count": {"type": "integer"}}}}})
    assert schema.validate_status({"ready": "yes", "count": 1}, {"ready": "yes"}) == []
    assert [c.text() for c in schema.validate_status({"ready": "yes", "count": "1"}, {"ready": "yes"})] == [
        'status.count: Invalid value: "string": count in body must be of type integer: "string"']


def test_prune_keeps_object_meta_fields_only() -> None:
    obj: dict[str, Any] = {"apiVersion": "example.com/v1", "kind": "Widget",
                           "metadata": {"name": "w", "color": "red", "ownerReferences": [
                               {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u", "extra": 1}]},
                           "spec": {"template": {"metadata": {"name": "p", "tint": 1}, "z": 1}}}
    assert compile_schema(PRUNED).prune(obj) == [
        "metadata.color", "metadata.ownerReferences[0].extra", "spec.template.z", "spec.template.metadata.tint"]
    assert obj["metadata"] == {"name": "w", "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p",
                                                                 "uid": "u"}]}
    assert obj["spec"] == {"template": {"metadata": {"name": "p"}}}


def test_a_status_write_checks_the_status_and_list_uniqueness() -> None:
    schema = compile_schema({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"tags": {"type": "array", "x-kubernetes-list-type": "set",
                                                           "items": {"type": "string"}}}},
        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}}})
    old = {"spec": {"tags": ["a"]}, "status": {"ready": True}}
    assert [c.text() for c in schema.validate_status_update(
        {"spec": {"tags": ["a", "a"]}, "status": {"ready": "no"}}, old)] == [
        'status.ready: Invalid value: "string": ready in body must be of type boolean: "string"',
        'spec.tags[1]: Duplicate value: "a"']
    assert schema.validate_status_update({"spec": {"tags": ["a", "a"]}}, {"spec": {"tags": ["a", "a"]}}) == []
