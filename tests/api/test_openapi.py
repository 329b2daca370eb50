"""`/openapi/v2` and `/openapi/v3` over HTTP, as kube-openapi's handlers answer: content negotiation
(JSON, gnostic protobuf in both spellings client-go and kube-openapi use, 406 otherwise), ETags shared
by both v2 forms, conditional GETs answered 304, gzip when accepted.

Out of scope: the documents' contents (tests/cp/test_openapi*.py) and real clients reading them
(tests/kubectl/test_openapi.py).
"""

from __future__ import annotations

import gzip
import json
from typing import Any

import aiohttp

PB_CLIENT_GO = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
PB = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def _fields(buf: bytes) -> list[tuple[int, Any]]:
    """A protobuf message's top-level fields as (number, value); length-delimited values as bytes."""
    out: list[tuple[int, Any]] = []
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 2:
            size, pos = _varint(buf, pos)
            value, pos = buf[pos:pos + size], pos + size
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        else:
            raise AssertionError(f"unexpected wire type {wire}")
        out.append((number, value))
    return out


async def _get(http: aiohttp.ClientSession, path: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
    headers.setdefault("Accept-Encoding", "identity")  # aiohttp asks for gzip by default
    async with http.get(path, headers=headers, auto_decompress=False) as r:
        return r.status, dict(r.headers), await r.read()


async def test_v2_json_and_protobuf_describe_the_same_document(http: aiohttp.ClientSession) -> None:
    code, headers, body = await _get(http, "/openapi/v2", Accept="application/json")
    assert code == 200 and headers["Content-Type"] == "application/json"
    doc = json.loads(body)
    assert doc["swagger"] == "2.0" and "io.k8s.api.core.v1.Pod" in doc["definitions"]
    etag = headers["Etag"]
    assert len(etag) == 130 and etag.startswith('"') and "Accept" in headers["Vary"]

    code, headers, pb = await _get(http, "/openapi/v2", Accept=PB_CLIENT_GO)
    assert code == 200 and headers["Content-Type"] == PB and headers["Etag"] == etag
    fields = _fields(pb)
    assert (1, b"2.0") in fields  # Document.swagger
    paths = _fields(next(v for n, v in fields if n == 8))  # Document.paths -> NamedPathItem entries (2)
    names = {_fields(v)[0][1].decode() for n, v in paths if n == 2}
    assert names == set(doc["paths"])
    definitions = _fields(next(v for n, v in fields if n == 9))
    assert len(definitions) == len(doc["definitions"])

    code, headers, _ = await _get(http, "/openapi/v2", Accept=PB)  # kube-openapi's own spelling
    assert code == 200 and headers["Content-Type"] == PB


async def test_v2_negotiation(http: aiohttp.ClientSession) -> None:
    async with http.get("/openapi/v2", headers={"Accept": "text/html"}) as r:
        assert r.status == 406 and await r.read() == b""
    for accept, expected in (("", "application/json"), ("*/*", "application/json"),
                             (f"application/json;q=0.5, {PB_CLIENT_GO}", PB),
                             ("text/plain, application/*", "application/json")):
        async with http.get("/openapi/v2", headers={"Accept": accept}) as r:
            assert (r.status, r.headers["Content-Type"]) == (200, expected), accept


async def test_v2_conditional_gets_and_gzip(http: aiohttp.ClientSession) -> None:
    _, headers, body = await _get(http, "/openapi/v2", Accept=PB_CLIENT_GO)
    etag, modified = headers["Etag"], headers["Last-Modified"]
    for extra in ({"If-None-Match": etag}, {"If-None-Match": f'"other", W/{etag}'}, {"If-None-Match": "*"},
                  {"If-Modified-Since": modified}):
        code, got, again = await _get(http, "/openapi/v2", Accept=PB_CLIENT_GO, **extra)
        assert (code, again, got["Etag"]) == (304, b"", etag), extra
    code, _, again = await _get(http, "/openapi/v2", Accept=PB_CLIENT_GO, **{"If-None-Match": '"other"'})
    assert code == 200 and again == body
    code, headers, packed = await _get(http, "/openapi/v2", Accept=PB_CLIENT_GO, **{"Accept-Encoding": "gzip"})
    assert code == 200 and headers["Content-Encoding"] == "gzip" and gzip.decompress(packed) == body
    assert len(packed) < len(body) / 4


async def test_v3_documents_answer_conditional_gets(http: aiohttp.ClientSession) -> None:
    async with http.get("/openapi/v3") as r:
        url = (await r.json())["paths"]["apis/apps/v1"]["serverRelativeURL"]
    code, headers, _ = await _get(http, url)
    assert code == 200 and headers["Cache-Control"] == "public, immutable"
    assert headers["Etag"] == f'"{url.split("hash=")[1]}"'
    code, _, again = await _get(http, url, **{"If-None-Match": headers["Etag"]})
    assert (code, again) == (304, b"")
    async with http.get("/openapi/v3/apis/nope/v1") as r:
        assert r.status == 404 and (await r.json())["reason"] == "NotFound"
