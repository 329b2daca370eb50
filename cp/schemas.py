"""Access to the official Kubernetes 1.37 schemas shipped by `kubernetes-validate==1.37.0`.

The package's `_definitions.json` holds every OpenAPI definition (with the `x-kubernetes-*`
extensions: patch strategies and merge keys, list types, group-version-kinds) keyed by its
OpenAPI name, e.g. `io.k8s.api.core.v1.PodSpec`. References look like `#/$defs/<name>`.
Loaded once, lazily; everything else here is pure lookups.
"""

from __future__ import annotations

import functools
import importlib.util
import pathlib
from typing import Any

import msgspec

K8S_VERSION = "1.37.0"
_REF_PREFIX = "#/$defs/"


@functools.cache
def definitions() -> dict[str, dict[str, Any]]:
    # Located, not imported: the package's __init__ loads jsonschema (~0.05 s) and we need only the data.
    spec = importlib.util.find_spec("kubernetes_validate")
    assert spec is not None and spec.submodule_search_locations, "kubernetes-validate is not installed"
    root = pathlib.Path(next(iter(spec.submodule_search_locations))) / "kubernetes-json-schema"
    data = (root / f"v{K8S_VERSION}-local" / "_definitions.json").read_bytes()
    defs: dict[str, dict[str, Any]] = msgspec.json.decode(data)["$defs"]
    return defs


@functools.cache
def _gvk_index() -> dict[tuple[str, str, str], str]:
    out: dict[tuple[str, str, str], str] = {}
    for name, schema in definitions().items():
        for gvk in schema.get("x-kubernetes-group-version-kind", ()):
            key = (gvk.get("group", ""), gvk["version"], gvk["kind"])
            # Prefer io.k8s.api.* over aliases (e.g. meta types registered under many groups).
            if key not in out or name.startswith("io.k8s.api."):
                out[key] = name
    return out


def name_for(group: str, version: str, kind: str) -> str | None:
    """The definition name of a kind, e.g. ("apps","v1","Deployment") -> io.k8s.api.apps.v1.Deployment."""
    return _gvk_index().get((group, version, kind))


def schema_for(group: str, version: str, kind: str) -> dict[str, Any] | None:
    name = name_for(group, version, kind)
    return definitions()[name] if name else None


def ref_name(schema: dict[str, Any]) -> str | None:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith(_REF_PREFIX):
        return ref[len(_REF_PREFIX):]
    return None


def resolve(schema: dict[str, Any] | None) -> dict[str, Any]:
    """Follow `$ref` (also inside a one-element `allOf`) to the definition; {} for None."""
    seen = 0
    while schema:
        name = ref_name(schema)
        if name is None:
            all_of = schema.get("allOf")
            if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
                schema = all_of[0]
                seen += 1
                continue
            return schema
        schema = definitions().get(name, {})
        seen += 1
        if seen > 64:
            break
    return schema or {}


def property_schema(schema: dict[str, Any], field: str) -> dict[str, Any] | None:
    """The (unresolved) schema of one property of an object schema, None if unknown."""
    props = resolve(schema).get("properties")
    if not isinstance(props, dict):
        return None
    sub = props.get(field)
    return sub if isinstance(sub, dict) else None


def items_schema(schema: dict[str, Any]) -> dict[str, Any] | None:
    items = resolve(schema).get("items")
    return items if isinstance(items, dict) else None


def additional_schema(schema: dict[str, Any]) -> dict[str, Any] | None:
    extra = resolve(schema).get("additionalProperties")
    return extra if isinstance(extra, dict) else None
