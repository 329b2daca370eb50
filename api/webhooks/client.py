"""Calling a webhook's `clientConfig` over HTTPS, as k8s.io/apiserver's `util/webhook` ClientManager
does for admission webhooks and CRD conversion webhooks.

- `url`: posted to as given (validation already requires `https`).
- `service` (namespace, name, path, port default 443): the Service is read through the event log and
  resolved to one ready endpoint of its EndpointSlices (kube-aggregator's endpoint resolver: the
  Service port with that `port`, then an endpoint port with the same name) — cluster IPs route
  nowhere here, endpoints do. EndpointSlice validation refuses loopback addresses, as upstream's, so
  a webhook server on 127.0.0.1 is reached through an `ExternalName` Service naming `localhost` (or
  `127.0.0.1`), resolved as kube-aggregator's cluster resolver does: the external name on the
  requested port. TLS verifies the name `<service>.<namespace>.svc`, the server name upstream's
  client uses, whatever address is dialled.
- `caBundle`: the PEM roots the server certificate must chain to; without one, the system's roots.
- The timeout is the caller's (`timeoutSeconds` for admission webhooks); as client-go's REST client,
  it also travels as the `timeout` query parameter, in whole seconds rounded up.

Failures are `CallError`s whose text is the Go error upstream's client reports (`Post "<url>":
context deadline exceeded`, `... connect: connection refused`, `service "x" not found`...); callers
put them into their own messages. One `aiohttp.ClientSession` per server app, opened on the first
call and closed with the app (`close`).
"""

from __future__ import annotations

import asyncio
import base64
import math
import random
import ssl
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import aiohttp
import msgspec

from storage import log

DEFAULT_PORT = 443
_decode = msgspec.json.Decoder().decode
_SERVED_TYPES = ("ClusterIP", "LoadBalancer", "NodePort")
# client-go's messages for a non-2xx answer that is not a Status (apimachinery's newUnstructuredResponseError).
_CODE_MESSAGES = {
    400: "the server rejected our request for an unknown reason",
    401: "the server has asked for the client to provide credentials",
    403: "forbidden",
    404: "the server could not find the requested resource",
    405: "the server does not allow this method on the requested resource",
    409: "the server reported a conflict",
    410: "the server has asked for the client to provide credentials",
    422: "the server rejected our request due to an error in our request",
    429: "the server has received too many requests and has asked us to try again later",
    500: "an error on the server ({body}) has prevented the request from succeeding",
    501: "the server does not support this method on the requested resource",
    503: "the server is currently unable to handle the request",
    504: "the server was unable to return a response in the time allotted, but may still be processing the request",
}


class CallError(Exception):
    """A webhook call that produced no usable answer; `str()` is the Go error upstream reports.
    `status` is the Status the webhook answered with, when it answered with one."""

    def __init__(self, message: str, *, status: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


class Target(msgspec.Struct, frozen=True, kw_only=True):
    """Where a call goes: the URL as upstream's client names it, the address actually dialled and
    the TLS server name checked."""

    url: str  # https://<host>:<port><path> (the service's DNS name for a service)
    connect_url: str  # the URL dialled (the endpoint's address for a service)
    server_name: str


class WebhookClient:
    """Posts JSON to webhooks; one per server app."""

    def __init__(self, *, event_log: log.EventLog) -> None:
        self.event_log = event_log
        self._session: aiohttp.ClientSession | None = None
        self._contexts: dict[bytes, ssl.SSLContext] = {}
        # Namespace -> (revision read at, EndpointSlices), kept while the log reports no slice change.
        self._slices: dict[str, tuple[int, list[dict[str, Any]]]] = {}

    async def close(self) -> None:
        """Close the HTTP session (on the app's cleanup)."""
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def post(self, *, client_config: Mapping[str, Any], body: bytes, timeout_seconds: float) -> Any:
        """POST `body` (JSON) to the webhook and return its decoded JSON answer. `timeout` in seconds
        bounds the whole call, resolution included."""
        target_url = _base_url(client_config)
        query_url = _with_timeout(target_url, timeout_seconds)
        try:
            async with asyncio.timeout(timeout_seconds):
                target = await self._target(client_config, query_url)
                return await self._post(target, client_config, body)
        except TimeoutError:
            raise CallError(f'Post "{query_url}": context deadline exceeded') from None

    async def _post(self, target: Target, client_config: Mapping[str, Any], body: bytes) -> Any:
        session = self._session_now()
        context = self._ssl_context(client_config.get("caBundle"))
        headers = {"Content-Type": "application/json", "Accept": "application/json, */*"}
        host = urlsplit(target.url).netloc
        if target.connect_url != target.url:
            headers["Host"] = host
        try:
            async with session.post(target.connect_url, data=body, headers=headers, ssl=context,
                                    server_hostname=target.server_name) as resp:
                raw = await resp.read()
                code = resp.status
        except aiohttp.ClientConnectorCertificateError as exc:
            raise CallError(f'Post "{target.url}": {_tls_message(exc, target.server_name)}') from None
        except aiohttp.ClientSSLError as exc:
            raise CallError(f'Post "{target.url}": remote error: tls: {exc}') from None
        except aiohttp.ClientConnectorError as exc:
            raise CallError(f'Post "{target.url}": {_dial_message(exc)}') from None
        except aiohttp.ClientError as exc:
            raise CallError(f'Post "{target.url}": {exc or type(exc).__name__}') from None
        return _answer(code, raw)

    def _session_now(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None))
        return self._session

    def _ssl_context(self, ca_bundle: Any) -> ssl.SSLContext:
        """A verifying TLS context trusting `caBundle` (base64 in the API's JSON), else the system's roots."""
        pem = base64.b64decode(ca_bundle) if isinstance(ca_bundle, str) and ca_bundle else b""
        context = self._contexts.get(pem)
        if context is None:
            context = ssl.create_default_context()
            if pem:
                context = ssl.create_default_context(cadata=pem.decode("ascii", errors="replace"))
            self._contexts[pem] = context
        return context

    async def _target(self, client_config: Mapping[str, Any], url: str) -> Target:
        service = client_config.get("service")
        if not isinstance(service, Mapping):
            host = urlsplit(url).hostname or ""
            return Target(url=url, connect_url=url, server_name=host)
        namespace, name = str(service.get("namespace") or ""), str(service.get("name") or "")
        port = int(service.get("port") or DEFAULT_PORT)
        try:
            address, target_port = await self.resolve(namespace=namespace, name=name, port=port)
        except CallError as exc:  # upstream resolves in its dialer: the error is the POST's
            raise CallError(f'Post "{url}": {exc}') from None
        parts = urlsplit(url)
        host = f"[{address}]" if ":" in address else address
        connect = urlunsplit(("https", f"{host}:{target_port}", parts.path, parts.query, ""))
        return Target(url=url, connect_url=connect, server_name=f"{name}.{namespace}.svc")

    async def _endpoint_slices(self, namespace: str) -> list[dict[str, Any]]:
        group, resource = "discovery.k8s.io", "endpointslices"
        cached = self._slices.get(namespace)
        if cached is not None and cached[0] >= self.event_log.last_change(group=group, resource=resource):
            return cached[1]
        as_of = self.event_log.revision
        listed = await self.event_log.list_objects(group=group, resource=resource, namespace=namespace)
        slices = [dict(_decode(ev.object)) for ev in listed.events]
        self._slices[namespace] = (as_of, slices)
        return slices

    async def resolve(self, *, namespace: str, name: str, port: int) -> tuple[str, int]:
        """One ready endpoint (address, port) of the Service's port `port`, as kube-aggregator's
        endpoint-slice resolver picks it (at random among the ready ones); for an ExternalName
        Service, its external name on `port` (as the cluster resolver)."""
        ev = await self.event_log.get(group="", resource="services", namespace=namespace, name=name)
        if ev is None:
            raise CallError(f'service "{name}" not found')
        spec = _decode(ev.object).get("spec") or {}
        svc_type = str(spec.get("type") or "ClusterIP")
        if svc_type == "ExternalName" and spec.get("externalName"):
            # As kube-aggregator's cluster resolver: the external name itself, on the requested port.
            return str(spec["externalName"]), port
        if svc_type not in _SERVED_TYPES:
            raise CallError(f'unsupported service type "{svc_type}"')
        svc_port = next((p for p in spec.get("ports") or [] if isinstance(p, Mapping) and p.get("port") == port),
                        None)
        if svc_port is None:
            raise CallError(f'no service port {port} found for service "{name}"')
        port_name = str(svc_port.get("name") or "")
        candidates: list[tuple[str, int]] = []
        for eps in await self._endpoint_slices(namespace):
            labels = (eps.get("metadata") or {}).get("labels") or {}
            if labels.get("kubernetes.io/service-name") != name:
                continue
            ports = [p for p in eps.get("ports") or []
                     if isinstance(p, Mapping) and str(p.get("name") or "") == port_name and p.get("port")]
            if not ports:
                continue
            for endpoint in eps.get("endpoints") or []:
                if not isinstance(endpoint, Mapping):
                    continue
                if (endpoint.get("conditions") or {}).get("ready") is False:
                    continue
                addresses = endpoint.get("addresses") or []
                if addresses:
                    candidates.append((str(addresses[0]), int(ports[0]["port"])))
        if not candidates:
            raise CallError(f'no endpoints available for service "{name}"')
        return random.choice(candidates)


def _base_url(client_config: Mapping[str, Any]) -> str:
    """The URL upstream's client posts to: `url`, or `https://<name>.<namespace>.svc:<port><path>`."""
    service = client_config.get("service")
    if isinstance(service, Mapping):
        port = int(service.get("port") or DEFAULT_PORT)
        path = str(service.get("path") or "")
        if path and not path.startswith("/"):
            path = "/" + path
        return f"https://{service.get('name')}.{service.get('namespace')}.svc:{port}{path}"
    return str(client_config.get("url") or "")


def _with_timeout(url: str, timeout: float) -> str:
    """client-go's REST client passes its timeout on as `?timeout=<n>s` (whole seconds, rounded up)."""
    seconds = max(1, math.ceil(timeout))
    parts = urlsplit(url)
    query = f"{parts.query}&timeout={seconds}s" if parts.query else f"timeout={seconds}s"
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))


def _answer(code: int, raw: bytes) -> Any:
    """The decoded JSON of a 2xx answer; otherwise the error client-go makes of it (a Status the
    server sent, or its generic message for the code)."""
    body: Any = None
    try:
        body = _decode(raw) if raw else None
    except msgspec.DecodeError:
        body = None
    if 200 <= code < 300:
        if body is None and raw.strip():
            raise CallError(f"couldn't get version/kind; json parse error: {_short(raw)}")
        return body
    if isinstance(body, dict) and body.get("kind") == "Status" and body.get("status") == "Failure":
        raise CallError(str(body.get("message") or body.get("reason") or f"status code {code}"), status=body)
    template = _CODE_MESSAGES.get(code, f"the server responded with the status code {code} but did not "
                                        "return more information")
    raise CallError(template.format(body=msgspec.json.encode(_short(raw)).decode()))


def _short(raw: bytes) -> str:
    text = raw.decode("utf-8", errors="replace").strip()
    return text if len(text) <= 256 else text[:256] + "..."


def _tls_message(exc: aiohttp.ClientConnectorCertificateError, server_name: str) -> str:
    """Go's crypto/tls wording for a certificate that does not verify."""
    detail = str(getattr(exc.certificate_error, "verify_message", "") or exc.certificate_error)
    if "mismatch" in detail.lower():
        return f"tls: failed to verify certificate: x509: certificate is not valid for {server_name}"
    if "expired" in detail.lower():
        return "tls: failed to verify certificate: x509: certificate has expired or is not yet valid"
    return "tls: failed to verify certificate: x509: certificate signed by unknown authority"


def _dial_message(exc: aiohttp.ClientConnectorError) -> str:
    """Go's net.Dial wording: `dial tcp <host>:<port>: connect: connection refused`."""
    where = f"{exc.host}:{exc.port}" if ":" not in exc.host else f"[{exc.host}]:{exc.port}"
    cause = exc.os_error
    if isinstance(cause, ConnectionRefusedError):
        return f"dial tcp {where}: connect: connection refused"
    return f"dial tcp {where}: {cause.strerror or cause}"
