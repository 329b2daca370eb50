"""Authentication, authorization, admission and limits for the API server (issue #10).

The request path, as kube-apiserver's handler chain orders it:

1. request info (`request_info`): verb, API group, resource, subresource, namespace, name, or a
   non-resource path — parsed from the URL alone, before routing;
2. authentication (`Authenticator`): a bearer token (the generated admin token, `--token-auth-file`
   CSV entries, or a ServiceAccount token signed by this server), else a client certificate signed by
   the CA (verified by TLS), else `system:anonymous` — which only the health endpoints accept; any
   other request without valid credentials is 401 `Unauthorized`. `Impersonate-*` headers then switch
   identity if RBAC grants `impersonate`;
3. limits: at most `max_inflight` (`max_mutating_inflight` for writes) requests at once and at most
   `max_watches_per_user` open watches per user, else 429 `TooManyRequests` with `Retry-After`;
4. authorization: `system:masters` may do anything; everyone else gets what RBAC
   (`cp/rbac.py` over the stored Roles, ClusterRoles and bindings) grants, else 403 `Forbidden`
   with upstream's message;
5. a timeout (`request_timeout`) around everything but watches: 504 `Timeout`.

Admission (`AdmittingStore`, a `api.store.Store` whose writes pass through `admit_*`): DRA
`adminAccess` only in namespaces labelled `resource.kubernetes.io/admin-access: "true"`; granular
ResourceClaim status authorization (`resourceclaims/binding` for allocation/reservedFor,
`resourceclaims/driver` per driver for status.devices); RBAC object validation and escalation
prevention (`escalate`/`bind`); nesting depth and encoded size bounds.

Secrets never reach logs: tokens are compared, never logged, and nothing here writes them to the
event log. See docs/security.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import csv
import hmac
import io
import os
import ssl
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import msgspec
import structlog
from aiohttp import web

from api import codec
from api import state as st
from api import store as stores
from cp import errors, rbac
from cp import resources as res
from storage import log

logger = structlog.get_logger("cplane.auth")

_decode = msgspec.json.Decoder().decode
_encode = msgspec.json.Encoder().encode

USER_INFO = web.RequestKey("user_info", rbac.UserInfo)
REQUEST_INFO = web.RequestKey("request_info", object)

# The identity (and request verb) of the request being served, for admission checks that run inside
# the store. Set and reset by the middleware around each request.
CURRENT: contextvars.ContextVar[tuple[rbac.UserInfo, str] | None] = contextvars.ContextVar(
    "cplane_current_user", default=None)

ADMIN_USER = "cplane-admin"
ISSUER = "https://cplane.local/serviceaccounts"
NODE_NAME_EXTRA = "authentication.kubernetes.io/node-name"
ADMIN_ACCESS_LABEL = "resource.kubernetes.io/admin-access"
ANONYMOUS_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/version", "/version/"})
LONG_RUNNING_VERBS = frozenset({"watch", "proxy"})


class Limits(msgspec.Struct, kw_only=True):
    """Bounds on what one client can make the server do (kube-apiserver defaults where it has one)."""

    max_inflight: int = 400  # --max-requests-inflight
    max_mutating_inflight: int = 200  # --max-mutating-requests-inflight
    max_watches_per_user: int = 10_000  # bounded; upstream has no per-user cap (APF), controllers hold many
    request_timeout: float = 60.0  # --request-timeout (not for watches)
    max_depth: int = 100  # nesting of objects (maps and lists) in a request body or stored object
    max_object_bytes: int = 1536 * 1024  # etcd's default --max-request-bytes


# ---------------------------------------------------------------------------------------- request info


class RequestInfo(msgspec.Struct, kw_only=True):
    """kube-apiserver's RequestInfo (endpoints/request/requestinfo.go), from the URL alone."""

    resource_request: bool
    path: str
    verb: str
    api_group: str = ""
    api_version: str = ""
    namespace: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""

    @property
    def long_running(self) -> bool:
        return self.resource_request and self.verb in LONG_RUNNING_VERBS

    @property
    def mutating(self) -> bool:
        return self.verb in ("create", "update", "patch", "delete", "deletecollection", "post", "put")


_METHOD_VERBS = {"POST": "create", "GET": "get", "HEAD": "get", "PUT": "update", "PATCH": "patch",
                 "DELETE": "delete"}
_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})


def _name_from_field_selector(selector: str) -> str:
    for term in selector.split(","):
        for op in ("==", "="):
            key, sep, value = term.partition(op)
            if sep and key.strip() == "metadata.name" and not key.endswith("!"):
                value = value.strip()
                if value and value not in (".", "..") and "/" not in value and "%" not in value:
                    return value
                return ""
    return ""


def request_info(method: str, path: str, query: Mapping[str, str]) -> RequestInfo:
    parts = [p for p in path.split("/") if p]
    non_resource = RequestInfo(resource_request=False, path=path, verb=method.lower())
    if len(parts) < 3 or parts[0] not in ("api", "apis"):
        return non_resource
    prefix, parts = parts[0], parts[1:]
    group = ""
    if prefix == "apis":
        if len(parts) < 3:
            return non_resource
        group, parts = parts[0], parts[1:]
    version, parts = parts[0], parts[1:]
    if parts[0] in ("watch", "proxy"):
        if len(parts) < 2:
            return non_resource
        verb, parts, via_method = parts[0], parts[1:], False
    else:
        verb, via_method = _METHOD_VERBS.get(method.upper(), ""), True
    namespace = ""
    if parts[0] == "namespaces":
        if len(parts) > 1:
            namespace = parts[1]
            if len(parts) > 2 and parts[2] not in _NAMESPACE_SUBRESOURCES:
                parts = parts[2:]
    info = RequestInfo(resource_request=True, path=path, verb=verb, api_group=group, api_version=version,
                       namespace=namespace)
    if len(parts) >= 3 and verb not in ("proxy",):
        info.subresource = parts[2]
    if len(parts) >= 2:
        info.name = parts[1]
    info.resource = parts[0]
    if via_method and not info.name and info.verb == "get":
        watch = query.get("watch")
        watching = False
        if watch is not None:
            try:
                watching = bool(codec.parse_bool("watch", watch))
            except errors.StatusError:
                watching = watch.lower() not in ("false", "0")
        info.verb = "watch" if watching else "list"
        selector = query.get("fieldSelector", "")
        if selector:
            info.name = _name_from_field_selector(selector)
    if via_method and not info.name and info.verb == "delete":
        info.verb = "deletecollection"
    return info


def attributes(user: rbac.UserInfo, info: RequestInfo) -> rbac.Attributes:
    return rbac.Attributes(user=user, verb=info.verb, resource_request=info.resource_request,
                           namespace=info.namespace, api_group=info.api_group, api_version=info.api_version,
                           resource=info.resource, subresource=info.subresource, name=info.name,
                           path=info.path)


# ---------------------------------------------------------------------------------------- credentials


class Credentials(msgspec.Struct, kw_only=True):
    """What `cplane serve` keeps in DATA_DIR/pki (every file mode 0600)."""

    dir: Path
    ca_cert: bytes
    ca_key: bytes
    serving_cert: Path
    serving_key: Path
    sa_key: bytes
    admin_token: str

    def ca_data(self) -> str:
        import base64

        return base64.b64encode(self.ca_cert).decode()


def _write_secret(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(path.parent, 0o700)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(tmp, 0o600)
    tmp.replace(path)


def _san_set(cert_pem: bytes) -> set[str]:
    from cryptography import x509

    from cp import certs

    try:
        cert = certs.load_cert(cert_pem)
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except Exception:  # noqa: BLE001 - an unreadable certificate is replaced
        return set()
    out = {str(n) for n in san.get_values_for_type(x509.DNSName)}
    out |= {str(ip) for ip in san.get_values_for_type(x509.IPAddress)}
    return out


def ensure_credentials(data_dir: Path, *, hosts: Iterable[str] = (), now: float | None = None) -> Credentials:
    """Create (first start) or load the CA, the serving certificate (re-issued when a new host is
    served or it is about to expire), the ServiceAccount signing key and the admin token."""
    from cp import certs  # cryptography loads only when serving TLS (~0.1 s of imports)

    now = time.time() if now is None else now
    pki = data_dir / "pki"
    ca_crt, ca_key = pki / "ca.crt", pki / "ca.key"
    if not (ca_crt.exists() and ca_key.exists()):
        cert, key = certs.new_ca(now=now)
        _write_secret(ca_key, key)
        _write_secret(ca_crt, cert)
    ca_cert_pem, ca_key_pem = ca_crt.read_bytes(), ca_key.read_bytes()
    srv_crt, srv_key = pki / "apiserver.crt", pki / "apiserver.key"
    wanted = {h.strip("[]") for h in hosts if h and h not in ("0.0.0.0", "::")} | {"localhost", "127.0.0.1", "::1"}
    renew = not (srv_crt.exists() and srv_key.exists())
    if not renew:
        current = srv_crt.read_bytes()
        renew = not wanted <= _san_set(current)
        if not renew:
            expires = certs.load_cert(current).not_valid_after_utc.timestamp()
            renew = expires - now < 30 * certs.DAY
    if renew:
        cert, key = certs.new_serving_cert(ca_cert_pem, ca_key_pem, hosts=sorted(wanted), now=now)
        _write_secret(srv_key, key)
        _write_secret(srv_crt, cert)
    sa_key = pki / "sa.key"
    if not sa_key.exists():
        _write_secret(sa_key, certs.key_pem(certs.new_key()))
    token_file = pki / "admin.token"
    if not token_file.exists():
        _write_secret(token_file, certs.random_token().encode())
    return Credentials(dir=pki, ca_cert=ca_cert_pem, ca_key=ca_key_pem, serving_cert=srv_crt, serving_key=srv_key,
                       sa_key=sa_key.read_bytes(), admin_token=token_file.read_text().strip())


def server_ssl_context(creds: Credentials) -> ssl.SSLContext:
    """TLS 1.2+ with the serving certificate; client certificates are optional and, when sent, must
    chain to the CA."""
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cadata=creds.ca_cert.decode())
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(str(creds.serving_cert), str(creds.serving_key))
    ctx.verify_mode = ssl.CERT_OPTIONAL
    return ctx


def client_ssl_context(ca_cert: bytes, *, cert: bytes = b"", key: bytes = b"") -> ssl.SSLContext:
    import tempfile

    ctx = ssl.create_default_context(cadata=ca_cert.decode())
    if cert and key:
        with tempfile.TemporaryDirectory() as tmp:
            c, k = Path(tmp) / "c.pem", Path(tmp) / "k.pem"
            c.write_bytes(cert)
            _write_secret(k, key)
            ctx.load_cert_chain(str(c), str(k))
    return ctx


def parse_token_file(text: str) -> dict[str, rbac.UserInfo]:
    """kube-apiserver's --token-auth-file: `token,user,uid[,"group1,group2"]` per line."""
    out: dict[str, rbac.UserInfo] = {}
    for lineno, row in enumerate(csv.reader(io.StringIO(text)), start=1):
        if not row or not "".join(row).strip() or row[0].lstrip().startswith("#"):
            continue
        if len(row) < 3:
            raise ValueError(f"token file line {lineno}: expected token,user,uid[,groups]")
        token, user, uid = (c.strip() for c in row[:3])
        if not token or not user:
            raise ValueError(f"token file line {lineno}: empty token or user")
        groups = tuple(g.strip() for g in row[3].split(",") if g.strip()) if len(row) > 3 else ()
        if token in out:
            raise ValueError(f"token file line {lineno}: duplicate token")
        out[token] = rbac.UserInfo(name=user, uid=uid, groups=groups)
    return out


# ---------------------------------------------------------------------------------------- authentication


class Authenticator:
    """Bearer tokens (static + ServiceAccount JWTs) and verified client certificates."""

    def __init__(self, *, tokens: Mapping[str, rbac.UserInfo] | None = None, sa_key: bytes = b"",
                 issuer: str = ISSUER, clock: Callable[[], float] = time.time) -> None:
        self._tokens = dict(tokens or {})
        self._sa_key = sa_key
        self._public = None
        if sa_key:
            from cp import certs

            self._public = certs.load_key(sa_key).public_key()
        self.issuer = issuer
        self._clock = clock

    def add_token(self, token: str, user: rbac.UserInfo) -> None:
        self._tokens[token] = user

    def mint(self, namespace: str, name: str, *, node: str = "", ttl: float | None = None,
             uid: str = "") -> str:
        """A ServiceAccount token for `system:serviceaccount:NAMESPACE:NAME`."""
        from cp import certs

        if not self._sa_key:
            raise ValueError("this server has no ServiceAccount signing key")
        now = int(self._clock())
        claims: dict[str, Any] = {
            "iss": self.issuer, "sub": rbac.service_account_user(namespace, name), "iat": now, "nbf": now,
            "jti": certs.random_token(12),
            "kubernetes.io": {"namespace": namespace, "serviceaccount": {"name": name, "uid": uid}},
        }
        if ttl is not None:
            claims["exp"] = now + int(ttl)
        if node:
            claims["kubernetes.io"]["node"] = {"name": node}
        return certs.sign_token(self._sa_key, claims)

    def _token_user(self, token: str) -> rbac.UserInfo | None:
        for known, user in self._tokens.items():
            if hmac.compare_digest(known.encode(), token.encode()):
                return _with_group(user, rbac.AUTHENTICATED)
        if self._public is None or token.count(".") != 2:
            return None
        from cp import certs

        claims = certs.verify_token(self._public, token, now=self._clock(), issuer=self.issuer)
        if claims is None:
            return None
        split = rbac.split_service_account(str(claims.get("sub") or ""))
        k8s = claims.get("kubernetes.io") if isinstance(claims.get("kubernetes.io"), dict) else {}
        if split is None or k8s.get("namespace") != split[0]:
            return None
        ns, _name = split
        extra: dict[str, tuple[str, ...]] = {}
        if claims.get("jti"):
            extra["authentication.kubernetes.io/credential-id"] = (f"JTI={claims['jti']}",)
        node = (k8s.get("node") or {}).get("name") if isinstance(k8s.get("node"), dict) else None
        if node:
            extra[NODE_NAME_EXTRA] = (str(node),)
        uid = str((k8s.get("serviceaccount") or {}).get("uid") or "") if isinstance(
            k8s.get("serviceaccount"), dict) else ""
        return rbac.UserInfo(name=str(claims["sub"]), uid=uid,
                             groups=(*rbac.service_account_groups(ns), rbac.AUTHENTICATED), extra=extra)

    def authenticate(self, request: web.BaseRequest) -> rbac.UserInfo | None:
        """The request's identity; None when it carries credentials that are not valid."""
        header = request.headers.get("Authorization")
        if header is not None:
            scheme, _, token = header.strip().partition(" ")
            token = token.strip()
            if scheme.lower() == "bearer" and token:
                return self._token_user(token)
            # Other schemes (basic): not supported, so not authenticated by this header.
            if scheme.lower() != "bearer":
                return self._from_cert(request)
            return None
        return self._from_cert(request)

    @staticmethod
    def _from_cert(request: web.BaseRequest) -> rbac.UserInfo | None:
        transport = request.transport
        ssl_obj = transport.get_extra_info("ssl_object") if transport is not None else None
        if ssl_obj is not None:
            from cp import certs

            found = certs.identity_from_peercert(ssl_obj.getpeercert())
            if found is not None:
                user, groups = found
                return rbac.UserInfo(name=user, groups=(*groups, rbac.AUTHENTICATED))
        return rbac.UserInfo(name=rbac.ANONYMOUS, groups=(rbac.UNAUTHENTICATED,))


def _with_group(user: rbac.UserInfo, group: str) -> rbac.UserInfo:
    if group in user.groups:
        return user
    return rbac.UserInfo(name=user.name, uid=user.uid, groups=(*user.groups, group), extra=user.extra)


# ---------------------------------------------------------------------------------------- policy cache


RBAC_KINDS = {"roles": "Role", "clusterroles": "ClusterRole", "rolebindings": "RoleBinding",
              "clusterrolebindings": "ClusterRoleBinding"}


class PolicyCache:
    """The RBAC objects of the event log, in memory: loaded at start, then kept current by the
    store's own writes (write-through) and by subscriptions (writes from other processes)."""

    def __init__(self) -> None:
        self.policy = rbac.Policy()
        self._revisions: dict[tuple[str, str, str], int] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self.revision = 0

    def apply(self, ev: log.Event) -> None:
        if ev.group != rbac.GROUP or ev.resource not in RBAC_KINDS:
            return
        key = (ev.resource, ev.namespace, ev.name)
        if self._revisions.get(key, 0) >= ev.revision:
            return
        self._revisions[key] = ev.revision
        kind = RBAC_KINDS[ev.resource]
        if ev.type == "DELETED":
            self.policy.remove(kind, ev.namespace, ev.name)
            return
        try:
            obj = _decode(ev.object)
        except msgspec.DecodeError:
            return
        if isinstance(obj, dict):
            obj.setdefault("kind", kind)
            self.policy.put(obj)

    async def load(self, event_log: log.EventLog) -> None:
        revision = event_log.revision
        for resource in RBAC_KINDS:
            result = await event_log.list_objects(group=rbac.GROUP, resource=resource, namespace=None)
            for ev in result.events:
                self.apply(ev)
            revision = min(revision, result.revision) if revision else result.revision
        self.revision = revision

    def follow(self, event_log: log.EventLog) -> None:
        for resource in RBAC_KINDS:
            self._tasks.append(asyncio.get_running_loop().create_task(
                self._follow(event_log, resource), name=f"auth:rbac:{resource}"))

    async def _follow(self, event_log: log.EventLog, resource: str) -> None:
        after = self.revision
        while True:
            try:
                sub = await event_log.subscribe(group=rbac.GROUP, resource=resource, namespace=None, after=after)
            except log.ExpiredError:
                await self.load(event_log)
                after = self.revision
                continue
            try:
                while True:
                    batch = await sub.next_batch(timeout=30.0)
                    if batch is None:
                        break
                    for ev in batch:
                        self.apply(ev)
                        after = max(after, ev.revision)
            finally:
                sub.close()
            await asyncio.sleep(0.1)

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()


# ---------------------------------------------------------------------------------------- configuration


class _Deadlines:
    """The request timeout without a timer per request (`asyncio.timeout` was ~5 % of a create's
    time): requests register their deadline, and one sweep every `interval` cancels those past it.
    A request thus times out between `timeout` and `timeout + interval` after it began."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.interval = max(0.01, min(1.0, timeout / 2))
        self._deadlines: dict[asyncio.Task[Any], float] = {}
        self.expired: set[asyncio.Task[Any]] = set()
        self._sweep_handle: asyncio.TimerHandle | None = None

    def enter(self, task: asyncio.Task[Any]) -> None:
        loop = task.get_loop()
        self._deadlines[task] = loop.time() + self.timeout
        if self._sweep_handle is None:
            self._sweep_handle = loop.call_later(self.interval, self._sweep, loop)

    def leave(self, task: asyncio.Task[Any]) -> bool:
        """Unregister (idempotent); True when the sweep had cancelled it (that cancel is withdrawn)."""
        self._deadlines.pop(task, None)
        if task not in self.expired:
            return False
        self.expired.discard(task)
        task.uncancel()
        return True

    def _sweep(self, loop: asyncio.AbstractEventLoop) -> None:
        self._sweep_handle = None
        now = loop.time()
        for task, deadline in list(self._deadlines.items()):
            if deadline <= now and task not in self.expired:
                self.expired.add(task)
                task.cancel()
        if self._deadlines:
            self._sweep_handle = loop.call_later(self.interval, self._sweep, loop)


class AuthConfig:
    """How a server authenticates, authorizes and limits. `AuthConfig.insecure()` authenticates
    nobody (everyone is the admin) but keeps the limits: `cplane serve --insecure`."""

    def __init__(self, *, authenticator: Authenticator | None, limits: Limits | None = None,
                 credentials: Credentials | None = None, bootstrap_policy: bool = True) -> None:
        self.authenticator = authenticator
        self.limits = limits or Limits()
        self.credentials = credentials
        self.bootstrap_policy = bootstrap_policy
        self.cache = PolicyCache()
        self.inflight = 0
        self.mutating_inflight = 0
        self.watches: dict[str, int] = {}
        self.deadlines = _Deadlines(self.limits.request_timeout)

    @property
    def secure(self) -> bool:
        return self.authenticator is not None

    @classmethod
    def insecure(cls, limits: Limits | None = None) -> AuthConfig:
        return cls(authenticator=None, limits=limits)

    @classmethod
    def from_credentials(cls, creds: Credentials, *, token_file: str | None = None,
                         limits: Limits | None = None) -> AuthConfig:
        tokens = {creds.admin_token: rbac.UserInfo(name=ADMIN_USER, groups=(rbac.MASTERS,))}
        if token_file:
            for token, user in parse_token_file(Path(token_file).read_text()).items():
                tokens.setdefault(token, user)
        return cls(authenticator=Authenticator(tokens=tokens, sa_key=creds.sa_key), limits=limits,
                   credentials=creds)

    def authorize(self, attrs: rbac.Attributes) -> rbac.Decision:
        if rbac.MASTERS in attrs.user.groups:
            return rbac.Decision(True, "allowed: system:masters")
        return self.cache.policy.authorize(attrs)

    def allowed(self, user: rbac.UserInfo, verb: str, *, group: str = "", resource: str = "",
                subresource: str = "", namespace: str = "", name: str = "") -> bool:
        return self.authorize(rbac.Attributes(user=user, verb=verb, api_group=group, resource=resource,
                                              subresource=subresource, namespace=namespace,
                                              name=name)).allowed


AUTH = web.AppKey("auth", AuthConfig)


# ---------------------------------------------------------------------------------------- middleware


def _unauthorized() -> errors.Unauthorized:
    return errors.Unauthorized("Unauthorized")


def _too_many() -> errors.TooManyRequests:
    return errors.TooManyRequests("Too many requests, please try again later.",
                                  details={"retryAfterSeconds": 1}, headers={"Retry-After": "1"})


def _forbid(attrs: rbac.Attributes, reason: str = "") -> errors.Forbidden:
    message, details = rbac.forbidden(attrs, reason)
    return errors.Forbidden(message, details=details or None)


def _impersonate(config: AuthConfig, request: web.Request, user: rbac.UserInfo) -> rbac.UserInfo:
    """Impersonate-User / -Group / -Uid / -Extra-* (endpoints/filters/impersonation.go)."""
    headers = request.headers
    name = headers.get("Impersonate-User")
    groups = headers.getall("Impersonate-Group", [])
    uid = headers.get("Impersonate-Uid")
    extras = {k[len("Impersonate-Extra-"):].lower(): headers.getall(k)
              for k in headers if k.lower().startswith("impersonate-extra-")}
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
            raise _forbid(attrs)
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
    async def _auth(request: web.Request, handler: Any) -> web.StreamResponse:
        info = request_info(request.method, request.path, request.query)
        request[REQUEST_INFO] = info
        if config.authenticator is not None:
            try:
                user = config.authenticator.authenticate(request)
            except Exception:  # noqa: BLE001 - never let a credential reach a traceback in the logs
                logger.warning("authentication_error", path=request.path)
                user = None
            if user is None:
                raise _unauthorized()
            if user.name == rbac.ANONYMOUS and info.path not in ANONYMOUS_PATHS:
                raise _unauthorized()
            if any(k.lower().startswith("impersonate-") for k in request.headers):
                user = _impersonate(config, request, user)
        else:
            user = rbac.UserInfo(name="system:admin", groups=(rbac.MASTERS, rbac.AUTHENTICATED))
        request[USER_INFO] = user
        request[st.USER] = user.name
        if info.long_running:
            if config.watches.get(user.name, 0) >= limits.max_watches_per_user:
                raise _too_many()
        elif info.path not in ANONYMOUS_PATHS:
            if config.inflight >= limits.max_inflight or \
                    (info.mutating and config.mutating_inflight >= limits.max_mutating_inflight):
                raise _too_many()
        if config.authenticator is not None:
            attrs = attributes(user, info)
            decision = config.authorize(attrs)
            if not decision.allowed:
                raise _forbid(attrs, decision.reason)
        token = CURRENT.set((user, info.verb))
        try:
            if info.long_running:
                config.watches[user.name] = config.watches.get(user.name, 0) + 1
                try:
                    return await handler(request)
                finally:
                    left = config.watches.get(user.name, 1) - 1
                    if left > 0:
                        config.watches[user.name] = left
                    else:
                        config.watches.pop(user.name, None)
            config.inflight += 1
            if info.mutating:
                config.mutating_inflight += 1
            task = asyncio.current_task()
            assert task is not None
            deadlines = config.deadlines
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
                config.inflight -= 1
                if info.mutating:
                    config.mutating_inflight -= 1
        except RecursionError:
            raise errors.BadRequest(f"the request is nested too deeply (more than {limits.max_depth} "
                                    "levels)") from None
        finally:
            CURRENT.reset(token)

    return _auth


def _timed_out() -> errors.Timeout:
    return errors.Timeout("Timeout: request did not complete within requested timeout - context deadline exceeded",
                          details={"retryAfterSeconds": 0})


# ---------------------------------------------------------------------------------------- admission


def _depth_exceeds(obj: Any, limit: int) -> bool:
    """Whether objects/arrays nest deeper than `limit` (recursion is bounded by `limit` itself)."""
    def deeper(value: Any, depth: int) -> bool:
        if depth > limit:
            return True
        for child in (value.values() if type(value) is dict else value):
            kind = type(child)
            if (kind is dict or kind is list) and deeper(child, depth + 1):
                return True
        return False

    kind = type(obj)
    return (kind is dict or kind is list) and deeper(obj, 1)


def _name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    return str(meta.get("name") or "") if isinstance(meta, dict) else ""


def _invalid(kind: res.ResourceKind, name: str, causes: list[errors.Cause]) -> errors.Invalid:
    return errors.Invalid(kind=kind.kind, group=kind.group, name=name, causes=causes)


def _admin_requests(obj: Mapping[str, Any], template: bool) -> str | None:
    """The field path of the first request asking for adminAccess, if any."""
    spec = obj.get("spec") or {}
    prefix = "spec"
    if template:
        spec = spec.get("spec") or {} if isinstance(spec, dict) else {}
        prefix = "spec.spec"
    devices = spec.get("devices") if isinstance(spec, dict) else None
    requests = devices.get("requests") if isinstance(devices, dict) else None
    for i, req in enumerate(requests if isinstance(requests, list) else []):
        exactly = req.get("exactly") if isinstance(req, dict) else None
        if isinstance(exactly, dict) and exactly.get("adminAccess") is True:
            return f"{prefix}.devices.requests[{i}].adminAccess"
    return None


def _device_key(entry: Mapping[str, Any]) -> tuple[str, str, str, str]:
    return (str(entry.get("driver") or ""), str(entry.get("pool") or ""), str(entry.get("device") or ""),
            str(entry.get("shareID") or ""))


def _changed_drivers(old: list[Any], new: list[Any]) -> set[str]:
    before = {_device_key(e): e for e in old if isinstance(e, dict)}
    after = {_device_key(e): e for e in new if isinstance(e, dict)}
    return {key[0] for key in before.keys() | after.keys() if before.get(key) != after.get(key)}


def _allocated_node(claim: Mapping[str, Any]) -> str:
    """The single node a claim's allocation is restricted to (metadata.name In [node]), else ""."""
    allocation = (claim.get("status") or {}).get("allocation") or {}
    terms = ((allocation.get("nodeSelector") or {}).get("nodeSelectorTerms") or []) if isinstance(
        allocation, dict) else []
    nodes: set[str] = set()
    for term in terms if isinstance(terms, list) else []:
        for req in (term.get("matchFields") or []) if isinstance(term, dict) else []:
            if isinstance(req, dict) and req.get("key") == "metadata.name" and req.get("operator") == "In":
                nodes.update(str(v) for v in req.get("values") or [])
    return next(iter(nodes)) if len(nodes) == 1 else ""


class AdmittingStore(stores.Store):
    """The generic store plus this module's admission checks. `config` None: only the checks that
    do not depend on who writes (DRA adminAccess, RBAC object validation)."""

    config: AuthConfig | None = None

    async def _append(self, write: log.Write) -> log.Event:
        event = await super()._append(write)
        if self.config is not None and event.group == rbac.GROUP:
            self.config.cache.apply(event)
        return event

    async def create(self, kind: res.ResourceKind, namespace: str, obj: dict[str, Any],
                     ctx: stores.WriteContext, **kw: Any) -> stores.Result:
        self._bounds(obj)
        if kind.group == rbac.GROUP:
            rbac.default_subjects(obj)
            self._admit_rbac(kind, namespace, obj, None)
        if kind.group == "resource.k8s.io" and kind.plural in ("resourceclaims", "resourceclaimtemplates"):
            path = _admin_requests(obj, template=kind.plural == "resourceclaimtemplates")
            if path is not None:
                await self._admit_admin_access(kind, namespace, obj, path)
        return await super().create(kind, namespace, obj, ctx, **kw)

    def _prepare_update(self, kind: res.ResourceKind, new: dict[str, Any], old: dict[str, Any],
                        ctx: stores.WriteContext, **kw: Any) -> dict[str, Any]:
        if kind.group == rbac.GROUP:
            rbac.default_subjects(new)
        out = super()._prepare_update(kind, new, old, ctx, **kw)
        self._bounds(out)
        if kind.group == rbac.GROUP:
            old_meta = old.get("metadata") if isinstance(old.get("metadata"), dict) else {}
            self._admit_rbac(kind, str(old_meta.get("namespace") or ""), out, old)
        if kind.group == "resource.k8s.io" and kind.plural == "resourceclaims" and kw.get("subresource") == "status":
            self._admit_claim_status(kind, out, old)
        return out

    async def update_scale(self, kind: res.ResourceKind, namespace: str, name: str,
                           scale_mutate: Callable[[dict[str, Any]], dict[str, Any]],
                           ctx: stores.WriteContext) -> dict[str, Any]:
        """A patched Scale must still be shaped like one (a hostile patch can make metadata a list)."""
        def checked(scale: dict[str, Any]) -> dict[str, Any]:
            out = scale_mutate(scale)
            if not isinstance(out, dict) or not all(isinstance(out.get(k) or {}, dict) for k in ("metadata", "spec")):
                raise errors.BadRequest("the body of the request was not a valid autoscaling/v1 Scale")
            return out

        return await super().update_scale(kind, namespace, name, checked, ctx)

    # -- bounds

    def _bounds(self, obj: dict[str, Any]) -> None:
        if self.config is None:
            return
        limits = self.config.limits
        if _depth_exceeds(obj, limits.max_depth):
            raise errors.BadRequest(f"the object is nested too deeply (more than {limits.max_depth} levels)")
        size = len(_encode(obj))
        if size > limits.max_object_bytes:
            raise errors.RequestEntityTooLarge(
                f"Request entity too large: the object is {size} bytes, limit is {limits.max_object_bytes}")

    # -- DRA

    async def _admit_admin_access(self, kind: res.ResourceKind, namespace: str, obj: dict[str, Any],
                                  path: str) -> None:
        ns = await self.log.get(group="", resource="namespaces", namespace="", name=namespace)
        labels = ((_decode(ns.object).get("metadata") or {}).get("labels") or {}) if ns is not None else {}
        if labels.get(ADMIN_ACCESS_LABEL) != "true":
            raise _invalid(kind, _name(obj), [errors.Cause(
                "Forbidden", path, f"admin access to devices requires the `{ADMIN_ACCESS_LABEL}: true` label "
                "on the containing namespace")])

    def _admit_claim_status(self, kind: res.ResourceKind, new: dict[str, Any], old: dict[str, Any]) -> None:
        """Granular status authorization (DRAResourceClaimGranularStatusAuthorization)."""
        current = CURRENT.get()
        if self.config is None or not self.config.secure or current is None:
            return
        user, verb = current
        if rbac.MASTERS in user.groups:
            return
        verb = verb if verb in ("update", "patch") else "update"
        meta = new.get("metadata") or {}
        ns, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        new_status, old_status = new.get("status") or {}, old.get("status") or {}
        if new_status.get("allocation") != old_status.get("allocation") or \
                new_status.get("reservedFor") != old_status.get("reservedFor"):
            attrs = rbac.Attributes(user=user, verb=verb, api_group=kind.group, resource="resourceclaims",
                                    subresource="binding", namespace=ns, name=name)
            if not self.config.authorize(attrs).allowed:
                raise _forbid(attrs)
        drivers = _changed_drivers(list(old_status.get("devices") or []), list(new_status.get("devices") or []))
        if not drivers:
            return
        node = _allocated_node(new) or _allocated_node(old)
        user_nodes = user.extra.get(NODE_NAME_EXTRA, ())
        for driver in sorted(drivers):
            arbitrary = rbac.Attributes(user=user, verb=f"arbitrary-node:{verb}", api_group=kind.group,
                                        resource="resourceclaims", subresource="driver", namespace=ns,
                                        name=driver)
            if self.config.authorize(arbitrary).allowed:
                continue
            if node and node in user_nodes:
                associated = rbac.Attributes(user=user, verb=f"associated-node:{verb}", api_group=kind.group,
                                             resource="resourceclaims", subresource="driver", namespace=ns,
                                             name=driver)
                if self.config.authorize(associated).allowed:
                    continue
            raise _forbid(arbitrary)

    # -- RBAC

    def _admit_rbac(self, kind: res.ResourceKind, namespace: str, obj: dict[str, Any],
                    old: dict[str, Any] | None) -> None:
        obj.setdefault("kind", kind.kind)
        name = _name(obj)
        current = CURRENT.get()
        if self.config is None or not self.config.secure or current is None:
            return
        user, _verb = current
        if rbac.MASTERS in user.groups:
            return
        if old is not None and _only_gc_fields(obj, old):
            return
        policy = self.config.cache.policy
        if kind.kind in ("Role", "ClusterRole"):
            if self.config.allowed(user, "escalate", group=rbac.GROUP, resource=kind.plural, namespace=namespace,
                                   name=name):
                return
            listed = obj.get("rules")
            rules = [r for r in listed if isinstance(r, dict)] if isinstance(listed, list) else []
        else:
            ref = obj.get("roleRef") if isinstance(obj.get("roleRef"), dict) else {}
            ref_resource = "roles" if ref.get("kind") == "Role" else "clusterroles"
            if self.config.allowed(user, "bind", group=rbac.GROUP, resource=ref_resource,
                                   namespace=namespace if ref_resource == "roles" else namespace,
                                   name=str(ref.get("name") or "")):
                return
            try:
                rules = policy.role_ref_rules(ref, namespace)
            except KeyError as exc:
                raise errors.Forbidden(f'{kind.group_resource} "{name}" is forbidden: {exc.args[0]}',
                                       details={"name": name, "group": kind.group, "kind": kind.plural}) from None
        owner, _errs = policy.rules_for(user, namespace)
        ok, missing = rbac.covers(owner, rules)
        if not ok:
            raise errors.Forbidden(f'{kind.group_resource} "{name}" is forbidden: '
                                   f"{rbac.escalation_message(user, missing)}",
                                   details={"name": name, "group": kind.group, "kind": kind.plural})


def _only_gc_fields(new: Mapping[str, Any], old: Mapping[str, Any]) -> bool:
    """Upstream skips escalation checks for updates that touch only finalizers/ownerReferences."""
    a, b = dict(new), dict(old)
    ma, mb = dict(a.pop("metadata", None) or {}), dict(b.pop("metadata", None) or {})
    for m in (ma, mb):
        for key in ("finalizers", "ownerReferences", "resourceVersion", "managedFields", "generation"):
            m.pop(key, None)
    return a == b and ma == mb


def store_class(config: AuthConfig | None) -> type[stores.Store]:
    return type("AdmittingStore", (AdmittingStore,), {"config": config})


# ---------------------------------------------------------------------------------------- bootstrap


async def bootstrap_policy(store: stores.Store) -> None:
    """Create the default ClusterRoles and ClusterRoleBindings; put back the rules/subjects of
    those still annotated `rbac.authorization.kubernetes.io/autoupdate: "true"` (upstream's
    reconciliation, without removing anything an administrator added)."""
    ctx = stores.WriteContext(user=rbac.APISERVER, field_manager="kube-apiserver", user_agent="cplane")
    for obj in [*rbac.default_cluster_roles(), *rbac.default_cluster_role_bindings()]:
        kind = res.lookup(rbac.GROUP, "v1", "clusterroles" if obj["kind"] == "ClusterRole" else "clusterrolebindings")
        assert kind is not None
        name = obj["metadata"]["name"]
        existing = await store.log.get(group=rbac.GROUP, resource=kind.plural, namespace="", name=name)
        if existing is None:
            with contextlib.suppress(errors.AlreadyExists):
                await store.create(kind, "", dict(obj), ctx)
            continue
        current = _decode(existing.object)
        if ((current.get("metadata") or {}).get("annotations") or {}).get(rbac.AUTOUPDATE) != "true":
            continue
        field = "rules" if obj["kind"] == "ClusterRole" else "subjects"
        if obj["kind"] == "ClusterRole":
            missing = [r for r in obj["rules"] if r not in (current.get("rules") or [])]
        else:
            missing = [s for s in obj["subjects"] if s not in (current.get("subjects") or [])]
        if not missing:
            continue
        updated = list(current.get(field) or []) + missing

        def mutate(cur: dict[str, Any], field: str = field, updated: list[Any] = updated) -> dict[str, Any]:
            cur[field] = updated
            return cur

        with contextlib.suppress(errors.StatusError):
            await store.guaranteed_update(kind, "", name, mutate, ctx)


async def start(app: web.Application, *, write_defaults: bool) -> None:
    config = app[AUTH]
    store = app[st.STORE]
    await config.cache.load(store.log)
    if write_defaults and config.secure and config.bootstrap_policy:
        await bootstrap_policy(store)
    config.cache.follow(store.log)


async def stop(app: web.Application) -> None:
    await app[AUTH].cache.stop()


# ---------------------------------------------------------------------------------------- reviews


async def _review_body(request: web.Request) -> dict[str, Any]:
    body = await codec.read_body(request)
    obj = codec.decode_object(body, codec.media_type(request.headers.get("Content-Type")))
    return obj


def _review_user(request: web.Request) -> rbac.UserInfo:
    return request.get(USER_INFO) or rbac.UserInfo(name="system:admin", groups=(rbac.MASTERS,))


async def self_subject_access_review(request: web.Request) -> web.StreamResponse:
    obj = await _review_body(request)
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    ra, nra = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if (ra is None) == (nra is None) or not isinstance(ra or nra, dict):
        raise errors.Invalid(kind="SelfSubjectAccessReview", group="authorization.k8s.io", name="", causes=[
            errors.Cause("Invalid", "spec.resourceAttributes", "exactly one of nonResourceAttributes or "
                         "resourceAttributes must be specified", "null" if ra is None else "{...}")])
    user = _review_user(request)
    if ra is not None:
        attrs = rbac.Attributes(user=user, verb=str(ra.get("verb") or ""), namespace=str(ra.get("namespace") or ""),
                                api_group=str(ra.get("group") or ""), api_version=str(ra.get("version") or ""),
                                resource=str(ra.get("resource") or ""),
                                subresource=str(ra.get("subresource") or ""), name=str(ra.get("name") or ""))
    else:
        attrs = rbac.Attributes(user=user, verb=str(nra.get("verb") or ""), resource_request=False,
                                path=str(nra.get("path") or ""))
    decision = request.app[AUTH].authorize(attrs)
    status: dict[str, Any] = {"allowed": decision.allowed}
    if decision.reason:
        status["reason"] = decision.reason
    meta = dict(obj.get("metadata") or {}) if isinstance(obj.get("metadata"), dict) else {}
    meta.setdefault("creationTimestamp", None)
    out = {"kind": "SelfSubjectAccessReview", "apiVersion": "authorization.k8s.io/v1", "metadata": meta,
           "spec": spec, "status": status}
    return codec.json_response(_encode(out), status=201)


async def self_subject_rules_review(request: web.Request) -> web.StreamResponse:
    obj = await _review_body(request)
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    namespace = str(spec.get("namespace") or "")
    user = _review_user(request)
    rules, errs = request.app[AUTH].cache.policy.rules_for(user, namespace)
    resource_rules: list[dict[str, Any]] = []
    url_rules: list[dict[str, Any]] = []
    if rbac.MASTERS in user.groups:
        resource_rules.append({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]})
        url_rules.append({"verbs": ["*"], "nonResourceURLs": ["*"]})
    for r in rules:
        if r.get("resources"):
            resource_rules.append({k: r[k] for k in ("verbs", "apiGroups", "resources", "resourceNames") if r.get(k)})
        if r.get("nonResourceURLs"):
            url_rules.append({"verbs": r.get("verbs") or [], "nonResourceURLs": r["nonResourceURLs"]})
    status: dict[str, Any] = {"resourceRules": resource_rules, "nonResourceRules": url_rules, "incomplete": False}
    if errs:
        status["evaluationError"] = "; ".join(errs)
    out = {"kind": "SelfSubjectRulesReview", "apiVersion": "authorization.k8s.io/v1",
           "metadata": {"creationTimestamp": None}, "spec": spec, "status": status}
    return codec.json_response(_encode(out), status=201)


async def self_subject_review(request: web.Request) -> web.StreamResponse:
    obj = await _review_body(request)
    user = _review_user(request)
    version = request.match_info.get("version", "v1")
    out = {"kind": "SelfSubjectReview", "apiVersion": f"authentication.k8s.io/{version}",
           "metadata": {**(obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}),
                        "creationTimestamp": None},
           "status": {"userInfo": user.to_status()}}
    return codec.json_response(_encode(out), status=201)


def routes() -> list[web.RouteDef]:
    return [
        web.post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", self_subject_access_review),
        web.post("/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", self_subject_rules_review),
        web.post("/apis/authentication.k8s.io/{version:v1|v1beta1}/selfsubjectreviews", self_subject_review),
    ]


# ---------------------------------------------------------------------------------------- identities


def controller_token(config: AuthConfig, identity: str) -> str:
    """A token for a built-in component: `kube-controller-manager`, `kube-scheduler`, or a
    controller name of controllers/registry.py (its ServiceAccount in kube-system)."""
    assert config.authenticator is not None
    if identity in ("kube-controller-manager", "kube-scheduler"):
        from cp import certs

        token = certs.random_token()
        config.authenticator.add_token(token, rbac.UserInfo(name=f"system:{identity}"))
        return token
    account = rbac.CONTROLLER_ACCOUNTS.get(identity, f"{identity}-controller")
    return config.authenticator.mint("kube-system", account)


def redact(headers: Mapping[str, str]) -> dict[str, str]:
    """Headers safe to log."""
    return {k: ("<redacted>" if k.lower() in ("authorization", "cookie", "proxy-authorization") else v)
            for k, v in headers.items()}


rbac.install_validation()

__all__ = ["AUTH", "AdmittingStore", "AuthConfig", "Authenticator", "Credentials", "Limits", "RequestInfo",
           "bootstrap_policy", "ensure_credentials", "middleware", "request_info", "routes"]
