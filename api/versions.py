"""Serving a kind from another kind's storage (`ResourceKind.storage_of`): the request is read and
written as the stored kind, bodies are converted on the way in and answers on the way out
(`cp.conversions`), as kube-apiserver stores one version of a resource and serves the others by
conversion. Tables are the stored kind's (upstream prints both versions with one printer).
"""

from __future__ import annotations

from typing import Any

import msgspec

from api import reads
from api import store as stores
from cp import conversions, errors, fieldmanager, patching
from cp import resources as res
from storage import log

_decode = msgspec.json.Decoder().decode


def storage_target(target: reads.Target, *, registry: res.Registry) -> reads.Target:
    """The same request on the stored kind, remembering the served one."""
    return reads.Target(kind=registry.storage_kind(target.kind), namespace=target.namespace,
                        all_namespaces=target.all_namespaces, name=target.name, subresource=target.subresource,
                        served=target.kind)


def served_raw(target: reads.Target, raw: bytes) -> bytes:
    """A stored object's JSON as the client's version (a Status is left alone)."""
    if target.served is None or raw.startswith(b'{"kind":"Status"'):
        return raw
    return conversions.served_json(target.served, raw)


def served_event(kind: res.ResourceKind, ev: log.Event) -> log.Event:
    return msgspec.structs.replace(ev, object=conversions.served_json(kind, ev.object))


def to_storage(target: reads.Target, obj: dict[str, Any], *, create: bool = False) -> dict[str, Any]:
    """A request body of the client's version as the stored version (on create, checked first by the
    rules that version adds: events.k8s.io/v1's for new Events)."""
    if target.served is None:
        return obj
    stored = conversions.to_storage(target.served, obj)
    if create and (target.served.group, target.served.kind) == ("events.k8s.io", "Event"):
        from cp.validation import core

        checked = {**stored, "metadata": {**(stored.get("metadata") or {}), "namespace": target.namespace}}
        causes = core.validate_events_v1_create(checked)
        if causes:
            name = str((stored.get("metadata") or {}).get("name") or "")
            raise errors.Invalid(kind="Event", group="", name=name, causes=causes)
    return stored


async def patch(store: stores.Store, target: reads.Target, body: bytes, content_type: str,
                ctx: stores.WriteContext, *, subresource: str, force: bool = False) -> stores.Result:
    """A patch written against the client's version: applied to the stored object converted to that
    version, and the result converted back. A server-side apply configuration is converted to the
    stored version and applied there, so its fields are owned (and listed in managedFields) as the
    stored version's."""
    served = target.served
    assert served is not None
    if content_type == patching.APPLY_PATCH:
        applied = patching.apply_yaml_body(body)
        fieldmanager.check_apply_config(served, applied)
        stored = conversions.to_storage(served, applied)
        return await store.apply(target.kind, target.namespace, target.name, msgspec.json.encode(stored), ctx,
                                 subresource=subresource, force=force)

    def mutate(current: dict[str, Any]) -> dict[str, Any]:
        shown = conversions.served_object(served, msgspec.json.encode(current))
        patched = patching.apply_patch(shown, body, content_type=content_type, group=served.group,
                                       version=served.version, kind=served.kind)
        return conversions.to_storage(served, patched)

    return await store.guaranteed_update(target.kind, target.namespace, target.name, mutate, ctx,
                                         subresource=subresource)
