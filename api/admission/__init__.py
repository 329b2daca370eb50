"""Admission plugins: the step of kube-apiserver's write path between decoding and storage where
built-in plugins (LimitRanger, Priority, ResourceQuota, ServiceAccount...) and, later, webhooks and
admission policies see, change or refuse a write.

The store (`api.store.Store`) runs its `Chain` in upstream's order:

- create: defaults → **mutating** plugins (`admit`) → PrepareForCreate and validation → **validating**
  plugins (`validate`) → the write → `committed` (the outcome, also a failure);
- update (each attempt of the read-mutate-write loop): the patch or new object → defaults →
  `admit` → PrepareForUpdate and validation → `validate` → the write → `committed`;
- delete: `validate` → the write → `committed`.

A plugin declares which writes it `handles` (cheap: asked for every write) and may read or write
other objects through the store it is given (with its own `WriteContext`). Errors it raises are
`cp.errors.StatusError`s, answered as they are (upstream's admission errors are 403 `Forbidden` or
the plugin's own Status). `committed` lets a plugin that reserved something for a write (an IP
address, quota) release it when the write failed, or when the object is deleted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import msgspec

from cp import errors, rbac
from cp import resources as res

# The `api.store.Store` running the chain: plugins read and write other objects through it. Typed Any
# because the store imports this module.
Store = Any

CREATE, UPDATE, DELETE = "CREATE", "UPDATE", "DELETE"


class Reinvocation(msgspec.Struct, kw_only=True):
    """upstream's admission.ReinvocationContext: a mutating plugin that changed the object asks for
    the mutating plugins to run once more (`requested`); `reinvoking` is True in that second round;
    `values` is each plugin's own state across the two rounds, by plugin name."""

    requested: bool = False
    reinvoking: bool = False
    values: dict[str, Any] = msgspec.field(default_factory=dict)


class Attributes(msgspec.Struct, kw_only=True):
    """One write as admission sees it (k8s.io/apiserver admission.Attributes)."""

    kind: res.ResourceKind
    operation: str  # CREATE | UPDATE | DELETE
    namespace: str
    name: str
    subresource: str = ""
    # (group, version, kind) of `obj` when it is not the resource's kind: a subresource's own body
    # (pods/eviction: policy/v1 Eviction, pods/binding: v1 Binding).
    object_kind: tuple[str, str, str] | None = None
    obj: dict[str, Any] | None = None  # the object being written (plugins may change it in `admit`)
    old: dict[str, Any] | None = None  # the stored object (update, delete)
    user: rbac.UserInfo | None = None
    user_name: str = ""  # the writer's name when `user` is None (a write without authentication)
    dry_run: bool = False
    # The request's warnings (sent as `Warning` headers) and audit annotations: the write context's
    # own list and dict, so what a plugin adds reaches the response and the audit record.
    warnings: list[str] = msgspec.field(default_factory=list)
    audit_annotations: dict[str, str] = msgspec.field(default_factory=dict)
    # The operation's options as the API version meta.k8s.io/v1 writes them (CreateOptions,
    # UpdateOptions, DeleteOptions), for the plugins that pass them on (webhooks).
    options: dict[str, Any] | None = None
    reinvocation: Reinvocation = msgspec.field(default_factory=Reinvocation)
    # `kind` and the other served versions of its stored resource (`cp.resources.Registry.equivalents`),
    # for `matchPolicy: Equivalent`; set by the store when plugins handle the write.
    equivalents: tuple[res.ResourceKind, ...] = ()


def forbidden(attrs: Attributes, reason: str) -> errors.Forbidden:
    """`admission.NewForbidden`: a 403 about the object written, `<resource> "<name>" is forbidden:
    <reason>` (its generateName while it has no name yet)."""
    meta = (attrs.obj or {}).get("metadata") if attrs.obj is not None else None
    generate = str(meta.get("generateName") or "") if isinstance(meta, dict) else ""
    return errors.Forbidden.of(group=attrs.kind.group, plural=attrs.kind.plural,
                               name=attrs.name or generate or "Unknown", reason=reason)


class Plugin(Protocol):
    name: str

    def handles(self, attrs: Attributes) -> bool: ...

    async def admit(self, attrs: Attributes, store: Store) -> None:
        """Mutating admission: change `attrs.obj` in place, or raise to refuse."""

    async def validate(self, attrs: Attributes, store: Store) -> None:
        """Validating admission: raise to refuse; no changes."""

    async def committed(self, attrs: Attributes, store: Store, *, succeeded: bool) -> None:
        """After the write: `succeeded` False when it failed (release what `admit` reserved)."""


class BasePlugin:
    """A plugin that does nothing at every step: subclasses override what they need."""

    name = "base"

    def handles(self, attrs: Attributes) -> bool:
        return False

    def may_handle(self, *, group: str, plural: str, subresource: str, operation: str) -> bool:
        """False when `handles` is False for every write of this kind of write whatever the cluster
        holds (the chain then never asks): a static pre-filter, True when in doubt."""
        return True

    async def admit(self, attrs: Attributes, store: Store) -> None:
        return None

    async def validate(self, attrs: Attributes, store: Store) -> None:
        return None

    async def committed(self, attrs: Attributes, store: Store, *, succeeded: bool) -> None:
        return None


class Chain:
    """Plugins in order; each step runs the plugins that handle the write."""

    def __init__(self, plugins: Sequence[Plugin] = ()) -> None:
        self.plugins: list[Plugin] = list(plugins)
        # (group, plural, subresource, operation) -> the plugins that may handle such a write
        # (`may_handle`), for the plugins counted: most writes (Lease renewals, node status) are
        # asked of the few plugins whose answer depends on what the cluster holds.
        self._candidates: dict[tuple[str, str, str, str], list[Plugin]] = {}
        self._candidates_count = 0

    def add(self, plugin: Plugin) -> None:
        self.plugins.append(plugin)
        self._candidates.clear()

    def for_write(self, attrs: Attributes) -> list[Plugin]:
        if self._candidates_count != len(self.plugins):
            self._candidates.clear()
            self._candidates_count = len(self.plugins)
        kind = attrs.kind
        key = (kind.group, kind.plural, attrs.subresource, attrs.operation)
        candidates = self._candidates.get(key)
        if candidates is None:
            candidates = self._candidates[key] = [p for p in self.plugins if _may_handle(p, key)]
        return [p for p in candidates if p.handles(attrs)]

    async def admit(self, plugins: Sequence[Plugin], attrs: Attributes, store: Store) -> None:
        """The mutating plugins in order; if one asked for it (`attrs.reinvocation.requested`: a
        webhook changed the object), all of them once more, as upstream's reinvoker does."""
        for plugin in plugins:
            await plugin.admit(attrs, store)
        if attrs.reinvocation.requested and not attrs.reinvocation.reinvoking:
            attrs.reinvocation.reinvoking = True
            for plugin in plugins:
                await plugin.admit(attrs, store)

    async def validate(self, plugins: Sequence[Plugin], attrs: Attributes, store: Store) -> None:
        for plugin in plugins:
            await plugin.validate(attrs, store)

    async def committed(self, plugins: Sequence[Plugin], attrs: Attributes, store: Store, *,
                        succeeded: bool) -> None:
        for plugin in plugins:
            await plugin.committed(attrs, store, succeeded=succeeded)


def _may_handle(plugin: Plugin, key: tuple[str, str, str, str]) -> bool:
    static = getattr(plugin, "may_handle", None)  # optional: plugins without it are always asked
    if static is None:
        return True
    group, plural, subresource, operation = key
    return bool(static(group=group, plural=plural, subresource=subresource, operation=operation))


__all__ = ["CREATE", "DELETE", "UPDATE", "Attributes", "BasePlugin", "Chain", "Plugin", "Reinvocation", "forbidden"]
