"""Shared by the node lifecycle tests: moving a sandbox's virtual clock the way real time passes."""

from __future__ import annotations

from cp import clock as clocks
from cp import testing

STEP = 5.0
RENEW = 10.0  # the fleet kubelet's lease renewal interval


async def advance(sb: testing.Sandbox, seconds: float, *, alive: tuple[str, ...] = ("node-1",)) -> None:
    """Move the clock in STEP-second steps; after each, wait until the running kubelets (`alive`)
    renewed their Lease within the last renewal interval and a step (a reconcile in flight while the
    clock moves requeues one step late)."""
    moved = 0.0
    while moved < seconds:
        step = min(STEP, seconds - moved)
        await sb.advance(step)
        moved += step

        async def renewed(now: float = sb.clock.now()) -> bool:
            for name in alive:
                lease = await sb.client.get("leases.coordination.k8s.io", name, namespace="kube-node-lease")
                if clocks.parse_time(lease["spec"]["renewTime"]) < now - RENEW - STEP:
                    return False
            return True

        await sb.wait_for(renewed, timeout=10)
