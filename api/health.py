"""`/healthz`, `/livez` and `/readyz` with named checks, as kube-apiserver answers them.

Each endpoint runs its checks; all pass: 200 `ok` (with `?verbose`, one `[+]name ok` line per check
and `<endpoint> check passed`); one fails: 500 with every check's line (`[-]name failed: reason
withheld`: the reason goes to the log, not to an unauthenticated caller) and `<endpoint> check
failed`. `?exclude=name` skips a check; `/readyz/<name>` runs one (`ok`, or 500 `internal server
error: ...`).

The checks: `ping` (the process answers), `log` (logging works), `etcd` (a round trip to the event
log's database, at most `STORAGE_CHECK_TIMEOUT`: kube-apiserver's name for its storage check, kept
so that probes and dashboards written for it work), `poststarthook/bootstrap-controller` (the
default namespaces exist, and with authentication the default RBAC policy is loaded) and
`poststarthook/scheduling/bootstrap-system-priority-classes` (the system PriorityClasses exist). `/livez`
leaves out `etcd`, as upstream does since storage outages must not restart API servers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import structlog
from aiohttp import web

from api import state as st
from storage import log

logger = structlog.get_logger("cplane.api")

STORAGE_CHECK_TIMEOUT = 2.0  # kube-apiserver's --etcd-healthcheck-timeout / --etcd-readycheck-timeout

Check = Callable[[web.Application], Awaitable[None]]  # raises to fail


class CheckFailed(Exception):
    pass


async def _ping(app: web.Application) -> None:
    return None


async def _storage(app: web.Application) -> None:
    try:
        async with asyncio.timeout(STORAGE_CHECK_TIMEOUT):
            await app[st.STORE].log.ping()
    except TimeoutError:
        raise CheckFailed(f"the event log's database did not answer within {STORAGE_CHECK_TIMEOUT} s") from None
    except log.StorageError as exc:
        raise CheckFailed(str(exc)) from None


async def _bootstrapped(app: web.Application) -> None:
    if not app[st.READY].is_set():
        raise CheckFailed("not finished")


_HOOKS: tuple[tuple[str, Check], ...] = (
    ("poststarthook/bootstrap-controller", _bootstrapped),
    ("poststarthook/scheduling/bootstrap-system-priority-classes", _bootstrapped),
)
CHECKS: dict[str, tuple[tuple[str, Check], ...]] = {
    "livez": (("ping", _ping), ("log", _ping), *_HOOKS),
    "readyz": (("ping", _ping), ("log", _ping), ("etcd", _storage), *_HOOKS),
    "healthz": (("ping", _ping), ("log", _ping), ("etcd", _storage), *_HOOKS),
}
PATHS = tuple(f"/{name}" for name in CHECKS)


async def _run(app: web.Application, name: str, check: Check) -> str | None:
    """None when the check passes, else why it failed (logged, never sent)."""
    try:
        await check(app)
    except CheckFailed as exc:
        return str(exc)
    return None


def _handler(endpoint: str) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    checks = CHECKS[endpoint]

    async def root(request: web.Request) -> web.StreamResponse:
        excluded = {name for value in request.query.getall("exclude", []) for name in value.split(",") if name}
        unknown = excluded - {name for name, _ in checks}
        lines: list[str] = []
        failed: list[str] = []
        for name, check in checks:
            if name in excluded:
                lines.append(f"[+]{name} excluded: ok")
                continue
            why = await _run(request.app, name, check)
            if why is None:
                lines.append(f"[+]{name} ok")
            else:
                failed.append(name)
                lines.append(f"[-]{name} failed: reason withheld")
                logger.warning("health_check_failed", endpoint=endpoint, check=name, error=why)
        if unknown:
            lines.append(f"warn: some health checks cannot be excluded: no matches for {', '.join(sorted(unknown))}")
        if failed:
            return web.Response(status=500, text="\n".join(lines) + f"\n{endpoint} check failed\n")
        if "verbose" not in request.query:
            return web.Response(text="ok")
        return web.Response(text="\n".join(lines) + f"\n{endpoint} check passed\n")

    return root


def _single(endpoint: str) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    checks = dict(CHECKS[endpoint])

    async def one(request: web.Request) -> web.StreamResponse:
        name = request.match_info["check"]
        check = checks.get(name)
        if check is None:
            raise web.HTTPNotFound()
        why = await _run(request.app, name, check)
        if why is not None:
            logger.warning("health_check_failed", endpoint=endpoint, check=name, error=why)
            return web.Response(status=500, text="internal server error: check failed\n")
        return web.Response(text="ok")

    return one


def routes() -> list[web.RouteDef]:
    out: list[web.RouteDef] = []
    for endpoint in CHECKS:
        out.append(web.get(f"/{endpoint}", _handler(endpoint)))
        out.append(web.get(f"/{endpoint}/{{check:.+}}", _single(endpoint)))
    return out
