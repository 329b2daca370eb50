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

The modules, one step each: `requestinfo` (1), `authentication` and `credentials` (2), `limits`
(3 and 5), `policy` (the RBAC objects that 4 evaluates, and the default policy), `chain` (the
middleware running 1-5), `admission`, `reviews` (the self-subject reviews), `config` (`AuthConfig`,
what a server was started with). This module names the public API and starts and stops the policy
cache with the application.

Secrets never reach logs: tokens are compared, never logged, and nothing here writes them to the
event log. See docs/security.md.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from api import state as st
from api.auth import reviews, tokens
from api.auth.admission import AdmittingStore, store_class
from api.auth.authentication import ISSUER, NODE_NAME_EXTRA, Authenticator, Lookup
from api.auth.chain import middleware
from api.auth.config import AUTH, AuthConfig, controller_token
from api.auth.credentials import (
    Credentials,
    client_ssl_context,
    ensure_credentials,
    parse_token_file,
    server_ssl_context,
    signing_key,
)
from api.auth.policy import bootstrap_kubelet_plugins, bootstrap_policy
from api.auth.requestinfo import RequestInfo, request_info
from api.limits import Limits
from api.store import Store


async def start(app: web.Application, *, write_defaults: bool) -> None:
    config = app[AUTH]
    store = app[st.STORE]
    await config.cache.load(store.log)
    config.lookup = _lookup(store)
    if config.authenticator is not None:
        config.authenticator.lookup = config.lookup
    if write_defaults and config.secure and config.bootstrap_policy:
        await bootstrap_policy(store)
        await bootstrap_kubelet_plugins(store)
    config.cache.follow(store.log)


def routes() -> list[web.RouteDef]:
    return [*reviews.routes(), *tokens.routes()]


def _lookup(store: Store) -> Lookup:
    """Reads of the objects a bound ServiceAccount token names, from the store."""
    from cp import errors
    from cp import resources as res

    async def lookup(plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        kind = res.by_group_resource("", plural)
        assert kind is not None
        try:
            return await store.get_object(kind, namespace, name)
        except errors.NotFound:
            return None

    return lookup


async def stop(app: web.Application) -> None:
    await app[AUTH].cache.stop()


__all__ = [
    "AUTH",
    "ISSUER",
    "NODE_NAME_EXTRA",
    "AdmittingStore",
    "AuthConfig",
    "Authenticator",
    "Credentials",
    "Limits",
    "RequestInfo",
    "bootstrap_policy",
    "client_ssl_context",
    "controller_token",
    "ensure_credentials",
    "middleware",
    "parse_token_file",
    "request_info",
    "routes",
    "server_ssl_context",
    "signing_key",
    "start",
    "stop",
    "store_class",
]
