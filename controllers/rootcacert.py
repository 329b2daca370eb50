"""The root CA publisher (kube-controller-manager's `root-ca-certificate-publisher-controller`):
every namespace that is not terminating has the ConfigMap `kube-root-ca.crt` with the server's CA
under `ca.crt` and upstream's `kubernetes.io/description` annotation. It is created when a namespace
appears, recreated when deleted and put back when its data or annotation is changed (other
annotations and labels are kept).

The CA is the one the controller's client trusts (the kubeconfig's `certificate-authority-data`, the
CA `cplane serve` passes to its in-process controllers). A plain-HTTP server has none: the controller
then publishes nothing."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import structlog

from controllers.runtime import cache as caches
from controllers.runtime import client as clients
from controllers.runtime import informer as informers
from controllers.runtime import manager as managers
from controllers.runtime import reconcile
from controllers.serviceaccount import terminating
from cp import errors

NAME = "root-ca-cert-publisher"
CONFIG_MAP = "kube-root-ca.crt"
DESCRIPTION_ANNOTATION = "kubernetes.io/description"
DESCRIPTION = ("Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints "
               "such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across "
               "distributions of Kubernetes clusters.")

NAMESPACES = clients.resolve("namespaces")
CONFIG_MAPS = clients.resolve("configmaps")

logger = structlog.get_logger("cplane.controllers.rootcacert")


class RootCAPublisher:
    def __init__(self, *, client: clients.Client, informer_factory: informers.InformerFactory, ca: str) -> None:
        self.client = client
        self.informers = informer_factory
        self.ca = ca

    def watches(self) -> list[managers.Watch]:
        return [managers.Watch(kind=NAMESPACES, map=_namespace_request),
                managers.Watch(kind=CONFIG_MAPS, map=_config_map_changed)]

    async def reconcile(self, request: reconcile.Request) -> reconcile.Result | None:
        if not self.ca:
            return None
        ns = request.name
        if terminating(self.informers.cache(NAMESPACES).get("", ns)):
            return None
        existing = self.informers.cache(CONFIG_MAPS).get(ns, CONFIG_MAP)
        try:
            if existing is None:
                await self.client.create(CONFIG_MAPS, {
                    "metadata": {"name": CONFIG_MAP, "namespace": ns,
                                 "annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION}},
                    "data": {"ca.crt": self.ca}}, namespace=ns)
                logger.info("root_ca_published", namespace=ns)
                return None
            annotations = caches.meta(existing).get("annotations") or {}
            if existing.get("data") == {"ca.crt": self.ca} and annotations.get(DESCRIPTION_ANNOTATION) == DESCRIPTION:
                return None
            updated: dict[str, Any] = caches.deep_copy(existing)
            updated["data"] = {"ca.crt": self.ca}
            updated.pop("binaryData", None)
            updated["metadata"]["annotations"] = {**annotations, DESCRIPTION_ANNOTATION: DESCRIPTION}
            await self.client.update(CONFIG_MAPS, updated)
        except (errors.AlreadyExists, errors.Forbidden, errors.NotFound):
            return None  # created meanwhile (its event brings us back), or the namespace is going
        return None


def _namespace_request(change: managers.Change) -> Iterable[reconcile.Request]:
    if change.type == "delete":
        return []
    return [reconcile.Request(name=caches.key_of(change.obj)[1])]


def _config_map_changed(change: managers.Change) -> Iterable[reconcile.Request]:
    ns, name = caches.key_of(change.obj)
    if name != CONFIG_MAP or change.type == "add":
        return []
    return [reconcile.Request(name=ns)]


def factory(*, ca: str) -> Callable[[managers.ControllerContext], managers.Controller]:
    """A factory publishing `ca` (PEM) rather than the client's CA."""

    def make(ctx: managers.ControllerContext) -> managers.Controller:
        publisher = RootCAPublisher(client=ctx.client, informer_factory=ctx.informers, ca=ca)
        return managers.Controller(name=NAME, reconciler=publisher, watches=publisher.watches(), workers=1)

    return make


def new(ctx: managers.ControllerContext) -> managers.Controller:
    return factory(ca=ctx.client.root_ca)(ctx)
