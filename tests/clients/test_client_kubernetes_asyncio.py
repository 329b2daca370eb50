"""`kubernetes_asyncio` 36.1.0 against a live server: list/create of ResourceClaims and a live watch.

In scope: the client's `watch=True` (capital T, Go ParseBool semantics on the server: a server that
only understands "true" answers a plain list and the client fails with "Malformed JSON response"),
typed deserialization of watch events, JSON Content-Type on every request (DELETE without a body too).
Out of scope: schema validation of the returned objects (test_client_schemas.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubernetes_asyncio import config, watch
from kubernetes_asyncio.client import ApiException, CoreV1Api, ResourceV1Api
from kubernetes_asyncio.client.models import ResourceV1ResourceClaim, V1ResourceClaimList, V1Status

from tests.clients import support
from tests.clients.support import DRIVER

NS = "default"


async def scenario(cluster: support.Cluster, workdir: Path) -> None:
    api_client = await config.new_client_from_config(config_file=str(cluster.kubeconfig))
    async with api_client:
        res = ResourceV1Api(api_client)
        core = CoreV1Api(api_client)

        created = await res.create_namespaced_resource_claim(NS, support.resource_claim("pre"))
        assert isinstance(created, ResourceV1ResourceClaim)
        assert created.metadata.uid and created.metadata.resource_version
        assert created.spec.devices.requests[0].exactly.device_class_name == DRIVER

        listed = await res.list_namespaced_resource_claim(NS)
        assert isinstance(listed, V1ResourceClaimList)
        assert [c.metadata.name for c in listed.items] == ["pre"]
        assert [c.metadata.name for c in (await res.list_resource_claim_for_all_namespaces()).items] == ["pre"]
        generated = await res.create_namespaced_resource_claim(
            NS, {**support.resource_claim(""), "metadata": {"generateName": "gen-"}})
        assert generated.metadata.name.startswith("gen-") and len(generated.metadata.name) > len("gen-")
        await res.delete_namespaced_resource_claim(generated.metadata.name, NS)

        # A live watch (the client sends watch=True). The model for resource.k8s.io/v1 claims is
        # ResourceV1ResourceClaim, which the client cannot derive from V1ResourceClaimList: name it.
        events: list[tuple[str, str, Any]] = []
        w = watch.Watch(return_type="ResourceV1ResourceClaim")
        async with w:
            async for ev in w.stream(res.list_namespaced_resource_claim, NS, timeout_seconds=10):
                obj = ev["object"]
                assert isinstance(obj, ResourceV1ResourceClaim), obj
                name = obj.metadata.name
                events.append((ev["type"], name, obj.metadata.labels))
                if (ev["type"], name) == ("ADDED", "pre"):
                    await res.create_namespaced_resource_claim(NS, support.resource_claim("live"))
                elif (ev["type"], name) == ("ADDED", "live"):
                    await res.patch_namespaced_resource_claim("live", NS, {"metadata": {"labels": {"a": "b"}}})
                elif (ev["type"], name) == ("MODIFIED", "live"):
                    deleted = await res.delete_namespaced_resource_claim("live", NS)
                    assert isinstance(deleted, ResourceV1ResourceClaim)
                elif ev["type"] == "DELETED":
                    break
        assert events == [("ADDED", "pre", None), ("ADDED", "live", None), ("MODIFIED", "live", {"a": "b"}),
                          ("DELETED", "live", {"a": "b"})]

        # Resuming from a resourceVersion replays exactly the later events.
        rv = (await core.list_namespaced_config_map(NS)).metadata.resource_version
        await core.create_namespaced_config_map(NS, support.configmap("cm", a="1"))
        status = await core.delete_namespaced_config_map("cm", NS)
        assert isinstance(status, V1Status) and status.status == "Success"
        assert status.details.name == "cm" and status.details.kind == "configmaps"
        replay: list[tuple[str, str]] = []
        w = watch.Watch()
        async with w:
            async for ev in w.stream(core.list_namespaced_config_map, NS, resource_version=rv,
                                     timeout_seconds=10):
                replay.append((ev["type"], ev["object"].metadata.name))
                if ev["type"] == "DELETED":
                    break
        assert replay == [("ADDED", "cm"), ("DELETED", "cm")]

        # Errors surface as ApiException with the Status code.
        try:
            await res.read_namespaced_resource_claim("live", NS)
        except ApiException as exc:
            assert exc.status == 404
        else:
            raise AssertionError("read of a deleted claim succeeded")
        await res.delete_namespaced_resource_claim("pre", NS)


async def test_kubernetes_asyncio_client(cluster: support.Cluster, tmp_path: Path) -> None:
    await scenario(cluster, tmp_path)
