"""The ServiceAccounts controller (kube-controller-manager's `serviceaccount-controller`): every
namespace that is not terminating has a ServiceAccount named `default`. It creates the account when a
namespace appears and again when someone deletes it; it never changes an existing one."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import structlog

from controllers.runtime import cache as caches
from controllers.runtime import client as clients
from controllers.runtime import informer as informers
from controllers.runtime import manager as managers
from controllers.runtime import reconcile
from cp import errors

NAME = "serviceaccount"
DEFAULT = "default"

NAMESPACES = clients.resolve("namespaces")
SERVICE_ACCOUNTS = clients.resolve("serviceaccounts")

logger = structlog.get_logger("cplane.controllers.serviceaccount")


def terminating(ns: Mapping[str, Any] | None) -> bool:
    """No such namespace (yet), or one being deleted: nothing may be created in it."""
    return ns is None or bool(caches.meta(ns).get("deletionTimestamp")) or \
        (ns.get("status") or {}).get("phase") == "Terminating"


class ServiceAccountsController:
    def __init__(self, *, client: clients.Client, informer_factory: informers.InformerFactory) -> None:
        self.client = client
        self.informers = informer_factory

    def watches(self) -> list[managers.Watch]:
        return [managers.Watch(kind=NAMESPACES, map=_namespace_request),
                managers.Watch(kind=SERVICE_ACCOUNTS, map=_account_deleted)]

    async def reconcile(self, request: reconcile.Request) -> reconcile.Result | None:
        ns = self.informers.cache(NAMESPACES).get("", request.name)
        if terminating(ns):
            return None
        if self.informers.cache(SERVICE_ACCOUNTS).get(request.name, DEFAULT) is not None:
            return None
        try:
            await self.client.create(SERVICE_ACCOUNTS, {"metadata": {"name": DEFAULT, "namespace": request.name}},
                                     namespace=request.name)
        except errors.AlreadyExists:
            return None
        except (errors.Forbidden, errors.NotFound):
            return None  # the namespace is terminating or gone
        logger.info("service_account_created", namespace=request.name, name=DEFAULT)
        return None


def _namespace_request(change: managers.Change) -> Iterable[reconcile.Request]:
    if change.type == "delete":
        return []
    return [reconcile.Request(name=caches.key_of(change.obj)[1])]


def _account_deleted(change: managers.Change) -> Iterable[reconcile.Request]:
    ns, name = caches.key_of(change.obj)
    if change.type != "delete" or name != DEFAULT:
        return []
    return [reconcile.Request(name=ns)]


def new(ctx: managers.ControllerContext, *, workers: int = 1) -> managers.Controller:
    sc = ServiceAccountsController(client=ctx.client, informer_factory=ctx.informers)
    return managers.Controller(name=NAME, reconciler=sc, watches=sc.watches(), workers=workers)
