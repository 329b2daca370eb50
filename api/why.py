"""`GET /apis/sim.cplane.dev/v1alpha1/namespaces/{ns}/pods/{name}/why`: why a pod does (not) schedule.

A read-only subresource of the sandbox group (issue #12, docs/why.md). It reads pods, nodes,
namespaces, ResourceClaims, ResourceSlices, DeviceClasses and DeviceTaintRules at one revision of
the event log — the newest, or `?at=REV` (alias `resourceVersion`) for the cluster as it was — and
runs `cp.scheduling.explain.explain_pod` on them in a worker thread: the scheduler's node filters
and the DRA allocator's own search, observed by a recorder. Query parameters:

- `node=NAME`: that node only;
- `at=REV` / `resourceVersion=REV`: an exact past revision (410 Expired if compacted, 504 if newer
  than the log);
- `output=text` (or `Accept: text/plain`): the text `cplane why` prints, instead of the JSON
  `PodSchedulingExplanation`;
- `suggest=false`: skip the search for the smallest change.

With authentication on, RBAC decides like for any subresource: verb `get`, API group
`sim.cplane.dev`, resource `pods/why`. Nothing is imported from `controllers` until the first
request, so serving costs nothing until somebody asks.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from api import codec, storage_errors
from api import state as st
from cp import errors, features, options
from storage import log

PATH = "/apis/sim.cplane.dev/v1alpha1/namespaces/{namespace}/pods/{name}/why"

_cel_cache: Any = None  # one CelCache for the process (compiled selectors, per-device results)

ListAt = Callable[[str, str, int], Awaitable[list[bytes]]]


async def read_snapshot(list_at: ListAt, revision: int) -> Any:
    """The objects `explain_pod` needs, at `revision`. `list_at(group, plural, revision)` returns
    the stored JSON of every live object of one resource."""
    from cp.scheduling import explain

    snap = explain.Snapshot(revision=revision)
    decode = codec.decoder.decode
    for group, plural, field in explain.SNAPSHOT_KINDS:
        setattr(snap, field, [dict(decode(raw)) for raw in await list_at(group, plural, revision)])
    return snap


def _log_lister(event_log: log.EventLog) -> ListAt:
    async def list_at(group: str, plural: str, revision: int) -> list[bytes]:
        result = await event_log.list_objects(group=group, resource=plural, namespace=None, revision=revision)
        return [ev.object for ev in result.events]
    return list_at


def _explain(snap: Any, namespace: str, name: str, node: str | None, suggest: bool,
             gates: features.FeatureGates = features.DEFAULT) -> dict[str, Any]:
    global _cel_cache
    from cp.dra.allocator import allocator_features
    from cp.dra.celenv import CelCache
    from cp.scheduling import explain

    if _cel_cache is None:
        _cel_cache = CelCache()
    return explain.explain_pod(snap, namespace=namespace, name=name, node=node, cel_cache=_cel_cache,
                               suggest=suggest, features=allocator_features(gates=gates))


async def explain(event_log: log.EventLog, *, namespace: str, name: str, node: str | None = None,
                  at: int | None = None, suggest: bool = True,
                  gates: features.FeatureGates = features.DEFAULT) -> dict[str, Any]:
    """The diagnosis over an event log (a server's, or one opened read-only), with the allocator
    features of `gates` (a server's `--feature-gates`)."""
    revision = at if at is not None else event_log.revision
    try:
        snap = await read_snapshot(_log_lister(event_log), revision)
    except (log.ExpiredError, log.FutureRevisionError) as exc:
        raise storage_errors.status_of(exc) from None
    try:
        return await asyncio.to_thread(_explain, snap, namespace, name, node, suggest, gates)
    except KeyError as exc:
        what = str(exc.args[0]) if exc.args else name
        if what.startswith("node "):
            raise errors.NotFound.of(group="", plural="nodes", name=what.removeprefix("node ")) from None
        raise errors.NotFound.of(group="", plural="pods", name=name) from None


async def explain_from_source(spec: str, *, namespace: str, name: str, node: str | None = None,
                              at: int | None = None) -> dict[str, Any]:
    """`cplane why --data-dir/--db/-f`: the same diagnosis, reading an event log without a server."""
    from cp import resources as res
    from storage import recording

    try:
        async with recording.opened(spec) as source:
            revision = recording.check_revision(source, at) if at is not None else source.last

            async def list_at(group: str, plural: str, rev: int) -> list[bytes]:
                kind = res.by_group_resource(group, plural)
                if kind is None:
                    return []
                return [ev.object for ev in await source.list_at(kind, None, rev)]

            snap = await read_snapshot(list_at, revision)
    except recording.SourceError as exc:
        raise ValueError(str(exc)) from None
    try:
        return await asyncio.to_thread(_explain, snap, namespace, name, node, True)
    except KeyError as exc:
        what = str(exc.args[0]) if exc.args else name
        raise ValueError(f"{what if what.startswith('node ') else f'pod {namespace}/{name}'} not found at revision "
                         f"{revision}") from None


def _flag(request: web.Request, name: str, default: bool) -> bool:
    value = codec.parse_bool(name, request.query.get(name))
    return default if value is None else value


async def handle(request: web.Request) -> web.StreamResponse:
    if request.method not in ("GET", "HEAD"):
        raise errors.MethodNotAllowed("the server does not allow this method on the requested resource")
    namespace = request.match_info["namespace"]
    name = request.match_info["name"]
    q = request.query
    at_text = q.get("at") or q.get("resourceVersion") or None
    at = options.int64_param(at_text) if at_text else None
    if at is not None and at <= 0:
        raise errors.BadRequest(f"at: must be a positive revision, got {at_text!r}")
    doc = await explain(request.app[st.STORE].log, namespace=namespace, name=name, node=q.get("node") or None,
                        at=at, suggest=_flag(request, "suggest", True),
                        gates=request.app[st.STORE].registry.features)
    if q.get("output") == "text" or codec.media_type(request.headers.get("Accept")) == "text/plain":
        from cp.scheduling import explain_text

        return web.Response(text=explain_text.render(doc), content_type="text/plain")
    return codec.json_response(codec.encoder.encode(doc))


def routes() -> list[web.RouteDef]:
    """Registered by `api.app.make_app` ahead of the generic `/apis/...` handler."""
    return [web.route("*", PATH, handle)]
