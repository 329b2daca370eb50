"""`kr8s` 0.20.15 (async API) against a live server.

In scope: trailing-slash discovery (`/version/`, `/api/`, `/apis/`), kind lookup from discovery
(`resourceclaims.resource.k8s.io`), paginated `get` (kr8s lists with `limit=100` and follows
`metadata.continue`: every object exactly once, from one consistent snapshot), `label` and `scale`
(merge patches on the main resource), create/delete.
kr8s warns for servers newer than 1.35; exactly that warning is filtered here.
Out of scope: schema validation of the returned objects (test_client_schemas.py).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import kr8s
import kr8s.asyncio
import pytest
from kr8s.asyncio.objects import Deployment, Pod, new_class

from tests.clients import support

NS = "default"
BULK = 130

KR8S_VERSION_WARNING = pytest.mark.filterwarnings(
    r"ignore:Kubernetes version v1\.37\.0-cplane is not supported\. Supported versions for kr8s:UserWarning")
pytestmark = KR8S_VERSION_WARNING


async def scenario(cluster: support.Cluster, workdir: Path) -> None:
    api = await kr8s.asyncio.api(kubeconfig=str(cluster.kubeconfig))
    try:
        await _run(api)
    finally:
        if api._session is not None:  # kr8s has no public close; don't leak the httpx pool
            await api._session.aclose()


async def _run(api: kr8s.asyncio.Api) -> None:
    version = await api.version()
    assert (version["major"], version["minor"]) == ("1", "37")

    # Discovery: /api/ and /apis/ (trailing slash), then every group version.
    resources = await api.api_resources()
    by_name = {(r["name"], r["version"]): r for r in resources}
    assert by_name[("resourceclaims", "resource.k8s.io/v1")]["namespaced"] is True
    assert by_name[("resourceslices", "resource.k8s.io/v1")]["namespaced"] is False
    assert "deploy" in by_name[("deployments", "apps/v1")]["shortNames"]
    assert ("pods", "v1") in by_name

    # Pagination: more than one page of 100.
    pods = [Pod(support.pod(f"p-{i:03d}", app="bulk"), namespace=NS, api=api) for i in range(BULK)]
    await asyncio.gather(*(p.create() for p in pods))
    expected = sorted(p.name for p in pods)
    async with api.call_api("GET", version="v1", namespace=NS, url="pods", params={"limit": 100}) as r:
        first_page = r.json()
    assert len(first_page["items"]) == 100 and first_page["metadata"].get("continue")

    # A consistent snapshot: changes made while paging don't show up in the later pages.
    got: list[str] = []
    async for pod in kr8s.asyncio.get("pods", namespace=NS, api=api):
        got.append(pod.name)
        if len(got) == 1:
            await Pod(support.pod("p-999", app="bulk"), namespace=NS, api=api).create()
            await pods[-1].delete()
    assert sorted(got) == expected and len(got) == len(set(got)) == BULK
    live = sorted([p.name async for p in kr8s.asyncio.get("pods", namespace=NS, api=api)])
    assert live == sorted([*expected[:-1], "p-999"])
    selected = [p.name async for p in kr8s.asyncio.get("pods", namespace=NS, label_selector={"app": "bulk"},
                                                        api=api)]
    assert len(selected) == BULK

    # label: a merge patch on the object.
    first = pods[0]
    await first.label({"tier": "front"})
    assert first.labels == {"app": "bulk", "tier": "front"}
    again = await Pod.get(first.name, namespace=NS, api=api)
    assert again.labels == {"app": "bulk", "tier": "front"}
    await first.remove_label("tier")
    await first.refresh()
    assert first.labels == {"app": "bulk"}

    # scale: a merge patch of spec.replicas on the Deployment.
    dep = await Deployment(support.deployment("web", 1), namespace=NS, api=api)
    await dep.create()
    await dep.scale(3)
    fresh = await Deployment.get("web", namespace=NS, api=api)
    assert fresh.replicas == 3 and fresh.raw["metadata"]["generation"] == 2
    await dep.delete()
    assert not await dep.exists()

    # Kinds resolved from discovery, by full name.
    claim_cls = new_class("ResourceClaim", version="resource.k8s.io/v1", namespaced=True)
    claim = claim_cls(support.resource_claim("kr8s-claim"), namespace=NS, api=api)
    await claim.create()
    claims = [c async for c in api.get("resourceclaims.resource.k8s.io", namespace=NS)]
    assert [(c.kind, c.name) for c in claims] == [("ResourceClaim", "kr8s-claim")]
    assert claims[0].raw["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == support.DRIVER
    one = [c async for c in api.get("resourceclaims.resource.k8s.io", "kr8s-claim", namespace=NS)]
    assert [c.metadata.uid for c in one] == [claim.metadata.uid]
    await claim.delete()
    assert [c async for c in api.get("resourceclaims.resource.k8s.io", namespace=NS)] == []


async def test_kr8s_client(cluster: support.Cluster, tmp_path: Path) -> None:
    await scenario(cluster, tmp_path)
