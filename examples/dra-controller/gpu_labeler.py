"""An example DRA-aware controller: label each pod with the model of the GPUs allocated to it.

For a pod, find its ResourceClaims (`status.resourceClaimStatuses`), read each claim's allocation
results (driver/pool/device), look the devices up in the ResourceSlices, and set the pod label
`example.com/gpu-model` to their `model` attribute. It uses cplane's controller runtime (informers,
work queue, reconcile by key), and would run unchanged against any Kubernetes API server.
"""

from __future__ import annotations

import contextlib
from typing import Any

from controllers.runtime import manager as managers
from controllers.runtime import reconcile
from cp import errors
from cp import resources as res

NAME = "gpu-labeler"
LABEL = "example.com/gpu-model"
PODS = res.by_group_resource("", "pods")
CLAIMS = res.by_group_resource("resource.k8s.io", "resourceclaims")
SLICES = res.by_group_resource("resource.k8s.io", "resourceslices")
assert PODS and CLAIMS and SLICES


def _pods_of_claim(change: managers.Change) -> list[reconcile.Request]:
    """A claim changed: reconcile the pods it is reserved for."""
    claim = change.obj
    ns = claim["metadata"].get("namespace", "")
    return [reconcile.Request(namespace=ns, name=ref["name"])
            for ref in (claim.get("status") or {}).get("reservedFor") or [] if ref.get("resource") == "pods"]


class GpuLabeler:
    def __init__(self, ctx: managers.ControllerContext) -> None:
        self.client = ctx.client
        self.pods = ctx.informers.informer(PODS)
        self.claims = ctx.informers.informer(CLAIMS)
        self.slices = ctx.informers.informer(SLICES)

    def _model(self, driver: str, pool: str, device: str) -> str | None:
        for s in self.slices.cache.list():
            spec = s.get("spec") or {}
            if spec.get("driver") != driver or (spec.get("pool") or {}).get("name") != pool:
                continue
            for d in spec.get("devices") or []:
                if d.get("name") == device:
                    attr = (d.get("attributes") or {}).get("model") or {}
                    return attr.get("string")
        return None

    async def reconcile(self, request: reconcile.Request) -> reconcile.Result:
        pod = self.pods.cache.get(request.namespace, request.name)
        if pod is None:
            return reconcile.Result()
        models: set[str] = set()
        for status in (pod.get("status") or {}).get("resourceClaimStatuses") or []:
            claim = self.claims.cache.get(request.namespace, status.get("resourceClaimName") or "")
            allocation: dict[str, Any] = ((claim or {}).get("status") or {}).get("allocation") or {}
            for result in (allocation.get("devices") or {}).get("results") or []:
                model = self._model(result["driver"], result["pool"], result["device"])
                if model:
                    models.add(model)
        want = ",".join(sorted(models)) or None
        if (pod["metadata"].get("labels") or {}).get(LABEL) == want:
            return reconcile.Result()
        with contextlib.suppress(errors.NotFound):
            await self.client.patch(PODS, request.name, {"metadata": {"labels": {LABEL: want}}},
                                    namespace=request.namespace, patch_type="merge")
        return reconcile.Result()


def new(ctx: managers.ControllerContext) -> managers.Controller:
    labeler = GpuLabeler(ctx)
    return managers.Controller(name=NAME, reconciler=labeler, watches=[
        managers.Watch(kind=PODS), managers.Watch(kind=CLAIMS, map=_pods_of_claim), managers.Watch(kind=SLICES,
                                                                                              map=lambda c: [])])
