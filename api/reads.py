"""What reads share: the resource a request addresses, waiting for a resourceVersion, LIST
queries (selectors, pagination, continue tokens) and the paged read behind LIST, DELETE of a
collection and a watch's initial events. Used by `api.handlers` and `api.watching`.
"""

from __future__ import annotations

import asyncio
import base64
import binascii

import msgspec
from aiohttp import web

from api import codec, storage_errors
from api import store as stores
from cp import errors, fieldlabels, options, selectors
from cp import resources as res
from storage import log

_decode = codec.decoder.decode
_encode = codec.encoder.encode

FUTURE_RV_WAIT = 3.0  # seconds a read waits for a too-new resourceVersion (upstream: then 504)


class Target(msgspec.Struct, kw_only=True):
    """The resource part of a request path (`api.handlers.parse_target`)."""

    kind: res.ResourceKind
    namespace: str  # "" for cluster-scoped, or for a namespaced collection across all namespaces
    all_namespaces: bool
    name: str
    subresource: str
    # The kind the client asked for when it is another version of `kind` (whose objects it serves,
    # converted: `api.versions`); None when they are the same.
    served: res.ResourceKind | None = None


async def wait_until_fresh(event_log: log.EventLog, *, revision: int) -> None:
    """Wait up to FUTURE_RV_WAIT for the log to reach `revision` (a client's resourceVersion newer than
    this server has seen); then 504 "Too large resource version", as upstream's watch cache."""
    if event_log.revision >= revision:
        return
    try:
        async with asyncio.timeout(FUTURE_RV_WAIT):
            await event_log.wait_for_revision(revision=revision)
    except TimeoutError:
        raise storage_errors.too_large_after_wait(requested=revision, current=event_log.revision) from None


def encode_continue(revision: int, namespace: str, name: str) -> str:
    raw = _encode({"v": "meta.k8s.io/v1", "rv": revision, "start": f"{namespace}/{name}"})
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


class _ContinueToken(msgspec.Struct):
    """What a continue token encodes, typed as upstream's `continueToken`: `rv` is an int64 (a number
    beyond it, a fraction or a string is a bad token, as Go's decoder has it), `start` the key after
    which the list goes on."""

    v: str = ""
    rv: int = 0
    start: str = ""


_decode_token = msgspec.json.Decoder(_ContinueToken).decode


def decode_continue(token: str) -> tuple[int | None, tuple[str, str]]:
    """(revision to continue at, last key listed). As upstream's `DecodeContinue`: the version must be
    meta.k8s.io/v1, the revision non-zero and the start key non-empty; a negative revision continues
    at the latest one (None). Anything else is 400 "invalid continue token"."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = _decode_token(raw)
    except (binascii.Error, msgspec.DecodeError, ValueError):
        data = None
    if data is None or data.v != "meta.k8s.io/v1" or not data.rv or not data.start or \
            not options.INT64_MIN <= data.rv <= options.INT64_MAX:
        raise errors.BadRequest(f'invalid continue token: "{token}"')
    ns, _, name = data.start.partition("/")
    return (data.rv if data.rv > 0 else None), (ns, name)


def custom_field_labels(kind: res.ResourceKind) -> fieldlabels.FieldLabels | None:
    """A custom resource version's field labels (its `selectableFields`); for a built-in kind, those of
    its version where they differ (`fieldlabels.version_field_labels`), else None."""
    custom = kind.custom
    if custom is None:
        return fieldlabels.version_field_labels(group=kind.group, version=kind.version, resource=kind.plural)
    return fieldlabels.custom_field_labels(key=(custom.key(), kind.version), selectable=custom.selectable,
                                           namespaced=kind.namespaced)


class ListQuery(msgspec.Struct, kw_only=True):
    label: selectors.LabelSelector
    field: selectors.FieldSelector
    limit: int | None
    revision: int | None  # exact revision to read at (continue or Exact)
    start_after: tuple[str, str] | None


def list_query(request: web.Request, target: Target) -> ListQuery:
    q = request.query
    kind = target.kind
    label = selectors.parse_label_selector(q.get("labelSelector", ""))
    asked = target.served or kind  # another version's labels are read from the stored objects
    field = selectors.parse_field_selector(q.get("fieldSelector", ""), group=asked.group, resource=asked.plural,
                                           labels=custom_field_labels(asked))
    limit = options.int64_param(q.get("limit"))
    if limit is not None and limit <= 0:
        limit = None
    token = q.get("continue", "")
    rv = options.resource_version_param(q.get("resourceVersion"))
    match = q.get("resourceVersionMatch", "")
    if match not in ("", "Exact", "NotOlderThan"):
        raise errors.BadRequest(f'resourceVersionMatch: Unsupported value: "{match}": supported values: '
                                '"Exact", "NotOlderThan"')
    if match and q.get("resourceVersion") is None:
        raise errors.BadRequest("resourceVersionMatch is forbidden unless resourceVersion is provided")
    revision = None
    start_after = None
    if token:
        if rv:
            raise errors.BadRequest("specifying resource version is not allowed when using continue")
        revision, start_after = decode_continue(token)
    elif match == "Exact":
        if not rv:
            raise errors.BadRequest('resourceVersionMatch "Exact" is forbidden for resourceVersion "0"')
        revision = rv
    return ListQuery(label=label, field=field, limit=limit, revision=revision, start_after=start_after)


async def collect(store: stores.Store, target: Target, lq: ListQuery) -> tuple[list[log.Event], int, str]:
    """Read one page of matching objects: (events, list revision, continue token)."""
    kind = target.kind
    namespace: str | None = None if target.all_namespaces else target.namespace
    hint_ns = lq.field.requires_exact_match("metadata.namespace")
    if namespace is None and hint_ns is not None:
        namespace = hint_ns
    hint_name = lq.field.requires_exact_match("metadata.name")
    filtering = not (lq.label.empty and lq.field.empty)
    try:
        if hint_name is not None and namespace is not None and lq.start_after is None:
            at = lq.revision if lq.revision is not None else store.log.revision
            ev = await store.log.get(group=kind.group, resource=kind.plural, namespace=namespace,
                                     name=hint_name, revision=at)
            events = [ev] if ev is not None and matches(ev, lq) else []
            return events, at, ""
        out: list[log.Event] = []
        start_after = lq.start_after
        revision: int | None = lq.revision
        page = lq.limit if not filtering and lq.limit else max(lq.limit or 0, 500)
        while True:
            result = await store.log.list_objects(group=kind.group, resource=kind.plural, namespace=namespace,
                                                  revision=revision, start_after=start_after,
                                                  limit=page if (lq.limit or filtering) else None)
            revision = result.revision
            for ev in result.events:
                if filtering and not matches(ev, lq):
                    continue
                if lq.limit is not None and len(out) >= lq.limit:
                    last = out[-1]
                    return out, revision, encode_continue(revision, last.namespace, last.name)
                out.append(ev)
            if not result.more:
                return out, revision, ""
            last_seen = result.events[-1]
            start_after = (last_seen.namespace, last_seen.name)
            if lq.limit is not None and len(out) >= lq.limit:
                last = out[-1]
                return out, revision, encode_continue(revision, last.namespace, last.name)
    except log.ExpiredError:
        if lq.start_after is not None:
            raise storage_errors.continue_too_old() from None
        raise storage_errors.too_old(requested=lq.revision, compacted=store.log.compacted_revision) from None
    except log.FutureRevisionError as exc:
        raise storage_errors.status_of(exc) from None


def matches(ev: log.Event, lq: ListQuery) -> bool:
    obj = _decode(ev.object)
    meta = obj.get("metadata") or {}
    return lq.label.matches(meta.get("labels")) and lq.field.matches(obj)


def list_query_for_watch(request: web.Request, target: Target) -> ListQuery:
    """Selectors of a watch (limit, continue and resourceVersionMatch do not apply to it)."""
    q = request.query
    kind = target.served or target.kind
    return ListQuery(
        label=selectors.parse_label_selector(q.get("labelSelector", "")),
        field=selectors.parse_field_selector(q.get("fieldSelector", ""), group=kind.group,
                                             resource=kind.plural, labels=custom_field_labels(kind)),
        limit=None, revision=None, start_after=None)
