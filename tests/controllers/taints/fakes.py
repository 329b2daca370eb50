"""Recorded-write fixtures for the taint evictor and health reporter: the controllers' fake client
(plus `create`) and object builders."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from controllers.runtime import client as clients
from cp import clock as clocks
from cp import errors, patching
from tests.controllers.support import Action, FakeClient

NOW = 1_800_000_000.0
DRIVER = "gpu.example.com"

PODS = "pods"
CLAIMS = "resourceclaims.resource.k8s.io"
SLICES = "resourceslices.resource.k8s.io"
RULES = "devicetaintrules.resource.k8s.io"


class Fake(FakeClient):
    """FakeClient that can also create objects (AlreadyExists when the name is taken)."""

    async def create(self, kind: Any, obj: Mapping[str, Any], *, namespace: str | None = None,
                     field_manager: str | None = None, **_: Any) -> dict[str, Any]:
        k = clients.resolve(kind)
        meta = obj.get("metadata") or {}
        ns = namespace if namespace is not None else str(meta.get("namespace") or "")
        name = str(meta.get("name") or "")
        self.actions.append(Action(verb="create", resource=k.group_resource, namespace=ns, name=name,
                                   body=copy.deepcopy(dict(obj))))
        if self._key(k, ns, name) in self.objects:
            raise errors.AlreadyExists.of(group=k.group, plural=k.plural, name=name)
        return self.put(k.group_resource, dict(obj))

    async def patch(self, kind: Any, name: str, patch: Any, *, namespace: str = "", patch_type: str = "merge",
                    subresource: str = "", field_manager: str | None = None, **kw: Any) -> dict[str, Any]:
        """Strategic merge patches too (through the server's implementation)."""
        if patch_type != "strategic":
            return await super().patch(kind, name, patch, namespace=namespace, patch_type=patch_type,
                                       subresource=subresource, field_manager=field_manager, **kw)
        k = clients.resolve(kind)
        self.actions.append(Action(verb="patch", resource=k.group_resource, namespace=namespace, name=name,
                                   body=copy.deepcopy(patch), subresource=subresource))
        key = self._key(k, namespace, name)
        current = self.objects.get(key)
        if current is None:
            raise errors.NotFound.of(group=k.group, plural=k.plural, name=name)
        merged = patching.apply_patch(copy.deepcopy(current), json.dumps(patch).encode(),
                                      content_type=patching.STRATEGIC_MERGE_PATCH, group=k.group,
                                      version=k.version, kind=k.kind)
        if subresource == "status":
            new = copy.deepcopy(current)
            new["status"] = merged.get("status")
            merged = new
        merged["metadata"]["uid"] = current["metadata"]["uid"]
        self._bump(merged)
        self.objects[key] = merged
        return copy.deepcopy(merged)

    def non_event_writes(self) -> list[Action]:
        return [a for a in self.writes if a.resource != "events"]

    def events(self) -> list[tuple[str, str, str]]:
        return [(a.body["type"], a.body["reason"], a.body["message"]) for a in self.writes if a.resource == "events"]


def ts(offset: float = 0.0) -> str:
    return clocks.rfc3339(NOW + offset)


def slice_(pool: str, devices: Sequence[str | Mapping[str, Any]], *, generation: int = 1, name: str | None = None,
           driver: str = DRIVER) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": name or f"{pool}-g{generation}", "creationTimestamp": ts(-3600)},
            "spec": {"driver": driver, "pool": {"name": pool, "generation": generation, "resourceSliceCount": 1},
                     "nodeName": pool,
                     "devices": [{"name": d} if isinstance(d, str) else dict(d) for d in devices]}}


def rule(name: str, effect: str, *, key: str = "example.com/maintenance", added: float = 0.0,
         selector: Mapping[str, str] | None = None, generation: int = 1,
         conditions: Iterable[Mapping[str, Any]] = ()) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule",
        "metadata": {"name": name, "generation": generation, "creationTimestamp": ts(added)},
        "spec": {"deviceSelector": dict(selector if selector is not None else {"driver": DRIVER}),
                 "taint": {"key": key, "effect": effect, "timeAdded": ts(added)}}}
    if conditions:
        obj["status"] = {"conditions": [dict(c) for c in conditions]}
    return obj


def claim(name: str, devices: Iterable[tuple[str, str]], *, ns: str = "default", request: str = "gpu",
          tolerations: Sequence[Mapping[str, Any]] = (), reserved: Iterable[Mapping[str, Any]] = (),
          owner: Mapping[str, Any] | None = None, requests: Sequence[str] | None = None) -> dict[str, Any]:
    results = []
    devs = list(devices)
    for i, (pool, device) in enumerate(devs):
        r: dict[str, Any] = {"request": requests[i] if requests else request, "driver": DRIVER, "pool": pool,
                             "device": device}
        if tolerations:
            r["tolerations"] = [dict(t) for t in tolerations]
        results.append(r)
    meta: dict[str, Any] = {"name": name, "namespace": ns, "generation": 1, "uid": f"uid-{ns}-{name}"}
    if owner is not None:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": owner["metadata"]["name"],
                                    "uid": owner["metadata"]["uid"], "controller": True}]
    status: dict[str, Any] = {"allocation": {"devices": {"results": results}}}
    reserved = [{"resource": "pods", "name": p["metadata"]["name"], "uid": p["metadata"]["uid"]} for p in reserved]
    if reserved:
        status["reservedFor"] = reserved
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": meta,
            "spec": {"devices": {"requests": [{"name": request, "exactly": {"deviceClassName": DRIVER}}]}},
            "status": status}


def pod(name: str, *, ns: str = "default", claim_name: str = "claim-a", node: str | None = "node-1",
        template: bool = False, containers: Sequence[Mapping[str, Any]] | None = None,
        deleting: bool = False, phase: str = "Pending") -> dict[str, Any]:
    pc: dict[str, Any] = {"name": "gpu"}
    status: dict[str, Any] = {"phase": phase}
    if template:
        pc["resourceClaimTemplateName"] = "tmpl"
        status["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": claim_name}]
    else:
        pc["resourceClaimName"] = claim_name
    spec: dict[str, Any] = {"resourceClaims": [pc], "containers": [dict(c) for c in containers] if containers else [
        {"name": "app", "image": "busybox", "resources": {"claims": [{"name": "gpu"}]}}]}
    if node:
        spec["nodeName"] = node
    meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": f"uid-{ns}-{name}"}
    if deleting:
        meta["deletionTimestamp"] = ts()
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}
