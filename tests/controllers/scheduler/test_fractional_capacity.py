"""Two claims share one device's consumable capacity through the scheduler, end to end in the sandbox:
with DRAFractionalCapacityRange on, each asks for 0.25 of a capacity of 1 offered in steps of 0.1 from
0.2 and takes 0.3, and both pods are bound to the device; at the gate's 1.37 default (off) each request
rounds up to a whole 1 and the second pod stays unschedulable. The server validates the slice with the
same gates (a misaligned default is refused only with the gate on)."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from cp import errors
from cp.testing import Sandbox, sandbox
from tests.cp.scheduling.explain.support import node, pod
from tests.waiting import eventually

R = "resource.k8s.io"
DRIVER = "nic.example.com"


def bandwidth_slice(default: str = "200m", value: str = "1") -> dict[str, Any]:
    policy = {"default": default, "validRange": {"min": "200m", "max": value, "step": "100m"}}
    return {"metadata": {"name": "node-1-nics"}, "spec": {
        "driver": DRIVER, "nodeName": "node-1", "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": "nic-0", "allowMultipleAllocations": True,
                     "capacity": {"bandwidth": {"value": value, "requestPolicy": policy}}}]}}


async def _setup(sb: Sandbox, *, value: str = "1", names: tuple[str, ...] = ("a", "b")) -> None:
    n = node("node-1")
    created = await sb.client.create("nodes", {k: v for k, v in n.items() if k != "status"})
    created["status"] = n["status"]
    await sb.client.update_status("nodes", created)
    await sb.client.create(f"deviceclasses.{R}", {"metadata": {"name": "nic"}, "spec": {
        "selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})
    await sb.client.create(f"resourceslices.{R}", bandwidth_slice(value=value))
    for name in names:
        await sb.client.create(f"resourceclaims.{R}", {"metadata": {"name": name}, "spec": {"devices": {"requests": [
            {"name": "nic", "exactly": {"deviceClassName": "nic", "capacity": {"requests": {"bandwidth": "250m"}}}}]}}},
            namespace="default")
        p = pod(name, name)
        await sb.client.create("pods", {"metadata": {"name": name}, "spec": p["spec"]}, namespace="default")


async def _pods(sb: Sandbox) -> dict[str, dict[str, Any]]:
    return {p["metadata"]["name"]: p for p in (await sb.client.list("pods", namespace="default")).items}


def _unschedulable(p: dict[str, Any]) -> bool:
    return any(c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable"
               for c in (p.get("status") or {}).get("conditions") or [])


async def test_two_claims_share_fractional_capacity_with_the_gate_on() -> None:
    async with sandbox(controllers=("resourceclaim", "scheduler"),
                       feature_gates="DRAFractionalCapacityRange=true") as sb:
        await _setup(sb)

        async def both_bound() -> bool:
            return all(p["spec"].get("nodeName") == "node-1" for p in (await _pods(sb)).values())

        await eventually(both_bound, within=10, what="both pods bound")
        claims = (await sb.client.list(f"resourceclaims.{R}", namespace="default")).items
        results = [c["status"]["allocation"]["devices"]["results"][0] for c in claims]
        assert {(r["pool"], r["device"]) for r in results} == {("node-1", "nic-0")}
        assert [r["consumedCapacity"] for r in results] == [{"bandwidth": "300m"}] * 2
        assert len({r["shareID"] for r in results}) == 2


async def test_at_the_default_each_request_takes_a_whole_unit() -> None:
    async with sandbox(controllers=("resourceclaim", "scheduler")) as sb:
        await _setup(sb)

        async def one_bound_one_not() -> bool:
            pods = list((await _pods(sb)).values())
            bound = [p for p in pods if p["spec"].get("nodeName")]
            return len(bound) == 1 and sum(_unschedulable(p) for p in pods) == 1

        await eventually(one_bound_one_not, within=10, what="one pod bound, the other unschedulable")
        claims = (await sb.client.list(f"resourceclaims.{R}", namespace="default")).items
        allocated = [c for c in claims if (c.get("status") or {}).get("allocation")]
        assert [c["status"]["allocation"]["devices"]["results"][0]["consumedCapacity"] for c in allocated] == [
            {"bandwidth": "1"}]


async def test_why_names_the_gate_when_a_request_fits_only_in_milli_units() -> None:
    """A device of 0.5: a request of 0.25 takes 0.3 in milli-units, but 1 in whole units, over the
    range's max: the pod waits, and `why` finds that the gate would make it fit."""
    async with sandbox(controllers=("resourceclaim", "scheduler")) as sb:
        await _setup(sb, value="500m", names=("c",))

        async def unschedulable() -> bool:
            return _unschedulable((await _pods(sb))["c"])

        await eventually(unschedulable, within=10, what="the pod unschedulable")
        async with aiohttp.ClientSession(base_url=sb.url) as http, \
                http.get("/apis/sim.cplane.dev/v1alpha1/namespaces/default/pods/c/why") as r:
            doc = await r.json()
        assert [s["message"] for s in doc["suggestions"]] == [
            "node-1 would fit if the DRAFractionalCapacityRange feature were enabled"]


@pytest.mark.parametrize(("gates", "refused"), [("DRAFractionalCapacityRange=true", True), (None, False)])
async def test_the_server_validates_with_its_gates(gates: str | None, refused: bool) -> None:
    async with sandbox(controllers=(), feature_gates=gates) as sb:
        body = bandwidth_slice(default="250m")  # not on a step of 0.1 from 0.2, in milli-units
        if refused:
            with pytest.raises(errors.StatusError) as exc:
                await sb.client.create(f"resourceslices.{R}", body)
            assert "value is not a multiple of a given step (100m) from (200m)" in str(exc.value)
        else:
            await sb.client.create(f"resourceslices.{R}", body)
