"""`GET .../pods/{name}/why` on a running server, `--at REV` time travel, and `cplane why`."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from api import server as servers
from controllers.runtime import client as clients
from cp import cli
from tests.cp.scheduling.explain.support import GPU, claim, device_class, gpus, node, pod, rslice, taint_rule

CLAIMS = "resourceclaims.resource.k8s.io"
WHY = "/apis/sim.cplane.dev/v1alpha1/namespaces/default/pods/web-0/why"


@pytest.fixture
async def srv(tmp_path: Path) -> AsyncIterator[servers.Running]:
    async with servers.running(data_dir=tmp_path / "data") as running:
        yield running


def _body(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k != "status"}


async def _world(client: clients.Client) -> int:
    """node-1 with two GPUs: gpu-0 held by claim `other`, gpu-1 tainted by a DeviceTaintRule.
    Returns the revision at which web-0 cannot fit."""
    n = node("node-1")
    created = await client.create("nodes", _body(n))
    created["status"] = n["status"]
    await client.update_status("nodes", created)
    await client.create("deviceclasses.resource.k8s.io", device_class())
    s = rslice("node-1-gpus", "node-1", *gpus(2))
    await client.create("resourceslices.resource.k8s.io", {"metadata": {"name": s["metadata"]["name"]}, "spec": s["spec"]})
    await client.create("devicetaintrules.resource.k8s.io", taint_rule("maintenance", f"{GPU}/maintenance",
                                                                        device_name="gpu-1"))
    other = claim("other", allocated=[("node-1", "gpu-0")])
    created = await client.create(CLAIMS, {"metadata": {"name": "other", "namespace": "default"}, "spec": other["spec"]})
    created["status"] = other["status"]
    await client.update_status(CLAIMS, created)
    mine = claim("web-0-gpu")
    await client.create(CLAIMS, {"metadata": {"name": "web-0-gpu", "namespace": "default"}, "spec": mine["spec"]})
    p = pod("web-0", "web-0-gpu")
    created = await client.create("pods", {"metadata": {"name": "web-0", "namespace": "default"}, "spec": p["spec"]})
    return int(created["metadata"]["resourceVersion"])


async def test_endpoint_now_and_at_a_past_revision(srv: servers.Running) -> None:
    async with clients.Client(srv.url) as client:
        before = await _world(client)
        async with aiohttp.ClientSession(base_url=srv.url) as http:
            async with http.get(WHY) as r:
                assert r.status == 200, await r.text()
                doc = await r.json()
            assert doc["apiVersion"] == "sim.cplane.dev/v1alpha1" and doc["kind"] == "PodSchedulingExplanation"
            assert doc["verdict"] == "Unschedulable"
            assert doc["metadata"]["resourceVersion"] == str(before)
            assert doc["suggestions"][0]["message"] == (f"node-1 would fit if claim web-0-gpu tolerated "
                                                        f"{GPU}/maintenance:NoSchedule")

            # The holder goes away: now the pod fits; at the old revision it still did not.
            await client.delete(CLAIMS, "other", namespace="default")
            async with http.get(WHY) as r:
                doc = await r.json()
            assert doc["verdict"] == "Schedulable"
            assert doc["chosen"]["allocation"][0]["devices"] == [{"request": "gpu", "device": f"{GPU}/node-1/gpu-0"}]
            async with http.get(WHY, params={"at": str(before)}) as r:
                old = await r.json()
            assert old["verdict"] == "Unschedulable"
            assert old["metadata"]["resourceVersion"] == str(before)

            async with http.get(WHY, params={"at": str(before), "output": "text"}) as r:
                assert r.headers["Content-Type"].startswith("text/plain")
                text = await r.text()
            assert text.startswith(f"Pod default/web-0 at revision {before}: Unschedulable\n")
            assert "from DeviceTaintRule maintenance (gpu-1)" in text

            async with http.get(WHY, params={"node": "node-1", "suggest": "false"}) as r:
                doc = await r.json()
            assert [v["node"] for v in doc["nodes"]] == ["node-1"] and "suggestions" not in doc


async def test_endpoint_errors(srv: servers.Running) -> None:
    async with aiohttp.ClientSession(base_url=srv.url) as http:
        async with http.get(WHY) as r:
            assert r.status == 404
            body = await r.json()
            assert body["kind"] == "Status" and body["reason"] == "NotFound"
        async with http.get(WHY, params={"at": "999999"}) as r:
            assert r.status == 504
        async with http.get(WHY, params={"at": "x"}) as r:
            assert r.status == 400
        async with http.post(WHY) as r:
            assert r.status == 405


def _ours(out: str, start: str = "Pod default/") -> str:
    """The command's output, without the in-process server's request log lines."""
    return out[out.index(start):]


async def test_cli_over_http_and_offline(srv: servers.Running, capsys: pytest.CaptureFixture[str]) -> None:
    async with clients.Client(srv.url) as client:
        before = await _world(client)
        await client.delete(CLAIMS, "other", namespace="default")
    code = await asyncio.to_thread(cli.main, ["why", "pod/web-0", "--server", srv.url, "--at", str(before)])
    out = _ours(capsys.readouterr().out)
    assert code == 0
    assert out.startswith(f"Pod default/web-0 at revision {before}: Unschedulable")
    assert f"Smallest change:\n  node-1 would fit if claim web-0-gpu tolerated {GPU}/maintenance:NoSchedule" in out

    data_dir = str(srv.kubeconfig.parent)
    code = await asyncio.to_thread(cli.main, ["why", "web-0", "-n", "default", "--data-dir", data_dir, "-o", "json"])
    doc, _ = json.JSONDecoder().raw_decode(_ours(capsys.readouterr().out, "{\n"))
    assert code == 0 and doc["verdict"] == "Schedulable"
    code = await asyncio.to_thread(cli.main, ["why", "pod/web-0", "--data-dir", data_dir, "--at", str(before),
                                              "--node", "node-1"])
    assert code == 0 and "1 device already allocated: default/other (gpu-0)" in capsys.readouterr().out

    code = await asyncio.to_thread(cli.main, ["why", "pod/nope", "--server", srv.url])
    assert code == 1
    assert "not found" in capsys.readouterr().err
    code = await asyncio.to_thread(cli.main, ["why", "deployment/web", "--server", srv.url])
    assert code == 2
