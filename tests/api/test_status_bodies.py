"""Status bodies byte for byte as kube-apiserver writes them: Go's field order (`kind, apiVersion,
metadata, status, message, reason, details, code`), `details` present exactly when upstream's error
constructor sets it (`"details":{}` for the unknown-path 404), Go's HTML escapes, and the newline
its `json.Encoder` ends every body with.

In scope: every place a Status is encoded (the middleware's errors, delete and binding successes, a
watch's in-stream ERROR, the connection-level answers). Out of scope: which error a request gets
(test_api_crud.py and the security tests).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiohttp

from api import server as servers
from api.limits import Limits
from tests.api.serving import limited_server

NOT_FOUND_PATH = (b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
                  b'"message":"the server could not find the requested resource","reason":"NotFound",'
                  b'"details":{},"code":404}\n')


async def test_unknown_path_is_upstreams_404_body(http: aiohttp.ClientSession) -> None:
    async with http.get("/api/v1/nosuch") as r:
        assert r.status == 404 and r.content_type == "application/json"
        assert await r.read() == NOT_FOUND_PATH
    async with http.get("/no/such/path") as r:
        assert await r.read() == NOT_FOUND_PATH


async def test_missing_object_details_in_go_order(http: aiohttp.ClientSession) -> None:
    async with http.get("/apis/apps/v1/namespaces/default/deployments/web") as r:
        assert await r.read() == (
            b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
            b'"message":"deployments.apps \\"web\\" not found","reason":"NotFound",'
            b'"details":{"name":"web","group":"apps","kind":"deployments"},"code":404}\n')


async def test_html_characters_are_escaped_as_go_does(http: aiohttp.ClientSession) -> None:
    async with http.get("/api/v1/namespaces/default/configmaps/a%3Cb%3E%26c") as r:
        body = await r.read()
    assert r.status == 404
    assert b'"message":"configmaps \\"a\\u003cb\\u003e\\u0026c\\" not found"' in body
    assert b"<" not in body and b"&" not in body
    assert json.loads(body)["details"]["name"] == "a<b>&c"


async def test_invalid_causes_in_go_order(http: aiohttp.ClientSession) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Bad_Name"}}
    async with http.post("/api/v1/namespaces/default/configmaps", json=cm) as r:
        body = await r.read()
    assert r.status == 422 and body.endswith(b"}\n") and body.count(b"\n") == 1
    assert body.startswith(b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":')
    assert b'"reason":"Invalid","details":{"name":"Bad_Name","kind":"ConfigMap","causes":[{"reason":' \
           b'"FieldValueInvalid","message":' in body
    assert body.endswith(b'"field":"metadata.name"}]},"code":422}\n')


async def test_delete_and_binding_successes(http: aiohttp.ClientSession) -> None:
    async with http.post("/api/v1/namespaces/default/configmaps", json={"metadata": {"name": "c"}}) as r:
        uid = (await r.json())["metadata"]["uid"]
    async with http.delete("/api/v1/namespaces/default/configmaps/c") as r:
        assert await r.read() == (b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success",'
                                  b'"details":{"name":"c","kind":"configmaps","uid":"' + uid.encode()
                                  + b'"}}\n')
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    async with http.post("/api/v1/namespaces/default/pods", json=pod) as r:
        assert r.status == 201
    binding = {"metadata": {"name": "p"}, "target": {"kind": "Node", "name": "n1"}}
    async with http.post("/api/v1/namespaces/default/pods/p/binding", json=binding) as r:
        assert r.status == 201
        assert await r.read() == b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201}\n'


async def test_watch_error_event_is_one_line(api_server: servers.Running, http: aiohttp.ClientSession) -> None:
    for name in ("a", "b"):
        async with http.post("/api/v1/namespaces/default/configmaps", json={"metadata": {"name": name}}) as r:
            rv = int((await r.json())["metadata"]["resourceVersion"])
    await api_server.event_log.compact(rv)
    async with http.get("/api/v1/namespaces/default/configmaps",
                        params={"watch": "true", "resourceVersion": "1"}) as r:
        line = await asyncio.wait_for(r.content.readline(), 5)
    # The embedded Status is compacted into the event (no newline of its own), as Go's encoder does.
    assert line.startswith(b'{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},'
                           b'"status":"Failure","message":"too old resource version: 1 (')
    assert line.endswith(b'"reason":"Expired","code":410}}\n')


async def test_connection_level_answers(tmp_path: Path) -> None:
    async with limited_server(tmp_path, Limits()) as srv:
        reader, writer = await asyncio.open_connection("127.0.0.1", srv.port)
        writer.write(b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
        head, _, rest = (await asyncio.wait_for(reader.read(), 5)).partition(b"\r\n\r\n")
        writer.close()
    assert b" 414 " in head.split(b"\r\n")[0]
    assert rest == (b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
                    b'"message":"the request URI is too long (more than 8192 bytes)",'
                    b'"reason":"RequestURITooLong","code":414}\n')


async def test_every_not_found_carries_details(http: aiohttp.ClientSession) -> None:
    """Issue #23: kubectl dereferences `details` of a 404 (`kubectl debug` reads `details.name` after
    a PATCH of pods/ephemeralcontainers), so every 404 has it: a missing object names itself and its
    resource, an unknown path or subresource has `"details":{}`; in JSON and in protobuf."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    async with http.post("/api/v1/namespaces/default/pods", json=pod) as r:
        assert r.status == 201
    named = {"/api/v1/namespaces/default/pods/nosuch": {"name": "nosuch", "kind": "pods"},
             "/api/v1/namespaces/default/pods/nosuch/ephemeralcontainers": {"name": "nosuch", "kind": "pods"},
             "/api/v1/namespaces/default/pods/nosuch/status": {"name": "nosuch", "kind": "pods"},
             "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/x/status":
                 {"name": "x", "group": "resource.k8s.io", "kind": "resourceclaims"},
             "/api/v1/namespaces/nosuch": {"name": "nosuch", "kind": "namespaces"}}
    unnamed = ["/api/v1/namespaces/default/pods/p/nosuch", "/api/v1/nosuch", "/apis/nosuch.io/v1/foos",
               "/nosuch", "/openapi/v3/apis/nosuch.io/v1"]
    for path, details in [*named.items(), *((p, {}) for p in unnamed)]:
        for method in ("GET", "PATCH"):
            async with http.request(method, path, data=b"{}",
                                    headers={"Content-Type": "application/strategic-merge-patch+json"}) as r:
                body = await r.read()
            if r.status == 405:
                continue
            assert r.status == 404, (method, path, body)
            assert json.loads(body)["details"] == details, (method, path, body)
        async with http.get(path, headers={"Accept": "application/vnd.kubernetes.protobuf"}) as r:
            raw = await r.read()
        assert r.status == 404 and raw.startswith(b"k8s\x00"), (path, raw)
        # metav1.Status field 5 (details) is present, even when empty
        assert b'"\x08NotFound*' in raw, (path, raw)


def test_a_status_built_by_hand_gets_details_for_reasons_that_always_have_them() -> None:
    from cp import errors

    hand = errors.StatusError("nope")
    hand.code, hand.reason = 404, "NotFound"
    assert hand.status()["details"] == {}
    other = errors.StatusError("slow down")
    other.code, other.reason = 429, "TooManyRequests"
    assert "details" not in other.status()
