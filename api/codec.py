"""Request decoding and response encoding: content types, Accept negotiation, Status bodies.

Reused msgspec encoders/decoders; JSON responses for stored objects are the stored bytes as they are.
Other media types (protobuf, YAML) are encoded from the same JSON when the client's Accept asks for them
(`negotiate`, as kube-apiserver's `negotiation.NegotiateOutputMediaType`).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple, TypeVar

import msgspec
from aiohttp import web

from cp import bodies, collector, errors

JSON = "application/json"
YAML = "application/yaml"
PROTOBUF = "application/vnd.kubernetes.protobuf"
MAX_BODY = bodies.MAX_BYTES  # kube-apiserver's MaxRequestBodyBytes

_T = TypeVar("_T")

# A request body read ahead of the handler (`api.auth.chain` reads it before the request takes a seat).
BODY = web.RequestKey("body", bytes)

decoder = msgspec.json.Decoder()
encoder = msgspec.json.Encoder()


def media_type(header: str | None) -> str:
    """`application/json; charset=utf-8` -> `application/json`; missing -> JSON (upstream default)."""
    if not header:
        return JSON
    return header.split(";", 1)[0].strip().lower() or JSON


# --------------------------------------------------------------------------------------------
# Accept negotiation (apiserver `endpoints/handlers/negotiation`, `RequestScope.AllowsMediaTypeTransform`).
# --------------------------------------------------------------------------------------------

TABLE = "Table"
PARTIAL = ("PartialObjectMetadata", "PartialObjectMetadataList")  # metadata-only conversions
_META_VERSIONS = ("v1", "v1beta1")


class Negotiated(NamedTuple):
    """What a response is written as: a media type, and a conversion the Accept asked for (`as=Table`,
    `as=PartialObjectMetadata` or `as=PartialObjectMetadataList`, of meta.k8s.io `version`)."""

    media_type: str
    convert: str = ""
    version: str = ""


class Clause(NamedTuple):
    """One clause of an Accept header."""

    type: str
    subtype: str
    q: float
    params: dict[str, str]


def accept_clauses(header: str) -> list[Clause]:
    """Accept clauses as goautoneg's ParseAccept reads them: a bare `*` is `*/*`, a clause without a `/`
    is skipped, a bad `q` is 0; sorted by q, then wildcard types and subtypes last (stably)."""
    clauses: list[Clause] = []
    for part in header.split(","):
        media_range, *raw_params = part.strip(" ").split(";")
        pieces = media_range.split("/")
        type_ = pieces[0].strip(" ")
        if len(pieces) == 1 and type_ == "*":
            subtype = "*"
        elif len(pieces) == 2:
            subtype = pieces[1].strip(" ")
        else:
            continue
        q = 1.0
        params: dict[str, str] = {}
        for raw in raw_params:
            key, eq, value = raw.partition("=")
            if not eq:
                continue
            key = key.strip(" ")
            if key == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
            else:
                params[key] = value.strip(" ")
        clauses.append(Clause(type_, subtype, q, params))
    clauses.sort(key=lambda c: (-c.q, c.type == "*", c.subtype == "*"))
    return clauses


def _accepts(params: dict[str, str], media_type: str, *, protobuf: bool, transforms: bool) -> Negotiated | None:
    """The clause's parameters for one media type (`acceptMediaTypeOptions`, `AllowsMediaTypeTransform`):
    `as`/`g`/`v` ask for a conversion, `stream` must be `watch` on a type that streams, `sv` the server's
    meta version; without a conversion, protobuf only where the endpoint has it."""
    convert = None
    if "as" in params or "g" in params or "v" in params:
        convert = (params.get("as", ""), params.get("g", ""), params.get("v", ""))
    stream = params.get("stream", "")
    if stream and (media_type == YAML or stream != "watch"):
        return None
    sv = params.get("sv", "")
    if sv and sv != "v1":
        return None
    if convert is None:
        return Negotiated(media_type) if protobuf or media_type != PROTOBUF else None
    kind, group, version = convert
    # Error bodies (`transforms=False`, upstream's DefaultEndpointRestrictions) never convert.
    if not transforms or group != "meta.k8s.io" or version not in _META_VERSIONS:
        return None
    if kind == TABLE and media_type in (JSON, YAML):  # a Table has no protobuf message
        return Negotiated(media_type, TABLE, version)
    # Metadata only, of any kind (the sandbox's too: PartialObjectMetadata is a built-in type); not as
    # meta.k8s.io/v1beta1 protobuf, whose list message the table does not have.
    if kind in PARTIAL and (media_type != PROTOBUF or version == "v1"):
        return Negotiated(media_type, kind, version)
    return None


@functools.lru_cache(maxsize=512)
def negotiate(accept: str, *, protobuf: bool = True, stream: bool = False,
              transforms: bool = True) -> Negotiated:
    """The response's media type for an Accept header, as kube-apiserver negotiates it: the first clause
    (in goautoneg's order) that one of JSON, YAML and protobuf (in this order; protobuf only where the
    endpoint has it, `protobuf=False` for the sandbox's own kinds as for custom resources) matches with
    acceptable parameters; no Accept at all is JSON. A watch (`stream=True`) needs a type that streams
    (not YAML). Nothing acceptable is 406 NotAcceptable, listing the server's media types (all three,
    as upstream lists them for custom resources too)."""
    offered = (JSON, YAML, PROTOBUF)
    if accept:
        found = None
        for clause in accept_clauses(accept):
            for media_type in offered:
                type_, subtype = media_type.split("/")
                if (clause.type == type_ and clause.subtype in (subtype, "*")) or \
                        (clause.type == "*" and clause.subtype == "*"):
                    found = _accepts(clause.params, media_type, protobuf=protobuf, transforms=transforms)
                    if found is not None:
                        break
            if found is not None:
                break
    else:
        found = Negotiated(JSON)
    if found is None or (stream and found.media_type == YAML):
        listed = [f"{JSON};stream=watch", f"{PROTOBUF};stream=watch"] if stream else [JSON, YAML, PROTOBUF]
        raise errors.NotAcceptable(f"only the following media types are accepted: {', '.join(listed)}")
    return found


async def read_body(request: web.Request) -> bytes:
    """The request body, at most MAX_BODY bytes (413 beyond), read once."""
    read_ahead: bytes | None = request.get(BODY)
    if read_ahead is not None:
        return read_ahead
    if request.content_length is not None and request.content_length > MAX_BODY:
        raise errors.RequestEntityTooLarge("the server has received too large of a request body")
    content = request.content
    if content.is_eof():
        # The whole body arrived before the handler ran (a small request, e.g. a heartbeat): take it
        # from the buffer at once instead of iterating chunks (an await per chunk and one at the end).
        body = content.read_nowait()
        if len(body) > MAX_BODY:
            raise errors.RequestEntityTooLarge("the server has received too large of a request body")
        request[BODY] = body  # read once: the audit log records it too
        return body
    chunks: list[bytes] = []
    size = 0
    async for chunk in content.iter_chunked(65536):
        size += len(chunk)
        if size > MAX_BODY:
            raise errors.RequestEntityTooLarge("the server has received too large of a request body")
        chunks.append(chunk)
    request[BODY] = body = b"".join(chunks)
    return body




async def off_loop(decode: Callable[[bytes], _T], body: bytes) -> _T:
    """`decode(body)`, in a worker thread when the body is large (`sized_off_loop`)."""
    return await sized_off_loop(functools.partial(decode, body), size=len(body))


async def sized_off_loop(work: Callable[[], _T], *, size: int) -> _T:
    """`work()`, in a worker thread when the bytes it handles (`size`) are many: PyYAML builds a 3 MiB
    document in seconds, protobuf-encoding 10,000 stored pods takes half a second, and the event loop
    must keep serving everyone else meanwhile (it shares the GIL with the thread, so it slows down
    instead of stopping)."""
    if size <= bodies.LARGE_BYTES:
        return work()

    def working() -> _T:
        # Without the cyclic collector meanwhile: its collections run in the allocating thread with the
        # GIL held, and the work's thousands of new objects made them 50-180 ms stops of the event loop
        # (decoded bodies hold no cycles; collections resume after).
        with collector.paused():
            return work()

    return await asyncio.to_thread(working)


async def decode_body(body: bytes, content_type: str, *, custom_kind: str = "") -> dict[str, Any]:
    """`decode_object`, off the event loop for a large YAML or protobuf body (JSON decodes at C speed)."""
    if content_type in (JSON, "*/*"):
        return decode_object(body, content_type, custom_kind=custom_kind)
    return await off_loop(functools.partial(decode_object, content_type=content_type, custom_kind=custom_kind),
                          body)


def decode_object(body: bytes, content_type: str, *, custom_kind: str = "") -> dict[str, Any]:
    """Decode a create/update body: JSON (or no Content-Type), YAML, or Kubernetes protobuf.

    `custom_kind` names the endpoint's kind when it is one of the sandbox's own (`ResourceKind.protobuf`
    false): like a custom resource upstream, it has no protobuf message, and a protobuf body is a 400 in
    the words of upstream's decoder, which has nothing to decode it into.

    What a body decodes to is bounded (`cp.bodies`): JSON cannot expand past its raw size, and the YAML
    and protobuf decoders refuse (413, or 400 for YAML aliasing) before building anything larger."""
    if content_type == PROTOBUF:
        from cp import protobuf

        if custom_kind:
            raise protobuf.undecodable_as_custom(body, kind=custom_kind)
        return protobuf.decode(body)
    if content_type in (JSON, "*/*"):
        try:
            obj = decoder.decode(body)
        except msgspec.DecodeError as exc:
            raise errors.BadRequest(f"couldn't get version/kind; json parse error: {exc}") from None
    elif content_type in (YAML, "application/x-yaml", "text/yaml"):
        obj = bodies.decode_yaml(body, error_prefix="couldn't get version/kind; yaml parse error: ")
    else:
        raise errors.UnsupportedMediaType(
            f"the body of the request was in an unknown format - accepted media types include: "
            f"{JSON}, {YAML}, {PROTOBUF}")
    if not isinstance(obj, dict):
        raise errors.BadRequest("Object 'Kind' is missing in the request body: the body must be a JSON object")
    return obj


def json_response(body: bytes, *, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(body=body, status=status, content_type=JSON, headers=headers)


# What Go's encoding/json escapes beyond msgspec (it escapes HTML by default, and the JavaScript line
# separators); these bytes occur only inside strings of encoded JSON, so replacing them is safe.
_GO_ESCAPES = ((b"<", b"\\u003c"), (b">", b"\\u003e"), (b"&", b"\\u0026"),
               (b"\xe2\x80\xa8", b"\\u2028"), (b"\xe2\x80\xa9", b"\\u2029"))


def go_json(obj: Any) -> bytes:
    """`obj` encoded as Go's `json.Marshal` writes it (keys in the order given): kube-apiserver's
    JSON serializer escapes `<`, `>`, `&` and U+2028/U+2029 in strings."""
    out = encoder.encode(obj)
    for raw, escaped in _GO_ESCAPES:
        if raw in out:
            out = out.replace(raw, escaped)
    return out


def status_body(status: dict[str, Any]) -> bytes:
    """A `metav1.Status` response body byte for byte as kube-apiserver writes it: Go's field order
    (`cp.errors.StatusError.status`), Go's escapes and the newline its `json.Encoder` ends with."""
    return go_json(status) + b"\n"


def status_response(err: errors.StatusError) -> web.Response:
    return web.Response(body=status_body(err.status()), status=err.code, content_type=JSON,
                        headers=err.headers or None)


def error_response(err: errors.StatusError, *, accept: str) -> web.Response:
    """A Status error in the media type the client accepts (`ErrorNegotiated`: protobuf for client-go's
    typed clients), JSON when nothing is acceptable or it asked for a conversion (errors never convert)."""
    try:
        negotiated = negotiate(accept, transforms=False)
    except errors.NotAcceptable:
        return status_response(err)
    if negotiated.media_type == JSON:
        return status_response(err)
    return object_response(negotiated, obj=err.status(), status=err.code, headers=err.headers or None)


def object_response(negotiated: Negotiated, *, raw: bytes | None = None, obj: dict[str, Any] | None = None,
                    status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    """One object (given as its JSON bytes `raw`, or as `obj`) in the negotiated media type; JSON bytes
    are sent as they are. The protobuf envelope's type is the object's own `apiVersion` and `kind`."""
    if negotiated.convert in PARTIAL:
        if obj is None:
            assert raw is not None
            obj = decoder.decode(raw)
        obj, raw = metadata_only(obj, negotiated), None
    if negotiated.media_type == JSON:
        return json_response(raw if raw is not None else encoder.encode(obj), status=status, headers=headers)
    if obj is None:
        assert raw is not None
        obj = decoder.decode(raw)
    if negotiated.media_type == PROTOBUF:
        from cp import protobuf

        body = protobuf.encode(obj, api_version=str(obj.get("apiVersion", "")), kind=str(obj.get("kind", "")))
        return web.Response(body=body, status=status, content_type=PROTOBUF, headers=headers)
    return web.Response(body=yaml_bytes(obj), status=status, content_type=YAML, headers=headers)


def metadata_only(obj: dict[str, Any], negotiated: Negotiated) -> dict[str, Any]:
    """An object, or a list, as the PartialObjectMetadata(List) the Accept asked for (upstream's
    `asPartialObjectMetadata[List]`); a list asked for as one object, or one object as a list, is 406.
    A Status (an error, a delete's success) is never converted."""
    kind = str(obj.get("kind", ""))
    if kind == "Status":
        return obj
    is_list = kind.endswith("List") and isinstance(obj.get("items"), list)
    api_version = f"meta.k8s.io/{negotiated.version}"
    if negotiated.convert == "PartialObjectMetadata":
        if is_list:
            raise errors.NotAcceptable(f"you requested PartialObjectMetadata, but the requested object is a list "
                                       f"({_go_type(obj)})")
        return {"kind": "PartialObjectMetadata", "apiVersion": api_version, "metadata": obj.get("metadata") or {}}
    if not is_list:
        raise errors.NotAcceptable(f"you requested PartialObjectMetadataList, but the requested object is not a "
                                   f"list ({_go_type(obj)})")
    meta = obj.get("metadata") or {}
    items = [{"kind": "PartialObjectMetadata", "apiVersion": api_version, "metadata": item.get("metadata") or {}}
             for item in obj["items"]]
    return {"kind": "PartialObjectMetadataList", "apiVersion": api_version,
            "metadata": {k: meta[k] for k in ("resourceVersion", "continue", "remainingItemCount") if k in meta},
            "items": items}


def _go_type(obj: dict[str, Any]) -> str:
    """How Go's `%T` names the stored object's internal type: `*core.Pod`, `*apps.DeploymentList`."""
    group = str(obj.get("apiVersion", "")).rpartition("/")[0]
    return f"*{group.split('.')[0] or 'core'}.{obj.get('kind', '')}"


class ProtobufItems:
    """The protobuf messages of stored objects, kept per object key and revision, so that a repeated
    protobuf LIST (client-go informers relist in protobuf) mostly copies bytes instead of decoding and
    encoding every object. As `cp.tables.RowCache`: a revision names one immutable version of an object,
    so an entry is valid while the key's revision matches and nothing is invalidated. Bounded by
    `max_bytes` of messages, the longest kept dropped first."""

    def __init__(self, *, max_bytes: int = 64 * 1024 * 1024) -> None:
        self.max_bytes = max_bytes
        self.size = 0
        self._kept: dict[Any, tuple[int, int, bytes]] = {}  # key -> (revision, JSON size, message)

    def __len__(self) -> int:
        return len(self._kept)

    async def encoded(self, items: Iterable[tuple[Any, int, bytes]]) -> list[bytes]:
        """The message of each (key, revision, stored JSON) item, in order. The objects not kept are
        encoded together, in a worker thread when they are many (`sized_off_loop`)."""
        kept = self._kept
        out: list[bytes] = []
        missing: list[tuple[int, Any, int, bytes]] = []
        for key, revision, raw in items:
            entry = kept.get(key)
            if entry is None or entry[0] != revision or entry[1] != len(raw):
                missing.append((len(out), key, revision, raw))
                out.append(b"")
            else:
                out.append(entry[2])
        if not missing:
            return out
        messages = await sized_off_loop(functools.partial(_encode_stored, [m[3] for m in missing]),
                                        size=sum(len(m[3]) for m in missing))
        for (at, key, revision, raw), message in zip(missing, messages, strict=True):
            out[at] = message
            entry = kept.pop(key, None)  # re-inserted last: the newest stays longest
            if entry is not None:
                self.size -= len(entry[2])
            kept[key] = (revision, len(raw), message)
            self.size += len(message)
        while self.size > self.max_bytes and kept:
            oldest = next(iter(kept))
            self.size -= len(kept.pop(oldest)[2])
        return out


def _encode_stored(raws: list[bytes]) -> list[bytes]:
    """The protobuf messages of stored objects (their own apiVersion and kind)."""
    from cp import protobuf

    out = []
    for raw in raws:
        obj = decoder.decode(raw)
        out.append(protobuf.encode_raw(obj, api_version=str(obj.get("apiVersion", "")),
                                       kind=str(obj.get("kind", ""))))
    return out


def yaml_bytes(obj: Any) -> bytes:
    """YAML as kube-apiserver writes it (sigs.k8s.io/yaml over go-yaml): keys sorted, block style, no
    line folding."""
    import yaml

    text: str = yaml.dump(obj, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=True,
                          default_flow_style=False, allow_unicode=True, width=1 << 30)
    return text.encode()


def success_status(*, name: str, group: str, kind: str, uid: str) -> bytes:
    """The `Success` Status of a delete that removed the object (upstream's `finalizeDelete`)."""
    details = errors.go_details({"name": name, "group": group, "kind": kind, "uid": uid})
    return status_body({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                        "details": details})


_TRUE = {"1", "t", "T", "TRUE", "true", "True"}
_FALSE = {"0", "f", "F", "FALSE", "false", "False"}


def parse_bool(name: str, value: str | None) -> bool | None:
    """Go's strconv.ParseBool, as kube-apiserver parses query booleans (`watch=True` works)."""
    if value is None:
        return None
    if value in _TRUE:
        return True
    if value in _FALSE or value == "":
        return False
    raise errors.BadRequest(f'invalid value for {name}: "{value}": must be a boolean')
