"""The LimitRanger admission plugin (`cp.limitranges` has the rules): a new pod gets its namespace's
default container requests and limits (mutating), then pods and PersistentVolumeClaims are checked
against the LimitRanges' bounds (validating). Pod updates are left alone (containers' resources
cannot change outside `pods/resize`, which is not served), and so is an object being deleted.
"""

from __future__ import annotations

from typing import Any

from api import admission
from api.admission import listers
from cp import limitranges
from storage import log


class LimitRangerPlugin(admission.BasePlugin):
    name = "LimitRanger"

    def __init__(self, *, event_log: log.EventLog) -> None:
        self.event_log = event_log
        self.ranges = listers.Lister(group="", resource="limitranges")

    def may_handle(self, *, group: str, plural: str, subresource: str, operation: str) -> bool:
        if group != "" or plural not in ("pods", "persistentvolumeclaims"):
            return False
        return not subresource or (plural == "pods" and subresource == "resize" and operation == admission.UPDATE)

    def handles(self, attrs: admission.Attributes) -> bool:
        if attrs.kind.group != "":
            return False
        if attrs.subresource and not (attrs.kind.plural == "pods" and attrs.subresource == "resize"
                                      and attrs.operation == admission.UPDATE):
            return False  # of subresources, only a pod's resize (in-place vertical scaling)
        if self.ranges.peek(self.event_log, attrs.namespace) == []:
            return False  # known to have no LimitRange
        if attrs.kind.plural == "pods":
            return attrs.operation == admission.CREATE or attrs.subresource == "resize"
        return attrs.kind.plural == "persistentvolumeclaims" and attrs.operation in (admission.CREATE,
                                                                                     admission.UPDATE)

    async def _ranges(self, attrs: admission.Attributes, store: admission.Store) -> list[Any]:
        if attrs.old is not None and (attrs.old.get("metadata") or {}).get("deletionTimestamp"):
            return []  # objects marked for deletion are not limited
        return limitranges.sort_ranges(await self.ranges.list(store.log, attrs.namespace))

    async def admit(self, attrs: admission.Attributes, store: admission.Store) -> None:
        if attrs.kind.plural != "pods" or attrs.obj is None or attrs.subresource:
            return  # a resize is checked against the ranges, not defaulted (it removes no request or limit)
        for limit_range in await self._ranges(attrs, store):
            limitranges.apply_pod_defaults(attrs.obj, limit_range)

    async def validate(self, attrs: admission.Attributes, store: admission.Store) -> None:
        if attrs.obj is None:
            return
        check = limitranges.validate_pod if attrs.kind.plural == "pods" else limitranges.validate_pvc
        for limit_range in await self._ranges(attrs, store):
            problem = check(attrs.obj, limit_range)
            if problem:
                raise admission.forbidden(attrs, problem)
