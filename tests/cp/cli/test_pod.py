"""`cplane pod devices`: each container's claims, prepared devices, CDI ids and resolved edits, read
from a pod on a fleet node (the API) and the node's kubelet directory (DATA_DIR/nodes)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from api import server as servers
from controllers import fleet as fleets
from controllers.fleet import devices
from controllers.runtime import client as clients
from cp import cdi, cli
from cp import clock as clocks
from cp.cli import pod as pod_command
from tests.controllers.fleet.conftest import EXAMPLES, running_fleet
from tests.controllers.support import START
from tests.waiting import eventually

CLAIMS = "resourceclaims.resource.k8s.io"


async def _show(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    code = await pod_command.show_devices(cli.build_parser().parse_args(argv), out=out)
    return code, out.getvalue()


async def test_each_container_s_devices_and_env(tmp_path: Path) -> None:
    data = tmp_path / "data"
    clock = clocks.VirtualClock(start=START)
    fleet = fleets.load_fleet(EXAMPLES / "demo.yaml")
    async with servers.running(data_dir=data, db_url="memory:", clock=clock) as srv, \
            clients.Client(srv.url) as client, running_fleet(srv, clock, fleet, kubelet_root=data / "nodes"):
        await client.create(CLAIMS, {"metadata": {"name": "gpus", "namespace": "default"}, "spec": {"devices": {
            "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "count": 2}},
                         {"name": "nic", "exactly": {"deviceClassName": "nic.example.com"}}]}}})
        pod = await client.create("pods", {
            "metadata": {"name": "pod0", "namespace": "default"},
            "spec": {"nodeName": "gpu-node-0", "resourceClaims": [{"name": "devs", "resourceClaimName": "gpus"}],
                     "containers": [
                         {"name": "ctr0", "image": "ubuntu:22.04", "resources": {"claims": [{"name": "devs"}]}},
                         {"name": "ctr1", "image": "ubuntu:22.04",
                          "resources": {"claims": [{"name": "devs", "request": "nic"}]}},
                         {"name": "plain", "image": "ubuntu:22.04"}]}})
        results = [{"request": "gpu", "driver": "gpu.example.com", "pool": "gpu-node-0", "device": "gpu-0"},
                   {"request": "gpu", "driver": "gpu.example.com", "pool": "gpu-node-0", "device": "gpu-1"},
                   {"request": "nic", "driver": "nic.example.com", "pool": "gpu-node-0", "device": "nic-0"}]
        claim = await client.patch(CLAIMS, "gpus", {"status": {
            "allocation": {"devices": {"results": results}},
            "reservedFor": [{"resource": "pods", "name": "pod0", "uid": pod["metadata"]["uid"]}]}},
            namespace="default", subresource="status")
        uid = claim["metadata"]["uid"]

        async def running() -> bool:
            return bool((await client.get("pods", "pod0", namespace="default"))["status"].get("phase") == "Running")
        await eventually(running, what="pod0 running")

        code, text = await _show(["pod", "devices", "pod0", "--data-dir", str(data)])
        assert code == 0
        gpu, nic = "k8s.gpu.example.com/gpu", "k8s.nic.example.com/nic"
        assert text.splitlines()[:7] == [
            "pod default/pod0 on node gpu-node-0",
            "",
            "CONTAINER   CLAIM   REQUEST   RESOURCECLAIM   DRIVER            POOL         DEVICE   CDI DEVICES",
            f"ctr0        devs    <all>     gpus            gpu.example.com   gpu-node-0   gpu-0    {gpu}=common,{gpu}={uid}-gpu-0",
            f"ctr0        devs    <all>     gpus            gpu.example.com   gpu-node-0   gpu-1    {gpu}=common,{gpu}={uid}-gpu-1",
            f"ctr0        devs    <all>     gpus            nic.example.com   gpu-node-0   nic-0    {nic}=common,{nic}={uid}-nic-0",
            f"ctr1        devs    nic       gpus            nic.example.com   gpu-node-0   nic-0    {nic}=common,{nic}={uid}-nic-0",
        ]
        blocks = text.split("\n\n")
        ctr0 = blocks[2].splitlines()
        cdi_dir = data / "nodes" / "gpu-node-0" / "cdi"
        assert ctr0[:7] == ["container ctr0:", "  CDI devices:",
                            f"    {gpu}=common ({cdi_dir / 'k8s.gpu.example.com-gpu_common.json'})",
                            f"    {gpu}={uid}-gpu-0 ({cdi_dir / f'k8s.gpu.example.com-gpu_{uid}.json'})",
                            f"    {gpu}={uid}-gpu-1 ({cdi_dir / f'k8s.gpu.example.com-gpu_{uid}.json'})",
                            f"    {nic}=common ({cdi_dir / 'k8s.nic.example.com-nic_common.json'})",
                            f"    {nic}={uid}-nic-0 ({cdi_dir / f'k8s.nic.example.com-nic_{uid}.json'})"]
        assert ctr0[7] == "  env:"
        assert "    GPU_DEVICE_0=gpu-0" in ctr0 and "    GPU_DEVICE_1=gpu-1" in ctr0
        assert "    GPU_DEVICE_0_SHARING_STRATEGY=TimeSlicing" in ctr0
        assert "    KUBERNETES_NODE_NAME=gpu-node-0" in ctr0
        assert blocks[3].splitlines()[4:] == ["  env:", "    KUBERNETES_NODE_NAME=gpu-node-0",
                                          "    DRA_RESOURCE_DRIVER_NAME=nic.example.com",
                                          f"    NIC_DEVICE_NIC_0_RESOURCE_CLAIM={uid}", "    DRA_ADMIN_ACCESS=false"]
        assert blocks[4] == "container plain: no devices\n"

        code, raw = await _show(["pod", "devices", "pod0", "-n", "default", "-c", "ctr1", "-o", "json",
                                 "--server", srv.url, "--root-dir", str(data / "nodes")])
        doc = json.loads(raw)
        assert code == 0 and (doc["node"], [c["container"] for c in doc["containers"]]) == ("gpu-node-0", ["ctr1"])
        assert doc["containers"][0]["cdiDeviceIds"] == [f"{nic}=common", f"{nic}={uid}-nic-0"]
        assert doc["containers"][0]["environment"]["NIC_DEVICE_NIC_0_RESOURCE_CLAIM"] == uid
        assert doc["containers"][0]["specFiles"][f"{nic}=common"] == str(
            data / "nodes" / "gpu-node-0" / "cdi" / "k8s.nic.example.com-nic_common.json")

        # A spec the runtime cannot read: that container's error, and exit code 1.
        (data / "nodes" / "gpu-node-0" / "cdi" / f"k8s.nic.example.com-nic_{uid}.json").write_text("{")
        code, text = await _show(["pod", "devices", "pod0", "--data-dir", str(data), "-c", "ctr1"])
        assert code == 1
        assert text.splitlines()[-1].startswith(
            f"container ctr1: error: container ctr1 of pod default/pod0 on node gpu-node-0: unresolvable CDI devices "
            f"{nic}={uid}-nic-0 (failed to load CDI Spec")

        with pytest.raises(ValueError, match="pod default/pod0 has no container 'ghost'"):
            await _show(["pod", "devices", "pod0", "--data-dir", str(data), "-c", "ghost"])
        with pytest.raises(ValueError, match="--data-dir DIR"):
            await _show(["pod", "devices", "pod0", "--server", srv.url])


def test_errors_are_one_line(capsys: Any, tmp_path: Path) -> None:
    assert cli.main(["pod", "devices", "pod0", "--server", "http://127.0.0.1:1", "--root-dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("cplane pod devices: ") and len(err.splitlines()) == 1


def test_every_kind_of_edit_is_shown() -> None:
    edits = cdi.edits_from({
        "env": ["A=1", "A=2"], "deviceNodes": [{"path": "/dev/nvidia0", "type": "c", "major": 195, "permissions": "rw"}],
        "mounts": [{"hostPath": "/usr/lib/x.so", "containerPath": "/lib/x.so", "options": ["ro", "bind"]}],
        "hooks": [{"hookName": "createContainer", "path": "/bin/hook", "args": ["hook", "update"]}],
        "netDevices": [{"hostInterfaceName": "ens1f0", "name": "net1"}], "additionalGids": [44],
        "intelRdt": {"closID": "clos1"}})
    got = devices.ContainerDevices(container="c", cdi_device_ids=["v.com/x=0"], edits=edits)
    text = pod_command._text(ns="default", name="p", node="n", results=[("c", got, "")])
    assert text.split("\n\n")[1].splitlines() == [
        "container c:", "  CDI devices:", "    v.com/x=0", "  env:", "    A=2",
        "  device nodes:", "    /dev/nvidia0 (type c, 195:0, permissions rw)",
        "  mounts:", "    /usr/lib/x.so -> /lib/x.so (ro,bind)",
        "  hooks:", "    createContainer: /bin/hook (args: hook update)",
        "  net devices:", "    ens1f0 -> net1",
        "  additional groups: 44",
        "  intelRdt: closID clos1"]


def test_help_documents_the_command(capsys: Any) -> None:
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    assert "pod" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        cli.main(["pod", "devices", "--help"])
    assert "CDI" in capsys.readouterr().out


def test_a_claim_no_driver_prepared_is_shown_as_such() -> None:
    got = devices.ContainerDevices(container="c", claims=[
        devices.ContainerClaim(name="hand", claim="hand-made", prepared=False)])
    text = pod_command._text(ns="default", name="p", node="n", results=[("c", got, "")])
    assert text.splitlines()[2:4] == [
        "CONTAINER   CLAIM   REQUEST   RESOURCECLAIM   DRIVER                        POOL   DEVICE   CDI DEVICES",
        "c           hand    <all>     hand-made       <not prepared on this node>"]
    assert text.splitlines()[-1] == "container c: no devices"
