"""Discovery documents, built from a server's resource registry once per registry revision.

Aggregated (apidiscovery.k8s.io/v2) when the client's Accept asks for it — the response
Content-Type then carries `g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`, which client-go
checks — and legacy APIVersions / APIGroupList / APIResourceList otherwise
(`../shared/reference/kubectl-compat.md` §2).
"""

from __future__ import annotations

import functools
from typing import Any

import msgspec

from cp import resources as res

AGGREGATED_CT = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

VERSION_INFO = {
    "major": "1",
    "minor": "37",
    "emulationMajor": "1",
    "emulationMinor": "37",
    "minCompatibilityMajor": "1",
    "minCompatibilityMinor": "36",
    "gitVersion": "v1.37.0-cplane",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-12-01T00:00:00Z",
    "goVersion": "python3.11",
    "compiler": "cpython",
    "platform": "linux/amd64",
}

_enc = msgspec.json.Encoder()

# Read-only resources served by handlers of their own rather than stored objects, listed so that RBAC
# rules and `kubectl api-resources` can name them: the event log views of the web UI (api/eventlog.py;
# `get` for eventlog/density and eventlog/history, `list` and `watch` for eventlog).
VIEWS: dict[tuple[str, str], tuple[tuple[str, str], ...]] = {
    (res.SIM_GROUP, res.SIM_VERSION): (("eventlog", "EventLogList"),),
}
_VIEW_VERBS = ["get", "list", "watch"]


def _aggregated_views(group: str, version: str) -> list[dict[str, Any]]:
    return [{"resource": plural, "responseKind": {"group": group, "version": version, "kind": kind},
             "scope": "Namespaced", "singularResource": plural, "verbs": list(_VIEW_VERBS)}
            for plural, kind in VIEWS.get((group, version), ())]


def _legacy_views(group: str, version: str) -> list[dict[str, Any]]:
    return [{"name": plural, "singularName": plural, "namespaced": True, "kind": kind, "verbs": list(_VIEW_VERBS)}
            for plural, kind in VIEWS.get((group, version), ())]


def wants_aggregated(accept: str) -> bool:
    for part in accept.split(","):
        params = {p.split("=", 1)[0].strip(): p.split("=", 1)[1].strip()
                  for p in part.split(";")[1:] if "=" in p}
        if params.get("g") == "apidiscovery.k8s.io" and params.get("as") == "APIGroupDiscoveryList" \
                and params.get("v") in ("v2", "v2beta1"):
            return True
    return False


def _aggregated_resource(k: res.ResourceKind) -> dict[str, Any]:
    out: dict[str, Any] = {
        "resource": k.plural,
        "responseKind": {"group": k.group, "version": k.version, "kind": k.kind},
        "scope": "Namespaced" if k.namespaced else "Cluster",
        "singularResource": k.singular,
        "verbs": list(k.verbs),
    }
    if k.short_names:
        out["shortNames"] = list(k.short_names)
    if k.categories:
        out["categories"] = list(k.categories)
    if k.subresources:
        out["subresources"] = [{
            "subresource": s.name,
            "responseKind": {"group": s.group or k.group, "version": s.version or k.version, "kind": s.kind},
            "verbs": list(s.verbs),
        } for s in k.subresources]
    return out


def _aggregated_group(registry: res.Registry, group: str) -> dict[str, Any]:
    versions = [v for g, v in registry.group_versions() if g == group]
    meta: dict[str, Any] = {"creationTimestamp": None}
    if group:
        meta["name"] = group
    return {
        "metadata": meta,
        "versions": [{
            "version": v,
            "resources": [*(_aggregated_resource(k) for k in registry.kinds_in(group, v)),
                          *_aggregated_views(group, v)],
            "freshness": "Current",
        } for v in versions],
    }


def aggregated(registry: res.Registry, core: bool) -> bytes:
    return bytes(registry.cached(("discovery.aggregated", core), lambda: _aggregated(registry, core)))


def _aggregated(registry: res.Registry, core: bool) -> bytes:
    groups = [""] if core else [g for g in dict.fromkeys(g for g, _ in registry.group_versions()) if g]
    return _enc.encode({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": [_aggregated_group(registry, g) for g in groups],
    })


@functools.cache
def api_versions() -> bytes:
    return _enc.encode({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}],
    })


def _group_entry(registry: res.Registry, group: str) -> dict[str, Any]:
    versions = [v for g, v in registry.group_versions() if g == group]
    entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": entries, "preferredVersion": entries[0]}


def api_group_list(registry: res.Registry) -> bytes:
    def build() -> bytes:
        groups = [g for g in dict.fromkeys(g for g, _ in registry.group_versions()) if g]
        return _enc.encode({"kind": "APIGroupList", "apiVersion": "v1",
                            "groups": [_group_entry(registry, g) for g in groups]})

    return bytes(registry.cached("discovery.groups", build))


def api_group(registry: res.Registry, group: str) -> bytes | None:
    if not group or not any(g == group for g, _ in registry.group_versions()):
        return None
    return _enc.encode({"kind": "APIGroup", "apiVersion": "v1", **_group_entry(registry, group)})


def resource_list(registry: res.Registry, group: str, version: str) -> bytes | None:
    result: bytes | None = registry.cached(("discovery.resources", group, version),
                                           lambda: _resource_list(registry, group, version))
    return result


def _resource_list(registry: res.Registry, group: str, version: str) -> bytes | None:
    kinds = registry.kinds_in(group, version)
    if not kinds:
        return None
    items: list[dict[str, Any]] = []
    for k in kinds:
        entry: dict[str, Any] = {"name": k.plural, "singularName": k.singular, "namespaced": k.namespaced,
                                 "kind": k.kind, "verbs": list(k.verbs)}
        if k.short_names:
            entry["shortNames"] = list(k.short_names)
        if k.categories:
            entry["categories"] = list(k.categories)
        items.append(entry)
        for s in k.subresources:
            sub: dict[str, Any] = {"name": f"{k.plural}/{s.name}", "singularName": "",
                                   "namespaced": k.namespaced, "kind": s.kind, "verbs": list(s.verbs)}
            if s.group or s.version:
                sub["group"] = s.group
                sub["version"] = s.version
            items.append(sub)
    items.extend(_legacy_views(group, version))
    gv = f"{group}/{version}" if group else version
    return _enc.encode({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": items})


@functools.cache
def version() -> bytes:
    return _enc.encode(VERSION_INFO)
