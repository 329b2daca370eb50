"""OpenAPI v3 documents: what kubectl's validation and explain look for (kubectl-compat.md §3).

Out of scope: kubectl itself (tests/kubectl/ runs `explain` and `create -f` against the server).
"""

from __future__ import annotations

import json
import re

from cp import openapi
from cp import resources as res


def test_index_lists_every_served_group_version() -> None:
    paths = openapi.index()["paths"]
    for group, version in res.group_versions():
        key = openapi.gv_path(group, version)
        assert paths[key]["serverRelativeURL"].startswith(f"/openapi/v3/{key}?hash=")


def test_every_kind_has_patch_with_field_validation_and_no_smp() -> None:
    for kind in res.KINDS:
        doc = json.loads(openapi.document(openapi.gv_path(kind.group, kind.version)) or b"{}")
        patches = [op["patch"] for op in doc["paths"].values() if "patch" in op
                   and op["patch"]["x-kubernetes-group-version-kind"]["kind"] == kind.kind]
        assert patches, kind.kind
        for op in patches:
            assert any(p["name"] == "fieldValidation" for p in op["parameters"])
            content = op["requestBody"]["content"]
            assert "application/strategic-merge-patch+json" not in content
            assert "application/apply-patch+yaml" in content


def test_refs_resolve_and_kinds_carry_gvk_arrays() -> None:
    for group, version in res.group_versions():
        raw = openapi.document(openapi.gv_path(group, version))
        assert raw is not None
        doc = json.loads(raw)
        schemas = doc["components"]["schemas"]
        refs = set(re.findall(r'#/components/schemas/([^"]+)', raw.decode()))
        assert refs <= set(schemas)
        for kind in res.kinds_in(group, version):
            gvks = [s.get("x-kubernetes-group-version-kind") for s in schemas.values()]
            assert any(isinstance(g, list) and {"group": group, "version": version, "kind": kind.kind} in g
                       for g in gvks), kind.kind


def test_explain_has_descriptions_and_no_null_types() -> None:
    doc = json.loads(openapi.document("apis/resource.k8s.io/v1") or b"{}")
    spec = doc["components"]["schemas"]["io.k8s.api.resource.v1.DeviceClaim"]
    assert spec["description"]
    assert spec["properties"]["requests"]["type"] == "array"
    assert "null" not in json.dumps(doc["components"]["schemas"]["io.k8s.api.resource.v1.ResourceClaim"])


def test_unknown_group_version() -> None:
    assert openapi.document("apis/nope/v1") is None


def test_fields_named_like_keywords_stay_fields() -> None:
    """JSONSchemaProps has fields named "$ref" and "allOf": neither is taken for a reference."""
    doc = json.loads(openapi.document("apis/apiextensions.k8s.io/v1") or b"{}")
    props = doc["components"]["schemas"][
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps"]["properties"]
    assert props["$ref"]["type"] == "string"
    assert props["allOf"]["type"] == "array" and props["allOf"]["items"]["$ref"].endswith(".JSONSchemaProps")
