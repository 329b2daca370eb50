"""The node-local plugins through the API with the simulated fleet (gpu-a-0, gpu-h-0, cpu-0): the
NodeAffinity PreFilterResult, NodePorts, NodeResourcesFit's unresolvable rejection, and the
scores (a pod lands on the least allocated node)."""

from __future__ import annotations

from typing import Any

from controllers.runtime import client as clients
from tests.controllers.scheduler import support as s
from tests.controllers.scheduler.conftest import StartCluster

POST = "no new claims to deallocate, preemption: 0/3 nodes are available: "


def names_affinity(*names: str) -> dict[str, Any]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": list(names)}]}]}}}


async def test_node_name_affinity_narrows_the_nodes(client: clients.Client, start_cluster: StartCluster) -> None:
    await start_cluster()
    await client.create("pods", s.pod("pinned", affinity=names_affinity("cpu-0")))
    assert await s.wait_bound(client, "pinned") == "cpu-0"
    await client.create("pods", s.pod("nowhere", affinity=names_affinity("gone-0")))
    cond = await s.wait_unschedulable(client, "nowhere")
    assert cond["message"] == ("0/3 nodes are available: 3 node(s) didn't satisfy plugin(s) [NodeAffinity]. "
                               + POST + "3 Preemption is not helpful for scheduling.")


async def test_host_ports_and_oversized_requests(client: clients.Client, start_cluster: StartCluster) -> None:
    await start_cluster()
    ports = [{"name": "app", "image": "registry.k8s.io/pause:3.10",
              "ports": [{"containerPort": 80, "hostPort": 8080}]}]
    for name in ("web-1", "web-2", "web-3", "web-4"):
        await client.create("pods", s.pod(name, containers=ports))
    placed = {await s.wait_bound(client, name) for name in ("web-1", "web-2", "web-3")}
    assert placed == {"gpu-a-0", "gpu-h-0", "cpu-0"}  # one per node
    cond = await s.wait_unschedulable(client, "web-4")
    assert cond["message"] == ("0/3 nodes are available: 3 node(s) didn't have free ports for the requested pod "
                               "ports. " + POST + "3 No preemption victims found for incoming pod.")
    # more cpu than any node has: preemption cannot help
    await client.create("pods", s.pod("huge", requests={"cpu": "9"}))
    cond = await s.wait_unschedulable(client, "huge")
    assert cond["message"] == ("0/3 nodes are available: 3 Insufficient cpu. " + POST
                               + "3 Preemption is not helpful for scheduling.")


async def test_pods_spread_by_least_allocated(client: clients.Client, start_cluster: StartCluster) -> None:
    await start_cluster()
    # each pod takes half a node's cpu: LeastAllocated sends the second and third elsewhere
    for i in range(3):
        await client.create("pods", s.pod(f"half-{i}", requests={"cpu": "4", "memory": "1Gi"}))
        await s.wait_bound(client, f"half-{i}")
    assert {await s.bound_node(client, f"half-{i}") for i in range(3)} == {"gpu-a-0", "gpu-h-0", "cpu-0"}


async def test_claims_of_the_pod(client: clients.Client, start_cluster: StartCluster) -> None:
    await start_cluster()
    volume = [{"name": "data", "persistentVolumeClaim": {"claimName": "missing"}}]
    await client.create("pods", s.pod("orphan", volumes=volume))
    cond = await s.wait_unschedulable(client, "orphan")
    assert cond["message"] == ('0/3 nodes are available: persistentvolumeclaim "missing" not found. '
                               "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.")
    # an Immediate class with no volume and no provisioner: the claim stays unbound
    await client.create("storageclasses.storage.k8s.io", {
        "metadata": {"name": "manual"}, "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "Immediate"})
    await client.create("persistentvolumeclaims", {
        "metadata": {"name": "manual-claim", "namespace": "default"},
        "spec": {"storageClassName": "manual", "accessModes": ["ReadWriteOnce"],
                 "resources": {"requests": {"storage": "1Gi"}}}})
    volume = [{"name": "data", "persistentVolumeClaim": {"claimName": "manual-claim"}}]
    await client.create("pods", s.pod("waits", volumes=volume))
    cond = await s.wait_unschedulable(client, "waits")
    assert cond["message"].startswith("0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims. ")


async def test_wait_for_first_consumer_volumes(client: clients.Client, start_cluster: StartCluster) -> None:
    """A local volume on cpu-0 only: the pod goes there and the scheduler pre-binds the volume to
    the claim (PreBind), which the PV controller would then bind; a provisioning class gets the node
    as the claim's selected node."""
    await start_cluster()
    await client.create("storageclasses.storage.k8s.io", {
        "metadata": {"name": "local"}, "provisioner": "kubernetes.io/no-provisioner",
        "volumeBindingMode": "WaitForFirstConsumer"})
    pv = await client.create("persistentvolumes", {
        "metadata": {"name": "local-cpu"},
        "spec": {"storageClassName": "local", "capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
                 "hostPath": {"path": "/mnt/disk"}, "nodeAffinity": {"required": {"nodeSelectorTerms": [
                     {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                                            "values": ["cpu-0"]}]}]}}}})
    # (no PV controller here: the volume is made Available by hand, as it would)
    await client.update_status("persistentvolumes", {**pv, "status": {"phase": "Available"}})
    await client.create("persistentvolumeclaims", {
        "metadata": {"name": "local-claim", "namespace": "default"},
        "spec": {"storageClassName": "local", "accessModes": ["ReadWriteOnce"],
                 "resources": {"requests": {"storage": "1Gi"}}}})
    volume = [{"name": "data", "persistentVolumeClaim": {"claimName": "local-claim"}}]
    await client.create("pods", s.pod("local-user", volumes=volume))
    assert await s.wait_bound(client, "local-user") == "cpu-0"
    pv = await s.get(client, "persistentvolumes", "local-cpu", ns="")
    assert pv is not None
    ref = pv["spec"]["claimRef"]
    assert (ref["namespace"], ref["name"]) == ("default", "local-claim")
    assert pv["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
    # a second claim of the class has no volume left: no node fits
    await client.create("persistentvolumeclaims", {
        "metadata": {"name": "local-claim-2", "namespace": "default"},
        "spec": {"storageClassName": "local", "accessModes": ["ReadWriteOnce"],
                 "resources": {"requests": {"storage": "1Gi"}}}})
    volume = [{"name": "data", "persistentVolumeClaim": {"claimName": "local-claim-2"}}]
    await client.create("pods", s.pod("local-user-2", volumes=volume))
    cond = await s.wait_unschedulable(client, "local-user-2")
    assert cond["message"].startswith(
        "0/3 nodes are available: 3 node(s) didn't find available persistent volumes to bind. ")
    # a provisioning class: the claim gets the chosen node as its selected node
    await client.create("storageclasses.storage.k8s.io", {
        "metadata": {"name": "dynamic"}, "provisioner": "example.com/csi", "volumeBindingMode": "WaitForFirstConsumer"})
    await client.create("persistentvolumeclaims", {
        "metadata": {"name": "dyn", "namespace": "default"},
        "spec": {"storageClassName": "dynamic", "accessModes": ["ReadWriteOnce"],
                 "resources": {"requests": {"storage": "1Gi"}}}})
    volume = [{"name": "data", "persistentVolumeClaim": {"claimName": "dyn"}}]
    await client.create("pods", s.pod("dyn-user", volumes=volume))
    node = await s.wait_bound(client, "dyn-user")
    claim = await s.get(client, "persistentvolumeclaims", "dyn")
    assert claim is not None
    assert claim["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == node
