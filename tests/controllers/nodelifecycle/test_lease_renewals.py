"""Lease renewals alone keep a Node Ready (issue #22): a renewal of a Ready Node's Lease is noted as the
kubelet's probe time without a reconcile of the Node, and the verdict is the same as with one — Ready
while the Lease is renewed although the status heartbeat is old, Unknown one grace period after the
last renewal the controller saw."""

from __future__ import annotations

from typing import Any

import pytest

from controllers import nodelifecycle
from cp import clock as clocks
from cp import testing
from tests.controllers.support import START

LEASES = "leases.coordination.k8s.io"
NS = "kube-node-lease"


def _ready(node: dict[str, Any]) -> str | None:
    return nodelifecycle.ready_status(node)


async def _renew(sb: testing.Sandbox) -> None:
    await sb.client.patch(LEASES, "hand", {"spec": {"renewTime": clocks.rfc3339_micro(sb.clock.now())}},
                          namespace=NS)


@pytest.mark.cplane(controllers=[nodelifecycle.NAME], virtual_clock=True, clock_start=START)
async def test_renewals_alone_keep_the_node_ready_until_they_stop(cplane_sandbox: testing.Sandbox) -> None:
    sb = cplane_sandbox
    stamp = clocks.rfc3339(START)
    node = await sb.client.create("nodes", {"metadata": {"name": "hand"}})
    node["status"] = {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ok",
                                      "lastHeartbeatTime": stamp, "lastTransitionTime": stamp}]}
    await sb.client.update_status("nodes", node)
    await sb.client.create(LEASES, {"metadata": {"name": "hand", "namespace": NS},
                                    "spec": {"holderIdentity": "hand", "leaseDurationSeconds": 40,
                                             "renewTime": clocks.rfc3339_micro(START)}})
    for step in range(1, 25):  # 120 s of renewals every 10 s, the clock moving 5 s at a time
        await sb.advance(5)
        if step % 2 == 0:
            await _renew(sb)

            async def seen(at: float = sb.clock.now()) -> bool:
                lease = await sb.client.get(LEASES, "hand", namespace=NS)
                return clocks.parse_time(lease["spec"]["renewTime"]) >= at
            await sb.wait_for(seen, timeout=10)
        assert _ready(await sb.client.get("nodes", "hand")) == "True", f"at +{5 * step} s"
    last = sb.clock.now()
    for _ in range(9):  # 45 s without a renewal: still within the 50 s grace period
        await sb.advance(5)
    assert _ready(await sb.client.get("nodes", "hand")) == "True"
    await sb.advance(10)  # past last renewal + 50 s

    async def unknown() -> bool:
        return _ready(await sb.client.get("nodes", "hand")) == "Unknown"
    await sb.wait_for(unknown, timeout=10)
    ready = next(c for c in (await sb.client.get("nodes", "hand"))["status"]["conditions"] if c["type"] == "Ready")
    assert clocks.parse_time(ready["lastTransitionTime"]) >= last + 50
