"""Limits: in-flight requests and watches per user (429 + Retry-After), request timeouts (504),
body size (413), nesting depth (400) and object size (413) — each a Status, each leaving the store
as it was."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import aiohttp
import pytest

from api import auth
from api import limits as auth_limits
from tests.api.security.conftest import Secure, binding, call, secure_server
from tests.waiting import eventually

CM = "/api/v1/namespaces/default/configmaps"
FUTURE = "/api/v1/namespaces/default/configmaps/x?resourceVersion=999999"  # waits ~3 s, then 504


def nested(depth: int) -> bytes:
    return b'{"metadata":{"name":"deep"},"data":' + b'{"a":' * depth + b"1" + b"}" * depth + b"}"


async def test_inflight_limit_is_429_with_retry_after(tmp_path: Path) -> None:
    """Without a queue (queue_length=0), a request that finds every seat taken is refused at once."""
    async with secure_server(tmp_path, limits=auth.Limits(max_inflight=1, max_mutating_inflight=1,
                                                          queue_length=0)) as s:
        admin = s.session("admin")
        slow = asyncio.create_task(call(admin, "GET", FUTURE))
        await eventually(lambda: s.config.inflight == 1, what="the slow request in flight")
        async with admin.get(CM) as r:
            assert r.status == 429
            assert r.headers["Retry-After"] == "1"
            body = await r.json()
        assert body == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                        "message": "Too many requests, please try again later.", "reason": "TooManyRequests",
                        "code": 429, "details": {"retryAfterSeconds": 1}}
        assert (await call(admin, "GET", "/healthz"))[0] == 200  # probes are not counted
        code, _ = await slow
        assert code == 504
        assert (await call(admin, "GET", CM))[0] == 200


async def test_a_request_that_finds_every_seat_taken_waits_its_turn(tmp_path: Path) -> None:
    async with secure_server(tmp_path, limits=auth.Limits(max_inflight=1, queue_wait=30)) as s:
        admin = s.session("admin")
        slow = asyncio.create_task(call(admin, "GET", FUTURE))
        await eventually(lambda: s.config.inflight == 1, what="the slow request in flight")
        queued = asyncio.create_task(call(admin, "GET", CM))
        await eventually(lambda: s.config.reads.queued == 1, what="the second request queued")
        assert (await slow)[0] == 504
        assert (await queued)[0] == 200  # served once the seat was free, not refused


async def test_a_request_queued_too_long_gets_429(tmp_path: Path) -> None:
    async with secure_server(tmp_path, limits=auth.Limits(max_inflight=1, queue_wait=0.2)) as s:
        admin = s.session("admin")
        slow = asyncio.create_task(call(admin, "GET", FUTURE))
        await eventually(lambda: s.config.inflight == 1, what="the slow request in flight")
        code, body = await call(admin, "GET", CM)
        assert code == 429 and body["reason"] == "TooManyRequests" and body["details"] == {"retryAfterSeconds": 1}
        assert s.config.reads.queued == 0
        assert (await slow)[0] == 504


async def test_one_user_flooding_the_seats_does_not_starve_another(tmp_path: Path) -> None:
    """alice fills every read seat and queues more; bob's request takes the next free seat, ahead of
    alice's queued requests (fair shares, as API Priority and Fairness)."""
    async with secure_server(tmp_path, limits=auth.Limits(max_inflight=2, queue_length=20, queue_wait=30)) as s:
        admin = s.session("admin")
        code, _ = await call(admin, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
                             binding("readers", "view", kind="Group", subject="system:authenticated"))
        assert code == 201
        alice, bob = s.session("alice"), s.session("bob")
        order: list[str] = []

        async def get(session: aiohttp.ClientSession, who: str, path: str) -> int:
            code, _ = await call(session, "GET", path)
            order.append(who)
            return code

        held = [asyncio.create_task(get(alice, "alice-held", FUTURE)) for _ in range(2)]  # ~3 s each
        await eventually(lambda: s.config.reads.in_use == 2, what="alice holds both read seats")
        queued = [asyncio.create_task(get(alice, "alice", CM)) for _ in range(6)]
        await eventually(lambda: s.config.reads.queued == 6, what="alice's requests queued")
        bobs = asyncio.create_task(get(bob, "bob", CM))
        await eventually(lambda: s.config.reads.queued == 7, what="bob queued")
        assert await bobs == 200
        assert await asyncio.gather(*queued) == [200] * 6
        assert await asyncio.gather(*held) == [504, 504]
        # Two seats freed at once: bob's request was handed one, before all but one of alice's.
        served = [who for who in order if who != "alice-held"]
        assert served.index("bob") <= 1, order


async def test_a_slow_upload_holds_no_seat(tmp_path: Path) -> None:
    """Bodies are read before the request takes a seat: uploads trickling in keep nobody else out,
    and an upload that does not finish in time gets a 504 Status."""
    async with secure_server(tmp_path, limits=auth.Limits(max_mutating_inflight=1, body_timeout=0.5)) as s:
        import ssl as ssl_

        context = ssl_.create_default_context(cadata=s.creds.ca_cert.decode())
        slow: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        for i in range(5):
            reader, writer = await asyncio.open_connection("127.0.0.1", s.srv.port, ssl=context,
                                                           server_hostname="127.0.0.1")
            writer.write(f"POST {CM} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {s.tokens['admin']}\r\n"
                         f"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n"
                         f'{{"metadata":{{"name":"slow-{i}"'.encode())  # then nothing more
            slow.append((reader, writer))
        admin = s.session("admin")
        code, _ = await call(admin, "POST", CM, {"metadata": {"name": "fast"}})
        assert code == 201  # not 429: the slow uploads hold no write seat
        for reader, writer in slow:
            async with asyncio.timeout(5):
                head = await reader.readline()
            assert b" 504 " in head
            writer.close()
        assert s.config.buffered_body_bytes == 0
        code, body = await call(admin, "GET", CM)
        assert [i["metadata"]["name"] for i in body["items"]] == ["fast"]


async def test_watches_per_user_are_bounded(tmp_path: Path) -> None:
    async with secure_server(tmp_path, limits=auth.Limits(max_watches_per_user=2)) as s:
        admin, other = s.session("admin"), s.session("admin")
        opened = [await admin.get(f"{CM}?watch=true&timeoutSeconds=1") for _ in range(2)]
        assert [r.status for r in opened] == [200, 200]
        code, body = await call(other, "GET", f"{CM}?watch=1")
        assert code == 429 and body["reason"] == "TooManyRequests"
        assert (await call(admin, "GET", CM))[0] == 200  # lists are not watches
        assert (await call(s.session("alice"), "GET", f"{CM}?watch=true"))[0] == 403  # per user: not 429
        for r in opened:
            await asyncio.wait_for(r.read(), 5)  # the server ends them after timeoutSeconds
            r.close()
        await eventually(lambda: s.config.watches.get("cplane-admin", 0) < 2, what="the ended watches released")
        async with other.get(f"{CM}?watch=true&timeoutSeconds=1") as r:
            assert r.status == 200


async def test_requests_time_out_with_504(tmp_path: Path) -> None:
    async with secure_server(tmp_path, limits=auth.Limits(request_timeout=0.3)) as s:
        code, body = await call(s.session("admin"), "GET", FUTURE)
        assert code == 504
        assert body["reason"] == "Timeout" and body["message"] == (
            "Timeout: request did not complete within requested timeout - context deadline exceeded")
        async with s.session("admin").get(f"{CM}?watch=true&timeoutSeconds=1") as r:  # watches are exempt
            assert r.status == 200
            await asyncio.wait_for(r.read(), 5)


async def test_body_depth_and_object_size(tmp_path: Path) -> None:
    async with secure_server(tmp_path, limits=auth.Limits(max_object_bytes=20_000)) as s:
        admin = s.session("admin")
        revision = s.srv.event_log.revision
        code, body = await call(admin, "POST", CM, io.BytesIO(b"x" * (3 * 1024 * 1024 + 10)))
        assert code == 413 and body["reason"] == "RequestEntityTooLarge"
        for depth in (150, 2_000, 200_000):
            code, body = await call(admin, "POST", CM, nested(depth))
            assert code == 400, (depth, body)
            assert body["kind"] == "Status" and "nested too deeply" in body["message"]
        code, body = await call(admin, "POST", CM, {"metadata": {"name": "big"}, "data": {"k": "v" * 30_000}})
        assert code == 413 and "limit is 20000" in body["message"]
        assert (await call(admin, "POST", CM, {"metadata": {"name": "ok"}, "data": {"k": "v"}}))[0] == 201
        code, body = await call(admin, "PATCH", f"{CM}/ok", {"data": {"k": "v" * 30_000}},
                                "application/merge-patch+json")
        assert code == 413
        deep_patch = b'{"metadata":{"annotations":' + b'{"a":' * 3000 + b'"x"' + b"}" * 3000 + b"}}"
        code, body = await call(admin, "PATCH", f"{CM}/ok", deep_patch, "application/merge-patch+json")
        assert code == 400, body
        assert s.srv.event_log.revision == revision + 1  # only "ok" was written


async def test_insecure_mode_has_the_limits_but_no_authentication(tmp_path: Path) -> None:
    from api import server as servers
    from storage import memory

    log = memory.MemoryEventLog()
    await log.start()
    try:
        async with servers.running(data_dir=tmp_path, event_log=log, insecure_limits=True) as srv:
            assert srv.url.startswith("http://") and srv.auth is None
            async with aiohttp.ClientSession(base_url=srv.url) as http:
                code, body = await call(http, "POST", CM, nested(5000))
                assert code == 400 and body["reason"] == "BadRequest"
                code, body = await call(http, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", {})
                assert code == 201 and body["status"]["userInfo"]["username"] == "system:admin"
    finally:
        await log.close()


async def test_secure_fixture_sanity(secure: Secure) -> None:
    assert secure.url.startswith("https://127.0.0.1:")


async def test_deadline_sweep_cancels_only_what_is_late_and_leaves_no_cancel_behind() -> None:
    """The request timeout is a periodic sweep, not a timer per request: a late request is
    cancelled once; one that swallows the cancellation leaves its task as it found it; others
    are untouched."""
    deadlines = auth_limits.Deadlines(0.05)
    release = asyncio.Event()

    async def request(*, swallow: bool) -> str:
        task = asyncio.current_task()
        assert task is not None
        deadlines.enter(task)
        try:
            try:
                await release.wait()
            except asyncio.CancelledError:
                if not swallow:
                    raise
                return f"swallowed, cancelling={task.cancelling()}"
            return "done"
        finally:
            deadlines.leave(task)

    late = asyncio.ensure_future(request(swallow=False))
    swallowing = asyncio.ensure_future(request(swallow=True))
    with pytest.raises(asyncio.CancelledError):
        await late
    assert await swallowing == "swallowed, cancelling=1"  # leave() then undoes the sweep's cancel
    assert swallowing.cancelling() == 0 and not deadlines.expired
    on_time = asyncio.ensure_future(request(swallow=False))
    release.set()
    assert await on_time == "done"
