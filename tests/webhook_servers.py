"""A real HTTPS webhook server for tests: aiohttp on 127.0.0.1 (or another local address) with a certificate from its own CA
(`cp.certs`), valid for 127.0.0.1 and the Service names given, so the API server under test calls it
as it would a webhook in a cluster. Handlers are plain functions of the decoded request body;
`hang()` is a handler that never answers (until the server stops), for timeouts."""

from __future__ import annotations

import asyncio
import base64
import json
import socket
import ssl
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from aiohttp import web

from cp import certs

Handler = Callable[[dict[str, Any]], Awaitable[Any] | Any]


class WebhookServer:
    """`async with WebhookServer(hosts=["hooks.default.svc"]) as srv:`; `srv.route("/mutate", fn)`,
    `srv.url("/mutate")`, `srv.ca_bundle` (base64 PEM, as clientConfig.caBundle), `srv.calls[path]`
    (the bodies received)."""

    def __init__(self, *, hosts: Iterable[str] = (), bind: str = "127.0.0.1") -> None:
        now = time.time()
        self.bind = bind
        self.ca_cert, ca_key = certs.new_ca(common_name="webhook-test-ca", now=now)
        self._cert, self._key = certs.new_serving_cert(self.ca_cert, ca_key, hosts=[*hosts, bind], now=now)
        self.routes: dict[str, Handler] = {}
        self.calls: dict[str, list[dict[str, Any]]] = {}
        self.port = 0
        self._runner: web.AppRunner | None = None
        self._stopping = asyncio.Event()

    @property
    def ca_bundle(self) -> str:
        return base64.b64encode(self.ca_cert).decode()

    def url(self, path: str) -> str:
        return f"https://{self.bind}:{self.port}{path}"

    def route(self, path: str, handler: Handler) -> None:
        self.routes[path] = handler

    async def hang(self, _review: dict[str, Any]) -> Any:
        await self._stopping.wait()
        return web.Response(status=503)

    async def __aenter__(self) -> WebhookServer:
        import tempfile
        from pathlib import Path

        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        with tempfile.TemporaryDirectory() as tmp:
            cert, key = Path(tmp) / "tls.crt", Path(tmp) / "tls.key"
            cert.write_bytes(self._cert)
            key.write_bytes(self._key)
            context.load_cert_chain(cert, key)
        app = web.Application()
        app.router.add_post("/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.bind, 0, ssl_context=context)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._stopping.set()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.calls.setdefault(request.path, []).append(body)
        handler = self.routes.get(request.path)
        if handler is None:
            return web.Response(status=404, text="404 page not found")
        result = handler(body)
        if asyncio.iscoroutine(result):
            result = await result
        if isinstance(result, web.StreamResponse):
            return result
        return web.json_response(result)


def host_address() -> str | None:
    """This machine's primary non-loopback IPv4 address (where a route out leaves from), or None:
    an address an EndpointSlice may hold (validation refuses loopback ones) that reaches this host."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.254", 9))  # no packet is sent: this only picks the outgoing address
            address = str(probe.getsockname()[0])
        except OSError:
            return None
    return None if address.startswith("127.") or address == "0.0.0.0" else address


def allow(review: dict[str, Any], **response: Any) -> dict[str, Any]:
    """A v1 AdmissionReview answer for `review`'s request: allowed unless `allowed=False` is given."""
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": {"uid": review["request"]["uid"], "allowed": True, **response}}


def json_patch(review: dict[str, Any], operations: list[dict[str, Any]], **response: Any) -> dict[str, Any]:
    """An allowing answer carrying a base64 JSONPatch."""
    patch = base64.b64encode(json.dumps(operations).encode()).decode()
    return allow(review, patch=patch, patchType="JSONPatch", **response)


def deny(review: dict[str, Any], message: str, *, code: int = 403, reason: str = "") -> dict[str, Any]:
    status: dict[str, Any] = {"message": message, "code": code}
    if reason:
        status["reason"] = reason
    return allow(review, allowed=False, status=status)
