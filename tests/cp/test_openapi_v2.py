"""The OpenAPI v2 document (`cp.openapi_v2`) and its gnostic protobuf form (`cp.gnostic`).

In scope: what kubectl's v2 readers need — every served kind defined with its group-version-kind, a
PATCH operation with `fieldValidation`, schemas kube-openapi's v2 parser (`pkg/util/proto`) accepts —
and the protobuf wire form, checked against bytes written by hand from gnostic's OpenAPIv2.proto.
Out of scope: HTTP (tests/api/test_openapi.py) and real kubectl reading it (tests/kubectl/test_openapi.py).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from cp import gnostic, openapi_v2, schemas
from cp import resources as res

_PRIMITIVES = {"string", "number", "integer", "boolean"}


def _kube_openapi_problems(name: str, node: dict[str, Any], models: set[str]) -> list[str]:
    """What kube-openapi's `proto.NewOpenAPIData` refuses (document.go: ParseSchema and friends)."""
    out: list[str] = []
    if "$ref" in node:
        ref = node["$ref"]
        if "properties" in node or "type" in node:
            out.append(f"{name}: a reference with properties or a type")
        if not ref.startswith("#/definitions/") or ref.removeprefix("#/definitions/") not in models:
            out.append(f"{name}: dangling reference {ref}")
        return out
    types = node.get("type")
    types = [types] if isinstance(types, str) else types or []
    if len(types) > 1:
        out.append(f"{name}: several types {types}")
    kind = types[0] if types else None
    if kind == "array":
        items = node.get("items")
        if not isinstance(items, dict):
            out.append(f"{name}: an array needs exactly one items schema")
        else:
            out += _kube_openapi_problems(f"{name}[]", items, models)
    elif kind in (None, "object"):
        for field, sub in (node.get("properties") or {}).items():
            out += _kube_openapi_problems(f"{name}.{field}", sub, models)
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            out += _kube_openapi_problems(f"{name}{{}}", extra, models)
    elif kind not in _PRIMITIVES:
        out.append(f"{name}: unknown primitive type {kind!r}")
    return out


def test_kube_openapi_parses_every_definition() -> None:
    definitions = openapi_v2.swagger()["definitions"]
    models = set(definitions)
    problems = [p for name, schema in definitions.items() for p in _kube_openapi_problems(name, schema, models)]
    assert problems == []
    raw = json.dumps(openapi_v2.swagger())
    assert "#/components/" not in raw and '"allOf": [' not in raw  # v3 forms all converted


def test_every_served_kind_is_defined_and_patchable_with_field_validation() -> None:
    doc = openapi_v2.swagger()
    gvks = {(g["group"], g["version"], g["kind"]) for s in doc["definitions"].values()
            for g in s.get("x-kubernetes-group-version-kind", ())}
    patches = {(op["x-kubernetes-group-version-kind"]["group"], op["x-kubernetes-group-version-kind"]["version"],
                op["x-kubernetes-group-version-kind"]["kind"]): op
               for item in doc["paths"].values() for method, op in item.items() if method == "patch"}
    for kind in res.KINDS:
        key = (kind.group, kind.version, kind.kind)
        assert key in gvks, key
        if "patch" in kind.verbs:
            op = patches[key]
            assert any(p["name"] == "fieldValidation" and p["in"] == "query" for p in op["parameters"]), key
            assert "application/apply-patch+yaml" in op["consumes"]
            # As in the v3 documents: kubectl builds strategic merge patches from its compiled-in types.
            assert "application/strategic-merge-patch+json" not in op["consumes"]


def test_references_are_written_as_upstreams_v2() -> None:
    deployment = openapi_v2.swagger()["definitions"]["io.k8s.api.apps.v1.Deployment"]
    assert deployment["properties"]["metadata"] == {
        "$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
        "description": schemas.definitions()["io.k8s.api.apps.v1.Deployment"]["properties"]["metadata"]["description"]}
    containers = openapi_v2.swagger()["definitions"]["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name" and containers["type"] == "array"
    # JSONSchemaProps has fields named "$ref", "allOf" and "items": they stay fields.
    props = openapi_v2.swagger()["definitions"][
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps"]["properties"]
    assert props["$ref"]["type"] == "string" and props["allOf"]["type"] == "array"


def test_operations_have_body_parameters_and_typed_responses() -> None:
    item = openapi_v2.swagger()["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]
    assert item["parameters"][0] == {"type": "string", "uniqueItems": True, "name": "namespace", "in": "path",
                                     "required": True}
    put = item["put"]
    assert put["parameters"][0] == {"name": "body", "in": "body", "required": True,
                                    "schema": {"$ref": "#/definitions/io.k8s.api.apps.v1.Deployment"}}
    assert put["responses"]["200"] == {"description": "OK",
                                       "schema": {"$ref": "#/definitions/io.k8s.api.apps.v1.Deployment"}}
    assert put["x-kubernetes-group-version-kind"] == {"group": "apps", "version": "v1", "kind": "Deployment"}
    assert put["tags"] == ["apps_v1"] and put["x-kubernetes-action"] == "put"


def test_etag_is_sha512_of_the_json_for_both_forms() -> None:
    js, pb = openapi_v2.served(protobuf=False), openapi_v2.served(protobuf=True)
    assert re.fullmatch(r"[0-9A-F]{128}", js.etag) and js.etag == pb.etag
    assert pb.content_type == "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    assert json.loads(js.body)["swagger"] == "2.0"


# ------------------------------------------------------------------------------------------ gnostic


def test_gnostic_wire_form_by_hand() -> None:
    # Document: 1 swagger (string) -> tag 0x0a.
    assert gnostic.encode({"swagger": "2.0"}) == b"\x0a\x032.0"
    # Definitions (9) -> NamedSchema (1: name 1, value 2) -> Schema: type (22) TypeItem{1: "object"},
    # properties (25) Properties{NamedSchema "a" -> Schema $ref (1)}, additionalProperties (21) boolean (2)
    # false written (a oneof member), x-k (31) NamedAny{1 "x-k", 2 Any{2 yaml "true"}}.
    schema = {"type": "object", "properties": {"a": {"$ref": "#/definitions/B"}}, "additionalProperties": False,
              "x-k": True}
    ref = b"\x0a\x0f#/definitions/B"
    named_a = b"\x0a\x01a" + b"\x12" + bytes([len(ref)]) + ref
    properties = b"\x0a" + bytes([len(named_a)]) + named_a
    any_true = b"\x12\x04true"
    ext = b"\x0a\x03x-k" + b"\x12" + bytes([len(any_true)]) + any_true
    body = (b"\xaa\x01\x02\x10\x00"  # 21 additionalProperties {2: false}
            + b"\xb2\x01\x08\x0a\x06object"  # 22 type {1: "object"}
            + b"\xca\x01" + bytes([len(properties)]) + properties  # 25 properties
            + b"\xfa\x01" + bytes([len(ext)]) + ext)  # 31 vendor_extension
    named = b"\x0a\x01S" + b"\x12" + bytes([len(body)]) + body
    definitions = b"\x0a" + bytes([len(named)]) + named
    assert gnostic.encode({"definitions": {"S": schema}}) == b"\x4a" + bytes([len(definitions)]) + definitions


def test_gnostic_parameters_and_responses_by_hand() -> None:
    op = {"parameters": [{"$ref": "#/parameters/p"}, {"name": "q", "in": "query", "uniqueItems": True},
                         {"name": "body", "in": "body", "required": True}],
          "responses": {"200": {"description": "OK"}}}
    json_ref = b"\x12\x10\x0a\x0e#/parameters/p"  # ParametersItem.json_reference (2) {$ref (1)}
    query_sub = b"\x12\x05query" + b"\x22\x01q" + b"\xa0\x01\x01"  # in (2), name (4), uniqueItems (20)
    non_body = b"\x1a" + bytes([len(query_sub)]) + query_sub  # NonBodyParameter.query (3)
    parameter = b"\x12" + bytes([len(non_body)]) + non_body  # Parameter.non_body_parameter (2)
    query = b"\x0a" + bytes([len(parameter)]) + parameter  # ParametersItem.parameter (1)
    body_param = b"\x12\x04body" + b"\x1a\x04body" + b"\x20\x01"  # name (2), in (3), required (4)
    body_parameter = b"\x0a" + bytes([len(body_param)]) + body_param  # Parameter.body_parameter (1)
    body = b"\x0a" + bytes([len(body_parameter)]) + body_parameter
    response = b"\x0a\x02OK"
    value = b"\x0a" + bytes([len(response)]) + response  # ResponseValue.response (1)
    named = b"\x0a\x03200" + b"\x12" + bytes([len(value)]) + value
    responses = b"\x0a" + bytes([len(named)]) + named
    expected = b"".join(b"\x42" + bytes([len(p)]) + p for p in (json_ref, query, body)) \
        + b"\x4a" + bytes([len(responses)]) + responses
    item = {"get": op}
    got = gnostic.encode({"paths": {"/x": item}})
    operation = b"\x12" + bytes([len(expected)]) + expected  # PathItem.get (2)
    named_path = b"\x0a\x02/x" + b"\x12" + bytes([len(operation)]) + operation
    assert got == b"\x42" + bytes([len(named_path) + 2]) + b"\x12" + bytes([len(named_path)]) + named_path


def test_gnostic_refuses_what_it_cannot_hold() -> None:
    with pytest.raises(gnostic.EncodeError, match=r"\$\.definitions\.S\.oneOf: not a field of Schema"):
        gnostic.encode({"definitions": {"S": {"oneOf": []}}})
    with pytest.raises(gnostic.EncodeError, match="unknown parameter location"):
        gnostic.encode({"paths": {"/x": {"get": {"parameters": [{"name": "a", "in": "cookie"}]}}}})
    with pytest.raises(gnostic.EncodeError, match="expected a string"):
        gnostic.encode({"swagger": 2})


def test_the_served_document_encodes_whole() -> None:
    pb = openapi_v2.served(protobuf=True).body
    assert pb.startswith(b"\x0a\x032.0\x12")  # swagger, then info
    doc = openapi_v2.swagger()
    for name in ("io.k8s.api.resource.v1.ResourceClaim", "io.k8s.api.core.v1.Pod"):
        assert name.encode() in pb and name in doc["definitions"]
