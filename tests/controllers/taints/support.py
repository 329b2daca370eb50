"""Building a small DRA world by hand (no scheduler or allocator needed): a ResourceSlice, a claim
whose allocation and reservedFor are written through the status subresource, and a bound pod."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from controllers.runtime import client as clients
from cp import errors
from tests.waiting import eventually as eventually  # re-exported: `s.eventually(...)` in the taint tests

DRIVER = "gpu.example.com"
CLASS = "gpu.example.com"


async def namespace(client: clients.Client, name: str) -> None:
    with contextlib.suppress(errors.AlreadyExists):
        await client.create("namespaces", {"metadata": {"name": name}})


async def node(client: clients.Client, name: str) -> None:
    with contextlib.suppress(errors.AlreadyExists):
        await client.create("nodes", {"metadata": {"name": name}})


async def resource_slice(client: clients.Client, pool: str, devices: Sequence[str | Mapping[str, Any]], *,
                         name: str | None = None, generation: int = 1, node_name: str | None = None,
                         driver: str = DRIVER) -> dict[str, Any]:
    devs = [{"name": d} if isinstance(d, str) else dict(d) for d in devices]
    return await client.create("resourceslices.resource.k8s.io", {
        "metadata": {"name": name or f"{pool}-{driver}-g{generation}"},
        "spec": {"driver": driver, "pool": {"name": pool, "generation": generation, "resourceSliceCount": 1},
                 "nodeName": node_name or pool, "devices": devs}})


async def allocated_claim(client: clients.Client, name: str, devices: Iterable[tuple[str, str]], *,
                          ns: str = "default", request: str = "gpu",
                          tolerations: Sequence[Mapping[str, Any]] = (), driver: str = DRIVER) -> dict[str, Any]:
    """A claim allocated to (pool, device) pairs, all for `request`, with `tolerations` copied into
    each result as the allocator would."""
    devices = list(devices)
    claim = await client.create("resourceclaims.resource.k8s.io", {
        "metadata": {"name": name, "namespace": ns},
        "spec": {"devices": {"requests": [{"name": request, "exactly": {
            "deviceClassName": CLASS, "count": len(devices),
            **({"tolerations": [dict(t) for t in tolerations]} if tolerations else {})}}]}}})
    results = []
    for pool, device in devices:
        r: dict[str, Any] = {"request": request, "driver": driver, "pool": pool, "device": device}
        if tolerations:
            r["tolerations"] = [dict(t) for t in tolerations]
        results.append(r)
    claim["status"] = {"allocation": {"devices": {"results": results}}}
    return await client.update_status("resourceclaims.resource.k8s.io", claim)


async def bound_pod(client: clients.Client, name: str, claim: str, *, ns: str = "default", node_name: str = "node-1",
                    containers: Sequence[Mapping[str, Any]] | None = None, pod_claim: str = "gpu",
                    labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A pod using `claim` (as pod claim `pod_claim`), bound to `node_name` through pods/binding,
    and reserved in the claim's status."""
    spec_containers = [dict(c) for c in containers] if containers is not None else [
        {"name": "app", "image": "busybox", "resources": {"claims": [{"name": pod_claim}]}}]
    meta: dict[str, Any] = {"name": name, "namespace": ns}
    if labels:
        meta["labels"] = dict(labels)
    pod = await client.create("pods", {
        "metadata": meta,
        "spec": {"resourceClaims": [{"name": pod_claim, "resourceClaimName": claim}], "containers": spec_containers}})
    await client.bind(namespace=ns, name=name, node=node_name, uid=pod["metadata"]["uid"])
    await reserve(client, claim, pod, ns=ns)
    return await client.get("pods", name, namespace=ns)


async def reserve(client: clients.Client, claim_name: str, pod: Mapping[str, Any], *, ns: str = "default") -> None:
    for _ in range(5):
        claim = await client.get("resourceclaims.resource.k8s.io", claim_name, namespace=ns)
        status = claim.setdefault("status", {})
        status.setdefault("reservedFor", []).append(
            {"resource": "pods", "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]})
        try:
            await client.update_status("resourceclaims.resource.k8s.io", claim)
            return
        except errors.Conflict:
            continue
    raise AssertionError("could not reserve the claim")


async def taint_rule(client: clients.Client, name: str, *, effect: str, key: str = "example.com/maintenance",
                     value: str = "", selector: Mapping[str, str] | None = None) -> dict[str, Any]:
    taint: dict[str, Any] = {"key": key, "effect": effect}
    if value:
        taint["value"] = value
    return await client.create("devicetaintrules.resource.k8s.io", {
        "metadata": {"name": name},
        "spec": {"deviceSelector": dict(selector if selector is not None else {"driver": DRIVER}), "taint": taint}})


async def advance_server_clock(client: clients.Client, seconds: float) -> None:
    """Move a virtual clock the way `cplane clock advance` does: through the Clock object (which
    also moves the in-process VirtualClock the server and controllers share)."""
    from cp import clock as clocks

    obj = await client.get("clocks.sim.cplane.dev", "cluster")
    obj["spec"]["time"] = clocks.rfc3339_micro(clocks.parse_time(obj["spec"]["time"]) + seconds)
    await client.update("clocks.sim.cplane.dev", obj)


def condition(obj: Mapping[str, Any], type_: str) -> dict[str, Any] | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == type_:
            return dict(c)
    return None


async def get_or_none(client: clients.Client, resource: str, name: str, ns: str = "") -> dict[str, Any] | None:
    try:
        return await client.get(resource, name, namespace=ns)
    except errors.NotFound:
        return None


async def events_for(client: clients.Client, name: str, ns: str = "default") -> list[dict[str, Any]]:
    items = (await client.list("events", namespace=ns)).items
    return [e for e in items if (e.get("involvedObject") or {}).get("name") == name]


def resources_status(pod: Mapping[str, Any], container: str = "app") -> list[dict[str, Any]]:
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        if cs.get("name") == container:
            return list(cs.get("allocatedResourcesStatus") or [])
    return []
