"""The OpenAPI v2 (Swagger 2.0) document of `/openapi/v2`, as JSON and as gnostic's protobuf.

Why it matters: kubectl and Helm fall back to it. When server-side field validation cannot be used
for an object — the items of a `kind: List`, a kind or group/version the v3 documents do not have —
kubectl validates client-side against the v2 schemas (`kubectl/pkg/validation/schema.go`), skipping
kinds v2 does not define, so that the builder then reports upstream's `no matches for kind "X" in
version "Y"` for those and applies the rest. Without a v2 document that step fails for the whole file
(`the server could not find the requested resource`). `kubectl explain` falls back to it too.

Built from the same registry and schemas as the v3 documents (`cp.openapi.spec`, one per served
group/version): the same paths and operations, the v3 components as `definitions` (`$ref`s to
`#/definitions/`, and a reference with a description written as upstream's v2 writes it: `$ref`
beside `description`, which kube-openapi's v2 parser requires), request bodies as `in: body`
parameters with `consumes`, responses with `schema`. PATCH operations list the same patch types as
v3 (no strategic merge patch: kubectl then builds strategic patches from its compiled-in types, as
with v3; `cp/openapi.py`).

Custom resources are merged in as upstream's v2 OpenAPI controller merges each definition's served
versions into the static document (`cp.crd.openapi`: their own v2 schemas, defaults pruned).

The built-in document is built on first use and cached (JSON, protobuf, their gzip forms); one with
custom resources is built for a snapshot of them, and kept by the server per registry revision. The
ETag is upstream's: the upper-case hex SHA-512 of the JSON, shared by both forms. Pure.
"""

from __future__ import annotations

import datetime
import functools
import gzip
import hashlib
from collections.abc import Sequence
from typing import Any

import msgspec

from cp import gnostic, openapi, schemas
from cp import resources as res

JSON = "application/json"
# kube-openapi answers with the dotted form and accepts the older `@` form client-go still sends.
PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
PROTOBUF_ACCEPTED = (PROTOBUF, "application/com.github.proto-openapi.spec.v2@v1.0+protobuf")

_DEFINITIONS = "#/definitions/"
_V3_REF = "#/components/schemas/"
_METHODS = ("get", "put", "post", "delete", "patch")
_PRODUCES = ["application/json", "application/yaml", "application/vnd.kubernetes.protobuf"]
_CODE_TEXT = {"200": "OK", "201": "Created", "202": "Accepted"}
_enc = msgspec.json.Encoder()


def _schema(node: Any) -> Any:
    """A v3 schema object as v2 writes it: `#/definitions/` references, and `allOf: [{$ref}]` with
    siblings (v3's way to describe a reference) as the `$ref` itself beside them."""
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "$ref" and isinstance(value, str):
            out[key] = _DEFINITIONS + value.removeprefix(_V3_REF)
        elif key == "properties" and isinstance(value, dict):
            out[key] = {name: _schema(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties"):
            out[key] = _schema(value)
        elif key == "allOf" and isinstance(value, list):
            subs = [_schema(v) for v in value]
            if len(subs) == 1 and isinstance(subs[0], dict) and list(subs[0]) == ["$ref"]:
                out["$ref"] = subs[0]["$ref"]
            else:
                out[key] = subs
        else:
            out[key] = value  # keywords, descriptions, extensions, enum and default values
    return out


def _parameter(param: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = dict(param.get("schema") or {"type": "string"})
    if param.get("description"):
        out["description"] = param["description"]
    out["name"] = param["name"]
    out["in"] = param["in"]
    if param.get("required"):
        out["required"] = True
    return out


def _operation(op: dict[str, Any], *, method: str, tag: str) -> dict[str, Any]:
    params = [_parameter(p) for p in op.get("parameters", ())]
    consumes = ["*/*"]
    body = op.get("requestBody")
    if body is not None:
        media = list(body["content"])
        params.insert(0, {"name": "body", "in": "body", "required": bool(body.get("required")),
                          "schema": _schema(body["content"][media[0]]["schema"])})
        if method == "patch":
            consumes = media
    responses: dict[str, Any] = {}
    for code, response in op["responses"].items():
        content = response.get("content") or {}
        entry: dict[str, Any] = {"description": _CODE_TEXT.get(code, code)}
        if JSON in content:
            entry["schema"] = _schema(content[JSON]["schema"])
        responses[code] = entry
    responses["401"] = {"description": "Unauthorized"}
    out: dict[str, Any] = {"consumes": consumes, "operationId": op["operationId"]}
    if params:
        out["parameters"] = params
    out.update({"produces": _PRODUCES, "responses": responses, "schemes": ["https"], "tags": [tag],
                "x-kubernetes-action": op["x-kubernetes-action"],
                "x-kubernetes-group-version-kind": op["x-kubernetes-group-version-kind"]})
    return out


def _tag(group: str, version: str) -> str:
    """Upstream's operation tag: `core_v1`, `apps_v1`, `resource_v1` (the group's first label)."""
    return f"{group.split('.')[0] if group else 'core'}_{version}".replace("-", "_")


def _add_group_version(paths: dict[str, Any], definitions: dict[str, Any], spec: dict[str, Any], *,
                       group: str, version: str) -> None:
    tag = _tag(group, version)
    for path, item in spec["paths"].items():
        converted: dict[str, Any] = {m: _operation(item[m], method=m, tag=tag) for m in _METHODS if m in item}
        if item.get("parameters"):
            converted["parameters"] = [_parameter(p) for p in item["parameters"]]
        paths[path] = converted
    for name, schema in spec["components"]["schemas"].items():
        if name not in definitions:
            definitions[name] = _schema(schema)


def _document(paths: dict[str, Any], definitions: dict[str, Any]) -> dict[str, Any]:
    return {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": f"v{schemas.K8S_VERSION}"},
        "paths": paths,
        "definitions": dict(sorted(definitions.items())),
        "securityDefinitions": {"BearerToken": {"description": "Bearer Token authentication", "type": "apiKey",
                                                "name": "authorization", "in": "header"}},
        "security": [{"BearerToken": []}],
    }


@functools.cache
def _builtin() -> dict[str, Any]:
    paths: dict[str, Any] = {}
    definitions: dict[str, Any] = {}
    for group, version in res.group_versions():
        spec = openapi.spec(openapi.gv_path(group, version))
        assert spec is not None
        _add_group_version(paths, definitions, spec, group=group, version=version)
    return _document(paths, definitions)


def swagger(*, custom: Sequence[res.ResourceKind] = (), builtin: Sequence[res.ResourceKind] = (),
            off: Sequence[res.ResourceKind] = ()) -> dict[str, Any]:
    """The whole document as a dict: the built-in resources (cached: not to be modified) and, when
    given, the served versions of custom resources (`Registry.custom_kinds()`), whose definitions are
    made for v2 as upstream's v2 controller makes them (`cp.crd.openapi.item_schema(v2=True)`); the
    built-in kinds served beside the default ones (`builtin`: `Registry.gated_kinds()`, a feature gate
    or `--runtime-config` on) and without the paths of the default ones switched `off`."""
    base = _builtin()
    if not custom and not builtin and not off:
        return base
    from cp.crd import openapi as crd_openapi

    paths = dict(base["paths"])
    definitions = dict(base["definitions"])
    for kind in off:
        prefix = kind.path_prefix()
        for path in [p for p in paths if any(p == f"{prefix}{mid}/{kind.plural}" or p.startswith(f"{prefix}{mid}/{kind.plural}/")
                                             for mid in ("", "/namespaces/{namespace}", "/watch",
                                                         "/watch/namespaces/{namespace}"))]:
            del paths[path]
    extra: dict[tuple[str, str], list[res.ResourceKind]] = {}
    for kind in builtin:
        extra.setdefault((kind.group, kind.version), []).append(kind)
    for (group, version), kinds in extra.items():
        _add_group_version(paths, definitions, openapi.build_spec(group, version, kinds), group=group,
                           version=version)
    by_gv: dict[tuple[str, str], list[res.ResourceKind]] = {}
    for kind in custom:
        by_gv.setdefault((kind.group, kind.version), []).append(kind)
    for (group, version), kinds in by_gv.items():
        spec = openapi.build_spec(group, version, res.kinds_in(group, version) + kinds)
        _add_group_version(paths, definitions, spec, group=group, version=version)
        for kind in kinds:
            definitions[crd_openapi.model_name(kind)] = _schema(crd_openapi.item_schema(kind, v2=True))
            definitions[crd_openapi.model_name(kind, list_kind=True)] = _schema(crd_openapi.list_schema(kind))
    return _document(paths, definitions)


class Served(msgspec.Struct, frozen=True, kw_only=True):
    """One form of the document, ready to send."""

    body: bytes
    gzipped: bytes
    content_type: str
    etag: str  # without quotes
    last_modified: datetime.datetime


def _made(body_json: bytes, doc: dict[str, Any], *, protobuf: bool, etag: str,
          last_modified: datetime.datetime) -> Served:
    body = gnostic.encode(doc) if protobuf else body_json
    return Served(body=body, gzipped=gzip.compress(body, compresslevel=6, mtime=0),
                  content_type=PROTOBUF if protobuf else JSON, etag=etag, last_modified=last_modified)


@functools.cache
def _json() -> bytes:
    return _enc.encode(_builtin())


@functools.cache
def _built_at() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC).replace(microsecond=0)


def _hash(body: bytes) -> str:
    return hashlib.sha512(body).hexdigest().upper()


@functools.cache
def etag() -> str:
    """The built-in document's ETag."""
    return _hash(_json())


@functools.cache
def _builtin_served(protobuf: bool) -> Served:
    return _made(_json(), _builtin(), protobuf=protobuf, etag=etag(), last_modified=_built_at())


def served(*, protobuf: bool, custom: Sequence[res.ResourceKind] = (), builtin: Sequence[res.ResourceKind] = (),
           off: Sequence[res.ResourceKind] = ()) -> Served:
    """The JSON or protobuf form. The built-in document is built on the first call and cached; with
    custom resources (a snapshot of `Registry.custom_kinds()`) or other built-in kinds (`swagger`) it
    is built anew, for the caller to keep per registry revision (`api.openapi`), with its own ETag."""
    if not custom and not builtin and not off:
        return _builtin_served(protobuf)
    doc = swagger(custom=custom, builtin=builtin, off=off)
    body = _enc.encode(doc)
    return _made(body, doc, protobuf=protobuf, etag=_hash(body),
                 last_modified=datetime.datetime.now(datetime.UTC).replace(microsecond=0))
