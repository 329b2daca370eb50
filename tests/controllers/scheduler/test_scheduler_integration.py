"""The scheduler end to end through the API: an in-process server on a VirtualClock, the simulated
fleet (two nodes with four GPUs each — A100s on gpu-a-0, H100s on gpu-h-0 — and one node without
devices), the ResourceClaim controller and the scheduler under one Manager.

Covered: pods with claims land only where an allocation exists; allocation + reservation +
finalizer + binding as upstream writes them; a pod that cannot fit stays Pending with upstream's
message and a FailedScheduling event, without retrying in a loop; deleting pods frees devices for
the next ones; concurrent pods never share a device; shared claims; pods waiting for their
generated claim; claims pinned to a node by their allocation; admin access and the namespace label;
extended resources backed by DRA; device taints from DeviceTaintRules; fatal errors; the time
limit on a search without a solution.
"""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import pytest

from api import server as servers
from controllers.runtime import client as clients
from cp import clock as clocks
from tests.controllers.scheduler import support as s
from tests.controllers.scheduler.conftest import EXTENDED_GPU, Cluster, StartCluster

NOT_HELPFUL = "preemption: 0/{n} nodes are available: {n} Preemption is not helpful for scheduling."


async def test_pods_land_only_where_an_allocation_exists(client: clients.Client, start_cluster: StartCluster) -> None:
    await start_cluster()
    await s.template(client, "two-gpus", s.claim_spec(s.request(count=2)))
    await s.template(client, "h100", s.claim_spec(s.request(
        selectors=['device.attributes["gpu.example.com"].model == "H100"'])))
    await client.create("pods", s.pod("h100", template="h100"))
    assert await s.wait_bound(client, "h100") == "gpu-h-0"
    for i in range(4):
        await client.create("pods", s.pod(f"two-{i}", template="two-gpus"))
    await client.create("pods", s.pod("plain"))  # no claims: any node, the cpu node included

    nodes = {name: await s.wait_bound(client, name) for name in ("two-0", "two-1", "two-2", "h100", "plain")}
    for name in ("two-0", "two-1", "two-2", "h100"):
        claim = await s.pod_claim(client, name)
        pools = {pool for pool, _ in s.devices(claim)}
        assert pools == {nodes[name]}  # devices from the node the pod is on
        assert claim["status"]["allocation"]["nodeSelector"] == {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [nodes[name]]}]}]}
    # 8 GPUs: 3 x 2 + 1 used, 1 left; the fourth two-GPU pod does not fit anywhere.
    cond = await s.wait_unschedulable(client, "two-3")
    assert cond["message"].startswith("0/3 nodes are available: 3 cannot allocate all claims. still not schedulable, "
                               + NOT_HELPFUL.format(n=3))
    assert "cplane why: " in cond["message"] and "already allocated" in cond["message"]  # issue #12


async def test_allocation_reservation_finalizer_and_binding_as_upstream(
        client: clients.Client, srv: servers.Running, start_cluster: StartCluster) -> None:
    await start_cluster()
    await s.template(client, "one-gpu", s.claim_spec(s.request(selectors=[
        'device.attributes["gpu.example.com"].model == "A100"'])))
    created = await client.create("pods", s.pod("app", template="one-gpu"))
    node = await s.wait_bound(client, "app")
    assert node == "gpu-a-0"
    claim = await s.pod_claim(client, "app")
    meta, status = claim["metadata"], claim["status"]
    assert meta["finalizers"] == ["resource.kubernetes.io/delete-protection"]
    assert status["reservedFor"] == [{"resource": "pods", "name": "app", "uid": created["metadata"]["uid"]}]
    assert status["allocation"]["devices"]["results"] == [
        {"request": "gpu", "driver": "gpu.example.com", "pool": "gpu-a-0", "device": "gpu-0"}]
    pod = await client.get("pods", "app", namespace="default")
    assert s.condition(pod, "PodScheduled")["status"] == "True"
    [event] = await s.events_for(client, "app", reason="Scheduled")
    assert event["message"] == "Successfully assigned default/app to gpu-a-0"
    assert event["source"]["component"] == "default-scheduler" and event["type"] == "Normal"

    # The writes, in upstream's order: finalizer (plain update), then allocation + reservedFor
    # (status update), then the binding.
    history = await srv.event_log.history(group="resource.k8s.io", resource="resourceclaims", namespace="default",
                                          name=meta["name"])
    mine = [e for e in history if e.actor.field_manager == "default-scheduler"]
    assert len(mine) == 2
    first, second = (msgspec.json.decode(e.object) for e in mine)
    assert first["metadata"]["finalizers"] == ["resource.kubernetes.io/delete-protection"]
    assert "allocation" not in (first.get("status") or {})
    assert second["status"]["allocation"] and second["status"]["reservedFor"]
    pod_history = await srv.event_log.history(group="", resource="pods", namespace="default", name="app")
    bind = next(e for e in pod_history if msgspec.json.decode(e.object).get("spec", {}).get("nodeName"))
    assert bind.revision > mine[1].revision
    # The fleet's kubelet runs the pod once its claim is allocated and reserved for it.
    await s.eventually(lambda: _phase(client, "app"), what="pod running")


async def _phase(client: clients.Client, name: str, want: str = "Running") -> bool:
    p = await s.get(client, "pods", name)
    return bool(p and (p.get("status") or {}).get("phase") == want)


async def test_unschedulable_pod_reports_and_does_not_spin(client: clients.Client, clock: clocks.VirtualClock,
                                                           start_cluster: StartCluster) -> None:
    cluster = await start_cluster()
    await s.template(client, "five-gpus", s.claim_spec(s.request(count=5)))
    await client.create("pods", s.pod("big", template="five-gpus"))
    cond = await s.wait_unschedulable(client, "big")
    assert cond["message"].startswith("0/3 nodes are available: 3 cannot allocate all claims. still not schedulable, "
                               + NOT_HELPFUL.format(n=3))
    assert cond.get("lastProbeTime") is None and cond["lastTransitionTime"] == clocks.rfc3339(clock.now())
    [event] = await s.events_for(client, "big", reason="FailedScheduling")
    assert event["type"] == "Warning" and event["message"] == cond["message"]
    assert event["source"]["component"] == "default-scheduler"
    await cluster.settle()
    attempts = cluster.scheduler.stats.attempts
    # Unrelated churn (a pod without claims comes and goes) moves it back at most a couple of
    # times; with nothing happening it is not retried at all.
    clock.advance(30)
    await _fleet_caught_up(client, cluster, at=clock.now())
    await cluster.settle()
    assert cluster.scheduler.stats.attempts == attempts
    pod = await client.get("pods", "big", namespace="default")
    assert not pod["spec"].get("nodeName") and pod["status"]["phase"] == "Pending"
    claim = await s.pod_claim(client, "big")
    assert "allocation" not in (claim.get("status") or {})


async def _fleet_caught_up(client: clients.Client, cluster: Cluster, *, at: float) -> None:
    """Until the churn a clock move brings has happened and reached the scheduler: every node's
    Lease renewed at `at` by the fleet's kubelets, every queue idle (the fleet's status heartbeats
    posted), and the scheduler's node informer holding every Node as the server has it."""
    renewed = clocks.rfc3339_micro(at)

    async def caught_up() -> bool:
        leases = (await client.list("leases.coordination.k8s.io", namespace="kube-node-lease")).items
        if not leases or any(lease["spec"].get("renewTime") != renewed for lease in leases) or not cluster.idle():
            return False
        seen = {n["metadata"]["name"]: n["metadata"]["resourceVersion"] for n in cluster.scheduler.nodes.cache}
        nodes = (await client.list("nodes")).items
        return all(seen.get(n["metadata"]["name"]) == n["metadata"]["resourceVersion"] for n in nodes)

    await s.eventually(caught_up, what=f"the fleet's heartbeats at {renewed}, seen by the scheduler")


async def test_deleting_pods_frees_devices_for_the_next_ones(client: clients.Client, clock: clocks.VirtualClock,
                                                             start_cluster: StartCluster) -> None:
    cluster = await start_cluster()
    await s.template(client, "four-gpus", s.claim_spec(s.request(count=4)))
    for name in ("a", "b", "c"):
        await client.create("pods", s.pod(name, template="four-gpus"))
    await s.wait_bound(client, "a")
    await s.wait_bound(client, "b")
    await s.wait_unschedulable(client, "c")
    first = await s.pod_claim(client, "a")
    await cluster.settle()
    await client.delete("pods", "a", namespace="default")
    clock.advance(2)  # the kubelet's graceful shutdown (podShutdownSeconds) on the virtual clock
    # The ResourceClaim controller drops the reservation and deallocates; the scheduler retries c
    # (backoff is skipped while nothing else is queued).
    node = await s.wait_bound(client, "c", within=15)
    freed = {pool for pool, _ in s.devices(first)}
    assert {node} == freed
    claim_c = await s.pod_claim(client, "c")
    assert sorted(s.devices(claim_c)) == sorted(s.devices(first))


async def test_concurrent_pods_never_share_a_device(client: clients.Client, start_cluster: StartCluster) -> None:
    cluster = await start_cluster()
    await s.template(client, "one-gpu", s.claim_spec(s.request()))
    names = [f"p{i}" for i in range(12)]
    await asyncio.gather(*(client.create("pods", s.pod(n, template="one-gpu")) for n in names))

    async def done() -> bool:
        pods = (await client.list("pods", namespace="default")).items
        bound = [p for p in pods if p["spec"].get("nodeName")]
        waiting = [p for p in pods if (s.condition(p, "PodScheduled") or {}).get("reason") == "Unschedulable"]
        return len(bound) == 8 and len(waiting) == 4
    await s.eventually(done, within=15, what="8 bound, 4 unschedulable")
    await cluster.settle()
    claims = (await client.list(s.CLAIMS, namespace="default")).items
    used = [d for c in claims for d in s.devices(c)]
    assert len(used) == 8 and len(set(used)) == 8
    for c in claims:
        if s.devices(c):
            pod = await client.get("pods", c["status"]["reservedFor"][0]["name"], namespace="default")
            assert {pool for pool, _ in s.devices(c)} == {pod["spec"]["nodeName"]}


async def test_shared_claim_is_allocated_once_and_reserved_by_each_pod(client: clients.Client,
                                                                       start_cluster: StartCluster) -> None:
    await start_cluster()
    await s.claim(client, "shared", s.claim_spec(s.request(count=2)))
    pods = [await client.create("pods", s.pod(f"user-{i}", claim="shared")) for i in range(3)]
    nodes = {await s.wait_bound(client, f"user-{i}") for i in range(3)}
    assert len(nodes) == 1
    claim = await s.eventually(lambda: _reserved_by(client, "shared", 3), what="three reservations")
    assert sorted(r["uid"] for r in claim["status"]["reservedFor"]) == sorted(p["metadata"]["uid"] for p in pods)
    assert len(s.devices(claim)) == 2 and {pool for pool, _ in s.devices(claim)} == nodes


async def _reserved_by(client: clients.Client, name: str, n: int) -> dict[str, Any] | None:
    c = await s.get(client, s.CLAIMS, name)
    return c if c is not None and len((c.get("status") or {}).get("reservedFor") or []) == n else None


async def test_allocated_claim_pins_the_pod_to_its_node(client: clients.Client, start_cluster: StartCluster) -> None:
    """A claim another pod allocated (and still holds) is respected: a second user must go to the
    node the allocation names; the first user keeps its reservation."""
    await start_cluster()
    await s.claim(client, "pinned", s.claim_spec(s.request(selectors=[
        'device.attributes["gpu.example.com"].model == "H100"'])))
    await client.create("pods", s.pod("first", claim="pinned"))
    assert await s.wait_bound(client, "first") == "gpu-h-0"
    await client.create("pods", s.pod("second", claim="pinned", nodeSelector={"example.com/accelerator": "a100"}))
    cond = await s.wait_unschedulable(client, "second")
    assert cond["message"] == ("0/3 nodes are available: 1 resourceclaim not available on the node, "
                               "2 node(s) didn't match Pod's node affinity/selector. still not schedulable, "
                               + NOT_HELPFUL.format(n=3))
    claim = await client.get(s.CLAIMS, "pinned", namespace="default")
    assert [r["name"] for r in claim["status"]["reservedFor"]] == ["first"]


async def test_pod_waits_for_its_generated_claim(client: clients.Client, start_cluster: StartCluster) -> None:
    """Without the ResourceClaim controller the template claim never appears: the pod waits
    silently (no condition, no event), as upstream's PreEnqueue gate; once the claim exists and
    the pod's status names it, the pod is scheduled."""
    cluster = await start_cluster(claims=False)
    await s.template(client, "one-gpu", s.claim_spec(s.request()))
    pod = await client.create("pods", s.pod("waiting", template="one-gpu"))
    await cluster.settle()
    current = await client.get("pods", "waiting", namespace="default")
    assert s.condition(current, "PodScheduled") is None and not current["spec"].get("nodeName")
    assert await s.events_for(client, "waiting") == []
    # Do what the ResourceClaim controller does.
    claim = await client.create(s.CLAIMS, {"metadata": {
        "name": "waiting-gpu-abcde", "namespace": "default",
        "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "waiting", "uid": pod["metadata"]["uid"],
                             "controller": True, "blockOwnerDeletion": True}]}, "spec": s.claim_spec(s.request())})
    await client.patch("pods", "waiting", {"status": {"resourceClaimStatuses": [
        {"name": "gpu", "resourceClaimName": claim["metadata"]["name"]}]}}, namespace="default",
        subresource="status", patch_type="strategic")
    await s.wait_bound(client, "waiting")


async def test_admin_access_needs_the_namespace_label(client: clients.Client, start_cluster: StartCluster) -> None:
    await start_cluster()
    await client.create("namespaces", {"metadata": {"name": "ops", "labels": {
        "resource.kubernetes.io/admin-access": "true"}}})
    await s.claim(client, "monitor", s.claim_spec(s.request(adminAccess=True)), ns="ops")
    ns = await client.get("namespaces", "ops")
    ns["metadata"]["labels"] = {}
    await client.update("namespaces", ns)
    await client.create("pods", s.pod("monitor", claim="monitor", ns="ops"))
    cond = await s.wait_unschedulable(client, "monitor", ns="ops")
    assert cond["message"] == (
        "0/3 nodes are available: resource claim ops/monitor: admin access to devices requires the "
        "`resource.kubernetes.io/admin-access: true` label on the containing namespace. no new claims to "
        "deallocate, " + NOT_HELPFUL.format(n=3))
    ns = await client.get("namespaces", "ops")
    ns["metadata"]["labels"] = {"resource.kubernetes.io/admin-access": "true"}
    await client.update("namespaces", ns)
    await s.wait_bound(client, "monitor", ns="ops")
    claim = await client.get(s.CLAIMS, "monitor", namespace="ops")
    assert all(r.get("adminAccess") for r in claim["status"]["allocation"]["devices"]["results"])


async def test_extended_resource_backed_by_dra(client: clients.Client, start_cluster: StartCluster) -> None:
    await start_cluster()
    created = await client.create("pods", s.pod("ext", requests={EXTENDED_GPU: "2"}))
    node = await s.wait_bound(client, "ext")
    pod = await client.get("pods", "ext", namespace="default")
    status = pod["status"]["extendedResourceClaimStatus"]
    assert status["requestMappings"] == [{"containerName": "app", "resourceName": EXTENDED_GPU,
                                          "requestName": "container-0-request-0"}]
    claim = await client.get(s.CLAIMS, status["resourceClaimName"], namespace="default")
    meta = claim["metadata"]
    assert meta["name"].startswith("ext-extended-resources-")
    assert meta["annotations"] == {"resource.kubernetes.io/extended-resource-claim": "true"}
    assert meta["finalizers"] == ["resource.kubernetes.io/delete-protection"]
    assert meta["ownerReferences"] == [{"apiVersion": "v1", "kind": "Pod", "name": "ext",
                                        "uid": created["metadata"]["uid"], "controller": True,
                                        "blockOwnerDeletion": True}]
    assert claim["spec"]["devices"]["requests"] == [{"name": "container-0-request-0", "exactly": {
        "deviceClassName": "gpu-extended", "allocationMode": "ExactCount", "count": 2}}]
    assert {pool for pool, _ in s.devices(claim)} == {node} and len(s.devices(claim)) == 2
    assert claim["status"]["reservedFor"][0]["uid"] == created["metadata"]["uid"]
    # More than any node has: "Insufficient" is not what happens — DRA says it cannot allocate.
    await client.create("pods", s.pod("too-many", requests={EXTENDED_GPU: "5"}))
    cond = await s.wait_unschedulable(client, "too-many")
    assert cond["message"].startswith("0/3 nodes are available: 3 cannot allocate all claims.")


async def test_device_taint_rules_keep_devices_out(client: clients.Client, start_cluster: StartCluster) -> None:
    await start_cluster()
    await client.create(s.RULES, {"metadata": {"name": "h100-maintenance"}, "spec": {
        "deviceSelector": {"driver": "gpu.example.com", "pool": "gpu-h-0"},
        "taint": {"key": "example.com/maintenance", "effect": "NoSchedule"}}})
    await s.template(client, "four", s.claim_spec(s.request(count=4)))
    await s.template(client, "tolerant", s.claim_spec(s.request(count=4, tolerations=[
        {"key": "example.com/maintenance", "operator": "Exists"}])))
    await client.create("pods", s.pod("a", template="four"))
    assert await s.wait_bound(client, "a") == "gpu-a-0"
    await client.create("pods", s.pod("b", template="four"))
    await s.wait_unschedulable(client, "b")
    await client.create("pods", s.pod("c", template="tolerant"))
    assert await s.wait_bound(client, "c") == "gpu-h-0"
    claim = await s.pod_claim(client, "c")
    assert claim["status"]["allocation"]["devices"]["results"][0]["tolerations"] == [
        {"key": "example.com/maintenance", "operator": "Exists"}]


async def test_fatal_errors_use_upstream_texts(client: clients.Client, start_cluster: StartCluster) -> None:
    cluster = await start_cluster()
    await s.claim(client, "no-class", s.claim_spec(s.request(device_class="nope")))
    await client.create("pods", s.pod("no-class", claim="no-class"))
    cond = await s.wait_unschedulable(client, "no-class")
    assert cond["message"] == ("0/3 nodes are available: request gpu: device class nope does not exist. "
                               "no new claims to deallocate, " + NOT_HELPFUL.format(n=3))

    await s.claim(client, "bad-cel", s.claim_spec(s.request(selectors=[
        'device.attributes["gpu.example.com"].nosuch == "x"'])))
    await client.create("pods", s.pod("bad-cel", claim="bad-cel"))
    cond = await s.wait_unschedulable(client, "bad-cel", reason="SchedulerError")
    assert cond["message"].startswith(
        'running "DynamicResources" filter plugin: claim default/bad-cel: selector #0 on device '
        'gpu.example.com/gpu-a-0/gpu-0: CEL runtime error: no such key: nosuch')
    [event] = await s.events_for(client, "bad-cel", reason="FailedScheduling")
    assert event["message"] == cond["message"]

    await s.claim(client, "too-many", s.claim_spec(s.request("a", count=17), s.request("b", count=16)))
    await client.create("pods", s.pod("too-many", claim="too-many"))
    cond = await s.wait_unschedulable(client, "too-many", reason="SchedulerError")
    assert cond["message"] == ('running "DynamicResources" filter plugin: claim default/too-many: number of '
                               "requested devices 33 exceeds the claim limit of 32")

    # A class created later lets the first pod through (the class event moves it back).
    await client.create(s.CLASSES, {"metadata": {"name": "nope"}, "spec": {"selectors": [
        {"cel": {"expression": 'device.driver == "gpu.example.com"'}}]}})
    await s.wait_bound(client, "no-class")
    await cluster.settle()


@pytest.mark.parametrize("limits", [{"filter_timeout": 0.3}, {"pod_filter_timeout": 0.3}],
                         ids=["per-node", "per-pod"])
async def test_search_without_solution_is_cut_off(client: clients.Client, start_cluster: StartCluster,
                                                  limits: dict[str, float]) -> None:
    """Twenty single-device requests whose devices must have pairwise different `x`, on a node
    with 38 devices but only 19 values of `x`: no solution, and the search has to try every way
    of placing 19 of them to find out. The time limit (per node, or for the whole cycle) ends it
    — part on the event loop, the rest in a thread — and the pod gets upstream's error."""
    fleet = {"apiVersion": "sim.cplane.dev/v1alpha1", "kind": "Fleet", "metadata": {"name": "slow"},
             "nodePools": [{"name": "wide", "count": 1, "drivers": [{"name": "gpu.example.com", "devices": [
                 {"type": "generic", "count": 19, "namePrefix": prefix, "attributes": {"x": {"int": "{index}"}}}
                 for prefix in ("a", "b")]}]}]}
    cluster = await start_cluster(fleet=fleet, **limits)
    requests = [s.request(f"r{i}") for i in range(20)]
    await s.claim(client, "slow", s.claim_spec(*requests, constraints=[{"distinctAttribute": "gpu.example.com/x"}]))
    started = asyncio.get_running_loop().time()
    await client.create("pods", s.pod("slow", claim="slow"))
    cond = await s.wait_unschedulable(client, "slow", reason="SchedulerError", within=20)
    assert cond["message"] == ('running "DynamicResources" filter plugin: node wide-0: '
                               "timed out trying to allocate devices")
    assert asyncio.get_running_loop().time() - started < 5
    assert cluster.scheduler.stats.threaded_allocations >= 1


async def test_claim_with_256_consumers_is_in_use(client: clients.Client, start_cluster: StartCluster) -> None:
    """reservedFor holds at most 256 consumers: a claim full of other pods' reservations keeps
    a new pod out ("resourceclaim in use"); once one leaves, it gets in."""
    await start_cluster()
    claim = await s.claim(client, "popular", s.claim_spec(s.request()))
    claim["status"] = {
        "allocation": {"devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "gpu-a-0",
                                                "device": "gpu-3"}]},
                       "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                           {"key": "metadata.name", "operator": "In", "values": ["gpu-a-0"]}]}]}},
        "reservedFor": [{"resource": "pods", "name": f"other-{i}", "uid": f"00000000-0000-4000-8000-{i:012d}"}
                        for i in range(256)]}
    claim = await client.update_status(s.CLAIMS, claim)
    await client.create("pods", s.pod("late", claim="popular"))
    cond = await s.wait_unschedulable(client, "late")
    assert cond["message"] == ("0/3 nodes are available: resourceclaim in use. no new claims to deallocate, "
                               + NOT_HELPFUL.format(n=3))
    claim["status"]["reservedFor"] = claim["status"]["reservedFor"][1:]
    await client.update_status(s.CLAIMS, claim)
    assert await s.wait_bound(client, "late") == "gpu-a-0"
    claim = await client.get(s.CLAIMS, "popular", namespace="default")
    assert len(claim["status"]["reservedFor"]) == 256 and claim["status"]["reservedFor"][-1]["name"] == "late"


async def test_new_devices_bring_a_waiting_pod_in(client: clients.Client, start_cluster: StartCluster) -> None:
    """A pod waiting for an H200 is retried when a driver publishes one (a ResourceSlice event),
    and lands on the node that has it."""
    cluster = await start_cluster()
    await s.template(client, "h200", s.claim_spec(s.request(selectors=[
        'device.attributes["gpu.example.com"].model == "H200"'])))
    await client.create("pods", s.pod("needs-h200", template="h200"))
    await s.wait_unschedulable(client, "needs-h200")
    await cluster.settle()
    await client.create(s.SLICES, {"metadata": {"name": "cpu-0-gpu"}, "spec": {
        "driver": "gpu.example.com", "nodeName": "cpu-0",
        "pool": {"name": "cpu-0", "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": "gpu-0", "attributes": {"model": {"string": "H200"}}}]}})
    assert await s.wait_bound(client, "needs-h200") == "cpu-0"


async def test_a_claim_with_an_untolerated_no_execute_taint_takes_no_new_pods(
        client: clients.Client, start_cluster: StartCluster) -> None:
    """KEP-5055: once a device of an allocated claim has a NoExecute taint the allocation does not
    tolerate, the claim is not reserved for new pods (those already using it are the eviction
    controller's business, not run here); a tolerated taint changes nothing."""
    await start_cluster()
    await s.claim(client, "shared", s.claim_spec(s.request(tolerations=[
        {"key": "example.com/known", "operator": "Exists", "effect": "NoExecute"}])))
    await client.create("pods", s.pod("first", claim="shared"))
    node = await s.wait_bound(client, "first")
    device = s.devices(await s.get(client, s.CLAIMS, "shared") or {})[0]
    await client.create(s.RULES, {"metadata": {"name": "known"}, "spec": {
        "deviceSelector": {"driver": "gpu.example.com", "pool": device[0], "device": device[1]},
        "taint": {"key": "example.com/known", "effect": "NoExecute"}}})
    await client.create("pods", s.pod("tolerated", claim="shared"))
    assert await s.wait_bound(client, "tolerated") == node
    await client.create(s.RULES, {"metadata": {"name": "broken"}, "spec": {
        "deviceSelector": {"driver": "gpu.example.com", "pool": device[0], "device": device[1]},
        "taint": {"key": "example.com/broken", "effect": "NoExecute"}}})
    await client.create("pods", s.pod("late", claim="shared"))
    message = str((await s.wait_unschedulable(client, "late"))["message"])
    assert (f"resource claim default/shared: device gpu.example.com/{device[0]}/{device[1]} has a NoExecute "
            "taint that the claim does not tolerate") in message
    await client.delete(s.RULES, "broken")
    assert await s.wait_bound(client, "late") == node


async def test_nodes_known_not_to_fit_are_skipped_until_their_devices_change(
        client: clients.Client, clock: clocks.VirtualClock, start_cluster: StartCluster) -> None:
    """Issue #22: a node whose cached answer for the claims' specs is "cannot allocate" is passed
    over by the next cycles (NodeCache.infeasible_mask) until a device of its pools is freed; when no
    node fits, every node is visited again for its reason, so the message is the same."""
    cluster = await start_cluster()
    await s.template(client, "one-gpu", s.claim_spec(s.request()))
    for i in range(8):  # the eight GPUs, one pod at a time: each node's answer is cached as it fills
        await client.create("pods", s.pod(f"p{i}", template="one-gpu"))
        await s.wait_bound(client, f"p{i}")
    await client.create("pods", s.pod("late", template="one-gpu"))
    cond = await s.wait_unschedulable(client, "late")
    assert cond["message"].startswith("0/3 nodes are available: 3 cannot allocate all claims. still not schedulable, "
                                      + NOT_HELPFUL.format(n=3))
    assert cluster.scheduler.stats.nodes_skipped > 0  # the cpu node and the full ones, known
    assert cluster.scheduler.stats.nodes_taken > 0  # a GPU node with GPUs left, known to fit
    freed_node = await s.bound_node(client, "p0")
    await cluster.settle()
    await client.delete("pods", "p0", namespace="default")
    clock.advance(2)  # the kubelet's graceful shutdown on the virtual clock
    assert await s.wait_bound(client, "late", within=15) == freed_node
