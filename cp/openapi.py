"""OpenAPI v3 documents for every served group/version, generated from the official 1.37 definitions.

What kubectl needs (`../shared/reference/kubectl-compat.md` §3): an index at `/openapi/v3` whose
`serverRelativeURL`s kubectl follows verbatim; per group/version a document whose PATCH operations
carry `x-kubernetes-group-version-kind` and a `fieldValidation` query parameter (so kubectl validates
server-side); component schemas with descriptions for `kubectl explain`.

The PATCH request bodies deliberately omit `application/strategic-merge-patch+json`: kubectl then
computes strategic merge patches from its compiled-in types — upstream behaviour for built-in kinds —
instead of from these schemas (§3, option (b)). The server accepts strategic merge patches all the same.

Custom resources (`cp.crd.openapi`): with a server's registry, the group/versions its
CustomResourceDefinitions serve are built from their schemas, once per registry revision, so their
hashes change when a definition does; the built-in documents are built once per process, so a server
without definitions does no work for them.

Pure: reads the installed schema package through `cp.schemas`; documents are built once and cached.
"""

from __future__ import annotations

import functools
import hashlib
from typing import Any

import msgspec

from cp import resources as res
from cp import schemas

_enc = msgspec.json.Encoder()
_COMPONENTS = "#/components/schemas/"
_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
_PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml")


def gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _convert(node: Any) -> Any:
    """JSON-schema (kubernetes-validate's form) to OpenAPI 3.0 schema objects."""
    if isinstance(node, list):
        return [_convert(v) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "$ref" and isinstance(value, str):  # not a property named "$ref" (JSONSchemaProps has one)
            out[key] = _COMPONENTS + value.rsplit("/", 1)[-1]
        elif key == "type" and isinstance(value, list):
            types = [t for t in value if t != "null"]
            out[key] = types[0] if len(types) == 1 else types
        elif key == "enum" and isinstance(value, list):
            out[key] = [v for v in value if v is not None]
        else:
            out[key] = _convert(value)
    if isinstance(out.get("$ref"), str) and len(out) > 1:  # not in a `properties` that names a field "$ref"
        ref = out.pop("$ref")
        out["allOf"] = [{"$ref": ref}]
    return out


_SPECIAL: dict[str, dict[str, Any]] = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {
        "description": "IntOrString is a type that can hold an int32 or a string.",
        "type": "string", "format": "int-or-string", "x-kubernetes-int-or-string": True},
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {
        "description": "Quantity is a fixed-point representation of a number, such as 500m or 2Gi.",
        "type": "string"},
}


@functools.cache
def component(name: str) -> dict[str, Any]:
    if name in _SPECIAL:
        return _SPECIAL[name]
    return dict(_convert(schemas.definitions()[name]))


def _refs(node: Any, out: set[str]) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(_COMPONENTS):
            out.add(ref[len(_COMPONENTS):])
        for v in node.values():
            _refs(v, out)
    elif isinstance(node, list):
        for v in node:
            _refs(v, out)


def _sim_schema(kind: res.ResourceKind) -> dict[str, Any]:
    free = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return {
        "description": f"{kind.kind} is a kind of the cplane sandbox group {kind.group}.",
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string", "description": "APIVersion of this representation."},
            "kind": {"type": "string", "description": "Kind of this object."},
            "metadata": {"allOf": [{"$ref": _COMPONENTS + _META + "ObjectMeta"}],
                         "description": "Standard object metadata.", "default": {}},
            "spec": dict(free, description="Desired state."),
            "status": dict(free, description="Observed state."),
        },
        "x-kubernetes-group-version-kind": [{"group": kind.group, "version": kind.version, "kind": kind.kind}],
    }


def _sim_list_schema(kind: res.ResourceKind, item: str) -> dict[str, Any]:
    return {
        "description": f"{kind.list_kind} is a list of {kind.kind}.",
        "type": "object", "required": ["items"],
        "properties": {
            "apiVersion": {"type": "string"}, "kind": {"type": "string"},
            "items": {"type": "array", "items": {"$ref": _COMPONENTS + item}},
            "metadata": {"allOf": [{"$ref": _COMPONENTS + _META + "ListMeta"}], "default": {}},
        },
        "x-kubernetes-group-version-kind": [{"group": kind.group, "version": kind.version,
                                             "kind": kind.list_kind}],
    }


def _param(name: str, where: str = "query", *, description: str = "", required: bool = False) -> dict[str, Any]:
    p: dict[str, Any] = {"name": name, "in": where, "schema": {"type": "string", "uniqueItems": True}}
    if description:
        p["description"] = description
    if required:
        p["required"] = True
    return p


_WRITE_PARAMS = [
    _param("dryRun", description="When present, indicates that modifications should not be persisted."),
    _param("fieldManager", description="A name associated with the actor or entity that is making these changes."),
    _param("fieldValidation", description="Ignore, Warn or Strict: how to treat unknown or duplicate fields."),
]


def _body(ref: str) -> dict[str, Any]:
    return {"content": {"application/json": {"schema": {"$ref": _COMPONENTS + ref}}}, "required": True}


def _ok(ref: str, *codes: str) -> dict[str, Any]:
    content = {"content": {"application/json": {"schema": {"$ref": _COMPONENTS + ref}}}}
    return {code: dict(content, description=code) for code in (codes or ("200",))}


def _op(*, action: str, op_id: str, gvk: dict[str, str], responses: dict[str, Any],
        params: list[dict[str, Any]] | None = None, body: dict[str, Any] | None = None) -> dict[str, Any]:
    op: dict[str, Any] = {"operationId": op_id, "x-kubernetes-action": action,
                          "x-kubernetes-group-version-kind": gvk, "responses": responses}
    if params:
        op["parameters"] = params
    if body is not None:
        op["requestBody"] = body
    return op


def _patch_body() -> dict[str, Any]:
    return {"content": {t: {"schema": {"$ref": _COMPONENTS + _META + "Patch"}} for t in _PATCH_TYPES},
            "required": True}


def _kind_paths(kind: res.ResourceKind, item_ref: str, list_ref: str) -> dict[str, Any]:
    prefix = "/" + gv_path(kind.group, kind.version)
    gvk = {"group": kind.group, "version": kind.version, "kind": kind.kind}
    tag = kind.kind
    ns_params = [_param("namespace", "path", required=True)] if kind.namespaced else []
    name_params = [_param("name", "path", required=True)]
    base = f"{prefix}/namespaces/{{namespace}}/{kind.plural}" if kind.namespaced else f"{prefix}/{kind.plural}"
    list_params = [_param(n) for n in ("labelSelector", "fieldSelector", "limit", "continue", "resourceVersion",
                                       "resourceVersionMatch", "sendInitialEvents", "timeoutSeconds", "watch",
                                       "allowWatchBookmarks")]
    paths: dict[str, Any] = {
        base: {
            "parameters": ns_params,
            "get": _op(action="list", op_id=f"list{tag}", gvk=gvk, responses=_ok(list_ref), params=list_params),
            "post": _op(action="post", op_id=f"create{tag}", gvk=gvk, responses=_ok(item_ref, "200", "201", "202"),
                        params=_WRITE_PARAMS, body=_body(item_ref)),
            "delete": _op(action="deletecollection", op_id=f"deleteCollection{tag}", gvk=gvk,
                          responses=_ok(_META + "Status"), params=list_params,
                          body={"content": {"application/json": {"schema": {
                              "$ref": _COMPONENTS + _META + "DeleteOptions"}}}}),
        },
        f"{base}/{{name}}": {
            "parameters": ns_params + name_params,
            "get": _op(action="get", op_id=f"read{tag}", gvk=gvk, responses=_ok(item_ref)),
            "put": _op(action="put", op_id=f"replace{tag}", gvk=gvk, responses=_ok(item_ref, "200", "201"),
                       params=_WRITE_PARAMS, body=_body(item_ref)),
            "patch": _op(action="patch", op_id=f"patch{tag}", gvk=gvk, responses=_ok(item_ref, "200", "201"),
                         params=[*_WRITE_PARAMS, _param("force")], body=_patch_body()),
            "delete": _op(action="delete", op_id=f"delete{tag}", gvk=gvk,
                          responses=_ok(_META + "Status", "200", "202"),
                          params=[_param("dryRun"), _param("gracePeriodSeconds"), _param("propagationPolicy")],
                          body={"content": {"application/json": {"schema": {
                              "$ref": _COMPONENTS + _META + "DeleteOptions"}}}}),
        },
    }
    if kind.namespaced:
        paths[f"{prefix}/{kind.plural}"] = {
            "get": _op(action="list", op_id=f"list{tag}ForAllNamespaces", gvk=gvk, responses=_ok(list_ref),
                       params=list_params)}
    for sub in kind.subresources:
        sub_gvk = {"group": sub.group or kind.group, "version": sub.version or kind.version, "kind": sub.kind}
        if (kind.group, kind.plural) == ("", "pods") and sub.name in _STREAMS:
            paths[f"{base}/{{name}}/{sub.name}"] = _stream_entry(sub, tag, sub_gvk, ns_params + name_params)
            continue
        ref = _sub_ref(kind, sub) or item_ref
        suffix = sub.name.capitalize()
        entry: dict[str, Any] = {"parameters": ns_params + name_params}
        if "get" in sub.verbs:
            entry["get"] = _op(action="get", op_id=f"read{tag}{suffix}", gvk=sub_gvk, responses=_ok(ref))
        if "update" in sub.verbs:
            entry["put"] = _op(action="put", op_id=f"replace{tag}{suffix}", gvk=sub_gvk,
                               responses=_ok(ref, "200", "201"), params=_WRITE_PARAMS, body=_body(ref))
        if "patch" in sub.verbs:
            entry["patch"] = _op(action="patch", op_id=f"patch{tag}{suffix}", gvk=sub_gvk,
                                 responses=_ok(ref, "200", "201"), params=[*_WRITE_PARAMS, _param("force")],
                                 body=_patch_body())
        if "create" in sub.verbs:
            entry["post"] = _op(action="post", op_id=f"create{tag}{suffix}", gvk=sub_gvk,
                                responses=_ok(ref, "200", "201", "202"), params=_WRITE_PARAMS, body=_body(ref))
        paths[f"{base}/{{name}}/{sub.name}"] = entry
    return paths


# A pod's streaming subresources and their query parameters (upstream's connect operations, and
# the log's GET), whose answers are a stream, not an object.
_STREAMS = {
    "log": ("container", "follow", "insecureSkipTLSVerifyBackend", "limitBytes", "previous", "sinceSeconds",
            "sinceTime", "stream", "tailLines", "timestamps"),
    "exec": ("command", "container", "stderr", "stdin", "stdout", "tty"),
    "attach": ("container", "stderr", "stdin", "stdout", "tty"),
    "portforward": ("ports",),
}


def _stream_entry(sub: res.Subresource, tag: str, gvk: dict[str, str],
                  path_params: list[dict[str, Any]]) -> dict[str, Any]:
    text = {"200": {"description": "OK", "content": {"*/*": {"schema": {"type": "string"}}}}}
    params = [_param(p) for p in _STREAMS[sub.name]]
    suffix = {"portforward": "Portforward"}.get(sub.name, sub.name.capitalize())
    entry: dict[str, Any] = {"parameters": path_params}
    if sub.name == "log":
        entry["get"] = _op(action="get", op_id=f"read{tag}{suffix}", gvk=gvk, responses=text, params=params)
        return entry
    entry["get"] = _op(action="connect", op_id=f"connectGet{tag}{suffix}", gvk=gvk,
                       responses=text, params=params)
    entry["post"] = _op(action="connect", op_id=f"connectPost{tag}{suffix}", gvk=gvk,
                        responses=text, params=params)
    return entry


def _sub_ref(kind: res.ResourceKind, sub: res.Subresource) -> str | None:
    """The definition of a subresource's body when it is not the parent's kind (Scale, Binding,
    Eviction)."""
    if sub.kind == kind.kind and not sub.group and not sub.version:
        return None
    return schemas.name_for(sub.group or kind.group, sub.version or kind.version, sub.kind)


def _sim_name(kind: res.ResourceKind, list_kind: bool = False) -> str:
    parts = list(reversed(kind.group.split(".")))
    return ".".join([*parts, kind.version, kind.list_kind if list_kind else kind.kind])


def _gv_kinds(group: str, version: str, kinds: list[res.ResourceKind]) -> dict[str, Any]:
    """The document of one group/version serving `kinds`: built-in kinds from the installed schemas,
    the sandbox's own kinds with free-form schemas, custom resources from their definitions
    (`cp.crd.openapi`)."""
    paths: dict[str, Any] = {}
    components: dict[str, Any] = {}
    roots = {_META + n for n in ("Status", "DeleteOptions", "Patch", "ObjectMeta", "ListMeta", "APIResourceList")}
    for kind in kinds:
        if kind.custom is not None:
            from cp.crd import openapi as crd_openapi

            item, lst = crd_openapi.model_name(kind), crd_openapi.model_name(kind, list_kind=True)
            components[item] = crd_openapi.item_schema(kind)
            components[lst] = crd_openapi.list_schema(kind)
        else:
            item_name = schemas.name_for(kind.group, kind.version, kind.kind)
            list_name = schemas.name_for(kind.group, kind.version, kind.list_kind)
            if item_name is None or list_name is None:
                item, lst = _sim_name(kind), _sim_name(kind, True)
                components[item] = _sim_schema(kind)
                components[lst] = _sim_list_schema(kind, item)
            else:
                item, lst = item_name, list_name
                roots.update((item, lst))
        roots.update(ref for ref in (_sub_ref(kind, sub) for sub in kind.subresources
                                     if not ((kind.group, kind.plural) == ("", "pods") and sub.name in _STREAMS)) if ref)
        paths.update(_kind_paths(kind, item, lst))
    pending = sorted(roots)
    while pending:
        name = pending.pop()
        if name in components:
            continue
        schema = component(name)
        components[name] = schema
        found: set[str] = set()
        _refs(schema, found)
        pending.extend(sorted(n for n in found if n not in components))
    for schema in list(components.values()):
        found = set()
        _refs(schema, found)
        for n in found:
            if n not in components:
                components[n] = component(n)
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": f"v{schemas.K8S_VERSION}"},
        "paths": paths,
        "components": {"schemas": dict(sorted(components.items()))},
    }


def build_spec(group: str, version: str, kinds: list[res.ResourceKind]) -> dict[str, Any]:
    """The document of one group/version serving `kinds` (not cached)."""
    return _gv_kinds(group, version, kinds)


def _custom_gvs(registry: res.Registry) -> dict[str, tuple[str, str]]:
    """The group/versions (document paths) that serve custom resources or built-in kinds served because
    a feature gate or the runtime config is on (`Registry.gated_kinds`), or whose kinds the runtime
    config switches off (`Registry.off_group_versions`), per registry revision."""
    def build() -> dict[str, tuple[str, str]]:
        found = {gv_path(k.group, k.version): (k.group, k.version)
                 for k in (*registry.gated_kinds(), *registry.custom_kinds())}
        found.update({gv_path(g, v): (g, v) for g, v in registry.off_group_versions()})
        return found

    found: dict[str, tuple[str, str]] = registry.cached("openapi.custom_gvs", build)
    return found


def spec(path: str, *, registry: res.Registry | None = None) -> dict[str, Any] | None:
    """The document of one group/version as a dict (shared and cached: not to be modified). With a
    server's `registry`, its custom resources are in it (built once per registry revision); without,
    the built-in resources alone."""
    path = path.strip("/")
    if registry is not None:
        gv = _custom_gvs(registry).get(path)
        if gv is not None:
            built: dict[str, Any] | None = registry.cached(
                ("openapi.v3.spec", path),
                lambda: _gv_kinds(gv[0], gv[1], kinds) if (kinds := registry.kinds_in(*gv)) else None)
            return built
    return _spec(path)


@functools.cache
def _spec(path: str) -> dict[str, Any] | None:
    pairs = {gv_path(g, v): (g, v) for g, v in res.group_versions()}
    if path not in pairs:
        return None
    group, version = pairs[path]
    return _gv_kinds(group, version, res.kinds_in(group, version))


@functools.cache
def _document(path: str) -> bytes | None:
    doc = _spec(path)
    return None if doc is None else _enc.encode(doc)


def document(path: str, *, registry: res.Registry | None = None) -> bytes | None:
    """The document of one group/version, e.g. "api/v1" or "apis/resource.k8s.io/v1"; None if unknown.
    `registry`: as `spec`."""
    path = path.strip("/")
    if registry is not None and path in _custom_gvs(registry):
        def build() -> bytes | None:
            doc = spec(path, registry=registry)
            return None if doc is None else _enc.encode(doc)

        found: bytes | None = registry.cached(("openapi.v3.document", path), build)
        return found
    return _document(path)


def _hash(doc: bytes | None) -> str:
    return hashlib.sha256(doc or b"").hexdigest()[:32].upper()


@functools.cache
def _etag(path: str) -> str:
    return _hash(_document(path))


def etag(path: str, *, registry: res.Registry | None = None) -> str:
    """The document's hash (its ETag and the index's `hash=`): a custom resource's group/version has a
    new one whenever its definitions change."""
    path = path.strip("/")
    if registry is not None and path in _custom_gvs(registry):
        found: str = registry.cached(("openapi.v3.etag", path), lambda: _hash(document(path, registry=registry)))
        return found
    return _etag(path)


def index(*, base: str = "/openapi/v3", registry: res.Registry | None = None) -> dict[str, Any]:
    """The `/openapi/v3` index: every served group/version (a server's `registry`, or the built-in
    ones) with its hashed URL."""
    group_versions = registry.group_versions() if registry is not None else res.group_versions()
    return {"paths": {p: {"serverRelativeURL": f"{base}/{p}?hash={etag(p, registry=registry)}"}
                      for p in (gv_path(g, v) for g, v in group_versions)}}
