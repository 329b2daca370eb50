"""`/openapi/v2` and `/openapi/v3`: the documents of `cp.openapi_v2` and `cp.openapi`, served as
kube-openapi's handlers serve them.

- v2 (`handler.RegisterOpenAPIVersionedService`): the Accept header picks JSON or gnostic protobuf
  (`application/com.github.proto-openapi.spec.v2@v1.0+protobuf`, which client-go sends, or the
  dotted form; the answer carries the dotted form), first matching clause by preference; nothing
  acceptable is a 406 with no body. Both forms carry the same quoted ETag (SHA-512 of the JSON) and
  `Vary: Accept`; gzip when the client accepts it (its gzip handler).
- v3: the index, and one document per group/version, with the ETag the index's `hash=` carries and
  `Cache-Control: public, immutable` for a hashed URL.
- Both answer conditional GETs as Go's `http.ServeContent`: `If-None-Match` naming the ETag (or `*`)
  is a 304, and so is an `If-Modified-Since` not older than `Last-Modified` when there is no
  `If-None-Match`.

The documents are built on first use (the v2 one off the event loop) and cached: the built-in ones
per process, those with the server's custom resources per registry revision (`cp.openapi`,
`cp.openapi_v2`), so they change as soon as a CustomResourceDefinition does.
"""

from __future__ import annotations

import asyncio
import datetime
import email.utils

from aiohttp import web

from api import codec
from api import state as st
from cp import errors

_NOT_FOUND = "the server could not find the requested resource"


def _accept_clauses(header: str) -> list[tuple[str, str]]:
    """(type, subtype) of each clause, most preferred first (`codec.accept_clauses`); no Accept is
    `*/*`."""
    return [(c.type, c.subtype) for c in codec.accept_clauses(header or "*/*")]


def not_modified(request: web.Request, *, etag: str, last_modified: datetime.datetime | None) -> bool:
    """Go's `checkIfNoneMatch` (weak comparison) and, without If-None-Match, `checkIfModifiedSince`: a
    conditional GET answered 304 (the OpenAPI documents, the web UI's files). `etag` without quotes."""
    none_match = request.headers.get("If-None-Match")
    if none_match is not None:
        for candidate in none_match.split(","):
            candidate = candidate.strip().removeprefix("W/")
            if candidate == "*" or candidate == f'"{etag}"':
                return True
        return False
    since = request.headers.get("If-Modified-Since")
    if since and last_modified is not None:
        try:
            when = email.utils.parsedate_to_datetime(since)
        except (TypeError, ValueError):
            return False
        if when.tzinfo is None:
            when = when.replace(tzinfo=datetime.UTC)
        return last_modified <= when
    return False


def _quality(params: list[str]) -> float:
    for param in params:
        key, eq, value = param.partition("=")
        if eq and key.strip() == "q":
            try:
                return float(value)
            except ValueError:
                return 0.0
    return 1.0


def _wants_gzip(request: web.Request) -> bool:
    for part in request.headers.get("Accept-Encoding", "").split(","):
        coding, *params = part.strip().split(";")
        if coding.strip().lower() == "gzip":
            return _quality(params) > 0
    return False


async def openapi_v2(request: web.Request) -> web.StreamResponse:
    from cp import openapi_v2 as v2

    chosen: bool | None = None  # protobuf?
    for main, sub in _accept_clauses(request.headers.get("Accept", "")):
        if main not in ("application", "*"):
            continue
        if sub in ("json", "*"):
            chosen = False
        elif f"{main}/{sub}" in v2.PROTOBUF_ACCEPTED:
            chosen = True
        if chosen is not None:
            break
    if chosen is None:
        return web.Response(status=406, headers={"Vary": "Accept"})
    registry = request.app[st.STORE].registry
    custom = registry.custom_kinds()
    builtin, off = registry.gated_kinds(), registry.off_kinds()
    if not custom and not builtin and not off:
        doc = await asyncio.to_thread(v2.served, protobuf=chosen)  # about 0.3 s the first time
    else:
        # Built off the event loop from a snapshot of the custom resources, and kept for this registry
        # revision (a definition that changes meanwhile makes a new revision, and the next request a
        # new document).
        kept: dict[bool, v2.Served] = registry.cached("openapi.v2.served", dict)
        found = kept.get(chosen)
        if found is None:
            found = kept[chosen] = await asyncio.to_thread(v2.served, protobuf=chosen, custom=tuple(custom),
                                                           builtin=builtin, off=off)
        doc = found
    headers = {"Vary": "Accept, Accept-Encoding", "Etag": f'"{doc.etag}"'}
    if not_modified(request, etag=doc.etag, last_modified=doc.last_modified):
        return web.Response(status=304, headers=headers)
    resp = web.Response(body=doc.body, content_type=doc.content_type, headers=headers)
    resp.last_modified = doc.last_modified
    if _wants_gzip(request):
        resp.body = doc.gzipped
        resp.headers["Content-Encoding"] = "gzip"
    return resp


async def openapi_v3_index(request: web.Request) -> web.StreamResponse:
    from cp import openapi

    return codec.json_response(codec.encoder.encode(openapi.index(registry=request.app[st.STORE].registry)))


async def openapi_v3_document(request: web.Request) -> web.StreamResponse:
    from cp import openapi

    path = request.match_info["tail"].strip("/")
    registry = request.app[st.STORE].registry
    doc = openapi.document(path, registry=registry)
    if doc is None:
        raise errors.NotFound(_NOT_FOUND)
    etag = openapi.etag(path, registry=registry)
    headers = {"Etag": f'"{etag}"', "Vary": "Accept"}
    if request.query.get("hash"):
        headers["Cache-Control"] = "public, immutable"
    if not_modified(request, etag=etag, last_modified=None):
        return web.Response(status=304, headers=headers)
    return codec.json_response(doc, headers=headers)


def routes() -> list[web.RouteDef]:
    """Registered by `api.app.make_app`."""
    return [web.get("/openapi/v2", openapi_v2), web.get("/openapi/v3", openapi_v3_index),
            web.get("/openapi/v3/", openapi_v3_index), web.get("/openapi/v3/{tail:.*}", openapi_v3_document)]
