"""The middleware: authentication, impersonation, limits, authorization and the request timeout,
in kube-apiserver's handler-chain order (see `api.auth`)."""

from __future__ import annotations

import asyncio
import contextvars
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import structlog
from aiohttp import web

from api import codec
from api import state as st
from api.auth import cookies
from api.auth.config import AuthConfig
from api.auth.requestinfo import RequestInfo, attributes, request_info
from api.fairness import too_many_requests
from cp import errors, rbac

logger = structlog.get_logger("cplane.auth")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

USER_INFO = st.USER_INFO
REQUEST_INFO = web.RequestKey("request_info", RequestInfo)

# The identity (and request verb) of the request being served, for admission checks that run inside
# the store. Set and reset by the middleware around each request.
CURRENT: contextvars.ContextVar[tuple[rbac.UserInfo, str] | None] = contextvars.ContextVar(
    "cplane_current_user", default=None)

ANONYMOUS_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/version", "/version/"})
_PROBES = ("/healthz/", "/livez/", "/readyz/")  # one named check each: also anonymous, never queued


def _unauthorized() -> errors.Unauthorized:
    return errors.Unauthorized("Unauthorized")


def _anonymous_path(path: str) -> bool:
    return path in ANONYMOUS_PATHS or path.startswith(_PROBES)


async def _cookie_user(config: AuthConfig, request: web.Request, info: RequestInfo) -> rbac.UserInfo | None:
    """The user of the web UI's `cplane-token` cookie (`api.ui.login`), taken as a bearer token when
    the request has neither an `Authorization` header nor a client certificate; None without a valid one."""
    if "Authorization" in request.headers or info.path in cookies.OPEN_PATHS:
        return None
    token = cookies.token_of(request.headers.get("Cookie", ""))
    if token is None:
        return None
    assert config.authenticator is not None
    return (await config.authenticator.review(token)).user


def _product(request: web.Request) -> str:
    """The product of a User-Agent (`kubectl/v1.37.1 (linux/amd64) ...` -> `kubectl`): without
    authentication everyone is the same user, so this tells the flows apart."""
    return request.headers.get("User-Agent", "").split("/", 1)[0].split(" ", 1)[0]


def forbid(attrs: rbac.Attributes, reason: str = "") -> errors.Forbidden:
    message, details = rbac.forbidden(attrs, reason)
    return errors.Forbidden(message, details=details or None)


def _extra_key(encoded: str) -> str:
    """The user-extra key an `Impersonate-Extra-<key>` header names: lower-cased, then percent-decoded
    (client-go escapes what a header name cannot carry, so `authentication.kubernetes.io/node-name`
    travels as `Authentication.kubernetes.io%2fnode-Name`). As upstream's unescapeExtraKey, a key that
    is not valid percent-encoding (or not UTF-8 once decoded) is kept as it came."""
    key = encoded.lower()
    if "%" not in key:
        return key
    try:
        return urllib.parse.unquote(key, errors="strict") if _valid_escapes(key) else key
    except UnicodeDecodeError:
        return key


def _valid_escapes(text: str) -> bool:
    """Every `%` starts a two-digit hex escape (Go's url.PathUnescape refuses the string otherwise)."""
    return all(len(part) >= 2 and all(c in "0123456789abcdef" for c in part[:2])
               for part in text.split("%")[1:])


def _impersonate(config: AuthConfig, request: web.Request, user: rbac.UserInfo) -> rbac.UserInfo:
    """Impersonate-User / -Group / -Uid / -Extra-* (endpoints/filters/impersonation.go)."""
    headers = request.headers
    name = headers.get("Impersonate-User")
    groups = headers.getall("Impersonate-Group", [])
    uid = headers.get("Impersonate-Uid")
    extras: dict[str, list[str]] = {}
    for k in dict.fromkeys(k.lower() for k in headers):  # each header once, with all of its values
        if k.startswith("impersonate-extra-"):
            extras.setdefault(_extra_key(k[len("impersonate-extra-"):]), []).extend(headers.getall(k))
    if name is None:
        if groups or uid is not None or extras:
            raise errors.BadRequest("requested impersonation of groups, uid or extra without impersonating a user")
        return user
    checks: list[rbac.Attributes] = []
    sa = rbac.split_service_account(name)
    if sa is not None:
        checks.append(rbac.Attributes(user=user, verb="impersonate", resource="serviceaccounts",
                                      namespace=sa[0], name=sa[1]))
    else:
        checks.append(rbac.Attributes(user=user, verb="impersonate", resource="users", name=name))
    checks.extend(rbac.Attributes(user=user, verb="impersonate", resource="groups", name=g) for g in groups)
    if uid is not None:
        checks.append(rbac.Attributes(user=user, verb="impersonate", api_group="authentication.k8s.io",
                                      resource="uids", name=uid))
    for key, values in extras.items():
        checks.extend(rbac.Attributes(user=user, verb="impersonate", api_group="authentication.k8s.io",
                                      resource="userextras", subresource=key, name=v) for v in values)
    for attrs in checks:
        if not config.authorize(attrs).allowed:
            raise forbid(attrs)
    out_groups = list(groups)
    if sa is not None:
        out_groups.extend(g for g in rbac.service_account_groups(sa[0]) if g not in out_groups)
    if name == rbac.ANONYMOUS:
        if rbac.UNAUTHENTICATED not in out_groups:
            out_groups.append(rbac.UNAUTHENTICATED)
    elif rbac.AUTHENTICATED not in out_groups:
        out_groups.append(rbac.AUTHENTICATED)
    return rbac.UserInfo(name=name, uid=uid or "", groups=tuple(out_groups),
                         extra={k: tuple(v) for k, v in extras.items()})


def middleware(config: AuthConfig) -> Any:
    limits = config.limits

    @web.middleware
    async def _auth(request: web.Request, handler: Handler) -> web.StreamResponse:
        info = request_info(request.method, request.path, request.query)
        request[REQUEST_INFO] = info
        if config.authenticator is not None:
            try:
                user = await config.authenticator.authenticate(request)
            except Exception:
                logger.warning("authentication_error", path=request.path)
                user = None
            by_cookie = None
            if user is not None and user.name == rbac.ANONYMOUS:  # no credentials: the UI's cookie?
                by_cookie = await _cookie_user(config, request, info)
                user = by_cookie or user
            if user is None or (user.name == rbac.ANONYMOUS and not _anonymous_path(info.path)
                                and info.path not in cookies.OPEN_PATHS):
                audit = request.get(st.AUDIT)
                if audit is not None:  # its event names no user
                    audit.unauthenticated(attributes(rbac.UserInfo(name=""), info))
                raise _unauthorized()
            audit = request.get(st.AUDIT)
            if audit is not None:
                audit.authenticated(attributes(user, info), long_running=info.long_running)
            if by_cookie is not None and cookies.forged(
                    method=request.method, header=request.headers.get(cookies.HEADER),
                    origin=request.headers.get("Origin"), own_origin=f"{request.scheme}://{request.host}",
                    upgrade="Upgrade" in request.headers):
                raise errors.Forbidden(f"a request authenticated by the {cookies.COOKIE} cookie must come from "
                                       f"this server's pages and send the header {cookies.HEADER}: 1 with a "
                                       f"{request.method}")
            if any(k.lower().startswith("impersonate-") for k in request.headers):
                user = _impersonate(config, request, user)
                if audit is not None:
                    audit.impersonated(user)
        else:
            user = rbac.UserInfo(name="system:admin", groups=(rbac.MASTERS, rbac.AUTHENTICATED))
            audit = request.get(st.AUDIT)
            if audit is not None:
                audit.authenticated(attributes(user, info), long_running=info.long_running)
        request[USER_INFO] = user
        request[st.USER] = user.name
        token = CURRENT.set((user, info.verb))
        try:
            if info.long_running:
                if config.watches.get(user.name, 0) >= limits.max_watches_per_user:
                    raise too_many_requests()
                authorize(request, user, info)
                config.watches[user.name] = config.watches.get(user.name, 0) + 1
                try:
                    return await handler(request)
                finally:
                    left = config.watches.get(user.name, 1) - 1
                    if left > 0:
                        config.watches[user.name] = left
                    else:
                        config.watches.pop(user.name, None)
            if _anonymous_path(info.path):  # probes: never queued, never refused
                authorize(request, user, info)
                return await handler(request)
            return await _seated(request, user, info, handler)
        except RecursionError:
            raise errors.BadRequest(f"the request is nested too deeply (more than {limits.max_depth} "
                                    "levels)") from None
        finally:
            CURRENT.reset(token)

    def authorize(request: web.Request, user: rbac.UserInfo, info: RequestInfo) -> None:
        if config.authenticator is not None and not (not info.resource_request and cookies.ui_path(info.path)):
            attrs = attributes(user, info)
            decision = config.authorize(attrs)
            audit = request.get(st.AUDIT)
            if audit is not None:
                audit.authorized(decision)
            if not decision.allowed:
                raise forbid(attrs, decision.reason)

    async def _seated(request: web.Request, user: rbac.UserInfo, info: RequestInfo,
                      handler: Handler) -> web.StreamResponse:
        """A request that is not a watch: its body is read first (bounded in time and, over all
        clients, in bytes), so that a slow upload holds no seat; then it takes a seat of its pool
        (fairly among flows), is authorized and served under the request timeout."""
        task = asyncio.current_task()
        assert task is not None
        deadlines = config.deadlines
        buffered = 0
        if request.body_exists:
            buffered = await _read_body(request, task)
        pool = config.writes if info.mutating else config.reads
        flow = user.name if config.authenticator is not None else f"{user.name}/{_product(request)}"
        try:
            await pool.acquire(flow)
            try:
                authorize(request, user, info)
                deadlines.enter(task)
                try:
                    return await handler(request)
                except asyncio.CancelledError:
                    if deadlines.leave(task) and not task.cancelling():  # by the deadline sweep only
                        raise _timed_out() from None
                    raise
                except TimeoutError:
                    raise _timed_out() from None
                finally:
                    deadlines.leave(task)
            finally:
                pool.release(flow)
        finally:
            config.buffered_body_bytes -= buffered

    async def _read_body(request: web.Request, task: asyncio.Task[Any]) -> int:
        """Read the body into `codec.BODY` within `body_timeout`; the bytes it holds, counted in
        `config.buffered_body_bytes` (the caller gives them back)."""
        declared = request.content_length or 0
        if config.buffered_body_bytes + declared > limits.max_buffered_body_bytes:
            raise too_many_requests()
        deadlines = config.deadlines
        deadlines.enter(task, at=asyncio.get_running_loop().time() + limits.body_timeout)
        try:
            body = await codec.read_body(request)
        except asyncio.CancelledError:
            if deadlines.leave(task) and not task.cancelling():
                raise _timed_out() from None
            raise
        finally:
            deadlines.leave(task)
        size = max(len(body), declared)
        if config.buffered_body_bytes + size > limits.max_buffered_body_bytes:
            raise too_many_requests()
        config.buffered_body_bytes += size
        request[codec.BODY] = body
        return size

    return _auth


def _timed_out() -> errors.Timeout:
    return errors.Timeout("Timeout: request did not complete within requested timeout - context deadline exceeded",
                          details={"retryAfterSeconds": 0})


def redact(headers: Mapping[str, str]) -> dict[str, str]:
    """Headers safe to log."""
    return {k: ("<redacted>" if k.lower() in ("authorization", "cookie", "proxy-authorization") else v)
            for k, v in headers.items()}
