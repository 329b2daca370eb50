"""The Priority admission plugin and the system PriorityClasses (`cp.priority` has the rules).

Mutating: a new pod's `priorityClassName` becomes its `priority` and `preemptionPolicy` (the
default class's, or 0, without a name); an update keeps what the stored pod has. Validating: at most
one `globalDefault` PriorityClass. The server creates `system-node-critical` and
`system-cluster-critical` at start (`ensure_system_classes`, upstream's
`scheduling/bootstrap-system-priority-classes` post-start hook) and again whenever one leaves the
log (a collection delete removes them; a delete by name is refused by the handler).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import structlog

from api import admission
from api.admission import listers
from cp import errors, priority
from cp import resources as res

logger = structlog.get_logger("cplane.api.admission")

PODS = ("", "pods")
PRIORITY_CLASSES = (priority.GROUP, priority.PLURAL)


async def ensure_system_classes(store: admission.Store, ctx: Any) -> None:
    """Create the system PriorityClasses that do not exist (idempotent); `ctx`: the server's
    `api.store.WriteContext`."""
    kind = res.lookup(priority.GROUP, "v1", priority.PLURAL)
    assert kind is not None
    for name in priority.SYSTEM_PRIORITY_CLASSES:
        if await store.log.get(group=priority.GROUP, resource=priority.PLURAL, namespace="", name=name) is None:
            with contextlib.suppress(errors.AlreadyExists):
                await store.create(kind, "", priority.system_class(name), ctx)
                logger.info("system_priority_class_created", name=name)


def _drops_priority(obj: dict[str, Any] | None, old: dict[str, Any] | None) -> bool:
    """A pod update that leaves out a priority or preemptionPolicy the stored pod has."""
    spec = (obj or {}).get("spec")
    old_spec = (old or {}).get("spec")
    if not isinstance(spec, dict) or not isinstance(old_spec, dict):
        return False
    return any(spec.get(key) is None and old_spec.get(key) is not None for key in ("priority", "preemptionPolicy"))


class PriorityPlugin(admission.BasePlugin):
    name = "Priority"

    def __init__(self, *, writer: Callable[[], Any]) -> None:
        self.classes = listers.Lister(group=priority.GROUP, resource=priority.PLURAL)
        self._by_name_of: tuple[list[dict[str, Any]], dict[str, dict[str, Any]]] = ([], {})
        self.writer = writer  # a new WriteContext of the server itself, for the classes it creates

    def may_handle(self, *, group: str, plural: str, subresource: str, operation: str) -> bool:
        return not subresource and (group, plural) in (PODS, PRIORITY_CLASSES)

    def handles(self, attrs: admission.Attributes) -> bool:
        if attrs.subresource:
            return False
        gr = (attrs.kind.group, attrs.kind.plural)
        if gr == PODS:
            if attrs.operation == admission.UPDATE:
                return _drops_priority(attrs.obj, attrs.old)
            return attrs.operation == admission.CREATE
        return gr == PRIORITY_CLASSES

    async def _by_name(self, store: admission.Store) -> dict[str, dict[str, Any]]:
        """The PriorityClasses by name (indexed once per list the lister reads)."""
        listed = await self.classes.list(store.log)
        if self._by_name_of[0] is not listed:
            self._by_name_of = (listed, {str((pc.get("metadata") or {}).get("name") or ""): pc for pc in listed})
        return self._by_name_of[1]

    async def admit(self, attrs: admission.Attributes, store: admission.Store) -> None:
        if (attrs.kind.group, attrs.kind.plural) != PODS or attrs.obj is None:
            return
        spec = attrs.obj.get("spec")
        if not isinstance(spec, dict):
            return  # validation answers for a pod without a spec
        if attrs.operation == admission.UPDATE:
            old_spec = (attrs.old or {}).get("spec")
            if isinstance(old_spec, dict):
                priority.keep_pod_priority(spec, old_spec)
            return
        try:
            priority.resolve_pod_priority(spec, await self._by_name(store))
        except priority.PodPriorityError as exc:
            raise admission.forbidden(attrs, str(exc)) from None

    async def validate(self, attrs: admission.Attributes, store: admission.Store) -> None:
        if (attrs.kind.group, attrs.kind.plural) != PRIORITY_CLASSES or attrs.obj is None:
            return
        if attrs.operation not in (admission.CREATE, admission.UPDATE):
            return
        other = priority.second_default(attrs.obj, (await self._by_name(store)).values(),
                                        creating=attrs.operation == admission.CREATE)
        if other:
            raise admission.forbidden(attrs, f"PriorityClass {other} is already marked as default. Only one default can exist")

    async def committed(self, attrs: admission.Attributes, store: admission.Store, *, succeeded: bool) -> None:
        if succeeded and attrs.operation == admission.DELETE and attrs.name in priority.SYSTEM_PRIORITY_CLASSES \
                and (attrs.kind.group, attrs.kind.plural) == PRIORITY_CLASSES:
            await ensure_system_classes(store, self.writer())
