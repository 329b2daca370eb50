"""Builders and bounded polling for the scheduler tests."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from controllers.runtime import client as clients
from cp import errors
from tests import waiting

CLAIMS = "resourceclaims.resource.k8s.io"
TEMPLATES = "resourceclaimtemplates.resource.k8s.io"
CLASSES = "deviceclasses.resource.k8s.io"
SLICES = "resourceslices.resource.k8s.io"
RULES = "devicetaintrules.resource.k8s.io"
GPU_CLASS = "gpu.example.com"


eventually = functools.partial(waiting.eventually, within=10.0)


def request(name: str = "gpu", *, count: int = 1, device_class: str = GPU_CLASS,
            selectors: Sequence[str] = (), **extra: Any) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": device_class, "count": count, **extra}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    return {"name": name, "exactly": exactly}


def claim_spec(*requests: Mapping[str, Any], constraints: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": [dict(r) for r in (requests or (request(),))]}
    if constraints:
        devices["constraints"] = [dict(c) for c in constraints]
    return {"devices": devices}


async def template(client: clients.Client, name: str, spec: Mapping[str, Any], *, ns: str = "default") -> dict[str, Any]:
    return await client.create(TEMPLATES, {"metadata": {"name": name, "namespace": ns}, "spec": {"spec": dict(spec)}})


async def claim(client: clients.Client, name: str, spec: Mapping[str, Any], *, ns: str = "default") -> dict[str, Any]:
    return await client.create(CLAIMS, {"metadata": {"name": name, "namespace": ns}, "spec": dict(spec)})


def pod(name: str, *, template: str | None = None, claim: str | None = None, ns: str = "default",
        requests: Mapping[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "app", "image": "registry.k8s.io/pause:3.10"}
    body: dict[str, Any] = {"containers": [container], **spec}
    if template is not None or claim is not None:
        source = {"resourceClaimTemplateName": template} if template is not None else {"resourceClaimName": claim}
        body["resourceClaims"] = [{"name": "gpu", **source}]
        container["resources"] = {"claims": [{"name": "gpu"}]}
    if requests:  # extended resources cannot be overcommitted: limits = requests
        container.setdefault("resources", {}).update(requests=dict(requests), limits=dict(requests))
    return {"metadata": {"name": name, "namespace": ns}, "spec": body}


async def get(client: clients.Client, resource: str, name: str, ns: str = "default") -> dict[str, Any] | None:
    try:
        return await client.get(resource, name, namespace=ns)
    except errors.NotFound:
        return None


def condition(obj: Mapping[str, Any], type_: str) -> dict[str, Any] | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == type_:
            return dict(c)
    return None


async def bound_node(client: clients.Client, name: str, ns: str = "default") -> str:
    p = await get(client, "pods", name, ns)
    return str(((p or {}).get("spec") or {}).get("nodeName") or "")


async def wait_bound(client: clients.Client, name: str, ns: str = "default", within: float = 10.0) -> str:
    return str(await eventually(lambda: bound_node(client, name, ns), within=within, what=f"pod {name} bound"))


async def wait_unschedulable(client: clients.Client, name: str, ns: str = "default",
                             reason: str = "Unschedulable", within: float = 10.0) -> dict[str, Any]:
    async def check() -> dict[str, Any] | None:
        p = await get(client, "pods", name, ns)
        c = condition(p or {}, "PodScheduled")
        return c if c is not None and c.get("status") == "False" and c.get("reason") == reason else None
    return dict(await eventually(check, within=within, what=f"pod {name} {reason}"))


async def pod_claim(client: clients.Client, pod_name: str, ns: str = "default") -> dict[str, Any]:
    """The claim generated for the pod's `gpu` pod claim."""
    async def check() -> dict[str, Any] | None:
        p = await get(client, "pods", pod_name, ns)
        for st in ((p or {}).get("status") or {}).get("resourceClaimStatuses") or []:
            if st.get("name") == "gpu" and st.get("resourceClaimName"):
                return await get(client, CLAIMS, st["resourceClaimName"], ns)
        return None
    return dict(await eventually(check, what=f"claim of {pod_name}"))


def devices(claim_obj: Mapping[str, Any]) -> list[tuple[str, str]]:
    results = (((claim_obj.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
    return [(r["pool"], r["device"]) for r in results]


async def events_for(client: clients.Client, name: str, ns: str = "default", reason: str = "") -> list[dict[str, Any]]:
    items = (await client.list("events", namespace=ns)).items
    return [e for e in items if (e.get("involvedObject") or {}).get("name") == name
            and (not reason or e.get("reason") == reason)]
