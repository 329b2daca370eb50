"""HTTP handlers for the resource paths of the Kubernetes API.

One catch-all route per prefix (`/api/v1/...`, `/apis/{group}/{version}/...`) parsed here, since
`namespaces/{ns}/{plural}` and `{plural}/{name}/{subresource}` overlap in shape. Handlers decode the
request, call `api.store.Store`, and encode the answer (stored bytes for objects; Tables on request).
What reads share with watches (resourceVersion, LIST queries, the paged read) is `api.reads`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
from aiohttp import web

from api import codec, discovery, reads, versions, watching
from api import state as st
from api import store as stores
from cp import collector, errors, options, patching, priority, tables
from cp import resources as res
from storage import log

_decode = codec.decoder.decode
_encode = codec.encoder.encode

# JSON lists of at least STREAM_MIN_ITEMS objects and STREAM_MIN_BYTES are streamed (`_stream_list`),
# Tables of at least STREAM_MIN_ITEMS rows too (`_stream_table`); smaller ones go out in one piece.
# Protobuf lists are not streamed (built in one piece).
STREAM_MIN_ITEMS = 500
STREAM_MIN_BYTES = 1 << 20
STREAM_CHUNK_ITEMS = 256  # objects per chunk written (~0.9 MB of 3.4 KB pods)

# Stores with `ReturnDeletedObject: true` upstream: DELETE answers the object, not a Status.
RETURNS_DELETED_OBJECT = {("", "pods"), ("resource.k8s.io", "deviceclasses"),
                          ("resource.k8s.io", "resourceclaims"), ("resource.k8s.io", "resourceclaimtemplates"),
                          ("resource.k8s.io", "resourceslices")}


def _not_found() -> errors.NotFound:
    return errors.NotFound("the server could not find the requested resource")


def parse_target(group: str, version: str, segments: list[str], *,
                 registry: res.Registry) -> reads.Target | None:
    """Parse the resource part of a path against the served resources; None means "discovery of this
    group/version"."""
    if not segments:
        return None
    namespace = ""
    namespaced_path = False
    if segments[0] == "namespaces" and len(segments) >= 3 and \
            segments[2] not in ("status", "finalize"):
        namespace = segments[1]
        namespaced_path = True
        segments = segments[2:]
    if len(segments) > 3:
        raise _not_found()
    kind = registry.lookup(group, version, segments[0])
    if kind is None:
        raise _not_found()
    name = segments[1] if len(segments) > 1 else ""
    sub = segments[2] if len(segments) > 2 else ""
    if namespaced_path and not kind.namespaced:
        raise _not_found()
    if kind.namespaced and not namespaced_path and name:
        raise _not_found()
    if sub and kind.subresource(sub) is None and not (kind.plural == "namespaces" and sub == "finalize"):
        raise _not_found()
    return reads.Target(kind=kind, namespace=namespace, all_namespaces=kind.namespaced and not namespaced_path,
                  name=name, subresource=sub)


def write_context(request: web.Request, *, options_kind: str, apply: bool = False) -> stores.WriteContext:
    """The write's options from the query. `options_kind` names them as upstream does ("CreateOptions",
    "UpdateOptions", "PatchOptions": their fieldManager is checked; "DeleteOptions" have none, so a
    delete's manager is its User-Agent's)."""
    q = request.query
    dry = q.getall("dryRun", [])
    for d in dry:
        if d != "All":
            raise errors.BadRequest(f'Invalid dryRun value: "{d}": valid values are "All"')
    validation = q.get("fieldValidation", "") or "Warn"
    if validation not in ("Strict", "Warn", "Ignore"):
        raise errors.BadRequest(
            f'fieldValidation must be one of "Ignore", "Warn", or "Strict"; got "{validation}"')
    manager = ""
    if options_kind != "DeleteOptions":
        manager = q.get("fieldManager", "")
        options.check_write_options(options_kind=options_kind, field_manager=manager, apply=apply)
    ctx = stores.WriteContext(
        user=request.get(st.USER, "system:admin"),
        user_agent=request.headers.get("User-Agent", ""),
        request_id=request.get(st.REQUEST_ID, ""),
        field_manager=manager,
        dry_run=bool(dry),
        field_validation=validation,
        user_info=request.get(st.USER_INFO),
    )
    audit = request.get(st.AUDIT)
    if audit is not None:  # admission's annotations go to the request's audit events
        ctx.audit_annotations = audit.admission_annotations
    return ctx


async def _served(request: web.Request, target: reads.Target, raw: bytes) -> bytes:
    """A stored object as the version the client asked for (`api.versions`)."""
    return await versions.served(request.app[st.WEBHOOK_CLIENT], target, raw)


def _with_warnings(resp: web.Response, ctx: stores.WriteContext) -> web.Response:
    for w in dict.fromkeys(ctx.warnings):
        w = "".join(" " if c < " " or c == "\x7f" else c for c in w)  # no header injection (issue #10)
        resp.headers.add("Warning", '299 - "' + w.replace('"', '\\"') + '"')
    return resp


# -------------------------------------------------------------------------------- entry points


async def handle_core(request: web.Request) -> web.StreamResponse:
    tail = request.match_info.get("tail", "")
    segments = [s for s in tail.split("/") if s]
    if not segments:
        return codec.json_response(discovery.api_versions()) if request.method == "GET" else _method()
    if segments[0] != "v1":
        raise _not_found()
    return await _dispatch(request, "", "v1", segments[1:])


async def handle_group(request: web.Request) -> web.StreamResponse:
    tail = request.match_info.get("tail", "")
    segments = [s for s in tail.split("/") if s]
    if not segments:
        return codec.json_response(discovery.api_group_list(request.app[st.STORE].registry)) if request.method == "GET" else _method()
    group = segments[0]
    if len(segments) == 1:
        body = discovery.api_group(request.app[st.STORE].registry, group)
        if body is None:
            raise _not_found()
        return codec.json_response(body)
    return await _dispatch(request, group, segments[1], segments[2:])


def _method() -> web.Response:
    return codec.status_response(errors.MethodNotAllowed("the server does not allow this method on the requested resource"))


async def _dispatch(request: web.Request, group: str, version: str, segments: list[str]) -> web.StreamResponse:
    target = parse_target(group, version, segments, registry=request.app[st.STORE].registry)
    if target is None:
        body = discovery.resource_list(request.app[st.STORE].registry, group, version)
        if body is None:
            raise _not_found()
        return codec.json_response(body)
    request[st.TARGET] = target
    method = request.method
    kind = target.kind
    if kind.group == "" and kind.plural == "pods" and target.subresource in ("log", "exec", "attach", "portforward"):
        from api import kubelet_proxy  # a pod's container surface, served by its node's kubelet

        return await kubelet_proxy.serve(request, target)
    # The response's media type, before any work (upstream answers 406 before it reads or writes).
    request[st.NEGOTIATED] = codec.negotiate(
        request.headers.get("Accept", ""), protobuf=kind.protobuf,
        stream=method == "GET" and not target.name and bool(codec.parse_bool("watch", request.query.get("watch"))))
    if not kind.stored:
        return await _virtual(request, target)
    if kind.storage_of or (kind.custom is not None and kind.custom.convert):
        # another version of a stored kind: read and write that kind, converting (a custom resource of
        # several versions: every version, as objects keep the version they were stored in)
        target = versions.storage_target(target, registry=request.app[st.STORE].registry)
        kind = target.kind
    if target.subresource:
        sub = kind.subresource(target.subresource)
        verbs = sub.verbs if sub else ("update",)
        allowed = {"GET": "get", "PUT": "update", "PATCH": "patch", "POST": "create"}
        if allowed.get(method) not in verbs:
            raise errors.MethodNotAllowed(
                "the server does not allow this method on the requested resource")
    if method == "GET":
        if target.name:
            return await get_object(request, target)
        if codec.parse_bool("watch", request.query.get("watch")):
            return await watching.watch(request, target)
        return await list_objects(request, target)
    if method == "POST":
        if target.subresource == "binding":
            return await create_binding(request, target)
        if target.subresource == "eviction":
            return await create_eviction(request, target)
        if target.subresource == "token":
            from api.auth import tokens

            return await tokens.token_request(request, target)
        if target.name or target.all_namespaces:
            raise errors.MethodNotAllowed("the server does not allow this method on the requested resource")
        return await create_object(request, target)
    if method == "PUT" and target.name:
        return await update_object(request, target)
    if method == "PATCH" and target.name:
        return await patch_object(request, target)
    if method == "DELETE":
        if target.name and not target.subresource:
            return await delete_object(request, target)
        if not target.name and "deletecollection" in kind.verbs and not target.all_namespaces:
            return await delete_collection(request, target)
    raise errors.MethodNotAllowed("the server does not allow this method on the requested resource")


# -------------------------------------------------------------------------------- not stored


async def _virtual(request: web.Request, target: reads.Target) -> web.StreamResponse:
    """Resources that are not objects of the event log: `bindings` (a pod's binding, as
    `pods/{name}/binding`), the computed `componentstatuses`; the reviews are routes of `api.auth`
    (without authentication they are not served)."""
    kind = target.kind
    if kind.plural == "bindings" and request.method == "POST" and not target.name and not target.all_namespaces:
        return await create_binding(request, target)
    if kind.plural == "componentstatuses" and request.method == "GET" and not \
            codec.parse_bool("watch", request.query.get("watch")):
        return await _component_statuses(request, target)
    if request.method == "POST" and "create" in kind.verbs:
        raise _not_found()
    raise errors.MethodNotAllowed("the server does not allow this method on the requested resource")


COMPONENTSTATUS_WARNING = '299 - "v1 ComponentStatus is deprecated in v1.19+"'


async def _component_statuses(request: web.Request, target: reads.Target) -> web.StreamResponse:
    """`kubectl get componentstatuses`: etcd-0 is the event log's database (a round trip, as the
    readiness check); the scheduler and controller manager are not probed (they may run in other
    processes or not at all), so they are not listed."""
    store = request.app[st.STORE]
    try:
        await store.log.ping()
        condition = {"type": "Healthy", "status": "True", "message": "ok"}
    except Exception as exc:  # any failure of the round trip is the component's ill health
        condition = {"type": "Healthy", "status": "False", "message": "", "error": str(exc)}
    item = {"kind": "ComponentStatus", "apiVersion": "v1", "metadata": {"name": "etcd-0"},
            "conditions": [condition]}
    items = [item] if target.name in ("", "etcd-0") else []
    if target.name and not items:
        raise errors.NotFound.of(group="", plural="componentstatuses", name=target.name)
    body = items[0] if target.name else {"kind": "ComponentStatusList", "apiVersion": "v1", "metadata": {},
                                          "items": items}
    negotiated = request[st.NEGOTIATED]
    if negotiated.convert == codec.TABLE:
        table = tables.table(items, group="", kind="ComponentStatus", now=store.clock.now(),
                             include_object=request.query.get("includeObject", "Metadata"), resource_version="")
        resp = codec.object_response(negotiated, raw=_encode(table))
    else:
        resp = codec.object_response(negotiated, obj=body)
    resp.headers.add("Warning", COMPONENTSTATUS_WARNING)
    return resp


# -------------------------------------------------------------------------------- reads


async def get_object(request: web.Request, target: reads.Target) -> web.StreamResponse:
    store = request.app[st.STORE]
    kind = target.kind
    negotiated = request[st.NEGOTIATED]
    if target.subresource == "scale":
        scale = await store.get_scale(kind, target.namespace, target.name)
        if negotiated.convert == codec.TABLE:
            table = tables.table([scale], group="autoscaling", kind="Scale", now=store.clock.now(),
                                 include_object=request.query.get("includeObject", "Metadata"),
                                 resource_version=str((scale.get("metadata") or {}).get("resourceVersion") or ""))
            return codec.object_response(negotiated, raw=_encode(table))
        return codec.object_response(negotiated, obj=scale)
    rv = options.resource_version_param(request.query.get("resourceVersion"))
    if rv:
        await reads.wait_until_fresh(store.log, revision=rv)
    ev = await store.get(kind, target.namespace, target.name)
    if negotiated.convert == codec.TABLE:
        obj = _decode(ev.object)
        table = tables.table([obj], group=kind.group, kind=kind.kind, now=store.clock.now(),
                             include_object=request.query.get("includeObject", "Metadata"),
                             resource_version=str(ev.revision), printer=tables.printer_for(target.served or kind))
        return codec.object_response(negotiated, raw=_encode(table))
    return codec.object_response(negotiated, raw=await _served(request, target, ev.object))


async def list_objects(request: web.Request, target: reads.Target) -> web.StreamResponse:
    store = request.app[st.STORE]
    kind = target.kind
    lq = reads.list_query(request, target)
    rv = options.resource_version_param(request.query.get("resourceVersion"))
    if rv and lq.revision is None:
        await reads.wait_until_fresh(store.log, revision=rv)
    events, revision, token = await reads.collect(store, target, lq)
    negotiated = request[st.NEGOTIATED]
    if negotiated.convert == codec.TABLE:
        group, plural = kind.group, kind.plural
        served = target.served or kind
        printer = tables.printer_for(served)
        # A custom resource's rows change with its definition: the key names its generation and version.
        key_tail: tuple[Any, ...] = () if served.custom is None else (served.version, served.custom.key())
        now = store.clock.now()

        def render(part: list[log.Event]) -> dict[str, Any]:
            with collector.paused():
                return request.app[st.TABLE_ROWS].table(
                    (((group, plural, ev.namespace, ev.name, *key_tail), ev.revision, ev.object) for ev in part),
                    group=group, kind=kind.kind, now=now, include_object=request.query.get("includeObject", "Metadata"),
                    resource_version=str(revision), continue_token=token, printer=printer)

        # (FlowSchemas' rows are sorted across the whole table: never streamed, and never this many)
        if negotiated.media_type == codec.JSON and len(events) >= STREAM_MIN_ITEMS and kind.kind != "FlowSchema":
            return await _stream_table(request, render, events)
        return codec.object_response(negotiated, raw=_encode(render(events)))
    if target.served is not None:
        kind = target.served
        events = await versions.served_events(request.app[st.WEBHOOK_CLIENT], kind, events)
    if negotiated.media_type == codec.PROTOBUF and not negotiated.convert:
        return await _protobuf_list(request, kind, events, resource_version=str(revision), continue_token=token)
    meta = b'{"resourceVersion":"' + str(revision).encode() + b'"'
    if token:
        meta += b',"continue":"' + token.encode() + b'"'
    meta += b"}"
    head = (b'{"kind":"' + kind.list_kind.encode() + b'","apiVersion":"' + kind.api_version.encode()
            + b'","metadata":' + meta + b',"items":[')
    if negotiated.media_type == codec.JSON and not negotiated.convert and len(events) >= STREAM_MIN_ITEMS:
        items_size = sum([len(ev.object) for ev in events])
        if items_size >= STREAM_MIN_BYTES:
            return await _stream_list(request, head, events, items_size=items_size)
    # One copy of the stored bytes: the head and tail ride on the first and last item.
    parts = [ev.object for ev in events]
    if parts:
        parts[0] = head + parts[0]
        parts[-1] += b"]}"
        return codec.object_response(negotiated, raw=b",".join(parts))
    return codec.object_response(negotiated, raw=head + b"]}")


async def _stream_list(request: web.Request, head: bytes, events: list[log.Event], *,
                       items_size: int) -> web.StreamResponse:
    """A large JSON list written as it is encoded (upstream's streaming list encoder, KEP-5116): the
    head with the list's metadata, the stored items joined in chunks of STREAM_CHUNK_ITEMS, the tail.
    Each chunk waits for the connection to take the previous ones, so the memory a LIST holds is one
    chunk and the socket's buffer, not the whole body. The length is known beforehand (the stored
    items' `items_size`, their commas, the head and tail): a Content-Length, not chunked transfer
    encoding, which would copy every chunk once more to frame it. The bytes are those the list has
    in one piece."""
    resp = web.StreamResponse(status=200, headers={"Content-Type": codec.JSON})
    resp.content_length = len(head) + items_size + max(len(events) - 1, 0) + 2
    await resp.prepare(request)
    separator = b""
    for start in range(0, len(events), STREAM_CHUNK_ITEMS):
        chunk = b",".join([ev.object for ev in events[start:start + STREAM_CHUNK_ITEMS]])
        await resp.write(head + separator + chunk if start == 0 else separator + chunk)
        separator = b","
    await resp.write(b"]}" if events else head + b"]}")
    await resp.write_eof()
    return resp


async def _stream_table(request: web.Request, render: Callable[[list[log.Event]], dict[str, Any]],
                        events: list[log.Event]) -> web.StreamResponse:
    """A large Table written as it is rendered: the Table of the first STREAM_CHUNK_ITEMS objects without
    its closing `]}` (`rows` is its last member), then the rows of each further chunk, then `]}`; the
    bytes of the Table rendered in one piece."""
    resp = web.StreamResponse(status=200, headers={"Content-Type": codec.JSON})
    resp.enable_chunked_encoding()
    await resp.prepare(request)
    first = _encode(render(events[:STREAM_CHUNK_ITEMS]))
    assert first.endswith(b"]}")
    await resp.write(first[:-2])
    for start in range(STREAM_CHUNK_ITEMS, len(events), STREAM_CHUNK_ITEMS):
        rows = _encode(render(events[start:start + STREAM_CHUNK_ITEMS])["rows"])
        await resp.write(b"," + rows[1:-1])
    await resp.write(b"]}")
    await resp.write_eof()
    return resp


async def _protobuf_list(request: web.Request, kind: res.ResourceKind, events: list[log.Event], *,
                         resource_version: str, continue_token: str = "") -> web.Response:
    """A List in protobuf: each stored object's message (kept per revision, `codec.ProtobufItems`), in
    the list kind's envelope."""
    from cp import protobuf

    messages = await request.app[st.PROTOBUF_ITEMS].encoded(
        ((kind.group, kind.version, kind.plural, ev.namespace, ev.name), ev.revision, ev.object) for ev in events)
    body = protobuf.encode_list(messages, api_version=kind.api_version, kind=kind.list_kind,
                                resource_version=resource_version, continue_token=continue_token)
    return web.Response(body=body, content_type=codec.PROTOBUF)


# -------------------------------------------------------------------------------- writes


async def create_object(request: web.Request, target: reads.Target) -> web.StreamResponse:
    store = request.app[st.STORE]
    ctx = write_context(request, options_kind="CreateOptions")
    body = await codec.read_body(request)
    obj = await codec.decode_body(body, codec.media_type(request.headers.get("Content-Type")),
                                  custom_kind="" if target.kind.protobuf else target.kind.kind)
    _check_type(obj, target.served or target.kind)
    obj = await versions.to_storage_converted(request.app[st.WEBHOOK_CLIENT], target, obj, create=True, ctx=ctx)
    ctx.served = versions.builtin_served(target)
    result = await store.create(target.kind, target.namespace, obj, ctx)
    return _with_warnings(codec.object_response(request[st.NEGOTIATED], raw=await _served(request, target, result.body),
                                                status=result.code), ctx)


def _check_type(obj: dict[str, Any], kind: res.ResourceKind, *, sub_kind: str = "",
                sub_api_version: str = "") -> None:
    want_kind = sub_kind or kind.kind
    want_av = sub_api_version or kind.api_version
    got_kind = obj.get("kind")
    got_av = obj.get("apiVersion")
    if got_kind and got_kind != want_kind:
        raise errors.BadRequest(
            f"the API version in the data ({got_av}) does not match the expected API version ({want_av})"
            if got_av and got_av != want_av else
            f'the kind in the data ("{got_kind}") does not match the expected kind ("{want_kind}")')
    if got_av and got_av != want_av:
        raise errors.BadRequest(
            f"the API version in the data ({got_av}) does not match the expected API version ({want_av})")


async def update_object(request: web.Request, target: reads.Target) -> web.StreamResponse:
    store = request.app[st.STORE]
    ctx = write_context(request, options_kind="UpdateOptions")
    body = await codec.read_body(request)
    obj = await codec.decode_body(body, codec.media_type(request.headers.get("Content-Type")),
                                  custom_kind="" if target.kind.protobuf else target.kind.kind)
    kind = target.kind
    if target.subresource == "scale":
        _check_type(obj, kind, sub_kind="Scale", sub_api_version="autoscaling/v1")
        scale = await store.update_scale(kind, target.namespace, target.name, lambda _s: obj, ctx)
        return codec.object_response(request[st.NEGOTIATED], obj=scale)
    _check_type(obj, target.served or kind)
    obj = await versions.to_storage_converted(request.app[st.WEBHOOK_CLIENT], target, obj, ctx=ctx)
    ctx.served = versions.builtin_served(target)
    sub = target.subresource if target.subresource in res.PARTIAL_WRITES else ""
    if target.subresource == "finalize":
        result = await _finalize_namespace(store, target, obj, ctx)
    else:
        result = await store.update(kind, target.namespace, target.name, obj, ctx, subresource=sub)
    return _with_warnings(codec.object_response(request[st.NEGOTIATED], raw=await _served(request, target, result.body),
                                                status=result.code), ctx)


async def _finalize_namespace(store: stores.Store, target: reads.Target, obj: dict[str, Any],
                              ctx: stores.WriteContext) -> stores.Result:
    spec, meta = obj.get("spec") or {}, obj.get("metadata") or {}
    if not isinstance(spec, dict) or not isinstance(meta, dict) or \
            not isinstance(spec.get("finalizers") or [], list):  # malformed bodies: 400, not 500 (issue #10)
        raise errors.BadRequest("the body of the request was not a valid Namespace")
    finalizers = spec.get("finalizers") or []

    wanted_rv = meta.get("resourceVersion")

    def mutate(current: dict[str, Any]) -> dict[str, Any]:
        if wanted_rv:
            current["metadata"]["resourceVersion"] = wanted_rv  # precondition, as for any update
        current.setdefault("spec", {})["finalizers"] = list(finalizers)
        if not finalizers:
            current["spec"].pop("finalizers")
        return current

    return await store.guaranteed_update(target.kind, "", target.name, mutate, ctx, subresource="finalize",
                                         fields={"f:spec": {"f:finalizers": {}}})


async def patch_object(request: web.Request, target: reads.Target) -> web.StreamResponse:
    store = request.app[st.STORE]
    content_type = codec.media_type(request.headers.get("Content-Type"))
    if content_type not in patching.PATCH_TYPES:
        raise patching.unsupported_media_type()
    ctx = write_context(request, options_kind="PatchOptions", apply=content_type == patching.APPLY_PATCH)
    force = codec.parse_bool("force", request.query.get("force"))
    if force is not None and content_type != patching.APPLY_PATCH:
        raise errors.BadRequest("force: Forbidden: may not be specified for non-apply patch")
    body = await codec.read_body(request)
    kind = target.kind
    if target.subresource == "scale":
        def mutate_scale(scale: dict[str, Any]) -> dict[str, Any]:
            if content_type == patching.APPLY_PATCH:
                # Apply on /scale: the applied Scale's spec.replicas (the only field a Scale owns).
                applied = patching.apply_yaml_body(body)
                _check_type(applied, kind, sub_kind="Scale", sub_api_version="autoscaling/v1")
                replicas = (applied.get("spec") or {}).get("replicas")
                if replicas is not None:
                    scale.setdefault("spec", {})["replicas"] = replicas
                rv = (applied.get("metadata") or {}).get("resourceVersion")
                scale.setdefault("metadata", {})["resourceVersion"] = rv or ""
                return scale
            return patching.apply_patch(scale, body, content_type=content_type, group="autoscaling",
                                        version="v1", kind="Scale")

        scale = await store.update_scale(kind, target.namespace, target.name, mutate_scale, ctx)
        return codec.object_response(request[st.NEGOTIATED], obj=scale)
    sub = target.subresource if target.subresource in res.PARTIAL_WRITES else ""
    if versions.uses_webhook(target):
        result = await versions.patch_converted(request.app[st.WEBHOOK_CLIENT], store, target, body, content_type,
                                                ctx, subresource=sub, force=bool(force))
    elif target.served is not None:
        result = await versions.patch(store, target, body, content_type, ctx, subresource=sub,
                                      force=bool(force))
    else:
        result = await store.patch(kind, target.namespace, target.name, body, content_type, ctx,
                                   subresource=sub, force=bool(force))
    return _with_warnings(codec.object_response(request[st.NEGOTIATED], raw=await _served(request, target, result.body),
                                                status=result.code), ctx)


async def _delete_options(request: web.Request) -> dict[str, Any]:
    body = await codec.read_body(request)
    opts: dict[str, Any] = {}
    if body.strip():
        content_type = codec.media_type(request.headers.get("Content-Type"))
        if content_type == codec.PROTOBUF:
            from cp import protobuf

            decoded = protobuf.decode(body)
            decoded.pop("kind", None)
            decoded.pop("apiVersion", None)
        else:
            try:
                decoded = _decode(body)
            except msgspec.DecodeError as exc:
                raise errors.BadRequest(f"invalid DeleteOptions: {exc}") from None
        if not isinstance(decoded, dict):
            raise errors.BadRequest("invalid DeleteOptions: must be a JSON object")
        _check_delete_body(decoded)
        opts = decoded
    q = request.query
    grace = options.int64_param(q.get("gracePeriodSeconds"))
    if grace is not None:
        opts["gracePeriodSeconds"] = grace
    if q.get("propagationPolicy"):
        opts["propagationPolicy"] = q["propagationPolicy"]
    orphan = codec.parse_bool("orphanDependents", q.get("orphanDependents"))
    if orphan is not None:
        opts["orphanDependents"] = orphan
    policy = opts.get("propagationPolicy")
    if policy is not None and policy not in ("Orphan", "Background", "Foreground"):
        raise errors.Invalid(kind="DeleteOptions", group="meta.k8s.io", name="", causes=[
            errors.Cause("NotSupported", "propagationPolicy", 'supported values: "Foreground", '
                         '"Background", "Orphan", nil', policy)])
    if "dryRun" in opts and opts["dryRun"] not in ([], ["All"]):
        raise errors.BadRequest(f'Invalid dryRun value: {opts["dryRun"]}')
    return opts


def _check_delete_body(opts: dict[str, Any]) -> None:
    """The DeleteOptions fields the store reads, typed as Go decodes them: `gracePeriodSeconds` an
    int64, `preconditions` an object of strings (compared as strings, as upstream's Preconditions).
    Anything else is a 400 in the decoder's words, not a failure further on."""
    grace = opts.get("gracePeriodSeconds")
    if grace is not None and (type(grace) is not int or not options.INT64_MIN <= grace <= options.INT64_MAX):
        raise _undecodable(grace, "DeleteOptions.gracePeriodSeconds", "int64")
    pre = opts.get("preconditions")
    if pre is None:
        return
    if not isinstance(pre, dict):
        raise _undecodable(pre, "DeleteOptions.preconditions", "v1.Preconditions")
    for field, go_type in (("uid", "types.UID"), ("resourceVersion", "string")):
        value = pre.get(field)
        if value is not None and not isinstance(value, str):
            raise _undecodable(value, f"Preconditions.preconditions.{field}", go_type)


def _undecodable(value: Any, field: str, go_type: str) -> errors.BadRequest:
    """Go's json.UnmarshalTypeError for a DeleteOptions field (numbers shown with their text)."""
    if isinstance(value, bool):
        what = "bool"
    elif isinstance(value, int | float):
        what = f"number {value}"
    elif isinstance(value, str):
        what = "string"
    else:
        what = "array" if isinstance(value, list) else "object"
    return errors.BadRequest(f"invalid DeleteOptions: json: cannot unmarshal {what} into Go struct field {field} "
                             f"of type {go_type}")


async def delete_object(request: web.Request, target: reads.Target) -> web.StreamResponse:
    store = request.app[st.STORE]
    ctx = write_context(request, options_kind="DeleteOptions")
    opts = await _delete_options(request)
    if opts.get("dryRun") == ["All"]:
        ctx.dry_run = True
    kind = target.kind
    if (kind.group, kind.plural) == (priority.GROUP, priority.PLURAL):
        priority.refuse_system_class_delete(target.name)  # the PriorityClass storage's own Delete
    result, deleted = await store.delete(kind, target.namespace, target.name, opts, ctx)
    negotiated = request[st.NEGOTIATED]
    if deleted and (kind.group, kind.plural) not in RETURNS_DELETED_OBJECT:
        uid = (_decode(result.body).get("metadata") or {}).get("uid", "")
        served = target.served or kind
        return codec.object_response(negotiated, raw=codec.success_status(name=target.name, group=served.group,
                                                                          kind=served.plural, uid=uid))
    # Upstream (handlers/delete.go) answers 202 only for a pending deletion with orphanDependents=false.
    pending_cascade = not deleted and opts.get("orphanDependents") is False
    return codec.object_response(negotiated, raw=await _served(request, target, result.body),
                                 status=202 if pending_cascade else 200)


async def delete_collection(request: web.Request, target: reads.Target) -> web.StreamResponse:
    store = request.app[st.STORE]
    ctx = write_context(request, options_kind="DeleteOptions")
    opts = await _delete_options(request)
    if opts.get("dryRun") == ["All"]:
        ctx.dry_run = True
    lq = reads.list_query(request, target)
    lq.limit = None
    events, _revision, _ = await reads.collect(store, target, lq)
    deleted: list[bytes] = []
    for ev in events:
        try:
            result, _now = await store.delete(target.kind, ev.namespace, ev.name, opts, ctx)
        except errors.NotFound:
            continue
        deleted.append(await _served(request, target, result.body))
    kind = target.served or target.kind
    head = (b'{"kind":"' + kind.list_kind.encode() + b'","apiVersion":"' + kind.api_version.encode()
            + b'","metadata":{"resourceVersion":"' + str(store.log.revision).encode() + b'"},"items":[')
    return codec.object_response(request[st.NEGOTIATED], raw=head + b",".join(deleted) + b"]}")


async def create_binding(request: web.Request, target: reads.Target) -> web.StreamResponse:
    """`pods/{name}/binding`, or `bindings` whose body names the pod (`metadata.name`)."""
    store = request.app[st.STORE]
    ctx = write_context(request, options_kind="CreateOptions")
    body = await codec.read_body(request)
    binding = await codec.decode_body(body, codec.media_type(request.headers.get("Content-Type")))
    meta = binding.get("metadata")
    name = target.name or (str(meta.get("name") or "") if isinstance(meta, dict) else "")
    if not name:
        raise errors.BadRequest("name is required for Binding")
    await store.bind(target.namespace, name, binding, ctx)
    body = codec.status_body({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                              "code": 201})
    return codec.object_response(request[st.NEGOTIATED], raw=body, status=201)


async def create_eviction(request: web.Request, target: reads.Target) -> web.StreamResponse:
    """`pods/{name}/eviction` (`api.eviction`)."""
    from api import eviction

    store = request.app[st.STORE]
    ctx = write_context(request, options_kind="CreateOptions")
    body = await codec.read_body(request)
    obj = await codec.decode_body(body, codec.media_type(request.headers.get("Content-Type")))
    if isinstance(obj.get("deleteOptions"), dict):
        _check_delete_body(obj["deleteOptions"])
    outcome = await eviction.evict(store, namespace=target.namespace, name=target.name, eviction=obj, ctx=ctx)
    return codec.object_response(request[st.NEGOTIATED], raw=codec.status_body(outcome.status),
                                 status=outcome.code)
