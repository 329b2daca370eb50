"""The EndpointSlice controller: for every Service with a selector, EndpointSlices that list the pods it
selects, as kube-controller-manager's `endpointslice-controller` (`pkg/controller/endpointslice`, the
reconciler of `k8s.io/endpointslice`) keeps them.

- One endpoint per pod that has an address of the slice's family (IPv4 here), is not terminal
  (Succeeded/Failed) and is selected by the Service; conditions `ready` (the pod is Ready and not
  terminating, or the Service publishes not-ready addresses), `serving` (Ready, whether terminating or
  not) and `terminating` (being deleted); `targetRef` to the pod and its `nodeName`.
- Ports are the Service's, each with the pod's port: the number of `targetPort`, or for a named target
  the pod's container port of that name (pods that resolve ports differently go to different slices).
  At most 100 endpoints per slice (`--max-endpoints-per-slice`).
- Slices are named `<service>-<random>`, labelled `kubernetes.io/service-name` and
  `endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io` (plus the Service's labels,
  and `service.kubernetes.io/headless` for headless Services), owned by the Service (controller), so
  the garbage collector removes them with it. A Service that selects nothing gets one empty
  placeholder slice. Slices of Services that lost their selector or became ExternalName are deleted.

The server keeps the `kubernetes` Service's slice itself (it has no selector). Not here: the legacy
Endpoints controller, topology hints and zones, trafficDistribution.
"""

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

NAME = "endpointslice"
MANAGED_BY = "endpointslice-controller.k8s.io"
LABEL_SERVICE_NAME = "kubernetes.io/service-name"
LABEL_MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
LABEL_HEADLESS = "service.kubernetes.io/headless"
MAX_ENDPOINTS = 100

SERVICES = clients.resolve("services")
PODS = clients.resolve("pods")
SLICES = clients.resolve("endpointslices.discovery.k8s.io")

logger = structlog.get_logger("cplane.controllers.endpointslice")


def _labels(obj: Mapping[str, Any]) -> dict[str, str]:
    labels = caches.meta(obj).get("labels")
    return dict(labels) if isinstance(labels, dict) else {}


def selects(service: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    selector = (service.get("spec") or {}).get("selector") or {}
    labels = _labels(pod)
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def pod_ready(pod: Mapping[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def pod_ipv4(pod: Mapping[str, Any]) -> str | None:
    status = pod.get("status") or {}
    addresses = [p.get("ip") for p in status.get("podIPs") or [] if isinstance(p, dict)] or [status.get("podIP")]
    return next((a for a in addresses if isinstance(a, str) and a and ":" not in a), None)


def _target_port(service_port: Mapping[str, Any], pod: Mapping[str, Any]) -> int | None:
    target = service_port.get("targetPort", service_port.get("port"))
    if isinstance(target, int):
        return target
    protocol = service_port.get("protocol") or "TCP"
    for container in (pod.get("spec") or {}).get("containers") or []:
        for port in container.get("ports") or []:
            if port.get("name") == target and (port.get("protocol") or "TCP") == protocol:
                return int(port.get("containerPort") or 0) or None
    return None


def endpoint_ports(service: Mapping[str, Any], pod: Mapping[str, Any]) -> list[dict[str, Any]]:
    out = []
    for sp in (service.get("spec") or {}).get("ports") or []:
        number = _target_port(sp, pod)
        if number is None:
            continue
        port: dict[str, Any] = {"name": sp.get("name") or "", "port": number, "protocol": sp.get("protocol") or "TCP"}
        if sp.get("appProtocol"):
            port["appProtocol"] = sp["appProtocol"]
        out.append(port)
    return out


def endpoint(service: Mapping[str, Any], pod: Mapping[str, Any], address: str) -> dict[str, Any]:
    meta = caches.meta(pod)
    terminating = bool(meta.get("deletionTimestamp"))
    ready = pod_ready(pod)
    publish = bool((service.get("spec") or {}).get("publishNotReadyAddresses"))
    out: dict[str, Any] = {
        "addresses": [address],
        "conditions": {"ready": publish or (ready and not terminating), "serving": publish or ready,
                       "terminating": terminating},
        "targetRef": {"kind": "Pod", "namespace": meta.get("namespace"), "name": meta.get("name"),
                      "uid": meta.get("uid")},
    }
    node = (pod.get("spec") or {}).get("nodeName")
    if node:
        out["nodeName"] = node
    return out


def desired(service: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]) -> list[tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
    """(ports, endpoints) of each slice the Service should have, in a stable order."""
    groups: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
    for pod in sorted(pods, key=lambda p: str(caches.meta(p).get("name"))):
        if not selects(service, pod) or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        address = pod_ipv4(pod)
        if address is None:
            continue
        ports = endpoint_ports(service, pod)
        key = repr(ports)
        groups.setdefault(key, (ports, []))[1].append(endpoint(service, pod, address))
    out: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = []
    for ports, endpoints in groups.values():
        for i in range(0, len(endpoints), MAX_ENDPOINTS):
            out.append((ports, endpoints[i:i + MAX_ENDPOINTS]))
    return out


def _revision(obj: Mapping[str, Any]) -> int:
    try:
        return int(caches.meta(obj).get("resourceVersion") or 0)
    except ValueError:
        return 0


def slice_labels(service: Mapping[str, Any]) -> dict[str, str]:
    labels = {k: v for k, v in _labels(service).items() if k not in (LABEL_SERVICE_NAME, LABEL_MANAGED_BY)}
    if (service.get("spec") or {}).get("clusterIP") == "None":
        labels[LABEL_HEADLESS] = ""
    labels[LABEL_SERVICE_NAME] = str(caches.meta(service).get("name"))
    labels[LABEL_MANAGED_BY] = MANAGED_BY
    return labels


class EndpointSliceController:
    def __init__(self, *, client: clients.Client, informer_factory: informers.InformerFactory) -> None:
        self.client = client
        self.informers = informer_factory
        # What this controller wrote and its cache may not show yet (upstream's EndpointSliceTracker):
        # slices as the server returned them, and slices it deleted, by (namespace, name).
        self._written: dict[tuple[str, str], dict[str, Any]] = {}
        self._deleted: set[tuple[str, str]] = set()

    def watches(self) -> list[managers.Watch]:
        return [managers.Watch(kind=SERVICES), managers.Watch(kind=PODS, map=self._pod_changed),
                managers.Watch(kind=SLICES, map=self._slice_changed)]

    def _pod_changed(self, change: managers.Change) -> Iterable[reconcile.Request]:
        ns = str(caches.meta(change.obj).get("namespace") or "")
        pods = [change.obj] + ([change.old] if change.old is not None else [])
        return [reconcile.Request(namespace=ns, name=str(caches.meta(svc).get("name")))
                for svc in self.informers.cache(SERVICES).list(namespace=ns)
                if any(selects(svc, pod) for pod in pods)]

    @staticmethod
    def _slice_changed(change: managers.Change) -> Iterable[reconcile.Request]:
        labels = _labels(change.obj)
        if labels.get(LABEL_MANAGED_BY) != MANAGED_BY or not labels.get(LABEL_SERVICE_NAME):
            return []
        return [reconcile.Request(namespace=str(caches.meta(change.obj).get("namespace") or ""),
                                  name=labels[LABEL_SERVICE_NAME])]

    def _owned(self, namespace: str, name: str) -> list[dict[str, Any]]:
        cache = self.informers.cache(SLICES)
        found: dict[str, dict[str, Any]] = {}
        for s in cache.list(namespace=namespace):
            key = caches.key_of(s)
            if key in self._deleted:
                continue
            found[key[1]] = s
        for key in [k for k in self._deleted if k[0] == namespace and cache.get(*k) is None]:
            self._deleted.discard(key)
        for key, written in list(self._written.items()):
            if key[0] != namespace:
                continue
            cached = cache.get(*key)
            if cached is not None and _revision(cached) >= _revision(written):
                del self._written[key]  # the cache caught up
            elif key not in self._deleted:
                found[key[1]] = written
        return [s for s in found.values()
                if _labels(s).get(LABEL_SERVICE_NAME) == name and _labels(s).get(LABEL_MANAGED_BY) == MANAGED_BY]

    def _remember(self, obj: dict[str, Any]) -> None:
        self._written[caches.key_of(obj)] = obj

    async def reconcile(self, request: reconcile.Request) -> reconcile.Result | None:
        ns, name = request.namespace, request.name
        existing = sorted(self._owned(ns, name), key=lambda s: str(caches.meta(s).get("name")))
        service = self.informers.cache(SERVICES).get(ns, name)
        spec = (service or {}).get("spec") or {}
        if service is None or caches.meta(service).get("deletionTimestamp"):
            return None  # the garbage collector removes the slices it owns
        if not spec.get("selector") or spec.get("type") == "ExternalName":
            for s in existing:
                await self._delete(s)
            return None
        wanted = desired(service, self.informers.cache(PODS).list(namespace=ns)) or [([], [])]
        labels = slice_labels(service)
        unmatched = list(existing)
        for ports, endpoints in wanted:
            match = next((s for s in unmatched if (s.get("ports") or []) == ports), None) or \
                (unmatched[0] if unmatched else None)
            if match is None:
                self._remember(await self.client.create(SLICES, self._new_slice(service, labels, ports, endpoints),
                                                        namespace=ns))
                logger.info("endpointslice_created", namespace=ns, service=name, endpoints=len(endpoints))
                continue
            unmatched.remove(match)
            if (match.get("ports") or []) != ports or (match.get("endpoints") or []) != endpoints \
                    or _labels(match) != labels or match.get("addressType") != "IPv4":
                updated = caches.deep_copy(match)
                updated["metadata"]["labels"] = labels
                updated.update(addressType="IPv4", endpoints=endpoints, ports=ports)
                try:
                    self._remember(await self.client.update(SLICES, updated))
                except errors.NotFound:
                    continue
        for s in unmatched:
            await self._delete(s)
        return None

    @staticmethod
    def _new_slice(service: Mapping[str, Any], labels: dict[str, str], ports: list[dict[str, Any]],
                   endpoints: list[dict[str, Any]]) -> dict[str, Any]:
        meta = caches.meta(service)
        return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {"generateName": f"{meta.get('name')}-", "namespace": meta.get("namespace"),
                             "labels": labels,
                             "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": meta.get("name"),
                                                  "uid": meta.get("uid"), "controller": True,
                                                  "blockOwnerDeletion": True}]},
                "addressType": "IPv4", "endpoints": endpoints, "ports": ports}

    async def _delete(self, s: Mapping[str, Any]) -> None:
        meta = caches.meta(s)
        self._written.pop(caches.key_of(s), None)
        self._deleted.add(caches.key_of(s))
        try:
            await self.client.delete(SLICES, str(meta.get("name")), namespace=str(meta.get("namespace") or ""))
        except errors.NotFound:
            return


def new(ctx: managers.ControllerContext, *, workers: int = 2) -> managers.Controller:
    c = EndpointSliceController(client=ctx.client, informer_factory=ctx.informers)
    return managers.Controller(name=NAME, reconciler=c, watches=c.watches(), workers=workers)
