"""Protobuf and content negotiation over HTTP: what client-go's typed clients (and Helm, and every Go
controller) get when they send `Accept: application/vnd.kubernetes.protobuf, application/json`, and what
kube-apiserver's negotiation answers for other Accept headers.

In scope: responses of every verb in protobuf (objects, lists, Status errors, Scale, watch frames),
protobuf request bodies, 406 NotAcceptable, YAML responses, the sandbox's own kinds refusing protobuf
as custom resources do. Out of scope: the wire format itself (tests/cp/test_protobuf.py), real Go
clients (tests/kubectl/test_protobuf.py).
"""

from __future__ import annotations

import asyncio
import json
import struct
from typing import Any

import aiohttp
import pytest
import yaml

from api import codec
from api import server as servers
from cp import errors, protobuf
from cp.protobuf import wire

PB = "application/vnd.kubernetes.protobuf"
TYPED = f"{PB},application/json"  # client-go's typed clients since 1.35
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
BUILTIN_TYPES = "application/json, application/yaml, application/vnd.kubernetes.protobuf"


def secret(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "labels": {"app": "db"}},
            "type": "Opaque", "data": {"password": "aHVudGVyMg=="}}


def deployment(name: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


def unwrap(body: bytes) -> tuple[str, str, bytes]:
    """(apiVersion, kind, raw message) of a protobuf body."""
    assert body.startswith(protobuf.MAGIC), body[:20]
    api_version, kind, start, end, encoding, content_type = wire.envelope(body)
    assert (encoding, content_type) == ("", "")
    return api_version, kind, body[start:end]


def read(body: bytes) -> dict[str, Any]:
    """A protobuf response body as the JSON Go would write for it."""
    return protobuf.decode(body)


async def created(http: aiohttp.ClientSession, path: str, obj: dict[str, Any]) -> dict[str, Any]:
    async with http.post(path, json=obj) as r:
        assert r.status == 201, await r.text()
        return json.loads(await r.read())


async def test_get_in_protobuf_is_the_object_json_clients_see(http: aiohttp.ClientSession) -> None:
    stored = await created(http, "/api/v1/namespaces/default/secrets", secret("db"))
    async with http.get("/api/v1/namespaces/default/secrets/db", headers={"Accept": TYPED}) as r:
        assert r.status == 200 and r.headers["Content-Type"] == PB
        body = await r.read()
    assert unwrap(body)[:2] == ("v1", "Secret")
    assert read(body) == stored
    # Without protobuf first, or without Accept, nothing changed: the stored JSON.
    for accept in ("application/json", "*/*", "", f"application/json,{PB}"):
        async with http.get("/api/v1/namespaces/default/secrets/db", headers={"Accept": accept}) as r:
            assert r.headers["Content-Type"] == "application/json", accept
            assert json.loads(await r.read()) == stored


async def test_list_in_protobuf_with_its_list_metadata(http: aiohttp.ClientSession) -> None:
    for name in ("a", "b", "c"):
        await created(http, "/apis/apps/v1/namespaces/default/deployments", deployment(name))
    async with http.get("/apis/apps/v1/namespaces/default/deployments", params={"limit": "2"}) as r:
        want = json.loads(await r.read())
    async with http.get("/apis/apps/v1/namespaces/default/deployments", params={"limit": "2"},
                        headers={"Accept": TYPED}) as r:
        assert r.status == 200 and r.headers["Content-Type"] == PB
        body = await r.read()
    assert unwrap(body)[:2] == ("apps/v1", "DeploymentList")
    got = read(body)
    assert got["metadata"]["resourceVersion"] == want["metadata"]["resourceVersion"]
    assert got["metadata"]["continue"] == want["metadata"]["continue"]
    assert [d["metadata"]["name"] for d in got["items"]] == ["a", "b"]
    assert [d["spec"]["replicas"] for d in got["items"]] == [2, 2]
    # A repeated list is served from the kept messages: the same bytes.
    async with http.get("/apis/apps/v1/namespaces/default/deployments", params={"limit": "2"},
                        headers={"Accept": TYPED}) as r:
        assert await r.read() == body


async def test_writes_answer_in_protobuf_and_read_protobuf_bodies(http: aiohttp.ClientSession) -> None:
    body = protobuf.encode(secret("s1"), api_version="v1", kind="Secret")
    async with http.post("/api/v1/namespaces/default/secrets", data=body,
                         headers={"Content-Type": PB, "Accept": TYPED}) as r:
        assert r.status == 201 and r.headers["Content-Type"] == PB
        made = read(await r.read())
    assert made["data"] == {"password": "aHVudGVyMg=="} and made["metadata"]["uid"]
    made["metadata"]["labels"]["tier"] = "gold"
    update = protobuf.encode(made, api_version="v1", kind="Secret")
    async with http.put("/api/v1/namespaces/default/secrets/s1", data=update,
                        headers={"Content-Type": PB, "Accept": TYPED}) as r:
        assert r.status == 200 and r.headers["Content-Type"] == PB
        assert read(await r.read())["metadata"]["labels"] == {"app": "db", "tier": "gold"}
    async with http.patch("/api/v1/namespaces/default/secrets/s1", json={"metadata": {"labels": {"app": None}}},
                          headers={"Content-Type": "application/merge-patch+json", "Accept": TYPED}) as r:
        assert r.status == 200 and read(await r.read())["metadata"]["labels"] == {"tier": "gold"}
    async with http.delete("/api/v1/namespaces/default/secrets/s1", headers={"Accept": TYPED}) as r:
        assert r.status == 200 and r.headers["Content-Type"] == PB
        body = await r.read()
    assert unwrap(body)[:2] == ("v1", "Status")
    assert read(body)["details"]["name"] == "s1" and read(body)["status"] == "Success"


async def test_scale_subresource_in_protobuf(http: aiohttp.ClientSession) -> None:
    await created(http, "/apis/apps/v1/namespaces/default/deployments", deployment("web"))
    path = "/apis/apps/v1/namespaces/default/deployments/web/scale"
    async with http.get(path, headers={"Accept": TYPED}) as r:
        body = await r.read()
    assert unwrap(body)[:2] == ("autoscaling/v1", "Scale")
    scale = read(body)
    assert scale["spec"] == {"replicas": 2} and scale["status"]["selector"] == "app=web"
    scale["spec"]["replicas"] = 5
    async with http.put(path, data=protobuf.encode(scale, api_version="autoscaling/v1", kind="Scale"),
                        headers={"Content-Type": PB, "Accept": TYPED}) as r:
        assert r.status == 200, await r.text()
        assert read(await r.read())["spec"] == {"replicas": 5}


async def test_errors_are_protobuf_statuses_when_protobuf_is_accepted(http: aiohttp.ClientSession) -> None:
    async with http.get("/api/v1/namespaces/default/secrets/missing", headers={"Accept": TYPED}) as r:
        assert r.status == 404 and r.headers["Content-Type"] == PB
        body = await r.read()
    assert unwrap(body)[:2] == ("v1", "Status")
    assert read(body) == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                          "message": 'secrets "missing" not found', "reason": "NotFound",
                          "details": {"name": "missing", "kind": "secrets"}, "code": 404}
    # Error bodies never convert: a Table-only Accept gets its error as JSON.
    async with http.get("/api/v1/namespaces/default/secrets/missing",
                        headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}) as r:
        assert r.status == 404 and r.headers["Content-Type"] == "application/json"
        assert json.loads(await r.read())["reason"] == "NotFound"


async def test_nothing_acceptable_is_406(http: aiohttp.ClientSession) -> None:
    async with http.get("/api/v1/namespaces/default/secrets", headers={"Accept": "text/html"}) as r:
        assert r.status == 406 and r.headers["Content-Type"] == "application/json"
        status = json.loads(await r.read())
    assert status["reason"] == "NotAcceptable" and status["code"] == 406
    assert status["message"] == f"only the following media types are accepted: {BUILTIN_TYPES}"
    # A Table only in protobuf: Tables are JSON or YAML.
    async with http.get("/api/v1/namespaces/default/secrets",
                        headers={"Accept": f"{PB};as=Table;v=v1;g=meta.k8s.io"}) as r:
        assert r.status == 406
    # ...but later clauses are tried: the Table as JSON.
    async with http.get("/api/v1/namespaces/default/secrets",
                        headers={"Accept": f"{PB};as=Table;v=v1;g=meta.k8s.io,{TABLE}"}) as r:
        assert r.status == 200 and json.loads(await r.read())["kind"] == "Table"
    # 406 comes before the write: nothing is created.
    async with http.post("/api/v1/namespaces/default/secrets", json=secret("never"),
                         headers={"Accept": "text/plain"}) as r:
        assert r.status == 406
    async with http.get("/api/v1/namespaces/default/secrets/never") as r:
        assert r.status == 404


async def test_watch_negotiation(http: aiohttp.ClientSession) -> None:
    params = {"watch": "true", "timeoutSeconds": "1"}
    async with http.get("/api/v1/namespaces/default/secrets", params=params,
                        headers={"Accept": "application/yaml"}) as r:  # YAML does not stream
        assert r.status == 406 and r.headers["Content-Type"] == "application/yaml"  # the error itself is YAML
        assert yaml.safe_load(await r.read())["message"] == (
            "only the following media types are accepted: application/json;stream=watch, "
            "application/vnd.kubernetes.protobuf;stream=watch")
    async with http.get("/api/v1/namespaces/default/secrets", params=params,
                        headers={"Accept": "application/json;stream=watch"}) as r:
        assert r.status == 200 and r.headers["Content-Type"] == "application/json"


async def frame(resp: aiohttp.ClientResponse) -> tuple[str, dict[str, Any]]:
    """One frame of a protobuf watch (a 4-byte big-endian length, then a WatchEvent {1: type,
    2: RawExtension {1: a whole protobuf body}}): (type, the object as JSON)."""
    size = struct.unpack(">I", await asyncio.wait_for(resp.content.readexactly(4), 5))[0]
    event = await asyncio.wait_for(resp.content.readexactly(size), 5)
    type_, raw = "", b""
    pos = 0
    while pos < len(event):
        number, _, value, pos = wire.read_field(event, pos, len(event))
        if number == 1:
            type_ = event[value:pos].decode()
        elif number == 2:
            extension = event[value:pos]
            inner = 0
            while inner < len(extension):
                field, _, start, inner = wire.read_field(extension, inner, len(extension))
                if field == 1:
                    raw = extension[start:inner]
    return type_, read(raw)


async def test_watch_in_protobuf_frames(http: aiohttp.ClientSession) -> None:
    await created(http, "/api/v1/namespaces/default/secrets", secret("first"))
    params = {"watch": "true", "sendInitialEvents": "true", "resourceVersionMatch": "NotOlderThan",
              "allowWatchBookmarks": "true"}
    async with http.get("/api/v1/namespaces/default/secrets", params=params, headers={"Accept": TYPED}) as r:
        assert r.status == 200 and r.headers["Content-Type"] == f"{PB};stream=watch"
        kind, obj = await frame(r)
        assert kind == "ADDED" and obj["metadata"]["name"] == "first" and obj["kind"] == "Secret"
        kind, obj = await frame(r)
        assert kind == "BOOKMARK"
        assert obj["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
        await created(http, "/api/v1/namespaces/default/secrets", secret("second"))
        kind, obj = await frame(r)
        assert kind == "ADDED" and obj["metadata"]["name"] == "second"
        assert obj["data"] == {"password": "aHVudGVyMg=="}
        async with http.delete("/api/v1/namespaces/default/secrets/first"):
            pass
        kind, obj = await frame(r)
        assert kind == "DELETED" and obj["metadata"]["name"] == "first"


async def test_expired_watch_is_a_protobuf_error_frame(api_server: servers.Running,
                                                       http: aiohttp.ClientSession) -> None:
    first = await created(http, "/api/v1/namespaces/default/secrets", secret("old"))
    last = await created(http, "/api/v1/namespaces/default/secrets", secret("new"))
    await api_server.event_log.compact(int(last["metadata"]["resourceVersion"]))
    assert first["metadata"]["resourceVersion"] < last["metadata"]["resourceVersion"]
    async with http.get("/api/v1/namespaces/default/secrets", headers={"Accept": TYPED},
                        params={"watch": "true", "resourceVersion": "1"}) as r:
        kind, status = await frame(r)
    assert kind == "ERROR"
    assert status["kind"] == "Status" and status["code"] == 410 and status["reason"] == "Expired"


async def test_yaml_responses(http: aiohttp.ClientSession) -> None:
    stored = await created(http, "/api/v1/namespaces/default/secrets", secret("y"))
    async with http.get("/api/v1/namespaces/default/secrets/y", headers={"Accept": "application/yaml"}) as r:
        assert r.status == 200 and r.headers["Content-Type"] == "application/yaml"
        text = (await r.read()).decode()
    assert yaml.safe_load(text) == stored
    assert text.startswith("apiVersion: v1\ndata:\n  password: aHVudGVyMg==\nkind: Secret\n")  # sorted keys


async def test_sandbox_kinds_have_no_protobuf_like_custom_resources(http: aiohttp.ClientSession) -> None:
    path = "/apis/sim.cplane.dev/v1alpha1/externalmetrics"
    async with http.get(path, headers={"Accept": TYPED}) as r:  # falls back to JSON
        assert r.status == 200 and r.headers["Content-Type"] == "application/json"
    async with http.get(path, headers={"Accept": PB}) as r:
        # Upstream lists its serializer's types and writes the error itself in protobuf, as accepted.
        assert r.status == 406 and r.headers["Content-Type"] == PB
        assert read(await r.read())["message"] == f"only the following media types are accepted: {BUILTIN_TYPES}"
    body = protobuf.wrap(b"", api_version="sim.cplane.dev/v1alpha1", kind="ExternalMetric")
    async with http.post("/apis/sim.cplane.dev/v1alpha1/namespaces/default/externalmetrics", data=body,
                         headers={"Content-Type": PB}) as r:
        assert r.status == 400
        assert json.loads(await r.read())["message"] == (
            'ExternalMetric in version "v1alpha1" cannot be handled as a ExternalMetric: object '
            "*unstructured.Unstructured does not implement the protobuf marshalling interface and cannot be "
            "encoded to a protobuf message")


@pytest.mark.parametrize(("accept", "media_type", "convert", "version"), [
    ("", "application/json", "", ""),
    ("*/*", "application/json", "", ""),
    ("*", "application/json", "", ""),  # goautoneg reads a bare * as */*
    ("application/*", "application/json", "", ""),
    (TYPED, PB, "", ""),
    (f"application/json;q=0.5,{PB}", PB, "", ""),  # q orders the clauses
    (f"*/*;q=0.8,{PB};q=0.9", PB, "", ""),
    (f"*/*,{PB}", PB, "", ""),  # equal q: wildcards last
    ("application/yaml,application/json", "application/yaml", "", ""),
    ("text/html,application/json;q=0.1", "application/json", "", ""),
    ("application/json;as=Table;v=v1beta1;g=meta.k8s.io", "application/json", "Table", "v1beta1"),
    ("application/yaml;as=Table;v=v1;g=meta.k8s.io", "application/yaml", "Table", "v1"),
    ("application/json;as=Table;v=v2;g=meta.k8s.io,application/json", "application/json", "", ""),
    ("application/json;as=Table;g=other.io;v=v1,application/json", "application/json", "", ""),
    # client-go's metadata client: protobuf first, then JSON.
    (f"{PB};as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json", PB, "PartialObjectMetadataList",
     "v1"),
    ("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1", "application/json",
     "PartialObjectMetadata", "v1beta1"),
    (f"{PB};as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1,application/json", "application/json", "", ""),
    ("application/json;sv=v2,application/yaml", "application/yaml", "", ""),
    ("application/json;stream=other,application/yaml", "application/yaml", "", ""),
    ("application/json;pretty=1;charset=utf-8", "application/json", "", ""),
    ("nonsense,application/json", "application/json", "", ""),
])
def test_negotiate(accept: str, media_type: str, convert: str, version: str) -> None:
    assert codec.negotiate(accept) == codec.Negotiated(media_type, convert, version)


def test_negotiate_refusals() -> None:
    with pytest.raises(errors.NotAcceptable) as e:
        codec.negotiate("text/html")
    assert e.value.message == f"only the following media types are accepted: {BUILTIN_TYPES}"
    with pytest.raises(errors.NotAcceptable):
        codec.negotiate(PB, protobuf=False)
    assert codec.negotiate(TYPED, protobuf=False) == codec.Negotiated("application/json")
    # Metadata of the sandbox's kinds in protobuf: PartialObjectMetadata is a built-in type.
    assert codec.negotiate(f"{PB};as=PartialObjectMetadata;g=meta.k8s.io;v=v1", protobuf=False) == \
        codec.Negotiated(PB, "PartialObjectMetadata", "v1")
    with pytest.raises(errors.NotAcceptable):  # YAML has no stream serializer
        codec.negotiate("application/yaml,application/json", stream=True)
    with pytest.raises(errors.NotAcceptable):  # errors never convert (DefaultEndpointRestrictions)
        codec.negotiate("application/json;as=Table;v=v1;g=meta.k8s.io", transforms=False)


async def test_protobuf_items_are_kept_per_revision_within_a_byte_bound() -> None:
    items = codec.ProtobufItems(max_bytes=400)
    one = json.dumps(secret("a")).encode()
    first = await items.encoded([(("", "secrets", "default", "a"), 5, one)])
    assert protobuf.decode(protobuf.wrap(first[0], api_version="v1", kind="Secret"))["data"] == {
        "password": "aHVudGVyMg=="}
    again = await items.encoded([(("", "secrets", "default", "a"), 5, one)])
    assert again[0] is first[0]  # kept
    changed = json.dumps({**secret("a"), "data": {"password": "Yg=="}}).encode()
    newer = await items.encoded([(("", "secrets", "default", "a"), 6, changed)])
    assert newer[0] != first[0]  # a new revision is encoded again
    many = [(("", "secrets", "default", f"s{i}"), i, json.dumps(secret(f"s{i}")).encode()) for i in range(20)]
    assert len(await items.encoded(many)) == 20
    assert items.size <= 400 and len(items) < 20  # the oldest were dropped


METADATA = "as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
METADATA_LIST = "as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"


async def test_metadata_only_reads_as_client_go_metadata_informers_ask(http: aiohttp.ClientSession) -> None:
    stored = await created(http, "/api/v1/namespaces/default/secrets", secret("meta"))
    async with http.get("/api/v1/namespaces/default/secrets/meta",
                        headers={"Accept": f"{PB};{METADATA},application/json;{METADATA},application/json"}) as r:
        assert r.status == 200 and r.headers["Content-Type"] == PB
        body = await r.read()
    assert unwrap(body)[:2] == ("meta.k8s.io/v1", "PartialObjectMetadata")
    assert read(body) == {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                          "metadata": stored["metadata"]}
    async with http.get("/api/v1/namespaces/default/secrets",
                        headers={"Accept": f"application/json;{METADATA_LIST},application/json"}) as r:
        listed = json.loads(await r.read())
    assert listed["kind"] == "PartialObjectMetadataList" and listed["apiVersion"] == "meta.k8s.io/v1"
    assert listed["items"] == [{"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                                "metadata": stored["metadata"]}]
    assert listed["metadata"]["resourceVersion"]
    async with http.get("/api/v1/namespaces/default/secrets", headers={"Accept": f"{PB};{METADATA_LIST}"}) as r:
        got = read(await r.read())
    assert got["kind"] == "PartialObjectMetadataList" and got["items"][0]["metadata"]["name"] == "meta"
    # A list asked for as one object (or the reverse) is 406, as upstream.
    async with http.get("/api/v1/namespaces/default/secrets", headers={"Accept": f"application/json;{METADATA}"}) as r:
        assert r.status == 406
        assert json.loads(await r.read())["message"] == (
            "you requested PartialObjectMetadata, but the requested object is a list (*core.SecretList)")
    async with http.get("/api/v1/namespaces/default/secrets",
                        params={"watch": "true", "sendInitialEvents": "true", "allowWatchBookmarks": "true",
                                "resourceVersionMatch": "NotOlderThan"},
                        headers={"Accept": f"{PB};{METADATA},application/json"}) as r:
        kind, obj = await frame(r)
        assert kind == "ADDED" and obj == {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                                           "metadata": stored["metadata"]}
        kind, obj = await frame(r)
        assert kind == "BOOKMARK" and obj["kind"] == "PartialObjectMetadata"
