"""Node adoption (issue #25): a real cluster's dump, imported with `cplane log import --dump` and
replayed forked with the scheduler and a fleet that generates no node of its own. The fleet is the
kubelet of the imported node: a Pending pod whose claim fits is allocated, bound and Running there;
the node keeps its recorded labels, taints, capacity and ResourceSlice, and stays Ready (Lease and
Ready heartbeat renewed, so node lifecycle leaves it untainted) as the controllers' virtual clock
advances.

Out of scope: the dump reader (tests/cp/test_dumps.py), fleet-made nodes (test_fleet_integration.py)."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from api import replay
from controllers import fleet as fleets
from controllers import registry
from controllers.fleet import objects as objs
from controllers.fleet.loading import load_fleet
from controllers.runtime import client as clients
from cp import cli
from cp import clock as clocks
from storage import recording
from tests.waiting import eventually

R = "resource.k8s.io"
CREATED = "2026-11-02T09:00:00Z"  # the newest object: the fork's time
BOOTED = "2026-11-02T08:00:00Z"
BEAT = "2026-11-02T08:59:50Z"  # the node's last heartbeat and Lease renewal before the dump


def _claim(name: str, *, uid: str, pod: tuple[str, str] | None = None) -> dict[str, Any]:
    claim: dict[str, Any] = {
        "apiVersion": f"{R}/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default", "uid": uid, "resourceVersion": "900",
                     "creationTimestamp": CREATED},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
            # as the source server returned it, defaulted
            "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1}}]}}}
    if pod is not None:
        claim["status"] = {
            "allocation": {"devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "n1",
                                                    "device": "gpu-0"}]},
                           "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                               {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}},
            "reservedFor": [{"resource": "pods", "name": pod[0], "uid": pod[1]}],
            # what the real driver wrote when it prepared the device
            "devices": [{"driver": "gpu.example.com", "pool": "n1", "device": "gpu-0",
                         "conditions": [{"type": "Ready", "status": "True", "reason": "Prepared", "message": "",
                                         "lastTransitionTime": CREATED}]}]}
    return claim


def _pod(name: str, *, uid: str, claim: str, node: str = "") -> dict[str, Any]:
    pod: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": uid, "resourceVersion": "901",
                     "creationTimestamp": CREATED},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.27", "resources": {"claims": [{"name": "gpus"}]}}],
                 "resourceClaims": [{"name": "gpus", "resourceClaimName": claim}],
                 "tolerations": [{"key": "example.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]},
        "status": {"phase": "Pending"}}
    if node:
        pod["spec"]["nodeName"] = node
        pod["status"] = {
            "phase": "Running", "hostIP": "10.0.0.11", "podIP": "10.244.1.7", "startTime": CREATED,
            "conditions": [{"type": t, "status": "True", "lastTransitionTime": CREATED}
                           for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")],
            "containerStatuses": [{"name": "c", "image": "nginx:1.27", "imageID": "", "ready": True,
                                   "restartCount": 0, "started": True,
                                   "containerID": "containerd://0123456789abcdef",
                                   "state": {"running": {"startedAt": CREATED}}}]}
    else:
        pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                        "lastTransitionTime": CREATED}]
    return pod


CAPACITY = {"cpu": "8", "memory": "32Gi", "pods": "110"}
ALLOCATABLE = {"cpu": "7500m", "memory": "30Gi", "pods": "110"}

DUMP = {"apiVersion": "v1", "kind": "List", "items": [
    *({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "uid": f"ns-{ns}", "resourceVersion": "1",
                                                              "creationTimestamp": CREATED}}
      for ns in ("default", "kube-system", "kube-node-lease")),
    {"apiVersion": "v1", "kind": "Node",
     "metadata": {"name": "n1", "uid": "0b6d2c3e-node-n1", "resourceVersion": "800", "creationTimestamp": BOOTED,
                  "labels": {"kubernetes.io/hostname": "n1", "example.com/accelerator": "gpu"},
                  "annotations": {"node.alpha.kubernetes.io/ttl": "0"}},
     "spec": {"podCIDR": "10.244.1.0/24", "podCIDRs": ["10.244.1.0/24"],
              "taints": [{"key": "example.com/gpu", "value": "true", "effect": "NoSchedule"}]},
     "status": {"capacity": CAPACITY, "allocatable": ALLOCATABLE, "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                "addresses": [{"type": "InternalIP", "address": "10.0.0.11"}, {"type": "Hostname", "address": "n1"}],
                "nodeInfo": {"kubeletVersion": "v1.37.0", "osImage": "Ubuntu 24.04", "architecture": "amd64",
                             "operatingSystem": "linux", "machineID": "m1", "systemUUID": "s1", "bootID": "b1",
                             "kernelVersion": "6.8.0", "containerRuntimeVersion": "containerd://2.1.0",
                             "kubeProxyVersion": ""},
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                "message": "kubelet is posting ready status", "lastHeartbeatTime": BEAT,
                                "lastTransitionTime": BOOTED}]}},
    {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
     "metadata": {"name": "n1", "namespace": "kube-node-lease", "uid": "lease-n1", "resourceVersion": "801",
                  "creationTimestamp": BOOTED},
     "spec": {"holderIdentity": "n1", "leaseDurationSeconds": 40, "renewTime": "2026-11-02T08:59:50.000000Z"}},
    {"apiVersion": f"{R}/v1", "kind": "DeviceClass",
     "metadata": {"name": "gpu.example.com", "uid": "class-gpu", "resourceVersion": "2", "creationTimestamp": CREATED},
     "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]}},
    {"apiVersion": f"{R}/v1", "kind": "ResourceSlice",
     "metadata": {"name": "n1-gpu.example.com-abcde", "uid": "slice-n1", "resourceVersion": "802",
                  "creationTimestamp": CREATED},
     "spec": {"driver": "gpu.example.com", "nodeName": "n1",
              "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
              "devices": [{"name": "gpu-0"}, {"name": "gpu-1"}]}},
    _claim("one", uid="claim-one", pod=("small", "pod-small")),
    _claim("two", uid="claim-two"),
    _pod("small", uid="pod-small", claim="one", node="n1"),
    _pod("next", uid="pod-next", claim="two"),
]}


def _without_leases() -> dict[str, Any]:
    """The dump as `kubectl cluster-info dump` has it: no Namespaces, no Leases."""
    return {**DUMP, "items": [o for o in DUMP["items"] if o["kind"] not in ("Namespace", "Lease")]}


async def _import(tmp_path: Path, dump_doc: dict[str, Any] = DUMP) -> Path:
    dump = tmp_path / "dump.json"
    dump.write_text(json.dumps(dump_doc))
    imported = tmp_path / "imported"
    code = await asyncio.to_thread(cli.main, ["log", "import", "--dump", str(dump), "--data-dir", str(imported)])
    assert code == 0
    return imported


def _ready(node: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in node["status"]["conditions"] if c["type"] == "Ready")


@pytest.mark.parametrize(("fleet_file", "leases"), [(None, True), ("adopt.yaml", True), (None, False)])
async def test_a_fork_of_an_imported_cluster_runs_its_pods(tmp_path: Path, fleet_file: str | None,
                                                           leases: bool) -> None:
    imported = await _import(tmp_path, DUMP if leases else _without_leases())
    fleet = None
    if fleet_file is not None:  # a fleet file with no pools: adoption only
        (tmp_path / fleet_file).write_text("apiVersion: sim.cplane.dev/v1alpha1\nkind: Fleet\n"
                                           "metadata:\n  name: adopt\nnodePools: []\n")
        fleet = load_fleet(tmp_path / fleet_file)
    source = await recording.open_source(str(imported))
    stop = asyncio.Event()
    try:
        last = source.last
        async with replay.serving(source, data_dir=tmp_path / "replay", fork_at=last, speed=None) as srv:
            await srv.replayer.until_revision(last)  # replayed up to the fork, which forks there
            assert srv.log.forked_at == last
            # The controllers' own virtual clock, from the fork's time: advanced by hand below.
            clock = clocks.VirtualClock(start=srv.clock.now())
            controllers = asyncio.create_task(registry.run_controllers(
                server_url=srv.url, names=["scheduler", "fleet", "node-lifecycle"], clock=clock, stop_event=stop,
                overrides={"fleet": fleets.factory(fleet)}))
            client = clients.Client(srv.url)
            try:
                async def running() -> dict[str, Any] | None:
                    pod = await client.get("pods", "next", namespace="default")
                    return pod if pod["status"].get("phase") == "Running" else None

                pod = await eventually(running, within=20, what="the Pending pod Running on the imported node")
                assert pod["spec"]["nodeName"] == "n1"
                assert pod["status"]["hostIP"] == "10.0.0.11"
                assert pod["status"]["podIP"].startswith("10.244.1.") and pod["status"]["podIP"] != "10.244.1.7"
                claim = await client.get(f"resourceclaims.{R}", "two", namespace="default")
                assert [(r["pool"], r["device"]) for r in claim["status"]["allocation"]["devices"]["results"]] == \
                    [("n1", "gpu-1")]
                assert "devices" not in claim["status"]  # no fake driver: the real one is not simulated
                one = await client.get(f"resourceclaims.{R}", "one", namespace="default")
                assert one["status"]["devices"] == DUMP["items"][-4]["status"]["devices"]  # the real driver's, kept
                small = await client.get("pods", "small", namespace="default")
                assert small["status"]["phase"] == "Running" and small["status"]["podIP"] == "10.244.1.7"

                # The node keeps what was recorded; the fleet publishes no slice for it.
                node = await client.get("nodes", "n1")
                assert node["status"]["capacity"] == CAPACITY
                assert node["status"]["allocatable"] == ALLOCATABLE
                assert node["metadata"]["labels"] == {"kubernetes.io/hostname": "n1",
                                                      "example.com/accelerator": "gpu"}
                assert node["spec"]["taints"] == [{"key": "example.com/gpu", "value": "true", "effect": "NoSchedule"}]
                assert node["status"]["nodeInfo"]["kubeletVersion"] == "v1.37.0"
                slices = (await client.list(f"resourceslices.{R}")).items
                assert [s["metadata"]["name"] for s in slices] == ["n1-gpu.example.com-abcde"]

                # Time passes: the Lease and the Ready heartbeat are renewed, the node stays Ready.
                for _ in range(3):
                    clock.advance(30)
                    want = clock.now()

                    async def renewed(want: float = want) -> bool:
                        lease = await client.get("leases.coordination.k8s.io", "n1", namespace="kube-node-lease")
                        node = await client.get("nodes", "n1")
                        beat = clocks.parse_time(_ready(node)["lastHeartbeatTime"])
                        return clocks.parse_time(lease["spec"]["renewTime"]) >= want - 10 and beat >= want - 30 and \
                            beat > clocks.parse_time(BEAT)

                    await eventually(renewed, within=20, what="the imported node's Lease and heartbeat renewed")
                node = await client.get("nodes", "n1")
                assert _ready(node)["status"] == "True"
                # node lifecycle saw a live kubelet: its recorded taint only, no unreachable/not-ready one
                assert node["spec"]["taints"] == [{"key": "example.com/gpu", "value": "true", "effect": "NoSchedule"}]
                assert _ready(node)["lastTransitionTime"] == BOOTED
                assert node["status"]["capacity"] == CAPACITY, node["status"]
                assert node["status"]["allocatable"] == ALLOCATABLE
                lease = await client.get("leases.coordination.k8s.io", "n1", namespace="kube-node-lease")
                if leases:
                    assert lease["metadata"]["uid"] == "lease-n1"  # the recorded Lease, renewed
                else:  # made with its namespace, owned by the node
                    assert lease["metadata"]["ownerReferences"][0]["uid"] == "0b6d2c3e-node-n1"
            finally:
                stop.set()
                await controllers
                await client.close()
    finally:
        await source.close()


def _node(name: str, **annotations: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "annotations": annotations}, "status": {}}


@pytest.mark.parametrize(("adopt", "simulated"), [(True, {"pool-0", "n1"}), (False, {"pool-0"})])
def test_adopt_nodes_decides_which_other_nodes_get_a_kubelet(adopt: bool, simulated: set[str]) -> None:
    fleet = msgspec.convert({"metadata": {"name": "f"}, "adoptNodes": adopt,
                             "nodePools": [{"name": "pool", "count": 1}]}, fleets.Fleet)
    plan = objs.Plan(fleet)
    nodes = [_node("pool-0"), _node("n1"), _node("real", **{objs.SIMULATED: "false"})]
    assert {n["metadata"]["name"] for n in nodes if plan.simulates(n)} == simulated


def test_a_reported_node_keeps_its_capacity_allocatable_and_node_info() -> None:
    node = next(o for o in DUMP["items"] if o["kind"] == "Node")
    assert objs.reported(node)
    patch = objs.node_status_patch(objs.Plan(None), node, clocks.parse_time(CREATED) + 60)["status"]
    assert set(patch) == {"conditions"}  # a heartbeat only: the recorded status is kept
    ready = next(c for c in patch["conditions"] if c["type"] == "Ready")
    assert ready["lastTransitionTime"] == BOOTED and ready["lastHeartbeatTime"] == "2026-11-02T09:01:00Z"
    by_hand = {"metadata": {"name": "mine"}, "status": {"capacity": {"cpu": "4"}}}
    assert not objs.reported(by_hand)
    assert objs.node_status_patch(objs.Plan(None), by_hand, 0.0)["status"]["capacity"]["pods"] == "110"


async def test_replay_fleet_needs_the_fleet_controller(tmp_path: Path, capsys: Any) -> None:
    imported = await _import(tmp_path)
    capsys.readouterr()
    code = await asyncio.to_thread(cli.main, ["replay", str(imported), "--fleet", str(tmp_path / "f.yaml"),
                                              "--controllers", "scheduler"])
    assert code == 1 and "--fleet needs the fleet controller" in capsys.readouterr().err
    code = await asyncio.to_thread(cli.main, ["replay", str(imported), "--fleet", str(tmp_path / "missing.yaml"),
                                              "--controllers", "scheduler,fleet"])
    assert code == 1 and "cplane replay: fleet" in capsys.readouterr().err


async def test_cplane_replay_runs_the_fleet_on_the_imported_nodes(tmp_path: Path) -> None:
    """The command as a user runs it: `cplane replay DIR --fork-at REV --controllers scheduler,fleet
    --fleet FILE` (an adopt-only fleet file)."""
    imported = await _import(tmp_path)
    fleet_file = tmp_path / "adopt.yaml"
    fleet_file.write_text("apiVersion: sim.cplane.dev/v1alpha1\nkind: Fleet\nmetadata:\n  name: adopt\n")
    source = await recording.open_source(str(imported))
    last = source.last
    await source.close()
    kubeconfig = tmp_path / "replay.kubeconfig"
    err_path = tmp_path / "replay.err"
    with err_path.open("wb") as err_file:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "cp.cli", "replay", str(imported), "--kubeconfig", str(kubeconfig),
            "--fork-at", str(last), "--speed", "max", "--controllers", "scheduler,fleet", "--fleet", str(fleet_file),
            stdout=asyncio.subprocess.DEVNULL, stderr=err_file)
        try:
            await eventually(lambda: kubeconfig.exists() or proc.returncode is not None, within=30,
                             what="the replay server's kubeconfig")
            assert proc.returncode is None, err_path.read_text()
            client = clients.Client.from_kubeconfig(kubeconfig)
            try:
                async def running() -> bool:
                    pod = await client.get("pods", "next", namespace="default")
                    return pod["status"].get("phase") == "Running" and pod["spec"].get("nodeName") == "n1"

                await eventually(running, within=30, what="the Pending pod Running on the imported node")

                async def renewed() -> bool:  # on the fork's clock, which runs on from the fork's time
                    lease = await client.get("leases.coordination.k8s.io", "n1", namespace="kube-node-lease")
                    return clocks.parse_time(lease["spec"]["renewTime"]) >= clocks.parse_time(CREATED)

                await eventually(renewed, within=10, what="the imported node's Lease renewed")
                assert (await client.get("nodes", "n1"))["status"]["capacity"] == CAPACITY
            finally:
                await client.close()
        finally:
            if proc.returncode is None:
                proc.send_signal(signal.SIGINT)
            code = await asyncio.wait_for(proc.wait(), 20)
    assert code == 0, err_path.read_text()
