"""The scheduler with `--feature-gates` (`scheduler.new(feature_gates=...)`): DRADeviceTaintRules off,
DeviceTaintRules taint nothing (upstream's slice tracker ignores them); DRADeviceTaints off, no device
taint keeps a claim out (the allocator's DeviceTaints feature)."""

from __future__ import annotations

import pytest

from controllers.runtime import client as clients
from cp import features
from tests.controllers.scheduler import support as s
from tests.controllers.scheduler.conftest import StartCluster

RULE = {"metadata": {"name": "maintenance"}, "spec": {
    "deviceSelector": {"driver": "gpu.example.com"},
    "taint": {"key": "example.com/maintenance", "effect": "NoSchedule"}}}


async def test_default_gates_honour_device_taint_rules(client: clients.Client, start_cluster: StartCluster) -> None:
    await start_cluster()
    await client.create(s.RULES, RULE)
    await s.template(client, "one", s.claim_spec(s.request()))
    await client.create("pods", s.pod("p", template="one"))
    cond = await s.wait_unschedulable(client, "p")
    assert "cannot allocate all claims" in cond["message"]


@pytest.mark.parametrize("gate_text", ["DRADeviceTaintRules=false", "DRADeviceTaints=false"])
async def test_with_the_gate_off_the_rule_keeps_nothing_out(client: clients.Client, start_cluster: StartCluster,
                                                           gate_text: str) -> None:
    await start_cluster(feature_gates=features.parse(gate_text))
    await client.create(s.RULES, RULE)
    await s.template(client, "one", s.claim_spec(s.request()))
    await client.create("pods", s.pod("p", template="one"))
    assert (await s.wait_bound(client, "p")).startswith("gpu-")
