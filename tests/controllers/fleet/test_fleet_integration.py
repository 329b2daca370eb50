"""The fleet controller against an in-process API server on a VirtualClock: the demo fleet's
Nodes become Ready with Leases, its slices and classes are published, heartbeats follow the clock,
pods bound by hand run (after their claims are allocated and reserved), get their claims prepared,
complete, and are deleted gracefully; Node deletion takes the Node's pods with it; a restart
rewrites nothing.

Out of scope: the fleet file format (test_fleet_model.py) and the exact object shapes the builders
produce (test_fleet_objects.py).
"""

from __future__ import annotations

import ipaddress
import json
from typing import Any

import pytest

from api import server as servers
from controllers import fleet as fleets
from controllers.fleet import lifecycle
from controllers.fleet import objects as objs
from controllers.runtime import client as clients
from cp import clock as clocks
from cp import errors
from tests.clients import support
from tests.controllers.fleet.conftest import START, running_fleet
from tests.controllers.support import settle
from tests.waiting import eventually

SLICES = "resourceslices.resource.k8s.io"
LEASES = "leases.coordination.k8s.io"
CLAIMS = "resourceclaims.resource.k8s.io"


def _cond(obj: dict[str, Any], type_: str) -> dict[str, Any]:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == type_), {})


def _pod(name: str, node: str, **spec: Any) -> dict[str, Any]:
    meta = spec.pop("metadata", {})
    return {"metadata": {"name": name, "namespace": "default", **meta},
            "spec": {"nodeName": node, "containers": [{"name": "app", "image": "nginx:1.27"}], **spec}}


async def _phase(client: clients.Client, name: str) -> str:
    try:
        return str((await client.get("pods", name, namespace="default")).get("status", {}).get("phase"))
    except errors.NotFound:
        return "<gone>"


async def _pod_writes(srv: servers.Running, name: str) -> list[str]:
    """Every write to the pod, in order: ADDED / DELETED, or the field manager of a change."""
    history = await srv.event_log.history(group="", resource="pods", namespace="default", name=name)
    return [e.actor.field_manager if e.type == "MODIFIED" else e.type for e in history]


async def _fleet_up(client: clients.Client, nodes: int = 2, slices: int = 4) -> None:
    async def up() -> bool:
        ready = [n for n in (await client.list("nodes")).items if _cond(n, "Ready").get("status") == "True"]
        leases = (await client.list(LEASES, namespace="kube-node-lease")).items
        return len(ready) == nodes and len(leases) == nodes and len((await client.list(SLICES)).items) == slices
    await eventually(up, what="fleet up")


async def test_nodes_ready_with_leases_slices_and_classes(srv: servers.Running, client: clients.Client,
                                                          clock: clocks.VirtualClock, demo: fleets.Fleet) -> None:
    async with running_fleet(srv, clock, demo):
        await _fleet_up(client)
        node = await client.get("nodes", "gpu-node-1")
        meta, status = node["metadata"], node["status"]
        assert meta["labels"]["kubernetes.io/hostname"] == "gpu-node-1"
        assert meta["labels"]["kubernetes.io/os"] == "linux"
        assert meta["labels"]["kubernetes.io/arch"] == "amd64"
        assert meta["labels"]["node.kubernetes.io/instance-type"] == "sim.gpu-4x-a100"
        assert meta["annotations"][objs.SIMULATED] == "true"
        assert status["capacity"]["cpu"] == "32" and status["allocatable"]["cpu"] == "31500m"
        assert status["nodeInfo"]["kubeletVersion"] == "v1.37.0"
        assert status["nodeInfo"]["containerRuntimeVersion"].startswith("containerd://")
        # Typed clients read it (kubernetes' CoreV1Api().list_node(), lightkube), and it is schema-valid.
        assert status["nodeInfo"]["kubeProxyVersion"] == ""
        assert support.typed_problems(node) == [] and support.schema_problems(node) == []
        assert {"type": "InternalIP", "address": "172.18.0.3"} in status["addresses"]
        assert node["spec"]["podCIDR"] == "10.244.1.0/24"
        assert [c["status"] for c in status["conditions"]] == ["False", "False", "False", "True"]
        assert _cond(node, "Ready")["lastHeartbeatTime"] == clocks.rfc3339(START)

        lease = await client.get(LEASES, "gpu-node-1", namespace="kube-node-lease")
        assert lease["spec"]["holderIdentity"] == "gpu-node-1"
        assert lease["spec"]["renewTime"] == clocks.rfc3339_micro(START)
        assert lease["metadata"]["ownerReferences"][0]["uid"] == meta["uid"]

        gpu = await client.get(SLICES, "gpu-node-1-gpu.example.com")
        assert gpu["spec"]["driver"] == "gpu.example.com"
        assert gpu["spec"]["nodeName"] == "gpu-node-1"
        assert gpu["spec"]["pool"] == {"name": "gpu-node-1", "generation": 1, "resourceSliceCount": 1}
        assert gpu["metadata"]["ownerReferences"][0] == {"apiVersion": "v1", "kind": "Node", "name": "gpu-node-1",
                                                         "uid": meta["uid"], "controller": True}
        devices = gpu["spec"]["devices"]
        assert [d["name"] for d in devices] == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
        attrs = devices[2]["attributes"]
        assert attrs["model"] == {"string": "A100-SXM4-80GB"}
        assert attrs["driverVersion"] == {"version": "550.54.15"}
        assert attrs["resource.kubernetes.io/pcieRoot"] == {"string": "pci0000:30"}
        assert attrs["resource.kubernetes.io/numaNode"] == {"int": 1}
        assert devices[2]["capacity"] == {"memory": {"value": "80Gi"}}
        nic = await client.get(SLICES, "gpu-node-1-nic.example.com")
        assert nic["spec"]["devices"][0]["attributes"]["resource.kubernetes.io/pcieRoot"] == {"string": "pci0000:10"}

        classes = {c["metadata"]["name"]: c for c in (await client.list("deviceclasses.resource.k8s.io")).items}
        assert classes["gpu.example.com"]["spec"]["selectors"] == [
            {"cel": {"expression": 'device.driver == "gpu.example.com"'}}]
        assert "nic.example.com" in classes


async def test_heartbeats_follow_the_clock_and_a_restart_rewrites_nothing(
        srv: servers.Running, client: clients.Client, clock: clocks.VirtualClock, demo: fleets.Fleet) -> None:
    async with running_fleet(srv, clock, demo):
        await _fleet_up(client)

        async def renewed(at: float) -> bool:
            leases = (await client.list(LEASES, namespace="kube-node-lease")).items
            return all(lease["spec"]["renewTime"] == clocks.rfc3339_micro(at) for lease in leases)

        async def heartbeat(at: float) -> bool:
            nodes = (await client.list("nodes")).items
            return all(_cond(n, "Ready").get("lastHeartbeatTime") == clocks.rfc3339(at) for n in nodes)

        for step in range(1, 5):  # 10 s lease renewals; the status heartbeat every 40 s
            clock.advance(10)
            await eventually(lambda s=step: renewed(START + 10 * s), what=f"lease renewal {step}")
        await eventually(lambda: heartbeat(START + 40), what="status heartbeat")
        node = await client.get("nodes", "gpu-node-0")
        assert _cond(node, "Ready")["lastTransitionTime"] == clocks.rfc3339(START)
    history = await srv.event_log.history(group="coordination.k8s.io", resource="leases",
                                          namespace="kube-node-lease", name="gpu-node-0")
    assert len(history) == 5  # created, then renewed once per 10 s
    node_writes = len(await srv.event_log.history(group="", resource="nodes", namespace="", name="gpu-node-0"))
    assert node_writes == 2  # created Ready, one heartbeat at 40 s

    before = srv.event_log.revision
    async with running_fleet(srv, clock, demo):  # a restart: the fleet is already there
        await _fleet_up(client)
        await settle(50)
    # Same virtual instant: the renewal and heartbeat it posts change nothing, so nothing is written.
    assert await srv.event_log.after(before) == []
    assert (await client.get(SLICES, "gpu-node-0-gpu.example.com"))["spec"]["pool"]["generation"] == 1


async def test_a_bound_pod_runs_with_one_status_write(srv: servers.Running, client: clients.Client,
                                                      clock: clocks.VirtualClock, demo: fleets.Fleet) -> None:
    async with running_fleet(srv, clock, demo):
        await _fleet_up(client)
        await client.create("pods", _pod("web", "gpu-node-1", initContainers=[
            {"name": "setup", "image": "busybox"}]))
        await eventually(lambda: _phase(client, "web"), what="pod status")
        await eventually(lambda: _is(client, "web", "Running"), what="pod running")
        pod = await client.get("pods", "web", namespace="default")
        status = pod["status"]
        assert [(c["type"], c["status"]) for c in status["conditions"]] == [
            ("PodReadyToStartContainers", "True"), ("Initialized", "True"), ("Ready", "True"),
            ("ContainersReady", "True"), ("PodScheduled", "True")]
        assert ipaddress.ip_address(status["podIP"]) in ipaddress.ip_network("10.244.1.0/24")
        assert status["podIPs"] == [{"ip": status["podIP"]}]
        assert status["hostIP"] == "172.18.0.3" and status["hostIPs"] == [{"ip": "172.18.0.3"}]
        assert status["startTime"] == clocks.rfc3339(START)
        (cs,) = status["containerStatuses"]
        assert cs["ready"] is True and cs["started"] is True and cs["restartCount"] == 0
        assert cs["state"] == {"running": {"startedAt": clocks.rfc3339(START)}}
        assert cs["image"] == "docker.io/library/nginx:1.27"
        assert cs["imageID"].startswith("docker.io/library/nginx@sha256:")
        assert cs["containerID"].startswith("containerd://")
        (init,) = status["initContainerStatuses"]
        assert init["state"]["terminated"]["reason"] == "Completed"
        await settle(50)
        assert await _pod_writes(srv, "web") == ["ADDED", "kubelet"]

        await client.create("pods", _pod("web-2", "gpu-node-1"))
        await eventually(lambda: _is(client, "web-2", "Running"), what="second pod running")
        second = await client.get("pods", "web-2", namespace="default")
        assert second["status"]["podIP"] != status["podIP"]


async def _is(client: clients.Client, name: str, phase: str) -> bool:
    return await _phase(client, name) == phase


async def test_a_pod_waits_for_its_claim_then_runs_and_the_claim_is_prepared(
        srv: servers.Running, client: clients.Client, clock: clocks.VirtualClock, demo: fleets.Fleet) -> None:
    async with running_fleet(srv, clock, demo):
        await _fleet_up(client)
        await client.create(CLAIMS, {
            "metadata": {"name": "gpu-and-nic", "namespace": "default"},
            "spec": {"devices": {"requests": [
                {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}},
                {"name": "nic", "exactly": {"deviceClassName": "nic.example.com"}}]}}})
        pod = await client.create("pods", _pod("trainer", "gpu-node-0", resourceClaims=[
            {"name": "devices", "resourceClaimName": "gpu-and-nic"}]))

        async def creating() -> bool:
            p = await client.get("pods", "trainer", namespace="default")
            states = [cs["state"] for cs in p["status"].get("containerStatuses") or []]
            return states == [{"waiting": {"reason": "ContainerCreating"}}]
        await eventually(creating, what="ContainerCreating")
        clock.advance(5)
        await settle(50)
        pending = await client.get("pods", "trainer", namespace="default")
        assert pending["status"]["phase"] == "Pending"
        assert "podIP" not in pending["status"]
        assert _cond(pending, "Ready")["reason"] == "ContainersNotReady"
        assert _cond(pending, "PodReadyToStartContainers")["status"] == "False"

        # What the scheduler would write: allocate, then reserve for the pod (by hand here).
        allocation = {"devices": {"results": [
            {"request": "gpu", "driver": "gpu.example.com", "pool": "gpu-node-0", "device": "gpu-1"},
            {"request": "nic", "driver": "nic.example.com", "pool": "gpu-node-0", "device": "nic-0"}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["gpu-node-0"]}]}]}}
        await client.patch(CLAIMS, "gpu-and-nic", {"status": {"allocation": allocation}}, namespace="default",
                           subresource="status")
        await settle(50)
        assert await _phase(client, "trainer") == "Pending"  # allocated, not reserved for it yet
        reserved = [{"resource": "pods", "name": "trainer", "uid": pod["metadata"]["uid"]}]
        await client.patch(CLAIMS, "gpu-and-nic", {"status": {"reservedFor": reserved}}, namespace="default",
                           subresource="status")
        await eventually(lambda: _is(client, "trainer", "Running"), what="running after reservation")

        claim = await client.get(CLAIMS, "gpu-and-nic", namespace="default")
        by_device = {d["device"]: d for d in claim["status"]["devices"]}
        assert set(by_device) == {"gpu-1", "nic-0"}
        assert by_device["gpu-1"]["driver"] == "gpu.example.com" and by_device["gpu-1"]["pool"] == "gpu-node-0"
        assert [(c["type"], c["status"]) for c in by_device["gpu-1"]["conditions"]] == [("Ready", "True")]
        net = by_device["nic-0"]["networkData"]
        assert net["interfaceName"] == "ens1f0"
        assert ipaddress.ip_interface(net["ips"][0]).network == ipaddress.ip_network("192.168.0.0/16")
        assert net["hardwareAddress"].startswith("02:")
        prepared_rv = claim["metadata"]["resourceVersion"]
        assert await _pod_writes(srv, "trainer") == ["ADDED", "kubelet", "kubelet"]  # creating, running

        # A running pod keeps running when its claim changes under it (a kubelet does not stop it).
        await client.patch(CLAIMS, "gpu-and-nic", {"status": {"reservedFor": None}}, namespace="default",
                           subresource="status")
        await settle(50)
        assert await _pod_writes(srv, "trainer") == ["ADDED", "kubelet", "kubelet"]
        assert len((await client.get(CLAIMS, "gpu-and-nic", namespace="default"))["status"]["devices"]) == 2

        # Graceful deletion: the containers take the fleet's podShutdownSeconds (1 s) to stop, then
        # the kubelet writes them stopped, removes the pod, and the driver un-prepares the claim.
        await client.delete("pods", "trainer", namespace="default")
        await settle(50)
        assert await _phase(client, "trainer") == "Running"
        clock.advance(1)
        await eventually(lambda: _is(client, "trainer", "<gone>"), what="pod deleted")
        writes = await _pod_writes(srv, "trainer")
        assert writes[-2] == "kubelet" and writes[-1] == "DELETED"  # stopped (Succeeded), then gone

        async def unprepared() -> bool:
            c = await client.get(CLAIMS, "gpu-and-nic", namespace="default")
            return not c["status"].get("devices")
        await eventually(unprepared, what="claim un-prepared")
        claim = await client.get(CLAIMS, "gpu-and-nic", namespace="default")
        assert claim["metadata"]["resourceVersion"] != prepared_rv


async def test_template_claims_are_resolved_through_the_pod_status(
        srv: servers.Running, client: clients.Client, clock: clocks.VirtualClock, demo: fleets.Fleet) -> None:
    async with running_fleet(srv, clock, demo):
        await _fleet_up(client)
        pod = await client.create("pods", _pod("tpl", "gpu-node-0", resourceClaims=[
            {"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]))
        uid = pod["metadata"]["uid"]
        await eventually(lambda: _is(client, "tpl", "Pending"), what="pending")
        claim = await client.create(CLAIMS, {
            "metadata": {"name": "tpl-gpu-x1y2z", "namespace": "default", "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": "tpl", "uid": uid, "controller": True,
                 "blockOwnerDeletion": True}]},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}})
        await client.patch(CLAIMS, claim["metadata"]["name"], {"status": {
            "allocation": {"devices": {"results": [
                {"request": "gpu", "driver": "gpu.example.com", "pool": "gpu-node-0", "device": "gpu-3"}]}},
            "reservedFor": [{"resource": "pods", "name": "tpl", "uid": uid}]}},
            namespace="default", subresource="status")
        await settle(50)
        assert await _phase(client, "tpl") == "Pending"  # the pod does not name its claim yet
        await client.patch("pods", "tpl", {"status": {"resourceClaimStatuses": [
            {"name": "gpu", "resourceClaimName": "tpl-gpu-x1y2z"}]}}, namespace="default", subresource="status")
        await eventually(lambda: _is(client, "tpl", "Running"), what="running")
        prepared = await client.get(CLAIMS, "tpl-gpu-x1y2z", namespace="default")
        assert [d["device"] for d in prepared["status"]["devices"]] == ["gpu-3"]


async def test_run_seconds_completes_a_pod_on_the_clock(srv: servers.Running, client: clients.Client,
                                                        clock: clocks.VirtualClock, demo: fleets.Fleet) -> None:
    async with running_fleet(srv, clock, demo):
        await _fleet_up(client)
        await client.create("pods", _pod("job", "gpu-node-0", restartPolicy="Never",
                                         metadata={"annotations": {lifecycle.RUN_SECONDS: "30"}}))
        await client.create("pods", _pod("fails", "gpu-node-0", restartPolicy="Never",
                                         metadata={"annotations": {lifecycle.RUN_SECONDS: "30", lifecycle.EXIT_CODE: "3"}}))
        await eventually(lambda: _is(client, "job", "Running"), what="running")
        await eventually(lambda: _is(client, "fails", "Running"), what="running")
        clock.advance(29)
        await settle(50)
        assert await _phase(client, "job") == "Running"
        clock.advance(1)
        await eventually(lambda: _is(client, "job", "Succeeded"), what="succeeded")
        await eventually(lambda: _is(client, "fails", "Failed"), what="failed")
        done = await client.get("pods", "job", namespace="default")
        term = done["status"]["containerStatuses"][0]["state"]["terminated"]
        assert term["exitCode"] == 0 and term["reason"] == "Completed"
        assert term["startedAt"] == clocks.rfc3339(START) and term["finishedAt"] == clocks.rfc3339(START + 30)
        assert _cond(done, "Ready") | {"lastTransitionTime": ""} == {
            "type": "Ready", "status": "False", "reason": "PodCompleted",
            "lastTransitionTime": ""}
        failed = await client.get("pods", "fails", namespace="default")
        assert failed["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 3
        assert await _pod_writes(srv, "job") == ["ADDED", "kubelet", "kubelet"]


async def _container(client: clients.Client, name: str, container: str = "app") -> dict[str, Any]:
    pod = await client.get("pods", name, namespace="default")
    status = pod["status"]
    return next(c for c in status.get("containerStatuses", []) + status.get("initContainerStatuses", [])
                if c["name"] == container)


async def test_a_crashing_container_is_restarted_after_the_back_off(
        srv: servers.Running, client: clients.Client, clock: clocks.VirtualClock, demo: fleets.Fleet) -> None:
    async with running_fleet(srv, clock, demo):
        await _fleet_up(client)
        await client.create("pods", _pod("crash", "gpu-node-0", metadata={"annotations": {
            lifecycle.RUN_SECONDS: "5", lifecycle.EXIT_CODE: "1"}}))
        await eventually(lambda: _is(client, "crash", "Running"), what="running")
        clock.advance(5)

        async def backing_off() -> bool:
            return (await _container(client, "crash"))["state"].get("waiting", {}).get("reason") == "CrashLoopBackOff"
        await eventually(backing_off, what="CrashLoopBackOff")
        app = await _container(client, "crash")
        assert app["lastState"]["terminated"]["exitCode"] == 1 and app["restartCount"] == 0
        clock.advance(9)
        await settle(50)
        assert await backing_off()
        clock.advance(1)

        async def restarted() -> bool:
            c = await _container(client, "crash")
            return c["restartCount"] == 1 and "running" in c["state"]
        await eventually(restarted, what="restarted after 10 s")
        assert (await _container(client, "crash"))["state"]["running"]["startedAt"] == clocks.rfc3339(START + 15)
        # one write per transition: running, back-off, running again
        assert await _pod_writes(srv, "crash") == ["ADDED", "kubelet", "kubelet", "kubelet"]


async def test_init_containers_probes_and_grace_on_the_clock(
        srv: servers.Running, client: clients.Client, clock: clocks.VirtualClock, demo: fleets.Fleet) -> None:
    probe = {"httpGet": {"path": "/", "port": 80}, "initialDelaySeconds": 10}
    async with running_fleet(srv, clock, demo):
        await _fleet_up(client)
        await client.create("pods", _pod(
            "web", "gpu-node-1", terminationGracePeriodSeconds=30,
            initContainers=[{"name": "setup", "image": "busybox"}],
            containers=[{"name": "app", "image": "nginx:1.27", "readinessProbe": probe}],
            metadata={"annotations": {f"{lifecycle.RUN_SECONDS}.setup": "5", lifecycle.STOP_SECONDS: "60"}}))
        await eventually(lambda: _is(client, "web", "Pending"), what="initializing")
        assert "running" in (await _container(client, "web", "setup"))["state"]
        clock.advance(5)
        await eventually(lambda: _is(client, "web", "Running"), what="initialized")
        assert (await _container(client, "web"))["ready"] is False
        clock.advance(10)

        async def ready() -> bool:
            return _cond(await client.get("pods", "web", namespace="default"), "Ready").get("status") == "True"
        await eventually(ready, what="ready after the probe's initial delay")

        # It takes 60 s to stop, the grace period is 30 s: it is killed at 30 s, then removed.
        await client.delete("pods", "web", namespace="default")
        clock.advance(29)
        await settle(50)
        assert await _phase(client, "web") == "Running"
        clock.advance(1)
        await eventually(lambda: _is(client, "web", "<gone>"), what="pod removed after the grace period")
        history = await srv.event_log.history(group="", resource="pods", namespace="default", name="web")
        assert history[-1].type == "DELETED"
        last = json.loads(history[-1].object)  # the last state: stopped, then removed
        assert last["status"]["phase"] == "Failed"
        assert last["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 137


async def test_deleting_a_node_deletes_its_pods(srv: servers.Running, client: clients.Client,
                                                clock: clocks.VirtualClock, demo: fleets.Fleet) -> None:
    async with running_fleet(srv, clock, demo):
        await _fleet_up(client)
        for i in range(3):
            await client.create("pods", _pod(f"p{i}", "gpu-node-0"))
        await client.create("pods", _pod("other", "gpu-node-1"))
        for i in range(3):
            await eventually(lambda i=i: _is(client, f"p{i}", "Running"), what="running")
        await client.delete("nodes", "gpu-node-0")
        for i in range(3):
            await eventually(lambda i=i: _is(client, f"p{i}", "<gone>"), what="pod collected")
        assert (await _pod_writes(srv, "p0"))[-2:] == ["pod-garbage-collector", "DELETED"]
        assert await _phase(client, "other") == "Running"
        clock.advance(60)  # the deleted node stays deleted; the other keeps its heartbeat
        await settle(50)
        with pytest.raises(errors.NotFound):
            await client.get("nodes", "gpu-node-0")


async def test_nodes_made_by_hand_get_a_kubelet_unless_opted_out(
        srv: servers.Running, client: clients.Client, clock: clocks.VirtualClock) -> None:
    await client.create("nodes", {"metadata": {"name": "hand-made"}})
    await client.create("nodes", {"metadata": {"name": "taken"}, "spec": {"podCIDR": "10.244.0.0/24"}})
    await client.create("nodes", {"metadata": {"name": "real", "annotations": {objs.SIMULATED: "false"}}})
    async with running_fleet(srv, clock, None):
        async def ready() -> bool:
            return _cond(await client.get("nodes", "hand-made"), "Ready").get("status") == "True"
        await eventually(ready, what="hand-made node Ready")
        node = await client.get("nodes", "hand-made")
        assert node["status"]["allocatable"]["pods"] == "110"
        assert node["status"]["nodeInfo"]["kubeletVersion"] == "v1.37.0"
        await client.get(LEASES, "hand-made", namespace="kube-node-lease")
        await client.create("pods", _pod("on-hand-made", "hand-made"))
        await client.create("pods", _pod("on-real", "real"))
        await eventually(lambda: _is(client, "on-hand-made", "Running"), what="running")
        node = await client.get("nodes", "hand-made")
        assert node["spec"]["podCIDR"] == "10.244.1.0/24"  # a free block, kept in the Node
        assert {"type": "InternalIP", "address": "172.18.0.3"} in node["status"]["addresses"]
        pod = await client.get("pods", "on-hand-made", namespace="default")
        assert pod["status"]["podIP"] == "10.244.1.2" and pod["status"]["hostIP"] == "172.18.0.3"
        await settle(50)
        real = await client.get("nodes", "real")
        assert "conditions" not in (real.get("status") or {})
        assert await _phase(client, "on-real") == "Pending"
        with pytest.raises(errors.NotFound):
            await client.get(LEASES, "real", namespace="kube-node-lease")


async def test_slices_edited_or_deleted_by_others_are_republished(
        srv: servers.Running, client: clients.Client, clock: clocks.VirtualClock, demo: fleets.Fleet) -> None:
    async with running_fleet(srv, clock, demo):
        await _fleet_up(client)
        await client.delete(SLICES, "gpu-node-0-nic.example.com")

        async def back() -> bool:
            try:
                return bool(await client.get(SLICES, "gpu-node-0-nic.example.com"))
            except errors.NotFound:
                return False
        await eventually(back, what="deleted slice recreated")
        edited = await client.get(SLICES, "gpu-node-1-gpu.example.com")
        edited["spec"]["devices"] = edited["spec"]["devices"][:1]
        await client.update(SLICES, edited)

        async def restored() -> bool:
            s = await client.get(SLICES, "gpu-node-1-gpu.example.com")
            return len(s["spec"]["devices"]) == 4
        await eventually(restored, what="edited slice restored")
        restored_slice = await client.get(SLICES, "gpu-node-1-gpu.example.com")
        assert restored_slice["spec"]["pool"]["generation"] == 2


async def test_a_pod_deleted_without_grace_but_kept_by_a_finalizer_is_stopped(
        srv: servers.Running, client: clients.Client, clock: clocks.VirtualClock, demo: fleets.Fleet) -> None:
    # As a foreground deletion leaves a pod whose ResourceClaim it owns: the containers stop and the
    # phase turns terminal before the kubelet's final DELETE, so the claim can be released.
    async with running_fleet(srv, clock, demo):
        await _fleet_up(client)
        await client.create("pods", _pod("held", "gpu-node-0", terminationGracePeriodSeconds=0,
                                         metadata={"finalizers": ["example.com/hold"]}))
        await eventually(lambda: _is(client, "held", "Running"), what="pod running")
        await client.delete("pods", "held", namespace="default", propagation_policy="Foreground")
        await eventually(lambda: _is(client, "held", "Failed"), what="pod stopped")
        pod = await client.get("pods", "held", namespace="default")  # no grace: killed (137)
        assert [cs["state"]["terminated"]["exitCode"] for cs in pod["status"]["containerStatuses"]] == [137]
        assert pod["metadata"]["finalizers"] == ["example.com/hold", "foregroundDeletion"]
        await settle(50)
        writes = await _pod_writes(srv, "held")  # running, deleted, stopped; the final DELETE changes nothing
        assert len(writes) == 4 and writes[1] == writes[3] == "kubelet"
        await client.patch("pods", "held", {"metadata": {"finalizers": None}}, namespace="default")
        await eventually(lambda: _is(client, "held", "<gone>"), what="pod gone")


async def test_a_resize_is_applied_and_an_ephemeral_container_runs(
        srv: servers.Running, client: clients.Client, clock: clocks.VirtualClock, demo: fleets.Fleet) -> None:
    resources = {"requests": {"cpu": "100m"}, "limits": {"cpu": "200m"}}
    async with running_fleet(srv, clock, demo):
        await _fleet_up(client)
        await client.create("pods", _pod("web", "gpu-node-1", containers=[
            {"name": "app", "image": "nginx:1.27", "resources": resources}]))
        await eventually(lambda: _is(client, "web", "Running"), what="pod running")
        (cs,) = (await client.get("pods", "web", namespace="default"))["status"]["containerStatuses"]
        assert cs["resources"] == resources and cs["allocatedResources"] == {"cpu": "100m"}

        resized = {"requests": {"cpu": "150m"}, "limits": {"cpu": "300m"}}
        await client.patch("pods", "web", {"spec": {"containers": [{"name": "app", "resources": resized}]}},
                           namespace="default", patch_type="strategic", subresource="resize")

        async def applied() -> bool:
            pod = await client.get("pods", "web", namespace="default")
            return bool(pod["status"]["containerStatuses"][0].get("resources") == resized)
        await eventually(applied, what="resize applied")

        await client.patch("pods", "web", {"spec": {"ephemeralContainers": [{"name": "dbg", "image": "busybox"}]}},
                           namespace="default", patch_type="strategic", subresource="ephemeralcontainers")

        async def debugging() -> bool:
            status = (await client.get("pods", "web", namespace="default"))["status"]
            return bool(status.get("ephemeralContainerStatuses"))
        await eventually(debugging, what="ephemeral container status")
        status = (await client.get("pods", "web", namespace="default"))["status"]
        (eph,) = status["ephemeralContainerStatuses"]
        assert eph["name"] == "dbg" and eph["ready"] is False and "running" in eph["state"]
        assert eph["image"] == "docker.io/library/busybox:latest"
        assert not any(c["type"].startswith("PodResize") for c in status["conditions"])


async def test_the_lease_wheel_keeps_each_nodes_cadence(
        srv: servers.Running, client: clients.Client, clock: clocks.VirtualClock, demo: fleets.Fleet) -> None:
    """Issue #22: one timer renews every Lease; a renewal sent late does not shift the next one (due one
    interval after the previous due time), unless the wheel fell a whole interval behind."""
    async with running_fleet(srv, clock, demo):
        await _fleet_up(client)

        async def renewed(at: float) -> bool:
            leases = (await client.list(LEASES, namespace="kube-node-lease")).items
            return all(lease["spec"]["renewTime"] == clocks.rfc3339_micro(at) for lease in leases)

        clock.advance(13)  # due at +10, sent at +13
        await eventually(lambda: renewed(START + 13), what="late renewal")
        clock.advance(7)  # the next one is due at +20, not +23
        await eventually(lambda: renewed(START + 20), what="renewal on the cadence")
        clock.advance(25)  # due at +30, sent at +45: a whole interval behind, so the cadence restarts
        await eventually(lambda: renewed(START + 45), what="renewal after a gap")
        clock.advance(9)
        await settle(20)
        assert await renewed(START + 45)
        clock.advance(1)
        await eventually(lambda: renewed(START + 55), what="renewal 10 s after the gap")
    history = await srv.event_log.history(group="coordination.k8s.io", resource="leases",
                                          namespace="kube-node-lease", name="gpu-node-0")
    assert len(history) == 5  # created, then +13, +20, +45, +55
