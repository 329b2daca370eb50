"""Running an API server: open the event log, serve HTTP, write the kubeconfig, shut down cleanly."""

from __future__ import annotations

import contextlib
import ipaddress
import os
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
from aiohttp import web

from api import app as apps
from api import connections, services
from api import state as st
from api.limits import Limits
from cp import clock as clocks
from cp.kubeconfig import kubeconfig_text as kubeconfig_text
from storage import log


class Running(msgspec.Struct, kw_only=True):
    url: str
    port: int
    kubeconfig: Path
    app: web.Application
    event_log: log.EventLog
    auth: Any = None  # api.auth.AuthConfig when serving TLS with authentication (issue #10)
    connections: Any = None  # the api.connections.ConnectionGuard of its listening socket


def open_log(url: str, *, cache_bytes: int | None = None, warm_cache: bool = False) -> log.EventLog:
    """The event log at `url`; `cache_bytes` and `warm_cache`: its objects kept in memory for LISTs and
    GETs (`storage.heads`: the budget, None for the default, and whether to load them at start-up)."""
    if url in ("memory:", "memory://"):
        from storage import memory

        return memory.MemoryEventLog()
    from storage import factory, heads

    return factory.open_event_log(url=url, cache_bytes=heads.DEFAULT_MAX_BYTES if cache_bytes is None else cache_bytes,
                                  warm_cache=warm_cache)


def advertised_address(host: str) -> str | None:
    """The address the `kubernetes` Service's endpoints name, as kube-apiserver's default
    `--advertise-address` (`utilnet.ResolveBindAddress`): the bind address, unless it is a wildcard or
    loopback (an endpoint may not be one), then the address of the host's default-route interface.
    None when the host has none."""
    with contextlib.suppress(ValueError):
        addr = ipaddress.ip_address(host.strip("[]"))
        if not (addr.is_unspecified or addr.is_loopback):
            return str(addr)
    for family, probe in ((socket.AF_INET, "192.0.2.1"), (socket.AF_INET6, "2001:db8::1")):
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as sock:
                sock.connect((probe, 9))  # a UDP connect sends nothing: it only picks the route
                found = ipaddress.ip_address(sock.getsockname()[0])
        except OSError:
            continue
        if not (found.is_unspecified or found.is_loopback):
            return str(found)
    return None


def default_db_url(data_dir: Path) -> str:
    return f"sqlite+aiosqlite:///{data_dir.resolve() / 'cplane.db'}"


def write_kubeconfig(path: Path, *, server: str, **credentials: str) -> None:
    """Write (mode 0600, atomically) a kubeconfig; `credentials` go to `kubeconfig_text`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(kubeconfig_text(server=server, **credentials))
    os.chmod(tmp, 0o600)
    tmp.replace(path)


@contextlib.asynccontextmanager
async def running(*, data_dir: Path, host: str = "127.0.0.1", port: int = 0, db_url: str | None = None,
                  clock: clocks.Clock | None = None,
                  event_log: log.EventLog | None = None,
                  app_options: dict[str, Any] | None = None, secure: bool = False,
                  token_auth_file: str | None = None, limits: Limits | None = None,
                  insecure_limits: bool = False, advertise_address: str | None = None,
                  service_account_issuer: str | None = None,
                  api_audiences: tuple[str, ...] = (), watch_cache_memory: int | None = None,
                  warm_cache: bool = False) -> AsyncIterator[Running]:
    """Serve the API until the block exits. `port=0` picks a free port. `app_options` go to
    `api.app.make_app` (its extension points).

    Default: plain HTTP, no authentication (everyone is the admin). `secure=True` (issue #10):
    TLS with the CA and serving certificate of DATA_DIR/pki (created on first start), bearer-token,
    client-certificate and ServiceAccount-token authentication (`token_auth_file`: kube-apiserver's
    CSV), RBAC, and `limits` (an `api.auth.Limits`); the kubeconfig carries the CA and the admin
    token. `insecure_limits=True`: plain HTTP without authentication but with the limits.
    `service_account_issuer` and `api_audiences`: kube-apiserver's `--service-account-issuer` and
    `--api-audiences` (defaults: `api.auth.ISSUER`, the issuer).
    The connection-level bounds of `limits` (header and handshake deadlines, the connection cap:
    `api.connections`) apply in every mode. `advertise_address`: the address the `kubernetes` Service's
    endpoints name (kube-apiserver's `--advertise-address`; see `advertised_address` for the default).
    `watch_cache_memory`, `warm_cache`: the memory budget of the objects kept for LISTs and GETs (None:
    the default, `storage.heads.DEFAULT_MAX_BYTES`) and whether to load them in the background at
    start-up (`cplane serve --watch-cache-memory`; the server is ready before they are loaded). The
    Table rows kept between requests get half that budget besides (`cp.tables.RowCache`)."""
    from api import auth as auths

    data_dir.mkdir(parents=True, exist_ok=True)  # noqa: ASYNC240 - once, before serving
    options = dict(app_options or {})
    config = None
    ssl_context = None
    if secure:
        creds = auths.ensure_credentials(data_dir, hosts=[host])
        config = auths.AuthConfig.from_credentials(creds, token_file=token_auth_file, limits=limits,
                                                   issuer=service_account_issuer, audiences=api_audiences)
        ssl_context = auths.server_ssl_context(creds)
        options["auth"] = config
    elif insecure_limits:
        def make_signer() -> auths.Authenticator:
            return auths.Authenticator(sa_key=auths.signing_key(data_dir), issuer=service_account_issuer or auths.ISSUER,
                                       audiences=api_audiences)

        config = auths.AuthConfig.insecure(limits, make_signer=make_signer)
        options["auth"] = config
    own_log = event_log is None
    the_log = event_log or open_log(db_url or default_db_url(data_dir), cache_bytes=watch_cache_memory,
                                    warm_cache=warm_cache)
    if own_log:
        await the_log.start()
    if watch_cache_memory is not None:
        options.setdefault("table_cache_bytes", watch_cache_memory // 2)
    app = apps.make_app(event_log=the_log, clock=clock, **options)
    keeper: services.ControlPlaneKeeper | None = None
    the_limits = config.limits if config is not None else (limits or Limits())
    guard = connections.ConnectionGuard(limits=the_limits)
    runner = connections.GuardedRunner(app, guard=guard, access_log=None, shutdown_timeout=2.0,
                                       handle_signals=False)
    try:
        await runner.setup()
        site = connections.GuardedSite(runner, host, port, ssl_context=ssl_context,
                                       handshake_timeout=the_limits.handshake_timeout)
        await site.start()
        actual = site.port
        shown_host = f"[{host}]" if ":" in host else host
        if host in ("0.0.0.0", "::"):
            shown_host = "127.0.0.1" if host == "0.0.0.0" else "[::1]"
        url = f"{'https' if secure else 'http'}://{shown_host}:{actual}"
        kubeconfig = data_dir / "kubeconfig"
        if secure:
            assert config is not None and config.credentials is not None
            write_kubeconfig(kubeconfig, server=url, token=config.credentials.admin_token,
                             ca_data=config.credentials.ca_data())
        else:
            write_kubeconfig(kubeconfig, server=url)
        await app[st.READY].wait()
        if app[st.BOOTSTRAP]:
            # The API server's own Service, at the address and port it serves (the controlplane reconciler).
            keeper = services.ControlPlaneKeeper(
                app[st.STORE], app[st.SERVICE_RANGES], address=advertise_address or advertised_address(host),
                port=actual, writer=apps.server_context)
            await keeper.start()
        yield Running(url=url, port=actual, kubeconfig=kubeconfig, app=app, event_log=the_log, connections=guard,
                      auth=config if secure else None)
    finally:
        if keeper is not None:
            await keeper.stop()
        await runner.cleanup()
        if own_log:
            await the_log.close()
