"""Running an API server: open the event log, serve HTTP, write the kubeconfig, shut down cleanly."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
from aiohttp import web

from api import app as apps
from api import state as st
from cp import clock as clocks
from storage import log


class Running(msgspec.Struct, kw_only=True):
    url: str
    port: int
    kubeconfig: Path
    app: web.Application
    event_log: log.EventLog


def install_cel_checker() -> None:
    """Reject device selectors that do not compile (422 at create time, as kube-apiserver does),
    with the allocator's own CEL environment so that both agree on what compiles."""
    from controllers.dra import celenv
    from cp import validation

    cache = celenv.CelCache()
    validation.set_cel_checker(lambda expression: cache.compile(expression).error)


def open_log(url: str) -> log.EventLog:
    if url in ("memory:", "memory://"):
        from storage import memory

        return memory.MemoryEventLog()
    from storage import factory

    return factory.open_event_log(url=url)


def default_db_url(data_dir: Path) -> str:
    return f"sqlite+aiosqlite:///{data_dir.resolve() / 'cplane.db'}"


def kubeconfig_text(*, server: str, token: str = "") -> str:
    user = f"    token: {token}\n" if token else "    {}\n"
    return (
        "apiVersion: v1\n"
        "kind: Config\n"
        "clusters:\n"
        "- name: cplane\n"
        "  cluster:\n"
        f"    server: {server}\n"
        "contexts:\n"
        "- name: cplane\n"
        "  context:\n"
        "    cluster: cplane\n"
        "    namespace: default\n"
        "    user: cplane-admin\n"
        "current-context: cplane\n"
        "preferences: {}\n"
        "users:\n"
        "- name: cplane-admin\n"
        "  user:\n" + user
    )


def write_kubeconfig(path: Path, *, server: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(kubeconfig_text(server=server))
    os.chmod(tmp, 0o600)
    tmp.replace(path)


@contextlib.asynccontextmanager
async def running(*, data_dir: Path, host: str = "127.0.0.1", port: int = 0, db_url: str | None = None,
                  clock: clocks.Clock | None = None,
                  event_log: log.EventLog | None = None,
                  app_options: dict[str, Any] | None = None) -> AsyncIterator[Running]:
    """Serve the API until the block exits. `port=0` picks a free port. `app_options` go to
    `api.app.make_app` (its extension points)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    install_cel_checker()
    own_log = event_log is None
    the_log = event_log or open_log(db_url or default_db_url(data_dir))
    if own_log:
        await the_log.start()
    app = apps.make_app(event_log=the_log, clock=clock, **(app_options or {}))
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=2.0, handle_signals=False)
    try:
        await runner.setup()
        site = web.TCPSite(runner, host, port, reuse_address=True)
        await site.start()
        server = site._server
        assert server is not None
        actual = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        shown_host = f"[{host}]" if ":" in host else host
        url = f"http://{shown_host}:{actual}"
        kubeconfig = data_dir / "kubeconfig"
        write_kubeconfig(kubeconfig, server=url)
        await app[st.READY].wait()
        yield Running(url=url, port=actual, kubeconfig=kubeconfig, app=app, event_log=the_log)
    finally:
        await runner.cleanup()
        if own_log:
            await the_log.close()
