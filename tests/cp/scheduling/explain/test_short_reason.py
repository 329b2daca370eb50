"""The short form for the scheduler's FailedScheduling event / PodScheduled message."""

from __future__ import annotations

from cp.dra import AllocatedState, Allocator
from cp.scheduling import explain

from .support import GPU, claim, device_class, gpus, node, request, rslice, taint_rule

MINE = claim("web-0-gpu", request(count=2))


def _allocator(claims: list[dict], rules: list[dict] | None = None) -> Allocator:
    slices = [rslice(f"s{i}", f"node-{i}", *gpus(2)) for i in range(1, 4)]
    return Allocator(slices=slices, classes={"gpu": device_class()}, allocated=AllocatedState.from_claims(claims),
                     taint_rules=rules or [], features=explain.FEATURES)


def test_short_reason_groups_nodes_by_blocker() -> None:
    held = [claim(f"o{i}", allocated=[(f"node-{i}", "gpu-0")]) for i in (1, 2)]
    allocator = _allocator(held, [taint_rule("maintenance", f"{GPU}/maintenance", pool="node-3")])
    nodes = [node(f"node-{i}") for i in (3, 1, 2)]
    text = explain.short_reason(allocator, pod={}, claims=[MINE], nodes=nodes, all_claims=held)
    assert text == (
        "cplane why: node-1: claim default/web-0-gpu, request gpu: 1 of 2 devices usable, 2 needed; 1 device already "
        "allocated: default/o1 (gpu-0); node-2: claim default/web-0-gpu, request gpu: 1 of 2 devices usable, 2 "
        "needed; 1 device already allocated: default/o2 (gpu-0); node-3: claim default/web-0-gpu, request gpu: 0 of 2 "
        f"devices usable, 2 needed; 2 devices with untolerated taint {GPU}/maintenance:NoSchedule from DeviceTaintRule "
        "maintenance (gpu-0, gpu-1).")
    # Without the claims list the holders are unknown, and identical blockers merge.
    text = explain.short_reason(allocator, pod={}, claims=[MINE], nodes=nodes[1:])
    assert text == ("cplane why: node-1, node-2: claim default/web-0-gpu, request gpu: 1 of 2 devices usable, 2 needed; "
                    "1 device already allocated: other claims (gpu-0).")


def test_short_reason_is_bounded() -> None:
    allocator = _allocator([])
    nodes = [node(f"node-{i}") for i in range(1, 4)]
    big = claim("big", request(count=3))
    text = explain.short_reason(allocator, pod={}, claims=[big], nodes=nodes, max_nodes=2)
    assert text == ("cplane why: node-1, node-2: claim default/big, request gpu: 2 of 2 devices usable, 3 needed; "
                    "1 more nodes not analysed.")
    text = explain.short_reason(allocator, pod={}, claims=[big], nodes=nodes, max_nodes=2, limit=60)
    assert text == "cplane why: node-1, node-2: claim default/big, request g ...."
    assert explain.short_reason(allocator, pod={}, claims=[], nodes=nodes) == ""


def test_upstream_prefix_is_kept_when_appended() -> None:
    from cp.scheduling import plugins

    allocator = _allocator([])
    nodes = [node("node-1")]
    statuses = {"node-1": plugins.Status(plugins.UNRESOLVABLE, [explain.CANNOT_ALLOCATE], explain.DRA_PLUGIN)}
    upstream = plugins.fit_error(1, statuses, post_filter="still not schedulable, " + plugins.preemption_message(
        {}, 1, statuses, None))
    message = upstream + " " + explain.short_reason(allocator, pod={}, claims=[claim("big", request(count=3))],
                                                    nodes=nodes)
    assert message.startswith("0/1 nodes are available: 1 cannot allocate all claims. still not schedulable, ")
    assert "cplane why: node-1: claim default/big" in message


def test_short_reason_when_too_few_devices_exist() -> None:
    allocator = _allocator([])
    text = explain.short_reason(allocator, pod={}, claims=[claim("big", request(count=3))], nodes=[node("node-1")])
    assert text == "cplane why: node-1: claim default/big, request gpu: 2 of 2 devices usable, 3 needed."
