"""Request decoding and response encoding: content types, Accept negotiation, Status bodies.

Reused msgspec encoders/decoders; responses for stored objects are the stored bytes as they are.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any, TypeVar

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


def wants_table(accept: str) -> bool:
    """Accept asks for a meta.k8s.io Table (v1 or v1beta1) — `kubectl get`'s human output."""
    if "as=Table" not in accept:
        return False
    for part in accept.split(","):
        params = {p.split("=", 1)[0].strip(): p.split("=", 1)[1].strip()
                  for p in part.split(";")[1:] if "=" in p}
        if params.get("as") == "Table" and params.get("g") == "meta.k8s.io" and \
                params.get("v") in ("v1", "v1beta1"):
            return True
    return False


async def read_body(request: web.Request) -> bytes:
    """The request body, at most MAX_BODY bytes (413 beyond), read once."""
    read_ahead: bytes | None = request.get(BODY)
    if read_ahead is not None:
        return read_ahead
    if request.content_length is not None and request.content_length > MAX_BODY:
        raise errors.RequestEntityTooLarge("the server has received too large of a request body")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.content.iter_chunked(65536):
        size += len(chunk)
        if size > MAX_BODY:
            raise errors.RequestEntityTooLarge("the server has received too large of a request body")
        chunks.append(chunk)
    return b"".join(chunks)




async def off_loop(decode: Callable[[bytes], _T], body: bytes) -> _T:
    """`decode(body)`, in a worker thread when the body is large: PyYAML builds a 3 MiB document in
    seconds, and the event loop must keep serving everyone else meanwhile (it shares the GIL with the
    thread, so it slows down instead of stopping)."""
    if len(body) <= bodies.LARGE_BYTES:
        return decode(body)

    def decoding() -> _T:
        # Without the cyclic collector meanwhile: its collections run in the allocating thread with the
        # GIL held, and the decode's thousands of new objects made them 50-180 ms stops of the event loop
        # (decoded bodies hold no cycles; collections resume after).
        with collector.paused():
            return decode(body)

    return await asyncio.to_thread(decoding)


async def decode_body(body: bytes, content_type: str) -> dict[str, Any]:
    """`decode_object`, off the event loop for a large YAML or protobuf body (JSON decodes at C speed)."""
    if content_type in (JSON, "*/*"):
        return decode_object(body, content_type)
    return await off_loop(functools.partial(decode_object, content_type=content_type), body)


def decode_object(body: bytes, content_type: str) -> dict[str, Any]:
    """Decode a create/update body: JSON (or no Content-Type), YAML, or Kubernetes protobuf.

    What a body decodes to is bounded (`cp.bodies`): JSON cannot expand past its raw size, and the YAML
    and protobuf decoders refuse (413, or 400 for YAML aliasing) before building anything larger."""
    if content_type == PROTOBUF:
        from cp import protobuf

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
            f'the body of the request was in an unknown format - accepted media types include: '
            f'{JSON}, {YAML}, {PROTOBUF}')
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
