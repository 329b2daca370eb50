"""The device taint evictor with the DRA gates: DRADeviceTaintRules off, DeviceTaintRules evict nothing
(kube-controller-manager passes no rule informer) while a slice's own taints still do; DRADeviceTaints
off, the controller is not started (`cp.cli.controllers.gated_names`)."""

from __future__ import annotations

from controllers import taint_evictor
from controllers.runtime import client as clients
from cp import features
from cp.cli import controllers as controller_commands
from tests.controllers.taints import support as s
from tests.controllers.taints.conftest import StartControllers

NO_EXECUTE = {"key": "example.com/broken", "value": "yes", "effect": "NoExecute"}


async def test_without_rules_only_slice_taints_evict(client: clients.Client,
                                                     start_controllers: StartControllers) -> None:
    await s.node(client, "node-1")
    await s.resource_slice(client, "node-1", ["gpu-0", "gpu-1"])
    await s.allocated_claim(client, "claim-a", [("node-1", "gpu-0")])
    await s.bound_pod(client, "pod-a", "claim-a")
    running = await start_controllers(reporter=False, use_rules=False)
    await s.taint_rule(client, "maintenance", effect="NoExecute", selector={"driver": s.DRIVER, "device": "gpu-0"})
    await running.settle()
    pod = await client.get("pods", "pod-a", namespace="default")
    assert not pod["metadata"].get("deletionTimestamp")
    assert not running.evictor.pending
    # the device's own taint, in a newer generation of its slice, still evicts
    await s.resource_slice(client, "node-1", [{"name": "gpu-0", "taints": [NO_EXECUTE]}, "gpu-1"], generation=2)

    async def evicted() -> bool:
        got = await s.get_or_none(client, "pods", "pod-a", "default")
        return got is None or bool(got["metadata"].get("deletionTimestamp"))

    await s.eventually(evicted, what="pod evicted by the slice's taint")


def test_gated_names() -> None:
    assert controller_commands.gated_names(None, None) is None
    assert controller_commands.gated_names(features.DEFAULT, ["scheduler"]) == ["scheduler"]
    off = features.parse("DRADeviceTaints=false")
    assert controller_commands.gated_names(off, None) == ["*", f"-{taint_evictor.NAME}"]
    from controllers import registry

    selected = registry.resolve_names(controller_commands.gated_names(off, None))
    assert taint_evictor.NAME not in selected and "resourceclaim" in selected
    overrides = controller_commands.gate_overrides(features.parse("DRADeviceTaintRules=false"))
    assert overrides[taint_evictor.NAME].keywords == {"use_rules": False}
