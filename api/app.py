"""The aiohttp application: routes, middleware, lifecycle.

`make_app(event_log=..., clock=...)` builds a ready-to-run application over any EventLog.
The log's lifecycle (start/close) belongs to the caller (`api.server`), so tests can share one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import structlog
from aiohttp import typedefs, web

from api import audit as audits
from api import (
    codec,
    crds,
    discovery,
    eventlog,
    handlers,
    health,
    limits,
    metrics,
    metrics_apis,
    openapi,
    services,
    storage_errors,
    ui,
    why,
)
from api import state as st
from api import store as stores
from api.admission import certificates, limitranger, policies, priority, resourcequota, storageclass, webhooks
from api.webhooks import client as webhook_clients
from cp import allocation, errors, features, objects, rbac, sim, tables
from cp import clock as clocks
from cp import resources as res
from storage import log

logger = structlog.get_logger("cplane.api")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
Middleware = typedefs.Middleware  # a Protocol: (request, handler) -> response

BOOTSTRAP_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


def _verb(request: web.Request) -> str:
    target = request.get(st.TARGET)
    m = request.method
    if target is None:
        return m.lower()
    if m == "GET":
        if target.name:
            return "get"
        return "watch" if request.query.get("watch") not in (None, "", "0", "false", "False") else "list"
    return {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(
        m, "delete" if target.name else "deletecollection")


@web.middleware
async def _middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    start = time.perf_counter()
    request[st.REQUEST_ID] = request.headers.get("X-Request-Id") or objects.new_request_id()
    request[st.USER] = "system:admin"
    auditor = request.app.get(st.AUDITOR)
    if auditor is not None:
        request[st.AUDIT] = auditor.begin(request, audit_id=request[st.REQUEST_ID])
    code = 500
    resp: web.StreamResponse | None = None
    failure: errors.StatusError | None = None
    panic: BaseException | None = None
    try:
        resp = await handler(request)
        code = resp.status
        return resp
    except errors.StatusError as err:
        code, failure = err.code, err
        return codec.error_response(err, accept=request.headers.get("Accept", ""))
    except web.HTTPException as exc:
        code = exc.status
        if exc.status == 404:
            status: errors.StatusError = errors.NotFound("the server could not find the requested resource")
        elif exc.status == 405:
            status = errors.MethodNotAllowed("the server does not allow this method on the requested resource")
        elif exc.status == 413:
            status = errors.RequestEntityTooLarge("the server has received too large of a request body")
        else:
            status = errors.StatusError(exc.reason or "error")
            status.code = exc.status
            status.reason = exc.reason.replace(" ", "") if exc.reason else "Unknown"
        failure = status
        return codec.error_response(status, accept=request.headers.get("Accept", ""))
    except log.UnavailableError as exc:
        code = 503
        logger.warning("request_failed", path=request.path, method=request.method, code=code,
                       error_type=type(exc).__name__, error=str(exc))
        failure = storage_errors.unavailable(exc)
        return codec.error_response(failure, accept=request.headers.get("Accept", ""))
    except asyncio.CancelledError:
        code = 499
        raise
    except ConnectionResetError:
        if request.transport is None or request.transport.is_closing():  # the client went away
            code = 499
            raise
        logger.exception("request_failed", path=request.path, method=request.method)
        failure = errors.InternalError("an error on the server has prevented the request from succeeding")
        return codec.status_response(failure)
    except Exception as exc:
        panic = exc
        logger.exception("request_failed", path=request.path, method=request.method)
        return codec.status_response(errors.InternalError(
            "an error on the server has prevented the request from succeeding"))
    finally:
        _observe(request, code, time.perf_counter() - start)
        if auditor is not None:
            request[st.AUDIT].complete(code=code, response=resp, failure=failure.status() if failure else None,
                                       panic=panic, cancelled=code == 499)


def _observe(request: web.Request, code: int, seconds: float) -> None:
    target = request.get(st.TARGET)
    verb = _verb(request)
    group = target.kind.group if target else ""
    resource = target.kind.plural if target else request.path
    sub = target.subresource if target else ""
    if target is not None:
        request.app[st.METRICS].observe_request(verb=verb.upper(), group=group, resource=resource,
                                                subresource=sub, code=code, seconds=seconds)
    if request.path.startswith(health.PATHS) or request.path == "/metrics":
        return
    # Node heartbeats (Lease renewals) are the bulk of a fleet's traffic: log them at debug.
    quiet = resource == "leases" and code < 400
    if not logger.is_enabled_for(logging.DEBUG if quiet else logging.INFO):
        return  # skip building the line's fields
    emit = logger.debug if quiet else logger.info
    emit(
        "request", verb=verb, group=group, resource=resource, subresource=sub,
        namespace=target.namespace if target else "", name=target.name if target else "",
        code=code, duration_ms=round(seconds * 1000, 3), user_agent=request.headers.get("User-Agent", ""),
        kubectl_command=request.headers.get("Kubectl-Command", ""), request_id=request[st.REQUEST_ID],
        user=request.get(st.USER, ""),
    )


async def _version(request: web.Request) -> web.StreamResponse:
    return codec.json_response(discovery.version())


async def _api_root(request: web.Request) -> web.StreamResponse:
    if discovery.wants_aggregated(request.headers.get("Accept", "")):
        return web.Response(body=discovery.aggregated(request.app[st.STORE].registry, True),
                            headers={"Content-Type": discovery.AGGREGATED_CT, "Vary": "Accept"})
    return await handlers.handle_core(request)


async def _apis_root(request: web.Request) -> web.StreamResponse:
    if discovery.wants_aggregated(request.headers.get("Accept", "")):
        return web.Response(body=discovery.aggregated(request.app[st.STORE].registry, False),
                            headers={"Content-Type": discovery.AGGREGATED_CT, "Vary": "Accept"})
    return await handlers.handle_group(request)


async def _metrics(request: web.Request) -> web.StreamResponse:
    return web.Response(body=request.app[st.METRICS].render(),
                        headers={"Content-Type": "text/plain; version=0.0.4; charset=utf-8"})


async def _not_found(request: web.Request) -> web.StreamResponse:
    raise errors.NotFound("the server could not find the requested resource")


def server_context() -> stores.WriteContext:
    """How the server writes objects of its own (the default namespaces, system PriorityClasses,
    quota usage charged at admission): as kube-apiserver's loopback client."""
    return stores.WriteContext(user="system:apiserver", field_manager="kube-apiserver", user_agent="kube-apiserver")


# The built-in admission plugins, by kube-apiserver's names, in its order.
ADMISSION_PLUGINS = ("LimitRanger", "ServiceAccount", "Priority", "DefaultStorageClass", "CertificateApproval",
                     "MutatingAdmissionPolicy", "MutatingAdmissionWebhook", "ValidatingAdmissionPolicy", "ValidatingAdmissionWebhook",
                     "ResourceQuota")


def install_admission(store: stores.Store, *, authorize: certificates.Authorize | None = None,
                      service_accounts: bool = False, disabled: frozenset[str] = frozenset(),
                      webhook_client: webhook_clients.WebhookClient | None = None) -> None:
    """The built-in admission plugins, in kube-apiserver's order (LimitRanger, ServiceAccount,
    Priority, DefaultStorageClass, ..., ResourceQuota last of the validating ones). `authorize`: the server's authorizer,
    for the plugins that check the writer's permissions (CertificateApproval). `service_accounts`:
    the ServiceAccount plugin (`cplane serve`; off in the test sandbox, which runs no controller to
    create the `default` accounts it requires). `disabled`: plugin names left out
    (`--disable-admission-plugins`). `webhook_client`: how the admission webhooks are called (the
    app's, closed with it); without one, no webhook plugin is installed."""
    if "LimitRanger" not in disabled:
        store.admission.add(limitranger.LimitRangerPlugin(event_log=store.log))
    if service_accounts and "ServiceAccount" not in disabled:
        from api.admission import serviceaccount

        store.admission.add(serviceaccount.ServiceAccountPlugin())
    if "Priority" not in disabled:
        store.admission.add(priority.PriorityPlugin(writer=server_context))
    if "DefaultStorageClass" not in disabled:
        store.admission.add(storageclass.DefaultStorageClassPlugin())
    if authorize is not None and "CertificateApproval" not in disabled:
        store.admission.add(certificates.CertificateApprovalPlugin(authorize=authorize))
    if "MutatingAdmissionPolicy" not in disabled:
        store.admission.add(policies.MutatingAdmissionPolicyPlugin(event_log=store.log, authorize=authorize,
                                                                   resolve_param_kind=store.registry.by_kind))
    if webhook_client is not None and "MutatingAdmissionWebhook" not in disabled:
        store.admission.add(webhooks.MutatingWebhookPlugin(event_log=store.log, client=webhook_client,
                                                           authorize=authorize))
    if "ValidatingAdmissionPolicy" not in disabled:
        store.admission.add(policies.ValidatingAdmissionPolicyPlugin(event_log=store.log, authorize=authorize,
                                                                     resolve_param_kind=store.registry.by_kind))
        # the policy status controller's type checking, done by the server (also without controllers)
        store.hooks[(policies.GROUP, policies.VALIDATING)] = policies.TypeCheckingStatus(writer=server_context)
    if webhook_client is not None and "ValidatingAdmissionWebhook" not in disabled:
        store.admission.add(webhooks.ValidatingWebhookPlugin(event_log=store.log, client=webhook_client,
                                                             authorize=authorize))
    if "ResourceQuota" not in disabled:
        store.admission.add(resourcequota.ResourceQuotaPlugin(event_log=store.log, writer=server_context))


async def bootstrap(store: stores.Store) -> None:
    """Create the namespaces and system PriorityClasses every cluster has (idempotent)."""
    ctx = server_context()
    for name in BOOTSTRAP_NAMESPACES:
        if await store.log.get(group="", resource="namespaces", namespace="", name=name) is None:
            ns_kind = res.lookup("", "v1", "namespaces")
            assert ns_kind is not None
            with contextlib.suppress(errors.AlreadyExists):
                await store.create(ns_kind, "", {"metadata": {"name": name}}, ctx)
    await priority.ensure_system_classes(store, ctx)
    if isinstance(store.clock, clocks.VirtualClock):
        await _bootstrap_clock(store, ctx)


async def _bootstrap_clock(store: stores.Store, ctx: stores.WriteContext) -> None:
    """A virtual clock resumes from its object in the log, or records where it starts."""
    assert isinstance(store.clock, clocks.VirtualClock)
    existing = await store.log.get(group=res.SIM_GROUP, resource="clocks", namespace="", name=sim.CLOCK_NAME)
    if existing is not None:
        store.clock.set(sim.clock_time(codec.decoder.decode(existing.object)))
        return
    kind = res.lookup(res.SIM_GROUP, res.SIM_VERSION, "clocks")
    assert kind is not None
    body = {"metadata": {"name": sim.CLOCK_NAME},
            "spec": {"mode": "Virtual", "time": clocks.rfc3339_micro(store.clock.now())}}
    with contextlib.suppress(errors.AlreadyExists):
        await store.create(kind, "", body, ctx)


async def _close_webhook_client(app: web.Application) -> None:
    await app[st.WEBHOOK_CLIENT].close()


async def _shutdown_watches(app: web.Application) -> None:
    watches = app[st.WATCHES]
    for task in list(watches):
        task.cancel()


async def _deprecation_warning(request: web.Request, response: web.StreamResponse) -> None:
    """Upstream's warning on every request of a deprecated API version (`deprecation.WarningMessage`,
    e.g. resource.k8s.io/v1beta2 while `--runtime-config` serves it); registered only when the server
    serves one."""
    target = request.get(st.TARGET)
    if target is not None:
        text = res.deprecation_warning(target.kind)
        if text:
            response.headers.add("Warning", f'299 - "{text}"')


async def _audit_headers(request: web.Request, response: web.StreamResponse) -> None:
    """With an audit log: the `Audit-Id` header, and the ResponseStarted event of a long-running request."""
    audit = request.get(st.AUDIT)
    if audit is not None:
        response.headers["Audit-Id"] = audit.audit_id
        audit.started(response.status)


def _default_audit_attributes(request: web.Request) -> tuple[rbac.Attributes, bool]:
    """A request's attributes where the app authenticates nobody: everyone is the admin."""
    from api.auth import requestinfo

    info = requestinfo.request_info(request.method, request.path, request.query)
    user = rbac.UserInfo(name="system:admin", groups=(rbac.MASTERS, rbac.AUTHENTICATED))
    return requestinfo.attributes(user, info), info.long_running


def make_app(*, event_log: log.EventLog, clock: clocks.Clock | None = None, bootstrap_objects: bool = True,
             middlewares: Sequence[Middleware] = (), routes: Sequence[web.RouteDef] = (),
             auth: Any = None, service_ranges: allocation.ServiceRanges | None = None,
             service_accounts: bool = False, disabled_admission: frozenset[str] = frozenset(),
             feature_gates: features.FeatureGates | None = None, runtime_config: Any = None,
             table_cache_bytes: int | None = None, audit: audits.Auditor | None = None) -> web.Application:
    """Extension points (used by the replay server, `api/replay.py`):
    - `bootstrap_objects=False`: serve the log as it is; no default namespaces or Clock object are
      created at start-up (a replay must not write);
    - `middlewares`: run inside the standard one, so a `cp.errors.StatusError` they raise becomes a
      Status response, logged and counted like any other;
    - `routes`: matched before every other route (e.g. `/apis/sim.cplane.dev/v1alpha1/replay/...`);
    - `auth`: an `api.auth.AuthConfig` (issue #10): authentication, RBAC, limits and the self-subject
      reviews; None serves everyone as the admin, as before. Admission checks that do not depend
      on the user (DRA adminAccess, RBAC object validation) apply either way;
    - `service_ranges`: the Services' cluster IP and node port ranges (kube-apiserver's defaults if None).
    - `service_accounts`: the ServiceAccount admission plugin (pods run as an existing account, with
      its token volume), as kube-apiserver enables it by default (`cplane serve`).
    - `disabled_admission`: built-in admission plugins left out (`--disable-admission-plugins`).
    - `feature_gates`: the gates the server runs with (`--feature-gates`; None: 1.37's defaults): which
      gated API versions are served and which gated fields are kept (`cp.features`).
    - `runtime_config`: the API versions switched on or off (`--runtime-config`, a
      `cp.runtimeconfig.RuntimeConfig`; None: the default ones).
    - `table_cache_bytes`: the memory budget of the Table rows kept between requests
      (`cp.tables.RowCache`; None: its default; `cplane serve` gives half of `--watch-cache-memory`).
    - `audit`: the audit policy and log (`--audit-policy-file`, `--audit-log-path`: `api.audit`), closed
      with the app; None records nothing.
    """
    from api import auth as auths

    if auth is not None:
        middlewares = [auths.middleware(auth), *middlewares]
        routes = [*auths.routes(), *routes]
    else:
        from api.auth import reviews

        routes = [*reviews.routes(secure=False), *routes]
    chain: list[Middleware] = [_middleware, *middlewares]
    # Request bodies are read as sent, as kube-apiserver does (it has no request Content-Encoding): aiohttp
    # would otherwise inflate a gzip body, and keep inflating a refused one while it drains the connection.
    app = web.Application(middlewares=chain, client_max_size=codec.MAX_BODY + 1,
                          handler_args={"auto_decompress": False})
    the_clock = clock or clocks.RealClock()
    app[st.CLOCK] = the_clock
    app[st.STORE] = auths.store_class(auth)(event_log=event_log, clock=the_clock,
                                            registry=res.Registry(features=feature_gates,
                                                                              runtime=runtime_config))
    ranges = service_ranges or allocation.ServiceRanges()
    app[st.SERVICE_RANGES] = ranges
    app[st.BOOTSTRAP] = bootstrap_objects
    app[st.STORE].hooks[("", "services")] = services.ServiceAllocator(ranges=ranges, writer=server_context)
    app[st.WEBHOOK_CLIENT] = webhook_clients.WebhookClient(event_log=event_log)
    install_admission(app[st.STORE], authorize=(lambda attrs: auth.authorize(attrs).allowed)
                      if auth is not None and auth.secure else None, service_accounts=service_accounts,
                      disabled=disabled_admission, webhook_client=app[st.WEBHOOK_CLIENT])
    if auth is not None:
        app[auths.AUTH] = auth
    app[st.WATCHES] = set()
    app[st.METRICS] = metrics.Metrics(revision=lambda: float(event_log.revision),
                                       features=app[st.STORE].registry.features)
    app[st.READY] = asyncio.Event()
    app[st.TABLE_ROWS] = (tables.RowCache() if table_cache_bytes is None
                          else tables.RowCache(max_bytes=table_cache_bytes))
    app[st.PROTOBUF_ITEMS] = codec.ProtobufItems()
    the_limits = auth.limits if auth is not None else limits.Limits()
    app[st.LIMITS] = the_limits
    app[st.WATCH_WRITES] = limits.Deadlines(the_limits.watch_write_timeout)

    app[st.DEFINITIONS] = crds.Definitions(app[st.STORE], writer=server_context, write=bootstrap_objects)

    async def _on_startup(app: web.Application) -> None:
        if bootstrap_objects:
            await bootstrap(app[st.STORE])
        if auth is not None:
            await auths.start(app, write_defaults=bootstrap_objects)
        await app[st.DEFINITIONS].start()
        app[st.READY].set()

    async def _on_cleanup(app: web.Application) -> None:
        await app[st.DEFINITIONS].stop()

    app.on_startup.append(_on_startup)
    app.on_cleanup.append(_on_cleanup)
    if any(res.deprecation_warning(k) for k in app[st.STORE].registry.gated_kinds()):
        app.on_response_prepare.append(_deprecation_warning)
    if audit is not None:
        audit.clock = the_clock
        audit.default_attributes = None if auth is not None else _default_audit_attributes
        app[st.AUDITOR] = audit
        app.on_response_prepare.append(_audit_headers)

        async def _close_audit(app: web.Application) -> None:
            await app[st.AUDITOR].close()

        app.on_cleanup.append(_close_audit)
    app.on_shutdown.append(_shutdown_watches)
    app.on_cleanup.append(_close_webhook_client)
    if auth is not None:
        app.on_cleanup.append(auths.stop)
    r = app.router
    r.add_routes(routes)
    r.add_routes(metrics_apis.routes())  # metrics.k8s.io, custom/external metrics, /apis discovery (issue #7)
    r.add_routes(why.routes())  # GET .../pods/{name}/why in sim.cplane.dev (issue #12)
    r.add_routes(eventlog.routes())  # GET .../eventlog[/density|/history] in sim.cplane.dev (issue #26)
    for path in ("/version", "/version/"):
        r.add_get(path, _version)
    for path in ("/api", "/api/"):
        r.add_get(path, _api_root)
    for path in ("/apis", "/apis/"):
        r.add_get(path, _apis_root)
    r.add_route("*", "/api/{tail:.*}", handlers.handle_core)
    r.add_route("*", "/apis/{tail:.*}", handlers.handle_group)
    r.add_routes(health.routes())  # /healthz, /livez, /readyz and their checks
    r.add_get("/metrics", _metrics)
    r.add_routes(openapi.routes())  # /openapi/v2 (JSON and protobuf) and /openapi/v3
    r.add_routes(ui.routes())  # the web UI's files, login and logout under /ui/ (issue #26)
    r.add_route("*", "/{tail:.*}", _not_found)
    return app
