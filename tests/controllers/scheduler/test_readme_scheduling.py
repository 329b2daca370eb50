"""README's "Where would it land, and what would it evict?" walkthrough, command by command, with the
real kubectl, the files it names (`examples/scheduling/`) and the demo fleet `make run` starts
(`examples/fleets/demo.yaml`): required pod anti-affinity puts one web pod per node and leaves a
third Pending with upstream's message; `cplane why` names the term and the pod in the way; a
high-priority pod preempts one web pod (DisruptionTarget, Preempted event) and runs in its place."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from pathlib import Path

import pytest
import yaml

from api import server as servers
from controllers.runtime import client as clients
from cp import cli
from cp import clock as clocks
from tests.controllers.scheduler import support as s
from tests.controllers.scheduler.conftest import StartCluster
from tests.controllers.scheduler.test_scheduler_kubectl import KUBECTL, kubectl, kubectl_env, rows

pytestmark = [pytest.mark.kubectl, pytest.mark.skipif(KUBECTL is None, reason="kubectl not installed")]

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples" / "scheduling"
DEMO_FLEET = yaml.safe_load((ROOT / "examples" / "fleets" / "demo.yaml").read_text())
__all__ = ["kubectl_env"]


def _why(srv: servers.Running, name: str) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(["why", f"pod/{name}", "--server", srv.url, "-o", "json"]) == 0
    return dict(json.loads(out.getvalue()))


async def test_the_readme_walkthrough(srv: servers.Running, client: clients.Client, clock: clocks.VirtualClock,
                                      start_cluster: StartCluster, kubectl_env: dict[str, str]) -> None:
    await start_cluster(fleet=DEMO_FLEET, claims=False, workloads=True)
    await kubectl(kubectl_env, "apply", "-f", str(EXAMPLES / "web.yaml"))

    async def web_pods(n: int, running: int) -> list[list[str]] | None:
        table = rows(await kubectl(kubectl_env, "get", "pods", "-l", "app=web", "-o", "wide"))
        return table if len(table) == n and sum(r[2] == "Running" for r in table) == running else None
    table = await s.eventually(lambda: web_pods(2, 2), what="two web pods Running")
    assert sorted(r[6] for r in table) == ["gpu-node-0", "gpu-node-1"]  # one per node

    await kubectl(kubectl_env, "scale", "deploy", "web", "--replicas=3")
    table = await s.eventually(lambda: web_pods(3, 2), what="a third web pod")
    pending = next(r[0] for r in table if r[2] == "Pending")
    cond = await s.wait_unschedulable(client, pending)
    assert cond["message"] == ("0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules. "
                               "no new claims to deallocate, "
                               "preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.")
    doc = await asyncio.to_thread(_why, srv, pending)
    checks = [v["filter"]["checks"][0]["message"] for v in doc["nodes"]]
    assert all(c.startswith("required anti-affinity term 1 (topologyKey kubernetes.io/hostname, selector app=web): "
                            "pod default/web-") for c in checks)
    assert doc["preemption"]["message"].endswith("2 No preemption victims found for incoming pod.")

    await kubectl(kubectl_env, "apply", "-f", str(EXAMPLES / "urgent.yaml"))
    node = str(await s.eventually(lambda: _nominated(client), what="urgent nominated"))
    victims = [p for p in (await client.list("pods", namespace="default")).items
               if p["spec"].get("nodeName") == node and p["metadata"].get("deletionTimestamp")]
    assert len(victims) == 1 and s.condition(victims[0], "DisruptionTarget")["reason"] == "PreemptionByScheduler"
    clock.advance(30)  # the victim's grace period
    assert await s.wait_bound(client, "urgent") == node
    events = rows(await kubectl(kubectl_env, "get", "events", "--field-selector", "reason=Preempted"))
    assert len(events) == 1 and events[0][3] == f"pod/{victims[0]['metadata']['name']}"
    uid = (await client.get("pods", "urgent", namespace="default"))["metadata"]["uid"]
    assert events[0][-1] == f"Preempted by pod {uid} on node {node}"


async def _nominated(client: clients.Client) -> str | None:
    p = await s.get(client, "pods", "urgent")
    return ((p or {}).get("status") or {}).get("nominatedNodeName") or None
