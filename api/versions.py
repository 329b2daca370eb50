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


def builtin_served(target: reads.Target) -> res.ResourceKind | None:
    """The built-in version a write is made in when it is not the stored one (`WriteContext.served`:
    the field manager records the writer's fields in it); custom resources' writers are recorded in
    the stored version."""
    served = target.served
    return served if served is not None and served.custom is None else None


def served_raw(target: reads.Target, raw: bytes) -> bytes:
    """A stored object's JSON as the client's version (a Status is left alone)."""
    if target.served is None or raw.startswith(b'{"kind":"Status"'):
        return raw
    return conversions.served_json(target.served, raw)


def served_event(kind: res.ResourceKind, ev: log.Event) -> log.Event:
    return msgspec.structs.replace(ev, object=conversions.served_json(kind, ev.object))


def to_storage(target: reads.Target, obj: dict[str, Any], *, create: bool = False,
               ctx: stores.WriteContext | None = None) -> dict[str, Any]:
    """A request body of the client's version as the stored version (on create, checked first by the
    rules that version adds: events.k8s.io/v1's for new Events). With the write's `ctx`, the body is
    first decoded as its own version's type, as upstream decodes it into that version's Go struct:
    wrong types are that version's 400, unknown fields its warnings (or errors, `fieldValidation`) and
    are dropped before the conversion."""
    if target.served is None:
        return obj
    if ctx is not None and target.served.custom is None:
        from cp import validation

        obj, warnings = validation.check_structure(obj, group=target.served.group, version=target.served.version,
                                                   kind=target.served.kind, field_validation=ctx.field_validation)
        ctx.warnings.extend(warnings)
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
    version, and the result converted back. A server-side apply configuration of a built-in version
    is merged in its own version (`Store.apply` with `ctx.served`), so its fields are owned, and
    listed in managedFields, as that version's; a custom resource's is converted to the stored version
    and applied there."""
    served = target.served
    assert served is not None
    if content_type == patching.APPLY_PATCH and served.custom is None:
        ctx.served = served
        return await store.apply(target.kind, target.namespace, target.name, body, ctx,
                                 subresource=subresource, force=force)
    if content_type == patching.APPLY_PATCH:
        applied = patching.apply_yaml_body(body)
        fieldmanager.check_apply_config(served, applied)
        stored = conversions.to_storage(served, applied)
        return await store.apply(target.kind, target.namespace, target.name, msgspec.json.encode(stored), ctx,
                                 subresource=subresource, force=force)

    if served.custom is None:
        ctx.served = served

    def mutate(current: dict[str, Any]) -> dict[str, Any]:
        shown = conversions.served_object(served, msgspec.json.encode(current))
        patched = patching.apply_patch(shown, body, content_type=content_type, group=served.group,
                                       version=served.version, kind=served.kind)
        return to_storage(target, patched, ctx=ctx)

    return await store.guaranteed_update(target.kind, target.namespace, target.name, mutate, ctx,
                                         subresource=subresource)


# ------------------------------------------------------------------------------ conversion webhooks
# A custom resource whose definition converts through a webhook (`spec.conversion.strategy: Webhook`) is
# converted by `api.webhooks.conversion` (a ConversionReview per request, all of a list's objects in
# one), so what is sync above for built-in and `None` conversions is awaited here. A failed conversion
# is answered as upstream's custom resource handler answers it: 500 InternalError.


def _webhook(kind: res.ResourceKind | None) -> Any:
    custom = kind.custom if kind is not None else None
    if custom is None or (custom.conversion or {}).get("strategy") != "Webhook":
        return None
    return custom.conversion


def uses_webhook(target: reads.Target) -> bool:
    return target.served is not None and _webhook(target.served) is not None


async def _convert(client: Any, conversion: Any, objects: list[dict[str, Any]], api_version: str) -> list[dict[str, Any]]:
    from api.webhooks import conversion as conversions_

    try:
        return await conversions_.convert(conversion=conversion, objects=objects, desired_api_version=api_version,
                                          client=client)
    except conversions_.ConversionError as exc:
        raise errors.InternalError(f"Internal error occurred: {exc}") from None


async def served(client: Any, target: reads.Target, raw: bytes) -> bytes:
    """`served_raw`, through the definition's conversion webhook where it has one."""
    if not uses_webhook(target) or raw.startswith(b'{"kind":"Status"'):
        return served_raw(target, raw)
    assert target.served is not None
    (obj,) = await _convert(client, _webhook(target.served), [dict(_decode(raw))], target.served.api_version)
    return msgspec.json.encode(obj)


async def served_events(client: Any, kind: res.ResourceKind, events: list[log.Event]) -> list[log.Event]:
    """Stored events as `kind`'s version: one conversion review for all of them where the definition
    converts through a webhook."""
    conversion = _webhook(kind)
    if conversion is None:
        return [served_event(kind, ev) for ev in events]
    if not events:
        return events
    objs = await _convert(client, conversion, [dict(_decode(ev.object)) for ev in events], kind.api_version)
    return [msgspec.structs.replace(ev, object=msgspec.json.encode(obj)) for ev, obj in zip(events, objs, strict=True)]


async def to_storage_converted(client: Any, target: reads.Target, obj: dict[str, Any], *,
                               create: bool = False, ctx: stores.WriteContext | None = None) -> dict[str, Any]:
    """`to_storage`, through the definition's conversion webhook where it has one."""
    if not uses_webhook(target):
        return to_storage(target, obj, create=create, ctx=ctx)
    assert target.served is not None
    custom = target.served.custom
    (stored,) = await _convert(client, _webhook(target.served), [obj],
                               f"{target.served.group}/{custom.storage_version}")
    return stored


async def patch_converted(client: Any, store: stores.Store, target: reads.Target, body: bytes, content_type: str,
                          ctx: stores.WriteContext, *, subresource: str, force: bool = False) -> stores.Result:
    """`patch` for a definition that converts through a webhook: the stored object is converted to the
    client's version, patched, converted back and written with the revision read as a precondition;
    if another write came first, again from the newer object (a resourceVersion in the patch itself
    stays the client's precondition)."""
    served_kind = target.served
    assert served_kind is not None
    conversion = _webhook(served_kind)
    storage_version = f"{served_kind.group}/{served_kind.custom.storage_version}"
    if content_type == patching.APPLY_PATCH:
        applied = patching.apply_yaml_body(body)
        fieldmanager.check_apply_config(served_kind, applied)
        (stored,) = await _convert(client, conversion, [applied], storage_version)
        return await store.apply(target.kind, target.namespace, target.name, msgspec.json.encode(stored), ctx,
                                 subresource=subresource, force=force)
    for _attempt in range(stores.MAX_RETRIES):
        ev = await store.get(target.kind, target.namespace, target.name)
        (shown,) = await _convert(client, conversion, [dict(_decode(ev.object))], served_kind.api_version)
        patched = patching.apply_patch(shown, body, content_type=content_type, group=served_kind.group,
                                       version=served_kind.version, kind=served_kind.kind)
        ours = (patched.get("metadata") or {}).get("resourceVersion") == str(ev.revision)
        (stored,) = await _convert(client, conversion, [patched], storage_version)
        stored.setdefault("metadata", {})["resourceVersion"] = (patched.get("metadata") or {}).get("resourceVersion")

        def mutate(_current: dict[str, Any], stored: dict[str, Any] = stored) -> dict[str, Any]:
            return stored

        try:
            return await store.guaranteed_update(target.kind, target.namespace, target.name, mutate, ctx,
                                                 subresource=subresource)
        except errors.Conflict:
            if not ours:
                raise
    raise errors.Conflict.modified(group=target.kind.group, plural=target.kind.plural, name=target.name)
