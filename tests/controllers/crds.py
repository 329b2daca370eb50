"""A CustomResourceDefinition for controller tests (a namespaced `Widget` with status and scale
subresources), established through the API, and its resource as the controllers' discovery sees it."""

from __future__ import annotations

import copy
from typing import Any

from controllers.runtime import client as clients
from cp import errors
from cp import resources as res
from tests.crds import WIDGETS
from tests.waiting import eventually

CRDS = "customresourcedefinitions.apiextensions.k8s.io"



def definition(*, kind: str = "Widget", plural: str = "widgets", scope: str = "Namespaced",
               group: str = "example.com") -> dict[str, Any]:
    crd = copy.deepcopy(WIDGETS)
    crd["metadata"]["name"] = f"{plural}.{group}"
    crd["spec"].update(group=group, scope=scope)
    crd["spec"]["names"] = {"plural": plural, "singular": kind.lower(), "kind": kind, "listKind": f"{kind}List"}
    return crd


async def establish(client: clients.Client, crd: dict[str, Any] | None = None) -> res.ResourceKind:
    """Create the definition, wait until discovery lists its resource, and return that resource."""
    crd = crd or WIDGETS
    await client.create(CRDS, crd)
    group, plural = crd["spec"]["group"], crd["spec"]["names"]["plural"]

    async def served() -> res.ResourceKind | None:
        await client.discover()
        return client.mapper.by_group_resource(group, plural)

    found: res.ResourceKind = await eventually(served, within=5.0, what=f"{plural}.{group} served")
    return found


async def gone(client: clients.Client, kind: res.ResourceKind | str, name: str, namespace: str = "") -> bool:
    try:
        await client.get(kind, name, namespace=namespace)
    except errors.NotFound:
        return True
    return False


def ref(obj: dict[str, Any], *, block: bool = False) -> dict[str, Any]:
    out = {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": obj["metadata"]["name"],
           "uid": obj["metadata"]["uid"]}
    if block:
        out["blockOwnerDeletion"] = True
    return out
