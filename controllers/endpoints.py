"""The Endpoints controller: the legacy v1 Endpoints of every Service with a selector, as
kube-controller-manager's `endpoints-controller` (`pkg/controller/endpoint`) still keeps them.

One Endpoints object named as the Service, with its labels (and `service.kubernetes.io/headless` for
headless Services); one subset per set of resolved ports, addresses of Ready pods in `addresses` and of
the other running pods in `notReadyAddresses` (all in `addresses` when the Service publishes not-ready
addresses), each with the pod's `nodeName` and a `targetRef`; terminating pods are left out unless
the Service publishes not-ready addresses. Services without a selector keep the Endpoints their users
write; ExternalName Services get none. Addresses are sorted by IP, subsets by their ports (upstream
sorts by hash). Not here: the `last-change-trigger-time` and over-capacity annotations.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import Any

import structlog

from controllers import endpointslice as slices
from controllers.runtime import cache as caches
from controllers.runtime import client as clients
from controllers.runtime import informer as informers
from controllers.runtime import manager as managers
from controllers.runtime import reconcile
from cp import errors

NAME = "endpoints"
ENDPOINTS = clients.resolve("endpoints")

logger = structlog.get_logger("cplane.controllers.endpoints")


def subsets(service: dict[str, Any], pods: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Service's subsets, from the pods it selects."""
    spec = service.get("spec") or {}
    publish = bool(spec.get("publishNotReadyAddresses"))
    groups: dict[str, dict[str, Any]] = {}
    for pod in pods:
        if not slices.selects(service, pod) or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        ip = slices.pod_ipv4(pod)
        if ip is None or (caches.meta(pod).get("deletionTimestamp") and not publish):
            continue
        meta = caches.meta(pod)
        address: dict[str, Any] = {"ip": ip}
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            address["nodeName"] = node
        address["targetRef"] = {"kind": "Pod", "namespace": meta.get("namespace"), "name": meta.get("name"),
                                "uid": meta.get("uid")}
        ports = slices.endpoint_ports(service, pod)
        if not ports and spec.get("ports"):
            continue
        group = groups.setdefault(repr(ports), {"ports": ports, "addresses": [], "notReadyAddresses": []})
        ready = publish or slices.pod_ready(pod)
        group["addresses" if ready else "notReadyAddresses"].append(address)
    out = []
    for key in sorted(groups):
        group = groups[key]
        subset: dict[str, Any] = {}
        for field in ("addresses", "notReadyAddresses"):
            if group[field]:
                subset[field] = sorted(group[field], key=lambda a: (a["ip"], a["targetRef"]["uid"] or ""))
        if group["ports"]:
            subset["ports"] = group["ports"]
        out.append(subset)
    return out


def labels_of(service: dict[str, Any]) -> dict[str, str]:
    labels = dict(caches.meta(service).get("labels") or {})
    if (service.get("spec") or {}).get("clusterIP") == "None":
        labels[slices.LABEL_HEADLESS] = ""
    else:
        labels.pop(slices.LABEL_HEADLESS, None)
    return labels


class EndpointsController:
    def __init__(self, *, client: clients.Client, informer_factory: informers.InformerFactory) -> None:
        self.client = client
        self.informers = informer_factory

    def watches(self) -> list[managers.Watch]:
        return [managers.Watch(kind=slices.SERVICES), managers.Watch(kind=slices.PODS, map=self._pod_changed),
                managers.Watch(kind=ENDPOINTS)]

    def _pod_changed(self, change: managers.Change) -> Iterable[reconcile.Request]:
        ns = str(caches.meta(change.obj).get("namespace") or "")
        pods = [change.obj] + ([change.old] if change.old is not None else [])
        return [reconcile.Request(namespace=ns, name=str(caches.meta(svc).get("name")))
                for svc in self.informers.cache(slices.SERVICES).list(namespace=ns)
                if any(slices.selects(svc, pod) for pod in pods)]

    async def reconcile(self, request: reconcile.Request) -> reconcile.Result | None:
        ns, name = request.namespace, request.name
        service = self.informers.cache(slices.SERVICES).get(ns, name)
        current = self.informers.cache(ENDPOINTS).get(ns, name)
        if service is None:
            if current is not None:
                with contextlib.suppress(errors.NotFound):
                    await self.client.delete(ENDPOINTS, name, namespace=ns)
            return None
        spec = service.get("spec") or {}
        if not spec.get("selector") or spec.get("type") == "ExternalName":
            return None  # selectorless Services' Endpoints are their users'
        wanted = subsets(service, self.informers.cache(slices.PODS).list(namespace=ns))
        labels = labels_of(service)
        if current is None:
            body: dict[str, Any] = {"apiVersion": "v1", "kind": "Endpoints",
                                    "metadata": {"name": name, "namespace": ns, "labels": labels}}
            if wanted:
                body["subsets"] = wanted
            try:
                await self.client.create(ENDPOINTS, body, namespace=ns)
            except errors.AlreadyExists:
                return None  # its add event, when the cache sees it, brings it back here
            logger.info("endpoints_created", namespace=ns, name=name)
            return None
        if (current.get("subsets") or []) == wanted and (caches.meta(current).get("labels") or {}) == labels:
            return None
        updated = caches.deep_copy(current)
        updated["metadata"]["labels"] = labels
        if wanted:
            updated["subsets"] = wanted
        else:
            updated.pop("subsets", None)
        try:
            await self.client.update(ENDPOINTS, updated)
        except errors.NotFound:
            return None  # its delete event brings it back here
        return None


def new(ctx: managers.ControllerContext, *, workers: int = 2) -> managers.Controller:
    c = EndpointsController(client=ctx.client, informer_factory=ctx.informers)
    return managers.Controller(name=NAME, reconciler=c, watches=c.watches(), workers=workers)
