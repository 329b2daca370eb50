"""Hostile request bodies (issue #17): small bodies that decode or patch into something huge.

Each is answered at once with a Status (before: 7 to 20 s of a blocked event loop and 1 to 2.6 GB), leaves
the store as it was, and leaves the server answering; the bounds live in the decoders (`cp.bodies`,
`cp.protobuf`, `cp.patching`), so they hold on a server without limits too.
"""

from __future__ import annotations

import asyncio
import gzip
import json
from typing import Any

import aiohttp

from api import server as servers
from tests.api.security.conftest import Secure, call
from tests.cp.test_bodies import bomb
from tests.cp.test_protobuf import envelope, f, meta

CM = "/api/v1/namespaces/default/configmaps"
ROLES = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles"
YAML = "application/yaml"
APPLY = "application/apply-patch+yaml"
JSON_PATCH = "application/json-patch+json"
PROTOBUF = "application/vnd.kubernetes.protobuf"
WITHIN = 3.0  # seconds a hostile request may take, all told


async def answered(session: aiohttp.ClientSession, method: str, path: str, body: Any,
                   content_type: str | None = None, **kw: Any) -> tuple[int, Any]:
    """`call`, failing the test unless the server answers within `WITHIN` seconds."""
    async with asyncio.timeout(WITHIN):
        return await call(session, method, path, body, content_type, **kw)


def status(code: int, reason: str, message: str, **more: Any) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code, **more}


async def still_serving(session: aiohttp.ClientSession) -> None:
    assert (await answered(session, "GET", "/readyz", None))[0] == 200


def doubling_copies(count: int) -> list[dict[str, Any]]:
    return [{"op": "add", "path": "/metadata/annotations", "value": {}},
            {"op": "add", "path": "/metadata/annotations/x", "value": ["y" * 100]}] + [
        {"op": "copy", "from": "/metadata/annotations/x", "path": "/metadata/annotations/x/-"}] * count


async def test_yaml_alias_bomb_is_refused_before_it_expands(secure: Secure) -> None:
    admin = secure.session("admin")
    revision = secure.srv.event_log.revision
    code, body = await answered(admin, "POST", CM, bomb(9), YAML)
    assert (code, body) == (400, status(400, "BadRequest", "couldn't get version/kind; yaml parse error: "
                                        "yaml: document contains excessive aliasing"))
    code, body = await answered(admin, "PATCH", f"{CM}/bomb?fieldManager=attacker", bomb(8), APPLY)
    assert (code, body) == (400, status(400, "BadRequest",
                                        "error decoding YAML: yaml: document contains excessive aliasing"))
    await still_serving(admin)
    assert (await call(admin, "GET", f"{CM}/bomb"))[0] == 404
    assert secure.srv.event_log.revision == revision


async def test_recursive_yaml_alias_is_400(secure: Secure) -> None:
    admin = secure.session("admin")
    revision = secure.srv.event_log.revision
    loop = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: loop}\nextra: &me {again: *me}\n"
    code, body = await answered(admin, "POST", CM, loop, YAML)
    assert (code, body) == (400, status(400, "BadRequest", "couldn't get version/kind; yaml parse error: "
                                        "yaml: anchor 'me' value contains itself"))
    code, body = await answered(admin, "PATCH", f"{CM}/loop?fieldManager=attacker", loop, APPLY)
    assert (code, body) == (400, status(400, "BadRequest", "error decoding YAML: yaml: anchor 'me' value contains "
                                                           "itself"))
    assert secure.srv.event_log.revision == revision


async def test_yaml_expanding_past_the_decoded_bound_is_413(secure: Secure) -> None:
    admin = secure.session("admin")
    revision = secure.srv.event_log.revision
    body = (b'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: wide}\ndata:\n  a: &v "' + b"x" * 1_000_000
            + b'"\n  b: *v\n  c: *v\n  d: *v\n')
    code, got = await answered(admin, "POST", CM, body, YAML)
    assert code == 413 and got["reason"] == "RequestEntityTooLarge"
    assert got["message"].startswith("Request entity too large: the YAML document expands to at least ")
    assert secure.srv.event_log.revision == revision


async def test_yaml_with_anchors_and_merge_keys_still_works(secure: Secure) -> None:
    admin = secure.session("admin")
    manifest = b"""\
apiVersion: v1
kind: ConfigMap
metadata:
  name: helm
  labels: &labels {app: web, chart: web-1.0}
  annotations: *labels
data:
  a: &text "shared"
  b: *text
"""
    code, created = await answered(admin, "POST", CM, manifest, YAML)
    assert code == 201, created
    assert created["metadata"]["labels"] == created["metadata"]["annotations"] == {"app": "web", "chart": "web-1.0"}
    assert created["data"] == {"a": "shared", "b": "shared"}
    applied = manifest.replace(b"name: helm", b"name: helm-applied")
    code, got = await answered(admin, "PATCH", f"{CM}/helm-applied?fieldManager=me", applied, APPLY)
    assert code == 201, got
    assert got["data"] == {"a": "shared", "b": "shared"}


async def test_json_patch_copy_amplification_is_422_and_changes_nothing(secure: Secure) -> None:
    admin = secure.session("admin")
    code, created = await call(admin, "POST", CM, {"metadata": {"name": "victim"}, "data": {"k": "v"}})
    assert code == 201
    revision = secure.srv.event_log.revision
    code, body = await answered(admin, "PATCH", f"{CM}/victim?dryRun=All", doubling_copies(23), JSON_PATCH)
    assert code == 422 and body["reason"] == "Invalid"
    assert body["message"] == "the server rejected our request due to an error in our request"
    [cause] = body["details"]["causes"]
    assert cause["message"].startswith("Unable to complete the copy, the accumulated size increase of copy is ")
    assert cause["message"].endswith(", exceeding the limit 3145728")
    await still_serving(admin)
    assert (await call(admin, "GET", f"{CM}/victim"))[1] == created
    assert secure.srv.event_log.revision == revision


async def test_a_patch_whose_result_is_too_large_is_413(secure: Secure) -> None:
    admin = secure.session("admin")
    # 900 KB stored (a ConfigMap's data may hold 1 MiB) and 2.3 MB patched in: 3.2 MB of object.
    created_body = {"metadata": {"name": "big"}, "data": {"a": "x" * (900 * 1024)}}
    code, created = await call(admin, "POST", CM, json.dumps(created_body).encode())
    assert code == 201
    revision = secure.srv.event_log.revision
    patch = {"data": {"b": "y" * (2300 * 1024)}}
    code, body = await answered(admin, "PATCH", f"{CM}/big", json.dumps(patch).encode(),
                                "application/merge-patch+json")
    assert code == 413 and body["reason"] == "RequestEntityTooLarge"
    assert body["message"].startswith("Request entity too large: the patched object is ")
    assert body["message"].endswith(" bytes, limit is 3145728")
    assert (await call(admin, "GET", f"{CM}/big"))[1] == created
    assert secure.srv.event_log.revision == revision


async def test_protobuf_amplification_is_413(secure: Secure) -> None:
    # 300,000 empty PolicyRules: 600 KB on the wire, 4.5 MB of JSON.
    admin = secure.session("admin")
    revision = secure.srv.event_log.revision
    body = envelope("rbac.authorization.k8s.io/v1", "Role", f(1, meta("r")) + f(2, b"") * 300_000)
    code, got = await answered(admin, "POST", ROLES, body, PROTOBUF)
    assert (code, got) == (413, status(413, "RequestEntityTooLarge", (
        "Request entity too large: the protobuf body for Role (rbac.authorization.k8s.io/v1) decodes to more "
        "than 3145728 bytes of JSON, limit is 3145728")))
    await still_serving(admin)
    assert secure.srv.event_log.revision == revision


async def test_compressed_bodies_are_not_inflated(secure: Secure) -> None:
    # kube-apiserver reads a body as sent; inflating this one would turn 70 KB into 16 MiB.
    admin = secure.session("admin")
    revision = secure.srv.event_log.revision
    inflated = b'{"metadata":{"name":"gz"},"data":{"k":"' + b"a" * (16 * 1024 * 1024) + b'"}}'
    bomb_body = gzip.compress(inflated, compresslevel=1)
    assert len(bomb_body) < 100 * 1024
    code, got = await answered(admin, "POST", CM, bomb_body, "application/json",
                               headers={"Content-Encoding": "gzip"})
    assert code == 400 and got["reason"] == "BadRequest"
    assert got["message"].startswith("couldn't get version/kind; json parse error: ")
    assert secure.srv.event_log.revision == revision


async def test_the_bounds_hold_on_a_server_without_limits(api_server: servers.Running,
                                                          http: aiohttp.ClientSession) -> None:
    revision = api_server.event_log.revision
    assert (await answered(http, "POST", CM, bomb(9), YAML))[0] == 400
    assert (await answered(http, "PATCH", f"{CM}/bomb?fieldManager=attacker", bomb(8), APPLY))[0] == 400
    body = envelope("rbac.authorization.k8s.io/v1", "Role", f(1, meta("r")) + f(2, b"") * 300_000)
    assert (await answered(http, "POST", ROLES, body, PROTOBUF))[0] == 413
    assert api_server.event_log.revision == revision
    assert (await call(http, "POST", CM, {"metadata": {"name": "victim"}}))[0] == 201
    assert (await answered(http, "PATCH", f"{CM}/victim", doubling_copies(23), JSON_PATCH))[0] == 422
    assert api_server.event_log.revision == revision + 1


def nested_yaml(items: int) -> bytes:
    """A valid ConfigMap whose YAML has many small nested values (slow for PyYAML to build)."""
    return ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: nested}\ndata: {k: v}\nextra:\n"
            + "".join(f"- {{a: {i}, b: [1, 2, 3], c: {{d: e}}}}\n" for i in range(items))).encode()


async def test_a_large_yaml_body_is_decoded_without_stopping_the_server(secure: Secure) -> None:
    """A YAML body PyYAML needs about a second for (as create and as server-side apply): the event
    loop the server runs on goes on turning meanwhile (measured by a task on that loop: the server is
    in-process), since large YAML is decoded in a worker thread."""
    admin = secure.session("admin")
    loop = asyncio.get_running_loop()
    for method, path, content_type in (("POST", CM, YAML), ("PATCH", f"{CM}/nested?fieldManager=m", APPLY)):
        request = asyncio.create_task(call(admin, method, path, nested_yaml(12_000), content_type))
        longest, turns = 0.0, 0
        started = last = loop.time()
        while not request.done():
            await asyncio.wait([request], timeout=0.005)
            now = loop.time()
            longest, last, turns = max(longest, now - last), now, turns + 1
        code, body = await request
        assert code in (200, 201), body
        assert body["data"] == {"k": "v"} and "extra" not in body  # unknown: dropped with a warning
        # Decoded on the loop, the request would take its whole time in one turn. Off the loop, the
        # loop turns all along: many turns, and no stop near the request's length (the machine may be
        # loaded, so a single stop of a few tenths of a second is the operating system's, not ours).
        took = last - started
        assert turns >= 20, f"the event loop turned {turns} times in {took:.3f} s while the body decoded"
        assert longest < max(0.1, took / 3), f"the event loop stopped for {longest:.3f} s of {took:.3f} s"
