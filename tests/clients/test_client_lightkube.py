"""`lightkube` 1.0.1 (+ lightkube-models 1.37) against a live server.

In scope: create, get, list, merge `patch`, server-side `apply` (field manager; create then update;
`force=True`), the ResourceClaim status subresource, `watch` with `server_timeout`, delete (no body),
on ConfigMaps and the resource.k8s.io/v1 kinds. lightkube does no discovery and sends `Accept: */*`.
Out of scope: schema validation of the returned objects (test_client_schemas.py).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lightkube import ApiError, AsyncClient, KubeConfig
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import ConfigMap
from lightkube.resources.resource_v1 import DeviceClass, ResourceClaim, ResourceClaimStatus, ResourceSlice
from lightkube.types import PatchType

from tests.clients import support
from tests.clients.support import DRIVER

NS = "default"
MANAGER = "lightkube-test"


def _client(cluster: support.Cluster) -> AsyncClient:
    return AsyncClient(config=KubeConfig.from_file(cluster.kubeconfig))


async def _crud(client: AsyncClient) -> None:
    cm = await client.create(ConfigMap(metadata=ObjectMeta(name="plain", labels={"app": "lk"}), data={"a": "1"}),
                             field_manager=MANAGER)
    assert isinstance(cm, ConfigMap) and cm.metadata is not None
    assert cm.metadata.uid and cm.metadata.resourceVersion and cm.metadata.namespace == NS
    got = await client.get(ConfigMap, "plain", namespace=NS)
    assert got.data == {"a": "1"} and got.metadata is not None and got.metadata.uid == cm.metadata.uid
    names = [c.metadata.name async for c in client.list(ConfigMap, namespace=NS, labels={"app": "lk"})
             if c.metadata]
    assert names == ["plain"]
    assert [c async for c in client.list(ConfigMap, namespace=NS, labels={"app": "other"})] == []
    patched = await client.patch(ConfigMap, "plain", {"data": {"b": "2"}, "metadata": {"labels": {"x": "y"}}},
                                 namespace=NS, patch_type=PatchType.MERGE, field_manager=MANAGER)
    assert patched.data == {"a": "1", "b": "2"}
    assert patched.metadata is not None and patched.metadata.labels == {"app": "lk", "x": "y"}
    removed = await client.patch(ConfigMap, "plain", {"data": {"a": None}}, namespace=NS,
                                 patch_type=PatchType.MERGE)
    assert removed.data == {"b": "2"}
    await client.delete(ConfigMap, "plain", namespace=NS)
    with pytest.raises(ApiError) as info:
        await client.get(ConfigMap, "plain", namespace=NS)
    assert info.value.status.code == 404 and info.value.status.reason == "NotFound"


async def _apply(client: AsyncClient) -> None:
    # Server-side apply creates (201) ...
    first = await client.apply(ConfigMap(metadata=ObjectMeta(name="applied", namespace=NS), data={"k": "v1"}),
                               field_manager=MANAGER)
    assert first.data == {"k": "v1"} and first.metadata is not None and first.metadata.uid
    assert [e.manager for e in first.metadata.managedFields or []] == [MANAGER]
    # ... then updates in place; force=True takes over whatever another manager owns.
    second = await client.apply(
        ConfigMap(metadata=ObjectMeta(name="applied", namespace=NS, labels={"v": "2"}), data={"k": "v2"}),
        field_manager=MANAGER, force=True)
    assert second.data == {"k": "v2"}
    assert second.metadata is not None and second.metadata.labels == {"v": "2"}
    assert second.metadata.uid == first.metadata.uid
    assert int(second.metadata.resourceVersion or 0) > int(first.metadata.resourceVersion or 0)
    # Apply on a cluster-scoped DRA kind.
    dc = await client.apply(DeviceClass.from_dict(support.device_class()), field_manager=MANAGER)
    assert dc.metadata is not None and dc.metadata.name == DRIVER and dc.spec is not None
    dc = await client.apply(DeviceClass.from_dict({**support.device_class(),
                                                   "metadata": {"name": DRIVER, "labels": {"a": "b"}}}),
                            field_manager=MANAGER, force=True)
    assert dc.metadata is not None and dc.metadata.labels == {"a": "b"}
    await client.delete(DeviceClass, DRIVER)
    await client.delete(ConfigMap, "applied", namespace=NS)


async def _resource_claims(client: AsyncClient) -> None:
    rc = await client.create(ResourceClaim.from_dict(support.resource_claim("lk-claim")), namespace=NS)
    assert isinstance(rc, ResourceClaim) and rc.spec.devices is not None
    assert rc.spec.devices.requests is not None and rc.spec.devices.requests[0].exactly is not None
    assert rc.spec.devices.requests[0].exactly.deviceClassName == DRIVER
    assert [c.metadata.name async for c in client.list(ResourceClaim, namespace="*") if c.metadata] == ["lk-claim"]
    rc = await client.patch(ResourceClaim, "lk-claim", {"metadata": {"labels": {"l": "1"}}}, namespace=NS,
                            patch_type=PatchType.MERGE)
    assert rc.metadata is not None and rc.metadata.labels == {"l": "1"}
    rc = await client.patch(ResourceClaimStatus, "lk-claim", {"status": {"allocation": support.allocation()}},
                            namespace=NS, patch_type=PatchType.MERGE)
    assert rc.status is not None and rc.status.allocation is not None
    assert rc.status.allocation.devices is not None and rc.status.allocation.devices.results is not None
    assert rc.status.allocation.devices.results[0].device == "gpu-0"
    st = await client.get(ResourceClaimStatus, "lk-claim", namespace=NS)
    assert st.status is not None and st.status.allocation is not None
    slice_ = await client.create(ResourceSlice.from_dict(support.resource_slice("lk-slice")))
    assert slice_.spec.pool.name == "node-1"
    on_node = [s.metadata.name async for s in client.list(ResourceSlice, fields={"spec.nodeName": "node-1"})
               if s.metadata]
    assert on_node == ["lk-slice"]
    await client.delete(ResourceSlice, "lk-slice")
    await client.delete(ResourceClaim, "lk-claim", namespace=NS)


async def _watch(client: AsyncClient) -> None:
    await client.create(ConfigMap(metadata=ObjectMeta(name="before"), data={"n": "0"}), namespace=NS)
    seen: list[tuple[str, str, dict[str, str] | None]] = []
    stream = client.watch(ConfigMap, namespace=NS, server_timeout=5)
    try:
        async for op, obj in stream:
            assert isinstance(obj, ConfigMap)
            name = obj.metadata.name if obj.metadata else ""
            seen.append((op, name, obj.data))
            if (op, name) == ("ADDED", "before"):
                await client.create(ConfigMap(metadata=ObjectMeta(name="during"), data={"n": "1"}), namespace=NS)
            elif (op, name) == ("ADDED", "during"):
                await client.patch(ConfigMap, "during", {"data": {"n": "2"}}, namespace=NS,
                                   patch_type=PatchType.MERGE)
            elif (op, name) == ("MODIFIED", "during"):
                await client.delete(ConfigMap, "during", namespace=NS)
            elif op == "DELETED":
                break
    finally:
        await stream.aclose()  # type: ignore[attr-defined]
    assert seen == [("ADDED", "before", {"n": "0"}), ("ADDED", "during", {"n": "1"}),
                    ("MODIFIED", "during", {"n": "2"}), ("DELETED", "during", {"n": "2"})]
    await client.delete(ConfigMap, "before", namespace=NS)


async def scenario(cluster: support.Cluster, workdir: Path) -> None:
    client = _client(cluster)
    try:
        await _crud(client)
        await _apply(client)
        await _resource_claims(client)
        await asyncio.wait_for(_watch(client), 20)
    finally:
        await client.close()


async def test_lightkube_client(cluster: support.Cluster, tmp_path: Path) -> None:
    await scenario(cluster, tmp_path)


async def test_lightkube_apply_field_ownership(cluster: support.Cluster) -> None:
    """Server-side apply semantics that lightkube users rely on: conflicts between managers need
    `force=True`, and a manager dropping a field it owns removes it."""
    client = _client(cluster)
    try:
        def cm(**data: str) -> ConfigMap:
            return ConfigMap(metadata=ObjectMeta(name="owned", namespace=NS), data=data)

        await client.apply(cm(shared="a", mine="x"), field_manager="manager-a")
        with pytest.raises(ApiError) as info:
            await client.apply(cm(shared="b"), field_manager="manager-b")
        assert info.value.status.code == 409 and info.value.status.reason == "Conflict"
        causes = info.value.status.details.causes if info.value.status.details else None
        assert causes and causes[0].reason == "FieldManagerConflict" and causes[0].field == ".data.shared"
        forced = await client.apply(cm(shared="b"), field_manager="manager-b", force=True)
        assert forced.data == {"shared": "b", "mine": "x"}
        # manager-a no longer owns .data.shared, so dropping it keeps manager-b's value ...
        kept = await client.apply(cm(mine="x"), field_manager="manager-a")
        assert kept.data == {"shared": "b", "mine": "x"}
        # ... while dropping a field it owns alone removes it.
        dropped = await client.apply(cm(), field_manager="manager-a")
        assert dropped.data == {"shared": "b"}
    finally:
        await client.close()
