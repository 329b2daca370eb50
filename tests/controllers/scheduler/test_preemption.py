"""DefaultPreemption end to end through the API (server, simulated fleet of CPU-only nodes, the
scheduler): a higher-priority pod preempts a lower-priority one on a full node (DisruptionTarget,
graceful deletion, the Preempted event, nominatedNodeName, then binding on that node); a
PodDisruptionBudget steers the choice of the victim; `preemptionPolicy: Never` leaves the others
alone; a pod nominated to a node keeps its room from pods of lower priority."""

from __future__ import annotations

from typing import Any

from controllers.runtime import client as clients
from cp import clock as clocks
from tests.controllers.scheduler import support as s
from tests.controllers.scheduler.conftest import GPU_DRIVER, StartCluster

PRIORITY_CLASSES = "priorityclasses.scheduling.k8s.io"
PDBS = "poddisruptionbudgets.policy"
MESSAGE = "default-scheduler: preempting to accommodate a higher priority pod"


def fleet(nodes: int) -> dict[str, Any]:
    return {
        "apiVersion": "sim.cplane.dev/v1alpha1", "kind": "Fleet", "metadata": {"name": "preempt"},
        "deviceClasses": [{"name": "gpu-extended", "driver": GPU_DRIVER, "extendedResourceName": "example.com/gpu"}],
        "nodePools": [{"name": "small", "count": nodes, "capacity": {"cpu": "1", "memory": "4Gi", "pods": "110"}}],
    }


async def priority_class(client: clients.Client, name: str, value: int, **extra: Any) -> None:
    await client.create(PRIORITY_CLASSES, {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                           "metadata": {"name": name}, "value": value, **extra})


def pod(name: str, priority_class_name: str, *, cpu: str = "800m", labels: dict[str, str] | None = None
        ) -> dict[str, Any]:
    body = s.pod(name, priorityClassName=priority_class_name)
    body["spec"]["containers"][0]["resources"] = {"requests": {"cpu": cpu}}
    if labels:
        body["metadata"]["labels"] = labels
    return body


async def pod_status(client: clients.Client, name: str) -> dict[str, Any]:
    p = await s.get(client, "pods", name)
    assert p is not None, name
    return dict(p.get("status") or {})


async def wait_preempted(client: clients.Client, name: str) -> dict[str, Any]:
    async def check() -> dict[str, Any] | None:
        p = await s.get(client, "pods", name)
        if p is None or not p["metadata"].get("deletionTimestamp"):
            return None
        return p
    return dict(await s.eventually(check, what=f"pod {name} preempted"))


async def test_higher_priority_pod_preempts_and_binds(client: clients.Client, clock: clocks.VirtualClock,
                                                      start_cluster: StartCluster) -> None:
    cluster = await start_cluster(fleet=fleet(1), claims=False)
    await priority_class(client, "low", 100)
    await priority_class(client, "high", 1000)
    await client.create("pods", pod("victim", "low"))
    assert await s.wait_bound(client, "victim") == "small-0"
    await cluster.settle()
    preemptor = await client.create("pods", pod("preemptor", "high"))

    victim = await wait_preempted(client, "victim")
    cond = s.condition(victim, "DisruptionTarget")
    assert cond is not None
    assert (cond["status"], cond["reason"], cond["message"]) == ("True", "PreemptionByScheduler", MESSAGE)
    assert victim["metadata"]["deletionGracePeriodSeconds"] == 30  # the default grace period
    [event] = await s.events_for(client, "victim", reason="Preempted")
    assert event["type"] == "Normal"
    assert event["message"] == f"Preempted by pod {preemptor['metadata']['uid']} on node small-0"

    failed = await s.wait_unschedulable(client, "preemptor")
    # DefaultPreemption succeeded: no PostFilter message follows the filters' histogram.
    assert failed["message"] == "0/1 nodes are available: 1 Insufficient cpu."
    status = await s.eventually(lambda: _nominated(client, "preemptor"), what="nominatedNodeName")
    assert status == "small-0"

    clock.advance(2)  # the kubelet's graceful shutdown, then the victim is gone
    assert await s.wait_bound(client, "preemptor", within=15) == "small-0"
    assert await s.get(client, "pods", "victim") is None
    # the API server clears the nomination on binding (ClearingNominatedNodeNameAfterBinding)
    assert "nominatedNodeName" not in await pod_status(client, "preemptor")


async def _nominated(client: clients.Client, name: str) -> str:
    return str((await pod_status(client, name)).get("nominatedNodeName") or "")


async def test_a_disruption_budget_steers_the_choice_of_victim(client: clients.Client, clock: clocks.VirtualClock,
                                                               start_cluster: StartCluster) -> None:
    cluster = await start_cluster(fleet=fleet(2), claims=False)
    await priority_class(client, "low", 100)
    await priority_class(client, "high", 1000)
    await client.create("pods", pod("guarded", "low", labels={"app": "guarded"}))
    first = await s.wait_bound(client, "guarded")
    await client.create("pods", pod("free", "low", labels={"app": "free"}))
    second = await s.wait_bound(client, "free")
    assert {first, second} == {"small-0", "small-1"}
    # No budget left for "guarded" (as the disruption controller computes for minAvailable: 1).
    budget = await client.create(PDBS, {"metadata": {"name": "guarded", "namespace": "default"},
                                        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "guarded"}}}})
    budget["status"] = {"disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 1, "expectedPods": 1,
                        "observedGeneration": budget["metadata"].get("generation", 1)}
    await client.update_status(PDBS, budget)
    await cluster.settle()

    await client.create("pods", pod("preemptor", "high"))
    await wait_preempted(client, "free")
    assert await s.eventually(lambda: _nominated(client, "preemptor"), what="nominatedNodeName") == second
    guarded = await s.get(client, "pods", "guarded")
    assert guarded is not None and not guarded["metadata"].get("deletionTimestamp")
    assert s.condition(guarded, "DisruptionTarget") is None
    clock.advance(2)
    assert await s.wait_bound(client, "preemptor", within=15) == second


async def test_preemption_policy_never_leaves_victims_alone(client: clients.Client, clock: clocks.VirtualClock,
                                                           start_cluster: StartCluster) -> None:
    cluster = await start_cluster(fleet=fleet(1), claims=False)
    await priority_class(client, "low", 100)
    await priority_class(client, "polite", 1000, preemptionPolicy="Never")
    await client.create("pods", pod("running", "low"))
    await s.wait_bound(client, "running")
    await cluster.settle()
    await client.create("pods", pod("polite", "polite"))
    failed = await s.wait_unschedulable(client, "polite")
    assert failed["message"] == ("0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, "
                                 "preemption: not eligible due to preemptionPolicy=Never.")
    await cluster.settle()
    running = await s.get(client, "pods", "running")
    assert running is not None and not running["metadata"].get("deletionTimestamp")
    assert s.condition(running, "DisruptionTarget") is None
    assert not (await pod_status(client, "polite")).get("nominatedNodeName")
    assert await s.events_for(client, "running", reason="Preempted") == []


async def test_equal_priority_cannot_preempt(client: clients.Client, start_cluster: StartCluster) -> None:
    cluster = await start_cluster(fleet=fleet(1), claims=False)
    await priority_class(client, "same", 100)
    await client.create("pods", pod("first", "same"))
    await s.wait_bound(client, "first")
    await cluster.settle()
    await client.create("pods", pod("second", "same"))
    failed = await s.wait_unschedulable(client, "second")
    assert failed["message"] == ("0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, "
                                 "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.")


async def test_nominated_pod_keeps_its_room_from_lower_priority_pods(
        client: clients.Client, clock: clocks.VirtualClock, start_cluster: StartCluster) -> None:
    """While the victim terminates, a pod of lower priority than the preemptor that would fit beside
    the victim does not take the room: the nominated preemptor counts on its node
    (`addGENominatedPods`). Once the victim is gone both run."""
    cluster = await start_cluster(fleet=fleet(1), claims=False)
    await priority_class(client, "low", 100)
    await priority_class(client, "mid", 500)
    await priority_class(client, "high", 1000)
    await client.create("pods", pod("victim", "low"))
    await s.wait_bound(client, "victim")
    await cluster.settle()
    await client.create("pods", pod("preemptor", "high"))
    await wait_preempted(client, "victim")
    await s.eventually(lambda: _nominated(client, "preemptor"), what="nominatedNodeName")
    await client.create("pods", pod("late", "mid", cpu="150m"))  # 800m + 150m would fit 1 cpu
    late = await s.wait_unschedulable(client, "late")
    assert late["message"] == "0/1 nodes are available: 1 Insufficient cpu."
    assert await s.bound_node(client, "late") == ""
    clock.advance(2)
    assert await s.wait_bound(client, "preemptor", within=15) == "small-0"
    assert await s.wait_bound(client, "late", within=15) == "small-0"


async def test_devices_of_victims_claims_are_not_freed_in_1_37(client: clients.Client,
                                                                start_cluster: StartCluster) -> None:
    """DynamicResources has no AddPod/RemovePod in 1.37 (KEP-5690 DRA Preemption moved to 1.38):
    evicting a pod never frees the devices of its claims, and nodes where the devices are missing
    ("cannot allocate all claims", UnschedulableAndUnresolvable) are not even tried."""
    cluster = await start_cluster()  # two nodes with 4 GPUs each, one without devices; 8 cpu each
    await priority_class(client, "low", 100)
    await priority_class(client, "high", 1000)
    await s.template(client, "four-gpus", s.claim_spec(s.request(count=4)))
    await s.template(client, "one-gpu", s.claim_spec(s.request(count=1)))
    for name in ("holder-a", "holder-h"):
        body = s.pod(name, template="four-gpus", priorityClassName="low")
        body["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "7"}
        await client.create("pods", body)
        await s.wait_bound(client, name)
    await client.create("pods", pod("cpu-hog", "low", cpu="7"))
    assert await s.wait_bound(client, "cpu-hog") == "cpu-0"
    await cluster.settle()

    # Only devices missing: no node is worth a dry run.
    await client.create("pods", s.pod("gpus", template="four-gpus", priorityClassName="high"))
    failed = await s.wait_unschedulable(client, "gpus")
    assert failed["message"].startswith(
        "0/3 nodes are available: 3 cannot allocate all claims. still not schedulable, "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.")

    # cpu and one device: evicting the holders would free the cpu, but not their devices.
    body = s.pod("both", template="one-gpu", priorityClassName="high")
    body["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "2"}
    await client.create("pods", body)
    failed = await s.wait_unschedulable(client, "both")
    assert failed["message"] == ("0/3 nodes are available: 3 Insufficient cpu. still not schedulable, "
                                 "preemption: 0/3 nodes are available: 3 cannot allocate all claims.")
    await cluster.settle()
    for name in ("holder-a", "holder-h", "cpu-hog"):
        p = await s.get(client, "pods", name)
        assert p is not None and not p["metadata"].get("deletionTimestamp"), name


async def test_a_higher_preemptor_clears_lower_nominations_to_its_node(
        client: clients.Client, clock: clocks.VirtualClock, start_cluster: StartCluster) -> None:
    """`prepareCandidate`: the nominations of lower-priority pods to the chosen node are cleared."""
    cluster = await start_cluster(fleet=fleet(1), claims=False)
    await priority_class(client, "low", 100)
    await priority_class(client, "mid", 500)
    await priority_class(client, "high", 1000)
    await client.create("pods", pod("low-a", "low", cpu="400m"))
    await s.wait_bound(client, "low-a")
    clock.advance(1)
    await client.create("pods", pod("low-b", "low", cpu="400m"))
    await s.wait_bound(client, "low-b")
    await cluster.settle()
    # mid (500m) needs one of them gone: the less important, later one
    await client.create("pods", pod("mid", "mid", cpu="500m"))
    await wait_preempted(client, "low-b")
    assert await s.eventually(lambda: _nominated(client, "mid"), what="mid nominated") == "small-0"
    # high (700m) needs both gone; low-a is deleted now, and mid loses its nomination
    await client.create("pods", pod("high", "high", cpu="700m"))
    await wait_preempted(client, "low-a")

    async def mid_cleared() -> bool:
        return await _nominated(client, "mid") == ""
    await s.eventually(mid_cleared, what="mid's nomination cleared")
    # the victims are prepared first, then the preemptor's status gets its nomination
    assert await s.eventually(lambda: _nominated(client, "high"), what="high nominated") == "small-0"
    clock.advance(2)
    assert await s.wait_bound(client, "high", within=15) == "small-0"
    assert await s.bound_node(client, "mid") == ""
