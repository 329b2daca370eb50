"""The controllers' only way to the API server: an asyncio HTTP client (aiohttp + msgspec).

Controllers talk to the server exactly as out-of-process Kubernetes controllers do, so the same
code runs inside `cplane serve` or as its own process. Objects are plain dicts (`spec`/`status`
are never typed here, so unknown fields round-trip); only the envelopes are msgspec Structs.

Failures the server reports come back as the `cp.errors` class named by the Status `reason`
(`NotFound`, `Conflict`, `AlreadyExists`, `Invalid`, `Expired`...) with the Status object attached
as `.status_body`; transport failures stay `aiohttp.ClientError` / `TimeoutError`.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import os
import ssl
import tempfile
import time
from collections.abc import AsyncIterator, Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import aiohttp
import msgspec
import yarl

from controllers.runtime import discovery, http1
from cp import errors
from cp import kubeconfig as kubeconfigs
from cp import resources as res

JSON = "application/json"
PATCH_TYPES = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
    "apply": "application/apply-patch+yaml",
}
DEFAULT_USER_AGENT = "cplane-controller-manager/v0.1.0"
REQUEST_TIMEOUT = 30.0  # seconds for one non-watch request
LIST_PAGE = 500  # client-go's pager default


class ListMeta(msgspec.Struct, kw_only=True, rename="camel"):
    resource_version: str = ""
    continue_: str = msgspec.field(default="", name="continue")
    remaining_item_count: int | None = None


class ObjectList(msgspec.Struct, kw_only=True, rename="camel"):
    kind: str = ""
    api_version: str = ""
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[dict[str, Any]] = msgspec.field(default_factory=list)

    @property
    def resource_version(self) -> str:
        return self.metadata.resource_version


class _MetadataOnly(msgspec.Struct):
    """A response of which only the metadata is wanted: the rest is skipped, not built."""

    metadata: dict[str, Any] = msgspec.field(default_factory=dict)


class WatchEvent(msgspec.Struct, frozen=True):
    """One line of a watch stream: ADDED, MODIFIED, DELETED, BOOKMARK (ERROR lines are raised)."""

    type: str
    object: dict[str, Any]


_decode_any = msgspec.json.Decoder().decode
_decode_list = msgspec.json.Decoder(ObjectList).decode
_decode_event = msgspec.json.Decoder(WatchEvent).decode
_decode_metadata = msgspec.json.Decoder(_MetadataOnly).decode
_encode = msgspec.json.Encoder().encode

_ERROR_CLASSES: tuple[type[errors.StatusError], ...] = (
    errors.BadRequest, errors.Unauthorized, errors.Forbidden, errors.NotFound, errors.MethodNotAllowed,
    errors.AlreadyExists, errors.Conflict, errors.Gone, errors.Expired, errors.RequestEntityTooLarge,
    errors.UnsupportedMediaType, errors.Invalid, errors.TooManyRequests, errors.InternalError,
    errors.Timeout,
)
_BY_REASON = {cls.reason: cls for cls in _ERROR_CLASSES}
_BY_CODE: dict[int, type[errors.StatusError]] = {
    400: errors.BadRequest, 401: errors.Unauthorized, 403: errors.Forbidden, 404: errors.NotFound,
    405: errors.MethodNotAllowed, 409: errors.Conflict, 410: errors.Gone,
    413: errors.RequestEntityTooLarge, 415: errors.UnsupportedMediaType, 422: errors.Invalid,
    429: errors.TooManyRequests, 500: errors.InternalError, 504: errors.Timeout,
}
_CAUSE_TYPES = {reason: type_ for type_, (reason, _) in errors.Cause.TYPES.items()}


def status_error(status: Mapping[str, Any], *, http_code: int = 0) -> errors.StatusError:
    """The `cp.errors` exception a Status object stands for (reason first, then code)."""
    code = int(status.get("code") or http_code or 500)
    reason = str(status.get("reason") or "")
    cls = _BY_REASON.get(reason)
    if cls is None or cls.code != code:
        cls = _BY_CODE.get(code, errors.StatusError)
    message = str(status.get("message") or reason or f"HTTP {code}")
    details = status.get("details")
    err = cls.__new__(cls)
    errors.StatusError.__init__(err, message, details=dict(details) if isinstance(details, Mapping) else None)
    if err.code != code or (reason and err.reason != reason):
        err.code = code
        err.reason = reason or err.reason
    if isinstance(err, errors.Invalid):
        causes = (details or {}).get("causes") or [] if isinstance(details, Mapping) else []
        err.causes = [errors.Cause(_CAUSE_TYPES.get(str(c.get("reason")), str(c.get("reason") or "")),
                                   str(c.get("field") or ""), str(c.get("message") or ""))
                      for c in causes if isinstance(c, Mapping)]
    err.status_body = dict(status)  # type: ignore[attr-defined]
    return err


def _error_from_body(code: int, body: bytes) -> errors.StatusError:
    try:
        decoded = _decode_any(body)
    except msgspec.DecodeError:
        decoded = None
    if isinstance(decoded, dict) and decoded.get("kind") == "Status":
        return status_error(decoded, http_code=code)
    text = body.decode("utf-8", "replace").strip()[:500]
    return status_error({"code": code, "message": text or f"HTTP {code}"}, http_code=code)


def resolve(kind: res.ResourceKind | str, *, mapper: discovery.RESTMapper | None = None) -> res.ResourceKind:
    """A ResourceKind from itself or a group-resource name (`pods`, `deployments.apps`); custom
    resources (`widgets.example.com`) through `mapper`, once it has read discovery."""
    if isinstance(kind, res.ResourceKind):
        return kind
    plural, _, group = kind.partition(".")
    found = res.by_group_resource(group, plural)
    if found is None and mapper is not None:
        found = mapper.by_group_resource(group, plural)
    if found is None:
        raise ValueError(f"unknown resource {kind!r}")
    return found


@functools.lru_cache(maxsize=16_384)
def _url(url: str, query: tuple[tuple[str, str], ...]) -> yarl.URL:
    """The URL of a request, built once (clients that write the same objects over and over, such as a
    fleet's kubelets renewing their Leases, skip yarl's parsing and query encoding)."""
    built = yarl.URL(url)
    return built.with_query(query) if query else built


def object_path(kind: res.ResourceKind, *, namespace: str | None = None, name: str = "",
                subresource: str = "") -> str:
    """`/api/v1/namespaces/ns/pods/name/status` and friends. namespace None: all namespaces."""
    parts = [kind.path_prefix()]
    if kind.namespaced and namespace:
        parts.append(f"namespaces/{namespace}")
    parts.append(kind.plural)
    if name:
        parts.append(name)
        if subresource:
            parts.append(subresource)
    return "/".join(parts)


class WatchStream:
    """One watch request: `async with client.watch(...) as stream: async for event in stream`.

    Yields WatchEvents in order; an in-stream ERROR raises its `cp.errors` exception (410 →
    `Expired`); the iteration ends when the server closes the stream."""

    def __init__(self, client: Client, path: str, params: dict[str, str], read_timeout: float | None) -> None:
        self._client = client
        self._path = path
        self._params = params
        self._read_timeout = read_timeout
        self._resp: aiohttp.ClientResponse | None = None

    async def __aenter__(self) -> WatchStream:
        await self._client.fresh()
        session = self._client.session()
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=REQUEST_TIMEOUT, sock_read=self._read_timeout)
        resp = await session.get(self._client.base_url + self._path, params=self._params,
                                 headers=self._client.headers(), timeout=timeout,
                                 server_hostname=self._client.server_name)
        if resp.status >= 400:
            try:
                body = await resp.read()
            finally:
                resp.release()
            raise _error_from_body(resp.status, body)
        self._resp = resp
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        if self._resp is not None:
            self._resp.close()
            self._resp = None

    def __aiter__(self) -> AsyncIterator[WatchEvent]:
        return self._events()

    async def _events(self) -> AsyncIterator[WatchEvent]:
        resp = self._resp
        if resp is None:
            raise RuntimeError("use `async with client.watch(...) as stream`")
        buf = b""
        async for chunk in resp.content.iter_any():
            buf += chunk
            while True:
                nl = buf.find(b"\n")
                if nl < 0:
                    break
                line, buf = buf[:nl], buf[nl + 1:]
                if line.strip():
                    yield self._parse(line)
        if buf.strip():
            yield self._parse(buf)

    @staticmethod
    def _parse(line: bytes) -> WatchEvent:
        event = _decode_event(line)
        if event.type == "ERROR":
            raise status_error(event.object)
        return event


class Client:
    """An API client bound to one server. Create it inside the event loop; `close()` when done."""

    def __init__(self, base_url: str, *, token: str = "", user_agent: str = DEFAULT_USER_AGENT,
                 ssl_context: ssl.SSLContext | bool | None = None, max_connections: int = 256,
                 root_ca: str = "", lean: bool = False, proxy: str = "", proxy_from_env: bool = False,
                 server_name: str = "") -> None:
        """`lean`: requests other than watches go through `controllers.runtime.http1`'s keep-alive
        pool instead of aiohttp (for clients writing many small objects: the fleet's kubelets).
        `proxy`: an HTTP proxy every request goes through (a kubeconfig's `proxy-url`);
        `proxy_from_env`: HTTPS_PROXY / HTTP_PROXY / NO_PROXY apply (`from_kubeconfig`, as client-go).
        `server_name`: the name the server's certificate is checked against (and sent as SNI) instead of
        the URL's host (a kubeconfig's `tls-server-name`)."""
        self.base_url = base_url.rstrip("/")
        self.root_ca = root_ca  # the CA (PEM) this client trusts for the server, when it has one
        self.token = token
        self.user_agent = user_agent
        self._ssl = ssl_context
        self._max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None
        self._proxy = proxy or None
        self.server_name = server_name or None
        self._proxy_from_env = proxy_from_env
        self._headers = {"Accept": JSON, "User-Agent": user_agent}
        if token:
            self._headers["Authorization"] = f"Bearer {token}"
        self._lean = lean
        self._pool: http1.Pool | None = None
        self._lean_heads: dict[tuple[str, str, str], bytes] = {}  # (method, target, content type) -> head
        # An exec credential plugin's (`from_kubeconfig`): run again when its credential expires.
        self._exec: tuple[kubeconfigs.ExecConfig, kubeconfigs.Endpoint] | None = None
        self._expires: float | None = None
        self._refreshing = asyncio.Lock()
        # What the server serves, custom resources included, from discovery (`discover()`).
        self.mapper = discovery.RESTMapper(self._fetch_discovery)

    @classmethod
    def from_kubeconfig(cls, path: str | os.PathLike[str] | None = None, *, context: str | None = None,
                        user_agent: str = DEFAULT_USER_AGENT, lean: bool = False) -> Client:
        """From `path` (else $KUBECONFIG, else ~/.kube/config): server, token, TLS trust, client cert,
        or an exec credential plugin's (run now, and again when what it gave expires). Raises OSError
        or ValueError saying what cannot be used."""
        ep = kubeconfigs.load(Path(path) if path is not None else None, context=context)
        configured = ep
        expires = None
        if ep.exec is not None:
            from controllers.runtime import execcred

            cred = execcred.run(ep.exec, ep)
            ep, expires = execcred.with_credential(ep, cred), cred.expires
        root_ca = base64.b64decode(ep.ca_data).decode() if ep.ca_data else ""
        if ep.proxy_url and not ep.proxy_url.startswith(("http://", "https://")):
            raise ValueError(f"kubeconfig: proxy-url {ep.proxy_url}: only http and https proxies are supported")
        from_env = not _loopback(ep.server)
        # (the lean pool speaks plain HTTP/1.1 to the server itself: no proxy, no other server name)
        direct = not ep.tls_server_name and not ep.proxy_url and not (from_env and any(
            os.environ.get(name) for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy")))
        client = cls(ep.server, token=ep.token, user_agent=user_agent, ssl_context=_ssl_context(ep),
                     root_ca=root_ca, lean=lean and direct, proxy=ep.proxy_url, proxy_from_env=from_env,
                     server_name=ep.tls_server_name)
        if ep.exec is not None:
            client._exec, client._expires = (ep.exec, configured), expires
        return client

    async def fresh(self) -> None:
        """Before a request: an exec plugin's credential that expires within 10 s is fetched again
        (a token replaces the Authorization header; a client certificate, the TLS context and its
        connections). Raises ValueError when the plugin fails."""
        if self._expires is None or time.time() < self._expires - 10 or self._exec is None:
            return
        from controllers.runtime import execcred

        async with self._refreshing:  # (the requests that find it expired together run the plugin once)
            if self._expires is None or time.time() < self._expires - 10:
                return  # another request refreshed it meanwhile
            config, endpoint = self._exec
            cred = await execcred.run_async(config, endpoint)
            self._expires = cred.expires
            self.token = cred.token
            if cred.token:
                self._headers["Authorization"] = f"Bearer {cred.token}"
            self._lean_heads.clear()
            if cred.client_cert_data and cred.client_key_data:
                self._ssl = _ssl_context(execcred.with_credential(endpoint, cred))
                await self.close()  # (new connections take the new certificate)

    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(limit=self._max_connections,
                                            ssl=self._ssl if self._ssl is not None else True)
            self._session = aiohttp.ClientSession(
                connector=connector, timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT), proxy=self._proxy,
                trust_env=self._proxy_from_env and self._proxy is None)
        return self._session

    def headers(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        if not extra:
            return self._headers
        return {**self._headers, **extra}

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()
            self._pool = None
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()

    # ------------------------------------------------------------------ transport

    async def request(self, method: str, path: str, *, params: Mapping[str, str] | None = None,
                      body: Any = None, content_type: str = JSON, accept: str = "") -> bytes:
        """One request; the raw response body on 2xx, a `cp.errors` exception otherwise."""
        if self._expires is not None:
            await self.fresh()
        data: bytes | None = None
        headers = None
        if body is not None:
            data = body if isinstance(body, bytes) else _encode(body)
            headers = self.headers({"Content-Type": content_type})
        if accept:
            headers = {**(headers or self._headers), "Accept": accept}
        if self._lean:
            return await self._lean_request(method, path, params, data, content_type if data is not None else "",
                                            accept)
        url = _url(self.base_url + path, tuple(params.items()) if params else ())
        async with self.session().request(method, url, data=data, headers=headers or self._headers,
                                          server_hostname=self.server_name) as resp:
            raw = await resp.read()
            if resp.status >= 400:
                raise _error_from_body(resp.status, raw)
            return raw

    async def _lean_request(self, method: str, path: str, params: Mapping[str, str] | None, data: bytes | None,
                            content_type: str, accept: str) -> bytes:
        url = _url(self.base_url + path, tuple(params.items()) if params else ())
        target = url.raw_path_qs
        key = (method, target, content_type + "|" + accept)
        head = self._lean_heads.get(key)
        if head is None:
            pool = self._pool_for()
            lines = [f"{method} {target} HTTP/1.1", f"Host: {pool.host_header.decode()}",
                     *(f"{k}: {v}" for k, v in {**self._headers, **({"Accept": accept} if accept else {})}.items())]
            if content_type:
                lines.append(f"Content-Type: {content_type}")
            head = ("\r\n".join(lines) + "\r\n").encode("latin-1")
            if len(self._lean_heads) >= 16_384:
                self._lean_heads.clear()
            self._lean_heads[key] = head
        length = b"Content-Length: %d\r\n\r\n" % (len(data) if data is not None else 0)
        status, raw = await self._pool_for().request(head + length, data)
        if status >= 400:
            raise _error_from_body(status, raw)
        return raw

    def _pool_for(self) -> http1.Pool:
        if self._pool is None:
            self._pool = http1.Pool(self.base_url, ssl=self._ssl, limit=self._max_connections, timeout=REQUEST_TIMEOUT)
        return self._pool

    async def _fetch_discovery(self, path: str, accept: str) -> bytes:
        return await self.request("GET", path, accept=accept)

    async def discover(self) -> tuple[res.ResourceKind, ...]:
        """Read discovery (`self.mapper.refresh()`): afterwards the custom resources it lists resolve
        by name too (`client.get("widgets.example.com", ...)`). Returns them."""
        return await self.mapper.refresh()

    def resolve(self, kind: res.ResourceKind | str) -> res.ResourceKind:
        """`resolve` with this client's discovery."""
        return resolve(kind, mapper=self.mapper)

    async def _json(self, method: str, path: str, *, metadata_only: bool = False, **kw: Any) -> dict[str, Any]:
        raw = await self.request(method, path, **kw)
        if metadata_only:
            return {"metadata": _decode_metadata(raw).metadata} if raw else {}
        out = _decode_any(raw) if raw else {}
        return out if isinstance(out, dict) else {"items": out}

    # ------------------------------------------------------------------ reads

    async def get(self, kind: res.ResourceKind | str, name: str, *, namespace: str = "",
                  subresource: str = "") -> dict[str, Any]:
        k = self.resolve(kind)
        return await self._json("GET", object_path(k, namespace=namespace, name=name,
                                                   subresource=subresource))

    async def list_page(self, kind: res.ResourceKind | str, *, namespace: str | None = None,
                        label_selector: str = "", field_selector: str = "", limit: int | None = LIST_PAGE,
                        continue_: str = "", resource_version: str | None = None) -> ObjectList:
        k = self.resolve(kind)
        params: dict[str, str] = {}
        if label_selector:
            params["labelSelector"] = label_selector
        if field_selector:
            params["fieldSelector"] = field_selector
        if limit:
            params["limit"] = str(limit)
        if continue_:
            params["continue"] = continue_
        elif resource_version is not None:
            params["resourceVersion"] = resource_version
        raw = await self.request("GET", object_path(k, namespace=namespace), params=params)
        return _decode_list(raw)

    async def list(self, kind: res.ResourceKind | str, *, namespace: str | None = None,
                   label_selector: str = "", field_selector: str = "", limit: int = LIST_PAGE,
                   resource_version: str | None = None) -> ObjectList:
        """Every matching object, following `continue` tokens; one consistent snapshot."""
        page = await self.list_page(kind, namespace=namespace, label_selector=label_selector,
                                    field_selector=field_selector, limit=limit,
                                    resource_version=resource_version)
        items = list(page.items)
        while page.metadata.continue_:
            page = await self.list_page(kind, namespace=namespace, label_selector=label_selector,
                                        field_selector=field_selector, limit=limit,
                                        continue_=page.metadata.continue_)
            items.extend(page.items)
        return ObjectList(kind=page.kind, api_version=page.api_version,
                          metadata=ListMeta(resource_version=page.metadata.resource_version), items=items)

    def watch(self, kind: res.ResourceKind | str, *, namespace: str | None = None,
              resource_version: str | None = None, send_initial_events: bool = False,
              allow_bookmarks: bool = True, label_selector: str = "", field_selector: str = "",
              timeout_seconds: int | None = None, read_timeout: float | None = None) -> WatchStream:
        """A watch stream. `send_initial_events=True` asks for a watch-list: ADDED for every
        current object, then a BOOKMARK annotated `k8s.io/initial-events-end`, then changes.
        Servers without watch-list answer 422 (`errors.Invalid`)."""
        k = self.resolve(kind)
        params = {"watch": "true"}
        if allow_bookmarks or send_initial_events:
            params["allowWatchBookmarks"] = "true"
        if send_initial_events:
            params["sendInitialEvents"] = "true"
            params["resourceVersionMatch"] = "NotOlderThan"
            params["resourceVersion"] = resource_version or ""
        elif resource_version is not None:
            params["resourceVersion"] = resource_version
        if label_selector:
            params["labelSelector"] = label_selector
        if field_selector:
            params["fieldSelector"] = field_selector
        if timeout_seconds is not None:
            params["timeoutSeconds"] = str(timeout_seconds)
        return WatchStream(self, object_path(k, namespace=namespace), params, read_timeout)

    # ------------------------------------------------------------------ writes

    @staticmethod
    def _write_params(field_manager: str | None, dry_run: bool) -> dict[str, str]:
        params: dict[str, str] = {}
        if field_manager:
            params["fieldManager"] = field_manager
        if dry_run:
            params["dryRun"] = "All"
        return params

    async def create(self, kind: res.ResourceKind | str, obj: Mapping[str, Any], *,
                     namespace: str | None = None, field_manager: str | None = None,
                     dry_run: bool = False, metadata_only: bool = False) -> dict[str, Any]:
        """POST. `metadata_only`: return `{"metadata": ...}` of the created object only (cheaper)."""
        k = self.resolve(kind)
        ns = namespace if namespace is not None else str((obj.get("metadata") or {}).get("namespace") or "")
        return await self._json("POST", object_path(k, namespace=ns), body=dict(obj),
                                params=self._write_params(field_manager, dry_run), metadata_only=metadata_only)

    async def update(self, kind: res.ResourceKind | str, obj: Mapping[str, Any], *, subresource: str = "",
                     field_manager: str | None = None, dry_run: bool = False,
                     metadata_only: bool = False) -> dict[str, Any]:
        """PUT the whole object; its `metadata.resourceVersion` is the precondition (409 on change)."""
        k = self.resolve(kind)
        meta = obj.get("metadata") or {}
        path = object_path(k, namespace=str(meta.get("namespace") or ""), name=str(meta.get("name") or ""),
                           subresource=subresource)
        return await self._json("PUT", path, body=dict(obj), params=self._write_params(field_manager, dry_run),
                                metadata_only=metadata_only)

    async def update_status(self, kind: res.ResourceKind | str, obj: Mapping[str, Any], *,
                            field_manager: str | None = None) -> dict[str, Any]:
        return await self.update(kind, obj, subresource="status", field_manager=field_manager)

    async def patch(self, kind: res.ResourceKind | str, name: str, patch: Any, *, namespace: str = "",
                    patch_type: str = "merge", subresource: str = "", field_manager: str | None = None,
                    force: bool | None = None, dry_run: bool = False, metadata_only: bool = False) -> dict[str, Any]:
        """PATCH with `patch_type` merge | strategic | json | apply (apply needs `field_manager`)."""
        k = self.resolve(kind)
        try:
            content_type = PATCH_TYPES[patch_type]
        except KeyError:
            raise ValueError(f"patch_type must be one of {sorted(PATCH_TYPES)}") from None
        params = self._write_params(field_manager, dry_run)
        if force is not None:
            params["force"] = "true" if force else "false"
        return await self._json("PATCH", object_path(k, namespace=namespace, name=name, subresource=subresource),
                                body=patch, content_type=content_type, params=params, metadata_only=metadata_only)

    async def delete(self, kind: res.ResourceKind | str, name: str, *, namespace: str = "",
                     propagation_policy: str | None = None, preconditions: Mapping[str, str] | None = None,
                     grace_period_seconds: int | None = None, dry_run: bool = False) -> dict[str, Any]:
        """DELETE one object. Returns the object (still present: finalizers, grace) or a Status."""
        k = self.resolve(kind)
        return await self._json("DELETE", object_path(k, namespace=namespace, name=name),
                                body=_delete_options(propagation_policy, preconditions,
                                                     grace_period_seconds, dry_run))

    async def delete_collection(self, kind: res.ResourceKind | str, *, namespace: str = "",
                                label_selector: str = "", field_selector: str = "",
                                propagation_policy: str | None = None) -> dict[str, Any]:
        k = self.resolve(kind)
        params: dict[str, str] = {}
        if label_selector:
            params["labelSelector"] = label_selector
        if field_selector:
            params["fieldSelector"] = field_selector
        return await self._json("DELETE", object_path(k, namespace=namespace), params=params,
                                body=_delete_options(propagation_policy, None, None, False))

    # ------------------------------------------------------------------ subresources

    async def get_scale(self, kind: res.ResourceKind | str, name: str, *, namespace: str) -> dict[str, Any]:
        return await self.get(kind, name, namespace=namespace, subresource="scale")

    async def update_scale(self, kind: res.ResourceKind | str, scale: Mapping[str, Any]) -> dict[str, Any]:
        """PUT an autoscaling/v1 Scale (its resourceVersion, when set, is the precondition)."""
        k = self.resolve(kind)
        meta = scale.get("metadata") or {}
        body = {"kind": "Scale", "apiVersion": "autoscaling/v1", **dict(scale)}
        path = object_path(k, namespace=str(meta.get("namespace") or ""), name=str(meta.get("name") or ""),
                           subresource="scale")
        return await self._json("PUT", path, body=body)

    async def bind(self, *, namespace: str, name: str, node: str, uid: str = "") -> None:
        """POST pods/binding: assign the pod to `node` (as the scheduler does)."""
        meta: dict[str, Any] = {"name": name, "namespace": namespace}
        if uid:
            meta["uid"] = uid
        body = {"kind": "Binding", "apiVersion": "v1", "metadata": meta,
                "target": {"kind": "Node", "apiVersion": "v1", "name": node}}
        await self.request("POST", f"/api/v1/namespaces/{namespace}/pods/{name}/binding", body=body)

    async def create_token(self, *, namespace: str, name: str, request: Mapping[str, Any]) -> dict[str, Any]:
        """POST serviceaccounts/token (a TokenRequest): the TokenRequest back, its `status.token` set."""
        return await self._json("POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
                                body=dict(request))

    async def finalize_namespace(self, namespace: Mapping[str, Any]) -> dict[str, Any]:
        """PUT /api/v1/namespaces/{name}/finalize with the namespace's (edited) spec.finalizers."""
        name = str((namespace.get("metadata") or {}).get("name") or "")
        return await self._json("PUT", f"/api/v1/namespaces/{name}/finalize", body=dict(namespace))

    async def create_event(self, event: Mapping[str, Any]) -> dict[str, Any]:
        ns = str((event.get("metadata") or {}).get("namespace") or "default")
        return await self._json("POST", f"/api/v1/namespaces/{ns}/events", body=dict(event))


def _loopback(url: str) -> bool:
    """A server on this machine, which no proxy from the environment is asked for (client-go's rule)."""
    import ipaddress

    host = yarl.URL(url).host or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _ssl_context(ep: kubeconfigs.Endpoint) -> ssl.SSLContext | bool | None:
    if not ep.server.startswith("https"):
        return None
    if ep.insecure_skip_tls_verify:
        return False
    ctx = ssl.create_default_context(
        cadata=base64.b64decode(ep.ca_data).decode() if ep.ca_data else None)
    if ep.client_cert_data and ep.client_key_data:
        with tempfile.TemporaryDirectory() as tmp:
            cert, key = Path(tmp) / "cert.pem", Path(tmp) / "key.pem"
            cert.write_bytes(base64.b64decode(ep.client_cert_data))
            key.write_bytes(base64.b64decode(ep.client_key_data))
            key.chmod(0o600)
            ctx.load_cert_chain(cert, key)
    return ctx


def _delete_options(policy: str | None, preconditions: Mapping[str, str] | None, grace: int | None,
                    dry_run: bool) -> dict[str, Any]:
    opts: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
    if policy:
        opts["propagationPolicy"] = policy
    if preconditions:
        opts["preconditions"] = dict(preconditions)
    if grace is not None:
        opts["gracePeriodSeconds"] = grace
    if dry_run:
        opts["dryRun"] = ["All"]
    return opts


def served(verbs: Iterable[str]) -> list[res.ResourceKind]:
    """The served kinds that support every verb in `verbs`."""
    need = set(verbs)
    return [k for k in res.KINDS if need <= set(k.verbs)]
