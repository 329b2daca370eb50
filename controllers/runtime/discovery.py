"""A discovery-backed REST mapper: which resources the server serves, custom resources included
(client-go's `restmapper.DeferredDiscoveryRESTMapper` over a memory-cached discovery client).

Controllers reach the server over HTTP only, so the kinds a CustomResourceDefinition adds are learnt
the way upstream's controllers learn them: from the aggregated discovery documents
(`/api` and `/apis` with `Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`),
read when asked (`refresh`), never per object. Built-in resources resolve to the static registry's
entries (`cp.resources`), so nothing changes for them; the others become `ResourceKind`s built from
their discovery entry (the group's preferred version that serves them, scope, verbs, names,
subresources).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

import msgspec
import structlog

from cp import resources as res

AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
MISS_REFRESH_INTERVAL = 1.0  # seconds between refreshes caused by lookups that found nothing

logger = structlog.get_logger("cplane.controllers.discovery")

Fetch = Callable[[str, str], Awaitable[bytes]]  # (path, accept) -> body


class _Kind(msgspec.Struct, kw_only=True):
    group: str = ""
    version: str = ""
    kind: str = ""


class _SubresourceEntry(msgspec.Struct, kw_only=True, rename="camel"):
    subresource: str
    response_kind: _Kind | None = None
    verbs: list[str] = msgspec.field(default_factory=list)


class _ResourceEntry(msgspec.Struct, kw_only=True, rename="camel"):
    resource: str
    response_kind: _Kind | None = None
    scope: str = "Namespaced"
    singular_resource: str = ""
    verbs: list[str] = msgspec.field(default_factory=list)
    short_names: list[str] = msgspec.field(default_factory=list)
    categories: list[str] = msgspec.field(default_factory=list)
    subresources: list[_SubresourceEntry] = msgspec.field(default_factory=list)


class _VersionEntry(msgspec.Struct, kw_only=True):
    version: str
    resources: list[_ResourceEntry] = msgspec.field(default_factory=list)


class _GroupMeta(msgspec.Struct, kw_only=True):
    name: str = ""


class _GroupEntry(msgspec.Struct, kw_only=True):
    metadata: _GroupMeta = msgspec.field(default_factory=_GroupMeta)
    versions: list[_VersionEntry] = msgspec.field(default_factory=list)


class _GroupList(msgspec.Struct, kw_only=True):
    items: list[_GroupEntry] = msgspec.field(default_factory=list)


_decode_groups = msgspec.json.Decoder(_GroupList).decode


def _subresource(entry: _SubresourceEntry, kind: str) -> res.Subresource:
    rk = entry.response_kind or _Kind()
    if entry.subresource == "scale":
        return res.Subresource(name="scale", kind=rk.kind or "Scale", group=rk.group or "autoscaling",
                               version=rk.version or "v1", verbs=tuple(entry.verbs) or res.SUB_VERBS)
    return res.Subresource(name=entry.subresource, kind=rk.kind or kind, verbs=tuple(entry.verbs) or res.SUB_VERBS)


def kinds_from_discovery(documents: Iterable[bytes]) -> tuple[list[res.ResourceKind], list[res.ResourceKind]]:
    """The resources aggregated discovery documents list, one per group-resource (the first version
    of its group that serves it: groups list their preferred version first), and those of them the
    static registry does not know (custom resources, and the metrics APIs'), made from their entry.
    Built-in resources are the static registry's entries (a version served from another's storage,
    as events.k8s.io/v1 Events, included)."""
    out: dict[tuple[str, str], res.ResourceKind] = {}
    made: list[res.ResourceKind] = []
    for doc in documents:
        for group in _decode_groups(doc).items:
            name = group.metadata.name
            for version in group.versions:
                for entry in version.resources:
                    key = (name, entry.resource)
                    if key in out or "/" in entry.resource:
                        continue
                    builtin = res.by_group_resource(name, entry.resource) or res.lookup(
                        name, version.version, entry.resource)
                    if builtin is not None:
                        out[key] = builtin
                        continue
                    kind = (entry.response_kind or _Kind()).kind
                    if not kind:
                        continue
                    out[key] = res.ResourceKind(
                        group=name, version=version.version, kind=kind, plural=entry.resource,
                        singular=entry.singular_resource or kind.lower(), namespaced=entry.scope != "Cluster",
                        short_names=tuple(entry.short_names), categories=tuple(entry.categories),
                        subresources=tuple(_subresource(s, kind) for s in entry.subresources),
                        verbs=tuple(entry.verbs))
                    made.append(out[key])
    return list(out.values()), made


class RESTMapper:
    """Resolves group-resources and group-kinds against what the server serves. Built-in resources
    resolve without any request; custom ones once `refresh` has read discovery (a lookup that finds
    nothing may refresh, at most once a second: `kind_for`, `resource_for`)."""

    def __init__(self, fetch: Fetch) -> None:
        self._fetch = fetch
        self._gr: dict[tuple[str, str], res.ResourceKind] = {}
        self._kind: dict[tuple[str, str], res.ResourceKind] = {}
        self._custom: tuple[res.ResourceKind, ...] = ()
        self.refreshed_at: float | None = None  # monotonic time of the last refresh
        self.refreshes = 0

    async def refresh(self) -> tuple[res.ResourceKind, ...]:
        """Read discovery again; returns the resources served now that the static registry does not
        know: custom resources (and the read-only metrics APIs)."""
        docs = [await self._fetch("/api", AGGREGATED), await self._fetch("/apis", AGGREGATED)]
        kinds, made = kinds_from_discovery(docs)
        self._gr = {(k.group, k.plural): k for k in kinds}
        self._kind = {(k.group, k.kind): k for k in kinds}
        self._custom = tuple(made)
        self.refreshed_at = time.monotonic()
        self.refreshes += 1
        logger.debug("discovery_refreshed", resources=len(kinds), custom=[k.group_resource for k in self._custom])
        return self._custom

    def custom_kinds(self) -> tuple[res.ResourceKind, ...]:
        """The custom resources the last refresh found."""
        return self._custom

    def by_group_resource(self, group: str, plural: str) -> res.ResourceKind | None:
        return res.by_group_resource(group, plural) or self._gr.get((group, plural))

    def by_kind(self, group: str, kind: str) -> res.ResourceKind | None:
        return res.by_kind(group, kind) or self._kind.get((group, kind))

    def resolve(self, name: str) -> res.ResourceKind | None:
        """A group-resource name (`widgets.example.com`, `pods`)."""
        plural, _, group = name.partition(".")
        return self.by_group_resource(group, plural)

    def _may_refresh(self) -> bool:
        return self.refreshed_at is None or time.monotonic() - self.refreshed_at >= MISS_REFRESH_INTERVAL

    async def kind_for(self, group: str, kind: str) -> res.ResourceKind | None:
        """`by_kind`, reading discovery again first when it is unknown (a definition added since)."""
        found = self.by_kind(group, kind)
        if found is None and self._may_refresh():
            await self.refresh()
            found = self.by_kind(group, kind)
        return found

    async def resource_for(self, name: str) -> res.ResourceKind | None:
        """`resolve`, reading discovery again first when it is unknown."""
        found = self.resolve(name)
        if found is None and self._may_refresh():
            await self.refresh()
            found = self.resolve(name)
        return found


def api_version_group(api_version: str) -> str:
    """The group of an `apiVersion` (`apps/v1` -> `apps`, `v1` -> ``)."""
    return api_version.rpartition("/")[0] if "/" in api_version else ""


def owner_group_kind(ref: Mapping[str, Any]) -> tuple[str, str]:
    """(group, kind) an ownerReference or scaleTargetRef names."""
    return api_version_group(str(ref.get("apiVersion") or "")), str(ref.get("kind") or "")
