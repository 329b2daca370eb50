"""The gpupool operator (kopf) in the cplane sandbox: a GPUPool becomes a ResourceClaimTemplate owned
by it, its status is written through `/status`, a changed pool replaces its template, and deleting
the pool takes the template with it (the sandbox's garbage collector, a custom owner).

Run from the repository: `.venv/bin/pytest examples/gpupool-operator` (the suite also runs it).

kopf runs in a worker thread with its own event loop (kopf's shutdown cancels the tasks of its loop,
the sandbox's server included if they shared one), stopped with its stop flag.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import gpupool_operator
import kopf
import pytest
import yaml

from cp import errors, testing

HERE = Path(__file__).parent
CRDS = "customresourcedefinitions.apiextensions.k8s.io"
POOLS = "gpupools.ops.example.com"


def _pool(name: str, *, count: int) -> dict[str, Any]:
    return {"apiVersion": "ops.example.com/v1", "kind": "GPUPool", "metadata": {"name": name},
            "spec": {"deviceClassName": "gpu.example.com", "count": count}}


def _count(template: dict[str, Any]) -> int:
    return int(template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"])


@pytest.mark.cplane(controllers=["garbage-collector"])
async def test_a_pool_becomes_an_owned_template(cplane_sandbox: testing.Sandbox,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    sb = cplane_sandbox
    client = sb.client
    monkeypatch.setenv("KUBECONFIG", str(sb.kubeconfig))  # kopf and the operator's own client read it
    await client.create(CRDS, yaml.safe_load((HERE / "crd.yaml").read_text()))

    async def served() -> bool:
        await client.discover()
        return client.mapper.resolve(POOLS) is not None

    await sb.wait_for(served)

    stop, ready = threading.Event(), threading.Event()
    operator = asyncio.ensure_future(asyncio.to_thread(
        # The module's handlers are in kopf's default registry since its import, as with `kopf run`.
        kopf.run, standalone=True, clusterwide=True,
        stop_flag=stop, ready_flag=ready))
    try:
        assert await asyncio.to_thread(ready.wait, 10), "kopf did not start"
        await client.create(POOLS, _pool("training", count=2), namespace="default")

        async def template() -> dict[str, Any] | None:
            try:
                return await client.get("resourceclaimtemplates.resource.k8s.io",
                                         gpupool_operator.template_name("training"), namespace="default")
            except errors.NotFound:
                return None

        made = await sb.wait_for(template)
        pool = await client.get(POOLS, "training", namespace="default")
        assert _count(made) == 2
        assert made["metadata"]["ownerReferences"][0]["uid"] == pool["metadata"]["uid"]

        async def status(generation: int) -> dict[str, Any] | None:
            got = await client.get(POOLS, "training", namespace="default")
            st = got.get("status") or {}
            return got if st.get("phase") == "Ready" and st.get("observedGeneration") == generation else None

        pool = await sb.wait_for(lambda: status(1))
        assert pool["status"] == {"phase": "Ready", "template": "training-gpus", "observedGeneration": 1}
        # Written through the status subresource: the server records it so in managedFields.
        assert any(m.get("subresource") == "status" for m in pool["metadata"]["managedFields"])

        await client.patch(POOLS, "training", {"spec": {"count": 4}}, namespace="default")
        await sb.wait_for(lambda: status(2))

        async def replaced() -> bool:
            got = await template()
            return got is not None and _count(got) == 4

        await sb.wait_for(replaced)

        await client.delete(POOLS, "training", namespace="default")

        async def collected() -> bool:
            return await template() is None

        await sb.wait_for(collected)
    finally:
        stop.set()
        await asyncio.wait_for(operator, 15)
